/* ftw reader: ftftw_load, an FTW directory (moe/ftw.h) read into banks by parallel workers. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "moe/directio.h"
#include "moe/ftw.h"
#include "moe/ftw_index.h"
#include "util/errmsg.h"
#include "util/fsutil.h"
#include "util/timeutil.h"

#define A FTFTW_ALIGN
#define ROUND_UP(x) (((x) + A - 1) / A * A)
#define MAX_IOV 512

/* A chunk of one shard read by one worker: either straight into the banks through iovecs
 * (file offset aligned) or, bounce != NULL, as an aligned window into the worker's buffer of
 * which bytes [skip, skip + copy) go to bounce (a flat bank's layer that is not aligned). */
struct fchunk {
	int shard;
	uint64_t off, len;
	size_t iov0;
	int niov;
	uint8_t *bounce;
	uint64_t skip, copy;
};

struct rd {
	struct fchunk *chunks;
	size_t nchunks, cap, chunk_bytes;
	struct iovec *iov;
	size_t niov, iovcap;
	struct ftdirectio_files files; /* one per shard */
	char (*paths)[4096];
	atomic_size_t next, done;
	atomic_uint_least64_t bytes;
	atomic_int err_rc;
	pthread_mutex_t lock;
	char err[512];
};

static int preadv_full(int fd, struct iovec *iov, int n, uint64_t off)
{
	struct iovec local[MAX_IOV];
	memcpy(local, iov, sizeof *iov * (size_t)n);
	struct iovec *v = local;
	while (n > 0) {
		ssize_t r = preadv(fd, v, n, (off_t)off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -EIO;
		off += (uint64_t)r;
		while (n > 0 && (size_t)r >= v->iov_len) {
			r -= (ssize_t)v->iov_len;
			v++, n--;
		}
		if (n > 0) {
			v->iov_base = (char *)v->iov_base + r;
			v->iov_len -= (size_t)r;
		}
	}
	return 0;
}

static int rd_chunk(struct rd *s, const struct fchunk *c, int fd, uint8_t **bounce_buf)
{
	if (!c->bounce)
		return preadv_full(fd, &s->iov[c->iov0], c->niov, c->off);
	if (!*bounce_buf && !(*bounce_buf = aligned_alloc(A, s->chunk_bytes)))
		return -ENOMEM;
	uint64_t got = 0; /* the window: at least skip + copy bytes (short only at EOF) */
	int rc = ftdirectio_pread(fd, *bounce_buf, c->len, c->off, &got);
	if (rc == 0 && got < c->skip + c->copy)
		rc = -EIO;
	if (rc == 0)
		memcpy(c->bounce, *bounce_buf + c->skip, c->copy);
	return rc;
}

static void *rd_worker(void *arg)
{
	struct rd *s = arg;
	uint8_t *bounce_buf = NULL;
	for (;;) {
		if (atomic_load(&s->err_rc))
			break;
		size_t i = atomic_fetch_add(&s->next, 1);
		if (i >= s->nchunks)
			break;
		const struct fchunk *c = &s->chunks[i];
		int fd = ftdirectio_fd(&s->files, c->shard);
		int rc = rd_chunk(s, c, fd, &bounce_buf);
		if (ftdirectio_retry(&s->files, c->shard, fd, rc))
			rc = rd_chunk(s, c, ftdirectio_fd(&s->files, c->shard), &bounce_buf);
		if (rc < 0) {
			pthread_mutex_lock(&s->lock);
			if (!atomic_load(&s->err_rc)) {
				snprintf(s->err, sizeof s->err, "%s: read at %llu: %s", s->paths[c->shard],
					 (unsigned long long)c->off, rc == -EIO ? "file shorter than its index" : strerror(-rc));
				atomic_store(&s->err_rc, rc);
			}
			pthread_mutex_unlock(&s->lock);
			break;
		}
		atomic_fetch_add(&s->bytes, c->bounce ? c->copy : c->len);
		atomic_fetch_add(&s->done, 1);
	}
	free(bounce_buf);
	return NULL;
}

static struct fchunk *new_chunk(struct rd *s)
{
	if (s->nchunks == s->cap) {
		size_t ncap = s->cap ? s->cap * 2 : 256;
		struct fchunk *nc = realloc(s->chunks, ncap * sizeof *nc);
		if (!nc)
			return NULL;
		s->chunks = nc, s->cap = ncap;
	}
	struct fchunk *c = &s->chunks[s->nchunks++];
	memset(c, 0, sizeof *c);
	return c;
}

/* Plan the read of file bytes [foff, foff + len) of shard sh into dst. tail_pad: zero padding
 * follows in the file up to the next 4096 boundary and dst has room for it (so an aligned start
 * is read straight in, rounded up); shard_end: the shard's size. */
static int plan_piece(struct rd *s, int sh, uint64_t foff, uint64_t len, uint8_t *dst, int tail_pad, uint64_t shard_end)
{
	int direct = foff % A == 0 && (len % A == 0 || (tail_pad && foff + ROUND_UP(len) <= shard_end));
	if (!direct) {
		for (uint64_t pos = foff; pos < foff + len;) {
			uint64_t w0 = pos / A * A, w1 = ROUND_UP(foff + len);
			if (w1 > w0 + s->chunk_bytes)
				w1 = w0 + s->chunk_bytes; /* past a shorter last shard the read comes back short */
			uint64_t copy = (w1 < foff + len ? w1 : foff + len) - pos;
			struct fchunk *c = new_chunk(s);
			if (!c)
				return -ENOMEM;
			*c = (struct fchunk){sh, w0, w1 - w0, 0, 0, dst + (pos - foff), pos - w0, copy};
			pos += copy;
		}
		return 0;
	}
	uint64_t rlen = ROUND_UP(len);
	for (uint64_t done = 0; done < rlen;) {
		struct fchunk *c = s->nchunks ? &s->chunks[s->nchunks - 1] : NULL;
		if (!c || c->bounce || c->shard != sh || c->off + c->len != foff + done || c->len >= s->chunk_bytes ||
		    c->niov >= MAX_IOV) {
			if (!(c = new_chunk(s)))
				return -ENOMEM;
			c->shard = sh, c->off = foff + done, c->iov0 = s->niov;
		}
		uint64_t k = rlen - done < s->chunk_bytes - c->len ? rlen - done : s->chunk_bytes - c->len;
		if (s->niov == s->iovcap) {
			size_t ncap = s->iovcap ? s->iovcap * 2 : 1024;
			struct iovec *nv = realloc(s->iov, ncap * sizeof *nv);
			if (!nv)
				return -ENOMEM;
			s->iov = nv, s->iovcap = ncap;
		}
		s->iov[s->niov++] = (struct iovec){dst + done, (size_t)k};
		c->niov++;
		c->len += k;
		done += k;
	}
	return 0;
}

/* H and I from the per-expert shape of one bank entry of format f (bank: schema name), for
 * an FTW without config.json. */
static int derive_geometry(const struct ftfmt *f, const char *bank, const json_t *shape, long *H, long *I)
{
	json_int_t d1 = json_integer_value(json_array_get(shape, 1)), d2 = json_integer_value(json_array_get(shape, 2));
	if (d1 <= 0 || d2 <= 0)
		return -ENOTSUP;
	if (!strcmp(bank, "gate_up") && (f->id == FTFMT_BF16 || f->id == FTFMT_FP8_BLOCK))
		*I = (long)(d1 / 2), *H = (long)d2;
	else if (!strcmp(bank, "gate_up") && f->id == FTFMT_Q4_0)
		*I = (long)(d1 / 2), *H = (long)(d2 / 18 * 32);
	else if (!strcmp(bank, "gate_up_packed") && (f->id == FTFMT_NVFP4 || f->id == FTFMT_DS_FP4))
		*I = (long)(d1 / 2), *H = (long)(d2 * 2);
	else if (!strcmp(bank, "gate_up_blocks") && f->id == FTFMT_MXFP4_TRITON)
		*H = (long)(d1 * 2), *I = (long)(d2 / 2);
	else
		return -ENOTSUP;
	return 0;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return x < y ? -1 : x > y;
}

/* One experts_bank entry of the index. layer: the number after #L, -1 for a flat entry. */
struct bent {
	int bank, layer;
	uint64_t global_off, nbytes;
	json_t *shape; /* borrowed */
	const char *name, *dtype;
};

/* A run of file bytes of one bank layer. */
struct seg {
	uint64_t global_off, len;
	uint8_t *dst;
	int tail_pad;
};

static int cmp_seg(const void *a, const void *b)
{
	const struct seg *x = a, *y = b;
	return x->global_off < y->global_off ? -1 : x->global_off > y->global_off;
}

static int is_alpha(const char *name)
{
	return !strcmp(name, "gate_up_alpha") || !strcmp(name, "down_alpha");
}

/* What the index says, checked: the shards, the bank entries and the banks' geometry. */
struct layout {
	const struct ftfmt *fmt;
	size_t nsh;
	uint64_t *sh_off;     /* nsh + 1: each shard's first global offset, then the total */
	struct bent *be;      /* the experts_bank entries (nbe) */
	size_t nbe;
	int *lids, nlids;     /* the per-layer entries' layer numbers; after layer_count: distinct, sorted */
	int flat[FTFMT_MAX_BANKS], perl[FTFMT_MAX_BANKS]; /* entries per bank: flat, per layer */
	struct ftfmt_bank_shape shp[FTFMT_MAX_BANKS];
	int nbanks, L;
	long E, H, I;
	int *layer_ids;       /* L model layer numbers */
};

static void layout_release(struct layout *y)
{
	free(y->sh_off);
	free(y->be);
	free(y->lids);
	free(y->layer_ids);
}

/* Shards: contiguous from 0, 4096-aligned, plain file names (their paths into s). */
static int read_shards(const char *dir, const json_t *shards, struct layout *y, struct rd *s, char *err, size_t errlen)
{
	size_t nsh = y->nsh;
	int dio = ftdirectio_init(&s->files, nsh);
	s->paths = malloc(sizeof *s->paths * nsh);
	y->sh_off = malloc(sizeof(uint64_t) * (nsh + 1));
	if (dio < 0 || !s->paths || !y->sh_off)
		return -ENOMEM;
	uint64_t g = 0;
	for (size_t i = 0; i < nsh; i++) {
		json_t *sj = json_array_get(shards, i);
		const char *fn = json_string_value(json_object_get(sj, "file"));
		json_int_t go = json_integer_value(json_object_get(sj, "global_off")),
			   nbj = json_integer_value(json_object_get(sj, "nbytes"));
		if (!fn || !*fn || strchr(fn, '/') || !strcmp(fn, "..") || !strcmp(fn, ".") || (uint64_t)go != g ||
		    nbj < 0 || go % A || (i + 1 < nsh && nbj % A))
			return fterr_set(err, errlen, -EINVAL, "FTW index: shard %zu is malformed (file, global_off, nbytes)", i);
		y->sh_off[i] = g;
		g += (uint64_t)nbj;
		snprintf(s->paths[i], sizeof s->paths[i], "%s/%s", dir, fn);
	}
	y->sh_off[nsh] = g;
	return 0;
}

/* Bank entries: per-layer "<bank>#L<5 digits>" or flat "<bank>" [L*E, ...]; alphas flat. */
static int read_entries(const json_t *tensors, struct layout *y, char *err, size_t errlen)
{
	uint64_t g = y->sh_off[y->nsh];
	y->nbanks = ftfmt_banks(y->fmt, 4096, 4096, y->shp); /* names only */
	size_t nt = json_array_size(tensors);
	y->be = calloc(nt ? nt : 1, sizeof *y->be);
	y->lids = calloc(nt ? nt : 1, sizeof *y->lids);
	if (!y->be || !y->lids)
		return -ENOMEM;
	for (size_t i = 0; i < nt; i++) {
		json_t *t = json_array_get(tensors, i);
		const char *kind = json_string_value(json_object_get(t, "kind")),
			   *name = json_string_value(json_object_get(t, "name"));
		json_t *shape = json_object_get(t, "shape");
		json_int_t go = json_integer_value(json_object_get(t, "global_off")),
			   nbj = json_integer_value(json_object_get(t, "nbytes"));
		if (!kind || !name || !json_is_integer(json_object_get(t, "global_off")) || go < 0 || nbj < 0 || go % A ||
		    (uint64_t)go + (uint64_t)nbj > g || !json_is_array(shape))
			return fterr_set(err, errlen, -EINVAL, "FTW index: tensor %zu is malformed or past the end", i);
		if (strcmp(kind, "experts_bank"))
			continue;
		struct bent e = {-1, -1, (uint64_t)go, (uint64_t)nbj, shape, name,
				 json_string_value(json_object_get(t, "dtype"))};
		size_t nl = strlen(name), base = nl;
		if (nl > 7 && !strncmp(name + nl - 7, "#L", 2) && strspn(name + nl - 5, "0123456789") == 5) {
			base = nl - 7;
			e.layer = atoi(name + nl - 5);
		}
		if (e.layer < 0 && is_alpha(name)) {
			e.bank = -2;
		} else {
			for (int k = 0; k < y->nbanks; k++)
				if (base == strlen(y->shp[k].name) && !strncmp(name, y->shp[k].name, base))
					e.bank = k;
			if (e.bank < 0)
				return fterr_set(err, errlen, -EINVAL, "FTW index: experts_bank entry '%.100s' is neither "
						 "<bank>#L<5 digits> nor a flat <bank> of %s", name, y->fmt->name);
			if (e.layer < 0)
				y->flat[e.bank]++;
			else
				y->perl[e.bank]++, y->lids[y->nlids++] = e.layer;
			if (y->flat[e.bank] && y->perl[e.bank])
				return fterr_set(err, errlen, -EINVAL, "FTW index: bank %s mixes flat and per-layer entries",
						 y->shp[e.bank].name);
		}
		y->be[y->nbe++] = e;
	}
	if (!y->nbe)
		return fterr_set(err, errlen, -EINVAL, "FTW index: no experts_bank entries");
	return 0;
}

/* L: the per-layer entries' distinct numbers, or expert_bank_num_layers, or config.json (cfg
 * when have_cfg); every bank has one flat entry or one per layer. */
static int layer_count(const json_t *idx, const struct ftbanks_geom *cfg, int have_cfg, struct layout *y, char *err,
		       size_t errlen)
{
	qsort(y->lids, (size_t)y->nlids, sizeof *y->lids, cmp_int);
	int L = 0;
	for (int i = 0; i < y->nlids; i++)
		if (!L || y->lids[L - 1] != y->lids[i])
			y->lids[L++] = y->lids[i];
	json_t *jn = json_object_get(idx, "expert_bank_num_layers");
	if (jn && !json_is_null(jn) && (!json_is_integer(jn) || json_integer_value(jn) <= 0 ||
					json_integer_value(jn) > FTBANKS_MAX_LAYERS))
		return fterr_set(err, errlen, -EINVAL, "FTW index: expert_bank_num_layers is not a layer count");
	if (L && json_is_integer(jn) && json_integer_value(jn) != L)
		return fterr_set(err, errlen, -EINVAL, "FTW index: per-layer bank entries for %d layers but "
				 "expert_bank_num_layers is %lld", L, (long long)json_integer_value(jn));
	if (!L && json_is_integer(jn))
		L = (int)json_integer_value(jn);
	if (!L && have_cfg && cfg->layers > cfg->first_dense)
		L = (int)(cfg->layers - cfg->first_dense);
	if (L <= 0 || L > FTBANKS_MAX_LAYERS)
		return fterr_set(err, errlen, -EINVAL, "FTW index: flat bank entries but no layer count "
				 "(expert_bank_num_layers, or num_hidden_layers in config.json)");
	for (int k = 0; k < y->nbanks; k++)
		if ((y->flat[k] && y->flat[k] != 1) || (y->perl[k] && y->perl[k] != L) || (!y->flat[k] && !y->perl[k]))
			return fterr_set(err, errlen, -EINVAL, "FTW index: bank %s has %d entries for %d layers (%s)",
					 y->shp[k].name, y->flat[k] + y->perl[k], L, y->flat[k] ? "flat" : "per-layer");
	y->L = L;
	return 0;
}

/* E, then H and I (config.json when its geometry fits the entries, else from a shape); then every
 * entry's shape, dtype and size against them. */
static int check_geometry(const struct ftbanks_geom *cfg, int have_cfg, struct layout *y, char *err, size_t errlen)
{
	const struct ftfmt *fmt = y->fmt;
	int L = y->L;
	long E = 0, H = 0, I = 0;
	for (size_t i = 0; i < y->nbe && !E; i++)
		if (y->be[i].bank >= 0) {
			const struct bent *e = &y->be[i];
			json_int_t d0 = json_integer_value(json_array_get(e->shape, 0));
			E = e->layer < 0 ? (d0 % L ? -1 : (long)(d0 / L)) : (long)d0;
			if (E <= 0)
				return fterr_set(err, errlen, -EINVAL, "FTW index: '%.100s' has no whole number of experts "
						 "per layer (%d layers)", e->name, L);
			if (have_cfg && ftfmt_banks(fmt, cfg->hidden, cfg->inter, y->shp) > 0)
				H = cfg->hidden, I = cfg->inter;
			else if (derive_geometry(fmt, y->shp[e->bank].name, e->shape, &H, &I) < 0 ||
				 ftfmt_banks(fmt, H, I, y->shp) <= 0)
				return fterr_set(err, errlen, -ENOTSUP, "FTW index: no config.json and cannot tell the %s "
						 "geometry from '%s'", fmt->name, e->name);
		}
	y->nbanks = ftfmt_banks(fmt, H, I, y->shp);
	y->E = E, y->H = H, y->I = I;
	for (size_t i = 0; i < y->nbe; i++) {
		const struct bent *e = &y->be[i];
		size_t nd = json_array_size(e->shape);
		uint64_t elems = 1;
		for (size_t d = 0; d < nd; d++) {
			json_int_t v = json_integer_value(json_array_get(e->shape, d));
			elems = v > 0 && elems < (1ULL << 48) ? elems * (uint64_t)v : 0;
		}
		if (e->bank == -2) {
			if (nd != 1 || elems != (uint64_t)L * (uint64_t)E || !e->dtype)
				return fterr_set(err, errlen, -EINVAL, "FTW index: alpha '%s' is not flat [%d*%ld]", e->name, L, E);
			continue;
		}
		const struct ftfmt_bank_shape *k = &y->shp[e->bank];
		uint64_t want_n = k->expert_bytes * (uint64_t)E * (e->layer < 0 ? (uint64_t)L : 1);
		int ok = e->nbytes == want_n && ftfmt_dtype_accepts(k->dtype, e->dtype) &&
			 json_integer_value(json_array_get(e->shape, 0)) == E * (e->layer < 0 ? L : 1);
		if (fmt->id == FTFMT_NVFP4_MARLIN) {
			/* Marlin-tiled rows: the bytes per expert are the schema's, the shape its own */
			ok = ok && elems * (k->dtype == FTFMT_DT_BF16 || k->dtype == FTFMT_DT_FP16 ? 2 : 1) == want_n;
		} else {
			ok = ok && nd == (size_t)k->ndim + 1;
			for (int d = 0; ok && d < k->ndim; d++)
				ok = json_integer_value(json_array_get(e->shape, (size_t)d + 1)) == k->dims[d];
		}
		if (!ok)
			return fterr_set(err, errlen, -EINVAL, "FTW index: bank entry '%.100s' (%s) does not fit %s with H "
					 "%ld, I %ld, E %ld, %d layers", e->name, e->dtype ? e->dtype : "no dtype", fmt->name,
					 H, I, E, L);
	}
	return 0;
}

/* Model layer numbers: the index's expert_bank_layer_ids (ftbench), else what the entries are
 * numbered (older ftbench files used the model's layers), else 0..L-1. */
static int layer_numbers(const json_t *idx, struct layout *y)
{
	int L = y->L;
	y->layer_ids = malloc(sizeof(int) * (size_t)L);
	if (!y->layer_ids)
		return -ENOMEM;
	json_t *jl = json_object_get(idx, "expert_bank_layer_ids");
	int use_jl = json_is_array(jl) && json_array_size(jl) == (size_t)L;
	for (int l = 0; l < L; l++) {
		json_t *v = json_array_get(jl, (size_t)l);
		use_jl = use_jl && json_is_integer(v) && json_integer_value(v) >= 0 &&
			 json_integer_value(v) < FTBANKS_MAX_LAYERS && (!l || json_integer_value(v) > y->layer_ids[l - 1]);
		if (use_jl)
			y->layer_ids[l] = (int)json_integer_value(v);
	}
	for (int l = 0; !use_jl && l < L; l++)
		y->layer_ids[l] = y->nlids ? y->lids[l] : l;
	return 0;
}

/* The index of dir, checked, into y (s gets the shard paths and descriptors). */
static int read_layout(const char *dir, const json_t *idx, struct layout *y, struct rd *s, char *err, size_t errlen)
{
	const json_t *shards = json_object_get(idx, "shards"), *tensors = json_object_get(idx, "tensors");
	const char *qf = json_string_value(json_object_get(idx, "quant_format"));
	y->nsh = json_array_size(shards);
	if (json_integer_value(json_object_get(idx, "version")) != 1 ||
	    json_integer_value(json_object_get(idx, "align")) != A || !json_is_array(shards) || y->nsh == 0 ||
	    y->nsh > 100000 || !json_is_array(tensors) || !qf)
		return fterr_set(err, errlen, -EINVAL, "%s/%s: not a version-1 FTW index with align 4096, shards, "
				 "tensors and quant_format", dir, FTFTW_INDEX);
	if (!(y->fmt = ftfmt_lookup(qf)))
		return fterr_set(err, errlen, -ENOTSUP, "FTW quant_format '%s' is unknown", qf);
	int rc = read_shards(dir, shards, y, s, err, errlen);
	if (rc < 0)
		return rc;
	if ((uint64_t)json_integer_value(json_object_get(idx, "total_bytes")) != y->sh_off[y->nsh])
		return fterr_set(err, errlen, -EINVAL, "FTW index: total_bytes does not match the shards");
	if ((rc = read_entries(tensors, y, err, errlen)) < 0)
		return rc;
	struct ftbanks_geom cfg;
	char cerr[256];
	int have_cfg = ftbanks_read_config(dir, &cfg, cerr, sizeof cerr) == 0;
	if ((rc = layer_count(idx, &cfg, have_cfg, y, err, errlen)) < 0 ||
	    (rc = check_geometry(&cfg, have_cfg, y, err, errlen)) < 0)
		return rc;
	return layer_numbers(idx, y);
}

/* The reads of every bank layer of b: one segment per bank layer, in file order, split at shard
 * ends into s's chunks. */
static int plan_reads(const struct layout *y, struct ftbanks *b, struct rd *s, char *err, size_t errlen)
{
	int L = y->L, rc = 0;
	size_t nseg = 0, sh = 0;
	struct seg *segs = calloc((size_t)y->nbanks * (size_t)L, sizeof *segs);
	unsigned char *seen = calloc((size_t)y->nbanks * (size_t)L, 1);
	if (!segs || !seen) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < y->nbe; i++) {
		const struct bent *e = &y->be[i];
		if (e->bank < 0)
			continue;
		size_t lb = b->layer_bytes[e->bank];
		if (e->layer >= 0) {
			int *li = bsearch(&e->layer, y->lids, (size_t)L, sizeof *y->lids, cmp_int);
			if (seen[(size_t)e->bank * (size_t)L + (size_t)(li - y->lids)]++) {
				rc = fterr_set(err, errlen, -EINVAL, "FTW index: %s appears twice", e->name);
				goto out;
			}
			segs[nseg++] = (struct seg){e->global_off, lb, ftbanks_layer(b, e->bank, li - y->lids), 1};
			continue;
		}
		for (int l = 0; l < L; l++)
			segs[nseg++] = (struct seg){e->global_off + (uint64_t)l * lb, lb, ftbanks_layer(b, e->bank, l), l == L - 1};
	}
	qsort(segs, nseg, sizeof *segs, cmp_seg);
	const uint64_t *sh_off = y->sh_off;
	for (size_t i = 0; i < nseg; i++) {
		struct seg *q = &segs[i];
		if (i && q->global_off < segs[i - 1].global_off + segs[i - 1].len) {
			rc = fterr_set(err, errlen, -EINVAL, "FTW index: bank entries overlap at %llu",
				       (unsigned long long)q->global_off);
			goto out;
		}
		/* split at shard ends: a tensor larger than a shard spans several */
		for (uint64_t a = q->global_off, end = q->global_off + q->len; a < end;) {
			while (sh + 1 < y->nsh && a >= sh_off[sh + 1])
				sh++;
			uint64_t pe = end < sh_off[sh + 1] ? end : sh_off[sh + 1];
			if (pe <= a) {
				rc = fterr_set(err, errlen, -EINVAL, "FTW index: a bank entry lies past the shards");
				goto out;
			}
			if ((rc = plan_piece(s, (int)sh, a - sh_off[sh], pe - a, q->dst + (a - q->global_off),
					     q->tail_pad && pe == end, sh_off[sh + 1] - sh_off[sh])) < 0)
				goto out;
			a = pe;
		}
	}
out:
	free(segs);
	free(seen);
	return rc;
}

