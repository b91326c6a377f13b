/* bw: orchestration, decision and profile assembly (measurements: bw_ops.c). */
#include "bench/bw.h"
#include "bench/cpu_probe.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ftprofile.h"
#include "util/stats.h"
#include "util/timeutil.h"

#ifndef FT_VERSION
#define FT_VERSION "0.0.0"
#endif

void ftbw_config_default(struct ftbw_config *c)
{
	memset(c, 0, sizeof *c);
	c->threshold = FTBW_DEFAULT_THRESHOLD;
	c->cpu_iters = FTBW_DEF_CPU_ITERS;
	c->pcie_mib = FTBW_DEF_PCIE_MIB;
	c->pcie_iters = FTBW_DEF_PCIE_ITERS;
	c->kernel_cpu_warmup = FTBW_DEF_KERNEL_CPU_WARMUP;
	c->kernel_cpu_iters = FTBW_DEF_KERNEL_CPU_ITERS;
	c->kernel_pcie_iters = FTBW_DEF_KERNEL_PCIE_ITERS;
	c->overlap_s = FTBW_DEF_OVERLAP_S;
	c->max_spread = FTBW_VALID_SPREAD;
	strcpy(c->isa, "auto");
	c->deployment = -1;
	ftcpumoe_tune_defaults(&c->tune);
}

const char *ftbw_deployment_name(int d)
{
	return d == FTBW_DEPLOY_CONCURRENT ? "concurrent" : "isolated";
}

int ftbw_deployment_parse(const char *s, int *d)
{
	if (s && !strcmp(s, "isolated"))
		*d = FTBW_DEPLOY_ISOLATED;
	else if (s && !strcmp(s, "concurrent"))
		*d = FTBW_DEPLOY_CONCURRENT;
	else
		return -EINVAL;
	return 0;
}

int ftbw_synth_experts(int experts, size_t expert_bytes, size_t cap)
{
	if (expert_bytes == 0)
		return 0;
	size_t fit = cap / expert_bytes;
	if (fit < 1)
		fit = 1;
	return (size_t)experts < fit ? experts : (int)fit;
}

static int add_item(struct ftbw_item *items, int n, int max, const struct ftmodel *m,
		    const struct ftfmt *f, bool is_dtype)
{
	if (n >= max)
		return -E2BIG;
	struct ftbw_item *it = &items[n];
	memset(it, 0, sizeof *it);
	it->model = m;
	it->fmt = f;
	it->is_dtype = is_dtype;
	it->expert_bytes = ftfmt_expert_bytes(f, m->hidden, m->inter);
	it->synth_experts = ftbw_synth_experts(m->experts, it->expert_bytes, FTBW_SYNTH_BYTES);
	if (is_dtype)
		snprintf(it->label, sizeof it->label, "dtype:%s", f->name);
	else
		snprintf(it->label, sizeof it->label, "%s:%s", m->name, f->name);
	return n + 1;
}

int ftbw_plan(const struct ftbw_config *c, struct ftbw_item *items, int max, char *skipped, size_t sn)
{
	int n = 0;
	size_t used = 0;
	if (skipped && sn)
		skipped[0] = '\0';
	for (int i = 0; i < c->ndtypes; i++) {
		const struct ftmodel *m = ftmodel_bw_dtype(c->dtypes[i]);
		if (!m)
			continue; /* the CLI accepts only formats with a workload */
		n = add_item(items, n, max, m, ftfmt_get(c->dtypes[i]), true);
		if (n < 0)
			return n;
	}
	for (int i = 0; i < c->nmodels; i++) {
		const struct ftmodel *m = c->models[i];
		int nf = c->nformats ? c->nformats : m->nformats;
		const enum ftfmt_id *fs = c->nformats ? c->formats : m->formats;
		for (int j = 0; j < nf; j++) {
			const struct ftfmt *f = ftfmt_get(fs[j]);
			if (ftfmt_expert_bytes(f, m->hidden, m->inter) == 0) {
				if (skipped && used < sn)
					used += (size_t)snprintf(skipped + used, sn - used, "%s%s:%s",
								 used ? ", " : "", m->name, f->name);
				continue;
			}
			n = add_item(items, n, max, m, f, false);
			if (n < 0)
				return n;
		}
	}
	return n;
}

