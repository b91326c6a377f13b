#include "util/http_client.h"

#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/fsutil.h"
#include "util/sse.h"
#include "util/strutil.h"

#define TOKEN_MAX 4096

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_rc;

static void global_init(void)
{
	global_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* ------------------------------------------------------------------ URLs */

int fthttpc_normalize_base(const char *url, char *out, size_t n)
{
	if (!url || !*url)
		return -EINVAL;
	const char *rest;
	if (!strncasecmp(url, "http://", 7))
		rest = url + 7;
	else if (!strncasecmp(url, "https://", 8))
		rest = url + 8;
	else
		return -EINVAL;
	if (!*rest || *rest == '/' || strpbrk(url, "?# \t\r\n"))
		return -EINVAL;
	size_t l = strlen(url);
	while (l > 0 && url[l - 1] == '/')
		l--;
	if (l + 1 > n)
		return -ENAMETOOLONG;
	memcpy(out, url, l);
	out[l] = '\0';
	return 0;
}

int fthttpc_build_url(char *out, size_t n, const char *base, const char *path)
{
	if (!base || !path || path[0] != '/')
		return -EINVAL;
	int w = snprintf(out, n, "%s%s", base, path);
	if (w < 0)
		return -EINVAL;
	if ((size_t)w >= n)
		return -ENAMETOOLONG;
	return 0;
}

int fthttpc_escape_segment(const char *seg, char *out, size_t n)
{
	static const char hex[] = "0123456789ABCDEF";
	if (!seg || !*seg)
		return -EINVAL;
	size_t o = 0;
	for (const unsigned char *p = (const unsigned char *)seg; *p; p++) {
		int keep = isalnum(*p) || *p == '-' || *p == '.' || *p == '_' || *p == '~';
		size_t need = keep ? 1 : 3;
		if (o + need + 1 > n)
			return -ENAMETOOLONG;
		if (keep) {
			out[o++] = (char)*p;
		} else {
			out[o++] = '%';
			out[o++] = hex[*p >> 4];
			out[o++] = hex[*p & 15];
		}
	}
	out[o] = '\0';
	return 0;
}

/* ------------------------------------------------------------------ handle */

int fthttpc_init(struct fthttpc *c, const char *base_url)
{
	memset(c, 0, sizeof *c);
	c->timeout_ms = 30000;
	c->connect_timeout_ms = 5000;
	int r = fthttpc_normalize_base(base_url, c->base, sizeof c->base);
	if (r < 0) {
		snprintf(c->err, sizeof c->err, "'%s' is not an http:// or https:// URL without query", base_url ? base_url : "");
		return r;
	}
	pthread_once(&global_once, global_init);
	if (global_rc != CURLE_OK) {
		snprintf(c->err, sizeof c->err, "libcurl: %s", curl_easy_strerror(global_rc));
		return -EIO;
	}
	c->handle = curl_easy_init();
	if (!c->handle) {
		snprintf(c->err, sizeof c->err, "libcurl: cannot create a handle");
		return -ENOMEM;
	}
	return 0;
}

void fthttpc_release(struct fthttpc *c)
{
	if (!c)
		return;
	if (c->handle)
		curl_easy_cleanup(c->handle);
	c->handle = NULL;
	if (c->token) {
		memset(c->token, 0, strlen(c->token));
		free(c->token);
	}
	c->token = NULL;
}

int fthttpc_set_token(struct fthttpc *c, const char *token)
{
	if (c->token) {
		memset(c->token, 0, strlen(c->token));
		free(c->token);
		c->token = NULL;
	}
	if (!token)
		return 0;
	if (!*token)
		return -EINVAL;
	for (const unsigned char *p = (const unsigned char *)token; *p; p++)
		if (*p < 0x21 || *p == 0x7f)
			return -EINVAL;
	c->token = strdup(token);
	return c->token ? 0 : -ENOMEM;
}

int fthttpc_set_token_file(struct fthttpc *c, const char *path)
{
	char *buf = NULL;
	size_t len = 0;
	int r = ftfs_read_file(path, TOKEN_MAX, &buf, &len);
	if (r < 0)
		return r;
	char *s = buf;
	while (*s && isspace((unsigned char)*s))
		s++;
	char *e = s;
	while (*e && *e != '\n' && *e != '\r')
		e++;
	while (e > s && isspace((unsigned char)e[-1]))
		e--;
	*e = '\0';
	r = fthttpc_set_token(c, s);
	memset(buf, 0, len);
	free(buf);
	return r;
}

/* ------------------------------------------------------------------ responses */

void fthttpc_resp_release(struct fthttpc_resp *r)
{
	if (!r)
		return;
	free(r->body);
	json_decref(r->json);
	memset(r, 0, sizeof *r);
}

static int body_append(struct fthttpc_resp *r, size_t *cap, size_t max, const char *p, size_t n)
{
	if (r->len + n + 1 > max)
		return -EFBIG;
	if (r->len + n + 1 > *cap) {
		size_t nc = *cap ? *cap : 4096;
		while (nc < r->len + n + 1)
			nc *= 2;
		char *nb = realloc(r->body, nc);
		if (!nb)
			return -ENOMEM;
		r->body = nb;
		*cap = nc;
	}
	memcpy(r->body + r->len, p, n);
	r->len += n;
	r->body[r->len] = '\0';
	return 0;
}

struct xfer {
	struct fthttpc *c;
	struct fthttpc_resp *r;
	size_t cap;
	int err;                 /* -errno from a callback */
	int stopped;             /* the positive value the event callback stopped the stream with */
	struct ftsse_parser *sse;/* streaming: feed 2xx event streams here */
	int mode;                /* 0 undecided, 1 body, 2 stream */
};

static void copy_header(char *dst, size_t n, const char *v, size_t vl)
{
	while (vl && (*v == ' ' || *v == '\t')) {
		v++;
		vl--;
	}
	while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n' || v[vl - 1] == ' '))
		vl--;
	if (vl >= n)
		vl = n - 1;
	memcpy(dst, v, vl);
	dst[vl] = '\0';
}

static size_t on_header(char *buf, size_t size, size_t nitems, void *ud)
{
	struct xfer *x = ud;
	size_t n = size * nitems;
	if (n >= 5 && !strncmp(buf, "HTTP/", 5)) { /* a new response (after 100-continue, redirects) */
		x->r->location[0] = '\0';
		x->r->content_type[0] = '\0';
	} else if (n > 9 && !strncasecmp(buf, "Location:", 9)) {
		copy_header(x->r->location, sizeof x->r->location, buf + 9, n - 9);
	} else if (n > 13 && !strncasecmp(buf, "Content-Type:", 13)) {
		copy_header(x->r->content_type, sizeof x->r->content_type, buf + 13, n - 13);
	}
	return n;
}

static size_t on_body(char *buf, size_t size, size_t nmemb, void *ud)
{
	struct xfer *x = ud;
	size_t n = size * nmemb;
	if (x->mode == 0) {
		long st = 0;
		curl_easy_getinfo(x->c->handle, CURLINFO_RESPONSE_CODE, &st);
		x->mode = (x->sse && st >= 200 && st < 300 &&
			   !strncasecmp(x->r->content_type, "text/event-stream", 17)) ? 2 : 1;
	}
	if (x->mode == 2) {
		int r = ftsse_feed(x->sse, buf, n);
		if (r < 0) {
			x->err = r;
			return 0;
		}
		if (r > 0) {
			x->stopped = r;
			return 0; /* stopped by the callback: abort the transfer */
		}
		return n;
	}
	int r = body_append(x->r, &x->cap, x->c->max_body ? x->c->max_body : FTHTTPC_MAX_BODY, buf, n);
	if (r < 0) {
		x->err = r;
		return 0;
	}
	return n;
}

int fthttpc_errno(int curl_code)
{
	switch ((CURLcode)curl_code) {
	case CURLE_OK:
		return 0;
	case CURLE_COULDNT_CONNECT:
		return -ECONNREFUSED;
	case CURLE_OPERATION_TIMEDOUT:
		return -ETIMEDOUT;
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
		return -EHOSTUNREACH;
	case CURLE_URL_MALFORMAT:
	case CURLE_UNSUPPORTED_PROTOCOL:
		return -EINVAL;
	case CURLE_OUT_OF_MEMORY:
		return -ENOMEM;
	case CURLE_ABORTED_BY_CALLBACK:
		return -ECANCELED;
	case CURLE_PARTIAL_FILE:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_SEND_ERROR:
		return -EPIPE;
	default:
		return -EIO;
	}
}

static int map_curl(struct fthttpc *c, CURLcode rc, const char *url, const char *ebuf)
{
	snprintf(c->err, sizeof c->err, "%s: %s", url, *ebuf ? ebuf : curl_easy_strerror(rc));
	return fthttpc_errno(rc);
}

static int perform(struct fthttpc *c, const char *method, const char *path, const json_t *body,
		   const char *const *headers, struct ftsse_parser *sse, const char *last_id, long idle_s,
		   struct fthttpc_resp *r)
{
	char url[1024], ebuf[CURL_ERROR_SIZE] = "";
	char *payload = NULL;
	struct curl_slist *hl = NULL;
	int ret = 0;
	memset(r, 0, sizeof *r);
	c->err[0] = '\0';
	if (!c->handle) {
		snprintf(c->err, sizeof c->err, "client not initialised");
		return -EINVAL;
	}
	if ((ret = fthttpc_build_url(url, sizeof url, c->base, path)) < 0) {
		snprintf(c->err, sizeof c->err, "cannot build a URL from '%s' and '%s'", c->base, path);
		return ret;
	}
	CURL *h = c->handle;
	struct xfer x = {.c = c, .r = r, .sse = sse};
	curl_easy_reset(h);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, ebuf);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, c->connect_timeout_ms);
	if (c->noproxy)
		curl_easy_setopt(h, CURLOPT_NOPROXY, c->noproxy);
	if (sse) {
		if (idle_s > 0) {
			curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
			curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, idle_s);
		}
	} else if (c->timeout_ms > 0) {
		curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, c->timeout_ms);
	}
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(h, CURLOPT_USERAGENT, "ftbench/" FT_VERSION);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, &x);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &x);

	hl = curl_slist_append(hl, sse ? "Accept: text/event-stream" : "Accept: application/json");
	if (c->token) {
		/* Built in a scratch buffer that is wiped afterwards; never put in c->err. */
		size_t tl = strlen(c->token) + 32;
		char *auth = malloc(tl);
		if (!auth) {
			ret = -ENOMEM;
			goto out;
		}
		snprintf(auth, tl, "Authorization: Bearer %s", c->token);
		hl = curl_slist_append(hl, auth);
		memset(auth, 0, tl);
		free(auth);
	}
	if (sse && last_id && *last_id) {
		char lh[192];
		snprintf(lh, sizeof lh, "Last-Event-ID: %s", last_id);
		hl = curl_slist_append(hl, lh);
	}
	for (const char *const *hp = headers; hp && *hp; hp++)
		hl = curl_slist_append(hl, *hp);
	if (body) {
		payload = json_dumps(body, JSON_COMPACT);
		if (!payload) {
			ret = -ENOMEM;
			goto out;
		}
		hl = curl_slist_append(hl, "Content-Type: application/json");
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, payload);
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(payload));
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	} else if (!strcmp(method, "POST")) {
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, "");
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, 0L);
	} else if (!strcmp(method, "HEAD")) {
		curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
	} else if (strcmp(method, "GET")) {
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	}
	hl = curl_slist_append(hl, "Expect:"); /* no 100-continue round trip */
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);

	CURLcode rc = curl_easy_perform(h);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r->status);
	if (rc == CURLE_WRITE_ERROR && x.mode == 2 && !x.err && x.stopped) {
		ret = x.stopped; /* the callback stopped the stream */
	} else if (x.err) {
		ret = x.err;
		snprintf(c->err, sizeof c->err, "%s: %s", url,
			 x.err == -EFBIG ? "response too large" : strerror(-x.err));
	} else if (rc == CURLE_OPERATION_TIMEDOUT && x.mode == 2) {
		ret = -ETIMEDOUT;
		snprintf(c->err, sizeof c->err, "%s: no event for %ld s", url, idle_s);
	} else if (rc != CURLE_OK) {
		ret = map_curl(c, rc, url, ebuf);
	}
	if (ret == 0 && x.mode != 2) {
		if (!r->body && body_append(r, &x.cap, FTHTTPC_MAX_BODY, "", 0) < 0) {
			ret = -ENOMEM;
			goto out;
		}
		if (r->len && !strncasecmp(r->content_type, "application/json", 16))
			r->json = json_loadb(r->body, r->len, 0, NULL);
		else if (r->len && !r->content_type[0] && (r->body[0] == '{' || r->body[0] == '['))
			r->json = json_loadb(r->body, r->len, 0, NULL);
	}
