/* The pieces of a call that every schedule shares: one expert's matrices, its gate/up and down
 * row runs through the tier's kernel, h prepared for pass 2, and the sum of per-worker partial
 * outputs. See exec.h. */
#include <string.h>

#include "moe/cpu/exec.h"
#include "moe/cpu/pool.h"

void ftcpumoe_expert_mat(const struct ftcpumoe *x, int layer, int e, int down, struct ftkern_mat *m,
		       const uint16_t **bias)
{
	const void *const *bk = x->banks + (size_t)layer * x->nbanks;
#define BANK(i) ((const uint8_t *)bk[i] + (size_t)e * x->shape[i].expert_bytes)
	long H = x->cfg.hidden, I = x->cfg.inter;
	memset(m, 0, sizeof *m);
	m->kn = &x->knobs;
	*bias = NULL;
	m->K = down ? I : H;
	m->N = down ? H : 2 * I;
	switch (x->cfg.format) {
	case FTFMT_BF16:
	case FTFMT_Q4_0:
		m->w = BANK(down ? 1 : 0);
		break;
	case FTFMT_NVFP4:
		m->w = BANK(down ? 3 : 0);
		m->s = BANK(down ? 4 : 1);
		m->g = BANK(down ? 5 : 2);
		break;
	case FTFMT_DS_FP4:
		m->w = BANK(down ? 2 : 0);
		m->s = BANK(down ? 3 : 1);
		break;
	case FTFMT_MXFP4_TRITON:
		m->w = BANK(down ? 3 : 0);
		m->s = BANK(down ? 4 : 1);
		*bias = (const uint16_t *)BANK(down ? 5 : 2);
		break;
	default:
		break;
	}
#undef BANK
}

void ftcpumoe_slot_inputs(const struct ftcpumoe *x, int tid, int g, int down, const void **xs)
{
	const struct ftkern_ops *ops = x->ops;
	for (int i = 0; i < x->grp_nb[g]; i++) {
		int s = x->slot_of[x->grp_s0[g] + i];
		if (down && x->lean_h && ops->prep) /* batch 1: slot s */
			xs[i] = x->hpriv + ((size_t)tid * (size_t)x->cfg.max_topk + (size_t)s) * x->hq_stride;
		else if (!down && x->lean && ops->prep) /* batch 1: token 0 */
			xs[i] = x->xpriv + (size_t)tid * x->xq_stride;
		else if (down)
			xs[i] = ops->prep ? (const void *)(x->hq + (size_t)s * x->hq_stride)
					  : (const void *)(x->h + (size_t)s * x->cfg.inter);
		else
			xs[i] = ops->prep ? (const void *)(x->xq + (size_t)(s / x->topk) * x->xq_stride)
					  : (const void *)(x->xin + (size_t)(s / x->topk) * x->cfg.hidden);
	}
}

const void *ftcpumoe_group_row(const struct ftcpumoe *x, int g, int down, long r)
{
	struct ftkern_mat m;
	const uint16_t *bias;
	ftcpumoe_expert_mat(x, x->layer, x->uniq_e[x->grp_u[g]], down, &m, &bias);
	return ftcpumoe_row_addr(x, &m, r);
}

/* Row-major formats: gate rows [j0, j1) and up rows [I + j0, I + j1); mxfp4_triton on the tiers
 * without its K split: output columns [2 j0, 2 j1), gate and up interleaved, plus their biases. */
void ftcpumoe_gate_up_rows(struct ftcpumoe *x, int tid, int g, long j0, long j1, float *tmp, const void *next)
{
	long I = x->cfg.inter;
	int inter = x->cfg.format == FTFMT_MXFP4_TRITON;
	const struct ftkern_ops *ops = x->ops;
	struct ftkern_mat m;
	const uint16_t *bias;
	ftcpumoe_expert_mat(x, x->layer, x->uniq_e[x->grp_u[g]], 0, &m, &bias);
	if (!inter)
		ftcpumoe_prefetch_start(ftcpumoe_row_addr(x, &m, I + j0));
	if (next)
		ftcpumoe_prefetch_start(next);
	int nb = x->grp_nb[g];
	const void *xs[FTCPUMOE_MAX_BATCH];
	float *yg[FTCPUMOE_MAX_BATCH], *yu[FTCPUMOE_MAX_BATCH];
	ftcpumoe_slot_inputs(x, tid, g, 0, xs);
	for (int i = 0; i < nb; i++) {
		yg[i] = tmp + (size_t)i * 4 * FTCPUMOE_CHUNK;
		yu[i] = yg[i] + 2 * FTCPUMOE_CHUNK;
	}
	for (long c0 = j0; c0 < j1; c0 += FTCPUMOE_CHUNK) {
		long c1 = c0 + FTCPUMOE_CHUNK < j1 ? c0 + FTCPUMOE_CHUNK : j1;
		if (inter) {
			ops->rows(&m, 2 * c0, 2 * c1, nb, xs, yg);
		} else {
			ops->rows(&m, c0, c1, nb, xs, yg);
			ops->rows(&m, I + c0, I + c1, nb, xs, yu);
		}
		for (int i = 0; i < nb; i++) {
			float *h = x->h + (size_t)x->slot_of[x->grp_s0[g] + i] * I;
			if (!inter && x->vact &&
			    !x->vact(x->cfg.act, yg[i], yu[i], c1 - c0, 1.0f, x->cfg.swiglu_limit, h + c0))
				continue;
			for (long j = c0; j < c1; j++) {
				float gt = inter ? yg[i][2 * (j - c0)] + ftkern_bf16(bias[2 * j]) : yg[i][j - c0];
				float up = inter ? yg[i][2 * (j - c0) + 1] + ftkern_bf16(bias[2 * j + 1]) : yu[i][j - c0];
				h[j] = ftmoe_act((int)x->cfg.act, gt, up, x->cfg.swiglu_limit);
			}
		}
	}
}

