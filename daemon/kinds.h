/* kinds: the job kinds as a table {name, host-exclusive, typed arguments}. Turns a request's
 * `args` object into the worker's argv (never a shell string), or an HTTP error naming the
 * field. */
#ifndef FTD_KINDS_H
#define FTD_KINDS_H
#include <jansson.h>

#include "config.h"
#include "hw/gpu.h"

#define FTD_GPU_ALL (-2)

struct ftd_kind {
	const char *name;
	int host_exclusive;      /* bw and load-weights measure DRAM/PCIe/disk: nothing beside them */
	const struct ftd_arg *args;
};

/* An HTTP error: status, code ("invalid_argument"), field ("args.cpu_iters" or ""), message. */
struct ftd_err {
	int status;
	char code[32];
	char field[64];
	char message[512];
};

/* The kind named name, or NULL. */
const struct ftd_kind *ftd_kind_find(const char *name);

/* Validate args (borrowed; may be NULL = {}) of kind k and build the worker argv after
 * argv[0] = worker and argv[1] = kind: flags as "--flag=value" plus "--gpu=<uuid>" and
 * "--result-fd=3". gpus/ngpus is the inventory; *gpu_pos gets the GPU's position, -1 (no GPU
 * on this host), or FTD_GPU_ALL (a bw job with gpu "all": every GPU, "--gpu=all"). A bw job
 * without args.deployment gets cfg's deployment (when set). On success returns 0 and *argv_out is a new NULL-terminated array of new
 * strings (free with ftd_argv_free); on a bad request returns -1 with err filled. */
int ftd_kind_build(const struct ftd_kind *k, const json_t *args, const struct ftd_config *cfg,
		   const char *worker, const struct ftgpu_info *gpus, int ngpus, int *gpu_pos,
		   char ***argv_out, struct ftd_err *err);

void ftd_argv_free(char **argv);

void ftd_err_set(struct ftd_err *e, int status, const char *code, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
#endif
