/* ftbench replay: the engine's MoE decode step replayed on this host under a routing workload and
 * a cache size, in every placement mode (src/replay; docs/REPLAY.md). Prints the per-point modes,
 * the winner and best fetch fraction, the map over cache size x workload; stores the replay
 * blocks in the GPU's profile when one exists. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/cpu_probe.h"
#include "cli/cli.h"
#include "cli/flags.h"
#include "ftprofile.h"
#include "hw/cpu.h"
#include "moe/models.h"
#include "replay/replay.h"
#include "util/strutil.h"

struct rp_opts {
	const char *format, *model, *workloads, *trace, *save, *cpu_kernel;
	double cpu_kernel_timeout;
	struct ftflag_list cache, fractions, caps;
	int no_caps;
	double pfrac, cgib, hgib;
	long layers, lmodel, batch, steps, warm, seed, ofb, cslots, threads;
	int no_overlap, nostore, size, halloc, order, ofmt;
	struct ftflag_gpu gpu;
	struct ftcli_tune tune;
};
#define O(m) FTF_FIELD(struct rp_opts, m)

static const struct ftflag rows[] = {
	{"format", FTF_STR, O(format), .meta = "LIST", .alias = "dtype", .def = "bf16,nvfp4",
	 .help = "expert formats (each needs a CPU MoE path; the GPU GEMV has bf16, nvfp4, ds_fp4)"},
	{"model", FTF_STR, O(model), .meta = "NAME", .def_help = "the format's bw workload",
	 .help = "geometry of a bw --model workload"},
	{"layers", FTF_INT, O(layers), .meta = "N", .lo = 1, .hi = 4096, .def = FTF_XSTR(FTRP_DEFAULT_LAYERS),
	 .help = "MoE layers run"},
	{"layers-model", FTF_INT, O(lmodel), .meta = "N", .lo = 1, .hi = 4096,
	 .def_help = "the model's, else a cache-copy profile of the same shape, else 48",
	 .help = "the model's MoE layers, for tok/s"},
	{"batch", FTF_INT, O(batch), .meta = "B", .lo = 1, .hi = 32, .def = "1", .help = "tokens per decode step"},
	{"workloads", FTF_STR, O(workloads), .meta = "LIST", .def_help = "uniform,reuse:0.6,reuse:0.85",
	 .help = "routing: uniform, reuse:R, zipf:S, zipf:S+reuse:R; R = share of a token's experts kept from "
		 "the step before, S = Zipf exponent of expert popularity"},
	{"cache", FTF_DOUBLES, O(cache), .meta = "LIST", .lo = 1e-6, .hi = 1, .max_items = FTRP_MAX_AXIS,
	 .def_help = "0.4,0.7", .help = "slot cache sizes as fractions of layers x experts"},
	{"cache-slots", FTF_INT, O(cslots), .meta = "N", .lo = 1, .hi = 16777215,
	 .help = "one cache size in slots instead of --cache"},
	{"cache-gib", FTF_DOUBLE, O(cgib), .meta = "X", .lo = 1e-6, .hi = 1e6, .unit = "GiB",
	 .help = "one cache size in GiB of expert slots instead of --cache"},
	{"fractions", FTF_DOUBLES, O(fractions), .meta = "LIST", .lo = 0, .hi = 1, .max_items = FTRP_MAX_SWEEP,
	 .def_help = "0,0.125,0.25,0.375,0.5,0.75,1 (short: 0.25,0.5,1)", .help = "the hybrid fetch fractions swept"},
	{"caps", FTF_INTS, O(caps), .meta = "LIST", .lo = 0, .hi = 2048, .max_items = FTRP_MAX_CAPS,
	 .def_help = "1 (short: none)", .help = "hybrid caps K (misses fetched per layer-step)"},
	{"no-caps", FTF_BOOL, O(no_caps), .help = "no hybrid cap mode"},
	{"profile-fraction", FTF_DOUBLE, O(pfrac), .meta = "F", .lo = 0, .hi = 1,
	 .def_help = "read from this GPU's profile, as engines read it", .help = "the profile's fetch fraction"},
	{"fetch-order", FTF_ENUM, O(order), .choices = "recency|lowest_id", .def = "recency",
	 .help = "which misses hybrid fetches (the seed's FREETOKEN_HYBRID_FETCH)"},
	{"no-overlap", FTF_BOOL, O(no_overlap),
	 .help = "the CPU routes before the GPU work (the seed's FREETOKEN_HYBRID_OVERLAP=0)"},
	{"offload-from-batch", FTF_INT, O(ofb), .meta = "N", .lo = 0, .hi = 32, .def = "0",
	 .help = "steps of at least N tokens run as offload (llama.cpp: 32; 0: never)"},
	{"steps", FTF_INT, O(steps), .meta = "N", .lo = 4, .hi = 100000, .def_help = "32 (short: 16)",
	 .help = "timed steps per mode"},
	{"warmup", FTF_INT, O(warm), .meta = "N", .lo = 0, .hi = 100000, .def_help = "64 (short: 48)",
	 .help = "steps that warm the slot cache on the CPU reference before the timed ones"},
	{"size", FTF_ENUM, O(size), .choices = "short|full", .def = "full",
	 .help = "short: the default point only (cache 0.4, reuse 0.6), f 0.25/0.5/1; full: the map"},
	{"trace", FTF_STR, O(trace), .meta = "FILE",
	 .help = "replay recorded routing (format: docs/REPLAY.md) instead of generating it"},
	{"save-trace", FTF_STR, O(save), .meta = "FILE",
	 .help = "write the generated routing (FILE, or FILE-<workload>.json for several workloads)"},
	{"seed", FTF_INT, O(seed), .meta = "N", .lo = 0, .hi = 1e15, .def = "1", .help = "workload generator seed"},
	{"host-alloc", FTF_ENUM, O(halloc), .choices = "register|hostalloc", .def = "register",
	 .help = "host banks: mmap + cudaHostRegister as the engine, or cudaHostAlloc"},
	{"host-gib", FTF_DOUBLE, O(hgib), .meta = "X", .lo = 0.01, .hi = 1e6, .unit = "GiB", .def = "4",
	 .help = "distinct host bank bytes per format (layer l reads host layer l mod n)"},
	FTF_GPU_ROWS(struct rp_opts, gpu, "INDEX|UUID", "the first", "the GPU"),
	{"cpu-threads", FTF_INT, O(threads), .meta = "N", .lo = 0, .hi = 4096, .def = "0",
	 .help = "cores of the CPU executor near the GPU, one is left to the launching thread (0: all)"},
	{"cpu-kernel", FTF_STR, O(cpu_kernel), .meta = "CMD",
	 .help = "the engine's own CPU path: CMD (a CPU kernel probe, split into argv without a shell as bw's "
		 "--cpu-kernel) measures the engine's decode step per layer with 0..top-k routes on its CPU path "
		 "(measure \"layer_step\", docs/CPU_KERNEL_PROBE.md); the hybrid modes then hold each layer-step's CPU "
		 "result until the engine's time for its routes (our executor still does the work). Batch 1. Any probe "
		 "error fails the run. bench/engines/freetoken_cpu_moe.py is the seed engine's driver"},
	FTF_CPU_KERNEL_TIMEOUT_ROW(struct rp_opts, cpu_kernel_timeout),
	{"no-store", FTF_BOOL, O(nostore), .help = "do not add the replay blocks to the GPU's stored profile"},
	FTF_JSON_ROW(struct rp_opts, ofmt, "the result as JSON on stdout"),
	FTF_FORMAT_ROW(struct rp_opts, ofmt, "table (default), json, csv or md (csv, md: one row per point and mode)"),
	FTF_RESULT_FD_ROW,
	FTF_TUNE_ROW(struct rp_opts, tune),
};

const struct ftflag_cmd ftcli_flags_replay = {
	"replay", rows, FTF_COUNT(rows),
	.about = "Runs the MoE part of an engine's decode step (slot cache, gather, GPU expert GEMV, the CPU\n"
		 "executor, the engine's placement policy) for real on this GPU and host, per cache size and\n"
		 "routing workload, in each mode: offload (fetch every miss), hybrid with the profile's fetch\n"
		 "fraction, a sweep of fractions, a cap of K misses. Needs a GPU. docs/REPLAY.md.\n",
	.notes = "Exit status: 0 done; 1 failed; 2 bad usage or no GPU.\n",
};

static int replay_cmd(struct rp_opts *op);

/* --cpu-kernel CMD: the engine's CPU path for cfg's format (ftprobe_engine_path): *path for the
 * block's cpu_path, pad[0..top-k] the engine's added time per layer-step, fpad[0..top-k] its
 * hybrid path's added time per fetch count, *npad their length (0:
 * the engine has no CPU path for the format, ours runs at its own speed, with a note). 0, or the
 * exit status of a failed run (the error said). */
