/* mxfp4_triton's transposed banks ([K/2, N], output innermost) split along K: every worker
 * streams whole bank rows of each routed expert and adds its products into partial sums of all
 * N outputs (per worker and slot, ftcpumoe_part); the partials are then added up.
 *  - static (ftcpumoe_run_k): one K range per worker; slot groups go in rounds of at most
 *    part_cap slots, one barrier per round (partials double-buffered per round, so one barrier
 *    separates writing from reading): at batch 1 a whole pass is one round.
 *  - dynamic (ftcpumoe_run_dyn_k, while a call's routes fit one round): items of ch1t / ch2t bank
 *    rows claimed in order as in sched_dyn.c (the last group's pass 2 in finer ones, ch2tf, so
 *    the workers finish close together); each pass-2 item computes the slice of h it reads from
 *    the pass-1 partials itself, so no worker reduces a whole expert and nothing waits on one. */
#include <string.h>

#include "moe/cpu/exec.h"
#include "moe/cpu/pool.h"

/* The groups [g0, end) of the round starting at g0 (at least one group). */
static int round_end(const struct ftcpumoe *x, int g0)
{
	int g = g0, ns = 0;
	while (g < x->ngrp && (g == g0 || ns + x->grp_nb[g] <= x->part_cap))
		ns += x->grp_nb[g++];
	return g;
}

/* One pass (down = 0: gate_up, h written; 1: down, out written) over all rounds; *buf: the
 * partial buffer of the next round. */
static void pass_k(struct ftcpumoe *x, int tid, int n, int *buf, int down)
{
	long H = x->cfg.hidden, I = x->cfg.inter;
	long KK = down ? I / 2 : H / 2, N = down ? H : 2 * I;
	long kk0 = KK * tid / n, kk1 = KK * (tid + 1) / n;
	long o0 = (down ? H : I) * tid / n, o1 = (down ? H : I) * (tid + 1) / n;
	const struct ftkern_ops *ops = x->ops;
	if (down)
		for (int b = 0; b < x->B; b++)
			memset(x->out + (size_t)b * H + o0, 0, (size_t)(o1 - o0) * sizeof(float));
	for (int g0 = 0; g0 < x->ngrp;) {
		int g1 = round_end(x, g0);
		for (int g = g0, base = 0; g < g1; base += x->grp_nb[g++]) {
			struct ftkern_mat m;
			const uint16_t *bias;
			ftcpumoe_expert_mat(x, x->layer, x->uniq_e[x->grp_u[g]], down, &m, &bias);
			if (kk1 > kk0 && g + 1 < x->ngrp && x->grp_u[g + 1] != x->grp_u[g])
				ftcpumoe_prefetch_start(ftcpumoe_group_row(x, g + 1, down, kk0));
			int nb = x->grp_nb[g];
			const void *xs[FTCPUMOE_MAX_BATCH];
			float *ps[FTCPUMOE_MAX_BATCH];
			ftcpumoe_slot_inputs(x, tid, g, down, xs);
			for (int i = 0; i < nb; i++) {
				ps[i] = ftcpumoe_part(x, tid, *buf, base + i);
				memset(ps[i], 0, sizeof(float) * (size_t)N);
			}
			if (kk1 > kk0)
				ops->rows_t(&m, kk0, kk1, nb, xs, ps, ftcpumoe_part(x, tid, 2, 0));
		}
		ftpool_barrier(x->cfg.pool);
		for (int g = g0, base = 0; g < g1; base += x->grp_nb[g++]) {
			struct ftkern_mat m;
			const uint16_t *bias;
			ftcpumoe_expert_mat(x, x->layer, x->uniq_e[x->grp_u[g]], down, &m, &bias);
			for (int i = 0; i < x->grp_nb[g]; i++) {
				int s = x->slot_of[x->grp_s0[g] + i];
				if (!down) {
					float *h = x->h + (size_t)s * I;
					for (long j = o0; j < o1; j++) {
						float gt = ftkern_bf16(bias[2 * j]), up = ftkern_bf16(bias[2 * j + 1]);
						for (int t = 0; t < n; t++) {
							const float *p = ftcpumoe_part(x, t, *buf, base + i);
							gt += p[2 * j];
							up += p[2 * j + 1];
						}
						h[j] = ftmoe_act((int)x->cfg.act, gt, up, x->cfg.swiglu_limit);
					}
				} else {
					float wgt = x->rw[s];
					float *o = x->out + (size_t)(s / x->topk) * H;
					for (long r = o0; r < o1; r++) {
						float v = ftkern_bf16(bias[r]);
						for (int t = 0; t < n; t++)
							v += ftcpumoe_part(x, t, *buf, base + i)[r];
						o[r] += wgt * v;
					}
				}
			}
		}
		*buf ^= 1;
		g0 = g1;
	}
}

