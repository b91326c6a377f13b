/* The AMX int8 kernels of the 4-bit formats (kern_amx_int8*.c): on tiles emulated in C (every
 * CPU with AVX512-VNNI) and on the real tiles (where the CPU and OS give them), against the W4A8
 * VNNI kernels on the same prepared activations and against float64 on random codes and
 * realistic scales.
 *
 * Both compute every scale block's integer products exactly and differ only in the order of
 * the fp32 additions of the scaled block sums: vs VNNI the relative L2 error is ~1e-7 (bound
 * 1e-5; a block or token out of place gives ~1). Vs float64 the W4A8 bound of test_cpu_moe,
 * 2.5e-2 (the activations are int8). Shapes: rows with a start that is not a multiple of 16, a
 * tail under 16 and more than one super-panel of 64; K of one tail group (64), of a tail group
 * after whole ones (320), over the kernel's K chunk (1088, 2112); tokens 1 .. 32 (one partial
 * and two tile groups) with the tiles' threshold at 1; at the default threshold, groups below
 * it must equal the VNNI kernel bit for bit. mxfp4_triton's split along K: whole scale blocks
 * and a range that is not (the VNNI kernel's). Then the executor on the amx tier, where the CPU
 * has it, against the scalar tier. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hw/cpu.h"
#include "moe/cpu/cpumoe.h"
#include "moe/cpu/kern.h"
#include "moe/cpu/pool.h"
#include "moe/formats.h"

static struct ftcpu_info ci;

static uint64_t rng = 0x2545f4914f6cdd1dull;
static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}
static double unif(void) { return (double)(rnd() >> 11) / 9007199254740992.0; }
static double gauss(void) { return sqrt(-2 * log(unif() + 1e-300)) * cos(6.283185307179586 * unif()); }

static double d_fp16(const uint8_t *p)
{
	unsigned h = p[0] | p[1] << 8, e = (h >> 10) & 31, m = h & 1023;
	double v = e ? ldexp(1024 + m, (int)e - 25) : ldexp(m, -24);
	return h >> 15 ? -v : v;
}
static double d_e4m3(uint8_t b)
{
	unsigned e = (b >> 3) & 15, m = b & 7;
	double v = e ? ldexp(8 + m, (int)e - 10) : ldexp(m, -9);
	return b >> 7 ? -v : v;
}
static double d_e8m0(uint8_t b) { return ldexp(1.0, (int)b - 127); }
static double d_e2m1(unsigned c)
{
	static const double v[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
	return c & 8 ? -v[c & 7] : v[c & 7];
}
static void put_fp16(uint8_t *p, unsigned h)
{
	p[0] = (uint8_t)h;
	p[1] = (uint8_t)(h >> 8);
}

enum { NR = 90, R0 = 3, NB = 32, KMAX = 2112, NC = 192 };

struct mat {
	enum ftfmt_id f;
	long K, N;
	uint8_t *w, *s, *g;
};

/* Random codes, never-zero realistic scales (as test_cpu_moe's banks). */
static void make_mat(struct mat *a, enum ftfmt_id f, long K, long N)
{
	a->f = f, a->K = K, a->N = N;
	size_t wb = f == FTFMT_Q4_0 ? (size_t)(N * K / 32 * 18) : (size_t)(N * K / 2);
	size_t sb = f == FTFMT_NVFP4 ? (size_t)(N * K / 16) : (size_t)(N * K / 32);
	a->w = malloc(wb + 64);
	a->s = malloc(sb + 64);
	a->g = malloc((size_t)N * 2 + 64);
	assert_true(a->w && a->s && a->g);
	for (size_t i = 0; i < wb; i++)
		a->w[i] = (uint8_t)rnd();
	if (f == FTFMT_Q4_0)
		for (size_t i = 0; i < wb; i += 18)
			put_fp16(a->w + i, (unsigned)((6 + rnd() % 4) << 10 | (rnd() & 1023)));
	for (size_t i = 0; i < sb; i++)
		a->s[i] = f == FTFMT_NVFP4 ? (uint8_t)((4 + rnd() % 8) << 3 | (rnd() & 7)) : (uint8_t)(118 + rnd() % 6);
	for (long n = 0; n < N; n++)
		put_fp16(a->g + 2 * n, (unsigned)((7 + rnd() % 3) << 10 | (rnd() & 1023)) | (rnd() % 8 == 0) << 15);
}

