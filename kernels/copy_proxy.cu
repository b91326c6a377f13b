/* copy_missing's copy-engine proxy (GPU; see copy_missing.h): the host runtime that drives the
 * copy engines from the device plan (its thread, doorbell and driver entry points) and its three
 * small kernels (publish, wait, signal). The gather kernels are copy_missing.cu's. */
#include "copy_missing_impl.cuh"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda.h> /* types of cuStreamWriteValue64, reached through cudaGetDriverEntryPointByVersion */
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define FTMISSING_PUBLISH_BLOCK 256       /* threads of the publish kernel */
#define FTMISSING_WAIT_TIMEOUT_NS 10000000000ull
#define FTMISSING_WAKE_EARLY_NS 30000ll        /* wake this long before the copies' predicted end */
#define FTMISSING_RATE_GUESS_GBS 64.0          /* the copy rate assumed before one is measured */
#define FTMISSING_IDLE_CHECK_NS 1000000000ll   /* a sleeping proxy thread checks for stop this often */
#define FTMISSING_BELL_POLL_NS 1000000ll       /* after the doorbell, poll this long for the plan, */
#define FTMISSING_LATE_POLL_NS 50000ll         /* then look every 50 us */
#define FTMISSING_SEQ_WORDS 7                  /* d_seq: see struct ftmissing_proxy */

struct mailbox {
	volatile long long seq; /* written last by the publish kernel */
	int layer, n;
	unsigned ce_mask; /* banks the copy engines move (the others: the SM part) */
	int merge;        /* 1: one copy per run of consecutive src and dst rows */
	unsigned long long head16, per16; /* the plan's head (head_of's fixed16, per16), 0 0: none */
	int32_t plan[];   /* src[max_n], dst[max_n] */
};

typedef CUresult (*write_value64_fn)(CUstream, CUdeviceptr, cuuint64_t, unsigned int);

struct ftmissing_proxy {
	const struct ftmissing *c;
	int max_n, device;
	struct mailbox *mb;     /* pinned, mapped */
	struct mailbox *mb_dev; /* its device pointer */
	long long *d_seq;       /* [0] published, [1] done, [2] wait timeouts, [3] [4] the first timeout's
				 * wanted and last seen done numbers (diagnosis), [5] [6] the head of the
				 * plan being copied (head_of's fixed16, per16, as published) */
	cudaStream_t cs;
	pthread_t th;
	int started;
	volatile int stop, errors;
	struct ftmissing_proxy_opts opts; /* read by ftmissing_proxy_copy (the caller's thread) */
	volatile int signal;         /* opts.signal, read by the proxy thread */
	write_value64_fn write64;    /* NULL when stream memory operations are unavailable */
	void **dsts;
	const void **srcs;
	size_t *sizes;
	int32_t *hsrc, *hdst; /* the plan copied out of the mailbox */
	long long batches, copies; /* issued so far (statistics) */
	/* idle policy (proxy thread): doorbell, learned copy rate, wake-ups */
	unsigned bell;             /* futex word: plans announced (ring_bell), mod 2^32 */
	volatile int spin_us;      /* opts.spin_us */
	cudaStream_t bs;           /* the doorbell's stream (forked from and joined to the caller's) */
	cudaEvent_t ev_fork, ev_join;
	cudaEvent_t t0, t1;        /* around the last plan's copies, for the rate */
	int timed;                 /* t0/t1 hold a plan's copies not yet read */
	double timed_bytes, gbs;   /* bytes of that plan; learned copy-engine rate (GB/s) */
	long long sleeps, wakes;   /* futex waits begun; of them, ended by the doorbell */
	/* diagnosis (ftmissing_proxy_diag): what the thread saw and what failed first */
	volatile long long seen;   /* the last plan handled (its sequence number) */
	long long skipped;         /* plans the thread never saw (a sequence number jumped) */
	long long memop_fallbacks; /* signals sent by the kernel after cuStreamWriteValue64 failed */
	const char *first_err;     /* the first failed step, and its error code */
	int first_code, memop_code;
};

/* Count a failed step of the proxy thread; the first one is kept for ftmissing_proxy_diag. */
static void proxy_fail(struct ftmissing_proxy *p, const char *what, int code)
{
	if (!p->errors) {
		p->first_err = what;
		p->first_code = code;
	}
	p->errors++;
}

