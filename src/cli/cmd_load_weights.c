/* ftbench load-weights --model DIR: expert-bank load time, serial vs parallel O_DIRECT vs FTW
 * (reference §7). Each mode runs in a child (`--worker MODE --result-fd N`, hidden) that
 * reports in the worker protocol on fd N. Exit 1 when a mode fails or a checksum differs (BAD). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bench/load_weights.h"
#include "moe/ftw.h"
#include "moe/loader.h"
#include "cli/cli.h"
#include "util/strutil.h"

/* --modes as the seed takes it: known entries kept, an unknown one skipped with a note. */
static int parse_modes(const char *arg, unsigned *modes)
{
	char **items;
	int n = ftstr_split(arg, &items, 64);
	if (n < 0) {
		ftcli_error("--modes: '%s' is not a list of baseline, parallel, ftw, auto", arg);
		return -1;
	}
	*modes = 0;
	int known = 0;
	for (int i = 0; i < n; i++) {
		unsigned m;
		if (ftlw_parse_modes(items[i], &m) == 0) {
			*modes |= m;
			known++;
		}
	}
	for (int i = 0; i < n && known; i++) {
		unsigned m;
		if (ftlw_parse_modes(items[i], &m) < 0)
			ftcli_note("--modes: unknown mode '%s' skipped (modes: baseline, parallel, ftw, auto)", items[i]);
	}
	ftstr_free_list(items, n);
	if (!known) {
		/* nothing to run but the reference: a typo, said rather than run */
		ftcli_error("--modes: '%s' names no mode (baseline, parallel, ftw, auto)", arg);
		return -1;
	}
	return 0;
}

/* --output-format csv|md: one line per mode, the figures as measured (seconds, 10^9 B/s, bytes). */
static void print_rows(const json_t *res, enum ftcli_format fmt)
{
	static const char *const head[] = {"mode", "loader", "runs", "load_s", "load_s_min", "load_s_max",
					   "read_gbs", "read_gbs_min", "read_gbs_max", "peak_rss_bytes", "speedup",
					   "bytes", "direct", "checksum"};
	enum { NCOL = sizeof head / sizeof *head };
	static const char *const real[] = {"load_s", "load_s_min", "load_s_max", "read_gbs", "read_gbs_min",
					   "read_gbs_max"};
	ftcli_print_row(fmt, head, NCOL, 1);
	size_t i;
	json_t *row;
	json_array_foreach(json_object_get(res, "rows"), i, row) {
		char num[6][32], runs[16], rss[32], speed[32], bytes[32];
		for (int k = 0; k < 6; k++)
			snprintf(num[k], sizeof num[k], "%.6g", json_real_value(json_object_get(row, real[k])));
		snprintf(runs, sizeof runs, "%zu", json_array_size(json_object_get(row, "load_s_runs")));
		snprintf(rss, sizeof rss, "%lld", json_integer_value(json_object_get(row, "peak_rss_bytes")));
		snprintf(speed, sizeof speed, "%.4g", json_real_value(json_object_get(row, "speedup")));
		snprintf(bytes, sizeof bytes, "%lld", json_integer_value(json_object_get(row, "bytes")));
		const char *cells[NCOL] = {json_string_value(json_object_get(row, "mode")),
					   json_string_value(json_object_get(row, "loader")), runs, num[0], num[1], num[2],
					   num[3], num[4], num[5], rss, speed, bytes,
					   json_is_true(json_object_get(row, "direct")) ? "yes" : "no",
					   ftlw_checksum_word(row, (int)i)};
		ftcli_print_row(fmt, cells, NCOL, 0);
	}
}

struct lw_cli {
	struct ftlw_opts o;
	const char *modes, *worker;
	int keep_ftw, no_drop, chunk_mib;
	enum ftcli_format fmt;
};
#define O(m) FTF_FIELD(struct lw_cli, m)
_Static_assert(FTLOAD_DEFAULT_CHUNK == 8u << 20 && FTFTW_DEFAULT_SHARD_LIMIT == 8ULL << 30,
	       "FTCLI_LOADER_ROWS' defaults of --chunk-mib and --shard-gib");
_Static_assert(FTLOAD_AUTO == 0 && FTLOAD_SERIAL == 1 && FTLOAD_PARALLEL == 2, "--expert-load's choices");

