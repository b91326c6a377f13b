/* copy_missing's internals shared with the benchmark's kernel variants (bench/copy_variants.cu):
 * the context, the per-layer device table of the fused path, the one gather loop every copy
 * kernel runs (gather_units) and the fused kernel as a template (loads in flight per thread, load
 * hint). The product instantiates fused_kernel<FTMISSING_UNROLL, 0> only. Not a public header:
 * include it from .cu files of this project. */
#ifndef FT_KERNELS_COPY_MISSING_IMPL_CUH
#define FT_KERNELS_COPY_MISSING_IMPL_CUH
#include "copy_missing.h"

#define FTMISSING_BLOCK 512        /* threads of the fused and per-bank kernels */
#define FTMISSING_BLOCKS_PER_SM 2  /* default grid: this many blocks per multiprocessor */
#define FTMISSING_UNROLL 8         /* 16-byte loads in flight per thread (the product's kernel) */

/* Per-layer table of the fused path, in 16-byte units (fused_kernel keeps a compacted copy of
 * the banks it copies, pre16 then the prefix of the lengths it copies of each row). */
struct ftmissing_layer_tab {
	const uint4 *host[FTMISSING_MAX_BANKS];
	uint4 *pool[FTMISSING_MAX_BANKS];
	unsigned row16[FTMISSING_MAX_BANKS];
	unsigned pre16[FTMISSING_MAX_BANKS + 1]; /* prefix of row16: offset of bank b in an expert */
	int nb;
};

struct ftmissing {
	int layers, nbanks, fused, sms;
	struct ftmissing_bank *banks;   /* host copy [layers * nbanks] */
	struct ftmissing_layer_tab *d_tabs;  /* device [layers] (fused path; NULL when misaligned) */
	unsigned e16;              /* 16-byte units per expert (all banks) */
};

/* One unit of the gather from host memory. HINT 1 (16-byte units only): ld.global.nc with the
 * .L2::256B prefetch-size hint; 0: __ldg. */
template <int HINT, typename T> __device__ __forceinline__ T gather_load(const T *p)
{
	return __ldg(p);
}
template <> __device__ __forceinline__ uint4 gather_load<1, uint4>(const uint4 *p)
{
	uint4 v;
	asm("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];"
	    : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
	    : "l"(p));
	return v;
}

/* The gather loop of every copy kernel: the flat space of `total` units of T (16, 4 or 1 bytes),
 * strided over a grid of blocks of FTMISSING_BLOCK threads; each thread keeps UNROLL loads in
 * flight, then stores them; a warp's loads are 32 consecutive units. at(c, s, d) maps unit c to
 * its source and destination. */
template <typename T, int UNROLL, int HINT, typename At>
__device__ __forceinline__ void gather_units(unsigned total, const At &at)
{
	const unsigned span = FTMISSING_BLOCK * UNROLL;
	for (unsigned base = blockIdx.x * span; base < total; base += gridDim.x * span) {
		T v[UNROLL];
		T *d[UNROLL];
#pragma unroll
		for (int u = 0; u < UNROLL; u++) {
			unsigned c = base + u * FTMISSING_BLOCK + threadIdx.x;
			d[u] = NULL;
			if (c < total) {
				const T *s;
				at(c, s, d[u]);
				v[u] = gather_load<HINT>(s);
			}
		}
#pragma unroll
		for (int u = 0; u < UNROLL; u++)
			if (d[u])
				*d[u] = v[u];
	}
}

/* One bank's rows of rowu units: unit c is unit c % rowu of entry c / rowu. */
template <typename T> struct ftmissing_row_at {
	const T *host;
	T *pool;
	unsigned rowu;
	const int32_t *src, *dst;
	__device__ __forceinline__ void operator()(unsigned c, const T *&s, T *&d) const
	{
		unsigned ent = c / rowu, off = c - ent * rowu;
		s = host + (size_t)src[ent] * rowu + off;
		d = pool + (size_t)dst[ent] * rowu + off;
	}
};

/* Several banks (a table compacted by compact_banks, in shared memory): per entry, pre16[nb]
 * units, bank b's first pre16[b + 1] - pre16[b] units of its row (row16[b] units) in turn. */
struct ftmissing_banks_at {
	const struct ftmissing_layer_tab *t;
	unsigned e16;
	const int32_t *src, *dst;
	__device__ __forceinline__ void operator()(unsigned c, const uint4 *&s, uint4 *&d) const
	{
		unsigned ent = c / e16, off = c - ent * e16;
		int b = 0;
		while (b + 1 < t->nb && off >= t->pre16[b + 1])
			b++;
		off -= t->pre16[b];
		s = t->host[b] + (size_t)src[ent] * t->row16[b] + off;
		d = t->pool[b] + (size_t)dst[ent] * t->row16[b] + off;
	}
};

