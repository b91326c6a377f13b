/* ftbench cpu-moe: GB/s of expert weights the CPU MoE executor processes, per ISA tier, over
 * synthetic banks whose working set rotates over >= 4x the last-level cache, with the CPU read
 * ceiling measured in the same run beside it (median, min, max of the timed steps/passes). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/cpu_moe.h"
#include "bench/cpu_read.h"
#include "cli/cli.h"
#include "cli/flags.h"
#include "cli/table.h"
#include "hw/cpu.h"
#include "moe/cpu/cpumoe.h"
#include "moe/models.h"
#include "util/stats.h"
#include "util/strutil.h"

/* q4_0 has no bw workload: measured on qwen3-30b shapes. */
static const struct ftmodel q4_default = {"qwen3-30b", 0, 128, 8, 2048, 768, FTFMT_Q4_0, FTFMT_ACT_SILU, 0, 1, {FTFMT_Q4_0}};

/* A tier's row: the live table (one per batch, without batch and experts/step), csv and md. */
static const struct ftcol tier_cols[] = {
	{"batch", NULL, NULL, 0, "%.0f"},
	{"isa", "isa", NULL, -12},
	{"kernel", "kernel", NULL, -15},
	{"gbs", "GB/s", "GB/s", 8, "%.1f", "%.2f"},
	{"gbs_min", "min", "GB/s", 8, "%.1f", "%.2f"},
	{"gbs_max", "max", "GB/s", 8, "%.1f", "%.2f"},
	{"read_gbs", "read GB/s", "GB/s", 9, "%.1f", "%.2f"},
	{"read_pct", "%ceiling", "%", 9, "%.1f"},
	{"step_ms", "step ms", "ms", 9, "%.3f", "%.4f"},
	{"max_rel_err_vs_scalar", "max rel err vs scalar", NULL, 21, "%.1e", "%.3e"},
	{"experts_per_step", NULL, NULL, 0, "%.2f"},
};

/* The row of the tier result e (one element of "results") of a run at batch. */
static void tier_row(const struct fttable *t, const json_t *batch, const json_t *e)
{
	const json_t *sp = json_object_get(e, "gbs_spread"), *frac = json_object_get(e, "fraction_of_read_ceiling");
	fttable_row(t, (struct ftcell[]){ftcell_json(batch), ftcell_json(json_object_get(e, "isa")),
					  ftcell_json(json_object_get(e, "kernel")), ftcell_json(json_object_get(e, "gbs")),
					  ftcell_json(json_object_get(sp, "min")), ftcell_json(json_object_get(sp, "max")),
					  ftcell_json(json_object_get(e, "read_ceiling_gbs")),
					  json_is_number(frac) ? FTCELL_N(100 * json_number_value(frac)) : FTCELL_NONE,
					  ftcell_json(json_object_get(e, "step_ms_median")),
					  ftcell_json(json_object_get(e, "verify_rel_err_vs_scalar")),
					  ftcell_json(json_object_get(e, "experts_per_step"))});
}

/* --output-format csv|md: one row per batch and tier of a result (one batch, or "batches"). */
static void print_rows(enum ftcli_format f, const json_t *res)
{
	struct fttable t = {tier_cols, FTCOL_COUNT(tier_cols), f};
	const json_t *batches = json_object_get(res, "batches"), *one, *e;
	size_t i, k;
	fttable_head(&t);
	for (i = 0; i < (json_is_array(batches) ? json_array_size(batches) : 1); i++) {
		one = json_is_array(batches) ? json_array_get(batches, i) : res;
		json_array_foreach(json_object_get(one, "results"), k, e)
			tier_row(&t, json_object_get(one, "batch"), e);
	}
}

struct cpu_moe_opts {
	const char *format, *model, *isa;
	struct ftflag_list batch;
	int routing; /* 0 model, 1 distinct */
	long threads, iters, warmup, passes, numa, ws_mib;
	enum ftcli_format ofmt;
	struct ftcli_tune tune;
};
#define O(m) FTF_FIELD(struct cpu_moe_opts, m)

