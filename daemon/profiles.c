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
	int r = ftprof_store_write_in(ftd.profile_dir, profile, uuid, path, sizeof path);
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

/* Call fn for each stored profile (uuid or "host", parsed JSON, path); files whose name is not a
 * GPU uuid or whose content is not a JSON object are skipped. */
static void each_profile(void (*fn)(const char *uuid, json_t *p, const char *path, void *ctx), void *ctx)
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
	each_profile(list_one, arr);
	return json_pack("{s:s,s:o}", "dir", ftd.profile_dir, "profiles", arr);
}

static void metric_one(const char *uuid, json_t *p, const char *path, void *ctx)
{
	struct ftd_mbuf *m = ctx;
	json_t *c = json_object_get(p, "ceilings");
	static const char *const keys[][2] = {{"cpu_stream_read_gbs", "ftbenchd_profile_cpu_stream_read_gbs"},
					      {"pcie_linear_h2d_gbs", "ftbenchd_profile_pcie_h2d_gbs"},
					      {"pcie_linear_d2h_gbs", "ftbenchd_profile_pcie_d2h_gbs"}};
	for (int i = 0; i < 3; i++) {
		json_t *v = json_object_get(c, keys[i][0]);
		if (json_is_number(v))
			ftd_mcat(m, "%s{gpu=\"%s\"} %.6g\n", keys[i][1], uuid, json_number_value(v));
	}
	json_t *ep = json_object_get(p, "epoch");
	if (json_is_number(ep))
		ftd_mcat(m, "ftbenchd_profile_timestamp_seconds{gpu=\"%s\"} %.3f\n", uuid, json_number_value(ep));
	const char *k;
	json_t *v;
	json_object_foreach(json_object_get(p, "dtypes"), k, v) {
		if (json_is_string(v) && label_ok(k))
			ftd_mcat(m, "ftbenchd_profile_hybrid{gpu=\"%s\",dtype=\"%s\"} %d\n", uuid, k,
				!strcmp(json_string_value(v), "hybrid"));
	}
}

void ftd_profiles_metrics(struct ftd_mbuf *m)
{
	ftd_mcat(m, "# HELP ftbenchd_profile_cpu_stream_read_gbs CPU read ceiling of the last profile, GB/s.\n"
		    "# TYPE ftbenchd_profile_cpu_stream_read_gbs gauge\n"
		    "# HELP ftbenchd_profile_pcie_h2d_gbs Linear pinned host-to-device ceiling of the last profile, GB/s.\n"
		    "# TYPE ftbenchd_profile_pcie_h2d_gbs gauge\n"
		    "# HELP ftbenchd_profile_pcie_d2h_gbs Linear pinned device-to-host ceiling of the last profile, GB/s.\n"
		    "# TYPE ftbenchd_profile_pcie_d2h_gbs gauge\n"
		    "# HELP ftbenchd_profile_timestamp_seconds When the last profile was measured.\n"
		    "# TYPE ftbenchd_profile_timestamp_seconds gauge\n"
		    "# HELP ftbenchd_profile_hybrid 1 when the last profile recommends hybrid for the dtype, 0 offload.\n"
		    "# TYPE ftbenchd_profile_hybrid gauge\n");
	each_profile(metric_one, m);
}
