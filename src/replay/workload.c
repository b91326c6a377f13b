#include "replay/workload.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/fsutil.h"

#define say(...) ((err && errlen) ? (void)snprintf(err, errlen, __VA_ARGS__) : (void)0)

void ftrp_workload_release(struct ftrp_workload *w)
{
	if (!w)
		return;
	free(w->ids);
	free(w->weights);
	memset(w, 0, sizeof *w);
}

int ftrp_workload_check_dims(int layers, int experts, int topk, int batch, long long steps, char *err, size_t errlen)
{
	if (layers < 1 || layers > FTRP_MAX_LAYERS) {
		say("layers %d: expected 1..%d", layers, FTRP_MAX_LAYERS);
		return -EINVAL;
	}
	if (experts < 1 || experts > FTRP_MAX_EXPERTS) {
		say("experts %d: expected 1..%d", experts, FTRP_MAX_EXPERTS);
		return -EINVAL;
	}
	if (topk < 1 || topk > FTRP_MAX_TOPK || topk > experts) {
		say("top_k %d: expected 1..%d and at most experts (%d)", topk, FTRP_MAX_TOPK, experts);
		return -EINVAL;
	}
	if (batch < 1 || batch > FTRP_MAX_BATCH) {
		say("batch %d: expected 1..%d", batch, FTRP_MAX_BATCH);
		return -EINVAL;
	}
	if (steps < 1) {
		say("steps %lld: expected at least 1", steps);
		return -EINVAL;
	}
	if ((double)steps * layers * batch * topk > (double)FTRP_MAX_IDS) {
		say("too large: %lld steps x %d layers x %d tokens x top-%d = %.0f ids, the limit is %u", steps, layers,
		    batch, topk, (double)steps * layers * batch * topk, FTRP_MAX_IDS);
		return -E2BIG;
	}
	return 0;
}

static int alloc_w(struct ftrp_workload *w, int layers, int experts, int topk, int batch, int steps, int weights)
{
	memset(w, 0, sizeof *w);
	size_t n = (size_t)steps * (size_t)layers * (size_t)batch * (size_t)topk;
	w->layers = layers;
	w->experts = experts;
	w->topk = topk;
	w->batch = batch;
	w->steps = steps;
	w->ids = malloc(n * sizeof *w->ids);
	if (weights)
		w->weights = malloc(n * sizeof *w->weights);
	if (!w->ids || (weights && !w->weights)) {
		ftrp_workload_release(w);
		return -ENOMEM;
	}
	return 0;
}

/* ---------------------------------------------------------------- generator */

static uint64_t mix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static double unit(uint64_t *s) /* [0, 1) */
{
	return (double)(mix(s) >> 11) * (1.0 / 9007199254740992.0);
}

/* Draw one expert by weight pop[] among those with taken[e] == 0 (total: their weight sum). */
static int draw(const double *pop, const unsigned char *taken, int E, double total, uint64_t *s)
{
	double u = unit(s) * total, acc = 0;
	int last = -1;
	for (int e = 0; e < E; e++) {
		if (taken[e])
			continue;
		last = e;
		acc += pop[e];
		if (u < acc)
			return e;
	}
	return last; /* rounding at the end of the range */
}