static const struct ftflag flag_rows[] = {
	{"format", FTF_STR, O(format), .meta = "F", .def_help = "bf16, or the model's", .help = "expert weight format"},
	{"model", FTF_STR, O(model), .meta = "M", .def_help = "the format's bw workload",
	 .help = "expert shapes (hidden, intermediate, experts, top-k) of a bw or cache-copy model"},
	{"batch", FTF_INTS, O(batch), .meta = "LIST", .lo = 1, .hi = FTCPUMOE_MAX_BATCH, .max_items = FTCPUMOE_MAX_BATCH,
	 .def = "1", .help = "tokens per step, one run each (e.g. 1,2,4,8,16,32)"},
	{"routing", FTF_ENUM, O(routing), .choices = "model|distinct", .def = "model",
	 .help = "model: each token picks top-k of the model's E experts, so tokens share experts as a real "
		 "batch does; distinct: every route its own expert (the same at batch 1)"},
	{"isa", FTF_STR, O(isa), .meta = "auto|all|LIST", .def = "auto",
	 .help = "ISA tiers timed: auto (the one the executor picks), all (every tier this CPU has), or a comma "
		 "list of tiers"},
	{"threads", FTF_INT, O(threads), .meta = "N", .lo = 0, .hi = 4096, .def = "0",
	 .help = "worker threads (0: one per physical core)"},
	{"repeat", FTF_INT, O(iters), .meta = "N", .lo = 1, .hi = 100000, .def = "64", .alias = "iters",
	 .help = "timed steps per tier"},
	{"warmup", FTF_INT, O(warmup), .meta = "N", .lo = 0, .hi = 100000, .def = "8", .help = "untimed steps before them"},
	{"read-passes", FTF_INT, O(passes), .meta = "N", .lo = 0, .hi = 1000, .def = "8",
	 .help = "passes of the CPU read ceiling, interleaved with the steps (0: not measured)"},
	{"numa", FTF_INT, O(numa), .meta = "NODE", .lo = -1, .hi = 4096, .def = "-1",
	 .help = "run threads and memory on this NUMA node (-1: not bound)"},
	{"working-set-mib", FTF_INT, O(ws_mib), .meta = "N", .lo = 1, .hi = 1L << 24, .unit = "MiB",
	 .def_help = "4x the last-level cache", .help = "MiB the synthetic experts rotate over, at least"},
	FTF_JSON_ROW(struct cpu_moe_opts, ofmt, "the result as JSON on stdout (no progress bar)"),
	FTF_FORMAT_ROW(struct cpu_moe_opts, ofmt,
		       "table, json (as --json), csv or md: one row per batch and tier (GB/s; step_ms in "
		       "milliseconds; read_pct: % of the read ceiling)"),
	FTF_RESULT_FD_ROW,
	FTF_TUNE_ROW(struct cpu_moe_opts, tune),
};

const struct ftflag_cmd ftcli_flags_cpu_moe = {
	"cpu-moe", flag_rows, FTF_COUNT(flag_rows),
	.about = "  GB/s of expert weights the CPU MoE executor processes, per ISA tier, over synthetic banks\n"
		 "  whose working set rotates over 4x the last-level cache, beside the CPU read ceiling",
	.notes = "  GB/s is 10^9 bytes per second (sizes: MiB = 2^20, GiB = 2^30 bytes). The table: median,\n"
		 "  min, max GB/s of the timed steps; the read ceiling beside them; the step time; and the\n"
		 "  max rel err vs scalar, the largest relative difference of the tier's output from the\n"
		 "  scalar reference on the same inputs (a check, not a speed-up)\n"
		 "  formats with a CPU path: bf16, nvfp4, mxfp4_triton (mxfp4), ds_fp4, q4_0\n"
		 "  ISA tiers: scalar, avx2, avx512, avx512vnni, avx512bf16, amx (FREETOKEN_CPU_MOE_ISA\n"
		 "  forces the tier 'auto' picks)\n",
};

