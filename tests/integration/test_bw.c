/* ftbench bw end to end, as a user and the daemon run it: the real binary with small iteration
 * counts on this host (CPU-only in CI: host.json), the profile checked against
 * api/schemas/profile.schema.json, read back by `ftbench profile recommend`, the worker protocol
 * on --result-fd, -o/--json, and failures that must leave no (partial) profile behind. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../lib/child.h"
#include "../lib/tmpdir.h"
#include "util/fsutil.h"
#include "../schema.h"

#define SCHEMA "api/schemas/profile.schema.json"
#define SMALL "--no-checks", "--cpu-iters", "2", "--kernel-cpu-iters", "3", "--pcie-mib", "16", "--pcie-iters", "2", \
	"--kernel-pcie-iters", "2", "--overlap-seconds", "0.5"

static char tmp[256], ftbench[512], ftbench_bwfault[512];
static const char *exe = ftbench; /* what run() starts */

/* Run ftbench with XDG_CACHE_HOME=tmp/cache, stdout into out_path, fd 3 into fd3_path (when
 * not NULL). Returns the exit status (or 128+signal). */
static int run(const char *out_path, const char *fd3_path, const char *const *args)
{
	char cache[512];
	snprintf(cache, sizeof cache, "XDG_CACHE_HOME=%s/cache", tmp);
	const char *env[] = {cache, "FREETOKEN_BENCHBW_PATH", NULL};
	const char *argv[64] = {exe};
	int n = 1;
	for (; args[n - 1] && n < 63; n++)
		argv[n] = args[n - 1];
	argv[n] = NULL;
	int rc = child_run(argv, &(struct child_io){.out = out_path, .fd3 = fd3_path, .env = env});
	assert_true(rc >= 0);
	return rc;
}

static json_t *load(const char *path)
{
	json_error_t e;
	json_t *j = json_load_file(path, 0, &e);
	if (!j)
		print_error("%s: %s (line %d)\n", path, e.text, e.line);
	return j;
}

static char *slurp(const char *path)
{
	char *buf = NULL;
	size_t len;
	assert_int_equal(ftfs_read_file(path, 16 << 20, &buf, &len), 0);
	return buf;
}

/* Equal up to the last digits of reals (a writer may print 15 significant digits). */
static bool json_near(const json_t *a, const json_t *b)
{
	if (json_is_number(a) && json_is_number(b)) {
		double x = json_number_value(a), y = json_number_value(b);
		return fabs(x - y) <= 1e-12 * (fabs(x) + fabs(y)) + 1e-300;
	}
	if (json_typeof(a) != json_typeof(b))
		return false;
	if (json_is_object(a)) {
		const char *k;
		json_t *v;
		if (json_object_size(a) != json_object_size(b))
			return false;
		json_object_foreach((json_t *)a, k, v)
			if (!json_near(v, json_object_get(b, k)))
				return false;
		return true;
	}
	if (json_is_array(a)) {
		if (json_array_size(a) != json_array_size(b))
			return false;
		for (size_t i = 0; i < json_array_size(a); i++)
			if (!json_near(json_array_get(a, i), json_array_get(b, i)))
				return false;
		return true;
	}
	return json_equal(a, b);
}

static void assert_valid(const char *path)
{
	char err[1024] = "";
	int r = ftt_schema_validate_file(SCHEMA, path, err, sizeof err);
	if (r)
		print_error("%s: %s\n", path, err);
	assert_int_equal(r, 0);
}

/* Where the store puts the profile this run measured. */
static void store_path(const json_t *prof, char *buf, size_t n)
{
	const json_t *gpu = json_object_get(prof, "gpu");
	snprintf(buf, n, "%s/cache/freetoken/benchbw/%s.json", tmp,
		 json_is_object(gpu) ? json_string_value(json_object_get(gpu, "uuid")) : "host");
}

