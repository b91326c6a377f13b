/* The benchmark's variants of copy_missing's fused gather (see copy_variants.h): the product's
 * fused kernel template with other parameters, and a bulk-copy (TMA) kernel. */
#include "copy_variants.h"

#include "copy_missing_impl.cuh"

#define FTMISSING_BULK_TILE 15360  /* bytes per cp.async.bulk tile (3 stages fit in 48 KB) */
#define FTMISSING_BULK_STAGES 3    /* shared-memory stages per block of the bulk variant */
#define FTMISSING_BULK_BLOCKS_PER_SM 4

/* Bulk (TMA) variant, sm_90 only. Grid: blocks of one warp whose lane 0 drives a
 * FTMISSING_BULK_STAGES-deep pipeline: cp.async.bulk host -> shared (mbarrier), then
 * cp.async.bulk shared -> pool. Tiles of FTMISSING_BULK_TILE bytes; tile g of the flat space
 * (entry, bank, tile) goes to block g % gridDim.x. */
__global__ void __launch_bounds__(32)
	bulk_kernel(const struct ftmissing_layer_tab *__restrict__ tabs, int layer, const int32_t *__restrict__ src,
		    const int32_t *__restrict__ dst, const int32_t *__restrict__ num, int max_n)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
	__shared__ __align__(128) unsigned char buf[FTMISSING_BULK_STAGES][FTMISSING_BULK_TILE];
	__shared__ __align__(8) unsigned long long bar[FTMISSING_BULK_STAGES];
	if (threadIdx.x != 0)
		return;
	const struct ftmissing_layer_tab t = tabs[layer];
	int n = *num;
	n = n < max_n ? n : max_n;
	if (n <= 0)
		return;
	unsigned pre[FTMISSING_MAX_BANKS + 1];
	pre[0] = 0;
	for (int b = 0; b < t.nb; b++)
		pre[b + 1] = pre[b] + (t.row16[b] * 16u + FTMISSING_BULK_TILE - 1) / FTMISSING_BULK_TILE;
	const unsigned per = pre[t.nb], total = (unsigned)n * per;
	for (int s = 0; s < FTMISSING_BULK_STAGES; s++) {
		unsigned a = (unsigned)__cvta_generic_to_shared(&bar[s]);
		asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(a));
	}
	asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
	asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
	auto tile = [&](unsigned g, const unsigned char **sp, unsigned char **dp) -> unsigned {
		unsigned ent = g / per, k = g - ent * per;
		int b = 0;
		while (b + 1 < t.nb && k >= pre[b + 1])
			b++;
		k -= pre[b];
		size_t rb = (size_t)t.row16[b] * 16u, off = (size_t)k * FTMISSING_BULK_TILE;
		*sp = (const unsigned char *)t.host[b] + (size_t)src[ent] * rb + off;
		*dp = (unsigned char *)t.pool[b] + (size_t)dst[ent] * rb + off;
		return (unsigned)(rb - off < FTMISSING_BULK_TILE ? rb - off : FTMISSING_BULK_TILE);
	};
	auto issue = [&](int s, unsigned g) {
		const unsigned char *sp;
		unsigned char *dp;
		unsigned bytes = tile(g, &sp, &dp);
		unsigned a = (unsigned)__cvta_generic_to_shared(&bar[s]);
		unsigned sm = (unsigned)__cvta_generic_to_shared(buf[s]);
		asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(a), "r"(bytes) : "memory");
		asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(sm),
			     "l"(sp), "r"(bytes), "r"(a)
			     : "memory");
	};
	for (int s = 0; s < FTMISSING_BULK_STAGES; s++) {
		unsigned g = blockIdx.x + (unsigned)s * gridDim.x;
		if (g < total)
			issue(s, g);
	}
	for (unsigned i = 0;; i++) {
		unsigned g = blockIdx.x + i * gridDim.x;
		if (g >= total)
			break;
		int s = (int)(i % FTMISSING_BULK_STAGES);
		unsigned parity = (i / FTMISSING_BULK_STAGES) & 1, a = (unsigned)__cvta_generic_to_shared(&bar[s]), ok;
		do {
			asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
				     : "=r"(ok)
				     : "r"(a), "r"(parity)
				     : "memory");
		} while (!ok);
		const unsigned char *sp;
		unsigned char *dp;
		unsigned bytes = tile(g, &sp, &dp);
		unsigned sm = (unsigned)__cvta_generic_to_shared(buf[s]);
		asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(dp), "r"(sm), "r"(bytes)
			     : "memory");
		asm volatile("cp.async.bulk.commit_group;" ::: "memory");
		unsigned gn = g + FTMISSING_BULK_STAGES * gridDim.x;
		if (gn < total) {
			asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
			issue(s, gn);
		}
	}
	asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
