/* kinds: the job kinds as a table, one row per kind {name, resources, argument table, argv
 * builder, what to do when a job ends}. Turns a request's `args` object into the worker's argv
 * (never a shell string), or an HTTP error naming the field. The argument tables are shared
 * with `ftbench submit` (src/util/jobargs.c). No I/O: a kind that stores something on success
 * is handed the store (struct ftd_kind_done). */
#ifndef FTD_KINDS_H
#define FTD_KINDS_H
#include <jansson.h>

#include "config.h"
#include "hw/gpu.h"
#include "kindarg.h"
#include "util/jobargs.h"

/* What a kind's end hooks see and set. */
struct ftd_kind_done {
	const char *job_id;
	const json_t *result;          /* the worker's result object */
	const char *gpu_uuid;          /* NULL: none */
	int exit_status;
	/* the profile store: its fate by libftprofile's rule (ftprof_store_settle): 0 stored (new
	 * path in *path_out), FTPROF_KEPT_INVALID (history only; *path_out the stored file), -errno */
	int (*store)(const json_t *profile, const char *uuid, char **path_out, void *ctx);
	/* the legacy single file next to a profile just stored at stored (ftprof_legacy_settle, as
	 * the configuration allows): 0 (msg may say why it was not written), -errno (msg says it) */
	int (*legacy)(const json_t *profile, const char *stored, char *msg, size_t n, void *ctx);
	/* the stored profile of uuid (a new reference), or NULL when there is none or it is not JSON */
	json_t *(*load)(const char *uuid, void *ctx);
	void *ctx;
	const char *store_dir;         /* where store writes (for messages) */
	char *profile_path;            /* out: new string or NULL */
	char msg[512];                 /* out: why the job fails, one line ("" none) */
	char *detail;                  /* out: every reason, one a line (new string or NULL) */
	char note[512];                /* out: what the daemon logs beside ("" none) */
};

struct ftd_kind {
	const char *name;
	int host_exclusive;      /* measures DRAM/PCIe/disk: nothing may run beside it */
	int gpu_all;             /* args.gpu may be "all": every GPU (and, host-exclusive, the host) */
	int needs_gpu;           /* cannot run without one: refused (409 no_gpu) on a host without */
	const struct ftargs_spec *args;
	/* After the table's flags (before --gpu and --result-fd): check what the table cannot and
	 * add the kind's own flags. 0, or -1 with err filled. NULL: nothing. */
	int (*argv)(const struct ftd_kind_ctx *c, const json_t *args, struct ftd_argv *b, struct ftd_err *err);
	/* The job succeeded: 0, or -1 with d->msg (the job fails then). NULL: nothing. */
	int (*on_success)(struct ftd_kind_done *d);
	/* The worker exited with status != 0 but sent a result: may fill d->msg and d->detail.
	 * NULL: nothing. */
	void (*on_failure)(struct ftd_kind_done *d);
};

/* The kind named name, or NULL. */
const struct ftd_kind *ftd_kind_find(const char *name);
/* The kinds in table order: ftd_kind_at(0 .. ftd_kind_count()-1), at most FTD_KIND_MAX. */
#define FTD_KIND_MAX 16
int ftd_kind_count(void);
const struct ftd_kind *ftd_kind_at(int i);
/* "bw, cache-copy, ..." into buf. */
void ftd_kind_names(char *buf, size_t n);
int ftd_kind_index(const struct ftd_kind *k);
/* Whether a job of k with args holds every GPU (a bw job with gpu "all"). */
int ftd_kind_all_gpus(const struct ftd_kind *k, const json_t *args);

/* Validate args (borrowed; may be NULL = {}) of kind k against k->args and build the worker
 * argv: argv[0] = c->worker, argv[1] = kind, flags as "--flag=value", k->argv's flags,
 * "--gpu=<uuid>" and "--result-fd=3" last. *gpu_pos gets the GPU's inventory position, -1 (no
 * GPU on this host), or FTD_KIND_GPU_ALL (gpu "all": every GPU, "--gpu=all"). On success returns 0
 * and *argv_out is a new NULL-terminated array of new strings (free with ftd_kind_argv_free); on a
 * bad request returns -1 with err filled. */
int ftd_kind_argv(const struct ftd_kind *k, const json_t *args, const struct ftd_kind_ctx *c, int *gpu_pos,
		  char ***argv_out, struct ftd_err *err);
/* The same without a job id or output directory. */
int ftd_kind_build(const struct ftd_kind *k, const json_t *args, const struct ftd_config *cfg,
		   const char *worker, const struct ftgpu_info *gpus, int ngpus, int *gpu_pos,
		   char ***argv_out, struct ftd_err *err);

/* Every kind's argument table as JSON (new reference; NULL on ENOMEM): {"kinds": [{"kind",
 * "args": [{"name", "type", "flag", "minimum", "maximum", "choices", "max_items", "required"}]}]}.
 * `ftbenchd --dump-job-args` prints it; tests hold it against `ftbench flags` and the spec. */
json_t *ftd_kinds_args_json(void);
#endif
