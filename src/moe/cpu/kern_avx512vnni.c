/* AVX-512 VNNI kernels: 4-bit formats as W4A8, 128 elements per step.
 *
 * Weights decode without widening: the 64 code bytes of 128 elements split into their low and
 * high nibbles (two vectors of 64 bytes), one vpshufb each maps a nibble to an unsigned byte
 * (nvfp4/ds_fp4: 2*e2m1 + 12; q4_0: the raw nibble), and two vpdpbusd add 8 products per
 * 32-bit lane, starting from the lane's offset correction -off * sum(x_q). Each lane then gets
 * (weight block scale) * (activation block scale) into an fp32 accumulator. nvfp4 / ds_fp4 on
 * CPUs with AVX512_VBMI: one vpermb per nibble vector instead of an AND and a vpshufb (lut64).
 * Vector ops per 64 weight bytes and row at batch 1 (loads and prefetches apart, counted in the
 * compiled loops): nvfp4 14 -> 12 (nibbles 5 -> 3; scale 4: broadcast, vpshufb, shift, and; 2
 * vpdpbusd, convert, scale product, fma), ds_fp4 13 -> 11 (its scale 3), q4_0 11 (gather 1,
 * scales 2, nibbles 3, then the 5).
 *
 * Activations are quantized to int8 (symmetric, amax/127) per 16 elements (q4_0: per 32, its
 * block) and laid out to match the nibble vectors, per group of 128 elements:
 *   int8 xa[64] | int8 xb[64] | int32 corr[16] | float xs[16]           (256 bytes)
 *   nvfp4, ds_fp4: xa = the even elements, xb = the odd ones (low / high nibble of a byte);
 *                  lane l covers elements 8l .. 8l+7
 *   q4_0:          xa = elements 0-15 of each of the 4 blocks, xb = elements 16-31;
 *                  lane l covers block l/4
 * A last group of 64 elements (K % 128 == 64) is zero-padded. nvfp4's xs carry 2^120, since its
 * e4m3 scales are decoded by bit placement as e4m3 * 2^-120. */
#include <immintrin.h>

#include "moe/cpu/kern.h"

#define AI static inline __attribute__((always_inline))
#define GROUP 256

enum { F_NV, F_DS, F_Q4 };

static size_t xbytes(long K)
{
	return (size_t)((K + 127) / 128) * GROUP;
}

/* int8 of 16 values with scale amax/127; returns the scale */
AI __m128i quant16(const float *x, int n, float *d)
{
	__m512 v = _mm512_maskz_loadu_ps(n >= 16 ? 0xFFFF : (__mmask16)((1u << n) - 1), x);
	float amax = _mm512_reduce_max_ps(_mm512_abs_ps(v));
	*d = amax / 127.0f;
	__m512 inv = _mm512_set1_ps(amax > 0 ? 127.0f / amax : 0.0f);
	return _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(v, inv)));
}

