/* copy_variants (GPU, benchmark only): variants of copy_missing's fused gather that the product
 * does not run, as copies bench/gather_variants.c times and checks through ftgather_set_fused:
 * the .L2::256B prefetch-size hint, 4 or 16 16-byte loads in flight per thread (the product: 8),
 * and sm_90's cp.async.bulk (TMA engine) host -> shared -> pool in 3 stages
 * (cudaErrorInvalidDeviceFunction below sm_90). Built by `make bench-tools` (CUDA=1). */
#ifndef FT_BENCH_COPY_VARIANTS_H
#define FT_BENCH_COPY_VARIANTS_H
#include "bench/gather.h"

#ifdef __cplusplus
extern "C" {
#endif

enum ftcv_variant { FTCV_L2_256, FTCV_UNROLL4, FTCV_UNROLL16, FTCV_BULK, FTCV_COUNT };

/* The copy of a variant for ftgather_set_fused, or NULL for an unknown variant. */
ftgather_fused_fn *ftcv_fn(int variant);
/* Its name ("l2_256", "unroll4", "unroll16", "bulk"; "?" when unknown). */
const char *ftcv_name(int variant);

#ifdef __cplusplus
}
#endif
#endif
