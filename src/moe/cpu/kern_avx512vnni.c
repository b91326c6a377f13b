/* AVX-512 VNNI kernels: 4-bit formats as W4A8. Activations are quantized to int8 per
 * 16-element block (symmetric, scale amax/127); weights decode with one vpshufb to unsigned
 * bytes (nvfp4/ds_fp4: 2*e2m1 + 12; q4_0: the raw nibble), vpdpbusd sums 4 products per
 * 32-bit lane starting from the offset correction -off * sum(x_q) of that lane, and each lane
 * is scaled by (weight block scale) * (activation block scale) into an fp32 accumulator.
 *
 * Prepared activations, per 64-element group: int8 q[64] | int32 corr[16] | float xs[16]
 * (xs: the lane's activation scale, times 2^120 for nvfp4 whose e4m3 scales are decoded by
 * bit placement as e4m3 * 2^-120). mxfp4_triton and bf16 have none here (avx512 is used). */
#include <immintrin.h>

#include "moe/cpu/kern.h"

#define AI static inline __attribute__((always_inline))
#define TILE 4
#define GROUP_BYTES 192

enum { F_NV, F_DS, F_Q4 };

static size_t xbytes(long K)
{
	return (size_t)(K / 64) * GROUP_BYTES;
}

AI void prep(const float *x, long K, void *dst, int off, float mult)
{
	uint8_t *g = dst;
	const __m512i ones = _mm512_set1_epi8(1);
	for (long k = 0; k < K; k += 64, g += GROUP_BYTES) {
		__m128i q[4];
		__m512 xs = _mm512_setzero_ps();
		FTK_UNROLL
		for (int j = 0; j < 4; j++) {
			__m512 v = _mm512_loadu_ps(x + k + 16 * j);
			float amax = _mm512_reduce_max_ps(_mm512_abs_ps(v));
			float d = amax / 127.0f, inv = amax > 0 ? 127.0f / amax : 0.0f;
			__m512i qi = _mm512_cvtps_epi32(_mm512_mul_ps(v, _mm512_set1_ps(inv)));
			q[j] = _mm512_cvtsepi32_epi8(qi);
			xs = _mm512_mask_mov_ps(xs, (__mmask16)(0xF << (4 * j)), _mm512_set1_ps(d * mult));
		}
		__m512i qq = _mm512_inserti32x4(_mm512_castsi128_si512(q[0]), q[1], 1);
		qq = _mm512_inserti32x4(qq, q[2], 2);
		qq = _mm512_inserti32x4(qq, q[3], 3);
		__m512i sum = _mm512_dpbusd_epi32(_mm512_setzero_si512(), ones, qq);
		_mm512_storeu_si512(g, qq);
		_mm512_storeu_si512(g + 64, _mm512_mullo_epi32(sum, _mm512_set1_epi32(-off)));
		_mm512_storeu_ps(g + 128, xs);
	}
}

static void prep_fp4(const float *x, long K, void *dst)
{
	prep(x, K, dst, 12, 1.0f);
}
static void prep_nv(const float *x, long K, void *dst)
{
	prep(x, K, dst, 12, 0x1p120f);
}
static void prep_q4(const float *x, long K, void *dst)
{
	prep(x, K, dst, 8, 1.0f);
}

AI __m512i codes64_pairs(const uint8_t *p)
{
	__m512i v = _mm512_cvtepu8_epi16(_mm256_loadu_si256((const __m256i *)p));
	return _mm512_ternarylogic_epi32(v, _mm512_slli_epi16(v, 4), _mm512_set1_epi16(0x0F0F), 0xA8);
}

AI __m512i codes64_q4(const uint8_t *blk)
{
	__m256i v = _mm256_loadu2_m128i((const __m128i *)(blk + 20), (const __m128i *)(blk + 2));
	__m256i m = _mm256_set1_epi8(15);
	__m256i lo = _mm256_and_si256(v, m), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m);
	__m512i z = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
	return _mm512_shuffle_i64x2(z, z, 0 | 2 << 2 | 1 << 4 | 3 << 6);
}

