/* libftprofile: the CUDA-free reader (and writer) of ftbenchd host bandwidth profiles.
 *
 * A profile (api/schemas/profile.schema.json, version 4) says, for one GPU of one host, whether a
 * MoE expert missing from the GPU slot cache is better fetched over PCIe ("offload") or computed
 * on the CPU ("hybrid"), per expert format, and how the misses of one step are best split between
 * the two paths (the fetch fraction). `ftbench bw` writes it; inference engines read it at start-up.
 *
 * Files (one per GPU):
 *   $FREETOKEN_BENCHBW_PATH                         when set (non-empty): the file, read and written
 *   $XDG_CACHE_HOME/freetoken/benchbw/<uuid>.json   (XDG_CACHE_HOME unset or empty: ~/.cache)
 *   $XDG_CACHE_HOME/freetoken/benchbw/host.json     the profile of a GPU-less host (gpu: null)
 * Readers also fall back to the seed system's legacy single file
 *   $XDG_CACHE_HOME/freetoken/benchbw.json
 * and then to the system-wide store /var/cache/freetoken/benchbw/<uuid>.json (host.json).
 *
 * Conventions: functions returning int return 0 or a negative errno and never log, exit or abort;
 * a corrupt, truncated, non-object or oversized file is an error (-EINVAL, -EFBIG), never a
 * crash. Where a function takes (err, errlen), err (may be NULL) receives one line naming the file
 * and what is wrong. Strings passed in are only borrowed. Thread-safety: a loaded struct ftprof
 * is read-only and may be shared by threads; the functions reading the environment are not safe
 * against a concurrent setenv().
 *
 * Link: pkg-config --cflags --libs ftprofile (needs jansson).
 */
#ifndef FTPROFILE_H
#define FTPROFILE_H
#include <jansson.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The profile format version this library writes (and the newest it knows). */
#define FTPROF_VERSION 4

/* Largest profile file read (bigger: -EFBIG). */
#define FTPROF_MAX_FILE_BYTES (8u << 20)

/* Environment variables. */
#define FTPROF_ENV_PATH "FREETOKEN_BENCHBW_PATH" /* the profile file itself (read and write) */
/* Replaces the system-wide directory /var/cache/freetoken/benchbw (meant for tests). */
#define FTPROF_ENV_SYSDIR "FREETOKEN_BENCHBW_SYSDIR"
#define FTPROF_SYSTEM_DIR "/var/cache/freetoken/benchbw"

/* What a profile says about one format. */
enum ftprof_rec {
	FTPROF_REC_NONE = 0,    /* no data: the caller keeps its default (offload) */
	FTPROF_REC_OFFLOAD = 1, /* fetch missing experts over PCIe */
	FTPROF_REC_HYBRID = 2,  /* compute (some) missing experts on the CPU */
};

/* A loaded profile (opaque, read-only once loaded). */
struct ftprof;

/* Library version of the profile format (FTPROF_VERSION). */
int ftprof_version(void);

/* "none", "offload" or "hybrid" (static string). */
const char *ftprof_rec_name(enum ftprof_rec rec);

/* Canonical format name after the seed's format aliases of reference §1 (mxfp4 -> mxfp4_triton,
 * fp8 -> fp8_block; what `ftbench bw --dtype` takes); any other name is returned unchanged (a
 * profile may hold formats this library does not know). NULL gives NULL. The result is fmt
 * itself or a static string. The reader's queries use the seed reader's narrower map (below). */
const char *ftprof_canonical_format(const char *fmt);

/* ---------------------------------------------------------------- paths */

/* The per-user store directory: $XDG_CACHE_HOME/freetoken/benchbw (XDG_CACHE_HOME unset or empty:
 * $HOME/.cache/...; HOME unset: the passwd entry's home). -ENAMETOOLONG when it does not fit
 * in n; -ENOENT when no home directory can be found. */
int ftprof_store_dir(char *buf, size_t n);

