/* runner: the GPU step runner of `ftbench replay` (replay.h, ftrp_gpu_ops; docs/REPLAY.md §2). */
#include "replay/replay.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#ifdef FT_HAVE_CUDA
#include <cuda_runtime_api.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "bench/cpu_moe.h"
#include "copy_missing.h"
#include "moe/cpu/cpumoe.h"
#include "moe/cpu/pool.h"
#include "replay_step.h"
#include "slot_cache.h"
#include "util/timeutil.h"
#ifdef FT_HAVE_GEMV /* the Makefile defines it when kernels/expert_gemv.cu exists */
#include "expert_gemv.h"
#define FTRP_HAVE_GEMV 1
#endif

#define HOST_ALIGN 4096
#define FILL_THREADS 16
#define IDLE_SPINS (1 << 20) /* empty polls before the coordinator naps (50 us) */

struct runner {
	struct ftrp_gpu_opts o;
	int device;
	const struct ftfmt *fmt;
	long H, I;
	int E, K, L, B, nb, hl, registered;
	enum ftfmt_act act;
	float limit;
	struct ftfmt_bank_shape sh[FTFMT_MAX_BANKS];
	size_t eb, off[FTFMT_MAX_BANKS], host_bytes;
	unsigned char **host;
	double alloc_s, fill_s, pin_s;
	long slots_max;
	void *pool[FTFMT_MAX_BANKS];
	struct ftmissing *cm;
	int fused;
	cudaStream_t st;
	cudaEvent_t *ev;
	int nev;
	float *d_x, *d_y, *d_cpu_out, *d_gpu_w, *d_w_all, *d_fetch_pad;
	int32_t *d_slots, *d_cpu_ids, *d_ids_all;
	size_t ids_cap;
	long long *d_acc;
	void *d_scratch;
	float *h_x, *h_y, *h_w;
	int32_t *h_ids;
	long long *h_ready, *h_done;
	const void **bank_ptrs;
	/* the coordinator: the CPU pool's worker 0 */
	pthread_t th;
	int th_started;
	atomic_int stop, init, cpu_err;
	struct ftpool *cpool;
	struct ftcpumoe *moe;
	char isa[24];
	int threads;
	/* the engine's CPU path (ftrp_gpu_opts.cpu_pad_*): what the coordinator spent and held */
	double svc_ours_s, svc_paced_s;
	long svc_layers;
#ifdef FTRP_HAVE_GEMV
	struct ftgemv_experts ge; /* over the pools of slots_max slots (a run's cache uses the first ones) */
#endif
};

static const char *cerr(cudaError_t e)
{
	return cudaGetErrorString(e);
}

/* ---- host banks */

struct fill_job {
	struct runner *r;
	int tid, n;
};

static void *fill_main(void *arg)
{
	struct fill_job *j = arg;
	struct runner *r = j->r;
	for (int h = 0; h < r->hl; h++)
		for (int b = 0; b < r->nb; b++) {
			size_t row = r->sh[b].expert_bytes;
			for (int e = j->tid; e < r->E; e += j->n)
				ftmoebench_fill(r->fmt->id, &r->sh[b], r->host[h] + r->off[b] + (size_t)e * row, row,
						0x5EEDull * (uint64_t)(h + 1) + (uint64_t)b * 7919u + (uint64_t)e * 104729u);
		}
	return NULL;
}

static int fill_banks(struct runner *r)
{
	pthread_t th[FILL_THREADS];
	struct fill_job j[FILL_THREADS];
	int n = r->o.ncpus > 0 && r->o.ncpus < FILL_THREADS ? r->o.ncpus : FILL_THREADS, started = 0;
	for (int i = 0; i < n; i++) {
		j[i] = (struct fill_job){r, i, n};
		if (i > 0 && pthread_create(&th[i], NULL, fill_main, &j[i]) == 0)
			started |= 1 << i;
	}
	fill_main(&j[0]);
	for (int i = 1; i < n; i++) {
		if (started & (1 << i))
			pthread_join(th[i], NULL);
		else
			fill_main(&j[i]);
	}
	return 0;
}

/* ---- the coordinator */

/* The engine's time for a layer-step with n CPU routes (seconds): the table, past its end the
 * last entry's slope. */
