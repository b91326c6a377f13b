/* kindarg: see kindarg.h. */
#include "kindarg.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode/compare.h"
#include "util/strutil.h"

void ftd_kind_err_set(struct ftd_err *e, int status, const char *code, const char *field, const char *fmt, ...)
{
	e->status = status;
	snprintf(e->code, sizeof e->code, "%s", code);
	snprintf(e->field, sizeof e->field, "%s", field ? field : "");
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e->message, sizeof e->message, fmt, ap);
	va_end(ap);
}

void ftd_kind_argv_free(char **argv)
{
	if (!argv)
		return;
	for (char **p = argv; *p; p++)
		free(*p);
	free(argv);
}

void ftd_kind_argv_push(struct ftd_argv *b, char *s)
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

char *ftd_kind_argv_flag(const char *flag, const char *val)
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

/* a name list: one string "a,b" or 1..64 strings of letters, digits and -_.:+ */
static int add_names(const struct ftargs_spec *a, const json_t *v, const char *field, const struct ftd_kind_ctx *c,
		      struct ftd_argv *b, int gpu_all, int *gpu, struct ftd_err *err)
{
	char buf[8192]; /* 64 names of 64 bytes, comma-joined */
	buf[0] = '\0';
	if (json_is_string(v)) {
		const char *s = json_string_value(v);
		if (strlen(s) > 256 || !name_ok(s, 1)) {
			ftd_kind_err_set(err, 400, "invalid_argument", field,
				    "%s: expected names of letters, digits and -_.:+ separated by commas", field);
			return -1;
		}
		snprintf(buf, sizeof buf, "%s", s);
	} else if (json_is_array(v) && json_array_size(v) > 0 && json_array_size(v) <= 64) {
		size_t i;
		json_t *it;
		json_array_foreach(v, i, it) {
			if (!json_is_string(it) || strlen(json_string_value(it)) > 64 ||
			    !name_ok(json_string_value(it), 0) || join(buf, sizeof buf, json_string_value(it))) {
				ftd_kind_err_set(err, 400, "invalid_argument", field,
					    "%s[%zu]: expected a name of letters, digits and -_.:+", field, i);
				return -1;
			}
		}
	} else {
		ftd_kind_err_set(err, 400, "invalid_argument", field,
			    "%s: expected a string or a list of 1 to 64 strings", field);
		return -1;
	}
	ftd_kind_argv_push(b, ftd_kind_argv_flag(a->flag, buf));
	return 0;
}

/* an integer in the row's bounds */
static int add_int(const struct ftargs_spec *a, const json_t *v, const char *field, const struct ftd_kind_ctx *c,
		    struct ftd_argv *b, int gpu_all, int *gpu, struct ftd_err *err)
{
	char buf[64];
	if (!json_is_integer(v) || json_integer_value(v) < (json_int_t)a->lo ||
	    json_integer_value(v) > (json_int_t)a->hi) {
		ftd_kind_err_set(err, 400, "invalid_argument", field, "%s: expected an integer in [%.0f, %.0f]",
			    field, a->lo, a->hi);
		return -1;
	}
	snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(v));
	ftd_kind_argv_push(b, ftd_kind_argv_flag(a->flag, buf));
	return 0;
}

/* a number in the row's bounds */
static int add_num(const struct ftargs_spec *a, const json_t *v, const char *field, const struct ftd_kind_ctx *c,
		    struct ftd_argv *b, int gpu_all, int *gpu, struct ftd_err *err)
{
	char buf[64];
	double x;
	if (num_of(v, &x) < 0 || x < a->lo || x > a->hi) {
		ftd_kind_err_set(err, 400, "invalid_argument", field, "%s: expected a number in [%g, %g]", field,
			    a->lo, a->hi);
		return -1;
	}
	fmt_num(buf, sizeof buf, x);
	ftd_kind_argv_push(b, ftd_kind_argv_flag(a->flag, buf));
	return 0;
}