AI void prep(const float *x, long K, void *dst, const int F)
{
	const __m512i ones = _mm512_set1_epi8(1);
	/* within each 128-bit lane: 8 even bytes then 8 odd bytes */
	const __m512i eo = _mm512_broadcast_i32x4(_mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15));
	uint8_t *g = dst;
	for (long k = 0; k < K; k += 128, g += GROUP) {
		int n = K - k >= 128 ? 128 : (int)(K - k);
		__m128i q[8];
		float d[8];
		if (F == F_Q4) { /* one scale per 32-element block */
			for (int j = 0; j < 4; j++) {
				int m = n - 32 * j;
				const float *p = x + k + 32 * j;
				__m512 v0 = _mm512_maskz_loadu_ps(m >= 16 ? 0xFFFF : m > 0 ? (__mmask16)((1u << m) - 1) : 0, p);
				__m512 v1 = _mm512_maskz_loadu_ps(m >= 32 ? 0xFFFF : m > 16 ? (__mmask16)((1u << (m - 16)) - 1) : 0, p + 16);
				float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(v0), _mm512_abs_ps(v1)));
				__m512 inv = _mm512_set1_ps(amax > 0 ? 127.0f / amax : 0.0f);
				q[2 * j] = _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(v0, inv)));
				q[2 * j + 1] = _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(v1, inv)));
				d[2 * j] = d[2 * j + 1] = amax / 127.0f;
			}
		} else {
			for (int j = 0; j < 8; j++) {
				int m = n - 16 * j;
				if (m > 0) {
					q[j] = quant16(x + k + 16 * j, m, &d[j]);
				} else {
					q[j] = _mm_setzero_si128();
					d[j] = 0;
				}
			}
		}
		__m512i A = _mm512_inserti32x4(_mm512_castsi128_si512(q[0]), q[1], 1);
		A = _mm512_inserti32x4(_mm512_inserti32x4(A, q[2], 2), q[3], 3);
		__m512i B = _mm512_inserti32x4(_mm512_castsi128_si512(q[4]), q[5], 1);
		B = _mm512_inserti32x4(_mm512_inserti32x4(B, q[6], 2), q[7], 3);
		__m512i xa, xb;
		__m512 xs;
		float mult = F == F_NV ? 0x1p120f : 1.0f;
		if (F == F_Q4) {
			xa = _mm512_permutex2var_epi64(A, _mm512_setr_epi64(0, 1, 4, 5, 8, 9, 12, 13), B);
			xb = _mm512_permutex2var_epi64(A, _mm512_setr_epi64(2, 3, 6, 7, 10, 11, 14, 15), B);
			xs = _mm512_setr_ps(d[0], d[0], d[0], d[0], d[2], d[2], d[2], d[2], d[4], d[4], d[4], d[4],
					    d[6], d[6], d[6], d[6]);
		} else {
			A = _mm512_shuffle_epi8(A, eo); /* qwords: e0 o0 e1 o1 e2 o2 e3 o3 */
			B = _mm512_shuffle_epi8(B, eo);
			xa = _mm512_permutex2var_epi64(A, _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14), B);
			xb = _mm512_permutex2var_epi64(A, _mm512_setr_epi64(1, 3, 5, 7, 9, 11, 13, 15), B);
			xs = _mm512_setr_ps(d[0], d[0], d[1], d[1], d[2], d[2], d[3], d[3], d[4], d[4], d[5], d[5],
					    d[6], d[6], d[7], d[7]);
		}
		__m512i sum = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), ones, xa), ones, xb);
		_mm512_storeu_si512(g, xa);
		_mm512_storeu_si512(g + 64, xb);
		_mm512_storeu_si512(g + 128, _mm512_mullo_epi32(sum, _mm512_set1_epi32(F == F_Q4 ? -8 : -12)));
		_mm512_storeu_ps(g + 192, _mm512_mul_ps(xs, _mm512_set1_ps(mult)));
	}
}

static void prep_nv(const float *x, long K, void *dst) { prep(x, K, dst, F_NV); }
static void prep_ds(const float *x, long K, void *dst) { prep(x, K, dst, F_DS); }
static void prep_q4(const float *x, long K, void *dst) { prep(x, K, dst, F_Q4); }

/* vpermb (AVX512_VBMI) by inline assembly, so that the file builds for every AVX-512 VNNI CPU
 * (Cascade Lake has no VBMI); only called where ftkern_vbmi says the CPU has it. Byte i of the
 * result is t[idx[i] & 63]. */
AI __m512i vpermb(__m512i idx, __m512i t)
{
	__m512i r;
	__asm__("vpermb %2, %1, %0" : "=v"(r) : "v"(idx), "v"(t));
	return r;
}

/* The nibble LUT of vnni_dec repeated four times: vpermb reads 6 bits of each index byte, so a
 * code byte indexes it by its low nibble as it is, without the AND that vpshufb needs (which
 * reads bit 7), and a byte of a 16-bit shift right by 4 by its high nibble (bits 4-5 of that
 * byte, the next byte's low bits, select among equal copies). */
