/* runner: one worker process per running job, fork + execve of
 * `<worker> <kind> ... --result-fd=3`, in its own process group, with PR_SET_PDEATHSIG.
 * The child's fd 3 carries JSON lines (progress/result/error), read with a size cap; its
 * stdout+stderr go to a size-capped log. A job is finished only after EOF on both pipes AND
 * waitpid. Runs on the main thread with ftd.lock held. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ftbenchd.h"
#include "ftprofile.h"
#include "log.h"
#include "util/timeutil.h"

extern char **environ;

#define FTD_PIPE_GRACE_NS (5ull * 1000000000ull) /* after waitpid, how long EOF may take */

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

int ftd_runner_start(struct ftd_job *j, char *why, size_t n)
{
	int rp[2] = {-1, -1}, op[2] = {-1, -1}, devnull = -1, logfd = -1, r;
	char path[4096];
	char **env = NULL;

	snprintf(path, sizeof path, "%s/%s.log", ftd.logs_dir, j->id);
	logfd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_APPEND | O_NOFOLLOW, 0640);
	if (logfd < 0) {
		snprintf(why, n, "cannot open the job log %s: %s", path, strerror(errno));
		goto fail;
	}
	if (pipe2(rp, O_CLOEXEC) < 0 || pipe2(op, O_CLOEXEC) < 0 ||
	    (devnull = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0) {
		snprintf(why, n, "cannot make pipes: %s", strerror(errno));
		goto fail;
	}
	char *all = NULL;
	if (ftd_job_all_gpus(j)) {
		/* every GPU of the inventory, in index order (the worker's --gpu all sees them all) */
		size_t len = 1;
		for (int i = 0; i < ftd.ngpus; i++)
			len += strlen(ftd.gpus[i].uuid) + 1;
		all = calloc(1, len);
		for (int i = 0; all && i < ftd.ngpus; i++) {
			if (i)
				strcat(all, ",");
			strcat(all, ftd.gpus[i].uuid);
		}
		if (!all) {
			snprintf(why, n, "out of memory");
			goto fail;
		}
	}
	env = job_env(j->id, all ? all : j->gpu_index >= 0 ? j->gpu_uuid : NULL);
	free(all);
	if (!env) {
		snprintf(why, n, "out of memory");
		goto fail;
	}
	int stage;
	pid_t pid = spawn(j->argv, env, rp[1], op[1], devnull, &stage);
	env_free(env);
	env = NULL;
	if (pid < 0) {
		if (stage == SP_EXEC)
			snprintf(why, n, "cannot execute the worker %s: %s", j->argv[0], strerror((int)-pid));
		else
			snprintf(why, n, "cannot start the worker %s: %s failed: %s", j->argv[0], stage_names[stage],
				 strerror((int)-pid));
		goto fail;
	}
	close(rp[1]);
	close(op[1]);
	close(devnull);
	fcntl(rp[0], F_SETFL, O_NONBLOCK);
	fcntl(op[0], F_SETFL, O_NONBLOCK);
	j->pid = pid;
	j->rfd = rp[0];
	j->ofd = op[0];
	j->logfd = logfd;
	j->reaped = j->rfd_eof = j->ofd_eof = j->timed_out = j->proto_err = 0;
	j->deadline_ns = ft_now_ns() + (uint64_t)j->timeout_s * 1000000000ull;
	j->kill_at_ns = 0;
	j->log_bytes = 0;
	ftd_procs_job_started(j);
	r = ftd_job_set_state(j, ST_RUNNING);
	if (r < 0)
		ftd_log(FTD_LOG_WARNING, "job %s: running, but the journal says otherwise", j->id);
	ftd_log(FTD_LOG_INFO, "job %s: started %s (pid %d)", j->id, j->kind->name, (int)pid);
	return 0;
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
	return -1;
}

void ftd_runner_terminate(struct ftd_job *j)
{
	if (j->state != ST_RUNNING || j->reaped || j->kill_at_ns)
		return;
	kill(-j->pid, SIGTERM);
	j->kill_at_ns = ft_now_ns() + (uint64_t)ftd.cfg.kill_grace * 1000000000ull;
	if (!j->kill_at_ns)
		j->kill_at_ns = 1;
}

