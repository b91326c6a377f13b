/* test_cpu_tiers: a CPU MoE tier is never chosen, resolved or run on a CPU that lacks one of the
 * instructions its kernels were compiled for. The requirements are not taken from isa.c's own
 * table but from the compile flags of each kernel object as the Makefile states them (ISA_* and
 * the per-object XFLAGS, read at run time), mapped to the FTCPU_* bits; then every feature set
 * (all 2^12 masks of the detected flags, which is the seam: the tier functions take the flags as
 * an argument) is walked for every format: the tier auto picks, each tier asked for by name,
 * and the kernel ftkern_select hands out must all fit the mask. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hw/cpu.h"
#include "moe/cpu/cpumoe.h"
#include "moe/cpu/kern.h"
#include "moe/formats.h"

#define NBITS 13

/* gcc -m flags -> FTCPU bits (each flag an object is built with must be a bit its tier needs). */
static const struct {
	const char *flag;
	unsigned bit;
} mflags[] = {
	{"avx2", FTCPU_AVX2},           {"fma", FTCPU_FMA},
	{"f16c", FTCPU_F16C},           {"avx512f", FTCPU_AVX512F},
	{"avx512bw", FTCPU_AVX512BW},   {"avx512vl", FTCPU_AVX512VL},
	{"avx512dq", FTCPU_AVX512DQ},    {"avx512bf16", FTCPU_AVX512_BF16},
	{"avx512vnni", FTCPU_AVX512_VNNI}, {"amx-tile", FTCPU_AMX_TILE},
	{"amx-bf16", FTCPU_AMX_BF16},   {"amx-int8", FTCPU_AMX_INT8},
};

static char *makefile;

/* The value of "NAME := ..." or "$(BUILD)/obj/%_SUFFIX.o: XFLAGS = ..." in the Makefile. */
static const char *mk_value(const char *key)
{
	static char v[512];
	const char *p = makefile;
	size_t kl = strlen(key);
	while ((p = strstr(p, key))) {
		if ((p == makefile || p[-1] == '\n' || p[-1] == ' ') && (p[kl] == ' ' || p[kl] == ':')) {
			const char *eq = strchr(p, '=');
			const char *nl = strchr(p, '\n');
			if (eq && (!nl || eq < nl)) {
				size_t n = (size_t)((nl ? nl : eq + strlen(eq)) - eq - 1);
				snprintf(v, sizeof v, "%.*s", (int)n, eq + 1);
				return v;
			}
		}
		p += kl;
	}
	fail_msg("Makefile: no %s", key);
	return NULL;
}