int ftrp_generate(const struct ftrp_gen *g, int L, int E, int K, int B, int steps, struct ftrp_workload *out,
		  char *err, size_t errlen)
{
	int r = ftrp_workload_check_dims(L, E, K, B, steps, err, errlen);
	if (r)
		return r;
	if (!(g->skew >= 0 && g->skew <= 16)) {
		say("skew %g: expected 0..16", g->skew);
		return -EINVAL;
	}
	if (!(g->reuse >= 0 && g->reuse <= 1)) {
		say("reuse %g: expected 0..1", g->reuse);
		return -EINVAL;
	}
	if ((r = alloc_w(out, L, E, K, B, steps, 1)))
		return r;
	double *pop = malloc((size_t)E * sizeof *pop);
	int *perm = malloc((size_t)E * sizeof *perm);
	unsigned char *taken = calloc((size_t)E, 1);
	int32_t *prev = malloc((size_t)B * (size_t)K * sizeof *prev);
	if (!pop || !perm || !taken || !prev) {
		r = -ENOMEM;
		goto out;
	}
	const int n = B * K;
	for (int l = 0; l < L; l++) {
		/* the layer's own stream: the same layer gets the same routing whatever L is */
		uint64_t s = g->seed * 0x9E3779B97F4A7C15ull + (uint64_t)l * 0xD1B54A32D192ED03ull + 1;
		for (int e = 0; e < E; e++)
			perm[e] = e;
		for (int e = E - 1; e > 0; e--) {
			int j = (int)(mix(&s) % (uint64_t)(e + 1)), t = perm[e];
			perm[e] = perm[j];
			perm[j] = t;
		}
		for (int k = 0; k < E; k++) /* expert perm[k] has rank k + 1 */
			pop[perm[k]] = g->skew > 0 ? pow((double)(k + 1), -g->skew) : 1.0;
		for (int st = 0; st < steps; st++) {
			int32_t *ids = out->ids + ((size_t)st * (size_t)L + (size_t)l) * (size_t)n;
			float *wt = out->weights + ((size_t)st * (size_t)L + (size_t)l) * (size_t)n;
			for (int b = 0; b < B; b++) {
				int got = 0;
				double total = 0;
				for (int e = 0; e < E; e++)
					total += pop[e];
				if (st > 0)
					for (int k = 0; k < K; k++) {
						int e = prev[b * K + k];
						if (unit(&s) < g->reuse && !taken[e]) {
							taken[e] = 1;
							total -= pop[e];
							ids[b * K + got++] = e;
						}
					}
				while (got < K) {
					int e = draw(pop, taken, E, total, &s);
					taken[e] = 1;
					total -= pop[e];
					ids[b * K + got++] = e;
				}
				double sum = 0;
				for (int k = 0; k < K; k++) {
					taken[ids[b * K + k]] = 0;
					wt[b * K + k] = (float)(0.25 + unit(&s));
					sum += wt[b * K + k];
				}
				for (int k = 0; k < K; k++)
					wt[b * K + k] = (float)(wt[b * K + k] / sum);
			}
			memcpy(prev, ids, (size_t)n * sizeof *prev);
		}
	}
out:
	free(pop);
	free(perm);
	free(taken);
	free(prev);
	if (r)
		ftrp_workload_release(out);
	return r;
}

double ftrp_workload_reuse(const struct ftrp_workload *w)
{
	if (w->steps < 2)
		return NAN;
	unsigned char *a = calloc((size_t)w->experts, 1), *b = calloc((size_t)w->experts, 1);
	if (!a || !b) {
		free(a);
		free(b);
		return NAN;
	}
	const int n = w->batch * w->topk;
	double sum = 0;
	long cnt = 0;
	for (int l = 0; l < w->layers; l++)
		for (int s = 1; s < w->steps; s++) {
			const int32_t *p = ftrp_ids(w, s - 1, l), *c = ftrp_ids(w, s, l);
			for (int i = 0; i < n; i++)
				a[p[i]] = 1;
			int distinct = 0, kept = 0;
			for (int i = 0; i < n; i++)
				if (!b[c[i]]) {
					b[c[i]] = 1;
					distinct++;
					kept += a[c[i]];
				}
			for (int i = 0; i < n; i++)
				a[p[i]] = b[c[i]] = 0;
			sum += (double)kept / distinct;
			cnt++;
		}
	free(a);
	free(b);
	return sum / (double)cnt;
}

int ftrp_workload_slice(const struct ftrp_workload *w, int from, int n, struct ftrp_workload *out)
{
	if (from < 0 || n < 1 || from + n > w->steps)
		return -EINVAL;
	int r = alloc_w(out, w->layers, w->experts, w->topk, w->batch, n, w->weights != NULL);
	if (r)
		return r;
	size_t per = (size_t)w->layers * (size_t)w->batch * (size_t)w->topk;
	memcpy(out->ids, w->ids + per * (size_t)from, per * (size_t)n * sizeof *out->ids);
	if (w->weights)
		memcpy(out->weights, w->weights + per * (size_t)from, per * (size_t)n * sizeof *out->weights);
	return 0;
}

/* ---------------------------------------------------------------- trace file */

static int get_dim(const json_t *doc, const char *key, const char *what, int *v, char *err, size_t errlen)
{
	const json_t *j = json_object_get(doc, key);
	if (!json_is_integer(j)) {
		say("%s: \"%s\" %s", what, key, j ? "must be an integer" : "is missing");
		return -EINVAL;
	}
	json_int_t x = json_integer_value(j);
	if (x < 1 || x > INT32_MAX) {
		say("%s: \"%s\" is %lld, expected a positive integer", what, key, (long long)x);
		return -EINVAL;
	}
	*v = (int)x;
	return 0;
}

