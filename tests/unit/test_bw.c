/* bw: the decision and fetch fraction of reference §5, the plan, and the profile ftbw_run builds
 * from (fake) measurements: GPU host, GPU-less host, failures, trust warnings. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bw.h"
#include "cli/bw_print.h"
#include "bw_fake.h"
#include "ftprofile.h"
#include "../schema.h"

/* ---------------------------------------------------------------- decision */

static void test_decide_threshold(void **s)
{
	struct ftbw_decision d;
	ftbw_decide(true, true, 100.0, NULL, 40.0, NULL, 2.0, &d);
	assert_true(d.hybrid);
	assert_true(fabs(d.ratio - 2.5) < 1e-12);
	assert_string_equal(d.note, "");
	/* exactly threshold x gather is not "more than": offload */
	ftbw_decide(true, true, 100.0, NULL, 50.0, NULL, 2.0, &d);
	assert_false(d.hybrid);
	assert_true(fabs(d.ratio - 2.0) < 1e-12);
	ftbw_decide(true, true, 60.0, NULL, 50.0, NULL, 2.0, &d);
	assert_false(d.hybrid);
	/* the threshold is honoured */
	ftbw_decide(true, true, 60.0, NULL, 50.0, NULL, 1.1, &d);
	assert_true(d.hybrid);
}

static void test_decide_reasons(void **s)
{
	struct ftbw_decision d;
	/* fp8_block: no CPU path, whatever the numbers: a measured offload */
	ftbw_decide(false, true, 1000.0, NULL, 1.0, NULL, 2.0, &d);
	assert_true(d.measured);
	assert_false(d.hybrid);
	assert_non_null(strstr(d.note, "no CPU MoE path"));
	/* no GPU: no verdict, not a default offload, with or without a CPU path */
	ftbw_decide(true, false, 100.0, NULL, NAN, NULL, 2.0, &d);
	assert_false(d.measured);
	assert_true(isnan(d.ratio));
	assert_non_null(strstr(d.note, "no GPU"));
	ftbw_decide(false, false, NAN, NULL, NAN, NULL, 2.0, &d);
	assert_false(d.measured);
	/* failed CPU measurement, with its reason: no verdict */
	ftbw_decide(true, true, NAN, "executor: out of memory", 50.0, NULL, 2.0, &d);
	assert_false(d.measured);
	assert_non_null(strstr(d.note, "CPU MoE measurement failed"));
	assert_non_null(strstr(d.note, "out of memory"));
	assert_non_null(strstr(d.note, "no verdict"));
	/* failed gather; zero is never data */
	ftbw_decide(true, true, 100.0, NULL, 0.0, "CUDA error", 2.0, &d);
	assert_false(d.measured);
	assert_non_null(strstr(d.note, "PCIe gather measurement failed"));
	assert_true(isnan(d.ratio));
	/* measured both halves */
	ftbw_decide(true, true, 100.0, NULL, 40.0, NULL, 2.0, &d);
	assert_true(d.measured && d.hybrid);
}

static void test_fetch_fraction(void **s)
{
	/* the overlap pair wins: pcie_ov / (pcie_ov + cpu_ov) */
	assert_true(fabs(ftbw_fetch_fraction(100, 50, 60, 40) - 0.4) < 1e-12);
	/* without it: pcie / cpu */
	assert_true(fabs(ftbw_fetch_fraction(100, 25, NAN, NAN) - 0.25) < 1e-12);
	assert_true(fabs(ftbw_fetch_fraction(100, 25, 60, 0) - 0.25) < 1e-12); /* half a pair */
	/* clamped to at most 1 */
	assert_true(ftbw_fetch_fraction(10, 50, NAN, NAN) == 1.0);
	/* nothing measured */
	assert_true(isnan(ftbw_fetch_fraction(NAN, 50, NAN, NAN)));
	assert_true(isnan(ftbw_fetch_fraction(0, 0, 0, 0)));
}

/* The CPU MoE figure of many steps: one straggler does not make the profile invalid, a share of
 * slow steps over FTBW_VALID_SLOW_STEPS or a fast outlier does; without the share, min - max. */
static int valid_reasons(double lo, double hi, double slow, char *first, size_t n)
{
	json_t *p = json_pack("{s:{},s:{s:{s:f,s:{s:f,s:f,s:f,s:i}}}}", "ceilings", "dtype_kernels", "bf16",
			      "cpu_moe_gbs", 100.0, "cpu_moe_gbs_spread", "median", 100.0, "min", lo, "max", hi,
			      "samples", 512);
	if (!isnan(slow))
		json_object_set_new(json_object_get(json_object_get(p, "dtype_kernels"), "bf16"), "cpu_moe_slow_steps",
				    json_real(slow));
	int r = ftbw_check_valid(p, FTBW_VALID_SPREAD);
	json_t *why = json_object_get(p, "invalid_reasons");
	snprintf(first, n, "%s", json_array_size(why) ? json_string_value(json_array_get(why, 0)) : "");
	json_decref(p);
	return r;
}

static void test_check_valid_steps(void **s)
{
	char w[512];
	assert_int_equal(valid_reasons(15.0, 110.0, 0.002, w, sizeof w), 0); /* one straggler */
	assert_int_equal(valid_reasons(15.0, 110.0, 0.09, w, sizeof w), 0); /* a VM's quiet run */
	assert_int_equal(valid_reasons(15.0, 110.0, 0.25, w, sizeof w), 1);
	assert_non_null(strstr(w, "25.0% of the steps ran under 0.8 x the median (over 20%)"));
	assert_int_equal(valid_reasons(95.0, 180.0, 0.0, w, sizeof w), 1);
	assert_non_null(strstr(w, "80% over its median"));
	assert_int_equal(valid_reasons(15.0, 110.0, NAN, w, sizeof w), 1); /* no share: min - max */
	assert_non_null(strstr(w, "spread 15.0-110.0 GB/s"));
	assert_int_equal(valid_reasons(90.0, 110.0, NAN, w, sizeof w), 0);
}

static void test_synth_experts(void **s)
{
	size_t eb = ftfmt_expert_bytes(ftfmt_lookup("bf16"), 2048, 768); /* 9 MiB */
	assert_int_equal(ftbw_synth_experts(128, eb, FTBW_SYNTH_BYTES), 128);
	assert_int_equal(ftbw_synth_experts(256, eb, FTBW_SYNTH_BYTES), 227); /* 2048/9 */
	assert_int_equal(ftbw_synth_experts(128, 3ull << 30, FTBW_SYNTH_BYTES), 1);
	assert_int_equal(ftbw_synth_experts(128, 0, FTBW_SYNTH_BYTES), 0);
}

