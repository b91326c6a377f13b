/* hbm_read: see hbm_read.h. */
#include "hbm_read.h"

#include <stdint.h>

#define FTHBM_THREADS 512     /* threads of a block */
#define FTHBM_BLOCKS_PER_SM 4 /* blocks per SM: 2048 threads, the SM's limit */
#define FTHBM_UNROLL 4        /* 16-byte loads in flight per thread */

/* Grid: FTHBM_BLOCKS_PER_SM x SMs blocks of FTHBM_THREADS, grid-stride over the 16-byte words
 * in runs of FTHBM_UNROLL; each block XORs what it read into sink[block]. */
__global__ void __launch_bounds__(FTHBM_THREADS) hbm_read_kernel(const uint4 *__restrict__ p, size_t n,
								 unsigned *__restrict__ sink)
{
	const size_t stride = (size_t)gridDim.x * blockDim.x;
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	unsigned acc = 0;
	for (; i + (FTHBM_UNROLL - 1) * stride < n; i += FTHBM_UNROLL * stride) {
		uint4 v[FTHBM_UNROLL];
#pragma unroll
		for (int u = 0; u < FTHBM_UNROLL; u++)
			v[u] = __ldcs(p + i + u * stride);
#pragma unroll
		for (int u = 0; u < FTHBM_UNROLL; u++)
			acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
	}
	for (; i < n; i += stride) {
		const uint4 v = __ldcs(p + i);
		acc ^= v.x ^ v.y ^ v.z ^ v.w;
	}
	for (int o = 16; o; o >>= 1)
		acc ^= __shfl_xor_sync(0xffffffffu, acc, o);
	__shared__ unsigned w[FTHBM_THREADS / 32];
	if ((threadIdx.x & 31) == 0)
		w[threadIdx.x >> 5] = acc;
	__syncthreads();
	if (threadIdx.x == 0) {
		for (int k = 1; k < FTHBM_THREADS / 32; k++)
			acc ^= w[k];
		sink[blockIdx.x] = acc;
	}
}

extern "C" int fthbm_blocks(int sms)
{
	return FTHBM_BLOCKS_PER_SM * (sms > 0 ? sms : 1);
}

extern "C" cudaError_t fthbm_read(const void *p, size_t bytes, unsigned *sink, int sms, cudaStream_t s)
{
	if (!p || !sink || bytes % 16 || (uintptr_t)p % 16)
		return cudaErrorInvalidValue;
	hbm_read_kernel<<<fthbm_blocks(sms), FTHBM_THREADS, 0, s>>>((const uint4 *)p, bytes / 16, sink);
	return cudaGetLastError();
}

/* work() on s between two events: its milliseconds in *ms. */
template <class Fn> static cudaError_t timed(cudaEvent_t a, cudaEvent_t b, cudaStream_t s, float *ms, Fn work)
{
	cudaError_t e = cudaEventRecord(a, s);
	if (!e)
		e = work();
	if (!e)
		e = cudaEventRecord(b, s);
	if (!e)
		e = cudaEventSynchronize(b);
	if (!e)
		e = cudaEventElapsedTime(ms, a, b);
	return e;
}

extern "C" cudaError_t fthbm_rate(size_t bytes, int trials, int sms, cudaStream_t s, double *gbs, double *d2d_gbs)
{
	void *buf = NULL, *dst = NULL;
	unsigned *sink = NULL;
	cudaEvent_t a = NULL, b = NULL;
	cudaError_t e = cudaMalloc(&buf, bytes);
	if (!e && d2d_gbs)
		e = cudaMalloc(&dst, bytes / 2);
	if (!e)
		e = cudaMalloc((void **)&sink, (size_t)fthbm_blocks(sms) * sizeof *sink);
	if (!e)
		e = cudaMemset(buf, 0x5a, bytes);
	if (!e)
		e = cudaEventCreate(&a);
	if (!e)
		e = cudaEventCreate(&b);
	if (!e)
		e = fthbm_read(buf, bytes, sink, sms, s); /* warm-up */
	for (int i = 0; i < trials && !e; i++) {
		float ms = 0;
		e = timed(a, b, s, &ms, [&] { return fthbm_read(buf, bytes, sink, sms, s); });
		gbs[i] = (double)bytes / (ms * 1e6);
		if (!e && d2d_gbs) {
			e = timed(a, b, s, &ms,
				  [&] { return cudaMemcpyAsync(dst, buf, bytes / 2, cudaMemcpyDeviceToDevice, s); });
			d2d_gbs[i] = (double)(bytes / 2) / (ms * 1e6);
		}
	}
	if (a)
		cudaEventDestroy(a);
	if (b)
		cudaEventDestroy(b);
	cudaFree(buf);
	cudaFree(dst);
	cudaFree(sink);
	return e;
}

extern "C" cudaError_t fthbm_time_graph(cudaGraphExec_t ge, int trials, int reps, cudaStream_t s, double *us)
{
	cudaEvent_t a = NULL, b = NULL;
	cudaError_t e = cudaGraphLaunch(ge, s); /* warm-up */
	if (!e)
		e = cudaEventCreate(&a);
	if (!e)
		e = cudaEventCreate(&b);
	for (int i = 0; i < trials && !e; i++) {
		float ms = 0;
		e = timed(a, b, s, &ms, [&] {
			cudaError_t le = cudaSuccess;
			for (int r = 0; r < reps && !le; r++)
				le = cudaGraphLaunch(ge, s);
			return le;
		});
		us[i] = ms * 1e3 / reps;
	}
	if (a)
		cudaEventDestroy(a);
	if (b)
		cudaEventDestroy(b);
	return e;
}
