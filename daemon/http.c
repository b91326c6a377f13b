/* http: the REST API on libmicrohttpd (one thread per connection, so an SSE stream may block
 * waiting for the next event). respond_json / respond_error are the only ways out; per-request
 * state is freed in the completion callback; libmicrohttpd's own messages go to the daemon's
 * logger. */
#include <errno.h>
#include <microhttpd.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "ftbenchd.h"
#include "log.h"
#include "ftprofile.h"
#include "page.h"
#include "util/fsutil.h"
#include "util/strutil.h"
#include "util/timeutil.h"

const char *ftd_event_name(enum ftd_ev_type t);

struct req {
	char *body;
	size_t len;
	int too_big;
	int answered; /* an early response was queued on the first call */
};

/* ---------------------------------------------------------------- responses */

static enum MHD_Result respond_raw(struct MHD_Connection *c, unsigned status, char *body, size_t len,
				   const char *ctype, const char *h1, const char *v1)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	if (h1)
		MHD_add_response_header(r, h1, v1);
	enum MHD_Result ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

/* body: stolen. */
static enum MHD_Result respond_json_h(struct MHD_Connection *c, unsigned status, json_t *body, const char *h1,
				      const char *v1)
{
	char *s = body ? json_dumps(body, JSON_COMPACT) : NULL;
	json_decref(body);
	if (!s)
		return MHD_NO;
	size_t l = strlen(s);
	char *t = realloc(s, l + 2);
	if (!t) {
		free(s);
		return MHD_NO;
	}
	t[l] = '\n';
	t[l + 1] = '\0';
	return respond_raw(c, status, t, l + 1, "application/json", h1, v1);
}

static enum MHD_Result respond_json(struct MHD_Connection *c, unsigned status, json_t *body)
{
	return respond_json_h(c, status, body, NULL, NULL);
}

