/* bw_print: see bw_print.h. */
#include "cli/bw_print.h"

#include <math.h>
#include <string.h>

#include "bench/bw.h"
#include "cli/table.h"

/* A kernel entry's row. gpu, cpu_moe_isa and the concurrent verdict are in csv and md only (the
 * table names the GPU above it and shows the ISA beside the CPU figure). */
static const struct ftcol kernel_cols[] = {
	{"gpu", NULL},
	{"workload", "workload", NULL, -14},
	{"format", "format", NULL, -13},
	{"expert_mib", "exp MiB", "MiB", 8, "%.2f"},
	{"cpu_moe_gbs", "cpu_moe", "GB/s", -20, "%.1f", "%.2f"},
	{"cpu_moe_isa", NULL},
	{"pcie_gather_gbs", "gather", "GB/s", 9, "%.1f", "%.2f"},
	{"cpu_moe_overlap_gbs", "cpu_ov", "GB/s", 8, "%.1f", "%.2f"},
	{"pcie_gather_overlap_gbs", "gath_ov", "GB/s", 8, "%.1f", "%.2f"},
	{"ratio", "ratio", NULL, 6, "%.2f", "%.3f"},
	{"decision", "decision", NULL, -8},
	{"fetch_fraction", "fetch", NULL, 6, "%.3f"},
	{"concurrent_decision", NULL},
	{"concurrent_fetch_fraction", NULL, NULL, 0, "%.3f"},
	{"hybrid_max_batch", NULL, NULL, 0, "%.0f"},
	{"note", NULL},
};
enum { C_GPU, C_WORKLOAD, C_FORMAT, C_EXP, C_CPU, C_ISA, C_GATHER, C_CPU_OV, C_GATH_OV, C_RATIO, C_DECISION,
       C_FETCH, C_CDECISION, C_CFETCH, C_HMAX, C_NOTE, C_N };

static double num(const json_t *o, const char *key)
{
	return json_number_value(json_object_get(o, key));
}

/* The fetch fraction of a hybrid verdict (the overlapped pair's when measured), else none. */
static struct ftcell fetch_cell(const json_t *e, const char *rec)
{
	double fr = ftbw_fetch_fraction(num(e, "cpu_moe_gbs"), num(e, "pcie_gather_gbs"), num(e, "cpu_moe_overlap_gbs"),
					num(e, "pcie_gather_overlap_gbs"));
	return rec && !strcmp(rec, "hybrid") && isfinite(fr) ? FTCELL_N(fr) : FTCELL_NONE;
}

/* v printed with fmt, or "-" when it is not a number. */
static void put_num(FILE *f, const json_t *v, const char *fmt)
{
	if (json_is_number(v))
		fprintf(f, fmt, json_number_value(v));
	else
		fputc('-', f);
}