static void free_mat(struct mat *a)
{
	free(a->w);
	free(a->s);
	free(a->g);
}

/* Weight of output n (row; mxfp4_triton: column), element k. */
static double weight(const struct mat *a, long n, long k)
{
	long K = a->K, N = a->N;
	switch (a->f) {
	case FTFMT_Q4_0: {
		const uint8_t *blk = a->w + (n * (K / 32) + k / 32) * 18;
		int j = k % 32;
		int c = j < 16 ? blk[2 + j] & 15 : blk[2 + j - 16] >> 4;
		return (c - 8) * d_fp16(blk);
	}
	case FTFMT_NVFP4: {
		uint8_t c = a->w[n * K / 2 + k / 2];
		return d_e2m1(k & 1 ? c >> 4 : c & 15) * d_e4m3(a->s[n * K / 16 + k / 16]) * d_fp16(a->g + 2 * n);
	}
	case FTFMT_DS_FP4: {
		uint8_t c = a->w[n * K / 2 + k / 2];
		return d_e2m1(k & 1 ? c >> 4 : c & 15) * d_e8m0(a->s[n * K / 32 + k / 32]);
	}
	case FTFMT_MXFP4_TRITON: {
		uint8_t c = a->w[(k / 2) * N + n];
		return d_e2m1(k & 1 ? c >> 4 : c & 15) * d_e8m0(a->s[(k / 32) * N + n]);
	}
	default:
		return NAN;
	}
}

static double rel_l2(const float *a, const float *b, const double *ref, size_t n)
{
	double num = 0, den = 0;
	for (size_t i = 0; i < n; i++) {
		double r = b ? b[i] : ref[i];
		if (!isfinite(a[i]))
			return INFINITY;
		num += (a[i] - r) * (a[i] - r);
		den += r * r;
	}
	return sqrt(num / (den > 0 ? den : 1e-300));
}

static float xf[NB * KMAX];
static _Alignas(64) uint8_t xq[NB][8192];

/* prepared activations of NB tokens (the VNNI layout, shared by both kernels) */
static void prep_all(const struct ftkern_ops *o, long K, const void **xs)
{
	assert_true(o->xbytes(K) <= sizeof xq[0]);
	for (int b = 0; b < NB; b++) {
		o->prep(xf + (size_t)b * K, K, xq[b]);
		xs[b] = xq[b];
	}
}

static const struct ftkern_ops *tile_ops(int real, enum ftfmt_id f)
{
	if (!real)
		return ftkern_amx_int8_emu(f);
	if (!ftcpumoe_isa_supported(FTCPUMOE_ISA_AMX, ci.isa) || !(ci.isa & FTCPU_AMX_INT8))
		return NULL;
	return ftkern_select(FTCPUMOE_ISA_AMX, f, ci.isa);
}

static const int nbs[] = {1, 3, 8, 15, 16, 17, 32};

