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
 * and what is wrong (the empty string on success). Strings passed in are only borrowed. Thread-safety: a loaded struct ftprof
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

/* Load one file, without the GPU check. Same errors as ftprof_load (-ENOENT: no such file;
 * -EINVAL: path or out NULL, or path empty).
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

/* ---------------------------------------------------------------- deployments
 *
 * On a host of several GPUs `ftbench bw --gpu all` measures each GPU alone (the seed's figures)
 * and while every engine of the host runs at once (per ENTRY a "concurrent" block with its own
 * verdict and fetch fraction). The profile's "deployment" says which verdict the seed's fields
 * (dtypes, ENTRY.recommended, recommended_moe_backend) carry, so the functions above answer for
 * it; these ask for either. The seed's figures, and so ftprof_fetch_fraction, stay the isolated
 * ones: an engine that follows a concurrent verdict takes its fraction from
 * ftprof_fetch_fraction_deployment(p, fmt, FTPROF_DEPLOY_PROFILE, &f). */
enum ftprof_deployment {
	FTPROF_DEPLOY_PROFILE = 0,    /* the one the profile records */
	FTPROF_DEPLOY_ISOLATED = 1,   /* the GPU measured alone (profiles without "deployment") */
	FTPROF_DEPLOY_CONCURRENT = 2, /* every engine of the host at once */
};

/* "profile", "isolated", "concurrent" (static string); parse the same names (0 or -EINVAL). */
const char *ftprof_deployment_name(enum ftprof_deployment d);
int ftprof_deployment_parse(const char *s, enum ftprof_deployment *d);

/* The deployment a profile records (FTPROF_DEPLOY_ISOLATED when it records none). */
enum ftprof_deployment ftprof_deployment(const struct ftprof *p);

/* The recommendation for a format under deployment d: the recorded one by ftprof_recommend's
 * rule; the other from the entries (dtype_kernels[fmt] first, else the workloads carrying fmt:
 * hybrid when all say hybrid) — "recommended_isolated", or the "concurrent" block's
 * "recommended". FTPROF_REC_NONE when the profile has no figures for d (e.g. concurrent on a
 * profile of one GPU). */
enum ftprof_rec ftprof_recommend_deployment(const struct ftprof *p, const char *format,
					    enum ftprof_deployment d);

/* The fetch fraction under deployment d: isolated is ftprof_fetch_fraction; concurrent walks
 * dtype_kernels[fmt] then workloads[*].kernels[fmt] in file order and takes the first
 * "concurrent" block that yields one (its fetch_fraction, else its overlap pair, else its plain
 * pair, at most 1). 0, -ENODATA (none), -EINVAL (NULL arguments). */
int ftprof_fetch_fraction_deployment(const struct ftprof *p, const char *format, enum ftprof_deployment d,
				     double *fraction);

/* The batch crossover for a format (the reader's alias: mxfp4), from `bw --batch-sweep`: the
 * largest batch up to which the CPU MoE still beat threshold x the gather at every swept batch
 * (0: not even the first). The ENTRY's hybrid_max_batch (an integer >= 0): dtype_kernels[fmt]
 * when it has one, else the smallest of the workloads whose kernels carry fmt (the batch every
 * one of them still allows). Returns 0 and *batch, -ENODATA when no entry has one (no sweep was
 * run), -EINVAL for NULL arguments. */
int ftprof_hybrid_max_batch(const struct ftprof *p, const char *format, int *batch);

/* One row of dtype_kernels[fmt].batch_sweep (the reader's alias: mxfp4): the CPU MoE over gather
 * ratio at that batch. Returns 0 and *ratio, -ENODATA when there is no such row or its ratio is
 * not a positive number, -EINVAL for NULL arguments or batch < 1. */
int ftprof_batch_ratio(const struct ftprof *p, const char *format, int batch, double *ratio);

/* ---------------------------------------------------------------- the answer by workload
 *
 * `ftbench replay` (and bw's short replay) runs an engine's MoE decode step on the host under a
 * routing workload and a GPU cache size, in every placement mode, and stores the map in the
 * profile's "replay" block (docs/REPLAY.md): per format, points of (cache_fraction: the slot
 * cache as a share of layers x experts, reuse: the share of a layer's experts kept from one token
 * to the next) with the measured winner and the best fetch fraction. The bandwidth rule cannot
 * see reuse: a hybrid engine's CPU-computed misses never enter the GPU cache, so hybrid loses once
 * routing reuses experts enough.
 *
 * ftprof_recommend_workload answers for the caller's workload: among replay.<fmt>.points of skew 0
 * (fmt after ftprof_canonical_format: bf16, nvfp4, mxfp4_triton, ...), the point NEAREST to
 * (cache_fraction, reuse) (Euclidean distance over both coordinates, as given, no interpolation;
 * ties: the first in the file). Its winner "hybrid" gives FTPROF_REC_HYBRID; "offload" and "tie"
 * (no measurable difference: the simpler path) give FTPROF_REC_OFFLOAD. fetch_fraction (may be
 * NULL) gets the point's best_fetch_fraction (the fastest measured f; NAN when it has none),
 * whatever the winner. FTPROF_REC_NONE when the profile has no replay points for the format, the
 * arguments are NULL or not numbers (the caller falls back to ftprof_recommend). */
