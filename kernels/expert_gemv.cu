/* expert_gemv (GPU): see expert_gemv.h.
 *
 * Both kernels are GEMVs of 16-row tiles on the tensor cores (mma.sync m16n8k16, FP32
 * accumulators): lane L of a warp holds rows g = L/4 and g + 8 of the tile and, per K
 * iteration, 16 contiguous bytes of each (its "chunk" c = L%4: the 4 lanes of a row read 64
 * contiguous bytes), which become the A fragments of 2 (bf16) or 8 (4-bit) mma steps. The
 * products are invariant under a permutation of k, so the A fragment positions are simply the
 * chunk's elements in the order the decode yields them, and the activation vector (B, staged
 * once per block in shared memory as hi + lo 16-bit halves) is stored in that same order.
 *
 *  - bf16: A = the stored bf16 pairs; B column 0 = x hi, column 1 = x lo (bf16).
 *  - nvfp4, ds_fp4: A = e2m1 codes as f16 (value * 2^-6, exact; e4m3 bytes built from the
 *    nibbles and converted by cvt.rn.f16x2.e4m3x2 on sm_89+). Every step mixes the 4 chunks of
 *    a row, i.e. 4 (ds_fp4) or 8 (nvfp4) scale blocks, so B column n holds x only at the
 *    positions of chunk n % 4 (hi for n < 4, lo for n >= 4): D[row][n] is the sum over one chunk,
 *    and each block's sum is scaled in FP32 (nvfp4: a second accumulator for the chunk's second
 *    block). The 4-bit formats' B is f16, so each vector is first scaled by a power of two that
 *    puts its largest magnitude in [2^14, 2^15) (undone on the row sums).
 * A row's sum is the sum over all 8 columns: two quad shuffles.
 *
 * gate_up kernel: block = (8 intermediate rows j, route r, token b): tile rows 0-7 are gate rows
 * j, rows 8-15 the up rows I + j, so lane g holds gate and up of row j0 + g and applies the
 * activation itself after the block's warps (which split K) are summed. Writes h fp32.
 * down kernel: block = (16 output rows, token b): its warps take (route, K part) items, each
 * item's rows scaled by the route weight; warps summed in a fixed order (deterministic), y
 * written whole. Before waiting for the gate_up kernel (programmatic launch) the block asks
 * for its expert rows in L2 (cp.async.bulk.prefetch.L2), so HBM stays busy across the switch. */
#include "expert_gemv.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#ifndef FTGEMV_GU_WARPS
#define FTGEMV_GU_WARPS 4   /* warps of a gate_up block (split K) */
#endif
#ifndef FTGEMV_DN_WARPS
#define FTGEMV_DN_WARPS 8   /* warps of a down block (split routes x K parts) */
#endif
#ifndef FTGEMV_UNROLL
#define FTGEMV_UNROLL 4     /* K iterations whose loads a warp issues before it uses them */
#endif
#define FTGEMV_GU_ROWS 8    /* intermediate rows of a gate_up block (8 gate + 8 up = one tile) */
#define FTGEMV_DN_ROWS 16   /* output rows of a down block (one tile) */
#define FTGEMV_PAD 8        /* u16 elements between staged vectors (spreads shared-memory banks) */
#define FULL_MASK 0xffffffffu

enum { KF_BF16 = 0, KF_NVFP4 = 1, KF_DSFP4 = 2 };

/* k elements per K iteration of one row (4 lanes x 16 bytes) */
template <int F> struct kiter { static constexpr int v = F == KF_BF16 ? 32 : 128; };

struct gv_params {
	const uint8_t *gu_w, *gu_s, *gu_g, *dn_w, *dn_s, *dn_g; /* pool bases (NULL: no such bank) */
	size_t gu_wb, gu_sb, gu_gb, dn_wb, dn_sb, dn_gb;        /* bytes of one expert in each */
	int H, I, C, topk, act, prefetch;
	float lim;
	const int32_t *slots;
	const float *w, *x;
	float *h, *y;
};

/* ------------------------------------------------------------------ device helpers */

__device__ static inline void grid_wait(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
	asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

__device__ static inline void grid_release(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
	asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

/* Ask for bytes at p in L2 (sm_90's bulk prefetch; a hint: skipped where p or bytes is not a
 * multiple of 16, and below sm_90). */
__device__ static inline void prefetch_l2(const void *p, size_t bytes)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
	if ((((uintptr_t)p | bytes) & 15) == 0 && bytes && bytes < (1u << 31))
		asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(p), "r"((uint32_t)bytes) : "memory");
#endif
}

/* Streamed weights: read once, not kept in L1; L2 fetches 256-byte runs. */
__device__ static inline uint4 ld_stream16(const uint8_t *p)
{
	uint4 v;
	asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];\n"
	    : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
	    : "l"(p));
	return v;
}

