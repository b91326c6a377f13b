#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/fsutil.h"
#include "util/strutil.h"

enum opt_type { T_STR, T_INT, T_LIST };

struct opt {
	const char *name;
	enum opt_type type;
	long lo, hi;
	const char *def;
	const char *help;
	size_t off;   /* of the char * / long / char ** field */
	size_t noff;  /* T_LIST: of the count */
};

/* One row per option: name, (bounds,) default, the field of struct ftd_config, help. */
#define S(f) offsetof(struct ftd_config, f)
#define STR(name, def, f, help) {name, T_STR, 0, 0, def, help, S(f)}
#define INT(name, lo, hi, def, f, help) {name, T_INT, lo, hi, def, help, S(f)}
#define LIST(name, f, help) {name, T_LIST, 0, 0, "", help, S(f), S(n_##f)}
static const struct opt opts[] = {
	STR("listen", "127.0.0.1:8377", listen,
	    "Address to listen on: IPV4:PORT or [IPV6]:PORT. A non-loopback address needs token-file. "
	    "Ignored under socket activation (ftbenchd.socket). The seed daemon's desktop app expects "
	    "its port: listen = 127.0.0.1:1900 (POST /bench/run, GET /bench/profile, X-FT-Token; README)."),
	STR("state-dir", "", state_dir,
	    "Job journal and logs. Empty: $STATE_DIRECTORY, else $XDG_STATE_HOME/ftbenchd, else "
	    "~/.local/state/ftbenchd."),
	STR("profile-dir", "", profile_dir,
	    "Profile store written by bw jobs. Empty: $CACHE_DIRECTORY/benchbw, else "
	    "$XDG_CACHE_HOME/freetoken/benchbw, else ~/.cache/freetoken/benchbw."),
	STR("token-file", "", token_file,
	    "File holding the bearer token clients must send (Authorization: Bearer ...). Empty: no "
	    "token (loopback only)."),
	STR("worker", "", worker,
	    "The worker program (ftbench). Empty: ftbench beside ftbenchd."),
	STR("deployment", "", deployment,
	    "isolated or concurrent: which verdict the profiles of bw jobs carry in the seed's fields "
	    "(engines read those): each GPU measured alone, or while every GPU's engine runs at once "
	    "(bw with gpu \"all\" measures both). A job's args.deployment wins. Empty: the worker's "
	    "default, concurrent when the job measured more than one engine."),
	INT("max-queue", 1, 100000, "64", max_queue,
	    "Queued jobs at most; more is 429."),
	INT("max-connections", 1, 10000, "256", max_connections,
	    "Concurrent HTTP connections at most (event streams included). Beyond it a request is answered 503 "
	    "with Retry-After; /health and /metrics are answered apart, whatever the load (/health says 503 "
	    "saturated once every place has been taken for 5 s)."),
	INT("max-event-streams", 1, 10000, "128", max_event_streams,
	    "Concurrent event streams (GET /benchmark/jobs/{id}/events) at most; more is 503 with Retry-After."),
	INT("header-timeout", 1, 300, "10", header_timeout,
	    "Seconds a connection has to send its whole request head (every request: each answer closes its "
	    "connection); then it is answered 408 and closed. A body silent this long, or slower than 4 KiB/s "
	    "after it, is cut with 408 too."),
	INT("max-body", 256, 16777216, "65536", max_body,
	    "Request body size limit in bytes; more is 413."),
	INT("job-timeout", 1, 604800, "3600", job_timeout,
	    "Default per-job timeout in seconds."),
	INT("max-job-timeout", 1, 604800, "86400", max_job_timeout,
	    "Largest timeout_s a request may ask for."),
	INT("kill-grace", 0, 3600, "10", kill_grace,
	    "Seconds between SIGTERM and SIGKILL to a job's process group (timeout, cancel, stop)."),
	INT("log-max", 4096, 1073741824, "1048576", log_max,
	    "Bytes of worker stdout+stderr kept per job."),
	INT("retain-jobs", 1, 1000000, "1000", retain_jobs,
	    "Finished jobs kept in the journal at most (enforced as soon as one more finishes)."),
	INT("retain-age", 1, 315360000, "2592000", retain_age,
	    "Seconds a finished job is kept (aged on the monotonic clock: a wall-clock jump removes nothing)."),
	INT("max-result-line", 1024, 268435456, "8388608", max_result_line,
	    "Largest JSON line a worker may send on its result fd; more is a protocol error."),
	INT("gpus-timeout", 1, 3600, "60", gpus_timeout,
	    "Seconds `worker gpus --json` may take at start."),
	INT("log-level", 3, 7, "6", log_level,
	    "3 errors, 4 warnings, 5 notices, 6 info, 7 debug."),
	INT("bw-legacy-copy", 0, 1, "1", bw_legacy_copy,
	    "1: a bw job on a host with one GPU also writes the seed system's single file "
	    "$XDG_CACHE_HOME/freetoken/benchbw.json, the only one released engines read (never on a host with "
	    "several GPUs); 0: it does not."),
	INT("history", 0, 10000, "20", history,
	    "Profiles kept per GPU in <profile-dir>/history (GET /profiles/{uuid}/history, the status "
	    "page's plots); 0 keeps none."),
	INT("drift-percent", 0, 1000, "10", drift_pct,
	    "A new profile's figure outside the previous profile's spread by more than this share is "
	    "drift: a warning in the profile, on the status page and ftbenchd_profile_drift_ratio; 0: "
	    "not checked."),
	STR("rebench", "on-change", rebench,
	    "At start, queue a bw job for each GPU whose profile is stale: on-change (the machine no longer "
	    "matches the profile's fingerprint: driver, PCIe link, CPU microcode, memory, kernel, ftbench "
	    "version), an interval (e.g. 7d, 12h, 3600s: also when the profile is older), or never."),
	STR("nfd-features-file", "", nfd_file,
	    "Write the profiles' verdicts as a node-feature-discovery local feature file here (e.g. "
	    "/etc/kubernetes/node-feature-discovery/features.d/ftbenchd) at start and after every "
	    "stored profile: ftbenchd/<format>=hybrid|offload|mixed|unmeasured lines. Empty: not written."),
	LIST("model-roots", model_roots,
	    "Comma-separated directories model paths must resolve under (load-weights, decode). Empty: "
	    "model paths are refused."),
	LIST("decode-server", decode_servers,
	    "NAME=COMMAND TEMPLATE a decode job may start (repeat the option for several); NAME is 1 to 64 "
	    "of A-Z a-z 0-9 _ . - and a request's `server` must equal it; the template is passed to "
	    "`ftbench decode --server-cmd` and is read when the job starts."),
	LIST("decode-urls", decode_urls,
	    "Comma-separated http(s) URLs a decode job's `url` may name (none by default: decode jobs then "
	    "need `server`). A request's url must equal an entry or extend it after a '/', e.g. "
	    "http://127.0.0.1:30000 allows http://127.0.0.1:30000/v1. Loopback is not implied."),
	INT("max-running", 0, 100000, "0", max_running,
	    "Jobs running at once at most, GPU or not (each is a worker process tree). 0: the number of "
	    "online CPU cores."),
};
#define N_OPTS (sizeof opts / sizeof opts[0])

