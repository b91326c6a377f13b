/* libftprofile: the reader choosing by deployment (ftprof_*_deployment) on profiles written the
 * way ftbench bw --gpu all writes them, and on a profile of one GPU. */
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
#include "ftprofile.h"

/* bf16: alone hybrid (120 / 50), at once offload (72 / 48, overlap 43.2 / 57.6);
 * nvfp4: hybrid both ways; a workload qwen3-30b:bf16 (alone hybrid, at once offload). */
static const char *doc =
	"{\"version\":4,\"deployment\":\"%s\",\"gpu\":{\"uuid\":\"GPU-1\",\"name\":\"NVIDIA H200\"},"
	"\"dtypes\":{\"bf16\":\"%s\",\"nvfp4\":\"hybrid\"},"
	"\"dtype_kernels\":{"
	" \"bf16\":{\"cpu_moe_gbs\":120,\"pcie_gather_gbs\":50,\"cpu_moe_overlap_gbs\":96,"
	"  \"pcie_gather_overlap_gbs\":45,\"recommended\":\"%s\",\"recommended_isolated\":\"hybrid\","
	"  \"concurrent\":{\"cpu_moe_gbs\":72,\"pcie_gather_gbs\":48,\"cpu_moe_overlap_gbs\":57.6,"
	"   \"pcie_gather_overlap_gbs\":43.2,\"recommended\":\"offload\",\"fetch_fraction\":0.42857142857}},"
	" \"nvfp4\":{\"cpu_moe_gbs\":200,\"pcie_gather_gbs\":50,\"recommended\":\"hybrid\","
	"  \"recommended_isolated\":\"hybrid\",\"concurrent\":{\"cpu_moe_gbs\":120,\"pcie_gather_gbs\":48,"
	"   \"recommended\":\"hybrid\",\"fetch_fraction\":null}}},"
	"\"workloads\":{\"qwen3-30b\":{\"kernels\":{\"bf16\":{\"cpu_moe_gbs\":110,\"pcie_gather_gbs\":50,"
	"  \"recommended\":\"%s\",\"recommended_isolated\":\"hybrid\",\"concurrent\":{\"cpu_moe_gbs\":60,"
	"  \"pcie_gather_gbs\":48,\"recommended\":\"offload\",\"fetch_fraction\":0.8}}},"
	"  \"recommended_moe_backend\":{\"bf16\":\"%s\"}}}}";

static struct ftprof *load(const char *dep, const char *rec)
{
	char path[] = "/tmp/ftprof_deploy.XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	FILE *f = fdopen(fd, "w");
	fprintf(f, doc, dep, rec, rec, rec, rec);
	fclose(f);
	struct ftprof *p = NULL;
	char err[256];
	int r = ftprof_load_file(path, &p, err, sizeof err);
	if (r)
		print_error("%s\n", err);
	assert_int_equal(r, 0);
	unlink(path);
	return p;
}

static void test_concurrent_profile(void **s)
{
	struct ftprof *p = load("concurrent", "offload");
	double f;
	assert_int_equal(ftprof_deployment(p), FTPROF_DEPLOY_CONCURRENT);
	/* the seed's rules read the deployment's verdict */
	assert_int_equal(ftprof_recommend(p, "bf16"), FTPROF_REC_OFFLOAD);
	assert_int_equal(ftprof_recommend_deployment(p, "bf16", FTPROF_DEPLOY_PROFILE), FTPROF_REC_OFFLOAD);
	assert_int_equal(ftprof_recommend_deployment(p, "bf16", FTPROF_DEPLOY_CONCURRENT), FTPROF_REC_OFFLOAD);
	/* isolated from recommended_isolated */
	assert_int_equal(ftprof_recommend_deployment(p, "bf16", FTPROF_DEPLOY_ISOLATED), FTPROF_REC_HYBRID);
	assert_int_equal(ftprof_recommend_deployment(p, "nvfp4", FTPROF_DEPLOY_ISOLATED), FTPROF_REC_HYBRID);
	assert_int_equal(ftprof_recommend_deployment(p, "mxfp4", FTPROF_DEPLOY_ISOLATED), FTPROF_REC_NONE);
	/* the fraction: concurrent from the block (its own, else its pair), isolated the seed's */
	assert_int_equal(ftprof_fetch_fraction_deployment(p, "bf16", FTPROF_DEPLOY_PROFILE, &f), 0);
	assert_true(fabs(f - 0.42857142857) < 1e-9);
	assert_int_equal(ftprof_fetch_fraction_deployment(p, "nvfp4", FTPROF_DEPLOY_CONCURRENT, &f), 0);
	assert_true(fabs(f - 0.4) < 1e-12); /* 48 / 120 */
	assert_int_equal(ftprof_fetch_fraction_deployment(p, "bf16", FTPROF_DEPLOY_ISOLATED, &f), 0);
	assert_true(fabs(f - 45.0 / 141.0) < 1e-12);
	assert_int_equal(ftprof_fetch_fraction_deployment(p, "fp8_block", FTPROF_DEPLOY_CONCURRENT, &f), -ENODATA);
	assert_int_equal(ftprof_fetch_fraction_deployment(NULL, "bf16", FTPROF_DEPLOY_CONCURRENT, &f), -EINVAL);
	ftprof_free(p);
}

