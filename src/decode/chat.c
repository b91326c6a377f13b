#include "decode/chat.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/strutil.h"

static int add_text(struct ftchat_stream *s, const char *t, size_t n)
{
	if (n > s->lim.max_text || s->text_len > s->lim.max_text - n)
		return -EMSGSIZE;
	if (s->text_len + n + 1 > s->text_cap) {
		size_t cap = s->text_cap ? s->text_cap : 4096;
		while (cap < s->text_len + n + 1)
			cap *= 2;
		char *q = realloc(s->text, cap);
		if (!q)
			return -ENOMEM;
		s->text = q;
		s->text_cap = cap;
	}
	memcpy(s->text + s->text_len, t, n);
	s->text_len += n;
	s->text[s->text_len] = '\0';
	return 0;
}

static int add_event(struct ftchat_stream *s, int tokens, size_t bytes)
{
	if (s->nev >= s->lim.max_events)
		return -EMSGSIZE;
	if (s->nev == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 512;
		struct ftchat_event *q = realloc(s->ev, cap * sizeof *q);
		if (!q)
			return -ENOMEM;
		s->ev = q;
		s->cap = cap;
	}
	s->ev[s->nev++] = (struct ftchat_event){s->now_ns, tokens, (uint32_t)(bytes > UINT32_MAX ? UINT32_MAX : bytes)};
	if (bytes)
		s->ntext++;
	if (tokens > 1)
		s->multi_token_events++;
	return 0;
}

static int fail(struct ftchat_stream *s, const char *msg, size_t n)
{
	if (n >= sizeof s->error)
		n = sizeof s->error - 1;
	memcpy(s->error, msg, n);
	s->error[n] = '\0';
	s->failed = 1;
	return -EPROTO;
}

/* {"error": {"message": "...", ...}} or {"error": "..."} or {"object":"error","message":..} */
static int error_object(struct ftchat_stream *s, json_t *j)
{
	json_t *e = json_object_get(j, "error");
	const char *obj = json_string_value(json_object_get(j, "object"));
	if (!e && !(obj && !strcmp(obj, "error")))
		return 0;
	if (!e || json_is_null(e))
		e = j;
	const char *m = json_is_string(e) ? json_string_value(e) : json_string_value(json_object_get(e, "message"));
	if (m)
		return fail(s, m, strlen(m));
	char *d = json_dumps(e, JSON_COMPACT);
	int r = fail(s, d ? d : "error object", d ? strlen(d) : 12);
	free(d);
	return r;
}

/* 1 when o[key] is a string (t, n: its text, possibly empty), else 0. */
static int text_of(json_t *o, const char *key, const char **t, size_t *n)
{
	json_t *v = json_object_get(o, key);
	if (!json_is_string(v))
		return 0;
	*t = json_string_value(v);
	*n = json_string_length(v);
	return 1;
}

static void take_timings(struct ftchat_stream *s, json_t *t)
{
	if (!json_is_object(t))
		return;
	struct {
		const char *k;
		double *v;
	} f[] = {{"cache_n", &s->timings.cache_n}, {"prompt_n", &s->timings.prompt_n}, {"prompt_ms", &s->timings.prompt_ms},
		 {"prompt_per_second", &s->timings.prompt_per_second}, {"predicted_n", &s->timings.predicted_n},
		 {"predicted_ms", &s->timings.predicted_ms},
		 {"predicted_per_second", &s->timings.predicted_per_second}};
	for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
		json_t *v = json_object_get(t, f[i].k);
		if (json_is_number(v)) {
			*f[i].v = json_number_value(v);
			s->timings.have = 1;
		}
	}
}