static void test_link_degraded(void **s)
{
	struct ftgpu_info g = {.link_gen_cur = 4, .link_gen_max = 5, .link_width_cur = 16, .link_width_max = 16};
	assert_true(ftbw_link_degraded(&g));
	g.link_gen_cur = 5;
	assert_false(ftbw_link_degraded(&g));
	g.link_width_cur = 8;
	assert_true(ftbw_link_degraded(&g));
	g.link_gen_cur = 0; /* unknown is not degraded */
	assert_false(ftbw_link_degraded(&g));
	assert_false(ftbw_link_degraded(NULL));
}

static void test_plan(void **s)
{
	struct ftbw_config c;
	struct ftbw_item it[FTBW_MAX_ITEMS];
	char skipped[256];
	ftbw_config_default(&c);
	for (int i = 0; i < ftmodel_bw_dtypes_count; i++)
		c.dtypes[c.ndtypes++] = ftmodel_bw_dtypes[i].format;
	int n = ftbw_plan(&c, it, FTBW_MAX_ITEMS, skipped, sizeof skipped);
	assert_int_equal(n, 5);
	assert_string_equal(it[0].label, "dtype:bf16");
	assert_true(it[0].is_dtype);
	assert_int_equal(it[0].expert_bytes, 9u << 20);
	assert_int_equal(it[0].synth_experts, 128);
	assert_string_equal(skipped, "");

	/* models x formats: gemma4-26b (I = 704) cannot hold fp8_block's 128-blocks */
	c.ndtypes = 0;
	c.models[c.nmodels++] = ftmodel_find(ftmodel_bw_models, ftmodel_bw_models_count, "qwen3-30b");
	c.models[c.nmodels++] = ftmodel_find(ftmodel_bw_models, ftmodel_bw_models_count, "gemma4-26b");
	c.formats[c.nformats++] = FTFMT_BF16;
	c.formats[c.nformats++] = FTFMT_FP8_BLOCK;
	n = ftbw_plan(&c, it, FTBW_MAX_ITEMS, skipped, sizeof skipped);
	assert_int_equal(n, 3);
	assert_string_equal(it[0].label, "qwen3-30b:bf16");
	assert_string_equal(it[1].label, "qwen3-30b:fp8_block");
	assert_string_equal(it[2].label, "gemma4-26b:bf16");
	assert_false(it[2].is_dtype);
	assert_string_equal(skipped, "gemma4-26b:fp8_block");
	/* too many */
	assert_int_equal(ftbw_plan(&c, it, 2, NULL, 0), -E2BIG);
	/* a model's own formats */
	c.nformats = 0;
	c.nmodels = 1;
	c.models[0] = ftmodel_find(ftmodel_bw_models, ftmodel_bw_models_count, "qwen3.6-moe");
	n = ftbw_plan(&c, it, FTBW_MAX_ITEMS, skipped, sizeof skipped);
	assert_int_equal(n, 3);
	assert_string_equal(it[2].label, "qwen3.6-moe:fp8_block");
}

/* ---------------------------------------------------------------- ftbw_run on fake ops */

struct fake {
	double cpu_gbs[FTFMT_COUNT];   /* per format: what the CPU MoE "measures" (0: fail) */
	double gather_gbs;
	double ov_cpu_scale, ov_gather_scale; /* overlap = alone * scale; 0: no overlap */
	double read_gbs[FTFMT_COUNT];  /* per format: read passes taken during the item (0: none) */
	int read_cpu_n[FTFMT_COUNT], read_other_n[FTFMT_COUNT];
	int fail_read, fail_measure, zero_sample, zero_read;
	int noisy_read, noisy_pcie, noisy_measure; /* the next calls of each give a wide spread */
	int read_calls;
	double sweep_decay;            /* --batch-sweep: cpu GB/s at batch b = cpu_gbs * sweep_decay^log2(b) */
	int measured_items, pcie_calls;
	char labels[FTBW_MAX_ITEMS][96];
};

static int fake_read(void *ctx, const struct ftbw_env *env, int passes, double *gbs, char *err, size_t n)
{
	struct fake *f = ctx;
	if (f->fail_read) {
		snprintf(err, n, "CPU read ceiling: cannot allocate");
		return -ENOMEM;
	}
	f->read_calls++;
	for (int i = 0; i < passes; i++)
		gbs[i] = 100.0 + i;
	if (f->noisy_read > 0 && passes > 1) {
		f->noisy_read--;
		gbs[0] = 20.0; /* a burst of other work */
	}
	return 0;
}

static int fake_pcie(void *ctx, const struct ftbw_env *env, bool h2d, size_t bytes, int iters, double *gbs,
		     char *err, size_t n)
{
	struct fake *f = ctx;
	f->pcie_calls++;
	for (int i = 0; i < iters; i++)
		gbs[i] = h2d ? 55.0 : 54.0;
	if (f->noisy_pcie > 0 && iters > 1) {
		f->noisy_pcie--;
		gbs[0] = 5.0;
	}
	return 0;
}

static int fake_measure(void *ctx, const struct ftbw_env *env, const struct ftbw_config *c,
			const struct ftbw_item *it, struct ftbw_meas *m, char *err, size_t n)
{
	struct fake *f = ctx;
	snprintf(f->labels[f->measured_items++], 96, "%s", it->label);
	if (f->fail_measure) {
		snprintf(err, n, "CUDA error: sticky");
		return -EIO;
	}
	if (it->fmt->cpu_path) {
		double v = f->cpu_gbs[it->fmt->id];
		if (v > 0) {
			m->cpu.rc = 0;
			m->cpu.n = c->kernel_cpu_iters;
			m->cpu.gbs = samples(v, m->cpu.n);
			if (f->zero_sample)
				m->cpu.gbs[1] = 0.0;
			if (f->noisy_measure > 0) {
				f->noisy_measure--;
				m->cpu.gbs[0] = v * 3; /* over the median by 200 % */
			}
			strcpy(m->cpu_isa, "avx512");
		} else {
			m->cpu.rc = -ENOMEM;
			snprintf(m->cpu.err, sizeof m->cpu.err, "executor: out of memory");
		}
	}
	double rv = f->read_gbs[it->fmt->id];
	if (rv > 0 && f->read_cpu_n[it->fmt->id] > 0) {
		m->read_cpu.rc = 0;
		m->read_cpu.n = f->read_cpu_n[it->fmt->id];
		m->read_cpu.gbs = samples(rv, m->read_cpu.n);
		if (f->zero_read)
			m->read_cpu.gbs[0] = 0.0;
	}
	if (rv > 0 && f->read_other_n[it->fmt->id] > 0) {
		m->read_other.rc = 0;
		m->read_other.n = f->read_other_n[it->fmt->id];
		m->read_other.gbs = samples(rv, m->read_other.n);
	}
	if (env->gpu) {
		m->gather.rc = 0;
		m->gather.n = c->kernel_pcie_iters;
		m->gather.gbs = samples(f->gather_gbs, m->gather.n);
		if (m->cpu.rc == 0) { /* the interleaved rounds' ratios: 2 % apart around the figure */
			static const double dev[] = {0.98, 1.0, 1.02, 1.03};
			m->npair = 4;
			for (int i = 0; i < 4; i++)
				m->pair_ratio[i] = f->cpu_gbs[it->fmt->id] / f->gather_gbs * dev[i];
		}
		if (m->cpu.rc == 0 && f->ov_cpu_scale > 0) {
			m->ov_cpu.rc = m->ov_gather.rc = 0;
			m->ov_cpu.n = m->ov_gather.n = 3;
			m->ov_cpu.gbs = samples(f->cpu_gbs[it->fmt->id] * f->ov_cpu_scale, 3);
			m->ov_gather.gbs = samples(f->gather_gbs * f->ov_gather_scale, 3);
		}
		if (m->cpu.rc == 0 && c->nbatch > 0) {
			m->nbatch = c->nbatch;
			for (int i = 0; i < c->nbatch; i++) {
				struct ftbw_batch *b = &m->bsw[i];
				b->batch = c->batches[i];
				b->experts = 8.0 * b->batch;
				b->cpu.rc = b->gather.rc = 0;
				b->cpu.n = b->gather.n = 4;
				b->cpu.gbs = samples(f->cpu_gbs[it->fmt->id] * pow(f->sweep_decay, log2(b->batch)), 4);
				b->gather.gbs = samples(f->gather_gbs, 4);
			}
		}
	}
	return 0;
}

