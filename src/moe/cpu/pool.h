/* pool: a persistent worker pool for the CPU MoE executor and the CPU read ceiling.
 *
 * One worker per physical core (hw/cpu gives one CPU id per core), each pinned to its core,
 * those on a given NUMA node first. Worker 0 is the thread that calls ftpool_run: it should be
 * pinned to the pool's first core with ftpool_pin_caller() (done once, from the thread that will
 * drive the pool), so that no two workers share a core. Workers 1..n-1 are threads the pool owns;
 * between runs they spin briefly, then sleep on a futex. Nothing is allocated after create.
 *
 * Not reentrant: one driver thread per pool. */
#ifndef FT_MOE_CPU_POOL_H
#define FT_MOE_CPU_POOL_H
#include "hw/cpu.h"

struct ftpool;

/* The work of one run: called once on every worker with its index 0..n-1. */
typedef void (*ftpool_fn)(void *arg, int tid, int nthreads);

/* Create a pool of `threads` workers (0 or more than the physical cores: one per physical
 * core), pinned to cores near NUMA node `numa_node` (-1: cores in order). Returns 0 and *out
 * (free with ftpool_free), or -errno (-EINVAL bad arguments, -ENOMEM, or pthread's error). */
int ftpool_create(const struct ftcpu_info *ci, int threads, int numa_node, struct ftpool **out);
/* Create a pool of n workers pinned to cpus[0..n) in that order (a core set the caller chose,
 * e.g. one engine's share of the host). Same returns as ftpool_create. */
int ftpool_create_on(const int *cpus, int n, struct ftpool **out);
/* Stop and join the workers; accepts NULL. */
void ftpool_free(struct ftpool *p);

int ftpool_size(const struct ftpool *p);
/* CPU id of worker tid (worker 0: the core ftpool_pin_caller binds the caller to). */
int ftpool_cpu(const struct ftpool *p, int tid);

/* Pin the calling thread to worker 0's core. Returns 0 or -errno. */
int ftpool_pin_caller(const struct ftpool *p);

/* Run fn(arg, tid, n) on every worker (the caller runs tid 0) and return when all are done. */
void ftpool_run(struct ftpool *p, ftpool_fn fn, void *arg);

/* Inside a run: wait until every worker of the run has reached this barrier (spinning). Every
 * worker must call it the same number of times in a run. */
void ftpool_barrier(struct ftpool *p);
/* Inside a run: one iteration of a spin wait on another worker (PAUSE,
 * a sched_yield now and then so an oversubscribed host makes progress). *k: the caller's
 * iteration count, 0 at the start of the wait. */
void ftpool_relax(struct ftpool *p, int *k);
#endif
