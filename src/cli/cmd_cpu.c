/* ftbench cpu [--json]: the host CPU as the benchmarks see it. */
#include <getopt.h>
#include <stdio.h>

#include "cli/cli.h"
#include "hw/cpu.h"

int cmd_cpu(int argc, char **argv)
{
	static const struct option opts[] = {
		{"json", no_argument, NULL, 'j'}, {"help", no_argument, NULL, 'h'}, {0}};
	int json = 0, c;
	while ((c = getopt_long(argc, argv, "jh", opts, NULL)) != -1) {
		if (c == 'j') {
			json = 1;
		} else {
			fprintf(c == 'h' ? stdout : stderr,
				"usage: ftbench cpu [--json]\n"
				"  the host CPU as the benchmarks see it: model, cores, NUMA nodes, caches, ISA tiers\n"
				"  --json  the same as a JSON object on stdout\n");
			return c == 'h' ? 0 : FTCLI_EXIT_USAGE;
		}
	}
	struct ftcpu_info ci;
	int r = ftcpu_probe(&ci);
	if (r < 0) {
		ftcli_error("probing the CPU failed (errno %d)", -r);
		return FTCLI_EXIT_FAIL;
	}
	if (json) {
		json_t *j = ftcpu_json(&ci);
		ftcli_print_json(j);
		json_decref(j);
	} else {
		char isa[256];
		ftcpu_isa_string(ci.isa, isa, sizeof isa);
		printf("model           %s\nphysical cores  %d (logical %d)\nnuma nodes      %d\n"
		       "isa             %s\nllc             %.1f MiB\nmemory          %.1f GiB (available %.1f)\n",
		       ci.model, ci.physical_cores, ci.logical_cpus, ci.numa_nodes, isa,
		       ci.llc_bytes / 1048576.0, ci.mem_total / 1073741824.0, ci.mem_available / 1073741824.0);
	}
	ftcpu_release(&ci);
	return 0;
}
