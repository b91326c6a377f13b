#include "bench/gather.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/timeutil.h"

#ifdef FT_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "copy_missing.h"
#include "hw/cudaerr.h"

#define BANK_ALIGN 256      /* bank bases inside a layer's pinned allocation */
#define FILL_THREADS_MAX 16 /* threads that pattern-fill the pinned banks */

struct ftgather {
	struct ftgather_geom geom;
	int nb;
	struct ftfmt_bank_shape shapes[FTFMT_MAX_BANKS];
	size_t expert_bytes, layer_bytes, bank_off[FTFMT_MAX_BANKS];
	unsigned char **host; /* [layers] pinned, mapped (UVA: the same pointer on the device) */
	void *pool[FTFMT_MAX_BANKS];
	struct ftmissing *cm;
	struct ftmissing_proxy *proxy; /* created on first use of FTGATHER_PROXY */
	struct ftmissing_proxy_opts popts;
	enum ftgather_path def;
	ftgather_fused_fn *fused_fn; /* NULL: ftmissing_copy_path */
	int blocks;
	cudaStream_t stream;
	cudaEvent_t ev[2];
	int32_t *d_plan; /* [2 * max_plan + 1]: src, dst, num */
	int32_t *h_src, *h_dst;
	int n, layer;
	/* memcpy-batch scratch */
	void **b_dst;
	const void **b_src;
	size_t *b_size;
	/* overlap */
	pthread_t th;
	int running, device;
	volatile int stop;
	int ov_spin_us; /* the proxy's spin_us before the overlap (restored after it) */
	uint64_t ov_bytes;
	double ov_secs;
	int ov_err;
};

struct fill_job {
	struct ftgather *g;
	int first, count; /* (layer, expert) items */
};

static void fill_row(unsigned char *p, size_t n, int layer, int bank, int expert)
{
	size_t off = 0;
	for (; off + 8 <= n; off += 8) {
		uint32_t x = ftgather_pattern_group(layer, bank, expert, off >> 3);
		uint64_t w = 0;
		for (int j = 0; j < 8; j++) {
			uint8_t b = (uint8_t)(x + (uint32_t)j * 37u);
			w |= (uint64_t)(b ? b : 0x5B) << (8 * j);
		}
		memcpy(p + off, &w, 8); /* little-endian: byte j at off + j */
	}
	for (; off < n; off++)
		p[off] = ftgather_pattern(layer, bank, expert, off);
}

static void *fill_main(void *arg)
{
	struct fill_job *j = arg;
	struct ftgather *g = j->g;
	int E = g->geom.experts;
	for (int it = j->first; it < j->first + j->count; it++) {
		int l = it / E, e = it % E;
		for (int b = 0; b < g->nb; b++) {
			size_t rb = g->shapes[b].expert_bytes;
			fill_row(g->host[l] + g->bank_off[b] + (size_t)e * rb, rb, l, b, e);
		}
	}
	return NULL;
}

static int fill_banks(struct ftgather *g)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int nt = cpus < 1 ? 1 : cpus > FILL_THREADS_MAX ? FILL_THREADS_MAX : (int)cpus;
	int items = g->geom.layers * g->geom.experts;
	if (nt > items)
		nt = items;
	pthread_t th[FILL_THREADS_MAX];
	struct fill_job jobs[FILL_THREADS_MAX];
	int started = 0, r = 0;
	for (int t = 0; t < nt; t++) {
		jobs[t] = (struct fill_job){g, items * t / nt, items * (t + 1) / nt - items * t / nt};
		if (pthread_create(&th[t], NULL, fill_main, &jobs[t])) {
			fill_main(&jobs[t]);
			continue;
		}
		started |= 1 << t;
	}
	for (int t = 0; t < nt; t++)
		if (started & (1 << t))
			pthread_join(th[t], NULL);
	return r;
}

/* 1 when this process may run on more than one CPU: the proxy thread may then poll between
 * plans without taking a CPU from the thread that drives the GPU. */
static int core_free(void)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	return sched_getaffinity(0, sizeof set, &set) < 0 || CPU_COUNT(&set) > 1;
}

