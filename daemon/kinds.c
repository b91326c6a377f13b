#include "kinds.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/strutil.h"

enum arg_type {
	A_NAMES,   /* a name list: "a,b" or ["a","b"] -> --flag=a,b */
	A_INT,     /* integer in [lo, hi] */
	A_NUM,     /* number in [lo, hi] */
	A_BOOL,    /* true -> --flag */
	A_INTLIST, /* [int...] -> --flag=1,2 */
	A_NUMLIST, /* [num...] */
	A_ENUM,    /* one of choices */
	A_ENUMLIST,/* [choice...] */
	A_PATH,    /* a path that must realpath under a model root */
	A_GPU,     /* index or uuid, resolved against the inventory */
	A_SERVER,  /* a decode-server name from the config -> --server-cmd=<template> */
	A_URL,     /* a well-formed http(s) URL allowed by decode-urls */
};

struct ftd_arg {
	const char *name;
	enum arg_type type;
	const char *flag;
	double lo, hi;
	const char *choices; /* "a|b|c" */
	int required;
	int max_items;       /* lists: most items (0: 64, or hi for A_ENUMLIST) */
};

static const struct ftd_arg bw_args[] = {
	{"dtype", A_NAMES, "--dtype"},
	{"model", A_NAMES, "--model"},
	{"formats", A_NAMES, "--formats"},
	{"isa", A_NAMES, "--isa"},
	{"threshold", A_NUM, "--threshold", 1e-6, 1000},
	{"cpu_threads", A_INT, "--cpu-threads", 0, 4096}, /* 0: all cores, as in the seed */
	{"cpu_iters", A_INT, "--cpu-iters", 1, 1000},
	{"pcie_mib", A_INT, "--pcie-mib", 1, 65536},
	{"pcie_iters", A_INT, "--pcie-iters", 1, 10000},
	{"kernel_cpu_iters", A_INT, "--kernel-cpu-iters", 1, 100000},
	{"kernel_pcie_iters", A_INT, "--kernel-pcie-iters", 1, 100000},
	{"overlap_seconds", A_NUM, "--overlap-seconds", 0, 600},
	{"max_spread", A_NUM, "--max-spread", 0, 100},
	{"no_checks", A_BOOL, "--no-checks"},
	{"engines", A_INT, "--engines", 1, 64},
	{"engine_threads", A_INT, "--engine-threads", 1, 4096},
	{"deployment", A_ENUM, "--deployment", 0, 0, "isolated|concurrent"},
	{"gather", A_ENUM, "--gather", 0, 0, "proxy|sm"},
	{"batch_sweep", A_INTLIST, "--batch-sweep", 1, 32, NULL, 0, 8},
	{"gpu", A_GPU, "--gpu"},
	{NULL}};

static const struct ftd_arg cache_copy_args[] = {
	{"models", A_NAMES, "--models"},
	{"cache_slots", A_INTLIST, "--cache-slots", 1, 1000000},
	{"batch_sizes", A_INTLIST, "--batch-sizes", 1, 65536},
	{"miss_rates", A_NUMLIST, "--miss-rates", 0, 1},
	{"repeat", A_INT, "--repeat", 1, 100000},
	{"copy", A_ENUM, "--copy", 0, 0, "fused|proxy"},
	{"gpu", A_GPU, "--gpu"},
	{NULL}};

static const struct ftd_arg load_weights_args[] = {
	{"model", A_PATH, "--model", 0, 0, NULL, 1},
	{"modes", A_ENUMLIST, "--modes", 1, 3, "baseline|parallel|ftw"}, /* lo, hi: items */
	{"workers", A_INT, "--workers", 1, 1024},
	{"chunk_mib", A_INT, "--chunk-mib", 1, 4096},
	{"shard_gib", A_NUM, "--shard-gib", 0.001, 1024},
	{"shard_mib", A_INT, "--shard-mib", 1, 1048576},
	{"expert_load", A_ENUM, "--expert-load", 0, 0, "serial|parallel"},
	{"ftw_dir", A_PATH, "--ftw-dir"},
	{"no_drop_cache", A_BOOL, "--no-drop-cache"},
	{"keep_ftw", A_BOOL, "--keep-ftw"},
	{"gpu", A_GPU, "--gpu"},
	{NULL}};

