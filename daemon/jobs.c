/* jobs: the job list, submission with idempotency keys, the scheduler, cancel, retention,
 * the API and journal representations of a job. Everything here runs with ftd.lock held. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

#include "ftbenchd.h"
#include "log.h"
#include "util/strutil.h"
#include "util/timeutil.h"

struct ftd_daemon ftd;
const double ftd_dur_bounds[11] = {1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 14400};

static const char *const state_names[ST_N] = {"queued",    "running",   "succeeded",  "failed",
					       "cancelled", "timed_out", "interrupted"};
static const char *const kind_names[FTD_N_KINDS] = {"bw", "cache-copy", "load-weights", "decode"};
static const char *const ev_names[] = {"state", "progress", "result", "error"};

const char *ftd_state_name(enum ftd_state s)
{
	return s < ST_N ? state_names[s] : "unknown";
}

int ftd_state_parse(const char *s)
{
	for (int i = 0; i < ST_N; i++)
		if (!strcmp(state_names[i], s))
			return i;
	return -1;
}

static int kind_index(const char *name)
{
	for (int i = 0; i < FTD_N_KINDS; i++)
		if (!strcmp(kind_names[i], name))
			return i;
	return -1;
}

void ftd_wake(void)
{
	uint64_t one = 1;
	if (ftd.wake_fd >= 0 && write(ftd.wake_fd, &one, sizeof one) < 0) {
		/* the counter is saturated: the loop is awake anyway */
	}
}

void ftd_notify_status(void)
{
	sd_notifyf(0, "STATUS=%d queued, %d running", ftd_count_state(ST_QUEUED), ftd_count_state(ST_RUNNING));
}