__device__ static inline uint32_t ld_nc32(const uint8_t *p)
{
	uint32_t v;
	asm volatile("ld.global.nc.L1::no_allocate.u32 %0, [%1];\n" : "=r"(v) : "l"(p));
	return v;
}

__device__ static inline uint32_t ld_nc16(const uint8_t *p)
{
	unsigned short v;
	asm volatile("ld.global.nc.L1::no_allocate.u16 %0, [%1];\n" : "=h"(v) : "l"(p));
	return v;
}

__device__ static inline void mma_bf16(float d[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint2 b)
{
	asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
	    "{%0, %1, %2, %3};\n"
	    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
	    : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b.x), "r"(b.y));
}

__device__ static inline void mma_f16(float d[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint2 b)
{
	asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
	    "{%0, %1, %2, %3};\n"
	    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
	    : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b.x), "r"(b.y));
}

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ < 890
__constant__ float c_e2m1[16] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f,
				 -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};

__device__ static inline uint32_t pack_h2(float lo, float hi)
{
	__half2 h = __floats2half2_rn(lo, hi);
	return *reinterpret_cast<uint32_t *>(&h);
}

__device__ static inline float e4m3_f(uint32_t b)
{
	int s = (b >> 7) & 1, e = (b >> 3) & 15, m = b & 7;
	float v = e == 15 && m == 7 ? __int_as_float(0x7fc00000) : e ? ldexpf((float)(m | 8), e - 10) : ldexpf((float)m, -9);
	return s ? -v : v;
}
#endif

/* Eight e2m1 codes (code i in bits 4i..4i+3) as four f16 pairs of value * 2^-6:
 * P[0] = (c0, c2), P[1] = (c4, c6), P[2] = (c1, c3), P[3] = (c5, c7) (low half first). */
__device__ static inline void fp4x8(uint32_t q, uint32_t P[4])
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
	/* e4m3 byte s 0 0 e1 e0 m 0 0 is exactly e2m1 * 2^-6 (subnormal for e = 0, as e2m1) */
	const uint32_t ev = ((q << 2) & 0x1C1C1C1Cu) | ((q << 4) & 0x80808080u); /* codes 0,2,4,6 */
	const uint32_t od = ((q >> 2) & 0x1C1C1C1Cu) | (q & 0x80808080u);        /* codes 1,3,5,7 */
	asm("{\n\t.reg .b16 l, h;\n\t"
	    "mov.b32 {l, h}, %4;\n\t"
	    "cvt.rn.f16x2.e4m3x2 %0, l;\n\t"
	    "cvt.rn.f16x2.e4m3x2 %1, h;\n\t"
	    "mov.b32 {l, h}, %5;\n\t"
	    "cvt.rn.f16x2.e4m3x2 %2, l;\n\t"
	    "cvt.rn.f16x2.e4m3x2 %3, h;\n\t}\n"
	    : "=r"(P[0]), "=r"(P[1]), "=r"(P[2]), "=r"(P[3])
	    : "r"(ev), "r"(od));
#else
	const float k = 1.0f / 64;
	P[0] = pack_h2(c_e2m1[q & 15] * k, c_e2m1[(q >> 8) & 15] * k);
	P[1] = pack_h2(c_e2m1[(q >> 16) & 15] * k, c_e2m1[(q >> 24) & 15] * k);
	P[2] = pack_h2(c_e2m1[(q >> 4) & 15] * k, c_e2m1[(q >> 12) & 15] * k);
	P[3] = pack_h2(c_e2m1[(q >> 20) & 15] * k, c_e2m1[(q >> 28) & 15] * k);
#endif
}

/* Four e4m3 bytes as floats (f[i] = byte i). */
__device__ static inline void e4m3x4(uint32_t v, float f[4])
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
	uint32_t a, b;
	asm("{\n\t.reg .b16 l, h;\n\t"
	    "mov.b32 {l, h}, %2;\n\t"
	    "cvt.rn.f16x2.e4m3x2 %0, l;\n\t"
	    "cvt.rn.f16x2.e4m3x2 %1, h;\n\t}\n"
	    : "=r"(a), "=r"(b)
	    : "r"(v));
	const float2 fa = __half22float2(*reinterpret_cast<__half2 *>(&a));
	const float2 fb = __half22float2(*reinterpret_cast<__half2 *>(&b));
	f[0] = fa.x;
	f[1] = fa.y;
	f[2] = fb.x;
	f[3] = fb.y;
#else
	for (int i = 0; i < 4; i++)
		f[i] = e4m3_f((v >> (8 * i)) & 255);
#endif
}

/* e8m0 byte e as 2^(e - 127) * 2^6 (the decode's 2^-6 undone); bytes >= 249 give inf. */
__device__ static inline float e8m0_x64(uint32_t e)
{
	return __uint_as_float(min(e + 6u, 255u) << 23);
}

