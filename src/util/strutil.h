/* strutil: strict parsing of numbers and lists from command lines and configs.
 * Return 0 or -EINVAL (not a number / trailing junk) or -ERANGE (outside [lo, hi]). */
#ifndef FT_UTIL_STRUTIL_H
#define FT_UTIL_STRUTIL_H
#include <stddef.h>

int ftstr_parse_long(const char *s, long lo, long hi, long *out);
int ftstr_parse_double(const char *s, double lo, double hi, double *out);

/* Split s on commas and/or whitespace into at most max items of a new array of new strings
 * (free with ftstr_free_list). Empty items are dropped. Returns the count or -errno. */
int ftstr_split(const char *s, char ***items, int max);
void ftstr_free_list(char **items, int n);

/* "1,4,16" -> longs in [lo, hi]; returns the count or -errno. */
int ftstr_parse_long_list(const char *s, long lo, long hi, long *out, int max);
int ftstr_parse_double_list(const char *s, double lo, double hi, double *out, int max);

/* Copy src into dst of size n, always NUL-terminated; returns -ENAMETOOLONG if truncated. */
int ftstr_copy(char *dst, size_t n, const char *src);
/* A short, printable excerpt of untrusted text (a server's error body) into dst (size n): at
 * most max characters of src (len bytes, or up to a NUL), runs of spaces and control bytes as
 * one space, other bytes outside printable ASCII as '?', "..." when cut. */
void ftstr_excerpt(char *dst, size_t n, const char *src, size_t len, size_t max);
#endif
