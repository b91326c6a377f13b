/* profile history, drift and staleness: the store keeps the newest N profiles in time order; a
 * figure outside the previous profile's spread by more than the share is drift, nothing else is;
 * a changed driver, link or memory makes a profile stale, a balloon's wobble does not. */
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
#include <unistd.h>

#include "ftprofile.h"
#include "../lib/tmpdir.h"

/* An allocation fault seam: this program's strdup (it takes the place of libc's for the library
 * code linked in) fails, as out of memory, at the n-th call after strdup_fail_in = n (-1: never). */
static int strdup_fail_in = -1;
char *strdup(const char *s)
{
	if (strdup_fail_in >= 0 && strdup_fail_in-- == 0) {
		errno = ENOMEM;
		return NULL;
	}
	size_t n = strlen(s) + 1;
	char *d = malloc(n);
	return d ? memcpy(d, s, n) : NULL;
}

#define UUID "GPU-11111111-aaaa-bbbb-cccc-000000000000"

static char dir[64];

static int setup(void **s)
{
	return tmpdir_make(dir, sizeof dir, "ft_history");
}

static int teardown(void **s)
{
	return tmpdir_remove(dir);
}

/* A minimal profile: read ceiling r (spread r-1..r+1 when spread), bf16 CPU MoE c, gather g. */
static json_t *prof(double epoch, double r, int spread, double c, double g)
{
	json_t *p = json_pack("{s:i,s:f,s:{s:s},s:{s:f},s:{s:{s:f,s:f}}}", "version", 4, "epoch", epoch, "gpu", "uuid",
			      UUID, "ceilings", "cpu_stream_read_gbs", r, "dtype_kernels", "bf16", "cpu_moe_gbs", c,
			      "pcie_gather_gbs", g);
	if (spread)
		json_object_set_new(json_object_get(p, "ceilings"), "cpu_stream_read_gbs_spread",
				    json_pack("{s:f,s:f,s:f,s:i}", "median", r, "min", r - 1, "max", r + 1, "samples", 9));
	return p;
}

static void drift_only_outside_spread_by_share(void **s)
{
	json_t *prev = prof(1, 100, 1, 120, 50);
	/* inside [99, 101] widened by 10 %: 89.1 .. 111.1 */
	json_t *cur = prof(2, 89.2, 0, 120, 50), *d = ftprof_drift(prev, cur, 0.10);
	assert_int_equal(json_array_size(d), 0);
	json_decref(d);
	json_decref(cur);
	/* 89.0 is below 99 * 0.9 = 89.1; the gather 56 above 50 * 1.1 = 55 (no spread: the value) */
	cur = prof(2, 89.0, 0, 120, 56);
	d = ftprof_drift(prev, cur, 0.10);
	assert_int_equal(json_array_size(d), 2);
	json_t *a = json_array_get(d, 0), *b = json_array_get(d, 1);
	assert_string_equal(json_string_value(json_object_get(a, "figure")), "cpu_stream_read_gbs");
	assert_true(fabs(json_number_value(json_object_get(a, "ratio")) - 0.89) < 1e-12);
	assert_true(fabs(json_number_value(json_object_get(a, "previous_min")) - 99) < 1e-12);
	assert_string_equal(json_string_value(json_object_get(b, "figure")), "bf16.pcie_gather_gbs");
	json_decref(d);
	/* share 0 is still a spread check: 56 is outside 50..50 */
	d = ftprof_drift(prev, cur, 0.0);
	assert_int_equal(json_array_size(d), 2);
	json_decref(d);
	json_decref(cur);
	/* a figure the previous profile lacks, or a non-object, is no drift */
	cur = prof(2, 100, 0, 120, 50);
	json_object_del(json_object_get(prev, "dtype_kernels"), "bf16");
	json_object_set_new(json_object_get(json_object_get(cur, "dtype_kernels"), "bf16"), "cpu_moe_gbs", json_real(1));
	d = ftprof_drift(prev, cur, 0.10);
	assert_int_equal(json_array_size(d), 0);
	json_decref(d);
	d = ftprof_drift(NULL, cur, 0.10);
	assert_int_equal(json_array_size(d), 0);
	json_decref(d);
	json_decref(cur);
	json_decref(prev);
}