AI __m512i lut64(void)
{
	static const _Alignas(64) int8_t t[64] = {
		12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0, 12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0,
		12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0, 12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0};
	return _mm512_load_si512(t);
}

/* Decode group k (128 elements) of one row: wa, wb the biased unsigned codes of the low / high
 * nibbles, sw the weight scale of each 32-bit lane. */
AI void vnni_dec(const uint8_t *row, const uint8_t *sc, long k, const int full, long pd, long pf, int psc,
		 __m512i *wa, __m512i *wb, __m512 *sw, const int F, const int V)
{
	const __m512i lut = _mm512_broadcast_i32x4(_mm_setr_epi8(12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0));
	const __m512i m15 = _mm512_set1_epi8(15);
	/* nvfp4: lanes 2m, 2m+1 take scale byte m into their top byte; ds_fp4: lanes 4m..4m+3 */
	const __m512i nvsel = _mm512_setr_epi32(0x00808080, 0x00808080, 0x01808080, 0x01808080,
						0x02808080, 0x02808080, 0x03808080, 0x03808080,
						0x04808080, 0x04808080, 0x05808080, 0x05808080,
						0x06808080, 0x06808080, 0x07808080, 0x07808080);
	const __m512i dssel = _mm512_setr_epi32(0x00808080, 0x00808080, 0x00808080, 0x00808080,
						0x01808080, 0x01808080, 0x01808080, 0x01808080,
						0x02808080, 0x02808080, 0x02808080, 0x02808080,
						0x03808080, 0x03808080, 0x03808080, 0x03808080);
	if (F == F_Q4) {
		const uint8_t *blk = row + (k / 32) * 18;
		if (pd) {
			_mm_prefetch((const char *)blk + pd, _MM_HINT_T0);
			_mm_prefetch((const char *)blk + pd + 64, _MM_HINT_T0);
		}
		if (pf) { /* 72-byte steps: two lines, so that none is skipped */
			_mm_prefetch((const char *)blk + pf, _MM_HINT_T1);
			_mm_prefetch((const char *)blk + pf + 64, _MM_HINT_T1);
		}
		/* the group's 64 nibble bytes, gathered by words (they start at even offsets 18 b + 2)
		 * from its first 64 bytes (a) and its last 64 (b: group words 32..35 are b's 28..31),
		 * and its four fp16 d (offsets 18 b), each into the 4 lanes of its block; one
		 * vpermt2w and one vpermw in place of 4 loads, 3 inserts and a scalar assembly of
		 * the d (bench/RESULTS.md) */
		static const _Alignas(64) uint16_t gw[32] = {1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 12, 13, 14, 15, 16, 17,
							     19, 20, 21, 22, 23, 24, 25, 26, 28, 29, 30, 31, 60, 61, 62, 63};
		static const _Alignas(64) uint16_t sw4[32] = {0, 0, 0, 0, 9, 9, 9, 9, 18, 18, 18, 18, 27, 27, 27, 27};
		const __m512i gidx = _mm512_load_si512(gw), sidx = _mm512_load_si512(sw4);
		__m512i a, b;
		if (full) {
			a = _mm512_loadu_si512(blk);
			b = _mm512_loadu_si512(blk + 8);
		} else { /* two blocks, 36 bytes: nothing read past them */
			a = _mm512_maskz_loadu_epi8(0xFFFFFFFFFull, blk);
			b = _mm512_setzero_si512();
		}
		__m512i v = _mm512_permutex2var_epi16(a, gidx, b);
		*sw = _mm512_cvtph_ps(_mm512_castsi512_si256(_mm512_permutexvar_epi16(sidx, a)));
		*wa = _mm512_and_si512(v, m15);
		*wb = _mm512_and_si512(_mm512_srli_epi16(v, 4), m15);
	} else {
		const uint8_t *p = row + k / 2;
		if (pd)
			_mm_prefetch((const char *)p + pd, _MM_HINT_T0);
		if (pf)
			_mm_prefetch((const char *)p + pf, _MM_HINT_T1);
		__m512i v = full ? _mm512_loadu_si512(p)
				 : _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)p));
		if (!full)
			v = _mm512_inserti64x4(v, _mm256_setzero_si256(), 1);
		if (V) {
			*wa = vpermb(v, lut64());
			*wb = vpermb(_mm512_srli_epi16(v, 4), lut64());
		} else {
			*wa = _mm512_shuffle_epi8(lut, _mm512_and_si512(v, m15));
			*wb = _mm512_shuffle_epi8(lut, _mm512_and_si512(_mm512_srli_epi16(v, 4), m15));
		}
		if (F == F_NV) {
			const uint8_t *s = sc + k / 16;
			if (psc) { /* the scale stream at 1/8 the weights' rate: once per line */
				if (((uintptr_t)s & 63) < 8) {
					if (pd)
						_mm_prefetch((const char *)s + pd / 8, _MM_HINT_T0);
					if (pf)
						_mm_prefetch((const char *)s + pf / 8, _MM_HINT_T1);
				}
			} else if (pd) {
				_mm_prefetch((const char *)s + pd / 8, _MM_HINT_T0);
			}
			uint64_t s8 = 0;
			if (full) /* constant sizes: one load, no byte loop */
				memcpy(&s8, s, 8);
			else
				memcpy(&s8, s, 4);
			__m512i t = _mm512_shuffle_epi8(_mm512_set1_epi64((long long)s8), nvsel);
			*sw = _mm512_castsi512_ps(_mm512_and_si512(_mm512_srai_epi32(t, 4),
								   _mm512_set1_epi32((int)0x87F00000u)));
		} else {
			const uint8_t *s = sc + k / 32;
			if (psc && ((uintptr_t)s & 63) < 4) { /* 1/16 the weights' rate */
				if (pd)
					_mm_prefetch((const char *)s + pd / 16, _MM_HINT_T0);
				if (pf)
					_mm_prefetch((const char *)s + pf / 16, _MM_HINT_T1);
			}
			uint32_t s4 = 0;
			if (full)
				memcpy(&s4, s, 4);
			else
				memcpy(&s4, s, 2);
			__m512i t = _mm512_shuffle_epi8(_mm512_set1_epi32((int)s4), dssel);
			*sw = _mm512_castsi512_ps(_mm512_srli_epi32(t, 1));
		}
	}
}

