/* checksum: the position-weighted sampled checksum of reference §7.
 *
 * A bank's per-layer arrays are taken as one byte string of total bytes; with
 * step = max(1, total / 1,000,000), h = sum of byte[pos] * (pos mod 1,000,000,007 + 1) over
 * pos = 0, step, 2*step, ... (< total). Position weighting catches reordered experts; it is a
 * sample, not a proof (damage inside one stride can be missed). The sum fits in 64 bits. */
#ifndef FT_MOE_CHECKSUM_H
#define FT_MOE_CHECKSUM_H
#include <stddef.h>
#include <stdint.h>

#include "moe/banks.h"

/* Checksum of nparts arrays of part_bytes each, taken as one string (no copy is made). */
uint64_t ftcks_parts(const uint8_t *const *parts, size_t nparts, size_t part_bytes);
/* Checksum of bank i of b (its L layer arrays, padding excluded). */
uint64_t ftcks_bank(const struct ftbanks *b, int bank);
#endif
