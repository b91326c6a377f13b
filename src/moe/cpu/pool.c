#include "moe/cpu/pool.h"

#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define cpu_pause() _mm_pause()
#else
#define cpu_pause() ((void)0)
#endif
/* Spin waits execute PAUSE; every YIELD_EVERY iterations they yield, so that an oversubscribed
 * host still makes progress. */
#define YIELD_EVERY 4096

#include "util/timeutil.h"

/* How long an idle worker spins for the next run before it sleeps on the futex. Decode steps
 * come back-to-back, so a short spin saves the wake-up latency on every step. */
#define POOL_SPIN_NS 2000000ull

/* Each worker marks the end of a run in its own line, which the caller polls: the n - 1 ends
 * land in parallel, where one shared counter took n - 1 read-modify-writes of one line in turn,
 * all at the end of a step. */
struct done {
	_Alignas(64) atomic_uint gen;
};

struct worker {
	struct ftpool *pool;
	int tid;
	pthread_t th;
	int started;
};

struct ftpool {
	int n;
	int *cpus;
	struct worker *w;
	/* run state */
	_Alignas(64) atomic_uint gen;        /* bumped per run; futex word */
	struct done *done;                   /* [n]: worker i's last finished run (gen) */
	_Alignas(64) atomic_int sleepers;
	_Alignas(64) atomic_int bar_count;
	_Alignas(64) atomic_uint bar_gen;
	ftpool_fn fn;
	void *arg;
	int stop;
};

static long futex(atomic_uint *addr, int op, unsigned val)
{
	return syscall(SYS_futex, (unsigned *)addr, op, val, NULL, NULL, 0);
}

