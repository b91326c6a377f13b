#include "hw/pci.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/fsutil.h"

int ftpci_sysfs_id(const char *bus_id, char *id, size_t n)
{
	/* nvidia-smi form "00000000:18:00.0" -> sysfs "0000:18:00.0" (lower case) */
	const char *colon = bus_id ? strchr(bus_id, ':') : NULL;
	if (!colon || strlen(bus_id) < 12 || n < 16)
		return -EINVAL;
	size_t dom = (size_t)(colon - bus_id);
	snprintf(id, n, "%s", dom > 4 ? bus_id + dom - 4 : bus_id);
	for (char *c = id; *c; c++)
		*c = (char)tolower((unsigned char)*c);
	return 0;
}

int ftpci_read_attr(const char *root, const char *bus_id, const char *attr, char *buf, size_t n)
{
	char id[32], path[4200];
	if (ftpci_sysfs_id(bus_id, id, sizeof id) < 0)
		return -EINVAL;
	snprintf(path, sizeof path, "%s/sys/bus/pci/devices/%s/%s", root ? root : "", id, attr);
	return ftfs_read_line(path, buf, n);
}

int ftpci_gen_of_speed(const char *s)
{
	double v = atof(s);
	if (v >= 60) return 6;
	if (v >= 30) return 5;
	if (v >= 15) return 4;
	if (v >= 7.5) return 3;
	if (v >= 4.5) return 2;
	if (v >= 2) return 1;
	return 0;
}