static struct ftcpu_info fake_cpu(void)
{
	struct ftcpu_info ci;
	memset(&ci, 0, sizeof ci);
	strcpy(ci.model, "Test CPU");
	ci.logical_cpus = 4;
	ci.physical_cores = 2;
	ci.numa_nodes = 1;
	ci.isa = FTCPU_AVX2 | FTCPU_AVX512F;
	ci.llc_bytes = 32u << 20;
	return ci;
}

static struct ftgpu_info fake_gpu(int gen_cur, int width_cur)
{
	struct ftgpu_info g;
	memset(&g, 0, sizeof g);
	strcpy(g.uuid, "GPU-12345678-aaaa-bbbb-cccc-1234567890ab");
	strcpy(g.name, "NVIDIA H200");
	strcpy(g.pci_bus_id, "0000DEAD:FF:1F.7"); /* no such sysfs device: the link watch finds nothing */
	g.mem_total = 1ull << 37;
	g.cc_major = 9;
	g.link_gen_cur = gen_cur;
	g.link_gen_max = 5;
	g.link_width_cur = width_cur;
	g.link_width_max = 16;
	g.numa_node = 0;
	return g;
}

static void config_small(struct ftbw_config *c)
{
	config_small_base(c);
	for (int i = 0; i < ftmodel_bw_dtypes_count; i++)
		c->dtypes[c->ndtypes++] = ftmodel_bw_dtypes[i].format;
}

static int run_fake(struct fake *f, struct ftbw_config *c, struct ftgpu_info *g, json_t **prof, char *err)
{
	struct ftcpu_info ci = fake_cpu();
	int cpus[2] = {0, 1};
	struct ftbw_env env = {.cpu = &ci, .gpu = g, .no_gpu_why = "no NVIDIA driver is loaded", .cpus = cpus, .ncpus = 2};
	struct ftbw_ops ops = {fake_read, fake_pcie, fake_measure, f};
	return ftbw_run(c, &env, &ops, NULL, prof, err, 256);
}

static const char *rec_of(json_t *p, const char *fmt)
{
	return json_string_value(json_object_get(json_object_get(p, "dtypes"), fmt));
}

static void test_run_gpu(void **s)
{
	struct fake f = {.gather_gbs = 50.0, .ov_cpu_scale = 0.8, .ov_gather_scale = 0.9};
	f.cpu_gbs[FTFMT_BF16] = 120.0;   /* 2.4x: hybrid */
	f.cpu_gbs[FTFMT_NVFP4] = 90.0;   /* 1.8x: offload */
	f.cpu_gbs[FTFMT_MXFP4_TRITON] = 101.0;
	f.cpu_gbs[FTFMT_DS_FP4] = 100.0; /* exactly 2x: offload */
	struct ftbw_config c;
	config_small(&c);
	struct ftgpu_info g = fake_gpu(4, 8); /* a Gen5 x16 card trained at Gen4 x8 */
	json_t *p;
	char err[256];
	assert_int_equal(run_fake(&f, &c, &g, &p, err), 0);
	assert_non_null(p);
	assert_int_equal(f.pcie_calls, 2);
	assert_int_equal(f.measured_items, 5);

	assert_int_equal(json_integer_value(json_object_get(p, "version")), 4);
	assert_string_equal(json_string_value(json_object_get(json_object_get(p, "gpu"), "uuid")), g.uuid);
	assert_true(json_is_true(json_object_get(json_object_get(p, "gpu"), "link_degraded")));
	assert_true(has_warning(p, "PCIe link trained at Gen4 x8, below the card's Gen5 x16"));
	assert_int_equal(json_integer_value(json_object_get(json_object_get(p, "cpu"), "threads_used")), 2);
	json_t *ceil = json_object_get(p, "ceilings");
	assert_true(fabs(json_number_value(json_object_get(ceil, "cpu_stream_read_gbs")) - 101.0) < 1e-9);
	assert_true(fabs(json_number_value(json_object_get(ceil, "pcie_linear_h2d_gbs")) - 55.0) < 1e-9);
	assert_true(fabs(json_number_value(json_object_get(ceil, "pcie_linear_d2h_gbs")) - 54.0) < 1e-9);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(ceil, "cpu_stream_read_gbs_spread"), "samples")), 3);
	assert_int_equal(json_integer_value(json_object_get(ceil, "cpu_stream_read_phases")), 1);

	assert_string_equal(rec_of(p, "bf16"), "hybrid");
	assert_string_equal(rec_of(p, "nvfp4"), "offload");
	assert_string_equal(rec_of(p, "fp8_block"), "offload");
	assert_string_equal(rec_of(p, "mxfp4_triton"), "hybrid");
	assert_string_equal(rec_of(p, "ds_fp4"), "offload");

	json_t *e = entry_of(p, "bf16");
	assert_true(fabs(json_number_value(json_object_get(e, "cpu_moe_gbs")) - 120.0) < 1e-9);
	assert_true(fabs(json_number_value(json_object_get(e, "pcie_gather_gbs")) - 50.0) < 1e-9);
	assert_true(fabs(json_number_value(json_object_get(e, "ratio")) - 2.4) < 1e-9);
	assert_true(fabs(json_number_value(json_object_get(e, "cpu_moe_overlap_gbs")) - 96.0) < 1e-9);
	assert_true(fabs(json_number_value(json_object_get(e, "pcie_gather_overlap_gbs")) - 45.0) < 1e-9);
	json_t *sp = json_object_get(e, "cpu_moe_gbs_spread");
	assert_int_equal(json_integer_value(json_object_get(sp, "samples")), 5);
	assert_true(fabs(json_number_value(json_object_get(sp, "min")) - 118.8) < 1e-9);
	assert_true(fabs(json_number_value(json_object_get(sp, "max")) - 121.2) < 1e-9);
	assert_string_equal(json_string_value(json_object_get(e, "cpu_moe_isa")), "avx512");
	assert_int_equal(json_integer_value(json_object_get(e, "expert_bytes")), 9u << 20);
	assert_int_equal(json_integer_value(json_object_get(e, "synth_experts")), 128);
	assert_true(json_is_null(json_object_get(e, "note")));
	assert_true(json_is_null(json_object_get(e, "isa_sweep")));
	/* the fraction the profile's numbers imply, 45 / (45 + 96): from the entry as written, and
	 * as an engine reads it (libftprofile on the file) */
	double fr = ftbw_fetch_fraction(json_number_value(json_object_get(e, "cpu_moe_gbs")),
					json_number_value(json_object_get(e, "pcie_gather_gbs")),
					json_number_value(json_object_get(e, "cpu_moe_overlap_gbs")),
					json_number_value(json_object_get(e, "pcie_gather_overlap_gbs")));
	assert_true(fabs(fr - 45.0 / 141.0) < 1e-12);
	char pf[] = "/tmp/fttest_bw_profile_XXXXXX";
	int pfd = mkstemp(pf);
	assert_true(pfd >= 0);
	assert_int_equal(json_dumpfd(p, pfd, 0), 0);
	close(pfd);
	struct ftprof *rp;
	char perr[256];
	if (ftprof_load_file(pf, &rp, perr, sizeof perr) < 0)
		fail_msg("libftprofile: %s", perr);
	unlink(pf);
	double efr = -1;
	assert_int_equal(ftprof_fetch_fraction(rp, "bf16", &efr), 0);
	assert_true(fabs(efr - 45.0 / 141.0) < 1e-12);
	ftprof_free(rp);

	e = entry_of(p, "fp8_block");
	assert_true(json_is_null(json_object_get(e, "cpu_moe_gbs")));
	assert_true(json_is_null(json_object_get(e, "cpu_moe_gbs_spread")));
	assert_true(json_is_null(json_object_get(e, "ratio")));
	assert_true(json_is_number(json_object_get(e, "pcie_gather_gbs")));
	assert_non_null(strstr(json_string_value(json_object_get(e, "note")), "no CPU MoE path"));
	assert_int_equal(json_object_size(json_object_get(p, "workloads")), 0);
	json_decref(p);
}

