/* hbm_read (GPU, benchmark only): a plain read of device memory, the denominator of the GPU
 * expert GEMV's "fraction of HBM" (bench/expert_gemv.c, bench/gemv_loads.cu), and the timing
 * both of those benches share. Built by `make bench-tools` (CUDA=1). */
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
/* The read rate: fthbm_read over a fresh buffer of bytes (a multiple of 32), once untimed, then
 * trials timed reads, gbs[i] the GB/s of read i. d2d_gbs (or NULL): after each read a
 * cudaMemcpyAsync of bytes / 2 device to device, d2d_gbs[i] its bytes copied per second (each
 * read and written). The buffers are freed before it returns. */
cudaError_t fthbm_rate(size_t bytes, int trials, int sms, cudaStream_t s, double *gbs, double *d2d_gbs);
/* One graph's time: one untimed launch, then trials x (reps launches between two events);
 * us[i] the microseconds of one launch in trial i. */
cudaError_t fthbm_time_graph(cudaGraphExec_t ge, int trials, int reps, cudaStream_t s, double *us);

#ifdef __cplusplus
}
#endif
#endif
