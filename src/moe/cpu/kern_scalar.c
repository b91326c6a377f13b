/* Scalar kernels: portable C, one element at a time within each scale block. The reference
 * the vector tiers are tested against. */
#include "moe/cpu/kern.h"

static void rows_bf16(const struct ftkern_mat *m, long r0, long r1, int nb, const void *const *xs,
		      float *const *ys)
{
	const uint16_t *w = (const uint16_t *)m->w;
	for (long r = r0; r < r1; r++) {
		const uint16_t *row = w + r * m->K;
		for (int b = 0; b < nb; b++) {
			const float *x = xs[b];
			float acc = 0;
			for (long k = 0; k < m->K; k++)
				acc += ftkern_bf16(row[k]) * x[k];
			ys[b][r - r0] = acc;
		}
	}
}

/* nvfp4 / ds_fp4: packed [N, K/2] low nibble first, scale per `bs` elements. */
static inline void rows_fp4(const struct ftkern_mat *m, long r0, long r1, int nb,
			    const void *const *xs, float *const *ys, int bs, int e4m3)
{
	for (long r = r0; r < r1; r++) {
		const uint8_t *row = m->w + r * (m->K / 2);
		const uint8_t *sc = m->s + r * (m->K / bs);
		float g = m->g ? ftkern_fp16(ftkern_ld16(m->g + 2 * r)) : 1.0f;
		for (int b = 0; b < nb; b++) {
			const float *x = xs[b];
			float acc = 0;
			for (long k0 = 0; k0 < m->K; k0 += bs) {
				float part = 0;
				for (long k = k0; k < k0 + bs; k += 2) {
					uint8_t c = row[k / 2];
					part += ftkern_e2m1[c & 15] * x[k] + ftkern_e2m1[c >> 4] * x[k + 1];
				}
				float s = e4m3 ? ftkern_e4m3(sc[k0 / bs]) : ftkern_e8m0(sc[k0 / bs]);
				acc += part * s;
			}
			ys[b][r - r0] = acc * g;
		}
	}
}

static void ftkern_rows_nvfp4(const struct ftkern_mat *m, long r0, long r1, int nb, const void *const *xs,
		       float *const *ys)
{
	rows_fp4(m, r0, r1, nb, xs, ys, 16, 1);
}

static void ftkern_rows_dsfp4(const struct ftkern_mat *m, long r0, long r1, int nb, const void *const *xs,
		       float *const *ys)
{
	rows_fp4(m, r0, r1, nb, xs, ys, 32, 0);
}

static void ftkern_rows_q4_0(const struct ftkern_mat *m, long r0, long r1, int nb, const void *const *xs,
		      float *const *ys)
{
	long nblk = m->K / 32;
	for (long r = r0; r < r1; r++) {
		const uint8_t *row = m->w + r * nblk * 18;
		for (int b = 0; b < nb; b++) {
			const float *x = xs[b];
			float acc = 0;
			for (long j = 0; j < nblk; j++) {
				const uint8_t *blk = row + j * 18;
				const float *xb = x + j * 32;
				float part = 0;
				for (int i = 0; i < 16; i++)
					part += (float)((blk[2 + i] & 15) - 8) * xb[i] +
						(float)((blk[2 + i] >> 4) - 8) * xb[i + 16];
				acc += part * ftkern_fp16(ftkern_ld16(blk));
			}
			ys[b][r - r0] = acc;
		}
	}
}

/* mxfp4_triton: blocks [K/2, N], scales [K/32, N] (e8m0): output r is a column. */
static void rows_mxfp4(const struct ftkern_mat *m, long r0, long r1, int nb, const void *const *xs,
		       float *const *ys)
{
	long N = m->N;
	for (long r = r0; r < r1; r++)
		for (int b = 0; b < nb; b++) {
			const float *x = xs[b];
			float acc = 0;
			for (long k0 = 0; k0 < m->K; k0 += 32) {
				float part = 0;
				for (long k = k0; k < k0 + 32; k += 2) {
					uint8_t c = m->w[(k / 2) * N + r];
					part += ftkern_e2m1[c & 15] * x[k] + ftkern_e2m1[c >> 4] * x[k + 1];
				}
				acc += part * ftkern_e8m0(m->s[(k0 / 32) * N + r]);
			}
			ys[b][r - r0] = acc;
		}
}

static const struct ftkern_ops ops[] = {
	[FTFMT_BF16] = {"w16a32-scalar", NULL, NULL, rows_bf16},
	[FTFMT_NVFP4] = {"w4a32-scalar", NULL, NULL, ftkern_rows_nvfp4},
	[FTFMT_DS_FP4] = {"w4a32-scalar", NULL, NULL, ftkern_rows_dsfp4},
	[FTFMT_Q4_0] = {"w4a32-scalar", NULL, NULL, ftkern_rows_q4_0},
	[FTFMT_MXFP4_TRITON] = {"w4a32-scalar", NULL, NULL, rows_mxfp4},
};

const struct ftkern_ops *ftkern_scalar(enum ftfmt_id f)
{
	return (unsigned)f < sizeof ops / sizeof ops[0] && (ops[f].rows || ops[f].rows_t) ? &ops[f] : NULL;
}
