/* timeutil: clocks. */
#ifndef FT_UTIL_TIMEUTIL_H
#define FT_UTIL_TIMEUTIL_H
#include <stddef.h>
#include <stdint.h>

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t fttime_now_ns(void);
/* Seconds as a double from CLOCK_MONOTONIC. */
double fttime_now_s(void);
/* Wall clock (UTC) as ISO-8601 "2026-11-29T10:55:10Z" into buf (size >= 21). */
void fttime_wall_iso8601(char *buf, size_t n);
/* Wall clock in seconds since the epoch, as a double. */
double fttime_wall_epoch(void);
#endif
