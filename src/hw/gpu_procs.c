/* gpu_procs: how many processes hold a GPU, from the driver's NVML (dlopen'd: no link-time
 * dependency, no CUDA context, nothing when the driver is absent). */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "hw/gpu.h"

/* The few NVML declarations used (nvml.h: stable ABI of the _v2/_v3 entry points). */
typedef int nvml_ret;
typedef void *nvml_device;
struct nvml_proc { /* nvmlProcessInfo_t of the _v3 calls */
	unsigned int pid;
	unsigned long long used_gpu_memory;
	unsigned int gpu_instance_id, compute_instance_id;
};
#define MAX_PROCS 256
#define NVML_OK 0
#define NVML_INSUFFICIENT_SIZE 7

int ftgpu_processes(const char *pci_bus_id, int *n, char *why, size_t whylen)
{
	if (!pci_bus_id || !*pci_bus_id || !n)
		return -EINVAL;
	void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		if (why)
			snprintf(why, whylen, "NVML (libnvidia-ml.so.1) not found: no NVIDIA driver");
		return -ENOENT;
	}
	nvml_ret (*init)(void) = (nvml_ret(*)(void))dlsym(lib, "nvmlInit_v2");
	nvml_ret (*shutdown)(void) = (nvml_ret(*)(void))dlsym(lib, "nvmlShutdown");
	nvml_ret (*by_bus)(const char *, nvml_device *) =
		(nvml_ret(*)(const char *, nvml_device *))dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2");
	static const char *const lists[] = {"nvmlDeviceGetComputeRunningProcesses_v3",
					    "nvmlDeviceGetGraphicsRunningProcesses_v3"};
	int r = 0;
	if (!init || !shutdown || !by_bus) {
		if (why)
			snprintf(why, whylen, "NVML lacks nvmlInit_v2/nvmlDeviceGetHandleByPciBusId_v2");
		r = -ENOSYS;
		goto out;
	}
	nvml_ret e = init();
	if (e != NVML_OK) {
		if (why)
			snprintf(why, whylen, "nvmlInit_v2 failed (NVML error %d)", e);
		r = -EIO;
		goto out;
	}
	nvml_device dev = NULL;
	if ((e = by_bus(pci_bus_id, &dev)) != NVML_OK) {
		if (why)
			snprintf(why, whylen, "no GPU at PCI bus id %s (NVML error %d)", pci_bus_id, e);
		r = -ENODEV;
	}
	*n = 0;
	for (size_t i = 0; r == 0 && i < sizeof lists / sizeof *lists; i++) {
		nvml_ret (*list)(nvml_device, unsigned *, void *) =
			(nvml_ret(*)(nvml_device, unsigned *, void *))dlsym(lib, lists[i]);
		unsigned count = MAX_PROCS;
		struct nvml_proc procs[MAX_PROCS];
		if (!list) {
			if (why)
				snprintf(why, whylen, "NVML lacks %s", lists[i]);
			r = -ENOSYS;
			break;
		}
		/* this process is not a holder (it has no context, but be sure): the others count;
		 * more than the buffer holds (INSUFFICIENT_SIZE) counts them all */
		e = list(dev, &count, procs);
		if (e != NVML_OK && e != NVML_INSUFFICIENT_SIZE) {
			if (why)
				snprintf(why, whylen, "%s failed (NVML error %d)", lists[i], e);
			r = -EIO;
			break;
		}
		for (unsigned k = 0; k < count; k++)
			*n += e != NVML_OK || k >= MAX_PROCS || procs[k].pid != (unsigned)getpid();
	}
	shutdown();
out:
	dlclose(lib);
	return r;
}
