#include "decode/client.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "decode/server.h"
#include "util/http_client.h"
#include "util/strutil.h"
#include "util/timeutil.h"

/* A fthttpc handle on the server root: base with a trailing "/" or "/v1" dropped, the timeouts of
 * one call, loopback never through a proxy. Release c even on failure. */
static int open_client(struct fthttpc *c, const char *base, double timeout_s, char *why, size_t whylen)
{
	int r = fthttpc_init(c, base);
	if (r < 0) {
		snprintf(why, whylen, "%s", c->err);
		return r;
	}
	size_t bl = strlen(c->base);
	if (bl > 3 && !strcmp(c->base + bl - 3, "/v1") && c->base[bl - 4] != '/')
		c->base[bl - 3] = '\0';
	c->timeout_ms = (long)(timeout_s * 1000.0);
	c->connect_timeout_ms = c->timeout_ms < 10000 ? c->timeout_ms : 10000;
	c->noproxy = "localhost,127.0.0.1,::1";
	c->max_body = FTCLIENT_MAX_BODY;
	return 0;
}

/* GET base+path into *r (see fthttpc_request); why says what failed. */
static int get(const char *base, const char *path, double timeout_s, struct fthttpc_resp *r, char *why,
	       size_t whylen)
{
	struct fthttpc c;
	memset(r, 0, sizeof *r);
	int e = open_client(&c, base, timeout_s, why, whylen);
	if (e == 0) {
		e = fthttpc_request(&c, "GET", path, NULL, NULL, r);
		if (e == -EFBIG)
			e = -EMSGSIZE;
		if (e < 0)
			snprintf(why, whylen, "GET %s", c.err);
	}
	fthttpc_release(&c);
	return e;
}

int ftclient_get(const char *base, const char *path, double timeout_s, long *status, char **body,
	     char *why, size_t whylen)
{
	struct fthttpc_resp r;
	int e = get(base, path, timeout_s, &r, why, whylen);
	if (e == 0) {
		*status = r.status;
		*body = r.body; /* taken over: never NULL after a response */
		r.body = NULL;
	}
	fthttpc_resp_release(&r);
	return e;
}

/* The first lines of text (at most max_lines, n-1 bytes) into buf, lines joined with "\n",
 * trailing blanks dropped, control characters other than newline shown as spaces. */
#define FTCLIENT_ERR_EXCERPT 480 /* characters of a server's error body kept */

static void first_lines(const char *t, size_t len, int max_lines, char *buf, size_t n)
{
	/* what a server sends back is untrusted: at most FTCLIENT_ERR_EXCERPT printable ASCII
	 * characters of it reach a job's result and log (other bytes as '?', "..." when cut) */
	size_t o = 0, i = 0;
	int lines = 1;
	for (; i < len && t[i] && o + 4 < n && o < FTCLIENT_ERR_EXCERPT; i++) {
		char ch = t[i];
		if (ch == '\r')
			continue;
		if (ch == '\n') {
			if (++lines > max_lines)
				break;
		} else if ((unsigned char)ch < 0x20 || ch == 0x7f) {
			ch = ' ';
		} else if ((unsigned char)ch > 0x7f) {
			ch = '?';
		}
		buf[o++] = ch;
	}
	if (i < len && t[i] && t[i] != '\n' && lines <= max_lines && o + 4 <= n) {
		memcpy(buf + o, "...", 3);
		o += 3;
	}
	while (o && (buf[o - 1] == '\n' || buf[o - 1] == ' '))
		o--;
	if (n)
		buf[o] = '\0';
}

/* What an error body says: its {"error":{"message"}} / {"detail"} / {"message"} when JSON, else
 * the text; the first lines, whole. */
static void body_message(const char *body, size_t len, char *buf, size_t n)
{
	json_t *j = json_loadb(body, len, 0, NULL);
	json_t *e = json_object_get(j, "error");
	const char *m = json_is_string(e) ? json_string_value(e) : json_string_value(json_object_get(e, "message"));
	if (!m)
		m = json_string_value(json_object_get(j, "detail"));
	if (!m)
		m = json_string_value(json_object_get(j, "message"));
	if (!m && json_is_array(json_object_get(j, "detail"))) {
		/* FastAPI's validation errors: [{"loc":[..],"msg":..}, ...] */
		char *d = json_dumps(json_object_get(j, "detail"), JSON_COMPACT);
		first_lines(d ? d : "", d ? strlen(d) : 0, 8, buf, n);
		free(d);
		json_decref(j);
		return;
	}
	if (m)
		first_lines(m, strlen(m), 8, buf, n);
	else
		first_lines(body, len, 8, buf, n);
	json_decref(j);
}

