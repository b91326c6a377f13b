/* kindarg: one argument of a job checked against its row of the kind's table (src/util/jobargs.h,
 * with the worker flag's bounds: jobflags.h) and the daemon's configuration and inventory, and
 * turned into the worker's flags; or the HTTP error that names the field. Also the argv being
 * built and the error, which every kind's own argv builder (kinds.h) uses. */
#ifndef FTD_KINDARG_H
#define FTD_KINDARG_H
#include <jansson.h>

#include "config.h"
#include "hw/gpu.h"
#include "util/jobargs.h"

#define FTD_KIND_GPU_ALL (-2)

/* An HTTP error: status, code ("invalid_argument"), field ("args.cpu_iters" or ""), message. */
struct ftd_err {
	int status;
	char code[32];
	char field[64];
	char message[512];
};

/* A growing NULL-terminated argv. */
struct ftd_argv {
	char **v;
	int n, cap;
	int oom;
};
/* Append s (taken; NULL marks out of memory). */
void ftd_kind_argv_push(struct ftd_argv *b, char *s);
/* "flag=val" (new string), NULL when out of memory. */
char *ftd_kind_argv_flag(const char *flag, const char *val);
void ftd_kind_argv_free(char **argv);

/* What an argv builder sees. */
struct ftd_kind_ctx {
	const struct ftd_config *cfg;
	const char *worker;
	const struct ftgpu_info *gpus; /* the inventory */
	int ngpus;
	int gpus_known;                /* the inventory was taken (ngpus 0 then: the host has none) */
	const char *gpus_reason;       /* why the inventory has no GPU (NULL: not known) */
	const char *job_id;            /* NULL: not known */
	const char *out_dir;           /* where a job may leave files (<state>/logs), NULL: none */
	const char *ftw_dir;           /* where kept FTW conversions live (<state>/ftw), NULL: none */
};

void ftd_kind_err_set(struct ftd_err *e, int status, const char *code, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

/* Check v, the value of row a's argument (field: "args.NAME", for messages), and append its
 * flags to b: 0, or -1 with err filled (400 a bad value, 403 a path, server or URL the
 * configuration does not allow). A GPU argument sets *gpu to its inventory position (or
 * FTD_KIND_GPU_ALL for "all", which only a kind with gpu_all takes) and adds no flag. */
int ftd_kindarg_add(const struct ftargs_spec *a, const json_t *v, const char *field, const struct ftd_kind_ctx *c,
		    struct ftd_argv *b, int gpu_all, int *gpu, struct ftd_err *err);
#endif
