/* gemv_loads (GPU, benchmark only): load patterns of the GPU expert GEMV's 4-bit formats at
 * batch 1, loads only (no decode, no mma), over exactly the bytes of a batch-1 MoE step (the
 * experts and geometry of bench/expert_gemv.c), side by side with the device's HBM read rate.
 * A whole CUDA program: it includes kernels/expert_gemv.cu built with FTGEMV_LOADONLY (the
 * product's own loops, loads only) and bench/hbm_read.cu. Built by `make bench-tools` (CUDA=1).
 *
 * usage: gemv_loads [bulk]   (bulk: only the bulk-copy variants; without: all others)
 *
 * Variants (4-bit formats; bf16: prod and flat only). The tile ones are a step of two kernels,
 * gate_up rows then down rows, in the product's blocks (gate_up block = 4 warps x (8 gate + 8
 * up rows), down block = 4 warps x 16 rows, K whole), codes and scale bytes:
 *   prod-default    the product as ftgemv_init sets it (4-bit: the fused kernel), its 4-bit
 *                   loops loads only (FTGEMV_LOADONLY; bf16 whole); prod-2k: two plain kernels
 *   regU            lane mapping of the product (lane: rows g, g + 8, 16 bytes at chunk c),
 *                   U iterations a register buffer, two buffers (U = 2: the product's)
 *   regU+pfD        the same, each row's 256-byte segment D segments ahead prefetched into L2
 *                   (cp.async.bulk.prefetch.L2) as the row reaches a segment
 *   reg2+pfrow      each row prefetched whole into L2 at the warp's start
 *   memU            the warp's rows read in memory order (each 8-row run contiguous)
 *   bulkS           cp.async.bulk global -> shared per warp, S stages of 4 iterations (16 row
 *                   segments of 256 bytes + their scale bytes a stage), on an mbarrier each
 *   bulkcS          the same, each stage two contiguous runs (memory order)
 *   flat2           ceiling: each expert's banks read contiguously (16-byte loads, 8 in flight
 *                   a thread, 256 threads a block), a kernel per phase
 *   flat1           the same, both phases in one kernel (no phase order)
 *   reg2+dnpf       reg2, each gate_up block prefetching its share of the routes' down banks
 *                   into L2 (cp.async.bulk.prefetch.L2) at its start; +dnpfev: the prefetch
 *                   evict_last, both phases' loads evict_first (dnpfev2: the down loads plain)
 * us per step: STEPS steps captured in a graph, REPS launches, median of TRIALS. */
#define FTGEMV_LOADONLY 1
#include "../kernels/expert_gemv.cu"
#include "hbm_read.cu"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>

#include "moe/formats.h"

#define SLOTS 128
#define STEPS 16
#define REPS 10
#define TRIALS 7
#define HBM_BYTES (4ull << 30)