/* model is required with server (the template's {model}); with url it is optional. */
static const struct ftd_arg decode_args[] = {
	{"model", A_PATH, "--model"},
	{"server", A_SERVER, "--server-cmd"},
	{"url", A_URL, "--url"},
	{"backends", A_ENUMLIST, "--backend", 0, 0, "offload|cpu|hybrid"},
	{"max_tokens", A_INT, "--tokens", 2, 1048576},
	{"memory_ratio", A_NUM, "--mem-ratio", 0.01, 1},
	{"no_graph", A_BOOL, "--no-graph"},
	{"moe_hybrid_max_fetch", A_INT, "--hybrid-fetch", -1, 1048576},
	{"moe_cache_size", A_INT, "--cache", 0, 1000000},
	{"moe_cache_rate", A_NUM, "--cache-rate", 0, 1},
	{"problem", A_INT, "--problem", 0, 100000},
	{"greedy", A_BOOL, "--greedy"},
	{"no_thinking", A_BOOL, "--no-thinking"},
	{"warmup", A_INT, "--warmup", 0, 100},
	{"server_kind", A_ENUM, "--server-kind", 0, 0, "freetoken|llama.cpp|vllm|sglang|openai"},
	{"append_flags", A_BOOL, "--append-flags"},
	{"allow_short", A_BOOL, "--allow-short"},
	{"num_token_override", A_INT, "--num-token-override", 1, 1073741824},
	{"gpu", A_GPU, "--gpu"},
	{NULL}};

static const struct ftd_kind kinds[] = {
	{"bw", 1, bw_args},
	{"cache-copy", 0, cache_copy_args},
	{"load-weights", 1, load_weights_args},
	{"decode", 0, decode_args},
};

const struct ftd_kind *ftd_kind_find(const char *name)
{
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
		if (!strcmp(kinds[i].name, name))
			return &kinds[i];
	return NULL;
}

void ftd_err_set(struct ftd_err *e, int status, const char *code, const char *field, const char *fmt, ...)
{
	e->status = status;
	snprintf(e->code, sizeof e->code, "%s", code);
	snprintf(e->field, sizeof e->field, "%s", field ? field : "");
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e->message, sizeof e->message, fmt, ap);
	va_end(ap);
}

void ftd_argv_free(char **argv)
{
	if (!argv)
		return;
	for (char **p = argv; *p; p++)
		free(*p);
	free(argv);
}

struct argv_b {
	char **v;
	int n, cap;
	int oom;
};

static void push(struct argv_b *b, char *s)
{
	if (!s) {
		b->oom = 1;
		return;
	}
	if (b->n + 2 > b->cap) {
		int cap = b->cap ? b->cap * 2 : 16;
		char **v = realloc(b->v, sizeof(char *) * (size_t)cap);
		if (!v) {
			free(s);
			b->oom = 1;
			return;
		}
		b->v = v;
		b->cap = cap;
	}
	b->v[b->n++] = s;
	b->v[b->n] = NULL;
}

static char *flagval(const char *flag, const char *val)
{
	char *s;
	return asprintf(&s, "%s=%s", flag, val) < 0 ? NULL : s;
}

static int name_ok(const char *s, int allow_comma)
{
	if (!*s)
		return 0;
	for (; *s; s++) {
		char c = *s;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
		      c == '_' || c == '.' || c == ':' || c == '+' || (allow_comma && c == ',')))
			return 0;
	}
	return 1;
}

static int choice_ok(const char *choices, const char *v)
{
	size_t l = strlen(v);
	for (const char *p = choices; *p;) {
		const char *bar = strchr(p, '|');
		size_t n = bar ? (size_t)(bar - p) : strlen(p);
		if (n == l && !strncmp(p, v, l))
			return 1;
		if (!bar)
			break;
		p = bar + 1;
	}
	return 0;
}