static void test_default_store_and_worker(void **s)
{
	char out[512], fd3[512], path[600];
	snprintf(out, sizeof out, "%s/a.out", tmp);
	snprintf(fd3, sizeof fd3, "%s/a.fd3", tmp);
	const char *args[] = {"bw", "--dtype", "bf16,fp8", "--result-fd", "3", SMALL, NULL};
	assert_int_equal(run(out, fd3, args), 0);

	/* the worker protocol: progress lines with the agreed labels, then the whole profile */
	FILE *f = fopen(fd3, "r");
	assert_non_null(f);
	char line[1 << 16];
	int seen_ceil = 0, seen_bf16 = 0, seen_fp8 = 0, seen_done = 0, results = 0;
	json_t *result = NULL;
	while (fgets(line, sizeof line, f)) {
		json_t *m = json_loads(line, 0, NULL);
		assert_non_null(m);
		const char *type = json_string_value(json_object_get(m, "type"));
		assert_non_null(type);
		if (!strcmp(type, "progress")) {
			const char *l = json_string_value(json_object_get(m, "label"));
			seen_ceil |= !strcmp(l, "ceilings");
			seen_bf16 |= !strcmp(l, "dtype:bf16");
			seen_fp8 |= !strcmp(l, "dtype:fp8_block");
			seen_done |= !strcmp(l, "done");
		} else {
			assert_string_equal(type, "result");
			results++;
			json_decref(result);
			result = json_incref(json_object_get(m, "result"));
		}
		json_decref(m);
	}
	fclose(f);
	assert_true(seen_ceil && seen_bf16 && seen_fp8 && seen_done);
	assert_int_equal(results, 1);
	assert_non_null(result);

	/* the file in the store is that profile and passes the schema */
	store_path(result, path, sizeof path);
	json_t *file = load(path);
	assert_non_null(file);
	assert_true(json_near(file, result));
	assert_valid(path);
	assert_int_equal(json_integer_value(json_object_get(file, "version")), 4);
	json_t *bf16 = json_object_get(json_object_get(file, "dtype_kernels"), "bf16");
	assert_true(json_number_value(json_object_get(bf16, "cpu_moe_gbs")) > 0);
	assert_true(json_number_value(json_object_get(json_object_get(file, "ceilings"), "cpu_stream_read_gbs")) > 0);
	/* fp8_block has no CPU path: offload once the gather is measured; without a GPU no verdict */
	assert_string_equal(json_string_value(json_object_get(json_object_get(file, "dtypes"), "fp8_block")),
			    json_is_null(json_object_get(file, "gpu")) ? "unmeasured" : "offload");
	if (json_is_null(json_object_get(file, "gpu"))) {
		/* a GPU-less host: no PCIe figures, no verdict (unmeasured) with a note everywhere */
		assert_true(json_is_null(json_object_get(json_object_get(file, "ceilings"), "pcie_linear_h2d_gbs")));
		assert_true(json_is_null(json_object_get(bf16, "pcie_gather_gbs")));
		assert_true(json_is_null(json_object_get(bf16, "recommended")));
		assert_string_equal(json_string_value(json_object_get(json_object_get(file, "dtypes"), "bf16")), "unmeasured");
		assert_true(json_is_string(json_object_get(bf16, "note")));
		/* the read passes of the run: 2 initial, then one before each of bf16's 3 rounds of
		 * steps (fp8_block has no CPU path; no overlap without a GPU); the ceiling is the
		 * better of the two phases' medians */
		json_t *ceil = json_object_get(file, "ceilings");
		json_t *sp = json_object_get(ceil, "cpu_stream_read_gbs_spread");
		assert_int_equal(json_integer_value(json_object_get(sp, "samples")), 5);
		assert_int_equal(json_integer_value(json_object_get(ceil, "cpu_stream_read_phases")), 2);
		double cr = json_number_value(json_object_get(ceil, "cpu_stream_read_gbs"));
		assert_true(cr >= json_number_value(json_object_get(sp, "min")));
		assert_true(cr <= json_number_value(json_object_get(sp, "max")));
		assert_true(cr >= json_number_value(json_object_get(sp, "median")) - 1e-9); /* 5 passes, 2 phases */
		/* bf16's own adjacent read rate, from those 3 passes */
		assert_true(json_number_value(json_object_get(bf16, "cpu_read_adjacent_gbs")) > 0);
		assert_int_equal(json_integer_value(json_object_get(json_object_get(bf16, "cpu_read_adjacent_gbs_spread"),
								    "samples")), 3);
		json_t *fp8 = json_object_get(json_object_get(file, "dtype_kernels"), "fp8_block");
		assert_true(json_is_null(json_object_get(fp8, "cpu_read_adjacent_gbs")));
	}

	/* the summary on stdout */
	char *text = slurp(out);
	assert_non_null(strstr(text, "ceilings"));
	assert_non_null(strstr(text, "decision"));
	assert_non_null(strstr(text, "\nsaved: ")); /* the seed's last line */
	free(text);

	/* read back through libftprofile, as an engine would */
	char rec_out[512];
	snprintf(rec_out, sizeof rec_out, "%s/rec.out", tmp);
	const char *rargs[] = {"profile", "recommend", "bf16", NULL};
	char want[32];
	if (json_is_null(json_object_get(file, "gpu"))) {
		/* a CPU-only profile answers none (exit 1: no data for the format), never offload */
		assert_int_equal(run(rec_out, NULL, rargs), 1);
		snprintf(want, sizeof want, "none\n");
	} else {
		assert_int_equal(run(rec_out, NULL, rargs), 0);
		snprintf(want, sizeof want, "%s\n",
			 json_string_value(json_object_get(json_object_get(file, "dtypes"), "bf16")));
	}
	text = slurp(rec_out);
	assert_string_equal(text, want);
	free(text);
	json_decref(file);
	json_decref(result);
}