/* The head of a copy-engine bank's rows (16-byte units) that the SM kernel copies for a plan of
 * n entries (the proxy's head; kernels/copy_missing.h): the plan's SM work, max(fixed16, n *
 * per16) units (fixed16: opts.sm_head, per16: opts.sm_head_entry), less the SM banks' rows
 * (n * sm16: they already keep the SMs busy), spread over the copy-engine banks in proportion
 * to their rows (ce16: their row16 summed), at most half a row. The proxy thread and
 * fused_kernel compute the same integer. */
__host__ __device__ static inline unsigned head_of(unsigned row16, unsigned long long ce16, unsigned long long sm16,
						   int n, unsigned long long fixed16, unsigned long long per16)
{
	if (n <= 0 || !ce16)
		return 0;
	unsigned long long work = (unsigned long long)n * per16, have = (unsigned long long)n * sm16;
	work = work > fixed16 ? work : fixed16;
	if (work <= have)
		return 0;
	unsigned long long budget = work - have;
	if (budget > (unsigned long long)n * ce16) /* a whole row each (then half, below) */
		budget = (unsigned long long)n * ce16;
	unsigned long long h = (unsigned long long)row16 * budget / ((unsigned long long)n * ce16);
	return (unsigned)(h < row16 / 2 ? h : row16 / 2);
}

/* Fused gather: the banks whose bit is set in mask whole (all banks: the default path; the small
 * banks: the proxy's SM part) and, of the banks in head_mask, the first head_of() units of each
 * row, head[0] and head[1] its fixed16 and per16 (the proxy's head, in device memory, as the
 * publish kernel published it; head_mask 0: none, head unread). Grid: any number of blocks of
 * FTMISSING_BLOCK threads, striding over the flat space of n * (units per entry) 16-byte chunks (entry-major,
 * then bank, then offset); each thread keeps UNROLL loads in flight. */
template <int UNROLL, int HINT>
__global__ void __launch_bounds__(FTMISSING_BLOCK)
	fused_kernel(const struct ftmissing_layer_tab *__restrict__ tabs, int layer, unsigned mask, unsigned head_mask,
		     const unsigned long long *__restrict__ head, const int32_t *__restrict__ src,
		     const int32_t *__restrict__ dst, const int32_t *__restrict__ num, int max_n)
{
	__shared__ struct ftmissing_layer_tab t;
	int n = *num;
	n = n < max_n ? n : max_n;
	if (threadIdx.x == 0) { /* the banks to copy, compacted; pre16: the prefix of their lengths */
		const struct ftmissing_layer_tab *x = &tabs[layer];
		unsigned long long ce16 = 0, sm16 = 0, fixed16 = head_mask ? head[0] : 0, per16 = head_mask ? head[1] : 0;
		for (int b = 0; head_mask && b < x->nb; b++)
			if (head_mask >> b & 1)
				ce16 += x->row16[b];
			else if (mask >> b & 1)
				sm16 += x->row16[b];
		int k = 0;
		t.pre16[0] = 0;
		for (int b = 0; b < x->nb; b++) {
			unsigned len = mask >> b & 1 ? x->row16[b]
				       : head_mask >> b & 1 ? head_of(x->row16[b], ce16, sm16, n, fixed16, per16) : 0;
			if (!len)
				continue;
			t.host[k] = x->host[b];
			t.pool[k] = x->pool[b];
			t.row16[k] = x->row16[b];
			t.pre16[k + 1] = t.pre16[k] + len;
			k++;
		}
		t.nb = k;
	}
	__syncthreads();
	if (n <= 0 || t.nb == 0)
		return;
	const unsigned e16 = t.pre16[t.nb];
	gather_units<uint4, UNROLL, HINT>((unsigned)n * e16, ftmissing_banks_at{&t, e16, src, dst});
}

/* The gather's launchers for the copy-engine proxy (copy_proxy.cu), defined in copy_missing.cu so
 * that every gather kernel lives in that one module (the proxy preloads them there).
 * ftmissing_copy_banks: the banks in mask on the SMs, the path forced (ftmissing_copy_path).
 * ftmissing_launch_fused_rest: the fused kernel over sm_mask plus the heads of the ce_mask banks
 * (head_seq: the proxy's sequence word that says how far the heads go); c->d_tabs must be set.
 * ftmissing_preload_gather_kernels: load the fused and per-bank kernels now (lazy loading). */
cudaError_t ftmissing_copy_banks(const struct ftmissing *c, int fused, int blocks, int layer, unsigned mask,
				 const int32_t *src, const int32_t *dst, const int32_t *num, int max_n, cudaStream_t s);
cudaError_t ftmissing_launch_fused_rest(const struct ftmissing *c, int layer, unsigned sm_mask, unsigned ce_mask,
					const unsigned long long *head_seq, const int32_t *src, const int32_t *dst,
					const int32_t *num, int max_n, cudaStream_t s);
cudaError_t ftmissing_preload_gather_kernels(void);

#endif
