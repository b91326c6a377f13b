/* bw_fake: what the bw unit tests on fake measurements share (test_bw.c: ftbw_run on one GPU or
 * none; test_bw_host.c: ftbw_run_host over several): samples around a value, a measured part,
 * a small configuration, and lookups in the profile they check. Linked into both tests
 * (Makefile). Unprefixed like the static helpers they replace, so the tests read as before. */
#ifndef FT_TESTS_BW_FAKE_H
#define FT_TESTS_BW_FAKE_H
#include <jansson.h>
#include <stdbool.h>

#include "bench/bw.h"

/* n samples v*0.99, v, v*1.01, v*0.99, ... in a new array (the caller's ftbw_meas frees it). */
double *samples(double v, int n);

/* p measured: rc 0, n samples around v. */
void set_part(struct ftbw_part *p, double v, int n);

/* The defaults with few iterations (3 CPU and PCIe passes, 5 and 3 kernel iterations) and no
 * format yet: the caller adds the formats it measures. */
void config_small_base(struct ftbw_config *c);

/* The profile's dtype_kernels entry of fmt (borrowed), or NULL. */
json_t *entry_of(json_t *p, const char *fmt);

/* Some warning of the profile contains needle. */
bool has_warning(json_t *p, const char *needle);
#endif