static void check_rows(enum ftfmt_id f, int *real_checked)
{
	static const long Ks[] = {64, 320, 1088, 2112};
	const struct ftkern_ops *v = ftkern_avx512vnni(f);
	assert_non_null(v);
	static float y[NB * NR], yv[NB * NR];
	static double ref[NB * NR];
	for (size_t ki = 0; ki < sizeof Ks / sizeof Ks[0]; ki++) {
		long K = Ks[ki];
		struct mat a;
		make_mat(&a, f, K, NR);
		for (long i = 0; i < NB * K; i++)
			xf[i] = (float)gauss();
		for (int b = 0; b < NB; b++)
			for (long n = R0; n < NR; n++) {
				double s = 0;
				for (long k = 0; k < K; k++)
					s += weight(&a, n, k) * xf[(size_t)b * K + k];
				ref[b * (NR - R0) + (n - R0)] = s;
			}
		const void *xs[NB];
		prep_all(v, K, xs);
		float *ys[NB], *yvs[NB];
		for (int b = 0; b < NB; b++) {
			ys[b] = y + b * (NR - R0);
			yvs[b] = yv + b * (NR - R0);
		}
		struct ftkern_mat m = {a.w, f == FTFMT_Q4_0 ? NULL : a.s, f == FTFMT_NVFP4 ? a.g : NULL, K, NR};
		for (int real = 0; real < 2; real++) {
			const struct ftkern_ops *o = tile_ops(real, f);
			if (!o)
				continue;
			assert_non_null(o->rows);
			assert_true(o->prep == v->prep && o->xbytes == v->xbytes);
			assert_non_null(strstr(o->name, "w4a8-amx"));
			*real_checked |= real;
			for (size_t bi = 0; bi < sizeof nbs / sizeof nbs[0]; bi++) {
				int nb = nbs[bi];
				for (long i = 0; i < NB * NR; i++)
					y[i] = yv[i] = NAN; /* every output must be written */
				v->rows(&m, R0, NR, nb, xs, yvs);
				ftkern_amx_i8_min_nb = 1;
				o->rows(&m, R0, NR, nb, xs, ys);
				ftkern_amx_i8_min_nb = FTKERN_AMX_I8_MIN_NB;
				size_t n = (size_t)nb * (NR - R0);
				double ev = rel_l2(y, yv, NULL, n), er = rel_l2(y, NULL, ref, n);
				if (getenv("FT_TEST_VERBOSE"))
					print_message("%-8s %-20s K=%-5ld nb=%-2d vs vnni %.2e vs float64 %.2e\n",
						      ftfmt_get(f)->name, o->name, K, nb, ev, er);
				if (!(ev <= 1e-5) || !(er <= 2.5e-2))
					fail_msg("%s %s K=%ld nb=%d: rel err %.3g vs the VNNI kernel (bound 1e-5), %.3g vs "
						 "float64 (bound 2.5e-2)", ftfmt_get(f)->name, o->name, K, nb, ev, er);
				/* below the threshold: the VNNI kernel itself */
				if (nb < FTKERN_AMX_I8_MIN_NB) {
					o->rows(&m, R0, NR, nb, xs, ys);
					assert_memory_equal(y, yv, n * sizeof(float));
				}
			}
		}
		free_mat(&a);
	}
}

static void check_mx(int *real_checked)
{
	static const long Ks[] = {64, 320, 1088};
	const struct ftkern_ops *v = ftkern_avx512vnni(FTFMT_MXFP4_TRITON);
	assert_non_null(v);
	static float p[NB * NC], pv[NB * NC], tmp[NB * NC];
	static double ref[NB * NC];
	for (size_t ki = 0; ki < sizeof Ks / sizeof Ks[0]; ki++) {
		long K = Ks[ki], R = K / 2;
		struct mat a;
		make_mat(&a, FTFMT_MXFP4_TRITON, K, NC);
		for (long i = 0; i < NB * K; i++)
			xf[i] = (float)gauss();
		const void *xs[NB];
		prep_all(v, K, xs);
		struct ftkern_mat m = {a.w, a.s, NULL, K, NC};
		/* bank-row ranges: all, whole blocks inside, not whole blocks (the VNNI kernel's) */
		long rg[3][2] = {{0, R}, {16, R > 32 ? R - 16 : R}, {3, R > 35 ? 35 : R - 1}};
		for (int ri = 0; ri < 3; ri++) {
			long kk0 = rg[ri][0], kk1 = rg[ri][1];
			if (kk1 <= kk0)
				continue;
			for (int b = 0; b < NB; b++)
				for (long n = 0; n < NC; n++) {
					double s = 0;
					for (long k = 2 * kk0; k < 2 * kk1; k++)
						s += weight(&a, n, k) * xf[(size_t)b * K + k];
					ref[b * NC + n] = s;
				}
			for (int real = 0; real < 2; real++) {
				const struct ftkern_ops *o = tile_ops(real, FTFMT_MXFP4_TRITON);
				if (!o)
					continue;
				assert_non_null(o->rows_t);
				assert_true(o->prep == v->prep && o->xbytes == v->xbytes);
				*real_checked |= real;
				for (size_t bi = 0; bi < sizeof nbs / sizeof nbs[0]; bi++) {
					int nb = nbs[bi];
					float *ps[NB], *pvs[NB];
					for (int b = 0; b < nb; b++) {
						ps[b] = p + b * NC;
						pvs[b] = pv + b * NC;
					}
					memset(p, 0, sizeof p);
					memset(pv, 0, sizeof pv);
					v->rows_t(&m, kk0, kk1, nb, xs, pvs, tmp);
					ftkern_amx_i8_min_nb = 1;
					o->rows_t(&m, kk0, kk1, nb, xs, ps, tmp);
					ftkern_amx_i8_min_nb = FTKERN_AMX_I8_MIN_NB;
					size_t n = (size_t)nb * NC;
					double ev = rel_l2(p, pv, NULL, n), er = rel_l2(p, NULL, ref, n);
					if (getenv("FT_TEST_VERBOSE"))
						print_message("mxfp4    %-20s K=%-5ld rows %ld..%ld nb=%-2d vs vnni %.2e vs float64 %.2e\n",
							      o->name, K, kk0, kk1, nb, ev, er);
					if (!(ev <= 1e-5) || !(er <= 2.5e-2))
						fail_msg("mxfp4_triton %s K=%ld bank rows %ld..%ld nb=%d: rel err %.3g vs the VNNI "
							 "kernel (bound 1e-5), %.3g vs float64 (bound 2.5e-2)",
							 o->name, K, kk0, kk1, nb, ev, er);
				}
			}
		}
		free_mat(&a);
	}
}

