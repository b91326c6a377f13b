/* fsutil: atomic writes leave no temp file, replace whole contents, and fail cleanly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/fsutil.h"
#include "../lib/tmpdir.h"

static char dir[64];

static int setup(void **s)
{
	return tmpdir_make(dir, sizeof dir, "ft_fsutil");
}

static int teardown(void **s)
{
	return tmpdir_remove(dir);
}

static int count_entries(const char *d)
{
	DIR *dp = opendir(d);
	int n = 0;
	struct dirent *e;
	while ((e = readdir(dp)))
		if (e->d_name[0] != '.')
			n++;
	closedir(dp);
	return n;
}

static void test_atomic_roundtrip(void **s)
{
	char path[128], *buf;
	size_t len;
	snprintf(path, sizeof path, "%s/a/b/c", dir);
	assert_int_equal(ftfs_mkdir_p(path, 0755), 0);
	assert_int_equal(ftfs_mkdir_p(path, 0755), 0); /* exists: fine */
	snprintf(path, sizeof path, "%s/a/b/c/p.json", dir);
	assert_int_equal(ftfs_write_atomic(path, "first-long-content", 18, 0640), 0);
	assert_int_equal(ftfs_write_atomic(path, "second", 6, 0640), 0);
	assert_int_equal(ftfs_read_file(path, 1 << 20, &buf, &len), 0);
	assert_int_equal(len, 6);
	assert_string_equal(buf, "second");
	free(buf);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0640);
	snprintf(path, sizeof path, "%s/a/b/c", dir);
	assert_int_equal(count_entries(path), 1); /* no temp file left behind */
}

static void test_errors(void **s)
{
	char path[128], *buf;
	snprintf(path, sizeof path, "%s/missing/dir/file", dir);
	assert_int_equal(ftfs_write_atomic(path, "x", 1, 0644), -ENOENT);
	assert_int_equal(ftfs_read_file(path, 10, &buf, NULL), -ENOENT);
	snprintf(path, sizeof path, "%s/big", dir);
	assert_int_equal(ftfs_write_atomic(path, "0123456789abcdef", 16, 0644), 0);
	assert_int_equal(ftfs_read_file(path, 8, &buf, NULL), -EFBIG);
	snprintf(path, sizeof path, "%s/big/sub", dir);
	assert_int_not_equal(ftfs_mkdir_p(path, 0755), 0); /* a file is in the way */
}

static void touch(const char *name, const char *text)
{
	char p[128];
	snprintf(p, sizeof p, "%s/sweep/%s", dir, name);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* what an interrupted ftfs_write_atomic left is removed; a temp file a writer
 * still holds (locked), other names and links are left alone */
static void test_sweep_temps(void **s)
{
	char d[96], p[160], victim[160];
	snprintf(d, sizeof d, "%s/sweep", dir);
	assert_int_equal(mkdir(d, 0700), 0);
	touch("a.json.tmp.Ab12Cd", "{\"half");
	touch("b.json.tmp.xyzXYZ", "");
	touch("c.json", "{}");
	touch("d.tmp.json", "{}");
	touch("e.json.tmp.toolong1", "");
	touch("busy.json.tmp.QWErty", "");
	snprintf(victim, sizeof victim, "%s/victim", dir);
	FILE *f = fopen(victim, "w");
	fclose(f);
	snprintf(p, sizeof p, "%s/f.json.tmp.Link01", d);
	assert_int_equal(symlink(victim, p), 0);
	snprintf(p, sizeof p, "%s/busy.json.tmp.QWErty", d);
	int fd = open(p, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(flock(fd, LOCK_EX), 0);
	assert_int_equal(ftfs_sweep_temps(d), 2); /* a, b */
	close(fd);
	assert_int_equal(count_entries(d), 5);  /* c, d, e, busy, the link */
	assert_int_equal(access(victim, F_OK), 0);
	assert_int_equal(ftfs_sweep_temps(d), 1); /* busy, no longer locked */
	assert_int_equal(ftfs_sweep_temps("/nonexistent/dir"), -ENOENT);
}

static void test_dirname(void **s)
{
	char d[64];
	ftfs_dirname("/a/b/c.json", d, sizeof d);
	assert_string_equal(d, "/a/b");
	ftfs_dirname("c.json", d, sizeof d);
	assert_string_equal(d, ".");
	ftfs_dirname("/c.json", d, sizeof d);
	assert_string_equal(d, "/");
}

/* what a daemon reads from a shared directory: a FIFO is refused at once (no blocking
 * open), a file over the limit by its size, a directory too; a regular file reads as usual. */
static void test_read_regular(void **s)
{
	(void)s;
	char path[128], *buf = NULL;
	size_t len = 0;
	snprintf(path, sizeof path, "%s/fifo", dir);
	assert_int_equal(mkfifo(path, 0600), 0);
	assert_int_equal(ftfs_read_regular(path, 1 << 20, &buf, &len), -EINVAL);
	assert_int_equal(ftfs_read_regular(dir, 1 << 20, &buf, &len), -EINVAL);
	snprintf(path, sizeof path, "%s/big", dir);
	int fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)1 << 30), 0); /* 1 GiB, sparse: refused by its size */
	close(fd);
	assert_int_equal(ftfs_read_regular(path, 8 << 20, &buf, &len), -EFBIG);
	assert_int_equal(ftfs_write_atomic(path, "{}", 2, 0600), 0);
	assert_int_equal(ftfs_read_regular(path, 8 << 20, &buf, &len), 0);
	assert_int_equal(len, 2);
	assert_string_equal(buf, "{}");
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_atomic_roundtrip), cmocka_unit_test(test_errors),
		cmocka_unit_test(test_dirname), cmocka_unit_test(test_sweep_temps), cmocka_unit_test(test_read_regular),
	};
	return cmocka_run_group_tests_name("fsutil", tests, setup, teardown);
}
