#include "bench/decode.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "decode/client.h"
#include "util/sha1.h"
#include "util/stats.h"
#include "util/timeutil.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int ftdecode_metrics(const struct ftchat_stream *s, uint64_t t_request_ns, struct ftdecode_metrics *m)
{
	memset(m, 0, sizeof *m);
	m->events = (long)s->ntext;
	m->chunks = (long)s->nev;
	m->empty_chunks = (long)(s->nev - s->ntext);
	m->prompt_tokens = s->prompt_tokens;
	m->max_tokens_per_event = -1;
	for (size_t i = 0; i < s->nev; i++)
		if (s->ev[i].bytes && s->ev[i].tokens > m->max_tokens_per_event)
			m->max_tokens_per_event = s->ev[i].tokens;
	int usage = s->completion_tokens >= 0;
	m->tokens_from = usage ? "usage" : "chunks";
	m->usage_missing = !usage;
	m->completion_tokens = usage ? s->completion_tokens : (long)s->nev;
	m->decode_steps = m->completion_tokens - 1;
	/* the timed events: with usage those with text (the seed's), else every token chunk */
	size_t n = usage ? s->ntext : s->nev;
	m->timed = (long)n;
	if (n < 2 || m->completion_tokens < 2)
		return -ENODATA;
	uint64_t *t = malloc(n * sizeof *t);
	double *gaps = malloc((n - 1) * sizeof *gaps);
	if (!t || !gaps) {
		free(t);
		free(gaps);
		return -ENOMEM;
	}
	size_t k = 0;
	for (size_t i = 0; i < s->nev; i++)
		if (!usage || s->ev[i].bytes)
			t[k++] = s->ev[i].t_ns;
	double win = (double)(t[n - 1] - t[0]) / 1e9;
	int r = -ENODATA;
	if (win > 0) {
		m->decode_tok_s = (double)m->decode_steps / win;
		m->ms_per_token = 1000.0 / m->decode_tok_s;
		for (size_t i = 1; i < n; i++)
			gaps[i - 1] = (double)(t[i] - t[i - 1]) / 1e6;
		int ng = (int)n - 1;
		m->event_ms_p50_interp = ftstat_percentile(gaps, ng, 50);
		m->event_ms_p99_interp = ftstat_percentile(gaps, ng, 99);
		qsort(gaps, (size_t)ng, sizeof *gaps, cmp_double);
		m->event_ms_p50 = gaps[ng / 2];
		m->event_ms_p99 = gaps[(int)(ng * 0.99)];
		m->ttft_ms = (double)(t[0] - t_request_ns) / 1e6;
		m->tokens_per_event = (double)m->completion_tokens / (double)n;
		r = 0;
	}
	free(t);
	free(gaps);
	return r;
}

json_t *ftdecode_request(const struct ftdecode_cfg *c, int kind, const char *model_id)
{
	json_t *j = json_pack("{s:s,s:[{s:s,s:s}],s:b,s:{s:b},s:I,s:b,s:f,s:f}", "model", model_id, "messages",
			      "role", "user", "content", c->prompt ? c->prompt : "", "stream", 1, "stream_options",
			      "include_usage", 1, "max_tokens", (json_int_t)c->serve.max_tokens, "ignore_eos", 1,
			      "temperature", c->sampling.temperature, "top_p", c->sampling.top_p);
	if (!j)
		return NULL;
	long k = c->sampling.top_k;
	if (k < 0 && kind == FTSRV_LLAMACPP)
		k = 0; /* llama.cpp: 0 is "off" */
	if (k >= 0 || kind == FTSRV_FREETOKEN || kind == FTSRV_VLLM || kind == FTSRV_SGLANG)
		json_object_set_new(j, "top_k", json_integer(k));
	if (c->thinking)
		json_object_set_new(j, "chat_template_kwargs", json_pack("{s:b,s:b}", "enable_thinking", 1, "thinking", 1));
	return j;
}

