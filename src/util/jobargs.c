#include "util/jobargs.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/strutil.h"

#define MAX_LIST 4096

int ftargs_key(const char *opt, char *out, size_t n)
{
	if (!opt || strncmp(opt, "--", 2) || !isalpha((unsigned char)opt[2]))
		return -EINVAL;
	size_t o = 0;
	for (const char *p = opt + 2; *p; p++) {
		char ch = *p;
		if (!isalnum((unsigned char)ch) && ch != '-' && ch != '_')
			return -EINVAL;
		if (o + 2 > n)
			return -ENAMETOOLONG;
		out[o++] = ch == '-' ? '_' : ch;
	}
	out[o] = '\0';
	return 0;
}

/* A plain decimal integer: optional '-', digits, no leading zero unless it is "0". */
static int looks_integer(const char *s)
{
	const char *p = s + (*s == '-');
	if (!isdigit((unsigned char)*p))
		return 0;
	if (p[0] == '0' && p[1])
		return 0;
	for (; *p; p++)
		if (!isdigit((unsigned char)*p))
			return 0;
	return 1;
}

/* A plain decimal number with a '.' or an exponent ("0.25", "-1.5e3", "2e9"). */
static int looks_real(const char *s)
{
	int digits = 0, mark = 0;
	for (const char *p = s; *p; p++) {
		if (isdigit((unsigned char)*p))
			digits++;
		else if (*p == '.' || *p == 'e' || *p == 'E')
			mark = 1;
		else if (*p != '-' && *p != '+')
			return 0;
	}
	double d;
	return digits && mark && ftstr_parse_double(s, -DBL_MAX, DBL_MAX, &d) == 0;
}

static int parse_bool(const char *s, int *b)
{
	static const char *yes[] = {"true", "yes", "on", "1"}, *no[] = {"false", "no", "off", "0"};
	for (size_t i = 0; i < 4; i++) {
		if (!strcasecmp(s, yes[i])) {
			*b = 1;
			return 0;
		}
		if (!strcasecmp(s, no[i])) {
			*b = 0;
			return 0;
		}
	}
	return -EINVAL;
}

static int list_value(const char *s, enum ftargs_type item, json_t **out)
{
	char **v = NULL;
	int n = ftstr_split(s, &v, MAX_LIST);
	if (n < 0)
		return n;
	json_t *a = json_array();
	int r = a ? 0 : -ENOMEM;
	for (int i = 0; i < n && r == 0; i++) {
		json_t *e = NULL;
		r = ftargs_value(v[i], item, &e);
		if (r == 0 && json_array_append_new(a, e) < 0)
			r = -ENOMEM;
	}
	ftstr_free_list(v, n);
	if (r < 0) {
		json_decref(a);
		return r;
	}
	*out = a;
	return 0;
}

int ftargs_value(const char *s, enum ftargs_type t, json_t **out)
{
	long l;
	double d;
	int b;
	json_t *j = NULL;
	if (!s)
		return -EINVAL;
	switch (t) {
	case FTARGS_AUTO:
		if (!strcmp(s, "true") || !strcmp(s, "false"))
			j = json_boolean(s[0] == 't');
		else if (looks_integer(s) && ftstr_parse_long(s, LONG_MIN, LONG_MAX, &l) == 0)
			j = json_integer(l);
		else if (looks_real(s))
			j = json_real(strtod(s, NULL));
		else
			j = json_string(s);
		break;
	case FTARGS_STRING:
		j = json_string(s);
		break;
	case FTARGS_INTEGER:
		if (ftstr_parse_long(s, LONG_MIN, LONG_MAX, &l) < 0)
			return -EINVAL;
		j = json_integer(l);
		break;
	case FTARGS_NUMBER:
		if (ftstr_parse_long(s, LONG_MIN, LONG_MAX, &l) == 0)
			j = json_integer(l);
		else if (ftstr_parse_double(s, -DBL_MAX, DBL_MAX, &d) == 0 && looks_real(s))
			j = json_real(d);
		else
			return -EINVAL;
		break;
	case FTARGS_BOOLEAN:
		if (parse_bool(s, &b) < 0)
			return -EINVAL;
		j = json_boolean(b);
		break;
	case FTARGS_INT_LIST:
		return list_value(s, FTARGS_INTEGER, out);
	case FTARGS_NUMBER_LIST:
		return list_value(s, FTARGS_NUMBER, out);
	case FTARGS_STRING_LIST:
		return list_value(s, FTARGS_STRING, out);
	default:
		return -EINVAL;
	}
	if (!j)
		return -ENOMEM;
	*out = j;
	return 0;
}

