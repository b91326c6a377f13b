/* client: the HTTP side of `ftbench decode`, on libcurl: health, model id, VRAM, and one
 * streamed chat completion timed event by event.
 *
 * base is the server root ("http://127.0.0.1:30000"; a trailing "/" or "/v1" is ignored).
 * Functions return 0 or a negative errno and write a one-line reason into why (size whylen)
 * on failure; none logs. cancel (may be NULL) is polled: when it becomes non-zero the call
 * returns -ECANCELED soon after. */
#ifndef FT_DECODE_CLIENT_H
#define FT_DECODE_CLIENT_H
#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "decode/chat.h"

#define FTDC_MAX_BODY (1u << 20) /* non-streamed responses larger than this are refused */

/* GET base+path. *body is a new NUL-terminated string (caller frees) even for non-2xx statuses;
 * *status the HTTP status. -ECONNREFUSED (nothing listening), -ETIMEDOUT, -EMSGSIZE, -EIO. */
int ftdc_get(const char *base, const char *path, double timeout_s, long *status, char **body,
	     char *why, size_t whylen);

/* One /health probe: 1 when serving, 0 when up but not serving yet (state says what it said,
 * e.g. "loading" or "HTTP 503"), or -errno when it could not be asked. A 200 whose body has no
 * "maintenance" key (a server other than FreeToken) counts as serving. */
int ftdc_health(const char *base, double timeout_s, char *state, size_t n);

/* The first model id from /v1/models into id (size n). -ENOENT when the list is empty. */
int ftdc_model_id(const char *base, double timeout_s, char *id, size_t n, char *why, size_t whylen);

/* vram_bytes from /v1/stats (top level or under "memory"). -ENOENT when the server has no such
 * endpoint or figure. */
int ftdc_vram_bytes(const char *base, double timeout_s, long long *bytes);

/* POST request (borrowed) to base/v1/chat/completions and feed the streamed answer into s
 * (initialised by the caller). *t_request_ns is taken just before the request is sent.
 * Returns 0 when the stream ended with [DONE]; -EPROTO for an error object (why has the
 * server's message), -EPIPE when the connection ended before [DONE] (a server that died
 * mid-stream), -EBADMSG, -EMSGSIZE, -ETIMEDOUT, -ECANCELED, or -EIO for an HTTP error status. */
int ftdc_stream_chat(const char *base, const json_t *request, double timeout_s, struct ftchat_stream *s,
		     uint64_t *t_request_ns, const volatile sig_atomic_t *cancel, char *why, size_t whylen);
#endif