static void protocol_error(struct ftd_job *j, const char *fmt, const char *detail)
{
	if (!j->proto_err) {
		j->proto_err = 1;
		char msg[512];
		snprintf(msg, sizeof msg, fmt, detail);
		free(j->error);
		j->error = strdup(msg);
		ftd_log(FTD_LOG_WARNING, "job %s: %s", j->id, msg);
		ftd_runner_terminate(j);
	}
}

static void handle_line(struct ftd_job *j, char *line, size_t len)
{
	if (j->proto_err)
		return;
	json_error_t jerr;
	json_t *m = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
	const char *type = json_string_value(json_object_get(m, "type"));
	if (!m || !json_is_object(m) || !type) {
		protocol_error(j, "worker protocol error: %s", m ? "a message without a type" : "a line that is not JSON");
		json_decref(m);
		return;
	}
	if (!strcmp(type, "progress")) {
		json_t *d = json_object_get(m, "done"), *t = json_object_get(m, "total"), *l = json_object_get(m, "label");
		if (!json_is_integer(d) || !json_is_integer(t) || (l && !json_is_string(l))) {
			protocol_error(j, "worker protocol error: %s", "a malformed progress message");
		} else {
			j->has_progress = 1;
			j->prog_done = (int)json_integer_value(d);
			j->prog_total = (int)json_integer_value(t);
			free(j->prog_label);
			j->prog_label = strdup(l ? json_string_value(l) : "");
			ftd_job_event(j, EV_PROGRESS, json_pack("{s:i,s:i,s:s}", "done", j->prog_done, "total",
							       j->prog_total, "label", j->prog_label ? j->prog_label : ""));
		}
	} else if (!strcmp(type, "result")) {
		json_t *r = json_object_get(m, "result");
		if (!json_is_object(r)) {
			protocol_error(j, "worker protocol error: %s", "a result that is not an object");
		} else {
			json_decref(j->result);
			j->result = json_incref(r);
			ftd_job_event(j, EV_RESULT, json_pack("{s:O}", "result", r));
		}
	} else if (!strcmp(type, "error")) {
		const char *msg = json_string_value(json_object_get(m, "message"));
		if (!msg) {
			protocol_error(j, "worker protocol error: %s", "an error without a message");
		} else {
			free(j->error);
			j->error = strdup(msg);
			ftd_job_event(j, EV_ERROR, json_pack("{s:s}", "message", msg));
		}
	} else {
		protocol_error(j, "worker protocol error: unknown message type '%.64s'", type);
	}
	json_decref(m);
}

/* The worker's result pipe / output pipe is done with: closed, marked at EOF, buffer freed. */
static void end_result(struct ftd_job *j)
{
	if (j->rfd >= 0)
		close(j->rfd);
	j->rfd = -1;
	j->rfd_eof = 1;
	free(j->line);
	j->line = NULL;
	j->linelen = j->linecap = 0;
}

static void end_output(struct ftd_job *j)
{
	if (j->ofd >= 0)
		close(j->ofd);
	j->ofd = -1;
	j->ofd_eof = 1;
}

static void read_result(struct ftd_job *j)
{
	for (;;) {
		if (j->linecap - j->linelen < 65536) {
			size_t cap = j->linecap ? j->linecap * 2 : 65536;
			size_t max = (size_t)ftd.cfg.max_result_line + 65536;
			if (cap > max)
				cap = max;
			if (cap > j->linecap) {
				char *p = realloc(j->line, cap);
				if (!p) {
					protocol_error(j, "worker protocol error: %s", "out of memory");
					goto eof;
				}
				j->line = p;
				j->linecap = cap;
			}
		}
		size_t room = j->linecap - j->linelen;
		if (room == 0) {
			protocol_error(j, "worker protocol error: %s", "a line over max-result-line bytes");
			goto eof;
		}
		ssize_t r = read(j->rfd, j->line + j->linelen, room);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return;
			goto eof;
		}
		if (r == 0) {
			if (j->linelen > 0)
				protocol_error(j, "worker protocol error: %s", "a last line without a newline");
			goto eof;
		}
		size_t start = 0, end = j->linelen + (size_t)r;
		for (size_t i = j->linelen; i < end; i++) {
			if (j->line[i] != '\n')
				continue;
			if (i - start > (size_t)ftd.cfg.max_result_line)
				protocol_error(j, "worker protocol error: %s", "a line over max-result-line bytes");
			else if (i > start)
				handle_line(j, j->line + start, i - start);
			start = i + 1;
		}
		memmove(j->line, j->line + start, end - start);
		j->linelen = end - start;
		if (j->linelen > (size_t)ftd.cfg.max_result_line) {
			protocol_error(j, "worker protocol error: %s", "a line over max-result-line bytes");
			goto eof;
		}
	}