#define CK(x)                                                                                      \
	do {                                                                                       \
		cudaError_t e_ = (x);                                                              \
		if (e_ != cudaSuccess) {                                                           \
			fprintf(stderr, "gemv_loads: %s: %s\n", #x, cudaGetErrorString(e_));       \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

/* One phase of a step: rows of [N, K] 4-bit banks (codes K / 2 bytes a row, scales K / sdiv) */
struct phase {
	const uint8_t *w, *s;
	size_t wb, sb; /* bytes of one expert */
	int K, sdiv, sstep;
	int gu;        /* gate_up tiling (8 gate + 8 up rows a warp, d8 = I) or down (16 rows) */
	int I;
	int nbx;       /* blocks a route */
};

struct lparams {
	phase ph;
	const int32_t *slots;
	unsigned *sink;
	/* gate_up phase with DNPF: the down banks of the same routes, prefetched into L2 in slices
	 * (one a block) */
	const uint8_t *pw, *ps;
	size_t pwb, psb;
};

__device__ static inline uint64_t pol_first(void)
{
	uint64_t p;
	asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(p));
	return p;
}
__device__ static inline uint64_t pol_last(void)
{
	uint64_t p;
	asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;\n" : "=l"(p));
	return p;
}
__device__ static inline uint4 ld_stream16_pol(const uint8_t *p, uint64_t pol)
{
	uint4 v;
	asm volatile("ld.global.nc.L1::no_allocate.L2::cache_hint.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4], %5;\n"
	    : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
	    : "l"(p), "l"(pol));
	return v;
}
__device__ static inline void pf_l2_pol(const void *p, unsigned bytes, uint64_t pol)
{
	asm volatile("cp.async.bulk.prefetch.L2.global.L2::cache_hint [%0], %1, %2;\n" ::"l"(p), "r"(bytes), "l"(pol)
		     : "memory");
}

__device__ static inline void pf_l2(const void *p, unsigned bytes)
{
	asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(p), "r"(bytes) : "memory");
}

struct lane_rows {
	const uint8_t *w, *s; /* row g at chunk c; scales of row g at this lane's half */
	size_t w8, s8;
	const uint8_t *run0, *run1, *srun0, *srun1; /* memory order: the two 8-row runs */
	int NI;
	size_t rowb;
};

__device__ static inline lane_rows setup(const phase &P, int slot, int warp, int lane)
{
	lane_rows L;
	const int g = lane >> 2, c = lane & 3;
	const size_t rowb = (size_t)P.K / 2, srow = (size_t)P.K / P.sdiv;
	const long r0 = P.gu ? (long)blockIdx.x * 32 + 8 * warp : (long)blockIdx.x * 64 + 16 * warp;
	const long d8 = P.gu ? P.I : 8;
	const uint8_t *wb = P.w + (size_t)slot * P.wb, *sb = P.s + (size_t)slot * P.sb;
	L.w = wb + (size_t)(r0 + g) * rowb + 16 * c;
	L.w8 = d8 * rowb;
	L.s = sb + (size_t)(r0 + g) * srow + (P.sstep / 2) * (c & 1);
	L.s8 = d8 * srow;
	L.run0 = wb + (size_t)r0 * rowb;
	L.run1 = wb + (size_t)(r0 + d8) * rowb;
	L.srun0 = sb + (size_t)r0 * srow;
	L.srun1 = sb + (size_t)(r0 + d8) * srow;
	L.NI = P.K / 128;
	L.rowb = rowb;
	return L;
}

template <int U> struct rbuf {
	uint4 a[U], b[U];
	uint32_t sa[U], sb[U];
};

/* MO: memory order; PF: prefetch distance in segments (0 none, -1 whole rows at the start) */
template <int U, int MO, int PF, int EV = 0>
__device__ static inline void rload(const lane_rows &L, rbuf<U> &f, int it, int sstep, int lane, uint64_t pol = 0)
{
#pragma unroll
	for (int u = 0; u < U; u++) {
		const int i = it + u;
		if (i < L.NI) {
			if (MO) {
				f.a[u] = ld_stream16(L.run0 + (size_t)i * 512 + 16 * lane);
				f.b[u] = ld_stream16(L.run1 + (size_t)i * 512 + 16 * lane);
				const uint8_t *q = (lane < 16 ? L.srun0 : L.srun1) + (size_t)i * 8 * sstep;
				f.sa[u] = sstep == 8 ? ld_nc32(q + 4 * (lane & 15)) : ld_nc16(q + 2 * (lane & 15));
				f.sb[u] = 0;
			} else {
				const uint8_t *p = L.w + (size_t)i * 64;
				if (EV) {
					f.a[u] = ld_stream16_pol(p, pol);
					f.b[u] = ld_stream16_pol(p + L.w8, pol);
				} else {
					f.a[u] = ld_stream16(p);
					f.b[u] = ld_stream16(p + L.w8);
				}
				const uint8_t *q = L.s + (size_t)i * sstep;
				if (sstep == 8) {
					f.sa[u] = ld_nc32(q);
					f.sb[u] = ld_nc32(q + L.s8);
				} else {
					f.sa[u] = ld_nc16(q);
					f.sb[u] = ld_nc16(q + L.s8);
				}
				if (PF > 0 && (i & 3) == 0 && i + 4 * PF < L.NI && (lane & 3) < 2) {
					const uint8_t *row = L.w - 16 * (lane & 3) + ((lane & 3) ? L.w8 : 0);
					pf_l2(row + (size_t)(i + 4 * PF) * 64, 256);
				}
			}
		}
	}
}

template <int U>
__device__ static inline unsigned rsum(const rbuf<U> &f, int it, int NI)
{
	unsigned x = 0;
#pragma unroll
	for (int u = 0; u < U; u++)
		if (it + u < NI)
			x ^= f.a[u].x ^ f.a[u].y ^ f.a[u].z ^ f.a[u].w ^ f.b[u].x ^ f.b[u].y ^ f.b[u].z ^ f.b[u].w ^
			     f.sa[u] ^ f.sb[u];
	return x;
}

__device__ static inline void sink_out(unsigned *sink, unsigned x)
{
	for (int o = 16; o; o >>= 1)
		x ^= __shfl_xor_sync(FULL_MASK, x, o);
	if (x == 0x9e3779b9u) /* practically never: keeps the loads live */
		sink[blockIdx.x] = x;
}

/* the share of block blockIdx.x (of gridDim.x) of n bytes at base, 16-byte aligned, prefetched
 * into L2 by the block's 128 threads in pieces */
template <int EV> __device__ static inline void pf_share(const uint8_t *base, size_t n)
{
	const size_t per = ((n + gridDim.x - 1) / gridDim.x + 15) & ~(size_t)15;
	const size_t a = per * blockIdx.x, b = a + per < n ? a + per : n;
	if (a >= b)
		return;
	const size_t piece = ((b - a + 127) / 128 + 15) & ~(size_t)15;
	const size_t o = a + piece * threadIdx.x;
	if (o < b) {
		const unsigned len = (unsigned)(o + piece < b ? piece : b - o);
		if (EV)
			pf_l2_pol(base + o, len, pol_last());
		else
			pf_l2(base + o, len);
	}
}

/* DNPF: gate_up phase only: the block's share of the routes' down banks prefetched into L2 at
 * its start (1; 2: with evict_last, the gate_up loads evict_first); EV: this phase's loads
 * evict_first */
template <int U, int MO, int PF, int DNPF = 0, int EV = 0>
__global__ void __launch_bounds__(128) reg_kernel(const lparams p)
{
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	const int slot = p.slots[blockIdx.y];
	const lane_rows L = setup(p.ph, slot, warp, lane);
	const int ss = p.ph.sstep;
	const uint64_t pol = EV || DNPF == 2 ? pol_first() : 0;
	constexpr int E = EV || DNPF == 2;
	if (PF < 0 && (lane & 3) < 2) {
		const uint8_t *row = L.w - 16 * (lane & 3) + ((lane & 3) ? L.w8 : 0);
		pf_l2(row, (unsigned)L.rowb);
	}
	rbuf<U> A, B;
	rload<U, MO, PF, E>(L, A, 0, ss, lane, pol);
	if (DNPF && p.pw) {
		pf_share<DNPF == 2>(p.pw + (size_t)slot * p.pwb, p.pwb);
		pf_share<DNPF == 2>(p.ps + (size_t)slot * p.psb, p.psb);
	}
	unsigned x = 0;
	for (int it = 0; it < L.NI; it += 2 * U) {
		rload<U, MO, PF, E>(L, B, it + U, ss, lane, pol);
		x ^= rsum<U>(A, it, L.NI);
		rload<U, MO, PF, E>(L, A, it + 2 * U, ss, lane, pol);
		x ^= rsum<U>(B, it + U, L.NI);
	}
	sink_out(p.sink, x);
}

/* ---- bulk copies into shared memory, per warp */
__device__ static inline uint32_t smem_u32(const void *p)
{
	return (uint32_t)__cvta_generic_to_shared(p);
}
__device__ static inline void mb_init(uint64_t *b, unsigned n)
{
	asm volatile("mbarrier.init.shared.b64 [%0], %1;\n" ::"r"(smem_u32(b)), "r"(n) : "memory");
}
__device__ static inline void mb_expect(uint64_t *b, unsigned bytes)
{
	asm volatile("mbarrier.arrive.expect_tx.shared.b64 _, [%0], %1;\n" ::"r"(smem_u32(b)), "r"(bytes) : "memory");
}
__device__ static inline void mb_wait(uint64_t *b, unsigned ph)
{
	uint32_t done;
	do {
		asm volatile("{\n\t.reg .pred p;\n\t"
			     "mbarrier.try_wait.parity.shared.b64 p, [%1], %2;\n\t"
			     "selp.u32 %0, 1, 0, p;\n\t}\n"
			     : "=r"(done)
			     : "r"(smem_u32(b)), "r"(ph)
			     : "memory");
	} while (!done);
}
__device__ static inline void bulk_g2s(void *dst, const void *src, unsigned bytes, uint64_t *b)
{
	asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
			     smem_u32(dst)),
		     "l"(src), "r"(bytes), "r"(smem_u32(b))
		     : "memory");
}

