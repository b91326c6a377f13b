/* runner: see runner.h. */
#include "runner.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "daemon.h"
#include "journal.h"
#include "kinds.h"
#include "log.h"
#include "metrics.h"
#include "procs.h"
#include "profiles.h"
#include "sched.h"
#include "util/fsutil.h"
#include "util/proc.h"
#include "util/timeutil.h"
#include "util/workermsg.h"
#include "worker.h"

static void on_line(void *ctx, struct ftd_worker *w, char *line, size_t len);
static void on_protocol_error(void *ctx, struct ftd_worker *w, const char *what);
static json_t *load_cb(const char *uuid, void *ctx)
{
	(void)ctx;
	char *text = NULL;
	size_t len = 0;
	if (ftd_profiles_read(uuid, &text, &len) < 0)
		return NULL;
	json_t *p = json_loadb(text, len, 0, NULL);
	free(text);
	return p;
}

static void on_exited(void *ctx, struct ftd_worker *w);
static const struct ftd_worker_cb worker_cb = {on_line, on_protocol_error, on_exited};

/* A job that could not start (or run) failed: why is its error. */
static void fail_job(struct ftd_job *j, const char *why)
{
	j->finished = fttime_wall_epoch();
	ftd_job_set_error(j, why);
	ftd_job_error_event(j);
	if (ftd_daemon_set_state(j, FTD_JOB_FAILED) == 0)
		ftd_metrics_job_finished(j);
	ftd_log(FTD_LOG_ERR, "job %s: %s", j->id, why);
}

/* Build j's argv again from its args and the configuration and inventory in force now. 0, or
 * -1 with why saying what refuses it. */
static int argv_now(struct ftd_job *j, char *why, size_t n)
{
	struct ftd_err err = {0};
	struct ftd_kind_ctx c = ftd_daemon_kind_ctx(j->id);
	char **argv;
	int gpu;
	if (ftd_kind_argv(ftd_kind_at(j->kind_idx), j->args, &c, &gpu, &argv, &err) < 0) {
		snprintf(why, n, "the configuration in force when the job started refuses it: %s", err.message);
		return -1;
	}
	const char *uuid = gpu >= 0 ? ftd.gpus[gpu].uuid : "";
	if (strcmp(uuid, j->gpu_index >= 0 ? j->gpu_uuid : "")) {
		ftd_kind_argv_free(argv);
		snprintf(why, n, "the GPU chosen at submission (%s) is not the one the inventory gives now (%s)",
			 j->gpu_index >= 0 ? j->gpu_uuid : "none", *uuid ? uuid : "none");
		return -1;
	}
	ftd_kind_argv_free(j->argv);
	j->argv = argv;
	return 0;
}

static int start_job(struct ftd_job *j, char *why, size_t n)
{
	if (argv_now(j, why, n) < 0)
		return -1;
	char log_path[4096], *all = NULL;
	snprintf(log_path, sizeof log_path, "%s/%s.log", ftd.logs_dir, j->id);
	if (j->all_gpus) {
		/* every GPU of the inventory, in index order (the worker's --gpu all sees them all) */
		size_t len = 1;
		for (int i = 0; i < ftd.ngpus; i++)
			len += strlen(ftd.gpus[i].uuid) + 1;
		all = calloc(1, len);
		for (int i = 0; all && i < ftd.ngpus; i++) {
			if (i)
				strcat(all, ",");
			strcat(all, ftd.gpus[i].uuid);
		}
		if (!all) {
			snprintf(why, n, "out of memory");
			return -1;
		}
	}
	struct ftd_worker_spec s = {
		.argv = j->argv,
		.job_id = j->id,
		.gpus = all ? all : j->gpu_index >= 0 ? j->gpu_uuid : NULL,
		.log_path = log_path,
		.max_line = (size_t)ftd.cfg.max_result_line,
		.log_max = ftd.cfg.log_max,
		.timeout_s = j->timeout_s,
		.cb = &worker_cb,
		.ctx = j,
	};
	j->worker = ftd_worker_start(&s, why, n);
	free(all);
	if (!j->worker)
		return -1;
	j->pid = j->worker->pid;
	ftd_procs_job_started(j);
	if (ftd_daemon_set_state(j, FTD_JOB_RUNNING) < 0)
		ftd_log(FTD_LOG_WARNING, "job %s: running, but the journal says otherwise", j->id);
	ftd_log(FTD_LOG_INFO, "job %s: started %s (pid %d)", j->id, j->kind, (int)j->pid);
	return 0;
}

