/* ftbench cache-copy: slot-cache LRU + gather cost per decode layer (reference §4); with
 * --from-json FILE, the table of a saved result (its --json output, or a daemon job's). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "bench/cache_copy.h"
#include "cli/cli.h"
#include "cli/flags.h"
#include "cli/table.h"
#include "moe/formats.h"
#include "moe/slot_cache.h"
#include "util/fsutil.h"
#include "util/strutil.h"

#ifdef FT_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

/* --list: one row per model of the cache tables (the JSON document: {"models": [rows]}). */
static const struct ftcol model_cols[] = {
	{"model", "model", NULL, -22},
	{"layers", "layers", NULL, 6, "%.0f"},
	{"experts", "E", NULL, 6, "%.0f"},
	{"topk", "topk", NULL, 5, "%.0f"},
	{"format", "format", NULL, -14},
	{"hidden", "H", NULL, 6, "%.0f"},
	{"inter", "I", NULL, 6, "%.0f"},
	{"expert_mib", "expert_MiB", "MiB", 12, "%.3f"},
};

static void list_models(enum ftcli_format fmt)
{
	struct fttable t = {model_cols, FTCOL_COUNT(model_cols), fmt};
	json_t *arr = json_array();
	fttable_head(&t);
	for (int i = 0; i < ftmodel_cache_profiles_count; i++) {
		const struct ftmodel *m = &ftmodel_cache_profiles[i];
		const struct ftfmt *f = ftfmt_get(m->format);
		double mib = ftfmt_expert_bytes(f, m->hidden, m->inter) / 1048576.0;
		fttable_row(&t, (struct ftcell[]){FTCELL_S(m->name), FTCELL_N(m->layers), FTCELL_N(m->experts),
						  FTCELL_N(m->topk), FTCELL_S(f->name), FTCELL_N((double)m->hidden),
						  FTCELL_N((double)m->inter), FTCELL_N(mib)});
		json_array_append_new(arr, json_pack("{s:s,s:i,s:i,s:i,s:s,s:I,s:I,s:f}", "model", m->name, "layers",
						     m->layers, "experts", m->experts, "topk", m->topk, "format", f->name,
						     "hidden", (json_int_t)m->hidden, "inter", (json_int_t)m->inter,
						     "expert_mib", mib));
	}
	if (fmt == FTCLI_FMT_JSON) {
		json_t *o = json_pack("{s:o}", "models", arr);
		ftcli_print_json(o);
		json_decref(o);
	} else {
		json_decref(arr);
	}
}

static const struct ftmodel *find_model(const char *name)
{
	for (int i = 0; i < ftmodel_cache_profiles_count; i++)
		if (!strcasecmp(ftmodel_cache_profiles[i].name, name))
			return &ftmodel_cache_profiles[i];
	return NULL;
}

static double jnum(const json_t *o, const char *k)
{
	return json_number_value(json_object_get(o, k));
}

/* A row of a result (model, cache size) and batch size and miss rate: table, csv and md. */
static const struct ftcol row_cols[] = {
	{"model"}, {"format"}, {"cache_slots", .fmt = "%.0f"}, {"path"}, {"copy"},
	{"bs", "bs", NULL, 4, "%.0f"},
	{"active", "active", NULL, 6, "%.0f"},
	{"miss_rate", "miss", NULL, 5, "%.2f"},
	{"misses", "misses", NULL, 6, "%.0f"},
	{"time_ms", "time_ms", "ms", 9, "%.4f"},
	{"time_ms_min", "min", "ms", 9, "%.4f"},
	{"time_ms_max", "max", "ms", 9, "%.4f"},
	{"copy_MiB", "copy_MiB", "MiB", 9, "%.2f"},
	{"bw_GBps", "bw_GBps", "GB/s", 8, "%.2f"},
	{"tok_ms", "tok_ms", "ms", 8, "%.2f"},
	{"ensure_us", "ens_us", "us", 7, "%.2f"},
	{"linear_GBps", "lin_GBps", "GB/s", 8, "%.2f"},
	{"fused_GBps", "fus_GBps", "GB/s", 8, "%.2f"},
	{"memcpy_GBps", "pyt_GBps", "GB/s", 8, "%.2f"},
	{"proxy_GBps", "pxy_GBps", "GB/s", 8, "%.2f"},
	{"pct_of_linear", "%lin", "%", 6, "%.1f"},
	{"proxy_pct_of_linear", "pxy%", "%", 6, "%.1f"},
	{"fused_over_per_bank", "f/pb", NULL, 5, "%.2f", "%.3f"},
	{"verified", "ok", NULL, 5},
	{"error"},
};
enum { NCOLS = FTCOL_COUNT(row_cols), COL_BS = 5, COL_LINEAR = 16 };

