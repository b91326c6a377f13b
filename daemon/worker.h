/* worker: one child process of the daemon, started with ftproc_spawn (src/util/proc.h) in its own
 * process group with a death signal, fd 3 a pipe of JSON lines (each size-checked before it is handed on),
 * stdout+stderr a pipe into a size-capped log file, stdin /dev/null, an environment without
 * systemd's and CUDA's variables. The worker knows nothing of jobs: what a line means is the
 * caller's (struct ftd_worker_cb), and the end is reported through a callback only after the
 * child was reaped AND both pipes reached EOF. Main thread only. */
#ifndef FTD_WORKER_H
#define FTD_WORKER_H
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/proc.h"

#define FTD_WORKER_MAX_GROUPS 64 /* process groups recorded per worker (procs.c) */

struct ftd_worker;

struct ftd_worker_cb {
	/* One result line without its newline (len <= max_line, NUL-terminated in place). */
	void (*line)(void *ctx, struct ftd_worker *w, char *line, size_t len);
	/* The result stream broke the protocol (once per worker; the worker is being terminated). */
	void (*protocol_error)(void *ctx, struct ftd_worker *w, const char *what);
	/* The child is reaped and both pipes are at EOF: the run is over. The callee may free w. */
	void (*exited)(void *ctx, struct ftd_worker *w);
};

struct ftd_worker_spec {
	char *const *argv;       /* argv[0] an absolute path */
	const char *job_id;      /* FTBENCHD_JOB_ID of the child, NULL none */
	const char *gpus;        /* CUDA_VISIBLE_DEVICES of the child ("" none; NULL: not set at all) */
	const char *log_path;    /* the log file (created, truncated) */
	size_t max_line;         /* longest result line */
	long log_max;            /* log bytes kept */
	long timeout_s;          /* then SIGTERM (ftd_worker_timers) */
	const struct ftd_worker_cb *cb;
	void *ctx;
};

struct ftd_worker {
	struct ftproc proc;      /* the child (src/util/proc.h) */
	pid_t pid;               /* proc.pid: also the process group id */
	int rfd, ofd, logfd;
	char *line;
	size_t linelen, linecap, max_line;
	int reaped, rfd_eof, ofd_eof, proto_err, timed_out;
	int exit_status, sig;    /* after reaping: status (128+sig when killed), signal or -1 */
	uint64_t deadline_ns, kill_at_ns, reaped_ns;
	long log_bytes, log_max;
	int log_truncated;
	struct {
		pid_t pgid;
		unsigned long long start; /* of the group's leader, clock ticks since boot; 0 unknown */
	} groups[FTD_WORKER_MAX_GROUPS];     /* process groups seen in the child's tree (procs.c) */
	int ngroups;
	uint64_t groups_scan_ns;
	const struct ftd_worker_cb *cb;
	void *ctx;
};

/* Start a child. Returns the worker (free with ftd_worker_free after its exited callback), or
 * NULL with why saying what failed (the log, the pipes, fork, or the child before execve). */
struct ftd_worker *ftd_worker_start(const struct ftd_worker_spec *s, char *why, size_t n);
void ftd_worker_free(struct ftd_worker *w);

/* SIGTERM to the group now, SIGKILL after grace_s (ftd_worker_timers sends it). Once. */
void ftd_worker_terminate(struct ftd_worker *w, long grace_s);
/* Report a protocol error of the caller's (a line that is not a message) and terminate. */
void ftd_worker_protocol_error(struct ftd_worker *w, long grace_s, const char *what);

/* The pipes to poll (at most 2 written). */
int ftd_worker_pollfds(const struct ftd_worker *w, struct pollfd *pfd);
void ftd_worker_io(struct ftd_worker *w, int fd, long grace_s);

/* waitpid gave st for w's pid. */
void ftd_worker_reaped(struct ftd_worker *w, int st, uint64_t now);

/* Timeout (SIGTERM, sets timed_out; returns 1 that moment) and the SIGKILL after the grace;
 * lowers *next to w's next deadline. */
int ftd_worker_timers(struct ftd_worker *w, uint64_t now, long grace_s, uint64_t *next);

/* Call the exited callback when the run is over; pipes still open FTD_WORKER_PIPE_GRACE_NS
 * after reaping (held by something we cannot see) are drained and closed first. 1 when it was
 * called (w may be gone), else 0. */
#define FTD_WORKER_PIPE_GRACE_NS (5ull * 1000000000ull)
int ftd_worker_check_done(struct ftd_worker *w, uint64_t now, long grace_s);

/* Run argv to completion with stdout captured (at most max bytes; stderr to /dev/null), the
 * environment as a worker's but with every GPU visible; SIGKILL after timeout_s. Returns 0 with
 * *out (new, NUL-terminated), *len and *status (waitpid's), or -errno with why filled. */
int ftd_worker_capture(char *const *argv, long timeout_s, size_t max, char **out, size_t *len, int *status,
		       int *timed_out, char *why, size_t n);
#endif