enum ftargs_type ftargs_hint_type(const struct ftargs_hint *hints, const char *kind, const char *key)
{
	for (const struct ftargs_hint *h = hints; h && h->key; h++)
		if ((!h->kind || (kind && !strcmp(h->kind, kind))) && !strcmp(h->key, key))
			return h->type;
	return FTARGS_AUTO;
}

/* The job kinds' argument tables. A row names the argument, its type to the daemon and the worker
 * flag it becomes; its bounds, choices and most items are the flag's own (its row in the worker's
 * option table: the daemon reads them from there, daemon/jobflags.h). choices or max_items are set
 * here only where the flag takes a free list that the daemon holds to the names it knows. */
static const struct ftargs_spec bw_args[] = {
	{"dtype", FTARGS_T_NAMES, "--dtype"},
	{"model", FTARGS_T_NAMES, "--model"},
	{"formats", FTARGS_T_NAMES, "--formats"},
	{"isa", FTARGS_T_NAMES, "--isa"},
	{"threshold", FTARGS_T_NUM, "--threshold"},
	{"cpu_threads", FTARGS_T_INT, "--cpu-threads"}, /* 0: all cores, as in the seed */
	{"repeat", FTARGS_T_INT, "--repeat"}, /* sets the four below; each given wins */
	{"cpu_iters", FTARGS_T_INT, "--cpu-iters"},
	{"pcie_mib", FTARGS_T_INT, "--pcie-mib"},
	{"pcie_iters", FTARGS_T_INT, "--pcie-iters"},
	{"kernel_cpu_iters", FTARGS_T_INT, "--kernel-cpu-iters"},
	{"kernel_pcie_iters", FTARGS_T_INT, "--kernel-pcie-iters"},
	{"overlap_seconds", FTARGS_T_NUM, "--overlap-seconds"},
	{"max_spread", FTARGS_T_NUM, "--max-spread"},
	{"no_checks", FTARGS_T_BOOL, "--no-checks"},
	{"engines", FTARGS_T_INT, "--engines"},
	{"engine_threads", FTARGS_T_INT, "--engine-threads"},
	{"deployment", FTARGS_T_ENUM, "--deployment"},
	{"gather", FTARGS_T_ENUM, "--gather"},
	{"batch_sweep", FTARGS_T_INTLIST, "--batch-sweep"},
	{"gpu", FTARGS_T_GPU, "--gpu"},
	{NULL}};

static const struct ftargs_spec cache_copy_args[] = {
	{"models", FTARGS_T_NAMES, "--models"},
	{"cache_slots", FTARGS_T_INTLIST, "--cache-slots"},
	{"batch_sizes", FTARGS_T_INTLIST, "--batch-sizes"},
	{"miss_rates", FTARGS_T_NUMLIST, "--miss-rates"},
	{"repeat", FTARGS_T_INT, "--repeat"},
	{"copy", FTARGS_T_ENUM, "--copy"},
	{"gpu", FTARGS_T_GPU, "--gpu"},
	{NULL}};

static const struct ftargs_spec load_weights_args[] = {
	{"model", FTARGS_T_PATH, "--model", .required = 1},
	{"modes", FTARGS_T_ENUMLIST, "--modes", .choices = "baseline|parallel|ftw", .max_items = 3},
	{"workers", FTARGS_T_INT, "--workers"},
	{"repeat", FTARGS_T_INT, "--repeat"},
	{"chunk_mib", FTARGS_T_INT, "--chunk-mib"},
	{"shard_gib", FTARGS_T_NUM, "--shard-gib"},
	{"shard_mib", FTARGS_T_INT, "--shard-mib"},
	{"expert_load", FTARGS_T_ENUM, "--expert-load"},
	{"ftw_dir", FTARGS_T_PATH, "--ftw-dir"},
	{"no_drop_cache", FTARGS_T_BOOL, "--no-drop-cache"},
	{"keep_ftw", FTARGS_T_BOOL, "--keep-ftw"},
	{"gpu", FTARGS_T_GPU, "--gpu"},
	{NULL}};

