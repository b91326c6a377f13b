/* procs: the processes a job leaves behind; see procs.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "procs.h"

#include "daemon.h"
#include "log.h"
#include "mbuf.h"
#include "worker.h"
#include "util/fsutil.h"
#include "util/timeutil.h"

struct proc {
	pid_t pid, ppid, pgid;
	unsigned long long start; /* clock ticks since boot */
	int top;                  /* index of the ancestor just below the daemon, -1: not ours, -2: unknown */
};

static char boot_id[64];

static void read_boot_id(void)
{
	if (boot_id[0])
		return;
	int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	ssize_t r = fd >= 0 ? read(fd, boot_id, sizeof boot_id - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (r <= 0)
		snprintf(boot_id, sizeof boot_id, "unknown");
	else
		boot_id[strcspn(boot_id, "\n")] = '\0';
}

/* pid, ppid, pgid and start time of pid from /proc/<pid>/stat; 0 or -1. */
static int read_stat(pid_t pid, struct proc *p)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t r = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (r <= 0)
		return -1;
	buf[r] = '\0';
	char *e = strrchr(buf, ')');
	if (!e)
		return -1;
	/* after ") ": state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime
	 * stime cutime cstime priority nice num_threads itrealvalue starttime */
	char state;
	int ppid, pgid;
	unsigned long long start;
	if (sscanf(e + 2, "%c %d %d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu", &state,
		   &ppid, &pgid, &start) != 4)
		return -1;
	p->pid = pid;
	p->ppid = ppid;
	p->pgid = pgid;
	p->start = start;
	p->top = -2;
	return state == 'Z' || state == 'X' ? 1 : 0; /* 1: a zombie (nothing to kill) */
}

static int cmp_pid(const void *a, const void *b);

/* Every live process (sorted by pid), as a new array in *out (count *n). 0 or -errno. */
static int scan(struct proc **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	DIR *d = opendir("/proc");
	if (!d)
		return -errno;
	size_t cap = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		if (*end || pid <= 1)
			continue;
		struct proc p;
		if (read_stat((pid_t)pid, &p) != 0)
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 512;
			struct proc *np = realloc(*out, cap * sizeof *np);
			if (!np) {
				closedir(d);
				free(*out);
				*out = NULL;
				return -ENOMEM;
			}
			*out = np;
		}
		(*out)[(*n)++] = p;
	}
	closedir(d);
	if (*n > 1)
		qsort(*out, *n, sizeof **out, cmp_pid);
	return 0;
}

static int cmp_pid(const void *a, const void *b)
{
	const struct proc *x = a, *y = b;
	return (x->pid > y->pid) - (x->pid < y->pid);
}

/* Index of pid in v (sorted by scan), or -1. */
static int find(const struct proc *v, size_t n, pid_t pid)
{
	struct proc key = {.pid = pid};
	const struct proc *p = bsearch(&key, v, n, sizeof *v, cmp_pid);
	return p ? (int)(p - v) : -1;
}

/* For each process, the index of its ancestor whose parent is the daemon (-1: not below us). */
static void tops(struct proc *v, size_t n, pid_t self)
{
	for (size_t i = 0; i < n; i++) {
		if (v[i].top != -2)
			continue;
		int cur = (int)i, depth = 0, top = -1;
		while (cur >= 0 && depth++ < 4096) {
			if (v[cur].top != -2) {
				top = v[cur].top;
				break;
			}
			if (v[cur].ppid == self) {
				top = cur;
				break;
			}
			cur = find(v, n, v[cur].ppid);
		}
		/* memoise along the path */
		cur = (int)i;
		depth = 0;
		while (cur >= 0 && v[cur].top == -2 && depth++ < 4096) {
			v[cur].top = top;
			if (v[cur].ppid == self)
				break;
			cur = find(v, n, v[cur].ppid);
		}
	}
}

static int has_group(const struct ftd_worker *w, pid_t pgid)
{
	for (int i = 0; i < w->ngroups; i++)
		if (w->groups[i].pgid == pgid)
			return 1;
	return 0;
}

