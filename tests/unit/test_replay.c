/* replay: the placement policies on the CPU reference, step by step against expectations worked
 * out by hand (which misses are fetched, which go to the CPU, what enters the cache, LRU order);
 * the workload generator; the trace file and its errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../schema.h"
#include "moe/models.h"
#include "replay/policy.h"
#include "replay/replay.h"
#include "replay/workload.h"
#include "../lib/tmpdir.h"

static int32_t src_buf[64], dst_buf[64];

struct step_want {
	int32_t ids[4];        /* B*K ids asked */
	int32_t slots[4];      /* expected slot or -1 */
	int32_t cpu[4];        /* expected CPU id or -1 */
	int nplan;
	int32_t src[4], dst[4];
	int misses;
};

static void run_steps(struct ftsc *sc, const struct ftrp_policy *p, int B, int K, const struct step_want *w, int n,
		      struct ftrp_counts *c)
{
	for (int s = 0; s < n; s++) {
		struct ftsc_plan plan = {src_buf, dst_buf, 64, -1, -1};
		int32_t slots[4], cpu[4];
		assert_int_equal(ftrp_ref_layer(sc, p, 0, B, K, w[s].ids, slots, cpu, &plan, c), 0);
		for (int i = 0; i < B * K; i++) {
			if (slots[i] != w[s].slots[i])
				fail_msg("step %d: route %d slot %d, want %d", s + 1, i, slots[i], w[s].slots[i]);
			if (cpu[i] != w[s].cpu[i])
				fail_msg("step %d: route %d cpu id %d, want %d", s + 1, i, cpu[i], w[s].cpu[i]);
		}
		assert_int_equal(plan.num_indices, w[s].nplan);
		assert_int_equal(plan.num_missing_full, w[s].misses);
		for (int i = 0; i < w[s].nplan; i++) {
			if (plan.src_indices[i] != w[s].src[i] || plan.evict_slots[i] != w[s].dst[i])
				fail_msg("step %d: plan[%d] %d->%d, want %d->%d", s + 1, i, plan.src_indices[i],
					 plan.evict_slots[i], w[s].src[i], w[s].dst[i]);
		}
	}
}

/* The cache's ids from coldest to hottest (usage, then slot), -1 for empty slots. */
static void lru_order(const struct ftsc *sc, int32_t *out)
{
	int used[64] = {0};
	for (int k = 0; k < sc->slots; k++) {
		int best = -1;
		for (int s = 0; s < sc->slots; s++)
			if (!used[s] && (best < 0 || sc->usage[s] < sc->usage[best]))
				best = s;
		used[best] = 1;
		out[k] = sc->id_of_slot[best];
	}
}

static void order_eq(const struct ftsc *sc, const int32_t *want)
{
	int32_t got[64];
	lru_order(sc, got);
	for (int i = 0; i < sc->slots; i++)
		if (got[i] != want[i])
			fail_msg("LRU position %d holds %d, want %d", i, got[i], want[i]);
}

/* Offload: every miss fetched, in ascending id, into the coldest slots. E=8, C=4, top-2. */
static void test_offload(void **st)
{
	struct ftsc sc;
	struct ftrp_policy p;
	struct ftrp_counts c = {0};
	ftrp_policy_offload(&p);
	assert_int_equal(ftsc_init(&sc, 1, 8, 4), 0);
	static const struct step_want w[] = {
		{{3, 5}, {0, 1}, {-1, -1}, 2, {3, 5}, {0, 1}, 2},
		{{5, 6}, {1, 2}, {-1, -1}, 1, {6}, {2}, 1},
		/* slot 3 (never used) then slot 0 (id 3, usage 1) */
		{{1, 2}, {3, 0}, {-1, -1}, 2, {1, 2}, {3, 0}, 2},
		/* 3 was evicted: misses again, takes slot 1 (id 5, usage 2) */
		{{3, 6}, {1, 2}, {-1, -1}, 1, {3}, {1}, 1},
	};
	run_steps(&sc, &p, 1, 2, w, 4, &c);
	order_eq(&sc, (int32_t[]){2, 1, 3, 6});
	assert_int_equal(c.layer_steps, 4);
	assert_int_equal(c.active, 8);
	assert_int_equal(c.misses, 6);
	assert_int_equal(c.fetched, 6);
	assert_int_equal(c.cpu, 0);
	assert_true(fabs(ftrp_counts_miss_rate(&c) - 0.75) < 1e-12);
	ftsc_release(&sc);
}

