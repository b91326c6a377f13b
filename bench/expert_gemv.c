/* expert_gemv: the GPU expert GEMV (kernels/expert_gemv.h) at the `bw` per-format geometries
 * (reference §2): GB/s of expert bytes read per MoE step against the device's HBM read rate,
 * measured in the same run (bench/hbm_read.cu over HBM_BYTES, median of TRIALS; cudaMemcpy
 * device-to-device / 2 beside it). Built by `make bench-tools` (CUDA=1).
 *
 * usage: expert_gemv [BATCH[,BATCH..]]   (default 1,4,8)
 *        expert_gemv hash                 (a hash of y per format, batch and launch variant over
 *                                          pools of varied finite values: two builds give the
 *                                          same bits when their lines are the same)
 *
 * Every step reads B * topk distinct experts of a pool of SLOTS (step s, token b, route r:
 * slot (s B topk + b topk + r) mod SLOTS), so consecutive steps share none and a step's bytes
 * (53-80 MB at B = 1) exceed the 50 MB L2: the reads come from HBM. STEPS steps with their own
 * slot arrays are captured in one CUDA graph (as an engine replays its decode step); the time
 * of REPS graph launches between events, median of TRIALS, gives us per step, both kernels
 * and the gap between them included. Variants: the default (ftgemv_init's choice), nopdl
 * (two kernels, plain launches), pdl (two kernels, programmatic launches) and fused (one
 * cooperative kernel for both phases). Pools hold a constant byte pattern (speed does not depend on the values; the
 * results are checked by tests/gpu/test_expert_gemv.c). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "expert_gemv.h"
#include "hbm_read.h"
#include "moe/formats.h"
#include "util/stats.h"

#define SLOTS 128
#define STEPS 16
#define REPS 10
#define TRIALS 7
#define HBM_BYTES (4ull << 30)
#define MAXB 16

#define CK(x)                                                                                      \
	do {                                                                                       \
		cudaError_t e_ = (x);                                                              \
		if (e_ != cudaSuccess) {                                                           \
			fprintf(stderr, "expert_gemv: %s: %s\n", #x, cudaGetErrorString(e_));      \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

struct geom {
	enum ftfmt_id f;
	long H, I;
	int topk;
	enum ftfmt_act act;
};

/* bw's per-format workloads (reference §2) */
static const struct geom geoms[] = {
	{FTFMT_BF16, 2048, 768, 8, FTFMT_ACT_SILU},
	{FTFMT_NVFP4, 3072, 1536, 8, FTFMT_ACT_SILU},
	{FTFMT_DS_FP4, 4096, 2048, 6, FTFMT_ACT_SILU},
};

static double hbm_read_gbs(cudaStream_t s, int sms, double *d2d)
{
	double t[TRIALS], u[TRIALS];
	CK(fthbm_rate(HBM_BYTES, TRIALS, sms, s, t, u));
	*d2d = ftstat_of(u, TRIALS).median;
	return ftstat_of(t, TRIALS).median;
}

/* us per step of one variant (0 default, 1 nopdl, 2 pdl, 3 fused); spread in *lo, *hi; -1: the
 * device cannot run the variant */
