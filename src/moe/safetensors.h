/* safetensors: a strict reader of safetensors files and sharded checkpoints.
 *
 * A file is: 8-byte little-endian header length N, N bytes of JSON (UTF-8, may be padded with
 * spaces), then the data. Everything in the header is checked before any data is read: the
 * length against the file size and a cap, the bytes as UTF-8, the nesting depth, every tensor's
 * dtype, shape, data_offsets (inside the data, consistent with shape x dtype size) and that no
 * two tensors overlap. A hostile file gets an error naming what is wrong (in err), never an
 * out-of-bounds read.
 *
 * A model directory is read through model.safetensors.index.json (weight_map: tensor -> shard
 * file name, no path separators), else model.safetensors, else every *.safetensors file in it.
 * All functions return 0 or a negative errno (-EINVAL for a malformed file, -ENOENT, -EIO ...)
 * and write a one-line reason into err (may be NULL); none logs. */
#ifndef FT_MOE_SAFETENSORS_H
#define FT_MOE_SAFETENSORS_H
#include <stddef.h>
#include <stdint.h>

#define FTST_MAX_DIMS 8
#define FTST_MAX_HEADER (100u << 20) /* the format's own cap: 100 MB */
#define FTST_MAX_DEPTH 3             /* {"t": {"shape": [..]}} */
#define FTST_MAX_NAME 1024

enum ftst_dtype {
	FTST_BOOL, FTST_U8, FTST_I8, FTST_F8_E4M3, FTST_F8_E5M2, FTST_F8_E8M0, FTST_I16, FTST_U16,
	FTST_F16, FTST_BF16, FTST_I32, FTST_U32, FTST_F32, FTST_I64, FTST_U64, FTST_F64,
	FTST_DTYPE_COUNT
};

struct ftst_tensor {
	char *name;             /* owned by the file */
	enum ftst_dtype dtype;
	int ndim;
	int64_t shape[FTST_MAX_DIMS];
	uint64_t offset;        /* absolute byte offset in the file */
	uint64_t nbytes;
	int file;               /* index of its file in a model (0 for a lone file) */
};

struct ftst_file {
	char *path;
	uint64_t size;          /* file size */
	uint64_t data_start;    /* 8 + header length */
	size_t ntensors;
	struct ftst_tensor *tensors; /* sorted by offset */
};

/* Parse and validate a header (hdr: the len JSON bytes after the 8-byte length) of a file of
 * file_size bytes. Fills out (tensors with absolute offsets; path NULL); release with
 * ftst_file_release. On error out is left empty. Pure: reads only hdr[0..len). */
int ftst_parse_header(const char *hdr, size_t len, uint64_t file_size, struct ftst_file *out,
		      char *err, size_t errlen);

/* Open a file and parse its header (reads only the header). */
int ftst_file_open(const char *path, struct ftst_file *out, char *err, size_t errlen);
void ftst_file_release(struct ftst_file *f); /* accepts NULL and an empty struct */

struct ftst_model {
	char *dir;
	size_t nfiles;
	struct ftst_file *files;
	size_t ntensors;
	struct ftst_tensor **by_name; /* sorted by name; borrowed from files */
};

/* Open every shard of the checkpoint in dir (see above). Tensor names are unique across the
 * model; with an index, every tensor it names must be in the shard it names. New *out; free
 * with ftst_model_free. */
int ftst_model_open(const char *dir, struct ftst_model **out, char *err, size_t errlen);
void ftst_model_free(struct ftst_model *m);
/* Borrowed pointer or NULL. */
const struct ftst_tensor *ftst_model_find(const struct ftst_model *m, const char *name);

size_t ftst_dtype_size(enum ftst_dtype t);
const char *ftst_dtype_name(enum ftst_dtype t);
/* torch's name of the dtype without "torch." ("bfloat16", "float8_e4m3fn", "uint8", ...), as
 * FTW indexes store it (reference §7). Static string. */
const char *ftst_dtype_torch_name(enum ftst_dtype t);
int ftst_dtype_lookup(const char *name, enum ftst_dtype *out); /* 0 or -EINVAL */

/* Validate s[0..n) as UTF-8 (no overlongs, surrogates or code points past U+10FFFF).
 * Returns -1 when valid, else the offset of the first bad byte. */
long ftst_utf8_invalid_at(const char *s, size_t n);

/* Writer side (synthetic checkpoints, tests). */
struct ftst_wtensor {
	const char *name;
	enum ftst_dtype dtype;
	int ndim;
	int64_t shape[FTST_MAX_DIMS];
};
/* Build the header of a file holding the n tensors in that order, contiguous: *hdr (new, free
 * it) gets the 8-byte length plus the JSON padded with spaces to a multiple of 8 (*hdr_len
 * bytes in all); off[i] gets tensor i's absolute offset in the file, *file_size the total size.
 * metadata: optional JSON object text for "__metadata__" (string values), or NULL. */
int ftst_build_header(const struct ftst_wtensor *t, size_t n, const char *metadata, char **hdr,
		      size_t *hdr_len, uint64_t *off, uint64_t *file_size);
#endif
