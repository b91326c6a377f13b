/* api: the endpoints; see api.h. */
#include "api.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "daemon.h"
#include "ftprofile.h"
#include "journal.h"
#include "log.h"
#include "metrics.h"
#include "profiles.h"
#include "request.h"
#include "sched.h"
#include "util/fsutil.h"
#include "util/strutil.h"
#include "util/timeutil.h"
#include "worker.h"

static int n_streams; /* event streams open now (atomic) */

void ftd_api_error(struct ftd_api_reply *rp, unsigned status, const char *code, const char *field, const char *fmt,
		   ...)
{
	char msg[FTD_REQUEST_MSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	/* messages and fields echo what the client sent: ftd_request_error_json cuts and cleans them */
	rp->status = status;
	rp->json = ftd_request_error_json(code, field, "%s", msg);
	if (status == 401) {
		rp->hname = "WWW-Authenticate";
		snprintf(rp->hval, sizeof rp->hval, "Bearer");
	} else if (status == 429 || status == 503) {
		rp->hname = "Retry-After";
		snprintf(rp->hval, sizeof rp->hval, "5");
	}
	const char *said = json_string_value(json_object_get(json_object_get(rp->json, "error"), "message"));
	ftd_log(FTD_LOG_DEBUG, "http: %u %s: %s", status, code, said ? said : "");
	if (!rp->json)
		rp->internal = 1;
}

void ftd_api_err(struct ftd_api_reply *rp, const struct ftd_err *e)
{
	ftd_api_error(rp, (unsigned)e->status, e->code, e->field, "%s", e->message);
}

void ftd_api_reply_release(struct ftd_api_reply *rp)
{
	json_decref(rp->json);
	rp->json = NULL;
	free(rp->raw);
	rp->raw = NULL;
	if (rp->stream)
		ftd_api_stream_free(rp->stream);
	rp->stream = NULL;
}

static void reply_json(struct ftd_api_reply *rp, unsigned status, json_t *body)
{
	rp->status = status;
	rp->json = body;
	if (!body)
		rp->internal = 1;
}

static void reply_raw(struct ftd_api_reply *rp, unsigned status, char *body, size_t len, const char *ctype)
{
	rp->status = status;
	rp->raw = body;
	rp->len = len;
	rp->ctype = ctype;
	if (!body)
		rp->internal = 1;
}

/* ---------------------------------------------------------------- jobs */

int ftd_api_submit(const char *kind, json_t *args, long timeout_s, const char *idem_key, const char *req_canon,
		   struct ftd_job **out, int *replayed, struct ftd_err *err)
{
	*replayed = 0;
	if (idem_key) {
		for (struct ftd_job *j = ftd.jobs.head; j; j = j->next) {
			if (j->idem_key && !strcmp(j->idem_key, idem_key)) {
				if (j->req_canon && req_canon && !strcmp(j->req_canon, req_canon)) {
					*out = j;
					*replayed = 1;
					return 0;
				}
				ftd_kind_err_set(err, 409, "idempotency_conflict", NULL,
					    "Idempotency-Key was used for job %s with another body", j->id);
				return -1;
			}
		}
	}
	if (ftd.stopping) {
		ftd_kind_err_set(err, 503, "shutting_down", NULL, "the daemon is stopping");
		return -1;
	}
	const struct ftd_kind *k = ftd_kind_find(kind);
	if (!k) {
		char names[256];
		ftd_kind_names(names, sizeof names);
		ftd_kind_err_set(err, 400, "unknown_kind", "kind", "unknown kind '%.*s' (%s)", ftstr_utf8_cut(kind, 64), kind,
			    names);
		return -1;
	}
	if (timeout_s == 0)
		timeout_s = ftd.cfg.job_timeout;
	if (timeout_s < 1 || timeout_s > ftd.cfg.max_job_timeout) {
		ftd_kind_err_set(err, 400, "invalid_argument", "timeout_s", "timeout_s: expected an integer in [1, %ld]",
			    ftd.cfg.max_job_timeout);
		return -1;
	}
	struct ftd_job *j = ftd_job_new();
	if (!j) {
		ftd_kind_err_set(err, 503, "internal", NULL, "out of memory");
		return -1;
	}
	do
		ftd_job_new_id(j->id);
	while (ftd_jobs_find(&ftd.jobs, j->id));
	j->kind = k->name;
	j->kind_idx = ftd_kind_index(k);
	j->args = args ? json_deep_copy(args) : json_object();
	/* validated now against the configuration in force; built again when the job starts */
	char **argv;
	int gpu;
	struct ftd_kind_ctx c = ftd_daemon_kind_ctx(j->id);
	if (!j->args || ftd_kind_argv(k, j->args, &c, &gpu, &argv, err) < 0) {
		if (!j->args)
			ftd_kind_err_set(err, 503, "internal", NULL, "out of memory");
		ftd_job_unref(j);
		return -1;
	}
	struct ftd_sched_job *v = calloc((size_t)ftd.jobs.n + 1, sizeof *v);
	int n = 0;
	for (struct ftd_job *q = ftd.jobs.head; v && q; q = q->next)
		v[n++].state = q->state == FTD_JOB_QUEUED ? FTD_SCHED_QUEUED : FTD_SCHED_OTHER;
	int full = !v || ftd_sched_admit(v, n, ftd.cfg.max_queue) < 0;
	free(v);
	if (full) {
		ftd_kind_argv_free(argv);
		ftd_job_unref(j);
		ftd_kind_err_set(err, 429, "queue_full", NULL, "%ld jobs are already queued", ftd.cfg.max_queue);
		return -1;
	}
	j->seq = ftd.jobs.next_seq++;
	j->state = FTD_JOB_QUEUED;
	j->argv = argv;
	if (gpu >= 0) {
		j->gpu_index = ftd.gpus[gpu].index;
		snprintf(j->gpu_uuid, sizeof j->gpu_uuid, "%s", ftd.gpus[gpu].uuid);
	}
	j->all_gpus = gpu == FTD_KIND_GPU_ALL;
	j->host_excl = k->host_exclusive;
	j->timeout_s = timeout_s;
	j->created = fttime_wall_epoch();
	j->idem_key = idem_key ? strdup(idem_key) : NULL;
	j->req_canon = req_canon ? strdup(req_canon) : NULL;
	int r = ftd_daemon_save(j);
	if (r < 0) {
		ftd_job_unref(j);
		ftd_kind_err_set(err, 503, "journal_error", NULL, "the journal could not be written: %s", strerror(-r));
		return -1;
	}
	ftd_jobs_append(&ftd.jobs, j);
	ftd_job_event(j, FTD_EV_STATE, json_pack("{s:s}", "state", "queued"));
	ftd_log(FTD_LOG_INFO, "job %s: %s queued%s%s", j->id, k->name, gpu >= 0 ? " on " : "",
		gpu >= 0 ? j->gpu_uuid : "");
	ftd_daemon_wake();
	*out = j;
	return 0;
}

int ftd_api_cancel_job(struct ftd_job *j, struct ftd_err *err)
{
	if (ftd_job_final(j->state)) {
		ftd_kind_err_set(err, 409, "job_finished", NULL, "job %s already finished (%s)", j->id,
			    ftd_job_state_name(j->state));
		return 409;
	}
	if (j->state == FTD_JOB_QUEUED) {
		j->cancel_requested = 1;
		j->finished = fttime_wall_epoch();
		int r = ftd_daemon_set_state(j, FTD_JOB_CANCELLED);
		if (r == 0)
			ftd_metrics_job_finished(j);
		ftd_log(FTD_LOG_INFO, "job %s: cancelled while queued%s", j->id, r < 0 ? " (journal pending)" : "");
		ftd_daemon_wake();
		return r < 0 ? 202 : 200; /* 202: cancelled once the journal can say so */
	}
	if (!j->cancel_requested) {
		j->cancel_requested = 1;
		ftd_log(FTD_LOG_INFO, "job %s: cancel requested", j->id);
		ftd_daemon_save(j);
		ftd_daemon_wake(); /* the main loop sends the signals */
	}
	return 202;
}

static json_t *job_json(const struct ftd_job *j, int with_result)
{
	return ftd_job_json(j, with_result, ftd_jobs_queue_position(&ftd.jobs, j));
}

void ftd_api_health(const struct ftd_api_req *rq, struct ftd_api_reply *rp)
{
	const char *status = "ok";
	if (__atomic_load_n(&ftd.stopping, __ATOMIC_ACQUIRE))
		status = "stopping";
	else if (!__atomic_load_n(&ftd.ready, __ATOMIC_ACQUIRE))
		status = "starting";
	else if (rq->api_full_s >= FTD_API_SATURATED_S)
		status = "saturated";
	double up = (double)(fttime_now_ns() - ftd.start_ns) / 1e9;
	/* uptimeS and engineRunning: the seed daemon's fields (its desktop app reads them) */
	json_t *o = json_pack("{s:s,s:s,s:f,s:i,s:i,s:i,s:I,s:b}", "status", status, "version", FT_VERSION, "uptime_s", up,
			      "queued", __atomic_load_n(&ftd.n_queued, __ATOMIC_RELAXED), "running",
			      __atomic_load_n(&ftd.n_running, __ATOMIC_RELAXED), "gpus",
			      strcmp(status, "starting") ? ftd.ngpus : 0, "uptimeS",
			      (json_int_t)(up > 0 ? up : 0), "engineRunning", 0);
	unsigned code = strcmp(status, "ok") ? 503 : 200;
	if (code == 503) {
		rp->hname = "Retry-After";
		snprintf(rp->hval, sizeof rp->hval, "5");
	}
	reply_json(rp, code, o);
}

void ftd_api_gpus(const struct ftd_api_req *rq, struct ftd_api_reply *rp)
{
	(void)rq;
	json_t *arr = json_array();
	const char *host_job = NULL;
	char host_id[FTD_JOB_ID_LEN + 1] = "";
	pthread_mutex_lock(&ftd.lock);
	for (int i = 0; i < ftd.ngpus; i++) {
		json_t *g = ftgpu_json(&ftd.gpus[i]);
		json_t *holder = json_null();
		for (struct ftd_job *j = ftd.jobs.head; j; j = j->next)
			if (j->state == FTD_JOB_RUNNING && (j->gpu_index == ftd.gpus[i].index || j->all_gpus)) {
				json_decref(holder);
				holder = json_string(j->id);
			}
		json_object_set_new(g, "job", holder);
		json_array_append_new(arr, g);
	}
	for (struct ftd_job *j = ftd.jobs.head; j; j = j->next)
		if (j->state == FTD_JOB_RUNNING && j->host_excl) {
			memcpy(host_id, j->id, sizeof host_id);
			host_job = host_id;
		}
	json_t *o = json_pack("{s:o,s:o,s:o}", "gpus", arr, "host_job", host_job ? json_string(host_job) : json_null(),
			      "reason", *ftd.gpus_reason ? json_string(ftd.gpus_reason) : json_null());
	pthread_mutex_unlock(&ftd.lock);
	reply_json(rp, 200, o);
}

void ftd_api_start(const struct ftd_api_req *rq, struct ftd_api_reply *rp)
{
	const char *ct = rq->header(rq->hctx, "Content-Type");
	if (!ct || strncasecmp(ct, "application/json", 16) != 0 || (ct[16] && ct[16] != ';' && ct[16] != ' ')) {
		ftd_api_error(rp, 415, "unsupported_media_type", NULL, "Content-Type must be application/json (got %.*s)",
			      ct ? ftstr_utf8_cut(ct, 64) : 4, ct ? ct : "none");
		return;
	}
	const char *key = rq->header(rq->hctx, "Idempotency-Key");
	if (key) {
		size_t l = strlen(key);
		int ok = l >= 1 && l <= 128;
		for (size_t i = 0; ok && i < l; i++)
			ok = key[i] > 0x20 && key[i] < 0x7f;
		if (!ok) {
			ftd_api_error(rp, 400, "invalid_argument", "Idempotency-Key",
				      "Idempotency-Key must be 1 to 128 printable ASCII characters");
			return;
		}
	}
	struct ftd_err err;
	const char *kind;
	json_t *args;
	long timeout;
	json_t *req = ftd_request_start_parse(rq->body, rq->len, ftd.cfg.max_job_timeout, &kind, &args, &timeout, &err);
	if (!req) {
		ftd_api_err(rp, &err);
		return;
	}
	char *canon = json_dumps(req, JSON_COMPACT | JSON_SORT_KEYS);
	struct ftd_job *j;
	int replayed;
	pthread_mutex_lock(&ftd.lock);
	int r = ftd_api_submit(kind, args, timeout, key, canon, &j, &replayed, &err);
	json_t *body = r == 0 ? job_json(j, 1) : NULL;
	if (r == 0) {
		rp->hname = "Location";
		snprintf(rp->hval, sizeof rp->hval, "/benchmark/jobs/%s", j->id);
	}
	pthread_mutex_unlock(&ftd.lock);
	free(canon);
	json_decref(req);
	if (r < 0) {
		ftd_api_err(rp, &err);
		return;
	}
	rp->replayed = replayed;
	reply_json(rp, 202, body);
}

void ftd_api_list(const struct ftd_api_req *rq, struct ftd_api_reply *rp)
{
	const char *st = rq->query(rq->hctx, "state");
	const char *lim = rq->query(rq->hctx, "limit");
	int state = -1;
	long limit = 100;
	if (st && (state = ftd_job_state_parse(st)) < 0) {
		ftd_api_error(rp, 400, "invalid_argument", "state", "state: unknown state '%.*s'", ftstr_utf8_cut(st, 32),
			      st);
		return;
	}
	if (lim && ftstr_parse_long(lim, 1, 10000, &limit) < 0) {
		ftd_api_error(rp, 400, "invalid_argument", "limit", "limit: expected an integer in [1, 10000]");
		return;
	}
	json_t *arr = json_array();
	pthread_mutex_lock(&ftd.lock);
	for (struct ftd_job *j = ftd.jobs.head; j; j = j->next)
		if (state < 0 || (int)j->state == state)
			json_array_insert_new(arr, 0, job_json(j, 0));
	pthread_mutex_unlock(&ftd.lock);
	while ((long)json_array_size(arr) > limit)
		json_array_remove(arr, json_array_size(arr) - 1);
	reply_json(rp, 200, json_pack("{s:o}", "jobs", arr));
}

void ftd_api_job(const struct ftd_api_req *rq, const char *id, struct ftd_api_reply *rp)
{
	(void)rq;
	pthread_mutex_lock(&ftd.lock);
	struct ftd_job *j = ftd_jobs_find(&ftd.jobs, id);
	json_t *o = j ? job_json(j, 1) : NULL;
	pthread_mutex_unlock(&ftd.lock);
	if (!j)
		ftd_api_error(rp, 404, "not_found", NULL, "no job %.32s", id);
	else
		reply_json(rp, 200, o);
}

void ftd_api_cancel(const struct ftd_api_req *rq, const char *id, struct ftd_api_reply *rp)
{
	(void)rq;
	struct ftd_err err;
	pthread_mutex_lock(&ftd.lock);
	struct ftd_job *j = ftd_jobs_find(&ftd.jobs, id);
	int status = j ? ftd_api_cancel_job(j, &err) : 404;
	json_t *o = j && status != 409 ? job_json(j, 0) : NULL;
	pthread_mutex_unlock(&ftd.lock);
	if (!j)
		ftd_api_error(rp, 404, "not_found", NULL, "no job %.32s", id);
	else if (status == 409)
		ftd_api_err(rp, &err);
	else
		reply_json(rp, (unsigned)status, o);
}

void ftd_api_log(const struct ftd_api_req *rq, const char *id, struct ftd_api_reply *rp)
{
	(void)rq;
	pthread_mutex_lock(&ftd.lock);
	int found = ftd_jobs_find(&ftd.jobs, id) != NULL;
	pthread_mutex_unlock(&ftd.lock);
	if (!found) {
		ftd_api_error(rp, 404, "not_found", NULL, "no job %.32s", id);
		return;
	}
	char path[4096], *text = NULL;
	size_t len = 0;
	snprintf(path, sizeof path, "%s/%s.log", ftd.logs_dir, id);
	if (ftfs_read_file(path, (size_t)ftd.cfg.log_max + 4096, &text, &len) < 0) {
		text = strdup("");
		len = 0;
	}
	reply_raw(rp, 200, text, len, "text/plain; charset=utf-8");
}

/* ---------------------------------------------------------------- event streams */

enum { STREAM_SLICE_MS = 200, STREAM_KEEPALIVE_MS = 15000 };

struct ftd_api_stream {
	struct ftd_job *j;      /* NULL: a seed stream that only says seed_error */
	int seed;               /* the seed daemon's form (ftd_api_stream_seed) */
	char *seed_error;       /* a seed stream's error before any job */
	int seed_done;          /* its last event was sent */
	int fd; /* the client's socket: a client that went away ends the stream */
	size_t next;
	char *pend;
	size_t pend_len, pend_off;
	int idle_slices; /* quiet slices since the last keep-alive */
};

/* A seed stream's last event (ftd.lock held): the profile when the job succeeded, else every
 * reason it failed (its error, then its detail), as the seed's `error {message}`. A new string. */
static char *seed_last(const struct ftd_api_stream *s)
{
	char *out = NULL, *data = NULL;
	const struct ftd_job *j = s->j;
	if (j && j->state == FTD_JOB_SUCCEEDED && j->result) {
		data = json_dumps(j->result, JSON_COMPACT);
		if (data && asprintf(&out, "event: result\ndata: %s\n\n", data) < 0)
			out = NULL;
		free(data);
		return out;
	}
	char *msg = NULL;
	const char *e = !j ? s->seed_error : j->error ? j->error : ftd_job_state_name(j->state);
	if (asprintf(&msg, "%s%s%s", e, j && j->error_detail ? "\n" : "", j && j->error_detail ? j->error_detail : "") < 0)
		return NULL;
	json_t *o = json_pack("{s:s}", "message", msg);
	free(msg);
	data = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	if (data && asprintf(&out, "event: error\ndata: %s\n\n", data) < 0)
		out = NULL;
	free(data);
	return out;
}

ssize_t ftd_api_stream_read(struct ftd_api_stream *s, char *buf, size_t max)
{
	size_t n = 0;
	pthread_mutex_lock(&ftd.lock);
	for (;;) {
		if (s->seed && !s->pend && !s->seed_done && (!s->j || (ftd_job_final(s->j->state) && s->next >= s->j->nev))) {
			s->seed_done = 1;
			s->pend = seed_last(s);
			s->pend_len = s->pend ? strlen(s->pend) : 0;
			s->pend_off = 0;
		}
		if (s->seed && !s->pend && s->j && s->next < s->j->nev && s->j->ev[s->next].type != FTD_EV_PROGRESS) {
			s->next++; /* the seed's stream: progress, then one result or error at the end */
			continue;
		}
		if (!s->pend && s->j && s->next < s->j->nev) {
			const struct ftd_event *e = &s->j->ev[s->next++];
			/* id: the event's own (daemon-wide, strictly increasing, kept over restarts); a
			 * client that reconnects with Last-Event-ID: N is sent the events with larger ids */
			int w = s->seed ? asprintf(&s->pend, "event: %s\ndata: %s\n\n", ftd_job_ev_name(e->type), e->data)
					: asprintf(&s->pend, "id: %llu\nevent: %s\ndata: %s\n\n", e->id,
						   ftd_job_ev_name(e->type), e->data);
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
		if (s->seed ? s->seed_done : ftd_job_final(s->j->state) || ftd.stopping) {
			pthread_mutex_unlock(&ftd.lock);
			return FTD_API_STREAM_END;
		}
		/* wait for the next event in slices of STREAM_SLICE_MS: after each wake-up (a timeout, or
		 * another job's event: the condition is shared) with nothing new for this stream, see
		 * whether the client left, so that its thread and connection slot are freed within a
		 * slice, not at the next write; a keep-alive comment after STREAM_KEEPALIVE_MS quiet */
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += STREAM_SLICE_MS * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		int rc = pthread_cond_timedwait(&ftd.cond, &ftd.lock, &ts);
		if (s->j && s->next >= s->j->nev && !ftd_job_final(s->j->state) && !ftd.stopping) {
			struct pollfd p = {.fd = s->fd, .events = POLLRDHUP};
			if (s->fd >= 0 && poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR))) {
				pthread_mutex_unlock(&ftd.lock);
				return FTD_API_STREAM_ERROR;
			}
			if (rc == ETIMEDOUT && ++s->idle_slices >= STREAM_KEEPALIVE_MS / STREAM_SLICE_MS) {
				static const char ka[] = ": keep-alive\n\n";
				s->idle_slices = 0;
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

void ftd_api_stream_free(struct ftd_api_stream *s)
{
	__atomic_sub_fetch(&n_streams, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&ftd.lock);
	if (s->seed && s->j && !ftd_job_final(s->j->state) && !ftd.stopping && !s->j->removed) {
		/* the seed's stream is the job's life line (as in the seed daemon): the client went away */
		struct ftd_err err;
		ftd_log(FTD_LOG_INFO, "job %s: the /bench/run client went away: cancelling it", s->j->id);
		ftd_api_cancel_job(s->j, &err);
	}
	if (s->j)
		ftd_job_unref(s->j);
	pthread_mutex_unlock(&ftd.lock);
	free(s->pend);
	free(s->seed_error);
	free(s);
}

int ftd_api_stream_room(void)
{
	return __atomic_load_n(&n_streams, __ATOMIC_RELAXED) < ftd.cfg.max_event_streams;
}

int ftd_api_stream_seed(struct ftd_job *j, const char *error, int fd, struct ftd_api_reply *rp)
{
	struct ftd_api_stream *s = calloc(1, sizeof *s);
	if (!s || (!j && !(s->seed_error = strdup(error ? error : "the job could not be queued")))) {
		free(s);
		return -ENOMEM;
	}
	s->seed = 1;
	s->fd = fd;
	if (j) {
		pthread_mutex_lock(&ftd.lock);
		j->refs++;
		s->j = j;
		pthread_mutex_unlock(&ftd.lock);
	}
	__atomic_add_fetch(&n_streams, 1, __ATOMIC_RELAXED);
	rp->status = 200;
	rp->stream = s;
	return 0;
}

void ftd_api_events(const struct ftd_api_req *rq, const char *id, struct ftd_api_reply *rp)
{
	struct ftd_api_stream *s = calloc(1, sizeof *s);
	if (!s) {
		rp->internal = 1;
		return;
	}
	pthread_mutex_lock(&ftd.lock);
	struct ftd_job *j = ftd_jobs_find(&ftd.jobs, id);
	if (j)
		j->refs++;
	pthread_mutex_unlock(&ftd.lock);
	if (!j) {
		free(s);
		ftd_api_error(rp, 404, "not_found", NULL, "no job %.32s", id);
		return;
	}
	/* counted from here: ftd_api_stream_free gives the place back */
	s->j = j;
	if (__atomic_add_fetch(&n_streams, 1, __ATOMIC_RELAXED) > ftd.cfg.max_event_streams) {
		ftd_api_stream_free(s);
		ftd_api_error(rp, 503, "busy", NULL, "%ld event streams are open (max-event-streams)",
			      ftd.cfg.max_event_streams);
		return;
	}
	const char *last = rq->header(rq->hctx, "Last-Event-ID");
	long resume = 0;
	if (last && ftstr_parse_long(last, 0, FTD_API_EVENT_ID_MAX, &resume) < 0) {
		ftd_api_stream_free(s);
		ftd_api_error(rp, 400, "invalid_argument", "Last-Event-ID",
			      "Last-Event-ID must be an event id this stream sent (an integer in [0, 2^53 - 1])");
		return;
	}
	pthread_mutex_lock(&ftd.lock);
	s->next = 0; /* the first event with a larger id (a job's ids grow along its list) */
	while (s->next < j->nev && j->ev[s->next].id <= (unsigned long long)resume)
		s->next++;
	pthread_mutex_unlock(&ftd.lock);
	s->fd = rq->fd;
	rp->status = 200;
	rp->stream = s;
}

/* ---------------------------------------------------------------- profiles */

void ftd_api_profiles(const struct ftd_api_req *rq, struct ftd_api_reply *rp)
{
	(void)rq;
	reply_json(rp, 200, ftd_profiles_list());
}

/* GET /profiles/{uuid}/history?limit=N: the kept profiles, oldest first. */
void ftd_api_history(const struct ftd_api_req *rq, const char *uuid, size_t n, struct ftd_api_reply *rp)
{
	char u[128];
	const char *lim = rq->query(rq->hctx, "limit");
	long limit = 0;
	if (lim && ftstr_parse_long(lim, 1, 10000, &limit) < 0) {
		ftd_api_error(rp, 400, "invalid_argument", "limit", "limit: expected an integer in [1, 10000]");
		return;
	}
	char check[4096];
	if (n == 0 || n >= sizeof u) {
		ftd_api_error(rp, 404, "not_found", NULL, "no such profile");
		return;
	}
	memcpy(u, uuid, n);
	u[n] = '\0';
	if (ftprof_store_file(ftd.profile_dir, strcmp(u, "host") ? u : NULL, check, sizeof check) < 0) {
		ftd_api_error(rp, 404, "not_found", NULL, "no such profile");
		return;
	}
	json_t *h = ftd_profiles_history(u, (int)limit);
	if (!json_array_size(h) && access(check, F_OK) != 0) {
		json_decref(h);
		ftd_api_error(rp, 404, "not_found", NULL, "no profile for %.*s", ftstr_utf8_cut(u, 80), u);
		return;
	}
	reply_json(rp, 200, json_pack("{s:s,s:I,s:o}", "uuid", u, "keep", (json_int_t)ftd.cfg.history, "profiles", h));
}

void ftd_api_profile(const struct ftd_api_req *rq, const char *uuid, size_t n, struct ftd_api_reply *rp)
{
	(void)rq;
	(void)n;
	char *text, why[200];
	size_t len;
	if (ftd_profiles_read(uuid, &text, &len) < 0) {
		ftd_api_error(rp, 404, "not_found", NULL, "no profile for %.*s", ftstr_utf8_cut(uuid, 80), uuid);
	} else if (ftd_profiles_corrupt(text, len, why, sizeof why)) {
		free(text);
		ftd_api_error(rp, 500, "corrupt_profile", NULL, "the stored profile of %.*s is not a profile: %s",
			      ftstr_utf8_cut(uuid, 80), uuid, why);
	} else {
		reply_raw(rp, 200, text, len, "application/json");
	}
}

extern const char ftd_openapi_json[];

void ftd_api_openapi(const struct ftd_api_req *rq, struct ftd_api_reply *rp)
{
	(void)rq;
	char *s = strdup(ftd_openapi_json);
	reply_raw(rp, 200, s, s ? strlen(s) : 0, "application/json");
}
