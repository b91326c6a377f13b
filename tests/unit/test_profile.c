/* libftprofile: paths, search order, GPU check, reader rules of reference §5, corrupt files,
 * atomic store writes and listing; the profile schema against fixtures.
 * Fixtures: tests/fixtures/profiles/ (FT_SRCDIR names the source tree when not run from it). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ftprofile.h"
#include "../lib/tmpdir.h"
#include "moe/formats.h"
#include "util/fsutil.h"
#include "../schema.h"

/* snprintf that must not truncate */
#define SNP(b, n, ...) assert_true(snprintf(b, n, __VA_ARGS__) < (int)(n))

#define SCHEMA "api/schemas/profile.schema.json" /* under FT_SRCDIR */
#define UUID_A "GPU-8eb97239-58cd-4a4f-9b2e-0123456789ab" /* full.json */
#define UUID_W "GPU-11111111-2222-3333-4444-555555555555" /* workloads_only.json */
#define UUID_X "GPU-99999999-0000-0000-0000-000000000000" /* no file anywhere */

static char root[PATH_MAX], cache[PATH_MAX], store[PATH_MAX], sysdir[PATH_MAX];
static char err[4096];

static const char *srcdir(void)
{
	const char *s = getenv("FT_SRCDIR");
	return s && *s ? s : ".";
}

static void fixture_path(const char *name, char *out, size_t n)
{
	SNP(out, n, "%s/tests/fixtures/profiles/%s", srcdir(), name);
}

static void put_text(const char *path, const char *text, size_t len)
{
	assert_int_equal(tmpdir_put(path, text, len), 0);
}

static void put_fixture(const char *name, const char *dest)
{
	char src[PATH_MAX], *buf;
	size_t len;
	fixture_path(name, src, sizeof src);
	assert_int_equal(ftfs_read_file(src, 1 << 24, &buf, &len), 0);
	put_text(dest, buf, len);
	free(buf);
}

static json_t *load_fixture(const char *name)
{
	char src[PATH_MAX];
	json_error_t je;
	fixture_path(name, src, sizeof src);
	json_t *j = json_load_file(src, 0, &je);
	if (!j)
		fail_msg("%s: %s", src, je.text);
	return j;
}

static void in_store(const char *file, char *out, size_t n)
{
	SNP(out, n, "%s/%s", store, file);
}

static int setup(void **st)
{
	if (tmpdir_make(root, sizeof root, "ftprof-test") < 0)
		return -1;
	SNP(cache, sizeof cache, "%s/cache", root);
	SNP(store, sizeof store, "%s/freetoken/benchbw", cache);
	SNP(sysdir, sizeof sysdir, "%s/sys", root);
	setenv("XDG_CACHE_HOME", cache, 1);
	setenv(FTPROF_ENV_SYSDIR, sysdir, 1);
	unsetenv(FTPROF_ENV_PATH);
	err[0] = '\0';
	return 0;
}

static int teardown(void **st)
{
	return tmpdir_remove(root);
}

/* ---------------------------------------------------------------- names and paths */

static void test_aliases(void **st)
{
	assert_string_equal(ftprof_canonical_format("mxfp4"), "mxfp4_triton");
	assert_string_equal(ftprof_canonical_format("fp8"), "fp8_block");
	assert_string_equal(ftprof_canonical_format("int3"), "int3"); /* unknown: unchanged */
	assert_null(ftprof_canonical_format(NULL));
	/* the private alias table agrees with moe/formats for every name */
	char names[256];
	SNP(names, sizeof names, "%s,mxfp4,fp8", ftfmt_all_names());
	for (char *save, *t = strtok_r(names, ",", &save); t; t = strtok_r(NULL, ",", &save))
		assert_string_equal(ftprof_canonical_format(t), ftfmt_canonical(t));
	assert_string_equal(ftprof_rec_name(FTPROF_REC_HYBRID), "hybrid");
	assert_string_equal(ftprof_rec_name(FTPROF_REC_OFFLOAD), "offload");
	assert_string_equal(ftprof_rec_name(FTPROF_REC_NONE), "none");
	assert_int_equal(ftprof_version(), 4);
}

static void test_paths(void **st)
{
	char p[PATH_MAX], want[PATH_MAX];
	assert_int_equal(ftprof_store_dir(p, sizeof p), 0);
	assert_string_equal(p, store);
	assert_int_equal(ftprof_path(UUID_A, p, sizeof p), 0);
	in_store(UUID_A ".json", want, sizeof want);
	assert_string_equal(p, want);
	assert_int_equal(ftprof_path(NULL, p, sizeof p), 0);
	in_store("host.json", want, sizeof want);
	assert_string_equal(p, want);
	assert_int_equal(ftprof_path("", p, sizeof p), 0);
	assert_string_equal(p, want);
	/* unsafe uuids */
	assert_int_equal(ftprof_path("../../etc/passwd", p, sizeof p), -EINVAL);
	assert_int_equal(ftprof_path("a/b", p, sizeof p), -EINVAL);
	assert_int_equal(ftprof_path(".hidden", p, sizeof p), -EINVAL);
	assert_int_equal(ftprof_path("GPU 1", p, sizeof p), -EINVAL);
	/* too small a buffer */
	assert_int_equal(ftprof_path(UUID_A, p, 10), -ENAMETOOLONG);
	/* XDG unset or empty: ~/.cache */
	char home[PATH_MAX];
	SNP(home, sizeof home, "%s/home", root);
	setenv("HOME", home, 1);
	unsetenv("XDG_CACHE_HOME");
	assert_int_equal(ftprof_store_dir(p, sizeof p), 0);
	SNP(want, sizeof want, "%s/.cache/freetoken/benchbw", home);
	assert_string_equal(p, want);
	setenv("XDG_CACHE_HOME", "", 1);
	assert_int_equal(ftprof_store_dir(p, sizeof p), 0);
	assert_string_equal(p, want);
	/* no XDG_CACHE_HOME and no HOME: the passwd entry's home; a user without one (a container's
	 * uid, nothing in /etc/passwd) has no store: -ENOENT, in a child that takes such a uid */
	if (geteuid() == 0) {
		pid_t pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			unsetenv("XDG_CACHE_HOME");
			unsetenv("HOME");
			if (setresgid(3999991, 3999991, 3999991) || setresuid(3999991, 3999991, 3999991))
				_exit(3);
			char b[PATH_MAX];
			_exit(ftprof_store_dir(b, sizeof b) == -ENOENT ? 0 : 1);
		}
		int wst = 0;
		assert_int_equal(waitpid(pid, &wst, 0), pid);
		if (!WIFEXITED(wst) || WEXITSTATUS(wst))
			fail_msg("a uid without a passwd entry: store dir %s %d (want -ENOENT)",
				 WIFSIGNALED(wst) ? "killed by signal" : "exit", WIFSIGNALED(wst) ? WTERMSIG(wst) : WEXITSTATUS(wst));
	}
	setenv("XDG_CACHE_HOME", cache, 1);
	/* the env override is the file, for every GPU */
	setenv(FTPROF_ENV_PATH, "/some/where/p.json", 1);
	assert_int_equal(ftprof_path(UUID_A, p, sizeof p), 0);
	assert_string_equal(p, "/some/where/p.json");
	assert_int_equal(ftprof_path(NULL, p, sizeof p), 0);
	assert_string_equal(p, "/some/where/p.json");
	unsetenv(FTPROF_ENV_PATH);
}

/* ---------------------------------------------------------------- reader rules */

