/* ftload_model: a model directory (FTW or safetensors checkpoint) to banks. It sits above both
 * readers so that the loader (moe/loader.c) and the FTW format (moe/ftw.c, which loads its
 * source banks through the loader) do not depend on each other. */
#include "moe/ftw.h"
#include "moe/loader.h"
#include "moe/safetensors.h"

int ftload_model(const char *dir, const struct ftload_opts *o, struct ftbanks **out, struct ftload_stats *st,
		 char *err, size_t errlen)
{
	*out = NULL;
	if (ftftw_is_dir(dir))
		return ftftw_load(dir, o, out, st, err, errlen);
	struct ftbanks_geom g;
	struct ftst_model *m = NULL;
	struct ftbanks_plan *p = NULL;
	int rc = ftbanks_read_config(dir, &g, err, errlen);
	if (rc < 0)
		return rc;
	if ((rc = ftst_model_open(dir, &m, err, errlen)) < 0)
		return rc;
	if ((rc = ftbanks_discover(m, &g, &p, err, errlen)) == 0)
		rc = ftload_plan(p, o, out, st, err, errlen);
	ftbanks_plan_free(p);
	ftst_model_free(m);
	return rc;
}
