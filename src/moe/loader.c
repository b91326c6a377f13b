/* loader: serial and parallel expert loading. See loader.h. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hw/cpu.h"
#include "moe/directio.h"
#include "moe/loader.h"
#include "util/errmsg.h"
#include "util/fsutil.h"
#include "util/timeutil.h"

#define ALIGN FTDIRECTIO_ALIGN

int ftload_parse_mode(const char *s, enum ftload_mode *out)
{
	if (!s)
		return -EINVAL;
	if (!strcmp(s, "auto"))
		*out = FTLOAD_AUTO;
	else if (!strcmp(s, "serial"))
		*out = FTLOAD_SERIAL;
	else if (!strcmp(s, "parallel"))
		*out = FTLOAD_PARALLEL;
	else
		return -EINVAL;
	return 0;
}

int ftload_experts_scattered(const struct ftst_model *m)
{
	uint64_t sum = 0, n = 0;
	for (size_t i = 0; m && i < m->ntensors; i++)
		if (strstr(m->by_name[i]->name, ".experts.")) {
			sum += m->by_name[i]->nbytes;
			n++;
		}
	return n > 0 && sum / n < FTLOAD_SCATTERED_BYTES;
}

enum ftload_mode ftload_choose(const struct ftst_model *m, uint64_t avail, char *why, size_t n)
{
	uint64_t sum = 0, largest = 0;
	for (size_t i = 0; m && i < m->nfiles; i++) {
		sum += m->files[i].size;
		if (m->files[i].size > largest)
			largest = m->files[i].size;
	}
	if (!ftload_experts_scattered(m)) {
		fterr_set(why, n, 0, "experts are packed (mean expert tensor >= 16 MiB): serial reads saturate");
		return FTLOAD_SERIAL;
	}
	if (avail <= sum + largest) {
		fterr_set(why, n, 0, "experts scattered but MemAvailable %.1f GiB <= shards %.1f GiB + largest %.1f GiB",
		     avail / 1073741824.0, sum / 1073741824.0, largest / 1073741824.0);
		return FTLOAD_SERIAL;
	}
	fterr_set(why, n, 0, "experts scattered and MemAvailable %.1f GiB > shards + largest shard (%.1f GiB)",
	     avail / 1073741824.0, (sum + largest) / 1073741824.0);
	return FTLOAD_PARALLEL;
}

static int alloc_for_plan(const struct ftbanks_plan *p, struct ftbanks **out, char *err, size_t errlen)
{
	int rc = ftbanks_alloc(p->fmt, p->H, p->I, p->E, p->L, p->layer_ids, out);
	if (rc < 0)
		return fterr_set(err, errlen, rc, "allocating %.2f GiB of banks: %s",
			    (double)ftfmt_expert_bytes(p->fmt, p->H, p->I) * (double)p->E * (double)p->L / 1073741824.0,
			    strerror(-rc));
	return 0;
}

/* ---------------------------------------------------------------- serial */

static int load_serial(const struct ftbanks_plan *p, const struct ftload_opts *o, struct ftbanks *b,
		       struct ftload_stats *st, char *err, size_t errlen)
{
	const struct ftst_model *m = p->model;
	int fd = -1, cur = -1, rc = 0;
	uint8_t *tmp = NULL;
	size_t tmpcap = 0;
	for (size_t i = 0; i < p->npieces; i++) {
		const struct ftbanks_piece *pc = &p->pieces[i];
		if (pc->file != cur) {
			if (fd >= 0)
				close(fd);
			cur = pc->file;
			fd = open(m->files[cur].path, O_RDONLY | O_CLOEXEC);
			if (fd < 0) {
				rc = fterr_set(err, errlen, -errno, "%s: %s", m->files[cur].path, strerror(errno));
				goto out;
			}
		}
		uint8_t *dst;
		if (!pc->transpose) {
			dst = ftbanks_layer(b, pc->bank, pc->layer) + pc->dst_off;
		} else {
			if (tmpcap < pc->len) {
				free(tmp);
				tmpcap = pc->len;
				if (!(tmp = malloc(tmpcap))) {
					rc = -ENOMEM;
					goto out;
				}
			}
			dst = tmp;
		}
		if ((rc = ftfs_pread_full(fd, dst, pc->len, (off_t)pc->src_off)) < 0) {
			rc = fterr_set(err, errlen, rc, "%s: reading '%s': %s", m->files[cur].path, pc->t->name, strerror(-rc));
			goto out;
		}
		if (pc->transpose)
			ftbanks_piece_copy(pc, b, 0, tmp, pc->len);
		st->file_bytes += pc->len;
		if (o->rep && (i % 256 == 0 || i + 1 == p->npieces))
			ftreport_progress(o->rep, (int)((i + 1) * 1000 / p->npieces), 1000, "serial");
	}
out:
	if (fd >= 0)
		close(fd);
	free(tmp);
	st->direct = 0;
	return rc;
}

