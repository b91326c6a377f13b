/* profiles: the profile store; see profiles.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profiles.h"

#include "daemon.h"
#include "mbuf.h"
#include "ftprofile.h"
#include "log.h"
#include "util/fsutil.h"
#include "util/timeutil.h"

/* A metric label value: the characters of a profile file name (no quote, backslash or newline). */
static int label_ok(const char *s)
{
	if (!*s)
		return 0;
	for (const char *p = s; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' ||
		      *p == '_' || *p == '.' || *p == ':'))
			return 0;
	return 1;
}

int ftd_profiles_store(const json_t *profile, const char *uuid, char **path_out)
{
	char path[4096];
	int r = ftprof_store_settle(ftd.profile_dir, profile, uuid, (int)ftd.cfg.history, ftd.cfg.drift_pct / 100.0,
				    path, sizeof path);
	if (r < 0)
		return r;
	int w;
	if (r == 0 && (w = ftd_profiles_nfd_write()) < 0)
		ftd_log(FTD_LOG_WARNING, "nfd-features-file %s: %s", ftd.cfg.nfd_file, strerror(-w));
	*path_out = strdup(path);
	return *path_out ? r : -ENOMEM;
}

int ftd_profiles_legacy(const json_t *profile, const char *stored, char *msg, size_t n)
{
	char lp[4096];
	enum ftprof_legacy what;
	msg[0] = '\0';
	if (!ftd.cfg.bw_legacy_copy)
		return 0;
	int r = ftprof_legacy_settle(profile, stored, ftd.ngpus, &what, lp, sizeof lp);
	if (r < 0)
		snprintf(msg, n, "the legacy copy %s could not be written: %s", lp, strerror(-r));
	else if (what == FTPROF_LEGACY_WRITTEN)
		snprintf(msg, n, "legacy copy: %s", lp);
	else if (what == FTPROF_LEGACY_MANY_GPUS)
		snprintf(msg, n, "this host has %d GPUs: the legacy single file %s is not written", ftd.ngpus, lp);
	return r;
}

/* ---------------------------------------------------------------- node-feature-discovery */

/* A label value NFD accepts: [A-Za-z0-9._-], at most 63 characters, starting and ending with an
 * alphanumeric. */
static int nfd_value_ok(const char *s)
{
	size_t l = strlen(s);
	if (l == 0 || l > 63)
		return 0;
	for (size_t i = 0; i < l; i++) {
		char c = s[i];
		int an = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
		if (!an && ((c != '.' && c != '_' && c != '-') || i == 0 || i == l - 1))
			return 0;
	}
	return 1;
}

static void nfd_one(const char *uuid, json_t *p, const char *path, void *ctx)
{
	json_t *acc = json_object_get(ctx, "formats");
	const char *k;
	json_t *v;
	json_integer_set(json_object_get(ctx, "n"), json_integer_value(json_object_get(ctx, "n")) + 1);
	json_object_foreach(json_object_get(p, "dtypes"), k, v) {
		const char *verdict = json_is_string(v) ? json_string_value(v) : "unmeasured";
		if (strcmp(verdict, "hybrid") && strcmp(verdict, "offload"))
			verdict = "unmeasured";
		const char *had = json_string_value(json_object_get(acc, k));
		json_object_set_new(acc, k, json_string(had && strcmp(had, verdict) ? "mixed" : verdict));
	}
}

int ftd_profiles_nfd_write(void)
{
	if (!ftd.cfg.nfd_file || !*ftd.cfg.nfd_file)
		return 0;
	json_t *ctx = json_pack("{s:o,s:i}", "formats", json_object(), "n", 0);
	if (!ctx)
		return -ENOMEM;
	ftd_profiles_each(nfd_one, ctx);
	struct ftd_mbuf m = {.cap = 1024};
	if (!(m.buf = malloc(m.cap))) {
		json_decref(ctx);
		return -ENOMEM;
	}
	m.buf[0] = '\0';
	ftd_mbuf_cat(&m, "# written by ftbenchd from the profiles in %s: the verdict per format over this host's\n"
		     "# GPUs (mixed: they differ). Do not edit: rewritten after every profile.\n",
		 ftd.profile_dir);
	ftd_mbuf_cat(&m, "ftbenchd/profiles=%lld\n", (long long)json_integer_value(json_object_get(ctx, "n")));
	const char *k;
	json_t *v;
	json_object_foreach(json_object_get(ctx, "formats"), k, v)
		if (nfd_value_ok(k))
			ftd_mbuf_cat(&m, "ftbenchd/%s=%s\n", k, json_string_value(v));
	json_decref(ctx);
	char dir[4096];
	ftfs_dirname(ftd.cfg.nfd_file, dir, sizeof dir);
	int r = ftfs_mkdir_p(dir, 0755);
	if (r == 0)
		r = ftfs_write_atomic(ftd.cfg.nfd_file, m.buf, m.len, 0644);
	free(m.buf);
	return r;
}