static void test_isolated_profile(void **s)
{
	struct ftprof *p = load("isolated", "hybrid");
	assert_int_equal(ftprof_deployment(p), FTPROF_DEPLOY_ISOLATED);
	assert_int_equal(ftprof_recommend(p, "bf16"), FTPROF_REC_HYBRID);
	assert_int_equal(ftprof_recommend_deployment(p, "bf16", FTPROF_DEPLOY_PROFILE), FTPROF_REC_HYBRID);
	/* concurrent from the blocks */
	assert_int_equal(ftprof_recommend_deployment(p, "bf16", FTPROF_DEPLOY_CONCURRENT), FTPROF_REC_OFFLOAD);
	assert_int_equal(ftprof_recommend_deployment(p, "nvfp4", FTPROF_DEPLOY_CONCURRENT), FTPROF_REC_HYBRID);
	double f;
	assert_int_equal(ftprof_fetch_fraction_deployment(p, "bf16", FTPROF_DEPLOY_PROFILE, &f), 0);
	assert_true(fabs(f - 45.0 / 141.0) < 1e-12);
	ftprof_free(p);
}

/* A profile of one GPU (no deployment, no blocks): concurrent has no data. */
static void test_legacy_profile(void **s)
{
	char path[] = "/tmp/ftprof_deploy.XXXXXX";
	int fd = mkstemp(path);
	FILE *fp = fdopen(fd, "w");
	fputs("{\"version\":4,\"dtypes\":{\"bf16\":\"hybrid\"},\"dtype_kernels\":{\"bf16\":{\"cpu_moe_gbs\":100,"
	      "\"pcie_gather_gbs\":40,\"recommended\":\"hybrid\"}}}", fp);
	fclose(fp);
	struct ftprof *p = NULL;
	assert_int_equal(ftprof_load_file(path, &p, NULL, 0), 0);
	unlink(path);
	assert_int_equal(ftprof_deployment(p), FTPROF_DEPLOY_ISOLATED);
	assert_int_equal(ftprof_recommend_deployment(p, "bf16", FTPROF_DEPLOY_ISOLATED), FTPROF_REC_HYBRID);
	assert_int_equal(ftprof_recommend_deployment(p, "bf16", FTPROF_DEPLOY_CONCURRENT), FTPROF_REC_NONE);
	double f;
	assert_int_equal(ftprof_fetch_fraction_deployment(p, "bf16", FTPROF_DEPLOY_CONCURRENT, &f), -ENODATA);
	assert_int_equal(ftprof_fetch_fraction_deployment(p, "bf16", FTPROF_DEPLOY_PROFILE, &f), 0);
	assert_true(fabs(f - 0.4) < 1e-12);
	ftprof_free(p);
}

static void test_names(void **s)
{
	enum ftprof_deployment d;
	assert_int_equal(ftprof_deployment_parse("concurrent", &d), 0);
	assert_int_equal(d, FTPROF_DEPLOY_CONCURRENT);
	assert_int_equal(ftprof_deployment_parse("isolated", &d), 0);
	assert_int_equal(ftprof_deployment_parse("both", &d), -EINVAL);
	assert_string_equal(ftprof_deployment_name(FTPROF_DEPLOY_CONCURRENT), "concurrent");
	assert_string_equal(ftprof_deployment_name(FTPROF_DEPLOY_PROFILE), "profile");
	/* the writer's names are the reader's */
	int w;
	assert_int_equal(ftbw_deployment_parse(ftprof_deployment_name(FTPROF_DEPLOY_CONCURRENT), &w), 0);
	assert_int_equal(w, FTBW_DEPLOY_CONCURRENT);
	assert_string_equal(ftbw_deployment_name(FTBW_DEPLOY_ISOLATED), ftprof_deployment_name(FTPROF_DEPLOY_ISOLATED));
}

