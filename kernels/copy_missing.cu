/* copy_missing (GPU): see copy_missing.h. */
#include "copy_missing_impl.cuh"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Per-bank gather of one bank in units of T (16, 4 or 1 bytes). Grid as the fused kernel. */
template <typename T>
__global__ void __launch_bounds__(FTMISSING_BLOCK)
	bank_kernel(const T *__restrict__ host, T *__restrict__ pool, unsigned rowu,
		    const int32_t *__restrict__ src, const int32_t *__restrict__ dst,
		    const int32_t *__restrict__ num, int max_n)
{
	int n = *num;
	n = n < max_n ? n : max_n;
	if (n <= 0)
		return;
	gather_units<T, FTMISSING_UNROLL, 0>((unsigned)n * rowu, ftmissing_row_at<T>{host, pool, rowu, src, dst});
}

extern "C" int ftmissing_env_fused(void)
{
	const char *v = getenv("FREETOKEN_FUSED_COPY");
	if (!v)
		return 1;
	return !(!strcmp(v, "0") || !strcasecmp(v, "false") || !strcasecmp(v, "no") || !strcasecmp(v, "off"));
}

extern "C" cudaError_t ftmissing_create(struct ftmissing **out, const struct ftmissing_bank *banks, int layers, int nbanks,
				   int want_fused, char *note, size_t notelen)
{
	*out = NULL;
	if (note && notelen)
		note[0] = 0;
	if (!banks || layers <= 0 || nbanks <= 0 || nbanks > FTMISSING_MAX_BANKS)
		return cudaErrorInvalidValue;
	struct ftmissing *c = (struct ftmissing *)calloc(1, sizeof *c);
	if (!c)
		return cudaErrorMemoryAllocation;
	c->layers = layers;
	c->nbanks = nbanks;
	c->banks = (struct ftmissing_bank *)malloc(sizeof *banks * layers * nbanks);
	if (!c->banks) {
		free(c);
		return cudaErrorMemoryAllocation;
	}
	memcpy(c->banks, banks, sizeof *banks * layers * nbanks);
	int dev;
	cudaError_t e;
	if ((e = cudaGetDevice(&dev)) || (e = cudaDeviceGetAttribute(&c->sms, cudaDevAttrMultiProcessorCount, dev))) {
		ftmissing_destroy(c);
		return e;
	}
	/* The fused path needs every row, host base and pool base 16-byte aligned. */
	const char *why = NULL;
	int bad_bank = -1;
	for (int i = 0; i < layers * nbanks && !why; i++) {
		const struct ftmissing_bank *k = &banks[i];
		if (!k->host || !k->pool || !k->row_bytes) {
			ftmissing_destroy(c);
			return cudaErrorInvalidValue;
		}
		if (k->pool != banks[i % nbanks].pool) {
			ftmissing_destroy(c);
			return cudaErrorInvalidValue;
		}
		if (k->row_bytes % 16)
			why = "row size", bad_bank = i % nbanks;
		else if ((uintptr_t)k->host % 16)
			why = "host base", bad_bank = i % nbanks;
		else if ((uintptr_t)k->pool % 16)
			why = "pool base", bad_bank = i % nbanks;
	}
	if (why && note)
		snprintf(note, notelen, "fused copy disabled: bank %d %s is not 16-byte aligned; using the per-bank path",
			 bad_bank, why);
	if (!why) {
		struct ftmissing_layer_tab *h = (struct ftmissing_layer_tab *)calloc((size_t)layers, sizeof *h);
		if (!h) {
			ftmissing_destroy(c);
			return cudaErrorMemoryAllocation;
		}
		for (int l = 0; l < layers; l++) {
			h[l].nb = nbanks;
			for (int b = 0; b < nbanks; b++) {
				const struct ftmissing_bank *k = &banks[l * nbanks + b];
				h[l].host[b] = (const uint4 *)k->host;
				h[l].pool[b] = (uint4 *)k->pool;
				h[l].row16[b] = (unsigned)(k->row_bytes / 16);
				h[l].pre16[b + 1] = h[l].pre16[b] + h[l].row16[b];
			}
		}
		c->e16 = h[0].pre16[nbanks];
		if ((e = cudaMalloc((void **)&c->d_tabs, sizeof *h * layers)) ||
		    (e = cudaMemcpy(c->d_tabs, h, sizeof *h * layers, cudaMemcpyHostToDevice))) {
			free(h);
			ftmissing_destroy(c);
			return e;
		}
		free(h);
	}
	c->fused = !why && want_fused;
	*out = c;
	return cudaSuccess;
}

extern "C" void ftmissing_destroy(struct ftmissing *c)
{
	if (!c)
		return;
	cudaFree(c->d_tabs);
	free(c->banks);
	free(c);
}

