/* slot_cache (GPU): see slot_cache.h. One block of FTSC_BLOCK threads per call: the work is a
 * few thousand slots and at most E experts, so one block with shared-memory scans beats any
 * multi-block scheme that would need a grid-wide barrier.
 *
 * Cost model (what keeps a call at a few microseconds; bench/ensure_prof.cu times each phase):
 * - The launch: on sm_90 and later each call is a programmatic dependent launch (d->pdl): its
 *   block may be scheduled while the stream's previous kernel runs, clears its shared memory,
 *   then waits (griddepcontrol.wait) for that kernel to complete before touching global memory,
 *   and lets the next dependent launch start at once. The results are those of a plain launch;
 *   a call saves about 1.2 us on the H200, right after another ensure call or after a kernel that
 *   never triggers its dependents (an engine's router: the block starts once the router's
 *   blocks have exited), 0.0-0.2 us more when that kernel triggers at its start (bench/RESULTS.md).
 * - Every global load the call needs is issued at the start, together: first the few words the
 *   next phases wait for (state step, slot_for_id of the layer, ids, last_seen for the recency
 *   order), then usage and id_of_slot of every slot copied into shared memory by cp.async in two
 *   groups (usage waited for before phase 2; id_of_slot, needed only for the evicted owners, in
 *   phase 4); after that the work is shared-memory scans and radix passes separated by
 *   __syncthreads.
 * - The eligible usages' min and max are taken as 32-bit distances from the step (one warp
 *   reduction instruction each; a 64-bit pass only when some usage is 2^32 steps old).
 * - The coldest slots are found by a radix select on usage - min(usage) in 11-bit digits: one
 *   pass when the eligible usages span < 2048 steps; a wider span first tries the lowest digit
 *   at prefix 0, the only pass when the coldest slots lie within 2047 steps of the oldest (as
 *   from cache-copy's start state), else the passes run from the top digit (two below 2^22).
 * - The chosen slots are then put in (usage, slot) order without a sort when they span < 2048
 *   steps: the last pass's histogram gives each usage its first position, a usage held by one
 *   chosen slot is placed directly, and the slots of up to FTSC_TRACK usages held by several
 *   (the threshold usage always among them) are ranked in slot order by one block scan of
 *   packed counts.
 * - Anything else (a wider span, more tied usages, usage not in shared memory) takes the
 *   general path: keys collected with an atomic counter and ordered by counting ranks or a
 *   bitonic sort. */
#include "slot_cache.h"
#include "slot_cache_impl.cuh"

#include <errno.h>
#include <stdint.h>

/* Grid: one block of FTSC_BLOCK threads. Thread t owns experts [t*per, t*per + per) and slots
 * [t*spt, t*spt + spt), and strides over ids. CACHED (C <= d.smem_slots): dynamic shared
 * memory holds usage of the C slots (int64), then id_of_slot (int32, from a 16-byte boundary),
 * read with shared-memory loads (a template parameter, so the compiler knows the address space);
 * else both are read from global memory. */