static void test_run_models(void **s)
{
	struct fake f = {.gather_gbs = 50.0};
	f.cpu_gbs[FTFMT_BF16] = 120.0;
	f.cpu_gbs[FTFMT_NVFP4] = 130.0;
	struct ftbw_config c;
	config_small(&c);
	c.ndtypes = 0;
	c.models[c.nmodels++] = ftmodel_find(ftmodel_bw_models, ftmodel_bw_models_count, "qwen3.6-moe");
	struct ftgpu_info g = fake_gpu(5, 16);
	json_t *p;
	char err[256];
	assert_int_equal(run_fake(&f, &c, &g, &p, err), 0);
	assert_false(json_is_true(json_object_get(json_object_get(p, "gpu"), "link_degraded")));
	assert_false(has_warning(p, "PCIe link"));
	assert_int_equal(json_object_size(json_object_get(p, "dtypes")), 0);
	json_t *w = json_object_get(json_object_get(p, "workloads"), "qwen3.6-moe");
	assert_non_null(w);
	json_t *m = json_object_get(w, "model");
	assert_int_equal(json_integer_value(json_object_get(m, "hidden")), 2048);
	assert_int_equal(json_integer_value(json_object_get(m, "inter")), 512);
	assert_int_equal(json_integer_value(json_object_get(m, "experts")), 256);
	assert_int_equal(json_integer_value(json_object_get(m, "top_k")), 8);
	json_t *rb = json_object_get(w, "recommended_moe_backend");
	assert_string_equal(json_string_value(json_object_get(rb, "bf16")), "hybrid");
	assert_string_equal(json_string_value(json_object_get(rb, "nvfp4")), "hybrid");
	assert_string_equal(json_string_value(json_object_get(rb, "fp8_block")), "offload");
	/* no overlap measured: the pair is null, the plain pair gives the fraction */
	json_t *e = json_object_get(json_object_get(w, "kernels"), "bf16");
	assert_true(json_is_null(json_object_get(e, "cpu_moe_overlap_gbs")));
	assert_true(json_is_null(json_object_get(e, "pcie_gather_overlap_gbs_spread")));
	json_decref(p);
}

static void test_run_no_gpu(void **s)
{
	struct fake f = {.gather_gbs = 50.0};
	for (int i = 0; i < FTFMT_COUNT; i++)
		f.cpu_gbs[i] = 500.0; /* fast CPU, but no GPU: still offload */
	struct ftbw_config c;
	config_small(&c);
	json_t *p;
	char err[256];
	assert_int_equal(run_fake(&f, &c, NULL, &p, err), 0);
	assert_int_equal(f.pcie_calls, 0);
	assert_true(json_is_null(json_object_get(p, "gpu")));
	json_t *ceil = json_object_get(p, "ceilings");
	assert_true(json_is_number(json_object_get(ceil, "cpu_stream_read_gbs")));
	assert_true(json_is_null(json_object_get(ceil, "pcie_linear_h2d_gbs")));
	assert_true(json_is_null(json_object_get(ceil, "pcie_linear_d2h_gbs_spread")));
	const char *k;
	json_t *e;
	json_object_foreach(json_object_get(p, "dtype_kernels"), k, e) {
		/* no verdict: null for the seed's reader to skip, "unmeasured" in dtypes */
		assert_true(json_is_null(json_object_get(e, "recommended")));
		assert_string_equal(rec_of(p, k), "unmeasured");
		assert_true(json_is_null(json_object_get(e, "pcie_gather_gbs")));
		assert_true(json_is_null(json_object_get(e, "synth_experts")));
		assert_true(json_is_string(json_object_get(e, "note")));
	}
	assert_true(json_is_number(json_object_get(entry_of(p, "bf16"), "cpu_moe_gbs")));
	assert_non_null(strstr(json_string_value(json_object_get(entry_of(p, "bf16"), "note")), "no GPU"));
	assert_true(has_warning(p, "no GPU (no NVIDIA driver is loaded)"));
	/* ... and a CPU MoE above the read ceiling is called out, and makes the profile not valid */
	assert_true(has_warning(p, "above the CPU read ceiling"));
	assert_true(json_is_false(json_object_get(p, "valid")));
	json_t *why = json_object_get(p, "invalid_reasons");
	assert_true(json_array_size(why) >= 1);
	assert_non_null(strstr(json_string_value(json_array_get(why, 0)), "above the CPU read ceiling"));
	json_decref(p);
}

