/* ftbench bw: the host bandwidth profile (reference §5). Measures, writes the profile atomically
 * to the per-GPU path (host.json without a GPU, or -o FILE), prints a summary (or --json), and in
 * worker mode (--result-fd N) sends progress and the whole profile as the result. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bw.h"
#include "bench/bw_ops.h"
#include "bench/bw_probe.h"
#include "bench/cpu_probe.h"
#include "cli/bw_print.h"
#include "cli/cli.h"
#include "cli/flags.h"
#include "cli/replay_run.h"
#include "ftprofile.h"
#include "hw/cpu.h"
#include "moe/cpu/cpumoe.h"
#include "replay/replay.h"
#include "util/fsutil.h"
#include "util/strutil.h"
#include "util/timeutil.h"

/* --batch-sweep LIST (1..FTCPUMOE_MAX_BATCH each, at most FTBW_MAX_BATCHES: the row's bounds)
 * into c, ascending and without repeats. */
static void set_batches(const struct ftflag_list *l, struct ftbw_config *c)
{
	c->nbatch = 0;
	for (int want = 1; want <= FTCPUMOE_MAX_BATCH; want++)
		for (int i = 0; i < l->n; i++)
			if ((int)l->v[i] == want) {
				c->batches[c->nbatch++] = want;
				break;
			}
}

static int parse_formats(const char *opt, const char *arg, enum ftfmt_id *out, int *n, bool need_workload)
{
	char **items;
	int k = ftstr_split(arg, &items, 32);
	if (k <= 0) {
		ftcli_error("%s: empty list", opt);
		return -1;
	}
	*n = 0;
	int r = 0;
	for (int i = 0; i < k && r == 0; i++) {
		if (need_workload && !strcmp(items[i], "all")) {
			for (int j = 0; j < ftmodel_bw_dtypes_count && *n < FTFMT_COUNT; j++)
				out[(*n)++] = ftmodel_bw_dtypes[j].format;
			continue;
		}
		const struct ftfmt *f = ftfmt_lookup(items[i]);
		if (!f || (need_workload && !ftmodel_bw_dtype(f->id))) {
			ftcli_error("%s: unknown format '%s' (choose from all,%s)", opt, items[i],
				    "bf16,nvfp4,fp8_block,mxfp4_triton,ds_fp4");
			r = -1;
			break;
		}
		bool dup = false;
		for (int j = 0; j < *n; j++)
			dup |= out[j] == f->id;
		if (!dup && *n < FTFMT_COUNT)
			out[(*n)++] = f->id;
	}
	ftstr_free_list(items, k);
	return r;
}

static int parse_models(const char *arg, struct ftbw_config *c)
{
	char **items;
	int k = ftstr_split(arg, &items, 32), r = 0;
	if (k <= 0) {
		ftcli_error("--model: empty list");
		return -1;
	}
	c->nmodels = 0;
	for (int i = 0; i < k && r == 0; i++) {
		if (!strcmp(items[i], "all")) {
			c->nmodels = 0;
			for (int j = 0; j < ftmodel_bw_models_count && j < FTBW_MAX_MODELS; j++)
				c->models[c->nmodels++] = &ftmodel_bw_models[j];
			continue;
		}
		const struct ftmodel *m = ftmodel_find(ftmodel_bw_models, ftmodel_bw_models_count, items[i]);
		if (!m) {
			char names[512] = "";
			for (int j = 0; j < ftmodel_bw_models_count; j++)
				snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", j ? "," : "",
					 ftmodel_bw_models[j].name);
			ftcli_error("--model: unknown model '%s' (choose from all,%s)", items[i], names);
			r = -1;
			break;
		}
		bool dup = false;
		for (int j = 0; j < c->nmodels; j++)
			dup |= c->models[j] == m;
		if (!dup && c->nmodels < FTBW_MAX_MODELS)
			c->models[c->nmodels++] = m;
	}
	ftstr_free_list(items, k);
	return r;
}

static int parse_isa(const char *arg, struct ftbw_config *c)
{
	if (ftstr_copy(c->isa, sizeof c->isa, arg) < 0) {
		ftcli_error("--isa: too long");
		return -1;
	}
	if (!strcmp(arg, "auto") || !strcmp(arg, "all"))
		return 0;
	char **items, names[256];
	int k = ftstr_split(arg, &items, FTBW_MAX_ISAS + 1), r = 0;
	if (k <= 0 || k > FTBW_MAX_ISAS) {
		ftcli_error("--isa: give auto, all or 1 to %d ISA names", FTBW_MAX_ISAS);
		if (k > 0)
			ftstr_free_list(items, k);
		return -1;
	}
	for (int i = 0; i < k && r == 0; i++)
		if (!ftbw_isa_known(items[i], names, sizeof names)) {
			ftcli_error("--isa: unknown ISA '%s' (choose from auto,all,%s)", items[i], names);
			r = -1;
		}
	ftstr_free_list(items, k);
	return r;
}