void ftd_runner_sched(void)
{
	if (ftd.stopping)
		return;
	int n = ftd.jobs.n;
	struct ftd_sched_job *v = calloc((size_t)n + 1, sizeof *v);
	struct ftd_job **jv = calloc((size_t)n + 1, sizeof *jv);
	int *start = calloc((size_t)n + 1, sizeof *start);
	if (!v || !jv || !start)
		goto out;
	for (int again = 1; again;) {
		again = 0;
		int k = 0;
		for (struct ftd_job *j = ftd.jobs.head; j && k < n; j = j->next, k++) {
			jv[k] = j;
			v[k].state = j->settling		   ? FTD_SCHED_OTHER
				     : j->state == FTD_JOB_QUEUED  ? FTD_SCHED_QUEUED
				     : j->state == FTD_JOB_RUNNING ? FTD_SCHED_RUNNING
								   : FTD_SCHED_OTHER;
			v[k].gpu = j->gpu_index;
			v[k].host_excl = j->host_excl;
		}
		int m = ftd_sched_pick(v, k, ftd.cfg.max_running, start);
		for (int i = 0; i < m; i++) {
			struct ftd_job *j = jv[start[i]];
			char why[768] = "";
			j->started = fttime_wall_epoch();
			j->started_ns = fttime_now_ns();
			if (start_job(j, why, sizeof why) < 0) {
				fail_job(j, why);
				again = 1; /* what it would have held is free: ask again */
			}
		}
	}
out:
	free(v);
	free(jv);
	free(start);
}

/* ---------------------------------------------------------------- a worker's messages */

/* Append text to *acc (a new string, lines joined by '\n'); out of memory keeps what was there. */
static void append_line(char **acc, const char *text)
{
	char *s;
	if (!*text)
		return;
	if (asprintf(&s, "%s%s%s", *acc ? *acc : "", *acc ? "\n" : "", text) < 0)
		return;
	free(*acc);
	*acc = s;
}

static void on_protocol_error(void *ctx, struct ftd_worker *w, const char *what)
{
	struct ftd_job *j = ctx;
	(void)w;
	char msg[512];
	snprintf(msg, sizeof msg, "worker protocol error: %s", what);
	ftd_job_set_error(j, msg);
	ftd_log(FTD_LOG_WARNING, "job %s: %s", j->id, msg);
}

/* One line of the worker protocol, read by src/util/workermsg.c. A worker's error messages are
 * gathered (the first line of the first is the job's error, all of them its detail) and sent
 * as the one error event when the job ends. */
static void on_line(void *ctx, struct ftd_worker *w, char *line, size_t len)
{
	struct ftd_job *j = ctx;
	struct ftwmsg m;
	char why[128];
	int r = ftwmsg_parse(line, len, &m, why, sizeof why);
	if (r < 0) {
		ftd_worker_protocol_error(w, ftd.cfg.kill_grace, r == -ENOMEM ? "out of memory" : why);
		return;
	}
	switch (m.type) {
	case FTWMSG_PROGRESS:
		j->has_progress = 1;
		j->prog_done = (int)m.done;
		j->prog_total = (int)m.total;
		free(j->prog_label);
		j->prog_label = strdup(m.label);
		ftd_job_event(j, FTD_EV_PROGRESS,
			      json_pack("{s:i,s:i,s:s}", "done", j->prog_done, "total", j->prog_total, "label",
					j->prog_label ? j->prog_label : ""));
		break;
	case FTWMSG_RESULT:
		json_decref(j->result);
		j->result = json_incref(m.result);
		ftd_job_event(j, FTD_EV_RESULT, json_pack("{s:O}", "result", m.result));
		break;
	case FTWMSG_ERROR: {
		char *detail = j->error_detail ? strdup(j->error_detail) : NULL;
		append_line(&detail, m.message);
		if (!j->error) {
			size_t l = strcspn(m.message, "\n");
			char *first = strndup(m.message, l);
			ftd_job_set_error(j, first ? first : m.message);
			free(first);
		}
		ftd_job_set_detail(j, detail);
		free(detail);
		break;
	}
	}
	ftwmsg_release(&m);
}

/* ---------------------------------------------------------------- the end of a run */

/* The last (at most FTD_RUNNER_TAIL_LINES) lines of the job's log that say something: not
 * empty, not a progress line or a progress bar's redraw, not the daemon's own note. A new
 * string, or NULL when there is none. */
