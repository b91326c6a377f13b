/* ensure_experts on the H200, per phase: the slot-cache kernel compiled with FTSC_PROF (thread 0
 * adds each phase's SM cycles to a shared array, flushed to ftsc_prof[] at the end of the call)
 * and timed with CUDA events, for the eight cache-copy profiles at batch 32 and C = 0.4*L*E, in
 * three states:
 *   start  cache-copy's start state (slot s held by a layer-1 expert, usage s + 1), ids i % active
 *          on layer 0, 8 calls back to back each on its own fresh copy (cache-copy's ensure_us);
 *   steady the GPU test's all-miss cycle over the layers (every call misses min(n, E)), back to
 *          back, and the same captured as a CUDA graph of L layers;
 *   random the GPU test's random ids (about 107 misses of 128 for qwen3-30B's shape).
 * Each is timed with the dependent launch (d->pdl, the library's default on sm_90) and, in the
 * rows marked -nopdl, with plain launches. The methods and the start state are the GPU test's
 * (tests/gpu/ensure_bench.h). An empty kernel of the same launch shape (1 block, FTSC_BLOCK
 * threads, the same dynamic shared memory: slot_cache.cu's ftsc_launch_config) times a launch
 * alone (on the H200 host bound by the host's issue rate, not the GPU: bench/RESULTS.md); the rows
 * held, dev, dev-warm, host and host-warm time the start state after other GPU work (see
 * touch_kernel); sm-copy, sm-copy-held, ce-copy and sm-copy-warm1 time cache-copy's first and
 * second rounds after a 1 GiB copy from host memory, with the host's issue times (see
 * copy_kernel); the router rows time the steady cycle with a router-like kernel before every
 * call (see router_kernel).
 *
 * Built by `make bench-tools` (CUDA builds) as build/bench/ensure_prof (FTSC_PROF: each phase's
 * cycles, which add some 30 cycles per point and a flush at the end of each call to the times)
 * and build/bench/ensure_time (the times alone). By hand, e.g. another block size or another copy
 * of the kernel (one that has ftsc_launch_config) for an A/B:
 *   nvcc -O3 -std=c++17 -arch=sm_90 [-DFTSC_PROF] [-DFTSC_BLOCK=512] [-DKFILE='"path.cu"']
 *        -I. -Ikernels -Isrc bench/ensure_prof.cu -o ensure_prof
 * usage: [FTSC_NO_PDL=1] ensure_prof [REPEATS]   (default 15; prints one block per profile) */
/* FTSC_PROF: thread 0 adds the SM cycles of each phase to a shared
 * array (a shared-memory add, about 30 cycles a point, where a global one stalled warp 0 for a
 * global round trip at every point) and, at the end of the call, the array to ftsc_prof[] (a
 * kernel of the stream completes before the next one's flush, so no atomics); ftsc_prof[20]
 * counts the calls that ordered the chosen slots without a sort. Indices 16-19 split phases. */
#ifdef FTSC_PROF
__device__ long long ftsc_prof[32];
#define PROF_START                                                                                 \
	__shared__ long long prof_sm[32];                                                          \
	long long prof_t0 = clock64();                                                             \
	if (threadIdx.x == 0)                                                                      \
		for (int prof_i = 0; prof_i < 32; prof_i++)                                        \
			prof_sm[prof_i] = 0
#define PROF(i)                                                                                    \
	do {                                                                                       \
		if (threadIdx.x == 0) {                                                            \
			long long prof_t = clock64();                                               \
			prof_sm[i] += prof_t - prof_t0;                                            \
			prof_t0 = prof_t;                                                          \
		}                                                                                  \
	} while (0)
#define PROF_COUNT(i, v)                                                                           \
	do {                                                                                       \
		if (threadIdx.x == 0)                                                              \
			prof_sm[i] += (v);                                                         \
	} while (0)
#define PROF_FLUSH                                                                                 \
	do {                                                                                       \
		if (threadIdx.x == 0)                                                              \
			for (int prof_i = 0; prof_i < 32; prof_i++)                                \
				ftsc_prof[prof_i] += prof_sm[prof_i];                              \
	} while (0)
#endif

#ifndef KFILE
#define KFILE "slot_cache.cu"
#endif
#include KFILE

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <vector>