static void test_full_profile(void **st)
{
	char p[PATH_MAX];
	struct ftprof *pr = NULL;
	double f;
	in_store(UUID_A ".json", p, sizeof p);
	put_fixture("full.json", p);
	snprintf(err, sizeof err, "a reason left from before");
	assert_int_equal(ftprof_load(UUID_A, "NVIDIA H200", &pr, err, sizeof err), 0);
	assert_string_equal(err, ""); /* found: no reason */
	assert_non_null(pr);
	assert_string_equal(ftprof_source(pr), p);
	assert_string_equal(ftprof_gpu_uuid(pr), UUID_A);
	assert_string_equal(ftprof_gpu_name(pr), "NVIDIA H200");
	assert_non_null(ftprof_json(pr));
	/* dtypes */
	assert_int_equal(ftprof_recommend(pr, "bf16"), FTPROF_REC_HYBRID);
	assert_int_equal(ftprof_recommend(pr, "nvfp4"), FTPROF_REC_OFFLOAD);
	assert_int_equal(ftprof_recommend(pr, "mxfp4"), FTPROF_REC_HYBRID); /* alias */
	assert_int_equal(ftprof_recommend(pr, "mxfp4_triton"), FTPROF_REC_HYBRID);
	/* the seed reader's alias map has no fp8: "fp8" is looked up as it is */
	assert_int_equal(ftprof_recommend(pr, "fp8"), FTPROF_REC_NONE);
	assert_int_equal(ftprof_recommend(pr, "fp8_block"), FTPROF_REC_OFFLOAD);
	assert_int_equal(ftprof_recommend(pr, "q4_0"), FTPROF_REC_NONE);    /* no data */
	assert_int_equal(ftprof_recommend(pr, NULL), FTPROF_REC_NONE);
	assert_int_equal(ftprof_recommend(NULL, "bf16"), FTPROF_REC_NONE);
	/* overlap pair first: 24 / (24 + 96) */
	assert_int_equal(ftprof_fetch_fraction(pr, "bf16", &f), 0);
	assert_float_equal(f, 0.2, 1e-12);
	assert_int_equal(ftprof_fetch_fraction(pr, "nvfp4", &f), 0);
	assert_float_equal(f, 40.0 / 110.0, 1e-12);
	/* no overlap pair: pcie / cpu */
	assert_int_equal(ftprof_fetch_fraction(pr, "ds_fp4", &f), 0);
	assert_float_equal(f, 52.0 / 90.0, 1e-12);
	assert_int_equal(ftprof_fetch_fraction(pr, "mxfp4", &f), 0);
	assert_float_equal(f, 30.0 / 130.0, 1e-12);
	/* fp8_block has no CPU path: no fraction */
	assert_int_equal(ftprof_fetch_fraction(pr, "fp8", &f), -ENODATA);
	assert_int_equal(ftprof_fetch_fraction(pr, "q4_0", &f), -ENODATA);
	assert_int_equal(ftprof_fetch_fraction(pr, "bf16", NULL), -EINVAL);
	assert_int_equal(ftprof_fetch_fraction(NULL, "bf16", &f), -EINVAL);
	ftprof_free(pr);
	ftprof_free(NULL);
}

/* The answer by workload: the nearest replay point of skew 0 (fixture replay.json: bf16, cache
 * 0.4 and 0.7 x reuse 0, 0.6, 0.85, and two Zipf points that must not be chosen). */
static void test_recommend_workload(void **st)
{
	char p[PATH_MAX];
	struct ftprof *pr = NULL;
	double f, pc, pu, sp;
	fixture_path("replay.json", p, sizeof p);
	assert_int_equal(ftprof_load_file(p, &pr, err, sizeof err), 0);
	assert_int_equal(ftprof_recommend_workload(pr, "bf16", 0.4, 0, &f), FTPROF_REC_HYBRID);
	assert_float_equal(f, 0.35, 1e-12);
	assert_int_equal(ftprof_recommend_workload(pr, "bf16", 0.45, 0.55, &f), FTPROF_REC_HYBRID);
	assert_float_equal(f, 0.5, 1e-12);
	/* reuse 0.8 is nearest 0.85: offload, with the best f still given */
	assert_int_equal(ftprof_recommend_workload(pr, "bf16", 0.4, 0.8, &f), FTPROF_REC_OFFLOAD);
	assert_float_equal(f, 0.5, 1e-12);
	/* a tie is offload (the simpler path at equal speed) */
	assert_int_equal(ftprof_recommend_workload(pr, "bf16", 0.7, 0.6, NULL), FTPROF_REC_OFFLOAD);
	/* the Zipf points (0.7, 0: offload) are not candidates: (0.7, 0) is the uniform point, hybrid */
	assert_int_equal(ftprof_recommend_workload(pr, "bf16", 0.7, 0, &f), FTPROF_REC_HYBRID);
	assert_int_equal(ftprof_workload_point(pr, "bf16", 0.9, 0.7, &pc, &pu, &sp), 0);
	assert_float_equal(pc, 0.7, 1e-12);
	assert_float_equal(pu, 0.6, 1e-12);
	assert_float_equal(sp, 1.02, 1e-12);
	/* no replay block for the format, bad arguments */
	assert_int_equal(ftprof_recommend_workload(pr, "nvfp4", 0.4, 0.6, &f), FTPROF_REC_NONE);
	assert_true(isnan(f));
	assert_int_equal(ftprof_recommend_workload(pr, "bf16", NAN, 0.6, &f), FTPROF_REC_NONE);
	assert_int_equal(ftprof_recommend_workload(NULL, "bf16", 0.4, 0.6, &f), FTPROF_REC_NONE);
	assert_int_equal(ftprof_recommend_workload(pr, NULL, 0.4, 0.6, &f), FTPROF_REC_NONE);
	assert_int_equal(ftprof_workload_point(pr, "nvfp4", 0.4, 0.6, &pc, NULL, NULL), -ENODATA);
	assert_int_equal(ftprof_workload_point(pr, NULL, 0.4, 0.6, &pc, NULL, NULL), -EINVAL);
	/* each output pointer NULL in turn: the others still filled (only the non-NULL are written) */
	for (int skip = 0; skip < 4; skip++) {
		pc = pu = sp = -1;
		assert_int_equal(ftprof_workload_point(pr, "bf16", 0.9, 0.7, skip == 0 || skip == 3 ? NULL : &pc,
						       skip == 1 || skip == 3 ? NULL : &pu, skip == 2 || skip == 3 ? NULL : &sp),
				 0);
		assert_true(skip == 0 || skip == 3 ? pc == -1 : pc == 0.7);
		assert_true(skip == 1 || skip == 3 ? pu == -1 : pu == 0.6);
		assert_true(skip == 2 || skip == 3 ? sp == -1 : sp == 1.02);
	}
	/* the seed's rules are unchanged by the block */
	assert_int_equal(ftprof_recommend(pr, "bf16"), FTPROF_REC_HYBRID);
	ftprof_free(pr);
	/* a profile without a replay block */
	fixture_path("full.json", p, sizeof p);
	assert_int_equal(ftprof_load_file(p, &pr, err, sizeof err), 0);
	assert_int_equal(ftprof_recommend_workload(pr, "bf16", 0.4, 0.6, &f), FTPROF_REC_NONE);
	ftprof_free(pr);
}

static void test_host_json(void **st)
{
	char p[PATH_MAX];
	struct ftprof *pr = NULL;
	double f;
	in_store("host.json", p, sizeof p);
	put_fixture("host.json", p);
	assert_int_equal(ftprof_load(NULL, NULL, &pr, err, sizeof err), 0);
	assert_string_equal(ftprof_source(pr), p);
	assert_null(ftprof_gpu_uuid(pr));
	assert_int_equal(ftprof_recommend(pr, "bf16"), FTPROF_REC_OFFLOAD);
	assert_int_equal(ftprof_fetch_fraction(pr, "bf16", &f), -ENODATA);
	ftprof_free(pr);
	/* gpu null is accepted by every caller, as by the seed's reader (a GPU caller finds host.json
	 * only where FREETOKEN_BENCHBW_PATH or the legacy file names it) */
	setenv(FTPROF_ENV_PATH, p, 1);
	pr = NULL;
	assert_int_equal(ftprof_load(UUID_A, "NVIDIA H200", &pr, err, sizeof err), 0);
	assert_string_equal(ftprof_source(pr), p);
	assert_int_equal(ftprof_recommend(pr, "bf16"), FTPROF_REC_OFFLOAD);
	ftprof_free(pr);
}

