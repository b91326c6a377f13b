/* decode/compare and bench/decode_compare: the --compare keys and their values, the arms (cross
 * product, labels), what an arm changes in a server start, the verdict (winner, tie by overlap,
 * by the minimum gap, by a single cycle, no data, failed arms left out, lower-is-better), the
 * summary row. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench/decode_compare.h"
#include "decode/compare.h"

static char err[512];

static void test_parse_keys(void **st)
{
	(void)st;
	struct ftcmp_plan p = {0};
	assert_int_equal(ftcmp_add(&p, "moe-backend=offload,hybrid", 0, err, sizeof err), 0);
	assert_int_equal(p.nkeys, 1);
	assert_int_equal(p.keys[0].type, FTCMP_MOE_BACKEND);
	assert_string_equal(p.keys[0].target, "--moe-backend");
	assert_int_equal(p.keys[0].nvalues, 2);
	assert_string_equal(p.keys[0].values[1], "hybrid");
	/* escaped commas stay in the value; an empty value is the arm without the key */
	assert_int_equal(ftcmp_add(&p, "server-arg:-ot=,blk\\.0\\.ffn=CPU\\,blk\\.1\\.ffn=CPU", 0, err, sizeof err), 0);
	assert_int_equal(p.keys[1].type, FTCMP_SERVER_ARG);
	assert_string_equal(p.keys[1].target, "-ot");
	assert_int_equal(p.keys[1].nvalues, 2);
	assert_string_equal(p.keys[1].values[0], "");
	assert_string_equal(p.keys[1].values[1], "blk\\.0\\.ffn=CPU,blk\\.1\\.ffn=CPU");
	assert_int_equal(ftcmp_arms(&p), 4);
	ftcmp_release(&p);
	assert_int_equal(p.nkeys, 0);

	assert_int_equal(ftcmp_add(&p, "env:MY_VAR=a,b", 0, err, sizeof err), 0);
	assert_int_equal(p.keys[0].type, FTCMP_ENV);
	assert_string_equal(p.keys[0].target, "MY_VAR");
	assert_int_equal(ftcmp_add(&p, "GGML_OP_OFFLOAD_MIN_BATCH=1,32", 0, err, sizeof err), 0);
	/* the same variable twice, through env: */
	assert_int_equal(ftcmp_add(&p, "env:GGML_OP_OFFLOAD_MIN_BATCH=4,8", 0, err, sizeof err), -EINVAL);
	assert_non_null(strstr(err, "already compared"));
	ftcmp_release(&p);
}

static void expect_bad(const char *spec, int restricted, int code, const char *words)
{
	struct ftcmp_plan p = {0};
	err[0] = '\0';
	int r = ftcmp_add(&p, spec, restricted, err, sizeof err);
	if (r != code)
		fail_msg("%s: %d, not %d (%s)", spec, r, code, err);
	if (!strstr(err, words))
		fail_msg("%s: '%s' does not say '%s'", spec, err, words);
	ftcmp_release(&p);
}

static void test_parse_errors(void **st)
{
	(void)st;
	expect_bad("moe-backend", 0, -EINVAL, "is not KEY=V1,V2");
	expect_bad("moe-backends=a,b", 0, -EINVAL, "unknown key 'moe-backends'");
	expect_bad("moe-backend=off load,b", 0, -EINVAL, "is not a backend name");
	expect_bad("moe-backend=a,a", 0, -EINVAL, "given twice");
	expect_bad("moe-hybrid-max-fetch=-2,4", 0, -EINVAL, "is not an integer in [-1");
	expect_bad("moe-cache-size=0,8", 0, -EINVAL, "or auto");
	expect_bad("n-cpu-moe=x,1", 0, -EINVAL, "number of layers");
	expect_bad("GGML_OP_OFFLOAD_MIN_BATCH=1e3,2", 0, -EINVAL, "batch size");
	expect_bad("server-arg:foo=1,2", 0, -EINVAL, "is not a flag");
	expect_bad("env:1X=1,2", 0, -EINVAL, "environment variable name");
	expect_bad("env:X=a\nb,c", 0, -EINVAL, "control character");
	/* daemon jobs: the named keys only, no spaces */
	expect_bad("server-arg:--foo=1,2", 1, -EINVAL, "unknown key");
	expect_bad("env:X=1,2", 1, -EINVAL, "unknown key");
	expect_bad("override-tensor=a b,c", 1, -EINVAL, "space");
	expect_bad("n-cpu-moe=0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16", 0, -E2BIG, "more than 16 values");
	struct ftcmp_plan p = {0};
	assert_int_equal(ftcmp_add(&p, "n-cpu-moe=0,1,2,3", 0, err, sizeof err), 0);
	assert_int_equal(ftcmp_add(&p, "override-tensor=a,b,c,d,e", 0, err, sizeof err), -E2BIG);
	assert_non_null(strstr(err, "20 arms"));
	ftcmp_release(&p);
}

