/* The AMX bf16 kernel (kern_amx_body.h) on tiles emulated in C, for CI machines without AMX:
 * the tests check it against the scalar tier as they check every tier. Tile semantics as the
 * instruction reference gives them (TDPBF16PS: per fp32 lane of C, the two bf16 products of a
 * pair added to it); C order of the additions, so sums may differ from the hardware's in the
 * last bits. Activations are prepared as bf16 rounded to nearest even, like the avx512bf16
 * tier. Not for speed. */
#include "moe/cpu/kern.h"

struct emu {
	uint8_t reg[3][16][64];
};
static _Thread_local struct emu E;

static float bf(uint16_t v)
{
	uint32_t u = (uint32_t)v << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}

static uint16_t to_bf16(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)(u >> 16 | 0x40); /* NaN stays NaN */
	return (uint16_t)((u + 0x7fffu + (u >> 16 & 1)) >> 16);
}

static void emu_load(int t, const void *p, long s)
{
	for (int r = 0; r < 16; r++)
		memcpy(E.reg[t][r], (const uint8_t *)p + r * s, 64);
}

static void emu_store(int t, void *p, long s)
{
	for (int r = 0; r < 16; r++)
		memcpy((uint8_t *)p + r * s, E.reg[t][r], 64);
}

static void emu_dp(int c, int a, int b)
{
	for (int m = 0; m < 16; m++)
		for (int n = 0; n < 16; n++) {
			float acc;
			memcpy(&acc, &E.reg[c][m][4 * n], 4);
			for (int p = 0; p < 16; p++) {
				uint16_t a0, a1, b0, b1;
				memcpy(&a0, &E.reg[a][m][4 * p], 2);
				memcpy(&a1, &E.reg[a][m][4 * p + 2], 2);
				memcpy(&b0, &E.reg[b][p][4 * n], 2);
				memcpy(&b1, &E.reg[b][p][4 * n + 2], 2);
				acc += bf(a0) * bf(b0) + bf(a1) * bf(b1);
			}
			memcpy(&E.reg[c][m][4 * n], &acc, 4);
		}
}

static size_t xbytes(long K)
{
	return (size_t)K * 2;
}

static void prep(const float *x, long K, void *dst)
{
	uint16_t *d = dst;
	for (long k = 0; k < K; k++)
		d[k] = to_bf16(x[k]);
}

/* The rows the tiles do not take: bf16 x bf16 dots in fp32. */
static void fallback(const struct ftkern_mat *m, long r0, long r1, int nb, const void *const *xs,
		     float *const *ys)
{
	const uint16_t *w = (const uint16_t *)m->w;
	for (int b = 0; b < nb; b++)
		for (long r = r0; r < r1; r++) {
			const uint16_t *x = xs[b];
			float s = 0;
			for (long k = 0; k < m->K; k++)
				s += bf(w[r * m->K + k]) * bf(x[k]);
			ys[b][r - r0] = s;
		}
}

#define AMX_CFG() ((void)0)
#define AMX_ZERO(t) memset(E.reg[t], 0, sizeof E.reg[t])
#define AMX_LOAD(t, p, s) emu_load(t, p, s)
#define AMX_DP(c, a, b) emu_dp(c, a, b)
#define AMX_STORE(t, p, s) emu_store(t, p, s)
#define AMX_RELEASE() ((void)0)
#define AMX_FNAME rows_bf16_amx_emu
#define AMX_FALLBACK fallback
#include "moe/cpu/kern_amx_body.h"

static const struct ftkern_ops ops = {"w16a16-amx-emulated", xbytes, prep, rows_bf16_amx_emu};

const struct ftkern_ops *ftkern_amx_emu(enum ftfmt_id f)
{
	return f == FTFMT_BF16 ? &ops : NULL;
}
