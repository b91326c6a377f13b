/* runner: the jobs' life on the main thread, between the scheduler's decisions and the
 * workers: starts what sched picks (argv from kinds, a worker, the journal), turns a worker's
 * result lines into the job's progress/result/error, ends a job when its worker's exit is
 * reported (the outcome, the kind's end hook, the journal, metrics), and keeps the list
 * (journal load at start, retention). Everything with ftd.lock held. */
#ifndef FTD_RUNNER_H
#define FTD_RUNNER_H
#include <poll.h>

#include "job.h"

/* Start what can start now. */
void ftd_runner_sched(void);
/* The pollfds the running jobs need now, and filling them (owner[i]: the job of pfd[i]). */
int ftd_runner_npollfds(void);
int ftd_runner_pollfds(struct pollfd *pfd, struct ftd_job **owner, int max);
void ftd_runner_io(struct ftd_job *j, int fd, short revents);
/* waitpid(-1) until nothing is left to reap. */
void ftd_runner_reap(void);
/* Cancels, the daemon's stop, timeouts and SIGKILL deadlines; returns ms until the next
 * deadline (-1 none). */
int ftd_runner_timers(void);
/* End the jobs whose worker's exit is complete. */
void ftd_runner_finish_ready(void);
/* Jobs whose worker is still running (a job whose final state waits for the journal is not). */
int ftd_runner_busy(void);
/* Try again the journal writes of final states that failed (ftd_daemon_settle); ms until the
 * next try (-1 none). */
int ftd_runner_settle(void);
/* 1 when more finished jobs are kept than retain-jobs. */
int ftd_runner_over_count(void);
/* Drop finished jobs beyond retain-jobs or older than retain-age (and their files); ages from the
 * monotonic clock, a wall-clock jump since the start moves none. */
void ftd_runner_retention(void);
/* Load the journal at start; running jobs become interrupted. 0 or -errno. */
int ftd_runner_load(void);
/* Run `worker gpus --json` synchronously and fill ftd.gpus. */
void ftd_runner_inventory(void);
void ftd_runner_free_all(void);
#endif
