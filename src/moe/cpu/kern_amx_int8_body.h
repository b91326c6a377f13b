/* kern_amx_int8_body: the AMX int8 kernels of the 4-bit formats (W4A8 on TDPBSSD), written once
 * against a tile API that kern_amx_int8.c maps to the AMX instructions and kern_amx_int8_emu.c to
 * C code with the same semantics (CI has no AMX). The rest is AVX-512 (both files are built for
 * avx512vnni and up). Include after defining:
 *   TI_CFG(c)          load the tile configuration c (struct ti_cfg, palette 1)
 *   TI_ZERO(t), TI_LOAD(t, p, s), TI_STORE(t, p, s)   as _tile_zero, _tile_loadd, _tile_stored
 *   TI_DP(c, a, b)     tile c (int32) += tile a (int8) . tile b (int8 quads), TDPBSSD
 *   TI_RELEASE()
 *   TI_ROWS_NV, TI_ROWS_DS, TI_ROWS_Q4, TI_ROWS_MX   the four functions' names
 *
 * The activations are the W4A8 VNNI tier's (kern_avx512vnni.c: int8, symmetric, one scale per
 * 16 elements, q4_0 and mxfp4_triton per 32), prepared by its prep functions, and fewer than
 * amx_i8_min_nb (the knob) tokens run its kernels unchanged. A scale block's products are summed
 * exactly in int32 by the tiles, then scaled in fp32: the sums equal the VNNI kernels' but for
 * the order of the fp32 additions.
 *
 * Row formats (nvfp4, ds_fp4, q4_0): weights are tile A (16 rows x one scale block of K: 16
 * bytes for nvfp4 and ds_fp4, whose activation blocks are 16 wide, 32 for q4_0), expanded to
 * int8 exactly (e2m1 x 2: {0, 1, 2, 3, 4, 6, 8, 12} and negatives; q4_0: code - 8) into a buffer
 * of 16 rows x I8_KC. The tokens, 16 at a time, are tile B (the block's K/4 quads x 16 tokens),
 * repacked from the VNNI layout once per call (per chunk of K and I8_SP rows where K > I8_KC). Within a block the
 * elements are in the VNNI layout's order (nvfp4 / ds_fp4: the 8 even elements, then the 8
 * odd), the same on both sides. Each block's 16 x 16 int32 sums go through memory to fp32
 * accumulators, one vector of 16 tokens per row: acc += float(C) * (token scales * row scale).
 * nvfp4's e4m3 scales are decoded by bit placement (x 2^-120), its activation scales carry
 * 2^120, as in the VNNI kernel. Rows past the last block of 16 run the VNNI kernel. (The
 * tokens as tile A instead, C tokens x 16 rows, so that tile work, C stores and scaling scale
 * with the tokens, was as fast or slower on the H200 box at 1-32 tokens: the transpose of every
 * panel's codes into tile B costs what it saves; so was a step of four blocks, four C tiles
 * stored together, against this one of two; bench/RESULTS.md, "CPU MoE executor".)
 *
 * mxfp4_triton (split along K): the tokens are tile A (16 tokens x one scale block, 32 k), the
 * weights tile B: a pair of bank rows holds the 4 k of a column's quad, so the VNNI kernel's
 * unpack sequence gives the B rows directly (four sets of 16 columns per 64-column strip, in
 * its permuted order, undone at the end as there). Block by block in memory order as the VNNI
 * kernel walks them; the fp32 partials are in tmp. */

#define I8_KC 1024 /* K elements expanded (A) and repacked (B) at once */
#define I8_SP 64   /* rows per super-panel: B is repacked once per super-panel and K chunk */
#define AI static inline __attribute__((always_inline))

enum { I8_NV, I8_DS, I8_Q4 };

struct ti_cfg {
	uint8_t palette, start_row, rsvd[14];
	uint16_t colsb[16];
	uint8_t rows[16];
};

