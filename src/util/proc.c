/* proc: see proc.h. */
#include "util/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/close_range.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* What the child writes to the error pipe when it cannot reach its program. */
struct child_err {
	int stage; /* enum ftproc_stage */
	int err;   /* errno */
};

/* One fd of the child, decided in the parent: child fd .child <- parent fd .src. */
struct plan {
	int child, src;
};

static const char *const stage_names[] = {"", "setpgid", "chdir", "setting up fds", "execve"};

const char *ftproc_stage_name(enum ftproc_stage s)
{
	return (unsigned)s < sizeof stage_names / sizeof *stage_names ? stage_names[s] : "?";
}

/* Find name on the PATH of envp (else ours): an executable's path into out. */
static int search_path(const char *name, char *const *envp, char *out, size_t n)
{
	const char *path = NULL;
	for (char *const *e = envp; e && *e && !path; e++)
		if (!strncmp(*e, "PATH=", 5))
			path = *e + 5;
	if (!envp)
		path = getenv("PATH");
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	int r = -ENOENT;
	while (*path) {
		const char *e = strchr(path, ':');
		size_t dl = e ? (size_t)(e - path) : strlen(path);
		int w = snprintf(out, n, "%.*s/%s", (int)(dl ? dl : 1), dl ? path : ".", name);
		if (w > 0 && (size_t)w < n) {
			if (!access(out, X_OK))
				return 0;
			if (errno == EACCES)
				r = -EACCES;
		}
		path += dl + (e ? 1 : 0);
	}
	return r;
}