static void history_keeps_newest_in_order(void **s)
{
	/* epochs out of order (a clock set back): kept in the order stored */
	double ep[] = {1000.5, 2000.25, 1500.0, 3000.0, 3000.0};
	for (int i = 0; i < 5; i++) {
		json_t *p = prof(ep[i], 10 + i, 0, 1, 1);
		assert_int_equal(ftprof_history_add(dir, p, UUID, 3), 0);
		json_decref(p);
	}
	json_t *h;
	assert_int_equal(ftprof_history_load(dir, UUID, 0, &h), 0);
	assert_int_equal(json_array_size(h), 3);
	for (int i = 0; i < 3; i++)
		assert_true(json_number_value(json_object_get(json_object_get(json_array_get(h, (size_t)i), "ceilings"),
							      "cpu_stream_read_gbs")) == 12 + i);
	json_decref(h);
	assert_int_equal(ftprof_history_load(dir, UUID, 2, &h), 0);
	assert_int_equal(json_array_size(h), 2);
	assert_true(json_number_value(json_object_get(json_object_get(json_array_get(h, 0), "ceilings"),
						      "cpu_stream_read_gbs")) == 13);
	json_decref(h);
	/* keep 0 keeps nothing new and removes nothing */
	json_t *p = prof(4000, 99, 0, 1, 1);
	assert_int_equal(ftprof_history_add(dir, p, UUID, 0), 0);
	json_decref(p);
	assert_int_equal(ftprof_history_load(dir, UUID, 0, &h), 0);
	assert_int_equal(json_array_size(h), 3);
	json_decref(h);
	/* another GPU has none; an unsafe uuid is refused */
	assert_int_equal(ftprof_history_load(dir, "GPU-22222222-aaaa-bbbb-cccc-000000000000", 0, &h), 0);
	assert_int_equal(json_array_size(h), 0);
	json_decref(h);
	assert_true(ftprof_history_load(dir, "../etc", 0, &h) < 0);
	/* an oldest entry that cannot be removed (a directory in its place) is an error, not ignored;
	 * the new profile is kept all the same */
	char hd[4096];
	snprintf(hd, sizeof hd, "%s/history/%s/0000000000500.json/x", dir, UUID);
	assert_int_equal(tmpdir_put(hd, "{}", 2), 0);
	p = prof(5000, 77, 0, 1, 1);
	assert_int_equal(ftprof_history_add(dir, p, UUID, 3), -EISDIR);
	json_decref(p);
	assert_int_equal(ftprof_history_load(dir, UUID, 1, &h), 0);
	assert_true(json_number_value(json_object_get(json_object_get(json_array_get(h, 0), "ceilings"),
						      "cpu_stream_read_gbs")) == 77);
	json_decref(h);
}

static void commit_marks_drift_and_keeps_history(void **s)
{
	char path[4096];
	json_t *a = prof(1, 100, 1, 120, 50), *b = prof(2, 70, 1, 120, 50);
	assert_int_equal(ftprof_store_commit(dir, a, NULL, 5, 0.1, path, sizeof path), 0);
	json_t *stored = json_load_file(path, 0, NULL);
	assert_null(json_object_get(stored, "drift")); /* nothing before it to compare with */
	json_decref(stored);
	assert_int_equal(ftprof_store_commit(dir, b, NULL, 5, 0.1, path, sizeof path), 0);
	stored = json_load_file(path, 0, NULL);
	json_t *d = json_object_get(stored, "drift");
	assert_int_equal(json_array_size(d), 1);
	assert_string_equal(json_string_value(json_object_get(json_array_get(d, 0), "figure")), "cpu_stream_read_gbs");
	const char *w = json_string_value(json_array_get(json_object_get(stored, "warnings"), 0));
	assert_non_null(w);
	assert_non_null(strstr(w, "drift: cpu_stream_read_gbs 70.00"));
	json_decref(stored);
	assert_null(json_object_get(b, "drift")); /* the caller's profile is not changed */
	json_t *h;
	assert_int_equal(ftprof_history_load(dir, UUID, 0, &h), 0);
	assert_int_equal(json_array_size(h), 2);
	json_decref(h);
	json_decref(a);
	json_decref(b);
}

