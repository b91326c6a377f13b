/* kern: the interface between the CPU MoE executor and its per-ISA kernels (internal).
 *
 * A kernel computes, for rows r0..r1 of one expert's matrix (rows = output features; for the
 * transposed mxfp4_triton banks, output columns) and nb tokens, y[b][r - r0] = W[r,:] . x_b with
 * every weight scale applied (block scales, nvfp4's per-row global) but no bias. Activations
 * are first "prepared" into the layout the kernel reads (prep NULL: the kernel reads fp32 x). */
#ifndef FT_MOE_CPU_KERN_H
#define FT_MOE_CPU_KERN_H
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "moe/formats.h"

/* Fully unroll a loop with a compile-time trip count (tokens of a tile, vectors of a step), so
 * its accumulators stay in registers at -O2. */
#define FTKERN_UNROLL _Pragma("GCC unroll 16")

/* Tokens are processed in tiles of up to FTKERN_TILE so a weight row stays in L1 across tiles.
 * FTKERN_FOR_TILES runs its statement once per tile with b0 the tile's first token and FTKERN_NB the
 * tile's width as a compile-time constant 1..FTKERN_TILE (the kernels unroll over it). */
#define FTKERN_TILE 4
#define FTKERN_TILE_CASE(k, ...) case k: { enum { FTKERN_NB = k }; __VA_ARGS__; } break
#define FTKERN_FOR_TILES(nb, b0, ...)                                                     \
	for (int b0 = 0; b0 < (nb); b0 += FTKERN_TILE)                                    \
		switch ((nb) - b0 >= FTKERN_TILE ? FTKERN_TILE : (nb) - b0) {                \
		FTKERN_TILE_CASE(1, __VA_ARGS__);                                         \
		FTKERN_TILE_CASE(2, __VA_ARGS__);                                         \
		FTKERN_TILE_CASE(3, __VA_ARGS__);                                         \
		default: { enum { FTKERN_NB = 4 }; __VA_ARGS__; } break;                  \
		}

/* Most tokens one kernel call takes (FTCPUMOE_MAX_BATCH). */
#define FTKERN_MAX_NB 32

/* The kernels' tuning knobs, one set per executor (its tune, cpumoe.h), read once per kernel call
 * from the matrix it is given (ftkern_knobs_of). Defaults (FTKERN_*) and what each was measured to
 * do: below, and bench/RESULTS.md, "CPU MoE executor". */
struct ftkern_knobs {
	int pf_dist;       /* FTKERN_PF_DIST */
	int pf_far;        /* FTKERN_PF_FAR */
	int mx_pf_dist;    /* FTKERN_MX_PF_DIST, a multiple of 64 */
	int mx_vbmi;       /* FTKERN_MX_VBMI */
	int pf_scales;     /* FTKERN_PF_SCALES */
	int amx_i8_min_nb; /* FTKERN_AMX_I8_MIN_NB */
};
/* every knob at its default: the knobs of a matrix that names none */
extern const struct ftkern_knobs ftkern_knobs_default;

struct ftkern_mat {
	const uint8_t *w;   /* values / packed codes of this expert's matrix */
	const uint8_t *s;   /* block scales (NULL for bf16, q4_0) */
	const uint8_t *g;   /* nvfp4: fp16 global per row; else NULL */
	long K;             /* inner (reduction) dimension */
	long N;             /* rows (outputs); the byte stride of a transposed row */
	const struct ftkern_knobs *kn; /* the calling executor's knobs; NULL: ftkern_knobs_default */
};

/* The knobs a kernel call runs with (read once per call, into locals, never in its loops). */
static inline const struct ftkern_knobs *ftkern_knobs_of(const struct ftkern_mat *m)
{
	return m->kn ? m->kn : &ftkern_knobs_default;
}

struct ftkern_ops {
	const char *name;                                 /* "w4a8-vnni", ... */
	size_t (*xbytes)(long K);                         /* prepared bytes for K elements
							   * (prepared vectors start 64-byte aligned) */
	void (*prep)(const float *x, long K, void *dst);  /* NULL: fp32 x used as is */
	void (*rows)(const struct ftkern_mat *m, long r0, long r1, int nb, const void *const *xs,
		     float *const *ys);
	/* Transposed banks (mxfp4_triton) split along K instead: partial sums over bank rows
	 * [kk0, kk1) (two k each) for all N outputs added into ps[b][0..N) (the caller zeroes it
	 * first; ps[b] of two tokens may be the same vector); tmp: scratch of
	 * nb * N floats. The executor adds up the workers' partials. NULL: `rows` over output
	 * columns is used. */
	void (*rows_t)(const struct ftkern_mat *m, long kk0, long kk1, int nb, const void *const *xs,
		       float *const *ps, float *tmp);
};

