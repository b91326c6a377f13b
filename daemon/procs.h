/* procs: the processes a job leaves behind. The daemon is a child subreaper, so every process a
 * worker starts stays below the daemon in the process tree, whatever it does (a new session,
 * a double fork, an empty environment); orphans are reparented to the daemon and reaped by
 * its waitpid(-1). While jobs run, the process groups in each worker's tree are recorded in
 * <state>/run/<job id> (boot id, then "pgid starttime" lines), so that after a kill -9 of the
 * daemon the next instance ends what the earlier one left (ftd_procs_recover). When a job's
 * worker has exited, ftd_procs_end_job kills what is left of it: its process groups, anything
 * carrying its FTBENCHD_JOB_ID, and every descendant of the daemon that no running job claims
 * (by tree, recorded group or environment). A process that left both its job's tree and every
 * group and environment of it cannot be attributed: it is ended at the next job end.
 * Main thread, ftd.lock held. */
#ifndef FTD_PROCS_H
#define FTD_PROCS_H
#include "job.h"

#define FTD_PROCS_ORPHANS_ID "orphans" /* <state>/run record of orphans below the daemon */
#define FTD_PROCS_TRACK_NS (300ull * 1000000ull) /* how often running jobs' process trees are recorded */

/* Become a child subreaper and make <state>/run. 0 or -errno. */
int ftd_procs_init(void);
/* End what earlier instances left: the process groups recorded in <state>/run (checked against
 * their leaders' start times and the boot id) and what carries those jobs' ids. */
void ftd_procs_recover(void);
/* Kill every process that carries FTBENCHD_JOB_ID=job_id (a job the journal says was running
 * when the daemon died). */
void ftd_procs_kill_orphan(const char *job_id);
/* j's worker started: record its group. */
void ftd_procs_job_started(struct ftd_job *j);
/* Record new process groups in running jobs' trees (at most every FTD_PROCS_TRACK_NS). */
void ftd_procs_track(void);
/* The worker of j was reaped: kill what is left of its tree and drop its record. Returns the
 * number of processes killed. */
int ftd_procs_end_job(struct ftd_job *j);
#endif