static void put(const char *root, const char *rel, const char *text)
{
	char p[512];
	snprintf(p, sizeof p, "%s%s", root, rel);
	assert_int_equal(tmpdir_put(p, text, strlen(text)), 0);
}

/* A fake machine under dir: driver 580.95.05, an x16 Gen5 link at 0000:18:00.0, 251 GiB. */
static void machine(const char *driver, const char *width, const char *mem_kb)
{
	put(dir, "/sys/module/nvidia/version", driver);
	put(dir, "/sys/bus/pci/devices/0000:18:00.0/max_link_speed", "32.0 GT/s PCIe\n");
	put(dir, "/sys/bus/pci/devices/0000:18:00.0/current_link_width", width);
	put(dir, "/proc/cpuinfo", "processor\t: 0\nmodel name\t: Test CPU 9000\nmicrocode\t: 0x2b000603\n");
	char mi[128];
	snprintf(mi, sizeof mi, "MemTotal:       %s kB\nMemFree: 1 kB\n", mem_kb);
	put(dir, "/proc/meminfo", mi);
	put(dir, "/proc/sys/kernel/osrelease", "6.1.0-test\n");
}

static void fingerprint_tells_a_changed_machine(void **s)
{
	char why[512];
	machine("580.95.05\n", "16\n", "263174212");
	json_t *was = ftprof_fingerprint_at(dir, "00000000:18:00.0");
	assert_string_equal(json_string_value(json_object_get(was, "driver_version")), "580.95.05");
	assert_int_equal(json_integer_value(json_object_get(was, "pcie_gen_max")), 5);
	assert_int_equal(json_integer_value(json_object_get(was, "pcie_width")), 16);
	assert_string_equal(json_string_value(json_object_get(was, "cpu_microcode")), "0x2b000603");
	assert_true(fabs(json_number_value(json_object_get(was, "memory_gib")) - 251.0) < 0.06);
	assert_string_equal(json_string_value(json_object_get(was, "kernel")), "6.1.0-test");
	json_t *now = ftprof_fingerprint_at(dir, "00000000:18:00.0");
	assert_int_equal(ftprof_fingerprint_compare(was, now, why, sizeof why), 0);
	json_decref(now);
	/* a driver upgrade */
	machine("580.159.03\n", "16\n", "263174212");
	now = ftprof_fingerprint_at(dir, "00000000:18:00.0");
	assert_int_equal(ftprof_fingerprint_compare(was, now, why, sizeof why), 1);
	assert_string_equal(why, "GPU driver 580.95.05 -> 580.159.03");
	json_decref(now);
	/* the link retrained at x8 and a DIMM lost, the driver as before */
	machine("580.95.05\n", "8\n", "197380659");
	now = ftprof_fingerprint_at(dir, "00000000:18:00.0");
	assert_int_equal(ftprof_fingerprint_compare(was, now, why, sizeof why), 1);
	assert_non_null(strstr(why, "PCIe link (top speed, width) Gen5 x16 -> Gen5 x8"));
	assert_non_null(strstr(why, "memory 251.0 -> 188.2 GiB"));
	json_decref(now);
	/* memory within 10 % (a VM's balloon): the same machine */
	machine("580.95.05\n", "16\n", "250000000");
	now = ftprof_fingerprint_at(dir, "00000000:18:00.0");
	assert_int_equal(ftprof_fingerprint_compare(was, now, NULL, 0), 0);
	/* a profile that recorded no fingerprint: unknown */
	assert_int_equal(ftprof_fingerprint_compare(NULL, now, why, sizeof why), -ENOENT);
	json_t *empty = json_object();
	assert_int_equal(ftprof_fingerprint_compare(empty, now, why, sizeof why), -ENOENT);
	json_decref(empty);
	json_decref(now);
	/* a fact the machine no longer shows (no driver loaded) is not compared */
	put(dir, "/sys/module/nvidia/version", "");
	now = ftprof_fingerprint_at(dir, "00000000:18:00.0");
	assert_null(json_object_get(now, "driver_version"));
	assert_int_equal(ftprof_fingerprint_compare(was, now, why, sizeof why), 0);
	json_decref(now);
	json_decref(was);
}

