/* bw_ops: the real measurements of `ftbench bw` (see bw_ops.h). */
#include "bench/bw_ops.h"
#include "bench/bw_real.h"

#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/cpu_moe.h"
#include "bench/cpu_read.h"
#include "bench/gather.h"
#include "bench/pcie.h"
#include "moe/cpu/cpumoe.h"
#include "moe/cpu/pool.h"
#include "util/stats.h"

#ifdef FT_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

/* The CPU MoE steps of each tier run in READ_ROUNDS rounds, each right after one pass of the
 * read ceiling (as `ftbench cpu-moe` does), so the kernel and its ceiling see the same machine
 * state: this host's read rate drifts by tens of percent within a run. */
#define READ_ROUNDS 4
/* After a run a pool's workers spin for the next one (moe/cpu/pool.c: 2 ms) before they sleep
 * on a futex. The read session has its own pool on the executor's cores, so each read pass waits
 * that out before (the executor's workers) and after (the read pool's): neither shares the cores
 * with the other's spinning workers. */
#define READ_SETTLE_NS 3000000L


const char *ftbw_errstr(int r)
{
	return strerror(r < 0 ? -r : r);
}

int ftbw_isa_known(const char *isa, char *names, size_t n)
{
	size_t u = 0;
	if (names && n)
		names[0] = '\0';
	for (int t = 0; t < FTCPUMOE_ISA_COUNT && names; t++)
		if (u < n)
			u += (size_t)snprintf(names + u, n - u, "%s%s", t ? "," : "", ftcpumoe_isa_name((enum ftcpumoe_isa)t));
	enum ftcpumoe_isa x;
	return ftcpumoe_isa_lookup(isa, &x) == 0 && x != FTCPUMOE_ISA_AUTO;
}

/* Make gpu current on the calling thread, its context created with blocking-sync waits (see
 * ftbw_real_create); 0, -EIO (CUDA error, err says which) or -ENODEV (no CUDA in the build). */
int ftbw_select_gpu(const struct ftgpu_info *gpu, char *err, size_t errlen)
{
#ifdef FT_HAVE_CUDA
	cudaError_t ce = cudaSetDevice(gpu->index);
	if (ce == cudaSuccess && cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync) != cudaSuccess)
		(void)cudaGetLastError(); /* a context made earlier keeps its flags */
	if (ce == cudaSuccess)
		ce = cudaFree(NULL); /* create the context now, not inside a timed region */
	if (ce != cudaSuccess) {
		snprintf(err, errlen, "GPU %d (%s): %s", gpu->index, gpu->uuid, cudaGetErrorString(ce));
		return -EIO;
	}
	return 0;
#else
	snprintf(err, errlen, "built without CUDA");
	return -ENODEV;
#endif
}

/* Pinned banks of a GPU go to its NUMA node on a host of several nodes. */
static int mem_node_of(const struct ftbw_env *env)
{
	return env->gpu && env->cpu->numa_nodes > 1 && env->gpu->numa_node >= 0 ? env->gpu->numa_node : -1;
}

static int env_node(const struct ftbw_env *env)
{
	return env->gpu ? env->gpu->numa_node : -1;
}

int ftbw_real_create(struct ftbw_real **out, const struct ftbw_env *env, const struct ftreport *rep,
		     char *err, size_t errlen)
{
	struct ftbw_real *r = calloc(1, sizeof *r);
	*out = NULL;
	if (!r) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	r->env = env;
	r->rep = rep;
	CPU_ZERO(&r->wide);
	if (sched_getaffinity(0, sizeof r->wide, &r->wide) < 0)
		for (int i = 0; i < CPU_SETSIZE && i < 1024; i++)
			CPU_SET(i, &r->wide);
	if (env->gpu) {
		/* Host threads that wait for the GPU sleep instead of spinning: during the overlap the
		 * gather thread waits on its stream while every physical core runs a pinned CPU MoE
		 * worker, and a spinning waiter would time-slice one of them and stall every step at
		 * its barrier. The likely cause of what the first H200 run showed with spinning waits:
		 * CPU MoE bf16 90 -> 21 GB/s overlapped, and the compute-bound mxfp4 kernel 24 -> 9,
		 * more than DRAM sharing explains (bench/RESULTS.md). Timings use CUDA events, which
		 * this does not change. Best effort: a context made earlier keeps its flags. */
		int rc = ftbw_select_gpu(env->gpu, err, errlen);
		if (rc < 0) {
			free(r);
			return rc;
		}
	}
	*out = r;
	return 0;
}

