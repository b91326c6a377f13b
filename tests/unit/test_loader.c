/* banks, loader, ftw, checksum, ckptgen: every synthetic architecture loads identically with the
 * serial, parallel and FTW readers; bank bytes equal the tensors they came from; reordered
 * experts change the checksum; unsupported layouts are refused with a reason. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <jansson.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "moe/banks.h"
#include "moe/checksum.h"
#include "moe/ckptgen.h"
#include "moe/directio.h"
#include "moe/ftw.h"
#include "moe/loader.h"
#include "util/fsutil.h"
#include "../lib/tmpdir.h"

static char tmpdir[256];

static int setup(void **s)
{
	return tmpdir_make(tmpdir, sizeof tmpdir, "ftld_test");
}

static int teardown(void **s)
{
	return tmpdir_remove(tmpdir);
}

static void banks_equal(const struct ftbanks *a, const struct ftbanks *b)
{
	assert_int_equal(a->nbanks, b->nbanks);
	assert_int_equal(a->L, b->L);
	assert_int_equal(a->E, b->E);
	for (int k = 0; k < a->nbanks; k++) {
		assert_int_equal(a->layer_bytes[k], b->layer_bytes[k]);
		assert_int_equal(ftcks_bank(a, k), ftcks_bank(b, k));
		for (long l = 0; l < a->L; l++) {
			assert_int_equal(a->layer_ids[l], b->layer_ids[l]);
			assert_memory_equal(ftbanks_layer(a, k, l), ftbanks_layer(b, k, l), a->layer_bytes[k]);
		}
	}
}

/* ---------------------------------------------------------------- an independent reading
 * What the banks must hold, read here straight from the files: every *.safetensors of the
 * directory, its header (8-byte little-endian length, JSON) parsed with jansson, tensors found by
 * name; neither moe/safetensors nor the loader's plan is used. The layouts (banks.h):
 *   per-expert (Qwen3, DeepSeek-V3) and Mixtral: gate_up[e] = gate_e rows then up_e rows, down[e];
 *   packed 3-D bf16: gate_up_proj [E, 2I, H] as stored, or gate_proj, up_proj [E, I, H]
 *     interleaved per expert; down_proj [E, H, I] as stored (".weight" optional);
 *   gpt-oss mxfp4: per expert, blocks [N, K/2] -> [K/2, N] and scales [N, K/32] -> [K/32, N]
 *     (transposed), biases [E, N] as stored; N = 2I, K = H for gate_up, N = H, K = I for down;
 *   gpt-oss bf16 (config.json's model_type gpt_oss, or bias tensors): per expert gate_up_proj
 *     [H, 2I] -> gate_up [2I, H] with gate row r = column 2r, up row r = column 2r + 1, and
 *     down_proj [I, H] -> down [H, I]; the biases are no bank. */
struct rtensor {
	char name[256], dtype[16], path[2048];
	int ndim;
	long shape[8];
	uint64_t off, n;
};
struct rckpt {
	struct rtensor *t;
	size_t n;
};

static void rckpt_add_file(struct rckpt *c, const char *path)
{
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	uint8_t l8[8];
	assert_int_equal(fread(l8, 1, 8, f), 8);
	uint64_t hl = 0;
	for (int i = 7; i >= 0; i--)
		hl = hl << 8 | l8[i];
	assert_true(hl > 0 && hl < (64u << 20));
	char *h = malloc(hl);
	assert_non_null(h);
	assert_int_equal(fread(h, 1, hl, f), hl);
	fclose(f);
	json_error_t je;
	json_t *j = json_loadb(h, hl, 0, &je);
	if (!json_is_object(j))
		fail_msg("%s: header is not a JSON object: %s", path, je.text);
	const char *k;
	json_t *v;
	json_object_foreach(j, k, v) {
		if (!strcmp(k, "__metadata__"))
			continue;
		c->t = realloc(c->t, (c->n + 1) * sizeof *c->t);
		assert_non_null(c->t);
		struct rtensor *t = &c->t[c->n++];
		snprintf(t->name, sizeof t->name, "%s", k);
		snprintf(t->path, sizeof t->path, "%s", path);
		snprintf(t->dtype, sizeof t->dtype, "%s", json_string_value(json_object_get(v, "dtype")));
		json_t *sh = json_object_get(v, "shape"), *o = json_object_get(v, "data_offsets");
		t->ndim = (int)json_array_size(sh);
		assert_true(t->ndim <= 8);
		for (int i = 0; i < t->ndim; i++)
			t->shape[i] = (long)json_integer_value(json_array_get(sh, (size_t)i));
		uint64_t a = (uint64_t)json_integer_value(json_array_get(o, 0)), b = (uint64_t)json_integer_value(json_array_get(o, 1));
		t->off = 8 + hl + a;
		t->n = b - a;
	}
	json_decref(j);
	free(h);
}