static enum MHD_Result respond_error(struct MHD_Connection *c, unsigned status, const char *code, const char *field,
				     const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static enum MHD_Result respond_error(struct MHD_Connection *c, unsigned status, const char *code, const char *field,
				     const char *fmt, ...)
{
	char msg[600];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	json_t *e = json_pack("{s:{s:s,s:s,s:o}}", "error", "code", code, "message", msg, "field",
			      field && *field ? json_string(field) : json_null());
	const char *h = NULL, *v = NULL;
	if (status == 401) {
		h = MHD_HTTP_HEADER_WWW_AUTHENTICATE;
		v = "Bearer";
	} else if (status == 429 || status == 503) {
		h = MHD_HTTP_HEADER_RETRY_AFTER;
		v = "5";
	}
	ftd_log(FTD_LOG_DEBUG, "http: %u %s: %s", status, code, msg);
	return respond_json_h(c, status, e, h, v);
}

static enum MHD_Result respond_err(struct MHD_Connection *c, const struct ftd_err *e)
{
	return respond_error(c, (unsigned)e->status, e->code, e->field, "%s", e->message);
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

static int authorized(struct MHD_Connection *c)
{
	const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	if (!h || strncasecmp(h, "Bearer ", 7) != 0)
		return 0;
	h += 7;
	while (*h == ' ')
		h++;
	return token_ok(h);
}

/* ---------------------------------------------------------------- handlers */

static int is_get(const char *m)
{
	return !strcmp(m, "GET") || !strcmp(m, "HEAD");
}

static enum MHD_Result h_health(struct MHD_Connection *c)
{
	pthread_mutex_lock(&ftd.lock);
	json_t *o = json_pack("{s:s,s:s,s:f,s:i,s:i,s:i}", "status", ftd.stopping ? "stopping" : "ok", "version",
			      FT_VERSION, "uptime_s", ft_wall_epoch() - ftd.start_wall, "queued",
			      ftd_count_state(ST_QUEUED), "running", ftd_count_state(ST_RUNNING), "gpus", ftd.ngpus);
	pthread_mutex_unlock(&ftd.lock);
	return respond_json(c, 200, o);
}

static enum MHD_Result h_gpus(struct MHD_Connection *c)
{
	json_t *arr = json_array();
	const char *host_job = NULL;
	char host_id[17] = "";
	pthread_mutex_lock(&ftd.lock);
	for (int i = 0; i < ftd.ngpus; i++) {
		json_t *g = ftgpu_json(&ftd.gpus[i]);
		json_t *holder = json_null();
		for (struct ftd_job *j = ftd.head; j; j = j->next)
			if (j->state == ST_RUNNING && (j->gpu_index == ftd.gpus[i].index || ftd_job_all_gpus(j))) {
				json_decref(holder);
				holder = json_string(j->id);
			}
		json_object_set_new(g, "job", holder);
		json_array_append_new(arr, g);
	}
	for (struct ftd_job *j = ftd.head; j; j = j->next)
		if (j->state == ST_RUNNING && j->host_excl) {
			memcpy(host_id, j->id, 17);
			host_job = host_id;
		}
	json_t *o = json_pack("{s:o,s:o,s:o}", "gpus", arr, "host_job", host_job ? json_string(host_job) : json_null(),
			      "reason", *ftd.gpus_reason ? json_string(ftd.gpus_reason) : json_null());
	pthread_mutex_unlock(&ftd.lock);
	return respond_json(c, 200, o);
}

static enum MHD_Result h_start(struct MHD_Connection *c, struct req *rq)
{
	const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
	if (!ct || strncasecmp(ct, "application/json", 16) != 0 || (ct[16] && ct[16] != ';' && ct[16] != ' '))
		return respond_error(c, 415, "unsupported_media_type", NULL,
				     "Content-Type must be application/json (got %.64s)", ct ? ct : "none");
	const char *key = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Idempotency-Key");
	if (key) {
		size_t l = strlen(key);
		int ok = l >= 1 && l <= 128;
		for (size_t i = 0; ok && i < l; i++)
			ok = key[i] > 0x20 && key[i] < 0x7f;
		if (!ok)
			return respond_error(c, 400, "invalid_argument", "Idempotency-Key",
					     "Idempotency-Key must be 1 to 128 printable ASCII characters");
	}
	json_error_t jerr;
	json_t *req = json_loadb(rq->body ? rq->body : "", rq->len, JSON_REJECT_DUPLICATES, &jerr);
	if (!req)
		return respond_error(c, 400, "invalid_json", NULL, "malformed JSON at line %d column %d: %s",
				     jerr.line, jerr.column, jerr.text);
	enum MHD_Result ret;
	if (!json_is_object(req)) {
		ret = respond_error(c, 400, "invalid_request", NULL, "the body must be a JSON object");
		goto out;
	}
	const char *k;
	json_t *v;
	json_object_foreach(req, k, v) {
		if (strcmp(k, "kind") && strcmp(k, "args") && strcmp(k, "timeout_s")) {
			ret = respond_error(c, 400, "unknown_field", k, "unknown field '%.64s' (kind, args, timeout_s)", k);
			goto out;
		}
	}
	json_t *kind = json_object_get(req, "kind"), *args = json_object_get(req, "args"),
	       *to = json_object_get(req, "timeout_s");
	if (!kind) {
		ret = respond_error(c, 400, "missing_field", "kind", "kind is required");
		goto out;
	}
	if (!json_is_string(kind)) {
		ret = respond_error(c, 400, "invalid_argument", "kind", "kind must be a string");
		goto out;
	}
	if (args && !json_is_object(args)) {
		ret = respond_error(c, 400, "invalid_argument", "args", "args must be an object");
		goto out;
	}
	long timeout = 0;
	if (to) {
		if (!json_is_integer(to) || json_integer_value(to) < 1 || json_integer_value(to) > ftd.cfg.max_job_timeout) {
			ret = respond_error(c, 400, "invalid_argument", "timeout_s",
					    "timeout_s: expected an integer in [1, %ld]", ftd.cfg.max_job_timeout);
			goto out;
		}
		timeout = (long)json_integer_value(to);
	}
	char *canon = json_dumps(req, JSON_COMPACT | JSON_SORT_KEYS);
	struct ftd_err err;
	struct ftd_job *j;
	int replayed;
	pthread_mutex_lock(&ftd.lock);
	int r = ftd_job_submit(json_string_value(kind), args, timeout, key, canon, &j, &replayed, &err);
	json_t *body = r == 0 ? ftd_job_json(j, 1) : NULL;
	char loc[64] = "";
	if (r == 0)
		snprintf(loc, sizeof loc, "/benchmark/jobs/%s", j->id);
	pthread_mutex_unlock(&ftd.lock);
	free(canon);
	if (r < 0) {
		ret = respond_err(c, &err);
		goto out;
	}
	char *s = json_dumps(body, JSON_COMPACT);
	json_decref(body);
	if (!s) {
		ret = MHD_NO;
		goto out;
	}
	size_t l = strlen(s);
	struct MHD_Response *resp = MHD_create_response_from_buffer(l, s, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(s);
		ret = MHD_NO;
		goto out;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_LOCATION, loc);
	if (replayed)
		MHD_add_response_header(resp, "Idempotent-Replayed", "true");
	ret = MHD_queue_response(c, 202, resp);
	MHD_destroy_response(resp);
out:
	json_decref(req);
	return ret;
}

static enum MHD_Result h_list(struct MHD_Connection *c)
{
	const char *st = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "state");
	const char *lim = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "limit");
	int state = -1;
	long limit = 100;
	if (st && (state = ftd_state_parse(st)) < 0)
		return respond_error(c, 400, "invalid_argument", "state", "state: unknown state '%.32s'", st);
	if (lim && ftstr_parse_long(lim, 1, 10000, &limit) < 0)
		return respond_error(c, 400, "invalid_argument", "limit", "limit: expected an integer in [1, 10000]");
	json_t *arr = json_array();
	pthread_mutex_lock(&ftd.lock);
	for (struct ftd_job *j = ftd.head; j; j = j->next)
		if (state < 0 || (int)j->state == state)
			json_array_insert_new(arr, 0, ftd_job_json(j, 0));
	pthread_mutex_unlock(&ftd.lock);
	while ((long)json_array_size(arr) > limit)
		json_array_remove(arr, json_array_size(arr) - 1);
	return respond_json(c, 200, json_pack("{s:o}", "jobs", arr));
}