void ftbw_real_free(struct ftbw_real *r)
{
	if (!r)
		return;
	ftcread_close(r->rsess);
	ftpool_free(r->rpool);
	free(r);
}

/* ---------------------------------------------------------------- ceilings */

static int op_cpu_read(void *ctx, const struct ftbw_env *env, int passes, double *gbs, char *err, size_t errlen)
{
	struct ftbw_real *r = ctx;
	int rc = 0;
	if (!r->rpool) {
		rc = ftpool_create(env->cpu, env->ncpus, env_node(env), &r->rpool);
		if (rc < 0) {
			snprintf(err, errlen, "CPU read ceiling: worker pool of %d threads: %s", env->ncpus,
				 ftbw_errstr(rc));
			r->rpool = NULL;
			return rc;
		}
	}
	rc = ftpool_pin_caller(r->rpool);
	if (rc == 0 && !r->rsess) {
		struct ftcread_result res = {0};
		rc = ftcread_open(env->cpu, r->rpool, 0, &r->rsess, &res);
		if (rc < 0)
			r->rsess = NULL;
	}
	for (int i = 0; rc == 0 && i < passes; i++)
		gbs[i] = ftcread_pass(r->rsess);
	sched_setaffinity(0, sizeof r->wide, &r->wide);
	if (rc < 0)
		snprintf(err, errlen, "CPU read ceiling: %s", ftbw_errstr(rc));
	return rc;
}

/* One pass of the run's read session into part p (nothing without a session), between two
 * settling waits (READ_SETTLE_NS); the calling thread is left pinned to `back` (a CPU MoE pool) or unpinned (NULL). */
static void read_pass(struct ftbw_real *r, struct ftbw_part *p, struct ftpool *back)
{
	if (!r->rsess)
		return;
	if (p->rc == FTBW_NOT_RUN) {
		p->rc = 0;
		p->n = 0;
	}
	double *v = p->rc == 0 ? realloc(p->gbs, (size_t)(p->n + 1) * sizeof *v) : NULL;
	if (p->rc == 0 && !v) {
		p->rc = -ENOMEM;
		snprintf(p->err, sizeof p->err, "out of memory");
	}
	struct timespec ts = {0, READ_SETTLE_NS};
	if (v) {
		p->gbs = v;
		ftpool_pin_caller(r->rpool);
		nanosleep(&ts, NULL);
		v[p->n++] = ftcread_pass(r->rsess);
	}
	nanosleep(&ts, NULL);
	if (back)
		ftpool_pin_caller(back);
	else
		sched_setaffinity(0, sizeof r->wide, &r->wide);
}

/* Append src's samples to dst (both parts of read passes); src is left empty. */
static void read_move(struct ftbw_part *dst, struct ftbw_part *src)
{
	if (src->rc != 0 || src->n == 0)
		return;
	if (dst->rc == FTBW_NOT_RUN) {
		*dst = *src;
		src->gbs = NULL;
		src->n = 0;
		src->rc = FTBW_NOT_RUN;
		return;
	}
	if (dst->rc == 0) {
		double *v = realloc(dst->gbs, (size_t)(dst->n + src->n) * sizeof *v);
		if (!v) {
			dst->rc = -ENOMEM;
			snprintf(dst->err, sizeof dst->err, "out of memory");
		} else {
			memcpy(v + dst->n, src->gbs, (size_t)src->n * sizeof *v);
			dst->gbs = v;
			dst->n += src->n;
		}
	}
	free(src->gbs);
	src->gbs = NULL;
	src->n = 0;
	src->rc = FTBW_NOT_RUN;
}