__device__ static inline float fp16_f(const uint8_t *p)
{
	return __half2float(__ushort_as_half((unsigned short)ld_nc16(p)));
}

__device__ static inline float act_f(int a, float g, float u, float lim)
{
	switch (a) {
	case FTFMT_ACT_SILU:
		return g / (1.0f + expf(-g)) * u;
	case FTFMT_ACT_GELU:
		return 0.5f * g * (1.0f + erff(g * 0.70710678118654752f)) * u;
	case FTFMT_ACT_GELU_TANH:
		return 0.5f * g * (1.0f + tanhf(0.79788456080286536f * (g + 0.044715f * g * g * g))) * u;
	default: /* FTFMT_ACT_SWIGLU_OAI */
		g = fminf(g, lim);
		u = fminf(fmaxf(u, -lim), lim);
		return g / (1.0f + expf(-1.702f * g)) * (u + 1.0f);
	}
}

/* ------------------------------------------------------------------ staging of x / h */

/* Staged vector: hi[K + PAD], lo[K + PAD] u16 (bf16 or f16 per format); a zero region of the
 * same length serves the B lanes whose column is empty. Element k of a group of 4 is stored at
 * 4 (k / 4) + perm(k % 4): identity for bf16 (pairs (0,1), (2,3)), (0, 2, 1, 3) for the 4-bit
 * formats (pairs (0,2), (1,3), as fp4x8 yields them). */
template <int F> __device__ static inline void stage_group(float4 v, float sc, uint16_t *hi, uint16_t *lo, int k)
{
	uint32_t h0, h1, l0, l1;
	if (F == KF_BF16) {
		const __nv_bfloat16 a = __float2bfloat16_rn(v.x), b = __float2bfloat16_rn(v.y),
				    c = __float2bfloat16_rn(v.z), d = __float2bfloat16_rn(v.w);
		const __nv_bfloat16 la = __float2bfloat16_rn(v.x - __bfloat162float(a)),
				    lb = __float2bfloat16_rn(v.y - __bfloat162float(b)),
				    lc = __float2bfloat16_rn(v.z - __bfloat162float(c)),
				    ld = __float2bfloat16_rn(v.w - __bfloat162float(d));
		h0 = __bfloat16_as_ushort(a) | (uint32_t)__bfloat16_as_ushort(b) << 16;
		h1 = __bfloat16_as_ushort(c) | (uint32_t)__bfloat16_as_ushort(d) << 16;
		l0 = __bfloat16_as_ushort(la) | (uint32_t)__bfloat16_as_ushort(lb) << 16;
		l1 = __bfloat16_as_ushort(lc) | (uint32_t)__bfloat16_as_ushort(ld) << 16;
	} else {
		v.x *= sc;
		v.y *= sc;
		v.z *= sc;
		v.w *= sc;
		const __half a = __float2half_rn(v.x), b = __float2half_rn(v.y), c = __float2half_rn(v.z),
			     d = __float2half_rn(v.w);
		const __half la = __float2half_rn(v.x - __half2float(a)), lb = __float2half_rn(v.y - __half2float(b)),
			     lc = __float2half_rn(v.z - __half2float(c)), ld = __float2half_rn(v.w - __half2float(d));
		h0 = __half_as_ushort(a) | (uint32_t)__half_as_ushort(c) << 16;
		h1 = __half_as_ushort(b) | (uint32_t)__half_as_ushort(d) << 16;
		l0 = __half_as_ushort(la) | (uint32_t)__half_as_ushort(lc) << 16;
		l1 = __half_as_ushort(lb) | (uint32_t)__half_as_ushort(ld) << 16;
	}
	*reinterpret_cast<uint2 *>(hi + k) = make_uint2(h0, h1);
	*reinterpret_cast<uint2 *>(lo + k) = make_uint2(l0, l1);
}

/* The power-of-two scaling of a 4-bit format's vector with largest magnitude m: sc = 2^-p
 * puts m in [2^14, 2^15); *post = 2^p undoes it on the sums. */
__device__ static inline float vec_scale(float m, float *post)
{
	int e = 0;
	frexpf(m, &e); /* m < 2^e */
	int p = e - 15;
	p = p < -110 ? -110 : p > 110 ? 110 : p;
	*post = ldexpf(1.0f, p);
	return ldexpf(1.0f, -p);
}

/* ------------------------------------------------------------------ the tile loop */

/* One lane's view of a 16-row tile over K: rows g and g + 8 (w: row g's bytes at this lane's
 * chunk, w8: distance to row g + 8; s, s8 the same for its scale bytes), xb: this lane's B
 * column in shared memory at its chunk. Adds iterations [i0, i1) into acc (FP32, the lane's
 * D fragment: rows g, g + 8 x columns 2c, 2c + 1). */
