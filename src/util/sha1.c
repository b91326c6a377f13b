#include "util/sha1.h"

#include <string.h>

static uint32_t rol(uint32_t x, int n)
{
	return (x << n) | (x >> (32 - n));
}

static void block(struct ftsha1 *c, const unsigned char *p)
{
	uint32_t w[80];
	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 |
		       (uint32_t)p[4 * i + 3];
	for (int i = 16; i < 80; i++)
		w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
	uint32_t a = c->h[0], b = c->h[1], d = c->h[3], e = c->h[4], cc = c->h[2];
	for (int i = 0; i < 80; i++) {
		uint32_t f, k;
		if (i < 20) {
			f = (b & cc) | (~b & d);
			k = 0x5A827999u;
		} else if (i < 40) {
			f = b ^ cc ^ d;
			k = 0x6ED9EBA1u;
		} else if (i < 60) {
			f = (b & cc) | (b & d) | (cc & d);
			k = 0x8F1BBCDCu;
		} else {
			f = b ^ cc ^ d;
			k = 0xCA62C1D6u;
		}
		uint32_t t = rol(a, 5) + f + e + k + w[i];
		e = d;
		d = cc;
		cc = rol(b, 30);
		b = a;
		a = t;
	}
	c->h[0] += a;
	c->h[1] += b;
	c->h[2] += cc;
	c->h[3] += d;
	c->h[4] += e;
}

void ftsha1_init(struct ftsha1 *c)
{
	static const uint32_t iv[5] = {0x67452301u, 0xEFCDAB89u, 0x98BADCFEu, 0x10325476u, 0xC3D2E1F0u};
	memcpy(c->h, iv, sizeof iv);
	c->len = 0;
	c->used = 0;
}

void ftsha1_update(struct ftsha1 *c, const void *data, size_t n)
{
	const unsigned char *p = data;
	c->len += n;
	if (c->used) {
		size_t take = 64 - c->used < n ? 64 - c->used : n;
		memcpy(c->buf + c->used, p, take);
		c->used += take;
		p += take;
		n -= take;
		if (c->used < 64)
			return;
		block(c, c->buf);
		c->used = 0;
	}
	for (; n >= 64; p += 64, n -= 64)
		block(c, p);
	if (n) {
		memcpy(c->buf, p, n);
		c->used = n;
	}
}

void ftsha1_final(struct ftsha1 *c, unsigned char out[20])
{
	uint64_t bits = c->len * 8;
	unsigned char pad[72] = {0x80};
	size_t padlen = c->used < 56 ? 56 - c->used : 120 - c->used;
	unsigned char lenb[8];
	for (int i = 0; i < 8; i++)
		lenb[i] = (unsigned char)(bits >> (56 - 8 * i));
	ftsha1_update(c, pad, padlen);
	ftsha1_update(c, lenb, 8);
	for (int i = 0; i < 5; i++) {
		out[4 * i] = (unsigned char)(c->h[i] >> 24);
		out[4 * i + 1] = (unsigned char)(c->h[i] >> 16);
		out[4 * i + 2] = (unsigned char)(c->h[i] >> 8);
		out[4 * i + 3] = (unsigned char)c->h[i];
	}
}

void ftsha1_hex(const void *data, size_t n, char hex[41])
{
	static const char dig[] = "0123456789abcdef";
	struct ftsha1 c;
	unsigned char d[20];
	ftsha1_init(&c);
	ftsha1_update(&c, data, n);
	ftsha1_final(&c, d);
	for (int i = 0; i < 20; i++) {
		hex[2 * i] = dig[d[i] >> 4];
		hex[2 * i + 1] = dig[d[i] & 15];
	}
	hex[40] = '\0';
}
