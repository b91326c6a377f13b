/* Per-step fixed cost of the CPU MoE executor (bench/README.md): a
 * forward with tiny experts (H = I = 64, E 8, top-8, batch 1), so a step is the pool wake-up,
 * the barriers, the activation prep and the reductions with next to no weight bytes. Prints the
 * median and p90 step time per format and thread count. Built by `make bench-tools`;
 * usage: build/bench/cpu_moe_overhead [threads [topk [auto|static|dynamic [KEY=VALUE...]]]] (the
 * schedule: auto takes the static ones below 8 workers, so dynamic times the H200's schedule on
 * a small host; then --tune settings, e.g. trace=1: the step's parts, medians over the steps, as
 * ftcpumoe_trace gives them). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "hw/cpu.h"
#include "moe/cpu/cpumoe.h"
#include "moe/cpu/pool.h"
#include "moe/formats.h"
#include "util/timeutil.h"

static int cmpd(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	struct ftcpu_info ci;
	if (ftcpu_probe(&ci) < 0)
		return 1;
	int threads = argc > 1 ? atoi(argv[1]) : 0;
	struct ftpool *pool;
	if (ftpool_create(&ci, threads, -1, &pool) < 0)
		return 1;
	ftpool_pin_caller(pool);
	struct ftcpumoe_tune tune;
	ftcpumoe_tune_defaults(&tune);
	const char *sched = argc > 3 ? argv[3] : "auto";
	if (!strcmp(sched, "static")) {
		tune.sched = FTCPUMOE_SCHED_STATIC;
	} else if (!strcmp(sched, "dynamic")) {
		tune.sched = FTCPUMOE_SCHED_DYNAMIC;
	} else if (strcmp(sched, "auto")) {
		fprintf(stderr, "cpu_moe_overhead: schedule '%s': want auto, static or dynamic\n", sched);
		return 2;
	}
	for (int i = 4; i < argc; i++) {
		char why[256];
		if (ftcpumoe_tune_set(&tune, argv[i], why, sizeof why) < 0) {
			fprintf(stderr, "cpu_moe_overhead: %s\n", why);
			return 2;
		}
	}
	const char *names[] = {"bf16", "nvfp4", "q4_0", "mxfp4_triton"};
	long H = 64, I = 64;
	int E = 8, K = argc > 2 ? atoi(argv[2]) : 8;
	for (int fi = 0; fi < 4; fi++) {
		const struct ftfmt *f = ftfmt_lookup(names[fi]);
		struct ftfmt_bank_shape sh[FTFMT_MAX_BANKS];
		int nb = ftfmt_banks(f, H, I, sh);
		const void *banks[FTFMT_MAX_BANKS];
		for (int i = 0; i < nb; i++) {
			uint8_t *p = malloc(sh[i].expert_bytes * (size_t)E);
			for (size_t j = 0; j < sh[i].expert_bytes * (size_t)E; j++)
				p[j] = (uint8_t)(0x30 + (rand() & 7)); /* small normal codes and scales */
			banks[i] = p;
		}
		struct ftcpumoe_cfg cfg = {.format = f->id, .hidden = H, .inter = I, .experts = E, .layers = 1,
					 .banks = banks, .act = FTFMT_ACT_SILU, .swiglu_limit = 7, .max_batch = 1,
					 .max_topk = K, .isa = FTCPUMOE_ISA_AUTO, .pool = pool, .cpu = &ci, .tune = &tune};
		struct ftcpumoe *x;
		if (ftcpumoe_create(&cfg, &x) < 0)
			return 1;
		float xin[64], w[8], out[64];
		int32_t ids[8];
		for (int i = 0; i < 64; i++)
			xin[i] = (float)(i % 7) - 3.1f;
		for (int k = 0; k < K; k++) {
			ids[k] = k;
			w[k] = 0.125f;
		}
		enum { N = 20000 };
		static double t[N];
		for (int i = 0; i < N + 1000; i++) {
			if (i == 1000)
				ftcpumoe_trace(x, NULL, 1); /* the medians of the first timed steps (-ENODATA: off) */
			double t0 = fttime_now_s();
			ftcpumoe_forward(x, 0, 1, K, xin, ids, w, out);
			if (i >= 1000)
				t[i - 1000] = fttime_now_s() - t0;
		}
		qsort(t, N, sizeof t[0], cmpd);
		printf("%-13s %-11s %-7s threads %d: step median %.2f us, p90 %.2f us\n", names[fi],
		       ftcpumoe_isa_name(ftcpumoe_isa(x)), sched, ftpool_size(pool), t[N / 2] * 1e6, t[N * 9 / 10] * 1e6);
		struct ftcpumoe_trace tc;
		if (ftcpumoe_trace(x, &tc, 1) == 0 && tc.steps > 0) {
			const struct ftcpumoe_trace_fig *m = &tc.med; 
			printf("  trace medians, us: step %.2f, last worker done %.2f; per worker: start %.2f (prep %.2f), "
			       "items %.2f, wait %.2f, idle %.2f (after the last arrival %.2f), after %.2f\n", m->step_us,
			       m->last_us, m->start_us, m->prep_us, m->items_us, m->wait_us, m->idle_us, m->bar_us,
			       m->after_us);
		}
		ftcpumoe_free(x);
		for (int i = 0; i < nb; i++)
			free((void *)banks[i]);
	}
	ftpool_free(pool);
	return 0;
}
