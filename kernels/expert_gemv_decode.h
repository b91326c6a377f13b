/* expert_gemv_decode: the bit-level decode of kernels/expert_gemv.cu's 4-bit formats, in plain C
 * (host and device), so that tests/unit/test_gemv_decode.c checks it without a GPU.
 *  - ftgemv_fp4x8: eight e2m1 codes of a 32-bit word (code i in bits 4i..4i+3, as the banks
 *    store them: low nibble first) as four f16 pairs, P[i] = (code i, code i + 4), low half
 *    first. Each half is the code's sign at bit 15 and its 3 magnitude bits at 9-11: exactly
 *    value * 2^-14 (the code 0.5 an f16 subnormal). The high bytes of the eight f16 are built in
 *    two words (seven operations), then placed above zero bytes: eleven operations a word.
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

/* __byte_perm(a, b, s) without its sign-replicate mode: result byte n = byte (s >> 4n) & 7 of
 * the 8 bytes b:a (a's bytes first). */
static inline FTGEMV_HD uint32_t ftgemv_perm(uint32_t a, uint32_t b, uint32_t s)
{
#ifdef __CUDA_ARCH__
	return __byte_perm(a, b, s);
#else
	const uint64_t v = (uint64_t)b << 32 | a;
	uint32_t r = 0;
	for (int n = 0; n < 4; n++)
		r |= (uint32_t)(v >> (8 * ((s >> (4 * n)) & 7)) & 255) << (8 * n);
	return r;
#endif
}

/* q >> 3; on the device a multiply-high, which runs beside the logic operations (another pipe) */
static inline FTGEMV_HD uint32_t ftgemv_shr3(uint32_t q)
{
#ifdef __CUDA_ARCH__
	return __umulhi(q, 1u << 29);
#else
	return q >> 3;
#endif
}

static inline FTGEMV_HD void ftgemv_fp4x8(uint32_t q, uint32_t P[4])
{
	/* the high byte of each code's f16, [sign, 0, 0, 0, 3 magnitude bits, 0]: E for the low
	 * nibble of each byte (codes 0, 2, 4, 6), O for the high one (1, 3, 5, 7); the f16 pairs
	 * are those bytes above zero bytes (byte 4 of b:a with b = 0) */
	const uint32_t E = ((q << 1) & 0x0E0E0E0Eu) | ((q << 4) & 0x80808080u);
	const uint32_t O = (ftgemv_shr3(q) & 0x0E0E0E0Eu) | (q & 0x80808080u);
	P[0] = ftgemv_perm(E, 0, 0x2404); /* codes 0, 4 */
	P[1] = ftgemv_perm(O, 0, 0x2404); /* codes 1, 5 */
	P[2] = E & 0xFF00FF00u;           /* codes 2, 6 */
	P[3] = O & 0xFF00FF00u;           /* codes 3, 7 */
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
