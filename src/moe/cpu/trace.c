/* tune.trace: where the dynamic schedules' steps spend their time. The workers add into their
 * own struct ftcpumoe_wtrace (exec.h, inline); the driver counts steps around ftpool_run, keeps
 * each step's figures for the medians, and ftcpumoe_trace averages. */
#include <errno.h>
#include <string.h>

#include "moe/cpu/exec.h"
#include "util/stats.h"

void ftcpumoe_trace_post(struct ftcpumoe *x)
{
	x->t_post = fttime_now_ns();
}

/* The sums over workers of the phases kept per worker, in FTCPUMOE_TR_* order (0 for the
 * driver's own: step, last, bar). */
static void worker_sums(const struct ftcpumoe *x, uint64_t *v)
{
	memset(v, 0, FTCPUMOE_TR_N * sizeof *v);
	for (int i = 0; i < x->nthreads; i++) {
		const struct ftcpumoe_wtrace *w = &x->tr[i];
		v[FTCPUMOE_TR_START] += w->wake;
		v[FTCPUMOE_TR_PREP] += w->prep;
		v[FTCPUMOE_TR_ITEMS] += w->items - w->wait;
		v[FTCPUMOE_TR_WAIT] += w->wait;
		v[FTCPUMOE_TR_IDLE] += w->idle;
		v[FTCPUMOE_TR_AFTER] += w->after;
	}
}

void ftcpumoe_trace_step(struct ftcpumoe *x)
{
	uint64_t t = fttime_now_ns(), last = x->t_post, arr = 0, bar = 0;
	for (int i = 0; i < x->nthreads; i++) {
		last = x->tr[i].end > last ? x->tr[i].end : last;
		arr = x->tr[i].arrive > arr ? x->tr[i].arrive : arr;
	}
	for (int i = 0; i < x->nthreads; i++)
		bar += x->tr[i].left > arr ? x->tr[i].left - arr : 0;
	x->tr_step_ns += t - x->t_post;
	x->tr_last_ns += last - x->t_post;
	x->tr_bar_ns += bar;
	if (x->tr_steps < FTCPUMOE_TRACE_STEPS) {
		uint64_t v[FTCPUMOE_TR_N];
		worker_sums(x, v);
		double *rec = x->tr_rec + x->tr_steps;
		double n = 1e3 * x->nthreads;
		for (int k = 0; k < FTCPUMOE_TR_N; k++)
			rec[(size_t)k * FTCPUMOE_TRACE_STEPS] = (double)(v[k] - x->tr_prev[k]) / n;
		rec[(size_t)FTCPUMOE_TR_STEP * FTCPUMOE_TRACE_STEPS] = (double)(t - x->t_post) / 1e3;
		rec[(size_t)FTCPUMOE_TR_LAST * FTCPUMOE_TRACE_STEPS] = (double)(last - x->t_post) / 1e3;
		rec[(size_t)FTCPUMOE_TR_BAR * FTCPUMOE_TRACE_STEPS] = (double)bar / n;
		memcpy(x->tr_prev, v, sizeof v);
	}
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
			out->prep_us += (double)w->prep / d;
			out->items_us += (double)(w->items - w->wait) / d;
			out->wait_us += (double)w->wait / d;
			out->idle_us += (double)w->idle / d;
			out->after_us += (double)w->after / d;
			out->items_per_worker += (double)w->nitems / (x->tr_steps ? (double)x->tr_steps * x->nthreads : 1);
		}
		out->bar_us = (double)x->tr_bar_ns / d;
		out->step_us = x->tr_steps ? (double)x->tr_step_ns / 1e3 / (double)x->tr_steps : 0;
		out->last_us = x->tr_steps ? (double)x->tr_last_ns / 1e3 / (double)x->tr_steps : 0;
		double *med[FTCPUMOE_TR_N] = {
			[FTCPUMOE_TR_STEP] = &out->med.step_us,   [FTCPUMOE_TR_LAST] = &out->med.last_us,
			[FTCPUMOE_TR_START] = &out->med.start_us, [FTCPUMOE_TR_PREP] = &out->med.prep_us,
			[FTCPUMOE_TR_ITEMS] = &out->med.items_us, [FTCPUMOE_TR_WAIT] = &out->med.wait_us,
			[FTCPUMOE_TR_IDLE] = &out->med.idle_us,   [FTCPUMOE_TR_BAR] = &out->med.bar_us,
			[FTCPUMOE_TR_AFTER] = &out->med.after_us,
		};
		int kept = x->tr_steps < FTCPUMOE_TRACE_STEPS ? (int)x->tr_steps : FTCPUMOE_TRACE_STEPS;
		for (int k = 0; k < FTCPUMOE_TR_N; k++)
			*med[k] = ftstat_of(x->tr_rec + (size_t)k * FTCPUMOE_TRACE_STEPS, kept).median;
	}
	if (reset) {
		memset(x->tr, 0, (size_t)x->nthreads * sizeof *x->tr);
		memset(x->tr_prev, 0, sizeof x->tr_prev);
		x->tr_steps = x->tr_step_ns = x->tr_last_ns = x->tr_bar_ns = 0;
	}
	return 0;
}