#define SEGI 4 /* iterations a stage */

/* stage bytes of one warp: 16 rows x SEGI * 64 code bytes + 16 x SEGI * sstep scale bytes */
__host__ __device__ static inline unsigned stage_bytes(int sstep)
{
	return 16 * SEGI * 64 + 16 * SEGI * sstep;
}

template <int CONTIG>
__device__ static inline void bulk_issue(const lane_rows &L, uint8_t *st, uint64_t *bar, int k, int sstep, int lane)
{
	const int i0 = k * SEGI;
	const unsigned cb = SEGI * 64, sbytes = SEGI * sstep;
	if (lane == 0)
		mb_expect(bar, stage_bytes(sstep));
	__syncwarp();
	if (CONTIG) {
		/* two code runs of 8 x cb (memory order), two scale runs of 8 x sbytes */
		if (lane < 2)
			bulk_g2s(st + lane * 8 * cb, (lane ? L.run1 : L.run0) + (size_t)i0 * 512, 8 * cb, bar);
		else if (lane < 4)
			bulk_g2s(st + 16 * cb + (lane - 2) * 8 * sbytes, (lane == 3 ? L.srun1 : L.srun0) + (size_t)i0 * 8 * sstep,
				 8 * sbytes, bar);
	} else {
		const int r = lane & 15; /* row: r < 8 run 0 row r, else run 1 row r - 8 */
		if (lane < 16)
			bulk_g2s(st + r * cb, (r < 8 ? L.run0 + (size_t)r * L.rowb : L.run1 + (size_t)(r - 8) * L.rowb) + (size_t)i0 * 64,
				 cb, bar);
		else {
			const size_t srow = (size_t)L.NI * sstep;
			bulk_g2s(st + 16 * cb + r * sbytes,
				 (r < 8 ? L.srun0 + (size_t)r * srow : L.srun1 + (size_t)(r - 8) * srow) + (size_t)i0 * sstep, sbytes,
				 bar);
		}
	}
}

