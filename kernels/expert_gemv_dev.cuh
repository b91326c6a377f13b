/* expert_gemv's device helpers (kernels/expert_gemv.cu): loads, the mma steps, scale decodes,
 * the staging of x and h as hi + lo 16-bit halves (the activations: moe/act.h, shared with the
 * CPU executor). Not a public header: include it from expert_gemv.cu only. */
#ifndef FT_KERNELS_EXPERT_GEMV_DEV_CUH
#define FT_KERNELS_EXPERT_GEMV_DEV_CUH
#include "expert_gemv.h"
#include "expert_gemv_decode.h"
#include "moe/act.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#define FULL_MASK 0xffffffffu

enum { KF_BF16 = 0, KF_NVFP4 = 1, KF_DSFP4 = 2 };

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
__device__ static inline float e4m3_f(uint32_t b)
{
	int s = (b >> 7) & 1, e = (b >> 3) & 15, m = b & 7;
	float v = e == 15 && m == 7 ? __int_as_float(0x7fc00000) : e ? ldexpf((float)(m | 8), e - 10) : ldexpf((float)m, -9);
	return s ? -v : v;
}
#endif

/* The 4-bit decode (ftgemv_fp4x8, ftgemv_fp4_pos, ftgemv_e8m0_dec): expert_gemv_decode.h. */
__device__ static inline void fp4x8(uint32_t q, uint32_t P[4])
{
	ftgemv_fp4x8(q, P);
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

#define e8m0_dec ftgemv_e8m0_dec
#define FP4_POST FTGEMV_FP4_POST

__device__ static inline float fp16_f(const uint8_t *p)
{
	return __half2float(__ushort_as_half((unsigned short)ld_nc16(p)));
}

/* ------------------------------------------------------------------ staging of x / h */

/* Staged vector: hi[K + PAD], lo[K + PAD] u16 (bf16 for bf16 weights, f16 for the 4-bit
 * formats); a zero region of the same length serves the B lanes whose column is empty. In the
 * order of the A pairs: bf16 natural (pairs (0,1), (2,3)); 4-bit formats, per group of 8
 * elements, (0,4), (1,5), (2,6), (3,7) as fp4x8 yields them: element e of a group at 2 (e % 4)
 * + e / 4. The 4-bit formats' vectors are block floating point: each 32 elements (a chunk of a
 * K iteration, one B column's share) scaled by the power of two that puts their largest
 * magnitude in [2^14, 2^15), undone (post[k / 32]) on that column's FP32 sums. */
__device__ static inline uint32_t bf16_bits(float v)
{
	return __bfloat16_as_ushort(__float2bfloat16_rn(v));
}

__device__ static inline void split_bf16(float v, uint32_t *h, uint32_t *l)
{
	const __nv_bfloat16 a = __float2bfloat16_rn(v);
	*h = __bfloat16_as_ushort(a);
	*l = bf16_bits(v - __bfloat162float(a));
}

__device__ static inline void split_f16(float v, uint32_t *h, uint32_t *l)
{
	const __half a = __float2half_rn(v);
	*h = __half_as_ushort(a);
	*l = __half_as_ushort(__float2half_rn(v - __half2float(a)));
}

/* Stage e[0..7], elements k .. k + 7 (k a multiple of 8), scaled by sc (4-bit formats). */
template <int F>
__device__ static inline void stage8(const float e[8], long k, float sc, uint16_t *hi, uint16_t *lo)
{
	uint32_t h[8], l[8];
	if (F == KF_BF16) {
#pragma unroll
		for (int i = 0; i < 8; i++)
			split_bf16(e[i], &h[i], &l[i]);
		*reinterpret_cast<uint4 *>(hi + k) =
			make_uint4(h[0] | h[1] << 16, h[2] | h[3] << 16, h[4] | h[5] << 16, h[6] | h[7] << 16);
		*reinterpret_cast<uint4 *>(lo + k) =
			make_uint4(l[0] | l[1] << 16, l[2] | l[3] << 16, l[4] | l[5] << 16, l[6] | l[7] << 16);
	} else {
#pragma unroll
		for (int i = 0; i < 8; i++)
			split_f16(e[i] * sc, &h[i], &l[i]);
		*reinterpret_cast<uint4 *>(hi + k) =
			make_uint4(h[0] | h[4] << 16, h[1] | h[5] << 16, h[2] | h[6] << 16, h[3] | h[7] << 16);
		*reinterpret_cast<uint4 *>(lo + k) =
			make_uint4(l[0] | l[4] << 16, l[1] | l[5] << 16, l[2] | l[6] << 16, l[3] | l[7] << 16);
	}
}

/* The power-of-two scaling of a 4-bit format's block with largest magnitude m: sc = 2^-p puts
 * m in [2^14, 2^15); *post = 2^p undoes it on the sums. */
__device__ static inline float blk_scale(float m, float *post)
{
	int e = 0;
	frexpf(m, &e); /* m < 2^e */
	int p = e - 15;
	p = p < -110 ? -110 : p > 110 ? 110 : p;
	*post = ldexpf(1.0f, p);
	return ldexpf(1.0f, -p);
}

#endif