AI void vnni_row(const struct ftk_mat *m, long r, const uint8_t *const *x, float *const *y, long i,
		 const int NB, const int F)
{
	const __m512i lut = _mm512_broadcast_i32x4(_mm_setr_epi8(12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0));
	/* nvfp4: 128-bit lane L takes scale byte L into the top byte of each 32-bit lane */
	const __m512i nvsel = _mm512_set_epi32(0x03808080, 0x03808080, 0x03808080, 0x03808080,
					       0x02808080, 0x02808080, 0x02808080, 0x02808080,
					       0x01808080, 0x01808080, 0x01808080, 0x01808080,
					       0x00808080, 0x00808080, 0x00808080, 0x00808080);
	const __m512i dssel = _mm512_set_epi32(0x01808080, 0x01808080, 0x01808080, 0x01808080,
					       0x01808080, 0x01808080, 0x01808080, 0x01808080,
					       0x00808080, 0x00808080, 0x00808080, 0x00808080,
					       0x00808080, 0x00808080, 0x00808080, 0x00808080);
	__m512 acc[TILE];
	FTK_UNROLL
	for (int b = 0; b < NB; b++)
		acc[b] = _mm512_setzero_ps();
	const uint8_t *row, *sc = NULL;
	if (F == F_Q4) {
		row = m->w + r * (m->K / 32) * 18;
	} else {
		row = m->w + r * (m->K / 2);
		sc = m->s + r * (m->K / (F == F_NV ? 16 : 32));
	}
	for (long k = 0, gi = 0; k < m->K; k += 64, gi += GROUP_BYTES) {
		__m512i wq;
		__m512 sw;
		if (F == F_Q4) {
			const uint8_t *blk = row + (k / 32) * 18;
			wq = codes64_q4(blk);
			sw = _mm512_mask_blend_ps(0xFF00, _mm512_set1_ps(_cvtsh_ss(ftk_ld16(blk))),
						  _mm512_set1_ps(_cvtsh_ss(ftk_ld16(blk + 18))));
		} else {
			wq = _mm512_shuffle_epi8(lut, codes64_pairs(row + k / 2));
			if (F == F_NV) {
				uint32_t s4;
				memcpy(&s4, sc + k / 16, 4);
				__m512i t = _mm512_shuffle_epi8(_mm512_set1_epi32((int)s4), nvsel);
				sw = _mm512_castsi512_ps(_mm512_and_si512(_mm512_srai_epi32(t, 4),
									  _mm512_set1_epi32((int)0x87F00000u)));
			} else {
				uint16_t s2;
				memcpy(&s2, sc + k / 32, 2);
				__m512i t = _mm512_shuffle_epi8(_mm512_set1_epi16((short)s2), dssel);
				sw = _mm512_castsi512_ps(_mm512_srli_epi32(t, 1));
			}
		}
		FTK_UNROLL
		for (int b = 0; b < NB; b++) {
			const uint8_t *g = x[b] + gi;
			__m512i d = _mm512_dpbusd_epi32(_mm512_loadu_si512(g + 64), wq, _mm512_loadu_si512(g));
			acc[b] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d), _mm512_mul_ps(sw, _mm512_loadu_ps(g + 128)), acc[b]);
		}
	}
	float post = F == F_NV ? 0.5f * _cvtsh_ss(ftk_ld16(m->g + 2 * r)) : F == F_DS ? 0.5f : 1.0f;
	FTK_UNROLL
	for (int b = 0; b < NB; b++)
		y[b][i] = post * _mm512_reduce_add_ps(acc[b]);
}

AI void vnni_rows(const struct ftk_mat *m, long r0, long r1, int nb, const void *const *xs,
		  float *const *ys, const int F)
{
	const uint8_t *const *x = (const uint8_t *const *)xs;
	for (long r = r0; r < r1; r++)
		for (int b0 = 0; b0 < nb; b0 += TILE) {
			switch (nb - b0 >= TILE ? TILE : nb - b0) {
			case 1: vnni_row(m, r, x + b0, ys + b0, r - r0, 1, F); break;
			case 2: vnni_row(m, r, x + b0, ys + b0, r - r0, 2, F); break;
			case 3: vnni_row(m, r, x + b0, ys + b0, r - r0, 3, F); break;
			default: vnni_row(m, r, x + b0, ys + b0, r - r0, 4, F); break;
			}
		}
}

static void rows_nvfp4(const struct ftk_mat *m, long r0, long r1, int nb, const void *const *xs, float *const *ys)
{
	vnni_rows(m, r0, r1, nb, xs, ys, F_NV);
}
static void rows_dsfp4(const struct ftk_mat *m, long r0, long r1, int nb, const void *const *xs, float *const *ys)
{
	vnni_rows(m, r0, r1, nb, xs, ys, F_DS);
}
static void rows_q4_0(const struct ftk_mat *m, long r0, long r1, int nb, const void *const *xs, float *const *ys)
{
	vnni_rows(m, r0, r1, nb, xs, ys, F_Q4);
}

static const struct ftk_ops ops[] = {
	[FTFMT_NVFP4] = {"w4a8-vnni", xbytes, prep_nv, rows_nvfp4},
	[FTFMT_DS_FP4] = {"w4a8-vnni", xbytes, prep_fp4, rows_dsfp4},
	[FTFMT_Q4_0] = {"w4a8-vnni", xbytes, prep_q4, rows_q4_0},
};

const struct ftk_ops *ftk_avx512vnni(enum ftfmt_id f)
{
	return (unsigned)f < sizeof ops / sizeof ops[0] && ops[f].rows ? &ops[f] : NULL;
}