static void test_workloads_unanimous(void **st)
{
	char p[PATH_MAX];
	struct ftprof *pr = NULL;
	double f;
	fixture_path("workloads_only.json", p, sizeof p);
	assert_int_equal(ftprof_load_file(p, &pr, err, sizeof err), 0);
	/* no dtypes, and the workloads carry only recommended_moe_backend, which the seed's reader
	 * does not read (it reads kernels[fmt].recommended): no recommendation */
	assert_int_equal(ftprof_recommend(pr, "bf16"), FTPROF_REC_NONE);
	assert_int_equal(ftprof_recommend(pr, "nvfp4"), FTPROF_REC_NONE);
	assert_int_equal(ftprof_recommend(pr, "mxfp4"), FTPROF_REC_NONE);
	assert_int_equal(ftprof_recommend(pr, "fp8_block"), FTPROF_REC_NONE);
	assert_int_equal(ftprof_recommend(pr, "ds_fp4"), FTPROF_REC_NONE);
	/* no dtype_kernels: the first workload in file order that yields a value: a, 50 / 100
	 * (not the median .45 of .5 .3 .9 .4) */
	assert_int_equal(ftprof_fetch_fraction(pr, "bf16", &f), 0);
	assert_float_equal(f, 0.5, 1e-12);
	/* 60 / 40 = 1.5 clamped to 1 */
	assert_int_equal(ftprof_fetch_fraction(pr, "nvfp4", &f), 0);
	assert_float_equal(f, 1.0, 0);
	/* overlap pair before the plain pair: 15 / (15 + 60), not 30 / 100 */
	assert_int_equal(ftprof_fetch_fraction(pr, "mxfp4", &f), 0);
	assert_float_equal(f, 0.2, 1e-12);
	assert_int_equal(ftprof_fetch_fraction(pr, "fp8", &f), -ENODATA);
	ftprof_free(pr);
}

static void test_dtypes_first(void **st)
{
	char p[PATH_MAX];
	struct ftprof *pr = NULL;
	double f;
	fixture_path("dtypes_first.json", p, sizeof p);
	assert_int_equal(ftprof_load_file(p, &pr, err, sizeof err), 0);
	/* dtypes says offload though the only workload says hybrid */
	assert_int_equal(ftprof_recommend(pr, "bf16"), FTPROF_REC_OFFLOAD);
	/* an unknown value in dtypes falls through to the workloads' kernels[fmt].recommended: the
	 * only workload has no nvfp4 kernel (its recommended_moe_backend is not read) */
	assert_int_equal(ftprof_recommend(pr, "nvfp4"), FTPROF_REC_NONE);
	/* dtype_kernels first; its overlap pair has a 0, so its plain pair: 25 / 100 */
	assert_int_equal(ftprof_fetch_fraction(pr, "bf16", &f), 0);
	assert_float_equal(f, 0.25, 1e-12);
	ftprof_free(pr);
}

/* bw --batch-sweep's fields: hybrid_max_batch from dtype_kernels first, else the smallest of
 * the workloads'; one batch's ratio; absent or malformed fields give -ENODATA. */
static void test_batch_sweep(void **st)
{
	static const char prof[] =
		"{\"version\":4,\"dtypes\":{\"bf16\":\"hybrid\"},"
		"\"dtype_kernels\":{"
		"\"bf16\":{\"hybrid_max_batch\":4,\"batch_sweep\":[{\"batch\":1,\"ratio\":2.6},"
		"{\"batch\":4,\"ratio\":2.1},{\"batch\":8,\"ratio\":null}]},"
		"\"nvfp4\":{\"hybrid_max_batch\":null},\"ds_fp4\":{\"hybrid_max_batch\":-3},"
		"\"q4_0\":{\"hybrid_max_batch\":\"8\"}},"
		"\"workloads\":{\"a\":{\"kernels\":{\"nvfp4\":{\"hybrid_max_batch\":8}}},"
		"\"b\":{\"kernels\":{\"nvfp4\":{\"hybrid_max_batch\":2},\"mxfp4_triton\":{\"hybrid_max_batch\":0}}}}}";
	char p[PATH_MAX];
	struct ftprof *pr = NULL;
	int b = -1;
	double r = 0;
	in_store("sweep.json", p, sizeof p);
	put_text(p, prof, sizeof prof - 1);
	assert_int_equal(ftprof_load_file(p, &pr, err, sizeof err), 0);
	assert_int_equal(ftprof_hybrid_max_batch(pr, "bf16", &b), 0);
	assert_int_equal(b, 4);
	assert_int_equal(ftprof_hybrid_max_batch(pr, "nvfp4", &b), 0); /* null in dtype_kernels: workloads */
	assert_int_equal(b, 2);
	assert_int_equal(ftprof_hybrid_max_batch(pr, "mxfp4", &b), 0); /* alias; 0 is a value */
	assert_int_equal(b, 0);
	assert_int_equal(ftprof_hybrid_max_batch(pr, "ds_fp4", &b), -ENODATA);
	assert_int_equal(ftprof_hybrid_max_batch(pr, "q4_0", &b), -ENODATA);
	assert_int_equal(ftprof_hybrid_max_batch(pr, "fp8_block", &b), -ENODATA);
	assert_int_equal(ftprof_hybrid_max_batch(pr, "bf16", NULL), -EINVAL);
	assert_int_equal(ftprof_hybrid_max_batch(NULL, "bf16", &b), -EINVAL);
	assert_int_equal(ftprof_batch_ratio(pr, "bf16", 4, &r), 0);
	assert_float_equal(r, 2.1, 1e-12);
	assert_int_equal(ftprof_batch_ratio(pr, "bf16", 8, &r), -ENODATA);
	assert_int_equal(ftprof_batch_ratio(pr, "bf16", 2, &r), -ENODATA);
	assert_int_equal(ftprof_batch_ratio(pr, "nvfp4", 1, &r), -ENODATA);
	assert_int_equal(ftprof_batch_ratio(pr, "bf16", 0, &r), -EINVAL);
	ftprof_free(pr);
}

static void test_wrong_types(void **st)
{
	char p[PATH_MAX];
	struct ftprof *pr = NULL;
	double f;
	fixture_path("wrong_types.json", p, sizeof p);
	assert_int_equal(ftprof_load_file(p, &pr, err, sizeof err), 0);
	assert_int_equal(ftprof_recommend(pr, "bf16"), FTPROF_REC_NONE);
	assert_int_equal(ftprof_recommend(pr, "nvfp4"), FTPROF_REC_NONE);
	assert_int_equal(ftprof_fetch_fraction(pr, "bf16", &f), -ENODATA);
	assert_int_equal(ftprof_fetch_fraction(pr, "nvfp4", &f), -ENODATA); /* "50" is a string */
	/* -1 is truthy to the seed and the clamp is only above: 50 / -1 */
	assert_int_equal(ftprof_fetch_fraction(pr, "ds_fp4", &f), 0);
	assert_float_equal(f, -50.0, 0);
	ftprof_free(pr);
	/* a one-element array is truthy to the seed (so the overlap pair is chosen) but cannot be
	 * divided: no value, not the alone pair's */
	static const char arr[] = "{\"version\":4,\"dtype_kernels\":{\"bf16\":{\"pcie_gather_overlap_gbs\":[40],"
				  "\"cpu_moe_overlap_gbs\":60,\"pcie_gather_gbs\":50,\"cpu_moe_gbs\":100}}}";
	in_store("arr.json", p, sizeof p);
	put_text(p, arr, sizeof arr - 1);
	assert_int_equal(ftprof_load_file(p, &pr, err, sizeof err), 0);
	assert_int_equal(ftprof_fetch_fraction(pr, "bf16", &f), -ENODATA);
	ftprof_free(pr);
	/* a quotient too large for a double is no value (not capped to 1) */
	static const char huge[] = "{\"version\":4,\"dtype_kernels\":{\"bf16\":{\"pcie_gather_gbs\":1e300,"
				   "\"cpu_moe_gbs\":1e-300}}}";
	in_store("huge.json", p, sizeof p);
	put_text(p, huge, sizeof huge - 1);
	assert_int_equal(ftprof_load_file(p, &pr, err, sizeof err), 0);
	assert_int_equal(ftprof_fetch_fraction(pr, "bf16", &f), -ENODATA);
	ftprof_free(pr);
}

/* ---------------------------------------------------------------- the golden corpus */

/* tests/fixtures/profiles/golden/EXPECTED: every query answered as the seed's reader answers it,
 * through ftprof_load with the file as FREETOKEN_BENCHBW_PATH (the CLI side:
 * tests/integration/profile_golden.sh). */
