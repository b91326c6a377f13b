/* fingerprint: the facts of the machine a profile was measured on that change its figures (GPU
 * driver, PCIe link as trained, CPU model and microcode, memory size, kernel, tool version), read
 * from sysfs and procfs without CUDA, so an engine or the daemon can tell a stale profile. See
 * ftprofile.h for the contracts. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "ftprofile.h"
#include "hw/pci.h"
#include "util/fsutil.h"

#ifndef FT_VERSION
#define FT_VERSION "0"
#endif

/* The first line of root/path without its newline into buf; 0 or -errno. */
static int read_line(const char *root, const char *path, char *buf, size_t n)
{
	char p[4096];
	snprintf(p, sizeof p, "%s%s", root, path);
	return ftfs_read_line(p, buf, n);
}

/* The value of the first "key<spaces>: value" line of a /proc file. */
static int proc_field(const char *root, const char *path, const char *key, char *buf, size_t n)
{
	char p[4096], line[512];
	snprintf(p, sizeof p, "%s%s", root, path);
	FILE *f = fopen(p, "re");
	if (!f)
		return -errno;
	size_t kl = strlen(key);
	int r = -ENOENT;
	while (fgets(line, sizeof line, f)) {
		if (strncmp(line, key, kl) || (line[kl] != ' ' && line[kl] != '\t' && line[kl] != ':'))
			continue;
		char *v = strchr(line, ':');
		if (!v)
			continue;
		for (v++; *v == ' ' || *v == '\t'; v++)
			;
		v[strcspn(v, "\n")] = '\0';
		snprintf(buf, n, "%s", v);
		r = 0;
		break;
	}
	fclose(f);
	return r;
}

json_t *ftprof_fingerprint_at(const char *root, const char *pci_bus_id)
{
	char buf[256];
	json_t *f = json_object();
	if (!f)
		return NULL;
	if (!root)
		root = "";
	if (read_line(root, "/sys/module/nvidia/version", buf, sizeof buf) == 0 && *buf)
		json_object_set_new(f, "driver_version", json_string(buf));
	if (pci_bus_id) {
		/* the width as trained, and the link's top speed: an idle GPU drops its current speed
		 * (ASPM), so the current speed is no fact of the machine, the width is */
		int gen = ftpci_read_attr(root, pci_bus_id, "max_link_speed", buf, sizeof buf) == 0
				  ? ftpci_gen_of_speed(buf)
				  : 0;
		int width = ftpci_read_attr(root, pci_bus_id, "current_link_width", buf, sizeof buf) == 0
				    ? atoi(buf)
				    : 0;
		if (gen > 0 && width > 0) {
			json_object_set_new(f, "pcie_gen_max", json_integer(gen));
			json_object_set_new(f, "pcie_width", json_integer(width));
		}
	}
	if (proc_field(root, "/proc/cpuinfo", "model name", buf, sizeof buf) == 0)
		json_object_set_new(f, "cpu_model", json_string(buf));
	if (proc_field(root, "/proc/cpuinfo", "microcode", buf, sizeof buf) == 0)
		json_object_set_new(f, "cpu_microcode", json_string(buf));
	if (proc_field(root, "/proc/meminfo", "MemTotal", buf, sizeof buf) == 0 && atoll(buf) > 0)
		json_object_set_new(f, "memory_gib", json_real(round(atof(buf) / (1024.0 * 1024.0) * 10) / 10));
	if (*root) {
		if (read_line(root, "/proc/sys/kernel/osrelease", buf, sizeof buf) == 0)
			json_object_set_new(f, "kernel", json_string(buf));
	} else {
		struct utsname u;
		if (uname(&u) == 0)
			json_object_set_new(f, "kernel", json_string(u.release));
	}
	json_object_set_new(f, "tool_version", json_string(FT_VERSION));
	return f;
}

static int differs(const json_t *was, const json_t *now, const char *key, char *why, size_t n, size_t *off,
		   const char *what)
{
	json_t *a = json_object_get(was, key), *b = json_object_get(now, key);
	if (!a || !b || json_equal(a, b))
		return 0;
	if (json_is_string(a) && json_is_string(b)) {
		if (*off < n)
			*off += (size_t)snprintf(why + *off, n - *off, "%s%s %s -> %s", *off ? "; " : "", what,
						 json_string_value(a), json_string_value(b));
		return 1;
	}
	return 0;
}

int ftprof_fingerprint_compare(const json_t *was, const json_t *now, char *why, size_t n)
{
	size_t off = 0;
	int stale = 0;
	char tmp[1];
	if (!why || !n) {
		why = tmp;
		n = sizeof tmp;
	}
	why[0] = '\0';
	if (!json_is_object(was) || !json_object_size(was))
		return -ENOENT;
	stale |= differs(was, now, "driver_version", why, n, &off, "GPU driver");
	json_t *g0 = json_object_get(was, "pcie_gen_max"), *w0 = json_object_get(was, "pcie_width");
	json_t *g1 = json_object_get(now, "pcie_gen_max"), *w1 = json_object_get(now, "pcie_width");
	if (json_is_integer(g0) && json_is_integer(w0) && json_is_integer(g1) && json_is_integer(w1) &&
	    (json_integer_value(g0) != json_integer_value(g1) || json_integer_value(w0) != json_integer_value(w1))) {
		if (off < n)
			off += (size_t)snprintf(why + off, n - off, "%sPCIe link (top speed, width) Gen%lld x%lld -> Gen%lld x%lld",
						off ? "; " : "", (long long)json_integer_value(g0),
						(long long)json_integer_value(w0), (long long)json_integer_value(g1),
						(long long)json_integer_value(w1));
		stale = 1;
	}
	stale |= differs(was, now, "cpu_model", why, n, &off, "CPU");
	stale |= differs(was, now, "cpu_microcode", why, n, &off, "CPU microcode");
	stale |= differs(was, now, "kernel", why, n, &off, "kernel");
	stale |= differs(was, now, "tool_version", why, n, &off, "ftbench");
	/* memory: a VM's total moves a little (balloon, firmware); a lost DIMM is a tenth or more */
	json_t *m0 = json_object_get(was, "memory_gib"), *m1 = json_object_get(now, "memory_gib");
	if (json_is_number(m0) && json_is_number(m1) && json_number_value(m0) > 0 &&
	    fabs(json_number_value(m1) / json_number_value(m0) - 1) > 0.10) {
		if (off < n)
			off += (size_t)snprintf(why + off, n - off, "%smemory %.1f -> %.1f GiB", off ? "; " : "",
						json_number_value(m0), json_number_value(m1));
		stale = 1;
	}
	return stale;
}


int ftprof_stale(const struct ftprof *p, char *why, size_t n)
{
	const json_t *root = ftprof_json(p);
	const json_t *bus = json_object_get(json_object_get(root, "gpu"), "pci_bus_id");
	json_t *now = ftprof_fingerprint_at(NULL, json_is_string(bus) ? json_string_value(bus) : NULL);
	if (!now)
		return -ENOMEM;
	int r = ftprof_fingerprint_compare(json_object_get(root, "fingerprint"), now, why, n);
	json_decref(now);
	return r;
}
