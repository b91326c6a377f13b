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
#include "moe/ftw_index.h"
#include "util/errmsg.h"
#include "util/fsutil.h"
#include "util/timeutil.h"

#define A FTFTW_ALIGN
#define ROUND_UP(x) (((x) + A - 1) / A * A)

json_t *ftftw_load_index(const char *dir, char *err, size_t errlen, int *rc)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", dir, FTFTW_INDEX);
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
	json_t *j = ftftw_load_index(dir, NULL, 0, &rc);
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

/* Copy one file by streaming (a symlink is followed, as a checkpoint in a hub cache is links). */
static int copy_file(const char *sp, const char *dp, mode_t mode)
{
	int in = open(sp, O_RDONLY | O_CLOEXEC), out = -1, rc = 0;
	if (in < 0)
		return -errno;
	/* a new file: whatever has that name in the output (an older copy, a planted link) is
	 * replaced, never written through */
	if (unlink(dp) < 0 && errno != ENOENT) {
		rc = -errno;
		close(in);
		return rc;
	}
	out = open(dp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode & 0777 ? mode & 0777 : 0644);
	if (out < 0) {
		rc = -errno;
		close(in);
		return rc;
	}
	char buf[1 << 16];
	for (;;) {
		ssize_t r = read(in, buf, sizeof buf);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			rc = r < 0 ? -errno : 0;
			break;
		}
		if ((rc = ftfs_write_all(out, buf, (size_t)r)) < 0)
			break;
	}
	if (rc == 0 && fdatasync(out) < 0)
		rc = -errno;
	close(in);
	if (close(out) < 0 && rc == 0)
		rc = -errno;
	return rc;
}

/* Copy every file of the checkpoint that is not weights (config, tokenizer, remote code, nested
 * configs in sub-folders) to dst under the same relative path, as the seed's converter does:
 * skipped are *.safetensors, *.gguf, *.ftw, model.safetensors.index.json, the FTW index, the
 * folders .git, .cache and .freetoken_expert_cache, and the output folder when it lies inside
 * the checkpoint. Folder symlinks are not followed. Relative paths go to list. */
static int copy_metadata(const char *src_root, const char *rel, const char *dst_root, const char *skip_real,
			 json_t *list, int depth)
{
	char sdir[PATH_MAX];
	snprintf(sdir, sizeof sdir, "%s%s%s", src_root, *rel ? "/" : "", rel);
	if (depth > 32)
		return -ELOOP;
	DIR *d = opendir(sdir);
	if (!d)
		return -errno;
	struct dirent *de;
	int rc = 0;
	while (rc == 0 && (de = readdir(d))) {
		const char *n = de->d_name;
		if (!strcmp(n, ".") || !strcmp(n, ".."))
			continue;
		char r[PATH_MAX], sp[PATH_MAX + 8], dp[PATH_MAX + 8];
		if ((size_t)snprintf(r, sizeof r, "%s%s%s", rel, *rel ? "/" : "", n) >= sizeof r)
			continue;
		snprintf(sp, sizeof sp, "%s/%s", src_root, r);
		snprintf(dp, sizeof dp, "%s/%s", dst_root, r);
		struct stat lst, st;
		if (lstat(sp, &lst) < 0)
			continue;
		if (S_ISDIR(lst.st_mode)) {
			char real[PATH_MAX];
			if (!strcmp(n, ".git") || !strcmp(n, ".cache") || !strcmp(n, ".freetoken_expert_cache") ||
			    (skip_real && realpath(sp, real) && !strcmp(real, skip_real)))
				continue;
			rc = copy_metadata(src_root, r, dst_root, skip_real, list, depth + 1);
			continue;
		}
		size_t l = strlen(n);
		static const char *const weight_ext[] = {".safetensors", ".gguf", ".ftw"};
		int weights = 0;
		for (int k = 0; k < 3; k++)
			weights |= l >= strlen(weight_ext[k]) && !strcmp(n + l - strlen(weight_ext[k]), weight_ext[k]);
		if (weights || !strcmp(n, "model.safetensors.index.json") || (!*rel && !strcmp(n, FTFTW_INDEX)))
			continue;
		if (stat(sp, &st) < 0 || !S_ISREG(st.st_mode))
			continue;
		if (*rel) {
			char dd[PATH_MAX + 8];
			snprintf(dd, sizeof dd, "%s/%s", dst_root, rel);
			if ((rc = ftfs_mkdir_p(dd, 0755)) < 0)
				break;
		}
		if ((rc = copy_file(sp, dp, st.st_mode)) < 0)
			break;
		json_array_append_new(list, json_string(r));
	}
	closedir(d);
	return rc;
}