static void test_golden(void **st)
{
	char path[PATH_MAX], line[512];
	int n = 0, files = 0, bad = 0;
	char last[128] = "";
	SNP(path, sizeof path, "%s/tests/fixtures/profiles/golden/EXPECTED", srcdir());
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	while (fgets(line, sizeof line, f)) {
		char file[128], caller[32], fmt[64], rec[32], frac[32];
		if (line[0] == '#' || sscanf(line, "%127s %31s %63s %31s %31s", file, caller, fmt, rec, frac) != 5)
			continue;
		char fp[PATH_MAX];
		SNP(fp, sizeof fp, "%s/tests/fixtures/profiles/golden/%s", srcdir(), file);
		setenv(FTPROF_ENV_PATH, fp, 1);
		struct ftprof *pr = NULL;
		int r = ftprof_load(NULL, strcmp(caller, "fake") ? NULL : "Fake GPU", &pr, err, sizeof err);
		enum ftprof_rec got = FTPROF_REC_NONE;
		double fr = 0;
		int fr_r = -ENODATA;
		if (r == 0) {
			got = ftprof_recommend(pr, fmt);
			fr_r = ftprof_fetch_fraction(pr, fmt, &fr);
		} else if (r != -ENOENT && r != -EINVAL) {
			fail_msg("%s: load %d (%s)", file, r, err);
		}
		ftprof_free(pr);
		int ok = !strcmp(ftprof_rec_name(got), rec);
		if (!strcmp(frac, "none"))
			ok &= fr_r == -ENODATA;
		else
			ok &= fr_r == 0 && fabs(fr - strtod(frac, NULL)) < 1e-6;
		if (!ok) {
			print_error("%s %s %s: got %s %s%g, want %s %s\n", file, caller, fmt, ftprof_rec_name(got),
				    fr_r ? "none " : "", fr_r ? 0.0 : fr, rec, frac);
			bad++;
		}
		n++;
		if (strcmp(last, file)) {
			files++;
			snprintf(last, sizeof last, "%s", file);
		}
	}
	fclose(f);
	unsetenv(FTPROF_ENV_PATH);
	assert_int_equal(bad, 0);
	assert_true(files >= 15 && n >= 45); /* the corpus is all there */
}

/* ---------------------------------------------------------------- broken files */

static void expect_invalid(const char *name, const char *text, size_t len, int want, const char *what)
{
	char p[PATH_MAX];
	struct ftprof *pr = (struct ftprof *)0x1;
	SNP(p, sizeof p, "%s/bad/%s", root, name);
	put_text(p, text, len);
	err[0] = '\0';
	int r = ftprof_load_file(p, &pr, err, sizeof err);
	if (r != want)
		fail_msg("%s: got %d, want %d (%s)", name, r, want, err);
	assert_null(pr);
	assert_non_null(strstr(err, p)); /* the message names the file */
	if (what && !strstr(err, what))
		fail_msg("%s: message '%s' lacks '%s'", name, err, what);
}

static void test_corrupt_files(void **st)
{
	char src[PATH_MAX], *buf;
	size_t len;
	fixture_path("full.json", src, sizeof src);
	assert_int_equal(ftfs_read_file(src, 1 << 24, &buf, &len), 0);
	/* truncated at many points: never a crash, always -EINVAL */
	for (size_t cut = 0; cut < len - 2; cut += len / 37 + 1)
		expect_invalid("truncated.json", buf, cut, -EINVAL, cut ? "not valid JSON" : NULL);
	free(buf);
	static const struct {
		const char *name, *text, *what;
	} cases[] = {
		{"empty.json", "", "not valid JSON"},
		{"brace.json", "{", "not valid JSON"},
		{"garbage.json", "\x7f" "ELF\x01\x02", "not valid JSON"},
		{"trailing.json", "{\"version\":4} x", "not valid JSON"},
		{"array.json", "[1,2]", "not a JSON object"},
		{"string.json", "\"profile\"", "not valid JSON"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		expect_invalid(cases[i].name, cases[i].text, strlen(cases[i].text), -EINVAL, cases[i].what);
	/* Any object is a profile to the seed's reader: odd types inside are absent data */
	static const char *const odd[] = {
		"{\"dtypes\":{}}", "{\"version\":\"4\"}", "{\"version\":0}", "{\"version\":4,\"dtypes\":[\"bf16\"]}",
		"{\"version\":4,\"dtype_kernels\":\"x\"}", "{\"version\":4,\"workloads\":1}",
		"{\"version\":4,\"gpu\":\"H200\"}", "{\"version\":4,\"gpu\":{\"uuid\":5}}",
		"{\"version\":4,\"gpu\":{\"name\":{}}}", "{\"version\":4,\"threshold\":\"2\"}",
		"{\"version\":4,\"version\":5}", "{}",
	};
	for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) {
		char p[PATH_MAX];
		struct ftprof *pr = NULL;
		double f;
		SNP(p, sizeof p, "%s/odd.json", root);
		put_text(p, odd[i], strlen(odd[i]));
		assert_int_equal(ftprof_load_file(p, &pr, err, sizeof err), 0);
		assert_int_equal(ftprof_recommend(pr, "bf16"), FTPROF_REC_NONE);
		assert_int_equal(ftprof_fetch_fraction(pr, "bf16", &f), -ENODATA);
		assert_true(ftprof_matches_gpu(pr, NULL, "NVIDIA H200"));
		ftprof_free(pr);
	}
	/* a NUL inside */
	expect_invalid("nul.json", "{\"version\":4,\0}", 15, -EINVAL, NULL);
	/* deep nesting is refused by the parser, not a stack overflow */
	size_t depth = 100000;
	char *deep = malloc(2 * depth + 1);
	memset(deep, '[', depth);
	memset(deep + depth, ']', depth);
	expect_invalid("deep.json", deep, 2 * depth, -EINVAL, NULL);
	free(deep);
	/* bigger than the cap */
	char p[PATH_MAX];
	SNP(p, sizeof p, "%s/bad/huge.json", root);
	int fd = open(p, O_CREAT | O_WRONLY | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)FTPROF_MAX_FILE_BYTES + 4096), 0);
	close(fd);
	struct ftprof *pr = NULL;
	assert_int_equal(ftprof_load_file(p, &pr, err, sizeof err), -EFBIG);
	assert_null(pr);
	assert_non_null(strstr(err, "larger than"));
	/* a directory, a missing file */
	SNP(p, sizeof p, "%s/bad", root);
	assert_true(ftprof_load_file(p, &pr, err, sizeof err) < 0);
	SNP(p, sizeof p, "%s/bad/none.json", root);
	assert_int_equal(ftprof_load_file(p, &pr, err, sizeof err), -ENOENT);
	assert_int_equal(ftprof_load_file(NULL, &pr, err, sizeof err), -EINVAL);
	assert_int_equal(ftprof_load_file("", &pr, err, sizeof err), -EINVAL); /* no path, not a missing file */
	assert_int_equal(ftprof_load_file(p, NULL, err, sizeof err), -EINVAL);
	/* the NULL err buffer is fine */
	assert_int_equal(ftprof_load_file(p, &pr, NULL, 0), -ENOENT);
}

/* Deterministic byte mutations of a full profile: each either fails to load with -EINVAL or
 * loads and answers every query without crashing (run under make test-san too). */
static void test_mutations(void **st)
{
	static const char *const fmts[] = {"bf16", "nvfp4", "fp8", "mxfp4", "ds_fp4", "q4_0"};
	static const char junk[] = "{}[]\",:0-9.eEtnul\\ x";
	char src[PATH_MAX], p[PATH_MAX], *buf;
	size_t len;
	unsigned seed = 12345;
	int loaded = 0, refused = 0;

	fixture_path("full.json", src, sizeof src);
	assert_int_equal(ftfs_read_file(src, 1 << 24, &buf, &len), 0);
	SNP(p, sizeof p, "%s/mut.json", root);
	for (int it = 0; it < 300; it++) {
		char *m = malloc(len);
		memcpy(m, buf, len);
		for (int k = 0; k < 1 + it % 4; k++) {
			seed = seed * 1103515245u + 12345u;
			m[(seed >> 8) % len] = junk[(seed >> 20) % (sizeof junk - 1)];
		}
		put_text(p, m, len);
		free(m);
		struct ftprof *pr = NULL;
		int r = ftprof_load_file(p, &pr, err, sizeof err);
		if (r) {
			assert_int_equal(r, -EINVAL);
			refused++;
			continue;
		}
		loaded++;
		for (size_t i = 0; i < sizeof fmts / sizeof fmts[0]; i++) {
			double f = -1;
			enum ftprof_rec rec = ftprof_recommend(pr, fmts[i]);
			assert_true(rec >= FTPROF_REC_NONE && rec <= FTPROF_REC_HYBRID);
			if (!ftprof_fetch_fraction(pr, fmts[i], &f))
				assert_true(f <= 1);
		}
		ftprof_matches_gpu(pr, UUID_A, "NVIDIA H200");
		r = ftt_schema_validate(SCHEMA, ftprof_json(pr), err, sizeof err);
		assert_true(r == 0 || r == -EINVAL);
		ftprof_free(pr);
	}
	assert_true(loaded > 10 && refused > 10);
	free(buf);
}

