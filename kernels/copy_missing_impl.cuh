/* copy_missing's internals shared with the benchmark's kernel variants (bench/copy_variants.cu):
 * the context, the per-layer device table of the fused path and the fused kernel as a template
 * (loads in flight per thread, load hint). The product instantiates fused_kernel<FTMISSING_UNROLL, 0>
 * only. Not a public header: include it from .cu files of this project. */
#ifndef FT_KERNELS_COPY_MISSING_IMPL_CUH
#define FT_KERNELS_COPY_MISSING_IMPL_CUH
#include "copy_missing.h"

#define FTMISSING_BLOCK 512        /* threads of the fused and per-bank kernels */
#define FTMISSING_BLOCKS_PER_SM 2  /* default grid: this many blocks per multiprocessor */
#define FTMISSING_UNROLL 8         /* 16-byte loads in flight per thread (the product's kernel) */

/* Per-layer table of the fused path, in 16-byte units. */
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

/* HINT 1: ld.global.nc with the .L2::256B prefetch-size hint; 0: __ldg. */
template <int HINT> __device__ __forceinline__ uint4 load16(const uint4 *p)
{
	uint4 v;
	if (HINT == 1)
		asm("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];"
		    : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
		    : "l"(p));
	else
		v = __ldg(p);
	return v;
}

/* Fused gather of the banks whose bit is set in mask (all banks: the default path; the small
 * banks: the proxy's SM part). Grid: any number of blocks of FTMISSING_BLOCK threads, striding over
 * the flat space of n * e16 16-byte chunks (entry-major, then bank, then offset); each thread
 * keeps UNROLL loads in flight; a warp's loads are 512 contiguous bytes. */
template <int UNROLL, int HINT>
__global__ void __launch_bounds__(FTMISSING_BLOCK)
	fused_kernel(const struct ftmissing_layer_tab *__restrict__ tabs, int layer, unsigned mask, const int32_t *__restrict__ src,
		     const int32_t *__restrict__ dst, const int32_t *__restrict__ num, int max_n)
{
	__shared__ struct ftmissing_layer_tab t;
	if (threadIdx.x == 0) { /* the banks of `mask`, compacted */
		const struct ftmissing_layer_tab *x = &tabs[layer];
		int k = 0;
		t.pre16[0] = 0;
		for (int b = 0; b < x->nb; b++)
			if (mask >> b & 1) {
				t.host[k] = x->host[b];
				t.pool[k] = x->pool[b];
				t.row16[k] = x->row16[b];
				t.pre16[k + 1] = t.pre16[k] + x->row16[b];
				k++;
			}
		t.nb = k;
	}
	__syncthreads();
	int n = *num;
	n = n < max_n ? n : max_n;
	if (n <= 0 || t.nb == 0)
		return;
	const unsigned e16 = t.pre16[t.nb], total = (unsigned)n * e16, span = FTMISSING_BLOCK * UNROLL;
	for (unsigned base = blockIdx.x * span; base < total; base += gridDim.x * span) {
		uint4 v[UNROLL];
		uint4 *d[UNROLL];
#pragma unroll
		for (int u = 0; u < UNROLL; u++) {
			unsigned c = base + u * FTMISSING_BLOCK + threadIdx.x;
			d[u] = NULL;
			if (c < total) {
				unsigned ent = c / e16, off = c - ent * e16;
				int b = 0;
				while (b + 1 < t.nb && off >= t.pre16[b + 1])
					b++;
				off -= t.pre16[b];
				v[u] = load16<HINT>(t.host[b] + (size_t)src[ent] * t.row16[b] + off);
				d[u] = t.pool[b] + (size_t)dst[ent] * t.row16[b] + off;
			}
		}
#pragma unroll
		for (int u = 0; u < UNROLL; u++)
			if (d[u])
				*d[u] = v[u];
	}
}

#endif
