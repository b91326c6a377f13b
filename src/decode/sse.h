/* sse: an incremental parser for text/event-stream (the WHATWG "server-sent events" rules),
 * fed with whatever byte runs the transport delivers.
 *
 * - Lines end in CRLF, LF or a lone CR, also when the CR and LF arrive in different reads.
 * - A leading UTF-8 BOM is skipped. Lines starting with ':' are comments (keep-alives).
 * - Fields: "event" sets the type, "data" lines are joined with '\n', "id" and "retry" are kept;
 *   one space after the colon is removed; unknown fields are ignored.
 * - A blank line dispatches the event (only when some data line was seen); an unterminated
 *   event at the end of the stream is dropped, as the standard says.
 * - Memory is bounded: a line longer than max_line or an event whose data exceeds max_event
 *   makes ftsse_feed fail with -EMSGSIZE; nothing grows beyond those limits.
 *
 * Errors are sticky: after a feed returned non-zero every later feed returns the same value. */
#ifndef FT_DECODE_SSE_H
#define FT_DECODE_SSE_H
#include <stddef.h>

#define FTSSE_DEFAULT_MAX_LINE (4u << 20)
#define FTSSE_DEFAULT_MAX_EVENT (8u << 20)

struct ftsse_event {
	const char *type;  /* "message" unless an event: field said otherwise; borrowed */
	const char *data;  /* the data lines joined by '\n', NUL-terminated; borrowed */
	size_t data_len;
	const char *id;    /* last event id ("" when none); borrowed */
};

/* Called once per dispatched event; the event is only valid during the call. A non-zero
 * return stops the parser and is returned by ftsse_feed (use > 0 for "done", < 0 for errors). */
typedef int (*ftsse_cb)(void *ctx, const struct ftsse_event *ev);

struct ftsse_parser;

/* New parser; 0 for a limit means the default. NULL on allocation failure. */
struct ftsse_parser *ftsse_new(size_t max_line, size_t max_event, ftsse_cb cb, void *ctx);
/* Free; accepts NULL. */
void ftsse_free(struct ftsse_parser *p);

/* Feed n bytes. Returns 0, the callback's non-zero value, or -EMSGSIZE / -ENOMEM. */
int ftsse_feed(struct ftsse_parser *p, const char *buf, size_t n);

/* Counters for reports and tests. */
struct ftsse_counts {
	size_t events;    /* dispatched */
	size_t comments;  /* comment lines (keep-alives) */
	size_t lines;
	size_t bytes;
	long retry_ms;    /* last retry: value, -1 when none */
};
void ftsse_counts(const struct ftsse_parser *p, struct ftsse_counts *out);
/* Bytes held for an unterminated line or event (0 after a clean end of stream). */
size_t ftsse_pending(const struct ftsse_parser *p);
#endif
