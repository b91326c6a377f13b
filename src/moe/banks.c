/* banks: bank memory and expert discovery. See banks.h. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "moe/banks.h"
#include "util/errmsg.h"
#include "util/fsutil.h"

/* ---------------------------------------------------------------- config.json */

static long cfg_long(json_t *o, const char *const *keys)
{
	for (; *keys; keys++) {
		json_t *v = json_object_get(o, *keys);
		if (json_is_integer(v) && json_integer_value(v) > 0)
			return (long)json_integer_value(v);
	}
	return 0;
}

int ftbanks_read_config(const char *dir, struct ftbanks_geom *g, char *err, size_t errlen)
{
	memset(g, 0, sizeof *g);
	char path[4096];
	snprintf(path, sizeof path, "%s/config.json", dir);
	char *buf;
	size_t len;
	int rc = ftfs_read_file(path, 16u << 20, &buf, &len);
	if (rc < 0)
		return fterr_set(err, errlen, rc, "%s: %s", path, strerror(-rc));
	json_error_t je;
	json_t *root = json_loadb(buf, len, 0, &je);
	free(buf);
	if (!json_is_object(root)) {
		json_decref(root);
		return fterr_set(err, errlen, -EINVAL, "%s: not a JSON object (%s)", path, je.text);
	}
	json_t *c = root;
	if (!json_object_get(c, "hidden_size") && json_is_object(json_object_get(c, "text_config")))
		c = json_object_get(c, "text_config");
	const char *mt = json_string_value(json_object_get(c, "model_type"));
	if (!mt)
		mt = json_string_value(json_object_get(root, "model_type"));
	snprintf(g->model_type, sizeof g->model_type, "%s", mt ? mt : "");
	g->hidden = cfg_long(c, (const char *const[]){"hidden_size", NULL});
	g->inter = cfg_long(c, (const char *const[]){"moe_intermediate_size", "intermediate_size", NULL});
	g->experts = cfg_long(c, (const char *const[]){"num_experts", "n_routed_experts", "num_local_experts", NULL});
	g->top_k = cfg_long(c, (const char *const[]){"num_experts_per_tok", "experts_per_token", NULL});
	g->layers = cfg_long(c, (const char *const[]){"num_hidden_layers", NULL});
	g->first_dense = cfg_long(c, (const char *const[]){"first_k_dense_replace", NULL});
	json_decref(root);
	if (!g->hidden || !g->inter || !g->experts)
		return fterr_set(err, errlen, -EINVAL, "%s: needs hidden_size, moe_intermediate_size (or intermediate_size) "
			    "and num_experts (or n_routed_experts / num_local_experts)", path);
	return 0;
}

/* ---------------------------------------------------------------- bank memory */

int ftbanks_alloc(const struct ftfmt *f, long H, long I, long E, long L, const int *layer_ids,
		  struct ftbanks **out)
{
	*out = NULL;
	if (E <= 0 || L <= 0 || L > FTBANKS_MAX_LAYERS)
		return -EINVAL;
	struct ftbanks *b = calloc(1, sizeof *b);
	if (!b)
		return -ENOMEM;
	b->fmt = f, b->H = H, b->I = I, b->E = E, b->L = L;
	int n = ftfmt_banks(f, H, I, b->shape);
	if (n < 0) {
		free(b);
		return n;
	}
	b->nbanks = n;
	b->layer_ids = malloc(sizeof(int) * (size_t)L);
	if (!b->layer_ids) {
		ftbanks_free(b);
		return -ENOMEM;
	}
	for (long l = 0; l < L; l++)
		b->layer_ids[l] = layer_ids ? layer_ids[l] : (int)l;
	for (int i = 0; i < n; i++) {
		b->layer_bytes[i] = b->shape[i].expert_bytes * (size_t)E;
		b->layer_stride[i] = (b->layer_bytes[i] + FTBANKS_ALIGN - 1) / FTBANKS_ALIGN * FTBANKS_ALIGN;
		size_t sz = b->layer_stride[i] * (size_t)L;
		void *p = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED) {
			ftbanks_free(b);
			return -ENOMEM;
		}
		madvise(p, sz, MADV_HUGEPAGE);
		b->base[i] = p;
	}
	*out = b;
	return 0;
}

