/* jobflags: see jobflags.h. */
#include "jobflags.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define MAX_KINDS 16

/* each kind's table, made on first use; a thread that loses the race to store its copy frees it */
static struct ftargs_spec *_Atomic merged[MAX_KINDS];

const struct ftd_job_flag *ftd_job_flag_find(const char *command, const char *flag)
{
	if (!command || !flag || strncmp(flag, "--", 2))
		return NULL;
	for (const struct ftd_job_flag *f = ftd_job_flags; f->command; f++)
		if (!strcmp(f->command, command) && !strcmp(f->name, flag + 2))
			return f;
	return NULL;
}

static struct ftargs_spec *merge(const char *kind)
{
	const struct ftargs_spec *raw = ftargs_kind_spec(kind);
	size_t n = 0;
	while (raw[n].name)
		n++;
	struct ftargs_spec *m = calloc(n + 1, sizeof *m); /* the last row stays {NULL} */
	if (!m)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		m[i] = raw[i];
		const struct ftd_job_flag *f = ftd_job_flag_find(kind, raw[i].flag);
		if (!f)
			continue; /* tests/unit/test_ftbenchd_argspec.c holds every row to a flag */
		if (f->bounded) {
			m[i].lo = f->lo;
			m[i].hi = f->hi;
		}
		if (f->choices)
			m[i].choices = f->choices;
		if (f->max_items)
			m[i].max_items = f->max_items;
	}
	return m;
}

const struct ftargs_spec *ftd_job_args(const char *kind)
{
	for (size_t i = 0; kind && ftargs_kind_names[i] && i < MAX_KINDS; i++) {
		if (strcmp(ftargs_kind_names[i], kind))
			continue;
		struct ftargs_spec *m = atomic_load(&merged[i]), *none = NULL;
		if (m)
			return m;
		if (!(m = merge(kind)))
			return NULL;
		if (!atomic_compare_exchange_strong(&merged[i], &none, m)) {
			free(m);
			return none;
		}
		return m;
	}
	return NULL;
}