static double pad_s(const struct runner *r, int n)
{
	const double *t = r->o.cpu_pad_us;
	int k = r->o.cpu_pad_n;
	if (n < k)
		return t[n] * 1e-6;
	double slope = k > 1 ? t[k - 1] - t[k - 2] : 0;
	return (t[k - 1] + slope * (n - (k - 1))) * 1e-6;
}

/* Hold the layer's result until the engine's CPU path would have answered (t0: the doorbell). */
static void pace(struct runner *r, double t0)
{
	int n = 0;
	for (int i = 0; i < r->B * r->K; i++)
		n += r->h_ids[i] >= 0;
	double want = pad_s(r, n), now = fttime_now_s();
	r->svc_ours_s += now - t0;
	while (now - t0 < want) {
#if defined(__x86_64__) || defined(__i386__)
		__builtin_ia32_pause();
#endif
		now = fttime_now_s();
	}
	r->svc_paced_s += now - t0;
	r->svc_layers++;
}

static void *coord_main(void *arg)
{
	struct runner *r = arg;
	/* One core is left to the thread that launches the GPU work (the seed's engine likewise gives
	 * its pool N - 1 cores and one to its coordinator): the pool's worker 0 is our coordinator. */
	int n = r->o.cpus && r->o.ncpus > 0 ? r->o.ncpus : r->o.cpu->physical_cores;
	if (n > 2)
		n--;
	int rc = r->o.cpus && r->o.ncpus > 0 ? ftpool_create_on(r->o.cpus, n, &r->cpool)
					     : ftpool_create(r->o.cpu, n, -1, &r->cpool);
	if (!rc)
		rc = ftpool_pin_caller(r->cpool);
	if (!rc) {
		struct ftcpumoe_cfg cfg = {.format = r->fmt->id, .hidden = r->H, .inter = r->I, .experts = r->E,
					   .layers = r->L, .banks = r->bank_ptrs, .act = r->act, .swiglu_limit = r->limit,
					   .max_batch = r->B, .max_topk = r->K, .isa = FTCPUMOE_ISA_AUTO, .pool = r->cpool,
					   .cpu = r->o.cpu, .tune = r->o.tune};
		rc = ftcpumoe_create(&cfg, &r->moe);
	}
	if (!rc) {
		snprintf(r->isa, sizeof r->isa, "%s", ftcpumoe_isa_name(ftcpumoe_isa(r->moe)));
		r->threads = ftpool_size(r->cpool);
	}
	atomic_store(&r->init, rc ? rc : 1);
	if (rc)
		return NULL;
	long idle = 0;
	while (!atomic_load_explicit(&r->stop, memory_order_relaxed)) {
		int any = 0;
		for (int l = 0; l < r->L; l++) {
			if (!__atomic_load_n(&r->h_ready[l], __ATOMIC_ACQUIRE))
				continue;
			__atomic_store_n(&r->h_ready[l], 0, __ATOMIC_RELAXED);
			double t0 = r->o.cpu_pad_n > 0 ? fttime_now_s() : 0;
			int e = ftcpumoe_forward(r->moe, l, r->B, r->K, r->h_x, r->h_ids, r->h_w, r->h_y);
			if (e)
				atomic_store(&r->cpu_err, e);
			if (r->o.cpu_pad_n > 0)
				pace(r, t0);
			__atomic_store_n(&r->h_done[l], 1, __ATOMIC_RELEASE);
			any = 1;
		}
		if (any) {
			idle = 0;
		} else if (++idle > IDLE_SPINS) {
			usleep(50);
		} else {
#if defined(__x86_64__) || defined(__i386__)
			__builtin_ia32_pause();
#endif
		}
	}
	return NULL;
}

/* ---- ops */

