#include "kinds.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode/compare.h"
#include "jobflags.h"
#include "ftprofile.h"
#include "moe/formats.h"
#include "moe/models.h"
#include "replay/replay.h"
#include "util/strutil.h"
#include "util/workermsg.h"

/* ---- the kinds' own parts of the argv and their end hooks */

/* The names of arg (a string "a,b" or a list, already checked by the table) each in the worker's
 * table: formats (ftfmt_lookup; with_workload: only those with a bw workload) or the bw models,
 * "all" too. 0, or -1 with err naming the first unknown one and the choices. */
static int names_known(const json_t *args, const char *arg, int models, int with_workload, struct ftd_err *err)
{
	const json_t *v = json_object_get(args, arg);
	char **items = NULL, choices[512] = "all", field[64];
	int n = 0, r = 0;
	if (!v)
		return 0;
	if (json_is_string(v)) {
		n = ftstr_split(json_string_value(v), &items, 64);
	} else {
		n = (int)json_array_size(v);
		items = calloc((size_t)n + 1, sizeof *items);
		for (int i = 0; items && i < n; i++)
			items[i] = strdup(json_string_value(json_array_get(v, (size_t)i)));
	}
	if (n < 0 || !items)
		return 0; /* the table's check said what is wrong with it already */
	for (int i = 0; i < n && r == 0; i++) {
		const char *x = items[i];
		if (!x || (!strcmp(x, "all") && (models || with_workload)))
			continue; /* --formats has no "all" */
		const struct ftfmt *f = models ? NULL : ftfmt_lookup(x);
		if (models ? !!ftmodel_find(ftmodel_bw_models, ftmodel_bw_models_count, x)
			   : f && (!with_workload || ftmodel_bw_dtype(f->id)))
			continue;
		if (!models && !with_workload)
			snprintf(choices, sizeof choices, "%s", ftfmt_all_names());
		else if (models)
			for (int j = 0; j < ftmodel_bw_models_count; j++)
				snprintf(choices + strlen(choices), sizeof choices - strlen(choices), ", %s",
					 ftmodel_bw_models[j].name);
		else
			for (int j = 0; j < ftmodel_bw_dtypes_count; j++)
				snprintf(choices + strlen(choices), sizeof choices - strlen(choices), ", %s",
					 ftfmt_get(ftmodel_bw_dtypes[j].format)->name);
		snprintf(field, sizeof field, "args.%s", arg);
		ftd_kind_err_set(err, 400, "invalid_argument", field, "%s: unknown %s '%.*s' (choose from %s)", field,
				 models ? "model" : "format", ftstr_utf8_cut(x, 64), x, choices);
		r = -1;
	}
	ftstr_free_list(items, n);
	return r;
}

/* bw: format and model names from the worker's own tables (src/moe/formats.c, models.c), the
 * configured deployment unless args say one, and the profile written to the job's output
 * directory (the daemon then settles it: the store, its history, the legacy copy). */
static int bw_argv(const struct ftd_kind_ctx *c, const json_t *args, struct ftd_argv *b, struct ftd_err *err)
{
	if (names_known(args, "dtype", 0, 1, err) < 0 || names_known(args, "formats", 0, 0, err) < 0 ||
	    names_known(args, "model", 1, 0, err) < 0)
		return -1;
	if (!json_object_get(args, "deployment") && c->cfg && c->cfg->deployment && *c->cfg->deployment)
		ftd_kind_argv_push(b, ftd_kind_argv_flag("--deployment", c->cfg->deployment));
	if (c->out_dir && c->job_id) {
		char *s;
		ftd_kind_argv_push(b, asprintf(&s, "--output=%s/%s.profile.json", c->out_dir, c->job_id) < 0 ? NULL : s);
	}
	return 0;
}

/* load-weights with keep_ftw: the kept conversion lives in the daemon's ftw directory, one per
 * checkpoint (<ftw-dir>/<hash of the model's real path>), so the next run of the same checkpoint
 * reuses it; an ftw_dir of the client's beside it would leave one kept copy per directory. */
