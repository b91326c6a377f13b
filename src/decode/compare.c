#include "decode/compare.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/strutil.h"

struct named {
	const char *name;
	enum ftcmp_key_type type;
	const char *target;
};

static const struct named named_keys[] = {
	{"moe-backend", FTCMP_MOE_BACKEND, "--moe-backend"},
	{"moe-hybrid-max-fetch", FTCMP_HYBRID_FETCH, "--moe-hybrid-max-fetch"},
	{"moe-cache-size", FTCMP_CACHE_SIZE, "--moe-cache-size"},
	{"n-cpu-moe", FTCMP_N_CPU_MOE, "--n-cpu-moe"},
	{"override-tensor", FTCMP_OVERRIDE_TENSOR, "--override-tensor"},
	{"GGML_OP_OFFLOAD_MIN_BATCH", FTCMP_GGML_MIN_BATCH, "GGML_OP_OFFLOAD_MIN_BATCH"},
};
#define N_NAMED ((int)(sizeof named_keys / sizeof named_keys[0]))

void ftcmp_release(struct ftcmp_plan *p)
{
	if (!p)
		return;
	for (int k = 0; k < p->nkeys; k++)
		for (int v = 0; v < p->keys[k].nvalues; v++)
			free(p->keys[k].values[v]);
	memset(p, 0, sizeof *p);
}

int ftcmp_arms(const struct ftcmp_plan *p)
{
	int n = 1;
	for (int k = 0; k < p->nkeys; k++)
		n *= p->keys[k].nvalues;
	return n;
}

static int env_name_ok(const char *s)
{
	if (!*s || !(isalpha((unsigned char)*s) || *s == '_'))
		return 0;
	for (; *s; s++)
		if (!(isalnum((unsigned char)*s) || *s == '_'))
			return 0;
	return 1;
}

static int flag_ok(const char *s)
{
	if (s[0] != '-' || !s[1] || strlen(s) >= 96)
		return 0;
	for (; *s; s++)
		if (!isgraph((unsigned char)*s) || *s == '=')
			return 0;
	return 1;
}

/* An integer in [lo, hi]. */
static int int_in(const char *s, long lo, long hi)
{
	long v;
	return ftstr_parse_long(s, lo, hi, &v) == 0;
}

