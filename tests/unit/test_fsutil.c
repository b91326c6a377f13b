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
#include <sys/stat.h>
#include <unistd.h>

#include "util/fsutil.h"

static char dir[64];

static int setup(void **s)
{
	snprintf(dir, sizeof dir, "/tmp/ft_fsutil_XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **s)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	return system(cmd);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_atomic_roundtrip), cmocka_unit_test(test_errors),
		cmocka_unit_test(test_dirname),
	};
	return cmocka_run_group_tests_name("fsutil", tests, setup, teardown);
}
