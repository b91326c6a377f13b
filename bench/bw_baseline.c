/* bw_baseline: independent same-run baselines for the ceilings of `ftbench bw`
 * (bench/RESULTS.md, section 1). Not part of the product; built by `make bench-tools`.
 *
 *  - CPU: a plain, well-written read loop: one thread per physical core, bound to it, each
 *    reading its own contiguous slice (first-touched by itself, never zeros) with four
 *    independent AVX-512 accumulators; GB/s = buffer bytes / (start barrier -> last thread done).
 *    Buffer max(2 GiB, 128 MiB * threads), at most half of MemAvailable, as bw's ceiling.
 *    The host's read rate drifts (a VM), and bw's ceiling is the best median of its phases of
 *    read passes, so this loop is measured the same way: PHASES phases of PASSES back-to-back
 *    passes, PHASE_GAP_S apart; cpu_read_gbs is the spread of the phase with the highest median
 *    (the figure bench/bw_check.py holds the ceiling to), cpu_read_all_gbs that of every pass,
 *    cpu_read_phase_medians each phase's median in order.
 *  - PCIe: one large pinned cudaMemcpy each way (1 GiB by default), timed with CUDA events,
 *    2 warm-ups then 10 timed copies.
 *  - Same conditions: the host's rate drifts between the runs above and bw's, so the two loops are
 *    also compared side by side: AB_PAIRS pairs of one pass of this loop (its own threads and
 *    buffer) and one pass of the product's ceiling loop (src/bench/cpu_read, ftcread_pass),
 *    alternating which goes first; "ab" gives both spreads and the median of the per-pair
 *    ratios ceiling/independent (bench/bw_check.py wants >= 0.99).
 * Prints one JSON object: {"cpu_read_gbs":{median,min,max,samples},"cpu_read_all_gbs":{...},
 * "cpu_read_phase_medians":[...],"threads":n,
 * "h2d_gbs":{...},"d2h_gbs":{...}} (PCIe parts null without a GPU). */
#include <immintrin.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/cpu_read.h"
#include "hw/cpu.h"
#include "moe/cpu/pool.h"
#include "util/stats.h"

#ifdef FT_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#define PASSES 8      /* per phase */
#define PHASES 3
#define PHASE_GAP_S 0.5
#define TOTAL (PHASES * PASSES)

struct shared {
	char *buf;
	size_t slice;
	int nthreads;
	pthread_barrier_t bar;
	double t0[TOTAL + 1], t1[TOTAL + 1][256];
	volatile double sink;
};

struct worker {
	struct shared *s;
	int tid, cpu;
};

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

__attribute__((target("avx512f"))) static double read_slice(const char *p, size_t n)
{
	__m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
	for (size_t i = 0; i + 256 <= n; i += 256) {
		a0 = _mm512_add_epi64(a0, _mm512_load_si512((const void *)(p + i)));
		a1 = _mm512_add_epi64(a1, _mm512_load_si512((const void *)(p + i + 64)));
		a2 = _mm512_add_epi64(a2, _mm512_load_si512((const void *)(p + i + 128)));
		a3 = _mm512_add_epi64(a3, _mm512_load_si512((const void *)(p + i + 192)));
	}
	a0 = _mm512_add_epi64(_mm512_add_epi64(a0, a1), _mm512_add_epi64(a2, a3));
	return (double)_mm512_reduce_add_epi64(a0);
}

/* Bind the calling thread to cpu and first-touch its slice with a never-zero pattern. */
static char *pin_and_fill(int cpu, char *p, size_t n, unsigned salt)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof set, &set);
	for (size_t i = 0; i < n; i += 8)
		*(uint64_t *)(p + i) = 0x0101010101010101ull * (uint64_t)((i >> 12) % 251 + salt);
	return p;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct shared *s = w->s;
	char *p = pin_and_fill(w->cpu, s->buf + (size_t)w->tid * s->slice, s->slice, 1);
	double acc = 0;
	for (int pass = 0; pass <= TOTAL; pass++) { /* pass 0 is a warm-up */
		if (w->tid == 0 && pass > 1 && (pass - 1) % PASSES == 0) { /* between phases */
			struct timespec gap = {0, (long)(PHASE_GAP_S * 1e9)};
			nanosleep(&gap, NULL);
		}
		pthread_barrier_wait(&s->bar);
		if (w->tid == 0)
			s->t0[pass] = now();
		pthread_barrier_wait(&s->bar);
		acc += read_slice(p, s->slice);
		s->t1[pass][w->tid] = now();
	}
	s->sink += acc;
	return NULL;
}

