/* ckptgen: synthetic checkpoints. See ckptgen.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "moe/ckptgen.h"
#include "moe/safetensors.h"
#include "util/errmsg.h"
#include "util/fsutil.h"
#include "util/timeutil.h"

#define BLOCK (8u << 20)
#define VOCAB 1024

const char *ftckpt_archs(void)
{
	return FTCKPT_ARCHS;
}

enum fill { FILL_BF16, FILL_F32, FILL_U8, FILL_E8M0 };

struct gt {
	struct ftst_wtensor w;
	enum fill fill;
	int expert;
	uint64_t nbytes;
	int shard;
	uint64_t off;   /* in its file */
};

struct tlist {
	struct gt *v;
	size_t n, cap;
	int oom;
};

static void add(struct tlist *t, int expert, enum ftst_dtype dt, enum fill fill, int ndim, const int64_t *shape,
		const char *fmt, ...) __attribute__((format(printf, 7, 8)));
static void add(struct tlist *t, int expert, enum ftst_dtype dt, enum fill fill, int ndim, const int64_t *shape,
		const char *fmt, ...)
{
	if (t->oom)
		return;
	if (t->n == t->cap) {
		size_t nc = t->cap ? t->cap * 2 : 1024;
		struct gt *nv = realloc(t->v, nc * sizeof *nv);
		if (!nv) {
			t->oom = 1;
			return;
		}
		t->v = nv, t->cap = nc;
	}
	char name[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(name, sizeof name, fmt, ap);
	va_end(ap);
	struct gt *g = &t->v[t->n];
	memset(g, 0, sizeof *g);
	g->w.name = strdup(name);
	if (!g->w.name) {
		t->oom = 1;
		return;
	}
	g->w.dtype = dt;
	g->w.ndim = ndim;
	g->nbytes = ftst_dtype_size(dt);
	for (int i = 0; i < ndim; i++) {
		g->w.shape[i] = shape[i];
		g->nbytes *= (uint64_t)shape[i];
	}
	g->fill = fill;
	g->expert = expert;
	t->n++;
}

#define S1(a) (const int64_t[]){a}
#define S2(a, b) (const int64_t[]){a, b}
#define S3(a, b, c) (const int64_t[]){a, b, c}
#define S4(a, b, c, d) (const int64_t[]){a, b, c, d}

static void bf(struct tlist *t, const int64_t *s, int nd, const char *name, long l)
{
	if (l >= 0)
		add(t, 0, FTST_BF16, FILL_BF16, nd, s, "model.layers.%ld.%s", l, name);
	else
		add(t, 0, FTST_BF16, FILL_BF16, nd, s, "%s", name);
}

enum arch { A_QWEN3, A_MIXTRAL, A_DSV3, A_GPTOSS, A_GPTOSS_BF16 };

static int build_tensors(enum arch a, long L, long E, long H, long I, long first_dense, struct tlist *t)
{
	bf(t, S2(VOCAB, H), 2, "model.embed_tokens.weight", -1);
	long kv = H / 4 > 0 ? H / 4 : 1;
	for (long l = 0; l < L; l++) {
		bf(t, S1(H), 1, "input_layernorm.weight", l);
		bf(t, S1(H), 1, "post_attention_layernorm.weight", l);
		bf(t, S2(H, H), 2, "self_attn.q_proj.weight", l);
		bf(t, S2(kv, H), 2, "self_attn.k_proj.weight", l);
		bf(t, S2(kv, H), 2, "self_attn.v_proj.weight", l);
		bf(t, S2(H, H), 2, "self_attn.o_proj.weight", l);
		switch (a) {
		case A_QWEN3:
			bf(t, S2(E, H), 2, "mlp.gate.weight", l);
			for (long e = 0; e < E; e++) {
				add(t, 1, FTST_BF16, FILL_BF16, 2, S2(I, H), "model.layers.%ld.mlp.experts.%ld.gate_proj.weight", l, e);
				add(t, 1, FTST_BF16, FILL_BF16, 2, S2(I, H), "model.layers.%ld.mlp.experts.%ld.up_proj.weight", l, e);
				add(t, 1, FTST_BF16, FILL_BF16, 2, S2(H, I), "model.layers.%ld.mlp.experts.%ld.down_proj.weight", l, e);
			}
			break;
		case A_MIXTRAL:
			bf(t, S2(E, H), 2, "block_sparse_moe.gate.weight", l);
			for (long e = 0; e < E; e++) {
				add(t, 1, FTST_BF16, FILL_BF16, 2, S2(I, H), "model.layers.%ld.block_sparse_moe.experts.%ld.w1.weight", l, e);
				add(t, 1, FTST_BF16, FILL_BF16, 2, S2(H, I), "model.layers.%ld.block_sparse_moe.experts.%ld.w2.weight", l, e);
				add(t, 1, FTST_BF16, FILL_BF16, 2, S2(I, H), "model.layers.%ld.block_sparse_moe.experts.%ld.w3.weight", l, e);
			}
			break;
		case A_DSV3:
			if (l < first_dense) {
				bf(t, S2(2 * I, H), 2, "mlp.gate_proj.weight", l);
				bf(t, S2(2 * I, H), 2, "mlp.up_proj.weight", l);
				bf(t, S2(H, 2 * I), 2, "mlp.down_proj.weight", l);
				break;
			}
			bf(t, S2(E, H), 2, "mlp.gate.weight", l);
			add(t, 0, FTST_F32, FILL_F32, 1, S1(E), "model.layers.%ld.mlp.gate.e_score_correction_bias", l);
			bf(t, S2(I, H), 2, "mlp.shared_experts.gate_proj.weight", l);
			bf(t, S2(I, H), 2, "mlp.shared_experts.up_proj.weight", l);
			bf(t, S2(H, I), 2, "mlp.shared_experts.down_proj.weight", l);
			for (long e = 0; e < E; e++) {
				add(t, 1, FTST_BF16, FILL_BF16, 2, S2(I, H), "model.layers.%ld.mlp.experts.%ld.gate_proj.weight", l, e);
				add(t, 1, FTST_BF16, FILL_BF16, 2, S2(I, H), "model.layers.%ld.mlp.experts.%ld.up_proj.weight", l, e);
				add(t, 1, FTST_BF16, FILL_BF16, 2, S2(H, I), "model.layers.%ld.mlp.experts.%ld.down_proj.weight", l, e);
			}
			break;
		case A_GPTOSS:
		case A_GPTOSS_BF16:
			bf(t, S1(H / 64 > 0 ? H / 64 : 1), 1, "self_attn.sinks", l);
			bf(t, S2(E, H), 2, "mlp.router.weight", l);
			bf(t, S1(E), 1, "mlp.router.bias", l);
			if (a == A_GPTOSS_BF16) {
				/* transformers' GptOssExperts: x @ gate_up_proj[e] (gate = [..., ::2], up = [..., 1::2]) */
				add(t, 1, FTST_BF16, FILL_BF16, 3, S3(E, H, 2 * I), "model.layers.%ld.mlp.experts.gate_up_proj", l);
				add(t, 1, FTST_BF16, FILL_BF16, 2, S2(E, 2 * I), "model.layers.%ld.mlp.experts.gate_up_proj_bias", l);
				add(t, 1, FTST_BF16, FILL_BF16, 3, S3(E, I, H), "model.layers.%ld.mlp.experts.down_proj", l);
				add(t, 1, FTST_BF16, FILL_BF16, 2, S2(E, H), "model.layers.%ld.mlp.experts.down_proj_bias", l);
				break;
			}
			add(t, 1, FTST_U8, FILL_U8, 4, S4(E, 2 * I, H / 32, 16), "model.layers.%ld.mlp.experts.gate_up_proj_blocks", l);
			add(t, 1, FTST_U8, FILL_E8M0, 3, S3(E, 2 * I, H / 32), "model.layers.%ld.mlp.experts.gate_up_proj_scales", l);
			add(t, 1, FTST_BF16, FILL_BF16, 2, S2(E, 2 * I), "model.layers.%ld.mlp.experts.gate_up_proj_bias", l);
			add(t, 1, FTST_U8, FILL_U8, 4, S4(E, H, I / 32, 16), "model.layers.%ld.mlp.experts.down_proj_blocks", l);
			add(t, 1, FTST_U8, FILL_E8M0, 3, S3(E, H, I / 32), "model.layers.%ld.mlp.experts.down_proj_scales", l);
			add(t, 1, FTST_BF16, FILL_BF16, 2, S2(E, H), "model.layers.%ld.mlp.experts.down_proj_bias", l);
			break;
		}
	}
	bf(t, S1(H), 1, "model.norm.weight", -1);
	bf(t, S2(VOCAB, H), 2, "lm_head.weight", -1);
	return t->oom ? -ENOMEM : 0;
}

static char *config_json(enum arch a, long L, long E, long H, long I, long fd)
{
	char *s = NULL;
	long heads = H / 128 > 0 ? H / 128 : 1;
	int r = -1;
	switch (a) {
	case A_QWEN3:
		r = asprintf(&s, "{\n  \"architectures\": [\"Qwen3MoeForCausalLM\"],\n  \"model_type\": \"qwen3_moe\",\n"
			     "  \"hidden_size\": %ld,\n  \"intermediate_size\": %ld,\n  \"moe_intermediate_size\": %ld,\n"
			     "  \"num_experts\": %ld,\n  \"num_experts_per_tok\": %ld,\n  \"num_hidden_layers\": %ld,\n"
			     "  \"num_attention_heads\": %ld,\n  \"decoder_sparse_step\": 1,\n  \"mlp_only_layers\": [],\n"
			     "  \"vocab_size\": %d,\n  \"torch_dtype\": \"bfloat16\"\n}\n",
			     H, 4 * I, I, E, E < 8 ? E : 8, L, heads, VOCAB);
		break;
	case A_MIXTRAL:
		r = asprintf(&s, "{\n  \"architectures\": [\"MixtralForCausalLM\"],\n  \"model_type\": \"mixtral\",\n"
			     "  \"hidden_size\": %ld,\n  \"intermediate_size\": %ld,\n  \"num_local_experts\": %ld,\n"
			     "  \"num_experts_per_tok\": %ld,\n  \"num_hidden_layers\": %ld,\n  \"num_attention_heads\": %ld,\n"
			     "  \"vocab_size\": %d,\n  \"torch_dtype\": \"bfloat16\"\n}\n",
			     H, I, E, E < 2 ? E : 2, L, heads, VOCAB);
		break;
	case A_DSV3:
		r = asprintf(&s, "{\n  \"architectures\": [\"DeepseekV3ForCausalLM\"],\n  \"model_type\": \"deepseek_v3\",\n"
			     "  \"hidden_size\": %ld,\n  \"intermediate_size\": %ld,\n  \"moe_intermediate_size\": %ld,\n"
			     "  \"n_routed_experts\": %ld,\n  \"n_shared_experts\": 1,\n  \"num_experts_per_tok\": %ld,\n"
			     "  \"first_k_dense_replace\": %ld,\n  \"moe_layer_freq\": 1,\n  \"num_hidden_layers\": %ld,\n"
			     "  \"num_attention_heads\": %ld,\n  \"vocab_size\": %d,\n  \"torch_dtype\": \"bfloat16\"\n}\n",
			     H, 2 * I, I, E, E < 8 ? E : 8, fd, L, heads, VOCAB);
		break;
	case A_GPTOSS_BF16:
		/* a dequantized copy as transformers saves it: no quantization_config */
		r = asprintf(&s, "{\n  \"architectures\": [\"GptOssForCausalLM\"],\n  \"model_type\": \"gpt_oss\",\n"
			     "  \"hidden_size\": %ld,\n  \"intermediate_size\": %ld,\n  \"num_local_experts\": %ld,\n"
			     "  \"experts_per_token\": %ld,\n  \"num_experts_per_tok\": %ld,\n  \"num_hidden_layers\": %ld,\n"
			     "  \"num_attention_heads\": %ld,\n  \"swiglu_limit\": 7.0,\n  \"vocab_size\": %d,\n"
			     "  \"torch_dtype\": \"bfloat16\"\n}\n",
			     H, I, E, E < 4 ? E : 4, E < 4 ? E : 4, L, heads, VOCAB);
		break;
	case A_GPTOSS:
		r = asprintf(&s, "{\n  \"architectures\": [\"GptOssForCausalLM\"],\n  \"model_type\": \"gpt_oss\",\n"
			     "  \"hidden_size\": %ld,\n  \"intermediate_size\": %ld,\n  \"num_local_experts\": %ld,\n"
			     "  \"experts_per_token\": %ld,\n  \"num_experts_per_tok\": %ld,\n  \"num_hidden_layers\": %ld,\n"
			     "  \"num_attention_heads\": %ld,\n  \"swiglu_limit\": 7.0,\n  \"vocab_size\": %d,\n"
			     "  \"quantization_config\": {\"quant_method\": \"mxfp4\", \"modules_to_not_convert\": "
			     "[\"model.layers.*.self_attn\", \"model.layers.*.mlp.router\", \"model.embed_tokens\", \"lm_head\"]},\n"
			     "  \"torch_dtype\": \"bfloat16\"\n}\n",
			     H, I, E, E < 4 ? E : 4, E < 4 ? E : 4, L, heads, VOCAB);
		break;
	}
	return r < 0 ? NULL : s;
}

/* ---------------------------------------------------------------- data */

static inline uint64_t splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9E3779B97F4A7C15ULL);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