/* One group (128 elements; full 0: the zero-padded last 64) of R rows into acc[j][b]. */
AI void vnni_step(const uint8_t *const *row, const uint8_t *const *sc, long k, long gi, long pd, long pf,
		  int psc, const uint8_t *const *x, __m512 (*acc)[FTKERN_TILE], const int full, const int NB,
		  const int F, const int R, const int V)
{
	__m512i wa[4], wb[4];
	__m512 sw[4];
	FTKERN_UNROLL
	for (int j = 0; j < R; j++)
		vnni_dec(row[j], sc[j], k, full, pd, pf, psc, &wa[j], &wb[j], &sw[j], F, V);
	FTKERN_UNROLL
	for (int b = 0; b < NB; b++) {
		const uint8_t *g = x[b] + gi;
		__m512i c = _mm512_load_si512(g + 128), xa = _mm512_load_si512(g), xb = _mm512_load_si512(g + 64);
		__m512 xsc = _mm512_load_ps(g + 192);
		FTKERN_UNROLL
		for (int j = 0; j < R; j++) {
			__m512i d = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(c, wa[j], xa), wb[j], xb);
			acc[j][b] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d), _mm512_mul_ps(sw[j], xsc), acc[j][b]);
		}
	}
}

/* R rows rr[0..R) times NB tokens, row j's sums into y[b][ij[j]]. */
AI void vnni_row(const struct ftkern_mat *m, const long *rr, const uint8_t *const *x, float *const *y,
		 const long *ij, const int NB, const int F, const int R, const int V)
{
	__m512 acc[2][FTKERN_TILE];
	FTKERN_UNROLL
	for (int j = 0; j < R; j++)
		FTKERN_UNROLL
		for (int b = 0; b < NB; b++)
			acc[j][b] = _mm512_setzero_ps();
	const struct ftkern_knobs *kn = ftkern_knobs_of(m);
	long K = m->K, pd = kn->pf_dist, pf = kn->pf_far, k = 0, gi = 0;
	int psc = kn->pf_scales;
	const uint8_t *row[2], *sc[2] = {NULL, NULL};
	FTKERN_UNROLL
	for (int j = 0; j < R; j++) {
		if (F == F_Q4) {
			row[j] = m->w + rr[j] * (K / 32) * 18;
		} else {
			row[j] = m->w + rr[j] * (K / 2);
			sc[j] = m->s + rr[j] * (K / (F == F_NV ? 16 : 32));
		}
		/* nvfp4's fp16 global of the row 32 rows ahead (a line of them per 32 rows) */
		if (F == F_NV && psc && !((rr[j] + 32) & 31))
			_mm_prefetch((const char *)(m->g + 2 * (rr[j] + 32)), _MM_HINT_T0);
	}
	for (; k + 128 <= K; k += 128, gi += GROUP)
		vnni_step(row, sc, k, gi, pd, pf, psc, x, acc, 1, NB, F, R, V);
	if (k < K)
		vnni_step(row, sc, k, gi, pd, pf, psc, x, acc, 0, NB, F, R, V);
	FTKERN_UNROLL
	for (int j = 0; j < R; j++) {
		float post = F == F_NV ? 0.5f * _cvtsh_ss(ftkern_ld16(m->g + 2 * rr[j])) : F == F_DS ? 0.5f : 1.0f;
		FTKERN_UNROLL
		for (int b = 0; b < NB; b++)
			y[b][ij[j]] = post * _mm512_reduce_add_ps(acc[j][b]);
	}
}

