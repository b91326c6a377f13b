#include "replay/replay.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/stats.h"

#define say(...) ((err && errlen) ? (void)snprintf(err, errlen, __VA_ARGS__) : (void)0)

/* ---------------------------------------------------------------- names and config */

static int parse_num(const char *s, size_t len, double lo, double hi, double *out)
{
	char buf[32], *end;
	if (len == 0 || len >= sizeof buf)
		return -EINVAL;
	memcpy(buf, s, len);
	buf[len] = 0;
	double v = strtod(buf, &end);
	if (*end || !(v >= lo && v <= hi))
		return -EINVAL;
	*out = v;
	return 0;
}

int ftrp_work_parse(const char *s, struct ftrp_work *w)
{
	memset(w, 0, sizeof *w);
	if (!s || !*s)
		return -EINVAL;
	if (!strcmp(s, "uniform"))
		return 0;
	if (!strcmp(s, "trace")) {
		w->trace = 1;
		return 0;
	}
	int have_r = 0, have_s = 0;
	while (*s) {
		const char *plus = strchr(s, '+');
		size_t len = plus ? (size_t)(plus - s) : strlen(s);
		if (len > 6 && !strncmp(s, "reuse:", 6) && !have_r) {
			if (parse_num(s + 6, len - 6, 0, 1, &w->reuse))
				return -EINVAL;
			have_r = 1;
		} else if (len > 5 && !strncmp(s, "zipf:", 5) && !have_s) {
			if (parse_num(s + 5, len - 5, 0, 16, &w->skew))
				return -EINVAL;
			have_s = 1;
		} else {
			return -EINVAL;
		}
		s += len + (plus ? 1 : 0);
		if (plus && !*s)
			return -EINVAL;
	}
	return 0;
}

const char *ftrp_work_name(const struct ftrp_work *w, char *buf, size_t n)
{
	if (w->trace)
		snprintf(buf, n, "trace");
	else if (w->skew > 0 && w->reuse > 0)
		snprintf(buf, n, "zipf %g reuse %g", w->skew, w->reuse);
	else if (w->skew > 0)
		snprintf(buf, n, "zipf %g", w->skew);
	else if (w->reuse > 0)
		snprintf(buf, n, "reuse %g", w->reuse);
	else
		snprintf(buf, n, "uniform");
	return buf;
}

int ftrp_size_parse(const char *s, enum ftrp_size *out)
{
	static const char *const names[] = {"none", "short", "full"};
	for (int i = 0; i < 3; i++)
		if (s && !strcmp(s, names[i])) {
			*out = (enum ftrp_size)i;
			return 0;
		}
	return -EINVAL;
}

const char *ftrp_size_name(enum ftrp_size s)
{
	return s == FTRP_SHORT ? "short" : s == FTRP_FULL ? "full" : "none";
}

void ftrp_config_default(struct ftrp_config *c, enum ftrp_size size)
{
	static const double sweep[] = {0, 0.125, 0.25, 0.375, 0.5, 0.75, 1};
	memset(c, 0, sizeof *c);
	c->layers = FTRP_DEFAULT_LAYERS;
	c->batch = 1;
	c->warmup_steps = 64;
	c->gpu_warmup = 4;
	c->steps = 32;
	c->default_cache = FTRP_DEFAULT_CACHE;
	c->default_reuse = FTRP_DEFAULT_REUSE;
	c->profile_fraction = NAN;
	ftrp_policy_fraction(&c->base, 0);
	c->seed = 1;
	if (size == FTRP_SHORT) {
		c->ncache = 1;
		c->cache[0] = FTRP_DEFAULT_CACHE;
		/* uniform beside the default reuse: an engine that knows its routing reuses little
		 * gets its own answer (ftprof_recommend_workload); the verdict follows the default */
		c->nwork = 2;
		c->work[1].reuse = FTRP_DEFAULT_REUSE;
		c->nfrac = 3;
		c->fractions[0] = 0.25;
		c->fractions[1] = 0.5;
		c->fractions[2] = 1;
		c->steps = 16;
		c->warmup_steps = 48;
		c->gpu_warmup = 2;
		return;
	}
	c->ncache = 2;
	c->cache[0] = 0.4;
	c->cache[1] = 0.7;
	c->nwork = 3;
	c->work[1].reuse = 0.6;
	c->work[2].reuse = 0.85;
	c->nfrac = (int)(sizeof sweep / sizeof *sweep);
	memcpy(c->fractions, sweep, sizeof sweep);
	c->ncaps = 1;
	c->caps[0] = 1;
}