template <bool CACHED>
__global__ void __launch_bounds__(FTSC_BLOCK, 1)
	ensure_kernel(struct ftsc_dev d, int layer, int32_t *__restrict__ ids, int n, int hybrid,
		      int max_fetch, int q16, int order)
{
	PROF_START;
	__shared__ struct ensure_smem sm;
	extern __shared__ __align__(16) long long ucache_dyn[];
	const int tid = threadIdx.x, lane = tid & 31, E = d.experts, C = d.slots;
	const bool cached = CACHED;
	long long *const uc = cached ? ucache_dyn : (long long *)d.usage;
	int32_t *const ic = cached ? (int32_t *)(ucache_dyn + ((C + 1) & ~1)) : d.id_of_slot;
	const long long base = (long long)layer * E;
	const int per = (E + FTSC_BLOCK - 1) / FTSC_BLOCK, e0 = tid * per;
	const bool layer_ok = layer >= 0 && layer < d.layers;
	const bool recency = hybrid && order == 0;

	/* The shared-memory prologue, then (a dependent launch) the wait for the previous kernel. */
#pragma unroll
	for (int j = 0; j < FTSC_PER_MAX; j++)
		if (j < per && e0 + j < E)
			sm.flag[e0 + j] = 0;
	if (tid == 0) {
		sm.count = sm.ntrack = 0;
		sm.umin = ~0ull;
		sm.umax = 0;
		sm.dmin = ~0u;
		sm.dmax = 0;
	}
	ftsc_grid_wait();
	ftsc_grid_release();
	PROF(19);
	/* Phase 0: every independent global load at once. First the few words the next phases wait
	 * for (step, slot_for_id and last_seen of the thread's experts, its ids), then the bulk
	 * copies of usage (needed from phase 2 on) and id_of_slot (only for the evicted owners,
	 * waited for in phase 4) in two cp.async groups: issued before the bulk, the small loads do
	 * not queue behind its ~12 bytes a slot. No use of a loaded word before the copies are
	 * issued (a use would stall the thread on that load first). */
	const long long step_prev = *d.step;
	int32_t sf[FTSC_PER_MAX];
	long long ls[FTSC_PER_MAX];
#pragma unroll
	for (int j = 0; j < FTSC_PER_MAX; j++) {
		int e = e0 + j;
		sf[j] = -1;
		ls[j] = 0;
		if (j < per && e < E) {
			if (layer_ok) {
				sf[j] = d.slot_for_id[base + e];
				if (recency)
					ls[j] = d.last_seen[base + e];
			}
		}
	}
	int32_t idr[FTSC_IDS_IN_REGS];
#pragma unroll
	for (int k = 0; k < FTSC_IDS_IN_REGS; k++) {
		int i = tid + k * FTSC_BLOCK;
		idr[k] = i < n ? ids[i] : -1;
	}
	if (cached) {
		for (int c = tid; c < C / 2; c += FTSC_BLOCK)
			cp_async16(ucache_dyn + 2 * c, d.usage + 2 * c);
		if ((C & 1) && tid == 0)
			cp_async8(ucache_dyn + C - 1, d.usage + C - 1);
		cp_async_commit();
		for (int c = tid; c < C / 4; c += FTSC_BLOCK)
			cp_async16(ic + 4 * c, d.id_of_slot + 4 * c);
		if (tid < (C & 3))
			cp_async4(ic + (C & ~3) + tid, d.id_of_slot + (C & ~3) + tid);
		cp_async_commit();
	}
	const long long step = step_prev + 1;
	if (tid == 0)
		sm.bad = !layer_ok;
	__syncthreads();
	PROF(1);
	/* Phase 1: the distinct ids. The shared copies land here (waited for by each thread, seen
	 * by all after the barrier). */
	for (int i = tid; i < n; i += FTSC_BLOCK) {
		int k = i / FTSC_BLOCK, e = k < FTSC_IDS_IN_REGS ? idr[k] : ids[i];
		if (e >= E)
			sm.bad = 1;
		else if (e >= 0)
			sm.flag[e] = F_WANT;
	}
	cp_async_wait_but_last(); /* usage */
	__syncthreads();
	PROF(2);
	if (sm.bad) {
		fail_all(ids, n, d.counts, -EINVAL);
		return;
	}
	/* Phase 2: hits and misses; misses ranked in ascending id. One scan of the packed counts
	 * (misses in the low 16 bits, hits in the high: each total <= E <= 2048). */
	int nh = 0, nm = 0;
#pragma unroll
	for (int j = 0; j < FTSC_PER_MAX; j++) {
		int e = e0 + j;
		if (j < per && e < E && sm.flag[e]) {
			if (sf[j] >= 0) {
				nh++;
				sm.flag[e] |= F_HIT;
			} else {
				nm++;
			}
		}
	}
	int tot;
	int mx = block_scan(nm | nh << 16, &tot, sm.warp_sums) & 0xffff;
	PROF(3);
	const int M = tot & 0xffff, hits = tot >> 16;
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
		if (F > C - hits)
			F = C - hits;
	} else if (M + hits > C) {
		err = -ENOSPC;
	}
	if (err) {
		fail_all(ids, n, d.counts, err);
		return;
	}