struct shard {
	char path[4096];
	int fd;
	uint64_t data_start, size;
	struct gt **t; /* sorted by offset */
	size_t nt;
};

struct job {
	struct shard *sh;
	int nsh;
	uint64_t *block_base; /* per shard: first global block number */
	uint64_t nblocks;
	uint64_t seed;
	atomic_uint_least64_t next, done;
	atomic_int rc;
};

static void fill_range(uint8_t *p, size_t n, enum fill f)
{
	switch (f) {
	case FILL_BF16:
		for (size_t i = 0; i + 1 < n; i += 2) {
			/* sign and 8 low bits random, exponent 120/121: finite, never zero */
			uint16_t v = (uint16_t)(p[i] | (p[i + 1] << 8));
			v = (uint16_t)((v & 0x80FF) | 0x3C00);
			p[i] = (uint8_t)v, p[i + 1] = (uint8_t)(v >> 8);
		}
		break;
	case FILL_F32:
		for (size_t i = 0; i + 3 < n; i += 4)
			p[i + 3] = (uint8_t)((p[i + 3] & 0x80) | 0x3F), p[i + 2] |= 0x80;
		break;
	case FILL_U8:
		for (size_t i = 0; i < n; i++)
			p[i] |= 0x01;
		break;
	case FILL_E8M0:
		for (size_t i = 0; i < n; i++)
			p[i] = (uint8_t)(0x78 | (p[i] & 0x07));
		break;
	}
}