static void iso(double t, char *buf, size_t n)
{
	time_t s = (time_t)t;
	struct tm tm;
	gmtime_r(&s, &tm);
	strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static json_t *time_or_null(double t)
{
	char b[32];
	if (t <= 0)
		return json_null();
	iso(t, b, sizeof b);
	return json_string(b);
}

/* A string of the job's (a worker's error text, a path) as JSON; bytes that are not UTF-8 become '?'. */
static json_t *str_or_null(const char *s)
{
	if (!s)
		return json_null();
	size_t l = strlen(s);
	if (ftstr_utf8_valid(s, l))
		return json_string(s);
	char *t = malloc(l + 1);
	json_t *o = t ? json_string(ftstr_utf8_sanitize(t, l + 1, s)) : NULL;
	free(t);
	return o;
}

struct ftd_job *ftd_job_find(const char *id)
{
	for (struct ftd_job *j = ftd.head; j; j = j->next)
		if (!strcmp(j->id, id))
			return j;
	return NULL;
}

int ftd_count_state(enum ftd_state s)
{
	int n = 0;
	for (struct ftd_job *j = ftd.head; j; j = j->next)
		n += j->state == s;
	return n;
}

int ftd_queue_position(const struct ftd_job *q)
{
	if (q->state != ST_QUEUED)
		return -1;
	int n = 0;
	for (struct ftd_job *j = ftd.head; j && j != q; j = j->next)
		n += j->state == ST_QUEUED;
	return n;
}

json_t *ftd_job_json(const struct ftd_job *j, int with_result)
{
	char link[64];
	json_t *o = json_object();
	json_object_set_new(o, "id", json_string(j->id));
	json_object_set_new(o, "kind", json_string(j->kind->name));
	json_object_set_new(o, "state", json_string(ftd_state_name(j->state)));
	json_object_set_new(o, "args", j->args ? json_incref(j->args) : json_object());
	json_t *argv = json_array();
	for (char **p = j->argv; p && *p; p++)
		json_array_append_new(argv, json_string(*p));
	json_object_set_new(o, "argv", argv);
	json_object_set_new(o, "gpu", j->gpu_index >= 0 ? json_pack("{s:i,s:s}", "index", j->gpu_index, "uuid",
								      j->gpu_uuid)
							 : json_null());
	json_object_set_new(o, "host_exclusive", json_boolean(j->host_excl));
	json_object_set_new(o, "timeout_s", json_integer(j->timeout_s));
	json_object_set_new(o, "created_at", time_or_null(j->created));
	json_object_set_new(o, "started_at", time_or_null(j->started));
	json_object_set_new(o, "finished_at", time_or_null(j->finished));
	double end = j->finished > 0 ? j->finished : ft_wall_epoch();
	json_object_set_new(o, "duration_s", j->started > 0 ? json_real(end - j->started) : json_null());
	int qp = ftd_queue_position(j);
	json_object_set_new(o, "queue_position", qp >= 0 ? json_integer(qp) : json_null());
	json_object_set_new(o, "progress", j->has_progress ? json_pack("{s:i,s:i,s:s}", "done", j->prog_done, "total",
								       j->prog_total, "label",
								       j->prog_label ? j->prog_label : "")
							   : json_null());
	json_object_set_new(o, "cancel_requested", json_boolean(j->cancel_requested));
	json_object_set_new(o, "exit_status", j->exit_status >= 0 ? json_integer(j->exit_status) : json_null());
	json_object_set_new(o, "signal", j->sig > 0 ? json_integer(j->sig) : json_null());
	json_object_set_new(o, "error", str_or_null(j->error));
	if (with_result)
		json_object_set_new(o, "result", j->result ? json_incref(j->result) : json_null());
	json_object_set_new(o, "profile_path", str_or_null(j->profile_path));
	json_object_set_new(o, "idempotency_key", str_or_null(j->idem_key));
	json_t *links = json_object();
	snprintf(link, sizeof link, "/benchmark/jobs/%s", j->id);
	json_object_set_new(links, "self", json_string(link));
	snprintf(link, sizeof link, "/benchmark/jobs/%s/events", j->id);
	json_object_set_new(links, "events", json_string(link));
	snprintf(link, sizeof link, "/benchmark/jobs/%s/log", j->id);
	json_object_set_new(links, "log", json_string(link));
	snprintf(link, sizeof link, "/benchmark/jobs/%s/cancel", j->id);
	json_object_set_new(links, "cancel", json_string(link));
	json_object_set_new(o, "links", links);
	return o;
}

json_t *ftd_job_record(const struct ftd_job *j)
{
	json_t *o = ftd_job_json(j, 1);
	json_object_del(o, "links");
	json_object_del(o, "queue_position");
	json_object_set_new(o, "seq", json_integer((json_int_t)j->seq));
	json_object_set_new(o, "created", json_real(j->created));
	json_object_set_new(o, "started", json_real(j->started));
	json_object_set_new(o, "finished", json_real(j->finished));
	json_object_set_new(o, "pid", json_integer(j->pid));
	json_object_set_new(o, "request", str_or_null(j->req_canon));
	return o;
}

static char *dup_or_null(json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));
	return s ? strdup(s) : NULL;
}

static struct ftd_job *job_new(void)
{
	struct ftd_job *j = calloc(1, sizeof *j);
	if (!j)
		return NULL;
	j->refs = 1;
	j->gpu_index = -1;
	j->exit_status = -1;
	j->sig = -1;
	j->rfd = j->ofd = j->logfd = -1;
	return j;
}

static void job_free(struct ftd_job *j)
{
	if (!j)
		return;
	json_decref(j->args);
	ftd_argv_free(j->argv);
	free(j->prog_label);
	free(j->error);
	json_decref(j->result);
	free(j->profile_path);
	free(j->idem_key);
	free(j->req_canon);
	for (size_t i = 0; i < j->nev; i++)
		free(j->ev[i].data);
	free(j->ev);
	free(j->line);
	free(j);
}

void ftd_job_unref(struct ftd_job *j)
{
	if (j && --j->refs == 0)
		job_free(j);
}