#pragma unroll
	for (int j = 0; j < FTSC_PER_MAX; j++) {
		int e = e0 + j;
		if (j < per && e < E) {
			int f = sm.flag[e];
			sm.rank[e] = f == F_WANT ? mx++ : -1;
			if (f & F_HIT) {
				d.usage[sf[j]] = step;
				if (cached)
					ucache_dyn[sf[j]] = step;
			}
		}
	}
	__syncthreads();
	PROF(4);
	/* Phase 3 (hybrid with fewer fetches than misses): which misses are fetched. Plan
	 * positions still follow ascending id. */
	if (F < M) {
		if (recency) {
#pragma unroll
			for (int j = 0; j < FTSC_PER_MAX; j++) {
				int e = e0 + j;
				if (j < per && e < E && sm.rank[e] >= 0)
					sm.keys[sm.rank[e]] =
						((unsigned long long)(((1LL << FTSC_SEEN_BITS) - 1) - ls[j]) << FTSC_ID_BITS) |
						(unsigned long long)e;
			}
			__syncthreads();
			unsigned long long *ord = (unsigned long long *)sm.sorted; /* M <= 1024 fits */
			if (!block_order(sm.keys, M, ord))
				ord = sm.keys;
			for (int i = tid; i < F; i += FTSC_BLOCK)
				sm.flag[ord[i] & ((1u << FTSC_ID_BITS) - 1)] |= F_SEL;
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
		int sx = block_scan(ns, &tot, sm.warp_sums);
		for (int j = 0; j < per; j++) {
			int e = e0 + j;
			if (e < E)
				sm.rank[e] = (sm.flag[e] & F_SEL) ? sx++ : -1;
		}
		__syncthreads();
	}
	PROF(5);
	/* Phase 4: the F coldest slots not used in this step, in (usage, slot) order. Thread t
	 * owns slots [s0, s1) (slot order within a thread, thread order across). */
	if (F > 0) {
		const int spt = (C + FTSC_BLOCK - 1) / FTSC_BLOCK, s0 = tid * spt;
		const int s1 = s0 + spt < C ? s0 + spt : C;
		/* min / max of the eligible usages as 32-bit distances d = step - 1 - usage (one
		 * warp reduction instruction each); exact unless some d reaches 2^32 - 1, which
		 * takes the 64-bit pass below */
		unsigned dmin = ~0u, dmax = 0;
		for (int s = s0; s < s1; s++) {
			long long u = uc[s];
			if (u < step) {
				unsigned long long dd = (unsigned long long)(step - 1 - u);
				unsigned d32 = dd >= 0xffffffffull ? 0xffffffffu : (unsigned)dd;
				dmin = d32 < dmin ? d32 : dmin;
				dmax = d32 > dmax ? d32 : dmax;
			}
		}
		for (int b = tid; b < FTSC_RADIX; b += FTSC_BLOCK) /* the first pass's histogram */
			sm.sorted[b] = 0;
		dmin = __reduce_min_sync(FULL_MASK, dmin);
		dmax = __reduce_max_sync(FULL_MASK, dmax);
		if (lane == 0) {
			atomicMin(&sm.dmin, dmin);
			atomicMax(&sm.dmax, dmax);
		}
		PROF(18);
		cp_async_wait_all(); /* id_of_slot, read in the assignment (after this barrier) */
		__syncthreads();
		if (sm.dmax == 0xffffffffu) {
			unsigned long long lo = ~0ull, hi = 0;
			for (int s = s0; s < s1; s++) {
				long long u = uc[s];
				if (u < step) {
					lo = (unsigned long long)u < lo ? (unsigned long long)u : lo;
					hi = (unsigned long long)u > hi ? (unsigned long long)u : hi;
				}
			}
#pragma unroll
			for (int o = 16; o > 0; o >>= 1) {
				unsigned long long a = __shfl_xor_sync(FULL_MASK, lo, o),
						   b = __shfl_xor_sync(FULL_MASK, hi, o);
				lo = a < lo ? a : lo;
				hi = b > hi ? b : hi;
			}
			if (lane == 0) {
				atomicMin(&sm.umin, lo);
				atomicMax(&sm.umax, hi);
			}
			__syncthreads();
		}
		const bool wide = sm.dmax == 0xffffffffu;
		PROF(6);
		const long long umin = wide ? (long long)sm.umin : step - 1 - (long long)sm.dmax;
		const unsigned long long range = wide ? sm.umax - sm.umin : (unsigned long long)(sm.dmax - sm.dmin);
		int *const first = (int *)sm.keys;             /* [FTSC_RADIX], ordered path */
		int *const ordi = (int *)sm.keys + FTSC_RADIX; /* [F], ordered path */
		/* radix select of the F-th smallest v = usage - umin (keys counted with multiplicity:
		 * ties on usage are resolved by slot order below). The last pass leaves first[b] =
		 * the number of counted keys below bin b, and its histogram in sm.sorted. */
		unsigned long long prefix = 0;
		int remaining = F;
		const int bits = range ? 64 - __clzll((long long)range) : 0;
		const int top = (bits + FTSC_DIGIT_BITS - 1) / FTSC_DIGIT_BITS * FTSC_DIGIT_BITS - FTSC_DIGIT_BITS;
		/* A span of FTSC_RADIX or more: first the lowest digit's pass at prefix 0, which counts
		 * the usages below umin + FTSC_RADIX at full resolution. When they hold the F-th
		 * smallest (cache-copy's start state: every usage distinct) it is the only pass;
		 * else its bins are cleared and the passes run from the top digit. */
		bool low_first = FTSC_LOW_FIRST && top > 0;
		for (int shift = low_first ? 0 : top; shift >= 0; shift -= FTSC_DIGIT_BITS) {
			const unsigned long long him =
				shift + FTSC_DIGIT_BITS >= 64 ? 0 : ~0ull << (shift + FTSC_DIGIT_BITS);
			for (int s = s0; s < s1; s++) {
				long long u = uc[s];
				unsigned long long v = (unsigned long long)(u - umin);
				if (u < step && (v & him) == prefix)
					atomicAdd(&sm.sorted[(v >> shift) & (FTSC_RADIX - 1)], 1);
			}
			__syncthreads();
			PROF(8);
			/* thread t owns bins [t*bpt, t*bpt + bpt) */
			const int bpt = FTSC_RADIX / FTSC_BLOCK;
			int c[FTSC_RADIX / FTSC_BLOCK], sum = 0;
#pragma unroll
			for (int b = 0; b < bpt; b++) {
				c[b] = sm.sorted[tid * bpt + b];
				sum += c[b];
				if (shift > 0) /* the next pass counts afresh */
					sm.sorted[tid * bpt + b] = 0;
			}
			int ex = block_scan(sum, &tot, sm.warp_sums);
			if (low_first) {
				low_first = false;
				if (tot < remaining) { /* tot is the block's: every thread takes this branch */
#pragma unroll
					for (int b = 0; b < bpt; b++)
						sm.sorted[tid * bpt + b] = 0;
					shift = top + FTSC_DIGIT_BITS;
					__syncthreads();
					continue;
				}
			}
			if (shift == 0)
				for (int b = 0, f = ex; b < bpt; f += c[b], b++)
					first[tid * bpt + b] = f;
			if (ex < remaining && remaining <= ex + sum) {
				int run = ex, b = 0;
#pragma unroll
				for (int q = 0; q < bpt - 1; q++)
					if (b == q && run + c[q] < remaining) {
						run += c[q];
						b = q + 1;
					}
				sm.digit = tid * bpt + b;
				sm.remaining = remaining - run;
			}
			__syncthreads();
			PROF(9);
			prefix |= (unsigned long long)sm.digit << shift;
			remaining = sm.remaining;
		}
		const long long ustar = umin + (long long)prefix;
		const int below = F - remaining; /* chosen slots with usage < ustar */
		/* Ordered path: the chosen usages span < FTSC_RADIX, so the last pass counted every
		 * chosen slot by its full v (first[] and the histogram are exact below ustar). */
		bool ordered = cached && prefix < FTSC_RADIX;
		if (ordered) {
			const int d0 = (int)prefix;
			for (int q = 0; q < FTSC_RADIX / FTSC_BLOCK; q++) {
				int b = tid * (FTSC_RADIX / FTSC_BLOCK) + q;
				if (b < d0 && sm.sorted[b] > 1) {
					int j = atomicAdd(&sm.ntrack, 1);
					if (j < FTSC_TRACK - 1)
						sm.track[j] = b;
				}
			}
			__syncthreads();
			ordered = sm.ntrack <= FTSC_TRACK - 1;
		}
		PROF(10);
		if (ordered) {
			/* Tracked usages: track[0..nt) (several chosen slots each) and ustar (index nt).
			 * Each slot's rank within its tracked usage, in slot order, from one scan of
			 * the threads' packed counts. */
			const int d0 = (int)prefix, nt = sm.ntrack;
			int tb[FTSC_TRACK];
#pragma unroll
			for (int q = 0; q < FTSC_TRACK; q++)
				tb[q] = q < nt ? sm.track[q] : q == nt ? d0 : -2;
			unsigned long long pa = 0, pb = 0;
			if (nt == 0) {
				/* only ustar's slots can tie (field 0): one 32-bit scan, none when one slot
				 * holds ustar (sm.sorted[d0] == 1: a pass ran, and its histogram counted
				 * every slot at usage ustar; with no pass, range 0, the bins are all 0), as
				 * in every start state, whose usages are distinct; that slot's rank is 0 */
				if (sm.sorted[d0] != 1) {
					int cnt = 0;
					for (int s = s0; s < s1; s++)
						cnt += uc[s] == ustar;
					pa = (unsigned long long)block_scan(cnt, &tot, sm.warp_sums);
				}
			} else {
				for (int s = s0; s < s1; s++) {
					long long u = uc[s];
					if (u < step && u <= ustar) {
						int j = track_field(tb, (int)(u - umin));
						if (j >= 0)
							field_add(&pa, &pb, j);
					}
				}
				if (nt < 4) { /* fields 0..nt <= 3, all in pa: one 64-bit scan */
					block_scan_n<unsigned long long, 1>(&pa, NULL, sm.wscan);
				} else {
					unsigned long long pp[2] = {pa, pb};
					block_scan_n<unsigned long long, 2>(pp, NULL, sm.wscan);
					pa = pp[0];
					pb = pp[1];
				}
			}
			PROF(16);
			for (int s = s0; s < s1; s++) {
				long long u = uc[s];
				if (u < step && u <= ustar) {
					int b = (int)(u - umin), j = track_field(tb, b);
					if (j < 0) {
						ordi[first[b]] = s; /* the only chosen slot of its usage */
					} else {
						int t = field_get(pa, pb, j);
						field_add(&pa, &pb, j);
						if (j < nt)
							ordi[first[b] + t] = s;
						else if (t < remaining)
							ordi[below + t] = s;
					}
				}
			}
			PROF(17);
			__syncthreads();
			PROF_COUNT(20, 1);
		}
		PROF(11);
		/* General path: take every eligible slot below ustar and the first `remaining` at
		 * ustar, in slot order, then order the keys. */
		unsigned long long *ord = (unsigned long long *)sm.sorted; /* F <= 1024 fits */
		if (!ordered) {
			int nt = 0;
			for (int s = s0; s < s1; s++)
				nt += uc[s] == ustar;
			int tr = block_scan(nt, &tot, sm.warp_sums);
			for (int s = s0; s < s1; s++) {
				long long u = uc[s];
				bool take = u < ustar;
				if (u == ustar)
					take = tr++ < remaining;
				if (take)
					sm.keys[atomicAdd(&sm.count, 1)] = ((unsigned long long)u << 24) | (unsigned)s;
			}
			__syncthreads();
			if (!block_order(sm.keys, F, ord))
				ord = sm.keys;
		}
		PROF(12);
		/* Assign: the r-th fetched miss (ascending id) takes the r-th coldest slot. */
#pragma unroll
		for (int j = 0; j < FTSC_PER_MAX; j++) {
			int e = e0 + j;
			if (j >= per || e >= E)
				continue;
			int r = sm.rank[e];
			if (r < 0) {
				sm.rank[e] = (sm.flag[e] & F_HIT) ? sf[j] : -1;
				continue;
			}
			int s = ordered ? ordi[r] : (int)(ord[r] & 0xffffff);
			int32_t old = ic[s];
			if (old >= 0)
				d.slot_for_id[old] = -1;
			d.id_of_slot[s] = (int32_t)(base + e);
			d.slot_for_id[base + e] = s;
			d.usage[s] = step;
			d.src_indices[r] = e;
			d.evict_slots[r] = s;
			sm.rank[e] = s;
		}
	} else {
		cp_async_wait_all(); /* nothing in flight at the exit */
#pragma unroll
		for (int j = 0; j < FTSC_PER_MAX; j++) {
			int e = e0 + j;
			if (j < per && e < E)
				sm.rank[e] = (sm.flag[e] & F_HIT) ? sf[j] : -1;
		}
	}
	__syncthreads();
	PROF(14);
	/* Phase 5: outputs. sm.rank[e] is now the final slot of every asked expert (-1: CPU). */
	for (int e = tid; e < E; e += FTSC_BLOCK)
		if (sm.flag[e])
			d.last_seen[base + e] = step;
	for (int i = tid; i < n; i += FTSC_BLOCK) {
		int k = i / FTSC_BLOCK, e = k < FTSC_IDS_IN_REGS ? idr[k] : ids[i];
		ids[i] = e >= 0 ? sm.rank[e] : -1;
	}
	if (tid == 0) {
		d.counts[0] = F;
		d.counts[1] = M;
		d.counts[2] = 0;
		*d.step = step;
	}
	PROF(15);
	PROF_FLUSH;
}

