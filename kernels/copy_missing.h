/* copy_missing (GPU): apply an ensure_experts plan (src_indices -> evict_slots, num_indices on
 * the device) to every bank of a layer: host bank row src_indices[i] -> pool row evict_slots[i].
 *
 * Paths:
 *  - fused (default): ONE kernel launch copies all banks, 16-byte loads straight from pinned,
 *    device-mapped host memory into the slot pools. Needs every row size, host base and pool
 *    base 16-byte aligned; otherwise ftmissing_create falls back to per-bank and says why in `note`.
 *  - per-bank: one launch per bank, 16-, 4- or 1-byte accesses as that bank's alignment allows.
 *  FREETOKEN_FUSED_COPY=0|false|no|off forces per-bank (ftmissing_env_fused).
 * Both read num_indices from device memory: no host sync, capturable in a CUDA graph. The
 * pointer tables (per layer and bank: mapped host base, pool base, row bytes) are built once
 * by ftmissing_create and live in device memory. (The benchmark's variants of the fused kernel live
 * in bench/copy_variants.cu.) */
#ifndef FT_KERNELS_COPY_MISSING_H
#define FT_KERNELS_COPY_MISSING_H
#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FTMISSING_MAX_BANKS 6

struct ftmissing_bank {
	const void *host; /* device-accessible pointer of the layer's pinned bank [E, row] */
	void *pool;       /* device slot pool [C, row] (the same for every layer) */
	size_t row_bytes; /* bytes of one expert in this bank */
};

struct ftmissing;

/* Build the context for `layers` layers of `nbanks` banks: banks[layer * nbanks + b].
 * want_fused: 1 fused unless misaligned, 0 per-bank. On fallback note (may be NULL) gets a
 * one-line reason, else note[0] = 0. Returns cudaErrorInvalidValue for bad arguments. */
cudaError_t ftmissing_create(struct ftmissing **out, const struct ftmissing_bank *banks, int layers, int nbanks,
			int want_fused, char *note, size_t notelen);
void ftmissing_destroy(struct ftmissing *c); /* accepts NULL */
/* 1 when the fused path is in use. */
int ftmissing_is_fused(const struct ftmissing *c);
/* 0 when FREETOKEN_FUSED_COPY is 0/false/no/off (any case), else 1. */
int ftmissing_env_fused(void);

/* Copy the plan on stream s: n = min(*d_num, max_n) entries; fused per the context. */
cudaError_t ftmissing_copy(const struct ftmissing *c, int layer, const int32_t *d_src, const int32_t *d_dst,
		      const int32_t *d_num, int max_n, cudaStream_t s);
/* Same with the path forced (fused = 1 fails with cudaErrorInvalidValue when misaligned) and the
 * grid (blocks 0 = default, else that many blocks). */
cudaError_t ftmissing_copy_path(const struct ftmissing *c, int fused, int blocks, int layer, const int32_t *d_src,
			   const int32_t *d_dst, const int32_t *d_num, int max_n, cudaStream_t s);

/* Copy-engine variant with the plan kept on the device (graph-safe): a one-block kernel
 * publishes the plan (src, dst, n, layer, bank split, sequence number) into pinned, mapped host
 * memory; a host proxy thread owned by the context turns each new plan into one
 * cudaMemcpyBatchAsync on its own stream (plain cudaMemcpyAsync when it is one copy) followed by
 * a signal (cuStreamWriteValue64, or a one-thread kernel where stream memory operations are
 * unavailable) that stores the sequence number in device memory; a one-thread wait kernel holds
 * the caller's stream until that number arrives (or a 10 s timeout, which counts in
 * ftmissing_proxy_errors; a memop that fails is replaced by the kernel signal). Every kernel of
 * the path is loaded at create time: a lazy load at a first launch while a wait kernel spins
 * could wait for that kernel. The thread does not spin while idle: it sleeps on a doorbell (futex) that
 * ftmissing_proxy_copy rings once it has enqueued a plan's publish and SM kernels, or, captured in a graph, a host node rings when
 * the graph reaches the publish kernel (on a stream forked from the caller's and joined back
 * after the wait kernel; a stream's host function rang 0.1-0.3 ms late on the H200 host, a
 * graph's host node in time: bench/RESULTS.md); once rung, it polls for the plan.
 * opts.spin_us says how long it polls for the next plan after the copies it issued should have
 * ended (it sleeps through them, their end predicted from the rate it measures), 0 for never,
 * FTMISSING_PROXY_SPIN_ALWAYS for always.
 * Split: banks whose row_bytes < opts.sm_below are copied by the fused (or, misaligned, the
 * per-bank) SM kernel restricted to those banks, launched on the caller's stream between the
 * publish and the wait kernels, so it runs while the copy engines move the large banks.
 * Head (fused path only): the SM kernel also copies the first bytes of every row of the
 * copy-engine banks while the proxy thread wakes and issues the rest of each row: the link is
 * busy from the publish on, not only from the copies' start. The SM work of a plan of n
 * entries is max(opts.sm_head, n * opts.sm_head_entry) bytes: at least the thread's wake-up,
 * more as the copies it issues grow with the plan. The SM banks' rows count towards it; the
 * rest (the budget) is heads: each row of copy-engine bank b gets min(row_b / 2, row_b *
 * budget / (n * the copy-engine banks' row bytes summed)), in 16-byte units. The publish kernel
 * passes both options to the SM kernel and the thread. (Measured: bench/RESULTS.md.)
 * Merge: entries whose src rows and dst slots are both consecutive become one copy per bank
 * (not with a head: each row's copy then starts after its head).
 * Capturable: the publish and wait kernels read their sequence numbers from device memory; the
 * split is fixed at launch (capture) time from the options then in force.
 * The proxy must outlive every graph that uses it. */
