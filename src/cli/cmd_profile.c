/* ftbench profile path|show|history|recommend FORMAT|fetch-fraction FORMAT|max-batch FORMAT|validate [--gpu G] [--json]
 *
 * Reads the bandwidth profile that applies to a GPU through libftprofile, exactly as an engine
 * would (search order, GPU check, aliases, rules of reference §5). --gpu takes an index, a uuid or
 * a unique uuid prefix; a full "GPU-..." uuid works without CUDA. No GPU: host.json.
 * The answers are the seed reader's (libftprofile): recommend prints none when there is no
 * profile or no data, the format name goes to the reader as typed.
 * Exit: 0 found; 1 no profile / no data for the format / invalid profile (message names the
 * file); 2 usage (missing format, bad --gpu). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <math.h>
#include <sys/stat.h>

#include "bench/validation.h"
#include "cli/cli.h"
#include "cli/flags.h"
#include "cli/table.h"
#include "ftprofile.h"
#include "moe/formats.h"
#include "util/fsutil.h"
#include "util/strutil.h"

struct profile_cli {
	const char *gpu, *from, *vdtype;
	int json, deployment, limit;
	double reuse;
	enum ftcli_format fmt;
	struct ftval_opts vo;
};
#define O(m) FTF_FIELD(struct profile_cli, m)

static const struct ftflag flag_rows[] = {
	{"gpu", FTF_STR, O(gpu), .meta = "G", .short_name = 'g', .def_help = "the first GPU; none: host.json",
	 .help = "GPU index, uuid or unique uuid prefix"},
	{"json", FTF_BOOL, O(json), .short_name = 'j',
	 .help = "machine-readable output (the same as --output-format json; it wins over --output-format)"},
	{"output-format", FTF_ENUM, O(fmt), .meta = "F", .choices = "table|json|csv|md", .def = "table",
	 .alias = "format",
	 .help = "table, json, csv or md (csv, md: show, one row per format; history, one row per profile and "
		 "format)"},
	{"limit", FTF_INT, O(limit), .meta = "N", .lo = 1, .hi = 1000, .def_help = "all kept, at most 20",
	 .help = "history: the newest N profiles only"},
	{"deployment", FTF_ENUM, O(deployment), .choices = "isolated|concurrent|profile", .def = "profile",
	 .help = "recommend / fetch-fraction for that deployment (profile: the one the profile records, by the "
		 "seed's rules)"},
	{"from", FTF_STR, O(from), .meta = "FILE", .help = "validate: the engine run to record (below)"},
	{"dtype", FTF_STR, O(vdtype), .meta = "F",
	 .def_help = "every format of the harness run the profile has", .help = "validate: the format"},
	{"workload", FTF_STR, O(vo.workload), .meta = "W", .def_help = "uniform",
	 .help = "validate: the harness run's point of that workload"},
	{"cache-fraction", FTF_DOUBLE, O(vo.cache_fraction), .meta = "X", .lo = 1e-6, .hi = 1, .def_help = "the first",
	 .help = "recommend (with --reuse): the answer for that workload from the profile's replay map "
		 "(ftbench replay): the nearest point's winner (a tie: offload) and its best fetch fraction; X = GPU "
		 "slot cache / (layers x experts). validate: the harness run's point of that cache fraction"},
	{"reuse", FTF_DOUBLE, O(reuse), .meta = "R", .lo = 0, .hi = 1,
	 .help = "recommend (with --cache-fraction): the workload's share of a layer's experts kept from one "
		 "token to the next"},
	{"engine-version", FTF_STR, O(vo.engine_version), .meta = "V",
	 .help = "validate: the engine's version (decode --compare records none)"},
	{"measured-epoch", FTF_DOUBLE, O(vo.measured_epoch), .meta = "T", .lo = 1, .hi = 1e11, .unit = "s",
	 .def_help = "the file's \"epoch\", else its mtime", .help = "validate: when the run was measured"},
};

const struct ftflag_cmd ftcli_flags_profile = {
	"profile", flag_rows, FTF_COUNT(flag_rows),
	.args = "path|show|history|recommend FORMAT [--cache-fraction C --reuse R]|fetch-fraction FORMAT|max-batch "
		"FORMAT|validate",
	.min_args = 1, .max_args = 2,
	.about = "  path            the profile file that applies (or where `ftbench bw` would write it)\n"
		 "  show            what the profile says: every figure with its spread (median, min-max,\n"
		 "                  samples), valid, drift, stale (--json: the whole file)\n"
		 "  history         the profiles of the GPU the per-user store kept (oldest first; valid and\n"
		 "                  invalid runs alike): time, read ceiling, per format CPU MoE / gather /\n"
		 "                  verdict, valid, drift (--json: the array of profiles)\n"
		 "  recommend F     offload | hybrid | none for format F (the reader's alias: mxfp4)\n"
		 "  fetch-fraction F  share of a hybrid step's missing experts fetched over PCIe\n"
		 "  max-batch F     the largest batch at which hybrid still wins for F (bw --batch-sweep)\n"
		 "  validate --from FILE  record what an engine run measured as the profile's validation.<fmt>:\n"
		 "                  the seed engine harness (bench/engines/freetoken_moe.py: one point, by\n"
		 "                  --workload W, default uniform, and --cache-fraction X, default the first),\n"
		 "                  a decode --compare summary (arms of moe-backend; needs --dtype), or a\n"
		 "                  validation record as it is (e.g. from replay). Per format: the winner, the\n"
		 "                  best fetch fraction, agrees with the profile's verdict (a tie agrees), when;\n"
		 "                  rewrites the profile file in place (atomically)",
	.notes = "GB/s is 10^9 bytes per second everywhere.\n"
		 "env: FREETOKEN_BENCHBW_PATH (the file), XDG_CACHE_HOME\n",
};

/* A full uuid in nvidia-smi form: GPU- and 36 characters of hex and dashes. */
static int literal_uuid(const char *s)
{
	if (strncmp(s, "GPU-", 4) || strlen(s) != 40)
		return 0;
	for (const char *p = s + 4; *p; p++)
		if (!(*p == '-' || (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f') ||
		      (*p >= 'A' && *p <= 'F')))
			return 0;
	return 1;
}

static void print_num(const json_t *v, const char *fmt, int width)
{
	if (json_is_number(v))
		printf(fmt, width, json_number_value(v));
	else
		printf("%*s", width, "-");
}

/* A format's row of show: the table, csv and md. */
static const struct ftcol format_cols[] = {
	{"format", "format", NULL, -14},
	{"rec", "rec", NULL, -8},
	{"cpu_moe_gbs", "cpu GB/s", "GB/s", 10, "%.1f", "%.2f"},
	{"pcie_gather_gbs", "pcie GB/s", "GB/s", 10, "%.1f", "%.2f"},
	{"ratio", "ratio", NULL, 10, "%.2f", "%.3f"},
	{"fetch_fraction", "fetch", NULL, 8, "%.3f"},
	{"cpu_moe_isa", "isa", NULL, 6},
	{"note", "note", NULL, 0, .gap = 1},
};

/* One row per format named in dtypes or dtype_kernels (dtypes order first). */
static void format_rows(const struct ftprof *p, enum ftcli_format fmt)
{
	struct fttable t = {format_cols, FTCOL_COUNT(format_cols), fmt};
	const json_t *root = ftprof_json(p), *dtypes = json_object_get(root, "dtypes");
	const json_t *dk = json_object_get(root, "dtype_kernels"), *v;
	const char *k;
	fttable_head(&t);
	for (int pass = 0; pass < 2; pass++)
		json_object_foreach((json_t *)(pass ? dk : dtypes), k, v) {
			if (pass && json_object_get(dtypes, k))
				continue;
			const json_t *e = json_object_get(dk, k);
			const char *note = json_string_value(json_object_get(e, "note"));
			double f;
			int have_f = !ftprof_fetch_fraction(p, k, &f);
			fttable_row(&t, (struct ftcell[]){FTCELL_S(k), FTCELL_S(ftprof_rec_name(ftprof_recommend(p, k))),
							  ftcell_json(json_object_get(e, "cpu_moe_gbs")),
							  ftcell_json(json_object_get(e, "pcie_gather_gbs")),
							  ftcell_json(json_object_get(e, "ratio")),
							  have_f ? FTCELL_N(f) : FTCELL_NONE,
							  ftcell_json(json_object_get(e, "cpu_moe_isa")),
							  FTCELL_SH(note, note ? note : "")});
		}
}

static void show_human(const struct ftprof *p)
{
	const json_t *root = ftprof_json(p), *gpu = json_object_get(root, "gpu");
	const json_t *tool = json_object_get(root, "tool"), *ceil = json_object_get(root, "ceilings");
	const json_t *dk = json_object_get(root, "dtype_kernels");
	const json_t *wl = json_object_get(root, "workloads"), *v;
	const char *k;

	printf("profile   %s (version %lld)\n", ftprof_source(p),
	       (long long)json_integer_value(json_object_get(root, "version")));
	if (json_is_object(gpu)) {
		const json_t *link = json_object_get(gpu, "pcie_link");
		printf("gpu       %s %s", ftprof_gpu_name(p) ? ftprof_gpu_name(p) : "?",
		       ftprof_gpu_uuid(p) ? ftprof_gpu_uuid(p) : "(no uuid: legacy profile)");
		if (json_is_string(json_object_get(gpu, "pci_bus_id")))
			printf(" at %s", json_string_value(json_object_get(gpu, "pci_bus_id")));
		if (json_is_object(link))
			printf(", PCIe Gen%lld x%lld (max Gen%lld x%lld)",
			       (long long)json_integer_value(json_object_get(link, "gen_current")),
			       (long long)json_integer_value(json_object_get(link, "width_current")),
			       (long long)json_integer_value(json_object_get(link, "gen_max")),
			       (long long)json_integer_value(json_object_get(link, "width_max")));
		printf("\n");
	} else if (json_is_null(gpu)) {
		printf("gpu       none (CPU-only profile)\n");
	} else {
		printf("gpu       not recorded (an older profile: read by every GPU's engine)\n");
	}
	printf("measured  %s on %s", json_string_value(json_object_get(root, "timestamp")) ?: "?",
	       json_string_value(json_object_get(root, "host")) ?: "?");
	if (json_is_object(tool))
		printf(" by %s %s", json_string_value(json_object_get(tool, "name")) ?: "?",
		       json_string_value(json_object_get(tool, "version")) ?: "?");
	printf(", threshold ");
	print_num(json_object_get(root, "threshold"), "%.*g", 3);
	printf("\n");
	if (json_is_object(ceil)) {
		printf("ceilings  cpu read ");
		print_num(json_object_get(ceil, "cpu_stream_read_gbs"), "%.*f", 1);
		printf(" GB/s, pcie h2d ");
		print_num(json_object_get(ceil, "pcie_linear_h2d_gbs"), "%.*f", 1);
		printf(" GB/s, d2h ");
		print_num(json_object_get(ceil, "pcie_linear_d2h_gbs"), "%.*f", 1);
		printf(" GB/s\n");
	}
	if (json_object_get(root, "deployment"))
		printf("deployment %s (the rec column)\n", ftprof_deployment_name(ftprof_deployment(p)));
	if (json_is_object(json_object_get(root, "concurrent"))) {
		printf("concurrent (%lld engines at once):",
		       (long long)json_integer_value(json_object_get(json_object_get(root, "concurrent"), "engines")));
		json_object_foreach((json_t *)dk, k, v) {
			double cf;
			printf(" %s=%s", k, ftprof_rec_name(ftprof_recommend_deployment(p, k, FTPROF_DEPLOY_CONCURRENT)));
			if (!ftprof_fetch_fraction_deployment(p, k, FTPROF_DEPLOY_CONCURRENT, &cf))
				printf("(%.3f)", cf);
		}
		printf("\n");
	}
	printf("\n");
	format_rows(p, FTCLI_FMT_TABLE);
	json_object_foreach((json_t *)wl, k, v) {
		const json_t *rmb = json_object_get(v, "recommended_moe_backend"), *r;
		const char *f;
		printf("workload  %s:", k);
		json_object_foreach((json_t *)rmb, f, r)
			printf(" %s=%s", f, json_string_value(r) ?: "?");
		printf("\n");
	}
	v = json_object_get(root, "warnings");
	if (json_array_size(v)) {
		size_t i;
		const json_t *w;
		json_array_foreach(v, i, w)
			printf("warning   %s\n", json_string_value(w) ?: "?");
	}
}

/* show --output-format csv|md: the table of show_human, one row per format (GB/s). */
static void show_rows(const struct ftprof *p, enum ftcli_format fmt)
{
	format_rows(p, fmt);
}

/* "99.5 GB/s (99.0-100.0, 2 samples)" for figure key of o (its key_spread when recorded). */
static void print_figure(const char *label, const json_t *o, const char *key)
{
	char sk[128];
	const json_t *v = json_object_get(o, key), *sp;
	snprintf(sk, sizeof sk, "%s_spread", key);
	sp = json_object_get(o, sk);
	printf("  %-34s ", label);
	if (!json_is_number(v)) {
		printf("%10s\n", "-");
		return;
	}
	printf("%10.2f GB/s", json_number_value(v));
	if (json_is_object(sp) && json_is_number(json_object_get(sp, "min")) &&
	    json_is_number(json_object_get(sp, "max")))
		printf("  %.2f-%.2f, %lld samples\n", json_number_value(json_object_get(sp, "min")),
		       json_number_value(json_object_get(sp, "max")),
		       (long long)json_integer_value(json_object_get(sp, "samples")));
	else
		printf("  (no spread recorded)\n");
}

static int ends_with(const char *s, const char *suf)
{
	size_t a = strlen(s), b = strlen(suf);
	return a >= b && !strcmp(s + a - b, suf);
}

/* Every figure with its spread, then valid, drift and stale. */
static void show_checks(const struct ftprof *p)
{
	const json_t *root = ftprof_json(p), *ceil = json_object_get(root, "ceilings");
	const json_t *dk = json_object_get(root, "dtype_kernels"), *v, *e, *valid, *drift;
	const char *k, *f;
	char label[160], why[1024] = "";
	size_t i;
	int st;

	printf("\nfigures (median; min-max over the samples; GB/s = 10^9 bytes/s)\n");
	json_object_foreach((json_t *)ceil, k, v)
		if (ends_with(k, "_gbs") && json_is_number(v))
			print_figure(k, ceil, k);
	json_object_foreach((json_t *)dk, f, e)
		json_object_foreach((json_t *)e, k, v)
			if (ends_with(k, "_gbs") && json_is_number(v)) {
				snprintf(label, sizeof label, "%s %s", f, k);
				print_figure(label, e, k);
			}
	valid = json_object_get(root, "valid");
	if (json_is_true(valid)) {
		printf("valid     yes (the run passed its own checks)\n");
	} else if (json_is_false(valid)) {
		printf("valid     NO:");
		json_array_foreach(json_object_get(root, "invalid_reasons"), i, v)
			printf("%s %s", i ? ";" : "", json_string_value(v) ?: "?");
		printf("\n");
	} else {
		printf("valid     not checked (no \"valid\" field: an older profile or bw --no-checks)\n");
	}
	drift = json_object_get(root, "drift");
	if (!json_is_array(drift))
		printf("drift     not compared (no previous profile of this GPU, or an older tool)\n");
	else if (!json_array_size(drift))
		printf("drift     none (every figure within the previous profile's spread)\n");
	else
		json_array_foreach(drift, i, v)
			printf("drift     %s: %.2f -> %.2f GB/s (%+.0f %%; previous spread %.2f-%.2f)\n",
			       json_string_value(json_object_get(v, "figure")) ?: "?",
			       json_number_value(json_object_get(v, "previous")),
			       json_number_value(json_object_get(v, "current")),
			       (json_number_value(json_object_get(v, "ratio")) - 1) * 100,
			       json_number_value(json_object_get(v, "previous_min")),
			       json_number_value(json_object_get(v, "previous_max")));
	st = ftprof_stale(p, why, sizeof why);
	if (st == 1)
		printf("stale     YES: %s (re-run ftbench bw)\n", why);
	else if (st == 0)
		printf("stale     no (measured on this machine as it is now)\n");
	else
		printf("stale     unknown (the profile recorded no fingerprint)\n");
}

/* history: one row per kept profile and format (GB/s = 10^9 B/s). A profile's own cells (timestamp,
 * read ceiling, valid, drift count) are on each of its rows in csv and md, on its first only in the
 * table; a profile without kernels has one row with no format. */
static const struct ftcol history_cols[] = {
	{"timestamp", "timestamp", NULL, -20},
	{"read_gbs", "read GB/s", "GB/s", 9, "%.1f"},
	{"valid", "valid", NULL, -5},
	{"drifted", "drifted", NULL, -7, "%.0f"},
	{"format", "format", NULL, -13, .gap = 1},
	{"cpu_moe_gbs", "cpu GB/s", "GB/s", 9, "%.1f"},
	{"gather_gbs", "gather GB/s", "GB/s", 11, "%.1f"},
	{"verdict", "verdict", NULL, 0},
};

static void history_rows(const json_t *pr, const struct fttable *t)
{
	const json_t *valid = json_object_get(pr, "valid"), *drift = json_object_get(pr, "drift");
	const json_t *dk = json_object_get(pr, "dtype_kernels"), *e;
	const char *ts = json_string_value(json_object_get(pr, "timestamp")), *k;
	struct ftcell c[8] = {
		FTCELL_SH(ts, ts ? ts : "?"),
		ftcell_json(json_object_get(json_object_get(pr, "ceilings"), "cpu_stream_read_gbs")),
		json_is_true(valid) ? FTCELL_S("yes") : json_is_false(valid) ? FTCELL_SH("no", "NO") : FTCELL_NONE,
		json_is_array(drift) ? FTCELL_N((double)json_array_size(drift)) : FTCELL_NONE,
		FTCELL_NONE, FTCELL_NONE, FTCELL_NONE, FTCELL_NONE,
	};
	if (!json_object_size(dk))
		fttable_row(t, c);
	json_object_foreach((json_t *)dk, k, e) {
		c[4] = FTCELL_S(k);
		c[5] = ftcell_json(json_object_get(e, "cpu_moe_gbs"));
		c[6] = ftcell_json(json_object_get(e, "pcie_gather_gbs"));
		c[7] = ftcell_json(json_object_get(e, "recommended"));
		fttable_row(t, c);
		for (int i = 0; i < 4; i++) /* the table shows the profile's cells once */
			c[i].h = "";
	}
}

static int history(const char *uuid, int limit, enum ftcli_format fmt)
{
	json_t *arr = NULL, *pr;
	size_t i;
	int r = ftprof_history_load(NULL, uuid, limit, &arr);

	if (r < 0) {
		ftcli_error("history of %s: %s", uuid && *uuid ? uuid : "host", strerror(-r));
		return FTCLI_EXIT_FAIL;
	}
	if (fmt == FTCLI_FMT_JSON) {
		ftcli_print_json(arr);
	} else if (!json_array_size(arr)) {
		ftcli_note("no kept profiles for %s (ftbench bw keeps the last %d)", uuid && *uuid ? uuid : "host",
			   FTPROF_HISTORY_KEEP);
	} else {
		struct fttable t = {history_cols, FTCOL_COUNT(history_cols), fmt};
		fttable_head(&t);
		json_array_foreach(arr, i, pr)
			history_rows(pr, &t);
	}
	r = json_array_size(arr) || fmt == FTCLI_FMT_JSON ? 0 : FTCLI_EXIT_FAIL;
	json_decref(arr);
	return r;
}

/* When a name the reader does not alias (fp8) finds nothing but its canonical name would. */
static const char *alias_hint(const struct ftprof *p, const char *format, int rec)
{
	static char hint[160];
	const char *canon = ftprof_canonical_format(format);
	double f;
	if (!strcmp(canon, format) || !strcmp(format, "mxfp4"))
		return "";
	if (rec ? ftprof_recommend(p, canon) == FTPROF_REC_NONE : ftprof_fetch_fraction(p, canon, &f) < 0)
		return "";
	snprintf(hint, sizeof hint, "; the reader (as the seed's) does not alias '%s': engines ask for '%s', "
		 "which has data", format, canon);
	return hint;
}

/* show: each format's validation record, and whether it is still to be trusted. */
static void show_validation(const struct ftprof *p)
{
	const json_t *all = json_object_get(ftprof_json(p), "validation");
	const char *f;
	const json_t *e;
	if (!json_object_size(all)) {
		printf("validated no (no engine run recorded: ftbench profile validate --from FILE)\n");
		return;
	}
	json_object_foreach((json_t *)all, f, e) {
		struct ftprof_validation v;
		if (ftprof_validation(p, f, NULL, &v) < 0) {
			printf("validated %s: unreadable record\n", f);
			continue;
		}
		printf("validated %s by %s %s %s: winner %s", f, v.source ?: "?", v.engine_name ?: "?",
		       v.engine_version ?: "?", v.winner);
		if (isfinite(v.best_fetch_fraction))
			printf(", best fetch fraction %.3f", v.best_fetch_fraction);
		printf("; %s the profile's verdict (%s)",
		       v.agrees == 1 ? "agrees with" : v.agrees == 0 ? "DISAGREES with" : "not compared with",
		       json_string_value(json_object_get(e, "verdict")) ?: "none");
		if (v.state == FTPROF_VALIDATION_CURRENT)
			printf(", current\n");
		else
			printf(", STALE (%s: %s)\n", ftprof_validation_state_name(v.state),
			       v.state == FTPROF_VALIDATION_STALE_PROFILE ? "older than the profile, re-validate"
									  : "another engine version");
	}
}

/* Read FILE: one JSON document, or JSON lines (decode --json): the last line that is a decode
 * --compare summary or a harness run. A new reference or NULL with err. */
static json_t *load_run(const char *path, char *err, size_t errlen)
{
	json_error_t je;
	json_t *doc = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
	if (doc)
		return doc;
	FILE *f = fopen(path, "r");
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return NULL;
	}
	char *line = NULL;
	size_t cap = 0;
	json_t *pick = NULL;
	while (getline(&line, &cap, f) > 0) {
		json_t *j = json_loads(line, 0, NULL);
		const char *kind = json_string_value(json_object_get(j, "kind"));
		if (j && ((kind && !strcmp(kind, "decode_compare")) || json_object_get(j, "points"))) {
			json_decref(pick);
			pick = j;
		} else {
			json_decref(j);
		}
	}
	free(line);
	fclose(f);
	if (!pick)
		snprintf(err, errlen, "%s: not JSON (%s at line %d), nor JSON lines with a decode --compare summary",
			 path, je.text, je.line);
	return pick;
}

