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
	/* the seed's rank: 9 gaps, gaps[int(9 * 0.99)] = gaps[8], the largest */
	assert_true(fabs(m.event_ms_p99 - 60.0) < 1e-9);
	assert_true(m.event_ms_p99_interp > 55.0 && m.event_ms_p99_interp < 60.0);
	assert_int_equal(m.decode_steps, 9);
	assert_string_equal(m.tokens_from, "usage");
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

/* The seed's ranks against interpolation on a set where they differ: gaps 10, 12, 14, 16 ms
 * (n = 4): p50 = gaps[2] = 14 (interpolated 13), p99 = gaps[3] = 16 (interpolated 15.94). */
static void test_rank_percentiles(void **st)
{
	struct ftchat_stream s;
	struct ftdecode_metrics m;
	assert_int_equal(ftchat_init(&s, NULL), 0);
	uint64_t t = 5000000, gap[] = {16, 10, 14, 12};
	feed_event(&s, "{\"choices\":[{\"delta\":{\"content\":\"a\"}}]}", t);
	for (int i = 0; i < 4; i++) {
		t += gap[i] * 1000000;
		feed_event(&s, "{\"choices\":[{\"delta\":{\"content\":\"a\"}}]}", t);
	}
	feed_event(&s, "{\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":5}}", t);
	assert_int_equal(ftdecode_metrics(&s, 0, &m), 0);
	assert_true(fabs(m.event_ms_p50 - 14.0) < 1e-9);
	assert_true(fabs(m.event_ms_p99 - 16.0) < 1e-9);
	assert_true(fabs(m.event_ms_p50_interp - 13.0) < 1e-9);
	assert_true(m.event_ms_p99_interp < 16.0 && m.event_ms_p99_interp > 15.9);
	assert_true(fabs(m.ttft_ms - 5.0) < 1e-9);
	ftchat_release(&s);
}

/* No usage: every token chunk counts, empty or not; the role chunk, content:null and the closing
 * chunk do not; the window runs over the chunks. */
static void test_chunks_without_usage(void **st)
{
	struct ftchat_stream s;
	struct ftdecode_metrics m;
	assert_int_equal(ftchat_init(&s, NULL), 0);
	feed_event(&s, "{\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":null}}]}", 1000000);
	uint64_t t = 2000000;
	for (int i = 0; i < 20; i++, t += 10000000)
		feed_event(&s, i % 4 == 3 ? "{\"choices\":[{\"delta\":{\"content\":\"\\u00e9\"}}]}"
					   : "{\"choices\":[{\"delta\":{\"content\":\"\"}}]}", t);
	feed_event(&s, "{\"choices\":[{\"delta\":{},\"finish_reason\":\"length\"}]}", t);
	feed_event(&s, "[DONE]", t);
	assert_int_equal(ftdecode_metrics(&s, 0, &m), 0);
	assert_string_equal(m.tokens_from, "chunks");
	assert_int_equal(m.completion_tokens, 20);
	assert_int_equal(m.decode_steps, 19);
	assert_int_equal(m.events, 5);
	assert_int_equal(m.empty_chunks, 15);
	assert_true(fabs(m.decode_tok_s - 100.0) < 1e-6);
	assert_true(fabs(m.event_ms_p50 - 10.0) < 1e-6);
	assert_true(fabs(m.ttft_ms - 2.0) < 1e-9);
	ftchat_release(&s);
}

static void test_request(void **st)
{
	struct ftdecode_cfg c = {.serve = {.max_tokens = 77}, .prompt = "p", .thinking = 1,
				 .sampling = {.temperature = 0.6, .top_p = 0.95, .top_k = -1}};
	json_t *j = ftdecode_request(&c, FTSRV_FREETOKEN, "mid");
	assert_string_equal(json_string_value(json_object_get(j, "model")), "mid");
	assert_int_equal(json_integer_value(json_object_get(j, "max_tokens")), 77);
	assert_true(json_is_true(json_object_get(j, "stream")));
	assert_true(json_is_true(json_object_get(j, "ignore_eos")));
	assert_true(json_is_true(json_object_get(json_object_get(j, "stream_options"), "include_usage")));
	assert_int_equal(json_integer_value(json_object_get(j, "top_k")), -1);
	assert_true(json_is_true(json_object_get(json_object_get(j, "chat_template_kwargs"), "enable_thinking")));
	json_decref(j);
	c.thinking = 0;
	j = ftdecode_request(&c, FTSRV_FREETOKEN, "mid");
	assert_null(json_object_get(j, "chat_template_kwargs"));
	json_decref(j);
	/* top_k "off": -1 where it means off, 0 for llama.cpp, left out for a generic server */
	j = ftdecode_request(&c, FTSRV_VLLM, "mid");
	assert_int_equal(json_integer_value(json_object_get(j, "top_k")), -1);
	json_decref(j);
	j = ftdecode_request(&c, FTSRV_LLAMACPP, "mid");
	assert_int_equal(json_integer_value(json_object_get(j, "top_k")), 0);
	json_decref(j);
	j = ftdecode_request(&c, FTSRV_OPENAI, "mid");
	assert_null(json_object_get(j, "top_k"));
	json_decref(j);
	c.sampling.top_k = 64;
	j = ftdecode_request(&c, FTSRV_OPENAI, "mid");
	assert_int_equal(json_integer_value(json_object_get(j, "top_k")), 64);
	json_decref(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_metrics_single_tokens),
		cmocka_unit_test(test_metrics_no_usage_and_too_few),
		cmocka_unit_test(test_rank_percentiles),
		cmocka_unit_test(test_chunks_without_usage),
		cmocka_unit_test(test_request),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