/* model is required with server (the template's {model}); with url it is optional. */
static const struct ftargs_spec decode_args[] = {
	{"model", FTARGS_T_PATH, "--model"},
	{"server", FTARGS_T_SERVER, "--server-cmd"},
	{"url", FTARGS_T_URL, "--url"},
	{"backends", FTARGS_T_ENUMLIST, "--backend", .choices = "offload|cpu|hybrid"},
	{"max_tokens", FTARGS_T_INT, "--tokens"},
	{"memory_ratio", FTARGS_T_NUM, "--mem-ratio"},
	{"no_graph", FTARGS_T_BOOL, "--no-graph"},
	{"moe_hybrid_max_fetch", FTARGS_T_INT, "--hybrid-fetch"},
	{"moe_cache_size", FTARGS_T_INT, "--cache"},
	{"moe_cache_rate", FTARGS_T_NUM, "--cache-rate"},
	{"problem", FTARGS_T_INT, "--problem"},
	{"greedy", FTARGS_T_BOOL, "--greedy"},
	{"no_thinking", FTARGS_T_BOOL, "--no-thinking"},
	{"warmup", FTARGS_T_INT, "--warmup"},
	{"server_kind", FTARGS_T_ENUM, "--server-kind"},
	{"append_flags", FTARGS_T_BOOL, "--append-flags"},
	{"allow_short", FTARGS_T_BOOL, "--allow-short"},
	{"num_token_override", FTARGS_T_INT, "--num-token-override"},
	{"compare", FTARGS_T_COMPARE, "--compare", .max_items = 4}, /* FTCMP_MAX_KEYS: the flag is repeated, one key each */
	{"cycles", FTARGS_T_INT, "--cycles"},
	{"min_gap", FTARGS_T_NUM, "--min-gap"},
	{"gpu", FTARGS_T_GPU, "--gpu"},
	{NULL}};

/* ftbench replay (docs/REPLAY.md); the daemon adds --no-store and merges the result into the GPU's
 * stored profile itself (daemon/kinds.c). */
static const struct ftargs_spec replay_args[] = {
	{"format", FTARGS_T_NAMES, "--format"},
	{"model", FTARGS_T_NAMES, "--model"},
	{"layers", FTARGS_T_INT, "--layers"},
	{"batch", FTARGS_T_INT, "--batch"},
	{"workloads", FTARGS_T_NAMES, "--workloads"},
	{"cache", FTARGS_T_NUMLIST, "--cache"},
	{"cache_slots", FTARGS_T_INT, "--cache-slots"},
	{"fractions", FTARGS_T_NUMLIST, "--fractions"},
	{"caps", FTARGS_T_INTLIST, "--caps"},
	{"steps", FTARGS_T_INT, "--steps"},
	{"warmup", FTARGS_T_INT, "--warmup"},
	{"size", FTARGS_T_ENUM, "--size"},
	{"fetch_order", FTARGS_T_ENUM, "--fetch-order"},
	{"no_overlap", FTARGS_T_BOOL, "--no-overlap"},
	{"offload_from_batch", FTARGS_T_INT, "--offload-from-batch"},
	{"seed", FTARGS_T_INT, "--seed"},
	{"host_alloc", FTARGS_T_ENUM, "--host-alloc"},
	{"trace", FTARGS_T_PATH, "--trace"},
	{"cpu_threads", FTARGS_T_INT, "--cpu-threads"},
	{"gpu", FTARGS_T_GPU, "--gpu"},
	{NULL}};

const char *const ftargs_kind_names[] = {"bw", "cache-copy", "load-weights", "decode", "replay", NULL};
static const struct ftargs_spec *const kind_specs[] = {bw_args, cache_copy_args, load_weights_args, decode_args,
						       replay_args};

const struct ftargs_spec *ftargs_kind_spec(const char *kind)
{
	for (size_t i = 0; kind && ftargs_kind_names[i]; i++)
		if (!strcmp(ftargs_kind_names[i], kind))
			return kind_specs[i];
	return NULL;
}

