/* cpumoe: the CPU MoE executor of reference §6 — the expert GEMVs that "hybrid" runs on the CPU.
 *
 * For one MoE layer and a batch of 1..max_batch tokens: pass 1, for every token and route, dot
 * the gate and up rows of the routed expert with x, apply the activation and keep the
 * intermediate h; pass 2, out[b] = sum over routes of route_weight * (down . h (+ down_bias)).
 * Weights are read in place from the host banks (never copied); accumulation is FP32; ids of -1
 * are skipped (routes computed elsewhere). Work is split so each pool worker streams its own
 * contiguous rows of every routed expert.
 *
 * Formats: bf16, nvfp4, mxfp4_triton, ds_fp4, q4_0 (ftfmt cpu_path). Bank layouts are those of
 * moe/formats (reference §1). Two layout choices reference §1 leaves open:
 *  - gate/up order: rows [0, I) are gate and [I, 2I) are up for the row-major formats; for
 *    mxfp4_triton (gpt-oss checkpoints) the 2I output columns interleave gate (even) and up (odd).
 *  - mxfp4_triton gate_up_blocks row k2 holds elements 2*k2 (low nibble) and 2*k2+1 (high).
 *
 * ISA tiers (chosen at create time or by ftcpumoe_set_isa, never per call):
 *   scalar      portable C, the reference the others are tested against
 *   avx2        AVX2 + FMA + F16C, FP32 activations
 *   avx512      AVX-512 F/BW/VL, FP32 activations (W16A32 / W4A32)
 *   avx512vnni  avx512 + VNNI: 4-bit formats as W4A8, activations int8 per 16-element block
 *               (q4_0 and mxfp4_triton: per 32, their block); bf16 as avx512
 *   avx512bf16  avx512 + AVX512_BF16: bf16 weights and mxfp4_triton with bf16 activations
 *               (vdpbf16ps); nvfp4, ds_fp4, q4_0 as avx512vnni when the CPU has VNNI, else avx512
 *   amx         avx512bf16 + AMX-TILE/AMX-BF16 (and the OS's leave): bf16 weights on the tiles
 *               (TDPBF16PS, 16 rows x 16 tokens per tile) where an expert has >= 4 tokens of the
 *               batch, the avx512bf16 kernel below that; with AMX-INT8 and VNNI, nvfp4, ds_fp4,
 *               q4_0 and mxfp4_triton as W4A8 on int8 tiles (TDPBSSD per scale block) where an
 *               expert has >= tune.amx_min_nb tokens, the avx512vnni kernels below that (the
 *               same activations); the other formats (or without AMX-INT8) as avx512bf16
 * `auto` (ftcpumoe_isa_best) picks avx512bf16 for bf16 and avx512vnni (W4A8) for nvfp4, ds_fp4,
 * q4_0 and mxfp4_triton, each falling back to the next tier the CPU has (the order measured
 * fastest: bench/RESULTS.md §4, "CPU MoE executor"); never amx (its int8 tiles win only from
 * 8-12 tokens of an expert, and batches up to 32 give 1-4: a tie at every batch measured on the
 * H200 box). The executor's tune.isa says what FTCPUMOE_ISA_AUTO means for it.
 *
 * Work splits (schedules), one per call, chosen from the format, the kernel and tune.sched:
 *  - dynamic (row-major formats; default from 8 pool workers): a step is a list of work items
 *    (every routed expert's gate/up rows, then its down rows) claimed in order from one atomic
 *    counter; pass 2 of an expert waits only for that expert's pass 1; per-worker partial
 *    outputs, added up after the step's one barrier.
 *  - dynamic K split (mxfp4_triton with a K-split kernel, while a call's routes fit one round of
 *    partials): items of bank rows added into per-worker partials; each pass-2 item computes
 *    the slice of h it reads from them.
 *  - static flat (row-major formats below 8 workers): the rows of all routed experts of a pass,
 *    laid end to end, cut into one contiguous range per worker.
 *  - static K split (mxfp4_triton otherwise): one K range per worker, one barrier per round of up
 *    to max(16, max_batch) routes.
 *  - static rows (mxfp4_triton on tiers without a K-split kernel): every expert's output columns
 *    cut per worker.
 * At batch 1 each worker prepares its own activations (fewer barriers). */
#ifndef FT_MOE_CPU_CPUMOE_H
#define FT_MOE_CPU_CPUMOE_H
#include <stddef.h>
#include <stdint.h>

#include "hw/cpu.h"
#include "moe/cpu/pool.h"
#include "moe/formats.h"

enum ftcpumoe_isa {
	FTCPUMOE_ISA_AUTO = -1,
	FTCPUMOE_ISA_SCALAR = 0,
	FTCPUMOE_ISA_AVX2,
	FTCPUMOE_ISA_AVX512,
	FTCPUMOE_ISA_AVX512VNNI,
	FTCPUMOE_ISA_AVX512BF16,
	FTCPUMOE_ISA_AMX,
	FTCPUMOE_ISA_COUNT
};