int ftgather_create(struct ftgather **out, const struct ftgather_geom *geom, const struct ftreport *rep)
{
	*out = NULL;
	if (!geom || !geom->format || geom->experts <= 0 || geom->layers <= 0 || geom->slots <= 0 ||
	    geom->max_plan <= 0)
		return -EINVAL;
	struct ftgather *g = calloc(1, sizeof *g);
	if (!g)
		return -ENOMEM;
	g->geom = *geom;
	g->def = FTGATHER_FUSED;
	ftmissing_proxy_default_opts(&g->popts);
	int r = ftfmt_banks(geom->format, geom->hidden, geom->inter, g->shapes);
	if (r <= 0 || r > FTMISSING_MAX_BANKS) {
		free(g);
		return r < 0 ? r : -EINVAL;
	}
	g->nb = r;
	r = 0;
	for (int b = 0; b < g->nb; b++) {
		g->bank_off[b] = g->layer_bytes;
		g->layer_bytes += ((size_t)geom->experts * g->shapes[b].expert_bytes + BANK_ALIGN - 1) /
				  BANK_ALIGN * BANK_ALIGN;
		g->expert_bytes += g->shapes[b].expert_bytes;
	}
	int ndev = 0;
	if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
		free(g);
		return -ENODEV;
	}
	cudaGetDevice(&g->device);
	cudaError_t e;
	g->host = calloc((size_t)geom->layers, sizeof *g->host);
	g->h_src = malloc((size_t)geom->max_plan * sizeof *g->h_src);
	g->h_dst = malloc((size_t)geom->max_plan * sizeof *g->h_dst);
	size_t bn = (size_t)geom->max_plan * FTFMT_MAX_BANKS;
	g->b_dst = malloc(bn * sizeof *g->b_dst);
	g->b_src = malloc(bn * sizeof *g->b_src);
	g->b_size = malloc(bn * sizeof *g->b_size);
	if (!g->host || !g->h_src || !g->h_dst || !g->b_dst || !g->b_src || !g->b_size) {
		r = -ENOMEM;
		goto fail;
	}
	for (int l = 0; l < geom->layers; l++)
		if ((e = cudaHostAlloc((void **)&g->host[l], g->layer_bytes,
				       cudaHostAllocMapped | cudaHostAllocPortable))) {
			r = ftcudaerr_errno(e);
			goto fail;
		}
	for (int b = 0; b < g->nb; b++)
		if ((e = cudaMalloc(&g->pool[b], (size_t)geom->slots * g->shapes[b].expert_bytes))) {
			r = ftcudaerr_errno(e);
			goto fail;
		}
	if ((e = cudaMalloc((void **)&g->d_plan, (2 * (size_t)geom->max_plan + 1) * sizeof(int32_t))) ||
	    (e = cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking)) ||
	    (e = cudaEventCreate(&g->ev[0])) || (e = cudaEventCreate(&g->ev[1]))) {
		r = ftcudaerr_errno(e);
		goto fail;
	}
	fill_banks(g);
	struct ftmissing_bank *cb = calloc((size_t)geom->layers * g->nb, sizeof *cb);
	if (!cb) {
		r = -ENOMEM;
		goto fail;
	}
	for (int l = 0; l < geom->layers; l++)
		for (int b = 0; b < g->nb; b++) {
			void *dp = NULL;
			if ((e = cudaHostGetDevicePointer(&dp, g->host[l] + g->bank_off[b], 0))) {
				free(cb);
				r = ftcudaerr_errno(e);
				goto fail;
			}
			cb[l * g->nb + b] = (struct ftmissing_bank){dp, g->pool[b], g->shapes[b].expert_bytes};
		}
	char note[256];
	e = ftmissing_create(&g->cm, cb, geom->layers, g->nb, ftmissing_env_fused(), note, sizeof note);
	free(cb);
	if (e) {
		r = ftcudaerr_errno(e);
		goto fail;
	}
	if (note[0])
		ftreport_note(rep, note);
	/* the copy engines through the proxy; the per-bank SM kernels when FREETOKEN_FUSED_COPY
	 * asks for them */
	ftgather_set_default_path(g, FTGATHER_AUTO);
	if (ftmissing_env_fused() && !ftmissing_proxy_usable())
		ftreport_note(rep, "copy-engine proxy off: CUDA_DEVICE_MAX_CONNECTIONS=1 (one hardware queue: its copies "
				   "would wait behind the waiting stream); using the SM gather");
	if (!core_free())
		g->popts.spin_us = 0;
	*out = g;
	return 0;
fail:
	ftgather_free(g);
	return r;
}

void ftgather_free(struct ftgather *g)
{
	if (!g)
		return;
	if (g->running) {
		uint64_t b;
		double s;
		ftgather_overlap_stop(g, &b, &s);
	}
	ftmissing_proxy_destroy(g->proxy);
	ftmissing_destroy(g->cm);
	if (g->host)
		for (int l = 0; l < g->geom.layers; l++)
			cudaFreeHost(g->host[l]);
	for (int b = 0; b < FTFMT_MAX_BANKS; b++)
		cudaFree(g->pool[b]);
	cudaFree(g->d_plan);
	if (g->ev[0])
		cudaEventDestroy(g->ev[0]);
	if (g->ev[1])
		cudaEventDestroy(g->ev[1]);
	if (g->stream)
		cudaStreamDestroy(g->stream);
	free(g->host);
	free(g->h_src);
	free(g->h_dst);
	free(g->b_dst);
	free(g->b_src);
	free(g->b_size);
	free(g);
}