/* Hybrid cap 1, recency order: one miss fetched per layer-step, the rest on the CPU and never in
 * the cache. */
static void test_hybrid_cap_recency(void **st)
{
	struct ftsc sc;
	struct ftrp_policy p;
	struct ftrp_counts c = {0};
	ftrp_policy_cap(&p, 1);
	assert_int_equal(ftsc_init(&sc, 1, 8, 4), 0);
	static const struct step_want w[] = {
		/* 3 and 5 never seen: the tie goes to the lower id */
		{{3, 5}, {0, -1}, {-1, 5}, 1, {3}, {0}, 2},
		/* 5 was active at step 1, 6 never: 5 first */
		{{5, 6}, {1, -1}, {-1, 6}, 1, {5}, {1}, 2},
		/* 3 hits; 6 (the only miss) is fetched */
		{{6, 3}, {2, 0}, {-1, -1}, 1, {6}, {2}, 1},
		{{1, 2}, {3, -1}, {-1, 2}, 1, {1}, {3}, 2},
	};
	run_steps(&sc, &p, 1, 2, w, 1, &c);
	assert_int_equal(sc.slot_for_id[5], -1); /* the CPU's miss did not enter the cache */
	run_steps(&sc, &p, 1, 2, w + 1, 3, &c);
	order_eq(&sc, (int32_t[]){5, 3, 6, 1});
	assert_int_equal(sc.slot_for_id[2], -1);
	assert_int_equal(c.misses, 7);
	assert_int_equal(c.fetched, 4);
	assert_int_equal(c.cpu, 3);
	assert_int_equal(c.cpu_routes, 3);
	ftsc_release(&sc);
}

/* Which misses: recency fetches the recently active one, lowest_id the smaller id. */
static void test_hybrid_order(void **st)
{
	for (int order = 0; order < 2; order++) {
		struct ftsc sc;
		struct ftrp_policy p;
		ftrp_policy_cap(&p, 1);
		p.order = order ? FTSC_ORDER_LOWEST_ID : FTSC_ORDER_RECENCY;
		assert_int_equal(ftsc_init(&sc, 1, 8, 4), 0);
		const struct step_want w0[] = {{{7, 0}, {-1, 0}, {7, -1}, 1, {0}, {0}, 2}};
		run_steps(&sc, &p, 1, 2, w0, 1, NULL);
		/* step 2: 2 (never seen) and 7 (seen at step 1) miss */
		const struct step_want rec[] = {{{2, 7}, {-1, 1}, {2, -1}, 1, {7}, {1}, 2}};
		const struct step_want low[] = {{{2, 7}, {1, -1}, {-1, 7}, 1, {2}, {1}, 2}};
		run_steps(&sc, &p, 1, 2, order ? low : rec, 1, NULL);
		ftsc_release(&sc);
	}
}

/* Fraction: the Q16 split of the misses (0.5 of 1 miss fetches none, of 2 one, of 3 one). */
static void test_hybrid_fraction(void **st)
{
	struct ftsc sc;
	struct ftrp_policy p;
	ftrp_policy_fraction(&p, 0.5);
	assert_int_equal(ftsc_init(&sc, 1, 8, 4), 0);
	static const struct step_want w[] = {
		{{1, 2}, {0, -1}, {-1, 2}, 1, {1}, {0}, 2},
		{{1, 4}, {0, -1}, {-1, 4}, 0, {0}, {0}, 1},
	};
	run_steps(&sc, &p, 1, 2, w, 2, NULL);
	order_eq(&sc, (int32_t[]){-1, -1, -1, 1});
	/* f = 0: every miss on the CPU; f = 1: every miss fetched */
	struct ftrp_policy none, all;
	ftrp_policy_fraction(&none, 0);
	ftrp_policy_fraction(&all, 1);
	const struct step_want w0[] = {{{5, 6}, {-1, -1}, {5, 6}, 0, {0}, {0}, 2}};
	run_steps(&sc, &none, 1, 2, w0, 1, NULL);
	const struct step_want w1[] = {{{5, 6}, {1, 2}, {-1, -1}, 2, {5, 6}, {1, 2}, 2}};
	run_steps(&sc, &all, 1, 2, w1, 1, NULL);
	ftsc_release(&sc);
}