/* 16 x 16 dwords transposed in place: r[i] lane j -> r[j] lane i */
AI void tr16(__m512i *r)
{
	__m512i t[16];
	FTKERN_UNROLL
	for (int i = 0; i < 8; i++) {
		t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
		t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
	}
	FTKERN_UNROLL
	for (int i = 0; i < 4; i++) { /* u[4i + c] lane L: column 4L + c of rows 4i .. 4i + 3 */
		r[4 * i] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
		r[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
		r[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
		r[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
	}
	FTKERN_UNROLL
	for (int c = 0; c < 4; c++) {
		t[c] = _mm512_shuffle_i32x4(r[c], r[4 + c], 0x88);       /* lanes 0, 2 of rows 0-7 */
		t[4 + c] = _mm512_shuffle_i32x4(r[c], r[4 + c], 0xDD);   /* lanes 1, 3 */
		t[8 + c] = _mm512_shuffle_i32x4(r[8 + c], r[12 + c], 0x88);
		t[12 + c] = _mm512_shuffle_i32x4(r[8 + c], r[12 + c], 0xDD);
	}
	FTKERN_UNROLL
	for (int c = 0; c < 4; c++) {
		r[c] = _mm512_shuffle_i32x4(t[c], t[8 + c], 0x88);
		r[8 + c] = _mm512_shuffle_i32x4(t[c], t[8 + c], 0xDD);
		r[4 + c] = _mm512_shuffle_i32x4(t[4 + c], t[12 + c], 0x88);
		r[12 + c] = _mm512_shuffle_i32x4(t[4 + c], t[12 + c], 0xDD);
	}
}

/* The qword order that puts the VNNI layout's two halves (xa | xb, or the low | high nibble
 * codes) of elements 0-63 (h = 0) or 64-127 (h = 1) of a group into whole blocks. */
AI __m512i blk_idx(int h, const int F)
{
	if (F == I8_Q4) /* blocks of 32: xa holds elements 0-15 of each, xb 16-31 */
		return h ? _mm512_setr_epi64(4, 5, 12, 13, 6, 7, 14, 15) : _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11);
	/* blocks of 16: 8 even elements (xa / low nibbles) then 8 odd */
	return h ? _mm512_setr_epi64(4, 12, 5, 13, 6, 14, 7, 15) : _mm512_setr_epi64(0, 8, 1, 9, 2, 10, 3, 11);
}

/* Tile B of tokens x[0..gn) (zeros past gn), elements [kc, kc + kn) of K: bt rows of 64 bytes,
 * quad q of the chunk at row q; their scales sxt[block of the chunk][token]. */
AI void i8_repack(const uint8_t *const *x, int gn, long kc, long kn, int8_t *bt, float (*sxt)[16], const int F)
{
	const int BS = F == I8_Q4 ? 32 : 16;
	for (long k = 0; k < kn; k += 128) {
		long gi = (kc + k) / 128 * 256;
		int halves = kn - k >= 128 ? 2 : 1;
		__m512i s[16];
		for (int h = 0; h < halves; h++) {
			__m512i v[16];
			const __m512i idx = blk_idx(h, F);
			FTKERN_UNROLL
			for (int n = 0; n < 16; n++)
				v[n] = n < gn ? _mm512_permutex2var_epi64(_mm512_load_si512(x[n] + gi), idx,
									 _mm512_load_si512(x[n] + gi + 64))
					      : _mm512_setzero_si512();
			tr16(v);
			FTKERN_UNROLL
			for (int q = 0; q < 16; q++)
				_mm512_store_si512(bt + (k / 4 + 16 * h + q) * 64, v[q]);
		}
		FTKERN_UNROLL
		for (int n = 0; n < 16; n++)
			s[n] = n < gn ? _mm512_load_si512(x[n] + gi + 192) : _mm512_setzero_si512();
		tr16(s); /* s[l]: lane l's scale of every token */
		int nblk = (int)((halves * 64) / BS), step = F == I8_Q4 ? 4 : 2;
		for (int j = 0; j < nblk; j++)
			_mm512_store_si512(sxt[k / BS + j], s[step * j]);
	}
}

/* Tile A rows: weight rows r .. r+15, elements [kc, kc + kn), expanded into ab (row stride
 * I8_KC), each block's weight scale into swf[row][block of the chunk]. */
AI void i8_expand(const struct ftkern_mat *m, long r, long kc, long kn, int8_t *ab, float (*swf)[I8_KC / 16],
		  const int F)
{
	const long K = m->K;
	if (F == I8_Q4) {
		const __m128i m15 = _mm_set1_epi8(15), eight = _mm_set1_epi8(8);
		for (int i = 0; i < 16; i++) {
			const uint8_t *blk = m->w + (r + i) * (K / 32) * 18 + kc / 32 * 18;
			int8_t *a = ab + (long)i * I8_KC;
			for (long b = 0; b < kn / 32; b++, blk += 18) {
				__m128i v = _mm_loadu_si128((const __m128i *)(blk + 2));
				_mm_store_si128((__m128i *)(a + 32 * b), _mm_sub_epi8(_mm_and_si128(v, m15), eight));
				_mm_store_si128((__m128i *)(a + 32 * b + 16),
						_mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(v, 4), m15), eight));
				swf[i][b] = _cvtsh_ss(ftkern_ld16(blk));
			}
		}
		return;
	}
	const __m512i lut = _mm512_broadcast_i32x4(_mm_setr_epi8(0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12));
	const __m512i m15 = _mm512_set1_epi8(15);
	const __m512i idx0 = blk_idx(0, F), idx1 = blk_idx(1, F);
	for (int i = 0; i < 16; i++) {
		const uint8_t *p = m->w + (r + i) * (K / 2) + kc / 2;
		int8_t *a = ab + (long)i * I8_KC;
		for (long k = 0; k < kn; k += 128) {
			int whole = kn - k >= 128;
			__m512i v = whole ? _mm512_loadu_si512(p + k / 2) : _mm512_maskz_loadu_epi8(0xFFFFFFFFull, p + k / 2);
			__m512i lo = _mm512_shuffle_epi8(lut, _mm512_and_si512(v, m15));
			__m512i hi = _mm512_shuffle_epi8(lut, _mm512_and_si512(_mm512_srli_epi16(v, 4), m15));
			_mm512_store_si512(a + k, _mm512_permutex2var_epi64(lo, idx0, hi));
			if (whole)
				_mm512_store_si512(a + k + 64, _mm512_permutex2var_epi64(lo, idx1, hi));
		}
		/* the scales of the chunk's 16-element blocks */
		if (F == I8_NV) { /* e4m3 by bit placement: e4m3 * 2^-120 */
			const uint8_t *s = m->s + (r + i) * (K / 16) + kc / 16;
			for (long b = 0; b < kn / 16; b += 16) {
				long n = kn / 16 - b;
				__m512i t = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(n >= 16 ? 0xFFFF : (__mmask16)((1u << n) - 1), s + b));
				t = _mm512_srai_epi32(_mm512_slli_epi32(t, 24), 4);
				_mm512_storeu_ps(&swf[i][b], _mm512_castsi512_ps(_mm512_and_si512(t, _mm512_set1_epi32((int)0x87F00000u))));
			}
		} else { /* e8m0, one per two blocks: 2^(e - 127) by bit placement */
			const uint8_t *s = m->s + (r + i) * (K / 32) + kc / 32;
			const __m512i dup = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
			for (long b = 0; b < kn / 32; b += 8) {
				long n = kn / 32 - b;
				__m512i t = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(n >= 8 ? 0xFF : (__mmask16)((1u << n) - 1), s + b));
				t = _mm512_permutexvar_epi32(dup, _mm512_slli_epi32(t, 23));
				_mm512_storeu_ps(&swf[i][2 * b], _mm512_castsi512_ps(t));
			}
		}
	}
}