/* The concurrent fetch fraction walked field by field: each of the five figures a concurrent block
 * may carry (its own fetch_fraction, the overlap pair, the alone pair) absent, null, 0, a string,
 * 0.5, negative or large, one at a time, with the figures ranked below it there (and with every
 * one there); the oracle is the documented rule: fetch_fraction when above 0, else the overlap
 * pair's pcie / (pcie + cpu) when both are above 0, else pcie / cpu when both are, capped at 1;
 * nothing above 0: no value. Then the order of the blocks: dtype_kernels' first, then the
 * workloads' in file order, the first that yields. */
static void test_concurrent_fraction_walk(void **s)
{
	(void)s;
	static const char *keys[] = {"fetch_fraction", "pcie_gather_overlap_gbs", "cpu_moe_overlap_gbs", "pcie_gather_gbs",
				     "cpu_moe_gbs"};
	static const double val[] = {0.3, 24.0, 96.0, 50.0, 120.0};
	static const int rank[] = {0, 1, 1, 3, 3}; /* the first key of the figure's group */
	enum { ABSENT, NUL, ZERO, STR, SMALL, NEG, BIG, KINDS };
	static const char *kname[] = {"absent", "null", "0", "a string", "0.5", "-2", "500"};
	static const double kval[] = {NAN, NAN, 0.0, NAN, 0.5, -2.0, 500.0};
	char path[] = "/tmp/ftprof_deploy_walk.XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	int walked = 0;
	for (int all = 0; all < 2; all++)
		for (int k = 0; k < 5; k++)
			for (int kind = ABSENT; kind < KINDS; kind++) {
				double v[5];
				int have[5];
				for (int i = 0; i < 5; i++) {
					have[i] = all || i >= rank[k];
					v[i] = have[i] ? val[i] : NAN;
				}
				v[k] = kval[kind];
				json_t *b = json_object();
				for (int i = 0; i < 5; i++) {
					if (!have[i] || (i == k && kind == ABSENT))
						continue;
					if (i == k && kind == NUL)
						json_object_set_new(b, keys[i], json_null());
					else if (i == k && kind == STR)
						json_object_set_new(b, keys[i], json_string("0.9"));
					else
						json_object_set_new(b, keys[i], json_real(v[i]));
				}
				/* the oracle (NAN: not a number above 0) */
				double want = v[0] > 0 ? v[0]
					      : v[1] > 0 && v[2] > 0 ? v[1] / (v[1] + v[2])
					      : v[3] > 0 && v[4] > 0 ? v[3] / v[4]
								 : NAN;
				if (want > 1)
					want = 1;
				json_t *d = json_pack("{s:i,s:s,s:{s:s},s:{s:{s:o}}}", "version", 4, "deployment", "concurrent",
						      "gpu", "uuid", "GPU-1", "dtype_kernels", "bf16", "concurrent", b);
				assert_int_equal(json_dump_file(d, path, 0), 0);
				json_decref(d);
				struct ftprof *p = NULL;
				char err[256];
				assert_int_equal(ftprof_load_file(path, &p, err, sizeof err), 0);
				double f = -1;
				int r = ftprof_fetch_fraction_deployment(p, "bf16", FTPROF_DEPLOY_CONCURRENT, &f);
				if (isnan(want) ? r != -ENODATA : (r != 0 || fabs(f - want) > 1e-12))
					fail_msg("%s %s%s: concurrent fraction %d %.6f, want %s%.6f", keys[k], kname[kind],
						 all ? " (every figure there)" : "", r, f, isnan(want) ? "none " : "", want);
				ftprof_free(p);
				walked++;
			}
	assert_int_equal(walked, 70);
	/* the blocks' order: dtype_kernels' yields nothing, the first workload has no block, the
	 * second's yields, the third's is not read */
	json_t *d = json_pack("{s:i,s:s,s:{s:s},s:{s:{s:{s:n}}},s:{s:{},s:{s:{s:{s:{s:f}}}},s:{s:{s:{s:{s:f}}}}}}",
			      "version", 4, "deployment", "concurrent", "gpu", "uuid", "GPU-1", "dtype_kernels", "bf16",
			      "concurrent", "fetch_fraction", "workloads", "w1", "w2", "kernels", "bf16", "concurrent", "fetch_fraction",
			      0.25, "w3", "kernels", "bf16", "concurrent", "fetch_fraction", 0.75);
	assert_non_null(d);
	assert_int_equal(json_dump_file(d, path, JSON_PRESERVE_ORDER), 0);
	json_decref(d);
	struct ftprof *p = NULL;
	char err[256];
	assert_int_equal(ftprof_load_file(path, &p, err, sizeof err), 0);
	double f = -1;
	assert_int_equal(ftprof_fetch_fraction_deployment(p, "bf16", FTPROF_DEPLOY_CONCURRENT, &f), 0);
	assert_float_equal(f, 0.25, 1e-12);
	ftprof_free(p);
	unlink(path);
}