static enum MHD_Result h_job(struct MHD_Connection *c, const char *id)
{
	pthread_mutex_lock(&ftd.lock);
	struct ftd_job *j = ftd_job_find(id);
	json_t *o = j ? ftd_job_json(j, 1) : NULL;
	pthread_mutex_unlock(&ftd.lock);
	if (!o)
		return respond_error(c, 404, "not_found", NULL, "no job %.32s", id);
	return respond_json(c, 200, o);
}

static enum MHD_Result h_cancel(struct MHD_Connection *c, const char *id)
{
	struct ftd_err err;
	pthread_mutex_lock(&ftd.lock);
	struct ftd_job *j = ftd_job_find(id);
	int status = j ? ftd_job_cancel(j, &err) : 404;
	json_t *o = j && status != 409 ? ftd_job_json(j, 0) : NULL;
	pthread_mutex_unlock(&ftd.lock);
	if (!j)
		return respond_error(c, 404, "not_found", NULL, "no job %.32s", id);
	if (status == 409)
		return respond_err(c, &err);
	return respond_json(c, (unsigned)status, o);
}

static enum MHD_Result h_log(struct MHD_Connection *c, const char *id)
{
	pthread_mutex_lock(&ftd.lock);
	int found = ftd_job_find(id) != NULL;
	pthread_mutex_unlock(&ftd.lock);
	if (!found)
		return respond_error(c, 404, "not_found", NULL, "no job %.32s", id);
	char path[4096], *text = NULL;
	size_t len = 0;
	snprintf(path, sizeof path, "%s/%s.log", ftd.logs_dir, id);
	if (ftfs_read_file(path, (size_t)ftd.cfg.log_max + 4096, &text, &len) < 0) {
		text = strdup("");
		len = 0;
	}
	if (!text)
		return MHD_NO;
	return respond_raw(c, 200, text, len, "text/plain; charset=utf-8", NULL, NULL);
}