static void r_close(void *ctx)
{
	struct runner *r = ctx;
	if (r->th_started) {
		atomic_store(&r->stop, 1);
		pthread_join(r->th, NULL);
		r->th_started = 0;
	}
	ftcpumoe_free(r->moe);
	ftpool_free(r->cpool);
	r->moe = NULL;
	r->cpool = NULL;
	if (r->st)
		cudaStreamSynchronize(r->st);
	ftmissing_destroy(r->cm);
	r->cm = NULL;
	for (int b = 0; b < FTFMT_MAX_BANKS; b++) {
		cudaFree(r->pool[b]);
		r->pool[b] = NULL;
	}
	void *dev[] = {r->d_x, r->d_y, r->d_cpu_out, r->d_gpu_w, r->d_w_all, r->d_slots, r->d_cpu_ids, r->d_ids_all,
		       r->d_acc, r->d_scratch, r->d_fetch_pad};
	for (size_t i = 0; i < sizeof dev / sizeof *dev; i++)
		cudaFree(dev[i]);
	void *hp[] = {r->h_x, r->h_y, r->h_w, r->h_ids, r->h_ready, r->h_done};
	for (size_t i = 0; i < sizeof hp / sizeof *hp; i++)
		cudaFreeHost(hp[i]);
	r->d_x = r->d_y = r->d_cpu_out = r->d_gpu_w = r->d_w_all = r->d_fetch_pad = NULL;
	r->d_slots = r->d_cpu_ids = r->d_ids_all = NULL;
	r->d_acc = NULL;
	r->d_scratch = NULL;
	r->h_x = r->h_y = r->h_w = NULL;
	r->h_ids = NULL;
	r->h_ready = r->h_done = NULL;
	r->ids_cap = 0;
	for (int h = 0; r->host && h < r->hl; h++) {
		if (!r->host[h])
			continue;
		if (r->registered) {
			cudaHostUnregister(r->host[h]);
			munmap(r->host[h], r->host_bytes);
		} else {
			cudaFreeHost(r->host[h]);
		}
	}
	free(r->host);
	r->host = NULL;
	free(r->bank_ptrs);
	r->bank_ptrs = NULL;
	for (int i = 0; i < r->nev; i++)
		cudaEventDestroy(r->ev[i]);
	free(r->ev);
	r->ev = NULL;
	r->nev = 0;
	if (r->st)
		cudaStreamDestroy(r->st);
	r->st = NULL;
	cudaGetLastError();
}