/* Every fact of the fingerprint, changed alone, marks the profile stale and names itself: one
 * row per fact read from the fake machine, then every key the fingerprint holds (a key added
 * later is walked too), each changed alone in a copy. */
static void fingerprint_walks_every_field(void **s)
{
	static const struct {
		const char *file, *text, *why;
	} rows[] = {
		{"/sys/module/nvidia/version", "580.159.03\n", "GPU driver 580.95.05 -> 580.159.03"},
		{"/sys/bus/pci/devices/0000:18:00.0/max_link_speed", "16.0 GT/s PCIe\n",
		 "PCIe link (top speed, width) Gen5 x16 -> Gen4 x16"},
		{"/sys/bus/pci/devices/0000:18:00.0/current_link_width", "8\n",
		 "PCIe link (top speed, width) Gen5 x16 -> Gen5 x8"},
		{"/proc/cpuinfo", "processor\t: 0\nmodel name\t: Test CPU 9001\nmicrocode\t: 0x2b000603\n",
		 "CPU Test CPU 9000 -> Test CPU 9001"},
		{"/proc/cpuinfo", "processor\t: 0\nmodel name\t: Test CPU 9000\nmicrocode\t: 0x2b000639\n",
		 "CPU microcode 0x2b000603 -> 0x2b000639"},
		/* a value is text, never a format: "%%" stays two characters */
		{"/proc/cpuinfo", "processor\t: 0\nmodel name\t: Test CPU 100%% %%s\nmicrocode\t: 0x2b000603\n",
		 "CPU Test CPU 9000 -> Test CPU 100%% %%s"},
		/* a key is matched whole: a longer one that starts with it is another fact */
		{"/proc/cpuinfo", "processor\t: 0\nmodel name2\t: Decoy\nmodel name(s)\t: Decoy\nmodel name\t: Test CPU 9001\n"
				  "microcode\t: 0x2b000603\n",
		 "CPU Test CPU 9000 -> Test CPU 9001"},
		{"/proc/meminfo", "MemTotal:       131587106 kB\n", "memory 251.0 -> 125.5 GiB"},
		{"/proc/sys/kernel/osrelease", "6.8.0-test\n", "kernel 6.1.0-test -> 6.8.0-test"},
	};
	char why[512];
	machine("580.95.05\n", "16\n", "263174212");
	json_t *was = ftprof_fingerprint_at(dir, "00000000:18:00.0");
	for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
		machine("580.95.05\n", "16\n", "263174212");
		put(dir, rows[i].file, rows[i].text);
		json_t *now = ftprof_fingerprint_at(dir, "00000000:18:00.0");
		int r = ftprof_fingerprint_compare(was, now, why, sizeof why);
		if (r != 1 || strcmp(why, rows[i].why))
			fail_msg("%s changed: stale %d (%s), want 1 (%s)", rows[i].file, r, why, rows[i].why);
		json_decref(now);
	}
	/* every key of the fingerprint, changed alone */
	const char *key;
	json_t *v;
	int walked = 0;
	json_object_foreach(was, key, v) {
		json_t *now = json_deep_copy(was);
		if (json_is_string(v)) {
			char b[300];
			snprintf(b, sizeof b, "%s.1", json_string_value(v));
			json_object_set_new(now, key, json_string(b));
		} else if (json_is_integer(v)) {
			json_object_set_new(now, key, json_integer(json_integer_value(v) / 2));
		} else if (json_is_real(v)) {
			json_object_set_new(now, key, json_real(json_real_value(v) * 1.5));
		} else {
			fail_msg("fingerprint key %s: not a string or number", key);
		}
		int r = ftprof_fingerprint_compare(was, now, why, sizeof why);
		if (r != 1 || !why[0])
			fail_msg("fingerprint key %s changed alone: stale %d, why \"%s\"", key, r, why);
		/* and unchanged, the copy is the same machine */
		json_object_set(now, key, v);
		assert_int_equal(ftprof_fingerprint_compare(was, now, why, sizeof why), 0);
		json_decref(now);
		walked++;
	}
	assert_int_equal(walked, 8); /* driver, gen, width, cpu, microcode, memory, kernel, tool */
	json_decref(was);
}

