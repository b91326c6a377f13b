/* libftprofile: where profiles live, the atomic writer and the store listing. */
#include "ftprofile.h"
#include "profile_internal.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/fsutil.h"

static int copy_out(char *buf, size_t n, const char *fmt, const char *a, const char *b)
{
	int w = snprintf(buf, n, fmt, a, b);
	if (w < 0)
		return -EINVAL;
	return (size_t)w >= n ? -ENAMETOOLONG : 0;
}

int ftprofint_cache_home(char *buf, size_t n)
{
	const char *xdg = getenv("XDG_CACHE_HOME");
	const char *home;

	if (xdg && *xdg)
		return copy_out(buf, n, "%s%s", xdg, "");
	home = getenv("HOME");
	if (!home || !*home) {
		struct passwd pw, *res = NULL;
		char tmp[4096];
		if (getpwuid_r(getuid(), &pw, tmp, sizeof tmp, &res) || !res || !res->pw_dir || !*res->pw_dir)
			return -ENOENT;
		return copy_out(buf, n, "%s%s", res->pw_dir, "/.cache");
	}
	return copy_out(buf, n, "%s%s", home, "/.cache");
}

json_t *ftprofint_load_json(const char *path)
{
	char *text;
	size_t len;
	if (ftfs_read_regular(path, FTPROF_MAX_FILE_BYTES, &text, &len) < 0)
		return NULL;
	json_t *j = json_loadb(text, len, 0, NULL);
	free(text);
	return j;
}

int ftprof_store_dir(char *buf, size_t n)
{
	char cache[PATH_MAX];
	int r = ftprofint_cache_home(cache, sizeof cache);
	if (r)
		return r;
	return copy_out(buf, n, "%s%s", cache, "/freetoken/benchbw");
}

int ftprofint_valid_uuid(const char *u)
{
	size_t len = strlen(u);
	if (!len || len > 100 || u[0] == '.')
		return 0;
	for (const char *p = u; *p; p++) {
		char ch = *p;
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
		      ch == '-' || ch == '_' || ch == '.' || ch == ':'))
			return 0;
	}
	return 1;
}

int ftprofint_file_in(const char *dir, const char *gpu_uuid, char *buf, size_t n)
{
	if (gpu_uuid && *gpu_uuid) {
		if (!ftprofint_valid_uuid(gpu_uuid))
			return -EINVAL;
		int w = snprintf(buf, n, "%s/%s.json", dir, gpu_uuid);
		return w < 0 ? -EINVAL : (size_t)w >= n ? -ENAMETOOLONG : 0;
	}
	return copy_out(buf, n, "%s%s", dir, "/host.json");
}

int ftprof_path(const char *gpu_uuid, char *buf, size_t n)
{
	const char *env = getenv(FTPROF_ENV_PATH);
	char dir[PATH_MAX];
	int r;

	if (!buf || !n)
		return -EINVAL;
	if (gpu_uuid && *gpu_uuid && !ftprofint_valid_uuid(gpu_uuid))
		return -EINVAL;
	if (env && *env)
		return copy_out(buf, n, "%s%s", env, "");
	if ((r = ftprof_store_dir(dir, sizeof dir)))
		return r;
	return ftprofint_file_in(dir, gpu_uuid, buf, n);
}

/* "GPU-8EB9..." and "8eb9..." name the same GPU. */
const char *ftprofint_uuid_body(const char *u)
{
	return strncasecmp(u, "GPU-", 4) ? u : u + 4;
}

int ftprofint_uuid_equal(const char *a, const char *b)
{
	return !strcasecmp(ftprofint_uuid_body(a), ftprofint_uuid_body(b));
}

int ftprof_store_file(const char *dir, const char *gpu_uuid, char *buf, size_t n)
{
	char def[PATH_MAX];
	int r;
	if (!buf || !n)
		return -EINVAL;
	if (!dir) {
		if ((r = ftprof_store_dir(def, sizeof def)))
			return r;
		dir = def;
	}
	return ftprofint_file_in(dir, gpu_uuid, buf, n);
}

