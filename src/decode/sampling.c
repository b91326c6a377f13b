#include "decode/sampling.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/fsutil.h"

static void set_greedy(struct ftsampling *s)
{
	s->temperature = 0.0;
	s->top_p = 1.0;
	s->top_k = -1;
	s->greedy = 1;
}

int ftsampling_resolve(const char *model_dir, int force_greedy, struct ftsampling *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof *out);
	out->temperature = FTSAMPLING_FALLBACK_TEMPERATURE;
	out->top_p = FTSAMPLING_FALLBACK_TOP_P;
	out->top_k = FTSAMPLING_FALLBACK_TOP_K;
	snprintf(out->source, sizeof out->source, "fallback");
	if (force_greedy) {
		set_greedy(out);
		snprintf(out->source, sizeof out->source, "--greedy");
		return 0;
	}
	if (!model_dir)
		return 0;
	char path[4096];
	snprintf(path, sizeof path, "%s/generation_config.json", model_dir);
	char *data = NULL;
	size_t len;
	int r = ftfs_read_file(path, 1u << 20, &data, &len);
	if (r == -ENOENT || r == -ENOTDIR)
		return 0;
	if (r < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(-r));
		return r;
	}
	json_error_t je;
	json_t *j = json_loads(data, 0, &je);
	free(data);
	if (!json_is_object(j)) {
		snprintf(err, errlen, "%s: not a JSON object (%s)", path, je.text);
		json_decref(j);
		return -EBADMSG;
	}
	int found = 0, missing = 0;
	json_t *t = json_object_get(j, "temperature"), *p = json_object_get(j, "top_p"),
	       *k = json_object_get(j, "top_k"), *ds = json_object_get(j, "do_sample");
	if (json_is_number(t))
		out->temperature = json_number_value(t), found++;
	else
		missing++;
	if (json_is_number(p))
		out->top_p = json_number_value(p), found++;
	else
		missing++;
	if (json_is_integer(k))
		out->top_k = (long)json_integer_value(k), found++;
	else
		missing++;
	if (out->top_k == 0)
		out->top_k = -1; /* HF: 0 = no top-k filter; the API says -1 */
	snprintf(out->source, sizeof out->source, "%s",
		 !found ? "fallback" : missing ? "generation_config.json+fallback" : "generation_config.json");
	if (json_is_false(ds) || out->temperature == 0.0) {
		set_greedy(out);
		snprintf(out->source, sizeof out->source, "generation_config.json (%s)",
			 json_is_false(ds) ? "do_sample false" : "temperature 0");
	}
	json_decref(j);
	return 0;
}

json_t *ftsampling_json(const struct ftsampling *s)
{
	return json_pack("{s:f,s:f,s:I,s:b,s:s}", "temperature", s->temperature, "top_p", s->top_p, "top_k",
			 (json_int_t)s->top_k, "greedy", s->greedy, "source", s->source);
}