/* The job id in pid's FTBENCHD_JOB_ID into id (17 bytes), or "" when none or unreadable. */
static void env_job(pid_t pid, char id[17])
{
	static char buf[1 << 16];
	char path[64];
	id[0] = '\0';
	snprintf(path, sizeof path, "/proc/%d/environ", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t r = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (r <= 0)
		return;
	buf[r] = '\0';
	for (char *p = buf; p < buf + r; p += strlen(p) + 1)
		if (!strncmp(p, "FTBENCHD_JOB_ID=", 16) && strlen(p + 16) == 16) {
			memcpy(id, p + 16, 17);
			return;
		}
}

static char *run_path(const char *id)
{
	char *p;
	return asprintf(&p, "%s/run/%s", ftd.state_dir, id) < 0 ? NULL : p;
}

/* Rewrite the record of job id's process groups (those of w). */
static void write_record(const char *id, const struct ftd_worker *w)
{
	char *path = run_path(id);
	struct ftd_mbuf m = {0};
	read_boot_id();
	ftd_mbuf_cat(&m, "boot %s\n", boot_id);
	for (int i = 0; i < w->ngroups; i++)
		ftd_mbuf_cat(&m, "%d %llu\n", (int)w->groups[i].pgid, w->groups[i].start);
	int r = path && m.buf ? ftfs_write_atomic(path, m.buf, m.len, 0640) : -ENOMEM;
	if (r < 0)
		ftd_log(FTD_LOG_WARNING, "job %s: cannot record its process groups in %s: %s", id, path ? path : "?",
			strerror(-r));
	free(m.buf);
	free(path);
}

static int add_group(struct ftd_worker *w, pid_t pgid, unsigned long long start)
{
	if (has_group(w, pgid))
		return 0;
	if (w->ngroups >= FTD_WORKER_MAX_GROUPS)
		return 0;
	w->groups[w->ngroups].pgid = pgid;
	w->groups[w->ngroups].start = start;
	w->ngroups++;
	return 1;
}

/* A job whose worker runs and was not reaped yet. */
static int live(const struct ftd_job *j)
{
	return j->state == FTD_JOB_RUNNING && j->worker && !j->worker->reaped;
}

int ftd_procs_init(void)
{
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
		return -errno;
	char *dir;
	if (asprintf(&dir, "%s/run", ftd.state_dir) < 0)
		return -ENOMEM;
	int r = ftfs_mkdir_p(dir, 0750);
	free(dir);
	return r;
}

void ftd_procs_job_started(struct ftd_job *j)
{
	struct proc p;
	struct ftd_worker *w = j->worker;
	w->ngroups = 0;
	add_group(w, w->pid, read_stat(w->pid, &p) == 0 ? p.start : 0);
	write_record(j->id, w);
	w->groups_scan_ns = fttime_now_ns();
}

void ftd_procs_track(void)
{
	uint64_t now = fttime_now_ns();
	int due = 0;
	for (struct ftd_job *j = ftd.jobs.head; j; j = j->next)
		if (live(j) && now - j->worker->groups_scan_ns >= FTD_PROCS_TRACK_NS)
			due = 1;
	if (!due)
		return;
	struct proc *v;
	size_t n;
	if (scan(&v, &n) < 0)
		return;
	tops(v, n, getpid());
	/* orphans below the daemon that no worker's tree holds (a double fork): recorded apart, so
	 * a kill -9 of the daemon does not lose them */
	static struct ftd_worker orphans;
	int before = orphans.ngroups;
	orphans.ngroups = 0;
	for (size_t i = 0; i < n; i++) {
		if (v[i].top < 0)
			continue;
		int worker = 0;
		for (struct ftd_job *j = ftd.jobs.head; j && !worker; j = j->next)
			worker = j->state == FTD_JOB_RUNNING && j->worker && v[v[i].top].pid == j->worker->pid;
		if (!worker) {
			int leader = find(v, n, v[i].pgid);
			add_group(&orphans, v[i].pgid, leader >= 0 ? v[leader].start : 0);
		}
	}
	if (orphans.ngroups)
		write_record(FTD_PROCS_ORPHANS_ID, &orphans);
	else if (before) {
		char *path = run_path(FTD_PROCS_ORPHANS_ID);
		if (path)
			unlink(path);
		free(path);
	}
	for (struct ftd_job *j = ftd.jobs.head; j; j = j->next) {
		if (!live(j))
			continue;
		struct ftd_worker *w = j->worker;
		w->groups_scan_ns = now;
		int changed = 0;
		for (size_t i = 0; i < n; i++) {
			if (v[i].top < 0 || v[v[i].top].pid != w->pid)
				continue;
			int leader = find(v, n, v[i].pgid);
			changed |= add_group(w, v[i].pgid, leader >= 0 ? v[leader].start : 0);
		}
		if (changed)
			write_record(j->id, w);
	}
	free(v);
}

/* 1 when process p (below the daemon) belongs to a running job other than j. */
static int claimed_by_other(const struct proc *v, const struct proc *p, const struct ftd_job *j)
{
	for (struct ftd_job *o = ftd.jobs.head; o; o = o->next) {
		if (o == j || !live(o))
			continue;
		if (v[p->top].pid == o->worker->pid || p->pgid == o->worker->pid || has_group(o->worker, p->pgid))
			return 1;
	}
	char id[17];
	env_job(p->pid, id);
	if (id[0] && strcmp(id, j->id)) {
		struct ftd_job *o = ftd_jobs_find(&ftd.jobs, id);
		if (o && live(o))
			return 1;
	}
	return 0;
}

int ftd_procs_end_job(struct ftd_job *j)
{
	pid_t self = getpid();
	int killed = 0;
	ftproc_signal(&j->worker->proc, SIGKILL); /* reaped just now: the id cannot have been reused yet */
	/* a few passes: a process may fork between the scan and the kill */
	for (int pass = 0; pass < 5; pass++) {
		struct proc *v;
		size_t n;
		if (scan(&v, &n) < 0)
			break;
		tops(v, n, self);
		int found = 0;
		for (size_t i = 0; i < n; i++) {
			if (v[i].top < 0 || claimed_by_other(v, &v[i], j))
				continue;
			if (kill(v[i].pid, SIGKILL) == 0) {
				found++;
				if (pass == 0)
					ftd_log(FTD_LOG_NOTICE, "job %s: killing leftover process %d", j->id, (int)v[i].pid);
			}
		}
		free(v);
		killed += found;
		if (!found)
			break;
	}
	char *path = run_path(j->id);
	if (path)
		unlink(path);
	free(path);
	j->worker->ngroups = 0;
	return killed;
}

/* Kill every process that still carries FTBENCHD_JOB_ID=<id> (the worker and anything it left
 * behind, even after its group leader died with us), plus the recorded group if its leader is
 * one of them. Only processes whose environment we may read are considered. */
void ftd_procs_kill_orphan(const char *job_id)
{
	char want[64];
	int wl = snprintf(want, sizeof want, "FTBENCHD_JOB_ID=%s", job_id);
	DIR *d = opendir("/proc");
	if (!d)
		return;
	static char buf[1 << 16];
	struct dirent *e;
	while ((e = readdir(d))) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		if (*end || pid <= 1 || pid == (long)getpid())
			continue;
		char path[64];
		snprintf(path, sizeof path, "/proc/%ld/environ", pid);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		ssize_t r = read(fd, buf, sizeof buf - 1);
		close(fd);
		if (r <= 0)
			continue;
		buf[r] = '\0';
		for (char *p = buf; p < buf + r; p += strlen(p) + 1) {
			if (!strncmp(p, want, (size_t)wl) && p[wl] == '\0') {
				ftd_log(FTD_LOG_NOTICE, "job %s: killing leftover process %ld", job_id, pid);
				kill((pid_t)pid, SIGKILL);
				break;
			}
		}
	}
	closedir(d);
}

