/* validation: validation.<fmt> records from engine runs. See validation.h. */
#include "bench/validation.h"
#include "ftprofile.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

void ftval_opts_default(struct ftval_opts *o)
{
	memset(o, 0, sizeof *o);
	o->cache_fraction = NAN;
	o->measured_epoch = NAN;
}

static double num(const json_t *o, const char *k)
{
	const json_t *v = json_object_get(o, k);
	return json_is_number(v) ? json_number_value(v) : NAN;
}

static json_t *num_or_null(double x)
{
	return isfinite(x) ? json_real(x) : json_null();
}

int ftval_formats(const json_t *doc, const char **names, int max)
{
	const char *f = json_string_value(json_object_get(doc, "format"));
	if (!f || strcmp(f, "ftbench-engine-moe"))
		return 0;
	int n = 0;
	size_t i;
	json_t *pt;
	json_array_foreach(json_object_get(doc, "points"), i, pt) {
		const char *pf = json_string_value(json_object_get(pt, "format"));
		int seen = 0;
		for (int k = 0; pf && k < n; k++)
			seen |= !strcmp(names[k], pf);
		if (pf && !seen && n < max)
			names[n++] = pf;
	}
	return n;
}

/* The decode --compare summary in doc, or NULL. */
static const json_t *compare_summary(const json_t *doc)
{
	const char *kind = json_string_value(json_object_get(doc, "kind"));
	if (kind && !strcmp(kind, "decode_compare"))
		return doc;
	const json_t *c = json_object_get(doc, "compare");
	kind = json_string_value(json_object_get(c, "kind"));
	return kind && !strcmp(kind, "decode_compare") ? c : NULL;
}

/* A harness arm's label: "offload", "hybrid f=0.35", "hybrid cap=2", "+ (profile NAME)". */
static void arm_label(const json_t *a, char *buf, size_t n)
{
	const char *mode = json_string_value(json_object_get(a, "mode"));
	const char *prof = json_string_value(json_object_get(a, "profile"));
	double f = num(a, "fetch_fraction"), cap = num(a, "cap");
	size_t u = (size_t)snprintf(buf, n, "%s", mode ? mode : "?");
	if (u < n && isfinite(f))
		u += (size_t)snprintf(buf + u, n - u, " f=%g", f);
	else if (u < n && isfinite(cap))
		u += (size_t)snprintf(buf + u, n - u, " cap=%g", cap);
	if (u < n && prof)
		snprintf(buf + u, n - u, " (profile %s)", prof);
}