/* Per-ISA tables: the kernel of format f, or NULL when that file has none for f. */
const struct ftkern_ops *ftkern_scalar(enum ftfmt_id f);
const struct ftkern_ops *ftkern_avx2(enum ftfmt_id f);
const struct ftkern_ops *ftkern_avx512(enum ftfmt_id f);
const struct ftkern_ops *ftkern_avx512vnni(enum ftfmt_id f);
const struct ftkern_ops *ftkern_avx512bf16(enum ftfmt_id f);
/* AMX (kern_amx.c): bf16 on the tiles from FTKERN_AMX_MIN_NB tokens of an expert up, the
 * avx512bf16 kernel below that and for the last rows of a call that are not a block of 16. */
#define FTKERN_AMX_MIN_NB 4
const struct ftkern_ops *ftkern_amx(enum ftfmt_id f);
/* 0 once this process may use the AMX tile state (asked for once), else -errno. */
int ftkern_amx_ready(void);
/* The same kernel on tiles emulated in C (kern_amx_emu.c), for tests on CPUs without AMX.
 * test_cpu_moe_amx runs the executor's amx tier on both emulations: its link wraps
 * ftkern_amx_ready, ftkern_amx and ftkern_amx_int8 (Makefile, AMX_EMU_WRAP; rename them there too). */
const struct ftkern_ops *ftkern_amx_emu(enum ftfmt_id f);
/* AMX int8 (kern_amx_int8.c): the 4-bit formats as W4A8 on the tiles (TDPBSSD) for an expert's
 * group of amx_i8_min_nb (the knob) tokens or more, the W4A8 VNNI kernels below that (the same
 * prepared activations); needs AMX-INT8 and AVX512-VNNI. _emu: on tiles emulated in C
 * (kern_amx_int8_emu.c; needs AVX512-VNNI), for tests. The default threshold: in cache, one
 * thread, the tiles tie the VNNI kernels at 8 tokens and win from 12 (1.5-3.8x at 16-32; H200
 * box, bench/RESULTS.md, "CPU MoE executor"). The executor's knob: ftkern_knobs.amx_i8_min_nb. */
#define FTKERN_AMX_I8_MIN_NB 8
const struct ftkern_ops *ftkern_amx_int8(enum ftfmt_id f);
const struct ftkern_ops *ftkern_amx_int8_emu(enum ftfmt_id f);

/* The gated activation of pass 1 in 16-wide AVX-512 (kern_avx512.c): h[j] = w * act(g[j], u[j])
 * for j < n (u NULL: gate and up interleaved, g[2j] and g[2j+1]), for silu and swiglu_oai
 * (limit lim); -1 for the other activations, which the caller computes in scalar code. exp is a
 * polynomial within 2e-7 relative of expf; the tiers from avx512 up use it. */
typedef int ftkern_act_fn(enum ftfmt_act a, const float *g, const float *u, long n, float w, float lim, float *h);
ftkern_act_fn ftkern_act_avx512;

/* The kernel tier isa runs for f on a CPU with cpu_isa bits (falls back down the tiers). */
const struct ftkern_ops *ftkern_select(int isa, enum ftfmt_id f, unsigned cpu_isa);

/* The defaults of the kernels' tuning knobs (struct ftkern_knobs; each executor sets its own from
 * its tune at create); what each was measured to do: bench/RESULTS.md, "CPU MoE executor".
 *
 * pf_dist: bytes ahead in a weight stream of the row-major kernels' software prefetch
 * (0: none, the hardware prefetchers alone). */
#define FTKERN_PF_DIST 4096
/* pf_far: bytes ahead of a second prefetch, into L2 (prefetcht1), of the bf16dp and W4A8
 * row kernels (0: none). The mxfp4 K split has none. */
#define FTKERN_PF_FAR 8192
/* mx_pf_dist: bytes ahead of its strip that each row of a scale block is prefetched in the
 * mxfp4_triton W4A8 K split (a multiple of 64). */
#define FTKERN_MX_PF_DIST 256
/* mx_vbmi: 1, the mxfp4_triton W4A8 K split decodes one token's weights with VBMI byte
 * permutes where the CPU has them (the same sums bit for bit); 0: with the AVX-512 BW shuffles
 * always (and always from 2 tokens). */
#define FTKERN_MX_VBMI 1
/* pf_scales: 1, the W4A8 kernels prefetch their scale streams: nvfp4 / ds_fp4 near (L1)
 * and far (L2) once per 64-byte line at the weights' distances scaled to the stream's rate,
 * nvfp4's per-row fp16 globals a line ahead, the mxfp4 K split's block scales with its rows; 0:
 * nvfp4's near prefetch every group alone, none of the others (the earlier kernels). */
#define FTKERN_PF_SCALES 1

