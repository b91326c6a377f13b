/* load_weights: see load_weights.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/load_weights.h"
#include "hw/cpu.h"
#include "moe/checksum.h"
#include "moe/ftw.h"
#include "util/errmsg.h"
#include "util/fsutil.h"
#include "util/proc.h"
#include "util/stats.h"
#include "util/timeutil.h"
#include "util/workermsg.h"

static const char *const mode_names[] = {"baseline", "parallel", "ftw", "auto"};

int ftlw_parse_modes(const char *s, unsigned *out)
{
	*out = 0;
	char buf[256];
	if (!s || strlen(s) >= sizeof buf)
		return -EINVAL;
	strcpy(buf, s);
	char *save = NULL;
	for (char *t = strtok_r(buf, ", ", &save); t; t = strtok_r(NULL, ", ", &save)) {
		int k = -1;
		for (int i = 0; i < 4; i++)
			if (!strcmp(t, mode_names[i]))
				k = i;
		if (k < 0)
			return -EINVAL;
		*out |= 1u << k;
	}
	return *out ? 0 : -EINVAL;
}

/* The model directory's name with anything but [A-Za-z0-9._-] as '_' (no leading '.'). */
static void model_name(const char *model, char *name, size_t n)
{
	char tmp[PATH_MAX];
	snprintf(tmp, sizeof tmp, "%s", model);
	size_t l = strlen(tmp), k = 0;
	while (l > 1 && tmp[l - 1] == '/')
		tmp[--l] = '\0';
	const char *base = strrchr(tmp, '/');
	base = base ? base + 1 : tmp;
	for (const char *c = base; *c && k + 1 < n && k < 64; c++) {
		int ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '-' ||
			 *c == '_' || (*c == '.' && k > 0);
		name[k++] = ok ? *c : '_';
	}
	name[k] = '\0';
	if (!k)
		snprintf(name, n, "model");
}

void ftlw_default_ftw_dir(const char *model, char *buf, size_t n)
{
	char name[72];
	model_name(model, name, sizeof name);
	snprintf(buf, n, "%s/ftw_%s", FTLW_FTW_PARENT, name);
}

void ftlw_ftw_template(const char *ftw_dir, const char *model, char *buf, size_t n)
{
	char name[72];
	model_name(model, name, sizeof name);
	if (ftw_dir && *ftw_dir)
		snprintf(buf, n, "%s/ftw-%s.XXXXXX", ftw_dir, name);
	else
		snprintf(buf, n, "%s/ftw_%s.XXXXXX", FTLW_FTW_PARENT, name);
}

/* 1 when dir is a directory of ours (not a link) holding an FTW index of model (real path). */
static int kept_at(int at, const char *dir, const char *real)
{
	struct stat st;
	if (fstatat(at, dir, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid())
		return 0;
	int fd = openat(at, dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), ifd = -1;
	if (fd >= 0)
		ifd = openat(fd, FTFTW_INDEX, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0)
		close(fd);
	if (ifd < 0)
		return 0;
	json_t *j = json_loadfd(ifd, 0, NULL);
	close(ifd);
	const char *src = json_string_value(json_object_get(j, "source_model_path"));
	int same = src && !strcmp(src, real);
	json_decref(j);
	return same;
}

int ftlw_evict_dir(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return -errno;
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		int fd = openat(dirfd(d), de->d_name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0)
			continue;
		struct stat st;
		if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
			fdatasync(fd); /* dirty pages cannot be dropped */
			if (posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0)
				n++;
		}
		close(fd);
	}
	closedir(d);
	return n;
}

/* Remove everything below the directory fd (closed here), links removed, never followed. */
static void remove_below(int fd, int depth)
{
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		struct stat st;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)) {
			if (depth < 32)
				remove_below(openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC),
					     depth + 1);
			unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR);
		} else {
			unlinkat(dirfd(d), de->d_name, 0);
		}
	}
	closedir(d);
}

