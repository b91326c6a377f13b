#include "bench/cpu_read.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
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

struct job {
	uint8_t *buf;
	size_t bytes;
	int fill;
	uint64_t (*loop)(const void *, size_t);
	int variant;                 /* avx512: 0 one stream, 1 two, 2 four, 3 prefetch */
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
	uint64_t v = j->loop ? j->loop(j->buf + off, len) : ftcread_loop_avx512(j->buf + off, len, j->variant);
	atomic_fetch_add_explicit(&j->sink, v, memory_order_relaxed);
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
	int n = ftpool_size(pool);
	if (!bytes)
		bytes = ftcread_default_bytes(n);
	bytes = bytes / 4096 * 4096;
	if (bytes < (size_t)n * 4096) {
		r = -EINVAL;
		goto out;
	}
	struct job j = {.bytes = bytes};
	int bestv = 0;
	j.buf = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (j.buf == MAP_FAILED) {
		r = -ENOMEM;
		goto out;
	}
	madvise(j.buf, bytes, MADV_HUGEPAGE);
	static const char *const avx512_names[] = {"avx512x8", "avx512x8-2s", "avx512x8-4s", "avx512x8-pf"};
	const char *name;
	int avx512 = (ci->isa & (FTCPU_AVX512F | FTCPU_AVX512BW)) == (FTCPU_AVX512F | FTCPU_AVX512BW);
	if (avx512) {
		j.loop = NULL;
		name = avx512_names[0];
	} else if (ci->isa & FTCPU_AVX2) {
		j.loop = ftcread_loop_avx2;
		name = "avx2x8";
	} else {
		j.loop = loop_scalar;
		name = "scalar";
	}
	j.fill = 1;
	ftpool_run(pool, work, &j); /* first touch by the reader */
	j.fill = 0;
	ftpool_run(pool, work, &j); /* untimed pass */
	double calib[4] = {0};
	if (avx512) { /* the fastest loop shape on this machine (one calibration pass each) */
		double best = 0;
		for (int v = 0; v < 4; v++) {
			j.variant = v;
			double t0 = ft_now_s();
			ftpool_run(pool, work, &j);
			double g = (double)bytes / (ft_now_s() - t0);
			calib[v] = g / 1e9;
			if (g > best) {
				best = g;
				name = avx512_names[v];
				bestv = v;
			}
		}
		j.variant = bestv;
	}
	for (int i = 0; i < passes; i++) {
		double t0 = ft_now_s();
		ftpool_run(pool, work, &j);
		double t = ft_now_s() - t0;
		gbs[i] = t > 0 ? (double)bytes / t / 1e9 : 0;
	}
	munmap(j.buf, bytes);
	if (res) {
		res->buffer_bytes = bytes;
		res->threads = n;
		res->loop = name;
		memcpy(res->calib_gbs, calib, sizeof calib);
	}
out:
	ftpool_free(own);
	return r;
}