enum ftprof_rec ftprof_recommend_workload(const struct ftprof *p, const char *format, double cache_fraction,
					  double reuse, double *fetch_fraction);

/* The same point's description for a caller that shows where the answer came from: its
 * cache_fraction, reuse and speedup (median offload step / median best hybrid step) into the
 * non-NULL pointers. 0, or -ENODATA as FTPROF_REC_NONE above, -EINVAL for NULL p or format. */
int ftprof_workload_point(const struct ftprof *p, const char *format, double cache_fraction, double reuse,
			  double *point_cache, double *point_reuse, double *speedup);

/* ---------------------------------------------------------------- validation
 *
 * A profile's verdict checked against the engine that reads it: per format,
 * validation.<fmt> (api/schemas/profile.schema.json) records who checked it ("engine": the
 * engine's own decode, with its name, version and arms; or "replay"), the winner of that run
 * ("hybrid", "offload" or "tie": no gap past the spread), the best fetch fraction it found,
 * whether that agrees with the profile's verdict (a tie agrees: neither path lost measurably),
 * and when (measured_epoch: the run; profile_epoch: the profile it was compared with). Written by
 * `ftbench profile validate --from FILE`. A record is trusted only while it is current: */
enum ftprof_validation_state {
	FTPROF_VALIDATION_CURRENT = 0,       /* made against this profile, by the caller's engine version */
	FTPROF_VALIDATION_STALE_PROFILE = 1, /* older than the profile: run before it was measured, or
					      * compared with another profile (profile_epoch != epoch) */
	FTPROF_VALIDATION_STALE_ENGINE = 2,  /* by another version of the engine than the caller's */
};

/* "current", "stale_profile", "stale_engine" (static string). */
const char *ftprof_validation_state_name(enum ftprof_validation_state s);

/* What validation.<fmt> says. Strings are borrowed from the profile (valid until ftprof_free);
 * NULL where the record has none. */
struct ftprof_validation {
	const char *source;          /* "engine" or "replay" */
	const char *engine_name;     /* engine.name */
	const char *engine_version;  /* engine.version */
	const char *winner;          /* "hybrid", "offload" or "tie" */
	double best_fetch_fraction;  /* NAN when none was found */
	int agrees;                  /* 1, 0; -1 when the record does not say (no verdict to compare) */
	double measured_epoch;       /* seconds since 1970; NAN when missing */
	double profile_epoch;
	enum ftprof_validation_state state;
};

/* The validation of format (looked up as it is, then by ftprof_canonical_format) in p.
 * engine_version: the caller's engine version, or NULL to skip that check. State: STALE_PROFILE
 * when measured_epoch or profile_epoch is missing, measured_epoch is before the profile's epoch,
 * or profile_epoch differs from it; else STALE_ENGINE when engine_version is given and differs
 * from the record's (a record without a version is stale to any caller that names one); else
 * CURRENT. Returns 0 and *v, -ENODATA when the profile has no validation for format (or one
 * without a winner; *v is then cleared: NULL strings, state 0), -EINVAL for NULL arguments. */
int ftprof_validation(const struct ftprof *p, const char *format, const char *engine_version,
		      struct ftprof_validation *v);

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

/* Copy the profile file src (the one just stored) to ftprof_legacy_path() byte for byte,
 * atomically (temp file, fsync, rename; mode 0644), for hosts with one GPU. -EINVAL when src does
 * not hold a JSON object; path_out as in ftprof_store_write. Returns 0 or -errno. */
int ftprof_legacy_copy(const char *src, char *path_out, size_t n);

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

/* ---- history and drift (a store keeps the last profiles of each GPU) */

/* What `ftbench bw` uses for the per-user store (ftbenchd: config history, drift-percent). */
#define FTPROF_HISTORY_KEEP 20
#define FTPROF_DRIFT_SHARE 0.10

/* Keep profile in dir's history: dir/history/<uuid or host>/<epoch ms, 13 digits>.json (dir NULL:
 * the per-user store dir), then remove the oldest beyond keep. keep <= 0: nothing is kept or
 * removed. Returns 0 or -errno. */
