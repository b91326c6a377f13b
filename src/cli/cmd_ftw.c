/* ftbench ftw convert MODEL OUT [--shard-gib N] [--workers N] [--chunk-mib N]
 * [--expert-load auto|serial|parallel] [--json]: repack a checkpoint into the FTW format. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "moe/ftw.h"
#include "util/strutil.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: ftbench ftw convert MODEL OUT [--shard-gib X] [--workers N] [--chunk-mib N]\n"
		   "                            [--expert-load auto|serial|parallel] [--json]\n"
		   "  --shard-gib X   shard limit in GiB, a number as in the seed (0.5; whole MiB); --shard-mib N\n");
}

int ftcli_cmd_ftw(int argc, char **argv)
{
	static const struct option opts[] = {
		{"shard-gib", required_argument, NULL, 'g'}, {"shard-mib", required_argument, NULL, 'G'},
		{"workers", required_argument, NULL, 'w'},   {"chunk-mib", required_argument, NULL, 'c'},
		{"expert-load", required_argument, NULL, 'e'}, {"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},            {0}};
	struct ftftw_convert_opts co = {0};
	int json = 0, c;
	long v;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'g':
		case 'G':
			if (ftcli_opt_shard(c == 'g' ? "--shard-gib" : "--shard-mib", optarg, &co.shard_limit) < 0)
				return FTCLI_EXIT_USAGE;
			break;
		case 'w':
			if (ftstr_parse_long(optarg, 1, 256, &v) < 0) {
				ftcli_error("--workers: '%s' is not a number in 1..256", optarg);
				return FTCLI_EXIT_USAGE;
			}
			co.load.workers = (int)v;
			break;
		case 'c':
			if (ftstr_parse_long(optarg, 1, 1024, &v) < 0) {
				ftcli_error("--chunk-mib: '%s' is not a number in 1..1024", optarg);
				return FTCLI_EXIT_USAGE;
			}
			co.load.chunk_bytes = (size_t)v << 20;
			break;
		case 'e':
			if (ftload_parse_mode(optarg, &co.load.mode) < 0) {
				ftcli_error("--expert-load: '%s' is not auto, serial or parallel", optarg);
				return FTCLI_EXIT_USAGE;
			}
			break;
		case 'j': json = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return FTCLI_EXIT_USAGE;
		}
	}
	if (argc - optind != 3 || strcmp(argv[optind], "convert")) {
		usage(stderr);
		return FTCLI_EXIT_USAGE;
	}
	const char *model = argv[optind + 1], *out = argv[optind + 2];
	struct ftreport rep = ftcli_reporter();
	co.load.rep = &rep;
	if (json)
		ftcli_set_quiet(1);
	struct ftftw_convert_stats st;
	char err[1024];
	int r = ftftw_convert(model, out, &co, &st, err, sizeof err);
	if (r < 0) {
		ftcli_error("%s", err);
		return r == -ENOTSUP || r == -EINVAL ? FTCLI_EXIT_FAIL : FTCLI_EXIT_FAIL;
	}
	json_t *res = json_pack("{s:s,s:s,s:f,s:f,s:f,s:I,s:i,s:s}", "model", model, "out", out, "convert_s", st.total_s,
				"load_s", st.load_s, "write_s", st.write_s, "bytes_written", (json_int_t)st.bytes_written,
				"shards", st.nshards, "loader", st.load.loader);
	ftcli_result(res);
	if (json)
		ftcli_print_json(res);
	else
		printf("%s -> %s: %d shard(s), %.2f GiB in %.2f s (read %.2f s with the %s loader, write %.2f s)\n", model,
		       out, st.nshards, st.bytes_written / 1073741824.0, st.total_s, st.load_s, st.load.loader, st.write_s);
	json_decref(res);
	return 0;
}
