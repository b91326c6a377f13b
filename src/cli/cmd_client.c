/* ftbench submit / jobs / wait / cancel: the client of ftbenchd's HTTP API (api/openapi.yaml).
 *
 * Exit status: 0 success (for wait: the job succeeded); 1 the job failed, timed out, was
 * cancelled or interrupted, or the daemon could not take the work now (429/5xx); 2 bad usage, a
 * request the daemon refused (4xx: its message and field shown verbatim), an unknown job, or no
 * daemon to talk to. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/client.h"
#include "cli/flags.h"
#include "cli/table.h"
#include "util/http_client.h"
#include "util/jobargs.h"
#include "util/sse.h"
#include "util/strutil.h"
#include "util/timeutil.h"

struct copts {
	const char *daemon;
	const char *token_file;
	long timeout;        /* submit only (0: the daemon's default) */
	const char *idem;    /* submit only */
	const char *raw;     /* submit only: --args JSON */
	int json;
	int wait;
};

#define O(m) FTF_FIELD(struct copts, m)
/* The options every client command takes. */
#define COMMON_ROWS                                                                                  \
	{"daemon", FTF_STR, O(daemon), .meta = "URL", .def_help = "env FTBENCHD_URL, else " FTHTTPC_DEFAULT_URL, \
	 .help = "ftbenchd to talk to"},                                                              \
	{"token-file", FTF_STR, O(token_file), .meta = "F", .def_help = "env FTBENCHD_TOKEN_FILE",    \
	 .help = "bearer token file"},                                                                \
	{"json", FTF_BOOL, O(json), .help = "machine output on stdout (no progress bar)"}

/* ------------------------------------------------------------------ option parsing */

/* submit's own options (--opt VALUE or --opt=VALUE, exact names), taken wherever they appear;
 * everything else after KIND is a job argument. Sets *used to the words consumed (0: not ours).
 * Returns 0, or an exit status after logging. */
static int take_client_opt(const char *a, const char *next, int *used, struct copts *o)
{
	const struct ftflag_cmd *t = &ftcli_flags_submit;
	*used = 0;
	for (int k = 0; k < t->nrows; k++) {
		const struct ftflag *f = &t->rows[k];
		size_t l = strlen(f->name);
		if (strncmp(a, "--", 2) || strncmp(a + 2, f->name, l) || (a[l + 2] != '=' && a[l + 2]))
			continue;
		const char *v = a[l + 2] == '=' ? a + l + 3 : next;
		char why[160];
		if (f->type == FTF_BOOL) {
			if (a[l + 2] == '=')
				continue; /* --wait=x: a job argument */
			*used = 1;
			ftflags_set(f, NULL, o, why, sizeof why);
			return 0;
		}
		if (!v) {
			ftcli_error("--%s needs a value", f->name);
			return FTCLI_EXIT_USAGE;
		}
		*used = a[l + 2] == '=' ? 1 : 2;
		if (ftflags_set(f, v, o, why, sizeof why) < 0) {
			ftcli_error("bad value '%s' for --%s: %s", v, f->name, why);
			return FTCLI_EXIT_USAGE;
		}
		return 0;
	}
	return 0;
}

/* The start of wait and cancel: options lo (-h prints usage), exactly one job ID, the client
 * opened on c and the ID (or a unique prefix) resolved into id. *go = 1 when the command goes on
 * (returns 0); else returns the exit status (0 after --help). c always needs fthttpc_release. */
static int one_job_start(int argc, char **argv, const struct ftflag_cmd *t, const char *cmd, struct copts *o,
			 struct fthttpc *c, char id[FTCLIENT_JOB_ID_LEN + 1], int *go)
{
	struct ftflag_state fs;
	int rc;
	*go = 0;
	if ((rc = ftflags_parse(t, argc, argv, o, &fs)))
		return rc > 0 ? 0 : FTCLI_EXIT_USAGE;
	int optind = fs.pos;
	argc = fs.argc;
	argv = fs.argv;
	ftflags_release(&fs); /* no joined lists: argv stays the caller's */
	if (optind >= argc) {
		ftcli_error("which job? (ftbench %s ID)", cmd);
		return FTCLI_EXIT_USAGE;
	}
	if (optind != argc - 1) {
		ftcli_error("one job id at a time");
		return FTCLI_EXIT_USAGE;
	}
	if (ftclient_open(c, o->daemon, o->token_file) < 0)
		return FTCLI_EXIT_USAGE;
	if ((rc = ftclient_resolve_id(c, argv[optind], id)))
		return rc;
	*go = 1;
	return 0;
}

