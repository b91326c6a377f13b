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
#include "cli/replay_run.h"
#include "cli/table.h"
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
	 .help = "short: cache 0.4 at uniform routing and reuse 0.6 (the default point), f 0.25/0.5/1; full: the map"},
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

/* A mode of a point, described once: the human table's mode lines and the csv/md rows (one per
 * point and mode, the point's fields repeated) print from these columns. */
static const struct ftcol mode_cols[] = {
	{"format", NULL},
	{"cache_fraction", NULL, .fmt = "%g"},
	{"workload", NULL},
	{"reuse", NULL, .fmt = "%g"},
	{"skew", NULL, .fmt = "%g"},
	{"mode", "mode", .width = -16},
	{"fetch_fraction", "f/cap", .width = 6, .fmt = "%.3g", .csv_fmt = "%g"},
	{"cap", NULL, .fmt = "%g"},
	{"ms_median", "ms/step", "ms", 9, "%.2f", "%.3f"},
	{"ms_p10", "p10-p90", "ms", 17, "%.2f", "%.3f"},
	{"ms_p90", NULL, "ms", .fmt = "%.3f"},
	{"tok_s", "tok/s", NULL, 9, "%.1f", "%.2f"},
	{"miss_rate", "miss", NULL, 6, "%.3f", "%.4f"},
	{"fetched_per_layer", "fetch/l", NULL, 7, "%.2f", "%.3f"},
	{"cpu_per_layer", "cpu/l", NULL, 6, "%.2f", "%.3f"},
	{"winner", NULL},
	{"speedup", NULL, .fmt = "%.3f"},
	{"best_fetch_fraction", NULL, .fmt = "%g"},
};

/* The cells of mode m of point pt of format fmt; fc and pr hold the human table's f/cap and
 * p10-p90 texts. */
static void mode_cells(const char *fmt, const json_t *pt, const json_t *m, struct ftcell *c, char *fc, size_t fcn,
		       char *pr, size_t prn)
{
	const json_t *ms = json_object_get(m, "ms_step"), *f = json_object_get(m, "fetch_fraction"),
		     *k = json_object_get(m, "cap");
	snprintf(fc, fcn, "-");
	if (json_is_number(f))
		snprintf(fc, fcn, "%.3g", json_number_value(f));
	else if (json_is_integer(k))
		snprintf(fc, fcn, "K=%lld", json_integer_value(k));
	snprintf(pr, prn, "%.2f-%.2f", json_number_value(json_object_get(ms, "p10")),
		 json_number_value(json_object_get(ms, "p90")));
	struct ftcell ff = ftcell_json(f), p10 = ftcell_json(json_object_get(ms, "p10"));
	ff.h = fc;
	p10.h = pr;
	struct ftcell v[] = {FTCELL_S(fmt), ftcell_json(json_object_get(pt, "cache_fraction")),
			     ftcell_json(json_object_get(pt, "workload")), ftcell_json(json_object_get(pt, "reuse")),
			     ftcell_json(json_object_get(pt, "skew")), ftcell_json(json_object_get(m, "mode")), ff,
			     ftcell_json(k), ftcell_json(json_object_get(ms, "median")), p10,
			     ftcell_json(json_object_get(ms, "p90")), ftcell_json(json_object_get(m, "tok_s")),
			     ftcell_json(json_object_get(m, "miss_rate")), ftcell_json(json_object_get(m, "fetched_per_layer")),
			     ftcell_json(json_object_get(m, "cpu_per_layer")), ftcell_json(json_object_get(pt, "winner")),
			     ftcell_json(json_object_get(pt, "speedup")), ftcell_json(json_object_get(pt, "best_fetch_fraction"))};
	memcpy(c, v, sizeof v);
}

/* The modes of point pt as rows of t. */
static void mode_rows(const struct fttable *t, const char *fmt, const json_t *pt)
{
	size_t j;
	const json_t *m;
	json_array_foreach(json_object_get(pt, "modes"), j, m) {
		struct ftcell c[FTCOL_COUNT(mode_cols)];
		char fc[16], pr[48];
		mode_cells(fmt, pt, m, c, fc, sizeof fc, pr, sizeof pr);
		fttable_row(t, c);
	}
}

