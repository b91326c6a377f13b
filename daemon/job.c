/* job: the state machine, the events and the list of jobs; see job.h. */
#include "job.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "util/strutil.h"
#include "util/timeutil.h"

static const char *const state_names[FTD_JOB_N] = {"queued",    "running",   "succeeded",  "failed",
						   "cancelled", "timed_out", "interrupted"};
static const char *const ev_names[] = {"state", "progress", "result", "error"};

const char *ftd_job_state_name(enum ftd_job_state s)
{
	return s < FTD_JOB_N ? state_names[s] : "unknown";
}

int ftd_job_state_parse(const char *s)
{
	for (int i = 0; i < FTD_JOB_N; i++)
		if (!strcmp(state_names[i], s))
			return i;
	return -1;
}

const char *ftd_job_ev_name(enum ftd_job_ev t)
{
	return ev_names[t];
}

struct ftd_job *ftd_job_new(void)
{
	struct ftd_job *j = calloc(1, sizeof *j);
	if (!j)
		return NULL;
	j->refs = 1;
	j->gpu_index = -1;
	j->exit_status = -1;
	j->sig = -1;
	j->dur_s = -1;
	j->kind_idx = -1;
	return j;
}

void ftd_job_new_id(char id[FTD_JOB_ID_LEN + 1])
{
	unsigned char b[FTD_JOB_ID_LEN / 2];
	if (getrandom(b, sizeof b, 0) != sizeof b) {
		uint64_t t = fttime_now_ns() ^ ((uint64_t)getpid() << 32);
		memcpy(b, &t, sizeof b);
	}
	for (size_t i = 0; i < sizeof b; i++)
		snprintf(id + 2 * i, 3, "%02x", b[i]);
}

static void job_free(struct ftd_job *j)
{
	json_decref(j->args);
	for (char **p = j->argv; p && *p; p++)
		free(*p);
	free(j->argv);
	free(j->prog_label);
	free(j->error);
	free(j->error_detail);
	json_decref(j->result);
	free(j->profile_path);
	free(j->idem_key);
	free(j->req_canon);
	for (size_t i = 0; i < j->nev; i++)
		free(j->ev[i].data);
	free(j->ev);
	free(j);
}

void ftd_job_unref(struct ftd_job *j)
{
	if (j && --j->refs == 0)
		job_free(j);
}

static void wake(struct ftd_job *j)
{
	if (j->list && j->list->cond)
		pthread_cond_broadcast(j->list->cond);
}

unsigned long long ftd_jobs_event_id(struct ftd_job *j)
{
	struct ftd_jobs *l = j->list;
	if (!l)
		return j->nev ? j->ev[j->nev - 1].id + 1 : 1;
	if (l->next_ev == 0)
		l->next_ev = 1;
	if (l->next_ev >= l->ev_limit && l->ev_reserve)
		l->ev_reserve(l);
	return l->next_ev++;
}

