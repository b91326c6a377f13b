#include "moe/formats.h"

#include <errno.h>
#include <string.h>

static const struct ftfmt formats[FTFMT_COUNT] = {
	{FTFMT_BF16, "bf16", true},
	{FTFMT_FP8_BLOCK, "fp8_block", false},
	{FTFMT_Q4_0, "q4_0", true},
	{FTFMT_NVFP4, "nvfp4", true},
	{FTFMT_NVFP4_MARLIN, "nvfp4_marlin", false},
	{FTFMT_MXFP4_TRITON, "mxfp4_triton", true},
	{FTFMT_DS_FP4, "ds_fp4", true},
};

static const struct { const char *alias, *name; } aliases[] = {
	{"mxfp4", "mxfp4_triton"},
	{"fp8", "fp8_block"},
};

const char *ftfmt_all_names(void)
{
	return "bf16,fp8_block,q4_0,nvfp4,nvfp4_marlin,mxfp4_triton,ds_fp4";
}

const char *ftfmt_canonical(const char *name)
{
	const struct ftfmt *f = ftfmt_lookup(name);
	return f ? f->name : NULL;
}

const struct ftfmt *ftfmt_lookup(const char *name)
{
	if (!name)
		return NULL;
	for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
		if (!strcmp(name, aliases[i].alias))
			name = aliases[i].name;
	for (int i = 0; i < FTFMT_COUNT; i++)
		if (!strcmp(name, formats[i].name))
			return &formats[i];
	return NULL;
}

const struct ftfmt *ftfmt_get(enum ftfmt_id id)
{
	return (unsigned)id < FTFMT_COUNT ? &formats[id] : NULL;
}

static size_t dtype_size(enum ftfmt_dtype t)
{
	return t == FTFMT_DT_BF16 || t == FTFMT_DT_FP16 ? 2 : 1;
}

static void set2(struct ftfmt_bank_shape *b, const char *name, enum ftfmt_dtype t, long r, long c)
{
	b->name = name;
	b->dtype = t;
	b->ndim = 2;
	b->dims[0] = r;
	b->dims[1] = c;
	b->expert_bytes = (size_t)r * (size_t)c * dtype_size(t);
}

static void set1(struct ftfmt_bank_shape *b, const char *name, enum ftfmt_dtype t, long n)
{
	b->name = name;
	b->dtype = t;
	b->ndim = 1;
	b->dims[0] = n;
	b->dims[1] = 1;
	b->expert_bytes = (size_t)n * dtype_size(t);
}

