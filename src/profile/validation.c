/* libftprofile: the validation record of a profile. See ftprofile.h. */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "ftprofile.h"

const char *ftprof_validation_state_name(enum ftprof_validation_state s)
{
	switch (s) {
	case FTPROF_VALIDATION_CURRENT: return "current";
	case FTPROF_VALIDATION_STALE_PROFILE: return "stale_profile";
	case FTPROF_VALIDATION_STALE_ENGINE: return "stale_engine";
	}
	return "stale_profile";
}

static double num(const json_t *o, const char *k)
{
	const json_t *v = json_object_get(o, k);
	return json_is_number(v) ? json_number_value(v) : NAN;
}

int ftprof_validation(const struct ftprof *p, const char *format, const char *engine_version,
		      struct ftprof_validation *v)
{
	if (!p || !format || !v)
		return -EINVAL;
	memset(v, 0, sizeof *v);
	const json_t *root = ftprof_json(p);
	const json_t *all = json_object_get(root, "validation");
	const json_t *e = json_object_get(all, format);
	if (!json_is_object(e)) {
		const char *canon = ftprof_canonical_format(format);
		e = canon ? json_object_get(all, canon) : NULL;
	}
	const char *winner = json_string_value(json_object_get(e, "winner"));
	if (!json_is_object(e) || !winner)
		return -ENODATA;
	const json_t *eng = json_object_get(e, "engine");
	v->source = json_string_value(json_object_get(e, "source"));
	v->engine_name = json_string_value(json_object_get(eng, "name"));
	v->engine_version = json_string_value(json_object_get(eng, "version"));
	v->winner = winner;
	v->best_fetch_fraction = num(e, "best_fetch_fraction");
	const json_t *ag = json_object_get(e, "agrees");
	v->agrees = json_is_boolean(ag) ? json_is_true(ag) : -1;
	v->measured_epoch = num(e, "measured_epoch");
	v->profile_epoch = num(e, "profile_epoch");
	double epoch = num(root, "epoch");
	if (isnan(v->measured_epoch) || isnan(v->profile_epoch) || isnan(epoch) || v->measured_epoch < epoch ||
	    v->profile_epoch != epoch)
		v->state = FTPROF_VALIDATION_STALE_PROFILE;
	else if (engine_version && (!v->engine_version || strcmp(engine_version, v->engine_version)))
		v->state = FTPROF_VALIDATION_STALE_ENGINE;
	else
		v->state = FTPROF_VALIDATION_CURRENT;
	return 0;
}