/* ---------------------------------------------------------------- parallel */

struct chunk {
	int file;
	uint64_t off, len;
	size_t p0; /* first piece of the chunk's file that may overlap it */
};

struct par {
	const struct ftbanks_plan *p;
	struct ftbanks *b;
	const struct ftload_opts *o;
	struct chunk *chunks;
	size_t nchunks;
	size_t chunk_bytes;
	struct ftdirectio_files files;     /* per checkpoint file */
	atomic_size_t next, done;
	atomic_uint_least64_t bytes;
	atomic_int err_rc;
	pthread_mutex_t err_lock;
	char err[512];
};

static void par_fail(struct par *s, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void par_fail(struct par *s, int rc, const char *fmt, ...)
{
	pthread_mutex_lock(&s->err_lock);
	if (atomic_load(&s->err_rc) == 0) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(s->err, sizeof s->err, fmt, ap);
		va_end(ap);
		atomic_store(&s->err_rc, rc);
	}
	pthread_mutex_unlock(&s->err_lock);
}

static void *par_worker(void *arg)
{
	struct par *s = arg;
	const struct ftbanks_plan *p = s->p;
	const struct ftst_model *m = p->model;
	uint8_t *buf = aligned_alloc(ALIGN, s->chunk_bytes);
	if (!buf) {
		par_fail(s, -ENOMEM, "no memory for a %zu-byte read buffer", s->chunk_bytes);
		return NULL;
	}
	for (;;) {
		if (atomic_load(&s->err_rc))
			break;
		size_t i = atomic_fetch_add(&s->next, 1);
		if (i >= s->nchunks)
			break;
		const struct chunk *c = &s->chunks[i];
		uint64_t got = 0;
		int fd = ftdirectio_fd(&s->files, c->file);
		int rc = ftdirectio_pread(fd, buf, c->len, c->off, &got);
		if (ftdirectio_retry(&s->files, c->file, fd, rc))
			rc = ftdirectio_pread(ftdirectio_fd(&s->files, c->file), buf, c->len, c->off, &got);
		if (rc < 0) {
			par_fail(s, rc, "%s: read at %llu: %s", m->files[c->file].path, (unsigned long long)c->off,
				 strerror(-rc));
			break;
		}
		uint64_t want = m->files[c->file].size > c->off ? m->files[c->file].size - c->off : 0;
		if (want > c->len)
			want = c->len;
		if (got < want) {
			par_fail(s, -EIO, "%s: short read at %llu (file changed?)", m->files[c->file].path,
				 (unsigned long long)c->off);
			break;
		}
		atomic_fetch_add(&s->bytes, got);
		uint64_t ce = c->off + got;
		for (size_t k = c->p0; k < p->npieces; k++) {
			const struct ftbanks_piece *pc = &p->pieces[k];
			if (pc->file != c->file || pc->src_off >= ce)
				break;
			uint64_t a = pc->src_off > c->off ? pc->src_off : c->off;
			uint64_t e = pc->src_off + pc->len < ce ? pc->src_off + pc->len : ce;
			if (a < e)
				ftbanks_piece_copy(pc, s->b, a - pc->src_off, buf + (a - c->off), (size_t)(e - a));
		}
		atomic_fetch_add(&s->done, 1);
	}
	free(buf);
	return NULL;
}

static int add_chunk(struct chunk **v, size_t *n, size_t *cap, struct chunk c)
{
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 256;
		struct chunk *nv = realloc(*v, nc * sizeof *nv);
		if (!nv)
			return -ENOMEM;
		*v = nv, *cap = nc;
	}
	(*v)[(*n)++] = c;
	return 0;
}

