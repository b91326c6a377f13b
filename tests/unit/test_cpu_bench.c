/* bench/cpu_moe and bench/cpu_read: the helpers `ftbench cpu-moe` and `bw` use, on small
 * working sets (CI has 2 cores): synthetic banks, timed steps, run-until-stop, verify, ISA
 * lists, and the read ceiling. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <math.h>
#include <string.h>

#include "bench/cpu_moe.h"
#include "bench/cpu_read.h"
#include "hw/cpu.h"

static struct ftcpu_info ci;

static void test_bench_steps(void **s)
{
	struct ftmoebench_cfg cfg = {.format = FTFMT_NVFP4, .hidden = 512, .inter = 256, .experts = 16,
				.topk = 4, .act = FTFMT_ACT_SILU, .batch = 2, .threads = 2, .numa_node = -1,
				.working_set_min = 8u << 20};
	struct ftmoebench *b = NULL;
	assert_int_equal(ftmoebench_create(&cfg, &ci, &b), 0);
	size_t eb = ftmoebench_expert_bytes(b);
	assert_true(eb > 0);
	/* more synthetic experts than E when E does not cover the working set */
	assert_int_equal(ftmoebench_synth_experts(b), (int)((8u << 20) + eb - 1) / (int)eb);
	assert_true(ftmoebench_working_set_bytes(b) >= 8u << 20);
	double t[4], by[4];
	enum ftcpumoe_isa used;
	assert_int_equal(ftmoebench_time(b, FTCPUMOE_ISA_AUTO, 1, 4, t, by, &used), 0);
	for (int i = 0; i < 4; i++) {
		assert_true(t[i] > 0);
		assert_true(by[i] == 8.0 * (double)eb); /* batch 2 x top-4 distinct experts */
	}
	assert_true(ftcpumoe_isa_supported(used, ci.isa));
	double bytes = 0, secs = 0;
	atomic_int stop = 0;
	assert_int_equal(ftmoebench_run_until(b, FTCPUMOE_ISA_AUTO, &stop, 0.05, &bytes, &secs), 0);
	assert_true(secs >= 0.05 && bytes >= 8.0 * (double)eb);
	atomic_store(&stop, 1);
	assert_int_equal(ftmoebench_run_until(b, FTCPUMOE_ISA_AUTO, &stop, 0, &bytes, &secs), 0);
	assert_true(bytes == 0);
	double rel = -1;
	assert_int_equal(ftmoebench_verify(b, ftcpumoe_isa_best(FTFMT_NVFP4, ci.isa), &rel), 0);
	assert_true(rel >= 0 && rel < 2.5e-2);
	struct ftpool *p = ftmoebench_pool(b);
	double g[2];
	struct ftcread_result res;
	assert_int_equal(ftcread_measure(&ci, p, 16u << 20, 2, g, &res), 0);
	assert_true(g[0] > 0 && g[1] > 0);
	assert_int_equal(res.threads, ftmoebench_threads(b));
	assert_int_equal(res.buffer_bytes, 16u << 20);
	assert_non_null(res.loop);
	if ((ci.isa & (FTCPU_AVX512F | FTCPU_AVX512BW)) == (FTCPU_AVX512F | FTCPU_AVX512BW)) {
		/* every loop shape was calibrated (the chunked ones too) and the fastest is used */
		int best = 0;
		for (int v = 0; v < FTCREAD_VARIANTS; v++) {
			assert_true(res.calib_gbs[v] > 0);
			if (res.calib_gbs[v] > res.calib_gbs[best])
				best = v;
		}
		assert_string_equal(res.loop, ftcread_avx512_names[best]);
	}
	ftmoebench_free(b);
	ftmoebench_free(NULL);
	cfg.format = FTFMT_FP8_BLOCK;
	assert_int_equal(ftmoebench_create(&cfg, &ci, &b), -EINVAL);
}

/* FTMOEBENCH_ROUTE_MODEL: tokens share the model's E experts (a step reads at most E, at least
 * topk), batch 1 reads topk like the distinct routing, ftmoebench_set_batch bounds the batch, and the
 * step still matches the scalar tier. */