/* The FTCPU bits of a flag list ("-mavx2 -mfma $(ISA_avx512) ..."), $(ISA_x) expanded. */
static unsigned bits_of(const char *list, int depth)
{
	char buf[512];
	snprintf(buf, sizeof buf, "%s", list);
	unsigned b = 0;
	for (char *save, *w = strtok_r(buf, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
		if (!strncmp(w, "$(ISA_", 6)) {
			char key[64];
			snprintf(key, sizeof key, "%.*s", (int)(strlen(w) - 3), w + 2);
			assert_true(depth < 4);
			b |= bits_of(mk_value(key), depth + 1);
		} else if (!strncmp(w, "-m", 2)) {
			size_t i;
			for (i = 0; i < sizeof mflags / sizeof *mflags; i++)
				if (!strcmp(w + 2, mflags[i].flag))
					break;
			if (i == sizeof mflags / sizeof *mflags)
				fail_msg("Makefile: kernel flag %s has no FTCPU bit in this test's map", w);
			b |= mflags[i].bit;
		}
	}
	return b;
}

/* The compiler never emits AMX tile instructions on its own (only the intrinsics do): the
 * int8 tile flag binds only the file that calls the int8 tile products, kern_amx_int8.c (the
 * bf16 tile file is built with the same ISA_amx). */
static unsigned tile_bits(const char *obj, unsigned b)
{
	return strstr(obj, "_amx_int8.o") ? b : b & ~(unsigned)FTCPU_AMX_INT8;
}

/* What a kernel (one of the tier files' ops) needs: the flags of the object it is in. */
static unsigned kernel_needs(const struct ftkern_ops *o, enum ftfmt_id f)
{
	static const struct {
		const struct ftkern_ops *(*get)(enum ftfmt_id);
		const char *obj;
	} files[] = {
		{ftkern_avx2, "$(BUILD)/obj/%_avx2.o"},
		{ftkern_avx512, "$(BUILD)/obj/%_avx512.o"},
		{ftkern_avx512vnni, "$(BUILD)/obj/%_avx512vnni.o"},
		{ftkern_avx512bf16, "$(BUILD)/obj/%_avx512bf16.o"},
		{ftkern_amx, "$(BUILD)/obj/%_amx.o"},
		{ftkern_amx_int8, "$(BUILD)/obj/%_amx_int8.o"},
		{ftkern_amx_int8_emu, "$(BUILD)/obj/%_amx_int8_emu.o"},
		{ftkern_amx_emu, "$(BUILD)/obj/%_amx.o"},
	};
	if (o == ftkern_scalar(f))
		return 0;
	for (size_t i = 0; i < sizeof files / sizeof *files; i++)
		if (o == files[i].get(f))
			return tile_bits(files[i].obj, bits_of(mk_value(files[i].obj), 0));
	fail_msg("kernel %s of format %s: from no tier file this test knows", o->name, ftfmt_get(f)->name);
	return 0;
}

static void tiers_fit_every_mask(void **s)
{
	(void)s;
	FILE *fp = fopen("Makefile", "re");
	assert_non_null(fp);
	makefile = calloc(1, 1 << 20);
	assert_non_null(makefile);
	assert_true(fread(makefile, 1, (1 << 20) - 1, fp) > 0);
	fclose(fp);
	/* the tiers' files as the Makefile builds them: avx2 < avx512 < the two avx512 extensions */
	unsigned a2 = bits_of("$(ISA_avx2)", 0), a5 = bits_of("$(ISA_avx512)", 0);
	assert_int_equal(a2 & (FTCPU_AVX2 | FTCPU_FMA | FTCPU_F16C), FTCPU_AVX2 | FTCPU_FMA | FTCPU_F16C);
	assert_int_equal(a5 & a2, a2);
	long walked = 0;
	for (unsigned mask = 0; mask < 1u << NBITS; mask++)
		for (int fi = 0; fi < FTFMT_COUNT; fi++) {
			enum ftfmt_id f = (enum ftfmt_id)fi;
			if (!ftfmt_get(f)->cpu_path)
				continue;
			enum ftcpumoe_isa best = ftcpumoe_isa_best(f, mask), got;
			unsigned need = kernel_needs(ftkern_select(best, f, mask), f);
			if ((need & mask) != need)
				fail_msg("%s, CPU flags 0x%03x: auto picks %s, whose kernel %s needs 0x%03x", ftfmt_get(f)->name,
					 mask, ftcpumoe_isa_name(best), ftkern_select(best, f, mask)->name, need);
			for (int t = 0; t < FTCPUMOE_ISA_COUNT; t++) {
				const struct ftkern_ops *o = ftkern_select(t, f, mask);
				unsigned kn = kernel_needs(o, f);
				int ok = ftcpumoe_isa_resolve((enum ftcpumoe_isa)t, f, mask, &got) == 0;
				if (ok && (kn & mask) != kn)
					fail_msg("%s, CPU flags 0x%03x: tier %s is taken but its kernel %s needs 0x%03x",
						 ftfmt_get(f)->name, mask, ftcpumoe_isa_name((enum ftcpumoe_isa)t), o->name, kn);
				if (ok != ftcpumoe_isa_supported((enum ftcpumoe_isa)t, mask))
					fail_msg("tier %s: resolve and supported disagree at 0x%03x",
						 ftcpumoe_isa_name((enum ftcpumoe_isa)t), mask);
				/* a tier whose own file's flags the CPU lacks is refused (one flag missing) */
				static const char *tier_obj[FTCPUMOE_ISA_COUNT] = {
					NULL, "$(BUILD)/obj/%_avx2.o", "$(BUILD)/obj/%_avx512.o",
					"$(BUILD)/obj/%_avx512vnni.o", "$(BUILD)/obj/%_avx512bf16.o", "$(BUILD)/obj/%_amx.o"};
				if (tier_obj[t]) {
					unsigned tn = tile_bits(tier_obj[t], bits_of(mk_value(tier_obj[t]), 0));
					if ((tn & mask) != tn && ok)
						fail_msg("tier %s taken at CPU flags 0x%03x without 0x%03x", ftcpumoe_isa_name((enum ftcpumoe_isa)t),
							 mask, tn & ~mask);
				}
				walked++;
			}
		}
	assert_true(walked > 4096 * 6);
	free(makefile);
}

int main(void)
{
	const struct CMUnitTest t[] = {
		cmocka_unit_test(tiers_fit_every_mask),
	};
	return cmocka_run_group_tests(t, NULL, NULL);
}