/* Grid-stride fill of an int32 array. */
__global__ void fill_i32(int32_t *p, int32_t v, long long n)
{
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
	     i += (long long)gridDim.x * blockDim.x)
		p[i] = v;
}

extern "C" cudaError_t ftsc_dev_create(struct ftsc_dev *d, int layers, int experts, int slots)
{
	*d = (struct ftsc_dev){0};
	if (layers <= 0 || experts <= 0 || experts > FTSC_DEV_MAX_EXPERTS || slots <= 0 ||
	    slots >= (1 << 24))
		return cudaErrorInvalidValue;
	d->layers = layers;
	d->experts = experts;
	d->slots = slots;
	size_t ids = (size_t)layers * experts;
	cudaError_t e;
	if ((e = cudaMalloc((void **)&d->slot_for_id, ids * 4)) ||
	    (e = cudaMalloc((void **)&d->last_seen, ids * 8)) ||
	    (e = cudaMalloc((void **)&d->id_of_slot, (size_t)slots * 4)) ||
	    (e = cudaMalloc((void **)&d->usage, (size_t)slots * 8)) || (e = cudaMalloc((void **)&d->step, 8)) ||
	    (e = cudaMalloc((void **)&d->src_indices, (size_t)experts * 4)) ||
	    (e = cudaMalloc((void **)&d->evict_slots, (size_t)experts * 4)) ||
	    (e = cudaMalloc((void **)&d->counts, 3 * 4)))
		return e;
	/* the shared copies of ensure_kernel (usage and id_of_slot, FTSC_DYN_BYTES): up to
	 * FTSC_SMEM_SLOTS slots, fewer where the device allows less (sm_80: 163 KB per block) */
	int dev, optin, major;
	struct cudaFuncAttributes fa;
	if ((e = cudaGetDevice(&dev)) ||
	    (e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev)) ||
	    (e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev)) ||
	    (e = cudaFuncGetAttributes(&fa, ensure_kernel<true>)))
		return e;
	long room = (long)optin - (long)fa.sharedSizeBytes, fit = room > 16 ? (room - 16) / 12 : 0;
	d->smem_slots = fit < FTSC_SMEM_SLOTS ? (int)fit : FTSC_SMEM_SLOTS;
	d->pdl = major >= 9;
	if ((e = cudaFuncSetAttribute(ensure_kernel<true>, cudaFuncAttributeMaxDynamicSharedMemorySize,
				      (int)FTSC_DYN_BYTES(d->smem_slots))))
		return e;
	fill_i32<<<64, 256>>>(d->slot_for_id, -1, (long long)ids);
	fill_i32<<<64, 256>>>(d->id_of_slot, -1, slots);
	if ((e = cudaGetLastError()) || (e = cudaMemset(d->last_seen, 0, ids * 8)) ||
	    (e = cudaMemset(d->usage, 0, (size_t)slots * 8)) || (e = cudaMemset(d->step, 0, 8)) ||
	    (e = cudaMemset(d->counts, 0, 12)) || (e = cudaMemset(d->src_indices, 0xff, (size_t)experts * 4)) ||
	    (e = cudaMemset(d->evict_slots, 0xff, (size_t)experts * 4)))
		return e;
	return cudaDeviceSynchronize();
}

