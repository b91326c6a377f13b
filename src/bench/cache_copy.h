/* cache_copy: the `cache-copy` benchmark (reference §4): per model profile and cache size, the
 * cost of one decode layer's ensure_experts + copy_missing on the GPU for batch sizes x miss
 * rates, with the same bytes moved by one linear pinned cudaMemcpyAsync, by the per-expert
 * cudaMemcpyAsync loop and by the per-bank path in the same run as baselines, and the slot
 * contents checked against the source rows after every configuration.
 *
 * Set-up per model: synthetic pinned banks for layer 0 only (bench/gather.h), a slot cache of L
 * layers (kernels/slot_cache.h) in which every slot starts owned by a layer-1 expert
 * (id = E + slot % E, usage = slot + 1), so eviction does real work and layer 0 never hits.
 * Per configuration: active = min(E, bs * topk), misses = round(active * miss_rate) (half to
 * even), the first active - misses experts made resident first (untimed), then timed:
 * ensure_experts + copy_missing between CUDA events, `repeat` times from the same state.
 * The copy in that figure is the copy-engine proxy (default, as ftgather's) or the fused SM
 * gather (--copy fused, §4's kernel); every other path is timed on the same plan as a column. */
#ifndef FT_BENCH_CACHE_COPY_H
#define FT_BENCH_CACHE_COPY_H
#include <jansson.h>

#include "moe/models.h"
#include "util/report.h"

#define FTCC_MAX_LIST 32
#define FTCC_DEFAULT_REPEAT 25
#define FTCC_DEFAULT_BATCH_SIZES "1,4,16,32" /* `ftbench cache-copy` prints these as the defaults */
#define FTCC_DEFAULT_MISS_RATES "0,0.25,0.5,1"

enum ftcc_copy {
	FTCC_COPY_FUSED = 0, /* ftmissing_copy: fused gather (per-bank when misaligned or forced) */
	FTCC_COPY_PROXY = 1, /* ftmissing_proxy_copy: copy engines driven from the device plan */
};

struct ftcc_opts {
	const struct ftmodel *models[FTCC_MAX_LIST];
	int nmodels;
	long slots[FTCC_MAX_LIST]; /* nslots == 0: E and int(0.4 * L * E) per model */
	int nslots;
	long batch[FTCC_MAX_LIST];
	int nbatch;
	double miss[FTCC_MAX_LIST];
	int nmiss;
	int repeat;
	enum ftcc_copy copy; /* the copy path of time_ms / bw_GBps */
};

/* Defaults of reference §4: every profile, batch 1 4 16 32, miss rates 0 .25 .5 1, 25 repeats. */
void ftcc_defaults(struct ftcc_opts *o);

/* Run on the current CUDA device. *out = new reference {"results": [{model, format, layers,
 * experts, topk, hidden, inter, expert_bytes, cache_slots, path ("fused"|"per_bank": what the
 * fused path resolves to), copy ("fused"|"proxy": the path of time_ms), proxy_split_bytes,
 * proxy_signal ("memop"|"kernel"), rows: [...]}]}; each row has the §4 columns (bs, active,
 * miss_rate, misses, time_ms = ensure_experts + the chosen copy, copy_MiB, bw_GBps, tok_ms) plus
 * time_ms_spread, pct_of_linear (linear_ms / time_ms, %), and:
 *  - ensure_us: ensure_experts alone, per call, from 8 back-to-back calls each on its own fresh
 *    copy of the configuration's state, the second of two such rounds (median of the repeats;
 *    ensure_ms_spread; test_slot_cache_gpu's start-state method); ensure_first_round_us
 *    (and _ms_spread): the first round, right after the copy passes;
 *    ensure_isolated_us: the old figure, one call between two events after a copy kernel;
 *  - X_ms (median) and X_ms_spread for X = copy (the chosen path's copy part of time_ms),
 *    fused, per_bank, proxy (copy only, after an untimed ensure), memcpy (per-expert
 *    cudaMemcpyAsync loop, plan on the host), linear (one pinned cudaMemcpyAsync of the same
 *    bytes); X_GBps and X_pct_of_linear for copy, fused, per_bank, proxy, memcpy; linear_GBps;
 *  - fused_over_per_bank (per_bank_ms / fused_ms), verified (the chosen path and the other of
 *    fused/proxy both checked), and "error" instead of figures when a configuration cannot run
 *    (cache smaller than the active set). Progress per (model, cache size) through rep.
 * Returns 0, -ENODEV (no CUDA), -ENOMEM, -EIO (CUDA error), -EBADMSG (a slot differs from its
 * source row: the result is still returned, with verified false). */
int ftcc_run(const struct ftcc_opts *o, const struct ftreport *rep, json_t **out);
#endif