static int r_open(void *ctx, const struct ftrp_config *c, long slots_max, char *err, size_t errlen)
{
	struct runner *r = ctx;
	cudaError_t ce;
	double t0;
#ifndef FTRP_HAVE_GEMV
	snprintf(err, errlen, "this ftbench was built without the GPU expert GEMV kernels (kernels/expert_gemv.h)");
	return -ENOTSUP;
#endif
	r->fmt = c->fmt;
	r->H = c->model->hidden;
	r->I = c->model->inter;
	r->E = c->model->experts;
	r->K = c->model->topk;
	r->L = c->layers;
	r->B = c->batch;
	r->act = c->model->act;
	r->limit = c->model->swiglu_limit;
	r->slots_max = slots_max;
	r->nb = ftfmt_banks(c->fmt, r->H, r->I, r->sh);
	if (r->nb <= 0) {
		snprintf(err, errlen, "%s does not fit H %ld, I %ld", c->fmt->name, r->H, r->I);
		return -EINVAL;
	}
	r->eb = 0;
	r->host_bytes = 0;
	for (int b = 0; b < r->nb; b++) {
		r->off[b] = r->host_bytes;
		r->host_bytes += ((size_t)r->E * r->sh[b].expert_bytes + HOST_ALIGN - 1) / HOST_ALIGN * HOST_ALIGN;
		r->eb += r->sh[b].expert_bytes;
	}
	double want = (r->o.host_gib > 0 ? r->o.host_gib : 4) * 1073741824.0;
	r->hl = (int)ceil(want / (double)r->host_bytes);
	r->hl = r->hl < 1 ? 1 : r->hl > r->L ? r->L : r->hl;
	r->registered = !r->o.host_alloc || strcmp(r->o.host_alloc, "hostalloc") != 0;
	if ((ce = cudaSetDevice(r->device))) {
		snprintf(err, errlen, "GPU %d: %s", r->device, cerr(ce));
		return -ENODEV;
	}
	/* the banks: the engine's way (lazy mmap, fill, cudaHostRegister) or cudaHostAlloc */
	r->host = calloc((size_t)r->hl, sizeof *r->host);
	r->bank_ptrs = calloc((size_t)r->L * (size_t)r->nb, sizeof *r->bank_ptrs);
	if (!r->host || !r->bank_ptrs)
		return -ENOMEM;
	t0 = fttime_now_s();
	for (int h = 0; h < r->hl; h++) {
		if (r->registered) {
			void *p = mmap(NULL, r->host_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (p == MAP_FAILED) {
				snprintf(err, errlen, "mmap of %zu bytes for the host banks: %s", r->host_bytes, strerror(errno));
				return -ENOMEM;
			}
			r->host[h] = p;
		} else if ((ce = cudaHostAlloc((void **)&r->host[h], r->host_bytes, cudaHostAllocMapped | cudaHostAllocPortable))) {
			r->host[h] = NULL;
			snprintf(err, errlen, "cudaHostAlloc of %zu bytes: %s", r->host_bytes, cerr(ce));
			return -ENOMEM;
		}
	}
	r->alloc_s = fttime_now_s() - t0;
	t0 = fttime_now_s();
	fill_banks(r);
	r->fill_s = fttime_now_s() - t0;
	t0 = fttime_now_s();
	for (int h = 0; r->registered && h < r->hl; h++)
		if ((ce = cudaHostRegister(r->host[h], r->host_bytes, cudaHostRegisterPortable | cudaHostRegisterMapped))) {
			munmap(r->host[h], r->host_bytes);
			r->host[h] = NULL;
			snprintf(err, errlen, "cudaHostRegister of %zu bytes: %s", r->host_bytes, cerr(ce));
			return -ENOMEM;
		}
	r->pin_s = fttime_now_s() - t0;
	struct ftmissing_bank *mb = calloc((size_t)r->L * (size_t)r->nb, sizeof *mb);
	if (!mb)
		return -ENOMEM;
	for (int b = 0; b < r->nb; b++)
		if ((ce = cudaMalloc(&r->pool[b], (size_t)slots_max * r->sh[b].expert_bytes))) {
			free(mb);
			snprintf(err, errlen, "%ld slots of %zu bytes (bank %s) in GPU memory: %s", slots_max,
				 r->sh[b].expert_bytes, r->sh[b].name, cerr(ce));
			return -ENOMEM;
		}
	for (int l = 0; l < r->L; l++)
		for (int b = 0; b < r->nb; b++) {
			unsigned char *hp = r->host[l % r->hl] + r->off[b];
			void *dp = NULL;
			if ((ce = cudaHostGetDevicePointer(&dp, hp, 0))) {
				free(mb);
				snprintf(err, errlen, "device pointer of a host bank: %s", cerr(ce));
				return -EIO;
			}
			mb[l * r->nb + b] = (struct ftmissing_bank){dp, r->pool[b], r->sh[b].expert_bytes};
			r->bank_ptrs[l * r->nb + b] = hp;
		}
	char note[200];
	ce = ftmissing_create(&r->cm, mb, r->L, r->nb, ftmissing_env_fused(), note, sizeof note);
	free(mb);
	if (ce) {
		snprintf(err, errlen, "copy_missing context: %s", cerr(ce));
		return -EIO;
	}
	r->fused = ftmissing_is_fused(r->cm);
	size_t n = (size_t)r->B * (size_t)r->K, hb = (size_t)r->B * (size_t)r->H * sizeof(float);
	if ((ce = cudaStreamCreateWithFlags(&r->st, cudaStreamNonBlocking)) || (ce = cudaMalloc((void **)&r->d_x, hb)) ||
	    (ce = cudaMalloc((void **)&r->d_y, hb)) || (ce = cudaMalloc((void **)&r->d_cpu_out, hb)) ||
	    (ce = cudaMalloc((void **)&r->d_gpu_w, n * sizeof(float))) ||
	    (ce = cudaMalloc((void **)&r->d_slots, n * sizeof(int32_t))) ||
	    (ce = cudaMalloc((void **)&r->d_cpu_ids, n * sizeof(int32_t))) ||
	    (ce = cudaMalloc((void **)&r->d_acc, FTRS_ACC_N * sizeof(long long))) ||
	    (ce = cudaHostAlloc((void **)&r->h_x, hb, cudaHostAllocMapped)) ||
	    (ce = cudaHostAlloc((void **)&r->h_y, hb, cudaHostAllocMapped)) ||
	    (ce = cudaHostAlloc((void **)&r->h_w, n * sizeof(float), cudaHostAllocMapped)) ||
	    (ce = cudaHostAlloc((void **)&r->h_ids, n * sizeof(int32_t), cudaHostAllocMapped)) ||
	    (ce = cudaHostAlloc((void **)&r->h_ready, (size_t)r->L * sizeof(long long), cudaHostAllocMapped)) ||
	    (ce = cudaHostAlloc((void **)&r->h_done, (size_t)r->L * sizeof(long long), cudaHostAllocMapped))) {
		snprintf(err, errlen, "step buffers: %s", cerr(ce));
		return -ENOMEM;
	}
#ifdef FTRP_HAVE_GEMV
	r->ge = (struct ftgemv_experts){.fmt = r->fmt->id, .H = r->H, .I = r->I, .slots = (int)slots_max, .act = r->act,
					.swiglu_limit = r->limit};
	for (int b = 0; b < r->nb; b++)
		r->ge.pool[b] = r->pool[b];
	if ((ce = ftgemv_init(&r->ge))) {
		snprintf(err, errlen, "the GPU expert GEMV has no kernel for %s (H %ld, I %ld, %s): %s", r->fmt->name, r->H,
			 r->I, ftfmt_act_name(r->act), cerr(ce));
		return -ENOTSUP;
	}
	size_t scratch = ftgemv_scratch_bytes(&r->ge, r->B, r->K);
	if (scratch && (ce = cudaMalloc(&r->d_scratch, scratch))) {
		snprintf(err, errlen, "GEMV scratch: %s", cerr(ce));
		return -ENOMEM;
	}
#endif
	if (r->o.fetch_pad_n > 0) { /* the engine's hybrid bookkeeping per fetch count, us */
		float t[256];
		int nt = r->o.fetch_pad_n < 256 ? r->o.fetch_pad_n : 256;
		for (int i = 0; i < nt; i++)
			t[i] = (float)r->o.fetch_pad_us[i];
		if ((ce = cudaMalloc((void **)&r->d_fetch_pad, (size_t)nt * sizeof(float))) ||
		    (ce = cudaMemcpy(r->d_fetch_pad, t, (size_t)nt * sizeof(float), cudaMemcpyHostToDevice))) {
			snprintf(err, errlen, "the engine's fetch table: %s", cerr(ce));
			return -ENOMEM;
		}
	}
	memset(r->h_ready, 0, (size_t)r->L * sizeof(long long));
	memset(r->h_done, 0, (size_t)r->L * sizeof(long long));
	/* x: a fixed activation, |x| < 1 */
	uint64_t s = 0x243F6A8885A308D3ull;
	for (size_t i = 0; i < (size_t)r->B * (size_t)r->H; i++) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		r->h_x[i] = (float)((double)(s >> 11) / 9007199254740992.0 * 2 - 1);
	}
	if ((ce = cudaMemcpy(r->d_x, r->h_x, hb, cudaMemcpyHostToDevice)) || (ce = ftrs_preload())) {
		snprintf(err, errlen, "step buffers: %s", cerr(ce));
		return -EIO;
	}
	/* the CPU executor on its own thread (the pool's worker 0, which polls the doorbells) */
	if (pthread_create(&r->th, NULL, coord_main, r)) {
		snprintf(err, errlen, "cannot start the CPU coordinator thread");
		return -EAGAIN;
	}
	r->th_started = 1;
	while (!atomic_load(&r->init))
		usleep(100);
	int init = atomic_load(&r->init);
	if (init < 0) {
		snprintf(err, errlen, "CPU MoE executor: %s", strerror(-init));
		return init;
	}
	return 0;
}

