/* formats: the expert formats of reference §1 and their banks. A bank is, per layer, one
 * host array [E, per-expert shape]; the GPU slot cache holds one pool [C, shape] per bank.
 * Tables are static; nothing here allocates. */
#ifndef FT_MOE_FORMATS_H
#define FT_MOE_FORMATS_H
#include <stdbool.h>
#include <stddef.h>

#define FTFMT_MAX_BANKS 6

enum ftfmt_id {
	FTFMT_BF16, FTFMT_FP8_BLOCK, FTFMT_Q4_0, FTFMT_NVFP4, FTFMT_NVFP4_MARLIN,
	FTFMT_MXFP4_TRITON, FTFMT_DS_FP4, FTFMT_COUNT
};

/* Element types of bank bytes. */
enum ftfmt_dtype { FTFMT_DT_U8, FTFMT_DT_BF16, FTFMT_DT_FP16, FTFMT_DT_FP8_E4M3, FTFMT_DT_E8M0 };

enum ftfmt_act { FTFMT_ACT_SILU, FTFMT_ACT_GELU, FTFMT_ACT_GELU_TANH, FTFMT_ACT_SWIGLU_OAI };

struct ftfmt_bank_shape {
	const char *name;     /* "gate_up", "down_scale", ... (static) */
	enum ftfmt_dtype dtype;
	int ndim;             /* 1 or 2 (per expert) */
	long dims[2];         /* per-expert shape; dims[1] unused when ndim == 1 */
	size_t expert_bytes;  /* bytes of one expert in this bank */
};

struct ftfmt {
	enum ftfmt_id id;
	const char *name;     /* canonical: "bf16", "fp8_block", ... */
	bool cpu_path;        /* the CPU MoE executor supports it */
};

/* By canonical name or alias ("mxfp4" -> mxfp4_triton, "fp8" -> fp8_block); NULL if unknown. */
const struct ftfmt *ftfmt_lookup(const char *name);
const struct ftfmt *ftfmt_get(enum ftfmt_id id);
/* Canonical name after aliases, or NULL. */
const char *ftfmt_canonical(const char *name);

/* The banks of format f for hidden size H and MoE intermediate size I, in schema order, into
 * out[FTFMT_MAX_BANKS]. Returns the bank count, or -EINVAL when H or I does not divide into the
 * format's blocks (e.g. fp8_block needs H and I multiples of 128). */
int ftfmt_banks(const struct ftfmt *f, long H, long I, struct ftfmt_bank_shape *out);

/* Sum of the banks' bytes for one expert; 0 on bad geometry. */
size_t ftfmt_expert_bytes(const struct ftfmt *f, long H, long I);

const char *ftfmt_dtype_name(enum ftfmt_dtype t);
/* The torch dtype name (without "torch.") an FTW index stores for bank bytes of type t:
 * "uint8", "bfloat16", "float16", "float8_e4m3fn"; e8m0 scales are "uint8" (as the seed
 * stores gpt-oss's). Static string. */
const char *ftfmt_dtype_torch_name(enum ftfmt_dtype t);
/* 1 when an FTW index's dtype string fits bank bytes of type t: the torch name, another torch
 * name of the same bytes (fp8/e8m0 scales stored as "uint8", e8m0 as "float8_e8m0fnu"), or the
 * name ftbench wrote before it used torch's names (ftfmt_dtype_name). Else 0. */
int ftfmt_dtype_accepts(enum ftfmt_dtype t, const char *name);
const char *ftfmt_act_name(enum ftfmt_act a);
int ftfmt_act_lookup(const char *name, enum ftfmt_act *out); /* 0 or -EINVAL */

/* Comma-separated list of canonical names (static). */
const char *ftfmt_all_names(void);
#endif
