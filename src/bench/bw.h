/* bw: the host bandwidth profile of reference §5 — ceilings, the real gather against the real
 * CPU MoE executor per (workload, format), both overlapped, the offload/hybrid decision, and the
 * profile JSON (CONTRACTS §1) that libftprofile reads.
 *
 * The orchestration (ftbw_run) is separate from the measurements (struct ftbw_ops): the real
 * measurements live in bw_ops.c (CUDA gather, PCIe copies, CPU read, CPU MoE executor); tests
 * drive ftbw_run with fake ops. Nothing here logs or exits: errors are returned as -errno with a
 * message in err, notes and progress go through struct ftreport. */
#ifndef FT_BENCH_BW_H
#define FT_BENCH_BW_H
#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "bench/bw_decide.h"
#include "hw/cpu.h"
#include "hw/gpu.h"
#include "moe/cpu/cpumoe.h"
#include "moe/formats.h"
#include "moe/models.h"
#include "util/report.h"
#include "util/stats.h"

#define FTBW_MAX_ITEMS 64
#define FTBW_MAX_MODELS 16
#define FTBW_MAX_ISAS 8
#define FTBW_MAX_BATCHES 8   /* --batch-sweep entries */
#define FTBW_DEFAULT_THRESHOLD 2.0
/* The defaults of struct ftbw_config (ftbw_config_default; `ftbench bw`'s rows print them). */
#define FTBW_DEF_CPU_ITERS 8
#define FTBW_DEF_PCIE_MIB 256
#define FTBW_DEF_PCIE_ITERS 30
#define FTBW_DEF_KERNEL_CPU_WARMUP 8
#define FTBW_DEF_KERNEL_CPU_ITERS 512
#define FTBW_DEF_KERNEL_PCIE_ITERS 32
#define FTBW_DEF_OVERLAP_S 2.0
#define FTBW_SYNTH_BYTES (2ull << 30) /* E_synth = min(E, max(1, 2 GiB / expert_bytes)) */

/* Everything the CLI flags decide. ftbw_config_default fills the reference defaults (FTBW_DEF_*). */
struct ftbw_config {
	double threshold;        /* hybrid if cpu_moe_gbs > threshold * pcie_gather_gbs */
	int cpu_threads;         /* 0: one per physical core */
	int cpu_iters;           /* CPU read-ceiling passes */
	int pcie_mib;            /* linear copy size */
	int pcie_iters;          /* linear copy iterations */
	int kernel_cpu_warmup;   /* CPU MoE warm-up steps */
	int kernel_cpu_iters;    /* CPU MoE timed steps */
	int kernel_pcie_iters;   /* gather timed passes */
	double overlap_s;        /* overlapped run length; 0 skips the overlap */
	double max_spread;       /* validity: a spread above this share of its median
				  * (FTBW_VALID_SPREAD); 0 = no check */
	bool no_checks;          /* no validity checks at all (short test runs): no "valid" in the profile */
	bool gather_sm;          /* time the SM gather (fused) instead of the default copy-engine proxy */
	int nbatch;              /* --batch-sweep: batches (ascending) of the sweep; 0: no sweep */
	int batches[FTBW_MAX_BATCHES];
	char isa[128];           /* "auto", "all" or a list of ISA names ("avx2,avx512") */
	int ndtypes;             /* formats measured on their bw --dtype workload */
	enum ftfmt_id dtypes[FTFMT_COUNT];
	int nmodels;             /* bw --model workloads */
	const struct ftmodel *models[FTBW_MAX_MODELS];
	int nformats;            /* --formats: formats for the model workloads (0: each model's own) */
	enum ftfmt_id formats[FTFMT_COUNT];
	/* Several GPUs (ftbw_run_host): */
	int engines;             /* N engines run at once in the concurrent phase (0: one per GPU) */
	int engine_threads;      /* cores per engine (0: the physical cores split evenly) */
	int deployment;          /* enum ftbw_deployment, or -1: concurrent when N > 1 engines ran */
	struct ftcpumoe_tune tune; /* the CPU MoE executor's knobs (--tune; defaults) */
};