/* Read s's chunks with o->workers threads (progress on o->rep): 0, or the first error (in s->err). */
static int run_readers(struct rd *s, const struct ftload_opts *o)
{
	int workers = o->workers > 0 ? o->workers : FTLOAD_DEFAULT_WORKERS;
	if ((size_t)workers > s->nchunks)
		workers = s->nchunks ? (int)s->nchunks : 1;
	if (workers > 256)
		workers = 256;
	pthread_t th[256];
	int started = 0;
	for (; started < workers; started++)
		if (pthread_create(&th[started], NULL, rd_worker, s))
			break;
	if (started < workers) {
		pthread_mutex_lock(&s->lock);
		if (!atomic_load(&s->err_rc)) {
			atomic_store(&s->err_rc, -EAGAIN);
			snprintf(s->err, sizeof s->err, "cannot start reader threads");
		}
		pthread_mutex_unlock(&s->lock);
	}
	if (o->rep) {
		size_t last = (size_t)-1;
		while (atomic_load(&s->done) < s->nchunks && !atomic_load(&s->err_rc)) {
			size_t d = atomic_load(&s->done);
			if (d != last)
				ftreport_progress(o->rep, (int)(d * 1000 / s->nchunks), 1000, "ftw");
			last = d;
			usleep(5000);
		}
	}
	for (int t = 0; t < started; t++)
		pthread_join(th[t], NULL);
	return atomic_load(&s->err_rc);
}