static void test_bench_model_routing(void **s)
{
	struct ftmoebench_cfg cfg = {.format = FTFMT_BF16, .hidden = 256, .inter = 128, .experts = 6, .topk = 4,
				.act = FTFMT_ACT_SILU, .batch = 8, .routing = FTMOEBENCH_ROUTE_MODEL, .threads = 2,
				.numa_node = -1, .working_set_min = 4u << 20};
	struct ftmoebench *b = NULL;
	assert_int_equal(ftmoebench_create(&cfg, &ci, &b), 0);
	size_t eb = ftmoebench_expert_bytes(b);
	double t[6], by[6], rel = 1;
	assert_int_equal(ftmoebench_time(b, FTCPUMOE_ISA_AUTO, 0, 6, t, by, NULL), 0);
	int shared = 0;
	for (int i = 0; i < 6; i++) {
		/* 8 tokens x 4 routes over 6 experts: every step shares, reads 4..6 experts */
		assert_true(by[i] >= 4.0 * eb && by[i] <= 6.0 * eb);
		shared |= by[i] < 32.0 * eb;
	}
	assert_true(shared);
	assert_int_equal(ftmoebench_verify(b, FTCPUMOE_ISA_AUTO, &rel), 0);
	assert_true(rel < 1e-2);
	assert_int_equal(ftmoebench_set_batch(b, 1), 0);
	assert_int_equal(ftmoebench_time(b, FTCPUMOE_ISA_AUTO, 0, 3, t, by, NULL), 0);
	for (int i = 0; i < 3; i++)
		assert_true(by[i] == 4.0 * eb);
	assert_int_equal(ftmoebench_set_batch(b, 9), -EINVAL);
	assert_int_equal(ftmoebench_set_batch(b, 0), -EINVAL);
	ftmoebench_free(b);
	cfg.routing = 7;
	assert_int_equal(ftmoebench_create(&cfg, &ci, &b), -EINVAL);
	cfg.routing = FTMOEBENCH_ROUTE_MODEL;
	cfg.experts = 3; /* fewer than top-k */
	assert_int_equal(ftmoebench_create(&cfg, &ci, &b), -EINVAL);
}

static void test_isa_lists(void **s)
{
	enum ftcpumoe_isa t[8];
	char why[128];
	assert_int_equal(ftmoebench_isa_list("scalar", NULL, FTFMT_BF16, ci.isa, t, 8, why, sizeof why), 1);
	assert_int_equal(t[0], FTCPUMOE_ISA_SCALAR);
	int all = ftmoebench_isa_list("all", NULL, FTFMT_BF16, ci.isa, t, 8, why, sizeof why);
	assert_int_equal(all, __builtin_popcount(ftcpumoe_isa_mask(ci.isa)));
	assert_int_equal(ftmoebench_isa_list("scalar,sse9", NULL, FTFMT_BF16, ci.isa, t, 8, why, sizeof why), -EINVAL);
	assert_non_null(strstr(why, "sse9"));
	assert_int_equal(ftmoebench_isa_list("avx2", NULL, FTFMT_BF16, 0, t, 8, why, sizeof why), -ENOTSUP);
	assert_non_null(strstr(why, "not supported"));
	assert_int_equal(ftmoebench_isa_list("auto", NULL, FTFMT_Q4_0, ci.isa, t, 8, why, sizeof why), 1);
	assert_int_equal(t[0], ftcpumoe_isa_best(FTFMT_Q4_0, ci.isa));
	/* tune isa: what "auto" means, alone and in a list; a tier the CPU lacks is named */
	struct ftcpumoe_tune tn;
	ftcpumoe_tune_defaults(&tn);
	tn.isa = FTCPUMOE_ISA_SCALAR;
	assert_int_equal(ftmoebench_isa_list("auto", &tn, FTFMT_Q4_0, ci.isa, t, 8, why, sizeof why), 1);
	assert_int_equal(t[0], FTCPUMOE_ISA_SCALAR);
	assert_int_equal(ftmoebench_isa_list("scalar,auto", &tn, FTFMT_Q4_0, ci.isa, t, 8, why, sizeof why), 2);
	assert_int_equal(t[1], FTCPUMOE_ISA_SCALAR);
	tn.isa = FTCPUMOE_ISA_AVX2;
	assert_int_equal(ftmoebench_isa_list("auto", &tn, FTFMT_BF16, 0, t, 8, why, sizeof why), -ENOTSUP);
	assert_non_null(strstr(why, "isa=avx2"));
}

static void test_read_default_size(void **s)
{
	size_t b = ftcread_default_bytes(64);
	size_t avail = ftcpu_mem_available();
	assert_true(b % (2u << 20) == 0);
	if (avail >= 16ull << 30)
		assert_true(b == 8ull << 30); /* 128 MiB x 64 */
	assert_true(!avail || b <= avail / 2);
}

static int setup(void **s)
{
	return ftcpu_probe(&ci) < 0 ? -1 : 0;
}

static int teardown(void **s)
{
	ftcpu_release(&ci);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bench_steps),
		cmocka_unit_test(test_bench_model_routing),
		cmocka_unit_test(test_isa_lists),
		cmocka_unit_test(test_read_default_size),
	};
	return cmocka_run_group_tests_name("cpu_bench", tests, setup, teardown);
}
