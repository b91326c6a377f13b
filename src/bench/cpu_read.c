#include "bench/cpu_read.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "util/timeutil.h"

uint64_t ftcread_loop_avx512(const void *p, size_t n, int variant);
uint64_t ftcread_loop_avx2(const void *p, size_t n);

#define MIB (1024ull * 1024ull)
#define SLICE_ALIGN (2 * MIB)

static uint64_t loop_scalar(const void *p, size_t n)
{
	const uint64_t *v = p;
	uint64_t a[8] = {0};
	for (size_t i = 0; i + 8 <= n / 8; i += 8)
		for (int j = 0; j < 8; j++)
			a[j] += v[i + j];
	return a[0] + a[1] + a[2] + a[3] + a[4] + a[5] + a[6] + a[7];
}

size_t ftcread_default_bytes(int threads)
{
	size_t want = 2048 * MIB;
	if ((size_t)threads * 128 * MIB > want)
		want = (size_t)threads * 128 * MIB;
	size_t avail = ftcpu_mem_available();
	if (avail && want > avail / 2)
		want = avail / 2;
	return want / SLICE_ALIGN * SLICE_ALIGN;
}

/* Chunk of the interleaved and dynamic variants: all workers read within a window of about
 * threads x CHUNK_IL bytes (as the CPU MoE executor's dynamic schedule does), instead of each
 * streaming its own slice far from the others' (on the H200 host the slice loops read ~100 GB/s
 * in invocations where the executor read 120+: bench/RESULTS.md, "CPU MoE"). */
#define CHUNK_IL (128 * 1024)

struct job {
	uint8_t *buf;
	size_t bytes;
	int fill;
	uint64_t (*loop)(const void *, size_t);
	int variant;                 /* avx512: FTCREAD_VARIANTS, see ftcread_result.loop */
	_Alignas(64) _Atomic size_t next; /* dynamic variant: next chunk */
	_Atomic uint64_t sink;
};

static void slice(const struct job *j, int tid, int n, size_t *off, size_t *len)
{
	size_t units = j->bytes / 4096;
	size_t a = units * (size_t)tid / (size_t)n, b = units * (size_t)(tid + 1) / (size_t)n;
	*off = a * 4096;
	*len = (b - a) * 4096;
}

static void work(void *arg, int tid, int n)
{
	struct job *j = arg;
	size_t off, len;
	slice(j, tid, n, &off, &len);
	if (j->fill) {
		uint64_t s = 0x9e3779b97f4a7c15ull * (uint64_t)(tid + 1), *p = (uint64_t *)(j->buf + off);
		for (size_t i = 0; i < len / 8; i++) {
			s ^= s << 13;
			s ^= s >> 7;
			s ^= s << 17;
			p[i] = s | 1; /* never zero */
		}
		return;
	}
	uint64_t v = 0;
	size_t chunks = j->bytes / CHUNK_IL;
	if (j->loop)
		v = j->loop(j->buf + off, len);
	else if (j->variant == 4) /* interleaved: chunks tid, tid + n, ... */
		for (size_t c = (size_t)tid; c < chunks; c += (size_t)n)
			v += ftcread_loop_avx512(j->buf + c * CHUNK_IL, CHUNK_IL, 3);
	else if (j->variant == 5) /* dynamic: the next free chunk */
		for (size_t c; (c = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed)) < chunks;)
			v += ftcread_loop_avx512(j->buf + c * CHUNK_IL, CHUNK_IL, 3);
	else
		v = ftcread_loop_avx512(j->buf + off, len, j->variant);
	atomic_fetch_add_explicit(&j->sink, v, memory_order_relaxed);
}

struct ftcread {
	struct job j;
	struct ftpool *pool;
};

const char *const ftcread_avx512_names[FTCREAD_VARIANTS] = {"avx512x8",    "avx512x8-2s", "avx512x8-4s",
								    "avx512x8-pf", "avx512x8-il", "avx512x8-dyn"};

int ftcread_open(const struct ftcpu_info *ci, struct ftpool *pool, size_t bytes, struct ftcread **out,
		 struct ftcread_result *res)
{
	if (!ci || !pool || !out)
		return -EINVAL;
	int n = ftpool_size(pool);
	if (!bytes)
		bytes = ftcread_default_bytes(n);
	bytes = bytes / CHUNK_IL * CHUNK_IL;
	if (bytes < (size_t)n * 4096)
		return -EINVAL;
	struct ftcread *r = aligned_alloc(64, (sizeof *r + 63) / 64 * 64); /* job.next on its own line */
	if (!r)
		return -ENOMEM;
	memset(r, 0, sizeof *r);
	r->pool = pool;
	struct job *j = &r->j;
	j->bytes = bytes;
	j->buf = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (j->buf == MAP_FAILED) {
		free(r);
		return -ENOMEM;
	}
	madvise(j->buf, bytes, MADV_HUGEPAGE);
	const char *name;
	const unsigned need512 = FTCPU_AVX512F | FTCPU_AVX512BW | FTCPU_AVX512VL | FTCPU_AVX512DQ; /* ISA_avx512 */
	int avx512 = (ci->isa & need512) == need512;
	if (avx512) {
		j->loop = NULL;
		name = ftcread_avx512_names[0];
	} else if (ci->isa & FTCPU_AVX2) {
		j->loop = ftcread_loop_avx2;
		name = "avx2x8";
	} else {
		j->loop = loop_scalar;
		name = "scalar";
	}
	j->fill = 1;
	ftpool_run(pool, work, j); /* first touch by the reader */
	j->fill = 0;
	ftpool_run(pool, work, j); /* untimed pass */
	double calib[FTCREAD_VARIANTS] = {0};
	if (avx512) { /* the fastest loop shape on this machine (one calibration pass each) */
		double best = 0;
		int bestv = 0;
		for (int v = 0; v < FTCREAD_VARIANTS; v++) {
			j->variant = v;
			calib[v] = ftcread_pass(r);
			if (calib[v] > best) {
				best = calib[v];
				name = ftcread_avx512_names[v];
				bestv = v;
			}
		}
		j->variant = bestv;
	}
	if (res) {
		res->buffer_bytes = bytes;
		res->threads = n;
		res->loop = name;
		memcpy(res->calib_gbs, calib, sizeof calib);
	}
	*out = r;
	return 0;
}

double ftcread_pass(struct ftcread *r)
{
	atomic_store_explicit(&r->j.next, 0, memory_order_relaxed);
	double t0 = fttime_now_s();
	ftpool_run(r->pool, work, &r->j);
	double t = fttime_now_s() - t0;
	return t > 0 ? (double)r->j.bytes / t / 1e9 : 0;
}

void ftcread_close(struct ftcread *r)
{
	if (!r)
		return;
	munmap(r->j.buf, r->j.bytes);
	free(r);
}

int ftcread_measure(const struct ftcpu_info *ci, struct ftpool *pool, size_t bytes, int passes,
		    double *gbs, struct ftcread_result *res)
{
	if (!ci || passes < 1 || !gbs)
		return -EINVAL;
	struct ftpool *own = NULL;
	int r = 0;
	if (!pool) {
		r = ftpool_create(ci, 0, -1, &own);
		if (r < 0)
			return r;
		ftpool_pin_caller(own);
		pool = own;
	}
	struct ftcread *s = NULL;
	r = ftcread_open(ci, pool, bytes, &s, res);
	if (r == 0) {
		for (int i = 0; i < passes; i++)
			gbs[i] = ftcread_pass(s);
		ftcread_close(s);
	}
	ftpool_free(own);
	return r;
}