void ftbanks_free(struct ftbanks *b)
{
	if (!b)
		return;
	for (int i = 0; i < b->nbanks; i++)
		if (b->base[i])
			munmap(b->base[i], b->layer_stride[i] * (size_t)b->L);
	free(b->layer_ids);
	free(b);
}

size_t ftbanks_bytes(const struct ftbanks *b)
{
	size_t s = 0;
	for (int i = 0; i < b->nbanks; i++)
		s += b->layer_bytes[i] * (size_t)b->L;
	return s;
}

int ftbanks_find(const struct ftbanks *b, const char *name)
{
	for (int i = 0; i < b->nbanks; i++)
		if (!strcmp(b->shape[i].name, name))
			return i;
	return -1;
}

static inline uint64_t out_row(const struct ftbanks_piece *p, uint64_t c)
{
	return !p->deinterleave ? c : c & 1 ? p->cols / 2 + c / 2 : c / 2;
}

/* Source bytes [pos, end) (relative to the piece, src at pos) that lie within one source row. */
static void copy_partial_row(const struct ftbanks_piece *p, uint8_t *dst, uint64_t pos, uint64_t end, const uint8_t *s)
{
	uint64_t R = p->rows, C = p->cols, es = p->esz ? p->esz : 1;
	for (uint64_t k = 0; pos + k < end; k++) {
		uint64_t el = (pos + k) / es, r = el / C, c = el % C;
		dst[(out_row(p, c) * R + r) * es + (pos + k) % es] = s[k];
	}
}

#define TBLK_ROWS 16
#define TBLK_COLS 64

/* Whole source rows r0 .. r0 + nr - 1 (s: row r0), in blocks so that reads and writes stay in
 * cache: each block writes TBLK_ROWS contiguous elements into each of TBLK_COLS bank rows. */
static void copy_rows_blocked(const struct ftbanks_piece *p, uint8_t *dst, uint64_t r0, uint64_t nr, const uint8_t *s)
{
	uint64_t R = p->rows, C = p->cols;
	for (uint64_t rb = 0; rb < nr; rb += TBLK_ROWS) {
		uint64_t re = rb + TBLK_ROWS < nr ? rb + TBLK_ROWS : nr;
		for (uint64_t cb = 0; cb < C; cb += TBLK_COLS) {
			uint64_t ce = cb + TBLK_COLS < C ? cb + TBLK_COLS : C;
			for (uint64_t c = cb; c < ce; c++) {
				uint64_t o = out_row(p, c) * R + r0;
				if (p->esz == 2) {
					for (uint64_t r = rb; r < re; r++)
						memcpy(dst + (o + r) * 2, s + (r * C + c) * 2, 2);
				} else {
					for (uint64_t r = rb; r < re; r++)
						dst[o + r] = s[r * C + c];
				}
			}
		}
	}
}

void ftbanks_piece_copy(const struct ftbanks_piece *p, struct ftbanks *b, uint64_t rel, const uint8_t *src, size_t n)
{
	uint8_t *dst = ftbanks_layer(b, p->bank, p->layer) + p->dst_off;
	if (!p->transpose) {
		memcpy(dst + rel, src, n);
		return;
	}
	/* a chunk may start and end anywhere, inside an element too: partial rows byte by byte */
	uint64_t rb = (uint64_t)p->cols * (p->esz ? p->esz : 1), pos = rel, end = rel + n;
	if (pos % rb) {
		uint64_t e = (pos / rb + 1) * rb < end ? (pos / rb + 1) * rb : end;
		copy_partial_row(p, dst, pos, e, src);
		pos = e;
	}
	uint64_t nr = (end - pos) / rb;
	if (nr) {
		copy_rows_blocked(p, dst, pos / rb, nr, src + (pos - rel));
		pos += nr * rb;
	}
	if (pos < end)
		copy_partial_row(p, dst, pos, end, src + (pos - rel));
}

/* ---------------------------------------------------------------- discovery */

enum { P_GATE, P_UP, P_DOWN, P_NPROJ };
enum { K_GU, K_G, K_U, K_D, K_GUB, K_GUS, K_GUBIAS, K_DB, K_DS, K_DBIAS, K_NPACK };
static const char *const packed_names[K_NPACK] = {
	"gate_up_proj", "gate_proj", "up_proj", "down_proj", "gate_up_proj_blocks", "gate_up_proj_scales",
	"gate_up_proj_bias", "down_proj_blocks", "down_proj_scales", "down_proj_bias"};

