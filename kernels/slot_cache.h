/* slot_cache (GPU): the slot-cache state in device memory and ensure_experts / the hybrid
 * variant as one single-block kernel each (reference §3). Semantics are those of the C
 * reference src/moe/slot_cache.h, bit for bit (the GPU tests check it): same state arrays,
 * same plan, same errors (reported in counts[2], never by a host sync).
 *
 * Nothing here synchronises with the host or allocates after ftsc_dev_create, so a decode
 * step (ensure + copy_missing + experts) can be captured in a CUDA graph; ids, layer and n are
 * launch parameters, the plan stays on the device for kernels/copy_missing.h.
 * Launchers return the launch's cudaError_t (cudaErrorInvalidValue for bad arguments). */
#ifndef FT_KERNELS_SLOT_CACHE_H
#define FT_KERNELS_SLOT_CACHE_H
#include <cuda_runtime_api.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FTSC_DEV_MAX_EXPERTS 2048 /* = FTSC_MAX_EXPERTS of the C reference */

/* Device pointers, owned by the struct (ftsc_dev_create / ftsc_dev_destroy). */
struct ftsc_dev {
	int layers, experts, slots;
	int32_t *slot_for_id; /* [L*E] */
	int32_t *id_of_slot;  /* [C] */
	int64_t *usage;       /* [C] */
	int64_t *last_seen;   /* [L*E] */
	int64_t *step;        /* [1] */
	int32_t *src_indices; /* [E] plan: expert rows within the layer */
	int32_t *evict_slots; /* [E] plan: destination slots */
	int32_t *counts;      /* [3]: num_indices, num_missing_full, error (0, -ENOSPC, -EINVAL) */
	int smem_slots;       /* slots whose usage and id_of_slot the kernel copies to shared memory (the
			       * device limit; 0 reads them from global memory, as C > smem_slots does) */
	int pdl;              /* 1 (set by ftsc_dev_create on sm_90 and later): each call is a programmatic
			       * dependent launch, so its block starts while the stream's previous kernel
			       * runs and waits for that kernel's completion before its first global access
			       * (the same results; a back-to-back call saves the launch gap); 0: a plain
			       * launch */
};

/* Allocate an empty cache (slots -1, usage 0, step 0); synchronous. Zeroes *d first, so
 * ftsc_dev_destroy may follow a failed create. */
cudaError_t ftsc_dev_create(struct ftsc_dev *d, int layers, int experts, int slots);
void ftsc_dev_destroy(struct ftsc_dev *d); /* accepts NULL and a zeroed struct */

/* Copy a whole state (arrays of the C reference's layout) to or from the device on stream s;
 * both wait for the stream before returning (test and set-up helpers, not for the hot path).
 * download skips NULL outputs. */
cudaError_t ftsc_dev_upload(struct ftsc_dev *d, const int32_t *slot_for_id, const int32_t *id_of_slot,
			    const int64_t *usage, const int64_t *last_seen, int64_t step, cudaStream_t s);
cudaError_t ftsc_dev_download(const struct ftsc_dev *d, int32_t *slot_for_id, int32_t *id_of_slot,
			      int64_t *usage, int64_t *last_seen, int64_t *step, cudaStream_t s);
/* Device-to-device copy of the state of src into dst (same geometry) on stream s, e.g. to reset
 * a benchmark between repeats; asynchronous and capturable. */
cudaError_t ftsc_dev_copy(struct ftsc_dev *dst, const struct ftsc_dev *src, cudaStream_t s);

/* ensure_experts(layer, ids[n]): ids is a device array rewritten in place to slots. */
cudaError_t ftsc_dev_ensure(struct ftsc_dev *d, int layer, int32_t *ids, int n, cudaStream_t s);

/* The hybrid variant: max_fetch >= 0 a fixed cap, < 0 the Q16 split with q16 (ftsc_q16);
 * order 0 = recency, 1 = lowest id (enum ftsc_order). */
cudaError_t ftsc_dev_ensure_hybrid(struct ftsc_dev *d, int layer, int32_t *ids, int n, int max_fetch,
				   int q16, int order, cudaStream_t s);

#ifdef __cplusplus
}
#endif
#endif
