#include "decode/client.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/strutil.h"
#include "util/timeutil.h"

static int make_url(const char *base, const char *path, char *url, size_t n)
{
	size_t bl = strlen(base);
	while (bl && base[bl - 1] == '/')
		bl--;
	if (bl >= 3 && !strncmp(base + bl - 3, "/v1", 3))
		bl -= 3;
	int w = snprintf(url, n, "%.*s%s", (int)bl, base, path);
	return w < 0 || (size_t)w >= n ? -ENAMETOOLONG : 0;
}

static void set_common(CURL *c, const char *url, double timeout_s, char *errbuf)
{
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_NOPROXY, "localhost,127.0.0.1,::1");
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)(timeout_s * 1000.0));
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)(timeout_s * 1000.0 < 10000 ? timeout_s * 1000.0 : 10000));
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "ftbench/" FT_VERSION);
	errbuf[0] = '\0';
}

static int map_curl(CURLcode rc)
{
	switch (rc) {
	case CURLE_OK: return 0;
	case CURLE_COULDNT_CONNECT: return -ECONNREFUSED;
	case CURLE_OPERATION_TIMEDOUT: return -ETIMEDOUT;
	case CURLE_ABORTED_BY_CALLBACK: return -ECANCELED;
	case CURLE_PARTIAL_FILE:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_SEND_ERROR: return -EPIPE;
	case CURLE_OUT_OF_MEMORY: return -ENOMEM;
	default: return -EIO;
	}
}

struct membuf {
	char *p;
	size_t len, max;
	int overflow;
};

static size_t mem_write(char *d, size_t sz, size_t nm, void *ctx)
{
	struct membuf *m = ctx;
	size_t n = sz * nm;
	if (m->len + n > m->max) {
		m->overflow = 1;
		return 0;
	}
	char *q = realloc(m->p, m->len + n + 1);
	if (!q)
		return 0;
	memcpy(q + m->len, d, n);
	m->p = q;
	m->len += n;
	m->p[m->len] = '\0';
	return n;
}

int ftdc_get(const char *base, const char *path, double timeout_s, long *status, char **body,
	     char *why, size_t whylen)
{
	char url[1024], eb[CURL_ERROR_SIZE];
	if (make_url(base, path, url, sizeof url) < 0) {
		snprintf(why, whylen, "URL too long");
		return -ENAMETOOLONG;
	}
	CURL *c = curl_easy_init();
	if (!c) {
		snprintf(why, whylen, "curl_easy_init failed");
		return -ENOMEM;
	}
	struct membuf m = {.max = FTDC_MAX_BODY};
	set_common(c, url, timeout_s, eb);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, mem_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &m);
	CURLcode rc = curl_easy_perform(c);
	int r = m.overflow ? -EMSGSIZE : map_curl(rc);
	if (r) {
		snprintf(why, whylen, "GET %s: %s", url,
			 m.overflow ? "response too large" : eb[0] ? eb : curl_easy_strerror(rc));
		free(m.p);
	} else {
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
		*body = m.p ? m.p : strdup("");
		if (!*body)
			r = -ENOMEM;
	}
	curl_easy_cleanup(c);
	return r;
}

int ftdc_health(const char *base, double timeout_s, char *state, size_t n)
{
	long st = 0;
	char *body = NULL, why[256];
	int r = ftdc_get(base, "/health", timeout_s, &st, &body, why, sizeof why);
	if (r < 0) {
		snprintf(state, n, "%s", why);
		return r;
	}
	json_t *j = json_loads(body, JSON_DECODE_ANY, NULL);
	json_t *m = json_object_get(j, "maintenance");
	if (json_is_string(m)) {
		r = st == 200 && !strcmp(json_string_value(m), "serving");
		snprintf(state, n, "maintenance=%s (HTTP %ld)", json_string_value(m), st);
	} else {
		r = st == 200;
		snprintf(state, n, "HTTP %ld", st);
	}
	json_decref(j);
	free(body);
	return r;
}

static json_t *get_json(const char *base, const char *path, double timeout_s, long *st, char *why, size_t whylen)
{
	char *body = NULL;
	int r = ftdc_get(base, path, timeout_s, st, &body, why, whylen);
	if (r < 0)
		return NULL;
	json_error_t je;
	json_t *j = json_loads(body, 0, &je);
	if (!j)
		snprintf(why, whylen, "GET %s: HTTP %ld, not JSON: %.120s", path, *st, body);
	free(body);
	return j;
}

