/* ftbench health: is this node's bandwidth profile fit to use? For Slurm's HealthCheckProgram /
 * NHC and node-problem-detector's custom plugins. Answers from what is already there, never
 * measures and never initialises CUDA: the daemon's state (GET /health, /gpus and /profiles, one
 * connection, a time budget well under a second) and the cached profiles (read from the store,
 * the fingerprint compared with this machine through /proc and /sys).
 *
 * One line on stdout says why (or what is fine). Exit status by --mode:
 *   nhc (default): 0 ok; 1 a profile is missing, not valid or stale; 3 ftbenchd does not answer
 *                  (profiles otherwise fine); 2 bad usage.
 *   npd:           node-problem-detector's plugin contract: 0 OK; 1 NonOK (missing, not valid,
 *                  stale); 2 Unknown (ftbenchd does not answer, the store cannot be read, bad
 *                  usage).
 * The first problem found is the one reported: missing, then not valid, then stale, then the
 * daemon. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdarg.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/flags.h"
#include "ftprofile.h"
#include "util/fsutil.h"
#include "util/http_client.h"
#include "util/timeutil.h"

/* Severity of a finding, in the order the first one reported is picked. */
enum finding { H_OK = 0, H_DAEMON, H_STALE, H_INVALID, H_MISSING };

struct health {
	enum finding worst;
	char line[3072];
	int profiles_ok;
	double newest_age;
};

static void found(struct health *h, enum finding f, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void found(struct health *h, enum finding f, const char *fmt, ...)
{
	if (f <= h->worst)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(h->line, sizeof h->line, fmt, ap);
	va_end(ap);
	h->worst = f;
}

/* An interval (N, Ns, Nm, Nh, Nd) in seconds, or -1. */
static double parse_age(const char *s)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || !(v > 0) || !isfinite(v))
		return -1;
	double mul = !*end || !strcmp(end, "s") ? 1 : !strcmp(end, "m") ? 60 : !strcmp(end, "h") ? 3600
		   : !strcmp(end, "d") ? 86400 : -1;
	return mul < 0 ? -1 : v * mul;
}

/* Check the stored profile of gpu uuid ("host": a GPU-less host's) in dir. */
static void check_profile(struct health *h, const char *dir, const char *uuid, const char *bus, double max_age)
{
	char path[4096], why[512] = "";
	int r = ftprof_store_file(dir, strcmp(uuid, "host") ? uuid : NULL, path, sizeof path);
	if (r < 0) {
		found(h, H_MISSING, "%s: not a GPU uuid (%s)", uuid, strerror(-r));
		return;
	}
	json_error_t je;
	char *text = NULL;
	size_t len;
	/* a regular file only, opened without blocking: a FIFO planted there must not hang us */
	r = ftfs_read_regular(path, FTPROF_MAX_FILE_BYTES, &text, &len);
	if (r == -ENOENT) {
		found(h, H_MISSING, "no profile for %s in %s (run a bw job: ftbench submit bw --gpu %s)", uuid, dir,
		      uuid);
		return;
	}
	json_t *p = r == 0 ? json_loadb(text, len, 0, &je) : NULL;
	free(text);
	if (!json_is_object(p)) {
		found(h, H_INVALID, "the profile of %s is corrupt: %s", uuid,
		      r < 0 ? strerror(-r) : p ? "not a JSON object" : je.text);
		json_decref(p);
		return;
	}
	if (json_is_false(json_object_get(p, "valid"))) {
		json_t *first = json_array_get(json_object_get(p, "invalid_reasons"), 0);
		found(h, H_INVALID, "the profile of %s is not valid: %s", uuid,
		      json_is_string(first) ? json_string_value(first) : "its own checks failed");
		json_decref(p);
		return;
	}
	const char *pbus = json_string_value(json_object_get(json_object_get(p, "gpu"), "pci_bus_id"));
	json_t *now = ftprof_fingerprint_at(NULL, pbus ? pbus : bus);
	int st = now ? ftprof_fingerprint_compare(json_object_get(p, "fingerprint"), now, why, sizeof why) : 0;
	json_decref(now);
	json_t *ep = json_object_get(p, "epoch");
	double age = json_is_number(ep) ? fttime_wall_epoch() - json_number_value(ep) : -1;
	if (st == 1)
		found(h, H_STALE, "the profile of %s is stale: %s", uuid, why);
	else if (!json_is_number(ep))
		found(h, H_STALE, "the profile of %s has no epoch: its age is unknown", uuid);
	else if (age > max_age)
		found(h, H_STALE, "the profile of %s is %.1f days old (max %.1f)", uuid, age / 86400, max_age / 86400);
	else {
		h->profiles_ok++;
		if (h->newest_age < 0 || age < h->newest_age)
			h->newest_age = age;
	}
	json_decref(p);
}

