#include "util/stats.h"

#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double *sorted_copy(const double *v, int n)
{
	double *s = malloc(sizeof *s * (size_t)(n > 0 ? n : 1));
	if (!s)
		return NULL;
	memcpy(s, v, sizeof *s * (size_t)n);
	qsort(s, (size_t)n, sizeof *s, cmp_double);
	return s;
}

struct ftstat ftstat_of(const double *v, int n)
{
	struct ftstat st = {0};
	if (n <= 0)
		return st;
	double *s = sorted_copy(v, n);
	if (!s)
		return st;
	st.min = s[0];
	st.max = s[n - 1];
	st.median = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
	st.samples = n;
	free(s);
	return st;
}

double ftstat_percentile(const double *v, int n, double p)
{
	if (n <= 0)
		return 0.0;
	double *s = sorted_copy(v, n);
	if (!s)
		return 0.0;
	double pos = p / 100.0 * (n - 1);
	int lo = (int)pos;
	if (lo >= n - 1) {
		double r = s[n - 1];
		free(s);
		return r;
	}
	double r = s[lo] + (pos - lo) * (s[lo + 1] - s[lo]);
	free(s);
	return r;
}

json_t *ftstat_json(const struct ftstat *s)
{
	return json_pack("{s:f,s:f,s:f,s:i}", "median", s->median, "min", s->min, "max", s->max,
			 "samples", s->samples);
}