/* ---------------------------------------------------------------- search order */

static void test_missing(void **st)
{
	struct ftprof *pr = (struct ftprof *)0x1;
	char p[PATH_MAX];
	assert_int_equal(ftprof_load(UUID_X, NULL, &pr, err, sizeof err), -ENOENT);
	assert_null(pr);
	in_store(UUID_X ".json", p, sizeof p);
	assert_non_null(strstr(err, p));
	assert_non_null(strstr(err, "freetoken/benchbw.json"));
	assert_non_null(strstr(err, sysdir));
	assert_int_equal(ftprof_load(NULL, NULL, &pr, err, sizeof err), -ENOENT);
	assert_non_null(strstr(err, "host.json"));
	assert_int_equal(ftprof_load("../x", NULL, &pr, err, sizeof err), -EINVAL);
	assert_int_equal(ftprof_load(NULL, NULL, NULL, err, sizeof err), -EINVAL);
}

static void test_env_override(void **st)
{
	char env[PATH_MAX], p[PATH_MAX];
	struct ftprof *pr = NULL;
	in_store(UUID_W ".json", p, sizeof p);
	put_fixture("workloads_only.json", p);
	SNP(env, sizeof env, "%s/elsewhere/profile.json", root);
	put_fixture("dtypes_first.json", env);
	setenv(FTPROF_ENV_PATH, env, 1);
	assert_int_equal(ftprof_load(UUID_W, NULL, &pr, err, sizeof err), 0);
	assert_string_equal(ftprof_source(pr), env);
	assert_int_equal(ftprof_recommend(pr, "bf16"), FTPROF_REC_OFFLOAD); /* dtypes_first says so */
	ftprof_free(pr);
	/* the override file missing: the search goes on */
	SNP(env, sizeof env, "%s/elsewhere/missing.json", root);
	setenv(FTPROF_ENV_PATH, env, 1);
	assert_int_equal(ftprof_load(UUID_W, NULL, &pr, err, sizeof err), 0);
	assert_string_equal(ftprof_source(pr), p);
	ftprof_free(pr);
}

static void test_legacy_and_system(void **st)
{
	char legacy[PATH_MAX], sys[PATH_MAX], per[PATH_MAX];
	struct ftprof *pr = NULL;
	/* only the legacy single file (no uuid in it): matched by GPU name */
	SNP(legacy, sizeof legacy, "%s/freetoken/benchbw.json", cache);
	put_fixture("legacy.json", legacy);
	assert_int_equal(ftprof_load(UUID_X, "NVIDIA H200", &pr, err, sizeof err), 0);
	assert_string_equal(ftprof_source(pr), legacy);
	assert_int_equal(ftprof_recommend(pr, "bf16"), FTPROF_REC_HYBRID);
	ftprof_free(pr);
	/* a caller that knows only the name */
	assert_int_equal(ftprof_load(NULL, "NVIDIA H200", &pr, err, sizeof err), 0);
	ftprof_free(pr);
	/* GPU name mismatch: ignored */
	pr = NULL;
	assert_int_equal(ftprof_load(UUID_X, "NVIDIA A100-SXM4-80GB", &pr, err, sizeof err), -ENOENT);
	assert_null(pr);
	assert_non_null(strstr(err, "measured on NVIDIA H200"));
	/* the system-wide store comes after the legacy file */
	SNP(sys, sizeof sys, "%s/%s.json", sysdir, UUID_W);
	put_fixture("workloads_only.json", sys);
	/* legacy (name only) skipped for an A100; the system file matches by uuid */
	assert_int_equal(ftprof_load(UUID_W, "NVIDIA A100-SXM4-80GB", &pr, err, sizeof err), 0);
	assert_string_equal(ftprof_source(pr), sys);
	ftprof_free(pr);
	assert_int_equal(ftprof_load(UUID_W, "NVIDIA H200", &pr, err, sizeof err), 0);
	assert_string_equal(ftprof_source(pr), legacy);
	ftprof_free(pr);
	unlink(legacy);
	assert_int_equal(ftprof_load(UUID_W, "NVIDIA H200", &pr, err, sizeof err), 0);
	assert_string_equal(ftprof_source(pr), sys);
	ftprof_free(pr);
	/* the per-GPU file beats both */
	put_fixture("legacy.json", legacy);
	in_store(UUID_W ".json", per, sizeof per);
	put_fixture("dtypes_first.json", per);
	assert_int_equal(ftprof_load(UUID_W, "NVIDIA H200", &pr, err, sizeof err), 0);
	assert_string_equal(ftprof_source(pr), per);
	ftprof_free(pr);
	/* a corrupt per-GPU file is reported, not shadowed by the legacy file */
	put_text(per, "{\"version\":4,", 13);
	pr = NULL;
	assert_int_equal(ftprof_load(UUID_W, "NVIDIA H200", &pr, err, sizeof err), -EINVAL);
	assert_null(pr);
	assert_non_null(strstr(err, per));
}

static void test_gpu_mismatch(void **st)
{
	char p[PATH_MAX], q[PATH_MAX];
	struct ftprof *pr = NULL;
	/* full.json (GPU A) copied under GPU X's name: measured on another GPU, ignored */
	in_store(UUID_X ".json", p, sizeof p);
	put_fixture("full.json", p);
	assert_int_equal(ftprof_load(UUID_X, "NVIDIA H200", &pr, err, sizeof err), -ENOENT);
	assert_null(pr);
	assert_non_null(strstr(err, "measured on " UUID_A));
	/* ... and the search goes on to the legacy file */
	SNP(q, sizeof q, "%s/freetoken/benchbw.json", cache);
	put_fixture("legacy.json", q);
	assert_int_equal(ftprof_load(UUID_X, "NVIDIA H200", &pr, err, sizeof err), 0);
	assert_string_equal(ftprof_source(pr), q);
	ftprof_free(pr);

	fixture_path("full.json", p, sizeof p);
	assert_int_equal(ftprof_load_file(p, &pr, err, sizeof err), 0);
	assert_true(ftprof_matches_gpu(pr, UUID_A, NULL));
	assert_true(ftprof_matches_gpu(pr, "gpu-8EB97239-58CD-4A4F-9B2E-0123456789AB", NULL));
	assert_true(ftprof_matches_gpu(pr, "8eb97239-58cd-4a4f-9b2e-0123456789ab", NULL));
	assert_false(ftprof_matches_gpu(pr, UUID_X, "NVIDIA H200")); /* uuid decides over name */
	assert_true(ftprof_matches_gpu(pr, UUID_A, "NVIDIA A100"));
	assert_true(ftprof_matches_gpu(pr, NULL, "NVIDIA H200"));
	assert_false(ftprof_matches_gpu(pr, NULL, "NVIDIA H100"));
	assert_true(ftprof_matches_gpu(pr, NULL, NULL));
	assert_true(ftprof_matches_gpu(pr, "", ""));
	assert_false(ftprof_matches_gpu(NULL, UUID_A, NULL));
	ftprof_free(pr);
	fixture_path("host.json", p, sizeof p);
	assert_int_equal(ftprof_load_file(p, &pr, err, sizeof err), 0);
	assert_true(ftprof_matches_gpu(pr, UUID_A, "NVIDIA H200")); /* gpu null: accepted (the seed) */
	assert_true(ftprof_matches_gpu(pr, NULL, NULL));
	ftprof_free(pr);
	/* the seed's name rule: a truthy name that differs refuses; an empty one does not count */
	fixture_path("golden/legacy_v2_name.json", p, sizeof p);
	assert_int_equal(ftprof_load_file(p, &pr, err, sizeof err), 0);
	assert_true(ftprof_matches_gpu(pr, NULL, "Fake GPU"));
	assert_false(ftprof_matches_gpu(pr, NULL, "NVIDIA H200"));
	assert_false(ftprof_matches_gpu(pr, UUID_A, "NVIDIA H200")); /* no uuid in the file: the name */
	ftprof_free(pr);
	SNP(p, sizeof p, "%s/noname.json", root);
	put_text(p, "{\"gpu\":{\"name\":\"\"}}", strlen("{\"gpu\":{\"name\":\"\"}}"));
	assert_int_equal(ftprof_load_file(p, &pr, err, sizeof err), 0);
	assert_true(ftprof_matches_gpu(pr, NULL, "NVIDIA H200"));
	ftprof_free(pr);
	put_text(p, "{\"gpu\":{\"name\":7}}", strlen("{\"gpu\":{\"name\":7}}"));
	assert_int_equal(ftprof_load_file(p, &pr, err, sizeof err), 0);
	assert_false(ftprof_matches_gpu(pr, NULL, "NVIDIA H200"));
	ftprof_free(pr);
}