/* Options that were removed, with what replaced them (a config naming one is refused). */
static const char *const removed_opts[][2] = {
	{"decode-hosts", "decode-urls (the exact URLs a decode job may use; loopback is no longer implied)"},
};

static void removed_note(const char *name, size_t len)
{
	for (size_t i = 0; i < sizeof removed_opts / sizeof removed_opts[0]; i++)
		if (strlen(removed_opts[i][0]) == len && !strncmp(removed_opts[i][0], name, len))
			fprintf(stderr, "ftbenchd: %s was replaced by %s\n", removed_opts[i][0], removed_opts[i][1]);
}

static const struct opt *find_opt(const char *name, size_t len)
{
	for (size_t i = 0; i < N_OPTS; i++)
		if (strlen(opts[i].name) == len && !strncmp(opts[i].name, name, len))
			return &opts[i];
	return NULL;
}

static int list_add(char ***items, int *n, const char *v)
{
	char **p = realloc(*items, sizeof(char *) * (size_t)(*n + 1));
	if (!p)
		return -ENOMEM;
	*items = p;
	if (!(p[*n] = strdup(v)))
		return -ENOMEM;
	(*n)++;
	return 0;
}

/* Set one option from its text; where says where it came from for the message. */
static int set_opt(struct ftd_config *cfg, const struct opt *o, const char *v, const char *where)
{
	char *base = (char *)cfg;
	if (o->type == T_STR) {
		char **f = (char **)(base + o->off);
		free(*f);
		*f = strdup(v);
		return *f ? 0 : -ENOMEM;
	}
	if (o->type == T_INT) {
		long x;
		int r = ftstr_parse_long(v, o->lo, o->hi, &x);
		if (r < 0) {
			fprintf(stderr, "ftbenchd: %s: %s: '%s' is not an integer in [%ld, %ld]\n", where, o->name,
				v, o->lo, o->hi);
			return -EINVAL;
		}
		*(long *)(base + o->off) = x;
		return 0;
	}
	char ***items = (char ***)(base + o->off);
	int *n = (int *)(base + o->noff);
	if (!strcmp(o->name, "decode-server")) {
		if (!*v)
			return 0;
		const char *eq = strchr(v, '=');
		if (!eq || eq == v || !eq[1]) {
			fprintf(stderr, "ftbenchd: %s: decode-server: '%.200s' is not NAME=COMMAND\n", where, v);
			return -EINVAL;
		}
		if (ftd_config_server_name_len(v, (size_t)(eq - v)) < 0) {
			fprintf(stderr, "ftbenchd: %s: decode-server: the name '%.*s' is not 1 to %d of A-Z a-z 0-9 _ . -\n",
				where, (int)(eq - v > 80 ? 80 : eq - v), v, FTD_CONFIG_SERVER_NAME_MAX);
			return -EINVAL;
		}
		return list_add(items, n, v);
	}
	char **parts;
	int k = ftstr_split(v, &parts, 256);
	if (k < 0) {
		fprintf(stderr, "ftbenchd: %s: %s: bad list '%.200s'\n", where, o->name, v);
		return -EINVAL;
	}
	int r = 0;
	for (int i = 0; i < k && !r; i++) {
		char why[160];
		if (!strcmp(o->name, "decode-urls") && ftd_config_url_check(parts[i], why, sizeof why) < 0) {
			fprintf(stderr, "ftbenchd: %s: decode-urls: '%.200s': %s\n", where, parts[i], why);
			r = -EINVAL;
			break;
		}
		r = list_add(items, n, parts[i]);
	}
	ftstr_free_list(parts, k);
	return r;
}

