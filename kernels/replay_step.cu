/* replay_step (GPU): see replay_step.h. */
#include "replay_step.h"

#define FTRS_SPLIT_BLOCK 256
#define FTRS_ADD_BLOCK 256

/* Grid: one block of FTRS_SPLIT_BLOCK threads striding over the n routes. */
__global__ void __launch_bounds__(FTRS_SPLIT_BLOCK)
	split_kernel(const int32_t *__restrict__ raw, int32_t *__restrict__ slots, const float *__restrict__ w,
		     int32_t *__restrict__ cpu_ids, float *__restrict__ gpu_w, int n, long long *acc)
{
	int cpu = 0;
	for (int i = threadIdx.x; i < n; i += blockDim.x) {
		int s = slots[i];
		cpu_ids[i] = s < 0 ? raw[i] : -1;
		gpu_w[i] = s < 0 ? 0.0f : w[i];
		slots[i] = s < 0 ? 0 : s;
		cpu += s < 0;
	}
	if (cpu)
		atomicAdd((unsigned long long *)&acc[FTRS_ACC_CPU_ROUTES], (unsigned long long)cpu);
}

/* Grid: one thread. */
__global__ void count_kernel(const int32_t *counts, long long *acc)
{
	acc[FTRS_ACC_FETCHED] += counts[0];
	acc[FTRS_ACC_MISSES] += counts[1];
	if (counts[2])
		acc[FTRS_ACC_ERROR] = 1;
}

/* Grid: one thread. */
__global__ void ring_kernel(volatile long long *ready, volatile long long *done, int slot)
{
	__threadfence_system();
	done[slot] = 0;
	__threadfence_system();
	ready[slot] = 1;
}

/* Grid: one thread. */
__global__ void wait_kernel(volatile long long *done, int slot, long long *acc)
{
	unsigned long long t0, t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
	while (done[slot] < 1) {
		__nanosleep(64);
		asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
		if (t - t0 > FTRS_WAIT_TIMEOUT_NS) {
			acc[FTRS_ACC_TIMEOUTS]++;
			break;
		}
	}
	__threadfence_system();
}

/* Grid: one thread. */
__global__ void delay_kernel(const int32_t *counts, const float *us, int n)
{
	int m = counts[0];
	float d = m < n ? us[m] : us[n - 1] + (n > 1 ? us[n - 1] - us[n - 2] : 0.0f) * (float)(m - (n - 1));
	if (!(d > 0))
		return;
	unsigned long long t0, t, ns = (unsigned long long)(d * 1000.0f);
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
	do {
		__nanosleep(256);
		asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	} while (t - t0 < ns);
}

/* Grid: ceil(n / FTRS_ADD_BLOCK) blocks. */
__global__ void __launch_bounds__(FTRS_ADD_BLOCK) add_kernel(float *__restrict__ y, const float *__restrict__ x, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] += x[i];
}

extern "C" cudaError_t ftrs_split(const int32_t *raw, int32_t *slots, const float *w, int32_t *cpu_ids, float *gpu_w,
				  int n, long long *acc, cudaStream_t s)
{
	if (n <= 0 || n > 1024 || !raw || !slots || !w || !cpu_ids || !gpu_w || !acc)
		return cudaErrorInvalidValue;
	split_kernel<<<1, FTRS_SPLIT_BLOCK, 0, s>>>(raw, slots, w, cpu_ids, gpu_w, n, acc);
	return cudaGetLastError();
}

extern "C" cudaError_t ftrs_count(const int32_t *counts, long long *acc, cudaStream_t s)
{
	if (!counts || !acc)
		return cudaErrorInvalidValue;
	count_kernel<<<1, 1, 0, s>>>(counts, acc);
	return cudaGetLastError();
}

extern "C" cudaError_t ftrs_ring(volatile long long *ready, volatile long long *done, int slot, cudaStream_t s)
{
	if (!ready || !done || slot < 0)
		return cudaErrorInvalidValue;
	ring_kernel<<<1, 1, 0, s>>>(ready, done, slot);
	return cudaGetLastError();
}

extern "C" cudaError_t ftrs_wait(volatile long long *done, int slot, long long *acc, cudaStream_t s)
{
	if (!done || slot < 0 || !acc)
		return cudaErrorInvalidValue;
	wait_kernel<<<1, 1, 0, s>>>(done, slot, acc);
	return cudaGetLastError();
}

extern "C" cudaError_t ftrs_add(float *y, const float *x, int n, cudaStream_t s)
{
	if (n <= 0 || !y || !x)
		return cudaErrorInvalidValue;
	add_kernel<<<(n + FTRS_ADD_BLOCK - 1) / FTRS_ADD_BLOCK, FTRS_ADD_BLOCK, 0, s>>>(y, x, n);
	return cudaGetLastError();
}

extern "C" cudaError_t ftrs_delay(const int32_t *counts, const float *us, int n, cudaStream_t s)
{
	if (!counts || !us || n < 1)
		return cudaErrorInvalidValue;
	delay_kernel<<<1, 1, 0, s>>>(counts, us, n);
	return cudaGetLastError();
}

extern "C" cudaError_t ftrs_preload(void)
{
	cudaFuncAttributes a;
	cudaError_t e;
	if ((e = cudaFuncGetAttributes(&a, split_kernel)) || (e = cudaFuncGetAttributes(&a, count_kernel)) ||
	    (e = cudaFuncGetAttributes(&a, ring_kernel)) || (e = cudaFuncGetAttributes(&a, wait_kernel)) ||
	    (e = cudaFuncGetAttributes(&a, add_kernel)) || (e = cudaFuncGetAttributes(&a, delay_kernel)))
		return e;
	return cudaSuccess;
}