AI void vnni_tiles(const struct ftkern_mat *m, const long *rr, int nb, const uint8_t *const *x,
		   float *const *ys, const long *ij, const int F, const int R, const int V)
{
	FTKERN_FOR_TILES(nb, b0, vnni_row(m, rr, x + b0, ys + b0, ij, FTKERN_NB, F, R, V));
}

/* The sums of four accumulators, in the order of _mm512_reduce_add_ps (GCC: 256-bit halves,
 * 128-bit halves, 64-bit halves, then the pair), so that a row sums bit-identically to
 * vnni_row's: 11 shuffles and adds for the four instead of four separate reductions. */
AI __m128 hsum4(__m512 a0, __m512 a1, __m512 a2, __m512 a3)
{
	__m512 t01 = _mm512_add_ps(_mm512_shuffle_f32x4(a0, a1, _MM_SHUFFLE(3, 2, 3, 2)),
				   _mm512_shuffle_f32x4(a0, a1, _MM_SHUFFLE(1, 0, 1, 0)));
	__m512 t23 = _mm512_add_ps(_mm512_shuffle_f32x4(a2, a3, _MM_SHUFFLE(3, 2, 3, 2)),
				   _mm512_shuffle_f32x4(a2, a3, _MM_SHUFFLE(1, 0, 1, 0)));
	/* 128-bit lane j: row j's 256-bit halves added; then its 128-bit halves */
	__m512 u = _mm512_add_ps(_mm512_shuffle_f32x4(t01, t23, _MM_SHUFFLE(3, 1, 3, 1)),
				 _mm512_shuffle_f32x4(t01, t23, _MM_SHUFFLE(2, 0, 2, 0)));
	u = _mm512_add_ps(u, _mm512_permute_ps(u, 0x4E));
	u = _mm512_add_ps(u, _mm512_permute_ps(u, 0xB1));
	return _mm512_castps512_ps128(_mm512_permutexvar_ps(_mm512_setr_epi32(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), u));
}

