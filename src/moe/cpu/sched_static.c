/* The static splits: every worker's share of a pass is fixed before the call. Barriers: after
 * pass 1, after the prep of h (none at batch 1: each worker prepares the h it reads), and for
 * the flat split before the per-worker outputs are added up. */
#include <string.h>

#include "moe/cpu/exec.h"
#include "moe/cpu/pool.h"

/* Flat split, pass 1: the gate/up rows of all slot groups, laid end to end, cut into one
 * contiguous range per worker, so each worker streams one or two long runs per matrix instead
 * of a short run of every expert, and all get the same number of rows. */
static void pass1_flat(struct ftcpumoe *x, int tid, int n, float *tmp)
{
	long I = x->cfg.inter, R = (long)x->ngrp * I;
	long f0 = R * tid / n, f1 = R * (tid + 1) / n;
	for (long f = f0; f < f1;) {
		int g = (int)(f / I);
		long j0 = f % I, j1 = I < j0 + (f1 - f) ? I : j0 + (f1 - f);
		int pf = f + (j1 - j0) < f1 && g + 1 < x->ngrp; /* the next group's gate run */
		ftcpumoe_gate_up_rows(x, tid, g, j0, j1, tmp, pf ? ftcpumoe_group_row(x, g + 1, 0, 0) : NULL);
		f += j1 - j0;
	}
}

/* Flat split, pass 2: the down rows the same way, into this worker's partial output. */
static void pass2_flat(struct ftcpumoe *x, int tid, int n, float *tmp)
{
	long H = x->cfg.hidden, R = (long)x->ngrp * H;
	long f0 = R * tid / n, f1 = R * (tid + 1) / n;
	float *po = x->pout + (size_t)tid * (size_t)x->cfg.max_batch * (size_t)H;
	memset(po, 0, (size_t)x->B * (size_t)H * sizeof(float));
	for (long f = f0; f < f1;) {
		int g = (int)(f / H);
		long n0 = f % H, n1 = H < n0 + (f1 - f) ? H : n0 + (f1 - f);
		struct ftkern_mat m;
		const uint16_t *bias;
		ftcpumoe_expert_mat(x, x->layer, x->uniq_e[x->grp_u[g]], 1, &m, &bias);
		if (f + (n1 - n0) < f1 && g + 1 < x->ngrp)
			ftcpumoe_prefetch_start(ftcpumoe_group_row(x, g + 1, 1, 0));
		ftcpumoe_down_rows(x, tid, g, &m, NULL, n0, n1, tmp, po);
		f += n1 - n0;
	}
}

void ftcpumoe_run_flat(struct ftcpumoe *x, int tid, int n)
{
	float *tmp = x->tmp + (size_t)tid * x->tmp_stride;
	long H = x->cfg.hidden, R = (long)x->ngrp * H, f0 = R * tid / n, f1 = R * (tid + 1) / n;
	pass1_flat(x, tid, n, tmp);
	if (x->nuniq > 0) /* pass 2's first stream, requested while waiting at the barrier */
		ftcpumoe_prefetch_start(ftcpumoe_group_row(x, (int)(f0 / H), 1, f0 % H));
	ftpool_barrier(x->cfg.pool);
	/* lean_h: the groups this worker's pass-2 range reads */
	int ga = (int)(f0 / H), gb = f1 > f0 ? (int)((f1 - 1) / H) + 1 : ga;
	ftcpumoe_prep_h(x, tid, n, ga, gb);
	pass2_flat(x, tid, n, tmp);
	ftpool_barrier(x->cfg.pool);
	ftcpumoe_reduce_pout(x, tid, n, 0);
}

/* Rows split (mxfp4_triton on the tiers without a K-split kernel): every worker takes the same
 * share of the gate/up outputs, then of the down rows, of every routed expert, and writes its
 * rows of out itself. */
void ftcpumoe_run_rows(struct ftcpumoe *x, int tid, int n)
{
	float *tmp = x->tmp + (size_t)tid * x->tmp_stride;
	long I = x->cfg.inter, H = x->cfg.hidden;
	long j0 = I * tid / n, j1 = I * (tid + 1) / n;
	if (j1 > j0)
		for (int g = 0; g < x->ngrp; g++) {
			int pf = g + 1 < x->ngrp && x->cfg.format != FTFMT_MXFP4_TRITON;
			ftcpumoe_gate_up_rows(x, tid, g, j0, j1, tmp, pf ? ftcpumoe_group_row(x, g + 1, 0, j0) : NULL);
		}
	long n0 = H * tid / n, n1 = H * (tid + 1) / n;
	if (x->nuniq > 0) /* pass 2's first stream, requested while waiting at the barrier */
		ftcpumoe_prefetch_start(ftcpumoe_group_row(x, 0, 1, n0));
	ftpool_barrier(x->cfg.pool);
	ftcpumoe_prep_h(x, tid, n, 0, x->ngrp);
	for (int b = 0; b < x->B; b++)
		memset(x->out + (size_t)b * H + n0, 0, (size_t)(n1 - n0) * sizeof(float));
	for (int g = 0; g < x->ngrp; g++) {
		struct ftkern_mat m;
		const uint16_t *bias;
		ftcpumoe_expert_mat(x, x->layer, x->uniq_e[x->grp_u[g]], 1, &m, &bias);
		if (n1 > n0 && g + 1 < x->ngrp)
			ftcpumoe_prefetch_start(ftcpumoe_group_row(x, g + 1, 1, n0));
		ftcpumoe_down_rows(x, tid, g, &m, bias, n0, n1, tmp, x->out);
	}
}