static void test_check_kind(void **st)
{
	(void)st;
	struct ftcmp_plan p = {0};
	assert_int_equal(ftcmp_add(&p, "moe-backend=offload,hybrid", 0, err, sizeof err), 0);
	assert_int_equal(ftcmp_check(&p, FTSRV_FREETOKEN, err, sizeof err), 0);
	assert_int_equal(ftcmp_check(&p, FTSRV_LLAMACPP, err, sizeof err), -EINVAL);
	assert_non_null(strstr(err, "FreeToken"));
	ftcmp_release(&p);
	assert_int_equal(ftcmp_add(&p, "n-cpu-moe=0,2", 0, err, sizeof err), 0);
	assert_int_equal(ftcmp_check(&p, FTSRV_LLAMACPP, err, sizeof err), 0);
	assert_int_equal(ftcmp_check(&p, FTSRV_VLLM, err, sizeof err), -EINVAL);
	assert_non_null(strstr(err, "llama.cpp"));
	ftcmp_release(&p);
	assert_int_equal(ftcmp_add(&p, "GGML_OP_OFFLOAD_MIN_BATCH=1,64", 0, err, sizeof err), 0);
	assert_int_equal(ftcmp_check(&p, FTSRV_OPENAI, err, sizeof err), 0);
	assert_int_equal(ftcmp_check(&p, FTSRV_FREETOKEN, err, sizeof err), -EINVAL);
	ftcmp_release(&p);
	/* one value: nothing to compare */
	assert_int_equal(ftcmp_add(&p, "env:X=1", 0, err, sizeof err), 0);
	assert_int_equal(ftcmp_check(&p, FTSRV_FREETOKEN, err, sizeof err), -EINVAL);
	assert_non_null(strstr(err, "at least two"));
	ftcmp_release(&p);
}

static void test_arms_and_apply(void **st)
{
	(void)st;
	struct ftcmp_plan p = {0};
	assert_int_equal(ftcmp_add(&p, "moe-backend=offload,hybrid", 0, err, sizeof err), 0);
	assert_int_equal(ftcmp_add(&p, "moe-cache-size=auto,64,", 0, err, sizeof err), 0);
	assert_int_equal(ftcmp_add(&p, "env:FT_X=,1", 0, err, sizeof err), 0);
	assert_int_equal(ftcmp_arms(&p), 12);
	struct ftcmp_arm a;
	/* the first key slowest: arm 0 offload/auto/unset, arm 3 offload/64/1, arm 10 hybrid/""/unset */
	ftcmp_arm(&p, 0, &a);
	assert_string_equal(a.label, "moe-backend=offload moe-cache-size=auto env:FT_X=(default)");
	ftcmp_arm(&p, 3, &a);
	assert_string_equal(a.label, "moe-backend=offload moe-cache-size=64 env:FT_X=1");
	struct ftsrv_serve_cfg s = {.cache_size = 0, .cache_rate = 0.5, .hybrid_fetch = -1};
	const char *backend = "cpu";
	char **args, **set, **unset;
	assert_int_equal(ftcmp_apply(&p, &a, &s, &backend, &args, &set, &unset), 0);
	assert_string_equal(backend, "offload");
	assert_int_equal(s.cache_size, 64);
	assert_true(s.cache_rate < 0);
	assert_null(args[0]);
	assert_string_equal(set[0], "FT_X=1");
	assert_null(set[1]);
	assert_null(unset[0]);
	ftsrv_free_argv(args);
	ftsrv_free_argv(set);
	ftsrv_free_argv(unset);
	json_t *j = ftcmp_arm_settings(&p, &a);
	assert_string_equal(json_string_value(json_object_get(j, "moe-cache-size")), "64");
	json_decref(j);

	ftcmp_arm(&p, 10, &a);
	s = (struct ftsrv_serve_cfg){.cache_size = 0, .cache_rate = 0.5, .hybrid_fetch = -1};
	assert_int_equal(ftcmp_apply(&p, &a, &s, &backend, &args, &set, &unset), 0);
	assert_string_equal(backend, "hybrid");
	/* the empty value keeps what --cache-rate said; the variable is removed */
	assert_true(fabs(s.cache_rate - 0.5) < 1e-12);
	assert_string_equal(unset[0], "FT_X=");
	assert_null(set[0]);
	j = ftcmp_arm_settings(&p, &a);
	assert_true(json_is_null(json_object_get(j, "moe-cache-size")));
	json_decref(j);
	ftsrv_free_argv(args);
	ftsrv_free_argv(set);
	ftsrv_free_argv(unset);
	ftcmp_release(&p);

	/* flags: the target and the value as two words; an empty value passes nothing */
	assert_int_equal(ftcmp_add(&p, "n-cpu-moe=,4", 0, err, sizeof err), 0);
	assert_int_equal(ftcmp_add(&p, "override-tensor=exps=CPU", 0, err, sizeof err), 0);
	ftcmp_arm(&p, 1, &a);
	assert_int_equal(ftcmp_apply(&p, &a, &s, &backend, &args, &set, &unset), 0);
	assert_string_equal(args[0], "--n-cpu-moe");
	assert_string_equal(args[1], "4");
	assert_string_equal(args[2], "--override-tensor");
	assert_string_equal(args[3], "exps=CPU");
	assert_null(args[4]);
	ftsrv_free_argv(args);
	ftsrv_free_argv(set);
	ftsrv_free_argv(unset);
	ftcmp_arm(&p, 0, &a);
	assert_int_equal(ftcmp_apply(&p, &a, &s, &backend, &args, &set, &unset), 0);
	assert_string_equal(args[0], "--override-tensor");
	assert_null(args[2]);
	ftsrv_free_argv(args);
	ftsrv_free_argv(set);
	ftsrv_free_argv(unset);
	ftcmp_release(&p);
}

