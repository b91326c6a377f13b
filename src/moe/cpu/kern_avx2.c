/* AVX2 + FMA + F16C kernels with fp32 activations (W16A32, W4A32): the AVX-512 kernels'
 * structure at 8 lanes. 4-bit codes decode 32 at a time with vpshufb to int8, then widen. */
#include <immintrin.h>

#include "moe/cpu/kern.h"

#define AI static inline __attribute__((always_inline))

#define LUT_E2M1X2 0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12
#define LUT_Q4 -8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7

AI __m256 bf16x8(const uint16_t *p)
{
	return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p)), 16));
}

AI float hsum(__m256 s)
{
	__m128 h = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
	h = _mm_add_ps(h, _mm_movehl_ps(h, h));
	h = _mm_add_ss(h, _mm_movehdup_ps(h));
	return _mm_cvtss_f32(h);
}

AI void bf16_row(const uint16_t *row, long K, const float *const *x, float *const *y, long i, const int NB)
{
	__m256 acc[FTKERN_TILE][4];
	FTKERN_UNROLL
	for (int b = 0; b < NB; b++)
		FTKERN_UNROLL
		for (int j = 0; j < 4; j++)
			acc[b][j] = _mm256_setzero_ps();
	for (long k = 0; k < K; k += 32) {
		__m256 w[4];
		FTKERN_UNROLL
		for (int j = 0; j < 4; j++)
			w[j] = bf16x8(row + k + 8 * j);
		FTKERN_UNROLL
		for (int b = 0; b < NB; b++)
			FTKERN_UNROLL
			for (int j = 0; j < 4; j++)
				acc[b][j] = _mm256_fmadd_ps(w[j], _mm256_loadu_ps(x[b] + k + 8 * j), acc[b][j]);
	}
	FTKERN_UNROLL
	for (int b = 0; b < NB; b++)
		y[b][i] = hsum(_mm256_add_ps(_mm256_add_ps(acc[b][0], acc[b][1]), _mm256_add_ps(acc[b][2], acc[b][3])));
}

static void rows_bf16(const struct ftkern_mat *m, long r0, long r1, int nb, const void *const *xs,
		      float *const *ys)
{
	const float *const *x = (const float *const *)xs;
	for (long r = r0; r < r1; r++) {
		const uint16_t *row = (const uint16_t *)m->w + r * m->K;
		FTKERN_FOR_TILES(nb, b0, bf16_row(row, m->K, x + b0, ys + b0, r - r0, FTKERN_NB));
	}
}

enum { F_NV, F_DS, F_Q4 };

/* 32 elements (k .. k+31) as 4 x 8 fp32, each times its block scale. */
AI void decode32(const struct ftkern_mat *m, long r, long k, __m256 w[4], long pd, const int F)
{
	__m128i lo, hi, q0, q1;
	const __m128i m15 = _mm_set1_epi8(15);
	float s[4];
	if (F == F_Q4) {
		const uint8_t *blk = m->w + (r * (m->K / 32) + k / 32) * 18;
		__m128i v = _mm_loadu_si128((const __m128i *)(blk + 2));
		const __m128i lut = _mm_setr_epi8(LUT_Q4);
		q0 = _mm_shuffle_epi8(lut, _mm_and_si128(v, m15));                    /* 0..15 */
		q1 = _mm_shuffle_epi8(lut, _mm_and_si128(_mm_srli_epi16(v, 4), m15)); /* 16..31 */
		s[0] = s[1] = s[2] = s[3] = _cvtsh_ss(ftkern_ld16(blk));
	} else {
		__m128i v = _mm_loadu_si128((const __m128i *)(m->w + r * (m->K / 2) + k / 2));
		lo = _mm_and_si128(v, m15);
		hi = _mm_and_si128(_mm_srli_epi16(v, 4), m15);
		const __m128i lut = _mm_setr_epi8(LUT_E2M1X2);
		q0 = _mm_shuffle_epi8(lut, _mm_unpacklo_epi8(lo, hi));
		q1 = _mm_shuffle_epi8(lut, _mm_unpackhi_epi8(lo, hi));
		if (F == F_NV) {
			const uint8_t *sc = m->s + r * (m->K / 16) + k / 16;
			s[0] = s[1] = ftkern_e4m3_lut[sc[0]];
			s[2] = s[3] = ftkern_e4m3_lut[sc[1]];
		} else {
			s[0] = s[1] = s[2] = s[3] = ftkern_e8m0_lut[m->s[r * (m->K / 32) + k / 32]];
		}
	}
	w[0] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q0)), _mm256_set1_ps(s[0]));
	w[1] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(q0, 8))), _mm256_set1_ps(s[1]));
	w[2] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q1)), _mm256_set1_ps(s[2]));
	w[3] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(q1, 8))), _mm256_set1_ps(s[3]));
}