/* SSE: replay the job's events, then follow them live; the stream ends after the final state. */
struct sse {
	struct ftd_job *j;
	int fd; /* the client's socket: a client that went away ends the stream */
	size_t next;
	char *pend;
	size_t pend_len, pend_off;
	int idle_s;
};

static ssize_t sse_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct sse *s = cls;
	size_t n = 0;
	pthread_mutex_lock(&ftd.lock);
	for (;;) {
		if (!s->pend && s->next < s->j->nev) {
			const struct ftd_event *e = &s->j->ev[s->next++];
			/* id: the event's position in the job's list (1 = first); a client that
			 * reconnects with Last-Event-ID: N is sent the events after the N-th */
			int w = asprintf(&s->pend, "id: %zu\nevent: %s\ndata: %s\n\n", s->next,
					 ftd_event_name(e->type), e->data);
			if (w < 0) {
				s->pend = NULL;
				break;
			}
			s->pend_len = (size_t)w;
			s->pend_off = 0;
		}
		if (s->pend) {
			size_t k = s->pend_len - s->pend_off;
			if (k > max - n)
				k = max - n;
			memcpy(buf + n, s->pend + s->pend_off, k);
			n += k;
			s->pend_off += k;
			if (s->pend_off == s->pend_len) {
				free(s->pend);
				s->pend = NULL;
			}
			if (n == max)
				break;
			continue;
		}
		if (n > 0)
			break;
		if (ftd_state_final(s->j->state) || ftd.stopping) {
			pthread_mutex_unlock(&ftd.lock);
			return MHD_CONTENT_READER_END_OF_STREAM;
		}
		/* wait for the next event in 1 s slices: between them, see whether the client left
		 * (its thread and connection slot are freed then, not at the next write) */
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		if (pthread_cond_timedwait(&ftd.cond, &ftd.lock, &ts) == ETIMEDOUT && s->next >= s->j->nev) {
			struct pollfd p = {.fd = s->fd, .events = POLLRDHUP};
			if (s->fd >= 0 && poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR))) {
				pthread_mutex_unlock(&ftd.lock);
				return MHD_CONTENT_READER_END_WITH_ERROR;
			}
			if (++s->idle_s >= 15) {
				static const char ka[] = ": keep-alive\n\n";
				s->idle_s = 0;
				if (max >= sizeof ka - 1) {
					memcpy(buf, ka, sizeof ka - 1);
					n = sizeof ka - 1;
				}
				break;
			}
		}
	}
	pthread_mutex_unlock(&ftd.lock);
	return (ssize_t)n;
}

static void sse_free(void *cls)
{
	struct sse *s = cls;
	pthread_mutex_lock(&ftd.lock);
	ftd_job_unref(s->j);
	pthread_mutex_unlock(&ftd.lock);
	free(s->pend);
	free(s);
}

