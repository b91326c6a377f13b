/* decode/sampling: generation_config.json with fallbacks, greedy rules, top_k 0 -> -1. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "decode/sampling.h"

static char dir[] = "/tmp/ftsampling-XXXXXX";

static void with_config(const char *json)
{
	char p[128];
	snprintf(p, sizeof p, "%s/generation_config.json", dir);
	if (!json) {
		unlink(p);
		return;
	}
	FILE *f = fopen(p, "w");
	fputs(json, f);
	fclose(f);
}

static struct ftsampling resolve(const char *json, int greedy, int want_rc)
{
	struct ftsampling s;
	char err[256];
	with_config(json);
	assert_int_equal(ftsampling_resolve(dir, greedy, &s, err, sizeof err), want_rc);
	return s;
}

static void test_fallbacks(void **st)
{
	struct ftsampling s = resolve(NULL, 0, 0);
	assert_true(s.temperature == 1.0 && s.top_p == 0.95 && s.top_k == 64 && !s.greedy);
	assert_string_equal(s.source, "fallback");
	char err[64];
	assert_int_equal(ftsampling_resolve(NULL, 0, &s, err, sizeof err), 0);
	assert_int_equal(s.top_k, 64);
	assert_int_equal(ftsampling_resolve("/nonexistent/model", 0, &s, err, sizeof err), 0);
	assert_string_equal(s.source, "fallback");
}

static void test_config(void **st)
{
	struct ftsampling s = resolve("{\"temperature\": 0.6, \"top_p\": 0.9, \"top_k\": 20}", 0, 0);
	assert_true(s.temperature == 0.6 && s.top_p == 0.9 && s.top_k == 20);
	assert_string_equal(s.source, "generation_config.json");
	s = resolve("{\"temperature\": 0.7, \"bos_token_id\": 1}", 0, 0);
	assert_true(s.temperature == 0.7 && s.top_p == 0.95 && s.top_k == 64);
	assert_string_equal(s.source, "generation_config.json+fallback");
	s = resolve("{\"top_k\": 0, \"do_sample\": true}", 0, 0);
	assert_int_equal(s.top_k, -1);
	assert_false(s.greedy);
	s = resolve("{\"temperature\": 0.6, \"do_sample\": false}", 0, 0);
	assert_true(s.greedy && s.temperature == 0.0 && s.top_p == 1.0 && s.top_k == -1);
	s = resolve("{\"temperature\": 0}", 0, 0);
	assert_true(s.greedy && s.top_k == -1);
	s = resolve("{\"temperature\": 0.6}", 1, 0);
	assert_true(s.greedy && s.temperature == 0.0 && s.top_p == 1.0 && s.top_k == -1);
	assert_string_equal(s.source, "--greedy");
	resolve("{not json", 0, -EBADMSG);
	json_t *j = ftsampling_json(&s);
	assert_int_equal(json_integer_value(json_object_get(j, "top_k")), -1);
	assert_true(json_is_true(json_object_get(j, "greedy")));
	json_decref(j);
}

static int setup(void **st)
{
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **st)
{
	with_config(NULL);
	return rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fallbacks),
		cmocka_unit_test(test_config),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
