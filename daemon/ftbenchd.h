/* ftbenchd: the daemon's shared state. One mutex (ftd.lock) guards every job and the
 * scheduler's books; HTTP threads take it briefly to read or submit, the main thread takes it
 * to start, feed and finish jobs. ftd.cond is broadcast on every job event (SSE waits on it). */
#ifndef FTD_FTBENCHD_H
#define FTD_FTBENCHD_H
#include <jansson.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"
#include "hw/gpu.h"
#include "kinds.h"

enum ftd_state { ST_QUEUED, ST_RUNNING, ST_SUCCEEDED, ST_FAILED, ST_CANCELLED, ST_TIMED_OUT, ST_INTERRUPTED, ST_N };
enum ftd_ev_type { EV_STATE, EV_PROGRESS, EV_RESULT, EV_ERROR };

#define FTD_MAX_EVENTS 4096 /* progress events beyond this are not kept for replay */
#define FTD_N_KINDS 4
#define FTD_MAX_GROUPS 64 /* process groups recorded per job */
#define FTD_ORPHANS_ID "orphans" /* <state>/run record of orphans below the daemon */
#define FTD_TRACK_NS (300ull * 1000000ull) /* how often running jobs' process trees are recorded */

struct ftd_event {
	enum ftd_ev_type type;
	char *data; /* one JSON object, compact */
};

struct ftd_job {
	struct ftd_job *next;   /* the job list, oldest first */
	int refs;               /* 1 for the list + 1 per SSE reader */
	int removed;            /* dropped by retention while an SSE reader still holds it */
	char id[17];
	unsigned long long seq; /* submission order (FIFO) */
	const struct ftd_kind *kind;
	int kind_idx;
	enum ftd_state state;
	json_t *args;           /* as submitted (validated) */
	char **argv;            /* the worker's argv */
	int gpu_index;          /* inventory index, -1 none */
	char gpu_uuid[64];
	int host_excl;
	long timeout_s;
	double created, started, finished; /* wall clock, 0 = not yet */
	int has_progress, prog_done, prog_total;
	char *prog_label;
	int cancel_requested;
	int exit_status, sig;   /* -1 = none */
	char *error;
	json_t *result;
	char *profile_path;
	char *idem_key, *req_canon;
	struct ftd_event *ev;
	size_t nev, evcap;
	/* runner (main thread) */
	pid_t pid;              /* also the process group id */
	int rfd, ofd, logfd;
	char *line;
	size_t linelen, linecap;
	int reaped, rfd_eof, ofd_eof, timed_out, proto_err, stop_reason_daemon;
	uint64_t deadline_ns, kill_at_ns, reaped_ns;
	long log_bytes;
	int log_truncated;
	struct {
		pid_t pgid;
		unsigned long long start; /* of the group's leader, clock ticks since boot; 0 unknown */
	} groups[FTD_MAX_GROUPS];     /* process groups seen in the worker's tree (procs.c) */
	int ngroups;
	uint64_t groups_scan_ns;
};

struct ftd_daemon {
	struct ftd_config cfg;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct ftd_job *head, *tail;
	int njobs;
	unsigned long long next_seq;
	struct ftgpu_info *gpus;
	int ngpus;
	char gpus_reason[256];
	char *state_dir, *jobs_dir, *logs_dir, *profile_dir, *worker;
	int wake_fd;
	int stopping;
	double start_wall;
	pid_t main_pid;
	/* metrics since start */
	unsigned long long finished_total[FTD_N_KINDS][ST_N];
	unsigned long long dur_buckets[FTD_N_KINDS][12];
	double dur_sum[FTD_N_KINDS];
	unsigned long long dur_count[FTD_N_KINDS];
	unsigned long long http_requests;
};

extern struct ftd_daemon ftd;
extern const double ftd_dur_bounds[11];

const char *ftd_state_name(enum ftd_state s);
int ftd_state_parse(const char *s);
static inline int ftd_state_final(enum ftd_state s) { return s >= ST_SUCCEEDED; }

/* ---- jobs.c (all with ftd.lock held unless said otherwise) */
/* Submit: validate and journal a new job, or return the job of a replayed idempotency key.
 * Returns 0 with *out (borrowed) and *replayed, or -1 with err. */
int ftd_job_submit(const char *kind, json_t *args, long timeout_s, const char *idem_key,
		   const char *req_canon, struct ftd_job **out, int *replayed, struct ftd_err *err);
struct ftd_job *ftd_job_find(const char *id);
/* Whether j is a bw job with gpu "all" (holds every GPU and the host; one profile per GPU). */
int ftd_job_all_gpus(const struct ftd_job *j);
/* The job as its API object (new reference). with_result: include "result". */
json_t *ftd_job_json(const struct ftd_job *j, int with_result);
/* Internal journal record (new reference) and back. */
json_t *ftd_job_record(const struct ftd_job *j);
struct ftd_job *ftd_job_from_record(json_t *rec);
/* Cancel: 200 cancelled now, 202 termination started, 409 already finished (err filled). */
int ftd_job_cancel(struct ftd_job *j, struct ftd_err *err);
/* Record event (data: new reference, consumed) and wake SSE readers. */
void ftd_job_event(struct ftd_job *j, enum ftd_ev_type type, json_t *data);
/* Change state, journal it, emit the state event. Returns the journal result (0 / -errno). */
int ftd_job_set_state(struct ftd_job *j, enum ftd_state s);
void ftd_job_unref(struct ftd_job *j);
/* Build j's argv again from its args and the configuration and inventory in force now (done
 * when the job starts). Returns 0, or -1 with why saying what refuses it. */
