/* AVX512_BF16 kernel: bf16 weights times bf16 activations with vdpbf16ps (fp32 accumulation),
 * 32 products per instruction. Activations are rounded to bf16 (nearest even) once per token. */
#include <immintrin.h>

#include "moe/cpu/kern.h"

#define AI static inline __attribute__((always_inline))
#define TILE 4

static size_t xbytes(long K)
{
	return (size_t)K * 2;
}

static void prep(const float *x, long K, void *dst)
{
	uint8_t *d = dst;
	for (long k = 0; k < K; k += 32) {
		__m512bh v = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(x + k + 16), _mm512_loadu_ps(x + k));
		_mm512_storeu_si512(d + 2 * k, (__m512i)v);
	}
}

AI void row_dp(const uint16_t *row, long K, const uint16_t *const *x, float *const *y, long i, const int NB)
{
	__m512 acc[TILE][2];
	FTK_UNROLL
	for (int b = 0; b < NB; b++)
		acc[b][0] = acc[b][1] = _mm512_setzero_ps();
	for (long k = 0; k < K; k += 64) {
		__m512bh w0 = (__m512bh)_mm512_loadu_si512(row + k);
		__m512bh w1 = (__m512bh)_mm512_loadu_si512(row + k + 32);
		FTK_UNROLL
		for (int b = 0; b < NB; b++) {
			acc[b][0] = _mm512_dpbf16_ps(acc[b][0], w0, (__m512bh)_mm512_loadu_si512(x[b] + k));
			acc[b][1] = _mm512_dpbf16_ps(acc[b][1], w1, (__m512bh)_mm512_loadu_si512(x[b] + k + 32));
		}
	}
	FTK_UNROLL
	for (int b = 0; b < NB; b++)
		y[b][i] = _mm512_reduce_add_ps(_mm512_add_ps(acc[b][0], acc[b][1]));
}

static void rows_bf16(const struct ftk_mat *m, long r0, long r1, int nb, const void *const *xs,
		      float *const *ys)
{
	const uint16_t *const *x = (const uint16_t *const *)xs;
	for (long r = r0; r < r1; r++) {
		const uint16_t *row = (const uint16_t *)m->w + r * m->K;
		for (int b0 = 0; b0 < nb; b0 += TILE) {
			switch (nb - b0 >= TILE ? TILE : nb - b0) {
			case 1: row_dp(row, m->K, x + b0, ys + b0, r - r0, 1); break;
			case 2: row_dp(row, m->K, x + b0, ys + b0, r - r0, 2); break;
			case 3: row_dp(row, m->K, x + b0, ys + b0, r - r0, 3); break;
			default: row_dp(row, m->K, x + b0, ys + b0, r - r0, 4); break;
			}
		}
	}
}

static const struct ftk_ops ops[] = {
	[FTFMT_BF16] = {"w16a16-bf16dp", xbytes, prep, rows_bf16},
};

const struct ftk_ops *ftk_avx512bf16(enum ftfmt_id f)
{
	return (unsigned)f < sizeof ops / sizeof ops[0] && ops[f].rows ? &ops[f] : NULL;
}
