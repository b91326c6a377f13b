/* slot_cache_v1: the first ensure_experts kernel (radix select over (usage, slot) keys read from
 * global memory, 8-bit digits, bitonic sorts). Same semantics as slot_cache.cu; slower (about
 * 15-30 us per call with a few hundred misses). Kept as a reference implementation on the
 * device and as a fallback: FTSC_KERNEL=v1 selects it. */
#include "slot_cache.h"

#include <errno.h>
#include <stdint.h>

#define FTSC_BLOCK 1024   /* threads of the ensure kernel (one block) */
#define FTSC_WARPS (FTSC_BLOCK / 32)
#define FTSC_RADIX 256    /* radix-select digit: 8 bits */
#define FTSC_SEEN_BITS 39 /* step < 2^39 */
#define FTSC_ID_BITS 12   /* expert id < 4096 in the recency key */
#define FULL_MASK 0xffffffffu

/* Per-expert flags in shared memory. */
#define F_WANT 1
#define F_HIT 2
#define F_SEL 4

struct ensure_smem_v1 {
	int32_t flag[FTSC_DEV_MAX_EXPERTS];
	int32_t rank[FTSC_DEV_MAX_EXPERTS];            /* plan position of a fetched miss, else -1 */
	unsigned long long keys[FTSC_DEV_MAX_EXPERTS]; /* recency keys, then the chosen slot keys */
	unsigned hist[FTSC_RADIX];
	int warp_sums[FTSC_WARPS];
	int bad, distinct, hits, fetched, err, count, digit, remaining;
	unsigned long long maxkey;
};