static json_t *cpu_baseline(int *threads_out, json_t **all_out, json_t **phases_out)
{
	struct ftcpu_info ci;
	if (ftcpu_probe(&ci) < 0)
		return json_null();
	int cpus[256];
	int n = ftcpu_cores_near(&ci, -1, cpus, ci.physical_cores < 256 ? ci.physical_cores : 256);
	size_t want = (size_t)128 << 20;
	want *= (size_t)n;
	if (want < (2ull << 30))
		want = 2ull << 30;
	size_t avail = ftcpu_mem_available();
	if (avail && want > avail / 2)
		want = avail / 2;
	struct shared *s = calloc(1, sizeof *s);
	s->nthreads = n;
	s->slice = (want / (size_t)n) & ~(size_t)((2 << 20) - 1);
	if (posix_memalign((void **)&s->buf, 2 << 20, s->slice * (size_t)n))
		return json_null();
	pthread_barrier_init(&s->bar, NULL, (unsigned)n);
	pthread_t th[256];
	struct worker w[256];
	for (int i = 0; i < n; i++) {
		w[i] = (struct worker){s, i, cpus[i]};
		pthread_create(&th[i], NULL, worker_main, &w[i]);
	}
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	double g[TOTAL];
	for (int p = 1; p <= TOTAL; p++) {
		double end = 0;
		for (int i = 0; i < n; i++)
			if (s->t1[p][i] > end)
				end = s->t1[p][i];
		g[p - 1] = (double)(s->slice * (size_t)n) / (end - s->t0[p]) / 1e9;
	}
	struct ftstat st = ftstat_of(g, PASSES), all = ftstat_of(g, TOTAL);
	json_t *meds = json_array();
	for (int ph = 0; ph < PHASES; ph++) {
		struct ftstat x = ftstat_of(g + ph * PASSES, PASSES);
		json_array_append_new(meds, json_real(x.median));
		if (x.median > st.median)
			st = x;
	}
	*all_out = ftstat_json(&all);
	*phases_out = meds;
	*threads_out = n;
	free(s->buf);
	free(s);
	ftcpu_release(&ci);
	return ftstat_json(&st);
}

#define AB_PAIRS 12

struct ab {
	char *buf;
	size_t slice;
	pthread_barrier_t start, end;
	volatile int quit;
	volatile double sink;
};

struct ab_worker {
	struct ab *s;
	int tid, cpu;
};

static void *ab_main(void *arg)
{
	struct ab_worker *w = arg;
	struct ab *s = w->s;
	char *p = pin_and_fill(w->cpu, s->buf + (size_t)w->tid * s->slice, s->slice, 3);
	double acc = 0;
	for (;;) {
		pthread_barrier_wait(&s->start);
		if (s->quit)
			break;
		acc += read_slice(p, s->slice);
		pthread_barrier_wait(&s->end);
	}
	s->sink += acc;
	return NULL;
}

