/* load_weights: mode parsing, default FTW directory, page-cache eviction, and the worker run
 * in-process (rows with checksums, memory samples). The fork+exec parent is covered by
 * tests/integration/load_weights.sh. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/load_weights.h"
#include "moe/ckptgen.h"
#include "../lib/tmpdir.h"

static char tmpdir[256];

static int setup(void **s)
{
	return tmpdir_make(tmpdir, sizeof tmpdir, "ftlw_test");
}

static int teardown(void **s)
{
	return tmpdir_remove(tmpdir);
}

static void test_modes(void **s)
{
	unsigned m;
	assert_int_equal(ftlw_parse_modes("parallel,ftw", &m), 0);
	assert_int_equal(m, FTLW_PARALLEL | FTLW_FTW);
	assert_int_equal(ftlw_parse_modes("baseline auto", &m), 0);
	assert_int_equal(m, FTLW_BASELINE | FTLW_AUTO);
	assert_int_equal(ftlw_parse_modes("parallel,fast", &m), -EINVAL);
	assert_int_equal(ftlw_parse_modes("", &m), -EINVAL);
	assert_int_equal(ftlw_parse_modes(NULL, &m), -EINVAL);
}

static void test_default_dir(void **s)
{
	char b[256];
	ftlw_default_ftw_dir("/models/Qwen3-30B-A3B/", b, sizeof b);
	assert_string_equal(b, "/var/tmp/ftw_Qwen3-30B-A3B");
	ftlw_default_ftw_dir("m", b, sizeof b);
	assert_string_equal(b, "/var/tmp/ftw_m");
	ftlw_default_ftw_dir("/a/.. b$", b, sizeof b);
	assert_string_equal(b, "/var/tmp/ftw__._b_");
	ftlw_ftw_template(NULL, "/models/Qwen3-30B-A3B/", b, sizeof b);
	assert_string_equal(b, "/var/tmp/ftw_Qwen3-30B-A3B.XXXXXX");
	ftlw_ftw_template("/x", "m", b, sizeof b);
	assert_string_equal(b, "/x/ftw-m.XXXXXX");
}

static void test_worker_rows(void **s)
{
	char dir[512], ftw[512], err[1024];
	snprintf(dir, sizeof dir, "%s/q", tmpdir);
	snprintf(ftw, sizeof ftw, "%s/q.ftw", tmpdir);
	struct ftckpt_opts co = {"qwen3-moe", dir, 2, 4, 128, 64, 1 << 20, 2, 5, NULL};
	struct ftckpt_stats cs;
	assert_int_equal(ftckpt_write(&co, &cs, err, sizeof err), 0);
	assert_true(ftlw_evict_dir(dir) >= 1);
	assert_int_equal(ftlw_evict_dir("/nonexistent/dir"), -ENOENT);
	struct ftlw_opts o = {.model = dir, .workers = 2, .chunk_bytes = 1 << 16, .ftw_dir = ftw, .drop_cache = 1};
	json_t *rb, *rp, *rc, *rf;
	assert_int_equal(ftlw_worker("baseline", &o, &rb, err, sizeof err), 0);
	assert_int_equal(ftlw_worker("parallel", &o, &rp, err, sizeof err), 0);
	assert_int_equal(ftlw_worker("ftw", &o, &rf, err, sizeof err), -ENOENT); /* not converted yet */
	assert_int_equal(ftlw_worker("ftw-convert", &o, &rc, err, sizeof err), 0);
	assert_true(json_integer_value(json_object_get(rc, "bytes_written")) > 0);
	json_decref(rc);
	assert_int_equal(ftlw_worker("ftw", &o, &rf, err, sizeof err), 0);
	assert_int_equal(ftlw_worker("turbo", &o, &rc, err, sizeof err), -EINVAL);
	assert_string_equal(json_string_value(json_object_get(rb, "loader")), "serial");
	assert_string_equal(json_string_value(json_object_get(rp, "loader")), "parallel");
	assert_string_equal(json_string_value(json_object_get(rf, "loader")), "ftw");
	assert_true(json_equal(json_object_get(rb, "checksums"), json_object_get(rp, "checksums")));
	assert_true(json_equal(json_object_get(rb, "checksums"), json_object_get(rf, "checksums")));
	assert_int_equal(json_object_size(json_object_get(rb, "checksums")), 2); /* gate_up, down */
	assert_int_equal(json_integer_value(json_object_get(rb, "bytes")), (json_int_t)cs.expert_bytes);
	assert_true(json_integer_value(json_object_get(rb, "peak_rss_bytes")) > 0);
	assert_true(json_integer_value(json_object_get(rb, "min_mem_available_bytes")) > 0);
	assert_true(json_real_value(json_object_get(rb, "load_s")) > 0);
	json_decref(rb);
	json_decref(rp);
	json_decref(rf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_modes),
		cmocka_unit_test(test_default_dir),
		cmocka_unit_test(test_worker_rows),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
