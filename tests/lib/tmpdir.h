/* tmpdir: the scratch directory of a C test and the files put in it (linked into every test binary,
 * Makefile TEST_OBJS). */
#ifndef FT_TESTS_TMPDIR_H
#define FT_TESTS_TMPDIR_H
#include <stddef.h>

/* A new directory /tmp/NAME_XXXXXX (mkdtemp) into dir (n bytes): 0, or -1 (a cmocka setup's
 * failure). */
int tmpdir_make(char *dir, size_t n, const char *name);

/* Remove dir and everything below it (links are removed, not followed): 0, or -1 when something
 * stayed. A missing dir is fine. */
int tmpdir_remove(const char *dir);
/* Remove everything below dir, keeping dir: 0, or -1 when something stayed. */
int tmpdir_clear(const char *dir);
/* Write len bytes of data to path, making its parent directories first: 0 or -errno. */
int tmpdir_put(const char *path, const void *data, size_t len);
#endif
