/* ftbenchd request: the start body's checks and the error bodies, which echo input and so must be
 * cut and cleaned to UTF-8; plus a bounded deterministic mutation loop over
 * the same path as tests/fuzz/fuzz_request.c. The modules are compiled in here. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../daemon/config.h"
#include "../../daemon/kinds.h"
#include "../../daemon/request.h"
#include "util/strutil.h"

/* The body dumps, is UTF-8 and parses back; returns the error's field (a copy) or NULL. */
static char *body_ok(json_t *o)
{
	assert_non_null(o);
	char *s = json_dumps(o, JSON_COMPACT);
	assert_non_null(s);
	assert_true(ftstr_utf8_valid(s, strlen(s)));
	json_t *back = json_loads(s, 0, NULL);
	assert_non_null(back);
	const char *f = json_string_value(json_object_get(json_object_get(back, "error"), "field"));
	char *field = f ? strdup(f) : NULL;
	json_decref(back);
	free(s);
	json_decref(o);
	return field;
}

static void test_error_json(void **s)
{
	char k[70];
	memset(k, 'a', 63);
	memcpy(k + 63, "\xc3\xa9", 3); /* 63 letters and an e-acute */
	char *f = body_ok(ftd_request_error_json("unknown_kind", "kind", "unknown kind '%.64s'", k));
	assert_string_equal(f, "kind");
	free(f);
	f = body_ok(ftd_request_error_json("not_found", "\xff\xfe", "no profile for %s", "\xff"));
	assert_string_equal(f, "??");
	free(f);
	assert_null(body_ok(ftd_request_error_json("internal", NULL, "%s", "")));
}

static void test_start_parse(void **s)
{
	struct ftd_err e;
	const char *kind;
	json_t *args;
	long to;
	char body[200];
	snprintf(body, sizeof body, "{\"kind\":\"bw\",\"%s\xc3\xa9\":1}",
		 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
	assert_null(ftd_request_start_parse(body, strlen(body), 100, &kind, &args, &to, &e));
	assert_string_equal(e.code, "unknown_field");
	assert_true(ftstr_utf8_valid(e.field, strlen(e.field)));
	assert_int_equal(strlen(e.field), 63);
	free(body_ok(ftd_request_error_json(e.code, e.field, "%s", e.message)));
	assert_null(ftd_request_start_parse("{\"kind\":\"bw\",\"timeout_s\":101}", 29, 100, &kind, &args, &to, &e));
	assert_string_equal(e.field, "timeout_s");
	assert_null(ftd_request_start_parse("{\"kind\":\"\xff\"}", 11, 100, &kind, &args, &to, &e));
	assert_string_equal(e.code, "invalid_json");
	free(body_ok(ftd_request_error_json(e.code, e.field, "%s", e.message)));
	assert_null(ftd_request_start_parse(NULL, 0, 100, &kind, &args, &to, &e));
	const char *good = "{\"kind\":\"bw\",\"timeout_s\":100,\"args\":{}}";
	json_t *r = ftd_request_start_parse(good, strlen(good), 100, &kind, &args, &to, &e);
	assert_non_null(r);
	assert_string_equal(kind, "bw");
	assert_int_equal(to, 100);
	assert_true(json_is_object(args));
	json_decref(r);
}

/* Seeds mutated by a fixed generator: whatever comes in, an answer body is built and is UTF-8. */
static void test_mutations(void **s)
{
	static const char *const seeds[] = {
		"{\"kind\":\"bw\",\"args\":{\"dtype\":[\"bf16\"],\"gpu\":1,\"threshold\":2}}",
		"{\"kind\":\"decode\",\"args\":{\"model\":\"/tmp\",\"server\":\"ft\"}}",
		"{\"kind\":\"decode\",\"args\":{\"url\":\"http://127.0.0.1:9/v1\",\"backends\":[\"cpu\"]}}",
		"{\"kind\":\"load-weights\",\"args\":{\"model\":\"/tmp\",\"modes\":[\"ftw\"]},\"timeout_s\":60}",
		"{\"kind\":\"cache-copy\",\"args\":{\"miss_rates\":[0.5],\"copy\":\"proxy\",\"models\":\"a,b\"}}",
	};
	static const char *const bits[] = {"\xc3", "\xa9", "\xff", "\xc3\xa9", "\xe2\x82\xac", "\\u00e9", "\\ud800",
					   "\\u0000", "\"", "{", "}", "[", "]", ",", ":", "1e999", "-1", "é"};
	struct ftd_config cfg = {0};
	char *roots[] = {"/tmp"}, *servers[] = {"ft=ft serve {model} --port {port}"};
	cfg.model_roots = roots;
	cfg.n_model_roots = 1;
	cfg.decode_servers = servers;
	cfg.n_decode_servers = 1;
	struct ftgpu_info gpus[2] = {{.index = 0, .uuid = "GPU-1"}, {.index = 1, .uuid = "GPU-2"}};
	unsigned seed = 17;
	int accepted = 0;
	for (int it = 0; it < 20000; it++) {
		char b[1024];
		size_t n = (size_t)snprintf(b, sizeof b, "%s", seeds[it % 5]);
		for (int m = 0; m < it % 4; m++) { /* a quarter stay as they are */
			seed = seed * 1103515245u + 12345u;
			size_t at = (seed >> 8) % (n + 1);
			const char *x = bits[(seed >> 20) % (sizeof bits / sizeof bits[0])];
			size_t xl = strlen(x);
			if ((seed & 3) == 0 && at < n) { /* overwrite one byte */
				b[at] = x[0];
			} else if (n + xl < sizeof b) { /* insert */
				memmove(b + at + xl, b + at, n - at + 1);
				memcpy(b + at, x, xl);
				n += xl;
			}
			b[n] = '\0';
		}
		struct ftd_err e;
		const char *kind;
		json_t *args;
		long to;
		json_t *req = ftd_request_start_parse(b, n, 86400, &kind, &args, &to, &e);
		if (!req) {
			free(body_ok(ftd_request_error_json(e.code, e.field, "%s", e.message)));
			continue;
		}
		const struct ftd_kind *k = ftd_kind_find(kind);
		char **argv;
		int gpu;
		if (!k)
			free(body_ok(ftd_request_error_json("unknown_kind", "kind", "unknown kind '%.*s'", ftstr_utf8_cut(kind, 64),
						    kind)));
		else if (ftd_kind_build(k, args, &cfg, "/w/ftbench", gpus, 2, &gpu, &argv, &e) < 0)
			free(body_ok(ftd_request_error_json(e.code, e.field, "%s", e.message)));
		else {
			json_t *a = json_array();
			for (char **p = argv; *p; p++)
				assert_int_equal(json_array_append_new(a, json_string(*p)), 0);
			free(body_ok(json_pack("{s:o}", "argv", a)));
			ftd_kind_argv_free(argv);
			accepted++;
		}
		json_decref(req);
	}
	assert_true(accepted > 100); /* the loop reaches the argument table, not only the parser */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_error_json),
		cmocka_unit_test(test_start_parse),
		cmocka_unit_test(test_mutations),
	};
	return cmocka_run_group_tests_name("ftbenchd_request", tests, NULL, NULL);
}
