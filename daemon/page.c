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
#define FTD_PAGE_MAX_PROFILES 64 /* GPUs drawn on the page */
#define FTD_PAGE_OUTLIER 0.85    /* a figure under this share of the GPUs' median is marked */

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
	"body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222;max-width:90em}"
	"h1{font-size:1.4em;margin:0 0 .2em}h2{font-size:1.15em;margin:1.4em 0 .4em;border-bottom:1px solid #ccc}"
	"h3{font-size:1em;margin:1em 0 .3em}table{border-collapse:collapse}"
	"td,th{padding:.2em .7em;border-bottom:1px solid #eee;text-align:left;vertical-align:top}"
	"th{background:#f4f4f4}.mono{font-family:ui-monospace,monospace;font-size:.92em}"
	".succeeded{color:#176b1b}.failed,.timed_out,.interrupted{color:#b3261e}.running{color:#0b57d0}"
	".cancelled{color:#666}.muted{color:#777}.warn{color:#b3261e}progress{width:10em}"
	"svg text{font:12px system-ui,sans-serif}"
	"#compare{display:flex;flex-wrap:wrap;gap:.6em 1.6em}table.cmp caption{font-weight:bold;text-align:left}"
	"td.num{text-align:right;font-variant-numeric:tabular-nums}.outlier{color:#b3261e;font-weight:bold}"
	".odd{background:#fde7e4}details.profile{border:1px solid #ddd;border-radius:4px;padding:.3em .7em;margin:.4em 0}"
	"details.profile>summary{cursor:pointer}.history,.replays{display:flex;flex-wrap:wrap;gap:.5em 1.5em}";

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

/* A "nice" axis maximum at or above v (1, 2 or 5 times a power of ten). */
static double nice_max(double v)
{
	if (!(v > 0))
		return 1;
	double p = pow(10, floor(log10(v)));
	return (v <= p ? 1 : v <= 2 * p ? 2 : v <= 5 * p ? 5 : 10) * p;
}

static void day(char *b, size_t n, double epoch)
{
	time_t t = (time_t)epoch;
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(b, n, "%Y-%m-%d", &tm);
}

/* One history plot: the series (figure keys of a format, or ceilings) over the stored profiles'
 * dates. Axes: y from 0 (zero-based, three ticks; the unit in the title), x by date (the first
 * and last dates written at the ends, anchored inward, so they never meet); the legend in its
 * own row under the title. */
struct hseries {
	const char *fmt, *key, *label, *color; /* fmt NULL: a ceiling */
};