struct layer_src {
	int seen;
	int mixtral;
	const struct ftst_tensor **per;   /* [E * 3] */
	const struct ftst_tensor *packed[K_NPACK];
};

struct disc {
	const struct ftst_model *m;
	long E, H, I;
	int gptoss;                       /* config.json's model_type is gpt_oss */
	struct layer_src *layers[FTBANKS_MAX_LAYERS];
	char *err;
	size_t errlen;
};

/* Strict decimal index (no sign, no leading zeros except "0") ending at '.'; advances *s. */
static int parse_index(const char **s, long max, long *out)
{
	const char *p = *s;
	long v = 0;
	if (*p < '0' || *p > '9' || (*p == '0' && p[1] >= '0' && p[1] <= '9'))
		return -1;
	while (*p >= '0' && *p <= '9') {
		v = v * 10 + (*p - '0');
		if (v >= max)
			return -1;
		p++;
	}
	if (*p != '.')
		return -1;
	*s = p + 1;
	*out = v;
	return 0;
}

static struct layer_src *get_layer(struct disc *d, long l)
{
	if (!d->layers[l]) {
		d->layers[l] = calloc(1, sizeof *d->layers[l]);
		if (d->layers[l] && !(d->layers[l]->per = calloc((size_t)d->E * P_NPROJ, sizeof(void *)))) {
			free(d->layers[l]);
			d->layers[l] = NULL;
		}
	}
	return d->layers[l];
}

/* Classify one tensor; 0 when not an expert tensor or recorded, <0 with err set. */
static int classify(struct disc *d, const struct ftst_tensor *t)
{
	const char *n = t->name, *p = strstr(n, "layers.");
	while (p && p != n && p[-1] != '.')
		p = strstr(p + 1, "layers.");
	const char *ex = strstr(n, ".experts.");
	if (!ex)
		return 0;
	long l;
	if (!p || p > ex)
		return fterr_set(d->err, d->errlen, -EINVAL, "expert tensor '%s' has no layers.<n>. in its name", n);
	p += 7;
	if (parse_index(&p, FTBANKS_MAX_LAYERS, &l) < 0)
		return fterr_set(d->err, d->errlen, -EINVAL, "expert tensor '%s': bad layer index", n);
	int mixtral;
	if (!strncmp(p, "mlp.experts.", 12)) {
		mixtral = 0;
		p += 12;
	} else if (!strncmp(p, "block_sparse_moe.experts.", 25)) {
		mixtral = 1;
		p += 25;
	} else {
		return fterr_set(d->err, d->errlen, -ENOTSUP, "expert tensor '%s': unknown MoE block naming", n);
	}
	struct layer_src *L = get_layer(d, l);
	if (!L)
		return -ENOMEM;
	if (L->seen && L->mixtral != mixtral)
		return fterr_set(d->err, d->errlen, -EINVAL, "layer %ld mixes mlp.experts and block_sparse_moe.experts", l);
	L->seen = 1;
	L->mixtral = mixtral;
	if (*p >= '0' && *p <= '9') {
		long e;
		if (parse_index(&p, 1L << 20, &e) < 0)
			return fterr_set(d->err, d->errlen, -EINVAL, "expert tensor '%s': bad expert index", n);
		if (e >= d->E)
			return fterr_set(d->err, d->errlen, -EINVAL, "expert tensor '%s': expert %ld but config.json says %ld experts",
				    n, e, d->E);
		static const char *const std[P_NPROJ] = {"gate_proj.", "up_proj.", "down_proj."};
		static const char *const mix[P_NPROJ] = {"w1.", "w3.", "w2."};
		const char *const *names = mixtral ? mix : std;
		int proj = -1;
		for (int k = 0; k < P_NPROJ; k++)
			if (!strncmp(p, names[k], strlen(names[k]))) {
				proj = k;
				p += strlen(names[k]);
			}
		if (proj < 0)
			return fterr_set(d->err, d->errlen, -ENOTSUP, "expert tensor '%s': unknown projection", n);
		if (!strcmp(p, "weight_scale_inv"))
			return fterr_set(d->err, d->errlen, -ENOTSUP,
				    "expert tensor '%s': fp8 block-quantized experts (weight_scale_inv, e.g. the original "
				    "DeepSeek-V3 release) are not supported; use a bf16 checkpoint", n);
		if (strcmp(p, "weight"))
			return fterr_set(d->err, d->errlen, -ENOTSUP,
				    "expert tensor '%s': '%s' is a quantized or unsupported expert layout (only plain "
				    "bf16 .weight tensors and gpt-oss mxfp4 are loaded)", n, p);
		const struct ftst_tensor **slot = &L->per[e * P_NPROJ + proj];
		if (*slot)
			return fterr_set(d->err, d->errlen, -EINVAL, "expert tensor '%s' appears twice", n);
		*slot = t;
		return 0;
	}
	if (mixtral)
		return fterr_set(d->err, d->errlen, -ENOTSUP, "expert tensor '%s': unknown packed Mixtral layout", n);
	for (int k = 0; k < K_NPACK; k++) {
		size_t kl = strlen(packed_names[k]);
		if (strncmp(p, packed_names[k], kl) || (p[kl] && strcmp(p + kl, ".weight")))
			continue;
		if (L->packed[k])
			return fterr_set(d->err, d->errlen, -EINVAL, "layer %ld: two tensors for packed %s", l, packed_names[k]);
		L->packed[k] = t;
		return 0;
	}
	return fterr_set(d->err, d->errlen, -ENOTSUP, "expert tensor '%s': unknown expert layout", n);
}