extern "C" void ftsc_dev_destroy(struct ftsc_dev *d)
{
	if (!d)
		return;
	cudaFree(d->slot_for_id);
	cudaFree(d->last_seen);
	cudaFree(d->id_of_slot);
	cudaFree(d->usage);
	cudaFree(d->step);
	cudaFree(d->src_indices);
	cudaFree(d->evict_slots);
	cudaFree(d->counts);
	*d = (struct ftsc_dev){0};
}

extern "C" cudaError_t ftsc_dev_upload(struct ftsc_dev *d, const int32_t *slot_for_id,
				       const int32_t *id_of_slot, const int64_t *usage,
				       const int64_t *last_seen, int64_t step, cudaStream_t s)
{
	size_t ids = (size_t)d->layers * d->experts, C = (size_t)d->slots;
	cudaError_t e;
	if ((e = cudaMemcpyAsync(d->slot_for_id, slot_for_id, ids * 4, cudaMemcpyHostToDevice, s)) ||
	    (e = cudaMemcpyAsync(d->last_seen, last_seen, ids * 8, cudaMemcpyHostToDevice, s)) ||
	    (e = cudaMemcpyAsync(d->id_of_slot, id_of_slot, C * 4, cudaMemcpyHostToDevice, s)) ||
	    (e = cudaMemcpyAsync(d->usage, usage, C * 8, cudaMemcpyHostToDevice, s)) ||
	    (e = cudaMemcpyAsync(d->step, &step, 8, cudaMemcpyHostToDevice, s)))
		return e;
	return cudaStreamSynchronize(s); /* `step` lives on this stack */
}