static void rckpt_open(struct rckpt *c, const char *dir)
{
	memset(c, 0, sizeof *c);
	DIR *d = opendir(dir);
	assert_non_null(d);
	struct dirent *de;
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);
		if (l > 12 && !strcmp(de->d_name + l - 12, ".safetensors")) {
			char p[2048];
			snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
			rckpt_add_file(c, p);
		}
	}
	closedir(d);
	assert_true(c->n > 0);
}

static const struct rtensor *rckpt_find(const struct rckpt *c, const char *name)
{
	for (size_t i = 0; i < c->n; i++)
		if (!strcmp(c->t[i].name, name))
			return &c->t[i];
	return NULL;
}

/* The bytes of tensor `name` (or of `name`.weight); NULL when neither exists. */
static uint8_t *rckpt_read(const struct rckpt *c, const char *name, uint64_t *n)
{
	char w[300];
	const struct rtensor *t = rckpt_find(c, name);
	snprintf(w, sizeof w, "%s.weight", name);
	if (!t)
		t = rckpt_find(c, w);
	if (!t)
		return NULL;
	uint8_t *b = malloc(t->n ? t->n : 1);
	FILE *f = fopen(t->path, "rb");
	assert_non_null(f);
	assert_int_equal(fseeko(f, (off_t)t->off, SEEK_SET), 0);
	assert_int_equal(fread(b, 1, t->n, f), t->n);
	fclose(f);
	*n = t->n;
	return b;
}

static uint8_t *must_read(const struct rckpt *c, uint64_t want, const char *fmt, ...)
{
	char name[300];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(name, sizeof name, fmt, ap);
	va_end(ap);
	uint64_t n = 0;
	uint8_t *b = rckpt_read(c, name, &n);
	if (!b)
		fail_msg("tensor %s not in the checkpoint", name);
	if (n != want)
		fail_msg("tensor %s: %llu bytes, want %llu", name, (unsigned long long)n, (unsigned long long)want);
	return b;
}

static void same_bytes(const struct ftbanks *b, const char *bank, long li, const uint8_t *want, size_t n)
{
	int k = ftbanks_find(b, bank);
	if (k < 0)
		fail_msg("no bank %s", bank);
	assert_int_equal(b->layer_bytes[k], n);
	const uint8_t *got = ftbanks_layer(b, k, li);
	for (size_t i = 0; i < n; i++)
		if (got[i] != want[i])
			fail_msg("bank %s layer %d: byte %zu is %u, the checkpoint gives %u", bank, b->layer_ids[li], i,
				 got[i], want[i]);
}

/* Per expert, a row-major [N][C] byte matrix -> [C][N]. */
static uint8_t *transposed(const uint8_t *t, long E, long N, long C)
{
	uint8_t *o = malloc((size_t)(E * N * C));
	assert_non_null(o);
	for (long e = 0; e < E; e++)
		for (long r = 0; r < N; r++)
			for (long c = 0; c < C; c++)
				o[e * N * C + c * N + r] = t[e * N * C + r * C + c];
	return o;
}

/* config.json's model_type (text_config's when nested), "" when none. */
static void model_type(const char *dir, char *out, size_t n)
{
	char p[2048];
	snprintf(p, sizeof p, "%s/config.json", dir);
	json_t *j = json_load_file(p, 0, NULL), *t = json_object_get(j, "text_config");
	const char *mt = json_string_value(json_object_get(j, "model_type"));
	if (!mt)
		mt = json_string_value(json_object_get(t, "model_type"));
	snprintf(out, n, "%s", mt ? mt : "");
	json_decref(j);
}

