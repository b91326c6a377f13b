/* ftbench gpus [--json] [--output-format F]: every CUDA device in PCI bus order. */
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "cli/flags.h"
#include "cli/table.h"
#include "hw/gpu.h"

struct gpus_opts {
	enum ftcli_format fmt;
	int procs;
};

static const struct ftflag flag_rows[] = {
	FTF_JSON_ROW(struct gpus_opts, fmt, "the list as JSON on stdout"),
	FTF_FORMAT_ROW(struct gpus_opts, fmt,
		       "table, json (as --json), csv or md: one row per GPU (mem_gib in GiB = 2^30 bytes; "
		       "no GPU: the header row alone)"),
	{"processes", FTF_BOOL, FTF_FIELD(struct gpus_opts, procs),
	 .help = "with --json: each GPU also gets \"processes\", how many processes hold it (the driver's NVML; "
		 "null and \"processes_reason\" when it cannot tell)"},
};

const struct ftflag_cmd ftcli_flags_gpus = {
	"gpus", flag_rows, FTF_COUNT(flag_rows),
	.about = "  every CUDA device in PCI bus order: index, uuid, name, PCI bus id, memory (GiB = 2^30\n"
		 "  bytes), compute capability, PCIe link now/max (gen x width), driver, NUMA node",
};

/* A GPU's row: the table, csv and md columns. */
static const struct ftcol cols[] = {
	{"index", "idx", NULL, -3, "%.0f"},
	{"uuid", "uuid", NULL, -42},
	{"name", "name", NULL, -24, .prec = 24},
	{"pci_bus_id", "bus id", NULL, -17},
	{"mem_gib", "mem GiB", "GiB", 8, "%.1f"},
	{"cc", "cc", NULL, -4},
	{"pcie_now", "pcie now", NULL, -8},
	{"pcie_max", "pcie max", NULL, -8},
	{"driver", "driver", NULL, -10},
	{"numa_node", "numa", NULL, 0, "%.0f"},
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
	} else if (n == 0 && fmt == FTCLI_FMT_TABLE) {
		printf("no GPUs: %s\n", why);
	} else {
		struct fttable t = {cols, FTCOL_COUNT(cols), fmt};
		fttable_head(&t);
		for (int i = 0; i < n; i++) {
			char cc[16], now[16], max[16];
			snprintf(cc, sizeof cc, "%d.%d", g[i].cc_major, g[i].cc_minor);
			snprintf(now, sizeof now, "g%dx%d", g[i].link_gen_cur, g[i].link_width_cur);
			snprintf(max, sizeof max, "g%dx%d", g[i].link_gen_max, g[i].link_width_max);
			fttable_row(&t, (struct ftcell[]){FTCELL_N(g[i].index), FTCELL_S(g[i].uuid), FTCELL_S(g[i].name),
							  FTCELL_S(g[i].pci_bus_id), FTCELL_N(g[i].mem_total / 1073741824.0),
							  FTCELL_S(cc), FTCELL_S(now), FTCELL_S(max),
							  FTCELL_S(g[i].driver_version), FTCELL_N(g[i].numa_node)});
		}
		if (n == 0)
			ftcli_note("no GPUs: %s", why);
	}
	free(g);
	return 0;
}
