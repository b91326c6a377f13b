/* chat: what an OpenAI-style streamed chat completion says, event by event.
 *
 * Feed it the raw bytes of a /v1/chat/completions (or /v1/completions) response with stream:true,
 * each run with the time it arrived. It records every event that carries text (delta.content,
 * delta.reasoning_content / delta.reasoning, or choices[].text) with its arrival time and, when
 * the chunk also carries cumulative usage (continuous usage stats), how many tokens it added;
 * keeps the final usage (prompt_tokens, completion_tokens) from the usage chunk, which may carry
 * no choices at all; notices [DONE]; and turns an error object ({"error":...} or an "error"
 * event) into a failure with the server's message.
 *
 * Memory is bounded by the limits (text bytes, events, SSE line/event size). */
#ifndef FT_DECODE_CHAT_H
#define FT_DECODE_CHAT_H
#include <stddef.h>
#include <stdint.h>

#include "decode/sse.h"

struct ftchat_event {
	uint64_t t_ns;   /* arrival time of the bytes that completed the event */
	int tokens;      /* tokens it added when the server said (cumulative usage), else -1 */
	uint32_t bytes;  /* text bytes it carried */
};

struct ftchat_limits {
	size_t max_text;    /* default 16 MiB */
	size_t max_events;  /* default 1M */
	size_t max_line;    /* SSE line, default FTSSE_DEFAULT_MAX_LINE */
	size_t max_event;   /* SSE event data, default FTSSE_DEFAULT_MAX_EVENT */
};

struct ftchat_stream {
	struct ftchat_event *ev;  /* owned; nev entries */
	size_t nev, cap;
	char *text;               /* owned; reasoning and content text in arrival order, NUL-terminated */
	size_t text_len, text_cap;
	long prompt_tokens;       /* from the last usage seen, -1 when none */
	long completion_tokens;   /* idem */
	int done;                 /* [DONE] seen */
	int failed;               /* an error object arrived: message in error */
	char error[512];
	char finish_reason[32];
	size_t chunks;            /* data events parsed as JSON */
	size_t multi_token_events;/* events known to carry more than one token */
	/* private */
	struct ftsse_parser *sse;
	struct ftchat_limits lim;
	uint64_t now_ns;
	long cum_tokens;
};

/* Initialise; lim may be NULL (defaults). Returns 0 or -ENOMEM. */
int ftchat_init(struct ftchat_stream *s, const struct ftchat_limits *lim);
/* Free what it owns; accepts a zeroed or half-built stream. */
void ftchat_release(struct ftchat_stream *s);

/* Feed bytes that arrived at now_ns. Returns 0 (more expected), 1 once [DONE] was seen (later
 * bytes are ignored), -EPROTO for an error object (s->error says what), -EBADMSG for a data
 * event that is not JSON, -EMSGSIZE when a limit was hit, -ENOMEM. Errors are sticky. */
int ftchat_feed(struct ftchat_stream *s, const char *buf, size_t n, uint64_t now_ns);

/* Mean tokens per text event (completion_tokens / events), 0 when unknown. */
double ftchat_tokens_per_event(const struct ftchat_stream *s);
#endif