/* out is the full output (static rows split) or this worker's partial (the flat and dynamic
 * splits, bias NULL: reduce_pout adds it). */
void ftcpumoe_down_rows(struct ftcpumoe *x, int tid, int g, const struct ftkern_mat *m, const uint16_t *bias,
		      long n0, long n1, float *tmp, float *out)
{
	long H = x->cfg.hidden;
	int nb = x->grp_nb[g];
	const void *xs[FTCPUMOE_MAX_BATCH];
	float *y[FTCPUMOE_MAX_BATCH];
	ftcpumoe_slot_inputs(x, tid, g, 1, xs);
	for (int i = 0; i < nb; i++)
		y[i] = tmp + (size_t)i * 2 * FTCPUMOE_CHUNK;
	for (long c0 = n0; c0 < n1; c0 += FTCPUMOE_CHUNK) {
		long c1 = c0 + FTCPUMOE_CHUNK < n1 ? c0 + FTCPUMOE_CHUNK : n1;
		x->ops->rows(m, c0, c1, nb, xs, y);
		for (int i = 0; i < nb; i++) {
			int s = x->slot_of[x->grp_s0[g] + i];
			float wgt = x->rw[s];
			float *o = out + (size_t)(s / x->topk) * H;
			if (bias)
				for (long r = c0; r < c1; r++)
					o[r] += wgt * (y[i][r - c0] + ftkern_bf16(bias[r]));
			else
				for (long r = c0; r < c1; r++)
					o[r] += wgt * y[i][r - c0];
		}
	}
}

/* In worker order, so every schedule adds the same partials in the same order. */
void ftcpumoe_reduce_out(struct ftcpumoe *x, int tid, int n, const float *p, size_t wstride, size_t bstride,
		       const uint8_t *touch)
{
	long H = x->cfg.hidden, n0 = H * tid / n, n1 = H * (tid + 1) / n;
	for (int b = 0; b < x->B; b++) {
		float *o = x->out + (size_t)b * H;
		const float *pb = p + (size_t)b * bstride;
		for (long r0 = n0, r1; r0 < n1; r0 = r1) {
			long c = r0 / 16;
			r1 = (c + 1) * 16 < n1 ? (c + 1) * 16 : n1;
			int first = 1;
			for (int t = 0; t < n; t++) {
				if (touch && !touch[(size_t)t * x->pchunk_stride + (size_t)b * (size_t)x->nchunk + (size_t)c])
					continue;
				const float *q = pb + (size_t)t * wstride;
				if (first)
					for (long r = r0; r < r1; r++)
						o[r] = q[r];
				else
					for (long r = r0; r < r1; r++)
						o[r] += q[r];
				first = 0;
			}
			if (first)
				for (long r = r0; r < r1; r++)
					o[r] = 0.0f;
		}
	}
}

void ftcpumoe_reduce_pout(struct ftcpumoe *x, int tid, int n, int lazy)
{
	ftcpumoe_reduce_out(x, tid, n, x->pout, (size_t)x->cfg.max_batch * (size_t)x->cfg.hidden,
			  (size_t)x->cfg.hidden, lazy ? x->ptouch : NULL);
}

void ftcpumoe_prep_group_h(struct ftcpumoe *x, int g)
{
	const struct ftkern_ops *ops = x->ops;
	if (ops->prep)
		for (int i = 0; i < x->grp_nb[g]; i++) {
			int s = x->slot_of[x->grp_s0[g] + i];
			ops->prep(x->h + (size_t)s * x->cfg.inter, x->cfg.inter, x->hq + (size_t)s * x->hq_stride);
		}
}

/* lean_h (batch 1): an id routed twice is two slots, both prepared. */
void ftcpumoe_prep_h(struct ftcpumoe *x, int tid, int n, int ga, int gb)
{
	const struct ftkern_ops *ops = x->ops;
	if (!ops->prep)
		return;
	if (x->lean_h) {
		for (int g = ga; g < gb; g++)
			for (int i = 0; i < x->grp_nb[g]; i++) {
				int s = x->slot_of[x->grp_s0[g] + i];
				ops->prep(x->h + (size_t)s * x->cfg.inter, x->cfg.inter,
					  x->hpriv + ((size_t)tid * (size_t)x->cfg.max_topk + (size_t)s) * x->hq_stride);
			}
		return;
	}
	int live = x->uniq_start[x->nuniq];
	for (int i = tid; i < live; i += n) {
		int s = x->slot_of[i];
		ops->prep(x->h + (size_t)s * x->cfg.inter, x->cfg.inter, x->hq + (size_t)s * x->hq_stride);
	}
	ftpool_barrier(x->cfg.pool);
}