#define FTD_RUNNER_TAIL_LINES 8
static char *log_tail(const char *job_id)
{
	char path[4096], *text = NULL;
	size_t len = 0;
	snprintf(path, sizeof path, "%s/%s.log", ftd.logs_dir, job_id);
	if (ftfs_read_file(path, (size_t)ftd.cfg.log_max + 4096, &text, &len) < 0)
		return NULL;
	const char *keep[FTD_RUNNER_TAIL_LINES];
	size_t klen[FTD_RUNNER_TAIL_LINES], n = 0;
	for (char *p = text, *e; p < text + len; p = e + 1) {
		e = memchr(p, '\n', (size_t)(text + len - p));
		if (!e)
			e = text + len;
		char *cr = memrchr(p, '\r', (size_t)(e - p)); /* a redrawn line: what was drawn last */
		const char *b = cr ? cr + 1 : p;
		size_t l = (size_t)(e - b);
		while (l && (b[l - 1] == ' ' || b[l - 1] == '\t'))
			l--;
		if (!l || !strncmp(b, "FTBENCH ", 8) || !strncmp(b, "[ftbenchd:", 10) || !strncmp(b, "\033[K", 3))
			continue;
		if (n == FTD_RUNNER_TAIL_LINES) {
			memmove(keep, keep + 1, sizeof keep[0] * (n - 1));
			memmove(klen, klen + 1, sizeof klen[0] * (n - 1));
			n--;
		}
		keep[n] = b;
		klen[n++] = l;
	}
	char *out = NULL;
	for (size_t i = 0; i < n; i++) {
		char *line = strndup(keep[i], klen[i]);
		if (line)
			append_line(&out, line);
		free(line);
	}
	free(text);
	return out;
}

/* Why a run that did not succeed ended so. msg is the daemon's reason ("the worker exited with
 * status 2", "cancelled"). A plain failure that the worker explained keeps the worker's error
 * (its detail: every message, then msg). Otherwise the error is msg (daemon_wins: the daemon
 * stopped the run, or a signal ended it) or msg and the last line of the worker's output (as
 * the seed's daemon gives the reason), and the detail what the worker said and its last lines. */
static void explain_failure(struct ftd_job *j, const char *msg, int daemon_wins)
{
	char *detail = j->error_detail ? strdup(j->error_detail) : j->error ? strdup(j->error) : NULL;
	if (j->error && !daemon_wins) {
		append_line(&detail, msg);
		ftd_job_set_detail(j, detail);
		free(detail);
		return;
	}
	char *tail = log_tail(j->id), *one = NULL;
	const char *last = tail ? strrchr(tail, '\n') : NULL;
	last = last ? last + 1 : tail;
	if (last && !daemon_wins && asprintf(&one, "%s: %s", msg, last) < 0)
		one = NULL;
	ftd_job_set_error(j, one ? one : msg);
	if (tail)
		append_line(&detail, tail);
	ftd_job_set_detail(j, detail);
	free(detail);
	free(tail);
	free(one);
}

static int store_cb(const json_t *profile, const char *uuid, char **path_out, void *ctx)
{
	(void)ctx;
	return ftd_profiles_store(profile, uuid, path_out);
}

static int legacy_cb(const json_t *profile, const char *stored, char *msg, size_t n, void *ctx)
{
	(void)ctx;
	return ftd_profiles_legacy(profile, stored, msg, n);
}