static int pin_self(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return -pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

static void *worker_main(void *p)
{
	struct worker *w = p;
	struct ftpool *pool = w->pool;
	pin_self(pool->cpus[w->tid]); /* best effort: a refused pin still works, only slower */
	unsigned seen = 0;
	for (;;) {
		unsigned g = atomic_load_explicit(&pool->gen, memory_order_acquire);
		if (g == seen) {
			uint64_t t0 = fttime_now_ns();
			int k = 0;
			while ((g = atomic_load_explicit(&pool->gen, memory_order_acquire)) == seen) {
				cpu_pause();
				if (++k % 256 == 0 && fttime_now_ns() - t0 > POOL_SPIN_NS) {
					atomic_fetch_add(&pool->sleepers, 1);
					if (atomic_load(&pool->gen) == seen)
						futex(&pool->gen, FUTEX_WAIT_PRIVATE, seen);
					atomic_fetch_sub(&pool->sleepers, 1);
					t0 = fttime_now_ns();
				}
			}
		}
		seen = g;
		if (pool->stop)
			break;
		pool->fn(pool->arg, w->tid, pool->n);
		atomic_store_explicit(&pool->done[w->tid].gen, g, memory_order_release);
	}
	return NULL;
}

static int start_workers(struct ftpool *p, struct ftpool **out);

int ftpool_create(const struct ftcpu_info *ci, int threads, int numa_node, struct ftpool **out)
{
	if (!ci || !out || ci->physical_cores < 1)
		return -EINVAL;
	int n = threads <= 0 || threads > ci->physical_cores ? ci->physical_cores : threads;
	struct ftpool *p = aligned_alloc(64, (sizeof *p + 63) / 64 * 64);
	if (!p)
		return -ENOMEM;
	memset(p, 0, sizeof *p);
	p->n = n;
	p->cpus = calloc((size_t)ci->physical_cores, sizeof *p->cpus);
	p->w = calloc((size_t)n, sizeof *p->w);
	p->done = aligned_alloc(64, (size_t)n * sizeof *p->done);
	if (!p->cpus || !p->w || !p->done) {
		ftpool_free(p);
		return -ENOMEM;
	}
	ftcpu_cores_near(ci, numa_node, p->cpus, ci->physical_cores);
	return start_workers(p, out);
}

int ftpool_create_on(const int *cpus, int n, struct ftpool **out)
{
	if (!cpus || n < 1 || !out)
		return -EINVAL;
	for (int i = 0; i < n; i++)
		if (cpus[i] < 0 || cpus[i] >= CPU_SETSIZE)
			return -EINVAL;
	struct ftpool *p = aligned_alloc(64, (sizeof *p + 63) / 64 * 64);
	if (!p)
		return -ENOMEM;
	memset(p, 0, sizeof *p);
	p->n = n;
	p->cpus = calloc((size_t)n, sizeof *p->cpus);
	p->w = calloc((size_t)n, sizeof *p->w);
	p->done = aligned_alloc(64, (size_t)n * sizeof *p->done);
	if (!p->cpus || !p->w || !p->done) {
		ftpool_free(p);
		return -ENOMEM;
	}
	memcpy(p->cpus, cpus, (size_t)n * sizeof *cpus);
	return start_workers(p, out);
}

static int start_workers(struct ftpool *p, struct ftpool **out)
{
	int n = p->n;
	for (int i = 0; i < n; i++)
		atomic_init(&p->done[i].gen, 0);
	for (int i = 1; i < n; i++) {
		p->w[i].pool = p;
		p->w[i].tid = i;
		int r = pthread_create(&p->w[i].th, NULL, worker_main, &p->w[i]);
		if (r) {
			ftpool_free(p);
			return -r;
		}
		p->w[i].started = 1;
	}
	*out = p;
	return 0;
}

void ftpool_free(struct ftpool *p)
{
	if (!p)
		return;
	if (p->w) {
		p->stop = 1;
		atomic_fetch_add_explicit(&p->gen, 1, memory_order_release);
		futex(&p->gen, FUTEX_WAKE_PRIVATE, 0x7fffffff);
		for (int i = 1; i < p->n; i++)
			if (p->w[i].started)
				pthread_join(p->w[i].th, NULL);
	}
	free(p->w);
	free(p->done);
	free(p->cpus);
	free(p);
}

int ftpool_size(const struct ftpool *p)
{
	return p->n;
}

int ftpool_cpu(const struct ftpool *p, int tid)
{
	return tid >= 0 && tid < p->n ? p->cpus[tid] : -1;
}

int ftpool_pin_caller(const struct ftpool *p)
{
	return pin_self(p->cpus[0]);
}

void ftpool_relax(struct ftpool *p, int *k)
{
	cpu_pause();
	if (++*k % YIELD_EVERY == 0)
		sched_yield();
}

void ftpool_run(struct ftpool *p, ftpool_fn fn, void *arg)
{
	if (p->n == 1) {
		fn(arg, 0, 1);
		return;
	}
	p->fn = fn;
	p->arg = arg;
	unsigned g = atomic_fetch_add_explicit(&p->gen, 1, memory_order_release) + 1;
	if (atomic_load(&p->sleepers) > 0)
		futex(&p->gen, FUTEX_WAKE_PRIVATE, 0x7fffffff);
	fn(arg, 0, p->n);
	/* relax yields now and then: an oversubscribed host (CI) must let the workers run */
	for (int i = 1, k = 0; i < p->n; i++)
		while (atomic_load_explicit(&p->done[i].gen, memory_order_acquire) != g)
			ftpool_relax(p, &k);
}

void ftpool_barrier(struct ftpool *p)
{
	if (p->n == 1)
		return;
	unsigned g = atomic_load_explicit(&p->bar_gen, memory_order_acquire);
	if (atomic_fetch_add_explicit(&p->bar_count, 1, memory_order_acq_rel) == p->n - 1) {
		atomic_store_explicit(&p->bar_count, 0, memory_order_relaxed);
		atomic_fetch_add_explicit(&p->bar_gen, 1, memory_order_release);
		return;
	}
	for (int k = 0; atomic_load_explicit(&p->bar_gen, memory_order_acquire) == g;)
		ftpool_relax(p, &k);
}
