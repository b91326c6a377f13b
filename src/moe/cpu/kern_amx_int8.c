/* AMX int8 kernels (4-bit weights x int8 activations, TDPBSSD, int32 sums per scale block): the
 * kernels of kern_amx_int8_body.h on the AMX tiles, from amx_i8_min_nb (the knob) tokens of an expert
 * up; fewer tokens, and the rows past the last block of 16, run the W4A8 VNNI kernels (the
 * activations are prepared the same way). The tile state is asked for by ftkern_amx_ready
 * (kern_amx.c); ftkern_select hands these kernels out only once it is granted. */
#include <immintrin.h>

#include "moe/cpu/kern.h"

#define TI_CFG(c) _tile_loadconfig(c)
#define TI_ZERO(t) _tile_zero(t)
#define TI_LOAD(t, p, s) _tile_loadd(t, p, s)
#define TI_DP(c, a, b) _tile_dpbssd(c, a, b)
#define TI_STORE(t, p, s) _tile_stored(t, p, s)
#define TI_RELEASE() _tile_release()
#define TI_ROWS_NV rows_nvfp4_amx
#define TI_ROWS_DS rows_dsfp4_amx
#define TI_ROWS_Q4 rows_q4_0_amx
#define TI_ROWS_MX rows_t_mxfp4_amx
#include "moe/cpu/kern_amx_int8_body.h"

static struct ftkern_ops ops[] = {
	[FTFMT_NVFP4] = {"w4a8-amx", NULL, NULL, rows_nvfp4_amx},
	[FTFMT_DS_FP4] = {"w4a8-amx", NULL, NULL, rows_dsfp4_amx},
	[FTFMT_Q4_0] = {"w4a8-amx", NULL, NULL, rows_q4_0_amx},
	[FTFMT_MXFP4_TRITON] = {"w4a8-amx", NULL, NULL, NULL, rows_t_mxfp4_amx},
};

const struct ftkern_ops *ftkern_amx_int8(enum ftfmt_id f)
{
	if ((unsigned)f >= sizeof ops / sizeof ops[0] || (!ops[f].rows && !ops[f].rows_t))
		return NULL;
	const struct ftkern_ops *v = ftkern_avx512vnni(f); /* its activation layout */
	ops[f].xbytes = v->xbytes;
	ops[f].prep = v->prep;
	return &ops[f];
}