int ftrp_trace_parse(const json_t *doc, const char *what, struct ftrp_workload *out, char *err, size_t errlen)
{
	char dims_err[200];
	int L, E, K, B, r;
	memset(out, 0, sizeof *out);
	if (!what)
		what = "trace";
	if (!json_is_object(doc)) {
		say("%s: not a routing trace (the top level must be an object)", what);
		return -EINVAL;
	}
	const char *fmt = json_string_value(json_object_get(doc, "format"));
	if (!fmt || strcmp(fmt, FTRP_TRACE_FORMAT)) {
		say("%s: not a routing trace (\"format\" must be \"%s\")", what, FTRP_TRACE_FORMAT);
		return -EINVAL;
	}
	const json_t *ver = json_object_get(doc, "version");
	if (!json_is_integer(ver) || json_integer_value(ver) != FTRP_TRACE_VERSION) {
		say("%s: \"version\" must be %d (this ftbench reads version %d)", what, FTRP_TRACE_VERSION,
		    FTRP_TRACE_VERSION);
		return -EINVAL;
	}
	if ((r = get_dim(doc, "layers", what, &L, err, errlen)) || (r = get_dim(doc, "experts", what, &E, err, errlen)) ||
	    (r = get_dim(doc, "top_k", what, &K, err, errlen)) || (r = get_dim(doc, "batch", what, &B, err, errlen)))
		return r;
	const json_t *steps = json_object_get(doc, "steps"), *weights = json_object_get(doc, "weights");
	if (!json_is_array(steps) || json_array_size(steps) == 0) {
		say("%s: \"steps\" must be a non-empty array of steps", what);
		return -EINVAL;
	}
	if (weights && !json_is_null(weights) && !json_is_array(weights)) {
		say("%s: \"weights\" must be an array shaped like \"steps\"", what);
		return -EINVAL;
	}
	if (json_is_null(weights))
		weights = NULL;
	if ((r = ftrp_workload_check_dims(L, E, K, B, (long long)json_array_size(steps), dims_err, sizeof dims_err))) {
		say("%s: %s", what, dims_err);
		return r;
	}
	int S = (int)json_array_size(steps);
	if (weights && json_array_size(weights) != (size_t)S) {
		say("%s: \"weights\" has %zu steps, \"steps\" %d", what, json_array_size(weights), S);
		return -EINVAL;
	}
	if ((r = alloc_w(out, L, E, K, B, S, weights != NULL)))
		return r;
	const int n = B * K;
	for (int s = 0; s < S; s++) {
		const json_t *st = json_array_get(steps, (size_t)s), *wst = weights ? json_array_get(weights, (size_t)s) : NULL;
		if (!json_is_array(st) || json_array_size(st) != (size_t)L) {
			say("%s: step %d has %zu layers, expected %d (\"layers\")", what, s,
			    json_is_array(st) ? json_array_size(st) : (size_t)0, L);
			goto bad;
		}
		if (weights && (!json_is_array(wst) || json_array_size(wst) != (size_t)L)) {
			say("%s: weights of step %d: expected %d layers", what, s, L);
			goto bad;
		}
		for (int l = 0; l < L; l++) {
			const json_t *ly = json_array_get(st, (size_t)l), *wl = weights ? json_array_get(wst, (size_t)l) : NULL;
			if (!json_is_array(ly) || json_array_size(ly) != (size_t)n) {
				say("%s: step %d layer %d has %zu ids, expected batch x top_k = %d x %d = %d", what, s, l,
				    json_is_array(ly) ? json_array_size(ly) : (size_t)0, B, K, n);
				goto bad;
			}
			if (weights && (!json_is_array(wl) || json_array_size(wl) != (size_t)n)) {
				say("%s: weights of step %d layer %d: expected %d numbers", what, s, l, n);
				goto bad;
			}
			int32_t *ids = out->ids + ((size_t)s * (size_t)L + (size_t)l) * (size_t)n;
			for (int i = 0; i < n; i++) {
				const json_t *v = json_array_get(ly, (size_t)i);
				if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) >= E) {
					if (json_is_integer(v))
						say("%s: step %d layer %d: expert id %lld out of range [0, %d)", what, s, l,
						    (long long)json_integer_value(v), E);
					else
						say("%s: step %d layer %d: entry %d is not an integer expert id", what, s, l, i);
					goto bad;
				}
				ids[i] = (int32_t)json_integer_value(v);
				for (int j = i - i % K; j < i; j++)
					if (ids[j] == ids[i]) {
						say("%s: step %d layer %d: token %d routes to expert %d twice", what, s, l, i / K,
						    ids[i]);
						goto bad;
					}
				if (weights) {
					const json_t *x = json_array_get(wl, (size_t)i);
					if (!json_is_number(x) || !isfinite(json_number_value(x))) {
						say("%s: weights of step %d layer %d: entry %d is not a finite number", what, s, l, i);
						goto bad;
					}
					out->weights[ids - out->ids + i] = (float)json_number_value(x);
				}
			}
		}
	}
	return 0;
