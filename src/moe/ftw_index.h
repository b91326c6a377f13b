/* ftw_index (internal): the index of an FTW directory, shared by its writer (ftw.c) and reader
 * (ftw_read.c). */
#ifndef FT_MOE_FTW_INDEX_H
#define FT_MOE_FTW_INDEX_H
#include <jansson.h>
#include <stddef.h>

/* The parsed freetoken_weight.json of dir (new reference), or NULL with *rc = -errno and the
 * reason in err (err may be NULL). */
json_t *ftftw_load_index(const char *dir, char *err, size_t errlen, int *rc);
#endif
