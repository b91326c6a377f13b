/* proc: the one way to start and stop a child process.
 *
 * ftproc_spawn forks and execs one program as the leader of a new process group, with
 * PR_SET_PDEATHSIG, an explicit environment and an fd map (child fd N <- a parent fd, a new pipe
 * or /dev/null). Between fork and exec the child makes only async-signal-safe calls (no malloc,
 * no stdio, no locks), so spawning from a threaded process is safe. A failure of the child before
 * or in execve comes back through a close-on-exec pipe as {stage, errno}: "not found" is an error
 * of ftproc_spawn, never an exit status found later.
 *
 * In the child: signal dispositions are reset to the default (ignored ones included) and the
 * signal mask is emptied; fds 0, 1 and 2 that the map does not name are /dev/null; every other
 * fd that the map does not name is closed, whatever its close-on-exec flag.
 *
 * Ownership: the caller owns struct ftproc (plain data, no release function) and every fd it
 * gives or gets back: a pipe end returned in ftproc_fd.fd is the caller's to close. Nothing here
 * keeps a reference to argv, envp or the map after ftproc_spawn returns.
 *
 * Waiting: a child is waited for only through its own pid (never waitpid(-1)), except by
 * ftproc_reap_any, which is for a caller that owns every child of the process (a daemon's
 * SIGCHLD loop). Once reaped, p->pid stays as the (former) group id so that group members left
 * behind can still be signalled and waited for (ftproc_group_alive, ftproc_stop).
 *
 * Every function returns 0 (or a count or flag as said) or -errno; none logs, exits or leaves
 * an fd or a zombie behind on error. EINTR is retried inside. */
#ifndef FT_UTIL_PROC_H
#define FT_UTIL_PROC_H
#include <stddef.h>
#include <sys/types.h>

/* What a child fd is connected to (ftproc_fd.kind). */
enum ftproc_fd_kind {
	FTPROC_FD_DUP,      /* parent fd .fd (not closed, not changed: the child gets a copy) */
	FTPROC_FD_PIPE_OUT, /* a new pipe the child writes: its read end is returned in .fd */
	FTPROC_FD_PIPE_IN,  /* a new pipe the child reads: its write end is returned in .fd */
	FTPROC_FD_NULL,     /* /dev/null, read-write */
	FTPROC_FD_SAME,     /* what child fd .fd gets, an entry earlier in the map (2>&1: {2, SAME, 1}) */
};

/* One entry of the fd map: child fd .child <- .kind. Returned pipe ends are close-on-exec, and
 * non-blocking when .nonblock is set; on error .fd is left -1 for pipes. */
struct ftproc_fd {
	int child;                /* 0..FTPROC_MAX_CHILD_FD, each at most once */
	enum ftproc_fd_kind kind;
	int fd;                   /* FTPROC_FD_DUP: the parent fd (in); pipes: the parent's end (out);
				   * FTPROC_FD_SAME: the child fd it copies (in) */
	int nonblock;             /* pipes: O_NONBLOCK on the parent's end */
};
#define FTPROC_MAX_CHILD_FD 63
#define FTPROC_MAX_FDS 16

struct ftproc_opts {
	const char *path;          /* the program; without '/', searched in the PATH of envp (else of
				    * the caller's environment, else /usr/local/bin:/usr/bin:/bin) */
	char *const *argv;         /* argv[0] is what the child sees as its name; NULL-terminated */
	char *const *envp;         /* the child's whole environment; NULL: the caller's environ */
	struct ftproc_fd *fds;     /* the fd map (pipe ends come back in it); may be NULL */
	int nfds;                  /* 0..FTPROC_MAX_FDS */
	int pdeathsig;             /* signal the child gets when the spawning thread dies; 0: none */
	const char *cwd;           /* chdir in the child first; NULL: stay */
};

/* Where the child failed before its program ran (ftproc_spawn's *stage). */
enum ftproc_stage { FTPROC_ST_PARENT, FTPROC_ST_SETPGID, FTPROC_ST_CHDIR, FTPROC_ST_FDS, FTPROC_ST_EXEC };

/* A child. pid: > 0 from a successful spawn on (the process group id as well). reaped: the
 * leader was waited for; status: its wait status then. */