/* One block's int32 sums c (16 rows x 16 tokens) into acc: float(c) * (token scales * row's) */
AI void i8_post(const int32_t (*c)[16], __m512 sx, const float (*swf)[I8_KC / 16], long j, __m512 *acc)
{
	FTKERN_UNROLL
	for (int i = 0; i < 16; i++) {
		__m512 d = _mm512_cvtepi32_ps(_mm512_load_si512(c[i]));
		acc[i] = _mm512_fmadd_ps(d, _mm512_mul_ps(sx, _mm512_set1_ps(swf[i][j])), acc[i]);
	}
}

static void i8_fallback(const struct ftkern_mat *m, long r0, long r1, int nb, const void *const *xs,
			float *const *ys, enum ftfmt_id f)
{
	ftkern_avx512vnni(f)->rows(m, r0, r1, nb, xs, ys);
}

AI void i8_rows(const struct ftkern_mat *m, long r0, long r1, int nb, const void *const *xs, float *const *ys,
		const int F)
{
	const enum ftfmt_id fid = F == I8_NV ? FTFMT_NVFP4 : F == I8_DS ? FTFMT_DS_FP4 : FTFMT_Q4_0;
	if (nb < ftkern_knobs_of(m)->amx_i8_min_nb || r1 - r0 < 16) {
		i8_fallback(m, r0, r1, nb, xs, ys, fid);
		return;
	}
	const int BS = F == I8_Q4 ? 32 : 16;
	const long K = m->K;
	const uint8_t *const *x = (const uint8_t *const *)xs;
	const int ng = (nb + 15) / 16;
	_Alignas(64) int8_t bt[2][I8_KC * 16];
	_Alignas(64) float sxt[2][I8_KC / 16][16];
	_Alignas(64) int8_t ab[16 * I8_KC];
	_Alignas(64) float swf[16][I8_KC / 16];
	_Alignas(64) int32_t cb[2][16][16];
	_Alignas(64) float accm[I8_SP / 16][2][16][16];
	/* A: 16 rows x one block; B: its quads x the tokens; C: 16 rows x the tokens (one group:
	 * as many as there are, so that B and C move no padding; two: 16 each) */
	const uint16_t tcol = (uint16_t)(4 * (nb < 16 ? nb : 16));
	struct ti_cfg cfg = {.palette = 1};
	for (int t = 0; t < 4; t += 2) {
		cfg.rows[t] = 16, cfg.colsb[t] = (uint16_t)BS;
		cfg.rows[t + 1] = (uint8_t)(BS / 4), cfg.colsb[t + 1] = tcol;
		cfg.rows[t + 4] = 16, cfg.colsb[t + 4] = tcol;
	}
	memset(cb, 0, sizeof cb); /* the lanes past the tokens stay 0 */
	TI_CFG(&cfg);
	const long full = r0 + (r1 - r0) / 16 * 16;
	for (long rs = r0; rs < full; rs += I8_SP) {
		long re = rs + I8_SP < full ? rs + I8_SP : full;
		for (long kc = 0; kc < K; kc += I8_KC) {
			long kn = K - kc < I8_KC ? K - kc : I8_KC, nblk = kn / BS;
			int last = kc + kn >= K;
			for (int g = 0; g < ng && (rs == r0 || K > I8_KC); g++) /* once per call when K <= I8_KC */
				i8_repack(x + 16 * g, nb - 16 * g < 16 ? nb - 16 * g : 16, kc, kn, bt[g], sxt[g], F);
			for (long r = rs; r < re; r += 16) {
				i8_expand(m, r, kc, kn, ab, swf, F);
				for (int g = 0; g < ng; g++) {
					float (*am)[16] = accm[(r - rs) / 16][g];
					__m512 acc[16];
					FTKERN_UNROLL
					for (int i = 0; i < 16; i++)
						acc[i] = kc ? _mm512_load_ps(am[i]) : _mm512_setzero_ps();
					for (long j = 0; j < nblk; j += 2) { /* nblk is even (K % 64 == 0) */
						TI_LOAD(0, ab + j * BS, I8_KC);
						TI_LOAD(1, bt[g] + j * BS * 16, 64);
						TI_ZERO(4);
						TI_DP(4, 0, 1);
						TI_LOAD(2, ab + (j + 1) * BS, I8_KC);
						TI_LOAD(3, bt[g] + (j + 1) * BS * 16, 64);
						TI_ZERO(6);
						TI_DP(6, 2, 3);
						TI_STORE(4, cb[0], 64);
						TI_STORE(6, cb[1], 64);
						i8_post((const int32_t (*)[16])cb[0], _mm512_load_ps(sxt[g][j]), (const float (*)[I8_KC / 16])swf, j, acc);
						i8_post((const int32_t (*)[16])cb[1], _mm512_load_ps(sxt[g][j + 1]), (const float (*)[I8_KC / 16])swf, j + 1, acc);
					}
					if (!last) {
						FTKERN_UNROLL
						for (int i = 0; i < 16; i++)
							_mm512_store_ps(am[i], acc[i]);
						continue;
					}
					/* the row's own factor, then one vector of 16 rows per token */
					__m512i o[16];
					FTKERN_UNROLL
					for (int i = 0; i < 16; i++) {
						float post = F == I8_NV ? 0.5f * _cvtsh_ss(ftkern_ld16(m->g + 2 * (r + i)))
							     : F == I8_DS ? 0.5f : 1.0f;
						o[i] = _mm512_castps_si512(_mm512_mul_ps(acc[i], _mm512_set1_ps(post)));
					}
					tr16(o);
					for (int n = 0; n < 16 && 16 * g + n < nb; n++)
						_mm512_storeu_si512(ys[16 * g + n] + (r - r0), o[n]);
				}
			}
		}
	}
	TI_RELEASE();
	if (full < r1) { /* the last rows, fewer than 16 */
		float *yo[FTKERN_MAX_NB];
		for (int n = 0; n < nb; n++)
			yo[n] = ys[n] + (full - r0);
		i8_fallback(m, full, r1, nb, xs, yo, fid);
	}
}

