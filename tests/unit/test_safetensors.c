/* safetensors: strict header parsing, hostile files refused with clear errors, a bounded
 * random-mutation fuzz loop over the header parser, sharded models through the index. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "moe/safetensors.h"
#include "util/fsutil.h"
#include "util/timeutil.h"
#include "../lib/tmpdir.h"

static char tmpdir[256];

static int setup(void **s)
{
	return tmpdir_make(tmpdir, sizeof tmpdir, "ftst_test");
}

static int teardown(void **s)
{
	return tmpdir_remove(tmpdir);
}

/* A file: 8-byte length (hl, or strlen(hdr) when hl < 0), the header, data_len bytes. */
static void write_file(const char *name, const char *hdr, size_t hdr_len, long long hl, size_t data_len)
{
	char path[512];
	snprintf(path, sizeof path, "%s/%s", tmpdir, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	uint64_t l = hl < 0 ? hdr_len : (uint64_t)hl;
	unsigned char lb[8];
	for (int i = 0; i < 8; i++)
		lb[i] = (unsigned char)(l >> (8 * i));
	assert_int_equal(ftfs_write_all(fd, lb, 8), 0);
	assert_int_equal(ftfs_write_all(fd, hdr, hdr_len), 0);
	char *d = calloc(1, data_len + 1);
	memset(d, 0x5A, data_len);
	assert_int_equal(ftfs_write_all(fd, d, data_len), 0);
	free(d);
	close(fd);
}

/* Open a file made of hdr + data_len bytes; return rc, err in err. */
static int try_hdr(const char *hdr, long long hl, size_t data_len, char *err, size_t n)
{
	write_file("t.safetensors", hdr, strlen(hdr), hl, data_len);
	char path[512];
	snprintf(path, sizeof path, "%s/t.safetensors", tmpdir);
	struct ftst_file f;
	err[0] = '\0';
	int rc = ftst_file_open(path, &f, err, n);
	ftst_file_release(&f);
	return rc;
}

#define REFUSED(hdr, hl, dlen, needle)                                                                 \
	do {                                                                                           \
		char e_[1024];                                                                         \
		int rc_ = try_hdr(hdr, hl, dlen, e_, sizeof e_);                                       \
		if (rc_ != -EINVAL || !strstr(e_, needle))                                             \
			fail_msg("header %.60s: rc %d, error '%s' lacks '%s'", hdr, rc_, e_, needle); \
	} while (0)

static void test_valid(void **s)
{
	const char *h = "{\"__metadata__\":{\"format\":\"pt\"},\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]},"
			"\"a\":{\"dtype\":\"BF16\",\"shape\":[2,2],\"data_offsets\":[0,8]}}  ";
	write_file("v.safetensors", h, strlen(h), -1, 16);
	char path[512], err[512];
	snprintf(path, sizeof path, "%s/v.safetensors", tmpdir);
	struct ftst_file f;
	assert_int_equal(ftst_file_open(path, &f, err, sizeof err), 0);
	assert_int_equal(f.ntensors, 2);
	assert_string_equal(f.tensors[0].name, "a"); /* sorted by offset */
	assert_int_equal(f.tensors[0].offset, 8 + strlen(h));
	assert_int_equal(f.tensors[0].nbytes, 8);
	assert_int_equal(f.tensors[1].dtype, FTST_F32);
	assert_int_equal(f.tensors[1].offset, 8 + strlen(h) + 8);
	ftst_file_release(&f);
	ftst_file_release(NULL);
}

static void test_lengths(void **s)
{
	const char *ok = "{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]}}";
	REFUSED(ok, 1LL << 40, 4, "header length");
	REFUSED(ok, (long long)strlen(ok) + 100, 4, "past the end of the file");
	REFUSED(ok, 0, 4, "too short");
	REFUSED(ok, 200u << 20, 4, "cap");
	char e[512];
	/* a file shorter than the length field */
	char path[512];
	snprintf(path, sizeof path, "%s/short.safetensors", tmpdir);
	assert_int_equal(ftfs_write_atomic(path, "abc", 3, 0644), 0);
	struct ftst_file f;
	assert_int_equal(ftst_file_open(path, &f, e, sizeof e), -EINVAL);
	assert_non_null(strstr(e, "too short"));
}

static void test_offsets(void **s)
{
	REFUSED("{\"a\":{\"dtype\":\"U8\",\"shape\":[16],\"data_offsets\":[0,16]}}", -1, 8, "past the end of the data");
	REFUSED("{\"a\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[9,9]}}", -1, 8, "past the end of the data");
	REFUSED("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[8,4]}}", -1, 8, "increasing");
	REFUSED("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[-4,0]}}", -1, 8, "increasing");
	REFUSED("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0]}}", -1, 8, "data_offsets");
	REFUSED("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,\"4\"]}}", -1, 8, "data_offsets");
	REFUSED("{\"a\":{\"dtype\":\"BF16\",\"shape\":[3,3],\"data_offsets\":[0,8]}}", -1, 8, "needs 18");
	REFUSED("{\"a\":{\"dtype\":\"U8\",\"shape\":[-1],\"data_offsets\":[0,0]}}", -1, 8, "non-negative");
	REFUSED("{\"a\":{\"dtype\":\"U8\",\"shape\":[4294967296,4294967296,4294967296],\"data_offsets\":[0,8]}}", -1, 8,
		"overflows");
	REFUSED("{\"a\":{\"dtype\":\"U8\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,1]}}", -1, 8, "dimensions");
	REFUSED("{\"a\":{\"dtype\":\"U8\",\"shape\":[99999999999999999999999],\"data_offsets\":[0,1]}}", -1, 8, "JSON");
}

static void test_overlap(void **s)
{
	REFUSED("{\"a\":{\"dtype\":\"U8\",\"shape\":[8],\"data_offsets\":[0,8]},"
		"\"b\":{\"dtype\":\"U8\",\"shape\":[8],\"data_offsets\":[4,12]}}", -1, 12, "overlap");
	REFUSED("{\"a\":{\"dtype\":\"U8\",\"shape\":[8],\"data_offsets\":[0,8]},"
		"\"b\":{\"dtype\":\"U8\",\"shape\":[8],\"data_offsets\":[0,8]}}", -1, 12, "overlap");
	REFUSED("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[2,6]},"
		"\"b\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[3,5]}}", -1, 12, "overlap");
}

static void test_dtype_and_shape(void **s)
{
	REFUSED("{\"a\":{\"dtype\":\"Q9\",\"shape\":[4],\"data_offsets\":[0,4]}}", -1, 8, "unknown dtype 'Q9'");
	REFUSED("{\"a\":{\"dtype\":7,\"shape\":[4],\"data_offsets\":[0,4]}}", -1, 8, "dtype");
	REFUSED("{\"a\":{\"shape\":[4],\"data_offsets\":[0,4]}}", -1, 8, "dtype missing");
	REFUSED("{\"a\":{\"dtype\":\"U8\",\"shape\":4,\"data_offsets\":[0,4]}}", -1, 8, "shape");
	REFUSED("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4],\"x\":1}}", -1, 8, "unknown key");
	REFUSED("{\"a\":[1,2]}", -1, 8, "not an object");
	REFUSED("{\"\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]}}", -1, 8, "tensor name");
	REFUSED("{\"__metadata__\":{\"k\":1}}", -1, 8, "__metadata__");
}

static void test_json_text(void **s)
{
	REFUSED("{\"a\xff\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]}}", -1, 8, "UTF-8");
	REFUSED("{\"a\xc0\xaf\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]}}", -1, 8, "UTF-8"); /* overlong */
	REFUSED("{\"a\xed\xa0\x80\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]}}", -1, 8, "UTF-8"); /* surrogate */
	REFUSED("{\"a\":{\"b\":{\"c\":{\"d\":[1]}}}}", -1, 8, "deeper");
	char deep[20001];
	for (int i = 0; i < 10000; i++)
		deep[i] = '[', deep[10000 + i] = ']';
	deep[20000] = '\0';
	REFUSED(deep, -1, 8, "deeper");
	REFUSED("[1,2]", -1, 8, "not a JSON object");
	REFUSED("{\"a\":1,\"a\":2}", -1, 8, "not valid JSON");
	REFUSED("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]}} x", -1, 8, "not valid JSON");
	REFUSED("{\"a\\u0000\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]}}", -1, 8, "JSON");
	/* valid UTF-8 names are fine */
	char e[256];
	assert_int_equal(try_hdr("{\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]}}",
				 -1, 4, e, sizeof e), 0);
	assert_int_equal(ftst_utf8_invalid_at("ab\xf4\x90\x80\x80", 6), 2); /* past U+10FFFF */
	assert_int_equal(ftst_utf8_invalid_at("ab\xe2\x82", 4), 2);         /* truncated */
}

/* Invariants any accepted header must satisfy. */
static void check_accepted(const struct ftst_file *f, uint64_t file_size)
{
	uint64_t prev_end = f->data_start;
	for (size_t i = 0; i < f->ntensors; i++) {
		const struct ftst_tensor *t = &f->tensors[i];
		assert_true(t->offset >= prev_end);
		assert_true(t->offset + t->nbytes <= file_size);
		uint64_t n = ftst_dtype_size(t->dtype);
		for (int d = 0; d < t->ndim; d++)
			n *= (uint64_t)t->shape[d];
		assert_int_equal(n, t->nbytes);
		prev_end = t->offset + t->nbytes;
	}
}

static uint64_t rng_state = 0x1234567;
static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* Deterministic random mutations of a valid header for a bounded time: never a crash, and
 * everything accepted is consistent (run under SAN=address for out-of-bounds reads). */
static void test_fuzz_loop(void **s)
{
	const char *seed = "{\"__metadata__\":{\"format\":\"pt\"},"
			   "\"model.layers.0.mlp.experts.0.gate_proj.weight\":{\"dtype\":\"BF16\",\"shape\":[4,8],\"data_offsets\":[0,64]},"
			   "\"model.layers.0.mlp.experts.0.up_proj.weight\":{\"dtype\":\"BF16\",\"shape\":[4,8],\"data_offsets\":[64,128]},"
			   "\"b\":{\"dtype\":\"U8\",\"shape\":[2,2,2],\"data_offsets\":[128,136]}}";
	static const char tokens[][12] = {"{", "}", "[", "]", ",", ":", "\"", "0", "9", "-1", "1e3", "\\u00e9",
					  "\xff", "\xc3\xa9", "BF16", "F64", "shape", "dtype", "data_offsets", "null",
					  "99999999999", " ", "\\", "\xf0\x9f\x98"};
	size_t sl = strlen(seed);
	char *buf = malloc(sl * 4 + 64);
	double t0 = fttime_now_s(), limit = getenv("FT_FUZZ_SECONDS") ? atof(getenv("FT_FUZZ_SECONDS")) : 2.0;
	long iters = 0, accepted = 0;
	while (fttime_now_s() - t0 < limit || iters < 1000) {
		size_t n = sl;
		memcpy(buf, seed, sl);
		int muts = 1 + (int)(rnd() % 4);
		for (int m = 0; m < muts; m++) {
			size_t pos = n ? rnd() % n : 0;
			switch (rnd() % 4) {
			case 0: buf[pos] = (char)rnd(); break;
			case 1: if (n > 1) { memmove(buf + pos, buf + pos + 1, n - pos - 1); n--; } break;
			case 2: {
				const char *t = tokens[rnd() % (sizeof tokens / sizeof tokens[0])];
				size_t tl = strlen(t);
				if (n + tl < sl * 4) {
					memmove(buf + pos + tl, buf + pos, n - pos);
					memcpy(buf + pos, t, tl);
					n += tl;
				}
				break;
			}
			case 3: if (pos + 1 < n) buf[pos] = buf[pos + 1]; break;
			}
		}
		uint64_t fsz = 8 + n + (rnd() % 200);
		struct ftst_file f;
		char err[512];
		int rc = ftst_parse_header(buf, n, fsz, &f, err, sizeof err);
		if (rc == 0) {
			check_accepted(&f, fsz);
			accepted++;
		} else {
			assert_int_equal(rc, -EINVAL);
			assert_true(err[0] != '\0');
			assert_int_equal(f.ntensors, 0);
		}
		ftst_file_release(&f);
		iters++;
	}
	free(buf);
	print_message("fuzz loop: %ld headers, %ld accepted\n", iters, accepted);
	assert_true(iters >= 1000);
}

static void test_model_index(void **s)
{
	/* two shards + index; a bad index is refused */
	char dir[512], path[600];
	snprintf(dir, sizeof dir, "%s/model", tmpdir);
	assert_int_equal(ftfs_mkdir_p(dir, 0755), 0);
	struct ftst_wtensor w1[] = {{"x", FTST_BF16, 2, {2, 2}}}, w2[] = {{"y", FTST_U8, 1, {3}}};
	const struct ftst_wtensor *ws[] = {w1, w2};
	for (int i = 0; i < 2; i++) {
		char *h;
		size_t hl;
		uint64_t off[1], fsz;
		assert_int_equal(ftst_build_header(ws[i], 1, NULL, &h, &hl, off, &fsz), 0);
		assert_int_equal(hl % 8, 0);
		char *data = calloc(1, fsz);
		memcpy(data, h, hl);
		snprintf(path, sizeof path, "%s/m-%d.safetensors", dir, i);
		assert_int_equal(ftfs_write_atomic(path, data, fsz, 0644), 0);
		free(data);
		free(h);
	}
	struct ftst_model *m;
	char err[512];
	/* no index: every *.safetensors */
	assert_int_equal(ftst_model_open(dir, &m, err, sizeof err), 0);
	assert_int_equal(m->nfiles, 2);
	assert_non_null(ftst_model_find(m, "y"));
	assert_null(ftst_model_find(m, "z"));
	assert_int_equal(ftst_model_find(m, "y")->file, 1);
	ftst_model_free(m);
	snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
	const char *good = "{\"weight_map\":{\"x\":\"m-0.safetensors\",\"y\":\"m-1.safetensors\"}}";
	assert_int_equal(ftfs_write_atomic(path, good, strlen(good), 0644), 0);
	assert_int_equal(ftst_model_open(dir, &m, err, sizeof err), 0);
	ftst_model_free(m);
	const char *bad[][2] = {
		{"{\"weight_map\":{\"x\":\"../m-0.safetensors\"}}", "plain file name"},
		{"{\"weight_map\":{\"x\":\"m-1.safetensors\",\"y\":\"m-1.safetensors\"}}", "index puts 'x'"},
		{"{\"weight_map\":{\"x\":\"m-0.safetensors\",\"z\":\"m-0.safetensors\"}}", "does not hold it"},
		{"{\"weight_map\":{\"x\":\"nope.safetensors\"}}", "nope.safetensors"},
		{"{\"weight_map\":{}}", "weight_map"},
		{"{\"weight_map\":{\"x\":[[[[[1]]]]]}}", "deep"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		assert_int_equal(ftfs_write_atomic(path, bad[i][0], strlen(bad[i][0]), 0644), 0);
		err[0] = '\0';
		int rc = ftst_model_open(dir, &m, err, sizeof err);
		if (rc >= 0 || !strstr(err, bad[i][1]))
			fail_msg("index %s: rc %d err '%s'", bad[i][0], rc, err);
		assert_null(m);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid),           cmocka_unit_test(test_lengths),
		cmocka_unit_test(test_offsets),         cmocka_unit_test(test_overlap),
		cmocka_unit_test(test_dtype_and_shape), cmocka_unit_test(test_json_text),
		cmocka_unit_test(test_fuzz_loop),       cmocka_unit_test(test_model_index),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