static void on_exited(void *ctx, struct ftd_worker *w)
{
	struct ftd_job *j = ctx;
	const struct ftd_kind *k = ftd_kind_at(j->kind_idx);
	struct ftd_job_end e = {
		.timed_out = w->timed_out,
		.daemon_stopping = j->stop_by_daemon,
		.cancelled = j->cancel_requested,
		.proto_err = w->proto_err,
		.exit_status = w->exit_status,
		.sig = w->sig,
		.has_result = j->result != NULL,
	};
	char msg[256];
	j->exit_status = w->exit_status;
	j->sig = w->sig;
	enum ftd_job_state s = ftd_job_outcome(&e, j->timeout_s, msg, sizeof msg);
	struct ftd_kind_done d = {
		.job_id = j->id,
		.result = j->result,
		.gpu_uuid = j->gpu_index >= 0 ? j->gpu_uuid : NULL,
		.exit_status = w->exit_status,
		.store = store_cb,
		.legacy = legacy_cb,
		.load = load_cb,
		.ctx = j,
		.store_dir = ftd.profile_dir,
	};
	int explained = 0;
	if (s == FTD_JOB_FAILED && j->exit_status != 0 && j->result && !w->proto_err && k && k->on_failure) {
		k->on_failure(&d);
		if (*d.msg) {
			ftd_job_set_error(j, d.msg);
			ftd_job_set_detail(j, d.detail);
			explained = 1;
		}
	}
	if (s == FTD_JOB_SUCCEEDED && k && k->on_success) {
		if (k->on_success(&d) < 0) {
			s = FTD_JOB_FAILED;
			ftd_job_set_error(j, d.msg);
			explained = 1;
		} else if (d.profile_path) {
			free(j->profile_path);
			j->profile_path = d.profile_path;
			d.profile_path = NULL;
			ftd_log(FTD_LOG_INFO, "job %s: profile written to %s", j->id, j->profile_path);
		}
		if (*d.note)
			ftd_log(FTD_LOG_NOTICE, "job %s: %s", j->id, d.note);
	}
	free(d.profile_path);
	free(d.detail);
	if (s == FTD_JOB_SUCCEEDED)
		ftd_job_set_error(j, NULL);
	else if (!explained && !w->proto_err)
		/* the daemon's reason wins when it stopped the run; a worker's own error explains a
		 * plain failure */
		explain_failure(j, msg, s != FTD_JOB_FAILED || j->sig > 0);
	else if (!j->error)
		ftd_job_set_error(j, msg);
	ftd_job_error_event(j);
	j->finished = fttime_wall_epoch();
	j->worker = NULL;
	ftd_worker_free(w);
	if (ftd_daemon_set_state(j, s) == 0)
		ftd_metrics_job_finished(j);
	ftd_log(FTD_LOG_INFO, "job %s: %s (exit status %d)%s%s", j->id, ftd_job_state_name(s), j->exit_status,
		j->error ? ": " : "", j->error ? j->error : "");
}

/* ---------------------------------------------------------------- the main loop's parts */

static int running(const struct ftd_job *j)
{
	return j->state == FTD_JOB_RUNNING && j->worker;
}

int ftd_runner_npollfds(void)
{
	int n = 0;
	for (struct ftd_job *j = ftd.jobs.head; j; j = j->next)
		if (running(j))
			n += (j->worker->rfd >= 0) + (j->worker->ofd >= 0);
	return n;
}

int ftd_runner_pollfds(struct pollfd *pfd, struct ftd_job **owner, int max)
{
	int n = 0;
	for (struct ftd_job *j = ftd.jobs.head; j && n + 2 <= max; j = j->next) {
		if (!running(j))
			continue;
		int k = ftd_worker_pollfds(j->worker, pfd + n);
		for (int i = 0; i < k; i++)
			owner[n + i] = j;
		n += k;
	}
	return n;
}

void ftd_runner_io(struct ftd_job *j, int fd, short revents)
{
	(void)revents;
	if (running(j))
		ftd_worker_io(j->worker, fd, ftd.cfg.kill_grace);
}

void ftd_runner_reap(void)
{
	for (;;) {
		int st;
		pid_t pid = ftproc_reap_any(&st);
		if (pid <= 0)
			return;
		for (struct ftd_job *j = ftd.jobs.head; j; j = j->next) {
			if (!running(j) || j->worker->pid != pid || j->worker->reaped)
				continue;
			ftd_worker_reaped(j->worker, st, fttime_now_ns());
			/* whatever the worker left behind goes with it, so the pipes reach EOF: its
			 * groups, what carries its FTBENCHD_JOB_ID, and whatever below the daemon (a
			 * subreaper) no running job claims */
			ftd_procs_end_job(j);
			j->worker->reaped_ns = fttime_now_ns();
			break;
		}
	}
}

int ftd_runner_timers(void)
{
	uint64_t now = fttime_now_ns(), next = UINT64_MAX;
	long grace = ftd.cfg.kill_grace;
	for (struct ftd_job *j = ftd.jobs.head; j; j = j->next) {
		if (!running(j))
			continue;
		struct ftd_worker *w = j->worker;
		if ((j->cancel_requested || ftd.stopping) && !w->kill_at_ns && !w->reaped) {
			if (ftd.stopping && !j->cancel_requested)
				j->stop_by_daemon = 1;
			ftd_worker_terminate(w, grace);
		}
		if (ftd_worker_timers(w, now, grace, &next))
			ftd_log(FTD_LOG_NOTICE, "job %s: timed out after %ld s", j->id, j->timeout_s);
		if (!w->reaped && w->groups_scan_ns + FTD_PROCS_TRACK_NS < next)
			next = w->groups_scan_ns + FTD_PROCS_TRACK_NS; /* ftd_procs_track */
	}
	if (next == UINT64_MAX)
		return -1;
	uint64_t ms = next > now ? (next - now) / 1000000 + 1 : 0;
	return ms > 60000 ? 60000 : (int)ms;
}