int ftftw_load(const char *dir, const struct ftload_opts *o, struct ftbanks **out, struct ftload_stats *st,
	       char *err, size_t errlen)
{
	*out = NULL;
	memset(st, 0, sizeof *st);
	snprintf(st->loader, sizeof st->loader, "ftw");
	int rc;
	json_t *idx = ftftw_load_index(dir, err, errlen, &rc);
	if (!idx)
		return rc;
	struct ftbanks *b = NULL;
	struct layout y = {0};
	struct rd s = {0};
	pthread_mutex_init(&s.lock, NULL);
	if ((rc = read_layout(dir, idx, &y, &s, err, errlen)) < 0)
		goto out;
	double t0 = fttime_now_s();
	if ((rc = ftbanks_alloc(y.fmt, y.H, y.I, y.E, y.L, y.layer_ids, &b)) < 0) {
		fterr_set(err, errlen, rc, "allocating banks: %s", strerror(-rc));
		goto out;
	}
	s.chunk_bytes = o->chunk_bytes ? ROUND_UP(o->chunk_bytes) : FTLOAD_DEFAULT_CHUNK;
	if ((rc = plan_reads(&y, b, &s, err, errlen)) < 0)
		goto out;
	for (size_t i = 0; i < y.nsh; i++) {
		int r = ftdirectio_open(&s.files, i, s.paths[i]);
		if (r < 0) {
			rc = fterr_set(err, errlen, r, "%s: %s", s.paths[i], strerror(-r));
			goto out;
		}
	}
	if ((rc = run_readers(&s, o)) < 0) {
		fterr_set(err, errlen, rc, "%s", s.err);
		goto out;
	}
	if (o->rep)
		ftreport_progress(o->rep, 1000, 1000, "ftw");
	st->seconds = fttime_now_s() - t0;
	st->file_bytes = atomic_load(&s.bytes);
	st->direct = ftdirectio_all_direct(&s.files);
	*out = b;
	b = NULL;
out:
	ftdirectio_release(&s.files);
	free(s.paths);
	free(s.chunks);
	free(s.iov);
	layout_release(&y);
	pthread_mutex_destroy(&s.lock);
	ftbanks_free(b);
	json_decref(idx);
	return rc;
}