static int engine_path(const char *cmd, double timeout, const struct ftrp_config *cfg, json_t **path, double *pad,
		       double *fpad, int *npad)
{
	char **argv = NULL, err[1024];
	const struct ftmodel *m = cfg->model;
	*path = NULL;
	*npad = 0;
	if (ftprobe_split(cmd, &argv, err, sizeof err) < 0) {
		ftcli_error("--cpu-kernel: %s", err);
		return FTCLI_EXIT_USAGE;
	}
	long long eb = (long long)ftfmt_expert_bytes(cfg->fmt, m->hidden, m->inter);
	struct ftprobe_request q = {.format = cfg->fmt->name, .hidden = m->hidden, .inter = m->inter,
				    .experts = m->experts, .top_k = m->topk, .synth_experts = m->experts,
				    .expert_bytes = eb, .activation = ftfmt_act_name(m->act),
				    .swiglu_limit = m->swiglu_limit > 0 ? m->swiglu_limit : NAN, .threads = 0,
				    .warmup = 8, .steps = 32, .layers = cfg->layers, .batch = cfg->batch};
	ftcli_note("cpu-kernel %s: the engine's layer steps (%s)", cfg->fmt->name, argv[0]);
	int r = ftprobe_engine_path(argv, &q, timeout, path, pad, fpad, err, sizeof err);
	ftprobe_free_argv(argv);
	if (r < 0) {
		ftcli_error("--cpu-kernel %s: %s", cfg->fmt->name, err);
		return r == -EINVAL ? FTCLI_EXIT_USAGE : FTCLI_EXIT_FAIL;
	}
	if (r == 1)
		ftcli_note("%s", json_string_value(json_object_get(*path, "note")));
	else
		*npad = cfg->batch * m->topk + 1;
	return 0;
}

