/* ftw: converter and reader of the FTW format. See ftw.h. */
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
#include "util/errmsg.h"
#include "util/fsutil.h"
#include "util/timeutil.h"

#define A FTW_ALIGN
#define ROUND_UP(x) (((x) + A - 1) / A * A)
#define MAX_IOV 512

static json_t *load_index(const char *dir, char *err, size_t errlen, int *rc)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", dir, FTW_INDEX);
	char *buf;
	size_t len;
	*rc = ftfs_read_file(path, 256u << 20, &buf, &len);
	if (*rc < 0) {
		fterr_set(err, errlen, *rc, "%s: %s", path, strerror(-*rc));
		return NULL;
	}
	json_error_t je;
	json_t *j = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
	free(buf);
	if (!json_is_object(j)) {
		json_decref(j);
		*rc = fterr_set(err, errlen, -EINVAL, "%s: not a JSON object (%s)", path, je.text);
		return NULL;
	}
	return j;
}

int ftftw_is_dir(const char *dir)
{
	int rc;
	json_t *j = load_index(dir, NULL, 0, &rc);
	int yes = j && json_is_string(json_object_get(j, "format")) &&
		  !strcmp(json_string_value(json_object_get(j, "format")), "freetoken_weight");
	json_decref(j);
	return yes;
}

/* ---------------------------------------------------------------- converter */

struct entry {
	const char *name;      /* dense: the tensor's name (borrowed) */
	char bank_name[64];
	int bank, layer;       /* bank >= 0: a bank entry */
	const struct ftst_tensor *t;
	uint64_t global_off, nbytes;
	int shard;
};

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *s = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ s[i]) * 1099511628211ULL;
	return h;
}

