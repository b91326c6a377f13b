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

/* UTF-8, for messages that echo what a client sent (jansson refuses invalid UTF-8):
 * ftstr_utf8_valid: 1 when s[0..n) is well-formed (no overlong form, surrogate or code point
 *   above U+10FFFF), else 0.
 * ftstr_utf8_cut: the length of the longest prefix of s of at most max bytes that does not split
 *   a character (a malformed byte counts as one), for "%.*s".
 * ftstr_utf8_sanitize: copy src into dst (n bytes) as well-formed UTF-8: each malformed byte
 *   becomes '?', a character that does not fit whole is dropped; always NUL-terminated (n > 0).
 *   Returns dst.
 * ftstr_utf8_len: characters (code points) in well-formed s, as JSON Schema's maxLength counts. */
int ftstr_utf8_valid(const char *s, size_t n);
int ftstr_utf8_cut(const char *s, size_t max);
char *ftstr_utf8_sanitize(char *dst, size_t n, const char *src);
size_t ftstr_utf8_len(const char *s);
#endif
