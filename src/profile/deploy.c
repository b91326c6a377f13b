/* libftprofile: the deployment a profile's verdicts were chosen for, and the verdict and fetch
 * fraction of either deployment (ftbench bw --gpu all writes both; see ftprofile.h). */
#include "ftprofile.h"

#include <errno.h>
#include <math.h>
#include <string.h>

const char *ftprof_deployment_name(enum ftprof_deployment d)
{
	switch (d) {
	case FTPROF_DEPLOY_ISOLATED: return "isolated";
	case FTPROF_DEPLOY_CONCURRENT: return "concurrent";
	case FTPROF_DEPLOY_PROFILE: break;
	}
	return "profile";
}

int ftprof_deployment_parse(const char *s, enum ftprof_deployment *d)
{
	if (!s || !d)
		return -EINVAL;
	if (!strcmp(s, "isolated"))
		*d = FTPROF_DEPLOY_ISOLATED;
	else if (!strcmp(s, "concurrent"))
		*d = FTPROF_DEPLOY_CONCURRENT;
	else if (!strcmp(s, "profile"))
		*d = FTPROF_DEPLOY_PROFILE;
	else
		return -EINVAL;
	return 0;
}

enum ftprof_deployment ftprof_deployment(const struct ftprof *p)
{
	const char *s = json_string_value(json_object_get(ftprof_json(p), "deployment"));
	return s && !strcmp(s, "concurrent") ? FTPROF_DEPLOY_CONCURRENT : FTPROF_DEPLOY_ISOLATED;
}

static enum ftprof_deployment resolve(const struct ftprof *p, enum ftprof_deployment d)
{
	return d == FTPROF_DEPLOY_ISOLATED || d == FTPROF_DEPLOY_CONCURRENT ? d : ftprof_deployment(p);
}

/* The verdict an ENTRY holds for deployment d (not the recorded one): 0 none. */
static enum ftprof_rec entry_rec(const json_t *e, enum ftprof_deployment d)
{
	const json_t *v = d == FTPROF_DEPLOY_CONCURRENT ? json_object_get(json_object_get(e, "concurrent"), "recommended")
							: json_object_get(e, "recommended_isolated");
	const char *s = json_string_value(v);
	if (!s)
		return FTPROF_REC_NONE;
	return !strcmp(s, "hybrid") ? FTPROF_REC_HYBRID : !strcmp(s, "offload") ? FTPROF_REC_OFFLOAD : FTPROF_REC_NONE;
}

enum ftprof_rec ftprof_recommend_deployment(const struct ftprof *p, const char *format, enum ftprof_deployment d)
{
	const char *fmt = ftprof_canonical_format(format);
	const json_t *root = ftprof_json(p), *w;
	const char *name;
	int carried = 0, hybrid = 0;
	if (!p || !fmt)
		return FTPROF_REC_NONE;
	d = resolve(p, d);
	if (d == ftprof_deployment(p))
		return ftprof_recommend(p, format); /* the seed's fields carry it */
	/* the other deployment: from the entries, in the shape of the seed rule */
	enum ftprof_rec r = entry_rec(json_object_get(json_object_get(root, "dtype_kernels"), fmt), d);
	if (r != FTPROF_REC_NONE)
		return r;
	json_object_foreach((json_t *)json_object_get(root, "workloads"), name, w) {
		r = entry_rec(json_object_get(json_object_get(w, "kernels"), fmt), d);
		if (r == FTPROF_REC_NONE)
			continue;
		carried++;
		hybrid += r == FTPROF_REC_HYBRID;
	}
	if (!carried)
		return FTPROF_REC_NONE;
	return hybrid == carried ? FTPROF_REC_HYBRID : FTPROF_REC_OFFLOAD;
}

static double num(const json_t *o, const char *k)
{
	const json_t *v = json_object_get(o, k);
	return json_is_number(v) && isfinite(json_number_value(v)) ? json_number_value(v) : NAN;
}

/* The fraction of a concurrent block: its fetch_fraction, else the overlap pair, else the plain
 * pair (the seed's rule), at most 1. */
static int block_fraction(const json_t *b, double *out)
{
	double f = num(b, "fetch_fraction");
	if (!json_is_object(b))
		return -ENODATA;
	if (!(f > 0)) {
		double pov = num(b, "pcie_gather_overlap_gbs"), cov = num(b, "cpu_moe_overlap_gbs");
		double pcie = num(b, "pcie_gather_gbs"), cpu = num(b, "cpu_moe_gbs");
		if (pov > 0 && cov > 0)
			f = pov / (pov + cov);
		else if (pcie > 0 && cpu > 0)
			f = pcie / cpu;
		else
			return -ENODATA;
	}
	if (!(f > 0) || !isfinite(f))
		return -ENODATA;
	*out = f > 1.0 ? 1.0 : f;
	return 0;
}

int ftprof_fetch_fraction_deployment(const struct ftprof *p, const char *format, enum ftprof_deployment d,
				     double *fraction)
{
	const char *fmt = ftprof_canonical_format(format);
	const json_t *root = ftprof_json(p), *w;
	const char *name;
	if (!p || !fmt || !fraction)
		return -EINVAL;
	if (resolve(p, d) == FTPROF_DEPLOY_ISOLATED)
		return ftprof_fetch_fraction(p, format, fraction); /* the seed's figures are the isolated ones */
	/* dtype_kernels first, then the workloads in file order: the first block that yields */
	if (!block_fraction(json_object_get(json_object_get(json_object_get(root, "dtype_kernels"), fmt), "concurrent"),
			    fraction))
		return 0;
	json_object_foreach((json_t *)json_object_get(root, "workloads"), name, w) {
		if (!block_fraction(json_object_get(json_object_get(json_object_get(w, "kernels"), fmt), "concurrent"),
				    fraction))
			return 0;
	}
	return -ENODATA;
}