void ftbw_meas_init(struct ftbw_meas *m)
{
	memset(m, 0, sizeof *m);
	m->gather.rc = m->cpu.rc = m->ov_cpu.rc = m->ov_gather.rc = FTBW_NOT_RUN;
	m->read_cpu.rc = m->read_other.rc = FTBW_NOT_RUN;
}

static void part_release(struct ftbw_part *p)
{
	free(p->gbs);
	p->gbs = NULL;
	p->n = 0;
}

void ftbw_meas_release(struct ftbw_meas *m)
{
	if (!m)
		return;
	part_release(&m->gather);
	part_release(&m->cpu);
	part_release(&m->ov_cpu);
	part_release(&m->ov_gather);
	part_release(&m->read_cpu);
	part_release(&m->read_other);
	for (int i = 0; i < m->nbatch && i < FTBW_MAX_BATCHES; i++) {
		part_release(&m->bsw[i].cpu);
		part_release(&m->bsw[i].gather);
	}
}

int ftbw_hybrid_max_batch(int n, const int *batch, const double *cpu_gbs, const double *pcie_gbs,
			  double threshold)
{
	int best = 0;
	for (int i = 0; i < n; i++) {
		if (!(isfinite(cpu_gbs[i]) && cpu_gbs[i] > 0 && isfinite(pcie_gbs[i]) && pcie_gbs[i] > 0))
			return -1;
		if (!(cpu_gbs[i] > threshold * pcie_gbs[i]))
			break;
		best = batch[i];
	}
	return best;
}

static bool measured(double x)
{
	return isfinite(x) && x > 0;
}

/* A part is usable when it ran, has samples and every sample is a positive finite rate
 * (never zeros as data): otherwise it counts as failed, with a reason. */
static bool part_ok(struct ftbw_part *p)
{
	if (p->rc != 0)
		return false;
	if (p->n <= 0 || !p->gbs) {
		p->rc = -EIO;
		snprintf(p->err, sizeof p->err, "no samples");
		return false;
	}
	for (int i = 0; i < p->n; i++)
		if (!measured(p->gbs[i])) {
			p->rc = -EIO;
			snprintf(p->err, sizeof p->err, "sample %d is not a positive rate (%g)", i, p->gbs[i]);
			return false;
		}
	return true;
}

static double part_median(const struct ftbw_part *p)
{
	if (p->rc != 0 || p->n <= 0)
		return NAN;
	return ftstat_of(p->gbs, p->n).median;
}

bool ftbw_link_degraded(const struct ftgpu_info *g)
{
	if (!g || g->link_gen_cur <= 0 || g->link_gen_max <= 0 || g->link_width_cur <= 0 ||
	    g->link_width_max <= 0)
		return false;
	return g->link_gen_cur < g->link_gen_max || g->link_width_cur < g->link_width_max;
}

/* ---------------------------------------------------------------- JSON */

static json_t *num_or_null(double x)
{
	return isfinite(x) ? json_real(x) : json_null();
}

/* Sets key = median (or null) and key_spread = the spread (or null). */
static void set_figure(json_t *o, const char *key, const struct ftbw_part *p)
{
	char sk[96];
	snprintf(sk, sizeof sk, "%s_spread", key);
	if (p->rc == 0 && p->n > 0) {
		struct ftstat s = ftstat_of(p->gbs, p->n);
		json_object_set_new(o, key, json_real(s.median));
		json_object_set_new(o, sk, ftstat_json(&s));
	} else {
		json_object_set_new(o, key, json_null());
		json_object_set_new(o, sk, json_null());
	}
}

/* batch_sweep (one row per batch: the CPU MoE and the gather of as many experts, their ratio
 * and the decision at that batch) and hybrid_max_batch; both null without a sweep. */
