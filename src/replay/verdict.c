/* verdict: the replay map's answers that need nothing but the JSON (replay.h): the point nearest a
 * workload, and the seed-read verdict fields following the default point. Kept apart from the
 * replay's runner so that the daemon's kinds (its replay job's end hook) link only this. */
#include "replay/replay.h"

#include <math.h>
#include <string.h>

const json_t *ftrp_nearest_point(const json_t *block, double cf, double reuse)
{
	const json_t *pts = json_object_get(block, "points"), *best = NULL, *p;
	double bd = INFINITY;
	size_t i;
	json_array_foreach(pts, i, p) {
		const json_t *s = json_object_get(p, "skew");
		if (s && json_number_value(s) != 0)
			continue;
		double a = json_number_value(json_object_get(p, "cache_fraction")) - cf;
		double b = json_number_value(json_object_get(p, "reuse")) - reuse;
		double d = a * a + b * b;
		if (d < bd) {
			bd = d;
			best = p;
		}
	}
	return best;
}

/* The seed reader's fetch fraction follows the default point's best f (docs/REPLAY.md §3): the
 * overlap pair it reads gets cpu_moe_overlap_gbs = pcie_ov x (1 - f) / f (f clamped to
 * [0.01, 0.99]), so that pcie_ov / (pcie_ov + cpu_ov) = f; the measured figure and its spread
 * move to cpu_moe_overlap_gbs_measured (+_spread) once, and later replays start from them. */
static void follow_fraction(json_t *e, const json_t *pt)
{
	const json_t *bf = json_object_get(pt, "best_fetch_fraction");
	json_t *m = json_object_get(e, "cpu_moe_overlap_gbs_measured");
	double pov = json_number_value(json_object_get(e, "pcie_gather_overlap_gbs"));
	double cov = json_number_value(m ? m : json_object_get(e, "cpu_moe_overlap_gbs"));
	if (!json_is_number(bf) || !(pov > 0) || !(cov > 0))
		return;
	double f = json_number_value(bf);
	f = f < 0.01 ? 0.01 : f > 0.99 ? 0.99 : f;
	double k = pov * (1 - f) / f / cov;
	if (!m) {
		json_t *sp = json_object_get(e, "cpu_moe_overlap_gbs_spread");
		json_object_set_new(e, "cpu_moe_overlap_gbs_measured", json_real(cov));
		json_object_set_new(e, "cpu_moe_overlap_gbs_measured_spread", sp ? json_deep_copy(sp) : json_null());
	}
	json_t *msp = json_object_get(e, "cpu_moe_overlap_gbs_measured_spread");
	if (json_is_object(msp)) {
		json_t *sp = json_deep_copy(msp);
		const char *key;
		json_t *v;
		json_object_foreach(sp, key, v)
			if (strcmp(key, "samples") && json_is_number(v))
				json_object_set_new(sp, key, json_real(json_number_value(v) * k));
		json_object_set_new(e, "cpu_moe_overlap_gbs_spread", sp);
	}
	json_object_set_new(e, "cpu_moe_overlap_gbs", json_real(cov * k));
	json_object_set_new(e, "fetch_fraction_by", json_string("replay"));
	json_object_set_new(e, "fetch_fraction_replay", json_real(json_number_value(bf)));
}

int ftrp_apply_verdicts(json_t *profile)
{
	json_t *rp = json_object_get(profile, "replay"), *block;
	const char *fmt;
	int changed = 0;
	if (!json_is_object(rp))
		return 0;
	json_t *dtypes = json_object_get(profile, "dtypes"), *dk = json_object_get(profile, "dtype_kernels");
	json_object_foreach(rp, fmt, block) {
		const json_t *dp = json_object_get(block, "default_point");
		const json_t *pt = ftrp_nearest_point(block, json_number_value(json_object_get(dp, "cache_fraction")),
						      json_number_value(json_object_get(dp, "reuse")));
		const char *win = pt ? json_string_value(json_object_get(pt, "winner")) : NULL;
		json_t *entry = json_is_object(dk) ? json_object_get(dk, fmt) : NULL;
		const char *old = entry ? json_string_value(json_object_get(entry, "recommended")) : NULL;
		if (entry && old && !json_object_get(entry, "recommended_bandwidth"))
			json_object_set_new(entry, "recommended_bandwidth", json_string(old));
		if (entry && pt)
			follow_fraction(entry, pt);
		if (!win || !strcmp(win, "tie")) {
			if (entry)
				json_object_set_new(entry, "recommended_by", json_string("bandwidth"));
			continue;
		}
		if (entry) {
			json_object_set_new(entry, "recommended", json_string(win));
			json_object_set_new(entry, "recommended_by", json_string("replay"));
		}
		if (json_is_object(dtypes)) {
			const char *was = json_string_value(json_object_get(dtypes, fmt));
			changed += !was || strcmp(was, win);
			json_object_set_new(dtypes, fmt, json_string(win));
		}
	}
	return changed;
}