static char *trim(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	size_t l = strlen(s);
	while (l > 0 && (s[l - 1] == ' ' || s[l - 1] == '\t' || s[l - 1] == '\r' || s[l - 1] == '\n'))
		s[--l] = '\0';
	return s;
}

static int load_file(struct ftd_config *cfg, const char *path)
{
	char *text;
	size_t len;
	int r = ftfs_read_file(path, 1 << 20, &text, &len);
	if (r < 0) {
		fprintf(stderr, "ftbenchd: %s: %s\n", path, strerror(-r));
		return r;
	}
	int lineno = 0;
	char *save = NULL;
	r = 0;
	for (char *line = text; line && !r; line = save) {
		char *nl = strchr(line, '\n');
		save = nl ? nl + 1 : NULL;
		if (nl)
			*nl = '\0';
		lineno++;
		char *s = trim(line);
		if (!*s || *s == '#')
			continue;
		char where[PATH_MAX + 32];
		snprintf(where, sizeof where, "%s:%d", path, lineno);
		char *eq = strchr(s, '=');
		if (!eq) {
			fprintf(stderr, "ftbenchd: %s: expected 'key = value'\n", where);
			r = -EINVAL;
			break;
		}
		*eq = '\0';
		char *key = trim(s), *val = trim(eq + 1);
		const struct opt *o = find_opt(key, strlen(key));
		if (!o) {
			fprintf(stderr, "ftbenchd: %s: unknown option '%s'\n", where, key);
			removed_note(key, strlen(key));
			r = -EINVAL;
			break;
		}
		r = set_opt(cfg, o, val, where);
	}
	free(text);
	return r;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: ftbenchd [-c FILE] [-n] [--OPTION VALUE]...\n"
		   "The ftbench daemon: a REST API that queues benchmark jobs and runs each as an ftbench child.\n\n"
		   "  -c, --config FILE   config file (default /etc/ftbenchd.conf when it exists)\n"
		   "  -n, --check         check the configuration and exit (0 ok, 2 bad)\n"
		   "      --dump-config   print a config file with every option and its default\n"
		   "  -h, --help          this help;  --version  the version\n\n"
		   "Options (also `key = value` in the config file):\n");
	for (size_t i = 0; i < N_OPTS; i++) {
		const struct opt *o = &opts[i];
		char def[64];
		if (o->type == T_INT)
			snprintf(def, sizeof def, "INT %ld..%ld, default %s", o->lo, o->hi, o->def);
		else
			snprintf(def, sizeof def, "%s, default '%s'", o->type == T_LIST ? "LIST" : "STRING", o->def);
		fprintf(f, "  --%-18s %s\n  %-20s   %s\n", o->name, def, "", o->help);
	}
}