/* The two loops alternated under the same conditions (see the header). */
static json_t *ab_compare(void)
{
	struct ftcpu_info ci;
	struct ftpool *pool = NULL;
	struct ftcread *r = NULL;
	json_t *out = json_null();
	if (ftcpu_probe(&ci) < 0)
		return out;
	int n = ci.physical_cores < 256 ? ci.physical_cores : 256, cpus[256];
	ftcpu_cores_near(&ci, -1, cpus, n);
	if (ftpool_create(&ci, 0, -1, &pool) < 0)
		goto out;
	ftpool_pin_caller(pool);
	if (ftcread_open(&ci, pool, 0, &r, NULL) < 0)
		goto out;
	struct ab s = {0};
	s.slice = (ftcread_default_bytes(n) / (size_t)n) & ~(size_t)((2 << 20) - 1);
	if (posix_memalign((void **)&s.buf, 2 << 20, s.slice * (size_t)n))
		goto out;
	pthread_barrier_init(&s.start, NULL, (unsigned)n + 1);
	pthread_barrier_init(&s.end, NULL, (unsigned)n + 1);
	pthread_t th[256];
	struct ab_worker w[256];
	for (int i = 0; i < n; i++) {
		w[i] = (struct ab_worker){&s, i, cpus[i]};
		pthread_create(&th[i], NULL, ab_main, &w[i]);
	}
	double ind[AB_PAIRS], cei[AB_PAIRS], ratio[AB_PAIRS];
	for (int k = -1; k < AB_PAIRS; k++) { /* k = -1: warm-up pair */
		for (int o = 0; o < 2; o++) {
			if ((o == 0) == (k % 2 == 0)) {
				double t0 = now();
				pthread_barrier_wait(&s.start);
				pthread_barrier_wait(&s.end);
				if (k >= 0)
					ind[k] = (double)(s.slice * (size_t)n) / (now() - t0) / 1e9;
			} else {
				double g = ftcread_pass(r);
				if (k >= 0)
					cei[k] = g;
			}
		}
		if (k >= 0)
			ratio[k] = cei[k] / ind[k];
	}
	s.quit = 1;
	pthread_barrier_wait(&s.start);
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	struct ftstat si = ftstat_of(ind, AB_PAIRS), sc = ftstat_of(cei, AB_PAIRS), sr = ftstat_of(ratio, AB_PAIRS);
	out = json_pack("{s:i,s:o,s:o,s:f,s:f,s:f}", "pairs", AB_PAIRS, "independent_gbs", ftstat_json(&si),
			"ceiling_loop_gbs", ftstat_json(&sc), "ratio_median", sr.median, "ratio_min", sr.min,
			"ratio_max", sr.max);
	free(s.buf);
out:
	ftcread_close(r);
	ftpool_free(pool);
	ftcpu_release(&ci);
	return out;
}

#ifdef FT_HAVE_CUDA
static json_t *copy_baseline(int h2d, size_t bytes)
{
	void *h = NULL, *d = NULL;
	cudaEvent_t a, b;
	double t[10];
	if (cudaHostAlloc(&h, bytes, cudaHostAllocDefault) != cudaSuccess || cudaMalloc(&d, bytes) != cudaSuccess)
		return json_null();
	memset(h, 0x5b, bytes);
	cudaMemset(d, 0x3c, bytes);
	cudaEventCreate(&a);
	cudaEventCreate(&b);
	for (int i = -2; i < 10; i++) {
		cudaEventRecord(a, 0);
		if (h2d)
			cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice);
		else
			cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost);
		cudaEventRecord(b, 0);
		cudaEventSynchronize(b);
		float ms = 0;
		cudaEventElapsedTime(&ms, a, b);
		if (i >= 0)
			t[i] = (double)bytes / (ms * 1e-3) / 1e9;
	}
	cudaError_t e = cudaGetLastError();
	cudaFreeHost(h);
	cudaFree(d);
	if (e != cudaSuccess)
		return json_null();
	struct ftstat st = ftstat_of(t, 10);
	return ftstat_json(&st);
}
#endif

int main(int argc, char **argv)
{
	int threads = 0;
	size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 1024;
	json_t *out = json_object();
	json_t *h2d = json_null(), *d2h = json_null();
#ifdef FT_HAVE_CUDA
	int n = 0;
	if (cudaGetDeviceCount(&n) == cudaSuccess && n > 0) {
		json_decref(h2d);
		json_decref(d2h);
		h2d = copy_baseline(1, mib << 20);
		d2h = copy_baseline(0, mib << 20);
	}
#endif
	json_t *all = NULL, *phases = NULL;
	json_object_set_new(out, "cpu_read_gbs", cpu_baseline(&threads, &all, &phases));
	json_object_set_new(out, "cpu_read_all_gbs", all ? all : json_null());
	json_object_set_new(out, "cpu_read_phase_medians", phases ? phases : json_null());
	json_object_set_new(out, "threads", json_integer(threads));
	json_object_set_new(out, "ab", ab_compare());
	json_object_set_new(out, "copy_mib", json_integer((json_int_t)mib));
	json_object_set_new(out, "h2d_gbs", h2d);
	json_object_set_new(out, "d2h_gbs", d2h);
	json_dumpf(out, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	putchar('\n');
	json_decref(out);
	return 0;
}
