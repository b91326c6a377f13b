/* ftbenchd journal: a job's record round-trips through its file; a torn or truncated file, a
 * temp file of an interrupted write and a stranger are skipped while the rest loads in
 * submission order; after a restart a job that was running becomes interrupted, is handed to
 * the caller first (to end what it left) and its record says so. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../daemon/journal.h"
#include "../../daemon/log.h"
#include "util/fsutil.h"
#include "../lib/tmpdir.h"

static char dir[] = "/tmp/ftd-journal-XXXXXX";

static struct ftd_job *mkjob(const char *id, unsigned long long seq, enum ftd_job_state st)
{
	struct ftd_job *j = ftd_job_new();
	assert_non_null(j);
	snprintf(j->id, sizeof j->id, "%s", id);
	j->seq = seq;
	j->kind = "cache-copy";
	j->kind_idx = 1;
	j->state = st;
	j->args = json_pack("{s:[i,i],s:s}", "cache_slots", 8, 16, "copy", "fused");
	j->argv = calloc(4, sizeof(char *));
	j->argv[0] = strdup("/w/ftbench");
	j->argv[1] = strdup("cache-copy");
	j->argv[2] = strdup("--result-fd=3");
	j->gpu_index = 1;
	snprintf(j->gpu_uuid, sizeof j->gpu_uuid, "GPU-1111");
	j->timeout_s = 600;
	j->created = 1700000000.25;
	j->pid = 4242;
	j->idem_key = strdup("key-1");
	j->req_canon = strdup("{\"kind\":\"cache-copy\"}");
	return j;
}

static void save(struct ftd_job *j)
{
	assert_int_equal(ftd_journal_save(dir, j), 0);
}

static void write_file(const char *name, const char *text)
{
	char path[512];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void clear_dir(void)
{
	assert_int_equal(tmpdir_clear(dir), 0);
}

static void load(struct ftd_job ***v, size_t *n, void (*cb)(struct ftd_job *, void *), void *ctx)
{
	assert_int_equal(ftd_journal_load(dir, cb, ctx, v, n), 0);
}

static void free_all(struct ftd_job **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		ftd_job_unref(v[i]);
	free(v);
}

static void test_round_trip(void **s)
{
	(void)s;
	clear_dir();
	struct ftd_job *j = mkjob("0123456789abcdef", 7, FTD_JOB_SUCCEEDED);
	j->started = 1700000001.5;
	j->finished = 1700000009.75;
	j->exit_status = 0;
	j->sig = -1;
	j->result = json_pack("{s:f}", "gbs", 23.5);
	j->profile_path = strdup("/p/GPU-1111.json");
	j->has_progress = 1;
	j->prog_done = 3;
	j->prog_total = 4;
	j->prog_label = strdup("sweep");
	save(j);
	json_t *before = ftd_journal_record(j);

	struct ftd_job **v;
	size_t n;
	load(&v, &n, NULL, NULL);
	assert_int_equal(n, 1);
	json_t *after = ftd_journal_record(v[0]);
	/* the duration of a finished job is fixed: the two records are equal field for field */
	if (!json_equal(before, after)) {
		char *a = json_dumps(before, JSON_SORT_KEYS), *b = json_dumps(after, JSON_SORT_KEYS);
		fail_msg("records differ:\n%s\n%s", a, b);
	}
	assert_string_equal(v[0]->kind, "cache-copy");
	assert_int_equal(v[0]->kind_idx, 1);
	assert_int_equal(v[0]->seq, 7);
	assert_int_equal(v[0]->pid, 4242);
	assert_string_equal(v[0]->argv[2], "--result-fd=3");
	assert_null(v[0]->argv[3]);
	assert_string_equal(v[0]->req_canon, j->req_canon);
	json_decref(before);
	json_decref(after);
	free_all(v, n);

	/* remove takes the record (and the log, profile copy and decode server logs) away */
	char dl[600];
	snprintf(dl, sizeof dl, "%s/%s.decode/ftbench-decode-x.abc", dir, j->id);
	assert_int_equal(ftfs_mkdir_p(dl, 0750), 0);
	strcat(dl, "/server.log");
	assert_int_equal(ftfs_write_atomic(dl, "x", 1, 0640), 0);
	ftd_journal_remove(dir, dir, j);
	load(&v, &n, NULL, NULL);
	assert_int_equal(n, 0);
	snprintf(dl, sizeof dl, "%s/%s.decode", dir, j->id);
	assert_int_equal(access(dl, F_OK), -1);
	free(v);
	ftd_job_unref(j);
}

