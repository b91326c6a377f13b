/* cudaerr: the one mapping from a CUDA runtime error to the library convention (0 or -errno).
 * Only for code built with FT_HAVE_CUDA (it needs cuda_runtime_api.h). */
#ifndef FT_HW_CUDAERR_H
#define FT_HW_CUDAERR_H
#ifdef FT_HAVE_CUDA
#include <cuda_runtime_api.h>
#include <errno.h>

/* 0 for cudaSuccess; -ENOMEM when memory could not be had, -EINVAL for an invalid value,
 * -ENODEV for no device or a driver too old for the runtime, -EIO for any other error. */
static inline int ftcudaerr_errno(cudaError_t e)
{
	if (e == cudaSuccess)
		return 0;
	if (e == cudaErrorMemoryAllocation)
		return -ENOMEM;
	if (e == cudaErrorInvalidValue)
		return -EINVAL;
	if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver)
		return -ENODEV;
	return -EIO;
}
#endif
#endif
