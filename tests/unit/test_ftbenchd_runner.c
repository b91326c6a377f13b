/* ftbenchd runner: retention walks the job list and takes finished jobs off it: by count
 * (--retain-jobs, the oldest first) and by age (--retain-age). Every shape of list, pruned jobs
 * next to each other, at the head, the tail, between queued and running ones: after it the list
 * is exactly the jobs kept, in order (head, tail, count and every link), each pruned job is marked
 * removed and its journal record and log are gone, the kept ones' are there. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include "../../daemon/daemon.h"
#include "../../daemon/journal.h"
#include "../../daemon/log.h"
#include "../../daemon/metrics.h"
#include "../../daemon/runner.h"
#include "util/fsutil.h"
#include "util/timeutil.h"
#include "../lib/tmpdir.h"

static char dir[256];
static char jobs_dir[300], logs_dir[300];

static int setup(void **s)
{
	(void)s;
	if (tmpdir_make(dir, sizeof dir, "ftd-runner") < 0)
		return -1;
	snprintf(jobs_dir, sizeof jobs_dir, "%s/jobs", dir);
	snprintf(logs_dir, sizeof logs_dir, "%s/logs", dir);
	if (ftfs_mkdir_p(jobs_dir, 0750) < 0 || ftfs_mkdir_p(logs_dir, 0750) < 0)
		return -1;
	ftd.jobs_dir = jobs_dir;
	ftd.logs_dir = logs_dir;
	ftd.start_ns = fttime_now_ns();
	ftd.start_wall = fttime_wall_epoch();
	return 0;
}

static int teardown(void **s)
{
	(void)s;
	return tmpdir_remove(dir);
}

static int file_there(const char *d, const char *id, const char *ext)
{
	char p[600];
	snprintf(p, sizeof p, "%s/%s%s", d, id, ext);
	return access(p, F_OK) == 0;
}

/* shape: one letter a job, oldest first: F finished (now), O finished long ago, Q queued,
 * R running; keep: '1' where the job must stay. */
struct shape {
	const char *jobs, *keep;
	long retain_jobs, retain_age;
};

static void check_shape(const struct shape *c)
{
	size_t n = strlen(c->jobs);
	struct ftd_job *v[16];
	ftd.jobs = (struct ftd_jobs){0};
	ftd.cfg.retain_jobs = c->retain_jobs;
	ftd.cfg.retain_age = c->retain_age;
	uint64_t now = fttime_now_ns();
	for (size_t i = 0; i < n; i++) {
		struct ftd_job *j = ftd_job_new();
		assert_non_null(j);
		snprintf(j->id, sizeof j->id, "%016zx", i + 1);
		j->seq = i + 1;
		j->kind = "cache-copy";
		switch (c->jobs[i]) {
		case 'F':
			j->state = FTD_JOB_SUCCEEDED;
			j->finished_ns = now - 1000000000ull; /* a second ago, on this run's clock */
			break;
		case 'O':
			j->state = FTD_JOB_FAILED;
			j->finished = fttime_wall_epoch() - 86400; /* a day ago, from the journal */
			break;
		case 'Q':
			j->state = FTD_JOB_QUEUED;
			break;
		default:
			j->state = FTD_JOB_RUNNING;
		}
		assert_int_equal(ftd_journal_save(jobs_dir, j), 0);
		char lp[600];
		snprintf(lp, sizeof lp, "%s/%s.log", logs_dir, j->id);
		assert_int_equal(tmpdir_put(lp, "log\n", 4), 0);
		j->refs++; /* the test's own: a pruned job stays readable (and is not freed under the walk) */
		ftd_jobs_append(&ftd.jobs, j);
		v[i] = j;
	}
	ftd_runner_retention();
	/* the list, link by link: exactly the kept jobs in order */
	struct ftd_job *want[16];
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (c->keep[i] == '1')
			want[k++] = v[i];
	struct ftd_job *p = ftd.jobs.head;
	for (size_t i = 0; i < k; i++) {
		if (p != want[i])
			fail_msg("%s (retain %ld jobs, %ld s): list position %zu holds job %s, want %s", c->jobs, c->retain_jobs,
				 c->retain_age, i, p ? p->id : "(end)", want[i]->id);
		p = p->next;
	}
	if (p)
		fail_msg("%s: job %s after the kept ones", c->jobs, p->id);
	assert_ptr_equal(ftd.jobs.tail, k ? want[k - 1] : NULL);
	assert_int_equal(ftd.jobs.n, (int)k);
	for (size_t i = 0; i < n; i++) {
		int kept = c->keep[i] == '1';
		if (v[i]->removed == kept || file_there(jobs_dir, v[i]->id, ".json") != kept ||
		    file_there(logs_dir, v[i]->id, ".log") != kept)
			fail_msg("%s (retain %ld jobs, %ld s): job %zu (%c) should be %s: removed %d, record %d, log %d", c->jobs,
				 c->retain_jobs, c->retain_age, i, c->jobs[i], kept ? "kept" : "pruned", v[i]->removed,
				 file_there(jobs_dir, v[i]->id, ".json"), file_there(logs_dir, v[i]->id, ".log"));
	}
	/* a job appended after it joins the list where it should */
	struct ftd_job *x = ftd_job_new();
	snprintf(x->id, sizeof x->id, "00000000000000ff");
	x->state = FTD_JOB_QUEUED;
	ftd_jobs_append(&ftd.jobs, x);
	assert_ptr_equal(ftd.jobs.tail, x);
	if (k)
		assert_ptr_equal(want[k - 1]->next, x);
	else
		assert_ptr_equal(ftd.jobs.head, x);
	/* done: every job off the list, the test's references dropped */
	while (ftd.jobs.head)
		ftd_jobs_unlink(&ftd.jobs, NULL, ftd.jobs.head);
	for (size_t i = 0; i < n; i++)
		ftd_job_unref(v[i]);
	char cmd[700];
	snprintf(cmd, sizeof cmd, "rm -f %s/*.json %s/*.log", jobs_dir, logs_dir);
	assert_int_equal(system(cmd), 0);
}