extern "C" cudaError_t ftsc_dev_download(const struct ftsc_dev *d, int32_t *slot_for_id,
					 int32_t *id_of_slot, int64_t *usage, int64_t *last_seen,
					 int64_t *step, cudaStream_t s)
{
	size_t ids = (size_t)d->layers * d->experts, C = (size_t)d->slots;
	cudaError_t e = cudaSuccess;
	if ((slot_for_id && (e = cudaMemcpyAsync(slot_for_id, d->slot_for_id, ids * 4, cudaMemcpyDeviceToHost, s))) ||
	    (last_seen && (e = cudaMemcpyAsync(last_seen, d->last_seen, ids * 8, cudaMemcpyDeviceToHost, s))) ||
	    (id_of_slot && (e = cudaMemcpyAsync(id_of_slot, d->id_of_slot, C * 4, cudaMemcpyDeviceToHost, s))) ||
	    (usage && (e = cudaMemcpyAsync(usage, d->usage, C * 8, cudaMemcpyDeviceToHost, s))) ||
	    (step && (e = cudaMemcpyAsync(step, d->step, 8, cudaMemcpyDeviceToHost, s))))
		return e;
	return cudaStreamSynchronize(s);
}

extern "C" cudaError_t ftsc_dev_copy(struct ftsc_dev *dst, const struct ftsc_dev *src, cudaStream_t s)
{
	if (dst->layers != src->layers || dst->experts != src->experts || dst->slots != src->slots)
		return cudaErrorInvalidValue;
	size_t ids = (size_t)src->layers * src->experts, C = (size_t)src->slots;
	cudaError_t e;
	if ((e = cudaMemcpyAsync(dst->slot_for_id, src->slot_for_id, ids * 4, cudaMemcpyDeviceToDevice, s)) ||
	    (e = cudaMemcpyAsync(dst->last_seen, src->last_seen, ids * 8, cudaMemcpyDeviceToDevice, s)) ||
	    (e = cudaMemcpyAsync(dst->id_of_slot, src->id_of_slot, C * 4, cudaMemcpyDeviceToDevice, s)) ||
	    (e = cudaMemcpyAsync(dst->usage, src->usage, C * 8, cudaMemcpyDeviceToDevice, s)))
		return e;
	return cudaMemcpyAsync(dst->step, src->step, 8, cudaMemcpyDeviceToDevice, s);
}

