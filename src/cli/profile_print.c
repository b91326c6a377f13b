/* profile_print: see profile_print.h. */
#include "cli/profile_print.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli/table.h"

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

int ftcli_profile_history(const char *uuid, int limit, enum ftcli_format fmt)
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
		printf("; %s the profile's verdict (%s",
		       v.agrees == 1 ? "agrees with" : v.agrees == 0 ? "DISAGREES with" : "not compared with",
		       json_string_value(json_object_get(e, "verdict")) ?: "none");
		const json_t *vp = json_object_get(e, "verdict_point");
		if (json_is_object(vp))
			printf(" at cache %.2f, reuse %.2f", json_number_value(json_object_get(vp, "cache_fraction")),
			       json_number_value(json_object_get(vp, "reuse")));
		printf(")");
		if (v.state == FTPROF_VALIDATION_CURRENT)
			printf(", current\n");
		else
			printf(", STALE (%s: %s)\n", ftprof_validation_state_name(v.state),
			       v.state == FTPROF_VALIDATION_STALE_PROFILE ? "older than the profile, re-validate"
									  : "another engine version");
	}
}

void ftcli_profile_show(const struct ftprof *p, enum ftcli_format fmt)
{
	if (fmt == FTCLI_FMT_CSV || fmt == FTCLI_FMT_MD) {
		show_rows(p, fmt);
		return;
	}
	show_human(p);
	show_checks(p);
	show_validation(p);
}