/* Append "x" to a growing comma-joined buffer. */
static int join(char *buf, size_t n, const char *x)
{
	size_t l = strlen(buf);
	int w = snprintf(buf + l, n - l, "%s%s", l ? "," : "", x);
	return w < 0 || (size_t)w >= n - l ? -1 : 0;
}

/* The shortest of %.15g / %.17g that reads back as x (0.8, not 0.80000000000000004). */
static void fmt_num(char *buf, size_t n, double x)
{
	snprintf(buf, n, "%.15g", x);
	if (strtod(buf, NULL) != x)
		snprintf(buf, n, "%.17g", x);
}

static int num_of(const json_t *v, double *out)
{
	if (json_is_integer(v))
		*out = (double)json_integer_value(v);
	else if (json_is_real(v))
		*out = json_real_value(v);
	else
		return -1;
	return isfinite(*out) ? 0 : -1;
}

static int path_under_roots(const struct ftd_config *cfg, const char *path, char **resolved)
{
	char *rp = realpath(path, NULL);
	if (!rp)
		return -1;
	for (int i = 0; i < cfg->n_model_roots; i++) {
		const char *root = cfg->model_roots[i];
		size_t l = strlen(root);
		if (!strncmp(rp, root, l) && (rp[l] == '\0' || rp[l] == '/' || (l == 1 && root[0] == '/'))) {
			*resolved = rp;
			return 0;
		}
	}
	free(rp);
	return -1;
}

