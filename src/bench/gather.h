/* gather: the real copy_missing path (reference §3) over synthetic pinned banks, as one object
 * that `bw` and `cache-copy` share (CONTRACTS §2). Owner: slotcache helper.
 *
 * ftgather_create allocates, on the current CUDA device and once for the object's life:
 *  - per layer and bank one pinned, device-mapped host array [E, row] (one cudaHostAlloc per
 *    layer, banks 256-byte aligned inside it), filled with a pattern that depends on (layer,
 *    bank, expert, byte) and is never zero;
 *  - per bank one device slot pool [C, row] (cudaMalloc);
 *  - the copy_missing context (kernels/copy_missing.h); the default path is the copy-engine
 *    proxy (its thread polls between plans only when the process may use more than one CPU,
 *    and never during the overlap; it sleeps on a doorbell otherwise), the per-bank SM kernels
 *    when FREETOKEN_FUSED_COPY=0|false|no|off; the fused SM kernel falls back to per-bank when
 *    a row, host base or pool base is not 16-byte aligned (a note goes through the reporter);
 *  - a device plan (src expert rows -> dst slots) of up to `max_plan` entries, its own stream
 *    and events.
 * Not thread-safe: one thread drives an object, except that the overlap loop runs on a thread
 * of its own between ftgather_overlap_start and ftgather_overlap_stop (do not call other
 * functions on the object in between).
 *
 * All int functions return 0 or -errno and never log: -ENODEV (built without CUDA, no device),
 * -ENOMEM, -EINVAL (bad geometry or plan entry out of range), -EIO (CUDA error), -EBADMSG
 * (verify found a byte that differs). */
#ifndef FT_BENCH_GATHER_H
#define FT_BENCH_GATHER_H
#include <stddef.h>
#include <stdint.h>

#include "moe/formats.h"
#include "util/report.h"

struct ftgather;

/* How copies are made; FTGATHER_AUTO is the proxy, or per-bank under FREETOKEN_FUSED_COPY=0. */
enum ftgather_path {
	FTGATHER_AUTO = -1,
	FTGATHER_FUSED = 0,    /* one kernel for all banks, 16-byte loads from mapped pinned memory */
	FTGATHER_PER_BANK = 1, /* one kernel launch per bank */
	FTGATHER_MEMCPY = 2,   /* per-expert, per-bank cudaMemcpyAsync loop (what a PyTorch engine does) */
	FTGATHER_MEMCPY_BATCH = 3, /* one cudaMemcpyBatchAsync of the host-side plan (copy engines;
				    * the plan must be on the host: not graph-safe with a device plan) */
	FTGATHER_PROXY = 4,    /* copy engines, plan on the device: kernels/copy_missing.h proxy
				* (one cudaMemcpyBatchAsync per plan issued by a host thread; small
				* banks by the SM kernel alongside; consecutive runs merged) */
};

struct ftgather_geom {
	const struct ftfmt *format;
	long hidden, inter;    /* H, I */
	int experts;           /* E: rows per bank per layer */
	int layers;            /* host bank layers (>= 1); the slot pools are shared by all layers */
	int slots;             /* C */
	int max_plan;          /* most plan entries at once (>= 1) */
};

/* Create; *out is a new object (ftgather_free). rep (may be NULL) gets the fallback note. */
int ftgather_create(struct ftgather **out, const struct ftgather_geom *geom, const struct ftreport *rep);
void ftgather_free(struct ftgather *g); /* accepts NULL */

size_t ftgather_expert_bytes(const struct ftgather *g);
/* The path FTGATHER_AUTO resolves to (FTGATHER_PROXY, or FTGATHER_PER_BANK). */
enum ftgather_path ftgather_default_path(const struct ftgather *g);
/* Make p what FTGATHER_AUTO (and the overlap loop) uses: FTGATHER_AUTO restores the default
 * above, FTGATHER_FUSED is per-bank where the fused kernel cannot run. -EINVAL for another. */
int ftgather_set_default_path(struct ftgather *g, enum ftgather_path p);
const char *ftgather_path_name(enum ftgather_path p); /* "fused", "per_bank", "memcpy", "memcpy_batch", "proxy" */

