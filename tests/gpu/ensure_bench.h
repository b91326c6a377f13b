/* ensure_experts timing shared by tests/gpu/test_slot_cache_gpu.c (C) and bench/ensure_prof.cu
 * (C++): cache-copy's start state and the methods that time it, so the two measure the same thing.
 *
 * Start state (src/bench/cache_copy.c, init_state): slot s held by layer-1 expert E + s % E with
 * usage s + 1, step C; the call asks for ids i % min(n, E) on layer 0, so every one misses.
 * Timed as cache-copy's `ensure_us`: one round = ENSB_K calls back to back, each on its own fresh
 * copy of the state and of the ids (the copies untimed, before the first event).
 * Steady state: the all-miss cycle (call i on layer i % L asks for experts (i / L * n + j) % E,
 * so each misses min(n, E)) or random ids; two passes of `iters` calls back to back, the second
 * timed; and the same captured in a CUDA graph of L layers, replayed 20 times.
 * Each call is launched as the library launches it (ftsc_dev_ensure: a programmatic dependent
 * launch where d->pdl, see slot_cache.h). */
#ifndef FT_TESTS_GPU_ENSURE_BENCH_H
#define FT_TESTS_GPU_ENSURE_BENCH_H
#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>

#include "slot_cache.h"

#define ENSB_K 8        /* start state: calls per round, each on its own fresh copy */
#define ENSB_REPLAYS 20 /* graph: timed replays */

/* The start state into arrays of the C reference's layout; slot_for_id must hold -1 (only
 * layer 1's entries are set). */
static inline void ensb_start_state(int E, int C, int32_t *slot_for_id, int32_t *id_of_slot, int64_t *usage,
				    int64_t *step)
{
	for (int s = 0; s < C; s++) {
		int id = E + s % E;
		id_of_slot[s] = id;
		slot_for_id[id] = s;
		usage[s] = s + 1;
	}
	*step = C;
}

/* The start state's ids: i % min(n, E). */
static inline void ensb_start_ids(int E, int n, int32_t *ids)
{
	const int active = n < E ? n : E;
	for (int i = 0; i < n; i++)
		ids[i] = i % active;
}

/* Steady-state ids of `iters` calls (n each, row i for call i on layer i % L): the all-miss
 * cycle, or uniform random ids from rnd. */
static inline void ensb_cycle_ids(int L, int E, int n, int iters, int all_miss, uint32_t (*rnd)(void), int32_t *h)
{
	for (int i = 0; i < iters; i++)
		for (int j = 0; j < n; j++)
			h[(size_t)i * n + j] = all_miss ? (int)((i / L * n + j) % E) : (int)(rnd() % (uint32_t)E);
}

/* A launch in place of ftsc_dev_ensure(d, 0, ids, n, s) (ensure_prof's empty kernel), and a hook
 * run on the stream after the untimed copies, before the first event (NULL: none). */
typedef cudaError_t (*ensb_launch_fn)(void *ctx, struct ftsc_dev *d, int32_t *ids, int n, cudaStream_t s);
typedef cudaError_t (*ensb_hook_fn)(void *ctx, cudaStream_t s);

/* One round of the start-state method on bb[0..ENSB_K) (each of init's geometry) and
 * d_ids[ENSB_K][n]: copies of init and of d_ids0 (untimed), then ENSB_K calls back to back
 * between e0 and e1. *us: per call. */
static inline cudaError_t ensb_start_round(struct ftsc_dev *bb, const struct ftsc_dev *init, int32_t *d_ids,
					   const int32_t *d_ids0, int n, ensb_launch_fn launch, ensb_hook_fn hook,
					   void *ctx, cudaStream_t s, cudaEvent_t e0, cudaEvent_t e1, double *us)
{
	cudaError_t e;
	float ms = 0;
	for (int k = 0; k < ENSB_K; k++)
		if ((e = ftsc_dev_copy(&bb[k], init, s)) ||
		    (e = cudaMemcpyAsync(d_ids + (size_t)k * n, d_ids0, 4 * (size_t)n, cudaMemcpyDeviceToDevice, s)))
			return e;
	if ((hook && (e = hook(ctx, s))) || (e = cudaEventRecord(e0, s)))
		return e;
	for (int k = 0; k < ENSB_K; k++)
		if ((e = launch ? launch(ctx, &bb[k], d_ids + (size_t)k * n, n, s)
				: ftsc_dev_ensure(&bb[k], 0, d_ids + (size_t)k * n, n, s)))
			return e;
	if ((e = cudaEventRecord(e1, s)) || (e = cudaEventSynchronize(e1)) || (e = cudaEventElapsedTime(&ms, e0, e1)))
		return e;
	*us = ms * 1e3 / ENSB_K;
	return cudaSuccess;
}

