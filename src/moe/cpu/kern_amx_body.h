/* kern_amx_body: the AMX bf16 row kernel, written once against a tile API that kern_amx.c maps to
 * the AMX instructions and kern_amx_emu.c to C code with the same semantics (CI has no AMX).
 * Include after defining:
 *   AMX_CFG()          configure tiles 0..2 as 16 rows x 64 bytes (palette 1)
 *   AMX_ZERO(t)        tile t = 0
 *   AMX_LOAD(t, p, s)  tile t = 16 rows of 64 bytes from p, s bytes apart
 *   AMX_DP(c, a, b)    tile c (16x16 fp32) += tile a (16 rows x 32 bf16) . tile b (16 pairs x 16
 *                      columns of bf16 pairs), TDPBF16PS
 *   AMX_STORE(t, p, s) 16 rows of 64 bytes of tile t to p, s bytes apart
 *   AMX_RELEASE()
 *   AMX_FNAME          the function's name
 *   AMX_FALLBACK       a rows function over the same prepared (bf16) activations, for the tail
 *                      rows and small batches
 * K is a multiple of 64 (the executor's KALIGN; the avx512bf16 fallback reads 64 at a time).
 * Rows are taken 16 at a time (tile 1: 16 weight rows x 32 k, read in place with the row
 * stride), the nb tokens 16 at a time (tile 2: their activations packed as k pairs x tokens,
 * VNNI order), sums in tile 0. Activations are packed once per call for K <= AMX_KC, else per
 * row block and K chunk. */
#define AMX_KC 2048 /* K elements packed at once (64 KiB on the stack) */

static void AMX_FNAME(const struct ftkern_mat *m, long r0, long r1, int nb, const void *const *xs,
		      float *const *ys)
{
	const long K = m->K;
	if (nb < FTKERN_AMX_MIN_NB || K % 32 || r1 - r0 < 16) {
		AMX_FALLBACK(m, r0, r1, nb, xs, ys);
		return;
	}
	const uint16_t *w = (const uint16_t *)m->w;
	_Alignas(64) uint32_t xt[AMX_KC / 2][16];
	_Alignas(64) float ct[16][16];
	long full = r0 + (r1 - r0) / 16 * 16;
	AMX_CFG();
	for (int g0 = 0; g0 < nb; g0 += 16) {
		const int gn = nb - g0 < 16 ? nb - g0 : 16;
		long packed = -1; /* K chunk in xt */
		for (long r = r0; r < full; r += 16) {
			AMX_ZERO(0);
			for (long kc = 0; kc < K; kc += AMX_KC) {
				long kn = K - kc < AMX_KC ? K - kc : AMX_KC;
				if (packed != kc) {
					for (long p = 0; p < kn / 2; p++)
						for (int n = 0; n < 16; n++)
							xt[p][n] = n < gn ? ((const uint32_t *)xs[g0 + n])[kc / 2 + p] : 0;
					packed = kc;
				}
				for (long k = 0; k < kn; k += 32) {
					AMX_LOAD(1, w + r * K + kc + k, K * 2);
					AMX_LOAD(2, &xt[k / 2][0], 64);
					AMX_DP(0, 1, 2);
				}
				if (K > AMX_KC)
					packed = -1; /* the next row block starts again at chunk 0 */
			}
			AMX_STORE(0, &ct[0][0], 64);
			for (int n = 0; n < gn; n++)
				for (int i = 0; i < 16; i++)
					ys[g0 + n][r - r0 + i] = ct[i][n];
		}
		if (full < r1) { /* the last rows, fewer than 16 */
			float *yo[16];
			for (int n = 0; n < gn; n++)
				yo[n] = ys[g0 + n] + (full - r0);
			AMX_FALLBACK(m, full, r1, gn, xs + g0, yo);
		}
	}
	AMX_RELEASE();
}