static void test_run_failures(void **s)
{
	struct ftbw_config c;
	config_small(&c);
	struct ftgpu_info g = fake_gpu(5, 16);
	json_t *p = (json_t *)1;
	char err[256];
	/* a failed ceiling: no profile at all */
	struct fake f = {.gather_gbs = 50.0, .fail_read = 1};
	assert_int_equal(run_fake(&f, &c, &g, &p, err), -ENOMEM);
	assert_null(p);
	assert_non_null(strstr(err, "CPU read ceiling"));
	assert_int_equal(f.measured_items, 0);
	/* a fatal measurement error: no profile either */
	struct fake f2 = {.gather_gbs = 50.0, .fail_measure = 1};
	assert_int_equal(run_fake(&f2, &c, &g, &p, err), -EIO);
	assert_null(p);
	/* a failed CPU MoE (bf16: 0 = fails) and a zero sample (all others): no verdict, a note */
	struct fake f3 = {.gather_gbs = 10.0, .zero_sample = 1};
	for (int i = 1; i < FTFMT_COUNT; i++)
		f3.cpu_gbs[i] = 500.0;
	assert_int_equal(run_fake(&f3, &c, &g, &p, err), 0);
	json_t *e = entry_of(p, "bf16");
	assert_true(json_is_null(json_object_get(e, "recommended")));
	assert_string_equal(rec_of(p, "bf16"), "unmeasured");
	assert_non_null(strstr(json_string_value(json_object_get(e, "note")), "out of memory"));
	assert_true(json_is_null(json_object_get(e, "cpu_moe_gbs")));
	e = entry_of(p, "nvfp4");
	assert_true(json_is_null(json_object_get(e, "recommended")));
	assert_non_null(strstr(json_string_value(json_object_get(e, "note")), "not a positive rate"));
	assert_true(has_warning(p, "dtype:bf16: CPU MoE failed"));
	json_decref(p);
}

/* Every profile ftbw_run builds passes api/schemas/profile.schema.json (the GPU path too, which
 * CI can only reach through fake measurements). */
static void assert_schema(json_t *p)
{
	char err[512] = "";
	int r = ftt_schema_validate("api/schemas/profile.schema.json", p, err, sizeof err);
	if (r)
		print_error("%s (run from the repository root)\n", err);
	assert_int_equal(r, 0);
}

/* --batch-sweep: every entry gains batch_sweep and hybrid_max_batch (the seed's batch-1 fields
 * unchanged), the schema holds, and hybrid_max_batch is the last batch of an unbroken run of
 * wins from the first. */
static void test_batch_sweep(void **s)
{
	/* cpu 120 at batch 1, halving every doubling; gather 50, threshold 2: batch 1 wins (2.4),
	 * batch 2 loses (1.2) */
	struct fake f = {.gather_gbs = 50.0, .sweep_decay = 0.5};
	f.cpu_gbs[FTFMT_BF16] = 120.0;
	f.cpu_gbs[FTFMT_NVFP4] = 90.0; /* batch 1 already loses */
	struct ftbw_config c;
	config_small(&c);
	const int bs[] = {1, 2, 4, 32};
	c.nbatch = 4;
	memcpy(c.batches, bs, sizeof bs);
	struct ftgpu_info g = fake_gpu(5, 16);
	json_t *p;
	char err[256];
	assert_int_equal(run_fake(&f, &c, &g, &p, err), 0);
	assert_schema(p);
	json_t *e = entry_of(p, "bf16"), *sw = json_object_get(e, "batch_sweep");
	assert_int_equal(json_array_size(sw), 4);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(sw, 3), "batch")), 32);
	assert_true(fabs(json_number_value(json_object_get(json_array_get(sw, 0), "ratio")) - 2.4) < 1e-9);
	assert_string_equal(json_string_value(json_object_get(json_array_get(sw, 1), "recommended")), "offload");
	assert_int_equal(json_integer_value(json_object_get(e, "hybrid_max_batch")), 1);
	assert_true(fabs(json_number_value(json_object_get(e, "cpu_moe_gbs")) - 120.0) < 1e-9); /* batch 1, unchanged */
	assert_int_equal(json_integer_value(json_object_get(entry_of(p, "nvfp4"), "hybrid_max_batch")), 0);
	assert_true(json_is_array(json_object_get(json_object_get(json_object_get(p, "tool"), "params"), "batch_sweep")));
	/* the text summary: each batch's figures and ratio, and the largest batch hybrid still wins */
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	ftcli_bw_summary(m, p);
	fclose(m);
	char want[512] = "batch: cpu/gather GB/s (ratio)";
	size_t wl = strlen(want);
	for (size_t i = 0; i < json_array_size(sw); i++) {
		const json_t *r = json_array_get(sw, i);
		wl += (size_t)snprintf(want + wl, sizeof want - wl, "  %d: %.1f/%.1f (%.2f)",
				       (int)json_integer_value(json_object_get(r, "batch")),
				       json_number_value(json_object_get(r, "cpu_moe_gbs")),
				       json_number_value(json_object_get(r, "pcie_gather_gbs")),
				       json_number_value(json_object_get(r, "ratio")));
	}
	snprintf(want + wl, sizeof want - wl, "; hybrid up to batch 1\n");
	if (!strstr(buf, want))
		fail_msg("the batch sweep in the summary, want\n%s\nin\n%s", want, buf);
	free(buf);
	json_decref(p);
	/* no sweep: null, and the schema still holds */
	c.nbatch = 0;
	assert_int_equal(run_fake(&f, &c, &g, &p, err), 0);
	assert_true(json_is_null(json_object_get(entry_of(p, "bf16"), "batch_sweep")));
	assert_true(json_is_null(json_object_get(entry_of(p, "bf16"), "hybrid_max_batch")));
	assert_schema(p);
	json_decref(p);
	/* the rule alone: the run of wins must start at the first batch; a missing figure is -1 */
	const int b5[] = {1, 2, 4, 8, 16};
	const double cpu[] = {300, 250, 90, 200, 300}, pcie[] = {50, 50, 50, 50, 50};
	assert_int_equal(ftbw_hybrid_max_batch(5, b5, cpu, pcie, 2.0), 2);
	assert_int_equal(ftbw_hybrid_max_batch(2, b5 + 2, cpu + 2, pcie, 2.0), 0);
	assert_int_equal(ftbw_hybrid_max_batch(1, b5, cpu, pcie, 10.0), 0);
	const double gone[] = {300, NAN};
	assert_int_equal(ftbw_hybrid_max_batch(2, b5, gone, pcie, 2.0), -1);
	assert_int_equal(ftbw_hybrid_max_batch(2, b5, cpu, (double[]){50, 0}, 2.0), -1);
}

