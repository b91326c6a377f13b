/* sampling: the sampling parameters sent with every request (reference §8).
 *
 * From the checkpoint's generation_config.json (temperature, top_p, top_k, do_sample), each
 * missing field from the fallbacks temperature 1.0, top_p 0.95, top_k 64. do_sample false or
 * temperature 0 means greedy (temperature 0, top_p 1, top_k -1); HF's top_k 0 ("off") is the
 * API's -1; force_greedy (--greedy) gives greedy whatever the file says. They are sent
 * explicitly because a server's defaults for unspecified fields are greedy. */
#ifndef FT_DECODE_SAMPLING_H
#define FT_DECODE_SAMPLING_H
#include <stddef.h>

#include <jansson.h>

#define FTSAMPLING_FALLBACK_TEMPERATURE 1.0
#define FTSAMPLING_FALLBACK_TOP_P 0.95
#define FTSAMPLING_FALLBACK_TOP_K 64

struct ftsampling {
	double temperature, top_p;
	long top_k;
	int greedy;
	char source[96]; /* "generation_config.json", "generation_config.json+fallback", "fallback", "--greedy" */
};

/* Resolve for model_dir (may be NULL or not a directory: fallbacks). A generation_config.json
 * that exists but is not valid JSON is an error: -EBADMSG with err set. */
int ftsampling_resolve(const char *model_dir, int force_greedy, struct ftsampling *out, char *err, size_t errlen);

/* {"temperature","top_p","top_k","greedy","source"}: a new reference. */
json_t *ftsampling_json(const struct ftsampling *s);
#endif