void ftd_config_dump(FILE *f)
{
	fprintf(f, "# ftbenchd configuration: every option with its default (`key = value`).\n"
		   "# Every option is also a flag: --key VALUE (flags win over this file).\n"
		   "# Generated by `ftbenchd --dump-config`; check a file with `ftbenchd -n -c FILE`.\n");
	for (size_t i = 0; i < N_OPTS; i++) {
		const struct opt *o = &opts[i];
		fprintf(f, "\n# %s\n", o->help);
		if (o->type == T_INT)
			fprintf(f, "# integer in [%ld, %ld]\n", o->lo, o->hi);
		fprintf(f, "#%s = %s\n", o->name, o->def);
	}
}

int ftd_config_load(struct ftd_config *cfg, int argc, char **argv)
{
	memset(cfg, 0, sizeof *cfg);
	for (size_t i = 0; i < N_OPTS; i++)
		if (opts[i].type != T_LIST && set_opt(cfg, &opts[i], opts[i].def, "default") < 0)
			return -ENOMEM;
	const char *file = NULL;
	int explicit_file = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 1;
		}
		if (!strcmp(argv[i], "--version")) {
			printf("ftbenchd %s\n", FT_VERSION);
			return 1;
		}
		if (!strcmp(argv[i], "--dump-config")) {
			ftd_config_dump(stdout);
			return 1;
		}
		if ((!strcmp(argv[i], "-c") || !strcmp(argv[i], "--config")) && i + 1 < argc) {
			file = argv[++i];
			explicit_file = 1;
		} else if (!strncmp(argv[i], "--config=", 9)) {
			file = argv[i] + 9;
			explicit_file = 1;
		}
	}
	if (!file && access("/etc/ftbenchd.conf", F_OK) == 0)
		file = "/etc/ftbenchd.conf";
	if (file && *file && load_file(cfg, file) < 0)
		return -EINVAL;
	(void)explicit_file;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-c") || !strcmp(a, "--config")) {
			i++;
			continue;
		}
		if (!strncmp(a, "--config=", 9))
			continue;
		if (!strcmp(a, "-n") || !strcmp(a, "--check")) {
			cfg->check_only = 1;
			continue;
		}
		if (strncmp(a, "--", 2) != 0) {
			fprintf(stderr, "ftbenchd: unexpected argument '%s' (see --help)\n", a);
			return -EINVAL;
		}
		const char *name = a + 2, *eq = strchr(name, '=');
		const struct opt *o = find_opt(name, eq ? (size_t)(eq - name) : strlen(name));
		if (!o) {
			fprintf(stderr, "ftbenchd: unknown option '%s' (see --help)\n", a);
			removed_note(name, eq ? (size_t)(eq - name) : strlen(name));
			return -EINVAL;
		}
		const char *v = eq ? eq + 1 : NULL;
		if (!v) {
			if (i + 1 >= argc) {
				fprintf(stderr, "ftbenchd: --%s needs a value\n", o->name);
				return -EINVAL;
			}
			v = argv[++i];
		}
		char where[80];
		snprintf(where, sizeof where, "--%s", o->name);
		if (set_opt(cfg, o, v, where) < 0)
			return -EINVAL;
	}
	return 0;
}