static void history_plot(struct ftd_mbuf *m, const json_t *hist, const char *title, const struct hseries *s, int ns)
{
	enum { W = 330, H = 160, L = 44, R = 10, T = 46, B = 22 };
	size_t n = json_array_size(hist);
	double t0 = INFINITY, t1 = -INFINITY, vmax = 0;
	for (size_t i = 0; i < n; i++) {
		const json_t *q = json_array_get(hist, i);
		double t = num(q, "epoch");
		if (!(t > 0))
			continue;
		t0 = t < t0 ? t : t0;
		t1 = t > t1 ? t : t1;
		for (int k = 0; k < ns; k++) {
			double v = s[k].fmt ? num(json_object_get(json_object_get(q, "dtype_kernels"), s[k].fmt), s[k].key)
					    : num(json_object_get(q, "ceilings"), s[k].key);
			vmax = v > vmax ? v : vmax;
		}
	}
	if (!(vmax > 0) || !(t1 >= t0))
		return;
	double ym = nice_max(vmax * 1.05), span = t1 > t0 ? t1 - t0 : 1;
	ftd_mbuf_cat(m, "<svg class=\"history-plot\" width=\"%d\" height=\"%d\" role=\"img\"><title>", W, H);
	esc(m, title);
	ftd_mbuf_cat(m, ": GB/s over time, axis from 0</title><text class=\"ptitle\" x=\"0\" y=\"12\"><tspan font-weight=\"bold\">");
	esc(m, title);
	ftd_mbuf_cat(m, "</tspan>, GB/s from 0</text>");
	/* legend: one row, each entry after the previous one's text */
	int lx = 0;
	for (int k = 0; k < ns; k++) {
		ftd_mbuf_cat(m, "<rect x=\"%d\" y=\"24\" width=\"10\" height=\"3\" fill=\"%s\"/>"
			    "<text class=\"legend\" x=\"%d\" y=\"31\">%s</text>",
			 lx, s[k].color, lx + 13, s[k].label);
		lx += 13 + 7 * (int)strlen(s[k].label) + 12;
	}
	int y0 = H - B, y1 = T;
	/* y axis: 0, half, max, in GB/s */
	for (int k = 0; k <= 2; k++) {
		double v = ym * k / 2;
		double y = y0 - (y0 - y1) * k / 2.0;
		ftd_mbuf_cat(m, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>"
			    "<text class=\"ytick\" x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g</text>",
			 L, W - R, y, y, k ? "#eee" : "#999", L - 4, y + 4, v);
	}
	/* x axis: the first and last dates, inward */
	char d0[16], d1[16];
	day(d0, sizeof d0, t0);
	day(d1, sizeof d1, t1);
	ftd_mbuf_cat(m, "<line x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\" stroke=\"#999\"/>"
		    "<text class=\"xtick\" x=\"%d\" y=\"%d\" text-anchor=\"start\">%s</text>",
		 L, L, y1, y0, L, H - 6, d0);
	if (strcmp(d0, d1))
		ftd_mbuf_cat(m, "<text class=\"xtick\" x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>", W - R, H - 6, d1);
	for (int k = 0; k < ns; k++) {
		ftd_mbuf_cat(m, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"", s[k].color);
		for (size_t i = 0; i < n; i++) {
			const json_t *q = json_array_get(hist, i);
			double t = num(q, "epoch");
			double v = s[k].fmt ? num(json_object_get(json_object_get(q, "dtype_kernels"), s[k].fmt), s[k].key)
					    : num(json_object_get(q, "ceilings"), s[k].key);
			if (t > 0 && v > 0)
				ftd_mbuf_cat(m, "%.1f,%.1f ", L + (t - t0) / span * (W - R - L), y0 - v / ym * (y0 - y1));
		}
		ftd_mbuf_cat(m, "\"/>");
		for (size_t i = 0; i < n; i++) {
			const json_t *q = json_array_get(hist, i);
			double t = num(q, "epoch");
			double v = s[k].fmt ? num(json_object_get(json_object_get(q, "dtype_kernels"), s[k].fmt), s[k].key)
					    : num(json_object_get(q, "ceilings"), s[k].key);
			char d[16];
			if (!(t > 0 && v > 0))
				continue;
			day(d, sizeof d, t);
			ftd_mbuf_cat(m, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\"><title>%s %s: %.1f GB/s</title></circle>",
				 L + (t - t0) / span * (W - R - L), y0 - v / ym * (y0 - y1), s[k].color, d, s[k].label, v);
		}
	}
	ftd_mbuf_cat(m, "</svg>");
}

/* The profile's history: the ceilings, then per format its CPU MoE and gather, over time. */
static void render_history(struct ftd_mbuf *m, const char *uuid, const json_t *p)
{
	json_t *hist = ftd_profiles_history(uuid, 0);
	size_t n = json_array_size(hist);
	if (n < 2) {
		ftd_mbuf_cat(m, "<p class=\"muted history-none\">History: %zu stored profile%s.</p>", n, n == 1 ? "" : "s");
		json_decref(hist);
		return;
	}
	ftd_mbuf_cat(m, "<div class=\"history\">");
	const struct hseries ceil[] = {{NULL, "cpu_stream_read_gbs", "CPU read", "#59a14f"},
				       {NULL, "pcie_linear_h2d_gbs", "PCIe H2D", "#e15759"}};
	history_plot(m, hist, "ceilings", ceil, 2);
	const char *fmt;
	json_t *e;
	json_object_foreach(json_object_get(p, "dtype_kernels"), fmt, e) {
		const struct hseries f[] = {{fmt, "cpu_moe_gbs", "CPU MoE", "#4e79a7"},
					    {fmt, "pcie_gather_gbs", "gather", "#f28e2b"}};
		history_plot(m, hist, fmt, f, 2);
	}
	ftd_mbuf_cat(m, "</div>");
	json_decref(hist);
}

/* Two replay coordinates the same: src/replay/ writes cache fractions as computed (0.4 may come
 * as 0.39999999999999997), so equal to a part in a billion. */
static int same(double a, double b)
{
	return fabs(a - b) <= 1e-9;
}

/* A replay point's skew (the schema's replay_point.skew; absent: 0, no popularity skew). */
static double point_skew(const json_t *q)
{
	double k = num(q, "skew");
	return isfinite(k) ? k : 0;
}

