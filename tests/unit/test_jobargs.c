/* jobargs: `--key value` pairs -> the typed JSON args object of POST /benchmark/start. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include "util/jobargs.h"

static const struct ftargs_hint hints[] = {
	{NULL, "dtype", FTARGS_STRING},
	{NULL, "model", FTARGS_STRING},
	{NULL, "threshold", FTARGS_NUMBER},
	{"cache-copy", "batch_sizes", FTARGS_INT_LIST},
	{"cache-copy", "miss_rates", FTARGS_NUMBER_LIST},
	{"load-weights", "modes", FTARGS_STRING_LIST},
	{"load-weights", "keep_ftw", FTARGS_BOOLEAN},
	{NULL, NULL, FTARGS_AUTO},
};

/* Convert argv and compare the compact, key-sorted dump with want. */
static void check(const char *kind, int argc, char **argv, const char *want)
{
	json_t *o = json_object();
	char err[256] = "";
	int r = ftargs_to_json(argc, argv, kind, hints, o, err, sizeof err);
	if (r != 0)
		fail_msg("ftargs_to_json: %d (%s)", r, err);
	char *s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	assert_string_equal(s, want);
	free(s);
	json_decref(o);
}

static void test_key(void **st)
{
	char k[32];
	assert_int_equal(ftargs_key("--cpu-iters", k, sizeof k), 0);
	assert_string_equal(k, "cpu_iters");
	assert_int_equal(ftargs_key("--kernel_pcie-iters", k, sizeof k), 0);
	assert_string_equal(k, "kernel_pcie_iters");
	assert_int_equal(ftargs_key("-x", k, sizeof k), -EINVAL);
	assert_int_equal(ftargs_key("--", k, sizeof k), -EINVAL);
	assert_int_equal(ftargs_key("--9lives", k, sizeof k), -EINVAL);
	assert_int_equal(ftargs_key("--a b", k, sizeof k), -EINVAL);
	assert_int_equal(ftargs_key("--a.b", k, sizeof k), -EINVAL);
	assert_int_equal(ftargs_key("--abcdefgh", k, 5), -ENAMETOOLONG);
	assert_int_equal(ftargs_key(NULL, k, sizeof k), -EINVAL);
}

static void test_brief_example(void **st)
{
	char *argv[] = {"--dtype", "bf16,nvfp4", "--cpu-iters", "8"};
	check("bw", 4, argv, "{\"cpu_iters\":8,\"dtype\":\"bf16,nvfp4\"}");
}

static void test_auto_types(void **st)
{
	char *argv[] = {"--a", "12", "--b", "-3", "--c", "0.25", "--d", "2e9", "--e", "true",
			"--f", "false", "--g", "007", "--h", "GPU-1234", "--i", "1,4,16", "--j", "0",
			"--k", "nan", "--l", "0x10", "--m", "-", "--n", "1.2.3", "--o", "inf"};
	check("bw", 30, argv,
	      "{\"a\":12,\"b\":-3,\"c\":0.25,\"d\":2000000000.0,\"e\":true,\"f\":false,\"g\":\"007\","
	      "\"h\":\"GPU-1234\",\"i\":\"1,4,16\",\"j\":0,\"k\":\"nan\",\"l\":\"0x10\",\"m\":\"-\","
	      "\"n\":\"1.2.3\",\"o\":\"inf\"}");
}

static void test_equals_and_flags(void **st)
{
	/* --key=value, bare flags (true, also before another option and at the end), and a
	 * value that starts with one dash is a value */
	char *argv[] = {"--threshold=2", "--greedy", "--moe-hybrid-max-fetch", "-1", "--x=", "--no-graph"};
	check("decode", 6, argv,
	      "{\"greedy\":true,\"moe_hybrid_max_fetch\":-1,\"no_graph\":true,\"threshold\":2,\"x\":\"\"}");
}