static void test_output_json_models_isa(void **s)
{
	char out[512], file[512];
	snprintf(out, sizeof out, "%s/b.out", tmp);
	snprintf(file, sizeof file, "%s/sub/dir/p.json", tmp);
	const char *args[] = {"bw", "--model", "qwen3-30b", "--formats", "bf16", "--isa", "scalar,avx2",
			      "--threshold", "1.5", "--json", "-o", file, SMALL, NULL};
	assert_int_equal(run(out, NULL, args), 0);
	json_t *printed = load(out), *written = load(file);
	assert_non_null(printed);
	assert_non_null(written);
	assert_true(json_near(printed, written));
	assert_valid(file);
	assert_true(json_number_value(json_object_get(written, "threshold")) == 1.5);
	assert_int_equal(json_object_size(json_object_get(written, "dtype_kernels")), 0);
	json_t *w = json_object_get(json_object_get(written, "workloads"), "qwen3-30b");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(w, "model"), "inter")), 768);
	json_t *e = json_object_get(json_object_get(w, "kernels"), "bf16");
	json_t *sweep = json_object_get(e, "isa_sweep");
	assert_true(json_is_object(sweep));
	assert_true(json_number_value(json_object_get(sweep, "scalar")) > 0);
	assert_true(json_number_value(json_object_get(sweep, "avx2")) > 0);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(e, "cpu_moe_gbs_spread"), "samples")), 3);
	assert_non_null(json_object_get(json_object_get(w, "recommended_moe_backend"), "bf16"));
	/* a sweep of two tiers, 3 rounds each: 3 passes next to the chosen tier's steps, 3 more
	 * next to the other's, all in the run's spread (with the 2 initial ones) */
	assert_int_equal(json_integer_value(json_object_get(json_object_get(e, "cpu_read_adjacent_gbs_spread"), "samples")), 3);
	if (json_is_null(json_object_get(written, "gpu")))
		assert_int_equal(json_integer_value(json_object_get(
					 json_object_get(json_object_get(written, "ceilings"), "cpu_stream_read_gbs_spread"),
					 "samples")),
				 2 + 3 + 3);
	json_decref(printed);
	json_decref(written);
}