/* Whether value v fits key k; a reason into err when not. */
static int value_ok(const struct ftcmp_key *k, const char *v, int restricted, char *err, size_t n)
{
	if (!*v)
		return 1;
	for (const char *c = v; *c; c++)
		if (iscntrl((unsigned char)*c) || (restricted && !isgraph((unsigned char)*c))) {
			snprintf(err, n, "--compare %s: the value '%s' has a %s", k->name, v,
				 iscntrl((unsigned char)*c) ? "control character" : "space or non-ASCII byte");
			return 0;
		}
	const char *want = NULL;
	switch (k->type) {
	case FTCMP_MOE_BACKEND:
		if (strlen(v) >= 32 || strspn(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") !=
		    strlen(v))
			want = "a backend name (letters, digits, -_.)";
		break;
	case FTCMP_HYBRID_FETCH:
		if (!int_in(v, -1, 1 << 20))
			want = "an integer in [-1, 1048576] (-1: from the bw profile)";
		break;
	case FTCMP_CACHE_SIZE:
		if (strcmp(v, "auto") && !int_in(v, 1, 1000000))
			want = "a number of slots in [1, 1000000] or auto";
		break;
	case FTCMP_N_CPU_MOE:
		if (!int_in(v, 0, 100000))
			want = "a number of layers in [0, 100000]";
		break;
	case FTCMP_GGML_MIN_BATCH:
		if (!int_in(v, 0, 1 << 30))
			want = "a batch size in [0, 1073741824]";
		break;
	default:
		break;
	}
	if (want) {
		snprintf(err, n, "--compare %s: '%s' is not %s", k->name, v, want);
		return 0;
	}
	return 1;
}

/* Split s at unescaped commas into k->values. */
static int split_values(struct ftcmp_key *k, const char *s, int restricted, char *err, size_t n)
{
	char buf[FTCMP_VALUE_MAX];
	size_t l = 0;
	for (const char *p = s;; p++) {
		if (*p == '\\' && (p[1] == ',' || p[1] == '\\')) {
			p++;
		} else if (!*p || *p == ',') {
			if (k->nvalues >= FTCMP_MAX_VALUES) {
				snprintf(err, n, "--compare %s: more than %d values", k->name, FTCMP_MAX_VALUES);
				return -E2BIG;
			}
			buf[l] = '\0';
			if (!value_ok(k, buf, restricted, err, n))
				return -EINVAL;
			for (int i = 0; i < k->nvalues; i++)
				if (!strcmp(k->values[i], buf)) {
					snprintf(err, n, "--compare %s: the value '%s' is given twice", k->name, buf);
					return -EINVAL;
				}
			if (!(k->values[k->nvalues] = strdup(buf)))
				return -ENOMEM;
			k->nvalues++;
			l = 0;
			if (!*p)
				return 0;
			continue;
		}
		if (l + 1 >= sizeof buf) {
			snprintf(err, n, "--compare %s: a value longer than %d bytes", k->name, FTCMP_VALUE_MAX - 1);
			return -EINVAL;
		}
		buf[l++] = *p;
	}
}

int ftcmp_add(struct ftcmp_plan *p, const char *spec, int restricted, char *err, size_t n)
{
	const char *eq = NULL;
	/* the key ends at the first '=' after a server-arg:/env: prefix's own name */
	if (!spec || !(eq = strchr(spec, '='))) {
		snprintf(err, n, "--compare: '%s' is not KEY=V1,V2", spec ? spec : "");
		return -EINVAL;
	}
	if (p->nkeys >= FTCMP_MAX_KEYS) {
		snprintf(err, n, "--compare: more than %d keys", FTCMP_MAX_KEYS);
		return -E2BIG;
	}
	struct ftcmp_key *k = &p->keys[p->nkeys];
	memset(k, 0, sizeof *k);
	size_t kl = (size_t)(eq - spec);
	if (kl >= sizeof k->name) {
		snprintf(err, n, "--compare: the key '%.40s...' is too long", spec);
		return -EINVAL;
	}
	memcpy(k->name, spec, kl);
	k->name[kl] = '\0';
	int found = 0;
	for (int i = 0; i < N_NAMED && !found; i++)
		if (!strcmp(k->name, named_keys[i].name)) {
			k->type = named_keys[i].type;
			snprintf(k->target, sizeof k->target, "%s", named_keys[i].target);
			found = 1;
		}
	if (!found && !restricted && !strncmp(k->name, "server-arg:", 11)) {
		if (!flag_ok(k->name + 11)) {
			snprintf(err, n, "--compare %s: '%s' is not a flag (-x or --name, no '=' or space)", k->name,
				 k->name + 11);
			return -EINVAL;
		}
		k->type = FTCMP_SERVER_ARG;
		snprintf(k->target, sizeof k->target, "%s", k->name + 11);
		found = 1;
	} else if (!found && !restricted && !strncmp(k->name, "env:", 4)) {
		if (!env_name_ok(k->name + 4) || strlen(k->name + 4) >= sizeof k->target) {
			snprintf(err, n, "--compare %s: '%s' is not an environment variable name", k->name, k->name + 4);
			return -EINVAL;
		}
		k->type = FTCMP_ENV;
		snprintf(k->target, sizeof k->target, "%s", k->name + 4);
		found = 1;
	}
	if (!found) {
		snprintf(err, n, "--compare: unknown key '%s' (known: moe-backend, moe-hybrid-max-fetch, moe-cache-size, "
			 "n-cpu-moe, override-tensor, GGML_OP_OFFLOAD_MIN_BATCH%s)", k->name,
			 restricted ? "" : ", server-arg:--FLAG, env:NAME");
		return -EINVAL;
	}
	for (int i = 0; i < p->nkeys; i++)
		if (!strcmp(p->keys[i].target, k->target) && (p->keys[i].type == FTCMP_ENV || p->keys[i].type ==
		    FTCMP_GGML_MIN_BATCH) == (k->type == FTCMP_ENV || k->type == FTCMP_GGML_MIN_BATCH)) {
			snprintf(err, n, "--compare %s: %s is already compared (as %s)", k->name, k->target, p->keys[i].name);
			return -EINVAL;
		}
	int r = split_values(k, eq + 1, restricted, err, n);
	if (r < 0) {
		for (int v = 0; v < k->nvalues; v++)
			free(k->values[v]);
		memset(k, 0, sizeof *k);
		return r;
	}
	p->nkeys++;
	if (ftcmp_arms(p) > FTCMP_MAX_ARMS) {
		snprintf(err, n, "--compare: %d arms (the values' cross product), at most %d", ftcmp_arms(p),
			 FTCMP_MAX_ARMS);
		return -E2BIG;
	}
	return 0;
}

int ftcmp_check(const struct ftcmp_plan *p, enum ftsrv_kind kind, char *err, size_t n)
{
	for (int i = 0; i < p->nkeys; i++) {
		const struct ftcmp_key *k = &p->keys[i];
		switch (k->type) {
		case FTCMP_MOE_BACKEND:
		case FTCMP_HYBRID_FETCH:
		case FTCMP_CACHE_SIZE:
			if (kind != FTSRV_FREETOKEN) {
				snprintf(err, n, "--compare %s: a flag of FreeToken's server (--server-kind freetoken), not "
					 "of %s (server-arg:--FLAG=... passes any flag)", k->name, ftsrv_kind_name(kind));
				return -EINVAL;
			}
			break;
		case FTCMP_N_CPU_MOE:
		case FTCMP_OVERRIDE_TENSOR:
		case FTCMP_GGML_MIN_BATCH:
			if (kind != FTSRV_LLAMACPP && !(kind == FTSRV_OPENAI && k->type == FTCMP_GGML_MIN_BATCH)) {
				snprintf(err, n, "--compare %s: a %s of llama.cpp's server (--server-kind llama.cpp), not "
					 "of %s (server-arg:--FLAG=... or env:NAME=... passes any)", k->name,
					 k->type == FTCMP_GGML_MIN_BATCH ? "setting" : "flag", ftsrv_kind_name(kind));
				return -EINVAL;
			}
			break;
		default:
			break;
		}
	}
	if (ftcmp_arms(p) < 2) {
		snprintf(err, n, "--compare: %d arm; a comparison needs at least two values", ftcmp_arms(p));
		return -EINVAL;
	}
	return 0;
}

void ftcmp_arm(const struct ftcmp_plan *p, int i, struct ftcmp_arm *a)
{
	memset(a, 0, sizeof *a);
	/* mixed radix, the last key fastest */
	for (int k = p->nkeys - 1; k >= 0; k--) {
		int nv = p->keys[k].nvalues;
		a->value[k] = p->keys[k].values[i % nv];
		i /= nv;
	}
	size_t l = 0;
	for (int k = 0; k < p->nkeys && l < sizeof a->label; k++)
		l += (size_t)snprintf(a->label + l, sizeof a->label - l, "%s%s=%s", k ? " " : "", p->keys[k].name,
				      *a->value[k] ? a->value[k] : "(default)");
}

static int push(char ***v, int *n, const char *fmt, const char *a, const char *b)
{
	char **q = realloc(*v, (size_t)(*n + 2) * sizeof *q);
	if (!q)
		return -ENOMEM;
	*v = q;
	if (asprintf(&q[*n], fmt, a, b) < 0) {
		q[*n] = NULL;
		return -ENOMEM;
	}
	q[++*n] = NULL;
	return 0;
}

int ftcmp_apply(const struct ftcmp_plan *p, const struct ftcmp_arm *a, struct ftsrv_serve_cfg *serve,
		const char **backend, char ***args, char ***set_env, char ***unset_env)
{
	char **w = calloc(1, sizeof *w), **se = calloc(1, sizeof *se), **ue = calloc(1, sizeof *ue);
	int nw = 0, ns = 0, nu = 0, r = w && se && ue ? 0 : -ENOMEM;
	for (int k = 0; k < p->nkeys && !r; k++) {
		const struct ftcmp_key *key = &p->keys[k];
		const char *v = a->value[k];
		if (!*v) {
			if (key->type == FTCMP_ENV || key->type == FTCMP_GGML_MIN_BATCH)
				r = push(&ue, &nu, "%s=%s", key->target, "");
			continue;
		}
		switch (key->type) {
		case FTCMP_MOE_BACKEND: *backend = v; break;
		case FTCMP_HYBRID_FETCH: serve->hybrid_fetch = strtol(v, NULL, 10); break;
		case FTCMP_CACHE_SIZE:
			serve->cache_rate = -1;
			serve->cache_size = strcmp(v, "auto") ? strtol(v, NULL, 10) : 0;
			break;
		case FTCMP_ENV:
		case FTCMP_GGML_MIN_BATCH: r = push(&se, &ns, "%s=%s", key->target, v); break;
		default:
			if (!(r = push(&w, &nw, "%s%s", key->target, "")))
				r = push(&w, &nw, "%s%s", v, "");
			break;
		}
	}
	if (r) {
		ftsrv_free_argv(w);
		ftsrv_free_argv(se);
		ftsrv_free_argv(ue);
		return -ENOMEM;
	}
	*args = w;
	*set_env = se;
	*unset_env = ue;
	return 0;
}

json_t *ftcmp_arm_settings(const struct ftcmp_plan *p, const struct ftcmp_arm *a)
{
	json_t *j = json_object();
	for (int k = 0; j && k < p->nkeys; k++)
		if (json_object_set_new(j, p->keys[k].name, *a->value[k] ? json_string(a->value[k]) : json_null()) < 0) {
			json_decref(j);
			return NULL;
		}
	return j;
}

const char *ftcmp_decision_name(enum ftcmp_decision d)
{
	return d == FTCMP_WINNER ? "winner" : d == FTCMP_TIE ? "tie" : "no_data";
}

enum ftcmp_decision ftcmp_decide(const struct ftcmp_fig *f, const int *eligible, const char *const *labels, int n,
				 int higher_better, double min_gap, int *winner, int *runner_up, char *why,
				 size_t wn)
{
	int best = -1, second = -1;
	double sign = higher_better ? 1 : -1;
	for (int i = 0; i < n; i++) {
		if (!eligible[i] || f[i].samples < 1)
			continue;
		if (best < 0 || sign * f[i].median > sign * f[best].median) {
			second = best;
			best = i;
		} else if (second < 0 || sign * f[i].median > sign * f[second].median) {
			second = i;
		}
	}
	*winner = best;
	*runner_up = second;
	if (second < 0) {
		snprintf(why, wn, "%s", best < 0 ? "no arm measured" : "only one arm measured");
		return FTCMP_NO_DATA;
	}
	const struct ftcmp_fig *b = &f[best], *s = &f[second];
	double gap = b->median - s->median;
	double rel = s->median != 0 ? gap / s->median : 0;
	/* the winner's worst cycle against the runner-up's best */
	int apart = higher_better ? b->min > s->max : b->max < s->min;
	char pct[48];
	snprintf(pct, sizeof pct, "%+.1f %%", rel * 100);
	if (b->samples < 2 || s->samples < 2) {
		snprintf(why, wn, "%s vs %s: %s, but %s measured only one cycle: no spread", labels[best], labels[second],
			 pct, b->samples < 2 ? labels[best] : labels[second]);
		return FTCMP_TIE;
	}
	if (!apart) {
		snprintf(why, wn, "%s vs %s: %s, within the spread (ranges %.4g-%.4g and %.4g-%.4g overlap)", labels[best],
			 labels[second], pct, b->min, b->max, s->min, s->max);
		return FTCMP_TIE;
	}
	if (sign * rel < min_gap) {
		snprintf(why, wn, "%s vs %s: %s, ranges apart but under the %.1f %% minimum gap", labels[best],
			 labels[second], pct, min_gap * 100);
		return FTCMP_TIE;
	}
	snprintf(why, wn, "%s over %s, ranges apart (%.4g-%.4g vs %.4g-%.4g)", pct, labels[second], b->min, b->max,
		 s->min, s->max);
	return FTCMP_WINNER;
}