/* Set the plan: n entries, src[i] an expert row of `layer` in [0, E), dst[i] a slot in [0, C).
 * Copied to the device (and kept on the host for the memcpy path); synchronous. */
int ftgather_set_plan(struct ftgather *g, int layer, const int32_t *src, const int32_t *dst, int n);

/* Apply the current plan once on the object's stream with `path` (no synchronisation). */
int ftgather_run(struct ftgather *g, enum ftgather_path path);

/* warmup untimed passes, then iters passes each between CUDA events: secs[i] per pass
 * (caller's array of iters entries). GB/s = n * expert_bytes / secs[i]. */
int ftgather_time(struct ftgather *g, enum ftgather_path path, int warmup, int iters, double *secs);

/* Overlap: a thread of its own repeats the plan (default path; the proxy thread, if that is the
 * path, sleeps between plans meanwhile: opts.spin_us 0) until ftgather_overlap_stop,
 * which joins it and returns the bytes moved and the seconds elapsed between the first launch
 * and the last completed pass. */
int ftgather_overlap_start(struct ftgather *g);
int ftgather_overlap_stop(struct ftgather *g, uint64_t *bytes, double *secs);

/* Check every plan entry's slot bytes in every bank against its source row (copies the slots
 * back). 0 when equal, -EBADMSG at the first difference. */
int ftgather_verify(struct ftgather *g);
/* Zero the plan's slot rows in every pool (the pattern has no zero byte), so that a later
 * verify proves the copy happened. Synchronous. */
int ftgather_poison(struct ftgather *g);

/* Experiments (bench/gather_variants.c): the copy that later runs with FTGATHER_FUSED make, fn
 * (NULL: the product's fused kernel, ftmissing_copy_path), and its grid (blocks; 0 = default). fn gets
 * the copy_missing context, the grid, the layer, the device plan (src, dst, num; max_n entries)
 * and the object's stream (a cudaStream_t), and returns a cudaError_t. -EINVAL for blocks < 0. */
struct ftmissing;
typedef int ftgather_fused_fn(const struct ftmissing *c, int blocks, int layer, const int32_t *src, const int32_t *dst,
			      const int32_t *num, int max_n, void *stream);
int ftgather_set_fused(struct ftgather *g, ftgather_fused_fn *fn, int blocks);
/* The proxy path's options (kernels/copy_missing.h struct ftmissing_proxy_opts; NULL = defaults) for
 * later runs with FTGATHER_PROXY; waits for the object's stream first. -EINVAL for a bad option. */
struct ftmissing_proxy_opts;
int ftgather_set_proxy_opts(struct ftgather *g, const struct ftmissing_proxy_opts *o);

/* The byte the synthetic banks hold at (layer, bank, expert, offset): never zero. Bytes of one
 * 8-byte group share ftgather_pattern_group(.., off >> 3) and differ by 37 each. */
static inline uint32_t ftgather_pattern_group(int layer, int bank, int expert, size_t group)
{
	uint32_t x = (uint32_t)layer * 0x9E3779B1u ^ (uint32_t)bank * 0x85EBCA77u ^
		     (uint32_t)expert * 0xC2B2AE3Du ^ (uint32_t)group * 0x27D4EB2Fu;
	return x ^ (x >> 15);
}

static inline uint8_t ftgather_pattern(int layer, int bank, int expert, size_t off)
{
	uint8_t b = (uint8_t)(ftgather_pattern_group(layer, bank, expert, off >> 3) + (uint32_t)(off & 7) * 37u);
	return b ? b : 0x5B;
}

/* For cache-copy and tests (borrowed, valid until free): the device-mapped host base of
 * (layer, bank), the object's stream. */
void *ftgather_host_bank(const struct ftgather *g, int layer, int bank);
void *ftgather_stream(const struct ftgather *g); /* a cudaStream_t */
/* The copy_missing context (kernels/copy_missing.h: struct ftmissing *) for plans produced on the
 * device by ensure_experts. */
void *ftgather_copier(const struct ftgather *g);
#endif
