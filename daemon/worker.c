/* worker: one child of the daemon; see worker.h. */
#include "worker.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/timeutil.h"

extern char **environ;

static const char *const drop_env[] = {"NOTIFY_SOCKET=", "LISTEN_FDS=", "LISTEN_PID=", "LISTEN_FDNAMES=",
				       "WATCHDOG_USEC=", "WATCHDOG_PID=", "CUDA_VISIBLE_DEVICES=",
				       "CUDA_DEVICE_ORDER=", "FTBENCHD_JOB_ID=", NULL};

/* A new environment: ours minus systemd's and CUDA's, plus the job's. NULL on ENOMEM. */
static char **job_env(const char *job_id, const char *gpu_uuid)
{
	size_t n = 0;
	while (environ[n])
		n++;
	char **env = calloc(n + 4, sizeof(char *));
	if (!env)
		return NULL;
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		int skip = 0;
		for (const char *const *d = drop_env; *d && !skip; d++)
			skip = !strncmp(environ[i], *d, strlen(*d));
		if (!skip)
			env[k++] = strdup(environ[i]);
	}
	if (asprintf(&env[k++], "CUDA_DEVICE_ORDER=PCI_BUS_ID") < 0 ||
	    asprintf(&env[k++], "CUDA_VISIBLE_DEVICES=%s", gpu_uuid ? gpu_uuid : "") < 0 ||
	    (job_id && asprintf(&env[k++], "FTBENCHD_JOB_ID=%s", job_id) < 0)) {
		env[k - 1] = NULL;
	}
	for (size_t i = 0; i < k; i++)
		if (!env[i]) {
			for (size_t x = 0; x < k; x++)
				free(env[x]);
			free(env);
			return NULL;
		}
	return env;
}

static void env_free(char **env)
{
	for (char **p = env; p && *p; p++)
		free(*p);
	free(env);
}

/* What the child reports through the error pipe when it cannot reach execve. */
struct spawn_err {
	int stage; /* SP_* */
	int err;   /* errno */
};
enum { SP_EXEC, SP_SETPGID, SP_FCNTL, SP_DUP2 };
static const char *const stage_names[] = {"execve", "setpgid in the child", "fcntl in the child", "dup2 in the child"};

/* fork + execve argv with fd 3 = result_w (or none), stdout/stderr = out_w, stdin /dev/null.
 * Only async-signal-safe calls in the child; a failure before or in execve comes back through a
 * close-on-exec pipe as {stage, errno}. Returns the pid, or -errno with *stage set. */
static pid_t spawn(char **argv, char **env, int result_w, int out_w, int devnull, int *stage)
{
	int errp[2];
	*stage = SP_EXEC;
	if (pipe2(errp, O_CLOEXEC) < 0)
		return -errno;
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(errp[0]);
		close(errp[1]);
		return -e;
	}
	if (pid == 0) {
		struct spawn_err se = {SP_SETPGID, 0};
		int ep = errp[1];
		if (setpgid(0, 0) < 0)
			goto fail;
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127); /* the daemon is gone: nobody to report to */
		signal(SIGPIPE, SIG_DFL);
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		/* move every source fd above 9 first, so the dup2s below cannot clobber one */
		se.stage = SP_FCNTL;
		ep = fcntl(errp[1], F_DUPFD_CLOEXEC, 10);
		if (ep < 0) {
			ep = errp[1];
			goto fail;
		}
		int dn = fcntl(devnull, F_DUPFD, 10);
		int ow = dn < 0 ? -1 : fcntl(out_w, F_DUPFD, 10);
		int rw = result_w >= 0 && ow >= 0 ? fcntl(result_w, F_DUPFD, 10) : -1;
		if (dn < 0 || ow < 0 || (result_w >= 0 && rw < 0))
			goto fail;
		se.stage = SP_DUP2;
		if (dup2(dn, 0) < 0 || dup2(ow, 1) < 0 || dup2(ow, 2) < 0)
			goto fail;
		if (rw >= 0) {
			if (dup2(rw, 3) < 0)
				goto fail;
		} else {
			close(3);
		}
		/* everything above 3 except the (close-on-exec) error pipe goes */
		if (ep > 4)
			syscall(SYS_close_range, 4u, (unsigned)ep - 1, 0u);
		syscall(SYS_close_range, (unsigned)ep + 1, ~0U, 0u);
		se.stage = SP_EXEC;
		execve(argv[0], argv, env);
	fail:
		se.err = errno;
		while (write(ep, &se, sizeof se) < 0 && errno == EINTR)
			;
		_exit(127);
	}
	close(errp[1]);
	struct spawn_err se = {SP_EXEC, 0};
	ssize_t r;
	do
		r = read(errp[0], &se, sizeof se);
	while (r < 0 && errno == EINTR);
	close(errp[0]);
	if (r == (ssize_t)sizeof se) {
		int st;
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
		*stage = se.stage >= SP_EXEC && se.stage <= SP_DUP2 ? se.stage : SP_EXEC;
		return -(se.err ? se.err : ENOEXEC);
	}
	setpgid(pid, pid); /* also from the parent: no window where the group does not exist */
	return pid;
}

