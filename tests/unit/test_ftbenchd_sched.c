/* ftbenchd sched: which queued jobs start, from the jobs and their resources alone (no daemon,
 * no clock): FIFO without starvation, GPU vs host exclusivity, max-running, the queue limit, a
 * cancelled or timed-out job's resources, and the outcome a timeout or a cancel gives a run. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "../../daemon/job.h"
#include "../../daemon/sched.h"

#define Q FTD_SCHED_QUEUED
#define R FTD_SCHED_RUNNING
#define X FTD_SCHED_OTHER

/* The picks of v as a string of positions ("0,2"), for readable assertions. */
static const char *picks(const struct ftd_sched_job *v, int n, long max_running)
{
	static char out[256];
	int start[64];
	int k = ftd_sched_pick(v, n, max_running, start);
	out[0] = '\0';
	for (int i = 0; i < k; i++)
		snprintf(out + strlen(out), sizeof out - strlen(out), "%s%d", i ? "," : "", start[i]);
	return out;
}

static void test_fifo_disjoint_gpus(void **s)
{
	(void)s;
	/* jobs on disjoint GPUs start side by side; a second job on a GPU waits for the first */
	struct ftd_sched_job v[] = {{Q, 0, 0}, {Q, 1, 0}, {Q, 0, 0}, {Q, -1, 0}};
	assert_string_equal(picks(v, 4, 64), "0,1,3");
	/* the GPU is free again when its job ends: the waiting one starts */
	v[0].state = X;
	v[1].state = R;
	v[3].state = R;
	assert_string_equal(picks(v, 4, 64), "2");
}

static void test_no_starvation(void **s)
{
	(void)s;
	/* a host-exclusive job waits behind a running shared job; the shared jobs queued after it
	 * must not overtake it, or a steady stream of them would starve it */
	struct ftd_sched_job v[] = {{R, 0, 0}, {Q, 1, 1}, {Q, 1, 0}, {Q, -1, 0}, {Q, 2, 0}};
	assert_string_equal(picks(v, 5, 64), "");
	/* the running job ends: the host-exclusive one starts, alone */
	v[0].state = X;
	assert_string_equal(picks(v, 5, 64), "1");
	/* a job that waits for its GPU reserves it: a later job on that GPU does not pass it */
	struct ftd_sched_job w[] = {{R, 0, 0}, {Q, 0, 0}, {Q, 0, 0}, {Q, 1, 0}};
	assert_string_equal(picks(w, 4, 64), "3");
}

static void test_gpu_vs_host_exclusive(void **s)
{
	(void)s;
	/* a host-exclusive job (bw, load-weights) runs alone: nothing starts beside it ... */
	struct ftd_sched_job v[] = {{R, 0, 1}, {Q, 1, 0}, {Q, -1, 0}};
	assert_string_equal(picks(v, 3, 64), "");
	/* ... and it does not start beside anything */
	struct ftd_sched_job w[] = {{R, 1, 0}, {Q, 0, 1}};
	assert_string_equal(picks(w, 2, 64), "");
	/* two host-exclusive jobs on different GPUs: one after the other */
	struct ftd_sched_job x[] = {{Q, 0, 1}, {Q, 1, 1}};
	assert_string_equal(picks(x, 2, 64), "0");
	/* a job without a GPU shares the host with GPU jobs */
	struct ftd_sched_job y[] = {{R, 0, 0}, {Q, -1, 0}, {Q, -1, 0}};
	assert_string_equal(picks(y, 3, 64), "1,2");
	/* an index beyond the table holds no GPU */
	struct ftd_sched_job z[] = {{R, FTD_SCHED_MAX_GPUS, 0}, {Q, FTD_SCHED_MAX_GPUS, 0}};
	assert_string_equal(picks(z, 2, 64), "1");
}

static void test_max_running(void **s)
{
	(void)s;
	struct ftd_sched_job v[] = {{R, 0, 0}, {Q, 1, 0}, {Q, 2, 0}, {Q, 3, 0}};
	assert_string_equal(picks(v, 4, 3), "1,2");
	/* at the limit nothing starts and nothing overtakes */
	assert_string_equal(picks(v, 4, 1), "");
	v[0].state = X;
	assert_string_equal(picks(v, 4, 1), "1");
}