/* true: the bare flag; false: nothing */
static int add_bool(const struct ftargs_spec *a, const json_t *v, const char *field, const struct ftd_kind_ctx *c,
		     struct ftd_argv *b, int gpu_all, int *gpu, struct ftd_err *err)
{
	if (!json_is_boolean(v)) {
		ftd_kind_err_set(err, 400, "invalid_argument", field, "%s: expected true or false", field);
		return -1;
	}
	if (json_is_true(v))
		ftd_kind_argv_push(b, strdup(a->flag));
	return 0;
}

/* a list of 1..max_items integers or numbers in bounds, or choices */
static int add_list(const struct ftargs_spec *a, const json_t *v, const char *field, const struct ftd_kind_ctx *c,
		     struct ftd_argv *b, int gpu_all, int *gpu, struct ftd_err *err)
{
	char buf[8192]; /* 64 names of 64 bytes, comma-joined */
	double x;
	size_t max_items = a->max_items > 0 ? (size_t)a->max_items
			   : a->type == FTARGS_T_ENUMLIST && a->hi > 0 ? (size_t)a->hi : 64;
	if (!json_is_array(v) || json_array_size(v) == 0 || json_array_size(v) > max_items) {
		ftd_kind_err_set(err, 400, "invalid_argument", field, "%s: expected a list of 1 to %zu items", field,
			    max_items);
		return -1;
	}
	buf[0] = '\0';
	size_t i;
	json_t *it;
	json_array_foreach(v, i, it) {
		char one[64];
		int bad;
		if (a->type == FTARGS_T_INTLIST) {
			bad = !json_is_integer(it) || json_integer_value(it) < (json_int_t)a->lo ||
			      json_integer_value(it) > (json_int_t)a->hi;
			if (!bad)
				snprintf(one, sizeof one, "%lld", (long long)json_integer_value(it));
		} else if (a->type == FTARGS_T_NUMLIST) {
			bad = num_of(it, &x) < 0 || x < a->lo || x > a->hi;
			if (!bad)
				fmt_num(one, sizeof one, x);
		} else {
			bad = !json_is_string(it) || !choice_ok(a->choices, json_string_value(it));
			if (!bad)
				snprintf(one, sizeof one, "%s", json_string_value(it));
		}
		if (bad || join(buf, sizeof buf, one)) {
			if (a->type == FTARGS_T_ENUMLIST)
				ftd_kind_err_set(err, 400, "invalid_argument", field, "%s[%zu]: expected one of %s",
					    field, i, a->choices);
			else
				ftd_kind_err_set(err, 400, "invalid_argument", field,
					    "%s[%zu]: expected a %s in [%g, %g]", field, i,
					    a->type == FTARGS_T_INTLIST ? "integer" : "number", a->lo, a->hi);
			return -1;
		}
	}
	ftd_kind_argv_push(b, ftd_kind_argv_flag(a->flag, buf));
	return 0;
}

/* one of the row's choices */
static int add_enum(const struct ftargs_spec *a, const json_t *v, const char *field, const struct ftd_kind_ctx *c,
		     struct ftd_argv *b, int gpu_all, int *gpu, struct ftd_err *err)
{
	if (!json_is_string(v) || !choice_ok(a->choices, json_string_value(v))) {
		ftd_kind_err_set(err, 400, "invalid_argument", field, "%s: expected one of %s", field, a->choices);
		return -1;
	}
	ftd_kind_argv_push(b, ftd_kind_argv_flag(a->flag, json_string_value(v)));
	return 0;
}

/* a path that resolves under a configured model root (the worker gets the resolved one) */
static int add_path(const struct ftargs_spec *a, const json_t *v, const char *field, const struct ftd_kind_ctx *c,
		     struct ftd_argv *b, int gpu_all, int *gpu, struct ftd_err *err)
{
	if (!json_is_string(v) || !*json_string_value(v) || ftstr_utf8_len(json_string_value(v)) > 4096) {
		ftd_kind_err_set(err, 400, "invalid_argument", field, "%s: expected a path", field);
		return -1;
	}
	char *rp;
	if (path_under_roots(c->cfg, json_string_value(v), &rp) < 0) {
		ftd_kind_err_set(err, 403, "forbidden", field,
			    "%s: does not resolve to an existing path under a configured model root", field);
		return -1;
	}
	ftd_kind_argv_push(b, ftd_kind_argv_flag(a->flag, rp));
	free(rp);
	return 0;
}