static double time_steps(struct ftgemv_experts *e0, int variant, int B, int topk, const int32_t *d_slots,
			 const float *d_w, const float *d_x, float *d_y, void *d_scr, cudaStream_t s, double *lo,
			 double *hi)
{
	struct ftgemv_experts e = *e0;
	if (variant) {
		e.fused_b = variant == 3 ? MAXB : 0;
		e.pdl = variant == 2;
	}
	if (variant == 3 && !e.fz_blocks)
		return -1; /* no cooperative launches on this device */
	cudaGraph_t g;
	cudaGraphExec_t ge;
	CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
	cudaError_t err = cudaSuccess;
	for (int st = 0; st < STEPS && !err; st++)
		err = ftgemv_moe(&e, B, topk, d_slots + (size_t)st * B * topk, d_w, d_x, d_y, d_scr, s);
	cudaError_t end = cudaStreamEndCapture(s, &g);
	if (err || end) {
		fprintf(stderr, "expert_gemv: variant %d: %s\n", variant, cudaGetErrorString(err ? err : end));
		if (!end)
			cudaGraphDestroy(g);
		cudaGetLastError();
		return -1;
	}
	CK(cudaGraphInstantiate(&ge, g, 0));
	double t[TRIALS];
	CK(fthbm_time_graph(ge, TRIALS, REPS, s, t));
	for (int i = 0; i < TRIALS; i++)
		t[i] /= STEPS;
	cudaGraphExecDestroy(ge);
	cudaGraphDestroy(g);
	struct ftstat st = ftstat_of(t, TRIALS);
	*lo = st.min;
	*hi = st.max;
	return st.median;
}

/* hash mode: pools of HSLOTS experts of pseudo-random finite values; a line per format, batch and
 * variant (default, nopdl, pdl, fused) with the FNV-1a hash of y; token 1's route 2 has slot -1 */
#define HSLOTS 24
static int hash_mode(void)
{
	for (size_t gi = 0; gi < sizeof geoms / sizeof geoms[0]; gi++) {
		const struct geom *gm = &geoms[gi];
		struct ftgemv_experts e = {.fmt = gm->f, .H = gm->H, .I = gm->I, .slots = HSLOTS, .act = gm->act};
		struct ftfmt_bank_shape sh[FTFMT_MAX_BANKS];
		int n = ftfmt_banks(ftfmt_get(gm->f), gm->H, gm->I, sh);
		uint32_t rng = 12345u + (uint32_t)gi;
		for (int i = 0; i < n; i++) {
			size_t nb = sh[i].expert_bytes * HSLOTS;
			uint8_t *h = malloc(nb);
			if (!h)
				return 1;
			for (size_t k = 0; k < nb; k++) {
				rng = rng * 1664525u + 1013904223u;
				uint8_t v = (uint8_t)(rng >> 24);
				switch (sh[i].dtype) {
				case FTFMT_DT_BF16: v = k & 1 ? v & 0xbf : v; break;        /* |w| < 2 */
				case FTFMT_DT_FP16: v = k & 1 ? 0x38 | (v & 3) : v; break;  /* [0.5, 2) */
				case FTFMT_DT_FP8_E4M3: v = 0x28 + (v & 31); break;         /* finite, positive */
				case FTFMT_DT_E8M0: v = 118 + (v & 15); break;              /* 2^-9 .. 2^6 */
				default: break;                                             /* e2m1 codes */
				}
				h[k] = v;
			}
			CK(cudaMalloc(&e.pool[i], nb));
			CK(cudaMemcpy(e.pool[i], h, nb, cudaMemcpyHostToDevice));
			free(h);
		}
		CK(ftgemv_init(&e));
		static const int bs[] = {1, 3, 8};
		int32_t hs[MAXB * FTGEMV_MAX_TOPK], *d_slots;
		float *d_w, *d_x, *d_y, *hx = malloc(sizeof(float) * MAXB * gm->H), hw[MAXB * FTGEMV_MAX_TOPK];
		void *d_scr;
		if (!hx)
			return 1;
		for (long i = 0; i < MAXB * gm->H; i++)
			hx[i] = (float)((i * 7919) % 2001 - 1000) / 1000.0f;
		for (int i = 0; i < MAXB * FTGEMV_MAX_TOPK; i++) {
			hs[i] = (i * 7) % HSLOTS;
			hw[i] = 0.5f + (float)(i % 5) / 8.0f;
		}
		hs[1 * gm->topk + 2] = -1;
		CK(cudaMalloc((void **)&d_slots, sizeof hs));
		CK(cudaMalloc((void **)&d_w, sizeof hw));
		CK(cudaMalloc((void **)&d_x, sizeof(float) * MAXB * gm->H));
		CK(cudaMalloc((void **)&d_y, sizeof(float) * MAXB * gm->H));
		CK(cudaMalloc(&d_scr, ftgemv_scratch_bytes(&e, MAXB, FTGEMV_MAX_TOPK)));
		CK(cudaMemcpy(d_slots, hs, sizeof hs, cudaMemcpyHostToDevice));
		CK(cudaMemcpy(d_w, hw, sizeof hw, cudaMemcpyHostToDevice));
		CK(cudaMemcpy(d_x, hx, sizeof(float) * MAXB * gm->H, cudaMemcpyHostToDevice));
		for (int bi = 0; bi < 3; bi++) {
			for (int v = 0; v < 4; v++) {
				struct ftgemv_experts ev = e;
				if (v) {
					ev.fused_b = v == 3 ? MAXB : 0;
					ev.pdl = v == 2;
				}
				if (v == 3 && !ev.fz_blocks)
					continue;
				CK(cudaMemset(d_y, 0xff, sizeof(float) * MAXB * gm->H));
				CK(ftgemv_moe(&ev, bs[bi], gm->topk, d_slots, d_w, d_x, d_y, d_scr, 0));
				CK(cudaMemcpy(hx, d_y, sizeof(float) * bs[bi] * gm->H, cudaMemcpyDeviceToHost));
				uint32_t hsh = 2166136261u;
				const uint8_t *yb = (const uint8_t *)hx;
				for (size_t k = 0; k < sizeof(float) * bs[bi] * gm->H; k++)
					hsh = (hsh ^ yb[k]) * 16777619u;
				printf("%-7s B=%d %-7s y[0]=%-14.7g hash %08x\n", ftfmt_get(gm->f)->name, bs[bi],
				       (const char *[]){"default", "nopdl", "pdl", "fused"}[v], hx[0], hsh);
			}
		}
		for (int i = 0; i < n; i++)
			cudaFree(e.pool[i]);
		cudaFree(d_slots);
		cudaFree(d_w);
		cudaFree(d_x);
		cudaFree(d_y);
		cudaFree(d_scr);
		free(hx);
	}
	return 0;
}