struct ftd_worker *ftd_worker_start(const struct ftd_worker_spec *s, char *why, size_t n)
{
	int rp[2] = {-1, -1}, op[2] = {-1, -1}, devnull = -1, logfd = -1;
	char **env = NULL;
	struct ftd_worker *w = calloc(1, sizeof *w);
	if (!w) {
		snprintf(why, n, "out of memory");
		return NULL;
	}
	logfd = open(s->log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_APPEND | O_NOFOLLOW, 0640);
	if (logfd < 0) {
		snprintf(why, n, "cannot open the job log %s: %s", s->log_path, strerror(errno));
		goto fail;
	}
	if (pipe2(rp, O_CLOEXEC) < 0 || pipe2(op, O_CLOEXEC) < 0 ||
	    (devnull = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0) {
		snprintf(why, n, "cannot make pipes: %s", strerror(errno));
		goto fail;
	}
	env = job_env(s->job_id, s->gpus);
	if (!env) {
		snprintf(why, n, "out of memory");
		goto fail;
	}
	int stage;
	pid_t pid = spawn((char **)s->argv, env, rp[1], op[1], devnull, &stage);
	env_free(env);
	env = NULL;
	if (pid < 0) {
		if (stage == SP_EXEC)
			snprintf(why, n, "cannot execute the worker %s: %s", s->argv[0], strerror((int)-pid));
		else
			snprintf(why, n, "cannot start the worker %s: %s failed: %s", s->argv[0], stage_names[stage],
				 strerror((int)-pid));
		goto fail;
	}
	close(rp[1]);
	close(op[1]);
	close(devnull);
	fcntl(rp[0], F_SETFL, O_NONBLOCK);
	fcntl(op[0], F_SETFL, O_NONBLOCK);
	w->pid = pid;
	w->rfd = rp[0];
	w->ofd = op[0];
	w->logfd = logfd;
	w->exit_status = w->sig = -1;
	w->max_line = s->max_line;
	w->log_max = s->log_max;
	w->deadline_ns = ft_now_ns() + (uint64_t)s->timeout_s * 1000000000ull;
	w->cb = s->cb;
	w->ctx = s->ctx;
	return w;
fail:
	env_free(env);
	for (int i = 0; i < 2; i++) {
		if (rp[i] >= 0)
			close(rp[i]);
		if (op[i] >= 0)
			close(op[i]);
	}
	if (devnull >= 0)
		close(devnull);
	if (logfd >= 0)
		close(logfd);
	free(w);
	return NULL;
}

void ftd_worker_free(struct ftd_worker *w)
{
	if (!w)
		return;
	if (w->rfd >= 0)
		close(w->rfd);
	if (w->ofd >= 0)
		close(w->ofd);
	if (w->logfd >= 0)
		close(w->logfd);
	free(w->line);
	free(w);
}

void ftd_worker_terminate(struct ftd_worker *w, long grace_s)
{
	if (w->reaped || w->kill_at_ns)
		return;
	kill(-w->pid, SIGTERM);
	w->kill_at_ns = ft_now_ns() + (uint64_t)grace_s * 1000000000ull;
	if (!w->kill_at_ns)
		w->kill_at_ns = 1;
}

void ftd_worker_protocol_error(struct ftd_worker *w, long grace_s, const char *what)
{
	if (w->proto_err)
		return;
	w->proto_err = 1;
	if (w->cb && w->cb->protocol_error)
		w->cb->protocol_error(w->ctx, w, what);
	ftd_worker_terminate(w, grace_s);
}

/* The result pipe / output pipe is done with: closed, marked at EOF, buffer freed. */
static void end_result(struct ftd_worker *w)
{
	if (w->rfd >= 0)
		close(w->rfd);
	w->rfd = -1;
	w->rfd_eof = 1;
	free(w->line);
	w->line = NULL;
	w->linelen = w->linecap = 0;
}

static void end_output(struct ftd_worker *w)
{
	if (w->ofd >= 0)
		close(w->ofd);
	w->ofd = -1;
	w->ofd_eof = 1;
}

static void give_line(struct ftd_worker *w, char *line, size_t len)
{
	if (w->proto_err || !w->cb || !w->cb->line)
		return;
	char keep = line[len];
	line[len] = '\0';
	w->cb->line(w->ctx, w, line, len);
	line[len] = keep;
}

static void read_result(struct ftd_worker *w, long grace_s)
{
	for (;;) {
		if (w->linecap - w->linelen < 65536) {
			size_t cap = w->linecap ? w->linecap * 2 : 65536;
			size_t max = w->max_line + 65536;
			if (cap > max)
				cap = max;
			if (cap > w->linecap) {
				char *p = realloc(w->line, cap);
				if (!p) {
					ftd_worker_protocol_error(w, grace_s, "out of memory");
					goto eof;
				}
				w->line = p;
				w->linecap = cap;
			}
		}
		size_t room = w->linecap - w->linelen;
		if (room == 0) {
			ftd_worker_protocol_error(w, grace_s, "a line over max-result-line bytes");
			goto eof;
		}
		ssize_t r = read(w->rfd, w->line + w->linelen, room);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return;
			goto eof;
		}
		if (r == 0) {
			if (w->linelen > 0)
				ftd_worker_protocol_error(w, grace_s, "a last line without a newline");
			goto eof;
		}
		size_t start = 0, end = w->linelen + (size_t)r;
		for (size_t i = w->linelen; i < end; i++) {
			if (w->line[i] != '\n')
				continue;
			if (i - start > w->max_line)
				ftd_worker_protocol_error(w, grace_s, "a line over max-result-line bytes");
			else if (i > start)
				give_line(w, w->line + start, i - start);
			start = i + 1;
		}
		memmove(w->line, w->line + start, end - start);
		w->linelen = end - start;
		if (w->linelen > w->max_line) {
			ftd_worker_protocol_error(w, grace_s, "a line over max-result-line bytes");
			goto eof;
		}
	}
eof:
	end_result(w);
}

