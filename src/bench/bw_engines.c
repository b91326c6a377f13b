/* bw_engines: the concurrent phase of `ftbench bw`'s real measurements: one engine per GPU (its
 * gather on its GPU, its CPU MoE on its own cores), each phase measured while every engine runs it
 * (bw_real.h; struct ftbw_ops' engine_open, engine_phase, engine_close). */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bw_real.h"
#include "bench/cpu_moe.h"
#include "bench/gather.h"
#include "hw/cpu.h"
#include "util/stats.h"

/* One engine's objects for one item, made and used on the engine's own thread. */
struct engine {
	struct ftbw_real *r;
	const struct ftbw_engine *e;
	const struct ftbw_item *it;
	struct ftgather *g;
	struct ftmoebench *b;
	enum ftcpumoe_isa isa;           /* the tier the CPU phase ran (AUTO before) */
	struct ftbw_part gsetup, csetup; /* setup failures, reported by their phase */
};

int ftbw_real_engine_open(void *ctx, const struct ftbw_engine *e, const struct ftbw_config *c,
			  const struct ftbw_item *it, void **hout, char *err, size_t errlen)
{
	struct ftbw_real *r = ctx;
	struct engine *h = calloc(1, sizeof *h);
	*hout = NULL;
	if (!h) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	h->r = r;
	h->e = e;
	h->it = it;
	h->isa = FTCPUMOE_ISA_AUTO;
	h->gsetup.rc = h->csetup.rc = FTBW_NOT_RUN;
	*hout = h;
	if (e->gpu_info) {
		int rc = ftbw_select_gpu(e->gpu_info, err, errlen);
		if (rc < 0)
			return rc;
	}
	if (e->gpu_info && it->synth_experts > 0) {
		int n = it->synth_experts;
		int32_t *src = malloc((size_t)n * sizeof *src), *dst = malloc((size_t)n * sizeof *dst);
		struct ftgather_geom geom = {.format = it->fmt, .hidden = it->model->hidden, .inter = it->model->inter,
					     .experts = n, .layers = 1, .slots = n, .max_plan = n};
		uint64_t seed = 0x9E3779B97F4A7C15ULL ^ ((uint64_t)it->fmt->id << 32) ^ (uint64_t)(e->index + 1);
		int rc = src && dst ? 0 : -ENOMEM;
		for (int i = 0; rc == 0 && i < n; i++)
			src[i] = i, dst[i] = i;
		for (int i = n - 1; rc == 0 && i > 0; i--) {
			int j = (int)(ftbw_rng_next(&seed) % (uint64_t)(i + 1));
			int32_t t = src[i];
			src[i] = src[j];
			src[j] = t;
		}
		if (rc == 0) {
			if (e->mem_node >= 0)
				ftcpu_mem_prefer(e->mem_node);
			rc = ftgather_create(&h->g, &geom, r->rep);
			if (e->mem_node >= 0)
				ftcpu_mem_prefer(-1);
		}
		if (rc == 0)
			rc = ftgather_set_plan(h->g, 0, src, dst, n);
		free(src);
		free(dst);
		if (rc < 0) {
			h->gsetup.rc = rc;
			snprintf(h->gsetup.err, sizeof h->gsetup.err, "gather setup on GPU %d: %s", e->gpu_info->index,
				 ftbw_errstr(rc));
			ftgather_free(h->g);
			h->g = NULL;
			if (rc == -EIO) { /* a sticky CUDA error */
				snprintf(err, errlen, "%s", h->gsetup.err);
				return rc;
			}
		}
	}
	if (it->fmt->cpu_path) {
		struct ftmoebench_cfg cfg = {.format = it->fmt->id, .hidden = it->model->hidden, .inter = it->model->inter,
					.experts = it->model->experts, .topk = it->model->topk, .act = it->model->act,
					.swiglu_limit = it->model->swiglu_limit, .batch = 1, .threads = e->ncpus,
					.numa_node = e->node, .cpus = e->cpus, .ncpus = e->ncpus,
					.seed = 0x51ED2701u + (uint64_t)e->index, .tune = &c->tune};
		int rc = ftmoebench_create(&cfg, e->cpu, &h->b); /* pins this thread to the set's first core */
		if (rc < 0) {
			h->b = NULL;
			h->csetup.rc = rc;
			snprintf(h->csetup.err, sizeof h->csetup.err, "CPU MoE setup on %d cores: %s", e->ncpus,
				 ftbw_errstr(rc));
		}
	}
	return 0;
}

