/* http: the wire of the REST API (libmicrohttpd); see http.h. */
#include <errno.h>
#include <microhttpd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http.h"

#include "api.h"
#include "daemon.h"
#include "front.h"
#include "log.h"
#include "mbuf.h"
#include "metrics.h"
#include "page.h"
#include "request.h"
#include "seed.h"
#include "util/fsutil.h"
#include "util/strutil.h"
#include "util/timeutil.h"

#define IDLE_TIMEOUT_S 30  /* a connection of the main daemon silent this long is closed (streams send more often) */
#define RESERVE_MAX 256    /* connections of the reserve daemon */
#define RESERVE_STACK (256 << 10) /* bytes of stack of a reserve connection's thread */
#define MHD_HEADROOM 64    /* libmicrohttpd's own limit is the front's cap plus this: never reached */
#define BODY_MIN_RATE 4096 /* bytes per second a body must keep up after its first header-timeout */
#define STR_(x) #x
#define STR(x) STR_(x)

struct req {
	char *body;
	size_t len;
	int too_big;
	int answered;       /* an early response was queued: the connection closes */
	uint64_t head_ns;   /* when the head was handed over (CLOCK_MONOTONIC) */
};

/* ---------------------------------------------------------------- responses */

/* The two pools the front hands sockets to (front.h): their daemons and places. */
static struct ftd_front_pool pool_main, pool_reserve;

static const char internal_body[] =
	"{\"error\":{\"code\":\"internal\",\"message\":\"the response body could not be built\",\"field\":null}}\n";

static enum MHD_Result queue(struct MHD_Connection *c, unsigned status, struct MHD_Response *r, const char *ctype,
			     const char *h1, const char *v1)
{
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	if (h1)
		MHD_add_response_header(r, h1, v1);
	/* every answer ends its connection: the next request comes through the front again, with
	 * its head checks and header-timeout, and pipelined requests are refused cleanly */
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
	enum MHD_Result ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

/* 500 with a JSON error, from static memory: what is left when a body cannot be built. */
static enum MHD_Result respond_internal(struct MHD_Connection *c)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(sizeof internal_body - 1, (void *)internal_body,
								 MHD_RESPMEM_PERSISTENT);
	if (!r)
		return MHD_NO;
	ftd_log(FTD_LOG_ERR, "http: a response body could not be built (out of memory or invalid UTF-8)");
	return queue(c, 500, r, "application/json", NULL, NULL);
}

/* body: stolen (malloc'd). */
static enum MHD_Result respond_raw(struct MHD_Connection *c, unsigned status, char *body, size_t len,
				   const char *ctype, const char *h1, const char *v1)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(body);
		return respond_internal(c);
	}
	return queue(c, status, r, ctype, h1, v1);
}

/* body: stolen; NULL (a json_pack that failed) or a body jansson cannot write is a 500. */
static enum MHD_Result respond_json_h(struct MHD_Connection *c, unsigned status, json_t *body, const char *h1,
				      const char *v1)
{
	char *s = body ? json_dumps(body, JSON_COMPACT) : NULL;
	json_decref(body);
	if (!s)
		return respond_internal(c);
	size_t l = strlen(s);
	char *t = realloc(s, l + 2);
	if (!t) {
		free(s);
		return respond_internal(c);
	}
	t[l] = '\n';
	t[l + 1] = '\0';
	return respond_raw(c, status, t, l + 1, "application/json", h1, v1);
}

static enum MHD_Result send_reply(struct MHD_Connection *c, struct ftd_api_reply *rp);

