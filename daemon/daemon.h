/* daemon: the daemon's shared state, one global (ftd). One mutex (ftd.lock) guards every job and
 * the books below; HTTP threads take it briefly to read or submit, the main thread takes it to
 * start, feed and finish jobs. ftd.cond is broadcast on every job event (SSE waits on it). */
#ifndef FTD_DAEMON_H
#define FTD_DAEMON_H
#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"
#include "hw/gpu.h"
#include "job.h"
#include "kinds.h"

#define FTD_DAEMON_DUR_BUCKETS 12 /* job duration histogram: 11 bounds + Inf */

struct ftd_daemon {
	struct ftd_config cfg;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct ftd_jobs jobs;
	struct ftgpu_info *gpus;
	int ngpus;
	int gpus_known;          /* the worker listed the GPUs (ngpus 0 then: the host has none) */
	char gpus_reason[256];
	char *state_dir, *jobs_dir, *logs_dir, *ftw_dir, *profile_dir, *worker;
	int wake_fd;
	int stopping;
	int ready;              /* the journal is loaded: the API serves (atomic) */
	int n_queued, n_running; /* the main loop's last count, for /health (atomic) */
	double start_wall;
	uint64_t start_ns;      /* CLOCK_MONOTONIC at start: uptime and ages never follow wall-clock jumps */
	pid_t main_pid;
	/* metrics since start (metrics.c) */
	unsigned long long finished_total[FTD_KIND_MAX][FTD_JOB_N];
	unsigned long long dur_buckets[FTD_KIND_MAX][FTD_DAEMON_DUR_BUCKETS];
	double dur_sum[FTD_KIND_MAX];
	unsigned long long dur_count[FTD_KIND_MAX];
	unsigned long long http_requests;
};

extern struct ftd_daemon ftd;

/* Wake the main loop (any thread, no lock needed). */
void ftd_daemon_wake(void);
/* Save j's journal record, logging a failure. 0 or -errno. */
int ftd_daemon_save(const struct ftd_job *j);
/* A transition: j becomes s, journaled before the state event tells anyone. A final state is
 * taken only once journaled (then its events are compacted; the caller counts it in the metrics
 * on 0); when the write fails the job keeps its state, j->settling remembers s and
 * ftd_daemon_settle tries again. 0 or -errno (the journal's). */
int ftd_daemon_set_state(struct ftd_job *j, enum ftd_job_state s);
#define FTD_DAEMON_SETTLE_NS 1000000000ull /* between two tries of a final state's journal write */
/* Try a settling job's journal write again when due: 1 when its final state is taken now. */
int ftd_daemon_settle(struct ftd_job *j);
/* The argv builder's view of the daemon now (job_id may be NULL). */
struct ftd_kind_ctx ftd_daemon_kind_ctx(const char *job_id);
#endif
