/* GPU expert GEMV (kernels/expert_gemv.h) against the CPU MoE executor's scalar tier (FP32,
 * itself checked against a float64 reference by tests/unit/test_cpu_moe.c), for bf16, nvfp4 and
 * ds_fp4, every activation, B = 1, 3, 8 with skipped routes (-1: a whole token skipped in
 * B = 3, scattered ones elsewhere), repeated slots, several slots of a pool; random codes and
 * realistic, never-zero scales; K splits that do not divide evenly between warps.
 *
 * Tolerance: relative L2 error ||y - ref|| / ||ref|| per call <= 1e-4 (the CPU tests' bound for
 * FP32 tiers). The GPU's products are exact up to the activations' hi + lo halves (about 2^-17
 * of each element), both sides accumulate in FP32 in different orders: ~1e-6 expected.
 * Also: a captured CUDA graph and a second call give the same bits (deterministic sums), with
 * plain, programmatic and fused launches; the fused kernel (also on a 5-block grid) gives the
 * bits of the two kernels in every case above; bad arguments are refused. Skips cleanly without
 * a GPU. */
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
#include "moe/cpu/pool.h"
#include "moe/formats.h"

#ifdef FT_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "expert_gemv.h"

#define REFNUM_SEED 0x2545F4914F6CDD1Dull
#include "../unit/refnum.h"

