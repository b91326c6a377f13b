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
#include "page_profile.h"

#include "daemon.h"
#include "ftprofile.h"
#include "profiles.h"
#include "util/timeutil.h"

#define RECENT_JOBS 20
#define FTD_PAGE_MAX_PROFILES 64 /* GPUs drawn on the page */
#define FTD_PAGE_OUTLIER 0.85    /* a figure under this share of the GPUs' median is marked */

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
		ftd_mbuf_html(m, *ftd.gpus_reason ? ftd.gpus_reason : "none found");
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
		ftd_mbuf_html(m, g->uuid);
		ftd_mbuf_cat(m, "\"><td>%d</td><td>", g->index);
		ftd_mbuf_html(m, g->name);
		ftd_mbuf_cat(m, "</td><td class=\"mono\">");
		ftd_mbuf_html(m, g->uuid);
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
		ftd_mbuf_html(m, j->prog_label);
		ftd_mbuf_cat(m, "</span></td><td>");
		when(m, j->created);
		ftd_mbuf_cat(m, "</td><td>");
		if (ftd_job_duration(j) >= 0)
			ftd_mbuf_cat(m, "%.1f s", ftd_job_duration(j));
		ftd_mbuf_cat(m, "</td><td class=\"warn\">");
		ftd_mbuf_html(m, j->error);
		if (j->error_detail) {
			/* every reason, one a line */
			ftd_mbuf_cat(m, "<details class=\"reasons\"><summary>all reasons</summary><pre>");
			ftd_mbuf_html(m, j->error_detail);
			ftd_mbuf_cat(m, "</pre></details>");
		}
		ftd_mbuf_cat(m, "</td></tr>");
	}
	ftd_mbuf_cat(m, "</table>");
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
		double x = ftd_page_num(json_object_get(json_object_get(p, "dtype_kernels"), fmt), key);
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
			const char *v = ftd_page_str(json_object_get(p, "dtypes"), f);
			nh += v && !strcmp(v, "hybrid");
			no += v && !strcmp(v, "offload");
		}
		const char *most = nh > no ? "hybrid" : no > nh ? "offload" : NULL;
		ftd_mbuf_cat(m, "<table class=\"cmp\" data-format=\"");
		ftd_mbuf_html(m, f);
		ftd_mbuf_cat(m, "\"><caption>");
		ftd_mbuf_html(m, f);
		ftd_mbuf_cat(m, "</caption><tr><th>GPU</th><th>verdict</th><th>CPU MoE</th><th>gather</th></tr>");
		json_object_foreach(all, u, p) {
			const json_t *k = json_object_get(json_object_get(p, "dtype_kernels"), f);
			const char *v = ftd_page_str(json_object_get(p, "dtypes"), f);
			if (!v || (strcmp(v, "hybrid") && strcmp(v, "offload")))
				v = "unmeasured";
			ftd_mbuf_cat(m, "<tr data-uuid=\"");
			ftd_mbuf_html(m, u);
			ftd_mbuf_cat(m, "\"><td>");
			ftd_page_gpu_label(m, u, p);
			ftd_mbuf_cat(m, "</td><td class=\"verdict%s\">%s", most && strcmp(v, "unmeasured") && strcmp(v, most)
									? " odd" : "", v);
			const json_t *val = json_object_get(json_object_get(p, "validation"), f);
			json_t *ag = json_object_get(val, "agrees");
			if (json_is_boolean(ag)) {
				/* libftprofile says whether it is current (no engine version to check here) */
				struct ftprof *fp = NULL;
				struct ftprof_validation vv;
				const char *path = ftd_page_str(paths, u);
				int stale = json_is_true(json_object_get(val, "stale")) || !path ||
					    ftprof_load_file(path, &fp, NULL, 0) < 0 || ftprof_validation(fp, f, NULL, &vv) < 0 ||
					    vv.state != FTPROF_VALIDATION_CURRENT;
				ftprof_free(fp);
				ftd_mbuf_cat(m, " <span class=\"val%s\" title=\"", stale ? " muted" : json_is_true(ag) ? "" : " warn");
				ftd_mbuf_html(m, ftd_page_str(val, "source") ? ftd_page_str(val, "source") : "validation");
				ftd_mbuf_cat(m, ": %s", json_is_true(ag) ? "agrees" : "disagrees");
				/* judged by the verdict for the run's workload, which may not be the one shown */
				const json_t *vp = json_object_get(val, "verdict_point");
				if (json_is_object(vp) && ftd_page_str(val, "verdict")) {
					ftd_mbuf_cat(m, " with ");
					ftd_mbuf_html(m, ftd_page_str(val, "verdict"));
					ftd_mbuf_cat(m, " at cache %.2f, reuse %.2f", ftd_page_num(vp, "cache_fraction"),
						     ftd_page_num(vp, "reuse"));
				}
				ftd_mbuf_cat(m, "%s\">%s</span>", stale ? " (stale, not trusted)" : "",
					     json_is_true(ag) ? "&#10003;" : "&#10007;");
			}
			ftd_mbuf_cat(m, "</td>");
			figure_cell(m, ftd_page_num(k, "cpu_moe_gbs"), mc, nc);
			figure_cell(m, ftd_page_num(k, "pcie_gather_gbs"), mg, ng);
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
	ftd_mbuf_html(m, ftd_page_str(cfg, "model") ? ftd_page_str(cfg, "model") : "?");
	ftd_mbuf_cat(m, " ");
	ftd_mbuf_html(m, ftd_page_str(cfg, "format") ? ftd_page_str(cfg, "format") : "");
	ftd_mbuf_cat(m, ", GB/s of ensure + copy over the miss rate, one line per batch size.</p>");
	double ymax = 0;
	long bss[16];
	int nbs = 0;
	size_t i;
	json_t *r;
	json_array_foreach(rows, i, r) {
		double g = ftd_page_num(r, "bw_GBps");
		long bs = (long)ftd_page_num(r, "bs");
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
			if ((long)ftd_page_num(r, "bs") == bss[k] && ftd_page_num(r, "bw_GBps") >= 0)
				ftd_mbuf_cat(m, "%.1f,%.1f ", X0 + ftd_page_num(r, "miss_rate") * W,
					 H + 10 - ftd_page_num(r, "bw_GBps") / ymax * (H - 10));
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
		ftd_page_profile(m, u, p, json_object_size(all) == 1);
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