/* A measured profile's fate, the one rule of ftbench bw and ftbenchd: valid -> the store (and
 * the history), invalid -> the history only, the stored one unchanged; the legacy single file on a
 * one-GPU host only, never for an invalid or GPU-less profile. */
static void settle_valid_invalid_and_legacy(void **s)
{
	char path[4096], lp[4096], cache[128];
	enum ftprof_legacy what;
	snprintf(cache, sizeof cache, "%s/cache", dir);
	setenv("XDG_CACHE_HOME", cache, 1);
	json_t *good = prof(1000, 100, 0, 50, 25), *bad = prof(2000, 80, 0, 50, 25);
	json_object_set_new(bad, "valid", json_false());
	assert_int_equal(ftprof_store_settle(dir, good, UUID, 5, 0, path, sizeof path), 0);
	char want[4096];
	snprintf(want, sizeof want, "%s/%s.json", dir, UUID);
	assert_string_equal(path, want);
	assert_int_equal(ftprof_store_settle(dir, bad, UUID, 5, 0, path, sizeof path), FTPROF_KEPT_INVALID);
	assert_string_equal(path, want);
	json_t *arr = json_array();
	assert_int_equal(ftprof_store_settle(dir, arr, UUID, 5, 0, path, sizeof path), -EINVAL); /* not a profile */
	assert_int_equal(ftprof_store_settle(dir, NULL, UUID, 5, 0, path, sizeof path), -EINVAL);
	json_decref(arr);
	json_t *stored = json_load_file(want, 0, NULL), *h = NULL;
	assert_true(json_number_value(json_object_get(json_object_get(stored, "ceilings"), "cpu_stream_read_gbs")) == 100);
	json_decref(stored);
	assert_int_equal(ftprof_history_load(dir, UUID, 0, &h), 0);
	assert_int_equal(json_array_size(h), 2);
	assert_true(json_is_false(json_object_get(json_array_get(h, 1), "valid")));
	json_decref(h);

	/* the legacy rule */
	char expect[4096];
	snprintf(expect, sizeof expect, "%s/freetoken/benchbw.json", cache);
	assert_int_equal(ftprof_legacy_settle(good, want, 2, &what, lp, sizeof lp), 0);
	assert_int_equal(what, FTPROF_LEGACY_MANY_GPUS);
	assert_string_equal(lp, expect);
	assert_int_equal(ftprof_legacy_settle(bad, want, 1, &what, lp, sizeof lp), 0);
	assert_int_equal(what, FTPROF_LEGACY_NOT_VALID);
	json_t *host = json_pack("{s:i,s:n}", "version", 4, "gpu");
	assert_int_equal(ftprof_legacy_settle(host, want, 1, &what, lp, sizeof lp), 0);
	assert_int_equal(what, FTPROF_LEGACY_NO_GPU);
	assert_int_equal(access(expect, F_OK), -1);
	assert_int_equal(ftprof_legacy_settle(good, expect, 1, &what, lp, sizeof lp), 0);
	assert_int_equal(what, FTPROF_LEGACY_SAME_FILE);
	assert_int_equal(ftprof_legacy_settle(good, want, 1, &what, lp, sizeof lp), 0);
	assert_int_equal(what, FTPROF_LEGACY_WRITTEN);
	assert_int_equal(access(expect, F_OK), 0);
	unsetenv("XDG_CACHE_HOME");
	json_decref(host);
	json_decref(good);
	json_decref(bad);
}

