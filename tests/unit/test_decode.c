/* bench/decode: the §8 figures from a stream with known timestamps; the request body. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench/decode.h"

static void feed_event(struct ftchat_stream *s, const char *data, uint64_t t)
{
	char buf[512];
	int n = snprintf(buf, sizeof buf, "data: %s\n\n", data);
	assert_true(ftchat_feed(s, buf, (size_t)n, t) >= 0);
}

static void test_metrics_single_tokens(void **st)
{
	struct ftchat_stream s;
	assert_int_equal(ftchat_init(&s, NULL), 0);
	/* request at t=0; first token at 100 ms; then 9 more every 20 ms, one 60 ms gap */
	uint64_t t = 100000000;
	for (int i = 0; i < 10; i++) {
		feed_event(&s, "{\"choices\":[{\"delta\":{\"content\":\"a\"}}]}", t);
		t += i == 4 ? 60000000 : 20000000;
	}
	feed_event(&s, "{\"choices\":[],\"usage\":{\"prompt_tokens\":11,\"completion_tokens\":10}}", t);
	feed_event(&s, "[DONE]", t);
	struct ftdecode_metrics m;
	assert_int_equal(ftdecode_metrics(&s, 0, &m), 0);
	/* window: 8 gaps of 20 ms + one of 60 ms = 220 ms for 9 tokens */
	assert_true(fabs(m.decode_tok_s - 9 / 0.220) < 1e-9);
	assert_true(fabs(m.ms_per_token - 220.0 / 9) < 1e-9);
	assert_true(fabs(m.ttft_ms - 100.0) < 1e-9);
	assert_true(fabs(m.event_ms_p50 - 20.0) < 1e-9);
	assert_true(m.event_ms_p99 > 55.0 && m.event_ms_p99 <= 60.0);
	assert_int_equal(m.prompt_tokens, 11);
	assert_int_equal(m.completion_tokens, 10);
	assert_int_equal(m.events, 10);
	assert_int_equal(m.max_tokens_per_event, -1);
	assert_false(m.usage_missing);
	ftchat_release(&s);
}

static void test_metrics_no_usage_and_too_few(void **st)
{
	struct ftchat_stream s;
	struct ftdecode_metrics m;
	assert_int_equal(ftchat_init(&s, NULL), 0);
	feed_event(&s, "{\"choices\":[{\"delta\":{\"content\":\"a\"}}]}", 10);
	assert_int_equal(ftdecode_metrics(&s, 0, &m), -ENODATA);
	feed_event(&s, "{\"choices\":[{\"delta\":{\"content\":\"b\"}}]}", 1000010);
	feed_event(&s, "[DONE]", 1000010);
	assert_int_equal(ftdecode_metrics(&s, 0, &m), 0);
	assert_true(m.usage_missing);
	assert_int_equal(m.completion_tokens, 2);
	assert_true(fabs(m.decode_tok_s - 1000.0) < 1e-6);
	ftchat_release(&s);
}

static void test_request(void **st)
{
	struct ftdecode_cfg c = {.serve = {.max_tokens = 77}, .prompt = "p", .thinking = 1,
				 .sampling = {.temperature = 0.6, .top_p = 0.95, .top_k = -1}};
	json_t *j = ftdecode_request(&c, "mid");
	assert_string_equal(json_string_value(json_object_get(j, "model")), "mid");
	assert_int_equal(json_integer_value(json_object_get(j, "max_tokens")), 77);
	assert_true(json_is_true(json_object_get(j, "stream")));
	assert_true(json_is_true(json_object_get(j, "ignore_eos")));
	assert_true(json_is_true(json_object_get(json_object_get(j, "stream_options"), "include_usage")));
	assert_int_equal(json_integer_value(json_object_get(j, "top_k")), -1);
	assert_true(json_is_true(json_object_get(json_object_get(j, "chat_template_kwargs"), "enable_thinking")));
	json_decref(j);
	c.thinking = 0;
	j = ftdecode_request(&c, "mid");
	assert_null(json_object_get(j, "chat_template_kwargs"));
	json_decref(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_metrics_single_tokens),
		cmocka_unit_test(test_metrics_no_usage_and_too_few),
		cmocka_unit_test(test_request),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
