/* worker: one child of the daemon; see worker.h. */
#include "worker.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/proc.h"
#include "util/timeutil.h"

static const char *const drop_env[] = {"NOTIFY_SOCKET=", "LISTEN_FDS=", "LISTEN_PID=", "LISTEN_FDNAMES=",
				       "WATCHDOG_USEC=", "WATCHDOG_PID=", "CUDA_VISIBLE_DEVICES=",
				       "CUDA_DEVICE_ORDER=", "FTBENCHD_JOB_ID=", NULL};

/* A child's environment: ours minus systemd's and CUDA's, plus CUDA_DEVICE_ORDER, the GPUs it
 * may see (visible: CUDA_VISIBLE_DEVICES=gpus, "" for none; else every GPU) and its job id.
 * NULL when out of memory. */
static char **child_env(const char *job_id, const char *gpus, int visible)
{
	char *vis = NULL, *id = NULL, **env = NULL;
	const char *set[4] = {"CUDA_DEVICE_ORDER=PCI_BUS_ID"};
	int k = 1;
	if (visible && asprintf(&vis, "CUDA_VISIBLE_DEVICES=%s", gpus ? gpus : "") < 0)
		vis = NULL;
	if (job_id && asprintf(&id, "FTBENCHD_JOB_ID=%s", job_id) < 0)
		id = NULL;
	if ((visible && !vis) || (job_id && !id))
		goto out;
	if (vis)
		set[k++] = vis;
	if (id)
		set[k++] = id;
	if (ftproc_env_new(&env, NULL, drop_env, set) < 0)
		env = NULL;
out:
	free(vis);
	free(id);
	return env;
}

/* Why a spawn failed, in words. */
static void spawn_why(char *why, size_t n, const char *prog, enum ftproc_stage stage, int err)
{
	if (stage == FTPROC_ST_EXEC)
		snprintf(why, n, "cannot execute the worker %s: %s", prog, strerror(err));
	else if (stage == FTPROC_ST_PARENT)
		snprintf(why, n, "cannot start the worker %s: %s", prog, strerror(err));
	else
		snprintf(why, n, "cannot start the worker %s: %s in the child failed: %s", prog, ftproc_stage_name(stage),
			 strerror(err));
}

struct ftd_worker *ftd_worker_start(const struct ftd_worker_spec *s, char *why, size_t n)
{
	int logfd = -1;
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
	env = child_env(s->job_id, s->gpus, 1);
	if (!env) {
		snprintf(why, n, "out of memory");
		goto fail;
	}
	/* stdin /dev/null, stdout and stderr one pipe (the log), fd 3 the result pipe */
	struct ftproc_fd map[] = {
		{0, FTPROC_FD_NULL, -1, 0},
		{1, FTPROC_FD_PIPE_OUT, -1, 1},
		{2, FTPROC_FD_SAME, 1, 0},
		{3, FTPROC_FD_PIPE_OUT, -1, 1},
	};
	struct ftproc_opts o = {.path = s->argv[0], .argv = s->argv, .envp = env, .fds = map, .nfds = 4,
				.pdeathsig = SIGKILL};
	enum ftproc_stage stage;
	int r = ftproc_spawn(&w->proc, &o, &stage);
	ftproc_env_free(env);
	env = NULL;
	if (r < 0) {
		spawn_why(why, n, s->argv[0], stage, -r);
		goto fail;
	}
	w->pid = w->proc.pid;
	w->rfd = map[3].fd;
	w->ofd = map[1].fd;
	w->logfd = logfd;
	w->exit_status = w->sig = -1;
	w->max_line = s->max_line;
	w->log_max = s->log_max;
	w->deadline_ns = fttime_now_ns() + (uint64_t)s->timeout_s * 1000000000ull;
	w->cb = s->cb;
	w->ctx = s->ctx;
	return w;
fail:
	ftproc_env_free(env);
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
	ftproc_signal(&w->proc, SIGTERM);
	w->kill_at_ns = fttime_now_ns() + (uint64_t)grace_s * 1000000000ull;
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
		}
		if ((size_t)r > (size_t)(room > 0 ? room : 0) && !w->log_truncated) {
			/* what did not fit, even in the read that reached the cap, is said once */
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
	w->reaped = w->proc.reaped = 1;
	w->proc.status = st;
	w->exit_status = ftproc_exit_code(st);
	w->sig = WIFSIGNALED(st) ? WTERMSIG(st) : -1;
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
		ftproc_signal(&w->proc, SIGKILL);
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
	*outp = NULL;
	*lenp = 0;
	*timed_out_out = 0;
	char **env = child_env(NULL, NULL, 0); /* every GPU visible */
	if (!env) {
		snprintf(why, n, "out of memory");
		return -ENOMEM;
	}
	struct ftproc_fd map[] = {{0, FTPROC_FD_NULL, -1, 0}, {1, FTPROC_FD_PIPE_OUT, -1, 0}, {2, FTPROC_FD_NULL, -1, 0}};
	struct ftproc_opts o = {.path = argv[0], .argv = argv, .envp = env, .fds = map, .nfds = 3, .pdeathsig = SIGKILL};
	struct ftproc p;
	enum ftproc_stage stage;
	int r = ftproc_spawn(&p, &o, &stage);
	ftproc_env_free(env);
	if (r < 0) {
		snprintf(why, n, "cannot run %s %s %s: %s%s%s", argv[0], argv[1], argv[2],
			 stage == FTPROC_ST_EXEC || stage == FTPROC_ST_PARENT ? "" : ftproc_stage_name(stage),
			 stage == FTPROC_ST_EXEC || stage == FTPROC_ST_PARENT ? "" : ": ", strerror(-r));
		return r;
	}
	int fd = map[1].fd;
	size_t len = 0, cap = max;
	char *out = malloc(cap + 1);
	uint64_t deadline = fttime_now_ns() + (uint64_t)timeout_s * 1000000000ull;
	int timed_out = 0;
	while (out) {
		struct pollfd pf = {.fd = fd, .events = POLLIN};
		uint64_t now = fttime_now_ns();
		if (now >= deadline) {
			timed_out = 1;
			break;
		}
		int pr = poll(&pf, 1, (int)((deadline - now) / 1000000) + 1);
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr <= 0)
			continue;
		ssize_t k = read(fd, out + len, cap - len);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		len += (size_t)k;
		if (len == cap)
			break;
	}
	close(fd);
	if (timed_out)
		ftproc_signal(&p, SIGKILL);
	ftproc_wait(&p, -1);
	if (!out) {
		snprintf(why, n, "out of memory");
		return -ENOMEM;
	}
	out[len] = '\0';
	*outp = out;
	*lenp = len;
	*status = p.status;
	*timed_out_out = timed_out;
	return 0;
}
