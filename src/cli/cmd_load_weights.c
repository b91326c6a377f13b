/* ftbench load-weights --model DIR: expert-bank load time, serial vs parallel O_DIRECT vs FTW
 * (reference §7). Each mode runs in a child (`--worker MODE --result-fd N`, hidden) that
 * reports in the worker protocol on fd N. Exit 1 when a mode fails or a checksum differs (BAD). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bench/load_weights.h"
#include "cli/cli.h"
#include "util/strutil.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: ftbench load-weights --model DIR [--modes baseline,parallel,ftw[,auto]]\n"
		   "         [--workers N] [--chunk-mib N] [--shard-gib X] [--ftw-dir DIR] [--keep-ftw]\n"
		   "         [--no-drop-cache] [--expert-load auto|serial|parallel] [--repeat N]\n"
		   "         [--json] [--output-format table|json|csv|md] [--result-fd N]\n"
		   "  baseline (serial loader) always runs as the reference; the FTW copy goes to --ftw-dir\n"
		   "  (default /var/tmp/ftw_<model name>) when nothing has that name yet, else to a fresh\n"
		   "  ftw-<model name>.XXXXXX inside it (ftw_<model name>.XXXXXX beside the default); it is\n"
		   "  removed with what was written in it unless --keep-ftw (a kept one is reused).\n"
		   "  --model DIR     the safetensors checkpoint to load (required)\n"
		   "  --modes LIST    loaders timed, each once after the page cache of its files is dropped:\n"
		   "                  baseline (serial), parallel, ftw (the FTW copy), auto (default\n"
		   "                  baseline,parallel,ftw). Commas or spaces; an unknown mode is skipped\n"
		   "                  with a note (as the seed does), a list without a known mode is an error.\n"
		   "  --workers N     reader threads of parallel and ftw, 1..256 (default 8)\n"
		   "  --chunk-mib N   bytes each reader asks for at once, in MiB, 1..1024 (default 8)\n"
		   "  --shard-gib X   FTW shard limit in GiB, a number as in the seed, 0.001..1024 (0.5; whole\n"
		   "                  MiB; default 8)\n"
		   "  --shard-mib N   the same in MiB, 1..1048576\n"
		   "  --ftw-dir DIR   where the FTW copy goes (above)\n"
		   "  --keep-ftw      keep the FTW copy (a kept one is reused by the next run)\n"
		   "  --no-drop-cache do not evict the page cache before each mode (warm-cache figures)\n"
		   "  --expert-load auto|serial|parallel  the loader of the FTW conversion and of the auto\n"
		   "                  mode (auto: parallel when the experts are scattered; default auto)\n"
		   "  --repeat N      runs of each mode, 1..%d (default 1), each after the page cache is\n"
		   "                  dropped; load_s and read GB/s are the median, with the min and max\n"
		   "  --json          the result as JSON on stdout (the same as --output-format json)\n"
		   "  --output-format F  table (default), json, csv or md (csv, md: one line per mode under\n"
		   "                  the JSON names, figures unrounded: seconds, 10^9 B/s, bytes); --format F\n"
		   "                  is the same flag\n"
		   "  --result-fd N   the worker protocol's JSON lines to fd N (ftbenchd)\n"
		   "  read GB/s (JSON read_gbs) is 10^9 bytes per second (read_gibs: the same in 2^30 B/s);\n"
		   "  sizes in MiB/GiB (2^20/2^30 bytes).\n"
		   "  The seed's bench_load_weight_generic.py flags are all accepted with the same names.\n",
		FTLW_MAX_REPEAT);
}

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

static int run(int argc, char **argv, const struct option *opts);

int ftcli_cmd_load_weights(int argc, char **argv)
{
	static const struct option opts[] = {
		{"model", required_argument, NULL, 'm'},     {"modes", required_argument, NULL, 'M'},
		{"workers", required_argument, NULL, 'w'},   {"chunk-mib", required_argument, NULL, 'c'},
		{"shard-gib", required_argument, NULL, 'g'}, {"shard-mib", required_argument, NULL, 'G'},
		{"ftw-dir", required_argument, NULL, 'f'},   {"keep-ftw", no_argument, NULL, 'k'},
		{"no-drop-cache", no_argument, NULL, 'n'},   {"expert-load", required_argument, NULL, 'e'},
		{"json", no_argument, NULL, 'j'},            {"result-fd", required_argument, NULL, 'r'},
		{"worker", required_argument, NULL, 'W'},    {"help", no_argument, NULL, 'h'},
		{"repeat", required_argument, NULL, 'R'},    {"format", required_argument, NULL, 'F'},
		{"output-format", required_argument, NULL, 'F'},
		{0}};
	static const int lists[] = {'M', 0};
	struct ftcli_args args;
	if (ftcli_args_join_lists(&args, argc, argv, opts, lists) < 0) {
		ftcli_error("out of memory");
		return FTCLI_EXIT_FAIL;
	}
	int rc = run(args.argc, args.argv, opts);
	ftcli_args_release(&args);
	return rc;
}

static int run(int argc, char **argv, const struct option *opts)
{
	struct ftlw_opts o = {.modes = FTLW_BASELINE | FTLW_PARALLEL | FTLW_FTW, .drop_cache = 1,
			      .expert_load = FTLOAD_AUTO};
	const char *worker = NULL;
	enum ftcli_format fmt = FTCLI_FMT_TABLE;
	int c, li = 0;
	long v;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, &li)) != -1) {
		switch (c) {
		case 'm': o.model = optarg; break;
		case 'M':
			if (parse_modes(optarg, &o.modes) < 0)
				return FTCLI_EXIT_USAGE;
			break;
		case 'w':
			if (ftstr_parse_long(optarg, 1, 256, &v) < 0) {
				ftcli_error("--workers: '%s' is not a number in 1..256", optarg);
				return FTCLI_EXIT_USAGE;
			}
			o.workers = (int)v;
			break;
		case 'c':
			if (ftstr_parse_long(optarg, 1, 1024, &v) < 0) {
				ftcli_error("--chunk-mib: '%s' is not a number in 1..1024", optarg);
				return FTCLI_EXIT_USAGE;
			}
			o.chunk_bytes = (size_t)v << 20;
			break;
		case 'g':
		case 'G':
			if (ftcli_opt_shard(c == 'g' ? "--shard-gib" : "--shard-mib", optarg, &o.shard_bytes) < 0)
				return FTCLI_EXIT_USAGE;
			break;
		case 'f': o.ftw_dir = optarg; break;
		case 'k': o.keep_ftw = 1; break;
		case 'n': o.drop_cache = 0; break;
		case 'e':
			if (ftload_parse_mode(optarg, &o.expert_load) < 0) {
				ftcli_error("--expert-load: '%s' is not auto, serial or parallel", optarg);
				return FTCLI_EXIT_USAGE;
			}
			break;
		case 'j': fmt = FTCLI_FMT_JSON; break;
		case 'F':
			if (ftcli_parse_format(strcmp(opts[li].name, "format") ? "--output-format" : "--format", optarg,
					       &fmt) < 0)
				return FTCLI_EXIT_USAGE;
			break;
		case 'R':
			if (ftstr_parse_long(optarg, 1, FTLW_MAX_REPEAT, &v) < 0) {
				ftcli_error("--repeat: '%s' is not a number in 1..%d", optarg, FTLW_MAX_REPEAT);
				return FTCLI_EXIT_USAGE;
			}
			o.repeat = (int)v;
			break;
		case 'r':
			if (ftcli_opt_result_fd(optarg) < 0)
				return FTCLI_EXIT_USAGE;
			break;
		case 'W': worker = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return FTCLI_EXIT_USAGE;
		}
	}
	if (optind < argc || !o.model) {
		if (optind < argc)
			ftcli_error("unexpected argument '%s'", argv[optind]);
		else
			ftcli_error("--model DIR is required");
		usage(stderr);
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
