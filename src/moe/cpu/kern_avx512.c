/* AVX-512 F/BW/VL kernels with fp32 activations: bf16 (W16A32) and the 4-bit formats (W4A32).
 * Row-major formats: one row at a time, tokens in tiles of up to 4 (the row stays in L1 across
 * tiles), four independent accumulators per token. mxfp4_triton (transposed): 16 output
 * columns per vector, K rows streamed, 4 chains per token. */
#include <immintrin.h>

#include "moe/cpu/kern.h"

#define AI static inline __attribute__((always_inline))

/* e2m1 * 2 as int8 (exact), per 128-bit lane for vpshufb */
#define LUT_E2M1X2 0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12
/* q4_0: nibble - 8 */
#define LUT_Q4 -8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7

AI __m512 bf16x16(const uint16_t *p)
{
	return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)p)), 16));
}

AI void bf16_row(const uint16_t *row, long K, const float *const *x, float *const *y, long i, long pd,
		 const int NB)
{
	__m512 acc[FTKERN_TILE][4];
	FTKERN_UNROLL
	for (int b = 0; b < NB; b++)
		FTKERN_UNROLL
		for (int j = 0; j < 4; j++)
			acc[b][j] = _mm512_setzero_ps();
	long k = 0;
	for (; k + 64 <= K; k += 64) {
		if (pd) {
			_mm_prefetch((const char *)(row + k) + pd, _MM_HINT_T0);
			_mm_prefetch((const char *)(row + k) + pd + 64, _MM_HINT_T0);
		}
		__m512 w0 = bf16x16(row + k), w1 = bf16x16(row + k + 16);
		__m512 w2 = bf16x16(row + k + 32), w3 = bf16x16(row + k + 48);
		FTKERN_UNROLL
		for (int b = 0; b < NB; b++) {
			acc[b][0] = _mm512_fmadd_ps(w0, _mm512_loadu_ps(x[b] + k), acc[b][0]);
			acc[b][1] = _mm512_fmadd_ps(w1, _mm512_loadu_ps(x[b] + k + 16), acc[b][1]);
			acc[b][2] = _mm512_fmadd_ps(w2, _mm512_loadu_ps(x[b] + k + 32), acc[b][2]);
			acc[b][3] = _mm512_fmadd_ps(w3, _mm512_loadu_ps(x[b] + k + 48), acc[b][3]);
		}
	}
	FTKERN_UNROLL
	for (int b = 0; b < NB; b++) {
		float s = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(acc[b][0], acc[b][1]),
							     _mm512_add_ps(acc[b][2], acc[b][3])));
		for (long t = k; t < K; t++)
			s += ftkern_bf16(row[t]) * x[b][t];
		y[b][i] = s;
	}
}

static void rows_bf16(const struct ftkern_mat *m, long r0, long r1, int nb, const void *const *xs,
		      float *const *ys)
{
	const float *const *x = (const float *const *)xs;
	const long pd = ftkern_knobs_of(m)->pf_dist;
	for (long r = r0; r < r1; r++) {
		const uint16_t *row = (const uint16_t *)m->w + r * m->K;
		FTKERN_FOR_TILES(nb, b0, bf16_row(row, m->K, x + b0, ys + b0, r - r0, pd, FTKERN_NB));
	}
}

/* ---- row-major 4-bit formats: 64 elements per step, decoded to 4 x 16 fp32 times the block
 * scale. nvfp4 and ds_fp4 leave a factor 1/2 (LUT holds 2*e2m1) for the row's end. */
enum { F_NV, F_DS, F_Q4 };

/* 64 nibble codes in element order as bytes. */
AI __m512i codes64_pairs(const uint8_t *p) /* low nibble = even element */
{
	__m512i v = _mm512_cvtepu8_epi16(_mm256_loadu_si256((const __m256i *)p));
	return _mm512_ternarylogic_epi32(v, _mm512_slli_epi16(v, 4), _mm512_set1_epi16(0x0F0F), 0xA8);
}

