/* ftbench make-checkpoint --arch A --out DIR [--layers N --experts N --hidden N --inter N
 * --shard-mib N --threads N --seed N --json]: a synthetic MoE checkpoint in a real layout. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/flags.h"
#include "moe/ckptgen.h"
#include "util/strutil.h"

struct mk_cli {
	struct ftckpt_opts o;
	long shard_mib;
	enum ftcli_format fmt;
};
#define O(m) FTF_FIELD(struct mk_cli, m)
_Static_assert(FTCKPT_DEFAULT_SHARD == 4096ULL << 20, "the --shard-mib row's default");

static const struct ftflag flag_rows[] = {
	{"arch", FTF_STR, O(o.arch), .meta = "ARCH", .help = "the layout: one of " FTCKPT_ARCHS " (required)"},
	{"out", FTF_STR, O(o.out), .meta = "DIR", .help = "the checkpoint directory, created (required)"},
	{"layers", FTF_INT, O(o.layers), .meta = "N", .lo = 1, .hi = 4096, .def_help = "the arch's small one",
	 .help = "MoE layers"},
	{"experts", FTF_INT, O(o.experts), .meta = "N", .lo = 1, .hi = 65536, .def_help = "the arch's small one",
	 .help = "experts per layer"},
	{"hidden", FTF_INT, O(o.hidden), .meta = "N", .lo = 1, .hi = 65536, .def_help = "the arch's small one",
	 .help = "hidden size"},
	{"inter", FTF_INT, O(o.inter), .meta = "N", .lo = 1, .hi = 65536, .def_help = "the arch's small one",
	 .help = "expert intermediate size"},
	{"shard-mib", FTF_INT, O(shard_mib), .meta = "N", .lo = 1, .hi = 1 << 24, .unit = "MiB", .def = "4096",
	 .help = "a shard closes once it would pass this"},
	{"threads", FTF_INT, O(o.threads), .meta = "N", .lo = 1, .hi = 32, .def_help = "the online CPUs, at most 32",
	 .help = "writer threads"},
	{"seed", FTF_INT, O(o.seed), .meta = "N", .lo = 0, .hi = (double)__LONG_MAX__, .def = "0",
	 .help = "seed of the synthetic weights"},
	FTF_JSON_ROW(struct mk_cli, fmt, "the result as JSON on stdout"),
};

const struct ftflag_cmd ftcli_flags_make_checkpoint = {"make-checkpoint", flag_rows, FTF_COUNT(flag_rows)};

int ftcli_cmd_make_checkpoint(int argc, char **argv)
{
	struct mk_cli c = {0};
	struct ftflag_state fs;
	int r = ftflags_parse(&ftcli_flags_make_checkpoint, argc, argv, &c, &fs);
	if (r)
		return r > 0 ? 0 : FTCLI_EXIT_USAGE;
	ftflags_release(&fs);
	struct ftckpt_opts o = c.o;
	int json = c.fmt == FTCLI_FMT_JSON;
	o.shard_bytes = (uint64_t)c.shard_mib << 20;
	if (!o.arch || !o.out) {
		ftcli_error("--arch and --out are required");
		ftflags_help(&ftcli_flags_make_checkpoint, stderr);
		return FTCLI_EXIT_USAGE;
	}
	struct ftreport rep = ftcli_reporter();
	o.rep = &rep;
	if (json)
		ftcli_set_quiet(1);
	struct ftckpt_stats st;
	char err[1024];
	r = ftckpt_write(&o, &st, err, sizeof err);
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
