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
 * ISA tiers (chosen at create time or by ftcmoe_set_isa, never per call):
 *   scalar      portable C, the reference the others are tested against
 *   avx2        AVX2 + FMA + F16C, FP32 activations
 *   avx512      AVX-512 F/BW/VL, FP32 activations (W16A32 / W4A32)
 *   avx512vnni  avx512 + VNNI: 4-bit formats as W4A8, activations int8 per 16-element block
 *               (q4_0 and mxfp4_triton: per 32, their block); bf16 as avx512
 *   avx512bf16  avx512 + AVX512_BF16: bf16 weights and mxfp4_triton with bf16 activations
 *               (vdpbf16ps); nvfp4, ds_fp4, q4_0 as avx512vnni when the CPU has VNNI, else avx512
 *   amx         avx512bf16 + AMX-TILE/AMX-BF16 (and the OS's leave): bf16 weights on the tiles
 *               (TDPBF16PS, 16 rows x 16 tokens per tile) where an expert has >= 4 tokens of the
 *               batch, the avx512bf16 kernel below that; the other formats as avx512bf16
 * `auto` (ftcmoe_isa_best) picks, by measurement on a 16-core Xeon (bench/RESULTS.md):
 * avx512bf16 for bf16, avx512vnni (W4A8) for nvfp4/ds_fp4/q4_0/mxfp4_triton, each falling
 * back to the next tier the CPU has. `auto` does not pick amx (not measured ahead of avx512bf16
 * yet; `--isa all` and the batch sweep compare them). FREETOKEN_CPU_MOE_ISA forces a tier for
 * FTCMOE_ISA_AUTO.
 *
 * Work split: a dynamic schedule (default). A step is a list of work items of 128-512 KiB of
 * weights in pass 1 (at least three per worker in a batch-1 step) and 128 KiB in pass 2
 * (FREETOKEN_CPU_MOE_ITEM_KB for A/B runs, _ITEM2_KB for pass 2 apart): every routed
 * expert's gate/up rows, then its down rows, claimed in order from one atomic counter, so
 * workers stay close together in memory and a worker the memory system serves slower simply
 * takes fewer items; pass 2 of an expert
 * waits only for that expert's pass 1, and the step has one barrier (before the per-worker
 * partial outputs are added up; each worker zeroes and adds only the parts of its partial
 * output that it wrote). On the H200 host this took bf16 from 94 to 123 GB/s at batch 1
 * against the static split below (bench/RESULTS.md, "CPU MoE"). The last expert's pass-2
 * items are 4x smaller (FREETOKEN_CPU_MOE_TAIL_DIV), so the workers finish close together.
 * mxfp4_triton's transposed banks are split along K (while a call's routes fit one round of
 * partials): pass-1 items of 512 KiB of bank rows added into per-worker partials, pass-2 items
 * of 128 KiB (FREETOKEN_CPU_MOE_ITEM_KB, _ITEM2_KB) that each compute the slice of h they read
 * from those partials. FREETOKEN_CPU_MOE_TRACE=1 times the parts of every dynamic step
 * (ftcmoe_trace; `ftbench cpu-moe` prints it).
 * Pools of fewer than 8 workers keep the static split (on a 2-core box it was 5-20 points
 * ahead). FREETOKEN_CPU_MOE_SCHED=static|dynamic (read at create) forces either. The static
 * split: the rows of all routed experts of a pass, laid end to end, cut into one contiguous
 * range per worker (FREETOKEN_CPU_MOE_SPLIT=rows: every expert's rows cut per worker), and for
 * mxfp4_triton one K range per worker, one barrier per round of up to max(16, max_batch)
 * routes. At batch 1 each worker prepares its own activations
 * (two barriers per step instead of four); FREETOKEN_CPU_MOE_LEAN=0 turns that off. The pool's
 * spin waits use PAUSE unless FREETOKEN_CPU_MOE_SPIN=busy (A/B; measured no different).
 * FREETOKEN_CPU_MOE_STREAMS=1|2 (read at create, process-wide) forces one or two interleaved
 * weight streams per kernel call; unset, bf16 (bf16dp) walks two, the W4A8 kernels one (H200
 * host A/B: +2-3 points of the read ceiling on bf16, -3..-7 on mxfp4, even on q4_0).
 * FREETOKEN_CPU_MOE_PF_DIST / _MX_PF_DIST set the kernels' software prefetch distance and
 * FREETOKEN_CPU_MOE_PF_FAR=bytes that of the row kernels' second prefetch, into L2 (8 KiB; 0:
 * none); FREETOKEN_CPU_MOE_ROWBLK=1|4 forces one row or blocks of four rows per W4A8 kernel
 * step at batch 1 (default: four for q4_0, one for nvfp4 and ds_fp4; kern.h). */
#ifndef FT_MOE_CPU_CPUMOE_H
#define FT_MOE_CPU_CPUMOE_H
#include <stddef.h>
#include <stdint.h>

#include "hw/cpu.h"
#include "moe/cpu/pool.h"
#include "moe/formats.h"

enum ftcmoe_isa {
	FTCMOE_ISA_AUTO = -1,
	FTCMOE_ISA_SCALAR = 0,
	FTCMOE_ISA_AVX2,
	FTCMOE_ISA_AVX512,
	FTCMOE_ISA_AVX512VNNI,
	FTCMOE_ISA_AVX512BF16,
	FTCMOE_ISA_AMX,
	FTCMOE_ISA_COUNT
};

