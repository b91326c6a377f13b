/* bw_decide: see bw_decide.h. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench/bw_decide.h"

void ftbw_decide(bool cpu_path, bool have_gpu, double cpu_gbs, const char *cpu_err, double pcie_gbs,
		 const char *pcie_err, double threshold, struct ftbw_decision *d)
{
	memset(d, 0, sizeof *d);
	d->ratio = ftbw_measured(cpu_gbs) && ftbw_measured(pcie_gbs) ? cpu_gbs / pcie_gbs : NAN;
	if (!have_gpu) {
		snprintf(d->note, sizeof d->note, "no GPU on this host: PCIe gather not measured, no verdict");
		return;
	}
	if (!cpu_path) {
		snprintf(d->note, sizeof d->note, "no CPU MoE path for this format: always offload");
		d->measured = true;
		return;
	}
	if (!ftbw_measured(cpu_gbs)) {
		snprintf(d->note, sizeof d->note, "CPU MoE measurement failed%s%s: no verdict",
			 cpu_err && *cpu_err ? ": " : "", cpu_err ? cpu_err : "");
		return;
	}
	if (!ftbw_measured(pcie_gbs)) {
		snprintf(d->note, sizeof d->note, "PCIe gather measurement failed%s%s: no verdict",
			 pcie_err && *pcie_err ? ": " : "", pcie_err ? pcie_err : "");
		return;
	}
	d->measured = true;
	d->hybrid = cpu_gbs > threshold * pcie_gbs;
}

double ftbw_fetch_fraction(double cpu, double pcie, double cpu_ov, double pcie_ov)
{
	double f;
	if (ftbw_measured(cpu_ov) && ftbw_measured(pcie_ov))
		f = pcie_ov / (pcie_ov + cpu_ov);
	else if (ftbw_measured(cpu) && ftbw_measured(pcie))
		f = pcie / cpu;
	else
		return NAN;
	return f > 1.0 ? 1.0 : f < 0.0 ? 0.0 : f;
}