/* Every bank of every layer of b against the checkpoint in dir, byte for byte. */
static void check_banks(const struct ftbanks *b, const char *dir)
{
	struct rckpt c;
	rckpt_open(&c, dir);
	char mt[64];
	model_type(dir, mt, sizeof mt);
	long E = b->E, H = b->H, I = b->I;
	uint64_t mat = (uint64_t)I * H * 2; /* one [I, H] bf16 matrix */
	/* the MoE layers: every layer index with expert tensors, in order */
	int seen[FTBANKS_MAX_LAYERS] = {0};
	for (size_t i = 0; i < c.n; i++) {
		const char *p = strstr(c.t[i].name, "layers.");
		if (p && strstr(c.t[i].name, ".experts."))
			seen[atoi(p + 7)] = 1;
	}
	long L = 0;
	for (int l = 0; l < FTBANKS_MAX_LAYERS; l++)
		if (seen[l]) {
			assert_true(L < b->L);
			assert_int_equal(b->layer_ids[L], l);
			L++;
		}
	assert_int_equal(L, b->L);
	for (long li = 0; li < b->L; li++) {
		int l = b->layer_ids[li];
		char name[300];
		snprintf(name, sizeof name, "model.layers.%d.mlp.experts.gate_up_proj_blocks", l);
		if (rckpt_find(&c, name)) { /* gpt-oss mxfp4 */
			struct {
				const char *bank, *part;
				long N, K;
			} m[2] = {{"gate_up", "gate_up_proj", 2 * I, H}, {"down", "down_proj", H, I}};
			for (int k = 0; k < 2; k++) {
				long N = m[k].N, K = m[k].K;
				char bank[64];
				uint8_t *t = must_read(&c, (uint64_t)(E * N * K / 2), "model.layers.%d.mlp.experts.%s_blocks", l, m[k].part);
				uint8_t *x = transposed(t, E, N, K / 2);
				snprintf(bank, sizeof bank, "%s_blocks", m[k].bank);
				same_bytes(b, bank, li, x, (size_t)(E * N * K / 2));
				free(t), free(x);
				t = must_read(&c, (uint64_t)(E * N * K / 32), "model.layers.%d.mlp.experts.%s_scales", l, m[k].part);
				x = transposed(t, E, N, K / 32);
				snprintf(bank, sizeof bank, "%s_scales", m[k].bank);
				same_bytes(b, bank, li, x, (size_t)(E * N * K / 32));
				free(t), free(x);
				t = must_read(&c, (uint64_t)(E * N * 2), "model.layers.%d.mlp.experts.%s_bias", l, m[k].part);
				snprintf(bank, sizeof bank, "%s_bias", m[k].bank);
				same_bytes(b, bank, li, t, (size_t)(E * N * 2));
				free(t);
			}
			continue;
		}
		uint8_t *gu = malloc(E * 2 * mat), *dn = NULL;
		assert_non_null(gu);
		uint64_t n;
		snprintf(name, sizeof name, "model.layers.%d.mlp.experts.gate_up_proj", l);
		uint8_t *t = rckpt_read(&c, name, &n);
		snprintf(name, sizeof name, "model.layers.%d.mlp.experts.gate_up_proj_bias", l);
		int oss = !strcmp(mt, "gpt_oss") || rckpt_find(&c, name);
		snprintf(name, sizeof name, "model.layers.%d.mlp.experts.gate_proj", l);
		if (t && oss) { /* gpt-oss bf16: [E, H, 2I] interleaved, [E, I, H] */
			assert_int_equal(n, E * 2 * mat);
			const uint16_t *s16 = (const uint16_t *)t;
			uint16_t *g16 = (uint16_t *)gu;
			for (long e = 0; e < E; e++)
				for (long h = 0; h < H; h++)
					for (long col = 0; col < 2 * I; col++)
						g16[e * 2 * I * H + (col % 2 ? I + col / 2 : col / 2) * H + h] =
							s16[e * H * 2 * I + h * 2 * I + col];
			free(t);
			uint16_t *d = (uint16_t *)must_read(&c, E * mat, "model.layers.%d.mlp.experts.down_proj", l);
			dn = malloc(E * mat);
			assert_non_null(dn);
			uint16_t *d16 = (uint16_t *)dn;
			for (long e = 0; e < E; e++)
				for (long i = 0; i < I; i++)
					for (long h = 0; h < H; h++)
						d16[e * H * I + h * I + i] = d[e * I * H + i * H + h];
			free(d);
		} else if (t) { /* packed [E, 2I, H] */
			assert_int_equal(n, E * 2 * mat);
			memcpy(gu, t, n);
			free(t);
			dn = must_read(&c, E * mat, "model.layers.%d.mlp.experts.down_proj", l);
		} else if (rckpt_find(&c, name) || (strcat(name, ".weight"), rckpt_find(&c, name))) { /* packed [E, I, H] x 2 */
			uint8_t *g = must_read(&c, E * mat, "model.layers.%d.mlp.experts.gate_proj", l);
			uint8_t *u = must_read(&c, E * mat, "model.layers.%d.mlp.experts.up_proj", l);
			for (long e = 0; e < E; e++) {
				memcpy(gu + e * 2 * mat, g + e * mat, mat);
				memcpy(gu + e * 2 * mat + mat, u + e * mat, mat);
			}
			free(g), free(u);
			dn = must_read(&c, E * mat, "model.layers.%d.mlp.experts.down_proj", l);
		} else { /* one tensor per expert and projection */
			snprintf(name, sizeof name, "model.layers.%d.block_sparse_moe.experts.0.w1.weight", l);
			int mix = rckpt_find(&c, name) != NULL;
			const char *pg = mix ? "block_sparse_moe.experts.%ld.w1" : "mlp.experts.%ld.gate_proj";
			const char *pu = mix ? "block_sparse_moe.experts.%ld.w3" : "mlp.experts.%ld.up_proj";
			const char *pd = mix ? "block_sparse_moe.experts.%ld.w2" : "mlp.experts.%ld.down_proj";
			dn = malloc(E * mat);
			assert_non_null(dn);
			for (long e = 0; e < E; e++) {
				const char *parts[3] = {pg, pu, pd};
				uint8_t *dst[3] = {gu + e * 2 * mat, gu + e * 2 * mat + mat, dn + e * mat};
				for (int k = 0; k < 3; k++) {
					char fmt[160], sub[300];
					snprintf(fmt, sizeof fmt, "model.layers.%%d.%s.weight", parts[k]);
					snprintf(sub, sizeof sub, fmt, l, e);
					uint8_t *x = must_read(&c, mat, "%s", sub);
					memcpy(dst[k], x, mat);
					free(x);
				}
			}
		}
		same_bytes(b, "gate_up", li, gu, E * 2 * mat);
		same_bytes(b, "down", li, dn, E * mat);
		free(gu), free(dn);
	}
	free(c.t);
}