#define FTCPUMOE_MAX_BATCH 32
#define FTCPUMOE_MAX_TOPK 16

/* "scalar", "avx2", "avx512", "avx512vnni", "avx512bf16"; "auto" for FTCPUMOE_ISA_AUTO. */
const char *ftcpumoe_isa_name(enum ftcpumoe_isa isa);
/* By name ("auto" included; "avx512f" and "avx512_bf16" accepted). 0 or -EINVAL. */
int ftcpumoe_isa_lookup(const char *name, enum ftcpumoe_isa *out);
/* Whether this CPU (ftcpu_info.isa bits) can run a tier. */
int ftcpumoe_isa_supported(enum ftcpumoe_isa isa, unsigned cpu_isa);
/* Bit mask (1 << tier) of the tiers this CPU can run. */
unsigned ftcpumoe_isa_mask(unsigned cpu_isa);
/* The tier `auto` picks for format f on this CPU (the fastest measured; see RESULTS.md). */
enum ftcpumoe_isa ftcpumoe_isa_best(enum ftfmt_id f, unsigned cpu_isa);
/* Resolve a request: AUTO is ftcpumoe_isa_best. Returns 0 and *out, -EINVAL for a value out of
 * the enum, or -ENOTSUP when the tier needs an ISA this CPU lacks. */
int ftcpumoe_isa_resolve(enum ftcpumoe_isa want, enum ftfmt_id f, unsigned cpu_isa, enum ftcpumoe_isa *out);
/* The kernel a tier runs for format f on this CPU: "w16a16-bf16dp", "w4a8-vnni",
 * "w4a32-avx512", "w4a16-bf16dp", ... (static string). */
const char *ftcpumoe_kernel_name(enum ftcpumoe_isa isa, enum ftfmt_id f, unsigned cpu_isa);

/* Tuning knobs: fields of the executor's config (ftcpumoe_cfg.tune), one row each in
 * ftcpumoe_knobs (name, type, range, default, help). Every field is a long; WORD knobs hold the
 * index of their value in the row's word list. The CLI sets them with `--tune key=value`
 * (ftcpumoe_tune_set); what each was measured to do is in bench/RESULTS.md. */
enum ftcpumoe_sched { FTCPUMOE_SCHED_AUTO = 0, FTCPUMOE_SCHED_STATIC = 1, FTCPUMOE_SCHED_DYNAMIC = 2 };
struct ftcpumoe_tune {
	long isa;        /* enum ftcpumoe_isa: what FTCPUMOE_ISA_AUTO resolves to (AUTO: the best) */
	long sched;      /* enum ftcpumoe_sched */
	long item_kb;    /* dynamic pass-1 item KiB, 16..65536; 0: by the step's size */
	long item2_kb;   /* dynamic pass-2 item KiB, 16..65536; 0: item_kb if set, else 128 (mxfp4 256) */
	long tail_div;   /* 1..64: the last expert's pass-2 items this many times smaller */
	long pf_dist;    /* row kernels' prefetch distance, bytes (0: none) */
	long pf_far;     /* row kernels' L2 prefetch distance, bytes (0: none) */
	long mx_pf_dist; /* mxfp4 K split's row prefetch distance, 64..8192 bytes */
	long pf_scales;  /* 1: the W4A8 kernels prefetch their scale streams (0: not, as before) */
	long mx_vbmi;    /* 1: the mxfp4 K split decodes with VBMI where the CPU has it (0: shuffles) */
	long trace;      /* 1: time the dynamic steps (ftcpumoe_trace) */
	long amx_min_nb; /* amx tier, 4-bit formats: tokens of an expert from which the tiles run */
};

enum ftcpumoe_knob_type {
	FTCPUMOE_KNOB_INT,  /* an integer in [lo, hi]; words, when set, names the value 0 ("auto") */
	FTCPUMOE_KNOB_WORD, /* one of words ("a|b|c"); the field holds its index */
	FTCPUMOE_KNOB_ISA,  /* a tier name or auto (ftcpumoe_isa_lookup); the field holds the enum */
};
struct ftcpumoe_knob {
	const char *name;       /* the key of --tune key=value */
	enum ftcpumoe_knob_type type;
	long lo, hi;
	const char *words;
	long def;               /* the field's default */
	size_t off;             /* offsetof(struct ftcpumoe_tune, field) */
	const char *help;       /* one line */
};
extern const struct ftcpumoe_knob ftcpumoe_knobs[];
extern const int ftcpumoe_nknobs;

/* Every field its default. */
void ftcpumoe_tune_defaults(struct ftcpumoe_tune *t);
/* The row named name[0..len), or NULL. */
const struct ftcpumoe_knob *ftcpumoe_knob_find(const char *name, size_t len);
/* "key=value": 0 with the field set, or -EINVAL (t unchanged) with why naming what was wrong:
 * "'x': expected key=value (keys: ...)", "unknown key 'k' (keys: ...)" or
 * "k='v': expected <the knob's range>". */
