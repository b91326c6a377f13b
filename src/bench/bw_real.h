/* bw_real: what the real measurements of `ftbench bw` share between the isolated measurements
 * (bw_ops.c: ceilings, one item alone, its batch sweep) and the concurrent phase (bw_engines.c: an
 * engine per GPU measured while the others run). Private to those two files. */
#ifndef FT_BENCH_BW_REAL_H
#define FT_BENCH_BW_REAL_H
#include <sched.h>
#include <stdint.h>

#include "bench/bw.h"
#include "util/report.h"

#define GATHER_WARMUP 3
#define OVERLAP_WINDOW_S 0.5 /* one overlap sample per window, each side its own bytes/time */
struct ftbw_real {
	const struct ftbw_env *env;
	const struct ftreport *rep;
	cpu_set_t wide;  /* the process's affinity at start: for threads that must not sit on a worker's core */
	/* The run's CPU read session (opened by the first cpu_read, closed by ftbw_real_free): its
	 * own pool on the same cores as the executor's; idle workers sleep on a futex. */
	struct ftpool *rpool;
	struct ftcread *rsess;
};

/* strerror of r or -r. */
const char *ftbw_errstr(int r);
/* Make gpu current on the calling thread, its context created with blocking-sync waits (see
 * ftbw_real_create); 0, -EIO (CUDA error, err says which) or -ENODEV (no CUDA in the build). */
int ftbw_select_gpu(const struct ftgpu_info *gpu, char *err, size_t errlen);
/* xorshift64* */
uint64_t ftbw_rng_next(uint64_t *s);
/* n zeroed samples (at least one), or NULL. */
double *ftbw_new_samples(int n);
/* The overlapped run's windows (overlap_s in OVERLAP_WINDOW_S pieces, at least one) and their
 * sample arrays in m: 0, or -ENOMEM with the error in m->ov_cpu.err. */
int ftbw_overlap_windows(const struct ftbw_config *c, struct ftbw_meas *m, int *windows, double *win);

/* The concurrent phase's operations (struct ftbw_ops: engine_open, engine_phase, engine_close). */
int ftbw_real_engine_open(void *ctx, const struct ftbw_engine *e, const struct ftbw_config *c,
			  const struct ftbw_item *it, void **hout, char *err, size_t errlen);
int ftbw_real_engine_phase(void *hv, enum ftbw_phase ph, const struct ftbw_config *c, struct ftbw_meas *m,
			   struct ftbw_hold *hold, char *err, size_t errlen);
void ftbw_real_engine_close(void *hv);
#endif
