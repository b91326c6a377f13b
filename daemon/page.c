/* page: the status page at `/`, one HTML document rendered here from the daemon's state and
 * the profile store: the GPUs (link as trained, who holds them), the queue and recent jobs, each
 * GPU's profile drawn in inline SVG (per format: CPU MoE and PCIe gather bars with their spread,
 * the threshold line, the verdict and fetch fraction; the ceilings; the history of the main
 * figures), and the sweep of the last finished cache-copy job. No framework, no external asset.
 *
 * A small inline script keeps it live: it follows each running job's event stream (fetch with the
 * Authorization header the page was loaded with, so the token rules are the API's) to move its
 * progress bar, and reloads the page when a job ends or a new one appears. With a token
 * configured, an unauthorised GET / gets a 401 page that asks for the token (kept in the tab's
 * sessionStorage, never in a URL or cookie) and loads the page with it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "page.h"

#include "daemon.h"
#include "ftprofile.h"
#include "profiles.h"
#include "util/timeutil.h"

#define RECENT_JOBS 20

/* Text into HTML (element content and quoted attributes alike). Invalid UTF-8 passes through
 * as it is: the document is served as UTF-8 and browsers show U+FFFD for it. */
static void esc(struct ftd_mbuf *m, const char *s)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '&': ftd_mbuf_cat(m, "&amp;"); break;
		case '<': ftd_mbuf_cat(m, "&lt;"); break;
		case '>': ftd_mbuf_cat(m, "&gt;"); break;
		case '"': ftd_mbuf_cat(m, "&quot;"); break;
		case '\'': ftd_mbuf_cat(m, "&#39;"); break;
		default: ftd_mbuf_cat(m, "%c", *s);
		}
	}
}

static double num(const json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	return json_is_number(v) ? json_number_value(v) : NAN;
}

static const char *str(const json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	return json_is_string(v) ? json_string_value(v) : NULL;
}

static void when(struct ftd_mbuf *m, double epoch)
{
	char b[32] = "-";
	if (epoch > 0) {
		time_t t = (time_t)epoch;
		struct tm tm;
		gmtime_r(&t, &tm);
		strftime(b, sizeof b, "%Y-%m-%d %H:%M:%SZ", &tm);
	}
	ftd_mbuf_cat(m, "%s", b);
}

static const char css[] =
	"body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222;max-width:70em}"
	"h1{font-size:1.4em;margin:0 0 .2em}h2{font-size:1.15em;margin:1.4em 0 .4em;border-bottom:1px solid #ccc}"
	"h3{font-size:1em;margin:1em 0 .3em}table{border-collapse:collapse}"
	"td,th{padding:.2em .7em;border-bottom:1px solid #eee;text-align:left;vertical-align:top}"
	"th{background:#f4f4f4}.mono{font-family:ui-monospace,monospace;font-size:.92em}"
	".succeeded{color:#176b1b}.failed,.timed_out,.interrupted{color:#b3261e}.running{color:#0b57d0}"
	".cancelled{color:#666}.muted{color:#777}.warn{color:#b3261e}progress{width:10em}"
	"svg text{font:12px system-ui,sans-serif}";

