/* formats and models: bank schemas of reference §1, catalogue of §2. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "moe/formats.h"
#include "moe/models.h"

static void test_aliases(void **s)
{
	assert_string_equal(ftfmt_canonical("mxfp4"), "mxfp4_triton");
	assert_string_equal(ftfmt_canonical("fp8"), "fp8_block");
	assert_string_equal(ftfmt_canonical("bf16"), "bf16");
	assert_null(ftfmt_lookup("int3"));
	assert_null(ftfmt_lookup(NULL));
}

static void test_bf16_bytes(void **s)
{
	struct ftfmt_bank_shape b[FTFMT_MAX_BANKS];
	const struct ftfmt *f = ftfmt_lookup("bf16");
	assert_int_equal(ftfmt_banks(f, 2048, 768, b), 2);
	assert_string_equal(b[0].name, "gate_up");
	assert_int_equal(b[0].dims[0], 1536);
	assert_int_equal(b[0].dims[1], 2048);
	assert_int_equal(b[0].expert_bytes, 1536 * 2048 * 2);
	assert_int_equal(b[1].expert_bytes, 2048 * 768 * 2);
	/* 9 MiB per qwen3-30B expert */
	assert_int_equal(ftfmt_expert_bytes(f, 2048, 768), 9u << 20);
}

static void test_quant_bytes(void **s)
{
	long H = 3072, I = 1536;
	size_t nv = ftfmt_expert_bytes(ftfmt_lookup("nvfp4"), H, I);
	size_t want = 2 * I * H / 2 + 2 * I * H / 16 + 2 * I * 2 + H * I / 2 + H * I / 16 + H * 2;
	assert_int_equal(nv, want);
	/* marlin: same bytes without the globals */
	assert_int_equal(ftfmt_expert_bytes(ftfmt_lookup("nvfp4_marlin"), H, I), want - 2 * I * 2 - H * 2);
	assert_int_equal(ftfmt_expert_bytes(ftfmt_lookup("q4_0"), 2048, 768),
			 1536 * 64 * 18 + 2048 * 24 * 18);
	struct ftfmt_bank_shape b[FTFMT_MAX_BANKS];
	assert_int_equal(ftfmt_banks(ftfmt_lookup("mxfp4"), 2880, 2880, b), 6);
	assert_string_equal(b[0].name, "gate_up_blocks");
	assert_int_equal(b[0].dims[0], 1440); /* transposed: [H/2, 2I] */
	assert_int_equal(b[0].dims[1], 5760);
	assert_int_equal(b[2].ndim, 1);
	assert_int_equal(ftfmt_banks(ftfmt_lookup("ds_fp4"), 4096, 2048, b), 4);
	assert_int_equal(b[1].dims[1], 4096 / 32);
}

static void test_bad_geometry(void **s)
{
	struct ftfmt_bank_shape b[FTFMT_MAX_BANKS];
	assert_int_equal(ftfmt_banks(ftfmt_lookup("fp8_block"), 2000, 512, b), -22);
	assert_int_equal(ftfmt_banks(ftfmt_lookup("q4_0"), 2048, 100, b), -22);
	assert_int_equal(ftfmt_expert_bytes(ftfmt_lookup("bf16"), 0, 10), 0);
}

static void test_models(void **s)
{
	const struct ftmodel *m = ftmodel_find(ftmodel_cache_profiles, ftmodel_cache_profiles_count, "glm4.7-nvfp4");
	assert_non_null(m);
	assert_int_equal(m->layers, 89);
	assert_int_equal(m->experts, 160);
	assert_int_equal(ftmodel_cache_profiles_count, 8);
	m = ftmodel_bw_dtype(FTFMT_MXFP4_TRITON);
	assert_non_null(m);
	assert_int_equal(m->topk, 4);
	assert_int_equal(m->act, FTFMT_ACT_SWIGLU_OAI);
	assert_null(ftmodel_bw_dtype(FTFMT_Q4_0));
	m = ftmodel_find(ftmodel_bw_models, ftmodel_bw_models_count, "qwen3.6-moe");
	assert_int_equal(m->nformats, 3);
	/* every catalogued geometry divides into its formats */
	for (int i = 0; i < ftmodel_bw_models_count; i++)
		for (int k = 0; k < ftmodel_bw_models[i].nformats; k++)
			assert_true(ftfmt_expert_bytes(ftfmt_get(ftmodel_bw_models[i].formats[k]),
						       ftmodel_bw_models[i].hidden, ftmodel_bw_models[i].inter) > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_aliases), cmocka_unit_test(test_bf16_bytes),
		cmocka_unit_test(test_quant_bytes), cmocka_unit_test(test_bad_geometry),
		cmocka_unit_test(test_models),
	};
	return cmocka_run_group_tests_name("formats", tests, NULL, NULL);
}
