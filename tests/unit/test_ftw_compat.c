/* ftw and banks for the seed's files and checkpoints: gpt-oss bf16's de-interleaving transpose
 * whatever the read chunks (an element split between two chunks included); an FTW of a model
 * with a dense first layer numbers its banks 0..L-1 and still loads with the model's layer
 * numbers; ftftw_remove takes out what a conversion wrote, sub-folders included, and never
 * follows a link. (tests/integration/ftw_compat.sh covers the files both ways.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "moe/banks.h"
#include "moe/checksum.h"
#include "moe/ckptgen.h"
#include "moe/ftw.h"
#include "moe/loader.h"
#include "util/fsutil.h"
#include "../lib/tmpdir.h"

static char tmpdir[256];

static int setup(void **s)
{
	return tmpdir_make(tmpdir, sizeof tmpdir, "ftw_compat");
}

static int teardown(void **s)
{
	return tmpdir_remove(tmpdir);
}

/* One expert of gpt-oss bf16: gate_up_proj [H][2I] -> bank [2I][H], even columns to rows 0..I-1,
 * odd ones to rows I..2I-1; down_proj [I][H] -> [H][I]. Fed in chunks that start and end inside
 * elements, chunks holding whole rows between partial ones, and whole tensors. */
static void test_deinterleave_chunks(void **s)
{
	(void)s;
	const long H = 12, I = 5, E = 2;
	struct ftbanks *b;
	assert_int_equal(ftbanks_alloc(ftfmt_get(FTFMT_BF16), H, I, E, 1, NULL, &b), 0);
	uint16_t src[2][H * 2 * I], dsrc[2][I * H];
	for (long e = 0; e < E; e++) {
		for (long i = 0; i < H * 2 * I; i++)
			src[e][i] = (uint16_t)(0x1000 * (e + 1) + i);
		for (long i = 0; i < I * H; i++)
			dsrc[e][i] = (uint16_t)(0x8000 + 0x1000 * e + i);
	}
	for (int pass = 0; pass < 3; pass++) {
		memset(ftbanks_layer(b, 0, 0), 0, b->layer_bytes[0]);
		memset(ftbanks_layer(b, 1, 0), 0, b->layer_bytes[1]);
		/* chunks of 1..13 bytes (inside rows), 37..65 (whole rows between partial ones), whole tensors */
		size_t k0 = pass == 0 ? 1 : pass == 1 ? 37 : sizeof src[0], kmod = pass == 0 ? 13 : 29;
		for (long e = 0; e < E; e++) {
			struct ftbanks_piece gu = {0, 0, sizeof src[e], 0, 0, (uint64_t)e * 2 * I * H * 2, 1, (uint32_t)H, (uint32_t)(2 * I), 2, 1, NULL};
			struct ftbanks_piece dn = {0, 0, sizeof dsrc[e], 1, 0, (uint64_t)e * H * I * 2, 1, (uint32_t)I, (uint32_t)H, 2, 0, NULL};
			const uint8_t *p = (const uint8_t *)src[e], *q = (const uint8_t *)dsrc[e];
			for (size_t off = 0, k = k0; off < sizeof src[e]; off += k, k = pass == 2 ? k : k0 + (k + 1) % kmod)
				ftbanks_piece_copy(&gu, b, off, p + off, off + k > sizeof src[e] ? sizeof src[e] - off : k);
			for (size_t off = 0, k = k0 + 2; off < sizeof dsrc[e]; off += k, k = pass == 2 ? k : k0 + (k + 1) % kmod)
				ftbanks_piece_copy(&dn, b, off, q + off, off + k > sizeof dsrc[e] ? sizeof dsrc[e] - off : k);
		}
		const uint16_t *g = (const uint16_t *)ftbanks_layer(b, 0, 0), *d = (const uint16_t *)ftbanks_layer(b, 1, 0);
		for (long e = 0; e < E; e++) {
			for (long r = 0; r < I; r++)
				for (long h = 0; h < H; h++) {
					assert_int_equal(g[(e * 2 * I + r) * H + h], src[e][h * 2 * I + 2 * r]);         /* gate */
					assert_int_equal(g[(e * 2 * I + I + r) * H + h], src[e][h * 2 * I + 2 * r + 1]); /* up */
				}
			for (long h = 0; h < H; h++)
				for (long i = 0; i < I; i++)
					assert_int_equal(d[(e * H + h) * I + i], dsrc[e][i * H + h]);
		}
	}
	ftbanks_free(b);
}

/* DeepSeek-V3 with its dense layer 0: banks #L00000, #L00001 (not #L00001, #L00002), the model
 * layers in expert_bank_layer_ids, read back with layer_ids 1, 2 and the serial reader's bytes. */
