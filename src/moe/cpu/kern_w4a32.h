/* kern_w4a32.h: the 4-bit row-major W4A32 driver shared by the AVX2 and AVX-512 kernel files
 * (internal). Include it after the file's
 *   W4_VEC, W4_STEP      the fp32 vector type; elements per decode (4 vectors)
 *   W4_ZERO(), W4_FMA(a, b, c) = a * b + c, W4_LOAD(p) (unaligned fp32), W4_ADD(a, b), W4_SUM(v)
 *   AI void w4_decode(const struct ftkern_mat *m, long r, long k, W4_VEC w[4], long pd, const int F)
 *                        elements k .. k + W4_STEP - 1 of row r, each times its block scale
 *                        (pd: the pf_dist knob of this call, read once per row here)
 * and enum { F_NV, F_DS, F_Q4 }. Rows one at a time, tokens in tiles of up to FTKERN_TILE (the row
 * stays in L1 across tiles), four independent accumulators per token; nvfp4's per-row global
 * (and the 2 of the LUTs' 2 * e2m1) applied once per row. Compiled with the including file's
 * ISA flags. */
#ifndef FT_MOE_CPU_KERN_W4A32_H
#define FT_MOE_CPU_KERN_W4A32_H

AI void ftkern_w4_row(const struct ftkern_mat *m, long r, const float *const *x, float *const *y, long i,
	       const int NB, const int F)
{
	W4_VEC acc[FTKERN_TILE][4];
	FTKERN_UNROLL
	for (int b = 0; b < NB; b++)
		FTKERN_UNROLL
		for (int j = 0; j < 4; j++)
			acc[b][j] = W4_ZERO();
	const long pd = ftkern_knobs_of(m)->pf_dist;
	for (long k = 0; k < m->K; k += W4_STEP) {
		W4_VEC w[4];
		w4_decode(m, r, k, w, pd, F);
		FTKERN_UNROLL
		for (int b = 0; b < NB; b++)
			FTKERN_UNROLL
			for (int j = 0; j < 4; j++)
				acc[b][j] = W4_FMA(w[j], W4_LOAD(x[b] + k + W4_STEP / 4 * j), acc[b][j]);
	}
	float post = F == F_NV ? 0.5f * _cvtsh_ss(ftkern_ld16(m->g + 2 * r)) : F == F_DS ? 0.5f : 1.0f;
	FTKERN_UNROLL
	for (int b = 0; b < NB; b++)
		y[b][i] = post * W4_SUM(W4_ADD(W4_ADD(acc[b][0], acc[b][1]), W4_ADD(acc[b][2], acc[b][3])));
}

AI void ftkern_w4_rows(const struct ftkern_mat *m, long r0, long r1, int nb, const void *const *xs,
		float *const *ys, const int F)
{
	const float *const *x = (const float *const *)xs;
	for (long r = r0; r < r1; r++)
		FTKERN_FOR_TILES(nb, b0, ftkern_w4_row(m, r, x + b0, ys + b0, r - r0, FTKERN_NB, F));
}

static void ftkern_rows_nvfp4(const struct ftkern_mat *m, long r0, long r1, int nb, const void *const *xs, float *const *ys)
{
	ftkern_w4_rows(m, r0, r1, nb, xs, ys, F_NV);
}

static void ftkern_rows_dsfp4(const struct ftkern_mat *m, long r0, long r1, int nb, const void *const *xs, float *const *ys)
{
	ftkern_w4_rows(m, r0, r1, nb, xs, ys, F_DS);
}

static void ftkern_rows_q4_0(const struct ftkern_mat *m, long r0, long r1, int nb, const void *const *xs, float *const *ys)
{
	ftkern_w4_rows(m, r0, r1, nb, xs, ys, F_Q4);
}
#endif