/* One run: the banks, the tiers, the read ceiling interleaved with the steps, and the buffers. */
struct cm_run {
	const struct ftfmt *f;
	const struct ftmodel *model;
	struct ftcpu_info ci;
	struct ftmoebench *b;
	enum ftcpumoe_isa tiers[FTCPUMOE_ISA_COUNT * 4];
	int ntiers, routing, json, rounds, nrd, done, total;
	long iters, per, warmup, passes;
	double *steps, *bytes, *gbs, *all_rd;
	struct ftcread *rd;
	struct ftcread_result rres;
	size_t eb;
};

/* The trace of the last tier's steps as JSON into e, and on the table. */
static void tier_trace(struct cm_run *r, json_t *e)
{
	struct ftcpumoe_trace tc;
	if (ftcpumoe_trace(ftmoebench_moe(r->b), &tc, 1) != 0 || tc.steps <= 0)
		return;
	const struct ftcpumoe_trace_fig *m = &tc.med;
	json_t *tj = json_pack("{s:I,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f}", "steps",
		(json_int_t)tc.steps, "step_us", tc.step_us, "last_us", tc.last_us, "start_us", tc.start_us, "items_us",
		tc.items_us, "wait_us", tc.wait_us, "idle_us", tc.idle_us, "after_us", tc.after_us,
		"items_per_worker", tc.items_per_worker, "prep_us", tc.prep_us, "bar_us", tc.bar_us);
	json_object_set_new(tj, "median", json_pack("{s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f}", "step_us",
		m->step_us, "last_us", m->last_us, "start_us", m->start_us, "prep_us", m->prep_us, "items_us",
		m->items_us, "wait_us", m->wait_us, "idle_us", m->idle_us, "bar_us", m->bar_us, "after_us",
		m->after_us));
	json_object_set_new(e, "trace", tj);
	if (r->json)
		return;
	printf("  trace, us per step (mean of %ld, warm-up included): step %.1f, last worker done at "
	       "%.1f; per worker: start %.1f (prep %.1f) + items %.1f + pass-1 wait %.1f + idle at "
	       "the end %.1f (after the last arrival %.1f) + after %.1f; %.1f items per worker\n",
	       tc.steps, tc.step_us, tc.last_us, tc.start_us, tc.prep_us, tc.items_us, tc.wait_us,
	       tc.idle_us, tc.bar_us, tc.after_us, tc.items_per_worker);
	printf("  trace, medians over the steps: step %.1f, last %.1f; start %.2f (prep %.2f) + items "
	       "%.1f + wait %.2f + idle %.2f (after the last arrival %.2f) + after %.2f\n", m->step_us,
	       m->last_us, m->start_us, m->prep_us, m->items_us, m->wait_us, m->idle_us, m->bar_us,
	       m->after_us);
}

/* Tier i at the current batch: verified, timed in rounds after each read pass; its result (new)
 * into *out, its row on the live table. 0, or -1 after saying what failed. */