template <int F>
__device__ static inline void tile_run(const uint8_t *__restrict__ w, size_t w8, const uint8_t *__restrict__ s,
				       size_t s8, const uint16_t *xb, int i0, int i1, float acc[4])
{
	constexpr int KI = kiter<F>::v;
	constexpr int WSTEP = 64;                             /* bytes of a row per iteration */
	constexpr int SSTEP = F == KF_NVFP4 ? 8 : 4;          /* scale bytes of a row per iteration */
	for (int it = i0; it < i1; it += FTGEMV_UNROLL) {
		uint4 ra[FTGEMV_UNROLL], rb[FTGEMV_UNROLL];
		uint32_t sa[FTGEMV_UNROLL], sb[FTGEMV_UNROLL];
#pragma unroll
		for (int u = 0; u < FTGEMV_UNROLL; u++) {
			if (it + u < i1) {
				const uint8_t *p = w + (size_t)(it + u) * WSTEP;
				ra[u] = ld_stream16(p);
				rb[u] = ld_stream16(p + w8);
				if (F == KF_NVFP4) {
					const uint8_t *q = s + (size_t)(it + u) * SSTEP;
					sa[u] = ld_nc32(q);
					sb[u] = ld_nc32(q + s8);
				} else if (F == KF_DSFP4) {
					const uint8_t *q = s + (size_t)(it + u) * SSTEP;
					sa[u] = ld_nc16(q);
					sb[u] = ld_nc16(q + s8);
				}
			}
		}
#pragma unroll
		for (int u = 0; u < FTGEMV_UNROLL; u++) {
			if (it + u >= i1)
				break;
			const uint16_t *xk = xb + (size_t)(it + u) * KI;
			if (F == KF_BF16) {
				const uint2 b0 = *reinterpret_cast<const uint2 *>(xk);
				const uint2 b1 = *reinterpret_cast<const uint2 *>(xk + 4);
				mma_bf16(acc, ra[u].x, rb[u].x, ra[u].y, rb[u].y, b0);
				mma_bf16(acc, ra[u].z, rb[u].z, ra[u].w, rb[u].w, b1);
			} else {
				float d0[4] = {0, 0, 0, 0}, d1[4] = {0, 0, 0, 0};
				const uint32_t wa[4] = {ra[u].x, ra[u].y, ra[u].z, ra[u].w};
				const uint32_t wb[4] = {rb[u].x, rb[u].y, rb[u].z, rb[u].w};
#pragma unroll
				for (int j = 0; j < 4; j++) {
					uint32_t P[4], Q[4];
					fp4x8(wa[j], P);
					fp4x8(wb[j], Q);
					const uint2 b0 = *reinterpret_cast<const uint2 *>(xk + 8 * j);
					const uint2 b1 = *reinterpret_cast<const uint2 *>(xk + 8 * j + 4);
					float *d = (F == KF_NVFP4 && j >= 2) ? d1 : d0;
					mma_f16(d, P[0], Q[0], P[2], Q[2], b0);
					mma_f16(d, P[1], Q[1], P[3], Q[3], b1);
				}
				if (F == KF_NVFP4) {
					/* bytes: column 2c's chunk blocks 0, 1, column 2c+1's blocks 0, 1 */
					float fa[4], fb[4];
					e4m3x4(sa[u], fa);
					e4m3x4(sb[u], fb);
					acc[0] += d0[0] * fa[0] + d1[0] * fa[1];
					acc[1] += d0[1] * fa[2] + d1[1] * fa[3];
					acc[2] += d0[2] * fb[0] + d1[2] * fb[1];
					acc[3] += d0[3] * fb[2] + d1[3] * fb[3];
				} else {
					acc[0] += d0[0] * e8m0_x64(sa[u] & 255);
					acc[1] += d0[1] * e8m0_x64(sa[u] >> 8);
					acc[2] += d0[2] * e8m0_x64(sb[u] & 255);
					acc[3] += d0[3] * e8m0_x64(sb[u] >> 8);
				}
			}
		}
	}
}

/* This lane's pointers for rows r0 + g, r0 + g + 8 of a row-major [N, K] bank set at expert
 * bases wbase (codes or bf16) and sbase (scales), and its B column base in the staged vector
 * (hi, lo, zero). */