/* ------------------------------------------------------------------ submit */

static const struct ftflag submit_rows[] = {
	{"wait", FTF_BOOL, O(wait),
	 .help = "follow the job until it ends (progress bar on a terminal); the exit status is then the job's: "
		 "0 succeeded, 1 failed/timed_out/cancelled/interrupted"},
	{"timeout", FTF_INT, O(timeout), .meta = "S", .lo = 1, .hi = (double)(1L << 40), .unit = "s",
	 .def_help = "the daemon's", .help = "per-job timeout"},
	{"idempotency-key", FTF_STR, O(idem), .meta = "K", .help = "the same key and body return the same job"},
	{"args", FTF_STR, O(raw), .meta = "JSON", .help = "a JSON object of arguments, merged with the --key value pairs"},
	COMMON_ROWS,
};

const struct ftflag_cmd ftcli_flags_submit = {
	"submit", submit_rows, FTF_COUNT(submit_rows), .args = "KIND [--key value ...]", .max_args = -1,
	.about = "\nSubmit a job to ftbenchd. KIND: bw, cache-copy, load-weights, decode. Job arguments are\n"
		 "--key value pairs (or --key=value; a bare --flag is true) and become the typed JSON args\n"
		 "object: dashes become underscores, numbers and true/false are typed, lists stay\n"
		 "comma-separated (e.g. --dtype bf16,nvfp4 --cpu-iters 8 -> {\"dtype\":\"bf16,nvfp4\",\n"
		 "\"cpu_iters\":8}). The daemon validates them; its message and field are shown as given.\n"
		 "Its options (below) are taken wherever they are, by their whole names.\n",
};

/* Client options are taken wherever they are (getopt cannot: job options are open-ended);
 * the rest after KIND become the args object. */
int ftcli_cmd_submit(int argc, char **argv)
{
	struct copts o = {0};
	const char *kind = NULL;
	char **rest = calloc((size_t)argc + 1, sizeof *rest);
	int nrest = 0, rc = FTCLI_EXIT_USAGE;
	json_t *req = NULL, *args = NULL, *job = NULL;
	struct fthttpc c = {0};
	struct fthttpc_resp r = {0};
	if (!rest) {
		ftcli_error("out of memory");
		return FTCLI_EXIT_FAIL;
	}
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *next = i + 1 < argc ? argv[i + 1] : NULL;
		int used;
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			ftflags_help(&ftcli_flags_submit, stdout);
			rc = 0;
			goto out;
		}
		if ((rc = take_client_opt(a, next, &used, &o)))
			goto out;
		rc = FTCLI_EXIT_USAGE;
		if (used) {
			i += used - 1;
			continue;
		}
		if (!kind) {
			if (a[0] == '-') {
				ftcli_error("'%s' before KIND: usage: ftbench submit KIND [--key value ...]", a);
				goto out;
			}
			kind = a;
			continue;
		}
		rest[nrest++] = argv[i];
	}
	if (!kind) {
		ftcli_error("which kind? (bw, cache-copy, load-weights, decode)");
		ftflags_help(&ftcli_flags_submit, stderr);
		goto out;
	}
	args = o.raw ? json_loads(o.raw, 0, NULL) : json_object();
	if (!json_is_object(args)) {
		ftcli_error("--args: not a JSON object");
		goto out;
	}
	char err[512] = "";
	int e = ftargs_kind_to_json(nrest, rest, kind, args, err, sizeof err);
	if (e == -ENOMEM) {
		ftcli_error("out of memory");
		rc = FTCLI_EXIT_FAIL;
		goto out;
	}
	if (e < 0) {
		ftcli_error("%s", err);
		goto out;
	}
	req = json_pack("{s:s,s:O}", "kind", kind, "args", args);
	if (!req) {
		ftcli_error("out of memory");
		rc = FTCLI_EXIT_FAIL;
		goto out;
	}
	if (o.timeout)
		json_object_set_new(req, "timeout_s", json_integer(o.timeout));
	if ((e = ftclient_open(&c, o.daemon, o.token_file)) < 0)
		goto out;

	char ih[200];
	const char *hdrs[2] = {NULL, NULL};
	if (o.idem) {
		size_t il = strlen(o.idem);
		int printable = il > 0 && il <= 128;
		for (const char *q = o.idem; printable && *q; q++)
			printable = *q >= 0x21 && *q <= 0x7e;
		if (!printable) {
			ftcli_error("--idempotency-key: 1 to 128 printable characters without spaces");
			goto out;
		}
		snprintf(ih, sizeof ih, "Idempotency-Key: %s", o.idem);
		hdrs[0] = ih;
	}
	e = fthttpc_request(&c, "POST", "/benchmark/start", req, hdrs, &r);
	if (e < 0) {
		rc = ftclient_transport_failed(&c, e);
		goto out;
	}
	if (r.status != 202 && r.status != 200) {
		rc = ftclient_api_failed(&r, o.json, "the daemon refused the job");
		goto out;
	}
	const char *id = ftclient_jstr(r.json, "id");
	if (!id || !ftclient_is_job_id(id)) {
		ftcli_error("the daemon answered %ld without a job id", r.status);
		rc = FTCLI_EXIT_FAIL;
		goto out;
	}
	if (!o.wait) {
		if (o.json) {
			ftcli_print_json(r.json);
		} else {
			json_t *qp = json_object_get(r.json, "queue_position");
			printf("%s\n", id);
			if (isatty(STDOUT_FILENO) || isatty(STDERR_FILENO)) {
				fprintf(stderr, "job %s: %s", id, ftclient_jstr(r.json, "state") ? ftclient_jstr(r.json, "state") : "?");
				if (json_is_integer(qp))
					fprintf(stderr, " (queue position %lld)", (long long)json_integer_value(qp));
				fprintf(stderr, "; follow it with: ftbench wait %s\n", id);
			}
		}
		rc = FTCLI_EXIT_OK;
		goto out;
	}
	if (!o.json)
		fprintf(stderr, "job %s submitted\n", id);
	char idc[FTCLIENT_JOB_ID_LEN + 1];
	memcpy(idc, id, sizeof idc);
	rc = ftclient_follow(&c, idc, !o.json && isatty(STDERR_FILENO), &job);
	if (rc == 0)
		rc = ftclient_finish(job, o.json);