/* The table's lines under a row: its note, its figures with every engine running, its batch sweep. */
static void row_details(const struct fttable *t, const json_t *e)
{
	FILE *f = t->out ? t->out : stdout;
	const char *note = json_string_value(json_object_get(e, "note"));
	if (note)
		fprintf(f, "%-14s   note: %s\n", "", note);
	const json_t *cb = json_object_get(e, "concurrent");
	if (json_is_object(cb)) {
		char lab[32];
		snprintf(lab, sizeof lab, "  concurrent x%d", (int)json_integer_value(json_object_get(cb, "engines")));
		const char *crec = json_string_value(json_object_get(cb, "recommended"));
		struct ftcell c[C_N] = {[C_WORKLOAD] = FTCELL_S(lab), [C_FORMAT] = FTCELL_S(""), [C_EXP] = FTCELL_S("")};
		c[C_CPU] = ftcell_json(json_object_get(cb, "cpu_moe_gbs"));
		c[C_GATHER] = ftcell_json(json_object_get(cb, "pcie_gather_gbs"));
		c[C_CPU_OV] = ftcell_json(json_object_get(cb, "cpu_moe_overlap_gbs"));
		c[C_GATH_OV] = ftcell_json(json_object_get(cb, "pcie_gather_overlap_gbs"));
		c[C_RATIO] = ftcell_json(json_object_get(cb, "ratio"));
		c[C_DECISION] = FTCELL_S(crec ? crec : "?");
		if (crec && !strcmp(crec, "hybrid"))
			c[C_FETCH] = ftcell_json(json_object_get(cb, "fetch_fraction"));
		fttable_row(t, c);
	}
	json_t *sw = json_object_get(e, "batch_sweep"), *row;
	size_t i;
	if (json_array_size(sw)) {
		fprintf(f, "%-14s   batch: cpu/gather GB/s (ratio)", "");
		json_array_foreach(sw, i, row) {
			fprintf(f, "  %d: ", (int)json_integer_value(json_object_get(row, "batch")));
			put_num(f, json_object_get(row, "cpu_moe_gbs"), "%.1f");
			fputc('/', f);
			put_num(f, json_object_get(row, "pcie_gather_gbs"), "%.1f");
			fputs(" (", f);
			put_num(f, json_object_get(row, "ratio"), "%.2f");
			fputc(')', f);
		}
		fputs("; hybrid up to batch ", f);
		put_num(f, json_object_get(e, "hybrid_max_batch"), "%.0f");
		fputc('\n', f);
	}
}

/* One row per kernel entry of p: dtype_kernels (workload "(dtype)"), then each workload's. */
static void kernel_rows(const struct fttable *t, const json_t *p)
{
	const char *uuid = json_string_value(json_object_get(json_object_get(p, "gpu"), "uuid"));
	const json_t *wl = json_object_get(p, "workloads"), *w = json_object_get(p, "dtype_kernels");
	const char *wk = "(dtype)", *k;
	json_t *e;
	void *it = json_object_iter((json_t *)wl);
	for (;;) {
		json_object_foreach((json_t *)w, k, e) {
			const json_t *cb = json_object_get(e, "concurrent"), *eb = json_object_get(e, "expert_bytes");
			/* the row shows the figures measured alone, so their verdict (the deployment's is
			 * above the table, the concurrent one in its own cells) */
			const char *rec = json_string_value(json_object_get(e, "recommended_isolated"));
			const char *crec = json_string_value(json_object_get(cb, "recommended"));
			const char *isa = json_string_value(json_object_get(e, "cpu_moe_isa"));
			if (!rec)
				rec = json_string_value(json_object_get(e, "recommended"));
			struct ftcell c[C_N] = {
				[C_GPU] = FTCELL_S(uuid), [C_WORKLOAD] = FTCELL_S(wk), [C_FORMAT] = FTCELL_S(k),
				[C_EXP] = json_is_number(eb) ? FTCELL_N(json_number_value(eb) / 1048576.0) : FTCELL_NONE,
				[C_CPU] = ftcell_json(json_object_get(e, "cpu_moe_gbs")),
				[C_ISA] = FTCELL_S(isa),
				[C_GATHER] = ftcell_json(json_object_get(e, "pcie_gather_gbs")),
				[C_CPU_OV] = ftcell_json(json_object_get(e, "cpu_moe_overlap_gbs")),
				[C_GATH_OV] = ftcell_json(json_object_get(e, "pcie_gather_overlap_gbs")),
				[C_RATIO] = ftcell_json(json_object_get(e, "ratio")),
				[C_DECISION] = FTCELL_SH(rec, rec ? rec : "?"),
				[C_FETCH] = fetch_cell(e, rec),
				[C_CDECISION] = FTCELL_S(crec),
				[C_CFETCH] = crec && !strcmp(crec, "hybrid") ? ftcell_json(json_object_get(cb, "fetch_fraction"))
									      : FTCELL_NONE,
				[C_HMAX] = ftcell_json(json_object_get(e, "hybrid_max_batch")),
				[C_NOTE] = FTCELL_S(json_string_value(json_object_get(e, "note"))),
			};
			char cpu[48], cov[32]; /* the table: the CPU figure with the ISA that made it */
			if (c[C_CPU].is_num && isa) {
				snprintf(cpu, sizeof cpu, "%.1f (%s)", c[C_CPU].v, isa);
				c[C_CPU].h = cpu;
			}
			/* the table: the measured overlap figure; with fetch_fraction_by replay the seed-read
			 * one (csv, md) is rescaled (replay.h) */
			const json_t *covm = json_object_get(e, "cpu_moe_overlap_gbs_measured");
			if (json_is_number(covm)) {
				snprintf(cov, sizeof cov, "%.1f", json_number_value(covm));
				c[C_CPU_OV].h = cov;
			}
			fttable_row(t, c);
			if (t->fmt == FTCLI_FMT_TABLE)
				row_details(t, e);
		}
		if (!it)
			break;
		wk = json_object_iter_key(it);
		w = json_object_get(json_object_iter_value(it), "kernels");
		it = json_object_iter_next((json_t *)wl, it);
	}
}