static void warn(struct ftdecode_result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn(struct ftdecode_result *r, const char *fmt, ...)
{
	if (r->nwarnings >= FTDECODE_MAX_WARNINGS)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->warnings[r->nwarnings++], sizeof r->warnings[0], fmt, ap);
	va_end(ap);
}

static void nap(double s)
{
	struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
	nanosleep(&ts, NULL);
}

static int cancelled(const struct ftdecode_cfg *c)
{
	return c->cancel && *c->cancel;
}

/* Append what the server said last, and how it ended, to r->error. */
static void add_server_context(struct ftdecode_result *r, struct ftsrv *srv, int err)
{
	if (!r->started)
		return;
	/* a lost connection usually means a dying server: give it a moment to finish dying, so
	 * the report can say how it ended */
	for (int i = 0; err == -EPIPE && i < 100 && ftsrv_alive(srv); i++)
		nap(0.02);
	size_t l = strlen(r->error);
	if (!ftsrv_alive(srv) && srv->proc.reaped) {
		char st[96];
		ftproc_status_string(srv->proc.status, st, sizeof st);
		l += (size_t)snprintf(r->error + l, sizeof r->error - l, "; server %s", st);
	}
	char tail[600];
	ftsrv_log_tail(srv->log_path, 6, tail, sizeof tail);
	if (l < sizeof r->error && tail[0])
		snprintf(r->error + l, sizeof r->error - l, "; server log %s ends:\n%s", srv->log_path, tail);
}

static void set_progress_state(const struct ftdecode_cfg *c, const char *what, const char *state)
{
	char l[400];
	snprintf(l, sizeof l, "waiting for %.64s: %.256s", what, state);
	ftreport_progress(c->rep, 1, FTDECODE_PHASES, l);
}

/* Wait until the server is ready, the way its kind says; with url and no kind given, first find
 * out which kind it is. */
static int wait_ready(const struct ftdecode_cfg *c, const char *base, struct ftsrv *srv, struct ftdecode_result *r,
		      int *kind)
{
	double end = fttime_now_s() + c->health_timeout_s;
	char state[512] = "no answer yet", last[512] = "";
	double next_note = 2; /* a server that is up within 2 s is not worth a line */
	int use_models = *kind == FTSRV_OPENAI;
	snprintf(r->readiness, sizeof r->readiness, "%s", *kind < 0 ? "" : use_models ? "/v1/models" :
		 *kind == FTSRV_FREETOKEN ? "/health maintenance" : "/health");
	for (;;) {
		if (cancelled(c)) {
			snprintf(r->error, sizeof r->error, "cancelled while waiting for the server");
			return -ECANCELED;
		}
		if (r->started && !ftsrv_alive(srv)) {
			snprintf(r->error, sizeof r->error, "the server exited before it was serving");
			return -ESRCH;
		}
		double left = end - fttime_now_s();
		double to = left < 5 ? (left > 0.2 ? left : 0.2) : 5;
		int h;
		if (*kind < 0) {
			int k;
			char how[180];
			h = ftclient_detect_kind(base, to, &k, how, sizeof how);
			if (h == 0) {
				*kind = k;
				snprintf(r->kind_how, sizeof r->kind_how, "detected: %s", how);
				use_models = k == FTSRV_OPENAI;
				snprintf(r->readiness, sizeof r->readiness, "%s", use_models ? "/v1/models" :
					 k == FTSRV_FREETOKEN ? "/health maintenance" : "/health");
				continue;
			}
			snprintf(state, sizeof state, "%s", how);
		} else if (!use_models) {
			h = ftclient_health(base, to, state, sizeof state);
			if (h == 1)
				return 0;
			if (h == -EREMOTEIO) {
				snprintf(r->error, sizeof r->error, "%s/health: %s", base, state);
				return -EREMOTEIO;
			}
			if (h == -ENOENT) {
				/* llama-cpp-python's server and other plain OpenAI servers have no /health */
				use_models = 1;
				snprintf(r->readiness, sizeof r->readiness, "/v1/models (no /health)");
				char note[400];
				snprintf(note, sizeof note, "GET %s/health answered 404 (this %s server has no /health): "
					 "readiness taken from /v1/models instead", base, ftsrv_kind_name((enum ftsrv_kind)*kind));
				ftreport_note(c->rep, note);
				continue;
			}
		} else {
			h = ftclient_models_ready(base, to, state, sizeof state);
			if (h == 1)
				return 0;
		}
		/* said on a change, and once a minute while it lasts (also without a terminal) */
		double waited = fttime_now_s() - (end - c->health_timeout_s);
		if (strcmp(state, last)) {
			snprintf(last, sizeof last, "%s", state);
			set_progress_state(c, r->readiness[0] ? r->readiness : "the server", state);
			if (waited >= 2)
				next_note = waited;
		}
		if (waited >= next_note) {
			char note[700];
			snprintf(note, sizeof note, "waiting for %s (%.0f s of %.0f): %s", r->readiness[0] ? r->readiness :
				 "the server", waited, c->health_timeout_s, state);
			ftreport_note(c->rep, note);
			next_note = waited + 60;
		}
		if (fttime_now_s() >= end) {
			snprintf(r->error, sizeof r->error, "%s%s did not say serving within %.0f s (last: %s)", base,
				 *kind < 0 ? " (kind unknown)" : use_models ? "/v1/models" : "/health", c->health_timeout_s,
				 state);
			return -ETIMEDOUT;
		}
		nap(c->health_interval_s);
	}
}