/* Write prof where it goes: -o FILE (that file only), FREETOKEN_BENCHBW_PATH (that file, no store,
 * no history), else the store's rule (ftprof_store_settle). 0 written; FTPROF_KEPT_INVALID: not
 * valid (its own checks failed), so it went to the store's history only and the profile engines
 * read is unchanged; -errno. */
static int write_profile(const json_t *prof, const char *output, const char *uuid, char *path, size_t n)
{
	if (!output && getenv("FREETOKEN_BENCHBW_PATH") && *getenv("FREETOKEN_BENCHBW_PATH"))
		return ftprof_store_write(prof, uuid, path, n); /* that file: no store, no history */
	if (!output)
		return ftprof_store_settle(NULL, prof, uuid, FTPROF_HISTORY_KEEP, FTPROF_DRIFT_SHARE, path, n);
	char *text = json_dumps(prof, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	if (!text)
		return -ENOMEM;
	size_t len = strlen(text);
	text[len] = '\n'; /* over the NUL: the file ends with a newline */
	char dir[4096];
	ftfs_dirname(output, dir, sizeof dir);
	int r = ftfs_mkdir_p(dir, 0755);
	if (r == 0)
		r = ftfs_write_atomic(output, text, len + 1, 0644);
	free(text);
	if (r == 0)
		ftstr_copy(path, n, output);
	return r;
}

/* A profile whose own checks failed: one error (on stderr and, in worker mode, the result fd)
 * with every reason on its own line, and FTCLI_EXIT_INVALID (the profile was written to -o, or
 * kept in the history beside store_path); else FTCLI_EXIT_OK. */
static int invalid_exit(const json_t *prof, const char *store_path)
{
	const json_t *why = json_object_get(prof, "invalid_reasons");
	if (!json_is_false(json_object_get(prof, "valid")))
		return FTCLI_EXIT_OK;
	size_t i, len = 0;
	json_t *w;
	char *text = NULL;
	FILE *f = open_memstream(&text, &len);
	if (!f) {
		ftcli_error("the profile is not valid (its own checks failed)");
		return FTCLI_EXIT_INVALID;
	}
	fputs("the profile is not valid (its own checks failed):", f);
	json_array_foreach(why, i, w)
		fprintf(f, "\n  - %s", json_string_value(w));
	if (!json_array_size(why))
		fputs("\n  - (no reason recorded)", f);
	const json_t *rm = json_object_get(prof, "remeasured");
	json_array_foreach(rm, i, w)
		fprintf(f, "%s%s (%lld tries)", i ? ", " : "\n  measured again first: ",
			json_string_value(json_object_get(w, "phase")) ? json_string_value(json_object_get(w, "phase")) : "?",
			(long long)json_integer_value(json_object_get(w, "tries")));
	if (store_path)
		fprintf(f, "\n  it is kept in the history beside %s; that profile, which engines read, is unchanged",
			store_path);
	fclose(f);
	ftcli_error("%s", text ? text : "the profile is not valid (its own checks failed)");
	free(text);
	return FTCLI_EXIT_INVALID;
}

/* The seed's single file (the only one released engines read) beside the stored profile, by the
 * store's rule (ftprof_legacy_settle): on a host with exactly one GPU; elsewhere say why not. */
static void legacy_copy(const json_t *prof, const char *saved, char *done, size_t n)
{
	char lp[4096];
	enum ftprof_legacy what;
	int host = ftcli_host_gpu_count();
	int r = ftprof_legacy_settle(prof, saved, host, &what, lp, sizeof lp);
	done[0] = '\0';
	if (r < 0 && what == FTPROF_LEGACY_WRITTEN)
		ftcli_note("warning: the legacy copy %s could not be written: %s", lp, strerror(-r));
	else if (r == 0 && what == FTPROF_LEGACY_WRITTEN)
		ftstr_copy(done, n, lp);
	else if (r == 0 && what == FTPROF_LEGACY_MANY_GPUS)
		ftcli_note("this host has %d GPUs: the legacy single file %s is not written (engines on every GPU "
			   "would read this one's figures); engines that read benchbw/<gpu-uuid>.json or "
			   "FREETOKEN_BENCHBW_PATH get the right file%s",
			   host, lp, access(lp, F_OK) == 0 ? "; an older copy is still there, remove it" : "");
}

/* --gpu all: every GPU alone, then the engines at once (ftbw_run_host); one profile per GPU. */
/* --output-format: table (the summary), json, or csv|md rows (out_fmt). */
enum { OPT_OUTPUT_FORMAT = 512 };
static enum ftcli_format out_fmt = FTCLI_FMT_TABLE;

static int bw_all(struct ftbw_config *cfg, int threads, const char *output, int json, int legacy)
{
	struct ftcpu_info ci;
	struct ftgpu_info *gpus = NULL;
	struct ftbw_env *envs = NULL;
	struct ftbw_real *real = NULL;
	json_t **profs = NULL, *all = NULL;
	int *cpus = NULL, ng = 0, rc = FTCLI_EXIT_FAIL, invalid = 0;
	char why[256] = "", err[1024] = "", path[4096] = "";
	int r = ftcpu_probe(&ci);
	if (r < 0) {
		ftcli_error("cannot describe the CPU: %s", strerror(-r));
		return FTCLI_EXIT_FAIL;
	}
	r = ftcli_gpu_list(&gpus, &ng, why, sizeof why);
	if (r < 0) {
		ftcli_error("listing GPUs: %s", why);
		goto out;
	}
	if (ng == 0) {
		ftcli_error("--gpu all: %s", why[0] ? why : "this host has no GPU");
		rc = FTCLI_EXIT_USAGE;
		goto out;
	}
	if (ng > FTBW_MAX_GPUS) {
		ftcli_error("--gpu all: %d GPUs, at most %d", ng, FTBW_MAX_GPUS);
		rc = FTCLI_EXIT_USAGE;
		goto out;
	}
	if (threads > ci.physical_cores) {
		ftcli_error("--cpu-threads %d: this host has %d physical cores", threads, ci.physical_cores);
		rc = FTCLI_EXIT_USAGE;
		goto out;
	}
	envs = calloc((size_t)ng, sizeof *envs);
	cpus = calloc((size_t)ng * (size_t)ci.physical_cores, sizeof *cpus);
	profs = calloc((size_t)ng, sizeof *profs);
	if (!envs || !cpus || !profs) {
		ftcli_error("out of memory");
		goto out;
	}
	for (int g = 0; g < ng; g++) {
		int *mine = cpus + (size_t)g * (size_t)ci.physical_cores;
		int n = ftcpu_cores_near(&ci, gpus[g].numa_node, mine, threads ? threads : ci.physical_cores);
		envs[g] = (struct ftbw_env){.cpu = &ci, .gpu = &gpus[g], .no_gpu_why = why, .cpus = mine, .ncpus = n};
	}
	cfg->cpu_threads = envs[0].ncpus;
	struct ftbw_host host = {.cpu = &ci, .gpus = gpus, .ngpus = ng, .envs = envs};
	struct ftreport rep = ftcli_reporter();
	struct ftbw_ops ops;
	if (ftcli_fake_bw_ops(&ops) < 0) {
		r = ftbw_real_create(&real, &envs[0], &rep, err, sizeof err);
		if (r < 0) {
			ftcli_error("%s", err);
			rc = r == -ENODEV ? FTCLI_EXIT_USAGE : FTCLI_EXIT_FAIL;
			goto out;
		}
		ops = ftbw_real_ops(real);
	}
	double t0 = fttime_wall_epoch();
	r = ftbw_run_host(cfg, &host, &ops, &rep, profs, err, sizeof err);
	double wall = fttime_wall_epoch() - t0;
	ftbw_real_free(real);
	real = NULL;
	if (r < 0) {
		ftcli_error("%s", err[0] ? err : strerror(-r));
		if (r == -EINVAL)
			rc = FTCLI_EXIT_USAGE;
		goto out;
	}
	all = json_pack("{s:[],s:f}", "profiles", "wall_seconds", wall);
	for (int g = 0; g < ng; g++) {
		json_object_set_new(json_object_get(profs[g], "tool"), "host_run_seconds", json_real(wall));
		/* each GPU's own file in the store, with history and drift (FREETOKEN_BENCHBW_PATH, one
		 * file, cannot hold several profiles) */
		r = write_profile(profs[g], NULL, gpus[g].uuid, path, sizeof path);
		if (r < 0) {
			ftcli_error("writing the profile of GPU %d: %s", gpus[g].index, strerror(-r));
			goto out;
		}
		json_array_append(json_object_get(all, "profiles"), profs[g]);
		if (r == FTPROF_KEPT_INVALID && invalid_exit(profs[g], path) != FTCLI_EXIT_OK)
			invalid = 1;
		else if (!json && out_fmt != FTCLI_FMT_TABLE)
			ftcli_note("GPU %d: profile written to %s", gpus[g].index, path);
		else if (!json)
			printf("GPU %d: profile written to %s\n", gpus[g].index, path);
	}
	char legacy_path[4096] = "";
	if (legacy && !invalid) /* one GPU: its file; several: says why not */
		legacy_copy(profs[ng - 1], path, legacy_path, sizeof legacy_path);
	if (output && (r = write_profile(all, output, NULL, path, sizeof path)) < 0) {
		ftcli_error("writing %s: %s", output, strerror(-r));
		goto out;
	}
	ftcli_result(all);
	if (json) {
		ftcli_print_json(all);
	} else if (out_fmt != FTCLI_FMT_TABLE) {
		ftcli_bw_rows(out_fmt, profs, ng);
		if (legacy_path[0])
			ftcli_note("legacy copy: %s", legacy_path);
	} else {
		for (int g = 0; g < ng; g++) {
			printf("\n==== GPU %d ====\n", gpus[g].index);
			ftcli_bw_summary(stdout, profs[g]);
		}
		printf("\nhost run: %d GPUs, %.1f s\n", ng, wall);
		if (legacy_path[0])
			printf("legacy copy: %s\n", legacy_path);
	}
	rc = invalid ? FTCLI_EXIT_INVALID : FTCLI_EXIT_OK;
out:
	ftbw_real_free(real);
	for (int g = 0; profs && g < ng; g++)
		json_decref(profs[g]);
	json_decref(all);
	free(profs);
	free(cpus);
	free(envs);
	free(gpus);
	ftcpu_release(&ci);
	return rc;
}

/* bw's replay: per format of the dtype workloads, the engine's decode step replayed
 * (src/replay) with the profile's own figures (its fetch fraction, its rule-of-thumb verdict);
 * the blocks go to prof.replay and the seed-read verdicts follow them (ftrp_apply_verdicts).
 * A format the replay cannot run (no CPU path, no GPU GEMV kernel) keeps the rule, with a note;
 * a replay that fails adds a warning and keeps the rule: the bandwidth profile stands. */
static void bw_replay(json_t *prof, enum ftrp_size size, const struct ftgpu_info *gpu, const struct ftcpu_info *ci,
		      const int *cpus, int ncpus, const struct ftcpumoe_tune *tune, char *const *probe_argv,
		      double probe_timeout, const struct ftreport *rep)
{
	json_t *dk = json_object_get(prof, "dtype_kernels"), *e, *blocks = json_object();
	const char *name;
	json_object_foreach(dk, name, e) {
		const struct ftfmt *f = ftfmt_lookup(name);
		const struct ftmodel *m = f ? ftmodel_bw_dtype(f->id) : NULL;
		if (!f || !m || !f->cpu_path)
			continue;
		struct ftrp_config c;
		ftrp_config_default(&c, size);
		c.fmt = f;
		c.model = m;
		c.layers_model = 0;
		for (int i = 0; i < ftmodel_cache_profiles_count && !c.layers_model; i++) {
			const struct ftmodel *p = &ftmodel_cache_profiles[i];
			if (p->hidden == m->hidden && p->inter == m->inter && p->experts == m->experts && p->topk == m->topk)
				c.layers_model = p->layers;
		}
#define NUM(k) (json_is_number(json_object_get(e, k)) ? json_number_value(json_object_get(e, k)) : NAN)
		c.profile_fraction = ftbw_fetch_fraction(NUM("cpu_moe_gbs"), NUM("pcie_gather_gbs"), NUM("cpu_moe_overlap_gbs"),
							 NUM("pcie_gather_overlap_gbs"));
#undef NUM
		c.profile_fraction_from = "bw";
		c.bandwidth_verdict = json_string_value(json_object_get(e, "recommended"));
		/* --cpu-kernel: the replay's CPU half at the engine's own layer-step time, as the engine
		 * that reads this profile would decode; a probe that fails here skips the format's replay */
		struct ftrp_gpu_opts go = {.device = gpu->index, .cpu = ci, .cpus = cpus, .ncpus = ncpus,
					   .host_alloc = "register", .host_gib = 2, .tune = tune};
		json_t *blk = NULL;
		char err[1024];
		int probe_failed;
		int r = ftcli_replay_format(&c, go, probe_argv, probe_timeout, rep, &blk, &probe_failed, err, sizeof err);
		if (r && probe_failed) {
			char w[1300];
			snprintf(w, sizeof w, "replay of %s not run (its verdict stays the bandwidth rule's): "
				 "--cpu-kernel layer steps: %s", name, err);
			ftcli_note("%s", w);
			json_array_append_new(json_object_get(prof, "warnings"), json_string(w));
			continue;
		}
		if (r == -ENOTSUP) {
			ftcli_note("replay: %s; its verdict stays the bandwidth rule's", err);
		} else if (r) {
			char w[1200];
			snprintf(w, sizeof w, "replay of %s failed (its verdict stays the bandwidth rule's): %s", name, err);
			ftcli_note("%s", w);
			json_array_append_new(json_object_get(prof, "warnings"), json_string(w));
		} else {
			json_object_set_new(blocks, name, blk);
		}
	}
	if (json_object_size(blocks)) {
		json_object_set_new(prof, "replay", blocks);
		int changed = ftrp_apply_verdicts(prof);
		if (changed)
			ftcli_note("replay: the measured decode changed the verdict of %d format(s) (recommended_bandwidth keeps the rule's)",
				   changed);
	} else {
		json_decref(blocks);
	}
}

struct bw_opts {
	struct ftbw_config cfg;
	const char *dtype, *model, *formats, *isa, *output;
	struct ftflag_gpu gpu;
	int deployment; /* -1: not given; else the index of isolated|concurrent */
	int no_legacy, repeat;
	int replay; /* -1: not given; else the index of none|short|full (enum ftrp_size) */
	struct ftflag_list batch_sweep;
	enum ftcli_format ofmt;
	struct ftcli_tune tune;
	const char *cpu_kernel;    /* --cpu-kernel CMD */
	double cpu_kernel_timeout;
};
#define O(m) FTF_FIELD(struct bw_opts, m)

static const struct ftflag flag_rows[] = {
	{"dtype", FTF_STR, O(dtype), .meta = "all|LIST", .flags = FTF_SEED_LIST, .def_help = "all, unless --model",
	 .help = "formats on their bw workloads: bf16,nvfp4,fp8_block,mxfp4_triton,ds_fp4 (aliases mxfp4, fp8)"},
	{"model", FTF_STR, O(model), .meta = "all|LIST", .flags = FTF_SEED_LIST,
	 .help = "model geometries (qwen3.6-moe, qwen3-30b, gemma4-26b, gpt-oss-120b, gpt-oss-20b, dsv4, "
		 "glm4.7-nvfp4, minimax-m2.5)"},
	{"formats", FTF_STR, O(formats), .meta = "LIST", .flags = FTF_SEED_LIST, .def_help = "each model's own",
	 .help = "formats for the --model workloads"},
	{"isa", FTF_STR, O(isa), .meta = "auto|all|LIST", .flags = FTF_SEED_LIST, .def = "auto",
	 .help = "CPU MoE ISA: the executor's best (auto), a sweep of all, or LIST"},
	{"threshold", FTF_DOUBLE, O(cfg.threshold), .meta = "X", .lo = 1e-6, .hi = 1000,
	 .def = FTF_XSTR(FTBW_DEFAULT_THRESHOLD), .help = "hybrid when cpu_moe > X * gather"},
	FTF_GPU_ROWS(struct bw_opts, gpu, "INDEX|UUID|all", "the first",
		     "the GPU (index, UUID or unique UUID prefix); all: every GPU alone, then N engines at once "
		     "(concurrent phase), one profile per GPU"),
	{"engines", FTF_INT, O(cfg.engines), .meta = "N", .lo = 1, .hi = FTBW_MAX_ENGINES, .def_help = "one per GPU",
	 .help = "engines the host runs at once (--gpu all)"},
	{"engine-threads", FTF_INT, O(cfg.engine_threads), .meta = "N", .lo = 1, .hi = 4096,
	 .def_help = "the physical cores split evenly", .help = "cores per engine (--gpu all)"},
	{"deployment", FTF_ENUM, O(deployment), .choices = "isolated|concurrent",
	 .def_help = "concurrent when the run has more than one engine; FTBENCH_DEPLOYMENT sets it too",
	 .help = "which verdict the seed's fields carry"},
	{"cpu-threads", FTF_INT, O(cfg.cpu_threads), .meta = "N", .lo = 0, .hi = 4096, .def = "0",
	 .help = "CPU threads, one per physical core near the GPU (0: all cores)"},
	{"repeat", FTF_INT, O(repeat), .meta = "N", .lo = 1, .hi = 1000,
	 .help = "samples of every timed measurement: sets --cpu-iters, --pcie-iters, --kernel-cpu-iters and "
		 "--kernel-pcie-iters at once (each of those given too wins for its own measurement)"},
	{"cpu-iters", FTF_INT, O(cfg.cpu_iters), .meta = "N", .lo = 1, .hi = 1000, .def = FTF_XSTR(FTBW_DEF_CPU_ITERS),
	 .help = "CPU read-ceiling passes"},
	{"pcie-mib", FTF_INT, O(cfg.pcie_mib), .meta = "N", .lo = 1, .hi = 65536, .unit = "MiB",
	 .def = FTF_XSTR(FTBW_DEF_PCIE_MIB), .help = "linear copy size"},
	{"pcie-iters", FTF_INT, O(cfg.pcie_iters), .meta = "N", .lo = 1, .hi = 10000,
	 .def = FTF_XSTR(FTBW_DEF_PCIE_ITERS), .help = "linear copy iterations per direction"},
	{"kernel-cpu-iters", FTF_INT, O(cfg.kernel_cpu_iters), .meta = "N", .lo = 1, .hi = 100000,
	 .def = FTF_XSTR(FTBW_DEF_KERNEL_CPU_ITERS),
	 .help = "CPU MoE timed steps after " FTF_XSTR(FTBW_DEF_KERNEL_CPU_WARMUP) " warm-up steps"},
	{"kernel-pcie-iters", FTF_INT, O(cfg.kernel_pcie_iters), .meta = "N", .lo = 1, .hi = 100000,
	 .def = FTF_XSTR(FTBW_DEF_KERNEL_PCIE_ITERS), .help = "gather timed passes"},
	{"overlap-seconds", FTF_DOUBLE, O(cfg.overlap_s), .meta = "X", .lo = 0, .hi = 600, .unit = "s",
	 .def = FTF_XSTR(FTBW_DEF_OVERLAP_S), .help = "length of the overlapped run (0 skips it)"},
	{"gather", FTF_ENUM, O(cfg.gather_sm), .choices = "proxy|sm", .def = "proxy",
	 .help = "gather path timed: copy engines driven from the device plan (proxy) or the fused SM gather (sm)"},
	{"batch-sweep", FTF_INTS, O(batch_sweep), .meta = "LIST", .lo = 1, .hi = FTCPUMOE_MAX_BATCH,
	 .max_items = FTBW_MAX_BATCHES, .def_help = "off",
	 .help = "also per batch (e.g. 1,2,4,8,16,32): the CPU MoE with tokens routed among the model's experts "
		 "and the gather of as many experts, interleaved; gives each entry batch_sweep and hybrid_max_batch"},
	{"replay", FTF_ENUM, O(replay), .choices = "none|short|full",
	 .def_help = "short with a GPU (none on the tests' fake GPUs)",
	 .help = "also replay the engine's MoE decode step per format, as `ftbench replay --size short|full` "
		 "(its help says what each measures), the profile's f among the modes; the verdict fields then "
		 "follow the measured decode (recommended_bandwidth keeps the rule's; docs/REPLAY.md)"},
	{"max-spread", FTF_DOUBLE, O(cfg.max_spread), .meta = "X", .lo = 0, .hi = 100,
	 .def = FTF_XSTR(FTBW_VALID_SPREAD),
	 .help = "the profile is not valid when a figure's spread (max - min) is over X of its median (0: "
		 "spreads not checked); a phase over it is measured again first, up to 2 more times (said in "
		 "the warnings, listed in the profile's \"remeasured\")"},
	{"no-checks", FTF_BOOL, O(cfg.no_checks),
	 .help = "no validity checks at all (short test runs; the profile then has no \"valid\" field and says so "
		 "in its warnings)"},
	{"output", FTF_STR, O(output), .meta = "FILE", .short_name = 'o', .alias = "out",
	 .help = "write the profile here instead of the per-GPU store path (--gpu all: {\"profiles\": [...]} "
		 "here, and each profile to the store)"},
	{"no-legacy-copy", FTF_BOOL, O(no_legacy),
	 .help = "on a host with one GPU, do not also write the seed's single file "
		 "$XDG_CACHE_HOME/freetoken/benchbw.json (released engines read only it)"},
	{"cpu-kernel", FTF_STR, O(cpu_kernel), .meta = "CMD",
	 .help = "measure the engine's own CPU MoE executor too: CMD (split into argv without a shell: blanks "
		 "separate words, '...' is literal, \"...\" and bare words take \\c as c) runs once per format with a CPU "
		 "path, before anything else, reading one request line on stdin and printing one result line "
		 "(docs/CPU_KERNEL_PROBE.md). Its figure goes into the seed-read fields (cpu_moe_gbs, the overlap pair "
		 "by our contention, ratio, recommended); ours stay beside them (cpu_moe_gbs_ftbench, ...). Any probe "
		 "error: no profile written. bench/engines/freetoken_cpu_moe.py is the seed engine's driver"},
	FTF_CPU_KERNEL_TIMEOUT_ROW(struct bw_opts, cpu_kernel_timeout),
	FTF_JSON_ROW(struct bw_opts, ofmt, "print the profile on stdout instead of the summary"),
	FTF_FORMAT_ROW(struct bw_opts, ofmt,
		       "table (the summary), json (as --json), csv or md: one row per GPU, workload and format "
		       "(GB/s; expert_mib in MiB = 2^20 bytes); saved: PATH then goes to stderr"),
	FTF_RESULT_FD_ROW,
	FTF_TUNE_ROW(struct bw_opts, tune),
};

const struct ftflag_cmd ftcli_flags_bw = {
	"bw", flag_rows, FTF_COUNT(flag_rows),
	.about = "Measure this host's CPU and PCIe bandwidth on the real kernels and decide, per expert\n"
		 "format, offload (fetch misses over PCIe) or hybrid (compute misses on the CPU).\n",
	.notes = "Lists take commas or spaces (--dtype bf16,nvfp4 or --dtype bf16 nvfp4).\n"
		 "Environment: FREETOKEN_BENCH_PROGRESS=1 prints the seed's progress lines on stdout\n"
		 "(FTBENCH <done> <total> <label>); FREETOKEN_BENCHBW_PATH replaces the store path.\n"
		 "Exit status: 0 profile written; 1 failed; 2 bad usage; 3 measured but not valid (its own\n"
		 "checks failed: CPU MoE above the read ceiling, a spread over --max-spread of its median,\n"
		 "PCIe under half the trained link): written to -o, or kept in the store's history, the\n"
		 "stored profile unchanged; \"valid\": false and \"invalid_reasons\" say why.\n",
};

static int bw_cmd(struct bw_opts *o, const struct ftflag_state *fs);

int ftcli_cmd_bw(int argc, char **argv)
{
	struct bw_opts o = {.deployment = -1, .replay = -1};
	struct ftflag_state fs;
	ftbw_config_default(&o.cfg);
	int r = ftflags_parse(&ftcli_flags_bw, argc, argv, &o, &fs);
	if (r)
		return r > 0 ? 0 : FTCLI_EXIT_USAGE;
	r = bw_cmd(&o, &fs);
	ftflags_release(&fs);
	return r;
}

/* The values of the list rows into cfg; 0, or -1 after saying what is wrong. */
static int bw_lists(struct bw_opts *o)
{
	struct ftbw_config *cfg = &o->cfg;
	if (o->dtype && parse_formats("--dtype", o->dtype, cfg->dtypes, &cfg->ndtypes, true))
		return -1;
	if (o->model && parse_models(o->model, cfg))
		return -1;
	if (o->formats && parse_formats("--formats", o->formats, cfg->formats, &cfg->nformats, false))
		return -1;
	if (parse_isa(o->isa, cfg))
		return -1;
	if (o->batch_sweep.n)
		set_batches(&o->batch_sweep, cfg);
	if (o->deployment >= 0)
		cfg->deployment = o->deployment ? FTBW_DEPLOY_CONCURRENT : FTBW_DEPLOY_ISOLATED;
	return 0;
}

/* The seed's spellings arrive here joined (--dtype a b -> --dtype a,b). */
static int bw_cmd(struct bw_opts *o, const struct ftflag_state *fs)
{
	struct ftbw_config cfg;
	const char *gpu_spec = o->gpu.spec, *output = o->output;
	int dtype_given = o->dtype != NULL, model_given = o->model != NULL, threads = o->cfg.cpu_threads;
	int legacy = !o->no_legacy, repeat = o->repeat;
	if (bw_lists(o) < 0)
		return FTCLI_EXIT_USAGE;
	cfg = o->cfg;
	cfg.cpu_threads = 0;
	out_fmt = o->ofmt;
	int json = out_fmt == FTCLI_FMT_JSON;
	static const char *const iter_rows[4] = {"cpu-iters", "pcie-iters", "kernel-cpu-iters", "kernel-pcie-iters"};
	if (repeat) {
		int *iters[4] = {&cfg.cpu_iters, &cfg.pcie_iters, &cfg.kernel_cpu_iters, &cfg.kernel_pcie_iters};
		for (int i = 0; i < 4; i++)
			if (!ftflags_given(&ftcli_flags_bw, fs, iter_rows[i]))
				*iters[i] = repeat;
	}
	if (!dtype_given && !model_given)
		parse_formats("--dtype", "all", cfg.dtypes, &cfg.ndtypes, true);
	if (cfg.nformats && !model_given)
		ftcli_note("--formats applies to --model workloads only; ignored");
	if (ftcli_tune_build(&o->tune, &cfg.tune) < 0)
		return FTCLI_EXIT_USAGE;
	if (cfg.deployment < 0 && getenv("FTBENCH_DEPLOYMENT") && *getenv("FTBENCH_DEPLOYMENT") &&
	    ftbw_deployment_parse(getenv("FTBENCH_DEPLOYMENT"), &cfg.deployment) < 0) {
		ftcli_error("FTBENCH_DEPLOYMENT: '%s' is neither isolated nor concurrent", getenv("FTBENCH_DEPLOYMENT"));
		return FTCLI_EXIT_USAGE;
	}
	if (json)
		ftcli_set_quiet(1);
	char **probe_argv = NULL;
	if (o->cpu_kernel) {
		char perr[512];
		if (gpu_spec && !strcmp(gpu_spec, "all")) {
			ftcli_error("--cpu-kernel: measures one GPU's engine; not with --gpu all");
			return FTCLI_EXIT_USAGE;
		}
		if (ftprobe_split(o->cpu_kernel, &probe_argv, perr, sizeof perr) < 0) {
			ftcli_error("%s", perr);
			return FTCLI_EXIT_USAGE;
		}
	}
	int replay_given = o->replay >= 0;
	enum ftrp_size replay = replay_given ? (enum ftrp_size)o->replay : FTRP_SHORT;
	if (gpu_spec && !strcmp(gpu_spec, "all")) {
		if (replay_given && replay != FTRP_NONE)
			ftcli_note("--replay: bw --gpu all measures no replay (run ftbench replay --gpu G per GPU)");
		return bw_all(&cfg, threads, output, json, legacy);
	}
	/* the fake GPUs of the tests replay only when asked to (their figures stay those of bw) */
	if (!replay_given && ftcli_fake_gpus() >= 0)
		replay = FTRP_NONE;
	if (cfg.engines > 1 || cfg.engine_threads)
		ftcli_note("--engines and --engine-threads apply to --gpu all only; ignored");
	if (cfg.deployment == FTBW_DEPLOY_CONCURRENT)
		ftcli_note("deployment concurrent needs the concurrent phase of --gpu all; this run's verdicts are isolated");

	struct ftcpu_info ci;
	struct ftgpu_info gpu;
	struct ftbw_real *real = NULL;
	json_t *prof = NULL;
	struct ftbw_probe_done *probes = NULL;
	int nprobes = 0;
	int *cpus = NULL, rc = FTCLI_EXIT_FAIL;
	char why[256] = "", err[1024] = "", path[4096] = "", legacy_path[4096] = "";
	int r = ftcpu_probe(&ci);
	if (r < 0) {
		ftcli_error("cannot describe the CPU: %s", strerror(-r));
		ftprobe_free_argv(probe_argv);
		return FTCLI_EXIT_FAIL;
	}
	r = ftcli_select_gpu(gpu_spec, &gpu, why, sizeof why);
	if (r < 0) {
		rc = FTCLI_EXIT_USAGE; /* logged by ftcli_select_gpu */
		goto out;
	}
	bool have_gpu = r == 0;
	if (threads > ci.physical_cores) {
		ftcli_error("--cpu-threads %d: this host has %d physical cores", threads, ci.physical_cores);
		rc = FTCLI_EXIT_USAGE;
		goto out;
	}
	cpus = calloc((size_t)ci.physical_cores, sizeof *cpus);
	if (!cpus) {
		ftcli_error("out of memory");
		goto out;
	}
	int ncpus = ftcpu_cores_near(&ci, have_gpu ? gpu.numa_node : -1, cpus, threads ? threads : ci.physical_cores);
	cfg.cpu_threads = ncpus;
	struct ftbw_env env = {
		.cpu = &ci, .gpu = have_gpu ? &gpu : NULL, .no_gpu_why = why, .cpus = cpus, .ncpus = ncpus};
	struct ftreport rep = ftcli_reporter();
	struct ftbw_ops ops;
	if (ftcli_fake_bw_ops(&ops) < 0) {
		r = ftbw_real_create(&real, &env, &rep, err, sizeof err);
		if (r < 0) {
			ftcli_error("%s", err);
			rc = r == -ENODEV ? FTCLI_EXIT_USAGE : FTCLI_EXIT_FAIL;
			goto out;
		}
		ops = ftbw_real_ops(real);
	}
	if (probe_argv && (r = ftbw_probe_all(&cfg, probe_argv, o->cpu_kernel_timeout, &rep, &probes, &nprobes, err,
					 sizeof err)) < 0) {
		ftcli_error("%s; no profile written", err);
		goto out;
	}
	r = ftbw_run(&cfg, &env, &ops, &rep, &prof, err, sizeof err);
	ftbw_real_free(real);
	real = NULL;
	if (r < 0) {
		ftcli_error("%s", err[0] ? err : strerror(-r));
		goto out;
	}
	if (probe_argv && (r = ftbw_probe_apply_all(prof, &cfg, probe_argv, probes, nprobes)) < 0) {
		ftcli_error("applying the engine's CPU kernel figures: %s; no profile written", strerror(-r));
		goto out;
	}
	if (have_gpu && replay != FTRP_NONE)
		bw_replay(prof, replay, &gpu, &ci, cpus, ncpus, &cfg.tune, probe_argv, o->cpu_kernel_timeout, &rep);
	else if (!have_gpu && replay_given && replay != FTRP_NONE)
		ftcli_note("--replay: replay needs a GPU (%s); none run", why);
	r = write_profile(prof, output, have_gpu ? gpu.uuid : NULL, path, sizeof path);
	if (r < 0) {
		ftcli_error("writing the profile%s%s: %s", output ? " to " : "", output ? output : "",
			    strerror(-r));
		goto out;
	}
	int kept_aside = r == FTPROF_KEPT_INVALID;
	if (legacy && !kept_aside && !output) /* -o names the one file to write */
		legacy_copy(prof, path, legacy_path, sizeof legacy_path);
	ftcli_result(prof);
	if (json) {
		ftcli_print_json(prof);
	} else if (out_fmt != FTCLI_FMT_TABLE) {
		ftcli_bw_rows(out_fmt, &prof, 1);
		if (legacy_path[0])
			ftcli_note("legacy copy: %s", legacy_path);
		if (!kept_aside)
			ftcli_note("saved: %s", path);
	} else {
		ftcli_bw_summary(stdout, prof);
		printf("\n");
		if (legacy_path[0])
			printf("legacy copy: %s\n", legacy_path);
		if (!kept_aside)
			printf("saved: %s\n", path); /* the seed's last line */
	}
	rc = invalid_exit(prof, kept_aside ? path : NULL);
out:
	ftbw_real_free(real);
	json_decref(prof);
	free(cpus);
	ftcpu_release(&ci);
	ftbw_probes_free(probes, nprobes);
	ftprobe_free_argv(probe_argv);
	return rc;
}
