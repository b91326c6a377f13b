#include "hw/cpu.h"

#include <cpuid.h>
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static const struct { unsigned bit; const char *name; } isa_names[] = {
	{FTCPU_AVX2, "avx2"}, {FTCPU_FMA, "fma"}, {FTCPU_F16C, "f16c"},
	{FTCPU_AVX512F, "avx512f"}, {FTCPU_AVX512BW, "avx512bw"}, {FTCPU_AVX512VL, "avx512vl"},
	{FTCPU_AVX512_BF16, "avx512_bf16"}, {FTCPU_AVX512_VNNI, "avx512_vnni"},
	{FTCPU_AVX_VNNI, "avx_vnni"}, {FTCPU_AMX_TILE, "amx_tile"}, {FTCPU_AMX_BF16, "amx_bf16"},
	{FTCPU_AMX_INT8, "amx_int8"}, {FTCPU_AVX512DQ, "avx512dq"},
};

static unsigned long long xgetbv0(void)
{
	unsigned eax, edx;
	__asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
	return ((unsigned long long)edx << 32) | eax;
}

static unsigned probe_isa(void)
{
	unsigned a, b, c, d, isa = 0;
	if (!__get_cpuid(1, &a, &b, &c, &d))
		return 0;
	int osxsave = (c >> 27) & 1;
	unsigned long long xcr0 = osxsave ? xgetbv0() : 0;
	int ymm = (xcr0 & 0x6) == 0x6, zmm = ymm && (xcr0 & 0xe0) == 0xe0;
	int amx = (xcr0 & 0x60000) == 0x60000;
	if (ymm && (c >> 12) & 1)
		isa |= FTCPU_FMA;
	if (ymm && (c >> 29) & 1)
		isa |= FTCPU_F16C;
	if (__get_cpuid_max(0, NULL) < 7)
		return isa;
	__cpuid_count(7, 0, a, b, c, d);
	if (ymm && (b >> 5) & 1)
		isa |= FTCPU_AVX2;
	if (zmm && (b >> 16) & 1)
		isa |= FTCPU_AVX512F;
	if (zmm && (b >> 17) & 1)
		isa |= FTCPU_AVX512DQ;
	if (zmm && (b >> 30) & 1)
		isa |= FTCPU_AVX512BW;
	if (zmm && (b >> 31) & 1)
		isa |= FTCPU_AVX512VL;
	if (zmm && (c >> 11) & 1)
		isa |= FTCPU_AVX512_VNNI;
	if (amx && (d >> 24) & 1)
		isa |= FTCPU_AMX_TILE;
	if (amx && (d >> 22) & 1)
		isa |= FTCPU_AMX_BF16;
	if (amx && (d >> 25) & 1)
		isa |= FTCPU_AMX_INT8;
	__cpuid_count(7, 1, a, b, c, d);
	if (ymm && (a >> 4) & 1)
		isa |= FTCPU_AVX_VNNI;
	if (zmm && (a >> 5) & 1)
		isa |= FTCPU_AVX512_BF16;
	return isa;
}

void ftcpu_isa_string(unsigned isa, char *buf, size_t n)
{
	size_t off = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < sizeof isa_names / sizeof isa_names[0]; i++)
		if (isa & isa_names[i].bit && off < n)
			off += (size_t)snprintf(buf + off, n - off, "%s%s", off ? " " : "", isa_names[i].name);
}

