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
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "hw/cpu.h"
#include "hw/gpu.h"
#include "moe/formats.h"
#include "moe/models.h"
#include "util/report.h"
#include "util/stats.h"

#define FTBW_MAX_ITEMS 64
#define FTBW_MAX_MODELS 16
#define FTBW_MAX_ISAS 8
#define FTBW_MAX_BATCHES 8   /* --batch-sweep entries */
#define FTBW_DEFAULT_THRESHOLD 2.0
#define FTBW_SYNTH_BYTES (2ull << 30) /* E_synth = min(E, max(1, 2 GiB / expert_bytes)) */

/* Everything the CLI flags decide. ftbw_config_default fills the reference defaults. */
struct ftbw_config {
	double threshold;        /* hybrid if cpu_moe_gbs > threshold * pcie_gather_gbs (2.0) */
	int cpu_threads;         /* 0: one per physical core */
	int cpu_iters;           /* CPU read-ceiling passes (8) */
	int pcie_mib;            /* linear copy size (256) */
	int pcie_iters;          /* linear copy iterations (30) */
	int kernel_cpu_warmup;   /* CPU MoE warm-up steps (8) */
	int kernel_cpu_iters;    /* CPU MoE timed steps (64) */
	int kernel_pcie_iters;   /* gather timed passes (20) */
	double overlap_s;        /* overlapped run length (2.0); 0 skips the overlap */
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
};

void ftbw_config_default(struct ftbw_config *c);

/* One (workload, format) to measure. */
struct ftbw_item {
	const struct ftmodel *model;   /* geometry (static catalogue entry) */
	const struct ftformat *fmt;
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
};

/* The decision of reference §5 for one entry. cpu_gbs / pcie_gbs <= 0 or NaN: not measured.
 * note gets why when the answer is offload for a reason other than the numbers. */
struct ftbw_decision {
	bool hybrid;
	double ratio;                  /* cpu / pcie; NaN when either is missing */
	char note[256];
};
void ftbw_decide(bool cpu_path, bool have_gpu, double cpu_gbs, const char *cpu_err, double pcie_gbs,
		 const char *pcie_err, double threshold, struct ftbw_decision *d);

/* The largest batch of the sweep up to which every batch's cpu_gbs[i] > threshold * pcie_gbs[i]
 * (batches ascending): 0 when the first fails, -1 when a figure is missing (not measured). */
int ftbw_hybrid_max_batch(int n, const int *batch, const double *cpu_gbs, const double *pcie_gbs,
			  double threshold);

/* Hybrid fetch fraction: with the overlap pair pcie_ov / (pcie_ov + cpu_ov), else pcie / cpu,
 * clamped to [0, 1]. NaN when neither pair is measured. */
double ftbw_fetch_fraction(double cpu_gbs, double pcie_gbs, double cpu_ov_gbs, double pcie_ov_gbs);

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

/* One profile ENTRY (new reference) from an item, its measurements and the threshold. */
json_t *ftbw_entry_json(const struct ftbw_item *it, const struct ftbw_meas *m, bool have_gpu,
			double threshold);

/* A readable summary of a profile (any version-4 profile this tool wrote) on f. */
void ftbw_summary(FILE *f, const json_t *profile);
#endif
