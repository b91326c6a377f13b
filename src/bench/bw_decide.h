/* bw_decide: the decision of reference §5 from a format's figures (hybrid or offload, and the
 * hybrid fetch fraction), shared by bw (bench/bw.c) and the CPU kernel probe
 * (bench/cpu_probe.c), which both include it without depending on each other. */
#ifndef FT_BENCH_BW_DECIDE_H
#define FT_BENCH_BW_DECIDE_H
#include <math.h>
#include <stdbool.h>

/* A figure that was measured: a positive finite rate (<= 0 or NaN: not measured). */
static inline bool ftbw_measured(double x)
{
	return isfinite(x) && x > 0;
}

/* The decision of reference §5 for one entry. cpu_gbs / pcie_gbs <= 0 or NaN: not measured.
 * measured false: no verdict at all ("unmeasured": no GPU, or a half failed), never a default
 * offload; a format with no CPU path is a measured offload when the gather ran. note gets why
 * when the answer is not from the numbers. */
struct ftbw_decision {
	bool measured;
	bool hybrid;
	double ratio;                  /* cpu / pcie; NaN when either is missing */
	char note[256];
};
void ftbw_decide(bool cpu_path, bool have_gpu, double cpu_gbs, const char *cpu_err, double pcie_gbs,
		 const char *pcie_err, double threshold, struct ftbw_decision *d);

/* Hybrid fetch fraction: with the overlap pair pcie_ov / (pcie_ov + cpu_ov), else pcie / cpu,
 * clamped to [0, 1]. NaN when neither pair is measured. */
double ftbw_fetch_fraction(double cpu_gbs, double pcie_gbs, double cpu_ov_gbs, double pcie_ov_gbs);
#endif
