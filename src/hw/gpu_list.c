/* gpu_list: ftgpu_list, the CUDA half of hw/gpu (kept apart so that users of the resolver and
 * the JSON helpers, such as ftbenchd, do not link cudart). */
#include "hw/gpu.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef FT_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#ifdef FT_HAVE_CUDA
static void read_driver_version(char *buf, size_t n)
{
	buf[0] = '\0';
	FILE *f = fopen("/sys/module/nvidia/version", "re");
	if (f && fgets(buf, (int)n, f)) {
		buf[strcspn(buf, "\n")] = '\0';
		fclose(f);
		return;
	}
	if (f)
		fclose(f);
	buf[0] = '\0';
	f = fopen("/proc/driver/nvidia/version", "re");
	char line[256];
	if (f && fgets(line, sizeof line, f)) {
		/* "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.03  ..." */
		char *k = strstr(line, "Kernel Module");
		if (k && sscanf(k + 13, "%31s", buf) != 1)
			buf[0] = '\0';
	}
	if (f)
		fclose(f);
}
#endif

int ftgpu_list(struct ftgpu_info **out, int *n, char *why, size_t whylen)
{
	*out = NULL;
	*n = 0;
#ifndef FT_HAVE_CUDA
	snprintf(why, whylen, "built without CUDA (CUDA=0)");
	return 0;
#else
	/* PCI bus order so that index = nvidia-smi index, unless the caller chose otherwise. */
	setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 0);
	int count = 0, drv = 0, rt = 0;
	cudaError_t e = cudaGetDeviceCount(&count);
	if (e != cudaSuccess) {
		if (access("/proc/driver/nvidia/version", F_OK) != 0)
			snprintf(why, whylen, "no CUDA device: no NVIDIA driver is loaded");
		else
			snprintf(why, whylen, "no CUDA device: %s", cudaGetErrorString(e));
		return 0;
	}
	if (count == 0) {
		snprintf(why, whylen, "no CUDA device");
		return 0;
	}
	cudaDriverGetVersion(&drv);
	cudaRuntimeGetVersion(&rt);
	struct ftgpu_info *v = calloc((size_t)count, sizeof *v);
	if (!v)
		return -ENOMEM;
	char dv[32];
	read_driver_version(dv, sizeof dv);
	for (int i = 0; i < count; i++) {
		struct cudaDeviceProp prop;
		struct ftgpu_info *g = &v[i];
		if ((e = cudaGetDeviceProperties(&prop, i)) != cudaSuccess) {
			snprintf(why, whylen, "GPU %d: %s", i, cudaGetErrorString(e));
			free(v);
			return -EIO;
		}
		const unsigned char *u = (const unsigned char *)prop.uuid.bytes;
		snprintf(g->uuid, sizeof g->uuid,
			 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
			 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11],
			 u[12], u[13], u[14], u[15]);
		g->index = i;
		snprintf(g->name, sizeof g->name, "%s", prop.name);
		snprintf(g->pci_bus_id, sizeof g->pci_bus_id, "%08X:%02X:%02X.0", prop.pciDomainID,
			 prop.pciBusID, prop.pciDeviceID);
		g->mem_total = prop.totalGlobalMem;
		g->cc_major = prop.major;
		g->cc_minor = prop.minor;
		g->multiprocessors = prop.multiProcessorCount;
		snprintf(g->driver_version, sizeof g->driver_version, "%s", dv);
		g->cuda_driver_version = drv;
		g->cuda_runtime_version = rt;
		ftgpu_read_link(g);
	}
	*out = v;
	*n = count;
	return 0;
#endif
}

