/* proc: spawn with an fd map, process group, death signal, environment; exec failures with
 * their errno; stop escalation; no fd leaked into the child or left in the parent; no zombie.
 * The child is mostly this program itself (/proc/self/exe child-report | child-sleep), so what
 * it reports is read from the kernel (/proc/self/fd), not assumed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/proc.h"
#include "util/timeutil.h"

extern char **environ;

/* ---------------------------------------------------------------- child modes */

/* Report to fd 3: "pid=P pgid=G fds=0,1,... fd0=<link> fd5=<content> env=<A;B;...>". */
static int child_report(void)
{
	char out[4096];
	int l = snprintf(out, sizeof out, "pid=%d pgid=%d fds=", (int)getpid(), (int)getpgrp());
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return 2;
	int self = dirfd(d), first = 1, seen[64] = {0};
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		int fd = atoi(e->d_name);
		if (fd == self)
			continue;
		if (fd < 64)
			seen[fd] = 1;
		else
			l += snprintf(out + l, sizeof out - l, "%s%d", first ? "" : ",", fd), first = 0;
	}
	closedir(d);
	for (int fd = 0; fd < 64; fd++)
		if (seen[fd])
			l += snprintf(out + l, sizeof out - l, "%s%d", first ? "" : ",", fd), first = 0;
	char link[256] = "";
	ssize_t n = readlink("/proc/self/fd/0", link, sizeof link - 1);
	link[n > 0 ? n : 0] = '\0';
	l += snprintf(out + l, sizeof out - l, " fd0=%s fd5=", link);
	char buf[64] = "";
	n = read(5, buf, sizeof buf - 1);
	buf[n > 0 ? n : 0] = '\0';
	l += snprintf(out + l, sizeof out - l, "%s env=", buf);
	for (char **p = environ; *p; p++)
		l += snprintf(out + l, sizeof out - l, "%s;", *p);
	struct sigaction sa;
	sigaction(SIGPIPE, NULL, &sa);
	l += snprintf(out + l, sizeof out - l, " sigpipe=%s\n", sa.sa_handler == SIG_DFL ? "default" : "other");
	return write(3, out, (size_t)l) == l ? 0 : 3;
}

/* ---------------------------------------------------------------- helpers */

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;
	struct dirent *e;
	while (d && (e = readdir(d)))
		n += e->d_name[0] != '.';
	if (d)
		closedir(d);
	return n - 1; /* the directory's own */
}

/* Children of ours that are zombies. */
static int zombies(void)
{
	DIR *d = opendir("/proc");
	int n = 0;
	struct dirent *e;
	while (d && (e = readdir(d))) {
		char path[300], buf[512];
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
		FILE *f = fopen(path, "re");
		if (!f)
			continue;
		if (fgets(buf, sizeof buf, f)) {
			char *c = strrchr(buf, ')');
			char state;
			int ppid;
			if (c && sscanf(c + 1, " %c %d", &state, &ppid) == 2 && ppid == getpid() && state == 'Z')
				n++;
		}
		fclose(f);
	}
	if (d)
		closedir(d);
	return n;
}

static void no_child_left(void)
{
	assert_int_equal(zombies(), 0);
	assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
	assert_int_equal(errno, ECHILD);
}

/* Everything from fd until EOF. */
static void read_all(int fd, char *buf, size_t n)
{
	size_t l = 0;
	for (;;) {
		ssize_t r = read(fd, buf + l, n - 1 - l);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		l += (size_t)r;
	}
	buf[l] = '\0';
}

/* ---------------------------------------------------------------- tests */

