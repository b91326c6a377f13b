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
#include "cli/cli.h"
#include "ftprofile.h"
#include "hw/cpu.h"
#include "moe/cpu/cpumoe.h"
#include "replay/replay.h"
#include "util/fsutil.h"
#include "util/strutil.h"
#include "util/timeutil.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ftbench bw [options]\n"
		"Measure this host's CPU and PCIe bandwidth on the real kernels and decide, per expert\n"
		"format, offload (fetch misses over PCIe) or hybrid (compute misses on the CPU).\n\n"
		"  --dtype all|LIST        formats on their bw workloads (default: all, unless --model)\n"
		"                          formats: bf16,nvfp4,fp8_block,mxfp4_triton,ds_fp4 (aliases mxfp4, fp8)\n"
		"  --model all|LIST        model geometries (qwen3.6-moe, qwen3-30b, gemma4-26b, gpt-oss-120b,\n"
		"                          gpt-oss-20b, dsv4, glm4.7-nvfp4, minimax-m2.5)\n"
		"  --formats LIST          formats for the --model workloads (default: each model's own)\n"
		"  --isa auto|all|LIST     CPU MoE ISA: the executor's best (auto), a sweep of all, or LIST\n"
		"  --threshold X           hybrid when cpu_moe > X * gather (default 2.0)\n"
		"  --gpu INDEX|UUID|all    the GPU (index, UUID or unique UUID prefix; default: the first);\n"
		"                          all: every GPU alone, then N engines at once (concurrent phase),\n"
		"                          one profile per GPU\n"
		"  --engines N             engines the host runs at once (--gpu all; default: one per GPU)\n"
		"  --engine-threads N      cores per engine (default: the physical cores split evenly)\n"
		"  --deployment isolated|concurrent\n"
		"                          which verdict the seed's fields carry (default: concurrent when\n"
		"                          the run has more than one engine; FTBENCH_DEPLOYMENT sets it too)\n"
		"    --device N            the seed's released spelling of --gpu N\n"
		"  --cpu-threads N         CPU threads, one per physical core near the GPU (0 or default: all cores)\n"
		"  --repeat N              samples of every timed measurement (1..1000): sets --cpu-iters,\n"
		"                          --pcie-iters, --kernel-cpu-iters and --kernel-pcie-iters at once\n"
		"                          (each of those given too wins for its own measurement)\n"
		"  --cpu-iters N           CPU read-ceiling passes (8)\n"
		"  --pcie-mib N            linear copy size in MiB (256)\n"
		"  --pcie-iters N          linear copy iterations per direction (30)\n"
		"  --kernel-cpu-iters N    CPU MoE timed steps after 8 warm-up steps (64)\n"
		"  --kernel-pcie-iters N   gather timed passes (20)\n"
		"  --overlap-seconds X     length of the overlapped run (2.0; 0 skips it)\n"
		"  --gather proxy|sm       gather path timed: copy engines driven from the device plan\n"
		"                          (proxy, default) or the fused SM gather (sm)\n"
		"  --batch-sweep LIST      also per batch (e.g. 1,2,4,8,16,32; up to 8 of 1..32): the CPU MoE\n"
		"                          with tokens routed among the model's experts and the gather of as\n"
		"                          many experts, interleaved; gives each entry batch_sweep and\n"
		"                          hybrid_max_batch (off by default)\n"
		"  --replay none|short|full  also replay the engine's MoE decode step per format (ftbench\n"
		"                          replay): short (default with a GPU): the default workload (cache\n"
		"                          0.4 of L x E, reuse 0.6), offload against the profile's f and f\n"
		"                          0.25/0.5/1; full: the map; the verdict fields then follow the\n"
		"                          measured decode (recommended_bandwidth keeps the rule's)\n"
		"  --max-spread X          the profile is not valid when a figure's spread (max - min) is\n"
		"                          over X of its median (0.75; 0: spreads not checked)\n"
		"  --no-checks             no validity checks at all (short test runs; the profile then has\n"
		"                          no \"valid\" field and says so in its warnings)\n"
		"  -o, --output FILE       write the profile here instead of the per-GPU store path (--gpu all:\n"
		"                          {\"profiles\": [...]} here, and each profile to the store)\n"
		"    --out FILE            the seed's spelling of --output\n"
		"  --no-legacy-copy        on a host with one GPU, do not also write the seed's single file\n"
		"                          $XDG_CACHE_HOME/freetoken/benchbw.json (released engines read only it)\n"
		"  --json                  print the profile on stdout instead of the summary\n"
		"  --output-format F       table (the summary, default), json (as --json), csv or md: one\n"
		"                          row per GPU, workload and format (GB/s; expert_mib in MiB = 2^20\n"
		"                          bytes); saved: PATH then goes to stderr\n"
		"  --result-fd N           worker mode: JSON lines (progress, result, error) on fd N\n"
		"Lists take commas or spaces (--dtype bf16,nvfp4 or --dtype bf16 nvfp4).\n"
		"Environment: FREETOKEN_BENCH_PROGRESS=1 prints the seed's progress lines on stdout\n"
		"(FTBENCH <done> <total> <label>); FREETOKEN_BENCHBW_PATH replaces the store path.\n"
		"Exit status: 0 profile written; 1 failed; 2 bad usage; 3 measured but not valid (its own\n"
		"checks failed: CPU MoE above the read ceiling, a spread over --max-spread of its median,\n"
		"PCIe under half the trained link): written to -o, or kept in the store's history, the\n"
		"stored profile unchanged; \"valid\": false and \"invalid_reasons\" say why.\n");
}