/* One conversion: the source, its banks, and the FTW layout being written. */
struct conv {
	const char *model_dir, *out_dir;
	struct ftst_model *m;
	struct ftbanks_plan *p;
	struct ftbanks *b;
	struct entry *ents;   /* banks (bank-major, then layer), then the other tensors in file order */
	size_t n, nb, nd;     /* entries; of them bank layers and other tensors */
	uint64_t limit;       /* shard size limit */
	uint64_t total;       /* bytes of all shards */
	int nshards;
	json_t *shards, *tensors;
	char *err;
	size_t errlen;
};

/* The layout: every entry's place (4096-aligned, in order) and its shard (a new one when the
 * next entry would take the current one past the limit); the shards into c->shards. */
static int plan_layout(struct conv *c)
{
	struct ftbanks *b = c->b;
	c->nb = (size_t)b->nbanks * (size_t)b->L;
	c->ents = calloc(c->nb + c->m->ntensors, sizeof *c->ents);
	c->shards = json_array();
	c->tensors = json_array();
	if (!c->ents || !c->shards || !c->tensors)
		return -ENOMEM;
	for (int k = 0; k < b->nbanks; k++)
		for (long l = 0; l < b->L; l++) {
			struct entry *e = &c->ents[c->n++];
			e->bank = k, e->layer = (int)l;
			/* MoE layers are numbered 0..L-1 (the seed's reader asserts exactly range(L)) */
			snprintf(e->bank_name, sizeof e->bank_name, "%s#L%05d", b->shape[k].name, (int)l);
			e->name = e->bank_name;
			e->nbytes = b->layer_bytes[k];
		}
	for (size_t f = 0; f < c->m->nfiles; f++)
		for (size_t i = 0; i < c->m->files[f].ntensors; i++) {
			const struct ftst_tensor *t = &c->m->files[f].tensors[i];
			if (ftbanks_plan_uses(c->p, t))
				continue;
			struct entry *e = &c->ents[c->n++];
			e->bank = -1, e->t = t, e->name = t->name, e->nbytes = t->nbytes;
			c->nd++;
		}
	uint64_t g_off = 0, shard_start = 0;
	int shard = 0;
	for (size_t i = 0; i <= c->n; i++) {
		uint64_t sz = i < c->n ? ROUND_UP(c->ents[i].nbytes) : 0;
		if (i == c->n || (g_off > shard_start && g_off + sz - shard_start > c->limit)) {
			char fn[64];
			snprintf(fn, sizeof fn, "freetoken-%05d.ftw", shard);
			json_array_append_new(c->shards, json_pack("{s:s,s:I,s:I}", "file", fn, "global_off",
								   (json_int_t)shard_start, "nbytes",
								   (json_int_t)(g_off - shard_start)));
			if (i == c->n)
				break;
			shard++;
			shard_start = g_off;
		}
		c->ents[i].global_off = g_off;
		c->ents[i].shard = shard;
		g_off += sz;
	}
	c->total = g_off;
	c->nshards = shard + 1;
	return 0;
}

