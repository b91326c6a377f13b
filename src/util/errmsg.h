/* errmsg: one-line error messages for library functions that take a caller's (err, n) buffer. */
#ifndef FT_UTIL_ERRMSG_H
#define FT_UTIL_ERRMSG_H
#include <stddef.h>

/* Formats fmt into err (size n, always NUL-terminated, truncated if longer) and returns rc, so a
 * failing function can `return fterr_set(err, n, -EINVAL, "...", ...);`. err may be NULL or n 0:
 * nothing is written. Never fails itself. */
int fterr_set(char *err, size_t n, int rc, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
#endif
