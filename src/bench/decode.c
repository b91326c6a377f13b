#include "bench/decode.h"

#include <errno.h>
#include <fcntl.h>
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

int ftdecode_metrics(const struct ftchat_stream *s, uint64_t t_request_ns, struct ftdecode_metrics *m)
{
	memset(m, 0, sizeof *m);
	m->events = (long)s->nev;
	m->prompt_tokens = s->prompt_tokens;
	m->max_tokens_per_event = -1;
	long known = 0;
	int all_known = s->nev > 0;
	for (size_t i = 0; i < s->nev; i++) {
		if (s->ev[i].tokens < 0) {
			all_known = 0;
			continue;
		}
		known += s->ev[i].tokens;
		if (s->ev[i].tokens > m->max_tokens_per_event)
			m->max_tokens_per_event = s->ev[i].tokens;
	}
	if (s->completion_tokens >= 0) {
		m->completion_tokens = s->completion_tokens;
	} else {
		m->completion_tokens = all_known ? known : (long)s->nev;
		m->usage_missing = 1;
	}
	if (s->nev < 2)
		return -ENODATA;
	double win = (double)(s->ev[s->nev - 1].t_ns - s->ev[0].t_ns) / 1e9;
	if (win <= 0 || m->completion_tokens < 2)
		return -ENODATA;
	m->decode_tok_s = (double)(m->completion_tokens - 1) / win;
	m->ms_per_token = 1000.0 / m->decode_tok_s;
	double *gaps = malloc((s->nev - 1) * sizeof *gaps);
	if (!gaps)
		return -ENOMEM;
	for (size_t i = 1; i < s->nev; i++)
		gaps[i - 1] = (double)(s->ev[i].t_ns - s->ev[i - 1].t_ns) / 1e6;
	m->event_ms_p50 = ftstat_percentile(gaps, (int)s->nev - 1, 50);
	m->event_ms_p99 = ftstat_percentile(gaps, (int)s->nev - 1, 99);
	free(gaps);
	m->ttft_ms = (double)(s->ev[0].t_ns - t_request_ns) / 1e6;
	m->tokens_per_event = (double)m->completion_tokens / (double)s->nev;
	return 0;
}

json_t *ftdecode_request(const struct ftdecode_cfg *c, const char *model_id)
{
	json_t *j = json_pack("{s:s,s:[{s:s,s:s}],s:b,s:{s:b},s:I,s:b,s:f,s:f,s:I}", "model", model_id, "messages",
			      "role", "user", "content", c->prompt ? c->prompt : "", "stream", 1, "stream_options",
			      "include_usage", 1, "max_tokens", (json_int_t)c->serve.max_tokens, "ignore_eos", 1,
			      "temperature", c->sampling.temperature, "top_p", c->sampling.top_p, "top_k",
			      (json_int_t)c->sampling.top_k);
	if (j && c->thinking)
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
	if (!ftsrv_alive(srv) && srv->reaped) {
		char st[96];
		ftsrv_status_string(srv->status, st, sizeof st);
		l += (size_t)snprintf(r->error + l, sizeof r->error - l, "; server %s", st);
	}
	char tail[600];
	ftsrv_log_tail(srv->log_path, 6, tail, sizeof tail);
	if (l < sizeof r->error && tail[0])
		snprintf(r->error + l, sizeof r->error - l, "; server log %s ends:\n%s", srv->log_path, tail);
}

