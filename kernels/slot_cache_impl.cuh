/* slot_cache's device side below ensure_kernel: its shape (block size, radix digit, shared-memory
 * layout), the phase markers bench/ensure_prof.cu defines, and the block-wide building blocks the
 * kernel runs (cp.async loads, the dependent-launch wait and release, block scans, the bitonic sort
 * and counting-rank order, the packed 16-bit counters). Included by slot_cache.cu only (and through
 * it by bench/ensure_prof.cu, which may define FTSC_BLOCK, FTSC_LOW_FIRST and the PROF markers
 * first). Not a public header: slot_cache.h is the API. */
#ifndef FT_KERNELS_SLOT_CACHE_IMPL_CUH
#define FT_KERNELS_SLOT_CACHE_IMPL_CUH
#include "slot_cache.h"

#include <stdint.h>

#ifndef FTSC_BLOCK
#define FTSC_BLOCK 1024 /* threads of the ensure kernel (one block); bench/ensure_prof.cu overrides it */
#endif
#define FTSC_WARPS (FTSC_BLOCK / 32)
#define FTSC_DIGIT_BITS 11      /* radix-select digit */
#define FTSC_RADIX (1 << FTSC_DIGIT_BITS)
#define FTSC_SEEN_BITS 39       /* step < 2^39 */
#define FTSC_ID_BITS 12         /* expert id < 4096 in the recency key */
#define FTSC_SMEM_SLOTS 16384   /* usage and id_of_slot of up to this many slots in shared memory */
#define FTSC_IDS_IN_REGS 2      /* ids per thread kept in registers (n <= 2 * FTSC_BLOCK) */
#define FTSC_PER_MAX ((FTSC_DEV_MAX_EXPERTS + FTSC_BLOCK - 1) / FTSC_BLOCK)
#ifndef FTSC_LOW_FIRST
#define FTSC_LOW_FIRST 1        /* a wide span tries the lowest digit first (0: bench/ensure_prof.cu's A/B) */
#endif
#define FTSC_TRACK 8            /* usages ranked in slot order by the packed scan (2 x 4 x 16 bits) */
#define FULL_MASK 0xffffffffu
/* dynamic shared memory for C slots: usage (int64, rounded up to 16 bytes) and id_of_slot */
#define FTSC_DYN_BYTES(C) ((size_t)(((C) + 1) & ~1) * 8 + (size_t)(C) * 4)

/* Phase markers of ensure_kernel: no code in the product. bench/ensure_prof.cu defines them before
 * it includes this file (its FTSC_PROF build) to add up the SM cycles of each phase. */
#ifndef PROF
#define PROF_START
#define PROF(i) ((void)0)
#define PROF_COUNT(i, v) ((void)0)
#define PROF_FLUSH ((void)0)
#endif

/* Per-expert flags in shared memory. */
#define F_WANT 1
#define F_HIT 2
#define F_SEL 4

struct ensure_smem {
	int32_t flag[FTSC_DEV_MAX_EXPERTS];
	int32_t rank[FTSC_DEV_MAX_EXPERTS];            /* plan position of a fetched miss, else -1;
							* at the end the expert's final slot */
	unsigned long long keys[FTSC_DEV_MAX_EXPERTS]; /* recency keys, the general path's slot keys;
							* ordered path: first positions [FTSC_RADIX]
							* and the ordered slots [F] as int32 */
	int32_t sorted[FTSC_RADIX];                    /* histogram, then (general path) chosen keys */
	int warp_sums[1][32];                          /* block_scan's warp sums */
	unsigned long long wscan[2][32];               /* the packed scan's warp sums */
	unsigned long long umin, umax;
	int track[FTSC_TRACK];
	int ntrack, bad, count, digit, remaining;
	unsigned dmin, dmax;                           /* step - 1 - usage: min / max (32-bit) */
};

__device__ static inline void cp_async16(void *smem, const void *gmem)
{
	unsigned sa = (unsigned)__cvta_generic_to_shared(smem);
	asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(sa), "l"(gmem) : "memory");
}

__device__ static inline void cp_async8(void *smem, const void *gmem)
{
	unsigned sa = (unsigned)__cvta_generic_to_shared(smem);
	asm volatile("cp.async.ca.shared.global [%0], [%1], 8;\n" ::"r"(sa), "l"(gmem) : "memory");
}

__device__ static inline void cp_async4(void *smem, const void *gmem)
{
	unsigned sa = (unsigned)__cvta_generic_to_shared(smem);
	asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(sa), "l"(gmem) : "memory");
}

__device__ static inline void cp_async_wait_all(void)
{
	asm volatile("cp.async.wait_all;\n" ::: "memory");
}

__device__ static inline void cp_async_commit(void)
{
	asm volatile("cp.async.commit_group;\n" ::: "memory");
}

/* Wait until at most one committed group of this thread is still in flight. */
__device__ static inline void cp_async_wait_but_last(void)
{
	asm volatile("cp.async.wait_group 1;\n" ::: "memory");
}

/* Programmatic dependent launch (sm_90+; launch() sets the attribute when d.pdl): the block may
 * start while the previous kernel of the stream still runs. ftsc_grid_wait returns once that
 * kernel has completed and its writes are visible (at once for a launch without the attribute);
 * nothing before it may touch global memory. ftsc_grid_release lets the next kernel of the
 * stream, if it was launched with the attribute, start its own block (which waits the same way
 * for this one to complete). */
