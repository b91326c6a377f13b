/* sched: which queued jobs start now. Pure: jobs and their resources in, decisions out; no
 * job list, no clock, no I/O (tests/unit/test_ftbenchd_sched.c).
 *
 * Resources: each GPU exclusively; the host shared by every job, exclusively by host-exclusive
 * jobs (bw and load-weights measure DRAM, PCIe and disk). The queue is walked oldest first; a
 * job that cannot start reserves what it needs, so no later job may take those resources before
 * it (FIFO without starvation), while later jobs on disjoint GPUs still start. At max_running
 * running jobs nothing starts and nothing overtakes. */
#ifndef FTD_SCHED_H
#define FTD_SCHED_H

#define FTD_SCHED_MAX_GPUS 256 /* GPU indexes at or above this hold no GPU */

struct ftd_sched_job {
	int state;     /* FTD_SCHED_QUEUED, FTD_SCHED_RUNNING, anything else: holds nothing */
	int gpu;       /* inventory index, -1 none */
	int host_excl;
};
enum { FTD_SCHED_OTHER, FTD_SCHED_QUEUED, FTD_SCHED_RUNNING };

/* v[0..n) in submission order. Writes the positions of the jobs to start now, in order, to
 * start[] (room for n) and returns how many. The caller starts them; when one cannot start
 * (it fails), the caller asks again, since what it held is free. */
int ftd_sched_pick(const struct ftd_sched_job *v, int n, long max_running, int *start);

/* Whether one more job may be queued: 0, or -EAGAIN when max_queue jobs are queued already. */
int ftd_sched_admit(const struct ftd_sched_job *v, int n, long max_queue);
#endif
