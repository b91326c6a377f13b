/* The CPU MoE executor (reference §6): create (scratch, item sizes, the tune), and per call the
 * routes grouped by expert, one schedule picked, two passes on the pool. The schedules are in
 * sched_static.c, sched_dyn.c and ksplit.c; what they share in passes.c (exec.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "moe/cpu/exec.h"
#include "moe/cpu/pool.h"

/* Dynamic schedule: weight bytes per work item. Pass 1's is the largest power of two from
 * DYN_ITEM_MIN_KB to DYN_ITEM_MAX_KB that leaves every worker at least DYN_ITEMS_PER_WORKER
 * pass-1 items of a batch-1 step (max_topk experts); pass 2's is DYN_ITEM2_KB (tune.item_kb and
 * item2_kb override them). */
#define DYN_ITEM_MIN_KB 128
#define DYN_ITEM_MAX_KB 512
#define DYN_ITEMS_PER_WORKER 3
#define DYN_ITEM2_KB 128
/* ... and of the mxfp4_triton K split, pass 1 and pass 2. */
#define DYN_ITEM_T_KB 512
#define DYN_ITEM2_T_KB 256
/* tune.sched auto: the dynamic schedules from this many pool workers, the static ones below. */
#define DYN_MIN_THREADS 8

static void *alloc_aligned(size_t n)
{
	n = (n + 63) / 64 * 64;
	void *p = aligned_alloc(64, n ? n : 64);
	if (p)
		memset(p, 0, n ? n : 64);
	return p;
}

static int choose_ops(struct ftcpumoe *x, enum ftcpumoe_isa want)
{
	enum ftcpumoe_isa isa;
	enum ftcpumoe_isa req = want == FTCPUMOE_ISA_AUTO ? (enum ftcpumoe_isa)x->tune.isa : want;
	int r = ftcpumoe_isa_resolve(req, x->cfg.format, x->cpu_isa, &isa);
	if (r < 0)
		return r;
	if (isa != FTCPUMOE_ISA_SCALAR && (x->cfg.hidden % FTCPUMOE_KALIGN || x->cfg.inter % FTCPUMOE_KALIGN)) {
		if (want != FTCPUMOE_ISA_AUTO)
			return -EINVAL; /* vector tiers need H and I multiples of 64 */
		isa = FTCPUMOE_ISA_SCALAR;
	}
	const struct ftkern_ops *ops = ftkern_select(isa, x->cfg.format, x->cpu_isa);
	if (!ops || (!ops->rows && !(ops->rows_t && x->part)))
		return -EINVAL;
	size_t xs = ops->xbytes ? ops->xbytes(x->cfg.hidden) : 0;
	size_t hs = ops->xbytes ? ops->xbytes(x->cfg.inter) : 0;
	if (xs > x->xq_stride || hs > x->hq_stride)
		return -EINVAL; /* scratch sized at create for the largest layout */
	x->isa = isa;
	x->ops = ops;
	x->vact = isa >= FTCPUMOE_ISA_AVX512 ? ftkern_act_avx512 : NULL;
	return 0;
}

/* This executor's kernel knobs from its tune (every kernel call reads them through its matrix). */
static void set_kernel_knobs(struct ftkern_knobs *kn, const struct ftcpumoe_tune *t)
{
	kn->pf_dist = (int)t->pf_dist;
	kn->pf_far = (int)t->pf_far;
	kn->mx_pf_dist = (int)(t->mx_pf_dist / 64 * 64);
	kn->pf_scales = (int)t->pf_scales;
	kn->mx_vbmi = (int)t->mx_vbmi;
	kn->amx_i8_min_nb = (int)t->amx_min_nb;
}

/* The work items of the dynamic schedules (row-major formats: rows per item of pass 1, pass 2
 * and the last group's pass 2; mxfp4_triton's K split: bank rows per item). */
