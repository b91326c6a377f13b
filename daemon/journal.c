/* journal: job records on disk; see journal.h. */
#include "journal.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kinds.h"
#include "log.h"
#include "util/fsutil.h"
#include "util/timeutil.h"

json_t *ftd_journal_record(const struct ftd_job *j)
{
	json_t *o = ftd_job_json(j, 1, -1);
	if (!o)
		return NULL;
	json_object_del(o, "links");
	json_object_del(o, "queue_position");
	json_object_set_new(o, "seq", json_integer((json_int_t)j->seq));
	json_object_set_new(o, "created", json_real(j->created));
	json_object_set_new(o, "started", json_real(j->started));
	json_object_set_new(o, "finished", json_real(j->finished));
	json_object_set_new(o, "pid", json_integer(j->pid));
	json_object_set_new(o, "request", j->req_canon ? json_string(j->req_canon) : json_null());
	if (ftd_job_final(j->state) && j->final_ev_id) {
		/* the ids its replayed events keep over a restart: the last result and error, the state */
		json_t *ids = json_pack("{s:I}", "state", (json_int_t)j->final_ev_id);
		for (size_t i = 0; ids && i < j->nev; i++)
			if (j->ev[i].type == FTD_EV_RESULT || j->ev[i].type == FTD_EV_ERROR)
				json_object_set_new(ids, ftd_job_ev_name(j->ev[i].type), json_integer((json_int_t)j->ev[i].id));
		json_object_set_new(o, "event_ids", ids);
	}
	return o;
}

static unsigned long long rec_id(const json_t *ids, const char *k)
{
	json_t *v = json_object_get(ids, k);
	return json_is_integer(v) && json_integer_value(v) > 0 ? (unsigned long long)json_integer_value(v) : 0;
}

static char *dup_or_null(const json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));
	return s ? strdup(s) : NULL;
}

struct ftd_job *ftd_journal_from_record(const json_t *rec)
{
	const char *id = json_string_value(json_object_get(rec, "id"));
	const char *kind = json_string_value(json_object_get(rec, "kind"));
	const char *state = json_string_value(json_object_get(rec, "state"));
	const struct ftd_kind *k = kind ? ftd_kind_find(kind) : NULL;
	if (!id || strlen(id) != FTD_JOB_ID_LEN || !k || !state || ftd_job_state_parse(state) < 0)
		return NULL;
	struct ftd_job *j = ftd_job_new();
	if (!j)
		return NULL;
	memcpy(j->id, id, FTD_JOB_ID_LEN + 1);
	j->kind = k->name;
	j->kind_idx = ftd_kind_index(k);
	j->state = ftd_job_state_parse(state);
	j->seq = (unsigned long long)json_integer_value(json_object_get(rec, "seq"));
	json_t *args = json_object_get(rec, "args");
	j->args = json_is_object(args) ? json_incref(args) : json_object();
	j->all_gpus = ftd_kind_all_gpus(k, j->args);
	json_t *argv = json_object_get(rec, "argv");
	size_t n = json_array_size(argv);
	j->argv = calloc(n + 1, sizeof(char *));
	for (size_t i = 0; j->argv && i < n; i++) {
		const char *a = json_string_value(json_array_get(argv, i));
		j->argv[i] = strdup(a ? a : "");
	}
	json_t *gpu = json_object_get(rec, "gpu");
	if (json_is_object(gpu)) {
		const char *u = json_string_value(json_object_get(gpu, "uuid"));
		j->gpu_index = (int)json_integer_value(json_object_get(gpu, "index"));
		snprintf(j->gpu_uuid, sizeof j->gpu_uuid, "%s", u ? u : "");
	}
	j->host_excl = json_is_true(json_object_get(rec, "host_exclusive"));
	j->timeout_s = (long)json_integer_value(json_object_get(rec, "timeout_s"));
	j->created = json_number_value(json_object_get(rec, "created"));
	j->started = json_number_value(json_object_get(rec, "started"));
	j->finished = json_number_value(json_object_get(rec, "finished"));
	json_t *dur = json_object_get(rec, "duration_s");
	if (json_is_number(dur) && ftd_job_final(j->state))
		j->dur_s = json_number_value(dur); /* as measured on the monotonic clock when it ended */
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
	j->error_detail = dup_or_null(rec, "error_detail");
	json_t *res = json_object_get(rec, "result");
	j->result = json_is_object(res) ? json_incref(res) : NULL;
	j->profile_path = dup_or_null(rec, "profile_path");
	j->idem_key = dup_or_null(rec, "idempotency_key");
	j->req_canon = dup_or_null(rec, "request");
	j->pid = (pid_t)json_integer_value(json_object_get(rec, "pid"));
	json_t *ids = json_object_get(rec, "event_ids");
	j->rec_ev[0] = rec_id(ids, "result");
	j->rec_ev[1] = rec_id(ids, "error");
	j->rec_ev[2] = rec_id(ids, "state");
	return j;
}

