/* ftbench make-checkpoint --arch A --out DIR [--layers N --experts N --hidden N --inter N
 * --shard-mib N --threads N --seed N --json]: a synthetic MoE checkpoint in a real layout. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "moe/ckptgen.h"
#include "util/strutil.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: ftbench make-checkpoint --arch %s --out DIR\n"
		   "         [--layers N] [--experts N] [--hidden N] [--inter N] [--shard-mib N]\n"
		   "         [--threads N] [--seed N] [--json]\n", ftckpt_archs());
}

int ftcli_cmd_make_checkpoint(int argc, char **argv)
{
	static const struct option opts[] = {
		{"arch", required_argument, NULL, 'a'},    {"out", required_argument, NULL, 'o'},
		{"layers", required_argument, NULL, 'L'},  {"experts", required_argument, NULL, 'E'},
		{"hidden", required_argument, NULL, 'H'},  {"inter", required_argument, NULL, 'I'},
		{"shard-mib", required_argument, NULL, 's'}, {"threads", required_argument, NULL, 't'},
		{"seed", required_argument, NULL, 'S'},    {"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},          {0}};
	struct ftckpt_opts o = {0};
	long v;
	int json = 0, c;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		const char *name = NULL;
		long lo = 1, hi = 65536, *dst = NULL;
		switch (c) {
		case 'a': o.arch = optarg; continue;
		case 'o': o.out = optarg; continue;
		case 'j': json = 1; continue;
		case 'h': usage(stdout); return 0;
		case 'L': name = "--layers", dst = &o.layers, hi = 4096; break;
		case 'E': name = "--experts", dst = &o.experts; break;
		case 'H': name = "--hidden", dst = &o.hidden; break;
		case 'I': name = "--inter", dst = &o.inter; break;
		case 's':
			if (ftstr_parse_long(optarg, 1, 1 << 24, &v) < 0) {
				ftcli_error("--shard-mib: '%s' is not a number in 1..16777216", optarg);
				return FTCLI_EXIT_USAGE;
			}
			o.shard_bytes = (uint64_t)v << 20;
			continue;
		case 't':
			if (ftstr_parse_long(optarg, 1, 32, &v) < 0) {
				ftcli_error("--threads: '%s' is not a number in 1..32", optarg);
				return FTCLI_EXIT_USAGE;
			}
			o.threads = (int)v;
			continue;
		case 'S':
			if (ftstr_parse_long(optarg, 0, __LONG_MAX__, &v) < 0) {
				ftcli_error("--seed: '%s' is not a non-negative number", optarg);
				return FTCLI_EXIT_USAGE;
			}
			o.seed = (uint64_t)v;
			continue;
		default: usage(stderr); return FTCLI_EXIT_USAGE;
		}
		if (ftstr_parse_long(optarg, lo, hi, dst) < 0) {
			ftcli_error("%s: '%s' is not a number in %ld..%ld", name, optarg, lo, hi);
			return FTCLI_EXIT_USAGE;
		}
	}
	if (optind < argc || !o.arch || !o.out) {
		if (optind < argc)
			ftcli_error("unexpected argument '%s'", argv[optind]);
		else
			ftcli_error("--arch and --out are required");
		usage(stderr);
		return FTCLI_EXIT_USAGE;
	}
	struct ftreport rep = ftcli_reporter();
	o.rep = &rep;
	if (json)
		ftcli_set_quiet(1);
	struct ftckpt_stats st;
	char err[1024];
	int r = ftckpt_write(&o, &st, err, sizeof err);
	if (r < 0) {
		ftcli_error("%s", err);
		return r == -EINVAL || r == -EEXIST ? FTCLI_EXIT_USAGE : FTCLI_EXIT_FAIL;
	}
	json_t *res = json_pack("{s:s,s:s,s:I,s:I,s:i,s:I,s:f}", "arch", o.arch, "out", o.out, "file_bytes",
				(json_int_t)st.file_bytes, "expert_bytes", (json_int_t)st.expert_bytes, "shards",
				st.nshards, "tensors", (json_int_t)st.ntensors, "seconds", st.seconds);
	ftcli_result(res);
	if (json)
		ftcli_print_json(res);
	else
		printf("%s: %s checkpoint, %d shard(s), %zu tensors, %.2f GiB (experts %.2f GiB) in %.1f s (%.2f GiB/s)\n",
		       o.out, o.arch, st.nshards, st.ntensors, st.file_bytes / 1073741824.0,
		       st.expert_bytes / 1073741824.0, st.seconds, st.file_bytes / 1073741824.0 / (st.seconds > 0 ? st.seconds : 1));
	json_decref(res);
	return 0;
}