void ftd_runner_finish_ready(void)
{
	uint64_t now = fttime_now_ns();
	struct ftd_job *j = ftd.jobs.head;
	while (j) {
		struct ftd_job *next = j->next;
		if (running(j) && j->worker->reaped) {
			struct ftd_worker *w = j->worker;
			if ((!w->rfd_eof || !w->ofd_eof) && now - w->reaped_ns > FTD_WORKER_PIPE_GRACE_NS)
				ftd_log(FTD_LOG_WARNING, "job %s: the worker exited but its pipes stay open; closing them",
					j->id);
			ftd_worker_check_done(w, now, ftd.cfg.kill_grace);
		}
		j = next;
	}
}

int ftd_runner_busy(void)
{
	int n = 0;
	for (struct ftd_job *j = ftd.jobs.head; j; j = j->next)
		n += running(j);
	return n;
}

int ftd_runner_settle(void)
{
	int next = -1;
	uint64_t now = fttime_now_ns();
	for (struct ftd_job *j = ftd.jobs.head; j; j = j->next) {
		if (!j->settling)
			continue;
		if (ftd_daemon_settle(j)) {
			ftd_metrics_job_finished(j);
			continue;
		}
		int ms = j->settle_next_ns > now ? (int)((j->settle_next_ns - now) / 1000000) + 1 : 0;
		if (next < 0 || ms < next)
			next = ms;
	}
	return next;
}

int ftd_runner_over_count(void)
{
	long finished = 0;
	for (struct ftd_job *j = ftd.jobs.head; j; j = j->next)
		finished += ftd_job_final(j->state);
	return finished > ftd.cfg.retain_jobs;
}

/* How long ago j finished: on the monotonic clock when this run saw it finish; else by its wall
 * time against the wall clock as of the daemon's start plus the monotonic time since (a jump of
 * the wall clock while the daemon runs moves no job's age). */
static double age_s(const struct ftd_job *j, uint64_t now_ns)
{
	if (j->finished_ns)
		return (double)(now_ns - j->finished_ns) / 1e9;
	double now = ftd.start_wall + (double)(now_ns - ftd.start_ns) / 1e9;
	return j->finished > 0 ? now - j->finished : 0;
}

void ftd_runner_retention(void)
{
	uint64_t now = fttime_now_ns();
	long finished = 0;
	for (struct ftd_job *j = ftd.jobs.head; j; j = j->next)
		finished += ftd_job_final(j->state);
	struct ftd_job *prev = NULL, *j = ftd.jobs.head;
	while (j) {
		struct ftd_job *next = j->next;
		if (ftd_job_final(j->state) &&
		    (finished > ftd.cfg.retain_jobs || age_s(j, now) > (double)ftd.cfg.retain_age)) {
			finished--;
			ftd_journal_remove(ftd.jobs_dir, ftd.logs_dir, j);
			ftd_jobs_unlink(&ftd.jobs, prev, j);
		} else {
			prev = j;
		}
		j = next;
	}
}

static void kill_orphans(struct ftd_job *j, void *ctx)
{
	(void)ctx;
	ftd_procs_kill_orphan(j->id);
}

/* <state-dir>/event-ids: ids are reserved on disk this many at a time (one write each) */
#define EV_RESERVE 4096ull
#define EV_RETRY 64ull /* after a failed write, the next try this many ids later */

static void event_ids_path(char *path, size_t n)
{
	snprintf(path, n, "%s/event-ids", ftd.state_dir);
}

static void reserve_event_ids(struct ftd_jobs *l)
{
	char path[4096];
	event_ids_path(path, sizeof path);
	int r = ftd_journal_event_ids_save(path, l->next_ev + EV_RESERVE);
	if (r < 0) {
		/* ids go on growing in this run; only a crash before a write succeeds could hand the
		 * ones above the last saved limit out again */
		ftd_log(FTD_LOG_ERR, "%s: %s; event ids above %llu are not reserved", path, strerror(-r), l->next_ev);
		l->ev_limit = l->next_ev + EV_RETRY;
		return;
	}
	l->ev_limit = l->next_ev + EV_RESERVE;
}