/* ftkern_vbmi: whether the VNNI tier may use AVX512_VBMI: 1, the W4A8 row kernels (nvfp4,
 * ds_fp4) split their nibbles with vpermb and the mxfp4 K split (with the mx_vbmi knob) decodes
 * by vpmultishiftqb + vpermb; 0: vpshufb and the BW shuffles; -1 (the start): the first
 * ftkern_avx512vnni sets it from the CPU. Bit-identical sums either way (tests set 0 and 1 to
 * compare). */
extern int ftkern_vbmi;

#ifdef __AVX512F__
#include <immintrin.h>
/* The mxfp4_triton K split's fp32 partials of nb tokens (t[b], N columns, N a multiple of 64)
 * added into ps[b] in column order, from the strip order of the shuffle decode (the VNNI tier's
 * kern_mx_body.h and the AMX int8 tier): in each strip of 64 columns, lane L of vector j holds
 * columns 16L + 4j .. 16L + 4j + 3 (a 4x4 transpose of 128-bit lanes undoes it). */
static inline __attribute__((always_inline)) void ftkern_mx_unstrip_add(float *const *t, float *const *ps, int nb,
									 long N)
{
	for (int b = 0; b < nb; b++)
		for (long c = 0; c < N; c += 64) {
			const float *src = t[b] + c;
			__m512 z0 = _mm512_loadu_ps(src), z1 = _mm512_loadu_ps(src + 16);
			__m512 z2 = _mm512_loadu_ps(src + 32), z3 = _mm512_loadu_ps(src + 48);
			__m512 a0 = _mm512_shuffle_f32x4(z0, z1, _MM_SHUFFLE(1, 0, 1, 0));
			__m512 a1 = _mm512_shuffle_f32x4(z2, z3, _MM_SHUFFLE(1, 0, 1, 0));
			__m512 a2 = _mm512_shuffle_f32x4(z0, z1, _MM_SHUFFLE(3, 2, 3, 2));
			__m512 a3 = _mm512_shuffle_f32x4(z2, z3, _MM_SHUFFLE(3, 2, 3, 2));
			float *dst = ps[b] + c; /* ps += */
			_mm512_storeu_ps(dst, _mm512_add_ps(_mm512_loadu_ps(dst), _mm512_shuffle_f32x4(a0, a1, _MM_SHUFFLE(2, 0, 2, 0))));
			_mm512_storeu_ps(dst + 16, _mm512_add_ps(_mm512_loadu_ps(dst + 16), _mm512_shuffle_f32x4(a0, a1, _MM_SHUFFLE(3, 1, 3, 1))));
			_mm512_storeu_ps(dst + 32, _mm512_add_ps(_mm512_loadu_ps(dst + 32), _mm512_shuffle_f32x4(a2, a3, _MM_SHUFFLE(2, 0, 2, 0))));
			_mm512_storeu_ps(dst + 48, _mm512_add_ps(_mm512_loadu_ps(dst + 48), _mm512_shuffle_f32x4(a2, a3, _MM_SHUFFLE(3, 1, 3, 1))));
		}
}
#endif

/* float value of every e4m3 / e8m0 byte (kern_tables.c) */
extern const float ftkern_e4m3_lut[256];
extern const float ftkern_e8m0_lut[256];

/* ---- scalar decoding shared by the kernels (and their tests) ---- */
static const float ftkern_e2m1[16] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f,
				    -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};

static inline float ftkern_bf16(uint16_t v)
{
	uint32_t u = (uint32_t)v << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}

static inline uint16_t ftkern_to_bf16(float f) /* round to nearest even */
{
	uint32_t u;
	memcpy(&u, &f, 4);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((u >> 16) | 0x40);
	u += 0x7fffu + ((u >> 16) & 1u);
	return (uint16_t)(u >> 16);
}

static inline float ftkern_fp16(uint16_t h)
{
	int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
	float v;
	if (e == 0)
		v = ldexpf((float)m, -24);
	else if (e == 31)
		v = m ? NAN : INFINITY;
	else
		v = ldexpf((float)(m | 1024), e - 25);
	return s ? -v : v;
}

static inline float ftkern_e4m3(uint8_t b)
{
	int s = b >> 7, e = (b >> 3) & 15, m = b & 7;
	float v;
	if (e == 15 && m == 7)
		v = NAN;
	else if (e == 0)
		v = ldexpf((float)m, -9);
	else
		v = ldexpf((float)(m | 8), e - 10);
	return s ? -v : v;
}

static inline float ftkern_e8m0(uint8_t b)
{
	return b == 255 ? NAN : ldexpf(1.0f, (int)b - 127);
}

static inline uint16_t ftkern_ld16(const uint8_t *p)
{
	uint16_t v;
	memcpy(&v, p, 2);
	return v;
}
#endif
