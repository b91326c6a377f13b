/* decode_compare: the per-arm figures of `ftbench decode --compare` (src/decode/compare.h says
 * what an arm is) and the summary row over them. Prefix ftdcmp_.
 *
 * Each arm runs once per cycle, a fresh server each time (start, readiness, warm-up, the measured
 * request, stop: ftdecode_run); cycle c runs the arms in turn starting at arm c mod n, so that no
 * arm always goes first or last. An arm that fails in a cycle (its server does not start, dies, a
 * request fails) is not run in later cycles: its error is the arm's, its earlier cycles' figures
 * stay, and it is not a candidate for winner, unless the run was stopped (a signal: `stopped`):
 * then every arm is judged over the cycles it measured before the stop. Per arm: decode tok/s, warm TTFT (the measured
 * request's) and cold TTFT (the first request's) as median, min and max over its measured cycles;
 * the winner on tok/s (higher) and on TTFT (lower) by ftcmp_decide. */
#ifndef FT_BENCH_DECODE_COMPARE_H
#define FT_BENCH_DECODE_COMPARE_H
#include <jansson.h>

#include "bench/decode.h"
#include "decode/compare.h"

#define FTDCMP_MAX_CYCLES 100

struct ftdcmp_arm {
	struct ftcmp_arm arm;
	int cycles_run;     /* cycles it ran in (the failing one included) */
	int cycles_ok;
	double tok_s[FTDCMP_MAX_CYCLES], ttft_ms[FTDCMP_MAX_CYCLES], ttft_cold_ms[FTDCMP_MAX_CYCLES];
	int ok[FTDCMP_MAX_CYCLES]; /* per cycle: 1 measured, 0 failed or not run */
	int failed_cycle;   /* 1-based; 0 when no cycle failed */
	int stopped;        /* it failed only because the run was stopped (a signal): its measured
			     * cycles still count for the decision */
	char error[1600];   /* that cycle's error */
};

/* Record arm a's result of cycle (0-based). */
void ftdcmp_record(struct ftdcmp_arm *a, int cycle, const struct ftdecode_result *r);

/* The summary: {"kind":"decode_compare", timestamp, host, tool, server_kind, model, max_tokens,
 * cycles, order, min_gap, keys, arms:[...], winner, decision, reason, ttft_winner, ttft_decision,
 * ttft_reason, failed:[labels]} (README: decode --compare). A new reference, NULL on
 * allocation failure. server_kind: the kind the arms ran as. */
json_t *ftdcmp_summary(const struct ftdecode_cfg *c, const struct ftcmp_plan *p, const struct ftdcmp_arm *arms,
		       int narms, int cycles, double min_gap, const char *server_kind);
#endif
