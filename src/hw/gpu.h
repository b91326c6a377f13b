/* gpu: the CUDA devices of this host in PCI bus order (index = nvidia-smi index), with the
 * facts a profile needs to be trusted (UUID, bus id, PCIe link as trained, versions).
 * The daemon never calls ftgpu_list (it has no CUDA); it parses `ftbench gpus --json` with
 * ftgpu_from_json and resolves --gpu with the same ftgpu_resolve. */
#ifndef FT_HW_GPU_H
#define FT_HW_GPU_H
#include <jansson.h>
#include <stddef.h>

struct ftgpu_info {
	int index;                 /* CUDA ordinal under CUDA_DEVICE_ORDER=PCI_BUS_ID */
	char uuid[64];             /* "GPU-8eb97239-58cd-...", as nvidia-smi prints it */
	char name[256];
	char pci_bus_id[32];       /* "00000000:18:00.0", as nvidia-smi prints it */
	size_t mem_total;
	int cc_major, cc_minor, multiprocessors;
	char driver_version[32];   /* kernel driver, e.g. "580.159.03" ("" when unknown) */
	int cuda_driver_version;   /* cudaDriverGetVersion, e.g. 13000 */
	int cuda_runtime_version;  /* cudaRuntimeGetVersion */
	int link_gen_cur, link_gen_max, link_width_cur, link_width_max; /* 0 when unknown */
	int numa_node;             /* -1 when unknown */
};

/* List the GPUs into a new array *out (free()) of *n entries. No GPU, no driver or a build
 * without CUDA is not an error: *n = 0 and why says why in one line. Returns 0 or -errno. */
int ftgpu_list(struct ftgpu_info **out, int *n, char *why, size_t whylen);

/* How many processes (compute and graphics) hold the GPU at pci_bus_id ("00000000:18:00.0"),
 * from the driver's NVML, loaded at run time (no CUDA context is made). Returns 0 and *n,
 * -ENOENT when NVML is not installed (no driver), -ENODEV when no GPU has that bus id, -ENOSYS
 * for an NVML without the calls, -EIO when NVML fails; why (may be NULL) says which. */
int ftgpu_processes(const char *pci_bus_id, int *n, char *why, size_t whylen);

/* Resolve spec (an index, a full UUID, or a unique UUID prefix with or without "GPU-") to a
 * position in gpus. On failure returns -ENODEV (or -EINVAL for an ambiguous prefix) and err
 * names the GPUs that exist. */
int ftgpu_resolve(const struct ftgpu_info *gpus, int n, const char *spec, char *err, size_t errlen);

/* Theoretical one-direction PCIe payload rate in GB/s (1e9 B/s) for gen and width after line
 * coding (gen 1-2: 8b/10b, gen 3+: 128b/130b); 0 when unknown. */
double ftgpu_link_gbs(int gen, int width);

/* One GPU as JSON (new reference) and back (0 or -EINVAL naming nothing: malformed). */
json_t *ftgpu_json(const struct ftgpu_info *g);
int ftgpu_from_json(const json_t *j, struct ftgpu_info *g);

/* GPUs the NVIDIA driver knows on this host (one entry per GPU under /proc/driver/nvidia/gpus,
 * named by PCI bus id), whatever CUDA_VISIBLE_DEVICES hides; 0 without a driver. The _in form
 * counts the entries of another directory (tests). */
int ftgpu_count_host(void);
int ftgpu_count_host_in(const char *dir);

/* Fill the PCIe link and NUMA fields of g from sysfs, given g->pci_bus_id. */
void ftgpu_read_link(struct ftgpu_info *g);
/* The same from the sysfs tree under root (NULL or "": the real one; tests pass a fake tree). */
void ftgpu_read_link_root(struct ftgpu_info *g, const char *root);
#endif