enum {
	OPT_DTYPE = 256, OPT_MODEL, OPT_FORMATS, OPT_ISA, OPT_THRESHOLD, OPT_GPU, OPT_CPU_THREADS,
	OPT_CPU_ITERS, OPT_PCIE_MIB, OPT_PCIE_ITERS, OPT_KCPU_ITERS, OPT_KPCIE_ITERS, OPT_OVERLAP,
	OPT_JSON, OPT_RESULT_FD, OPT_ENGINES, OPT_ENGINE_THREADS, OPT_DEPLOYMENT, OPT_DEVICE, OPT_NO_LEGACY,
	OPT_MAX_SPREAD, OPT_NO_CHECKS, OPT_GATHER, OPT_BATCH_SWEEP, OPT_REPEAT, OPT_TUNE, OPT_REPLAY,
};

/* bw's replay (issue 30): per format of the dtype workloads, the engine's decode step replayed
 * (src/replay) with the profile's own figures (its fetch fraction, its rule-of-thumb verdict);
 * the blocks go to prof.replay and the seed-read verdicts follow them (ftrp_apply_verdicts).
 * A format the replay cannot run (no CPU path, no GPU GEMV kernel) keeps the rule, with a note;
 * a replay that fails adds a warning and keeps the rule: the bandwidth profile stands. */