template <int F>
__device__ static inline void lane_view(const uint8_t *wbase, const uint8_t *sbase, long K, long r0, int lane,
					const uint16_t *hi, const uint16_t *lo, const uint16_t *zero,
					const uint8_t **w, size_t *w8, const uint8_t **s, size_t *s8, const uint16_t **xb)
{
	const int g = lane >> 2, c = lane & 3, n = lane >> 2;
	const size_t rowb = F == KF_BF16 ? (size_t)K * 2 : (size_t)K / 2;
	*w = wbase + (size_t)(r0 + g) * rowb + 16 * c;
	*w8 = 8 * rowb;
	if (F == KF_NVFP4) {
		*s = sbase + (size_t)(r0 + g) * (K / 16) + 4 * (c & 1);
		*s8 = 8 * (size_t)(K / 16);
	} else if (F == KF_DSFP4) {
		*s = sbase + (size_t)(r0 + g) * (K / 32) + 2 * (c & 1);
		*s8 = 8 * (size_t)(K / 32);
	} else {
		*s = NULL;
		*s8 = 0;
	}
	if (F == KF_BF16)
		*xb = (n == 0 ? hi : n == 1 ? lo : zero) + 8 * c;
	else
		*xb = ((n & 3) == c ? (n < 4 ? hi : lo) : zero) + 32 * c;
}

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

/* ------------------------------------------------------------------ kernels */

/* gate_up + activation. Grid (I / 8, topk, B), block FTGEMV_GU_WARPS warps; dynamic shared
 * memory 3 staged vectors of H. h[(b * topk + r) * I + j] = act(gate_j . x_b, up_j . x_b). */
template <int F>
__global__ void __launch_bounds__(FTGEMV_GU_WARPS * 32) gu_kernel(const gv_params p)
{
	extern __shared__ __align__(16) uint16_t sm_gu[];
	__shared__ float red[FTGEMV_GU_WARPS][16];
	__shared__ float smax[FTGEMV_GU_WARPS];
	const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
	const int j0 = blockIdx.x * FTGEMV_GU_ROWS, r = blockIdx.y, b = blockIdx.z;
	const long H = p.H, I = p.I;
	grid_wait();
	grid_release();
	const int slot = p.slots[b * p.topk + r];
	if (slot < 0 || slot >= p.C)
		return;
	const size_t ve = vec_elems(H);
	uint16_t *hi = sm_gu, *lo = sm_gu + ve, *zero = sm_gu + 2 * ve;
	const float *x = p.x + (size_t)b * H;
	const uint8_t *wbase = p.gu_w + (size_t)slot * p.gu_wb;
	const uint8_t *sbase = p.gu_s ? p.gu_s + (size_t)slot * p.gu_sb : NULL;
	/* this warp's share of K; its first FTGEMV_UNROLL iterations of each of its 16 rows asked
	 * for in L2 (lanes 0-15) before the staging, so HBM works while x is staged */
	const int NI = (int)(H / kiter<F>::v);
	const int i0 = NI * warp / FTGEMV_GU_WARPS, i1 = NI * (warp + 1) / FTGEMV_GU_WARPS;
	if (p.prefetch && lane < 16) {
		const size_t rowb = F == KF_BF16 ? (size_t)H * 2 : (size_t)H / 2;
		const long row = (lane < 8 ? 0 : I - 8) + j0 + lane;
		const int n = i1 - i0 < FTGEMV_UNROLL ? i1 - i0 : FTGEMV_UNROLL;
		prefetch_l2(wbase + (size_t)row * rowb + (size_t)i0 * 64, (size_t)n * 64);
	}

	/* stage x: its largest magnitude first (4-bit formats), then hi / lo */
	float post = 1.0f, sc = 1.0f;
	if (F != KF_BF16) {
		float m = 0;
		for (long k = 4 * tid; k < H; k += 4 * FTGEMV_GU_WARPS * 32) {
			const float4 v = *reinterpret_cast<const float4 *>(x + k);
			m = fmaxf(m, fmaxf(fmaxf(fabsf(v.x), fabsf(v.y)), fmaxf(fabsf(v.z), fabsf(v.w))));
		}
		for (int o = 16; o; o >>= 1)
			m = fmaxf(m, __shfl_xor_sync(FULL_MASK, m, o));
		if (lane == 0)
			smax[warp] = m;
		__syncthreads();
		m = smax[0];
		for (int i = 1; i < FTGEMV_GU_WARPS; i++)
			m = fmaxf(m, smax[i]);
		sc = vec_scale(m, &post);
	}
	for (long k = 4 * tid; k < H; k += 4 * FTGEMV_GU_WARPS * 32) {
		stage_group<F>(*reinterpret_cast<const float4 *>(x + k), sc, hi, lo, (int)k);
		*reinterpret_cast<uint2 *>(zero + k) = make_uint2(0, 0);
	}
	__syncthreads();

	const uint8_t *w, *s;
	size_t w8, s8;
	const uint16_t *xb;
	/* tile rows 0-7: gate rows j0 + g, rows 8-15: up rows I + j0 + g, I rows further on */
	lane_view<F>(wbase, sbase, H, j0, lane, hi, lo, zero, &w, &w8, &s, &s8, &xb);
	w8 = w8 / 8 * (size_t)I;
	s8 = s8 / 8 * (size_t)I;
	float acc[4] = {0, 0, 0, 0};
	tile_run<F>(w, w8, s, s8, xb, i0, i1, acc);
	float gt, up;
	tile_rows(acc, &gt, &up);
	if ((lane & 3) == 0) {
		red[warp][lane >> 2] = gt;
		red[warp][8 + (lane >> 2)] = up;
	}
	__syncthreads();
	if (tid < FTGEMV_GU_ROWS) {
		float g = 0, u = 0;
		for (int i = 0; i < FTGEMV_GU_WARPS; i++) {
			g += red[i][tid];
			u += red[i][8 + tid];
		}
		g *= post;
		u *= post;
		if (F == KF_NVFP4) {
			const uint8_t *gl = p.gu_g + (size_t)slot * p.gu_gb;
			g *= 64.0f * fp16_f(gl + 2 * (size_t)(j0 + tid));
			u *= 64.0f * fp16_f(gl + 2 * (size_t)(I + j0 + tid));
		}
		p.h[((size_t)b * p.topk + r) * I + j0 + tid] = act_f(p.act, g, u, p.lim);
	}
}