/* Block until every engine has its samples (the hold is released). */
static void hold_wait(struct ftbw_hold *hold)
{
	struct timespec ts = {0, 200000};
	while (!atomic_load(ftbw_hold_flag(hold)))
		nanosleep(&ts, NULL);
}

static int phase_gather(struct engine *h, const struct ftbw_config *c, struct ftbw_part *p, struct ftbw_hold *hold)
{
	int iters = c->kernel_pcie_iters, rc;
	double *secs = ftbw_new_samples(iters);
	if (!secs) {
		p->rc = -ENOMEM;
		snprintf(p->err, sizeof p->err, "out of memory");
		ftbw_hold_arrive(hold, h->e->index);
		return 0;
	}
	rc = ftgather_poison(h->g);
	if (rc == 0)
		rc = ftgather_time(h->g, FTGATHER_AUTO, GATHER_WARMUP, iters, secs);
	if (rc == 0) {
		double bytes = (double)h->it->synth_experts * (double)ftgather_expert_bytes(h->g);
		for (int i = 0; i < iters; i++)
			secs[i] = secs[i] > 0 ? bytes / secs[i] / 1e9 : 0.0;
	}
	/* keep this GPU's gather going while the others take their samples */
	ftbw_hold_arrive(hold, h->e->index);
	if (rc == 0 && !atomic_load(ftbw_hold_flag(hold))) {
		sched_setaffinity(0, sizeof h->r->wide, &h->r->wide); /* the loop thread inherits this */
		int lr = ftgather_overlap_start(h->g);
		hold_wait(hold);
		if (lr == 0) {
			uint64_t b;
			double s;
			lr = ftgather_overlap_stop(h->g, &b, &s);
		}
		if (lr < 0)
			rc = lr;
	}
	if (rc == 0 && (rc = ftgather_verify(h->g)) < 0) {
		p->rc = rc;
		snprintf(p->err, sizeof p->err, "gather copied wrong bytes on GPU %d: %s", h->e->gpu_info->index,
			 ftbw_errstr(rc));
		free(secs);
		return 0;
	}
	if (rc < 0) {
		p->rc = rc;
		snprintf(p->err, sizeof p->err, "gather on GPU %d: %s", h->e->gpu_info->index, ftbw_errstr(rc));
		free(secs);
		return rc == -EIO ? rc : 0;
	}
	p->rc = 0;
	p->gbs = secs;
	p->n = iters;
	return 0;
}

static int phase_cpu(struct engine *h, const struct ftbw_config *c, struct ftbw_meas *m, struct ftbw_hold *hold)
{
	struct ftbw_part *p = &m->cpu;
	int iters = c->kernel_cpu_iters;
	double *secs = ftbw_new_samples(iters), *bytes = ftbw_new_samples(iters);
	int rc = secs && bytes ? 0 : -ENOMEM;
	ftpool_pin_caller(ftmoebench_pool(h->b));
	if (rc == 0)
		rc = ftmoebench_time(h->b, FTCPUMOE_ISA_AUTO, c->kernel_cpu_warmup, iters, secs, bytes, &h->isa);
	ftbw_hold_arrive(hold, h->e->index);
	if (!atomic_load(ftbw_hold_flag(hold))) {
		double b, s;
		ftmoebench_run_until(h->b, rc == 0 ? h->isa : FTCPUMOE_ISA_AUTO, ftbw_hold_flag(hold), 0, &b, &s);
	}
	if (rc < 0) {
		p->rc = rc;
		snprintf(p->err, sizeof p->err, "CPU MoE on %d cores: %s", h->e->ncpus, ftbw_errstr(rc));
	} else {
		for (int i = 0; i < iters; i++)
			secs[i] = secs[i] > 0 ? bytes[i] / secs[i] / 1e9 : 0.0;
		p->rc = 0;
		p->gbs = secs;
		p->n = iters;
		secs = NULL;
		snprintf(m->cpu_isa, sizeof m->cpu_isa, "%s", ftcpumoe_isa_name(h->isa));
	}
	free(secs);
	free(bytes);
	return 0;
}