static void render_gpus(struct ftd_mbuf *m)
{
	ftd_mbuf_cat(m, "<h2>GPUs</h2>");
	if (ftd.ngpus == 0) {
		ftd_mbuf_cat(m, "<p id=\"no-gpus\" class=\"muted\">No GPU: ");
		esc(m, *ftd.gpus_reason ? ftd.gpus_reason : "none found");
		ftd_mbuf_cat(m, "</p>");
		return;
	}
	ftd_mbuf_cat(m, "<table id=\"gpus\"><tr><th>#</th><th>name</th><th>UUID</th><th>PCIe link (trained / max)"
		    "</th><th>NUMA</th><th>held by</th></tr>");
	for (int i = 0; i < ftd.ngpus; i++) {
		const struct ftgpu_info *g = &ftd.gpus[i];
		const char *holder = NULL;
		for (struct ftd_job *j = ftd.jobs.head; j; j = j->next)
			if (j->state == FTD_JOB_RUNNING && (j->gpu_index == g->index || j->host_excl))
				holder = j->id;
		ftd_mbuf_cat(m, "<tr class=\"gpu\" data-uuid=\"");
		esc(m, g->uuid);
		ftd_mbuf_cat(m, "\"><td>%d</td><td>", g->index);
		esc(m, g->name);
		ftd_mbuf_cat(m, "</td><td class=\"mono\">");
		esc(m, g->uuid);
		ftd_mbuf_cat(m, "</td><td>");
		if (g->link_gen_cur > 0)
			ftd_mbuf_cat(m, "Gen%d x%d / Gen%d x%d%s", g->link_gen_cur, g->link_width_cur, g->link_gen_max,
				 g->link_width_max,
				 g->link_gen_cur < g->link_gen_max || g->link_width_cur < g->link_width_max
					 ? " <span class=\"warn\">(below max)</span>" : "");
		else
			ftd_mbuf_cat(m, "<span class=\"muted\">unknown</span>");
		if (g->numa_node >= 0)
			ftd_mbuf_cat(m, "</td><td>%d</td><td>", g->numa_node);
		else
			ftd_mbuf_cat(m, "</td><td>-</td><td>");
		if (holder)
			ftd_mbuf_cat(m, "<a class=\"mono\" href=\"/benchmark/jobs/%s\">%.8s</a>", holder, holder);
		else
			ftd_mbuf_cat(m, "<span class=\"muted\">free</span>");
		ftd_mbuf_cat(m, "</td></tr>");
	}
	ftd_mbuf_cat(m, "</table>");
}

static void render_jobs(struct ftd_mbuf *m)
{
	int nq = ftd_jobs_count(&ftd.jobs, FTD_JOB_QUEUED), nr = ftd_jobs_count(&ftd.jobs, FTD_JOB_RUNNING);
	ftd_mbuf_cat(m, "<h2>Jobs</h2><p id=\"queue\">%d running, %d queued</p>", nr, nq);
	/* newest first: the list is oldest first, so collect the last RECENT_JOBS */
	const struct ftd_job *recent[RECENT_JOBS];
	int n = 0, total = 0;
	for (struct ftd_job *j = ftd.jobs.head; j; j = j->next)
		total++;
	int skip = total > RECENT_JOBS ? total - RECENT_JOBS : 0;
	for (struct ftd_job *j = ftd.jobs.head; j; j = j->next)
		if (skip-- <= 0)
			recent[n++] = j;
	if (!n) {
		ftd_mbuf_cat(m, "<p class=\"muted\">No job yet.</p>");
		return;
	}
	ftd_mbuf_cat(m, "<table id=\"jobs\"><tr><th>job</th><th>kind</th><th>state</th><th>progress</th>"
		    "<th>submitted</th><th>run time</th><th>error</th></tr>");
	for (int i = n - 1; i >= 0; i--) {
		const struct ftd_job *j = recent[i];
		const char *st = ftd_job_state_name(j->state);
		ftd_mbuf_cat(m, "<tr class=\"job\" data-job=\"%s\" data-state=\"%s\"><td class=\"mono\">"
			    "<a href=\"/benchmark/jobs/%s\">%.8s</a></td><td>%s</td><td class=\"state %s\">%s</td><td>",
			 j->id, st, j->id, j->id, j->kind ? j->kind : "?", st, st);
		if (j->has_progress && j->prog_total > 0)
			ftd_mbuf_cat(m, "<progress value=\"%d\" max=\"%d\"></progress> <span class=\"plabel\">%d/%d ",
				 j->prog_done, j->prog_total, j->prog_done, j->prog_total);
		else if (j->state == FTD_JOB_RUNNING || j->state == FTD_JOB_QUEUED)
			ftd_mbuf_cat(m, "<progress></progress> <span class=\"plabel\">");
		else
			ftd_mbuf_cat(m, "<span class=\"plabel\">");
		esc(m, j->prog_label);
		ftd_mbuf_cat(m, "</span></td><td>");
		when(m, j->created);
		ftd_mbuf_cat(m, "</td><td>");
		if (ftd_job_duration(j) >= 0)
			ftd_mbuf_cat(m, "%.1f s", ftd_job_duration(j));
		ftd_mbuf_cat(m, "</td><td class=\"warn\">");
		esc(m, j->error);
		if (j->error_detail) {
			/* every reason, one a line */
			ftd_mbuf_cat(m, "<details class=\"reasons\"><summary>all reasons</summary><pre>");
			esc(m, j->error_detail);
			ftd_mbuf_cat(m, "</pre></details>");
		}
		ftd_mbuf_cat(m, "</td></tr>");
	}
	ftd_mbuf_cat(m, "</table>");
}

