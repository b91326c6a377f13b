/* workload: the routing of a replay — per decode step and MoE layer, the experts each token of
 * the batch is routed to — generated (uniform, popularity skew, temporal reuse, both;
 * deterministic from a seed) or read from a trace file (docs/REPLAY.md §2 has the format).
 *
 * Ownership: a struct ftrp_workload owns ids and weights (ftrp_workload_release frees them).
 * Functions return 0 or -errno and never log; where they take (err, errlen), err gets one line
 * saying what was wrong (the trace's path, step, layer, value). */
#ifndef FT_REPLAY_WORKLOAD_H
#define FT_REPLAY_WORKLOAD_H
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define FTRP_TRACE_FORMAT "ftbench-routing-trace"
#define FTRP_TRACE_VERSION 1
#define FTRP_TRACE_MAX_BYTES (256u << 20) /* the largest trace file read */
#define FTRP_MAX_IDS (1u << 26)           /* steps * layers * batch * top_k */
#define FTRP_MAX_LAYERS 4096
#define FTRP_MAX_EXPERTS 2048             /* = FTSC_MAX_EXPERTS */
#define FTRP_MAX_BATCH 32                 /* = FTCPUMOE_MAX_BATCH */
#define FTRP_MAX_TOPK 16                  /* = FTCPUMOE_MAX_TOPK */

struct ftrp_workload {
	int layers, experts, topk, batch, steps;
	int32_t *ids;     /* [steps][layers][batch][topk] */
	float *weights;   /* same shape, or NULL: every route 1/topk */
};

/* The ids of (step, layer): batch * topk entries. */
static inline const int32_t *ftrp_ids(const struct ftrp_workload *w, int step, int layer)
{
	return w->ids + ((size_t)step * (size_t)w->layers + (size_t)layer) * (size_t)(w->batch * w->topk);
}
void ftrp_workload_release(struct ftrp_workload *w); /* accepts NULL and a zeroed struct */

/* 0, or -EINVAL (err says which) when a dimension is outside its limit (above) or the product
 * exceeds FTRP_MAX_IDS, or topk > experts. */
int ftrp_workload_check_dims(int layers, int experts, int topk, int batch, long long steps, char *err,
			     size_t errlen);

/* Generator. skew: Zipf exponent of expert popularity (0 uniform; the rank order of the experts is a
 * random permutation per layer). reuse: probability that each expert a token used in the step
 * before is kept (0 = independent steps; 1 = the same experts forever). The rest of a token's
 * top-k are drawn by popularity among the experts it does not have yet. Route weights: random,
 * positive, summing to 1 per token. Same arguments, same workload, on every host. */
struct ftrp_gen {
	double skew;      /* >= 0 */
	double reuse;     /* [0, 1] */
	uint64_t seed;
};
int ftrp_generate(const struct ftrp_gen *g, int layers, int experts, int topk, int batch, int steps,
		  struct ftrp_workload *out, char *err, size_t errlen);

/* The measured temporal reuse: over every layer and step s >= 1, the share of the distinct experts
 * of (s, layer) that (s - 1, layer) also used; mean over those. NaN for fewer than 2 steps. */
double ftrp_workload_reuse(const struct ftrp_workload *w);

/* Trace file. parse takes the document (borrowed); read loads path (at most FTRP_TRACE_MAX_BYTES;
 * "-" is not special). Errors: -EINVAL (not a trace, a wrong count, ragged steps, a bad id: err
 * names path, step, layer and the value), -E2BIG (over a size limit), -ENOMEM, -errno of reading. */
int ftrp_trace_parse(const json_t *doc, const char *what, struct ftrp_workload *out, char *err, size_t errlen);
int ftrp_trace_read(const char *path, struct ftrp_workload *out, char *err, size_t errlen);
/* The trace document of w (new reference; NULL on allocation failure). with_weights: write
 * "weights" too (only when w has them). */
json_t *ftrp_trace_json(const struct ftrp_workload *w, int with_weights);
/* Write the trace of w to path atomically (compact JSON). 0 or -errno (err says why). */
int ftrp_trace_write(const char *path, const struct ftrp_workload *w, char *err, size_t errlen);
/* A copy of steps [from, from + n) of w into out. 0, -EINVAL, -ENOMEM. */
int ftrp_workload_slice(const struct ftrp_workload *w, int from, int n, struct ftrp_workload *out);
#endif