static void one_arch(const char *arch, long L, long E, long H, long I)
{
	char dir[512], ftw[512], err[1024];
	snprintf(dir, sizeof dir, "%s/%s", tmpdir, arch);
	snprintf(ftw, sizeof ftw, "%s/%s.ftw", tmpdir, arch);
	struct ftckpt_opts co = {arch, dir, L, E, H, I, 1u << 20, 3, 42, NULL};
	struct ftckpt_stats cs;
	if (ftckpt_write(&co, &cs, err, sizeof err) < 0)
		fail_msg("%s: %s", arch, err);
	assert_true(cs.nshards > 1);
	struct ftload_opts so = {FTLOAD_SERIAL, 0, 0, NULL}, po = {FTLOAD_PARALLEL, 3, 64 << 10, NULL};
	struct ftbanks *bs, *bp, *bf;
	struct ftload_stats st;
	if (ftload_model(dir, &so, &bs, &st, err, sizeof err) < 0)
		fail_msg("%s serial: %s", arch, err);
	assert_string_equal(st.loader, "serial");
	/* gpt-oss bf16's biases are expert tensors but no bank of the bf16 format */
	size_t bias = !strcmp(arch, "gpt-oss-bf16") ? (size_t)(L * E * (2 * I + H) * 2) : 0;
	assert_int_equal(ftbanks_bytes(bs) + bias, cs.expert_bytes);
	if (ftload_model(dir, &po, &bp, &st, err, sizeof err) < 0)
		fail_msg("%s parallel: %s", arch, err);
	assert_string_equal(st.loader, "parallel");
	assert_true(st.file_bytes >= cs.expert_bytes);
	banks_equal(bs, bp);
	struct ftftw_convert_opts fo = {256u << 10, po};
	struct ftftw_convert_stats fs;
	if (ftftw_convert(dir, ftw, &fo, &fs, err, sizeof err) < 0)
		fail_msg("%s convert: %s", arch, err);
	assert_true(fs.nshards > 1);
	assert_true(ftftw_is_dir(ftw));
	assert_false(ftftw_is_dir(dir));
	struct ftload_opts fro = {FTLOAD_AUTO, 4, 128 << 10, NULL};
	if (ftload_model(ftw, &fro, &bf, &st, err, sizeof err) < 0)
		fail_msg("%s ftw: %s", arch, err);
	assert_string_equal(st.loader, "ftw");
	banks_equal(bs, bf);
	/* each loader's banks against the checkpoint itself (not only against each other) */
	check_banks(bs, dir);
	check_banks(bp, dir);
	check_banks(bf, dir);
	/* the geometry */
	assert_int_equal(bs->E, E);
	assert_int_equal(bs->H, H);
	assert_int_equal(bs->I, I);
	assert_int_equal(bs->L, !strcmp(arch, "deepseek-v3") ? L - 1 : L);
	if (!strcmp(arch, "deepseek-v3"))
		assert_int_equal(bs->layer_ids[0], 1); /* the dense first layer is not a bank */
	assert_string_equal(bs->fmt->name, !strcmp(arch, "gpt-oss") ? "mxfp4_triton" : "bf16");
	/* config.json copied with the FTW */
	char p[600];
	snprintf(p, sizeof p, "%s/config.json", ftw);
	assert_int_equal(access(p, R_OK), 0);
	ftbanks_free(bs);
	ftbanks_free(bp);
	ftbanks_free(bf);
}

static void test_qwen3(void **s) { one_arch("qwen3-moe", 3, 4, 256, 128); }
static void test_mixtral(void **s) { one_arch("mixtral", 2, 5, 192, 96); }
static void test_deepseek(void **s) { one_arch("deepseek-v3", 3, 4, 256, 64); }
static void test_gptoss(void **s) { one_arch("gpt-oss", 2, 4, 256, 128); }
static void test_gptoss_bf16(void **s) { one_arch("gpt-oss-bf16", 2, 4, 256, 96); }