static int need(struct disc *d, const struct ftst_tensor *t, enum ftst_dtype dt, int ndim,
		const int64_t *shape, const char *what, long l)
{
	if (!t)
		return fterr_set(d->err, d->errlen, -EINVAL, "layer %ld: %s missing", l, what);
	if (t->dtype != dt) {
		if (dt == FTST_BF16)
			return fterr_set(d->err, d->errlen, -ENOTSUP,
				    "'%s' is %s: expert banks are loaded as stored and only BF16 experts (or gpt-oss "
				    "mxfp4) are supported%s", t->name, ftst_dtype_name(t->dtype),
				    t->dtype == FTST_F8_E4M3 ? " (fp8 checkpoints with weight_scale_inv are refused)" : "");
		return fterr_set(d->err, d->errlen, -ENOTSUP, "'%s' is %s, expected %s", t->name,
			    ftst_dtype_name(t->dtype), ftst_dtype_name(dt));
	}
	int ok = t->ndim == ndim;
	for (int i = 0; ok && i < ndim; i++)
		ok = t->shape[i] == shape[i];
	if (!ok) {
		char got[128] = "", want[128] = "";
		size_t a = 0, b = 0;
		for (int i = 0; i < t->ndim && a < sizeof got - 24; i++)
			a += (size_t)snprintf(got + a, sizeof got - a, "%s%lld", i ? "," : "", (long long)t->shape[i]);
		for (int i = 0; i < ndim && b < sizeof want - 24; i++)
			b += (size_t)snprintf(want + b, sizeof want - b, "%s%lld", i ? "," : "", (long long)shape[i]);
		return fterr_set(d->err, d->errlen, -EINVAL, "'%s' has shape [%s], expected [%s] from config.json", t->name,
			    got, want);
	}
	return 0;
}

struct plan_build {
	struct ftbanks_piece *v;
	size_t n, cap;
};

static int add_piece_t(struct plan_build *pb, const struct ftst_tensor *t, uint64_t rel, uint64_t len, int bank,
		       int layer, uint64_t dst, int transpose, uint32_t rows, uint32_t cols, int esz, int deint)
{
	if (pb->n == pb->cap) {
		size_t nc = pb->cap ? pb->cap * 2 : 1024;
		struct ftbanks_piece *nv = realloc(pb->v, nc * sizeof *nv);
		if (!nv)
			return -ENOMEM;
		pb->v = nv, pb->cap = nc;
	}
	pb->v[pb->n++] = (struct ftbanks_piece){t->file, t->offset + rel, len, bank, layer, dst, transpose, rows, cols,
					  (uint8_t)esz, (uint8_t)deint, t};
	return 0;
}

static int add_piece(struct plan_build *pb, const struct ftst_tensor *t, uint64_t rel, uint64_t len, int bank,
		     int layer, uint64_t dst, int transpose, uint32_t rows, uint32_t cols)
{
	return add_piece_t(pb, t, rel, len, bank, layer, dst, transpose, rows, cols, 1, 0);
}

static int cmp_piece(const void *a, const void *b)
{
	const struct ftbanks_piece *x = a, *y = b;
	if (x->file != y->file)
		return x->file < y->file ? -1 : 1;
	return x->src_off < y->src_off ? -1 : x->src_off > y->src_off;
}