template <int S, int CONTIG> __global__ void __launch_bounds__(128) bulk_kernel(const lparams p)
{
	extern __shared__ __align__(128) uint8_t sm[];
	__shared__ uint64_t bars[4][S];
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	const int slot = p.slots[blockIdx.y];
	const lane_rows L = setup(p.ph, slot, warp, lane);
	const int ss = p.ph.sstep;
	const unsigned sbb = stage_bytes(ss);
	uint8_t *mine = sm + (size_t)warp * S * sbb;
	uint64_t *bar = bars[warp];
	if (lane < S)
		mb_init(bar + lane, 1);
	asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
	__syncwarp();
	const int nst = L.NI / SEGI;
	for (int k = 0; k < S && k < nst; k++)
		bulk_issue<CONTIG>(L, mine + k * sbb, bar + k, k, ss, lane);
	unsigned x = 0;
	for (int k = 0; k < nst; k++) {
		const int st = k % S;
		mb_wait(bar + st, (k / S) & 1);
		const uint4 v = *reinterpret_cast<const uint4 *>(mine + st * sbb + 16 * lane);
		x ^= v.x ^ v.y ^ v.z ^ v.w;
		__syncwarp();
		if (k + S < nst) {
			asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
			bulk_issue<CONTIG>(L, mine + st * sbb, bar + st, k + S, ss, lane);
		}
	}
	sink_out(p.sink, x);
}

/* ---- ceiling: contiguous reads of each expert's banks */
#define FL_T 256
#define FL_U 8
#define FL_CHUNK (FL_T * FL_U * 16)

struct fparams {
	const uint8_t *reg[8]; /* up to 8 banks (pool bases) */
	size_t eb[8];          /* bytes of one expert */
	int nb[8];             /* blocks a route of each bank */
	int nbanks;
	const int32_t *slots;
	unsigned *sink;
};