static void test_reorder_caught(void **s)
{
	struct ftbanks *b;
	assert_int_equal(ftbanks_alloc(ftfmt_lookup("bf16"), 256, 128, 8, 3, NULL, &b), 0);
	uint64_t x = 99;
	for (int k = 0; k < b->nbanks; k++)
		for (long l = 0; l < b->L; l++) {
			uint8_t *p = ftbanks_layer(b, k, l);
			for (size_t i = 0; i < b->layer_bytes[k]; i++) {
				x = x * 6364136223846793005ULL + 1442695040888963407ULL;
				p[i] = (uint8_t)(x >> 56) | 1;
			}
		}
	uint64_t before = ftcks_bank(b, 0);
	uint64_t sum_before = 0, sum_after = 0;
	uint8_t *p = ftbanks_layer(b, 0, 1);
	size_t eb = b->shape[0].expert_bytes;
	for (size_t i = 0; i < b->layer_bytes[0]; i++)
		sum_before += p[i];
	for (size_t i = 0; i < eb; i++) { /* swap experts 2 and 5 of layer 1 */
		uint8_t t = p[2 * eb + i];
		p[2 * eb + i] = p[5 * eb + i];
		p[5 * eb + i] = t;
	}
	for (size_t i = 0; i < b->layer_bytes[0]; i++)
		sum_after += p[i];
	assert_int_equal(sum_before, sum_after); /* a plain sum would miss it */
	assert_int_not_equal(before, ftcks_bank(b, 0));
	/* swapping whole layers is caught too */
	uint64_t c2 = ftcks_bank(b, 1);
	uint8_t *l0 = ftbanks_layer(b, 1, 0), *l2 = ftbanks_layer(b, 1, 2);
	for (size_t i = 0; i < b->layer_bytes[1]; i++) {
		uint8_t t = l0[i];
		l0[i] = l2[i];
		l2[i] = t;
	}
	assert_int_not_equal(c2, ftcks_bank(b, 1));
	ftbanks_free(b);
	ftbanks_free(NULL);
}

static void test_checksum_formula(void **s)
{
	/* small: every byte sampled, h = sum b[pos] * (pos + 1) */
	uint8_t a[3] = {1, 2, 3}, c[2] = {4, 5};
	const uint8_t *parts[2] = {a, c};
	assert_int_equal(ftcks_parts(parts, 1, 3), 1 * 1 + 2 * 2 + 3 * 3);
	uint8_t ab[4] = {1, 2, 4, 5};
	const uint8_t *p2[2] = {ab, ab + 2};
	assert_int_equal(ftcks_parts(p2, 2, 2), 1 * 1 + 2 * 2 + 4 * 3 + 5 * 4); /* split-independent */
	/* large: step = total / 1e6 */
	size_t n = 3000000;
	uint8_t *big = malloc(n);
	memset(big, 1, n);
	const uint8_t *pb[1] = {big};
	uint64_t want = 0;
	for (uint64_t pos = 0; pos < n; pos += 3)
		want += pos % 1000000007ULL + 1;
	assert_int_equal(ftcks_parts(pb, 1, n), want);
	free(big);
}

/* Write a one-file checkpoint with the given tensors (pattern data) and config. */
static void write_model(const char *dir, const struct ftst_wtensor *w, size_t n, const char *config)
{
	assert_int_equal(ftfs_mkdir_p(dir, 0755), 0);
	char *h;
	size_t hl;
	uint64_t *off = calloc(n, sizeof *off), fsz;
	assert_int_equal(ftst_build_header(w, n, NULL, &h, &hl, off, &fsz), 0);
	uint8_t *data = malloc(fsz);
	memcpy(data, h, hl);
	for (uint64_t i = hl; i < fsz; i++)
		data[i] = (uint8_t)(i * 131 + (i >> 9));
	char p[600];
	snprintf(p, sizeof p, "%s/model.safetensors", dir);
	assert_int_equal(ftfs_write_atomic(p, data, fsz, 0644), 0);
	snprintf(p, sizeof p, "%s/config.json", dir);
	assert_int_equal(ftfs_write_atomic(p, config, strlen(config), 0644), 0);
	free(data);
	free(h);
	free(off);
}

static const char *cfg = "{\"model_type\":\"qwen3_moe\",\"hidden_size\":64,\"moe_intermediate_size\":32,\"num_experts\":2}";

static int discover_dir(const char *dir, char *err, size_t n)
{
	struct ftbanks_geom g;
	struct ftst_model *m;
	struct ftbanks_plan *p;
	int rc = ftbanks_read_config(dir, &g, err, n);
	if (rc < 0)
		return rc;
	if ((rc = ftst_model_open(dir, &m, err, n)) < 0)
		return rc;
	rc = ftbanks_discover(m, &g, &p, err, n);
	ftbanks_plan_free(p);
	ftst_model_free(m);
	return rc;
}

#define EXPECT(dir, want_rc, needle)                                                                   \
	do {                                                                                           \
		char e_[1024] = "";                                                                    \
		int rc_ = discover_dir(dir, e_, sizeof e_);                                            \
		if (rc_ != (want_rc) || !strstr(e_, needle))                                           \
			fail_msg("%s: rc %d (want %d), error '%s' lacks '%s'", dir, rc_, want_rc, e_, needle); \
	} while (0)

