/* AVX512_BF16 kernel: bf16 weights times bf16 activations with vdpbf16ps (fp32 accumulation),
 * 32 products per instruction. Activations are rounded to bf16 (nearest even) once per token. */
#include <immintrin.h>

#include "moe/cpu/kern.h"

#define AI static inline __attribute__((always_inline))
#define TILE 4
#define PF_DIST 4096 /* bytes ahead in the row-major weight stream */

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
		_mm_prefetch((const char *)(row + k) + PF_DIST, _MM_HINT_T0);
		_mm_prefetch((const char *)(row + k) + PF_DIST + 64, _MM_HINT_T0);
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

/* ---- mxfp4_triton split along K with vdpbf16ps: byte (kk, n) holds k = 2kk (low nibble) and
 * 2kk+1 (high) of column n, the pair one vdpbf16ps lane takes: the byte widens to a 32-bit lane,
 * its nibbles spread to the two 16-bit halves and vpermw maps them to bf16 e2m1; the activation
 * pair (x[2kk], x[2kk+1]) in bf16 is broadcast. Strips of 64 columns by a scale block's rows. */
#define MXT_FAR (16 * 2)

AI void mxt_strip(const struct ftk_mat *m, long kb, long ra, long rb, long c, const uint32_t *const *x,
		  float *const *ps, const int NB)
{
	/* bf16 of e2m1 0, .5, 1, 1.5, 2, 3, 4, 6 and negatives, in 16-bit lanes 0..15 */
	const __m512i lut = _mm512_setr_epi32(0x3f000000, 0x3fc03f80, 0x40404000, 0x40c04080,
					      0xbf008000, 0xbfc0bf80, 0xc040c000, 0xc0c0c080,
					      0, 0, 0, 0, 0, 0, 0, 0);
	const __m512i nib = _mm512_set1_epi32(0x000F000F);
	long N = m->N;
	__mmask16 mk[4];
	FTK_UNROLL
	for (int t = 0; t < 4; t++) {
		long left = N - c - 16 * t;
		mk[t] = left >= 16 ? 0xFFFF : left > 0 ? (__mmask16)((1u << left) - 1) : 0;
	}
	__m512 a[TILE][4];
	FTK_UNROLL
	for (int b = 0; b < NB; b++)
		FTK_UNROLL
		for (int t = 0; t < 4; t++)
			a[b][t] = _mm512_setzero_ps();
	for (long kk = ra; kk < rb; kk++) {
		const uint8_t *p = m->w + kk * N + c;
		_mm_prefetch((const char *)p + MXT_FAR * N, _MM_HINT_T1);
		FTK_UNROLL
		for (int t = 0; t < 4; t++) {
			__m512i v = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(mk[t], p + 16 * t));
			__m512i idx = _mm512_ternarylogic_epi32(v, _mm512_slli_epi32(v, 12), nib, 0xA8);
			__m512bh w = (__m512bh)_mm512_permutexvar_epi16(idx, lut);
			FTK_UNROLL
			for (int b = 0; b < NB; b++)
				a[b][t] = _mm512_dpbf16_ps(a[b][t], w, (__m512bh)_mm512_set1_epi32((int)x[b][kk]));
		}
	}
	FTK_UNROLL
	for (int t = 0; t < 4; t++) {
		if (!mk[t])
			continue;
		__m512i se = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(mk[t], m->s + kb * N + c + 16 * t));
		__m512 s = _mm512_castsi512_ps(_mm512_slli_epi32(se, 23));
		FTK_UNROLL
		for (int b = 0; b < NB; b++) {
			float *o = ps[b] + c + 16 * t;
			_mm512_mask_storeu_ps(o, mk[t], _mm512_fmadd_ps(a[b][t], s, _mm512_maskz_loadu_ps(mk[t], o)));
		}
	}
}

static void rows_t_mxfp4(const struct ftk_mat *m, long kk0, long kk1, int nb, const void *const *xs,
			 float *const *ps)
{
	const uint32_t *const *x = (const uint32_t *const *)xs;
	for (int b = 0; b < nb; b++)
		memset(ps[b], 0, sizeof(float) * (size_t)m->N);
	for (long kb = kk0 / 16; kb * 16 < kk1; kb++) {
		long ra = kb * 16 > kk0 ? kb * 16 : kk0, rb = kb * 16 + 16 < kk1 ? kb * 16 + 16 : kk1;
		for (int b0 = 0; b0 < nb; b0 += TILE)
			for (long c = 0; c < m->N; c += 64) {
				switch (nb - b0 >= TILE ? TILE : nb - b0) {
				case 1: mxt_strip(m, kb, ra, rb, c, x + b0, ps + b0, 1); break;
				case 2: mxt_strip(m, kb, ra, rb, c, x + b0, ps + b0, 2); break;
				case 3: mxt_strip(m, kb, ra, rb, c, x + b0, ps + b0, 3); break;
				default: mxt_strip(m, kb, ra, rb, c, x + b0, ps + b0, 4); break;
				}
			}
	}
}

static const struct ftk_ops ops[] = {
	[FTFMT_BF16] = {"w16a16-bf16dp", xbytes, prep, rows_bf16},
	[FTFMT_MXFP4_TRITON] = {"w4a16-bf16dp", xbytes, prep, NULL, rows_t_mxfp4},
};

const struct ftk_ops *ftk_avx512bf16(enum ftfmt_id f)
{
	return (unsigned)f < sizeof ops / sizeof ops[0] && (ops[f].rows || ops[f].rows_t) ? &ops[f] : NULL;
}
