/* The GPU expert GEMV's 4-bit decode (kernels/expert_gemv_decode.h), checked on the CPU against
 * refnum.h's independent float64 decoding of e2m1 and e8m0 and an independent f16 reading:
 * every code in every nibble of a word, the pairs the staged activations must match, the e8m0
 * factor over all 256 bytes. (The kernels' use of them is tests/gpu/test_expert_gemv.c's.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "expert_gemv_decode.h"

#define REFNUM_SEED 0x6a09e667f3bcc909ull
#include "refnum.h"

/* f16 bits (16 of them) as a double: independent of refnum's byte-order reading */
static double f16(uint32_t h)
{
	uint8_t b[2] = {(uint8_t)h, (uint8_t)(h >> 8)};
	return d_fp16(b);
}

/* Each code c at each position i of a word whose other nibbles are random: P[i % 4] holds it
 * in half i / 4, worth e2m1(c) * 2^-14 exactly (0.5 a subnormal); the other pairs the others. */
static void test_fp4x8_every_code(void **st)
{
	for (int rep = 0; rep < 64; rep++)
		for (int i = 0; i < 8; i++)
			for (unsigned c = 0; c < 16; c++) {
				uint32_t q = (uint32_t)rnd();
				q = (q & ~(15u << (4 * i))) | c << (4 * i);
				uint32_t P[4];
				ftgemv_fp4x8(q, P);
				for (int k = 0; k < 8; k++) {
					const unsigned code = (q >> (4 * k)) & 15;
					const uint32_t half = P[k % 4] >> (16 * (k / 4)) & 0xffff;
					const double got = f16(half) * 16384.0, want = d_e2m1(code);
					if (got != want || signbit(got) != signbit(want))
						fail_msg("word %08x code %u at nibble %d: %g, want %g", q, code, k, got, want);
				}
			}
}

/* The staged order: f16 pair k (positions 2k, 2k + 1) holds elements (k, k + 4), as P[k]. */
static void test_fp4_pos(void **st)
{
	int seen[8] = {0};
	for (int e = 0; e < 8; e++) {
		const int p = ftgemv_fp4_pos(e);
		assert_true(p >= 0 && p < 8);
		seen[p]++;
		assert_int_equal(p / 2, e % 4);  /* pair k = e % 4 ... */
		assert_int_equal(p % 2, e / 4);  /* ... low half for e < 4, high for e + 4 */
	}
	for (int p = 0; p < 8; p++)
		assert_int_equal(seen[p], 1);
}

static void test_e8m0_dec(void **st)
{
	for (unsigned e = 0; e < 256; e++) {
		const double got = ftgemv_e8m0_dec(e);
		if (e <= 240)
			assert_true(got == d_e8m0((uint8_t)e) * FTGEMV_FP4_POST);
		else
			assert_true(isinf(got) && got > 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fp4x8_every_code),
		cmocka_unit_test(test_fp4_pos),
		cmocka_unit_test(test_e8m0_dec),
	};
	return cmocka_run_group_tests_name("gemv_decode", tests, NULL, NULL);
}