static void set_batch_sweep(json_t *e, const struct ftbw_meas *m, double threshold)
{
	int n = m->nbatch < FTBW_MAX_BATCHES ? m->nbatch : FTBW_MAX_BATCHES, bs[FTBW_MAX_BATCHES];
	double cg[FTBW_MAX_BATCHES], pg[FTBW_MAX_BATCHES];
	if (n <= 0) {
		json_object_set_new(e, "batch_sweep", json_null());
		json_object_set_new(e, "hybrid_max_batch", json_null());
		return;
	}
	json_t *a = json_array();
	for (int i = 0; i < n; i++) {
		const struct ftbw_batch *b = &m->bsw[i];
		struct ftbw_part c = b->cpu, g = b->gather;
		part_ok(&c);
		part_ok(&g);
		bs[i] = b->batch;
		cg[i] = part_median(&c);
		pg[i] = part_median(&g);
		double ratio = measured(cg[i]) && measured(pg[i]) ? cg[i] / pg[i] : NAN;
		json_t *row = json_object();
		json_object_set_new(row, "batch", json_integer(b->batch));
		json_object_set_new(row, "experts_per_step", measured(b->experts) ? json_real(b->experts) : json_null());
		set_figure(row, "cpu_moe_gbs", &c);
		set_figure(row, "pcie_gather_gbs", &g);
		json_object_set_new(row, "ratio", num_or_null(ratio));
		json_object_set_new(row, "recommended",
				    isnan(ratio) ? json_null() : json_string(ratio > threshold ? "hybrid" : "offload"));
		json_array_append_new(a, row);
	}
	json_object_set_new(e, "batch_sweep", a);
	int hm = ftbw_hybrid_max_batch(n, bs, cg, pg, threshold);
	json_object_set_new(e, "hybrid_max_batch", hm < 0 ? json_null() : json_integer(hm));
}

/* The share of a part's samples under 0.8 x its median; NaN when it has none. */
static double slow_share(const struct ftbw_part *p)
{
	if (p->rc != 0 || p->n <= 0)
		return NAN;
	double med = ftstat_of(p->gbs, p->n).median;
	int slow = 0;
	for (int i = 0; i < p->n; i++)
		slow += p->gbs[i] < 0.8 * med;
	return (double)slow / p->n;
}

/* Downgrade unusable parts to failed; the overlap pair counts only as a pair. Idempotent. */
static void meas_normalize(struct ftbw_meas *m)
{
	part_ok(&m->gather);
	part_ok(&m->cpu);
	part_ok(&m->ov_cpu);
	part_ok(&m->ov_gather);
	part_ok(&m->read_cpu);
	part_ok(&m->read_other);
	if (m->ov_cpu.rc != 0 || m->ov_gather.rc != 0)
		m->ov_cpu.rc = m->ov_gather.rc = m->ov_cpu.rc ? m->ov_cpu.rc : m->ov_gather.rc;
}

