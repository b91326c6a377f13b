/* expert_gemv_decode: the bit-level decode of kernels/expert_gemv.cu's 4-bit formats, in plain C
 * (host and device), so that tests/unit/test_gemv_decode.c checks it without a GPU.
 *  - ftgemv_fp4x8: eight e2m1 codes of a 32-bit word (code i in bits 4i..4i+3, as the banks
 *    store them: low nibble first) as four f16 pairs, P[i] = (code i, code i + 4), low half
 *    first. Each half is the code's sign at bit 15 and its 3 magnitude bits at 9-11: exactly
 *    value * 2^-14 (the code 0.5 an f16 subnormal). Two shifts and two logic operations a pair.
 *  - ftgemv_fp4_pos: where element e (0..7) of a group of 8 sits in a staged activation vector,
 *    so that the f16 pair at positions (2k, 2k + 1) holds elements (k, k + 4) as P[k] does.
 *  - ftgemv_e8m0_dec: an e8m0 scale byte as the factor of a column's sums, 2^(e - 127) with the
 *    decode's 2^-14 undone; bytes >= 241 (2^114 and above) give inf. */
#ifndef FT_KERNELS_EXPERT_GEMV_DECODE_H
#define FT_KERNELS_EXPERT_GEMV_DECODE_H
#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define FTGEMV_HD __host__ __device__
#else
#define FTGEMV_HD
#endif

#define FTGEMV_FP4_POST 16384.0f /* 2^14: the decode's scale, undone on the sums */

static inline FTGEMV_HD void ftgemv_fp4x8(uint32_t q, uint32_t P[4])
{
	P[0] = ((q << 12) & 0x80008000u) | ((q << 9) & 0x0E000E00u);
	P[1] = ((q << 8) & 0x80008000u) | ((q << 5) & 0x0E000E00u);
	P[2] = ((q << 4) & 0x80008000u) | ((q << 1) & 0x0E000E00u);
	P[3] = (q & 0x80008000u) | ((q >> 3) & 0x0E000E00u);
}

static inline FTGEMV_HD int ftgemv_fp4_pos(int e)
{
	return 2 * (e & 3) + (e >> 2);
}

static inline FTGEMV_HD float ftgemv_e8m0_dec(uint32_t e)
{
#ifdef __CUDA_ARCH__
	return __uint_as_float(min(e + 14u, 255u) << 23); /* one IMNMX, as measured */
#else
	const uint32_t b = (e + 14u < 255u ? e + 14u : 255u) << 23;
	float f;
	memcpy(&f, &b, 4);
	return f;
#endif
}
#endif
