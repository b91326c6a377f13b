/* hbm_read (GPU, benchmark only): a plain read of device memory, the denominator of the GPU
 * expert GEMV's "fraction of HBM" (bench/expert_gemv.c). Built by `make bench-tools` (CUDA=1). */
#ifndef FT_BENCH_HBM_READ_H
#define FT_BENCH_HBM_READ_H
#include <cuda_runtime_api.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Read bytes (a multiple of 16, 16-byte aligned) of p once with 16-byte loads, 4 in flight per
 * thread, FTHBM_BLOCKS_PER_SM blocks per SM over the grid; one word per block goes to sink
 * [the grid's blocks] so that no load is dead. sms: the device's SM count. */
cudaError_t fthbm_read(const void *p, size_t bytes, unsigned *sink, int sms, cudaStream_t s);
/* Blocks fthbm_read launches for sms SMs (the size sink must have). */
int fthbm_blocks(int sms);

#ifdef __cplusplus
}
#endif
#endif