/* replay.<fmt> (api/schemas/profile.schema.json replay_block, written by src/replay/): its
 * points[] (cache_fraction, reuse, skew, winner, best_fetch_fraction) as one grid per skew, the
 * winner over cache size x reuse in cells, the best fetch fraction written in each, the block's
 * default_point outlined. Points of another skew at the same cache size and reuse are another
 * workload, so each skew gets its own map (skew 0 first, titled without it). Other fields are
 * ignored; a point without the two coordinates is skipped. */
static void render_replay(struct ftd_mbuf *m, const json_t *p)
{
	const json_t *rp = json_object_get(p, "replay");
	const char *fmt;
	json_t *r;
	int any = 0;
	json_object_foreach((json_t *)rp, fmt, r) {
		const json_t *pts = json_object_get(r, "points");
		const json_t *dp = json_object_get(r, "default_point");
		double dx = num(dp, "cache_fraction"), dy = num(dp, "reuse");
		double skews[16];
		int nsk = 0;
		size_t i;
		json_t *q;
		json_array_foreach(pts, i, q) {
			double k = point_skew(q);
			int seen = 0;
			for (int a = 0; a < nsk; a++)
				seen |= same(skews[a], k);
			if (!seen && nsk < 16)
				skews[nsk++] = k;
		}
		for (int a = 0; a < nsk; a++) /* sort ascending: skew 0 first */
			for (int b = a + 1; b < nsk; b++)
				if (skews[b] < skews[a]) {
					double t = skews[a];
					skews[a] = skews[b];
					skews[b] = t;
				}
		for (int s = 0; s < nsk; s++) {
			double skew = skews[s];
			double xs[32], ys[32];
			int nx = 0, ny = 0;
			json_array_foreach(pts, i, q) {
				double x = num(q, "cache_fraction"), y = num(q, "reuse");
				if (!isfinite(x) || !isfinite(y) || !same(point_skew(q), skew))
					continue;
				int sx = 0, sy = 0;
				for (int k = 0; k < nx; k++)
					sx |= same(xs[k], x);
				for (int k = 0; k < ny; k++)
					sy |= same(ys[k], y);
				if (!sx && nx < 32)
					xs[nx++] = x;
				if (!sy && ny < 32)
					ys[ny++] = y;
			}
			if (!nx || !ny)
				continue;
			for (int a = 0; a < nx; a++) /* sort ascending */
				for (int b = a + 1; b < nx; b++)
					if (xs[b] < xs[a]) {
						double t = xs[a];
						xs[a] = xs[b];
						xs[b] = t;
					}
			for (int a = 0; a < ny; a++)
				for (int b = a + 1; b < ny; b++)
					if (ys[b] < ys[a]) {
						double t = ys[a];
						ys[a] = ys[b];
						ys[b] = t;
					}
			if (!any++)
				ftd_mbuf_cat(m, "<div class=\"replays\">");
			enum { CW = 46, CH = 24, L = 56, T = 44 };
			/* the legend right of the grid; the title's width (about 7 px a character) at least */
			char sk[40] = "";
			if (skew != 0)
				snprintf(sk, sizeof sk, ", skew %g", skew);
			int w = L + nx * CW + 80, h = T + ny * CH + 36, tw = 7 * (int)(strlen(fmt) + strlen(sk) + 36);
			ftd_mbuf_cat(m, "<svg class=\"replay-map\" data-format=\"");
			esc(m, fmt);
			ftd_mbuf_cat(m, "\" data-skew=\"%g\" width=\"%d\" height=\"%d\" role=\"img\"><title>replay ", skew,
				     w < tw ? tw : w, h);
			esc(m, fmt);
			ftd_mbuf_cat(m, "%s: winner by cache fraction and reuse</title><text class=\"ptitle\" x=\"0\" y=\"12\" "
				    "font-weight=\"bold\">replay ", sk);
			esc(m, fmt);
			ftd_mbuf_cat(m, "%s: winner, best fetch fraction</text>", sk);
			ftd_mbuf_cat(m, ""
				    "<text class=\"yunit\" x=\"0\" y=\"%d\">reuse</text>", T - 6);
			json_array_foreach(pts, i, q) {
				double x = num(q, "cache_fraction"), y = num(q, "reuse"), f = num(q, "best_fetch_fraction");
				int cx = -1, cy = -1;
				if (!same(point_skew(q), skew))
					continue;
				for (int k = 0; k < nx; k++)
					if (same(xs[k], x))
						cx = k;
				for (int k = 0; k < ny; k++)
					if (same(ys[k], y))
						cy = k;
				if (cx < 0 || cy < 0)
					continue;
				const char *wn = str(q, "winner") ? str(q, "winner") : "?";
				const char *col = !strcmp(wn, "hybrid") ? "#9db7d5" : !strcmp(wn, "offload") ? "#f7c08a" : "#ddd";
				int px = L + cx * CW, py = T + (ny - 1 - cy) * CH; /* reuse grows upwards */
				int dflt = same(x, dx) && same(y, dy) && skew == 0; /* the default workload: outlined */
				ftd_mbuf_cat(m, "<rect class=\"cell%s\" data-winner=\"", dflt ? " default" : "");
				esc(m, wn);
				ftd_mbuf_cat(m, "\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\" stroke=\"%s\"><title>cache %g, "
					    "reuse %g: ", px, py, CW, CH, col, dflt ? "#000" : "#fff", x, y);
				esc(m, wn);
				if (isfinite(f))
					ftd_mbuf_cat(m, ", best fetch fraction %.2f", f);
				if (dflt)
					ftd_mbuf_cat(m, ", the default workload");
				ftd_mbuf_cat(m, "</title></rect>");
				if (isfinite(f))
					ftd_mbuf_cat(m, "<text class=\"cellv\" x=\"%d\" y=\"%d\" text-anchor=\"middle\">%.2f</text>",
						 px + CW / 2, py + CH / 2 + 4, f);
			}
			for (int k = 0; k < ny; k++)
				ftd_mbuf_cat(m, "<text class=\"ytick\" x=\"%d\" y=\"%d\" text-anchor=\"end\">%g</text>", L - 4,
					 T + (ny - 1 - k) * CH + CH / 2 + 4, ys[k]);
			for (int k = 0; k < nx; k++)
				ftd_mbuf_cat(m, "<text class=\"xtick\" x=\"%d\" y=\"%d\" text-anchor=\"middle\">%g</text>",
					 L + k * CW + CW / 2, T + ny * CH + 14, xs[k]);
			int lg = L + nx * CW + 8;
			ftd_mbuf_cat(m, "<text class=\"xunit\" x=\"%d\" y=\"%d\" text-anchor=\"middle\">cache fraction</text>"
				    "<rect x=\"%d\" y=\"%d\" width=\"9\" height=\"9\" fill=\"#9db7d5\"/>"
				    "<text class=\"legend\" x=\"%d\" y=\"%d\">hybrid</text>"
				    "<rect x=\"%d\" y=\"%d\" width=\"9\" height=\"9\" fill=\"#f7c08a\"/>"
				    "<text class=\"legend\" x=\"%d\" y=\"%d\">offload</text>"
				    "<rect x=\"%d\" y=\"%d\" width=\"9\" height=\"9\" fill=\"#ddd\"/>"
				    "<text class=\"legend\" x=\"%d\" y=\"%d\">tie</text>",
				 L + nx * CW / 2, T + ny * CH + 30, lg, T + 2, lg + 13, T + 10, lg, T + 18, lg + 13, T + 26, lg,
				 T + 34, lg + 13, T + 42);
			ftd_mbuf_cat(m, "</svg>");
		}
	}
	if (any)
		ftd_mbuf_cat(m, "</div>");
}

