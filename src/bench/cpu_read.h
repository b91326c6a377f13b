/* cpu_read: the CPU read ceiling (CONTRACTS §3, reference §5): a STREAM-style read of a large
 * buffer, one pinned worker per physical core (moe/cpu/pool), with eight independent AVX-512
 * accumulators (AVX2 or scalar where the CPU lacks it), in the fastest of six loop shapes.
 * Buffer: max(2 GiB, 128 MiB * threads), capped at half of MemAvailable, filled with a non-zero
 * pattern by the worker that reads it (first touch: local NUMA pages). One untimed pass, then
 * `passes` timed passes: GB/s = bytes / (time from the start barrier to the last worker). */
#ifndef FT_BENCH_CPU_READ_H
#define FT_BENCH_CPU_READ_H
#include <stddef.h>

#include "hw/cpu.h"
#include "moe/cpu/pool.h"

/* AVX-512 loop shapes calibrated (the fastest is the ceiling's loop) */
#define FTCREAD_VARIANTS 6
/* their names, in calibration order (ftcread_result.loop is one of them on AVX-512 CPUs) */
extern const char *const ftcread_avx512_names[FTCREAD_VARIANTS];

struct ftcread_result {
	size_t buffer_bytes;
	int threads;
	/* the loop used: per-worker slices read as "avx512x8" (one stream), "avx512x8-2s", "-4s"
	 * (2 or 4 interleaved streams), "avx512x8-pf" (prefetch 4 KiB ahead); the whole buffer in
	 * 128 KiB chunks, all workers close together, with the prefetch loop: "avx512x8-il"
	 * (worker t reads chunks t, t + n, ...), "avx512x8-dyn" (the next free chunk); "avx2x8",
	 * "scalar" on CPUs without AVX-512 */
	const char *loop;
	double calib_gbs[FTCREAD_VARIANTS]; /* AVX-512: one calibration pass of each, in that order */
};

/* Measure with `pool` (its driver thread calls this; NULL: a pool of every physical core is
 * created and its caller pinned for the duration). buffer_bytes 0: the default size above.
 * gbs[passes] receives per-pass GB/s (1e9 bytes/s). Returns 0, -ENOMEM, or -EINVAL. */
int ftcread_measure(const struct ftcpu_info *ci, struct ftpool *pool, size_t buffer_bytes,
		    int passes, double *gbs, struct ftcread_result *res);

/* The same as a session, to interleave ceiling passes with other measurements (so both see
 * the same machine state, on hosts whose bandwidth drifts): open allocates, fills, warms and
 * calibrates (res filled); each ftcread_pass times one pass. The driver thread of `pool` calls
 * all three; pool must outlive the session. */
struct ftcread;
int ftcread_open(const struct ftcpu_info *ci, struct ftpool *pool, size_t buffer_bytes,
		 struct ftcread **out, struct ftcread_result *res);
double ftcread_pass(struct ftcread *r); /* GB/s of one timed pass */
void ftcread_close(struct ftcread *r);  /* accepts NULL */

/* The default buffer size for `threads` workers (max(2 GiB, 128 MiB*threads), at most half of
 * MemAvailable, rounded to 2 MiB). */
size_t ftcread_default_bytes(int threads);
#endif