static const char *const L[] = {"a", "b", "c"};

static void test_decide(void **st)
{
	(void)st;
	int w, r, all[3] = {1, 1, 1};
	char why[600];
	/* b's worst (150) beats a's best (110): winner b, runner-up a */
	struct ftcmp_fig f[3] = {{100, 90, 110, 3}, {160, 150, 170, 3}, {50, 40, 60, 3}};
	assert_int_equal(ftcmp_decide(f, all, L, 3, 1, 0.02, &w, &r, why, sizeof why), FTCMP_WINNER);
	assert_int_equal(w, 1);
	assert_int_equal(r, 0);
	assert_non_null(strstr(why, "+60.0 %"));
	/* the ranges overlap: a gap of 60 % but within the spread */
	f[1].min = 105;
	assert_int_equal(ftcmp_decide(f, all, L, 3, 1, 0.02, &w, &r, why, sizeof why), FTCMP_TIE);
	assert_int_equal(w, 1);
	assert_non_null(strstr(why, "overlap"));
	/* apart, but the medians 1 % apart: under the minimum gap */
	struct ftcmp_fig g[2] = {{100, 99.9, 100.1, 3}, {101, 100.9, 101.1, 3}};
	assert_int_equal(ftcmp_decide(g, all, L, 2, 1, 0.02, &w, &r, why, sizeof why), FTCMP_TIE);
	assert_non_null(strstr(why, "minimum gap"));
	assert_int_equal(ftcmp_decide(g, all, L, 2, 1, 0.005, &w, &r, why, sizeof why), FTCMP_WINNER);
	/* one cycle: no spread, no winner */
	struct ftcmp_fig h[2] = {{100, 100, 100, 1}, {200, 200, 200, 1}};
	assert_int_equal(ftcmp_decide(h, all, L, 2, 1, 0.02, &w, &r, why, sizeof why), FTCMP_TIE);
	assert_non_null(strstr(why, "one cycle"));
	/* lower is better (TTFT): a at 20 ms beats b at 40 ms */
	struct ftcmp_fig t[2] = {{20, 19, 21, 3}, {40, 38, 42, 3}};
	assert_int_equal(ftcmp_decide(t, all, L, 2, 0, 0.02, &w, &r, why, sizeof why), FTCMP_WINNER);
	assert_int_equal(w, 0);
	assert_non_null(strstr(why, "-50.0 %"));
	/* a failed arm is not a candidate, however fast */
	int not_b[3] = {1, 0, 1};
	f[1].min = 150;
	assert_int_equal(ftcmp_decide(f, not_b, L, 3, 1, 0.02, &w, &r, why, sizeof why), FTCMP_WINNER);
	assert_int_equal(w, 0);
	assert_int_equal(r, 2);
	int only_a[3] = {1, 0, 0};
	assert_int_equal(ftcmp_decide(f, only_a, L, 3, 1, 0.02, &w, &r, why, sizeof why), FTCMP_NO_DATA);
	assert_int_equal(w, 0);
	assert_int_equal(r, -1);
	int none[3] = {0, 0, 0};
	assert_int_equal(ftcmp_decide(f, none, L, 3, 1, 0.02, &w, &r, why, sizeof why), FTCMP_NO_DATA);
	assert_int_equal(w, -1);
}

