/* pcie: linear pinned host<->device copy ceilings (reference §5 "linear pinned<->device copy",
 * CONTRACTS §2). One cudaMemcpyAsync of `bytes` per pass, timed with CUDA events around each
 * pass after warm-up, on the current CUDA device. Used by `cache-copy` (baseline of the same
 * bytes in the same run) and by `bw` (ceilings: 256 MiB, 30 iterations, both directions).
 *
 * All functions return 0 or -errno and never log: -ENODEV when built without CUDA or no device
 * is usable, -ENOMEM when pinned/device memory cannot be had, -EIO on any other CUDA error,
 * -EINVAL on bad arguments. */
#ifndef FT_BENCH_PCIE_H
#define FT_BENCH_PCIE_H
#include <stddef.h>

enum ftpcie_dir { FTPCIE_H2D, FTPCIE_D2H };

#define FTPCIE_WARMUP 3

/* Allocate a pinned host buffer (pattern-filled, never zeros) and a device buffer of `bytes`,
 * run FTPCIE_WARMUP untimed passes then `iters` timed passes of one cudaMemcpyAsync in direction
 * dir; secs[i] = seconds of pass i (caller's array of iters entries). Frees what it allocated. */
int ftpcie_linear(enum ftpcie_dir dir, size_t bytes, int iters, double *secs);

/* Same on the caller's buffers (dst/src: a device pointer and a pinned host pointer as dir says)
 * and stream (a cudaStream_t passed as void *; NULL = legacy default stream): no allocation.
 * warmup untimed passes, then iters timed passes into secs. */
int ftpcie_linear_on(enum ftpcie_dir dir, void *dst, const void *src, size_t bytes, int warmup,
		     int iters, double *secs, void *stream);

/* GB/s (1e9 bytes per second) of `bytes` moved in `secs` seconds; 0 when secs <= 0. */
double ftpcie_gbs(size_t bytes, double secs);
#endif