static int op_pcie(void *ctx, const struct ftbw_env *env, bool h2d, size_t bytes, int iters, double *gbs,
		   char *err, size_t errlen)
{
	int rc = ftbw_select_gpu(env->gpu, err, errlen);
	if (rc < 0)
		return rc;
	rc = ftpcie_linear(h2d ? FTPCIE_H2D : FTPCIE_D2H, bytes, iters, gbs);
	if (rc < 0) {
		snprintf(err, errlen, "PCIe linear %s ceiling (%zu MiB): %s", h2d ? "H2D" : "D2H", bytes >> 20,
			 ftbw_errstr(rc));
		return rc;
	}
	for (int i = 0; i < iters; i++) /* seconds per pass -> GB/s */
		gbs[i] = ftpcie_gbs(bytes, gbs[i]);
	return 0;
}

/* ---------------------------------------------------------------- one item */

uint64_t ftbw_rng_next(uint64_t *s)
{
	uint64_t x = *s; /* xorshift64* */
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1DULL;
}

double *ftbw_new_samples(int n)
{
	return calloc((size_t)(n > 0 ? n : 1), sizeof(double));
}

/* The real copy_missing over E_synth synthetic experts into as many slots, every slot refilled
 * from a random permutation each pass; checked byte for byte once. */
static int gather_alone(struct ftbw_real *r, const struct ftbw_config *c, const struct ftbw_item *it,
			int mem_node, int now, struct ftgather **gout, struct ftbw_part *p)
{
	int n = it->synth_experts, rc;
	int32_t *src = malloc((size_t)n * sizeof *src), *dst = malloc((size_t)n * sizeof *dst);
	double *secs = ftbw_new_samples(c->kernel_pcie_iters);
	struct ftgather *g = NULL;
	struct ftgather_geom geom = {.format = it->fmt, .hidden = it->model->hidden, .inter = it->model->inter,
				     .experts = n, .layers = 1, .slots = n, .max_plan = n};
	if (!src || !dst || !secs) {
		rc = -ENOMEM;
		snprintf(p->err, sizeof p->err, "out of memory");
		goto out;
	}
	uint64_t seed = 0x9E3779B97F4A7C15ULL ^ ((uint64_t)it->fmt->id << 32) ^ (uint64_t)it->model->experts;
	for (int i = 0; i < n; i++)
		src[i] = i, dst[i] = i;
	for (int i = n - 1; i > 0; i--) {
		int j = (int)(ftbw_rng_next(&seed) % (uint64_t)(i + 1));
		int32_t t = src[i];
		src[i] = src[j];
		src[j] = t;
	}
	/* the pinned banks (allocated and first filled by this thread and the fill threads it
	 * starts) on the GPU's NUMA node */
	if (mem_node >= 0)
		ftcpu_mem_prefer(mem_node);
	rc = ftgather_create(&g, &geom, r->rep);
	if (mem_node >= 0)
		ftcpu_mem_prefer(-1);
	if (rc < 0) {
		snprintf(p->err, sizeof p->err, "gather setup (%d experts of %zu bytes): %s", n, it->expert_bytes,
			 ftbw_errstr(rc));
		goto out;
	}
	rc = ftgather_set_plan(g, 0, src, dst, n);
	if (rc == 0)
		rc = ftgather_poison(g);
	if (rc == 0)
		rc = ftgather_set_default_path(g, c->gather_sm ? FTGATHER_FUSED : FTGATHER_AUTO);
	if (rc == 0 && now > 0)
		rc = ftgather_time(g, FTGATHER_AUTO, GATHER_WARMUP, now, secs);
	else if (rc == 0) /* the warm-up alone (its last pass timed, dropped): the passes come in pairs */
		rc = ftgather_time(g, FTGATHER_AUTO, GATHER_WARMUP - 1, 1, secs);
	if (rc < 0) {
		snprintf(p->err, sizeof p->err, "gather (%s path): %s",
			 ftgather_path_name(ftgather_default_path(g)), ftbw_errstr(rc));
		goto out;
	}
	rc = ftgather_verify(g);
	if (rc < 0) {
		snprintf(p->err, sizeof p->err, "gather copied wrong bytes (%s path): %s",
			 ftgather_path_name(ftgather_default_path(g)), ftbw_errstr(rc));
		goto out;
	}
	double bytes = (double)n * (double)ftgather_expert_bytes(g);
	for (int i = 0; i < now; i++)
		secs[i] = secs[i] > 0 ? bytes / secs[i] / 1e9 : 0.0;
	p->gbs = secs;
	p->n = now;
	secs = NULL;
	*gout = g;
	g = NULL;
out:
	p->rc = rc;
	ftgather_free(g);
	free(secs);
	free(src);
	free(dst);
	return rc;
}

