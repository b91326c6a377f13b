#include "util/strutil.h"

#include <ctype.h>
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