static int run_tier(struct cm_run *r, int i, long batch, const struct fttable *t, json_t **out,
		    enum ftcpumoe_isa *used_out)
{
	double rel = -1, tier_rd[1024];
	int ntr = 0;
	int e = ftmoebench_verify(r->b, r->tiers[i], &rel);
	enum ftcpumoe_isa used = r->tiers[i];
	ftcpumoe_trace(ftmoebench_moe(r->b), NULL, 1);
	for (int k = 0; k < r->rounds && !e; k++) {
		if (r->passes) {
			double g = ftcread_pass(r->rd);
			r->all_rd[r->nrd++] = g;
			if (ntr < 1024)
				tier_rd[ntr++] = g;
		}
		e = ftmoebench_time(r->b, r->tiers[i], k == 0 ? (int)r->warmup : 1, (int)r->per, r->steps + k * r->per,
				    r->bytes + k * r->per, &used);
	}
	if (e < 0) {
		ftcli_error("tier %s failed: %s", ftcpumoe_isa_name(r->tiers[i]), strerror(-e));
		return -1;
	}
	double sum_bytes = 0;
	for (long k = 0; k < r->iters; k++) {
		r->gbs[k] = r->bytes[k] / r->steps[k] / 1e9;
		sum_bytes += r->bytes[k];
	}
	struct ftstat s = ftstat_of(r->gbs, (int)r->iters), st = ftstat_of(r->steps, (int)r->iters);
	struct ftstat tr = ftstat_of(tier_rd, ntr);
	const char *kn = ftcpumoe_kernel_name(used, r->f->id, r->ci.isa);
	json_t *res = json_pack("{s:s,s:s,s:f,s:o,s:f,s:f,s:f}", "isa", ftcpumoe_isa_name(used), "kernel", kn,
				"gbs", s.median, "gbs_spread", ftstat_json(&s), "step_ms_median", st.median * 1e3,
				"verify_rel_err_vs_scalar", rel, "experts_per_step",
				r->eb ? sum_bytes / (double)r->iters / (double)r->eb : 0.0);
	if (r->passes) {
		json_object_set_new(res, "read_ceiling_gbs", json_real(tr.median));
		json_object_set_new(res, "read_ceiling_gbs_spread", ftstat_json(&tr));
		json_object_set_new(res, "fraction_of_read_ceiling", json_real(tr.median > 0 ? s.median / tr.median : 0));
	}
	if (!r->json) {
		json_t *bj = json_integer(batch);
		ftcli_progress_clear();
		tier_row(t, bj, res);
		json_decref(bj);
	}
	tier_trace(r, res);
	if (!r->json)
		fflush(stdout);
	*out = res;
	*used_out = used;
	return 0;
}

/* The header lines of a batch's live table. */
static void batch_head(const struct cm_run *r, int bi, long batch, const struct fttable *t)
{
	const struct ftmodel *model = r->model;
	ftcli_progress_clear();
	printf("%scpu-moe %s  %s shapes H=%ld I=%ld top-%d  batch %ld (%s routing)  %d threads  act %s\n",
	       bi ? "\n" : "", r->f->name, model->name, model->hidden, model->inter, model->topk, batch,
	       r->routing == FTMOEBENCH_ROUTE_MODEL ? "model" : "distinct", ftmoebench_threads(r->b),
	       ftfmt_act_name(model->act));
	printf("expert %.2f MiB, %d synthetic experts rotating over %.2f GiB (LLC %.1f MiB)\n", r->eb / 1048576.0,
	       ftmoebench_synth_experts(r->b), ftmoebench_working_set_bytes(r->b) / 1073741824.0,
	       r->ci.llc_bytes / 1048576.0);
	printf("per tier: %ld warm-up + %ld timed steps in %d rounds", r->warmup, r->iters, r->rounds);
	if (r->passes)
		printf(", each round after one pass of the read ceiling (%s, %.2f GiB)", r->rres.loop,
		       r->rres.buffer_bytes / 1073741824.0);
	printf("\n");
	fttable_head(t);
}

/* One batch: every tier, then the read ceiling of its passes. The batch's result (new) into
 * *out. 0, or -1 after saying what failed. */
