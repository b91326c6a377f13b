/* bw_host: the host run over several GPUs (ftbw_run_host): the isolated run per GPU, the
 * concurrent phase of N engines, the concurrent blocks, the deployment and the topology. The
 * measurements are the ops' (bw_ops.c on the GPUs, fakes in tests): this file is the same code
 * on both. */
#include "bench/bw.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "hw/topo.h"
#include "util/stats.h"

/* ---------------------------------------------------------------- core split */

int ftbw_engine_plan(const struct ftcpu_info *ci, const struct ftgpu_info *gpus, int ngpus, int n,
		     int per_engine, struct ftbw_engine *e, int *cpu_store, char *err, size_t errlen)
{
	int P = ci->physical_cores;
	if (n < 1 || n > FTBW_MAX_ENGINES) {
		snprintf(err, errlen, "%d engines: give 1 to %d", n, FTBW_MAX_ENGINES);
		return -EINVAL;
	}
	if (ngpus > 0 && n < ngpus) {
		snprintf(err, errlen, "%d engines for %d GPUs: at least one engine per GPU", n, ngpus);
		return -EINVAL;
	}
	int k = per_engine > 0 ? per_engine : P / n;
	if (k < 1) {
		snprintf(err, errlen, "%d engines on %d physical cores: fewer than one core each", n, P);
		return -EINVAL;
	}
	if ((long)k * n > P) {
		snprintf(err, errlen, "%d engines of %d cores need %d physical cores; this host has %d", n, k,
			 k * n, P);
		return -EINVAL;
	}
	char *used = calloc((size_t)P, 1);
	if (!used) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (int i = 0; i < n; i++) {
		int g = ngpus > 0 ? i % ngpus : -1;
		int node = g >= 0 ? gpus[g].numa_node : -1, got = 0;
		int *set = cpu_store + (size_t)i * (size_t)k;
		for (int pass = 0; pass < 2; pass++)
			for (int c = 0; c < P && got < k; c++) {
				int near = node >= 0 && ci->core_node[c] == node;
				if (used[c] || (pass == 0) != near)
					continue;
				used[c] = 1;
				set[got++] = ci->core_cpu[c];
			}
		e[i] = (struct ftbw_engine){.index = i, .count = n, .gpu = g, .gpu_info = g >= 0 ? &gpus[g] : NULL,
					    .cpu = ci, .cpus = set, .ncpus = got, .node = node,
					    .mem_node = ci->numa_nodes > 1 && node >= 0 ? node : -1};
	}
	free(used);
	return 0;
}

void ftbw_hold_init(struct ftbw_hold *h, int engines)
{
	atomic_store(&h->pending, engines);
	atomic_store(&h->released, engines <= 0);
	for (int i = 0; i < FTBW_MAX_ENGINES; i++)
		atomic_store(&h->arrived[i], 0);
}

void ftbw_hold_arrive(struct ftbw_hold *h, int engine)
{
	if (engine < 0 || engine >= FTBW_MAX_ENGINES || atomic_exchange(&h->arrived[engine], 1))
		return;
	if (atomic_fetch_sub(&h->pending, 1) == 1)
		atomic_store(&h->released, 1);
}

/* ---------------------------------------------------------------- deployment */

static json_t *entry_of(json_t *p, const char *model, const char *fmt)
{
	if (!model)
		return json_object_get(json_object_get(p, "dtype_kernels"), fmt);
	return json_object_get(json_object_get(json_object_get(json_object_get(p, "workloads"), model), "kernels"),
			       fmt);
}

/* The verdict an entry has for deployment d (borrowed string), or NULL. */
static const char *entry_verdict(json_t *e, int d)
{
	const char *v = d == FTBW_DEPLOY_CONCURRENT
				? json_string_value(json_object_get(json_object_get(e, "concurrent"), "recommended"))
				: json_string_value(json_object_get(e, "recommended_isolated"));
	return v && (!strcmp(v, "hybrid") || !strcmp(v, "offload")) ? v : NULL;
}

static void set_verdict(json_t *e, json_t *recmap, const char *fmt, int d, int *missing)
{
	if (!json_is_object(e))
		return;
	if (!json_object_get(e, "recommended_isolated") && json_is_string(json_object_get(e, "recommended")))
		json_object_set(e, "recommended_isolated", json_object_get(e, "recommended"));
	const char *v = entry_verdict(e, d);
	if (!v) {
		(*missing)++;
		return;
	}
	json_object_set_new(e, "recommended", json_string(v));
	if (recmap)
		json_object_set_new(recmap, fmt, json_string(v));
}