void ftbw_config_default(struct ftbw_config *c);

/* Which figures the seed's verdict fields (dtypes, ENTRY.recommended, recommended_moe_backend)
 * carry: the GPU measured alone, or while every engine of the host runs at once. */
enum ftbw_deployment { FTBW_DEPLOY_ISOLATED = 0, FTBW_DEPLOY_CONCURRENT = 1 };
const char *ftbw_deployment_name(int d);                /* "isolated" / "concurrent" */
int ftbw_deployment_parse(const char *s, int *d);       /* 0 or -EINVAL */

/* One (workload, format) to measure. */
struct ftbw_item {
	const struct ftmodel *model;   /* geometry (static catalogue entry) */
	const struct ftfmt *fmt;
	bool is_dtype;                 /* from --dtype (goes to dtype_kernels) or --model (workloads) */
	size_t expert_bytes;
	int synth_experts;             /* E_synth */
	char label[96];                /* progress label: "dtype:bf16" or "qwen3-30b:bf16" */
};

/* E_synth = min(E, max(1, cap / expert_bytes)). */
int ftbw_synth_experts(int experts, size_t expert_bytes, size_t cap);

/* Expand the config into items (dtype workloads first, then models x formats). A model format
 * whose geometry does not fit the format's blocks is skipped with a note in skipped (may be
 * NULL). Returns the count, or -E2BIG when more than max. */
int ftbw_plan(const struct ftbw_config *c, struct ftbw_item *items, int max, char *skipped, size_t n);

/* What measuring one item gives. Every *_gbs array is malloc'ed by the ops (one sample per
 * pass/step, GB/s = 1e9 B/s) and freed by ftbw_meas_release. rc: 0 measured, -errno failed
 * (err says why), FTBW_NOT_RUN not attempted (no GPU, no CPU path, ...). */
#define FTBW_NOT_RUN 1
struct ftbw_part {
	int rc;
	double *gbs;
	int n;
	char err[200];
};

#define FTBW_MAX_PAIRS 64
struct ftbw_meas {
	struct ftbw_part gather;       /* the real copy_missing, alone */
	struct ftbw_part cpu;          /* the real CPU MoE executor, alone, batch 1 */
	char cpu_isa[24];              /* ISA the executor used for cpu */
	int nsweep;                    /* --isa all|list: one figure per ISA */
	char sweep_isa[FTBW_MAX_ISAS][24];
	double sweep_gbs[FTBW_MAX_ISAS];
	struct ftbw_part ov_cpu;       /* overlapped: CPU side (its own bytes/time per sample) */
	struct ftbw_part ov_gather;    /* overlapped: gather side */
	/* CPU read-ceiling passes the ops took during this item (ops without a read session leave
	 * them FTBW_NOT_RUN): read_cpu, the passes interleaved with the rounds of the steps behind
	 * the cpu figure (its adjacent read rate, entry key cpu_read_adjacent_gbs); read_other, the
	 * rest (other tiers of an ISA sweep, before each overlap window and after the last). */
	struct ftbw_part read_cpu;
	struct ftbw_part read_other;
	/* The default run times the gather and the CPU MoE in interleaved pairs (bw_ops.c: 16 pairs,
	 * each 2 gather passes and 32 steps, in alternating order, warm-ups dropped):
	 * pair_ratio[k] = pair k's CPU MoE median / its gather median, for the tier behind the cpu
	 * figure (entry keys ratio_paired, the median, and ratio_rounds_spread). */
	int npair;
	double pair_ratio[FTBW_MAX_PAIRS];
	/* --batch-sweep: per batch, the CPU MoE steps (tokens routed among the model's experts)
	 * and the gather of as many experts as a step read, in interleaved rounds */
	int nbatch;
	struct ftbw_batch {
		int batch;
		double experts;        /* distinct experts per step (mean) */
		struct ftbw_part cpu, gather;
	} bsw[FTBW_MAX_BATCHES];
};

