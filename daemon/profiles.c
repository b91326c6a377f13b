/* profiles: the profile store; see profiles.h. */
#include <errno.h>
#include <math.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "profiles.h"

#include "daemon.h"
#include "mbuf.h"
#include "ftprofile.h"
#include "log.h"
#include "util/fsutil.h"
#include "util/timeutil.h"

/* A metric label value: the characters of a profile file name (no quote, backslash or newline). */
static int label_ok(const char *s)
{
	if (!*s)
		return 0;
	for (const char *p = s; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' ||
		      *p == '_' || *p == '.' || *p == ':'))
			return 0;
	return 1;
}

int ftd_profiles_store(const json_t *profile, const char *uuid, char **path_out)
{
	char path[4096];
	int r = ftprof_store_settle(ftd.profile_dir, profile, uuid, (int)ftd.cfg.history, ftd.cfg.drift_pct / 100.0,
				    path, sizeof path);
	if (r < 0)
		return r;
	int w;
	if (r == 0 && (w = ftd_profiles_nfd_write()) < 0)
		ftd_log(FTD_LOG_WARNING, "nfd-features-file %s: %s", ftd.cfg.nfd_file, strerror(-w));
	*path_out = strdup(path);
	return *path_out ? r : -ENOMEM;
}

int ftd_profiles_legacy(const json_t *profile, const char *stored, char *msg, size_t n)
{
	char lp[4096];
	enum ftprof_legacy what;
	msg[0] = '\0';
	if (!ftd.cfg.bw_legacy_copy)
		return 0;
	int r = ftprof_legacy_settle(profile, stored, ftd.ngpus, &what, lp, sizeof lp);
	if (r < 0)
		snprintf(msg, n, "the legacy copy %s could not be written: %s", lp, strerror(-r));
	else if (what == FTPROF_LEGACY_WRITTEN)
		snprintf(msg, n, "legacy copy: %s", lp);
	else if (what == FTPROF_LEGACY_MANY_GPUS)
		snprintf(msg, n, "this host has %d GPUs: the legacy single file %s is not written", ftd.ngpus, lp);
	return r;
}

static const char *verdict_of(json_t *v);

/* ---------------------------------------------------------------- node-feature-discovery
 *
 * The local feature file nfd-worker reads (its "local" source, as node-feature-discovery's
 * customization guide describes it): `<namespace>/<name>=<value>` lines, `#` comments, the
 * `# +expiry-time=<RFC 3339>` directive that applies to the lines after it (a later line of the
 * same name wins), dot files skipped, 64 kB at most. All labels are under NFD_NS:
 *   ftbenchd/profiles=N                       stored profiles on this host
 *   ftbenchd/<fmt>.verdict=V                  hybrid|offload over the host's GPUs; mixed when
 *                                             they differ; unmeasured (never offload) when none
 *                                             measured it
 *   ftbenchd/<fmt>.cpu-moe-mbps, .gather-mbps the format's figures in MB/s (integers, so a
 *                                             NodeFeatureRule can match Gt/Lt), the host's worst
 *   ftbenchd/<fmt>.fetch-us, .cpu-us          one expert over PCIe / on the CPU, microseconds
 *   ftbenchd/pcie-h2d-mbps, pcie-d2h-mbps, cpu-read-mbps   ceilings, the worst GPU's
 *   ftbenchd/profile-age=lt-1d|lt-7d|lt-<max>d|expired|none   by the oldest profile
 * Everything but profile-age=expired sits after `# +expiry-time=<oldest + profile-max-age>`, so
 * a node whose daemon stopped loses its verdicts when they are too old; profile-age's buckets
 * are later lines with earlier expiries, so the bucket advances without a rewrite. */
#define NFD_NS "ftbenchd"
#define NFD_MAX_BYTES 65536

/* A label name part NFD (Kubernetes) accepts: [A-Za-z0-9._-], at most 63 characters, starting
 * and ending with an alphanumeric. */