/* Remove a directory this run made with mkdtemp (0700, so only this run wrote in it): what the
 * conversion wrote, by its index first (ftftw_remove), then whatever a failed conversion left. */
static void remove_created(const char *dir)
{
	ftftw_remove(dir);
	remove_below(open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), 0);
	rmdir(dir);
}

/* A conversion of model kept by an earlier --keep-ftw run: at fixed, or a directory made from
 * the template (tmpl) beside it; its path into out. 1 found. */
static int find_kept(const char *fixed, const char *tmpl, const char *model, char *out, size_t n)
{
	char real[PATH_MAX], parent[PATH_MAX];
	if (!realpath(model, real))
		return 0;
	if (kept_at(AT_FDCWD, fixed, real)) {
		snprintf(out, n, "%s", fixed);
		return 1;
	}
	ftfs_dirname(tmpl, parent, sizeof parent);
	const char *base = strrchr(tmpl, '/') + 1;
	size_t pl = strlen(base) - 6; /* the name before XXXXXX */
	DIR *d = opendir(parent);
	if (!d)
		return 0;
	int found = 0;
	struct dirent *de;
	while (!found && (de = readdir(d))) {
		if (strncmp(de->d_name, base, pl) || strlen(de->d_name) != pl + 6 || !kept_at(dirfd(d), de->d_name, real))
			continue;
		if (strlen(parent) + strlen(de->d_name) + 2 <= n) {
			memcpy(out, parent, strlen(parent));
			out[strlen(parent)] = '/';
			strcpy(out + strlen(parent) + 1, de->d_name);
			found = 1;
		}
	}
	closedir(d);
	return found;
}

/* ---------------------------------------------------------------- memory sampler */

struct sampler {
	pthread_t th;
	atomic_int stop;
	uint64_t peak_rss, min_avail;
};

static uint64_t vm_rss(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	if (!f)
		return 0;
	char line[256];
	unsigned long long kb = 0;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "VmRSS: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return kb * 1024;
}

static void *sampler_main(void *arg)
{
	struct sampler *s = arg;
	while (!atomic_load(&s->stop)) {
		uint64_t r = vm_rss(), a = ftcpu_mem_available();
		if (r > s->peak_rss)
			s->peak_rss = r;
		if (a && a < s->min_avail)
			s->min_avail = a;
		usleep(10000);
	}
	return NULL;
}

static void sampler_start(struct sampler *s)
{
	memset(s, 0, sizeof *s);
	s->min_avail = UINT64_MAX;
	s->peak_rss = vm_rss();
	if (pthread_create(&s->th, NULL, sampler_main, s))
		s->th = 0;
}

static void sampler_stop(struct sampler *s)
{
	atomic_store(&s->stop, 1);
	if (s->th)
		pthread_join(s->th, NULL);
	uint64_t r = vm_rss(), a = ftcpu_mem_available();
	if (r > s->peak_rss)
		s->peak_rss = r;
	if (a && a < s->min_avail)
		s->min_avail = a;
	if (s->min_avail == UINT64_MAX)
		s->min_avail = 0;
}

/* ---------------------------------------------------------------- worker (child side) */

static json_t *banks_json(const struct ftbanks *b, json_t **cks)
{
	*cks = json_object();
	for (int k = 0; k < b->nbanks; k++)
		json_object_set_new(*cks, b->shape[k].name, json_integer((json_int_t)ftcks_bank(b, k)));
	return json_pack("{s:s,s:I,s:I,s:I,s:I,s:I}", "format", b->fmt->name, "layers", (json_int_t)b->L, "experts",
			 (json_int_t)b->E, "hidden", (json_int_t)b->H, "inter", (json_int_t)b->I, "bank_bytes",
			 (json_int_t)ftbanks_bytes(b));
}

