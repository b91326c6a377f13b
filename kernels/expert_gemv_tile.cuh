/* expert_gemv's tile loop (kernels/expert_gemv.cu): one warp's 16-row tile over K on the tensor
 * cores, its loads double-buffered in registers, and the row sums of its fragments. Not a public
 * header: expert_gemv.cu includes it after its configuration (FTGEMV_UNROLL*, FTGEMV_PAD). */
#ifndef FT_KERNELS_EXPERT_GEMV_TILE_CUH
#define FT_KERNELS_EXPERT_GEMV_TILE_CUH
#include "expert_gemv_dev.cuh"

/* k elements per K iteration of one row (4 lanes x 16 bytes) */
template <int F> struct kiter { static constexpr int v = F == KF_BF16 ? 32 : 128; };
/* K iterations per load buffer */
template <int F> struct unroll { static constexpr int v = F == KF_BF16 ? FTGEMV_UNROLL_BF16 : FTGEMV_UNROLL; };

/* ------------------------------------------------------------------ the tile loop */

/* One K iteration of one lane: 16 bytes of row g and of row g + 8, their scale bytes. */
struct frag {
	uint4 a, b;
	uint32_t sa, sb;
};

/* One lane's view of a 16-row tile over K: rows g and g + 8 (w: row g's bytes at this lane's
 * chunk, w8: distance to row g + 8; s, s8 the same for its scale bytes), xb: this lane's B
 * column in shared memory at its chunk; post: the staged vector's block factors (4-bit). */