out:
	fthttpc_resp_release(&r);
	fthttpc_release(&c);
	json_decref(req);
	json_decref(args);
	free(rest);
	return rc;
}

/* ------------------------------------------------------------------ jobs */

struct jobs_cli {
	struct copts o;
	const char *state;
	long limit;
	enum ftcli_format fmt;
};

_Static_assert(offsetof(struct jobs_cli, o) == 0, "COMMON_ROWS are offsets into struct copts");

static const struct ftflag jobs_rows[] = {
	{"state", FTF_STR, FTF_FIELD(struct jobs_cli, state), .meta = "STATE", .help = "only jobs in that state"},
	{"limit", FTF_INT, FTF_FIELD(struct jobs_cli, limit), .meta = "N", .lo = 1, .hi = 10000,
	 .def_help = "the daemon's, 100", .help = "at most N jobs"},
	{"output-format", FTF_ENUM, FTF_FIELD(struct jobs_cli, fmt), .meta = "F", .choices = "table|json|csv|md",
	 .def = "table", .alias = "format",
	 .help = "table, json (the daemon's answer, as --json), csv or md (the table's columns; run in seconds)"},
	COMMON_ROWS,
};

const struct ftflag_cmd ftcli_flags_jobs = {
	"jobs", jobs_rows, FTF_COUNT(jobs_rows),
	.about = "\nList ftbenchd's jobs, newest first. STATE: queued, running, succeeded, failed, cancelled,\n"
		 "timed_out, interrupted.\n",
};

/* "2026-11-29T10:55:10Z" -> "11-29 10:55:10" */
static void short_time(const char *iso, char *out, size_t n)
{
	if (iso && strlen(iso) >= 19 && iso[10] == 'T')
		snprintf(out, n, "%.5s %.8s", iso + 5, iso + 11);
	else
		snprintf(out, n, "%s", iso ? iso : "-");
}