static void test_refusals(void **s)
{
	char d[600];
	snprintf(d, sizeof d, "%s/f32", tmpdir);
	struct ftst_wtensor f32[] = {
		{"model.layers.0.mlp.experts.0.gate_proj.weight", FTST_F32, 2, {32, 64}},
		{"model.layers.0.mlp.experts.0.up_proj.weight", FTST_F32, 2, {32, 64}},
		{"model.layers.0.mlp.experts.0.down_proj.weight", FTST_F32, 2, {64, 32}},
		{"model.layers.0.mlp.experts.1.gate_proj.weight", FTST_F32, 2, {32, 64}},
		{"model.layers.0.mlp.experts.1.up_proj.weight", FTST_F32, 2, {32, 64}},
		{"model.layers.0.mlp.experts.1.down_proj.weight", FTST_F32, 2, {64, 32}}};
	write_model(d, f32, 6, cfg);
	EXPECT(d, -ENOTSUP, "F32");
	snprintf(d, sizeof d, "%s/fp8", tmpdir);
	struct ftst_wtensor fp8[] = {{"model.layers.0.mlp.experts.0.gate_proj.weight", FTST_F8_E4M3, 2, {32, 64}},
				     {"model.layers.0.mlp.experts.0.up_proj.weight", FTST_F8_E4M3, 2, {32, 64}},
				     {"model.layers.0.mlp.experts.0.down_proj.weight", FTST_F8_E4M3, 2, {64, 32}}};
	write_model(d, fp8, 3, cfg);
	EXPECT(d, -ENOTSUP, "fp8");
	snprintf(d, sizeof d, "%s/gptq", tmpdir);
	struct ftst_wtensor q[] = {{"model.layers.0.mlp.experts.0.gate_proj.qweight", FTST_I32, 2, {8, 64}}};
	write_model(d, q, 1, cfg);
	EXPECT(d, -ENOTSUP, "quantized");
	snprintf(d, sizeof d, "%s/missing", tmpdir);
	write_model(d, (struct ftst_wtensor[]){{"model.layers.0.mlp.experts.0.gate_proj.weight", FTST_BF16, 2, {32, 64}},
					       {"model.layers.0.mlp.experts.0.up_proj.weight", FTST_BF16, 2, {32, 64}},
					       {"model.layers.0.mlp.experts.0.down_proj.weight", FTST_BF16, 2, {64, 32}}},
		    3, cfg);
	EXPECT(d, -EINVAL, "expert 1 gate_proj missing");
	snprintf(d, sizeof d, "%s/shape", tmpdir);
	write_model(d, (struct ftst_wtensor[]){{"model.layers.0.mlp.experts.0.gate_proj.weight", FTST_BF16, 2, {64, 32}}},
		    1, cfg);
	EXPECT(d, -EINVAL, "expected [32,64]");
	snprintf(d, sizeof d, "%s/toomany", tmpdir);
	write_model(d, (struct ftst_wtensor[]){{"model.layers.0.mlp.experts.7.gate_proj.weight", FTST_BF16, 2, {32, 64}}},
		    1, cfg);
	EXPECT(d, -EINVAL, "expert 7 but config.json says 2");
	snprintf(d, sizeof d, "%s/ossbf16", tmpdir);
	write_model(d, (struct ftst_wtensor[]){{"model.layers.0.mlp.experts.gate_up_proj", FTST_BF16, 3, {2, 64, 32}},
					       {"model.layers.0.mlp.experts.down_proj", FTST_BF16, 3, {2, 64, 16}}},
		    2, "{\"model_type\":\"gpt_oss\",\"hidden_size\":64,\"intermediate_size\":16,\"num_local_experts\":2}");
	EXPECT(d, -EINVAL, "expected [2,16,64]"); /* gpt-oss bf16: down_proj is [E, I, H] */
	snprintf(d, sizeof d, "%s/dense", tmpdir);
	write_model(d, (struct ftst_wtensor[]){{"model.layers.0.mlp.gate_proj.weight", FTST_BF16, 2, {32, 64}}}, 1, cfg);
	EXPECT(d, -ENOTSUP, "no expert tensors");
	snprintf(d, sizeof d, "%s/noconfig", tmpdir);
	write_model(d, (struct ftst_wtensor[]){{"x", FTST_BF16, 1, {4}}}, 1, "{\"model_type\":\"llama\",\"hidden_size\":64}");
	EXPECT(d, -EINVAL, "num_experts");
}

static void test_packed_3d(void **s)
{
	char d[600], err[512];
	snprintf(d, sizeof d, "%s/packed", tmpdir);
	/* [E, 2I, H] gate_up and [E, H, I] down for layer 0; split [E, I, H] gate/up for layer 1 */
	write_model(d, (struct ftst_wtensor[]){{"model.layers.0.mlp.experts.gate_up_proj", FTST_BF16, 3, {2, 64, 64}},
					       {"model.layers.0.mlp.experts.down_proj", FTST_BF16, 3, {2, 64, 32}},
					       {"model.layers.1.mlp.experts.gate_proj.weight", FTST_BF16, 3, {2, 32, 64}},
					       {"model.layers.1.mlp.experts.up_proj.weight", FTST_BF16, 3, {2, 32, 64}},
					       {"model.layers.1.mlp.experts.down_proj.weight", FTST_BF16, 3, {2, 64, 32}},
					       {"model.layers.1.mlp.shared_expert.gate_proj.weight", FTST_BF16, 2, {32, 64}}},
		    6, cfg);
	struct ftload_opts so = {FTLOAD_SERIAL, 0, 0, NULL}, po = {FTLOAD_PARALLEL, 2, 4096, NULL};
	struct ftbanks *a, *b;
	struct ftload_stats st;
	if (ftload_model(d, &so, &a, &st, err, sizeof err) < 0)
		fail_msg("%s", err);
	assert_int_equal(ftload_model(d, &po, &b, &st, err, sizeof err), 0);
	banks_equal(a, b);
	check_banks(a, d); /* layer 0 packed gate_up_proj, layer 1 packed gate_proj / up_proj */
	check_banks(b, d);
	ftbanks_free(a);
	ftbanks_free(b);
}

