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
 * and a range that is not (the VNNI kernel's). Then the executor on the amx tier against its
 * scalar tier, every 4-bit format and bf16, on the emulated tiles (a link seam: see
 * test_amx_executor) and on the real ones where the CPU has them.
 *
 * usage: test_cpu_moe_amx [PATTERN]   (PATTERN: only the tests whose names match, e.g.
 * test_amx_executor) */
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

#define REFNUM_SEED 0x2545f4914f6cdd1dull
#include "refnum.h"

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
		struct ftkern_knobs kn = ftkern_knobs_default;
		struct ftkern_mat m = {a.w, f == FTFMT_Q4_0 ? NULL : a.s, f == FTFMT_NVFP4 ? a.g : NULL, K, NR, &kn};
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
				kn.amx_i8_min_nb = 1;
				o->rows(&m, R0, NR, nb, xs, ys);
				kn.amx_i8_min_nb = FTKERN_AMX_I8_MIN_NB;
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
		struct ftkern_knobs kn = ftkern_knobs_default;
		struct ftkern_mat m = {a.w, a.s, NULL, K, NC, &kn};
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
					kn.amx_i8_min_nb = 1;
					o->rows_t(&m, kk0, kk1, nb, xs, ps, tmp);
					kn.amx_i8_min_nb = FTKERN_AMX_I8_MIN_NB;
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

/* ---- The executor on the amx tier, against its scalar tier.
 *
 * Where the CPU has no AMX (or the OS refuses the tile state) the tier runs on the emulated
 * tiles. This program is linked with -Wl,--wrap=ftkern_amx_ready,--wrap=ftkern_amx,
 * --wrap=ftkern_amx_int8 (Makefile), so the tier's kernel lookups in isa.c reach the functions
 * below: while `emulate` is set they hand out the kernels on tiles emulated in C
 * (kern_amx_emu.c, kern_amx_int8_emu.c) and say the tile state is granted, and the executor is
 * given this CPU's bits plus AMX-TILE, AMX-BF16 and AMX-INT8 (its real AVX-512 bits still
 * decide what runs: the emulated int8 kernels need AVX512-VNNI, the tier AVX512-BF16); unset,
 * they are the real functions. The product has no such switch: the wrap is this test's link. */
const struct ftkern_ops *__real_ftkern_amx(enum ftfmt_id f);
const struct ftkern_ops *__real_ftkern_amx_int8(enum ftfmt_id f);
int __real_ftkern_amx_ready(void);
const struct ftkern_ops *__wrap_ftkern_amx(enum ftfmt_id f);
const struct ftkern_ops *__wrap_ftkern_amx_int8(enum ftfmt_id f);
int __wrap_ftkern_amx_ready(void);

static int emulate;

int __wrap_ftkern_amx_ready(void)
{
	return emulate ? 0 : __real_ftkern_amx_ready();
}

const struct ftkern_ops *__wrap_ftkern_amx(enum ftfmt_id f)
{
	return emulate ? ftkern_amx_emu(f) : __real_ftkern_amx(f);
}

const struct ftkern_ops *__wrap_ftkern_amx_int8(enum ftfmt_id f)
{
	return emulate ? ftkern_amx_int8_emu(f) : __real_ftkern_amx_int8(f);
}

enum { XH = 640, XI = 384, XE = 8, XTOPK = 2, XB = 32 };

/* A batch: runs of tokens routed to the same two experts (n = 0 ends it); the tokens are then
 * shuffled. Tokens per expert, A (32 tokens): 20 (two tile groups: 16 + 4), 16, 8, 4, 5, 3, 5,
 * 3; B (12 tokens): 8, 7, 4, 3, 1, 1. So at the int8 tiles' default threshold (8) A has 8 tokens
 * and B 4 whose experts all stay under it, at threshold 4 B has one, at the bf16 tiles' (4) B
 * has one; the others have an expert on the tiles. */
struct xrun {
	int n, e0, e1;
};
static const struct xrun batch_a[] = {{16, 0, 1}, {4, 0, 2}, {4, 2, 3}, {3, 4, 5}, {3, 6, 7}, {2, 4, 6}, {0, 0, 0}};
static const struct xrun batch_b[] = {{7, 0, 1}, {1, 0, 2}, {3, 2, 3}, {1, 4, 5}, {0, 0, 0}};

static int make_routes(const struct xrun *rn, int32_t *ids, float *w, int *cnt)
{
	int bt = 0;
	memset(cnt, 0, sizeof(int) * XE);
	for (; rn->n; rn++)
		for (int i = 0; i < rn->n; i++, bt++) {
			ids[bt * XTOPK] = rn->e0;
			ids[bt * XTOPK + 1] = rn->e1;
			cnt[rn->e0]++;
			cnt[rn->e1]++;
		}
	for (int t = bt - 1; t > 0; t--) { /* shuffle the tokens */
		int u = (int)(rnd() % (unsigned)(t + 1));
		int32_t a = ids[t * XTOPK], b = ids[t * XTOPK + 1];
		ids[t * XTOPK] = ids[u * XTOPK], ids[t * XTOPK + 1] = ids[u * XTOPK + 1];
		ids[u * XTOPK] = a, ids[u * XTOPK + 1] = b;
	}
	for (int i = 0; i < bt * XTOPK; i++)
		w[i] = (float)(0.1 + 0.9 * unif());
	return bt;
}

/* Random codes, realistic never-zero scales (as test_cpu_moe's banks): bf16 weights ~N(0, 0.05)
 * and biases ~N(0, 0.2); e4m3 2^-3 .. 2^4; e8m0 2^-9 .. 2^-4; nvfp4's fp16 row global
 * 2^-8 .. 2^-6 (its activation scales carry 2^120 in the W4A8 kernels: activations over ~2e5
 * would overflow them); q4_0's fp16 d 2^-9 .. 2^-6. */
static void fill_bank(enum ftfmt_id f, const struct ftfmt_bank_shape *s, uint8_t *p, size_t n)
{
	if (s->dtype == FTFMT_DT_BF16) {
		double sd = strstr(s->name, "bias") ? 0.2 : 0.05;
		for (size_t i = 0; i < n; i += 2) {
			float v = (float)(gauss() * sd);
			uint32_t u;
			memcpy(&u, &v, 4);
			u = v == 0 ? 0x3c23d70au : u;
			p[i] = (uint8_t)(u >> 16);
			p[i + 1] = (uint8_t)(u >> 24);
		}
		return;
	}
	for (size_t j = 0; j < n; j++)
		p[j] = s->dtype == FTFMT_DT_FP8_E4M3 ? (uint8_t)((4 + rnd() % 8) << 3 | (rnd() & 7))
		       : s->dtype == FTFMT_DT_E8M0   ? (uint8_t)(118 + rnd() % 6)
		       : (uint8_t)rnd();
	if (s->dtype == FTFMT_DT_FP16)
		for (size_t j = 0; j < n; j += 2)
			put_fp16(p + j, (unsigned)((7 + rnd() % 3) << 10 | (rnd() & 1023)) | (rnd() % 8 == 0) << 15);
	if (f == FTFMT_Q4_0)
		for (size_t j = 0; j < n; j += 18)
			put_fp16(p + j, (unsigned)((6 + rnd() % 4) << 10 | (rnd() & 1023)));
}

/* One format on the tiles as emulate says: for each tune (the int8 tiles' threshold at its
 * default and at 4, the static and the dynamic schedule) and both batches, the amx tier's output
 * must be within tol (rel L2) of the scalar tier's. With the static schedule (the same
 * additions in the same order on every tier) also, token by token, against the tier the amx
 * kernels fall back to (fb: avx512vnni for the 4-bit formats, avx512bf16 for bf16 on real
 * tiles; the emulated bf16 kernel has its own C fallback): a token whose experts all have fewer
 * tokens than the threshold must equal it bit for bit (the kernels below the threshold, as the
 * executor dispatches them), one with an expert at or over the threshold must not (the tiles
 * ran: their fp32 additions are in another order), but for mxfp4_triton, whose tile sums equal
 * the VNNI kernel's bit for bit (test_amx_int8_kernels: 0 difference), so its output cannot
 * tell. Counts the tokens checked each way into *exact and *tiles. */
static void check_executor(struct ftpool *pool, enum ftfmt_id f, int *exact, int *tiles)
{
	const int bf16 = f == FTFMT_BF16;
	struct ftcpu_info cpu = ci;
	if (emulate)
		cpu.isa |= FTCPU_AMX_TILE | FTCPU_AMX_BF16 | FTCPU_AMX_INT8;
	const char *want = bf16 ? (emulate ? "w16a16-amx-emulated" : "w16a16-amx")
				: (emulate ? "w4a8-amx-emulated" : "w4a8-amx");
	const enum ftcpumoe_isa fb = bf16 ? FTCPUMOE_ISA_AVX512BF16 : FTCPUMOE_ISA_AVX512VNNI;
	const int cmp_fb = !(bf16 && emulate) && ftcpumoe_isa_supported(fb, ci.isa);
	const double tol = bf16 ? 5.5e-3 : 2.5e-2; /* test_cpu_moe's TOL_A16 and W4A8 bounds */
	struct ftfmt_bank_shape sh[FTFMT_MAX_BANKS];
	int nbk = ftfmt_banks(ftfmt_get(f), XH, XI, sh);
	assert_true(nbk > 0);
	uint8_t *mem[FTFMT_MAX_BANKS];
	const void *ptr[FTFMT_MAX_BANKS];
	for (int i = 0; i < nbk; i++) {
		size_t n = sh[i].expert_bytes * XE;
		mem[i] = malloc(n);
		assert_non_null(mem[i]);
		fill_bank(f, &sh[i], mem[i], n);
		ptr[i] = mem[i];
	}
	static float xin[XB * XH], out[XB * XH], out0[XB * XH], outf[XB * XH];
	static const struct { long thr, sched; } tunes[] = {
		{FTKERN_AMX_I8_MIN_NB, FTCPUMOE_SCHED_STATIC},
		{FTKERN_AMX_I8_MIN_NB, FTCPUMOE_SCHED_DYNAMIC},
		{4, FTCPUMOE_SCHED_STATIC},
	};
	for (size_t ti = 0; ti < sizeof tunes / sizeof tunes[0]; ti++) {
		if (bf16 && tunes[ti].thr != FTKERN_AMX_I8_MIN_NB)
			continue; /* the bf16 tiles' threshold is fixed (FTKERN_AMX_MIN_NB) */
		const int thr = bf16 ? FTKERN_AMX_MIN_NB : (int)tunes[ti].thr;
		struct ftcpumoe_tune t;
		ftcpumoe_tune_defaults(&t);
		t.amx_min_nb = tunes[ti].thr;
		t.sched = tunes[ti].sched;
		struct ftcpumoe_cfg cfg = {.format = f, .hidden = XH, .inter = XI, .experts = XE, .layers = 1,
					 .banks = ptr, .act = FTFMT_ACT_SILU, .max_batch = XB, .max_topk = XTOPK,
					 .isa = FTCPUMOE_ISA_SCALAR, .pool = pool, .cpu = &cpu, .tune = &t};
		struct ftcpumoe *x = NULL;
		assert_int_equal(ftcpumoe_create(&cfg, &x), 0);
		assert_string_equal(ftcpumoe_kernel_name(FTCPUMOE_ISA_AMX, f, cpu.isa), want);
		for (int bi = 0; bi < 2; bi++) {
			int32_t ids[XB * XTOPK];
			float w[XB * XTOPK];
			int cnt[XE];
			int bt = make_routes(bi ? batch_b : batch_a, ids, w, cnt);
			for (int i = 0; i < bt * XH; i++)
				xin[i] = (float)gauss();
			assert_int_equal(ftcpumoe_set_isa(x, FTCPUMOE_ISA_SCALAR), 0);
			assert_int_equal(ftcpumoe_forward(x, 0, bt, XTOPK, xin, ids, w, out0), 0);
			assert_int_equal(ftcpumoe_set_isa(x, FTCPUMOE_ISA_AMX), 0);
			for (int i = 0; i < bt * XH; i++)
				out[i] = NAN; /* every output must be written */
			assert_int_equal(ftcpumoe_forward(x, 0, bt, XTOPK, xin, ids, w, out), 0);
			double e = rel_l2(out, out0, NULL, (size_t)bt * XH);
			if (getenv("FT_TEST_VERBOSE"))
				print_message("executor %-12s %-8s B=%-2d threshold %d %-7s amx (%s) vs scalar %.2e\n",
					      ftfmt_get(f)->name, emulate ? "emulated" : "real", bt, thr,
					      t.sched == FTCPUMOE_SCHED_STATIC ? "static" : "dynamic", want, e);
			if (!(e <= tol))
				fail_msg("%s B=%d threshold %d (%s tiles, %s schedule): the amx tier's output is %.3g (rel L2) "
					 "from the scalar tier's (bound %.3g)", ftfmt_get(f)->name, bt, thr,
					 emulate ? "emulated" : "real", t.sched == FTCPUMOE_SCHED_STATIC ? "static" : "dynamic", e, tol);
			if (!cmp_fb || t.sched != FTCPUMOE_SCHED_STATIC)
				continue;
			assert_int_equal(ftcpumoe_set_isa(x, fb), 0);
			assert_int_equal(ftcpumoe_forward(x, 0, bt, XTOPK, xin, ids, w, outf), 0);
			for (int tk = 0; tk < bt; tk++) {
				int hot = cnt[ids[tk * XTOPK]] >= thr || cnt[ids[tk * XTOPK + 1]] >= thr;
				int same = !memcmp(out + (size_t)tk * XH, outf + (size_t)tk * XH, sizeof(float) * XH);
				if (hot && f == FTFMT_MXFP4_TRITON)
					continue; /* its tiles' sums equal the VNNI kernel's bit for bit */
				if (hot && same)
					fail_msg("%s B=%d threshold %d (%s tiles): token %d has an expert with %d tokens but its "
						 "output equals the %s tier's bit for bit: the tiles did not run", ftfmt_get(f)->name,
						 bt, thr, emulate ? "emulated" : "real", tk,
						 cnt[ids[tk * XTOPK]] > cnt[ids[tk * XTOPK + 1]] ? cnt[ids[tk * XTOPK]] : cnt[ids[tk * XTOPK + 1]],
						 ftcpumoe_isa_name(fb));
				if (!hot && !same)
					fail_msg("%s B=%d threshold %d (%s tiles): token %d, whose experts have %d and %d tokens, "
						 "differs from the %s tier's output: below the threshold the amx tier must run its "
						 "kernels", ftfmt_get(f)->name, bt, thr, emulate ? "emulated" : "real", tk,
						 cnt[ids[tk * XTOPK]], cnt[ids[tk * XTOPK + 1]], ftcpumoe_isa_name(fb));
				*(hot ? tiles : exact) += 1;
			}
		}
		ftcpumoe_free(x);
	}
	for (int i = 0; i < nbk; i++)
		free(mem[i]);
}

/* Every 4-bit format and bf16 on the emulated tiles (every CPU with the tier's AVX-512 bits:
 * AVX512-BF16 for the tier, AVX512-VNNI for the int8 kernels), then on the real tiles where the
 * CPU and OS give them. */
static void test_amx_executor(void **st)
{
	(void)st;
	static const enum ftfmt_id fs[] = {FTFMT_NVFP4, FTFMT_DS_FP4, FTFMT_Q4_0, FTFMT_MXFP4_TRITON, FTFMT_BF16};
	struct ftpool *pool = NULL;
	assert_int_equal(ftpool_create(&ci, 4, -1, &pool), 0);
	const unsigned amx = FTCPU_AMX_TILE | FTCPU_AMX_BF16 | FTCPU_AMX_INT8;
	char done[2][96] = {"", ""};
	for (emulate = 1; emulate >= 0; emulate--) {
		unsigned isa = emulate ? ci.isa | amx : ci.isa;
		if (!ftcpumoe_isa_supported(FTCPUMOE_ISA_AMX, isa))
			continue;
		int exact = 0, tiles = 0;
		for (size_t fi = 0; fi < sizeof fs / sizeof fs[0]; fi++) {
			if (fs[fi] != FTFMT_BF16 && (!(isa & FTCPU_AMX_INT8) || !(isa & FTCPU_AVX512_VNNI)))
				continue;
			check_executor(pool, fs[fi], &exact, &tiles);
			snprintf(done[emulate] + strlen(done[emulate]), sizeof done[0] - strlen(done[emulate]), "%s%s",
				 *done[emulate] ? ", " : "", ftfmt_get(fs[fi])->name);
		}
		if (getenv("FT_TEST_VERBOSE"))
			print_message("executor %s tiles: %d tokens equal to the fallback tier's (below the threshold), %d "
				      "not (on the tiles)\n", emulate ? "emulated" : "real", exact, tiles);
		/* the batches must take both ways of the dispatch */
		if ((exact || tiles) && (!exact || !tiles))
			fail_msg("%s tiles: %d tokens checked below the threshold, %d on the tiles: the batches no longer "
				 "cover both", emulate ? "emulated" : "real", exact, tiles);
	}
	emulate = 0;
	ftpool_free(pool);
	if (!*done[0] && !*done[1]) {
		print_message("  AMX executor: this CPU lacks the tier's AVX-512 bits (AVX512-BF16), not checked\n");
		skip();
	}
	printf("  AMX executor: emulated tiles checked (%s)%s%s\n", *done[1] ? done[1] : "none",
	       *done[0] ? ", real tiles checked: " : " (no AMX on this CPU)", done[0]);
}

int main(int argc, char **argv)
{
	if (ftcpu_probe(&ci) < 0)
		return 1;
	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_amx_int8_kernels),
		cmocka_unit_test(test_amx_executor),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