size_t ftgather_expert_bytes(const struct ftgather *g)
{
	return g->expert_bytes;
}

enum ftgather_path ftgather_default_path(const struct ftgather *g)
{
	return g->def;
}

int ftgather_set_default_path(struct ftgather *g, enum ftgather_path p)
{
	if (p == FTGATHER_AUTO) /* no proxy on a single hardware queue (ftmissing_proxy_usable) */
		p = !ftmissing_env_fused() ? FTGATHER_PER_BANK : ftmissing_proxy_usable() ? FTGATHER_PROXY : FTGATHER_FUSED;
	if (p == FTGATHER_FUSED && !ftmissing_is_fused(g->cm))
		p = FTGATHER_PER_BANK;
	if (p != FTGATHER_FUSED && p != FTGATHER_PER_BANK && p != FTGATHER_PROXY)
		return -EINVAL;
	g->def = p;
	return 0;
}

int ftgather_set_fused(struct ftgather *g, ftgather_fused_fn *fn, int blocks)
{
	if (blocks < 0)
		return -EINVAL;
	g->fused_fn = fn;
	g->blocks = blocks;
	return 0;
}

int ftgather_set_proxy_opts(struct ftgather *g, const struct ftmissing_proxy_opts *o)
{
	struct ftmissing_proxy_opts d;
	if (!o) {
		ftmissing_proxy_default_opts(&d);
		if (!core_free())
			d.spin_us = 0;
		o = &d;
	}
	if (!ftmissing_proxy_opts_ok(o))
		return -EINVAL;
	cudaError_t e = cudaStreamSynchronize(g->stream);
	if (e)
		return ftcudaerr_errno(e);
	if (g->proxy && (e = ftmissing_proxy_set_opts(g->proxy, o)))
		return ftcudaerr_errno(e);
	g->popts = *o;
	return 0;
}

int ftgather_set_plan(struct ftgather *g, int layer, const int32_t *src, const int32_t *dst, int n)
{
	if (layer < 0 || layer >= g->geom.layers || n < 0 || n > g->geom.max_plan)
		return -EINVAL;
	for (int i = 0; i < n; i++)
		if (src[i] < 0 || src[i] >= g->geom.experts || dst[i] < 0 || dst[i] >= g->geom.slots)
			return -EINVAL;
	memcpy(g->h_src, src, (size_t)n * sizeof *src);
	memcpy(g->h_dst, dst, (size_t)n * sizeof *dst);
	g->n = n;
	g->layer = layer;
	int32_t num = n;
	cudaError_t e;
	size_t mp = (size_t)g->geom.max_plan;
	if ((n && (e = cudaMemcpyAsync(g->d_plan, src, (size_t)n * 4, cudaMemcpyHostToDevice, g->stream))) ||
	    (n && (e = cudaMemcpyAsync(g->d_plan + mp, dst, (size_t)n * 4, cudaMemcpyHostToDevice, g->stream))) ||
	    (e = cudaMemcpyAsync(g->d_plan + 2 * mp, &num, 4, cudaMemcpyHostToDevice, g->stream)) ||
	    (e = cudaStreamSynchronize(g->stream)))
		return ftcudaerr_errno(e);
	/* memcpy-batch arrays */
	for (int i = 0, k = 0; i < n; i++)
		for (int b = 0; b < g->nb; b++, k++) {
			size_t rb = g->shapes[b].expert_bytes;
			g->b_dst[k] = (unsigned char *)g->pool[b] + (size_t)dst[i] * rb;
			g->b_src[k] = g->host[layer] + g->bank_off[b] + (size_t)src[i] * rb;
			g->b_size[k] = rb;
		}
	return 0;
}