int ftdc_model_id(const char *base, double timeout_s, char *id, size_t n, char *why, size_t whylen)
{
	long st = 0;
	json_t *j = get_json(base, "/v1/models", timeout_s, &st, why, whylen);
	if (!j)
		return -EIO;
	int r = 0;
	const char *s = json_string_value(json_object_get(json_array_get(json_object_get(j, "data"), 0), "id"));
	if (st != 200) {
		snprintf(why, whylen, "GET /v1/models: HTTP %ld", st);
		r = -EIO;
	} else if (!s || !*s) {
		snprintf(why, whylen, "GET /v1/models: no model listed");
		r = -ENOENT;
	} else if (ftstr_copy(id, n, s) < 0) {
		snprintf(why, whylen, "GET /v1/models: model id too long");
		r = -ENAMETOOLONG;
	}
	json_decref(j);
	return r;
}

int ftdc_vram_bytes(const char *base, double timeout_s, long long *bytes)
{
	long st = 0;
	char why[256];
	json_t *j = get_json(base, "/v1/stats", timeout_s, &st, why, sizeof why);
	if (!j)
		return -ENOENT;
	json_t *v = json_object_get(j, "vram_bytes");
	if (!v)
		v = json_object_get(json_object_get(j, "memory"), "vram_bytes");
	int r = -ENOENT;
	if (st == 200 && json_is_number(v) && json_number_value(v) >= 0) {
		*bytes = (long long)json_number_value(v);
		r = 0;
	}
	json_decref(j);
	return r;
}

/* ---------------------------------------------------------------- streaming */
struct sctx {
	CURL *c;
	struct ftchat_stream *s;
	int feed_rc;
	long status;
	struct membuf errbody; /* body of a non-200 answer */
	const volatile sig_atomic_t *cancel;
};

static size_t stream_write(char *d, size_t sz, size_t nm, void *ctx)
{
	uint64_t t = ft_now_ns();
	struct sctx *x = ctx;
	size_t n = sz * nm;
	if (!x->status)
		curl_easy_getinfo(x->c, CURLINFO_RESPONSE_CODE, &x->status);
	if (x->status != 200) {
		size_t keep = n < 4096 - x->errbody.len ? n : 4096 - x->errbody.len;
		if (keep)
			mem_write(d, 1, keep, &x->errbody);
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

int ftdc_stream_chat(const char *base, const json_t *request, double timeout_s, struct ftchat_stream *s,
		     uint64_t *t_request_ns, const volatile sig_atomic_t *cancel, char *why, size_t whylen)
{
	char url[1024], eb[CURL_ERROR_SIZE];
	if (make_url(base, "/v1/chat/completions", url, sizeof url) < 0) {
		snprintf(why, whylen, "URL too long");
		return -ENAMETOOLONG;
	}
	char *body = json_dumps(request, JSON_COMPACT);
	CURL *c = curl_easy_init();
	struct curl_slist *h = NULL;
	h = curl_slist_append(h, "Content-Type: application/json");
	h = curl_slist_append(h, "Accept: text/event-stream");
	if (!body || !c || !h) {
		free(body);
		curl_easy_cleanup(c);
		curl_slist_free_all(h);
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	struct sctx x = {.c = c, .s = s, .cancel = cancel, .errbody = {.max = 4096}};
	set_common(c, url, timeout_s, eb);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, stream_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &x);
	curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, stream_progress);
	curl_easy_setopt(c, CURLOPT_XFERINFODATA, &x);
	curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(c, CURLOPT_TCP_NODELAY, 1L);
	*t_request_ns = ft_now_ns();
	CURLcode rc = curl_easy_perform(c);
	if (!x.status)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &x.status);
	int r;
	if (x.feed_rc) {
		r = x.feed_rc;
		if (s->failed)
			snprintf(why, whylen, "server error mid-stream after %zu events: %s", s->nev, s->error);
		else
			snprintf(why, whylen, "stream refused after %zu events: %s", s->nev,
				 r == -EMSGSIZE ? "a limit on the stream size was hit" : strerror(-r));
	} else if (rc == CURLE_OK && x.status != 200) {
		r = -EIO;
		snprintf(why, whylen, "POST /v1/chat/completions: HTTP %ld: %.300s", x.status,
			 x.errbody.p ? x.errbody.p : "");
	} else if (rc != CURLE_OK) {
		r = map_curl(rc);
		if (r == -ECANCELED)
			snprintf(why, whylen, "cancelled after %zu events", s->nev);
		else
			snprintf(why, whylen, "%s after %zu events: %s",
				 r == -EPIPE ? "connection lost mid-stream" : "streaming failed", s->nev,
				 eb[0] ? eb : curl_easy_strerror(rc));
	} else if (!s->done) {
		r = -EPIPE;
		snprintf(why, whylen, "stream ended after %zu events without [DONE] (server died mid-stream?)", s->nev);
	} else {
		r = 0;
	}
	free(x.errbody.p);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	free(body);
	return r;
}