static void test_auto_choice(void **s)
{
	char dir[600], err[512], why[256];
	snprintf(dir, sizeof dir, "%s/auto", tmpdir);
	struct ftckpt_opts co = {"qwen3-moe", dir, 2, 4, 128, 64, 0, 2, 1, NULL};
	struct ftckpt_stats cs;
	assert_int_equal(ftckpt_write(&co, &cs, err, sizeof err), 0);
	struct ftst_model *m;
	assert_int_equal(ftst_model_open(dir, &m, err, sizeof err), 0);
	assert_true(ftload_experts_scattered(m));
	assert_int_equal(ftload_choose(m, 1ULL << 40, why, sizeof why), FTLOAD_PARALLEL);
	assert_int_equal(ftload_choose(m, 1024, why, sizeof why), FTLOAD_SERIAL);
	assert_non_null(strstr(why, "MemAvailable"));
	assert_false(ftload_experts_scattered(NULL));
	ftst_model_free(m);
	/* a packed checkpoint with big expert tensors is not scattered */
	snprintf(dir, sizeof dir, "%s/bigpacked", tmpdir);
	write_model(dir, (struct ftst_wtensor[]){{"model.layers.0.mlp.experts.gate_up_proj", FTST_BF16, 3, {64, 256, 512}}},
		    1, cfg);
	assert_int_equal(ftst_model_open(dir, &m, err, sizeof err), 0);
	assert_false(ftload_experts_scattered(m));
	assert_int_equal(ftload_choose(m, 1ULL << 40, why, sizeof why), FTLOAD_SERIAL);
	ftst_model_free(m);
	enum ftload_mode md;
	assert_int_equal(ftload_parse_mode("parallel", &md), 0);
	assert_int_equal(md, FTLOAD_PARALLEL);
	assert_int_equal(ftload_parse_mode("fast", &md), -EINVAL);
}

static void test_odirect_fallback(void **s)
{
	/* O_DIRECT refused with EINVAL (the hook makes every direct read fail so): the buffered
	 * fallback must give the same banks, and say it was not direct */
	char dir[600], err[512];
	snprintf(dir, sizeof dir, "%s/fallback", tmpdir);
	struct ftckpt_opts co = {"mixtral", dir, 2, 3, 128, 64, 0, 2, 7, NULL};
	struct ftckpt_stats cs;
	assert_int_equal(ftckpt_write(&co, &cs, err, sizeof err), 0);
	struct ftload_opts so = {FTLOAD_SERIAL, 0, 0, NULL}, po = {FTLOAD_PARALLEL, 2, 8192, NULL};
	struct ftbanks *a, *b;
	struct ftload_stats st;
	assert_int_equal(ftload_model(dir, &so, &a, &st, err, sizeof err), 0);
	setenv("FTLOAD_TEST_EINVAL", "1", 1);
	int rc = ftload_model(dir, &po, &b, &st, err, sizeof err);
	unsetenv("FTLOAD_TEST_EINVAL");
	assert_int_equal(rc, 0);
	assert_int_equal(st.direct, 0);
	banks_equal(a, b);
	check_banks(a, dir);
	ftbanks_free(b);
	char ftw[700];
	snprintf(ftw, sizeof ftw, "%s.ftw", dir);
	struct ftftw_convert_opts fo = {0, so};
	struct ftftw_convert_stats fs;
	assert_int_equal(ftftw_convert(dir, ftw, &fo, &fs, err, sizeof err), 0);
	setenv("FTLOAD_TEST_EINVAL", "1", 1);
	rc = ftload_model(ftw, &po, &b, &st, err, sizeof err);
	unsetenv("FTLOAD_TEST_EINVAL");
	assert_int_equal(rc, 0);
	assert_int_equal(st.direct, 0);
	banks_equal(a, b);
	ftbanks_free(a);
	ftbanks_free(b);
}

