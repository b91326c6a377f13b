/* seed: the seed daemon's routes; see seed.h. */
#include "seed.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "log.h"
#include "profiles.h"
#include "util/jobargs.h"
#include "util/strutil.h"

#define SEED_MAX_ARGS 128 /* of at most SEED_MAX_ARG characters: the body stays under max-body */
#define SEED_MAX_ARG 256

json_t *ftd_seed_detail(const char *msg)
{
	return json_pack("{s:s}", "detail", msg);
}

static void detail_reply(struct ftd_api_reply *rp, unsigned status, const char *msg)
{
	rp->status = status;
	rp->json = ftd_seed_detail(msg);
	if (!rp->json)
		rp->internal = 1;
}

/* The flags the daemon owns: where the profile goes, the output form, the worker protocol. */
static const char *const owned[] = {"-o", "--output", "--out", "--json", "--output-format", "--result-fd",
				    "--no-legacy-copy", "--help", "-h", NULL};

/* One `ft bench bw` flag with its values (argv[*i] the flag; values follow until the next word
 * that starts with "--" or is "-o"/"-h") into obj by the bw job's argument table
 * (util/jobargs.c): lists joined with commas (the seed's `--dtype bf16 nvfp4`), `--device N` as
 * gpu N. 0, or -1 with err saying what is wrong. */
static int one_flag(char *const *argv, int argc, int *i, json_t *obj, char *err, size_t n)
{
	const char *word = argv[*i], *eq = strchr(word, '=');
	char name[64], joined[4096] = "";
	size_t nl = eq ? (size_t)(eq - word) : strlen(word);
	if (strncmp(word, "-", 1) || nl >= sizeof name) {
		snprintf(err, n, "unexpected '%.*s': ft bench bw takes --flag value pairs", ftstr_utf8_cut(word, 64), word);
		return -1;
	}
	memcpy(name, word, nl);
	name[nl] = '\0';
	for (const char *const *o = owned; *o; o++)
		if (!strcmp(name, *o)) {
			snprintf(err, n, "%s: the daemon owns it (the profile goes to its store: GET /bench/profile)", name);
			return -1;
		}
	const char *flag = !strcmp(name, "--device") ? "--gpu" : name; /* the seed's released --device N */
	const struct ftargs_spec *a = ftargs_kind_spec("bw");
	while (a->name && strcmp(a->flag, flag))
		a++;
	if (!a->name) {
		snprintf(err, n, "%s: not a flag of ft bench bw that the daemon takes", name);
		return -1;
	}
	int nv = 0;
	if (eq) {
		snprintf(joined, sizeof joined, "%s", eq + 1);
		nv = 1;
	}
	while (!eq && *i + 1 < argc && strncmp(argv[*i + 1], "--", 2) && strcmp(argv[*i + 1], "-o") &&
	       strcmp(argv[*i + 1], "-h")) {
		size_t l = strlen(joined);
		snprintf(joined + l, sizeof joined - l, "%s%s", nv ? "," : "", argv[++*i]);
		nv++;
	}
	if (a->type == FTARGS_T_BOOL ? nv > 0 : nv == 0) {
		snprintf(err, n, "%s: %s", name, a->type == FTARGS_T_BOOL ? "takes no value" : "needs a value");
		return -1;
	}
	int list = a->type == FTARGS_T_NAMES || a->type == FTARGS_T_INTLIST || a->type == FTARGS_T_NUMLIST ||
		   a->type == FTARGS_T_ENUMLIST;
	if (nv > 1 && !list) {
		snprintf(err, n, "%s: one value, got %d", name, nv);
		return -1;
	}
	if (json_object_get(obj, a->name)) {
		snprintf(err, n, "%s given twice", name);
		return -1;
	}
	json_t *v = NULL;
	if (a->type == FTARGS_T_BOOL)
		v = json_true();
	else if (ftargs_value(joined, ftargs_spec_cli_type(a->type), &v) < 0 &&
		 ftargs_value(joined, FTARGS_AUTO, &v) < 0) /* the job's check names what is wrong */
		v = NULL;
	if (!v || json_object_set_new(obj, a->name, v) < 0) {
		snprintf(err, n, "out of memory");
		return -1;
	}
	return 0;
}

int ftd_seed_args(const json_t *args, json_t *obj, char *err, size_t n)
{
	size_t count = json_array_size(args);
	char **argv = calloc(count + 1, sizeof *argv);
	int r = argv ? 0 : -1;
	if (!argv)
		snprintf(err, n, "out of memory");
	for (size_t i = 0; r == 0 && i < count; i++)
		argv[i] = (char *)json_string_value(json_array_get(args, i));
	for (int i = 0; r == 0 && i < (int)count; i++)
		r = one_flag(argv, (int)count, &i, obj, err, n);
	free(argv);
	return r;
}

