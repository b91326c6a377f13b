/* The dynamic schedule of the row-major formats: the step is a list of work items, the pass-1
 * items of every slot group (ch1 gate+up row pairs each) and then the pass-2 items (ch2 down
 * rows each; the last group's ch2f, finer, so the workers finish close together), claimed in
 * order from one atomic counter; a worker that is done with an item takes the next free one, so
 * a worker the memory system serves slower does fewer and none idles at a pass boundary.
 * Pass 2 of a group waits only for that group's pass 1: the worker finishing its last pass-1
 * item prepares the group's h and marks it ready (done1 = n1 + 1). Pass-2 items add into
 * per-worker partial outputs (only the 16-row chunks they write are zeroed and marked, ptouch),
 * summed after the step's one barrier. While an item is walked, the next one is claimed and
 * its first bytes requested (not in the last 2n items, so the tail is not held by claimed but
 * unstarted work). */
#include <string.h>

#include "moe/cpu/exec.h"
#include "moe/cpu/pool.h"

/* Pass-2 item i (counted from the first pass-2 item): its group and down rows [*r0, *r1). */
static int down_item(const struct ftcpumoe *x, int i, long *r0, long *r1)
{
	long H = x->cfg.hidden, ch = x->ch2;
	int g, last = (x->ngrp - 1) * x->n2;
	if (i < last) {
		g = i / x->n2;
		*r0 = (long)(i % x->n2) * ch;
	} else {
		g = x->ngrp - 1;
		ch = x->ch2f;
		*r0 = (long)(i - last) * ch;
	}
	*r1 = *r0 + ch < H ? *r0 + ch : H;
	return g;
}

/* Where item i's first weight row starts. */
static const void *item_start(struct ftcpumoe *x, int i)
{
	int p1 = x->ngrp * x->n1;
	if (i < p1)
		return ftcpumoe_group_row(x, i / x->n1, 0, (long)(i % x->n1) * x->ch1);
	long r0, r1;
	int g = down_item(x, i - p1, &r0, &r1);
	return ftcpumoe_group_row(x, g, 1, r0);
}

/* Before a pass-2 item of group g adds down rows [n0, n1) into this worker's pout (po): the
 * 16-row chunks of each of its tokens that this worker has not written yet this step are
 * zeroed and marked. */
static void pout_claim(struct ftcpumoe *x, int tid, int g, long n0, long n1, float *po)
{
	long H = x->cfg.hidden;
	uint8_t *tc = x->ptouch + (size_t)tid * x->pchunk_stride;
	for (int i = 0; i < x->grp_nb[g]; i++) {
		int b = x->slot_of[x->grp_s0[g] + i] / x->topk;
		for (long c = n0 / 16; c * 16 < n1; c++)
			if (!tc[(size_t)b * (size_t)x->nchunk + (size_t)c]) {
				tc[(size_t)b * (size_t)x->nchunk + (size_t)c] = 1;
				long e = (c + 1) * 16 < H ? (c + 1) * 16 : H;
				memset(po + (size_t)b * (size_t)H + (size_t)(c * 16), 0, (size_t)(e - c * 16) * sizeof(float));
			}
	}
}

static void run_item(struct ftcpumoe *x, int tid, int cur, const void *ahead, float *tmp, float *po)
{
	long I = x->cfg.inter;
	int p1 = x->ngrp * x->n1;
	if (cur < p1) {
		int g = cur / x->n1;
		long j0 = (long)(cur % x->n1) * x->ch1, j1 = j0 + x->ch1 < I ? j0 + x->ch1 : I;
		ftcpumoe_gate_up_rows(x, tid, g, j0, j1, tmp, ahead);
		if (atomic_fetch_add_explicit(&x->done1[g], 1, memory_order_acq_rel) == x->n1 - 1) {
			ftcpumoe_prep_group_h(x, g);
			atomic_store_explicit(&x->done1[g], x->n1 + 1, memory_order_release);
		}
	} else {
		long n0, n1;
		int g = down_item(x, cur - p1, &n0, &n1);
		struct ftkern_mat m;
		const uint16_t *bias;
		ftcpumoe_expert_mat(x, x->layer, x->uniq_e[x->grp_u[g]], 1, &m, &bias);
		ftcpumoe_prefetch_start(ftcpumoe_row_addr(x, &m, n0));
		if (ahead)
			ftcpumoe_prefetch_start(ahead);
		uint64_t t0 = ftcpumoe_trace_now(x);
		for (int k = 0; atomic_load_explicit(&x->done1[g], memory_order_acquire) != x->n1 + 1;)
			ftpool_relax(x->cfg.pool, &k);
		ftcpumoe_trace_wait(x, tid, t0);
		pout_claim(x, tid, g, n0, n1, po);
		ftcpumoe_down_rows(x, tid, g, &m, NULL, n0, n1, tmp, po);
	}
}

/* A worker waiting in pass 2 waits only for pass-1 items, which never wait, and the items
 * are claimed in order, so a waited-for item is always claimed: no deadlock. */
void ftcpumoe_run_dyn(struct ftcpumoe *x, int tid, int n)
{
	long H = x->cfg.hidden;
	int total = x->nitems;
	float *tmp = x->tmp + (size_t)tid * x->tmp_stride;
	float *po = x->pout + (size_t)tid * (size_t)x->cfg.max_batch * (size_t)H;
	ftcpumoe_trace_start(x, tid);
	/* the previous step's reductions are over: ftpool_run returned after every worker's */
	memset(x->ptouch + (size_t)tid * x->pchunk_stride, 0, (size_t)x->B * (size_t)x->nchunk);
	int cur = ftcpumoe_dyn_claim(x);
	while (cur < total) {
		int nxt = -1;
		if (atomic_load_explicit(&x->next, memory_order_relaxed) < total - 2 * n)
			nxt = ftcpumoe_dyn_claim(x);
		uint64_t t0 = ftcpumoe_trace_now(x);
		run_item(x, tid, cur, nxt >= 0 && nxt < total ? item_start(x, nxt) : NULL, tmp, po);
		ftcpumoe_trace_item(x, tid, t0);
		cur = nxt >= 0 ? nxt : ftcpumoe_dyn_claim(x);
	}
	uint64_t t1 = ftcpumoe_trace_now(x);
	ftpool_barrier(x->cfg.pool);
	uint64_t t2 = ftcpumoe_trace_now(x);
	ftcpumoe_reduce_pout(x, tid, n, 1);
	ftcpumoe_trace_end(x, tid, t1, t2);
}