/* GET base+path into *st, *body (free()) and *j (its JSON, NULL when it is none: json_decref);
 * on a failed request the reason goes to state and the -errno is returned. */
static int get_doc(const char *base, const char *path, double timeout_s, size_t flags, long *st, char **body,
		   json_t **j, char *state, size_t n)
{
	char why[256];
	*body = NULL;
	int r = ftclient_get(base, path, timeout_s, st, body, why, sizeof why);
	if (r < 0) {
		snprintf(state, n, "%s", why);
		return r;
	}
	*j = json_loads(*body, flags, NULL);
	return 0;
}

int ftclient_health(const char *base, double timeout_s, char *state, size_t n)
{
	long st = 0;
	char *body;
	json_t *j;
	int r = get_doc(base, "/health", timeout_s, JSON_DECODE_ANY, &st, &body, &j, state, n);
	if (r < 0)
		return r;
	json_t *m = json_object_get(j, "maintenance");
	const char *status = json_string_value(json_object_get(j, "status"));
	if (st == 404) {
		snprintf(state, n, "GET /health: HTTP 404 (the server has no /health)");
		r = -ENOENT;
	} else if (status && !strcmp(status, "error")) {
		char msg[300];
		body_message(body, strlen(body), msg, sizeof msg);
		snprintf(state, n, "GET /health says status \"error\" (HTTP %ld): %s", st, msg);
		r = -EREMOTEIO;
	} else if (status && !strcmp(status, "loading")) {
		/* the seed engine 0.1.2 answers 200 {"status":"loading","phase":...} without
		 * "maintenance" until its model is loaded (chat completions get 503 meanwhile) */
		const char *phase = json_string_value(json_object_get(j, "phase"));
		snprintf(state, n, "status=loading%s%s (HTTP %ld)", phase ? " phase=" : "", phase ? phase : "", st);
		r = 0;
	} else if (json_is_string(m)) {
		r = st == 200 && !strcmp(json_string_value(m), "serving");
		snprintf(state, n, "maintenance=%s (HTTP %ld)", json_string_value(m), st);
	} else {
		r = st == 200;
		char msg[160] = "";
		if (st != 200)
			body_message(body, strlen(body), msg, sizeof msg);
		snprintf(state, n, "HTTP %ld%s%s", st, msg[0] ? ": " : "", msg);
	}
	json_decref(j);
	free(body);
	return r;
}

int ftclient_models_ready(const char *base, double timeout_s, char *state, size_t n)
{
	long st = 0;
	char *body;
	json_t *j;
	int r = get_doc(base, "/v1/models", timeout_s, 0, &st, &body, &j, state, n);
	if (r < 0)
		return r;
	json_t *d = json_object_get(j, "data");
	r = st == 200 && json_array_size(d) > 0;
	if (r)
		snprintf(state, n, "GET /v1/models: HTTP 200, %zu model(s)", json_array_size(d));
	else {
		char msg[160] = "";
		body_message(body, strlen(body), msg, sizeof msg);
		snprintf(state, n, "GET /v1/models: HTTP %ld%s%s", st, msg[0] ? ": " : "", st == 200 ? "no model listed" : msg);
	}
	json_decref(j);
	free(body);
	return r;
}

