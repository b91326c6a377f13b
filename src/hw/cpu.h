/* cpu: what the host CPU is: model, physical cores (SMT siblings excluded), NUMA nodes,
 * ISA features (cpuid + OS-enabled state), last-level cache, memory. */
#ifndef FT_HW_CPU_H
#define FT_HW_CPU_H
#include <jansson.h>
#include <sched.h>
#include <stddef.h>

enum {
	FTCPU_AVX2        = 1u << 0,
	FTCPU_FMA         = 1u << 1,
	FTCPU_F16C        = 1u << 2,
	FTCPU_AVX512F     = 1u << 3,
	FTCPU_AVX512BW    = 1u << 4,
	FTCPU_AVX512VL    = 1u << 5,
	FTCPU_AVX512_BF16 = 1u << 6,
	FTCPU_AVX512_VNNI = 1u << 7,
	FTCPU_AVX_VNNI    = 1u << 8,
	FTCPU_AMX_TILE    = 1u << 9,
	FTCPU_AMX_BF16    = 1u << 10,
	FTCPU_AMX_INT8    = 1u << 11,
	FTCPU_AVX512DQ    = 1u << 12, /* the avx512 objects are built with -mavx512dq */
};

struct ftcpu_info {
	char model[128];
	int logical_cpus;     /* online CPUs this process may run on */
	int physical_cores;   /* one per SMT sibling set */
	int numa_nodes;
	int *core_cpu;        /* [physical_cores]: one CPU id per physical core */
	int *core_node;       /* [physical_cores]: its NUMA node (0 when unknown) */
	unsigned isa;         /* FTCPU_* bits, only those the OS has enabled */
	size_t llc_bytes;     /* last-level cache of one socket (0 when unknown) */
	size_t mem_total, mem_available;
};

/* Fill ci from /proc and /sys and cpuid. Returns 0 or -errno; ftcpu_release frees it. */
int ftcpu_probe(struct ftcpu_info *ci);
/* The same from a sysfs/procfs tree under root (NULL or "": the real one; tests pass a fake
 * tree): with a fake root the CPUs are those of root/sys/devices/system/cpu/online instead of
 * this process's affinity; ISA and memory stay this machine's. */
int ftcpu_probe_root(struct ftcpu_info *ci, const char *root);

/* Parse a kernel CPU list ("0-3,8,10-11", a trailing newline allowed) into set; 0 or -EINVAL. */
int ftcpu_parse_cpulist(const char *s, cpu_set_t *set);
void ftcpu_release(struct ftcpu_info *ci);

/* Space-separated names of the ISA bits ("avx2 fma avx512f ..."), into buf. */
void ftcpu_isa_string(unsigned isa, char *buf, size_t n);

/* Up to max CPU ids, one per physical core, those on NUMA node `node` first (node < 0: in
 * order). Returns the count. */
int ftcpu_cores_near(const struct ftcpu_info *ci, int node, int *cpus, int max);

/* The calling thread's memory policy: prefer NUMA node `node` for the pages it allocates from
 * now on (threads it creates inherit it), or the default policy (node < 0). 0 or -errno. */
int ftcpu_mem_prefer(int node);

/* MemAvailable from /proc/meminfo in bytes (0 when unreadable). */
size_t ftcpu_mem_available(void);

/* {"model","physical_cores","logical_cpus","numa_nodes","isa":[...],"llc_bytes",...}; new ref. */
json_t *ftcpu_json(const struct ftcpu_info *ci);
#endif