/* Bytes of a down block's dynamic shared memory: the zero region and hi / lo of topk routes. */
static size_t dn_smem(long I, int topk)
{
	return (size_t)(1 + 2 * topk) * ((size_t)I + FTGEMV_PAD) * 2;
}

/* down. Grid (H / 16, B), block FTGEMV_DN_WARPS warps; dynamic shared memory dn_smem(I, topk).
 * y[b, n0 .. n0 + 15] = sum over live routes r of w[b, r] * (down_r . h[b, r]). */
template <int F>
__global__ void __launch_bounds__(FTGEMV_DN_WARPS * 32) dn_kernel(const gv_params p)
{
	extern __shared__ __align__(16) uint16_t sm_dn[];
	__shared__ float red[FTGEMV_DN_WARPS][16];
	__shared__ int s_slot[FTGEMV_MAX_TOPK];
	__shared__ float s_w[FTGEMV_MAX_TOPK], s_post[FTGEMV_MAX_TOPK];
	const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
	const int n0 = blockIdx.x * FTGEMV_DN_ROWS, b = blockIdx.y, topk = p.topk;
	const long H = p.H, I = p.I;
	const size_t ve = vec_elems(I);
	uint16_t *zero = sm_dn;

	/* slots and weights were written before the gate_up kernel started (it waited for them) */
	if (tid < topk) {
		int sl = p.slots[b * topk + tid];
		s_slot[tid] = sl < 0 || sl >= p.C ? -1 : sl;
		s_w[tid] = p.w[b * topk + tid];
	}
	__syncthreads();
	if (p.prefetch && tid < topk && s_slot[tid] >= 0) {
		const int sl = s_slot[tid];
		const size_t rowb = F == KF_BF16 ? (size_t)I * 2 : (size_t)I / 2;
		prefetch_l2(p.dn_w + (size_t)sl * p.dn_wb + (size_t)n0 * rowb, FTGEMV_DN_ROWS * rowb);
		if (F != KF_BF16) {
			const size_t srow = F == KF_NVFP4 ? (size_t)I / 16 : (size_t)I / 32;
			prefetch_l2(p.dn_s + (size_t)sl * p.dn_sb + (size_t)n0 * srow, FTGEMV_DN_ROWS * srow);
		}
	}
	grid_wait(); /* h of the gate_up kernel */
	grid_release();

	/* stage h of every live route: warp ww takes routes ww, ww + W, ... */
	for (long k = 4 * tid; k < I; k += 4 * FTGEMV_DN_WARPS * 32)
		*reinterpret_cast<uint2 *>(zero + k) = make_uint2(0, 0);
	for (int r = warp; r < topk; r += FTGEMV_DN_WARPS) {
		if (s_slot[r] < 0)
			continue;
		const float *hv = p.h + ((size_t)b * topk + r) * I;
		uint16_t *hi = sm_dn + (1 + 2 * r) * ve, *lo = hi + ve;
		float post = 1.0f, sc = 1.0f;
		if (F != KF_BF16) {
			float m = 0;
			for (long k = 4 * lane; k < I; k += 128) {
				const float4 v = *reinterpret_cast<const float4 *>(hv + k);
				m = fmaxf(m, fmaxf(fmaxf(fabsf(v.x), fabsf(v.y)), fmaxf(fabsf(v.z), fabsf(v.w))));
			}
			for (int o = 16; o; o >>= 1)
				m = fmaxf(m, __shfl_xor_sync(FULL_MASK, m, o));
			sc = vec_scale(m, &post);
		}
		for (long k = 4 * lane; k < I; k += 128)
			stage_group<F>(*reinterpret_cast<const float4 *>(hv + k), sc, hi, lo, (int)k);
		if (lane == 0)
			s_post[r] = post * s_w[r] * (F == KF_NVFP4 ? 64.0f : 1.0f);
	}
	__syncthreads();

	/* items (route, K part): KS parts per route, so that every warp has one and, where a
	 * split of at most FTGEMV_DN_WARPS parts allows it, every warp as many (topk 6: 4 parts,
	 * 3 items a warp); at least one K iteration a part */
	const int NI = (int)(I / kiter<F>::v);
	int KS = (FTGEMV_DN_WARPS + topk - 1) / topk;
	for (int k = KS; k <= FTGEMV_DN_WARPS; k++)
		if (topk * k % FTGEMV_DN_WARPS == 0) {
			KS = k;
			break;
		}
	KS = KS < NI ? KS : NI;
	float o0 = 0, o1 = 0; /* rows n0 + g, n0 + g + 8 */
	for (int item = warp; item < topk * KS; item += FTGEMV_DN_WARPS) {
		const int r = item / KS, part = item % KS, sl = s_slot[r];
		if (sl < 0)
			continue;
		const uint16_t *hi = sm_dn + (1 + 2 * r) * ve, *lo = hi + ve;
		const uint8_t *wbase = p.dn_w + (size_t)sl * p.dn_wb;
		const uint8_t *sbase = p.dn_s ? p.dn_s + (size_t)sl * p.dn_sb : NULL;
		const uint8_t *w, *s;
		size_t w8, s8;
		const uint16_t *xb;
		lane_view<F>(wbase, sbase, I, n0, lane, hi, lo, zero, &w, &w8, &s, &s8, &xb);
		float acc[4] = {0, 0, 0, 0};
		tile_run<F>(w, w8, s, s8, xb, NI * part / KS, NI * (part + 1) / KS, acc);
		float t0, t1;
		tile_rows(acc, &t0, &t1);
		float f0 = s_post[r], f1 = f0;
		if (F == KF_NVFP4) {
			const uint8_t *gl = p.dn_g + (size_t)sl * p.dn_gb;
			f0 *= fp16_f(gl + 2 * (size_t)(n0 + (lane >> 2)));
			f1 *= fp16_f(gl + 2 * (size_t)(n0 + (lane >> 2) + 8));
		}
		o0 += t0 * f0;
		o1 += t1 * f1;
	}
	if ((lane & 3) == 0) {
		red[warp][lane >> 2] = o0;
		red[warp][8 + (lane >> 2)] = o1;
	}
	__syncthreads();
	if (tid < FTGEMV_DN_ROWS) {
		float v = 0;
		for (int i = 0; i < FTGEMV_DN_WARPS; i++)
			v += red[i][tid];
		p.y[(size_t)b * H + n0 + tid] = v;
	}
}