#ifdef FTRP_HAVE_GEMV
static int ensure_events(struct runner *r, int n)
{
	if (r->nev >= n)
		return 0;
	cudaEvent_t *ev = realloc(r->ev, (size_t)n * sizeof *ev);
	if (!ev)
		return -ENOMEM;
	r->ev = ev;
	for (; r->nev < n; r->nev++)
		if (cudaEventCreate(&r->ev[r->nev]))
			return -EIO;
	return 0;
}
#endif

static int r_run(void *ctx, const struct ftsc *warm, const struct ftrp_workload *w, int untimed,
		 const struct ftrp_policy *p, double *step_s, struct ftrp_counts *cnt, char *err, size_t errlen)
{
#ifndef FTRP_HAVE_GEMV
	(void)ctx, (void)warm, (void)w, (void)untimed, (void)p, (void)step_s, (void)cnt;
	snprintf(err, errlen, "no GPU expert GEMV kernels in this build");
	return -ENOTSUP;
#else
	struct runner *r = ctx;
	struct ftsc_dev d;
	cudaError_t ce = cudaSuccess;
	int rc = 0;
	const int n = r->B * r->K, L = r->L;
	const size_t nid = (size_t)w->steps * (size_t)L * (size_t)n;
	memset(cnt, 0, sizeof *cnt);
	if (w->layers != L || w->batch != r->B || w->topk != r->K || w->experts != r->E || untimed >= w->steps) {
		snprintf(err, errlen, "workload shape differs from the runner's");
		return -EINVAL;
	}
	if ((ce = ftsc_dev_create(&d, L, r->E, warm->slots))) {
		snprintf(err, errlen, "slot cache of %d slots: %s", warm->slots, cerr(ce));
		return -ENOMEM;
	}
	if (nid > r->ids_cap) {
		cudaFree(r->d_ids_all);
		cudaFree(r->d_w_all);
		r->d_ids_all = NULL;
		r->d_w_all = NULL;
		r->ids_cap = 0;
		if ((ce = cudaMalloc((void **)&r->d_ids_all, nid * sizeof(int32_t))) ||
		    (ce = cudaMalloc((void **)&r->d_w_all, nid * sizeof(float)))) {
			snprintf(err, errlen, "routing of %zu routes: %s", nid, cerr(ce));
			rc = -ENOMEM;
			goto out;
		}
		r->ids_cap = nid;
	}
	float *wts = w->weights;
	if (!wts) {
		wts = malloc(nid * sizeof *wts);
		if (!wts) {
			rc = -ENOMEM;
			goto out;
		}
		for (size_t i = 0; i < nid; i++)
			wts[i] = 1.0f / (float)r->K;
	}
	ce = cudaMemcpy(r->d_ids_all, w->ids, nid * sizeof(int32_t), cudaMemcpyHostToDevice);
	if (!ce)
		ce = cudaMemcpy(r->d_w_all, wts, nid * sizeof(float), cudaMemcpyHostToDevice);
	if (wts != w->weights)
		free(wts);
	if (!ce)
		ce = ftsc_dev_upload(&d, warm->slot_for_id, warm->id_of_slot, warm->usage, warm->last_seen, warm->step, r->st);
	if (ce) {
		snprintf(err, errlen, "uploading the routing and the warm cache: %s", cerr(ce));
		rc = -EIO;
		goto out;
	}
	if ((rc = ensure_events(r, w->steps + 1)))
		goto out;
	/* the host's share of the counts: layer-steps and distinct experts asked for */
	for (int s = untimed; s < w->steps; s++)
		for (int l = 0; l < L; l++) {
			const int32_t *ids = ftrp_ids(w, s, l);
			for (int i = 0; i < n; i++) {
				int dup = 0;
				for (int j = 0; j < i && !dup; j++)
					dup = ids[j] == ids[i];
				cnt->active += !dup;
			}
			cnt->layer_steps++;
		}
	const int hyb = ftrp_policy_hybrid_at(p, r->B);
	const int max_fetch = p->mode == FTRP_MODE_CAP ? p->cap : -1;
	const int q16 = p->mode == FTRP_MODE_FRACTION ? ftsc_q16(p->fraction) : 0;
	const size_t hb = (size_t)r->B * (size_t)r->H * sizeof(float);
	atomic_store(&r->cpu_err, 0);
	ce = cudaMemsetAsync(r->d_acc, 0, FTRS_ACC_N * sizeof(long long), r->st);
	for (int s = 0; s < w->steps && !ce; s++) {
		if (s == untimed)
			ce = cudaMemsetAsync(r->d_acc, 0, FTRS_ACC_N * sizeof(long long), r->st);
		if (!ce)
			ce = cudaEventRecord(r->ev[s], r->st);
		for (int l = 0; l < L && !ce; l++) {
			const size_t o = ((size_t)s * (size_t)L + (size_t)l) * (size_t)n;
			const int32_t *ids = r->d_ids_all + o;
			const float *wl = r->d_w_all + o;
			ce = cudaMemcpyAsync(r->d_slots, ids, (size_t)n * sizeof(int32_t), cudaMemcpyDeviceToDevice, r->st);
			if (!ce)
				ce = hyb ? ftsc_dev_ensure_hybrid(&d, l, r->d_slots, n, max_fetch, q16, (int)p->order, r->st)
					 : ftsc_dev_ensure(&d, l, r->d_slots, n, r->st);
			if (!ce)
				ce = ftrs_count(d.counts, r->d_acc, r->st);
			if (hyb && !ce) {
				/* the engine's decode_submit: activations and the CPU's routes to pinned memory, doorbell */
				ce = ftrs_split(ids, r->d_slots, wl, r->d_cpu_ids, r->d_gpu_w, n, r->d_acc, r->st);
				if (!ce)
					ce = cudaMemcpyAsync(r->h_x, r->d_x, hb, cudaMemcpyDeviceToHost, r->st);
				if (!ce)
					ce = cudaMemcpyAsync(r->h_ids, r->d_cpu_ids, (size_t)n * sizeof(int32_t),
							     cudaMemcpyDeviceToHost, r->st);
				if (!ce)
					ce = cudaMemcpyAsync(r->h_w, wl, (size_t)n * sizeof(float), cudaMemcpyDeviceToHost, r->st);
				if (!ce)
					ce = ftrs_ring(r->h_ready, r->h_done, l, r->st);
				/* the engine's hybrid bookkeeping beside a fetch: on the GPU's side of the
				 * overlap, while the CPU works */
				if (!ce && r->d_fetch_pad)
					ce = ftrs_delay(d.counts, r->d_fetch_pad, r->o.fetch_pad_n < 256 ? r->o.fetch_pad_n : 256,
							r->st);
				if (!ce && !p->overlap) { /* FREETOKEN_HYBRID_OVERLAP=0: the CPU result first */
					ce = ftrs_wait(r->h_done, l, r->d_acc, r->st);
					if (!ce)
						ce = cudaMemcpyAsync(r->d_cpu_out, r->h_y, hb, cudaMemcpyHostToDevice, r->st);
				}
			}
			if (!ce)
				ce = ftmissing_copy(r->cm, l, d.src_indices, d.evict_slots, d.counts, r->E, r->st);
			if (!ce)
				ce = ftgemv_moe(&r->ge, r->B, r->K, r->d_slots, hyb ? r->d_gpu_w : wl, r->d_x, r->d_y, r->d_scratch,
						r->st);
			if (hyb && !ce) {
				if (p->overlap) {
					ce = ftrs_wait(r->h_done, l, r->d_acc, r->st);
					if (!ce)
						ce = cudaMemcpyAsync(r->d_cpu_out, r->h_y, hb, cudaMemcpyHostToDevice, r->st);
				}
				if (!ce)
					ce = ftrs_add(r->d_y, r->d_cpu_out, r->B * (int)r->H, r->st);
			}
		}
	}
	if (!ce)
		ce = cudaEventRecord(r->ev[w->steps], r->st);
	if (!ce)
		ce = cudaStreamSynchronize(r->st);
	if (ce) {
		snprintf(err, errlen, "the decode steps: %s", cerr(ce));
		rc = -EIO;
		goto out;
	}
	long long acc[FTRS_ACC_N];
	if ((ce = cudaMemcpy(acc, r->d_acc, sizeof acc, cudaMemcpyDeviceToHost))) {
		snprintf(err, errlen, "reading the counts: %s", cerr(ce));
		rc = -EIO;
		goto out;
	}
	if (acc[FTRS_ACC_TIMEOUTS]) {
		snprintf(err, errlen, "the CPU executor left %lld doorbells unanswered for 10 s", acc[FTRS_ACC_TIMEOUTS]);
		rc = -ETIMEDOUT;
		goto out;
	}
	if (atomic_load(&r->cpu_err)) {
		snprintf(err, errlen, "the CPU executor failed: %s", strerror(-atomic_load(&r->cpu_err)));
		rc = atomic_load(&r->cpu_err);
		goto out;
	}
	if (acc[FTRS_ACC_ERROR]) {
		snprintf(err, errlen, "the device slot cache reported an error (a cache smaller than a step's experts?)");
		rc = -EIO;
		goto out;
	}
	cnt->fetched = acc[FTRS_ACC_FETCHED];
	cnt->misses = acc[FTRS_ACC_MISSES];
	cnt->cpu = cnt->misses - cnt->fetched;
	cnt->cpu_routes = acc[FTRS_ACC_CPU_ROUTES];
	for (int s = untimed; s < w->steps; s++) {
		float ms = 0;
		if ((ce = cudaEventElapsedTime(&ms, r->ev[s], r->ev[s + 1]))) {
			snprintf(err, errlen, "step timing: %s", cerr(ce));
			rc = -EIO;
			goto out;
		}
		step_s[s - untimed] = ms * 1e-3;
	}
out:
	cudaStreamSynchronize(r->st);
	ftsc_dev_destroy(&d);
	cudaGetLastError();
	return rc;
#endif
}