/* The cells of row of result r: an error row has bs, active, miss_rate, misses and its error;
 * a row without misses shows no copy-path figures in the table. */
static void row_cells(const json_t *r, const json_t *row, struct ftcell *c)
{
	const char *err = json_string_value(json_object_get(row, "error"));
	const json_t *sp = json_object_get(row, "time_ms_spread");
	for (int k = 0; k < NCOLS; k++) {
		const json_t *o = k < COL_BS ? r : !strcmp(row_cols[k].name, "time_ms_min") ||
							     !strcmp(row_cols[k].name, "time_ms_max") ? sp : row;
		const char *key = o == sp ? row_cols[k].name + 8 : row_cols[k].name;
		c[k] = err && k >= COL_BS + 4 ? FTCELL_NONE : ftcell_json(json_object_get(o, key));
		if (k >= COL_LINEAR && k < NCOLS - 2 && !jnum(row, "misses"))
			c[k].h = "-";
	}
	int ok = json_is_true(json_object_get(row, "verified"));
	c[NCOLS - 2] = err ? FTCELL_S("") : FTCELL_SH(ok ? "yes" : "no", ok ? "yes" : "NO");
	c[NCOLS - 1] = FTCELL_S(err ? err : "");
}

static void print_table(const json_t *res)
{
	struct fttable t = {row_cols, NCOLS, FTCLI_FMT_TABLE};
	size_t i, j;
	json_t *r, *row;
	json_array_foreach(json_object_get(res, "results"), i, r) {
		printf("\n%s (%s, L=%d E=%d top-%d, %.3f MiB/expert), cache %d slots, path %s, time_ms copy %s "
		       "(proxy: SM below %d KiB, %s signal)\n",
		       json_string_value(json_object_get(r, "model")), json_string_value(json_object_get(r, "format")),
		       (int)jnum(r, "layers"), (int)jnum(r, "experts"), (int)jnum(r, "topk"),
		       jnum(r, "expert_bytes") / 1048576.0, (int)jnum(r, "cache_slots"),
		       json_string_value(json_object_get(r, "path")), json_string_value(json_object_get(r, "copy")),
		       (int)(jnum(r, "proxy_split_bytes") / 1024), json_string_value(json_object_get(r, "proxy_signal")));
		fttable_head(&t);
		json_array_foreach(json_object_get(r, "rows"), j, row) {
			const char *err = json_string_value(json_object_get(row, "error"));
			if (err) { /* a row that could not run: what it was and why */
				printf("%4d %6d %5.2f %6d  %s\n", (int)jnum(row, "bs"), (int)jnum(row, "active"),
				       jnum(row, "miss_rate"), (int)jnum(row, "misses"), err);
				continue;
			}
			struct ftcell c[NCOLS];
			row_cells(r, row, c);
			fttable_row(&t, c);
		}
	}
}

/* csv|md: one row per result (model, cache size) and row (batch size, miss rate). */
static void print_rows(enum ftcli_format fmt, const json_t *res)
{
	struct fttable t = {row_cols, NCOLS, fmt};
	size_t i, j;
	json_t *r, *row;
	fttable_head(&t);
	json_array_foreach(json_object_get(res, "results"), i, r)
		json_array_foreach(json_object_get(r, "rows"), j, row) {
			struct ftcell c[NCOLS];
			row_cells(r, row, c);
			fttable_row(&t, c);
		}
}

/* A result in the asked format (table: the live table's layout). */
static void print_result(enum ftcli_format fmt, const json_t *res)
{
	if (fmt == FTCLI_FMT_JSON)
		ftcli_print_json((json_t *)res);
	else if (fmt == FTCLI_FMT_TABLE)
		print_table(res);
	else
		print_rows(fmt, res);
}

/* --from-json FILE: a cache-copy result ({"results": [...]}, what --json prints and the worker
 * sends) or a daemon job holding one ({"kind": "cache-copy", "result": {...}}). */