static int cmp_ptr(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t) * (void *const *)a, y = (uintptr_t) * (void *const *)b;
	return x < y ? -1 : x > y;
}

void ftbanks_plan_free(struct ftbanks_plan *p)
{
	if (!p)
		return;
	free(p->layer_ids);
	free(p->pieces);
	free(p->used);
	free(p);
}

int ftbanks_plan_uses(const struct ftbanks_plan *p, const struct ftst_tensor *t)
{
	return bsearch(&t, p->used, p->nused, sizeof *p->used, cmp_ptr) != NULL;
}

/* Build the pieces of one MoE layer (index li) from its sources. */
static int layer_pieces(struct disc *d, struct plan_build *pb, struct layer_src *L, long l, int li,
			const struct ftfmt **fmt, const char **scheme)
{
	long E = d->E, H = d->H, I = d->I;
	int rc;
	int per = 0;
	for (long k = 0; k < E * P_NPROJ && !per; k++)
		per = L->per[k] != NULL;
	int packed_bf16 = L->packed[K_GU] || L->packed[K_G] || L->packed[K_U] || L->packed[K_D];
	int bias = L->packed[K_GUBIAS] || L->packed[K_DBIAS];
	int mx = L->packed[K_GUB] || L->packed[K_GUS] || L->packed[K_DB] || L->packed[K_DS] || (bias && !packed_bf16);
	if (per + packed_bf16 + mx != 1)
		return fterr_set(d->err, d->errlen, -EINVAL, "layer %ld mixes expert layouts (per-expert, packed, mxfp4)", l);
	/* gpt-oss as transformers writes it: gate_up_proj [E, H, 2I] (gate/up interleaved), down_proj [E, I, H] */
	const struct ftst_tensor *gu0 = L->packed[K_GU];
	int oss_bf16 = packed_bf16 && gu0 &&
		       (d->gptoss || bias || (gu0->ndim == 3 && gu0->shape[1] == H && gu0->shape[2] == 2 * I && H != 2 * I));
	if (packed_bf16 && bias && !oss_bf16)
		return fterr_set(d->err, d->errlen, -EINVAL, "layer %ld: expert biases beside packed bf16 experts without "
			    "gate_up_proj (only gpt-oss's layout has biases)", l);
	const struct ftfmt *want = ftfmt_get(mx ? FTFMT_MXFP4_TRITON : FTFMT_BF16);
	const char *sch = mx ? "gpt-oss-mxfp4" : oss_bf16 ? "gpt-oss-bf16" : packed_bf16 ? "packed" : L->mixtral ? "mixtral" : "per-expert";
	if (*fmt && *fmt != want)
		return fterr_set(d->err, d->errlen, -EINVAL, "layer %ld is %s but earlier layers are %s", l, want->name,
			    (*fmt)->name);
	*fmt = want;
	*scheme = sch;
	uint64_t ebH = (uint64_t)I * H * 2; /* bytes of one [I, H] bf16 matrix */
	if (per) {
		static const char *const pn[2][P_NPROJ] = {{"gate_proj", "up_proj", "down_proj"}, {"w1", "w3", "w2"}};
		for (long e = 0; e < E; e++) {
			const struct ftst_tensor **t = &L->per[e * P_NPROJ];
			for (int k = 0; k < P_NPROJ; k++) {
				char what[96];
				snprintf(what, sizeof what, "expert %ld %s", e, pn[L->mixtral][k]);
				const int64_t shp[2] = {k == P_DOWN ? H : I, k == P_DOWN ? I : H};
				if ((rc = need(d, t[k], FTST_BF16, 2, shp, what, l)) < 0)
					return rc;
			}
			if ((rc = add_piece(pb, t[P_GATE], 0, ebH, 0, li, (uint64_t)e * 2 * ebH, 0, 0, 0)) < 0 ||
			    (rc = add_piece(pb, t[P_UP], 0, ebH, 0, li, (uint64_t)e * 2 * ebH + ebH, 0, 0, 0)) < 0 ||
			    (rc = add_piece(pb, t[P_DOWN], 0, ebH, 1, li, (uint64_t)e * ebH, 0, 0, 0)) < 0)
				return rc;
		}
		return 0;
	}
	if (oss_bf16) {
		if (L->packed[K_G] || L->packed[K_U])
			return fterr_set(d->err, d->errlen, -EINVAL, "layer %ld has gate_up_proj and gate_proj/up_proj", l);
		const int64_t s_gu[3] = {E, H, 2 * I}, s_d[3] = {E, I, H}, s_gub[2] = {E, 2 * I}, s_db[2] = {E, H};
		const struct ftst_tensor *dn = L->packed[K_D];
		if ((rc = need(d, gu0, FTST_BF16, 3, s_gu, "gpt-oss gate_up_proj", l)) < 0 ||
		    (rc = need(d, dn, FTST_BF16, 3, s_d, "gpt-oss down_proj", l)) < 0 ||
		    (L->packed[K_GUBIAS] && (rc = need(d, L->packed[K_GUBIAS], FTST_BF16, 2, s_gub, "gate_up_proj_bias", l)) < 0) ||
		    (L->packed[K_DBIAS] && (rc = need(d, L->packed[K_DBIAS], FTST_BF16, 2, s_db, "down_proj_bias", l)) < 0))
			return rc;
		for (long e = 0; e < E; e++)
			if ((rc = add_piece_t(pb, gu0, (uint64_t)e * 2 * ebH, 2 * ebH, 0, li, (uint64_t)e * 2 * ebH, 1,
					      (uint32_t)H, (uint32_t)(2 * I), 2, 1)) < 0 ||
			    (rc = add_piece_t(pb, dn, (uint64_t)e * ebH, ebH, 1, li, (uint64_t)e * ebH, 1, (uint32_t)I,
					      (uint32_t)H, 2, 0)) < 0)
				return rc;
		return 0;
	}
	if (packed_bf16) {
		const struct ftst_tensor *gu = L->packed[K_GU];
		if (gu && (L->packed[K_G] || L->packed[K_U]))
			return fterr_set(d->err, d->errlen, -EINVAL, "layer %ld has gate_up_proj and gate_proj/up_proj", l);
		const int64_t s_gu[3] = {E, 2 * I, H}, s_g[3] = {E, I, H}, s_d[3] = {E, H, I};
		if (gu) {
			if ((rc = need(d, gu, FTST_BF16, 3, s_gu, "packed gate_up_proj", l)) < 0 ||
			    (rc = add_piece(pb, gu, 0, gu->nbytes, 0, li, 0, 0, 0, 0)) < 0)
				return rc;
		} else {
			if ((rc = need(d, L->packed[K_G], FTST_BF16, 3, s_g, "packed gate_proj", l)) < 0 ||
			    (rc = need(d, L->packed[K_U], FTST_BF16, 3, s_g, "packed up_proj", l)) < 0)
				return rc;
			for (long e = 0; e < E; e++)
				if ((rc = add_piece(pb, L->packed[K_G], (uint64_t)e * ebH, ebH, 0, li, (uint64_t)e * 2 * ebH,
						    0, 0, 0)) < 0 ||
				    (rc = add_piece(pb, L->packed[K_U], (uint64_t)e * ebH, ebH, 0, li,
						    (uint64_t)e * 2 * ebH + ebH, 0, 0, 0)) < 0)
					return rc;
		}
		const struct ftst_tensor *dn = L->packed[K_D];
		if ((rc = need(d, dn, FTST_BF16, 3, s_d, "packed down_proj", l)) < 0 ||
		    (rc = add_piece(pb, dn, 0, dn->nbytes, 1, li, 0, 0, 0, 0)) < 0)
			return rc;
		return 0;
	}
	/* gpt-oss mxfp4: [E, N, K/32, 16] blocks, [E, N, K/32] scales, [E, N] bias. */
	if (H % 32 || I % 32)
		return fterr_set(d->err, d->errlen, -EINVAL, "mxfp4 needs hidden and intermediate sizes divisible by 32");
	struct {
		int k, bank;
		long N, K;
	} mp[6] = {{K_GUB, 0, 2 * I, H}, {K_GUS, 1, 2 * I, H}, {K_GUBIAS, 2, 2 * I, H},
		   {K_DB, 3, H, I},      {K_DS, 4, H, I},      {K_DBIAS, 5, H, I}};
	for (int j = 0; j < 6; j++) {
		const struct ftst_tensor *t = L->packed[mp[j].k];
		long N = mp[j].N, K = mp[j].K;
		const int64_t sb[4] = {E, N, K / 32, 16}, ss[3] = {E, N, K / 32}, sbias[2] = {E, N};
		int kind = j % 3; /* 0 blocks, 1 scales, 2 bias */
		rc = kind == 0 ? need(d, t, FTST_U8, 4, sb, packed_names[mp[j].k], l)
		     : kind == 1 ? need(d, t, FTST_U8, 3, ss, packed_names[mp[j].k], l)
				 : need(d, t, FTST_BF16, 2, sbias, packed_names[mp[j].k], l);
		if (rc < 0)
			return rc;
		uint64_t cols = kind == 0 ? (uint64_t)K / 2 : kind == 1 ? (uint64_t)K / 32 : 0;
		uint64_t eb = kind == 2 ? (uint64_t)N * 2 : (uint64_t)N * cols;
		if (kind == 2) {
			if ((rc = add_piece(pb, t, 0, t->nbytes, mp[j].bank, li, 0, 0, 0, 0)) < 0)
				return rc;
			continue;
		}
		for (long e = 0; e < E; e++)
			if ((rc = add_piece(pb, t, (uint64_t)e * eb, eb, mp[j].bank, li, (uint64_t)e * eb, 1, (uint32_t)N,
					    (uint32_t)cols)) < 0)
				return rc;
	}
	return 0;
}