static void test_fd_map_pgid_env(void **st)
{
	char file[] = "/tmp/ftproc-XXXXXX";
	int ffd = mkstemp(file);
	assert_true(ffd >= 0);
	assert_int_equal(write(ffd, "hello", 5), 5);
	close(ffd);
	ffd = open(file, O_RDONLY | O_CLOEXEC);
	int stray = open("/dev/null", O_RDONLY); /* not close-on-exec: must not reach the child */
	assert_true(ffd >= 0 && stray >= 0);
	int before = count_fds();
	struct ftproc_fd fds[] = {{.child = 3, .kind = FTPROC_FD_PIPE_OUT},
				  {.child = 5, .kind = FTPROC_FD_DUP, .fd = ffd},
				  {.child = 1, .kind = FTPROC_FD_NULL}};
	char *argv[] = {"test_proc", "child-report", NULL};
	char *envp[] = {"A=1", "B=two words", NULL};
	struct ftproc_opts o = {.path = "/proc/self/exe", .argv = argv, .envp = envp, .fds = fds, .nfds = 3,
				.pdeathsig = SIGKILL};
	struct ftproc p;
	enum ftproc_stage stage;
	signal(SIGPIPE, SIG_IGN); /* the child must get it back at the default */
	assert_int_equal(ftproc_spawn(&p, &o, &stage), 0);
	signal(SIGPIPE, SIG_DFL);
	assert_true(p.pid > 0 && !p.reaped);
	assert_true(fds[0].fd >= 0);
	assert_int_equal(fds[1].fd, ffd);
	assert_true(fcntl(fds[0].fd, F_GETFD) & FD_CLOEXEC);
	assert_int_equal(count_fds(), before + 1); /* only the returned read end is new */
	char buf[4096], want[256];
	read_all(fds[0].fd, buf, sizeof buf);
	close(fds[0].fd);
	assert_int_equal(ftproc_wait(&p, -1), 0);
	assert_true(p.reaped && WIFEXITED(p.status) && WEXITSTATUS(p.status) == 0);
	snprintf(want, sizeof want, "pid=%d pgid=%d fds=0,1,2,3,5 fd0=/dev/null fd5=hello env=A=1;B=two words; "
		 "sigpipe=default\n", (int)p.pid, (int)p.pid);
	assert_string_equal(buf, want);
	assert_int_equal(count_fds(), before);
	no_child_left();
	close(ffd);
	close(stray);
	unlink(file);
}

static void test_pipe_in_and_path(void **st)
{
	int before = count_fds();
	struct ftproc_fd fds[] = {{.child = 0, .kind = FTPROC_FD_PIPE_IN},
				  {.child = 1, .kind = FTPROC_FD_PIPE_OUT, .nonblock = 1}};
	char *argv[] = {"cat", NULL};
	char *envp[] = {"PATH=/nonexistent:/usr/bin:/bin", NULL};
	struct ftproc_opts o = {.path = "cat", .argv = argv, .envp = envp, .fds = fds, .nfds = 2};
	struct ftproc p;
	assert_int_equal(ftproc_spawn(&p, &o, NULL), 0);
	assert_true(fcntl(fds[1].fd, F_GETFL) & O_NONBLOCK);
	assert_false(fcntl(fds[0].fd, F_GETFL) & O_NONBLOCK);
	assert_int_equal(write(fds[0].fd, "abc\n", 4), 4);
	close(fds[0].fd);
	char buf[64];
	size_t l = 0;
	double end = fttime_now_s() + 10;
	while (fttime_now_s() < end) {
		ssize_t r = read(fds[1].fd, buf + l, sizeof buf - 1 - l);
		if (r == 0)
			break;
		if (r > 0)
			l += (size_t)r;
		else
			usleep(2000);
	}
	buf[l] = '\0';
	close(fds[1].fd);
	assert_string_equal(buf, "abc\n");
	assert_int_equal(ftproc_wait(&p, 10), 0);
	assert_int_equal(ftproc_exit_code(p.status), 0);
	assert_int_equal(count_fds(), before);
	no_child_left();
}