static void r_describe(void *ctx, json_t *block)
{
	struct runner *r = ctx;
	json_object_set_new(block, "host_alloc", json_string(r->registered ? "register" : "hostalloc"));
	json_object_set_new(block, "host_alloc_s", json_pack("{s:f,s:f,s:f}", "alloc", r->alloc_s, "fill", r->fill_s, "pin", r->pin_s));
	json_object_set_new(block, "host_layers", json_integer(r->hl));
	json_object_set_new(block, "host_gib", json_real((double)r->host_bytes * r->hl / 1073741824.0));
	json_object_set_new(block, "runner",
			    json_pack("{s:s,s:s,s:s,s:s,s:i,s:s}", "copy", r->fused ? "fused" : "per_bank", "gemv",
#ifdef FTRP_HAVE_GEMV
				      r->ge.pdl ? "expert_gemv (mma.sync, PDL), every route (CPU routes at slot 0, weight 0)"
						: "expert_gemv (mma.sync), every route (CPU routes at slot 0, weight 0)",
#else
				      "none",
#endif
				      "order", "stream", "handshake", "mapped flags, kernel ring and wait; the CPU pool's worker 0 polls",
				      "cpu_threads", r->threads, "cpu_isa", r->isa));
	if (r->o.cpu_pad_n > 0 && r->svc_layers > 0) /* read after the runs' stream syncs */
		json_object_set_new(block, "cpu_service_us",
				    json_pack("{s:f,s:f,s:I}", "ours", r->svc_ours_s * 1e6 / (double)r->svc_layers, "paced",
					      r->svc_paced_s * 1e6 / (double)r->svc_layers, "layer_steps",
					      (json_int_t)r->svc_layers));
}

