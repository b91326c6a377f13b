/* The CPU MoE tests' random numbers and their independent float64 decoding of the formats'
 * element and scale encodings (reference §1): one copy for test_cpu_moe and test_cpu_moe_amx.
 * A test defines REFNUM_SEED (its xorshift64 state) before including this. */
#ifndef FT_TESTS_REFNUM_H
#define FT_TESTS_REFNUM_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#ifndef REFNUM_SEED
#error "define REFNUM_SEED before including refnum.h"
#endif

static uint64_t rng = REFNUM_SEED;
static inline uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}
static inline double unif(void) { return (double)(rnd() >> 11) / 9007199254740992.0; }
static inline double gauss(void) { return sqrt(-2 * log(unif() + 1e-300)) * cos(6.283185307179586 * unif()); }

static inline double d_bf16(const uint8_t *p)
{
	uint32_t u = (uint32_t)(p[0] | p[1] << 8) << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}
static inline double d_fp16(const uint8_t *p)
{
	unsigned h = p[0] | p[1] << 8, e = (h >> 10) & 31, m = h & 1023;
	double v = e ? ldexp(1024 + m, (int)e - 25) : ldexp(m, -24);
	return h >> 15 ? -v : v;
}
static inline double d_e4m3(uint8_t b)
{
	unsigned e = (b >> 3) & 15, m = b & 7;
	double v = e ? ldexp(8 + m, (int)e - 10) : ldexp(m, -9);
	return b >> 7 ? -v : v;
}
static inline double d_e8m0(uint8_t b) { return ldexp(1.0, (int)b - 127); }
static inline double d_e2m1(unsigned c)
{
	static const double v[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
	return c & 8 ? -v[c & 7] : v[c & 7];
}

#endif