/* A GPU's short label in the comparison: "#index name", or "host". */
static void gpu_label(struct ftd_mbuf *m, const char *uuid, const json_t *p)
{
	const json_t *gpu = json_object_get(p, "gpu");
	if (!json_is_object(gpu)) {
		ftd_mbuf_cat(m, "host");
		return;
	}
	json_t *ix = json_object_get(gpu, "index");
	if (json_is_integer(ix))
		ftd_mbuf_cat(m, "#%lld ", (long long)json_integer_value(ix));
	/* the uuid's first group tells GPUs apart; the whole one is in the title */
	char head[16];
	snprintf(head, sizeof head, "%.8s", strncmp(uuid, "GPU-", 4) ? uuid : uuid + 4);
	ftd_mbuf_cat(m, "<span class=\"mono\" title=\"");
	esc(m, uuid);
	ftd_mbuf_cat(m, "\">");
	esc(m, head);
	ftd_mbuf_cat(m, "</span>");
}

/* Is the profile stale on this machine (fingerprint)? why filled when so. */
static int profile_stale(const json_t *p, char *why, size_t n)
{
	const json_t *bus = json_object_get(json_object_get(p, "gpu"), "pci_bus_id");
	json_t *now = ftprof_fingerprint_at(NULL, json_is_string(bus) ? json_string_value(bus) : NULL);
	int st = now ? ftprof_fingerprint_compare(json_object_get(p, "fingerprint"), now, why, n) : 0;
	json_decref(now);
	return st == 1;
}

