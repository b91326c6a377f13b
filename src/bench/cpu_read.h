/* cpu_read: the CPU read ceiling (CONTRACTS §3, reference §5): a STREAM-style read of a large
 * buffer, one pinned worker per physical core (moe/cpu/pool), each streaming its own contiguous
 * slice with eight independent AVX-512 accumulators (AVX2 or scalar where the CPU lacks it).
 * Buffer: max(2 GiB, 128 MiB * threads), capped at half of MemAvailable, filled with a non-zero
 * pattern by the worker that reads it (first touch: local NUMA pages). One untimed pass, then
 * `passes` timed passes: GB/s = bytes / (time from the start barrier to the last worker). */
#ifndef FT_BENCH_CPU_READ_H
#define FT_BENCH_CPU_READ_H
#include <stddef.h>

#include "hw/cpu.h"
#include "moe/cpu/pool.h"

struct ftcread_result {
	size_t buffer_bytes;
	int threads;
	const char *loop;   /* the loop used: "avx512x8" (one stream), "avx512x8-2s", "-4s"
			     * (interleaved streams), "avx512x8-pf" (prefetch), "avx2x8", "scalar" */
	double calib_gbs[4];/* AVX-512: one calibration pass of each loop, in that order (else 0) */
};

/* Measure with `pool` (its driver thread calls this; NULL: a pool of every physical core is
 * created and its caller pinned for the duration). buffer_bytes 0: the default size above.
 * gbs[passes] receives per-pass GB/s (1e9 bytes/s). Returns 0, -ENOMEM, or -EINVAL. */
int ftcread_measure(const struct ftcpu_info *ci, struct ftpool *pool, size_t buffer_bytes,
		    int passes, double *gbs, struct ftcread_result *res);

/* The default buffer size for `threads` workers (max(2 GiB, 128 MiB*threads), at most half of
 * MemAvailable, rounded to 2 MiB). */
size_t ftcread_default_bytes(int threads);
#endif