json_t *ftbw_entry_json(const struct ftbw_item *it, const struct ftbw_meas *mc, bool have_gpu,
			double threshold)
{
	struct ftbw_meas m = *mc; /* a shallow copy: the sample arrays stay the caller's */
	meas_normalize(&m);

	double cpu = part_median(&m.cpu), pcie = part_median(&m.gather);
	struct ftbw_decision d;
	ftbw_decide(it->fmt->cpu_path, have_gpu, cpu, m.cpu.err, pcie, m.gather.err, threshold, &d);

	json_t *e = json_object();
	json_object_set_new(e, "expert_bytes", json_integer((json_int_t)it->expert_bytes));
	json_object_set_new(e, "synth_experts", have_gpu ? json_integer(it->synth_experts) : json_null());
	set_figure(e, "cpu_moe_gbs", &m.cpu);
	json_object_set_new(e, "cpu_moe_isa", m.cpu.rc == 0 && m.cpu_isa[0] ? json_string(m.cpu_isa) : json_null());
	/* which kernel made the CPU figures: ours (bw --cpu-kernel puts an engine's here) */
	json_object_set_new(e, "cpu_moe_kernel", ftprobe_ours_json(m.cpu.rc == 0 ? m.cpu_isa : NULL));
	if (m.nsweep > 0) {
		json_t *sw = json_object();
		for (int i = 0; i < m.nsweep; i++)
			json_object_set_new(sw, m.sweep_isa[i], num_or_null(measured(m.sweep_gbs[i]) ? m.sweep_gbs[i] : NAN));
		json_object_set_new(e, "isa_sweep", sw);
	} else {
		json_object_set_new(e, "isa_sweep", json_null());
	}
	set_figure(e, "pcie_gather_gbs", &m.gather);
	set_figure(e, "cpu_moe_overlap_gbs", &m.ov_cpu);
	set_figure(e, "pcie_gather_overlap_gbs", &m.ov_gather);
	/* The read rate next to the cpu figure (same machine state; the run's ceiling may come
	 * from another phase): cpu_moe_gbs / cpu_read_adjacent_gbs is the kernel's fraction. */
	set_figure(e, "cpu_read_adjacent_gbs", m.cpu.rc == 0 ? &m.read_cpu : &(struct ftbw_part){.rc = FTBW_NOT_RUN});
	json_object_set_new(e, "ratio", num_or_null(d.ratio));
	/* the ratio per interleaved round (CPU MoE steps over the gather chunk right before them):
	 * how far the box's drift moved it within this run */
	if (m.npair > 0) {
		struct ftstat rs = ftstat_of(m.pair_ratio, m.npair);
		json_object_set_new(e, "ratio_rounds_spread", ftstat_json(&rs));
		json_object_set_new(e, "ratio_paired", json_real(rs.median));
	} else {
		json_object_set_new(e, "ratio_rounds_spread", json_null());
		json_object_set_new(e, "ratio_paired", json_null());
	}
	/* the CPU MoE's stragglers: the share of steps under 0.8 x the median rate */
	json_object_set_new(e, "cpu_moe_slow_steps", num_or_null(slow_share(&m.cpu)));
	/* unmeasured: null, which the seed's reader skips (a string would count as offload) */
	const char *verdict = !d.measured ? NULL : d.hybrid ? "hybrid" : "offload";
	json_object_set_new(e, "recommended", verdict ? json_string(verdict) : json_null());
	json_object_set_new(e, "recommended_isolated", verdict ? json_string(verdict) : json_null());
	set_batch_sweep(e, &m, threshold);

	/* The note: the decision's reason, then what else went wrong. */
	char note[768];
	size_t u = 0;
	note[0] = '\0';
#define ADD(...) do { if (u < sizeof note) u += (size_t)snprintf(note + u, sizeof note - u, __VA_ARGS__); } while (0)
	if (d.note[0])
		ADD("%s", d.note);
	if (have_gpu && it->fmt->cpu_path && m.gather.rc == 0 && m.cpu.rc == 0 && m.ov_cpu.rc < 0)
		ADD("%soverlap not measured: %s", u ? "; " : "",
		    m.ov_cpu.err[0] ? m.ov_cpu.err : m.ov_gather.err);
	if (!it->fmt->cpu_path && have_gpu && m.gather.rc < 0)
		ADD("%sPCIe gather failed: %s", u ? "; " : "", m.gather.err);
	if (!have_gpu && it->fmt->cpu_path && m.cpu.rc < 0)
		ADD("%sCPU MoE failed: %s", u ? "; " : "", m.cpu.err);
#undef ADD
	json_object_set_new(e, "note", note[0] ? json_string(note) : json_null());
	return e;
}

/* ---------------------------------------------------------------- the profile's own checks */

static double jnum(const json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	return json_is_number(v) ? json_number_value(v) : NAN;
}

