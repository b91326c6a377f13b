#include "util/fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

int ftfs_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len > 0) {
		ssize_t w = write(fd, p, len);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

int ftfs_pread_full(int fd, void *buf, size_t n, off_t off)
{
	char *p = buf;
	while (n) {
		ssize_t r = pread(fd, p, n, off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -EIO;
		p += r, n -= (size_t)r, off += r;
	}
	return 0;
}

void ftfs_dirname(const char *path, char *dir, size_t n)
{
	const char *slash = strrchr(path, '/');
	if (!slash) {
		snprintf(dir, n, ".");
	} else if (slash == path) {
		snprintf(dir, n, "/");
	} else {
		size_t l = (size_t)(slash - path);
		if (l >= n)
			l = n - 1;
		memcpy(dir, path, l);
		dir[l] = '\0';
	}
}

static int fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int r = fsync(fd) < 0 && errno != EINVAL ? -errno : 0;
	close(fd);
	return r;
}

int ftfs_write_atomic(const char *path, const void *data, size_t len, mode_t mode)
{
	char dir[PATH_MAX], tmp[PATH_MAX];
	int r, fd;

	if (!path || !*path)
		return -EINVAL;
	ftfs_dirname(path, dir, sizeof dir);
	if (snprintf(tmp, sizeof tmp, "%s.tmp.XXXXXX", path) >= (int)sizeof tmp)
		return -ENAMETOOLONG;
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* held while the file is written: ftfs_sweep_temps leaves a locked temp file alone */
	flock(fd, LOCK_EX);
	r = ftfs_write_all(fd, data, len);
	if (!r && fchmod(fd, mode) < 0)
		r = -errno;
	if (!r && fsync(fd) < 0)
		r = -errno;
	if (close(fd) < 0 && !r)
		r = -errno;
	if (!r && rename(tmp, path) < 0)
		r = -errno;
	if (r) {
		unlink(tmp);
		return r;
	}
	return fsync_dir(dir);
}

int ftfs_mkdir_p(const char *path, mode_t mode)
{
	char buf[PATH_MAX];
	size_t n = strlen(path);
	if (n == 0 || n >= sizeof buf)
		return -EINVAL;
	memcpy(buf, path, n + 1);
	for (char *p = buf + 1; ; p++) {
		if (*p == '/' || *p == '\0') {
			char c = *p;
			*p = '\0';
			if (mkdir(buf, mode) < 0 && errno != EEXIST)
				return -errno;
			*p = c;
			if (!c)
				break;
		}
	}
	struct stat st;
	if (stat(path, &st) < 0)
		return -errno;
	return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}

static int read_fd(int fd, size_t max, char **out, size_t *len);

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)f;
	return (flag == FTW_DP ? rmdir(p) : unlink(p)) < 0 ? -errno : 0;
}

int ftfs_remove_tree(const char *path)
{
	struct stat st;
	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	int r = nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
	return r < 0 ? -errno : r;
}

int ftfs_read_file(const char *path, size_t max, char **out, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	return read_fd(fd, max, out, len);
}

int ftfs_read_regular(const char *path, size_t max, char **out, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return -errno;
	struct stat st;
	int r = fstat(fd, &st) < 0 ? -errno : !S_ISREG(st.st_mode) ? -EINVAL : (size_t)st.st_size > max ? -EFBIG : 0;
	if (r) {
		close(fd);
		return r;
	}
	return read_fd(fd, max, out, len);
}

/* Read fd (closed here) to its end. */
static int read_fd(int fd, size_t max, char **out, size_t *len)
{
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap + 1);
	int r = 0;
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	for (;;) {
		if (n == cap) {
			if (cap > max) {
				r = -EFBIG;
				break;
			}
			cap *= 2;
			char *nb = realloc(buf, cap + 1);
			if (!nb) {
				r = -ENOMEM;
				break;
			}
			buf = nb;
		}
		ssize_t g = read(fd, buf + n, cap - n);
		if (g < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			break;
		}
		if (g == 0)
			break;
		n += (size_t)g;
	}
	close(fd);
	if (!r && n > max)
		r = -EFBIG;
	if (r) {
		free(buf);
		return r;
	}
	buf[n] = '\0';
	*out = buf;
	if (len)
		*len = n;
	return 0;
}

int ftfs_sweep_temps(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return -errno;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		const char *t = strstr(e->d_name, ".tmp.");
		if (!t || t == e->d_name || strlen(t) != 11)
			continue;
		int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0)
			continue;
		struct stat st;
		if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && flock(fd, LOCK_EX | LOCK_NB) == 0 &&
		    unlinkat(dirfd(d), e->d_name, 0) == 0)
			n++;
		close(fd);
	}
	closedir(d);
	return n;
}

int ftfs_read_line(const char *path, char *buf, size_t n)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	int r = fgets(buf, (int)n, f) ? 0 : -EIO;
	fclose(f);
	if (r)
		buf[0] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return r;
}