/* Entry e's index record into c->tensors. */
static void index_entry(struct conv *c, const struct entry *e)
{
	json_t *shape = json_array();
	const char *kind, *dtype;
	if (e->bank >= 0) {
		json_array_append_new(shape, json_integer(c->b->E));
		for (int d = 0; d < c->b->shape[e->bank].ndim; d++)
			json_array_append_new(shape, json_integer(c->b->shape[e->bank].dims[d]));
		kind = "experts_bank";
		dtype = ftfmt_dtype_torch_name(c->b->shape[e->bank].dtype);
	} else {
		for (int d = 0; d < e->t->ndim; d++)
			json_array_append_new(shape, json_integer(e->t->shape[d]));
		kind = "weight";
		dtype = ftst_dtype_torch_name(e->t->dtype);
	}
	json_array_append_new(c->tensors, json_pack("{s:s,s:s,s:s,s:o,s:I,s:I}", "name", e->name, "kind", kind, "dtype",
						    dtype, "shape", shape, "global_off", (json_int_t)e->global_off,
						    "nbytes", (json_int_t)e->nbytes));
}

/* A tensor that is not a bank copied from its source file (*src_fd, *src_file: the one open)
 * through buf into fd at off, zero-padded to sz. */
static int copy_tensor(struct conv *c, const struct entry *e, int fd, uint64_t off, uint64_t sz, uint8_t *buf,
		       int *src_fd, int *src_file)
{
	int rc = 0;
	if (e->t->file != *src_file) {
		if (*src_fd >= 0)
			close(*src_fd);
		*src_file = e->t->file;
		*src_fd = open(c->m->files[*src_file].path, O_RDONLY | O_CLOEXEC);
		if (*src_fd < 0)
			return fterr_set(c->err, c->errlen, -errno, "%s: %s", c->m->files[*src_file].path, strerror(errno));
	}
	for (uint64_t done = 0; done < sz && rc == 0;) {
		uint64_t k = sz - done < FTLOAD_DEFAULT_CHUNK ? sz - done : FTLOAD_DEFAULT_CHUNK;
		uint64_t data = done < e->nbytes ? (e->nbytes - done < k ? e->nbytes - done : k) : 0;
		memset(buf + data, 0, k - data);
		if (data && (rc = ftfs_pread_full(*src_fd, buf, data, (off_t)(e->t->offset + done))) < 0) {
			fterr_set(c->err, c->errlen, rc, "reading '%s': %s", e->name, strerror(-rc));
			break;
		}
		if ((rc = write_at(fd, buf, k, off + done)) < 0)
			fterr_set(c->err, c->errlen, rc, "writing '%s': %s", e->name, strerror(-rc));
		done += k;
	}
	return rc;
}

/* Every entry written into its shard (each shard a new file, synced), its record into the
 * index; *written gets the bytes. */
static int write_shards(struct conv *c, uint64_t *written)
{
	char path[4096];
	uint8_t *buf = aligned_alloc(A, FTLOAD_DEFAULT_CHUNK);
	int fd = -1, rc = 0, cur = -1, src_fd = -1, src_file = -1;
	uint64_t cur_base = 0;
	if (!buf)
		return -ENOMEM;
	for (size_t i = 0; i < c->n && rc == 0; i++) {
		struct entry *e = &c->ents[i];
		if (e->shard != cur) {
			if (fd >= 0) {
				int ec = fdatasync(fd) < 0 ? errno : 0;
				if (close(fd) < 0 && !ec)
					ec = errno;
				fd = -1; /* closed either way: never closed again below */
				if (ec) {
					rc = fterr_set(c->err, c->errlen, -ec, "writing FTW shard %d: %s", cur, strerror(ec));
					break;
				}
			}
			cur = e->shard;
			cur_base = e->global_off;
			snprintf(path, sizeof path, "%s/freetoken-%05d.ftw", c->out_dir, cur);
			/* a new file: an old shard of that name (or a link planted there) is replaced,
			 * never written through */
			if (unlink(path) < 0 && errno != ENOENT) {
				rc = fterr_set(c->err, c->errlen, -errno, "%s: %s", path, strerror(errno));
				break;
			}
			fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
			if (fd < 0) {
				rc = fterr_set(c->err, c->errlen, -errno, "%s: %s", path, strerror(errno));
				break;
			}
		}
		uint64_t off = e->global_off - cur_base, sz = ROUND_UP(e->nbytes);
		index_entry(c, e);
		if (e->bank >= 0) {
			/* the layer stride is >= sz and its slack is zero: write the padding with it */
			rc = write_at(fd, ftbanks_layer(c->b, e->bank, e->layer), sz, off);
			if (rc < 0)
				fterr_set(c->err, c->errlen, rc, "writing %s: %s", e->name, strerror(-rc));
		} else {
			rc = copy_tensor(c, e, fd, off, sz, buf, &src_fd, &src_file);
		}
		*written += sz;
	}
	if (src_fd >= 0)
		close(src_fd);
	if (fd >= 0) {
		if (rc == 0 && fdatasync(fd) < 0)
			rc = fterr_set(c->err, c->errlen, -errno, "writing FTW shard %d: %s", cur, strerror(errno));
		close(fd);
	}
	free(buf);
	return rc;
}

