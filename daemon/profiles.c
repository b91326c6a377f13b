/* profiles: the store bw results land in (<profile-dir>/<gpu-uuid>.json, host.json for a
 * GPU-less host), its listing, and the figures /metrics shows from it. */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftbenchd.h"
#include "util/fsutil.h"

static int uuid_ok(const char *u)
{
	size_t l = strlen(u);
	if (l == 0 || l > 80)
		return 0;
	for (const char *p = u; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-'))
			return 0;
	return 1;
}

/* Until the profile helper's ftprof_store_write lands on main: the same contract, a minimal
 * shape check and an atomic write. */
int ftd_profile_store(const json_t *profile, const char *uuid, char **path_out)
{
	const char *name = uuid && *uuid ? uuid : "host";
	if (!json_is_object(profile) || !json_is_integer(json_object_get(profile, "version")) || !uuid_ok(name))
		return -EINVAL;
	int r = ftfs_mkdir_p(ftd.profile_dir, 0755);
	if (r < 0)
		return r;
	char path[4096];
	snprintf(path, sizeof path, "%s/%s.json", ftd.profile_dir, name);
	char *s = json_dumps(profile, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	if (!s)
		return -ENOMEM;
	size_t l = strlen(s);
	char *t = realloc(s, l + 2);
	if (!t) {
		free(s);
		return -ENOMEM;
	}
	t[l] = '\n';
	t[l + 1] = '\0';
	r = ftfs_write_atomic(path, t, l + 1, 0644);
	free(t);
	if (r == 0)
		*path_out = strdup(path);
	return r;
}

int ftd_profile_read(const char *uuid, char **text, size_t *len)
{
	if (!uuid_ok(uuid))
		return -EINVAL;
	char path[4096];
	snprintf(path, sizeof path, "%s/%s.json", ftd.profile_dir, uuid);
	return ftfs_read_file(path, 64 << 20, text, len);
}

/* Call fn for each stored profile (uuid, parsed JSON, path). */
static void each_profile(void (*fn)(const char *uuid, json_t *p, const char *path, void *ctx), void *ctx)
{
	DIR *d = opendir(ftd.profile_dir);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);
		if (l < 6 || strcmp(e->d_name + l - 5, ".json"))
			continue;
		char uuid[96];
		if (l - 5 >= sizeof uuid)
			continue;
		memcpy(uuid, e->d_name, l - 5);
		uuid[l - 5] = '\0';
		if (!uuid_ok(uuid))
			continue;
		char path[4096];
		snprintf(path, sizeof path, "%s/%s", ftd.profile_dir, e->d_name);
		json_t *p = json_load_file(path, 0, NULL);
		if (json_is_object(p))
			fn(uuid, p, path, ctx);
		json_decref(p);
	}
	closedir(d);
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

struct mbuf {
	char **buf;
	size_t *len, *cap;
};

static void mprintf(struct mbuf *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void mprintf(struct mbuf *m, const char *fmt, ...)
{
	va_list ap;
	for (;;) {
		size_t room = *m->cap - *m->len;
		va_start(ap, fmt);
		int w = vsnprintf(*m->buf + *m->len, room, fmt, ap);
		va_end(ap);
		if (w < 0)
			return;
		if ((size_t)w < room) {
			*m->len += (size_t)w;
			return;
		}
		size_t cap = (*m->cap + (size_t)w + 1) * 2;
		char *n = realloc(*m->buf, cap);
		if (!n)
			return;
		*m->buf = n;
		*m->cap = cap;
	}
}

static void metric_one(const char *uuid, json_t *p, const char *path, void *ctx)
{
	struct mbuf *m = ctx;
	json_t *c = json_object_get(p, "ceilings");
	static const char *const keys[][2] = {{"cpu_stream_read_gbs", "ftbenchd_profile_cpu_stream_read_gbs"},
					      {"pcie_linear_h2d_gbs", "ftbenchd_profile_pcie_h2d_gbs"},
					      {"pcie_linear_d2h_gbs", "ftbenchd_profile_pcie_d2h_gbs"}};
	for (int i = 0; i < 3; i++) {
		json_t *v = json_object_get(c, keys[i][0]);
		if (json_is_number(v))
			mprintf(m, "%s{gpu=\"%s\"} %.6g\n", keys[i][1], uuid, json_number_value(v));
	}
	json_t *ep = json_object_get(p, "epoch");
	if (json_is_number(ep))
		mprintf(m, "ftbenchd_profile_timestamp_seconds{gpu=\"%s\"} %.3f\n", uuid, json_number_value(ep));
	const char *k;
	json_t *v;
	json_object_foreach(json_object_get(p, "dtypes"), k, v) {
		if (json_is_string(v) && uuid_ok(k))
			mprintf(m, "ftbenchd_profile_hybrid{gpu=\"%s\",dtype=\"%s\"} %d\n", uuid, k,
				!strcmp(json_string_value(v), "hybrid"));
	}
}

void ftd_profiles_metrics(char **buf, size_t *len, size_t *cap)
{
	struct mbuf m = {buf, len, cap};
	mprintf(&m, "# HELP ftbenchd_profile_cpu_stream_read_gbs CPU read ceiling of the last profile, GB/s.\n"
		    "# TYPE ftbenchd_profile_cpu_stream_read_gbs gauge\n"
		    "# HELP ftbenchd_profile_pcie_h2d_gbs Linear pinned host-to-device ceiling of the last profile, GB/s.\n"
		    "# TYPE ftbenchd_profile_pcie_h2d_gbs gauge\n"
		    "# HELP ftbenchd_profile_pcie_d2h_gbs Linear pinned device-to-host ceiling of the last profile, GB/s.\n"
		    "# TYPE ftbenchd_profile_pcie_d2h_gbs gauge\n"
		    "# HELP ftbenchd_profile_timestamp_seconds When the last profile was measured.\n"
		    "# TYPE ftbenchd_profile_timestamp_seconds gauge\n"
		    "# HELP ftbenchd_profile_hybrid 1 when the last profile recommends hybrid for the dtype, 0 offload.\n"
		    "# TYPE ftbenchd_profile_hybrid gauge\n");
	each_profile(metric_one, &m);
}