static const struct ftflag rows[] = {
	{"model", FTF_STR, O(o.model), .meta = "DIR", .help = "the safetensors checkpoint to load (required)"},
	{"modes", FTF_STR, O(modes), .meta = "LIST", .flags = FTF_SEED_LIST, .def = "baseline,parallel,ftw",
	 .help = "loaders timed, each once after the page cache of its files is dropped: baseline (serial), "
		 "parallel, ftw (the FTW copy), auto. Commas or spaces; an unknown mode is skipped with a note "
		 "(as the seed does), a list without a known mode is an error."},
	FTCLI_LOADER_ROWS(struct lw_cli, o.workers, chunk_mib, o.shard_bytes, o.expert_load),
	{"ftw-dir", FTF_STR, O(o.ftw_dir), .meta = "DIR", .def_help = "/var/tmp/ftw_<model name>",
	 .help = "where the FTW copy goes (above)"},
	{"keep-ftw", FTF_BOOL, O(keep_ftw), .help = "keep the FTW copy (a kept one is reused by the next run)"},
	{"no-drop-cache", FTF_BOOL, O(no_drop),
	 .help = "do not evict the page cache before each mode (warm-cache figures)"},
	{"repeat", FTF_INT, O(o.repeat), .meta = "N", .lo = 1, .hi = FTLW_MAX_REPEAT, .def = "1",
	 .help = "runs of each mode, each after the page cache is dropped; load_s and read GB/s are the "
		 "median, with the min and max"},
	FTF_JSON_ROW(struct lw_cli, fmt, "the result as JSON on stdout (the same as --output-format json)"),
	{"output-format", FTF_ENUM, O(fmt), .meta = "F", .choices = "table|json|csv|md", .def = "table",
	 .alias = "format",
	 .help = "table, json, csv or md (csv, md: one line per mode under the JSON names, figures "
		 "unrounded: seconds, 10^9 B/s, bytes)"},
	FTF_RESULT_FD_ROW,
	{"worker", FTF_STR, O(worker), .meta = "MODE", .flags = FTF_HIDDEN,
	 .help = "run one mode and report it on --result-fd (the parent's child)"},
};

const struct ftflag_cmd ftcli_flags_load_weights = {
	"load-weights", rows, FTF_COUNT(rows),
	.about = "  baseline (serial loader) always runs as the reference; the FTW copy goes to --ftw-dir\n"
		 "  (default /var/tmp/ftw_<model name>) when nothing has that name yet, else to a fresh\n"
		 "  ftw-<model name>.XXXXXX inside it (ftw_<model name>.XXXXXX beside the default); it is\n"
		 "  removed with what was written in it unless --keep-ftw (a kept one is reused).",
	.notes = "  read GB/s (JSON read_gbs) is 10^9 bytes per second (read_gibs: the same in 2^30 B/s);\n"
		 "  sizes in MiB/GiB (2^20/2^30 bytes).\n"
		 "  The seed's bench_load_weight_generic.py flags are all accepted with the same names.\n",
};

static int run(struct lw_cli *c);

int ftcli_cmd_load_weights(int argc, char **argv)
{
	struct lw_cli c = {.o = {.drop_cache = 1}};
	struct ftflag_state fs;
	int r = ftflags_parse(&ftcli_flags_load_weights, argc, argv, &c, &fs);
	if (r)
		return r > 0 ? 0 : FTCLI_EXIT_USAGE;
	r = run(&c);
	ftflags_release(&fs);
	return r;
}

static int run(struct lw_cli *c)
{
	struct ftlw_opts o = c->o;
	const char *worker = c->worker;
	enum ftcli_format fmt = c->fmt;
	if (parse_modes(c->modes, &o.modes) < 0)
		return FTCLI_EXIT_USAGE;
	o.chunk_bytes = (size_t)c->chunk_mib << 20;
	o.keep_ftw = c->keep_ftw;
	o.drop_cache = !c->no_drop;
	if (!o.model) {
		ftcli_error("--model DIR is required");
		ftflags_help(&ftcli_flags_load_weights, stderr);
		return FTCLI_EXIT_USAGE;
	}
	struct stat st;
	errno = 0;
	if (stat(o.model, &st) < 0 || !S_ISDIR(st.st_mode)) {
		ftcli_error("--model %s: %s (give a checkpoint directory: config.json + *.safetensors, or an FTW "
			    "directory)", o.model, errno ? strerror(errno) : "not a directory");
		return FTCLI_EXIT_USAGE;
	}
	struct ftreport rep = ftcli_reporter();
	o.rep = &rep;
	char err[1024];
	if (worker) {
		/* child side: one mode, its row or its error on the result fd; the parent reports
		 * progress and says the error (with the mode) */
		if (ftcli_result_fd() < 0) {
			ftcli_error("--worker needs --result-fd N (the parent reads the row there)");
			return FTCLI_EXIT_USAGE;
		}
		ftcli_set_progress_lines(0);
		json_t *row;
		int r = ftlw_worker(worker, &o, &row, err, sizeof err);
		if (r < 0) {
			ftcli_result_error(err);
			return FTCLI_EXIT_FAIL;
		}
		ftcli_result(row);
		json_decref(row);
		return 0;
	}
	if (fmt == FTCLI_FMT_JSON)
		ftcli_set_quiet(1);
	json_t *res;
	int r = ftlw_run(&o, &res, err, sizeof err);
	if (r < 0) {
		ftcli_error("%s", err);
		return r == -EINVAL ? FTCLI_EXIT_USAGE : FTCLI_EXIT_FAIL;
	}
	ftcli_result(res);
	if (fmt == FTCLI_FMT_JSON)
		ftcli_print_json(res);
	else if (fmt == FTCLI_FMT_TABLE)
		ftlw_print_table(res, stdout);
	else
		print_rows(res, fmt);
	int ok = json_is_true(json_object_get(res, "ok"));
	json_decref(res);
	if (!ok) {
		ftcli_error("checksum mismatch (BAD): a loader produced different banks than the baseline");
		return FTCLI_EXIT_FAIL;
	}
	return 0;
}
