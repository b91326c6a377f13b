/* page: the status page at `/` (HTML + inline SVG, rendered from the daemon's state and the
 * profile store) and the token page an unauthorised browser gets instead. Both append to m. */
#ifndef FTD_PAGE_H
#define FTD_PAGE_H
#include "mbuf.h"
/* Takes ftd.lock itself: call without it. */
void ftd_page_render(struct ftd_mbuf *m);
void ftd_page_login(struct ftd_mbuf *m);
#endif
