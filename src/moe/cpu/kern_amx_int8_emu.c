/* The AMX int8 kernels (kern_amx_int8_body.h) on tiles emulated in C, for CI machines without
 * AMX: the tests check them against the VNNI kernels and float64 as every tier is checked.
 * Tile semantics as the instruction reference gives them: the configured rows and bytes per row
 * of each tile, TDPBSSD adding, per int32 lane of C, the four signed byte products of each quad
 * of a row of A and the matching column quad of B. The rest of the kernels is the same AVX-512
 * code as on the tiles (this file is built for avx512vnni). Not for speed. */
#include <immintrin.h>

#include "moe/cpu/kern.h"

struct ti_cfg;
static void emu_cfg(const struct ti_cfg *c);
static void emu_zero(int t);
static void emu_load(int t, const void *p, long s);
static void emu_store(int t, void *p, long s);
static void emu_dp(int c, int a, int b);

#define TI_CFG(c) emu_cfg(c)
#define TI_ZERO(t) emu_zero(t)
#define TI_LOAD(t, p, s) emu_load(t, p, s)
#define TI_DP(c, a, b) emu_dp(c, a, b)
#define TI_STORE(t, p, s) emu_store(t, p, s)
#define TI_RELEASE() ((void)0)
#define TI_ROWS_NV rows_nvfp4_emu
#define TI_ROWS_DS rows_dsfp4_emu
#define TI_ROWS_Q4 rows_q4_0_emu
#define TI_ROWS_MX rows_t_mxfp4_emu
#include "moe/cpu/kern_amx_int8_body.h"

struct emu {
	uint8_t rows[8];
	uint16_t colsb[8];
	uint8_t reg[8][16][64];
};
static _Thread_local struct emu E;

static void emu_cfg(const struct ti_cfg *c)
{
	for (int t = 0; t < 8; t++) {
		E.rows[t] = c->rows[t] <= 16 ? c->rows[t] : 16;
		E.colsb[t] = c->colsb[t] <= 64 ? c->colsb[t] : 64;
	}
}

static void emu_zero(int t)
{
	memset(E.reg[t], 0, sizeof E.reg[t]);
}

static void emu_load(int t, const void *p, long s)
{
	memset(E.reg[t], 0, sizeof E.reg[t]); /* the bytes past the configured shape read as 0 */
	for (int r = 0; r < E.rows[t]; r++)
		memcpy(E.reg[t][r], (const uint8_t *)p + r * s, E.colsb[t]);
}

static void emu_store(int t, void *p, long s)
{
	for (int r = 0; r < E.rows[t]; r++)
		memcpy((uint8_t *)p + r * s, E.reg[t][r], E.colsb[t]);
}

static void emu_dp(int c, int a, int b)
{
	if (E.rows[a] != E.rows[c] || E.colsb[b] != E.colsb[c] || E.colsb[a] != 4 * E.rows[b] || !E.rows[c]) {
		/* shapes the instruction refuses (#UD): a result no test can take for right */
		for (int m = 0; m < 16; m++)
			for (int n = 0; n < 16; n++)
				memcpy(&E.reg[c][m][4 * n], &(int32_t){INT32_MIN / 2}, 4);
		return;
	}
	for (int m = 0; m < E.rows[c]; m++)
		for (int n = 0; n < E.colsb[c] / 4; n++) {
			int32_t acc;
			memcpy(&acc, &E.reg[c][m][4 * n], 4);
			for (int k = 0; k < E.colsb[a] / 4; k++)
				for (int i = 0; i < 4; i++)
					acc += (int8_t)E.reg[a][m][4 * k + i] * (int8_t)E.reg[b][k][4 * n + i];
			memcpy(&E.reg[c][m][4 * n], &acc, 4);
		}
}

static struct ftkern_ops ops[] = {
	[FTFMT_NVFP4] = {"w4a8-amx-emulated", NULL, NULL, rows_nvfp4_emu},
	[FTFMT_DS_FP4] = {"w4a8-amx-emulated", NULL, NULL, rows_dsfp4_emu},
	[FTFMT_Q4_0] = {"w4a8-amx-emulated", NULL, NULL, rows_q4_0_emu},
	[FTFMT_MXFP4_TRITON] = {"w4a8-amx-emulated", NULL, NULL, NULL, rows_t_mxfp4_emu},
};

const struct ftkern_ops *ftkern_amx_int8_emu(enum ftfmt_id f)
{
	if ((unsigned)f >= sizeof ops / sizeof ops[0] || (!ops[f].rows && !ops[f].rows_t))
		return NULL;
	const struct ftkern_ops *v = ftkern_avx512vnni(f);
	ops[f].xbytes = v->xbytes;
	ops[f].prep = v->prep;
	return &ops[f];
}