/* Batch 2: ensure works on the distinct ids of the batch; offload_from_batch switches the policy. */
static void test_batch(void **st)
{
	struct ftsc sc;
	struct ftrp_policy p;
	struct ftrp_counts c = {0};
	ftrp_policy_cap(&p, 0);
	assert_int_equal(ftsc_init(&sc, 1, 8, 4), 0);
	static const struct step_want w[] = {{{1, 2, 2, 3}, {-1, -1, -1, -1}, {1, 2, 2, 3}, 0, {0}, {0}, 3}};
	run_steps(&sc, &p, 2, 2, w, 1, &c);
	assert_int_equal(c.active, 3);
	assert_int_equal(c.cpu, 3);
	assert_int_equal(c.cpu_routes, 4);
	assert_true(ftrp_policy_hybrid_at(&p, 2));
	p.offload_from_batch = 2;
	static const struct step_want w2[] = {{{1, 2, 2, 3}, {0, 1, 1, 2}, {-1, -1, -1, -1}, 3, {1, 2, 3}, {0, 1, 2}, 3}};
	run_steps(&sc, &p, 2, 2, w2, 1, NULL);
	assert_true(ftrp_policy_hybrid_at(&p, 1));
	assert_false(ftrp_policy_hybrid_at(&p, 2));
	/* offload with more distinct ids than slots */
	struct ftrp_policy o;
	ftrp_policy_offload(&o);
	struct ftsc_plan plan = {src_buf, dst_buf, 64, 0, 0};
	int32_t ids[] = {1, 2, 3, 4, 5, 6}, slots[6], cpu[6];
	assert_int_equal(ftrp_ref_layer(&sc, &o, 0, 3, 2, ids, slots, cpu, &plan, NULL), -ENOSPC);
	p.fraction = 2;
	p.mode = FTRP_MODE_FRACTION;
	assert_int_equal(ftrp_ref_layer(&sc, &p, 0, 1, 2, ids, slots, cpu, &plan, NULL), -EINVAL);
	ftsc_release(&sc);
}

/* ---------------------------------------------------------------- workloads */

static void check_valid(const struct ftrp_workload *w)
{
	for (int s = 0; s < w->steps; s++)
		for (int l = 0; l < w->layers; l++) {
			const int32_t *ids = ftrp_ids(w, s, l);
			for (int b = 0; b < w->batch; b++) {
				double sum = 0;
				for (int k = 0; k < w->topk; k++) {
					int32_t e = ids[b * w->topk + k];
					assert_true(e >= 0 && e < w->experts);
					for (int j = 0; j < k; j++)
						assert_int_not_equal(ids[b * w->topk + j], e);
					sum += w->weights[&ids[b * w->topk + k] - w->ids];
				}
				assert_true(fabs(sum - 1) < 1e-5);
			}
		}
}