/* a GPU of the inventory by index or uuid (into *gpu), or "all" where the kind takes every GPU */
static int add_gpu(const struct ftargs_spec *a, const json_t *v, const char *field, const struct ftd_kind_ctx *c,
		    struct ftd_argv *b, int gpu_all, int *gpu, struct ftd_err *err)
{
	char spec[96];
	if (gpu_all && json_is_string(v) && !strcmp(json_string_value(v), "all")) {
		/* every GPU alone, then all at once: holds every GPU and the host */
		if (c->ngpus <= 0) {
			ftd_kind_err_set(err, 400, "unknown_gpu", field, "%s: this host has no GPU", field);
			return -1;
		}
		ftd_kind_argv_push(b, strdup("--gpu=all"));
		*gpu = FTD_KIND_GPU_ALL;
		return 0;
	}
	if (json_is_integer(v) && json_integer_value(v) >= 0 && json_integer_value(v) < 256)
		snprintf(spec, sizeof spec, "%lld", (long long)json_integer_value(v));
	else if (json_is_string(v) && *json_string_value(v) && ftstr_utf8_len(json_string_value(v)) <= 80)
		snprintf(spec, sizeof spec, "%s", json_string_value(v));
	else {
		ftd_kind_err_set(err, 400, "invalid_argument", field,
			    "%s: expected a GPU index or uuid", field);
		return -1;
	}
	char why[256] = "";
	int pos = c->ngpus > 0 ? ftgpu_resolve(c->gpus, c->ngpus, spec, why, sizeof why) : -ENODEV;
	if (pos < 0) {
		ftd_kind_err_set(err, 400, "unknown_gpu", field, "%s: %s", field,
			    c->ngpus > 0 ? why : "this host has no GPU");
		return -1;
	}
	*gpu = pos;
	return 0;
}

/* a decode-server name of the config: the worker gets its command template */
static int add_server(const struct ftargs_spec *a, const json_t *v, const char *field, const struct ftd_kind_ctx *c,
		       struct ftd_argv *b, int gpu_all, int *gpu, struct ftd_err *err)
{
	const char *name = json_string_value(v);
	if (!name || ftd_config_server_name_len(name, strlen(name)) < 0) {
		ftd_kind_err_set(err, 400, "invalid_argument", field,
			    "%s: expected a server name of 1 to %d of A-Z a-z 0-9 _ . -", field,
			    FTD_CONFIG_SERVER_NAME_MAX);
		return -1;
	}
	const char *tmpl = ftd_config_decode_server(c->cfg, name);
	if (!tmpl) {
		ftd_kind_err_set(err, 403, "forbidden", field, "%s: '%s' is not a decode-server in the config",
			    field, name);
		return -1;
	}
	ftd_kind_argv_push(b, ftd_kind_argv_flag(a->flag, tmpl));
	return 0;
}

/* decode comparisons "KEY=V1,V2" (the named keys only), one flag each */
static int add_compare(const struct ftargs_spec *a, const json_t *v, const char *field, const struct ftd_kind_ctx *c,
		        struct ftd_argv *b, int gpu_all, int *gpu, struct ftd_err *err)
{
	/* each checked as the worker will parse it, restricted: the named keys only (no
	 * server-arg: or env:, the configured template and the worker's environment stay
	 * what the operator set), values without spaces */
	size_t max_items = a->max_items > 0 ? (size_t)a->max_items : 64;
	json_t *one = json_is_string(v) ? json_pack("[O]", v) : json_incref((json_t *)v);
	struct ftcmp_plan plan = {0};
	char why[512];
	size_t i;
	json_t *it;
	if (!json_is_array(one) || json_array_size(one) == 0 || json_array_size(one) > max_items) {
		json_decref(one);
		ftd_kind_err_set(err, 400, "invalid_argument", field,
			    "%s: expected \"KEY=V1,V2\" or a list of 1 to %zu of them", field, max_items);
		return -1;
	}
	json_array_foreach(one, i, it) {
		if (!json_is_string(it) || strlen(json_string_value(it)) > 1024 ||
		    ftcmp_add(&plan, json_string_value(it), 1, why, sizeof why) < 0) {
			ftcmp_release(&plan);
			json_decref(one);
			ftd_kind_err_set(err, 400, "invalid_argument", field, "%s[%zu]: %s", field, i,
				    json_is_string(it) ? why : "expected a string KEY=V1,V2");
			return -1;
		}
	}
	json_array_foreach(one, i, it)
		ftd_kind_argv_push(b, ftd_kind_argv_flag(a->flag, json_string_value(it)));
	ftcmp_release(&plan);
	json_decref(one);
	return 0;
}

