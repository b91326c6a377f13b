/* AMX kernel (bf16 weights x bf16 activations, TDPBF16PS, fp32 sums): the bf16 row kernel of
 * kern_amx_body.h on the AMX tiles, from FTKERN_AMX_MIN_NB tokens up; fewer tokens, and the rows
 * past the last full block of 16, run the avx512bf16 kernel (the activations are prepared the
 * same way). Linux hands out the tile state only on request (arch_prctl ARCH_REQ_XCOMP_PERM):
 * ftkern_amx_ready asks once per process. */
#include <errno.h>
#include <immintrin.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "moe/cpu/kern.h"

#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18

static int amx_rc = -ENOTSUP;
static pthread_once_t amx_once = PTHREAD_ONCE_INIT;

static void amx_request(void)
{
	amx_rc = syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0 ? 0 : -errno;
}

int ftkern_amx_ready(void)
{
	pthread_once(&amx_once, amx_request);
	return amx_rc;
}

struct tilecfg {
	uint8_t palette, start_row, rsvd[14];
	uint16_t colsb[16];
	uint8_t rows[16];
};

static void fallback(const struct ftkern_mat *m, long r0, long r1, int nb, const void *const *xs,
		     float *const *ys)
{
	ftkern_avx512bf16(FTFMT_BF16)->rows(m, r0, r1, nb, xs, ys);
}

#define AMX_CFG()                                                                 \
	do {                                                                      \
		struct tilecfg c = {.palette = 1};                                \
		for (int t = 0; t < 3; t++)                                       \
			c.colsb[t] = 64, c.rows[t] = 16;                          \
		_tile_loadconfig(&c);                                             \
	} while (0)
#define AMX_ZERO(t) _tile_zero(t)
#define AMX_LOAD(t, p, s) _tile_loadd(t, p, s)
#define AMX_DP(c, a, b) _tile_dpbf16ps(c, a, b)
#define AMX_STORE(t, p, s) _tile_stored(t, p, s)
#define AMX_RELEASE() _tile_release()
#define AMX_FNAME rows_bf16_amx
#define AMX_FALLBACK fallback
#include "moe/cpu/kern_amx_body.h"

static struct ftkern_ops ops = {"w16a16-amx", NULL, NULL, rows_bf16_amx};

const struct ftkern_ops *ftkern_amx(enum ftfmt_id f)
{
	if (f != FTFMT_BF16)
		return NULL;
	const struct ftkern_ops *b = ftkern_avx512bf16(FTFMT_BF16);
	ops.xbytes = b->xbytes;
	ops.prep = b->prep;
	return &ops;
}
