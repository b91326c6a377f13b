/* client: the HTTP side of `ftbench decode`, on libcurl: health, model id, VRAM, and one
 * streamed chat completion timed event by event. The plain GETs go through util/http_client
 * (fthttpc_request); the chat stream keeps its own write callback on the handle so that every
 * run of bytes is timed as it arrives.
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

#define FTCLIENT_MAX_BODY (1u << 20) /* non-streamed responses larger than this are refused */

/* GET base+path. *body is a new NUL-terminated string (caller frees) even for non-2xx statuses;
 * *status the HTTP status. -ECONNREFUSED (nothing listening), -ETIMEDOUT, -EMSGSIZE (over
 * FTCLIENT_MAX_BODY), -EINVAL (base is no http(s) URL), -EPIPE, -EIO (see fthttpc_errno). */
int ftclient_get(const char *base, const char *path, double timeout_s, long *status, char **body,
	     char *why, size_t whylen);

/* One /health probe: 1 when serving, 0 when up but not serving yet (state says what it said,
 * e.g. "maintenance=loading (HTTP 200)" or "HTTP 503: Loading model"), -ENOENT when the server
 * has no /health (HTTP 404), -EREMOTEIO when it says {"status":"error"} (FreeToken: the server
 * failed), or -errno when it could not be asked. A 200 whose body has no "maintenance" key (a
 * server other than FreeToken) counts as serving. */
int ftclient_health(const char *base, double timeout_s, char *state, size_t n);

/* Readiness from /v1/models (for servers without /health): 1 when it answers 200 with at least
 * one model, 0 when up but not (state says what it said), -errno when it could not be asked. */
int ftclient_models_ready(const char *base, double timeout_s, char *state, size_t n);

/* Which kind of server answers at base (decode/server.h's enum ftsrv_kind), from what it
 * serves: /health with "maintenance" (freetoken); /v1/models' owned_by ("llamacpp", "vllm",
 * "sglang"); /props with llama.cpp's default_generation_settings; /get_server_info (sglang);
 * /version (vllm); anything else answering HTTP is openai. how (size n) says which probe
 * decided. -EAGAIN while /v1/models does not answer 200 yet (a server still loading answers
 * 503 to every probe: too early to tell), -errno (e.g. -ECONNREFUSED) when nothing answered. */
int ftclient_detect_kind(const char *base, double timeout_s, int *kind, char *how, size_t n);

/* The first model id from /v1/models into id (size n). -ENOENT when the list is empty. */
int ftclient_model_id(const char *base, double timeout_s, char *id, size_t n, char *why, size_t whylen);

/* vram_bytes from /v1/stats (top level or under "memory"). -ENOENT when the server has no such
 * endpoint or figure. */
int ftclient_vram_bytes(const char *base, double timeout_s, long long *bytes);

/* POST request (borrowed) to base/v1/chat/completions and feed the streamed answer into s
 * (initialised by the caller). *t_request_ns is taken just before the request is sent.
 * Returns 0 when the stream ended with [DONE]; -EPROTO for an error object (why has the
 * server's message), -ENODATA when the server answered 200 and closed the stream without a
 * single event, -EPIPE when the connection ended before [DONE] after some events (a server
 * that died mid-stream, or closed the stream early), -EBADMSG, -EMSGSIZE, -ETIMEDOUT,
 * -ECANCELED, or -EIO for an HTTP error status (why has the status and the first lines of the
 * body, or of its error message, whole). */
int ftclient_stream_chat(const char *base, const json_t *request, double timeout_s, struct ftchat_stream *s,
		     uint64_t *t_request_ns, const volatile sig_atomic_t *cancel, char *why, size_t whylen);
#endif
