#include "bench/pcie.h"

#include <errno.h>
#include <string.h>

#ifdef FT_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "hw/cudaerr.h"

int ftpcie_linear_on(enum ftpcie_dir dir, void *dst, const void *src, size_t bytes, int warmup, int iters,
		     double *secs, void *stream)
{
	if (!dst || !src || !bytes || iters < 0 || warmup < 0 || (iters && !secs))
		return -EINVAL;
	cudaStream_t s = (cudaStream_t)stream;
	enum cudaMemcpyKind kind = dir == FTPCIE_H2D ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
	cudaEvent_t ev[2] = {NULL, NULL};
	cudaError_t e;
	if ((e = cudaEventCreate(&ev[0])) || (e = cudaEventCreate(&ev[1])))
		goto out;
	for (int i = 0; i < warmup; i++)
		if ((e = cudaMemcpyAsync(dst, src, bytes, kind, s)))
			goto out;
	for (int i = 0; i < iters; i++) {
		float ms = 0;
		if ((e = cudaEventRecord(ev[0], s)) || (e = cudaMemcpyAsync(dst, src, bytes, kind, s)) ||
		    (e = cudaEventRecord(ev[1], s)) || (e = cudaEventSynchronize(ev[1])) ||
		    (e = cudaEventElapsedTime(&ms, ev[0], ev[1])))
			goto out;
		secs[i] = ms / 1e3;
	}
out:
	if (ev[0])
		cudaEventDestroy(ev[0]);
	if (ev[1])
		cudaEventDestroy(ev[1]);
	return ftcudaerr_errno(e);
}

int ftpcie_linear(enum ftpcie_dir dir, size_t bytes, int iters, double *secs)
{
	int ndev = 0;
	if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0)
		return -ENODEV;
	if (!bytes || iters <= 0 || !secs)
		return -EINVAL;
	unsigned char *h = NULL;
	void *d = NULL;
	cudaError_t e;
	int r;
	if ((e = cudaHostAlloc((void **)&h, bytes, cudaHostAllocDefault)) || (e = cudaMalloc(&d, bytes))) {
		r = ftcudaerr_errno(e);
		goto out;
	}
	for (size_t i = 0; i < bytes; i++) /* pattern, never zero */
		h[i] = (unsigned char)(1 + (i * 131 + (i >> 12)) % 251);
	if (dir == FTPCIE_D2H && (e = cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice))) {
		r = ftcudaerr_errno(e);
		goto out;
	}
	r = dir == FTPCIE_H2D ? ftpcie_linear_on(dir, d, h, bytes, FTPCIE_WARMUP, iters, secs, NULL)
			      : ftpcie_linear_on(dir, h, d, bytes, FTPCIE_WARMUP, iters, secs, NULL);
out:
	cudaFree(d);
	cudaFreeHost(h);
	return r;
}
#else
int ftpcie_linear_on(enum ftpcie_dir dir, void *dst, const void *src, size_t bytes, int warmup, int iters,
		     double *secs, void *stream)
{
	return -ENODEV;
}

int ftpcie_linear(enum ftpcie_dir dir, size_t bytes, int iters, double *secs)
{
	return -ENODEV;
}
#endif

double ftpcie_gbs(size_t bytes, double secs)
{
	return secs > 0 ? (double)bytes / secs / 1e9 : 0;
}
