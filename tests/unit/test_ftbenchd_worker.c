/* ftbenchd worker: one real child (/bin/sh) per case. Its fd-3 lines come to the line callback
 * whole and in order, a line over max_line is a protocol error (once) and the child is
 * terminated, the log keeps log_max bytes and says it was cut, the exited callback comes only
 * after the child was reaped and both pipes reached EOF, a timeout sends SIGTERM and then
 * SIGKILL after the grace, and a program that cannot run is an error of the start. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../daemon/worker.h"
#include "util/fsutil.h"
#include "util/timeutil.h"
#include "../lib/tmpdir.h"

static char dir[] = "/tmp/ftd-worker-XXXXXX";

struct seen {
	char lines[8][128];
	int nlines, proto, exited;
	char what[128];
	int exit_status, sig, timed_out;
};

static void on_line(void *ctx, struct ftd_worker *w, char *line, size_t len)
{
	(void)w;
	struct seen *s = ctx;
	assert_int_equal(strlen(line), len);
	if (s->nlines < 8)
		snprintf(s->lines[s->nlines], sizeof s->lines[0], "%s", line);
	s->nlines++;
}

static void on_proto(void *ctx, struct ftd_worker *w, const char *what)
{
	(void)w;
	struct seen *s = ctx;
	s->proto++;
	snprintf(s->what, sizeof s->what, "%s", what);
}

static void on_exited(void *ctx, struct ftd_worker *w)
{
	struct seen *s = ctx;
	/* reaped and both pipes at EOF */
	assert_true(w->reaped && w->rfd_eof && w->ofd_eof);
	s->exited++;
	s->exit_status = w->exit_status;
	s->sig = w->sig;
	s->timed_out = w->timed_out;
	ftd_worker_free(w);
}

static const struct ftd_worker_cb cb = {on_line, on_proto, on_exited};

/* Run `sh -c script` as a worker to its end: poll its pipes, reap it, drive its timers. */
static void run(const char *script, size_t max_line, long log_max, long timeout_s, struct seen *s)
{
	char log[256], why[512];
	snprintf(log, sizeof log, "%s/job.log", dir);
	char *argv[] = {"/bin/sh", "-c", (char *)script, NULL};
	struct ftd_worker_spec spec = {.argv = argv, .job_id = "00aa00aa00aa00aa", .gpus = "GPU-X", .log_path = log,
				       .max_line = max_line, .log_max = log_max, .timeout_s = timeout_s, .cb = &cb,
				       .ctx = s};
	memset(s, 0, sizeof *s);
	struct ftd_worker *w = ftd_worker_start(&spec, why, sizeof why);
	if (!w)
		fail_msg("start: %s", why);
	uint64_t give_up = fttime_now_ns() + 30ull * 1000000000ull;
	while (!s->exited) {
		assert_true(fttime_now_ns() < give_up);
		struct pollfd pfd[2];
		int n = ftd_worker_pollfds(w, pfd);
		uint64_t next = UINT64_MAX;
		ftd_worker_timers(w, fttime_now_ns(), 1, &next);
		poll(pfd, (nfds_t)n, 20);
		for (int i = 0; i < n; i++)
			if (pfd[i].revents)
				ftd_worker_io(w, pfd[i].fd, 1);
		int st;
		if (!w->reaped && waitpid(w->pid, &st, WNOHANG) == w->pid)
			ftd_worker_reaped(w, st, fttime_now_ns());
		ftd_worker_check_done(w, fttime_now_ns(), 1); /* may free w through on_exited */
	}
}

static char *read_log(void)
{
	char path[256], *text;
	size_t len;
	snprintf(path, sizeof path, "%s/job.log", dir);
	assert_int_equal(ftfs_read_file(path, 1 << 20, &text, &len), 0);
	return text;
}

static void test_lines_log_and_exit(void **st)
{
	(void)st;
	struct seen s;
	run("printf '{\"a\":1}\\n\\n{\"b\":2}\\n' >&3; echo out; echo err >&2; "
	    "echo \"$FTBENCHD_JOB_ID $CUDA_VISIBLE_DEVICES ${NOTIFY_SOCKET-unset}\"; exit 3",
	    1024, 4096, 60, &s);
	assert_int_equal(s.nlines, 2); /* the empty line is skipped */
	assert_string_equal(s.lines[0], "{\"a\":1}");
	assert_string_equal(s.lines[1], "{\"b\":2}");
	assert_int_equal(s.proto, 0);
	assert_int_equal(s.exited, 1);
	assert_int_equal(s.exit_status, 3);
	assert_int_equal(s.sig, -1);
	char *log = read_log();
	assert_non_null(strstr(log, "out\n"));
	assert_non_null(strstr(log, "err\n"));
	assert_non_null(strstr(log, "00aa00aa00aa00aa GPU-X unset"));
	free(log);
}

static void test_size_checks(void **st)
{
	(void)st;
	struct seen s;
	/* a line over max_line: one protocol error, the child terminated, later lines not handed on */
	run("printf '{\"ok\":1}\\n%0200d\\n{\"late\":1}\\n' 0 >&3; sleep 30", 64, 4096, 60, &s);
	assert_int_equal(s.nlines, 1);
	assert_int_equal(s.proto, 1);
	assert_string_equal(s.what, "a line over max-result-line bytes");
	assert_int_equal(s.sig, SIGTERM);
	/* a last line without its newline */
	run("printf '{\"x\":1}' >&3", 64, 4096, 60, &s);
	assert_int_equal(s.nlines, 0);
	assert_string_equal(s.what, "a last line without a newline");
	/* the log keeps log_max bytes and says it was cut */
	run("i=0; while [ $i -lt 200 ]; do echo 0123456789012345678901234567890123456789; i=$((i+1)); done", 64, 4096,
	    60, &s);
	char *log = read_log();
	assert_non_null(strstr(log, "[ftbenchd: log truncated at log-max bytes]"));
	assert_int_equal(strlen(log), 4096 + strlen("\n[ftbenchd: log truncated at log-max bytes]\n"));
	free(log);
}