/* A job's row: the table, csv and md columns. */
static const struct ftcol job_cols[] = {
	{"id", "ID", NULL, -16},
	{"kind", "KIND", NULL, -12},
	{"state", "STATE", NULL, -11},
	{"gpu", "GPU", NULL, -8},
	{"created", "CREATED", NULL, -14},
	{"run_s", "RUN", "s", 8, "%.1fs", "%.1f"},
	{"note", "NOTE", NULL, 0},
};

static void print_job_row(const struct fttable *t, const json_t *j)
{
	char created[32], gpu[24], note[160] = "";
	const char *state = ftclient_jstr(j, "state") ? ftclient_jstr(j, "state") : "?";
	short_time(ftclient_jstr(j, "created_at"), created, sizeof created);
	json_t *g = json_object_get(j, "gpu");
	int host = json_is_true(json_object_get(j, "host_exclusive"));
	if (json_is_object(g))
		snprintf(gpu, sizeof gpu, "%lld%s", (long long)json_integer_value(json_object_get(g, "index")),
			 host ? "+host" : "");
	else
		snprintf(gpu, sizeof gpu, "%s", host ? "host" : "-");
	json_t *p = json_object_get(j, "progress"), *qp = json_object_get(j, "queue_position");
	if (!strcmp(state, "queued") && json_is_integer(qp))
		snprintf(note, sizeof note, "queue position %lld", (long long)json_integer_value(qp));
	else if (!strcmp(state, "running") && json_is_object(p))
		snprintf(note, sizeof note, "%lld/%lld %s%s",
			 (long long)json_integer_value(json_object_get(p, "done")),
			 (long long)json_integer_value(json_object_get(p, "total")),
			 ftclient_jstr(p, "label") ? ftclient_jstr(p, "label") : "",
			 json_is_true(json_object_get(j, "cancel_requested")) ? " (cancelling)" : "");
	else if (ftclient_jstr(j, "error"))
		snprintf(note, sizeof note, "%.70s", ftclient_jstr(j, "error"));
	else if (ftclient_jstr(j, "profile_path"))
		snprintf(note, sizeof note, "%s", ftclient_jstr(j, "profile_path"));
	const char *id = ftclient_jstr(j, "id"), *kind = ftclient_jstr(j, "kind");
	fttable_row(t, (struct ftcell[]){FTCELL_SH(id, id ? id : "?"), FTCELL_SH(kind, kind ? kind : "?"), FTCELL_S(state),
					  FTCELL_S(gpu), FTCELL_SH(ftclient_jstr(j, "created_at"), created),
					  ftcell_json(json_object_get(j, "duration_s")), FTCELL_S(note)});
}

int ftcli_cmd_jobs(int argc, char **argv)
{
	struct jobs_cli jc = {0};
	struct ftflag_state fs;
	int pr = ftflags_parse(&ftcli_flags_jobs, argc, argv, &jc, &fs);
	if (pr)
		return pr > 0 ? 0 : FTCLI_EXIT_USAGE;
	ftflags_release(&fs);
	struct copts o = jc.o;
	enum ftcli_format fmt = jc.fmt;
	const char *state = jc.state;
	long limit = jc.limit;
	if (fmt == FTCLI_FMT_JSON)
		o.json = 1;
	struct fthttpc c = {0};
	struct fthttpc_resp r = {0};
	int rc = FTCLI_EXIT_USAGE;
	char path[256] = "/benchmark/jobs", esc[96];
	if (ftclient_open(&c, o.daemon, o.token_file) < 0)
		goto out;
	if (state) {
		if (fthttpc_escape_segment(state, esc, sizeof esc) < 0) {
			ftcli_error("--state '%s': not a state", state);
			goto out;
		}
		snprintf(path + strlen(path), sizeof path - strlen(path), "?state=%s", esc);
	}
	if (limit)
		snprintf(path + strlen(path), sizeof path - strlen(path), "%slimit=%ld", state ? "&" : "?", limit);
	int e = fthttpc_request(&c, "GET", path, NULL, NULL, &r);
	if (e < 0) {
		rc = ftclient_transport_failed(&c, e);
		goto out;
	}
	if (r.status != 200) {
		rc = ftclient_api_failed(&r, o.json, "listing jobs");
		goto out;
	}
	json_t *jobs = json_object_get(r.json, "jobs");
	if (!json_is_array(jobs)) {
		ftcli_error("the daemon's answer has no jobs list");
		rc = FTCLI_EXIT_FAIL;
		goto out;
	}
	if (o.json) {
		ftcli_print_json(r.json);
	} else if (json_array_size(jobs) == 0 && fmt == FTCLI_FMT_TABLE) {
		if (isatty(STDOUT_FILENO))
			printf("no jobs\n");
	} else {
		struct fttable t = {job_cols, FTCOL_COUNT(job_cols), fmt, .sep = "  "};
		size_t i;
		json_t *j;
		fttable_head(&t);
		json_array_foreach(jobs, i, j)
			print_job_row(&t, j);
	}
	rc = FTCLI_EXIT_OK;
out:
	fthttpc_resp_release(&r);
	fthttpc_release(&c);
	return rc;
}