static void test_queue_limit(void **s)
{
	(void)s;
	struct ftd_sched_job v[] = {{R, 0, 0}, {Q, 0, 0}, {X, 1, 0}, {Q, 1, 0}};
	assert_int_equal(ftd_sched_admit(v, 4, 3), 0);
	assert_int_equal(ftd_sched_admit(v, 4, 2), -EAGAIN); /* running and finished jobs do not count */
	assert_int_equal(ftd_sched_admit(v, 0, 1), 0);
	assert_int_equal(ftd_sched_admit(v, 4, 0), -EAGAIN);
	/* exactly the n jobs given are counted: queued ones on either side of the slice are not */
	struct ftd_sched_job w[] = {{Q, 0, 0}, {Q, 0, 0}, {R, 1, 0}, {Q, 1, 0}, {Q, 0, 0}};
	assert_int_equal(ftd_sched_admit(w + 1, 3, 3), 0);
	assert_int_equal(ftd_sched_admit(w + 1, 3, 2), -EAGAIN);
	assert_int_equal(ftd_sched_admit(w + 2, 1, 1), 0);
}

static void test_cancel_and_timeout(void **s)
{
	(void)s;
	/* a queued job cancelled holds nothing and reserves nothing */
	struct ftd_sched_job v[] = {{R, 0, 0}, {Q, 1, 1}, {Q, 1, 0}};
	assert_string_equal(picks(v, 3, 64), "");
	v[1].state = X; /* cancelled while queued */
	assert_string_equal(picks(v, 3, 64), "2");
	/* a running job that timed out (or was cancelled) frees its GPU once it is final */
	struct ftd_sched_job w[] = {{R, 0, 1}, {Q, 0, 0}};
	assert_string_equal(picks(w, 2, 64), "");
	w[0].state = X;
	assert_string_equal(picks(w, 2, 64), "1");

	/* the outcome of a run: a timeout wins over everything, then the daemon's stop, then a cancel */
	char msg[256];
	struct ftd_job_end e = {.timed_out = 1, .cancelled = 1, .exit_status = 143, .sig = 15};
	assert_int_equal(ftd_job_outcome(&e, 30, msg, sizeof msg), FTD_JOB_TIMED_OUT);
	assert_string_equal(msg, "timed out after 30 s");
	e.timed_out = 0;
	assert_int_equal(ftd_job_outcome(&e, 30, msg, sizeof msg), FTD_JOB_CANCELLED);
	assert_string_equal(msg, "cancelled");
	e.daemon_stopping = 1;
	assert_int_equal(ftd_job_outcome(&e, 30, msg, sizeof msg), FTD_JOB_INTERRUPTED);
	/* a run that finished with its result before the daemon's stop reached it succeeded */
	struct ftd_job_end ok = {.daemon_stopping = 1, .exit_status = 0, .sig = -1, .has_result = 1};
	assert_int_equal(ftd_job_outcome(&ok, 30, msg, sizeof msg), FTD_JOB_SUCCEEDED);
	assert_string_equal(msg, "");
	struct ftd_job_end none = {.exit_status = 0, .sig = -1};
	assert_int_equal(ftd_job_outcome(&none, 30, msg, sizeof msg), FTD_JOB_FAILED);
	assert_string_equal(msg, "the worker exited without a result");
	struct ftd_job_end killed = {.exit_status = 137, .sig = 9, .has_result = 1};
	assert_int_equal(ftd_job_outcome(&killed, 30, msg, sizeof msg), FTD_JOB_FAILED);
	assert_non_null(strstr(msg, "signal 9"));
	struct ftd_job_end proto = {.proto_err = 1, .exit_status = 0, .sig = -1, .has_result = 1};
	assert_int_equal(ftd_job_outcome(&proto, 30, msg, sizeof msg), FTD_JOB_FAILED);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fifo_disjoint_gpus), cmocka_unit_test(test_no_starvation),
		cmocka_unit_test(test_gpu_vs_host_exclusive), cmocka_unit_test(test_max_running),
		cmocka_unit_test(test_queue_limit), cmocka_unit_test(test_cancel_and_timeout),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
