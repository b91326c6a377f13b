/* lazy_load_probe: does a kernel's first launch wait for a kernel that spins in another stream
 * (the copy proxy's wait kernel)? A one-thread kernel spins on a flag in device memory (at
 * most 3 s by %globaltimer) on stream A; a second thread then launches, for the first time, the
 * kernel that sets the flag on stream B. Printed: how long that launch call took and whether the
 * spinner gave up (a first launch that waited for it). Then the same with the setter loaded
 * beforehand (cudaFuncGetAttributes), as copy_missing's proxy now does.
 * Run it under CUDA_MODULE_LOADING=LAZY (the default) and EAGER.
 * usage: lazy_load_probe   (built by hand: nvcc -O2 -arch=sm_90 bench/lazy_load_probe.cu -o ...) */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CK(x)                                                                                      \
	do {                                                                                       \
		cudaError_t e_ = (x);                                                              \
		if (e_ != cudaSuccess) {                                                           \
			fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

__global__ void spin_kernel(volatile int *flag, int *gave_up)
{
	unsigned long long t0, t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
	while (!*flag) {
		asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
		if (t - t0 > 3000000000ull) {
			*gave_up = 1;
			return;
		}
	}
}

/* two setters: one launched cold, one loaded first */
__global__ void set_kernel_a(int *flag) { *(volatile int *)flag = 1; }
__global__ void set_kernel_b(int *flag) { *(volatile int *)flag = 1; }

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

struct arg {
	int *flag;
	int which;
	double launch_s;
};

static void *setter_main(void *p)
{
	struct arg *a = (struct arg *)p;
	cudaStream_t s;
	CK(cudaSetDevice(0));
	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	struct timespec ts = {0, 20000000}; /* let the spinner start */
	nanosleep(&ts, NULL);
	double t0 = now_s();
	if (a->which == 0)
		set_kernel_a<<<1, 1, 0, s>>>(a->flag);
	else
		set_kernel_b<<<1, 1, 0, s>>>(a->flag);
	CK(cudaGetLastError());
	a->launch_s = now_s() - t0;
	CK(cudaStreamSynchronize(s));
	CK(cudaStreamDestroy(s));
	return NULL;
}

int main(void)
{
	int *d;
	CK(cudaSetDevice(0));
	CK(cudaMalloc((void **)&d, 2 * sizeof(int)));
	cudaStream_t a;
	CK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
	struct cudaFuncAttributes fa;
	CK(cudaFuncGetAttributes(&fa, spin_kernel));
	int bad = 0;
	for (int which = 0; which < 2; which++) {
		if (which == 1)
			CK(cudaFuncGetAttributes(&fa, set_kernel_b)); /* loaded before the spin */
		CK(cudaMemset(d, 0, 2 * sizeof(int)));
		CK(cudaDeviceSynchronize());
		double t0 = now_s();
		spin_kernel<<<1, 1, 0, a>>>(d, d + 1);
		CK(cudaGetLastError());
		struct arg arg = {d, which, 0};
		pthread_t th;
		pthread_create(&th, NULL, setter_main, &arg);
		CK(cudaStreamSynchronize(a));
		double spun = now_s() - t0;
		pthread_join(th, NULL);
		int gave_up = 0;
		CK(cudaMemcpy(&gave_up, d + 1, sizeof gave_up, cudaMemcpyDeviceToHost));
		printf("lazy_load_probe: setter %s: its launch call took %.3f ms, the spinner ran %.3f ms%s\n",
		       which ? "loaded first" : "launched cold", arg.launch_s * 1e3, spun * 1e3,
		       gave_up ? ", GAVE UP (the first launch waited for it)" : "");
		bad |= gave_up && which == 1;
	}
	return bad;
}
