/* profiles: the store bw results land in (<profile-dir>/<gpu-uuid>.json, host.json for a
 * GPU-less host), its listing, and the figures /metrics shows from it. The store itself (paths,
 * atomic write, listing) is libftprofile's (src/profile/ftprofile.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftbenchd.h"
#include "ftprofile.h"
#include "util/fsutil.h"

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

int ftd_profile_store(const json_t *profile, const char *uuid, char **path_out)
{
	char path[4096];
	int r = ftprof_store_commit(ftd.profile_dir, profile, uuid, (int)ftd.cfg.history, ftd.cfg.drift_pct / 100.0,
				    path, sizeof path);
	if (r < 0)
		return r;
	*path_out = strdup(path);
	return *path_out ? 0 : -ENOMEM;
}

int ftd_profile_read(const char *uuid, char **text, size_t *len)
{
	char path[4096];
	if (!uuid || !*uuid)
		return -EINVAL;
	int r = ftprof_store_file(ftd.profile_dir, uuid, path, sizeof path);
	if (r < 0)
		return r;
	return ftfs_read_file(path, 64 << 20, text, len);
}

json_t *ftd_profile_history(const char *uuid, int limit)
{
	json_t *arr = NULL;
	if (ftprof_history_load(ftd.profile_dir, strcmp(uuid, "host") ? uuid : NULL, limit, &arr) < 0)
		return json_array();
	return arr;
}

/* Call fn for each stored profile (uuid or "host", parsed JSON, path); files whose name is not a
 * GPU uuid or whose content is not a JSON object are skipped. */
void ftd_profiles_each(void (*fn)(const char *uuid, json_t *p, const char *path, void *ctx), void *ctx)
{
	struct ftprof_entry *e;
	char check[4096];
	int n;
	if (ftprof_store_list(ftd.profile_dir, &e, &n) < 0)
		return;
	for (int i = 0; i < n; i++) {
		if (ftprof_store_file(ftd.profile_dir, e[i].name, check, sizeof check) < 0)
			continue;
		json_t *p = json_load_file(e[i].path, 0, NULL);
		if (json_is_object(p))
			fn(e[i].name, p, e[i].path, ctx);
		json_decref(p);
	}
	free(e);
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

json_t *ftd_profiles_list(void)
{
	json_t *arr = json_array();
	ftd_profiles_each(list_one, arr);
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
			ftd_mcat(m, "%s{gpu=\"%s\"} %.6g\n", name, uuid, json_number_value(v));
	} else if (!strcmp(name, "ftbenchd_profile_timestamp_seconds")) {
		json_t *ep = json_object_get(p, "epoch");
		if (json_is_number(ep))
			ftd_mcat(m, "%s{gpu=\"%s\"} %.3f\n", name, uuid, json_number_value(ep));
	} else if (!strcmp(name, "ftbenchd_profile_drift_ratio")) {
		size_t i;
		json_t *d;
		json_array_foreach(json_object_get(p, "drift"), i, d) {
			const char *fig = json_string_value(json_object_get(d, "figure"));
			json_t *r = json_object_get(d, "ratio");
			if (fig && label_ok(fig) && json_is_number(r))
				ftd_mcat(m, "%s{gpu=\"%s\",figure=\"%s\"} %.6g\n", name, uuid, fig, json_number_value(r));
		}
	} else {
		const char *k;
		json_t *v;
		json_object_foreach(json_object_get(p, "dtypes"), k, v) {
			if (json_is_string(v) && label_ok(k))
				ftd_mcat(m, "%s{gpu=\"%s\",dtype=\"%s\"} %d\n", name, uuid, k,
					 !strcmp(json_string_value(v), "hybrid"));
		}
	}
}

void ftd_profiles_metrics(struct ftd_mbuf *m)
{
	json_t *all = json_object();
	ftd_profiles_each(collect_one, all);
	for (size_t f = 0; f < sizeof profile_families / sizeof *profile_families; f++) {
		ftd_mcat(m, "# HELP %s %s\n# TYPE %s gauge\n", profile_families[f].name, profile_families[f].help,
			 profile_families[f].name);
		const char *uuid;
		json_t *p;
		json_object_foreach(all, uuid, p)
			if (label_ok(uuid))
				family_samples(m, (int)f, uuid, p);
	}
	json_decref(all);
}