static void read_output(struct ftd_worker *w)
{
	char buf[16384];
	for (;;) {
		ssize_t r = read(w->ofd, buf, sizeof buf);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno == EAGAIN)
			return;
		if (r <= 0) {
			end_output(w);
			return;
		}
		long room = w->log_max - w->log_bytes;
		if (room > 0) {
			size_t n = (size_t)r < (size_t)room ? (size_t)r : (size_t)room;
			if (write(w->logfd, buf, n) == (ssize_t)n)
				w->log_bytes += (long)n;
		} else if (!w->log_truncated) {
			static const char note[] = "\n[ftbenchd: log truncated at log-max bytes]\n";
			if (write(w->logfd, note, sizeof note - 1) < 0) {
				/* nothing more to do: the log is best effort */
			}
			w->log_truncated = 1;
		}
	}
}

int ftd_worker_pollfds(const struct ftd_worker *w, struct pollfd *pfd)
{
	int n = 0;
	if (w->rfd >= 0)
		pfd[n++] = (struct pollfd){.fd = w->rfd, .events = POLLIN};
	if (w->ofd >= 0)
		pfd[n++] = (struct pollfd){.fd = w->ofd, .events = POLLIN};
	return n;
}

void ftd_worker_io(struct ftd_worker *w, int fd, long grace_s)
{
	if (fd == w->rfd)
		read_result(w, grace_s);
	else if (fd == w->ofd)
		read_output(w);
}

void ftd_worker_reaped(struct ftd_worker *w, int st, uint64_t now)
{
	w->reaped = 1;
	if (WIFEXITED(st)) {
		w->exit_status = WEXITSTATUS(st);
		w->sig = -1;
	} else if (WIFSIGNALED(st)) {
		w->sig = WTERMSIG(st);
		w->exit_status = 128 + w->sig;
	}
	w->reaped_ns = now;
}