static void bw_replay(json_t *prof, enum ftrp_size size, const struct ftgpu_info *gpu, const struct ftcpu_info *ci,
		      const int *cpus, int ncpus, const struct ftcpumoe_tune *tune, const struct ftreport *rep)
{
	json_t *dk = json_object_get(prof, "dtype_kernels"), *e, *blocks = json_object();
	const char *name;
	int fake = ftcli_fake_gpus() >= 0;
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
		struct ftrp_ops ops;
		struct ftrp_gpu_opts go = {.device = gpu->index, .cpu = ci, .cpus = cpus, .ncpus = ncpus,
					   .host_alloc = "register", .host_gib = 2, .tune = tune};
		if (fake ? ftrp_fake_ops(0, &ops) : ftrp_gpu_ops(&go, &ops))
			continue;
		json_t *blk = NULL;
		char err[1024];
		int r = ftrp_run(&c, &ops, rep, &blk, err, sizeof err);
		if (fake)
			ftrp_fake_ops_free(&ops);
		else
			ftrp_gpu_ops_free(&ops);
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

/* --batch-sweep LIST: 1..FTCPUMOE_MAX_BATCH each, at most FTBW_MAX_BATCHES, kept ascending and
 * without repeats. 0, or -1 after saying what is wrong. */
static int parse_batches(const char *arg, struct ftbw_config *c)
{
	long v[FTBW_MAX_BATCHES + 1];
	int n = ftstr_parse_long_list(arg, 1, FTCPUMOE_MAX_BATCH, v, FTBW_MAX_BATCHES + 1);
	if (n <= 0 || n > FTBW_MAX_BATCHES) {
		ftcli_error("--batch-sweep: expected up to %d batches of 1..%d, got '%s'", FTBW_MAX_BATCHES,
			    FTCPUMOE_MAX_BATCH, arg);
		return -1;
	}
	c->nbatch = 0;
	for (long want = 1; want <= FTCPUMOE_MAX_BATCH; want++)
		for (int i = 0; i < n; i++)
			if (v[i] == want) {
				c->batches[c->nbatch++] = (int)want;
				break;
			}
	return 0;
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

static int opt_long(const char *opt, const char *arg, long lo, long hi, int *out)
{
	long v;
	if (ftstr_parse_long(arg, lo, hi, &v) < 0) {
		ftcli_error("%s: '%s' is not an integer in [%ld, %ld]", opt, arg, lo, hi);
		return -1;
	}
	*out = (int)v;
	return 0;
}

static int opt_double(const char *opt, const char *arg, double lo, double hi, double *out)
{
	if (ftstr_parse_double(arg, lo, hi, out) < 0) {
		ftcli_error("%s: '%s' is not a number in [%g, %g]", opt, arg, lo, hi);
		return -1;
	}
	return 0;
}

/* Write prof where it goes. 0 written; 1: not valid (its own checks failed), so it went to the
 * store's history only and the profile engines read is unchanged; -errno. */
static int write_profile(const json_t *prof, const char *output, const char *uuid, char *path, size_t n)
{
	if (!output && getenv("FREETOKEN_BENCHBW_PATH") && *getenv("FREETOKEN_BENCHBW_PATH"))
		return ftprof_store_write(prof, uuid, path, n); /* that file: no store, no history */
	if (!output && json_is_false(json_object_get(prof, "valid"))) {
		int r = ftprof_history_add(NULL, prof, uuid, FTPROF_HISTORY_KEEP);
		if (r == 0 && (r = ftprof_store_file(NULL, uuid, path, n)) == 0)
			r = 1;
		return r;
	}
	if (!output)
		return ftprof_store_commit(NULL, prof, uuid, FTPROF_HISTORY_KEEP, FTPROF_DRIFT_SHARE, path, n);
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

/* A profile whose own checks failed: its reasons on stderr and FTCLI_EXIT_INVALID (the profile
 * was written to -o, or kept in the history beside store_path); else FTCLI_EXIT_OK. */
static int invalid_exit(const json_t *prof, const char *store_path)
{
	const json_t *why = json_object_get(prof, "invalid_reasons");
	if (!json_is_false(json_object_get(prof, "valid")))
		return FTCLI_EXIT_OK;
	size_t i;
	json_t *w;
	ftcli_error("the profile is not valid (its own checks failed):");
	json_array_foreach(why, i, w)
		fprintf(stderr, "  - %s\n", json_string_value(w));
	if (store_path)
		fprintf(stderr, "  it is kept in the history beside %s; that profile, which engines read, is unchanged\n",
			store_path);
	return FTCLI_EXIT_INVALID;
}

/* Fixed figures instead of measurements (FTBENCH_TEST_FAKE_GPUS): the whole command runs in
 * milliseconds, without CUDA, with the real planning, decision and profile. */
static double *fake_samples(double v, int n)
{
	double *a = malloc((size_t)(n > 0 ? n : 1) * sizeof *a);
	for (int i = 0; a && i < n; i++)
		a[i] = v * (0.99 + 0.01 * (i % 3));
	return a;
}

static int fake_cpu_read(void *ctx, const struct ftbw_env *env, int passes, double *gbs, char *err, size_t n)
{
	for (int i = 0; i < passes; i++)
		gbs[i] = 100.0 * (0.99 + 0.01 * (i % 3));
	return 0;
}

static int fake_pcie(void *ctx, const struct ftbw_env *env, bool h2d, size_t bytes, int iters, double *gbs,
		     char *err, size_t n)
{
	for (int i = 0; i < iters; i++)
		gbs[i] = h2d ? 55.0 : 53.0;
	return 0;
}

static int fake_part(struct ftbw_part *p, double v, int n)
{
	if (!(p->gbs = fake_samples(v, n)))
		return -ENOMEM;
	p->rc = 0;
	p->n = n;
	return 0;
}

static int fake_measure(void *ctx, const struct ftbw_env *env, const struct ftbw_config *c,
			const struct ftbw_item *it, struct ftbw_meas *m, char *err, size_t n)
{
	/* CPU MoE 30..70 GB/s by format, gather 25 GB/s: some formats hybrid, some offload */
	double cpu = 30.0 + 10.0 * (it->fmt->id % 5), gather = 25.0;
	int r = 0;
	if (it->fmt->cpu_path) {
		r = fake_part(&m->cpu, cpu, c->kernel_cpu_iters);
		snprintf(m->cpu_isa, sizeof m->cpu_isa, "scalar");
	}
	if (r == 0 && env->gpu)
		r = fake_part(&m->gather, gather, c->kernel_pcie_iters);
	if (r == 0 && env->gpu && it->fmt->cpu_path && c->overlap_s > 0) {
		r = fake_part(&m->ov_cpu, 0.8 * cpu, 3);
		if (r == 0)
			r = fake_part(&m->ov_gather, 0.8 * gather, 3);
	}
	if (r < 0)
		snprintf(err, n, "out of memory");
	return r;
}

static struct ftbw_ops fake_ops(void)
{
	return (struct ftbw_ops){.cpu_read = fake_cpu_read, .pcie_linear = fake_pcie, .measure = fake_measure};
}

/* The seed's single file (the only one released engines read) beside the per-GPU one, on a host
 * with exactly one GPU; elsewhere say why not. */
static void legacy_copy(const json_t *prof, const char *output, bool have_gpu, const char *saved, char *done,
			size_t n)
{
	char lp[4096];
	int r, host;
	if (output || !have_gpu || ftprof_legacy_path(lp, sizeof lp) < 0)
		return; /* -o names the one file to write; a GPU-less profile is for no GPU's engine */
	if ((host = ftcli_host_gpu_count()) > 1) {
		ftcli_note("this host has %d GPUs: the legacy single file %s is not written (engines on every GPU "
			   "would read this one's figures); engines that read benchbw/<gpu-uuid>.json or "
			   "FREETOKEN_BENCHBW_PATH get the right file%s",
			   host, lp, access(lp, F_OK) == 0 ? "; an older copy is still there, remove it" : "");
		return;
	}
	if (!strcmp(lp, saved))
		return; /* FREETOKEN_BENCHBW_PATH names it: already written */
	if ((r = ftprof_legacy_copy(saved, done, n)) < 0) {
		done[0] = '\0';
		ftcli_note("warning: the legacy copy %s could not be written: %s", lp, strerror(-r));
	}
}

/* --gpu all: every GPU alone, then the engines at once (ftbw_run_host); one profile per GPU. */
/* --output-format: table (the summary), json, or csv|md rows (out_fmt). */
enum { OPT_OUTPUT_FORMAT = 512 };
static enum ftcli_format out_fmt = FTCLI_FMT_TABLE;

/* csv|md: one row per profile (GPU) and entry, the summary's figures under their JSON names. */
static void print_rows(json_t *const *profs, int n)
{
	static const char *const head[] = {"gpu", "workload", "format", "expert_mib", "cpu_moe_gbs", "cpu_moe_isa",
					   "pcie_gather_gbs", "cpu_moe_overlap_gbs", "pcie_gather_overlap_gbs",
					   "ratio", "decision", "fetch_fraction", "concurrent_decision",
					   "concurrent_fetch_fraction", "hybrid_max_batch", "note"};
	static const char *const keys[] = {"cpu_moe_gbs", "pcie_gather_gbs", "cpu_moe_overlap_gbs",
					   "pcie_gather_overlap_gbs", "ratio"};
	ftcli_print_row(out_fmt, head, 16, 1);
	for (int g = 0; g < n; g++) {
		const char *uuid = json_string_value(json_object_get(json_object_get(profs[g], "gpu"), "uuid"));
		json_t *wl = json_object_get(profs[g], "workloads"), *w = json_object_get(profs[g], "dtype_kernels");
		const char *wk = "(dtype)", *k;
		json_t *e;
		void *it = json_object_iter(wl);
		for (;;) { /* dtype_kernels, then each workload's kernels */
			json_object_foreach(w, k, e) {
				char c[9][32];
				const json_t *cb = json_object_get(e, "concurrent");
				const json_t *eb = json_object_get(e, "expert_bytes");
				const char *rec = json_string_value(json_object_get(e, "recommended_isolated"));
				const char *crec = json_string_value(json_object_get(cb, "recommended"));
				if (!rec)
					rec = json_string_value(json_object_get(e, "recommended"));
				if (json_is_number(eb))
					snprintf(c[0], sizeof c[0], "%.2f", json_number_value(eb) / 1048576.0);
				else
					c[0][0] = '\0';
				for (int i = 0; i < 5; i++)
					ftcli_cell(c[1 + i], sizeof c[1 + i], json_object_get(e, keys[i]), i == 4 ? "%.3f" : "%.2f");
				c[6][0] = c[7][0] = '\0';
				if (rec && !strcmp(rec, "hybrid"))
					snprintf(c[6], sizeof c[6], "%.3f",
						 ftbw_fetch_fraction(json_number_value(json_object_get(e, "cpu_moe_gbs")),
								     json_number_value(json_object_get(e, "pcie_gather_gbs")),
								     json_number_value(json_object_get(e, "cpu_moe_overlap_gbs")),
								     json_number_value(json_object_get(e, "pcie_gather_overlap_gbs"))));
				if (crec && !strcmp(crec, "hybrid"))
					ftcli_cell(c[7], sizeof c[7], json_object_get(cb, "fetch_fraction"), "%.3f");
				ftcli_cell(c[8], sizeof c[8], json_object_get(e, "hybrid_max_batch"), "%.0f");
				const char *row[] = {uuid, wk, k, c[0], c[1], json_string_value(json_object_get(e, "cpu_moe_isa")),
						     c[2], c[3], c[4], c[5], rec, c[6], crec, c[7], c[8],
						     json_string_value(json_object_get(e, "note"))};
				ftcli_print_row(out_fmt, row, 16, 0);
			}
			if (!it)
				break;
			wk = json_object_iter_key(it);
			w = json_object_get(json_object_iter_value(it), "kernels");
			it = json_object_iter_next(wl, it);
		}
	}
}

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
	struct ftbw_ops ops = fake_ops();
	if (ftcli_fake_gpus() < 0) {
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
		if (r == 1 && invalid_exit(profs[g], path) != FTCLI_EXIT_OK)
			invalid = 1;
		else if (!json && out_fmt != FTCLI_FMT_TABLE)
			ftcli_note("GPU %d: profile written to %s", gpus[g].index, path);
		else if (!json)
			printf("GPU %d: profile written to %s\n", gpus[g].index, path);
	}
	char legacy_path[4096] = "";
	if (legacy && !invalid) /* one GPU: its file; several: says why not */
		legacy_copy(profs[ng - 1], NULL, true, path, legacy_path, sizeof legacy_path);
	if (output && (r = write_profile(all, output, NULL, path, sizeof path)) < 0) {
		ftcli_error("writing %s: %s", output, strerror(-r));
		goto out;
	}
	ftcli_result(all);
	if (json) {
		ftcli_print_json(all);
	} else if (out_fmt != FTCLI_FMT_TABLE) {
		print_rows(profs, ng);
		if (legacy_path[0])
			ftcli_note("legacy copy: %s", legacy_path);
	} else {
		for (int g = 0; g < ng; g++) {
			printf("\n==== GPU %d ====\n", gpus[g].index);
			ftbw_summary(stdout, profs[g]);
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

static int bw_cmd(int argc, char **argv, const struct option *opts);

int ftcli_cmd_bw(int argc, char **argv)
{
	static const struct option opts[] = {
		{"dtype", required_argument, NULL, OPT_DTYPE},
		{"model", required_argument, NULL, OPT_MODEL},
		{"formats", required_argument, NULL, OPT_FORMATS},
		{"isa", required_argument, NULL, OPT_ISA},
		{"output", required_argument, NULL, 'o'},
		{"threshold", required_argument, NULL, OPT_THRESHOLD},
		{"gpu", required_argument, NULL, OPT_GPU},
		{"cpu-threads", required_argument, NULL, OPT_CPU_THREADS},
		{"cpu-iters", required_argument, NULL, OPT_CPU_ITERS},
		{"pcie-mib", required_argument, NULL, OPT_PCIE_MIB},
		{"pcie-iters", required_argument, NULL, OPT_PCIE_ITERS},
		{"kernel-cpu-iters", required_argument, NULL, OPT_KCPU_ITERS},
		{"kernel-pcie-iters", required_argument, NULL, OPT_KPCIE_ITERS},
		{"overlap-seconds", required_argument, NULL, OPT_OVERLAP},
		{"gather", required_argument, NULL, OPT_GATHER},
		{"batch-sweep", required_argument, NULL, OPT_BATCH_SWEEP},
		{"json", no_argument, NULL, OPT_JSON},
		{"output-format", required_argument, NULL, OPT_OUTPUT_FORMAT},
		{"result-fd", required_argument, NULL, OPT_RESULT_FD},
		{"engines", required_argument, NULL, OPT_ENGINES},
		{"engine-threads", required_argument, NULL, OPT_ENGINE_THREADS},
		{"deployment", required_argument, NULL, OPT_DEPLOYMENT},
		{"out", required_argument, NULL, 'o'},
		{"device", required_argument, NULL, OPT_DEVICE},
		{"no-legacy-copy", no_argument, NULL, OPT_NO_LEGACY},
		{"max-spread", required_argument, NULL, OPT_MAX_SPREAD},
		{"no-checks", no_argument, NULL, OPT_NO_CHECKS},
		{"repeat", required_argument, NULL, OPT_REPEAT},
		{"tune", required_argument, NULL, OPT_TUNE},
		{"replay", required_argument, NULL, OPT_REPLAY},
		{"help", no_argument, NULL, 'h'},
		{0}};
	static const int lists[] = {OPT_DTYPE, OPT_MODEL, OPT_FORMATS, OPT_ISA, 0};
	struct ftcli_args args;
	if (ftcli_args_join_lists(&args, argc, argv, opts, lists) < 0) {
		ftcli_error("out of memory");
		return FTCLI_EXIT_FAIL;
	}
	int rc = bw_cmd(args.argc, args.argv, opts);
	ftcli_args_release(&args);
	return rc;
}

/* The seed's spellings arrive here joined (--dtype a b -> --dtype a,b). */
static int bw_cmd(int argc, char **argv, const struct option *opts)
{
	struct ftbw_config cfg;
	const char *gpu_spec = NULL, *output = NULL;
	char device[16];
	int json = 0, c, dtype_given = 0, model_given = 0, threads = 0, legacy = 1, replay_given = 0;
	enum ftrp_size replay = FTRP_SHORT;
	int repeat = 0, iters_given[4] = {0}; /* cpu, pcie, kernel cpu, kernel pcie */
	struct ftcli_tune tunes = {0};
	ftbw_config_default(&cfg);

	optind = 1;
	while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
		int bad = 0;
		switch (c) {
		case OPT_DTYPE:
			dtype_given = 1;
			bad = parse_formats("--dtype", optarg, cfg.dtypes, &cfg.ndtypes, true);
			break;
		case OPT_MODEL:
			model_given = 1;
			bad = parse_models(optarg, &cfg);
			break;
		case OPT_FORMATS:
			bad = parse_formats("--formats", optarg, cfg.formats, &cfg.nformats, false);
			break;
		case OPT_ISA: bad = parse_isa(optarg, &cfg); break;
		case 'o': output = optarg; break;
		case OPT_THRESHOLD: bad = opt_double("--threshold", optarg, 1e-6, 1000, &cfg.threshold); break;
		case OPT_MAX_SPREAD: bad = opt_double("--max-spread", optarg, 0, 100, &cfg.max_spread); break;
		case OPT_NO_CHECKS: cfg.no_checks = true; break;
		case OPT_GPU:
			if (gpu_spec == device && strcmp(device, optarg)) {
				ftcli_error("--gpu %s and --device %s name different GPUs", optarg, device);
				bad = 1;
			}
			gpu_spec = optarg;
			break;
		case OPT_DEVICE: bad = ftcli_opt_device(optarg, device, sizeof device, &gpu_spec); break;
		case OPT_NO_LEGACY: legacy = 0; break;
		case OPT_CPU_THREADS: bad = opt_long("--cpu-threads", optarg, 0, 4096, &threads); break;
		case OPT_REPEAT: bad = opt_long("--repeat", optarg, 1, 1000, &repeat); break;
		case OPT_CPU_ITERS: iters_given[0] = 1; bad = opt_long("--cpu-iters", optarg, 1, 1000, &cfg.cpu_iters); break;
		case OPT_PCIE_MIB: bad = opt_long("--pcie-mib", optarg, 1, 1 << 16, &cfg.pcie_mib); break;
		case OPT_PCIE_ITERS: iters_given[1] = 1; bad = opt_long("--pcie-iters", optarg, 1, 10000, &cfg.pcie_iters); break;
		case OPT_KCPU_ITERS:
			iters_given[2] = 1;
			bad = opt_long("--kernel-cpu-iters", optarg, 1, 100000, &cfg.kernel_cpu_iters);
			break;
		case OPT_KPCIE_ITERS:
			iters_given[3] = 1;
			bad = opt_long("--kernel-pcie-iters", optarg, 1, 100000, &cfg.kernel_pcie_iters);
			break;
		case OPT_OVERLAP: bad = opt_double("--overlap-seconds", optarg, 0, 600, &cfg.overlap_s); break;
		case OPT_GATHER:
			if (!strcmp(optarg, "proxy") || !strcmp(optarg, "sm")) {
				cfg.gather_sm = !strcmp(optarg, "sm");
			} else {
				ftcli_error("--gather: expected proxy or sm, got '%s'", optarg);
				bad = 1;
			}
			break;
		case OPT_BATCH_SWEEP: bad = parse_batches(optarg, &cfg); break;
		case OPT_REPLAY:
			if (ftrp_size_parse(optarg, &replay)) {
				ftcli_error("--replay: '%s' is none of none, short, full", optarg);
				bad = 1;
			}
			replay_given = 1;
			break;
		case OPT_JSON: json = 1; break;
		case OPT_OUTPUT_FORMAT:
			bad = ftcli_parse_format("--output-format", optarg, &out_fmt) < 0;
			json = out_fmt == FTCLI_FMT_JSON;
			break;
		case OPT_RESULT_FD: bad = ftcli_opt_result_fd(optarg); break;
		case OPT_ENGINES: bad = opt_long("--engines", optarg, 1, FTBW_MAX_ENGINES, &cfg.engines); break;
		case OPT_ENGINE_THREADS:
			bad = opt_long("--engine-threads", optarg, 1, 4096, &cfg.engine_threads);
			break;
		case OPT_DEPLOYMENT:
			if (ftbw_deployment_parse(optarg, &cfg.deployment) < 0) {
				ftcli_error("--deployment: '%s' is neither isolated nor concurrent", optarg);
				bad = 1;
			}
			break;
		case OPT_TUNE:
			if ((bad = ftcli_opt_tune(&tunes, optarg)) > 0)
				return 0;
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return FTCLI_EXIT_USAGE;
		}
		if (bad)
			return FTCLI_EXIT_USAGE;
	}
	if (optind < argc) {
		ftcli_error("unexpected argument '%s'", argv[optind]);
		return FTCLI_EXIT_USAGE;
	}
	if (repeat) {
		int *iters[4] = {&cfg.cpu_iters, &cfg.pcie_iters, &cfg.kernel_cpu_iters, &cfg.kernel_pcie_iters};
		for (int i = 0; i < 4; i++)
			if (!iters_given[i])
				*iters[i] = repeat;
	}
	if (!dtype_given && !model_given)
		parse_formats("--dtype", "all", cfg.dtypes, &cfg.ndtypes, true);
	if (cfg.nformats && !model_given)
		ftcli_note("--formats applies to --model workloads only; ignored");
	if (ftcli_tune_build(&tunes, &cfg.tune) < 0)
		return FTCLI_EXIT_USAGE;
	if (cfg.deployment < 0 && getenv("FTBENCH_DEPLOYMENT") && *getenv("FTBENCH_DEPLOYMENT") &&
	    ftbw_deployment_parse(getenv("FTBENCH_DEPLOYMENT"), &cfg.deployment) < 0) {
		ftcli_error("FTBENCH_DEPLOYMENT: '%s' is neither isolated nor concurrent", getenv("FTBENCH_DEPLOYMENT"));
		return FTCLI_EXIT_USAGE;
	}
	if (json)
		ftcli_set_quiet(1);
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
	int *cpus = NULL, rc = FTCLI_EXIT_FAIL;
	char why[256] = "", err[1024] = "", path[4096] = "", legacy_path[4096] = "";
	int r = ftcpu_probe(&ci);
	if (r < 0) {
		ftcli_error("cannot describe the CPU: %s", strerror(-r));
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
	struct ftbw_ops ops = fake_ops();
	if (ftcli_fake_gpus() < 0) {
		r = ftbw_real_create(&real, &env, &rep, err, sizeof err);
		if (r < 0) {
			ftcli_error("%s", err);
			rc = r == -ENODEV ? FTCLI_EXIT_USAGE : FTCLI_EXIT_FAIL;
			goto out;
		}
		ops = ftbw_real_ops(real);
	}
	r = ftbw_run(&cfg, &env, &ops, &rep, &prof, err, sizeof err);
	ftbw_real_free(real);
	real = NULL;
	if (r < 0) {
		ftcli_error("%s", err[0] ? err : strerror(-r));
		goto out;
	}
	if (have_gpu && replay != FTRP_NONE)
		bw_replay(prof, replay, &gpu, &ci, cpus, ncpus, &cfg.tune, &rep);
	else if (!have_gpu && replay_given && replay != FTRP_NONE)
		ftcli_note("--replay: replay needs a GPU (%s); none run", why);
	r = write_profile(prof, output, have_gpu ? gpu.uuid : NULL, path, sizeof path);
	if (r < 0) {
		ftcli_error("writing the profile%s%s: %s", output ? " to " : "", output ? output : "",
			    strerror(-r));
		goto out;
	}
	int kept_aside = r == 1;
	if (legacy && !kept_aside)
		legacy_copy(prof, output, have_gpu, path, legacy_path, sizeof legacy_path);
	ftcli_result(prof);
	if (json) {
		ftcli_print_json(prof);
	} else if (out_fmt != FTCLI_FMT_TABLE) {
		print_rows(&prof, 1);
		if (legacy_path[0])
			ftcli_note("legacy copy: %s", legacy_path);
		if (!kept_aside)
			ftcli_note("saved: %s", path);
	} else {
		ftbw_summary(stdout, prof);
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
	return rc;
}
