/* profiles: the store bw results land in (<profile-dir>/<gpu-uuid>.json, host.json for a
 * GPU-less host) with its history, its listing, the node-feature-discovery file made from it,
 * and the figures /metrics shows from it. The store itself (paths, atomic write, listing) is
 * libftprofile's (src/profile/ftprofile.h). */
#ifndef FTD_PROFILES_H
#define FTD_PROFILES_H
#include <jansson.h>
#include <stddef.h>

#include "mbuf.h"

/* Settle a bw profile in the store by libftprofile's rule (uuid NULL: the host's): 0 stored,
 * FTPROF_KEPT_INVALID (not valid: in the history only, the stored one stays), or -errno;
 * *path_out is a new string (the GPU's store file) unless -errno. */
int ftd_profiles_store(const json_t *profile, const char *uuid, char **path_out);
/* The legacy single file after a profile was stored at stored (config bw-legacy-copy; the host's
 * GPUs: the inventory): 0 (msg: what was done, "" nothing to say), or -errno (msg says it). */
int ftd_profiles_legacy(const json_t *profile, const char *stored, char *msg, size_t n);
/* {"dir", "profiles": [{uuid, path, timestamp, gpu_name, dtypes}]}; a stored file that is not a
 * profile is listed with "corrupt" saying why. */
json_t *ftd_profiles_list(void);
/* The JSON document of a file of the store (new reference), NULL when it is not a regular file of
 * at most FTPROF_MAX_FILE_BYTES (a FIFO or a huge file is never read) or does not parse. */
json_t *ftd_profiles_load(const char *path);
/* 1 when text is not a profile file (not JSON, or not an object), why saying so; else 0. */
int ftd_profiles_corrupt(const char *text, size_t len, char *why, size_t n);
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
