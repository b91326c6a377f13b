/* ckptgen: synthetic MoE checkpoints in the layouts of real ones (safetensors shards, the
 * model.safetensors.index.json of a sharded checkpoint, config.json), for tests and for
 * load benchmarks of any size.
 *
 *   qwen3-moe    model.layers.<l>.mlp.experts.<e>.{gate,up,down}_proj.weight (bf16), mlp.gate
 *   mixtral      model.layers.<l>.block_sparse_moe.experts.<e>.{w1,w3,w2}.weight (bf16)
 *   deepseek-v3  dense first layer (mlp.{gate,up,down}_proj), then mlp.shared_experts.* and
 *                mlp.experts.<e>.* (bf16), mlp.gate.e_score_correction_bias (f32)
 *   gpt-oss      the released layout (alias gpt-oss-mxfp4): packed
 *                mlp.experts.{gate_up,down}_proj_{blocks,scales,bias} (mxfp4 + bf16 bias)
 *   gpt-oss-bf16 as transformers saves a dequantized gpt-oss: mlp.experts.gate_up_proj [E, H, 2I]
 *                (gate/up interleaved along the last dim), gate_up_proj_bias [E, 2I],
 *                down_proj [E, I, H], down_proj_bias [E, H] (bf16), no quantization_config
 * Plus embeddings, attention, norms and lm_head (small). Data is pseudo-random, never zero,
 * finite for float types, generated and written by several threads with pwrite; shards are
 * fdatasync'ed. Within a shard tensors are ordered like the safetensors library does
 * (by name), so expert e=10 precedes e=2 on disk, as in real files.
 * Returns 0 or -errno with a reason in err; never logs. */
#ifndef FT_MOE_CKPTGEN_H
#define FT_MOE_CKPTGEN_H
#include <stddef.h>
#include <stdint.h>

#include "util/report.h"

#define FTCKPT_DEFAULT_SHARD (4ULL << 30)

struct ftckpt_opts {
	const char *arch;      /* see above */
	const char *out;       /* created; must be empty or absent */
	long layers, experts, hidden, inter; /* 0: the arch's small default */
	uint64_t shard_bytes;  /* 0: FTCKPT_DEFAULT_SHARD; a shard closes once it would pass this */
	int threads;           /* <= 0: online CPUs, at most 32 */
	uint64_t seed;
	const struct ftreport *rep;
};

struct ftckpt_stats {
	uint64_t file_bytes, expert_bytes;
	int nshards;
	size_t ntensors;
	double seconds;
};

int ftckpt_write(const struct ftckpt_opts *o, struct ftckpt_stats *st, char *err, size_t errlen);
/* FTCKPT_ARCHS (static). */
#define FTCKPT_ARCHS "qwen3-moe,mixtral,deepseek-v3,gpt-oss,gpt-oss-bf16"
const char *ftckpt_archs(void);
#endif