static int from_json(const char *path, enum ftcli_format fmt)
{
	json_error_t je;
	json_t *doc = !strcmp(path, "-") ? json_loadf(stdin, 0, &je) : json_load_file(path, 0, &je);
	const json_t *res;
	int rc = FTCLI_EXIT_USAGE;
	size_t i;
	json_t *r;
	if (!doc) {
		ftcli_error("--from-json %s: %s (line %d)", path, je.text, je.line);
		return FTCLI_EXIT_USAGE;
	}
	res = doc;
	if (json_is_object(doc) && !json_object_get(doc, "results") && json_object_get(doc, "kind")) {
		const char *kind = json_string_value(json_object_get(doc, "kind"));
		const char *state = json_string_value(json_object_get(doc, "state"));
		res = json_object_get(doc, "result");
		if (!kind || strcmp(kind, "cache-copy")) {
			ftcli_error("--from-json %s: a %s job, not cache-copy", path, kind ? kind : "(kind not a string)");
			goto out;
		}
		if (!json_is_object(res)) {
			ftcli_error("--from-json %s: the job has no result (state %s%s%s)", path, state ? state : "?",
				    json_is_string(json_object_get(doc, "error")) ? ": " : "",
				    json_string_value(json_object_get(doc, "error")) ?: "");
			goto out;
		}
	}
	if (!json_is_array(json_object_get(res, "results"))) {
		ftcli_error("--from-json %s: not a cache-copy result (no \"results\" array; give cache-copy --json "
			    "output or GET /benchmark/jobs/ID of a cache-copy job)", path);
		goto out;
	}
	json_array_foreach(json_object_get(res, "results"), i, r)
		if (!json_is_string(json_object_get(r, "model")) || !json_is_array(json_object_get(r, "rows"))) {
			ftcli_error("--from-json %s: results[%zu] has no model name or no \"rows\" array", path, i);
			goto out;
		}
	print_result(fmt, res);
	rc = 0;
out:
	json_decref(doc);
	return rc;
}

#ifdef FT_HAVE_CUDA
/* The row a failed run stopped at (the last row with an error: a run ends at the row that failed),
 * as "MODEL batch B, miss rate M: ERROR", so that the failure is named by what failed and not
 * only by its errno; 0 when no row carries one. */
static int row_error(json_t *res, char *buf, size_t n)
{
	json_t *r, *row;
	size_t i, j;
	int found = 0;
	json_array_foreach(json_object_get(res, "results"), i, r) {
		json_array_foreach(json_object_get(r, "rows"), j, row) {
			const char *e = json_string_value(json_object_get(row, "error"));
			const char *model = json_string_value(json_object_get(r, "model"));
			if (!e)
				continue;
			snprintf(buf, n, "%s batch %lld, miss rate %g: %s", model ? model : "?",
				 (long long)json_integer_value(json_object_get(row, "bs")),
				 json_number_value(json_object_get(row, "miss_rate")), e);
			found = 1;
		}
	}
	return found;
}
#endif

#ifdef FT_TEST_HOOKS
/* What a run would measure (test builds with fake GPUs, cli.h: the options as parsed, nothing measured). */
static json_t *opts_json(const struct ftcc_opts *o, const char *gpu)
{
	json_t *j = json_pack("{s:b,s:[],s:[],s:[],s:[],s:i,s:s,s:s?}", "fake", 1, "models", "cache_slots",
			      "batch_sizes", "miss_rates", "repeat", o->repeat, "copy",
			      o->copy == FTCC_COPY_PROXY ? "proxy" : "fused", "gpu", gpu);
	for (int i = 0; i < o->nmodels; i++)
		json_array_append_new(json_object_get(j, "models"), json_string(o->models[i]->name));
	for (int i = 0; i < o->nslots; i++)
		json_array_append_new(json_object_get(j, "cache_slots"), json_integer(o->slots[i]));
	for (int i = 0; i < o->nbatch; i++)
		json_array_append_new(json_object_get(j, "batch_sizes"), json_integer(o->batch[i]));
	for (int i = 0; i < o->nmiss; i++)
		json_array_append_new(json_object_get(j, "miss_rates"), json_real(o->miss[i]));
	return j;
}
#endif