/* The steady method: d_ids0[iters][n] (ensb_cycle_ids) copied to d_ids, then iters calls on
 * layer i % L back to back; twice, the second pass timed. before_pass (NULL: none) runs before
 * each pass, after the copy. *us: per call. */
static inline cudaError_t ensb_steady(struct ftsc_dev *d, int L, int iters, int32_t *d_ids, const int32_t *d_ids0,
				      int n, void (*before_pass)(void), cudaStream_t s, cudaEvent_t e0,
				      cudaEvent_t e1, double *us)
{
	cudaError_t e;
	float ms = 0;
	for (int w = 0; w < 2; w++) {
		if ((e = cudaMemcpyAsync(d_ids, d_ids0, 4 * (size_t)n * iters, cudaMemcpyDeviceToDevice, s)))
			return e;
		if (before_pass) {
			if ((e = cudaStreamSynchronize(s)))
				return e;
			before_pass();
		}
		if ((e = cudaEventRecord(e0, s)))
			return e;
		for (int i = 0; i < iters; i++)
			if ((e = ftsc_dev_ensure(d, i % L, d_ids + (size_t)i * n, n, s)))
				return e;
		if ((e = cudaEventRecord(e1, s)) || (e = cudaEventSynchronize(e1)))
			return e;
	}
	if ((e = cudaEventElapsedTime(&ms, e0, e1)))
		return e;
	*us = ms * 1e3 / iters;
	return cudaSuccess;
}

/* The first L calls of the steady method captured in a CUDA graph (the fresh ids copied in by
 * the graph), launched once untimed and ENSB_REPLAYS times timed. *us: per layer. */
static inline cudaError_t ensb_graph(struct ftsc_dev *d, int L, int32_t *d_ids, const int32_t *d_ids0, int n,
				     cudaStream_t s, cudaEvent_t e0, cudaEvent_t e1, double *us)
{
	cudaGraph_t g = NULL;
	cudaGraphExec_t ge = NULL;
	cudaError_t e, e2;
	float ms = 0;
	if ((e = cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal)))
		return e;
	e = cudaMemcpyAsync(d_ids, d_ids0, 4 * (size_t)n * L, cudaMemcpyDeviceToDevice, s);
	for (int l = 0; l < L && !e; l++)
		e = ftsc_dev_ensure(d, l, d_ids + (size_t)l * n, n, s);
	e2 = cudaStreamEndCapture(s, &g);
	if (!e)
		e = e2;
	if (!e && !(e = cudaGraphInstantiate(&ge, g, 0)) && !(e = cudaGraphLaunch(ge, s)) &&
	    !(e = cudaEventRecord(e0, s))) {
		for (int i = 0; i < ENSB_REPLAYS && !e; i++)
			e = cudaGraphLaunch(ge, s);
		if (!e && !(e = cudaEventRecord(e1, s)) && !(e = cudaEventSynchronize(e1)) &&
		    !(e = cudaEventElapsedTime(&ms, e0, e1)))
			*us = ms * 1e3 / ((double)ENSB_REPLAYS * L);
	}
	if (ge)
		cudaGraphExecDestroy(ge);
	if (g)
		cudaGraphDestroy(g);
	return e;
}

/* The median of v[0..n) (sorts v). */
static inline double ensb_median(double *v, int n)
{
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && v[j] < v[j - 1]; j--) {
			double x = v[j];
			v[j] = v[j - 1];
			v[j - 1] = x;
		}
	return n ? v[n / 2] : 0;
}

#endif