/* ---------------------------------------------------------------- writing */

static int count_entries(const char *dir)
{
	char cmd[PATH_MAX + 32];
	int n = 0;
	SNP(cmd, sizeof cmd, "ls -A '%s'", dir);
	FILE *f = popen(cmd, "r");
	char line[512];
	while (f && fgets(line, sizeof line, f))
		n++;
	if (f)
		pclose(f);
	return n;
}

static void test_store_write(void **st)
{
	json_t *full = load_fixture("full.json"), *host = load_fixture("host.json");
	char out[PATH_MAX], want[PATH_MAX];
	struct stat sb;
	struct ftprof *pr = NULL;

	umask(077); /* the mode is 0644 whatever the umask */
	assert_int_equal(ftprof_store_write(full, NULL, out, sizeof out), 0);
	in_store(UUID_A ".json", want, sizeof want);
	assert_string_equal(out, want);
	assert_int_equal(stat(out, &sb), 0);
	assert_int_equal(sb.st_mode & 07777, 0644);
	assert_int_equal(count_entries(store), 1); /* no temp file left behind */
	assert_int_equal(ftprof_load(UUID_A, NULL, &pr, err, sizeof err), 0);
	assert_true(json_equal((json_t *)ftprof_json(pr), full));
	ftprof_free(pr);
	/* rewrite: replaced in place */
	json_object_set_new(full, "threshold", json_real(3.0));
	assert_int_equal(ftprof_store_write(full, UUID_A, NULL, 0), 0);
	assert_int_equal(ftprof_load(UUID_A, NULL, &pr, err, sizeof err), 0);
	assert_float_equal(json_real_value(json_object_get(ftprof_json(pr), "threshold")), 3.0, 0);
	ftprof_free(pr);
	assert_int_equal(count_entries(store), 1);
	/* the GPU-less profile is host.json */
	assert_int_equal(ftprof_store_write(host, NULL, out, sizeof out), 0);
	in_store("host.json", want, sizeof want);
	assert_string_equal(out, want);
	assert_int_equal(count_entries(store), 2);
	/* refused shapes */
	assert_int_equal(ftprof_store_write(full, UUID_X, out, sizeof out), -EINVAL); /* other GPU */
	assert_int_equal(ftprof_store_write(host, UUID_X, out, sizeof out), -EINVAL); /* gpu null */
	assert_int_equal(ftprof_store_write(NULL, NULL, out, sizeof out), -EINVAL);
	json_t *arr = json_array();
	assert_int_equal(ftprof_store_write(arr, NULL, out, sizeof out), -EINVAL);
	json_decref(arr);
	json_t *bad = json_deep_copy(full);
	json_object_del(bad, "version");
	assert_int_equal(ftprof_store_write(bad, NULL, out, sizeof out), -EINVAL);
	json_object_set_new(bad, "version", json_integer(4));
	json_object_set_new(json_object_get(bad, "gpu"), "uuid", json_string("../../evil"));
	assert_int_equal(ftprof_store_write(bad, NULL, out, sizeof out), -EINVAL);
	json_object_del(bad, "gpu");
	assert_int_equal(ftprof_store_write(bad, NULL, out, sizeof out), -EINVAL);
	json_decref(bad);
	/* path_out too small: nothing written */
	json_object_set_new(json_object_get(full, "gpu"), "uuid", json_string(UUID_W));
	assert_int_equal(ftprof_store_write(full, NULL, out, 8), -ENAMETOOLONG);
	assert_int_equal(count_entries(store), 2);
	/* the env override is where it goes; missing directories are made */
	char env[PATH_MAX];
	SNP(env, sizeof env, "%s/a/b/c/p.json", root);
	setenv(FTPROF_ENV_PATH, env, 1);
	assert_int_equal(ftprof_store_write(full, NULL, out, sizeof out), 0);
	assert_string_equal(out, env);
	assert_int_equal(stat(env, &sb), 0);
	/* a given store directory ignores the override */
	char dd[PATH_MAX];
	SNP(dd, sizeof dd, "%s/daemon/store", root);
	assert_int_equal(ftprof_store_write_in(dd, host, NULL, out, sizeof out), 0);
	SNP(want, sizeof want, "%s/host.json", dd);
	assert_string_equal(out, want);
	assert_int_equal(ftprof_store_file(dd, NULL, out, sizeof out), 0);
	assert_string_equal(out, want);
	assert_int_equal(ftprof_store_file(dd, UUID_A, out, sizeof out), 0);
	SNP(want, sizeof want, "%s/%s.json", dd, UUID_A);
	assert_string_equal(out, want);
	assert_int_equal(ftprof_store_file(dd, "../x", out, sizeof out), -EINVAL);
	assert_int_equal(ftprof_store_file(NULL, UUID_A, out, sizeof out), 0);
	in_store(UUID_A ".json", want, sizeof want);
	assert_string_equal(out, want);
	unsetenv(FTPROF_ENV_PATH);
	umask(022);
	json_decref(full);
	json_decref(host);
}

/* The seed's single file: where it is, written atomically with the per-GPU file's bytes, found
 * after the per-GPU file by the reader. */
static void test_legacy_write(void **st)
{
	json_t *full = load_fixture("full.json");
	char out[PATH_MAX], want[PATH_MAX], per[PATH_MAX], *a, *b;
	size_t la, lb;
	struct ftprof *pr = NULL;
	assert_int_equal(ftprof_legacy_path(out, sizeof out), 0);
	SNP(want, sizeof want, "%s/freetoken/benchbw.json", cache);
	assert_string_equal(out, want);
	setenv(FTPROF_ENV_PATH, "/elsewhere/p.json", 1); /* not consulted */
	assert_int_equal(ftprof_legacy_path(out, sizeof out), 0);
	assert_string_equal(out, want);
	unsetenv(FTPROF_ENV_PATH);
	assert_int_equal(ftprof_legacy_path(out, 8), -ENAMETOOLONG);
	assert_int_equal(ftprof_store_write(full, NULL, per, sizeof per), 0);
	assert_int_equal(ftprof_legacy_copy(per, out, sizeof out), 0);
	assert_string_equal(out, want);
	assert_int_equal(ftfs_read_file(per, 1 << 24, &a, &la), 0);
	assert_int_equal(ftfs_read_file(want, 1 << 24, &b, &lb), 0);
	assert_true(la == lb && !memcmp(a, b, la)); /* the same bytes */
	free(a);
	free(b);
	assert_int_equal(count_entries(store), 1);
	SNP(out, sizeof out, "%s/freetoken", cache);
	assert_int_equal(count_entries(out), 2); /* benchbw/ and benchbw.json, no temp file */
	/* the reader: per-GPU first, then the legacy file */
	assert_int_equal(ftprof_load(UUID_A, "NVIDIA H200", &pr, err, sizeof err), 0);
	assert_string_equal(ftprof_source(pr), per);
	ftprof_free(pr);
	unlink(per);
	assert_int_equal(ftprof_load(UUID_A, "NVIDIA H200", &pr, err, sizeof err), 0);
	assert_string_equal(ftprof_source(pr), want);
	ftprof_free(pr);
	put_text(per, "[1]", 3); /* not a profile: nothing copied */
	assert_int_equal(ftprof_legacy_copy(per, NULL, 0), -EINVAL);
	assert_int_equal(ftprof_legacy_copy("/nonexistent/p.json", NULL, 0), -ENOENT);
	unlink(per);
	assert_int_equal(ftprof_load(UUID_A, "NVIDIA H200", &pr, err, sizeof err), 0);
	assert_string_equal(ftprof_source(pr), want); /* the old copy is intact */
	ftprof_free(pr);
	json_decref(full);
}