struct health_opts {
	int mode; /* 0 nhc, 1 npd */
	const char *profile_dir, *daemon, *token_file;
	double max_age;
	int no_daemon;
	long timeout_ms;
};

static int set_max_age(const struct ftflag *f, const char *arg, void *opts)
{
	(void)f;
	double v = parse_age(arg);
	if (v < 0) {
		fprintf(stderr, "ftbench health: --max-age '%s': give an interval such as 30d, 12h, 3600s\n", arg);
		return -1;
	}
	((struct health_opts *)opts)->max_age = v;
	return 0;
}

static const struct ftflag rows[] = {
	{"mode", FTF_ENUM, FTF_FIELD(struct health_opts, mode), .meta = "M", .choices = "nhc|npd", .def = "nhc",
	 .help = "exit codes: nhc (Slurm HealthCheckProgram / NHC) 0 ok, 1 a profile missing, not valid or stale, "
		 "3 ftbenchd does not answer, 2 bad usage; npd (node-problem-detector custom plugin) 0 OK, 1 NonOK "
		 "(missing, not valid, stale), 2 Unknown (ftbenchd does not answer, store unreadable, bad usage)"},
	{"profile-dir", FTF_STR, FTF_FIELD(struct health_opts, profile_dir), .meta = "DIR",
	 .def_help = "the daemon's (GET /profiles), else $XDG_CACHE_HOME/freetoken/benchbw",
	 .help = "the profile store"},
	{"max-age", FTF_CALL, .meta = "AGE", .set = set_max_age, .def = "30d",
	 .help = "a profile older than this is stale (30d, 12h, 3600s, ...); the daemon's profile-max-age"},
	{"daemon", FTF_STR, FTF_FIELD(struct health_opts, daemon), .meta = "URL",
	 .def_help = "env FTBENCHD_URL, else " FTHTTPC_DEFAULT_URL,
	 .help = "ftbenchd: its state, its GPU list (which profiles must exist) and its store"},
	{"token-file", FTF_STR, FTF_FIELD(struct health_opts, token_file), .meta = "FILE",
	 .def_help = "env FTBENCHD_TOKEN_FILE", .help = "bearer token file"},
	{"no-daemon", FTF_BOOL, FTF_FIELD(struct health_opts, no_daemon),
	 .help = "do not ask the daemon: judge the store's profiles alone"},
	{"timeout-ms", FTF_INT, FTF_FIELD(struct health_opts, timeout_ms), .meta = "MS", .lo = 50, .hi = 60000,
	 .def = "800", .unit = "ms", .help = "the whole daemon exchange"},
};

const struct ftflag_cmd ftcli_flags_health = {
	"health", rows, FTF_COUNT(rows),
	.about = "  Is this node's bandwidth profile fit to use? Answers from the daemon's state and the cached\n"
		 "  profiles, never measures, never touches CUDA; one line on stdout says why.",
};

/* GET path into *out (a new reference): 0, or -errno / -EPROTO (non-2xx or not JSON). */
static int get_json(struct fthttpc *c, const char *path, json_t **out)
{
	struct fthttpc_resp r = {0};
	int e = fthttpc_request(c, "GET", path, NULL, NULL, &r);
	if (e == 0 && (r.status < 200 || r.status > 299 || !json_is_object(r.json)))
		e = r.status == 401 ? -EACCES : -EPROTO;
	*out = e == 0 ? json_incref(r.json) : NULL;
	if (e == -EPROTO)
		fthttpc_describe_error(&r, c->err, sizeof c->err);
	fthttpc_resp_release(&r);
	return e;
}

