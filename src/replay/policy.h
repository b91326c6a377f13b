/* policy: an engine's MoE placement policy at decode as data (docs/REPLAY.md §1), and the CPU
 * reference of a layer-step's cache decisions under it: which misses are fetched, which go to the
 * CPU, what enters the slot cache. The GPU step runner's decisions must equal these (it uses the
 * kernels of kernels/slot_cache.h, which match src/moe/slot_cache.c bit for bit).
 *
 * Nothing here allocates after ftrp_sim_init; functions return 0 or -errno and never log. */
#ifndef FT_REPLAY_POLICY_H
#define FT_REPLAY_POLICY_H
#include <stdint.h>

#include "moe/slot_cache.h"

enum ftrp_mode {
	FTRP_MODE_OFFLOAD = 0,  /* fetch every miss (LRU insert) */
	FTRP_MODE_CAP = 1,      /* hybrid: fetch at most `cap` misses per layer-step */
	FTRP_MODE_FRACTION = 2, /* hybrid: fetch the Q16 split of `fraction` of the misses */
};

struct ftrp_policy {
	enum ftrp_mode mode;
	int cap;                /* FTRP_MODE_CAP: >= 0 (0: every miss on the CPU) */
	double fraction;        /* FTRP_MODE_FRACTION: in [0, 1] */
	enum ftsc_order order;  /* which misses are fetched (seed: FREETOKEN_HYBRID_FETCH, recency) */
	int overlap;            /* 1: CPU routes overlap the GPU work (seed: FREETOKEN_HYBRID_OVERLAP=1) */
	int offload_from_batch; /* > 0: steps of at least this many tokens run as offload (llama.cpp's
				 * op offload: 32); 0: never (the seed) */
};

/* The seed engine's hybrid with fraction f (recency, overlap, no batch switch). */
void ftrp_policy_fraction(struct ftrp_policy *p, double f);
void ftrp_policy_cap(struct ftrp_policy *p, int cap);
void ftrp_policy_offload(struct ftrp_policy *p);
/* 1 when a step of B tokens runs the hybrid path under p. */
int ftrp_policy_hybrid_at(const struct ftrp_policy *p, int B);
/* "offload", "hybrid_cap", "hybrid_fraction" (static). */
const char *ftrp_mode_name(enum ftrp_mode m);
/* 0, or -EINVAL when a field is out of range. */
int ftrp_policy_check(const struct ftrp_policy *p);

/* Counts of a run: layer-steps, distinct experts asked for (active), misses, misses fetched,
 * misses computed on the CPU (= misses - fetched), routes (token, expert) on the CPU. */
struct ftrp_counts {
	long long layer_steps, active, misses, fetched, cpu, cpu_routes;
};
void ftrp_counts_add(struct ftrp_counts *a, const struct ftrp_counts *b);
/* misses / active (NaN when nothing was asked for). */
double ftrp_counts_miss_rate(const struct ftrp_counts *c);

/* One layer-step on the CPU reference. ids[B*K] are the routed experts (token-major, K per
 * token; each in [0, E)). Outputs (caller's arrays of B*K): slots[i] the slot of route i on the
 * GPU or -1 (CPU); cpu_ids[i] the expert of route i when it runs on the CPU, else -1. plan gets
 * the copies (src expert row -> slot; cap >= E). c (may be NULL) is added to. Errors: those of
 * ftsc_ensure / ftsc_ensure_hybrid (-ENOSPC: offload with more distinct ids than slots), -EINVAL
 * for a bad policy or B, K out of range. */
int ftrp_ref_layer(struct ftsc *sc, const struct ftrp_policy *p, int layer, int B, int K, const int32_t *ids,
		   int32_t *slots, int32_t *cpu_ids, struct ftsc_plan *plan, struct ftrp_counts *c);
#endif
