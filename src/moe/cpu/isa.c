/* Tier names, what each tier needs from the CPU, and which one `auto` picks. */
#include <errno.h>
#include <string.h>

#include "moe/cpu/cpumoe.h"
#include "moe/cpu/kern.h"

static const char *names[FTCMOE_ISA_COUNT] = {"scalar", "avx2", "avx512", "avx512vnni", "avx512bf16", "amx"};

static const unsigned need[FTCMOE_ISA_COUNT] = {
	0,
	FTCPU_AVX2 | FTCPU_FMA | FTCPU_F16C,
	FTCPU_AVX2 | FTCPU_FMA | FTCPU_F16C | FTCPU_AVX512F | FTCPU_AVX512BW | FTCPU_AVX512VL,
	FTCPU_AVX2 | FTCPU_FMA | FTCPU_F16C | FTCPU_AVX512F | FTCPU_AVX512BW | FTCPU_AVX512VL |
		FTCPU_AVX512_VNNI,
	FTCPU_AVX2 | FTCPU_FMA | FTCPU_F16C | FTCPU_AVX512F | FTCPU_AVX512BW | FTCPU_AVX512VL |
		FTCPU_AVX512_BF16,
	FTCPU_AVX2 | FTCPU_FMA | FTCPU_F16C | FTCPU_AVX512F | FTCPU_AVX512BW | FTCPU_AVX512VL |
		FTCPU_AVX512_BF16 | FTCPU_AMX_TILE | FTCPU_AMX_BF16,
};

const char *ftcmoe_isa_name(enum ftcmoe_isa isa)
{
	if (isa == FTCMOE_ISA_AUTO)
		return "auto";
	return (unsigned)isa < FTCMOE_ISA_COUNT ? names[isa] : "?";
}

int ftcmoe_isa_lookup(const char *name, enum ftcmoe_isa *out)
{
	static const struct { const char *alias; enum ftcmoe_isa isa; } alias[] = {
		{"auto", FTCMOE_ISA_AUTO},       {"avx512f", FTCMOE_ISA_AVX512},
		{"avx512_bf16", FTCMOE_ISA_AVX512BF16}, {"avx512_vnni", FTCMOE_ISA_AVX512VNNI},
		{"avx2+fma", FTCMOE_ISA_AVX2},
	};
	if (!name)
		return -EINVAL;
	for (int i = 0; i < FTCMOE_ISA_COUNT; i++)
		if (!strcmp(name, names[i])) {
			*out = (enum ftcmoe_isa)i;
			return 0;
		}
	for (size_t i = 0; i < sizeof alias / sizeof alias[0]; i++)
		if (!strcmp(name, alias[i].alias)) {
			*out = alias[i].isa;
			return 0;
		}
	return -EINVAL;
}

int ftcmoe_isa_supported(enum ftcmoe_isa isa, unsigned cpu_isa)
{
	return (unsigned)isa < FTCMOE_ISA_COUNT && (cpu_isa & need[isa]) == need[isa] &&
	       (isa != FTCMOE_ISA_AMX || ftk_amx_ready() == 0);
}

unsigned ftcmoe_isa_mask(unsigned cpu_isa)
{
	unsigned m = 0;
	for (int i = 0; i < FTCMOE_ISA_COUNT; i++)
		if (ftcmoe_isa_supported((enum ftcmoe_isa)i, cpu_isa))
			m |= 1u << i;
	return m;
}

enum ftcmoe_isa ftcmoe_isa_best(enum ftfmt_id f, unsigned cpu_isa)
{
	static const enum ftcmoe_isa bf16_order[] = {FTCMOE_ISA_AVX512BF16, FTCMOE_ISA_AVX512,
						     FTCMOE_ISA_AVX2, FTCMOE_ISA_SCALAR};
	static const enum ftcmoe_isa w4_order[] = {FTCMOE_ISA_AVX512VNNI, FTCMOE_ISA_AVX512,
						   FTCMOE_ISA_AVX2, FTCMOE_ISA_SCALAR};
	/* mxfp4_triton: W4A8, then fp32 activations ahead of bf16 (the order measured fastest:
	 * bench/RESULTS.md §4, "CPU MoE executor") */
	static const enum ftcmoe_isa mx_order[] = {FTCMOE_ISA_AVX512VNNI, FTCMOE_ISA_AVX512,
						   FTCMOE_ISA_AVX512BF16, FTCMOE_ISA_AVX2, FTCMOE_ISA_SCALAR};
	const enum ftcmoe_isa *o = f == FTFMT_BF16 ? bf16_order
				   : f == FTFMT_MXFP4_TRITON ? mx_order : w4_order;
	for (int i = 0;; i++)
		if (ftcmoe_isa_supported(o[i], cpu_isa))
			return o[i];
}

int ftcmoe_isa_resolve(enum ftcmoe_isa want, enum ftfmt_id f, unsigned cpu_isa, enum ftcmoe_isa *out)
{
	if (want == FTCMOE_ISA_AUTO) {
		*out = ftcmoe_isa_best(f, cpu_isa);
		return 0;
	}
	if ((unsigned)want >= FTCMOE_ISA_COUNT)
		return -EINVAL;
	if (!ftcmoe_isa_supported(want, cpu_isa))
		return -ENOTSUP;
	*out = want;
	return 0;
}

/* The kernel a tier runs for f (falls back down the tiers where a file has none). */
const struct ftk_ops *ftk_select(int isa, enum ftfmt_id f, unsigned cpu_isa)
{
	const struct ftk_ops *o = NULL;
	switch (isa) {
	case FTCMOE_ISA_AMX:
		if (ftk_amx_ready() == 0)
			o = ftk_amx(f);
		if (!o) /* the other formats as avx512bf16 */
			o = ftk_select(FTCMOE_ISA_AVX512BF16, f, cpu_isa);
		break;
	case FTCMOE_ISA_AVX512BF16:
		o = ftk_avx512bf16(f);
		if (!o && (cpu_isa & FTCPU_AVX512_VNNI))
			o = ftk_avx512vnni(f);
		if (!o)
			o = ftk_avx512(f);
		break;
	case FTCMOE_ISA_AVX512VNNI:
		o = ftk_avx512vnni(f);
		if (!o)
			o = ftk_avx512(f);
		break;
	case FTCMOE_ISA_AVX512:
		o = ftk_avx512(f);
		break;
	case FTCMOE_ISA_AVX2:
		o = ftk_avx2(f);
		break;
	default:
		break;
	}
	return o ? o : ftk_scalar(f);
}

const char *ftcmoe_kernel_name(enum ftcmoe_isa isa, enum ftfmt_id f, unsigned cpu_isa)
{
	const struct ftk_ops *o = ftk_select(isa, f, cpu_isa);
	return o ? o->name : "none";
}