static void test_torn_files(void **s)
{
	(void)s;
	clear_dir();
	struct ftd_job *a = mkjob("aaaaaaaaaaaaaaaa", 3, FTD_JOB_QUEUED), *b = mkjob("bbbbbbbbbbbbbbbb", 1, FTD_JOB_FAILED);
	save(a);
	save(b);
	/* a record cut short by a crash in the middle of a write that was not atomic */
	json_t *rec = ftd_journal_record(a);
	char *text = json_dumps(rec, JSON_COMPACT);
	text[strlen(text) / 2] = '\0';
	write_file("cccccccccccccccc.json", text);
	free(text);
	json_decref(rec);
	write_file("dddddddddddddddd.json", "");                       /* empty */
	write_file("eeeeeeeeeeeeeeee.json", "{\"id\":\"eeeeeeeeeeeeeeee\"}"); /* not a job */
	write_file("ffffffffffffffff.json", "{\"id\":\"ffffffffffffffff\",\"kind\":\"nope\",\"state\":\"queued\"}");
	write_file("aaaaaaaaaaaaaaaa.json.tmp.Xy12Ab", "{");             /* a temp file */
	write_file("notes.txt", "hello");

	struct ftd_job **v;
	size_t n;
	load(&v, &n, NULL, NULL);
	assert_int_equal(n, 2);
	/* submission order, whatever the directory's */
	assert_string_equal(v[0]->id, "bbbbbbbbbbbbbbbb");
	assert_string_equal(v[1]->id, "aaaaaaaaaaaaaaaa");
	assert_int_equal(v[1]->state, FTD_JOB_QUEUED);
	free_all(v, n);
	ftd_job_unref(a);
	ftd_job_unref(b);
	/* a directory that cannot be read is an error, not an empty journal */
	assert_int_equal(ftd_journal_load("/nonexistent/ftd-journal", NULL, NULL, &v, &n), -ENOENT);
}

static void count_running(struct ftd_job *j, void *ctx)
{
	/* handed over while still running, before it becomes interrupted */
	assert_int_equal(j->state, FTD_JOB_RUNNING);
	(*(int *)ctx)++;
}

/* a duration comes from the monotonic clock while the daemon saw the run (a wall clock
 * set back 2 days in the middle gives no negative figure), is journaled with the final state and
 * read back; a job with wall times only never gets a negative duration. */
static void test_duration_clock(void **s)
{
	(void)s;
	clear_dir();
	struct ftd_job *j = mkjob("00000000000000d1", 9, FTD_JOB_SUCCEEDED);
	j->started = 1700000000.0;
	j->finished = j->started - 2 * 86400 + 5; /* the wall clock went back 2 days meanwhile */
	j->started_ns = 1000000000ull;
	j->finished_ns = j->started_ns + 5000000000ull;
	assert_true(ftd_job_duration(j) > 4.99 && ftd_job_duration(j) < 5.01);
	j->dur_s = ftd_job_duration(j);
	save(j);
	struct ftd_job **v;
	size_t n;
	load(&v, &n, NULL, NULL);
	assert_int_equal(n, 1);
	assert_true(v[0]->started_ns == 0 && v[0]->dur_s > 4.99 && v[0]->dur_s < 5.01);
	assert_true(ftd_job_duration(v[0]) > 4.99 && ftd_job_duration(v[0]) < 5.01);
	v[0]->dur_s = -1; /* an old record without it: wall times, never below 0 */
	assert_true(ftd_job_duration(v[0]) == 0);
	free_all(v, n);
	ftd_job_unref(j);
	clear_dir();
}

static void test_restart_interrupts(void **s)
{
	(void)s;
	clear_dir();
	struct ftd_job *r = mkjob("1111111111111111", 1, FTD_JOB_RUNNING), *q = mkjob("2222222222222222", 2, FTD_JOB_QUEUED);
	r->started = 1700000001;
	save(r);
	save(q);
	int handed = 0;
	struct ftd_job **v;
	size_t n;
	load(&v, &n, count_running, &handed);
	assert_int_equal(handed, 1);
	assert_int_equal(n, 2);
	assert_int_equal(v[0]->state, FTD_JOB_INTERRUPTED);
	assert_true(v[0]->finished > 0);
	assert_string_equal(v[0]->error, "the daemon stopped while the job was running");
	assert_int_equal(v[1]->state, FTD_JOB_QUEUED);
	free_all(v, n);
	/* the record itself says interrupted now: a second restart hands nothing over */
	handed = 0;
	load(&v, &n, count_running, &handed);
	assert_int_equal(handed, 0);
	assert_int_equal(v[0]->state, FTD_JOB_INTERRUPTED);
	/* the replayed events of an interrupted job: its error, then its state */
	ftd_job_replay(v[0]);
	assert_int_equal(v[0]->nev, 2);
	assert_int_equal(v[0]->ev[0].type, FTD_EV_ERROR);
	assert_string_equal(v[0]->ev[1].data, "{\"state\":\"interrupted\"}");
	free_all(v, n);
	ftd_job_unref(r);
	ftd_job_unref(q);
}

int main(void)
{
	if (!mkdtemp(dir))
		return 1;
	ftd_log_set_level(FTD_LOG_ERR); /* the skipped files' warnings are expected */
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_torn_files),
		cmocka_unit_test(test_restart_interrupts),
		cmocka_unit_test(test_duration_clock),
	};
	int r = cmocka_run_group_tests(tests, NULL, NULL);
	if (tmpdir_remove(dir) != 0)
		r = r ? r : 1;
	return r;
}