/* The model's MoE layers for tok/s: its own, else a cache-copy profile of the same shape, else 48. */
static int layers_model_of(const struct ftmodel *m)
{
	if (m->layers > 0)
		return m->layers;
	for (int i = 0; i < ftmodel_cache_profiles_count; i++) {
		const struct ftmodel *p = &ftmodel_cache_profiles[i];
		if (p->hidden == m->hidden && p->inter == m->inter && p->experts == m->experts && p->topk == m->topk)
			return p->layers;
	}
	return 48;
}

static const char *cell(char *b, size_t n, const json_t *v, const char *f)
{
	return ftcli_cell(b, n, v, f);
}

static void print_rows(enum ftcli_format f, const json_t *replay)
{
	static const char *const head[] = {"format", "cache_fraction", "workload", "reuse", "skew", "mode", "fetch_fraction",
					   "cap", "ms_median", "ms_p10", "ms_p90", "tok_s", "miss_rate",
					   "fetched_per_layer", "cpu_per_layer", "winner", "speedup", "best_fetch_fraction"};
	const int nh = (int)(sizeof head / sizeof *head);
	ftcli_print_row(f, head, nh, 1);
	const char *fmt;
	const json_t *blk;
	json_object_foreach((json_t *)replay, fmt, blk) {
		size_t i, j;
		const json_t *pt, *m;
		json_array_foreach(json_object_get(blk, "points"), i, pt) {
			json_array_foreach(json_object_get(pt, "modes"), j, m) {
				char b[18][40];
				const json_t *ms = json_object_get(m, "ms_step");
				const char *row[] = {
					fmt, cell(b[1], 40, json_object_get(pt, "cache_fraction"), "%g"),
					json_string_value(json_object_get(pt, "workload")) ?: "",
					cell(b[3], 40, json_object_get(pt, "reuse"), "%g"), cell(b[4], 40, json_object_get(pt, "skew"), "%g"),
					json_string_value(json_object_get(m, "mode")),
					cell(b[6], 40, json_object_get(m, "fetch_fraction"), "%g"), cell(b[7], 40, json_object_get(m, "cap"), "%g"),
					cell(b[8], 40, json_object_get(ms, "median"), "%.3f"), cell(b[9], 40, json_object_get(ms, "p10"), "%.3f"),
					cell(b[10], 40, json_object_get(ms, "p90"), "%.3f"), cell(b[11], 40, json_object_get(m, "tok_s"), "%.2f"),
					cell(b[12], 40, json_object_get(m, "miss_rate"), "%.4f"),
					cell(b[13], 40, json_object_get(m, "fetched_per_layer"), "%.3f"),
					cell(b[14], 40, json_object_get(m, "cpu_per_layer"), "%.3f"),
					json_string_value(json_object_get(pt, "winner")), cell(b[16], 40, json_object_get(pt, "speedup"), "%.3f"),
					cell(b[17], 40, json_object_get(pt, "best_fetch_fraction"), "%g")};
				ftcli_print_row(f, row, nh, 0);
			}
		}
	}
}