__global__ void __launch_bounds__(FL_T) flat_kernel(const fparams p)
{
	int x = blockIdx.x, k = 0;
	while (k < p.nbanks - 1 && x >= p.nb[k])
		x -= p.nb[k++];
	const int slot = p.slots[blockIdx.y];
	const uint8_t *base = p.reg[k] + (size_t)slot * p.eb[k];
	const size_t off = (size_t)x * FL_CHUNK, len = p.eb[k];
	uint4 v[FL_U];
#pragma unroll
	for (int u = 0; u < FL_U; u++) {
		const size_t o = off + ((size_t)u * FL_T + threadIdx.x) * 16;
		v[u] = o < len ? ld_stream16(base + o) : make_uint4(0, 0, 0, 0);
	}
	unsigned a = 0;
#pragma unroll
	for (int u = 0; u < FL_U; u++)
		a ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
	sink_out(p.sink, a);
}

/* ---- harness */
template <class Fn> static double time_steps(Fn enq, cudaStream_t s, double *lo, double *hi)
{
	cudaGraph_t g;
	cudaGraphExec_t ge;
	CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
	for (int st = 0; st < STEPS; st++)
		enq(st);
	CK(cudaStreamEndCapture(s, &g));
	CK(cudaGraphInstantiate(&ge, g, 0));
	double t[TRIALS];
	CK(fthbm_time_graph(ge, TRIALS, REPS, s, t));
	for (int i = 0; i < TRIALS; i++)
		t[i] /= STEPS;
	cudaGraphExecDestroy(ge);
	cudaGraphDestroy(g);
	std::sort(t, t + TRIALS);
	*lo = t[0];
	*hi = t[TRIALS - 1];
	return t[TRIALS / 2];
}

static double hbm_gbs(cudaStream_t s, int sms)
{
	double t[TRIALS];
	CK(fthbm_rate(HBM_BYTES, TRIALS, sms, s, t, NULL));
	std::sort(t, t + TRIALS);
	return t[TRIALS / 2];
}

struct geo {
	enum ftfmt_id f;
	long H, I;
	int topk;
};
static const geo geos[] = {
	{FTFMT_BF16, 2048, 768, 8},
	{FTFMT_NVFP4, 3072, 1536, 8},
	{FTFMT_DS_FP4, 4096, 2048, 6},
};

static double g_hbm, g_mb;
static const char *g_fmt;

static void report(const char *name, double us, double lo, double hi)
{
	const double gbs = g_mb * 1e3 / us;
	printf("%-7s %-12s %8.2f %7.2f-%-7.2f %6.0f %6.2f\n", g_fmt, name, us, lo, hi, gbs, gbs / g_hbm);
	fflush(stdout);
}

/* One format's pools and a step's inputs (slots of STEPS steps, topk routes each). */
struct fixture {
	geo gm;
	int n; /* banks */
	ftfmt_bank_shape sh[FTFMT_MAX_BANKS];
	ftgemv_experts e;
	int32_t *slots;
	float *w, *x, *y;
	void *scr;
	unsigned *sink;
	cudaStream_t s;
};

/* The product (its 4-bit loops loads only in this build; bf16 whole) and the contiguous reads. */
static void run_ceiling(fixture &fx)
{
	double lo, hi, us;
	const int topk = fx.gm.topk;
	for (int v = 0; v < 2; v++) {
		ftgemv_experts ev = fx.e;
		if (v)
			ev.fused_b = 0, ev.pdl = 0;
		us = time_steps(
			[&](int st) { CK(ftgemv_moe(&ev, 1, topk, fx.slots + st * topk, fx.w, fx.x, fx.y, fx.scr, fx.s)); }, fx.s,
			&lo, &hi);
		report(v ? "prod-2k" : "prod-default", us, lo, hi);
	}
	/* fp[0] gate_up's banks, fp[1] down's (bf16 0 | 1, nvfp4 0-2 | 3-5, ds_fp4 0-1 | 2-3), fp[2]
	 * all */
	fparams fp[3] = {};
	auto add = [&](fparams &f, int i) {
		f.reg[f.nbanks] = (const uint8_t *)fx.e.pool[i];
		f.eb[f.nbanks] = fx.sh[i].expert_bytes;
		f.nb[f.nbanks] = (int)((fx.sh[i].expert_bytes + FL_CHUNK - 1) / FL_CHUNK);
		f.nbanks++;
	};
	for (int i = 0; i < fx.n; i++) {
		add(fp[fx.gm.f == FTFMT_BF16 ? i : fx.gm.f == FTFMT_NVFP4 ? i / 3 : i / 2], i);
		add(fp[2], i);
	}
	auto launch = [&](fparams f, int st) {
		int blocks = 0;
		for (int k = 0; k < f.nbanks; k++)
			blocks += f.nb[k];
		f.slots = fx.slots + st * topk;
		f.sink = fx.sink;
		flat_kernel<<<dim3(blocks, topk), FL_T, 0, fx.s>>>(f);
	};
	us = time_steps(
		[&](int st) {
			launch(fp[0], st);
			launch(fp[1], st);
		},
		fx.s, &lo, &hi);
	report("flat2", us, lo, hi);
	us = time_steps([&](int st) { launch(fp[2], st); }, fx.s, &lo, &hi);
	report("flat1", us, lo, hi);
}