static int is_loopback_listen(const char *listen)
{
	return !strncmp(listen, "127.", 4) || !strncmp(listen, "[::1]:", 6) || !strncmp(listen, "localhost:", 10);
}

long ftd_config_rebench_s(const char *v)
{
	if (!v || !strcmp(v, "never"))
		return -1;
	if (!strcmp(v, "on-change"))
		return 0;
	char *end;
	errno = 0;
	long n = strtol(v, &end, 10);
	if (errno || end == v || n <= 0)
		return -2;
	long mul = !*end || !strcmp(end, "s") ? 1 : !strcmp(end, "m") ? 60 : !strcmp(end, "h") ? 3600
		 : !strcmp(end, "d") ? 86400 : 0;
	if (!mul || n > 3650L * 86400 / mul)
		return -2;
	return n * mul;
}

int ftd_config_check(struct ftd_config *cfg)
{
	if (cfg->deployment && *cfg->deployment && strcmp(cfg->deployment, "isolated") &&
	    strcmp(cfg->deployment, "concurrent")) {
		fprintf(stderr, "ftbenchd: deployment '%s': give isolated or concurrent (or nothing)\n", cfg->deployment);
		return -EINVAL;
	}
	if (ftd_config_rebench_s(cfg->rebench) == -2) {
		fprintf(stderr, "ftbenchd: rebench '%s': expected on-change, never, or an interval such as 7d, 12h, "
			"30m, 3600s\n", cfg->rebench);
		return -EINVAL;
	}
	if (cfg->token_file && *cfg->token_file) {
		char *t;
		size_t len;
		int r = ftfs_read_file(cfg->token_file, 4096, &t, &len);
		if (r < 0) {
			fprintf(stderr, "ftbenchd: token-file %s: %s\n", cfg->token_file, strerror(-r));
			return r;
		}
		char *s = trim(t);
		if (strlen(s) < 16) {
			fprintf(stderr, "ftbenchd: token-file %s: the token must have at least 16 characters\n",
				cfg->token_file);
			free(t);
			return -EINVAL;
		}
		cfg->token = strdup(s);
		free(t);
		if (!cfg->token)
			return -ENOMEM;
	}
	if (!is_loopback_listen(cfg->listen) && !cfg->token) {
		fprintf(stderr, "ftbenchd: listen %s is not loopback: refusing to start without token-file\n",
			cfg->listen);
		return -EPERM;
	}
	if (cfg->max_job_timeout < cfg->job_timeout) {
		fprintf(stderr, "ftbenchd: job-timeout %ld is above max-job-timeout %ld\n", cfg->job_timeout,
			cfg->max_job_timeout);
		return -EINVAL;
	}
	if (cfg->max_running == 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		cfg->max_running = n > 0 ? n : 1;
	}
	for (int i = 0; i < cfg->n_model_roots; i++) {
		char *rp = realpath(cfg->model_roots[i], NULL);
		if (!rp) {
			fprintf(stderr, "ftbenchd: model-roots: %s: %s\n", cfg->model_roots[i], strerror(errno));
			return -errno;
		}
		free(cfg->model_roots[i]);
		cfg->model_roots[i] = rp;
	}
	return 0;
}

