/* The replay's GPU step runner (src/replay/runner.c) on the device: small replays of bf16 and
 * nvfp4 (2 layers, a few steps) in every kind of mode (offload, hybrid fraction, cap, no overlap,
 * batch 4, both host allocations). ftrp_run itself fails (-EPROTO) when the device's decisions
 * (misses, fetched, CPU routes) differ from the CPU reference over the same steps, and the runner
 * fails when the CPU executor leaves a doorbell unanswered: a pass means the GPU slot cache, the
 * split, the handshake and the CPU path ran every step as the reference decided. Skips cleanly
 * without a GPU. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hw/cpu.h"
#include "moe/models.h"
#include "replay/replay.h"

#ifdef FT_HAVE_CUDA
#include <cuda_runtime_api.h>

static int have_gpu(void)
{
	int n = 0;
	return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

static void run_one(const char *fmt, int batch, int overlap, const char *alloc)
{
	struct ftcpu_info ci;
	assert_int_equal(ftcpu_probe(&ci), 0);
	struct ftrp_config c;
	ftrp_config_default(&c, FTRP_FULL);
	c.fmt = ftfmt_lookup(fmt);
	c.model = ftmodel_bw_dtype(c.fmt->id);
	c.layers = 2;
	c.batch = batch;
	c.steps = 6;
	c.warmup_steps = 8;
	c.gpu_warmup = 2;
	c.ncache = 1;
	c.cache[0] = 0.4;
	c.nwork = 2;
	c.work[0] = (struct ftrp_work){0, 0, 0};
	c.work[1] = (struct ftrp_work){0.85, 0, 0};
	c.nfrac = 2;
	c.fractions[0] = 0;
	c.fractions[1] = 0.5;
	c.ncaps = 1;
	c.caps[0] = 1;
	c.profile_fraction = 0.25;
	c.base.overlap = overlap;
	struct ftrp_ops ops;
	struct ftrp_gpu_opts o = {.device = 0, .cpu = &ci, .host_alloc = alloc, .host_gib = 0.25};
	assert_int_equal(ftrp_gpu_ops(&o, &ops), 0);
	json_t *blk = NULL;
	char err[1024] = "";
	int r = ftrp_run(&c, &ops, NULL, &blk, err, sizeof err);
	ftrp_gpu_ops_free(&ops);
	if (r)
		fail_msg("%s batch %d overlap %d %s: %d %s", fmt, batch, overlap, alloc, r, err);
	json_t *pts = json_object_get(blk, "points");
	assert_int_equal(json_array_size(pts), 2);
	json_t *m = json_object_get(json_array_get(pts, 0), "modes");
	assert_int_equal(json_array_size(m), 5); /* offload, profile f, f 0, f 0.5, cap 1 */
	/* f 0 sends every miss to the CPU; a step took some time */
	json_t *f0 = json_array_get(m, 2);
	assert_true(json_number_value(json_object_get(f0, "fetched_per_layer")) == 0);
	assert_true(json_number_value(json_object_get(json_object_get(f0, "ms_step"), "median")) > 0);
	assert_string_equal(json_string_value(json_object_get(blk, "host_alloc")), alloc);
	printf("# %s B=%d overlap=%d %s: uniform offload %.3f ms, f0.5 %.3f ms, winner %s\n", fmt, batch, overlap,
	       alloc, json_number_value(json_object_get(json_object_get(json_array_get(m, 0), "ms_step"), "median")),
	       json_number_value(json_object_get(json_object_get(json_array_get(m, 3), "ms_step"), "median")),
	       json_string_value(json_object_get(json_array_get(pts, 0), "winner")));
	json_decref(blk);
	ftcpu_release(&ci);
}

static void test_bf16(void **st)
{
	if (!have_gpu())
		skip();
	run_one("bf16", 1, 1, "register");
	run_one("bf16", 4, 1, "hostalloc");
	run_one("bf16", 1, 0, "register");
}

static void test_nvfp4(void **st)
{
	if (!have_gpu())
		skip();
	run_one("nvfp4", 1, 1, "register");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bf16),
		cmocka_unit_test(test_nvfp4),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
#else
static void test_none(void **st)
{
	skip();
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_none)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
#endif
