/* gpu: the --gpu resolver, link rates, JSON round trip (no CUDA device needed). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hw/gpu.h"
#include "hw/pci.h"
#include "../lib/tmpdir.h"

static struct ftgpu_info gpus[3];

static int setup(void **s)
{
	memset(gpus, 0, sizeof gpus);
	const char *u[] = {"GPU-8eb97239-58cd-4a1b-9c2d-000000000001", "GPU-8eb97239-58cd-4a1b-9c2d-000000000002",
			   "GPU-12345678-0000-0000-0000-000000000003"};
	for (int i = 0; i < 3; i++) {
		gpus[i].index = i;
		strcpy(gpus[i].uuid, u[i]);
		strcpy(gpus[i].name, "NVIDIA H200");
	}
	return 0;
}

static void test_resolve(void **s)
{
	char err[512];
	assert_int_equal(ftgpu_resolve(gpus, 3, "1", err, sizeof err), 1);
	assert_int_equal(ftgpu_resolve(gpus, 3, gpus[2].uuid, err, sizeof err), 2);
	assert_int_equal(ftgpu_resolve(gpus, 3, "GPU-1234", err, sizeof err), 2);
	assert_int_equal(ftgpu_resolve(gpus, 3, "12345678", err, sizeof err), 2);   /* without GPU- */
	assert_int_equal(ftgpu_resolve(gpus, 3, "gpu-8EB97239-58cd-4a1b-9c2d-000000000002", err, sizeof err), 1);
	assert_int_equal(ftgpu_resolve(gpus, 3, "GPU-8eb9", err, sizeof err), -EINVAL); /* ambiguous */
	assert_non_null(strstr(err, "ambiguous"));
	assert_non_null(strstr(err, gpus[0].uuid));
	assert_int_equal(ftgpu_resolve(gpus, 3, "7", err, sizeof err), -ENODEV);
	assert_non_null(strstr(err, "no GPU with index 7"));
	assert_non_null(strstr(err, gpus[2].uuid)); /* lists what exists */
	assert_int_equal(ftgpu_resolve(gpus, 3, "GPU-ffff", err, sizeof err), -ENODEV);
	assert_int_equal(ftgpu_resolve(gpus, 0, "0", err, sizeof err), -ENODEV);
	assert_non_null(strstr(err, "no GPU"));
}

static void test_link(void **s)
{
	assert_true(fabs(ftgpu_link_gbs(5, 16) - 63.015) < 0.01);
	assert_true(fabs(ftgpu_link_gbs(4, 8) - 15.754) < 0.01);
	assert_true(fabs(ftgpu_link_gbs(1, 1) - 0.25) < 1e-9);
	assert_true(ftgpu_link_gbs(0, 16) == 0.0);
}

/* pci: the sysfs name of a bus id and the generation of a sysfs link speed */
static void test_pci(void **s)
{
	char id[32];
	assert_int_equal(ftpci_sysfs_id("00000000:1A:00.0", id, sizeof id), 0);
	assert_string_equal(id, "0000:1a:00.0");
	assert_int_equal(ftpci_sysfs_id("0000:18:00.0", id, sizeof id), 0);
	assert_string_equal(id, "0000:18:00.0");
	assert_int_equal(ftpci_sysfs_id("18:00.0", id, sizeof id), -EINVAL);
	assert_int_equal(ftpci_sysfs_id("0000000018000", id, sizeof id), -EINVAL);
	assert_int_equal(ftpci_sysfs_id(NULL, id, sizeof id), -EINVAL);
	assert_int_equal(ftpci_gen_of_speed("2.5 GT/s PCIe"), 1);
	assert_int_equal(ftpci_gen_of_speed("5.0 GT/s"), 2);
	assert_int_equal(ftpci_gen_of_speed("8.0 GT/s PCIe"), 3);
	assert_int_equal(ftpci_gen_of_speed("16.0 GT/s PCIe"), 4);
	assert_int_equal(ftpci_gen_of_speed("32.0 GT/s PCIe"), 5);
	assert_int_equal(ftpci_gen_of_speed("64.0 GT/s PCIe"), 6);
	assert_int_equal(ftpci_gen_of_speed("Unknown"), 0);
	assert_int_equal(ftpci_read_attr("/nonexistent", "00000000:18:00.0", "max_link_speed", id, sizeof id),
			 -ENOENT);
	assert_int_equal(ftpci_read_attr(NULL, "bad", "max_link_speed", id, sizeof id), -EINVAL);
}