static int run_batch(struct cm_run *r, int bi, long batch, json_t **out)
{
	struct fttable t = {tier_cols, FTCOL_COUNT(tier_cols), FTCLI_FMT_TABLE};
	const struct ftmodel *model = r->model;
	json_t *results = json_array();
	int nrd0 = r->nrd;
	double best = -1;
	enum ftcpumoe_isa best_isa = FTCPUMOE_ISA_SCALAR;
	ftmoebench_set_batch(r->b, (int)batch);
	if (!r->json)
		batch_head(r, bi, batch, &t);
	for (int i = 0; i < r->ntiers; i++) {
		char label[64];
		json_t *e;
		enum ftcpumoe_isa used;
		snprintf(label, sizeof label, "isa:%s", ftcpumoe_isa_name(r->tiers[i]));
		if (run_tier(r, i, batch, &t, &e, &used) < 0) {
			json_decref(results);
			return -1;
		}
		double g = json_number_value(json_object_get(e, "gbs"));
		if (g > best) {
			best = g;
			best_isa = used;
		}
		json_array_append_new(results, e);
		ftcli_progress(++r->done, r->total, label);
	}
	struct ftstat rs = ftstat_of(r->all_rd + nrd0, r->nrd - nrd0);
	if (r->passes && !r->json) {
		ftcli_progress_clear();
		printf("%-12s %-15s %8.1f %8.1f %8.1f   (all %d read passes of this batch; calibration", "read",
		       r->rres.loop, rs.median, rs.min, rs.max, r->nrd - nrd0);
		for (int v = 0; v < FTCREAD_VARIANTS; v++)
			printf("%c%.1f", v ? '/' : ' ', r->rres.calib_gbs[v]);
		printf(")\n");
	}
	json_t *calib = json_array();
	for (int v = 0; v < FTCREAD_VARIANTS; v++)
		json_array_append_new(calib, json_real(r->rres.calib_gbs[v]));
	json_t *cpu = ftcpu_json(&r->ci);
	json_object_set_new(cpu, "threads_used", json_integer(ftmoebench_threads(r->b)));
	json_t *res = json_pack("{s:s,s:s,s:{s:I,s:I,s:i,s:i,s:s,s:f},s:i,s:s,s:I,s:i,s:I,s:o,s:i,s:i,s:o,s:s}",
				"format", r->f->name, "model", model->name, "geometry", "hidden",
				(json_int_t)model->hidden, "inter", (json_int_t)model->inter, "experts",
				model->experts, "top_k", model->topk, "act", ftfmt_act_name(model->act),
				"swiglu_limit", (double)model->swiglu_limit, "batch", (int)batch, "routing",
				r->routing == FTMOEBENCH_ROUTE_MODEL ? "model" : "distinct", "expert_bytes",
				(json_int_t)r->eb, "synth_experts", ftmoebench_synth_experts(r->b), "working_set_bytes",
				(json_int_t)ftmoebench_working_set_bytes(r->b), "cpu", cpu, "warmup", (int)r->warmup,
				"iters", (int)r->iters, "results", results, "best_isa", ftcpumoe_isa_name(best_isa));
	if (r->passes)
		json_object_set_new(res, "ceiling",
				    json_pack("{s:f,s:o,s:s,s:I,s:i,s:o}", "cpu_stream_read_gbs", rs.median,
					      "cpu_stream_read_gbs_spread", ftstat_json(&rs), "loop", r->rres.loop,
					      "buffer_bytes", (json_int_t)r->rres.buffer_bytes, "threads", r->rres.threads,
					      "calibration_gbs", calib));
	else {
		json_object_set_new(res, "ceiling", json_null());
		json_decref(calib);
	}
	if (!r->json) {
		ftcli_progress_clear();
		printf("best: %s (%.1f GB/s)\n", ftcpumoe_isa_name(best_isa), best);
	}
	*out = res;
	return 0;
}