static void print_rows(enum ftcli_format f, const json_t *replay)
{
	struct fttable t = {mode_cols, FTCOL_COUNT(mode_cols), f};
	fttable_head(&t);
	const char *fmt;
	const json_t *blk, *pt;
	size_t i;
	json_object_foreach((json_t *)replay, fmt, blk)
		json_array_foreach(json_object_get(blk, "points"), i, pt)
			mode_rows(&t, fmt, pt);
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
			struct fttable t = {mode_cols, FTCOL_COUNT(mode_cols), FTCLI_FMT_TABLE, .indent = "    "};
			fttable_head(&t);
			mode_rows(&t, fmt, pt);
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

/* The configuration every format shares, from the options; tw gets --trace's routing (the caller
 * releases it). 0 or an exit status (the error said). */
static int base_config(const struct rp_opts *op, struct ftrp_config *base, struct ftrp_workload *tw)
{
	char err[1024];
	ftrp_config_default(base, op->size ? FTRP_FULL : FTRP_SHORT);
	base->layers = (int)op->layers;
	base->batch = (int)op->batch;
	base->seed = (uint64_t)op->seed;
	base->cache_slots = op->cslots;
	base->cache_bytes = op->cgib * 1073741824.0;
	base->base.order = op->order ? FTSC_ORDER_LOWEST_ID : FTSC_ORDER_RECENCY;
	base->base.overlap = !op->no_overlap;
	base->base.offload_from_batch = (int)op->ofb;
	if (op->steps > 0)
		base->steps = (int)op->steps;
	if (op->warm >= 0)
		base->warmup_steps = (int)op->warm;
	if (op->cache.n) {
		base->ncache = op->cache.n;
		memcpy(base->cache, op->cache.v, (size_t)op->cache.n * sizeof *base->cache);
	}
	if (op->cslots > 0 || op->cgib > 0) {
		if (op->cache.n || (op->cslots > 0 && op->cgib > 0)) {
			ftcli_error("--cache, --cache-slots and --cache-gib are three ways to say one thing: give one");
			return FTCLI_EXIT_USAGE;
		}
		base->ncache = 1;
		base->cache[0] = 1; /* replaced by the override (its actual share is reported) */
	}
	if (op->fractions.n) {
		base->nfrac = op->fractions.n;
		memcpy(base->fractions, op->fractions.v, (size_t)op->fractions.n * sizeof *base->fractions);
	}
	if (op->caps.n && op->no_caps) {
		ftcli_error("--caps and --no-caps: give one");
		return FTCLI_EXIT_USAGE;
	}
	if (op->caps.n || op->no_caps) {
		base->ncaps = op->caps.n;
		for (int i = 0; i < op->caps.n; i++)
			base->caps[i] = (int)op->caps.v[i];
	}
	if (op->workloads && op->trace) {
		ftcli_error("--workloads and --trace: the trace is the workload");
		return FTCLI_EXIT_USAGE;
	}
	if (op->workloads) {
		char **items = NULL;
		int n = ftstr_split(op->workloads, &items, FTRP_MAX_AXIS + 1);
		if (n < 1 || n > FTRP_MAX_AXIS) {
			ftcli_error("--workloads: expected 1..%d workloads", FTRP_MAX_AXIS);
			ftstr_free_list(items, n > 0 ? n : 0);
			return FTCLI_EXIT_USAGE;
		}
		for (int i = 0; i < n; i++)
			if (ftrp_work_parse(items[i], &base->work[i]) || base->work[i].trace) {
				ftcli_error("--workloads: '%s' is none of uniform, reuse:R (0..1), zipf:S (0..16), zipf:S+reuse:R",
					    items[i]);
				ftstr_free_list(items, n);
				return FTCLI_EXIT_USAGE;
			}
		base->nwork = n;
		ftstr_free_list(items, n);
	}
	if (op->save && op->trace) {
		ftcli_error("--save-trace writes generated routing; this run replays %s", op->trace);
		return FTCLI_EXIT_USAGE;
	}
	if (op->trace) {
		if (ftrp_trace_read(op->trace, tw, err, sizeof err)) {
			ftcli_error("--trace: %s", err);
			return FTCLI_EXIT_USAGE;
		}
		base->trace = tw;
		base->nwork = 1;
		base->work[0] = (struct ftrp_work){0, 0, 1};
		base->layers = tw->layers;
		base->batch = tw->batch;
	}
	return 0;
}

/* --format into fmts (FTFMT_COUNT entries): how many, or -1 (the error said). */
static int parse_formats(const char *formats, const struct ftfmt **fmts)
{
	char **items = NULL;
	int nf = 0, n = ftstr_split(formats, &items, FTFMT_COUNT + 1);
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
	if (nf == 0)
		ftcli_error("--format: no format given");
	return nf > 0 ? nf : -1;
}

/* Format fmt's configuration from base: its geometry, the profile's f (from[fn] says whence) and
 * its rule-of-thumb verdict. 0 or an exit status. */
static int format_config(const struct rp_opts *op, const struct ftrp_config *base, const struct ftfmt *fmt,
			 const struct ftprof *prof, struct ftrp_config *cfg, char *from, size_t fn)
{
	char err[1024];
	const struct ftmodel *m = ftmodel_bw_dtype(fmt->id);
	if (op->model && !(m = ftmodel_find(ftmodel_bw_models, ftmodel_bw_models_count, op->model))) {
		ftcli_error("--model: '%s' is not a bw --model workload", op->model);
		return FTCLI_EXIT_USAGE;
	}
	if (!m) {
		ftcli_error("%s has no bw workload geometry; give --model", fmt->name);
		return FTCLI_EXIT_USAGE;
	}
	*cfg = *base;
	cfg->fmt = fmt;
	cfg->model = m;
	cfg->layers_model = op->lmodel > 0 ? (int)op->lmodel : layers_model_of(m);
	double f = op->pfrac;
	from[0] = '\0';
	if (isnan(f) && prof && !ftprof_fetch_fraction(prof, fmt->name, &f))
		snprintf(from, fn, "profile %s", ftprof_source(prof));
	else if (!isnan(f))
		snprintf(from, fn, "--profile-fraction");
	cfg->profile_fraction = f;
	cfg->profile_fraction_from = from[0] ? from : NULL;
	cfg->bandwidth_verdict = NULL;
	if (prof) {
		const json_t *e = json_object_get(json_object_get(ftprof_json(prof), "dtype_kernels"), fmt->name);
		cfg->bandwidth_verdict = json_string_value(json_object_get(e, "recommended_bandwidth"));
		if (!cfg->bandwidth_verdict) {
			enum ftprof_rec rr = ftprof_recommend(prof, fmt->name);
			cfg->bandwidth_verdict = rr == FTPROF_REC_NONE ? NULL : ftprof_rec_name(rr);
		}
	}
	if (ftrp_config_check(cfg, err, sizeof err)) {
		ftcli_error("%s", err);
		return FTCLI_EXIT_USAGE;
	}
	return 0;
}

/* --save-trace: cfg's generated routing, once per shape (E, top-k) whatever format runs it
 * (fmts[fi] is cfg's format; shape names the files when the formats' shapes differ). 0 or
 * FTCLI_EXIT_FAIL. */
static int save_traces(const struct rp_opts *op, const struct ftrp_config *cfg, const struct ftfmt **fmts, int nf,
		       int fi)
{
	const struct ftmodel *m = cfg->model;
	int shapes = 0, earlier = 0;
	for (int k = 0; k < nf; k++) {
		const struct ftmodel *mk = op->model ? m : ftmodel_bw_dtype(fmts[k]->id);
		shapes |= mk && (mk->experts != m->experts || mk->topk != m->topk);
		earlier |= k < fi && mk && mk->experts == m->experts && mk->topk == m->topk;
	}
	if (earlier)
		return 0;
	char shape[32], err[1024], why[256];
	snprintf(shape, sizeof shape, "e%dk%d", m->experts, m->topk);
	for (int wi = 0; wi < cfg->nwork; wi++) {
		struct ftrp_workload gw;
		struct ftrp_gen g = {.skew = cfg->work[wi].skew, .reuse = cfg->work[wi].reuse, .seed = cfg->seed};
		char path[4096];
		trace_name(path, sizeof path, op->save, &cfg->work[wi], cfg->nwork > 1, shapes ? shape : NULL);
		int r = ftrp_generate(&g, cfg->layers, m->experts, m->topk, cfg->batch,
				      cfg->warmup_steps + cfg->gpu_warmup + cfg->steps, &gw, err, sizeof err);
		if (!r) {
			r = ftrp_trace_write(path, &gw, err, sizeof err);
			ftrp_workload_release(&gw);
		}
		if (r) {
			ftcli_error("--save-trace: %s", err);
			return FTCLI_EXIT_FAIL;
		}
		ftcli_note("routing of %s (%s, E %d, top-%d) saved: %s", ftrp_work_name(&cfg->work[wi], why, sizeof why),
			   m->name, m->experts, m->topk, path);
	}
	return 0;
}

/* One format measured (ftcli_replay_format); *blk its replay block. 0 or an exit status. */
static int run_format(const struct rp_opts *op, const struct ftrp_config *cfg, const struct ftrp_gpu_opts *go,
		      char *const *probe_argv, const struct ftreport *rep, json_t **blk)
{
	char err[1024];
	int probe_failed;
	int r = ftcli_replay_format(cfg, *go, probe_argv, op->cpu_kernel_timeout, rep, blk, &probe_failed, err, sizeof err);
	if (!r)
		return 0;
	if (probe_failed) {
		ftcli_error("--cpu-kernel %s: %s", cfg->fmt->name, err);
		return r == -EINVAL ? FTCLI_EXIT_USAGE : FTCLI_EXIT_FAIL;
	}
	ftcli_error("%s", err);
	return r == -ENODEV || r == -ENOTSUP ? FTCLI_EXIT_USAGE : FTCLI_EXIT_FAIL;
}

static int replay_cmd(struct rp_opts *op)
{
	enum ftcli_format ofmt = (enum ftcli_format)op->ofmt;
	struct ftrp_config base;
	struct ftrp_workload tw = {0};
	const struct ftfmt *fmts[FTFMT_COUNT];
	struct ftcpumoe_tune tune;
	struct ftgpu_info gpu;
	struct ftcpu_info ci = {0};
	struct ftprof *prof = NULL;
	json_t *result = NULL;
	int *cpus = NULL, nf, r, rc;
	char why[256] = "", perr[1024], **probe_argv = NULL;
	if (ofmt == FTCLI_FMT_JSON)
		ftcli_set_quiet(1);
	if ((rc = base_config(op, &base, &tw)))
		goto done;
	if (op->cpu_kernel && ftprobe_split(op->cpu_kernel, &probe_argv, perr, sizeof perr) < 0) {
		ftcli_error("--cpu-kernel: %s", perr);
		rc = FTCLI_EXIT_USAGE;
		goto done;
	}
	rc = FTCLI_EXIT_USAGE;
	if ((nf = parse_formats(op->format, fmts)) < 0 || ftcli_tune_build(&op->tune, &tune) < 0)
		goto done;
	/* the GPU: replay needs one */
	if ((r = ftcli_select_gpu(op->gpu.spec, &gpu, why, sizeof why)) < 0)
		goto done;
	if (r > 0) {
		ftcli_error("replay needs a GPU: %s", why);
		goto done;
	}
	if ((r = ftcpu_probe(&ci)) < 0) {
		ftcli_error("cannot describe the CPU: %s", strerror(-r));
		rc = FTCLI_EXIT_FAIL;
		goto done;
	}
	if (op->threads > ci.physical_cores) {
		ftcli_error("--cpu-threads %ld: this host has %d physical cores", op->threads, ci.physical_cores);
		goto out;
	}
	rc = FTCLI_EXIT_FAIL;
	if (!(cpus = calloc((size_t)ci.physical_cores, sizeof *cpus)))
		goto out;
	int ncpus = ftcpu_cores_near(&ci, gpu.numa_node, cpus, op->threads ? (int)op->threads : ci.physical_cores);
	if (ftprof_load(gpu.uuid, gpu.name, &prof, perr, sizeof perr))
		prof = NULL;
	result = json_pack("{s:{s:s,s:s,s:i},s:{}}", "gpu", "uuid", gpu.uuid, "name", gpu.name, "index", gpu.index, "replay");
	json_t *replay = json_object_get(result, "replay");
	struct ftreport rep = ftcli_reporter();
	struct ftrp_gpu_opts go = {.device = gpu.index, .cpu = &ci, .cpus = cpus, .ncpus = ncpus,
				   .host_alloc = op->halloc ? "hostalloc" : "register", .host_gib = op->hgib, .tune = &tune};
	for (int fi = 0; fi < nf; fi++) {
		struct ftrp_config cfg;
		char from[600];
		json_t *blk;
		if ((rc = format_config(op, &base, fmts[fi], prof, &cfg, from, sizeof from)) ||
		    (op->save && (rc = save_traces(op, &cfg, fmts, nf, fi))) || (rc = run_format(op, &cfg, &go, probe_argv, &rep, &blk)))
			goto out;
		json_object_set_new(replay, fmts[fi]->name, blk);
	}
	if (!op->nostore)
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
done:
	ftprobe_free_argv(probe_argv);
	ftrp_workload_release(&tw);
	return rc;
}