int ftcli_cmd_health(int argc, char **argv)
{
	struct health_opts opt = {0};
	struct ftflag_state fst;
	int pr = ftflags_parse(&ftcli_flags_health, argc, argv, &opt, &fst);
	if (pr)
		return pr > 0 ? 0 : FTCLI_EXIT_USAGE;
	ftflags_release(&fst);
	int npd = opt.mode == 1, no_daemon = opt.no_daemon;
	const char *dir_opt = opt.profile_dir;
	const char *url = opt.daemon ? opt.daemon : getenv("FTBENCHD_URL");
	const char *tf = opt.token_file ? opt.token_file : getenv("FTBENCHD_TOKEN_FILE");
	double max_age = opt.max_age;
	long timeout_ms = opt.timeout_ms;

	struct health h = {.worst = H_OK, .newest_age = -1};
	char daemon_note[2560] = "", dir[4096] = "";
	json_t *gpus = NULL, *health = NULL, *plist = NULL;
	struct fthttpc hc = {0};
	int daemon_up = 0;
	if (!no_daemon) {
		int e = fthttpc_init(&hc, url && *url ? url : FTHTTPC_DEFAULT_URL);
		if (e < 0) {
			printf("--daemon: %s\n", hc.err);
			fthttpc_release(&hc);
			return FTCLI_EXIT_USAGE;
		}
		if (tf && *tf && (e = fthttpc_set_token_file(&hc, tf)) < 0) {
			printf("--token-file %s: %s\n", tf, e == -EINVAL ? "no token in the file" : strerror(-e));
			fthttpc_release(&hc);
			return FTCLI_EXIT_USAGE;
		}
		hc.connect_timeout_ms = timeout_ms / 2;
		hc.timeout_ms = timeout_ms;
		double t0 = fttime_wall_epoch();
		e = get_json(&hc, "/health", &health);
		const char *st = json_string_value(json_object_get(health, "status"));
		if (e < 0)
			snprintf(daemon_note, sizeof daemon_note, "ftbenchd does not answer: %s", hc.err);
		else if (!st || strcmp(st, "ok"))
			snprintf(daemon_note, sizeof daemon_note, "ftbenchd at %s is %s", hc.base, st ? st : "in an unknown state");
		else
			daemon_up = 1;
		/* what is left of the budget for the GPU list and the store's place */
		long left = timeout_ms - (long)((fttime_wall_epoch() - t0) * 1000);
		if (daemon_up && left > 20) {
			hc.timeout_ms = left;
			if (get_json(&hc, "/gpus", &gpus) < 0)
				gpus = NULL;
			left = timeout_ms - (long)((fttime_wall_epoch() - t0) * 1000);
			if (!dir_opt && left > 20) {
				hc.timeout_ms = left;
				if (get_json(&hc, "/profiles", &plist) < 0)
					plist = NULL;
			}
		}
		fthttpc_release(&hc);
	}
	if (dir_opt)
		snprintf(dir, sizeof dir, "%s", dir_opt);
	else if (json_is_string(json_object_get(plist, "dir")))
		snprintf(dir, sizeof dir, "%s", json_string_value(json_object_get(plist, "dir")));
	else if (ftprof_store_dir(dir, sizeof dir) < 0) {
		printf("no profile store: no home directory (give --profile-dir)\n");
		json_decref(gpus);
		json_decref(health);
		json_decref(plist);
		return npd ? 2 : 1;
	}

	json_t *list = json_object_get(gpus, "gpus");
	int checked = 0;
	if (json_is_array(list)) {
		/* the daemon's inventory: every GPU must have a profile; none: the host's */
		size_t i;
		json_t *g;
		json_array_foreach(list, i, g) {
			const char *uuid = json_string_value(json_object_get(g, "uuid"));
			if (uuid) {
				check_profile(&h, dir, uuid, json_string_value(json_object_get(g, "pci_bus_id")), max_age);
				checked++;
			}
		}
		if (json_array_size(list) == 0) {
			check_profile(&h, dir, "host", NULL, max_age);
			checked++;
		}
	} else {
		/* no inventory: the profiles the store holds */
		struct ftprof_entry *e;
		int n;
		int r = ftprof_store_list(dir, &e, &n);
		if (r < 0 && r != -ENOENT) {
			printf("cannot read the profile store %s: %s\n", dir, strerror(-r));
			json_decref(gpus);
			json_decref(health);
			json_decref(plist);
			return npd ? 2 : 1;
		}
		for (int i = 0; r == 0 && i < n; i++) {
			check_profile(&h, dir, e[i].name, NULL, max_age);
			checked++;
		}
		if (r == 0)
			free(e);
		if (checked == 0)
			found(&h, H_MISSING, "no profile in %s (run a bw job)%s%s", dir, daemon_note[0] ? "; " : "",
			      daemon_note);
	}
	if (!no_daemon && !daemon_up)
		found(&h, H_DAEMON, "%s", daemon_note);
	json_decref(gpus);
	json_decref(health);
	json_decref(plist);

	if (h.worst == H_OK) {
		printf("ok: %d profile(s) valid and current, the newest %.1f days old%s\n", h.profiles_ok,
		       h.newest_age > 0 ? h.newest_age / 86400 : 0.0, no_daemon ? "" : ", ftbenchd answers");
		return 0;
	}
	printf("%s\n", h.line);
	if (h.worst == H_DAEMON)
		return npd ? 2 : 3;
	return 1;
}