static void TI_ROWS_NV(const struct ftkern_mat *m, long r0, long r1, int nb, const void *const *xs, float *const *ys)
{
	i8_rows(m, r0, r1, nb, xs, ys, I8_NV);
}
static void TI_ROWS_DS(const struct ftkern_mat *m, long r0, long r1, int nb, const void *const *xs, float *const *ys)
{
	i8_rows(m, r0, r1, nb, xs, ys, I8_DS);
}
static void TI_ROWS_Q4(const struct ftkern_mat *m, long r0, long r1, int nb, const void *const *xs, float *const *ys)
{
	i8_rows(m, r0, r1, nb, xs, ys, I8_Q4);
}

/* ---- mxfp4_triton split along K. Prepared activations (the VNNI tier's): int8 q[K] | int16
 * pair sums [K/2] | float block scale / 2 [K/32]. */

/* tokens x[0..gn) of scale block kb: tile A rows (32 bytes each; zeros past gn), their scales */
AI void mx_tok(const int8_t *const *x, int gn, long K, long kb, int8_t (*at)[32], float *sx)
{
	for (int n = 0; n < 16; n++) {
		if (n < gn) {
			_mm256_store_si256((__m256i *)at[n], _mm256_loadu_si256((const __m256i *)(x[n] + 32 * kb)));
			sx[n] = ((const float *)((const uint8_t *)x[n] + 2 * K))[kb];
		} else {
			_mm256_store_si256((__m256i *)at[n], _mm256_setzero_si256());
			sx[n] = 0;
		}
	}
}

