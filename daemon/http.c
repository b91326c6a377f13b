/* http: the wire of the REST API (libmicrohttpd); see http.h. */
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "http.h"

#include "api.h"
#include "daemon.h"
#include "log.h"
#include "mbuf.h"
#include "metrics.h"
#include "page.h"
#include "request.h"
#include "seed.h"
#include "util/fsutil.h"
#include "util/strutil.h"
#include "util/timeutil.h"

#define IDLE_TIMEOUT_S 30   /* a kept-alive connection of the main daemon idle this long is closed */
#define HEAD_MAX 8192       /* a request head longer than this is answered 431 */
#define PENDING_MAX 1024    /* sockets waiting for their head; beyond it the oldest is answered 503 */
#define RESERVE_MAX 256     /* connections of the reserve daemon */

struct req {
	char *body;
	size_t len;
	int too_big;
	int answered; /* an early response was queued on the first call */
};

/* ---------------------------------------------------------------- responses */

static struct MHD_Daemon *reserve_daemon; /* its answers close the connection */

static const char internal_body[] =
	"{\"error\":{\"code\":\"internal\",\"message\":\"the response body could not be built\",\"field\":null}}\n";

static enum MHD_Result queue(struct MHD_Connection *c, unsigned status, struct MHD_Response *r, const char *ctype,
			     const char *h1, const char *v1)
{
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	if (h1)
		MHD_add_response_header(r, h1, v1);
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_DAEMON);
	if (ci && ci->daemon == reserve_daemon)
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
	struct ftd_api_req rq = {.header = conn_header, .query = conn_query, .hctx = c, .fd = -1};
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
					.hctx = c, .fd = ci ? ci->connect_fd : -1};
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

/* What every request must pass before it is routed (RFC 9112 3.2, 6.3): an HTTP/1.1 request
 * has exactly one Host; Content-Length is one number (repeats only with the same value) and never
 * beside Transfer-Encoding. Returns 0, or -1 after queueing the 400 (or 413). */
struct hdr_count {
	int host, cl, te, cl_conflict;
	const char *cl_value;
};

static enum MHD_Result count_header(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	struct hdr_count *h = cls;
	if (!strcasecmp(key, MHD_HTTP_HEADER_HOST))
		h->host++;
	else if (!strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING))
		h->te++;
	else if (!strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH)) {
		if (h->cl && strcmp(h->cl_value, value ? value : ""))
			h->cl_conflict = 1;
		h->cl++;
		h->cl_value = value ? value : "";
	}
	return MHD_YES;
}

