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

/* The seed's reader takes any JSON object (reference §5: "unreadable or non-object file -> none");
 * what is inside is judged where it is used, a value of an unexpected type counting as absent. */
static int check_shape(const json_t *root, const char **what)
{
	if (!json_is_object(root)) {
		*what = "the top level is not a JSON object";
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
	r = ftfs_read_regular(path, FTPROF_MAX_FILE_BYTES, &buf, &len);
	if (r == -EFBIG) {
		seterr(err, errlen, "%s: larger than %u bytes, not a profile", path, FTPROF_MAX_FILE_BYTES);
		return r;
	}
	if (r) {
		seterr(err, errlen, "%s: %s", path, strerror(-r));
		return r;
	}
	/* a repeated key keeps its first place and its last value, as Python's json does */
	root = json_loadb(buf, len, 0, &je);
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

/* Python's truthiness of a JSON value (what the seed's reader tests). */
static int truthy(const json_t *v)
{
	if (!v)
		return 0;
	switch (json_typeof(v)) {
	case JSON_OBJECT: return json_object_size(v) > 0;
	case JSON_ARRAY: return json_array_size(v) > 0;
	case JSON_STRING: return json_string_length(v) > 0;
	case JSON_INTEGER: return json_integer_value(v) != 0;
	case JSON_REAL: return json_real_value(v) != 0.0;
	case JSON_TRUE: return 1;
	default: return 0;
	}
}

int ftprof_matches_gpu(const struct ftprof *p, const char *gpu_uuid, const char *gpu_name)
{
	const json_t *gpu, *fname;
	const char *pu;

	if (!p)
		return 0;
	if (gpu_uuid && !*gpu_uuid)
		gpu_uuid = NULL;
	if (gpu_name && !*gpu_name)
		gpu_name = NULL;
	gpu = json_object_get(p->root, "gpu");
	if (!json_is_object(gpu))
		return 1; /* null or missing (or not an object): accepted, as by the seed */
	pu = ftprof_gpu_uuid(p);
	if (gpu_uuid && pu)
		return ftprofint_uuid_equal(gpu_uuid, pu); /* ours: the uuid decides when both know one */
	/* the seed: a name in the file that differs from the caller's refuses the file */
	fname = json_object_get(gpu, "name");
	if (gpu_name && truthy(fname))
		return json_is_string(fname) && !strcmp(gpu_name, json_string_value(fname));
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
	if (!ftprofint_file_in(dir, uuid, c->path[c->n], PATH_MAX))
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
	if (gpu_uuid && !ftprofint_valid_uuid(gpu_uuid)) {
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
	if (!ftprofint_cache_home(c->scratch, sizeof c->scratch) &&
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

/* The seed reader's alias map: only mxfp4 changes (fp8 is not an alias there). */
static const char *reader_key(const char *fmt)
{
	return fmt && !strcmp(fmt, "mxfp4") ? "mxfp4_triton" : fmt;
}

/* workloads[*].kernels[fmt] of the i-th workload in file order, or NULL. */
static const json_t *workload_entry(const json_t *w, const char *fmt)
{
	const json_t *k = json_is_object(w) ? json_object_get(w, "kernels") : NULL;
	return json_is_object(k) ? json_object_get(k, fmt) : NULL;
}

enum ftprof_rec ftprof_recommend(const struct ftprof *p, const char *format)
{
	const char *fmt = reader_key(format);
	const json_t *dtypes, *workloads, *w, *v;
	const char *name;
	int carried = 0, hybrid = 0;

	if (!p || !fmt)
		return FTPROF_REC_NONE;
	dtypes = json_object_get(p->root, "dtypes");
	v = json_is_object(dtypes) ? json_object_get(dtypes, fmt) : NULL;
	if (json_is_string(v) && !strcmp(json_string_value(v), "hybrid"))
		return FTPROF_REC_HYBRID;
	if (json_is_string(v) && !strcmp(json_string_value(v), "offload"))
		return FTPROF_REC_OFFLOAD;
	/* anything else falls through to the workloads' kernels[fmt].recommended */
	workloads = json_object_get(p->root, "workloads");
	if (!json_is_object(workloads))
		return FTPROF_REC_NONE;
	json_object_foreach((json_t *)workloads, name, w) {
		const json_t *e = workload_entry(w, fmt), *r;
		if (!json_is_object(e) || !truthy(r = json_object_get(e, "recommended")))
			continue;
		carried++;
		hybrid += json_is_string(r) && !strcmp(json_string_value(r), "hybrid");
	}
	if (!carried)
		return FTPROF_REC_NONE;
	return hybrid == carried ? FTPROF_REC_HYBRID : FTPROF_REC_OFFLOAD;
}

/* A number the way Python does arithmetic on a JSON value: numbers and booleans (true is 1);
 * anything else cannot take part (the seed would raise). */
static int arith(const json_t *v, double *out)
{
	if (json_is_number(v))
		*out = json_number_value(v);
	else if (json_is_boolean(v))
		*out = json_is_true(v);
	else
		return -1;
	return 0;
}

/* The fraction one ENTRY gives, by the seed's rule: both overlap figures truthy ->
 * pcie_ov / (pcie_ov + cpu_ov); else both plain figures truthy -> pcie / cpu; at most 1.
 * -ENODATA: this entry yields nothing (not an object, a pair missing, or figures the seed could
 * not divide: a string, a zero sum). */
static int entry_fraction(const json_t *e, double *out)
{
	const json_t *pov, *cov, *pcie, *cpu;
	double a, b, f;

	if (!json_is_object(e))
		return -ENODATA;
	pov = json_object_get(e, "pcie_gather_overlap_gbs");
	cov = json_object_get(e, "cpu_moe_overlap_gbs");
	pcie = json_object_get(e, "pcie_gather_gbs");
	cpu = json_object_get(e, "cpu_moe_gbs");
	if (truthy(cov) && truthy(pov)) {
		if (arith(pov, &a) || arith(cov, &b) || a + b == 0.0)
			return -ENODATA;
		f = a / (a + b);
	} else if (truthy(cpu) && truthy(pcie)) {
		if (arith(pcie, &a) || arith(cpu, &b))
			return -ENODATA;
		f = a / b;
	} else {
		return -ENODATA;
	}
	if (!isfinite(f))
		return -ENODATA;
	*out = f > 1.0 ? 1.0 : f;
	return 0;
}

/* An entry's hybrid_max_batch when it is an integer >= 0, else -1. */
static json_int_t entry_max_batch(const json_t *e)
{
	const json_t *v = json_object_get(e, "hybrid_max_batch");
	return json_is_integer(v) && json_integer_value(v) >= 0 ? json_integer_value(v) : -1;
}

int ftprof_hybrid_max_batch(const struct ftprof *p, const char *format, int *batch)
{
	const char *fmt = reader_key(format), *name;
	const json_t *w;
	json_int_t best = -1, v;

	if (!p || !fmt || !batch)
		return -EINVAL;
	v = entry_max_batch(json_object_get(json_object_get(p->root, "dtype_kernels"), fmt));
	if (v < 0)
		json_object_foreach(json_object_get(p->root, "workloads"), name, w) {
			json_int_t x = entry_max_batch(workload_entry(w, fmt));
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
	const char *fmt = reader_key(format);
	const json_t *sw, *row;
	size_t i;

	if (!p || !fmt || !ratio || batch < 1)
		return -EINVAL;
	sw = json_object_get(json_object_get(json_object_get(p->root, "dtype_kernels"), fmt), "batch_sweep");
	json_array_foreach(sw, i, row) {
		const json_t *b = json_object_get(row, "batch"), *rj = json_object_get(row, "ratio");
		double r = json_is_number(rj) ? json_number_value(rj) : NAN;
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
	const char *fmt = reader_key(format);
	const json_t *dk, *workloads, *w;
	const char *name;
	double f;

	if (!p || !fmt || !fraction)
		return -EINVAL;
	dk = json_object_get(p->root, "dtype_kernels");
	if (json_is_object(dk) && !entry_fraction(json_object_get(dk, fmt), &f)) {
		*fraction = f;
		return 0;
	}
	workloads = json_object_get(p->root, "workloads");
	if (!json_is_object(workloads))
		return -ENODATA;
	/* the first workload in file order whose entry yields a value */
	json_object_foreach((json_t *)workloads, name, w) {
		if (!entry_fraction(workload_entry(w, fmt), &f)) {
			*fraction = f;
			return 0;
		}
	}
	return -ENODATA;
}

/* ---------------------------------------------------------------- the answer by workload */

static const json_t *workload_point(const struct ftprof *p, const char *format, double cf, double reuse)
{
	const json_t *rp, *block, *pts, *pt, *best = NULL;
	double bd = INFINITY;
	size_t i;
	const char *fmt = ftprof_canonical_format(format);
	if (!p || !fmt || !isfinite(cf) || !isfinite(reuse))
		return NULL;
	rp = json_object_get(p->root, "replay");
	block = json_is_object(rp) ? json_object_get(rp, fmt) : NULL;
	pts = json_is_object(block) ? json_object_get(block, "points") : NULL;
	if (!json_is_array(pts))
		return NULL;
	json_array_foreach(pts, i, pt) {
		const json_t *c = json_object_get(pt, "cache_fraction"), *r = json_object_get(pt, "reuse");
		const json_t *sk = json_object_get(pt, "skew");
		if (!json_is_number(c) || !json_is_number(r) || (json_is_number(sk) && json_number_value(sk) != 0) ||
		    !json_is_string(json_object_get(pt, "winner")))
			continue;
		double a = json_number_value(c) - cf, b = json_number_value(r) - reuse, d = a * a + b * b;
		if (d < bd) {
			bd = d;
			best = pt;
		}
	}
	return best;
}

enum ftprof_rec ftprof_recommend_workload(const struct ftprof *p, const char *format, double cache_fraction,
					  double reuse, double *fetch_fraction)
{
	const json_t *pt = workload_point(p, format, cache_fraction, reuse);
	if (fetch_fraction)
		*fetch_fraction = NAN;
	if (!pt)
		return FTPROF_REC_NONE;
	const json_t *f = json_object_get(pt, "best_fetch_fraction");
	if (fetch_fraction && json_is_number(f))
		*fetch_fraction = json_number_value(f);
	return strcmp(json_string_value(json_object_get(pt, "winner")), "hybrid") ? FTPROF_REC_OFFLOAD
										   : FTPROF_REC_HYBRID;
}

int ftprof_workload_point(const struct ftprof *p, const char *format, double cache_fraction, double reuse,
			  double *point_cache, double *point_reuse, double *speedup)
{
	if (!p || !format)
		return -EINVAL;
	const json_t *pt = workload_point(p, format, cache_fraction, reuse);
	if (!pt)
		return -ENODATA;
	if (point_cache)
		*point_cache = json_number_value(json_object_get(pt, "cache_fraction"));
	if (point_reuse)
		*point_reuse = json_number_value(json_object_get(pt, "reuse"));
	if (speedup) {
		const json_t *s = json_object_get(pt, "speedup");
		*speedup = json_is_number(s) ? json_number_value(s) : NAN;
	}
	return 0;
}
