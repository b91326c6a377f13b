/* replay_step (GPU): the small kernels of an engine's hybrid MoE decode step that are not the slot
 * cache, the gather or the expert GEMV (docs/REPLAY.md §1): split the routes between the GPU and
 * the CPU after ensure_experts_hybrid, ring the CPU executor's doorbell, wait for its answer, add
 * its output. Nothing here synchronises with the host, so a step stays one stream of work.
 * Launchers return the launch's cudaError_t (cudaErrorInvalidValue for bad arguments). */
#ifndef FT_KERNELS_REPLAY_STEP_H
#define FT_KERNELS_REPLAY_STEP_H
#include <cuda_runtime_api.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FTRS_WAIT_TIMEOUT_NS 10000000000ull /* a doorbell unanswered this long fails the wait */

/* Counters a run accumulates on the device (ftrs_count, ftrs_split). */
enum { FTRS_ACC_FETCHED = 0, FTRS_ACC_MISSES = 1, FTRS_ACC_ERROR = 2, FTRS_ACC_CPU_ROUTES = 3,
       FTRS_ACC_TIMEOUTS = 4, FTRS_ACC_N = 5 };

/* After ensure (slots[i]: slot or -1) of n routes with raw expert ids raw[i] and weights w[i]:
 * cpu_ids[i] = slots[i] < 0 ? raw[i] : -1; gpu_w[i] = slots[i] >= 0 ? w[i] : 0; slots[i] =
 * max(slots[i], 0) (the engine's clamp: a CPU route reads slot 0 with weight 0 on the GPU);
 * acc[FTRS_ACC_CPU_ROUTES] += routes sent to the CPU. One block; n <= 1024. */
cudaError_t ftrs_split(const int32_t *raw, int32_t *slots, const float *w, int32_t *cpu_ids, float *gpu_w, int n,
		       long long *acc, cudaStream_t s);
/* acc[FETCHED] += counts[0], acc[MISSES] += counts[1], acc[ERROR] |= counts[2] != 0 (the slot
 * cache's device counts: num_indices, num_missing_full, error). One thread. */
cudaError_t ftrs_count(const int32_t *counts, long long *acc, cudaStream_t s);
/* The doorbell: done[slot] = 0, then ready[slot] = 1 (mapped pinned host memory; system fence
 * first, so everything the stream wrote before is visible to the host). One thread. */
cudaError_t ftrs_ring(volatile long long *ready, volatile long long *done, int slot, cudaStream_t s);
/* Wait until done[slot] >= 1 (the host's answer); after FTRS_WAIT_TIMEOUT_NS give up and add 1
 * to acc[FTRS_ACC_TIMEOUTS]. One thread. */
cudaError_t ftrs_wait(volatile long long *done, int slot, long long *acc, cudaStream_t s);
/* The engine's hybrid bookkeeping (replay --cpu-kernel, docs/REPLAY.md §2): hold the stream for
 * us[m] microseconds, m = counts[0] (the experts this layer-step fetches), past the table's n
 * entries with the slope of its last two. One thread; us on the device; n >= 1. */
cudaError_t ftrs_delay(const int32_t *counts, const float *us, int n, cudaStream_t s);
/* y[i] += x[i], i < n. */
cudaError_t ftrs_add(float *y, const float *x, int n, cudaStream_t s);
/* Load every kernel of this file now (lazy loading would load one at its first launch, which may
 * wait for a spinning ftrs_wait); synchronous. */
cudaError_t ftrs_preload(void);

#ifdef __cplusplus
}
#endif
#endif