AI __m512i codes64_q4(const uint8_t *blk) /* two 18-byte blocks: [b0 lo, b0 hi, b1 lo, b1 hi] */
{
	__m256i v = _mm256_loadu2_m128i((const __m128i *)(blk + 20), (const __m128i *)(blk + 2));
	__m256i m = _mm256_set1_epi8(15);
	__m256i lo = _mm256_and_si256(v, m), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m);
	__m512i z = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
	return _mm512_shuffle_i64x2(z, z, 0 | 2 << 2 | 1 << 4 | 3 << 6);
}

AI float q4_d(const uint8_t *blk)
{
	return _cvtsh_ss(ftkern_ld16(blk));
}

AI void decode64(const struct ftkern_mat *m, long r, long k, __m512 w[4], long pd, const int F)
{
	__m512i c, q;
	float s[4];
	if (F == F_Q4) {
		const uint8_t *blk = m->w + (r * (m->K / 32) + k / 32) * 18;
		c = codes64_q4(blk);
		q = _mm512_shuffle_epi8(_mm512_broadcast_i32x4(_mm_setr_epi8(LUT_Q4)), c);
		s[0] = s[1] = q4_d(blk);
		s[2] = s[3] = q4_d(blk + 18);
	} else {
		if (pd)
			_mm_prefetch((const char *)(m->w + r * (m->K / 2) + k / 2) + pd, _MM_HINT_T0);
		c = codes64_pairs(m->w + r * (m->K / 2) + k / 2);
		q = _mm512_shuffle_epi8(_mm512_broadcast_i32x4(_mm_setr_epi8(LUT_E2M1X2)), c);
		if (F == F_NV) {
			const uint8_t *sc = m->s + r * (m->K / 16) + k / 16;
			FTKERN_UNROLL
			for (int i = 0; i < 4; i++)
				s[i] = ftkern_e4m3_lut[sc[i]];
		} else {
			const uint8_t *sc = m->s + r * (m->K / 32) + k / 32;
			s[0] = s[1] = ftkern_e8m0_lut[sc[0]];
			s[2] = s[3] = ftkern_e8m0_lut[sc[1]];
		}
	}
	w[0] = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm512_castsi512_si128(q))), _mm512_set1_ps(s[0]));
	w[1] = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm512_extracti32x4_epi32(q, 1))), _mm512_set1_ps(s[1]));
	w[2] = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm512_extracti32x4_epi32(q, 2))), _mm512_set1_ps(s[2]));
	w[3] = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm512_extracti32x4_epi32(q, 3))), _mm512_set1_ps(s[3]));
}

#define W4_VEC __m512
#define W4_STEP 64
#define W4_ZERO() _mm512_setzero_ps()
#define W4_FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define W4_LOAD(p) _mm512_loadu_ps(p)
#define W4_ADD(a, b) _mm512_add_ps(a, b)
#define W4_SUM(v) _mm512_reduce_add_ps(v)
#define w4_decode decode64
#include "moe/cpu/kern_w4a32.h"

/* ---- mxfp4_triton, transposed: blocks [K/2, N], scales [K/32, N]. 16 columns per vector. */
AI void mx_tile(const struct ftkern_mat *m, long c, __mmask16 mask, const float *const *x,
		float *const *y, long i, const int NB)
{
	const __m512 lut = _mm512_setr_ps(0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f, -0.0f, -0.5f,
					  -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f);
	const __m512i m15 = _mm512_set1_epi32(15);
	long N = m->N;
	__m512 acc[FTKERN_TILE];
	FTKERN_UNROLL
	for (int b = 0; b < NB; b++)
		acc[b] = _mm512_setzero_ps();
	for (long kb = 0; kb < m->K / 32; kb++) {
		__m512 t[FTKERN_TILE][4];
		FTKERN_UNROLL
		for (int b = 0; b < NB; b++)
			FTKERN_UNROLL
			for (int j = 0; j < 4; j++)
				t[b][j] = _mm512_setzero_ps();
		const uint8_t *w = m->w + kb * 16 * N + c;
		FTKERN_UNROLL
		for (int kk = 0; kk < 16; kk += 2) {
			FTKERN_UNROLL
			for (int h = 0; h < 2; h++) {
				__m512i v = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(mask, w + (kk + h) * N));
				__m512 lo = _mm512_permutexvar_ps(_mm512_and_si512(v, m15), lut);
				__m512 hi = _mm512_permutexvar_ps(_mm512_srli_epi32(v, 4), lut);
				long k = kb * 32 + 2 * (kk + h);
				FTKERN_UNROLL
				for (int b = 0; b < NB; b++) {
					t[b][2 * h] = _mm512_fmadd_ps(lo, _mm512_set1_ps(x[b][k]), t[b][2 * h]);
					t[b][2 * h + 1] = _mm512_fmadd_ps(hi, _mm512_set1_ps(x[b][k + 1]), t[b][2 * h + 1]);
				}
			}
		}
		__m512i se = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(mask, m->s + kb * N + c));
		__m512 s = _mm512_castsi512_ps(_mm512_slli_epi32(se, 23));
		FTKERN_UNROLL
		for (int b = 0; b < NB; b++)
			acc[b] = _mm512_fmadd_ps(_mm512_add_ps(_mm512_add_ps(t[b][0], t[b][1]),
							       _mm512_add_ps(t[b][2], t[b][3])), s, acc[b]);
	}
	FTKERN_UNROLL
	for (int b = 0; b < NB; b++)
		_mm512_mask_storeu_ps(y[b] + i, mask, acc[b]);
}

