/* daemon: the shared state; see daemon.h. */
#include "daemon.h"

#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "journal.h"
#include "log.h"

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
				 .gpus_known = ftd.gpus_known, .gpus_reason = ftd.gpus_reason, .job_id = job_id, .out_dir = ftd.logs_dir};
	return c;
}

int ftd_daemon_set_state(struct ftd_job *j, enum ftd_job_state s)
{
	j->state = s;
	int r = ftd_daemon_save(j);
	ftd_job_event(j, FTD_EV_STATE, json_pack("{s:s}", "state", ftd_job_state_name(s)));
	return r;
}