static int load_parallel(const struct ftbanks_plan *p, const struct ftload_opts *o, struct ftbanks *b,
			 struct ftload_stats *st, char *err, size_t errlen)
{
	const struct ftst_model *m = p->model;
	struct par s = {.p = p, .b = b, .o = o};
	size_t cap = 0;
	int rc = 0, workers = o->workers > 0 ? o->workers : FTLOAD_DEFAULT_WORKERS;
	s.chunk_bytes = o->chunk_bytes ? (o->chunk_bytes + ALIGN - 1) / ALIGN * ALIGN : FTLOAD_DEFAULT_CHUNK;
	pthread_mutex_init(&s.err_lock, NULL);
	if ((rc = ftdirectio_init(&s.files, m->nfiles)) < 0)
		goto out;
	/* Spans of expert bytes per file, cut into aligned chunks. */
	for (size_t i = 0; i < p->npieces;) {
		int f = p->pieces[i].file;
		size_t first = i;
		uint64_t a = p->pieces[i].src_off / ALIGN * ALIGN, e = p->pieces[i].src_off + p->pieces[i].len;
		size_t j = i + 1;
		for (; j <= p->npieces; j++) {
			int close_span = j == p->npieces || p->pieces[j].file != f ||
					 p->pieces[j].src_off > e + FTLOAD_GAP_BYTES;
			if (!close_span) {
				uint64_t pe = p->pieces[j].src_off + p->pieces[j].len;
				if (pe > e)
					e = pe;
				continue;
			}
			e = (e + ALIGN - 1) / ALIGN * ALIGN;
			size_t pk = first;
			for (uint64_t off = a; off < e; off += s.chunk_bytes) {
				uint64_t len = e - off < s.chunk_bytes ? e - off : s.chunk_bytes;
				while (pk < j && p->pieces[pk].src_off + p->pieces[pk].len <= off)
					pk++;
				if ((rc = add_chunk(&s.chunks, &s.nchunks, &cap, (struct chunk){f, off, len, pk})) < 0)
					goto out;
			}
			if (j == p->npieces || p->pieces[j].file != f)
				break;
			first = j;
			a = p->pieces[j].src_off / ALIGN * ALIGN;
			e = p->pieces[j].src_off + p->pieces[j].len;
		}
		if ((rc = ftdirectio_open(&s.files, (size_t)f, m->files[f].path)) < 0) {
			fterr_set(err, errlen, rc, "%s: %s", m->files[f].path, strerror(-rc));
			goto out;
		}
		i = j;
	}
	if ((size_t)workers > s.nchunks)
		workers = s.nchunks ? (int)s.nchunks : 1;
	pthread_t th[256];
	if (workers > 256)
		workers = 256;
	int started = 0;
	for (; started < workers; started++)
		if (pthread_create(&th[started], NULL, par_worker, &s)) {
			par_fail(&s, -EAGAIN, "cannot start reader threads");
			break;
		}
	if (o->rep) {
		/* The caller's thread reports progress while the readers work. */
		size_t last = (size_t)-1;
		while (atomic_load(&s.done) < s.nchunks && !atomic_load(&s.err_rc) && started == workers) {
			size_t d = atomic_load(&s.done);
			if (d != last)
				ftreport_progress(o->rep, (int)(d * 1000 / (s.nchunks ? s.nchunks : 1)), 1000, "parallel");
			last = d;
			usleep(5000);
		}
	}
	for (int t = 0; t < started; t++)
		pthread_join(th[t], NULL);
	if (o->rep && !atomic_load(&s.err_rc))
		ftreport_progress(o->rep, 1000, 1000, "parallel");
	if ((rc = atomic_load(&s.err_rc)) < 0) {
		fterr_set(err, errlen, rc, "%s", s.err);
		goto out;
	}
	st->file_bytes = atomic_load(&s.bytes);
	st->direct = ftdirectio_all_direct(&s.files);
out:
	ftdirectio_release(&s.files);
	free(s.chunks);
	pthread_mutex_destroy(&s.err_lock);
	return rc;
}

int ftload_plan(const struct ftbanks_plan *p, const struct ftload_opts *o, struct ftbanks **out,
		struct ftload_stats *st, char *err, size_t errlen)
{
	*out = NULL;
	memset(st, 0, sizeof *st);
	enum ftload_mode mode = o->mode;
	if (mode == FTLOAD_AUTO)
		mode = ftload_choose(p->model, ftcpu_mem_available(), st->why, sizeof st->why);
	snprintf(st->loader, sizeof st->loader, "%s", mode == FTLOAD_PARALLEL ? "parallel" : "serial");
	double t0 = fttime_now_s();
	struct ftbanks *b;
	int rc = alloc_for_plan(p, &b, err, errlen);
	if (rc < 0)
		return rc;
	rc = mode == FTLOAD_PARALLEL ? load_parallel(p, o, b, st, err, errlen) : load_serial(p, o, b, st, err, errlen);
	st->seconds = fttime_now_s() - t0;
	if (rc < 0) {
		ftbanks_free(b);
		return rc;
	}
	*out = b;
	return 0;
}