static int phase_overlap(struct engine *h, const struct ftbw_config *c, struct ftbw_meas *m, struct ftbw_hold *hold)
{
	int windows;
	double win;
	int rc = ftbw_overlap_windows(c, m, &windows, &win);
	/* the windows, then the same load until every engine has its windows */
	for (int w = 0; rc == 0 && w <= windows; w++) {
		atomic_int never = 0;
		double cb = 0, cs = 0, gs = 0;
		uint64_t gb = 0;
		if (w == windows) {
			ftbw_hold_arrive(hold, h->e->index);
			if (atomic_load(ftbw_hold_flag(hold)))
				break;
		}
		sched_setaffinity(0, sizeof h->r->wide, &h->r->wide); /* the gather thread inherits this */
		rc = ftgather_overlap_start(h->g);
		ftpool_pin_caller(ftmoebench_pool(h->b));
		if (rc < 0) {
			snprintf(m->ov_gather.err, sizeof m->ov_gather.err, "gather loop: %s", ftbw_errstr(rc));
			break;
		}
		int rc_cpu = w < windows ? ftmoebench_run_until(h->b, h->isa, &never, win, &cb, &cs)
					 : ftmoebench_run_until(h->b, h->isa, ftbw_hold_flag(hold), 0, &cb, &cs);
		rc = ftgather_overlap_stop(h->g, &gb, &gs);
		if (rc < 0) {
			snprintf(m->ov_gather.err, sizeof m->ov_gather.err, "gather loop: %s", ftbw_errstr(rc));
			break;
		}
		if (rc_cpu < 0) {
			rc = rc_cpu;
			snprintf(m->ov_cpu.err, sizeof m->ov_cpu.err, "CPU MoE steps: %s", ftbw_errstr(rc));
			break;
		}
		if (w < windows) {
			m->ov_cpu.gbs[w] = cs > 0 ? cb / cs / 1e9 : 0.0;
			m->ov_gather.gbs[w] = gs > 0 ? (double)gb / gs / 1e9 : 0.0;
		}
	}
	ftbw_hold_arrive(hold, h->e->index);
	if (rc == 0)
		m->ov_cpu.n = m->ov_gather.n = windows;
	m->ov_cpu.rc = m->ov_gather.rc = rc;
	return rc == -EIO && m->ov_gather.err[0] ? rc : 0;
}

int ftbw_real_engine_phase(void *hv, enum ftbw_phase ph, const struct ftbw_config *c, struct ftbw_meas *m,
			   struct ftbw_hold *hold, char *err, size_t errlen)
{
	struct engine *h = hv;
	int rc = 0;
	switch (ph) {
	case FTBW_PHASE_GATHER:
		if (!h->g) {
			m->gather = h->gsetup;
			break;
		}
		rc = phase_gather(h, c, &m->gather, hold);
		if (rc < 0)
			snprintf(err, errlen, "%s", m->gather.err);
		break;
	case FTBW_PHASE_CPU:
		if (!h->b) {
			m->cpu = h->csetup;
			break;
		}
		rc = phase_cpu(h, c, m, hold);
		break;
	case FTBW_PHASE_OVERLAP:
		if (!h->g || !h->b || m->gather.rc != 0 || m->cpu.rc != 0)
			break; /* FTBW_NOT_RUN: the overlap needs both halves */
		rc = phase_overlap(h, c, m, hold);
		if (rc < 0)
			snprintf(err, errlen, "overlap: %s", m->ov_gather.err);
		break;
	default:
		break;
	}
	ftbw_hold_arrive(hold, h->e->index);
	return rc;
}

void ftbw_real_engine_close(void *hv)
{
	struct engine *h = hv;
	if (!h)
		return;
	ftmoebench_free(h->b);
	ftgather_free(h->g);
	sched_setaffinity(0, sizeof h->r->wide, &h->r->wide);
	free(h);
}