eof:
	end_result(j);
}

static void read_output(struct ftd_job *j)
{
	char buf[16384];
	for (;;) {
		ssize_t r = read(j->ofd, buf, sizeof buf);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno == EAGAIN)
			return;
		if (r <= 0) {
			end_output(j);
			return;
		}
		long room = ftd.cfg.log_max - j->log_bytes;
		if (room > 0) {
			size_t w = (size_t)r < (size_t)room ? (size_t)r : (size_t)room;
			if (write(j->logfd, buf, w) == (ssize_t)w)
				j->log_bytes += (long)w;
		} else if (!j->log_truncated) {
			static const char note[] = "\n[ftbenchd: log truncated at log-max bytes]\n";
			if (write(j->logfd, note, sizeof note - 1) < 0) {
				/* nothing more to do: the log is best effort */
			}
			j->log_truncated = 1;
		}
	}
}

int ftd_runner_npollfds(void)
{
	int n = 0;
	for (struct ftd_job *j = ftd.head; j; j = j->next)
		if (j->state == ST_RUNNING)
			n += (j->rfd >= 0) + (j->ofd >= 0);
	return n;
}

int ftd_runner_pollfds(struct pollfd *pfd, struct ftd_job **owner, int max)
{
	int n = 0;
	for (struct ftd_job *j = ftd.head; j && n + 2 <= max; j = j->next) {
		if (j->state != ST_RUNNING)
			continue;
		if (j->rfd >= 0) {
			pfd[n] = (struct pollfd){.fd = j->rfd, .events = POLLIN};
			owner[n++] = j;
		}
		if (j->ofd >= 0) {
			pfd[n] = (struct pollfd){.fd = j->ofd, .events = POLLIN};
			owner[n++] = j;
		}
	}
	return n;
}

void ftd_runner_io(struct ftd_job *j, int fd, short revents)
{
	if (fd == j->rfd)
		read_result(j);
	else if (fd == j->ofd)
		read_output(j);
}

void ftd_runner_reap(void)
{
	for (;;) {
		int st;
		pid_t pid = waitpid(-1, &st, WNOHANG);
		if (pid <= 0)
			return;
		for (struct ftd_job *j = ftd.head; j; j = j->next) {
			if (j->state != ST_RUNNING || j->pid != pid || j->reaped)
				continue;
			j->reaped = 1;
			if (WIFEXITED(st)) {
				j->exit_status = WEXITSTATUS(st);
				j->sig = -1;
			} else if (WIFSIGNALED(st)) {
				j->sig = WTERMSIG(st);
				j->exit_status = 128 + j->sig;
			}
			/* whatever the worker left behind goes with it, so the pipes reach EOF: its
			 * groups, what carries its FTBENCHD_JOB_ID, and whatever below the daemon (a
			 * subreaper) no running job claims */
			ftd_procs_end_job(j);
			j->reaped_ns = ft_now_ns();
			break;
		}
	}
}

