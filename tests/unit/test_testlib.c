/* tests/lib's C helpers, which every test binary links: child processes (output into files, the
 * environment changed, the exit status or 128+signal, exec failure as 127) and the scratch
 * directory (made, cleared, removed). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/fsutil.h"
#include "../lib/child.h"
#include "../lib/tmpdir.h"

static char dir[256];

static char *file(const char *name, char *buf, size_t n)
{
	snprintf(buf, n, "%s/%s", dir, name);
	return buf;
}

static void assert_file(const char *name, const char *want)
{
	char p[512], *text = NULL;
	size_t len;
	assert_int_equal(ftfs_read_file(file(name, p, sizeof p), 1 << 20, &text, &len), 0);
	assert_string_equal(text, want);
	free(text);
}

static void test_run_redirects_and_env(void **st)
{
	(void)st;
	char out[512], err[512], fd3[512];
	setenv("FTT_GONE", "here", 1);
	const char *env[] = {"FTT_SET=one", "FTT_GONE", NULL};
	const char *argv[] = {"/bin/sh", "-c", "echo out $FTT_SET; echo err ${FTT_GONE:-unset} >&2; echo three >&3; exit 3",
			      NULL};
	struct child_io io = {.out = file("out", out, sizeof out), .err = file("err", err, sizeof err),
			      .fd3 = file("fd3", fd3, sizeof fd3), .env = env};
	assert_int_equal(child_run(argv, &io), 3);
	assert_file("out", "out one\n");
	assert_file("err", "err unset\n");
	assert_file("fd3", "three\n");
	assert_string_equal(getenv("FTT_GONE"), "here"); /* the parent's environment is its own */
	io = (struct child_io){.out = out, .err = CHILD_SAME_AS_OUT};
	const char *both[] = {"/bin/sh", "-c", "echo a; echo b >&2", NULL};
	assert_int_equal(child_run(both, &io), 0);
	assert_file("out", "a\nb\n");
}

static void test_signal_and_exec_failure(void **st)
{
	(void)st;
	const char *sleeper[] = {"/bin/sleep", "30", NULL};
	pid_t pid = child_start(sleeper, NULL);
	assert_true(pid > 0);
	assert_int_equal(child_stop(pid), 128 + 15);
	assert_int_equal(child_wait(pid), -1); /* reaped */
	const char *missing[] = {"/nonexistent/program", NULL};
	assert_int_equal(child_run(missing, NULL), 127);
	const char *argv[] = {"/bin/true", NULL};
	assert_int_equal(child_run(argv, &(struct child_io){.out = "/nonexistent/dir/out"}), 127);
}

static void test_tmpdir(void **st)
{
	(void)st;
	char p[512], sub[512];
	assert_int_equal(tmpdir_put(file("a/b/c.txt", p, sizeof p), "x", 1), 0);
	assert_int_equal(symlink("/", file("link", sub, sizeof sub)), 0);
	assert_int_equal(tmpdir_clear(dir), 0);
	struct stat sb;
	assert_int_equal(stat(dir, &sb), 0); /* kept, empty */
	assert_int_equal(access(file("a", p, sizeof p), F_OK), -1);
	assert_int_equal(access("/", F_OK), 0); /* the link went, not what it names */
	assert_int_equal(lstat(file("link", p, sizeof p), &sb), -1);
}

static int setup(void **st)
{
	return tmpdir_make(dir, sizeof dir, "ft-testlib");
}

static int teardown(void **st)
{
	int r = tmpdir_remove(dir);
	struct stat sb;
	return r == 0 && lstat(dir, &sb) < 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_run_redirects_and_env),
		cmocka_unit_test(test_signal_and_exec_failure),
		cmocka_unit_test(test_tmpdir),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