static int run_on(struct ftgather *g, enum ftgather_path path, cudaStream_t s)
{
	cudaError_t e = cudaSuccess;
	size_t mp = (size_t)g->geom.max_plan;
	if (path == FTGATHER_AUTO)
		path = g->def;
	switch (path) {
	case FTGATHER_FUSED:
	case FTGATHER_PER_BANK:
		if (path == FTGATHER_FUSED && g->fused_fn)
			e = (cudaError_t)g->fused_fn(g->cm, g->blocks, g->layer, g->d_plan, g->d_plan + mp,
						     g->d_plan + 2 * mp, g->n, s);
		else
			e = ftmissing_copy_path(g->cm, path == FTGATHER_FUSED, g->blocks, g->layer, g->d_plan,
					   g->d_plan + mp, g->d_plan + 2 * mp, g->n, s);
		break;
	case FTGATHER_PROXY:
		if (!g->proxy) {
			if ((e = ftmissing_proxy_create(&g->proxy, g->cm, g->geom.max_plan)))
				break;
			if ((e = ftmissing_proxy_set_opts(g->proxy, &g->popts)))
				break;
		}
		e = ftmissing_proxy_copy(g->proxy, g->layer, g->d_plan, g->d_plan + mp, g->d_plan + 2 * mp, s);
		break;
	case FTGATHER_MEMCPY:
		for (int k = 0; k < g->n * g->nb && !e; k++)
			e = cudaMemcpyAsync(g->b_dst[k], g->b_src[k], g->b_size[k], cudaMemcpyHostToDevice, s);
		break;
	case FTGATHER_MEMCPY_BATCH: {
		if (!g->n)
			break;
		struct cudaMemcpyAttributes at;
		ftmissing_h2d_batch_attrs(&at, g->device);
		size_t idx = 0;
		e = cudaMemcpyBatchAsync((void *const *)g->b_dst, (const void *const *)g->b_src, g->b_size,
					 (size_t)g->n * g->nb, &at, &idx, 1, s);
		break;
	}
	default:
		return -EINVAL;
	}
	return ftcudaerr_errno(e);
}

int ftgather_run(struct ftgather *g, enum ftgather_path path)
{
	return run_on(g, path, g->stream);
}

int ftgather_time(struct ftgather *g, enum ftgather_path path, int warmup, int iters, double *secs)
{
	int r;
	for (int i = 0; i < warmup; i++)
		if ((r = run_on(g, path, g->stream)))
			return r;
	cudaError_t e;
	for (int i = 0; i < iters; i++) {
		if ((e = cudaEventRecord(g->ev[0], g->stream)))
			return ftcudaerr_errno(e);
		if ((r = run_on(g, path, g->stream)))
			return r;
		float ms = 0;
		if ((e = cudaEventRecord(g->ev[1], g->stream)) || (e = cudaEventSynchronize(g->ev[1])) ||
		    (e = cudaEventElapsedTime(&ms, g->ev[0], g->ev[1])))
			return ftcudaerr_errno(e);
		secs[i] = ms / 1e3;
	}
	return 0;
}

static void *overlap_main(void *arg)
{
	struct ftgather *g = arg;
	cudaSetDevice(g->device);
	double t0 = fttime_now_s();
	uint64_t bytes = 0, per = (uint64_t)g->n * g->expert_bytes;
	while (!g->stop) {
		int r = run_on(g, g->def, g->stream);
		cudaError_t e = r ? cudaSuccess : cudaStreamSynchronize(g->stream);
		if (r || e) {
			g->ov_err = r ? r : ftcudaerr_errno(e);
			break;
		}
		bytes += per;
	}
	g->ov_secs = fttime_now_s() - t0;
	g->ov_bytes = bytes;
	return NULL;
}

/* The proxy thread's poll after a plan (ftmissing_proxy_opts.spin_us), now and for later runs. */
static int set_spin(struct ftgather *g, int spin_us)
{
	struct ftmissing_proxy_opts o = g->popts;
	o.spin_us = spin_us;
	cudaError_t e;
	if (g->proxy && (e = ftmissing_proxy_set_opts(g->proxy, &o)))
		return ftcudaerr_errno(e);
	g->popts = o;
	return 0;
}

int ftgather_overlap_start(struct ftgather *g)
{
	if (g->running)
		return -EBUSY;
	/* CPU work runs on every core meanwhile: the proxy thread only sleeps between plans (a
	 * polling thread would time-slice a pinned worker and stall its steps) */
	g->ov_spin_us = g->popts.spin_us;
	int r = set_spin(g, 0);
	if (r)
		return r;
	g->stop = 0;
	g->ov_err = 0;
	g->ov_bytes = 0;
	g->ov_secs = 0;
	if (pthread_create(&g->th, NULL, overlap_main, g)) {
		set_spin(g, g->ov_spin_us);
		return -EAGAIN;
	}
	g->running = 1;
	return 0;
}

