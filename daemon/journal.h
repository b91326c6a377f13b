/* journal: one file per job, <jobs-dir>/<id>.json, holding the job's record (its own
 * serializer: the API object minus links and queue position, plus seq, raw times, pid and the
 * canonical request; a finished job's event ids). Saved atomically (temp file, fsync, rename, fsync of the directory) on
 * every transition before it is acknowledged; loaded at start, where a job that was running
 * becomes interrupted. */
#ifndef FTD_JOURNAL_H
#define FTD_JOURNAL_H
#include <jansson.h>

#include "job.h"

#define FTD_JOURNAL_RECORD_MAX (64u << 20) /* a record file larger than this is not loaded */

/* The record of j (new reference, NULL when out of memory). */
json_t *ftd_journal_record(const struct ftd_job *j);
/* The job of a record (new job, refs 1), NULL when rec is not a job record. */
struct ftd_job *ftd_journal_from_record(const json_t *rec);

/* Write j's record to dir atomically. 0 or -errno. */
int ftd_journal_save(const char *dir, const struct ftd_job *j);
/* Remove j's record from dir and its log, profile copy and decode server logs from logs_dir. */
void ftd_journal_remove(const char *dir, const char *logs_dir, const struct ftd_job *j);

/* Load every record of dir, oldest first (by seq). A job that was running is handed to
 * on_running (may be NULL: e.g. to end what it left) and becomes interrupted, its record saved
 * again. Files that are not records (a torn write, a temp file) are skipped with a warning.
 * Returns 0 with *out (new array of new jobs, free with free() after taking them) and *n, or
 * -errno when dir cannot be read. */
int ftd_journal_load(const char *dir, void (*on_running)(struct ftd_job *j, void *ctx), void *ctx,
		     struct ftd_job ***out, size_t *n);

/* The event id reservation (<state-dir>/event-ids, one decimal line): every id handed out is
 * below the limit saved there. Load: 0 with *limit (0 when the file is missing), -EINVAL when
 * it holds no number, or -errno. Save: atomically, 0 or -errno. */
int ftd_journal_event_ids_load(const char *path, unsigned long long *limit);
int ftd_journal_event_ids_save(const char *path, unsigned long long limit);
#endif