int ftclient_detect_kind(const char *base, double timeout_s, int *kind, char *how, size_t n)
{
	long st = 0;
	char *body = NULL, why[256];
	int r;
	json_t *j;
	if ((r = ftclient_get(base, "/health", timeout_s, &st, &body, why, sizeof why)) == 0) {
		j = json_loads(body, JSON_DECODE_ANY, NULL);
		int ft = json_object_get(j, "maintenance") != NULL;
		json_decref(j);
		free(body);
		if (ft) {
			*kind = FTSRV_FREETOKEN;
			snprintf(how, n, "/health has \"maintenance\"");
			return 0;
		}
	} else {
		snprintf(how, n, "%s", why); /* nothing answered HTTP at all */
		return r;
	}
	if ((r = ftclient_get(base, "/v1/models", timeout_s, &st, &body, why, sizeof why)) < 0) {
		snprintf(how, n, "%s", why);
		return r;
	}
	if (st != 200) {
		/* still loading (llama-server answers 503 everywhere then): too early to tell */
		char msg[120];
		body_message(body, strlen(body), msg, sizeof msg);
		snprintf(how, n, "GET /v1/models: HTTP %ld%s%s (not ready; the kind is not known yet)", st,
			 msg[0] ? ": " : "", msg);
		free(body);
		return -EAGAIN;
	}
	j = json_loads(body, 0, NULL);
	const char *o = json_string_value(json_object_get(json_array_get(json_object_get(j, "data"), 0), "owned_by"));
	int k = !o ? -1 : !strcasecmp(o, "llamacpp") || !strcasecmp(o, "llama.cpp") ? FTSRV_LLAMACPP :
		!strcasecmp(o, "vllm") ? FTSRV_VLLM : !strcasecmp(o, "sglang") ? FTSRV_SGLANG : -1;
	if (k >= 0)
		snprintf(how, n, "/v1/models owned_by \"%s\"", o);
	json_decref(j);
	free(body);
	if (k >= 0) {
		*kind = k;
		return 0;
	}
	static const struct {
		const char *path, *key;
		int kind;
	} probe[] = {{"/props", "default_generation_settings", FTSRV_LLAMACPP},
		     {"/get_server_info", NULL, FTSRV_SGLANG},
		     {"/version", "version", FTSRV_VLLM}};
	for (size_t i = 0; i < sizeof probe / sizeof probe[0]; i++) {
		if (ftclient_get(base, probe[i].path, timeout_s, &st, &body, why, sizeof why) < 0)
			continue;
		j = st == 200 ? json_loads(body, 0, NULL) : NULL;
		int hit = json_is_object(j) && (!probe[i].key || json_object_get(j, probe[i].key));
		json_decref(j);
		free(body);
		if (hit) {
			*kind = probe[i].kind;
			snprintf(how, n, "GET %s answers%s%s", probe[i].path, probe[i].key ? " with " : "",
				 probe[i].key ? probe[i].key : "");
			return 0;
		}
	}
	*kind = FTSRV_OPENAI;
	snprintf(how, n, "none of /health maintenance, owned_by, /props, /get_server_info, /version");
	return 0;
}

/* GET base+path and its JSON body (whatever the Content-Type says): a new reference, or NULL
 * with why set when the GET failed, the status was not 200 (the server's message when it sent
 * one) or the body is not JSON. */
static json_t *get_json(const char *base, const char *path, double timeout_s, char *why, size_t whylen)
{
	struct fthttpc_resp r;
	json_t *j = NULL;
	if (get(base, path, timeout_s, &r, why, whylen) < 0)
		goto out;
	if (r.status != 200) {
		char d[300];
		fthttpc_describe_error(&r, d, sizeof d);
		snprintf(why, whylen, "GET %s: %s", path, d);
		goto out;
	}
	j = r.json ? json_incref(r.json) : json_loadb(r.body, r.len, 0, NULL);
	if (!j) {
		char ex[FTHTTPC_EXCERPT + 8];
		ftstr_excerpt(ex, sizeof ex, r.body, r.len, FTHTTPC_EXCERPT);
		snprintf(why, whylen, "GET %s: HTTP %ld, not JSON: %s", path, r.status, ex);
	}
out:
	fthttpc_resp_release(&r);
	return j;
}

int ftclient_model_id(const char *base, double timeout_s, char *id, size_t n, char *why, size_t whylen)
{
	json_t *j = get_json(base, "/v1/models", timeout_s, why, whylen);
	if (!j)
		return -EIO;
	int r = 0;
	const char *s = json_string_value(json_object_get(json_array_get(json_object_get(j, "data"), 0), "id"));
	if (!s || !*s) {
		snprintf(why, whylen, "GET /v1/models: no model listed");
		r = -ENOENT;
	} else if (ftstr_copy(id, n, s) < 0) {
		snprintf(why, whylen, "GET /v1/models: model id too long");
		r = -ENAMETOOLONG;
	}
	json_decref(j);
	return r;
}

int ftclient_vram_bytes(const char *base, double timeout_s, long long *bytes)
{
	char why[256];
	json_t *j = get_json(base, "/v1/stats", timeout_s, why, sizeof why);
	if (!j)
		return -ENOENT;
	json_t *v = json_object_get(j, "vram_bytes");
	if (!v)
		v = json_object_get(json_object_get(j, "memory"), "vram_bytes");
	int r = -ENOENT;
	if (json_is_number(v) && json_number_value(v) >= 0) {
		*bytes = (long long)json_number_value(v);
		r = 0;
	}
	json_decref(j);
	return r;
}

/* ---------------------------------------------------------------- streaming */
/* Its own write callback on the bare handle: every run of bytes is stamped the moment libcurl
 * hands it over and fed straight to the chat parser, with no buffering in between. */
#define ERRBODY_MAX 4096

struct sctx {
	CURL *c;
	struct ftchat_stream *s;
	int feed_rc;
	long status;
	char errbody[ERRBODY_MAX + 1]; /* start of the body of a non-200 answer */
	size_t errlen;
	const volatile sig_atomic_t *cancel;
};