static void render_profile(struct ftd_mbuf *m, const char *uuid, const json_t *p, int open)
{
	const json_t *gpu = json_object_get(p, "gpu");
	ftd_mbuf_cat(m, "<details class=\"profile\" data-uuid=\"");
	esc(m, uuid);
	ftd_mbuf_cat(m, "\"%s><summary><b>", open ? " open" : "");
	esc(m, !json_is_object(gpu) ? "host (no GPU)" : str(gpu, "name") ? str(gpu, "name") : "GPU");
	ftd_mbuf_cat(m, "</b> <span class=\"mono muted\">");
	esc(m, uuid);
	ftd_mbuf_cat(m, "</span> &middot; measured ");
	esc(m, str(p, "timestamp") ? str(p, "timestamp") : "?");
	char why[512];
	if (profile_stale(p, why, sizeof why)) {
		ftd_mbuf_cat(m, " <strong class=\"warn stale\">stale: ");
		esc(m, why);
		ftd_mbuf_cat(m, "</strong>");
	}
	if (json_is_false(json_object_get(p, "valid")))
		ftd_mbuf_cat(m, " <strong class=\"warn invalid\">not valid: its own checks failed</strong>");
	ftd_mbuf_cat(m, "</summary>");
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
	render_replay(m, p);
	render_history(m, uuid, p);
	ftd_mbuf_cat(m, "</details>");
}