static long read_long(const char *path)
{
	FILE *f = fopen(path, "re");
	long v = -1;
	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

static size_t meminfo(const char *key)
{
	FILE *f = fopen("/proc/meminfo", "re");
	char line[256];
	size_t v = 0, kl = strlen(key);
	if (!f)
		return 0;
	while (fgets(line, sizeof line, f))
		if (!strncmp(line, key, kl) && line[kl] == ':') {
			v = strtoull(line + kl + 1, NULL, 10) * 1024;
			break;
		}
	fclose(f);
	return v;
}

size_t ftcpu_mem_available(void)
{
	return meminfo("MemAvailable");
}

static int node_of_cpu(const char *root, int cpu)
{
	char path[4200];
	for (int node = 0; node < 1024; node++) {
		snprintf(path, sizeof path, "%s/sys/devices/system/cpu/cpu%d/node%d", root, cpu, node);
		if (access(path, F_OK) == 0)
			return node;
	}
	return 0;
}

static size_t parse_size(const char *s)
{
	char *end;
	size_t v = strtoull(s, &end, 10);
	if (*end == 'K')
		v <<= 10;
	else if (*end == 'M')
		v <<= 20;
	return v;
}

static size_t probe_llc(const char *root)
{
	size_t best = 0;
	for (int i = 0; i < 8; i++) {
		char path[4200], buf[64];
		snprintf(path, sizeof path, "%s/sys/devices/system/cpu/cpu0/cache/index%d/size", root, i);
		FILE *f = fopen(path, "re");
		if (!f)
			continue;
		if (fgets(buf, sizeof buf, f)) {
			size_t v = parse_size(buf);
			if (v > best)
				best = v;
		}
		fclose(f);
	}
	return best;
}

int ftcpu_parse_cpulist(const char *s, cpu_set_t *set)
{
	CPU_ZERO(set);
	while (*s && *s != '\n') {
		char *end;
		long a = strtol(s, &end, 10), b;
		if (end == s || a < 0 || a >= CPU_SETSIZE)
			return -EINVAL;
		b = a;
		s = end;
		if (*s == '-') {
			b = strtol(s + 1, &end, 10);
			if (end == s + 1 || b < a || b >= CPU_SETSIZE)
				return -EINVAL;
			s = end;
		}
		for (long c = a; c <= b; c++)
			CPU_SET((int)c, set);
		if (*s == ',')
			s++;
		else if (*s && *s != '\n')
			return -EINVAL;
	}
	return 0;
}

int ftcpu_probe(struct ftcpu_info *ci)
{
	return ftcpu_probe_root(ci, NULL);
}

int ftcpu_probe_root(struct ftcpu_info *ci, const char *root)
{
	memset(ci, 0, sizeof *ci);
	char line[512], path[4200];
	int fake = root && *root;
	if (!root)
		root = "";
	snprintf(path, sizeof path, "%s/proc/cpuinfo", root);
	FILE *f = fopen(path, "re");
	if (f) {
		while (fgets(line, sizeof line, f))
			if (!strncmp(line, "model name", 10)) {
				char *c = strchr(line, ':');
				if (c) {
					c++;
					while (*c == ' ' || *c == '\t')
						c++;
					c[strcspn(c, "\n")] = '\0';
					snprintf(ci->model, sizeof ci->model, "%s", c);
				}
				break;
			}
		fclose(f);
	}
	if (!ci->model[0])
		snprintf(ci->model, sizeof ci->model, "unknown");

	cpu_set_t set;
	CPU_ZERO(&set);
	if (fake) {
		/* a fake tree (tests): its online CPUs stand for this process's affinity */
		char buf[1024];
		snprintf(path, sizeof path, "%s/sys/devices/system/cpu/online", root);
		FILE *o = fopen(path, "re");
		int r = o && fgets(buf, sizeof buf, o) ? ftcpu_parse_cpulist(buf, &set) : -ENOENT;
		if (o)
			fclose(o);
		if (r < 0)
			return r;
	} else if (sched_getaffinity(0, sizeof set, &set) < 0) {
		return -errno;
	}
	int ncpu = CPU_COUNT(&set);
	ci->core_cpu = calloc((size_t)ncpu, sizeof(int));
	ci->core_node = calloc((size_t)ncpu, sizeof(int));
	long *key = calloc((size_t)ncpu, sizeof(long));
	if (!ci->core_cpu || !ci->core_node || !key) {
		free(key);
		ftcpu_release(ci);
		return -ENOMEM;
	}
	int maxnode = 0;
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, &set))
			continue;
		ci->logical_cpus++;
		snprintf(path, sizeof path, "%s/sys/devices/system/cpu/cpu%d/topology/core_id", root, cpu);
		long core = read_long(path);
		snprintf(path, sizeof path, "%s/sys/devices/system/cpu/cpu%d/topology/physical_package_id", root, cpu);
		long pkg = read_long(path);
		long k = core < 0 ? -1 - cpu : (pkg < 0 ? 0 : pkg) * 1000000 + core;
		int dup = 0;
		for (int i = 0; i < ci->physical_cores; i++)
			if (key[i] == k)
				dup = 1;
		if (dup)
			continue;
		key[ci->physical_cores] = k;
		ci->core_cpu[ci->physical_cores] = cpu;
		ci->core_node[ci->physical_cores] = node_of_cpu(root, cpu);
		if (ci->core_node[ci->physical_cores] > maxnode)
			maxnode = ci->core_node[ci->physical_cores];
		ci->physical_cores++;
	}
	free(key);
	ci->numa_nodes = maxnode + 1;
	ci->isa = probe_isa();
	ci->llc_bytes = probe_llc(root);
	ci->mem_total = meminfo("MemTotal");
	ci->mem_available = meminfo("MemAvailable");
	return 0;
}

void ftcpu_release(struct ftcpu_info *ci)
{
	if (!ci)
		return;
	free(ci->core_cpu);
	free(ci->core_node);
	ci->core_cpu = ci->core_node = NULL;
}

int ftcpu_cores_near(const struct ftcpu_info *ci, int node, int *cpus, int max)
{
	int n = 0;
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < ci->physical_cores && n < max; i++) {
			int near = node < 0 || ci->core_node[i] == node;
			if ((pass == 0) == near)
				cpus[n++] = ci->core_cpu[i];
		}
	return n;
}

json_t *ftcpu_json(const struct ftcpu_info *ci)
{
	json_t *isa = json_array();
	for (size_t i = 0; i < sizeof isa_names / sizeof isa_names[0]; i++)
		if (ci->isa & isa_names[i].bit)
			json_array_append_new(isa, json_string(isa_names[i].name));
	return json_pack("{s:s,s:i,s:i,s:i,s:o,s:I,s:I}", "model", ci->model, "physical_cores",
			 ci->physical_cores, "logical_cpus", ci->logical_cpus, "numa_nodes",
			 ci->numa_nodes, "isa", isa, "llc_bytes", (json_int_t)ci->llc_bytes,
			 "mem_total_bytes", (json_int_t)ci->mem_total);
}

int ftcpu_mem_prefer(int node)
{
	/* set_mempolicy(2) without libnuma: MPOL_DEFAULT 0, MPOL_PREFERRED 1 */
	unsigned long mask[1024 / (8 * sizeof(unsigned long))] = {0};
	long r;
	if (node >= (int)(8 * sizeof mask))
		return -EINVAL;
	if (node < 0) {
		r = syscall(SYS_set_mempolicy, 0, NULL, 0);
	} else {
		mask[node / (8 * sizeof(unsigned long))] |= 1ul << (node % (8 * sizeof(unsigned long)));
		r = syscall(SYS_set_mempolicy, 1, mask, 8 * sizeof mask);
	}
	return r < 0 ? -errno : 0;
}