static void test_generate(void **st)
{
	struct ftrp_workload a, b, c;
	char err[200];
	struct ftrp_gen g = {.skew = 0, .reuse = 0, .seed = 7};
	assert_int_equal(ftrp_generate(&g, 4, 128, 8, 1, 200, &a, err, sizeof err), 0);
	check_valid(&a);
	/* uniform top-8 of 128: the step before shares 8/128 of them */
	double r = ftrp_workload_reuse(&a);
	assert_true(fabs(r - 8.0 / 128) < 0.02);
	assert_int_equal(ftrp_generate(&g, 4, 128, 8, 1, 200, &b, err, sizeof err), 0);
	assert_memory_equal(a.ids, b.ids, sizeof *a.ids * 4 * 8 * 200);
	g.seed = 8;
	assert_int_equal(ftrp_generate(&g, 4, 128, 8, 1, 200, &c, err, sizeof err), 0);
	assert_true(memcmp(a.ids, c.ids, sizeof *a.ids * 4 * 8 * 200) != 0);
	ftrp_workload_release(&b);
	ftrp_workload_release(&c);

	for (int i = 0; i < 2; i++) {
		double want = i ? 0.85 : 0.6;
		g = (struct ftrp_gen){.skew = 0, .reuse = want, .seed = 1};
		assert_int_equal(ftrp_generate(&g, 4, 128, 8, 2, 300, &b, err, sizeof err), 0);
		check_valid(&b);
		/* fresh draws may take back an expert the token dropped: at most (1 - r) x 2 x 8 / 128 more */
		r = ftrp_workload_reuse(&b);
		if (r < want - 0.02 || r > want + (1 - want) * 0.125 + 0.02)
			fail_msg("reuse %.3f measured, asked %.2f", r, want);
		ftrp_workload_release(&b);
	}
	/* Zipf 1.2: the most popular expert of a layer is drawn far more than 1/128 of the time */
	g = (struct ftrp_gen){.skew = 1.2, .reuse = 0, .seed = 3};
	assert_int_equal(ftrp_generate(&g, 1, 128, 8, 1, 400, &b, err, sizeof err), 0);
	check_valid(&b);
	int count[128] = {0}, top = 0;
	for (int i = 0; i < 400 * 8; i++)
		count[b.ids[i]]++;
	for (int e = 0; e < 128; e++)
		top = count[e] > top ? count[e] : top;
	assert_true(top > 300); /* uniform: 25 */
	assert_true(ftrp_workload_reuse(&b) > 0.3);
	ftrp_workload_release(&b);

	g.reuse = 1.5;
	assert_int_equal(ftrp_generate(&g, 1, 128, 8, 1, 4, &b, err, sizeof err), -EINVAL);
	assert_non_null(strstr(err, "reuse"));
	g.reuse = 0;
	assert_int_equal(ftrp_generate(&g, 1, 128, 8, 64, 4, &b, err, sizeof err), -EINVAL);
	assert_non_null(strstr(err, "batch 64"));
	assert_int_equal(ftrp_generate(&g, 4096, 2048, 16, 32, 1000, &b, err, sizeof err), -E2BIG);
	assert_non_null(strstr(err, "too large"));
	ftrp_workload_release(&a);
}

/* ---------------------------------------------------------------- trace file */

static char *write_tmp(const char *dir, const char *name, const char *text)
{
	char *p;
	assert_true(asprintf(&p, "%s/%s", dir, name) > 0);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	return p;
}

static void expect_err(const char *dir, const char *text, int rc, const char *needle)
{
	struct ftrp_workload w;
	char err[300] = "";
	char *p = write_tmp(dir, "bad.json", text);
	int r = ftrp_trace_read(p, &w, err, sizeof err);
	if (r != rc || !strstr(err, needle))
		fail_msg("trace %s: rc %d (want %d), err '%s' (want '%s')", text, r, rc, err, needle);
	assert_non_null(strstr(err, "bad.json"));
	assert_null(w.ids);
	free(p);
}

#define HEAD "{\"format\":\"ftbench-routing-trace\",\"version\":1,\"layers\":2,\"experts\":8,\"top_k\":2,\"batch\":1,"

