#include "tmpdir.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "util/fsutil.h"

int tmpdir_make(char *dir, size_t n, const char *name)
{
	if ((size_t)snprintf(dir, n, "/tmp/%s_XXXXXX", name) >= n)
		return -1;
	return mkdtemp(dir) ? 0 : -1;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	return remove(path) == 0 || errno == ENOENT ? 0 : -1;
}

int tmpdir_remove(const char *dir)
{
	struct stat st;
	if (lstat(dir, &st) < 0)
		return errno == ENOENT ? 0 : -1;
	return nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS) == 0 ? 0 : -1;
}

static int remove_below(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	if (f->level == 0)
		return 0;
	return remove(path) == 0 || errno == ENOENT ? 0 : -1;
}

int tmpdir_clear(const char *dir)
{
	return nftw(dir, remove_below, 16, FTW_DEPTH | FTW_PHYS) == 0 ? 0 : -1;
}

int tmpdir_put(const char *path, const void *data, size_t len)
{
	char dir[4096];
	ftfs_dirname(path, dir, sizeof dir);
	int r = ftfs_mkdir_p(dir, 0755);
	if (r < 0)
		return r;
	FILE *f = fopen(path, "we");
	if (!f)
		return -errno;
	r = fwrite(data, 1, len, f) == len ? 0 : -EIO;
	if (fclose(f) && !r)
		r = -errno;
	return r;
}
