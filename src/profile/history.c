/* history: the profiles a store kept (<dir>/history/<name>/<epoch ms>.json, name = the GPU
 * uuid or "host") and drift, a figure of a new profile that left the previous profile's spread.
 * See ftprofile.h for the contracts. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ftprofile.h"
#include "profile_internal.h"
#include "util/fsutil.h"

/* dir/history/<name of the store file without .json> */
static int hist_dir(const char *sdir, const char *gpu_uuid, char *buf, size_t n)
{
	char file[PATH_MAX], d[PATH_MAX];
	int r = ftprof_store_file(sdir, gpu_uuid, file, sizeof file);
	if (r)
		return r;
	ftfs_dirname(file, d, sizeof d);
	const char *base = strrchr(file, '/') ? strrchr(file, '/') + 1 : file;
	size_t bl = strlen(base);
	if (bl > 5 && !strcmp(base + bl - 5, ".json"))
		bl -= 5;
	if (snprintf(buf, n, "%s/history/%.*s", d, (int)bl, base) >= (int)n)
		return -ENAMETOOLONG;
	return 0;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The kept files' names (<digits>.json), oldest first: a new array of new strings. */
static int hist_names(const char *hd, char ***out, int *n)
{
	*out = NULL;
	*n = 0;
	DIR *d = opendir(hd);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	char **v = NULL;
	int k = 0, cap = 0, r = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);
		if (l < 6 || l > 40 || strcmp(e->d_name + l - 5, ".json") || strspn(e->d_name, "0123456789") != l - 5)
			continue;
		if (k == cap) {
			cap = cap ? cap * 2 : 16;
			char **nv = realloc(v, (size_t)cap * sizeof *v);
			if (!nv) {
				r = -ENOMEM;
				break;
			}
			v = nv;
		}
		if (!(v[k] = strdup(e->d_name))) {
			r = -ENOMEM;
			break;
		}
		k++;
	}
	closedir(d);
	if (r) {
		while (k--)
			free(v[k]);
		free(v);
		return r;
	}
	if (k) /* qsort(NULL, 0) is undefined (UBSan) */
		qsort(v, (size_t)k, sizeof *v, name_cmp); /* zero-padded: text order is time order */
	*out = v;
	*n = k;
	return 0;
}

