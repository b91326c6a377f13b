/* replay: the engine's MoE decode step under a routing workload and a cache size, in every
 * placement mode, measured; the winner per point, the best fetch fraction, the map over cache size
 * x workload, and the profile's `replay.<fmt>` block (api/schemas/profile.schema.json; docs/REPLAY.md).
 *
 * The orchestration (ftrp_run) is separate from the measurement (struct ftrp_ops): the GPU step
 * runner lives in runner.c (ftrp_gpu_ops); tests drive ftrp_run with fake ops. Per point and mode:
 * the workload's first warmup_steps steps warm the slot cache on the CPU reference under the
 * mode's policy; the ops run the next gpu_warmup + steps steps from that state (the first
 * gpu_warmup untimed) and report seconds per timed step and the counts of their decisions, which
 * must equal the CPU reference's over the same steps (else -EPROTO: the GPU decided otherwise).
 *
 * Nothing here logs: errors are -errno with one line in err; progress and notes go through
 * struct ftreport. */
#ifndef FT_REPLAY_REPLAY_H
#define FT_REPLAY_REPLAY_H
#include <errno.h>
#include <jansson.h>
#include <stddef.h>

#include "moe/formats.h"
#include "moe/models.h"
#include "replay/policy.h"
#include "replay/workload.h"
#include "util/report.h"

#define FTRP_MAX_AXIS 8     /* cache sizes, workloads */
#define FTRP_MAX_SWEEP 16   /* fetch fractions of the sweep */
#define FTRP_MAX_CAPS 4
#define FTRP_DEFAULT_LAYERS 16
#define FTRP_DEFAULT_CACHE 0.4  /* the default point: 0.4 of L x E ... */
#define FTRP_DEFAULT_REUSE 0.6  /* ... under reuse 0.6 */

/* One routing workload of the map: generated (reuse, skew) or the trace (trace = 1). */
struct ftrp_work {
	double reuse, skew;
	int trace;
};
/* Parse "uniform", "reuse:R", "zipf:S", "zipf:S+reuse:R" (also "reuse:R+zipf:S"). 0 or -EINVAL. */
int ftrp_work_parse(const char *s, struct ftrp_work *w);
/* "uniform", "reuse 0.6", "zipf 1.2", "zipf 1.2 reuse 0.6", "trace" into buf; returns buf. */
const char *ftrp_work_name(const struct ftrp_work *w, char *buf, size_t n);

/* Short (bw's default): at the default cache size, uniform routing and the default reuse (the
 * point the verdict follows), modes offload, the profile's f, f 0.25 / 0.5 / 1; full: the map. */
enum ftrp_size { FTRP_NONE = 0, FTRP_SHORT = 1, FTRP_FULL = 2 };
int ftrp_size_parse(const char *s, enum ftrp_size *out); /* none|short|full: 0 or -EINVAL */
const char *ftrp_size_name(enum ftrp_size s);

struct ftrp_config {
	const struct ftfmt *fmt;
	const struct ftmodel *model;   /* geometry (H, I, E, top-k, act): bw per-format or --model */
	int layers;                    /* MoE layers run (16) */
	int layers_model;              /* the model's MoE layers, for tok/s (model->layers, else 48) */
	int batch;                     /* tokens per step, 1..32 */
	int warmup_steps;              /* CPU-reference steps that warm the cache (64) */
	int gpu_warmup;                /* untimed steps on the device (4) */
	int steps;                     /* timed steps per mode (32) */
	int ncache;
	double cache[FTRP_MAX_AXIS];   /* cache sizes as fractions of layers x E ... */
	long cache_slots;              /* ... or one size in slots (> 0 overrides) ... */
	double cache_bytes;            /* ... or in bytes of expert slots (> 0 overrides) */
	int nwork;
	struct ftrp_work work[FTRP_MAX_AXIS];
	int nfrac;
	double fractions[FTRP_MAX_SWEEP]; /* the f sweep, each in [0, 1] */
	int ncaps;
	int caps[FTRP_MAX_CAPS];       /* hybrid cap K modes */
	double profile_fraction;       /* the profile's own f (NaN: none) */
	const char *profile_fraction_from; /* where it came from ("profile FILE", "bw"), or NULL */
	const char *bandwidth_verdict; /* the rule of thumb's verdict ("hybrid", "offload") or NULL */
	struct ftrp_policy base;       /* order, overlap, offload_from_batch of every hybrid mode */
	uint64_t seed;
	const struct ftrp_workload *trace; /* the routing when a workload is "trace" (borrowed) */
	double default_cache, default_reuse; /* the stated default workload (0.4, 0.6) */
};