int ftbw_apply_deployment(json_t *p, int d, int *missing)
{
	int miss = 0;
	const char *k, *mk;
	json_t *e, *w;
	if (!json_is_object(p) || (d != FTBW_DEPLOY_ISOLATED && d != FTBW_DEPLOY_CONCURRENT))
		return -EINVAL;
	json_t *dtypes = json_object_get(p, "dtypes");
	json_object_foreach(json_object_get(p, "dtype_kernels"), k, e)
		set_verdict(e, json_is_object(dtypes) ? dtypes : NULL, k, d, &miss);
	json_object_foreach(json_object_get(p, "workloads"), mk, w) {
		json_t *rm = json_object_get(w, "recommended_moe_backend");
		json_object_foreach(json_object_get(w, "kernels"), k, e)
			set_verdict(e, json_is_object(rm) ? rm : NULL, k, d, &miss);
	}
	json_object_set_new(p, "deployment", json_string(ftbw_deployment_name(d)));
	if (missing)
		*missing = miss;
	return 0;
}

/* ---------------------------------------------------------------- progress */

/* The isolated runs' progress (0..nitems+1 each) mapped into the host run's steps. */
struct prog {
	const struct ftreport *rep;
	int offset, total, gpu;
};

static void prog_progress(void *ctx, int done, int total, const char *label)
{
	struct prog *p = ctx;
	char l[128];
	if (!strcmp(label, "done"))
		return;
	snprintf(l, sizeof l, "gpu%d %s", p->gpu, label);
	ftreport_progress(p->rep, p->offset + done, p->total, l);
}

static void prog_note(void *ctx, const char *msg)
{
	struct prog *p = ctx;
	char l[640];
	snprintf(l, sizeof l, "GPU %d: %s", p->gpu, msg);
	ftreport_note(p->rep, l);
}

