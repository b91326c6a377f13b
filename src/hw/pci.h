/* pci: a PCI device's sysfs facts without CUDA (bus id -> sysfs name, one attribute of the
 * device, link speed -> PCIe generation), shared by gpu.c and libftprofile's fingerprint.
 * All functions return 0 or a negative errno; none logs. */
#ifndef FT_HW_PCI_H
#define FT_HW_PCI_H
#include <stddef.h>

/* The sysfs device name of a bus id ("00000000:18:00.0" -> "0000:18:00.0", lower case) into id
 * (at least 16 bytes); -EINVAL for anything shorter than a bus id or without a ':'. */
int ftpci_sysfs_id(const char *bus_id, char *id, size_t n);

/* The first line of root/sys/bus/pci/devices/ID/attr into buf (root NULL or "": the real tree;
 * tests pass a fake one), ID the sysfs name of bus_id; -EINVAL for a bad bus id, else as
 * ftfs_read_line. */
int ftpci_read_attr(const char *root, const char *bus_id, const char *attr, char *buf, size_t n);

/* The PCIe generation (1-6) of a sysfs link speed ("32.0 GT/s PCIe"), 0 when unknown. */
int ftpci_gen_of_speed(const char *s);
#endif