static void size_items(struct ftcpumoe *x)
{
	const struct ftcpumoe_cfg *cfg = &x->cfg;
	const struct ftcpumoe_tune *t = &x->tune;
	size_t r1 = 2 * ftcpumoe_wrow_bytes(cfg->format, cfg->hidden), r2 = ftcpumoe_wrow_bytes(cfg->format, cfg->inter);
	size_t item = (size_t)t->item_kb * 1024;
	size_t per = (size_t)cfg->max_topk * r1 * (size_t)cfg->inter / (size_t)x->nthreads;
	if (!item)
		for (item = DYN_ITEM_MIN_KB * 1024;
		     item < DYN_ITEM_MAX_KB * 1024 && per / (2 * item) >= DYN_ITEMS_PER_WORKER;)
			item *= 2;
	size_t item2 = t->item2_kb ? (size_t)t->item2_kb * 1024 : t->item_kb ? item : DYN_ITEM2_KB * 1024;
	x->ch1 = r1 ? (long)(item / r1) : cfg->inter;
	x->ch2 = r2 ? (long)(item2 / r2) : cfg->hidden;
	x->ch1 = x->ch1 < 8 ? 8 : x->ch1;
	x->ch2 = x->ch2 < 8 ? 8 : x->ch2;
	x->n1 = (int)((cfg->inter + x->ch1 - 1) / x->ch1);
	x->n2 = (int)((cfg->hidden + x->ch2 - 1) / x->ch2);
	x->ch2f = x->ch2 / t->tail_div;
	x->ch2f = x->ch2f < 8 ? 8 : x->ch2f;
	x->n2f = (int)((cfg->hidden + x->ch2f - 1) / x->ch2f);
	if (cfg->format == FTFMT_MXFP4_TRITON) {
		long kb = (t->item_kb ? t->item_kb : DYN_ITEM_T_KB) * 1024;
		x->ch1t = kb / (2 * cfg->inter) / 16 * 16;
		x->ch2t = (t->item2_kb ? t->item2_kb : DYN_ITEM2_T_KB) * 1024 / cfg->hidden / 16 * 16;
		x->ch1t = x->ch1t < 16 ? 16 : x->ch1t;
		x->ch2t = x->ch2t < 16 ? 16 : x->ch2t;
		x->n1t = (int)((cfg->hidden / 2 + x->ch1t - 1) / x->ch1t);
		x->n2t = (int)((cfg->inter / 2 + x->ch2t - 1) / x->ch2t);
		x->ch2tf = x->ch2t / t->tail_div / 16 * 16;
		x->ch2tf = x->ch2tf < 16 ? 16 : x->ch2tf;
		x->n2tf = (int)((cfg->inter / 2 + x->ch2tf - 1) / x->ch2tf);
	}
}

