/* checksum: see checksum.h. */
#include "moe/checksum.h"

#define CKS_SAMPLES 1000000ULL
#define CKS_MOD 1000000007ULL

uint64_t ftcks_parts(const uint8_t *const *parts, size_t nparts, size_t part_bytes)
{
	uint64_t total = (uint64_t)nparts * part_bytes;
	if (total == 0)
		return 0;
	uint64_t step = total / CKS_SAMPLES;
	if (step < 1)
		step = 1;
	uint64_t h = 0;
	for (uint64_t pos = 0; pos < total; pos += step) {
		uint64_t part = pos / part_bytes, off = pos % part_bytes;
		h += (uint64_t)parts[part][off] * (pos % CKS_MOD + 1);
	}
	return h;
}

uint64_t ftcks_bank(const struct ftbanks *b, int bank)
{
	const uint8_t *parts[FTBANKS_MAX_LAYERS];
	for (long l = 0; l < b->L; l++)
		parts[l] = ftbanks_layer(b, bank, l);
	return ftcks_parts(parts, (size_t)b->L, b->layer_bytes[bank]);
}