static int stream_once(const struct ftdecode_cfg *c, const char *base, const json_t *req, struct ftchat_stream *s,
		       uint64_t *t_req, char *why, size_t n)
{
	int e = ftchat_init(s, NULL);
	if (e < 0) {
		snprintf(why, n, "out of memory");
		return e;
	}
	return ftclient_stream_chat(base, req, c->request_timeout_s, s, t_req, c->cancel, why, n);
}

/* Where to look when the server said nothing useful. */
static void log_hint(const struct ftdecode_result *r, char *buf, size_t n)
{
	if (r->started)
		snprintf(buf, n, "see its log %s", r->server_log);
	else
		snprintf(buf, n, "see the server's own log");
}

/* A failed request's reason, with what we know of the server's state. */
static void request_error(struct ftdecode_result *r, struct ftsrv *srv, const char *which, int err, const char *why,
			  long prompt_chars)
{
	char hint[600];
	log_hint(r, hint, sizeof hint);
	int alive = r->started && ftsrv_alive(srv);
	if (err == -ENODATA)
		snprintf(r->error, sizeof r->error, "%s request: %s; %s%s (a prompt longer than the server's context "
			 "does this: the prompt is %ld characters)", which, why, r->started ? (alive ?
			 "the server is still running; " : "") : "", hint, prompt_chars);
	else if (err == -EPIPE && alive)
		snprintf(r->error, sizeof r->error, "%s request: %s; the server is still running: %s", which, why, hint);
	else
		snprintf(r->error, sizeof r->error, "%s request: %s", which, why);
}

static double first_token_ms(const struct ftchat_stream *s, uint64_t t_req)
{
	for (size_t i = 0; i < s->nev; i++)
		if (s->ev[i].bytes || s->completion_tokens < 0)
			return (double)(s->ev[i].t_ns - t_req) / 1e6;
	return -1;
}

/* 1 when name is an executable on PATH. */
static int on_path(const char *name)
{
	const char *path = getenv("PATH");
	char buf[4096];
	for (const char *p = path ? path : ""; *p;) {
		const char *e = strchr(p, ':');
		size_t l = e ? (size_t)(e - p) : strlen(p);
		snprintf(buf, sizeof buf, "%.*s/%s", (int)l, l ? p : ".", name);
		if (!access(buf, X_OK))
			return 1;
		p += l + (e ? 1 : 0);
	}
	return 0;
}

