/* models: the geometry catalogue of reference §2. Static tables; nothing allocates. */
#ifndef FT_MOE_MODELS_H
#define FT_MOE_MODELS_H
#include "moe/formats.h"

struct ftmodel {
	const char *name;
	int layers;            /* MoE layers (0 where only a workload shape is known) */
	int experts, topk;
	long hidden, inter;
	enum ftfmt_id format;  /* the format the model ships in (first of formats[]) */
	enum ftfmt_act act;
	float swiglu_limit;    /* gpt-oss swiglu clamp; 0 otherwise */
	int nformats;
	enum ftfmt_id formats[4]; /* bw --model: the formats measured for it */
};

/* Cache-copy profiles (reference §2, first table). */
extern const struct ftmodel ftmodel_cache_profiles[];
extern const int ftmodel_cache_profiles_count;
/* bw per-format workloads, one per format with a bw workload (`bw --dtype`). */
extern const struct ftmodel ftmodel_bw_dtypes[];
extern const int ftmodel_bw_dtypes_count;
/* bw --model workloads. */
extern const struct ftmodel ftmodel_bw_models[];
extern const int ftmodel_bw_models_count;

/* Find by name in one table (case-sensitive); NULL when absent. */
const struct ftmodel *ftmodel_find(const struct ftmodel *table, int n, const char *name);
/* The bw --dtype workload of a format, or NULL. */
const struct ftmodel *ftmodel_bw_dtype(enum ftfmt_id f);
#endif