struct ftd_job *ftd_job_from_record(json_t *rec)
{
	const char *id = json_string_value(json_object_get(rec, "id"));
	const char *kind = json_string_value(json_object_get(rec, "kind"));
	const char *state = json_string_value(json_object_get(rec, "state"));
	if (!id || strlen(id) != 16 || !kind || !state || !ftd_kind_find(kind) || ftd_state_parse(state) < 0)
		return NULL;
	struct ftd_job *j = job_new();
	if (!j)
		return NULL;
	memcpy(j->id, id, 17);
	j->kind = ftd_kind_find(kind);
	j->kind_idx = kind_index(kind);
	j->state = ftd_state_parse(state);
	j->seq = (unsigned long long)json_integer_value(json_object_get(rec, "seq"));
	json_t *args = json_object_get(rec, "args");
	j->args = json_is_object(args) ? json_incref(args) : json_object();
	json_t *argv = json_object_get(rec, "argv");
	size_t n = json_array_size(argv);
	j->argv = calloc(n + 1, sizeof(char *));
	for (size_t i = 0; j->argv && i < n; i++)
		j->argv[i] = strdup(json_string_value(json_array_get(argv, i)) ? json_string_value(json_array_get(argv, i)) : "");
	json_t *gpu = json_object_get(rec, "gpu");
	if (json_is_object(gpu)) {
		j->gpu_index = (int)json_integer_value(json_object_get(gpu, "index"));
		snprintf(j->gpu_uuid, sizeof j->gpu_uuid, "%s",
			 json_string_value(json_object_get(gpu, "uuid")) ? json_string_value(json_object_get(gpu, "uuid")) : "");
	}
	j->host_excl = json_is_true(json_object_get(rec, "host_exclusive"));
	j->timeout_s = (long)json_integer_value(json_object_get(rec, "timeout_s"));
	j->created = json_number_value(json_object_get(rec, "created"));
	j->started = json_number_value(json_object_get(rec, "started"));
	j->finished = json_number_value(json_object_get(rec, "finished"));
	json_t *p = json_object_get(rec, "progress");
	if (json_is_object(p)) {
		j->has_progress = 1;
		j->prog_done = (int)json_integer_value(json_object_get(p, "done"));
		j->prog_total = (int)json_integer_value(json_object_get(p, "total"));
		j->prog_label = dup_or_null(p, "label");
	}
	j->cancel_requested = json_is_true(json_object_get(rec, "cancel_requested"));
	json_t *es = json_object_get(rec, "exit_status");
	j->exit_status = json_is_integer(es) ? (int)json_integer_value(es) : -1;
	json_t *sg = json_object_get(rec, "signal");
	j->sig = json_is_integer(sg) ? (int)json_integer_value(sg) : -1;
	j->error = dup_or_null(rec, "error");
	json_t *res = json_object_get(rec, "result");
	j->result = json_is_object(res) ? json_incref(res) : NULL;
	j->profile_path = dup_or_null(rec, "profile_path");
	j->idem_key = dup_or_null(rec, "idempotency_key");
	j->req_canon = dup_or_null(rec, "request");
	j->pid = (pid_t)json_integer_value(json_object_get(rec, "pid"));
	return j;
}

void ftd_job_event(struct ftd_job *j, enum ftd_ev_type type, json_t *data)
{
	if (!data)
		return;
	if (type == EV_PROGRESS && j->nev >= FTD_MAX_EVENTS) {
		json_decref(data);
		pthread_cond_broadcast(&ftd.cond);
		return;
	}
	if (j->nev == j->evcap) {
		size_t cap = j->evcap ? j->evcap * 2 : 8;
		struct ftd_event *e = realloc(j->ev, cap * sizeof *e);
		if (!e) {
			json_decref(data);
			return;
		}
		j->ev = e;
		j->evcap = cap;
	}
	char *s = json_dumps(data, JSON_COMPACT);
	json_decref(data);
	if (!s)
		return;
	j->ev[j->nev].type = type;
	j->ev[j->nev].data = s;
	j->nev++;
	pthread_cond_broadcast(&ftd.cond);
}

