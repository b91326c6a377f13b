/* expert_gemv (GPU): the MoE expert compute of a decode step for the experts resident in the
 * GPU slot cache (the GPU side of `ftbench replay`; reference §6 for the semantics, §1 for the
 * bank layouts).
 *
 * For every token b < B and route r < topk with slot = slots[b * topk + r] >= 0:
 *     h = act(gate . x[b]) * (up . x[b])        gate rows [0, I), up rows [I, 2I) of gate_up
 *     y[b] += w[b * topk + r] * (down . h)
 * Routes with slot -1 are skipped (the CPU computes them). y [B, H] fp32 is WRITTEN WHOLE, not
 * accumulated into: a token without a GPU route gets zeros; the caller adds the CPU executor's
 * output (ftcpumoe_forward also writes its out whole) where a token has routes on both sides.
 * x [B, H] fp32, w [B, topk] fp32, slots [B, topk] int32 (expert slots, as ftsc_dev_ensure
 * rewrites the ids in place): all device pointers.
 *
 * Formats: bf16, nvfp4, ds_fp4 (banks exactly as moe/formats ftfmt_banks, each held in one slot
 * pool [C, bytes of one expert], the pools ftmissing_bank.pool points at). Activations: silu,
 * gelu, gelu_tanh, swiglu_oai (with swiglu_limit), as ftmoe_act (src/moe/act.h).
 *
 * Numerics: FP32 accumulation on the tensor cores (mma.sync m16n8k16). The weights enter the
 * products exactly (bf16 as stored; 4-bit codes as f16 e2m1 values, their block scales applied
 * to the FP32 block sums, nvfp4's per-row global to the row sum). x and h enter as two 16-bit
 * halves, hi + lo (bf16 for bf16 weights; f16 for the 4-bit formats, each 32 elements scaled by
 * a power of two from their largest magnitude: block floating point), about 16 significant bits: the results match
 * an FP32 executor to ~1e-4 of a row's magnitude (tests/gpu/test_expert_gemv.c states the bound).
 * e8m0 scales of 2^114 and above (byte >= 241) become inf; byte 255 (NaN) too.
 *
 * Launches: two kernels on stream s, gate_up+activation then down; with e->pdl (set by
 * ftgemv_init for bf16 on sm_90+, where it measured faster) both are programmatic dependent
 * launches: each waits for the stream's previous kernel before its first dependent read, and
 * the down kernel's blocks start while the gate_up kernel ends, their first expert rows loading
 * meanwhile. The down kernel writes each route's rows to the scratch; the last block of a row
 * group adds the routes up in route order: the sums are deterministic (bit-identical calls).
 * Calls of B <= e->fused_b tokens (ftgemv_init: 1 for the 4-bit formats, where it measured
 * 1.5-2 % faster, 0 for bf16) run one cooperative kernel instead, each block taking gate_up
 * blocks, then down blocks after a grid barrier, with the same arithmetic: the same bits.
 * No host synchronisation, no allocation: a call can be captured in a CUDA graph. Scratch: ftgemv_scratch_bytes (h as staged).
 * Launchers return the launch's cudaError_t (cudaErrorInvalidValue for bad arguments). */
#ifndef FT_KERNELS_EXPERT_GEMV_H
#define FT_KERNELS_EXPERT_GEMV_H
#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "moe/formats.h" /* C declarations, no guards of their own */

#define FTGEMV_MAX_TOPK 16 /* = FTCPUMOE_MAX_TOPK */

struct ftgemv_experts {
	/* set by the caller */
	enum ftfmt_id fmt;            /* FTFMT_BF16, FTFMT_NVFP4 or FTFMT_DS_FP4 */
	long H, I;                    /* hidden and MoE intermediate size */
	int slots;                    /* C: experts each pool holds */
	enum ftfmt_act act;
	float swiglu_limit;           /* FTFMT_ACT_SWIGLU_OAI clamp (gpt-oss: 7) */
	void *pool[FTFMT_MAX_BANKS];  /* device slot pools [C, expert bytes of the bank], schema order */
	/* set by ftgemv_init */
	int nbanks;
	size_t bank_bytes[FTFMT_MAX_BANKS]; /* bytes of one expert in each bank */
	int pdl;                      /* 1: programmatic dependent launches (sm_90+); may be changed */
	int fused_b;                  /* calls of B <= fused_b tokens run the fused kernel (needs
	                               * fz_blocks > 0; pdl does not apply to them); may be changed */
	int fz_blocks;                /* blocks of the fused kernel the device holds at once (0: no
	                               * cooperative launches); may be lowered (a smaller grid) */
	size_t dn_smem_max;           /* dynamic shared memory of a down block */
};

/* Check the geometry and pools of e and fill its ftgemv_init fields; sets the kernels' shared
 * memory limits (call it once per device before the first ftgemv_moe, outside a graph capture).
 * cudaErrorInvalidValue for: a format other than the three, H or I not a multiple of 32 (bf16)
 * or 128 (nvfp4, ds_fp4), slots < 1, a NULL pool, an unknown activation. */
cudaError_t ftgemv_init(struct ftgemv_experts *e);

/* Scratch bytes ftgemv_moe needs for B tokens of topk routes (16-byte aligned). */
size_t ftgemv_scratch_bytes(const struct ftgemv_experts *e, int B, int topk);

/* y[B, H] = the GPU routes' expert outputs (see above). 1 <= B <= 65535, 1 <= topk <=
 * FTGEMV_MAX_TOPK; slots must be -1 or < e->slots (others are skipped as -1: no check on the
 * device). d_scratch: ftgemv_scratch_bytes(e, B, topk) bytes, 16-byte aligned, contents
 * irrelevant (each call sets what it reads); calls that may overlap (other streams) need their
 * own scratch. */
cudaError_t ftgemv_moe(const struct ftgemv_experts *e, int B, int topk, const int32_t *d_slots, const float *d_w,
		       const float *d_x, float *d_y, void *d_scratch, cudaStream_t s);

#ifdef __cplusplus
}
#endif
#endif