/* an http(s) URL allowed by decode-urls, normalized */
static int add_url(const struct ftargs_spec *a, const json_t *v, const char *field, const struct ftd_kind_ctx *c,
		    struct ftd_argv *b, int gpu_all, int *gpu, struct ftd_err *err)
{
	char why[160];
	const char *u = json_string_value(v);
	if (!u || ftd_config_url_check(u, why, sizeof why) < 0) {
		ftd_kind_err_set(err, 400, "invalid_argument", field, "%s: %s", field,
			    u ? why : "expected an http(s) URL");
		return -1;
	}
	char norm[FTD_CONFIG_URL_MAX + 1];
	if (ftd_config_url_normalize(u, norm, sizeof norm, why, sizeof why) < 0) {
		ftd_kind_err_set(err, 400, "invalid_argument", field, "%s: %s", field, why);
		return -1;
	}
	if (!ftd_config_url_allowed(c->cfg, norm)) {
		ftd_kind_err_set(err, 403, "forbidden", field, "%s: not in decode-urls of the config%s", field,
			    c->cfg->n_decode_urls ? "" : " (none configured)");
		return -1;
	}
	/* the worker gets the URL as it was checked, not one a client could read otherwise */
	ftd_kind_argv_push(b, ftd_kind_argv_flag(a->flag, norm));
	return 0;
}

int ftd_kindarg_add(const struct ftargs_spec *a, const json_t *v, const char *field, const struct ftd_kind_ctx *c,
		    struct ftd_argv *b, int gpu_all, int *gpu, struct ftd_err *err)
{
	switch (a->type) {
	case FTARGS_T_NAMES: return add_names(a, v, field, c, b, gpu_all, gpu, err);
	case FTARGS_T_INT: return add_int(a, v, field, c, b, gpu_all, gpu, err);
	case FTARGS_T_NUM: return add_num(a, v, field, c, b, gpu_all, gpu, err);
	case FTARGS_T_BOOL: return add_bool(a, v, field, c, b, gpu_all, gpu, err);
	case FTARGS_T_INTLIST: return add_list(a, v, field, c, b, gpu_all, gpu, err);
	case FTARGS_T_NUMLIST: return add_list(a, v, field, c, b, gpu_all, gpu, err);
	case FTARGS_T_ENUMLIST: return add_list(a, v, field, c, b, gpu_all, gpu, err);
	case FTARGS_T_ENUM: return add_enum(a, v, field, c, b, gpu_all, gpu, err);
	case FTARGS_T_PATH: return add_path(a, v, field, c, b, gpu_all, gpu, err);
	case FTARGS_T_GPU: return add_gpu(a, v, field, c, b, gpu_all, gpu, err);
	case FTARGS_T_SERVER: return add_server(a, v, field, c, b, gpu_all, gpu, err);
	case FTARGS_T_COMPARE: return add_compare(a, v, field, c, b, gpu_all, gpu, err);
	case FTARGS_T_URL: return add_url(a, v, field, c, b, gpu_all, gpu, err);
	}
	ftd_kind_err_set(err, 400, "invalid_argument", field, "%s: the table has no rule for its type", field);
	return -1;
}
