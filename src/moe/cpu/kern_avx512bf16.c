/* AVX512_BF16 kernel: bf16 weights times bf16 activations with vdpbf16ps (fp32 accumulation),
 * 32 products per instruction. Activations are rounded to bf16 (nearest even) once per token. */
#include <immintrin.h>

#include "moe/cpu/kern.h"

#define AI static inline __attribute__((always_inline))

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

/* R rows (1 or 2: two independent streams) times NB tokens; row j of the R at rows[j], its sums
 * into y[b][ij[j]]. */
AI void row_dp(const uint16_t *const *rows, long K, const uint16_t *const *x, float *const *y,
	       const long *ij, long pd, long pf, const int NB, const int R)
{
	__m512 acc[2][FTKERN_TILE][2];
	FTKERN_UNROLL
	for (int j = 0; j < R; j++)
		FTKERN_UNROLL
		for (int b = 0; b < NB; b++)
			acc[j][b][0] = acc[j][b][1] = _mm512_setzero_ps();
	for (long k = 0; k < K; k += 64) {
		__m512bh w[2][2];
		FTKERN_UNROLL
		for (int j = 0; j < R; j++) {
			if (pd) {
				_mm_prefetch((const char *)(rows[j] + k) + pd, _MM_HINT_T0);
				_mm_prefetch((const char *)(rows[j] + k) + pd + 64, _MM_HINT_T0);
			}
			if (pf) {
				_mm_prefetch((const char *)(rows[j] + k) + pf, _MM_HINT_T1);
				_mm_prefetch((const char *)(rows[j] + k) + pf + 64, _MM_HINT_T1);
			}
			w[j][0] = (__m512bh)_mm512_loadu_si512(rows[j] + k);
			w[j][1] = (__m512bh)_mm512_loadu_si512(rows[j] + k + 32);
		}
		FTKERN_UNROLL
		for (int b = 0; b < NB; b++) {
			__m512bh x0 = (__m512bh)_mm512_loadu_si512(x[b] + k);
			__m512bh x1 = (__m512bh)_mm512_loadu_si512(x[b] + k + 32);
			FTKERN_UNROLL
			for (int j = 0; j < R; j++) {
				acc[j][b][0] = _mm512_dpbf16_ps(acc[j][b][0], w[j][0], x0);
				acc[j][b][1] = _mm512_dpbf16_ps(acc[j][b][1], w[j][1], x1);
			}
		}
	}
	FTKERN_UNROLL
	for (int j = 0; j < R; j++)
		FTKERN_UNROLL
		for (int b = 0; b < NB; b++)
			y[b][ij[j]] = _mm512_reduce_add_ps(_mm512_add_ps(acc[j][b][0], acc[j][b][1]));
}

AI void rows_dp(const uint16_t *const *rows, long K, const uint16_t *const *x, float *const *y,
		const long *ij, long pd, long pf, int nb, const int R)
{
	FTKERN_FOR_TILES(nb, b0, row_dp(rows, K, x + b0, y + b0, ij, pd, pf, FTKERN_NB, R));
}

/* Two streams: rows r0 + i and r0 + h + i (h = half the range, rounded up) together, so two
 * sequential streams are in flight per worker. */
static void rows_bf16(const struct ftkern_mat *m, long r0, long r1, int nb, const void *const *xs,
		      float *const *ys)
{
	const uint16_t *const *x = (const uint16_t *const *)xs;
	const uint16_t *w = (const uint16_t *)m->w;
	long n = r1 - r0, h = n >= 2 ? (n + 1) / 2 : n;
	const long pd = ftkern_knobs_of(m)->pf_dist, pf = ftkern_knobs_of(m)->pf_far;
	for (long i = 0; i < h; i++) {
		const uint16_t *rows[2] = {w + (r0 + i) * m->K, w + (r0 + h + i) * m->K};
		long ij[2] = {i, h + i};
		if (h + i < n)
			rows_dp(rows, m->K, x, ys, ij, pd, pf, nb, 2);
		else
			rows_dp(rows, m->K, x, ys, ij, pd, pf, nb, 1);
	}
}