out:
	curl_slist_free_all(hl);
	free(payload);
	if (ret < 0 && ret != -ETIMEDOUT) {
		/* keep status for the caller's message but drop a half-read body */
		long st = r->status;
		fthttpc_resp_release(r);
		r->status = st;
	}
	return ret;
}

int fthttpc_request(struct fthttpc *c, const char *method, const char *path, const json_t *body,
		   const char *const *headers, struct fthttpc_resp *r)
{
	return perform(c, method, path, body, headers, NULL, NULL, 0, r);
}

int fthttpc_stream(struct fthttpc *c, const char *path, const char *last_id, long idle_s,
		  struct ftsse_parser *p, struct fthttpc_resp *r)
{
	return perform(c, "GET", path, NULL, NULL, p, last_id, idle_s, r);
}

/* ------------------------------------------------------------------ API errors */

int fthttpc_api_error(const struct fthttpc_resp *r, const char **code, const char **message,
		     const char **field)
{
	json_t *e = r && json_is_object(r->json) ? json_object_get(r->json, "error") : NULL;
	if (code)
		*code = NULL;
	if (message)
		*message = NULL;
	if (field)
		*field = NULL;
	if (!json_is_object(e))
		return -ENOENT;
	if (code)
		*code = json_string_value(json_object_get(e, "code"));
	if (message)
		*message = json_string_value(json_object_get(e, "message"));
	if (field)
		*field = json_string_value(json_object_get(e, "field"));
	return 0;
}

void fthttpc_describe_error(const struct fthttpc_resp *r, char *buf, size_t n)
{
	/* what a server sends back is untrusted: only a short, printable excerpt of it is kept */
	const char *code, *msg, *field;
	char a[FTHTTPC_EXCERPT + 8], b[80];
	if (fthttpc_api_error(r, &code, &msg, &field) == 0 && (msg || code)) {
		ftstr_excerpt(a, sizeof a, msg ? msg : code, (size_t)-1, FTHTTPC_EXCERPT);
		ftstr_excerpt(b, sizeof b, field ? field : "", (size_t)-1, 64);
		if (*b)
			snprintf(buf, n, "%s (field: %s)", a, b);
		else
			snprintf(buf, n, "%s", a);
		return;
	}
	a[0] = '\0';
	if (r && r->body)
		ftstr_excerpt(a, sizeof a, r->body, (size_t)-1, FTHTTPC_EXCERPT); /* NUL-terminated */
	snprintf(buf, n, "HTTP %ld%s%s", r ? r->status : 0L, *a ? ": " : "", a);
}
