/* http_client: a small blocking JSON-over-HTTP client on libcurl, for talking to ftbenchd (the
 * `ftbench submit/jobs/wait/cancel` commands) and reusable by anything else that speaks JSON and
 * Server-Sent Events over HTTP (`ftbench decode`). Prefix fthttpc_.
 *
 * Library code: every function returns 0 or a negative errno and never logs. A transport failure
 * (refused connection, timeout, bad URL) returns -EIO/-ETIMEDOUT/... and leaves a one-line message
 * in c->err; an HTTP response of any status is a success at this level (look at r->status).
 *
 * Not thread-safe per handle: one struct fthttpc per thread. */
#ifndef FT_UTIL_HTTP_CLIENT_H
#define FT_UTIL_HTTP_CLIENT_H
#include <jansson.h>
#include <stddef.h>

#define FTHTTPC_DEFAULT_PORT 8377
#define FTHTTPC_DEFAULT_URL "http://127.0.0.1:8377"
#define FTHTTPC_MAX_BODY (64u << 20) /* responses larger than this fail with -EFBIG */

struct ftsse_parser; /* util/sse.h */

struct fthttpc {
	char base[512];          /* "http://host:port[/prefix]" without a trailing slash */
	char *token;             /* bearer token (owned) or NULL */
	long timeout_ms;         /* whole request (not streams); default 30 s */
	long connect_timeout_ms; /* default 5 s */
	size_t max_body;         /* responses larger than this fail with -EFBIG; 0: FTHTTPC_MAX_BODY */
	const char *noproxy;     /* CURLOPT_NOPROXY (borrowed) when not NULL, e.g. loopback hosts */
	char err[1536];          /* message of the last transport failure */
	void *handle;            /* CURL *, reused so that connections stay alive */
};

struct fthttpc_resp {
	long status;            /* HTTP status, 0 when no response */
	char *body;             /* NUL-terminated body (owned), never NULL after a response */
	size_t len;
	json_t *json;           /* the body parsed when it is JSON, else NULL (owned: one reference) */
	char location[512];     /* Location header, "" when absent */
	char content_type[128]; /* Content-Type header, "" when absent */
};

/* Set up c for base_url ("http://127.0.0.1:8377", trailing slashes dropped). Only http:// and
 * https:// are accepted, without a query or fragment. Returns 0, -EINVAL (bad URL: c->err says
 * why), -ENAMETOOLONG or -ENOMEM. Release with fthttpc_release even on failure. */
int fthttpc_init(struct fthttpc *c, const char *base_url);
/* Free what c owns; accepts a zeroed or half-initialised c. */
void fthttpc_release(struct fthttpc *c);

/* Read a bearer token from path (first line, surrounding whitespace trimmed). The token is never
 * logged or put in c->err. Returns 0, -errno of the read, -EINVAL when the file holds no token
 * or one with control characters, -EFBIG over 4 KiB. */
int fthttpc_set_token_file(struct fthttpc *c, const char *path);
/* Same with the token given directly (copied). NULL clears it. */
int fthttpc_set_token(struct fthttpc *c, const char *token);

/* Pure helpers (no network). */
/* out = base + path, where path starts with '/'. Returns 0, -EINVAL or -ENAMETOOLONG. */
int fthttpc_build_url(char *out, size_t n, const char *base, const char *path);
/* Percent-encode one path segment (RFC 3986 unreserved characters stay). Returns 0,
 * -EINVAL (NULL or empty) or -ENAMETOOLONG. */
int fthttpc_escape_segment(const char *seg, char *out, size_t n);
/* Normalise a base URL into out: scheme checked, trailing '/' removed. 0 / -EINVAL /
 * -ENAMETOOLONG. */
int fthttpc_normalize_base(const char *url, char *out, size_t n);

/* The negative errno for a libcurl result (a CURLcode): 0 for CURLE_OK, -ECONNREFUSED,
 * -ETIMEDOUT, -EHOSTUNREACH (cannot resolve), -EINVAL (bad URL), -ENOMEM, -ECANCELED (aborted by
 * a progress callback), -EPIPE (the connection broke mid-transfer: a peer that died), else -EIO. */
int fthttpc_errno(int curl_code);

/* One request. method "GET"/"POST"/...; path starts with '/'; body (borrowed, may be NULL) is
 * sent as application/json; headers (may be NULL) is a NULL-terminated list of extra
 * "Name: value" lines. Fills *r (release with fthttpc_resp_release). Returns 0 when a response
 * arrived (whatever its status), else a negative errno with c->err set. */
int fthttpc_request(struct fthttpc *c, const char *method, const char *path, const json_t *body,
		   const char *const *headers, struct fthttpc_resp *r);
void fthttpc_resp_release(struct fthttpc_resp *r);

/* The API error of a response, {"error":{"code","message","field"}}: pointers borrowed from
 * r->json (NULL when absent). Returns 0 when the body has that shape, -ENOENT otherwise. */
int fthttpc_api_error(const struct fthttpc_resp *r, const char **code, const char **message,
		     const char **field);
/* A one-line description of a non-2xx response into buf: "message (field: f)" from the API
 * error when present, else "HTTP <status>: <start of body>". */
#define FTHTTPC_EXCERPT 120 /* characters of a server's error text kept in a message */
void fthttpc_describe_error(const struct fthttpc_resp *r, char *buf, size_t n);

/* GET path as an event stream (Accept: text/event-stream, Last-Event-ID when last_id is
 * neither NULL nor empty) and feed a 2xx text/event-stream body to p (util/sse.h, owned by the
 * caller, who also picks its limits) until the server closes it, p's callback stops it, or
 * nothing (not even a comment) arrives for idle_s seconds (0: no limit). Any other response is
 * collected into *r as by fthttpc_request. Returns 0 when the stream ended, the callback's
 * positive value when it stopped the stream, -ETIMEDOUT when idle, the callback's negative value
 * or the parser's error (-EMSGSIZE, -ENOMEM), else a negative errno with c->err set. */
int fthttpc_stream(struct fthttpc *c, const char *path, const char *last_id, long idle_s,
		  struct ftsse_parser *p, struct fthttpc_resp *r);
#endif
