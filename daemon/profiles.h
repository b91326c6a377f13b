/* profiles: the store bw results land in (<profile-dir>/<gpu-uuid>.json, host.json for a
 * GPU-less host) with its history, its listing, the node-feature-discovery file made from it,
 * and the figures /metrics shows from it. The store itself (paths, atomic write, listing) is
 * libftprofile's (src/profile/ftprofile.h). */
#ifndef FTD_PROFILES_H
#define FTD_PROFILES_H
#include <jansson.h>
#include <stddef.h>

#include "mbuf.h"

/* Store a bw result (uuid NULL: the host's); *path_out is a new string. 0 or -errno. */
int ftd_profiles_store(const json_t *profile, const char *uuid, char **path_out);
/* Keep a profile in the history only (the stored one, which engines read, stays). 0 or -errno. */
int ftd_profiles_keep(const json_t *profile, const char *uuid);
json_t *ftd_profiles_list(void);
/* The JSON document of a file of the store (new reference), NULL when it is not a regular file of
 * at most FTPROF_MAX_FILE_BYTES (a FIFO or a huge file is never read) or does not parse. */
json_t *ftd_profiles_load(const char *path);
/* Raw file of profile uuid (new buffer) or -ENOENT / -EINVAL (not a regular file) / -EFBIG (over
 * FTPROF_MAX_FILE_BYTES). */
int ftd_profiles_read(const char *uuid, char **text, size_t *len);
/* Rewrite config nfd-features-file from the stored profiles (nothing when it is unset). 0/-errno. */
int ftd_profiles_nfd_write(void);
/* Call fn for each stored profile (uuid or "host", parsed JSON, path); other files are skipped. */
void ftd_profiles_each(void (*fn)(const char *uuid, json_t *p, const char *path, void *ctx), void *ctx);
/* The kept profiles of uuid ("host": the GPU-less host's), oldest first, the newest limit of them
 * (0: all): a new array, empty when none. */
json_t *ftd_profiles_history(const char *uuid, int limit);
/* Prometheus lines for the last profile per GPU, appended to m. */
void ftd_profiles_metrics(struct ftd_mbuf *m);
#endif
