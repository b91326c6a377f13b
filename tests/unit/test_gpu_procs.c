/* ftgpu_processes (src/hw/gpu_procs.c) against the stand-in NVML of tests/fixtures/nvml/: the
 * holders counted, the asking process left out, more holders than a buffer, an unknown bus id,
 * a failing nvmlInit. The test runs itself again with LD_LIBRARY_PATH naming the stand-in (the
 * loader reads it at start only). */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "hw/gpu.h"

#define BUS "00000000:18:00.0"

static void counts_holders(void **state)
{
	(void)state;
	int n = -1;
	char why[256] = "";
	setenv("FAKE_NVML_PROCS", "", 1);
	assert_int_equal(ftgpu_processes(BUS, &n, why, sizeof why), 0);
	assert_int_equal(n, 0);
	setenv("FAKE_NVML_PROCS", "101,202", 1);
	assert_int_equal(ftgpu_processes(BUS, &n, why, sizeof why), 0);
	assert_int_equal(n, 2);
	/* the bus id as nvidia-smi prints it, any case */
	assert_int_equal(ftgpu_processes("00000000:18:00.0", &n, why, sizeof why), 0);
}

static void leaves_itself_out(void **state)
{
	(void)state;
	int n = -1;
	setenv("FAKE_NVML_PROCS", "self,303", 1);
	assert_int_equal(ftgpu_processes(BUS, &n, NULL, 0), 0);
	assert_int_equal(n, 1);
	setenv("FAKE_NVML_PROCS", "self", 1);
	assert_int_equal(ftgpu_processes(BUS, &n, NULL, 0), 0);
	assert_int_equal(n, 0);
}

static void more_than_a_buffer(void **state)
{
	(void)state;
	char list[4096] = "";
	for (int i = 0; i < 300; i++)
		snprintf(list + strlen(list), sizeof list - strlen(list), "%s%d", i ? "," : "", 1000 + i);
	setenv("FAKE_NVML_PROCS", list, 1);
	int n = -1;
	assert_int_equal(ftgpu_processes(BUS, &n, NULL, 0), 0);
	assert_int_equal(n, 300);
}

static void errors(void **state)
{
	(void)state;
	int n = -1;
	char why[256] = "";
	setenv("FAKE_NVML_PROCS", "", 1);
	assert_int_equal(ftgpu_processes("00000000:99:00.0", &n, why, sizeof why), -ENODEV);
	assert_non_null(strstr(why, "00000000:99:00.0"));
	setenv("FAKE_NVML_INIT", "fail", 1);
	assert_int_equal(ftgpu_processes(BUS, &n, why, sizeof why), -EIO);
	assert_non_null(strstr(why, "nvmlInit_v2"));
	unsetenv("FAKE_NVML_INIT");
	assert_int_equal(ftgpu_processes(NULL, &n, NULL, 0), -EINVAL);
	assert_int_equal(ftgpu_processes("", &n, NULL, 0), -EINVAL);
}

int main(int argc, char **argv)
{
	(void)argc;
	/* build/tests/unit/test_gpu_procs -> build/tests/fixtures/nvml/ */
	if (!getenv("FT_FAKE_NVML")) {
		char self[PATH_MAX], dir[PATH_MAX + 64];
		ssize_t l = readlink("/proc/self/exe", self, sizeof self - 1);
		if (l <= 0)
			return 1;
		self[l] = '\0';
		char *s = strrchr(self, '/');
		*s = '\0';
		snprintf(dir, sizeof dir, "%s/../fixtures/nvml", self);
		setenv("LD_LIBRARY_PATH", dir, 1);
		setenv("FT_FAKE_NVML", "1", 1);
		execv("/proc/self/exe", argv);
		perror("execv");
		return 1;
	}
	setenv("FAKE_NVML_BUS", BUS, 1);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(counts_holders),
		cmocka_unit_test(leaves_itself_out),
		cmocka_unit_test(more_than_a_buffer),
		cmocka_unit_test(errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