static int lw_argv(const struct ftd_kind_ctx *c, const json_t *args, struct ftd_argv *b, struct ftd_err *err)
{
	if (!json_is_true(json_object_get(args, "keep_ftw")) || !c->ftw_dir)
		return 0;
	if (json_object_get(args, "ftw_dir")) {
		ftd_kind_err_set(err, 400, "invalid_argument", "args.ftw_dir",
			    "args.ftw_dir cannot be combined with keep_ftw: the daemon keeps one conversion per checkpoint");
		return -1;
	}
	const char *model = json_string_value(json_object_get(args, "model"));
	char real[PATH_MAX], *s;
	if (!model)
		return 0;
	if (!realpath(model, real))
		snprintf(real, sizeof real, "%s", model);
	uint64_t h = 1469598103934665603ull; /* FNV-1a */
	for (const char *p = real; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	ftd_kind_argv_push(b, asprintf(&s, "--ftw-dir=%s/%016llx", c->ftw_dir, (unsigned long long)h) < 0 ? NULL : s);
	return 0;
}

/* The profiles of a bw result: {"profiles": [...]} for gpu "all", else the one. A new array. */
static json_t *bw_profiles(const json_t *result)
{
	json_t *many = json_object_get(result, "profiles"), *v = json_array();
	if (json_is_array(many))
		json_array_extend(v, many);
	else
		json_array_append(v, (json_t *)result);
	return v;
}

/* bw succeeded: its profile (one per GPU for gpu "all") goes to the store, by the store's rule,
 * and, on a host with one GPU, to the legacy single file. */
static int bw_success(struct ftd_kind_done *d)
{
	char *path = NULL;
	int r = 0;
	json_t *all = bw_profiles(d->result), *p;
	size_t i, n = json_array_size(all);
	if (!n)
		r = -EINVAL;
	json_array_foreach(all, i, p) {
		const char *u = json_string_value(json_object_get(json_object_get(p, "gpu"), "uuid"));
		if (n == 1 && d->gpu_uuid)
			u = d->gpu_uuid;
		free(path);
		path = NULL;
		if (r == 0)
			r = n > 1 && !u ? -EINVAL : d->store(p, u, &path, d->ctx);
		if (r == FTPROF_KEPT_INVALID)
			r = -EINVAL; /* exit 0 with a profile that is not valid: the worker broke the rule */
	}
	if (r == 0 && n == 1 && d->legacy && d->legacy(json_array_get(all, 0), path, d->note, sizeof d->note, d->ctx) < 0)
		r = 0; /* said in d->note; the profile is stored */
	json_decref(all);
	if (r < 0) {
		free(path);
		snprintf(d->msg, sizeof d->msg, "the profile could not be stored in %s: %s", d->store_dir ? d->store_dir : "the store",
			 strerror(-r));
		return -1;
	}
	d->profile_path = path;
	return 0;
}

/* A bw worker's exit FTWMSG_EXIT_INVALID: it measured, but its profile's own checks failed. The
 * store's rule keeps such a profile (each of a gpu "all" run's that is not valid) in the history
 * only, so the stored one, which engines read, stays; the job fails with the first reason, and
 * its detail lists every reason (of each GPU, named, when there are several). */
static void bw_failure(struct ftd_kind_done *d)
{
	if (d->exit_status != FTWMSG_EXIT_INVALID)
		return;
	json_t *all = bw_profiles(d->result), *p, *w;
	size_t i, k, bad = 0, reasons = 0, nall = json_array_size(all);
	const char *first = NULL;
	char *detail = NULL;
	size_t dlen = 0;
	FILE *f = open_memstream(&detail, &dlen);
	json_array_foreach(all, i, p) {
		if (!json_is_false(json_object_get(p, "valid")))
			continue;
		const char *u = json_string_value(json_object_get(json_object_get(p, "gpu"), "uuid"));
		char *kept = NULL;
		int r = d->store(p, nall == 1 && d->gpu_uuid ? d->gpu_uuid : u, &kept, d->ctx);
		free(kept);
		json_t *why = json_object_get(p, "invalid_reasons");
		if (f && nall > 1)
			fprintf(f, "%s%s:", ftell(f) ? "\n" : "", u ? u : "a GPU");
		json_array_foreach(why, k, w) {
			if (!json_is_string(w))
				continue;
			if (!first)
				first = json_string_value(w);
			reasons++;
			if (f)
				fprintf(f, "%s%s%s", ftell(f) ? "\n" : "", nall > 1 ? "  " : "", json_string_value(w));
		}
		if (f && r < 0)
			fprintf(f, "%s(it could not be kept in the history: %s)", ftell(f) ? "\n" : "", strerror(-r));
		json_t *rm;
		size_t nrm = 0;
		json_array_foreach(json_object_get(p, "remeasured"), k, rm) {
			if (f)
				fprintf(f, "%s%s%s (%lld tries)", nrm ? ", " : ftell(f) ? "\n" : "",
					nrm ? "" : nall > 1 ? "  measured again first: " : "measured again first: ",
					json_string_value(json_object_get(rm, "phase")) ? json_string_value(json_object_get(rm, "phase")) : "?",
					(long long)json_integer_value(json_object_get(rm, "tries")));
			nrm++;
		}
		bad++;
	}
	if (f)
		fclose(f);
	if (bad)
		snprintf(d->msg, sizeof d->msg,
			 "the profile is not valid (kept in the history; the stored profile is unchanged): %s%s",
			 first ? first : "its own checks failed", reasons > 1 ? " (and others: see error_detail)" : "");
	if (bad && detail && *detail)
		d->detail = detail;
	else
		free(detail);
	json_decref(all);
}

/* decode: exactly one of server and url; a server template needs the model; compare needs a
 * server to start. */
static int decode_argv(const struct ftd_kind_ctx *c, const json_t *args, struct ftd_argv *b, struct ftd_err *err)
{
	if (c->out_dir && c->job_id) {
		/* the servers' logs under the daemon's state, swept with the job (ftd_journal_remove) */
		char *s;
		ftd_kind_argv_push(b, asprintf(&s, "--log-dir=%s/%s.decode", c->out_dir, c->job_id) < 0 ? NULL : s);
	}
	int have_server = json_object_get(args, "server") != NULL, have_url = json_object_get(args, "url") != NULL;
	if (have_server && !json_object_get(args, "model")) {
		ftd_kind_err_set(err, 400, "missing_field", "args.model", "decode with args.server needs args.model");
		return -1;
	}
	if (have_server + have_url != 1) {
		ftd_kind_err_set(err, 400, have_server + have_url ? "invalid_argument" : "missing_field", "args.server",
			    "decode needs exactly one of args.server and args.url");
		return -1;
	}
	if (have_url && json_object_get(args, "compare")) {
		ftd_kind_err_set(err, 400, "invalid_argument", "args.compare",
			    "decode with args.compare starts a fresh server per arm: it needs args.server, not args.url");
		return -1;
	}
	return 0;
}

/* replay: the worker does not store (it would write the worker's per-user store); the daemon
 * merges the result's replay blocks into the GPU's profile in its own store (replay_success). */
static int replay_argv(const struct ftd_kind_ctx *c, const json_t *args, struct ftd_argv *b, struct ftd_err *err)
{
	(void)c, (void)args, (void)err;
	ftd_kind_argv_push(b, strdup("--no-store"));
	return 0;
}

/* replay succeeded: its blocks go into the stored profile of its GPU (the seed-read verdicts then
 * follow the replay's default point: ftrp_apply_verdicts); no stored profile, nothing to do. */
static int replay_success(struct ftd_kind_done *d)
{
	const json_t *rp = json_object_get(d->result, "replay");
	if (!json_is_object(rp) || !d->gpu_uuid || !d->load)
		return 0;
	json_t *prof = d->load(d->gpu_uuid, d->ctx);
	if (!json_is_object(prof) || !json_object_get(prof, "tool")) {
		json_decref(prof);
		return 0;
	}
	json_t *mine = json_object_get(prof, "replay");
	if (!json_is_object(mine)) {
		mine = json_object();
		json_object_set_new(prof, "replay", mine);
	}
	json_object_update(mine, (json_t *)rp);
	ftrp_apply_verdicts(prof);
	char *path = NULL;
	int r = d->store(prof, d->gpu_uuid, &path, d->ctx);
	json_decref(prof);
	if (r < 0) {
		free(path);
		snprintf(d->msg, sizeof d->msg, "the replay could not be added to the profile in %s: %s",
			 d->store_dir ? d->store_dir : "the store", strerror(-r));
		return -1;
	}
	d->profile_path = path;
	return 0;
}

/* One row per kind; its argument table is src/util/jobargs.c's (shared with `ftbench submit`), with
 * the bounds of the worker's flag rows (daemon/jobflags.h). */
static const struct ftd_kind kinds[] = {
	{.name = "bw", .host_exclusive = 1, .gpu_all = 1, .argv = bw_argv, .on_success = bw_success,
	 .on_failure = bw_failure},
	{.name = "cache-copy", .needs_gpu = 1},
	{.name = "load-weights", .host_exclusive = 1, .argv = lw_argv},
	{.name = "decode", .argv = decode_argv},
	{.name = "replay", .host_exclusive = 1, .argv = replay_argv, .on_success = replay_success},
};

static const struct ftargs_spec *kind_args(const struct ftd_kind *k)
{
	return k->args ? k->args : ftd_job_args(k->name);
}

#define N_KINDS ((int)(sizeof kinds / sizeof kinds[0]))
_Static_assert(sizeof kinds / sizeof kinds[0] <= FTD_KIND_MAX, "raise FTD_KIND_MAX");

int ftd_kind_count(void)
{
	return N_KINDS;
}

const struct ftd_kind *ftd_kind_at(int i)
{
	return i >= 0 && i < N_KINDS ? &kinds[i] : NULL;
}

void ftd_kind_names(char *buf, size_t n)
{
	size_t l = 0;
	buf[0] = '\0';
	for (int i = 0; i < N_KINDS && l < n; i++)
		l += (size_t)snprintf(buf + l, n - l, "%s%s", i ? ", " : "", kinds[i].name);
}

int ftd_kind_index(const struct ftd_kind *k)
{
	for (int i = 0; i < N_KINDS; i++)
		if (&kinds[i] == k)
			return i;
	return -1;
}

int ftd_kind_all_gpus(const struct ftd_kind *k, const json_t *args)
{
	const char *g = json_string_value(json_object_get(args, "gpu"));
	return k && k->gpu_all && g && !strcmp(g, "all");
}

const struct ftd_kind *ftd_kind_find(const char *name)
{
	for (int i = 0; i < N_KINDS; i++)
		if (!strcmp(kinds[i].name, name))
			return &kinds[i];
	return NULL;
}

int ftd_kind_argv(const struct ftd_kind *k, const json_t *args, const struct ftd_kind_ctx *c, int *gpu_pos,
		  char ***argv_out, struct ftd_err *err)
{
	struct ftd_argv b = {0};
	char field[64];
	const struct ftgpu_info *gpus = c->gpus;
	int ngpus = c->ngpus;
	int gpu = ngpus > 0 ? 0 : -1;

	*argv_out = NULL;
	if (args && !json_is_object(args)) {
		ftd_kind_err_set(err, 400, "invalid_argument", "args", "args must be an object");
		return -1;
	}
	ftd_kind_argv_push(&b, strdup(c->worker));
	ftd_kind_argv_push(&b, strdup(k->name));
	const char *key;
	json_t *v;
	json_object_foreach((json_t *)args, key, v) {
		const struct ftargs_spec *a = kind_args(k);
		while (a->name && strcmp(a->name, key))
			a++;
		snprintf(field, sizeof field, "args.%.*s", ftstr_utf8_cut(key, 58), key);
		if (!a->name) {
			ftd_kind_err_set(err, 400, "unknown_field", field, "%s has no argument '%.*s'", k->name, ftstr_utf8_cut(key, 100), key);
			goto fail;
		}
		if (ftd_kindarg_add(a, v, field, c, &b, k->gpu_all, &gpu, err) < 0)
			goto fail;
	}
	for (const struct ftargs_spec *a = kind_args(k); a->name; a++) {
		if (a->required && !json_object_get(args, a->name)) {
			snprintf(field, sizeof field, "args.%s", a->name);
			ftd_kind_err_set(err, 400, "missing_field", field, "%s needs %s", k->name, field);
			goto fail;
		}
	}
	if (k->needs_gpu && c->gpus_known && ngpus <= 0) {
		ftd_kind_err_set(err, 409, "no_gpu", NULL, "%s needs a GPU and this host has none%s%s", k->name,
				 c->gpus_reason && *c->gpus_reason ? ": " : "", c->gpus_reason ? c->gpus_reason : "");
		goto fail;
	}
	if (k->argv && k->argv(c, args, &b, err) < 0)
		goto fail;
	if (gpu >= 0)
		ftd_kind_argv_push(&b, ftd_kind_argv_flag("--gpu", gpus[gpu].uuid));
	ftd_kind_argv_push(&b, strdup("--result-fd=3"));
	if (b.oom) {
		ftd_kind_err_set(err, 503, "internal", NULL, "out of memory");
		goto fail;
	}
	*gpu_pos = gpu;
	*argv_out = b.v;
	return 0;
fail:
	if (b.v)
		ftd_kind_argv_free(b.v);
	return -1;
}

int ftd_kind_build(const struct ftd_kind *k, const json_t *args, const struct ftd_config *cfg,
		   const char *worker, const struct ftgpu_info *gpus, int ngpus, int *gpu_pos,
		   char ***argv_out, struct ftd_err *err)
{
	struct ftd_kind_ctx c = {.cfg = cfg, .worker = worker, .gpus = gpus, .ngpus = ngpus};
	return ftd_kind_argv(k, args, &c, gpu_pos, argv_out, err);
}

static const char *spec_type_name(enum ftargs_spec_type t)
{
	static const char *const names[] = {
		[FTARGS_T_NAMES] = "names", [FTARGS_T_INT] = "int",         [FTARGS_T_NUM] = "number",
		[FTARGS_T_BOOL] = "bool",   [FTARGS_T_INTLIST] = "int_list", [FTARGS_T_NUMLIST] = "number_list",
		[FTARGS_T_ENUM] = "enum",   [FTARGS_T_ENUMLIST] = "enum_list", [FTARGS_T_PATH] = "path",
		[FTARGS_T_GPU] = "gpu",     [FTARGS_T_SERVER] = "server",   [FTARGS_T_URL] = "url",
	};
	return t < sizeof names / sizeof names[0] && names[t] ? names[t] : "?";
}

json_t *ftd_kinds_args_json(void)
{
	json_t *list = json_array(), *out = json_pack("{s:o}", "kinds", list);
	if (!out)
		return NULL;
	for (int i = 0; i < N_KINDS; i++) {
		json_t *args = json_array();
		if (!args || json_array_append_new(list, json_pack("{s:s,s:o}", "kind", kinds[i].name, "args", args)) < 0)
			goto fail;
		for (const struct ftargs_spec *a = kind_args(&kinds[i]); a->name; a++) {
			int num = a->type == FTARGS_T_INT || a->type == FTARGS_T_NUM || a->type == FTARGS_T_INTLIST ||
				  a->type == FTARGS_T_NUMLIST;
			int is_list = a->type == FTARGS_T_INTLIST || a->type == FTARGS_T_NUMLIST || a->type == FTARGS_T_ENUMLIST;
			int max_items = a->max_items > 0 ? a->max_items : a->type == FTARGS_T_ENUMLIST && a->hi > 0 ? (int)a->hi : 64;
			json_t *choices = json_array();
			for (const char *p = a->choices; p && *p;) {
				const char *e = strchr(p, '|');
				json_array_append_new(choices, json_stringn(p, e ? (size_t)(e - p) : strlen(p)));
				if (!e)
					break;
				p = e + 1;
			}
			json_t *r = json_pack("{s:s,s:s,s:s,s:o,s:o,s:o,s:o,s:b}", "name", a->name, "type",
					      spec_type_name(a->type), "flag", a->flag, "minimum",
					      num ? json_real(a->lo) : json_null(), "maximum", num ? json_real(a->hi) : json_null(),
					      "choices", choices, "max_items", is_list ? json_integer(max_items) : json_null(),
					      "required", a->required != 0);
			if (!r || json_array_append_new(args, r) < 0)
				goto fail;
		}
	}
	return out;
fail:
	json_decref(out);
	return NULL;
}