/* The child, from fork to execve: async-signal-safe calls only. Never returns. */
static void __attribute__((noreturn)) child(const struct ftproc_opts *o, const char *exe, pid_t parent, int errw,
					     struct plan *plan, int nplan, int base, long open_max)
{
	struct child_err ce = {FTPROC_ST_SETPGID, 0};
	int ep = errw;
	if (setpgid(0, 0) < 0)
		goto fail;
	if (o->pdeathsig) {
		prctl(PR_SET_PDEATHSIG, o->pdeathsig);
		if (getppid() != parent)
			_exit(127); /* the parent is gone already: the signal would never come */
	}
	struct sigaction dfl;
	memset(&dfl, 0, sizeof dfl);
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	for (int s = 1; s < NSIG; s++)
		if (s != SIGKILL && s != SIGSTOP)
			sigaction(s, &dfl, NULL); /* an invalid (reserved) number just fails */
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	ce.stage = FTPROC_ST_CHDIR;
	if (o->cwd && chdir(o->cwd) < 0)
		goto fail;
	/* move every source (and the error pipe) above every target first, so that no dup2 below
	 * can clobber a source still to be used */
	ce.stage = FTPROC_ST_FDS;
	ep = fcntl(errw, F_DUPFD_CLOEXEC, base);
	if (ep < 0) {
		ep = errw;
		goto fail;
	}
	for (int i = 0; i < nplan; i++)
		if ((plan[i].src = fcntl(plan[i].src, F_DUPFD_CLOEXEC, base)) < 0)
			goto fail;
	for (int i = 0; i < nplan; i++)
		if (dup2(plan[i].src, plan[i].child) < 0) /* the copy is not close-on-exec */
			goto fail;
	for (int fd = 0; fd < base; fd++) {
		int mapped = 0;
		for (int i = 0; i < nplan && !mapped; i++)
			mapped = plan[i].child == fd;
		if (!mapped)
			close(fd);
	}
	/* everything from base up, the error pipe included, goes at execve */
	if (syscall(SYS_close_range, (unsigned)base, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
		for (long fd = base; fd < open_max; fd++)
			fcntl((int)fd, F_SETFD, FD_CLOEXEC);
	ce.stage = FTPROC_ST_EXEC;
	execve(exe, o->argv, o->envp ? o->envp : environ);
fail:
	ce.err = errno;
	while (write(ep, &ce, sizeof ce) < 0 && errno == EINTR)
		;
	_exit(127);
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static void reap(pid_t pid, int *status)
{
	while (waitpid(pid, status, 0) < 0 && errno == EINTR)
		;
}

int ftproc_spawn(struct ftproc *p, const struct ftproc_opts *o, enum ftproc_stage *stage)
{
	enum ftproc_stage dummy;
	if (!stage)
		stage = &dummy;
	*stage = FTPROC_ST_PARENT;
	memset(p, 0, sizeof *p);
	if (!o || !o->path || !*o->path || !o->argv || !o->argv[0] || o->nfds < 0 || o->nfds > FTPROC_MAX_FDS ||
	    (o->nfds && !o->fds))
		return -EINVAL;
	/* check the map before anything is made */
	int maxchild = 2;
	for (int i = 0; i < o->nfds; i++) {
		const struct ftproc_fd *f = &o->fds[i];
		if (f->child < 0 || f->child > FTPROC_MAX_CHILD_FD || f->kind < FTPROC_FD_DUP || f->kind > FTPROC_FD_SAME)
			return -EINVAL;
		int earlier = 0;
		for (int k = 0; k < i; k++) {
			if (o->fds[k].child == f->child)
				return -EINVAL;
			earlier |= o->fds[k].child == f->fd;
		}
		if (f->kind == FTPROC_FD_SAME && !earlier)
			return -EINVAL;
		if (f->kind == FTPROC_FD_DUP && (f->fd < 0 || fcntl(f->fd, F_GETFD) < 0))
			return -EBADF;
		if (f->child > maxchild)
			maxchild = f->child;
	}
	char exe[PATH_MAX];
	int r;
	if (strchr(o->path, '/')) {
		if (strlen(o->path) >= sizeof exe)
			return -ENAMETOOLONG;
		strcpy(exe, o->path);
	} else if ((r = search_path(o->path, o->envp, exe, sizeof exe)) < 0) {
		return r;
	}
	struct plan plan[FTPROC_MAX_FDS + 3];
	int pend[FTPROC_MAX_FDS], cend[FTPROC_MAX_FDS]; /* pipe ends: the parent's, the child's */
	int nplan = 0, devnull = -1, errp[2] = {-1, -1};
	for (int i = 0; i < o->nfds; i++)
		pend[i] = cend[i] = -1;
	int need_null = 0;
	for (int c = 0; c <= 2; c++) {
		int mapped = 0;
		for (int i = 0; i < o->nfds; i++)
			mapped |= o->fds[i].child == c;
		need_null |= !mapped;
	}
	for (int i = 0; i < o->nfds; i++)
		need_null |= o->fds[i].kind == FTPROC_FD_NULL;
	if (need_null && (devnull = open("/dev/null", O_RDWR | O_CLOEXEC)) < 0) {
		r = -errno;
		goto fail;
	}
	for (int i = 0; i < o->nfds; i++) {
		const struct ftproc_fd *f = &o->fds[i];
		int src = f->fd;
		if (f->kind == FTPROC_FD_PIPE_OUT || f->kind == FTPROC_FD_PIPE_IN) {
			int pp[2];
			if (pipe2(pp, O_CLOEXEC) < 0) {
				r = -errno;
				goto fail;
			}
			int out = f->kind == FTPROC_FD_PIPE_OUT;
			pend[i] = out ? pp[0] : pp[1];
			cend[i] = out ? pp[1] : pp[0];
			if (f->nonblock && fcntl(pend[i], F_SETFL, fcntl(pend[i], F_GETFL) | O_NONBLOCK) < 0) {
				r = -errno;
				goto fail;
			}
			src = cend[i];
		} else if (f->kind == FTPROC_FD_NULL) {
			src = devnull;
		} else if (f->kind == FTPROC_FD_SAME) {
			for (int k = 0; k < nplan; k++)
				if (plan[k].child == f->fd)
					src = plan[k].src;
		}
		plan[nplan++] = (struct plan){f->child, src};
	}
	for (int c = 0; c <= 2; c++) {
		int mapped = 0;
		for (int i = 0; i < o->nfds; i++)
			mapped |= o->fds[i].child == c;
		if (!mapped)
			plan[nplan++] = (struct plan){c, devnull};
	}
	if (pipe2(errp, O_CLOEXEC) < 0) {
		r = -errno;
		goto fail;
	}
	long open_max = sysconf(_SC_OPEN_MAX);
	if (open_max < 0 || open_max > 65536)
		open_max = 65536;
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		r = -errno;
		goto fail;
	}
	if (pid == 0)
		child(o, exe, parent, errp[1], plan, nplan, maxchild + 1, open_max);
	close_fd(&errp[1]);
	close_fd(&devnull);
	for (int i = 0; i < o->nfds; i++)
		close_fd(&cend[i]);
	struct child_err ce = {FTPROC_ST_EXEC, 0};
	ssize_t got;
	do
		got = read(errp[0], &ce, sizeof ce);
	while (got < 0 && errno == EINTR);
	close_fd(&errp[0]);
	if (got != 0) {
		/* the child reported a failure (or the pipe broke: treat as one) and has exited */
		int st;
		reap(pid, &st);
		if (got == (ssize_t)sizeof ce) {
			*stage = ce.stage >= FTPROC_ST_SETPGID && ce.stage <= FTPROC_ST_EXEC ? (enum ftproc_stage)ce.stage
											    : FTPROC_ST_EXEC;
			r = -(ce.err ? ce.err : ENOEXEC);
		} else {
			r = got < 0 ? -errno : -EIO;
		}
		goto fail;
	}
	setpgid(pid, pid); /* also from here (it fails once the child has exec'd: harmless) */
	for (int i = 0; i < o->nfds; i++)
		if (o->fds[i].kind == FTPROC_FD_PIPE_OUT || o->fds[i].kind == FTPROC_FD_PIPE_IN)
			o->fds[i].fd = pend[i];
	p->pid = pid;
	return 0;
fail:
	close_fd(&errp[0]);
	close_fd(&errp[1]);
	close_fd(&devnull);
	for (int i = 0; i < o->nfds; i++) {
		close_fd(&pend[i]);
		close_fd(&cend[i]);
		if (o->fds[i].kind == FTPROC_FD_PIPE_OUT || o->fds[i].kind == FTPROC_FD_PIPE_IN)
			o->fds[i].fd = -1;
	}
	return r;
}

int ftproc_poll(struct ftproc *p)
{
	if (!p || p->pid <= 0 || p->reaped)
		return 0;
	pid_t w;
	int st = 0;
	while ((w = waitpid(p->pid, &st, WNOHANG)) < 0 && errno == EINTR)
		;
	if (w == 0)
		return 1;
	if (w < 0 && errno != ECHILD)
		return -errno;
	p->reaped = 1;
	p->status = w < 0 ? 0 : st;
	return 0;
}

static void nap(double s)
{
	struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int ftproc_wait(struct ftproc *p, double timeout_s)
{
	if (!p || p->pid <= 0 || p->reaped)
		return 0;
	if (timeout_s < 0) {
		int st = 0;
		pid_t w;
		while ((w = waitpid(p->pid, &st, 0)) < 0 && errno == EINTR)
			;
		if (w < 0 && errno != ECHILD)
			return -errno;
		p->reaped = 1;
		p->status = w < 0 ? 0 : st;
		return 0;
	}
	double end = now_s() + timeout_s, step = 0.001;
	for (;;) {
		int r = ftproc_poll(p);
		if (r <= 0)
			return r;
		double left = end - now_s();
		if (left <= 0)
			return -ETIMEDOUT;
		nap(step < left ? step : left);
		if (step < 0.02)
			step *= 2;
	}
}

int ftproc_signal(const struct ftproc *p, int sig)
{
	if (!p || p->pid <= 0)
		return -ESRCH;
	return kill(-p->pid, sig) < 0 ? -errno : 0;
}

int ftproc_group_alive(const struct ftproc *p)
{
	if (!p || p->pid <= 0)
		return 0;
	return kill(-p->pid, 0) == 0 || errno == EPERM;
}

/* Up to secs for every member of the group to be gone (the leader reaped on the way); 1 gone. */
static int group_gone(struct ftproc *p, double secs)
{
	double end = now_s() + secs, step = 0.001;
	for (;;) {
		ftproc_poll(p); /* the leader's zombie is a member until reaped */
		if (!ftproc_group_alive(p))
			return 1;
		double left = end - now_s();
		if (left <= 0)
			return 0;
		nap(step < left ? step : left);
		if (step < 0.02)
			step *= 2;
	}
}

int ftproc_stop(struct ftproc *p, double term_s, double kill_s, enum ftproc_stop_how *how)
{
	enum ftproc_stop_how dummy;
	if (!how)
		how = &dummy;
	*how = FTPROC_STOP_GONE;
	if (!p || p->pid <= 0)
		return 0;
	ftproc_poll(p);
	if (!ftproc_group_alive(p))
		return 0;
	int r = 0;
	ftproc_signal(p, SIGTERM);
	if (group_gone(p, term_s > 0 ? term_s : 0)) {
		*how = FTPROC_STOP_TERM;
	} else {
		ftproc_signal(p, SIGKILL);
		if (group_gone(p, kill_s > 0 ? kill_s : 0)) {
			*how = FTPROC_STOP_KILL;
		} else {
			*how = FTPROC_STOP_STUCK;
			r = -ETIMEDOUT;
		}
	}
	ftproc_poll(p);
	return r;
}

pid_t ftproc_reap_any(int *status)
{
	int st = 0;
	pid_t w;
	while ((w = waitpid(-1, &st, WNOHANG)) < 0 && errno == EINTR)
		;
	if (w < 0)
		return -errno;
	if (w > 0 && status)
		*status = st;
	return w;
}

int ftproc_exit_code(int status)
{
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

void ftproc_status_string(int status, char *buf, size_t n)
{
	if (WIFEXITED(status))
		snprintf(buf, n, "exited with status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, n, "killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
	else
		snprintf(buf, n, "wait status 0x%x", status);
}

void ftproc_env_free(char **env)
{
	for (char **e = env; e && *e; e++)
		free(*e);
	free(env);
}

/* 1 when entry e sets the variable that a ("NAME=..." or "NAME=") names. */
static int same_name(const char *e, const char *a)
{
	size_t l = (size_t)(strchr(a, '=') - a) + 1;
	return !strncmp(e, a, l);
}

int ftproc_env_new(char ***out, char *const *base, const char *const *drop, const char *const *set)
{
	*out = NULL;
	if (!base)
		base = environ;
	size_t nb = 0, ns = 0;
	while (base && base[nb])
		nb++;
	while (set && set[ns]) {
		if (!strchr(set[ns], '='))
			return -EINVAL;
		ns++;
	}
	char **env = calloc(nb + ns + 1, sizeof *env);
	if (!env)
		return -ENOMEM;
	size_t k = 0;
	for (size_t i = 0; i < nb; i++) {
		int skip = !strchr(base[i], '=');
		for (const char *const *d = drop; d && *d && !skip; d++)
			skip = !strncmp(base[i], *d, strlen(*d));
		for (size_t s = 0; s < ns && !skip; s++)
			skip = same_name(base[i], set[s]);
		if (skip)
			continue;
		if (!(env[k++] = strdup(base[i])))
			goto nomem;
	}
	for (size_t s = 0; s < ns; s++) {
		int later = 0; /* a later entry of set for the same name wins */
		for (size_t t = s + 1; t < ns && !later; t++)
			later = same_name(set[t], set[s]);
		if (!later && !(env[k++] = strdup(set[s])))
			goto nomem;
	}
	*out = env;
	return 0;
nomem:
	ftproc_env_free(env);
	return -ENOMEM;
}