const char *ftd_event_name(enum ftd_ev_type t);
const char *ftd_event_name(enum ftd_ev_type t)
{
	return ev_names[t];
}

int ftd_job_set_state(struct ftd_job *j, enum ftd_state s)
{
	j->state = s;
	int r = ftd_journal_write(j);
	if (r < 0)
		ftd_log(FTD_LOG_ERR, "job %s: journal write failed: %s", j->id, strerror(-r));
	ftd_job_event(j, EV_STATE, json_pack("{s:s}", "state", ftd_state_name(s)));
	ftd_notify_status();
	return r;
}

static void new_id(char id[17])
{
	unsigned char b[8];
	if (getrandom(b, sizeof b, 0) != sizeof b) {
		uint64_t t = ft_now_ns() ^ ((uint64_t)getpid() << 32);
		memcpy(b, &t, sizeof b);
	}
	for (int i = 0; i < 8; i++)
		snprintf(id + 2 * i, 3, "%02x", b[i]);
}

/* Put j at the end of the job list (ftd.lock held). */
static void append_job(struct ftd_job *j)
{
	if (ftd.tail)
		ftd.tail->next = j;
	else
		ftd.head = j;
	ftd.tail = j;
	ftd.njobs++;
}

/* The worker argv of j from its args and the configuration, worker and inventory in force now
 * (new array in *argv_out, the GPU's inventory position in *gpu_pos); -1 with err filled when
 * they refuse it. A bw job also writes its own copy of the profile to the state dir. */
static int job_argv(const struct ftd_job *j, char ***argv_out, int *gpu_pos, struct ftd_err *err)
{
	char **argv;
	if (ftd_kind_build(j->kind, j->args, &ftd.cfg, ftd.worker, ftd.gpus, ftd.ngpus, gpu_pos, &argv, err) < 0)
		return -1;
	if (!strcmp(j->kind->name, "bw")) {
		size_t n = 0;
		while (argv[n])
			n++;
		char **v = realloc(argv, sizeof(char *) * (n + 2));
		char *ofl = NULL;
		if (v)
			argv = v;
		if (!v || asprintf(&ofl, "--output=%s/%s.profile.json", ftd.logs_dir, j->id) < 0) {
			ftd_argv_free(argv);
			ftd_err_set(err, 503, "internal", NULL, "out of memory");
			return -1;
		}
		argv[n] = argv[n - 1]; /* keep --result-fd=3 last */
		argv[n - 1] = ofl;
		argv[n + 1] = NULL;
	}
	*argv_out = argv;
	return 0;
}

int ftd_job_argv_now(struct ftd_job *j, char *why, size_t n)
{
	struct ftd_err err = {0};
	char **argv;
	int gpu;
	if (job_argv(j, &argv, &gpu, &err) < 0) {
		snprintf(why, n, "the configuration in force when the job started refuses it: %s", err.message);
		return -1;
	}
	const char *uuid = gpu >= 0 ? ftd.gpus[gpu].uuid : "";
	if (strcmp(uuid, j->gpu_index >= 0 ? j->gpu_uuid : "")) {
		ftd_argv_free(argv);
		snprintf(why, n, "the GPU chosen at submission (%s) is not the one the inventory gives now (%s)",
			 j->gpu_index >= 0 ? j->gpu_uuid : "none", *uuid ? uuid : "none");
		return -1;
	}
	ftd_argv_free(j->argv);
	j->argv = argv;
	return 0;
}