static enum MHD_Result h_events(struct MHD_Connection *c, const char *id)
{
	struct sse *s = calloc(1, sizeof *s);
	if (!s)
		return MHD_NO;
	pthread_mutex_lock(&ftd.lock);
	struct ftd_job *j = ftd_job_find(id);
	if (j)
		j->refs++;
	pthread_mutex_unlock(&ftd.lock);
	if (!j) {
		free(s);
		return respond_error(c, 404, "not_found", NULL, "no job %.32s", id);
	}
	s->j = j;
	const char *last = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Last-Event-ID");
	long resume = 0;
	if (last && ftstr_parse_long(last, 0, FTD_MAX_EVENTS * 4L, &resume) < 0) {
		sse_free(s);
		return respond_error(c, 400, "invalid_argument", "Last-Event-ID",
				     "Last-Event-ID must be an event id this stream sent (an integer >= 0)");
	}
	pthread_mutex_lock(&ftd.lock);
	s->next = (size_t)resume < j->nev ? (size_t)resume : j->nev;
	pthread_mutex_unlock(&ftd.lock);
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	s->fd = ci ? ci->connect_fd : -1;
	struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, sse_read, s, sse_free);
	if (!r) {
		sse_free(s);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	enum MHD_Result ret = MHD_queue_response(c, 200, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result h_profiles(struct MHD_Connection *c)
{
	return respond_json(c, 200, ftd_profiles_list());
}

/* GET /profiles/{uuid}/history?limit=N: the kept profiles, oldest first. */
static enum MHD_Result h_history(struct MHD_Connection *c, const char *uuid, size_t n)
{
	char u[128];
	const char *lim = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "limit");
	long limit = 0;
	if (lim && ftstr_parse_long(lim, 1, 10000, &limit) < 0)
		return respond_error(c, 400, "invalid_argument", "limit", "limit: expected an integer in [1, 10000]");
	char check[4096];
	if (n == 0 || n >= sizeof u)
		return respond_error(c, 404, "not_found", NULL, "no such profile");
	memcpy(u, uuid, n);
	u[n] = '\0';
	if (ftprof_store_file(ftd.profile_dir, strcmp(u, "host") ? u : NULL, check, sizeof check) < 0)
		return respond_error(c, 404, "not_found", NULL, "no such profile");
	json_t *h = ftd_profile_history(u, (int)limit);
	if (!json_array_size(h) && access(check, F_OK) != 0) {
		json_decref(h);
		return respond_error(c, 404, "not_found", NULL, "no profile for %.80s", u);
	}
	return respond_json(c, 200, json_pack("{s:s,s:I,s:o}", "uuid", u, "keep", (json_int_t)ftd.cfg.history,
					      "profiles", h));
}

static enum MHD_Result respond_html(struct MHD_Connection *c, unsigned status, void (*render)(struct ftd_mbuf *))
{
	struct ftd_mbuf m = {.cap = 65536};
	if (!(m.buf = malloc(m.cap)))
		return MHD_NO;
	m.buf[0] = '\0';
	render(&m);
	return respond_raw(c, status, m.buf, m.len, "text/html; charset=utf-8", NULL, NULL);
}

extern const char ftd_openapi_json[];

static enum MHD_Result h_openapi(struct MHD_Connection *c)
{
	char *s = strdup(ftd_openapi_json);
	if (!s)
		return MHD_NO;
	return respond_raw(c, 200, s, strlen(s), "application/json", NULL, NULL);
}

static enum MHD_Result h_profile(struct MHD_Connection *c, const char *uuid)
{
	char *text;
	size_t len;
	int r = ftd_profile_read(uuid, &text, &len);
	if (r < 0)
		return respond_error(c, 404, "not_found", NULL, "no profile for %.80s", uuid);
	return respond_raw(c, 200, text, len, "application/json", NULL, NULL);
}

void ftd_mcat(struct ftd_mbuf *m, const char *fmt, ...)
{
	va_list ap;
	for (;;) {
		va_start(ap, fmt);
		int w = vsnprintf(m->buf + m->len, m->cap - m->len, fmt, ap);
		va_end(ap);
		if (w < 0)
			return;
		if ((size_t)w < m->cap - m->len) {
			m->len += (size_t)w;
			return;
		}
		size_t nc = (m->cap + (size_t)w + 1) * 2;
		char *n = realloc(m->buf, nc);
		if (!n)
			return;
		m->buf = n;
		m->cap = nc;
	}
}

static enum MHD_Result h_metrics(struct MHD_Connection *c)
{
	static const char *const kinds[FTD_N_KINDS] = {"bw", "cache-copy", "load-weights", "decode"};
	struct ftd_mbuf m = {.cap = 8192};
	if (!(m.buf = malloc(m.cap)))
		return MHD_NO;
	m.buf[0] = '\0';
	pthread_mutex_lock(&ftd.lock);
	ftd_mcat(&m, "# HELP ftbenchd_jobs Jobs in the journal by state.\n# TYPE ftbenchd_jobs gauge\n");
	for (int s = 0; s < ST_N; s++)
		ftd_mcat(&m, "ftbenchd_jobs{state=\"%s\"} %d\n", ftd_state_name(s), ftd_count_state(s));
	ftd_mcat(&m,
		 "# HELP ftbenchd_queue_depth Jobs waiting to run.\n# TYPE ftbenchd_queue_depth gauge\n"
		 "ftbenchd_queue_depth %d\n"
		 "# HELP ftbenchd_running_jobs Jobs running now.\n# TYPE ftbenchd_running_jobs gauge\n"
		 "ftbenchd_running_jobs %d\n"
		 "# HELP ftbenchd_gpus GPUs in the inventory.\n# TYPE ftbenchd_gpus gauge\nftbenchd_gpus %d\n"
		 "# HELP ftbenchd_start_time_seconds When the daemon started.\n"
		 "# TYPE ftbenchd_start_time_seconds gauge\nftbenchd_start_time_seconds %.3f\n"
		 "# HELP ftbenchd_http_requests_total HTTP requests served.\n"
		 "# TYPE ftbenchd_http_requests_total counter\nftbenchd_http_requests_total %llu\n",
		 ftd_count_state(ST_QUEUED), ftd_count_state(ST_RUNNING), ftd.ngpus, ftd.start_wall,
		 __atomic_load_n(&ftd.http_requests, __ATOMIC_RELAXED));
	ftd_mcat(&m, "# HELP ftbenchd_jobs_finished_total Jobs finished since the daemon started.\n"
		     "# TYPE ftbenchd_jobs_finished_total counter\n");
	for (int k = 0; k < FTD_N_KINDS; k++)
		for (int s = ST_SUCCEEDED; s < ST_N; s++)
			ftd_mcat(&m, "ftbenchd_jobs_finished_total{kind=\"%s\",state=\"%s\"} %llu\n", kinds[k],
				 ftd_state_name(s), ftd.finished_total[k][s]);
	ftd_mcat(&m, "# HELP ftbenchd_job_duration_seconds Run time of finished jobs.\n"
		     "# TYPE ftbenchd_job_duration_seconds histogram\n");
	for (int k = 0; k < FTD_N_KINDS; k++) {
		unsigned long long cum = 0;
		for (int i = 0; i < 12; i++) {
			cum += ftd.dur_buckets[k][i];
			if (i < 11)
				ftd_mcat(&m, "ftbenchd_job_duration_seconds_bucket{kind=\"%s\",le=\"%g\"} %llu\n",
					 kinds[k], ftd_dur_bounds[i], cum);
			else
				ftd_mcat(&m, "ftbenchd_job_duration_seconds_bucket{kind=\"%s\",le=\"+Inf\"} %llu\n",
					 kinds[k], cum);
		}
		ftd_mcat(&m, "ftbenchd_job_duration_seconds_sum{kind=\"%s\"} %.3f\n", kinds[k], ftd.dur_sum[k]);
		ftd_mcat(&m, "ftbenchd_job_duration_seconds_count{kind=\"%s\"} %llu\n", kinds[k], ftd.dur_count[k]);
	}
	pthread_mutex_unlock(&ftd.lock);
	ftd_profiles_metrics(&m);
	return respond_raw(c, 200, m.buf, m.len, "text/plain; version=0.0.4; charset=utf-8", NULL, NULL);
}

/* ---------------------------------------------------------------- routing */

static int job_id_ok(const char *s, size_t n)
{
	if (n != 16)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

static enum MHD_Result route(struct MHD_Connection *c, const char *url, const char *m, struct req *rq)
{
	if (!strcmp(url, "/") || !strcmp(url, "/index.html"))
		return is_get(m) ? respond_html(c, 200, ftd_page_render) : method_not_allowed(c, "GET, HEAD");
	if (!strcmp(url, "/openapi.json"))
		return is_get(m) ? h_openapi(c) : method_not_allowed(c, "GET, HEAD");
	if (!strcmp(url, "/health"))
		return is_get(m) ? h_health(c) : method_not_allowed(c, "GET, HEAD");
	if (!strcmp(url, "/metrics"))
		return is_get(m) ? h_metrics(c) : method_not_allowed(c, "GET, HEAD");
	if (!strcmp(url, "/gpus"))
		return is_get(m) ? h_gpus(c) : method_not_allowed(c, "GET, HEAD");
	if (!strcmp(url, "/profiles") || !strcmp(url, "/profiles/"))
		return is_get(m) ? h_profiles(c) : method_not_allowed(c, "GET, HEAD");
	if (!strncmp(url, "/profiles/", 10)) {
		const char *id = url + 10, *slash = strchr(id, '/');
		if (!slash)
			return is_get(m) ? h_profile(c, id) : method_not_allowed(c, "GET, HEAD");
		if (strcmp(slash, "/history"))
			return respond_error(c, 404, "not_found", NULL, "no such path");
		return is_get(m) ? h_history(c, id, (size_t)(slash - id)) : method_not_allowed(c, "GET, HEAD");
	}
	if (!strcmp(url, "/benchmark/start"))
		return !strcmp(m, "POST") ? h_start(c, rq) : method_not_allowed(c, "POST");
	if (!strcmp(url, "/benchmark/jobs") || !strcmp(url, "/benchmark/jobs/"))
		return is_get(m) ? h_list(c) : method_not_allowed(c, "GET, HEAD");
	if (!strncmp(url, "/benchmark/jobs/", 16)) {
		const char *id = url + 16, *slash = strchr(id, '/');
		size_t n = slash ? (size_t)(slash - id) : strlen(id);
		char idb[17];
		if (!job_id_ok(id, n))
			return respond_error(c, 404, "not_found", NULL, "no such job");
		memcpy(idb, id, 16);
		idb[16] = '\0';
		if (!slash)
			return is_get(m) ? h_job(c, idb) : method_not_allowed(c, "GET, HEAD");
		if (!strcmp(slash, "/events"))
			return is_get(m) ? h_events(c, idb) : method_not_allowed(c, "GET, HEAD");
		if (!strcmp(slash, "/log"))
			return is_get(m) ? h_log(c, idb) : method_not_allowed(c, "GET, HEAD");
		if (!strcmp(slash, "/cancel"))
			return !strcmp(m, "POST") ? h_cancel(c, idb) : method_not_allowed(c, "POST");
	}
	return respond_error(c, 404, "not_found", NULL, "no such path");
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
		if (ftd.cfg.token && strcmp(url, "/health") != 0 && !authorized(c)) {
			rq->answered = 1;
			if (!strcmp(url, "/") && is_get(method)) /* a browser: the page that asks for the token */
				return respond_html(c, 401, ftd_page_login);
			return respond_error(c, 401, "unauthorized", NULL, "missing or wrong bearer token");
		}
		const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
		long n;
		if (cl && (ftstr_parse_long(cl, 0, ftd.cfg.max_body, &n) < 0)) {
			rq->answered = 1;
			return respond_error(c, 413, "body_too_large", NULL, "the body is over %ld bytes", ftd.cfg.max_body);
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

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe)
{
	struct req *rq = *con_cls;
	if (rq) {
		free(rq->body);
		free(rq);
		*con_cls = NULL;
	}
}

static void mhd_logger(void *cls, const char *fmt, va_list ap)
{
	ftd_vlog(FTD_LOG_WARNING, fmt, ap);
}

struct MHD_Daemon *ftd_http_start(int listen_fd)
{
	unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG |
			 MHD_USE_POLL | MHD_USE_ITC;
	return MHD_start_daemon(flags, 0, NULL, NULL, on_request, NULL, MHD_OPTION_EXTERNAL_LOGGER, mhd_logger, NULL,
				MHD_OPTION_LISTEN_SOCKET, listen_fd,
				MHD_OPTION_CONNECTION_LIMIT, (unsigned)ftd.cfg.max_connections,
				MHD_OPTION_CONNECTION_TIMEOUT, 120u, MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL,
				MHD_OPTION_END);
}

void ftd_http_stop(struct MHD_Daemon *d)
{
	if (d)
		MHD_stop_daemon(d);
}
