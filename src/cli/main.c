/* ftbench: the CLI and the daemon's job worker. Dispatch by table. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/flags.h"

static const struct ftcli_cmd commands[] = {
	{"bw", "host bandwidth profile: CPU/PCIe ceilings, gather vs CPU MoE, offload/hybrid", ftcli_cmd_bw, &ftcli_flags_bw},
	{"cache-copy", "slot-cache LRU + gather cost per decode layer (batch x miss rate)", ftcli_cmd_cache_copy,
	 &ftcli_flags_cache_copy},
	{"cpu-moe", "CPU MoE executor throughput per format and ISA", ftcli_cmd_cpu_moe, &ftcli_flags_cpu_moe},
	{"load-weights", "expert-bank loading: serial vs parallel O_DIRECT vs FTW", ftcli_cmd_load_weights, &ftcli_flags_load_weights},
	{"replay", "the engine's MoE decode step replayed per cache size x routing: offload vs hybrid, best f", ftcli_cmd_replay,
	 &ftcli_flags_replay},
	{"decode", "client-side decode tok/s, TTFT, event gaps against an OpenAI server", ftcli_cmd_decode, &ftcli_flags_decode},
	{"gpus", "list CUDA devices (PCI bus order, UUID, PCIe link)", ftcli_cmd_gpus, &ftcli_flags_gpus},
	{"cpu", "describe the host CPU (cores, NUMA, ISA)", ftcli_cmd_cpu, &ftcli_flags_cpu},
	{"profile", "profile path|show|recommend FORMAT|fetch-fraction FORMAT", ftcli_cmd_profile, &ftcli_flags_profile},
	{"make-checkpoint", "write a synthetic MoE checkpoint (safetensors) in a real layout", ftcli_cmd_make_checkpoint,
	 &ftcli_flags_make_checkpoint},
	{"ftw", "ftw convert MODEL OUT: repack a checkpoint into the FTW format", ftcli_cmd_ftw, &ftcli_flags_ftw},
	{"submit", "submit a job to ftbenchd (--wait to follow it)", ftcli_cmd_submit, &ftcli_flags_submit},
	{"jobs", "list ftbenchd jobs", ftcli_cmd_jobs, &ftcli_flags_jobs},
	{"wait", "follow an ftbenchd job until it ends", ftcli_cmd_wait, &ftcli_flags_wait},
	{"cancel", "cancel an ftbenchd job", ftcli_cmd_cancel, &ftcli_flags_cancel},
	{"health", "is the node's profile fit to use (Slurm/NHC, node-problem-detector exit codes)", ftcli_cmd_health,
	 &ftcli_flags_health},
	{"flags", NULL, ftcli_cmd_flags},
};
#define NCMDS (sizeof commands / sizeof commands[0])

/* ftbench flags [COMMAND...]: the option tables of the commands (all, or those named) as one
 * JSON document {"commands": [{"command", "flags": [...]}...]} (flags.h's ftflags_json). */
int ftcli_cmd_flags(int argc, char **argv)
{
	int named = 0;
	for (int k = 1; k < argc; k++) {
		size_t i = 0;
		if (!strcmp(argv[k], "--json"))
			continue; /* the only output there is */
		while (i < NCMDS && strcmp(argv[k], commands[i].name))
			i++;
		if (i == NCMDS || !commands[i].flags) {
			ftcli_error("'%s' is not a command with an option table", argv[k]);
			return FTCLI_EXIT_USAGE;
		}
		named++;
	}
	json_t *all = json_array();
	for (size_t i = 0; i < NCMDS; i++) {
		int want = !named;
		for (int k = 1; k < argc; k++)
			want |= !strcmp(argv[k], commands[i].name);
		if (want && commands[i].flags)
			json_array_append_new(all, ftflags_json(commands[i].flags));
	}
	json_t *o = json_pack("{s:o}", "commands", all);
	ftcli_print_json(o);
	json_decref(o);
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: ftbench COMMAND [options]   (ftbench COMMAND --help for its options)\n\n");
	for (size_t i = 0; i < NCMDS; i++)
		if (commands[i].summary)
			fprintf(f, "  %-16s %s\n", commands[i].name, commands[i].summary);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return FTCLI_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("ftbench %s\n", FT_VERSION);
		return 0;
	}
	for (size_t i = 0; i < NCMDS; i++)
		if (!strcmp(argv[1], commands[i].name)) {
			ftcli_prog = commands[i].name;
			return commands[i].run(argc - 1, argv + 1);
		}
	fprintf(stderr, "ftbench: unknown command '%s'\n\n", argv[1]);
	usage(stderr);
	return FTCLI_EXIT_USAGE;
}
