/* chat: what an OpenAI-style streamed chat completion says, event by event.
 *
 * Feed it the raw bytes of a /v1/chat/completions (or /v1/completions) response with stream:true,
 * each run with the time it arrived. It records every token chunk with its arrival time: a
 * chunk whose choice has a string delta.content / delta.reasoning_content / delta.reasoning (or
 * choices[].text), empty or not (a server that holds back the bytes of an unfinished character
 * still sends one chunk per decode step). Not token chunks: the role announcement (delta.role
 * with no text: {"role":"assistant"}, {"role":"assistant","content":null} or "content":""),
 * a closing chunk with no text and a finish_reason, and usage-only chunks. Each event says how
 * many text bytes it carried and, when the chunk also carries cumulative usage (continuous
 * usage stats), how many tokens it added. It keeps the final usage (prompt_tokens,
 * completion_tokens) from the usage chunk, which may carry no choices at all, and the server's
 * own timings when it sends them (llama.cpp's "timings"); notices [DONE]; and turns an error
 * object ({"error":...} or an "error" event) into a failure with the server's message.
 *
 * Memory is bounded by the limits (text bytes, events, SSE line/event size). */
#ifndef FT_DECODE_CHAT_H
#define FT_DECODE_CHAT_H
#include <stddef.h>
#include <stdint.h>

#include "util/sse.h"

struct ftchat_event {
	uint64_t t_ns;   /* arrival time of the bytes that completed the event */
	int tokens;      /* tokens it added when the server said (cumulative usage), else -1 */
	uint32_t bytes;  /* text bytes it carried (0: an empty token chunk) */
};

/* llama.cpp's per-request "timings" (the last seen); have = 0 when none came. */
struct ftchat_timings {
	int have;
	double cache_n;  /* prompt tokens taken from the prefix cache (-1: not said) */
	double prompt_n, prompt_ms, prompt_per_second, predicted_n, predicted_ms, predicted_per_second;
};

struct ftchat_limits {
	size_t max_text;    /* default 16 MiB */
	size_t max_events;  /* default 1M */
	size_t max_line;    /* SSE line, default FTSSE_DEFAULT_MAX_LINE */
	size_t max_event;   /* SSE event data, default FTSSE_DEFAULT_MAX_EVENT */
};

struct ftchat_stream {
	struct ftchat_event *ev;  /* owned; nev entries: every token chunk */
	size_t nev, cap;
	size_t ntext;             /* events that carried text (bytes > 0) */
	char *text;               /* owned; reasoning and content text in arrival order, NUL-terminated */
	size_t text_len, text_cap;
	long prompt_tokens;       /* from the last usage seen, -1 when none */
	long completion_tokens;   /* idem */
	int done;                 /* [DONE] seen */
	int failed;               /* an error object arrived: message in error */
	char error[512];
	char finish_reason[32];
	size_t chunks;            /* data events parsed as JSON */
	int saw_usage;            /* a usage object with completion_tokens arrived */
	struct ftchat_timings timings;
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

/* Mean tokens per text event (completion_tokens / text events), 0 when unknown. */
double ftchat_tokens_per_event(const struct ftchat_stream *s);
#endif