static void test_amx_int8_kernels(void **st)
{
	(void)st;
	if (!(ci.isa & FTCPU_AVX512_VNNI)) {
		print_message("  AMX int8: no AVX512-VNNI on this CPU, not checked\n");
		skip();
	}
	assert_null(ftkern_amx_int8_emu(FTFMT_BF16));
	int real = 0;
	check_rows(FTFMT_NVFP4, &real);
	check_rows(FTFMT_DS_FP4, &real);
	check_rows(FTFMT_Q4_0, &real);
	check_mx(&real);
	printf("  AMX int8: emulated tiles checked%s\n", real ? ", real tiles checked" : " (no AMX-INT8 on this CPU)");
}

/* The executor on the amx tier with the tiles from one token: every 4-bit format, batches 8 and
 * 32, against the scalar tier (real tiles only). */
static void test_amx_int8_executor(void **st)
{
	(void)st;
	if (!ftcpumoe_isa_supported(FTCPUMOE_ISA_AMX, ci.isa) || !(ci.isa & FTCPU_AMX_INT8) ||
	    !(ci.isa & FTCPU_AVX512_VNNI)) {
		print_message("  AMX int8 executor: no AMX-INT8 on this CPU, not checked\n");
		skip();
	}
	enum { H = 640, I = 384, E = 4, TOPK = 2, B = 32 };
	static const enum ftfmt_id fs[] = {FTFMT_NVFP4, FTFMT_DS_FP4, FTFMT_Q4_0, FTFMT_MXFP4_TRITON};
	struct ftpool *pool = NULL;
	assert_int_equal(ftpool_create(&ci, 4, -1, &pool), 0);
	static float xin[B * H], out[B * H], out0[B * H];
	for (size_t fi = 0; fi < sizeof fs / sizeof fs[0]; fi++) {
		enum ftfmt_id f = fs[fi];
		struct ftfmt_bank_shape sh[FTFMT_MAX_BANKS];
		int nbk = ftfmt_banks(ftfmt_get(f), H, I, sh);
		assert_true(nbk > 0);
		uint8_t *mem[FTFMT_MAX_BANKS];
		const void *ptr[FTFMT_MAX_BANKS];
		for (int i = 0; i < nbk; i++) {
			size_t n = sh[i].expert_bytes * E;
			mem[i] = malloc(n);
			assert_non_null(mem[i]);
			/* realistic scales as test_cpu_moe's (nvfp4's activation scales carry 2^120 in the
			 * W4A8 kernels: activations over ~2e5 overflow them): e4m3 2^-3 .. 2^4, e8m0
			 * 2^-9 .. 2^-4, nvfp4's fp16 row global 2^-8 .. 2^-6, bf16 biases ~2^-7; codes
			 * random */
			for (size_t j = 0; j < n; j++)
				mem[i][j] = sh[i].dtype == FTFMT_DT_FP8_E4M3 ? (uint8_t)((4 + rnd() % 8) << 3 | (rnd() & 7))
					    : sh[i].dtype == FTFMT_DT_E8M0   ? (uint8_t)(118 + rnd() % 6)
					    : sh[i].dtype == FTFMT_DT_BF16   ? (uint8_t)(j & 1 ? 0x3c : rnd())
					    : (uint8_t)rnd();
			if (sh[i].dtype == FTFMT_DT_FP16)
				for (size_t j = 0; j < n; j += 2)
					put_fp16(mem[i] + j, (unsigned)((7 + rnd() % 3) << 10 | (rnd() & 1023)) | (rnd() % 8 == 0) << 15);
			if (f == FTFMT_Q4_0)
				for (size_t j = 0; j < n; j += 18)
					put_fp16(mem[i] + j, (unsigned)((6 + rnd() % 4) << 10 | (rnd() & 1023)));
			ptr[i] = mem[i];
		}
		struct ftcpumoe_tune t;
		ftcpumoe_tune_defaults(&t);
		t.amx_min_nb = 1;
		struct ftcpumoe_cfg cfg = {.format = f, .hidden = H, .inter = I, .experts = E, .layers = 1,
					 .banks = ptr, .act = FTFMT_ACT_SILU, .max_batch = B, .max_topk = TOPK,
					 .isa = FTCPUMOE_ISA_SCALAR, .pool = pool, .cpu = &ci, .tune = &t};
		struct ftcpumoe *x = NULL;
		assert_int_equal(ftcpumoe_create(&cfg, &x), 0);
		for (int bt = 8; bt <= B; bt += 24) {
			int32_t ids[B * TOPK];
			float w[B * TOPK];
			for (int i = 0; i < bt * H; i++)
				xin[i] = (float)gauss();
			for (int tk = 0; tk < bt; tk++) {
				ids[tk * TOPK] = (int32_t)(rnd() % E);
				ids[tk * TOPK + 1] = (ids[tk * TOPK] + 1 + (int32_t)(rnd() % (E - 1))) % E;
				w[tk * TOPK] = 0.6f, w[tk * TOPK + 1] = 0.4f;
			}
			assert_int_equal(ftcpumoe_set_isa(x, FTCPUMOE_ISA_SCALAR), 0);
			assert_int_equal(ftcpumoe_forward(x, 0, bt, TOPK, xin, ids, w, out0), 0);
			assert_int_equal(ftcpumoe_set_isa(x, FTCPUMOE_ISA_AMX), 0);
			assert_string_equal(ftcpumoe_kernel_name(FTCPUMOE_ISA_AMX, f, ci.isa), "w4a8-amx");
			for (int i = 0; i < bt * H; i++)
				out[i] = NAN;
			assert_int_equal(ftcpumoe_forward(x, 0, bt, TOPK, xin, ids, w, out), 0);
			double e = rel_l2(out, out0, NULL, (size_t)bt * H);
			if (getenv("FT_TEST_VERBOSE"))
				print_message("executor %-12s B=%d amx vs scalar %.2e\n", ftfmt_get(f)->name, bt, e);
			if (!(e <= 2.5e-2))
				fail_msg("%s B=%d: the amx tier's output is %.3g (rel L2) from the scalar tier's (bound 2.5e-2)",
					 ftfmt_get(f)->name, bt, e);
		}
		ftcpumoe_free(x);
		for (int i = 0; i < nbk; i++)
			free(mem[i]);
	}
	ftpool_free(pool);
	printf("  AMX int8 executor: real tiles checked\n");
}

int main(void)
{
	if (ftcpu_probe(&ci) < 0)
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_amx_int8_kernels),
		cmocka_unit_test(test_amx_int8_executor),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