enum ftargs_type ftargs_spec_cli_type(enum ftargs_spec_type t)
{
	switch (t) {
	case FTARGS_T_INT: return FTARGS_INTEGER;
	case FTARGS_T_NUM: return FTARGS_NUMBER;
	case FTARGS_T_BOOL: return FTARGS_BOOLEAN;
	case FTARGS_T_INTLIST: return FTARGS_INT_LIST;
	case FTARGS_T_NUMLIST: return FTARGS_NUMBER_LIST;
	case FTARGS_T_ENUMLIST: return FTARGS_STRING_LIST;
	case FTARGS_T_GPU: return FTARGS_AUTO; /* an index or a uuid: by its look */
	case FTARGS_T_NAMES:
	case FTARGS_T_ENUM:
	case FTARGS_T_PATH:
	case FTARGS_T_SERVER:
	case FTARGS_T_URL:
	case FTARGS_T_COMPARE: return FTARGS_STRING; /* one comparison; its commas are its values' */
	}
	return FTARGS_AUTO;
}

static enum ftargs_type spec_type(const struct ftargs_hint *hints, const char *kind, const char *key)
{
	(void)hints;
	for (const struct ftargs_spec *a = ftargs_kind_spec(kind); a && a->name; a++)
		if (!strcmp(a->name, key))
			return ftargs_spec_cli_type(a->type);
	return FTARGS_AUTO;
}

static int to_json(int argc, char *const *argv, const char *kind, const struct ftargs_hint *hints,
		   enum ftargs_type (*type_of)(const struct ftargs_hint *, const char *, const char *), json_t *obj,
		   char *err, size_t n);

int ftargs_to_json(int argc, char *const *argv, const char *kind, const struct ftargs_hint *hints,
		   json_t *obj, char *err, size_t n)
{
	return to_json(argc, argv, kind, hints, ftargs_hint_type, obj, err, n);
}

int ftargs_kind_to_json(int argc, char *const *argv, const char *kind, json_t *obj, char *err, size_t n)
{
	return to_json(argc, argv, kind, NULL, spec_type, obj, err, n);
}

static int to_json(int argc, char *const *argv, const char *kind, const struct ftargs_hint *hints,
		   enum ftargs_type (*type_of)(const struct ftargs_hint *, const char *, const char *), json_t *obj,
		   char *err, size_t n)
{
	char key[128];
	if (!json_is_object(obj))
		return -EINVAL;
	for (int i = 0; i < argc; i++) {
		const char *arg = argv[i], *val = NULL;
		char opt[160];
		const char *eq = strchr(arg, '=');
		if (strncmp(arg, "--", 2) != 0) {
			snprintf(err, n, "unexpected '%s': job arguments are --key value pairs", arg);
			return -EINVAL;
		}
		if (eq) {
			size_t kl = (size_t)(eq - arg);
			if (kl >= sizeof opt) {
				snprintf(err, n, "option '%.40s...' is too long", arg);
				return -EINVAL;
			}
			memcpy(opt, arg, kl);
			opt[kl] = '\0';
			val = eq + 1;
		} else if (ftstr_copy(opt, sizeof opt, arg) < 0) {
			snprintf(err, n, "option '%.40s...' is too long", arg);
			return -EINVAL;
		}
		int r = ftargs_key(opt, key, sizeof key);
		if (r < 0) {
			snprintf(err, n, "'%s' is not a job option (--name with letters, digits, '-' or '_')", opt);
			return -EINVAL;
		}
		enum ftargs_type t = type_of(hints, kind, key);
		/* A value follows unless the next word is another option: "-1" is a value, "--x" is not. */
		if (!val && i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0)
			val = argv[++i];
		if (json_object_get(obj, key)) {
			snprintf(err, n, "%s given twice", opt);
			return -EEXIST;
		}
		json_t *j = NULL;
		if (!val) {
			j = json_true(); /* a bare flag; the daemon rejects it where it wants a value */
		} else if ((r = ftargs_value(val, t, &j)) == -EINVAL) {
			r = ftargs_value(val, FTARGS_AUTO, &j); /* let the daemon name the bad field */
		}
		if (r < 0)
			return r;
		if (json_object_set_new(obj, key, j) < 0)
			return -ENOMEM;
	}
	return 0;
}