static int validate(const struct ftprof *p, const char *from, const char *dtype, struct ftval_opts *vo, int json)
{
	char err[512];
	json_t *doc = load_run(from, err, sizeof err), *root = NULL, *all, *done = json_object();
	int rc = FTCLI_EXIT_FAIL;
	const char *names[FTFMT_COUNT + 8];
	int n = 0;
	if (!doc) {
		ftcli_error("%s", err);
		goto out;
	}
	struct stat st;
	if (!isfinite(vo->measured_epoch) && !json_is_number(json_object_get(doc, "epoch")) &&
	    !json_is_number(json_object_get(json_object_get(doc, "compare"), "epoch")) && stat(from, &st) == 0)
		vo->measured_epoch = (double)st.st_mtim.tv_sec + st.st_mtim.tv_nsec / 1e9;
	if (dtype) {
		names[n++] = dtype;
	} else {
		n = ftval_formats(doc, names, (int)(sizeof names / sizeof *names));
		if (n == 0) {
			ftcli_error("%s: give --dtype (the run does not say which expert format it measured)", from);
			rc = FTCLI_EXIT_USAGE;
			goto out;
		}
	}
	root = json_deep_copy(ftprof_json(p));
	all = json_object_get(root, "validation");
	if (!json_is_object(all)) {
		all = json_object();
		json_object_set_new(root, "validation", all);
	}
	double epoch = json_number_value(json_object_get(root, "epoch"));
	int added = 0;
	for (int i = 0; i < n; i++) {
		enum ftprof_rec rec = ftprof_recommend(p, names[i]);
		if (!dtype && !json_object_get(json_object_get(root, "dtypes"), names[i])) {
			ftcli_note("%s: not in the profile, skipped", names[i]);
			continue;
		}
		json_t *v;
		if (ftval_build(doc, names[i], vo, rec == FTPROF_REC_NONE ? NULL : ftprof_rec_name(rec), epoch, &v, err,
				sizeof err) < 0) {
			ftcli_error("%s: %s: %s", from, names[i], err);
			goto out;
		}
		json_object_set_new(all, names[i], v);
		json_object_set(done, names[i], v);
		added++;
		if (!json) {
			const json_t *ag = json_object_get(v, "agrees");
			printf("%s: %s %s (%s%s%s): winner %s", names[i],
			       json_string_value(json_object_get(json_object_get(v, "engine"), "name")) ?: "?",
			       json_string_value(json_object_get(json_object_get(v, "engine"), "version")) ?: "?",
			       json_string_value(json_object_get(v, "level")) ?: json_string_value(json_object_get(v, "source")) ?: "?",
			       json_is_string(json_object_get(v, "workload")) ? ", " : "",
			       json_string_value(json_object_get(v, "workload")) ?: "",
			       json_string_value(json_object_get(v, "winner")));
			if (json_is_number(json_object_get(v, "best_fetch_fraction")))
				printf(", best fetch fraction %.3f", json_number_value(json_object_get(v, "best_fetch_fraction")));
			printf("; the profile says %s: %s\n", ftprof_rec_name(rec),
			       json_is_true(ag) ? "agrees" : json_is_false(ag) ? "DISAGREES" : "not compared");
		}
	}
	if (!added) {
		ftcli_error("%s: nothing to record (none of its formats is in %s)", from, ftprof_source(p));
		goto out;
	}
	char *text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	if (!text) {
		ftcli_error("out of memory");
		goto out;
	}
	size_t len = strlen(text);
	text[len] = '\n';
	int r = ftfs_write_atomic(ftprof_source(p), text, len + 1, 0644);
	free(text);
	if (r < 0) {
		ftcli_error("writing %s: %s", ftprof_source(p), strerror(-r));
		goto out;
	}
	if (json) {
		json_t *o = json_pack("{s:s,s:O}", "profile", ftprof_source(p), "validation", done);
		ftcli_print_json(o);
		json_decref(o);
	} else {
		printf("written: %s\n", ftprof_source(p));
	}
	rc = 0;
out:
	json_decref(doc);
	json_decref(root);
	json_decref(done);
	return rc;
}