static void test_schema(void **s)
{
	struct fake f = {.gather_gbs = 50.0, .ov_cpu_scale = 0.8, .ov_gather_scale = 0.9};
	f.cpu_gbs[FTFMT_BF16] = 120.0;
	f.cpu_gbs[FTFMT_NVFP4] = 70.0;
	struct ftbw_config c;
	config_small(&c);
	c.models[c.nmodels++] = ftmodel_find(ftmodel_bw_models, ftmodel_bw_models_count, "qwen3.6-moe");
	c.models[c.nmodels++] = ftmodel_find(ftmodel_bw_models, ftmodel_bw_models_count, "gemma4-26b");
	c.formats[c.nformats++] = FTFMT_BF16;
	c.formats[c.nformats++] = FTFMT_FP8_BLOCK; /* gemma4-26b:fp8_block is skipped */
	struct ftgpu_info g = fake_gpu(4, 8);
	json_t *p;
	char err[256];
	assert_int_equal(run_fake(&f, &c, &g, &p, err), 0);
	assert_schema(p);
	/* the ratio per interleaved round: its spread next to the ratio */
	json_t *rs = json_object_get(entry_of(p, "bf16"), "ratio_rounds_spread");
	assert_true(json_is_object(rs));
	assert_true(fabs(json_number_value(json_object_get(rs, "min")) - 2.4 * 0.98) < 1e-9);
	assert_true(fabs(json_number_value(json_object_get(rs, "max")) - 2.4 * 1.03) < 1e-9);
	assert_int_equal(json_integer_value(json_object_get(rs, "samples")), 4);
	/* the median of the pairs' ratios (even count: the mean of the middle two) */
	assert_true(fabs(json_number_value(json_object_get(entry_of(p, "bf16"), "ratio_paired")) - 2.4 * 1.01) < 1e-9);
	/* the fake's CPU samples are all equal: no step under 0.8 x the median */
	assert_true(fabs(json_number_value(json_object_get(entry_of(p, "bf16"), "cpu_moe_slow_steps"))) < 1e-12);
	/* a sweep, with a failed tier */
	json_t *e = entry_of(p, "bf16");
	json_object_set_new(e, "isa_sweep", json_pack("{s:f,s:n}", "avx2", 80.0, "scalar"));
	assert_schema(p);
	json_decref(p);
	assert_int_equal(run_fake(&f, &c, NULL, &p, err), 0);
	assert_schema(p);
	assert_true(json_is_null(json_object_get(entry_of(p, "bf16"), "ratio_rounds_spread"))); /* no GPU */
	assert_true(json_is_null(json_object_get(entry_of(p, "bf16"), "ratio_paired")));
	/* and the schema does bite: a figure of the wrong type */
	json_object_set_new(entry_of(p, "bf16"), "cpu_moe_gbs", json_string("fast"));
	assert_int_equal(ftt_schema_validate("api/schemas/profile.schema.json", p, err, sizeof err), -EINVAL);
	json_decref(p);
}

static void test_summary(void **s)
{
	struct fake f = {.gather_gbs = 50.0, .ov_cpu_scale = 0.8, .ov_gather_scale = 0.9};
	f.cpu_gbs[FTFMT_BF16] = 120.0;
	struct ftbw_config c;
	config_small(&c);
	struct ftgpu_info g = fake_gpu(4, 8);
	json_t *p;
	char err[256], *buf = NULL;
	size_t len = 0;
	assert_int_equal(run_fake(&f, &c, &g, &p, err), 0);
	FILE *m = open_memstream(&buf, &len);
	ftcli_bw_summary(m, p);
	fclose(m);
	assert_non_null(strstr(buf, "Gen4 x8 trained (card max Gen5 x16)"));
	assert_non_null(strstr(buf, "DEGRADED"));
	assert_non_null(strstr(buf, "hybrid"));
	assert_non_null(strstr(buf, "0.319")); /* 45 / 141 */
	assert_non_null(strstr(buf, "warnings"));
	free(buf);
	json_decref(p);
}

/* The ceiling from phases of read passes: the highest phase median over phase 0 and the phases of
 * at least FTBW_READ_PHASE_MIN passes; the spread over every pass. */
static void test_read_ceiling(void **s)
{
	double v[] = {100, 101, 102,      /* phase 0: median 101 */
		      110, 113, 111, 112, /* median 111.5 */
		      500,                /* a single pass: too few to count, but in the spread */
		      90, 95, 92};        /* median 92 */
	int len[] = {3, 4, 1, 0, 3};
	struct ftstat all;
	int counted = -1;
	double c = ftbw_read_ceiling(v, len, 5, &all, &counted);
	assert_true(fabs(c - 111.5) < 1e-12);
	assert_int_equal(counted, 3);
	assert_int_equal(all.samples, 11);
	assert_true(fabs(all.max - 500) < 1e-12);
	assert_true(fabs(all.min - 90) < 1e-12);
	assert_true(fabs(all.median - 102) < 1e-12);
	/* phase 0 always counts, even with fewer passes than the minimum */
	int len0[] = {1, 2};
	c = ftbw_read_ceiling(v, len0, 2, NULL, &counted);
	assert_true(fabs(c - 100) < 1e-12);
	assert_int_equal(counted, 1);
	/* the run's initial passes alone: their median, as before */
	c = ftbw_read_ceiling(v, len, 1, NULL, NULL);
	assert_true(fabs(c - 101) < 1e-12);
	/* nothing measured */
	int none[] = {0};
	assert_true(isnan(ftbw_read_ceiling(v, none, 1, &all, &counted)));
	assert_int_equal(all.samples, 0);
	assert_int_equal(counted, 0);
}

/* A run whose read rate drifts: the ceiling follows the fastest phase, each CPU MoE figure gets
 * the read rate measured next to it, and a kernel faster than that rate is called out. */