#include "../tests/gpu/ensure_bench.h"

#define CK(x)                                                                                      \
	do {                                                                                       \
		cudaError_t e_ = (x);                                                              \
		if (e_ != cudaSuccess) {                                                           \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

__global__ void __launch_bounds__(FTSC_BLOCK, 1) empty_kernel(struct ftsc_dev d, int layer, int32_t *ids, int n)
{
	extern __shared__ long long dyn[];
#if __CUDA_ARCH__ >= 900
	asm volatile("griddepcontrol.wait;\n" ::: "memory");
	asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
	if (threadIdx.x == 0 && n < 0)
		dyn[0] = layer; /* never: keeps the arguments */
}

/* The empty kernel in ensure_kernel's launch shape (a dependent launch when ctx says so). */
struct empty_ctx {
	size_t dyn;
	int pdl;
};

static cudaError_t launch_empty(void *ctx, struct ftsc_dev *d, int32_t *ids, int n, cudaStream_t s)
{
	const struct empty_ctx *c = (const struct empty_ctx *)ctx;
	cudaLaunchAttribute at;
	const cudaLaunchConfig_t cfg = ftsc_launch_config(c->dyn, c->pdl, s, &at);
	return cudaLaunchKernelEx(&cfg, empty_kernel, *d, 0, ids, n);
}

/* Diagnostics of the start-state method (why cache-copy's first round reads above the GPU
 * test's): before the round, and a stream sync after it (the GPU idle while the host issues
 * the round, as after cache-copy's event sync),
 *   dev  a 2 GiB device memset (evicts the 50 MB L2, the kernel's code with it);
 *   host a kernel reading one word of every 4 KiB of 1 GiB of pinned host memory (the GPU's
 *        address translation filled with host pages, as cache-copy's zero-copy gathers do);
 * warm = one untimed round right before the timed one; held = a 50 us spin kernel before the
 * first event, so the host has issued every call of the round before the GPU reaches it.
 * clock_kernel: the SM clock (clock64 over globaltimer). */
__global__ void touch_kernel(const int *p, long long words, int *sink)
{
	int acc = 0;
	for (long long i = (blockIdx.x * (long long)blockDim.x + threadIdx.x) * 1024; i < words;
	     i += (long long)gridDim.x * blockDim.x * 1024)
		acc += p[i];
	if (acc == 0x7fffffff)
		*sink = acc;
}

__global__ void spin_kernel(long long ns)
{
	unsigned long long t0, t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
	do
		asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	while ((long long)(t - t0) < ns);
}

__global__ void clock_kernel(double *mhz)
{
	unsigned long long t0, t;
	long long c0 = clock64();
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
	do
		asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	while (t - t0 < 20000);
	*mhz = (double)(clock64() - c0) / (double)(t - t0) * 1e3;
}

static cudaError_t hold_hook(void *ctx, cudaStream_t s)
{
	spin_kernel<<<1, 32, 0, s>>>(50000);
	return cudaGetLastError();
}

/* cache-copy's first round (ensure_first_round_us) reproduced: its rounds follow copy passes of
 * GiBs at the PCIe rate, the last of them an SM gather reading pinned, mapped host memory (the
 * per-bank path). copy_kernel is such a copy (16-byte loads over a grid of 4 blocks per SM);
 * rows sm-copy (then a stream sync, the first round, the second round), sm-copy-held (the
 * first round issued behind hold_hook's spin: no host issue time in it), ce-copy (the same
 * bytes by cudaMemcpyAsync, a copy engine, SMs idle) and sm-copy-warm1 (one untimed ensure call
 * between the copy and the sync). */
__global__ void copy_kernel(const int4 *src, int4 *dst, long long n16)
{
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n16; i += (long long)gridDim.x * blockDim.x)
		dst[i] = src[i];
}

/* Host-side issue times of a start round (ensb_start_round's hook and launch slots): when its
 * copies were issued (the hook, before e0), when the first and the last ensure call returned. */
struct issue_ctx {
	int hold, k;
	double t0, t_hook, t_first, t_last; /* seconds (CLOCK_MONOTONIC) */
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static cudaError_t issue_hook(void *ctx, cudaStream_t s)
{
	struct issue_ctx *c = (struct issue_ctx *)ctx;
	cudaError_t e = c->hold ? hold_hook(NULL, s) : cudaSuccess;
	c->t_hook = now_s();
	c->k = 0;
	return e;
}

static cudaError_t issue_launch(void *ctx, struct ftsc_dev *d, int32_t *ids, int n, cudaStream_t s)
{
	struct issue_ctx *c = (struct issue_ctx *)ctx;
	cudaError_t e = ftsc_dev_ensure(d, 0, ids, n, s);
	c->t_last = now_s();
	if (c->k++ == 0)
		c->t_first = c->t_last;
	return e;
}

/* One start round with its host issue times: *copies_us (the round's untimed copies issued),
 * *first_us and *all_us (the first and all ENSB_K calls issued, from the end of the copies). */
static void issue_round(struct ftsc_dev *bb, const struct ftsc_dev *init, int32_t *d_bids, const int32_t *d_ids0, int n,
			int hold, cudaStream_t s, cudaEvent_t e0, cudaEvent_t e1, double *us, double *copies_us,
			double *first_us, double *all_us)
{
	struct issue_ctx c = {hold, 0, now_s(), 0, 0, 0};
	CK(ensb_start_round(bb, init, d_bids, d_ids0, n, issue_launch, issue_hook, &c, s, e0, e1, us));
	*copies_us = (c.t_hook - c.t0) * 1e6;
	*first_us = (c.t_first - c.t_hook) * 1e6;
	*all_us = (c.t_last - c.t_hook) * 1e6;
}

/* A router-like kernel before each ensure call, as in an engine: one block per token scores
 * the layer's E experts (ROUTER_H-long dot products), then writes the token's top-k ids. The
 * ids are the steady cycle's (its row of table; the scores only keep the work live), so each
 * ensure call does the steady rows' work. trigger = 0: it never runs griddepcontrol.launch_dependents,
 * so a dependent launch after it can start only once its blocks have exited (an engine's
 * router today); 1: it does at its start. */
#define ROUTER_H 512
__global__ void router_kernel(const float *x, const float *w, int E, const int32_t *table, int32_t *ids, int topk,
			      int trigger)
{
	__shared__ float sc[FTSC_DEV_MAX_EXPERTS];
#if __CUDA_ARCH__ >= 900
	if (trigger)
		asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
	const int tok = blockIdx.x;
	const float4 *xr = (const float4 *)(x + (size_t)tok * ROUTER_H);
	for (int e = threadIdx.x; e < E; e += blockDim.x) {
		const float4 *wr = (const float4 *)(w + (size_t)e * ROUTER_H);
		float acc = 0;
		for (int h = 0; h < ROUTER_H / 4; h++) {
			float4 a = wr[h], b = xr[h];
			acc += a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w;
		}
		sc[e] = acc;
	}
	__syncthreads();
	for (int j = threadIdx.x; j < topk; j += blockDim.x)
		ids[tok * topk + j] = table[tok * topk + j] + (sc[j % E] != sc[j % E]); /* never NaN: + 0 */
}

/* iters steps back to back, twice, the second timed: per step the router (when router >= 0;
 * trigger = router) writing ids row i from d_idsA, then (when ens) ensure on layer i % L.
 * *us per step. */
static void router_steps(struct ftsc_dev *d, int L, int E, int n, int topk, int iters, int router, int ens,
			 const float *x, const float *w, const int32_t *d_idsA, int32_t *d_ids, cudaStream_t s,
			 cudaEvent_t e0, cudaEvent_t e1, double *us)
{
	float ms = 0;
	for (int pass = 0; pass < 2; pass++) {
		if (router < 0) /* ensure rewrites its ids: a fresh copy each pass */
			CK(cudaMemcpyAsync(d_ids, d_idsA, 4 * (size_t)n * iters, cudaMemcpyDeviceToDevice, s));
		CK(cudaEventRecord(e0, s));
		for (int i = 0; i < iters; i++) {
			if (router >= 0)
				router_kernel<<<n / topk, 256, 0, s>>>(x, w, E, d_idsA + (size_t)i * n, d_ids + (size_t)i * n,
									topk, router);
			if (ens)
				CK(ftsc_dev_ensure(d, i % L, d_ids + (size_t)i * n, n, s));
		}
		CK(cudaGetLastError());
		CK(cudaEventRecord(e1, s));
		CK(cudaEventSynchronize(e1));
	}
	CK(cudaEventElapsedTime(&ms, e0, e1));
	*us = ms * 1e3 / iters;
}

struct prof {
	double cyc[32];
	long calls;
};

#ifdef FTSC_PROF
static void prof_reset(void)
{
	long long z[32] = {0};
	CK(cudaMemcpyToSymbol(ftsc_prof, z, sizeof z));
}

static void prof_read(struct prof *p, long calls)
{
	long long v[32];
	CK(cudaMemcpyFromSymbol(v, ftsc_prof, sizeof v));
	for (int i = 0; i < 32; i++)
		p->cyc[i] = (double)v[i] / calls;
	p->calls = calls;
}
#else /* timings only */
static void prof_reset(void)
{
}

static void prof_read(struct prof *p, long calls)
{
	memset(p, 0, sizeof *p);
	p->calls = calls;
}
#endif

static double median(std::vector<double> v)
{
	return ensb_median(v.data(), (int)v.size());
}

static unsigned long long rng = 88172645463325252ull;
static uint32_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (unsigned)(rng >> 11);
}

struct model {
	const char *name;
	int L, E, topk;
};

static const model models[] = {
	{"qwen3.5-35B", 40, 256, 8},  {"qwen3-30B", 48, 128, 8},   {"gemma4-26B", 30, 128, 8},
	{"minimax-m2.5", 62, 256, 8}, {"glm4.7-nvfp4", 89, 160, 8}, {"gpt-oss-20b", 24, 32, 4},
	{"gpt-oss-120b", 36, 128, 4},
};

/* Phase indices of kernels/slot_cache.cu's PROF points, in kernel order. */
static const int prof_order[] = {19, 1, 2, 3, 4, 5, 18, 6, 8, 9, 10, 16, 17, 11, 12, 14, 15};

static void print_prof(const char *what, const struct prof *p, double us)
{
	double tot = 0;
	for (int i : prof_order)
		tot += p->cyc[i];
	printf("    %-8s %7.2f us/call, kernel %6.0f cyc:", what, us, tot);
	for (int i : prof_order)
		if (p->cyc[i] >= 0.5)
			printf(" p%d=%.0f", i, p->cyc[i]);
	printf(" ordered=%.2f", p->cyc[20]);
	printf("\n");
}

/* The dependent launch on (where the device has it: can, ftsc_dev_create's d->pdl) or off. */
static void set_pdl(struct ftsc_dev *d, int n, int pdl, int can)
{
	for (int k = 0; k < n; k++)
		d[k].pdl = pdl && can;
}

int main(int argc, char **argv)
{
	const int reps = argc > 1 ? atoi(argv[1]) : 15, K = ENSB_K;
	/* FTSC_NO_PDL=1: only the plain-launch rows */
	const int pdl_modes = getenv("FTSC_NO_PDL") ? 1 : 2;
	cudaStream_t s;
	CK(cudaStreamCreate(&s));
	cudaEvent_t e0, e1;
	CK(cudaEventCreate(&e0));
	CK(cudaEventCreate(&e1));
	int dev, clk;
	CK(cudaGetDevice(&dev));
	CK(cudaDeviceGetAttribute(&clk, cudaDevAttrClockRate, dev));
	printf("FTSC_BLOCK %d, kernel file %s, SM clock attribute %d MHz\n", FTSC_BLOCK, KFILE, clk / 1000);
#ifdef FTSC_PROF
	printf("phases (SM cycles of thread 0, in kernel order): p19 prologue and grid wait, p1 loads issued and "
	       "landed, p2 ids to flags and usage landed, p3 hit/miss scan, p4 ranks, p5 hybrid choice, p18 min/max, "
	       "p6 id_of_slot landed, p8 histogram, p9 scan and digit, p10 tracked usages, p16 ordered path's counts "
	       "and scan, p17 its placement (thread 0's slots), p11 the wait for the other threads' placement, p12 "
	       "general path, p14 assignment, p15 outputs\n");
#endif
	void *flush, *hostbuf;
	int *sink;
	double *d_mhz, mhz;
	const size_t flush_bytes = (size_t)2 << 30, host_bytes = (size_t)1 << 30;
	CK(cudaMalloc(&flush, flush_bytes));
	CK(cudaMalloc((void **)&sink, sizeof(int)));
	CK(cudaHostAlloc(&hostbuf, host_bytes, cudaHostAllocMapped));
	memset(hostbuf, 1, host_bytes);
	CK(cudaMalloc((void **)&d_mhz, sizeof(double)));
	float *d_rx, *d_rw; /* router_kernel's tokens (32) and weights (up to FTSC_DEV_MAX_EXPERTS rows) */
	CK(cudaMalloc((void **)&d_rx, 4 * (size_t)32 * ROUTER_H));
	CK(cudaMalloc((void **)&d_rw, 4 * (size_t)FTSC_DEV_MAX_EXPERTS * ROUTER_H));
	CK(cudaMemset(d_rx, 0x3c, 4 * (size_t)32 * ROUTER_H)); /* each float 0x3c3c3c3c, about 0.0115 */
	CK(cudaMemset(d_rw, 0x3c, 4 * (size_t)FTSC_DEV_MAX_EXPERTS * ROUTER_H));
	for (const model &m : models) {
		const int L = m.L, E = m.E, C = (int)(0.4 * L * E), n = 32 * m.topk;
		const int active = n < E ? n : E;
		printf("%s L%d E%d C%d n%d\n", m.name, L, E, C, n);
		std::vector<int32_t> sf((size_t)L * E, -1), is(C), hid(n);
		std::vector<int64_t> us(C), ls((size_t)L * E, 0);
		int64_t step0;
		ensb_start_state(E, C, sf.data(), is.data(), us.data(), &step0);
		ensb_start_ids(E, n, hid.data());
		struct ftsc_dev init, bb[ENSB_K];
		CK(ftsc_dev_create(&init, L, E, C));
		for (int k = 0; k < K; k++)
			CK(ftsc_dev_create(&bb[k], L, E, C));
		CK(ftsc_dev_upload(&init, sf.data(), is.data(), us.data(), ls.data(), step0, s));
		const int can = init.pdl;
		int32_t *d_ids0, *d_bids;
		CK(cudaMalloc((void **)&d_ids0, 4 * n));
		CK(cudaMalloc((void **)&d_bids, 4 * (size_t)n * K));
		CK(cudaMemcpy(d_ids0, hid.data(), 4 * n, cudaMemcpyHostToDevice));
		std::vector<double> t;
		struct prof p;
		double x;
		int32_t counts[3];
		/* start state, ENSB_K fresh copies, back to back */
		for (int pdl = pdl_modes - 1; pdl >= 0; pdl--) {
			set_pdl(bb, K, pdl, can);
			t.clear();
			for (int r = -2; r < reps; r++) {
				if (r == 0)
					prof_reset();
				CK(ensb_start_round(bb, &init, d_bids, d_ids0, n, NULL, NULL, NULL, s, e0, e1, &x));
				if (r >= 0)
					t.push_back(x);
			}
			prof_read(&p, (long)reps * K);
			CK(cudaMemcpy(counts, bb[0].counts, 12, cudaMemcpyDeviceToHost));
			if (counts[2] || counts[0] != active)
				printf("    start: error %d, %d planned (want %d)\n", counts[2], counts[0], active);
			print_prof(pdl ? "start" : "start-nopdl", &p, median(t));
		}
		set_pdl(bb, K, 1, can);
		/* the start-state method's diagnostics (see touch_kernel) */
		for (int v = 0; v < 5; v++) {
			static const char *const names[] = {"held", "dev", "dev-warm", "host", "host-warm"};
			const int warm = v == 2 || v == 4, held = v == 0;
			t.clear();
			std::vector<double> c;
			for (int r = -2; r < reps; r++) {
				if (v == 1 || v == 2)
					CK(cudaMemsetAsync(flush, r & 0xff, flush_bytes, s));
				if (v >= 3)
					touch_kernel<<<264, 256, 0, s>>>((const int *)hostbuf, (long long)(host_bytes / 4), sink);
				if (v >= 1)
					CK(cudaStreamSynchronize(s));
				if (warm)
					CK(ensb_start_round(bb, &init, d_bids, d_ids0, n, NULL, NULL, NULL, s, e0, e1, &x));
				CK(ensb_start_round(bb, &init, d_bids, d_ids0, n, NULL, held ? hold_hook : NULL, NULL, s, e0,
						    e1, &x));
				clock_kernel<<<1, 1, 0, s>>>(d_mhz);
				CK(cudaMemcpy(&mhz, d_mhz, sizeof mhz, cudaMemcpyDeviceToHost));
				if (r >= 0) {
					t.push_back(x);
					c.push_back(mhz);
				}
			}
			printf("    %-8s %7.2f us/call (SM clock after it %.0f MHz)\n", names[v], median(t), median(c));
		}
		/* cache-copy's first round after a copy pass (see copy_kernel) */
		for (int v = 0; v < 4; v++) {
			static const char *const names[] = {"sm-copy", "sm-copy-held", "ce-copy", "sm-copy-warm1"};
			const int reps_copy = reps < 9 ? reps : 9;
			std::vector<double> t1, t2, c, hv[6];
			for (int r = -1; r < reps_copy; r++) {
				if (v < 2)
					copy_kernel<<<132 * 4, 256, 0, s>>>((const int4 *)hostbuf, (int4 *)flush,
									     (long long)(host_bytes / 16));
				else
					CK(cudaMemcpyAsync(flush, hostbuf, host_bytes, cudaMemcpyHostToDevice, s));
				CK(cudaGetLastError());
				if (v == 3) { /* one untimed call (its state is recopied by the round) */
					CK(cudaMemcpyAsync(d_bids, d_ids0, 4 * (size_t)n, cudaMemcpyDeviceToDevice, s));
					CK(ftsc_dev_ensure(&bb[0], 0, d_bids, n, s));
				}
				CK(cudaStreamSynchronize(s));
				double x2 = 0, h[6] = {0, 0, 0, 0, 0, 0};
				issue_round(bb, &init, d_bids, d_ids0, n, v == 1, s, e0, e1, &x, &h[0], &h[1], &h[2]);
				if (v != 1)
					issue_round(bb, &init, d_bids, d_ids0, n, 0, s, e0, e1, &x2, &h[3], &h[4], &h[5]);
				clock_kernel<<<1, 1, 0, s>>>(d_mhz);
				CK(cudaMemcpy(&mhz, d_mhz, sizeof mhz, cudaMemcpyDeviceToHost));
				if (r >= 0) {
					t1.push_back(x);
					t2.push_back(x2);
					c.push_back(mhz);
					for (int j = 0; j < 6; j++)
						hv[j].push_back(h[j]);
				}
			}
			if (v == 1)
				printf("    %-12s first round %5.2f us/call (SM clock after it %.0f MHz)\n", names[v], median(t1),
				       median(c));
			else
				printf("    %-12s first round %5.2f, second %5.2f us/call (SM clock after them %.0f MHz)\n",
				       names[v], median(t1), median(t2), median(c));
			printf("    %-12s host issue, first round: copies %.1f us, then the first call %.1f, all %d %.1f", names[v],
			       median(hv[0]), median(hv[1]), K, median(hv[2]));
			if (v != 1)
				printf("; second round: %.1f, %.1f, %.1f", median(hv[3]), median(hv[4]), median(hv[5]));
			printf("\n");
		}
		/* the same launch shape, empty */
		struct empty_ctx ec = {ftsc_launch_dyn(&init), 0};
		CK(cudaFuncSetAttribute(empty_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)ec.dyn));
		for (ec.pdl = pdl_modes - 1; ec.pdl >= 0; ec.pdl--) {
			t.clear();
			for (int r = -2; r < reps; r++) {
				CK(ensb_start_round(bb, &init, d_bids, d_ids0, n, launch_empty, NULL, &ec, s, e0, e1, &x));
				if (r >= 0)
					t.push_back(x);
			}
			printf("    %-8s %7.2f us/call\n", ec.pdl ? "empty" : "empty-nopdl", median(t));
		}
		/* steady: all-miss cycle and random ids, b2b and in a graph of L layers */
		for (int mode = 0; mode < 2; mode++)
			for (int pdl = pdl_modes - 1; pdl >= 0; pdl--) {
				const int iters = 960;
				struct ftsc_dev d;
				CK(ftsc_dev_create(&d, L, E, C));
				set_pdl(&d, 1, pdl, can);
				std::vector<int32_t> h((size_t)n * iters);
				rng = 88172645463325252ull; /* the same random ids with and without pdl */
				ensb_cycle_ids(L, E, n, iters, mode == 0, rnd, h.data());
				int32_t *d_ids, *d_idsA;
				CK(cudaMalloc((void **)&d_ids, 4 * (size_t)n * iters));
				CK(cudaMalloc((void **)&d_idsA, 4 * (size_t)n * iters));
				CK(cudaMemcpy(d_idsA, h.data(), 4 * (size_t)n * iters, cudaMemcpyHostToDevice));
				CK(ensb_steady(&d, L, iters, d_ids, d_idsA, n, prof_reset, s, e0, e1, &x));
				prof_read(&p, iters);
				CK(cudaMemcpy(counts, d.counts, 12, cudaMemcpyDeviceToHost));
				char what[32];
				snprintf(what, sizeof what, "%s%d%s", mode ? "rand" : "steady", counts[1], pdl ? "" : "-nopdl");
				if (counts[2])
					printf("    %s: error %d\n", what, counts[2]);
				print_prof(what, &p, x);
				CK(ensb_graph(&d, L, d_ids, d_idsA, n, s, e0, e1, &x));
				printf("    %-8s %7.2f us/layer in a graph of %d layers\n", what, x, L);
				cudaFree(d_ids);
				cudaFree(d_idsA);
				ftsc_dev_destroy(&d);
			}
		/* after a router-like kernel (see router_kernel): the steady all-miss cycle, each ensure
		 * call behind a router that does not trigger its dependents, with plain and dependent
		 * launches, and behind one that triggers at its start; ensure's share = the pair minus
		 * the router alone */
		{
			const int iters = 960;
			std::vector<int32_t> h((size_t)n * iters);
			ensb_cycle_ids(L, E, n, iters, 1, rnd, h.data());
			int32_t *d_ids, *d_idsA;
			CK(cudaMalloc((void **)&d_ids, 4 * (size_t)n * iters));
			CK(cudaMalloc((void **)&d_idsA, 4 * (size_t)n * iters));
			CK(cudaMemcpy(d_idsA, h.data(), 4 * (size_t)n * iters, cudaMemcpyHostToDevice));
			double ra = 0, rt[4] = {0, 0, 0, 0};
			static const char *const names[] = {"ensure alone", "router + ensure-nopdl", "router + ensure",
							    "router-trigger + ensure"};
			static const int router_of[] = {-1, 0, 0, 1}, pdl_of[] = {1, 0, 1, 1};
			router_steps(&bb[0], L, E, n, m.topk, iters, 0, 0, d_rx, d_rw, d_idsA, d_ids, s, e0, e1, &ra);
			for (int v = 0; v < 4; v++) {
				struct ftsc_dev d;
				CK(ftsc_dev_create(&d, L, E, C));
				set_pdl(&d, 1, pdl_of[v], can);
				router_steps(&d, L, E, n, m.topk, iters, router_of[v], 1, d_rx, d_rw, d_idsA, d_ids, s, e0, e1,
					     &rt[v]);
				CK(cudaMemcpy(counts, d.counts, 12, cudaMemcpyDeviceToHost));
				if (counts[2] || counts[1] != active)
					printf("    %s: error %d, %d misses (want %d)\n", names[v], counts[2], counts[1], active);
				ftsc_dev_destroy(&d);
			}
			printf("    router   %7.2f us/step alone (%d blocks of 256, H %d, no trigger)\n", ra, n / m.topk,
			       ROUTER_H);
			for (int v = 0; v < 4; v++)
				printf("    %-24s %7.2f us/step, ensure's share %5.2f us\n", names[v], rt[v],
				       rt[v] - (router_of[v] >= 0 ? ra : 0));
			cudaFree(d_ids);
			cudaFree(d_idsA);
		}
		for (int k = 0; k < K; k++)
			ftsc_dev_destroy(&bb[k]);
		ftsc_dev_destroy(&init);
		cudaFree(d_ids0);
		cudaFree(d_bids);
	}
	cudaFree(flush);
	cudaFree(sink);
	cudaFreeHost(hostbuf);
	cudaFree(d_mhz);
	cudaFree(d_rx);
	cudaFree(d_rw);
	return 0;
}
