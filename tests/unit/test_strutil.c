/* strutil: strict parsing (no trailing junk, bounds) and lists. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <jansson.h>
#include <string.h>

#include "util/strutil.h"

static void test_long(void **s)
{
	long v;
	assert_int_equal(ftstr_parse_long("42", 0, 100, &v), 0);
	assert_int_equal(v, 42);
	assert_int_equal(ftstr_parse_long("42x", 0, 100, &v), -EINVAL);
	assert_int_equal(ftstr_parse_long("", 0, 100, &v), -EINVAL);
	assert_int_equal(ftstr_parse_long(" 4", 0, 100, &v), -EINVAL);
	assert_int_equal(ftstr_parse_long("101", 0, 100, &v), -ERANGE);
	assert_int_equal(ftstr_parse_long("-1", 0, 100, &v), -ERANGE);
	assert_int_equal(ftstr_parse_long("99999999999999999999999", 0, 100, &v), -ERANGE);
}

static void test_double(void **s)
{
	double v;
	assert_int_equal(ftstr_parse_double("0.25", 0, 1, &v), 0);
	assert_true(v == 0.25);
	assert_int_equal(ftstr_parse_double("nan", 0, 1, &v), -ERANGE);
	assert_int_equal(ftstr_parse_double("1.5", 0, 1, &v), -ERANGE);
	assert_int_equal(ftstr_parse_double("1e", 0, 10, &v), -EINVAL);
}

static void test_lists(void **s)
{
	long v[8];
	double d[8];
	assert_int_equal(ftstr_parse_long_list("1,4, 16 32", 1, 64, v, 8), 4);
	assert_int_equal(v[3], 32);
	assert_int_equal(ftstr_parse_long_list("1,,x", 1, 64, v, 8), -EINVAL);
	assert_int_equal(ftstr_parse_long_list("", 1, 64, v, 8), -EINVAL);
	assert_int_equal(ftstr_parse_long_list("1,2,3", 1, 64, v, 2), -E2BIG);
	assert_int_equal(ftstr_parse_double_list("0 .25 .5 1", 0, 1, d, 8), 4);
	assert_true(d[1] == 0.25);
	char **it;
	int n = ftstr_split(",a,,bb ,c,", &it, 8);
	assert_int_equal(n, 3);
	assert_string_equal(it[1], "bb");
	ftstr_free_list(it, n);
}

static void test_copy(void **s)
{
	char b[4];
	assert_int_equal(ftstr_copy(b, sizeof b, "abc"), 0);
	assert_int_equal(ftstr_copy(b, sizeof b, "abcd"), -ENAMETOOLONG);
	assert_string_equal(b, "abc");
}

/* an untrusted body as a short printable excerpt */
static void test_excerpt(void **s)
{
	char b[32];
	ftstr_excerpt(b, sizeof b, "  a\r\n\tb\x01" "c\xc3\xa9 ", (size_t)-1, 20);
	assert_string_equal(b, "a b c??");
	ftstr_excerpt(b, sizeof b, "0123456789abcdef", (size_t)-1, 10);
	assert_string_equal(b, "0123456789...");
	ftstr_excerpt(b, 8, "0123456789abcdef", (size_t)-1, 100);
	assert_string_equal(b, "0123..."); /* 7 characters and the NUL fill 8 */
	ftstr_excerpt(b, sizeof b, "abc\0def", 7, 100);
	assert_string_equal(b, "abc");
	ftstr_excerpt(b, sizeof b, NULL, 0, 10);
	assert_string_equal(b, "");
}

/* The UTF-8 helpers against jansson's own check (what the daemon's JSON bodies must pass). */
static void test_utf8(void **s)
{
	assert_true(ftstr_utf8_valid("a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 10));
	assert_false(ftstr_utf8_valid("\xff", 1));
	assert_false(ftstr_utf8_valid("\xc3", 1));                 /* cut short */
	assert_false(ftstr_utf8_valid("\xc0\xaf", 2));             /* overlong '/' */
	assert_false(ftstr_utf8_valid("\xed\xa0\x80", 3));         /* a surrogate */
	assert_false(ftstr_utf8_valid("\xf4\x90\x80\x80", 4));     /* above U+10FFFF */
	/* 63 letters and an e-acute: a 64-byte cut keeps the letters only */
	char in[70], out[80];
	memset(in, 'a', 63);
	memcpy(in + 63, "\xc3\xa9", 3);
	assert_int_equal(ftstr_utf8_cut(in, 64), 63);
	assert_int_equal(ftstr_utf8_cut(in, 65), 65);
	assert_int_equal(ftstr_utf8_cut("\xff\xfe", 1), 1);
	ftstr_utf8_sanitize(out, 65, in);
	assert_int_equal(strlen(out), 63);
	ftstr_utf8_sanitize(out, sizeof out, "x\xffy\xc3");
	assert_string_equal(out, "x?y?");
	/* random bytes: whatever comes out, jansson takes it, and cut never splits a character */
	unsigned seed = 1;
	for (int t = 0; t < 20000; t++) {
		char r[24];
		size_t n = (size_t)(t % 23);
		for (size_t i = 0; i < n; i++) {
			seed = seed * 1103515245u + 12345u;
			r[i] = (char)((seed >> 16) % 255 + 1);
		}
		r[n] = '\0';
		size_t cap = (size_t)(t % 17) + 1;
		ftstr_utf8_sanitize(out, cap, r);
		assert_true(strlen(out) < cap);
		json_t *j = json_string(out);
		assert_non_null(j);
		json_decref(j);
		json_t *js = json_string(r);
		assert_int_equal(js != NULL, ftstr_utf8_valid(r, n));
		json_decref(js);
		int c = ftstr_utf8_cut(r, (size_t)(t % 9));
		if (ftstr_utf8_valid(r, n))
			assert_true(ftstr_utf8_valid(r, (size_t)c));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_long), cmocka_unit_test(test_double),
		cmocka_unit_test(test_lists), cmocka_unit_test(test_copy), cmocka_unit_test(test_excerpt),
		cmocka_unit_test(test_utf8),
	};
	return cmocka_run_group_tests_name("strutil", tests, NULL, NULL);
}
