/* metrics: see metrics.h. */
#include "metrics.h"

#include "daemon.h"
#include "profiles.h"

const double ftd_metrics_dur_bounds[11] = {1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 14400};

void ftd_metrics_job_finished(const struct ftd_job *j)
{
	if (j->kind_idx < 0 || j->kind_idx >= FTD_KIND_MAX)
		return;
	ftd.finished_total[j->kind_idx][j->state]++;
	double d = ftd_job_duration(j);
	if (d >= 0) {
		int b = 0;
		while (b < 11 && d > ftd_metrics_dur_bounds[b])
			b++;
		ftd.dur_buckets[j->kind_idx][b]++;
		ftd.dur_sum[j->kind_idx] += d;
		ftd.dur_count[j->kind_idx]++;
	}
}

void ftd_metrics_render(struct ftd_mbuf *m)
{
	pthread_mutex_lock(&ftd.lock);
	ftd_mbuf_cat(m, "# HELP ftbenchd_jobs Jobs in the journal by state.\n# TYPE ftbenchd_jobs gauge\n");
	for (int s = 0; s < FTD_JOB_N; s++)
		ftd_mbuf_cat(m, "ftbenchd_jobs{state=\"%s\"} %d\n", ftd_job_state_name(s), ftd_jobs_count(&ftd.jobs, s));
	ftd_mbuf_cat(m,
		 "# HELP ftbenchd_queue_depth Jobs waiting to run.\n# TYPE ftbenchd_queue_depth gauge\n"
		 "ftbenchd_queue_depth %d\n"
		 "# HELP ftbenchd_running_jobs Jobs running now.\n# TYPE ftbenchd_running_jobs gauge\n"
		 "ftbenchd_running_jobs %d\n"
		 "# HELP ftbenchd_gpus GPUs in the inventory.\n# TYPE ftbenchd_gpus gauge\nftbenchd_gpus %d\n"
		 "# HELP ftbenchd_start_time_seconds When the daemon started.\n"
		 "# TYPE ftbenchd_start_time_seconds gauge\nftbenchd_start_time_seconds %.3f\n"
		 "# HELP ftbenchd_http_requests_total HTTP requests served.\n"
		 "# TYPE ftbenchd_http_requests_total counter\nftbenchd_http_requests_total %llu\n",
		 ftd_jobs_count(&ftd.jobs, FTD_JOB_QUEUED), ftd_jobs_count(&ftd.jobs, FTD_JOB_RUNNING), ftd.ngpus,
		 ftd.start_wall, __atomic_load_n(&ftd.http_requests, __ATOMIC_RELAXED));
	ftd_mbuf_cat(m, "# HELP ftbenchd_jobs_finished_total Jobs finished since the daemon started.\n"
		    "# TYPE ftbenchd_jobs_finished_total counter\n");
	for (int k = 0; k < ftd_kind_count(); k++)
		for (int s = FTD_JOB_SUCCEEDED; s < FTD_JOB_N; s++)
			ftd_mbuf_cat(m, "ftbenchd_jobs_finished_total{kind=\"%s\",state=\"%s\"} %llu\n", ftd_kind_at(k)->name,
				 ftd_job_state_name(s), ftd.finished_total[k][s]);
	ftd_mbuf_cat(m, "# HELP ftbenchd_job_duration_seconds Run time of finished jobs.\n"
		    "# TYPE ftbenchd_job_duration_seconds histogram\n");
	for (int k = 0; k < ftd_kind_count(); k++) {
		const char *kind = ftd_kind_at(k)->name;
		unsigned long long cum = 0;
		for (int i = 0; i < FTD_DAEMON_DUR_BUCKETS; i++) {
			cum += ftd.dur_buckets[k][i];
			if (i < 11)
				ftd_mbuf_cat(m, "ftbenchd_job_duration_seconds_bucket{kind=\"%s\",le=\"%g\"} %llu\n", kind,
					 ftd_metrics_dur_bounds[i], cum);
			else
				ftd_mbuf_cat(m, "ftbenchd_job_duration_seconds_bucket{kind=\"%s\",le=\"+Inf\"} %llu\n", kind,
					 cum);
		}
		ftd_mbuf_cat(m, "ftbenchd_job_duration_seconds_sum{kind=\"%s\"} %.3f\n", kind, ftd.dur_sum[k]);
		ftd_mbuf_cat(m, "ftbenchd_job_duration_seconds_count{kind=\"%s\"} %llu\n", kind, ftd.dur_count[k]);
	}
	pthread_mutex_unlock(&ftd.lock);
	ftd_profiles_metrics(m);
}