static void test_store_list(void **st)
{
	json_t *full = load_fixture("full.json"), *host = load_fixture("host.json");
	struct ftprof_entry *e = (struct ftprof_entry *)0x1;
	char p[PATH_MAX];
	int n = -1;

	assert_int_equal(ftprof_store_list(NULL, &e, &n), 0); /* no store yet */
	assert_int_equal(n, 0);
	assert_null(e);
	assert_int_equal(ftprof_store_write(host, NULL, NULL, 0), 0);
	assert_int_equal(ftprof_store_write(full, NULL, NULL, 0), 0);
	in_store(UUID_A ".json.tmp.AbC123", p, sizeof p); /* a write in progress */
	put_text(p, "{", 1);
	in_store(".hidden.json", p, sizeof p);
	put_text(p, "{}", 2);
	in_store("notes.txt", p, sizeof p);
	put_text(p, "x", 1);
	in_store("dir.json", p, sizeof p);
	assert_int_equal(mkdir(p, 0755), 0);
	assert_int_equal(ftprof_store_list(NULL, &e, &n), 0);
	assert_int_equal(n, 2);
	assert_string_equal(e[0].name, UUID_A);
	assert_string_equal(e[1].name, "host");
	in_store("host.json", p, sizeof p);
	assert_string_equal(e[1].path, p);
	assert_true(e[0].size > 1000);
	assert_true(e[0].mtime > 1e9);
	free(e);
	assert_int_equal(ftprof_store_list(store, &e, &n), 0);
	assert_int_equal(n, 2);
	free(e);
	assert_int_equal(ftprof_store_list(store, NULL, &n), -EINVAL);
	/* a store of many GPUs (the array grows past its first size), listed whole, in name order */
	char many[PATH_MAX];
	SNP(many, sizeof many, "%s/many", root);
	for (int i = 39; i >= 0; i--) {
		SNP(p, sizeof p, "%s/GPU-%04d.json", many, i);
		assert_int_equal(tmpdir_put(p, "{}", 2), 0);
	}
	assert_int_equal(ftprof_store_list(many, &e, &n), 0);
	assert_int_equal(n, 40);
	for (int i = 0; i < 40; i++) {
		char want[32];
		snprintf(want, sizeof want, "GPU-%04d", i);
		assert_string_equal(e[i].name, want);
		assert_int_equal(e[i].size, 2);
	}
	free(e);
	json_decref(full);
	json_decref(host);
}

/* A reader polling while a writer replaces the file never sees a partial one. */
static void test_atomic_concurrent(void **st)
{
	json_t *a = load_fixture("full.json"), *b = json_deep_copy(a);
	json_t *w = json_object_get(b, "warnings");
	char out[PATH_MAX];
	for (int i = 0; i < 2000; i++) /* make b ~100 KiB so a torn read would be likely */
		json_array_append_new(w, json_string("padding padding padding padding padding padding"));
	assert_int_equal(ftprof_store_write(a, NULL, out, sizeof out), 0);
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		for (int i = 0; i < 60; i++)
			if (ftprof_store_write(i % 2 ? a : b, NULL, NULL, 0))
				_exit(1);
		_exit(0);
	}
	int reads = 0, bad = 0, status = 0;
	for (;;) {
		struct ftprof *pr = NULL;
		int r = ftprof_load_file(out, &pr, err, sizeof err);
		if (r)
			bad++;
		ftprof_free(pr);
		reads++;
		if (waitpid(pid, &status, WNOHANG) == pid)
			break;
	}
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	if (bad)
		fail_msg("%d of %d reads failed: %s", bad, reads, err);
	assert_true(reads > 0);
	assert_int_equal(count_entries(store), 1);
	json_decref(a);
	json_decref(b);
}

/* ---------------------------------------------------------------- schema */

static void expect_schema_fail(json_t *doc, const char *path_part)
{
	int r = ftt_schema_validate(SCHEMA, doc, err, sizeof err);
	if (r != -EINVAL)
		fail_msg("broken profile accepted (r=%d, %s), expected failure at %s", r, err, path_part);
	if (!strstr(err, path_part))
		fail_msg("error '%s' does not name %s", err, path_part);
	json_decref(doc);
}

static void test_schema(void **st)
{
	json_t *full = load_fixture("full.json"), *host = load_fixture("host.json"), *d;

	assert_int_equal(ftt_schema_validate(SCHEMA, full, err, sizeof err), 0);
	assert_int_equal(ftt_schema_validate(SCHEMA, host, err, sizeof err), 0);
	d = load_fixture("replay.json");
	assert_int_equal(ftt_schema_validate(SCHEMA, d, err, sizeof err), 0);
	json_decref(d);

	/* broken copies fail, naming where */
	d = json_deep_copy(full);
	json_object_del(json_object_get(d, "gpu"), "uuid");
	expect_schema_fail(d, "uuid");
	d = json_deep_copy(full);
	json_object_set_new(json_object_get(d, "gpu"), "uuid", json_string("8eb97239"));
	expect_schema_fail(d, "$.gpu.uuid");
	d = json_deep_copy(full);
	json_object_set_new(d, "version", json_integer(3));
	expect_schema_fail(d, "$.version");
	d = json_deep_copy(full);
	json_object_del(json_object_get(json_object_get(d, "dtype_kernels"), "bf16"), "cpu_moe_gbs_spread");
	expect_schema_fail(d, "$.dtype_kernels.bf16: missing required property \"cpu_moe_gbs_spread\"");
	d = json_deep_copy(full);
	json_object_set_new(json_object_get(d, "dtypes"), "bf16", json_string("cpu"));
	expect_schema_fail(d, "$.dtypes.bf16");
	d = json_deep_copy(full);
	json_object_set_new(json_object_get(json_object_get(json_object_get(d, "dtype_kernels"), "bf16"),
					    "pcie_gather_gbs_spread"),
			    "samples", json_integer(0));
	expect_schema_fail(d, "$.dtype_kernels.bf16.pcie_gather_gbs_spread.samples");
	d = json_deep_copy(full);
	json_object_set_new(json_object_get(json_object_get(json_object_get(d, "workloads"), "qwen3-30b"),
					    "kernels"),
			    "bf16", json_string("fast"));
	expect_schema_fail(d, "$.workloads.qwen3-30b.kernels.bf16");
	d = json_deep_copy(full);
	json_object_set_new(d, "surprise", json_true());
	expect_schema_fail(d, "surprise");
	d = json_deep_copy(full);
	json_object_set_new(json_object_get(d, "ceilings"), "pcie_linear_h2d_gbs", json_string("55"));
	expect_schema_fail(d, "$.ceilings.pcie_linear_h2d_gbs");
	d = json_deep_copy(full);
	json_object_del(json_object_get(d, "cpu"), "isa");
	expect_schema_fail(d, "$.cpu");
	d = json_deep_copy(host);
	json_object_set_new(d, "gpu", json_string("none"));
	expect_schema_fail(d, "$.gpu");
	d = json_deep_copy(host);
	json_object_del(d, "tool");
	expect_schema_fail(d, "$"); /* ours without tool is no seed profile either (spreads) */
	/* profiles the seed writes (no tool, warnings, spreads or trust fields; integer epoch) */
	static const char *const seed[] = {"legacy.json", "golden/seed_v4.json", "golden/seed_models.json"};
	for (size_t i = 0; i < sizeof seed / sizeof seed[0]; i++) {
		d = load_fixture(seed[i]);
		if (ftt_schema_validate(SCHEMA, d, err, sizeof err))
			fail_msg("%s: %s", seed[i], err);
		json_decref(d);
	}
	d = load_fixture("golden/seed_v4.json");
	json_object_set_new(json_object_get(d, "dtypes"), "bf16", json_string("cpu"));
	expect_schema_fail(d, "bf16");
	d = load_fixture("golden/seed_v4.json");
	json_object_del(d, "workloads");
	expect_schema_fail(d, "$");
	d = load_fixture("golden/seed_v4.json"); /* a seed profile with one of our fields only: neither */
	json_object_set_new(d, "warnings", json_array());
	expect_schema_fail(d, "$");

	json_decref(full);
	json_decref(host);
}