static int from_harness(const json_t *doc, const char *format, const struct ftval_opts *o, json_t *rec, char *err,
			size_t errlen)
{
	const json_t *pick = NULL, *first = NULL;
	size_t i;
	json_t *pt;
	json_array_foreach(json_object_get(doc, "points"), i, pt) {
		const char *pf = json_string_value(json_object_get(pt, "format"));
		const char *w = json_string_value(json_object_get(pt, "workload"));
		if (!pf || strcmp(pf, format) || !w)
			continue;
		if (isfinite(o->cache_fraction) && !(fabs(num(pt, "cache_fraction") - o->cache_fraction) < 1e-9))
			continue;
		if (o->workload ? !strcmp(w, o->workload) : !strcmp(w, "uniform")) {
			pick = pt;
			break;
		}
		if (!o->workload && !first)
			first = pt;
	}
	if (!pick)
		pick = first;
	if (!pick) {
		snprintf(err, errlen, "the harness run has no point for %s%s%s%s", format, o->workload ? ", workload " : "",
			 o->workload ? o->workload : "", isfinite(o->cache_fraction) ? " at that cache size" : "");
		return -EINVAL;
	}
	const char *winner = json_string_value(json_object_get(pick, "winner"));
	if (!winner || (strcmp(winner, "hybrid") && strcmp(winner, "offload") && strcmp(winner, "tie"))) {
		snprintf(err, errlen, "the harness point for %s names no winner", format);
		return -EINVAL;
	}
	json_t *figs = json_array(), *arms = json_array();
	json_array_foreach(json_object_get(pick, "arms"), i, pt) {
		const json_t *ms = json_object_get(pt, "ms_per_step");
		double med = num(ms, "median");
		if (!isfinite(med) || med <= 0)
			continue;
		char label[128];
		arm_label(pt, label, sizeof label);
		json_array_append_new(arms, json_string(label));
		json_array_append_new(
			figs, json_pack("{s:s,s:O,s:o,s:o,s:{s:f,s:o,s:o},s:f}", "arm", label, "mode",
					json_object_get(pt, "mode"), "fetch_fraction", num_or_null(num(pt, "fetch_fraction")),
					"miss_rate", num_or_null(num(pt, "miss_rate")), "ms_per_step", "median", med, "p10",
					num_or_null(num(ms, "p10")), "p90", num_or_null(num(ms, "p90")), "tok_s",
					1000.0 / med));
	}
	if (json_array_size(figs) < 2) {
		json_decref(figs);
		json_decref(arms);
		snprintf(err, errlen, "the harness point for %s has fewer than two measured arms", format);
		return -EINVAL;
	}
	const json_t *eng = json_object_get(doc, "engine");
	json_t *e = json_pack("{s:O?,s:O?,s:o}", "name", json_object_get(eng, "name"), "version",
			      json_object_get(eng, "version"), "arms", arms);
	if (json_object_get(eng, "commit"))
		json_object_set(e, "commit", json_object_get(eng, "commit"));
	json_object_set_new(rec, "source", json_string("engine"));
	json_object_set_new(rec, "level", json_string("module"));
	json_object_set_new(rec, "engine", e);
	json_object_set(rec, "workload", json_object_get(pick, "workload"));
	json_object_set_new(rec, "cache_fraction", num_or_null(num(pick, "cache_fraction")));
	json_object_set_new(rec, "reuse", num_or_null(num(pick, "trace_reuse")));
	json_object_set_new(rec, "unit", json_string("ms_per_step"));
	json_object_set_new(rec, "figures", figs);
	json_object_set_new(rec, "winner", json_string(winner));
	json_object_set_new(rec, "best_fetch_fraction", num_or_null(num(pick, "best_fetch_fraction")));
	json_object_set_new(rec, "measured_epoch", num_or_null(num(doc, "epoch")));
	return 0;
}

static int from_compare(const json_t *s, const struct ftval_opts *o, json_t *rec, char *err, size_t errlen)
{
	json_t *figs = json_array(), *arms = json_array();
	const char *winner = NULL, *decision = json_string_value(json_object_get(s, "decision"));
	const char *warm = json_string_value(json_object_get(s, "winner"));
	size_t i;
	json_t *a;
	json_array_foreach(json_object_get(s, "arms"), i, a) {
		const char *label = json_string_value(json_object_get(a, "arm"));
		const char *be = json_string_value(json_object_get(json_object_get(a, "settings"), "moe-backend"));
		const json_t *t = json_object_get(a, "decode_tok_s");
		if (!label || !be)
			continue;
		json_array_append_new(arms, json_string(label));
		if (warm && !strcmp(warm, label))
			winner = be;
		if (!isfinite(num(t, "median")))
			continue;
		json_array_append_new(figs, json_pack("{s:s,s:s,s:{s:f,s:o,s:o}}", "arm", label, "mode", be, "tok_s",
						      "median", num(t, "median"), "min", num_or_null(num(t, "min")),
						      "max", num_or_null(num(t, "max"))));
	}
	if (decision && !strcmp(decision, "tie"))
		winner = "tie";
	if (json_array_size(figs) < 2 || !winner || (strcmp(winner, "hybrid") && strcmp(winner, "offload") &&
						     strcmp(winner, "tie"))) {
		snprintf(err, errlen, "the decode --compare summary has no verdict between moe-backend arms "
				      "(decision %s, %zu arms measured)", decision ? decision : "missing",
			 json_array_size(figs));
		json_decref(figs);
		json_decref(arms);
		return -EINVAL;
	}
	const char *kind = json_string_value(json_object_get(s, "server_kind"));
	const char *ver = o->engine_version ? o->engine_version
					    : json_string_value(json_object_get(s, "engine_version"));
	json_object_set_new(rec, "source", json_string("engine"));
	json_object_set_new(rec, "level", json_string("server"));
	json_object_set_new(rec, "engine", json_pack("{s:s,s:s?,s:o}", "name", kind ? kind : "unknown", "version", ver,
						     "arms", arms));
	json_object_set(rec, "workload", json_object_get(s, "prompt_source"));
	json_object_set_new(rec, "unit", json_string("tok_s"));
	json_object_set_new(rec, "figures", figs);
	json_object_set_new(rec, "winner", json_string(winner));
	json_object_set_new(rec, "best_fetch_fraction", json_null());
	json_object_set_new(rec, "measured_epoch", num_or_null(num(s, "epoch")));
	return 0;
}