/* Kill what one record lists: a group whose leader still runs with the recorded start time, or
 * a group whose leader is gone (its id cannot have been reused while members remain). */
static int recover_one(const char *path, const char *id)
{
	char *text;
	size_t len;
	int killed = 0;
	if (ftfs_read_file(path, 1 << 20, &text, &len) < 0)
		return 0;
	read_boot_id();
	char *save = NULL, *line = strtok_r(text, "\n", &save);
	if (!line || strncmp(line, "boot ", 5) || strcmp(line + 5, boot_id)) {
		free(text);
		return 0; /* from another boot: those processes are long gone */
	}
	while ((line = strtok_r(NULL, "\n", &save))) {
		int pgid;
		unsigned long long start;
		if (sscanf(line, "%d %llu", &pgid, &start) != 2 || pgid <= 1)
			continue;
		struct proc p;
		int st = read_stat(pgid, &p);
		if (st >= 0 && p.start != start)
			continue; /* a new process has that id now */
		if (kill(-pgid, SIGKILL) == 0) {
			killed++;
			ftd_log(FTD_LOG_NOTICE, "job %s: killing process group %d left by an earlier ftbenchd", id, pgid);
		}
	}
	free(text);
	return killed;
}

void ftd_procs_recover(void)
{
	char *dir;
	if (asprintf(&dir, "%s/run", ftd.state_dir) < 0)
		return;
	DIR *d = opendir(dir);
	if (!d) {
		free(dir);
		return;
	}
	struct dirent *e;
	while ((e = readdir(d))) {
		if ((strlen(e->d_name) != 16 || strspn(e->d_name, "0123456789abcdef") != 16) &&
		    strcmp(e->d_name, FTD_PROCS_ORPHANS_ID))
			continue;
		char path[4096];
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		recover_one(path, e->d_name);
		ftd_procs_kill_orphan(e->d_name); /* and what carries its id elsewhere */
		unlink(path);
	}
	closedir(d);
	free(dir);
}