/* The action of argv[pos] (and its FORMAT) into *action, *format: 0, or the exit status after
 * saying what is wrong. */
static int profile_action(int argc, char **argv, int pos, const char *from, const char **actionp,
			  const char **formatp)
{
	const char *action, *format = NULL;
	action = argv[pos++];
	if (!strcmp(action, "recommend") || !strcmp(action, "fetch-fraction") || !strcmp(action, "max-batch")) {
		if (pos >= argc) {
			ftcli_error("%s needs a FORMAT (one of %s)", action, ftfmt_all_names());
			return FTCLI_EXIT_USAGE;
		}
		format = argv[pos++];
		if (!*format) {
			ftcli_error("%s: empty FORMAT (one of %s)", action, ftfmt_all_names());
			return FTCLI_EXIT_USAGE;
		}
		/* Asked the way an engine asks: the name goes to the reader as it is (a profile may hold
		 * formats ftbench does not know; the reader's only alias is mxfp4). */
		if (!ftfmt_lookup(format))
			ftcli_note("'%s' is not a format ftbench knows (%s); the profile is asked as it is", format,
				   ftfmt_all_names());
	} else if (!strcmp(action, "validate")) {
		if (!from) {
			ftcli_error("validate needs --from FILE (a harness run, a decode --compare summary or a record)");
			return FTCLI_EXIT_USAGE;
		}
	} else if (strcmp(action, "path") && strcmp(action, "show") && strcmp(action, "history")) {
		ftcli_error("unknown action '%s'", action);
		ftflags_help(&ftcli_flags_profile, stderr);
		return FTCLI_EXIT_USAGE;
	}
	if (pos < argc) {
		ftcli_error("unexpected argument '%s'", argv[pos]);
		return FTCLI_EXIT_USAGE;
	}
	*actionp = action;
	*formatp = format;
	return 0;
}