/* stdout and stderr into one pipe (2>&1), as a daemon's job log takes them */
static void test_same_fd(void **st)
{
	int before = count_fds();
	struct ftproc_fd fds[] = {{.child = 1, .kind = FTPROC_FD_PIPE_OUT}, {.child = 2, .kind = FTPROC_FD_SAME, .fd = 1}};
	char *argv[] = {"sh", "-c", "echo out; echo err >&2; ls -l /proc/self/fd/1 /proc/self/fd/2 | grep -c pipe >&2", NULL};
	struct ftproc_opts o = {.path = "/bin/sh", .argv = argv, .fds = fds, .nfds = 2};
	struct ftproc p;
	assert_int_equal(ftproc_spawn(&p, &o, NULL), 0);
	assert_int_equal(fds[1].fd, 1); /* a SAME entry is input only */
	char buf[256];
	read_all(fds[0].fd, buf, sizeof buf);
	close(fds[0].fd);
	assert_int_equal(ftproc_wait(&p, -1), 0);
	assert_string_equal(buf, "out\nerr\n2\n");
	assert_int_equal(count_fds(), before);
	/* it must name an earlier entry */
	struct ftproc_fd later[] = {{.child = 2, .kind = FTPROC_FD_SAME, .fd = 1}, {.child = 1, .kind = FTPROC_FD_NULL}};
	o.fds = later;
	assert_int_equal(ftproc_spawn(&p, &o, NULL), -EINVAL);
	no_child_left();
}

static void test_exec_failure(void **st)
{
	int before = count_fds();
	char tmp[] = "/tmp/ftproc-noexec-XXXXXX";
	int fd = mkstemp(tmp);
	assert_true(fd >= 0);
	close(fd);
	chmod(tmp, 0644);
	struct ftproc_fd fds[] = {{.child = 3, .kind = FTPROC_FD_PIPE_OUT}};
	char *argv[] = {"x", NULL};
	struct ftproc_opts o = {.path = "/nonexistent/program", .argv = argv, .fds = fds, .nfds = 1};
	struct ftproc p;
	enum ftproc_stage stage;
	assert_int_equal(ftproc_spawn(&p, &o, &stage), -ENOENT);
	assert_int_equal(stage, FTPROC_ST_EXEC);
	assert_string_equal(ftproc_stage_name(stage), "execve");
	assert_int_equal(fds[0].fd, -1);
	assert_int_equal(p.pid, 0);
	o.path = tmp;
	if (geteuid() != 0 || access(tmp, X_OK) < 0) { /* root may execute a 0644 file? no: needs an x bit */
		assert_int_equal(ftproc_spawn(&p, &o, &stage), -EACCES);
		assert_int_equal(stage, FTPROC_ST_EXEC);
	}
	/* a name not on PATH: found out in the parent */
	o.path = "no-such-program-ftproc-xyz";
	assert_int_equal(ftproc_spawn(&p, &o, &stage), -ENOENT);
	assert_int_equal(stage, FTPROC_ST_PARENT);
	/* a step before exec */
	o.path = "/bin/true";
	o.cwd = "/nonexistent/dir";
	assert_int_equal(ftproc_spawn(&p, &o, &stage), -ENOENT);
	assert_int_equal(stage, FTPROC_ST_CHDIR);
	o.cwd = NULL;
	/* a bad map: nothing is made */
	struct ftproc_fd twice[] = {{.child = 3, .kind = FTPROC_FD_PIPE_OUT}, {.child = 3, .kind = FTPROC_FD_NULL}};
	o.fds = twice;
	o.nfds = 2;
	assert_int_equal(ftproc_spawn(&p, &o, &stage), -EINVAL);
	struct ftproc_fd closed[] = {{.child = 3, .kind = FTPROC_FD_DUP, .fd = 1000}};
	o.fds = closed;
	o.nfds = 1;
	assert_int_equal(ftproc_spawn(&p, &o, &stage), -EBADF);
	struct ftproc_fd high[] = {{.child = FTPROC_MAX_CHILD_FD + 1, .kind = FTPROC_FD_NULL}};
	o.fds = high;
	assert_int_equal(ftproc_spawn(&p, &o, &stage), -EINVAL);
	assert_int_equal(count_fds(), before);
	no_child_left();
	unlink(tmp);
}

