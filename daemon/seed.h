/* seed: the seed daemon's routes beside ours (reference §9), so that its desktop app can drive
 * ftbenchd: POST /bench/run {"args":[ft bench bw flags]} becomes a bw job on the same queue and
 * scheduler, answered by the seed's event stream (api.h: ftd_api_stream_seed); GET
 * /bench/profile answers the stored profile of the GPU the request names (?gpu=), else of the
 * first, or null. Their errors are the seed's {"detail": "..."}. Handlers take ftd.lock
 * themselves: call without it. */
#ifndef FTD_SEED_H
#define FTD_SEED_H
#include <jansson.h>

#include "api.h"

void ftd_seed_run(const struct ftd_api_req *rq, struct ftd_api_reply *rp);
void ftd_seed_profile(const struct ftd_api_req *rq, struct ftd_api_reply *rp);

/* The seed's error body {"detail": msg} (new reference; NULL without memory). */
json_t *ftd_seed_detail(const char *msg);

/* The `ft bench bw` flags of args (a JSON array of strings) as a bw job's args object, added to
 * obj, by the job's argument table: 0, or -1 with err naming the flag that cannot be taken. */
int ftd_seed_args(const json_t *args, json_t *obj, char *err, size_t n);
#endif