json_t *ftd_profiles_load(const char *path)
{
	char *text;
	size_t len;
	if (ftfs_read_regular(path, FTPROF_MAX_FILE_BYTES, &text, &len) < 0)
		return NULL;
	json_t *j = json_loadb(text, len, 0, NULL);
	free(text);
	return j;
}

int ftd_profiles_read(const char *uuid, char **text, size_t *len)
{
	char path[4096];
	if (!uuid || !*uuid)
		return -EINVAL;
	int r = ftprof_store_file(ftd.profile_dir, uuid, path, sizeof path);
	if (r < 0)
		return r;
	return ftfs_read_regular(path, FTPROF_MAX_FILE_BYTES, text, len);
}

json_t *ftd_profiles_history(const char *uuid, int limit)
{
	json_t *arr = NULL;
	if (ftprof_history_load(ftd.profile_dir, strcmp(uuid, "host") ? uuid : NULL, limit, &arr) < 0)
		return json_array();
	return arr;
}

int ftd_profiles_corrupt(const char *text, size_t len, char *why, size_t n)
{
	json_error_t je;
	json_t *p = json_loadb(text, len, 0, &je);
	int bad = !json_is_object(p);
	if (!p)
		snprintf(why, n, "not JSON (line %d: %s)", je.line, je.text);
	else if (bad)
		snprintf(why, n, "JSON, but not an object");
	json_decref(p);
	return bad;
}

/* Each stored file: fn for a profile (uuid or "host", parsed JSON, path), bad (may be NULL) for a
 * file that is not one (why); files whose name is not a GPU uuid are skipped. */
static void each_file(void (*fn)(const char *uuid, json_t *p, const char *path, void *ctx),
		      void (*bad)(const char *uuid, const char *path, const char *why, void *ctx), void *ctx)
{
	struct ftprof_entry *e;
	char check[4096], why[200];
	int n;
	if (ftprof_store_list(ftd.profile_dir, &e, &n) < 0)
		return;
	for (int i = 0; i < n; i++) {
		if (ftprof_store_file(ftd.profile_dir, e[i].name, check, sizeof check) < 0)
			continue;
		char *text = NULL;
		size_t len = 0;
		int r = ftfs_read_regular(e[i].path, FTPROF_MAX_FILE_BYTES, &text, &len);
		if (r == -EINVAL || r == -EFBIG) { /* a FIFO, a directory, a huge file: never read */
			if (bad)
				bad(e[i].name, e[i].path, r == -EFBIG ? "larger than a profile can be" : "not a regular file", ctx);
			continue;
		}
		if (r < 0)
			continue; /* gone since the listing */
		json_t *p = json_loadb(text, len, 0, NULL);
		if (json_is_object(p))
			fn(e[i].name, p, e[i].path, ctx);
		else if (bad && ftd_profiles_corrupt(text, len, why, sizeof why))
			bad(e[i].name, e[i].path, why, ctx);
		json_decref(p);
		free(text);
	}
	free(e);
}

void ftd_profiles_each(void (*fn)(const char *uuid, json_t *p, const char *path, void *ctx), void *ctx)
{
	each_file(fn, NULL, ctx);
}

static void list_one(const char *uuid, json_t *p, const char *path, void *ctx)
{
	json_t *arr = ctx;
	json_t *gpu = json_object_get(p, "gpu");
	json_t *dt = json_object_get(p, "dtypes");
	json_array_append_new(arr, json_pack("{s:s,s:s,s:O,s:O,s:O}", "uuid", uuid, "path", path, "timestamp",
					     json_is_string(json_object_get(p, "timestamp"))
						     ? json_object_get(p, "timestamp") : json_null(),
					     "gpu_name",
					     json_is_string(json_object_get(gpu, "name")) ? json_object_get(gpu, "name")
											   : json_null(),
					     "dtypes", json_is_object(dt) ? dt : json_null()));
}