__device__ static inline void ftsc_grid_wait(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
	asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

__device__ static inline void ftsc_grid_release(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
	asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

/* Exclusive block-wide scan of N words per thread, each scanned on its own (T int: a count,
 * or packed counts; T u64: packed 16-bit fields, which must not carry); tot[] gets the block's
 * sums. ws holds N x 32 warp sums. Every thread must call it. No barrier after it: ws must not
 * be written again (by the next scan) before the caller's next __syncthreads, which every use in
 * ensure_kernel has before its next scan. */
template <typename T, int N>
__device__ static void block_scan_n(T *v, T *tot, T (*ws)[32])
{
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	T x[N];
#pragma unroll
	for (int k = 0; k < N; k++)
		x[k] = v[k];
#pragma unroll
	for (int o = 1; o < 32; o <<= 1) {
#pragma unroll
		for (int k = 0; k < N; k++) {
			T y = __shfl_up_sync(FULL_MASK, x[k], o);
			if (lane >= o)
				x[k] += y;
		}
	}
	if (lane == 31) {
#pragma unroll
		for (int k = 0; k < N; k++)
			ws[k][warp] = x[k];
	}
	__syncthreads();
	if (warp == 0) {
#pragma unroll
		for (int k = 0; k < N; k++) {
			T w = lane < FTSC_WARPS ? ws[k][lane] : 0;
#pragma unroll
			for (int o = 1; o < 32; o <<= 1) {
				T y = __shfl_up_sync(FULL_MASK, w, o);
				if (lane >= o)
					w += y;
			}
			if (lane < FTSC_WARPS)
				ws[k][lane] = w;
		}
	}
	__syncthreads();
#pragma unroll
	for (int k = 0; k < N; k++) {
		v[k] = x[k] - v[k] + (warp > 0 ? ws[k][warp - 1] : 0);
		if (tot)
			tot[k] = ws[k][FTSC_WARPS - 1];
	}
}

/* The int form: returns v's exclusive prefix, *total the block's sum. */
__device__ static inline int block_scan(int v, int *total, int (*ws)[32])
{
	block_scan_n<int, 1>(&v, total, ws);
	return v;
}

/* Ascending bitonic sort of keys[0..p), p a power of two <= FTSC_DEV_MAX_EXPERTS. */
__device__ static void block_sort(unsigned long long *keys, int p)
{
	for (int k = 2; k <= p; k <<= 1)
		for (int j = k >> 1; j > 0; j >>= 1) {
			for (int i = threadIdx.x; i < p; i += FTSC_BLOCK) {
				int l = i ^ j;
				if (l > i) {
					unsigned long long a = keys[i], b = keys[l];
					if ((a > b) == ((i & k) == 0)) {
						keys[i] = b;
						keys[l] = a;
					}
				}
			}
			__syncthreads();
		}
}

/* Put the m distinct keys[0..m) in ascending order: by counting ranks into out[] when m fits
 * one per thread, else by a bitonic sort in place (then out == NULL means "sorted in keys").
 * Calls __syncthreads; every thread must call it. Returns 1 when the order is in out. */
__device__ static int block_order(unsigned long long *keys, int m, unsigned long long *out)
{
	if (m <= FTSC_BLOCK) {
		unsigned long long k = 0;
		int r = 0;
		if (threadIdx.x < m) {
			k = keys[threadIdx.x];
			for (int j = 0; j < m; j++)
				r += keys[j] < k;
		}
		__syncthreads();
		if (threadIdx.x < m)
			out[r] = k;
		__syncthreads();
		return 1;
	}
	int p = 1;
	while (p < m)
		p <<= 1;
	for (int i = m + threadIdx.x; i < p; i += FTSC_BLOCK)
		keys[i] = ~0ull;
	__syncthreads();
	block_sort(keys, p);
	return 0;
}

/* The field of a tracked usage bucket b in tb[FTSC_TRACK] (the last match), -1 if untracked. */
__device__ static inline int track_field(const int *tb, int b)
{
	int j = -1;
#pragma unroll
	for (int q = 0; q < FTSC_TRACK; q++)
		j = tb[q] == b ? q : j;
	return j;
}

__device__ static long long split_cost(long long x, long long m, long long q)
{
	long long a = x * (65536 - q), b = (m - x) * q;
	return a > b ? a : b;
}

__device__ static void fail_all(int32_t *ids, int n, int32_t *counts, int err)
{
	cp_async_wait_all(); /* nothing in flight at the exit */
	for (int i = threadIdx.x; i < n; i += FTSC_BLOCK)
		ids[i] = -1;
	if (threadIdx.x == 0) {
		counts[0] = 0;
		counts[1] = 0;
		counts[2] = err;
	}
}

/* Field j (16 bits) of the packed pair (a: fields 0-3, b: fields 4-7). */
__device__ static inline int field_get(unsigned long long a, unsigned long long b, int j)
{
	return (int)(((j < 4 ? a : b) >> (16 * (j & 3))) & 0xffff);
}

__device__ static inline void field_add(unsigned long long *a, unsigned long long *b, int j)
{
	unsigned long long one = 1ull << (16 * (j & 3));
	if (j < 4)
		*a += one;
	else
		*b += one;
}

#endif /* FT_KERNELS_SLOT_CACHE_IMPL_CUH */