static enum MHD_Result respond_error(struct MHD_Connection *c, unsigned status, const char *code, const char *field,
				     const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static enum MHD_Result respond_error(struct MHD_Connection *c, unsigned status, const char *code, const char *field,
				     const char *fmt, ...)
{
	char msg[FTD_REQUEST_MSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	struct ftd_api_reply rp = {0};
	ftd_api_error(&rp, status, code, field, "%s", msg);
	return send_reply(c, &rp);
}

static enum MHD_Result method_not_allowed(struct MHD_Connection *c, const char *allow)
{
	json_t *e = json_pack("{s:{s:s,s:s,s:n}}", "error", "code", "method_not_allowed", "message",
			      "method not allowed", "field");
	return respond_json_h(c, 405, e, MHD_HTTP_HEADER_ALLOW, allow);
}

/* ---------------------------------------------------------------- auth */

/* Constant time in the length of the expected token: every byte is compared whatever matches. */
static int token_ok(const char *got)
{
	const char *want = ftd.cfg.token;
	size_t wl = strlen(want), gl = got ? strlen(got) : 0;
	unsigned char diff = (unsigned char)(wl != gl);
	for (size_t i = 0; i < wl; i++)
		diff |= (unsigned char)want[i] ^ (unsigned char)(i < gl ? got[i] : 0);
	return got && diff == 0;
}

/* Authorization: Bearer <token>, or the seed daemon's X-FT-Token: <token>. */
static int authorized(struct MHD_Connection *c)
{
	const char *x = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-FT-Token");
	if (x && token_ok(x))
		return 1;
	const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	if (!h || strncasecmp(h, "Bearer ", 7) != 0)
		return 0;
	h += 7;
	while (*h == ' ')
		h++;
	return token_ok(h);
}

/* ---------------------------------------------------------------- api replies */

static const char *conn_header(void *hctx, const char *name)
{
	return MHD_lookup_connection_value(hctx, MHD_HEADER_KIND, name);
}

static const char *conn_query(void *hctx, const char *name)
{
	return MHD_lookup_connection_value(hctx, MHD_GET_ARGUMENT_KIND, name);
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	(void)pos;
	ssize_t n = ftd_api_stream_read(cls, buf, max);
	if (n == FTD_API_STREAM_END)
		return MHD_CONTENT_READER_END_OF_STREAM;
	if (n == FTD_API_STREAM_ERROR)
		return MHD_CONTENT_READER_END_WITH_ERROR;
	return n;
}

static void stream_free(void *cls)
{
	ftd_api_stream_free(cls);
}

/* Send what a handler of api.c made (and release it). */
static enum MHD_Result send_reply(struct MHD_Connection *c, struct ftd_api_reply *rp)
{
	enum MHD_Result ret;
	if (rp->internal) {
		ftd_api_reply_release(rp);
		return respond_internal(c);
	}
	if (rp->stream) {
		struct MHD_Response *r =
			MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, stream_read, rp->stream, stream_free);
		if (!r) {
			ftd_api_reply_release(rp);
			return respond_internal(c);
		}
		rp->stream = NULL;
		return queue(c, rp->status, r, "text/event-stream", NULL, NULL);
	}
	if (rp->raw) {
		char *body = rp->raw;
		rp->raw = NULL;
		return respond_raw(c, rp->status, body, rp->len, rp->ctype, rp->hname, rp->hname ? rp->hval : NULL);
	}
	if (rp->hname && !strcmp(rp->hname, "Location")) {
		/* a job accepted (or replayed): its body as it was always answered, no newline */
		char *s = json_dumps(rp->json, JSON_COMPACT);
		struct MHD_Response *r = s ? MHD_create_response_from_buffer(strlen(s), s, MHD_RESPMEM_MUST_FREE) : NULL;
		if (!r) {
			free(s);
			ftd_api_reply_release(rp);
			return respond_internal(c);
		}
		if (rp->replayed)
			MHD_add_response_header(r, "Idempotent-Replayed", "true");
		ret = queue(c, rp->status, r, "application/json", rp->hname, rp->hval);
		ftd_api_reply_release(rp);
		return ret;
	}
	json_t *body = rp->json;
	rp->json = NULL;
	ret = respond_json_h(c, rp->status, body, rp->hname, rp->hname ? rp->hval : NULL);
	return ret;
}

/* ---------------------------------------------------------------- routing */

static int is_get(const char *m)
{
	return !strcmp(m, "GET") || !strcmp(m, "HEAD");
}

static enum MHD_Result respond_html(struct MHD_Connection *c, unsigned status, void (*render)(struct ftd_mbuf *))
{
	struct ftd_mbuf m = {.cap = 65536};
	if (!(m.buf = malloc(m.cap)))
		return respond_internal(c);
	m.buf[0] = '\0';
	render(&m);
	return respond_raw(c, status, m.buf, m.len, "text/html; charset=utf-8", NULL, NULL);
}

static enum MHD_Result h_metrics(struct MHD_Connection *c)
{
	struct ftd_mbuf m = {.cap = 8192};
	if (!(m.buf = malloc(m.cap)))
		return respond_internal(c);
	m.buf[0] = '\0';
	ftd_metrics_render(&m);
	return respond_raw(c, 200, m.buf, m.len, "text/plain; version=0.0.4; charset=utf-8", NULL, NULL);
}

static enum MHD_Result h_health(struct MHD_Connection *c)
{
	struct ftd_api_reply rp = {0};
	struct ftd_api_req rq = {.header = conn_header, .query = conn_query, .hctx = c, .fd = -1,
				 .api_full_s = ftd_front_full_s(&pool_main)};
	ftd_api_health(&rq, &rp);
	return send_reply(c, &rp);
}

static int job_id_ok(const char *s, size_t n)
{
	if (n != 16)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

enum route_arg { R_NONE, R_JOB, R_NAME };

/* The route table: a path ('*' stands for one segment, handed to the handler), its method
 * ("GET" also answers HEAD) and the handler of api.c; the page and /metrics are rendered here. */
static const struct route {
	const char *path;
	const char *method;
	enum route_arg arg;
	void (*fn)(const struct ftd_api_req *rq, struct ftd_api_reply *rp);
	void (*fn_id)(const struct ftd_api_req *rq, const char *id, struct ftd_api_reply *rp);
	void (*fn_name)(const struct ftd_api_req *rq, const char *name, size_t n, struct ftd_api_reply *rp);
} routes[] = {
	{"/", "GET"},
	{"/index.html", "GET"},
	{"/metrics", "GET"},
	{"/openapi.json", "GET", R_NONE, ftd_api_openapi},
	{"/health", "GET", R_NONE, ftd_api_health},
	{"/gpus", "GET", R_NONE, ftd_api_gpus},
	{"/profiles", "GET", R_NONE, ftd_api_profiles},
	{"/profiles/", "GET", R_NONE, ftd_api_profiles},
	{"/profiles/*", "GET", R_NAME, NULL, NULL, ftd_api_profile},
	{"/profiles/*/history", "GET", R_NAME, NULL, NULL, ftd_api_history},
	{"/benchmark/start", "POST", R_NONE, ftd_api_start},
	{"/benchmark/jobs", "GET", R_NONE, ftd_api_list},
	{"/benchmark/jobs/", "GET", R_NONE, ftd_api_list},
	{"/benchmark/jobs/*", "GET", R_JOB, NULL, ftd_api_job},
	{"/benchmark/jobs/*/events", "GET", R_JOB, NULL, ftd_api_events},
	{"/benchmark/jobs/*/log", "GET", R_JOB, NULL, ftd_api_log},
	{"/benchmark/jobs/*/cancel", "POST", R_JOB, NULL, ftd_api_cancel},
	{"/bench/run", "POST", R_NONE, ftd_seed_run},   /* the seed daemon's (seed.h) */
	{"/bench/profile", "GET", R_NONE, ftd_seed_profile},
	{NULL},
};

/* Whether url matches pattern; the '*' segment into *seg, *seg_len. */
static int match(const char *pattern, const char *url, const char **seg, size_t *seg_len)
{
	const char *p = pattern, *u = url;
	while (*p) {
		if (*p == '*') {
			const char *e = strchr(u, '/');
			*seg = u;
			*seg_len = e ? (size_t)(e - u) : strlen(u);
			u += *seg_len;
			p++;
			continue;
		}
		if (*p != *u)
			return 0;
		p++;
		u++;
	}
	return *u == '\0';
}

static enum MHD_Result route(struct MHD_Connection *c, const char *url, const char *m, struct req *rq)
{
	/* a path below /benchmark/jobs/ names a job first */
	if (!strncmp(url, "/benchmark/jobs/", 16) && url[16]) {
		const char *id = url + 16, *slash = strchr(id, '/');
		if (!job_id_ok(id, slash ? (size_t)(slash - id) : strlen(id)))
			return respond_error(c, 404, "not_found", NULL, "no such job");
	}
	for (const struct route *r = routes; r->path; r++) {
		const char *seg = NULL;
		size_t seg_len = 0;
		if (!match(r->path, url, &seg, &seg_len))
			continue;
		if (!strcmp(r->method, "GET") ? !is_get(m) : strcmp(m, r->method) != 0)
			return method_not_allowed(c, !strcmp(r->method, "GET") ? "GET, HEAD" : r->method);
		if (!strcmp(r->path, "/") || !strcmp(r->path, "/index.html"))
			return respond_html(c, 200, ftd_page_render);
		if (!strcmp(r->path, "/metrics"))
			return h_metrics(c);
		const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
		struct ftd_api_req q = {.body = rq->body, .len = rq->len, .header = conn_header, .query = conn_query,
					.hctx = c, .fd = ci ? ci->connect_fd : -1, .api_full_s = ftd_front_full_s(&pool_main)};
		struct ftd_api_reply rp = {0};
		char id[17];
		if (r->arg == R_JOB) {
			memcpy(id, seg, 16);
			id[16] = '\0';
			r->fn_id(&q, id, &rp);
		} else if (r->arg == R_NAME) {
			r->fn_name(&q, seg, seg_len, &rp);
		} else {
			r->fn(&q, &rp);
		}
		return send_reply(c, &rp);
	}
	return respond_error(c, 404, "not_found", NULL, "no such path");
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* A body must keep up BODY_MIN_RATE after a first header-timeout (its length, or max-body when
 * chunked); a silence of header-timeout ends it too (the connection's timeout while it uploads). */
static int body_late(const struct req *rq, struct MHD_Connection *c)
{
	const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	double want = cl ? strtod(cl, NULL) : (double)ftd.cfg.max_body;
	double allowed = (double)ftd.cfg.header_timeout + want / BODY_MIN_RATE;
	return (double)(fttime_now_ns() - rq->head_ns) / 1e9 > allowed;
}

/* Every API request but /health waits until the daemon has loaded its journal (ftd.ready). */
static int starting(void)
{
	return !__atomic_load_n(&ftd.ready, __ATOMIC_ACQUIRE);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
				  const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
	(void)cls;
	(void)version;
	struct req *rq = *con_cls;
	if (!rq) {
		rq = calloc(1, sizeof *rq);
		if (!rq)
			return MHD_NO;
		*con_cls = rq;
		rq->head_ns = fttime_now_ns();
		__atomic_add_fetch(&ftd.http_requests, 1, __ATOMIC_RELAXED);
		MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, (unsigned)ftd.cfg.header_timeout);
		if (strcmp(url, "/health") && starting()) {
			rq->answered = 1;
			return respond_error(c, 503, "starting", NULL, "the daemon is starting (loading its journal)");
		}
		if (ftd.cfg.token && strcmp(url, "/health") != 0 && !authorized(c)) {
			rq->answered = 1;
			if (!strcmp(url, "/") && is_get(method)) /* a browser: the page that asks for the token */
				return respond_html(c, 401, ftd_page_login);
			if (!strncmp(url, "/bench/", 7)) /* the seed daemon's routes: its body */
				return respond_json_h(c, 401, ftd_seed_detail("invalid or missing X-FT-Token"), NULL, NULL);
			return respond_error(c, 401, "unauthorized", NULL, "missing or wrong bearer token");
		}
		return MHD_YES;
	}
	if (rq->answered)
		return MHD_NO;
	if (*upload_size) {
		if (body_late(rq, c)) {
			/* libmicrohttpd queues no answer in the middle of a body: this thread owns the
			 * connection and nothing was sent on it yet, so the 408 is written here */
			const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
			if (ci)
				ftd_front_write_error(ci->connect_fd, 408, "request_timeout", NULL,
						      "the body came slower than " STR(BODY_MIN_RATE) " bytes/s after header-timeout");
			return MHD_NO;
		}
		if (!rq->too_big) {
			if (rq->len + *upload_size > (size_t)ftd.cfg.max_body) {
				rq->too_big = 1;
				free(rq->body);
				rq->body = NULL;
			} else {
				char *b = realloc(rq->body, rq->len + *upload_size + 1);
				if (!b)
					return MHD_NO;
				memcpy(b + rq->len, upload, *upload_size);
				rq->len += *upload_size;
				b[rq->len] = '\0';
				rq->body = b;
			}
		}
		*upload_size = 0;
		return MHD_YES;
	}
	/* the request is complete: an event stream may stay quiet up to its keep-alive */
	MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, (unsigned)IDLE_TIMEOUT_S);
	if (rq->too_big)
		return respond_error(c, 413, "body_too_large", NULL, "the body is over %ld bytes", ftd.cfg.max_body);
	return route(c, url, method, rq);
}

/* The reserve daemon: /health and /metrics (no body needed), and 503 for what the main daemon had no
 * room for. Answered on the first call. */
static enum MHD_Result on_reserve(void *cls, struct MHD_Connection *c, const char *url, const char *method,
				  const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
	static int mark;
	(void)cls;
	(void)version;
	(void)upload;
	(void)upload_size;
	if (*con_cls == &mark)
		return MHD_NO; /* a body after the answer: the connection closes */
	*con_cls = &mark;
	__atomic_add_fetch(&ftd.http_requests, 1, __ATOMIC_RELAXED);
	if (!strcmp(url, "/health"))
		return is_get(method) ? h_health(c) : method_not_allowed(c, "GET, HEAD");
	if (starting())
		return respond_error(c, 503, "starting", NULL, "the daemon is starting (loading its journal)");
	if (!strcmp(url, "/metrics")) {
		if (ftd.cfg.token && !authorized(c))
			return respond_error(c, 401, "unauthorized", NULL, "missing or wrong bearer token");
		return is_get(method) ? h_metrics(c) : method_not_allowed(c, "GET, HEAD");
	}
	return respond_error(c, 503, "busy", NULL, "%ld connections are open (max-connections)",
			     ftd.cfg.max_connections);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe)
{
	(void)c;
	(void)toe;
	struct req *rq = *con_cls;
	if (rq && cls == NULL) {
		free(rq->body);
		free(rq);
	}
	*con_cls = NULL;
}

/* A connection of a pool (cls) closed: its place goes back to the front. */
static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
			  enum MHD_ConnectionNotificationCode toe)
{
	(void)c;
	(void)socket_context;
	if (toe == MHD_CONNECTION_NOTIFY_CLOSED)
		ftd_front_closed(cls);
}

/* Percent-decoding of the path and the query values, except %00: a NUL would cut the string the
 * handlers see ("/health%00x" is not /health), so it stays as the three characters. */
static size_t unescape(void *cls, struct MHD_Connection *c, char *s)
{
	char *w = s;
	for (const char *r = s; *r;) {
		int hi, lo;
		if (r[0] == '%' && (hi = hexval(r[1])) >= 0 && (lo = hexval(r[2])) >= 0 && (hi | lo)) {
			*w++ = (char)(hi * 16 + lo);
			r += 3;
		} else
			*w++ = *r++;
	}
	*w = '\0';
	return (size_t)(w - s);
}

static void mhd_logger(void *cls, const char *fmt, va_list ap)
{
	ftd_vlog(FTD_LOG_WARNING, fmt, ap);
}


/* ---------------------------------------------------------------- start and stop */

struct ftd_http {
	struct ftd_front *front;
};

void ftd_http_stop(struct ftd_http *h)
{
	if (!h)
		return;
	ftd_front_stop(h->front); /* first: nothing new is handed over */
	if (pool_main.d) {
		MHD_quiesce_daemon(pool_main.d);
		MHD_stop_daemon(pool_main.d);
	}
	if (pool_reserve.d)
		MHD_stop_daemon(pool_reserve.d);
	memset(&pool_main, 0, sizeof pool_main);
	memset(&pool_reserve, 0, sizeof pool_reserve);
	free(h);
}

/* The libmicrohttpd daemons (no listening socket of their own: the front hands them sockets).
 * Both run a thread per connection: an event stream may block waiting for the next event, and a
 * /metrics that waits for ftd.lock (held over a journal fsync) delays no /health. Their own limits
 * sit MHD_HEADROOM above the front's. */
struct ftd_http *ftd_http_start(int listen_fd)
{
	struct ftd_http *h = calloc(1, sizeof *h);
	if (!h)
		return NULL;
	pool_main.cap = (unsigned)ftd.cfg.max_connections;
	pool_reserve.cap = RESERVE_MAX;
	unsigned common = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG | MHD_USE_ITC | MHD_USE_NO_LISTEN_SOCKET;
	pool_main.d = MHD_start_daemon(common | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL, 0, NULL, NULL, on_request,
				       NULL, MHD_OPTION_EXTERNAL_LOGGER, mhd_logger, NULL,
				       MHD_OPTION_CONNECTION_LIMIT, pool_main.cap + MHD_HEADROOM,
				       MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)IDLE_TIMEOUT_S,
				       MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL,
				       MHD_OPTION_NOTIFY_CONNECTION, on_connection, &pool_main,
				       MHD_OPTION_UNESCAPE_CALLBACK, unescape, NULL, MHD_OPTION_END);
	pool_reserve.d = MHD_start_daemon(common | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL, 0, NULL, NULL,
					  on_reserve, NULL, MHD_OPTION_EXTERNAL_LOGGER, mhd_logger, NULL,
					  MHD_OPTION_THREAD_STACK_SIZE, (size_t)RESERVE_STACK,
					  MHD_OPTION_CONNECTION_LIMIT, pool_reserve.cap + MHD_HEADROOM,
					  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)ftd.cfg.header_timeout,
					  MHD_OPTION_NOTIFY_COMPLETED, on_completed, (void *)1,
					  MHD_OPTION_NOTIFY_CONNECTION, on_connection, &pool_reserve,
					  MHD_OPTION_UNESCAPE_CALLBACK, unescape, NULL, MHD_OPTION_END);
	if (!pool_main.d || !pool_reserve.d) {
		ftd_log(FTD_LOG_ERR, "http: cannot start libmicrohttpd");
		goto fail;
	}
	if (!(h->front = ftd_front_start(listen_fd, &pool_main, &pool_reserve)))
		goto fail;
	return h;
fail:
	ftd_http_stop(h);
	return NULL;
}
