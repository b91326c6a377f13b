#include "decode/sse.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct buf {
	char *p;
	size_t len, cap;
};

struct ftsse_parser {
	size_t max_line, max_event;
	ftsse_cb cb;
	void *ctx;
	struct buf line, data, type, id;
	int data_seen;     /* a data: line in the current event */
	int cr_pending;    /* the last byte seen was a CR ending a line */
	int bom_pos;       /* BOM bytes matched at the start; 3 or -1 once past the start */
	int err;           /* sticky result */
	struct ftsse_counts n;
};

static const unsigned char bom[3] = {0xEF, 0xBB, 0xBF};

/* Append s[0..n) keeping room for a NUL; -EMSGSIZE past max. */
static int buf_add(struct buf *b, const char *s, size_t n, size_t max)
{
	if (n > max || b->len > max - n)
		return -EMSGSIZE;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->len + n + 1)
			cap *= 2;
		if (cap > max + 1)
			cap = max + 1;
		char *q = realloc(b->p, cap);
		if (!q)
			return -ENOMEM;
		b->p = q;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

static void buf_free(struct buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

/* Give back memory an unusually large event took, so a long stream stays small. */
static void buf_reset(struct buf *b)
{
	b->len = 0;
	if (b->p)
		b->p[0] = '\0';
	if (b->cap > 65536)
		buf_free(b);
}

struct ftsse_parser *ftsse_new(size_t max_line, size_t max_event, ftsse_cb cb, void *ctx)
{
	struct ftsse_parser *p = calloc(1, sizeof *p);
	if (!p)
		return NULL;
	p->max_line = max_line ? max_line : FTSSE_DEFAULT_MAX_LINE;
	p->max_event = max_event ? max_event : FTSSE_DEFAULT_MAX_EVENT;
	p->cb = cb;
	p->ctx = ctx;
	p->n.retry_ms = -1;
	return p;
}

void ftsse_free(struct ftsse_parser *p)
{
	if (!p)
		return;
	buf_free(&p->line);
	buf_free(&p->data);
	buf_free(&p->type);
	buf_free(&p->id);
	free(p);
}

static int dispatch(struct ftsse_parser *p)
{
	int r = 0;
	if (p->data_seen) {
		/* the data buffer ends in the '\n' added after the last data line: drop it */
		if (p->data.len && p->data.p[p->data.len - 1] == '\n')
			p->data.p[--p->data.len] = '\0';
		struct ftsse_event ev = {
			.type = p->type.len ? p->type.p : "message",
			.data = p->data.p ? p->data.p : "",
			.data_len = p->data.len,
			.id = p->id.p ? p->id.p : "",
		};
		p->n.events++;
		if (p->cb)
			r = p->cb(p->ctx, &ev);
	}
	buf_reset(&p->data);
	buf_reset(&p->type);
	p->data_seen = 0;
	return r;
}

static int field(const char *name, size_t nl, const char *want)
{
	return strlen(want) == nl && !memcmp(name, want, nl);
}

static int process_line(struct ftsse_parser *p, const char *s, size_t n)
{
	p->n.lines++;
	if (n == 0)
		return dispatch(p);
	if (s[0] == ':') {
		p->n.comments++;
		return 0;
	}
	const char *colon = memchr(s, ':', n);
	size_t nl = colon ? (size_t)(colon - s) : n;
	const char *v = colon ? colon + 1 : s + n;
	size_t vl = (size_t)(s + n - v);
	if (vl && *v == ' ') {
		v++;
		vl--;
	}
	int r = 0;
	if (field(s, nl, "data")) {
		r = buf_add(&p->data, v, vl, p->max_event);
		if (!r)
			r = buf_add(&p->data, "\n", 1, p->max_event);
		p->data_seen = 1;
	} else if (field(s, nl, "event")) {
		p->type.len = 0;
		r = buf_add(&p->type, v, vl, p->max_line);
	} else if (field(s, nl, "id")) {
		if (!memchr(v, '\0', vl)) {
			p->id.len = 0;
			r = buf_add(&p->id, v, vl, p->max_line);
		}
	} else if (field(s, nl, "retry")) {
		long ms = 0;
		size_t i;
		for (i = 0; i < vl && v[i] >= '0' && v[i] <= '9' && ms < 100000000; i++)
			ms = ms * 10 + (v[i] - '0');
		if (vl && i == vl)
			p->n.retry_ms = ms;
	}
	return r;
}

int ftsse_feed(struct ftsse_parser *p, const char *buf, size_t n)
{
	if (p->err)
		return p->err;
	p->n.bytes += n;
	const char *s = buf, *end = buf + n;
	/* a BOM may only stand at the very start of the stream, and may be split across reads */
	while (p->bom_pos >= 0 && p->bom_pos < 3 && s < end) {
		if ((unsigned char)*s == bom[p->bom_pos]) {
			p->bom_pos++;
			s++;
			continue;
		}
		/* not a BOM after all: what matched so far is ordinary text */
		int m = p->bom_pos;
		p->bom_pos = -1;
		if (m && (p->err = buf_add(&p->line, (const char *)bom, (size_t)m, p->max_line)))
			return p->err;
	}
	if (p->bom_pos == 3 || (p->bom_pos > 0 && s < end))
		p->bom_pos = -1;
	while (s < end) {
		if (p->cr_pending) {
			p->cr_pending = 0;
			if (*s == '\n') {
				s++;
				continue;
			}
		}
		const char *e = s;
		while (e < end && *e != '\n' && *e != '\r')
			e++;
		if (e == end) {
			if ((p->err = buf_add(&p->line, s, (size_t)(e - s), p->max_line)))
				return p->err;
			break;
		}
		int r;
		if (p->line.len) {
			if ((p->err = buf_add(&p->line, s, (size_t)(e - s), p->max_line)))
				return p->err;
			r = process_line(p, p->line.p, p->line.len);
			buf_reset(&p->line);
		} else {
			if ((size_t)(e - s) > p->max_line)
				return p->err = -EMSGSIZE;
			r = process_line(p, s, (size_t)(e - s));
		}
		if (*e == '\r')
			p->cr_pending = 1;
		s = e + 1;
		if (r)
			return p->err = r;
	}
	return 0;
}

void ftsse_counts(const struct ftsse_parser *p, struct ftsse_counts *out)
{
	*out = p->n;
}

size_t ftsse_pending(const struct ftsse_parser *p)
{
	return p->line.len + p->data.len + (p->data_seen ? 1 : 0);
}