template <int F> struct tile {
	const uint8_t *w, *s;
	size_t w8, s8;
	const uint16_t *xb;
	const float *post;
	int ch; /* 4-bit: the chunk of this lane's column 2c (column 2c + 1: ch + 1) */

	/* This lane's pointers for rows r0 + g, r0 + g + d8 of a row-major [N, K] bank set at
	 * expert bases wbase (codes or bf16) and sbase (scales), and its B column base in the
	 * staged vector (hi, lo, zero). */
	__device__ tile(const uint8_t *wbase, const uint8_t *sbase, long K, long r0, long d8, int lane,
			const uint16_t *hi, const uint16_t *lo, const uint16_t *zero, const float *vpost)
	{
		const int g = lane >> 2, c = lane & 3, n = lane >> 2;
		const size_t rowb = F == KF_BF16 ? (size_t)K * 2 : (size_t)K / 2;
		w = wbase + (size_t)(r0 + g) * rowb + 16 * c;
		w8 = (size_t)d8 * rowb;
		post = vpost;
		ch = 2 * (c & 1);
		if (F == KF_NVFP4) {
			s = sbase + (size_t)(r0 + g) * (K / 16) + 4 * (c & 1);
			s8 = (size_t)d8 * (K / 16);
		} else if (F == KF_DSFP4) {
			s = sbase + (size_t)(r0 + g) * (K / 32) + 2 * (c & 1);
			s8 = (size_t)d8 * (K / 32);
		} else {
			s = NULL;
			s8 = 0;
		}
		if (F == KF_BF16)
			xb = (n == 0 ? hi : n == 1 ? lo : zero) + 8 * c;
		else
			xb = ((n & 3) == c ? (n < 4 ? hi : lo) : zero) + 32 * c;
	}

	static constexpr int U = unroll<F>::v;

	/* Issue the loads of iterations it .. it + U - 1 (those below i1). */
	__device__ inline void load(frag f[U], int it, int i1) const
	{
		constexpr int SSTEP = F == KF_NVFP4 ? 8 : 4; /* scale bytes of a row per iteration */
#pragma unroll
		for (int u = 0; u < U; u++) {
			if (it + u < i1) {
				const uint8_t *p = w + (size_t)(it + u) * 64;
				f[u].a = ld_stream16(p);
				f[u].b = ld_stream16(p + w8);
				if (F == KF_NVFP4) {
					const uint8_t *q = s + (size_t)(it + u) * SSTEP;
					f[u].sa = ld_nc32(q);
					f[u].sb = ld_nc32(q + s8);
				} else if (F == KF_DSFP4) {
					const uint8_t *q = s + (size_t)(it + u) * SSTEP;
					f[u].sa = ld_nc16(q);
					f[u].sb = ld_nc16(q + s8);
				}
			}
		}
	}

	/* Add iterations it .. (loaded in f) into acc, the lane's FP32 D fragment (rows g, g + 8
	 * x columns 2c, 2c + 1). */
	__device__ inline void compute(const frag f[U], int it, int i1, float acc[4]) const
	{
		constexpr int KI = kiter<F>::v;
#pragma unroll
		for (int u = 0; u < U; u++) {
			if (it + u >= i1)
				break;
			const uint16_t *xk = xb + (size_t)(it + u) * KI;
#ifdef FTGEMV_LOADONLY
			/* bench-only build: the loads without the decode and the mma steps (wrong sums;
			 * the memory side's bound of this loop) */
			if (F != KF_BF16) {
				acc[0] += __uint_as_float((f[u].a.x ^ f[u].a.y ^ f[u].a.z ^ f[u].a.w ^ f[u].b.x ^ f[u].b.y ^
							   f[u].b.z ^ f[u].b.w ^ f[u].sa ^ f[u].sb) & 0x3f7fffffu);
				continue;
			}
#endif
			if (F == KF_BF16) {
				/* two 8-byte loads (one 16-byte load: bf16 1 % slower at batch 1) */
				const uint2 b0 = *reinterpret_cast<const uint2 *>(xk);
				const uint2 b1 = *reinterpret_cast<const uint2 *>(xk + 4);
				mma_bf16(acc, f[u].a.x, f[u].b.x, f[u].a.y, f[u].b.y, b0);
				mma_bf16(acc, f[u].a.z, f[u].b.z, f[u].a.w, f[u].b.w, b1);
			} else {
				/* two accumulator chains of 4 mma steps (nvfp4: the chunk's two scale
				 * blocks; ds_fp4: added up before the scale, which made its steps 3-8 %
				 * faster than one chain of 8) */
				float d0[4] = {0, 0, 0, 0}, d1[4] = {0, 0, 0, 0};
				const uint32_t wa[4] = {f[u].a.x, f[u].a.y, f[u].a.z, f[u].a.w};
				const uint32_t wb[4] = {f[u].b.x, f[u].b.y, f[u].b.z, f[u].b.w};
#pragma unroll
				for (int j = 0; j < 4; j++) {
					uint32_t P[4], Q[4];
					fp4x8(wa[j], P);
					fp4x8(wb[j], Q);
					const uint4 bb = *reinterpret_cast<const uint4 *>(xk + 8 * j);
					float *d = j >= 2 ? d1 : d0;
					mma_f16(d, P[0], Q[0], P[1], Q[1], make_uint2(bb.x, bb.y));
					mma_f16(d, P[2], Q[2], P[3], Q[3], make_uint2(bb.z, bb.w));
				}
				if (F == KF_DSFP4) {
#pragma unroll
					for (int i = 0; i < 4; i++)
						d0[i] += d1[i];
				}
				const float x0 = post[(it + u) * 4 + ch], x1 = post[(it + u) * 4 + ch + 1];
				if (F == KF_NVFP4) {
					/* bytes: column 2c's chunk blocks 0, 1, column 2c+1's blocks 0, 1 */
					float fa[4], fb[4];
					e4m3x4(f[u].sa, fa);
					e4m3x4(f[u].sb, fb);
					acc[0] += x0 * (d0[0] * fa[0] + d1[0] * fa[1]);
					acc[1] += x1 * (d0[1] * fa[2] + d1[1] * fa[3]);
					acc[2] += x0 * (d0[2] * fb[0] + d1[2] * fb[1]);
					acc[3] += x1 * (d0[3] * fb[2] + d1[3] * fb[3]);
				} else {
					acc[0] += d0[0] * (x0 * e8m0_dec(f[u].sa & 255));
					acc[1] += d0[1] * (x1 * e8m0_dec(f[u].sa >> 8));
					acc[2] += d0[2] * (x0 * e8m0_dec(f[u].sb & 255));
					acc[3] += d0[3] * (x1 * e8m0_dec(f[u].sb >> 8));
				}
			}
		}
	}

	/* Iterations [i0, i1) into acc, the first U already loaded in A: two buffers,
	 * one loading while the other is used. */
	__device__ inline void run(frag A[U], int i0, int i1, float acc[4]) const
	{
		frag B[U];
		for (int it = i0; it < i1; it += 2 * U) {
			load(B, it + U, i1);
			compute(A, it, i1, acc);
			load(A, it + 2 * U, i1);
			compute(B, it + U, i1, acc);
		}
	}
};

/* Row sums of a tile from the lanes' fragments: t0 = row g, t1 = row g + 8 (all 4 lanes of
 * the quad get them). */
__device__ static inline void tile_rows(const float acc[4], float *t0, float *t1)
{
	float a = acc[0] + acc[1], b = acc[2] + acc[3];
	a += __shfl_xor_sync(FULL_MASK, a, 1);
	b += __shfl_xor_sync(FULL_MASK, b, 1);
	a += __shfl_xor_sync(FULL_MASK, a, 2);
	b += __shfl_xor_sync(FULL_MASK, b, 2);
	*t0 = a;
	*t1 = b;
}

__device__ static inline size_t vec_elems(long K)
{
	return (size_t)K + FTGEMV_PAD;
}

#endif