/* A stored file that is not a profile is listed as such (never left out in silence). */
static void list_corrupt(const char *uuid, const char *path, const char *why, void *ctx)
{
	json_array_append_new(ctx, json_pack("{s:s,s:s,s:n,s:n,s:n,s:s}", "uuid", uuid, "path", path, "timestamp",
					     "gpu_name", "dtypes", "corrupt", why));
}

json_t *ftd_profiles_list(void)
{
	json_t *arr = json_array();
	each_file(list_one, list_corrupt, arr);
	return json_pack("{s:s,s:o}", "dir", ftd.profile_dir, "profiles", arr);
}

/* Prometheus' text format wants each family's samples right after its HELP and TYPE lines, so
 * the profiles are read once and each family walks them all. */
static void collect_one(const char *uuid, json_t *p, const char *path, void *ctx)
{
	json_object_set(ctx, uuid, p);
}

static const struct {
	const char *name, *help, *ceiling; /* ceiling: the key under "ceilings", NULL for the others */
} profile_families[] = {
	{"ftbenchd_profile_cpu_stream_read_gbs", "CPU read ceiling of the last profile, GB/s.", "cpu_stream_read_gbs"},
	{"ftbenchd_profile_pcie_h2d_gbs", "Linear pinned host-to-device ceiling of the last profile, GB/s.",
	 "pcie_linear_h2d_gbs"},
	{"ftbenchd_profile_pcie_d2h_gbs", "Linear pinned device-to-host ceiling of the last profile, GB/s.",
	 "pcie_linear_d2h_gbs"},
	{"ftbenchd_profile_timestamp_seconds", "When the last profile was measured.", NULL},
	{"ftbenchd_profile_hybrid", "1 when the last profile recommends hybrid for the dtype, 0 offload.", NULL},
	{"ftbenchd_profile_drift_ratio",
	 "A figure of the last profile that left the previous profile's spread: its value over the previous one.", NULL},
};

static void family_samples(struct ftd_mbuf *m, int f, const char *uuid, json_t *p)
{
	const char *name = profile_families[f].name;
	if (profile_families[f].ceiling) {
		json_t *v = json_object_get(json_object_get(p, "ceilings"), profile_families[f].ceiling);
		if (json_is_number(v))
			ftd_mbuf_cat(m, "%s{gpu=\"%s\"} %.6g\n", name, uuid, json_number_value(v));
	} else if (!strcmp(name, "ftbenchd_profile_timestamp_seconds")) {
		json_t *ep = json_object_get(p, "epoch");
		if (json_is_number(ep))
			ftd_mbuf_cat(m, "%s{gpu=\"%s\"} %.3f\n", name, uuid, json_number_value(ep));
	} else if (!strcmp(name, "ftbenchd_profile_drift_ratio")) {
		size_t i;
		json_t *d;
		json_array_foreach(json_object_get(p, "drift"), i, d) {
			const char *fig = json_string_value(json_object_get(d, "figure"));
			json_t *r = json_object_get(d, "ratio");
			if (fig && label_ok(fig) && json_is_number(r))
				ftd_mbuf_cat(m, "%s{gpu=\"%s\",figure=\"%s\"} %.6g\n", name, uuid, fig, json_number_value(r));
		}
	} else {
		const char *k;
		json_t *v;
		json_object_foreach(json_object_get(p, "dtypes"), k, v) {
			if (json_is_string(v) && label_ok(k))
				ftd_mbuf_cat(m, "%s{gpu=\"%s\",dtype=\"%s\"} %d\n", name, uuid, k,
					 !strcmp(json_string_value(v), "hybrid"));
		}
	}
}

void ftd_profiles_metrics(struct ftd_mbuf *m)
{
	json_t *all = json_object();
	ftd_profiles_each(collect_one, all);
	for (size_t f = 0; f < sizeof profile_families / sizeof *profile_families; f++) {
		ftd_mbuf_cat(m, "# HELP %s %s\n# TYPE %s gauge\n", profile_families[f].name, profile_families[f].help,
			 profile_families[f].name);
		const char *uuid;
		json_t *p;
		json_object_foreach(all, uuid, p)
			if (label_ok(uuid))
				family_samples(m, (int)f, uuid, p);
	}
	json_decref(all);
}