/* The source's fingerprint: its shard names, sizes, mtimes and header lengths, as 16 hex digits. */
static void source_fingerprint(const struct ftst_model *m, char fp[32])
{
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
	snprintf(fp, 32, "%016llx", (unsigned long long)h);
}

/* The source's metadata files copied beside the shards, and the index written (atomically, last:
 * a directory without it is not an FTW). */
static int write_index(struct conv *c)
{
	char fp[32], absdir[PATH_MAX], out_real[PATH_MAX], path[4096];
	source_fingerprint(c->m, fp);
	if (!realpath(c->model_dir, absdir))
		snprintf(absdir, sizeof absdir, "%s", c->model_dir);
	json_t *copied = json_array();
	int rc = copy_metadata(c->model_dir, "", c->out_dir, realpath(c->out_dir, out_real) ? out_real : NULL, copied, 0);
	if (rc < 0) {
		json_decref(copied);
		return fterr_set(c->err, c->errlen, rc, "copying metadata files: %s", strerror(-rc));
	}
	json_t *lids = json_array();
	for (long l = 0; l < c->b->L; l++)
		json_array_append_new(lids, json_integer(c->b->layer_ids[l]));
	/* the index takes the shards and tensors lists ("o"): c no longer holds them */
	json_t *idx = json_pack("{s:s,s:i,s:i,s:I,s:I,s:o,s:o,s:s,s:s,s:s,s:I,s:{s:I,s:I},s:o,s:s,s:o}", "format",
				"freetoken_weight", "version", 1, "align", A, "shard_limit", (json_int_t)c->limit,
				"total_bytes", (json_int_t)c->total, "tensors", c->tensors, "shards", c->shards,
				"source_model_path", absdir, "fingerprint", fp, "quant_format", c->b->fmt->name,
				"expert_bank_num_layers", (json_int_t)c->b->L, "counts", "weight", (json_int_t)c->nd,
				"experts_bank", (json_int_t)c->nb, "copied_metadata", copied, "weight_names",
				FTFTW_WEIGHT_NAMES_CHECKPOINT, "expert_bank_layer_ids", lids);
	c->tensors = c->shards = NULL;
	char *text = idx ? json_dumps(idx, JSON_COMPACT) : NULL;
	json_decref(idx);
	if (!text)
		return -ENOMEM;
	snprintf(path, sizeof path, "%s/%s", c->out_dir, FTFTW_INDEX);
	rc = ftfs_write_atomic(path, text, strlen(text), 0644);
	free(text);
	if (rc < 0)
		fterr_set(c->err, c->errlen, rc, "%s: %s", path, strerror(-rc));
	return rc;
}