static size_t stream_write(char *d, size_t sz, size_t nm, void *ctx)
{
	uint64_t t = fttime_now_ns();
	struct sctx *x = ctx;
	size_t n = sz * nm;
	if (!x->status)
		curl_easy_getinfo(x->c, CURLINFO_RESPONSE_CODE, &x->status);
	if (x->status != 200) {
		size_t keep = n < ERRBODY_MAX - x->errlen ? n : ERRBODY_MAX - x->errlen;
		memcpy(x->errbody + x->errlen, d, keep);
		x->errlen += keep;
		x->errbody[x->errlen] = '\0';
		return n;
	}
	int r = ftchat_feed(x->s, d, n, t);
	if (r < 0) {
		x->feed_rc = r;
		return 0; /* abort the transfer */
	}
	return n;
}

static int stream_progress(void *ctx, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
	struct sctx *x = ctx;
	return x->cancel && *x->cancel;
}

/* An error answer: "HTTP <status>: " then the first lines of the body's error message (or of
 * the body), whole. */
static void describe_status(const struct sctx *x, char *buf, size_t n)
{
	char msg[900];
	body_message(x->errbody, x->errlen, msg, sizeof msg);
	snprintf(buf, n, "HTTP %ld%s%s", x->status, msg[0] ? ": " : " (empty body)", msg);
}

int ftclient_stream_chat(const char *base, const json_t *request, double timeout_s, struct ftchat_stream *s,
		     uint64_t *t_request_ns, const volatile sig_atomic_t *cancel, char *why, size_t whylen)
{
	char url[1024], eb[CURL_ERROR_SIZE] = "";
	struct fthttpc fc;
	struct curl_slist *h = NULL;
	char *body = NULL;
	int r = open_client(&fc, base, timeout_s, why, whylen);
	if (r < 0)
		goto out;
	if ((r = fthttpc_build_url(url, sizeof url, fc.base, "/v1/chat/completions")) < 0) {
		snprintf(why, whylen, "URL too long");
		goto out;
	}
	body = json_dumps(request, JSON_COMPACT);
	h = curl_slist_append(h, "Content-Type: application/json");
	h = curl_slist_append(h, "Accept: text/event-stream");
	if (!body || !h) {
		snprintf(why, whylen, "out of memory");
		r = -ENOMEM;
		goto out;
	}
	CURL *c = fc.handle;
	struct sctx x = {.c = c, .s = s, .cancel = cancel};
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_NOPROXY, fc.noproxy);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, fc.timeout_ms);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, fc.connect_timeout_ms);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, eb);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "ftbench/" FT_VERSION);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, stream_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &x);
	curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, stream_progress);
	curl_easy_setopt(c, CURLOPT_XFERINFODATA, &x);
	curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(c, CURLOPT_TCP_NODELAY, 1L);
	*t_request_ns = fttime_now_ns();
	CURLcode rc = curl_easy_perform(c);
	if (!x.status)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &x.status);
	if (x.feed_rc) {
		r = x.feed_rc;
		if (s->failed)
			snprintf(why, whylen, "server error mid-stream after %zu events: %s", s->nev, s->error);
		else
			snprintf(why, whylen, "stream refused after %zu events: %s", s->nev,
				 r == -EMSGSIZE ? "a limit on the stream size was hit" : strerror(-r));
	} else if (rc == CURLE_OK && x.status != 200) {
		char msg[1000];
		describe_status(&x, msg, sizeof msg);
		r = -EIO;
		snprintf(why, whylen, "POST /v1/chat/completions: %s", msg);
	} else if (rc != CURLE_OK) {
		r = fthttpc_errno(rc);
		if (r == -ECANCELED)
			snprintf(why, whylen, "cancelled after %zu events", s->nev);
		else
			snprintf(why, whylen, "%s after %zu events: %s",
				 r == -EPIPE ? "connection lost mid-stream" : "streaming failed", s->nev,
				 eb[0] ? eb : curl_easy_strerror(rc));
	} else if (!s->done && s->chunks == 0) {
		r = -ENODATA;
		snprintf(why, whylen, "the server sent no tokens: HTTP 200, then it closed the stream without an event");
	} else if (!s->done) {
		r = -EPIPE;
		snprintf(why, whylen, "the stream ended after %zu chunks (%zu token chunks) without [DONE]", s->chunks,
			 s->nev);
	} else {
		r = 0;
	}
out:
	curl_slist_free_all(h);
	fthttpc_release(&fc);
	free(body);
	return r;
}