struct ftproc {
	pid_t pid;
	int reaped;
	int status;
};

/* Start o->path. 0 with *p filled (reaped 0); on error -errno, *p zeroed, every pipe of the map
 * closed, the child (if one was forked) reaped, and *stage (when not NULL) saying where it
 * failed: FTPROC_ST_PARENT (bad options: -EINVAL; a program not found on PATH: -ENOENT or
 * -EACCES; pipe, open or fork failing), else a step in the child (FTPROC_ST_EXEC: execve's
 * errno, e.g. -ENOENT, -EACCES, -ENOEXEC). -EINVAL for a map naming a child fd twice or out of
 * range, or a SAME entry naming no earlier entry; -EBADF for a DUP entry whose fd is not open.
 * The death signal is armed before the child checks that its parent is still there; a child
 * that finds it gone exits 127 before exec (nobody is left to report to). */
int ftproc_spawn(struct ftproc *p, const struct ftproc_opts *o, enum ftproc_stage *stage);

/* A stage for messages: "setpgid", "chdir", "setting up fds", "execve" ("" for the parent). */
const char *ftproc_stage_name(enum ftproc_stage s);

/* Non-blocking: 1 while the leader runs, 0 once it has been reaped (p->status set; a child
 * already reaped elsewhere, ECHILD, counts as reaped with status 0), -errno of waitpid
 * otherwise. 0 on a never-started p. */
int ftproc_poll(struct ftproc *p);

/* Block until the leader is reaped. timeout_s < 0: no limit. 0, or -ETIMEDOUT when it still runs
 * after timeout_s. 0 at once on a reaped or never-started p. */
int ftproc_wait(struct ftproc *p, double timeout_s);

/* Send sig to the whole process group. 0, -ESRCH when nothing of the group is left (p never
 * started included), or kill's error. */
int ftproc_signal(const struct ftproc *p, int sig);

/* 1 while any member of the group exists (the leader's own zombie counts until reaped; poll it
 * first), else 0. */
int ftproc_group_alive(const struct ftproc *p);

/* How ftproc_stop ended. */
enum ftproc_stop_how {
	FTPROC_STOP_GONE, /* nothing of the group was left to signal */
	FTPROC_STOP_TERM, /* every member went within term_s of SIGTERM */
	FTPROC_STOP_KILL, /* SIGKILL was needed, and every member went within kill_s */
	FTPROC_STOP_STUCK /* members outlived kill_s after SIGKILL */
};

/* Stop the whole group, blocking: SIGTERM, up to term_s for every member to go, SIGKILL, up to
 * kill_s; the leader is reaped on the way (p->reaped, p->status). *how (when not NULL) says
 * which step ended it. 0, or -ETIMEDOUT when members outlived SIGKILL (FTPROC_STOP_STUCK; the
 * leader is reaped if it went). Safe on a never-started, exited or stopped p. */
int ftproc_stop(struct ftproc *p, double term_s, double kill_s, enum ftproc_stop_how *how);

/* For a caller that owns every child of the process: reap one exited child, any pid, without
 * blocking. The pid (its wait status in *status), 0 when none has exited, -ECHILD when there is
 * no child at all. */
pid_t ftproc_reap_any(int *status);

/* An exit code for a wait status: the exit status, or 128 + the signal that killed it. */
int ftproc_exit_code(int status);

/* A wait status in words: "exited with status 3", "killed by signal 9 (Killed)". */
void ftproc_status_string(int status, char *buf, size_t n);

/* A new environment (NULL-terminated, free with ftproc_env_free): base (NULL: the caller's
 * environ) less its entries without '=' and every entry that starts with one of drop (prefixes,
 * e.g. "NOTIFY_SOCKET=" or "CUDA_"; NULL-terminated, may be NULL), then set ("NAME=value",
 * NULL-terminated, may be NULL; the last of a NAME wins) with any earlier NAME= removed. 0 or
 * -ENOMEM (*out NULL), -EINVAL for a set entry without '='. */
int ftproc_env_new(char ***out, char *const *base, const char *const *drop, const char *const *set);
void ftproc_env_free(char **env);
#endif