bad:
	ftrp_workload_release(out);
	return -EINVAL;
}

int ftrp_trace_read(const char *path, struct ftrp_workload *out, char *err, size_t errlen)
{
	char *buf = NULL;
	size_t len = 0;
	memset(out, 0, sizeof *out);
	int r = ftfs_read_file(path, FTRP_TRACE_MAX_BYTES, &buf, &len);
	if (r == -EFBIG) {
		say("%s: too large (more than %u MiB)", path, FTRP_TRACE_MAX_BYTES >> 20);
		return -E2BIG;
	}
	if (r) {
		say("%s: %s", path, strerror(-r));
		return r;
	}
	json_error_t je;
	json_t *doc = json_loadb(buf, len, 0, &je);
	free(buf);
	if (!doc) {
		say("%s: not JSON (line %d: %s)", path, je.line, je.text);
		return -EINVAL;
	}
	r = ftrp_trace_parse(doc, path, out, err, errlen);
	json_decref(doc);
	return r;
}

json_t *ftrp_trace_json(const struct ftrp_workload *w, int with_weights)
{
	const int n = w->batch * w->topk;
	with_weights = with_weights && w->weights;
	json_t *doc = json_pack("{s:s,s:i,s:i,s:i,s:i,s:i}", "format", FTRP_TRACE_FORMAT, "version", FTRP_TRACE_VERSION,
				"layers", w->layers, "experts", w->experts, "top_k", w->topk, "batch", w->batch);
	json_t *steps = json_array(), *weights = with_weights ? json_array() : NULL;
	if (!doc || !steps || (with_weights && !weights))
		goto fail;
	for (int s = 0; s < w->steps; s++) {
		json_t *st = json_array(), *wst = with_weights ? json_array() : NULL;
		if (!st || json_array_append_new(steps, st) || (with_weights && (!wst || json_array_append_new(weights, wst))))
			goto fail;
		for (int l = 0; l < w->layers; l++) {
			const int32_t *ids = ftrp_ids(w, s, l);
			json_t *ly = json_array(), *wl = with_weights ? json_array() : NULL;
			if (!ly || json_array_append_new(st, ly) || (with_weights && (!wl || json_array_append_new(wst, wl))))
				goto fail;
			for (int i = 0; i < n; i++) {
				if (json_array_append_new(ly, json_integer(ids[i])))
					goto fail;
				if (with_weights &&
				    json_array_append_new(wl, json_real(w->weights[ids - w->ids + i])))
					goto fail;
			}
		}
	}
	json_object_set_new(doc, "steps", steps);
	if (weights)
		json_object_set_new(doc, "weights", weights);
	return doc;
fail:
	json_decref(doc);
	json_decref(steps);
	json_decref(weights);
	return NULL;
}

int ftrp_trace_write(const char *path, const struct ftrp_workload *w, char *err, size_t errlen)
{
	json_t *doc = ftrp_trace_json(w, 1);
	if (!doc) {
		say("%s: out of memory building the trace", path);
		return -ENOMEM;
	}
	char *s = json_dumps(doc, JSON_COMPACT | JSON_REAL_PRECISION(7));
	json_decref(doc);
	if (!s) {
		say("%s: out of memory building the trace", path);
		return -ENOMEM;
	}
	size_t len = strlen(s);
	s[len] = 0;
	int r = ftfs_write_atomic(path, s, len, 0644);
	free(s);
	if (r)
		say("%s: %s", path, strerror(-r));
	return r;
}