void ftd_job_event_as(struct ftd_job *j, enum ftd_job_ev type, json_t *data, unsigned long long id)
{
	if (!data)
		return;
	if (type == FTD_EV_PROGRESS && j->nev >= FTD_JOB_MAX_EVENTS) {
		json_decref(data);
		wake(j);
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
	j->ev[j->nev].id = id ? id : ftd_jobs_event_id(j);
	j->ev[j->nev].data = s;
	j->nev++;
	wake(j);
}

void ftd_job_event(struct ftd_job *j, enum ftd_job_ev type, json_t *data)
{
	ftd_job_event_as(j, type, data, 0);
}

void ftd_job_set_error(struct ftd_job *j, const char *msg)
{
	free(j->error);
	j->error = msg ? strdup(msg) : NULL;
	if (!msg)
		ftd_job_set_detail(j, NULL);
}

void ftd_job_set_detail(struct ftd_job *j, const char *detail)
{
	free(j->error_detail);
	j->error_detail = detail ? strdup(detail) : NULL;
}

static json_t *str_or_null(const char *s);

void ftd_job_error_event(struct ftd_job *j)
{
	if (j->error)
		ftd_job_event(j, FTD_EV_ERROR, json_pack("{s:o,s:o}", "message", str_or_null(j->error), "detail",
							 str_or_null(j->error_detail)));
}

int ftd_job_replay(struct ftd_job *j)
{
	if (j->state == FTD_JOB_QUEUED)
		ftd_job_event(j, FTD_EV_STATE, json_pack("{s:s}", "state", "queued"));
	if (!ftd_job_final(j->state))
		return 0;
	/* the recorded ids, when the record has one for each event replayed, in order */
	const unsigned long long *r = j->rec_ev;
	int keep = r[2] && (!j->result) == !r[0] && (!j->error) == !r[1] && (!r[0] || r[0] < (r[1] ? r[1] : r[2])) &&
		   (!r[1] || r[1] < r[2]);
	if (j->result)
		ftd_job_event_as(j, FTD_EV_RESULT, json_pack("{s:O}", "result", j->result), keep ? r[0] : 0);
	if (j->error)
		ftd_job_event_as(j, FTD_EV_ERROR,
				 json_pack("{s:o,s:o}", "message", str_or_null(j->error), "detail", str_or_null(j->error_detail)),
				 keep ? r[1] : 0);
	j->final_ev_id = keep ? r[2] : ftd_jobs_event_id(j);
	ftd_job_event_as(j, FTD_EV_STATE, json_pack("{s:s}", "state", ftd_job_state_name(j->state)), j->final_ev_id);
	return !keep;
}

void ftd_job_compact_events(struct ftd_job *j)
{
	if (j->refs != 1 || j->nev == 0)
		return;
	size_t last = j->nev, k = 0;
	for (size_t i = 0; i < j->nev; i++)
		if (j->ev[i].type == FTD_EV_PROGRESS)
			last = i;
	for (size_t i = 0; i < j->nev; i++) {
		if (j->ev[i].type == FTD_EV_PROGRESS && i != last) {
			free(j->ev[i].data);
			continue;
		}
		j->ev[k++] = j->ev[i];
	}
	j->nev = k;
}

enum ftd_job_state ftd_job_outcome(const struct ftd_job_end *e, long timeout_s, char *msg, size_t n)
{
	msg[0] = '\0';
	if (e->timed_out) {
		snprintf(msg, n, "timed out after %ld s", timeout_s);
		return FTD_JOB_TIMED_OUT;
	}
	if (e->daemon_stopping && !(e->exit_status == 0 && e->has_result && !e->proto_err)) {
		snprintf(msg, n, "the daemon stopped while the job was running");
		return FTD_JOB_INTERRUPTED;
	}
	if (e->cancelled) {
		snprintf(msg, n, "cancelled");
		return FTD_JOB_CANCELLED;
	}
	if (e->proto_err)
		return FTD_JOB_FAILED;
	if (e->exit_status == 0 && e->has_result)
		return FTD_JOB_SUCCEEDED;
	if (e->sig > 0)
		snprintf(msg, n, "the worker was killed by signal %d (%s)", e->sig, strsignal(e->sig));
	else if (e->exit_status != 0)
		snprintf(msg, n, "the worker exited with status %d", e->exit_status);
	else
		snprintf(msg, n, "the worker exited without a result");
	return FTD_JOB_FAILED;
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

double ftd_job_duration(const struct ftd_job *j)
{
	if (j->dur_s >= 0)
		return j->dur_s;
	if (j->started_ns)
		return (double)((j->finished_ns ? j->finished_ns : fttime_now_ns()) - j->started_ns) / 1e9;
	if (j->started <= 0)
		return -1;
	double d = (j->finished > 0 ? j->finished : fttime_wall_epoch()) - j->started;
	return d > 0 ? d : 0;
}

json_t *ftd_job_json(const struct ftd_job *j, int with_result, int queue_pos)
{
	char link[64];
	json_t *o = json_object();
	json_object_set_new(o, "id", json_string(j->id));
	json_object_set_new(o, "kind", json_string(j->kind));
	json_object_set_new(o, "state", json_string(ftd_job_state_name(j->state)));
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
	double dur = ftd_job_duration(j);
	json_object_set_new(o, "duration_s", dur >= 0 ? json_real(dur) : json_null());
	json_object_set_new(o, "queue_position", queue_pos >= 0 ? json_integer(queue_pos) : json_null());
	json_object_set_new(o, "progress", j->has_progress ? json_pack("{s:i,s:i,s:s}", "done", j->prog_done, "total",
								       j->prog_total, "label",
								       j->prog_label ? j->prog_label : "")
							   : json_null());
	json_object_set_new(o, "cancel_requested", json_boolean(j->cancel_requested));
	json_object_set_new(o, "exit_status", j->exit_status >= 0 ? json_integer(j->exit_status) : json_null());
	json_object_set_new(o, "signal", j->sig > 0 ? json_integer(j->sig) : json_null());
	json_object_set_new(o, "error", str_or_null(j->error));
	json_object_set_new(o, "error_detail", str_or_null(j->error_detail));
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

void ftd_jobs_append(struct ftd_jobs *l, struct ftd_job *j)
{
	if (l->tail)
		l->tail->next = j;
	else
		l->head = j;
	l->tail = j;
	l->n++;
	j->list = l;
}

void ftd_jobs_unlink(struct ftd_jobs *l, struct ftd_job *prev, struct ftd_job *j)
{
	if (prev)
		prev->next = j->next;
	else
		l->head = j->next;
	if (l->tail == j)
		l->tail = prev;
	l->n--;
	j->next = NULL;
	j->list = NULL;
	j->removed = 1;
	ftd_job_unref(j);
}

struct ftd_job *ftd_jobs_find(const struct ftd_jobs *l, const char *id)
{
	for (struct ftd_job *j = l->head; j; j = j->next)
		if (!strcmp(j->id, id))
			return j;
	return NULL;
}

int ftd_jobs_count(const struct ftd_jobs *l, enum ftd_job_state s)
{
	int n = 0;
	for (struct ftd_job *j = l->head; j; j = j->next)
		n += j->state == s;
	return n;
}

int ftd_jobs_queue_position(const struct ftd_jobs *l, const struct ftd_job *q)
{
	if (q->state != FTD_JOB_QUEUED)
		return -1;
	int n = 0;
	for (struct ftd_job *j = l->head; j && j != q; j = j->next)
		n += j->state == FTD_JOB_QUEUED;
	return n;
}

void ftd_jobs_free_all(struct ftd_jobs *l)
{
	struct ftd_job *j = l->head;
	while (j) {
		struct ftd_job *n = j->next;
		j->next = NULL;
		j->list = NULL;
		ftd_job_unref(j);
		j = n;
	}
	l->head = l->tail = NULL;
	l->n = 0;
}