int ftrp_gpu_ops(const struct ftrp_gpu_opts *o, struct ftrp_ops *ops)
{
	struct runner *r = calloc(1, sizeof *r);
	if (!r)
		return -ENOMEM;
	r->o = *o;
	r->device = o->device;
	*ops = (struct ftrp_ops){.open = r_open, .run = r_run, .describe = r_describe, .close = r_close, .ctx = r};
	return 0;
}

void ftrp_gpu_ops_free(struct ftrp_ops *ops)
{
	if (!ops || !ops->ctx)
		return;
	r_close(ops->ctx);
	free(ops->ctx);
	ops->ctx = NULL;
}

#else /* no CUDA */

static int n_open(void *ctx, const struct ftrp_config *c, long slots_max, char *err, size_t errlen)
{
	(void)ctx, (void)c, (void)slots_max;
	snprintf(err, errlen, "replay needs a GPU: this ftbench was built without CUDA");
	return -ENODEV;
}

int ftrp_gpu_ops(const struct ftrp_gpu_opts *o, struct ftrp_ops *ops)
{
	(void)o;
	*ops = (struct ftrp_ops){.open = n_open};
	return 0;
}

void ftrp_gpu_ops_free(struct ftrp_ops *ops)
{
	(void)ops;
}
#endif