int ftval_build(const json_t *doc, const char *format, const struct ftval_opts *o, double profile_epoch,
		json_t **out, char *err, size_t errlen)
{
	struct ftval_opts def;
	if (!o) {
		ftval_opts_default(&def);
		o = &def;
	}
	*out = NULL;
	if (!json_is_object(doc) || !format) {
		snprintf(err, errlen, "not a JSON object");
		return -EINVAL;
	}
	json_t *rec = json_object();
	if (!rec)
		return -ENOMEM;
	const char *f = json_string_value(json_object_get(doc, "format"));
	const json_t *cs = compare_summary(doc);
	const char *src = json_string_value(json_object_get(doc, "source"));
	int r;
	if (f && !strcmp(f, "ftbench-engine-moe")) {
		r = from_harness(doc, format, o, rec, err, errlen);
	} else if (cs) {
		r = from_compare(cs, o, rec, err, errlen);
	} else if (src && (!strcmp(src, "engine") || !strcmp(src, "replay")) &&
		   json_is_string(json_object_get(doc, "winner"))) {
		json_object_update(rec, (json_t *)doc);
		r = 0;
	} else {
		snprintf(err, errlen, "neither a seed engine harness run (format ftbench-engine-moe), a decode "
				      "--compare summary (kind decode_compare) nor a validation record");
		r = -EINVAL;
	}
	if (r == 0 && isfinite(o->measured_epoch))
		json_object_set_new(rec, "measured_epoch", json_real(o->measured_epoch));
	if (r == 0 && !isfinite(num(rec, "measured_epoch"))) {
		snprintf(err, errlen, "the run does not say when it was measured (give --measured-epoch)");
		r = -EINVAL;
	}
	if (r < 0) {
		json_decref(rec);
		return r;
	}
	ftval_judge(rec, NULL, NAN, NAN);
	json_object_set_new(rec, "profile_epoch", num_or_null(profile_epoch));
	*out = rec;
	return 0;
}

void ftval_judge(json_t *rec, const char *verdict, double point_cache, double point_reuse)
{
	const char *winner = json_string_value(json_object_get(rec, "winner"));
	bool known = winner && verdict && (!strcmp(verdict, "hybrid") || !strcmp(verdict, "offload"));
	json_object_set_new(rec, "verdict", known ? json_string(verdict) : json_null());
	json_object_set_new(rec, "verdict_point", known && isfinite(point_cache) && isfinite(point_reuse)
							  ? json_pack("{s:f,s:f}", "cache_fraction", point_cache, "reuse",
								      point_reuse)
							  : json_null());
	json_object_set_new(rec, "agrees", !known ? json_null()
					   : json_boolean(!strcmp(winner, "tie") || !strcmp(winner, verdict)));
}

void ftval_judge_profile(json_t *rec, const struct ftprof *p, const char *format)
{
	const json_t *c = json_object_get(rec, "cache_fraction"), *r = json_object_get(rec, "reuse");
	double pc, pr;
	if (json_is_number(c) && json_is_number(r) &&
	    ftprof_workload_point(p, format, json_number_value(c), json_number_value(r), &pc, &pr, NULL) == 0) {
		enum ftprof_rec w = ftprof_recommend_workload(p, format, json_number_value(c), json_number_value(r), NULL);
		ftval_judge(rec, ftprof_rec_name(w), pc, pr);
		return;
	}
	enum ftprof_rec d = ftprof_recommend(p, format);
	ftval_judge(rec, d == FTPROF_REC_NONE ? NULL : ftprof_rec_name(d), NAN, NAN);
}
