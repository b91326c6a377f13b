#include "util/strutil.h"

#include <ctype.h>
#include <limits.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int ftstr_parse_long(const char *s, long lo, long hi, long *out)
{
	char *end;
	if (!s || !*s || isspace((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	if (*end)
		return -EINVAL;
	if (v < lo || v > hi)
		return -ERANGE;
	*out = v;
	return 0;
}

int ftstr_parse_double(const char *s, double lo, double hi, double *out)
{
	char *end;
	if (!s || !*s || isspace((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	double v = strtod(s, &end);
	if (errno == ERANGE || !isfinite(v))
		return -ERANGE;
	if (*end)
		return -EINVAL;
	if (v < lo || v > hi)
		return -ERANGE;
	*out = v;
	return 0;
}

void ftstr_free_list(char **items, int n)
{
	if (!items)
		return;
	for (int i = 0; i < n; i++)
		free(items[i]);
	free(items);
}

int ftstr_split(const char *s, char ***items, int max)
{
	int n = 0;
	char **v = calloc((size_t)max + 1, sizeof *v);
	if (!v)
		return -ENOMEM;
	const char *p = s;
	while (*p) {
		while (*p == ',' || isspace((unsigned char)*p))
			p++;
		if (!*p)
			break;
		const char *q = p;
		while (*q && *q != ',' && !isspace((unsigned char)*q))
			q++;
		if (n == max) {
			ftstr_free_list(v, n);
			return -E2BIG;
		}
		v[n] = strndup(p, (size_t)(q - p));
		if (!v[n]) {
			ftstr_free_list(v, n);
			return -ENOMEM;
		}
		n++;
		p = q;
	}
	*items = v;
	return n;
}

int ftstr_parse_long_list(const char *s, long lo, long hi, long *out, int max)
{
	char **it;
	int n = ftstr_split(s, &it, max);
	if (n < 0)
		return n;
	int r = n;
	for (int i = 0; i < n && r >= 0; i++)
		if (ftstr_parse_long(it[i], lo, hi, &out[i]) < 0)
			r = -EINVAL;
	ftstr_free_list(it, n);
	return r == 0 ? -EINVAL : r;
}

int ftstr_parse_double_list(const char *s, double lo, double hi, double *out, int max)
{
	char **it;
	int n = ftstr_split(s, &it, max);
	if (n < 0)
		return n;
	int r = n;
	for (int i = 0; i < n && r >= 0; i++)
		if (ftstr_parse_double(it[i], lo, hi, &out[i]) < 0)
			r = -EINVAL;
	ftstr_free_list(it, n);
	return r == 0 ? -EINVAL : r;
}

int ftstr_copy(char *dst, size_t n, const char *src)
{
	size_t l = strlen(src);
	if (l >= n) {
		if (n) {
			memcpy(dst, src, n - 1);
			dst[n - 1] = '\0';
		}
		return -ENAMETOOLONG;
	}
	memcpy(dst, src, l + 1);
	return 0;
}

void ftstr_excerpt(char *dst, size_t n, const char *src, size_t len, size_t max)
{
	size_t i = 0, shown = 0;
	int space = 0;
	if (!n)
		return;
	for (size_t k = 0; src && k < len && src[k]; k++) {
		unsigned char c = (unsigned char)src[k];
		if (c <= 0x20 || c == 0x7f) {
			space = i > 0;
			continue;
		}
		if (shown >= max || i + (space ? 2 : 1) + 4 > n) {
			if (i + 4 <= n) {
				memcpy(dst + i, "...", 3);
				i += 3;
			}
			break;
		}
		if (space) {
			dst[i++] = ' ';
			shown++;
			space = 0;
		}
		dst[i++] = c < 0x7f ? (char)c : '?';
		shown++;
	}
	dst[i] = '\0';
}

/* Length of the well-formed UTF-8 sequence at s (1 to 4 bytes, at most avail), or 0 when the
 * bytes there are not one: a stray continuation byte, an overlong form, a surrogate, a code
 * point above U+10FFFF, or a sequence cut short by avail. */
static size_t utf8_seq(const unsigned char *s, size_t avail)
{
	unsigned char c = s[0];
	size_t n;
	unsigned char lo = 0x80, hi = 0xbf; /* bounds of the second byte */
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		if (c == 0xe0)
			lo = 0xa0; /* overlong */
		else if (c == 0xed)
			hi = 0x9f; /* surrogates */
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		if (c == 0xf0)
			lo = 0x90; /* overlong */
		else if (c == 0xf4)
			hi = 0x8f; /* above U+10FFFF */
	} else
		return 0;
	if (avail < n || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return n;
}

int ftstr_utf8_valid(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	for (size_t i = 0; i < n;) {
		size_t k = utf8_seq(p + i, n - i);
		if (!k)
			return 0;
		i += k;
	}
	return 1;
}

int ftstr_utf8_cut(const char *s, size_t max)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;
	if (max > INT_MAX)
		max = INT_MAX;
	while (i < max && p[i]) {
		size_t avail = 0;
		while (avail < 4 && p[i + avail])
			avail++;
		size_t k = utf8_seq(p + i, avail);
		if (!k)
			k = 1; /* a malformed byte counts as one character */
		if (i + k > max)
			break;
		i += k;
	}
	return (int)i;
}

char *ftstr_utf8_sanitize(char *dst, size_t n, const char *src)
{
	const unsigned char *p = (const unsigned char *)src;
	size_t o = 0;
	if (!n)
		return dst;
	for (size_t i = 0; p[i];) {
		size_t avail = 0;
		while (avail < 4 && p[i + avail])
			avail++;
		size_t k = utf8_seq(p + i, avail);
		if (!k) {
			if (o + 1 >= n)
				break;
			dst[o++] = '?';
			i++;
			continue;
		}
		if (o + k >= n)
			break; /* a character that does not fit whole is dropped */
		memcpy(dst + o, p + i, k);
		o += k;
		i += k;
	}
	dst[o] = '\0';
	return dst;
}

size_t ftstr_utf8_len(const char *s)
{
	size_t n = 0;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		n += (*p & 0xc0) != 0x80;
	return n;
}