/* ---- mxfp4_triton split along K with vdpbf16ps: byte (kk, n) holds k = 2kk (low nibble) and
 * 2kk+1 (high) of column n, the pair one vdpbf16ps lane takes: the byte widens to a 32-bit lane,
 * its nibbles spread to the two 16-bit halves and vpermw maps them to bf16 e2m1; the activation
 * pair (x[2kk], x[2kk+1]) in bf16 is broadcast. Whole rows in memory order, two at a time; a
 * scale block's sums collect in tmp and go into ps times the column scales at its end. */
AI void mxt_pair(const struct ftkern_mat *m, long kk, int two, const void *const *xs, float *const *t,
		 const int NB)
{
	const uint32_t *const *x = (const uint32_t *const *)xs;
	/* bf16 of e2m1 0, .5, 1, 1.5, 2, 3, 4, 6 and negatives, in 16-bit lanes 0..15 */
	const __m512i lut = _mm512_setr_epi32(0x3f000000, 0x3fc03f80, 0x40404000, 0x40c04080,
					      (int)0xbf008000, (int)0xbfc0bf80, (int)0xc040c000, (int)0xc0c0c080,
					      0, 0, 0, 0, 0, 0, 0, 0);
	const __m512i nib = _mm512_set1_epi32(0x000F000F);
	long N = m->N, pd = ftkern_knobs_of(m)->pf_dist;
	const uint8_t *p0 = m->w + kk * N, *p1 = p0 + N;
	__m512i xv[FTKERN_TILE][2];
	FTKERN_UNROLL
	for (int b = 0; b < NB; b++) {
		xv[b][0] = _mm512_set1_epi32((int)x[b][kk]);
		xv[b][1] = _mm512_set1_epi32(two ? (int)x[b][kk + 1] : 0);
	}
	for (long c = 0; c < N; c += 16) {
		__mmask16 mk = N - c >= 16 ? 0xFFFF : (__mmask16)((1u << (N - c)) - 1);
		if ((c & 63) == 0 && pd)
			_mm_prefetch((const char *)(two ? p1 : p0) + c + pd, _MM_HINT_T0);
		__m512i v0 = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(mk, p0 + c));
		__m512bh w0 = (__m512bh)_mm512_permutexvar_epi16(_mm512_ternarylogic_epi32(v0, _mm512_slli_epi32(v0, 12), nib, 0xA8), lut);
		__m512bh w1 = w0;
		if (two) {
			__m512i v1 = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(mk, p1 + c));
			w1 = (__m512bh)_mm512_permutexvar_epi16(_mm512_ternarylogic_epi32(v1, _mm512_slli_epi32(v1, 12), nib, 0xA8), lut);
		}
		FTKERN_UNROLL
		for (int b = 0; b < NB; b++) {
			__m512 a = _mm512_dpbf16_ps(_mm512_maskz_loadu_ps(mk, t[b] + c), w0, (__m512bh)xv[b][0]);
			if (two)
				a = _mm512_dpbf16_ps(a, w1, (__m512bh)xv[b][1]);
			_mm512_mask_storeu_ps(t[b] + c, mk, a);
		}
	}
}

#include "moe/cpu/kern_mxt.h"

static const struct ftkern_ops ops[] = {
	[FTFMT_BF16] = {"w16a16-bf16dp", xbytes, prep, rows_bf16},
	[FTFMT_MXFP4_TRITON] = {"w4a16-bf16dp", xbytes, prep, NULL, ftkern_rows_t_mxfp4},
};

const struct ftkern_ops *ftkern_avx512bf16(enum ftfmt_id f)
{
	return (unsigned)f < sizeof ops / sizeof ops[0] && (ops[f].rows || ops[f].rows_t) ? &ops[f] : NULL;
}