int main(int argc, char **argv)
{
	int batches[8] = {1, 4, 8}, nb = 3;
	if (argc > 1 && !strcmp(argv[1], "hash"))
		return hash_mode();
	if (argc > 1) {
		nb = 0;
		for (char *p = argv[1]; *p && nb < 8;) {
			char *end;
			long v = strtol(p, &end, 10);
			if (end == p || v < 1 || v > MAXB) {
				fprintf(stderr, "expert_gemv: '%s': expected batches 1..%d separated by commas\n", argv[1], MAXB);
				return 2;
			}
			batches[nb++] = (int)v;
			p = *end == ',' ? end + 1 : end;
		}
	}
	int dev, sms;
	struct cudaDeviceProp prop;
	CK(cudaGetDevice(&dev));
	CK(cudaGetDeviceProperties(&prop, dev));
	sms = prop.multiProcessorCount;
	cudaStream_t s;
	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	double d2d, hbm = hbm_read_gbs(s, sms, &d2d);
	printf("device: %s, %d SMs, L2 %d MB\n", prop.name, sms, prop.l2CacheSize >> 20);
	printf("HBM read rate: %.0f GB/s (read kernel, %llu GiB, median of %d); cudaMemcpy D2D: %.0f GB/s copied "
	       "(%.0f GB/s of traffic)\n",
	       hbm, HBM_BYTES >> 30, TRIALS, d2d, 2 * d2d);
	printf("%-7s %5s %5s %4s %2s %-10s %9s %10s %16s %8s %8s\n", "format", "H", "I", "topk", "B", "variant",
	       "MB/step", "us/step", "(min-max)", "GB/s", "of HBM");
	for (size_t gi = 0; gi < sizeof geoms / sizeof geoms[0]; gi++) {
		const struct geom *gm = &geoms[gi];
		struct ftgemv_experts e = {.fmt = gm->f, .H = gm->H, .I = gm->I, .slots = SLOTS, .act = gm->act};
		struct ftfmt_bank_shape sh[FTFMT_MAX_BANKS];
		int n = ftfmt_banks(ftfmt_get(gm->f), gm->H, gm->I, sh);
		size_t eb = ftfmt_expert_bytes(ftfmt_get(gm->f), gm->H, gm->I);
		for (int i = 0; i < n; i++) {
			CK(cudaMalloc(&e.pool[i], sh[i].expert_bytes * SLOTS));
			CK(cudaMemset(e.pool[i], 0x3c, sh[i].expert_bytes * SLOTS));
		}
		CK(ftgemv_init(&e));
		int32_t *d_slots, *hs = malloc(sizeof(int32_t) * STEPS * MAXB * FTGEMV_MAX_TOPK);
		float *d_w, *d_x, *d_y, *hx = malloc(sizeof(float) * MAXB * gm->H), hw[MAXB * FTGEMV_MAX_TOPK];
		void *d_scr;
		if (!hs || !hx) {
			fprintf(stderr, "expert_gemv: out of memory\n");
			return 1;
		}
		CK(cudaMalloc((void **)&d_slots, sizeof(int32_t) * STEPS * MAXB * FTGEMV_MAX_TOPK));
		CK(cudaMalloc((void **)&d_w, sizeof hw));
		CK(cudaMalloc((void **)&d_x, sizeof(float) * MAXB * gm->H));
		CK(cudaMalloc((void **)&d_y, sizeof(float) * MAXB * gm->H));
		CK(cudaMalloc(&d_scr, ftgemv_scratch_bytes(&e, MAXB, FTGEMV_MAX_TOPK)));
		for (long i = 0; i < MAXB * gm->H; i++)
			hx[i] = (float)((i * 7919) % 2001 - 1000) / 1000.0f;
		for (int i = 0; i < MAXB * FTGEMV_MAX_TOPK; i++)
			hw[i] = 1.0f / gm->topk;
		CK(cudaMemcpy(d_x, hx, sizeof(float) * MAXB * gm->H, cudaMemcpyHostToDevice));
		CK(cudaMemcpy(d_w, hw, sizeof hw, cudaMemcpyHostToDevice));
		for (int bi = 0; bi < nb; bi++) {
			int B = batches[bi], rt = B * gm->topk;
			for (int st = 0; st < STEPS; st++)
				for (int i = 0; i < rt; i++)
					hs[st * rt + i] = (st * rt + i) % SLOTS;
			CK(cudaMemcpy(d_slots, hs, sizeof(int32_t) * STEPS * rt, cudaMemcpyHostToDevice));
			double mb = (double)rt * eb / 1e6;
			for (int v = 0; v < 4; v++) {
				static const char *vn[] = {"default", "nopdl", "pdl", "fused"};
				double lo, hi, us = time_steps(&e, v, B, gm->topk, d_slots, d_w, d_x, d_y, d_scr, s, &lo, &hi);
				if (us < 0)
					continue;
				double gbs = mb * 1e6 / (us * 1e3);
				printf("%-7s %5ld %5ld %4d %2d %-10s %9.1f %10.2f %7.2f-%-8.2f %8.0f %8.2f\n",
				       ftfmt_get(gm->f)->name, gm->H, gm->I, gm->topk, B, vn[v], mb, us, lo, hi, gbs,
				       gbs / hbm);
			}
		}
		for (int i = 0; i < n; i++)
			cudaFree(e.pool[i]);
		cudaFree(d_slots);
		cudaFree(d_w);
		cudaFree(d_x);
		cudaFree(d_y);
		cudaFree(d_scr);
		free(hs);
		free(hx);
	}
	cudaStreamDestroy(s);
	return 0;
}
