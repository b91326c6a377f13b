/* job: one benchmark job as the API and the journal see it (no pipes, no processes: a running
 * job's child lives in struct ftd_worker), its state machine, its event list (replayed to SSE
 * readers) and the job list. No I/O here: whoever changes a job writes the journal
 * (journal.h) and the logs. Every function runs with the daemon's lock held. */
#ifndef FTD_JOB_H
#define FTD_JOB_H
#include <jansson.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum ftd_job_state {
	FTD_JOB_QUEUED,
	FTD_JOB_RUNNING,
	FTD_JOB_SUCCEEDED, /* this and every state after it is final */
	FTD_JOB_FAILED,
	FTD_JOB_CANCELLED,
	FTD_JOB_TIMED_OUT,
	FTD_JOB_INTERRUPTED,
	FTD_JOB_N
};
enum ftd_job_ev { FTD_EV_STATE, FTD_EV_PROGRESS, FTD_EV_RESULT, FTD_EV_ERROR };

#define FTD_JOB_MAX_EVENTS 4096 /* progress events beyond this are not kept for replay */
#define FTD_JOB_ID_LEN 16       /* hex digits */

struct ftd_event {
	enum ftd_job_ev type;
	unsigned long long id; /* its SSE id: daemon-wide, strictly increasing, also over restarts */
	char *data;            /* one JSON object, compact */
};

struct ftd_jobs;
struct ftd_worker;

struct ftd_job {
	struct ftd_job *next;   /* the job list, oldest first */
	struct ftd_jobs *list;  /* the list it is on (NULL: none) */
	int refs;               /* 1 for the list + 1 per SSE reader */
	int removed;            /* dropped by retention while an SSE reader still holds it */
	char id[FTD_JOB_ID_LEN + 1];
	unsigned long long seq; /* submission order (FIFO) */
	const char *kind;       /* the kind's name (static, from the kinds table) */
	int kind_idx;           /* its row in the kinds table */
	enum ftd_job_state state;
	json_t *args;           /* as submitted (validated) */
	char **argv;            /* the worker's argv */
	int gpu_index;          /* inventory index, -1 none */
	char gpu_uuid[64];
	int all_gpus;           /* holds every GPU (a bw job with gpu "all") */
	int host_excl;
	long timeout_s;
	double created, started, finished; /* wall clock, 0 = not yet: for display and retention by date */
	uint64_t started_ns, finished_ns;  /* CLOCK_MONOTONIC, 0 = not in this run of the daemon */
	double dur_s;                      /* the run's duration once final (monotonic), -1 unknown */
	int settling;                      /* 1 + the final state still waiting for its journal write */
	uint64_t settle_next_ns;           /* when that write is tried again */
	int has_progress, prog_done, prog_total;
	char *prog_label;
	int cancel_requested;
	int exit_status, sig;   /* -1 = none */
	char *error;            /* why it did not succeed, one line (the first reason) */
	char *error_detail;     /* every reason, one a line (NULL: error says it all) */
	json_t *result;
	char *profile_path;
	char *idem_key, *req_canon;
	pid_t pid;              /* the worker's pid (and process group) as recorded, 0 none */
	int stop_by_daemon;     /* its run was ended because the daemon stops */
	struct ftd_event *ev;
	size_t nev, evcap;
	unsigned long long final_ev_id; /* the final state event's id, taken before its journal write */
	unsigned long long rec_ev[3];   /* from the journal: the ids its result, error and final state
					   events had (0 none), which ftd_job_replay gives them again */
	struct ftd_worker *worker; /* while running (runner.c owns it) */
};

/* The job list, oldest first. cond (may be NULL) is broadcast on every event.
 * Event ids: every event of every job on the list takes the next id (next_ev), so ids only grow.
 * Ids below ev_limit are reserved on disk: when next_ev reaches it, ev_reserve (may be NULL) is
 * called to reserve more (raise ev_limit) before the id is handed out; a restart starts at the
 * reserved limit, so no id handed out before a crash is handed out again. */
struct ftd_jobs {
	struct ftd_job *head, *tail;
	int n;
	unsigned long long next_seq;
	pthread_cond_t *cond;
	unsigned long long next_ev, ev_limit;
	void (*ev_reserve)(struct ftd_jobs *l);
};