#else
	__trap();
#endif
}

static cudaError_t launch(const struct ftmissing *c, int variant, int blocks, int layer, const int32_t *src,
			  const int32_t *dst, const int32_t *num, int max_n, cudaStream_t s)
{
	if (!c || layer < 0 || layer >= c->layers || max_n < 0 || !src || !dst || !num)
		return cudaErrorInvalidValue;
	const unsigned all = (1u << c->nbanks) - 1;
	if (max_n == 0)
		return cudaSuccess;
	if (!c->d_tabs || (unsigned long long)c->e16 * (unsigned long long)max_n >= (1ull << 32))
		return cudaErrorInvalidValue;
	if (blocks <= 0)
		blocks = c->sms * (variant == FTCV_BULK ? FTMISSING_BULK_BLOCKS_PER_SM : FTMISSING_BLOCKS_PER_SM);
	switch (variant) {
	case FTCV_L2_256:
		fused_kernel<FTMISSING_UNROLL, 1><<<blocks, FTMISSING_BLOCK, 0, s>>>(c->d_tabs, layer, all, 0, NULL, src, dst,
										   num, max_n);
		break;
	case FTCV_UNROLL4:
		fused_kernel<4, 0><<<blocks, FTMISSING_BLOCK, 0, s>>>(c->d_tabs, layer, all, 0, NULL, src, dst, num, max_n);
		break;
	case FTCV_UNROLL16:
		fused_kernel<16, 0><<<blocks, FTMISSING_BLOCK, 0, s>>>(c->d_tabs, layer, all, 0, NULL, src, dst, num, max_n);
		break;
	case FTCV_BULK: {
		int dev, major;
		cudaGetDevice(&dev);
		cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
		if (major < 9)
			return cudaErrorInvalidDeviceFunction;
		bulk_kernel<<<blocks, 32, 0, s>>>(c->d_tabs, layer, src, dst, num, max_n);
		break;
	}
	default:
		return cudaErrorInvalidValue;
	}
	return cudaGetLastError();
}

#define FTCV_FN(name, v)                                                                                       \
	static int name(const struct ftmissing *c, int blocks, int layer, const int32_t *src, const int32_t *dst,    \
			const int32_t *num, int max_n, void *stream)                                            \
	{                                                                                                      \
		return (int)launch(c, v, blocks, layer, src, dst, num, max_n, (cudaStream_t)stream);            \
	}
FTCV_FN(l2_256, FTCV_L2_256)
FTCV_FN(unroll4, FTCV_UNROLL4)
FTCV_FN(unroll16, FTCV_UNROLL16)
FTCV_FN(bulk, FTCV_BULK)

extern "C" ftgather_fused_fn *ftcv_fn(int variant)
{
	static ftgather_fused_fn *const fn[FTCV_COUNT] = {l2_256, unroll4, unroll16, bulk};
	return variant >= 0 && variant < FTCV_COUNT ? fn[variant] : NULL;
}

extern "C" const char *ftcv_name(int variant)
{
	static const char *const n[FTCV_COUNT] = {"l2_256", "unroll4", "unroll16", "bulk"};
	return variant >= 0 && variant < FTCV_COUNT ? n[variant] : "?";
}
