/* The loaders' transposing copy (ftbanks_piece_copy) per core, for bench/RESULTS.md (section 5):
 * one gpt-oss-120b expert's gate_up_proj as transformers saves it ([H 2880][2I 5760] bf16 ->
 * the bf16 gate_up bank, transposed and de-interleaved) fed in 8 MiB chunks as the parallel
 * reader does, and a released gpt-oss block tensor's shape as u8 ([N 5760][K/2 1440] ->
 * [1440][5760]) in one piece as the serial reader does. Best of 7, CPU time (the host is shared).
 * Built by `make bench-tools`; usage: build/bench/transpose_copy. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

#include "moe/banks.h"

static double cpu_s(void)
{
	struct rusage u;
	getrusage(RUSAGE_SELF, &u);
	return (double)u.ru_utime.tv_sec + u.ru_utime.tv_usec / 1e6;
}

int main(void)
{
	const long H = 2880, I = 2880;
	struct ftbanks *b;
	if (ftbanks_alloc(ftfmt_get(FTFMT_BF16), H, I, 1, 1, NULL, &b) < 0)
		return 1;
	size_t n = (size_t)H * 2 * I * 2, chunk = 8u << 20;
	unsigned char *src = malloc(n);
	if (!src)
		return 1;
	for (size_t i = 0; i < n; i++)
		src[i] = (unsigned char)(i * 131);
	struct ftbanks_piece gu = {0, 0, n, 0, 0, 0, 1, (uint32_t)H, (uint32_t)(2 * I), 2, 1, NULL};
	struct ftbanks_piece mx = {0, 0, n / 2, 0, 0, 0, 1, (uint32_t)(2 * I), (uint32_t)(H / 2), 1, 0, NULL};
	double best_gu = 1e9, best_mx = 1e9;
	for (int r = 0; r < 7; r++) {
		double t = cpu_s();
		for (size_t off = 0; off < n; off += chunk)
			ftbanks_piece_copy(&gu, b, off, src + off, off + chunk > n ? n - off : chunk);
		t = cpu_s() - t;
		best_gu = t < best_gu ? t : best_gu;
		t = cpu_s();
		ftbanks_piece_copy(&mx, b, 0, src, n / 2);
		t = cpu_s() - t;
		best_mx = t < best_mx ? t : best_mx;
	}
	printf("bf16 [2880][5760] de-interleaving transpose: %.2f GB/s\n", (double)n / best_gu / 1e9);
	printf("u8 [5760][1440] transpose:                  %.2f GB/s\n", (double)n / 2 / best_mx / 1e9);
	free(src);
	ftbanks_free(b);
	return 0;
}