/* Grid: one block of FTMISSING_PUBLISH_BLOCK threads. The plan's head (head_of's fixed16 and
 * per16) goes into the mailbox for the thread and into seq[5], seq[6] for the SM kernel that
 * follows on the stream. */
__global__ void publish_kernel(struct mailbox *mb, long long *seq, int layer, unsigned ce_mask, int merge,
			       unsigned long long head16, unsigned long long per16, const int32_t *__restrict__ src,
			       const int32_t *__restrict__ dst, const int32_t *__restrict__ num, int max_n)
{
	int n = *num;
	n = n < 0 ? 0 : n < max_n ? n : max_n;
	for (int i = threadIdx.x; i < n; i += blockDim.x) {
		mb->plan[i] = src[i];
		mb->plan[max_n + i] = dst[i];
	}
	__threadfence_system();
	__syncthreads();
	if (threadIdx.x == 0) {
		long long s = seq[0] + 1;
		seq[0] = s;
		mb->layer = layer;
		mb->n = n;
		mb->ce_mask = ce_mask;
		mb->merge = merge;
		mb->head16 = head16;
		mb->per16 = per16;
		seq[5] = (long long)head16;
		seq[6] = (long long)per16;
		__threadfence_system();
		mb->seq = s;
	}
}

/* Grid: one thread. Waits until done >= published, polling every sleep_ns. */
__global__ void wait_kernel(long long *seq, unsigned sleep_ns)
{
	volatile long long *v = seq;
	long long want = v[0];
	unsigned long long t0, t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
	while (v[1] < want) {
		if (sleep_ns)
			__nanosleep(sleep_ns);
		asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
		if (t - t0 > FTMISSING_WAIT_TIMEOUT_NS) {
			if (atomicAdd((unsigned long long *)&seq[2], 1ull) == 0) {
				seq[3] = want;
				seq[4] = v[1];
			}
			break;
		}
	}
	__threadfence();
}

/* Grid: one thread. */
__global__ void signal_kernel(long long *seq, long long value)
{
	__threadfence();
	((volatile long long *)seq)[1] = value;
}

/* Turn plan (src, dst)[n] into copies of the banks in ce_mask: bank-major; with merge, a run of
 * entries whose src and dst rows are both consecutive becomes one copy; with a head (head16 or
 * per16), each row from its head on (head_of; the SM kernel copies the head). Returns the count. */
static int build_copies(struct ftmissing_proxy *p, int layer, int n, unsigned ce_mask, int merge,
			unsigned long long head16, unsigned long long per16)
{
	const struct ftmissing *c = p->c;
	unsigned long long ce16 = 0, sm16 = 0;
	for (int b = 0; (head16 || per16) && b < c->nbanks; b++)
		if (ce_mask >> b & 1)
			ce16 += c->banks[layer * c->nbanks + b].row_bytes / 16;
		else
			sm16 += c->banks[layer * c->nbanks + b].row_bytes / 16;
	int k = 0;
	for (int b = 0; b < c->nbanks; b++) {
		if (!(ce_mask >> b & 1))
			continue;
		const struct ftmissing_bank *bk = &c->banks[layer * c->nbanks + b];
		const size_t h = (size_t)head_of((unsigned)(bk->row_bytes / 16), ce16, sm16, n, head16, per16) * 16;
		for (int i = 0; i < n;) {
			int sr = p->hsrc[i], ds = p->hdst[i], j = i + 1;
			if (merge && !h)
				while (j < n && p->hsrc[j] == sr + (j - i) && p->hdst[j] == ds + (j - i))
					j++;
			p->dsts[k] = (unsigned char *)bk->pool + (size_t)ds * bk->row_bytes + h;
			p->srcs[k] = (const unsigned char *)bk->host + (size_t)sr * bk->row_bytes + h;
			p->sizes[k] = (size_t)(j - i) * bk->row_bytes - h;
			k++;
			i = j;
		}
	}
	return k;
}

extern "C" void ftmissing_h2d_batch_attrs(struct cudaMemcpyAttributes *at, int device)
{
	memset(at, 0, sizeof *at);
	at->srcAccessOrder = cudaMemcpySrcAccessOrderStream;
	at->srcLocHint.type = cudaMemLocationTypeHost;
	at->dstLocHint.type = cudaMemLocationTypeDevice;
	at->dstLocHint.id = device;
}

static long long mono_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long long)t.tv_sec * 1000000000ll + t.tv_nsec;
}

