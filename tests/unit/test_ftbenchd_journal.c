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

static int reserves;

static void reserve3(struct ftd_jobs *l)
{
	reserves++;
	l->ev_limit = l->next_ev + 3;
}

/* Event ids: one counter for the whole list, so ids only grow and no two events share one;
 * more are reserved (the callback) before the first id and each time the reserved ones run out;
 * compaction keeps the ids of what it keeps. A finished job's record holds the ids of its
 * result, error and final state, and the job loaded from it replays them with those ids; a record
 * without them (or with them out of order) replays with new ids, and says so. The reservation
 * file reads back what was saved; a missing one reads 0, anything but a number -EINVAL. */
static void test_event_ids(void **s)
{
	(void)s;
	clear_dir();
	struct ftd_jobs l = {.ev_reserve = reserve3};
	struct ftd_job *a = mkjob("00000000000000e1", 1, FTD_JOB_RUNNING), *b = mkjob("00000000000000e2", 2, FTD_JOB_RUNNING);
	ftd_jobs_append(&l, a);
	ftd_jobs_append(&l, b);
	reserves = 0;
	for (int i = 0; i < 4; i++) {
		ftd_job_event(a, FTD_EV_PROGRESS, json_pack("{s:i}", "done", i));
		ftd_job_event(b, FTD_EV_PROGRESS, json_pack("{s:i}", "done", i));
	}
	for (size_t i = 0; i < 4; i++) {
		assert_int_equal(a->ev[i].id, 2 * i + 1);
		assert_int_equal(b->ev[i].id, 2 * i + 2);
	}
	assert_int_equal(reserves, 3); /* before ids 1, 4 and 7 */
	assert_int_equal(l.next_ev, 9);
	/* a finished job: its result and error, its final state's id taken before the record */
	a->result = json_pack("{s:f}", "gbs", 1.5);
	ftd_job_event(a, FTD_EV_RESULT, json_pack("{s:O}", "result", a->result));
	ftd_job_set_error(a, "worker said no");
	ftd_job_error_event(a);
	a->state = FTD_JOB_FAILED;
	a->final_ev_id = ftd_jobs_event_id(a);
	ftd_job_event(b, FTD_EV_PROGRESS, json_pack("{s:i}", "done", 9)); /* another job's, in between */
	ftd_job_event_as(a, FTD_EV_STATE, json_pack("{s:s}", "state", "failed"), a->final_ev_id);
	assert_int_equal(a->final_ev_id, 11);
	assert_int_equal(b->ev[b->nev - 1].id, 12);
	ftd_job_compact_events(a);
	assert_int_equal(a->nev, 4); /* the last progress, result, error, state: their ids as they were */
	assert_int_equal(a->ev[0].id, 7);
	assert_int_equal(a->ev[1].id, 9);
	assert_int_equal(a->ev[2].id, 10);
	assert_int_equal(a->ev[3].id, 11);
	save(a);
	struct ftd_job **v;
	size_t n;
	load(&v, &n, NULL, NULL);
	assert_int_equal(n, 1);
	assert_int_equal(v[0]->rec_ev[0], 9);
	assert_int_equal(v[0]->rec_ev[1], 10);
	assert_int_equal(v[0]->rec_ev[2], 11);
	struct ftd_jobs l2 = {.next_ev = 100, .ev_reserve = reserve3};
	ftd_jobs_append(&l2, v[0]);
	assert_int_equal(ftd_job_replay(v[0]), 0);
	assert_int_equal(v[0]->nev, 3);
	assert_int_equal(v[0]->ev[0].type, FTD_EV_RESULT);
	assert_int_equal(v[0]->ev[0].id, 9);
	assert_int_equal(v[0]->ev[1].type, FTD_EV_ERROR);
	assert_int_equal(v[0]->ev[1].id, 10);
	assert_int_equal(v[0]->ev[2].id, 11);
	assert_string_equal(v[0]->ev[2].data, "{\"state\":\"failed\"}");
	assert_int_equal(l2.next_ev, 100); /* none taken */
	/* the record of the replayed job holds the same ids again */
	json_t *rec = ftd_journal_record(v[0]);
	json_t *ids = json_object_get(rec, "event_ids");
	assert_int_equal(json_integer_value(json_object_get(ids, "result")), 9);
	assert_int_equal(json_integer_value(json_object_get(ids, "error")), 10);
	assert_int_equal(json_integer_value(json_object_get(ids, "state")), 11);
	json_decref(rec);
	ftd_jobs_unlink(&l2, NULL, v[0]);
	free(v);
	/* each recorded id missing or out of order in turn: every event replayed with a new id */
	static const unsigned long long bad[][3] = {{0, 10, 11}, {9, 0, 11}, {9, 10, 0}, {10, 9, 11}, {9, 11, 10}, {12, 10, 11}, {9, 10, 11}};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		load(&v, &n, NULL, NULL);
		memcpy(v[0]->rec_ev, bad[i], sizeof bad[i]);
		if (i == 6) { /* every id, but no result to give the first one to */
			json_decref(v[0]->result);
			v[0]->result = NULL;
		}
		struct ftd_jobs l3 = {.next_ev = 100};
		ftd_jobs_append(&l3, v[0]);
		assert_int_equal(ftd_job_replay(v[0]), 1);
		size_t ne = i == 6 ? 2 : 3;
		assert_int_equal(v[0]->nev, ne);
		for (size_t k = 0; k < ne; k++)
			assert_int_equal(v[0]->ev[k].id, 100 + k);
		assert_int_equal(v[0]->final_ev_id, 100 + ne - 1);
		ftd_jobs_unlink(&l3, NULL, v[0]);
		free(v);
	}
	/* a running job has no event ids in its record */
	rec = ftd_journal_record(b);
	assert_null(json_object_get(rec, "event_ids"));
	json_decref(rec);
	ftd_jobs_unlink(&l, NULL, a);
	ftd_jobs_unlink(&l, NULL, b);

	/* the reservation file */
	char path[600];
	unsigned long long lim = 7;
	snprintf(path, sizeof path, "%s/event-ids", dir);
	assert_int_equal(ftd_journal_event_ids_load(path, &lim), 0);
	assert_int_equal(lim, 0);
	assert_int_equal(ftd_journal_event_ids_save(path, 123456789012ull), 0);
	assert_int_equal(ftd_journal_event_ids_load(path, &lim), 0);
	assert_int_equal(lim, 123456789012ull);
	static const char *const junk[] = {"x\n", "-5\n", "12abc\n", "99999999999999999999999\n", " \n"};
	for (size_t i = 0; i < sizeof junk / sizeof junk[0]; i++) {
		write_file("event-ids", junk[i]);
		lim = 7;
		assert_int_equal(ftd_journal_event_ids_load(path, &lim), -EINVAL);
	}
	unlink(path);
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
		cmocka_unit_test(test_event_ids),
	};
	int r = cmocka_run_group_tests(tests, NULL, NULL);
	if (tmpdir_remove(dir) != 0)
		r = r ? r : 1;
	return r;
}