static void test_directio_pread(void **s)
{
	/* the one read both loaders use: whole aligned windows, short only at EOF, 0 bytes past it */
	char p[600];
	snprintf(p, sizeof p, "%s/pread", tmpdir);
	uint8_t data[3 * FTDIRECTIO_ALIGN + 100], buf[4 * FTDIRECTIO_ALIGN];
	for (size_t i = 0; i < sizeof data; i++)
		data[i] = (uint8_t)(i * 7 + 1);
	assert_int_equal(ftfs_write_atomic(p, data, sizeof data, 0644), 0);
	int fd = open(p, O_RDONLY);
	assert_true(fd >= 0);
	uint64_t got = 1;
	assert_int_equal(ftdirectio_pread(fd, buf, 2 * FTDIRECTIO_ALIGN, FTDIRECTIO_ALIGN, &got), 0);
	assert_int_equal(got, 2 * FTDIRECTIO_ALIGN);
	assert_memory_equal(buf, data + FTDIRECTIO_ALIGN, got);
	assert_int_equal(ftdirectio_pread(fd, buf, sizeof buf, 2 * FTDIRECTIO_ALIGN, &got), 0);
	assert_int_equal(got, FTDIRECTIO_ALIGN + 100);
	assert_memory_equal(buf, data + 2 * FTDIRECTIO_ALIGN, got);
	assert_int_equal(ftdirectio_pread(fd, buf, sizeof buf, sizeof data + FTDIRECTIO_ALIGN, &got), 0);
	assert_int_equal(got, 0);
	close(fd);
	assert_int_equal(ftdirectio_pread(fd, buf, 16, 0, &got), -EBADF);
	assert_int_equal(got, 0);
}

static void test_ftw_hostile_index(void **s)
{
	char dir[600], ftw[600], err[1024], p[700];
	snprintf(dir, sizeof dir, "%s/h", tmpdir);
	snprintf(ftw, sizeof ftw, "%s/h.ftw", tmpdir);
	struct ftckpt_opts co = {"qwen3-moe", dir, 2, 2, 128, 64, 0, 2, 3, NULL};
	struct ftckpt_stats cs;
	assert_int_equal(ftckpt_write(&co, &cs, err, sizeof err), 0);
	struct ftftw_convert_opts fo = {0, {FTLOAD_SERIAL, 0, 0, NULL}};
	struct ftftw_convert_stats fs;
	assert_int_equal(ftftw_convert(dir, ftw, &fo, &fs, err, sizeof err), 0);
	/* converting an FTW directory again is refused */
	assert_int_equal(ftftw_convert(ftw, dir, &fo, &fs, err, sizeof err), -EINVAL);
	snprintf(p, sizeof p, "%s/%s", ftw, FTFTW_INDEX);
	char *orig;
	size_t len;
	assert_int_equal(ftfs_read_file(p, 1 << 24, &orig, &len), 0);
	const char *subs[][3] = {{"\"global_off\":65536", "\"global_off\":65000", "malformed"},
				 {"\"global_off\":65536", "\"global_off\":4096", "overlap"},
				 {"\"version\":1", "\"version\":2", "version-1"},
				 {"freetoken-00000.ftw", "../x.ftw", "malformed"},
				 {"\"quant_format\":\"bf16\"", "\"quant_format\":\"int3\"", "unknown"},
				 {"\"quant_format\":\"bf16\"", "\"quant_format\":\"q4_0\"", "does not fit"},
				 {"\"expert_bank_num_layers\":2", "\"expert_bank_num_layers\":3", "bank entries"},
				 {"#L00001", "#L0001x", "5 digits"}};
	for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++) {
		char *at = strstr(orig, subs[i][0]);
		if (!at)
			fail_msg("index lacks %s", subs[i][0]);
		char *mod = malloc(len + 64);
		size_t pre = (size_t)(at - orig);
		memcpy(mod, orig, pre);
		strcpy(mod + pre, subs[i][1]);
		strcat(mod, at + strlen(subs[i][0]));
		assert_int_equal(ftfs_write_atomic(p, mod, strlen(mod), 0644), 0);
		free(mod);
		struct ftbanks *b = NULL;
		struct ftload_stats st;
		struct ftload_opts lo = {FTLOAD_AUTO, 2, 0, NULL};
		err[0] = '\0';
		int rc = ftftw_load(ftw, &lo, &b, &st, err, sizeof err);
		if (rc >= 0 || !strstr(err, subs[i][2]))
			fail_msg("FTW index with %s: rc %d err '%s'", subs[i][1], rc, err);
		assert_null(b);
	}
	/* a truncated shard is an error, not a short bank */
	assert_int_equal(ftfs_write_atomic(p, orig, len, 0644), 0);
	snprintf(p, sizeof p, "%s/freetoken-00000.ftw", ftw);
	assert_int_equal(truncate(p, 8192), 0);
	struct ftbanks *b = NULL;
	struct ftload_stats st;
	struct ftload_opts lo = {FTLOAD_AUTO, 2, 0, NULL};
	assert_true(ftftw_load(ftw, &lo, &b, &st, err, sizeof err) < 0);
	assert_non_null(strstr(err, "shorter"));
	free(orig);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_checksum_formula), cmocka_unit_test(test_reorder_caught),
		cmocka_unit_test(test_qwen3),            cmocka_unit_test(test_mixtral),
		cmocka_unit_test(test_deepseek),         cmocka_unit_test(test_gptoss),
		cmocka_unit_test(test_gptoss_bf16),
		cmocka_unit_test(test_refusals),         cmocka_unit_test(test_packed_3d),
		cmocka_unit_test(test_auto_choice),      cmocka_unit_test(test_odirect_fallback),
		cmocka_unit_test(test_directio_pread),
		cmocka_unit_test(test_ftw_hostile_index),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