int ftcpumoe_create(const struct ftcpumoe_cfg *cfg, struct ftcpumoe **out)
{
	if (!cfg || !out || !cfg->banks || !cfg->pool || !cfg->cpu || cfg->layers < 1 ||
	    cfg->experts < 1 || cfg->max_batch < 1 || cfg->max_batch > FTCPUMOE_MAX_BATCH ||
	    cfg->max_topk < 1 || cfg->max_topk > FTCPUMOE_MAX_TOPK)
		return -EINVAL;
	const struct ftfmt *f = ftfmt_get(cfg->format);
	struct ftcpumoe_tune tune;
	if (cfg->tune)
		tune = *cfg->tune;
	else
		ftcpumoe_tune_defaults(&tune);
	if (!f || !f->cpu_path || ftcpumoe_tune_check(&tune, NULL, 0) < 0)
		return -EINVAL;
	struct ftcpumoe *x = alloc_aligned(sizeof *x); /* 64-byte aligned members */
	if (!x)
		return -ENOMEM;
	int r = -ENOMEM;
	x->cfg = *cfg;
	x->tune = tune;
	set_kernel_knobs(&x->knobs, &tune);
	x->cfg.tune = NULL;
	x->nbanks = ftfmt_banks(f, cfg->hidden, cfg->inter, x->shape);
	if (x->nbanks < 0) {
		r = x->nbanks;
		goto fail;
	}
	x->banks = calloc((size_t)cfg->layers * (size_t)x->nbanks, sizeof *x->banks);
	if (!x->banks)
		goto fail;
	for (int i = 0; i < cfg->layers * x->nbanks; i++) {
		if (!cfg->banks[i]) {
			r = -EINVAL;
			goto fail;
		}
		x->banks[i] = cfg->banks[i];
	}
	x->cfg.banks = NULL;
	x->cfg.cpu = NULL;
	x->cpu_isa = cfg->cpu->isa;
	x->uidx = malloc((size_t)cfg->experts * sizeof *x->uidx);
	if (!x->uidx)
		goto fail;
	for (int e = 0; e < cfg->experts; e++)
		x->uidx[e] = -1;
	x->nthreads = ftpool_size(cfg->pool);
	/* scratch for the largest prepared layout of any tier this CPU can run */
	for (int t = 0; t < FTCPUMOE_ISA_COUNT; t++) {
		if (!ftcpumoe_isa_supported((enum ftcpumoe_isa)t, x->cpu_isa))
			continue;
		const struct ftkern_ops *o = ftkern_select(t, cfg->format, x->cpu_isa);
		if (o && o->xbytes) {
			size_t a = (o->xbytes(cfg->hidden) + 63) / 64 * 64;
			size_t b = (o->xbytes(cfg->inter) + 63) / 64 * 64;
			if (a > x->xq_stride)
				x->xq_stride = a;
			if (b > x->hq_stride)
				x->hq_stride = b;
		}
	}
	size_t slots = (size_t)cfg->max_batch * (size_t)cfg->max_topk;
	x->tmp_stride = (size_t)2 * cfg->max_batch * 2 * FTCPUMOE_CHUNK;
	x->xq = alloc_aligned((size_t)cfg->max_batch * x->xq_stride);
	x->h = alloc_aligned(slots * (size_t)cfg->inter * sizeof(float));
	x->hq = alloc_aligned(slots * x->hq_stride);
	x->tmp = alloc_aligned((size_t)x->nthreads * x->tmp_stride * sizeof(float));
	if (!x->xq || !x->h || !x->hq || !x->tmp)
		goto fail;
	x->pout = alloc_aligned((size_t)x->nthreads * (size_t)cfg->max_batch * (size_t)cfg->hidden * sizeof(float));
	x->nchunk = (cfg->hidden + 15) / 16;
	x->pchunk_stride = ((size_t)cfg->max_batch * (size_t)x->nchunk + 63) / 64 * 64;
	x->ptouch = alloc_aligned((size_t)x->nthreads * x->pchunk_stride);
	if (!x->pout || !x->ptouch)
		goto fail;
	x->dyn_ok = tune.sched == FTCPUMOE_SCHED_AUTO ? x->nthreads >= DYN_MIN_THREADS
						    : tune.sched == FTCPUMOE_SCHED_DYNAMIC;
	size_items(x);
	x->trace = (int)tune.trace;
	x->tr = alloc_aligned((size_t)x->nthreads * sizeof *x->tr);
	if (!x->tr)
		goto fail;
	if (x->trace) {
		x->tr_rec = alloc_aligned((size_t)FTCPUMOE_TR_N * FTCPUMOE_TRACE_STEPS * sizeof(double));
		if (!x->tr_rec)
			goto fail;
	}
	x->xpriv = alloc_aligned((size_t)x->nthreads * x->xq_stride);
	x->hpriv = alloc_aligned((size_t)x->nthreads * (size_t)cfg->max_topk * x->hq_stride);
	if (!x->xpriv || !x->hpriv)
		goto fail;
	if (cfg->format == FTFMT_MXFP4_TRITON) { /* transposed banks: workers split K (rows_t) */
		x->part_n = 2 * cfg->inter > cfg->hidden ? 2 * cfg->inter : cfg->hidden;
		x->part_n = (x->part_n + 15) / 16 * 16;
		/* a round of slot groups shares one barrier: up to part_cap slots (all routes of a
		 * small batch, e.g. gpt-oss top-4 at batch 1 in one round) */
		int cap = cfg->max_batch * cfg->max_topk;
		int lim = cfg->max_batch > 16 ? cfg->max_batch : 16;
		x->part_cap = cap < lim ? cap : lim;
		x->part = alloc_aligned((size_t)x->nthreads * 3 * (size_t)x->part_cap *
					(size_t)x->part_n * sizeof(float)); /* 2 partials + scratch */
		x->touch = alloc_aligned((size_t)x->nthreads * (size_t)x->part_cap);
		x->hslice = alloc_aligned((size_t)x->nthreads * (size_t)x->part_cap * x->hq_stride);
		if (!x->part || !x->touch || !x->hslice)
			goto fail;
	}
	r = choose_ops(x, cfg->isa);
	if (r < 0)
		goto fail;
	*out = x;
	return 0;
fail:
	ftcpumoe_free(x);
	return r;
}