static void test_run_read_phases(void **s)
{
	struct fake f = {.gather_gbs = 50.0};
	f.cpu_gbs[FTFMT_BF16] = 120.0;  /* above the initial passes (~101), below its own (130) */
	f.read_gbs[FTFMT_BF16] = 130.0;
	f.read_cpu_n[FTFMT_BF16] = 4;
	f.read_other_n[FTFMT_BF16] = 3;
	f.cpu_gbs[FTFMT_NVFP4] = 115.0; /* above the passes next to it (median 99.5): warned */
	f.read_gbs[FTFMT_NVFP4] = 100.0;
	f.read_cpu_n[FTFMT_NVFP4] = 4;
	f.cpu_gbs[FTFMT_DS_FP4] = 60.0; /* one pass only: too few for a phase, still in the spread */
	f.read_gbs[FTFMT_DS_FP4] = 400.0;
	f.read_cpu_n[FTFMT_DS_FP4] = 1;
	f.cpu_gbs[FTFMT_MXFP4_TRITON] = 50.0; /* no passes of its own */
	struct ftbw_config c;
	config_small(&c);
	struct ftgpu_info g = fake_gpu(5, 16);
	json_t *p;
	char err[256];
	assert_int_equal(run_fake(&f, &c, &g, &p, err), 0);
	json_t *ceil = json_object_get(p, "ceilings");
	/* bf16's phase: 128.7, 130, 131.3, 128.7 + 128.7, 130, 131.3 -> median 130 */
	assert_true(fabs(json_number_value(json_object_get(ceil, "cpu_stream_read_gbs")) - 130.0) < 1e-9);
	assert_int_equal(json_integer_value(json_object_get(ceil, "cpu_stream_read_phases")), 3);
	json_t *sp = json_object_get(ceil, "cpu_stream_read_gbs_spread");
	assert_int_equal(json_integer_value(json_object_get(sp, "samples")), 3 + 7 + 4 + 1);
	assert_true(fabs(json_number_value(json_object_get(sp, "max")) - 396.0) < 1e-9);
	assert_true(fabs(json_number_value(json_object_get(sp, "min")) - 99.0) < 1e-9);
	/* the adjacent rate: the passes interleaved with the cpu figure's rounds only */
	json_t *e = entry_of(p, "bf16");
	assert_true(fabs(json_number_value(json_object_get(e, "cpu_read_adjacent_gbs")) - 129.35) < 1e-9);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(e, "cpu_read_adjacent_gbs_spread"), "samples")), 4);
	e = entry_of(p, "mxfp4_triton");
	assert_true(json_is_null(json_object_get(e, "cpu_read_adjacent_gbs")));
	assert_true(json_is_null(json_object_get(e, "cpu_read_adjacent_gbs_spread")));
	e = entry_of(p, "fp8_block"); /* no CPU path: no adjacent rate */
	assert_true(json_is_null(json_object_get(e, "cpu_read_adjacent_gbs")));
	/* the warnings: nvfp4 beats the passes next to it, nothing beats the run's ceiling */
	assert_true(has_warning(p, "dtype:nvfp4: CPU MoE 115.0 GB/s is above the CPU read rate measured next to it 99.5"));
	assert_false(has_warning(p, "dtype:bf16: CPU MoE"));
	assert_false(has_warning(p, "above the CPU read ceiling"));
	assert_schema(p);
	/* the summary names the statistic */
	char *buf = NULL;
	size_t blen = 0;
	FILE *m = open_memstream(&buf, &blen);
	ftcli_bw_summary(m, p);
	fclose(m);
	assert_non_null(strstr(buf, "best phase median of 3 phases"));
	free(buf);
	json_decref(p);

	/* a pass that is not a positive rate: the item's passes are left out, with a warning */
	f.zero_read = 1;
	f.read_other_n[FTFMT_BF16] = 0;
	assert_int_equal(run_fake(&f, &c, &g, &p, err), 0);
	ceil = json_object_get(p, "ceilings");
	assert_true(has_warning(p, "dtype:bf16: CPU read passes left out"));
	assert_true(json_is_null(json_object_get(entry_of(p, "bf16"), "cpu_read_adjacent_gbs")));
	/* the fastest remaining phase: the initial passes (101); bf16 120 is now above it */
	assert_true(fabs(json_number_value(json_object_get(ceil, "cpu_stream_read_gbs")) - 101.0) < 1e-9);
	assert_true(has_warning(p, "dtype:bf16: CPU MoE 120.0 GB/s is above the CPU read ceiling 101.0"));
	assert_schema(p);
	json_decref(p);
}

/* ---------------------------------------------------------------- an oracle on raw samples */

/* Skewed samples (one fast outlier, the rest spread unevenly), so that the median, the mean,
 * the max and the min of a part each give a different ratio: every figure of the entry is
 * recomputed here from the raw samples and compared. */
