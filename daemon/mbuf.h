/* mbuf: a growing NUL-terminated text buffer (buf from malloc, owned by the caller). */
#ifndef FTD_MBUF_H
#define FTD_MBUF_H
#include <stddef.h>

struct ftd_mbuf {
	char *buf;
	size_t len, cap;
};
/* Append printf-style, growing buf; when memory runs out the text is dropped (buf stays valid). */
void ftd_mbuf_cat(struct ftd_mbuf *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* s (NULL: nothing) as HTML text, for element content and quoted attributes alike (& < > " '
 * escaped). Invalid UTF-8 passes through as it is: a page served as UTF-8 shows U+FFFD for it. */
void ftd_mbuf_html(struct ftd_mbuf *m, const char *s);
#endif