/* The file the profile of GPU gpu_uuid is written to and read first: $FREETOKEN_BENCHBW_PATH when
 * set, else <store dir>/<gpu_uuid>.json, or <store dir>/host.json when gpu_uuid is NULL or "".
 * -EINVAL when gpu_uuid is not a plain file name part (contains '/', starts with '.', or has
 * characters outside [A-Za-z0-9._:-]). */
int ftprof_path(const char *gpu_uuid, char *buf, size_t n);

/* ---------------------------------------------------------------- reading */

/* Load the profile for a GPU. gpu_uuid ("GPU-8eb9...") and/or gpu_name ("NVIDIA H200") say which
 * GPU the caller runs on; both NULL (or "") means a GPU-less caller (host.json).
 *
 * Candidates, in order: $FREETOKEN_BENCHBW_PATH (when set), <store dir>/<uuid>.json (host.json
 * without a uuid or name), the legacy <XDG cache>/freetoken/benchbw.json, then
 * /var/cache/freetoken/benchbw/<uuid>.json (host.json). A candidate that does not exist is
 * skipped; so is one measured on another GPU (ftprof_matches_gpu). The first candidate that
 * exists and matches is loaded; a corrupt one stops the search with an error (it should be fixed
 * or removed, not silently shadowed).
 *
 * Returns 0 and a new *out (ftprof_free), -ENOENT when no candidate exists or matches (err says
 * which files were looked at), -EINVAL for a file that is not JSON or whose top level is not an
 * object, -EFBIG for one over FTPROF_MAX_FILE_BYTES, -ENOMEM, or another -errno from reading. */
int ftprof_load(const char *gpu_uuid, const char *gpu_name, struct ftprof **out, char *err,
		size_t errlen);

/* Load one file, without the GPU check. Same errors as ftprof_load (-ENOENT: no such file).
 * Like the seed's reader, any JSON object is a profile (no "version" needed; a key given twice
 * keeps its last value); entries with types the rules below do not expect count as absent. */
int ftprof_load_file(const char *path, struct ftprof **out, char *err, size_t errlen);

/* Whether a loaded profile was measured on the caller's GPU (1 yes, 0 no): a file whose "gpu" is
 * null, missing or not an object matches every caller (as in the seed); when both the caller and
 * the file know a uuid, the uuids decide (ours: the seed records none); else a truthy gpu.name in
 * the file that differs from the caller's name does not match (the seed's rule); a caller that
 * names nothing matches every file. */
int ftprof_matches_gpu(const struct ftprof *p, const char *gpu_uuid, const char *gpu_name);

/* The file it was loaded from (borrowed, valid until ftprof_free). */
const char *ftprof_source(const struct ftprof *p);
/* The GPU uuid / name recorded in the profile, or NULL (borrowed). */
const char *ftprof_gpu_uuid(const struct ftprof *p);
const char *ftprof_gpu_name(const struct ftprof *p);
/* The whole document (borrowed; do not modify; valid until ftprof_free). */
const json_t *ftprof_json(const struct ftprof *p);

/* The answers below are exactly those of the seed's torch-free reader (reference §5), including
 * its alias map: only "mxfp4" means "mxfp4_triton" (not "fp8": asking for "fp8" finds an "fp8"
 * key or nothing); any other name is looked up as it is. "Truthy" is Python's: not null, false,
 * 0, "", [] or {}. Values of other types than the rule reads count as absent.
 *
 * The recommendation for a format:
 *   1. dtypes[fmt] when it is "hybrid" or "offload" (any other value falls through);
 *   2. else the entries workloads[*].kernels[fmt] that are objects with a truthy "recommended",
 *      in file order: hybrid when every one says "hybrid", offload when at least one says
 *      something else (recommended_moe_backend is written but not read);
 *   3. else FTPROF_REC_NONE (no data: the caller keeps offload).
 * A NULL profile or format gives FTPROF_REC_NONE. */
enum ftprof_rec ftprof_recommend(const struct ftprof *p, const char *format);