#define FTCMOE_MAX_BATCH 32
#define FTCMOE_MAX_TOPK 16

/* "scalar", "avx2", "avx512", "avx512vnni", "avx512bf16"; "auto" for FTCMOE_ISA_AUTO. */
const char *ftcmoe_isa_name(enum ftcmoe_isa isa);
/* By name ("auto" included; "avx512f" and "avx512_bf16" accepted). 0 or -EINVAL. */
int ftcmoe_isa_lookup(const char *name, enum ftcmoe_isa *out);
/* Whether this CPU (ftcpu_info.isa bits) can run a tier. */
int ftcmoe_isa_supported(enum ftcmoe_isa isa, unsigned cpu_isa);
/* Bit mask (1 << tier) of the tiers this CPU can run. */
unsigned ftcmoe_isa_mask(unsigned cpu_isa);
/* The tier `auto` picks for format f on this CPU (the fastest measured; see RESULTS.md). */
enum ftcmoe_isa ftcmoe_isa_best(enum ftfmt_id f, unsigned cpu_isa);
/* Resolve a request: AUTO takes FREETOKEN_CPU_MOE_ISA when set, else ftcmoe_isa_best. Returns
 * 0 and *out, -EINVAL for an unknown name in the variable, or -ENOTSUP when the tier asked for
 * (by argument or variable) needs an ISA this CPU lacks. */
int ftcmoe_isa_resolve(enum ftcmoe_isa want, enum ftfmt_id f, unsigned cpu_isa, enum ftcmoe_isa *out);
/* The kernel a tier runs for format f on this CPU: "w16a16-bf16dp", "w4a8-vnni",
 * "w4a32-avx512", "w4a16-bf16dp", ... (static string). */
const char *ftcmoe_kernel_name(enum ftcmoe_isa isa, enum ftfmt_id f, unsigned cpu_isa);

struct ftcmoe_cfg {
	enum ftfmt_id format;
	long hidden, inter;     /* H, I */
	int experts;            /* E per layer */
	int layers;             /* >= 1 */
	/* banks[layer * nbanks + i]: host pointer of bank i (schema order of ftfmt_banks) of that
	 * layer, [E, per-expert shape]; borrowed, must outlive the executor. */
	const void *const *banks;
	enum ftact act;
	float swiglu_limit;     /* FTACT_SWIGLU_OAI clamp (gpt-oss: 7); ignored otherwise */
	int max_batch;          /* 1..FTCMOE_MAX_BATCH */
	int max_topk;           /* 1..FTCMOE_MAX_TOPK */
	enum ftcmoe_isa isa;    /* FTCMOE_ISA_AUTO or a tier */
	struct ftpool *pool;    /* borrowed; its driver thread calls ftcmoe_forward */
	const struct ftcpu_info *cpu; /* borrowed during create only */
};

struct ftcmoe;

/* The FREETOKEN_CPU_MOE_* settings above (the value of _ISA is ftcmoe_isa_resolve's): 0, or
 * -EINVAL with why = "FREETOKEN_CPU_MOE_X='v': expected ..." for the first bad value, or
 * "FREETOKEN_CPU_MOE_X: no such setting ..." for a name this build does not read. Unset
 * variables are fine. ftcmoe_create fails with -EINVAL on the same; CLIs call this first to
 * say which. */
int ftcmoe_env_check(char *why, size_t whylen);

/* Create an executor; all scratch is allocated here. Returns 0 and *out (ftcmoe_free), or
 * -EINVAL (bad geometry, format without a CPU path, NULL banks, a bad FREETOKEN_CPU_MOE_*
 * value), -ENOTSUP (tier not on this
 * CPU), -ENOMEM. */
int ftcmoe_create(const struct ftcmoe_cfg *cfg, struct ftcmoe **out);
void ftcmoe_free(struct ftcmoe *x); /* accepts NULL */

/* Switch the tier (resolved like create). 0, -EINVAL or -ENOTSUP (tier unchanged then). */
int ftcmoe_set_isa(struct ftcmoe *x, enum ftcmoe_isa isa);
enum ftcmoe_isa ftcmoe_isa(const struct ftcmoe *x);

/* One layer: x [B, H] fp32, ids [B, topk] (-1 skipped; others must be < E), weights [B, topk],
 * out [B, H] fp32 (written whole; a token with no live route gets zeros). B <= max_batch,
 * topk <= max_topk. No allocation. Returns 0 or -EINVAL (bad layer/B/topk/id). */
int ftcmoe_forward(struct ftcmoe *x, int layer, int B, int topk, const float *xin,
		   const int32_t *ids, const float *weights, float *out);

/* FREETOKEN_CPU_MOE_TRACE=1 (read at create): where the dynamic schedule's steps spend their
 * time, per worker and step, averaged (us). start: from the driver starting the run to the
 * worker starting its items (wake-up, activation prep); items: in work items, less wait:
 * spinning for a group's pass 1; idle: from the worker's last item to leaving the step's
 * barrier; after: the reduction after it. last: from the start to the last worker being done;
 * step: the driver's whole call. Steps of the static split are not traced. */
struct ftcmoe_trace {
	long steps;
	double step_us, last_us, start_us, items_us, wait_us, idle_us, after_us, items_per_worker;
};
/* Fill *out (may be NULL) and, with reset, start over. -ENODATA when tracing is off. */
int ftcmoe_trace(struct ftcmoe *x, struct ftcmoe_trace *out, int reset);
#endif