int ftd_journal_event_ids_load(const char *path, unsigned long long *limit)
{
	char line[64], *end;
	*limit = 0;
	int r = ftfs_read_line(path, line, sizeof line);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	errno = 0;
	unsigned long long v = strtoull(line, &end, 10);
	if (errno || end == line || *end || line[0] == '-')
		return -EINVAL;
	*limit = v;
	return 0;
}

int ftd_journal_event_ids_save(const char *path, unsigned long long limit)
{
	char line[32];
	int n = snprintf(line, sizeof line, "%llu\n", limit);
	return ftfs_write_atomic(path, line, (size_t)n, 0640);
}

int ftd_journal_save(const char *dir, const struct ftd_job *j)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s.json", dir, j->id);
	json_t *rec = ftd_journal_record(j);
	char *s = rec ? json_dumps(rec, JSON_COMPACT) : NULL;
	json_decref(rec);
	if (!s)
		return -ENOMEM;
	int r = ftfs_write_atomic(path, s, strlen(s), 0640);
	free(s);
	return r;
}

void ftd_journal_remove(const char *dir, const char *logs_dir, const struct ftd_job *j)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s.json", dir, j->id);
	unlink(path);
	snprintf(path, sizeof path, "%s/%s.log", logs_dir, j->id);
	unlink(path);
	snprintf(path, sizeof path, "%s/%s.profile.json", logs_dir, j->id);
	unlink(path);
	snprintf(path, sizeof path, "%s/%s.decode", logs_dir, j->id);
	ftfs_remove_tree(path); /* a decode job's server logs */
}

static int cmp_seq(const void *a, const void *b)
{
	const struct ftd_job *x = *(struct ftd_job *const *)a, *y = *(struct ftd_job *const *)b;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

int ftd_journal_load(const char *dir, void (*on_running)(struct ftd_job *j, void *ctx), void *ctx,
		     struct ftd_job ***out, size_t *nout)
{
	*out = NULL;
	*nout = 0;
	DIR *d = opendir(dir);
	if (!d)
		return -errno;
	struct ftd_job **v = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);
		if (l != FTD_JOB_ID_LEN + 5 || strcmp(e->d_name + FTD_JOB_ID_LEN, ".json"))
			continue; /* temp files of an interrupted atomic write are skipped */
		char path[4096];
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		char *text = NULL;
		size_t tl = 0;
		/* a regular file of sane size only: a FIFO planted here must not hold the start */
		json_t *rec = ftfs_read_regular(path, FTD_JOURNAL_RECORD_MAX, &text, &tl) == 0
				      ? json_loadb(text, tl, 0, NULL) : NULL;
		free(text);
		struct ftd_job *j = rec ? ftd_journal_from_record(rec) : NULL;
		json_decref(rec);
		if (!j) {
			ftd_log(FTD_LOG_WARNING, "journal: %s is not a job record; ignored", path);
			continue;
		}
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			struct ftd_job **nv = realloc(v, cap * sizeof *nv);
			if (!nv) {
				ftd_job_unref(j);
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
		if (j->state != FTD_JOB_RUNNING)
			continue;
		if (on_running)
			on_running(j, ctx);
		j->finished = fttime_wall_epoch();
		ftd_job_set_error(j, "the daemon stopped while the job was running");
		j->state = FTD_JOB_INTERRUPTED;
		int r = ftd_journal_save(dir, j);
		if (r < 0)
			ftd_log(FTD_LOG_ERR, "job %s: journal write failed: %s", j->id, strerror(-r));
		ftd_log(FTD_LOG_NOTICE, "job %s: was running when the daemon stopped: interrupted", j->id);
	}
	*out = v;
	*nout = n;
	return 0;
}