void ftcpumoe_free(struct ftcpumoe *x)
{
	if (!x)
		return;
	free(x->banks);
	free(x->uidx);
	free(x->xq);
	free(x->h);
	free(x->hq);
	free(x->tmp);
	free(x->part);
	free(x->touch);
	free(x->tr);
	free(x->tr_rec);
	free(x->hslice);
	free(x->pout);
	free(x->ptouch);
	free(x->xpriv);
	free(x->hpriv);
	free(x);
}

int ftcpumoe_set_isa(struct ftcpumoe *x, enum ftcpumoe_isa isa)
{
	return choose_ops(x, isa);
}

enum ftcpumoe_isa ftcpumoe_isa(const struct ftcpumoe *x)
{
	return x->isa;
}

const struct ftcpumoe_tune *ftcpumoe_tune_of(const struct ftcpumoe *x)
{
	return &x->tune;
}

/* One step on worker tid: x prepared (at batch 1 by every worker for itself, no barrier; else
 * shared, then a barrier), then the call's schedule. */
static void forward_worker(void *arg, int tid, int n)
{
	static void (*const run[])(struct ftcpumoe *, int, int) = {
		[FTCPUMOE_RUN_DYN] = ftcpumoe_run_dyn, [FTCPUMOE_RUN_DYN_K] = ftcpumoe_run_dyn_k,
		[FTCPUMOE_RUN_FLAT] = ftcpumoe_run_flat, [FTCPUMOE_RUN_K] = ftcpumoe_run_k,
		[FTCPUMOE_RUN_ROWS] = ftcpumoe_run_rows,
	};
	struct ftcpumoe *x = arg;
	const struct ftkern_ops *ops = x->ops;
	if (ops->prep) {
		if (x->lean) {
			int traced = x->run == FTCPUMOE_RUN_DYN || x->run == FTCPUMOE_RUN_DYN_K;
			uint64_t t0 = traced ? ftcpumoe_trace_now(x) : 0;
			ops->prep(x->xin, x->cfg.hidden, x->xpriv + (size_t)tid * x->xq_stride);
			if (traced)
				ftcpumoe_trace_prep(x, tid, t0);
		} else {
			for (int b = tid; b < x->B; b += n)
				ops->prep(x->xin + (size_t)b * x->cfg.hidden, x->cfg.hidden,
					  x->xq + (size_t)b * x->xq_stride);
			ftpool_barrier(x->cfg.pool);
		}
	}
	run[x->run](x, tid, n);
}

/* Group live slots by expert, experts in first-seen order (counting sort, no allocation), and
 * cut each expert's slots into groups of at most max_batch. */