void ftcpumoe_run_k(struct ftcpumoe *x, int tid, int n)
{
	int buf = 0;
	pass_k(x, tid, n, &buf, 0);
	if (x->nuniq > 0) /* pass 2's first stream, requested while waiting at the barrier */
		ftcpumoe_prefetch_start(ftcpumoe_group_row(x, 0, 1, x->cfg.inter / 2 * tid / n));
	ftpool_barrier(x->cfg.pool);
	ftcpumoe_prep_h(x, tid, n, 0, x->ngrp);
	pass_k(x, tid, n, &buf, 1);
}

/* Pass-2 item over down bank rows [kk0, kk1) of group g: its inputs are h elements [2 kk0,
 * 2 kk1), which it computes itself from the pass-1 partials of the workers that touched each
 * slot (bias, activation, route weight), writes into h and prepares into this worker's slice
 * buffer; *m is narrowed to those bank rows (kk0 is a multiple of 16: whole scale blocks and
 * activation blocks). No worker reduces a whole group, so nothing waits on one. */
static void slice(struct ftcpumoe *x, int tid, int g, int n, long kk0, long kk1, struct ftkern_mat *m,
			const void **xs, float *acc)
{
	long I = x->cfg.inter, j0 = 2 * kk0, len = 2 * (kk1 - kk0);
	struct ftkern_mat gu;
	const uint16_t *bias;
	ftcpumoe_expert_mat(x, x->layer, x->uniq_e[x->grp_u[g]], 0, &gu, &bias);
	for (int i = 0; i < x->grp_nb[g]; i++) {
		int si = x->grp_s0[g] + i, s = x->slot_of[si];
		float *h = x->h + (size_t)s * I + j0, w = x->rw[s];
		for (long j = 0; j < 2 * len; j++)
			acc[j] = ftkern_bf16(bias[2 * j0 + j]);
		for (int t = 0; t < n; t++)
			if (x->touch[(size_t)t * x->part_cap + si]) {
				const float *p = ftcpumoe_part(x, t, 0, si) + 2 * j0;
				for (long j = 0; j < 2 * len; j++)
					acc[j] += p[j];
			}
		if (!x->vact || x->vact(x->cfg.act, acc, NULL, len, w, x->cfg.swiglu_limit, h))
			for (long j = 0; j < len; j++)
				h[j] = w * ftmoe_act((int)x->cfg.act, acc[2 * j], acc[2 * j + 1], x->cfg.swiglu_limit);
		if (x->ops->prep) {
			uint8_t *q = x->hslice + ((size_t)tid * (size_t)x->part_cap + (size_t)i) * x->hq_stride;
			x->ops->prep(h, len, q);
			xs[i] = q;
		} else {
			xs[i] = h;
		}
	}
	m->w += (size_t)kk0 * (size_t)m->N;
	m->s += (size_t)(kk0 / 16) * (size_t)m->N;
	m->K = len;
}

/* K-split item i: its pass (*down), group (returned) and bank rows [*kk0, *kk1). */
static int k_item(const struct ftcpumoe *x, int i, int *down, long *kk0, long *kk1)
{
	int p1 = x->ngrp * x->n1t, g;
	long ch, KK;
	if (i < p1) {
		*down = 0;
		g = i / x->n1t;
		ch = x->ch1t;
		*kk0 = (long)(i % x->n1t) * ch;
		KK = x->cfg.hidden / 2;
	} else {
		int last = (x->ngrp - 1) * x->n2t;
		*down = 1;
		i -= p1;
		if (i < last) {
			g = i / x->n2t;
			ch = x->ch2t;
			*kk0 = (long)(i % x->n2t) * ch;
		} else { /* the last group's: ch2tf, finer, so the workers finish close together */
			g = x->ngrp - 1;
			ch = x->ch2tf;
			*kk0 = (long)(i - last) * ch;
		}
		KK = x->cfg.inter / 2;
	}
	*kk1 = *kk0 + ch < KK ? *kk0 + ch : KK;
	return g;
}

/* The dynamic K split: the items are runs of ch1t / ch2t bank rows of each group's gate_up and
 * down matrices (the last group's down matrix in runs of ch2tf), claimed in order like ftcpumoe_run_dyn. A worker adds every pass-1 item into its
 * own partial of each slot (zeroed when it first touches the slot in a call) and counts it
 * done. A pass-2 item waits for its group's pass 1 and computes the slice of h its bank rows
 * read (slice); h is scaled by the route weight, so pass 2 adds all routes of a token into one
 * vector, the worker's partial of that token. After the step's one barrier each worker sums its
 * output rows over the workers, adds the route-weighted down biases, and clears its touched
 * flags for the next call. */