static int precheck(struct MHD_Connection *c, const char *version, enum MHD_Result *ret)
{
	struct hdr_count h = {0};
	MHD_get_connection_values(c, MHD_HEADER_KIND, count_header, &h);
	if (h.host > 1 || (h.host == 0 && !strcmp(version, MHD_HTTP_VERSION_1_1))) {
		*ret = respond_error(c, 400, "invalid_request", "Host", "%s", h.host ? "more than one Host header"
										  : "an HTTP/1.1 request needs a Host header");
		return -1;
	}
	if (h.cl_conflict || (h.cl && h.te)) {
		*ret = respond_error(c, 400, "invalid_request", "Content-Length", "%s",
				     h.te ? "Content-Length beside Transfer-Encoding" : "Content-Length headers that differ");
		return -1;
	}
	long n;
	int r = h.cl ? ftstr_parse_long(h.cl_value, 0, ftd.cfg.max_body, &n) : 0;
	if (r == -ERANGE) {
		*ret = respond_error(c, 413, "body_too_large", NULL, "the body is over %ld bytes", ftd.cfg.max_body);
		return -1;
	}
	if (r < 0) {
		*ret = respond_error(c, 400, "invalid_request", "Content-Length", "Content-Length is not a number");
		return -1;
	}
	return 0;
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

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
				  const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
	struct req *rq = *con_cls;
	if (!rq) {
		rq = calloc(1, sizeof *rq);
		if (!rq)
			return MHD_NO;
		*con_cls = rq;
		__atomic_add_fetch(&ftd.http_requests, 1, __ATOMIC_RELAXED);
		enum MHD_Result ret;
		if (precheck(c, version, &ret) < 0) {
			rq->answered = 1;
			return ret;
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
	if (rq->too_big)
		return respond_error(c, 413, "body_too_large", NULL, "the body is over %ld bytes", ftd.cfg.max_body);
	return route(c, url, method, rq);
}

/* The reserve daemon: /health and /metrics (no body needed), and 503 for what the main daemon had no
 * room for. Answered on the first call; every answer closes the connection. */
static enum MHD_Result on_reserve(void *cls, struct MHD_Connection *c, const char *url, const char *method,
				  const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
	static int mark;
	if (*con_cls == &mark)
		return MHD_NO; /* a body after the answer: the connection closes */
	*con_cls = &mark;
	__atomic_add_fetch(&ftd.http_requests, 1, __ATOMIC_RELAXED);
	enum MHD_Result ret;
	if (precheck(c, version, &ret) < 0)
		return ret;
	if (!strcmp(url, "/health"))
		return is_get(method) ? h_health(c) : method_not_allowed(c, "GET, HEAD");
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
	struct req *rq = *con_cls;
	if (rq && cls == NULL) {
		free(rq->body);
		free(rq);
	}
	*con_cls = NULL;
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

/* ---------------------------------------------------------------- the front */

struct pending {
	struct pending *prev, *next; /* oldest first: deadlines come in the same order */
	int fd;
	uint64_t deadline_ns;
	struct sockaddr_storage addr;
	socklen_t alen;
};

struct ftd_http {
	struct MHD_Daemon *main, *reserve;
	int lfd, ep, stop_fd;
	int spare; /* an open descriptor given up when accept finds none left */
	pthread_t thread;
	int thread_started;
	struct pending *head, *tail;
	int npending;
};

static void pending_unlink(struct ftd_http *h, struct pending *p)
{
	if (p->prev)
		p->prev->next = p->next;
	else
		h->head = p->next;
	if (p->next)
		p->next->prev = p->prev;
	else
		h->tail = p->prev;
	h->npending--;
	epoll_ctl(h->ep, EPOLL_CTL_DEL, p->fd, NULL);
}

static const char *reason(unsigned status)
{
	switch (status) {
	case 400: return "Bad Request";
	case 408: return "Request Timeout";
	case 431: return "Request Header Fields Too Large";
	case 505: return "HTTP Version Not Supported";
	default: return "Service Unavailable";
	}
}

/* Answer a socket the daemons will not take, and close it: what the client sent is read and
 * dropped first (closing with unread data would reset the connection before the answer is read). */
static void answer_close(int fd, unsigned status, const char *code, const char *msg)
{
	char buf[4096], resp[1024];
	for (int i = 0; i < 16 && recv(fd, buf, sizeof buf, MSG_DONTWAIT) > 0; i++)
		;
	char body[512];
	int bl = snprintf(body, sizeof body, "{\"error\":{\"code\":\"%s\",\"message\":\"%s\",\"field\":null}}\n", code,
			  msg);
	int n = snprintf(resp, sizeof resp,
			 "HTTP/1.1 %u %s\r\nContent-Type: application/json\r\nCache-Control: no-store\r\n%s"
			 "Connection: close\r\nContent-Length: %d\r\n\r\n%s",
			 status, reason(status),
			 status == 503 ? "Retry-After: 5\r\n" : "", bl, body);
	if (send(fd, resp, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
		/* the client is gone or its window is full: nothing more to do */
	}
	shutdown(fd, SHUT_WR);
	close(fd);
}

static void pending_drop(struct ftd_http *h, struct pending *p, unsigned status, const char *code, const char *msg)
{
	pending_unlink(h, p);
	answer_close(p->fd, status, code, msg);
	free(p);
}

/* Hand fd to d. MHD closes the socket when it refuses it, so it gets a duplicate: 0 when d took
 * it (fd is then MHD's), -1 when fd is still ours. */
static int hand_to(struct MHD_Daemon *d, int fd, const struct sockaddr_storage *addr, socklen_t alen)
{
	int dupfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (dupfd < 0)
		return -1;
	if (MHD_add_connection(d, dupfd, (const struct sockaddr *)addr, alen) != MHD_YES)
		return -1;
	close(fd);
	return 0;
}

static int is_probe(const char *head, size_t n)
{
	static const char *const paths[] = {"/health", "/metrics"};
	const char *sp = memchr(head, ' ', n);
	if (!sp)
		return 0;
	const char *path = sp + 1;
	size_t rest = n - (size_t)(path - head);
	for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
		size_t l = strlen(paths[i]);
		if (rest > l && !memcmp(path, paths[i], l) && (path[l] == ' ' || path[l] == '?' || path[l] == '\r' ||
							       path[l] == '\n'))
			return 1;
	}
	return 0;
}

static int tchar(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* The request line must be METHOD SP /TARGET SP HTTP/1.x CRLF (RFC 9112 3): 0, or the status to
 * answer (400, 505), with *why. A head that fills HEAD_MAX without ending is 431. */
static unsigned check_head(const char *h, size_t n, int complete, const char **why)
{
	size_t i = 0;
	while (i < n && i < 32 && tchar((unsigned char)h[i]))
		i++;
	if (i == 0 || i >= n || h[i] != ' ') {
		*why = "malformed request line (METHOD /path HTTP/1.1)";
		return 400;
	}
	if (++i >= n || (h[i] != '/' && !(h[i] == '*' && i + 1 < n && h[i + 1] == ' '))) {
		*why = "the request target must be a path starting with /";
		return 400;
	}
	while (i < n && (unsigned char)h[i] > 0x20 && h[i] != 0x7f)
		i++;
	if (i >= n) {
		*why = "the request line is too long";
		return complete ? 400 : 431;
	}
	if (h[i] != ' ' || n - i < 10 || memcmp(h + i + 1, "HTTP/", 5) || h[i + 6] < '0' || h[i + 6] > '9' ||
	    h[i + 7] != '.' || h[i + 8] < '0' || h[i + 8] > '9' ||
	    !(h[i + 9] == '\n' || (h[i + 9] == '\r' && n - i > 10 && h[i + 10] == '\n'))) {
		*why = "malformed request line (METHOD /path HTTP/1.1)";
		return 400;
	}
	if (h[i + 6] != '1' || (h[i + 8] != '0' && h[i + 8] != '1')) {
		*why = "only HTTP/1.0 and HTTP/1.1 are served";
		return 505;
	}
	if (!complete) {
		*why = "the request head is over 8 KiB";
		return 431;
	}
	return 0;
}

/* Part of a head: 1 when it cannot begin a request line (TLS, binary junk), so it is answered now
 * rather than at header-timeout. */
static int prefix_bad(const char *h, size_t n)
{
	size_t i = 0;
	while (i < n && i < 32 && tchar((unsigned char)h[i]))
		i++;
	if (i == n)
		return 0;
	return i == 0 || h[i] != ' ' || (i + 1 < n && h[i + 1] != '/' && h[i + 1] != '*');
}

static void dispatch(struct ftd_http *h, struct pending *p, const char *head, size_t n, int complete)
{
	pending_unlink(h, p);
	int fd = p->fd;
	const char *why = NULL;
	unsigned bad = check_head(head, n, complete, &why);
	if (bad) {
		answer_close(fd, bad, "invalid_request", why);
		goto out;
	}
	if (!is_probe(head, n)) {
		const union MHD_DaemonInfo *di = MHD_get_daemon_info(h->main, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
		if ((!di || di->num_connections < (unsigned)ftd.cfg.max_connections) &&
		    hand_to(h->main, fd, &p->addr, p->alen) == 0)
			goto out;
	}
	if (hand_to(h->reserve, fd, &p->addr, p->alen) == 0)
		goto out;
	answer_close(fd, 503, "busy", "the server is at its connection limit");
out:
	free(p);
}

/* The request head has arrived: 2; it fills HEAD_MAX without ending: 1; not yet: 0; the client
 * left: -1. */
static int peek_head(int fd, char *buf, size_t cap, size_t *n)
{
	ssize_t r = recv(fd, buf, cap, MSG_PEEK | MSG_DONTWAIT);
	if (r == 0)
		return -1;
	if (r < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -1;
	*n = (size_t)r;
	for (size_t i = 0; i + 1 < (size_t)r; i++)
		if (buf[i] == '\n' && (buf[i + 1] == '\n' || (buf[i + 1] == '\r' && i + 2 < (size_t)r && buf[i + 2] == '\n')))
			return 2;
	return (size_t)r == cap ? 1 : 0;
}

static void front_accept(struct ftd_http *h)
{
	char head[HEAD_MAX];
	for (int burst = 0; burst < 256; burst++) {
		struct pending *p = calloc(1, sizeof *p);
		if (!p)
			return;
		p->alen = sizeof p->addr;
		p->fd = accept4(h->lfd, (struct sockaddr *)&p->addr, &p->alen, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (p->fd < 0) {
			int e = errno;
			free(p);
			if ((e == EMFILE || e == ENFILE) && h->head) {
				/* out of descriptors: the oldest socket still waiting for its head gives its
				 * place to the new one */
				pending_drop(h, h->head, 503, "busy", "the server is out of file descriptors");
				continue;
			}
			if ((e == EMFILE || e == ENFILE) && h->spare >= 0) {
				/* out of descriptors: the spare one takes the connection for its 503, so the
				 * client is answered and the listening socket does not stay readable */
				close(h->spare);
				int fd = accept4(h->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
				if (fd >= 0)
					answer_close(fd, 503, "busy", "the server is out of file descriptors");
				h->spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
				ftd_log(FTD_LOG_WARNING, "http: accept: %s", strerror(e));
			}
			return;
		}
		if (h->npending >= PENDING_MAX)
			pending_drop(h, h->head, 503, "busy", "too many connections are waiting for their request");
		p->deadline_ns = fttime_now_ns() + (uint64_t)ftd.cfg.header_timeout * 1000000000ull;
		p->prev = h->tail;
		if (h->tail)
			h->tail->next = p;
		else
			h->head = p;
		h->tail = p;
		h->npending++;
		struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP | EPOLLET, .data.ptr = p};
		if (epoll_ctl(h->ep, EPOLL_CTL_ADD, p->fd, &ev) < 0) {
			pending_drop(h, p, 503, "busy", "the server cannot watch more connections");
			continue;
		}
		size_t n = 0;
		int st = peek_head(p->fd, head, sizeof head, &n);
		if (st > 0 || (st == 0 && n > 0 && prefix_bad(head, n)))
			dispatch(h, p, head, n, st == 2);
		else if (st < 0) {
			pending_unlink(h, p);
			close(p->fd);
			free(p);
		}
	}
}

static void *front_main(void *arg)
{
	struct ftd_http *h = arg;
	char head[HEAD_MAX];
	struct epoll_event evs[64];
	for (;;) {
		int tmo = -1;
		if (h->head) {
			uint64_t now = fttime_now_ns();
			tmo = h->head->deadline_ns > now ? (int)((h->head->deadline_ns - now) / 1000000) + 1 : 0;
		}
		int n = epoll_wait(h->ep, evs, 64, tmo);
		if (n < 0 && errno != EINTR) {
			ftd_log(FTD_LOG_ERR, "http: epoll_wait: %s", strerror(errno));
			break;
		}
		for (int i = 0; i < n; i++) {
			if (evs[i].data.ptr == &h->stop_fd)
				goto out;
			if (evs[i].data.ptr == &h->lfd) {
				front_accept(h);
				continue;
			}
			struct pending *p = evs[i].data.ptr;
			size_t len = 0;
			int st = peek_head(p->fd, head, sizeof head, &len);
			if (st > 0 || (st == 0 && len > 0 && prefix_bad(head, len)))
				dispatch(h, p, head, len, st == 2);
			else if (st < 0) {
				pending_unlink(h, p);
				close(p->fd);
				free(p);
			}
		}
		uint64_t now = fttime_now_ns();
		while (h->head && h->head->deadline_ns <= now)
			pending_drop(h, h->head, 408, "request_timeout", "the request head did not arrive in time (header-timeout)");
	}
out:
	return NULL;
}

void ftd_http_stop(struct ftd_http *h)
{
	if (!h)
		return;
	if (h->thread_started) {
		uint64_t one = 1;
		if (write(h->stop_fd, &one, sizeof one) < 0)
			ftd_log(FTD_LOG_WARNING, "http: cannot wake the acceptor: %s", strerror(errno));
		pthread_join(h->thread, NULL);
	}
	while (h->head) {
		struct pending *p = h->head;
		pending_unlink(h, p);
		close(p->fd);
		free(p);
	}
	if (h->main) {
		MHD_quiesce_daemon(h->main);
		MHD_stop_daemon(h->main);
	}
	if (h->reserve)
		MHD_stop_daemon(h->reserve);
	reserve_daemon = NULL;
	if (h->ep >= 0)
		close(h->ep);
	if (h->stop_fd >= 0)
		close(h->stop_fd);
	if (h->spare >= 0)
		close(h->spare);
	free(h);
}

struct ftd_http *ftd_http_start(int listen_fd)
{
	struct ftd_http *h = calloc(1, sizeof *h);
	if (!h)
		return NULL;
	h->lfd = listen_fd;
	h->spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
	h->ep = epoll_create1(EPOLL_CLOEXEC);
	h->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	int fl = fcntl(listen_fd, F_GETFL);
	if (h->ep < 0 || h->stop_fd < 0 || fl < 0 || fcntl(listen_fd, F_SETFL, fl | O_NONBLOCK) < 0) {
		ftd_log(FTD_LOG_ERR, "http: epoll/eventfd: %s", strerror(errno));
		goto fail;
	}
	unsigned common = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG | MHD_USE_ITC | MHD_USE_NO_LISTEN_SOCKET;
	h->main = MHD_start_daemon(common | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL, 0, NULL, NULL, on_request, NULL,
				   MHD_OPTION_EXTERNAL_LOGGER, mhd_logger, NULL,
				   MHD_OPTION_CONNECTION_LIMIT, (unsigned)ftd.cfg.max_connections,
				   MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)IDLE_TIMEOUT_S,
				   MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL,
				   MHD_OPTION_UNESCAPE_CALLBACK, unescape, NULL, MHD_OPTION_END);
	h->reserve = MHD_start_daemon(common | MHD_USE_EPOLL, 0, NULL, NULL, on_reserve, NULL,
				      MHD_OPTION_EXTERNAL_LOGGER, mhd_logger, NULL,
				      MHD_OPTION_CONNECTION_LIMIT, (unsigned)RESERVE_MAX,
				      MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)ftd.cfg.header_timeout,
				      MHD_OPTION_NOTIFY_COMPLETED, on_completed, (void *)1,
				      MHD_OPTION_UNESCAPE_CALLBACK, unescape, NULL, MHD_OPTION_END);
	if (!h->main || !h->reserve) {
		ftd_log(FTD_LOG_ERR, "http: cannot start libmicrohttpd");
		goto fail;
	}
	reserve_daemon = h->reserve;
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &h->lfd};
	struct epoll_event sv = {.events = EPOLLIN, .data.ptr = &h->stop_fd};
	if (epoll_ctl(h->ep, EPOLL_CTL_ADD, listen_fd, &ev) < 0 || epoll_ctl(h->ep, EPOLL_CTL_ADD, h->stop_fd, &sv) < 0) {
		ftd_log(FTD_LOG_ERR, "http: epoll_ctl: %s", strerror(errno));
		goto fail;
	}
	int e = pthread_create(&h->thread, NULL, front_main, h);
	if (e) {
		ftd_log(FTD_LOG_ERR, "http: cannot start the acceptor: %s", strerror(e));
		goto fail;
	}
	h->thread_started = 1;
	return h;
fail:
	ftd_http_stop(h);
	return NULL;
}