/* The tile patterns of a 4-bit format: register ones, or (bulk) the bulk-copy ones. */
static void run_tiles(fixture &fx, int bulk)
{
	double lo, hi, us;
	const geo &gm = fx.gm;
	const int topk = gm.topk;
	const int sdiv = gm.f == FTFMT_NVFP4 ? 16 : 32, sstep = gm.f == FTFMT_NVFP4 ? 8 : 4;
	const int dw = gm.f == FTFMT_NVFP4 ? 3 : 2; /* the first down bank */
	const uint8_t *const *pl = (const uint8_t *const *)fx.e.pool;
	const phase P[2] = {
		{pl[0], pl[1], fx.sh[0].expert_bytes, fx.sh[1].expert_bytes, (int)gm.H, sdiv, sstep, 1, (int)gm.I,
		 (int)(gm.I / 32)},
		{pl[dw], pl[dw + 1], fx.sh[dw].expert_bytes, fx.sh[dw + 1].expert_bytes, (int)gm.I, sdiv, sstep, 0,
		 (int)gm.I, (int)(gm.H / 64)},
	};
	/* k for both phases (k2 for the down phase where given); smem: dynamic shared memory */
	auto run = [&](const char *name, void (*k)(const lparams), void (*k2)(const lparams), size_t smem) {
		if (smem)
			CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
		us = time_steps(
			[&](int st) {
				for (int ph = 0; ph < 2; ph++) {
					lparams lp = {P[ph], fx.slots + st * topk, fx.sink, NULL, NULL, 0, 0};
					if (ph == 0)
						lp.pw = P[1].w, lp.ps = P[1].s, lp.pwb = P[1].wb, lp.psb = P[1].sb;
					(ph && k2 ? k2 : k)<<<dim3(P[ph].nbx, topk), 128, smem, fx.s>>>(lp);
				}
			},
			fx.s, &lo, &hi);
		report(name, us, lo, hi);
	};
	if (!bulk) {
		run("reg2", reg_kernel<2, 0, 0>, NULL, 0);
		run("reg4", reg_kernel<4, 0, 0>, NULL, 0);
		run("reg8", reg_kernel<8, 0, 0>, NULL, 0);
		run("reg2+pf1", reg_kernel<2, 0, 1>, NULL, 0);
		run("reg2+pf2", reg_kernel<2, 0, 2>, NULL, 0);
		run("reg4+pf2", reg_kernel<4, 0, 2>, NULL, 0);
		run("reg2+pfrow", reg_kernel<2, 0, -1>, NULL, 0);
		run("mem2", reg_kernel<2, 1, 0>, NULL, 0);
		run("mem4", reg_kernel<4, 1, 0>, NULL, 0);
		run("reg2+dnpf", reg_kernel<2, 0, 0, 1>, reg_kernel<2, 0, 0>, 0);
		run("reg2+dnpfev", reg_kernel<2, 0, 0, 2>, reg_kernel<2, 0, 0, 0, 1>, 0);
		run("reg2+dnpfev2", reg_kernel<2, 0, 0, 2>, reg_kernel<2, 0, 0>, 0);
		run("reg4+dnpfev", reg_kernel<4, 0, 0, 2>, reg_kernel<4, 0, 0, 0, 1>, 0);
	} else {
		const size_t st = stage_bytes(sstep) * 4; /* a stage of each of the 4 warps */
		run("bulk2", bulk_kernel<2, 0>, NULL, 2 * st);
		run("bulk3", bulk_kernel<3, 0>, NULL, 3 * st);
		run("bulk4", bulk_kernel<4, 0>, NULL, 4 * st);
		run("bulkc2", bulk_kernel<2, 1>, NULL, 2 * st);
		run("bulkc4", bulk_kernel<4, 1>, NULL, 4 * st);
	}
}