static void result(struct ftdecode_result *r, int ok, double tok_s, double ttft)
{
	memset(r, 0, sizeof *r);
	r->ok = ok;
	r->m.decode_tok_s = tok_s;
	r->m.ttft_ms = ttft;
	r->ttft_cold_ms = ttft * 3;
	if (!ok)
		snprintf(r->error, sizeof r->error, "measured request: the connection was closed");
}

static void test_summary(void **st)
{
	(void)st;
	struct ftcmp_plan p = {0};
	assert_int_equal(ftcmp_add(&p, "moe-backend=offload,hybrid,cpu", 0, err, sizeof err), 0);
	struct ftdcmp_arm arms[3] = {0};
	struct ftdecode_result r;
	for (int i = 0; i < 3; i++)
		ftcmp_arm(&p, i, &arms[i].arm);
	/* offload 100-102 tok/s, hybrid 200-204, cpu ok in cycle 1 and dead in cycle 2 */
	for (int c = 0; c < 3; c++) {
		result(&r, 1, 100 + c, 30);
		ftdcmp_record(&arms[0], c, &r);
		result(&r, 1, 204 - 2 * c, 20 + c);
		ftdcmp_record(&arms[1], c, &r);
	}
	result(&r, 1, 500, 10);
	ftdcmp_record(&arms[2], 0, &r);
	result(&r, 0, 0, 0);
	ftdcmp_record(&arms[2], 1, &r);
	struct ftdecode_cfg c = {.model = "/m/x", .serve = {.max_tokens = 64}, .warmup = 1};
	json_t *j = ftdcmp_summary(&c, &p, arms, 3, 3, 0.02, "freetoken");
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(j, "kind")), "decode_compare");
	assert_string_equal(json_string_value(json_object_get(j, "decision")), "winner");
	assert_string_equal(json_string_value(json_object_get(j, "winner")), "moe-backend=hybrid");
	assert_string_equal(json_string_value(json_object_get(j, "runner_up")), "moe-backend=offload");
	assert_string_equal(json_string_value(json_object_get(j, "ttft_winner")), "moe-backend=hybrid");
	json_t *a = json_object_get(j, "arms");
	assert_int_equal(json_array_size(a), 3);
	json_t *h = json_array_get(a, 1);
	assert_true(json_is_true(json_object_get(h, "ok")));
	assert_int_equal(json_integer_value(json_object_get(h, "rank")), 1);
	json_t *tk = json_object_get(h, "decode_tok_s");
	assert_true(fabs(json_number_value(json_object_get(tk, "median")) - 202) < 1e-9);
	assert_true(fabs(json_number_value(json_object_get(tk, "min")) - 200) < 1e-9);
	assert_true(fabs(json_number_value(json_object_get(tk, "max")) - 204) < 1e-9);
	assert_true(fabs(json_number_value(json_object_get(json_object_get(h, "ttft_cold_ms"), "median")) - 63) < 1e-9);
	/* the dead arm: its one cycle kept, its error, the cycle it died in; last in rank */
	json_t *d = json_array_get(a, 2);
	assert_true(json_is_false(json_object_get(d, "ok")));
	assert_int_equal(json_integer_value(json_object_get(d, "failed_cycle")), 2);
	assert_int_equal(json_integer_value(json_object_get(d, "cycles_ok")), 1);
	assert_int_equal(json_integer_value(json_object_get(d, "cycles_run")), 2);
	assert_int_equal(json_integer_value(json_object_get(d, "rank")), 3);
	assert_non_null(strstr(json_string_value(json_object_get(d, "error")), "connection was closed"));
	json_t *vals = json_object_get(json_object_get(d, "decode_tok_s"), "values");
	assert_int_equal(json_array_size(vals), 3);
	assert_true(json_is_null(json_array_get(vals, 1)));
	assert_string_equal(json_string_value(json_array_get(json_object_get(j, "failed"), 0)), "moe-backend=cpu");
	json_decref(j);
	ftcmp_release(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_keys),  cmocka_unit_test(test_parse_errors), cmocka_unit_test(test_check_kind),
		cmocka_unit_test(test_arms_and_apply), cmocka_unit_test(test_decide),   cmocka_unit_test(test_summary),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