/* Every fact changed at once, the reason written into a buffer of every size from 1 to its whole
 * length + 1: each time a prefix of the whole reason, NUL-terminated inside the buffer, nothing
 * written past it. */
static void fingerprint_reason_truncated_anywhere(void **s)
{
	(void)s;
	machine("580.95.05\n", "16\n", "263174212");
	json_t *was = ftprof_fingerprint_at(dir, "00000000:18:00.0");
	machine("580.159.03\n", "8\n", "131587106");
	put(dir, "/proc/cpuinfo", "processor\t: 0\nmodel name\t: Test CPU 9001\nmicrocode\t: 0x2b000639\n");
	put(dir, "/proc/sys/kernel/osrelease", "6.8.0-test\n");
	json_t *now = ftprof_fingerprint_at(dir, "00000000:18:00.0");
	char full[1024], buf[1100];
	assert_int_equal(ftprof_fingerprint_compare(was, now, full, sizeof full), 1);
	assert_string_equal(full, "GPU driver 580.95.05 -> 580.159.03; PCIe link (top speed, width) Gen5 x16 -> Gen5 x8; "
				  "CPU Test CPU 9000 -> Test CPU 9001; CPU microcode 0x2b000603 -> 0x2b000639; "
				  "kernel 6.1.0-test -> 6.8.0-test; memory 251.0 -> 125.5 GiB");
	size_t len = strlen(full);
	for (size_t n = 1; n <= len + 1; n++) {
		memset(buf, 'Z', sizeof buf);
		assert_int_equal(ftprof_fingerprint_compare(was, now, buf, n), 1);
		size_t l = strnlen(buf, n);
		if (l >= n || strncmp(buf, full, l))
			fail_msg("buffer of %zu: \"%.*s\" is no prefix of the reason ending inside it", n, (int)n, buf);
		for (size_t i = n; i < sizeof buf; i++)
			if (buf[i] != 'Z')
				fail_msg("buffer of %zu: byte %zu written past its end", n, i);
	}
	json_decref(was);
	json_decref(now);
}

/* Out of memory while the history's names are read, at every one of them: -ENOMEM from load and
 * add, nothing kept half (the names read so far are freed: make test-san sees a leak), and the
 * history reads whole again afterwards. */
static void history_out_of_memory(void **s)
{
	(void)s;
	for (int i = 0; i < 6; i++) {
		json_t *p = prof(1000.0 + i, 10 + i, 0, 1, 1);
		assert_int_equal(ftprof_history_add(dir, p, UUID, 10), 0);
		json_decref(p);
	}
	json_t *h = NULL;
	for (int k = 0; k < 6; k++) {
		strdup_fail_in = k;
		assert_int_equal(ftprof_history_load(dir, UUID, 0, &h), -ENOMEM);
		assert_null(h);
		strdup_fail_in = k;
		json_t *p = prof(5000.0, 99, 0, 1, 1);
		assert_int_equal(ftprof_history_add(dir, p, UUID, 10), -ENOMEM);
		json_decref(p);
	}
	strdup_fail_in = -1;
	assert_int_equal(ftprof_history_load(dir, UUID, 0, &h), 0);
	assert_int_equal(json_array_size(h), 6);
	json_decref(h);
}

int main(void)
{
	const struct CMUnitTest t[] = {
		cmocka_unit_test(drift_only_outside_spread_by_share),
		cmocka_unit_test_setup_teardown(history_keeps_newest_in_order, setup, teardown),
		cmocka_unit_test_setup_teardown(commit_marks_drift_and_keeps_history, setup, teardown),
		cmocka_unit_test_setup_teardown(fingerprint_tells_a_changed_machine, setup, teardown),
		cmocka_unit_test_setup_teardown(fingerprint_walks_every_field, setup, teardown),
		cmocka_unit_test_setup_teardown(settle_valid_invalid_and_legacy, setup, teardown),
		cmocka_unit_test_setup_teardown(fingerprint_reason_truncated_anywhere, setup, teardown),
		cmocka_unit_test_setup_teardown(history_out_of_memory, setup, teardown),
	};
	return cmocka_run_group_tests(t, NULL, NULL);
}
