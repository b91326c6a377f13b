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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_concurrent_profile), cmocka_unit_test(test_isolated_profile),
		cmocka_unit_test(test_legacy_profile),     cmocka_unit_test(test_names),
	};
	return cmocka_run_group_tests_name("profile_deploy", tests, NULL, NULL);
}
