/* libftprofile: loading a profile and the seed reader's rules (reference §5 "Reader"). */
#include "ftprofile.h"
#include "profile_internal.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/fsutil.h"

struct ftprof {
	json_t *root;
	char *source;
};

int ftprof_version(void)
{
	return FTPROF_VERSION;
}

const char *ftprof_rec_name(enum ftprof_rec rec)
{
	switch (rec) {
	case FTPROF_REC_OFFLOAD: return "offload";
	case FTPROF_REC_HYBRID: return "hybrid";
	case FTPROF_REC_NONE: break;
	}
	return "none";
}

/* The seed system's aliases (reference §1). Kept here so libftprofile needs nothing but
 * jansson; tests/unit/test_profile.c checks it agrees with moe/formats. */
static const struct {
	const char *alias, *canonical;
} aliases[] = {
	{"mxfp4", "mxfp4_triton"},
	{"fp8", "fp8_block"},
};

const char *ftprof_canonical_format(const char *fmt)
{
	if (!fmt)
		return NULL;
	for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
		if (!strcmp(fmt, aliases[i].alias))
			return aliases[i].canonical;
	return fmt;
}

static void seterr(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void seterr(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* The minimal shape every reader relies on; deeper entries are checked where they are used. */
static int check_shape(const json_t *root, const char **what)
{
	const json_t *v;
	static const char *const objs[] = {"dtypes", "dtype_kernels", "workloads"};
	static const char *const objs_msg[] = {"\"dtypes\" is not an object",
					       "\"dtype_kernels\" is not an object",
					       "\"workloads\" is not an object"};

	if (!json_is_object(root)) {
		*what = "the top level is not a JSON object";
		return -EINVAL;
	}
	v = json_object_get(root, "version");
	if (!v) {
		*what = "no \"version\"";
		return -EINVAL;
	}
	if (!json_is_integer(v) || json_integer_value(v) < 1) {
		*what = "\"version\" is not a positive integer";
		return -EINVAL;
	}
	v = json_object_get(root, "gpu");
	if (v && !json_is_null(v)) {
		const json_t *u, *n;
		if (!json_is_object(v)) {
			*what = "\"gpu\" is neither an object nor null";
			return -EINVAL;
		}
		u = json_object_get(v, "uuid");
		n = json_object_get(v, "name");
		if (u && !json_is_string(u) && !json_is_null(u)) {
			*what = "\"gpu.uuid\" is not a string";
			return -EINVAL;
		}
		if (n && !json_is_string(n) && !json_is_null(n)) {
			*what = "\"gpu.name\" is not a string";
			return -EINVAL;
		}
	}
	for (size_t i = 0; i < sizeof objs / sizeof objs[0]; i++) {
		v = json_object_get(root, objs[i]);
		if (v && !json_is_object(v)) {
			*what = objs_msg[i];
			return -EINVAL;
		}
	}
	v = json_object_get(root, "threshold");
	if (v && !json_is_null(v) && !json_is_number(v)) {
		*what = "\"threshold\" is not a number";
		return -EINVAL;
	}
	return 0;
}

int ftprof_load_file(const char *path, struct ftprof **out, char *err, size_t errlen)
{
	char *buf = NULL;
	size_t len = 0;
	json_error_t je;
	json_t *root = NULL;
	struct ftprof *p = NULL;
	const char *what = NULL;
	int r;

	if (!path || !*path || !out)
		return -EINVAL;
	*out = NULL;
	r = ftfs_read_file(path, FTPROF_MAX_FILE_BYTES, &buf, &len);
	if (r == -EFBIG) {
		seterr(err, errlen, "%s: larger than %u bytes, not a profile", path, FTPROF_MAX_FILE_BYTES);
		return r;
	}
	if (r) {
		seterr(err, errlen, "%s: %s", path, strerror(-r));
		return r;
	}
	root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
	free(buf);
	if (!root) {
		seterr(err, errlen, "%s: not valid JSON (line %d, column %d: %s)", path, je.line, je.column,
		       je.text);
		return -EINVAL;
	}
	if ((r = check_shape(root, &what))) {
		seterr(err, errlen, "%s: not a bandwidth profile: %s", path, what);
		json_decref(root);
		return r;
	}
	p = calloc(1, sizeof *p);
	if (!p || !(p->source = strdup(path))) {
		free(p);
		json_decref(root);
		return -ENOMEM;
	}
	p->root = root;
	*out = p;
	return 0;
}

void ftprof_free(struct ftprof *p)
{
	if (!p)
		return;
	json_decref(p->root);
	free(p->source);
	free(p);
}

const char *ftprof_source(const struct ftprof *p)
{
	return p ? p->source : NULL;
}

const json_t *ftprof_json(const struct ftprof *p)
{
	return p ? p->root : NULL;
}

static const char *gpu_str(const struct ftprof *p, const char *key)
{
	const json_t *gpu = p ? json_object_get(p->root, "gpu") : NULL;
	const char *s = json_string_value(json_object_get(gpu, key));
	return s && *s ? s : NULL;
}

const char *ftprof_gpu_uuid(const struct ftprof *p)
{
	return gpu_str(p, "uuid");
}

const char *ftprof_gpu_name(const struct ftprof *p)
{
	return gpu_str(p, "name");
}

int ftprof_matches_gpu(const struct ftprof *p, const char *gpu_uuid, const char *gpu_name)
{
	const json_t *gpu;
	const char *pu, *pn;

	if (!p)
		return 0;
	if (gpu_uuid && !*gpu_uuid)
		gpu_uuid = NULL;
	if (gpu_name && !*gpu_name)
		gpu_name = NULL;
	if (!gpu_uuid && !gpu_name)
		return 1;
	gpu = json_object_get(p->root, "gpu");
	if (!gpu)
		return 1; /* nothing recorded to compare with */
	if (json_is_null(gpu))
		return 0; /* measured without a GPU: says nothing about this one's PCIe */
	pu = ftprof_gpu_uuid(p);
	pn = ftprof_gpu_name(p);
	if (gpu_uuid && pu)
		return ftpint_uuid_equal(gpu_uuid, pu);
	if (gpu_name && pn)
		return !strcmp(gpu_name, pn);
	return 1;
}

/* Append "a, b" style to a bounded list of looked-at files. */
static void note_path(char *list, size_t n, const char *path, const char *why)
{
	size_t l = strlen(list);
	if (l + 1 < n && snprintf(list + l, n - l, "%s%s%s", l ? "; " : "", path, why) < 0)
		list[l] = '\0';
}

/* The candidate files of ftprof_load, in order (see ftprofile.h). */
struct candidates {
	char path[4][PATH_MAX];
	char scratch[PATH_MAX];
	int n;
};

static void add_candidate(struct candidates *c, const char *dir, const char *uuid)
{
	if (!ftpint_file_in(dir, uuid, c->path[c->n], PATH_MAX))
		c->n++;
}

int ftprof_load(const char *gpu_uuid, const char *gpu_name, struct ftprof **out, char *err,
		size_t errlen)
{
	const char *env = getenv(FTPROF_ENV_PATH), *sysdir = getenv(FTPROF_ENV_SYSDIR);
	struct candidates *c; /* ~20 KiB: on the heap, engines may load from small stacks */
	char looked[1024] = "";
	int r = -ENOENT;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (gpu_uuid && !*gpu_uuid)
		gpu_uuid = NULL;
	if (gpu_name && !*gpu_name)
		gpu_name = NULL;
	if (gpu_uuid && !ftpint_valid_uuid(gpu_uuid)) {
		seterr(err, errlen, "'%.80s' is not a GPU uuid", gpu_uuid);
		return -EINVAL;
	}
	if (!(c = calloc(1, sizeof *c)))
		return -ENOMEM;
	/* A caller that knows only the GPU's name has no per-uuid file; host.json is for a
	 * caller without GPU. */
	int per_file = gpu_uuid || !gpu_name;

	if (env && *env && strlen(env) < PATH_MAX)
		snprintf(c->path[c->n++], PATH_MAX, "%s", env);
	if (per_file && !ftprof_store_dir(c->scratch, sizeof c->scratch))
		add_candidate(c, c->scratch, gpu_uuid);
	if (!ftpint_cache_home(c->scratch, sizeof c->scratch) &&
	    strlen(c->scratch) + sizeof "/freetoken/benchbw.json" <= PATH_MAX)
		snprintf(c->path[c->n++], PATH_MAX, "%s/freetoken/benchbw.json", c->scratch);
	if (per_file)
		add_candidate(c, sysdir && *sysdir ? sysdir : FTPROF_SYSTEM_DIR, gpu_uuid);

	for (int i = 0; i < c->n; i++) {
		struct ftprof *p = NULL;
		int dup = 0;
		for (int j = 0; j < i; j++)
			dup |= !strcmp(c->path[i], c->path[j]);
		if (dup)
			continue;
		r = ftprof_load_file(c->path[i], &p, err, errlen);
		if (r == -ENOENT || r == -ENOTDIR) {
			note_path(looked, sizeof looked, c->path[i], " (missing)");
			r = -ENOENT;
			continue;
		}
		if (r)
			goto out; /* err names the file and what is wrong */
		if (!ftprof_matches_gpu(p, gpu_uuid, gpu_name)) {
			const char *pu = ftprof_gpu_uuid(p), *pn = ftprof_gpu_name(p);
			char why[200];
			snprintf(why, sizeof why, " (measured on %s)",
				 pu ? pu : pn ? pn : "a host without GPU");
			note_path(looked, sizeof looked, c->path[i], why);
			ftprof_free(p);
			r = -ENOENT;
			continue;
		}
		*out = p;
		if (err && errlen)
			err[0] = '\0';
		goto out;
	}
	r = -ENOENT;
	seterr(err, errlen, "no bandwidth profile for %s%s%s (looked at: %s); run `ftbench bw`",
	       gpu_uuid ? gpu_uuid : gpu_name ? gpu_name : "this host (no GPU)",
	       gpu_uuid && gpu_name ? ", " : "", gpu_uuid && gpu_name ? gpu_name : "",
	       looked[0] ? looked : "nothing");
out:
	free(c);
	return r;
}

/* ---------------------------------------------------------------- queries */

static enum ftprof_rec rec_of(const json_t *v)
{
	const char *s = json_string_value(v);
	if (!s)
		return FTPROF_REC_NONE;
	if (!strcmp(s, "hybrid"))
		return FTPROF_REC_HYBRID;
	if (!strcmp(s, "offload"))
		return FTPROF_REC_OFFLOAD;
	return FTPROF_REC_NONE;
}

enum ftprof_rec ftprof_recommend(const struct ftprof *p, const char *format)
{
	const char *fmt = ftprof_canonical_format(format);
	const json_t *workloads, *w;
	const char *name;
	int carried = 0, hybrid = 0;
	enum ftprof_rec r;

	if (!p || !fmt)
		return FTPROF_REC_NONE;
	r = rec_of(json_object_get(json_object_get(p->root, "dtypes"), fmt));
	if (r != FTPROF_REC_NONE)
		return r;
	workloads = json_object_get(p->root, "workloads");
	json_object_foreach((json_t *)workloads, name, w) {
		const json_t *v = json_object_get(json_object_get(w, "recommended_moe_backend"), fmt);
		if (!json_is_string(v))
			continue; /* absent or of the wrong type: this workload does not carry it */
		carried++;
		hybrid += rec_of(v) == FTPROF_REC_HYBRID;
	}
	if (!carried)
		return FTPROF_REC_NONE;
	return hybrid == carried ? FTPROF_REC_HYBRID : FTPROF_REC_OFFLOAD;
}

static double num(const json_t *e, const char *key)
{
	const json_t *v = json_object_get(e, key);
	double d;
	if (!json_is_number(v))
		return NAN;
	d = json_number_value(v);
	return isfinite(d) ? d : NAN;
}

/* The fraction one ENTRY gives: overlap pair first, else the plain pair; at most 1. */
static int entry_fraction(const json_t *e, double *out)
{
	double pov = num(e, "pcie_gather_overlap_gbs"), cov = num(e, "cpu_moe_overlap_gbs");
	double f;

	if (!json_is_object(e))
		return -ENODATA;
	if (pov > 0 && cov > 0) {
		f = pov / (pov + cov);
	} else {
		double pcie = num(e, "pcie_gather_gbs"), cpu = num(e, "cpu_moe_gbs");
		if (!(pcie > 0 && cpu > 0))
			return -ENODATA;
		f = pcie / cpu;
	}
	if (!(f > 0) || !isfinite(f))
		return -ENODATA;
	*out = f > 1.0 ? 1.0 : f;
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* An entry's hybrid_max_batch when it is an integer >= 0, else -1. */
static json_int_t entry_max_batch(const json_t *e)
{
	const json_t *v = json_object_get(e, "hybrid_max_batch");
	return json_is_integer(v) && json_integer_value(v) >= 0 ? json_integer_value(v) : -1;
}

int ftprof_hybrid_max_batch(const struct ftprof *p, const char *format, int *batch)
{
	const char *fmt = ftprof_canonical_format(format), *name;
	const json_t *w;
	json_int_t best = -1, v;

	if (!p || !fmt || !batch)
		return -EINVAL;
	v = entry_max_batch(json_object_get(json_object_get(p->root, "dtype_kernels"), fmt));
	if (v < 0)
		json_object_foreach(json_object_get(p->root, "workloads"), name, w) {
			json_int_t x = entry_max_batch(json_object_get(json_object_get(w, "kernels"), fmt));
			if (x >= 0 && (best < 0 || x < best))
				best = x;
		}
	else
		best = v;
	if (best < 0)
		return -ENODATA;
	*batch = best > INT_MAX ? INT_MAX : (int)best;
	return 0;
}

int ftprof_batch_ratio(const struct ftprof *p, const char *format, int batch, double *ratio)
{
	const char *fmt = ftprof_canonical_format(format);
	const json_t *sw, *row;
	size_t i;

	if (!p || !fmt || !ratio || batch < 1)
		return -EINVAL;
	sw = json_object_get(json_object_get(json_object_get(p->root, "dtype_kernels"), fmt), "batch_sweep");
	json_array_foreach(sw, i, row) {
		const json_t *b = json_object_get(row, "batch");
		double r = num(row, "ratio");
		if (json_is_integer(b) && json_integer_value(b) == batch) {
			if (!(r > 0) || !isfinite(r))
				return -ENODATA;
			*ratio = r;
			return 0;
		}
	}
	return -ENODATA;
}

int ftprof_fetch_fraction(const struct ftprof *p, const char *format, double *fraction)
{
	const char *fmt = ftprof_canonical_format(format);
	const json_t *workloads, *w;
	const char *name;
	double *v = NULL, f;
	size_t n = 0;
	int r;

	if (!p || !fmt || !fraction)
		return -EINVAL;
	if (!entry_fraction(json_object_get(json_object_get(p->root, "dtype_kernels"), fmt), &f)) {
		*fraction = f;
		return 0;
	}
	workloads = json_object_get(p->root, "workloads");
	if (!json_object_size(workloads))
		return -ENODATA;
	v = malloc(json_object_size(workloads) * sizeof *v);
	if (!v)
		return -ENOMEM;
	json_object_foreach((json_t *)workloads, name, w) {
		if (!entry_fraction(json_object_get(json_object_get(w, "kernels"), fmt), &f))
			v[n++] = f;
	}
	if (!n) {
		r = -ENODATA;
	} else {
		qsort(v, n, sizeof *v, cmp_double);
		*fraction = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
		r = 0;
	}
	free(v);
	return r;
}