static void *gen_worker(void *arg)
{
	struct job *j = arg;
	uint8_t *buf = aligned_alloc(4096, BLOCK);
	if (!buf) {
		atomic_store(&j->rc, -ENOMEM);
		return NULL;
	}
	for (;;) {
		uint64_t b = atomic_fetch_add(&j->next, 1);
		if (b >= j->nblocks || atomic_load(&j->rc))
			break;
		int s = 0;
		while (s + 1 < j->nsh && b >= j->block_base[s + 1])
			s++;
		struct shard *sh = &j->sh[s];
		uint64_t off = sh->data_start + (b - j->block_base[s]) * BLOCK;
		uint64_t n = sh->size - off < BLOCK ? sh->size - off : BLOCK;
		uint64_t x = j->seed ^ (b * 0xD1B54A32D192ED03ULL);
		uint64_t *w = (uint64_t *)buf;
		for (uint64_t i = 0; i < (n + 7) / 8; i++)
			w[i] = splitmix(&x);
		/* dtype-aware shaping of the random bytes, tensor by tensor */
		size_t lo = 0, hi = sh->nt;
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			if (sh->t[mid]->off + sh->t[mid]->nbytes <= off)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (size_t k = lo; k < sh->nt && sh->t[k]->off < off + n; k++) {
			uint64_t a = sh->t[k]->off > off ? sh->t[k]->off : off;
			uint64_t e = sh->t[k]->off + sh->t[k]->nbytes < off + n ? sh->t[k]->off + sh->t[k]->nbytes : off + n;
			if (a < e)
				fill_range(buf + (a - off), (size_t)(e - a), sh->t[k]->fill);
		}
		const uint8_t *p = buf;
		uint64_t left = n, o = off;
		while (left) {
			ssize_t r = pwrite(sh->fd, p, left, (off_t)o);
			if (r < 0 && errno == EINTR)
				continue;
			if (r < 0) {
				atomic_store(&j->rc, -errno);
				break;
			}
			p += r, left -= (uint64_t)r, o += (uint64_t)r;
		}
		atomic_fetch_add(&j->done, 1);
	}
	free(buf);
	return NULL;
}

