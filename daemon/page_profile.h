/* page_profile: a GPU's profile drawn for the status page (page.h) in HTML and inline SVG: per
 * format the CPU MoE and PCIe gather bars with their spread, the threshold line, the verdict and
 * fetch fraction; the ceilings; the replay's points; the history of the main figures (from the
 * profile store); stale and invalid profiles marked. Appends to m. */
#ifndef FTD_PAGE_PROFILE_H
#define FTD_PAGE_PROFILE_H
#include <jansson.h>

#include "mbuf.h"

/* The profile p of the GPU uuid ("host" for the CPU half) as a <details> element, open or not. */
void ftd_page_profile(struct ftd_mbuf *m, const char *uuid, const json_t *p, int open);
/* A GPU's short label: "#index" and the uuid's first group (the whole uuid in its title), or "host". */
void ftd_page_gpu_label(struct ftd_mbuf *m, const char *uuid, const json_t *p);
/* o's number at k, or NAN; o's string at k, or NULL (borrowed). */
double ftd_page_num(const json_t *o, const char *k);
const char *ftd_page_str(const json_t *o, const char *k);
#endif