/* ------------------------------------------------------------------ wait */

static const struct ftflag wait_rows[] = {COMMON_ROWS};

const struct ftflag_cmd ftcli_flags_wait = {
	"wait", wait_rows, FTF_COUNT(wait_rows), .args = "ID", .max_args = -1,
	.about = "\nFollow a job until it ends: a progress bar on a terminal, quiet when piped. ID is the job\n"
		 "id or a unique prefix of it (4+ hex digits). Prints the outcome (--json: the final job\n"
		 "record, with its result). Exit status: 0 succeeded; 1 failed, timed_out, cancelled or\n"
		 "interrupted; 2 unknown job or no daemon. Interrupting wait leaves the job running.\n",
};

int ftcli_cmd_wait(int argc, char **argv)
{
	struct copts o = {0};
	struct fthttpc c = {0};
	char id[FTCLIENT_JOB_ID_LEN + 1];
	json_t *job = NULL;
	int go = 0, rc = one_job_start(argc, argv, &ftcli_flags_wait, "wait", &o, &c, id, &go);
	if (!go)
		goto out;
	rc = ftclient_follow(&c, id, !o.json && isatty(STDERR_FILENO), &job);
	if (rc == 0)
		rc = ftclient_finish(job, o.json);
out:
	fthttpc_release(&c);
	return rc;
}

/* ------------------------------------------------------------------ cancel */

static const struct ftflag cancel_rows[] = {
	{"wait", FTF_BOOL, O(wait), .help = "wait until the job has really ended"},
	COMMON_ROWS,
};

const struct ftflag_cmd ftcli_flags_cancel = {
	"cancel", cancel_rows, FTF_COUNT(cancel_rows), .args = "ID", .max_args = -1,
	.about = "\nCancel a job: a queued one at once; a running one gets SIGTERM, then SIGKILL after the\n"
		 "daemon's grace period. A job that already ended is an error (exit 1).\n",
};

int ftcli_cmd_cancel(int argc, char **argv)
{
	struct copts o = {0};
	struct fthttpc c = {0};
	struct fthttpc_resp r = {0};
	char id[FTCLIENT_JOB_ID_LEN + 1], path[128];
	json_t *job = NULL;
	int go = 0, rc = one_job_start(argc, argv, &ftcli_flags_cancel, "cancel", &o, &c, id, &go);
	if (!go)
		goto out;
	snprintf(path, sizeof path, "/benchmark/jobs/%s/cancel", id);
	int e = fthttpc_request(&c, "POST", path, NULL, NULL, &r);
	if (e < 0) {
		rc = ftclient_transport_failed(&c, e);
		goto out;
	}
	if (r.status == 409) {
		/* already finished: say how it ended */
		ftclient_api_failed(&r, o.json, id);
		rc = FTCLI_EXIT_FAIL;
		goto out;
	}
	if (r.status != 200 && r.status != 202) {
		rc = ftclient_api_failed(&r, o.json, id);
		goto out;
	}
	if (o.wait && r.status == 202) {
		rc = ftclient_follow(&c, id, !o.json && isatty(STDERR_FILENO), &job);
		if (rc)
			goto out;
		if (o.json)
			ftcli_print_json(job);
		else
			ftclient_print_final(job);
		json_decref(job);
		rc = FTCLI_EXIT_OK;
		goto out;
	}
	if (o.json)
		ftcli_print_json(r.json);
	else if (r.status == 200)
		printf("job %s cancelled\n", id);
	else
		printf("job %s: cancel requested (the worker is being stopped)\n", id);
	rc = FTCLI_EXIT_OK;
out:
	fthttpc_resp_release(&r);
	fthttpc_release(&c);
	return rc;
}