/* The other deployment's verdict from the workloads (dtype_kernels has none for the format): hybrid
 * only when every workload that has a verdict says hybrid, offload when one says offload, none
 * when none has one; walked over lists of workload verdicts, for both directions (an isolated
 * profile asked for concurrent, a concurrent one asked for isolated). */
static void test_workload_verdicts_walk(void **s)
{
	(void)s;
	static const struct {
		const char *v[4]; /* "h", "o", "-" (no verdict, or an unknown word), NULL ends */
		enum ftprof_rec want;
	} rows[] = {
		{{"h", NULL}, FTPROF_REC_HYBRID},
		{{"h", "h", "h", NULL}, FTPROF_REC_HYBRID},
		{{"h", "o", NULL}, FTPROF_REC_OFFLOAD},
		{{"o", "h", NULL}, FTPROF_REC_OFFLOAD},
		{{"o", NULL}, FTPROF_REC_OFFLOAD},
		{{"-", "h", NULL}, FTPROF_REC_HYBRID},
		{{"h", "-", "-", NULL}, FTPROF_REC_HYBRID},
		{{"-", "o", "-", NULL}, FTPROF_REC_OFFLOAD},
		{{"-", "-", NULL}, FTPROF_REC_NONE},
		{{NULL}, FTPROF_REC_NONE},
	};
	char path[] = "/tmp/ftprof_deploy_verdicts.XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	for (int conc = 0; conc < 2; conc++)
		for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
			json_t *wl = json_object();
			for (int k = 0; rows[i].v[k]; k++) {
				const char *word = rows[i].v[k][0] == 'h' ? "hybrid" : rows[i].v[k][0] == 'o' ? "offload" : "fast";
				/* the verdict for the deployment the profile was not measured in */
				json_t *e = conc ? json_pack("{s:s}", "recommended_isolated", word)
						 : json_pack("{s:{s:s}}", "concurrent", "recommended", word);
				char name[16];
				snprintf(name, sizeof name, "w%d", k);
				json_object_set_new(wl, name, json_pack("{s:{s:o}}", "kernels", "bf16", e));
			}
			json_t *d = json_pack("{s:i,s:s,s:{s:s},s:{s:s},s:{s:{}},s:o}", "version", 4, "deployment",
					      conc ? "concurrent" : "isolated", "gpu", "uuid", "GPU-1", "dtypes", "bf16", "offload",
					      "dtype_kernels", "bf16", "workloads", wl);
			assert_int_equal(json_dump_file(d, path, 0), 0);
			json_decref(d);
			struct ftprof *p = NULL;
			char err[256];
			assert_int_equal(ftprof_load_file(path, &p, err, sizeof err), 0);
			enum ftprof_rec got = ftprof_recommend_deployment(
				p, "bf16", conc ? FTPROF_DEPLOY_ISOLATED : FTPROF_DEPLOY_CONCURRENT);
			if (got != rows[i].want)
				fail_msg("%s profile, workload verdicts %s %s %s: %s, want %s", conc ? "concurrent" : "isolated",
					 rows[i].v[0] ? rows[i].v[0] : "", rows[i].v[0] && rows[i].v[1] ? rows[i].v[1] : "",
					 rows[i].v[0] && rows[i].v[1] && rows[i].v[2] ? rows[i].v[2] : "", ftprof_rec_name(got),
					 ftprof_rec_name(rows[i].want));
			ftprof_free(p);
		}
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_concurrent_profile), cmocka_unit_test(test_isolated_profile),
		cmocka_unit_test(test_legacy_profile),     cmocka_unit_test(test_names),
		cmocka_unit_test(test_concurrent_fraction_walk), cmocka_unit_test(test_workload_verdicts_walk),
	};
	return cmocka_run_group_tests_name("profile_deploy", tests, NULL, NULL);
}
