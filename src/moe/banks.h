/* banks: expert banks in host memory, and the discovery of a checkpoint's expert tensors.
 *
 * A bank (reference §1) is, per MoE layer, one array [E, per-expert shape] in the schema of the
 * format (moe/formats.h). Here each bank is one anonymous mapping; layer l of bank b starts at
 * a 4096-aligned address (stride = layer bytes rounded up to 4096, the slack zeroed), so O_DIRECT
 * reads can land in it.
 *
 * Discovery maps tensor names of the checkpoint to (bank, layer, expert) pieces:
 *   Qwen3-MoE / Qwen2-MoE / DeepSeek-V3  <p>layers.<l>.mlp.experts.<e>.{gate,up,down}_proj.weight
 *   Mixtral                             <p>layers.<l>.block_sparse_moe.experts.<e>.{w1,w3,w2}.weight
 *   packed 3-D (bf16)                   <p>layers.<l>.mlp.experts.{gate_up_proj [E,2I,H] |
 *                                       gate_proj, up_proj [E,I,H]} and down_proj [E,H,I] (".weight" optional)
 *   gpt-oss bf16 (transformers)         <p>layers.<l>.mlp.experts.{gate_up_proj [E,H,2I], down_proj [E,I,H],
 *                                       gate_up_proj_bias [E,2I], down_proj_bias [E,H]}
 *   gpt-oss mxfp4 (released)            <p>layers.<l>.mlp.experts.{gate_up,down}_proj_{blocks,scales,bias}
 * DeepSeek-V3's dense first layers (mlp.{gate,up,down}_proj) and shared experts
 * (mlp.shared_experts.*, Qwen2's mlp.shared_expert.*) are not banks: they are never matched.
 * Supported: bf16 experts (banks bf16, gate rows then up rows) and gpt-oss mxfp4
 * (-> mxfp4_triton: blocks/scales transposed to [K/2, N] / [K/32, N], bias as stored; the
 * output rows keep the checkpoint's order, i.e. gpt-oss's interleaved gate/up rows of gate_up,
 * which is the row order mxfp4_triton's kernels read). gpt-oss bf16 -> bf16 banks: gate_up_proj
 * [H, 2I] per expert is transposed and de-interleaved (its even columns are gate, the odd ones
 * up: bank row r < I is column 2r, row I + r is column 2r + 1), down_proj [I, H] transposed to
 * [H, I]; the bf16 format has no bias bank, so the two bias tensors are not banks (checked,
 * then left to the dense weights, as stored). gpt-oss is told by config.json's model_type
 * "gpt_oss", the bias tensors, or a gate_up_proj shaped [E, H, 2I] with H != 2I.
 * Refused with a reason: other expert dtypes (F16, F32, F8 with weight_scale_inv, ...),
 * quantized expert layouts (qweight, weight_packed, ...), missing or mis-shaped experts.
 *
 * Functions return 0 or -errno (-EINVAL for an unusable checkpoint, -ENOTSUP for a refused
 * format) and put a one-line reason in err; none logs. */
#ifndef FT_MOE_BANKS_H
#define FT_MOE_BANKS_H
#include <stddef.h>
#include <stdint.h>

#include "moe/formats.h"
#include "moe/safetensors.h"

#define FTBANKS_ALIGN 4096
#define FTBANKS_MAX_LAYERS 4096

/* Geometry from config.json (text_config when nested). Missing numbers are 0. */
struct ftbanks_geom {
	char model_type[64];
	long hidden, inter, experts, top_k, layers, first_dense;
};
int ftbanks_read_config(const char *dir, struct ftbanks_geom *g, char *err, size_t errlen);

/* Expert banks in memory. */
struct ftbanks {
	const struct ftfmt *fmt;
	long H, I, E, L;              /* L = number of MoE layers */
	int *layer_ids;               /* [L]: model layer index of each MoE layer */
	int nbanks;
	struct ftfmt_bank_shape shape[FTFMT_MAX_BANKS];
	size_t layer_bytes[FTFMT_MAX_BANKS];  /* E * expert_bytes */
	size_t layer_stride[FTFMT_MAX_BANKS]; /* layer_bytes rounded up to FTBANKS_ALIGN */
	uint8_t *base[FTFMT_MAX_BANKS];       /* L * layer_stride bytes each */
};

/* Allocate zeroed banks for format f and geometry (layer_ids copied). New *out. */
int ftbanks_alloc(const struct ftfmt *f, long H, long I, long E, long L, const int *layer_ids,
		  struct ftbanks **out);
void ftbanks_free(struct ftbanks *b);  /* accepts NULL */
static inline uint8_t *ftbanks_layer(const struct ftbanks *b, int bank, long layer)
{
	return b->base[bank] + (size_t)layer * b->layer_stride[bank];
}
/* Sum of the banks' layer bytes (without padding). */
size_t ftbanks_bytes(const struct ftbanks *b);
/* Bank index by schema name, or -1. */
int ftbanks_find(const struct ftbanks *b, const char *name);

/* One contiguous run of file bytes that lands in one bank layer. transpose: the source is a
 * row-major [rows][cols] matrix of esz-byte elements that goes to [cols][rows] at dst_off;
 * with deinterleave, source column c goes to row c/2 when c is even, cols/2 + c/2 when odd. */
struct ftbanks_piece {
	int file;
	uint64_t src_off, len;
	int bank, layer;              /* layer: index into layer_ids */
	uint64_t dst_off;
	int transpose;
	uint32_t rows, cols;
	uint8_t esz, deinterleave;    /* transpose only: element bytes (1 or 2), gate/up split */
	const struct ftst_tensor *t;  /* where it came from (borrowed from the model) */
};

struct ftbanks_plan {
	const struct ftfmt *fmt;
	long H, I, E, L;
	int *layer_ids;
	size_t npieces;
	struct ftbanks_piece *pieces;       /* sorted by (file, src_off) */
	const struct ftst_model *model; /* borrowed */
	const char *scheme;           /* "per-expert", "mixtral", "packed", "gpt-oss-bf16", "gpt-oss-mxfp4" (static) */
	size_t nused;
	const struct ftst_tensor **used; /* expert tensors consumed, sorted by address */
};

/* Discover the expert tensors of model m with geometry g (hidden/inter/experts used to check
 * shapes). New *out; free with ftbanks_plan_free. */
int ftbanks_discover(const struct ftst_model *m, const struct ftbanks_geom *g, struct ftbanks_plan **out,
		     char *err, size_t errlen);
void ftbanks_plan_free(struct ftbanks_plan *p);

/* Is tensor t (by name) consumed by the plan as an expert tensor? */
int ftbanks_plan_uses(const struct ftbanks_plan *p, const struct ftst_tensor *t);

/* Copy n bytes that start rel bytes into piece p's source run, from src, into the bank. */
void ftbanks_piece_copy(const struct ftbanks_piece *p, struct ftbanks *b, uint64_t rel, const uint8_t *src, size_t n);
#endif
