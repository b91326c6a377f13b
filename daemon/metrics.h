/* metrics: the daemon's Prometheus text (GET /metrics): jobs by state, queue depth, finished
 * jobs and their run times by kind since start, HTTP requests, and the stored profiles'
 * figures (profiles.c). */
#ifndef FTD_METRICS_H
#define FTD_METRICS_H
#include "job.h"
#include "mbuf.h"

extern const double ftd_metrics_dur_bounds[11];

/* A job finished: count it and its run time (ftd.lock held). */
void ftd_metrics_job_finished(const struct ftd_job *j);
/* Append the metrics to m (takes ftd.lock itself: call without it). */
void ftd_metrics_render(struct ftd_mbuf *m);
#endif