void ftbw_meas_init(struct ftbw_meas *m);
void ftbw_meas_release(struct ftbw_meas *m);

/* What the host is and where the threads go (filled by the caller). */
struct ftbw_env {
	const struct ftcpu_info *cpu;
	struct ftgpu_info *gpu;        /* NULL on a GPU-less host; link fields updated under load */
	const char *no_gpu_why;        /* why there is no GPU ("no NVIDIA driver is loaded") */
	const int *cpus;               /* CPU ids for the threads, one per physical core, near the GPU */
	int ncpus;
};

/* ---------------------------------------------------------------- engines (several GPUs) */

#define FTBW_MAX_GPUS 64
#define FTBW_MAX_ENGINES 64

/* One engine of the concurrent phase: what an inference engine on this host would run, a GPU's
 * gather plus a CPU MoE executor on its share of the cores. */
struct ftbw_engine {
	int index, count;              /* this engine of N */
	int gpu;                       /* position in the run's GPU list (engine e serves GPU e % ngpus) */
	const struct ftgpu_info *gpu_info;
	const struct ftcpu_info *cpu;
	const int *cpus;               /* its core set: one CPU id per physical core (borrowed) */
	int ncpus;
	int node;                      /* its GPU's NUMA node (-1 unknown) */
	int mem_node;                  /* where its pinned banks go: the GPU's node on a host of several
					* nodes, else -1 (leave it to the kernel) */
};

/* Split the host's physical cores between n engines (engine e serves GPU e % ngpus): each gets
 * per_engine cores (0: physical_cores / n), taken from the free cores of its GPU's NUMA node
 * first, then from the others in order; engines are served in index order, so the first engine
 * of each GPU is nearest. cpu_store (physical_cores entries) holds the sets e[i].cpus point
 * into. Returns 0, or -EINVAL with err naming the problem (n outside 1..FTBW_MAX_ENGINES,
 * fewer engines than GPUs, fewer than one core each, more cores asked than the host has). */
int ftbw_engine_plan(const struct ftcpu_info *ci, const struct ftgpu_info *gpus, int ngpus, int n,
		     int per_engine, struct ftbw_engine *e, int *cpu_store, char *err, size_t errlen);

/* The phases of the concurrent run, each started by every engine at once. */
enum ftbw_phase {
	FTBW_PHASE_GATHER = 0,         /* gather alone on every GPU at once -> m->gather */
	FTBW_PHASE_CPU = 1,            /* CPU MoE on every core set at once -> m->cpu, m->cpu_isa */
	FTBW_PHASE_OVERLAP = 2,        /* both at once on every engine -> m->ov_cpu, m->ov_gather */
	FTBW_PHASES = 3,
};

/* The hold of one phase: an engine that has its samples arrives, and keeps its load running
 * until every engine has arrived (released), so that every sample of every engine is taken
 * with all the others busy. Arriving twice counts once. */
struct ftbw_hold {
	atomic_int pending;
	atomic_int released;           /* nonzero once every engine has arrived */
	atomic_int arrived[FTBW_MAX_ENGINES];
};
void ftbw_hold_init(struct ftbw_hold *h, int engines);
void ftbw_hold_arrive(struct ftbw_hold *h, int engine);
static inline const atomic_int *ftbw_hold_flag(const struct ftbw_hold *h)
{
	return &h->released;
}

