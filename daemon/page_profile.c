/* page_profile: see page_profile.h. */
#include "page_profile.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ftprofile.h"
#include "profiles.h"

double ftd_page_num(const json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	return json_is_number(v) ? json_number_value(v) : NAN;
}

const char *ftd_page_str(const json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	return json_is_string(v) ? json_string_value(v) : NULL;
}

/* The larger of the figures (and their spreads' max) a format row draws: the bars' scale. */
static double entry_max(const json_t *e)
{
	static const char *const k[] = {"cpu_moe_gbs", "pcie_gather_gbs"};
	double mx = 0;
	for (int i = 0; i < 2; i++) {
		double v = ftd_page_num(e, k[i]);
		char sk[64];
		snprintf(sk, sizeof sk, "%s_spread", k[i]);
		double s = ftd_page_num(json_object_get(e, sk), "max");
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
	double v = ftd_page_num(e, key);
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
	double lo = ftd_page_num(sp, "min"), hi = ftd_page_num(sp, "max");
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
	double co = ftd_page_num(e, "cpu_moe_overlap_gbs"), po = ftd_page_num(e, "pcie_gather_overlap_gbs");
	double c = ftd_page_num(e, "cpu_moe_gbs"), p = ftd_page_num(e, "pcie_gather_gbs");
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
	double thr = ftd_page_num(p, "threshold");
	if (!json_is_object(kern) || !json_object_size(kern)) {
		ftd_mbuf_cat(m, "<p class=\"muted\">No per-format figures in this profile.</p>");
		return;
	}
	enum { X0 = 130, W = 420, ROW = 64, CROW = 40 };
	double scale = 0;
	const char *fmt;
	json_t *e;
	json_object_foreach((json_t *)kern, fmt, e) {
		double mx = entry_max(e), g = ftd_page_num(e, "pcie_gather_gbs");
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
		ftd_mbuf_html(m, fmt);
		ftd_mbuf_cat(m, "\"><text x=\"0\" y=\"%d\" font-weight=\"bold\">", y + 11);
		ftd_mbuf_html(m, fmt);
		ftd_mbuf_cat(m, "</text>");
		/* alone (the seed's figures), then every engine at once when the run measured that */
		const json_t *cb = json_object_get(e, "concurrent");
		int engines = (int)ftd_page_num(cb, "engines");
		char lc[48], lg[48];
		snprintf(lc, sizeof lc, "CPU MoE, %d at once", engines > 0 ? engines : 0);
		snprintf(lg, sizeof lg, "gather, %d at once", engines > 0 ? engines : 0);
		for (int k = 0; k < (json_is_object(cb) ? 2 : 1); k++) {
			const json_t *src = k ? cb : e;
			int y0 = y + 16 + k * CROW;
			bar(m, src, "cpu_moe_gbs", k ? lc : "CPU MoE", k ? "#9db7d5" : "#4e79a7", X0, y0, W, scale);
			bar(m, src, "pcie_gather_gbs", k ? lg : "PCIe gather", k ? "#f7c08a" : "#f28e2b", X0, y0 + 18, W,
			    scale);
			double g = ftd_page_num(src, "pcie_gather_gbs");
			if (thr > 0 && g > 0) {
				double x = X0 + thr * g / scale * W;
				ftd_mbuf_cat(m, "<line class=\"threshold\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" "
					    "stroke=\"#b3261e\" stroke-dasharray=\"4 3\"><title>threshold %.2f x gather = %.1f "
					    "GB/s: hybrid beyond</title></line>",
					 x, x, y0 - 3, y0 + 17, thr, thr * g);
			}
			const char *rec = ftd_page_str(src, k ? "recommended" : "recommended_isolated");
			if (!rec && !k)
				rec = ftd_page_str(e, "recommended");
			double f = k ? ftd_page_num(cb, "fetch_fraction") : fetch_fraction(e), r = ftd_page_num(src, "ratio");
			ftd_mbuf_cat(m, "<text x=\"%d\" y=\"%d\" class=\"verdict\">", X0 + W + 60, y0 + 11);
			ftd_mbuf_html(m, rec ? rec : "unmeasured");
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
	const char *dep = ftd_page_str(p, "deployment");
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
		double v = ftd_page_num(c, k[i][0]);
		char sk[64];
		snprintf(sk, sizeof sk, "%s_spread", k[i][0]);
		const json_t *sp = json_object_get(c, sk);
		ftd_mbuf_cat(m, "<tr><td>%s</td><td>", k[i][1]);
		if (v > 0)
			ftd_mbuf_cat(m, "%.1f", v);
		else
			ftd_mbuf_cat(m, "<span class=\"muted\">-</span>");
		ftd_mbuf_cat(m, "</td><td>");
		if (ftd_page_num(sp, "min") > 0)
			ftd_mbuf_cat(m, "%.1f-%.1f (%d samples)", ftd_page_num(sp, "min"), ftd_page_num(sp, "max"), (int)ftd_page_num(sp, "samples"));
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
		double t = ftd_page_num(q, "epoch");
		if (!(t > 0))
			continue;
		t0 = t < t0 ? t : t0;
		t1 = t > t1 ? t : t1;
		for (int k = 0; k < ns; k++) {
			double v = s[k].fmt ? ftd_page_num(json_object_get(json_object_get(q, "dtype_kernels"), s[k].fmt), s[k].key)
					    : ftd_page_num(json_object_get(q, "ceilings"), s[k].key);
			vmax = v > vmax ? v : vmax;
		}
	}
	if (!(vmax > 0) || !(t1 >= t0))
		return;
	double ym = nice_max(vmax * 1.05), span = t1 > t0 ? t1 - t0 : 1;
	ftd_mbuf_cat(m, "<svg class=\"history-plot\" width=\"%d\" height=\"%d\" role=\"img\"><title>", W, H);
	ftd_mbuf_html(m, title);
	ftd_mbuf_cat(m, ": GB/s over time, axis from 0</title><text class=\"ptitle\" x=\"0\" y=\"12\"><tspan font-weight=\"bold\">");
	ftd_mbuf_html(m, title);
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
			double t = ftd_page_num(q, "epoch");
			double v = s[k].fmt ? ftd_page_num(json_object_get(json_object_get(q, "dtype_kernels"), s[k].fmt), s[k].key)
					    : ftd_page_num(json_object_get(q, "ceilings"), s[k].key);
			if (t > 0 && v > 0)
				ftd_mbuf_cat(m, "%.1f,%.1f ", L + (t - t0) / span * (W - R - L), y0 - v / ym * (y0 - y1));
		}
		ftd_mbuf_cat(m, "\"/>");
		for (size_t i = 0; i < n; i++) {
			const json_t *q = json_array_get(hist, i);
			double t = ftd_page_num(q, "epoch");
			double v = s[k].fmt ? ftd_page_num(json_object_get(json_object_get(q, "dtype_kernels"), s[k].fmt), s[k].key)
					    : ftd_page_num(json_object_get(q, "ceilings"), s[k].key);
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
	double k = ftd_page_num(q, "skew");
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
		double dx = ftd_page_num(dp, "cache_fraction"), dy = ftd_page_num(dp, "reuse");
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
				double x = ftd_page_num(q, "cache_fraction"), y = ftd_page_num(q, "reuse");
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
			ftd_mbuf_html(m, fmt);
			ftd_mbuf_cat(m, "\" data-skew=\"%g\" width=\"%d\" height=\"%d\" role=\"img\"><title>replay ", skew,
				     w < tw ? tw : w, h);
			ftd_mbuf_html(m, fmt);
			ftd_mbuf_cat(m, "%s: winner by cache fraction and reuse</title><text class=\"ptitle\" x=\"0\" y=\"12\" "
				    "font-weight=\"bold\">replay ", sk);
			ftd_mbuf_html(m, fmt);
			ftd_mbuf_cat(m, "%s: winner, best fetch fraction</text>", sk);
			ftd_mbuf_cat(m, ""
				    "<text class=\"yunit\" x=\"0\" y=\"%d\">reuse</text>", T - 6);
			json_array_foreach(pts, i, q) {
				double x = ftd_page_num(q, "cache_fraction"), y = ftd_page_num(q, "reuse"), f = ftd_page_num(q, "best_fetch_fraction");
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
				const char *wn = ftd_page_str(q, "winner") ? ftd_page_str(q, "winner") : "?";
				const char *col = !strcmp(wn, "hybrid") ? "#9db7d5" : !strcmp(wn, "offload") ? "#f7c08a" : "#ddd";
				int px = L + cx * CW, py = T + (ny - 1 - cy) * CH; /* reuse grows upwards */
				int dflt = same(x, dx) && same(y, dy) && skew == 0; /* the default workload: outlined */
				ftd_mbuf_cat(m, "<rect class=\"cell%s\" data-winner=\"", dflt ? " default" : "");
				ftd_mbuf_html(m, wn);
				ftd_mbuf_cat(m, "\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\" stroke=\"%s\"><title>cache %g, "
					    "reuse %g: ", px, py, CW, CH, col, dflt ? "#000" : "#fff", x, y);
				ftd_mbuf_html(m, wn);
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
void ftd_page_gpu_label(struct ftd_mbuf *m, const char *uuid, const json_t *p)
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
	ftd_mbuf_html(m, uuid);
	ftd_mbuf_cat(m, "\">");
	ftd_mbuf_html(m, head);
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

void ftd_page_profile(struct ftd_mbuf *m, const char *uuid, const json_t *p, int open)
{
	const json_t *gpu = json_object_get(p, "gpu");
	ftd_mbuf_cat(m, "<details class=\"profile\" data-uuid=\"");
	ftd_mbuf_html(m, uuid);
	ftd_mbuf_cat(m, "\"%s><summary><b>", open ? " open" : "");
	ftd_mbuf_html(m, !json_is_object(gpu) ? "host (no GPU)" : ftd_page_str(gpu, "name") ? ftd_page_str(gpu, "name") : "GPU");
	ftd_mbuf_cat(m, "</b> <span class=\"mono muted\">");
	ftd_mbuf_html(m, uuid);
	ftd_mbuf_cat(m, "</span> &middot; measured ");
	ftd_mbuf_html(m, ftd_page_str(p, "timestamp") ? ftd_page_str(p, "timestamp") : "?");
	char why[512];
	if (profile_stale(p, why, sizeof why)) {
		ftd_mbuf_cat(m, " <strong class=\"warn stale\">stale: ");
		ftd_mbuf_html(m, why);
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
			ftd_mbuf_html(m, json_string_value(w));
			ftd_mbuf_cat(m, "</p>");
		}
	render_formats(m, p);
	render_ceilings(m, p);
	render_replay(m, p);
	render_history(m, uuid, p);
	ftd_mbuf_cat(m, "</details>");
}