static void print_table(const json_t *replay)
{
	const char *fmt;
	const json_t *blk;
	json_object_foreach((json_t *)replay, fmt, blk) {
		const json_t *m = json_object_get(blk, "model"), *pol = json_object_get(blk, "policy");
		printf("replay %s: %s (H %lld, I %lld, E %lld, top-%lld), %lld of %lld layers run, batch %lld, banks %s",
		       fmt, json_string_value(json_object_get(m, "name")), json_integer_value(json_object_get(m, "hidden")),
		       json_integer_value(json_object_get(m, "inter")), json_integer_value(json_object_get(m, "experts")),
		       json_integer_value(json_object_get(m, "top_k")), json_integer_value(json_object_get(blk, "layers_run")),
		       json_integer_value(json_object_get(blk, "layers_model")), json_integer_value(json_object_get(blk, "batch")),
		       json_string_value(json_object_get(blk, "host_alloc")) ?: "?");
		const json_t *pf = json_object_get(pol, "profile_fetch_fraction");
		if (json_is_number(pf))
			printf(", profile f %.3g", json_number_value(pf));
		printf("\n");
		size_t i, j;
		const json_t *pt, *md;
		json_array_foreach(json_object_get(blk, "points"), i, pt) {
			printf("\n  cache %.3g of L x E (%lld slots, %.2f GiB), %s (reuse measured %.3f)\n",
			       json_number_value(json_object_get(pt, "cache_fraction")),
			       json_integer_value(json_object_get(pt, "slots")), json_number_value(json_object_get(pt, "cache_gib")),
			       json_string_value(json_object_get(pt, "workload")),
			       json_number_value(json_object_get(pt, "reuse_measured")));
			printf("    %-16s %6s %9s %17s %9s %6s %7s %6s\n", "mode", "f/cap", "ms/step", "p10-p90", "tok/s", "miss",
			       "fetch/l", "cpu/l");
			json_array_foreach(json_object_get(pt, "modes"), j, md) {
				const json_t *ms = json_object_get(md, "ms_step"), *f = json_object_get(md, "fetch_fraction"),
					     *k = json_object_get(md, "cap");
				char fc[16] = "-";
				if (json_is_number(f))
					snprintf(fc, sizeof fc, "%.3g", json_number_value(f));
				else if (json_is_integer(k))
					snprintf(fc, sizeof fc, "K=%lld", json_integer_value(k));
				char pr[32];
				snprintf(pr, sizeof pr, "%.2f-%.2f", json_number_value(json_object_get(ms, "p10")),
					 json_number_value(json_object_get(ms, "p90")));
				printf("    %-16s %6s %9.2f %17s %9.1f %6.3f %7.2f %6.2f\n", json_string_value(json_object_get(md, "mode")), fc,
				       json_number_value(json_object_get(ms, "median")), pr,
				       json_number_value(json_object_get(md, "tok_s")),
				       json_number_value(json_object_get(md, "miss_rate")),
				       json_number_value(json_object_get(md, "fetched_per_layer")),
				       json_number_value(json_object_get(md, "cpu_per_layer")));
			}
			const json_t *bf = json_object_get(pt, "best_fetch_fraction"), *ag = json_object_get(pt, "agrees");
			printf("    winner %s (hybrid/offload %.2fx), best f %s", json_string_value(json_object_get(pt, "winner")),
			       json_number_value(json_object_get(pt, "speedup")), json_is_number(bf) ? "" : "-");
			if (json_is_number(bf))
				printf("%.3g", json_number_value(bf));
			const char *bv = json_string_value(json_object_get(pt, "bandwidth_verdict"));
			if (bv)
				printf("; the bandwidth rule says %s%s", bv,
				       json_is_true(ag) ? " (agrees)" : json_is_false(ag) ? " (DISAGREES)" : "");
			printf("\n");
		}
		/* the map: cache fraction x workload */
		printf("\n  map (winner, best f):\n");
		const json_t *stops = json_object_get(blk, "hybrid_stops_at_reuse");
		double seen[16];
		int ns = 0;
		json_array_foreach(json_object_get(blk, "points"), i, pt) {
			double cf = json_number_value(json_object_get(pt, "cache_fraction"));
			int dup = 0;
			for (int k = 0; k < ns; k++)
				dup |= seen[k] == cf;
			if (dup || ns >= 16)
				continue;
			seen[ns++] = cf;
			printf("    cache %-5.3g", cf);
			json_array_foreach(json_object_get(blk, "points"), j, md) {
				if (json_number_value(json_object_get(md, "cache_fraction")) != cf)
					continue;
				const json_t *bf = json_object_get(md, "best_fetch_fraction");
				char b[24] = "-";
				if (json_is_number(bf))
					snprintf(b, sizeof b, "%.3g", json_number_value(bf));
				printf("  %s: %s %s", json_string_value(json_object_get(md, "workload")),
				       json_string_value(json_object_get(md, "winner")), b);
			}
			char key[32];
			snprintf(key, sizeof key, "%g", cf);
			const json_t *s = json_object_get(stops, key);
			if (json_is_number(s))
				printf("  | hybrid stops at reuse %.3g", json_number_value(s));
			else if (s)
				printf("  | hybrid wins at every reuse measured");
			printf("\n");
		}
		printf("\n");
	}
}