#define FTMISSING_PROXY_SPLIT_BYTES (512u << 10) /* default opts.sm_below (measured: bench/RESULTS.md) */
#define FTMISSING_PROXY_WAIT_SLEEP_NS 64         /* default opts.wait_sleep_ns */
#define FTMISSING_PROXY_SPIN_US 200              /* default opts.spin_us (measured: bench/RESULTS.md) */
#define FTMISSING_PROXY_SPIN_ALWAYS (-1)         /* opts.spin_us: poll all the time (the first proxy) */
#define FTMISSING_PROXY_HEAD_BYTES (4u << 20)    /* default opts.sm_head */
#define FTMISSING_PROXY_HEAD_ENTRY_BYTES (256u << 10) /* default opts.sm_head_entry */
#define FTMISSING_PROXY_HEAD_MAX (1u << 30)      /* the largest opts.sm_head and sm_head_entry */
enum ftmissing_signal { FTMISSING_SIGNAL_KERNEL = 0, FTMISSING_SIGNAL_MEMOP = 1 };

struct ftmissing_proxy_opts {
	size_t sm_below;   /* banks with smaller rows go to the SM kernel (0: none; SIZE_MAX: all) */
	int merge;         /* 1: merge runs of consecutive src and dst rows into one copy */
	int signal;        /* enum ftmissing_signal (MEMOP falls back to KERNEL when unsupported) */
	int wait_sleep_ns; /* the wait kernel's poll interval, 0..1000000 */
	int spin_us;       /* the thread's poll after a plan's copies end, -1..1000000 (see above) */
	size_t sm_head;       /* head: at least this much SM work per plan (bytes, the SM banks' rows
			       * counted; at most FTMISSING_PROXY_HEAD_MAX; see above) ... */
	size_t sm_head_entry; /* ... or this much per plan entry, if more (at most
			       * FTMISSING_PROXY_HEAD_MAX; both 0: no head) */
};

/* Attributes of a cudaMemcpyBatchAsync from pinned host memory to `device` (source read in
 * stream order); what the proxy issues, for callers that batch the same copies themselves. */
void ftmissing_h2d_batch_attrs(struct cudaMemcpyAttributes *at, int device);

struct ftmissing_proxy;
void ftmissing_proxy_default_opts(struct ftmissing_proxy_opts *o);
/* 1 when every option is in range (what ftmissing_proxy_set_opts accepts), else 0. */
int ftmissing_proxy_opts_ok(const struct ftmissing_proxy_opts *o);
/* 0 when the proxy cannot work here: CUDA_DEVICE_MAX_CONNECTIONS=1 puts every stream on one
 * hardware queue, where the proxy's copies and signal wait behind the caller's wait kernel until
 * its timeout (measured on the H200: bench/RESULTS.md). The proxy needs its copy stream on
 * another queue than the waiting stream's, which CUDA assigns (round robin over
 * CUDA_DEVICE_MAX_CONNECTIONS, 8 by default); a shared one shows in ftmissing_proxy_diag. */
int ftmissing_proxy_usable(void);
/* default opts; cudaErrorNotSupported when !ftmissing_proxy_usable() */
cudaError_t ftmissing_proxy_create(struct ftmissing_proxy **out, const struct ftmissing *c, int max_n);
void ftmissing_proxy_destroy(struct ftmissing_proxy *p); /* accepts NULL; stops and joins the thread */
/* Options for later ftmissing_proxy_copy calls (and later graph captures); plans in flight keep
 * theirs. cudaErrorInvalidValue for a bad option. */
cudaError_t ftmissing_proxy_set_opts(struct ftmissing_proxy *p, const struct ftmissing_proxy_opts *o);
/* The signal in use: FTMISSING_SIGNAL_MEMOP only when asked for and supported. */
int ftmissing_proxy_signal(const struct ftmissing_proxy *p);
cudaError_t ftmissing_proxy_copy(struct ftmissing_proxy *p, int layer, const int32_t *src, const int32_t *dst,
			    const int32_t *num, cudaStream_t s);
/* Copies the proxy failed to issue, and waits that timed out (0 when all is well). */
int ftmissing_proxy_errors(const struct ftmissing_proxy *p);
/* One line for a failure report: plans published and signalled done (device counters), the
 * plan the thread handled last, the mailbox's and the doorbell's counts, the first failed step
 * and its error code, the wait timeouts (the first one's wanted and seen numbers), memop signals
 * that fell back to the kernel, the thread's sleeps. Reads device memory (a synchronous copy).
 * Returns what snprintf returns. */
int ftmissing_proxy_diag(const struct ftmissing_proxy *p, char *buf, size_t len);
/* Plans handled and copy-engine copies issued so far (read after the stream is idle). */
void ftmissing_proxy_stats(const struct ftmissing_proxy *p, long long *batches, long long *copies);
/* The thread's sleeps so far, of them those the doorbell (or an option change) ended, and the
 * copy rate it has learned (GB/s; a guess until a plan of 50 us or more has been timed). */
void ftmissing_proxy_idle_stats(const struct ftmissing_proxy *p, long long *sleeps, long long *wakes, double *gbs);

#ifdef __cplusplus
}
#endif
#endif