/* The measurements. Every function returns 0 or -errno with a one-line message in err. */
struct ftbw_ops {
	/* CPU read ceiling: passes samples of GB/s into gbs[passes]. The real ops open a read
	 * session here that stays open for the run, and measure() takes further passes from it
	 * into the item's read_cpu / read_other (see ftbw_read_ceiling). */
	int (*cpu_read)(void *ctx, const struct ftbw_env *env, int passes, double *gbs, char *err,
			size_t errlen);
	/* Linear pinned copy of bytes, host->device (h2d) or back, iters samples of GB/s. */
	int (*pcie_linear)(void *ctx, const struct ftbw_env *env, bool h2d, size_t bytes, int iters,
			   double *gbs, char *err, size_t errlen);
	/* Measure one item into m (already initialised); failures go into the parts, so this
	 * returns -errno only when the whole run must stop (e.g. a sticky CUDA error). */
	int (*measure)(void *ctx, const struct ftbw_env *env, const struct ftbw_config *c,
		       const struct ftbw_item *it, struct ftbw_meas *m, char *err, size_t errlen);
	void *ctx;
	/* The concurrent phase (NULL: the ops cannot run it). Every call for an engine is made
	 * from a thread of its own (a CUDA device and a pinned pool are per thread).
	 * engine_open sets engine e up for item it (*h: its state; the gather on e's GPU with
	 * pinned banks on e->mem_node, the executor on e->cpus). engine_phase takes the samples of
	 * phase ph into m (as measure() does: failures go into the parts), then calls
	 * ftbw_hold_arrive(hold, e->index) and keeps the same load running, untimed, until
	 * *ftbw_hold_flag(hold) is set. engine_close frees h (accepts NULL). Both int functions
	 * return -errno only when the whole run must stop. */
	int (*engine_open)(void *ctx, const struct ftbw_engine *e, const struct ftbw_config *c,
			   const struct ftbw_item *it, void **h, char *err, size_t errlen);
	int (*engine_phase)(void *h, enum ftbw_phase ph, const struct ftbw_config *c, struct ftbw_meas *m,
			    struct ftbw_hold *hold, char *err, size_t errlen);
	void (*engine_close)(void *h);
};


/* The profile's own checks, set as "valid" and "invalid_reasons" (an array, empty when valid):
 * a CPU MoE figure above the CPU read ceiling by more than FTBW_VALID_ABOVE_READ (the ceiling was
 * not what memory sustains), a ceiling or figure whose spread (max - min) exceeds max_spread of
 * its median (the host was not quiet; 0: not checked; a CPU MoE figure with cpu_moe_slow_steps:
 * more than FTBW_VALID_SLOW_STEPS of its steps under 0.8 x the median, or max - median over
 * max_spread of it: with hundreds of steps one straggler sets the minimum), a linear PCIe copy under
 * FTBW_VALID_LINK_SHARE of what the link as trained carries. Returns the number of reasons. */
#define FTBW_VALID_ABOVE_READ 1.10
#define FTBW_VALID_SPREAD 0.75
/* A measured phase (the CPU read ceiling, each linear PCIe direction, each workload's kernels)
 * whose spread fails the checks above is measured again, at most this many more times, before
 * the profile is declared not valid (a busy host's burst passes); the last try is kept, and the
 * profile's "remeasured" lists each phase measured again ({phase, tries, passed}). */
#define FTBW_REMEASURE 2
/* The figure is the steps' median: a share s of slow steps moves it at most to the fast steps'
 * (50 + 50 s)th percentile; at 0.20, their 60th. The H200 VM's quiet runs had 0-9 % (2026-12-01,
 * bench/RESULTS.md), so 0.05 refused 2 of 5 runs whose medians agreed with the rest. */
#define FTBW_VALID_SLOW_STEPS 0.20
#define FTBW_VALID_LINK_SHARE 0.50
int ftbw_check_valid(json_t *prof, double max_spread);
/* Why entry e (named name in the reasons) is not to be trusted, appended to why as strings: a
 * figure above the read ceiling read (0: not checked), a spread over max. */
void ftbw_entry_reasons(json_t *why, const json_t *e, const char *name, double read, double max);
/* Downgrade the unusable parts of m (not run, no samples, a sample not a positive finite rate) to
 * failed; the overlap pair counts only as a pair. Idempotent. */
void ftbw_meas_normalize(struct ftbw_meas *m);

