/* loader: get a checkpoint's expert banks into host memory (reference §7).
 *
 *   serial    one thread, one buffered pread per expert tensor straight into the bank
 *             ("scattered reads");
 *   parallel  the expert byte ranges of each shard (gaps under 1 MiB read through) cut into
 *             chunk_bytes chunks read by `workers` threads with O_DIRECT into aligned per-thread
 *             buffers and copied into the banks as each chunk lands; a file or read that
 *             O_DIRECT refuses (EINVAL) falls back to buffered reads. Extra memory: one chunk
 *             per worker, not a whole shard;
 *   auto      parallel when the experts are scattered (mean size of the tensors whose name holds
 *             ".experts." under 16 MiB; any error: not scattered) and MemAvailable >
 *             sum(shards) + largest shard; else serial.
 * (Test builds only, moe/directio.h: FTLOAD_TEST_EINVAL=1 makes every O_DIRECT read of the
 * parallel and FTW readers take the EINVAL fallback path.)
 * ftload_model (moe/model_load.c, above both readers) also takes an FTW directory (moe/ftw.h)
 * and reads it with the FTW reader.
 * All functions return 0 or -errno with a reason in err; none logs. */
#ifndef FT_MOE_LOADER_H
#define FT_MOE_LOADER_H
#include <stddef.h>
#include <stdint.h>

#include "moe/banks.h"
#include "util/report.h"

#define FTLOAD_DEFAULT_WORKERS 8
#define FTLOAD_DEFAULT_CHUNK (8u << 20)
#define FTLOAD_SCATTERED_BYTES (16u << 20)
#define FTLOAD_GAP_BYTES (1u << 20)

enum ftload_mode { FTLOAD_AUTO, FTLOAD_SERIAL, FTLOAD_PARALLEL };

struct ftload_opts {
	enum ftload_mode mode;
	int workers;          /* <= 0: FTLOAD_DEFAULT_WORKERS */
	size_t chunk_bytes;   /* 0: FTLOAD_DEFAULT_CHUNK; rounded to a multiple of 4096 */
	const struct ftreport *rep; /* optional progress */
};

struct ftload_stats {
	char loader[16];      /* "serial", "parallel", "ftw" */
	char why[256];        /* why auto chose it ("" when forced) */
	uint64_t file_bytes;  /* bytes read from files */
	int direct;           /* 1: every read was O_DIRECT; 0: buffered (by choice or fallback) */
	double seconds;       /* wall time of the read (allocation included) */
};

/* "auto" | "serial" | "parallel" -> *out; -EINVAL otherwise. */
int ftload_parse_mode(const char *s, enum ftload_mode *out);

/* 1 when the experts of m are scattered (see above), else 0. */
int ftload_experts_scattered(const struct ftst_model *m);

/* The auto choice for m with mem_available bytes free: FTLOAD_SERIAL or FTLOAD_PARALLEL, why
 * (optional) says why. */
enum ftload_mode ftload_choose(const struct ftst_model *m, uint64_t mem_available, char *why, size_t n);

/* Load the banks of plan p with o->mode (AUTO decides per ftload_choose). New *out. */
int ftload_plan(const struct ftbanks_plan *p, const struct ftload_opts *o, struct ftbanks **out,
		struct ftload_stats *st, char *err, size_t errlen);

/* Open dir (FTW directory or safetensors checkpoint with config.json), discover and load. */
int ftload_model(const char *dir, const struct ftload_opts *o, struct ftbanks **out, struct ftload_stats *st,
		 char *err, size_t errlen);
#endif