static void test_stop_escalation(void **st)
{
	int before = count_fds();
	struct ftproc p;
	enum ftproc_stop_how how;
	char buf[64];
	/* polite: goes on SIGTERM */
	struct ftproc_fd fds[] = {{.child = 3, .kind = FTPROC_FD_PIPE_OUT}};
	char *polite[] = {"sh", "-c", "echo ready >&3; exec 3>&-; exec sleep 30", NULL};
	struct ftproc_opts o = {.path = "/bin/sh", .argv = polite, .fds = fds, .nfds = 1};
	assert_int_equal(ftproc_spawn(&p, &o, NULL), 0);
	read_all(fds[0].fd, buf, sizeof buf);
	close(fds[0].fd);
	assert_string_equal(buf, "ready\n");
	assert_int_equal(ftproc_poll(&p), 1);
	double t0 = fttime_now_s();
	assert_int_equal(ftproc_stop(&p, 5, 5, &how), 0);
	assert_int_equal(how, FTPROC_STOP_TERM);
	assert_true(fttime_now_s() - t0 < 4);
	assert_true(p.reaped && WIFSIGNALED(p.status) && WTERMSIG(p.status) == SIGTERM);
	assert_int_equal(ftproc_exit_code(p.status), 128 + SIGTERM);
	/* stubborn: the leader and a member it started ignore SIGTERM */
	char *stubborn[] = {"sh", "-c", "trap '' TERM; sleep 30 & echo ready >&3; exec 3>&-; wait; sleep 30", NULL};
	o.argv = stubborn;
	assert_int_equal(ftproc_spawn(&p, &o, NULL), 0);
	read_all(fds[0].fd, buf, sizeof buf);
	close(fds[0].fd);
	assert_string_equal(buf, "ready\n");
	pid_t pgid = p.pid;
	t0 = fttime_now_s();
	assert_int_equal(ftproc_stop(&p, 0.3, 5, &how), 0);
	double took = fttime_now_s() - t0;
	assert_int_equal(how, FTPROC_STOP_KILL);
	assert_true(took >= 0.3 && took < 4);
	assert_true(p.reaped && WIFSIGNALED(p.status) && WTERMSIG(p.status) == SIGKILL);
	assert_true(kill(-pgid, 0) < 0 && errno == ESRCH); /* the whole group is gone */
	assert_int_equal(ftproc_group_alive(&p), 0);
	/* already exited, and stopped twice */
	char *quick[] = {"sh", "-c", "exit 4", NULL};
	o.argv = quick;
	o.nfds = 0;
	assert_int_equal(ftproc_spawn(&p, &o, NULL), 0);
	assert_int_equal(ftproc_wait(&p, 10), 0);
	ftproc_status_string(p.status, buf, sizeof buf);
	assert_string_equal(buf, "exited with status 4");
	assert_int_equal(ftproc_stop(&p, 1, 1, &how), 0);
	assert_int_equal(how, FTPROC_STOP_GONE);
	assert_int_equal(ftproc_stop(&p, 1, 1, &how), 0);
	struct ftproc none = {0};
	assert_int_equal(ftproc_stop(&none, 1, 1, &how), 0);
	assert_int_equal(how, FTPROC_STOP_GONE);
	assert_int_equal(ftproc_signal(&none, SIGTERM), -ESRCH);
	assert_int_equal(count_fds(), before);
	no_child_left();
}