static void free_names(char **v, int n)
{
	for (int i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

int ftprof_history_add(const char *sdir, const json_t *profile, const char *gpu_uuid, int keep)
{
	char hd[PATH_MAX], path[PATH_MAX + 32];
	if (!json_is_object(profile))
		return -EINVAL;
	if (keep <= 0)
		return 0;
	int r = hist_dir(sdir, gpu_uuid, hd, sizeof hd);
	if (r || (r = ftfs_mkdir_p(hd, 0755)))
		return r;
	json_t *ep = json_object_get(profile, "epoch");
	long long ms = json_is_number(ep) ? (long long)llround(json_number_value(ep) * 1000.0) : 0;
	char **names;
	int n;
	if ((r = hist_names(hd, &names, &n)))
		return r;
	/* a later name than every kept one, even when the clock or the profile's epoch went back */
	if (n) {
		long long last = atoll(names[n - 1]);
		if (ms <= last)
			ms = last + 1;
	}
	snprintf(path, sizeof path, "%s/%013lld.json", hd, ms);
	char *text = json_dumps(profile, JSON_INDENT(2) | JSON_REAL_PRECISION(15));
	if (!text) {
		free_names(names, n);
		return -ENOMEM;
	}
	r = ftfs_write_atomic(path, text, strlen(text), 0644);
	free(text);
	/* prune the oldest beyond keep (the new one counts) */
	for (int i = 0; r == 0 && i < n + 1 - keep && i < n; i++) {
		snprintf(path, sizeof path, "%s/%s", hd, names[i]);
		if (unlink(path) < 0 && errno != ENOENT)
			r = -errno;
	}
	free_names(names, n);
	return r;
}

int ftprof_history_load(const char *sdir, const char *gpu_uuid, int limit, json_t **out)
{
	char hd[PATH_MAX], path[PATH_MAX + 64];
	*out = NULL;
	int r = hist_dir(sdir, gpu_uuid, hd, sizeof hd);
	if (r)
		return r;
	char **names;
	int n;
	if ((r = hist_names(hd, &names, &n)))
		return r;
	json_t *arr = json_array();
	for (int i = limit > 0 && n > limit ? n - limit : 0; arr && i < n; i++) {
		snprintf(path, sizeof path, "%s/%s", hd, names[i]);
		json_t *p = ftprofint_load_json(path);
		if (json_is_object(p))
			json_array_append(arr, p);
		json_decref(p);
	}
	free_names(names, n);
	if (!arr)
		return -ENOMEM;
	*out = arr;
	return 0;
}

/* ---------------------------------------------------------------- drift */

/* A figure's median and spread: {key} and {key}_spread {min, max} inside o. */
static int figure(const json_t *o, const char *key, double *v, double *lo, double *hi)
{
	json_t *x = json_object_get(o, key);
	if (!json_is_number(x) || !(json_number_value(x) > 0))
		return 0;
	*v = json_number_value(x);
	char sk[96];
	snprintf(sk, sizeof sk, "%s_spread", key);
	json_t *sp = json_object_get(o, sk), *mn = json_object_get(sp, "min"), *mx = json_object_get(sp, "max");
	*lo = json_is_number(mn) && json_number_value(mn) > 0 ? json_number_value(mn) : *v;
	*hi = json_is_number(mx) && json_number_value(mx) >= *lo ? json_number_value(mx) : *v;
	if (*lo > *v)
		*lo = *v;
	if (*hi < *v)
		*hi = *v;
	return 1;
}

static void drift_one(json_t *arr, const char *name, const json_t *po, const json_t *co, const char *key,
		      double share)
{
	double pv, plo, phi, cv, clo, chi;
	if (!figure(po, key, &pv, &plo, &phi) || !figure(co, key, &cv, &clo, &chi))
		return;
	if (cv >= plo * (1.0 - share) && cv <= phi * (1.0 + share))
		return;
	json_array_append_new(arr, json_pack("{s:s,s:f,s:f,s:f,s:f,s:f}", "figure", name, "previous", pv,
					     "previous_min", plo, "previous_max", phi, "current", cv, "ratio", cv / pv));
}

json_t *ftprof_drift(const json_t *prev, const json_t *cur, double share)
{
	json_t *arr = json_array();
	if (!arr || !json_is_object(prev) || !json_is_object(cur))
		return arr;
	static const char *const ceil[] = {"cpu_stream_read_gbs", "pcie_linear_h2d_gbs", "pcie_linear_d2h_gbs"};
	for (int i = 0; i < 3; i++)
		drift_one(arr, ceil[i], json_object_get(prev, "ceilings"), json_object_get(cur, "ceilings"), ceil[i],
			  share);
	static const char *const ek[] = {"cpu_moe_gbs", "pcie_gather_gbs"};
	const char *fmt;
	json_t *ce;
	json_object_foreach((json_t *)json_object_get(cur, "dtype_kernels"), fmt, ce) {
		const json_t *pe = json_object_get(json_object_get(prev, "dtype_kernels"), fmt);
		for (int i = 0; i < 2; i++) {
			char name[160];
			snprintf(name, sizeof name, "%s.%s", fmt, ek[i]);
			drift_one(arr, name, pe, ce, ek[i], share);
		}
	}
	return arr;
}

int ftprof_store_commit(const char *sdir, const json_t *profile, const char *gpu_uuid, int keep, double share,
			char *path_out, size_t n)
{
	char cur[PATH_MAX];
	if (!json_is_object(profile))
		return -EINVAL;
	json_t *p = json_deep_copy(profile);
	if (!p)
		return -ENOMEM;
	/* the previous profile of the same GPU, as stored (not the FREETOKEN_BENCHBW_PATH override) */
	json_t *gpu = json_object_get(p, "gpu");
	const char *uuid = gpu_uuid && *gpu_uuid ? gpu_uuid
			   : json_is_string(json_object_get(gpu, "uuid")) ? json_string_value(json_object_get(gpu, "uuid"))
									 : NULL;
	json_t *prev = NULL;
	if (ftprof_store_file(sdir, uuid, cur, sizeof cur) == 0)
		prev = ftprofint_load_json(cur);
	if (share > 0 && json_is_object(prev)) {
		json_t *d = ftprof_drift(prev, p, share);
		if (json_array_size(d)) {
			json_t *w = json_object_get(p, "warnings");
			if (!json_is_array(w)) {
				w = json_array();
				json_object_set_new(p, "warnings", w);
			}
			size_t i;
			json_t *x;
			json_array_foreach(d, i, x) {
				char msg[320];
				snprintf(msg, sizeof msg,
					 "drift: %s %.2f is outside the previous profile's %.2f-%.2f by more than %.0f%%",
					 json_string_value(json_object_get(x, "figure")),
					 json_number_value(json_object_get(x, "current")),
					 json_number_value(json_object_get(x, "previous_min")),
					 json_number_value(json_object_get(x, "previous_max")), share * 100);
				json_array_append_new(w, json_string(msg));
			}
		}
		json_object_set_new(p, "drift", d);
	}
	json_decref(prev);
	int r = ftprof_store_write_in(sdir, p, gpu_uuid, path_out, n);
	if (r == 0)
		r = ftprof_history_add(sdir, p, uuid, keep);
	json_decref(p);
	return r;
}