/* The sweep's summary table: per batch, the best tier. */
static void print_sweep(const json_t *sweep, int routing)
{
	ftcli_progress_clear();
	printf("\nbatch sweep (%s routing, best tier each): batch, experts/step, GB/s of weights, %% of "
	       "its read ceiling, step ms, tokens/s\n", routing == FTMOEBENCH_ROUTE_MODEL ? "model" : "distinct");
	size_t bi;
	json_t *one;
	json_array_foreach(sweep, bi, one) {
		json_t *rr = json_object_get(one, "results"), *bestr = NULL;
		long batch = (long)json_integer_value(json_object_get(one, "batch"));
		for (size_t k = 0; k < json_array_size(rr); k++) {
			json_t *x = json_array_get(rr, k);
			if (!bestr || json_number_value(json_object_get(x, "gbs")) > json_number_value(json_object_get(bestr, "gbs")))
				bestr = x;
		}
		double ms = json_number_value(json_object_get(bestr, "step_ms_median"));
		printf("  %5ld %8.1f %8.1f %8.1f %9.3f %10.0f\n", batch,
		       json_number_value(json_object_get(bestr, "experts_per_step")),
		       json_number_value(json_object_get(bestr, "gbs")),
		       100 * json_number_value(json_object_get(bestr, "fraction_of_read_ceiling")), ms,
		       ms > 0 ? batch / (ms * 1e-3) : 0.0);
	}
}

/* The model and format the options name, the executor's knobs, the tiers: 0, or an exit status
 * after saying what is wrong. */
static int cm_setup(const struct cpu_moe_opts *o, struct cm_run *r, struct ftcpumoe_tune *tune)
{
	const struct ftmodel *model = NULL;
	if (o->model) {
		model = ftmodel_find(ftmodel_bw_models, ftmodel_bw_models_count, o->model);
		if (!model)
			model = ftmodel_find(ftmodel_cache_profiles, ftmodel_cache_profiles_count, o->model);
		if (!model) {
			ftcli_error("unknown model '%s'", o->model);
			return FTCLI_EXIT_USAGE;
		}
	}
	const struct ftfmt *f = o->format ? ftfmt_lookup(o->format) : ftfmt_get(model ? model->format : FTFMT_BF16);
	if (!f) {
		ftcli_error("unknown format '%s' (%s)", o->format, ftfmt_all_names());
		return FTCLI_EXIT_USAGE;
	}
	if (!f->cpu_path) {
		ftcli_error("format %s has no CPU MoE path (formats with one: bf16, nvfp4, mxfp4_triton, ds_fp4, q4_0)", f->name);
		return FTCLI_EXIT_USAGE;
	}
	if (!model)
		model = ftmodel_bw_dtype(f->id);
	r->model = model ? model : &q4_default;
	r->f = f;
	if (ftcli_tune_build(&o->tune, tune) < 0)
		return FTCLI_EXIT_USAGE;
	int e = ftcpu_probe(&r->ci);
	if (e < 0) {
		ftcli_error("probing the CPU failed (errno %d)", -e);
		return FTCLI_EXIT_FAIL;
	}
	char why[256] = "";
	r->ntiers = ftmoebench_isa_list(o->isa, tune, f->id, r->ci.isa, r->tiers,
					(int)(sizeof r->tiers / sizeof r->tiers[0]), why, sizeof why);
	if (r->ntiers < 0) {
		ftcli_error("%s", why);
		return FTCLI_EXIT_USAGE;
	}
	return 0;
}

