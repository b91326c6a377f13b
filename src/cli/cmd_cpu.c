/* ftbench cpu [--json] [--output-format F]: the host CPU as the benchmarks see it. */
#include <stdio.h>

#include "cli/cli.h"
#include "cli/flags.h"
#include "cli/table.h"
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

/* One row per field: {field, value}, the field's JSON name and its value (llc_mib, memory_gib as
 * plain numbers) in csv and md; the human table shows the label and the value with its unit. */
static const struct ftcol field_cols[] = {
	{"field", "", NULL, -16},
	{"value", "", NULL, 0},
};

static void print_fields(const struct ftcpu_info *ci, const char *isa, enum ftcli_format fmt)
{
	static const struct {
		const char *name, *label, *fmt, *unit;
	} rows[] = {{"model", "model"},
		    {"physical_cores", "physical cores", "%.0f"},
		    {"logical_cpus", "logical cpus", "%.0f"},
		    {"numa_nodes", "numa nodes", "%.0f"},
		    {"isa", "isa"},
		    {"llc_mib", "llc", "%.1f", "MiB"},
		    {"memory_gib", "memory", "%.1f", "GiB"},
		    {"memory_available_gib", "memory available", "%.1f", "GiB"}};
	const double v[] = {0, ci->physical_cores, ci->logical_cpus, ci->numa_nodes, 0,
			    ci->llc_bytes / 1048576.0, ci->mem_total / 1073741824.0, ci->mem_available / 1073741824.0};
	struct fttable t = {field_cols, FTCOL_COUNT(field_cols), fmt};
	if (fmt != FTCLI_FMT_TABLE) /* the human table has no head: its labels say what each line is */
		fttable_head(&t);
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		char num[64], human[96];
		struct ftcell val = FTCELL_S(i == 0 ? ci->model : isa);
		if (rows[i].fmt) {
			snprintf(num, sizeof num, rows[i].fmt, v[i]);
			snprintf(human, sizeof human, "%s%s%s", num, rows[i].unit ? " " : "", rows[i].unit ? rows[i].unit : "");
			val = FTCELL_SH(num, human);
		}
		fttable_row(&t, (struct ftcell[]){FTCELL_SH(rows[i].name, rows[i].label), val});
	}
}

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
	} else {
		print_fields(&ci, isa, fmt);
	}
	ftcpu_release(&ci);
	return 0;
}
