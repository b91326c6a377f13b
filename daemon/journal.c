/* journal: one file per job, <state-dir>/jobs/<id>.json, rewritten atomically (temp file,
 * fsync, rename, fsync of the directory) on every transition before it is acknowledged. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ftbenchd.h"
#include "util/fsutil.h"

int ftd_journal_write(const struct ftd_job *j)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s.json", ftd.jobs_dir, j->id);
	json_t *rec = ftd_job_record(j);
	char *s = rec ? json_dumps(rec, JSON_COMPACT) : NULL;
	json_decref(rec);
	if (!s)
		return -ENOMEM;
	int r = ftfs_write_atomic(path, s, strlen(s), 0640);
	free(s);
	return r;
}

void ftd_journal_remove(const struct ftd_job *j)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s.json", ftd.jobs_dir, j->id);
	unlink(path);
	snprintf(path, sizeof path, "%s/%s.log", ftd.logs_dir, j->id);
	unlink(path);
	snprintf(path, sizeof path, "%s/%s.profile.json", ftd.logs_dir, j->id);
	unlink(path);
}