int ftlw_worker(const char *mode, const struct ftlw_opts *o, json_t **row, char *err, size_t errlen)
{
	*row = NULL;
	char ftw_dir[PATH_MAX];
	if (!o->ftw_dir && (!strcmp(mode, "ftw-convert") || !strcmp(mode, "ftw")))
		return fterr_set(err, errlen, -EINVAL, "mode %s needs the FTW directory (--ftw-dir)", mode);
	snprintf(ftw_dir, sizeof ftw_dir, "%s", o->ftw_dir ? o->ftw_dir : "");
	struct ftload_opts lo = {FTLOAD_AUTO, o->workers, o->chunk_bytes, o->rep};
	struct sampler smp;
	int rc;
	if (!strcmp(mode, "ftw-convert")) {
		struct ftftw_convert_opts co = {o->shard_bytes, {o->expert_load, o->workers, o->chunk_bytes, o->rep}};
		struct ftftw_convert_stats cs;
		sampler_start(&smp);
		rc = ftftw_convert(o->model, ftw_dir, &co, &cs, err, errlen);
		sampler_stop(&smp);
		if (rc < 0)
			return rc;
		*row = json_pack("{s:s,s:s,s:f,s:f,s:f,s:I,s:i,s:s,s:I}", "mode", "ftw-convert", "dir", ftw_dir, "convert_s",
				 cs.total_s, "load_s", cs.load_s, "write_s", cs.write_s, "bytes_written",
				 (json_int_t)cs.bytes_written, "shards", cs.nshards, "loader", cs.load.loader,
				 "peak_rss_bytes", (json_int_t)smp.peak_rss);
		return *row ? 0 : -ENOMEM;
	}
	const char *dir = o->model;
	if (!strcmp(mode, "baseline")) {
		lo.mode = FTLOAD_SERIAL;
	} else if (!strcmp(mode, "parallel")) {
		lo.mode = FTLOAD_PARALLEL;
	} else if (!strcmp(mode, "ftw")) {
		dir = ftw_dir;
		if (!ftftw_is_dir(dir))
			return fterr_set(err, errlen, -ENOENT, "%s is not an FTW directory (convert first)", dir);
	} else if (!strcmp(mode, "auto")) {
		lo.mode = o->expert_load;
	} else {
		return fterr_set(err, errlen, -EINVAL, "unknown worker mode '%s'", mode);
	}
	struct ftbanks *b = NULL;
	struct ftload_stats st;
	sampler_start(&smp);
	double t0 = fttime_now_s();
	rc = ftload_model(dir, &lo, &b, &st, err, errlen);
	double t = fttime_now_s() - t0;
	sampler_stop(&smp);
	if (rc < 0)
		return rc;
#ifdef FT_TEST_HOOKS
	/* test builds only (the Makefile's FT_TEST_HOOKS objects): swap experts 0 and 1 of bank 0,
	 * layer 0, as a buggy reader would */
	const char *fault = getenv("FTBENCH_LW_FAULT");
	if (fault && !strncmp(fault, "swap-experts:", 13) && !strcmp(fault + 13, mode) && b->E > 1) {
		uint8_t *p0 = ftbanks_layer(b, 0, 0), *p1 = p0 + b->shape[0].expert_bytes;
		for (size_t i = 0; i < b->shape[0].expert_bytes; i++) {
			uint8_t x = p0[i];
			p0[i] = p1[i], p1[i] = x;
		}
	}
#endif
	json_t *cks;
	json_t *r = banks_json(b, &cks);
	size_t bytes = ftbanks_bytes(b);
	json_object_set_new(r, "mode", json_string(mode));
	json_object_set_new(r, "loader", json_string(st.loader));
	if (st.why[0])
		json_object_set_new(r, "why", json_string(st.why));
	json_object_set_new(r, "load_s", json_real(t));
	json_object_set_new(r, "bytes", json_integer((json_int_t)bytes));
	json_object_set_new(r, "read_gbs", json_real(t > 0 ? bytes / t / 1e9 : 0)); /* 10^9 B/s, as every GB/s */
	json_object_set_new(r, "read_gibs", json_real(t > 0 ? bytes / t / 1073741824.0 : 0)); /* kept for readers */
	json_object_set_new(r, "file_bytes", json_integer((json_int_t)st.file_bytes));
	json_object_set_new(r, "direct", json_boolean(st.direct));
	json_object_set_new(r, "peak_rss_bytes", json_integer((json_int_t)smp.peak_rss));
	json_object_set_new(r, "min_mem_available_bytes", json_integer((json_int_t)smp.min_avail));
	json_object_set_new(r, "checksums", cks);
	ftbanks_free(b);
	*row = r;
	return 0;
}