static void test_failures_leave_no_profile(void **s)
{
	char out[512], fd3[512], dir[512], host[600];
	snprintf(out, sizeof out, "%s/c.out", tmp);
	snprintf(fd3, sizeof fd3, "%s/c.fd3", tmp);
	snprintf(dir, sizeof dir, "%s/cache/freetoken/benchbw", tmp);
	snprintf(host, sizeof host, "%s/failing.json", tmp);

	const char *a1[] = {"bw", "--dtype", "int3", "-o", host, NULL};
	assert_int_equal(run(out, NULL, a1), 2);
	const char *a2[] = {"bw", "--threshold", "0", "-o", host, NULL};
	assert_int_equal(run(out, NULL, a2), 2);
	const char *a3[] = {"bw", "--cpu-threads", "100000", "-o", host, SMALL, NULL};
	assert_int_equal(run(out, NULL, a3), 2);
	const char *a4[] = {"bw", "--kernel-cpu-iters", "x", "-o", host, NULL};
	assert_int_equal(run(out, NULL, a4), 2);
	/* a GPU that does not exist, in worker mode: an error line, exit 2 */
	const char *a5[] = {"bw", "--gpu", "GPU-ffffffff-0000", "--result-fd", "3", "-o", host, SMALL, NULL};
	assert_int_equal(run(out, fd3, a5), 2);
	char *text = slurp(fd3);
	json_t *m = json_loads(text, JSON_DISABLE_EOF_CHECK, NULL);
	assert_non_null(m);
	assert_string_equal(json_string_value(json_object_get(m, "type")), "error");
	assert_non_null(strstr(json_string_value(json_object_get(m, "message")), "--gpu"));
	json_decref(m);
	free(text);
	/* the host run's flags: bad values are usage errors, and --gpu all without a GPU (hidden
	 * here, as on a CI host) names why, with no profile written */
	const char *a6[] = {"bw", "--deployment", "both", "-o", host, NULL};
	assert_int_equal(run(out, NULL, a6), 2);
	const char *a7[] = {"bw", "--engines", "0", "-o", host, NULL};
	assert_int_equal(run(out, NULL, a7), 2);
	setenv("CUDA_VISIBLE_DEVICES", "", 1);
	const char *a8[] = {"bw", "--gpu", "all", "--result-fd", "3", "-o", host, SMALL, NULL};
	assert_int_equal(run(out, fd3, a8), 2);
	unsetenv("CUDA_VISIBLE_DEVICES");
	text = slurp(fd3);
	m = json_loads(text, JSON_DISABLE_EOF_CHECK, NULL);
	assert_non_null(m);
	assert_string_equal(json_string_value(json_object_get(m, "type")), "error");
	assert_non_null(strstr(json_string_value(json_object_get(m, "message")), "--gpu all"));
	json_decref(m);
	free(text);
	struct stat st;
	assert_int_equal(stat(host, &st), -1);
	(void)dir;
}

/* Every file under dir (recursively, sorted by name): "path size fnv1a-of-content\n" appended to
 * *acc (a malloc'ed string, grown). */