struct cc_cli {
	const char *models, *from;
	struct ftflag_list slots, batch, miss;
	int repeat, copy, list; /* copy: 0 fused, 1 proxy */
	struct ftflag_gpu gpu;
	enum ftcli_format fmt;
};
#define O(m) FTF_FIELD(struct cc_cli, m)

static const struct ftflag flag_rows[] = {
	{"models", FTF_STR, O(models), .meta = "LIST", .flags = FTF_SEED_LIST, .def = "all",
	 .help = "cache-copy profiles (--list shows them)"},
	{"cache-slots", FTF_INTS, O(slots), .meta = "LIST", .lo = 1, .hi = FTSC_MAX_SLOTS, .max_items = FTCC_MAX_LIST,
	 .flags = FTF_SEED_LIST, .def_help = "E and int(0.4*L*E)", .help = "slot counts for every model"},
	{"batch-sizes", FTF_INTS, O(batch), .meta = "LIST", .lo = 1, .hi = 4096, .max_items = FTCC_MAX_LIST,
	 .flags = FTF_SEED_LIST, .def = FTCC_DEFAULT_BATCH_SIZES, .help = "tokens per decode step, one row each"},
	{"miss-rates", FTF_DOUBLES, O(miss), .meta = "LIST", .lo = 0, .hi = 1, .max_items = FTCC_MAX_LIST,
	 .flags = FTF_SEED_LIST, .def = FTCC_DEFAULT_MISS_RATES, .help = "shares of a step's experts not cached"},
	{"repeat", FTF_INT, O(repeat), .meta = "N", .lo = 1, .hi = 100000, .def = FTF_XSTR(FTCC_DEFAULT_REPEAT),
	 .help = "timed repeats per row, median reported"},
	{"copy", FTF_ENUM, O(copy), .choices = "fused|proxy", .def = "proxy",
	 .help = "copy path of time_ms/bw_GBps: proxy (copy engines driven from the device plan, its thread "
		 "asleep between plans) or fused (SM gather); the other paths (linear, per-expert memcpy, "
		 "per-bank, fused/proxy) are columns"},
	FTF_GPU_ROWS(struct cc_cli, gpu, "UUID|INDEX", "the first", "the GPU"),
	FTF_JSON_ROW(struct cc_cli, fmt, "the whole result as JSON on stdout"),
	FTF_FORMAT_ROW(struct cc_cli, fmt,
		       "table, json (as --json), csv or md: one row per model, cache size, batch size and miss "
		       "rate, the table's columns under their JSON names (times in ms, ensure_us in us, GB/s, %)"),
	{"from-json", FTF_STR, O(from), .meta = "FILE",
	 .help = "measure nothing: print the result saved in FILE (- = stdin) in the --output-format: "
		 "cache-copy --json output, or a cache-copy job of ftbenchd (GET /benchmark/jobs/ID; no GPU "
		 "needed)"},
	{"list", FTF_BOOL, O(list), .help = "the cache-copy profiles (models) and their shapes (MiB = 2^20 bytes)"},
	FTF_RESULT_FD_ROW,
};

const struct ftflag_cmd ftcli_flags_cache_copy = {
	"cache-copy", flag_rows, FTF_COUNT(flag_rows),
	.about = "       ftbench cache-copy --from-json FILE [--output-format F]\n"
		 "Lists take commas or spaces, as the seed's argparse does (--batch-sizes 1 4 16 32).",
	.notes = "Columns: ens_us = ensure_experts per call, 8 back-to-back calls each on a fresh state,\n"
		 "the second of two such rounds (the first, right after the copies: ensure_first_round_us);\n"
		 "lin/fus/pyt/pxy = GB/s of the linear copy, fused gather, per-expert memcpy loop, proxy\n"
		 "(copy only); %lin = linear over time_ms; pxy% = proxy over linear.\n"
		 "Environment: FREETOKEN_FUSED_COPY=0 forces the per-bank copy path.\n",
};