int ftd_runner_timers(void)
{
	uint64_t now = ft_now_ns(), next = UINT64_MAX;
	for (struct ftd_job *j = ftd.head; j; j = j->next) {
		if (j->state != ST_RUNNING)
			continue;
		if ((j->cancel_requested || ftd.stopping) && !j->kill_at_ns && !j->reaped) {
			if (ftd.stopping && !j->cancel_requested)
				j->stop_reason_daemon = 1;
			ftd_runner_terminate(j);
		}
		if (!j->reaped && !j->kill_at_ns && now >= j->deadline_ns) {
			j->timed_out = 1;
			ftd_log(FTD_LOG_NOTICE, "job %s: timed out after %ld s", j->id, j->timeout_s);
			ftd_runner_terminate(j);
		}
		if (j->kill_at_ns && now >= j->kill_at_ns) {
			kill(-j->pid, SIGKILL);
			j->kill_at_ns = UINT64_MAX; /* sent */
		}
		if (!j->reaped && !j->kill_at_ns && j->deadline_ns < next)
			next = j->deadline_ns;
		if (j->kill_at_ns && j->kill_at_ns != UINT64_MAX && j->kill_at_ns < next)
			next = j->kill_at_ns;
		if (!j->reaped && j->groups_scan_ns + FTD_TRACK_NS < next)
			next = j->groups_scan_ns + FTD_TRACK_NS; /* ftd_procs_track */
		if (j->reaped && j->reaped_ns + FTD_PIPE_GRACE_NS < next)
			next = j->reaped_ns + FTD_PIPE_GRACE_NS + 1;
	}
	if (next == UINT64_MAX)
		return -1;
	uint64_t ms = next > now ? (next - now) / 1000000 + 1 : 0;
	return ms > 60000 ? 60000 : (int)ms;
}

/* A finished job keeps its state, result and error events for replay but only its last progress
 * event, unless an SSE reader is walking the list right now (it holds a reference). */
static void compact_events(struct ftd_job *j)
{
	if (j->refs != 1 || j->nev == 0)
		return;
	size_t last = j->nev, k = 0;
	for (size_t i = 0; i < j->nev; i++)
		if (j->ev[i].type == EV_PROGRESS)
			last = i;
	for (size_t i = 0; i < j->nev; i++) {
		if (j->ev[i].type == EV_PROGRESS && i != last) {
			free(j->ev[i].data);
			continue;
		}
		j->ev[k++] = j->ev[i];
	}
	j->nev = k;
}

/* A bw worker's exit 3: it measured, but its profile's own checks failed. The profile (each of
 * a gpu "all" run's that is not valid) goes to the history only, so the stored one, which
 * engines read, stays; the job fails with the first reason. */
static void keep_invalid(struct ftd_job *j, char *msg, size_t n)
{
	json_t *many = json_object_get(j->result, "profiles"), *one = json_array();
	if (json_is_array(many))
		json_array_extend(one, many);
	else
		json_array_append(one, j->result);
	size_t i, bad = 0;
	json_t *p, *first = NULL;
	json_array_foreach(one, i, p) {
		if (!json_is_false(json_object_get(p, "valid")))
			continue;
		const char *u = json_string_value(json_object_get(json_object_get(p, "gpu"), "uuid"));
		int r = ftprof_history_add(ftd.profile_dir, p, u, ftd.cfg.history > 0 ? (int)ftd.cfg.history : 1);
		if (r < 0)
			ftd_log(FTD_LOG_WARNING, "job %s: keeping the profile in the history: %s", j->id, strerror(-r));
		if (!first)
			first = json_array_get(json_object_get(p, "invalid_reasons"), 0);
		bad++;
	}
	if (bad)
		snprintf(msg, n, "the profile is not valid (kept in the history; the stored profile is unchanged): %s%s",
			 json_is_string(first) ? json_string_value(first) : "its own checks failed",
			 bad > 1 ? " (and others)" : "");
	json_decref(one);
}