static void test_json_roundtrip(void **s)
{
	struct ftgpu_info g = gpus[1], back;
	strcpy(g.pci_bus_id, "00000000:18:00.0");
	g.mem_total = 150ull << 30;
	g.cc_major = 9;
	g.link_gen_cur = 5;
	g.link_width_cur = 16;
	g.numa_node = 1;
	json_t *j = ftgpu_json(&g);
	assert_int_equal(ftgpu_from_json(j, &back), 0);
	assert_string_equal(back.uuid, g.uuid);
	assert_string_equal(back.pci_bus_id, g.pci_bus_id);
	assert_int_equal(back.mem_total, g.mem_total);
	assert_int_equal(back.cc_major, 9);
	assert_int_equal(back.link_gen_cur, 5);
	assert_int_equal(back.numa_node, 1);
	json_decref(j);
	json_t *bad = json_pack("{s:s}", "uuid", "GPU-x");
	assert_int_equal(ftgpu_from_json(bad, &back), -EINVAL); /* no index */
	json_decref(bad);
}

/* GPUs of the host as the driver lists them: one entry per GPU, dot entries not counted. */
static void test_count_host(void **s)
{
	char dir[] = "/tmp/ftgpu-count-XXXXXX", p[64];
	assert_non_null(mkdtemp(dir));
	assert_int_equal(ftgpu_count_host_in(dir), 0);
	snprintf(p, sizeof p, "%s/0000:18:00.0", dir);
	assert_int_equal(mkdir(p, 0755), 0);
	assert_int_equal(ftgpu_count_host_in(dir), 1);
	snprintf(p, sizeof p, "%s/0000:3b:00.0", dir);
	assert_int_equal(mkdir(p, 0755), 0);
	assert_int_equal(ftgpu_count_host_in(dir), 2);
	assert_int_equal(tmpdir_remove(dir), 0);
	assert_int_equal(ftgpu_count_host_in(dir), 0); /* no driver */
	assert_true(ftgpu_count_host() >= 0);
}

static void test_list_without_device(void **s)
{
	struct ftgpu_info *v;
	int n = -1;
	char why[256] = "";
	assert_int_equal(ftgpu_list(&v, &n, why, sizeof why), 0);
	/* CI machines have no GPU: an empty list and a reason, never an error */
	if (n == 0)
		assert_true(strlen(why) > 0);
	/* with GPUs: every entry complete and plausible, in PCI bus order, each UUID once, and the
	 * same GPUs as nvidia-smi lists (an independent reading) when it is installed */
	for (int i = 0; i < n; i++) {
		const struct ftgpu_info *g = &v[i];
		unsigned a, b, c, d;
		char tail[16];
		assert_int_equal(g->index, i);
		if (strlen(g->uuid) != 40 || sscanf(g->uuid, "GPU-%8x-%4x-%4x-%4x-%12s", &a, &b, &c, &d, tail) != 5)
			fail_msg("GPU %d: uuid '%s' is not GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", i, g->uuid);
		assert_true(g->name[0] != '\0');
		if (strlen(g->pci_bus_id) != 16 || sscanf(g->pci_bus_id, "%8x:%2x:%2x.%1x", &a, &b, &c, &d) != 4)
			fail_msg("GPU %d: PCI bus id '%s'", i, g->pci_bus_id);
		if (i > 0) {
			assert_true(strcasecmp(v[i - 1].pci_bus_id, g->pci_bus_id) < 0);
			for (int j = 0; j < i; j++)
				assert_string_not_equal(v[j].uuid, g->uuid);
		}
		assert_true(g->mem_total >= (1ull << 30));
		assert_true(g->cc_major >= 3 && g->cc_minor >= 0 && g->multiprocessors > 0);
		assert_true(g->cuda_driver_version >= 1000 && g->cuda_runtime_version >= 1000);
		assert_true(g->numa_node >= -1);
		assert_true(g->link_gen_cur >= 0 && g->link_gen_cur <= g->link_gen_max && g->link_gen_max <= 7);
		assert_true(g->link_width_cur >= 0 && g->link_width_cur <= g->link_width_max && g->link_width_max <= 32);
	}
	/* (all of them: only when CUDA_VISIBLE_DEVICES does not hide some) */
	FILE *smi = n > 0 && !getenv("CUDA_VISIBLE_DEVICES") ? popen("nvidia-smi --query-gpu=uuid,pci.bus_id --format=csv,noheader 2>/dev/null", "r") : NULL;
	if (smi) {
		char line[256];
		int m = 0;
		while (fgets(line, sizeof line, smi)) {
			char u[64] = "", bus[64] = "";
			if (sscanf(line, "%63[^,], %63s", u, bus) != 2)
				continue;
			int found = 0;
			for (int i = 0; i < n; i++)
				found |= !strcmp(v[i].uuid, u) && !strcasecmp(v[i].pci_bus_id, bus);
			if (!found)
				fail_msg("nvidia-smi lists %s at %s, ftgpu_list does not", u, bus);
			m++;
		}
		if (pclose(smi) == 0)
			assert_int_equal(m, n);
	}
	free(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_resolve), cmocka_unit_test(test_link), cmocka_unit_test(test_pci),
		cmocka_unit_test(test_json_roundtrip), cmocka_unit_test(test_list_without_device),
		cmocka_unit_test(test_count_host),
	};
	return cmocka_run_group_tests_name("gpu", tests, setup, NULL);
}
