/* client: see client.h. */
#include "cli/client.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/sse.h"
#include "util/strutil.h"
#include "util/timeutil.h"

#define IDLE_S 60           /* the daemon sends a keep-alive every 15 s; reconnect after 60 s */
#define RECONNECT_GIVE_UP_S 60
#define SSE_MAX (1u << 20)  /* an event line or event of the job stream over 1 MiB is refused */

int ftclient_open(struct fthttpc *c, const char *daemon, const char *token_file)
{
	const char *url = daemon ? daemon : getenv("FTBENCHD_URL");
	const char *tf = token_file ? token_file : getenv("FTBENCHD_TOKEN_FILE");
	if (!url || !*url)
		url = FTHTTPC_DEFAULT_URL;
	int r = fthttpc_init(c, url);
	if (r < 0) {
		ftcli_error("--daemon: %s", c->err);
		return r;
	}
	if (tf && *tf && (r = fthttpc_set_token_file(c, tf)) < 0) {
		ftcli_error("--token-file %s: %s", tf,
			    r == -EINVAL ? "no token in the file" : strerror(-r));
		return r;
	}
	return 0;
}

/* Exit status for a transport failure (the daemon is a missing prerequisite). */
int ftclient_transport_failed(struct fthttpc *c, int r)
{
	if (r == -ECONNREFUSED)
		ftcli_error("cannot reach ftbenchd: %s (start it, or pass --daemon URL)", c->err);
	else
		ftcli_error("%s", c->err);
	return FTCLI_EXIT_USAGE;
}

/* Report a non-2xx response: the daemon's message and field verbatim. With json, the error
 * body is also printed on stdout. Returns the exit status. */
int ftclient_api_failed(const struct fthttpc_resp *r, int json, const char *what)
{
	char msg[1024];
	const char *code = NULL;
	fthttpc_api_error(r, &code, NULL, NULL);
	fthttpc_describe_error(r, msg, sizeof msg);
	if (code)
		ftcli_error("%s: %s [HTTP %ld %s]", what, msg, r->status, code);
	else
		ftcli_error("%s: %s", what, msg);
	if (json && r->json)
		ftcli_print_json(r->json);
	if (r->status == 429 || r->status >= 500)
		return FTCLI_EXIT_FAIL;
	return FTCLI_EXIT_USAGE;
}