int ftcpumoe_tune_set(struct ftcpumoe_tune *t, const char *kv, char *why, size_t whylen);
/* Every field within its row's range: 0, or -EINVAL with why ("k=v: expected ..."). */
int ftcpumoe_tune_check(const struct ftcpumoe_tune *t, char *why, size_t whylen);
/* The row's accepted values ("an integer from 0 to 65536", "one of a|b"), and value v as the
 * text --tune takes; snprintf's returns. */
int ftcpumoe_knob_range(const struct ftcpumoe_knob *k, char *buf, size_t n);
int ftcpumoe_knob_value(const struct ftcpumoe_knob *k, long v, char *buf, size_t n);

struct ftcpumoe_cfg {
	enum ftfmt_id format;
	long hidden, inter;     /* H, I */
	int experts;            /* E per layer */
	int layers;             /* >= 1 */
	/* banks[layer * nbanks + i]: host pointer of bank i (schema order of ftfmt_banks) of that
	 * layer, [E, per-expert shape]; borrowed, must outlive the executor. */
	const void *const *banks;
	enum ftfmt_act act;
	float swiglu_limit;     /* FTFMT_ACT_SWIGLU_OAI clamp (gpt-oss: 7); ignored otherwise */
	int max_batch;          /* 1..FTCPUMOE_MAX_BATCH */
	int max_topk;           /* 1..FTCPUMOE_MAX_TOPK */
	enum ftcpumoe_isa isa;    /* FTCPUMOE_ISA_AUTO or a tier */
	struct ftpool *pool;    /* borrowed; its driver thread calls ftcpumoe_forward */
	const struct ftcpu_info *cpu; /* borrowed during create only */
	/* copied at create; NULL: ftcpumoe_tune_defaults. Each executor keeps its own (two
	 * executors of one process may run with different kernel knobs). */
	const struct ftcpumoe_tune *tune;
};

struct ftcpumoe;

/* Create an executor; all scratch is allocated here. Returns 0 and *out (ftcpumoe_free), or
 * -EINVAL (bad geometry, format without a CPU path, NULL banks, a tune value out of its range),
 * -ENOTSUP (tier, or tune.isa for FTCPUMOE_ISA_AUTO, not on this CPU), -ENOMEM. */
int ftcpumoe_create(const struct ftcpumoe_cfg *cfg, struct ftcpumoe **out);
void ftcpumoe_free(struct ftcpumoe *x); /* accepts NULL */

/* Switch the tier (AUTO: tune.isa, else the best). 0, -EINVAL or -ENOTSUP (tier unchanged
 * then). */
int ftcpumoe_set_isa(struct ftcpumoe *x, enum ftcpumoe_isa isa);
enum ftcpumoe_isa ftcpumoe_isa(const struct ftcpumoe *x);
/* The knobs the executor was created with (borrowed, lives as long as x). */
const struct ftcpumoe_tune *ftcpumoe_tune_of(const struct ftcpumoe *x);

/* One layer: x [B, H] fp32, ids [B, topk] (-1 skipped; others must be < E), weights [B, topk],
 * out [B, H] fp32 (written whole; a token with no live route gets zeros). B <= max_batch,
 * topk <= max_topk. No allocation. Returns 0 or -EINVAL (bad layer/B/topk/id). */
int ftcpumoe_forward(struct ftcpumoe *x, int layer, int B, int topk, const float *xin,
		   const int32_t *ids, const float *weights, float *out);

/* tune.trace = 1: where the dynamic schedules' steps spend their time, per worker and step,
 * averaged (us). start: from the driver starting the run to the worker starting its items
 * (wake-up, activation prep; prep: of it, a batch-1 step's x prepared by each worker); items:
 * in work items, less wait: spinning for a group's pass 1; idle: from the worker's last item to
 * leaving the step's barrier (bar: of it, after the last worker reached the barrier); after:
 * the reduction after it. last: from the start to the last worker being done; step: the
 * driver's whole call. med: the same figures' medians over the steps (the first 4096 since the
 * reset), each step's figure the mean over its workers: a slow step (a worker woken from its
 * sleep) moves the means, not these. Steps of the static splits are not traced. */
struct ftcpumoe_trace_fig {
	double step_us, last_us, start_us, prep_us, items_us, wait_us, idle_us, bar_us, after_us;
};
struct ftcpumoe_trace {
	long steps;
	double step_us, last_us, start_us, items_us, wait_us, idle_us, after_us, items_per_worker;
	double prep_us, bar_us;
	struct ftcpumoe_trace_fig med;
};
/* Fill *out (may be NULL) and, with reset, start over. -ENODATA when tracing is off. */
int ftcpumoe_trace(struct ftcpumoe *x, struct ftcpumoe_trace *out, int reset);
#endif
