/* ftbench gpus [--json]: every CUDA device in PCI bus order. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "hw/gpu.h"

int cmd_gpus(int argc, char **argv)
{
	static const struct option opts[] = {
		{"json", no_argument, NULL, 'j'}, {"help", no_argument, NULL, 'h'}, {0}};
	int json = 0, c;
	while ((c = getopt_long(argc, argv, "jh", opts, NULL)) != -1) {
		if (c == 'j') {
			json = 1;
		} else {
			fprintf(c == 'h' ? stdout : stderr,
				"usage: ftbench gpus [--json]\n"
				"  every CUDA device in PCI bus order: index, uuid, name, PCI bus id, memory (GiB = 2^30\n"
				"  bytes), compute capability, PCIe link now/max (gen x width), driver, NUMA node\n"
				"  --json  the list as a JSON array on stdout\n");
			return c == 'h' ? 0 : FTCLI_EXIT_USAGE;
		}
	}
	struct ftgpu_info *g;
	int n;
	char why[256] = "";
	if (ftgpu_list(&g, &n, why, sizeof why) < 0) {
		ftcli_error("%s", why);
		return FTCLI_EXIT_FAIL;
	}
	if (json) {
		json_t *arr = json_array();
		for (int i = 0; i < n; i++)
			json_array_append_new(arr, ftgpu_json(&g[i]));
		json_t *o = json_pack("{s:o}", "gpus", arr);
		if (n == 0)
			json_object_set_new(o, "reason", json_string(why));
		ftcli_print_json(o);
		json_decref(o);
	} else if (n == 0) {
		printf("no GPUs: %s\n", why);
	} else {
		printf("%-3s %-42s %-24s %-17s %8s %4s %-14s %-10s %s\n", "idx", "uuid", "name", "bus id",
		       "mem GiB", "cc", "pcie now/max", "driver", "numa");
		for (int i = 0; i < n; i++) {
			char link[32];
			snprintf(link, sizeof link, "g%dx%d/g%dx%d", g[i].link_gen_cur, g[i].link_width_cur,
				 g[i].link_gen_max, g[i].link_width_max);
			printf("%-3d %-42s %-24.24s %-17s %8.1f %d.%d  %-14s %-10s %d\n", g[i].index, g[i].uuid,
			       g[i].name, g[i].pci_bus_id, g[i].mem_total / 1073741824.0, g[i].cc_major,
			       g[i].cc_minor, link, g[i].driver_version, g[i].numa_node);
		}
	}
	free(g);
	return 0;
}
