/* The replay's measurement as a cost model (replay.h, ftrp_fake_ops), for test builds only
 * (FT_TEST_HOOKS: the unit test test_replay and ftbench_hooks with FTBENCH_TEST_FAKE_GPUS; the
 * product has none of it). Per layer-step: 0.1 ms, plus max(fetched x 1 ms, CPU misses x 0.5 ms) (the
 * copy and the CPU overlap; a CPU twice as fast as the link, so the bandwidth rule says hybrid),
 * plus 0.1 ms of handshake on hybrid layers; a deterministic jitter of +-2 % per step. The
 * decisions are the CPU reference's, as the GPU's must be. */
#ifndef FT_TEST_HOOKS
#error "tests/lib/fake_replay.c belongs to test builds (FT_TEST_HOOKS) only"
#endif
#include "replay/replay.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct fake {
	int miscount;
	unsigned runs;
	const double *pad_us, *fetch_us;
	int npad;
	double cpu_s, paced_s; /* our cost model's CPU side and the paced one, over every layer-step */
	long paced_layers;
};

/* table t of f->npad entries at n (seconds): past its end the last entry's slope */
static double pad_of(const struct fake *f, const double *t, int n)
{
	if (n < f->npad)
		return t[n] * 1e-6;
	double last = t[f->npad - 1], slope = f->npad > 1 ? last - t[f->npad - 2] : 0;
	return (last + slope * (n - (f->npad - 1))) * 1e-6;
}

static int f_open(void *ctx, const struct ftrp_config *c, long slots_max, char *err, size_t errlen)
{
	(void)ctx, (void)c, (void)slots_max, (void)err, (void)errlen;
	return 0;
}

static int f_run(void *ctx, const struct ftsc *warm, const struct ftrp_workload *w, int untimed,
		 const struct ftrp_policy *p, double *step_s, struct ftrp_counts *cnt, char *err, size_t errlen)
{
	struct fake *f = ctx;
	struct ftsc sc;
	int32_t slots[FTRP_MAX_BATCH * FTRP_MAX_TOPK], cpu[FTRP_MAX_BATCH * FTRP_MAX_TOPK];
	int32_t *src = malloc((size_t)w->experts * sizeof *src), *dst = malloc((size_t)w->experts * sizeof *dst);
	int r = src && dst ? ftsc_init(&sc, warm->layers, warm->experts, warm->slots) : -ENOMEM;
	struct ftsc_plan plan = {src, dst, w->experts, 0, 0};
	if (!r && (r = ftsc_copy(&sc, warm)))
		ftsc_release(&sc);
	if (r) {
		free(src);
		free(dst);
		snprintf(err, errlen, "fake: %s", strerror(-r));
		return r;
	}
	memset(cnt, 0, sizeof *cnt);
	uint32_t jit = 12345u + f->runs++;
	for (int s = 0; s < w->steps && !r; s++) {
		double t = 0;
		for (int l = 0; l < w->layers && !r; l++) {
			struct ftrp_counts one = {0};
			r = ftrp_ref_layer(&sc, p, l, w->batch, w->topk, ftrp_ids(w, s, l), slots, cpu, &plan, &one);
			double gpu = (double)one.fetched * 1e-3, cw = (double)one.cpu * 0.5e-3;
			int hyb = ftrp_policy_hybrid_at(p, w->batch);
			double extra = hyb && f->npad > 0 && f->fetch_us ? pad_of(f, f->fetch_us, (int)one.fetched) : 0;
			if (hyb && f->npad > 0 && s >= untimed) {
				double pw = pad_of(f, f->pad_us, (int)one.cpu_routes);
				f->cpu_s += cw;
				cw = pw > cw ? pw : cw;
				f->paced_s += cw;
				f->paced_layers++;
			}
			gpu += extra;
			t += 1e-4 + (gpu > cw ? gpu : cw) + (hyb ? 1e-4 : 0);
			if (s >= untimed)
				ftrp_counts_add(cnt, &one);
		}
		jit = jit * 1103515245u + 12345u;
		if (s >= untimed)
			step_s[s - untimed] = t * (0.98 + 0.04 * (double)(jit >> 16 & 0xffff) / 65535.0);
	}
	cnt->fetched += f->miscount;
	ftsc_release(&sc);
	free(src);
	free(dst);
	if (r)
		snprintf(err, errlen, "fake: %s", strerror(-r));
	return r;
}

static void f_describe(void *ctx, json_t *block)
{
	struct fake *f = ctx;
	json_object_set_new(block, "host_alloc", json_string("register"));
	json_object_set_new(block, "runner", json_pack("{s:s}", "fake", "cost model (FTBENCH_TEST_FAKE_GPUS)"));
	if (f->npad > 0 && f->paced_layers > 0)
		json_object_set_new(block, "cpu_service_us",
				    json_pack("{s:f,s:f,s:I}", "ours", f->cpu_s * 1e6 / (double)f->paced_layers, "paced",
					      f->paced_s * 1e6 / (double)f->paced_layers, "layer_steps",
					      (json_int_t)f->paced_layers));
}

int ftrp_fake_ops(int miscount, struct ftrp_ops *ops)
{
	return ftrp_fake_ops_paced(miscount, NULL, 0, NULL, ops);
}

int ftrp_fake_ops_paced(int miscount, const double *pad_us, int npad, const double *fetch_us, struct ftrp_ops *ops)
{
	struct fake *f = calloc(1, sizeof *f);
	if (!f)
		return -ENOMEM;
	f->miscount = miscount;
	f->pad_us = pad_us;
	f->npad = pad_us ? npad : 0;
	f->fetch_us = fetch_us;
	*ops = (struct ftrp_ops){.open = f_open, .run = f_run, .describe = f_describe, .ctx = f};
	return 0;
}

void ftrp_fake_ops_free(struct ftrp_ops *ops)
{
	if (ops) {
		free(ops->ctx);
		ops->ctx = NULL;
	}
}
