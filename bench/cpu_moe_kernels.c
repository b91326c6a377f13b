/* cpu_moe_kernels: in-cache throughput of each CPU MoE kernel on one thread (bench/README.md): one
 * expert matrix of 192 rows x K (default 3072; L2-resident), NB tokens, per format and ISA tier
 * (amx: the 4-bit formats' int8 tiles at every NB, its threshold set to 1), GB/s of weight bytes; then mxfp4_triton's split along K (64 bank rows of 5760
 * columns, gpt-oss gate_up). Tiers the CPU lacks are skipped. The weight bytes are random but
 * decode to normal numbers (no denormals). Built by `make bench-tools`.
 * usage: cpu_moe_kernels [NB (1..32, default 1) [K (32..8192, a multiple of 32)]] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "hw/cpu.h"
#include "moe/cpu/cpumoe.h"
#include "moe/cpu/kern.h"
#include "moe/formats.h"

#define ROWS 192
#define MAX_NB 32
#define MAX_K 8192

static uint8_t w[8 << 20], sc[1 << 20], gl[1 << 16];
static float x[MAX_NB][MAX_K], y[MAX_NB][4096], part[MAX_NB][5760], tmp[MAX_NB * 5760];
static _Alignas(64) uint8_t xq[MAX_NB][1 << 16];

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

static void prep_inputs(const struct ftkern_ops *o, long K, int nb, const void **xs)
{
	for (int b = 0; b < nb; b++) {
		if (o->prep) {
			o->prep(x[b], K, xq[b]);
			xs[b] = xq[b];
		} else {
			xs[b] = x[b];
		}
	}
}

int main(int argc, char **argv)
{
	struct ftcpu_info ci;
	int nb = argc > 1 ? atoi(argv[1]) : 1;
	long K = argc > 2 ? atol(argv[2]) : 3072, N = ROWS;
	if (nb < 1 || nb > MAX_NB || K < 32 || K > MAX_K || K % 32) {
		fprintf(stderr, "usage: cpu_moe_kernels [NB (1..%d) [K (32..%d, a multiple of 32)]]\n", MAX_NB, MAX_K);
		return 2;
	}
	if (ftcpu_probe(&ci) < 0) {
		fprintf(stderr, "cpu_moe_kernels: cannot probe the CPU\n");
		return 1;
	}
	struct ftkern_knobs kn = ftkern_knobs_default; /* the knobs of every kernel call below */
	kn.amx_i8_min_nb = 1;
	for (size_t i = 0; i < sizeof w; i++)
		w[i] = (uint8_t)((i & 1) ? 0x3c + (rand() & 3) : rand());
	for (size_t i = 0; i < sizeof sc; i++)
		sc[i] = (uint8_t)(0x38 + (rand() & 7));
	for (size_t i = 0; i < sizeof gl; i += 2) {
		gl[i] = 0;
		gl[i + 1] = 0x3c;
	}
	for (int b = 0; b < MAX_NB; b++)
		for (int k = 0; k < MAX_K; k++)
			x[b][k] = (float)(rand() % 200 - 100) / 100.f + 0.001f;
	static const char *const names[] = {"bf16", "nvfp4", "ds_fp4", "q4_0", "mxfp4_triton"};
	for (size_t fi = 0; fi < sizeof names / sizeof names[0]; fi++) {
		const struct ftfmt *f = ftfmt_lookup(names[fi]);
		if (!f)
			continue;
		for (int isa = 0; isa <= FTCPUMOE_ISA_AMX; isa++) {
			if (!ftcpumoe_isa_supported((enum ftcpumoe_isa)isa, ci.isa))
				continue;
			if (isa == FTCPUMOE_ISA_AMX && f->id == FTFMT_BF16)
				continue; /* the bf16 tiles: ftbench cpu-moe --isa amx */
			const struct ftkern_ops *o = ftkern_select(isa, f->id, ci.isa);
			if (!o || !o->rows)
				continue;
			struct ftkern_mat m = {w, sc, gl, K, N, &kn};
			size_t bytes = f->id == FTFMT_BF16   ? (size_t)(N * K * 2)
				       : f->id == FTFMT_Q4_0 ? (size_t)(N * K / 32 * 18)
							     : (size_t)(N * K / 2 + N * K / 16);
			if (f->id == FTFMT_Q4_0) /* the fp16 scale d of each block: 2^-7 */
				for (long i = 0; i < N * K / 32; i++) {
					w[i * 18] = 0;
					w[i * 18 + 1] = 0x20;
				}
			const void *xs[MAX_NB];
			float *ys[MAX_NB];
			prep_inputs(o, K, nb, xs);
			for (int b = 0; b < nb; b++)
				ys[b] = y[b];
			int reps = isa == FTCPUMOE_ISA_SCALAR ? 3 : 200;
			o->rows(&m, 0, N, nb, xs, ys);
			double t = now();
			for (int r = 0; r < reps; r++)
				o->rows(&m, 0, N, nb, xs, ys);
			t = now() - t;
			printf("%-13s %-11s %-15s nb=%d  %.1f GB/s (in cache)\n", names[fi],
			       ftcpumoe_isa_name((enum ftcpumoe_isa)isa), o->name, nb, (double)bytes * reps / t / 1e9);
		}
	}
	for (int isa = 0; isa <= FTCPUMOE_ISA_AMX; isa++) {
		if (!ftcpumoe_isa_supported((enum ftcpumoe_isa)isa, ci.isa))
			continue;
		const struct ftkern_ops *o = ftkern_select(isa, FTFMT_MXFP4_TRITON, ci.isa);
		if (!o || !o->rows_t)
			continue;
		float *ps[MAX_NB];
		const void *xs[MAX_NB];
		struct ftkern_mat m = {w, sc, NULL, 2880, 5760, &kn};
		prep_inputs(o, 2880, nb, xs);
		for (int b = 0; b < nb; b++)
			ps[b] = part[b];
		int reps = 100;
		for (int v = 0; v < 2; v++) { /* the two decodes of the W4A8 K split (the mx_vbmi knob) */
			kn.mx_vbmi = v;
			o->rows_t(&m, 0, 64, nb, xs, ps, tmp);
			double t = now();
			for (int r = 0; r < reps; r++)
				o->rows_t(&m, 0, 64, nb, xs, ps, tmp);
			t = now() - t;
			printf("%-13s %-11s %-15s nb=%d  %.1f GB/s (in cache, split along K, mx_vbmi=%d: the VBMI decode at nb=1 only)\n", "mxfp4_triton",
			       ftcpumoe_isa_name((enum ftcpumoe_isa)isa), o->name, nb, 64.0 * 5760 * reps / t / 1e9, v);
		}
		kn.mx_vbmi = FTKERN_MX_VBMI;
	}
	return 0;
}