static void finish(struct ftd_job *j)
{
	enum ftd_state s;
	char msg[256] = "";
	if (j->logfd >= 0) {
		close(j->logfd);
		j->logfd = -1;
	}
	if (j->timed_out) {
		s = ST_TIMED_OUT;
		snprintf(msg, sizeof msg, "timed out after %ld s", j->timeout_s);
	} else if (j->stop_reason_daemon && !(j->exit_status == 0 && j->result && !j->proto_err)) {
		s = ST_INTERRUPTED;
		snprintf(msg, sizeof msg, "the daemon stopped while the job was running");
	} else if (j->cancel_requested) {
		s = ST_CANCELLED;
		snprintf(msg, sizeof msg, "cancelled");
	} else if (j->proto_err) {
		s = ST_FAILED;
	} else if (j->exit_status == 0 && j->result) {
		s = ST_SUCCEEDED;
	} else {
		s = ST_FAILED;
		if (j->sig > 0)
			snprintf(msg, sizeof msg, "the worker was killed by signal %d (%s)", j->sig, strsignal(j->sig));
		else if (j->exit_status != 0)
			snprintf(msg, sizeof msg, "the worker exited with status %d", j->exit_status);
		else
			snprintf(msg, sizeof msg, "the worker exited without a result");
	}
	if (s == ST_FAILED && j->exit_status == 3 && j->result && !j->proto_err && !strcmp(j->kind->name, "bw"))
		keep_invalid(j, msg, sizeof msg);
	if (s == ST_SUCCEEDED && !strcmp(j->kind->name, "bw")) {
		char *path = NULL;
		int r;
		json_t *many = json_object_get(j->result, "profiles");
		if (json_is_array(many)) {
			/* bw with gpu "all": one profile per GPU, each stored under its own uuid */
			size_t i;
			json_t *p;
			r = json_array_size(many) ? 0 : -EINVAL;
			json_array_foreach(many, i, p) {
				const char *u = json_string_value(json_object_get(json_object_get(p, "gpu"), "uuid"));
				free(path);
				path = NULL;
				if (r == 0)
					r = u ? ftd_profile_store(p, u, &path) : -EINVAL;
			}
		} else {
			r = ftd_profile_store(j->result, j->gpu_index >= 0 ? j->gpu_uuid : NULL, &path);
		}
		if (r < 0) {
			s = ST_FAILED;
			snprintf(msg, sizeof msg, "the profile could not be stored in %s: %s", ftd.profile_dir, strerror(-r));
		} else {
			free(j->profile_path);
			j->profile_path = path;
			ftd_log(FTD_LOG_INFO, "job %s: profile written to %s", j->id, path);
		}
	}
	/* the daemon's reason wins, except that a worker's own error explains a plain failure */
	if (*msg && (s != ST_FAILED || !j->error || j->sig > 0)) {
		free(j->error);
		j->error = strdup(msg);
	}
	if (s != ST_SUCCEEDED && j->error)
		ftd_job_event(j, EV_ERROR, json_pack("{s:s}", "message", j->error));
	if (s == ST_SUCCEEDED) {
		free(j->error);
		j->error = NULL;
	}
	j->finished = ft_wall_epoch();
	ftd_job_set_state(j, s);
	ftd_job_account(j);
	compact_events(j);
	ftd_log(FTD_LOG_INFO, "job %s: %s (exit status %d)%s%s", j->id, ftd_state_name(s), j->exit_status,
		j->error ? ": " : "", j->error ? j->error : "");
}

void ftd_runner_finish_ready(void)
{
	uint64_t now = ft_now_ns();
	for (struct ftd_job *j = ftd.head; j; j = j->next) {
		if (j->state != ST_RUNNING || !j->reaped)
			continue;
		if ((!j->rfd_eof || !j->ofd_eof) && now - j->reaped_ns > FTD_PIPE_GRACE_NS) {
			/* something we cannot see still holds the pipes: stop waiting for EOF */
			ftd_log(FTD_LOG_WARNING, "job %s: the worker exited but its pipes stay open; closing them", j->id);
			if (!j->rfd_eof) {
				read_result(j);
				end_result(j);
			}
			if (!j->ofd_eof) {
				read_output(j);
				end_output(j);
			}
		}
		if (j->rfd_eof && j->ofd_eof)
			finish(j);
	}
}

int ftd_runner_busy(void)
{
	return ftd_count_state(ST_RUNNING);
}

/* Kill every process that still carries FTBENCHD_JOB_ID=<id> (the worker and anything it left
 * behind, even after its group leader died with us), plus the recorded group if its leader is
 * one of them. Only processes whose environment we may read are considered. */