extern "C" int ftmissing_is_fused(const struct ftmissing *c)
{
	return c && c->fused;
}

static cudaError_t per_bank(const struct ftmissing *c, int blocks, int layer, unsigned mask, const int32_t *src,
			    const int32_t *dst, const int32_t *num, int max_n, cudaStream_t s)
{
	for (int b = 0; b < c->nbanks; b++) {
		if (!(mask >> b & 1))
			continue;
		const struct ftmissing_bank *k = &c->banks[layer * c->nbanks + b];
		uintptr_t al = (uintptr_t)k->host | (uintptr_t)k->pool | (uintptr_t)k->row_bytes;
		size_t unit = al % 16 == 0 ? 16 : al % 4 == 0 ? 4 : 1;
		size_t rowu = k->row_bytes / unit;
		if ((unsigned long long)rowu * (unsigned long long)max_n >= (1ull << 32))
			return cudaErrorInvalidValue;
		if (unit == 16)
			bank_kernel<uint4><<<blocks, FTMISSING_BLOCK, 0, s>>>((const uint4 *)k->host, (uint4 *)k->pool,
									  (unsigned)rowu, src, dst, num, max_n);
		else if (unit == 4)
			bank_kernel<unsigned><<<blocks, FTMISSING_BLOCK, 0, s>>>((const unsigned *)k->host, (unsigned *)k->pool,
									     (unsigned)rowu, src, dst, num, max_n);
		else
			bank_kernel<unsigned char><<<blocks, FTMISSING_BLOCK, 0, s>>>(
				(const unsigned char *)k->host, (unsigned char *)k->pool, (unsigned)rowu, src, dst, num, max_n);
		cudaError_t e = cudaGetLastError();
		if (e)
			return e;
	}
	return cudaSuccess;
}

/* The copy of the banks in mask with the path forced (see ftmissing_copy_path). */
cudaError_t ftmissing_copy_banks(const struct ftmissing *c, int fused, int blocks, int layer, unsigned mask,
			      const int32_t *src, const int32_t *dst, const int32_t *num, int max_n, cudaStream_t s)
{
	if (max_n == 0 || !mask)
		return cudaSuccess;
	if (blocks <= 0)
		blocks = c->sms * FTMISSING_BLOCKS_PER_SM;
	if (!fused)
		return per_bank(c, blocks, layer, mask, src, dst, num, max_n, s);
	if (!c->d_tabs || (unsigned long long)c->e16 * (unsigned long long)max_n >= (1ull << 32))
		return cudaErrorInvalidValue;
	fused_kernel<FTMISSING_UNROLL, 0><<<blocks, FTMISSING_BLOCK, 0, s>>>(c->d_tabs, layer, mask, 0, NULL, src, dst, num,
									   max_n);
	return cudaGetLastError();
}

extern "C" cudaError_t ftmissing_copy_path(const struct ftmissing *c, int fused, int blocks, int layer, const int32_t *src,
				      const int32_t *dst, const int32_t *num, int max_n, cudaStream_t s)
{
	if (!c || layer < 0 || layer >= c->layers || max_n < 0 || !src || !dst || !num)
		return cudaErrorInvalidValue;
	return ftmissing_copy_banks(c, fused, blocks, layer, (1u << c->nbanks) - 1, src, dst, num, max_n, s);
}

extern "C" cudaError_t ftmissing_copy(const struct ftmissing *c, int layer, const int32_t *src, const int32_t *dst,
				 const int32_t *num, int max_n, cudaStream_t s)
{
	if (!c)
		return cudaErrorInvalidValue;
	return ftmissing_copy_path(c, c->fused, 0, layer, src, dst, num, max_n, s);
}

cudaError_t ftmissing_launch_fused_rest(const struct ftmissing *c, int layer, unsigned sm_mask, unsigned ce_mask,
					const unsigned long long *head_seq, const int32_t *src, const int32_t *dst,
					const int32_t *num, int max_n, cudaStream_t s)
{
	fused_kernel<FTMISSING_UNROLL, 0><<<c->sms * FTMISSING_BLOCKS_PER_SM, FTMISSING_BLOCK, 0, s>>>(
		c->d_tabs, layer, sm_mask, ce_mask, head_seq, src, dst, num, max_n);
	return cudaGetLastError();
}

cudaError_t ftmissing_preload_gather_kernels(void)
{
	struct cudaFuncAttributes a;
	cudaError_t e;
	if ((e = cudaFuncGetAttributes(&a, fused_kernel<FTMISSING_UNROLL, 0>)) ||
	    (e = cudaFuncGetAttributes(&a, bank_kernel<uint4>)) || (e = cudaFuncGetAttributes(&a, bank_kernel<unsigned>)) ||
	    (e = cudaFuncGetAttributes(&a, bank_kernel<unsigned char>)))
		return e;
	return cudaSuccess;
}