int ftd_job_submit(const char *kind, json_t *args, long timeout_s, const char *idem_key,
		   const char *req_canon, struct ftd_job **out, int *replayed, struct ftd_err *err)
{
	*replayed = 0;
	if (idem_key) {
		for (struct ftd_job *j = ftd.head; j; j = j->next) {
			if (j->idem_key && !strcmp(j->idem_key, idem_key)) {
				if (j->req_canon && req_canon && !strcmp(j->req_canon, req_canon)) {
					*out = j;
					*replayed = 1;
					return 0;
				}
				ftd_err_set(err, 409, "idempotency_conflict", NULL,
					    "Idempotency-Key was used for job %s with another body", j->id);
				return -1;
			}
		}
	}
	if (ftd.stopping) {
		ftd_err_set(err, 503, "shutting_down", NULL, "the daemon is stopping");
		return -1;
	}
	const struct ftd_kind *k = ftd_kind_find(kind);
	if (!k) {
		ftd_err_set(err, 400, "unknown_kind", "kind",
			    "unknown kind '%.*s' (bw, cache-copy, load-weights, decode)", ftstr_utf8_cut(kind, 64), kind);
		return -1;
	}
	if (timeout_s == 0)
		timeout_s = ftd.cfg.job_timeout;
	if (timeout_s < 1 || timeout_s > ftd.cfg.max_job_timeout) {
		ftd_err_set(err, 400, "invalid_argument", "timeout_s", "timeout_s: expected an integer in [1, %ld]",
			    ftd.cfg.max_job_timeout);
		return -1;
	}
	struct ftd_job *j = job_new();
	if (!j) {
		ftd_err_set(err, 503, "internal", NULL, "out of memory");
		return -1;
	}
	do
		new_id(j->id);
	while (ftd_job_find(j->id));
	j->kind = k;
	j->args = args ? json_deep_copy(args) : json_object();
	/* validated now against the configuration in force; built again when the job starts */
	char **argv;
	int gpu;
	if (!j->args || job_argv(j, &argv, &gpu, err) < 0) {
		if (!j->args)
			ftd_err_set(err, 503, "internal", NULL, "out of memory");
		job_free(j);
		return -1;
	}
	if (ftd_count_state(ST_QUEUED) >= ftd.cfg.max_queue) {
		ftd_argv_free(argv);
		job_free(j);
		ftd_err_set(err, 429, "queue_full", NULL, "%ld jobs are already queued", ftd.cfg.max_queue);
		return -1;
	}
	j->seq = ftd.next_seq++;
	j->kind_idx = kind_index(kind);
	j->state = ST_QUEUED;
	j->argv = argv;
	if (gpu >= 0) {
		j->gpu_index = ftd.gpus[gpu].index;
		snprintf(j->gpu_uuid, sizeof j->gpu_uuid, "%s", ftd.gpus[gpu].uuid);
	}
	j->host_excl = k->host_exclusive;
	j->timeout_s = timeout_s;
	j->created = ft_wall_epoch();
	j->idem_key = idem_key ? strdup(idem_key) : NULL;
	j->req_canon = req_canon ? strdup(req_canon) : NULL;
	int r = ftd_journal_write(j);
	if (r < 0) {
		ftd_log(FTD_LOG_ERR, "job %s: journal write failed: %s", j->id, strerror(-r));
		job_free(j);
		ftd_err_set(err, 503, "journal_error", NULL, "the journal could not be written: %s", strerror(-r));
		return -1;
	}
	append_job(j);
	ftd_job_event(j, EV_STATE, json_pack("{s:s}", "state", "queued"));
	ftd_log(FTD_LOG_INFO, "job %s: %s queued%s%s", j->id, k->name, gpu >= 0 ? " on " : "",
		gpu >= 0 ? j->gpu_uuid : "");
	ftd_notify_status();
	ftd_wake();
	*out = j;
	return 0;
}