static int on_event(void *ctx, const struct ftsse_event *ev)
{
	struct ftchat_stream *s = ctx;
	const char *d = ev->data;
	size_t dl = ev->data_len;
	while (dl && (d[dl - 1] == ' ' || d[dl - 1] == '\t'))
		dl--;
	while (dl && (*d == ' ' || *d == '\t')) {
		d++;
		dl--;
	}
	if (dl == 6 && !memcmp(d, "[DONE]", 6)) {
		s->done = 1;
		return 1;
	}
	if (!strcmp(ev->type, "error"))
		return fail(s, d, dl);
	if (dl == 0)
		return 0; /* an empty data line: nothing to say */
	json_error_t jerr;
	json_t *j = json_loadb(d, dl, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
	if (!j || !json_is_object(j)) {
		json_decref(j);
		snprintf(s->error, sizeof s->error, "malformed stream chunk: %.200s", d);
		s->failed = 1;
		return -EBADMSG;
	}
	s->chunks++;
	int r = error_object(s, j);
	if (r)
		goto out;
	/* usage: the last chunk (stream_options.include_usage), or every chunk (continuous stats) */
	long cum = -1;
	json_t *u = json_object_get(j, "usage");
	if (json_is_object(u)) {
		json_t *pt = json_object_get(u, "prompt_tokens"), *ct = json_object_get(u, "completion_tokens");
		if (json_is_integer(pt))
			s->prompt_tokens = (long)json_integer_value(pt);
		if (json_is_integer(ct)) {
			s->completion_tokens = cum = (long)json_integer_value(ct);
			s->saw_usage = 1;
		}
	}
	take_timings(s, json_object_get(j, "timings"));
	size_t bytes = 0;
	int token = 0;
	json_t *choices = json_object_get(j, "choices");
	size_t i;
	json_t *c;
	json_array_foreach(choices, i, c) {
		json_t *delta = json_object_get(c, "delta");
		const char *t;
		size_t n, cb = 0;
		int has = 0;
		const char *keys[] = {"reasoning_content", "reasoning", "content"};
		for (size_t k = 0; k < 3 && json_is_object(delta); k++)
			if (text_of(delta, keys[k], &t, &n)) {
				has = 1;
				if (n && (r = add_text(s, t, n)))
					goto out;
				cb += n;
			}
		if (text_of(c, "text", &t, &n)) {
			has = 1;
			if (n && (r = add_text(s, t, n)))
				goto out;
			cb += n;
		}
		const char *fr = json_string_value(json_object_get(c, "finish_reason"));
		if (fr)
			ftstr_copy(s->finish_reason, sizeof s->finish_reason, fr);
		/* an empty chunk is a decode step, unless it announces the role or closes the stream */
		if (has && (cb || !(fr || (json_is_object(delta) && json_object_get(delta, "role")))))
			token = 1;
		bytes += cb;
	}
	if (token) {
		int tokens = -1;
		if (cum >= 0 && cum >= s->cum_tokens && cum - s->cum_tokens < (1L << 30))
			tokens = (int)(cum - s->cum_tokens);
		r = add_event(s, tokens, bytes);
	}
	if (cum >= 0)
		s->cum_tokens = cum;
out:
	json_decref(j);
	return r;
}

int ftchat_init(struct ftchat_stream *s, const struct ftchat_limits *lim)
{
	memset(s, 0, sizeof *s);
	if (lim)
		s->lim = *lim;
	if (!s->lim.max_text)
		s->lim.max_text = 16u << 20;
	if (!s->lim.max_events)
		s->lim.max_events = 1u << 20;
	s->prompt_tokens = s->completion_tokens = -1;
	s->timings.cache_n = -1;
	s->sse = ftsse_new(s->lim.max_line, s->lim.max_event, on_event, s);
	return s->sse ? 0 : -ENOMEM;
}

void ftchat_release(struct ftchat_stream *s)
{
	if (!s)
		return;
	ftsse_free(s->sse);
	free(s->ev);
	free(s->text);
	memset(s, 0, sizeof *s);
}

int ftchat_feed(struct ftchat_stream *s, const char *buf, size_t n, uint64_t now_ns)
{
	if (s->done)
		return 1;
	s->now_ns = now_ns;
	return ftsse_feed(s->sse, buf, n);
}

double ftchat_tokens_per_event(const struct ftchat_stream *s)
{
	if (s->ntext == 0 || s->completion_tokens <= 0)
		return 0.0;
	return (double)s->completion_tokens / (double)s->ntext;
}
