/* jobflags: the built-in job kinds' argument tables with the worker's own bounds. A row of
 * src/util/jobargs.c says what a job argument is to the daemon (its name, type, worker flag, and
 * whether it is required); the flag's row in the worker's option table (src/cli: `ftbench flags`)
 * says its bounds, choices and most items, and is the one place they are written: the build runs
 * scripts/gen-job-flags.py over the built ftbench and compiles its table (ftd_job_flags) in here.
 * A jobargs row keeps choices or an item count of its own only where its flag has none (a free
 * list the worker filters, which the daemon holds to the names it knows). */
#ifndef FTD_JOBFLAGS_H
#define FTD_JOBFLAGS_H
#include "util/jobargs.h"

/* One flag name (or alias) of a job kind's command. */
struct ftd_job_flag {
	const char *command; /* "bw" */
	const char *name;    /* "pcie-iters", without "--" */
	int bounded;         /* lo, hi hold the row's minimum and maximum */
	double lo, hi;
	const char *choices; /* "a|b", or NULL */
	int max_items;       /* lists: most items, or 0 (the row has no limit of its own) */
};
/* Generated: ends with {NULL}. */
extern const struct ftd_job_flag ftd_job_flags[];

/* The flag row of command for flag ("--pcie-iters"), or NULL. */
const struct ftd_job_flag *ftd_job_flag_find(const char *command, const char *flag);
/* kind's argument table (ftargs_kind_spec) with each row's bounds, choices and most items taken
 * from its flag's row; made on first use, then shared and never freed (thread-safe, lock-free).
 * NULL for a kind without a table, or when the copy cannot be allocated. */
const struct ftargs_spec *ftd_job_args(const char *kind);
#endif