/* ------------------------------------------------------------------ host side */

static int kfmt_of(enum ftfmt_id f)
{
	return f == FTFMT_BF16 ? KF_BF16 : f == FTFMT_NVFP4 ? KF_NVFP4 : f == FTFMT_DS_FP4 ? KF_DSFP4 : -1;
}

static size_t gu_smem(long H)
{
	return 3 * ((size_t)H + FTGEMV_PAD) * 2;
}

template <int F> static cudaError_t set_attrs(size_t gu, size_t dn)
{
	cudaError_t e = cudaFuncSetAttribute(gu_kernel<F>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)gu);
	if (!e)
		e = cudaFuncSetAttribute(dn_kernel<F>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)dn);
	return e;
}

extern "C" cudaError_t ftgemv_init(struct ftgemv_experts *e)
{
	if (!e)
		return cudaErrorInvalidValue;
	const int F = kfmt_of(e->fmt);
	const long mult = F == KF_BF16 ? 32 : 128;
	if (F < 0 || e->H <= 0 || e->I <= 0 || e->H % mult || e->I % mult || e->H > (1L << 20) ||
	    e->I > (1L << 20) || e->slots < 1 || (unsigned)e->act > FTFMT_ACT_SWIGLU_OAI)
		return cudaErrorInvalidValue;
	struct ftfmt_bank_shape sh[FTFMT_MAX_BANKS];
	const int n = ftfmt_banks(ftfmt_get(e->fmt), e->H, e->I, sh);
	if (n <= 0)
		return cudaErrorInvalidValue;
	for (int i = 0; i < FTFMT_MAX_BANKS; i++) {
		if (i < n && !e->pool[i])
			return cudaErrorInvalidValue;
		e->bank_bytes[i] = i < n ? sh[i].expert_bytes : 0;
	}
	e->nbanks = n;
	int dev, major, optin;
	cudaError_t err;
	if ((err = cudaGetDevice(&dev)) || (err = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev)) ||
	    (err = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev)))
		return err;
	const size_t gu = gu_smem(e->H), dn = dn_smem(e->I, FTGEMV_MAX_TOPK);
	const size_t lim = (size_t)optin - FTGEMV_DN_WARPS * 16 * 4 - 3 * FTGEMV_MAX_TOPK * 4;
	if (gu > lim || dn_smem(e->I, 1) > lim)
		return cudaErrorInvalidValue;
	e->dn_smem_max = dn < lim ? dn : lim;
	e->pdl = major >= 9;
	switch (F) {
	case KF_BF16: return set_attrs<KF_BF16>(gu, e->dn_smem_max);
	case KF_NVFP4: return set_attrs<KF_NVFP4>(gu, e->dn_smem_max);
	default: return set_attrs<KF_DSFP4>(gu, e->dn_smem_max);
	}
}

