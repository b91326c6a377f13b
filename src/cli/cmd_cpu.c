/* ftbench cpu [--json] [--output-format F]: the host CPU as the benchmarks see it. */
#include <stdio.h>

#include "cli/cli.h"
#include "cli/flags.h"
#include "hw/cpu.h"

struct cpu_cli {
	enum ftcli_format fmt;
};

static const struct ftflag flag_rows[] = {
	FTF_JSON_ROW(struct cpu_cli, fmt, "the same as a JSON object on stdout"),
	FTF_FORMAT_ROW(struct cpu_cli, fmt,
		       "table, json (as --json), csv or md: rows of field, value (llc_mib in MiB = 2^20 bytes, "
		       "memory_gib in GiB = 2^30 bytes)"),
};

const struct ftflag_cmd ftcli_flags_cpu = {
	"cpu", flag_rows, FTF_COUNT(flag_rows),
	.about = "  the host CPU as the benchmarks see it: model, cores, NUMA nodes, caches, ISA tiers",
};

int ftcli_cmd_cpu(int argc, char **argv)
{
	struct cpu_cli o = {0};
	struct ftflag_state fs;
	int pr = ftflags_parse(&ftcli_flags_cpu, argc, argv, &o, &fs);
	if (pr)
		return pr > 0 ? 0 : FTCLI_EXIT_USAGE;
	ftflags_release(&fs);
	enum ftcli_format fmt = o.fmt;
	struct ftcpu_info ci;
	int r = ftcpu_probe(&ci);
	if (r < 0) {
		ftcli_error("probing the CPU failed (errno %d)", -r);
		return FTCLI_EXIT_FAIL;
	}
	char isa[256];
	ftcpu_isa_string(ci.isa, isa, sizeof isa);
	if (fmt == FTCLI_FMT_JSON) {
		json_t *j = ftcpu_json(&ci);
		ftcli_print_json(j);
		json_decref(j);
	} else if (fmt == FTCLI_FMT_CSV || fmt == FTCLI_FMT_MD) {
		char v[6][64];
		snprintf(v[0], sizeof v[0], "%d", ci.physical_cores);
		snprintf(v[1], sizeof v[1], "%d", ci.logical_cpus);
		snprintf(v[2], sizeof v[2], "%d", ci.numa_nodes);
		snprintf(v[3], sizeof v[3], "%.1f", ci.llc_bytes / 1048576.0);
		snprintf(v[4], sizeof v[4], "%.1f", ci.mem_total / 1073741824.0);
		snprintf(v[5], sizeof v[5], "%.1f", ci.mem_available / 1073741824.0);
		const char *const rows[][2] = {{"field", "value"}, {"model", ci.model}, {"physical_cores", v[0]},
					       {"logical_cpus", v[1]}, {"numa_nodes", v[2]}, {"isa", isa},
					       {"llc_mib", v[3]}, {"memory_gib", v[4]}, {"memory_available_gib", v[5]}};
		for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
			ftcli_print_row(fmt, rows[i], 2, i == 0);
	} else {
		printf("model           %s\nphysical cores  %d (logical %d)\nnuma nodes      %d\n"
		       "isa             %s\nllc             %.1f MiB\nmemory          %.1f GiB (available %.1f)\n",
		       ci.model, ci.physical_cores, ci.logical_cpus, ci.numa_nodes, isa,
		       ci.llc_bytes / 1048576.0, ci.mem_total / 1073741824.0, ci.mem_available / 1073741824.0);
	}
	ftcpu_release(&ci);
	return 0;
}