int ftcli_cmd_profile(int argc, char **argv)
{
	struct profile_cli po = {0};
	struct ftflag_state fs;
	const char *gpu_spec, *action, *format = NULL;
	int json, r, rc = FTCLI_EXIT_FAIL;
	struct ftgpu_info gi;
	const char *uuid = NULL, *name = NULL;
	char why[256] = "", err[2048] = "", path[4096];
	struct ftprof *p = NULL;
	enum ftprof_deployment dep;
	int dep_given, limit, fmt_given;
	enum ftcli_format fmt;
	const char *from, *vdtype;
	struct ftval_opts vo;

	ftval_opts_default(&po.vo);
	r = ftflags_parse(&ftcli_flags_profile, argc, argv, &po, &fs);
	if (r)
		return r > 0 ? 0 : FTCLI_EXIT_USAGE;
	argc = fs.argc;
	argv = fs.argv;
	int optind = fs.pos;
	gpu_spec = po.gpu;
	from = po.from;
	vdtype = po.vdtype;
	vo = po.vo;
	json = po.json;
	limit = po.limit;
	fmt = po.fmt;
	fmt_given = ftflags_given(&ftcli_flags_profile, &fs, "output-format");
	double wl_cache = ftflags_given(&ftcli_flags_profile, &fs, "cache-fraction") ? po.vo.cache_fraction : NAN;
	double wl_reuse = ftflags_given(&ftcli_flags_profile, &fs, "reuse") ? po.reuse : NAN;
	dep_given = ftflags_given(&ftcli_flags_profile, &fs, "deployment");
	ftflags_release(&fs); /* no joined lists: argv stays the caller's */
	ftprof_deployment_parse(po.deployment == 0 ? "isolated" : po.deployment == 1 ? "concurrent" : "profile", &dep);
	if ((r = profile_action(argc, argv, optind, from, &action, &format)))
		return r;
	if (json)
		fmt = FTCLI_FMT_JSON;
	else if (fmt == FTCLI_FMT_JSON)
		json = 1;
	if (fmt_given && (fmt == FTCLI_FMT_CSV || fmt == FTCLI_FMT_MD) && strcmp(action, "history") &&
	    strcmp(action, "show")) {
		ftcli_error("--output-format %s is for show and history only (the others: table or json)",
			    fmt == FTCLI_FMT_CSV ? "csv" : "md");
		return FTCLI_EXIT_USAGE;
	}
	/* --cache-fraction: with recommend (and --reuse) the replay map's answer; with validate the
	 * point of the engine's run to record */
	if (!strcmp(action, "validate") && isnan(wl_reuse)) {
		if (!isnan(wl_cache))
			vo.cache_fraction = wl_cache;
		wl_cache = NAN;
	} else if (isnan(wl_cache) != isnan(wl_reuse) || (!isnan(wl_cache) && strcmp(action, "recommend"))) {
		ftcli_error("--cache-fraction and --reuse go together, with recommend only (validate takes --cache-fraction)");
		return FTCLI_EXIT_USAGE;
	}
	if (!isnan(wl_cache) && dep_given) {
		ftcli_error("--cache-fraction/--reuse (the replay's answer) and --deployment do not mix");
		return FTCLI_EXIT_USAGE;
	}
	if (json)
		ftcli_set_quiet(1);

	/* Which GPU: a literal uuid needs no CUDA; otherwise the shared resolver. */
	if (gpu_spec && literal_uuid(gpu_spec)) {
		uuid = gpu_spec;
	} else {
		r = ftcli_select_gpu(gpu_spec, &gi, why, sizeof why);
		if (r < 0)
			return FTCLI_EXIT_USAGE; /* logged by the resolver */
		if (r == 0) {
			uuid = gi.uuid;
			name = gi.name;
		}
	}

	if (!strcmp(action, "history"))
		return history(uuid, limit, fmt);
	if (limit) {
		ftcli_error("--limit is for history only");
		return FTCLI_EXIT_USAGE;
	}
	r = ftprof_load(uuid, name, &p, err, sizeof err);
	if (!strcmp(action, "path")) {
		const char *found = r ? NULL : ftprof_source(p);
		int pr = ftprof_path(uuid, path, sizeof path);
		if (json) {
			json_t *o = json_pack("{s:s?,s:s?,s:s?,s:b}", "gpu_uuid", uuid, "path", found,
					      "write_path", pr ? NULL : path, "exists", found != NULL);
			if (r && err[0])
				json_object_set_new(o, "error", json_string(err));
			ftcli_print_json(o);
			json_decref(o);
		} else if (found) {
			printf("%s\n", found);
		} else {
			if (!pr)
				printf("%s\n", path);
		}
		if (r == -ENOENT)
			ftcli_note("%s", err);
		else if (r)
			ftcli_error("%s", err);
		rc = r ? FTCLI_EXIT_FAIL : 0;
		goto out;
	}
	if (r) {
		/* no profile, or one the seed's reader cannot read either: its answer is none */
		const char *msg = err[0] ? err : strerror(-r);
		if (r == -ENOENT)
			ftcli_note("%s", msg);
		else
			ftcli_error("%s", msg);
		if (json) {
			json_t *o = json_pack("{s:s?,s:s}", "gpu_uuid", uuid, "error", msg);
			if (format && !strcmp(action, "recommend"))
				json_object_set_new(o, "recommendation", json_string("none"));
			else if (format)
				json_object_set_new(o, "fetch_fraction", json_null());
			if (format)
				json_object_set_new(o, "format", json_string(format));
			ftcli_print_json(o);
			json_decref(o);
		} else if (format && !strcmp(action, "recommend")) {
			printf("none\n");
		}
		goto out;
	}
	if (!strcmp(action, "validate")) {
		rc = validate(p, from, vdtype, &vo, json);
		goto out;
	}
	if (!strcmp(action, "show")) {
		if (json)
			ftcli_print_json((json_t *)ftprof_json(p));
		else if (fmt == FTCLI_FMT_CSV || fmt == FTCLI_FMT_MD)
			show_rows(p, fmt);
		else {
			show_human(p);
			show_checks(p);
			show_validation(p);
		}
		rc = 0;
	} else if (!strcmp(action, "recommend") && !isnan(wl_cache)) {
		double f = NAN, pc = NAN, pu = NAN, sp = NAN;
		enum ftprof_rec rec = ftprof_recommend_workload(p, format, wl_cache, wl_reuse, &f);
		ftprof_workload_point(p, format, wl_cache, wl_reuse, &pc, &pu, &sp);
		if (json) {
			json_t *o = json_pack("{s:s,s:s,s:f,s:f,s:o,s:s}", "format", format, "recommendation", ftprof_rec_name(rec),
					      "cache_fraction", wl_cache, "reuse", wl_reuse, "fetch_fraction",
					      isnan(f) ? json_null() : json_real(f), "profile", ftprof_source(p));
			if (rec != FTPROF_REC_NONE)
				json_object_set_new(o, "point", json_pack("{s:f,s:f,s:o}", "cache_fraction", pc, "reuse", pu,
									  "speedup", isnan(sp) ? json_null() : json_real(sp)));
			ftcli_print_json(o);
			json_decref(o);
		} else if (rec != FTPROF_REC_NONE) {
			printf("%s", ftprof_rec_name(rec));
			if (!isnan(f))
				printf(" fetch_fraction=%.4g", f);
			printf(" (replay point: cache %.3g, reuse %.3g, hybrid/offload %.3gx)\n", pc, pu, sp);
		} else {
			printf("none\n");
		}
		if (rec == FTPROF_REC_NONE)
			ftcli_note("%s: no replay map for %s (run ftbench replay, or bw with a GPU); the bandwidth rule says %s",
				   ftprof_source(p), format, ftprof_rec_name(ftprof_recommend(p, format)));
		rc = rec == FTPROF_REC_NONE ? FTCLI_EXIT_FAIL : 0;
	} else if (!strcmp(action, "recommend")) {
		enum ftprof_rec rec = dep_given ? ftprof_recommend_deployment(p, format, dep) : ftprof_recommend(p, format);
		enum ftprof_deployment used = dep == FTPROF_DEPLOY_PROFILE ? ftprof_deployment(p) : dep;
		if (json) {
			json_t *o = json_pack("{s:s,s:s,s:s,s:s}", "format", format, "recommendation",
					      ftprof_rec_name(rec), "deployment", ftprof_deployment_name(used),
					      "profile", ftprof_source(p));
			ftcli_print_json(o);
			json_decref(o);
		} else {
			printf("%s\n", ftprof_rec_name(rec));
		}
		if (rec == FTPROF_REC_NONE)
			ftcli_note("%s: no %s data for %s (engines keep offload)%s", ftprof_source(p),
				   ftprof_deployment_name(used), format, alias_hint(p, format, 1));
		rc = rec == FTPROF_REC_NONE ? FTCLI_EXIT_FAIL : 0;
	} else if (!strcmp(action, "max-batch")) {
		int mb = 0;
		r = ftprof_hybrid_max_batch(p, format, &mb);
		if (json) {
			json_t *o = json_pack("{s:s,s:o,s:s}", "format", format, "hybrid_max_batch",
					      r ? json_null() : json_integer(mb), "profile", ftprof_source(p));
			ftcli_print_json(o);
			json_decref(o);
		} else if (!r) {
			printf("%d\n", mb);
		}
		if (r)
			ftcli_error("%s: no batch sweep for %s (run ftbench bw --batch-sweep 1,2,4,8,16,32)",
				    ftprof_source(p), format);
		rc = r ? FTCLI_EXIT_FAIL : 0;
	} else {
		double f = 0;
		r = dep_given ? ftprof_fetch_fraction_deployment(p, format, dep, &f) : ftprof_fetch_fraction(p, format, &f);
		enum ftprof_deployment used = !dep_given ? FTPROF_DEPLOY_ISOLATED
				      : dep == FTPROF_DEPLOY_PROFILE ? ftprof_deployment(p) : dep;
		if (json) {
			json_t *o = json_pack("{s:s,s:o,s:s,s:s}", "format", format, "fetch_fraction",
					      r ? json_null() : json_real(f), "deployment", ftprof_deployment_name(used),
					      "profile", ftprof_source(p));
			ftcli_print_json(o);
			json_decref(o);
		} else if (!r) {
			printf("%.4f\n", f);
		}
		if (r)
			ftcli_error("%s: no bandwidth pair for %s (engines use a fixed cap of 1)%s",
				    ftprof_source(p), format, alias_hint(p, format, 0));
		rc = r ? FTCLI_EXIT_FAIL : 0;
	}
out:
	ftprof_free(p);
	return rc;
}
