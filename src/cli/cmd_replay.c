/* ftbench replay: the engine's MoE decode step replayed on this host under a routing workload and
 * a cache size, in every placement mode (src/replay; docs/REPLAY.md). Prints the per-point modes,
 * the winner and best fetch fraction, the map over cache size x workload; stores the replay
 * blocks in the GPU's profile when one exists. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "ftprofile.h"
#include "hw/cpu.h"
#include "moe/models.h"
#include "replay/replay.h"
#include "util/strutil.h"

static const char usage[] =
	"usage: ftbench replay [--format LIST] [--model NAME] [--workloads LIST] [--cache LIST]\n"
	"                      [--trace FILE] [--save-trace FILE] [--size short|full] [options]\n"
	"Runs the MoE part of an engine's decode step (slot cache, gather, GPU expert GEMV, the CPU\n"
	"executor, the engine's placement policy) for real on this GPU and host, per cache size and\n"
	"routing workload, in each mode: offload (fetch every miss), hybrid with the profile's fetch\n"
	"fraction, a sweep of fractions, a cap of K misses. Needs a GPU. docs/REPLAY.md.\n"
	"  --format LIST        expert formats (default bf16,nvfp4; each needs a CPU MoE path)\n"
	"  --model NAME         geometry of a bw --model workload (default: the format's bw workload)\n"
	"  --layers N           MoE layers run (16); --layers-model N: the model's, for tok/s\n"
	"                       (default: the model's, else a cache-copy profile of the same shape, else 48)\n"
	"  --batch B            tokens per decode step, 1..32 (1)\n"
	"  --workloads LIST     uniform, reuse:R, zipf:S, zipf:S+reuse:R (default uniform,reuse:0.6,\n"
	"                       reuse:0.85); R = share of a token's experts kept from the step before,\n"
	"                       S = Zipf exponent of expert popularity\n"
	"  --cache LIST         slot cache sizes as fractions of layers x experts (0.4,0.7)\n"
	"  --cache-slots N | --cache-gib X   one cache size in slots or GiB instead\n"
	"  --fractions LIST     the hybrid fetch fractions swept (0,0.125,0.25,0.375,0.5,0.75,1)\n"
	"  --caps LIST          hybrid caps K (misses fetched per layer-step; default 1; none)\n"
	"  --profile-fraction F the profile's f (default: read from this GPU's profile, as engines do)\n"
	"  --fetch-order recency|lowest_id   which misses hybrid fetches (the seed: recency)\n"
	"  --no-overlap         the CPU routes before the GPU work (FREETOKEN_HYBRID_OVERLAP=0)\n"
	"  --offload-from-batch N  steps of >= N tokens run as offload (llama.cpp: 32; default 0: never)\n"
	"  --steps N --warmup N timed steps per mode (32), CPU-reference warm-up steps (64)\n"
	"  --size short|full    short: the default point only (cache 0.4, reuse 0.6), f 0.25/0.5/1\n"
	"  --trace FILE         replay recorded routing (format: docs/REPLAY.md) instead of generating\n"
	"  --save-trace FILE    write the generated routing (FILE, or FILE-<workload>.json for several)\n"
	"  --seed N             workload generator seed (1)\n"
	"  --host-alloc register|hostalloc  host banks: mmap + cudaHostRegister as the engine (default)\n"
	"                       or cudaHostAlloc; --host-gib X: distinct host bytes per format (4)\n"
	"  --gpu G              GPU index or uuid (default: the first); --cpu-threads N (all cores)\n"
	"  --no-store           do not add the replay blocks to the GPU's stored profile\n"
	"  --json, --output-format table|json|csv|md (csv/md: one row per point and mode)\n"
	"  --result-fd N        worker protocol (ftbenchd)\n";

enum {
	O_FORMAT = 256, O_MODEL, O_LAYERS, O_LAYERS_MODEL, O_BATCH, O_WORK, O_CACHE, O_CSLOTS, O_CGIB, O_FRACS, O_CAPS,
	O_PFRAC, O_ORDER, O_NOOV, O_OFB, O_STEPS, O_WARM, O_SIZE, O_TRACE, O_SAVE, O_SEED, O_HALLOC, O_HGIB, O_GPU,
	O_THREADS, O_NOSTORE, O_JSON, O_OFMT, O_RFD, O_TUNE, O_HELP
};

static const struct option opts[] = {
	{"format", required_argument, NULL, O_FORMAT}, {"dtype", required_argument, NULL, O_FORMAT},
	{"model", required_argument, NULL, O_MODEL}, {"layers", required_argument, NULL, O_LAYERS},
	{"layers-model", required_argument, NULL, O_LAYERS_MODEL}, {"batch", required_argument, NULL, O_BATCH},
	{"workloads", required_argument, NULL, O_WORK}, {"cache", required_argument, NULL, O_CACHE},
	{"cache-slots", required_argument, NULL, O_CSLOTS}, {"cache-gib", required_argument, NULL, O_CGIB},
	{"fractions", required_argument, NULL, O_FRACS}, {"caps", required_argument, NULL, O_CAPS},
	{"profile-fraction", required_argument, NULL, O_PFRAC}, {"fetch-order", required_argument, NULL, O_ORDER},
	{"no-overlap", no_argument, NULL, O_NOOV}, {"offload-from-batch", required_argument, NULL, O_OFB},
	{"steps", required_argument, NULL, O_STEPS}, {"warmup", required_argument, NULL, O_WARM},
	{"size", required_argument, NULL, O_SIZE}, {"trace", required_argument, NULL, O_TRACE},
	{"save-trace", required_argument, NULL, O_SAVE}, {"seed", required_argument, NULL, O_SEED},
	{"host-alloc", required_argument, NULL, O_HALLOC}, {"host-gib", required_argument, NULL, O_HGIB},
	{"gpu", required_argument, NULL, O_GPU}, {"cpu-threads", required_argument, NULL, O_THREADS},
	{"no-store", no_argument, NULL, O_NOSTORE}, {"json", no_argument, NULL, O_JSON},
	{"output-format", required_argument, NULL, O_OFMT}, {"result-fd", required_argument, NULL, O_RFD},
	{"tune", required_argument, NULL, O_TUNE}, {"help", no_argument, NULL, O_HELP}, {0}};

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
	struct ftrp_config base;
	enum ftrp_size size = FTRP_FULL;
	enum ftcli_format ofmt = FTCLI_FMT_TABLE;
	const char *formats = "bf16,nvfp4", *model = NULL, *work = NULL, *cache = NULL, *fracs = NULL, *caps = NULL,
		   *trace = NULL, *save = NULL, *gpu_spec = NULL, *halloc = "register", *order = "recency";
	double pfrac = NAN, cgib = 0, hgib = 4;
	long layers = FTRP_DEFAULT_LAYERS, lmodel = 0, batch = 1, steps = -1, warm = -1, seed = 1, ofb = 0, cslots = 0,
	     threads = 0;
	int overlap = 1, nostore = 0, json = 0, c, r, rc = FTCLI_EXIT_FAIL;
	struct ftcli_tune tune_o = {0};
	char err[1024] = "", why[256] = "";

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		double d;
		long v;
		switch (c) {
		case O_FORMAT: formats = optarg; break;
		case O_MODEL: model = optarg; break;
		case O_WORK: work = optarg; break;
		case O_CACHE: cache = optarg; break;
		case O_FRACS: fracs = optarg; break;
		case O_CAPS: caps = optarg; break;
		case O_TRACE: trace = optarg; break;
		case O_SAVE: save = optarg; break;
		case O_GPU: gpu_spec = optarg; break;
		case O_HALLOC:
			if (strcmp(optarg, "register") && strcmp(optarg, "hostalloc")) {
				ftcli_error("--host-alloc: '%s' is neither register nor hostalloc", optarg);
				return FTCLI_EXIT_USAGE;
			}
			halloc = optarg;
			break;
		case O_ORDER:
			if (strcmp(optarg, "recency") && strcmp(optarg, "lowest_id")) {
				ftcli_error("--fetch-order: '%s' is neither recency nor lowest_id", optarg);
				return FTCLI_EXIT_USAGE;
			}
			order = optarg;
			break;
		case O_NOOV: overlap = 0; break;
		case O_NOSTORE: nostore = 1; break;
		case O_JSON: json = 1; break;
		case O_SIZE:
			if (ftrp_size_parse(optarg, &size) || size == FTRP_NONE) {
				ftcli_error("--size: '%s' is neither short nor full", optarg);
				return FTCLI_EXIT_USAGE;
			}
			break;
		case O_OFMT:
			if (ftcli_parse_format("--output-format", optarg, &ofmt) < 0)
				return FTCLI_EXIT_USAGE;
			break;
		case O_RFD:
			if (ftcli_opt_result_fd(optarg) < 0)
				return FTCLI_EXIT_USAGE;
			break;
		case O_TUNE:
			r = ftcli_opt_tune(&tune_o, optarg);
			if (r)
				return r > 0 ? 0 : FTCLI_EXIT_USAGE;
			break;
		case O_PFRAC:
		case O_CGIB:
		case O_HGIB:
			if (ftstr_parse_double(optarg, c == O_PFRAC ? 0 : 1e-6, c == O_PFRAC ? 1 : 1e6, &d)) {
				ftcli_error("--%s: '%s' is not a number in range", c == O_PFRAC ? "profile-fraction"
										 : c == O_CGIB ? "cache-gib" : "host-gib", optarg);
				return FTCLI_EXIT_USAGE;
			}
			*(c == O_PFRAC ? &pfrac : c == O_CGIB ? &cgib : &hgib) = d;
			break;
		case O_LAYERS: case O_LAYERS_MODEL: case O_BATCH: case O_STEPS: case O_WARM: case O_SEED: case O_OFB:
		case O_CSLOTS: case O_THREADS: {
			static const struct { int o; const char *name; long lo, hi; } lim[] = {
				{O_LAYERS, "layers", 1, 4096}, {O_LAYERS_MODEL, "layers-model", 1, 4096},
				{O_BATCH, "batch", 1, 32}, {O_STEPS, "steps", 4, 100000}, {O_WARM, "warmup", 0, 100000},
				{O_SEED, "seed", 0, 1L << 62}, {O_OFB, "offload-from-batch", 0, 32},
				{O_CSLOTS, "cache-slots", 1, 1 << 24}, {O_THREADS, "cpu-threads", 0, 4096}};
			int k = 0;
			while (lim[k].o != c)
				k++;
			if (ftstr_parse_long(optarg, lim[k].lo, lim[k].hi, &v)) {
				ftcli_error("--%s: '%s' is not an integer from %ld to %ld", lim[k].name, optarg, lim[k].lo,
					    lim[k].hi);
				return FTCLI_EXIT_USAGE;
			}
			*(c == O_LAYERS ? &layers : c == O_LAYERS_MODEL ? &lmodel : c == O_BATCH ? &batch : c == O_STEPS ? &steps
			  : c == O_WARM ? &warm : c == O_SEED ? &seed : c == O_OFB ? &ofb : c == O_CSLOTS ? &cslots : &threads) = v;
			break;
		}
		case O_HELP: case 'h': fputs(usage, stdout); return 0;
		default: fputs(usage, stderr); return FTCLI_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		ftcli_error("unexpected argument '%s'", argv[optind]);
		return FTCLI_EXIT_USAGE;
	}
	if (json)
		ofmt = FTCLI_FMT_JSON;
	if (ofmt == FTCLI_FMT_JSON)
		ftcli_set_quiet(1);

	/* the configuration shared by every format */
	ftrp_config_default(&base, size);
	base.layers = (int)layers;
	base.batch = (int)batch;
	base.seed = (uint64_t)seed;
	base.cache_slots = cslots;
	base.cache_bytes = cgib * 1073741824.0;
	base.base.order = strcmp(order, "lowest_id") ? FTSC_ORDER_RECENCY : FTSC_ORDER_LOWEST_ID;
	base.base.overlap = overlap;
	base.base.offload_from_batch = (int)ofb;
	if (steps > 0)
		base.steps = (int)steps;
	if (warm >= 0)
		base.warmup_steps = (int)warm;
	if (cache) {
		long n = ftstr_parse_double_list(cache, 1e-9, 1, base.cache, FTRP_MAX_AXIS);
		if (n < 1) {
			ftcli_error("--cache: '%s' is not a list of 1..%d fractions in (0, 1]", cache, FTRP_MAX_AXIS);
			return FTCLI_EXIT_USAGE;
		}
		base.ncache = (int)n;
	}
	if (cslots > 0 || cgib > 0) {
		if (cache || (cslots > 0 && cgib > 0)) {
			ftcli_error("--cache, --cache-slots and --cache-gib are three ways to say one thing: give one");
			return FTCLI_EXIT_USAGE;
		}
		base.ncache = 1;
		base.cache[0] = 1; /* replaced by the override (its actual share is reported) */
	}
	if (fracs) {
		long n = ftstr_parse_double_list(fracs, 0, 1, base.fractions, FTRP_MAX_SWEEP);
		if (n < 1) {
			ftcli_error("--fractions: '%s' is not a list of 1..%d numbers in [0, 1]", fracs, FTRP_MAX_SWEEP);
			return FTCLI_EXIT_USAGE;
		}
		base.nfrac = (int)n;
	}
	if (caps) {
		long k[FTRP_MAX_CAPS];
		long n = strcmp(caps, "none") ? ftstr_parse_long_list(caps, 0, 2048, k, FTRP_MAX_CAPS) : 0;
		if (n < 0) {
			ftcli_error("--caps: '%s' is not a list of 1..%d integers >= 0 (or none)", caps, FTRP_MAX_CAPS);
			return FTCLI_EXIT_USAGE;
		}
		base.ncaps = (int)n;
		for (int i = 0; i < n; i++)
			base.caps[i] = (int)k[i];
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
		struct ftrp_ops ops;
		struct ftrp_gpu_opts go = {.device = gpu.index, .cpu = &ci, .cpus = cpus, .ncpus = ncpus,
					   .host_alloc = halloc, .host_gib = hgib, .tune = &tune};
		int fake = ftcli_fake_gpus() >= 0;
		r = fake ? ftrp_fake_ops(0, &ops) : ftrp_gpu_ops(&go, &ops);
		if (r) {
			ftcli_error("out of memory");
			goto out;
		}
		json_t *blk = NULL;
		r = ftrp_run(&cfg, &ops, &rep, &blk, err, sizeof err);
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