void ftcli_bw_rows(enum ftcli_format fmt, json_t *const *profs, int n)
{
	struct fttable t = {kernel_cols, FTCOL_COUNT(kernel_cols), fmt};
	if (fmt != FTCLI_FMT_CSV && fmt != FTCLI_FMT_MD)
		return;
	fttable_head(&t);
	for (int g = 0; g < n; g++)
		kernel_rows(&t, profs[g]);
}

static void summary_gbs(FILE *f, const char *what, const json_t *ceil, const char *key)
{
	char sk[96];
	snprintf(sk, sizeof sk, "%s_spread", key);
	json_t *v = json_object_get(ceil, key), *s = json_object_get(ceil, sk);
	if (!json_is_number(v)) {
		fprintf(f, "  %-22s -\n", what);
		return;
	}
	fprintf(f, "  %-22s %7.1f GB/s", what, json_number_value(v));
	if (json_is_object(s))
		fprintf(f, "  (min %.1f, max %.1f, %d samples)", json_number_value(json_object_get(s, "min")),
			json_number_value(json_object_get(s, "max")),
			(int)json_integer_value(json_object_get(s, "samples")));
	fputc('\n', f);
}

void ftcli_bw_summary(FILE *f, const json_t *p)
{
	const json_t *gpu = json_object_get(p, "gpu"), *cpu = json_object_get(p, "cpu");
	const json_t *ceil = json_object_get(p, "ceilings");
	fprintf(f, "host %s, %s\n", json_string_value(json_object_get(p, "host")) ?: "?",
		json_string_value(json_object_get(p, "timestamp")) ?: "?");
	fprintf(f, "cpu  %s, %d threads on %d physical cores\n",
		json_string_value(json_object_get(cpu, "model")) ?: "?",
		(int)json_integer_value(json_object_get(cpu, "threads_used")),
		(int)json_integer_value(json_object_get(cpu, "physical_cores")));
	if (json_is_object(gpu)) {
		const json_t *l = json_object_get(gpu, "pcie_link");
		fprintf(f, "gpu  %d %s %s (%s)\n", (int)json_integer_value(json_object_get(gpu, "index")),
			json_string_value(json_object_get(gpu, "name")) ?: "?",
			json_string_value(json_object_get(gpu, "uuid")) ?: "?",
			json_string_value(json_object_get(gpu, "pci_bus_id")) ?: "?");
		fprintf(f, "pcie Gen%d x%d trained (card max Gen%d x%d): %.1f GB/s theoretical per direction%s\n",
			(int)json_integer_value(json_object_get(l, "gen_current")),
			(int)json_integer_value(json_object_get(l, "width_current")),
			(int)json_integer_value(json_object_get(l, "gen_max")),
			(int)json_integer_value(json_object_get(l, "width_max")),
			json_number_value(json_object_get(l, "theoretical_gbs")),
			json_is_true(json_object_get(gpu, "link_degraded")) ? "  ** DEGRADED **" : "");
	} else {
		fprintf(f, "gpu  none: CPU half only\n");
	}
	fprintf(f, "ceilings\n");
	summary_gbs(f, "CPU read", ceil, "cpu_stream_read_gbs");
	json_t *ph = json_object_get(ceil, "cpu_stream_read_phases");
	if (json_is_integer(ph))
		fprintf(f, "  %-22s best phase median of %d phases; median of all passes %.1f GB/s\n", "",
			(int)json_integer_value(ph),
			json_number_value(json_object_get(json_object_get(ceil, "cpu_stream_read_gbs_spread"), "median")));
	summary_gbs(f, "PCIe linear H2D", ceil, "pcie_linear_h2d_gbs");
	summary_gbs(f, "PCIe linear D2H", ceil, "pcie_linear_d2h_gbs");
	fprintf(f, "\nthreshold %.2f: hybrid when CPU MoE > threshold x gather (GB/s; ov = overlapped)\n",
		json_number_value(json_object_get(p, "threshold")));
	const json_t *conc = json_object_get(p, "concurrent");
	const char *dep = json_string_value(json_object_get(p, "deployment"));
	if (json_is_object(conc))
		fprintf(f, "deployment %s (the verdict engines read); rows: this GPU alone, then \"concurrent xN\": "
			   "its engine while all %d engines run at once (%d cores each)\n",
			dep ? dep : "isolated", (int)json_integer_value(json_object_get(conc, "engines")),
			(int)json_integer_value(json_object_get(conc, "cores_per_engine")));
	struct fttable t = {kernel_cols, FTCOL_COUNT(kernel_cols), FTCLI_FMT_TABLE, .out = f};
	fttable_head(&t);
	kernel_rows(&t, p);
	const char *k;
	json_t *v;
	const json_t *rp = json_object_get(p, "replay");
	if (json_object_size(rp)) {
		fprintf(f, "\nreplay: the engine's decode step measured (ftbench replay; per format its default point)\n");
		json_object_foreach((json_t *)rp, k, v) {
			const json_t *dp = json_object_get(v, "default_point"), *pts = json_object_get(v, "points"), *pt, *best = NULL;
			size_t i;
			double cf = json_number_value(json_object_get(dp, "cache_fraction")), ru = json_number_value(json_object_get(dp, "reuse"));
			double bd = INFINITY;
			json_array_foreach(pts, i, pt) {
				double a = json_number_value(json_object_get(pt, "cache_fraction")) - cf,
				       b = json_number_value(json_object_get(pt, "reuse")) - ru;
				if (json_number_value(json_object_get(pt, "skew")) == 0 && a * a + b * b < bd) {
					bd = a * a + b * b;
					best = pt;
				}
			}
			if (!best)
				continue;
			const json_t *e = json_object_get(json_object_get(p, "dtype_kernels"), k);
			const json_t *bf = json_object_get(best, "best_fetch_fraction");
			fprintf(f, "  %-13s cache %.2g, reuse %.2g: %s (hybrid/offload %.2fx, best f %s%.3g)", k,
				json_number_value(json_object_get(best, "cache_fraction")),
				json_number_value(json_object_get(best, "reuse")),
				json_string_value(json_object_get(best, "winner")) ?: "?",
				json_number_value(json_object_get(best, "speedup")), json_is_number(bf) ? "" : "-",
				json_is_number(bf) ? json_number_value(bf) : 0.0);
			const char *rb = json_string_value(json_object_get(e, "recommended_bandwidth"));
			const char *by = json_string_value(json_object_get(e, "recommended_by"));
			if (rb)
				fprintf(f, "; the rule says %s, the verdict is %s (%s)", rb,
					json_string_value(json_object_get(e, "recommended")) ?: "-", by ? by : "?");
			if (json_object_get(e, "fetch_fraction_by"))
				fprintf(f, "; the seed-read fetch fraction is the best f");
			fputc('\n', f);
		}
	}
	json_t *warn = json_object_get(p, "warnings");
	if (json_array_size(warn)) {
		fprintf(f, "\nwarnings\n");
		size_t i;
		json_array_foreach(warn, i, v)
			fprintf(f, "  - %s\n", json_string_value(v));
	}
}