/* ---------------------------------------------------------------- parent side */

#define FTLW_MAX_LINE (16 << 20) /* a result line above this is a protocol error */

/* Read the worker protocol's lines from f until EOF: the result into *row (new), an error
 * message into msg. -EPROTO with why in msg on a malformed line, a second result or a line over
 * FTLW_MAX_LINE; progress is accepted and not shown (the parent reports the modes). */
static int read_messages(FILE *f, json_t **row, char *msg, size_t n)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	int r = 0;
	while (r == 0 && (len = getline(&line, &cap, f)) >= 0) {
		if (len > 0 && line[len - 1] == '\n')
			len--;
		if (len == 0)
			continue;
		struct ftwmsg m;
		char why[256];
		if (len > FTLW_MAX_LINE) {
			snprintf(why, sizeof why, "a line over %d bytes", FTLW_MAX_LINE);
			r = -EPROTO;
		} else {
			r = ftwmsg_parse(line, (size_t)len, &m, why, sizeof why);
		}
		if (r == 0 && m.type == FTWMSG_RESULT) {
			if (*row) {
				snprintf(why, sizeof why, "a second result");
				r = -EPROTO;
			} else {
				*row = json_incref(m.result);
			}
		} else if (r == 0 && m.type == FTWMSG_ERROR) {
			snprintf(msg, n, "%s", m.message);
		}
		if (r == 0)
			ftwmsg_release(&m);
		else
			snprintf(msg, n, "worker protocol error: %s", why);
	}
	free(line);
	return r;
}

/* Run `self load-weights --worker MODE ... --result-fd 3` (through ftproc: its own process
 * group, killed when we die) and read its result into *row. Its stdout and stderr go to our
 * stderr (a stray stdout line is shown, never parsed). */
