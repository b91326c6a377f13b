/* bw_ops: the real measurements behind `ftbench bw` (struct ftbw_ops of bench/bw.h):
 *  - CPU read ceiling (bench/cpu_read.h) on env->cpus, one pinned thread per physical core: one
 *    read session (its own pool and buffer) open from the first cpu_read call to ftbw_real_free,
 *    so that measure() can take passes next to the kernels: 4 spread over the rounds or pairs of
 *    every CPU MoE tier's steps (m->read_cpu for the tier behind the figure, m->read_other for
 *    the rest of a sweep) and one before each overlap window and after the last (read_other);
 *    each pass waits 3 ms before and after for the other pool's spinning workers to sleep;
 *  - linear pinned H2D/D2H copies (bench/pcie.h) on the selected GPU;
 *  - per item: the real copy_missing over synthetic pinned banks (bench/gather.h; E_synth
 *    experts, every slot refilled from a random permutation, verified once), the real CPU MoE
 *    executor at batch 1 with rotating experts (bench/cpu_moe.h), its ISA sweep, and both
 *    overlapped (windows of about 0.5 s, each side reporting its own bytes/time).
 * With both halves the first CPU MoE tier and the gather are timed in interleaved pairs (16 by
 * default: 2 gather passes after an untimed one, and 32 steps, gather first in even pairs, steps
 * first in odd ones; the warm-ups dropped): the two sides of the ratio and its per-pair values
 * sample the same stretch of time, about 2 s per format.
 * Without a GPU (env->gpu NULL) or without CUDA in the build, the gather parts are FTBW_NOT_RUN.
 * Functions return 0 or -errno with err set; nothing logs. */
#ifndef FT_BENCH_BW_OPS_H
#define FT_BENCH_BW_OPS_H
#include <stddef.h>

#include "bench/bw.h"
#include "util/report.h"

struct ftbw_real;

/* Create the measurement context: selects env->gpu (cudaSetDevice) when there is one and starts
 * the CPU worker pool on env->cpus. *out: new (ftbw_real_free). rep (borrowed, may be NULL,
 * must outlive the context) gets notes (fallback paths). */
int ftbw_real_create(struct ftbw_real **out, const struct ftbw_env *env, const struct ftreport *rep,
		     char *err, size_t errlen);
void ftbw_real_free(struct ftbw_real *r); /* accepts NULL */

/* The ops table bound to r (borrowed). */
struct ftbw_ops ftbw_real_ops(struct ftbw_real *r);

/* Whether isa (one name) is one the CPU MoE executor knows; lists the known names into names. */
int ftbw_isa_known(const char *isa, char *names, size_t n);
#endif
