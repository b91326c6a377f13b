/* stats: the spread that goes beside every measured figure. */
#ifndef FT_UTIL_STATS_H
#define FT_UTIL_STATS_H
#include <jansson.h>

struct ftstat {
	double median, min, max;
	int samples;
};

/* Median (mean of the middle two for even n), min and max of v[0..n); v is not changed.
 * n == 0 gives all zeros and samples 0. */
struct ftstat ftstat_of(const double *v, int n);

/* {"median":…,"min":…,"max":…,"samples":…}; a new reference, NULL on allocation failure. */
json_t *ftstat_json(const struct ftstat *s);

/* Percentile p in [0,100] of v[0..n) by linear interpolation; v is not changed. */
double ftstat_percentile(const double *v, int n, double p);
#endif