static void rows_mxfp4(const struct ftkern_mat *m, long r0, long r1, int nb, const void *const *xs,
		       float *const *ys)
{
	const float *const *x = (const float *const *)xs;
	for (long c = r0; c < r1; c += 16) {
		__mmask16 mask = r1 - c >= 16 ? 0xFFFF : (__mmask16)((1u << (r1 - c)) - 1);
		FTKERN_FOR_TILES(nb, b0, mx_tile(m, c, mask, x + b0, ys + b0, c - r0, FTKERN_NB));
	}
}

/* ---- mxfp4_triton split along K (rows_t): each worker streams whole rows [kk0, kk1) of the
 * [K/2, N] bank in memory order, two rows at a time; the sums of a scale block's rows collect
 * in tmp (L1/L2) and go into ps times the column scales when the block ends. */
AI void mxt_pair(const struct ftkern_mat *m, long kk, int two, const void *const *xs, float *const *t,
		 const int NB)
{
	const float *const *x = (const float *const *)xs;
	const __m512 lut = _mm512_setr_ps(0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f, -0.0f, -0.5f,
					  -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f);
	const __m512i m15 = _mm512_set1_epi32(15);
	long N = m->N, pd = ftkern_knobs_of(m)->pf_dist;
	const uint8_t *p0 = m->w + kk * N, *p1 = p0 + N;
	__m512 xv[FTKERN_TILE][4];
	FTKERN_UNROLL
	for (int b = 0; b < NB; b++)
		FTKERN_UNROLL
		for (int j = 0; j < 4; j++)
			xv[b][j] = _mm512_set1_ps(j < 2 || two ? x[b][2 * kk + j] : 0.0f);
	for (long c = 0; c < N; c += 16) {
		__mmask16 mk = N - c >= 16 ? 0xFFFF : (__mmask16)((1u << (N - c)) - 1);
		if ((c & 63) == 0 && pd)
			_mm_prefetch((const char *)(two ? p1 : p0) + c + pd, _MM_HINT_T0);
		__m512i v0 = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(mk, p0 + c));
		__m512 lo0 = _mm512_permutexvar_ps(_mm512_and_si512(v0, m15), lut);
		__m512 hi0 = _mm512_permutexvar_ps(_mm512_srli_epi32(v0, 4), lut);
		__m512 lo1 = _mm512_setzero_ps(), hi1 = lo1;
		if (two) {
			__m512i v1 = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(mk, p1 + c));
			lo1 = _mm512_permutexvar_ps(_mm512_and_si512(v1, m15), lut);
			hi1 = _mm512_permutexvar_ps(_mm512_srli_epi32(v1, 4), lut);
		}
		FTKERN_UNROLL
		for (int b = 0; b < NB; b++) {
			__m512 a = _mm512_maskz_loadu_ps(mk, t[b] + c);
			__m512 e = _mm512_mul_ps(hi0, xv[b][1]);
			a = _mm512_fmadd_ps(lo0, xv[b][0], a);
			if (two) {
				e = _mm512_fmadd_ps(lo1, xv[b][2], e);
				a = _mm512_fmadd_ps(hi1, xv[b][3], a);
			}
			_mm512_mask_storeu_ps(t[b] + c, mk, _mm512_add_ps(a, e));
		}
	}
}

