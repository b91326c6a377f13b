/* kern_mx_body: the mxfp4_triton K split of the W4A8 VNNI tier (kern_avx512vnni.c, which
 * describes the layouts), written once for its two weight decodes. Include after defining:
 *   MX_VBMI    0: the shuffle decode (AVX-512 BW + VNNI); 1: the VBMI decode (compile this copy
 *              with the avx512vbmi target)
 *   MX_PAIR, MX_BLOCK, MX_ROWS_T   the names of this copy's functions
 *
 * The two decodes give every column the same int32 sums (the same products, exact), and the
 * same fp32 operations in the same order after them, so their outputs are bit for bit equal;
 * they differ in where a strip's columns sit in the four accumulator vectors:
 *   shuffle: vector j, 128-bit lane L = columns 16L + 4j .. 16L + 4j + 3. Per 128 weight bytes
 *            (a pair of bank rows, 64 columns): vpunpck{l,h}bw of the two rows (a 16-bit word
 *            per column), the nibbles split (and / shift-and), vpunpck{l,h}bw again (a 32-bit
 *            lane [lo r0, hi r0, lo r1, hi r1] per column), one vpshufb per 16 columns: 10
 *            shuffles and 6 logic ops.
 *   vbmi:    vector j, 32-bit lane d = column 4d + j. The two rows' 16-bit halves of each
 *            32-bit lane are put side by side with a shift and a word blend (Y: columns 4d and
 *            4d + 1, Y2: 4d + 2 and 4d + 3, 4 nibbles each), one vpmultishiftqb per 16 columns
 *            moves each nibble into its byte of the lane, and one vpermb maps it to 2*e2m1 + 12
 *            (it reads the low 6 bits of the byte, the 16-entry table repeated 4 times, so the
 *            neighbouring nibble left in bits 4-7 does not need masking): 8 shuffles and 4
 *            logic ops (2 of them shifts, the port the shuffles leave free).
 * The order is undone once per call when tmp is added into ps. */

/* Bank rows kp (ok0) and kp + 1 (ok1) of one 64-column strip at q0 (a row missing from the
 * range reads as zero codes with zero activations), tokens x[0..NB), into acc. */
AI void MX_PAIR(const uint8_t *q0, long N, const int8_t *const *x, long kp, __m512i (*acc)[4], const int ok0,
		const int ok1, const int NB)
{
	const __m512i lut = _mm512_broadcast_i32x4(_mm_setr_epi8(12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0));
	__m512i v0 = ok0 ? _mm512_loadu_si512(q0) : _mm512_setzero_si512();
	__m512i v1 = ok1 ? _mm512_loadu_si512(q0 + N) : _mm512_setzero_si512();
	__m512i w[4];
#if MX_VBMI
	/* bit offsets in a 64-bit lane of Y of the nibbles k0 k1 k2 k3 of its first column of each
	 * 32-bit half (A) and of its second (B) */
	const __m512i ca = _mm512_set1_epi64(0x3430242014100400LL), cb = _mm512_set1_epi64(0x3C382C281C180C08LL);
	__m512i y = _mm512_mask_blend_epi16(0xAAAAAAAAu, v0, _mm512_slli_epi32(v1, 16));
	__m512i y2 = _mm512_mask_blend_epi16(0xAAAAAAAAu, _mm512_srli_epi32(v0, 16), v1);
	w[0] = _mm512_permutexvar_epi8(_mm512_multishift_epi64_epi8(ca, y), lut);
	w[1] = _mm512_permutexvar_epi8(_mm512_multishift_epi64_epi8(cb, y), lut);
	w[2] = _mm512_permutexvar_epi8(_mm512_multishift_epi64_epi8(ca, y2), lut);
	w[3] = _mm512_permutexvar_epi8(_mm512_multishift_epi64_epi8(cb, y2), lut);
#else
	const __m512i nib = _mm512_set1_epi16(0x0F0F);
	__m512i wlo = _mm512_unpacklo_epi8(v0, v1), whi = _mm512_unpackhi_epi8(v0, v1);
	__m512i l0 = _mm512_and_si512(wlo, nib), h0 = _mm512_and_si512(_mm512_srli_epi16(wlo, 4), nib);
	__m512i l1 = _mm512_and_si512(whi, nib), h1 = _mm512_and_si512(_mm512_srli_epi16(whi, 4), nib);
	w[0] = _mm512_shuffle_epi8(lut, _mm512_unpacklo_epi8(l0, h0));
	w[1] = _mm512_shuffle_epi8(lut, _mm512_unpackhi_epi8(l0, h0));
	w[2] = _mm512_shuffle_epi8(lut, _mm512_unpacklo_epi8(l1, h1));
	w[3] = _mm512_shuffle_epi8(lut, _mm512_unpackhi_epi8(l1, h1));
#endif
	FTKERN_UNROLL
	for (int b = 0; b < NB; b++) {
		uint32_t quad;
		memcpy(&quad, x[b] + 2 * kp, 4);
		quad &= (ok0 ? 0x0000FFFFu : 0) | (ok1 ? 0xFFFF0000u : 0);
		__m512i xq = _mm512_set1_epi32((int)quad);
		FTKERN_UNROLL
		for (int j = 0; j < 4; j++)
			acc[b][j] = _mm512_dpbusd_epi32(acc[b][j], w[j], xq);
	}
}