static void test_trace(void **st)
{
	char dir[256];
	assert_int_equal(tmpdir_make(dir, sizeof dir, "ftrp"), 0);
	struct ftrp_workload w, back;
	char err[300];
	struct ftrp_gen g = {.skew = 0.5, .reuse = 0.5, .seed = 11};
	assert_int_equal(ftrp_generate(&g, 3, 16, 4, 2, 5, &w, err, sizeof err), 0);
	char *path;
	assert_true(asprintf(&path, "%s/t.json", dir) > 0);
	assert_int_equal(ftrp_trace_write(path, &w, err, sizeof err), 0);
	assert_int_equal(ftrp_trace_read(path, &back, err, sizeof err), 0);
	assert_int_equal(back.layers, 3);
	assert_int_equal(back.experts, 16);
	assert_int_equal(back.topk, 4);
	assert_int_equal(back.batch, 2);
	assert_int_equal(back.steps, 5);
	assert_memory_equal(w.ids, back.ids, sizeof *w.ids * 3 * 4 * 2 * 5);
	assert_non_null(back.weights);
	for (int i = 0; i < 3 * 4 * 2 * 5; i++)
		assert_true(fabsf(w.weights[i] - back.weights[i]) < 1e-6f);
	ftrp_workload_release(&back);
	ftrp_workload_release(&w);
	free(path);

	/* a minimal hand-written trace, no weights */
	char *ok = write_tmp(dir, "ok.json", HEAD "\"steps\":[[[1,2],[3,4]],[[1,5],[3,0]]]}");
	assert_int_equal(ftrp_trace_read(ok, &w, err, sizeof err), 0);
	assert_int_equal(w.steps, 2);
	assert_null(w.weights);
	assert_int_equal(ftrp_ids(&w, 1, 1)[1], 0);
	ftrp_workload_release(&w);
	free(ok);

	expect_err(dir, HEAD "\"steps\":[[[1,2],[3,8]]]}", -EINVAL, "step 0 layer 1: expert id 8 out of range [0, 8)");
	expect_err(dir, HEAD "\"steps\":[[[1,2],[3,-1]]]}", -EINVAL, "expert id -1 out of range");
	expect_err(dir, HEAD "\"steps\":[[[1,2],[3,\"x\"]]]}", -EINVAL, "entry 1 is not an integer");
	expect_err(dir, HEAD "\"steps\":[[[1,2],[3,4]],[[1,2]]]}", -EINVAL, "step 1 has 1 layers, expected 2");
	expect_err(dir, HEAD "\"steps\":[[[1,2],[3,4,5]]]}", -EINVAL, "step 0 layer 1 has 3 ids, expected");
	expect_err(dir, HEAD "\"steps\":[[[1,1],[3,4]]]}", -EINVAL, "token 0 routes to expert 1 twice");
	expect_err(dir, HEAD "\"steps\":[]}", -EINVAL, "non-empty array");
	expect_err(dir, HEAD "\"steps\":[[[1,2],[3,4]]],\"weights\":[[[0.5,0.5]]]}", -EINVAL,
		   "weights of step 0: expected 2 layers");
	expect_err(dir, "{\"format\":\"other\"}", -EINVAL, "not a routing trace");
	expect_err(dir, "[1,2]", -EINVAL, "not a routing trace");
	expect_err(dir, "{\"format\":\"ftbench-routing-trace\",\"version\":2}", -EINVAL, "\"version\" must be 1");
	expect_err(dir, "{\"format\":\"ftbench-routing-trace\",\"version\":1,\"layers\":2}", -EINVAL,
		   "\"experts\" is missing");
	expect_err(dir, "{\"format\":", -EINVAL, "not JSON");
	/* 33 steps of 4096 layers x 32 tokens x top-16: 2^26 + 2^21 ids */
	char many[400] = "{\"format\":\"ftbench-routing-trace\",\"version\":1,\"layers\":4096,\"experts\":2048,"
			 "\"top_k\":16,\"batch\":32,\"steps\":[[]";
	for (int i = 1; i < 33; i++)
		strcat(many, ",[]");
	strcat(many, "]}");
	expect_err(dir, many, -E2BIG, "too large: 33 steps x 4096 layers");
	expect_err(dir,
		   "{\"format\":\"ftbench-routing-trace\",\"version\":1,\"layers\":1,\"experts\":4,"
		   "\"top_k\":8,\"batch\":1,\"steps\":[[]]}",
		   -EINVAL, "top_k 8");
	/* a file over the size limit is refused before it is parsed */
	char *big;
	assert_true(asprintf(&big, "%s/big.json", dir) > 0);
	FILE *f = fopen(big, "w");
	assert_non_null(f);
	assert_int_equal(fseek(f, (long)FTRP_TRACE_MAX_BYTES + 1, SEEK_SET), 0);
	fputc(' ', f);
	fclose(f);
	assert_int_equal(ftrp_trace_read(big, &w, err, sizeof err), -E2BIG);
	assert_non_null(strstr(err, "too large"));
	remove(big);
	free(big);
	assert_int_equal(tmpdir_remove(dir), 0);
}

/* ---------------------------------------------------------------- ftrp_run on fake ops */

static void small_config(struct ftrp_config *c)
{
	ftrp_config_default(c, FTRP_FULL);
	c->fmt = ftfmt_lookup("bf16");
	c->model = ftmodel_bw_dtype(FTFMT_BF16);
	c->layers = 4;
	c->nwork = 3;
	c->work[0] = (struct ftrp_work){0, 0, 0};
	c->work[1] = (struct ftrp_work){0.6, 0, 0};
	c->work[2] = (struct ftrp_work){0.97, 0, 0};
	c->profile_fraction = 0.3;
	c->bandwidth_verdict = "hybrid";
}