static int nfd_name_ok(const char *s)
{
	size_t l = strlen(s);
	if (l == 0 || l > 63)
		return 0;
	for (size_t i = 0; i < l; i++) {
		char c = s[i];
		int an = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
		if (!an && ((c != '.' && c != '_' && c != '-') || i == 0 || i == l - 1))
			return 0;
	}
	return 1;
}

/* min of acc[key] and x (x a finite positive number), kept as a JSON real */
static void keep_min(json_t *acc, const char *key, double x)
{
	if (!(x > 0) || x > 1e15)
		return;
	json_t *had = json_object_get(acc, key);
	if (!json_is_number(had) || x < json_number_value(had))
		json_object_set_new(acc, key, json_real(x));
}

struct nfd_acc {
	json_t *verdicts; /* fmt -> hybrid|offload|mixed|unmeasured */
	json_t *mins;     /* label name -> the host's lowest figure (MB/s, or us for the -us ones: highest) */
	int n;
	double oldest;    /* epoch of the oldest profile, 0 none */
};

static void nfd_one(const char *uuid, json_t *p, const char *path, void *ctx)
{
	(void)uuid;
	(void)path;
	struct nfd_acc *a = ctx;
	const char *k;
	json_t *v;
	a->n++;
	json_t *ep = json_object_get(p, "epoch");
	if (json_is_number(ep) && (a->oldest == 0 || json_number_value(ep) < a->oldest))
		a->oldest = json_number_value(ep);
	json_object_foreach(json_object_get(p, "dtypes"), k, v) {
		const char *verdict = verdict_of(v);
		if (!verdict)
			verdict = "unmeasured";
		const char *had = json_string_value(json_object_get(a->verdicts, k));
		json_object_set_new(a->verdicts, k, json_string(had && strcmp(had, verdict) ? "mixed" : verdict));
	}
	char name[256];
	json_object_foreach(json_object_get(p, "dtype_kernels"), k, v) {
		double cpu = json_number_value(json_object_get(v, "cpu_moe_gbs"));
		double gat = json_number_value(json_object_get(v, "pcie_gather_gbs"));
		double eb = json_number_value(json_object_get(v, "expert_bytes"));
		snprintf(name, sizeof name, "%s.cpu-moe-mbps", k);
		keep_min(a->mins, name, cpu * 1000);
		snprintf(name, sizeof name, "%s.gather-mbps", k);
		keep_min(a->mins, name, gat * 1000);
		/* microseconds per expert: the worst is the largest, so what is kept (as the
		 * minimum) is its inverse, GB/s per byte, turned into us when written */
		snprintf(name, sizeof name, "%s.fetch-us", k);
		if (eb > 0 && gat > 0)
			keep_min(a->mins, name, gat / eb);
		snprintf(name, sizeof name, "%s.cpu-us", k);
		if (eb > 0 && cpu > 0)
			keep_min(a->mins, name, cpu / eb);
	}
	static const char *const ceil[][2] = {{"pcie_linear_h2d_gbs", "pcie-h2d-mbps"},
					      {"pcie_linear_d2h_gbs", "pcie-d2h-mbps"},
					      {"cpu_stream_read_gbs", "cpu-read-mbps"}};
	for (size_t i = 0; i < sizeof ceil / sizeof *ceil; i++)
		keep_min(a->mins, ceil[i][1], json_number_value(json_object_get(json_object_get(p, "ceilings"), ceil[i][0])) * 1000);
}

