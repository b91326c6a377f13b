/* cpu_moe (bench): the CPU MoE executor over synthetic banks, for `ftbench cpu-moe` and `bw`.
 *
 * Banks for one layer of E_synth experts of (format, H, I), random codes and realistic
 * scales (never zeros, no NaN/Inf), in huge-page-advised memory first-touched by the pool's
 * workers. E_synth = max(topk*batch, ceil(max(4*LLC, 1 GiB) / expert_bytes)) — more than the
 * model's E where E experts do not cover 4x LLC (a 300 MiB LLC needs 1.2 GiB) — lowered only
 * when memory is short (a quarter of MemAvailable), so the expert ids of consecutive steps
 * rotate over a working set that the last-level cache cannot hold.
 *
 * Steps: batch B tokens, each routed to topk distinct experts. Routing FTMOEBENCH_ROUTE_DISTINCT
 * (the default): every route of a step takes the next expert of a fixed random permutation, so
 * no expert repeats before the whole working set has been read and no two tokens share one.
 * FTMOEBENCH_ROUTE_MODEL: a step is a layer of the model's E experts (the next E of the permutation)
 * and each token picks its topk of them uniformly at random, so tokens share experts as a real
 * batch does (B = 32, E = 128, top-8: ~112 distinct experts, 2.3 tokens each). Bytes of a step
 * = distinct experts * expert_bytes (B = 1: topk * expert_bytes, either routing). */
#ifndef FT_BENCH_CPU_MOE_H
#define FT_BENCH_CPU_MOE_H
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "hw/cpu.h"
#include "moe/cpu/cpumoe.h"
#include "moe/cpu/pool.h"
#include "moe/formats.h"

enum ftmoebench_routing { FTMOEBENCH_ROUTE_DISTINCT = 0, FTMOEBENCH_ROUTE_MODEL = 1 };

struct ftmoebench_cfg {
	enum ftfmt_id format;
	long hidden, inter;
	int experts, topk;          /* model's E and top-k */
	enum ftfmt_act act;
	float swiglu_limit;
	int batch;                  /* 1..FTCPUMOE_MAX_BATCH: the largest; ftmoebench_set_batch picks less */
	int routing;                /* enum ftmoebench_routing */
	int threads;                /* 0: every physical core */
	int numa_node;              /* -1: none (e.g. the GPU's node otherwise) */
	const int *cpus;            /* NULL, or the core set to run on (ncpus CPU ids, one per
				     * physical core; threads and numa_node are then unused) */
	int ncpus;
	size_t working_set_min;     /* 0: max(4*LLC, 1 GiB) */
	uint64_t seed;              /* 0: a fixed default */
	const struct ftcpumoe_tune *tune; /* the executor's knobs (NULL: defaults); copied at create */
};

struct ftmoebench;

/* Allocate and fill the banks, create the pool (pinning the calling thread to worker 0's
 * core, see moe/cpu/pool.h) and the executor (tier AUTO). The calling thread must be the one
 * that later calls ftmoebench_time / ftmoebench_run_until. Returns 0 and *out (ftmoebench_free), -EINVAL
 * (format without a CPU path, bad geometry), -ENOMEM, or the pool's error. */
int ftmoebench_create(const struct ftmoebench_cfg *cfg, const struct ftcpu_info *ci, struct ftmoebench **out);
void ftmoebench_free(struct ftmoebench *b); /* accepts NULL */

int ftmoebench_synth_experts(const struct ftmoebench *b);
/* Tokens of the following steps: 1..cfg.batch. -EINVAL otherwise. */
int ftmoebench_set_batch(struct ftmoebench *b, int batch);
size_t ftmoebench_expert_bytes(const struct ftmoebench *b);
size_t ftmoebench_working_set_bytes(const struct ftmoebench *b);
int ftmoebench_threads(const struct ftmoebench *b);
struct ftpool *ftmoebench_pool(struct ftmoebench *b);   /* borrowed (e.g. for ftcread_measure) */
struct ftcpumoe *ftmoebench_moe(struct ftmoebench *b);    /* borrowed (ftcpumoe_trace) */

/* The tiers to run for a request: "auto" (one: what the executor runs for FTCPUMOE_ISA_AUTO,
 * tune->isa or the best), "all" (every tier this CPU has), or a comma list of names (auto
 * among them). tune may be NULL (defaults). Returns the count written to out[max], -EINVAL for
 * an unknown name (why names it), -ENOTSUP for a tier this CPU lacks (why names it). */
int ftmoebench_isa_list(const char *spec, const struct ftcpumoe_tune *tune, enum ftfmt_id f, unsigned cpu_isa,
		   enum ftcpumoe_isa *out, int max, char *why, size_t whylen);

/* `warmup` untimed then `iters` timed steps with tier isa (AUTO resolves as ftcpumoe does):
 * step_s[iters] gets seconds per step and step_bytes[iters] (may be NULL) the expert bytes each
 * step read; *used the tier that ran. Returns 0 or -errno (-ENOTSUP: tier not on this CPU). */
int ftmoebench_time(struct ftmoebench *b, enum ftcpumoe_isa isa, int warmup, int iters, double *step_s,
	       double *step_bytes, enum ftcpumoe_isa *used);

/* Overlap mode: run steps until *stop is set (or max_s seconds passed, if > 0); *bytes and
 * *secs get the expert bytes processed and the elapsed time. Returns 0 or -errno. */
int ftmoebench_run_until(struct ftmoebench *b, enum ftcpumoe_isa isa, const atomic_int *stop, double max_s,
		    double *bytes, double *secs);

/* Fill n bytes of bank sh of format f at p as the banks above are filled (random codes,
 * realistic never-zero scales, no NaN/Inf), from seed s; p starts on an expert row (q4_0: on a
 * block). The replay's host banks use it too. */
void ftmoebench_fill(enum ftfmt_id f, const struct ftfmt_bank_shape *sh, uint8_t *p, size_t n, uint64_t s);

/* Check one step of tier isa against the scalar tier on the same banks and input; returns 0
 * and the relative L2 error in *rel, or -errno. */
int ftmoebench_verify(struct ftmoebench *b, enum ftcpumoe_isa isa, double *rel);
#endif