#define W4_VEC __m256
#define W4_STEP 32
#define W4_ZERO() _mm256_setzero_ps()
#define W4_FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define W4_LOAD(p) _mm256_loadu_ps(p)
#define W4_ADD(a, b) _mm256_add_ps(a, b)
#define W4_SUM(v) hsum(v)
#define w4_decode decode32
#include "moe/cpu/kern_w4a32.h"

/* mxfp4_triton (transposed): 8 output columns per vector; tails through a small buffer. */
AI void mx_tile(const struct ftkern_mat *m, long c, int ncol, const float *const *x, float *const *y,
		long i, const int NB)
{
	const __m256 mag = _mm256_setr_ps(0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f);
	const __m256i m7 = _mm256_set1_epi32(7), m8 = _mm256_set1_epi32(8);
	long N = m->N;
	__m256 acc[FTKERN_TILE];
	FTKERN_UNROLL
	for (int b = 0; b < NB; b++)
		acc[b] = _mm256_setzero_ps();
	for (long kb = 0; kb < m->K / 32; kb++) {
		__m256 t[FTKERN_TILE][4];
		FTKERN_UNROLL
		for (int b = 0; b < NB; b++)
			FTKERN_UNROLL
			for (int j = 0; j < 4; j++)
				t[b][j] = _mm256_setzero_ps();
		FTKERN_UNROLL
		for (int kk = 0; kk < 16; kk++) {
			const uint8_t *p = m->w + (kb * 16 + kk) * N + c;
			uint64_t raw = 0;
			if (ncol == 8)
				memcpy(&raw, p, 8);
			else
				memcpy(&raw, p, (size_t)ncol);
			__m256i v = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128((long long)raw));
			__m256i nl = v, nh = _mm256_srli_epi32(v, 4);
			nl = _mm256_and_si256(nl, _mm256_set1_epi32(15));
			__m256 lo = _mm256_permutevar8x32_ps(mag, _mm256_and_si256(nl, m7));
			__m256 hi = _mm256_permutevar8x32_ps(mag, _mm256_and_si256(nh, m7));
			lo = _mm256_xor_ps(lo, _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_and_si256(nl, m8), 28)));
			hi = _mm256_xor_ps(hi, _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_and_si256(nh, m8), 28)));
			long k = kb * 32 + 2 * kk;
			int h = (kk & 1) * 2;
			FTKERN_UNROLL
			for (int b = 0; b < NB; b++) {
				t[b][h] = _mm256_fmadd_ps(lo, _mm256_set1_ps(x[b][k]), t[b][h]);
				t[b][h + 1] = _mm256_fmadd_ps(hi, _mm256_set1_ps(x[b][k + 1]), t[b][h + 1]);
			}
		}
		uint64_t sraw = 0;
		memcpy(&sraw, m->s + kb * N + c, (size_t)ncol);
		__m256 s = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128((long long)sraw)), 23));
		FTKERN_UNROLL
		for (int b = 0; b < NB; b++)
			acc[b] = _mm256_fmadd_ps(_mm256_add_ps(_mm256_add_ps(t[b][0], t[b][1]),
							       _mm256_add_ps(t[b][2], t[b][3])), s, acc[b]);
	}
	FTKERN_UNROLL
	for (int b = 0; b < NB; b++) {
		if (ncol == 8) {
			_mm256_storeu_ps(y[b] + i, acc[b]);
		} else {
			float tmp[8];
			_mm256_storeu_ps(tmp, acc[b]);
			memcpy(y[b] + i, tmp, sizeof(float) * (size_t)ncol);
		}
	}
}

static void rows_mxfp4(const struct ftkern_mat *m, long r0, long r1, int nb, const void *const *xs,
		       float *const *ys)
{
	const float *const *x = (const float *const *)xs;
	for (long c = r0; c < r1; c += 8) {
		int ncol = r1 - c >= 8 ? 8 : (int)(r1 - c);
		FTKERN_FOR_TILES(nb, b0, mx_tile(m, c, ncol, x + b0, ys + b0, c - r0, FTKERN_NB));
	}
}

static const struct ftkern_ops ops[] = {
	[FTFMT_BF16] = {"w16a32-avx2", NULL, NULL, rows_bf16},
	[FTFMT_NVFP4] = {"w4a32-avx2", NULL, NULL, ftkern_rows_nvfp4},
	[FTFMT_DS_FP4] = {"w4a32-avx2", NULL, NULL, ftkern_rows_dsfp4},
	[FTFMT_Q4_0] = {"w4a32-avx2", NULL, NULL, ftkern_rows_q4_0},
	[FTFMT_MXFP4_TRITON] = {"w4a32-avx2", NULL, NULL, rows_mxfp4},
};

const struct ftkern_ops *ftkern_avx2(enum ftfmt_id f)
{
	return (unsigned)f < sizeof ops / sizeof ops[0] && (ops[f].rows || ops[f].rows_t) ? &ops[f] : NULL;
}