/* The hybrid fetch fraction for a format: the share of a step's missing experts to fetch over
 * PCIe (the rest run on the CPU), for `--moe-hybrid-max-fetch -1`. Entries, in this order:
 * dtype_kernels[fmt], then workloads[*].kernels[fmt] in file order; the FIRST that yields a
 * value wins: with cpu_moe_overlap_gbs and pcie_gather_overlap_gbs both truthy,
 * pcie_ov / (pcie_ov + cpu_ov); else with cpu_moe_gbs and pcie_gather_gbs both truthy,
 * pcie / cpu; clamped to at most 1 (only above, as the seed does: figures that are negative
 * give what the seed gives). An entry whose figures the seed could not divide (a string, a zero
 * sum: it would raise) yields nothing and the walk goes on.
 * Returns 0 and *fraction, or -ENODATA when no entry yields a value, -EINVAL for NULL
 * arguments. */
int ftprof_fetch_fraction(const struct ftprof *p, const char *format, double *fraction);

/* Free a profile; NULL is fine. */
void ftprof_free(struct ftprof *p);

/* ---------------------------------------------------------------- writing and listing */

/* Write profile atomically (temp file in the same directory, fsync, rename, fsync of the
 * directory; a reader never sees a partial file), creating missing directories (0755); the file
 * gets mode 0644 whatever the umask; numbers are written with 15 significant digits. The
 * destination is ftprof_path(uuid) where uuid is gpu_uuid, or when gpu_uuid is NULL the
 * profile's gpu.uuid (host.json when gpu is null). Shape checked first (-EINVAL): an object with
 * integer "version", "gpu" null or an object with a string "uuid", which must equal gpu_uuid
 * when both are given (a GPU-less profile, gpu null, is never written under a uuid).
 * profile is borrowed. On success the path written is copied to path_out (when not NULL; n its
 * size, -ENAMETOOLONG if too small, checked before writing). Returns 0 or -errno. */
int ftprof_store_write(const json_t *profile, const char *gpu_uuid, char *path_out, size_t n);

/* The same into a given store directory (the daemon's): dir/<uuid>.json or dir/host.json;
 * FREETOKEN_BENCHBW_PATH is not consulted. dir NULL: exactly ftprof_store_write. */
int ftprof_store_write_in(const char *dir, const json_t *profile, const char *gpu_uuid,
			  char *path_out, size_t n);

/* The file of GPU gpu_uuid (NULL or "": host.json) inside store directory dir (NULL: the
 * per-user store dir), without the FREETOKEN_BENCHBW_PATH override: for GET /profiles/{uuid}.
 * -EINVAL for an unsafe uuid (see ftprof_path), -ENAMETOOLONG. */
int ftprof_store_file(const char *dir, const char *gpu_uuid, char *buf, size_t n);

/* The seed's single file, the only one released engines read: $XDG_CACHE_HOME/freetoken/benchbw.json
 * (XDG_CACHE_HOME unset or empty: ~/.cache/...), whatever FREETOKEN_BENCHBW_PATH says.
 * -ENAMETOOLONG, -ENOENT (no home directory). */
int ftprof_legacy_path(char *buf, size_t n);

/* Write profile to ftprof_legacy_path() the way ftprof_store_write writes (atomic, 0644, the
 * same bytes), for hosts with one GPU. -EINVAL when profile is not an object with an integer
 * "version"; path_out as in ftprof_store_write. Returns 0 or -errno. */
int ftprof_legacy_write(const json_t *profile, char *path_out, size_t n);

/* One stored profile file. */
struct ftprof_entry {
	char name[128];  /* file name without ".json": the GPU uuid, or "host" */
	char path[4096];
	long long size;  /* bytes */
	double mtime;    /* seconds since 1970 */
};

/* List the profiles of a store directory (dir NULL: ftprof_store_dir()): every regular file
 * named *.json (temp files of a write in progress are not), sorted by name. Returns 0 and a new
 * array *out (free()) of *n entries (*out NULL when *n is 0; a missing directory is 0 entries),
 * or -errno. */
int ftprof_store_list(const char *dir, struct ftprof_entry **out, int *n);

#ifdef __cplusplus
}
#endif
#endif