/* Append the words of extra (may be NULL) to the NULL-terminated list *v of n words. */
static int add_words(char ***v, int n, char *const *extra)
{
	int m = 0;
	while (extra && extra[m])
		m++;
	if (!m)
		return 0;
	char **q = realloc(*v, (size_t)(n + m + 1) * sizeof *q);
	if (!q)
		return -ENOMEM;
	*v = q;
	for (int i = 0; i < m; i++) {
		q[n + i] = strdup(extra[i]);
		q[n + i + 1] = NULL;
		if (!q[n + i])
			return -ENOMEM;
	}
	return 0;
}

/* Start the server of backend from the template (--server-cmd, else the kind's launcher) on a
 * loopback port, its log in a fresh private directory under c->log_dir: 0 and its URL in base, or
 * -errno with r->error. flags, argv and env get what the caller frees. */
static int start_server(const struct ftdecode_cfg *c, const char *backend, int kind, struct ftsrv *srv,
			struct ftdecode_result *r, char ***flags, char ***argv, char ***env, char *base, size_t basen)
{
	char why[1024];
	int nflags, err;
	int port = c->port;
	const char *tmpl = c->server_cmd ? c->server_cmd : ftsrv_default_template((enum ftsrv_kind)kind);
	if (!tmpl) {
		snprintf(r->error, sizeof r->error, "--server-kind %s has no standard launcher: give --server-cmd "
			 "TEMPLATE or --url", ftsrv_kind_name((enum ftsrv_kind)kind));
		return -EINVAL;
	}
	if (!port && (err = ftsrv_free_port(&port)) < 0) {
		snprintf(r->error, sizeof r->error, "no free loopback port: %s", strerror(-err));
		return err;
	}
	if ((err = ftsrv_serve_flags(&c->serve, (enum ftsrv_kind)kind, backend, flags, &nflags)) < 0) {
		snprintf(r->error, sizeof r->error, "out of memory");
		return err;
	}
	/* a --compare arm's words go with the mapped flags, or alone at the end of a template
	 * that takes none: without them the arms would not differ */
	int with_flags = ftsrv_template_has_flags(tmpl) || c->append_flags;
	if ((err = with_flags ? add_words(flags, nflags, c->extra_args) : 0) < 0 ||
	    (err = ftsrv_expand(tmpl, c->model, port, backend, with_flags ? *flags : c->extra_args,
				with_flags ? c->append_flags : 1, argv, why, sizeof why)) < 0) {
		snprintf(r->error, sizeof r->error, "%s", err == -ENOMEM ? "out of memory" : why);
		return err;
	}
	/* the seed runs its launcher with its own interpreter: where there is no "python",
	 * Debian's "python3" is the one */
	if (!c->server_cmd && !strcmp((*argv)[0], "python") && !on_path("python") && on_path("python3")) {
		char *p3 = strdup("python3");
		if (p3) {
			free((*argv)[0]);
			(*argv)[0] = p3;
		}
	}
	if (c->server_cmd && nflags && !ftsrv_template_has_flags(tmpl) && !c->append_flags)
		warn(r, "--server-cmd has no {flags}: the %s flags (%d words) are not passed (--append-flags "
		     "passes them)", ftsrv_kind_name((enum ftsrv_kind)kind), nflags);
	const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
	if (kind != FTSRV_FREETOKEN && c->serve.gpu && !(cvd && *cvd))
		warn(r, "--gpu %s is passed only to a FreeToken server; a %s server uses the GPUs of "
		     "CUDA_VISIBLE_DEVICES (unset here)", c->serve.gpu, ftsrv_kind_name((enum ftsrv_kind)kind));
	ftsrv_argv_string(*argv, r->server_cmd, sizeof r->server_cmd);
	/* a fresh private directory per server (no fixed name in a shared /tmp), the log made
	 * new in it: nothing planted there can be followed */
	char log[512], dir[400];
	snprintf(dir, sizeof dir, "%s/ftbench-decode-%s.XXXXXX", c->log_dir ? c->log_dir : "/tmp", backend);
	int lfd = -1;
	/* the directory may be new (the daemon names one per job, <state>/logs/<id>.decode);
	 * when it cannot be made, mkdtemp's error says why */
	if (c->log_dir)
		mkdir(c->log_dir, 0750);
	if (!mkdtemp(dir) || (snprintf(log, sizeof log, "%s/server.log", dir),
			      lfd = open(log, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0640)) < 0) {
		err = -errno;
		snprintf(r->error, sizeof r->error, "server log in %s: %s", dir, strerror(-err));
		return err;
	}
	close(lfd);
	if ((c->env_set || c->env_unset) &&
	    (err = ftproc_env_new(env, NULL, (const char *const *)c->env_unset, (const char *const *)c->env_set)) < 0) {
		snprintf(r->error, sizeof r->error, "the server's environment: %s", strerror(-err));
		return err;
	}
	if ((err = ftsrv_start_env(srv, *argv, *env, log, why, sizeof why)) < 0) {
		snprintf(r->error, sizeof r->error, "%s", why);
		return err;
	}
	r->started = 1;
	snprintf(r->server_log, sizeof r->server_log, "%s", log);
	snprintf(base, basen, "http://%s:%d", FTSRV_HOST, port);
	return 0;
}