static int spawn(const struct ftlw_opts *o, const char *mode, const char *ftw_dir, json_t **row, char *err,
		 size_t errlen)
{
	*row = NULL;
	char workers[32], chunk[32], shard[32];
	snprintf(workers, sizeof workers, "%d", o->workers > 0 ? o->workers : FTLOAD_DEFAULT_WORKERS);
	snprintf(chunk, sizeof chunk, "%zu", (o->chunk_bytes ? o->chunk_bytes : FTLOAD_DEFAULT_CHUNK) >> 20 ?
		 (o->chunk_bytes ? o->chunk_bytes : FTLOAD_DEFAULT_CHUNK) >> 20 : 1);
	snprintf(shard, sizeof shard, "%llu", (unsigned long long)((o->shard_bytes ? o->shard_bytes : FTFTW_DEFAULT_SHARD_LIMIT) >> 20));
	const char *el = o->expert_load == FTLOAD_SERIAL ? "serial" : o->expert_load == FTLOAD_PARALLEL ? "parallel" : "auto";
	const char *exe = o->self_exe ? o->self_exe : "/proc/self/exe";
	char *argv[] = {"ftbench", "load-weights", "--worker", (char *)mode, "--model", (char *)o->model,
			"--workers", workers, "--chunk-mib", chunk, "--shard-mib", shard, "--ftw-dir", (char *)ftw_dir,
			"--expert-load", (char *)el, "--result-fd", "3", NULL};
	int have_err = fcntl(STDERR_FILENO, F_GETFD) >= 0;
	struct ftproc_fd fds[] = {{.child = 0, .kind = FTPROC_FD_NULL},
				  {.child = 1, .kind = have_err ? FTPROC_FD_DUP : FTPROC_FD_NULL, .fd = STDERR_FILENO},
				  {.child = 2, .kind = have_err ? FTPROC_FD_DUP : FTPROC_FD_NULL, .fd = STDERR_FILENO},
				  {.child = 3, .kind = FTPROC_FD_PIPE_OUT}};
	struct ftproc_opts po = {.path = exe, .argv = argv, .fds = fds, .nfds = 4, .pdeathsig = SIGKILL};
	struct ftproc p;
	enum ftproc_stage stage;
	fflush(stderr);
	int r = ftproc_spawn(&p, &po, &stage);
	if (r < 0)
		return fterr_set(err, errlen, r, "cannot run %s: %s%s%s", exe, ftproc_stage_name(stage),
				 stage == FTPROC_ST_PARENT ? "" : ": ", strerror(-r));
	char msg[1024] = "";
	FILE *f = fdopen(fds[3].fd, "r");
	if (!f) {
		close(fds[3].fd);
		r = -errno;
		snprintf(msg, sizeof msg, "reading its result: %s", strerror(errno));
	} else {
		r = read_messages(f, row, msg, sizeof msg);
		fclose(f);
	}
	if (r < 0)
		ftproc_stop(&p, 5, 5, NULL); /* it said something we cannot use: it is not waited for */
	else
		ftproc_wait(&p, -1);
	int status = p.status;
	if (r == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0 && *row)
		return 0;
	json_decref(*row);
	*row = NULL;
	if (r < 0)
		return fterr_set(err, errlen, r == -EPROTO ? -EIO : r, "mode %s: %s", mode, msg);
	if (WIFSIGNALED(status))
		return fterr_set(err, errlen, -EIO, "mode %s: worker killed by signal %d%s", mode, WTERMSIG(status),
				 WTERMSIG(status) == 9 ? " (out of memory?)" : "");
	if (*msg)
		return fterr_set(err, errlen, -EIO, "mode %s: %s", mode, msg);
	return fterr_set(err, errlen, -EIO, "mode %s: worker failed (exit %d)%s", mode,
			 WIFEXITED(status) ? WEXITSTATUS(status) : -1, WEXITSTATUS(status) == 0 ? ", no result" : "");
}

static int same_checksums(json_t *a, json_t *b)
{
	return json_is_object(a) && json_is_object(b) && json_equal(a, b);
}

/* One row from the n runs of a mode (each a worker row; every reference taken over): the
 * first run's fields, with load_s the median of the runs, load_s_min / load_s_max their range,
 * load_s_runs every run in order, read_gbs (read_gibs) from the median and read_gbs_min /
 * read_gbs_max from the slowest and fastest run, peak_rss_bytes the highest and
 * min_mem_available_bytes the lowest. NULL on allocation failure. */
static json_t *combine_runs(json_t **runs, int n)
{
	double t[FTLW_MAX_REPEAT];
	json_t *row = runs[0], *all = json_array();
	json_int_t rss = 0, avail = -1;
	for (int k = 0; k < n; k++) {
		t[k] = json_real_value(json_object_get(runs[k], "load_s"));
		json_array_append_new(all, json_real(t[k]));
		json_int_t r = json_integer_value(json_object_get(runs[k], "peak_rss_bytes"));
		json_int_t a = json_integer_value(json_object_get(runs[k], "min_mem_available_bytes"));
		rss = r > rss ? r : rss;
		avail = avail < 0 || a < avail ? a : avail;
	}
	for (int k = 1; k < n; k++)
		json_decref(runs[k]);
	if (!all) {
		json_decref(row);
		return NULL;
	}
	struct ftstat st = ftstat_of(t, n);
	double bytes = (double)json_integer_value(json_object_get(row, "bytes"));
	json_object_set_new(row, "load_s", json_real(st.median));
	json_object_set_new(row, "load_s_min", json_real(st.min));
	json_object_set_new(row, "load_s_max", json_real(st.max));
	json_object_set_new(row, "load_s_runs", all);
	json_object_set_new(row, "read_gbs", json_real(st.median > 0 ? bytes / st.median / 1e9 : 0));
	json_object_set_new(row, "read_gibs", json_real(st.median > 0 ? bytes / st.median / 1073741824.0 : 0));
	json_object_set_new(row, "read_gbs_min", json_real(st.max > 0 ? bytes / st.max / 1e9 : 0));
	json_object_set_new(row, "read_gbs_max", json_real(st.min > 0 ? bytes / st.min / 1e9 : 0));
	json_object_set_new(row, "peak_rss_bytes", json_integer(rss));
	json_object_set_new(row, "min_mem_available_bytes", json_integer(avail < 0 ? 0 : avail));
	return row;
}