/* k more gather passes (one untimed first: the copy-engine thread may have gone to sleep during
 * the CPU steps) appended to p, whose array holds kernel_pcie_iters; the plan is gather_alone's
 * (every experts' rows, random slots), already checked. 0 or -errno (the error in p->err). */
static int gather_more(struct ftgather *g, const struct ftbw_config *c, int experts, struct ftbw_part *p, int k)
{
	if (k > c->kernel_pcie_iters - p->n)
		k = c->kernel_pcie_iters - p->n;
	if (k <= 0)
		return 0;
	int rc = ftgather_time(g, FTGATHER_AUTO, 1, k, p->gbs + p->n);
	if (rc < 0) {
		p->rc = rc;
		snprintf(p->err, sizeof p->err, "gather (%s path, interleaved): %s",
			 ftgather_path_name(ftgather_default_path(g)), ftbw_errstr(rc));
		return rc;
	}
	double bytes = (double)experts * (double)ftgather_expert_bytes(g);
	for (int i = p->n; i < p->n + k; i++)
		p->gbs[i] = p->gbs[i] > 0 ? bytes / p->gbs[i] / 1e9 : 0.0;
	p->n += k;
	return 0;
}

static double median_of(const double *v, int n)
{
	return n > 0 ? ftstat_of(v, n).median : NAN;
}

/* The interleaved default run (both halves): PAIR_GATHER timed gather passes and
 * kernel_cpu_iters / pairs CPU MoE steps per pair, as many pairs as both counts allow (at most
 * FTBW_MAX_PAIRS): 16 pairs of 2 passes and 32 steps by default. */
#define PAIR_GATHER 2
static int pair_count(const struct ftbw_config *c)
{
	int n = (c->kernel_pcie_iters + PAIR_GATHER - 1) / PAIR_GATHER;
	n = n < c->kernel_cpu_iters ? n : c->kernel_cpu_iters;
	n = n < FTBW_MAX_PAIRS ? n : FTBW_MAX_PAIRS;
	return n > 0 ? n : 1;
}

/* The gather half of a pair: the passes left over the pairs left (gather_more: after one
 * untimed pass, which also covers the CPU pool's spinning workers going to sleep), taken off the
 * executor's cores; [*a, *z) are its samples. */
static void pair_gather(struct ftbw_real *r, struct ftgather *g, const struct ftbw_config *c,
			const struct ftbw_item *it, struct ftbw_meas *m, int pairs_left, int *a, int *z)
{
	int left = c->kernel_pcie_iters - m->gather.n;
	*a = *z = m->gather.n;
	if (m->gather.rc != 0 || left <= 0 || pairs_left <= 0)
		return;
	sched_setaffinity(0, sizeof r->wide, &r->wide);
	gather_more(g, c, it->synth_experts, &m->gather, left / pairs_left + (left % pairs_left > 0));
	*z = m->gather.n;
}

/* The real CPU MoE executor at batch 1 (one tier, or the sweep of --isa all|list: the best tier
 * gives the figure). With g, the first tier's steps and the gather's passes are timed in pairs
 * (pair_count; the order alternates, the read passes spread over them), so the two sides of the
 * ratio, and the read ceiling, sample the same stretch of time; each pair gives its own ratio. */