static int cmp_gt_name(const void *a, const void *b)
{
	const struct gt *const *x = a, *const *y = b;
	size_t sx = ftst_dtype_size((*x)->w.dtype), sy = ftst_dtype_size((*y)->w.dtype);
	if (sx != sy)
		return sx > sy ? -1 : 1; /* safetensors: larger alignment first, then by name */
	return strcmp((*x)->w.name, (*y)->w.name);
}

/* The architecture called name: 0, or -EINVAL for one ftckpt does not write. */
static int arch_of(const char *name, enum arch *a)
{
	static const struct {
		const char *name;
		enum arch a;
	} names[] = {{"qwen3-moe", A_QWEN3}, {"mixtral", A_MIXTRAL}, {"deepseek-v3", A_DSV3}, {"gpt-oss", A_GPTOSS},
		     {"gpt-oss-mxfp4", A_GPTOSS}, {"gpt-oss-bf16", A_GPTOSS_BF16}};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (!strcmp(name, names[i].name)) {
			*a = names[i].a;
			return 0;
		}
	return -EINVAL;
}

/* Shard s of nsh (its tensors: those of tl with shard s): the safetensors header built (tensors
 * in name order), the file made at its final size with the header written (the data blocks are
 * filled later), its tensors' file into the weight map wm. 0, or -errno (err says which file). */