#define CK(x)                                                                                      \
	do {                                                                                       \
		cudaError_t e_ = (x);                                                              \
		if (e_ != cudaSuccess)                                                             \
			fail_msg("%s: %s", #x, cudaGetErrorString(e_));                             \
	} while (0)

#define SLOTS 10   /* pool slots (= experts of the CPU executor's one layer) */
#define MAXB 8
#define TOL 1e-4

static struct ftcpu_info ci;
static struct ftpool *pool;

static int have_gpu(void)
{
	int n = 0;
	return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

/* Random codes and realistic, never-zero scales (as test_cpu_moe.c's). */
static void fill_bank(const struct ftfmt_bank_shape *s, uint8_t *p, size_t n)
{
	if (s->dtype == FTFMT_DT_BF16) { /* weights ~N(0, 0.05) */
		for (size_t i = 0; i < n; i += 2) {
			float v = (float)(gauss() * 0.05);
			uint32_t u;
			if (v == 0)
				v = 0.01f;
			memcpy(&u, &v, 4);
			p[i] = (uint8_t)(u >> 16);
			p[i + 1] = (uint8_t)(u >> 24);
		}
	} else if (s->dtype == FTFMT_DT_FP16) { /* nvfp4 per-row global: 2^-8 .. 2^-6, either sign */
		for (size_t i = 0; i < n; i += 2) {
			unsigned h = (unsigned)((7 + rnd() % 3) << 10 | (rnd() & 1023)) | (rnd() % 8 == 0) << 15;
			p[i] = (uint8_t)h;
			p[i + 1] = (uint8_t)(h >> 8);
		}
	} else if (s->dtype == FTFMT_DT_FP8_E4M3) { /* block scales: 2^-9 (subnormal) .. 2^4, positive */
		for (size_t i = 0; i < n; i++)
			p[i] = rnd() % 16 == 0 ? (uint8_t)(1 + rnd() % 7) : (uint8_t)((4 + rnd() % 8) << 3 | (rnd() & 7));
	} else if (s->dtype == FTFMT_DT_E8M0) { /* 2^-17 .. 2^4 */
		for (size_t i = 0; i < n; i++)
			p[i] = (uint8_t)(110 + rnd() % 22);
	} else {
		for (size_t i = 0; i < n; i++)
			p[i] = (uint8_t)rnd();
	}
}

struct fixture {
	enum ftfmt_id f;
	long H, I;
	int nb;
	struct ftfmt_bank_shape sh[FTFMT_MAX_BANKS];
	uint8_t *host[FTFMT_MAX_BANKS];
	const void *ptr[FTFMT_MAX_BANKS];
	struct ftgemv_experts e;
	int32_t *d_slots;
	float *d_w, *d_x, *d_y;
	void *d_scratch;
};

static void fixture_init(struct fixture *fx, enum ftfmt_id f, long H, long I)
{
	memset(fx, 0, sizeof *fx);
	fx->f = f;
	fx->H = H;
	fx->I = I;
	fx->nb = ftfmt_banks(ftfmt_get(f), H, I, fx->sh);
	assert_true(fx->nb > 0);
	fx->e.fmt = f;
	fx->e.H = H;
	fx->e.I = I;
	fx->e.slots = SLOTS;
	for (int i = 0; i < fx->nb; i++) {
		size_t n = fx->sh[i].expert_bytes * SLOTS;
		fx->host[i] = malloc(n);
		assert_non_null(fx->host[i]);
		fill_bank(&fx->sh[i], fx->host[i], n);
		fx->ptr[i] = fx->host[i];
		CK(cudaMalloc(&fx->e.pool[i], n));
		CK(cudaMemcpy(fx->e.pool[i], fx->host[i], n, cudaMemcpyHostToDevice));
	}
	CK(ftgemv_init(&fx->e));
	CK(cudaMalloc((void **)&fx->d_slots, MAXB * FTGEMV_MAX_TOPK * 4));
	CK(cudaMalloc((void **)&fx->d_w, MAXB * FTGEMV_MAX_TOPK * 4));
	CK(cudaMalloc((void **)&fx->d_x, MAXB * H * 4));
	CK(cudaMalloc((void **)&fx->d_y, MAXB * H * 4));
	CK(cudaMalloc(&fx->d_scratch, ftgemv_scratch_bytes(&fx->e, MAXB, FTGEMV_MAX_TOPK)));
}

static void fixture_free(struct fixture *fx)
{
	for (int i = 0; i < fx->nb; i++) {
		free(fx->host[i]);
		cudaFree(fx->e.pool[i]);
	}
	cudaFree(fx->d_slots);
	cudaFree(fx->d_w);
	cudaFree(fx->d_x);
	cudaFree(fx->d_y);
	cudaFree(fx->d_scratch);
}

static double rel_err(const float *a, const float *ref, size_t n)
{
	double num = 0, den = 0;
	for (size_t i = 0; i < n; i++) {
		if (!isfinite(a[i]))
			return INFINITY;
		num += ((double)a[i] - ref[i]) * ((double)a[i] - ref[i]);
		den += (double)ref[i] * ref[i];
	}
	return sqrt(num / (den > 0 ? den : 1e-300));
}

/* Routes: random slots (repeats allowed), a quarter skipped; B = 3 skips token 1 whole. */
static void routes(int B, int topk, int32_t *slots, float *w)
{
	for (int i = 0; i < B * topk; i++) {
		slots[i] = rnd() % 4 == 0 ? -1 : (int32_t)(rnd() % SLOTS);
		w[i] = (float)(0.05 + unif());
	}
	if (B == 3)
		for (int r = 0; r < topk; r++)
			slots[1 * topk + r] = -1;
}

/* x ~ N(0, 1), one element per token a large outlier (the 4-bit formats' vector scaling). */
static void inputs(int B, long H, float *x)
{
	for (long i = 0; i < B * H; i++)
		x[i] = (float)gauss();
	for (int b = 0; b < B; b++)
		x[b * H + (long)(rnd() % (uint64_t)H)] = 3000.0f;
}

static void run_format(enum ftfmt_id f, long H, long I, int topk)
{
	static const int batches[] = {1, 3, MAXB};
	struct fixture fx;
	fixture_init(&fx, f, H, I);
	float *x = malloc(sizeof(float) * MAXB * H), *y = malloc(sizeof(float) * MAXB * H),
	      *ref = malloc(sizeof(float) * MAXB * H), *yf = malloc(sizeof(float) * MAXB * H),
	      w[MAXB * FTGEMV_MAX_TOPK];
	int32_t slots[MAXB * FTGEMV_MAX_TOPK];
	assert_true(x && y && ref && yf);
	for (int a = 0; a < 4; a++) {
		enum ftfmt_act act = (enum ftfmt_act)a;
		float lim = act == FTFMT_ACT_SWIGLU_OAI ? 0.75f : 0;
		struct ftcpumoe_cfg cfg = {.format = f, .hidden = H, .inter = I, .experts = SLOTS, .layers = 1,
					   .banks = fx.ptr, .act = act, .swiglu_limit = lim, .max_batch = MAXB,
					   .max_topk = topk, .isa = FTCPUMOE_ISA_SCALAR, .pool = pool, .cpu = &ci};
		struct ftcpumoe *cpu = NULL;
		assert_int_equal(ftcpumoe_create(&cfg, &cpu), 0);
		fx.e.act = act;
		fx.e.swiglu_limit = lim;
		for (int bi = 0; bi < 3; bi++) {
			int B = batches[bi];
			routes(B, topk, slots, w);
			inputs(B, H, x);
			assert_int_equal(ftcpumoe_forward(cpu, 0, B, topk, x, slots, w, ref), 0);
			CK(cudaMemcpy(fx.d_slots, slots, (size_t)B * topk * 4, cudaMemcpyHostToDevice));
			CK(cudaMemcpy(fx.d_w, w, (size_t)B * topk * 4, cudaMemcpyHostToDevice));
			CK(cudaMemcpy(fx.d_x, x, (size_t)B * H * 4, cudaMemcpyHostToDevice));
			CK(cudaMemset(fx.d_y, 0xff, (size_t)B * H * 4)); /* NaN: every element must be written */
			CK(ftgemv_moe(&fx.e, B, topk, fx.d_slots, fx.d_w, fx.d_x, fx.d_y, fx.d_scratch, 0));
			CK(cudaMemcpy(y, fx.d_y, (size_t)B * H * 4, cudaMemcpyDeviceToHost));
			if (fx.e.fz_blocks) { /* the fused kernel: the same bits */
				struct ftgemv_experts ef = fx.e;
				const int fused = B <= fx.e.fused_b;
				ef.fused_b = fused ? 0 : B;
				if (B == 3)
					ef.fz_blocks = 5; /* a small grid: each block takes many of both phases */
				CK(cudaMemset(fx.d_y, 0xff, (size_t)B * H * 4));
				CK(ftgemv_moe(&ef, B, topk, fx.d_slots, fx.d_w, fx.d_x, fx.d_y, fx.d_scratch, 0));
				CK(cudaMemcpy(yf, fx.d_y, (size_t)B * H * 4, cudaMemcpyDeviceToHost));
				if (memcmp(y, yf, (size_t)B * H * 4))
					fail_msg("%s %s B=%d: the fused kernel and the two differ", ftfmt_get(f)->name,
						 ftfmt_act_name(act), B);
			}
			double e = rel_err(y, ref, (size_t)B * H);
			if (getenv("FT_TEST_VERBOSE"))
				print_message("%-7s %-10s B=%d topk=%d rel err %.2e (tol %.0e)\n", ftfmt_get(f)->name,
					      ftfmt_act_name(act), B, topk, e, TOL);
			if (!(e <= TOL))
				fail_msg("%s %s B=%d topk=%d: rel err %.3g > %.3g vs the CPU executor", ftfmt_get(f)->name,
					 ftfmt_act_name(act), B, topk, e, TOL);
			if (B == 3)
				for (long i = 0; i < H; i++)
					assert_true(y[H + i] == 0.0f); /* the skipped token: zeros */
		}
		ftcpumoe_free(cpu);
	}
	free(x);
	free(y);
	free(ref);
	free(yf);
	fixture_free(&fx);
}

static void test_bf16(void **st)
{
	if (!have_gpu())
		skip();
	run_format(FTFMT_BF16, 288, 96, 8); /* K iterations 9 (gate_up) and 3 (down): uneven splits */
	run_format(FTFMT_BF16, 256, 64, 3); /* down: 3 routes x 3 K parts over 8 warps */
}

static void test_nvfp4(void **st)
{
	if (!have_gpu())
		skip();
	run_format(FTFMT_NVFP4, 640, 384, 8);
}

static void test_ds_fp4(void **st)
{
	if (!have_gpu())
		skip();
	run_format(FTFMT_DS_FP4, 640, 256, 6);
}

/* The same bits from a direct call, a second call, a captured graph, and each launch variant. */
static void test_graph_deterministic(void **st)
{
	if (!have_gpu())
		skip();
	static const enum ftfmt_id fmts[] = {FTFMT_BF16, FTFMT_NVFP4, FTFMT_DS_FP4};
	for (int fi = 0; fi < 3; fi++) {
		struct fixture fx;
		fixture_init(&fx, fmts[fi], 512, 256);
		const int B = 4, topk = 8;
		float x[4 * 512], w[4 * 8], y0[4 * 512], y1[4 * 512];
		int32_t slots[4 * 8];
		routes(B, topk, slots, w);
		inputs(B, 512, x);
		CK(cudaMemcpy(fx.d_slots, slots, sizeof slots, cudaMemcpyHostToDevice));
		CK(cudaMemcpy(fx.d_w, w, sizeof w, cudaMemcpyHostToDevice));
		CK(cudaMemcpy(fx.d_x, x, sizeof x, cudaMemcpyHostToDevice));
		cudaStream_t s;
		CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
		CK(ftgemv_moe(&fx.e, B, topk, fx.d_slots, fx.d_w, fx.d_x, fx.d_y, fx.d_scratch, s));
		CK(cudaMemcpyAsync(y0, fx.d_y, sizeof y0, cudaMemcpyDeviceToHost, s));
		CK(cudaStreamSynchronize(s));
		int major = 0;
		CK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
		for (int v = 0; v < 3; v++) { /* plain launches, programmatic ones (sm_90+), fused */
			struct ftgemv_experts e = fx.e;
			e.pdl = v == 1 && major >= 9;
			e.fused_b = v == 2 ? B : 0;
			if (e.fused_b && !e.fz_blocks)
				continue; /* no cooperative launches */
			cudaGraph_t g;
			cudaGraphExec_t ge;
			CK(cudaMemsetAsync(fx.d_y, 0xff, sizeof y1, s));
			CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
			CK(ftgemv_moe(&e, B, topk, fx.d_slots, fx.d_w, fx.d_x, fx.d_y, fx.d_scratch, s));
			CK(cudaStreamEndCapture(s, &g));
			CK(cudaGraphInstantiate(&ge, g, 0));
			CK(cudaGraphLaunch(ge, s));
			CK(cudaMemcpyAsync(y1, fx.d_y, sizeof y1, cudaMemcpyDeviceToHost, s));
			CK(cudaStreamSynchronize(s));
			if (memcmp(y0, y1, sizeof y0))
				fail_msg("%s (pdl %d, fused %d): graph result differs from the direct call",
					 ftfmt_get(fmts[fi])->name, e.pdl, e.fused_b > 0);
			CK(ftgemv_moe(&e, B, topk, fx.d_slots, fx.d_w, fx.d_x, fx.d_y, fx.d_scratch, s));
			CK(cudaMemcpyAsync(y1, fx.d_y, sizeof y1, cudaMemcpyDeviceToHost, s));
			CK(cudaStreamSynchronize(s));
			assert_memory_equal(y0, y1, sizeof y0);
			cudaGraphExecDestroy(ge);
			cudaGraphDestroy(g);
		}
		cudaStreamDestroy(s);
		fixture_free(&fx);
	}
}

static void test_bad_args(void **st)
{
	if (!have_gpu())
		skip();
	struct fixture fx;
	fixture_init(&fx, FTFMT_NVFP4, 256, 128);
	struct ftgemv_experts e = fx.e;
	e.H = 192; /* not a multiple of 128 */
	assert_int_equal(ftgemv_init(&e), cudaErrorInvalidValue);
	e = fx.e;
	e.fmt = FTFMT_Q4_0;
	assert_int_equal(ftgemv_init(&e), cudaErrorInvalidValue);
	e = fx.e;
	e.pool[5] = NULL;
	assert_int_equal(ftgemv_init(&e), cudaErrorInvalidValue);
	e = fx.e;
	e.slots = 0;
	assert_int_equal(ftgemv_init(&e), cudaErrorInvalidValue);
	assert_int_equal(ftgemv_init(NULL), cudaErrorInvalidValue);
	assert_int_equal(ftgemv_moe(&fx.e, 1, FTGEMV_MAX_TOPK + 1, fx.d_slots, fx.d_w, fx.d_x, fx.d_y, fx.d_scratch, 0),
			 cudaErrorInvalidValue);
	assert_int_equal(ftgemv_moe(&fx.e, 0, 8, fx.d_slots, fx.d_w, fx.d_x, fx.d_y, fx.d_scratch, 0),
			 cudaErrorInvalidValue);
	assert_int_equal(ftgemv_moe(&fx.e, 1, 8, NULL, fx.d_w, fx.d_x, fx.d_y, fx.d_scratch, 0), cudaErrorInvalidValue);
	struct ftgemv_experts raw = {.fmt = FTFMT_BF16}; /* never through ftgemv_init */
	assert_int_equal(ftgemv_moe(&raw, 1, 8, fx.d_slots, fx.d_w, fx.d_x, fx.d_y, fx.d_scratch, 0),
			 cudaErrorInvalidValue);
	/* h as staged (B topk I 4) + its block factors (B topk I/32 4) + the routes' down outputs
	 * (B topk H 4) + the row groups' counters (B ceil(H / 64) 4) */
	assert_int_equal(ftgemv_scratch_bytes(&fx.e, 3, 5),
			 (size_t)3 * 5 * 128 * 4 + 3 * 5 * (128 / 32) * 4 + 3 * 5 * 256 * 4 + 3 * 4 * 4);
	fixture_free(&fx);
}

static int setup(void **s)
{
	if (ftcpu_probe(&ci) < 0)
		return -1;
	if (ftpool_create(&ci, 1, -1, &pool) < 0)
		return -1;
	ftpool_pin_caller(pool);
	return 0;
}

static int teardown(void **s)
{
	ftpool_free(pool);
	ftcpu_release(&ci);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bf16),
		cmocka_unit_test(test_nvfp4),
		cmocka_unit_test(test_ds_fp4),
		cmocka_unit_test(test_graph_deterministic),
		cmocka_unit_test(test_bad_args),
	};
	return cmocka_run_group_tests_name("expert_gemv", tests, setup, teardown);
}
#else
static void test_no_cuda(void **st)
{
	skip();
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_no_cuda)};
	return cmocka_run_group_tests_name("expert_gemv", tests, NULL, NULL);
}
#endif
