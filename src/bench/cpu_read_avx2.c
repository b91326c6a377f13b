/* The read loop of the CPU read ceiling, AVX2: eight independent accumulators. */
#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

uint64_t ftcread_loop_avx2(const void *p, size_t n);
uint64_t ftcread_loop_avx2(const void *p, size_t n)
{
	const __m256i *v = p;
	__m256i a[8];
	for (int j = 0; j < 8; j++)
		a[j] = _mm256_setzero_si256();
	for (size_t i = 0; i + 8 <= n / 32; i += 8)
		for (int j = 0; j < 8; j++)
			a[j] = _mm256_add_epi64(a[j], _mm256_load_si256(v + i + j));
	for (int j = 1; j < 8; j++)
		a[0] = _mm256_add_epi64(a[0], a[j]);
	uint64_t o[4];
	_mm256_storeu_si256((__m256i *)o, a[0]);
	return o[0] + o[1] + o[2] + o[3];
}