#include "moe/cpu/kern_mxt.h"

static const struct ftkern_ops ops[] = {
	[FTFMT_BF16] = {"w16a32-avx512", NULL, NULL, rows_bf16},
	[FTFMT_NVFP4] = {"w4a32-avx512", NULL, NULL, ftkern_rows_nvfp4},
	[FTFMT_DS_FP4] = {"w4a32-avx512", NULL, NULL, ftkern_rows_dsfp4},
	[FTFMT_Q4_0] = {"w4a32-avx512", NULL, NULL, ftkern_rows_q4_0},
	[FTFMT_MXFP4_TRITON] = {"w4a32-avx512", NULL, NULL, rows_mxfp4, ftkern_rows_t_mxfp4},
};

const struct ftkern_ops *ftkern_avx512(enum ftfmt_id f)
{
	return (unsigned)f < sizeof ops / sizeof ops[0] && (ops[f].rows || ops[f].rows_t) ? &ops[f] : NULL;
}

/* e^x for 16 floats: x = n ln2 + r with |r| <= ln2/2 (ln2 in two parts, Cephes'), e^r by its
 * Taylor polynomial to r^6 (relative error under 2e-7), times 2^n by vscalefps; x clamped to
 * [-104, 88.8], past which e^x is 0 or inf in float, as expf gives. */
AI __m512 exp16(__m512 x)
{
	x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-104.0f)), _mm512_set1_ps(88.8f));
	__m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
					_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	__m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
	r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
	__m512 p = _mm512_set1_ps(1.0f / 720.0f);
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120.0f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24.0f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6.0f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
	return _mm512_scalef_ps(p, n);
}

int ftkern_act_avx512(enum ftfmt_act a, const float *g, const float *u, long n, float w, float lim, float *h)
{
	if (a != FTFMT_ACT_SILU && a != FTFMT_ACT_SWIGLU_OAI)
		return -1;
	const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
	const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
	const __m512 one = _mm512_set1_ps(1.0f), L = _mm512_set1_ps(lim), W = _mm512_set1_ps(w);
	for (long j = 0; j < n; j += 16) {
		int m = n - j >= 16 ? 16 : (int)(n - j);
		__mmask16 k = (__mmask16)((1u << m) - 1);
		__m512 vg, vu;
		if (u) {
			vg = _mm512_maskz_loadu_ps(k, g + j);
			vu = _mm512_maskz_loadu_ps(k, u + j);
		} else {
			__mmask16 ka = (__mmask16)(2 * m >= 16 ? 0xFFFF : (1u << 2 * m) - 1);
			__mmask16 kb = (__mmask16)(2 * m > 16 ? (1u << (2 * m - 16)) - 1 : 0);
			__m512 A = _mm512_maskz_loadu_ps(ka, g + 2 * j), B = _mm512_maskz_loadu_ps(kb, g + 2 * j + 16);
			vg = _mm512_permutex2var_ps(A, even, B);
			vu = _mm512_permutex2var_ps(A, odd, B);
		}
		__m512 e, v;
		if (a == FTFMT_ACT_SILU) {
			e = exp16(_mm512_sub_ps(_mm512_setzero_ps(), vg));
		} else { /* the scalar form's order: g = min(g, lim), u clamped to [-lim, lim] */
			vg = _mm512_min_ps(vg, L);
			vu = _mm512_add_ps(_mm512_min_ps(_mm512_max_ps(vu, _mm512_sub_ps(_mm512_setzero_ps(), L)), L), one);
			e = exp16(_mm512_mul_ps(_mm512_set1_ps(-1.702f), vg));
		}
		v = _mm512_mul_ps(_mm512_div_ps(vg, _mm512_add_ps(one, e)), vu);
		_mm512_mask_storeu_ps(h + j, k, _mm512_mul_ps(W, v));
	}
	return 0;
}
