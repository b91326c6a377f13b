/* api: what each endpoint of api/openapi.yaml does, with no HTTP library in sight: a request
 * view in, a reply (status, JSON or raw body, one extra header, or an event stream) out. The
 * route table and the wire are http.c's. Handlers take ftd.lock themselves: call without it. */
#ifndef FTD_API_H
#define FTD_API_H
#include <jansson.h>
#include <stddef.h>
#include <sys/types.h>

#include "job.h"
#include "kinds.h"

struct ftd_api_req {
	const char *body; /* the request body (NULL none) */
	size_t len;
	/* a request header / a query argument, NULL when absent */
	const char *(*header)(void *hctx, const char *name);
	const char *(*query)(void *hctx, const char *name);
	void *hctx;
	int fd; /* the client's socket, -1 unknown: an event stream ends when the client goes */
	double api_full_s; /* seconds every API connection has been taken without one coming back */
};

struct ftd_api_stream;

struct ftd_api_reply {
	unsigned status;
	json_t *json;       /* the body (new reference), or NULL and: */
	char *raw;          /* the body (malloc'd, the reply owns it) */
	size_t len;
	const char *ctype;  /* of raw */
	const char *hname;  /* one extra header (NULL none) */
	char hval[96];
	int replayed;       /* Idempotent-Replayed: true */
	struct ftd_api_stream *stream; /* an event stream (text/event-stream) */
	int internal;       /* a body could not be built: 500 */
};

/* Fill rp with an error: {"error":{code,message,field}}, WWW-Authenticate on 401, Retry-After on
 * 429/503. Messages and fields echo what the client sent: they are cut and cleaned here. */
void ftd_api_error(struct ftd_api_reply *rp, unsigned status, const char *code, const char *field, const char *fmt,
		   ...) __attribute__((format(printf, 5, 6)));
void ftd_api_err(struct ftd_api_reply *rp, const struct ftd_err *e);
/* Release what rp holds (NULL fields ok). */
void ftd_api_reply_release(struct ftd_api_reply *rp);

/* GET /health, from counters only (never ftd.lock, which a journal fsync may hold): 200 and
 * status "ok" while the API can serve; 503 (with Retry-After) and status "starting" (the journal
 * is not loaded yet), "stopping", or "saturated" (every API connection taken for SATURATED_S). */
#define FTD_API_SATURATED_S 5.0
/* Handlers: id is a 16-hex-digit job id, uuid a profile name (n bytes). */
void ftd_api_health(const struct ftd_api_req *rq, struct ftd_api_reply *rp);
void ftd_api_gpus(const struct ftd_api_req *rq, struct ftd_api_reply *rp);
void ftd_api_start(const struct ftd_api_req *rq, struct ftd_api_reply *rp);
void ftd_api_list(const struct ftd_api_req *rq, struct ftd_api_reply *rp);
void ftd_api_job(const struct ftd_api_req *rq, const char *id, struct ftd_api_reply *rp);
void ftd_api_cancel(const struct ftd_api_req *rq, const char *id, struct ftd_api_reply *rp);
void ftd_api_log(const struct ftd_api_req *rq, const char *id, struct ftd_api_reply *rp);
void ftd_api_events(const struct ftd_api_req *rq, const char *id, struct ftd_api_reply *rp);
void ftd_api_profiles(const struct ftd_api_req *rq, struct ftd_api_reply *rp);
void ftd_api_profile(const struct ftd_api_req *rq, const char *uuid, size_t n, struct ftd_api_reply *rp);
void ftd_api_history(const struct ftd_api_req *rq, const char *uuid, size_t n, struct ftd_api_reply *rp);
void ftd_api_openapi(const struct ftd_api_req *rq, struct ftd_api_reply *rp);

/* The largest Last-Event-ID taken (2^53 - 1: an integer every JSON reader holds exactly). */
#define FTD_API_EVENT_ID_MAX 9007199254740991L

/* An event stream: replays the job's events, then follows them live; it ends after the final
 * state. read returns the bytes written to buf, or FTD_API_STREAM_END / _ERROR (the client
 * left). free gives the stream's place back. */
#define FTD_API_STREAM_END (-1)
#define FTD_API_STREAM_ERROR (-2)
ssize_t ftd_api_stream_read(struct ftd_api_stream *s, char *buf, size_t max);
void ftd_api_stream_free(struct ftd_api_stream *s);
/* The seed daemon's event stream of job j (a reference is taken; call without ftd.lock), or,
 * with j NULL, one that only says error: `progress` events without ids, then `result` (data: the
 * job's result) when it succeeded or `error` {"message": its error and detail, one reason a
 * line}. fd: the client's socket. When the stream ends before the job (its client went away)
 * the job is cancelled. 0 with rp's stream set, or -ENOMEM. */
int ftd_api_stream_seed(struct ftd_job *j, const char *error, int fd, struct ftd_api_reply *rp);
/* 1 while fewer than max-event-streams event streams are open. */
int ftd_api_stream_room(void);

/* Submit a job as POST /benchmark/start does (with ftd.lock held): validate and journal it, or
 * return the job of a replayed idempotency key. 0 with *out (borrowed) and *replayed, or -1
 * with err. */
int ftd_api_submit(const char *kind, json_t *args, long timeout_s, const char *idem_key, const char *req_canon,
		   struct ftd_job **out, int *replayed, struct ftd_err *err);
/* Cancel (ftd.lock held): 200 cancelled now, 202 termination started, 409 already finished (err
 * filled). */
int ftd_api_cancel_job(struct ftd_job *j, struct ftd_err *err);
#endif
