#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/flags.h"
#include "moe/cpu/cpumoe.h"
#include "util/fsutil.h"
#include "util/strutil.h"

const char *ftcli_prog = "ftbench";
static int result_fd = -1;
static int quiet;
static int bar_shown;
static const char *gpu_flag = "--gpu"; /* the flag that named the GPU, for messages */
static int progress_lines = -1; /* -1: not decided yet (FREETOKEN_BENCH_PROGRESS) */
static struct {
	int done, total, shown;
	char label[128];
} last_line;

int ftcli_set_result_fd(int fd)
{
	if (fd < 0 || fcntl(fd, F_GETFD) < 0)
		return -EBADF;
	result_fd = fd;
	return 0;
}

int ftcli_result_fd(void)
{
	return result_fd;
}

void ftcli_set_quiet(int q)
{
	quiet = q;
}

int ftcli_opt_result_fd(const char *arg)
{
	long fd;
	if (ftstr_parse_long(arg, 0, 1 << 20, &fd) < 0 || ftcli_set_result_fd((int)fd) < 0) {
		ftcli_error("--result-fd: '%s' is not an open file descriptor", arg);
		return -1;
	}
	return 0;
}

static void send_line(json_t *msg)
{
	if (result_fd < 0)
		return;
	char *s = json_dumps(msg, JSON_COMPACT);
	if (s) {
		size_t l = strlen(s);
		s[l] = '\n';
		ftfs_write_all(result_fd, s, l + 1);
		free(s);
	}
}

static void clear_bar(void)
{
	if (bar_shown) {
		fputs("\r\033[K", stderr);
		bar_shown = 0;
	}
}

int ftcli_parse_format(const char *opt, const char *s, enum ftcli_format *f)
{
	static const char *const names[] = {"table", "json", "csv", "md"};
	for (int i = 0; i < 4; i++)
		if (!strcmp(s, names[i])) {
			*f = (enum ftcli_format)i;
			return 0;
		}
	ftcli_error("%s: '%s' is none of table, json, csv, md", opt, s);
	return -1;
}

const char *ftcli_cell(char *buf, size_t n, const json_t *v, const char *fmt)
{
	if (json_is_number(v))
		snprintf(buf, n, fmt, json_number_value(v));
	else if (n)
		buf[0] = '\0';
	return buf;
}

void ftcli_fprint_row(FILE *o, enum ftcli_format f, const char *const *cells, int n, int header)
{
	if (f != FTCLI_FMT_CSV && f != FTCLI_FMT_MD)
		return;
	for (int i = 0; i < n; i++) {
		const char *c = cells[i] ? cells[i] : "";
		if (f == FTCLI_FMT_CSV) {
			if (i)
				fputc(',', o);
			if (strpbrk(c, ",\"\r\n")) {
				fputc('"', o);
				for (; *c; c++) {
					if (*c == '"')
						fputc('"', o);
					fputc(*c, o);
				}
				fputc('"', o);
			} else {
				fputs(c, o);
			}
		} else {
			fputs(i ? " " : "| ", o);
			for (; *c; c++) {
				if (*c == '|' || *c == '\\')
					fputc('\\', o);
				fputc(*c == '\n' || *c == '\r' ? ' ' : *c, o);
			}
			fputs(" |", o);
		}
	}
	fputc('\n', o);
	if (f == FTCLI_FMT_MD && header) {
		fputc('|', o);
		for (int i = 0; i < n; i++)
			fputs(" --- |", o);
		fputc('\n', o);
	}
}

void ftcli_print_row(enum ftcli_format f, const char *const *cells, int n, int header)
{
	ftcli_fprint_row(stdout, f, cells, n, header);
}

void ftcli_progress_clear(void)
{
	clear_bar();
	fflush(stderr);
}

void ftcli_set_progress_lines(int on)
{
	progress_lines = !!on;
}

static int progress_lines_on(void)
{
	if (progress_lines < 0) {
		const char *e = getenv("FREETOKEN_BENCH_PROGRESS");
		progress_lines = e && (!strcmp(e, "1") || !strcasecmp(e, "true") || !strcasecmp(e, "yes") ||
				       !strcasecmp(e, "on"));
	}
	return progress_lines;
}

/* The seed's progress line, without repeating steps of less than 1%. */
static void progress_line(int done, int total, const char *label)
{
	const char *l = label ? label : "";
	if (last_line.shown && last_line.total == total && !strncmp(last_line.label, l, sizeof last_line.label - 1) &&
	    done != total && (long)(done - last_line.done) * 100 < (long)total)
		return;
	printf("FTBENCH %d %d %s\n", done, total, l);
	fflush(stdout);
	last_line.shown = 1;
	last_line.done = done;
	last_line.total = total;
	snprintf(last_line.label, sizeof last_line.label, "%s", l);
}

void ftcli_progress(int done, int total, const char *label)
{
	if (progress_lines_on())
		progress_line(done, total, label);
	json_t *m = json_pack("{s:s,s:i,s:i,s:s}", "type", "progress", "done", done, "total", total,
			      "label", label ? label : "");
	send_line(m);
	json_decref(m);
	if (quiet || !isatty(STDERR_FILENO))
		return;
	int width = 30, fill = total > 0 ? done * width / total : 0;
	char bar[64];
	for (int i = 0; i < width; i++)
		bar[i] = i < fill ? '#' : '.';
	bar[width] = '\0';
	fprintf(stderr, "\r\033[K%s [%s] %d/%d %s", ftcli_prog, bar, done, total, label ? label : "");
	bar_shown = 1;
	if (done >= total)
		clear_bar();
	fflush(stderr);
}