int ftd_job_cancel(struct ftd_job *j, struct ftd_err *err)
{
	if (ftd_state_final(j->state)) {
		ftd_err_set(err, 409, "job_finished", NULL, "job %s already finished (%s)", j->id,
			    ftd_state_name(j->state));
		return 409;
	}
	if (j->state == ST_QUEUED) {
		j->cancel_requested = 1;
		j->finished = ft_wall_epoch();
		ftd_job_set_state(j, ST_CANCELLED);
		ftd_job_account(j);
		ftd_log(FTD_LOG_INFO, "job %s: cancelled while queued", j->id);
		ftd_wake();
		return 200;
	}
	if (!j->cancel_requested) {
		j->cancel_requested = 1;
		ftd_log(FTD_LOG_INFO, "job %s: cancel requested", j->id);
		ftd_journal_write(j);
		ftd_wake(); /* the main loop sends the signals */
	}
	return 202;
}

void ftd_job_account(const struct ftd_job *j)
{
	if (j->kind_idx < 0)
		return;
	ftd.finished_total[j->kind_idx][j->state]++;
	if (j->started > 0 && j->finished >= j->started) {
		double d = j->finished - j->started;
		int b = 0;
		while (b < 11 && d > ftd_dur_bounds[b])
			b++;
		ftd.dur_buckets[j->kind_idx][b]++;
		ftd.dur_sum[j->kind_idx] += d;
		ftd.dur_count[j->kind_idx]++;
	}
}

int ftd_job_all_gpus(const struct ftd_job *j)
{
	const char *g = json_string_value(json_object_get(j->args, "gpu"));
	return j->kind && !strcmp(j->kind->name, "bw") && g && !strcmp(g, "all");
}

/* Scheduler. Resources: each GPU exclusively; the host shared by every job, exclusively by
 * host_excl jobs. Walk the queue oldest first; a job that cannot start reserves what it needs,
 * so no later job may take those resources before it (FIFO without starvation), while later
 * jobs on disjoint GPUs still start. */
void ftd_sched(void)
{
	if (ftd.stopping)
		return;
	int ng = ftd.ngpus;
	char busy[256] = {0}, resv[256] = {0};
	int host_busy_excl = 0, host_used = 0, host_resv_excl = 0, host_resv_shared = 0;
	long running = 0;
	for (struct ftd_job *j = ftd.head; j; j = j->next) {
		if (j->state != ST_RUNNING)
			continue;
		running++;
		host_used = 1;
		if (j->host_excl)
			host_busy_excl = 1;
		if (j->gpu_index >= 0 && j->gpu_index < 256)
			busy[j->gpu_index] = 1;
	}
	(void)ng;
	for (struct ftd_job *j = ftd.head; j; j = j->next) {
		if (j->state != ST_QUEUED)
			continue;
		int g = j->gpu_index >= 0 && j->gpu_index < 256 ? j->gpu_index : -1;
		int ok;
		if (j->host_excl)
			ok = !host_used && !host_resv_excl && !host_resv_shared;
		else
			ok = !host_busy_excl && !host_resv_excl && (g < 0 || (!busy[g] && !resv[g]));
		if (ok && running >= ftd.cfg.max_running)
			break; /* max-running: nothing starts, nothing overtakes */
		if (ok) {
			char why[768] = "";
			j->started = ft_wall_epoch();
			if (ftd_job_argv_now(j, why, sizeof why) < 0 || ftd_runner_start(j, why, sizeof why) < 0) {
				j->finished = ft_wall_epoch();
				free(j->error);
				j->error = strdup(why);
				ftd_job_event(j, EV_ERROR, json_pack("{s:s}", "message", why));
				ftd_job_set_state(j, ST_FAILED);
				ftd_job_account(j);
				ftd_log(FTD_LOG_ERR, "job %s: %s", j->id, why);
				continue;
			}
			running++;
			host_used = 1;
			if (j->host_excl)
				host_busy_excl = 1;
			if (g >= 0)
				busy[g] = 1;
		} else {
			if (j->host_excl)
				host_resv_excl = 1;
			else
				host_resv_shared = 1;
			if (g >= 0)
				resv[g] = 1;
		}
	}
}

