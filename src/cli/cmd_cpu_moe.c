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
#include "hw/cpu.h"
#include "moe/cpu/cpumoe.h"
#include "moe/models.h"
#include "util/stats.h"
#include "util/strutil.h"

/* q4_0 has no bw workload: measured on qwen3-30b shapes. */
static const struct ftmodel q4_default = {"qwen3-30b", 0, 128, 8, 2048, 768, FTFMT_Q4_0, FTFMT_ACT_SILU, 0, 1, {FTFMT_Q4_0}};

/* --output-format csv|md: one row per batch and tier of a result (one batch, or "batches"). */
static void print_rows(enum ftcli_format f, const json_t *res)
{
	static const char *const head[] = {"batch", "isa", "kernel", "gbs", "gbs_min", "gbs_max", "read_gbs",
					   "read_pct", "step_ms", "max_rel_err_vs_scalar", "experts_per_step"};
	const json_t *batches = json_object_get(res, "batches"), *one, *e;
	size_t i, k;
	ftcli_print_row(f, head, 11, 1);
	for (i = 0; i < (json_is_array(batches) ? json_array_size(batches) : 1); i++) {
		one = json_is_array(batches) ? json_array_get(batches, i) : res;
		json_array_foreach(json_object_get(one, "results"), k, e) {
			const json_t *sp = json_object_get(e, "gbs_spread");
			const json_t *frac = json_object_get(e, "fraction_of_read_ceiling");
			char c[9][32];
			ftcli_cell(c[0], sizeof c[0], json_object_get(one, "batch"), "%.0f");
			ftcli_cell(c[1], sizeof c[1], json_object_get(e, "gbs"), "%.2f");
			ftcli_cell(c[2], sizeof c[2], json_object_get(sp, "min"), "%.2f");
			ftcli_cell(c[3], sizeof c[3], json_object_get(sp, "max"), "%.2f");
			ftcli_cell(c[4], sizeof c[4], json_object_get(e, "read_ceiling_gbs"), "%.2f");
			if (json_is_number(frac))
				snprintf(c[5], sizeof c[5], "%.1f", 100 * json_number_value(frac));
			else
				c[5][0] = '\0';
			ftcli_cell(c[6], sizeof c[6], json_object_get(e, "step_ms_median"), "%.4f");
			ftcli_cell(c[7], sizeof c[7], json_object_get(e, "verify_rel_err_vs_scalar"), "%.3e");
			ftcli_cell(c[8], sizeof c[8], json_object_get(e, "experts_per_step"), "%.2f");
			const char *row[] = {c[0], json_string_value(json_object_get(e, "isa")),
					     json_string_value(json_object_get(e, "kernel")), c[1], c[2], c[3], c[4],
					     c[5], c[6], c[7], c[8]};
			ftcli_print_row(f, row, 11, 0);
		}
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

static const struct ftflag rows[] = {
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
	"cpu-moe", rows, FTF_COUNT(rows),
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

int ftcli_cmd_cpu_moe(int argc, char **argv)
{
	struct cpu_moe_opts o = {0};
	struct ftflag_state fs;
	int c = ftflags_parse(&ftcli_flags_cpu_moe, argc, argv, &o, &fs);
	if (c)
		return c > 0 ? 0 : FTCLI_EXIT_USAGE;
	ftflags_release(&fs);
	const char *fmt_name = o.format, *model_name = o.model, *isa_spec = o.isa;
	long batches[FTCPUMOE_MAX_BATCH], threads = o.threads, iters = o.iters, warmup = o.warmup, passes = o.passes;
	long numa = o.numa, ws_mib = o.ws_mib;
	int nbatch = o.batch.n, routing = o.routing ? FTMOEBENCH_ROUTE_DISTINCT : FTMOEBENCH_ROUTE_MODEL;
	for (int i = 0; i < nbatch; i++)
		batches[i] = (long)o.batch.v[i];
	enum ftcli_format ofmt = o.ofmt;
	int json = ofmt != FTCLI_FMT_TABLE; /* no live table: the rows (or JSON) at the end */
	ftcli_set_quiet(ofmt == FTCLI_FMT_JSON);
	struct ftcpumoe_tune tune;
	const struct ftmodel *model = NULL;
	if (model_name) {
		model = ftmodel_find(ftmodel_bw_models, ftmodel_bw_models_count, model_name);
		if (!model)
			model = ftmodel_find(ftmodel_cache_profiles, ftmodel_cache_profiles_count, model_name);
		if (!model) {
			ftcli_error("unknown model '%s'", model_name);
			return FTCLI_EXIT_USAGE;
		}
	}
	const struct ftfmt *f = fmt_name ? ftfmt_lookup(fmt_name) : ftfmt_get(model ? model->format : FTFMT_BF16);
	if (!f) {
		ftcli_error("unknown format '%s' (%s)", fmt_name, ftfmt_all_names());
		return FTCLI_EXIT_USAGE;
	}
	if (!f->cpu_path) {
		ftcli_error("format %s has no CPU MoE path (formats with one: bf16, nvfp4, mxfp4_triton, ds_fp4, q4_0)", f->name);
		return FTCLI_EXIT_USAGE;
	}
	if (!model)
		model = ftmodel_bw_dtype(f->id);
	if (!model)
		model = &q4_default;
	if (ftcli_tune_build(&o.tune, &tune) < 0)
		return FTCLI_EXIT_USAGE;

	struct ftcpu_info ci;
	int r = ftcpu_probe(&ci);
	if (r < 0) {
		ftcli_error("probing the CPU failed (errno %d)", -r);
		return FTCLI_EXIT_FAIL;
	}
	enum ftcpumoe_isa tiers[FTCPUMOE_ISA_COUNT * 4];
	char why[256] = "";
	int ntiers = ftmoebench_isa_list(isa_spec, &tune, f->id, ci.isa, tiers, (int)(sizeof tiers / sizeof tiers[0]), why, sizeof why);
	if (ntiers < 0) {
		ftcli_error("%s", why);
		ftcpu_release(&ci);
		return FTCLI_EXIT_USAGE;
	}
	long batch = 1;
	for (int i = 0; i < nbatch; i++)
		batch = batches[i] > batch ? batches[i] : batch;
	struct ftmoebench_cfg cfg = {.format = f->id, .hidden = model->hidden, .inter = model->inter,
				.experts = model->experts, .topk = model->topk, .act = model->act,
				.swiglu_limit = model->swiglu_limit, .batch = (int)batch, .routing = routing,
				.threads = (int)threads, .numa_node = (int)numa,
				.working_set_min = (size_t)ws_mib << 20, .tune = &tune};
	struct ftmoebench *b = NULL;
	int rc = FTCLI_EXIT_FAIL;
	double *steps = calloc((size_t)iters, sizeof(double)), *bytes = calloc((size_t)iters, sizeof(double));
	double *gbs = calloc((size_t)iters, sizeof(double));
	json_t *results = json_array();
	if (!steps || !bytes || !gbs || !results) {
		ftcli_error("out of memory");
		goto out;
	}
	int total = ntiers * nbatch + (passes ? 2 : 1), done = 0;
	ftcli_progress(done, total, "banks");
	r = ftmoebench_create(&cfg, &ci, &b);
	if (r < 0) {
		ftcli_error("setting up %s banks (H=%ld I=%ld) failed: %s", f->name, model->hidden, model->inter, strerror(-r));
		goto out;
	}
	ftcli_progress(++done, total, "ceilings");
	/* The read ceiling is measured between the kernel's steps: each tier's `iters` steps run
	 * in `passes` rounds, each round after one read pass, so the kernel and its ceiling see the
	 * same machine state (this host's bandwidth drifts by 10-20% over seconds). */
	struct ftcread_result rres = {0};
	struct ftcread *rd_sess = NULL;
	int rounds = passes ? (int)passes : 1;
	long per = (iters + rounds - 1) / rounds;
	iters = per * rounds;
	if (passes) {
		r = ftcread_open(&ci, ftmoebench_pool(b), 0, &rd_sess, &rres);
		if (r < 0) {
			ftcli_error("CPU read ceiling failed: %s", strerror(-r));
			goto out;
		}
	}
	double *all_rd = calloc((size_t)rounds * (size_t)ntiers * (size_t)nbatch + 1, sizeof(double));
	double *s2 = realloc(steps, sizeof(double) * (size_t)iters), *b2 = realloc(bytes, sizeof(double) * (size_t)iters);
	double *g2 = realloc(gbs, sizeof(double) * (size_t)iters);
	if (s2) steps = s2;
	if (b2) bytes = b2;
	if (g2) gbs = g2;
	if (!all_rd || !s2 || !b2 || !g2) {
		free(all_rd);
		ftcread_close(rd_sess);
		ftcli_error("out of memory");
		goto out;
	}
	int nrd = 0;
	size_t eb = ftmoebench_expert_bytes(b);
	json_t *sweep = json_array();
	if (!sweep) {
		free(all_rd);
		ftcread_close(rd_sess);
		ftcli_error("out of memory");
		goto out;
	}
	for (int bi = 0; bi < nbatch; bi++) {
	batch = batches[bi];
	ftmoebench_set_batch(b, (int)batch);
	int nrd0 = nrd;
	if (bi) {
		json_decref(results);
		results = json_array();
	}
	if (!json) {
		ftcli_progress_clear();
		printf("%scpu-moe %s  %s shapes H=%ld I=%ld top-%d  batch %ld (%s routing)  %d threads  act %s\n",
		       bi ? "\n" : "", f->name, model->name, model->hidden, model->inter, model->topk, batch,
		       routing == FTMOEBENCH_ROUTE_MODEL ? "model" : "distinct", ftmoebench_threads(b), ftfmt_act_name(model->act));
		printf("expert %.2f MiB, %d synthetic experts rotating over %.2f GiB (LLC %.1f MiB)\n", eb / 1048576.0,
		       ftmoebench_synth_experts(b), ftmoebench_working_set_bytes(b) / 1073741824.0, ci.llc_bytes / 1048576.0);
		printf("per tier: %ld warm-up + %ld timed steps in %d rounds", warmup, iters, rounds);
		if (passes)
			printf(", each round after one pass of the read ceiling (%s, %.2f GiB)",
			       rres.loop, rres.buffer_bytes / 1073741824.0);
		printf("\n");
		printf("%-12s %-15s %8s %8s %8s %9s %9s %9s %21s\n", "isa", "kernel", "GB/s", "min", "max",
		       "read GB/s", "%ceiling", "step ms", "max rel err vs scalar");
	}
	double best = -1;
	enum ftcpumoe_isa best_isa = FTCPUMOE_ISA_SCALAR;
	for (int i = 0; i < ntiers; i++) {
		char label[64];
		snprintf(label, sizeof label, "isa:%s", ftcpumoe_isa_name(tiers[i]));
		double rel = -1;
		r = ftmoebench_verify(b, tiers[i], &rel);
		enum ftcpumoe_isa used = tiers[i];
		double tier_rd[1024];
		int ntr = 0;
		ftcpumoe_trace(ftmoebench_moe(b), NULL, 1);
		for (int k = 0; k < rounds && !r; k++) {
			if (passes) {
				double g = ftcread_pass(rd_sess);
				all_rd[nrd++] = g;
				if (ntr < 1024)
					tier_rd[ntr++] = g;
			}
			r = ftmoebench_time(b, tiers[i], k == 0 ? (int)warmup : 1, (int)per, steps + k * per,
				       bytes + k * per, &used);
		}
		if (r < 0) {
			free(all_rd);
			ftcread_close(rd_sess);
			json_decref(sweep);
			ftcli_error("tier %s failed: %s", ftcpumoe_isa_name(tiers[i]), strerror(-r));
			goto out;
		}
		for (long k = 0; k < iters; k++)
			gbs[k] = bytes[k] / steps[k] / 1e9;
		struct ftstat s = ftstat_of(gbs, (int)iters), st = ftstat_of(steps, (int)iters);
		struct ftstat tr = ftstat_of(tier_rd, ntr);
		if (s.median > best) {
			best = s.median;
			best_isa = used;
		}
		const char *kn = ftcpumoe_kernel_name(used, f->id, ci.isa);
		double frac = passes && tr.median > 0 ? s.median / tr.median : 0;
		double sum_bytes = 0;
		for (long k = 0; k < iters; k++)
			sum_bytes += bytes[k];
		json_t *e = json_pack("{s:s,s:s,s:f,s:o,s:f,s:f,s:f}", "isa", ftcpumoe_isa_name(used), "kernel", kn,
				      "gbs", s.median, "gbs_spread", ftstat_json(&s), "step_ms_median",
				      st.median * 1e3, "verify_rel_err_vs_scalar", rel, "experts_per_step",
				      eb ? sum_bytes / (double)iters / (double)eb : 0.0);
		if (passes) {
			json_object_set_new(e, "read_ceiling_gbs", json_real(tr.median));
			json_object_set_new(e, "read_ceiling_gbs_spread", ftstat_json(&tr));
			json_object_set_new(e, "fraction_of_read_ceiling", json_real(frac));
		}
		struct ftcpumoe_trace tc;
		int traced = ftcpumoe_trace(ftmoebench_moe(b), &tc, 1) == 0 && tc.steps > 0;
		if (traced) {
			json_t *tj = json_pack("{s:I,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f}", "steps",
				(json_int_t)tc.steps, "step_us", tc.step_us, "last_us", tc.last_us, "start_us", tc.start_us, "items_us",
				tc.items_us, "wait_us", tc.wait_us, "idle_us", tc.idle_us, "after_us", tc.after_us,
				"items_per_worker", tc.items_per_worker, "prep_us", tc.prep_us, "bar_us", tc.bar_us);
			const struct ftcpumoe_trace_fig *m = &tc.med;
			json_object_set_new(tj, "median", json_pack("{s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f}", "step_us",
				m->step_us, "last_us", m->last_us, "start_us", m->start_us, "prep_us", m->prep_us, "items_us",
				m->items_us, "wait_us", m->wait_us, "idle_us", m->idle_us, "bar_us", m->bar_us, "after_us",
				m->after_us));
			json_object_set_new(e, "trace", tj);
		}
		json_array_append_new(results, e);
		if (!json) {
			char pc[16] = "-", rg[16] = "-";
			if (passes) {
				snprintf(pc, sizeof pc, "%.1f", 100 * frac);
				snprintf(rg, sizeof rg, "%.1f", tr.median);
			}
			ftcli_progress_clear();
			printf("%-12s %-15s %8.1f %8.1f %8.1f %9s %9s %9.3f %21.1e\n", ftcpumoe_isa_name(used), kn, s.median,
			       s.min, s.max, rg, pc, st.median * 1e3, rel);
			if (traced) {
				printf("  trace, us per step (mean of %ld, warm-up included): step %.1f, last worker done at "
				       "%.1f; per worker: start %.1f (prep %.1f) + items %.1f + pass-1 wait %.1f + idle at "
				       "the end %.1f (after the last arrival %.1f) + after %.1f; %.1f items per worker\n",
				       tc.steps, tc.step_us, tc.last_us, tc.start_us, tc.prep_us, tc.items_us, tc.wait_us,
				       tc.idle_us, tc.bar_us, tc.after_us, tc.items_per_worker);
				const struct ftcpumoe_trace_fig *m = &tc.med;
				printf("  trace, medians over the steps: step %.1f, last %.1f; start %.2f (prep %.2f) + items "
				       "%.1f + wait %.2f + idle %.2f (after the last arrival %.2f) + after %.2f\n", m->step_us,
				       m->last_us, m->start_us, m->prep_us, m->items_us, m->wait_us, m->idle_us, m->bar_us,
				       m->after_us);
			}
			fflush(stdout);
		}
		ftcli_progress(++done, total, label);
	}
	struct ftstat rs = ftstat_of(all_rd + nrd0, nrd - nrd0);
	if (passes && !json) {
		ftcli_progress_clear();
		printf("%-12s %-15s %8.1f %8.1f %8.1f   (all %d read passes of this batch; calibration", "read", rres.loop,
		       rs.median, rs.min, rs.max, nrd - nrd0);
		for (int v = 0; v < FTCREAD_VARIANTS; v++)
			printf("%c%.1f", v ? '/' : ' ', rres.calib_gbs[v]);
		printf(")\n");
	}
	json_t *calib = json_array();
	for (int v = 0; v < FTCREAD_VARIANTS; v++)
		json_array_append_new(calib, json_real(rres.calib_gbs[v]));
	json_t *cpu = ftcpu_json(&ci);
	json_object_set_new(cpu, "threads_used", json_integer(ftmoebench_threads(b)));
	json_t *res = json_pack("{s:s,s:s,s:{s:I,s:I,s:i,s:i,s:s,s:f},s:i,s:s,s:I,s:i,s:I,s:o,s:i,s:i,s:o,s:s}",
				"format", f->name, "model", model->name, "geometry", "hidden",
				(json_int_t)model->hidden, "inter", (json_int_t)model->inter, "experts",
				model->experts, "top_k", model->topk, "act", ftfmt_act_name(model->act),
				"swiglu_limit", (double)model->swiglu_limit, "batch", (int)batch, "routing",
				routing == FTMOEBENCH_ROUTE_MODEL ? "model" : "distinct", "expert_bytes",
				(json_int_t)eb, "synth_experts", ftmoebench_synth_experts(b), "working_set_bytes",
				(json_int_t)ftmoebench_working_set_bytes(b), "cpu", cpu, "warmup", (int)warmup,
				"iters", (int)iters, "results", results, "best_isa", ftcpumoe_isa_name(best_isa));
	results = NULL;
	if (passes)
		json_object_set_new(res, "ceiling",
				    json_pack("{s:f,s:o,s:s,s:I,s:i,s:o}", "cpu_stream_read_gbs", rs.median,
					      "cpu_stream_read_gbs_spread", ftstat_json(&rs), "loop", rres.loop,
					      "buffer_bytes", (json_int_t)rres.buffer_bytes, "threads", rres.threads,
					      "calibration_gbs", calib));
	else {
		json_object_set_new(res, "ceiling", json_null());
		json_decref(calib);
	}
	if (!json) {
		ftcli_progress_clear();
		printf("best: %s (%.1f GB/s)\n", ftcpumoe_isa_name(best_isa), best);
	}
	json_array_append_new(sweep, res);
	}
	ftcread_close(rd_sess);
	free(all_rd);
	json_t *res;
	if (nbatch == 1) {
		res = json_incref(json_array_get(sweep, 0));
		json_decref(sweep);
	} else {
		res = json_pack("{s:s,s:s,s:o}", "format", f->name, "model", model->name, "batches", sweep);
		if (!json) {
			ftcli_progress_clear();
			printf("\nbatch sweep (%s routing, best tier each): batch, experts/step, GB/s of weights, %% of "
			       "its read ceiling, step ms, tokens/s\n", routing == FTMOEBENCH_ROUTE_MODEL ? "model" : "distinct");
			for (int bi = 0; bi < nbatch; bi++) {
				json_t *one = json_array_get(sweep, (size_t)bi), *rr = json_object_get(one, "results");
				json_t *bestr = NULL;
				for (size_t k = 0; k < json_array_size(rr); k++) {
					json_t *x = json_array_get(rr, k);
					if (!bestr || json_number_value(json_object_get(x, "gbs")) >
							      json_number_value(json_object_get(bestr, "gbs")))
						bestr = x;
				}
				double ms = json_number_value(json_object_get(bestr, "step_ms_median"));
				printf("  %5ld %8.1f %8.1f %8.1f %9.3f %10.0f\n", batches[bi],
				       json_number_value(json_object_get(bestr, "experts_per_step")),
				       json_number_value(json_object_get(bestr, "gbs")),
				       100 * json_number_value(json_object_get(bestr, "fraction_of_read_ceiling")), ms,
				       ms > 0 ? batches[bi] / (ms * 1e-3) : 0.0);
			}
		}
	}
	ftcli_progress(total, total, "done");
	ftcli_result(res);
	if (ofmt == FTCLI_FMT_JSON)
		ftcli_print_json(res);
	else if (ofmt != FTCLI_FMT_TABLE)
		print_rows(ofmt, res);
	json_decref(res);
	rc = 0;
out:
	json_decref(results);
	ftmoebench_free(b);
	free(steps);
	free(bytes);
	free(gbs);
	ftcpu_release(&ci);
	return rc;
}