/* ---------------------------------------------------------------- comparison of the GPUs */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* The median of the positive values of key over the profiles' dtype_kernels[fmt] (NAN: none). */
static double median_of(json_t *all, const char *fmt, const char *key, int *count)
{
	double v[FTD_PAGE_MAX_PROFILES];
	int n = 0;
	const char *u;
	json_t *p;
	json_object_foreach(all, u, p) {
		double x = num(json_object_get(json_object_get(p, "dtype_kernels"), fmt), key);
		if (x > 0 && n < FTD_PAGE_MAX_PROFILES)
			v[n++] = x;
	}
	*count = n;
	if (!n)
		return NAN;
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* One figure cell: the value, marked as an outlier below FTD_PAGE_OUTLIER x the median of the
 * GPUs (when at least 3 measured it). */
static void figure_cell(struct ftd_mbuf *m, double v, double med, int count)
{
	if (!(v > 0)) {
		ftd_mbuf_cat(m, "<td class=\"num muted\">-</td>");
		return;
	}
	if (count >= 3 && med > 0 && v < FTD_PAGE_OUTLIER * med)
		ftd_mbuf_cat(m, "<td class=\"num outlier\" title=\"%.0f %% of the median of these GPUs (%.1f)\">"
			    "&#9660; %.1f</td>", 100 * v / med, med, v);
	else
		ftd_mbuf_cat(m, "<td class=\"num\">%.1f</td>", v);
}

/* Per format, each GPU's verdict, CPU MoE and gather side by side; a GPU below the others'
 * median is marked, so is a verdict that differs from most GPUs', and the validation's word. */
static void render_compare(struct ftd_mbuf *m, json_t *all, json_t *paths)
{
	json_t *fmts = json_object(); /* the formats of any profile, first seen first */
	const char *u, *f;
	json_t *p, *e;
	json_object_foreach(all, u, p) json_object_foreach(json_object_get(p, "dtype_kernels"), f, e)
		json_object_set_new(fmts, f, json_true());
	ftd_mbuf_cat(m, "<h2>Comparison</h2><p class=\"muted\">Per format, every GPU's last profile: verdict, CPU MoE and "
		    "PCIe gather in GB/s (10<sup>9</sup> B/s). <span class=\"outlier\">&#9660;</span> a figure under %.0f %% of "
		    "the median of these GPUs (3 or more); <span class=\"odd\">verdict</span> one that differs from most; "
		    "&#10003;/&#10007; the validation (engine or replay) agrees/disagrees.</p><div id=\"compare\">",
		 100 * FTD_PAGE_OUTLIER);
	json_object_foreach(fmts, f, e) {
		int nc, ng, nh = 0, no = 0;
		double mc = median_of(all, f, "cpu_moe_gbs", &nc), mg = median_of(all, f, "pcie_gather_gbs", &ng);
		json_object_foreach(all, u, p) {
			const char *v = str(json_object_get(p, "dtypes"), f);
			nh += v && !strcmp(v, "hybrid");
			no += v && !strcmp(v, "offload");
		}
		const char *most = nh > no ? "hybrid" : no > nh ? "offload" : NULL;
		ftd_mbuf_cat(m, "<table class=\"cmp\" data-format=\"");
		esc(m, f);
		ftd_mbuf_cat(m, "\"><caption>");
		esc(m, f);
		ftd_mbuf_cat(m, "</caption><tr><th>GPU</th><th>verdict</th><th>CPU MoE</th><th>gather</th></tr>");
		json_object_foreach(all, u, p) {
			const json_t *k = json_object_get(json_object_get(p, "dtype_kernels"), f);
			const char *v = str(json_object_get(p, "dtypes"), f);
			if (!v || (strcmp(v, "hybrid") && strcmp(v, "offload")))
				v = "unmeasured";
			ftd_mbuf_cat(m, "<tr data-uuid=\"");
			esc(m, u);
			ftd_mbuf_cat(m, "\"><td>");
			gpu_label(m, u, p);
			ftd_mbuf_cat(m, "</td><td class=\"verdict%s\">%s", most && strcmp(v, "unmeasured") && strcmp(v, most)
									? " odd" : "", v);
			const json_t *val = json_object_get(json_object_get(p, "validation"), f);
			json_t *ag = json_object_get(val, "agrees");
			if (json_is_boolean(ag)) {
				/* libftprofile says whether it is current (no engine version to check here) */
				struct ftprof *fp = NULL;
				struct ftprof_validation vv;
				const char *path = str(paths, u);
				int stale = json_is_true(json_object_get(val, "stale")) || !path ||
					    ftprof_load_file(path, &fp, NULL, 0) < 0 || ftprof_validation(fp, f, NULL, &vv) < 0 ||
					    vv.state != FTPROF_VALIDATION_CURRENT;
				ftprof_free(fp);
				ftd_mbuf_cat(m, " <span class=\"val%s\" title=\"", stale ? " muted" : json_is_true(ag) ? "" : " warn");
				esc(m, str(val, "source") ? str(val, "source") : "validation");
				ftd_mbuf_cat(m, ": %s%s\">%s</span>", json_is_true(ag) ? "agrees" : "disagrees",
					 stale ? " (stale, not trusted)" : "", json_is_true(ag) ? "&#10003;" : "&#10007;");
			}
			ftd_mbuf_cat(m, "</td>");
			figure_cell(m, num(k, "cpu_moe_gbs"), mc, nc);
			figure_cell(m, num(k, "pcie_gather_gbs"), mg, ng);
			ftd_mbuf_cat(m, "</tr>");
		}
		ftd_mbuf_cat(m, "</table>");
	}
	ftd_mbuf_cat(m, "</div>");
	json_decref(fmts);
}

/* ctx: {"profiles": {uuid: profile}, "paths": {uuid: file}} */
static void collect(const char *uuid, json_t *p, const char *path, void *ctx)
{
	json_t *all = json_object_get(ctx, "profiles");
	if (json_object_size(all) < FTD_PAGE_MAX_PROFILES) {
		json_object_set(all, uuid, p);
		json_object_set_new(json_object_get(ctx, "paths"), uuid, json_string(path));
	}
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
	json_t *ctx = json_pack("{s:o,s:o}", "profiles", json_object(), "paths", json_object());
	ftd_profiles_each(collect, ctx);
	json_t *all = json_object_get(ctx, "profiles");
	if (json_object_size(all) > 1)
		render_compare(m, all, json_object_get(ctx, "paths"));
	ftd_mbuf_cat(m, "<h2>Profiles</h2>");
	if (!json_object_size(all))
		ftd_mbuf_cat(m, "<p id=\"no-profiles\" class=\"muted\">No profile yet: run a <code>bw</code> job.</p>");
	else if (json_object_size(all) > 1)
		ftd_mbuf_cat(m, "<p class=\"muted\">Each GPU's profile in detail (click to unfold): bars per format, "
			    "ceilings, the replay map where there is one, and the history.</p>");
	const char *u;
	json_t *p;
	json_object_foreach(all, u, p)
		render_profile(m, u, p, json_object_size(all) == 1);
	json_decref(ctx);
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