int ftftw_convert(const char *model_dir, const char *out_dir, const struct ftftw_convert_opts *o,
		  struct ftftw_convert_stats *st, char *err, size_t errlen)
{
	memset(st, 0, sizeof *st);
	double t0 = fttime_now_s();
	struct ftbanks_geom g;
	struct conv c = {.model_dir = model_dir, .out_dir = out_dir, .err = err, .errlen = errlen,
			 .limit = o->shard_limit ? ROUND_UP(o->shard_limit) : FTFTW_DEFAULT_SHARD_LIMIT};
	int rc;
	char path[4096];
	if (ftftw_is_dir(model_dir))
		return fterr_set(err, errlen, -EINVAL, "%s is already an FTW directory", model_dir);
	if ((rc = ftbanks_read_config(model_dir, &g, err, errlen)) < 0 ||
	    (rc = ftst_model_open(model_dir, &c.m, err, errlen)) < 0 ||
	    (rc = ftbanks_discover(c.m, &g, &c.p, err, errlen)) < 0)
		goto out;
	if ((rc = ftfs_mkdir_p(out_dir, 0755)) < 0) {
		fterr_set(err, errlen, rc, "%s: %s", out_dir, strerror(-rc));
		goto out;
	}
	snprintf(path, sizeof path, "%s/%s", out_dir, FTFTW_INDEX);
	if (unlink(path) < 0 && errno != ENOENT) {
		rc = fterr_set(err, errlen, -errno, "%s: %s", path, strerror(errno));
		goto out;
	}
	if ((rc = ftload_plan(c.p, &o->load, &c.b, &st->load, err, errlen)) < 0)
		goto out;
	st->load_s = st->load.seconds;
	double tw = fttime_now_s();
	if ((rc = plan_layout(&c)) < 0)
		goto out;
	st->nshards = c.nshards;
	if ((rc = write_shards(&c, &st->bytes_written)) < 0 || (rc = write_index(&c)) < 0)
		goto out;
	st->write_s = fttime_now_s() - tw;
	st->total_s = fttime_now_s() - t0;
out:
	json_decref(c.shards);
	json_decref(c.tensors);
	free(c.ents);
	ftbanks_free(c.b);
	ftbanks_plan_free(c.p);
	ftst_model_free(c.m);
	return rc;
}

static int safe_rel(const char *r)
{
	if (!r || !*r || r[0] == '/' || strlen(r) >= PATH_MAX / 2)
		return 0;
	for (const char *p = r; p; p = strchr(p, '/')) {
		p += *p == '/';
		if (!strncmp(p, "..", 2) && (p[2] == '/' || !p[2]))
			return 0;
		if (*p == '/' || !*p)
			return 0; /* "a//b", "a/" */
	}
	return 1;
}

/* unlinkat(rel, flags) below dfd, opening each folder on the way without following a link. */
static int unlink_rel(int dfd, const char *rel, int flags)
{
	char r[PATH_MAX];
	snprintf(r, sizeof r, "%s", rel);
	int fd = dup(dfd), rc = 0;
	if (fd < 0)
		return -errno;
	char *c = r;
	for (char *slash; (slash = strchr(c, '/')); c = slash + 1) {
		*slash = '\0';
		int nfd = openat(fd, c, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(fd);
		if (nfd < 0)
			return -errno;
		fd = nfd;
	}
	if (unlinkat(fd, c, flags) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

int ftftw_remove(const char *dir)
{
	int rc;
	json_t *idx = ftftw_load_index(dir, NULL, 0, &rc);
	if (!idx)
		return rc;
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || unlinkat(dfd, FTFTW_INDEX, 0) < 0) {
		rc = -errno;
		if (dfd >= 0)
			close(dfd);
		json_decref(idx);
		return rc;
	}
	size_t i;
	json_t *v;
	json_array_foreach(json_object_get(idx, "shards"), i, v) {
		const char *f = json_string_value(json_object_get(v, "file"));
		if (safe_rel(f) && !strchr(f, '/'))
			unlinkat(dfd, f, 0);
	}
	json_t *copied = json_object_get(idx, "copied_metadata");
	json_array_foreach(copied, i, v)
		if (safe_rel(json_string_value(v)))
			unlink_rel(dfd, json_string_value(v), 0);
	/* the sub-folders, deepest first: strip one component at a time while they come out empty */
	json_array_foreach(copied, i, v) {
		if (!safe_rel(json_string_value(v)))
			continue;
		char r[PATH_MAX];
		snprintf(r, sizeof r, "%s", json_string_value(v));
		for (char *slash = strrchr(r, '/'); slash; slash = strrchr(r, '/')) {
			*slash = '\0';
			if (unlink_rel(dfd, r, AT_REMOVEDIR) < 0)
				break;
		}
	}
	close(dfd);
	json_decref(idx);
	rmdir(dir);
	return 0;
}