int ftgather_overlap_stop(struct ftgather *g, uint64_t *bytes, double *secs)
{
	if (!g->running)
		return -EINVAL;
	g->stop = 1;
	pthread_join(g->th, NULL);
	g->running = 0;
	*bytes = g->ov_bytes;
	*secs = g->ov_secs;
	int r = set_spin(g, g->ov_spin_us);
	return g->ov_err ? g->ov_err : r;
}

int ftgather_poison(struct ftgather *g)
{
	cudaError_t e = cudaSuccess;
	for (int i = 0; i < g->n && !e; i++)
		for (int b = 0; b < g->nb && !e; b++) {
			size_t rb = g->shapes[b].expert_bytes;
			e = cudaMemsetAsync((unsigned char *)g->pool[b] + (size_t)g->h_dst[i] * rb, 0, rb, g->stream);
		}
	if (!e)
		e = cudaStreamSynchronize(g->stream);
	return ftcudaerr_errno(e);
}

int ftgather_verify(struct ftgather *g)
{
	size_t maxrow = 0;
	for (int b = 0; b < g->nb; b++)
		if (g->shapes[b].expert_bytes > maxrow)
			maxrow = g->shapes[b].expert_bytes;
	unsigned char *tmp = malloc(maxrow);
	if (!tmp)
		return -ENOMEM;
	int r = 0;
	cudaError_t e = cudaStreamSynchronize(g->stream);
	for (int i = 0; i < g->n && !r && !e; i++)
		for (int b = 0; b < g->nb && !r && !e; b++) {
			size_t rb = g->shapes[b].expert_bytes;
			e = cudaMemcpy(tmp, (unsigned char *)g->pool[b] + (size_t)g->h_dst[i] * rb, rb,
				       cudaMemcpyDeviceToHost);
			if (!e && memcmp(tmp, g->host[g->layer] + g->bank_off[b] + (size_t)g->h_src[i] * rb, rb))
				r = -EBADMSG;
		}
	free(tmp);
	return e ? ftcudaerr_errno(e) : r;
}

void *ftgather_host_bank(const struct ftgather *g, int layer, int bank)
{
	if (layer < 0 || layer >= g->geom.layers || bank < 0 || bank >= g->nb)
		return NULL;
	return g->host[layer] + g->bank_off[bank];
}

void *ftgather_stream(const struct ftgather *g)
{
	return g->stream;
}

void *ftgather_copier(const struct ftgather *g)
{
	return g->cm;
}

#else /* !FT_HAVE_CUDA */

struct ftgather {
	int unused;
};

int ftgather_create(struct ftgather **out, const struct ftgather_geom *geom, const struct ftreport *rep)
{
	*out = NULL;
	return -ENODEV;
}
void ftgather_free(struct ftgather *g) {}
size_t ftgather_expert_bytes(const struct ftgather *g) { return 0; }
enum ftgather_path ftgather_default_path(const struct ftgather *g) { return FTGATHER_FUSED; }
int ftgather_set_default_path(struct ftgather *g, enum ftgather_path p) { return -ENODEV; }
int ftgather_set_fused(struct ftgather *g, ftgather_fused_fn *fn, int blocks) { return -ENODEV; }
int ftgather_set_proxy_opts(struct ftgather *g, const struct ftmissing_proxy_opts *o) { return -ENODEV; }
int ftgather_set_plan(struct ftgather *g, int layer, const int32_t *src, const int32_t *dst, int n) { return -ENODEV; }
int ftgather_run(struct ftgather *g, enum ftgather_path path) { return -ENODEV; }
int ftgather_time(struct ftgather *g, enum ftgather_path path, int warmup, int iters, double *secs) { return -ENODEV; }
int ftgather_overlap_start(struct ftgather *g) { return -ENODEV; }
int ftgather_overlap_stop(struct ftgather *g, uint64_t *bytes, double *secs) { return -ENODEV; }
int ftgather_poison(struct ftgather *g) { return -ENODEV; }
int ftgather_verify(struct ftgather *g) { return -ENODEV; }
void *ftgather_host_bank(const struct ftgather *g, int layer, int bank) { return NULL; }
void *ftgather_stream(const struct ftgather *g) { return NULL; }
void *ftgather_copier(const struct ftgather *g) { return NULL; }
#endif

const char *ftgather_path_name(enum ftgather_path p)
{
	switch (p) {
	case FTGATHER_FUSED:
		return "fused";
	case FTGATHER_PER_BANK:
		return "per_bank";
	case FTGATHER_MEMCPY:
		return "memcpy";
	case FTGATHER_MEMCPY_BATCH:
		return "memcpy_batch";
	case FTGATHER_PROXY:
		return "proxy";
	default:
		return "auto";
	}
}
