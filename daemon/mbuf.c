/* mbuf: see mbuf.h. */
#include "mbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void ftd_mbuf_cat(struct ftd_mbuf *m, const char *fmt, ...)
{
	va_list ap;
	for (;;) {
		va_start(ap, fmt);
		int w = vsnprintf(m->buf + m->len, m->cap - m->len, fmt, ap);
		va_end(ap);
		if (w < 0)
			return;
		if ((size_t)w < m->cap - m->len) {
			m->len += (size_t)w;
			return;
		}
		size_t nc = (m->cap + (size_t)w + 1) * 2;
		char *n = realloc(m->buf, nc);
		if (!n)
			return;
		m->buf = n;
		m->cap = nc;
	}
}

void ftd_mbuf_html(struct ftd_mbuf *m, const char *s)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '&': ftd_mbuf_cat(m, "&amp;"); break;
		case '<': ftd_mbuf_cat(m, "&lt;"); break;
		case '>': ftd_mbuf_cat(m, "&gt;"); break;
		case '"': ftd_mbuf_cat(m, "&quot;"); break;
		case '\'': ftd_mbuf_cat(m, "&#39;"); break;
		default: ftd_mbuf_cat(m, "%c", *s);
		}
	}
}
