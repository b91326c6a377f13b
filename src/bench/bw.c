/* bw: the plan, the measurements' bookkeeping, a profile entry and the profile's own checks (the
 * run: bw_run.c; the real measurements: bw_ops.c, bw_engines.c). */
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
		if (!ftbw_measured(p->gbs[i])) {
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
		double ratio = ftbw_measured(cg[i]) && ftbw_measured(pg[i]) ? cg[i] / pg[i] : NAN;
		json_t *row = json_object();
		json_object_set_new(row, "batch", json_integer(b->batch));
		json_object_set_new(row, "experts_per_step", ftbw_measured(b->experts) ? json_real(b->experts) : json_null());
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
void ftbw_meas_normalize(struct ftbw_meas *m)
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
	ftbw_meas_normalize(&m);

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
			json_object_set_new(sw, m.sweep_isa[i], num_or_null(ftbw_measured(m.sweep_gbs[i]) ? m.sweep_gbs[i] : NAN));
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

void ftbw_entry_reasons(json_t *why, const json_t *e, const char *name, double read, double max)
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
		ftbw_entry_reasons(why, e, fmt, read, max_spread);
	json_object_foreach(json_object_get(prof, "workloads"), model, w) {
		json_object_foreach(json_object_get(w, "kernels"), fmt, e) {
			char name[192];
			snprintf(name, sizeof name, "%s %s", model, fmt);
			ftbw_entry_reasons(why, e, name, read, max_spread);
		}
	}
	int n = (int)json_array_size(why);
	json_object_set_new(prof, "valid", json_boolean(n == 0));
	json_object_set_new(prof, "invalid_reasons", why);
	return n;
}