static void test_moe_layers_from_zero(void **s)
{
	(void)s;
	char dir[600], ftw[600], err[1024], p[700];
	snprintf(dir, sizeof dir, "%s/dsv3", tmpdir);
	snprintf(ftw, sizeof ftw, "%s/dsv3.ftw", tmpdir);
	struct ftckpt_opts co = {"deepseek-v3", dir, 3, 4, 128, 64, 1u << 20, 2, 7, NULL};
	struct ftckpt_stats cs;
	assert_int_equal(ftckpt_write(&co, &cs, err, sizeof err), 0);
	struct ftftw_convert_opts fo = {0, {FTLOAD_SERIAL, 0, 0, NULL}};
	struct ftftw_convert_stats fs;
	assert_int_equal(ftftw_convert(dir, ftw, &fo, &fs, err, sizeof err), 0);
	snprintf(p, sizeof p, "%s/%s", ftw, FTFTW_INDEX);
	json_t *idx = json_load_file(p, 0, NULL);
	assert_non_null(idx);
	assert_int_equal(json_integer_value(json_object_get(idx, "expert_bank_num_layers")), 2);
	json_t *lids = json_object_get(idx, "expert_bank_layer_ids");
	assert_int_equal(json_integer_value(json_array_get(lids, 0)), 1);
	assert_int_equal(json_integer_value(json_array_get(lids, 1)), 2);
	assert_string_equal(json_string_value(json_object_get(idx, "weight_names")), "checkpoint");
	int seen[3] = {0};
	size_t i;
	json_t *t;
	json_array_foreach(json_object_get(idx, "tensors"), i, t) {
		const char *n = json_string_value(json_object_get(t, "name"));
		const char *h = strstr(n, "#L");
		if (h)
			seen[atoi(h + 2) < 3 ? atoi(h + 2) : 2]++;
		assert_null(strstr(json_string_value(json_object_get(t, "dtype")), "BF16"));
	}
	assert_int_equal(seen[0], 2);
	assert_int_equal(seen[1], 2);
	assert_int_equal(seen[2], 0);
	json_decref(idx);
	struct ftload_opts so = {FTLOAD_SERIAL, 0, 0, NULL};
	struct ftbanks *a, *b;
	struct ftload_stats st;
	assert_int_equal(ftload_model(dir, &so, &a, &st, err, sizeof err), 0);
	assert_int_equal(ftload_model(ftw, &so, &b, &st, err, sizeof err), 0);
	assert_int_equal(b->L, 2);
	assert_int_equal(b->layer_ids[0], 1);
	assert_int_equal(b->layer_ids[1], 2);
	for (int k = 0; k < a->nbanks; k++)
		for (long l = 0; l < a->L; l++)
			assert_memory_equal(ftbanks_layer(a, k, l), ftbanks_layer(b, k, l), a->layer_bytes[k]);
	ftbanks_free(a);
	ftbanks_free(b);
}

static int exists(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0;
}

static void put(const char *path, const char *text)
{
	assert_int_equal(tmpdir_put(path, text, strlen(text)), 0);
}

/* Metadata in sub-folders is copied and listed; ftftw_remove takes out the index, shards and
 * those files, leaves what it did not write, and does not follow a folder replaced by a link. */
static void test_metadata_and_remove(void **s)
{
	(void)s;
	char dir[600], ftw[600], err[1024], p[900], q[700];
	snprintf(dir, sizeof dir, "%s/qw", tmpdir);
	snprintf(ftw, sizeof ftw, "%s/qw.ftw", tmpdir);
	struct ftckpt_opts co = {"qwen3-moe", dir, 2, 2, 128, 64, 0, 2, 3, NULL};
	struct ftckpt_stats cs;
	assert_int_equal(ftckpt_write(&co, &cs, err, sizeof err), 0);
	snprintf(p, sizeof p, "%s/inference/config.json", dir);
	put(p, "{\"dim\":128}");
	snprintf(p, sizeof p, "%s/encoding/deep/vocab.txt", dir);
	put(p, "v");
	snprintf(p, sizeof p, "%s/.git/HEAD", dir);
	put(p, "ref");
	struct ftftw_convert_opts fo = {0, {FTLOAD_SERIAL, 0, 0, NULL}};
	struct ftftw_convert_stats fs;
	assert_int_equal(ftftw_convert(dir, ftw, &fo, &fs, err, sizeof err), 0);
	snprintf(p, sizeof p, "%s/encoding/deep/vocab.txt", ftw);
	assert_true(exists(p));
	snprintf(p, sizeof p, "%s/.git", ftw);
	assert_false(exists(p));
	snprintf(p, sizeof p, "%s/%s", ftw, FTFTW_INDEX);
	json_t *idx = json_load_file(p, 0, NULL);
	int listed = 0;
	size_t i;
	json_t *v;
	json_array_foreach(json_object_get(idx, "copied_metadata"), i, v)
		listed += !strcmp(json_string_value(v), "inference/config.json") ||
			  !strcmp(json_string_value(v), "encoding/deep/vocab.txt");
	json_decref(idx);
	assert_int_equal(listed, 2);
	/* a file ftbench did not write stays; "inference" becomes a link to a folder outside */
	snprintf(p, sizeof p, "%s/encoding/mine.txt", ftw);
	put(p, "mine");
	char outside[700];
	snprintf(outside, sizeof outside, "%s/outside", tmpdir);
	snprintf(p, sizeof p, "%s/config.json", outside);
	put(p, "precious");
	snprintf(q, sizeof q, "%s/inference", ftw);
	assert_int_equal(tmpdir_remove(q), 0);
	assert_int_equal(symlink(outside, q), 0);
	assert_int_equal(ftftw_remove(ftw), 0);
	assert_false(ftftw_is_dir(ftw));
	snprintf(p, sizeof p, "%s/config.json", outside);
	assert_true(exists(p));                /* not followed */
	snprintf(p, sizeof p, "%s/encoding/mine.txt", ftw);
	assert_true(exists(p));                /* not ours */
	snprintf(p, sizeof p, "%s/encoding/deep", ftw);
	assert_false(exists(p));               /* emptied, removed */
	snprintf(p, sizeof p, "%s/freetoken-00000.ftw", ftw);
	assert_false(exists(p));
	assert_int_equal(ftftw_remove(ftw), -ENOENT);
	/* a plain conversion goes away completely */
	assert_int_equal(tmpdir_remove(ftw), 0);
	assert_int_equal(ftftw_convert(dir, ftw, &fo, &fs, err, sizeof err), 0);
	assert_int_equal(ftftw_remove(ftw), 0);
	assert_false(exists(ftw));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_deinterleave_chunks),
		cmocka_unit_test(test_moe_layers_from_zero),
		cmocka_unit_test(test_metadata_and_remove),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
