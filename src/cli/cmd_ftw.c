/* ftbench ftw convert MODEL OUT [--shard-gib N] [--workers N] [--chunk-mib N]
 * [--expert-load auto|serial|parallel] [--json]: repack a checkpoint into the FTW format. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/flags.h"
#include "moe/ftw.h"
#include "moe/loader.h"
#include "util/strutil.h"

struct ftw_cli {
	struct ftftw_convert_opts co;
	int chunk_mib;
	enum ftcli_format fmt;
};
_Static_assert(FTLOAD_DEFAULT_CHUNK == 8u << 20 && FTFTW_DEFAULT_SHARD_LIMIT == 8ULL << 30,
	       "FTCLI_LOADER_ROWS' defaults of --chunk-mib and --shard-gib");
_Static_assert(FTLOAD_AUTO == 0 && FTLOAD_SERIAL == 1 && FTLOAD_PARALLEL == 2, "--expert-load's choices");

static const struct ftflag flag_rows[] = {
	FTCLI_LOADER_ROWS(struct ftw_cli, co.load.workers, chunk_mib, co.shard_limit, co.load.mode),
	FTF_JSON_ROW(struct ftw_cli, fmt, "the result as JSON on stdout"),
};

const struct ftflag_cmd ftcli_flags_ftw = {"ftw", flag_rows, FTF_COUNT(flag_rows), .args = "convert MODEL OUT",
					   .min_args = 3, .max_args = 3,
					   .about = "  repack the checkpoint MODEL into the FTW format in OUT"};

int ftcli_cmd_ftw(int argc, char **argv)
{
	struct ftw_cli c = {0};
	struct ftflag_state fs;
	int r = ftflags_parse(&ftcli_flags_ftw, argc, argv, &c, &fs);
	if (r)
		return r > 0 ? 0 : FTCLI_EXIT_USAGE;
	struct ftftw_convert_opts co = c.co;
	int json = c.fmt == FTCLI_FMT_JSON;
	co.load.chunk_bytes = (size_t)c.chunk_mib << 20;
	argv = fs.argv;
	int optind = fs.pos;
	ftflags_release(&fs); /* argv: no joined lists here, the strings are the caller's */
	if (strcmp(argv[optind], "convert")) {
		ftcli_error("unknown subcommand '%s' (ftw convert MODEL OUT)", argv[optind]);
		return FTCLI_EXIT_USAGE;
	}
	const char *model = argv[optind + 1], *out = argv[optind + 2];
	struct ftreport rep = ftcli_reporter();
	co.load.rep = &rep;
	if (json)
		ftcli_set_quiet(1);
	struct ftftw_convert_stats st;
	char err[1024];
	r = ftftw_convert(model, out, &co, &st, err, sizeof err);
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