int ftd_worker_timers(struct ftd_worker *w, uint64_t now, long grace_s, uint64_t *next)
{
	int fired = 0;
	if (!w->reaped && !w->kill_at_ns && now >= w->deadline_ns) {
		w->timed_out = 1;
		fired = 1;
		ftd_worker_terminate(w, grace_s);
	}
	if (w->kill_at_ns && now >= w->kill_at_ns) {
		kill(-w->pid, SIGKILL);
		w->kill_at_ns = UINT64_MAX; /* sent */
	}
	if (!w->reaped && !w->kill_at_ns && w->deadline_ns < *next)
		*next = w->deadline_ns;
	if (w->kill_at_ns && w->kill_at_ns != UINT64_MAX && w->kill_at_ns < *next)
		*next = w->kill_at_ns;
	if (w->reaped && w->reaped_ns + FTD_WORKER_PIPE_GRACE_NS < *next)
		*next = w->reaped_ns + FTD_WORKER_PIPE_GRACE_NS + 1;
	return fired;
}

int ftd_worker_check_done(struct ftd_worker *w, uint64_t now, long grace_s)
{
	if (!w->reaped)
		return 0;
	if ((!w->rfd_eof || !w->ofd_eof) && now - w->reaped_ns > FTD_WORKER_PIPE_GRACE_NS) {
		/* something we cannot see still holds the pipes: stop waiting for EOF */
		if (!w->rfd_eof) {
			read_result(w, grace_s);
			end_result(w);
		}
		if (!w->ofd_eof) {
			read_output(w);
			end_output(w);
		}
	}
	if (!w->rfd_eof || !w->ofd_eof)
		return 0;
	if (w->logfd >= 0) {
		close(w->logfd);
		w->logfd = -1;
	}
	if (w->cb && w->cb->exited)
		w->cb->exited(w->ctx, w);
	return 1;
}

int ftd_worker_capture(char *const *argv, long timeout_s, size_t max, char **outp, size_t *lenp, int *status,
		       int *timed_out_out, char *why, size_t n)
{
	int op[2], devnull;
	*outp = NULL;
	*lenp = 0;
	*timed_out_out = 0;
	if (pipe2(op, O_CLOEXEC) < 0 || (devnull = open("/dev/null", O_RDWR | O_CLOEXEC)) < 0) {
		int e = errno;
		snprintf(why, n, "cannot make a pipe: %s", strerror(e));
		return -e;
	}
	char **env = job_env(NULL, NULL);
	/* every GPU must be visible: drop the CUDA_VISIBLE_DEVICES= job_env sets */
	for (char **p = env; p && *p; p++)
		if (!strncmp(*p, "CUDA_VISIBLE_DEVICES=", 21)) {
			free(*p);
			for (char **q = p; *q; q++)
				q[0] = q[1];
			break;
		}
	int stage = SP_EXEC;
	pid_t pid = env ? spawn((char **)argv, env, -1, op[1], devnull, &stage) : -ENOMEM;
	env_free(env);
	close(op[1]);
	close(devnull);
	if (pid < 0) {
		snprintf(why, n, "cannot run %s %s %s: %s%s%s", argv[0], argv[1], argv[2],
			 stage == SP_EXEC ? "" : stage_names[stage], stage == SP_EXEC ? "" : ": ", strerror((int)-pid));
		close(op[0]);
		return (int)pid;
	}
	size_t len = 0, cap = max;
	char *out = malloc(cap + 1);
	uint64_t deadline = ft_now_ns() + (uint64_t)timeout_s * 1000000000ull;
	int timed_out = 0;
	while (out) {
		struct pollfd p = {.fd = op[0], .events = POLLIN};
		uint64_t now = ft_now_ns();
		if (now >= deadline) {
			timed_out = 1;
			break;
		}
		int pr = poll(&p, 1, (int)((deadline - now) / 1000000) + 1);
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr <= 0)
			continue;
		ssize_t r = read(op[0], out + len, cap - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += (size_t)r;
		if (len == cap)
			break;
	}
	close(op[0]);
	if (timed_out)
		kill(-pid, SIGKILL);
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (!out) {
		snprintf(why, n, "out of memory");
		return -ENOMEM;
	}
	out[len] = '\0';
	*outp = out;
	*lenp = len;
	*status = st;
	*timed_out_out = timed_out;
	return 0;
}