static long slots_of(const struct ftrp_config *c, double frac, size_t expert_bytes)
{
	long E = c->model ? c->model->experts : 0, total = (long)c->layers * E, s;
	if (c->cache_slots > 0)
		s = c->cache_slots;
	else if (c->cache_bytes > 0)
		s = expert_bytes ? (long)(c->cache_bytes / (double)expert_bytes) : 0;
	else
		s = (long)ceil(frac * (double)total - 1e-9); /* the seed: ceil(L*E*rate) */
	long lo = (long)c->batch * (c->model ? c->model->topk : 1);
	if (s < lo)
		s = lo;
	if (s > total)
		s = total;
	return s;
}

long ftrp_config_slots(const struct ftrp_config *c, int i, size_t expert_bytes)
{
	return slots_of(c, c->cache[i], expert_bytes);
}

/* The fraction of layers x E a point's cache holds (the override's actual share). */
static double cache_fraction_of(const struct ftrp_config *c, int i, long slots)
{
	if (c->cache_slots > 0 || c->cache_bytes > 0)
		return (double)slots / ((double)c->layers * c->model->experts);
	return c->cache[i];
}

int ftrp_config_check(const struct ftrp_config *c, char *err, size_t errlen)
{
	if (!c->fmt || !c->model) {
		say("no format or model geometry");
		return -EINVAL;
	}
	if (!c->fmt->cpu_path) {
		say("%s has no CPU MoE path: there is no hybrid to replay (its verdict is offload)", c->fmt->name);
		return -EINVAL;
	}
	if (c->layers < 1 || c->layers > FTRP_MAX_LAYERS) {
		say("layers %d: expected 1..%d", c->layers, FTRP_MAX_LAYERS);
		return -EINVAL;
	}
	if (c->batch < 1 || c->batch > FTRP_MAX_BATCH) {
		say("batch %d: expected 1..%d", c->batch, FTRP_MAX_BATCH);
		return -EINVAL;
	}
	if (c->model->topk > FTRP_MAX_TOPK || c->model->experts > FTRP_MAX_EXPERTS) {
		say("%s: top-%d of %d experts is beyond the replay's limits (top-k <= %d, E <= %d)", c->model->name,
		    c->model->topk, c->model->experts, FTRP_MAX_TOPK, FTRP_MAX_EXPERTS);
		return -EINVAL;
	}
	if (c->steps < 4 || c->steps > 100000 || c->warmup_steps < 0 || c->gpu_warmup < 0) {
		say("steps %d: expected 4..100000 timed steps (warm-up >= 0)", c->steps);
		return -EINVAL;
	}
	if (c->ncache < 1 || c->ncache > FTRP_MAX_AXIS || c->nwork < 1 || c->nwork > FTRP_MAX_AXIS) {
		say("expected 1..%d cache sizes and 1..%d workloads", FTRP_MAX_AXIS, FTRP_MAX_AXIS);
		return -EINVAL;
	}
	for (int i = 0; i < c->ncache; i++)
		if (!(c->cache[i] > 0 && c->cache[i] <= 1)) {
			say("cache fraction %g: expected in (0, 1]", c->cache[i]);
			return -EINVAL;
		}
	for (int i = 0; i < c->nwork; i++)
		if (c->work[i].trace && !c->trace) {
			say("workload \"trace\" without a trace (--trace FILE)");
			return -EINVAL;
		}
	if (c->nfrac < 0 || c->nfrac > FTRP_MAX_SWEEP || c->ncaps < 0 || c->ncaps > FTRP_MAX_CAPS) {
		say("expected at most %d fetch fractions and %d caps", FTRP_MAX_SWEEP, FTRP_MAX_CAPS);
		return -EINVAL;
	}
	for (int i = 0; i < c->nfrac; i++)
		if (!(c->fractions[i] >= 0 && c->fractions[i] <= 1)) {
			say("fetch fraction %g: expected 0..1", c->fractions[i]);
			return -EINVAL;
		}
	for (int i = 0; i < c->ncaps; i++)
		if (c->caps[i] < 0) {
			say("cap %d: expected >= 0", c->caps[i]);
			return -EINVAL;
		}
	if (c->nfrac == 0 && c->ncaps == 0 && !(c->profile_fraction >= 0)) {
		say("no hybrid mode to compare with offload (no fetch fraction, cap or profile fraction)");
		return -EINVAL;
	}
	if (!isnan(c->profile_fraction) && !(c->profile_fraction >= 0 && c->profile_fraction <= 1)) {
		say("profile fetch fraction %g: expected 0..1", c->profile_fraction);
		return -EINVAL;
	}
	if (c->trace && (c->trace->experts != c->model->experts || c->trace->topk != c->model->topk ||
			 c->trace->batch != c->batch || c->trace->layers != c->layers)) {
		say("the trace is %d layers of top-%d of %d experts at batch %d; the replay runs %d layers of top-%d of %d "
		    "at batch %d",
		    c->trace->layers, c->trace->topk, c->trace->experts, c->trace->batch, c->layers, c->model->topk,
		    c->model->experts, c->batch);
		return -EINVAL;
	}
	if (ftrp_policy_check(&c->base)) {
		say("bad base policy");
		return -EINVAL;
	}
	return 0;
}

