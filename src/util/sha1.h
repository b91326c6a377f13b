/* sha1: SHA-1 (FIPS 180-4) for content fingerprints (decode output_sha1, checksums).
 * Not for security. No allocation; never fails. */
#ifndef FT_UTIL_SHA1_H
#define FT_UTIL_SHA1_H
#include <stddef.h>
#include <stdint.h>

struct ftsha1 {
	uint32_t h[5];
	uint64_t len; /* bytes fed so far */
	unsigned char buf[64];
	size_t used;
};

void ftsha1_init(struct ftsha1 *c);
void ftsha1_update(struct ftsha1 *c, const void *data, size_t n);
/* Write the 20-byte digest; c must be re-initialised before reuse. */
void ftsha1_final(struct ftsha1 *c, unsigned char out[20]);
/* One shot: lowercase hex of the digest of data[0..n) into hex (41 bytes incl. NUL). */
void ftsha1_hex(const void *data, size_t n, char hex[41]);
#endif