int ftd_config_server_name_len(const char *s, size_t len)
{
	if (len < 1 || len > FTD_CONFIG_SERVER_NAME_MAX)
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
		      c == '.' || c == '-'))
			return -EINVAL;
	}
	return 0;
}

const char *ftd_config_decode_server(const struct ftd_config *cfg, const char *name)
{
	size_t l = strlen(name);
	if (ftd_config_server_name_len(name, l) < 0)
		return NULL;
	for (int i = 0; i < cfg->n_decode_servers; i++) {
		const char *e = cfg->decode_servers[i], *eq = strchr(e, '=');
		if (eq && (size_t)(eq - e) == l && !memcmp(e, name, l))
			return eq + 1;
	}
	return NULL;
}

/* RFC 3986 characters of a path/query, minus '#' (no fragments) and without any space or control. */
static int url_char_ok(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       strchr("-._~!$&'()*+,;=:@/?%", c) != NULL;
}

int ftd_config_url_check(const char *url, char *why, size_t n)
{
	const char *p;
	size_t len = strlen(url);
	if (len > FTD_CONFIG_URL_MAX) {
		snprintf(why, n, "longer than %d bytes", FTD_CONFIG_URL_MAX);
		return -EINVAL;
	}
	if (!strncmp(url, "http://", 7))
		p = url + 7;
	else if (!strncmp(url, "https://", 8))
		p = url + 8;
	else {
		snprintf(why, n, "expected an http:// or https:// URL");
		return -EINVAL;
	}
	for (const char *q = url; *q; q++)
		if ((unsigned char)*q <= 0x20 || (unsigned char)*q >= 0x7f) {
			snprintf(why, n, "a space, control or non-ASCII character at byte %zu", (size_t)(q - url));
			return -EINVAL;
		}
	/* host: a name of letters, digits, '-' and '.', or [IPv6] */
	const char *h = p;
	if (*p == '[') {
		p++;
		while (*p && (strchr("0123456789abcdefABCDEF:.", *p)))
			p++;
		if (*p != ']' || p == h + 1) {
			snprintf(why, n, "a bad [IPv6] host");
			return -EINVAL;
		}
		p++;
	} else {
		while ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' ||
		       *p == '.')
			p++;
		if (p == h || p - h > 253) {
			snprintf(why, n, "expected a host name (no user info)");
			return -EINVAL;
		}
	}
	if (*p == ':') {
		const char *d = ++p;
		long port = 0;
		while (*p >= '0' && *p <= '9' && p - d < 6)
			port = port * 10 + (*p++ - '0');
		if (p == d || port < 1 || port > 65535) {
			snprintf(why, n, "a port must be 1 to 65535");
			return -EINVAL;
		}
	}
	if (*p && *p != '/' && *p != '?') {
		snprintf(why, n, "unexpected '%c' after the host", *p);
		return -EINVAL;
	}
	for (; *p; p++)
		if (!url_char_ok((unsigned char)*p)) {
			snprintf(why, n, "'%c' is not allowed in a URL path", *p);
			return -EINVAL;
		}
	return 0;
}