int ftd_runner_load(void)
{
	struct ftd_job **v;
	size_t n;
	char path[4096];
	unsigned long long next_ev = 0;
	event_ids_path(path, sizeof path);
	int r = ftd_journal_event_ids_load(path, &next_ev);
	if (r < 0)
		ftd_log(FTD_LOG_WARNING, "%s: %s; event ids go on after the journal's", path, strerror(-r));
	r = ftd_journal_load(ftd.jobs_dir, kill_orphans, NULL, &v, &n);
	if (r < 0)
		return r;
	/* every id handed out before is below the reserved limit or recorded in a finished job's record */
	for (size_t i = 0; i < n; i++)
		for (int k = 0; k < 3; k++)
			if (v[i]->rec_ev[k] >= next_ev)
				next_ev = v[i]->rec_ev[k] + 1;
	ftd.jobs.next_ev = next_ev ? next_ev : 1;
	ftd.jobs.ev_limit = 0; /* the first id taken reserves */
	ftd.jobs.ev_reserve = reserve_event_ids;
	for (size_t i = 0; i < n; i++) {
		struct ftd_job *j = v[i];
		ftd_jobs_append(&ftd.jobs, j);
		if (j->seq >= ftd.jobs.next_seq)
			ftd.jobs.next_seq = j->seq + 1;
		if (ftd_job_replay(j))
			ftd_daemon_save(j); /* its events' new ids, kept from now on */
	}
	free(v);
	ftd_log(FTD_LOG_INFO, "journal: %zu jobs loaded from %s", n, ftd.jobs_dir);
	return 0;
}

void ftd_runner_inventory(void)
{
	char *argv[] = {ftd.worker, "gpus", "--json", NULL};
	char *out = NULL, why[256];
	size_t len;
	int st = 0, timed_out = 0;
	ftd.ngpus = 0;
	ftd.gpus_known = 0;
	snprintf(ftd.gpus_reason, sizeof ftd.gpus_reason, "unknown");
	if (ftd_worker_capture(argv, ftd.cfg.gpus_timeout, 1 << 20, &out, &len, &st, &timed_out, why, sizeof why) < 0) {
		snprintf(ftd.gpus_reason, sizeof ftd.gpus_reason, "%s", why);
		ftd_log(FTD_LOG_WARNING, "inventory: %s", ftd.gpus_reason);
		return;
	}
	json_t *o = json_loads(out, 0, NULL);
	free(out);
	json_t *arr = json_object_get(o, "gpus");
	if (timed_out || !json_is_array(arr)) {
		snprintf(ftd.gpus_reason, sizeof ftd.gpus_reason, "%s gpus --json %s", ftd.worker,
			 timed_out ? "timed out" : WIFEXITED(st) && WEXITSTATUS(st) ? "failed" : "printed no GPU list");
		ftd_log(FTD_LOG_WARNING, "inventory: %s", ftd.gpus_reason);
		json_decref(o);
		return;
	}
	size_t n = json_array_size(arr);
	ftd.gpus = calloc(n ? n : 1, sizeof *ftd.gpus);
	for (size_t i = 0; ftd.gpus && i < n && i < 256; i++)
		if (ftgpu_from_json(json_array_get(arr, i), &ftd.gpus[ftd.ngpus]) == 0)
			ftd.ngpus++;
	ftd.gpus_known = 1;
	const char *reason = json_string_value(json_object_get(o, "reason"));
	snprintf(ftd.gpus_reason, sizeof ftd.gpus_reason, "%s", ftd.ngpus ? "" : reason ? reason : "no GPU");
	json_decref(o);
	ftd_log(FTD_LOG_INFO, "inventory: %d GPU(s)%s%s", ftd.ngpus, ftd.ngpus ? "" : ": ", ftd.gpus_reason);
	for (int i = 0; i < ftd.ngpus; i++)
		ftd_log(FTD_LOG_INFO, "inventory: GPU %d %s %s", ftd.gpus[i].index, ftd.gpus[i].uuid, ftd.gpus[i].name);
}

void ftd_runner_free_all(void)
{
	for (struct ftd_job *j = ftd.jobs.head; j; j = j->next) {
		ftd_worker_free(j->worker);
		j->worker = NULL;
	}
	ftd_jobs_free_all(&ftd.jobs);
}