/* ---------------------------------------------------------------- a point */

/* The routing of workload wi: warm-up + untimed + timed steps (a trace: its steps, split so). */
static int point_workload(const struct ftrp_config *c, int wi, struct ftrp_workload *out, int *warm, int *untimed,
			  char *err, size_t errlen)
{
	const struct ftrp_work *w = &c->work[wi];
	if (w->trace) {
		int S = c->trace->steps, t = c->steps, g = c->gpu_warmup, wu = c->warmup_steps;
		if (S < t + g) {
			t = S - g - S / 4;
			if (t < 4) {
				say("the trace has %d steps: too few for %d untimed and 4 timed steps after a warm-up", S, g);
				return -EINVAL;
			}
		}
		if (wu > S - t - g)
			wu = S - t - g;
		*warm = wu;
		*untimed = g;
		return ftrp_workload_slice(c->trace, S - (wu + g + t), wu + g + t, out);
	}
	struct ftrp_gen g = {.skew = w->skew, .reuse = w->reuse, .seed = c->seed};
	*warm = c->warmup_steps;
	*untimed = c->gpu_warmup;
	return ftrp_generate(&g, c->layers, c->model->experts, c->model->topk, c->batch,
			     c->warmup_steps + c->gpu_warmup + c->steps, out, err, errlen);
}

/* Run the CPU reference over steps [from, to) of w; counts (may be NULL) of steps >= count_from. */
static int ref_steps(struct ftsc *sc, const struct ftrp_policy *p, const struct ftrp_workload *w, int from, int to,
		     int count_from, struct ftrp_counts *cnt)
{
	int n = w->batch * w->topk;
	int32_t slots[FTRP_MAX_BATCH * FTRP_MAX_TOPK], cpu[FTRP_MAX_BATCH * FTRP_MAX_TOPK];
	int32_t *src = malloc((size_t)w->experts * sizeof *src), *dst = malloc((size_t)w->experts * sizeof *dst);
	int r = src && dst ? 0 : -ENOMEM;
	struct ftsc_plan plan = {src, dst, w->experts, 0, 0};
	for (int s = from; s < to && !r; s++)
		for (int l = 0; l < w->layers && !r; l++)
			r = ftrp_ref_layer(sc, p, l, w->batch, w->topk, ftrp_ids(w, s, l), slots, cpu, &plan,
					   s >= count_from ? cnt : NULL);
	(void)n;
	free(src);
	free(dst);
	return r;
}

struct mode {
	const char *name;   /* offload, hybrid_profile, hybrid_fraction, hybrid_cap */
	struct ftrp_policy p;
};

