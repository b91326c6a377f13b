/* daemon: the shared state; see daemon.h. */
#include "daemon.h"

#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "journal.h"
#include "log.h"
#include "util/timeutil.h"

struct ftd_daemon ftd;

void ftd_daemon_wake(void)
{
	uint64_t one = 1;
	if (ftd.wake_fd >= 0 && write(ftd.wake_fd, &one, sizeof one) < 0) {
		/* the counter is saturated: the loop is awake anyway */
	}
}

int ftd_daemon_save(const struct ftd_job *j)
{
	int r = ftd_journal_save(ftd.jobs_dir, j);
	if (r < 0)
		ftd_log(FTD_LOG_ERR, "job %s: journal write failed: %s", j->id, strerror(-r));
	return r;
}

struct ftd_kind_ctx ftd_daemon_kind_ctx(const char *job_id)
{
	struct ftd_kind_ctx c = {.cfg = &ftd.cfg, .worker = ftd.worker, .gpus = ftd.gpus, .ngpus = ftd.ngpus,
				 .gpus_known = ftd.gpus_known, .gpus_reason = ftd.gpus_reason, .job_id = job_id, .out_dir = ftd.logs_dir,
				 .ftw_dir = ftd.ftw_dir};
	return c;
}

/* A final state that reached the journal: told to the readers, events compacted. */
static void announce_final(struct ftd_job *j)
{
	ftd_job_event_as(j, FTD_EV_STATE, json_pack("{s:s}", "state", ftd_job_state_name(j->state)), j->final_ev_id);
	ftd_job_compact_events(j);
}

int ftd_daemon_set_state(struct ftd_job *j, enum ftd_job_state s)
{
	if (!ftd_job_final(s)) {
		j->state = s;
		int r = ftd_daemon_save(j);
		ftd_job_event(j, FTD_EV_STATE, json_pack("{s:s}", "state", ftd_job_state_name(s)));
		return r;
	}
	if (!j->finished_ns) {
		j->finished_ns = fttime_now_ns();
		if (j->started_ns)
			j->dur_s = (double)(j->finished_ns - j->started_ns) / 1e9;
	}
	enum ftd_job_state was = j->state;
	j->state = s;
	if (!j->final_ev_id) /* the record holds the state event's id: a restart replays it as it was */
		j->final_ev_id = ftd_jobs_event_id(j);
	int r = ftd_daemon_save(j);
	if (r < 0) {
		/* not journaled, not announced: the job keeps showing its last journaled state, and
		 * ftd_daemon_settle tries again; a restart meanwhile finds what the API said */
		j->state = was;
		j->settling = 1 + (int)s;
		j->settle_next_ns = fttime_now_ns() + FTD_DAEMON_SETTLE_NS;
		return r;
	}
	j->settling = 0;
	announce_final(j);
	return 0;
}

int ftd_daemon_settle(struct ftd_job *j)
{
	if (!j->settling || fttime_now_ns() < j->settle_next_ns)
		return 0;
	enum ftd_job_state s = (enum ftd_job_state)(j->settling - 1);
	if (ftd_daemon_set_state(j, s) < 0)
		return 0;
	ftd_log(FTD_LOG_NOTICE, "job %s: %s, journaled now", j->id, ftd_job_state_name(s));
	return 1;
}
