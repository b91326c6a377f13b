/* The replay's GPU step runner (src/replay/runner.c) on the device: small replays of bf16 and
 * nvfp4 (2 layers, a few steps) in every kind of mode (offload, hybrid fraction, cap, no overlap,
 * batch 4, both host allocations). ftrp_run itself fails (-EPROTO) when the device's decisions
 * (misses, fetched, CPU routes) differ from the CPU reference over the same steps, and the runner
 * fails when the CPU executor leaves a doorbell unanswered: a pass means the GPU slot cache, the
 * split, the handshake and the CPU path ran every step as the reference decided. test_paced: the
 * engine's CPU path as a fixed table (replay --cpu-kernel's pacing) lengthens the step by what the
 * table says. Skips cleanly without a GPU. */
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

/* A small replay: 2 layers of fmt at batch, steps timed steps, one cache size (0.4), uniform
 * routing first; the modes are the caller's. */
static void small_config(struct ftrp_config *c, const char *fmt, int batch, int steps)
{
	ftrp_config_default(c, FTRP_FULL);
	c->fmt = ftfmt_lookup(fmt);
	c->model = ftmodel_bw_dtype(c->fmt->id);
	c->layers = 2;
	c->batch = batch;
	c->steps = steps;
	c->warmup_steps = 8;
	c->gpu_warmup = 2;
	c->ncache = 1;
	c->cache[0] = 0.4;
	c->nwork = 1;
	c->work[0] = (struct ftrp_work){0, 0, 0};
}

/* Run c on the GPU runner with o (its cpu filled in here); the block, or the test fails with
 * what (a label) and ftrp_run's error. */
static json_t *run_block(const struct ftrp_config *c, struct ftrp_gpu_opts *o, const char *what)
{
	struct ftcpu_info ci;
	assert_int_equal(ftcpu_probe(&ci), 0);
	o->cpu = &ci;
	struct ftrp_ops ops;
	assert_int_equal(ftrp_gpu_ops(o, &ops), 0);
	json_t *blk = NULL;
	char err[1024] = "";
	int r = ftrp_run(c, &ops, NULL, &blk, err, sizeof err);
	ftrp_gpu_ops_free(&ops);
	ftcpu_release(&ci);
	if (r)
		fail_msg("%s: %d %s", what, r, err);
	return blk;
}

static void run_one(const char *fmt, int batch, int overlap, const char *alloc)
{
	struct ftrp_config c;
	small_config(&c, fmt, batch, 6);
	c.nwork = 2;
	c.work[1] = (struct ftrp_work){0.85, 0, 0};
	c.nfrac = 2;
	c.fractions[0] = 0;
	c.fractions[1] = 0.5;
	c.ncaps = 1;
	c.caps[0] = 1;
	c.profile_fraction = 0.25;
	c.base.overlap = overlap;
	struct ftrp_gpu_opts o = {.device = 0, .host_alloc = alloc, .host_gib = 0.25};
	char what[128];
	snprintf(what, sizeof what, "%s batch %d overlap %d %s", fmt, batch, overlap, alloc);
	json_t *blk = run_block(&c, &o, what);
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
}

/* The mode of a point's modes with fetch fraction f (hybrid), or NULL. */
static json_t *mode_f(json_t *pt, double f)
{
	json_t *m = json_object_get(pt, "modes"), *o;
	size_t i;
	json_array_foreach (m, i, o) {
		json_t *jf = json_object_get(o, "fetch_fraction");
		if (jf && fabs(json_number_value(jf) - f) < 1e-9)
			return o;
	}
	return NULL;
}

static double ms_of(json_t *mode)
{
	return json_number_value(json_object_get(json_object_get(mode, "ms_step"), "median"));
}

/* One uniform point, hybrid f 0 (every miss on the CPU) and f 1 (every miss fetched), with the
 * engine's CPU path as a table (pad_us NULL: our executor's time). *f0_ms, *f1_ms; the block. */
static json_t *run_paced(const double *pad_us, const double *fetch_us, int npad, double *f0_ms, double *f1_ms,
			 json_t **f0, json_t **f1)
{
	struct ftrp_config c;
	small_config(&c, "bf16", 1, 12);
	c.nfrac = 2;
	c.fractions[0] = 0;
	c.fractions[1] = 1;
	c.ncaps = 0;
	struct ftrp_gpu_opts o = {.device = 0, .host_alloc = "register", .host_gib = 0.25};
	if (pad_us) {
		o.cpu_pad_us = pad_us, o.cpu_pad_n = npad;
		o.fetch_pad_us = fetch_us, o.fetch_pad_n = npad;
	}
	json_t *blk = run_block(&c, &o, pad_us ? "paced" : "unpaced");
	json_t *pt = json_array_get(json_object_get(blk, "points"), 0);
	*f0 = mode_f(pt, 0), *f1 = mode_f(pt, 1);
	assert_non_null(*f0);
	assert_non_null(*f1);
	*f0_ms = ms_of(*f0), *f1_ms = ms_of(*f1);
	return blk;
}

/* The engine's CPU path as a fixed table (what `replay --cpu-kernel` feeds the runner): n CPU
 * routes hold a layer-step's CPU result 0.5 ms x n after its doorbell, m fetches hold the stream
 * 0.3 ms x m on the GPU's side. The step must take at least what the tables say for the routes
 * and fetches the mode made (the coordinator's hold, ftrs_delay's wait), well above the same
 * modes unpaced, and the block says what our executor spent beside the paced time. */
static void test_paced(void **st)
{
	if (!have_gpu())
		skip();
	double pad[9], fetch[9];
	for (int n = 0; n < 9; n++)
		pad[n] = 500.0 * n, fetch[n] = 300.0 * n;
	double u0, u1, p0, p1;
	json_t *uf0, *uf1, *pf0, *pf1;
	json_t *ub = run_paced(NULL, NULL, 0, &u0, &u1, &uf0, &uf1);
	json_t *pb = run_paced(pad, fetch, 9, &p0, &p1, &pf0, &pf1);
	int L = 2;
	double cpu = json_number_value(json_object_get(pf0, "cpu_per_layer"));
	double got = json_number_value(json_object_get(pf1, "fetched_per_layer"));
	double want0 = L * 0.5 * cpu, want1 = L * 0.3 * got; /* ms a step */
	printf("# paced: f0 %.3f ms (unpaced %.3f, table %.3f: %.2f CPU routes a layer-step), f1 %.3f ms (unpaced "
	       "%.3f, table %.3f: %.2f fetches)\n",
	       p0, u0, want0, cpu, p1, u1, want1, got);
	assert_true(cpu >= 2 && got >= 2); /* uniform routing at cache 0.4: several misses a layer-step */
	assert_true(p0 >= 0.8 * want0);
	assert_true(p0 >= u0 + 0.5 * want0);
	assert_true(p1 >= 0.8 * want1);
	assert_true(p1 >= u1 + 0.5 * want1);
	json_t *svc = json_object_get(pb, "cpu_service_us");
	assert_non_null(svc);
	assert_true(json_number_value(json_object_get(svc, "paced")) >= json_number_value(json_object_get(svc, "ours")));
	assert_null(json_object_get(ub, "cpu_service_us"));
	json_decref(ub);
	json_decref(pb);
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
		cmocka_unit_test(test_paced),
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