/* One C tile's sums (16 tokens x 16 columns of set j) into the tokens' partials at tb[n] */
AI void mx_post(const int32_t (*c)[16], __m512 sv, const float *sx, int gn, float *const *tb, int j)
{
	for (int n = 0; n < gn; n++) {
		float *t = tb[n] + 16 * j;
		__m512 d = _mm512_cvtepi32_ps(_mm512_load_si512(c[n]));
		_mm512_storeu_ps(t, _mm512_fmadd_ps(d, _mm512_mul_ps(sv, _mm512_set1_ps(sx[n])), _mm512_loadu_ps(t)));
	}
}

static void TI_ROWS_MX(const struct ftkern_mat *m, long kk0, long kk1, int nb, const void *const *xs,
		       float *const *ps, float *tmp)
{
	const long N = m->N, K = m->K;
	if (nb < ftkern_knobs_of(m)->amx_i8_min_nb || kk0 % 16 || kk1 % 16 || N % 64) {
		ftkern_avx512vnni(FTFMT_MXFP4_TRITON)->rows_t(m, kk0, kk1, nb, xs, ps, tmp);
		return;
	}
	const __m512i lut = _mm512_broadcast_i32x4(_mm_setr_epi8(0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12));
	const __m512i nib = _mm512_set1_epi16(0x0F0F), emask = _mm512_set1_epi32(0x7F800000);
	const int8_t *x[FTKERN_MAX_NB];
	float *t[FTKERN_MAX_NB];
	for (int b = 0; b < nb; b++) {
		x[b] = xs[b];
		t[b] = tmp + (size_t)b * (size_t)N;
		memset(t[b], 0, sizeof(float) * (size_t)N);
	}
	const int ng = (nb + 15) / 16, gn1 = nb > 16 ? nb - 16 : 0;
	_Alignas(64) int8_t at[2][16][32];
	_Alignas(64) float sx[2][16];
	_Alignas(64) int8_t bb[4][8][64];
	_Alignas(64) int32_t cb[4][16][16];
	/* A: the tokens (one group: as many as there are; two: 16 each) x 32 k; B: 8 quads x 16
	 * columns; C: the tokens x 16 columns */
	const uint8_t trow = (uint8_t)(nb < 16 ? nb : 16);
	struct ti_cfg cfg = {.palette = 1};
	cfg.rows[0] = cfg.rows[3] = trow, cfg.colsb[0] = cfg.colsb[3] = 32;
	cfg.rows[1] = cfg.rows[2] = 8, cfg.colsb[1] = cfg.colsb[2] = 64;
	for (int i = 4; i < 8; i++)
		cfg.rows[i] = trow, cfg.colsb[i] = 64;
	TI_CFG(&cfg);
	const long pd = ftkern_knobs_of(m)->mx_pf_dist, rows_total = K / 2;
	for (long kb = kk0 / 16; kb < kk1 / 16; kb++) {
		mx_tok(x, nb < 16 ? nb : 16, K, kb, at[0], sx[0]);
		TI_LOAD(0, at[0], 32);
		if (ng > 1) {
			mx_tok(x + 16, gn1, K, kb, at[1], sx[1]);
			TI_LOAD(3, at[1], 32);
		}
		const uint8_t *w = m->w + kb * 16 * N, *sc = m->s + kb * N;
		for (long c = 0; c < N; c += 64) {
			{ /* every row of the block pd bytes ahead, wrapping to the next block's rows */
				long off = c + pd, ra = kb * 16, rb = ra + 16;
				if (off >= N) {
					off -= N;
					ra += 16;
					rb = rb + 16 < kk1 ? rb + 16 : kk1;
					rb = rb < rows_total ? rb : rows_total;
				}
				const char *q = (const char *)m->w + ra * N + off;
				for (long r = ra; r < rb; r++, q += N)
					_mm_prefetch(q, _MM_HINT_T0);
			}
			FTKERN_UNROLL
			for (int p = 0; p < 8; p++) { /* bank rows 2p, 2p + 1: quad p of every column */
				__m512i v0 = _mm512_loadu_si512(w + 2 * p * N + c), v1 = _mm512_loadu_si512(w + (2 * p + 1) * N + c);
				__m512i wlo = _mm512_unpacklo_epi8(v0, v1), whi = _mm512_unpackhi_epi8(v0, v1);
				__m512i l0 = _mm512_and_si512(wlo, nib), h0 = _mm512_and_si512(_mm512_srli_epi16(wlo, 4), nib);
				__m512i l1 = _mm512_and_si512(whi, nib), h1 = _mm512_and_si512(_mm512_srli_epi16(whi, 4), nib);
				_mm512_store_si512(bb[0][p], _mm512_shuffle_epi8(lut, _mm512_unpacklo_epi8(l0, h0)));
				_mm512_store_si512(bb[1][p], _mm512_shuffle_epi8(lut, _mm512_unpackhi_epi8(l0, h0)));
				_mm512_store_si512(bb[2][p], _mm512_shuffle_epi8(lut, _mm512_unpacklo_epi8(l1, h1)));
				_mm512_store_si512(bb[3][p], _mm512_shuffle_epi8(lut, _mm512_unpackhi_epi8(l1, h1)));
			}
			__m512i s = _mm512_loadu_si512(sc + c);
			__m512i slo = _mm512_unpacklo_epi8(s, s), shi = _mm512_unpackhi_epi8(s, s);
			__m512 sv[4];
			sv[0] = _mm512_castsi512_ps(_mm512_and_si512(_mm512_srli_epi32(_mm512_unpacklo_epi16(slo, slo), 1), emask));
			sv[1] = _mm512_castsi512_ps(_mm512_and_si512(_mm512_srli_epi32(_mm512_unpackhi_epi16(slo, slo), 1), emask));
			sv[2] = _mm512_castsi512_ps(_mm512_and_si512(_mm512_srli_epi32(_mm512_unpacklo_epi16(shi, shi), 1), emask));
			sv[3] = _mm512_castsi512_ps(_mm512_and_si512(_mm512_srli_epi32(_mm512_unpackhi_epi16(shi, shi), 1), emask));
			float *tb[FTKERN_MAX_NB];
			for (int b = 0; b < nb; b++)
				tb[b] = t[b] + c;
			for (int g = 0; g < ng; g++) {
				TI_LOAD(1, bb[0], 64);
				TI_LOAD(2, bb[1], 64);
				TI_ZERO(4);
				TI_ZERO(5);
				if (g) {
					TI_DP(4, 3, 1);
					TI_DP(5, 3, 2);
				} else {
					TI_DP(4, 0, 1);
					TI_DP(5, 0, 2);
				}
				TI_LOAD(1, bb[2], 64);
				TI_LOAD(2, bb[3], 64);
				TI_ZERO(6);
				TI_ZERO(7);
				if (g) {
					TI_DP(6, 3, 1);
					TI_DP(7, 3, 2);
				} else {
					TI_DP(6, 0, 1);
					TI_DP(7, 0, 2);
				}
				TI_STORE(4, cb[0], 64);
				TI_STORE(5, cb[1], 64);
				TI_STORE(6, cb[2], 64);
				TI_STORE(7, cb[3], 64);
				int gn = g ? gn1 : (nb < 16 ? nb : 16);
				FTKERN_UNROLL
				for (int j = 0; j < 4; j++)
					mx_post((const int32_t (*)[16])cb[j], sv[j], sx[g], gn, tb + 16 * g, j);
			}
		}
	}
	TI_RELEASE();
	ftkern_mx_unstrip_add(t, ps, nb, N); /* the strip order undone, as the VNNI kernel (kern.h) */
}
#undef AI