int ftd_job_argv_now(struct ftd_job *j, char *why, size_t n);
/* Start what can start (FIFO, no overtaking on a contested resource). */
void ftd_sched(void);
/* Drop finished jobs beyond retain-jobs or older than retain-age. */
void ftd_retention(void);
int ftd_count_state(enum ftd_state s);
/* Queue position of a queued job (0 = next), -1 otherwise. */
int ftd_queue_position(const struct ftd_job *j);
/* After a job finished: metrics. */
void ftd_job_account(const struct ftd_job *j);
/* Load the journal at start; running jobs become interrupted. Returns 0 or -errno. */
int ftd_jobs_load(void);
void ftd_jobs_free_all(void);
/* Wake the main loop (any thread, no lock needed). */
void ftd_wake(void);
void ftd_notify_status(void);

/* ---- journal.c */
int ftd_journal_write(const struct ftd_job *j);
void ftd_journal_remove(const struct ftd_job *j);

/* ---- runner.c (main thread) */
int ftd_runner_start(struct ftd_job *j, char *why, size_t n);
/* Terminate the job's process group: SIGTERM now, SIGKILL after kill-grace. */
void ftd_runner_terminate(struct ftd_job *j);
/* How many pollfds the running jobs need now. */
int ftd_runner_npollfds(void);
/* Fill pollfds for running jobs; returns the count written (at most max). */
int ftd_runner_pollfds(struct pollfd *pfd, struct ftd_job **owner, int max);
void ftd_runner_io(struct ftd_job *j, int fd, short revents);
void ftd_runner_reap(void);
/* Timeouts and SIGKILL deadlines; returns ms until the next deadline (or -1 none). */
int ftd_runner_timers(void);
/* Finish jobs whose pipes hit EOF and whose process was reaped. */
void ftd_runner_finish_ready(void);
int ftd_runner_busy(void);
/* Run `worker gpus --json` synchronously and fill ftd.gpus. */
void ftd_inventory_load(void);
/* Kill what a journal says was running when the daemon died (only if it carries our job id). */
void ftd_runner_kill_orphan(const char *job_id, pid_t pgid);

/* ---- procs.c (main thread, ftd.lock held) */
/* Become a child subreaper and make <state>/run. 0 or -errno. */
int ftd_procs_init(void);
/* End what earlier instances left: the process groups recorded in <state>/run (checked against
 * their leaders' start times and the boot id) and what carries those jobs' ids. */
void ftd_procs_recover(void);
/* A worker started: record its group. */
void ftd_procs_job_started(struct ftd_job *j);
/* Record new process groups in running jobs' trees (at most every FTD_TRACK_NS). */
void ftd_procs_track(void);
/* The worker of j was reaped: kill what is left of its tree (see procs.c) and drop its record.
 * Returns the number of processes killed. */
int ftd_procs_end_job(struct ftd_job *j);

/* ---- profiles.c */
/* Store a bw result; *path_out is a new string. 0 or -errno. */
int ftd_profile_store(const json_t *profile, const char *uuid, char **path_out);
json_t *ftd_profiles_list(void);
/* Raw file of profile uuid (new buffer) or -ENOENT / -EINVAL. */
int ftd_profile_read(const char *uuid, char **text, size_t *len);
/* Config rebench: queue a bw job for each GPU (the host without GPUs) whose stored profile is
 * stale (fingerprint) or, with an interval, older than it. With ftd.lock held, after the journal. */
void ftd_rebench(void);
/* Rewrite config nfd-features-file from the stored profiles (nothing when it is unset). 0/-errno. */
int ftd_nfd_write(void);
/* Call fn for each stored profile (uuid or "host", parsed JSON, path); other files are skipped. */
void ftd_profiles_each(void (*fn)(const char *uuid, json_t *p, const char *path, void *ctx), void *ctx);
/* The kept profiles of uuid ("host": the GPU-less host's), oldest first, the newest limit of them
 * (0: all): a new array, empty when none. */
json_t *ftd_profile_history(const char *uuid, int limit);
/* Prometheus lines for the last profile per GPU, appended to a growing buffer. */
struct ftd_mbuf;
void ftd_profiles_metrics(struct ftd_mbuf *m);

/* ---- http.c */
/* A growing NUL-terminated text buffer (buf from malloc, owned by the caller). */
struct ftd_mbuf {
	char *buf;
	size_t len, cap;
};
/* Append printf-style, growing buf; when memory runs out the text is dropped (buf stays valid). */
void ftd_mcat(struct ftd_mbuf *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Serve the API on listen_fd (borrowed; made non-blocking): the acceptor thread and both
 * libmicrohttpd daemons. NULL after logging why. ftd_http_stop stops and frees it all (NULL ok). */
struct ftd_http;
struct ftd_http *ftd_http_start(int listen_fd);
void ftd_http_stop(struct ftd_http *h);
#endif