static double *skewed(double v, int n, unsigned seed)
{
	double *a = malloc((size_t)n * sizeof *a);
	unsigned x = seed * 2654435761u + 12345u;
	for (int i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		a[i] = v * (0.9 + 0.2 * (double)((x >> 8) % 1000) / 1000.0);
	}
	a[n / 2] = v * 1.9; /* one outlier far above */
	return a;
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double oracle_median(const double *v, int n)
{
	double *c = malloc((size_t)n * sizeof *c);
	memcpy(c, v, (size_t)n * sizeof *c);
	qsort(c, (size_t)n, sizeof *c, cmp_dbl);
	double m = n % 2 ? c[n / 2] : (c[n / 2 - 1] + c[n / 2]) / 2.0;
	free(c);
	return m;
}

static void check_figure(json_t *o, const char *key, const struct ftbw_part *p)
{
	char sk[96];
	snprintf(sk, sizeof sk, "%s_spread", key);
	double lo = p->gbs[0], hi = p->gbs[0];
	for (int i = 1; i < p->n; i++) {
		lo = p->gbs[i] < lo ? p->gbs[i] : lo;
		hi = p->gbs[i] > hi ? p->gbs[i] : hi;
	}
	double med = oracle_median(p->gbs, p->n);
	if (fabs(json_number_value(json_object_get(o, key)) - med) > 1e-9)
		fail_msg("%s: %.6f, the median of its %d samples is %.6f", key,
			 json_number_value(json_object_get(o, key)), p->n, med);
	json_t *sp = json_object_get(o, sk);
	assert_true(fabs(json_number_value(json_object_get(sp, "median")) - med) < 1e-9);
	assert_true(fabs(json_number_value(json_object_get(sp, "min")) - lo) < 1e-9);
	assert_true(fabs(json_number_value(json_object_get(sp, "max")) - hi) < 1e-9);
	assert_int_equal(json_integer_value(json_object_get(sp, "samples")), p->n);
}

static void test_entry_oracle(void **s)
{
	(void)s;
	const double thr = 2.0;
	/* sample counts odd and even, CPU/gather levels around the threshold */
	static const int counts[] = {3, 4, 5, 8, 9};
	static const double cpu_lv[] = {95.0, 99.0, 101.0, 105.0};
	int checked = 0;
	for (size_t ci = 0; ci < sizeof counts / sizeof *counts; ci++)
		for (size_t li = 0; li < sizeof cpu_lv / sizeof *cpu_lv; li++) {
			int n = counts[ci];
			struct ftbw_item it;
			memset(&it, 0, sizeof it);
			it.fmt = ftfmt_get(FTFMT_BF16);
			it.is_dtype = true;
			it.expert_bytes = 9u << 20;
			it.synth_experts = 16;
			snprintf(it.label, sizeof it.label, "dtype:bf16");
			struct ftbw_meas m;
			memset(&m, 0, sizeof m);
			m.cpu = (struct ftbw_part){.rc = 0, .n = n, .gbs = skewed(cpu_lv[li], n, (unsigned)(ci * 7 + li))};
			m.gather = (struct ftbw_part){.rc = 0, .n = n + 1, .gbs = skewed(50.0, n + 1, (unsigned)(ci + 100))};
			m.ov_cpu = (struct ftbw_part){.rc = 0, .n = n, .gbs = skewed(cpu_lv[li] * 0.8, n, 3u + (unsigned)li)};
			m.ov_gather = (struct ftbw_part){.rc = 0, .n = n, .gbs = skewed(45.0, n, 5u + (unsigned)ci)};
			m.read_cpu.rc = m.read_other.rc = FTBW_NOT_RUN;
			strcpy(m.cpu_isa, "avx2");
			m.nbatch = 3;
			for (int b = 0; b < 3; b++) {
				m.bsw[b].batch = 1 << (2 * b);
				m.bsw[b].experts = 8.0 * m.bsw[b].batch;
				m.bsw[b].cpu = (struct ftbw_part){.rc = 0, .n = n, .gbs = skewed(cpu_lv[li] / (1 + b), n, 40u + (unsigned)b)};
				m.bsw[b].gather = (struct ftbw_part){.rc = 0, .n = n, .gbs = skewed(50.0, n, 50u + (unsigned)b)};
			}
			json_t *e = ftbw_entry_json(&it, &m, true, thr);
			assert_non_null(e);
			check_figure(e, "cpu_moe_gbs", &m.cpu);
			check_figure(e, "pcie_gather_gbs", &m.gather);
			check_figure(e, "cpu_moe_overlap_gbs", &m.ov_cpu);
			check_figure(e, "pcie_gather_overlap_gbs", &m.ov_gather);
			double ratio = oracle_median(m.cpu.gbs, m.cpu.n) / oracle_median(m.gather.gbs, m.gather.n);
			if (fabs(json_number_value(json_object_get(e, "ratio")) - ratio) > 1e-9)
				fail_msg("n=%d cpu~%.0f: ratio %.6f, the medians' ratio is %.6f", n, cpu_lv[li],
					 json_number_value(json_object_get(e, "ratio")), ratio);
			const char *want = ratio > thr ? "hybrid" : "offload";
			assert_string_equal(json_string_value(json_object_get(e, "recommended")), want);
			int slow = 0;
			double cmed = oracle_median(m.cpu.gbs, m.cpu.n);
			for (int i = 0; i < n; i++)
				slow += m.cpu.gbs[i] < 0.8 * cmed;
			assert_true(fabs(json_number_value(json_object_get(e, "cpu_moe_slow_steps")) - (double)slow / n) < 1e-12);
			json_t *rows = json_object_get(e, "batch_sweep");
			assert_int_equal(json_array_size(rows), 3);
			for (int b = 0; b < 3; b++) {
				json_t *r = json_array_get(rows, (size_t)b);
				check_figure(r, "cpu_moe_gbs", &m.bsw[b].cpu);
				check_figure(r, "pcie_gather_gbs", &m.bsw[b].gather);
				double rr = oracle_median(m.bsw[b].cpu.gbs, n) / oracle_median(m.bsw[b].gather.gbs, n);
				assert_true(fabs(json_number_value(json_object_get(r, "ratio")) - rr) < 1e-9);
				assert_string_equal(json_string_value(json_object_get(r, "recommended")),
						    rr > thr ? "hybrid" : "offload");
			}
			json_decref(e);
			ftbw_meas_release(&m);
			checked++;
		}
	assert_int_equal(checked, 20);
}

/* A phase whose spread fails the checks is measured again (at most FTBW_REMEASURE more times),
 * said in the warnings and recorded in "remeasured"; the last try is kept. */
static void test_remeasure(void **s)
{
	struct fake f = {.gather_gbs = 50.0, .noisy_read = 1, .noisy_pcie = 1, .noisy_measure = 1};
	f.cpu_gbs[FTFMT_BF16] = 60.0;
	struct ftbw_config c;
	config_small_base(&c);
	c.dtypes[c.ndtypes++] = FTFMT_BF16;
	struct ftgpu_info g = fake_gpu(5, 16);
	json_t *p;
	char err[256];
	assert_int_equal(run_fake(&f, &c, &g, &p, err), 0);
	assert_int_equal(f.read_calls, 2);
	assert_int_equal(f.pcie_calls, 3); /* H2D twice, D2H once */
	assert_int_equal(f.measured_items, 2);
	assert_true(json_is_true(json_object_get(p, "valid")));
	json_t *rm = json_object_get(p, "remeasured");
	assert_int_equal(json_array_size(rm), 3);
	assert_string_equal(json_string_value(json_object_get(json_array_get(rm, 0), "phase")), "CPU read ceiling");
	assert_string_equal(json_string_value(json_object_get(json_array_get(rm, 1), "phase")), "PCIe host-to-device");
	assert_int_equal(json_integer_value(json_object_get(json_array_get(rm, 2), "tries")), 2);
	assert_true(json_is_true(json_object_get(json_array_get(rm, 2), "passed")));
	assert_true(has_warning(p, "CPU read ceiling spread 20.0-102.0 GB/s is 81% of its median 101.0 (over 75%): measuring"));
	assert_true(has_warning(p, "measuring it again (try 2 of 3)"));
	assert_schema(p);
	json_decref(p);

	/* busy for good: the item is measured 1 + FTBW_REMEASURE times, then the profile is not valid */
	struct fake busy = {.gather_gbs = 50.0, .noisy_measure = 100};
	busy.cpu_gbs[FTFMT_BF16] = 60.0;
	assert_int_equal(run_fake(&busy, &c, &g, &p, err), 0);
	assert_int_equal(busy.measured_items, 1 + FTBW_REMEASURE);
	assert_true(json_is_false(json_object_get(p, "valid")));
	rm = json_object_get(p, "remeasured");
	assert_int_equal(json_array_size(rm), 1);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(rm, 0), "tries")), 1 + FTBW_REMEASURE);
	assert_true(json_is_false(json_object_get(json_array_get(rm, 0), "passed")));
	assert_true(has_warning(p, "(try 3 of 3)"));
	json_decref(p);

	/* --no-checks: never measured again */
	struct fake quiet = {.gather_gbs = 50.0, .noisy_measure = 100};
	quiet.cpu_gbs[FTFMT_BF16] = 60.0;
	c.no_checks = true;
	assert_int_equal(run_fake(&quiet, &c, &g, &p, err), 0);
	assert_int_equal(quiet.measured_items, 1);
	assert_int_equal(json_array_size(json_object_get(p, "remeasured")), 0);
	json_decref(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decide_threshold), cmocka_unit_test(test_decide_reasons),
		cmocka_unit_test(test_fetch_fraction),
		cmocka_unit_test(test_check_valid_steps),   cmocka_unit_test(test_synth_experts),
		cmocka_unit_test(test_link_degraded),    cmocka_unit_test(test_plan),
		cmocka_unit_test(test_run_gpu),          cmocka_unit_test(test_run_models),
		cmocka_unit_test(test_run_no_gpu),       cmocka_unit_test(test_run_failures),
		cmocka_unit_test(test_schema),           cmocka_unit_test(test_summary),
		cmocka_unit_test(test_batch_sweep),      cmocka_unit_test(test_entry_oracle),
		cmocka_unit_test(test_read_ceiling),     cmocka_unit_test(test_run_read_phases),
		cmocka_unit_test(test_remeasure),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
