/* topo: where GPUs sit relative to each other and to the CPUs, from sysfs: the PCIe path
 * between two devices (same switch, same root port, same host bridge, or across host bridges,
 * then NUMA nodes and sockets), and a GPU's place among the host's GPUs as profile JSON.
 * Every function takes the sysfs root (NULL or "": the real /sys; tests pass a fake tree). */
#ifndef FT_HW_TOPO_H
#define FT_HW_TOPO_H
#include <jansson.h>

#include "hw/gpu.h"

enum fttopo_rel {
	FTTOPO_UNKNOWN = 0,         /* a device's sysfs entry is missing */
	FTTOPO_SAME_SWITCH,         /* a PCIe switch below the root port is the nearest common bridge */
	FTTOPO_SAME_ROOT_PORT,      /* the nearest common bridge is one root port (several switch levels) */
	FTTOPO_SAME_HOST_BRIDGE,    /* different root ports of one host bridge (PCI root bus) */
	FTTOPO_ACROSS_HOST_BRIDGES, /* different host bridges, NUMA nodes unknown */
	FTTOPO_SAME_NODE,           /* different host bridges of one NUMA node */
	FTTOPO_ACROSS_NODES,        /* different NUMA nodes of one socket */
	FTTOPO_ACROSS_SOCKETS,      /* different sockets (or nodes whose socket is unknown) */
};

/* "same_switch", "same_root_port", ... (static string). */
const char *fttopo_rel_name(enum fttopo_rel r);

/* The relation of two PCI devices given as nvidia-smi bus ids ("00000000:18:00.0") with their
 * NUMA nodes (-1 unknown). */
enum fttopo_rel fttopo_relation(const char *root, const char *bus_a, int node_a, const char *bus_b,
				int node_b);

/* The socket (physical_package_id of the node's first CPU) of NUMA node `node`; -1 unknown. */
int fttopo_node_package(const char *root, int node);

/* GPU gpus[self] among gpus[n] (new reference): {"numa_node", "package", "peers": [{"index",
 * "uuid", "pci_bus_id", "numa_node", "relation"}, ...]} (the others, in order). */
json_t *fttopo_gpu_json(const char *root, const struct ftgpu_info *gpus, int n, int self);
#endif
