/* kern_mxt.h: the mxfp4_triton K-split driver (rows_t) shared by the AVX-512 kernel files
 * (internal). Include it after the file's
 *   AI void mxt_pair(const struct ftkern_mat *m, long kk, int two, const void *const *x,
 *                    float *const *t, const int NB)
 * which adds bank rows kk and kk + 1 (two = 0: kk only) of every column, times the prepared
 * activations x[b], into t[b][0..N) for NB tokens. The driver walks [kk0, kk1) by scale block
 * (16 bank rows): the block's sums collect in tmp and are added into ps times the column's
 * e8m0 scale when the block ends. Compiled with the including file's ISA flags. */
#ifndef FT_MOE_CPU_KERN_MXT_H
#define FT_MOE_CPU_KERN_MXT_H

static void ftkern_rows_t_mxfp4(const struct ftkern_mat *m, long kk0, long kk1, int nb, const void *const *x,
			 float *const *ps, float *tmp)
{
	long N = m->N;
	float *t[FTKERN_MAX_NB];
	for (int b = 0; b < nb; b++)
		t[b] = tmp + (size_t)b * (size_t)N;
	for (long kb = kk0 / 16; kb * 16 < kk1; kb++) {
		long ra = kb * 16 > kk0 ? kb * 16 : kk0, rb = kb * 16 + 16 < kk1 ? kb * 16 + 16 : kk1;
		for (int b = 0; b < nb; b++)
			memset(t[b], 0, sizeof(float) * (size_t)N);
		for (long kk = ra; kk < rb; kk += 2) {
			int two = kk + 1 < rb;
			FTKERN_FOR_TILES(nb, b0, mxt_pair(m, kk, two, x + b0, t + b0, FTKERN_NB));
		}
		const uint8_t *sc = m->s + kb * N;
		for (long c = 0; c < N; c += 16) {
			__mmask16 mk = N - c >= 16 ? 0xFFFF : (__mmask16)((1u << (N - c)) - 1);
			__m512 s = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(mk, sc + c)), 23));
			for (int b = 0; b < nb; b++)
				_mm512_mask_storeu_ps(ps[b] + c, mk, _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mk, t[b] + c), s,
										_mm512_maskz_loadu_ps(mk, ps[b] + c)));
		}
	}
}
#endif