static int cpu_alone(struct ftbw_real *r, const struct ftbw_env *env, const struct ftbw_config *c,
		     const struct ftbw_item *it, struct ftgather *g, struct ftmoebench **bout, enum ftcpumoe_isa *used,
		     struct ftbw_meas *m)
{
	struct ftbw_part *p = &m->cpu;
	struct ftmoebench *b = NULL;
	enum ftcpumoe_isa tiers[FTBW_MAX_ISAS];
	int iters = c->kernel_cpu_iters, rc;
	double *secs = ftbw_new_samples(iters), *bytes = ftbw_new_samples(iters), *best = NULL;
	double best_med = -1;
	char why[160] = "";
	if (!secs || !bytes) {
		rc = -ENOMEM;
		snprintf(p->err, sizeof p->err, "out of memory");
		goto out;
	}
	int nt = ftmoebench_isa_list(c->isa, &c->tune, it->fmt->id, env->cpu->isa, tiers, FTBW_MAX_ISAS, why, sizeof why);
	if (nt <= 0) {
		rc = nt < 0 ? nt : -ENOTSUP;
		snprintf(p->err, sizeof p->err, "--isa %s: %s", c->isa, why[0] ? why : ftbw_errstr(rc));
		goto out;
	}
	struct ftmoebench_cfg cfg = {.format = it->fmt->id, .hidden = it->model->hidden, .inter = it->model->inter,
				.experts = it->model->experts, .topk = it->model->topk, .act = it->model->act,
				.swiglu_limit = it->model->swiglu_limit, .batch = 1, .threads = env->ncpus,
				.numa_node = env_node(env), .tune = &c->tune};
	rc = ftmoebench_create(&cfg, env->cpu, &b);
	if (rc < 0) {
		snprintf(p->err, sizeof p->err, "CPU MoE setup: %s", ftbw_errstr(rc));
		goto out;
	}
	bool sweep = strcmp(c->isa, "auto") != 0;
	for (int t = 0; t < nt; t++) {
		enum ftcpumoe_isa u = tiers[t];
		struct ftbw_part rd = {.rc = FTBW_NOT_RUN};
		/* the first tier with the gather: interleaved pairs; otherwise rounds of steps, each
		 * after a read pass */
		const bool paired = g && t == 0 && m->gather.rc == 0;
		int rounds = paired ? pair_count(c) : iters < READ_ROUNDS ? iters : READ_ROUNDS, tr = 0, off = 0;
		int read_every = paired ? (rounds + READ_ROUNDS - 1) / READ_ROUNDS : 1;
		/* where each round's samples start and end (gather: ga..gz, CPU: c0[k]..c0[k+1]) */
		int ga[FTBW_MAX_PAIRS], gz[FTBW_MAX_PAIRS], c0[FTBW_MAX_PAIRS + 1];
		if (!r->rsess && !g)
			rounds = 1;
		for (int k = 0; k < rounds && tr == 0; k++) {
			int per = iters / rounds + (k < iters % rounds);
			if (k % read_every == 0)
				read_pass(r, &rd, NULL);
			/* a pair: gather then steps (even k), or steps then gather (odd k), so neither
			 * side always follows the other */
			const bool gather_first = k % 2 == 0;
			ga[k] = gz[k] = m->gather.n;
			if (paired && gather_first)
				pair_gather(r, g, c, it, m, rounds - k, &ga[k], &gz[k]);
			c0[k] = off;
			ftpool_pin_caller(ftmoebench_pool(b));
			tr = ftmoebench_time(b, tiers[t], k == 0 ? c->kernel_cpu_warmup : 1, per, secs + off, bytes + off,
					&u);
			off += per;
			if (paired && !gather_first && tr == 0)
				pair_gather(r, g, c, it, m, rounds - k, &ga[k], &gz[k]);
		}
		c0[rounds] = off;
		double med = NAN;
		if (tr == 0) {
			for (int i = 0; i < iters; i++)
				secs[i] = secs[i] > 0 ? bytes[i] / secs[i] / 1e9 : 0.0;
			med = median_of(secs, iters);
			if (med > best_med) {
				read_move(&m->read_other, &m->read_cpu);
				read_move(&m->read_cpu, &rd);
				best_med = med;
				/* per pair: its CPU median over its gather median */
				m->npair = 0;
				for (int k = 0; paired && m->gather.rc == 0 && k < rounds && m->npair < FTBW_MAX_PAIRS; k++) {
					double gm = median_of(m->gather.gbs + ga[k], gz[k] - ga[k]);
					double cm = median_of(secs + c0[k], c0[k + 1] - c0[k]);
					if (gm > 0 && cm > 0)
						m->pair_ratio[m->npair++] = cm / gm;
				}
				free(best);
				best = secs;
				secs = ftbw_new_samples(iters);
				*used = u;
				snprintf(m->cpu_isa, sizeof m->cpu_isa, "%s", ftcpumoe_isa_name(u));
				if (!secs) {
					rc = -ENOMEM;
					snprintf(p->err, sizeof p->err, "out of memory");
					goto out;
				}
			}
		} else {
			snprintf(why, sizeof why, "%s: %s", ftcpumoe_isa_name(tiers[t]), ftbw_errstr(tr));
			rc = tr;
		}
		read_move(&m->read_other, &rd);
		free(rd.gbs);
		if (sweep && m->nsweep < FTBW_MAX_ISAS) {
			snprintf(m->sweep_isa[m->nsweep], sizeof m->sweep_isa[0], "%s", ftcpumoe_isa_name(tiers[t]));
			m->sweep_gbs[m->nsweep++] = med;
		}
	}
	if (!best) {
		snprintf(p->err, sizeof p->err, "CPU MoE: %s", why[0] ? why : "no tier ran");
		rc = rc < 0 ? rc : -EIO;
		goto out;
	}
	rc = 0;
	p->gbs = best;
	p->n = iters;
	best = NULL;
	*bout = b;
	b = NULL;
out:
	p->rc = rc;
	ftmoebench_free(b);
	free(best);
	free(secs);
	free(bytes);
	return rc;
}