int ftdecode_run(const struct ftdecode_cfg *c, const char *backend, struct ftdecode_result *r)
{
	memset(r, 0, sizeof *r);
	snprintf(r->backend, sizeof r->backend, "%s", backend);
	r->vram_bytes = -1;
	r->ttft_cold_ms = -1;
	double t0 = fttime_now_s();
	struct ftsrv srv = {0};
	struct ftchat_stream s = {0};
	json_t *req = NULL;
	char base[256], why[1024], label[128];
	char **flags = NULL, **argv = NULL, **env = NULL;
	int err = 0;
	int kind = c->kind;
	if (kind < 0 && !c->url)
		kind = FTSRV_FREETOKEN;
	if (kind >= 0)
		snprintf(r->kind_how, sizeof r->kind_how, "%s", c->kind >= 0 ? "--server-kind" : "default");

	ftreport_progress(c->rep, 0, FTDECODE_PHASES, "starting server");
	if (c->url) {
		snprintf(base, sizeof base, "%s", c->url);
	} else if ((err = start_server(c, backend, kind, &srv, r, &flags, &argv, &env, base, sizeof base)) < 0) {
		goto out;
	}
	snprintf(r->url, sizeof r->url, "%s", base);

	ftreport_progress(c->rep, 1, FTDECODE_PHASES, "waiting for the server");
	err = wait_ready(c, base, &srv, r, &kind);
	if (kind >= 0)
		snprintf(r->server_kind, sizeof r->server_kind, "%s", ftsrv_kind_name((enum ftsrv_kind)kind));
	/* a server we did not start, or one that has no MoE backends: labelled by its kind */
	if (!c->label && kind >= 0 && (c->url || kind != FTSRV_FREETOKEN))
		snprintf(r->backend, sizeof r->backend, "%s", r->server_kind);
	if (err < 0)
		goto out;
	if ((err = ftclient_model_id(base, 30, r->model_id, sizeof r->model_id, why, sizeof why)) < 0) {
		snprintf(r->error, sizeof r->error, "%s", why);
		goto out;
	}
	req = ftdecode_request(c, kind, r->model_id);
	if (!req) {
		err = -ENOMEM;
		snprintf(r->error, sizeof r->error, "out of memory");
		goto out;
	}
	long pchars = c->prompt ? (long)strlen(c->prompt) : 0;
	uint64_t t_req = 0;
	for (int i = 0; i < c->warmup; i++) {
		snprintf(label, sizeof label, "warm-up %d/%d", i + 1, c->warmup);
		ftreport_progress(c->rep, 2, FTDECODE_PHASES, label);
		err = stream_once(c, base, req, &s, &t_req, why, sizeof why);
		if (i == 0 && err == 0)
			r->ttft_cold_ms = first_token_ms(&s, t_req);
		ftchat_release(&s);
		if (err < 0) {
			request_error(r, &srv, "warm-up", err, why, pchars);
			goto out;
		}
	}
	ftreport_progress(c->rep, 3, FTDECODE_PHASES, "measured request");
	if ((err = stream_once(c, base, req, &s, &t_req, why, sizeof why)) < 0) {
		request_error(r, &srv, "measured", err, why, pchars);
		goto out;
	}
	snprintf(r->finish_reason, sizeof r->finish_reason, "%s", s.finish_reason);
	r->timings = s.timings;
	if ((err = ftdecode_metrics(&s, t_req, &r->m)) < 0) {
		char hint[600];
		log_hint(r, hint, sizeof hint);
		snprintf(r->error, sizeof r->error, "measured request: %zu token chunk(s), %zu with text, finish_reason "
			 "%s: nothing to time; %s", s.nev, s.ntext, s.finish_reason[0] ? s.finish_reason : "none", hint);
		goto out;
	}
	r->has_metrics = 1;
	if (c->warmup == 0)
		r->ttft_cold_ms = r->m.ttft_ms;
	char hex[41];
	ftsha1_hex(s.text ? s.text : "", s.text_len, hex);
	snprintf(r->output_sha1, sizeof r->output_sha1, "%.12s", hex);
	if (r->m.usage_missing)
		warn(r, "the server sent no usage: completion_tokens %ld counted from the token chunks (%ld with text, "
		     "%ld empty)%s", r->m.completion_tokens, r->m.events, r->m.empty_chunks,
		     kind == FTSRV_FREETOKEN ? "; is this a FreeToken server?" : "");
	long D = c->serve.max_tokens;
	if (kind == FTSRV_FREETOKEN && r->m.completion_tokens == D - 1 && !strcmp(s.finish_reason, "length")) {
		/* FreeToken 0.1.2's server stops one token before max_tokens (usage 63 for 64, a 55-token
		 * prompt, on the H200): its own bench only warns when completion_tokens != D */
		warn(r, "completion_tokens %ld != requested %ld (finish_reason \"length\"): the FreeToken server "
		     "stops one token before max_tokens; decode_steps counts what it sent", r->m.completion_tokens, D);
	} else if (r->m.completion_tokens < D) {
		int full = !strcmp(s.finish_reason, "length");
		snprintf(r->short_reason, sizeof r->short_reason, "%s", full ? "context_full" : "ignored_eos");
		char msg[400];
		if (full)
			snprintf(msg, sizeof msg, "the context is full: the server stopped after %ld of %ld tokens with "
				 "finish_reason \"length\" (prompt %ld tokens; give the server a longer context)",
				 r->m.completion_tokens, D, r->m.prompt_tokens);
		else
			snprintf(msg, sizeof msg, "the server ignored ignore_eos: it stopped after %ld of %ld tokens with "
				 "finish_reason \"%s\"", r->m.completion_tokens, D,
				 s.finish_reason[0] ? s.finish_reason : "(none)");
		if (!c->allow_short) {
			snprintf(r->error, sizeof r->error, "%s; the figures cover only those tokens (--allow-short "
				 "records them as ok)", msg);
			err = -ERANGE;
			goto vram;
		}
		warn(r, "%s", msg);
	} else if (r->m.completion_tokens > D) {
		warn(r, "completion_tokens %ld > requested %ld", r->m.completion_tokens, D);
	}
	r->ok = 1;
vram:
	if (ftclient_vram_bytes(base, 10, &r->vram_bytes) < 0)
		r->vram_bytes = -1;
out:
	if (!r->ok && err == 0)
		err = -EIO;
	if (!r->ok && err != -ERANGE)
		add_server_context(r, &srv, err);
	ftreport_progress(c->rep, 4, FTDECODE_PHASES, "stopping server");
	if (r->started) {
		if (ftsrv_stop(&srv, &c->grace, r->server_stop, sizeof r->server_stop) < 0)
			warn(r, "server %s", r->server_stop);
	}
	ftreport_progress(c->rep, FTDECODE_PHASES, FTDECODE_PHASES, r->ok ? "done" : "failed");
	ftchat_release(&s);
	json_decref(req);
	ftsrv_free_argv(flags);
	ftsrv_free_argv(argv);
	ftproc_env_free(env);
	r->wall_s = fttime_now_s() - t0;
	return r->ok ? 0 : err;
}