/* The largest batch of the sweep up to which every batch's cpu_gbs[i] > threshold * pcie_gbs[i]
 * (batches ascending): 0 when the first fails, -1 when a figure is missing (not measured). */
int ftbw_hybrid_max_batch(int n, const int *batch, const double *cpu_gbs, const double *pcie_gbs,
			  double threshold);


/* The CPU read ceiling of a run from all its read passes, in phases: v[0..n) holds the passes
 * in run order, phase p the next len[p] of them (phase 0: the initial passes, then one phase per
 * item). The host's read rate drifts within a run (a VM: 88-147 GB/s within minutes), so the
 * ceiling is the highest phase median, over phase 0 and every phase of at least
 * FTBW_READ_PHASE_MIN passes: the rate memory sustained for one phase of this run, robust to a
 * single fast pass. *all (may be NULL) gets the spread over every pass (its median: the typical
 * rate of the run), *counted (may be NULL) the number of phases that counted. NaN when there is
 * no pass. */
#define FTBW_READ_PHASE_MIN 3
double ftbw_read_ceiling(const double *v, const int *len, int nphases, struct ftstat *all, int *counted);

/* True when the link trained below what both ends can do (0 = unknown is never degraded). */
bool ftbw_link_degraded(const struct ftgpu_info *g);

/* Run everything and build the profile (*out: new reference). Returns 0, or -errno with err
 * set when a ceiling or an ops call failed fatally: then *out is NULL and nothing is written. */
int ftbw_run(const struct ftbw_config *c, struct ftbw_env *env, const struct ftbw_ops *ops,
	     const struct ftreport *rep, json_t **out, char *err, size_t errlen);

/* What a run over several GPUs needs: every GPU with its isolated env (cpus near it). */
struct ftbw_host {
	const struct ftcpu_info *cpu;
	struct ftgpu_info *gpus;       /* [ngpus], in index order */
	int ngpus;
	struct ftbw_env *envs;         /* [ngpus]: envs[g].gpu == &gpus[g] */
	const char *sysroot;           /* sysfs root for the topology (NULL: /) */
};

/* The host run (`ftbench bw --gpu all`): for every GPU the isolated run of ftbw_run (the seed's
 * figures), then, when N = c->engines (0: one per GPU) is more than 1, the concurrent phase per
 * item: N engines (ftbw_engine_plan), each on a thread of its own, run every phase at once
 * (gathers on every GPU, CPU MoE on every core set, both overlapped). Each GPU's profile gains
 * per ENTRY a "concurrent" block (its engines' figures, ratio, verdict, fetch fraction) and
 * "recommended_isolated", and at the top "deployment", "concurrent" (N, its engines' core
 * sets) and "topology" (its NUMA node and PCIe relation to each other GPU); the seed's verdict
 * fields carry the deployment's verdict (c->deployment; default concurrent when N > 1, as on a
 * host of several GPUs). out[ngpus] get new references. Returns 0, or -errno with err set (out all NULL). */
int ftbw_run_host(const struct ftbw_config *c, struct ftbw_host *h, const struct ftbw_ops *ops,
		  const struct ftreport *rep, json_t **out, char *err, size_t errlen);

/* Make the seed's verdict fields of profile p (an ftbw_run/ftbw_run_host profile) carry the
 * verdicts of deployment d: every ENTRY's recommended, dtypes and recommended_moe_backend from
 * the entry's "concurrent" block (concurrent) or its "recommended_isolated" (isolated). An
 * entry without the figures asked for keeps what it has and is counted in *missing (may be
 * NULL). Sets p.deployment. Returns 0 or -EINVAL (not a profile). */
int ftbw_apply_deployment(json_t *p, int d, int *missing);

/* One profile ENTRY (new reference) from an item, its measurements and the threshold. */
json_t *ftbw_entry_json(const struct ftbw_item *it, const struct ftbw_meas *m, bool have_gpu,
			double threshold);

/* The readable summary and the csv/md rows of a profile: src/cli/bw_print.h. */
#endif