static int wait_healthy(const struct ftdecode_cfg *c, const char *base, struct ftsrv *srv, struct ftdecode_result *r)
{
	double end = ft_now_s() + c->health_timeout_s;
	char state[256] = "no answer yet";
	for (;;) {
		if (cancelled(c)) {
			snprintf(r->error, sizeof r->error, "cancelled while waiting for the server");
			return -ECANCELED;
		}
		if (r->started && !ftsrv_alive(srv)) {
			snprintf(r->error, sizeof r->error, "the server exited before it was serving");
			return -ESRCH;
		}
		double left = end - ft_now_s();
		int h = ftdc_health(base, left < 5 ? (left > 0.2 ? left : 0.2) : 5, state, sizeof state);
		if (h == 1)
			return 0;
		if (ft_now_s() >= end) {
			snprintf(r->error, sizeof r->error, "%s/health did not say serving within %.0f s (last: %s)",
				 base, c->health_timeout_s, state);
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
	return ftdc_stream_chat(base, req, c->request_timeout_s, s, t_req, c->cancel, why, n);
}

int ftdecode_run(const struct ftdecode_cfg *c, const char *backend, struct ftdecode_result *r)
{
	memset(r, 0, sizeof *r);
	snprintf(r->backend, sizeof r->backend, "%s", backend);
	r->vram_bytes = -1;
	double t0 = ft_now_s();
	struct ftsrv srv = {0};
	struct ftchat_stream s = {0};
	json_t *req = NULL;
	char base[256], why[1024], label[128];
	char **flags = NULL, **argv = NULL;
	int nflags, err = 0;

	ftreport_progress(c->rep, 0, FTDECODE_PHASES, "starting server");
	if (c->url) {
		snprintf(base, sizeof base, "%s", c->url);
	} else {
		int port = c->port;
		if (!port && (err = ftsrv_free_port(&port)) < 0) {
			snprintf(r->error, sizeof r->error, "no free loopback port: %s", strerror(-err));
			goto out;
		}
		if ((err = ftsrv_serve_flags(&c->serve, backend, &flags, &nflags)) < 0 ||
		    (err = ftsrv_expand(c->server_cmd ? c->server_cmd : FTSRV_DEFAULT_TEMPLATE, c->model, port, backend,
					flags, &argv, why, sizeof why)) < 0) {
			snprintf(r->error, sizeof r->error, "%s", err == -ENOMEM ? "out of memory" : why);
			goto out;
		}
		ftsrv_argv_string(argv, r->server_cmd, sizeof r->server_cmd);
		/* a fresh private directory per server (no fixed name in a shared /tmp), the log made
		 * new in it: nothing planted there can be followed */
		char log[512], dir[400];
		snprintf(dir, sizeof dir, "%s/ftbench-decode-%s.XXXXXX", c->log_dir ? c->log_dir : "/tmp", backend);
		int lfd = -1;
		if (!mkdtemp(dir) || (snprintf(log, sizeof log, "%s/server.log", dir),
				      lfd = open(log, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0640)) < 0) {
			err = -errno;
			snprintf(r->error, sizeof r->error, "server log in %s: %s", dir, strerror(-err));
			goto out;
		}
		close(lfd);
		if ((err = ftsrv_start(&srv, argv, log, why, sizeof why)) < 0) {
			snprintf(r->error, sizeof r->error, "%s", why);
			goto out;
		}
		r->started = 1;
		snprintf(r->server_log, sizeof r->server_log, "%s", log);
		snprintf(base, sizeof base, "http://%s:%d", FTSRV_HOST, port);
	}
	snprintf(r->url, sizeof r->url, "%s", base);

	ftreport_progress(c->rep, 1, FTDECODE_PHASES, "waiting for /health");
	if ((err = wait_healthy(c, base, &srv, r)) < 0)
		goto out;
	if ((err = ftdc_model_id(base, 30, r->model_id, sizeof r->model_id, why, sizeof why)) < 0) {
		snprintf(r->error, sizeof r->error, "%s", why);
		goto out;
	}
	req = ftdecode_request(c, r->model_id);
	if (!req) {
		err = -ENOMEM;
		snprintf(r->error, sizeof r->error, "out of memory");
		goto out;
	}
	uint64_t t_req = 0;
	for (int i = 0; i < c->warmup; i++) {
		snprintf(label, sizeof label, "warm-up %d/%d", i + 1, c->warmup);
		ftreport_progress(c->rep, 2, FTDECODE_PHASES, label);
		err = stream_once(c, base, req, &s, &t_req, why, sizeof why);
		ftchat_release(&s);
		if (err < 0) {
			snprintf(r->error, sizeof r->error, "warm-up request: %s", why);
			goto out;
		}
	}
	ftreport_progress(c->rep, 3, FTDECODE_PHASES, "measured request");
	if ((err = stream_once(c, base, req, &s, &t_req, why, sizeof why)) < 0) {
		snprintf(r->error, sizeof r->error, "measured request: %s", why);
		goto out;
	}
	if ((err = ftdecode_metrics(&s, t_req, &r->m)) < 0) {
		snprintf(r->error, sizeof r->error, "measured request: %zu text events, nothing to time", s.nev);
		goto out;
	}
	r->has_metrics = 1;
	char hex[41];
	ftsha1_hex(s.text ? s.text : "", s.text_len, hex);
	snprintf(r->output_sha1, sizeof r->output_sha1, "%.12s", hex);
	snprintf(r->finish_reason, sizeof r->finish_reason, "%s", s.finish_reason);
	if (r->m.usage_missing)
		warn(r, "the server sent no usage: completion_tokens %ld counted from the events", r->m.completion_tokens);
	if (r->m.completion_tokens != c->serve.max_tokens)
		warn(r, "completion_tokens %ld != requested %ld (ignore_eos not honoured?)", r->m.completion_tokens,
		     c->serve.max_tokens);
	if (ftdc_vram_bytes(base, 10, &r->vram_bytes) < 0)
		r->vram_bytes = -1;
	r->ok = 1;
out:
	if (!r->ok && err == 0)
		err = -EIO;
	if (!r->ok)
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
	r->wall_s = ft_now_s() - t0;
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
	ft_wall_iso8601(ts, sizeof ts);
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
	json_object_set_new(j, "epoch", json_real(ft_wall_epoch()));
	json_object_set_new(j, "host", json_string(host));
	json_object_set_new(j, "tool", json_pack("{s:s,s:s}", "name", "ftbench", "version", FT_VERSION));
	json_object_set_new(j, "backend", json_string(r->backend));
	json_object_set_new(j, "ok", json_boolean(r->ok));
	json_object_set_new(j, "error", str_or_null(r->ok ? NULL : r->error));
	json_object_set_new(j, "model", str_or_null(c->model));
	json_object_set_new(j, "model_id", str_or_null(r->model_id));
	json_object_set_new(j, "url", str_or_null(r->url));
	json_object_set_new(j, "max_tokens", json_integer(c->serve.max_tokens));
	json_object_set_new(j, "decode_tok_s", num_or_null(hm, m->decode_tok_s));
	json_object_set_new(j, "ms_per_token", num_or_null(hm, m->ms_per_token));
	json_object_set_new(j, "event_ms_p50", num_or_null(hm, m->event_ms_p50));
	json_object_set_new(j, "event_ms_p99", num_or_null(hm, m->event_ms_p99));
	json_object_set_new(j, "ttft_ms", num_or_null(hm, m->ttft_ms));
	json_object_set_new(j, "prompt_tokens", int_or_null(hm && m->prompt_tokens >= 0, m->prompt_tokens));
	json_object_set_new(j, "completion_tokens", int_or_null(hm, m->completion_tokens));
	json_object_set_new(j, "events", int_or_null(hm, m->events));
	json_object_set_new(j, "tokens_per_event", num_or_null(hm, m->tokens_per_event));
	json_object_set_new(j, "max_tokens_per_event", int_or_null(hm && m->max_tokens_per_event >= 0, m->max_tokens_per_event));
	json_object_set_new(j, "usage_missing", json_boolean(hm && m->usage_missing));
	json_object_set_new(j, "vram_bytes", int_or_null(r->vram_bytes >= 0, r->vram_bytes));
	json_object_set_new(j, "vram_gib", num_or_null(r->vram_bytes >= 0, (double)r->vram_bytes / 1073741824.0));
	json_object_set_new(j, "sampling", ftsampling_json(&c->sampling));
	json_object_set_new(j, "output_sha1", str_or_null(r->output_sha1));
	json_object_set_new(j, "finish_reason", str_or_null(r->finish_reason));
	json_object_set_new(j, "problem", json_integer(c->problem));
	json_object_set_new(j, "prompt_source", str_or_null(c->prompt_source));
	json_object_set_new(j, "thinking", json_boolean(c->thinking));
	json_object_set_new(j, "warmup_requests", json_integer(c->warmup));
	json_object_set_new(j, "mem_ratio", json_real(c->serve.mem_ratio));
	json_object_set_new(j, "cache", json_string(cache));
	json_object_set_new(j, "hybrid_fetch", json_integer(c->serve.hybrid_fetch));
	json_object_set_new(j, "cuda_graph", json_boolean(!c->serve.no_graph));
	json_object_set_new(j, "server_started", json_boolean(r->started));
	json_object_set_new(j, "server_cmd", str_or_null(r->server_cmd));
	json_object_set_new(j, "server_stop", str_or_null(r->server_stop));
	json_object_set_new(j, "server_log", str_or_null(r->server_log));
	json_object_set_new(j, "wall_s", json_real(r->wall_s));
	json_object_set_new(j, "warnings", w);
	return j;
}