int ftfmt_banks(const struct ftfmt *f, long H, long I, struct ftfmt_bank_shape *o)
{
	if (!f || H <= 0 || I <= 0)
		return -EINVAL;
	memset(o, 0, sizeof *o * FTFMT_MAX_BANKS);
	switch (f->id) {
	case FTFMT_BF16:
		set2(&o[0], "gate_up", FTFMT_DT_BF16, 2 * I, H);
		set2(&o[1], "down", FTFMT_DT_BF16, H, I);
		return 2;
	case FTFMT_FP8_BLOCK:
		if (H % 128 || I % 128)
			return -EINVAL;
		set2(&o[0], "gate_up", FTFMT_DT_FP8_E4M3, 2 * I, H);
		set2(&o[1], "gate_up_scale", FTFMT_DT_BF16, 2 * I / 128, H / 128);
		set2(&o[2], "down", FTFMT_DT_FP8_E4M3, H, I);
		set2(&o[3], "down_scale", FTFMT_DT_BF16, H / 128, I / 128);
		return 4;
	case FTFMT_Q4_0:
		if (H % 32 || I % 32)
			return -EINVAL;
		set2(&o[0], "gate_up", FTFMT_DT_U8, 2 * I, H / 32 * 18);
		set2(&o[1], "down", FTFMT_DT_U8, H, I / 32 * 18);
		return 2;
	case FTFMT_NVFP4:
		if (H % 16 || I % 16)
			return -EINVAL;
		set2(&o[0], "gate_up_packed", FTFMT_DT_U8, 2 * I, H / 2);
		set2(&o[1], "gate_up_scale", FTFMT_DT_FP8_E4M3, 2 * I, H / 16);
		set1(&o[2], "gate_up_global", FTFMT_DT_FP16, 2 * I);
		set2(&o[3], "down_packed", FTFMT_DT_U8, H, I / 2);
		set2(&o[4], "down_scale", FTFMT_DT_FP8_E4M3, H, I / 16);
		set1(&o[5], "down_global", FTFMT_DT_FP16, H);
		return 6;
	case FTFMT_NVFP4_MARLIN:
		if (H % 16 || I % 16)
			return -EINVAL;
		set2(&o[0], "gate_up_packed", FTFMT_DT_U8, 2 * I, H / 2);
		set2(&o[1], "gate_up_scale", FTFMT_DT_FP8_E4M3, 2 * I, H / 16);
		set2(&o[2], "down_packed", FTFMT_DT_U8, H, I / 2);
		set2(&o[3], "down_scale", FTFMT_DT_FP8_E4M3, H, I / 16);
		return 4;
	case FTFMT_MXFP4_TRITON:
		if (H % 32 || I % 32)
			return -EINVAL;
		set2(&o[0], "gate_up_blocks", FTFMT_DT_U8, H / 2, 2 * I);
		set2(&o[1], "gate_up_scales", FTFMT_DT_E8M0, H / 32, 2 * I);
		set1(&o[2], "gate_up_bias", FTFMT_DT_BF16, 2 * I);
		set2(&o[3], "down_blocks", FTFMT_DT_U8, I / 2, H);
		set2(&o[4], "down_scales", FTFMT_DT_E8M0, I / 32, H);
		set1(&o[5], "down_bias", FTFMT_DT_BF16, H);
		return 6;
	case FTFMT_DS_FP4:
		if (H % 32 || I % 32)
			return -EINVAL;
		set2(&o[0], "gate_up_packed", FTFMT_DT_U8, 2 * I, H / 2);
		set2(&o[1], "gate_up_scale", FTFMT_DT_E8M0, 2 * I, H / 32);
		set2(&o[2], "down_packed", FTFMT_DT_U8, H, I / 2);
		set2(&o[3], "down_scale", FTFMT_DT_E8M0, H, I / 32);
		return 4;
	default:
		return -EINVAL;
	}
}

size_t ftfmt_expert_bytes(const struct ftfmt *f, long H, long I)
{
	struct ftfmt_bank_shape b[FTFMT_MAX_BANKS];
	int n = ftfmt_banks(f, H, I, b);
	size_t s = 0;
	for (int i = 0; i < n; i++)
		s += b[i].expert_bytes;
	return n > 0 ? s : 0;
}

const char *ftfmt_dtype_name(enum ftfmt_dtype t)
{
	static const char *n[] = {"u8", "bf16", "fp16", "fp8_e4m3", "e8m0"};
	return (unsigned)t < 5 ? n[t] : "?";
}

const char *ftfmt_dtype_torch_name(enum ftfmt_dtype t)
{
	static const char *n[] = {"uint8", "bfloat16", "float16", "float8_e4m3fn", "uint8"};
	return (unsigned)t < 5 ? n[t] : "?";
}

int ftfmt_dtype_accepts(enum ftfmt_dtype t, const char *name)
{
	if (!name || (unsigned)t >= 5)
		return 0;
	if (!strcmp(name, ftfmt_dtype_torch_name(t)) || !strcmp(name, ftfmt_dtype_name(t)))
		return 1;
	if (t == FTFMT_DT_FP8_E4M3)
		return !strcmp(name, "uint8");
	if (t == FTFMT_DT_E8M0)
		return !strcmp(name, "float8_e8m0fnu");
	return 0;
}

static const char *act_names[] = {"silu", "gelu", "gelu_tanh", "swiglu_oai"};

const char *ftfmt_act_name(enum ftfmt_act a)
{
	return (unsigned)a < 4 ? act_names[a] : "?";
}

int ftfmt_act_lookup(const char *name, enum ftfmt_act *out)
{
	for (int i = 0; i < 4; i++)
		if (!strcmp(name, act_names[i])) {
			*out = (enum ftfmt_act)i;
			return 0;
		}
	return -EINVAL;
}