int ftd_kind_build(const struct ftd_kind *k, const json_t *args, const struct ftd_config *cfg,
		   const char *worker, const struct ftgpu_info *gpus, int ngpus, int *gpu_pos,
		   char ***argv_out, struct ftd_err *err)
{
	struct argv_b b = {0};
	char field[64], buf[8192]; /* 64 names of 64 bytes, comma-joined */
	int gpu = ngpus > 0 ? 0 : -1;
	int have_server = 0, have_url = 0;

	*argv_out = NULL;
	if (args && !json_is_object(args)) {
		ftd_err_set(err, 400, "invalid_argument", "args", "args must be an object");
		return -1;
	}
	push(&b, strdup(worker));
	push(&b, strdup(k->name));
	const char *key;
	json_t *v;
	json_object_foreach((json_t *)args, key, v) {
		const struct ftd_arg *a = k->args;
		while (a->name && strcmp(a->name, key))
			a++;
		snprintf(field, sizeof field, "args.%.*s", ftstr_utf8_cut(key, 58), key);
		if (!a->name) {
			ftd_err_set(err, 400, "unknown_field", field, "%s has no argument '%.*s'", k->name, ftstr_utf8_cut(key, 100), key);
			goto fail;
		}
		double x;
		switch (a->type) {
		case A_NAMES:
			buf[0] = '\0';
			if (json_is_string(v)) {
				const char *s = json_string_value(v);
				if (strlen(s) > 256 || !name_ok(s, 1)) {
					ftd_err_set(err, 400, "invalid_argument", field,
						    "%s: expected names of letters, digits and -_.:+ separated by commas", field);
					goto fail;
				}
				snprintf(buf, sizeof buf, "%s", s);
			} else if (json_is_array(v) && json_array_size(v) > 0 && json_array_size(v) <= 64) {
				size_t i;
				json_t *it;
				json_array_foreach(v, i, it) {
					if (!json_is_string(it) || strlen(json_string_value(it)) > 64 ||
					    !name_ok(json_string_value(it), 0) || join(buf, sizeof buf, json_string_value(it))) {
						ftd_err_set(err, 400, "invalid_argument", field,
							    "%s[%zu]: expected a name of letters, digits and -_.:+", field, i);
						goto fail;
					}
				}
			} else {
				ftd_err_set(err, 400, "invalid_argument", field,
					    "%s: expected a string or a list of 1 to 64 strings", field);
				goto fail;
			}
			push(&b, flagval(a->flag, buf));
			break;
		case A_INT:
			if (!json_is_integer(v) || json_integer_value(v) < (json_int_t)a->lo ||
			    json_integer_value(v) > (json_int_t)a->hi) {
				ftd_err_set(err, 400, "invalid_argument", field, "%s: expected an integer in [%.0f, %.0f]",
					    field, a->lo, a->hi);
				goto fail;
			}
			snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(v));
			push(&b, flagval(a->flag, buf));
			break;
		case A_NUM:
			if (num_of(v, &x) < 0 || x < a->lo || x > a->hi) {
				ftd_err_set(err, 400, "invalid_argument", field, "%s: expected a number in [%g, %g]", field,
					    a->lo, a->hi);
				goto fail;
			}
			fmt_num(buf, sizeof buf, x);
			push(&b, flagval(a->flag, buf));
			break;
		case A_BOOL:
			if (!json_is_boolean(v)) {
				ftd_err_set(err, 400, "invalid_argument", field, "%s: expected true or false", field);
				goto fail;
			}
			if (json_is_true(v))
				push(&b, strdup(a->flag));
			break;
		case A_INTLIST:
		case A_NUMLIST:
		case A_ENUMLIST: {
			size_t max_items = a->max_items > 0 ? (size_t)a->max_items
					   : a->type == A_ENUMLIST && a->hi > 0 ? (size_t)a->hi : 64;
			if (!json_is_array(v) || json_array_size(v) == 0 || json_array_size(v) > max_items) {
				ftd_err_set(err, 400, "invalid_argument", field, "%s: expected a list of 1 to %zu items", field,
					    max_items);
				goto fail;
			}
			buf[0] = '\0';
			size_t i;
			json_t *it;
			json_array_foreach(v, i, it) {
				char one[64];
				int bad;
				if (a->type == A_INTLIST) {
					bad = !json_is_integer(it) || json_integer_value(it) < (json_int_t)a->lo ||
					      json_integer_value(it) > (json_int_t)a->hi;
					if (!bad)
						snprintf(one, sizeof one, "%lld", (long long)json_integer_value(it));
				} else if (a->type == A_NUMLIST) {
					bad = num_of(it, &x) < 0 || x < a->lo || x > a->hi;
					if (!bad)
						fmt_num(one, sizeof one, x);
				} else {
					bad = !json_is_string(it) || !choice_ok(a->choices, json_string_value(it));
					if (!bad)
						snprintf(one, sizeof one, "%s", json_string_value(it));
				}
				if (bad || join(buf, sizeof buf, one)) {
					if (a->type == A_ENUMLIST)
						ftd_err_set(err, 400, "invalid_argument", field, "%s[%zu]: expected one of %s",
							    field, i, a->choices);
					else
						ftd_err_set(err, 400, "invalid_argument", field,
							    "%s[%zu]: expected a %s in [%g, %g]", field, i,
							    a->type == A_INTLIST ? "integer" : "number", a->lo, a->hi);
					goto fail;
				}
			}
			push(&b, flagval(a->flag, buf));
			break;
		}
		case A_ENUM:
			if (!json_is_string(v) || !choice_ok(a->choices, json_string_value(v))) {
				ftd_err_set(err, 400, "invalid_argument", field, "%s: expected one of %s", field, a->choices);
				goto fail;
			}
			push(&b, flagval(a->flag, json_string_value(v)));
			break;
		case A_PATH: {
			if (!json_is_string(v) || !*json_string_value(v) || ftstr_utf8_len(json_string_value(v)) > 4096) {
				ftd_err_set(err, 400, "invalid_argument", field, "%s: expected a path", field);
				goto fail;
			}
			char *rp;
			if (path_under_roots(cfg, json_string_value(v), &rp) < 0) {
				ftd_err_set(err, 403, "forbidden", field,
					    "%s: does not resolve to an existing path under a configured model root", field);
				goto fail;
			}
			push(&b, flagval(a->flag, rp));
			free(rp);
			break;
		}
		case A_GPU: {
			char spec[96];
			if (!strcmp(k->name, "bw") && json_is_string(v) && !strcmp(json_string_value(v), "all")) {
				/* every GPU alone, then all at once: holds every GPU and the host */
				if (ngpus <= 0) {
					ftd_err_set(err, 400, "unknown_gpu", field, "%s: this host has no GPU", field);
					goto fail;
				}
				push(&b, strdup("--gpu=all"));
				gpu = FTD_GPU_ALL;
				break;
			}
			if (json_is_integer(v) && json_integer_value(v) >= 0 && json_integer_value(v) < 256)
				snprintf(spec, sizeof spec, "%lld", (long long)json_integer_value(v));
			else if (json_is_string(v) && *json_string_value(v) && ftstr_utf8_len(json_string_value(v)) <= 80)
				snprintf(spec, sizeof spec, "%s", json_string_value(v));
			else {
				ftd_err_set(err, 400, "invalid_argument", field,
					    "%s: expected a GPU index or uuid", field);
				goto fail;
			}
			char why[256] = "";
			int pos = ngpus > 0 ? ftgpu_resolve(gpus, ngpus, spec, why, sizeof why) : -ENODEV;
			if (pos < 0) {
				ftd_err_set(err, 400, "unknown_gpu", field, "%s: %s", field,
					    ngpus > 0 ? why : "this host has no GPU");
				goto fail;
			}
			gpu = pos;
			break;
		}
		case A_SERVER: {
			const char *name = json_string_value(v);
			if (!name || ftd_server_name_len(name, strlen(name)) < 0) {
				ftd_err_set(err, 400, "invalid_argument", field,
					    "%s: expected a server name of 1 to %d of A-Z a-z 0-9 _ . -", field,
					    FTD_SERVER_NAME_MAX);
				goto fail;
			}
			const char *tmpl = ftd_config_decode_server(cfg, name);
			if (!tmpl) {
				ftd_err_set(err, 403, "forbidden", field, "%s: '%s' is not a decode-server in the config",
					    field, name);
				goto fail;
			}
			push(&b, flagval(a->flag, tmpl));
			have_server = 1;
			break;
		}
		case A_URL: {
			char why[160];
			const char *u = json_string_value(v);
			if (!u || ftd_url_check(u, why, sizeof why) < 0) {
				ftd_err_set(err, 400, "invalid_argument", field, "%s: %s", field,
					    u ? why : "expected an http(s) URL");
				goto fail;
			}
			if (!ftd_config_url_allowed(cfg, u)) {
				ftd_err_set(err, 403, "forbidden", field, "%s: not in decode-urls of the config%s", field,
					    cfg->n_decode_urls ? "" : " (none configured)");
				goto fail;
			}
			push(&b, flagval(a->flag, u));
			have_url = 1;
			break;
		}
		}
	}
	for (const struct ftd_arg *a = k->args; a->name; a++) {
		if (a->required && !json_object_get(args, a->name)) {
			snprintf(field, sizeof field, "args.%s", a->name);
			ftd_err_set(err, 400, "missing_field", field, "%s needs %s", k->name, field);
			goto fail;
		}
	}
	if (!strcmp(k->name, "decode") && have_server && !json_object_get(args, "model")) {
		ftd_err_set(err, 400, "missing_field", "args.model", "decode with args.server needs args.model");
		goto fail;
	}
	if (!strcmp(k->name, "decode") && have_server + have_url != 1) {
		ftd_err_set(err, 400, have_server + have_url ? "invalid_argument" : "missing_field", "args.server",
			    "decode needs exactly one of args.server and args.url");
		goto fail;
	}
	if (!strcmp(k->name, "bw") && !json_object_get(args, "deployment") && cfg && cfg->deployment &&
	    *cfg->deployment)
		push(&b, flagval("--deployment", cfg->deployment));
	if (gpu >= 0)
		push(&b, flagval("--gpu", gpus[gpu].uuid));
	if (!strcmp(k->name, "bw") && cfg && !cfg->bw_legacy_copy)
		push(&b, strdup("--no-legacy-copy"));
	push(&b, strdup("--result-fd=3"));
	if (b.oom) {
		ftd_err_set(err, 503, "internal", NULL, "out of memory");
		goto fail;
	}
	*gpu_pos = gpu;
	*argv_out = b.v;
	return 0;
fail:
	if (b.v)
		ftd_argv_free(b.v);
	return -1;
}