static int modes_of(const struct ftrp_config *c, struct mode *m)
{
	int n = 0;
	m[n].name = "offload";
	m[n].p = c->base;
	m[n++].p.mode = FTRP_MODE_OFFLOAD;
	if (c->profile_fraction >= 0) {
		m[n].name = "hybrid_profile";
		m[n].p = c->base;
		m[n].p.mode = FTRP_MODE_FRACTION;
		m[n++].p.fraction = c->profile_fraction;
	}
	for (int i = 0; i < c->nfrac; i++) {
		m[n].name = "hybrid_fraction";
		m[n].p = c->base;
		m[n].p.mode = FTRP_MODE_FRACTION;
		m[n++].p.fraction = c->fractions[i];
	}
	for (int i = 0; i < c->ncaps; i++) {
		m[n].name = "hybrid_cap";
		m[n].p = c->base;
		m[n].p.mode = FTRP_MODE_CAP;
		m[n++].p.cap = c->caps[i];
	}
	return n;
}

static double pct(const double *v, int n, double p)
{
	return ftstat_percentile(v, n, p);
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static const char *winner_ci(const double *off, const double *hyb, int n, double ci[3]);

const char *ftrp_winner(const double *off, const double *hyb, int n)
{
	double ci[3];
	return winner_ci(off, hyb, n, ci);
}

/* ci: the interval's low end, the median, the high end of the paired ratios. */
static const char *winner_ci(const double *off, const double *hyb, int n, double ci[3])
{
	double *r = malloc((size_t)(n > 0 ? n : 1) * sizeof *r);
	ci[0] = ci[1] = ci[2] = NAN;
	if (!r || n < 1) {
		free(r);
		return "tie";
	}
	for (int i = 0; i < n; i++)
		r[i] = hyb[i] / off[i];
	qsort(r, (size_t)n, sizeof *r, cmp_dbl);
	/* the median's 95 % interval by order statistics: ranks n/2 -+ 0.98 sqrt(n) */
	double h = 0.98 * sqrt((double)n);
	int lo = (int)floor(n / 2.0 - h), hi = (int)ceil(n / 2.0 + h) - 1;
	lo = lo < 0 ? 0 : lo;
	hi = hi > n - 1 ? n - 1 : hi;
	const char *w = r[hi] < 1 ? "hybrid" : r[lo] > 1 ? "offload" : "tie";
	ci[0] = r[lo];
	ci[1] = n % 2 ? r[n / 2] : (r[n / 2 - 1] + r[n / 2]) / 2;
	ci[2] = r[hi];
	free(r);
	return w;
}

static json_t *ms_json(const double *s, int n)
{
	double *ms = malloc((size_t)n * sizeof *ms);
	if (!ms)
		return NULL;
	for (int i = 0; i < n; i++)
		ms[i] = s[i] * 1e3;
	json_t *j = json_pack("{s:f,s:f,s:f,s:i}", "median", pct(ms, n, 50), "p10", pct(ms, n, 10), "p90", pct(ms, n, 90),
			      "samples", n), *a = json_array();
	for (int i = 0; i < n; i++)
		json_array_append_new(a, json_real(round(ms[i] * 1e4) / 1e4));
	json_object_set_new(j, "steps_ms", a);
	free(ms);
	return j;
}

static double round_to(double v, double q)
{
	return round(v / q) * q;
}

/* ---------------------------------------------------------------- the run */

int ftrp_run(const struct ftrp_config *c, const struct ftrp_ops *ops, const struct ftreport *rep, json_t **out,
	     char *err, size_t errlen)
{
	struct mode modes[1 + 1 + FTRP_MAX_SWEEP + FTRP_MAX_CAPS];
	int r, nm, ndone = 0;
	char e2[256], label[128], wname[64];
	*out = NULL;
	if ((r = ftrp_config_check(c, err, errlen)))
		return r;
	nm = modes_of(c, modes);
	size_t eb = ftfmt_expert_bytes(c->fmt, c->model->hidden, c->model->inter);
	if (!eb) {
		say("%s does not fit %s's blocks (H %ld, I %ld)", c->model->name, c->fmt->name, c->model->hidden,
		    c->model->inter);
		return -EINVAL;
	}
	long slots_max = 0;
	for (int i = 0; i < c->ncache; i++)
		if (ftrp_config_slots(c, i, eb) > slots_max)
			slots_max = ftrp_config_slots(c, i, eb);
	if ((r = ops->open(ops->ctx, c, slots_max, e2, sizeof e2))) {
		say("%s: %s", c->fmt->name, e2);
		if (ops->close)
			ops->close(ops->ctx);
		return r;
	}
	const int total = c->ncache * c->nwork * nm;
	const int layers_model = c->layers_model > 0 ? c->layers_model : c->model->layers > 0 ? c->model->layers : 48;
	json_t *block = json_object(), *points = json_array();
	double *step_s = malloc((size_t)c->steps * sizeof *step_s * (size_t)(nm + 1));
	struct ftrp_workload w = {0}, timed = {0};
	struct ftsc warm = {0};
	if (!block || !points || !step_s) {
		r = -ENOMEM;
		goto out;
	}
	for (int wi = 0; wi < c->nwork; wi++) {
		int nwarm, untimed;
		ftrp_workload_release(&w);
		ftrp_workload_release(&timed);
		if ((r = point_workload(c, wi, &w, &nwarm, &untimed, e2, sizeof e2))) {
			say("workload %s: %s", ftrp_work_name(&c->work[wi], wname, sizeof wname), e2);
			goto out;
		}
		const int nt = w.steps - nwarm - untimed;
		if ((r = ftrp_workload_slice(&w, nwarm, w.steps - nwarm, &timed)))
			goto out;
		double reuse_measured = ftrp_workload_reuse(&w);
		for (int ci = 0; ci < c->ncache; ci++) {
			long slots = ftrp_config_slots(c, ci, eb);
			json_t *pt = json_object(), *jm = json_array();
			if (!pt || !jm) {
				json_decref(pt);
				json_decref(jm);
				r = -ENOMEM;
				goto out;
			}
			json_array_append_new(points, pt);
			json_object_set_new(pt, "cache_fraction", json_real(round_to(cache_fraction_of(c, ci, slots), 1e-6)));
			json_object_set_new(pt, "slots", json_integer(slots));
			json_object_set_new(pt, "cache_gib", json_real(round_to((double)slots * (double)eb / 1073741824.0, 1e-3)));
			json_object_set_new(pt, "workload", json_string(ftrp_work_name(&c->work[wi], wname, sizeof wname)));
			json_object_set_new(pt, "reuse", json_real(c->work[wi].trace ? round_to(reuse_measured, 1e-3)
										 : c->work[wi].reuse));
			json_object_set_new(pt, "skew", json_real(c->work[wi].skew));
			json_object_set_new(pt, "reuse_measured", isnan(reuse_measured) ? json_null()
									   : json_real(round_to(reuse_measured, 1e-4)));
			json_object_set_new(pt, "modes", jm);
			int best = -1, best_frac = -1;
			for (int mi = 0; mi < nm; mi++) {
				const struct ftrp_policy *p = &modes[mi].p;
				double *ts = step_s + (size_t)mi * (size_t)c->steps;
				struct ftrp_counts want = {0}, got = {0};
				snprintf(label, sizeof label, "replay:%s:cache %g:%s:%s", c->fmt->name, c->cache[ci], wname,
					 modes[mi].name);
				ftreport_progress(rep, ndone, total, label);
				ftsc_release(&warm);
				struct ftsc ref = {0};
				if ((r = ftsc_init(&warm, c->layers, c->model->experts, (int)slots)) ||
				    (r = ref_steps(&warm, p, &w, 0, nwarm, nwarm, NULL)) ||
				    (r = ftsc_init(&ref, c->layers, c->model->experts, (int)slots)) ||
				    (r = ftsc_copy(&ref, &warm)) ||
				    (r = ref_steps(&ref, p, &timed, 0, timed.steps, untimed, &want))) {
					ftsc_release(&ref);
					say("%s: the CPU reference failed on %s (cache %ld slots): %s", c->fmt->name, wname, slots,
					    strerror(-r));
					goto out;
				}
				ftsc_release(&ref);
				if ((r = ops->run(ops->ctx, &warm, &timed, untimed, p, ts, &got, e2, sizeof e2))) {
					say("%s, %s, cache %ld slots, %s: %s", c->fmt->name, wname, slots, modes[mi].name, e2);
					goto out;
				}
				if (memcmp(&want, &got, sizeof want)) {
					say("%s, %s, cache %ld slots, %s: the device's decisions differ from the CPU reference "
					    "(misses %lld/%lld, fetched %lld/%lld, CPU %lld/%lld over %lld layer-steps)",
					    c->fmt->name, wname, slots, modes[mi].name, got.misses, want.misses, got.fetched,
					    want.fetched, got.cpu, want.cpu, got.layer_steps);
					r = -EPROTO;
					goto out;
				}
				double med = pct(ts, nt, 50);
				json_t *o = json_pack("{s:s}", "mode", modes[mi].name);
				if (p->mode == FTRP_MODE_FRACTION)
					json_object_set_new(o, "fetch_fraction", json_real(round_to(p->fraction, 1e-6)));
				if (p->mode == FTRP_MODE_CAP)
					json_object_set_new(o, "cap", json_integer(p->cap));
				json_object_set_new(o, "ms_step", ms_json(ts, nt));
				json_object_set_new(o, "tok_s", json_real(round_to(c->batch / (med * layers_model / c->layers), 1e-3)));
				double ls = (double)got.layer_steps;
				json_object_set_new(o, "miss_rate", json_real(round_to(ftrp_counts_miss_rate(&got), 1e-5)));
				json_object_set_new(o, "fetched_per_layer", json_real(round_to(got.fetched / ls, 1e-4)));
				json_object_set_new(o, "cpu_per_layer", json_real(round_to(got.cpu / ls, 1e-4)));
				json_array_append_new(jm, o);
				if (mi > 0 && (best < 0 || med < pct(step_s + (size_t)best * (size_t)c->steps, nt, 50)))
					best = mi;
				if (p->mode == FTRP_MODE_FRACTION &&
				    (best_frac < 0 || med < pct(step_s + (size_t)best_frac * (size_t)c->steps, nt, 50)))
					best_frac = mi;
				ndone++;
			}
			double off_med = pct(step_s, nt, 50), hyb_med = pct(step_s + (size_t)best * (size_t)c->steps, nt, 50);
			double rci[3];
			const char *win = winner_ci(step_s, step_s + (size_t)best * (size_t)c->steps, nt, rci);
			json_object_set_new(pt, "winner", json_string(win));
			json_object_set_new(pt, "ratio", json_pack("{s:f,s:f,s:f}", "median", round_to(rci[1], 1e-4), "ci_low",
								  round_to(rci[0], 1e-4), "ci_high", round_to(rci[2], 1e-4)));
			json_t *bm = json_pack("{s:s}", "mode", modes[best].name);
			if (modes[best].p.mode == FTRP_MODE_FRACTION)
				json_object_set_new(bm, "fetch_fraction", json_real(round_to(modes[best].p.fraction, 1e-6)));
			else
				json_object_set_new(bm, "cap", json_integer(modes[best].p.cap));
			json_object_set_new(pt, "best_hybrid", bm);
			json_object_set_new(pt, "best_fetch_fraction",
					    best_frac >= 0 ? json_real(round_to(modes[best_frac].p.fraction, 1e-6)) : json_null());
			json_object_set_new(pt, "speedup", json_real(round_to(off_med / hyb_med, 1e-4)));
			json_object_set_new(pt, "bandwidth_verdict", c->bandwidth_verdict ? json_string(c->bandwidth_verdict)
											 : json_null());
			json_object_set_new(pt, "agrees", !c->bandwidth_verdict || !strcmp(win, "tie")
								 ? json_null()
								 : json_boolean(!strcmp(win, c->bandwidth_verdict)));
		}
	}
	ftreport_progress(rep, total, total, "replay:done");
	json_object_set_new(block, "format", json_string(c->fmt->name));
	json_object_set_new(block, "model", json_pack("{s:s,s:I,s:I,s:i,s:i,s:i,s:s}", "name", c->model->name, "hidden",
						      (json_int_t)c->model->hidden, "inter", (json_int_t)c->model->inter,
						      "experts", c->model->experts, "top_k", c->model->topk, "layers",
						      layers_model, "act", ftfmt_act_name(c->model->act)));
	json_object_set_new(block, "expert_bytes", json_integer((json_int_t)eb));
	json_object_set_new(block, "layers_run", json_integer(c->layers));
	json_object_set_new(block, "layers_model", json_integer(layers_model));
	json_object_set_new(block, "batch", json_integer(c->batch));
	json_object_set_new(block, "steps", json_pack("{s:i,s:i,s:i}", "warmup_reference", c->warmup_steps, "warmup_device",
						      c->gpu_warmup, "timed", c->steps));
	json_object_set_new(block, "seed", json_integer((json_int_t)c->seed));
	json_object_set_new(block, "policy",
			    json_pack("{s:s,s:b,s:i,s:o}", "fetch_order", c->base.order == FTSC_ORDER_LOWEST_ID ? "lowest_id" : "recency",
				      "overlap", c->base.overlap, "offload_from_batch", c->base.offload_from_batch,
				      "profile_fetch_fraction", isnan(c->profile_fraction) ? json_null()
										: json_real(round_to(c->profile_fraction, 1e-6))));
	if (c->profile_fraction_from)
		json_object_set_new(json_object_get(block, "policy"), "profile_fetch_fraction_from",
				    json_string(c->profile_fraction_from));
	json_object_set_new(block, "default_point", json_pack("{s:f,s:f}", "cache_fraction", c->default_cache, "reuse",
							      c->default_reuse));
	if (ops->describe)
		ops->describe(ops->ctx, block);
	json_object_set_new(block, "hybrid_stops_at_reuse", ftrp_stops_at(points));
	json_object_set_new(block, "points", points);
	points = NULL;
	const json_t *dp = ftrp_nearest_point(block, c->default_cache, c->default_reuse);
	if (dp)
		json_object_set_new(block, "default_winner", json_incref(json_object_get(dp, "winner")));
	*out = block;
	block = NULL;
out:
	if (ops->close)
		ops->close(ops->ctx);
	json_decref(block);
	json_decref(points);
	free(step_s);
	ftsc_release(&warm);
	ftrp_workload_release(&w);
	ftrp_workload_release(&timed);
	return r;
}

/* ---------------------------------------------------------------- the map */

static int cmp_reuse(const void *a, const void *b)
{
	double x = json_real_value(json_object_get(*(json_t *const *)a, "reuse"));
	double y = json_real_value(json_object_get(*(json_t *const *)b, "reuse"));
	return x < y ? -1 : x > y;
}

json_t *ftrp_stops_at(const json_t *points)
{
	json_t *out = json_object();
	size_t n = json_array_size(points), i, j;
	const json_t **row = calloc(n ? n : 1, sizeof *row);
	double *done = calloc(n ? n : 1, sizeof *done);
	int nd = 0;
	if (!out || !row || !done) {
		free(row);
		free(done);
		return out;
	}
	for (i = 0; i < n; i++) {
		const json_t *p = json_array_get(points, i);
		double cf = json_number_value(json_object_get(p, "cache_fraction"));
		int seen = 0;
		for (int k = 0; k < nd; k++)
			seen |= done[k] == cf;
		if (seen)
			continue;
		done[nd++] = cf;
		size_t m = 0;
		for (j = 0; j < n; j++) {
			const json_t *q = json_array_get(points, j);
			if (json_number_value(json_object_get(q, "cache_fraction")) == cf &&
			    json_number_value(json_object_get(q, "skew")) == 0)
				row[m++] = q;
		}
		if (!m)
			continue;
		qsort(row, m, sizeof *row, cmp_reuse);
		char key[32];
		snprintf(key, sizeof key, "%g", cf);
#define WIN(q) (!strcmp(json_string_value(json_object_get(q, "winner")) ?: "", "hybrid"))
#define REU(q) json_number_value(json_object_get(q, "reuse"))
#define SPD(q) json_number_value(json_object_get(q, "speedup"))
		size_t k = 0;
		while (k < m && WIN(row[k]))
			k++;
		if (k == m) {
			json_object_set_new(out, key, json_null());
		} else if (k == 0) {
			json_object_set_new(out, key, json_real(REU(row[0])));
		} else {
			double ra = REU(row[k - 1]), rb = REU(row[k]), sa = SPD(row[k - 1]), sb = SPD(row[k]);
			double r = sa > 1 && sb < sa ? ra + (rb - ra) * (sa - 1) / (sa - sb) : rb;
			if (r > rb)
				r = rb;
			json_object_set_new(out, key, json_real(round_to(r, 1e-4)));
		}
#undef WIN
#undef REU
#undef SPD
	}
	free(row);
	free(done);
	return out;
}