int ftcli_cmd_cpu_moe(int argc, char **argv)
{
	struct cpu_moe_opts o = {0};
	struct ftflag_state fs;
	struct cm_run r = {0};
	struct ftcpumoe_tune tune;
	int rc = ftflags_parse(&ftcli_flags_cpu_moe, argc, argv, &o, &fs);
	if (rc)
		return rc > 0 ? 0 : FTCLI_EXIT_USAGE;
	ftflags_release(&fs);
	int nbatch = o.batch.n;
	r.routing = o.routing ? FTMOEBENCH_ROUTE_DISTINCT : FTMOEBENCH_ROUTE_MODEL;
	r.json = o.ofmt != FTCLI_FMT_TABLE; /* no live table: the rows (or JSON) at the end */
	ftcli_set_quiet(o.ofmt == FTCLI_FMT_JSON);
	if ((rc = cm_setup(&o, &r, &tune))) {
		ftcpu_release(&r.ci);
		return rc;
	}
	long batch = 1;
	for (int i = 0; i < nbatch; i++)
		batch = (long)o.batch.v[i] > batch ? (long)o.batch.v[i] : batch;
	const struct ftmodel *model = r.model;
	struct ftmoebench_cfg cfg = {.format = r.f->id, .hidden = model->hidden, .inter = model->inter,
				.experts = model->experts, .topk = model->topk, .act = model->act,
				.swiglu_limit = model->swiglu_limit, .batch = (int)batch, .routing = r.routing,
				.threads = (int)o.threads, .numa_node = (int)o.numa,
				.working_set_min = (size_t)o.ws_mib << 20, .tune = &tune};
	/* The read ceiling is measured between the kernel's steps: each tier's `iters` steps run
	 * in `passes` rounds, each round after one read pass, so the kernel and its ceiling see the
	 * same machine state (this host's bandwidth drifts by 10-20% over seconds). */
	r.passes = o.passes;
	r.warmup = o.warmup;
	r.rounds = r.passes ? (int)r.passes : 1;
	r.per = (o.iters + r.rounds - 1) / r.rounds;
	r.iters = r.per * r.rounds;
	r.total = r.ntiers * nbatch + (r.passes ? 2 : 1);
	rc = FTCLI_EXIT_FAIL;
	json_t *sweep = json_array();
	r.steps = calloc((size_t)r.iters, sizeof(double));
	r.bytes = calloc((size_t)r.iters, sizeof(double));
	r.gbs = calloc((size_t)r.iters, sizeof(double));
	r.all_rd = calloc((size_t)r.rounds * (size_t)r.ntiers * (size_t)nbatch + 1, sizeof(double));
	if (!r.steps || !r.bytes || !r.gbs || !r.all_rd || !sweep) {
		ftcli_error("out of memory");
		goto out;
	}
	ftcli_progress(r.done, r.total, "banks");
	int e = ftmoebench_create(&cfg, &r.ci, &r.b);
	if (e < 0) {
		ftcli_error("setting up %s banks (H=%ld I=%ld) failed: %s", r.f->name, model->hidden, model->inter,
			    strerror(-e));
		goto out;
	}
	ftcli_progress(++r.done, r.total, "ceilings");
	r.eb = ftmoebench_expert_bytes(r.b);
	if (r.passes && (e = ftcread_open(&r.ci, ftmoebench_pool(r.b), 0, &r.rd, &r.rres)) < 0) {
		ftcli_error("CPU read ceiling failed: %s", strerror(-e));
		goto out;
	}
	for (int bi = 0; bi < nbatch; bi++) {
		json_t *one;
		if (run_batch(&r, bi, (long)o.batch.v[bi], &one) < 0)
			goto out;
		json_array_append_new(sweep, one);
	}
	json_t *res;
	if (nbatch == 1) {
		res = json_incref(json_array_get(sweep, 0));
	} else {
		res = json_pack("{s:s,s:s,s:O}", "format", r.f->name, "model", model->name, "batches", sweep);
		if (!r.json)
			print_sweep(sweep, r.routing);
	}
	ftcli_progress(r.total, r.total, "done");
	ftcli_result(res);
	if (o.ofmt == FTCLI_FMT_JSON)
		ftcli_print_json(res);
	else if (o.ofmt != FTCLI_FMT_TABLE)
		print_rows(o.ofmt, res);
	json_decref(res);
	rc = 0;
out:
	json_decref(sweep);
	ftcread_close(r.rd);
	ftmoebench_free(r.b);
	free(r.steps);
	free(r.bytes);
	free(r.gbs);
	free(r.all_rd);
	ftcpu_release(&r.ci);
	return rc;
}