/* Batch 1, four consecutive rows r .. r+3 (every format): per group the token's activation is
 * loaded once for the four rows, the four rows' decode and sums are independent chains, and the
 * four sums are reduced together (at qwen3-30b's K = 768 a row is only 6 groups, and a row's own
 * reduction and setup were a large part of its work). Each row prefetches its own stream pd
 * (near) and pf (far) bytes ahead, whole blocks of four rows (vnni_rows), and its scale stream
 * (nvfp4, ds_fp4: pd / 8 and pf / 16 there are the same whole blocks of the scale rows), as
 * vnni_row does. Sums bit-identical to vnni_row's. nvfp4 and ds_fp4 on the H200 box
 * (bench/RESULTS.md, "CPU MoE executor"): +4.5 and +5.3 points of the read ceiling against a row at a time. */
AI void vnni_row4(const struct ftkern_mat *m, long r, long pd, long pf, const uint8_t *x, float *y, const int F,
		  const int V)
{
	long K = m->K, k = 0, gi = 0;
	long rb = F == F_Q4 ? (K / 32) * 18 : K / 2, sb = F == F_Q4 ? 0 : K / (F == F_NV ? 16 : 32);
	int psc = F == F_Q4 ? 0 : ftkern_knobs_of(m)->pf_scales;
	const uint8_t *row[4], *sc[4] = {NULL, NULL, NULL, NULL};
	for (int j = 0; j < 4; j++) {
		row[j] = m->w + (r + j) * rb;
		if (F != F_Q4)
			sc[j] = m->s + (r + j) * sb;
		if (F == F_NV && psc && !((r + j + 32) & 31)) /* as vnni_row */
			_mm_prefetch((const char *)(m->g + 2 * (r + j + 32)), _MM_HINT_T0);
	}
	__m512 acc[4][FTKERN_TILE];
	for (int j = 0; j < 4; j++)
		acc[j][0] = _mm512_setzero_ps();
	for (; k + 128 <= K; k += 128, gi += GROUP)
		vnni_step(row, sc, k, gi, pd, pf, psc, &x, acc, 1, 1, F, 4, V);
	if (k < K)
		vnni_step(row, sc, k, gi, pd, pf, psc, &x, acc, 0, 1, F, 4, V);
	__m128 s = hsum4(acc[0][0], acc[1][0], acc[2][0], acc[3][0]);
	if (F == F_NV) {
		__m128 g = _mm_cvtph_ps(_mm_loadl_epi64((const __m128i *)(m->g + 2 * r)));
		s = _mm_mul_ps(s, _mm_mul_ps(g, _mm_set1_ps(0.5f)));
	} else if (F == F_DS) {
		s = _mm_mul_ps(s, _mm_set1_ps(0.5f));
	}
	_mm_storeu_ps(y, s);
}

/* One row at a time, one stream; batch 1: blocks of four rows (vnni_row4), the last 0-3 rows
 * alone. In blocks every byte is prefetched the same lead before its use: the same offset m blocks
 * ahead in its row, m = the prefetch distance in blocks, rounded, at least 1, the far one's at
 * least one more than the near one's (a plain distance from each row would land in a row of
 * this block, or in one read at another time; one linear stream over the block lagged its
 * last rows). */