int ftbanks_discover(const struct ftst_model *m, const struct ftbanks_geom *g, struct ftbanks_plan **out,
		     char *err, size_t errlen)
{
	*out = NULL;
	struct disc *d = calloc(1, sizeof *d);
	struct ftbanks_plan *p = calloc(1, sizeof *p);
	struct plan_build pb = {0};
	int rc = 0;
	if (!d || !p) {
		rc = -ENOMEM;
		goto out;
	}
	d->m = m, d->E = g->experts, d->H = g->hidden, d->I = g->inter, d->err = err, d->errlen = errlen;
	d->gptoss = !strcmp(g->model_type, "gpt_oss");
	if (d->E <= 0 || d->H <= 0 || d->I <= 0) {
		rc = fterr_set(err, errlen, -EINVAL, "geometry needs hidden, intermediate and expert counts");
		goto out;
	}
	for (size_t i = 0; i < m->ntensors; i++)
		if ((rc = classify(d, m->by_name[i])) < 0)
			goto out;
	long L = 0;
	for (long l = 0; l < FTBANKS_MAX_LAYERS; l++)
		L += d->layers[l] != NULL;
	if (L == 0) {
		rc = fterr_set(err, errlen, -ENOTSUP,
			  "no expert tensors found (looked for layers.<n>.mlp.experts.* and block_sparse_moe.experts.*)");
		goto out;
	}
	p->layer_ids = malloc(sizeof(int) * (size_t)L);
	if (!p->layer_ids) {
		rc = -ENOMEM;
		goto out;
	}
	const struct ftfmt *fmt = NULL;
	const char *scheme = NULL;
	int li = 0;
	for (long l = 0; l < FTBANKS_MAX_LAYERS; l++) {
		if (!d->layers[l])
			continue;
		p->layer_ids[li] = (int)l;
		if ((rc = layer_pieces(d, &pb, d->layers[l], l, li, &fmt, &scheme)) < 0)
			goto out;
		li++;
	}
	qsort(pb.v, pb.n, sizeof *pb.v, cmp_piece);
	p->used = malloc(sizeof *p->used * (pb.n ? pb.n : 1));
	if (!p->used) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < pb.n; i++)
		if (!p->nused || p->used[p->nused - 1] != pb.v[i].t)
			p->used[p->nused++] = pb.v[i].t;
	qsort(p->used, p->nused, sizeof *p->used, cmp_ptr);
	size_t u = 0;
	for (size_t i = 0; i < p->nused; i++)
		if (!u || p->used[u - 1] != p->used[i])
			p->used[u++] = p->used[i];
	p->nused = u;
	p->fmt = fmt, p->scheme = scheme;
	p->H = d->H, p->I = d->I, p->E = d->E, p->L = L;
	p->npieces = pb.n, p->pieces = pb.v;
	pb.v = NULL;
	p->model = m;
	*out = p;
	p = NULL;
out:
	if (d)
		for (long l = 0; l < FTBANKS_MAX_LAYERS; l++)
			if (d->layers[l]) {
				free(d->layers[l]->per);
				free(d->layers[l]);
			}
	free(d);
	free(pb.v);
	ftbanks_plan_free(p);
	return rc;
}
