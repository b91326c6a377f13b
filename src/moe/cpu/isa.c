/* Tier names, what each tier needs from the CPU, and which one `auto` picks. */
#include <errno.h>
#include <string.h>

#include "moe/cpu/cpumoe.h"
#include "moe/cpu/kern.h"

static const char *names[FTCPUMOE_ISA_COUNT] = {"scalar", "avx2", "avx512", "avx512vnni", "avx512bf16", "amx"};

static const unsigned need[FTCPUMOE_ISA_COUNT] = {
	0,
	FTCPU_AVX2 | FTCPU_FMA | FTCPU_F16C,
	FTCPU_AVX2 | FTCPU_FMA | FTCPU_F16C | FTCPU_AVX512F | FTCPU_AVX512BW | FTCPU_AVX512VL | FTCPU_AVX512DQ,
	FTCPU_AVX2 | FTCPU_FMA | FTCPU_F16C | FTCPU_AVX512F | FTCPU_AVX512BW | FTCPU_AVX512VL | FTCPU_AVX512DQ |
		FTCPU_AVX512_VNNI,
	FTCPU_AVX2 | FTCPU_FMA | FTCPU_F16C | FTCPU_AVX512F | FTCPU_AVX512BW | FTCPU_AVX512VL | FTCPU_AVX512DQ |
		FTCPU_AVX512_BF16,
	FTCPU_AVX2 | FTCPU_FMA | FTCPU_F16C | FTCPU_AVX512F | FTCPU_AVX512BW | FTCPU_AVX512VL | FTCPU_AVX512DQ |
		FTCPU_AVX512_BF16 | FTCPU_AMX_TILE | FTCPU_AMX_BF16,
};

const char *ftcpumoe_isa_name(enum ftcpumoe_isa isa)
{
	if (isa == FTCPUMOE_ISA_AUTO)
		return "auto";
	return (unsigned)isa < FTCPUMOE_ISA_COUNT ? names[isa] : "?";
}

int ftcpumoe_isa_lookup(const char *name, enum ftcpumoe_isa *out)
{
	static const struct { const char *alias; enum ftcpumoe_isa isa; } alias[] = {
		{"auto", FTCPUMOE_ISA_AUTO},       {"avx512f", FTCPUMOE_ISA_AVX512},
		{"avx512_bf16", FTCPUMOE_ISA_AVX512BF16}, {"avx512_vnni", FTCPUMOE_ISA_AVX512VNNI},
		{"avx2+fma", FTCPUMOE_ISA_AVX2},
	};
	if (!name)
		return -EINVAL;
	for (int i = 0; i < FTCPUMOE_ISA_COUNT; i++)
		if (!strcmp(name, names[i])) {
			*out = (enum ftcpumoe_isa)i;
			return 0;
		}
	for (size_t i = 0; i < sizeof alias / sizeof alias[0]; i++)
		if (!strcmp(name, alias[i].alias)) {
			*out = alias[i].isa;
			return 0;
		}
	return -EINVAL;
}

int ftcpumoe_isa_supported(enum ftcpumoe_isa isa, unsigned cpu_isa)
{
	return (unsigned)isa < FTCPUMOE_ISA_COUNT && (cpu_isa & need[isa]) == need[isa] &&
	       (isa != FTCPUMOE_ISA_AMX || ftkern_amx_ready() == 0);
}

unsigned ftcpumoe_isa_mask(unsigned cpu_isa)
{
	unsigned m = 0;
	for (int i = 0; i < FTCPUMOE_ISA_COUNT; i++)
		if (ftcpumoe_isa_supported((enum ftcpumoe_isa)i, cpu_isa))
			m |= 1u << i;
	return m;
}

enum ftcpumoe_isa ftcpumoe_isa_best(enum ftfmt_id f, unsigned cpu_isa)
{
	static const enum ftcpumoe_isa bf16_order[] = {FTCPUMOE_ISA_AVX512BF16, FTCPUMOE_ISA_AVX512,
						     FTCPUMOE_ISA_AVX2, FTCPUMOE_ISA_SCALAR};
	static const enum ftcpumoe_isa w4_order[] = {FTCPUMOE_ISA_AVX512VNNI, FTCPUMOE_ISA_AVX512,
						   FTCPUMOE_ISA_AVX2, FTCPUMOE_ISA_SCALAR};
	/* mxfp4_triton: W4A8, then fp32 activations ahead of bf16 (the order measured fastest:
	 * bench/RESULTS.md §4, "CPU MoE executor") */
	static const enum ftcpumoe_isa mx_order[] = {FTCPUMOE_ISA_AVX512VNNI, FTCPUMOE_ISA_AVX512,
						   FTCPUMOE_ISA_AVX512BF16, FTCPUMOE_ISA_AVX2, FTCPUMOE_ISA_SCALAR};
	const enum ftcpumoe_isa *o = f == FTFMT_BF16 ? bf16_order
				   : f == FTFMT_MXFP4_TRITON ? mx_order : w4_order;
	for (int i = 0;; i++)
		if (ftcpumoe_isa_supported(o[i], cpu_isa))
			return o[i];
}

int ftcpumoe_isa_resolve(enum ftcpumoe_isa want, enum ftfmt_id f, unsigned cpu_isa, enum ftcpumoe_isa *out)
{
	if (want == FTCPUMOE_ISA_AUTO) {
		*out = ftcpumoe_isa_best(f, cpu_isa);
		return 0;
	}
	if ((unsigned)want >= FTCPUMOE_ISA_COUNT)
		return -EINVAL;
	if (!ftcpumoe_isa_supported(want, cpu_isa))
		return -ENOTSUP;
	*out = want;
	return 0;
}

/* The kernel a tier runs for f (falls back down the tiers where a file has none). */
const struct ftkern_ops *ftkern_select(int isa, enum ftfmt_id f, unsigned cpu_isa)
{
	const struct ftkern_ops *o = NULL;
	switch (isa) {
	case FTCPUMOE_ISA_AMX:
		if (ftkern_amx_ready() == 0)
			o = ftkern_amx(f);
		if (!o && ftkern_amx_ready() == 0 && (cpu_isa & FTCPU_AMX_INT8) && (cpu_isa & FTCPU_AVX512_VNNI))
			o = ftkern_amx_int8(f); /* the 4-bit formats as W4A8 on the tiles */
		if (!o) /* the other formats as avx512bf16 */
			o = ftkern_select(FTCPUMOE_ISA_AVX512BF16, f, cpu_isa);
		break;
	case FTCPUMOE_ISA_AVX512BF16:
		o = ftkern_avx512bf16(f);
		if (!o && (cpu_isa & FTCPU_AVX512_VNNI))
			o = ftkern_avx512vnni(f);
		if (!o)
			o = ftkern_avx512(f);
		break;
	case FTCPUMOE_ISA_AVX512VNNI:
		o = ftkern_avx512vnni(f);
		if (!o)
			o = ftkern_avx512(f);
		break;
	case FTCPUMOE_ISA_AVX512:
		o = ftkern_avx512(f);
		break;
	case FTCPUMOE_ISA_AVX2:
		o = ftkern_avx2(f);
		break;
	default:
		break;
	}
	return o ? o : ftkern_scalar(f);
}

const char *ftcpumoe_kernel_name(enum ftcpumoe_isa isa, enum ftfmt_id f, unsigned cpu_isa)
{
	const struct ftkern_ops *o = ftkern_select(isa, f, cpu_isa);
	return o ? o->name : "none";
}