/* Bank rows [ra, rb) of scale block kb (all inside it), tokens x[0..NB), into t[b] (permuted). */
AI void MX_BLOCK(const struct ftkern_mat *m, long ra, long rb, long kb, long kk1, const int8_t *const *x, const int *corr, const float *xsc, float *const *t, const int NB)
{
	const __m512i emask = _mm512_set1_epi32(0x7F800000);
	const struct ftkern_knobs *kn = ftkern_knobs_of(m);
	long N = m->N, rows_total = m->K / 2, pd = kn->mx_pf_dist;
	int psc = kn->pf_scales;
	const uint8_t *w = m->w, *sc = m->s + kb * N;
	long p0 = ra & ~1L;
	for (long c = 0; c < N; c += MX_STRIP) {
		{
			/* every row of the block mx_pf_dist (the knob) bytes ahead (wrapping to the next
			 * block's rows, those inside the range and the matrix) */
			long off = c + pd, r0 = p0, r1 = rb;
			if (off >= N) {
				off -= N;
				r0 += 16;
				r1 = rb + 16 < kk1 ? rb + 16 : kk1;
				r1 = r1 < rows_total ? r1 : rows_total;
			}
			const char *q = (const char *)w + r0 * N + off;
			for (long r = r0; r < r1; r++, q += N)
				_mm_prefetch(q, _MM_HINT_T0);
			/* and the block's scale row (one byte per column, the next block's when
			 * wrapped): a stream of 1/16 of the weights' bytes */
			if (psc && r1 > r0)
				_mm_prefetch((const char *)sc + (r0 > p0 ? N : 0) + off, _MM_HINT_T0);
		}
		__m512i acc[FTKERN_TILE][4];
		FTKERN_UNROLL
		for (int b = 0; b < NB; b++)
			FTKERN_UNROLL
			for (int j = 0; j < 4; j++)
				acc[b][j] = _mm512_setzero_si512();
		long kp = p0;
		if (kp < ra) /* ra odd: the pair's first row is outside the range */
			MX_PAIR(w + kp * N + c, N, x, kp, acc, 0, kp + 1 < rb, NB);
		else if (kp + 1 >= rb) /* one row */
			MX_PAIR(w + kp * N + c, N, x, kp, acc, 1, 0, NB);
		if (kp < ra || kp + 1 >= rb)
			kp += 2;
		for (; kp + 1 < rb; kp += 2)
			MX_PAIR(w + kp * N + c, N, x, kp, acc, 1, 1, NB);
		if (kp < rb) /* rb odd */
			MX_PAIR(w + kp * N + c, N, x, kp, acc, 1, 0, NB);
		/* the columns' e8m0 scales as fp32 (the byte into the exponent field), in the
		 * accumulators' column order */
		__m512i s = _mm512_loadu_si512(sc + c);
		__m512 sv[4];
#if MX_VBMI
		sv[0] = _mm512_castsi512_ps(_mm512_and_si512(_mm512_srli_epi32(_mm512_slli_epi32(s, 24), 1), emask));
		sv[1] = _mm512_castsi512_ps(_mm512_and_si512(_mm512_srli_epi32(_mm512_slli_epi32(s, 16), 1), emask));
		sv[2] = _mm512_castsi512_ps(_mm512_and_si512(_mm512_srli_epi32(_mm512_slli_epi32(s, 8), 1), emask));
		sv[3] = _mm512_castsi512_ps(_mm512_and_si512(_mm512_srli_epi32(s, 1), emask));
#else
		__m512i slo = _mm512_unpacklo_epi8(s, s), shi = _mm512_unpackhi_epi8(s, s);
		sv[0] = _mm512_castsi512_ps(_mm512_and_si512(_mm512_srli_epi32(_mm512_unpacklo_epi16(slo, slo), 1), emask));
		sv[1] = _mm512_castsi512_ps(_mm512_and_si512(_mm512_srli_epi32(_mm512_unpackhi_epi16(slo, slo), 1), emask));
		sv[2] = _mm512_castsi512_ps(_mm512_and_si512(_mm512_srli_epi32(_mm512_unpacklo_epi16(shi, shi), 1), emask));
		sv[3] = _mm512_castsi512_ps(_mm512_and_si512(_mm512_srli_epi32(_mm512_unpackhi_epi16(shi, shi), 1), emask));
#endif
		FTKERN_UNROLL
		for (int b = 0; b < NB; b++) {
			__m512i vc = _mm512_set1_epi32(corr[b]);
			__m512 vx = _mm512_set1_ps(xsc[b]);
			float *tb = t[b] + c;
			FTKERN_UNROLL
			for (int j = 0; j < 4; j++) {
				__m512 d = _mm512_cvtepi32_ps(_mm512_add_epi32(acc[b][j], vc));
				_mm512_storeu_ps(tb + 16 * j, _mm512_fmadd_ps(d, _mm512_mul_ps(sv[j], vx), _mm512_loadu_ps(tb + 16 * j)));
			}
		}
	}
}