const char *ftclient_jstr(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

int ftclient_terminal(const char *s)
{
	return s && (!strcmp(s, "succeeded") || !strcmp(s, "failed") || !strcmp(s, "cancelled") ||
		     !strcmp(s, "timed_out") || !strcmp(s, "interrupted"));
}

int ftclient_is_job_id(const char *s)
{
	if (strlen(s) != FTCLIENT_JOB_ID_LEN)
		return 0;
	return strspn(s, "0123456789abcdef") == FTCLIENT_JOB_ID_LEN;
}

/* Turn a job id or a unique prefix of one (at least 4 hex digits) into the full id. */
int ftclient_resolve_id(struct fthttpc *c, const char *arg, char id[FTCLIENT_JOB_ID_LEN + 1])
{
	if (ftclient_is_job_id(arg)) {
		memcpy(id, arg, FTCLIENT_JOB_ID_LEN + 1);
		return 0;
	}
	size_t l = strlen(arg);
	if (l < 4 || l > FTCLIENT_JOB_ID_LEN || strspn(arg, "0123456789abcdef") != l) {
		ftcli_error("'%s' is not a job id (16 hex digits, or a unique prefix of at least 4)", arg);
		return FTCLI_EXIT_USAGE;
	}
	struct fthttpc_resp r;
	int rc = fthttpc_request(c, "GET", "/benchmark/jobs?limit=10000", NULL, NULL, &r);
	if (rc < 0)
		return ftclient_transport_failed(c, rc);
	if (r.status != 200) {
		rc = ftclient_api_failed(&r, 0, "listing jobs");
		fthttpc_resp_release(&r);
		return rc;
	}
	int found = 0;
	size_t i;
	json_t *j;
	json_array_foreach(json_object_get(r.json, "jobs"), i, j) {
		const char *jid = ftclient_jstr(j, "id");
		if (jid && !strncmp(jid, arg, l) && strlen(jid) == FTCLIENT_JOB_ID_LEN) {
			if (found++ == 0)
				memcpy(id, jid, FTCLIENT_JOB_ID_LEN + 1);
		}
	}
	fthttpc_resp_release(&r);
	if (found == 1)
		return 0;
	ftcli_error("%s: %s", arg, found ? "matches more than one job; give more digits" : "no such job");
	return FTCLI_EXIT_USAGE;
}

/* GET /benchmark/jobs/{id} into *job (new reference). Returns 0 or an exit status. */
int ftclient_get_job(struct fthttpc *c, const char *id, json_t **job)
{
	char path[128];
	struct fthttpc_resp r;
	snprintf(path, sizeof path, "/benchmark/jobs/%s", id);
	int rc = fthttpc_request(c, "GET", path, NULL, NULL, &r);
	if (rc < 0)
		return ftclient_transport_failed(c, rc);
	if (r.status != 200 || !json_is_object(r.json)) {
		rc = ftclient_api_failed(&r, 0, id);
		fthttpc_resp_release(&r);
		return rc ? rc : FTCLI_EXIT_FAIL;
	}
	*job = json_incref(r.json);
	fthttpc_resp_release(&r);
	return 0;
}

struct follow {
	int bar;             /* draw a status line on stderr */
	int shown;           /* a status line is on screen */
	char state[24];
	int done, total;
	char label[96];
	double t0;
	int final;           /* the final state event arrived */
	char last_id[24];    /* the last event's id: a reconnect resumes after it (Last-Event-ID) */
};

static void bar_clear(struct follow *f)
{
	if (f->shown) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
		f->shown = 0;
	}
}

static void bar_draw(struct follow *f)
{
	if (!f->bar)
		return;
	enum { W = 30 };
	char bar[W + 1];
	int fill = f->total > 0 ? (int)((long)f->done * W / f->total) : 0;
	if (fill > W)
		fill = W;
	for (int i = 0; i < W; i++)
		bar[i] = i < fill ? '#' : '.';
	bar[W] = '\0';
	if (f->total > 0)
		fprintf(stderr, "\r\033[K%-9s [%s] %d/%d %s  %.0fs", f->state, bar, f->done, f->total,
			f->label, fttime_now_s() - f->t0);
	else
		fprintf(stderr, "\r\033[K%-9s [%s] %s  %.0fs", f->state, bar, f->label,
			fttime_now_s() - f->t0);
	fflush(stderr);
	f->shown = 1;
}

static int on_event(void *ctx, const struct ftsse_event *ev)
{
	struct follow *f = ctx;
	const char *event = ev->type;
	if (ev->id && *ev->id)
		ftstr_copy(f->last_id, sizeof f->last_id, ev->id);
	json_t *d = json_loadb(ev->data, ev->data_len, 0, NULL);
	if (!strcmp(event, "state")) {
		const char *s = ftclient_jstr(d, "state");
		if (s) {
			ftstr_copy(f->state, sizeof f->state, s);
			if (ftclient_terminal(s))
				f->final = 1;
		}
	} else if (!strcmp(event, "progress")) {
		json_t *dn = json_object_get(d, "done"), *tt = json_object_get(d, "total");
		if (json_is_integer(dn) && json_is_integer(tt)) {
			f->done = (int)json_integer_value(dn);
			f->total = (int)json_integer_value(tt);
		}
		ftstr_copy(f->label, sizeof f->label, ftclient_jstr(d, "label") ? ftclient_jstr(d, "label") : "");
	}
	/* result and error events: the final job record (fetched at the end) carries both. */
	json_decref(d);
	bar_draw(f);
	return 0;
}

/* Follow job id until it ends: the event stream on a terminal and when piped alike (it is
 * cheaper than polling); reconnects when the stream drops, polling the job record in between.
 * Returns 0 with *job set to the final record (new reference), or an exit status. */