/* The fetch fraction walked field by field: each of the four figures it reads (the overlap pair,
 * then the alone pair) absent, null, 0, a string or a small rate (0.5 GB/s: truthy), one at a time, with the overlap pair there
 * and without it; the expected value from the seed's rule (overlap pair when both are truthy,
 * else pcie / cpu when both are, capped at 1; a string cannot be divided: no value). */
static void test_fetch_fraction_walk(void **st)
{
	(void)st;
	static const char *keys[] = {"pcie_gather_overlap_gbs", "cpu_moe_overlap_gbs", "pcie_gather_gbs", "cpu_moe_gbs"};
	static const double val[] = {24.0, 96.0, 50.0, 120.0};
	enum { ABSENT, NUL, ZERO, STR, SMALL, KINDS };
	char path[PATH_MAX];
	SNP(path, sizeof path, "%s/walk.json", root);
	int walked = 0;
	for (int with_ov = 1; with_ov >= 0; with_ov--)
		for (int k = 0; k < 4; k++)
			for (int kind = ABSENT; kind < KINDS; kind++) {
				if (!with_ov && k < 2)
					continue; /* the overlap pair is absent already */
				json_t *e = json_object();
				int have[4];
				for (int i = 0; i < 4; i++) {
					have[i] = with_ov || i >= 2;
					if (have[i] && i != k)
						json_object_set_new(e, keys[i], json_real(val[i]));
				}
				int truthy_k = 0, str_k = 0;
				if (have[k]) {
					if (kind == NUL)
						json_object_set_new(e, keys[k], json_null());
					else if (kind == ZERO)
						json_object_set_new(e, keys[k], json_real(0.0));
					else if (kind == STR) {
						json_object_set_new(e, keys[k], json_string("fast"));
						truthy_k = str_k = 1;
					} else if (kind == SMALL) {
						json_object_set_new(e, keys[k], json_real(0.5));
						truthy_k = 1;
					}
				}
				double v[4];
				for (int i = 0; i < 4; i++)
					v[i] = i == k && kind == SMALL ? 0.5 : val[i];
				/* the oracle */
				int t[4];
				for (int i = 0; i < 4; i++)
					t[i] = have[i] && (i != k || truthy_k);
				double want = NAN;
				if (t[0] && t[1])
					want = (k < 2 && str_k) ? NAN : v[0] / (v[0] + v[1]);
				else if (t[2] && t[3])
					want = (k >= 2 && str_k) ? NAN : v[2] / v[3] > 1 ? 1 : v[2] / v[3];
				json_t *doc = json_pack("{s:i,s:{s:s},s:{s:o},s:{s:s}}", "version", 4, "gpu", "uuid", UUID_A,
							"dtype_kernels", "bf16", e, "dtypes", "bf16", "hybrid");
				assert_int_equal(json_dump_file(doc, path, 0), 0);
				json_decref(doc);
				struct ftprof *pr = NULL;
				if (ftprof_load_file(path, &pr, err, sizeof err) < 0)
					fail_msg("load: %s", err);
				double f = -1;
				int r = ftprof_fetch_fraction(pr, "bf16", &f);
				if (isnan(want) ? r != -ENODATA : (r != 0 || fabs(f - want) > 1e-12))
					fail_msg("%s %s%s: fetch fraction %d %.6f, want %s %.6f", keys[k],
						 (const char *[]){"absent", "null", "0", "a string", "0.5"}[kind],
						 with_ov ? "" : " (no overlap pair)", r, f, isnan(want) ? "none" : "", want);
				ftprof_free(pr);
				walked++;
			}
	assert_int_equal(walked, 30);
}

/* ftprof_store_write_in walked over the gpu block a profile may bring: each malformed uuid is
 * refused with -EINVAL and leaves no file (a generated mutant that dropped the string check
 * read a NULL uuid). */
static void test_store_write_gpu_walk(void **st)
{
	(void)st;
	char d[PATH_MAX], out[PATH_MAX];
	SNP(d, sizeof d, "%s/walkstore", root);
	static const char *gpus[] = {"{\"uuid\":5}", "{\"uuid\":null}", "{\"uuid\":\"\"}", "{}", "[1]", "7",
				     "{\"uuid\":[\"" UUID_A "\"]}"};
	for (size_t i = 0; i < sizeof gpus / sizeof *gpus; i++) {
		char text[512];
		SNP(text, sizeof text, "{\"version\":4,\"gpu\":%s}", gpus[i]);
		json_t *doc = json_loads(text, 0, NULL);
		assert_non_null(doc);
		int r = ftprof_store_write_in(d, doc, NULL, out, sizeof out);
		if (r != -EINVAL)
			fail_msg("gpu %s: %d, want -EINVAL", gpus[i], r);
		json_decref(doc);
	}
	struct stat sb;
	assert_true(stat(d, &sb) < 0 || sb.st_nlink == 2); /* nothing written */
}

/* hybrid_max_batch: the dtype entry's when it has one, else the smallest of the workloads' (an
 * engine must not batch past any model's limit), walked over the order of the workloads and an
 * entry without one. */
static void test_hybrid_max_batch_walk(void **st)
{
	(void)st;
	static const char *cases[][2] = {
		/* workloads' values in file order, the answer */
		{"8,4,16", "4"}, {"4,8,16", "4"}, {"16,8,4", "4"}, {"-,8,2", "2"}, {"8,-,-", "8"}, {"-,-,-", "none"},
	};
	char path[PATH_MAX];
	SNP(path, sizeof path, "%s/hmb.json", root);
	for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
		json_t *wl = json_object();
		char v[32];
		snprintf(v, sizeof v, "%s", cases[c][0]);
		int i = 0;
		for (char *save, *t = strtok_r(v, ",", &save); t; t = strtok_r(NULL, ",", &save), i++) {
			json_t *e = json_object();
			if (*t != '-')
				json_object_set_new(e, "hybrid_max_batch", json_integer(atoi(t)));
			char name[16];
			snprintf(name, sizeof name, "model%d", i);
			json_object_set_new(wl, name, json_pack("{s:{s:o}}", "kernels", "bf16", e));
		}
		json_t *doc = json_pack("{s:i,s:{s:s},s:{s:{}},s:o}", "version", 4, "gpu", "uuid", UUID_A,
					"dtype_kernels", "bf16", "workloads", wl);
		assert_int_equal(json_dump_file(doc, path, JSON_PRESERVE_ORDER), 0);
		json_decref(doc);
		struct ftprof *pr = NULL;
		if (ftprof_load_file(path, &pr, err, sizeof err) < 0)
			fail_msg("load: %s", err);
		int b = -1, r = ftprof_hybrid_max_batch(pr, "bf16", &b);
		char got[16];
		snprintf(got, sizeof got, "%d", b);
		if (strcmp(cases[c][1], "none") ? r != 0 || strcmp(got, cases[c][1]) : r != -ENODATA)
			fail_msg("workloads %s: %d (%d), want %s", cases[c][0], r, b, cases[c][1]);
		ftprof_free(pr);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_aliases, setup, teardown),
		cmocka_unit_test_setup_teardown(test_paths, setup, teardown),
		cmocka_unit_test_setup_teardown(test_full_profile, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fetch_fraction_walk, setup, teardown),
		cmocka_unit_test_setup_teardown(test_store_write_gpu_walk, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hybrid_max_batch_walk, setup, teardown),
		cmocka_unit_test_setup_teardown(test_host_json, setup, teardown),
		cmocka_unit_test_setup_teardown(test_workloads_unanimous, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dtypes_first, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wrong_types, setup, teardown),
		cmocka_unit_test_setup_teardown(test_golden, setup, teardown),
		cmocka_unit_test_setup_teardown(test_batch_sweep, setup, teardown),
		cmocka_unit_test_setup_teardown(test_corrupt_files, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mutations, setup, teardown),
		cmocka_unit_test_setup_teardown(test_missing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_env_override, setup, teardown),
		cmocka_unit_test_setup_teardown(test_legacy_and_system, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gpu_mismatch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_store_write, setup, teardown),
		cmocka_unit_test_setup_teardown(test_legacy_write, setup, teardown),
		cmocka_unit_test_setup_teardown(test_store_list, setup, teardown),
		cmocka_unit_test_setup_teardown(test_atomic_concurrent, setup, teardown),
		cmocka_unit_test_setup_teardown(test_schema, setup, teardown),
		cmocka_unit_test_setup_teardown(test_recommend_workload, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