/* Defaults: layers 16, batch 1, warm-up 64 + 4, 32 steps, cache 0.4 and 0.7, workloads uniform,
 * reuse 0.6, reuse 0.85, sweep 0 0.125 0.25 0.375 0.5 0.75 1, caps 1, seed 1; the model/format are
 * left NULL. size SHORT: cache 0.4, uniform and reuse 0.6, sweep 0.25 0.5 1, no caps, 16 steps. */
void ftrp_config_default(struct ftrp_config *c, enum ftrp_size size);
/* The slots of cache size i (fraction cache[i], or the override), at least batch * top-k and at
 * most layers * E. */
long ftrp_config_slots(const struct ftrp_config *c, int i, size_t expert_bytes);
/* 0, or -EINVAL with err naming the field. */
int ftrp_config_check(const struct ftrp_config *c, char *err, size_t errlen);

/* The measurement. Every int function returns 0 or -errno with one line in err. */
struct ftrp_ops {
	/* Set up banks, caches and the CPU executor for the largest cache of c (slots_max). close
	 * follows a failed open too. */
	int (*open)(void *ctx, const struct ftrp_config *c, long slots_max, char *err, size_t errlen);
	/* From cache state warm (slots = warm->slots), run w's steps under p: the first `untimed`
	 * steps untimed, then step_s[w->steps - untimed] seconds per step; counts: the ops' own
	 * decisions over the timed steps. */
	int (*run)(void *ctx, const struct ftsc *warm, const struct ftrp_workload *w, int untimed,
		   const struct ftrp_policy *p, double *step_s, struct ftrp_counts *counts, char *err, size_t errlen);
	/* Add what the ops know about how they ran (host_alloc, copy path, kernels, ...) to block. */
	void (*describe)(void *ctx, json_t *block);
	void (*close)(void *ctx);
	void *ctx;
};

/* Run every point of c and build the replay block of its format (*out: new reference): the
 * profile's replay.<fmt>. Returns 0, or -errno with err (then *out is NULL). */
int ftrp_run(const struct ftrp_config *c, const struct ftrp_ops *ops, const struct ftreport *rep, json_t **out,
	     char *err, size_t errlen);

/* The winner of a point from paired step times (the same routing, step by step): r_i = hyb[i] /
 * off[i], the median of r and its 95 % confidence interval by order statistics (the sorted r at
 * ranks n/2 -+ 0.98 sqrt(n), clamped to the samples): "hybrid" when the interval lies below 1,
 * "offload" when above, else "tie" (static string). A few slow steps (a CPU worker woken late)
 * widen a mode's p10-p90 but not the interval of its median. */
const char *ftrp_winner(const double *off, const double *hyb, int n);

/* Per cache fraction, the reuse at which hybrid stops winning, over the block's points of
 * skew 0 (sorted by reuse): null when hybrid wins at every reuse measured; the smallest reuse
 * measured when it wins at none; else the reuse where the speedup crosses 1 between the last
 * point hybrid wins and the next, interpolated linearly. New object, keys "%g" of the fraction. */
json_t *ftrp_stops_at(const json_t *points);

/* The point of block (a replay.<fmt> block) nearest to (cache_fraction, reuse) among points of
 * skew 0 (distance in both coordinates, ties: the first in the block); borrowed, or NULL. */
const json_t *ftrp_nearest_point(const json_t *block, double cache_fraction, double reuse);