/* Sleep until p->bell differs from seen, or ns nanoseconds (0: FTMISSING_IDLE_CHECK_NS). */
static void bell_wait(struct ftmissing_proxy *p, unsigned seen, long long ns)
{
	if (ns <= 0)
		ns = FTMISSING_IDLE_CHECK_NS;
	struct timespec ts = {(time_t)(ns / 1000000000ll), (long)(ns % 1000000000ll)};
	p->sleeps++;
	long r = syscall(SYS_futex, &p->bell, FUTEX_WAIT_PRIVATE, seen, &ts, NULL, 0);
	p->wakes += r == 0 || errno == EAGAIN;
}

/* The doorbell: one ring per plan announced, from ftmissing_proxy_copy's thread or (in a graph)
 * from a host node that runs beside the publish kernel. */
static void CUDART_CB ring_bell(void *arg)
{
	struct ftmissing_proxy *p = (struct ftmissing_proxy *)arg;
	__atomic_add_fetch(&p->bell, 1u, __ATOMIC_SEQ_CST);
	syscall(SYS_futex, &p->bell, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* The last plan's copy rate, once its end event has passed (the plan after it can only have
 * been published after that one's wait kernel saw it done). */
static void learn_rate(struct ftmissing_proxy *p)
{
	float ms = 0;
	if (!p->timed)
		return;
	p->timed = 0;
	if (cudaEventQuery(p->t1) != cudaSuccess || cudaEventElapsedTime(&ms, p->t0, p->t1) != cudaSuccess) {
		cudaGetLastError();
		return;
	}
	if (ms > 0.05f && p->timed_bytes > 0) /* plans under 50 us say more about latency than rate */
		p->gbs = p->timed_bytes / (ms * 1e-3) / 1e9;
}

/* Idle policy. The doorbell counts the plans announced (one ring per ftmissing_proxy_copy: by the
 * caller as it enqueues, or by a graph's host node), the mailbox's sequence number the plans
 * published: while a plan is announced and not yet seen, the thread polls for it. Otherwise:
 * spin_us > 0: it sleeps through the copies it issued (until FTMISSING_WAKE_EARLY_NS before their
 * end, predicted from the learned rate), polls until spin_us after that end, then sleeps on the
 * doorbell (futex); spin_us = 0: it sleeps on the doorbell as soon as it has issued a plan;
 * spin_us < 0: it polls all the time (the first proxy). */
static void *proxy_main(void *arg)
{
	struct ftmissing_proxy *p = (struct ftmissing_proxy *)arg;
	long long last = 0, busy_until = 0, poll_until = 0;
	cudaSetDevice(p->device);
	prctl(PR_SET_TIMERSLACK, 1000ul, 0, 0, 0); /* timed wake-ups within ~1 us, not 50 */
	struct cudaMemcpyAttributes at;
	ftmissing_h2d_batch_attrs(&at, p->device);
	while (!p->stop) {
		unsigned rung = __atomic_load_n(&p->bell, __ATOMIC_SEQ_CST);
		long long s = p->mb->seq;
		if (s == last) {
			int spin = p->spin_us;
			long long now = spin < 0 ? 0 : mono_ns(), until = 0;
			if ((int)(rung - (unsigned)last) > 0) { /* the next plan is announced: poll for it */
				if (!poll_until)
					poll_until = now + FTMISSING_BELL_POLL_NS;
				if (spin < 0 || now < poll_until)
					__builtin_ia32_pause();
				else /* late (a busy GPU, or a publish that failed): poll gently */
					bell_wait(p, rung, FTMISSING_LATE_POLL_NS);
				continue;
			}
			if (spin < 0 || (spin > 0 && now >= busy_until - FTMISSING_WAKE_EARLY_NS &&
					 now < busy_until + spin * 1000ll)) {
				__builtin_ia32_pause();
				continue;
			}
			if (spin > 0 && now < busy_until - FTMISSING_WAKE_EARLY_NS)
				until = busy_until - FTMISSING_WAKE_EARLY_NS - now;
			bell_wait(p, rung, until);
			continue;
		}
		poll_until = 0;
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		int layer = p->mb->layer, n = p->mb->n, merge = p->mb->merge;
		unsigned ce_mask = p->mb->ce_mask;
		unsigned long long head16 = p->mb->head16, per16 = p->mb->per16;
		if (layer < 0 || layer >= p->c->layers || n < 0 || n > p->max_n) {
			proxy_fail(p, "mailbox (layer or count out of range)", n);
			n = 0;
		}
		if (s != last + 1) { /* each publish waits for the plan before it: never seen */
			p->skipped += s - last - 1;
			proxy_fail(p, "mailbox (a plan was skipped)", (int)(s - last));
		}
		memcpy(p->hsrc, p->mb->plan, (size_t)n * sizeof *p->hsrc);
		memcpy(p->hdst, p->mb->plan + p->max_n, (size_t)n * sizeof *p->hdst);
		int k = n ? build_copies(p, layer, n, ce_mask, merge, head16, per16) : 0;
		size_t idx = 0;
		double bytes = 0;
		for (int i = 0; i < k; i++)
			bytes += (double)p->sizes[i];
		learn_rate(p);
		cudaError_t ce;
		if (k && (ce = cudaEventRecord(p->t0, p->cs)) != cudaSuccess)
			proxy_fail(p, "cudaEventRecord", ce);
		if (k == 1 &&
		    (ce = cudaMemcpyAsync(p->dsts[0], p->srcs[0], p->sizes[0], cudaMemcpyHostToDevice, p->cs)))
			proxy_fail(p, "cudaMemcpyAsync", ce);
		if (k > 1 && (ce = cudaMemcpyBatchAsync((void *const *)p->dsts, (const void *const *)p->srcs, p->sizes,
							(size_t)k, &at, &idx, 1, p->cs)) != cudaSuccess)
			proxy_fail(p, "cudaMemcpyBatchAsync", ce);
		if (k && (ce = cudaEventRecord(p->t1, p->cs)) != cudaSuccess)
			proxy_fail(p, "cudaEventRecord", ce);
		p->timed = k > 0;
		p->timed_bytes = bytes;
		p->batches++;
		p->copies += k;
		int sent = 0;
		if (p->signal == FTMISSING_SIGNAL_MEMOP && p->write64) {
			CUresult cr = p->write64((CUstream)p->cs, (CUdeviceptr)(p->d_seq + 1), (cuuint64_t)s, 0);
			sent = cr == CUDA_SUCCESS;
			if (!sent) { /* the kernel signal still delivers this plan's number (counted) */
				p->memop_fallbacks++;
				p->memop_code = (int)cr;
			}
		}
		if (!sent) {
			signal_kernel<<<1, 1, 0, p->cs>>>(p->d_seq, s);
			if ((ce = cudaGetLastError()) != cudaSuccess)
				proxy_fail(p, "signal kernel launch", ce);
		}
		busy_until = mono_ns() + (long long)(bytes / p->gbs);
		last = s;
		p->seen = s;
	}
	return NULL;
}

extern "C" void ftmissing_proxy_default_opts(struct ftmissing_proxy_opts *o)
{
	o->sm_below = FTMISSING_PROXY_SPLIT_BYTES;
	o->merge = 1;
	o->signal = FTMISSING_SIGNAL_MEMOP;
	o->wait_sleep_ns = FTMISSING_PROXY_WAIT_SLEEP_NS;
	o->spin_us = FTMISSING_PROXY_SPIN_US;
	o->sm_head = FTMISSING_PROXY_HEAD_BYTES;
	o->sm_head_entry = FTMISSING_PROXY_HEAD_ENTRY_BYTES;
}

extern "C" int ftmissing_proxy_opts_ok(const struct ftmissing_proxy_opts *o)
{
	return o && o->wait_sleep_ns >= 0 && o->wait_sleep_ns <= 1000000 && o->spin_us >= -1 &&
	       o->spin_us <= 1000000 && o->sm_head <= FTMISSING_PROXY_HEAD_MAX &&
	       o->sm_head_entry <= FTMISSING_PROXY_HEAD_MAX &&
	       (o->signal == FTMISSING_SIGNAL_KERNEL || o->signal == FTMISSING_SIGNAL_MEMOP);
}

extern "C" cudaError_t ftmissing_proxy_set_opts(struct ftmissing_proxy *p, const struct ftmissing_proxy_opts *o)
{
	if (!p || !ftmissing_proxy_opts_ok(o))
		return cudaErrorInvalidValue;
	p->opts = *o;
	p->signal = o->signal;
	p->spin_us = o->spin_us; /* a sleeping thread takes it at its next wake-up */
	return cudaSuccess;
}

extern "C" int ftmissing_proxy_signal(const struct ftmissing_proxy *p)
{
	return p && p->opts.signal == FTMISSING_SIGNAL_MEMOP && p->write64 ? FTMISSING_SIGNAL_MEMOP : FTMISSING_SIGNAL_KERNEL;
}

extern "C" void ftmissing_proxy_stats(const struct ftmissing_proxy *p, long long *batches, long long *copies)
{
	*batches = p ? p->batches : 0;
	*copies = p ? p->copies : 0;
}

extern "C" void ftmissing_proxy_idle_stats(const struct ftmissing_proxy *p, long long *sleeps, long long *wakes, double *gbs)
{
	*sleeps = p ? p->sleeps : 0;
	*wakes = p ? p->wakes : 0;
	*gbs = p ? p->gbs : 0;
}

/* A driver entry point through the runtime (no -lcuda), or NULL. */
static void *driver_fn(const char *name)
{
	void *fn = NULL;
	enum cudaDriverEntryPointQueryResult q;
	if (cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &q) != cudaSuccess ||
	    q != cudaDriverEntryPointSuccess) {
		cudaGetLastError();
		return NULL;
	}
	return fn;
}

/* cuStreamWriteValue64 when the device supports 64-bit stream memory operations; else NULL
 * (the signal kernel is used). */
static write_value64_fn find_write64(int dev)
{
	typedef CUresult (*get_fn)(CUdevice *, int);
	typedef CUresult (*attr_fn)(int *, CUdevice_attribute, CUdevice);
	get_fn get = (get_fn)driver_fn("cuDeviceGet");
	attr_fn attr = (attr_fn)driver_fn("cuDeviceGetAttribute");
	CUdevice d;
	int ok = 0;
	if (!get || !attr || get(&d, dev) != CUDA_SUCCESS ||
	    attr(&ok, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, d) != CUDA_SUCCESS || !ok)
		return NULL;
	return (write_value64_fn)driver_fn("cuStreamWriteValue64");
}

/* Load every kernel the proxy path launches now. With lazy module loading (CUDA's default) a
 * kernel is loaded at its first launch, and a load may wait for the whole context to go idle
 * (CUDA programming guide, lazy loading: concurrent execution): a first launch while a wait
 * kernel spins (the kernel signal from the proxy thread, or the SM part of a later plan enqueued
 * behind a waiting one) would then wait for that wait kernel, which waits for the signal, until
 * its 10 s timeout. */
static cudaError_t preload_kernels(void)
{
	struct cudaFuncAttributes a;
	cudaError_t e;
	if ((e = cudaFuncGetAttributes(&a, publish_kernel)) || (e = cudaFuncGetAttributes(&a, wait_kernel)) ||
	    (e = cudaFuncGetAttributes(&a, signal_kernel)) || (e = ftmissing_preload_gather_kernels()))
		return e;
	return cudaSuccess;
}

extern "C" int ftmissing_proxy_usable(void)
{
	const char *v = getenv("CUDA_DEVICE_MAX_CONNECTIONS");
	return !(v && atoi(v) == 1);
}

extern "C" cudaError_t ftmissing_proxy_create(struct ftmissing_proxy **out, const struct ftmissing *c, int max_n)
{
	*out = NULL;
	if (!c || max_n <= 0)
		return cudaErrorInvalidValue;
	if (!ftmissing_proxy_usable())
		return cudaErrorNotSupported;
	struct ftmissing_proxy *p = (struct ftmissing_proxy *)calloc(1, sizeof *p);
	if (!p)
		return cudaErrorMemoryAllocation;
	p->c = c;
	p->max_n = max_n;
	ftmissing_proxy_default_opts(&p->opts);
	p->signal = p->opts.signal;
	p->spin_us = p->opts.spin_us;
	p->gbs = FTMISSING_RATE_GUESS_GBS;
	size_t k = (size_t)max_n * c->nbanks;
	p->dsts = (void **)malloc(k * sizeof *p->dsts);
	p->srcs = (const void **)malloc(k * sizeof *p->srcs);
	p->sizes = (size_t *)malloc(k * sizeof *p->sizes);
	p->hsrc = (int32_t *)malloc((size_t)max_n * sizeof *p->hsrc);
	p->hdst = (int32_t *)malloc((size_t)max_n * sizeof *p->hdst);
	cudaError_t e = cudaSuccess;
	if (!p->dsts || !p->srcs || !p->sizes || !p->hsrc || !p->hdst)
		e = cudaErrorMemoryAllocation;
	if (!e)
		e = cudaHostAlloc((void **)&p->mb, sizeof *p->mb + 2 * sizeof(int32_t) * max_n, cudaHostAllocMapped);
	if (!e) {
		memset((void *)p->mb, 0, sizeof *p->mb);
		e = cudaHostGetDevicePointer((void **)&p->mb_dev, p->mb, 0);
	}
	if (!e)
		e = cudaMalloc((void **)&p->d_seq, FTMISSING_SEQ_WORDS * sizeof(long long));
	if (!e)
		e = cudaMemset(p->d_seq, 0, FTMISSING_SEQ_WORDS * sizeof(long long));
	if (!e)
		e = preload_kernels();
	if (!e)
		e = cudaStreamCreateWithFlags(&p->cs, cudaStreamNonBlocking);
	if (!e)
		e = cudaStreamCreateWithFlags(&p->bs, cudaStreamNonBlocking);
	if (!e)
		e = cudaEventCreateWithFlags(&p->ev_fork, cudaEventDisableTiming);
	if (!e)
		e = cudaEventCreateWithFlags(&p->ev_join, cudaEventDisableTiming);
	if (!e)
		e = cudaEventCreate(&p->t0);
	if (!e)
		e = cudaEventCreate(&p->t1);
	if (!e)
		e = cudaGetDevice(&p->device);
	if (!e)
		p->write64 = find_write64(p->device);
	if (!e && pthread_create(&p->th, NULL, proxy_main, p))
		e = cudaErrorOperatingSystem;
	if (e) {
		ftmissing_proxy_destroy(p);
		return e;
	}
	p->started = 1;
	*out = p;
	return cudaSuccess;
}

extern "C" void ftmissing_proxy_destroy(struct ftmissing_proxy *p)
{
	if (!p)
		return;
	if (p->started) {
		p->stop = 1;
		__atomic_add_fetch(&p->bell, 1u, __ATOMIC_SEQ_CST);
		syscall(SYS_futex, &p->bell, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
		pthread_join(p->th, NULL);
	}
	if (p->cs) {
		cudaStreamSynchronize(p->cs);
		cudaStreamDestroy(p->cs);
	}
	if (p->bs) {
		cudaStreamSynchronize(p->bs);
		cudaStreamDestroy(p->bs);
	}
	if (p->ev_fork)
		cudaEventDestroy(p->ev_fork);
	if (p->ev_join)
		cudaEventDestroy(p->ev_join);
	if (p->t0)
		cudaEventDestroy(p->t0);
	if (p->t1)
		cudaEventDestroy(p->t1);
	cudaFree(p->d_seq);
	cudaFreeHost(p->mb);
	free(p->dsts);
	free(p->srcs);
	free(p->sizes);
	free(p->hsrc);
	free(p->hdst);
	free(p);
}

extern "C" cudaError_t ftmissing_proxy_copy(struct ftmissing_proxy *p, int layer, const int32_t *src, const int32_t *dst,
				       const int32_t *num, cudaStream_t s)
{
	if (!p || layer < 0 || layer >= p->c->layers || !src || !dst || !num)
		return cudaErrorInvalidValue;
	const struct ftmissing *c = p->c;
	const unsigned all = (1u << c->nbanks) - 1;
	unsigned ce = 0;
	for (int b = 0; b < c->nbanks; b++)
		if (c->banks[layer * c->nbanks + b].row_bytes >= p->opts.sm_below)
			ce |= 1u << b;
	/* The doorbell: rung by this thread once the publish and SM kernels are enqueued (on an idle
	 * GPU the ring's system call would otherwise delay them; the SM kernel covers the thread's
	 * wake-up), or, in a capture, by a host node on a stream of its own (forked here, joined
	 * after the wait kernel) that runs beside the publish kernel. The woken thread polls for the
	 * plan. */
	enum cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
	cudaError_t e = cudaStreamIsCapturing(s, &cap);
	const int captured = cap == cudaStreamCaptureStatusActive;
	if (!e && captured)
		e = cudaEventRecord(p->ev_fork, s);
	if (!e && captured)
		e = cudaStreamWaitEvent(p->bs, p->ev_fork, 0);
	if (!e && captured)
		e = cudaLaunchHostFunc(p->bs, ring_bell, p);
	if (!e && captured)
		e = cudaEventRecord(p->ev_join, p->bs);
	if (e)
		return e;
	/* the head: fused path only (the head's kernel reads the fused table), some banks on the engines */
	const int headed = c->fused && c->d_tabs && ce && (p->opts.sm_head >= 16 || p->opts.sm_head_entry >= 16);
	const unsigned long long head16 = headed ? p->opts.sm_head / 16 : 0, per16 = headed ? p->opts.sm_head_entry / 16 : 0;
	publish_kernel<<<1, FTMISSING_PUBLISH_BLOCK, 0, s>>>(p->mb_dev, p->d_seq, layer, ce, p->opts.merge ? 1 : 0,
							head16, per16, src, dst, num, p->max_n);
	if ((e = cudaGetLastError())) /* no plan published: no ring */
		return e;
	/* the small banks (and the heads): SM gather on the caller's stream, concurrent with the
	 * copy engines */
	if (!e && headed) {
		if ((unsigned long long)c->e16 * (unsigned long long)p->max_n >= (1ull << 32))
			e = cudaErrorInvalidValue;
		else
			e = ftmissing_launch_fused_rest(c, layer, all & ~ce, ce, (const unsigned long long *)(p->d_seq + 5),
							src, dst, num, p->max_n, s);
	} else if (!e && ce != all)
		e = ftmissing_copy_banks(c, c->fused, 0, layer, all & ~ce, src, dst, num, p->max_n, s);
	if (!captured) /* the plan is published (the thread must see it, whatever failed after) */
		ring_bell(p);
	if (e)
		return e;
	wait_kernel<<<1, 1, 0, s>>>(p->d_seq, (unsigned)p->opts.wait_sleep_ns);
	if ((e = cudaGetLastError()) || !captured)
		return e;
	return cudaStreamWaitEvent(s, p->ev_join, 0); /* joins the doorbell's stream to the capture */
}
extern "C" int ftmissing_proxy_errors(const struct ftmissing_proxy *p)
{
	long long t = 0;
	if (p && p->d_seq)
		cudaMemcpy(&t, p->d_seq + 2, sizeof t, cudaMemcpyDeviceToHost);
	return (p ? p->errors : 0) + (int)t;
}

extern "C" int ftmissing_proxy_diag(const struct ftmissing_proxy *p, char *buf, size_t len)
{
	long long d[FTMISSING_SEQ_WORDS] = {0};
	if (!buf || !len)
		return 0;
	buf[0] = 0;
	if (!p)
		return 0;
	cudaError_t e = cudaMemcpy(d, p->d_seq, sizeof d, cudaMemcpyDeviceToHost);
	int u = snprintf(buf, len, "plans published %lld, signalled done %lld%s; the thread handled %lld (mailbox at %lld, "
			 "doorbell %u, %lld skipped); issue errors %d",
			 d[0], d[1], e ? " (device counters unreadable)" : "", (long long)p->seen, (long long)p->mb->seq,
			 __atomic_load_n(&p->bell, __ATOMIC_SEQ_CST), p->skipped, (int)p->errors);
	if (p->errors && u >= 0 && (size_t)u < len)
		u += snprintf(buf + u, len - u, " (first: %s, error %d)", p->first_err ? p->first_err : "?", p->first_code);
	if (u >= 0 && (size_t)u < len)
		u += snprintf(buf + u, len - u, "; wait timeouts %lld", d[2]);
	if (d[2] && u >= 0 && (size_t)u < len)
		u += snprintf(buf + u, len - u, " (the first waited for %lld, saw done %lld)", d[3], d[4]);
	if (!e && p->seen > d[1] && !p->errors && u >= 0 && (size_t)u < len)
		u += snprintf(buf + u, len - u, "; plans up to %lld were issued and not signalled: their copies or "
			      "signal queued behind the waiting stream (a hardware queue shared with it?)",
			      (long long)p->seen);
	if (p->memop_fallbacks && u >= 0 && (size_t)u < len)
		u += snprintf(buf + u, len - u, "; memop signal failed %lld times (CUresult %d), sent by kernel",
			      p->memop_fallbacks, p->memop_code);
	if (u >= 0 && (size_t)u < len)
		u += snprintf(buf + u, len - u, "; thread sleeps %lld, doorbell wake-ups %lld", p->sleeps, p->wakes);
	return u;
}