/* ensure_kernel's launch shape, the one place it is set (bench/ensure_prof.cu, which includes this
 * file, launches its empty kernel of the same shape with it): one block of FTSC_BLOCK threads,
 * dyn bytes of dynamic shared memory, stream s, and where pdl a programmatic dependent launch
 * (its attribute stored in *at, which must outlive the launch call). */
static inline cudaLaunchConfig_t ftsc_launch_config(size_t dyn, int pdl, cudaStream_t s, cudaLaunchAttribute *at)
{
	cudaLaunchConfig_t cfg = {};
	cfg.gridDim = dim3(1);
	cfg.blockDim = dim3(FTSC_BLOCK);
	cfg.dynamicSmemBytes = dyn;
	cfg.stream = s;
	if (pdl) {
		at->id = cudaLaunchAttributeProgrammaticStreamSerialization;
		at->val.programmaticStreamSerializationAllowed = 1;
		cfg.attrs = at;
		cfg.numAttrs = 1;
	}
	return cfg;
}

/* The dynamic shared memory of d's calls: the shared copies when its slots fit (ensure_kernel<true>);
 * 0 exactly when they do not (a device cache has at least one slot). */
static inline size_t ftsc_launch_dyn(const struct ftsc_dev *d)
{
	return d->slots <= d->smem_slots ? FTSC_DYN_BYTES(d->slots) : 0;
}