void ftd_seed_run(const struct ftd_api_req *rq, struct ftd_api_reply *rp)
{
	if (!ftd_api_stream_room()) { /* before a job is queued that no stream would follow */
		ftd_api_error(rp, 503, "busy", NULL, "%ld event streams are open (max-event-streams)",
			      ftd.cfg.max_event_streams);
		return;
	}
	json_error_t je;
	json_t *body = rq->body && rq->len ? json_loadb(rq->body, rq->len, JSON_REJECT_DUPLICATES, &je) : NULL;
	json_t *args = json_object_get(body, "args");
	size_t i;
	json_t *a;
	/* the seed's body: {"args": [...]} (args may be left out: []), nothing else */
	int ok = json_is_object(body) && json_object_size(body) == (args ? 1u : 0u) &&
		 (!args || (json_is_array(args) && json_array_size(args) <= SEED_MAX_ARGS));
	json_array_foreach(args, i, a)
		ok = ok && json_is_string(a) && ftstr_utf8_len(json_string_value(a)) <= SEED_MAX_ARG;
	if (!ok) {
		json_decref(body);
		detail_reply(rp, 422, "the body must be {\"args\": [strings]} (at most 128 ft bench bw arguments of at most "
				       "256 characters)");
		return;
	}
	char why[512] = "";
	json_t *jargs = json_object();
	struct ftd_job *j = NULL;
	int r = jargs ? ftd_seed_args(args, jargs, why, sizeof why) : -1;
	if (r == 0) {
		json_t *req = json_pack("{s:s,s:O}", "kind", "bw", "args", jargs);
		char *canon = req ? json_dumps(req, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
		struct ftd_err err;
		int replayed;
		pthread_mutex_lock(&ftd.lock);
		r = ftd_api_submit("bw", jargs, 0, NULL, canon, &j, &replayed, &err);
		if (r == 0)
			j->refs++; /* kept until the stream holds its own */
		pthread_mutex_unlock(&ftd.lock);
		if (r < 0)
			snprintf(why, sizeof why, "%s", err.message);
		free(canon);
		json_decref(req);
	}
	json_decref(jargs);
	json_decref(body);
	if (r < 0)
		ftd_log(FTD_LOG_INFO, "/bench/run refused: %s", why);
	if (ftd_api_stream_seed(r == 0 ? j : NULL, why, rq->fd, rp) < 0)
		rp->internal = 1;
	if (j) {
		pthread_mutex_lock(&ftd.lock);
		ftd_job_unref(j);
		pthread_mutex_unlock(&ftd.lock);
	}
}

void ftd_seed_profile(const struct ftd_api_req *rq, struct ftd_api_reply *rp)
{
	const char *want = rq->query(rq->hctx, "gpu");
	char uuid[96] = "host", why[256] = "";
	if (want && ftstr_utf8_len(want) > 80) {
		detail_reply(rp, 422, "gpu: an index or a uuid of at most 80 characters");
		return;
	}
	pthread_mutex_lock(&ftd.lock);
	int pos = ftd.ngpus > 0 ? 0 : -1;
	if (want && *want)
		pos = ftd.ngpus > 0 ? ftgpu_resolve(ftd.gpus, ftd.ngpus, want, why, sizeof why) : -ENODEV;
	if (pos >= 0)
		snprintf(uuid, sizeof uuid, "%s", ftd.gpus[pos].uuid);
	pthread_mutex_unlock(&ftd.lock);
	if (want && *want && pos < 0) {
		char msg[400];
		snprintf(msg, sizeof msg, "gpu %.*s: %s", ftstr_utf8_cut(want, 80), want, pos == -ENODEV ? "this host has no GPU" : why);
		detail_reply(rp, 404, msg);
		return;
	}
	char *text = NULL;
	size_t len = 0;
	json_t *p = ftd_profiles_read(uuid, &text, &len) == 0 ? json_loadb(text, len, 0, NULL) : NULL;
	free(text);
	rp->status = 200;
	if (json_is_object(p)) {
		rp->json = p;
		return;
	}
	json_decref(p); /* the seed: a missing or broken file is null */
	rp->raw = strdup("null\n");
	rp->len = rp->raw ? 5 : 0;
	rp->ctype = "application/json";
	rp->internal = !rp->raw;
}