/* The profile as written everywhere (store, legacy copy): same bytes for the same document. */
static int write_file(const char *path, const json_t *profile)
{
	char dir[PATH_MAX];
	char *text;
	int r;
	ftfs_dirname(path, dir, sizeof dir);
	if ((r = ftfs_mkdir_p(dir, 0755)))
		return r;
	text = json_dumps(profile, JSON_INDENT(2) | JSON_REAL_PRECISION(15));
	if (!text)
		return -ENOMEM;
	size_t len = strlen(text);
	char *full = realloc(text, len + 2);
	if (!full) {
		free(text);
		return -ENOMEM;
	}
	full[len++] = '\n';
	full[len] = '\0';
	r = ftfs_write_atomic(path, full, len, 0644);
	free(full);
	return r;
}

int ftprof_store_write(const json_t *profile, const char *gpu_uuid, char *path_out, size_t n)
{
	return ftprof_store_write_in(NULL, profile, gpu_uuid, path_out, n);
}

int ftprof_store_write_in(const char *sdir, const json_t *profile, const char *gpu_uuid,
			  char *path_out, size_t n)
{
	const json_t *gpu, *pu;
	const char *uuid = NULL;
	char path[PATH_MAX];
	int r;

	if (!json_is_object(profile) || !json_is_integer(json_object_get(profile, "version")))
		return -EINVAL;
	gpu = json_object_get(profile, "gpu");
	if (!gpu || (!json_is_null(gpu) && !json_is_object(gpu)))
		return -EINVAL;
	if (json_is_object(gpu)) {
		pu = json_object_get(gpu, "uuid");
		if (!json_is_string(pu) || !*json_string_value(pu))
			return -EINVAL;
		uuid = json_string_value(pu);
		if (gpu_uuid && *gpu_uuid && !ftprofint_uuid_equal(gpu_uuid, uuid))
			return -EINVAL;
	} else if (gpu_uuid && *gpu_uuid) {
		return -EINVAL; /* a GPU-less profile is host.json, never a GPU's file */
	}
	if (gpu_uuid && *gpu_uuid)
		uuid = gpu_uuid;
	r = sdir ? ftprofint_file_in(sdir, uuid, path, sizeof path) : ftprof_path(uuid, path, sizeof path);
	if (r)
		return r;
	if (path_out && (r = copy_out(path_out, n, "%s%s", path, "")))
		return r;
	return write_file(path, profile);
}

int ftprof_legacy_path(char *buf, size_t n)
{
	char cache[PATH_MAX];
	int r;
	if (!buf || !n)
		return -EINVAL;
	if ((r = ftprofint_cache_home(cache, sizeof cache)))
		return r;
	return copy_out(buf, n, "%s%s", cache, "/freetoken/benchbw.json");
}

int ftprof_legacy_copy(const char *src, char *path_out, size_t n)
{
	char path[PATH_MAX], dir[PATH_MAX];
	char *text = NULL;
	size_t len = 0;
	json_t *j;
	int r;
	if (!src || !*src)
		return -EINVAL;
	if ((r = ftprof_legacy_path(path, sizeof path)))
		return r;
	if (path_out && (r = copy_out(path_out, n, "%s%s", path, "")))
		return r;
	if ((r = ftfs_read_regular(src, FTPROF_MAX_FILE_BYTES, &text, &len)))
		return r;
	j = json_loadb(text, len, 0, NULL);
	r = json_is_object(j) ? 0 : -EINVAL; /* a profile, not anything */
	json_decref(j);
	ftfs_dirname(path, dir, sizeof dir);
	if (r == 0)
		r = ftfs_mkdir_p(dir, 0755);
	if (r == 0)
		r = ftfs_write_atomic(path, text, len, 0644);
	free(text);
	return r;
}