void ftcpumoe_run_dyn_k(struct ftcpumoe *x, int tid, int n)
{
	long H = x->cfg.hidden, I = x->cfg.inter;
	int total = x->nitems, live = x->uniq_start[x->nuniq];
	uint8_t *touch = x->touch + (size_t)tid * x->part_cap;
	float *tmp = ftcpumoe_part(x, tid, 2, 0);
	ftcpumoe_trace_start(x, tid);
	for (int b = 0; b < x->B; b++)
		memset(ftcpumoe_part(x, tid, 1, b), 0, sizeof(float) * (size_t)H);
	int cur = ftcpumoe_dyn_claim(x);
	while (cur < total) {
		int nxt = -1;
		if (atomic_load_explicit(&x->next, memory_order_relaxed) < total - 2 * n)
			nxt = ftcpumoe_dyn_claim(x);
		int down;
		long kk0, kk1;
		int g = k_item(x, cur, &down, &kk0, &kk1);
		struct ftkern_mat m;
		const uint16_t *bias;
		ftcpumoe_expert_mat(x, x->layer, x->uniq_e[x->grp_u[g]], down, &m, &bias);
		if (nxt >= 0 && nxt < total) { /* the next item's first bank rows */
			int dn;
			long n0, n1;
			int gn = k_item(x, nxt, &dn, &n0, &n1);
			ftcpumoe_prefetch_start(ftcpumoe_group_row(x, gn, dn, n0));
		}
		int nb = x->grp_nb[g];
		const void *xs[FTCPUMOE_MAX_BATCH];
		float *ps[FTCPUMOE_MAX_BATCH];
		uint64_t t0 = ftcpumoe_trace_now(x);
		if (down)
			for (int k = 0; atomic_load_explicit(&x->done1[g], memory_order_acquire) != x->n1t;)
				ftpool_relax(x->cfg.pool, &k);
		ftcpumoe_trace_wait(x, tid, t0);
		if (down) {
			slice(x, tid, g, n, kk0, kk1, &m, xs, tmp);
			kk1 -= kk0;
			kk0 = 0;
		} else {
			ftcpumoe_slot_inputs(x, tid, g, down, xs);
		}
		for (int i = 0; i < nb; i++) {
			int si = x->grp_s0[g] + i;
			if (down) {
				ps[i] = ftcpumoe_part(x, tid, 1, x->slot_of[si] / x->topk);
			} else {
				ps[i] = ftcpumoe_part(x, tid, 0, si);
				if (!touch[si]) {
					memset(ps[i], 0, sizeof(float) * (size_t)(2 * I));
					touch[si] = 1;
				}
			}
		}
		x->ops->rows_t(&m, kk0, kk1, nb, xs, ps, tmp);
		if (!down)
			atomic_fetch_add_explicit(&x->done1[g], 1, memory_order_release);
		ftcpumoe_trace_item(x, tid, t0);
		cur = nxt >= 0 ? nxt : ftcpumoe_dyn_claim(x);
	}
	uint64_t t1 = ftcpumoe_trace_now(x);
	ftpool_barrier(x->cfg.pool);
	uint64_t t2 = ftcpumoe_trace_now(x);
	/* cleared after the barrier, not at the start: a pass-2 item (slice) may read the
	 * flags of a worker that has not started this call yet */
	memset(touch, 0, (size_t)live);
	long o0 = H * tid / n, o1 = H * (tid + 1) / n;
	ftcpumoe_reduce_out(x, tid, n, ftcpumoe_part(x, 0, 1, 0), (size_t)3 * (size_t)x->part_cap * (size_t)x->part_n,
		   (size_t)x->part_n, NULL); /* buffer 1 of each worker */
	for (int u = 0; u < x->nuniq; u++) {
		struct ftkern_mat m;
		const uint16_t *bias;
		ftcpumoe_expert_mat(x, x->layer, x->uniq_e[u], 1, &m, &bias);
		for (int i = x->uniq_start[u]; i < x->uniq_start[u + 1]; i++) {
			int s = x->slot_of[i];
			float w = x->rw[s], *o = x->out + (size_t)(s / x->topk) * H;
			for (long r = o0; r < o1; r++)
				o[r] += w * ftkern_bf16(bias[r]);
		}
	}
	ftcpumoe_trace_end(x, tid, t1, t2);
}