static int hexdig(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* RFC 3986 5.2.4: the dot segments of path [p, p + len) removed, into out (a path starting with
 * '/', as long at most). A ".." above the root is dropped, as the RFC does. */
static size_t remove_dots(const char *p, size_t len, char *out)
{
	size_t o = 0, i = 0;
	while (i < len) {
		const char *s = p + i;
		size_t rest = len - i, seg = 1;
		while (seg < rest && s[seg] != '/')
			seg++;
		/* s[0] is '/', the segment is s[1, seg) */
		if (seg == 2 && s[1] == '.') {
			i += 2;
			if (i == len)
				out[o++] = '/';
			continue;
		}
		if (seg == 3 && s[1] == '.' && s[2] == '.') {
			while (o > 0 && out[--o] != '/')
				;
			i += 3;
			if (i == len)
				out[o++] = '/';
			continue;
		}
		memcpy(out + o, s, seg);
		o += seg;
		i += seg;
	}
	if (o == 0)
		out[o++] = '/';
	return o;
}

int ftd_config_url_normalize(const char *url, char *out, size_t n, char *why, size_t wn)
{
	if (ftd_config_url_check(url, why, wn) < 0)
		return -EINVAL;
	size_t len = strlen(url);
	char *tmp = malloc(len + 2), *path = malloc(len + 2);
	if (!tmp || !path) {
		free(tmp);
		free(path);
		snprintf(why, wn, "out of memory");
		return -ENOMEM;
	}
	const char *host = strstr(url, "://") + 3;
	size_t hl = strcspn(host, "/?");
	size_t t = 0;
	memcpy(tmp, url, (size_t)(host - url));
	t = (size_t)(host - url);
	for (size_t i = 0; i < hl; i++)
		tmp[t++] = (char)tolower((unsigned char)host[i]);
	/* the path: unreserved characters percent-decoded, other escapes upper-cased; an encoded
	 * '/', '\' or NUL is refused (a server that decodes it would see other segments) */
	const char *p = host + hl, *q = p + strcspn(p, "?");
	size_t pl = 0;
	int r = 0;
	for (const char *c = p; c < q; c++) {
		int hi, lo;
		if (*c != '%') {
			path[pl++] = *c;
			continue;
		}
		if ((hi = hexdig(c[1])) < 0 || (lo = hexdig(c[2])) < 0) {
			snprintf(why, wn, "a '%%' that is not followed by two hex digits");
			r = -EINVAL;
			goto out;
		}
		int ch = hi * 16 + lo;
		if (ch == '/' || ch == '\\' || ch == 0) {
			snprintf(why, wn, "an encoded '/', '\\' or NUL in the path");
			r = -EINVAL;
			goto out;
		}
		if (isalnum(ch) || strchr("-._~", ch)) {
			path[pl++] = (char)ch;
		} else {
			path[pl++] = '%';
			path[pl++] = (char)toupper((unsigned char)c[1]);
			path[pl++] = (char)toupper((unsigned char)c[2]);
		}
		c += 2;
	}
	if (pl)
		t += remove_dots(path, pl, tmp + t);
	size_t ql = strlen(q);
	memcpy(tmp + t, q, ql + 1);
	t += ql;
	if (t + 1 > n) {
		snprintf(why, wn, "longer than %zu bytes", n - 1);
		r = -EINVAL;
		goto out;
	}
	memcpy(out, tmp, t + 1);
out:
	free(tmp);
	free(path);
	return r;
}

int ftd_config_url_allowed(const struct ftd_config *cfg, const char *url)
{
	char u[FTD_CONFIG_URL_MAX + 1], e[FTD_CONFIG_URL_MAX + 1], why[160];
	if (ftd_config_url_normalize(url, u, sizeof u, why, sizeof why) < 0)
		return 0;
	size_t ul = strlen(u);
	for (int i = 0; i < cfg->n_decode_urls; i++) {
		if (ftd_config_url_normalize(cfg->decode_urls[i], e, sizeof e, why, sizeof why) < 0)
			continue;
		size_t l = strlen(e);
		if (ul < l || strncmp(u, e, l))
			continue;
		if (ul == l || e[l - 1] == '/' || u[l] == '/' || u[l] == '?')
			return 1;
	}
	return 0;
}

void ftd_config_release(struct ftd_config *cfg)
{
	if (!cfg)
		return;
	for (size_t i = 0; i < N_OPTS; i++) {
		char *base = (char *)cfg;
		if (opts[i].type == T_STR) {
			free(*(char **)(base + opts[i].off));
		} else if (opts[i].type == T_LIST) {
			char **items = *(char ***)(base + opts[i].off);
			int n = *(int *)(base + opts[i].noff);
			for (int k = 0; k < n; k++)
				free(items[k]);
			free(items);
		}
	}
	free(cfg->token);
	memset(cfg, 0, sizeof *cfg);
}