int ftprof_store_settle(const char *dir, const json_t *profile, const char *gpu_uuid, int keep, double share,
			char *path_out, size_t n)
{
	char path[PATH_MAX];
	int r;
	if (!json_is_object(profile))
		return -EINVAL;
	if (!json_is_false(json_object_get(profile, "valid")))
		return ftprof_store_commit(dir, profile, gpu_uuid, keep, share, path_out, n);
	const json_t *gpu = json_object_get(profile, "gpu");
	const char *uuid = gpu_uuid && *gpu_uuid ? gpu_uuid : json_string_value(json_object_get(gpu, "uuid"));
	if ((r = ftprof_store_file(dir, uuid, path, sizeof path)))
		return r;
	if (path_out && (r = copy_out(path_out, n, "%s%s", path, "")))
		return r;
	r = ftprof_history_add(dir, profile, uuid, keep > 0 ? keep : 1);
	return r < 0 ? r : FTPROF_KEPT_INVALID;
}

int ftprof_legacy_settle(const json_t *profile, const char *stored, int host_gpus, enum ftprof_legacy *what,
			 char *path_out, size_t n)
{
	char lp[PATH_MAX];
	*what = FTPROF_LEGACY_WRITTEN; /* a failure below is the copy's */
	int r = ftprof_legacy_path(lp, sizeof lp);
	if (r)
		return r;
	if (path_out && (r = copy_out(path_out, n, "%s%s", lp, "")))
		return r;
	if (json_is_false(json_object_get(profile, "valid")))
		*what = FTPROF_LEGACY_NOT_VALID;
	else if (!json_is_object(json_object_get(profile, "gpu")))
		*what = FTPROF_LEGACY_NO_GPU;
	else if (host_gpus > 1)
		*what = FTPROF_LEGACY_MANY_GPUS;
	else if (stored && !strcmp(stored, lp))
		*what = FTPROF_LEGACY_SAME_FILE;
	else {
		*what = FTPROF_LEGACY_WRITTEN;
		return ftprof_legacy_copy(stored, NULL, 0);
	}
	return 0;
}

static int entry_cmp(const void *a, const void *b)
{
	return strcmp(((const struct ftprof_entry *)a)->name, ((const struct ftprof_entry *)b)->name);
}

int ftprof_store_list(const char *dir, struct ftprof_entry **out, int *n)
{
	char buf[PATH_MAX];
	struct ftprof_entry *v = NULL;
	int cnt = 0, cap = 0, r = 0;
	struct dirent *de;
	DIR *d;

	if (!out || !n)
		return -EINVAL;
	*out = NULL;
	*n = 0;
	if (!dir) {
		if ((r = ftprof_store_dir(buf, sizeof buf)))
			return r;
		dir = buf;
	}
	d = opendir(dir);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);
		struct stat st;
		struct ftprof_entry e;
		if (de->d_name[0] == '.' || l <= 5 || strcmp(de->d_name + l - 5, ".json") ||
		    l - 5 >= sizeof e.name)
			continue;
		memset(&e, 0, sizeof e);
		if ((size_t)snprintf(e.path, sizeof e.path, "%s/%s", dir, de->d_name) >= sizeof e.path)
			continue;
		if (stat(e.path, &st) || !S_ISREG(st.st_mode))
			continue;
		memcpy(e.name, de->d_name, l - 5);
		e.name[l - 5] = '\0';
		e.size = (long long)st.st_size;
		e.mtime = (double)st.st_mtim.tv_sec + st.st_mtim.tv_nsec * 1e-9;
		if (cnt == cap) {
			int nc = cap ? cap * 2 : 8;
			struct ftprof_entry *nv = realloc(v, (size_t)nc * sizeof *nv);
			if (!nv) {
				r = -ENOMEM;
				goto out;
			}
			v = nv;
			cap = nc;
		}
		v[cnt++] = e;
	}
	qsort(v, (size_t)cnt, sizeof *v, entry_cmp);
out:
	closedir(d);
	if (r) {
		free(v);
		return r;
	}
	if (!cnt) {
		free(v);
		v = NULL;
	}
	*out = v;
	*n = cnt;
	return 0;
}
