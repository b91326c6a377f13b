/* sha1: FIPS 180 test vectors, incremental updates across block boundaries. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "util/sha1.h"

static void test_vectors(void **st)
{
	char hex[41];
	ftsha1_hex("", 0, hex);
	assert_string_equal(hex, "da39a3ee5e6b4b0d3255bfef95601890afd80709");
	ftsha1_hex("abc", 3, hex);
	assert_string_equal(hex, "a9993e364706816aba3e25717850c26c9cd0d89d");
	const char *m = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	ftsha1_hex(m, strlen(m), hex);
	assert_string_equal(hex, "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
	ftsha1_hex("The quick brown fox jumps over the lazy dog", 43, hex);
	assert_string_equal(hex, "2fd4e1c67a2d28fced849ee1bb76e7391b93eb12");
}

static void test_million_a_incremental(void **st)
{
	struct ftsha1 c;
	unsigned char d[20];
	char chunk[997];
	memset(chunk, 'a', sizeof chunk);
	ftsha1_init(&c);
	size_t left = 1000000;
	unsigned step = 1;
	while (left) {
		size_t n = step % sizeof chunk + 1;
		if (n > left)
			n = left;
		ftsha1_update(&c, chunk, n);
		left -= n;
		step = step * 7 + 3;
	}
	ftsha1_final(&c, d);
	static const unsigned char want[20] = {0x34, 0xaa, 0x97, 0x3c, 0xd4, 0xc4, 0xda, 0xa4, 0xf6, 0x1e,
					       0xeb, 0x2b, 0xdb, 0xad, 0x27, 0x31, 0x65, 0x34, 0x01, 0x6f};
	assert_memory_equal(d, want, 20);
}

static void test_lengths_55_to_65(void **st)
{
	/* padding edge cases: one-shot and byte-wise must agree */
	unsigned char buf[130];
	for (size_t i = 0; i < sizeof buf; i++)
		buf[i] = (unsigned char)(i * 31 + 7);
	for (size_t n = 50; n < sizeof buf; n++) {
		struct ftsha1 a, b;
		unsigned char da[20], db[20];
		ftsha1_init(&a);
		ftsha1_update(&a, buf, n);
		ftsha1_final(&a, da);
		ftsha1_init(&b);
		for (size_t i = 0; i < n; i++)
			ftsha1_update(&b, buf + i, 1);
		ftsha1_final(&b, db);
		assert_memory_equal(da, db, 20);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vectors),
		cmocka_unit_test(test_million_a_incremental),
		cmocka_unit_test(test_lengths_55_to_65),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