void ftcli_result(json_t *result)
{
	json_t *m = json_pack("{s:s,s:O}", "type", "result", "result", result);
	send_line(m);
	json_decref(m);
}

void ftcli_result_error(const char *message)
{
	json_t *m = json_pack("{s:s,s:s}", "type", "error", "message", message);
	send_line(m);
	json_decref(m);
}

/* One line on stderr (after the progress bar is cleared): "ftbench <prog>: <tag><message>";
 * an error also goes to the worker protocol. */
static void say(int is_error, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
static void say(int is_error, const char *fmt, va_list ap)
{
	char msg[8192]; /* an invalid profile's error holds every reason */
	vsnprintf(msg, sizeof msg, fmt, ap);
	clear_bar();
	fprintf(stderr, "ftbench %s: %s%s\n", ftcli_prog, is_error ? "" : "note: ", msg);
	if (is_error) {
		json_t *m = json_pack("{s:s,s:s}", "type", "error", "message", msg);
		send_line(m);
		json_decref(m);
	}
}

void ftcli_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	say(1, fmt, ap);
	va_end(ap);
}

void ftcli_note(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	say(0, fmt, ap);
	va_end(ap);
}

static void rep_progress(void *ctx, int done, int total, const char *label)
{
	ftcli_progress(done, total, label);
}

static void rep_note(void *ctx, const char *msg)
{
	ftcli_note("%s", msg);
}

struct ftreport ftcli_reporter(void)
{
	return (struct ftreport){rep_progress, rep_note, NULL};
}

int ftcli_opt_device(const char *arg, char *spec, size_t n, const char **gpu_spec)
{
	long v;
	if (ftstr_parse_long(arg, 0, 4095, &v) < 0) {
		ftcli_error("--device: '%s' is not a CUDA device index (0, 1, ...; --gpu also takes a UUID)", arg);
		return -1;
	}
	snprintf(spec, n, "%ld", v);
	if (*gpu_spec && strcmp(*gpu_spec, spec)) {
		ftcli_error("--device %s and --gpu %s name different GPUs (--device N is the seed's --gpu N)", spec,
			    *gpu_spec);
		return -1;
	}
	*gpu_spec = spec;
	gpu_flag = "--device";
	return 0;
}

int ftcli_gpu_list(struct ftgpu_info **out, int *n, char *why, size_t whylen)
{
	int fake = ftcli_fake_gpus();
	if (fake < 0)
		return ftgpu_list(out, n, why, whylen);
	return ftcli_fake_gpu_list(fake, out, n, why, whylen);
}

int ftcli_host_gpu_count(void)
{
	int fake = ftcli_fake_gpus();
	if (fake >= 0)
		return fake;
	struct ftgpu_info *g = NULL;
	int n = 0, host = ftgpu_count_host();
	char why[256];
	if (ftgpu_list(&g, &n, why, sizeof why) < 0)
		n = 0;
	free(g);
	return host > n ? host : n;
}

int ftcli_select_gpu(const char *spec, struct ftgpu_info *out, char *why, size_t whylen)
{
	struct ftgpu_info *gpus;
	int n, r = ftcli_gpu_list(&gpus, &n, why, whylen);
	if (r < 0) {
		ftcli_error("listing GPUs: %s", why);
		return r;
	}
	if (n == 0) {
		free(gpus);
		if (spec) {
			ftcli_error("%s %s: %s", gpu_flag, spec, why);
			return -ENODEV;
		}
		return 1;
	}
	char err[1024];
	int i = spec ? ftgpu_resolve(gpus, n, spec, err, sizeof err) : 0;
	if (i < 0) {
		ftcli_error("%s: %s", gpu_flag, err);
		free(gpus);
		return i;
	}
	*out = gpus[i];
	free(gpus);
	return 0;
}

void ftcli_print_json(json_t *j)
{
	json_dumpf(j, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	fputc('\n', stdout);
	fflush(stdout);
}

/* A shard size: --shard-gib X (a number, as in the seed) or --shard-mib N, in whole MiB. */
int ftcli_set_shard(const struct ftflag *f, const char *arg, void *opts)
{
	int gib = !strcmp(f->name, "shard-gib");
	double v;
	if (ftstr_parse_double(arg, f->lo, f->hi, &v) < 0) {
		ftcli_error("--%s: '%s' is not a number of %s in %g..%g%s", f->name, arg, f->unit, f->lo, f->hi,
			    gib ? " (0.5 is fine)" : "");
		return -1;
	}
	double mib = gib ? v * 1024.0 : v;
	if (!gib && mib != (double)(uint64_t)mib) {
		ftcli_error("--%s: '%s' is not a whole number of MiB", f->name, arg);
		return -1;
	}
	if (mib < 1.0) {
		ftcli_error("--%s: '%s' is less than 1 MiB", f->name, arg);
		return -1;
	}
	*(uint64_t *)((char *)opts + f->off) = (uint64_t)llround(mib) << 20;
	return 0;
}