static json_t *load_full_profile(void)
{
	json_error_t je;
	json_t *p = json_load_file("tests/fixtures/profiles/full.json", 0, &je);
	assert_non_null(p);
	return p;
}

static void test_run_map(void **st)
{
	struct ftrp_ops ops;
	struct ftrp_config c;
	assert_int_equal(ftrp_fake_ops(0, &ops), 0);
	json_t *block = NULL;
	char err[300] = "";
	small_config(&c);
	int r = ftrp_run(&c, &ops, NULL, &block, err, sizeof err);
	if (r)
		fail_msg("ftrp_run: %d %s", r, err);
	assert_int_equal(ftrp_config_slots(&c, 1, 9437184), (long)ceil(0.7 * 4 * 128));
	json_t *pts = json_object_get(block, "points");
	assert_int_equal(json_array_size(pts), 6);
	/* every mode: offload, the profile's f, 7 sweep values, cap 1 */
	assert_int_equal(json_array_size(json_object_get(json_array_get(pts, 0), "modes")), 10);
	/* uniform, cache 0.4: misses everywhere, the CPU halves them: hybrid */
	json_t *p0 = json_array_get(pts, 0);
	assert_string_equal(json_string_value(json_object_get(p0, "winner")), "hybrid");
	assert_true(json_real_value(json_object_get(p0, "speedup")) > 1.2);
	double bf = json_real_value(json_object_get(p0, "best_fetch_fraction"));
	assert_true(bf > 0.2 && bf < 0.6);
	assert_true(json_is_true(json_object_get(p0, "agrees")));
	/* reuse 0.97, cache 0.7: offload's cache holds the layer's experts; hybrid's stays colder */
	json_t *p5 = json_array_get(pts, 5);
	assert_true(json_real_value(json_object_get(p5, "reuse")) > 0.9);
	assert_string_equal(json_string_value(json_object_get(p5, "winner")), "offload");
	assert_true(json_is_false(json_object_get(p5, "agrees")));
	json_t *off = json_array_get(json_object_get(p5, "modes"), 0);
	assert_string_equal(json_string_value(json_object_get(off, "mode")), "offload");
	assert_true(json_real_value(json_object_get(off, "miss_rate")) < 0.1);
	/* the map: hybrid stops between reuse 0 and 0.97 at both cache sizes */
	json_t *stops = json_object_get(block, "hybrid_stops_at_reuse");
	assert_int_equal(json_object_size(stops), 2);
	double s4 = json_number_value(json_object_get(stops, "0.4")), s7 = json_number_value(json_object_get(stops, "0.7"));
	assert_true(s4 > 0 && s4 <= 0.97);
	assert_true(s7 > 0 && s7 <= 0.97);

	/* the profile with the block: schema-valid; the seed-read verdict follows the default point */
	json_t *prof = load_full_profile();
	json_object_set_new(prof, "replay", json_pack("{s:O}", "bf16", block));
	const json_t *dp = ftrp_nearest_point(block, 0.4, 0.6);
	assert_non_null(dp);
	assert_true(json_number_value(json_object_get(dp, "reuse")) == 0.6);
	const char *win = json_string_value(json_object_get(dp, "winner"));
	json_t *e = json_object_get(json_object_get(prof, "dtype_kernels"), "bf16");
	double cov0 = json_number_value(json_object_get(e, "cpu_moe_overlap_gbs"));
	double pov0 = json_number_value(json_object_get(e, "pcie_gather_overlap_gbs"));
	assert_true(cov0 > 0 && pov0 > 0);
	int changed = ftrp_apply_verdicts(prof);
	/* the seed reader's fraction (pcie_ov / (pcie_ov + cpu_ov)) is now the default point's best f;
	 * the measured figure is kept; a second application starts from it (same result) */
	double want = json_number_value(json_object_get(dp, "best_fetch_fraction"));
	want = want < 0.01 ? 0.01 : want > 0.99 ? 0.99 : want;
	for (int pass = 0; pass < 2; pass++) {
		double cov = json_number_value(json_object_get(e, "cpu_moe_overlap_gbs"));
		double pov = json_number_value(json_object_get(e, "pcie_gather_overlap_gbs"));
		assert_true(fabs(pov / (pov + cov) - want) < 1e-9);
		assert_true(pov == pov0);
		assert_true(json_number_value(json_object_get(e, "cpu_moe_overlap_gbs_measured")) == cov0);
		assert_string_equal(json_string_value(json_object_get(e, "fetch_fraction_by")), "replay");
		if (!pass)
			ftrp_apply_verdicts(prof);
	}
	assert_string_equal(json_string_value(json_object_get(e, "recommended_bandwidth")), "hybrid");
	if (!strcmp(win, "tie")) {
		assert_string_equal(json_string_value(json_object_get(e, "recommended_by")), "bandwidth");
		assert_int_equal(changed, 0);
	} else {
		assert_string_equal(json_string_value(json_object_get(e, "recommended")), win);
		assert_string_equal(json_string_value(json_object_get(json_object_get(prof, "dtypes"), "bf16")), win);
		assert_int_equal(changed, strcmp(win, "hybrid") != 0);
	}
	r = ftt_schema_validate("api/schemas/profile.schema.json", prof, err, sizeof err);
	if (r)
		fail_msg("schema: %s", err);
	/* a broken block is caught by the schema */
	json_object_set_new(json_array_get(json_object_get(block, "points"), 0), "winner", json_string("maybe"));
	assert_int_equal(ftt_schema_validate("api/schemas/profile.schema.json", prof, err, sizeof err), -EINVAL);
	json_decref(prof);
	json_decref(block);
	ftrp_fake_ops_free(&ops);
}

