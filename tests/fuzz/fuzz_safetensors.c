/* libFuzzer target for the safetensors header parser (tests/integration/fuzz.sh builds it with
 * clang -fsanitize=fuzzer,address,undefined and runs it for a bounded time in `make test`).
 * Input: 8 bytes of file size (little-endian, capped) then the header bytes.
 * fuzz-srcs: src/moe/safetensors.c src/util/fsutil.c src/util/errmsg.c
 * fuzz-libs: -ljansson */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "moe/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 8)
		return 0;
	uint64_t fsz = 0;
	for (int i = 7; i >= 0; i--)
		fsz = (fsz << 8) | data[i];
	fsz %= 1ULL << 40;
	const char *hdr = (const char *)data + 8;
	size_t len = size - 8;
	/* the parser sees an exact-size heap copy, so ASan catches any read past it */
	char *copy = malloc(len ? len : 1);
	if (!copy)
		return 0;
	memcpy(copy, hdr, len);
	struct ftst_file f;
	char err[256];
	int rc = ftst_parse_header(copy, len, fsz, &f, err, sizeof err);
	if (rc == 0) {
		uint64_t end = f.data_start;
		for (size_t i = 0; i < f.ntensors; i++) {
			if (f.tensors[i].offset < end || f.tensors[i].offset + f.tensors[i].nbytes > fsz)
				abort(); /* accepted something inconsistent */
			end = f.tensors[i].offset + f.tensors[i].nbytes;
		}
	} else if (rc != -EINVAL && rc != -ENOMEM) {
		abort();
	}
	ftst_file_release(&f);
	free(copy);
	return 0;
}