/* The rows' values into o; 0, or -1 after saying what is wrong. */
static int cc_opts(const struct cc_cli *c, struct ftcc_opts *o)
{
	char **items;
	int n = ftstr_split(c->models, &items, FTCC_MAX_LIST);
	if (n <= 0) {
		ftcli_error("--models: expected a list of names");
		return -1;
	}
	o->nmodels = 0;
	for (int i = 0; i < n; i++) {
		const struct ftmodel *m = !strcmp(items[i], "all") ? NULL : find_model(items[i]);
		if (!strcmp(items[i], "all")) {
			ftcc_defaults(o);
			continue;
		}
		if (!m) {
			ftcli_error("--models: unknown model '%s' (see --list)", items[i]);
			ftstr_free_list(items, n);
			return -1;
		}
		o->models[o->nmodels++] = m;
	}
	ftstr_free_list(items, n);
	o->nslots = c->slots.n;
	for (int i = 0; i < c->slots.n; i++)
		o->slots[i] = (long)c->slots.v[i];
	o->nbatch = c->batch.n;
	for (int i = 0; i < c->batch.n; i++)
		o->batch[i] = (long)c->batch.v[i];
	o->nmiss = c->miss.n;
	for (int i = 0; i < c->miss.n; i++)
		o->miss[i] = c->miss.v[i];
	o->repeat = c->repeat;
	o->copy = c->copy ? FTCC_COPY_PROXY : FTCC_COPY_FUSED;
	return 0;
}

int ftcli_cmd_cache_copy(int argc, char **argv)
{
	struct cc_cli c = {0};
	struct ftflag_state fs;
	struct ftcc_opts o;
	int pr = ftflags_parse(&ftcli_flags_cache_copy, argc, argv, &c, &fs);
	if (pr)
		return pr > 0 ? 0 : FTCLI_EXIT_USAGE;
	ftcc_defaults(&o);
	pr = cc_opts(&c, &o);
	ftflags_release(&fs); /* the joined lists are used above only */
	if (pr < 0)
		return FTCLI_EXIT_USAGE;
	const char *gpu = c.gpu.spec, *from = c.from;
	enum ftcli_format fmt = c.fmt;
	int list = c.list;
	if (list) {
		list_models(fmt);
		return 0;
	}
	if (from)
		return from_json(from, fmt);
	if (fmt == FTCLI_FMT_JSON)
		ftcli_set_quiet(1);
#ifdef FT_TEST_HOOKS
	if (ftcli_fake_gpus() >= 0) {
		struct ftgpu_info fg;
		char why[256] = "";
		int r = ftcli_select_gpu(gpu, &fg, why, sizeof why);
		if (r < 0)
			return FTCLI_EXIT_USAGE;
		json_t *j = opts_json(&o, r == 0 ? fg.uuid : NULL);
		ftcli_print_json(j);
		json_decref(j);
		return 0;
	}
#endif
#ifndef FT_HAVE_CUDA
	(void)gpu;
	ftcli_error("built without CUDA: cache-copy needs a GPU");
	return FTCLI_EXIT_USAGE;
#else
	struct ftgpu_info g;
	char why[256] = "";
	int r = ftcli_select_gpu(gpu, &g, why, sizeof why);
	if (r < 0)
		return FTCLI_EXIT_USAGE;
	if (r == 1) {
		ftcli_error("no GPU: %s", why[0] ? why : "no CUDA device found");
		return FTCLI_EXIT_USAGE;
	}
	if (cudaSetDevice(g.index) != cudaSuccess) {
		ftcli_error("cannot use GPU %d (%s)", g.index, g.uuid);
		return FTCLI_EXIT_FAIL;
	}
	struct ftreport rep = ftcli_reporter();
	json_t *res = NULL;
	r = ftcc_run(&o, &rep, &res);
	char failed[320] = "";
	if (res) {
		json_object_set_new(res, "gpu", ftgpu_json(&g));
		json_object_set_new(res, "repeat", json_integer(o.repeat));
		ftcli_result(res);
		print_result(fmt, res);
		if (r)
			row_error(res, failed, sizeof failed);
		json_decref(res);
	}
	if (r == -EBADMSG) {
		ftcli_error("slot contents differ from the source rows (rows with ok = NO)");
		return FTCLI_EXIT_FAIL;
	}
	if (r) {
		if (failed[0])
			ftcli_error("%s", failed);
		else
			ftcli_error("%s", r == -ENODEV ? "no usable CUDA device" : strerror(-r));
		return r == -ENODEV ? FTCLI_EXIT_USAGE : FTCLI_EXIT_FAIL;
	}
	return 0;
#endif
}
