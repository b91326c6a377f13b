/* strutil: strict parsing (no trailing junk, bounds) and lists. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>

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

/* issue 17 defect 5: an untrusted body as a short printable excerpt */
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_long), cmocka_unit_test(test_double),
		cmocka_unit_test(test_lists), cmocka_unit_test(test_copy), cmocka_unit_test(test_excerpt),
	};
	return cmocka_run_group_tests_name("strutil", tests, NULL, NULL);
}