static void reasonf(json_t *arr, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void reasonf(json_t *arr, const char *fmt, ...)
{
	char b[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(b, sizeof b, fmt, ap);
	va_end(ap);
	json_array_append_new(arr, json_string(b));
}

/* The spread of figure key in o against FTBW_VALID_SPREAD; what names it in a reason. */
static void check_spread(json_t *why, const json_t *o, const char *key, const char *what, double max)
{
	char sk[96];
	if (!(max > 0))
		return;
	snprintf(sk, sizeof sk, "%s_spread", key);
	const json_t *sp = json_object_get(o, sk);
	double med = jnum(sp, "median"), lo = jnum(sp, "min"), hi = jnum(sp, "max");
	if (med > 0 && hi >= lo && (hi - lo) / med > max)
		reasonf(why, "%s spread %.1f-%.1f GB/s is %.0f%% of its median %.1f (over %.0f%%): the host was not "
			     "quiet, measure again",
			what, lo, hi, (hi - lo) / med * 100, med, max * 100);
}

static void check_entry(json_t *why, const json_t *e, const char *name, double read, double max)
{
	char what[160];
	double cpu = jnum(e, "cpu_moe_gbs");
	if (read > 0 && cpu > read * FTBW_VALID_ABOVE_READ)
		reasonf(why, "%s: CPU MoE %.1f GB/s is above the CPU read ceiling %.1f GB/s: the ceiling is not what "
			     "memory sustains (a noisy run)", name, cpu, read);
	snprintf(what, sizeof what, "%s CPU MoE", name);
	double slow = jnum(e, "cpu_moe_slow_steps");
	if (isnan(slow)) {
		check_spread(why, e, "cpu_moe_gbs", what, max);
	} else if (max > 0) {
		/* hundreds of steps: one straggler sets the minimum, so the low side is judged by the
		 * share of slow steps, the high side (max - median) as before */
		const json_t *sp = json_object_get(e, "cpu_moe_gbs_spread");
		double med = jnum(sp, "median"), hi = jnum(sp, "max");
		if (slow > FTBW_VALID_SLOW_STEPS)
			reasonf(why, "%s: %.1f%% of the steps ran under 0.8 x the median (over %.0f%%): the host was not "
				     "quiet, measure again",
				what, slow * 100, FTBW_VALID_SLOW_STEPS * 100);
		if (med > 0 && hi >= med && (hi - med) / med > max)
			reasonf(why, "%s spread reaches %.1f GB/s, %.0f%% over its median %.1f (over %.0f%%): the host was "
				     "not quiet, measure again",
				what, hi, (hi - med) / med * 100, med, max * 100);
	}
	snprintf(what, sizeof what, "%s PCIe gather", name);
	check_spread(why, e, "pcie_gather_gbs", what, max);
}

int ftbw_check_valid(json_t *prof, double max_spread)
{
	json_t *why = json_array();
	const json_t *ceil = json_object_get(prof, "ceilings");
	double read = jnum(ceil, "cpu_stream_read_gbs");
	check_spread(why, ceil, "cpu_stream_read_gbs", "CPU read ceiling", max_spread);
	check_spread(why, ceil, "pcie_linear_h2d_gbs", "PCIe host-to-device", max_spread);
	check_spread(why, ceil, "pcie_linear_d2h_gbs", "PCIe device-to-host", max_spread);
	const json_t *link = json_object_get(json_object_get(prof, "gpu"), "pcie_link");
	double link_gbs = jnum(link, "theoretical_gbs"), h2d = jnum(ceil, "pcie_linear_h2d_gbs");
	if (link_gbs > 0 && h2d > 0 && h2d < FTBW_VALID_LINK_SHARE * link_gbs)
		reasonf(why, "PCIe host-to-device %.1f GB/s is under %.0f%% of the %.1f GB/s the link carries as trained "
			     "(Gen%lld x%lld)",
			h2d, FTBW_VALID_LINK_SHARE * 100, link_gbs, (long long)jnum(link, "gen_current"),
			(long long)jnum(link, "width_current"));
	const char *fmt, *model;
	json_t *e, *w;
	json_object_foreach(json_object_get(prof, "dtype_kernels"), fmt, e)
		check_entry(why, e, fmt, read, max_spread);
	json_object_foreach(json_object_get(prof, "workloads"), model, w) {
		json_object_foreach(json_object_get(w, "kernels"), fmt, e) {
			char name[192];
			snprintf(name, sizeof name, "%s %s", model, fmt);
			check_entry(why, e, name, read, max_spread);
		}
	}
	int n = (int)json_array_size(why);
	json_object_set_new(prof, "valid", json_boolean(n == 0));
	json_object_set_new(prof, "invalid_reasons", why);
	return n;
}

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
		if (!measured(v[i])) {
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
	check_entry(why, e, name, 0, max);
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
		meas_normalize(m);
		*e = ftbw_entry_json(it, m, env->gpu != NULL, c->threshold);
		if (!*e || !measure_again(c, warnings, remeasured, rep, it->label, t,
					  entry_too_wide(*e, it->label, c->max_spread, what, sizeof what), what))
			return 0;
		json_decref(*e);
		ftbw_meas_release(m);
	}
}

int ftbw_run(const struct ftbw_config *c, struct ftbw_env *env, const struct ftbw_ops *ops,
	     const struct ftreport *rep, json_t **out, char *err, size_t errlen)
{
	struct ftbw_item *items = NULL;
	double *cpu_read = NULL, *h2d = NULL, *d2h = NULL;
	struct read_log rl = {0};
	json_t *prof = NULL, *warnings = json_array(), *entries = json_array(), *remeasured = json_array();
	int r, nitems;
	char skipped[512], what[512];
	bool have_gpu = env->gpu != NULL;

	*out = NULL;
	err[0] = '\0';
	items = calloc(FTBW_MAX_ITEMS, sizeof *items);
	if (!items || !warnings || !entries || !remeasured) {
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
	if (skipped[0])
		warnf(warnings, rep, "skipped (geometry does not fit the format's blocks): %s", skipped);
	if (!have_gpu)
		warnf(warnings, rep, "no GPU (%s): CPU half only, no format has a verdict (unmeasured)",
		      env->no_gpu_why && *env->no_gpu_why ? env->no_gpu_why : "none found");
	int total = nitems + 1;
	rl.len = calloc((size_t)nitems + 1, sizeof *rl.len);
	if (!rl.len) {
		r = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto out;
	}

	/* Ceilings. */
	ftreport_progress(rep, 0, total, "ceilings");
	cpu_read = calloc((size_t)c->cpu_iters, sizeof *cpu_read);
	if (!cpu_read) {
		r = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	for (int t = 0;; t++) {
		r = ops->cpu_read(ops->ctx, env, c->cpu_iters, cpu_read, err, errlen);
		if (r == 0)
			r = check_samples(cpu_read, c->cpu_iters, "CPU read ceiling", err, errlen);
		if (r < 0 || !measure_again(c, warnings, remeasured, rep, "CPU read ceiling", t,
					    samples_too_wide("CPU read ceiling", cpu_read, c->cpu_iters, c->max_spread, what,
							     sizeof what),
					    what))
			break;
	}
	if (r == 0)
		r = read_log_add(&rl, &(struct ftbw_part){.gbs = cpu_read, .n = c->cpu_iters}, NULL);
	if (r < 0)
		goto out;
	if (have_gpu) {
		h2d = calloc((size_t)c->pcie_iters, sizeof *h2d);
		d2h = calloc((size_t)c->pcie_iters, sizeof *d2h);
		if (!h2d || !d2h) {
			r = -ENOMEM;
			snprintf(err, errlen, "out of memory");
			goto out;
		}
		struct link_watch w = {.g = *env->gpu};
		bool watching = env->gpu->pci_bus_id[0] && pthread_create(&w.th, NULL, link_watch_main, &w) == 0;
		size_t bytes = (size_t)c->pcie_mib << 20;
		for (int dir = 0; dir < 2 && r == 0; dir++) {
			double *v = dir ? d2h : h2d;
			const char *name = dir ? "PCIe device-to-host" : "PCIe host-to-device";
			for (int t = 0;; t++) {
				r = ops->pcie_linear(ops->ctx, env, !dir, bytes, c->pcie_iters, v, err, errlen);
				if (r == 0)
					r = check_samples(v, c->pcie_iters, dir ? "PCIe D2H ceiling" : "PCIe H2D ceiling", err,
							  errlen);
				if (r < 0 || !measure_again(c, warnings, remeasured, rep, name, t,
							    samples_too_wide(name, v, c->pcie_iters, c->max_spread,
									     what, sizeof what),
							    what))
					break;
			}
		}
		if (watching) {
			w.stop = 1;
			pthread_join(w.th, NULL);
			if (w.best_gen > 0)
				env->gpu->link_gen_cur = w.best_gen;
			if (w.best_width > 0)
				env->gpu->link_width_cur = w.best_width;
		}
		if (r < 0)
			goto out;
	}

	/* Real kernels per item. */
	for (int i = 0; i < nitems; i++) {
		ftreport_progress(rep, i + 1, total, items[i].label);
		struct ftbw_meas m;
		json_t *e = NULL;
		r = measure_item(c, env, ops, rep, &items[i], warnings, remeasured, &m, &e, err, errlen);
		if (r < 0) {
			ftbw_meas_release(&m);
			goto out;
		}
		if (m.gather.rc < 0)
			warnf(warnings, rep, "%s: PCIe gather failed: %s", items[i].label, m.gather.err);
		if (m.cpu.rc < 0)
			warnf(warnings, rep, "%s: CPU MoE failed: %s", items[i].label, m.cpu.err);
		if ((m.ov_cpu.rc < 0 || m.ov_gather.rc < 0) && m.gather.rc == 0 && m.cpu.rc == 0)
			warnf(warnings, rep, "%s: overlap failed: %s", items[i].label,
			      m.ov_cpu.rc < 0 ? m.ov_cpu.err : m.ov_gather.err);
		if (m.read_cpu.rc < 0 || m.read_other.rc < 0)
			warnf(warnings, rep, "%s: CPU read passes left out: %s", items[i].label,
			      m.read_cpu.rc < 0 ? m.read_cpu.err : m.read_other.err);
		int lr = read_log_add(&rl, &m.read_cpu, &m.read_other);
		ftbw_meas_release(&m);
		if (!e || lr < 0) {
			json_decref(e);
			r = -ENOMEM;
			snprintf(err, errlen, "out of memory");
			goto out;
		}
		json_array_append_new(entries, e);
	}

	/* Trust checks: no kernel reads faster than memory, no gather beats the linear copy. */
	struct ftstat read_all;
	int read_phases = 0;
	double ceil_cpu = ftbw_read_ceiling(rl.v, rl.len, rl.nphases, &read_all, &read_phases);
	double ceil_h2d = have_gpu ? ftstat_of(h2d, c->pcie_iters).median : NAN;
	for (int i = 0; i < nitems; i++) {
		json_t *e = json_array_get(entries, (size_t)i);
		double cpu = json_number_value(json_object_get(e, "cpu_moe_gbs"));
		double g = json_number_value(json_object_get(e, "pcie_gather_gbs"));
		if (measured(cpu) && cpu > 1.05 * ceil_cpu)
			warnf(warnings, rep, "%s: CPU MoE %.1f GB/s is above the CPU read ceiling %.1f GB/s",
			      items[i].label, cpu, ceil_cpu);
		double adj = json_number_value(json_object_get(e, "cpu_read_adjacent_gbs"));
		if (measured(cpu) && measured(adj) && cpu > 1.05 * adj)
			warnf(warnings, rep,
			      "%s: CPU MoE %.1f GB/s is above the CPU read rate measured next to it %.1f GB/s",
			      items[i].label, cpu, adj);
		if (measured(g) && isfinite(ceil_h2d) && g > 1.05 * ceil_h2d)
			warnf(warnings, rep, "%s: gather %.1f GB/s is above the linear H2D ceiling %.1f GB/s",
			      items[i].label, g, ceil_h2d);
	}
	if (have_gpu) {
		struct ftgpu_info *g = env->gpu;
		if (ftbw_link_degraded(g))
			warnf(warnings, rep,
			      "PCIe link trained at Gen%d x%d, below the card's Gen%d x%d (%.1f of %.1f GB/s theoretical)",
			      g->link_gen_cur, g->link_width_cur, g->link_gen_max, g->link_width_max,
			      ftgpu_link_gbs(g->link_gen_cur, g->link_width_cur),
			      ftgpu_link_gbs(g->link_gen_max, g->link_width_max));
		else if (g->link_gen_cur <= 0 || g->link_width_cur <= 0)
			warnf(warnings, rep, "PCIe link state unknown (sysfs not readable for %s)", g->pci_bus_id);
	}

	/* Assemble. */
	char ts[32], host[256];
	fttime_wall_iso8601(ts, sizeof ts);
	if (gethostname(host, sizeof host) < 0)
		strcpy(host, "unknown");
	host[sizeof host - 1] = '\0';
	prof = json_object();
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
	if (have_gpu) {
		json_t *gj = ftgpu_json(env->gpu);
		json_object_set_new(gj, "link_degraded", json_boolean(ftbw_link_degraded(env->gpu)));
		json_object_set_new(prof, "gpu", gj);
	} else {
		json_object_set_new(prof, "gpu", json_null());
	}
	json_t *cj = ftcpu_json(env->cpu);
	json_object_set_new(cj, "threads_used", json_integer(env->ncpus));
	json_t *ids = json_array();
	for (int i = 0; i < env->ncpus; i++)
		json_array_append_new(ids, json_integer(env->cpus[i]));
	json_object_set_new(cj, "cpu_ids", ids);
	json_object_set_new(prof, "cpu", cj);
	json_object_set_new(prof, "threshold", json_real(c->threshold));
	json_t *ceil = json_object();
	/* The figure: the highest phase median; the spread: every pass of the run. */
	json_object_set_new(ceil, "cpu_stream_read_gbs", json_real(ceil_cpu));
	json_object_set_new(ceil, "cpu_stream_read_gbs_spread", ftstat_json(&read_all));
	json_object_set_new(ceil, "cpu_stream_read_phases", json_integer(read_phases));
	ceiling_figure(ceil, "pcie_linear_h2d_gbs", h2d, have_gpu ? c->pcie_iters : 0);
	ceiling_figure(ceil, "pcie_linear_d2h_gbs", d2h, have_gpu ? c->pcie_iters : 0);
	json_object_set_new(prof, "ceilings", ceil);

	json_t *dtypes = json_object(), *dk = json_object(), *wl = json_object();
	for (int i = 0; i < nitems; i++) {
		const struct ftbw_item *it = &items[i];
		json_t *e = json_array_get(entries, (size_t)i);
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
	json_object_set(prof, "warnings", warnings);
	json_object_set(prof, "remeasured", remeasured);
	/* what the figures depend on, so a reader can tell when the machine changed under them */
	json_t *fp = ftprof_fingerprint_at(NULL, have_gpu ? env->gpu->pci_bus_id : NULL);
	if (fp && have_gpu) {
		json_object_set_new(fp, "gpu_uuid", json_string(env->gpu->uuid));
		json_object_set_new(fp, "cuda_driver_version", json_integer(env->gpu->cuda_driver_version));
		json_object_set_new(fp, "cuda_runtime_version", json_integer(env->gpu->cuda_runtime_version));
	}
	if (fp)
		json_object_set_new(prof, "fingerprint", fp);
	if (c->no_checks)
		warnf(warnings, rep, "validity not checked (--no-checks): these figures were not meant to be trusted");
	else
		ftbw_check_valid(prof, c->max_spread);
	ftreport_progress(rep, total, total, "done");
	*out = prof;
	prof = NULL;
	r = 0;
out:
	json_decref(prof);
	json_decref(warnings);
	json_decref(remeasured);
	json_decref(entries);
	free(items);
	free(cpu_read);
	free(rl.v);
	free(rl.len);
	free(h2d);
	free(d2h);
	return r;
}