AI void vnni_rows(const struct ftkern_mat *m, long r0, long r1, int nb, const void *const *xs,
		  float *const *ys, const int F, const int V)
{
	const uint8_t *const *x = (const uint8_t *const *)xs;
	float *y1[1];
	if (nb == 1) {
		long blk = 4 * (F == F_Q4 ? (m->K / 32) * 18 : m->K / 2);
		const struct ftkern_knobs *kn = ftkern_knobs_of(m);
		long nd = (kn->pf_dist + blk / 2) / blk, nf = (kn->pf_far + blk / 2) / blk;
		nd = nd < 1 ? 1 : nd;
		nf = nf <= nd ? nd + 1 : nf;
		long pd = kn->pf_dist ? nd * blk : 0, pf = kn->pf_far ? nf * blk : 0, i = 0;
		for (; i + 4 <= r1 - r0; i += 4)
			vnni_row4(m, r0 + i, pd, pf, x[0], ys[0] + i, F, V);
		r0 += i;
		y1[0] = ys[0] + i;
		ys = y1;
	}
	for (long i = 0; i < r1 - r0; i++) {
		long rr[1] = {r0 + i}, ij[1] = {i};
		vnni_tiles(m, rr, nb, x, ys, ij, F, 1, V);
	}
}

static void ftkern_rows_nvfp4(const struct ftkern_mat *m, long r0, long r1, int nb, const void *const *xs, float *const *ys)
{
	if (ftkern_vbmi > 0)
		vnni_rows(m, r0, r1, nb, xs, ys, F_NV, 1);
	else
		vnni_rows(m, r0, r1, nb, xs, ys, F_NV, 0);
}
static void ftkern_rows_dsfp4(const struct ftkern_mat *m, long r0, long r1, int nb, const void *const *xs, float *const *ys)
{
	if (ftkern_vbmi > 0)
		vnni_rows(m, r0, r1, nb, xs, ys, F_DS, 1);
	else
		vnni_rows(m, r0, r1, nb, xs, ys, F_DS, 0);
}
static void ftkern_rows_q4_0(const struct ftkern_mat *m, long r0, long r1, int nb, const void *const *xs, float *const *ys)
{
	vnni_rows(m, r0, r1, nb, xs, ys, F_Q4, 0);
}

/* ---- mxfp4_triton split along K as W4A8 (rows_t). Bank rows 2m and 2m+1 hold k = 4m .. 4m+3
 * of every column (low nibble first), the four bytes one vpdpbusd lane takes. The kernel walks
 * one scale block (16 bank rows = 32 k) at a time, and inside it strips of 64 columns: for each
 * pair of rows, the two 64-byte pieces interleave (vpunpck{l,h}bw: a 16-bit word per column),
 * the nibbles split (and / shift-and) and interleave again (vpunpck{l,h}bw: a 32-bit lane
 * [lo r0, hi r0, lo r1, hi r1] per column), one vpshufb per 16 columns maps a nibble to
 * 2*e2m1 + 12, and one vpdpbusd per token adds 4 products per column into int32 accumulators
 * held in registers for the whole block. Per 128 weight bytes: 2 loads, 10 shuffles, 6 logic
 * ops, 4 vpdpbusd per token (the earlier form widened 16 columns per vpmovzxbd and kept its
 * int32 sums in memory); on CPUs with VBMI (and the mx_vbmi knob) a decode of 8 shuffles and 4 logic
 * ops instead (vpmultishiftqb and vpermb; kern_mx_body.h), the same sums. At the end of a block
 * each lane gets (e8m0 scale) * (activation scale) into fp32 partials in tmp; the decodes leave
 * columns in a fixed order within a strip, undone once per call when tmp is added into ps.
 * Prefetch: every row of the block mx_pf_dist (the knob) bytes ahead of its strip, wrapping to the
 * next block's rows.
 * Activations: int8 per 32-element block (mxfp4's scale block). Prepared layout: int8 q[K] |
 * int16 pair sums (q[2kk] + q[2kk+1]) [K/2] | float block scale / 2 [K/32]. */
#define MX_STRIP 64

static size_t mx_xbytes(long K)
{
	return (size_t)(2 * K + K / 8 + 63) / 64 * 64;
}

