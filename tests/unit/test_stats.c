/* stats: median of odd/even counts, spread, percentiles, JSON shape. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "util/stats.h"

static void test_median(void **s)
{
	double v[] = {5, 1, 4, 2, 3};
	struct ftstat st = ftstat_of(v, 5);
	assert_true(st.median == 3 && st.min == 1 && st.max == 5 && st.samples == 5);
	assert_true(v[0] == 5); /* input untouched */
	st = ftstat_of(v, 4);
	assert_true(st.median == 3.0); /* (2+4)/2 */
	st = ftstat_of(v, 0);
	assert_int_equal(st.samples, 0);
}

static void test_percentile(void **s)
{
	double v[101];
	for (int i = 0; i <= 100; i++)
		v[i] = 100 - i;
	assert_true(ftstat_percentile(v, 101, 50) == 50);
	assert_true(ftstat_percentile(v, 101, 99) == 99);
	assert_true(ftstat_percentile(v, 101, 100) == 100);
	double two[] = {0, 10};
	assert_true(ftstat_percentile(two, 2, 25) == 2.5);
}

static void test_json(void **s)
{
	double v[] = {1.5, 2.5};
	struct ftstat st = ftstat_of(v, 2);
	json_t *j = ftstat_json(&st);
	assert_true(json_real_value(json_object_get(j, "median")) == 2.0);
	assert_int_equal(json_integer_value(json_object_get(j, "samples")), 2);
	json_decref(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_median), cmocka_unit_test(test_percentile), cmocka_unit_test(test_json),
	};
	return cmocka_run_group_tests_name("stats", tests, NULL, NULL);
}