static void test_run_errors(void **st)
{
	struct ftrp_ops ops;
	struct ftrp_config c;
	assert_int_equal(ftrp_fake_ops(1, &ops), 0);
	json_t *block = NULL;
	char err[300] = "";
	small_config(&c);
	c.nwork = 1;
	c.ncache = 1;
	assert_int_equal(ftrp_run(&c, &ops, NULL, &block, err, sizeof err), -EPROTO);
	assert_null(block);
	assert_non_null(strstr(err, "differ from the CPU reference"));
	/* fp8_block has no CPU path */
	small_config(&c);
	c.fmt = ftfmt_lookup("fp8_block");
	assert_int_equal(ftrp_run(&c, &ops, NULL, &block, err, sizeof err), -EINVAL);
	assert_non_null(strstr(err, "no CPU MoE path"));
	small_config(&c);
	c.work[0].trace = 1;
	assert_int_equal(ftrp_run(&c, &ops, NULL, &block, err, sizeof err), -EINVAL);
	assert_non_null(strstr(err, "--trace"));
	/* workload names */
	struct ftrp_work w;
	assert_int_equal(ftrp_work_parse("zipf:1.2+reuse:0.6", &w), 0);
	assert_true(w.skew == 1.2 && w.reuse == 0.6);
	char b[64];
	assert_string_equal(ftrp_work_name(&w, b, sizeof b), "zipf 1.2 reuse 0.6");
	assert_int_equal(ftrp_work_parse("reuse:1.5", &w), -EINVAL);
	assert_int_equal(ftrp_work_parse("reuse:0.5+", &w), -EINVAL);
	assert_int_equal(ftrp_work_parse("zipf", &w), -EINVAL);
	assert_int_equal(ftrp_work_parse("uniform", &w), 0);
	/* winner: paired ratios */
	double off[] = {10, 10, 10, 10, 10}, hyb[] = {8, 8.5, 9, 8, 9.5}, mix[] = {8, 12, 9, 11, 10};
	assert_string_equal(ftrp_winner(off, hyb, 5), "hybrid");
	assert_string_equal(ftrp_winner(hyb, off, 5), "offload");
	assert_string_equal(ftrp_winner(off, mix, 5), "tie");
	ftrp_fake_ops_free(&ops);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_offload),
		cmocka_unit_test(test_hybrid_cap_recency),
		cmocka_unit_test(test_hybrid_order),
		cmocka_unit_test(test_hybrid_fraction),
		cmocka_unit_test(test_batch),
		cmocka_unit_test(test_generate),
		cmocka_unit_test(test_trace),
		cmocka_unit_test(test_run_map),
		cmocka_unit_test(test_run_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