static void mx_prep(const float *x, long K, void *dst)
{
	int8_t *q = dst;
	int16_t *s2 = (int16_t *)((uint8_t *)dst + K);
	float *xs = (float *)((uint8_t *)dst + 2 * K);
	for (long k = 0; k < K; k += 32) {
		__m512 v0 = _mm512_loadu_ps(x + k), v1 = _mm512_loadu_ps(x + k + 16);
		float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(v0), _mm512_abs_ps(v1)));
		__m512 inv = _mm512_set1_ps(amax > 0 ? 127.0f / amax : 0.0f);
		__m128i q0 = _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(v0, inv)));
		__m128i q1 = _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(v1, inv)));
		__m256i q32 = _mm256_inserti128_si256(_mm256_castsi128_si256(q0), q1, 1);
		_mm256_storeu_si256((__m256i *)(q + k), q32);
		xs[k / 32] = 0.5f * amax / 127.0f; /* the LUT holds 2 * e2m1 */
		/* q[2i] + q[2i+1], 16 pair sums */
		_mm256_storeu_si256((__m256i *)(s2 + k / 2), _mm256_maddubs_epi16(_mm256_set1_epi8(1), q32));
	}
}

#define MX_VBMI 0
#define MX_PAIR mx_pair
#define MX_BLOCK mx_block
#define MX_ROWS_T mx_rows_t_shuf
#include "moe/cpu/kern_mx_body.h"
#undef MX_VBMI
#undef MX_PAIR
#undef MX_BLOCK
#undef MX_ROWS_T
/* this copy for CPUs with VBMI (dispatched at run time), the rest of the file without */
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512vbmi"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512vbmi")
#endif
#define MX_VBMI 1
#define MX_PAIR mx_pair_vbmi
#define MX_BLOCK mx_block_vbmi
#define MX_ROWS_T mx_rows_t_vbmi
#include "moe/cpu/kern_mx_body.h"
#undef MX_VBMI
#undef MX_PAIR
#undef MX_BLOCK
#undef MX_ROWS_T
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

/* The VBMI decode for one token where the CPU has it and the mx_vbmi knob asks for it (the
 * outputs are the same bit for bit). From 2 tokens the vpdpbusd of every token share its port
 * with the VBMI decode's shifts: in cache on the Zen 4 dev box one token ran 31.8 -> 37.0 GB/s,
 * 2 to 8 tokens 4-6 % slower. */
static void mx_rows_t(const struct ftkern_mat *m, long kk0, long kk1, int nb, const void *const *xs,
		      float *const *ps, float *tmp)
{
	if (nb == 1 && ftkern_knobs_of(m)->mx_vbmi && ftkern_vbmi > 0)
		mx_rows_t_vbmi(m, kk0, kk1, nb, xs, ps, tmp);
	else
		mx_rows_t_shuf(m, kk0, kk1, nb, xs, ps, tmp);
}

static const struct ftkern_ops ops[] = {
	[FTFMT_NVFP4] = {"w4a8-vnni", xbytes, prep_nv, ftkern_rows_nvfp4},
	[FTFMT_DS_FP4] = {"w4a8-vnni", xbytes, prep_ds, ftkern_rows_dsfp4},
	[FTFMT_Q4_0] = {"w4a8-vnni", xbytes, prep_q4, ftkern_rows_q4_0},
	[FTFMT_MXFP4_TRITON] = {"w4a8-vnni", mx_xbytes, mx_prep, NULL, mx_rows_t},
};

int ftkern_vbmi = -1;

const struct ftkern_ops *ftkern_avx512vnni(enum ftfmt_id f)
{
	if (ftkern_vbmi < 0)
		ftkern_vbmi = __builtin_cpu_supports("avx512vbmi") != 0;
	return (unsigned)f < sizeof ops / sizeof ops[0] && (ops[f].rows || ops[f].rows_t) ? &ops[f] : NULL;
}