void ftd_runner_kill_orphan(const char *job_id, pid_t pgid)
{
	char want[64];
	int wl = snprintf(want, sizeof want, "FTBENCHD_JOB_ID=%s", job_id);
	DIR *d = opendir("/proc");
	if (!d)
		return;
	static char buf[1 << 16];
	struct dirent *e;
	while ((e = readdir(d))) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		if (*end || pid <= 1 || pid == (long)getpid())
			continue;
		char path[64];
		snprintf(path, sizeof path, "/proc/%ld/environ", pid);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		ssize_t r = read(fd, buf, sizeof buf - 1);
		close(fd);
		if (r <= 0)
			continue;
		buf[r] = '\0';
		for (char *p = buf; p < buf + r; p += strlen(p) + 1) {
			if (!strncmp(p, want, (size_t)wl) && p[wl] == '\0') {
				ftd_log(FTD_LOG_NOTICE, "job %s: killing leftover process %ld", job_id, pid);
				kill((pid_t)pid, SIGKILL);
				break;
			}
		}
	}
	closedir(d);
	(void)pgid;
}

void ftd_inventory_load(void)
{
	int op[2], devnull;
	char *argv[] = {ftd.worker, "gpus", "--json", NULL};
	ftd.ngpus = 0;
	snprintf(ftd.gpus_reason, sizeof ftd.gpus_reason, "unknown");
	if (pipe2(op, O_CLOEXEC) < 0 || (devnull = open("/dev/null", O_RDWR | O_CLOEXEC)) < 0) {
		snprintf(ftd.gpus_reason, sizeof ftd.gpus_reason, "cannot make a pipe: %s", strerror(errno));
		return;
	}
	char **env = job_env(NULL, NULL);
	/* the inventory must see every GPU: drop the CUDA_VISIBLE_DEVICES= job_env sets */
	for (char **p = env; p && *p; p++)
		if (!strncmp(*p, "CUDA_VISIBLE_DEVICES=", 21)) {
			free(*p);
			for (char **q = p; *q; q++)
				q[0] = q[1];
			break;
		}
	int stage = SP_EXEC;
	pid_t pid = env ? spawn(argv, env, -1, op[1], devnull, &stage) : -ENOMEM;
	env_free(env);
	close(op[1]);
	close(devnull);
	if (pid < 0) {
		snprintf(ftd.gpus_reason, sizeof ftd.gpus_reason, "cannot run %s gpus --json: %s%s%s", ftd.worker,
			 stage == SP_EXEC ? "" : stage_names[stage], stage == SP_EXEC ? "" : ": ", strerror((int)-pid));
		close(op[0]);
		ftd_log(FTD_LOG_WARNING, "inventory: %s", ftd.gpus_reason);
		return;
	}
	size_t len = 0, cap = 1 << 20;
	char *out = malloc(cap + 1);
	uint64_t deadline = ft_now_ns() + (uint64_t)ftd.cfg.gpus_timeout * 1000000000ull;
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
		snprintf(ftd.gpus_reason, sizeof ftd.gpus_reason, "out of memory");
		return;
	}
	out[len] = '\0';
	json_t *o = json_loads(out, 0, NULL);
	free(out);
	json_t *arr = json_object_get(o, "gpus");
	if (timed_out || !json_is_array(arr)) {
		snprintf(ftd.gpus_reason, sizeof ftd.gpus_reason, "%s gpus --json %s", ftd.worker,
			 timed_out ? "timed out" : WIFEXITED(st) && WEXITSTATUS(st) ? "failed" : "printed no GPU list");
		ftd_log(FTD_LOG_WARNING, "inventory: %s", ftd.gpus_reason);
		json_decref(o);
		return;
	}
	size_t n = json_array_size(arr);
	ftd.gpus = calloc(n ? n : 1, sizeof *ftd.gpus);
	for (size_t i = 0; ftd.gpus && i < n && i < 256; i++)
		if (ftgpu_from_json(json_array_get(arr, i), &ftd.gpus[ftd.ngpus]) == 0)
			ftd.ngpus++;
	const char *reason = json_string_value(json_object_get(o, "reason"));
	snprintf(ftd.gpus_reason, sizeof ftd.gpus_reason, "%s", ftd.ngpus ? "" : reason ? reason : "no GPU");
	json_decref(o);
	ftd_log(FTD_LOG_INFO, "inventory: %d GPU(s)%s%s", ftd.ngpus, ftd.ngpus ? "" : ": ", ftd.gpus_reason);
	for (int i = 0; i < ftd.ngpus; i++)
		ftd_log(FTD_LOG_INFO, "inventory: GPU %d %s %s", ftd.gpus[i].index, ftd.gpus[i].uuid, ftd.gpus[i].name);
}