static void warnf(json_t **warnings, int nw, const struct ftreport *rep, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void warnf(json_t **warnings, int nw, const struct ftreport *rep, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	for (int i = 0; i < nw; i++)
		if (json_is_array(warnings[i]))
			json_array_append_new(warnings[i], json_string(msg));
	ftreport_note(rep, msg);
}

/* ---------------------------------------------------------------- the concurrent phase */

/* Threads start only once all of them exist (state 1), or leave at once (-1): a barrier of n
 * must never wait for a thread that could not be created. */
struct gate {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int state;
};

static void gate_set(struct gate *g, int state)
{
	pthread_mutex_lock(&g->mu);
	g->state = state;
	pthread_cond_broadcast(&g->cv);
	pthread_mutex_unlock(&g->mu);
}

static int gate_wait(struct gate *g)
{
	pthread_mutex_lock(&g->mu);
	while (g->state == 0)
		pthread_cond_wait(&g->cv, &g->mu);
	int s = g->state;
	pthread_mutex_unlock(&g->mu);
	return s;
}

struct eng_thread {
	pthread_t th;
	const struct ftbw_ops *ops;
	const struct ftbw_engine *e;
	const struct ftbw_config *c;
	const struct ftbw_item *it;
	struct ftbw_meas *m;
	pthread_barrier_t *bar;
	struct gate *gate;
	struct ftbw_hold *holds;       /* [FTBW_PHASES] */
	const bool *run_phase;         /* [FTBW_PHASES] */
	int rc;
	char err[512];
};

static void *eng_main(void *arg)
{
	struct eng_thread *t = arg;
	void *h = NULL;
	if (gate_wait(t->gate) < 0)
		return NULL;
	int ok = t->ops->engine_open(t->ops->ctx, t->e, t->c, t->it, &h, t->err, sizeof t->err);
	if (ok < 0)
		t->rc = ok;
	for (int ph = 0; ph < FTBW_PHASES; ph++) {
		if (!t->run_phase[ph])
			continue;
		pthread_barrier_wait(t->bar); /* every engine starts the phase at once */
		if (t->rc == 0) {
			int r = t->ops->engine_phase(h, (enum ftbw_phase)ph, t->c, t->m, &t->holds[ph], t->err,
						     sizeof t->err);
			if (r < 0)
				t->rc = r;
		}
		ftbw_hold_arrive(&t->holds[ph], t->e->index); /* an engine that failed holds nobody */
	}
	t->ops->engine_close(h);
	return NULL;
}

/* Run one item on every engine at once; m[n] get each engine's measurements. */
static int concurrent_item(const struct ftbw_config *c, const struct ftbw_ops *ops, const struct ftbw_item *it,
			   const struct ftbw_engine *e, int n, bool have_gpu, struct ftbw_meas *m, char *err,
			   size_t errlen)
{
	struct eng_thread *t = calloc((size_t)n, sizeof *t);
	struct ftbw_hold *holds = calloc(FTBW_PHASES, sizeof *holds);
	pthread_barrier_t bar;
	struct gate gate = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
	int r = 0, started = 0;
	bool gather = have_gpu && it->synth_experts > 0, cpu = it->fmt->cpu_path;
	bool run_phase[FTBW_PHASES] = {gather, cpu, gather && cpu && c->overlap_s > 0};
	if (!t || !holds) {
		free(t);
		free(holds);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (int ph = 0; ph < FTBW_PHASES; ph++)
		ftbw_hold_init(&holds[ph], n);
	if ((r = pthread_barrier_init(&bar, NULL, (unsigned)n)) != 0) {
		free(t);
		free(holds);
		snprintf(err, errlen, "barrier: %s", strerror(r));
		return -r;
	}
	for (int i = 0; i < n; i++) {
		t[i] = (struct eng_thread){.ops = ops, .e = &e[i], .c = c, .it = it, .m = &m[i], .bar = &bar,
					   .gate = &gate, .holds = holds, .run_phase = run_phase};
		if ((r = pthread_create(&t[i].th, NULL, eng_main, &t[i])) != 0)
			break;
		started++;
	}
	gate_set(&gate, started < n ? -1 : 1);
	if (started < n)
		snprintf(err, errlen, "%s: engine thread %d of %d: %s", it->label, started, n, strerror(r));
	r = started < n ? -r : 0;
	for (int i = 0; i < started; i++) {
		pthread_join(t[i].th, NULL);
		if (t[i].rc < 0 && r == 0) {
			r = t[i].rc;
			snprintf(err, errlen, "%s: engine %d: %s", it->label, i, t[i].err);
		}
	}
	pthread_barrier_destroy(&bar);
	pthread_mutex_destroy(&gate.mu);
	pthread_cond_destroy(&gate.cv);
	free(t);
	free(holds);
	return r;
}

/* Append src's samples (when usable) to dst; a failure is kept when nothing ran. */
static void part_add(struct ftbw_part *dst, const struct ftbw_part *src)
{
	if (src->rc != 0 || src->n <= 0) {
		if (dst->rc == FTBW_NOT_RUN && src->rc < 0) {
			dst->rc = src->rc;
			snprintf(dst->err, sizeof dst->err, "%s", src->err);
		}
		return;
	}
	if (dst->rc != 0 && dst->rc != FTBW_NOT_RUN)
		return; /* an engine of this GPU failed: the GPU's figure is failed */
	double *v = realloc(dst->gbs, (size_t)(dst->n + src->n) * sizeof *v);
	if (!v) {
		dst->rc = -ENOMEM;
		snprintf(dst->err, sizeof dst->err, "out of memory");
		return;
	}
	memcpy(v + dst->n, src->gbs, (size_t)src->n * sizeof *v);
	dst->gbs = v;
	dst->n += src->n;
	dst->rc = 0;
}

static void part_fail(struct ftbw_part *dst, const struct ftbw_part *src)
{
	if (src->rc < 0) {
		free(dst->gbs);
		dst->gbs = NULL;
		dst->n = 0;
		dst->rc = src->rc;
		snprintf(dst->err, sizeof dst->err, "%s", src->err);
	}
}

/* The concurrent block of GPU g for one item: its engines' samples together. New reference. */
static json_t *concurrent_block(const struct ftbw_item *it, const struct ftbw_meas *m, const struct ftbw_engine *e,
				int n, int g, double threshold)
{
	struct ftbw_meas all;
	int mine = 0, threads = 0;
	ftbw_meas_init(&all);
	for (int i = 0; i < n; i++) {
		if (e[i].gpu != g)
			continue;
		mine++;
		threads += e[i].ncpus;
		part_add(&all.gather, &m[i].gather);
		part_add(&all.cpu, &m[i].cpu);
		part_add(&all.ov_cpu, &m[i].ov_cpu);
		part_add(&all.ov_gather, &m[i].ov_gather);
		if (!all.cpu_isa[0])
			snprintf(all.cpu_isa, sizeof all.cpu_isa, "%s", m[i].cpu_isa);
	}
	for (int i = 0; i < n; i++) /* any engine's failure fails the GPU's figure */
		if (e[i].gpu == g) {
			part_fail(&all.gather, &m[i].gather);
			part_fail(&all.cpu, &m[i].cpu);
			part_fail(&all.ov_cpu, &m[i].ov_cpu);
			part_fail(&all.ov_gather, &m[i].ov_gather);
		}
	json_t *b = ftbw_entry_json(it, &all, true, threshold);
	ftbw_meas_release(&all);
	if (!b)
		return NULL;
	static const char *const drop[] = {"expert_bytes", "synth_experts", "isa_sweep", "cpu_read_adjacent_gbs",
					   "cpu_read_adjacent_gbs_spread", "recommended_isolated", "batch_sweep",
					   "hybrid_max_batch"};
	for (size_t i = 0; i < sizeof drop / sizeof drop[0]; i++)
		json_object_del(b, drop[i]);
	double f = ftbw_fetch_fraction(json_number_value(json_object_get(b, "cpu_moe_gbs")),
				       json_number_value(json_object_get(b, "pcie_gather_gbs")),
				       json_number_value(json_object_get(b, "cpu_moe_overlap_gbs")),
				       json_number_value(json_object_get(b, "pcie_gather_overlap_gbs")));
	json_object_set_new(b, "fetch_fraction", isfinite(f) && f > 0 ? json_real(f) : json_null());
	json_object_set_new(b, "engines", json_integer(n));
	json_object_set_new(b, "engines_on_gpu", json_integer(mine));
	json_object_set_new(b, "threads", json_integer(threads));
	return b;
}

/* ---------------------------------------------------------------- the host run */

static json_t *int_array(const int *v, int n)
{
	json_t *a = json_array();
	for (int i = 0; i < n; i++)
		json_array_append_new(a, json_integer(v[i]));
	return a;
}

int ftbw_run_host(const struct ftbw_config *c, struct ftbw_host *h, const struct ftbw_ops *ops,
		  const struct ftreport *rep, json_t **out, char *err, size_t errlen)
{
	struct ftbw_item *items = NULL;
	struct ftbw_engine *eng = NULL;
	struct ftbw_meas *m = NULL;
	int *store = NULL, r = 0, nitems = 0, ng = h->ngpus;
	json_t *warn[FTBW_MAX_GPUS];
	char skipped[512];

	err[0] = '\0';
	if (ng < 1 || ng > FTBW_MAX_GPUS) {
		snprintf(err, errlen, "%d GPUs: a host run needs 1 to %d", ng, FTBW_MAX_GPUS);
		return -EINVAL;
	}
	for (int g = 0; g < ng; g++)
		out[g] = NULL;
	int n = c->engines > 0 ? c->engines : ng;
	bool concurrent = n > 1;
	/* default: concurrent when engines run at once (one per GPU: a host of several GPUs) */
	int dep = c->deployment >= 0 ? c->deployment : concurrent ? FTBW_DEPLOY_CONCURRENT : FTBW_DEPLOY_ISOLATED;
	if (concurrent && (!ops->engine_open || !ops->engine_phase || !ops->engine_close)) {
		snprintf(err, errlen, "these measurements cannot run engines at once");
		return -ENOTSUP;
	}
	items = calloc(FTBW_MAX_ITEMS, sizeof *items);
	store = calloc((size_t)h->cpu->physical_cores + 1, sizeof *store);
	eng = calloc((size_t)n, sizeof *eng);
	if (!items || !store || !eng) {
		r = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	nitems = ftbw_plan(c, items, FTBW_MAX_ITEMS, skipped, sizeof skipped);
	if (nitems < 0) {
		r = nitems;
		snprintf(err, errlen, "too many workloads (at most %d)", FTBW_MAX_ITEMS);
		goto out;
	}
	if ((concurrent || c->engines > 0) &&
	    (r = ftbw_engine_plan(h->cpu, h->gpus, ng, n, c->engine_threads, eng, store, err, errlen)) < 0)
		goto out;
	int total = ng * (nitems + 1) + (concurrent ? nitems : 0) + 1;

	/* Each GPU alone: the seed's figures. */
	for (int g = 0; g < ng; g++) {
		struct prog pc = {rep, g * (nitems + 1), total, h->gpus[g].index};
		struct ftreport sub = {prog_progress, prog_note, &pc};
		r = ftbw_run(c, &h->envs[g], ops, &sub, &out[g], err, errlen);
		if (r < 0) {
			char e2[512];
			snprintf(e2, sizeof e2, "GPU %d: %s", h->gpus[g].index, err);
			snprintf(err, errlen, "%s", e2);
			goto out;
		}
	}
	for (int g = 0; g < ng; g++)
		warn[g] = json_object_get(out[g], "warnings");

	/* Every engine at once. */
	if (concurrent) {
		m = calloc((size_t)n, sizeof *m);
		if (!m) {
			r = -ENOMEM;
			snprintf(err, errlen, "out of memory");
			goto out;
		}
		for (int i = 0; i < nitems; i++) {
			char label[128];
			snprintf(label, sizeof label, "concurrent %s", items[i].label);
			ftreport_progress(rep, ng * (nitems + 1) + i, total, label);
			for (int k = 0; k < n; k++)
				ftbw_meas_init(&m[k]);
			r = concurrent_item(c, ops, &items[i], eng, n, true, m, err, errlen);
			for (int g = 0; g < ng && r == 0; g++) {
				json_t *e = entry_of(out[g], items[i].is_dtype ? NULL : items[i].model->name,
						     items[i].fmt->name);
				json_t *b = concurrent_block(&items[i], m, eng, n, g, c->threshold);
				if (!b) {
					r = -ENOMEM;
					snprintf(err, errlen, "out of memory");
					break;
				}
				const char *note = json_string_value(json_object_get(b, "note"));
				if (note && items[i].fmt->cpu_path)
					warnf(&warn[g], 1, rep, "%s: concurrent: %s", items[i].label, note);
				json_object_set_new(e, "concurrent", b);
			}
			for (int k = 0; k < n; k++)
				ftbw_meas_release(&m[k]);
			if (r < 0)
				goto out;
		}
	}

	/* Deployment, the engines and the topology in every GPU's profile. */
	for (int g = 0; g < ng; g++) {
		json_t *p = out[g], *mine = json_array(), *used = json_array();
		for (int i = 0; concurrent && i < n; i++) {
			if (eng[i].gpu != g)
				continue;
			json_array_append_new(mine, json_pack("{s:i,s:o,s:i,s:i}", "index", i, "cpu_ids",
							      int_array(eng[i].cpus, eng[i].ncpus), "numa_node",
							      eng[i].node, "mem_node", eng[i].mem_node));
			for (int k = 0; k < eng[i].ncpus; k++)
				json_array_append_new(used, json_integer(eng[i].cpus[k]));
		}
		json_t *gl = json_array();
		for (int k = 0; k < ng; k++)
			json_array_append_new(gl, json_string(h->gpus[k].uuid));
		json_object_set_new(p, "concurrent",
				    concurrent ? json_pack("{s:i,s:i,s:O,s:O}", "engines", n, "cores_per_engine",
							   eng[0].ncpus, "gpus", gl, "engines_of_gpu", mine)
					       : json_null());
		json_t *topo = fttopo_gpu_json(h->sysroot, h->gpus, ng, g);
		json_object_set_new(topo, "cpu_ids_isolated", int_array(h->envs[g].cpus, h->envs[g].ncpus));
		json_object_set_new(topo, "cpu_ids_concurrent", concurrent ? json_incref(used) : json_null());
		json_decref(gl);
		json_decref(mine);
		json_decref(used);
		json_object_set_new(p, "topology", topo);
		int d = dep, missing = 0;
		if (d == FTBW_DEPLOY_CONCURRENT && !concurrent) {
			warnf(&warn[g], 1, rep,
			      "deployment concurrent asked, but this run measured one engine only: the verdicts are the isolated ones");
			d = FTBW_DEPLOY_ISOLATED;
		}
		ftbw_apply_deployment(p, d, &missing);
		if (missing)
			warnf(&warn[g], 1, rep, "deployment %s: %d entries lack its figures and keep their verdict",
			      ftbw_deployment_name(d), missing);
	}
	ftreport_progress(rep, total, total, "done");
	r = 0;
out:
	if (r < 0)
		for (int g = 0; g < ng; g++) {
			json_decref(out[g]);
			out[g] = NULL;
		}
	free(m);
	free(items);
	free(eng);
	free(store);
	return r;
}