int main(int argc, char **argv)
{
	const int bulk = argc > 1 && !strcmp(argv[1], "bulk");
	if (argc > 2 || (argc == 2 && !bulk)) {
		fprintf(stderr, "usage: gemv_loads [bulk]\n");
		return 2;
	}
	int dev;
	cudaDeviceProp prop;
	CK(cudaGetDevice(&dev));
	CK(cudaGetDeviceProperties(&prop, dev));
	fixture fx = {};
	CK(cudaStreamCreateWithFlags(&fx.s, cudaStreamNonBlocking));
	g_hbm = hbm_gbs(fx.s, prop.multiProcessorCount);
	printf("device: %s, %d SMs; HBM read rate %.0f GB/s; batch 1, loads only\n", prop.name, prop.multiProcessorCount,
	       g_hbm);
	printf("%-7s %-12s %8s %15s %6s %6s\n", "format", "variant", "us/step", "(min-max)", "GB/s", "of HBM");
	CK(cudaMalloc((void **)&fx.sink, 1 << 20));
	for (const geo &gm : geos) {
		if (bulk && gm.f == FTFMT_BF16)
			continue;
		fx.gm = gm;
		fx.e = ftgemv_experts{};
		fx.e.fmt = gm.f, fx.e.H = gm.H, fx.e.I = gm.I, fx.e.slots = SLOTS, fx.e.act = FTFMT_ACT_SILU;
		fx.n = ftfmt_banks(ftfmt_get(gm.f), gm.H, gm.I, fx.sh);
		for (int i = 0; i < fx.n; i++) {
			CK(cudaMalloc(&fx.e.pool[i], fx.sh[i].expert_bytes * SLOTS));
			CK(cudaMemset(fx.e.pool[i], 0x3c, fx.sh[i].expert_bytes * SLOTS));
		}
		CK(ftgemv_init(&fx.e));
		g_fmt = ftfmt_get(gm.f)->name;
		g_mb = (double)gm.topk * ftfmt_expert_bytes(ftfmt_get(gm.f), gm.H, gm.I) / 1e6;
		/* step st, route r: slot st topk + r (mod SLOTS), as bench/expert_gemv.c at batch 1 */
		int32_t hs[STEPS * FTGEMV_MAX_TOPK];
		float hw[FTGEMV_MAX_TOPK], *hx = (float *)malloc(sizeof(float) * gm.H);
		if (!hx) {
			fprintf(stderr, "gemv_loads: out of memory\n");
			return 1;
		}
		for (int i = 0; i < STEPS * gm.topk; i++)
			hs[i] = i % SLOTS;
		for (int i = 0; i < FTGEMV_MAX_TOPK; i++)
			hw[i] = 1.0f / gm.topk;
		for (long i = 0; i < gm.H; i++)
			hx[i] = (float)((i * 7919) % 2001 - 1000) / 1000.0f;
		CK(cudaMalloc((void **)&fx.slots, sizeof hs));
		CK(cudaMalloc((void **)&fx.w, sizeof hw));
		CK(cudaMalloc((void **)&fx.x, sizeof(float) * gm.H));
		CK(cudaMalloc((void **)&fx.y, sizeof(float) * gm.H));
		CK(cudaMalloc(&fx.scr, ftgemv_scratch_bytes(&fx.e, 1, gm.topk)));
		CK(cudaMemcpy(fx.slots, hs, sizeof hs, cudaMemcpyHostToDevice));
		CK(cudaMemcpy(fx.w, hw, sizeof hw, cudaMemcpyHostToDevice));
		CK(cudaMemcpy(fx.x, hx, sizeof(float) * gm.H, cudaMemcpyHostToDevice));
		if (!bulk)
			run_ceiling(fx);
		if (gm.f != FTFMT_BF16)
			run_tiles(fx, bulk);
		CK(cudaGetLastError());
		for (int i = 0; i < fx.n; i++)
			cudaFree(fx.e.pool[i]);
		cudaFree(fx.slots);
		cudaFree(fx.w);
		cudaFree(fx.x);
		cudaFree(fx.y);
		cudaFree(fx.scr);
		free(hx);
	}
	cudaFree(fx.sink);
	cudaStreamDestroy(fx.s);
	return 0;
}
