/* bw_run: one run of `ftbench bw` (ftbw_run): the plan, the ceilings (CPU read, PCIe linear, the
 * link watched meanwhile), each item measured (again while its spread is too wide), the trust
 * checks, and the profile assembled and checked. The measurements are struct ftbw_ops'. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bw.h"
#include "ftprofile.h"
#include "util/stats.h"
#include "util/timeutil.h"

#ifndef FT_VERSION
#define FT_VERSION "0.0.0"
#endif

/* ---------------------------------------------------------------- link watch */

/* Idle GPUs train their link down to save power, so the link is sampled while the linear
 * copies run and the best state seen is the one the profile records. */
struct link_watch {
	pthread_t th;
	struct ftgpu_info g;
	int best_gen, best_width, samples;
	volatile int stop;
};

static void *link_watch_main(void *arg)
{
	struct link_watch *w = arg;
	while (!w->stop) {
		struct ftgpu_info g = w->g;
		ftgpu_read_link(&g);
		if (g.link_gen_cur > w->best_gen)
			w->best_gen = g.link_gen_cur;
		if (g.link_width_cur > w->best_width)
			w->best_width = g.link_width_cur;
		w->samples++;
		struct timespec ts = {0, 2 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	return NULL;
}

/* ---------------------------------------------------------------- run */

double ftbw_read_ceiling(const double *v, const int *len, int nphases, struct ftstat *all, int *counted)
{
	int n = 0, k = 0;
	double best = NAN;
	for (int p = 0; p < nphases; p++) {
		if (len[p] > 0 && (p == 0 || len[p] >= FTBW_READ_PHASE_MIN)) {
			double med = ftstat_of(v + n, len[p]).median;
			k++;
			if (!(med <= best)) /* also replaces NaN */
				best = med;
		}
		n += len[p];
	}
	if (all)
		*all = ftstat_of(v, n);
	if (counted)
		*counted = k;
	return n > 0 ? best : NAN;
}

/* The read passes of a run, in phases (ftbw_read_ceiling). */
struct read_log {
	double *v;
	int n, cap;
	int *len;
	int nphases;
};

static int read_log_add(struct read_log *l, const struct ftbw_part *a, const struct ftbw_part *b)
{
	int add = (a && a->rc == 0 ? a->n : 0) + (b && b->rc == 0 ? b->n : 0);
	if (l->n + add > l->cap) {
		int cap = 2 * (l->n + add) + 16;
		double *v = realloc(l->v, (size_t)cap * sizeof *v);
		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	if (a && a->rc == 0)
		for (int i = 0; i < a->n; i++)
			l->v[l->n++] = a->gbs[i];
	if (b && b->rc == 0)
		for (int i = 0; i < b->n; i++)
			l->v[l->n++] = b->gbs[i];
	l->len[l->nphases++] = add;
	return 0;
}

static json_t *ceiling_figure(json_t *ceil, const char *key, const double *v, int n)
{
	char sk[96];
	snprintf(sk, sizeof sk, "%s_spread", key);
	if (v && n > 0) {
		struct ftstat s = ftstat_of(v, n);
		json_object_set_new(ceil, key, json_real(s.median));
		json_object_set_new(ceil, sk, ftstat_json(&s));
	} else {
		json_object_set_new(ceil, key, json_null());
		json_object_set_new(ceil, sk, json_null());
	}
	return ceil;
}

static int check_samples(const double *v, int n, const char *what, char *err, size_t errlen)
{
	for (int i = 0; i < n; i++)
		if (!ftbw_measured(v[i])) {
			snprintf(err, errlen, "%s: sample %d is not a positive rate (%g)", what, i, v[i]);
			return -EIO;
		}
	return 0;
}

static void warnf(json_t *warnings, const struct ftreport *rep, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void warnf(json_t *warnings, const struct ftreport *rep, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	json_array_append_new(warnings, json_string(msg));
	ftreport_note(rep, msg);
}

/* The spread rule of ftbw_check_valid on one phase's samples: 1 when (max - min) / median is
 * over max (max <= 0: never), with what says how much. */
static int samples_too_wide(const char *name, const double *v, int n, double max, char *what, size_t wn)
{
	if (!(max > 0) || n < 2)
		return 0;
	struct ftstat st = ftstat_of(v, n);
	if (!(st.median > 0) || (st.max - st.min) / st.median <= max)
		return 0;
	snprintf(what, wn, "%s spread %.1f-%.1f GB/s is %.0f%% of its median %.1f (over %.0f%%)", name, st.min,
		 st.max, (st.max - st.min) / st.median * 100, st.median, max * 100);
	return 1;
}

/* After try t (0 = the first) of phase name: 1 to measure it again (too wide a spread, tries
 * left; said in the warnings and progress notes), else 0, recording in remeasured a phase that
 * was measured more than once. */
static int measure_again(const struct ftbw_config *c, json_t *warnings, json_t *remeasured,
			 const struct ftreport *rep, const char *name, int t, int too_wide, const char *what)
{
	if (too_wide && t < FTBW_REMEASURE && !c->no_checks) {
		warnf(warnings, rep, "%s: measuring it again (try %d of %d)", what, t + 2, FTBW_REMEASURE + 1);
		return 1;
	}
	if (t > 0)
		json_array_append_new(remeasured, json_pack("{s:s,s:i,s:b}", "phase", name, "tries", t + 1, "passed",
							    !too_wide));
	return 0;
}

/* The spread checks of one workload's entry alone (ftbw_check_valid's, without the ceiling); what:
 * the first reason, without its advice to measure again. */
static int entry_too_wide(const json_t *e, const char *name, double max, char *what, size_t wn)
{
	static const char advice[] = ": the host was not quiet, measure again";
	json_t *why = json_array();
	ftbw_entry_reasons(why, e, name, 0, max);
	int bad = json_array_size(why) > 0;
	if (bad) {
		const char *r = json_string_value(json_array_get(why, 0));
		size_t l = strlen(r), al = sizeof advice - 1;
		snprintf(what, wn, "%.*s", (int)(l > al && !strcmp(r + l - al, advice) ? l - al : l), r);
	}
	json_decref(why);
	return bad;
}

static json_t *model_json(const struct ftmodel *m)
{
	return json_pack("{s:s,s:I,s:I,s:i,s:i,s:s}", "name", m->name, "hidden", (json_int_t)m->hidden,
			 "inter", (json_int_t)m->inter, "experts", m->experts, "top_k", m->topk,
			 "activation", ftfmt_act_name(m->act));
}

/* Measure item it, again while its spread fails the checks (measure_again): 0 with m filled
 * (the last try) and *e its entry (NULL without memory), or the measurement's -errno (m to
 * release). */
static int measure_item(const struct ftbw_config *c, struct ftbw_env *env, const struct ftbw_ops *ops,
			const struct ftreport *rep, const struct ftbw_item *it, json_t *warnings, json_t *remeasured,
			struct ftbw_meas *m, json_t **e, char *err, size_t errlen)
{
	char what[512];
	for (int t = 0;; t++) {
		ftbw_meas_init(m);
		int r = ops->measure(ops->ctx, env, c, it, m, err, errlen);
		if (r < 0)
			return r;
		ftbw_meas_normalize(m);
		*e = ftbw_entry_json(it, m, env->gpu != NULL, c->threshold);
		if (!*e || !measure_again(c, warnings, remeasured, rep, it->label, t,
					  entry_too_wide(*e, it->label, c->max_spread, what, sizeof what), what))
			return 0;
		json_decref(*e);
		ftbw_meas_release(m);
	}
}

/* One run: its settings, what it measured so far and what it will say. */
struct run {
	const struct ftbw_config *c;
	struct ftbw_env *env;
	const struct ftbw_ops *ops;
	const struct ftreport *rep;
	bool have_gpu;
	struct ftbw_item *items;
	int nitems, total;     /* total: the progress steps (the ceilings, then one per item) */
	double *cpu_read, *h2d, *d2h;
	struct read_log rl;
	json_t *warnings, *entries, *remeasured;
	char *err;
	size_t errlen;
};

static int oom(struct run *u)
{
	snprintf(u->err, u->errlen, "out of memory");
	return -ENOMEM;
}

/* The items to measure, and the warnings about what will not be (skipped formats, no GPU). */
static int plan_items(struct run *u)
{
	char skipped[512];
	u->items = calloc(FTBW_MAX_ITEMS, sizeof *u->items);
	if (!u->items)
		return oom(u);
	u->nitems = ftbw_plan(u->c, u->items, FTBW_MAX_ITEMS, skipped, sizeof skipped);
	if (u->nitems < 0) {
		snprintf(u->err, u->errlen, "too many workloads (at most %d)", FTBW_MAX_ITEMS);
		return u->nitems;
	}
	if (skipped[0])
		warnf(u->warnings, u->rep, "skipped (geometry does not fit the format's blocks): %s", skipped);
	if (!u->have_gpu)
		warnf(u->warnings, u->rep, "no GPU (%s): CPU half only, no format has a verdict (unmeasured)",
		      u->env->no_gpu_why && *u->env->no_gpu_why ? u->env->no_gpu_why : "none found");
	u->total = u->nitems + 1;
	u->rl.len = calloc((size_t)u->nitems + 1, sizeof *u->rl.len);
	return u->rl.len ? 0 : oom(u);
}

/* The PCIe linear copies, each direction again while its spread is too wide; the link is watched
 * meanwhile and its best state kept in env->gpu. */
static int pcie_ceilings(struct run *u)
{
	const struct ftbw_config *c = u->c;
	char what[512];
	int r = 0;
	u->h2d = calloc((size_t)c->pcie_iters, sizeof *u->h2d);
	u->d2h = calloc((size_t)c->pcie_iters, sizeof *u->d2h);
	if (!u->h2d || !u->d2h)
		return oom(u);
	struct link_watch w = {.g = *u->env->gpu};
	bool watching = u->env->gpu->pci_bus_id[0] && pthread_create(&w.th, NULL, link_watch_main, &w) == 0;
	size_t bytes = (size_t)c->pcie_mib << 20;
	for (int dir = 0; dir < 2 && r == 0; dir++) {
		double *v = dir ? u->d2h : u->h2d;
		const char *name = dir ? "PCIe device-to-host" : "PCIe host-to-device";
		for (int t = 0;; t++) {
			r = u->ops->pcie_linear(u->ops->ctx, u->env, !dir, bytes, c->pcie_iters, v, u->err, u->errlen);
			if (r == 0)
				r = check_samples(v, c->pcie_iters, dir ? "PCIe D2H ceiling" : "PCIe H2D ceiling", u->err,
						  u->errlen);
			if (r < 0 || !measure_again(c, u->warnings, u->remeasured, u->rep, name, t,
						    samples_too_wide(name, v, c->pcie_iters, c->max_spread, what, sizeof what),
						    what))
				break;
		}
	}
	if (watching) {
		w.stop = 1;
		pthread_join(w.th, NULL);
		if (w.best_gen > 0)
			u->env->gpu->link_gen_cur = w.best_gen;
		if (w.best_width > 0)
			u->env->gpu->link_width_cur = w.best_width;
	}
	return r;
}

/* The ceilings: the CPU read passes (the first phase of the read log), then the PCIe copies. */
static int ceilings(struct run *u)
{
	const struct ftbw_config *c = u->c;
	char what[512];
	int r;
	ftreport_progress(u->rep, 0, u->total, "ceilings");
	u->cpu_read = calloc((size_t)c->cpu_iters, sizeof *u->cpu_read);
	if (!u->cpu_read)
		return oom(u);
	for (int t = 0;; t++) {
		r = u->ops->cpu_read(u->ops->ctx, u->env, c->cpu_iters, u->cpu_read, u->err, u->errlen);
		if (r == 0)
			r = check_samples(u->cpu_read, c->cpu_iters, "CPU read ceiling", u->err, u->errlen);
		if (r < 0 || !measure_again(c, u->warnings, u->remeasured, u->rep, "CPU read ceiling", t,
					    samples_too_wide("CPU read ceiling", u->cpu_read, c->cpu_iters, c->max_spread,
							     what, sizeof what),
					    what))
			break;
	}
	if (r == 0)
		r = read_log_add(&u->rl, &(struct ftbw_part){.gbs = u->cpu_read, .n = c->cpu_iters}, NULL);
	if (r < 0 || !u->have_gpu)
		return r;
	return pcie_ceilings(u);
}

/* The real kernels of each item: its entry into u->entries, its failures into the warnings, its
 * read passes into the read log. */
static int measure_items(struct run *u)
{
	for (int i = 0; i < u->nitems; i++) {
		const struct ftbw_item *it = &u->items[i];
		ftreport_progress(u->rep, i + 1, u->total, it->label);
		struct ftbw_meas m;
		json_t *e = NULL;
		int r = measure_item(u->c, u->env, u->ops, u->rep, it, u->warnings, u->remeasured, &m, &e, u->err, u->errlen);
		if (r < 0) {
			ftbw_meas_release(&m);
			return r;
		}
		if (m.gather.rc < 0)
			warnf(u->warnings, u->rep, "%s: PCIe gather failed: %s", it->label, m.gather.err);
		if (m.cpu.rc < 0)
			warnf(u->warnings, u->rep, "%s: CPU MoE failed: %s", it->label, m.cpu.err);
		if ((m.ov_cpu.rc < 0 || m.ov_gather.rc < 0) && m.gather.rc == 0 && m.cpu.rc == 0)
			warnf(u->warnings, u->rep, "%s: overlap failed: %s", it->label,
			      m.ov_cpu.rc < 0 ? m.ov_cpu.err : m.ov_gather.err);
		if (m.read_cpu.rc < 0 || m.read_other.rc < 0)
			warnf(u->warnings, u->rep, "%s: CPU read passes left out: %s", it->label,
			      m.read_cpu.rc < 0 ? m.read_cpu.err : m.read_other.err);
		int lr = read_log_add(&u->rl, &m.read_cpu, &m.read_other);
		ftbw_meas_release(&m);
		if (!e || lr < 0) {
			json_decref(e);
			return oom(u);
		}
		json_array_append_new(u->entries, e);
	}
	return 0;
}

/* Trust checks, as warnings: no kernel reads faster than memory, no gather beats the linear copy,
 * the link trained as the card can. */
static void trust_warnings(struct run *u, double ceil_cpu)
{
	double ceil_h2d = u->have_gpu ? ftstat_of(u->h2d, u->c->pcie_iters).median : NAN;
	for (int i = 0; i < u->nitems; i++) {
		const char *label = u->items[i].label;
		json_t *e = json_array_get(u->entries, (size_t)i);
		double cpu = json_number_value(json_object_get(e, "cpu_moe_gbs"));
		double g = json_number_value(json_object_get(e, "pcie_gather_gbs"));
		if (ftbw_measured(cpu) && cpu > 1.05 * ceil_cpu)
			warnf(u->warnings, u->rep, "%s: CPU MoE %.1f GB/s is above the CPU read ceiling %.1f GB/s", label,
			      cpu, ceil_cpu);
		double adj = json_number_value(json_object_get(e, "cpu_read_adjacent_gbs"));
		if (ftbw_measured(cpu) && ftbw_measured(adj) && cpu > 1.05 * adj)
			warnf(u->warnings, u->rep,
			      "%s: CPU MoE %.1f GB/s is above the CPU read rate measured next to it %.1f GB/s", label, cpu,
			      adj);
		if (ftbw_measured(g) && isfinite(ceil_h2d) && g > 1.05 * ceil_h2d)
			warnf(u->warnings, u->rep, "%s: gather %.1f GB/s is above the linear H2D ceiling %.1f GB/s", label,
			      g, ceil_h2d);
	}
	if (u->have_gpu) {
		struct ftgpu_info *g = u->env->gpu;
		if (ftbw_link_degraded(g))
			warnf(u->warnings, u->rep,
			      "PCIe link trained at Gen%d x%d, below the card's Gen%d x%d (%.1f of %.1f GB/s theoretical)",
			      g->link_gen_cur, g->link_width_cur, g->link_gen_max, g->link_width_max,
			      ftgpu_link_gbs(g->link_gen_cur, g->link_width_cur),
			      ftgpu_link_gbs(g->link_gen_max, g->link_width_max));
		else if (g->link_gen_cur <= 0 || g->link_width_cur <= 0)
			warnf(u->warnings, u->rep, "PCIe link state unknown (sysfs not readable for %s)", g->pci_bus_id);
	}
}

/* The profile's head: version, time, host, the tool and its settings, the GPU and CPU, the
 * threshold. A new object. */
static json_t *profile_head(const struct run *u)
{
	const struct ftbw_config *c = u->c;
	char ts[32], host[256];
	fttime_wall_iso8601(ts, sizeof ts);
	if (gethostname(host, sizeof host) < 0)
		strcpy(host, "unknown");
	host[sizeof host - 1] = '\0';
	json_t *prof = json_object();
	json_object_set_new(prof, "version", json_integer(4));
	json_object_set_new(prof, "timestamp", json_string(ts));
	json_object_set_new(prof, "epoch", json_real(fttime_wall_epoch()));
	json_object_set_new(prof, "host", json_string(host));
	json_object_set_new(prof, "deployment", json_string("isolated"));
	/* tool: what measured it and with which settings (the repeat counts behind the spreads). */
	json_object_set_new(prof, "tool",
			    json_pack("{s:s,s:s,s:{s:i,s:i,s:i,s:i,s:i,s:i,s:f,s:s,s:s}}", "name", "ftbench",
				      "version", FT_VERSION, "params", "cpu_iters", c->cpu_iters, "pcie_mib",
				      c->pcie_mib, "pcie_iters", c->pcie_iters, "kernel_cpu_warmup",
				      c->kernel_cpu_warmup, "kernel_cpu_iters", c->kernel_cpu_iters,
				      "kernel_pcie_iters", c->kernel_pcie_iters, "overlap_seconds", c->overlap_s,
				      "isa", c->isa, "gather", c->gather_sm ? "sm" : "proxy"));
	json_t *sweep = c->nbatch > 0 ? json_array() : json_null();
	for (int i = 0; i < c->nbatch; i++)
		json_array_append_new(sweep, json_integer(c->batches[i]));
	json_object_set_new(json_object_get(json_object_get(prof, "tool"), "params"), "batch_sweep", sweep);
	if (u->have_gpu) {
		json_t *gj = ftgpu_json(u->env->gpu);
		json_object_set_new(gj, "link_degraded", json_boolean(ftbw_link_degraded(u->env->gpu)));
		json_object_set_new(prof, "gpu", gj);
	} else {
		json_object_set_new(prof, "gpu", json_null());
	}
	json_t *cj = ftcpu_json(u->env->cpu);
	json_object_set_new(cj, "threads_used", json_integer(u->env->ncpus));
	json_t *ids = json_array();
	for (int i = 0; i < u->env->ncpus; i++)
		json_array_append_new(ids, json_integer(u->env->cpus[i]));
	json_object_set_new(cj, "cpu_ids", ids);
	json_object_set_new(prof, "cpu", cj);
	json_object_set_new(prof, "threshold", json_real(c->threshold));
	return prof;
}

/* The entries into prof: dtype_kernels and dtypes (the dtype items), workloads (the others). */
static void profile_entries(const struct run *u, json_t *prof)
{
	json_t *dtypes = json_object(), *dk = json_object(), *wl = json_object();
	for (int i = 0; i < u->nitems; i++) {
		const struct ftbw_item *it = &u->items[i];
		json_t *e = json_array_get(u->entries, (size_t)i);
		json_t *rec = json_object_get(e, "recommended");
		if (it->is_dtype) {
			json_object_set(dk, it->fmt->name, e);
			/* not a verdict: the seed's reader falls through to the workloads, whose
			 * null entries it skips, and answers none */
			json_object_set_new(dtypes, it->fmt->name, json_is_string(rec) ? json_incref(rec)
										  : json_string("unmeasured"));
			continue;
		}
		json_t *w = json_object_get(wl, it->model->name);
		if (!w) {
			w = json_pack("{s:o,s:o,s:o}", "model", model_json(it->model), "kernels", json_object(),
				      "recommended_moe_backend", json_object());
			json_object_set_new(wl, it->model->name, w);
		}
		json_object_set(json_object_get(w, "kernels"), it->fmt->name, e);
		json_object_set_new(json_object_get(w, "recommended_moe_backend"), it->fmt->name,
				    json_is_string(rec) ? json_incref(rec) : json_string("unmeasured"));
	}
	json_object_set_new(prof, "dtypes", dtypes);
	json_object_set_new(prof, "dtype_kernels", dk);
	json_object_set_new(prof, "workloads", wl);
}

/* The profile of a run that measured everything (a new object). */
static json_t *profile_json(struct run *u)
{
	struct ftstat read_all;
	int read_phases = 0;
	double ceil_cpu = ftbw_read_ceiling(u->rl.v, u->rl.len, u->rl.nphases, &read_all, &read_phases);
	trust_warnings(u, ceil_cpu);
	json_t *prof = profile_head(u);
	json_t *ceil = json_object();
	/* The figure: the highest phase median; the spread: every pass of the run. */
	json_object_set_new(ceil, "cpu_stream_read_gbs", json_real(ceil_cpu));
	json_object_set_new(ceil, "cpu_stream_read_gbs_spread", ftstat_json(&read_all));
	json_object_set_new(ceil, "cpu_stream_read_phases", json_integer(read_phases));
	ceiling_figure(ceil, "pcie_linear_h2d_gbs", u->h2d, u->have_gpu ? u->c->pcie_iters : 0);
	ceiling_figure(ceil, "pcie_linear_d2h_gbs", u->d2h, u->have_gpu ? u->c->pcie_iters : 0);
	json_object_set_new(prof, "ceilings", ceil);
	profile_entries(u, prof);
	json_object_set(prof, "warnings", u->warnings);
	json_object_set(prof, "remeasured", u->remeasured);
	/* what the figures depend on, so a reader can tell when the machine changed under them */
	struct ftgpu_info *g = u->have_gpu ? u->env->gpu : NULL;
	json_t *fp = ftprof_fingerprint_at(NULL, g ? g->pci_bus_id : NULL);
	if (fp && g) {
		json_object_set_new(fp, "gpu_uuid", json_string(g->uuid));
		json_object_set_new(fp, "cuda_driver_version", json_integer(g->cuda_driver_version));
		json_object_set_new(fp, "cuda_runtime_version", json_integer(g->cuda_runtime_version));
	}
	if (fp)
		json_object_set_new(prof, "fingerprint", fp);
	if (u->c->no_checks)
		warnf(u->warnings, u->rep, "validity not checked (--no-checks): these figures were not meant to be trusted");
	else
		ftbw_check_valid(prof, u->c->max_spread);
	return prof;
}

int ftbw_run(const struct ftbw_config *c, struct ftbw_env *env, const struct ftbw_ops *ops,
	     const struct ftreport *rep, json_t **out, char *err, size_t errlen)
{
	struct run u = {.c = c, .env = env, .ops = ops, .rep = rep, .have_gpu = env->gpu != NULL,
			.warnings = json_array(), .entries = json_array(), .remeasured = json_array(),
			.err = err, .errlen = errlen};
	int r;
	*out = NULL;
	err[0] = '\0';
	if (!u.warnings || !u.entries || !u.remeasured)
		r = oom(&u);
	else if ((r = plan_items(&u)) == 0 && (r = ceilings(&u)) == 0 && (r = measure_items(&u)) == 0) {
		*out = profile_json(&u);
		ftreport_progress(rep, u.total, u.total, "done");
	}
	json_decref(u.warnings);
	json_decref(u.remeasured);
	json_decref(u.entries);
	free(u.items);
	free(u.cpu_read);
	free(u.rl.v);
	free(u.rl.len);
	free(u.h2d);
	free(u.d2h);
	return r;
}
