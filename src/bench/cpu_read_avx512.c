/* The read loops of the CPU read ceiling, AVX-512: eight independent accumulators, 512 bytes
 * per iteration, aligned loads, over 1, 2 or 4 interleaved streams of the slice (more streams:
 * more pages in flight for the prefetchers), or one stream with software prefetch 4 KiB ahead.
 * Each returns a value derived from every byte (so nothing is optimised away). */
#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

uint64_t ftcread_loop_avx512(const void *p, size_t n, int variant);

#define ADD8(base)                                                             \
	do {                                                                   \
		a0 = _mm512_add_epi64(a0, _mm512_load_si512((base) + 0));     \
		a1 = _mm512_add_epi64(a1, _mm512_load_si512((base) + 1));     \
		a2 = _mm512_add_epi64(a2, _mm512_load_si512((base) + 2));     \
		a3 = _mm512_add_epi64(a3, _mm512_load_si512((base) + 3));     \
		a4 = _mm512_add_epi64(a4, _mm512_load_si512((base) + 4));     \
		a5 = _mm512_add_epi64(a5, _mm512_load_si512((base) + 5));     \
		a6 = _mm512_add_epi64(a6, _mm512_load_si512((base) + 6));     \
		a7 = _mm512_add_epi64(a7, _mm512_load_si512((base) + 7));     \
	} while (0)

uint64_t ftcread_loop_avx512(const void *p, size_t n, int variant)
{
	const __m512i *v = p;
	__m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
	size_t lines = n / 64 / 32 * 32; /* multiple of 4 streams x 8 lines */
	if (variant == 1 || variant == 2) {
		int s = variant == 1 ? 2 : 4;
		size_t q = lines / (size_t)s;
		for (size_t i = 0; i < q; i += 8)
			for (int j = 0; j < s; j++)
				ADD8(v + (size_t)j * q + i);
	} else if (variant == 3) {
		const char *c = p;
		for (size_t i = 0; i < lines; i += 8) {
			_mm_prefetch(c + i * 64 + 4096, _MM_HINT_T0);
			_mm_prefetch(c + i * 64 + 4096 + 256, _MM_HINT_T0);
			ADD8(v + i);
		}
	} else {
		for (size_t i = 0; i < lines; i += 8)
			ADD8(v + i);
	}
	a0 = _mm512_add_epi64(_mm512_add_epi64(_mm512_add_epi64(a0, a1), _mm512_add_epi64(a2, a3)),
			      _mm512_add_epi64(_mm512_add_epi64(a4, a5), _mm512_add_epi64(a6, a7)));
	return (uint64_t)_mm512_reduce_add_epi64(a0);
}
