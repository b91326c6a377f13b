/* libFuzzer target for the SSE parser and the chat stream on top of it (tests/integration/fuzz.sh
 * builds it with clang and runs it for a bounded time in `make test`; tests/unit/test_sse.c has
 * a deterministic fuzz loop besides). The first input byte picks the read size, so splits across
 * reads are explored too.
 * fuzz-srcs: src/util/sse.c src/decode/chat.c src/util/strutil.c src/util/errmsg.c
 * fuzz-libs: -ljansson -lm */
#include <stddef.h>
#include <stdint.h>

#include "decode/chat.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	size_t step = (size_t)data[0] % 32 + 1;
	data++;
	size--;
	struct ftchat_limits lim = {.max_text = 1024, .max_events = 64, .max_line = 512, .max_event = 1024};
	struct ftchat_stream s;
	if (ftchat_init(&s, &lim) < 0)
		return 0;
	int r = 0;
	for (size_t i = 0; i < size && r == 0; i += step)
		r = ftchat_feed(&s, (const char *)data + i, size - i < step ? size - i : step, i);
	if (s.text_len > lim.max_text || s.nev > lim.max_events)
		__builtin_trap();
	ftchat_release(&s);
	return 0;
}
