/* tune.trace: where the dynamic schedules' steps spend their time. The workers add into their
 * own struct ftcpumoe_wtrace (exec.h, inline); the driver counts steps around ftpool_run and
 * ftcpumoe_trace averages. */
#include <errno.h>
#include <string.h>

#include "moe/cpu/exec.h"

void ftcpumoe_trace_post(struct ftcpumoe *x)
{
	x->t_post = fttime_now_ns();
}

void ftcpumoe_trace_step(struct ftcpumoe *x)
{
	uint64_t t = fttime_now_ns(), last = x->t_post;
	for (int i = 0; i < x->nthreads; i++)
		last = x->tr[i].end > last ? x->tr[i].end : last;
	x->tr_step_ns += t - x->t_post;
	x->tr_last_ns += last - x->t_post;
	x->tr_steps++;
}

int ftcpumoe_trace(struct ftcpumoe *x, struct ftcpumoe_trace *out, int reset)
{
	if (!x || !x->trace)
		return -ENODATA;
	if (out) {
		memset(out, 0, sizeof *out);
		out->steps = (long)x->tr_steps;
		double d = x->tr_steps ? 1e3 * (double)x->tr_steps * x->nthreads : 1; /* us per worker-step */
		for (int t = 0; t < x->nthreads; t++) {
			const struct ftcpumoe_wtrace *w = &x->tr[t];
			out->start_us += (double)w->wake / d;
			out->items_us += (double)(w->items - w->wait) / d;
			out->wait_us += (double)w->wait / d;
			out->idle_us += (double)w->idle / d;
			out->after_us += (double)w->after / d;
			out->items_per_worker += (double)w->nitems / (x->tr_steps ? (double)x->tr_steps * x->nthreads : 1);
		}
		out->step_us = x->tr_steps ? (double)x->tr_step_ns / 1e3 / (double)x->tr_steps : 0;
		out->last_us = x->tr_steps ? (double)x->tr_last_ns / 1e3 / (double)x->tr_steps : 0;
	}
	if (reset) {
		memset(x->tr, 0, (size_t)x->nthreads * sizeof *x->tr);
		x->tr_steps = x->tr_step_ns = x->tr_last_ns = 0;
	}
	return 0;
}