extern "C" size_t ftgemv_scratch_bytes(const struct ftgemv_experts *e, int B, int topk)
{
	if (!e || B < 1 || topk < 1)
		return 0;
	return ((size_t)B * (size_t)topk * (size_t)e->I * 4 + 15) & ~(size_t)15;
}

template <int F>
static cudaError_t launch(const struct ftgemv_experts *e, const gv_params &p, int B, cudaStream_t s)
{
	cudaLaunchAttribute at;
	cudaLaunchConfig_t cfg = {};
	at.id = cudaLaunchAttributeProgrammaticStreamSerialization;
	at.val.programmaticStreamSerializationAllowed = 1;
	cfg.stream = s;
	if (e->pdl) {
		cfg.attrs = &at;
		cfg.numAttrs = 1;
	}
	cfg.gridDim = dim3((unsigned)(e->I / FTGEMV_GU_ROWS), (unsigned)p.topk, (unsigned)B);
	cfg.blockDim = dim3(FTGEMV_GU_WARPS * 32);
	cfg.dynamicSmemBytes = gu_smem(e->H);
	cudaError_t err = cudaLaunchKernelEx(&cfg, gu_kernel<F>, p);
	if (err)
		return err;
	cfg.gridDim = dim3((unsigned)(e->H / FTGEMV_DN_ROWS), (unsigned)B);
	cfg.blockDim = dim3(FTGEMV_DN_WARPS * 32);
	cfg.dynamicSmemBytes = dn_smem(e->I, p.topk);
	err = cudaLaunchKernelEx(&cfg, dn_kernel<F>, p);
	return err ? err : cudaGetLastError();
}

extern "C" cudaError_t ftgemv_moe(const struct ftgemv_experts *e, int B, int topk, const int32_t *d_slots,
				  const float *d_w, const float *d_x, float *d_y, void *d_scratch, cudaStream_t s)
{
	const int F = e ? kfmt_of(e->fmt) : -1;
	if (F < 0 || e->nbanks <= 0 || B < 1 || B > 65535 || topk < 1 || topk > FTGEMV_MAX_TOPK || !d_slots ||
	    !d_w || !d_x || !d_y || !d_scratch || dn_smem(e->I, topk) > e->dn_smem_max)
		return cudaErrorInvalidValue;
	gv_params p = {};
	const uint8_t *const *pl = (const uint8_t *const *)e->pool;
	switch (F) {
	case KF_BF16:
		p.gu_w = pl[0];
		p.dn_w = pl[1];
		break;
	case KF_NVFP4:
		p.gu_w = pl[0], p.gu_s = pl[1], p.gu_g = pl[2];
		p.dn_w = pl[3], p.dn_s = pl[4], p.dn_g = pl[5];
		break;
	default:
		p.gu_w = pl[0], p.gu_s = pl[1];
		p.dn_w = pl[2], p.dn_s = pl[3];
		break;
	}
	const size_t *bb = e->bank_bytes;
	if (F == KF_BF16) {
		p.gu_wb = bb[0], p.dn_wb = bb[1];
	} else if (F == KF_NVFP4) {
		p.gu_wb = bb[0], p.gu_sb = bb[1], p.gu_gb = bb[2], p.dn_wb = bb[3], p.dn_sb = bb[4], p.dn_gb = bb[5];
	} else {
		p.gu_wb = bb[0], p.gu_sb = bb[1], p.dn_wb = bb[2], p.dn_sb = bb[3];
	}
	p.H = (int)e->H;
	p.I = (int)e->I;
	p.C = e->slots;
	p.topk = topk;
	p.act = (int)e->act;
	p.lim = e->swiglu_limit;
	p.prefetch = !e->no_prefetch;
	p.slots = d_slots;
	p.w = d_w;
	p.x = d_x;
	p.h = (float *)d_scratch;
	p.y = d_y;
	switch (F) {
	case KF_BF16: return launch<KF_BF16>(e, p, B, s);
	case KF_NVFP4: return launch<KF_NVFP4>(e, p, B, s);
	default: return launch<KF_DSFP4>(e, p, B, s);
	}
}