int ftprof_history_add(const char *dir, const json_t *profile, const char *gpu_uuid, int keep);

/* The kept profiles of gpu_uuid (NULL or "": the host's), oldest first, at most the newest limit
 * (limit <= 0: all): 0 and a new array *out (empty when none), or -errno. */
int ftprof_history_load(const char *dir, const char *gpu_uuid, int limit, json_t **out);

/* The figures of cur (the ceilings, each dtype_kernels format's cpu_moe_gbs and pcie_gather_gbs)
 * whose median lies outside prev's spread [min, max] widened by share (0.1 = 10 %) on each side:
 * a new array of {"figure","previous","previous_min","previous_max","current","ratio"}. */
json_t *ftprof_drift(const json_t *prev, const json_t *cur, double share);

/* Store a new profile as a store does: compare it with the profile stored before for the same GPU
 * (drift, share > 0: the profile gains "drift" and one warning per drifted figure), write it with
 * ftprof_store_write_in, and keep it in the history (keep). profile is borrowed (a copy is
 * written). Returns 0 or -errno. */
int ftprof_store_commit(const char *dir, const json_t *profile, const char *gpu_uuid, int keep, double share,
			char *path_out, size_t n);

/* ---- a measured profile's fate: the one rule of `ftbench bw` and of ftbenchd's bw jobs */

/* Settle a measured profile in store directory dir (NULL: the per-user store). One whose own
 * checks passed (no "valid": false) is committed (ftprof_store_commit: drift, store file,
 * history); one whose checks failed ("valid": false) is only kept in the history
 * (ftprof_history_add, at least one kept), so the stored profile, which engines read, stays as
 * it was. path_out (may be NULL): the GPU's store file either way. profile is borrowed.
 * Returns 0 (stored), FTPROF_KEPT_INVALID (kept in the history only), or -errno. */
#define FTPROF_KEPT_INVALID 1
int ftprof_store_settle(const char *dir, const json_t *profile, const char *gpu_uuid, int keep, double share,
			char *path_out, size_t n);

/* The legacy copy rule: after a profile was stored at stored (ftprof_store_settle returned 0),
 * the seed's single file (ftprof_legacy_path, the only one released engines read) gets a copy
 * byte for byte when the profile is of a GPU and the host has exactly host_gpus == 1 GPU. What
 * happened goes to *what; path_out (may be NULL) gets the legacy path in every case (for
 * messages). Returns 0, or -errno when the copy was due and failed. */
enum ftprof_legacy {
	FTPROF_LEGACY_WRITTEN,   /* the copy was written */
	FTPROF_LEGACY_NO_GPU,    /* a GPU-less profile is for no GPU's engine */
	FTPROF_LEGACY_MANY_GPUS, /* several GPUs: engines on every GPU would read this one's figures */
	FTPROF_LEGACY_NOT_VALID, /* the profile is not valid (not stored): the file keeps what it had */
	FTPROF_LEGACY_SAME_FILE, /* stored is the legacy file itself (FREETOKEN_BENCHBW_PATH names it) */
};
int ftprof_legacy_settle(const json_t *profile, const char *stored, int host_gpus, enum ftprof_legacy *what,
			 char *path_out, size_t n);

/* ---- staleness: the machine a profile was measured on */

/* The machine's fingerprint now, from sysfs and procfs (no CUDA): {driver_version (the NVIDIA
 * kernel module's), pcie_gen_max and pcie_width (the link of PCI device pci_bus_id, in
 * nvidia-smi's form; absent when NULL or unreadable), cpu_model, cpu_microcode, memory_gib,
 * kernel, tool_version}; a fact that cannot be read is absent. root: a directory standing for
 * "/" (tests), NULL or "" for the real one. A new object, NULL without memory. */
json_t *ftprof_fingerprint_at(const char *root, const char *pci_bus_id);

/* Compare the fingerprint a profile recorded (was) with now: 1 stale (why: what changed, "; "
 * between facts), 0 the same machine, -ENOENT when was is not a non-empty object (a profile that
 * recorded none: staleness unknown). Facts absent on either side are not compared; memory counts
 * as changed beyond 10 %. why may be NULL. */
int ftprof_fingerprint_compare(const json_t *was, const json_t *now, char *why, size_t n);

/* Is profile p stale on this machine? Its "fingerprint" against ftprof_fingerprint_at(NULL,
 * p's gpu.pci_bus_id): as ftprof_fingerprint_compare. */
int ftprof_stale(const struct ftprof *p, char *why, size_t n);

#ifdef __cplusplus
}
#endif
#endif
