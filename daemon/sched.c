/* sched: the start decisions; see sched.h. */
#include "sched.h"

#include <errno.h>

int ftd_sched_pick(const struct ftd_sched_job *v, int n, long max_running, int *start)
{
	char busy[FTD_SCHED_MAX_GPUS] = {0}, resv[FTD_SCHED_MAX_GPUS] = {0};
	int host_busy_excl = 0, host_used = 0, host_resv_excl = 0, host_resv_shared = 0, k = 0;
	long running = 0;
	for (int i = 0; i < n; i++) {
		if (v[i].state != FTD_SCHED_RUNNING)
			continue;
		running++;
		host_used = 1;
		if (v[i].host_excl)
			host_busy_excl = 1;
		if (v[i].gpu >= 0 && v[i].gpu < FTD_SCHED_MAX_GPUS)
			busy[v[i].gpu] = 1;
	}
	for (int i = 0; i < n; i++) {
		if (v[i].state != FTD_SCHED_QUEUED)
			continue;
		int g = v[i].gpu >= 0 && v[i].gpu < FTD_SCHED_MAX_GPUS ? v[i].gpu : -1;
		int ok;
		if (v[i].host_excl)
			ok = !host_used && !host_resv_excl && !host_resv_shared;
		else
			ok = !host_busy_excl && !host_resv_excl && (g < 0 || (!busy[g] && !resv[g]));
		if (ok && running >= max_running)
			break; /* max-running: nothing starts, nothing overtakes */
		if (ok) {
			start[k++] = i;
			running++;
			host_used = 1;
			if (v[i].host_excl)
				host_busy_excl = 1;
			if (g >= 0)
				busy[g] = 1;
		} else {
			if (v[i].host_excl)
				host_resv_excl = 1;
			else
				host_resv_shared = 1;
			if (g >= 0)
				resv[g] = 1;
		}
	}
	return k;
}

int ftd_sched_admit(const struct ftd_sched_job *v, int n, long max_queue)
{
	long queued = 0;
	for (int i = 0; i < n; i++)
		queued += v[i].state == FTD_SCHED_QUEUED;
	return queued >= max_queue ? -EAGAIN : 0;
}