/* What a profile's seed-read fields carry when a replay block exists (docs/REPLAY.md §3):
 * for each format with a replay block whose default point (the point nearest default_point) has
 * a winner other than "tie", the verdict follows the measured decode: dtypes[fmt] and
 * dtype_kernels[fmt].recommended become the winner; the rule of thumb's verdict stays in
 * dtype_kernels[fmt].recommended_bandwidth, and recommended_by says "replay" or "bandwidth". The
 * per-model workloads' entries (geometries not replayed) are never rewritten. The fetch fraction
 * the seed's reader derives from the overlap pair follows the default point's best f (when the
 * pair was measured): cpu_moe_overlap_gbs becomes pcie_ov x (1 - f) / f (f in [0.01, 0.99]), the
 * measured figure kept as cpu_moe_overlap_gbs_measured (+_spread), fetch_fraction_by "replay",
 * fetch_fraction_replay the point's best f. Returns how many formats' dtypes verdict changed. */
int ftrp_apply_verdicts(json_t *profile);

/* The GPU step runner's ops (runner.c); without CUDA, open fails with -ENODEV. cpus / ncpus: the
 * cores of the CPU executor (one per physical core; NULL: all). host_alloc: "register" (the
 * engine's mmap + cudaHostRegister) or "hostalloc" (cudaHostAlloc). */
struct ftcpu_info;
struct ftcpumoe_tune;
struct ftrp_gpu_opts {
	int device;                   /* CUDA ordinal */
	const struct ftcpu_info *cpu;
	const int *cpus;
	int ncpus;
	const char *host_alloc;
	double host_gib;              /* distinct host bank bytes to aim for (4) */
	const struct ftcpumoe_tune *tune;
	/* The engine's CPU path (replay --cpu-kernel, docs/REPLAY.md §2): when cpu_pad_n > 0, the
	 * coordinator holds a layer's CPU result until cpu_pad_us[n] microseconds after its doorbell,
	 * n = the layer-step's CPU routes (the last entry's slope past the table): the CPU half then
	 * takes the engine's time, our executor still doing the work (its memory traffic beside the
	 * gather). Borrowed; the table lives until ftrp_gpu_ops_free. */
	const double *cpu_pad_us;
	int cpu_pad_n;
	/* ... and what the engine's hybrid path adds to a layer-step that fetches m experts beyond
	 * the fetch (fetch_pad_us[m], measured as its hybrid step that fetches m experts and sends none
	 * to the CPU against its offload step): held on the stream after the doorbell, on the GPU's
	 * side of the overlap (the CPU works meanwhile). */
	const double *fetch_pad_us;
	int fetch_pad_n;
};
int ftrp_gpu_ops(const struct ftrp_gpu_opts *o, struct ftrp_ops *ops);
void ftrp_gpu_ops_free(struct ftrp_ops *ops);

/* A cost model in place of the device (tests/lib/fake_replay.c, test builds only: FT_TEST_HOOKS;
 * the product's ftrp_fake_ops says -ENOSYS): per layer-step
 * 0.1 ms + max(fetched x 1 ms, CPU misses x 0.5 ms) + 0.1 ms on hybrid layers, +-2 % jitter; the
 * decisions are the CPU reference's. miscount: add that many fetches to the counts it reports
 * (a device that decided otherwise). Free with ftrp_fake_ops_free. */
#ifdef FT_TEST_HOOKS
int ftrp_fake_ops(int miscount, struct ftrp_ops *ops);
/* The same with the engine's CPU path (ftrp_gpu_opts.cpu_pad_*, fetch_pad_*): a layer-step's CPU
 * side is at least pad_us[its CPU routes], and a hybrid layer-step's GPU side takes
 * fetch_us[its fetches] longer (fetch_us: npad entries too, or NULL). */
int ftrp_fake_ops_paced(int miscount, const double *pad_us, int npad, const double *fetch_us, struct ftrp_ops *ops);
void ftrp_fake_ops_free(struct ftrp_ops *ops);
#else
static inline int ftrp_fake_ops(int miscount, struct ftrp_ops *ops)
{
	(void)miscount, (void)ops;
	return -ENOSYS;
}
static inline int ftrp_fake_ops_paced(int miscount, const double *pad_us, int npad, const double *fetch_us,
				      struct ftrp_ops *ops)
{
	(void)miscount, (void)pad_us, (void)npad, (void)fetch_us, (void)ops;
	return -ENOSYS;
}
static inline void ftrp_fake_ops_free(struct ftrp_ops *ops)
{
	(void)ops;
}
#endif
#endif