const char *ftd_job_state_name(enum ftd_job_state s);
/* The state named s, or -1. */
int ftd_job_state_parse(const char *s);
static inline int ftd_job_final(enum ftd_job_state s) { return s >= FTD_JOB_SUCCEEDED; }
const char *ftd_job_ev_name(enum ftd_job_ev t);

/* A new job (refs 1, no GPU, no exit status), NULL when out of memory. Free with ftd_job_unref. */
struct ftd_job *ftd_job_new(void);
/* A fresh random id into id (FTD_JOB_ID_LEN hex digits + NUL). */
void ftd_job_new_id(char id[FTD_JOB_ID_LEN + 1]);
void ftd_job_unref(struct ftd_job *j);

/* Record an event (data: new reference, consumed; NULL ignored) and wake SSE readers. Progress
 * events beyond FTD_JOB_MAX_EVENTS are dropped. Its id is the list's next (ftd_jobs_event_id). */
void ftd_job_event(struct ftd_job *j, enum ftd_job_ev type, json_t *data);
/* The same with the id given (0: the list's next); id must be above the job's last event's. */
void ftd_job_event_as(struct ftd_job *j, enum ftd_job_ev type, json_t *data, unsigned long long id);
/* The next event id of j's list (reserving more first when due); a job on no list: its last
 * event's id + 1. */
unsigned long long ftd_jobs_event_id(struct ftd_job *j);
/* Set j->error to a copy of msg (NULL clears it; so does it error_detail). */
void ftd_job_set_error(struct ftd_job *j, const char *msg);
/* Set j->error_detail to a copy of detail (NULL clears it). */
void ftd_job_set_detail(struct ftd_job *j, const char *detail);
/* The job's error event: {"message": error, "detail": error_detail or null}; nothing without an
 * error. Sent once, when the job ends (and when a finished job is replayed). */
void ftd_job_error_event(struct ftd_job *j);
/* The events a job loaded from the journal replays: a queued job its state, a finished one
 * its result, error and state, with the ids of rec_ev when the journal had them all (else new
 * ones). 1 when a finished job's events took new ids (its record should be saved again). */
int ftd_job_replay(struct ftd_job *j);
/* A finished job keeps its state, result and error events but only its last progress event,
 * unless an SSE reader holds it. */
void ftd_job_compact_events(struct ftd_job *j);

/* How a run ended: what the worker did and why it was stopped. */
struct ftd_job_end {
	int timed_out;       /* the daemon stopped it at its timeout */
	int daemon_stopping; /* the daemon stopped it because the daemon stops */
	int cancelled;       /* a client cancelled it */
	int proto_err;       /* it broke the result protocol (j->error says how) */
	int exit_status;     /* 128+signal when killed */
	int sig;             /* > 0: killed by this signal */
	int has_result;
};
/* The final state of a run that ended as e, and the daemon's reason into msg ("" none). */
enum ftd_job_state ftd_job_outcome(const struct ftd_job_end *e, long timeout_s, char *msg, size_t n);

/* How long j ran (ran so far): from the monotonic clock while the daemon saw it, else from its
 * wall-clock times (never below 0); -1 when it never started. */
double ftd_job_duration(const struct ftd_job *j);

/* The job as its API object (new reference). with_result: include "result". queue_pos: its
 * queue position (-1 none). */
json_t *ftd_job_json(const struct ftd_job *j, int with_result, int queue_pos);

/* ---- the list */
/* Put j at the end of l (takes the list's reference). */
void ftd_jobs_append(struct ftd_jobs *l, struct ftd_job *j);
/* Take j (whose predecessor is prev, NULL for the head) off l, mark it removed and drop the
 * list's reference. */
void ftd_jobs_unlink(struct ftd_jobs *l, struct ftd_job *prev, struct ftd_job *j);
struct ftd_job *ftd_jobs_find(const struct ftd_jobs *l, const char *id);
int ftd_jobs_count(const struct ftd_jobs *l, enum ftd_job_state s);
/* Queue position of a queued job (0 = next), -1 otherwise. */
int ftd_jobs_queue_position(const struct ftd_jobs *l, const struct ftd_job *j);
void ftd_jobs_free_all(struct ftd_jobs *l);
#endif
