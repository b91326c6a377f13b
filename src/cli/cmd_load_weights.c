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
#include "cli/flags.h"
#include "cli/table.h"
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

/* A mode's row: the table, csv and md (csv, md: the figures as measured: seconds, 10^9 B/s,
 * bytes; the table: rounded, the range columns only when each mode ran more than once). */
static const struct ftcol mode_cols[] = {
	{"mode", "mode", NULL, -9},
	{"loader", "loader", NULL, -9},
	{"runs", .fmt = "%.0f"},
	{"load_s", "load_s", "s", 8, "%.3f", "%.6g"},
	{"load_s_min", "  [min", "s", 0, "[%6.3f", "%.6g"},
	{"load_s_max", "    max]", "s", 0, "%7.3f]", "%.6g"},
	{"read_gbs", "read GB/s", "GB/s", 11, "%.2f", "%.6g"},
	{"read_gbs_min", " [min", "GB/s", 0, "[%6.2f", "%.6g"},
	{"read_gbs_max", "    max]", "GB/s", 0, "%7.2f]", "%.6g"},
	{"peak_rss_bytes", "peakRSS", "B", 10, "%.0f"},
	{"speedup", "speedup", NULL, 8, "%7.2fx", "%.4g"},
	{"bytes", "bytes", "B", 14, "%.0f"},
	{"direct"},
	{"checksum", "checksum", NULL, 0, .gap = 1},
};
enum { NMODE = FTCOL_COUNT(mode_cols) };

static void mode_row(const struct fttable *t, const json_t *row, int i)
{
	char rss[32];
	struct ftcell c[NMODE];
	for (int k = 0; k < NMODE; k++)
		c[k] = ftcell_json(json_object_get(row, mode_cols[k].name));
	c[2] = FTCELL_N((double)json_array_size(json_object_get(row, "load_s_runs")));
	snprintf(rss, sizeof rss, "%8.2fGi", json_integer_value(json_object_get(row, "peak_rss_bytes")) / 1073741824.0);
	c[9].h = rss;
	c[12] = FTCELL_S(json_is_true(json_object_get(row, "direct")) ? "yes" : "no");
	c[13] = FTCELL_S(ftlw_checksum_word(row, i));
	fttable_row(t, c);
}

/* The table: what was loaded, the FTW copy, then a row per mode. */
static void print_table(const json_t *r)
{
	printf("model %s: %s, %lld MoE layers x %lld experts, banks %.2f GiB\n",
	       json_string_value(json_object_get(r, "model")), json_string_value(json_object_get(r, "format")),
	       json_integer_value(json_object_get(r, "layers")), json_integer_value(json_object_get(r, "experts")),
	       json_integer_value(json_object_get(r, "bank_bytes")) / 1073741824.0);
	json_t *ftw = json_object_get(r, "ftw");
	if (json_is_object(ftw)) {
		if (json_is_real(json_object_get(ftw, "convert_s")))
			printf("ftw: converted into %s in %.2f s (%d shard(s), %.2f GiB written)%s\n",
			       json_string_value(json_object_get(ftw, "dir")), json_real_value(json_object_get(ftw, "convert_s")),
			       (int)json_integer_value(json_object_get(ftw, "shards")),
			       json_integer_value(json_object_get(ftw, "bytes_written")) / 1073741824.0,
			       json_is_true(json_object_get(ftw, "kept")) ? ", kept" : ", removed");
		else
			printf("ftw: reused %s\n", json_string_value(json_object_get(ftw, "dir")));
	}
	int many = json_integer_value(json_object_get(r, "repeat")) > 1;
	if (many)
		printf("each mode run %lld times: load_s and read GB/s are the median, [min max] the range\n",
		       json_integer_value(json_object_get(r, "repeat")));
	struct ftcol cols[NMODE];
	memcpy(cols, mode_cols, sizeof cols);
	for (int k = 4; k < 9; k++)
		cols[k].csv_only = !many && k != 6;
	struct fttable t = {cols, NMODE, FTCLI_FMT_TABLE};
	fttable_head(&t);
	size_t i;
	json_t *row;
	json_array_foreach(json_object_get(r, "rows"), i, row)
		mode_row(&t, row, (int)i);
}

/* --output-format csv|md: one line per mode, the figures as measured (seconds, 10^9 B/s, bytes). */
static void print_rows(const json_t *res, enum ftcli_format fmt)
{
	struct fttable t = {mode_cols, NMODE, fmt};
	size_t i;
	json_t *row;
	fttable_head(&t);
	json_array_foreach(json_object_get(res, "rows"), i, row)
		mode_row(&t, row, (int)i);
}

struct lw_cli {
	struct ftlw_opts o;
	const char *modes, *worker;
	int keep_ftw, no_drop, chunk_mib;
	struct ftflag_gpu gpu;
	enum ftcli_format fmt;
};
#define O(m) FTF_FIELD(struct lw_cli, m)
_Static_assert(FTLOAD_DEFAULT_CHUNK == 8u << 20 && FTFTW_DEFAULT_SHARD_LIMIT == 8ULL << 30,
	       "FTCLI_LOADER_ROWS' defaults of --chunk-mib and --shard-gib");
_Static_assert(FTLOAD_AUTO == 0 && FTLOAD_SERIAL == 1 && FTLOAD_PARALLEL == 2, "--expert-load's choices");

static const struct ftflag flag_rows[] = {
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
	FTF_GPU_ROWS(struct lw_cli, gpu, "UUID|INDEX", "none",
		     "the GPU the banks are loaded for (ftbenchd's jobs hold one): checked and recorded in the "
		     "result as \"gpu\"; the load itself is host memory"),
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
	"load-weights", flag_rows, FTF_COUNT(flag_rows),
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
	char gpu_uuid[sizeof ((struct ftgpu_info *)0)->uuid] = "";
	if (c->gpu.spec) {
		struct ftgpu_info g;
		char why[256] = "";
		int gr = ftcli_select_gpu(c->gpu.spec, &g, why, sizeof why);
		if (gr < 0)
			return FTCLI_EXIT_USAGE; /* logged by the resolver */
		if (gr > 0) {
			ftcli_error("--gpu %s: %s", c->gpu.spec, why);
			return FTCLI_EXIT_USAGE;
		}
		snprintf(gpu_uuid, sizeof gpu_uuid, "%s", g.uuid);
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
	if (gpu_uuid[0])
		json_object_set_new(res, "gpu", json_string(gpu_uuid));
	ftcli_result(res);
	if (fmt == FTCLI_FMT_JSON)
		ftcli_print_json(res);
	else if (fmt == FTCLI_FMT_TABLE)
		print_table(res);
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