static int write_at(int fd, const void *buf, size_t n, uint64_t off)
{
	const char *p = buf;
	while (n) {
		ssize_t w = pwrite(fd, p, n, (off_t)off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		p += w, n -= (size_t)w, off += (uint64_t)w;
	}
	return 0;
}

static int copy_metadata(const char *src, const char *dst, json_t *list)
{
	DIR *d = opendir(src);
	if (!d)
		return -errno;
	struct dirent *de;
	int rc = 0;
	while ((de = readdir(d))) {
		const char *n = de->d_name;
		size_t l = strlen(n);
		if (n[0] == '.' || (l > 12 && !strcmp(n + l - 12, ".safetensors")) ||
		    !strcmp(n, "model.safetensors.index.json") || !strcmp(n, FTW_INDEX))
			continue;
		char sp[4096], dp[4096];
		snprintf(sp, sizeof sp, "%s/%s", src, n);
		snprintf(dp, sizeof dp, "%s/%s", dst, n);
		struct stat st;
		if (stat(sp, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > (64 << 20))
			continue;
		char *buf;
		size_t len;
		if ((rc = ftfs_read_file(sp, 64u << 20, &buf, &len)) < 0)
			break;
		rc = ftfs_write_atomic(dp, buf, len, 0644);
		free(buf);
		if (rc < 0)
			break;
		json_array_append_new(list, json_string(n));
	}
	closedir(d);
	return rc;
}

int ftftw_convert(const char *model_dir, const char *out_dir, const struct ftftw_convert_opts *o,
		  struct ftftw_convert_stats *st, char *err, size_t errlen)
{
	memset(st, 0, sizeof *st);
	double t0 = ft_now_s();
	uint64_t limit = o->shard_limit ? ROUND_UP(o->shard_limit) : FTW_DEFAULT_SHARD_LIMIT;
	struct ftmoe_geom g;
	struct ftst_model *m = NULL;
	struct ftbanks_plan *p = NULL;
	struct ftbanks *b = NULL;
	struct entry *ents = NULL;
	json_t *idx = NULL;
	uint8_t *buf = NULL;
	int fd = -1, rc;
	char path[4096];
	if (ftftw_is_dir(model_dir))
		return fterr_set(err, errlen, -EINVAL, "%s is already an FTW directory", model_dir);
	if ((rc = ftmoe_read_config(model_dir, &g, err, errlen)) < 0 ||
	    (rc = ftst_model_open(model_dir, &m, err, errlen)) < 0 ||
	    (rc = ftbanks_discover(m, &g, &p, err, errlen)) < 0)
		goto out;
	if ((rc = ftfs_mkdir_p(out_dir, 0755)) < 0) {
		fterr_set(err, errlen, rc, "%s: %s", out_dir, strerror(-rc));
		goto out;
	}
	snprintf(path, sizeof path, "%s/%s", out_dir, FTW_INDEX);
	if (unlink(path) < 0 && errno != ENOENT) {
		rc = fterr_set(err, errlen, -errno, "%s: %s", path, strerror(errno));
		goto out;
	}
	if ((rc = ftload_plan(p, &o->load, &b, &st->load, err, errlen)) < 0)
		goto out;
	st->load_s = st->load.seconds;
	double tw = ft_now_s();
	/* Layout: banks (bank-major, then layer), then the other tensors in file order. */
	size_t nb = (size_t)b->nbanks * (size_t)b->L, nd = 0, n = 0;
	ents = calloc(nb + m->ntensors, sizeof *ents);
	if (!ents) {
		rc = -ENOMEM;
		goto out;
	}
	for (int k = 0; k < b->nbanks; k++)
		for (long l = 0; l < b->L; l++) {
			struct entry *e = &ents[n++];
			e->bank = k, e->layer = (int)l;
			snprintf(e->bank_name, sizeof e->bank_name, "%s#L%05d", b->shape[k].name, b->layer_ids[l]);
			e->name = e->bank_name;
			e->nbytes = b->layer_bytes[k];
		}
	for (size_t f = 0; f < m->nfiles; f++)
		for (size_t i = 0; i < m->files[f].ntensors; i++) {
			const struct ftst_tensor *t = &m->files[f].tensors[i];
			if (ftbanks_plan_uses(p, t))
				continue;
			struct entry *e = &ents[n++];
			e->bank = -1, e->t = t, e->name = t->name, e->nbytes = t->nbytes;
			nd++;
		}
	uint64_t g_off = 0, shard_start = 0;
	int shard = 0;
	json_t *shards = json_array(), *tensors = json_array();
	for (size_t i = 0; i < n; i++) {
		uint64_t sz = ROUND_UP(ents[i].nbytes);
		if (g_off > shard_start && g_off + sz - shard_start > limit) {
			char fn[64];
			snprintf(fn, sizeof fn, "freetoken-%05d.ftw", shard);
			json_array_append_new(shards, json_pack("{s:s,s:I,s:I}", "file", fn, "global_off",
								(json_int_t)shard_start, "nbytes",
								(json_int_t)(g_off - shard_start)));
			shard++;
			shard_start = g_off;
		}
		ents[i].global_off = g_off;
		ents[i].shard = shard;
		g_off += sz;
	}
	{
		char fn[64];
		snprintf(fn, sizeof fn, "freetoken-%05d.ftw", shard);
		json_array_append_new(shards, json_pack("{s:s,s:I,s:I}", "file", fn, "global_off",
							(json_int_t)shard_start, "nbytes", (json_int_t)(g_off - shard_start)));
	}
	st->nshards = shard + 1;
	buf = aligned_alloc(A, FTLOAD_DEFAULT_CHUNK);
	if (!buf) {
		rc = -ENOMEM;
		json_decref(shards);
		json_decref(tensors);
		goto out;
	}
	int cur = -1, src_fd = -1, src_file = -1;
	uint64_t cur_base = 0;
	for (size_t i = 0; i < n && rc == 0; i++) {
		struct entry *e = &ents[i];
		if (e->shard != cur) {
			if (fd >= 0 && (fdatasync(fd) < 0 || close(fd) < 0)) {
				rc = fterr_set(err, errlen, -errno, "writing FTW shard %d: %s", cur, strerror(errno));
				fd = -1;
				break;
			}
			cur = e->shard;
			cur_base = e->global_off;
			snprintf(path, sizeof path, "%s/freetoken-%05d.ftw", out_dir, cur);
			/* a new file: an old shard of that name (or a link planted there) is replaced,
			 * never written through */
			if (unlink(path) < 0 && errno != ENOENT) {
				rc = fterr_set(err, errlen, -errno, "%s: %s", path, strerror(errno));
				break;
			}
			fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
			if (fd < 0) {
				rc = fterr_set(err, errlen, -errno, "%s: %s", path, strerror(errno));
				break;
			}
		}
		uint64_t off = e->global_off - cur_base, sz = ROUND_UP(e->nbytes);
		json_t *shape = json_array();
		if (e->bank >= 0) {
			json_array_append_new(shape, json_integer(b->E));
			for (int d = 0; d < b->shape[e->bank].ndim; d++)
				json_array_append_new(shape, json_integer(b->shape[e->bank].dims[d]));
			json_array_append_new(tensors, json_pack("{s:s,s:s,s:s,s:o,s:I,s:I}", "name", e->name, "kind",
								 "experts_bank", "dtype", ftdtype_name(b->shape[e->bank].dtype),
								 "shape", shape, "global_off", (json_int_t)e->global_off,
								 "nbytes", (json_int_t)e->nbytes));
			/* the layer stride is >= sz and its slack is zero: write the padding with it */
			rc = write_at(fd, ftbanks_layer(b, e->bank, e->layer), sz, off);
			if (rc < 0)
				fterr_set(err, errlen, rc, "writing %s: %s", e->name, strerror(-rc));
		} else {
			for (int d = 0; d < e->t->ndim; d++)
				json_array_append_new(shape, json_integer(e->t->shape[d]));
			json_array_append_new(tensors, json_pack("{s:s,s:s,s:s,s:o,s:I,s:I}", "name", e->name, "kind",
								 "weight", "dtype", ftst_dtype_name(e->t->dtype), "shape",
								 shape, "global_off", (json_int_t)e->global_off, "nbytes",
								 (json_int_t)e->nbytes));
			if (e->t->file != src_file) {
				if (src_fd >= 0)
					close(src_fd);
				src_file = e->t->file;
				src_fd = open(m->files[src_file].path, O_RDONLY | O_CLOEXEC);
				if (src_fd < 0) {
					rc = fterr_set(err, errlen, -errno, "%s: %s", m->files[src_file].path, strerror(errno));
					break;
				}
			}
			for (uint64_t done = 0; done < sz && rc == 0;) {
				uint64_t k = sz - done < FTLOAD_DEFAULT_CHUNK ? sz - done : FTLOAD_DEFAULT_CHUNK;
				uint64_t data = done < e->nbytes ? (e->nbytes - done < k ? e->nbytes - done : k) : 0;
				memset(buf + data, 0, k - data);
				if (data && (rc = ftfs_pread_full(src_fd, buf, data, (off_t)(e->t->offset + done))) < 0) {
					fterr_set(err, errlen, rc, "reading '%s': %s", e->name, strerror(-rc));
					break;
				}
				if ((rc = write_at(fd, buf, k, off + done)) < 0)
					fterr_set(err, errlen, rc, "writing '%s': %s", e->name, strerror(-rc));
				done += k;
			}
		}
		st->bytes_written += sz;
	}
	if (src_fd >= 0)
		close(src_fd);
	if (fd >= 0) {
		if (rc == 0 && fdatasync(fd) < 0)
			rc = fterr_set(err, errlen, -errno, "writing FTW shard %d: %s", cur, strerror(errno));
		close(fd);
		fd = -1;
	}
	if (rc < 0) {
		json_decref(shards);
		json_decref(tensors);
		goto out;
	}
	/* fingerprint: shard names, sizes, mtimes and header lengths of the source */
	uint64_t h = 1469598103934665603ULL;
	for (size_t f = 0; f < m->nfiles; f++) {
		struct stat sst;
		if (stat(m->files[f].path, &sst) == 0) {
			h = fnv(h, &sst.st_size, sizeof sst.st_size);
			h = fnv(h, &sst.st_mtim.tv_sec, sizeof sst.st_mtim.tv_sec);
		}
		const char *base = strrchr(m->files[f].path, '/');
		base = base ? base + 1 : m->files[f].path;
		h = fnv(h, base, strlen(base));
		h = fnv(h, &m->files[f].data_start, sizeof m->files[f].data_start);
	}
	char fp[32], absdir[PATH_MAX];
	snprintf(fp, sizeof fp, "%016llx", (unsigned long long)h);
	if (!realpath(model_dir, absdir))
		snprintf(absdir, sizeof absdir, "%s", model_dir);
	json_t *copied = json_array();
	if ((rc = copy_metadata(model_dir, out_dir, copied)) < 0) {
		fterr_set(err, errlen, rc, "copying metadata files: %s", strerror(-rc));
		json_decref(copied);
		json_decref(shards);
		json_decref(tensors);
		goto out;
	}
	idx = json_pack("{s:s,s:i,s:i,s:I,s:I,s:o,s:o,s:s,s:s,s:s,s:I,s:{s:I,s:I},s:o}", "format", "freetoken_weight",
			"version", 1, "align", A, "shard_limit", (json_int_t)limit, "total_bytes", (json_int_t)g_off,
			"tensors", tensors, "shards", shards, "source_model_path", absdir, "fingerprint", fp,
			"quant_format", b->fmt->name, "expert_bank_num_layers", (json_int_t)b->L, "counts",
			"weight", (json_int_t)nd, "experts_bank", (json_int_t)nb, "copied_metadata", copied);
	char *text = idx ? json_dumps(idx, JSON_COMPACT) : NULL;
	if (!text) {
		rc = -ENOMEM;
		goto out;
	}
	snprintf(path, sizeof path, "%s/%s", out_dir, FTW_INDEX);
	rc = ftfs_write_atomic(path, text, strlen(text), 0644);
	free(text);
	if (rc < 0) {
		fterr_set(err, errlen, rc, "%s: %s", path, strerror(-rc));
		goto out;
	}
	st->write_s = ft_now_s() - tw;
	st->total_s = ft_now_s() - t0;
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	free(ents);
	json_decref(idx);
	ftbanks_free(b);
	ftbanks_plan_free(p);
	ftst_model_free(m);
	return rc;
}

/* ---------------------------------------------------------------- reader */

struct fchunk {
	int shard;
	uint64_t off, len;
	size_t iov0;
	int niov;
};

struct rd {
	struct fchunk *chunks;
	size_t nchunks;
	struct iovec *iov;
	struct ftdio_files files; /* one per shard */
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

static void *rd_worker(void *arg)
{
	struct rd *s = arg;
	for (;;) {
		if (atomic_load(&s->err_rc))
			break;
		size_t i = atomic_fetch_add(&s->next, 1);
		if (i >= s->nchunks)
			break;
		const struct fchunk *c = &s->chunks[i];
		int fd = ftdio_fd(&s->files, c->shard);
		int rc = preadv_full(fd, &s->iov[c->iov0], c->niov, c->off);
		if (ftdio_retry(&s->files, c->shard, fd, rc))
			rc = preadv_full(ftdio_fd(&s->files, c->shard), &s->iov[c->iov0], c->niov, c->off);
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
		atomic_fetch_add(&s->bytes, c->len);
		atomic_fetch_add(&s->done, 1);
	}
	return NULL;
}

static int derive_geometry(const char *qf, const json_t *shape0, const char *bank0, long *H, long *I)
{
	json_int_t d1 = json_integer_value(json_array_get(shape0, 1)), d2 = json_integer_value(json_array_get(shape0, 2));
	if (!strcmp(qf, "bf16") && !strcmp(bank0, "gate_up")) {
		*H = (long)d2, *I = (long)(d1 / 2);
		return 0;
	}
	if (!strcmp(qf, "mxfp4_triton") && !strcmp(bank0, "gate_up_blocks")) {
		*H = (long)(d1 * 2), *I = (long)(d2 / 2);
		return 0;
	}
	return -ENOTSUP;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return x < y ? -1 : x > y;
}

struct bent {
	int bank, layer;
	uint64_t global_off, nbytes;
};

static int cmp_bent(const void *a, const void *b)
{
	const struct bent *x = a, *y = b;
	return x->global_off < y->global_off ? -1 : x->global_off > y->global_off;
}

int ftftw_load(const char *dir, const struct ftload_opts *o, struct ftbanks **out, struct ftload_stats *st,
	       char *err, size_t errlen)
{
	*out = NULL;
	memset(st, 0, sizeof *st);
	snprintf(st->loader, sizeof st->loader, "ftw");
	int rc;
	json_t *idx = load_index(dir, err, errlen, &rc);
	if (!idx)
		return rc;
	struct ftbanks *b = NULL;
	struct bent *be = NULL;
	int *lids = NULL;
	struct rd s = {0};
	size_t cap = 0, niov = 0, iovcap = 0;
	json_t *shards = json_object_get(idx, "shards"), *tensors = json_object_get(idx, "tensors");
	const char *qf = json_string_value(json_object_get(idx, "quant_format"));
	size_t nsh = json_array_size(shards);
	pthread_mutex_init(&s.lock, NULL);
	if (json_integer_value(json_object_get(idx, "version")) != 1 ||
	    json_integer_value(json_object_get(idx, "align")) != A || !json_is_array(shards) || nsh == 0 ||
	    nsh > 100000 || !json_is_array(tensors) || !qf) {
		rc = fterr_set(err, errlen, -EINVAL, "%s/%s: not a version-1 FTW index with align 4096, shards, tensors and "
			  "quant_format", dir, FTW_INDEX);
		goto out;
	}
	const struct ftformat *fmt = ftfmt_lookup(qf);
	if (!fmt) {
		rc = fterr_set(err, errlen, -ENOTSUP, "FTW quant_format '%s' is unknown", qf);
		goto out;
	}
	/* Shards: contiguous from 0, plain file names, files at least as long as the index says. */
	int dio = ftdio_init(&s.files, nsh);
	s.paths = malloc(sizeof *s.paths * nsh);
	uint64_t *sh_off = malloc(sizeof(uint64_t) * (nsh + 1));
	if (dio < 0 || !s.paths || !sh_off) {
		free(sh_off);
		rc = -ENOMEM;
		goto out;
	}
	uint64_t g = 0;
	for (size_t i = 0; i < nsh; i++) {
		json_t *sj = json_array_get(shards, i);
		const char *fn = json_string_value(json_object_get(sj, "file"));
		json_int_t go = json_integer_value(json_object_get(sj, "global_off")),
			   nbj = json_integer_value(json_object_get(sj, "nbytes"));
		if (!fn || strchr(fn, '/') || !strcmp(fn, "..") || (uint64_t)go != g || nbj < 0 || go % A) {
			rc = fterr_set(err, errlen, -EINVAL, "FTW index: shard %zu is malformed (file, global_off, nbytes)", i);
			break;
		}
		sh_off[i] = g;
		g += (uint64_t)nbj;
		snprintf(s.paths[i], sizeof s.paths[i], "%s/%s", dir, fn);
	}
	sh_off[nsh] = g;
	if (rc == 0 && (uint64_t)json_integer_value(json_object_get(idx, "total_bytes")) != g)
		rc = fterr_set(err, errlen, -EINVAL, "FTW index: total_bytes does not match the shards");
	/* Bank entries. */
	size_t nt = json_array_size(tensors), nbe = 0;
	be = calloc(nt ? nt : 1, sizeof *be);
	lids = calloc(nt ? nt : 1, sizeof *lids);
	if (rc == 0 && (!be || !lids))
		rc = -ENOMEM;
	struct ftbank_shape shp[FT_MAX_BANKS];
	int nbanks = 0;
	long H = 0, I = 0, E = 0;
	for (size_t i = 0; rc == 0 && i < nt; i++) {
		json_t *t = json_array_get(tensors, i);
		const char *kind = json_string_value(json_object_get(t, "kind")),
			   *name = json_string_value(json_object_get(t, "name"));
		json_int_t go = json_integer_value(json_object_get(t, "global_off")),
			   nbj = json_integer_value(json_object_get(t, "nbytes"));
		if (!kind || !name || go < 0 || nbj < 0 || go % A || (uint64_t)go + ROUND_UP((uint64_t)nbj) > g) {
			rc = fterr_set(err, errlen, -EINVAL, "FTW index: tensor %zu is malformed or past the end", i);
			break;
		}
		if (strcmp(kind, "experts_bank"))
			continue;
		const char *hash = strstr(name, "#L");
		json_t *shape = json_object_get(t, "shape");
		if (!hash || strlen(hash) != 7 || strspn(hash + 2, "0123456789") != 5 || !json_is_array(shape)) {
			rc = fterr_set(err, errlen, -EINVAL, "FTW index: bank entry '%.100s' is not <bank>#L<5 digits>", name);
			break;
		}
		if (!nbanks) {
			char b0[64];
			snprintf(b0, sizeof b0, "%.*s", (int)(hash - name), name);
			E = (long)json_integer_value(json_array_get(shape, 0));
			if (derive_geometry(fmt->name, shape, b0, &H, &I) < 0 || E <= 0 ||
			    (nbanks = ftfmt_banks(fmt, H, I, shp)) <= 0) {
				rc = fterr_set(err, errlen, -ENOTSUP, "FTW index: cannot read %s banks starting with '%s'", fmt->name, name);
				break;
			}
		}
		int k = -1;
		for (int j = 0; j < nbanks; j++)
			if ((size_t)(hash - name) == strlen(shp[j].name) && !strncmp(name, shp[j].name, strlen(shp[j].name)))
				k = j;
		int ok = k >= 0 && (uint64_t)nbj == shp[k].expert_bytes * (uint64_t)E &&
			 json_array_size(shape) == (size_t)shp[k].ndim + 1 && json_integer_value(json_array_get(shape, 0)) == E;
		for (int d = 0; ok && d < shp[k >= 0 ? k : 0].ndim; d++)
			ok = json_integer_value(json_array_get(shape, (size_t)d + 1)) == shp[k].dims[d];
		if (!ok) {
			rc = fterr_set(err, errlen, -EINVAL, "FTW index: bank entry '%.100s' does not fit %s (H %ld, I %ld, E %ld)",
				  name, fmt->name, H, I, E);
			break;
		}
		be[nbe] = (struct bent){k, atoi(hash + 2), (uint64_t)go, (uint64_t)nbj};
		lids[nbe] = be[nbe].layer;
		nbe++;
	}
	if (rc < 0) {
		free(sh_off);
		goto out;
	}
	if (!nbe) {
		free(sh_off);
		rc = fterr_set(err, errlen, -EINVAL, "FTW index: no experts_bank entries");
		goto out;
	}
	qsort(lids, nbe, sizeof *lids, cmp_int);
	size_t L = 0;
	for (size_t i = 0; i < nbe; i++)
		if (!L || lids[L - 1] != lids[i])
			lids[L++] = lids[i];
	if (nbe != L * (size_t)nbanks || L > FTBANKS_MAX_LAYERS ||
	    (json_int_t)L != json_integer_value(json_object_get(idx, "expert_bank_num_layers"))) {
		free(sh_off);
		rc = fterr_set(err, errlen, -EINVAL, "FTW index: %zu bank entries for %zu layers x %d banks", nbe, L, nbanks);
		goto out;
	}
	double t0 = ft_now_s();
	if ((rc = ftbanks_alloc(fmt, H, I, E, (long)L, lids, &b)) < 0) {
		free(sh_off);
		fterr_set(err, errlen, rc, "allocating banks: %s", strerror(-rc));
		goto out;
	}
	/* each (bank, layer) once: mark with a bitmap */
	unsigned char *seen = calloc(nbe, 1);
	if (!seen) {
		free(sh_off);
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < nbe; i++) {
		int *li = bsearch(&be[i].layer, lids, L, sizeof *lids, cmp_int);
		size_t slot = (size_t)be[i].bank * L + (size_t)(li - lids);
		if (seen[slot]++) {
			rc = fterr_set(err, errlen, -EINVAL, "FTW index: %s#L%05d appears twice", shp[be[i].bank].name, be[i].layer);
			break;
		}
		be[i].layer = (int)(li - lids);
	}
	free(seen);
	qsort(be, nbe, sizeof *be, cmp_bent);
	/* entries must not overlap and must lie inside one shard */
	size_t sh = 0;
	size_t chunk = o->chunk_bytes ? ROUND_UP(o->chunk_bytes) : FTLOAD_DEFAULT_CHUNK;
	for (size_t i = 0; rc == 0 && i < nbe; i++) {
		uint64_t a = be[i].global_off, len = ROUND_UP(be[i].nbytes);
		if (i && a < be[i - 1].global_off + ROUND_UP(be[i - 1].nbytes)) {
			rc = fterr_set(err, errlen, -EINVAL, "FTW index: bank entries overlap at %llu", (unsigned long long)a);
			break;
		}
		while (sh + 1 < nsh && a >= sh_off[sh + 1])
			sh++;
		if (a + len > sh_off[sh + 1]) {
			rc = fterr_set(err, errlen, -EINVAL, "FTW index: a bank entry crosses the end of shard %zu", sh);
			break;
		}
		uint8_t *dst = ftbanks_layer(b, be[i].bank, be[i].layer);
		for (uint64_t done = 0; done < len;) {
			uint64_t foff = a - sh_off[sh] + done;
			struct fchunk *c = s.nchunks ? &s.chunks[s.nchunks - 1] : NULL;
			if (!c || c->shard != (int)sh || c->off + c->len != foff || c->len >= chunk || c->niov >= MAX_IOV) {
				if (s.nchunks == cap) {
					size_t ncap = cap ? cap * 2 : 256;
					struct fchunk *nc = realloc(s.chunks, ncap * sizeof *nc);
					if (!nc) {
						rc = -ENOMEM;
						break;
					}
					s.chunks = nc, cap = ncap;
				}
				c = &s.chunks[s.nchunks++];
				*c = (struct fchunk){(int)sh, foff, 0, niov, 0};
			}
			uint64_t k = len - done < chunk - c->len ? len - done : chunk - c->len;
			if (niov == iovcap) {
				size_t ncap = iovcap ? iovcap * 2 : 1024;
				struct iovec *nv = realloc(s.iov, ncap * sizeof *nv);
				if (!nv) {
					rc = -ENOMEM;
					break;
				}
				s.iov = nv, iovcap = ncap;
			}
			s.iov[niov++] = (struct iovec){dst + done, (size_t)k};
			c->niov++;
			c->len += k;
			done += k;
		}
	}
	free(sh_off);
	for (size_t i = 0; rc == 0 && i < nsh; i++) {
		int r = ftdio_open(&s.files, i, s.paths[i]);
		if (r < 0) {
			rc = fterr_set(err, errlen, r, "%s: %s", s.paths[i], strerror(-r));
			break;
		}
	}
	if (rc < 0)
		goto out;
	int workers = o->workers > 0 ? o->workers : FTLOAD_DEFAULT_WORKERS;
	if ((size_t)workers > s.nchunks)
		workers = (int)s.nchunks;
	if (workers > 256)
		workers = 256;
	pthread_t th[256];
	int started = 0;
	for (; started < workers; started++)
		if (pthread_create(&th[started], NULL, rd_worker, &s))
			break;
	if (started < workers) {
		atomic_store(&s.err_rc, -EAGAIN);
		snprintf(s.err, sizeof s.err, "cannot start reader threads");
	}
	if (o->rep) {
		size_t last = (size_t)-1;
		while (atomic_load(&s.done) < s.nchunks && !atomic_load(&s.err_rc)) {
			size_t d = atomic_load(&s.done);
			if (d != last)
				ftreport_progress(o->rep, (int)(d * 1000 / s.nchunks), 1000, "ftw");
			last = d;
			usleep(5000);
		}
	}
	for (int t = 0; t < started; t++)
		pthread_join(th[t], NULL);
	if ((rc = atomic_load(&s.err_rc)) < 0) {
		fterr_set(err, errlen, rc, "%s", s.err);
		goto out;
	}
	if (o->rep)
		ftreport_progress(o->rep, 1000, 1000, "ftw");
	st->seconds = ft_now_s() - t0;
	st->file_bytes = atomic_load(&s.bytes);
	st->direct = ftdio_all_direct(&s.files);
	*out = b;
	b = NULL;
out:
	ftdio_release(&s.files);
	free(s.paths);
	free(s.chunks);
	free(s.iov);
	free(be);
	free(lids);
	pthread_mutex_destroy(&s.lock);
	ftbanks_free(b);
	json_decref(idx);
	return rc;
}
