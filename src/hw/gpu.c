#include "hw/gpu.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hw/pci.h"
#include "util/fsutil.h"
#include "util/strutil.h"

/* ftgpu_list (the only CUDA user) lives in gpu_list.c, so ftbenchd can use the resolver and
 * the JSON helpers here without linking cudart. */

double ftgpu_link_gbs(int gen, int width)
{
	static const double gts[] = {0, 2.5, 5.0, 8.0, 16.0, 32.0, 64.0};
	if (gen < 1 || gen > 6 || width <= 0)
		return 0.0;
	double enc = gen <= 2 ? 8.0 / 10.0 : 128.0 / 130.0;
	if (gen == 6)
		enc = 242.0 / 256.0; /* FLIT mode */
	return gts[gen] * width * enc / 8.0;
}

int ftgpu_count_host_in(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;
	if (!d)
		return 0;
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

int ftgpu_count_host(void)
{
	return ftgpu_count_host_in("/proc/driver/nvidia/gpus");
}

void ftgpu_read_link(struct ftgpu_info *g)
{
	ftgpu_read_link_root(g, NULL);
}

void ftgpu_read_link_root(struct ftgpu_info *g, const char *root)
{
	char id[32], buf[64];
	const char *bus = g->pci_bus_id;
	if (ftpci_sysfs_id(bus, id, sizeof id) < 0)
		return;
	g->numa_node = -1;
	if (!ftpci_read_attr(root, bus, "current_link_speed", buf, sizeof buf))
		g->link_gen_cur = ftpci_gen_of_speed(buf);
	if (!ftpci_read_attr(root, bus, "max_link_speed", buf, sizeof buf))
		g->link_gen_max = ftpci_gen_of_speed(buf);
	if (!ftpci_read_attr(root, bus, "current_link_width", buf, sizeof buf))
		g->link_width_cur = atoi(buf);
	if (!ftpci_read_attr(root, bus, "max_link_width", buf, sizeof buf))
		g->link_width_max = atoi(buf);
	if (!ftpci_read_attr(root, bus, "numa_node", buf, sizeof buf))
		g->numa_node = atoi(buf);
}

static const char *skip_prefix(const char *s)
{
	return strncasecmp(s, "GPU-", 4) == 0 ? s + 4 : s;
}

static void list_gpus(const struct ftgpu_info *gpus, int n, char *err, size_t errlen, const char *head)
{
	size_t off = (size_t)snprintf(err, errlen, "%s", head);
	if (n == 0 && off < errlen)
		off += (size_t)snprintf(err + off, errlen - off, "; this host has no GPU");
	for (int i = 0; i < n && off < errlen; i++)
		off += (size_t)snprintf(err + off, errlen - off, "%s %d %s (%s)", i ? "," : "; GPUs:",
					gpus[i].index, gpus[i].uuid, gpus[i].name);
}

int ftgpu_resolve(const struct ftgpu_info *gpus, int n, const char *spec, char *err, size_t errlen)
{
	char head[160];
	long idx;
	if (!spec || !*spec) {
		list_gpus(gpus, n, err, errlen, "empty --gpu");
		return -ENODEV;
	}
	if (ftstr_parse_long(spec, 0, 1 << 20, &idx) == 0) {
		for (int i = 0; i < n; i++)
			if (gpus[i].index == idx)
				return i;
		snprintf(head, sizeof head, "no GPU with index %ld", idx);
		list_gpus(gpus, n, err, errlen, head);
		return -ENODEV;
	}
	const char *want = skip_prefix(spec);
	size_t wl = strlen(want);
	int found = -1, matches = 0;
	for (int i = 0; i < n; i++) {
		const char *have = skip_prefix(gpus[i].uuid);
		if (strcasecmp(have, want) == 0)
			return i;
		if (wl >= 1 && strncasecmp(have, want, wl) == 0) {
			found = i;
			matches++;
		}
	}
	if (matches == 1)
		return found;
	snprintf(head, sizeof head, matches ? "GPU prefix '%.64s' is ambiguous" : "no GPU matches '%.64s'", spec);
	list_gpus(gpus, n, err, errlen, head);
	return matches ? -EINVAL : -ENODEV;
}

json_t *ftgpu_json(const struct ftgpu_info *g)
{
	json_t *link = json_pack("{s:i,s:i,s:i,s:i,s:f,s:f}", "gen_current", g->link_gen_cur,
				 "gen_max", g->link_gen_max, "width_current", g->link_width_cur,
				 "width_max", g->link_width_max, "theoretical_gbs",
				 ftgpu_link_gbs(g->link_gen_cur, g->link_width_cur), "theoretical_max_gbs",
				 ftgpu_link_gbs(g->link_gen_max, g->link_width_max));
	char cc[16];
	snprintf(cc, sizeof cc, "%d.%d", g->cc_major, g->cc_minor);
	return json_pack("{s:i,s:s,s:s,s:s,s:I,s:s,s:i,s:s,s:i,s:i,s:o,s:i}", "index", g->index, "uuid",
			 g->uuid, "name", g->name, "pci_bus_id", g->pci_bus_id, "memory_bytes",
			 (json_int_t)g->mem_total, "compute_capability", cc, "multiprocessors",
			 g->multiprocessors, "driver_version", g->driver_version, "cuda_driver_version",
			 g->cuda_driver_version, "cuda_runtime_version", g->cuda_runtime_version,
			 "pcie_link", link, "numa_node", g->numa_node);
}

int ftgpu_from_json(const json_t *j, struct ftgpu_info *g)
{
	const char *uuid = NULL, *name = "", *bus = "", *cc = "0.0", *dv = "";
	json_int_t mem = 0;
	json_t *link = NULL;
	memset(g, 0, sizeof *g);
	g->numa_node = -1;
	if (json_unpack((json_t *)j, "{s:i,s:s,s?s,s?s,s?I,s?s,s?i,s?s,s?i,s?i,s?o,s?i}", "index",
			&g->index, "uuid", &uuid, "name", &name, "pci_bus_id", &bus, "memory_bytes", &mem,
			"compute_capability", &cc, "multiprocessors", &g->multiprocessors,
			"driver_version", &dv, "cuda_driver_version", &g->cuda_driver_version,
			"cuda_runtime_version", &g->cuda_runtime_version, "pcie_link", &link,
			"numa_node", &g->numa_node) < 0)
		return -EINVAL;
	snprintf(g->uuid, sizeof g->uuid, "%s", uuid);
	snprintf(g->name, sizeof g->name, "%s", name);
	snprintf(g->pci_bus_id, sizeof g->pci_bus_id, "%s", bus);
	snprintf(g->driver_version, sizeof g->driver_version, "%s", dv);
	g->mem_total = (size_t)mem;
	if (sscanf(cc, "%d.%d", &g->cc_major, &g->cc_minor) != 2)
		g->cc_major = g->cc_minor = 0;
	if (json_is_object(link))
		json_unpack(link, "{s?i,s?i,s?i,s?i}", "gen_current", &g->link_gen_cur, "gen_max",
			    &g->link_gen_max, "width_current", &g->link_width_cur, "width_max",
			    &g->link_width_max);
	return 0;
}