/* FILE, or FILE-<workload>[-e<E>k<K>].json (FILE without its .json) when there are several
 * workloads or several routing shapes. */
static void trace_name(char *out, size_t n, const char *file, const struct ftrp_work *w, int several, const char *shape)
{
	if (!several && !shape) {
		snprintf(out, n, "%s", file);
		return;
	}
	char name[64], *p;
	ftrp_work_name(w, name, sizeof name);
	for (p = name; *p; p++)
		if (*p == ' ')
			*p = '-';
	size_t len = strlen(file);
	if (len > 5 && !strcmp(file + len - 5, ".json"))
		len -= 5;
	snprintf(out, n, "%.*s-%s%s%s.json", (int)len, file, name, shape ? "-" : "", shape ? shape : "");
}

/* Merge the replay blocks into this GPU's stored profile (the seed-read verdicts follow them). */
static void store(const char *uuid, const char *gname, json_t *replay, json_t *result)
{
	struct ftprof *p = NULL;
	char err[1024], path[4096];
	if (ftprof_load(uuid, gname, &p, err, sizeof err)) {
		ftcli_note("no stored profile of this GPU to add the replay to (run ftbench bw): %s", err);
		json_object_set_new(result, "stored", json_null());
		return;
	}
	json_t *doc = json_deep_copy(ftprof_json(p));
	ftprof_free(p);
	if (!doc || !json_object_get(doc, "tool")) {
		ftcli_note("the stored profile is not one ftbench wrote; the replay is not added to it");
		json_decref(doc);
		json_object_set_new(result, "stored", json_null());
		return;
	}
	json_t *rp = json_object_get(doc, "replay");
	if (!json_is_object(rp)) {
		rp = json_object();
		json_object_set_new(doc, "replay", rp);
	}
	json_object_update(rp, replay);
	int changed = ftrp_apply_verdicts(doc);
	int r = ftprof_store_write(doc, uuid, path, sizeof path);
	if (r) {
		ftcli_error("adding the replay to the profile: %s", strerror(-r));
		json_object_set_new(result, "stored", json_null());
	} else {
		ftcli_note("replay stored in %s%s", path,
			   changed ? " (the verdict of a format changed: it follows the replay's default point)" : "");
		json_object_set_new(result, "stored", json_string(path));
	}
	json_decref(doc);
}

int ftcli_cmd_replay(int argc, char **argv)
{
	struct rp_opts o = {.pfrac = NAN, .steps = -1, .warm = -1};
	struct ftflag_state fs;
	int r = ftflags_parse(&ftcli_flags_replay, argc, argv, &o, &fs);
	if (r)
		return r > 0 ? 0 : FTCLI_EXIT_USAGE;
	if (fs.pos < fs.argc) {
		ftcli_error("unexpected argument '%s'", fs.argv[fs.pos]);
		ftflags_release(&fs);
		return FTCLI_EXIT_USAGE;
	}
	r = replay_cmd(&o);
	ftflags_release(&fs);
	return r;
}