int ftlw_run(const struct ftlw_opts *o, json_t **result, char *err, size_t errlen)
{
	*result = NULL;
	unsigned modes = o->modes | FTLW_BASELINE;
	if (o->repeat < 0 || o->repeat > FTLW_MAX_REPEAT)
		return fterr_set(err, errlen, -EINVAL, "repeat %d is not in 1..%d", o->repeat, FTLW_MAX_REPEAT);
	/* the conversion goes into a directory this run makes: --ftw-dir (or /var/tmp/ftw_<model
	 * name>) when nothing has that name yet, else a fresh mkdtemp directory inside --ftw-dir (or
	 * /var/tmp/ftw_<model name>.XXXXXX). What existed before is never written, followed or
	 * removed; a kept conversion of this model is only read (reuse with --keep-ftw). */
	char ftw_dir[PATH_MAX] = "", fixed[PATH_MAX], tmpl[PATH_MAX + 96];
	if (o->ftw_dir)
		snprintf(fixed, sizeof fixed, "%s", o->ftw_dir);
	else
		ftlw_default_ftw_dir(o->model, fixed, sizeof fixed);
	ftlw_ftw_template(o->ftw_dir, o->model, tmpl, sizeof tmpl);
	if (ftftw_is_dir(o->model))
		return fterr_set(err, errlen, -EINVAL, "%s is an FTW directory: give the original safetensors checkpoint", o->model);
	int kept = 0;
	if (modes & FTLW_FTW) {
		if (o->keep_ftw)
			kept = find_kept(fixed, tmpl, o->model, ftw_dir, sizeof ftw_dir);
		if (!kept && mkdir(fixed, 0700) == 0) {
			snprintf(ftw_dir, sizeof ftw_dir, "%s", fixed);
		} else if (!kept) {
			if (errno != EEXIST)
				return fterr_set(err, errlen, -errno, "FTW directory %s: %s", fixed, strerror(errno));
			if (strlen(tmpl) >= sizeof ftw_dir)
				return fterr_set(err, errlen, -ENAMETOOLONG, "FTW directory in %s: name too long", fixed);
			memcpy(ftw_dir, tmpl, strlen(tmpl) + 1);
			if (!mkdtemp(ftw_dir))
				return fterr_set(err, errlen, -errno, "cannot make a directory %s: %s", tmpl, strerror(errno));
		}
	}
	int repeat = o->repeat > 1 ? o->repeat : 1;
	json_t *rows = json_array(), *ftw = json_null(), *res = NULL;
	int rc = 0, ok = 1, step = 0, steps = __builtin_popcount(modes) * repeat + !!(modes & FTLW_FTW);
	double base_s = 0;
	json_t *base_cks = NULL;
	for (int m = 0; m < 4 && rc == 0; m++) {
		if (!(modes & (1u << m)))
			continue;
		const char *mode = mode_names[m];
		if (m == 2) {
			int reuse = kept; /* a kept conversion of this model is reused */
			ftreport_progress(o->rep, step++, steps, "ftw-convert");
			if (reuse) {
				ftw = json_pack("{s:s,s:b,s:n}", "dir", ftw_dir, "reused", 1, "convert_s");
			} else {
				json_t *cr;
				if (o->drop_cache)
					ftlw_evict_dir(o->model);
				if ((rc = spawn(o, "ftw-convert", ftw_dir, &cr, err, errlen)) < 0)
					break;
				json_decref(ftw);
				ftw = cr;
				json_object_set_new(ftw, "reused", json_false());
			}
		}
		json_t *runs[FTLW_MAX_REPEAT] = {0};
		for (int k = 0; k < repeat && rc == 0; k++) {
			char label[64];
			if (repeat > 1)
				snprintf(label, sizeof label, "%s (run %d/%d)", mode, k + 1, repeat);
			ftreport_progress(o->rep, step++, steps, repeat > 1 ? label : mode);
			if (o->drop_cache) {
				ftlw_evict_dir(o->model);
				if (m == 2 || m == 3)
					ftlw_evict_dir(ftw_dir);
			}
			rc = spawn(o, mode, ftw_dir, &runs[k], err, errlen);
		}
		if (rc < 0) {
			for (int k = 0; k < repeat; k++)
				json_decref(runs[k]);
			break;
		}
		/* every run's banks against the reference: the baseline's first run */
		if (m == 0)
			base_cks = json_object_get(runs[0], "checksums");
		int same = 1;
		for (int k = 0; k < repeat; k++)
			same &= same_checksums(base_cks, json_object_get(runs[k], "checksums"));
		ok &= same;
		json_t *row = combine_runs(runs, repeat);
		if (!row) {
			rc = fterr_set(err, errlen, -ENOMEM, "out of memory");
			break;
		}
		double t = json_real_value(json_object_get(row, "load_s"));
		if (m == 0)
			base_s = t;
		json_object_set_new(row, "checksum_ok", json_boolean(same));
		json_object_set_new(row, "speedup", json_real(t > 0 ? base_s / t : 0));
		json_array_append_new(rows, row);
		if (!res) {
			res = json_pack("{s:s,s:O,s:O,s:O,s:O,s:O,s:O}", "model", o->model, "format", json_object_get(row, "format"),
					"layers", json_object_get(row, "layers"), "experts", json_object_get(row, "experts"),
					"hidden", json_object_get(row, "hidden"), "inter", json_object_get(row, "inter"),
					"bank_bytes", json_object_get(row, "bank_bytes"));
		}
	}
	ftreport_progress(o->rep, steps, steps, "done");
	if (*ftw_dir && !kept && !o->keep_ftw) {
		/* remove what this run made: the fresh directory and what was written into it */
		remove_created(ftw_dir);
		if (json_is_object(ftw))
			json_object_set_new(ftw, "kept", json_false());
	} else if (json_is_object(ftw)) {
		json_object_set_new(ftw, "kept", json_true());
	}
	if (rc < 0) {
		json_decref(rows);
		json_decref(ftw);
		json_decref(res);
		return rc;
	}
	json_object_set_new(res, "drop_cache", json_boolean(o->drop_cache));
	json_object_set_new(res, "repeat", json_integer(repeat));
	json_object_set_new(res, "workers", json_integer(o->workers > 0 ? o->workers : FTLOAD_DEFAULT_WORKERS));
	json_object_set_new(res, "chunk_mib", json_integer((json_int_t)((o->chunk_bytes ? o->chunk_bytes : FTLOAD_DEFAULT_CHUNK) >> 20)));
	json_object_set_new(res, "ftw", ftw);
	json_object_set_new(res, "rows", rows);
	json_object_set_new(res, "ok", json_boolean(ok));
	*result = res;
	return 0;
}

const char *ftlw_checksum_word(const json_t *row, int index)
{
	return json_is_true(json_object_get(row, "checksum_ok")) ? (index ? "ok" : "reference") : "BAD";
}