static void unlink_job(struct ftd_job *prev, struct ftd_job *j)
{
	if (prev)
		prev->next = j->next;
	else
		ftd.head = j->next;
	if (ftd.tail == j)
		ftd.tail = prev;
	ftd.njobs--;
	j->next = NULL;
	j->removed = 1;
	ftd_journal_remove(j);
	ftd_job_unref(j);
}

void ftd_retention(void)
{
	double now = ft_wall_epoch();
	long finished = 0;
	for (struct ftd_job *j = ftd.head; j; j = j->next)
		finished += ftd_state_final(j->state);
	struct ftd_job *prev = NULL, *j = ftd.head;
	while (j) {
		struct ftd_job *next = j->next;
		if (ftd_state_final(j->state) &&
		    (finished > ftd.cfg.retain_jobs || (j->finished > 0 && now - j->finished > ftd.cfg.retain_age))) {
			finished--;
			unlink_job(prev, j);
		} else {
			prev = j;
		}
		j = next;
	}
}

static int cmp_seq(const void *a, const void *b)
{
	const struct ftd_job *x = *(struct ftd_job *const *)a, *y = *(struct ftd_job *const *)b;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

int ftd_jobs_load(void)
{
	DIR *d = opendir(ftd.jobs_dir);
	if (!d)
		return -errno;
	struct ftd_job **v = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);
		if (l != 21 || strcmp(e->d_name + 16, ".json"))
			continue; /* temp files of an interrupted atomic write are skipped */
		char path[4096];
		snprintf(path, sizeof path, "%s/%s", ftd.jobs_dir, e->d_name);
		json_error_t jerr;
		json_t *rec = json_load_file(path, 0, &jerr);
		struct ftd_job *j = rec ? ftd_job_from_record(rec) : NULL;
		json_decref(rec);
		if (!j) {
			ftd_log(FTD_LOG_WARNING, "journal: %s is not a job record; ignored", path);
			continue;
		}
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			struct ftd_job **nv = realloc(v, cap * sizeof *nv);
			if (!nv) {
				job_free(j);
				break;
			}
			v = nv;
		}
		v[n++] = j;
	}
	closedir(d);
	if (n > 1)
		qsort(v, n, sizeof *v, cmp_seq);
	for (size_t i = 0; i < n; i++) {
		struct ftd_job *j = v[i];
		append_job(j);
		if (j->seq >= ftd.next_seq)
			ftd.next_seq = j->seq + 1;
		if (j->state == ST_QUEUED)
			ftd_job_event(j, EV_STATE, json_pack("{s:s}", "state", "queued"));
		if (j->state == ST_RUNNING) {
			ftd_runner_kill_orphan(j->id, j->pid);
			j->finished = ft_wall_epoch();
			free(j->error);
			j->error = strdup("the daemon stopped while the job was running");
			ftd_job_event(j, EV_ERROR, json_pack("{s:s}", "message", j->error));
			ftd_job_set_state(j, ST_INTERRUPTED);
			ftd_log(FTD_LOG_NOTICE, "job %s: was running when the daemon stopped: interrupted", j->id);
		} else if (ftd_state_final(j->state)) {
			if (j->result)
				ftd_job_event(j, EV_RESULT, json_pack("{s:O}", "result", j->result));
			if (j->error)
				ftd_job_event(j, EV_ERROR, json_pack("{s:s}", "message", j->error));
			ftd_job_event(j, EV_STATE, json_pack("{s:s}", "state", ftd_state_name(j->state)));
		}
	}
	free(v);
	ftd_log(FTD_LOG_INFO, "journal: %zu jobs loaded from %s", n, ftd.jobs_dir);
	return 0;
}

void ftd_jobs_free_all(void)
{
	struct ftd_job *j = ftd.head;
	while (j) {
		struct ftd_job *n = j->next;
		j->next = NULL;
		ftd_job_unref(j);
		j = n;
	}
	ftd.head = ftd.tail = NULL;
	ftd.njobs = 0;
}
