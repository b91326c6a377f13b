/* ftbench gpus [--json] [--output-format F]: every CUDA device in PCI bus order. */
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "hw/gpu.h"

struct gpus_opts {
	enum ftcli_format fmt;
	int procs;
};

static const struct ftflag rows[] = {
	FTF_JSON_ROW(struct gpus_opts, fmt, "the list as JSON on stdout"),
	FTF_FORMAT_ROW(struct gpus_opts, fmt,
		       "table, json (as --json), csv or md: one row per GPU (mem_gib in GiB = 2^30 bytes; "
		       "no GPU: the header row alone)"),
	{"processes", FTF_BOOL, FTF_FIELD(struct gpus_opts, procs),
	 .help = "with --json: each GPU also gets \"processes\", how many processes hold it (the driver's NVML; "
		 "null and \"processes_reason\" when it cannot tell)"},
};

const struct ftflag_cmd ftcli_flags_gpus = {
	"gpus", rows, FTF_COUNT(rows),
	.about = "  every CUDA device in PCI bus order: index, uuid, name, PCI bus id, memory (GiB = 2^30\n"
		 "  bytes), compute capability, PCIe link now/max (gen x width), driver, NUMA node",
};

int ftcli_cmd_gpus(int argc, char **argv)
{
	struct gpus_opts opt = {0};
	struct ftflag_state st;
	int r = ftflags_parse(&ftcli_flags_gpus, argc, argv, &opt, &st);
	if (r)
		return r > 0 ? 0 : FTCLI_EXIT_USAGE;
	ftflags_release(&st);
	enum ftcli_format fmt = opt.fmt;
	struct ftgpu_info *g;
	int n;
	char why[256] = "";
	if (ftcli_gpu_list(&g, &n, why, sizeof why) < 0) {
		ftcli_error("%s", why);
		return FTCLI_EXIT_FAIL;
	}
	if (fmt == FTCLI_FMT_JSON) {
		json_t *arr = json_array();
		for (int i = 0; i < n; i++) {
			json_t *o = ftgpu_json(&g[i]);
			int np = 0;
			char pwhy[256] = "";
			if (opt.procs && ftgpu_processes(g[i].pci_bus_id, &np, pwhy, sizeof pwhy) == 0) {
				json_object_set_new(o, "processes", json_integer(np));
			} else if (opt.procs) {
				json_object_set_new(o, "processes", json_null());
				json_object_set_new(o, "processes_reason", json_string(pwhy));
			}
			json_array_append_new(arr, o);
		}
		json_t *o = json_pack("{s:o}", "gpus", arr);
		if (n == 0)
			json_object_set_new(o, "reason", json_string(why));
		ftcli_print_json(o);
		json_decref(o);
	} else if (fmt == FTCLI_FMT_CSV || fmt == FTCLI_FMT_MD) {
		static const char *const head[] = {"index", "uuid", "name", "pci_bus_id", "mem_gib", "cc",
						   "pcie_now", "pcie_max", "driver", "numa_node"};
		ftcli_print_row(fmt, head, 10, 1);
		for (int i = 0; i < n; i++) {
			char idx[16], mem[32], cc[16], now[16], max[16], numa[16];
			snprintf(idx, sizeof idx, "%d", g[i].index);
			snprintf(mem, sizeof mem, "%.1f", g[i].mem_total / 1073741824.0);
			snprintf(cc, sizeof cc, "%d.%d", g[i].cc_major, g[i].cc_minor);
			snprintf(now, sizeof now, "g%dx%d", g[i].link_gen_cur, g[i].link_width_cur);
			snprintf(max, sizeof max, "g%dx%d", g[i].link_gen_max, g[i].link_width_max);
			snprintf(numa, sizeof numa, "%d", g[i].numa_node);
			const char *row[] = {idx, g[i].uuid, g[i].name, g[i].pci_bus_id, mem, cc, now, max,
					     g[i].driver_version, numa};
			ftcli_print_row(fmt, row, 10, 0);
		}
		if (n == 0)
			ftcli_note("no GPUs: %s", why);
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