/* The overlapped run's windows (overlap_s in OVERLAP_WINDOW_S pieces, at least one) and their
 * sample arrays in m: 0, or -ENOMEM with the error in m->ov_cpu.err. */
int ftbw_overlap_windows(const struct ftbw_config *c, struct ftbw_meas *m, int *windows, double *win)
{
	int n = (int)lround(c->overlap_s / OVERLAP_WINDOW_S);
	if (n < 1)
		n = 1;
	*windows = n;
	*win = c->overlap_s / n;
	m->ov_cpu.gbs = ftbw_new_samples(n);
	m->ov_gather.gbs = ftbw_new_samples(n);
	if (!m->ov_cpu.gbs || !m->ov_gather.gbs) {
		snprintf(m->ov_cpu.err, sizeof m->ov_cpu.err, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

/* Both at once: in windows of about OVERLAP_WINDOW_S, the gather loops on its own thread (not on
 * a worker's core) while this thread drives CPU MoE steps; each side reports its bytes/time. */
static int overlap(struct ftbw_real *r, const struct ftbw_config *c, struct ftgather *g, struct ftmoebench *b,
		   enum ftcpumoe_isa isa, struct ftbw_meas *m)
{
	int windows, rc;
	double win;
	if ((rc = ftbw_overlap_windows(c, m, &windows, &win)) < 0)
		goto out;
	for (int w = 0; w < windows; w++) {
		atomic_int stop = 0;
		double cb = 0, cs = 0, gs = 0;
		uint64_t gb = 0;
		read_pass(r, &m->read_other, NULL);
		sched_setaffinity(0, sizeof r->wide, &r->wide); /* the gather thread inherits this */
		rc = ftgather_overlap_start(g);
		ftpool_pin_caller(ftmoebench_pool(b));
		if (rc < 0) {
			snprintf(m->ov_gather.err, sizeof m->ov_gather.err, "gather loop: %s", ftbw_errstr(rc));
			goto out;
		}
		int rc_cpu = ftmoebench_run_until(b, isa, &stop, win, &cb, &cs);
		rc = ftgather_overlap_stop(g, &gb, &gs);
		if (rc < 0) {
			snprintf(m->ov_gather.err, sizeof m->ov_gather.err, "gather loop: %s", ftbw_errstr(rc));
			goto out;
		}
		if (rc_cpu < 0) {
			rc = rc_cpu;
			snprintf(m->ov_cpu.err, sizeof m->ov_cpu.err, "CPU MoE steps: %s", ftbw_errstr(rc));
			goto out;
		}
		m->ov_cpu.gbs[w] = cs > 0 ? cb / cs / 1e9 : 0.0;
		m->ov_gather.gbs[w] = gs > 0 ? (double)gb / gs / 1e9 : 0.0;
	}
	m->ov_cpu.n = m->ov_gather.n = windows;
	read_pass(r, &m->read_other, NULL);
out:
	m->ov_cpu.rc = m->ov_gather.rc = rc;
	return rc;
}

/* --batch-sweep: one executor for the largest batch (tokens routed among the model's experts,
 * sharing them), then SWEEP_ROUNDS rounds over the batches, each batch's CPU steps followed by
 * the gather of as many experts as its steps read (random rows and slots): the two sides of a
 * batch's ratio see the same machine state. */
#define SWEEP_ROUNDS 4
#define SWEEP_CPU_STEPS 4    /* CPU steps per batch and round */
#define SWEEP_GATHER_PASSES 3 /* gather passes per batch and round */
static void batch_sweep(struct ftbw_real *r, const struct ftbw_config *c, const struct ftbw_item *it,
			struct ftgather *g, enum ftcpumoe_isa isa, struct ftbw_meas *m)
{
	const struct ftbw_env *env = r->env;
	int nb = c->nbatch < FTBW_MAX_BATCHES ? c->nbatch : FTBW_MAX_BATCHES, maxb = 1, rc = 0;
	for (int i = 0; i < nb; i++) {
		maxb = c->batches[i] > maxb ? c->batches[i] : maxb;
		m->bsw[i].batch = c->batches[i];
		m->bsw[i].cpu.rc = m->bsw[i].gather.rc = FTBW_NOT_RUN;
		m->bsw[i].cpu.gbs = ftbw_new_samples(SWEEP_ROUNDS * SWEEP_CPU_STEPS);
		m->bsw[i].gather.gbs = ftbw_new_samples(SWEEP_ROUNDS * SWEEP_GATHER_PASSES);
	}
	m->nbatch = nb;
	struct ftmoebench *b = NULL;
	struct ftmoebench_cfg cfg = {.format = it->fmt->id, .hidden = it->model->hidden, .inter = it->model->inter,
				.experts = it->model->experts, .topk = it->model->topk, .act = it->model->act,
				.swiglu_limit = it->model->swiglu_limit, .batch = maxb,
				.routing = FTMOEBENCH_ROUTE_MODEL, .threads = env->ncpus, .numa_node = env_node(env),
				.tune = &c->tune};
	int n = it->synth_experts;
	int32_t *src = malloc((size_t)n * sizeof *src), *dst = malloc((size_t)n * sizeof *dst);
	const char *what = "out of memory";
	if (!src || !dst) {
		rc = -ENOMEM;
		goto out;
	}
	for (int i = 0; i < nb; i++)
		if (!m->bsw[i].cpu.gbs || !m->bsw[i].gather.gbs) {
			rc = -ENOMEM;
			goto out;
		}
	what = "CPU MoE setup";
	if ((rc = ftmoebench_create(&cfg, env->cpu, &b)) < 0)
		goto out;
	uint64_t seed = 0xB47C5EEDull ^ (uint64_t)it->fmt->id;
	size_t eb = ftmoebench_expert_bytes(b);
	for (int k = 0; k < SWEEP_ROUNDS; k++)
		for (int i = 0; i < nb; i++) {
			struct ftbw_batch *bb = &m->bsw[i];
			double secs[SWEEP_CPU_STEPS], bytes[SWEEP_CPU_STEPS], gs[SWEEP_GATHER_PASSES], sum = 0;
			what = "CPU MoE steps";
			if ((rc = ftmoebench_set_batch(b, bb->batch)) < 0 ||
			    (rc = ftmoebench_time(b, isa, k == 0 ? 2 : 1, SWEEP_CPU_STEPS, secs, bytes, NULL)) < 0)
				goto out;
			for (int s = 0; s < SWEEP_CPU_STEPS; s++) {
				bb->cpu.gbs[bb->cpu.n++] = secs[s] > 0 ? bytes[s] / secs[s] / 1e9 : 0.0;
				sum += bytes[s];
			}
			bb->experts = (bb->experts * k + sum / SWEEP_CPU_STEPS / (double)eb) / (k + 1);
			/* the gather of as many experts (random rows and slots) */
			int ne = (int)lround(sum / SWEEP_CPU_STEPS / (double)eb);
			ne = ne < 1 ? 1 : ne > n ? n : ne;
			for (int x = 0; x < n; x++)
				src[x] = x, dst[x] = x;
			for (int x = 0; x < ne; x++) { /* partial Fisher-Yates: ne distinct rows and slots */
				int j = x + (int)(ftbw_rng_next(&seed) % (uint64_t)(n - x)), t = src[x];
				src[x] = src[j];
				src[j] = t;
				j = x + (int)(ftbw_rng_next(&seed) % (uint64_t)(n - x));
				t = dst[x];
				dst[x] = dst[j];
				dst[j] = t;
			}
			what = "gather";
			if ((rc = ftgather_set_plan(g, 0, src, dst, ne)) < 0 ||
			    (rc = ftgather_time(g, FTGATHER_AUTO, 1, SWEEP_GATHER_PASSES, gs)) < 0)
				goto out;
			for (int s = 0; s < SWEEP_GATHER_PASSES; s++)
				bb->gather.gbs[bb->gather.n++] = gs[s] > 0 ? (double)ne * (double)ftgather_expert_bytes(g) / gs[s] / 1e9 : 0.0;
		}
	for (int i = 0; i < nb; i++)
		m->bsw[i].cpu.rc = m->bsw[i].gather.rc = 0;
out:
	if (rc < 0)
		for (int i = 0; i < nb; i++) {
			m->bsw[i].cpu.rc = m->bsw[i].gather.rc = rc;
			snprintf(m->bsw[i].cpu.err, sizeof m->bsw[i].cpu.err, "batch sweep: %s: %s", what, ftbw_errstr(rc));
			snprintf(m->bsw[i].gather.err, sizeof m->bsw[i].gather.err, "batch sweep: %s: %s", what, ftbw_errstr(rc));
		}
	ftmoebench_free(b);
	free(src);
	free(dst);
}

static int op_measure(void *ctx, const struct ftbw_env *env, const struct ftbw_config *c,
		      const struct ftbw_item *it, struct ftbw_meas *m, char *err, size_t errlen)
{
	struct ftbw_real *r = ctx;
	struct ftgather *g = NULL;
	struct ftmoebench *b = NULL;
	enum ftcpumoe_isa used = FTCPUMOE_ISA_AUTO;
	int rc = 0;

	if (env->gpu && (rc = ftbw_select_gpu(env->gpu, err, errlen)) < 0)
		return rc;
	/* With both halves, the gather is set up, warmed up and checked here and timed in pairs with
	 * the CPU MoE steps (cpu_alone); the GPU-only and CPU-only cases run as before. */
	bool both = env->gpu && it->synth_experts > 0 && it->fmt->cpu_path;
	int chunk0 = both ? 0 : c->kernel_pcie_iters;
	if (env->gpu && it->synth_experts > 0) {
		rc = gather_alone(r, c, it, mem_node_of(env), chunk0, &g, &m->gather);
		if (rc == -EIO) { /* a CUDA error is sticky: nothing after it could be trusted */
			snprintf(err, errlen, "%s: %s", it->label, m->gather.err);
			goto out;
		}
	}
	if (it->fmt->cpu_path)
		cpu_alone(r, env, c, it, m->gather.rc == 0 ? g : NULL, &b, &used, m);
	if (g && m->gather.rc == 0 && m->gather.n < c->kernel_pcie_iters) /* the CPU half failed early */
		gather_more(g, c, it->synth_experts, &m->gather, c->kernel_pcie_iters - m->gather.n);
	if (g && b && c->overlap_s > 0) {
		rc = overlap(r, c, g, b, used, m);
		if (rc == -EIO && m->ov_gather.err[0]) {
			snprintf(err, errlen, "%s: overlap: %s", it->label, m->ov_gather.err);
			goto out;
		}
	}
	if (g && b && c->nbatch > 0) {
		ftmoebench_free(b); /* its banks and pool make way for the sweep's */
		b = NULL;
		batch_sweep(r, c, it, g, used, m);
	}
	rc = 0;
out:
	ftmoebench_free(b);
	ftgather_free(g);
	sched_setaffinity(0, sizeof r->wide, &r->wide);
	return rc;
}

struct ftbw_ops ftbw_real_ops(struct ftbw_real *r)
{
	return (struct ftbw_ops){.cpu_read = op_cpu_read, .pcie_linear = op_pcie, .measure = op_measure, .ctx = r,
				 .engine_open = ftbw_real_engine_open, .engine_phase = ftbw_real_engine_phase,
				 .engine_close = ftbw_real_engine_close};
}
