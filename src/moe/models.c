#include "moe/models.h"

#include <string.h>

#define ONE(f) 1, {f}

const struct ftmodel ftmodel_cache_profiles[] = {
	{"qwen3.5-35B", 40, 256, 8, 2048, 512, FTFMT_BF16, FTFMT_ACT_SILU, 0, ONE(FTFMT_BF16)},
	{"qwen3-30B", 48, 128, 8, 2048, 768, FTFMT_BF16, FTFMT_ACT_SILU, 0, ONE(FTFMT_BF16)},
	{"gemma4-26B", 30, 128, 8, 2816, 704, FTFMT_BF16, FTFMT_ACT_GELU_TANH, 0, ONE(FTFMT_BF16)},
	{"minimax-m2.5-marlin", 62, 256, 8, 3072, 1536, FTFMT_NVFP4_MARLIN, FTFMT_ACT_SILU, 0, ONE(FTFMT_NVFP4_MARLIN)},
	{"minimax-m2.5-triton", 62, 256, 8, 3072, 1536, FTFMT_NVFP4, FTFMT_ACT_SILU, 0, ONE(FTFMT_NVFP4)},
	{"glm4.7-nvfp4", 89, 160, 8, 5120, 1536, FTFMT_NVFP4, FTFMT_ACT_SILU, 0, ONE(FTFMT_NVFP4)},
	{"gpt-oss-20b", 24, 32, 4, 2880, 2880, FTFMT_MXFP4_TRITON, FTFMT_ACT_SWIGLU_OAI, 7.0f, ONE(FTFMT_MXFP4_TRITON)},
	{"gpt-oss-120b", 36, 128, 4, 2880, 2880, FTFMT_MXFP4_TRITON, FTFMT_ACT_SWIGLU_OAI, 7.0f, ONE(FTFMT_MXFP4_TRITON)},
};
const int ftmodel_cache_profiles_count = sizeof ftmodel_cache_profiles / sizeof ftmodel_cache_profiles[0];

const struct ftmodel ftmodel_bw_dtypes[] = {
	{"bf16", 0, 128, 8, 2048, 768, FTFMT_BF16, FTFMT_ACT_SILU, 0, ONE(FTFMT_BF16)},
	{"nvfp4", 0, 128, 8, 3072, 1536, FTFMT_NVFP4, FTFMT_ACT_SILU, 0, ONE(FTFMT_NVFP4)},
	{"fp8_block", 0, 128, 8, 2048, 512, FTFMT_FP8_BLOCK, FTFMT_ACT_SILU, 0, ONE(FTFMT_FP8_BLOCK)},
	{"mxfp4_triton", 0, 128, 4, 2880, 2880, FTFMT_MXFP4_TRITON, FTFMT_ACT_SWIGLU_OAI, 7.0f, ONE(FTFMT_MXFP4_TRITON)},
	{"ds_fp4", 0, 128, 6, 4096, 2048, FTFMT_DS_FP4, FTFMT_ACT_SILU, 0, ONE(FTFMT_DS_FP4)},
};
const int ftmodel_bw_dtypes_count = sizeof ftmodel_bw_dtypes / sizeof ftmodel_bw_dtypes[0];

const struct ftmodel ftmodel_bw_models[] = {
	{"qwen3.6-moe", 0, 256, 8, 2048, 512, FTFMT_BF16, FTFMT_ACT_SILU, 0, 3, {FTFMT_BF16, FTFMT_NVFP4, FTFMT_FP8_BLOCK}},
	{"qwen3-30b", 0, 128, 8, 2048, 768, FTFMT_BF16, FTFMT_ACT_SILU, 0, ONE(FTFMT_BF16)},
	{"gemma4-26b", 0, 128, 8, 2816, 704, FTFMT_BF16, FTFMT_ACT_GELU_TANH, 0, ONE(FTFMT_BF16)},
	{"gpt-oss-120b", 0, 128, 4, 2880, 2880, FTFMT_MXFP4_TRITON, FTFMT_ACT_SWIGLU_OAI, 7.0f, ONE(FTFMT_MXFP4_TRITON)},
	{"gpt-oss-20b", 0, 32, 4, 2880, 2880, FTFMT_MXFP4_TRITON, FTFMT_ACT_SWIGLU_OAI, 7.0f, ONE(FTFMT_MXFP4_TRITON)},
	{"dsv4", 0, 256, 6, 4096, 2048, FTFMT_DS_FP4, FTFMT_ACT_SILU, 0, ONE(FTFMT_DS_FP4)},
	{"glm4.7-nvfp4", 0, 160, 8, 5120, 1536, FTFMT_NVFP4, FTFMT_ACT_SILU, 0, ONE(FTFMT_NVFP4)},
	{"minimax-m2.5", 0, 256, 8, 3072, 1536, FTFMT_NVFP4, FTFMT_ACT_SILU, 0, ONE(FTFMT_NVFP4)},
};
const int ftmodel_bw_models_count = sizeof ftmodel_bw_models / sizeof ftmodel_bw_models[0];

const struct ftmodel *ftmodel_find(const struct ftmodel *table, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(table[i].name, name))
			return &table[i];
	return NULL;
}

const struct ftmodel *ftmodel_bw_dtype(enum ftfmt_id f)
{
	for (int i = 0; i < ftmodel_bw_dtypes_count; i++)
		if (ftmodel_bw_dtypes[i].format == f)
			return &ftmodel_bw_dtypes[i];
	return NULL;
}
