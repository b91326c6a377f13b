/* cpu: probe is consistent with the OS view; ISA names; core ordering near a node. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>
#include <unistd.h>

#include "hw/cpu.h"

static void test_probe(void **s)
{
	struct ftcpu_info ci;
	assert_int_equal(ftcpu_probe(&ci), 0);
	assert_true(ci.physical_cores >= 1);
	assert_true(ci.physical_cores <= ci.logical_cpus);
	assert_true(ci.logical_cpus <= sysconf(_SC_NPROCESSORS_ONLN));
	assert_true(ci.numa_nodes >= 1);
	assert_true(strlen(ci.model) > 0);
	assert_true(ci.mem_total > 0);
	/* physical core CPU ids are distinct */
	for (int i = 0; i < ci.physical_cores; i++)
		for (int j = i + 1; j < ci.physical_cores; j++)
			assert_int_not_equal(ci.core_cpu[i], ci.core_cpu[j]);
	int cpus[256];
	int n = ftcpu_cores_near(&ci, 0, cpus, 256);
	assert_int_equal(n, ci.physical_cores);
	json_t *j = ftcpu_json(&ci);
	assert_int_equal(json_integer_value(json_object_get(j, "physical_cores")), ci.physical_cores);
	json_decref(j);
	ftcpu_release(&ci);
	ftcpu_release(&ci); /* twice is fine */
}

static void test_isa_string(void **s)
{
	char b[256];
	ftcpu_isa_string(FTCPU_AVX2 | FTCPU_AVX512_BF16 | FTCPU_AMX_TILE, b, sizeof b);
	assert_string_equal(b, "avx2 avx512_bf16 amx_tile");
	ftcpu_isa_string(0, b, sizeof b);
	assert_string_equal(b, "");
}

static void test_near_ordering(void **s)
{
	int cpu[4] = {0, 1, 2, 3}, node[4] = {0, 1, 0, 1}, out[4];
	struct ftcpu_info ci = {.physical_cores = 4, .core_cpu = cpu, .core_node = node, .numa_nodes = 2};
	assert_int_equal(ftcpu_cores_near(&ci, 1, out, 4), 4);
	assert_int_equal(out[0], 1);
	assert_int_equal(out[1], 3);
	assert_int_equal(out[2], 0);
	assert_int_equal(ftcpu_cores_near(&ci, -1, out, 3), 3);
	assert_int_equal(out[2], 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_probe), cmocka_unit_test(test_isa_string),
		cmocka_unit_test(test_near_ordering),
	};
	return cmocka_run_group_tests_name("cpu", tests, NULL, NULL);
}