static void test_retention_shapes(void **s)
{
	(void)s;
	static const struct shape cases[] = {
		{"FFFF", "0011", 2, 30 * 86400},      /* two pruned in a row at the head */
		{"FFFFF", "00001", 1, 30 * 86400},    /* four in a row */
		{"FFFFF", "00000", 0, 30 * 86400},    /* every one: head and tail */
		{"QFFFF", "10011", 2, 30 * 86400},    /* after a queued one */
		{"FFQFF", "00101", 1, 30 * 86400},    /* around a queued one */
		{"RFFQFFR", "1001111", 2, 30 * 86400}, /* between running and queued ones */
		{"QFF", "100", 0, 30 * 86400},        /* at the tail */
		{"FFF", "111", 3, 30 * 86400},        /* none over the count */
		{"OOFF", "0011", 10, 3600},           /* by age: the two old ones, in a row */
		{"FOOQOF", "100101", 10, 3600},       /* by age, between the kept ones */
		{"OFOF", "0101", 10, 3600},           /* alternating */
		{"OOOO", "0000", 10, 3600},           /* every one by age */
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		check_shape(&cases[i]);
}

/* The job duration histogram: a duration equal to a bound counts in that bound's bucket (le),
 * just above it in the next, beyond the last bound in +Inf; nothing lands in another kind's row. */
static void test_duration_buckets(void **s)
{
	(void)s;
	static const double bounds[] = {1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 14400};
	for (int b = 0; b <= 11; b++)
		for (int above = 0; above < 3; above++) {
			memset(ftd.dur_buckets, 0, sizeof ftd.dur_buckets);
			memset(ftd.dur_count, 0, sizeof ftd.dur_count);
			struct ftd_job *j = ftd_job_new();
			j->kind_idx = 1;
			j->state = FTD_JOB_SUCCEEDED;
			/* at the bound, a little above the one before, far beyond the last */
			j->dur_s = b < 11 ? (above == 0 ? bounds[b] : above == 1 ? (b ? bounds[b - 1] + 1e-3 : 0.0) : bounds[b] * 0.999)
					  : (above == 0 ? 14400.001 : above == 1 ? 1e7 : 1e300);
			ftd_metrics_job_finished(j);
			for (int k = 0; k < FTD_KIND_MAX; k++)
				for (int i = 0; i < FTD_DAEMON_DUR_BUCKETS; i++)
					if (ftd.dur_buckets[k][i] != (k == 1 && i == b))
						fail_msg("a job of %g s: bucket [%d][%d] holds %llu (want it in [1][%d])", j->dur_s, k, i,
							 ftd.dur_buckets[k][i], b);
			assert_int_equal(ftd.dur_count[1], 1);
			ftd_job_unref(j);
		}
}

/* A logged message loses its trailing newlines, all of them, even when it is nothing else: one
 * line each. */
static void test_log_lines(void **s)
{
	(void)s;
	char path[600];
	snprintf(path, sizeof path, "%s/stderr.txt", dir);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600), saved = dup(2);
	assert_true(fd >= 0 && saved >= 0);
	fflush(stderr);
	dup2(fd, 2);
	ftd_log(FTD_LOG_ERR, "%s", "\n");
	ftd_log(FTD_LOG_ERR, "%s", "two\n\n");
	ftd_log(FTD_LOG_ERR, "%s", "");
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	char buf[256] = "";
	ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
	close(fd);
	assert_true(n >= 0);
	buf[n] = '\0';
	assert_string_equal(buf, "<3>ftbenchd: \n<3>ftbenchd: two\n<3>ftbenchd: \n");
}

int main(void)
{
	ftd_log_set_level(FTD_LOG_ERR);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_retention_shapes),
		cmocka_unit_test(test_duration_buckets),
		cmocka_unit_test(test_log_lines),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