static void group_routes(struct ftcpumoe *x, int ns, const int32_t *ids)
{
	int cnt[FTCPUMOE_MAX_SLOTS], fill[FTCPUMOE_MAX_SLOTS];
	x->nuniq = 0;
	for (int s = 0; s < ns; s++) {
		if (ids[s] < 0)
			continue;
		int u = x->uidx[ids[s]];
		if (u < 0) {
			u = x->uidx[ids[s]] = x->nuniq++;
			x->uniq_e[u] = ids[s];
			cnt[u] = 0;
		}
		cnt[u]++;
	}
	x->uniq_start[0] = 0;
	for (int u = 0; u < x->nuniq; u++) {
		x->uniq_start[u + 1] = x->uniq_start[u] + cnt[u];
		fill[u] = x->uniq_start[u];
	}
	for (int s = 0; s < ns; s++)
		if (ids[s] >= 0)
			x->slot_of[fill[x->uidx[ids[s]]]++] = s;
	for (int u = 0; u < x->nuniq; u++)
		x->uidx[x->uniq_e[u]] = -1;
	x->ngrp = 0;
	for (int u = 0; u < x->nuniq; u++)
		for (int s0 = x->uniq_start[u]; s0 < x->uniq_start[u + 1]; s0 += x->cfg.max_batch) {
			int nb = x->uniq_start[u + 1] - s0;
			x->grp_u[x->ngrp] = u;
			x->grp_s0[x->ngrp] = s0;
			x->grp_nb[x->ngrp++] = nb < x->cfg.max_batch ? nb : x->cfg.max_batch;
		}
}

/* The schedule of this call: the dynamic ones when on (the K split only while the call's routes
 * fit one round of partials), else the static split of the kernel's kind. */
static enum ftcpumoe_sched_kind pick_run(const struct ftcpumoe *x)
{
	int ksplit = x->ops->rows_t && x->part, live = x->uniq_start[x->nuniq];
	if (ksplit)
		return x->dyn_ok && live <= x->part_cap && x->B <= x->part_cap ? FTCPUMOE_RUN_DYN_K : FTCPUMOE_RUN_K;
	if (x->cfg.format == FTFMT_MXFP4_TRITON) /* output columns of transposed banks */
		return FTCPUMOE_RUN_ROWS;
	return x->dyn_ok ? FTCPUMOE_RUN_DYN : FTCPUMOE_RUN_FLAT;
}

int ftcpumoe_forward(struct ftcpumoe *x, int layer, int B, int topk, const float *xin,
		   const int32_t *ids, const float *weights, float *out)
{
	if (!x || layer < 0 || layer >= x->cfg.layers || B < 1 || B > x->cfg.max_batch ||
	    topk < 1 || topk > x->cfg.max_topk || !xin || !ids || !weights || !out)
		return -EINVAL;
	int ns = B * topk;
	for (int s = 0; s < ns; s++)
		if (ids[s] < -1 || ids[s] >= x->cfg.experts)
			return -EINVAL;
	group_routes(x, ns, ids);
	x->layer = layer;
	x->B = B;
	x->topk = topk;
	x->xin = xin;
	x->rw = weights;
	x->out = out;
	x->run = pick_run(x);
	int dyn = x->run == FTCPUMOE_RUN_DYN || x->run == FTCPUMOE_RUN_DYN_K;
	x->lean = B == 1;
	x->lean_h = x->lean && (x->run == FTCPUMOE_RUN_FLAT || x->run == FTCPUMOE_RUN_ROWS);
	if (dyn) {
		/* no live route (every id -1): no items, the output 0 (the last group's finer pass 2
		 * counted without a last group would be items of group -1, waited for forever) */
		x->nitems = !x->ngrp ? 0
			    : x->run == FTCPUMOE_RUN_DYN ? x->ngrp * (x->n1 + x->n2) - x->n2 + x->n2f
							 : x->ngrp * (x->n1t + x->n2t) - x->n2t + x->n2tf;
		atomic_store_explicit(&x->next, 0, memory_order_relaxed);
		for (int g = 0; g < x->ngrp; g++)
			atomic_store_explicit(&x->done1[g], 0, memory_order_relaxed);
	}
	int traced = x->trace && dyn;
	if (traced)
		ftcpumoe_trace_post(x);
	ftpool_run(x->cfg.pool, forward_worker, x);
	if (traced)
		ftcpumoe_trace_step(x);
	return 0;
}
