/* topo: PCIe paths and NUMA relations of GPUs from sysfs (see topo.h). */
#include "hw/topo.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hw/cpu.h"
#include "hw/pci.h"

#define MAX_DEPTH 16

const char *fttopo_rel_name(enum fttopo_rel r)
{
	switch (r) {
	case FTTOPO_SAME_SWITCH: return "same_switch";
	case FTTOPO_SAME_ROOT_PORT: return "same_root_port";
	case FTTOPO_SAME_HOST_BRIDGE: return "same_host_bridge";
	case FTTOPO_ACROSS_HOST_BRIDGES: return "across_host_bridges";
	case FTTOPO_SAME_NODE: return "same_node";
	case FTTOPO_ACROSS_NODES: return "across_nodes";
	case FTTOPO_ACROSS_SOCKETS: return "across_sockets";
	case FTTOPO_UNKNOWN: break;
	}
	return "unknown";
}

/* "0000:18:00.0": a PCI device name (a path component below a host bridge). */
static int is_pci_name(const char *s, size_t n)
{
	if (n != 12 || s[4] != ':' || s[7] != ':' || s[10] != '.')
		return 0;
	for (size_t i = 0; i < n; i++)
		if (i != 4 && i != 7 && i != 10 && !isxdigit((unsigned char)s[i]))
			return 0;
	return 1;
}

/* The device's path below /sys/devices: the host bridge ("pci0000:00") into bridge and the PCI
 * devices from the root port down to the device itself into comp[] (count returned), or -errno. */
static int pci_path(const char *root, const char *bus_id, char *bridge, size_t bn, char comp[][16])
{
	char id[32], link[PATH_MAX], real[PATH_MAX];
	if (ftpci_sysfs_id(bus_id, id, sizeof id) < 0)
		return -EINVAL;
	snprintf(link, sizeof link, "%s/sys/bus/pci/devices/%s", root ? root : "", id);
	if (!realpath(link, real))
		return -errno;
	const char *p = strstr(real, "/devices/");
	if (!p)
		return -EINVAL;
	p += 9;
	size_t l = strcspn(p, "/");
	if (strncmp(p, "pci", 3) || l >= bn)
		return -EINVAL;
	memcpy(bridge, p, l);
	bridge[l] = '\0';
	int n = 0;
	for (p += l; *p == '/';) {
		p++;
		l = strcspn(p, "/");
		if (!is_pci_name(p, l) || n >= MAX_DEPTH)
			break;
		memcpy(comp[n], p, l);
		comp[n][l] = '\0';
		for (char *c = comp[n]; *c; c++)
			*c = (char)tolower((unsigned char)*c);
		n++;
		p += l;
	}
	return n > 0 && !strcmp(comp[n - 1], id) ? n : -EINVAL;
}

int fttopo_node_package(const char *root, int node)
{
	char path[PATH_MAX], buf[1024];
	cpu_set_t set;
	if (node < 0)
		return -1;
	snprintf(path, sizeof path, "%s/sys/devices/system/node/node%d/cpulist", root ? root : "", node);
	FILE *f = fopen(path, "re");
	int ok = f && fgets(buf, sizeof buf, f) && ftcpu_parse_cpulist(buf, &set) == 0;
	if (f)
		fclose(f);
	if (!ok)
		return -1;
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &set)) {
			snprintf(path, sizeof path, "%s/sys/devices/system/cpu/cpu%d/topology/physical_package_id",
				 root ? root : "", c);
			long v = -1;
			f = fopen(path, "re");
			if (f) {
				if (fscanf(f, "%ld", &v) != 1)
					v = -1;
				fclose(f);
			}
			return (int)v;
		}
	return -1;
}

enum fttopo_rel fttopo_relation(const char *root, const char *bus_a, int node_a, const char *bus_b, int node_b)
{
	char ba[64], bb[64], ca[MAX_DEPTH][16], cb[MAX_DEPTH][16];
	int na = pci_path(root, bus_a, ba, sizeof ba, ca), nb = pci_path(root, bus_b, bb, sizeof bb, cb);
	if (na < 0 || nb < 0)
		return FTTOPO_UNKNOWN;
	if (!strcmp(ba, bb)) {
		/* common bridges above both devices (the devices themselves are the last components) */
		int k = 0;
		while (k < na - 1 && k < nb - 1 && !strcmp(ca[k], cb[k]))
			k++;
		return k >= 2 ? FTTOPO_SAME_SWITCH : k == 1 ? FTTOPO_SAME_ROOT_PORT : FTTOPO_SAME_HOST_BRIDGE;
	}
	if (node_a < 0 || node_b < 0)
		return FTTOPO_ACROSS_HOST_BRIDGES;
	if (node_a == node_b)
		return FTTOPO_SAME_NODE;
	int pa = fttopo_node_package(root, node_a), pb = fttopo_node_package(root, node_b);
	return pa >= 0 && pa == pb ? FTTOPO_ACROSS_NODES : FTTOPO_ACROSS_SOCKETS;
}

json_t *fttopo_gpu_json(const char *root, const struct ftgpu_info *gpus, int n, int self)
{
	const struct ftgpu_info *g = &gpus[self];
	json_t *peers = json_array();
	for (int i = 0; i < n; i++) {
		if (i == self)
			continue;
		enum fttopo_rel r = fttopo_relation(root, g->pci_bus_id, g->numa_node, gpus[i].pci_bus_id,
						    gpus[i].numa_node);
		json_array_append_new(peers, json_pack("{s:i,s:s,s:s,s:i,s:s}", "index", gpus[i].index, "uuid",
						       gpus[i].uuid, "pci_bus_id", gpus[i].pci_bus_id, "numa_node",
						       gpus[i].numa_node, "relation", fttopo_rel_name(r)));
	}
	int pkg = fttopo_node_package(root, g->numa_node);
	return json_pack("{s:i,s:o,s:o}", "numa_node", g->numa_node, "package",
			 pkg >= 0 ? json_integer(pkg) : json_null(), "peers", peers);
}
