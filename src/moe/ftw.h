/* ftw: the FreeToken whole-model weight format of reference §7, written so that the seed's own
 * loader accepts it, and read whether ftbench or the seed's converter wrote it.
 *
 * A directory with an index freetoken_weight.json {format "freetoken_weight", version 1,
 * align 4096, shard_limit, total_bytes, tensors [{name, kind "weight"|"experts_bank", dtype,
 * shape, global_off, nbytes}], shards [{file, global_off, nbytes}], source_model_path,
 * fingerprint, quant_format, expert_bank_num_layers, counts {weight, experts_bank},
 * copied_metadata [relative paths]} and shards freetoken-00000.ftw, ... that split one global
 * byte space. Every tensor starts 4096-aligned and is zero-padded to the next 4096 boundary;
 * dtype strings are torch's names without "torch." ("bfloat16", "uint8", "float8_e4m3fn", ...).
 *
 * What ftbench writes: expert banks first, one entry per (bank, MoE layer) named
 * "<bank>#L<5 digits>" with the MoE layers numbered 0..L-1 (also when the model's first layers
 * are dense), shape [E, per-expert shape]; then every other tensor of the checkpoint as
 * "weight" under its checkpoint name (the seed's converter stores its engine's fused names
 * instead, so the index says "weight_names": "checkpoint"); "expert_bank_layer_ids" [L] keeps
 * the model layer of each MoE layer (the seed ignores it). Each shard holds whole tensors (at
 * most shard_limit bytes unless one tensor is larger). Every file of the checkpoint that is not
 * weights is copied with its sub-folder (config.json, tokenizer, nested configs).
 *
 * What ftbench reads: per-layer entries as above (numbered 0..L-1, or by model layer as ftbench
 * wrote them before), or flat entries "<bank>" [L*E, per-expert shape] (L from
 * expert_bank_num_layers, else config.json), not mixed within one bank; the flat alphas
 * "gate_up_alpha" / "down_alpha" [L*E] are checked and not loaded (they are not banks); a
 * tensor may span shards (the seed's writer splits one larger than a shard). H and I come from
 * the copied config.json, else from a bank's shape. Dtype strings: torch's, or ftbench's older
 * names (bf16, u8, fp8_e4m3, ...).
 *
 * Functions return 0 or -errno with a reason in err; none logs. */
#ifndef FT_MOE_FTW_H
#define FT_MOE_FTW_H
#include <stddef.h>
#include <stdint.h>

#include "moe/banks.h"
#include "moe/loader.h"

#define FTFTW_INDEX "freetoken_weight.json"
#define FTFTW_ALIGN 4096
#define FTFTW_DEFAULT_SHARD_LIMIT (8ULL << 30)
/* value of the index's "weight_names": dense tensors carry the checkpoint's names */
#define FTFTW_WEIGHT_NAMES_CHECKPOINT "checkpoint"

/* 1 when dir holds an FTW index whose "format" is "freetoken_weight", else 0. */
int ftftw_is_dir(const char *dir);

struct ftftw_convert_opts {
	uint64_t shard_limit;       /* 0: FTFTW_DEFAULT_SHARD_LIMIT; rounded up to 4096 */
	struct ftload_opts load;    /* how the source banks are read */
};

struct ftftw_convert_stats {
	double load_s, write_s, total_s;
	uint64_t bytes_written;
	int nshards;
	struct ftload_stats load;
};

/* Convert the checkpoint in model_dir into out_dir (created; an old index there is removed
 * first, so a failed conversion never looks like an FTW directory). Holds the banks in memory
 * while writing; dense tensors are streamed. */
int ftftw_convert(const char *model_dir, const char *out_dir, const struct ftftw_convert_opts *o,
		  struct ftftw_convert_stats *st, char *err, size_t errlen);

/* Remove what an FTW conversion wrote into dir: the index first (so a half-removed directory is
 * never taken for an FTW), the shards and the copied_metadata files it lists (relative paths
 * without "..", links removed and never followed), then the sub-folders those emptied and dir
 * itself when empty. Files the index does not name stay. 0 or -errno (-ENOENT: no index). */
int ftftw_remove(const char *dir);

/* Read the banks of an FTW directory: the bank region cut into o->chunk_bytes chunks, read by
 * o->workers threads with O_DIRECT preadv straight into the banks (buffered on EINVAL).
 * The index is validated before any read. New *out. */
int ftftw_load(const char *dir, const struct ftload_opts *o, struct ftbanks **out, struct ftload_stats *st,
	       char *err, size_t errlen);
#endif
