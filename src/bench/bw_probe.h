/* bw_probe: `ftbench bw --cpu-kernel`: the engine's own CPU MoE executor measures each planned
 * item through the probe protocol (bench/cpu_probe.h), and its figures replace bw's in the profile.
 * Library code: 0 or -errno, the error in err; progress notes through rep. */
#ifndef FT_BENCH_BW_PROBE_H
#define FT_BENCH_BW_PROBE_H
#include <jansson.h>

#include "bench/bw.h"
#include "bench/cpu_probe.h"

/* One item the probe measured: the item and the probe's answer. */
struct ftbw_probe_done {
	struct ftbw_item it;
	struct ftprobe_result res;
};

/* Every planned item of c with a CPU path measured by the probe argv (each within timeout s),
 * before bw's own measurements (a failing probe then costs none, and the host is as quiet as it
 * gets): 0 and *out (n of them; free with ftbw_probes_free), or the first probe's -errno. */
int ftbw_probe_all(const struct ftbw_config *c, char **argv, double timeout, const struct ftreport *rep,
		   struct ftbw_probe_done **out, int *nout, char *err, size_t errlen);
/* The probe's figures into prof's entries (ftprobe_apply), the verdict maps the seed reads after
 * them, the validity checks again (the CPU figure changed), and "cpu_kernel": what ran. 0 or -errno. */
int ftbw_probe_apply_all(json_t *prof, const struct ftbw_config *c, char **argv, struct ftbw_probe_done *d, int n);
void ftbw_probes_free(struct ftbw_probe_done *p, int n);
#endif