static void test_timeout_term_then_kill(void **st)
{
	(void)st;
	struct seen s;
	/* SIGTERM at the timeout ... */
	run("sleep 30", 64, 4096, 1, &s);
	assert_int_equal(s.timed_out, 1);
	assert_int_equal(s.sig, SIGTERM);
	assert_int_equal(s.exit_status, 128 + SIGTERM);
	/* ... and SIGKILL after the grace when the child ignores it */
	run("trap '' TERM; while :; do sleep 0.1; done", 64, 4096, 1, &s);
	assert_int_equal(s.timed_out, 1);
	assert_int_equal(s.sig, SIGKILL);
}

static void test_cannot_start(void **st)
{
	(void)st;
	char log[256], why[512];
	snprintf(log, sizeof log, "%s/job.log", dir);
	char *argv[] = {"/nonexistent/ftbench", "bw", NULL};
	struct ftd_worker_spec spec = {.argv = argv, .log_path = log, .max_line = 64, .log_max = 64, .timeout_s = 1,
				       .cb = &cb};
	assert_null(ftd_worker_start(&spec, why, sizeof why));
	assert_string_equal(why, "cannot execute the worker /nonexistent/ftbench: No such file or directory");
	snprintf(log, sizeof log, "%s/no/such/dir/job.log", dir);
	argv[0] = "/bin/true";
	assert_null(ftd_worker_start(&spec, why, sizeof why));
	assert_non_null(strstr(why, "cannot open the job log"));
}

/* A daemon started with stdin closed (fd 0 free): the job log is opened as fd 0, which is a log
 * like any other: the worker starts, runs and its output is logged. */
static void test_log_on_fd_0(void **st)
{
	(void)st;
	struct seen s;
	int saved = dup(0);
	assert_true(saved > 0);
	close(0);
	run("echo on-fd-0; printf '{\"z\":1}\\n' >&3", 64, 4096, 60, &s);
	assert_int_equal(dup2(saved, 0), 0);
	close(saved);
	assert_int_equal(s.exited, 1);
	assert_int_equal(s.exit_status, 0);
	assert_int_equal(s.nlines, 1);
	char *log = read_log();
	assert_non_null(strstr(log, "on-fd-0\n"));
	free(log);
}

/* The next wake-up a running worker asks for is its timeout, not now: a daemon with a job running
 * sleeps until something happens (no busy loop while the child has not been reaped). */
static void test_timers_while_running(void **st)
{
	(void)st;
	char log[256], why[512];
	struct seen s = {0};
	snprintf(log, sizeof log, "%s/job.log", dir);
	char *argv[] = {"/bin/sh", "-c", "sleep 30", NULL};
	struct ftd_worker_spec spec = {.argv = argv, .job_id = "00bb00bb00bb00bb", .gpus = "", .log_path = log,
				       .max_line = 64, .log_max = 4096, .timeout_s = 60, .cb = &cb, .ctx = &s};
	struct ftd_worker *w = ftd_worker_start(&spec, why, sizeof why);
	if (!w)
		fail_msg("start: %s", why);
	uint64_t now = fttime_now_ns(), next = UINT64_MAX;
	assert_int_equal(ftd_worker_timers(w, now, 1, &next), 0);
	if (next < now + 50ull * 1000000000ull)
		fail_msg("a worker with 60 s to run asks to be woken in %.3f s", ((double)next - (double)now) / 1e9);
	ftd_worker_terminate(w, 1);
	uint64_t give_up = fttime_now_ns() + 30ull * 1000000000ull;
	while (!s.exited) {
		assert_true(fttime_now_ns() < give_up);
		struct pollfd pfd[2];
		int n = ftd_worker_pollfds(w, pfd);
		next = UINT64_MAX;
		ftd_worker_timers(w, fttime_now_ns(), 1, &next);
		poll(pfd, (nfds_t)n, 20);
		for (int i = 0; i < n; i++)
			if (pfd[i].revents)
				ftd_worker_io(w, pfd[i].fd, 1);
		int wst;
		if (!w->reaped && waitpid(w->pid, &wst, WNOHANG) == w->pid)
			ftd_worker_reaped(w, wst, fttime_now_ns());
		ftd_worker_check_done(w, fttime_now_ns(), 1);
	}
	assert_int_equal(s.sig, SIGTERM);
}

int main(void)
{
	if (!mkdtemp(dir))
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lines_log_and_exit),
		cmocka_unit_test(test_size_checks),
		cmocka_unit_test(test_timeout_term_then_kill),
		cmocka_unit_test(test_cannot_start),
		cmocka_unit_test(test_log_on_fd_0),
		cmocka_unit_test(test_timers_while_running),
	};
	int r = cmocka_run_group_tests(tests, NULL, NULL);
	if (tmpdir_remove(dir) != 0)
		r = r ? r : 1;
	return r;
}