static void MX_ROWS_T(const struct ftkern_mat *m, long kk0, long kk1, int nb, const void *const *xs,
		      float *const *ps, float *tmp)
{
	long N = m->N, K = m->K;
	const int8_t *x[FTKERN_MAX_NB];
	float *t[FTKERN_MAX_NB];
	for (int b = 0; b < nb; b++) {
		x[b] = xs[b];
		t[b] = tmp + (size_t)b * (size_t)N;
		memset(t[b], 0, sizeof(float) * (size_t)N);
	}
	/* the range's scale blocks in memory order */
	for (long kb = kk0 / 16, kb1 = (kk1 + 15) / 16; kb < kb1; kb++) {
		long ra = kb * 16 > kk0 ? kb * 16 : kk0, rb = kb * 16 + 16 < kk1 ? kb * 16 + 16 : kk1;
		int corr[FTKERN_MAX_NB];
		float xsc[FTKERN_MAX_NB];
		for (int b = 0; b < nb; b++) {
			const int16_t *s2 = (const int16_t *)((const uint8_t *)x[b] + K);
			int cs = 0;
			for (long kk = ra; kk < rb; kk++)
				cs += s2[kk];
			corr[b] = -12 * cs;
			xsc[b] = ((const float *)((const uint8_t *)x[b] + 2 * K))[kb];
		}
		FTKERN_FOR_TILES(nb, b0, MX_BLOCK(m, ra, rb, kb, kk1, x + b0, corr + b0, xsc + b0, t + b0, FTKERN_NB));
	}
#if MX_VBMI
	/* undo the strip order: element d of vector j is column 4d + j (a 4 x 16 transpose, in
	 * two rounds of two-source permutes: rows 0-1 and 2-3 paired element by element, then
	 * the pairs of both put side by side) */
	const __m512i pair_lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
	const __m512i pair_hi = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
	const __m512i quad_lo = _mm512_setr_epi32(0, 1, 16, 17, 2, 3, 18, 19, 4, 5, 20, 21, 6, 7, 22, 23);
	const __m512i quad_hi = _mm512_setr_epi32(8, 9, 24, 25, 10, 11, 26, 27, 12, 13, 28, 29, 14, 15, 30, 31);
	for (int b = 0; b < nb; b++)
		for (long c = 0; c < N; c += MX_STRIP) {
			const float *src = t[b] + c;
			__m512 z0 = _mm512_loadu_ps(src), z1 = _mm512_loadu_ps(src + 16);
			__m512 z2 = _mm512_loadu_ps(src + 32), z3 = _mm512_loadu_ps(src + 48);
			__m512 p01l = _mm512_permutex2var_ps(z0, pair_lo, z1), p23l = _mm512_permutex2var_ps(z2, pair_lo, z3);
			__m512 p01h = _mm512_permutex2var_ps(z0, pair_hi, z1), p23h = _mm512_permutex2var_ps(z2, pair_hi, z3);
			float *dst = ps[b] + c; /* ps += */
			_mm512_storeu_ps(dst, _mm512_add_ps(_mm512_loadu_ps(dst), _mm512_permutex2var_ps(p01l, quad_lo, p23l)));
			_mm512_storeu_ps(dst + 16, _mm512_add_ps(_mm512_loadu_ps(dst + 16), _mm512_permutex2var_ps(p01l, quad_hi, p23l)));
			_mm512_storeu_ps(dst + 32, _mm512_add_ps(_mm512_loadu_ps(dst + 32), _mm512_permutex2var_ps(p01h, quad_lo, p23h)));
			_mm512_storeu_ps(dst + 48, _mm512_add_ps(_mm512_loadu_ps(dst + 48), _mm512_permutex2var_ps(p01h, quad_hi, p23h)));
		}
#else
	ftkern_mx_unstrip_add(t, ps, nb, N); /* the strip order undone (kern.h) */
#endif
}