static int replay_cmd(struct rp_opts *op)
{
	struct ftrp_config base;
	enum ftrp_size size = op->size ? FTRP_FULL : FTRP_SHORT;
	enum ftcli_format ofmt = (enum ftcli_format)op->ofmt;
	const char *formats = op->format, *model = op->model, *work = op->workloads,
		   *trace = op->trace, *save = op->save, *gpu_spec = op->gpu.spec,
		   *halloc = op->halloc ? "hostalloc" : "register";
	double pfrac = op->pfrac, cgib = op->cgib, hgib = op->hgib;
	long layers = op->layers, lmodel = op->lmodel, batch = op->batch, steps = op->steps, warm = op->warm,
	     seed = op->seed, ofb = op->ofb, cslots = op->cslots, threads = op->threads;
	int overlap = !op->no_overlap, nostore = op->nostore, c, r, rc = FTCLI_EXIT_FAIL;
	struct ftcli_tune tune_o = op->tune;
	char err[1024] = "", why[256] = "";
	(void)c;
	if (ofmt == FTCLI_FMT_JSON)
		ftcli_set_quiet(1);

	/* the configuration shared by every format */
	ftrp_config_default(&base, size);
	base.layers = (int)layers;
	base.batch = (int)batch;
	base.seed = (uint64_t)seed;
	base.cache_slots = cslots;
	base.cache_bytes = cgib * 1073741824.0;
	base.base.order = op->order ? FTSC_ORDER_LOWEST_ID : FTSC_ORDER_RECENCY;
	base.base.overlap = overlap;
	base.base.offload_from_batch = (int)ofb;
	if (steps > 0)
		base.steps = (int)steps;
	if (warm >= 0)
		base.warmup_steps = (int)warm;
	if (op->cache.n) {
		base.ncache = op->cache.n;
		memcpy(base.cache, op->cache.v, (size_t)op->cache.n * sizeof *base.cache);
	}
	if (cslots > 0 || cgib > 0) {
		if (op->cache.n || (cslots > 0 && cgib > 0)) {
			ftcli_error("--cache, --cache-slots and --cache-gib are three ways to say one thing: give one");
			return FTCLI_EXIT_USAGE;
		}
		base.ncache = 1;
		base.cache[0] = 1; /* replaced by the override (its actual share is reported) */
	}
	if (op->fractions.n) {
		base.nfrac = op->fractions.n;
		memcpy(base.fractions, op->fractions.v, (size_t)op->fractions.n * sizeof *base.fractions);
	}
	if (op->caps.n && op->no_caps) {
		ftcli_error("--caps and --no-caps: give one");
		return FTCLI_EXIT_USAGE;
	}
	if (op->caps.n || op->no_caps) {
		base.ncaps = op->caps.n;
		for (int i = 0; i < op->caps.n; i++)
			base.caps[i] = (int)op->caps.v[i];
	}
	if (work && trace) {
		ftcli_error("--workloads and --trace: the trace is the workload");
		return FTCLI_EXIT_USAGE;
	}
	if (work) {
		char **items = NULL;
		int n = ftstr_split(work, &items, FTRP_MAX_AXIS + 1);
		if (n < 1 || n > FTRP_MAX_AXIS) {
			ftcli_error("--workloads: expected 1..%d workloads", FTRP_MAX_AXIS);
			ftstr_free_list(items, n > 0 ? n : 0);
			return FTCLI_EXIT_USAGE;
		}
		for (int i = 0; i < n; i++)
			if (ftrp_work_parse(items[i], &base.work[i]) || base.work[i].trace) {
				ftcli_error("--workloads: '%s' is none of uniform, reuse:R (0..1), zipf:S (0..16), zipf:S+reuse:R",
					    items[i]);
				ftstr_free_list(items, n);
				return FTCLI_EXIT_USAGE;
			}
		base.nwork = n;
		ftstr_free_list(items, n);
	}
	struct ftrp_workload tw = {0};
	if (trace) {
		r = ftrp_trace_read(trace, &tw, err, sizeof err);
		if (r) {
			ftcli_error("--trace: %s", err);
			return FTCLI_EXIT_USAGE;
		}
		base.trace = &tw;
		base.nwork = 1;
		base.work[0] = (struct ftrp_work){0, 0, 1};
		base.layers = tw.layers;
		base.batch = tw.batch;
	}
	if (save && trace) {
		ftcli_error("--save-trace writes generated routing; this run replays %s", trace);
		ftrp_workload_release(&tw);
		return FTCLI_EXIT_USAGE;
	}

	/* formats */
	const struct ftfmt *fmts[FTFMT_COUNT];
	int nf = 0;
	{
		char **items = NULL;
		int n = ftstr_split(formats, &items, FTFMT_COUNT + 1);
		for (int i = 0; i < n && nf >= 0; i++) {
			const struct ftfmt *f = ftfmt_lookup(items[i]);
			if (!f || !f->cpu_path || nf >= FTFMT_COUNT) {
				ftcli_error("--format: '%s' is %s (formats with a CPU MoE path: bf16, nvfp4, mxfp4_triton, ds_fp4, q4_0)",
					    items[i], f ? "a format without a CPU MoE path (its verdict is offload)" : "no format");
				nf = -1;
			} else {
				fmts[nf++] = f;
			}
		}
		ftstr_free_list(items, n > 0 ? n : 0);
		if (nf <= 0) {
			if (nf == 0)
				ftcli_error("--format: no format given");
			ftrp_workload_release(&tw);
			return FTCLI_EXIT_USAGE;
		}
	}
	struct ftcli_tune *to = &tune_o;
	(void)lmodel;
	struct ftcpumoe_tune tune;
	if (ftcli_tune_build(to, &tune) < 0) {
		ftrp_workload_release(&tw);
		return FTCLI_EXIT_USAGE;
	}

	/* the GPU: replay needs one */
	struct ftgpu_info gpu;
	struct ftcpu_info ci;
	int *cpus = NULL;
	json_t *result = NULL, *replay = NULL;
	struct ftprof *prof = NULL;
	r = ftcli_select_gpu(gpu_spec, &gpu, why, sizeof why);
	if (r < 0) {
		ftrp_workload_release(&tw);
		return FTCLI_EXIT_USAGE;
	}
	if (r > 0) {
		ftcli_error("replay needs a GPU: %s", why);
		ftrp_workload_release(&tw);
		return FTCLI_EXIT_USAGE;
	}
	if ((r = ftcpu_probe(&ci)) < 0) {
		ftcli_error("cannot describe the CPU: %s", strerror(-r));
		ftrp_workload_release(&tw);
		return FTCLI_EXIT_FAIL;
	}
	if (threads > ci.physical_cores) {
		ftcli_error("--cpu-threads %ld: this host has %d physical cores", threads, ci.physical_cores);
		rc = FTCLI_EXIT_USAGE;
		goto out;
	}
	cpus = calloc((size_t)ci.physical_cores, sizeof *cpus);
	if (!cpus)
		goto out;
	int ncpus = ftcpu_cores_near(&ci, gpu.numa_node, cpus, threads ? (int)threads : ci.physical_cores);
	char perr[1024];
	if (ftprof_load(gpu.uuid, gpu.name, &prof, perr, sizeof perr))
		prof = NULL;
	result = json_pack("{s:{s:s,s:s,s:i},s:{}}", "gpu", "uuid", gpu.uuid, "name", gpu.name, "index", gpu.index, "replay");
	replay = json_object_get(result, "replay");
	struct ftreport rep = ftcli_reporter();
	for (int fi = 0; fi < nf; fi++) {
		struct ftrp_config cfg = base;
		const struct ftmodel *m = ftmodel_bw_dtype(fmts[fi]->id);
		if (model) {
			m = ftmodel_find(ftmodel_bw_models, ftmodel_bw_models_count, model);
			if (!m) {
				ftcli_error("--model: '%s' is not a bw --model workload", model);
				rc = FTCLI_EXIT_USAGE;
				goto out;
			}
		}
		if (!m) {
			ftcli_error("%s has no bw workload geometry; give --model", fmts[fi]->name);
			rc = FTCLI_EXIT_USAGE;
			goto out;
		}
		cfg.fmt = fmts[fi];
		cfg.model = m;
		cfg.layers_model = lmodel > 0 ? (int)lmodel : layers_model_of(m);
		double f = pfrac;
		char from[600] = "";
		if (isnan(f) && prof && !ftprof_fetch_fraction(prof, fmts[fi]->name, &f))
			snprintf(from, sizeof from, "profile %s", ftprof_source(prof));
		else if (!isnan(f))
			snprintf(from, sizeof from, "--profile-fraction");
		cfg.profile_fraction = f;
		cfg.profile_fraction_from = from[0] ? from : NULL;
		const char *bv = NULL;
		if (prof) {
			const json_t *e = json_object_get(json_object_get(ftprof_json(prof), "dtype_kernels"), fmts[fi]->name);
			bv = json_string_value(json_object_get(e, "recommended_bandwidth"));
			if (!bv) {
				enum ftprof_rec rr = ftprof_recommend(prof, fmts[fi]->name);
				bv = rr == FTPROF_REC_NONE ? NULL : ftprof_rec_name(rr);
			}
		}
		cfg.bandwidth_verdict = bv;
		if (ftrp_config_check(&cfg, err, sizeof err)) {
			ftcli_error("%s", err);
			rc = FTCLI_EXIT_USAGE;
			goto out;
		}
		/* the routing of a shape (E, top-k) once, whatever format it runs with */
		int shapes = 0, earlier = 0;
		for (int k = 0; k < nf; k++) {
			const struct ftmodel *mk = model ? m : ftmodel_bw_dtype(fmts[k]->id);
			shapes |= mk && (mk->experts != m->experts || mk->topk != m->topk);
			earlier |= k < fi && mk && mk->experts == m->experts && mk->topk == m->topk;
		}
		char shape[32];
		snprintf(shape, sizeof shape, "e%dk%d", m->experts, m->topk);
		if (save && !earlier) {
			for (int wi = 0; wi < cfg.nwork; wi++) {
				struct ftrp_workload gw;
				struct ftrp_gen g = {.skew = cfg.work[wi].skew, .reuse = cfg.work[wi].reuse, .seed = cfg.seed};
				char path[4096];
				trace_name(path, sizeof path, save, &cfg.work[wi], cfg.nwork > 1, shapes ? shape : NULL);
				r = ftrp_generate(&g, cfg.layers, m->experts, m->topk, cfg.batch,
						  cfg.warmup_steps + cfg.gpu_warmup + cfg.steps, &gw, err, sizeof err);
				if (!r) {
					r = ftrp_trace_write(path, &gw, err, sizeof err);
					ftrp_workload_release(&gw);
				}
				if (r) {
					ftcli_error("--save-trace: %s", err);
					goto out;
				}
				ftcli_note("routing of %s (%s, E %d, top-%d) saved: %s", ftrp_work_name(&cfg.work[wi], why, sizeof why),
					   m->name, m->experts, m->topk, path);
			}
		}
		double pad[FTPROBE_MAX_ROUTES + 1], fpad[FTPROBE_MAX_ROUTES + 1];
		int npad = 0;
		json_t *path = NULL;
		if (op->cpu_kernel && (rc = engine_path(op->cpu_kernel, op->cpu_kernel_timeout, &cfg, &path, pad, fpad, &npad)))
			goto out;
		rc = FTCLI_EXIT_FAIL;
		struct ftrp_ops ops;
		struct ftrp_gpu_opts go = {.device = gpu.index, .cpu = &ci, .cpus = cpus, .ncpus = ncpus,
					   .host_alloc = halloc, .host_gib = hgib, .tune = &tune,
					   .cpu_pad_us = npad ? pad : NULL, .cpu_pad_n = npad,
					   .fetch_pad_us = npad ? fpad : NULL, .fetch_pad_n = npad};
		int fake = ftcli_fake_gpus() >= 0;
		r = fake ? ftrp_fake_ops_paced(0, go.cpu_pad_us, npad, go.fetch_pad_us, &ops) : ftrp_gpu_ops(&go, &ops);
		if (r) {
			json_decref(path);
			ftcli_error("out of memory");
			goto out;
		}
		json_t *blk = NULL;
		r = ftrp_run(&cfg, &ops, &rep, &blk, err, sizeof err);
		if (blk)
			json_object_set_new(blk, "cpu_path", path ? path : json_pack("{s:s}", "source", "ftbench"));
		else
			json_decref(path);
		if (fake)
			ftrp_fake_ops_free(&ops);
		else
			ftrp_gpu_ops_free(&ops);
		if (r) {
			ftcli_error("%s", err);
			rc = r == -ENODEV || r == -ENOTSUP ? FTCLI_EXIT_USAGE : FTCLI_EXIT_FAIL;
			goto out;
		}
		json_object_set_new(replay, fmts[fi]->name, blk);
	}
	if (!nostore)
		store(gpu.uuid, gpu.name, replay, result);
	ftcli_result(result);
	if (ofmt == FTCLI_FMT_JSON)
		ftcli_print_json(result);
	else if (ofmt == FTCLI_FMT_CSV || ofmt == FTCLI_FMT_MD)
		print_rows(ofmt, replay);
	else
		print_table(replay);
	rc = 0;
out:
	ftprof_free(prof);
	json_decref(result);
	free(cpus);
	ftcpu_release(&ci);
	ftrp_workload_release(&tw);
	return rc;
}