static void test_hints(void **st)
{
	/* hinted strings stay strings even when they look like numbers; kind-specific hints only
	 * for their kind; lists become arrays */
	char *a1[] = {"--dtype", "8", "--model", "30", "--threshold", "1.5"};
	check("bw", 6, a1, "{\"dtype\":\"8\",\"model\":\"30\",\"threshold\":1.5}");
	char *a2[] = {"--batch-sizes", "1,4,16", "--miss-rates", "0,0.25,1"};
	check("cache-copy", 4, a2, "{\"batch_sizes\":[1,4,16],\"miss_rates\":[0,0.25,1]}");
	check("bw", 4, a2, "{\"batch_sizes\":\"1,4,16\",\"miss_rates\":\"0,0.25,1\"}");
	char *a3[] = {"--modes", "baseline,ftw", "--keep-ftw", "--model", "/m"};
	check("load-weights", 5, a3, "{\"keep_ftw\":true,\"model\":\"/m\",\"modes\":[\"baseline\",\"ftw\"]}");
	char *a4[] = {"--keep-ftw", "no"};
	check("load-weights", 2, a4, "{\"keep_ftw\":false}");
}

static void test_hint_mismatch_left_to_daemon(void **st)
{
	/* a value that does not fit its hint is typed by its look: the daemon names the field */
	char *a1[] = {"--batch-sizes", "1,x", "--threshold", "high", "--keep-ftw", "maybe"};
	check("cache-copy", 4, a1, "{\"batch_sizes\":\"1,x\",\"threshold\":\"high\"}");
	check("load-weights", 6, a1, "{\"batch_sizes\":\"1,x\",\"keep_ftw\":\"maybe\",\"threshold\":\"high\"}");
}

static void test_errors(void **st)
{
	char err[256];
	json_t *o = json_object();
	char *a1[] = {"bf16"};
	assert_int_equal(ftargs_to_json(1, a1, "bw", hints, o, err, sizeof err), -EINVAL);
	assert_non_null(strstr(err, "bf16"));
	char *a2[] = {"--cpu-iters", "8", "--cpu_iters", "9"};
	assert_int_equal(ftargs_to_json(4, a2, "bw", hints, o, err, sizeof err), -EEXIST);
	assert_non_null(strstr(err, "twice"));
	json_object_clear(o);
	char *a3[] = {"--a$b", "1"};
	assert_int_equal(ftargs_to_json(2, a3, "bw", hints, o, err, sizeof err), -EINVAL);
	assert_non_null(strstr(err, "--a$b"));
	/* a key already in the object (from --args JSON) */
	json_object_clear(o);
	json_object_set_new(o, "dtype", json_string("bf16"));
	char *a4[] = {"--dtype", "nvfp4"};
	assert_int_equal(ftargs_to_json(2, a4, "bw", hints, o, err, sizeof err), -EEXIST);
	assert_int_equal(ftargs_to_json(0, NULL, "bw", hints, NULL, err, sizeof err), -EINVAL);
	json_decref(o);
}

static void test_value(void **st)
{
	json_t *j = NULL;
	assert_int_equal(ftargs_value("12", FTARGS_INTEGER, &j), 0);
	assert_int_equal(json_integer_value(j), 12);
	json_decref(j);
	assert_int_equal(ftargs_value("1.5", FTARGS_INTEGER, &j), -EINVAL);
	assert_int_equal(ftargs_value("x", FTARGS_NUMBER, &j), -EINVAL);
	assert_int_equal(ftargs_value("3", FTARGS_NUMBER, &j), 0);
	assert_true(json_is_integer(j));
	json_decref(j);
	assert_int_equal(ftargs_value("ON", FTARGS_BOOLEAN, &j), 0);
	assert_true(json_is_true(j));
	json_decref(j);
	assert_int_equal(ftargs_value("a, b c", FTARGS_STRING_LIST, &j), 0);
	assert_int_equal(json_array_size(j), 3);
	json_decref(j);
	assert_int_equal(ftargs_value(NULL, FTARGS_AUTO, &j), -EINVAL);
	assert_int_equal(ftargs_hint_type(hints, "bw", "batch_sizes"), FTARGS_AUTO);
	assert_int_equal(ftargs_hint_type(hints, "cache-copy", "batch_sizes"), FTARGS_INT_LIST);
	assert_int_equal(ftargs_hint_type(NULL, "bw", "dtype"), FTARGS_AUTO);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_key),
		cmocka_unit_test(test_brief_example),
		cmocka_unit_test(test_auto_types),
		cmocka_unit_test(test_equals_and_flags),
		cmocka_unit_test(test_hints),
		cmocka_unit_test(test_hint_mismatch_left_to_daemon),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_value),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