static int shard_open(struct shard *S, int s, int nsh, const char *out, const struct tlist *tl, json_t *wm,
		      char *err, size_t errlen)
{
	for (size_t i = 0; i < tl->n; i++)
		S->nt += tl->v[i].shard == s;
	S->t = malloc(sizeof *S->t * (S->nt ? S->nt : 1));
	struct ftst_wtensor *w = malloc(sizeof *w * (S->nt ? S->nt : 1));
	uint64_t *off = malloc(sizeof *off * (S->nt ? S->nt : 1));
	if (!S->t || !w || !off) {
		free(w);
		free(off);
		return -ENOMEM;
	}
	size_t k = 0;
	for (size_t i = 0; i < tl->n; i++)
		if (tl->v[i].shard == s)
			S->t[k++] = &tl->v[i];
	qsort(S->t, S->nt, sizeof *S->t, cmp_gt_name);
	for (size_t i = 0; i < S->nt; i++)
		w[i] = S->t[i]->w;
	char *hdr;
	size_t hl;
	uint64_t fsz;
	int rc = ftst_build_header(w, S->nt, "{\"format\":\"pt\"}", &hdr, &hl, off, &fsz);
	free(w);
	if (rc < 0) {
		free(off);
		return rc;
	}
	for (size_t i = 0; i < S->nt; i++)
		S->t[i]->off = off[i];
	free(off);
	S->data_start = hl;
	S->size = fsz;
	if (nsh == 1)
		snprintf(S->path, sizeof S->path, "%s/model.safetensors", out);
	else
		snprintf(S->path, sizeof S->path, "%s/model-%05d-of-%05d.safetensors", out, s + 1, nsh);
	const char *base = strrchr(S->path, '/') + 1;
	for (size_t i = 0; i < S->nt; i++)
		json_object_set_new(wm, S->t[i]->w.name, json_string(base));
	S->fd = open(S->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (S->fd < 0) {
		rc = fterr_set(err, errlen, -errno, "%s: %s", S->path, strerror(errno));
		free(hdr);
		return rc;
	}
	if ((rc = ftfs_write_all(S->fd, hdr, hl)) < 0 || ftruncate(S->fd, (off_t)fsz) < 0) {
		rc = fterr_set(err, errlen, rc < 0 ? rc : -errno, "%s: write failed", S->path);
		free(hdr);
		return rc;
	}
	free(hdr);
	return 0;
}

/* The shards' data blocks filled by threads (o->threads, else one per CPU; 1..32) with progress on
 * rep: 0, or the first -errno. */
static int fill_shards(struct job *j, int nthreads, const struct ftreport *rep)
{
	int threads = nthreads > 0 ? nthreads : (int)sysconf(_SC_NPROCESSORS_ONLN);
	if (threads < 1)
		threads = 1;
	if (threads > 32)
		threads = 32;
	pthread_t th[32];
	int started = 0;
	for (; started < threads; started++)
		if (pthread_create(&th[started], NULL, gen_worker, j))
			break;
	if (!started) {
		atomic_store(&j->rc, -EAGAIN);
	} else if (rep) {
		while (atomic_load(&j->done) < j->nblocks && !atomic_load(&j->rc)) {
			ftreport_progress(rep, (int)(atomic_load(&j->done) * 1000 / (j->nblocks ? j->nblocks : 1)), 1000,
					  "writing");
			usleep(100000);
		}
	}
	for (int t = 0; t < started; t++)
		pthread_join(th[t], NULL);
	return atomic_load(&j->rc);
}

int ftckpt_write(const struct ftckpt_opts *o, struct ftckpt_stats *st, char *err, size_t errlen)
{
	memset(st, 0, sizeof *st);
	double t0 = fttime_now_s();
	enum arch a;
	if (!o->arch)
		return fterr_set(err, errlen, -EINVAL, "no architecture given");
	if (arch_of(o->arch, &a) < 0)
		return fterr_set(err, errlen, -EINVAL, "unknown architecture '%s' (one of %s)", o->arch, ftckpt_archs());
	long L = o->layers > 0 ? o->layers : 4, E = o->experts > 0 ? o->experts : 8;
	long H = o->hidden > 0 ? o->hidden : 512, I = o->inter > 0 ? o->inter : 256;
	if (a == A_GPTOSS && (H % 32 || I % 32))
		return fterr_set(err, errlen, -EINVAL, "gpt-oss (mxfp4) needs --hidden and --inter divisible by 32");
	if (L > 4096 || E > 65536 || H > 65536 || I > 65536)
		return fterr_set(err, errlen, -EINVAL, "geometry too large");
	long first_dense = a == A_DSV3 && L > 1 ? 1 : 0;
	uint64_t limit = o->shard_bytes ? o->shard_bytes : FTCKPT_DEFAULT_SHARD;
	struct tlist tl = {0};
	struct shard *sh = NULL;
	struct job j = {0};
	int rc = 0, nsh = 0;
	char path[4096];
	DIR *d = opendir(o->out);
	if (d) {
		struct dirent *de;
		int nonempty = 0;
		while ((de = readdir(d)))
			nonempty |= strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
		closedir(d);
		if (nonempty)
			return fterr_set(err, errlen, -EEXIST, "%s exists and is not empty", o->out);
	}
	if ((rc = ftfs_mkdir_p(o->out, 0755)) < 0)
		return fterr_set(err, errlen, rc, "%s: %s", o->out, strerror(-rc));
	if ((rc = build_tensors(a, L, E, H, I, first_dense, &tl)) < 0)
		goto out;
	/* shards in state-dict order */
	uint64_t acc = 0;
	for (size_t i = 0; i < tl.n; i++) {
		if (acc > 0 && acc + tl.v[i].nbytes > limit) {
			nsh++;
			acc = 0;
		}
		tl.v[i].shard = nsh;
		acc += tl.v[i].nbytes;
		if (tl.v[i].expert)
			st->expert_bytes += tl.v[i].nbytes;
	}
	nsh++;
	sh = calloc((size_t)nsh, sizeof *sh);
	j.block_base = calloc((size_t)nsh + 1, sizeof *j.block_base);
	if (!sh || !j.block_base) {
		rc = -ENOMEM;
		goto out;
	}
	for (int s = 0; s < nsh; s++)
		sh[s].fd = -1;
	json_t *wm = json_object();
	for (int s = 0; s < nsh && rc == 0; s++) {
		struct shard *S = &sh[s];
		if ((rc = shard_open(S, s, nsh, o->out, &tl, wm, err, errlen)) < 0)
			break;
		j.block_base[s + 1] = j.block_base[s] + (S->size - S->data_start + BLOCK - 1) / BLOCK;
		st->file_bytes += S->size;
		st->ntensors += S->nt;
	}
	if (rc < 0) {
		json_decref(wm);
		goto out;
	}
	j.sh = sh, j.nsh = nsh, j.nblocks = j.block_base[nsh], j.seed = o->seed ? o->seed : 0x5EEDF00DULL;
	if ((rc = fill_shards(&j, o->threads, o->rep)) < 0) {
		json_decref(wm);
		fterr_set(err, errlen, rc, "writing shards: %s", strerror(-rc));
		goto out;
	}
	for (int s = 0; s < nsh; s++)
		if (fdatasync(sh[s].fd) < 0) {
			rc = fterr_set(err, errlen, -errno, "%s: %s", sh[s].path, strerror(errno));
			json_decref(wm);
			goto out;
		}
	if (o->rep)
		ftreport_progress(o->rep, 1000, 1000, "writing");
	if (nsh > 1) {
		json_t *idx = json_pack("{s:{s:I},s:o}", "metadata", "total_size", (json_int_t)(st->file_bytes),
					"weight_map", wm);
		char *txt = json_dumps(idx, JSON_INDENT(2) | JSON_SORT_KEYS);
		json_decref(idx);
		snprintf(path, sizeof path, "%s/model.safetensors.index.json", o->out);
		rc = txt ? ftfs_write_atomic(path, txt, strlen(txt), 0644) : -ENOMEM;
		free(txt);
		if (rc < 0) {
			fterr_set(err, errlen, rc, "%s: %s", path, strerror(-rc));
			goto out;
		}
	} else {
		json_decref(wm);
	}
	char *cfg = config_json(a, L, E, H, I, first_dense);
	snprintf(path, sizeof path, "%s/config.json", o->out);
	rc = cfg ? ftfs_write_atomic(path, cfg, strlen(cfg), 0644) : -ENOMEM;
	free(cfg);
	if (rc < 0) {
		fterr_set(err, errlen, rc, "%s: %s", path, strerror(-rc));
		goto out;
	}
	st->nshards = nsh;
	st->seconds = fttime_now_s() - t0;
out:
	for (int s = 0; sh && s < nsh; s++) {
		if (sh[s].fd >= 0)
			close(sh[s].fd);
		free(sh[s].t);
	}
	free(sh);
	free(j.block_base);
	for (size_t i = 0; i < tl.n; i++)
		free((char *)tl.v[i].w.name);
	free(tl.v);
	return rc;
}