int ftclient_follow(struct fthttpc *c, const char *id, int bar, json_t **job)
{
	char path[128];
	struct follow f = {.bar = bar, .t0 = fttime_now_s()};
	double fail_since = 0;
	strcpy(f.state, "...");
	snprintf(path, sizeof path, "/benchmark/jobs/%s/events", id);
	for (;;) {
		struct fthttpc_resp r;
		struct ftsse_parser *p = ftsse_new(SSE_MAX, SSE_MAX, on_event, &f);
		if (!p) {
			bar_clear(&f);
			ftcli_error("out of memory");
			return FTCLI_EXIT_FAIL;
		}
		int rc = fthttpc_stream(c, path, f.last_id, IDLE_S, p, &r);
		ftsse_free(p);
		if (rc == 0 && r.status && r.status != 200) {
			bar_clear(&f);
			rc = ftclient_api_failed(&r, 0, id);
			fthttpc_resp_release(&r);
			return rc;
		}
		fthttpc_resp_release(&r);
		if (rc < 0 && rc != -ETIMEDOUT) {
			/* The daemon went away (restart, network): keep trying for a while. */
			if (!fail_since)
				fail_since = fttime_now_s();
			if (fttime_now_s() - fail_since > RECONNECT_GIVE_UP_S) {
				bar_clear(&f);
				return ftclient_transport_failed(c, rc);
			}
			sleep(1);
			continue;
		}
		fail_since = 0;
		json_t *j = NULL;
		int e = ftclient_get_job(c, id, &j);
		if (e) {
			bar_clear(&f);
			return e;
		}
		if (ftclient_terminal(ftclient_jstr(j, "state"))) {
			bar_clear(&f);
			*job = j;
			return 0;
		}
		json_decref(j);
		if (!f.final)
			sleep(1); /* the stream ended early: the daemon is stopping, or a proxy cut it */
	}
}

static int state_exit(const json_t *job)
{
	const char *s = ftclient_jstr(job, "state");
	return s && !strcmp(s, "succeeded") ? FTCLI_EXIT_OK : FTCLI_EXIT_FAIL;
}

/* The human summary of a finished job on stdout. */
void ftclient_print_final(const json_t *job)
{
	const char *state = ftclient_jstr(job, "state"), *err = ftclient_jstr(job, "error");
	json_t *dur = json_object_get(job, "duration_s");
	printf("job %s %s %s", ftclient_jstr(job, "id") ? ftclient_jstr(job, "id") : "?",
	       ftclient_jstr(job, "kind") ? ftclient_jstr(job, "kind") : "?", state ? state : "?");
	if (json_is_number(dur))
		printf(" in %.1f s", json_number_value(dur));
	json_t *es = json_object_get(job, "exit_status"), *sig = json_object_get(job, "signal");
	if (json_is_integer(sig))
		printf(" (signal %lld)", (long long)json_integer_value(sig));
	else if (json_is_integer(es) && json_integer_value(es) != 0)
		printf(" (exit %lld)", (long long)json_integer_value(es));
	putchar('\n');
	if (err && *err)
		printf("  error: %s\n", err);
	const char *detail = ftclient_jstr(job, "error_detail");
	if (detail && *detail && strcmp(detail, err ? err : "")) {
		/* every reason, one a line (the error above is the first) */
		printf("  reasons:\n");
		for (const char *p = detail; *p;) {
			size_t l = strcspn(p, "\n");
			printf("    %.*s\n", (int)l, p);
			p += l + (p[l] == '\n');
		}
	}
	if (ftclient_jstr(job, "profile_path"))
		printf("  profile: %s\n", ftclient_jstr(job, "profile_path"));
	fflush(stdout);
}

int ftclient_finish(json_t *job, int json)
{
	if (json)
		ftcli_print_json(job);
	else
		ftclient_print_final(job);
	int rc = state_exit(job);
	json_decref(job);
	return rc;
}