/* RFC 3339 UTC of epoch t into b. */
static void rfc3339(double t, char *b, size_t n)
{
	time_t s = (time_t)t;
	struct tm tm;
	gmtime_r(&s, &tm);
	strftime(b, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

int ftd_profiles_nfd_text(struct ftd_mbuf *m)
{
	long max_age = ftd_config_max_age_s(ftd.cfg.profile_max_age);
	if (max_age <= 0)
		return -EINVAL;
	struct nfd_acc a = {.verdicts = json_object(), .mins = json_object()};
	if (!a.verdicts || !a.mins) {
		json_decref(a.verdicts);
		json_decref(a.mins);
		return -ENOMEM;
	}
	ftd_profiles_each(nfd_one, &a);
	char t[64];
	ftd_mbuf_cat(m, "# Written by ftbenchd from the profiles in %s (node-feature-discovery local source).\n"
		     "# Do not edit: rewritten at start and after every profile. MB/s and us figures are\n"
		     "# the host's worst GPU; <format>.verdict is mixed when its GPUs differ, unmeasured (never\n"
		     "# offload) when none measured the format. Labels expire with the oldest profile.\n",
		 ftd.profile_dir);
	if (a.n == 0 || a.oldest <= 0) {
		ftd_mbuf_cat(m, NFD_NS "/profiles=%d\n" NFD_NS "/profile-age=none\n", a.n);
		goto out;
	}
	/* before any directive: never expires, and is overridden below until the limit */
	ftd_mbuf_cat(m, NFD_NS "/profile-age=expired\n");
	rfc3339(a.oldest + (double)max_age, t, sizeof t);
	ftd_mbuf_cat(m, "# +expiry-time=%s\n", t);
	ftd_mbuf_cat(m, NFD_NS "/profiles=%d\n", a.n);
	const char *k;
	json_t *v;
	json_object_foreach(a.verdicts, k, v) {
		char name[128];
		snprintf(name, sizeof name, "%s.verdict", k);
		if (nfd_name_ok(name))
			ftd_mbuf_cat(m, NFD_NS "/%s=%s\n", name, json_string_value(v));
	}
	json_object_foreach(a.mins, k, v) {
		double x = json_number_value(v);
		size_t l = strlen(k);
		if (l > 3 && !strcmp(k + l - 3, "-us"))
			x = 1e-3 / x; /* x in GB/s per byte: bytes / (x_gbs * 1e9) s = 1e-3 / x us */
		long long iv = llround(x);
		if (nfd_name_ok(k) && iv > 0)
			ftd_mbuf_cat(m, NFD_NS "/%s=%lld\n", k, iv);
	}
	/* the age buckets: later lines win while they have not expired */
	char lim[32];
	snprintf(lim, sizeof lim, "lt-%ldd", (max_age + 86399) / 86400);
	ftd_mbuf_cat(m, NFD_NS "/profile-age=%s\n", lim);
	static const long bucket[] = {7 * 86400, 86400};
	static const char *const bname[] = {"lt-7d", "lt-1d"};
	for (int i = 0; i < 2; i++) {
		if (bucket[i] >= max_age)
			continue;
		rfc3339(a.oldest + (double)bucket[i], t, sizeof t);
		ftd_mbuf_cat(m, "# +expiry-time=%s\n" NFD_NS "/profile-age=%s\n", t, bname[i]);
	}
out:
	json_decref(a.verdicts);
	json_decref(a.mins);
	return m->len > NFD_MAX_BYTES ? -EFBIG : 0;
}

int ftd_profiles_nfd_write(void)
{
	if (!ftd.cfg.nfd_file || !*ftd.cfg.nfd_file)
		return 0;
	struct ftd_mbuf m = {.cap = 1024};
	if (!(m.buf = malloc(m.cap)))
		return -ENOMEM;
	m.buf[0] = '\0';
	int r = ftd_profiles_nfd_text(&m);
	char dir[4096];
	ftfs_dirname(ftd.cfg.nfd_file, dir, sizeof dir);
	if (r == 0)
		r = ftfs_mkdir_p(dir, 0755);
	/* hidden temporary (.NAME.tmp.XXXXXX): nfd-worker skips dot files, so it never reads a half
	 * written file nor a temporary a crash left */
	if (r == 0)
		r = ftfs_write_atomic_hidden(ftd.cfg.nfd_file, m.buf, m.len, 0644);
	free(m.buf);
	return r;
}

int ftd_profiles_nfd_start(void)
{
	if (!ftd.cfg.nfd_file || !*ftd.cfg.nfd_file)
		return 0;
	int k = ftfs_sweep_temps_of(ftd.cfg.nfd_file);
	if (k > 0)
		ftd_log(FTD_LOG_NOTICE, "removed %d stale temporary file(s) of %s", k, ftd.cfg.nfd_file);
	return ftd_profiles_nfd_write();
}

json_t *ftd_profiles_load(const char *path)
{
	char *text;
	size_t len;
	if (ftfs_read_regular(path, FTPROF_MAX_FILE_BYTES, &text, &len) < 0)
		return NULL;
	json_t *j = json_loadb(text, len, 0, NULL);
	free(text);
	return j;
}

int ftd_profiles_read(const char *uuid, char **text, size_t *len)
{
	char path[4096];
	if (!uuid || !*uuid)
		return -EINVAL;
	int r = ftprof_store_file(ftd.profile_dir, uuid, path, sizeof path);
	if (r < 0)
		return r;
	return ftfs_read_regular(path, FTPROF_MAX_FILE_BYTES, text, len);
}

json_t *ftd_profiles_history(const char *uuid, int limit)
{
	json_t *arr = NULL;
	if (ftprof_history_load(ftd.profile_dir, strcmp(uuid, "host") ? uuid : NULL, limit, &arr) < 0)
		return json_array();
	return arr;
}

int ftd_profiles_corrupt(const char *text, size_t len, char *why, size_t n)
{
	json_error_t je;
	json_t *p = json_loadb(text, len, 0, &je);
	int bad = !json_is_object(p);
	if (!p)
		snprintf(why, n, "not JSON (line %d: %s)", je.line, je.text);
	else if (bad)
		snprintf(why, n, "JSON, but not an object");
	json_decref(p);
	return bad;
}

/* Each stored file: fn for a profile (uuid or "host", parsed JSON, path), bad (may be NULL) for a
 * file that is not one (why); files whose name is not a GPU uuid are skipped. */
static void each_file(void (*fn)(const char *uuid, json_t *p, const char *path, void *ctx),
		      void (*bad)(const char *uuid, const char *path, const char *why, void *ctx), void *ctx)
{
	struct ftprof_entry *e;
	char check[4096], why[200];
	int n;
	if (ftprof_store_list(ftd.profile_dir, &e, &n) < 0)
		return;
	for (int i = 0; i < n; i++) {
		if (ftprof_store_file(ftd.profile_dir, e[i].name, check, sizeof check) < 0)
			continue;
		char *text = NULL;
		size_t len = 0;
		int r = ftfs_read_regular(e[i].path, FTPROF_MAX_FILE_BYTES, &text, &len);
		if (r == -EINVAL || r == -EFBIG) { /* a FIFO, a directory, a huge file: never read */
			if (bad)
				bad(e[i].name, e[i].path, r == -EFBIG ? "larger than a profile can be" : "not a regular file", ctx);
			continue;
		}
		if (r < 0)
			continue; /* gone since the listing */
		json_t *p = json_loadb(text, len, 0, NULL);
		if (json_is_object(p))
			fn(e[i].name, p, e[i].path, ctx);
		else if (bad && ftd_profiles_corrupt(text, len, why, sizeof why))
			bad(e[i].name, e[i].path, why, ctx);
		json_decref(p);
		free(text);
	}
	free(e);
}

void ftd_profiles_each(void (*fn)(const char *uuid, json_t *p, const char *path, void *ctx), void *ctx)
{
	each_file(fn, NULL, ctx);
}

static void list_one(const char *uuid, json_t *p, const char *path, void *ctx)
{
	json_t *arr = ctx;
	json_t *gpu = json_object_get(p, "gpu");
	json_t *dt = json_object_get(p, "dtypes");
	json_array_append_new(arr, json_pack("{s:s,s:s,s:O,s:O,s:O}", "uuid", uuid, "path", path, "timestamp",
					     json_is_string(json_object_get(p, "timestamp"))
						     ? json_object_get(p, "timestamp") : json_null(),
					     "gpu_name",
					     json_is_string(json_object_get(gpu, "name")) ? json_object_get(gpu, "name")
											   : json_null(),
					     "dtypes", json_is_object(dt) ? dt : json_null()));
}

/* A stored file that is not a profile is listed as such (never left out in silence). */
static void list_corrupt(const char *uuid, const char *path, const char *why, void *ctx)
{
	json_array_append_new(ctx, json_pack("{s:s,s:s,s:n,s:n,s:n,s:s}", "uuid", uuid, "path", path, "timestamp",
					     "gpu_name", "dtypes", "corrupt", why));
}

json_t *ftd_profiles_list(void)
{
	json_t *arr = json_array();
	each_file(list_one, list_corrupt, arr);
	return json_pack("{s:s,s:o}", "dir", ftd.profile_dir, "profiles", arr);
}

/* ---------------------------------------------------------------- /metrics */

/* Append s as a Prometheus label value (backslash, quote and newline escaped). */
static void label_value(struct ftd_mbuf *m, const char *s)
{
	for (const char *p = s; *p; p++) {
		if (*p == '\\' || *p == '"')
			ftd_mbuf_cat(m, "\\%c", *p);
		else if (*p == '\n')
			ftd_mbuf_cat(m, "\\n");
		else
			ftd_mbuf_cat(m, "%c", *p);
	}
}

/* One stored profile as /metrics sees it: p NULL when the file does not parse as an object. */
struct met_prof {
	char uuid[128];
	json_t *p;
	struct ftprof *fp; /* the same file as libftprofile reads it (NULL when it does not) */
	char *id; /* the identity labels: gpu="<uuid>|host",model_name="…",hostname="…",cpu_model="…" */
};

/* The node name the samples carry (hostname; Hostname in ftbenchd_gpu_info), as dcgm-exporter does: NODE_NAME (Kubernetes'
 * downward API) when set, else the host name. */
static void node_name(char *b, size_t n)
{
	const char *e = getenv("NODE_NAME");
	if (e && *e)
		snprintf(b, n, "%s", e);
	else if (gethostname(b, n) < 0)
		snprintf(b, n, "unknown");
	b[n - 1] = '\0';
}

static char *id_labels(const char *uuid, const json_t *p, const char *host)
{
	struct ftd_mbuf m = {.cap = 256};
	if (!(m.buf = malloc(m.cap)))
		return NULL;
	m.buf[0] = '\0';
	const char *model = json_string_value(json_object_get(json_object_get(p, "gpu"), "name"));
	const char *cpu = json_string_value(json_object_get(json_object_get(p, "cpu"), "model"));
	ftd_mbuf_cat(&m, "gpu=\"");
	label_value(&m, uuid);
	if (model) {
		ftd_mbuf_cat(&m, "\",model_name=\"");
		label_value(&m, model);
	}
	ftd_mbuf_cat(&m, "\",hostname=\"");
	label_value(&m, host);
	if (cpu) {
		ftd_mbuf_cat(&m, "\",cpu_model=\"");
		label_value(&m, cpu);
	}
	ftd_mbuf_cat(&m, "\"");
	return m.buf;
}

/* The profile's verdict for dtype k: "hybrid", "offload", or NULL (unmeasured, or anything else). */
static const char *verdict_of(json_t *v)
{
	const char *s = json_string_value(v);
	return s && (!strcmp(s, "hybrid") || !strcmp(s, "offload")) ? s : NULL;
}

/* Is the validation of format fmt in profile e stale (not trusted)? libftprofile's rule
 * (ftprof_validation: run before the profile, or compared with another one; no engine version
 * to hold it against here), or a record that says "stale": true. */
static int validation_stale(const struct met_prof *e, const char *fmt, json_t *val)
{
	struct ftprof_validation v;
	if (json_is_true(json_object_get(val, "stale")) || !e->fp || ftprof_validation(e->fp, fmt, NULL, &v) < 0)
		return 1;
	return v.state != FTPROF_VALIDATION_CURRENT;
}

/* Families whose samples are a per-GPU figure (ceilings) or a per-format figure (dtype_kernels). */
static const struct {
	const char *name, *help, *key;
	int per_format; /* 1: dtype_kernels.<fmt>.<key> with a dtype label; 0: ceilings.<key> */
} figure_families[] = {
	{"ftbenchd_profile_cpu_stream_read_gbs", "CPU read ceiling of the last profile, GB/s.", "cpu_stream_read_gbs", 0},
	{"ftbenchd_profile_pcie_h2d_gbs", "Linear pinned host-to-device ceiling of the last profile, GB/s.",
	 "pcie_linear_h2d_gbs", 0},
	{"ftbenchd_profile_pcie_d2h_gbs", "Linear pinned device-to-host ceiling of the last profile, GB/s.",
	 "pcie_linear_d2h_gbs", 0},
	{"ftbenchd_profile_cpu_moe_gbs", "CPU MoE executor throughput of the format in the last profile, GB/s.",
	 "cpu_moe_gbs", 1},
	{"ftbenchd_profile_gather_gbs", "PCIe gather of the format's experts in the last profile, GB/s.",
	 "pcie_gather_gbs", 1},
	{"ftbenchd_profile_ratio", "CPU MoE over PCIe gather for the format in the last profile.", "ratio", 1},
	{"ftbenchd_profile_fetch_fraction",
	 "Share of the misses the hybrid split fetches over PCIe for the format (the rest on the CPU), as "
	 "libftprofile answers engines.",
	 NULL, 1},
};

static void figure_samples(struct ftd_mbuf *m, size_t f, const struct met_prof *e)
{
	const char *name = figure_families[f].name, *key = figure_families[f].key;
	if (!figure_families[f].per_format) {
		json_t *v = json_object_get(json_object_get(e->p, "ceilings"), key);
		if (json_is_number(v))
			ftd_mbuf_cat(m, "%s{%s} %.6g\n", name, e->id, json_number_value(v));
		return;
	}
	const char *k;
	json_t *dk;
	json_object_foreach(json_object_get(e->p, "dtype_kernels"), k, dk) {
		json_t *v = json_object_get(dk, key ? key : "");
		double x;
		if (!label_ok(k))
			continue;
		if (key && json_is_number(v))
			x = json_number_value(v);
		else if (!key && verdict_of(json_object_get(json_object_get(e->p, "dtypes"), k)) && e->fp &&
			 ftprof_fetch_fraction(e->fp, k, &x) == 0)
			;
		else
			continue;
		ftd_mbuf_cat(m, "%s{%s,dtype=\"%s\"} %.6g\n", name, e->id, k, x);
	}
}

static void family_head(struct ftd_mbuf *m, const char *name, const char *help)
{
	ftd_mbuf_cat(m, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name);
}

/* The stored profiles as met_prof entries (*n of them; a new array, free with met_free). */
static struct met_prof *met_load(int *n, const char *host)
{
	struct ftprof_entry *e;
	char check[4096];
	int ne;
	*n = 0;
	if (ftprof_store_list(ftd.profile_dir, &e, &ne) < 0)
		return NULL;
	struct met_prof *out = calloc(ne > 0 ? (size_t)ne : 1, sizeof *out);
	for (int i = 0; out && i < ne; i++) {
		if (ftprof_store_file(ftd.profile_dir, e[i].name, check, sizeof check) < 0 || !label_ok(e[i].name))
			continue;
		struct met_prof *x = &out[*n];
		snprintf(x->uuid, sizeof x->uuid, "%s", e[i].name);
		x->p = ftd_profiles_load(e[i].path);
		if (!json_is_object(x->p)) {
			json_decref(x->p);
			x->p = NULL;
		} else if (ftprof_load_file(e[i].path, &x->fp, NULL, 0) < 0) {
			x->fp = NULL;
		}
		if (!(x->id = id_labels(x->uuid, x->p, host))) {
			json_decref(x->p);
			ftprof_free(x->fp);
			continue;
		}
		(*n)++;
	}
	free(e);
	return out;
}

static void met_free(struct met_prof *v, int n)
{
	for (int i = 0; v && i < n; i++) {
		json_decref(v[i].p);
		ftprof_free(v[i].fp);
		free(v[i].id);
	}
	free(v);
}

void ftd_profiles_metrics(struct ftd_mbuf *m)
{
	char host[256];
	node_name(host, sizeof host);
	int n;
	struct met_prof *all = met_load(&n, host);
	const char *k;
	json_t *v;

	family_head(m, "ftbenchd_build_info", "The daemon's version (always 1).");
	ftd_mbuf_cat(m, "ftbenchd_build_info{version=\"%s\",hostname=\"", FT_VERSION);
	label_value(m, host);
	ftd_mbuf_cat(m, "\"} 1\n");

	/* the inventory, profiled or not: the join to dcgm-exporter's series, whose label names
	 * (UUID, modelName, Hostname: camelCase, which promtool's lint names) it repeats beside our
	 * gpu; the figures below carry snake_case model_name/hostname and join through it on gpu.
	 * Also what "no profile" alerts compare the profiles with. */
	family_head(m, "ftbenchd_gpu_info", "A GPU of the daemon's inventory (always 1): labels as dcgm-exporter's.");
	pthread_mutex_lock(&ftd.lock);
	for (int i = 0; i < ftd.ngpus; i++) {
		const struct ftgpu_info *g = &ftd.gpus[i];
		ftd_mbuf_cat(m, "ftbenchd_gpu_info{gpu=\"");
		label_value(m, g->uuid);
		ftd_mbuf_cat(m, "\",UUID=\"");
		label_value(m, g->uuid);
		ftd_mbuf_cat(m, "\",modelName=\"");
		label_value(m, g->name);
		ftd_mbuf_cat(m, "\",Hostname=\"");
		label_value(m, host);
		ftd_mbuf_cat(m, "\",pci_bus_id=\"");
		label_value(m, g->pci_bus_id);
		ftd_mbuf_cat(m, "\",index=\"%d\"} 1\n", g->index);
	}
	pthread_mutex_unlock(&ftd.lock);

	family_head(m, "ftbenchd_profile_valid",
		    "1 when the stored profile parses and passed its own checks, 0 when it is corrupt or not valid.");
	for (int i = 0; i < n; i++)
		ftd_mbuf_cat(m, "ftbenchd_profile_valid{%s} %d\n", all[i].id,
			 all[i].p && !json_is_false(json_object_get(all[i].p, "valid")));

	family_head(m, "ftbenchd_profile_stale",
		    "1 when this machine no longer matches the profile's fingerprint (driver, PCIe link, CPU "
		    "microcode, memory, kernel, tool version), 0 when it does; no sample when unknown.");
	for (int i = 0; i < n; i++) {
		if (!all[i].p)
			continue;
		const char *bus = json_string_value(json_object_get(json_object_get(all[i].p, "gpu"), "pci_bus_id"));
		json_t *now = ftprof_fingerprint_at(NULL, bus);
		int st = now ? ftprof_fingerprint_compare(json_object_get(all[i].p, "fingerprint"), now, NULL, 0) : -1;
		json_decref(now);
		if (st >= 0)
			ftd_mbuf_cat(m, "ftbenchd_profile_stale{%s} %d\n", all[i].id, st);
	}

	family_head(m, "ftbenchd_profile_timestamp_seconds", "When the last profile was measured.");
	for (int i = 0; i < n; i++) {
		json_t *ep = json_object_get(all[i].p, "epoch");
		if (json_is_number(ep))
			ftd_mbuf_cat(m, "ftbenchd_profile_timestamp_seconds{%s} %.3f\n", all[i].id, json_number_value(ep));
	}

	for (size_t f = 0; f < sizeof figure_families / sizeof *figure_families; f++) {
		family_head(m, figure_families[f].name, figure_families[f].help);
		for (int i = 0; i < n; i++)
			if (all[i].p)
				figure_samples(m, f, &all[i]);
	}

	/* a verdict only where there is one: an unmeasured format has no sample here (0 would read
	 * as offload) and says so in ftbenchd_profile_verdict's label */
	family_head(m, "ftbenchd_profile_hybrid",
		    "1 when the last profile recommends hybrid for the dtype, 0 offload; no sample for an unmeasured dtype.");
	for (int i = 0; i < n; i++)
		json_object_foreach(json_object_get(all[i].p, "dtypes"), k, v) {
			const char *vd = verdict_of(v);
			if (vd && label_ok(k))
				ftd_mbuf_cat(m, "ftbenchd_profile_hybrid{%s,dtype=\"%s\"} %d\n", all[i].id, k,
					 !strcmp(vd, "hybrid"));
		}
	family_head(m, "ftbenchd_profile_verdict",
		    "The last profile's verdict for the dtype as a label (hybrid, offload or unmeasured); always 1.");
	for (int i = 0; i < n; i++)
		json_object_foreach(json_object_get(all[i].p, "dtypes"), k, v) {
			const char *vd = verdict_of(v);
			if (label_ok(k))
				ftd_mbuf_cat(m, "ftbenchd_profile_verdict{%s,dtype=\"%s\",verdict=\"%s\"} 1\n", all[i].id, k,
					 vd ? vd : "unmeasured");
		}

	/* validation.<fmt> (`ftbench profile validate`): a stale record is not trusted, so it has no agrees sample */
	family_head(m, "ftbenchd_verdict_agrees",
		    "1 when the format's validation (engine run both ways, or replay) picked the profile's verdict, "
		    "0 when it disagrees; no sample without a current validation.");
	for (int i = 0; i < n; i++)
		json_object_foreach(json_object_get(all[i].p, "validation"), k, v) {
			const char *src = json_string_value(json_object_get(v, "source"));
			json_t *ag = json_object_get(v, "agrees");
			if (src && label_ok(src) && label_ok(k) && json_is_boolean(ag) && !validation_stale(&all[i], k, v))
				ftd_mbuf_cat(m, "ftbenchd_verdict_agrees{%s,dtype=\"%s\",source=\"%s\"} %d\n", all[i].id, k,
					 src, json_is_true(ag));
		}
	family_head(m, "ftbenchd_validation_stale",
		    "1 when the format's validation is older than the profile or marked stale (not trusted), 0 when current.");
	for (int i = 0; i < n; i++)
		json_object_foreach(json_object_get(all[i].p, "validation"), k, v) {
			const char *src = json_string_value(json_object_get(v, "source"));
			if (src && label_ok(src) && label_ok(k))
				ftd_mbuf_cat(m, "ftbenchd_validation_stale{%s,dtype=\"%s\",source=\"%s\"} %d\n", all[i].id, k,
					 src, validation_stale(&all[i], k, v));
		}

	family_head(m, "ftbenchd_profile_drift_ratio",
		    "A figure of the last profile that left the previous profile's spread: its value over the previous one.");
	for (int i = 0; i < n; i++) {
		size_t j;
		json_t *d;
		json_array_foreach(json_object_get(all[i].p, "drift"), j, d) {
			const char *fig = json_string_value(json_object_get(d, "figure"));
			json_t *r = json_object_get(d, "ratio");
			if (fig && label_ok(fig) && json_is_number(r))
				ftd_mbuf_cat(m, "ftbenchd_profile_drift_ratio{%s,figure=\"%s\"} %.6g\n", all[i].id, fig,
					 json_number_value(r));
		}
	}
	met_free(all, n);
}