static cudaError_t launch(struct ftsc_dev *d, int layer, int32_t *ids, int n, int hybrid, int max_fetch,
			  int q16, int order, cudaStream_t s)
{
	if (!d || !d->counts || n < 0 || (n > 0 && !ids))
		return cudaErrorInvalidValue;
	cudaLaunchAttribute at;
	const size_t dyn = ftsc_launch_dyn(d);
	const cudaLaunchConfig_t cfg = ftsc_launch_config(dyn, d->pdl, s, &at);
	cudaError_t e = dyn ? cudaLaunchKernelEx(&cfg, ensure_kernel<true>, *d, layer, ids, n, hybrid, max_fetch,
						 q16, order)
			    : cudaLaunchKernelEx(&cfg, ensure_kernel<false>, *d, layer, ids, n, hybrid, max_fetch,
						 q16, order);
	return e ? e : cudaGetLastError();
}

extern "C" cudaError_t ftsc_dev_ensure(struct ftsc_dev *d, int layer, int32_t *ids, int n, cudaStream_t s)
{
	return launch(d, layer, ids, n, 0, 0, 0, 0, s);
}

extern "C" cudaError_t ftsc_dev_ensure_hybrid(struct ftsc_dev *d, int layer, int32_t *ids, int n,
					      int max_fetch, int q16, int order, cudaStream_t s)
{
	return launch(d, layer, ids, n, 1, max_fetch, q16, order, s);
}