/* Exclusive block-wide scan of v; *total gets the sum. Every thread must call it. */
__device__ static int block_scan(int v, int *total, int *warp_sums)
{
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	int x = v;
#pragma unroll
	for (int o = 1; o < 32; o <<= 1) {
		int y = __shfl_up_sync(FULL_MASK, x, o);
		if (lane >= o)
			x += y;
	}
	if (lane == 31)
		warp_sums[warp] = x;
	__syncthreads();
	if (warp == 0) {
		int w = warp_sums[lane];
#pragma unroll
		for (int o = 1; o < 32; o <<= 1) {
			int y = __shfl_up_sync(FULL_MASK, w, o);
			if (lane >= o)
				w += y;
		}
		warp_sums[lane] = w;
	}
	__syncthreads();
	int excl = x - v + (warp > 0 ? warp_sums[warp - 1] : 0);
	*total = warp_sums[FTSC_WARPS - 1];
	__syncthreads();
	return excl;
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

__device__ static int pow2_at_least(int n)
{
	int p = 1;
	while (p < n)
		p <<= 1;
	return p;
}

__device__ static long long split_cost(long long x, long long m, long long q)
{
	long long a = x * (65536 - q), b = (m - x) * q;
	return a > b ? a : b;
}

__device__ static void fail_all(int32_t *ids, int n, int32_t *counts, int err)
{
	for (int i = threadIdx.x; i < n; i += FTSC_BLOCK)
		ids[i] = -1;
	if (threadIdx.x == 0) {
		counts[0] = 0;
		counts[1] = 0;
		counts[2] = err;
	}
}

__device__ static unsigned long long slot_key(const int64_t *usage, int s)
{
	return ((unsigned long long)usage[s] << 24) | (unsigned)s;
}

/* Grid: one block of FTSC_BLOCK threads; thread t owns experts [t*per, t*per + per) for the
 * ordered scans and strides over slots and ids. */
__global__ void __launch_bounds__(FTSC_BLOCK, 1)
	ensure_kernel_v1(struct ftsc_dev d, int layer, int32_t *__restrict__ ids, int n, int hybrid,
		      int max_fetch, int q16, int order)
{
	__shared__ struct ensure_smem_v1 sm;
	const int tid = threadIdx.x, E = d.experts, C = d.slots;
	const long long base = (long long)layer * E;
	const int per = (E + FTSC_BLOCK - 1) / FTSC_BLOCK, e0 = tid * per;

	for (int e = tid; e < E; e += FTSC_BLOCK)
		sm.flag[e] = 0;
	if (tid == 0) {
		sm.bad = layer < 0 || layer >= d.layers;
		sm.distinct = sm.hits = sm.count = 0;
		sm.maxkey = 0;
	}
	__syncthreads();
	for (int i = tid; i < n; i += FTSC_BLOCK) {
		int e = ids[i];
		if (e >= E)
			sm.bad = 1;
		else if (e >= 0)
			sm.flag[e] = F_WANT;
	}
	__syncthreads();
	if (sm.bad) {
		fail_all(ids, n, d.counts, -EINVAL);
		return;
	}
	const int32_t *slot_for = d.slot_for_id + base;
	int nd = 0, nh = 0, nm = 0;
	for (int j = 0; j < per; j++) {
		int e = e0 + j;
		if (e < E && sm.flag[e]) {
			nd++;
			if (slot_for[e] >= 0) {
				nh++;
				sm.flag[e] |= F_HIT;
			} else {
				nm++;
			}
		}
	}
	if (nd)
		atomicAdd(&sm.distinct, nd);
	if (nh)
		atomicAdd(&sm.hits, nh);
	int M;
	int mx = block_scan(nm, &M, sm.warp_sums); /* ascending-id rank of this thread's first miss */
	for (int j = 0; j < per; j++) {
		int e = e0 + j;
		if (e < E)
			sm.rank[e] = sm.flag[e] == F_WANT ? mx++ : -1;
	}
	if (tid == 0) {
		int F = M, err = 0;
		if (hybrid) {
			if (max_fetch >= 0) {
				F = max_fetch < M ? max_fetch : M;
			} else {
				long long q = q16 < 0 ? 0 : q16 > 65536 ? 65536 : q16, m = M;
				long long lo = (m * q) >> 16;
				long long f = split_cost(lo, m, q) <= split_cost(lo + 1, m, q) ? lo : lo + 1;
				F = (int)(f < m ? f : m);
			}
			if (F > C - sm.hits)
				F = C - sm.hits;
		} else if (sm.distinct > C) {
			err = -ENOSPC;
		}
		sm.fetched = F;
		sm.err = err;
	}
	__syncthreads();
	if (sm.err) {
		fail_all(ids, n, d.counts, sm.err);
		return;
	}
	const int F = sm.fetched;
	const long long step = *d.step + 1;
	for (int j = 0; j < per; j++) {
		int e = e0 + j;
		if (e < E && (sm.flag[e] & F_HIT))
			d.usage[slot_for[e]] = step;
	}
	if (F < M) {
		/* Choose the fetched misses; their plan positions follow ascending id. */
		if (order == 0) {
			const int p = pow2_at_least(M);
			for (int e = tid; e < E; e += FTSC_BLOCK)
				if (sm.rank[e] >= 0)
					sm.keys[sm.rank[e]] =
						((unsigned long long)(((1LL << FTSC_SEEN_BITS) - 1) - d.last_seen[base + e])
						 << FTSC_ID_BITS) |
						(unsigned long long)e;
			for (int i = M + tid; i < p; i += FTSC_BLOCK)
				sm.keys[i] = ~0ull;
			__syncthreads();
			block_sort(sm.keys, p);
			for (int i = tid; i < F; i += FTSC_BLOCK)
				sm.flag[sm.keys[i] & ((1u << FTSC_ID_BITS) - 1)] |= F_SEL;
		} else {
			for (int e = tid; e < E; e += FTSC_BLOCK)
				if (sm.rank[e] >= 0 && sm.rank[e] < F)
					sm.flag[e] |= F_SEL;
		}
		__syncthreads();
		int ns = 0;
		for (int j = 0; j < per; j++)
			if (e0 + j < E && (sm.flag[e0 + j] & F_SEL))
				ns++;
		int tot, sx = block_scan(ns, &tot, sm.warp_sums);
		for (int j = 0; j < per; j++) {
			int e = e0 + j;
			if (e < E)
				sm.rank[e] = (sm.flag[e] & F_SEL) ? sx++ : -1;
		}
	}
	__syncthreads();
	if (F > 0) {
		/* Radix-select the F smallest keys (usage, slot) among slots with usage < step, 8 bits
		 * at a time from the highest bit any eligible key has. */
		const unsigned long long limit = (unsigned long long)step << 24;
		unsigned long long mk = 0;
		for (int s = tid; s < C; s += FTSC_BLOCK) {
			unsigned long long k = slot_key(d.usage, s);
			if (k < limit && k > mk)
				mk = k;
		}
		for (int o = 16; o > 0; o >>= 1) {
			unsigned long long y = __shfl_xor_sync(FULL_MASK, mk, o);
			mk = y > mk ? y : mk;
		}
		if ((tid & 31) == 0)
			atomicMax(&sm.maxkey, mk);
		__syncthreads();
		const int bits = 64 - __clzll((long long)sm.maxkey);
		unsigned long long prefix = 0;
		int remaining = F;
		for (int shift = ((bits + 7) / 8 - 1) * 8; shift >= 0; shift -= 8) {
			if (tid < FTSC_RADIX)
				sm.hist[tid] = 0;
			__syncthreads();
			const unsigned long long hi = shift + 8 >= 64 ? 0 : ~0ull << (shift + 8);
			for (int s = tid; s < C; s += FTSC_BLOCK) {
				unsigned long long k = slot_key(d.usage, s);
				if (k < limit && (k & hi) == prefix)
					atomicAdd(&sm.hist[(k >> shift) & (FTSC_RADIX - 1)], 1u);
			}
			__syncthreads();
			if (tid < 32) {
				/* lane l owns bins 8l..8l+7: find the bin where the running count
				 * reaches `remaining` */
				const unsigned *c = &sm.hist[tid * 8];
				unsigned sum = 0;
#pragma unroll
				for (int b = 0; b < 8; b++)
					sum += c[b];
				unsigned incl = sum;
#pragma unroll
				for (int o = 1; o < 32; o <<= 1) {
					unsigned y = __shfl_up_sync(FULL_MASK, incl, o);
					if (tid >= o)
						incl += y;
				}
				unsigned excl = incl - sum;
				unsigned ballot = __ballot_sync(FULL_MASK, incl >= (unsigned)remaining);
				if (tid == __ffs(ballot) - 1) {
					unsigned run = excl;
					int b = 0;
					while (b < 7 && run + c[b] < (unsigned)remaining)
						run += c[b++];
					sm.digit = tid * 8 + b;
					sm.remaining = remaining - (int)run;
				}
			}
			__syncthreads();
			prefix |= (unsigned long long)sm.digit << shift;
			remaining = sm.remaining;
			__syncthreads();
		}
		/* prefix is the F-th smallest key: gather the keys <= prefix and sort them. */
		for (int s = tid; s < C; s += FTSC_BLOCK) {
			unsigned long long k = slot_key(d.usage, s);
			if (k < limit && k <= prefix)
				sm.keys[atomicAdd(&sm.count, 1)] = k;
		}
		const int p = pow2_at_least(F);
		for (int i = F + tid; i < p; i += FTSC_BLOCK)
			sm.keys[i] = ~0ull;
		__syncthreads();
		block_sort(sm.keys, p);
		/* Assign: the r-th fetched miss (ascending id) takes the r-th coldest slot. */
		for (int j = 0; j < per; j++) {
			int e = e0 + j;
			if (e >= E || sm.rank[e] < 0)
				continue;
			int r = sm.rank[e], s = (int)(sm.keys[r] & 0xffffff);
			int32_t old = d.id_of_slot[s];
			if (old >= 0)
				d.slot_for_id[old] = -1;
			d.id_of_slot[s] = (int32_t)(base + e);
			d.slot_for_id[base + e] = s;
			d.usage[s] = step;
			d.src_indices[r] = e;
			d.evict_slots[r] = s;
		}
		__syncthreads();
	}
	for (int e = tid; e < E; e += FTSC_BLOCK)
		if (sm.flag[e])
			d.last_seen[base + e] = step;
	for (int i = tid; i < n; i += FTSC_BLOCK) {
		int e = ids[i];
		ids[i] = e >= 0 ? d.slot_for_id[base + e] : -1;
	}
	if (tid == 0) {
		d.counts[0] = F;
		d.counts[1] = M;
		d.counts[2] = 0;
		*d.step = step;
	}
}

extern "C" cudaError_t ftsc_dev_launch_v1(struct ftsc_dev *d, int layer, int32_t *ids, int n, int hybrid,
					  int max_fetch, int q16, int order, cudaStream_t s)
{
	ensure_kernel_v1<<<1, FTSC_BLOCK, 0, s>>>(*d, layer, ids, n, hybrid, max_fetch, q16, order);
	return cudaGetLastError();
}
