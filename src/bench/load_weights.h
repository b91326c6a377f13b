/* load_weights: the load-weights benchmark of reference §7.
 *
 * The parent (ftlw_run) runs each mode in its own child process — fork + execve of ftbench
 * itself with the hidden `load-weights --worker MODE` flag — so only one set of banks is in
 * memory at a time. Before each mode the page cache of the files it reads is evicted
 * (fdatasync + posix_fadvise DONTNEED, no root needed) unless drop_cache is 0. A child is
 * started through ftproc (its own process group, SIGKILL when the parent dies) and reports in
 * the worker protocol (util/workermsg.h) on its fd 3 (`--result-fd 3`): one result, or an error;
 * its stdout and stderr go to the parent's stderr. Modes:
 *   baseline  serial loader on the safetensors checkpoint (always run: the reference)
 *   parallel  parallel O_DIRECT loader on the checkpoint
 *   ftw       convert once into an FTW directory this run makes (its own child, timed apart),
 *             then read it; that directory (0700) and what was written in it are removed after
 *             the run unless keep_ftw; nothing that existed before is written or removed
 *   auto      the production choice (FTW directory, else serial/parallel by the §7 check)
 * Every row's per-bank checksums (moe/checksum.h) are compared with the baseline's; a
 * mismatch marks the row BAD and the run as failed.
 *
 * ftlw_worker runs one mode in the current process and builds its result row; it samples
 * peak VmRSS and lowest MemAvailable on a background thread while loading.
 * Test builds only (compiled with FT_TEST_HOOKS, the Makefile's ftbench_hooks; absent from the
 * product): FTBENCH_LW_FAULT=swap-experts:<mode> makes that mode's worker swap experts 0 and 1 of
 * the first bank after loading (a reordering bug), to prove the checksum catches it.
 * Functions return 0 or -errno (reason in err) and never log. */
#ifndef FT_BENCH_LOAD_WEIGHTS_H
#define FT_BENCH_LOAD_WEIGHTS_H
#include <jansson.h>
#include <stdint.h>

#include "moe/loader.h"
#include "util/report.h"

enum { FTLW_BASELINE = 1, FTLW_PARALLEL = 2, FTLW_FTW = 4, FTLW_AUTO = 8 };
#define FTLW_MAX_REPEAT 20 /* the CLI's and the daemon's limit of --repeat / "repeat" */

struct ftlw_opts {
	const char *model;        /* checkpoint directory */
	unsigned modes;           /* FTLW_* bits; baseline is always added */
	int workers;              /* reader threads (parallel, ftw) */
	size_t chunk_bytes;
	uint64_t shard_bytes;     /* FTW shard limit */
	int drop_cache;
	int keep_ftw;
	const char *ftw_dir;      /* the FTW directory: used when this run can make it (nothing has
				   * that name), else a fresh ftw-<model name>.XXXXXX is made in it.
				   * NULL: /var/tmp/ftw_<model name> (else ...XXXXXX beside it). A worker
				   * (ftlw_worker) uses it as the FTW directory itself. */
	enum ftload_mode expert_load; /* loader of the FTW conversion and of the auto mode */
	int repeat;               /* runs of each mode, 1..FTLW_MAX_REPEAT (0: 1); the page cache is
				   * dropped before each (drop_cache) */
	const char *self_exe;     /* ftbench to exec; NULL: /proc/self/exe */
	const struct ftreport *rep;
};

/* Parse "baseline,parallel,ftw,auto" into FTLW_* bits; -EINVAL names nothing (caller does). */
int ftlw_parse_modes(const char *s, unsigned *out);

/* Run the benchmark; *result (new) gets {"model","format","layers","experts","hidden","inter",
 * "bank_bytes","drop_cache","repeat","workers","chunk_mib","ftw":{...}|null,"rows":[...],"ok"}.
 * Each mode runs o->repeat times, each in its own child; its row is the worker row of its first
 * run with load_s the median over the runs, load_s_min / load_s_max / load_s_runs, read_gbs from
 * the median and read_gbs_min / read_gbs_max, the highest peak_rss_bytes, the lowest
 * min_mem_available_bytes, and checksum_ok only when every run's checksums equal the baseline's
 * first run. Returns 0 when every mode ran (check "ok" for checksums), or -errno (-EINVAL for a
 * repeat above FTLW_MAX_REPEAT). */
int ftlw_run(const struct ftlw_opts *o, json_t **result, char *err, size_t errlen);

/* One mode in this process ("baseline", "parallel", "ftw", "auto", "ftw-convert"); *row new. */
int ftlw_worker(const char *mode, const struct ftlw_opts *o, json_t **row, char *err, size_t errlen);

/* Evict the page cache of every regular file directly in dir. Returns files evicted or -errno. */
int ftlw_evict_dir(const char *dir);

/* A row's checksum verdict: "reference" (the first row, when its runs agree), "ok" or "BAD". */
const char *ftlw_checksum_word(const json_t *row, int index);

#define FTLW_FTW_PARENT "/var/tmp"

/* The default FTW directory of model: FTLW_FTW_PARENT "/ftw_<model dir name>" (other than
 * [A-Za-z0-9._-] as '_'), into buf. */
void ftlw_default_ftw_dir(const char *model, char *buf, size_t n);

/* The mkdtemp template used when the FTW directory exists already: "<ftw_dir>/ftw-<name>.XXXXXX",
 * or with ftw_dir NULL "<default FTW directory>.XXXXXX", into buf. */
void ftlw_ftw_template(const char *ftw_dir, const char *model, char *buf, size_t n);
#endif