/* ---------------------------------------------------------------- profile drawings */

/* The larger of the figures (and their spreads' max) a format row draws: the bars' scale. */
static double entry_max(const json_t *e)
{
	static const char *const k[] = {"cpu_moe_gbs", "pcie_gather_gbs"};
	double mx = 0;
	for (int i = 0; i < 2; i++) {
		double v = num(e, k[i]);
		char sk[64];
		snprintf(sk, sizeof sk, "%s_spread", k[i]);
		double s = num(json_object_get(e, sk), "max");
		if (v > mx)
			mx = v;
		if (s > mx)
			mx = s;
	}
	return mx;
}

/* One horizontal bar with its spread whisker at y, scaled so that `scale` GB/s spans w px. */
static void bar(struct ftd_mbuf *m, const json_t *e, const char *key, const char *label, const char *color, int x0,
		int y, double w, double scale)
{
	double v = num(e, key);
	ftd_mbuf_cat(m, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>", x0 - 6, y + 11, label);
	if (!(v > 0)) {
		ftd_mbuf_cat(m, "<text x=\"%d\" y=\"%d\" fill=\"#777\">not measured</text>", x0 + 4, y + 11);
		return;
	}
	double bw = v / scale * w;
	ftd_mbuf_cat(m, "<rect class=\"bar\" data-figure=\"%s\" x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"14\" fill=\"%s\">"
		    "<title>%s %.2f GB/s</title></rect>",
		 key, x0, y, bw, color, label, v);
	char sk[64];
	snprintf(sk, sizeof sk, "%s_spread", key);
	const json_t *sp = json_object_get(e, sk);
	double lo = num(sp, "min"), hi = num(sp, "max");
	if (lo > 0 && hi >= lo)
		ftd_mbuf_cat(m, "<line class=\"spread\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"#000\"/>"
			    "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"#000\"/>"
			    "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"#000\"/>",
			 x0 + lo / scale * w, x0 + hi / scale * w, y + 7, y + 7, x0 + lo / scale * w,
			 x0 + lo / scale * w, y + 3, y + 11, x0 + hi / scale * w, x0 + hi / scale * w, y + 3, y + 11);
	ftd_mbuf_cat(m, "<text x=\"%.1f\" y=\"%d\">%.1f</text>", x0 + (hi > v ? hi : v) / scale * w + 6, y + 11, v);
}

/* The seed's fetch fraction of one entry (reference §5): overlap pair first, else the plain pair. */
static double fetch_fraction(const json_t *e)
{
	double co = num(e, "cpu_moe_overlap_gbs"), po = num(e, "pcie_gather_overlap_gbs");
	double c = num(e, "cpu_moe_gbs"), p = num(e, "pcie_gather_gbs");
	double f = NAN;
	if (co > 0 && po > 0)
		f = po / (po + co);
	else if (c > 0 && p > 0)
		f = p / c;
	return f > 1 ? 1 : f;
}

static void render_formats(struct ftd_mbuf *m, const json_t *p)
{
	const json_t *kern = json_object_get(p, "dtype_kernels");
	double thr = num(p, "threshold");
	if (!json_is_object(kern) || !json_object_size(kern)) {
		ftd_mbuf_cat(m, "<p class=\"muted\">No per-format figures in this profile.</p>");
		return;
	}
	enum { X0 = 130, W = 420, ROW = 64, CROW = 40 };
	double scale = 0;
	const char *fmt;
	json_t *e;
	json_object_foreach((json_t *)kern, fmt, e) {
		double mx = entry_max(e), g = num(e, "pcie_gather_gbs");
		if (thr > 0 && g > 0 && thr * g > mx)
			mx = thr * g;
		if (mx > scale)
			scale = mx;
	}
	if (!(scale > 0))
		scale = 1;
	scale *= 1.08;
	int h = 24;
	json_object_foreach((json_t *)kern, fmt, e)
		h += ROW + (json_is_object(json_object_get(e, "concurrent")) ? CROW : 0);
	ftd_mbuf_cat(m, "<svg class=\"profile-plot\" width=\"%d\" height=\"%d\" role=\"img\" "
		    "aria-label=\"CPU MoE against PCIe gather per format, GB/s\">", X0 + W + 200, h);
	int y = 6;
	json_object_foreach((json_t *)kern, fmt, e) {
		ftd_mbuf_cat(m, "<g class=\"format\" data-format=\"");
		esc(m, fmt);
		ftd_mbuf_cat(m, "\"><text x=\"0\" y=\"%d\" font-weight=\"bold\">", y + 11);
		esc(m, fmt);
		ftd_mbuf_cat(m, "</text>");
		/* alone (the seed's figures), then every engine at once when the run measured that */
		const json_t *cb = json_object_get(e, "concurrent");
		int engines = (int)num(cb, "engines");
		char lc[48], lg[48];
		snprintf(lc, sizeof lc, "CPU MoE, %d at once", engines > 0 ? engines : 0);
		snprintf(lg, sizeof lg, "gather, %d at once", engines > 0 ? engines : 0);
		for (int k = 0; k < (json_is_object(cb) ? 2 : 1); k++) {
			const json_t *src = k ? cb : e;
			int y0 = y + 16 + k * CROW;
			bar(m, src, "cpu_moe_gbs", k ? lc : "CPU MoE", k ? "#9db7d5" : "#4e79a7", X0, y0, W, scale);
			bar(m, src, "pcie_gather_gbs", k ? lg : "PCIe gather", k ? "#f7c08a" : "#f28e2b", X0, y0 + 18, W,
			    scale);
			double g = num(src, "pcie_gather_gbs");
			if (thr > 0 && g > 0) {
				double x = X0 + thr * g / scale * W;
				ftd_mbuf_cat(m, "<line class=\"threshold\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" "
					    "stroke=\"#b3261e\" stroke-dasharray=\"4 3\"><title>threshold %.2f x gather = %.1f "
					    "GB/s: hybrid beyond</title></line>",
					 x, x, y0 - 3, y0 + 17, thr, thr * g);
			}
			const char *rec = str(src, k ? "recommended" : "recommended_isolated");
			if (!rec && !k)
				rec = str(e, "recommended");
			double f = k ? num(cb, "fetch_fraction") : fetch_fraction(e), r = num(src, "ratio");
			ftd_mbuf_cat(m, "<text x=\"%d\" y=\"%d\" class=\"verdict\">", X0 + W + 60, y0 + 11);
			esc(m, rec ? rec : "unmeasured");
			ftd_mbuf_cat(m, "</text>");
			if (r > 0)
				ftd_mbuf_cat(m, "<text x=\"%d\" y=\"%d\" fill=\"#555\">ratio %.2f</text>", X0 + W + 60, y0 + 27, r);
			if (f > 0 && rec && !strcmp(rec, "hybrid"))
				ftd_mbuf_cat(m, "<text x=\"%d\" y=\"%d\" fill=\"#555\">fetch %.3f</text>", X0 + W + 130, y0 + 27,
					 f);
		}
		ftd_mbuf_cat(m, "</g>");
		y += ROW + (json_is_object(cb) ? CROW : 0);
	}
	ftd_mbuf_cat(m, "</svg>");
	if (thr > 0)
		ftd_mbuf_cat(m, "<p class=\"muted\">Bars: median GB/s (10<sup>9</sup> B/s) with min-max whiskers; the dashed "
			    "line is the threshold (%.2f) &times; the gather: a CPU MoE bar past it means hybrid.</p>",
			 thr);
	const char *dep = str(p, "deployment");
	if (dep)
		ftd_mbuf_cat(m, "<p class=\"deployment\">Deployment <b>%s</b>: the seed's verdict fields (what engines read) "
			    "carry the %s figures%s.</p>",
			 !strcmp(dep, "concurrent") ? "concurrent" : "isolated",
			 !strcmp(dep, "concurrent") ? "every-engine-at-once" : "this-GPU-alone",
			 !strcmp(dep, "concurrent") ? " (the lighter bars)" : "");
}

static void render_ceilings(struct ftd_mbuf *m, const json_t *p)
{
	const json_t *c = json_object_get(p, "ceilings");
	static const char *const k[][2] = {{"cpu_stream_read_gbs", "CPU DRAM read"},
					   {"pcie_linear_h2d_gbs", "PCIe host to device"},
					   {"pcie_linear_d2h_gbs", "PCIe device to host"}};
	ftd_mbuf_cat(m, "<table class=\"ceilings\"><tr><th>ceiling</th><th>GB/s</th><th>spread (min-max)</th></tr>");
	for (int i = 0; i < 3; i++) {
		double v = num(c, k[i][0]);
		char sk[64];
		snprintf(sk, sizeof sk, "%s_spread", k[i][0]);
		const json_t *sp = json_object_get(c, sk);
		ftd_mbuf_cat(m, "<tr><td>%s</td><td>", k[i][1]);
		if (v > 0)
			ftd_mbuf_cat(m, "%.1f", v);
		else
			ftd_mbuf_cat(m, "<span class=\"muted\">-</span>");
		ftd_mbuf_cat(m, "</td><td>");
		if (num(sp, "min") > 0)
			ftd_mbuf_cat(m, "%.1f-%.1f (%d samples)", num(sp, "min"), num(sp, "max"), (int)num(sp, "samples"));
		ftd_mbuf_cat(m, "</td></tr>");
	}
	ftd_mbuf_cat(m, "</table>");
}

/* Small line plots of the profile's history: one per figure, the stored profiles oldest first. */
static void render_history(struct ftd_mbuf *m, const char *uuid, const json_t *p)
{
	json_t *hist = ftd_profiles_history(uuid, 0);
	size_t n = json_array_size(hist);
	if (n < 2) {
		ftd_mbuf_cat(m, "<p class=\"muted history-none\">History: %zu stored profile%s.</p>", n, n == 1 ? "" : "s");
		json_decref(hist);
		return;
	}
	/* figures: the ceilings, then each format's CPU MoE and gather */
	struct fig {
		char name[96];
		const char *fmt, *key; /* fmt NULL: a ceiling */
	} figs[24];
	int nf = 0;
	static const char *const ceil[] = {"cpu_stream_read_gbs", "pcie_linear_h2d_gbs"};
	for (int i = 0; i < 2; i++) {
		snprintf(figs[nf].name, sizeof figs[nf].name, "%s", ceil[i]);
		figs[nf].fmt = NULL;
		figs[nf++].key = ceil[i];
	}
	const char *fmt;
	json_t *e;
	json_object_foreach(json_object_get(p, "dtype_kernels"), fmt, e) {
		static const char *const k[] = {"cpu_moe_gbs", "pcie_gather_gbs"};
		for (int i = 0; i < 2 && nf < (int)(sizeof figs / sizeof *figs); i++) {
			snprintf(figs[nf].name, sizeof figs[nf].name, "%s %s", fmt, k[i]);
			figs[nf].fmt = fmt;
			figs[nf++].key = k[i];
		}
	}
	ftd_mbuf_cat(m, "<div class=\"history\">");
	enum { W = 180, H = 50 };
	for (int f = 0; f < nf; f++) {
		double v[64], lo = INFINITY, hi = -INFINITY;
		size_t k = 0;
		for (size_t i = 0; i < n && k < 64; i++) {
			const json_t *q = json_array_get(hist, i);
			double x = figs[f].fmt ? num(json_object_get(json_object_get(q, "dtype_kernels"), figs[f].fmt),
						       figs[f].key)
					       : num(json_object_get(q, "ceilings"), figs[f].key);
			v[k++] = x;
			if (x > 0) {
				lo = x < lo ? x : lo;
				hi = x > hi ? x : hi;
			}
		}
		if (!(hi > 0))
			continue;
		if (hi - lo < 1e-9 * hi)
			lo = hi * 0.9;
		ftd_mbuf_cat(m, "<svg class=\"history-plot\" width=\"%d\" height=\"%d\"><title>", W, H + 16);
		esc(m, figs[f].name);
		ftd_mbuf_cat(m, "</title><text x=\"0\" y=\"11\">");
		esc(m, figs[f].name);
		ftd_mbuf_cat(m, " %.1f</text><polyline fill=\"none\" stroke=\"#4e79a7\" points=\"", v[k - 1]);
		for (size_t i = 0; i < k; i++)
			if (v[i] > 0)
				ftd_mbuf_cat(m, "%.1f,%.1f ", 4 + (double)i * (W - 8) / (double)(k - 1),
					 16 + (H - 4) - (v[i] - lo) / (hi - lo) * (H - 8));
		ftd_mbuf_cat(m, "\"/></svg>");
	}
	ftd_mbuf_cat(m, "</div>");
	json_decref(hist);
}

static void render_profile(const char *uuid, json_t *p, const char *path, void *ctx)
{
	struct ftd_mbuf *m = ctx;
	const json_t *gpu = json_object_get(p, "gpu");
	ftd_mbuf_cat(m, "<section class=\"profile\" data-uuid=\"");
	esc(m, uuid);
	ftd_mbuf_cat(m, "\"><h3>");
	esc(m, !json_is_object(gpu) ? "host (no GPU)" : str(gpu, "name") ? str(gpu, "name") : "GPU");
	ftd_mbuf_cat(m, " <span class=\"mono muted\">");
	esc(m, uuid);
	ftd_mbuf_cat(m, "</span></h3><p>Measured ");
	esc(m, str(p, "timestamp") ? str(p, "timestamp") : "?");
	const json_t *bus = json_object_get(gpu, "pci_bus_id");
	json_t *now = ftprof_fingerprint_at(NULL, json_is_string(bus) ? json_string_value(bus) : NULL);
	char why[512];
	if (now && ftprof_fingerprint_compare(json_object_get(p, "fingerprint"), now, why, sizeof why) == 1) {
		ftd_mbuf_cat(m, " <strong class=\"warn stale\">stale: ");
		esc(m, why);
		ftd_mbuf_cat(m, "</strong>");
	}
	json_decref(now);
	json_t *valid = json_object_get(p, "valid");
	if (json_is_false(valid))
		ftd_mbuf_cat(m, " <strong class=\"warn invalid\">not valid: its own checks failed</strong>");
	ftd_mbuf_cat(m, "</p>");
	json_t *w;
	size_t i;
	json_array_foreach(json_object_get(p, "warnings"), i, w)
		if (json_is_string(w)) {
			ftd_mbuf_cat(m, "<p class=\"warn\">");
			esc(m, json_string_value(w));
			ftd_mbuf_cat(m, "</p>");
		}
	render_formats(m, p);
	render_ceilings(m, p);
	render_history(m, uuid, p);
	ftd_mbuf_cat(m, "</section>");
}

/* The sweep of the newest finished cache-copy job: GB/s over miss rate, one line per batch size,
 * for its first configuration. */
static void render_cache_copy(struct ftd_mbuf *m)
{
	const struct ftd_job *last = NULL;
	for (struct ftd_job *j = ftd.jobs.head; j; j = j->next)
		if (j->state == FTD_JOB_SUCCEEDED && j->kind && !strcmp(j->kind, "cache-copy") &&
		    json_is_array(json_object_get(j->result, "results")))
			last = j;
	if (!last)
		return;
	const json_t *cfg = json_array_get(json_object_get(last->result, "results"), 0);
	const json_t *rows = json_object_get(cfg, "rows");
	if (!json_array_size(rows))
		return;
	ftd_mbuf_cat(m, "<h2>Slot-cache copy sweep</h2><p>Job <a class=\"mono\" href=\"/benchmark/jobs/%s\">%.8s</a>: ",
		 last->id, last->id);
	esc(m, str(cfg, "model") ? str(cfg, "model") : "?");
	ftd_mbuf_cat(m, " ");
	esc(m, str(cfg, "format") ? str(cfg, "format") : "");
	ftd_mbuf_cat(m, ", GB/s of ensure + copy over the miss rate, one line per batch size.</p>");
	double ymax = 0;
	long bss[16];
	int nbs = 0;
	size_t i;
	json_t *r;
	json_array_foreach(rows, i, r) {
		double g = num(r, "bw_GBps");
		long bs = (long)num(r, "bs");
		if (g > ymax)
			ymax = g;
		int seen = 0;
		for (int k = 0; k < nbs; k++)
			seen |= bss[k] == bs;
		if (!seen && nbs < 16)
			bss[nbs++] = bs;
	}
	if (!(ymax > 0))
		return;
	static const char *const colors[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948"};
	enum { X0 = 50, W = 400, H = 200 };
	ftd_mbuf_cat(m, "<svg id=\"cache-copy-plot\" width=\"%d\" height=\"%d\">", X0 + W + 110, H + 40);
	ftd_mbuf_cat(m, "<line x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\" stroke=\"#999\"/>"
		    "<line x1=\"%d\" x2=\"%d\" y1=\"10\" y2=\"%d\" stroke=\"#999\"/>"
		    "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">miss rate</text>"
		    "<text x=\"4\" y=\"14\">%.0f GB/s</text><text x=\"%d\" y=\"%d\">0</text><text x=\"%d\" y=\"%d\">1</text>",
		 X0, X0 + W, H + 10, H + 10, X0, X0, H + 10, X0 + W / 2, H + 34, ymax, X0 - 4, H + 24, X0 + W - 4, H + 24);
	for (int k = 0; k < nbs; k++) {
		ftd_mbuf_cat(m, "<polyline class=\"sweep\" data-bs=\"%ld\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"",
			 bss[k], colors[k % 6]);
		json_array_foreach(rows, i, r)
			if ((long)num(r, "bs") == bss[k] && num(r, "bw_GBps") >= 0)
				ftd_mbuf_cat(m, "%.1f,%.1f ", X0 + num(r, "miss_rate") * W,
					 H + 10 - num(r, "bw_GBps") / ymax * (H - 10));
		ftd_mbuf_cat(m, "\"/><text x=\"%d\" y=\"%d\" fill=\"%s\">batch %ld</text>", X0 + W + 10, 20 + 16 * k,
			 colors[k % 6], bss[k]);
	}
	ftd_mbuf_cat(m, "</svg>");
}

/* The live part: follow running jobs' events, reload when the set of jobs changes. */
static const char script[] =
	"(function(){\n"
	"var tok=sessionStorage.getItem('ftbenchd-token');\n"
	"var hdr=tok?{'Authorization':'Bearer '+tok}:{};\n"
	"function reload(){if(tok){fetch('/',{headers:hdr}).then(function(r){return r.text()}).then(function(t){"
	"document.open();document.write(t);document.close();})}else{location.reload()}}\n"
	"function follow(row){var id=row.dataset.job;\n"
	" fetch('/benchmark/jobs/'+id+'/events',{headers:hdr}).then(function(r){\n"
	"  var rd=r.body.getReader(),dec=new TextDecoder(),buf='';\n"
	"  function pump(){return rd.read().then(function(x){if(x.done){reload();return}\n"
	"   buf+=dec.decode(x.value,{stream:true});var i;\n"
	"   while((i=buf.indexOf('\\n\\n'))>=0){var ev=buf.slice(0,i),type='',data='';buf=buf.slice(i+2);\n"
	"    ev.split('\\n').forEach(function(l){if(l.indexOf('event: ')==0)type=l.slice(7);"
	"if(l.indexOf('data: ')==0)data+=l.slice(6)});\n"
	"    if(!data)continue;var d=JSON.parse(data);\n"
	"    if(type=='progress'&&d.total){var p=row.querySelector('progress');p.max=d.total;p.value=d.done;\n"
	"     row.querySelector('.plabel').textContent=d.done+'/'+d.total+' '+(d.label||'');row.dataset.live='1'}\n"
	"    if(type=='state'){row.querySelector('.state').textContent=d.state;"
	"if(['succeeded','failed','cancelled','timed_out','interrupted'].indexOf(d.state)>=0){reload();return}}}\n"
	"   return pump()})}\n"
	"  return pump()}).catch(function(){setTimeout(reload,5000)})}\n"
	"document.querySelectorAll('tr.job[data-state=running]').forEach(follow);\n"
	"var n=document.querySelectorAll('tr.job[data-state=queued]').length;\n"
	"setInterval(function(){fetch('/health').then(function(r){return r.json()}).then(function(h){"
	"if(h.queued!=n||h.running!=document.querySelectorAll('tr.job[data-state=running]').length)reload()})},5000);\n"
	"})();\n";

void ftd_page_render(struct ftd_mbuf *m)
{
	ftd_mbuf_cat(m, "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>ftbenchd</title>"
		    "<meta name=\"viewport\" content=\"width=device-width\"><style>%s</style></head><body>",
		 css);
	pthread_mutex_lock(&ftd.lock);
	ftd_mbuf_cat(m, "<h1>ftbenchd</h1><p class=\"muted\">version %s &middot; up %.0f s &middot; "
		    "<a href=\"/openapi.json\">API</a> &middot; <a href=\"/metrics\">metrics</a></p>",
		 FT_VERSION, (double)(fttime_now_ns() - ftd.start_ns) / 1e9);
	render_gpus(m);
	render_jobs(m);
	render_cache_copy(m);
	pthread_mutex_unlock(&ftd.lock);
	ftd_mbuf_cat(m, "<h2>Profiles</h2>");
	size_t before = m->len;
	ftd_profiles_each(render_profile, m);
	if (m->len == before)
		ftd_mbuf_cat(m, "<p id=\"no-profiles\" class=\"muted\">No profile yet: run a <code>bw</code> job.</p>");
	ftd_mbuf_cat(m, "<script>%s</script></body></html>\n", script);
}

void ftd_page_login(struct ftd_mbuf *m)
{
	ftd_mbuf_cat(m, "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>ftbenchd: token</title>"
		    "<style>%s</style></head><body><h1>ftbenchd</h1><p>This daemon needs its bearer token.</p>"
		    "<form id=\"login\"><input id=\"token\" type=\"password\" size=\"48\" autocomplete=\"off\"> "
		    "<button>Open</button></form><p id=\"msg\" class=\"warn\"></p><script>\n"
		    "function open_(t){fetch('/',{headers:{'Authorization':'Bearer '+t}}).then(function(r){"
		    "if(r.status!=200){document.getElementById('msg').textContent='the daemon answered '+r.status;"
		    "sessionStorage.removeItem('ftbenchd-token');return}"
		    "sessionStorage.setItem('ftbenchd-token',t);return r.text().then(function(h){"
		    "document.open();document.write(h);document.close()})})}\n"
		    "var t=sessionStorage.getItem('ftbenchd-token');if(t)open_(t);\n"
		    "document.getElementById('login').onsubmit=function(e){e.preventDefault();"
		    "open_(document.getElementById('token').value)};\n"
		    "</script></body></html>\n",
		 css);
}