static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void dir_state(const char *dir, char **acc)
{
	DIR *dd = opendir(dir);
	assert_non_null(dd);
	char *names[256];
	int n = 0;
	struct dirent *de;
	while ((de = readdir(dd)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
			assert_true(n < 256);
			names[n++] = strdup(de->d_name);
		}
	closedir(dd);
	qsort(names, (size_t)n, sizeof *names, cmp_str);
	for (int i = 0; i < n; i++) {
		char p[1024], line[1200];
		struct stat st;
		snprintf(p, sizeof p, "%s/%s", dir, names[i]);
		assert_int_equal(lstat(p, &st), 0);
		uint64_t h = 14695981039346656037ULL;
		if (S_ISREG(st.st_mode)) {
			char *c = NULL;
			size_t len = 0;
			assert_int_equal(ftfs_read_file(p, 64 << 20, &c, &len), 0);
			for (size_t k = 0; k < len; k++)
				h = (h ^ (uint8_t)c[k]) * 1099511628211ULL;
			free(c);
		}
		snprintf(line, sizeof line, "%s %lld %llx\n", p, (long long)st.st_size, (unsigned long long)h);
		size_t a = *acc ? strlen(*acc) : 0;
		*acc = realloc(*acc, a + strlen(line) + 1);
		strcpy(*acc + a, line);
		if (S_ISDIR(st.st_mode))
			dir_state(p, acc);
		free(names[i]);
	}
}

/* A real failed measurement (injected through the bw operations, see bw_fault_ops.c) after a
 * good run: the good profile in the store and the -o file stay byte for byte what they were, no
 * temp file is left, and the worker reports the error on fd 3 with exit 1. */
static void test_failed_measurement_keeps_the_store(void **s)
{
	char out[512], fd3[512], dir[512], good[600], other[600];
	snprintf(out, sizeof out, "%s/f.out", tmp);
	snprintf(fd3, sizeof fd3, "%s/f.fd3", tmp);
	snprintf(dir, sizeof dir, "%s/fault", tmp);
	snprintf(other, sizeof other, "%s/fault/o.json", tmp);
	const char *ok_args[] = {"bw", "--dtype", "bf16", "--json", SMALL, NULL};
	assert_int_equal(run(out, NULL, ok_args), 0);
	json_t *prof = load(out);
	assert_non_null(prof);
	store_path(prof, good, sizeof good);
	json_decref(prof);
	char *text, *before = slurp(good);
	assert_int_equal(ftfs_mkdir_p(dir, 0755), 0);
	assert_int_equal(ftfs_write_atomic(other, "keep me\n", 8, 0644), 0);
	struct stat st0, st1;
	assert_int_equal(stat(good, &st0), 0);
	char store[600], *state0 = NULL, *state1 = NULL;
	ftfs_dirname(good, store, sizeof store);
	dir_state(store, &state0); /* the profile and whatever the store keeps beside it */
	dir_state(dir, &state0);

	/* the second item fails after the first was measured; the ceiling fails before any item */
	static const char *const faults[] = {"measure:2", "cpu_read"};
	exe = ftbench_bwfault;
	for (size_t i = 0; i < sizeof faults / sizeof faults[0]; i++) {
		setenv("FT_TEST_BW_FAIL", faults[i], 1);
		const char *a1[] = {"bw", "--dtype", "bf16,nvfp4", "--result-fd", "3", SMALL, NULL};
		int rc = run(out, fd3, a1);
		const char *a2[] = {"bw", "--dtype", "fp8,bf16", "-o", other, SMALL, NULL};
		int rc2 = run(out, NULL, a2);
		unsetenv("FT_TEST_BW_FAIL");
		if (rc != 1 || rc2 != 1)
			fail_msg("%s: exit %d and %d, want 1", faults[i], rc, rc2);
		text = slurp(fd3);
		assert_non_null(strstr(text, "\"type\":\"error\""));
		assert_non_null(strstr(text, "injected failure"));
		assert_null(strstr(text, "\"type\":\"result\""));
		free(text);
		char *after = slurp(good);
		if (strcmp(before, after))
			fail_msg("%s: the failed run changed %s", faults[i], good);
		free(after);
		assert_int_equal(stat(good, &st1), 0);
		assert_int_equal(st0.st_ino, st1.st_ino); /* not even rewritten with the same bytes */
		text = slurp(other);
		assert_string_equal(text, "keep me\n");
		free(text);
		/* nothing else changed in the store or beside -o: no temp file, no second profile */
		dir_state(store, &state1);
		dir_state(dir, &state1);
		if (strcmp(state0, state1))
			fail_msg("%s: the failed run changed the store or -o's directory:\nbefore\n%safter\n%s", faults[i],
				 state0, state1);
		free(state1);
		state1 = NULL;
	}
	exe = ftbench;
	free(before);
	free(state0);
}

static int setup(void **s)
{
	const char *b = getenv("BUILD");
	snprintf(ftbench, sizeof ftbench, "%s/bin/ftbench", b && *b ? b : "build");
	snprintf(ftbench_bwfault, sizeof ftbench_bwfault, "%s/tests/integration/ftbench_bwfault", b && *b ? b : "build");
	if (access(ftbench, X_OK) || access(ftbench_bwfault, X_OK) || access(SCHEMA, R_OK)) {
		print_error("run from the repository root after make (%s, %s, %s)\n", ftbench, ftbench_bwfault, SCHEMA);
		return -1;
	}
	return tmpdir_make(tmp, sizeof tmp, "ftbench-test-bw");
}

static int teardown(void **s)
{
	if (getenv("FT_TEST_KEEP"))
		return 0;
	return tmp[0] && strncmp(tmp, "/tmp/ftbench-test-bw_", 21) == 0 ? tmpdir_remove(tmp) : 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_default_store_and_worker),
		cmocka_unit_test(test_output_json_models_isa),
		cmocka_unit_test(test_failures_leave_no_profile),
		cmocka_unit_test(test_failed_measurement_keeps_the_store),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