static void test_wait_timeout_and_reap_any(void **st)
{
	char *argv[] = {"sleep", "30", NULL};
	struct ftproc_opts o = {.path = "sleep", .argv = argv};
	struct ftproc p;
	assert_int_equal(ftproc_spawn(&p, &o, NULL), 0);
	double t0 = fttime_now_s();
	assert_int_equal(ftproc_wait(&p, 0.1), -ETIMEDOUT);
	assert_true(fttime_now_s() - t0 >= 0.1);
	assert_false(p.reaped);
	assert_int_equal(ftproc_signal(&p, SIGKILL), 0);
	/* a caller that owns every child reaps through ftproc_reap_any */
	int status = 0;
	pid_t got = 0;
	for (int i = 0; i < 1000 && got == 0; i++) {
		got = ftproc_reap_any(&status);
		if (got == 0)
			usleep(5000);
	}
	assert_int_equal(got, p.pid);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	assert_int_equal(ftproc_exit_code(status), 137);
	assert_int_equal(ftproc_reap_any(&status), -ECHILD);
	/* the handle finds its child gone (ECHILD) and counts it as reaped */
	assert_int_equal(ftproc_poll(&p), 0);
	assert_true(p.reaped);
	no_child_left();
}

/* The spawning process dies: the child gets its death signal. We are the subreaper, so the
 * orphan comes to us and its wait status shows the signal. */
static void test_death_signal(void **st)
{
	assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	int pp[2];
	assert_int_equal(pipe2(pp, O_CLOEXEC), 0);
	pid_t mid = fork();
	assert_true(mid >= 0);
	if (mid == 0) {
		char *argv[] = {"sleep", "30", NULL};
		struct ftproc_opts o = {.path = "/bin/sleep", .argv = argv, .pdeathsig = SIGTERM};
		struct ftproc p;
		if (ftproc_spawn(&p, &o, NULL) < 0)
			_exit(1);
		_exit(write(pp[1], &p.pid, sizeof p.pid) == sizeof p.pid ? 0 : 2);
	}
	close(pp[1]);
	pid_t grand = 0;
	assert_int_equal(read(pp[0], &grand, sizeof grand), sizeof grand);
	close(pp[0]);
	int status;
	assert_int_equal(waitpid(mid, &status, 0), mid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	pid_t w = 0;
	for (int i = 0; i < 1000 && w == 0; i++) {
		w = waitpid(grand, &status, WNOHANG);
		if (w == 0)
			usleep(5000);
	}
	if (w == 0)
		kill(grand, SIGKILL), waitpid(grand, &status, 0);
	assert_int_equal(w, grand);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
	prctl(PR_SET_CHILD_SUBREAPER, 0);
	no_child_left();
}

static void test_env_new(void **st)
{
	char *base[] = {"A=1", "B=2", "NOTIFY_SOCKET=/run/x", "CUDA_VISIBLE_DEVICES=0", "noequals", NULL};
	const char *drop[] = {"NOTIFY_SOCKET=", "CUDA_", NULL};
	const char *set[] = {"B=3", "C=4", "C=5", NULL};
	char **env;
	assert_int_equal(ftproc_env_new(&env, base, drop, set), 0);
	assert_string_equal(env[0], "A=1");
	assert_string_equal(env[1], "B=3");
	assert_string_equal(env[2], "C=5");
	assert_null(env[3]);
	ftproc_env_free(env);
	const char *bad[] = {"NOEQ", NULL};
	assert_int_equal(ftproc_env_new(&env, base, NULL, bad), -EINVAL);
	assert_null(env);
	assert_int_equal(ftproc_env_new(&env, NULL, NULL, NULL), 0); /* ours, copied */
	size_t n = 0, m = 0;
	while (env[n])
		n++;
	while (environ[m])
		m++;
	assert_true(n <= m);
	ftproc_env_free(env);
	ftproc_env_free(NULL);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "child-report"))
		return child_report();
	signal(SIGCHLD, SIG_DFL);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fd_map_pgid_env),
		cmocka_unit_test(test_pipe_in_and_path),
		cmocka_unit_test(test_same_fd),
		cmocka_unit_test(test_exec_failure),
		cmocka_unit_test(test_stop_escalation),
		cmocka_unit_test(test_wait_timeout_and_reap_any),
		cmocka_unit_test(test_death_signal),
		cmocka_unit_test(test_env_new),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