static json_t *num_or_null(int have, double v)
{
	return have ? json_real(v) : json_null();
}

static json_t *int_or_null(int have, long long v)
{
	return have ? json_integer(v) : json_null();
}

static json_t *str_or_null(const char *s)
{
	return s && *s ? json_string(s) : json_null();
}

json_t *ftdecode_row(const struct ftdecode_cfg *c, const struct ftdecode_result *r)
{
	char ts[32], host[256] = "";
	fttime_wall_iso8601(ts, sizeof ts);
	gethostname(host, sizeof host - 1);
	const struct ftdecode_metrics *m = &r->m;
	int hm = r->has_metrics;
	json_t *j = json_object();
	json_t *w = json_array();
	for (int i = 0; i < r->nwarnings; i++)
		json_array_append_new(w, json_string(r->warnings[i]));
	char cache[64];
	if (c->serve.cache_size > 0)
		snprintf(cache, sizeof cache, "size:%ld", c->serve.cache_size);
	else if (c->serve.cache_rate >= 0)
		snprintf(cache, sizeof cache, "rate:%g", c->serve.cache_rate);
	else
		snprintf(cache, sizeof cache, "auto");
	json_object_set_new(j, "kind", json_string("decode"));
	json_object_set_new(j, "timestamp", json_string(ts));
	json_object_set_new(j, "epoch", json_real(fttime_wall_epoch()));
	json_object_set_new(j, "host", json_string(host));
	json_object_set_new(j, "tool", json_pack("{s:s,s:s}", "name", "ftbench", "version", FT_VERSION));
	json_object_set_new(j, "backend", json_string(r->backend));
	json_object_set_new(j, "server_kind", str_or_null(r->server_kind));
	json_object_set_new(j, "server_kind_from", str_or_null(r->kind_how));
	json_object_set_new(j, "readiness", str_or_null(r->readiness));
	json_object_set_new(j, "ok", json_boolean(r->ok));
	json_object_set_new(j, "error", str_or_null(r->ok ? NULL : r->error));
	json_object_set_new(j, "model", str_or_null(c->model));
	json_object_set_new(j, "model_id", str_or_null(r->model_id));
	json_object_set_new(j, "url", str_or_null(r->url));
	json_object_set_new(j, "max_tokens", json_integer(c->serve.max_tokens));
	json_object_set_new(j, "prompt_tokens", int_or_null(hm && m->prompt_tokens >= 0, m->prompt_tokens));
	json_object_set_new(j, "decode_steps", int_or_null(hm, m->decode_steps));
	json_object_set_new(j, "completion_tokens", int_or_null(hm, m->completion_tokens));
	json_object_set_new(j, "decode_tok_s", num_or_null(hm, m->decode_tok_s));
	json_object_set_new(j, "ms_per_token", num_or_null(hm, m->ms_per_token));
	json_object_set_new(j, "event_ms_p50", num_or_null(hm, m->event_ms_p50));
	json_object_set_new(j, "event_ms_p99", num_or_null(hm, m->event_ms_p99));
	json_object_set_new(j, "event_ms_p50_interp", num_or_null(hm, m->event_ms_p50_interp));
	json_object_set_new(j, "event_ms_p99_interp", num_or_null(hm, m->event_ms_p99_interp));
	json_object_set_new(j, "ttft_ms", num_or_null(hm, m->ttft_ms));
	json_object_set_new(j, "ttft_cold_ms", num_or_null(r->ttft_cold_ms >= 0, r->ttft_cold_ms));
	json_object_set_new(j, "tokens_from", str_or_null(hm ? m->tokens_from : NULL));
	json_object_set_new(j, "events", int_or_null(hm, m->events));
	json_object_set_new(j, "chunks", int_or_null(hm, m->chunks));
	json_object_set_new(j, "empty_chunks", int_or_null(hm, m->empty_chunks));
	json_object_set_new(j, "tokens_per_event", num_or_null(hm, m->tokens_per_event));
	json_object_set_new(j, "max_tokens_per_event", int_or_null(hm && m->max_tokens_per_event >= 0, m->max_tokens_per_event));
	json_object_set_new(j, "usage_missing", json_boolean(hm && m->usage_missing));
	json_object_set_new(j, "vram_bytes", int_or_null(r->vram_bytes >= 0, r->vram_bytes));
	json_object_set_new(j, "vram_gib", num_or_null(r->vram_bytes >= 0, (double)r->vram_bytes / 1073741824.0));
	json_t *sm = ftsampling_json(&c->sampling);
	int kind = r->server_kind[0] ? ftsrv_kind_parse(r->server_kind) : -1;
	json_t *q = kind >= 0 ? ftdecode_request(c, kind, "") : NULL;
	json_t *tk = json_object_get(q, "top_k");
	json_object_set_new(sm, "top_k_sent", tk ? json_incref(tk) : json_null());
	json_decref(q);
	json_object_set_new(j, "sampling", sm);
	json_object_set_new(j, "output_sha1", str_or_null(r->output_sha1));
	json_object_set_new(j, "finish_reason", str_or_null(r->finish_reason));
	json_object_set_new(j, "short", str_or_null(r->short_reason));
	const struct ftchat_timings *t = &r->timings;
	json_object_set_new(j, "server_tok_s", num_or_null(t->have && t->predicted_per_second > 0, t->predicted_per_second));
	json_object_set_new(j, "server_timings", t->have ? json_pack("{s:o,s:f,s:f,s:f,s:f,s:f,s:f}", "cache_n",
			    t->cache_n >= 0 ? json_real(t->cache_n) : json_null(), "prompt_n", t->prompt_n,
			    "prompt_ms", t->prompt_ms, "prompt_per_second", t->prompt_per_second, "predicted_n",
			    t->predicted_n, "predicted_ms", t->predicted_ms, "predicted_per_second",
			    t->predicted_per_second) : json_null());
	json_object_set_new(j, "problem", json_integer(c->problem));
	json_object_set_new(j, "prompt_source", str_or_null(c->prompt_source));
	json_object_set_new(j, "thinking", json_boolean(c->thinking));
	json_object_set_new(j, "warmup_requests", json_integer(c->warmup));
	json_object_set_new(j, "mem_ratio", json_real(c->serve.mem_ratio));
	json_object_set_new(j, "cache", json_string(cache));
	json_object_set_new(j, "hybrid_fetch", json_integer(c->serve.hybrid_fetch));
	json_object_set_new(j, "cuda_graph", json_boolean(!c->serve.no_graph));
	json_object_set_new(j, "gpu", str_or_null(c->serve.gpu));
	json_object_set_new(j, "num_token_override", int_or_null(c->serve.num_token_override > 0,
								 c->serve.num_token_override));
	json_object_set_new(j, "server_started", json_boolean(r->started));
	json_object_set_new(j, "server_cmd", str_or_null(r->server_cmd));
	json_object_set_new(j, "server_stop", str_or_null(r->server_stop));
	json_object_set_new(j, "server_log", str_or_null(r->server_log));
	json_object_set_new(j, "wall_s", json_real(r->wall_s));
	json_object_set_new(j, "warnings", w);
	return j;
}
