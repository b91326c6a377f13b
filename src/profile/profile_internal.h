/* Shared by the files of libftprofile; not installed, not exported (the .so exports ftprof_*). */
#ifndef FT_PROFILE_INTERNAL_H
#define FT_PROFILE_INTERNAL_H
#include <jansson.h>
#include <stddef.h>

/* The JSON document of path (new reference), NULL when it is not a regular file of at most
 * FTPROF_MAX_FILE_BYTES or does not parse: a FIFO or a huge file in a store is skipped. */
json_t *ftprofint_load_json(const char *path);

/* $XDG_CACHE_HOME, or ~/.cache; 0 or -errno. */
int ftprofint_cache_home(char *buf, size_t n);
/* dir/<uuid>.json, or dir/host.json when uuid is NULL or ""; -EINVAL for an unsafe uuid. */
int ftprofint_file_in(const char *dir, const char *gpu_uuid, char *buf, size_t n);
/* 1 when u is a plain file-name part: [A-Za-z0-9._:-], not starting with '.', 1..100 chars. */
int ftprofint_valid_uuid(const char *u);
/* u without a leading "GPU-" (any case); equality of two uuids ignoring case and that prefix. */
const char *ftprofint_uuid_body(const char *u);
int ftprofint_uuid_equal(const char *a, const char *b);
#endif
