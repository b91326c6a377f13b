#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "moe/cpu/cpumoe.h"
#include "util/fsutil.h"
#include "util/strutil.h"

const char *ftcli_prog = "ftbench";
static int result_fd = -1;
static int quiet;
static int bar_shown;

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

void ftcli_progress(int done, int total, const char *label)
{
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

/* One line on stderr (after the progress bar is cleared): "ftbench <prog>: <tag><message>";
 * an error also goes to the worker protocol. */
static void say(int is_error, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
static void say(int is_error, const char *fmt, va_list ap)
{
	char msg[2048];
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

int ftcli_check_cpu_moe_env(void)
{
	char why[256];
	if (ftcmoe_env_check(why, sizeof why) < 0) {
		ftcli_error("%s (unset it, or give a value it accepts)", why);
		return -1;
	}
	return 0;
}

int ftcli_select_gpu(const char *spec, struct ftgpu_info *out, char *why, size_t whylen)
{
	struct ftgpu_info *gpus;
	int n, r = ftgpu_list(&gpus, &n, why, whylen);
	if (r < 0) {
		ftcli_error("listing GPUs: %s", why);
		return r;
	}
	if (n == 0) {
		free(gpus);
		if (spec) {
			ftcli_error("--gpu %s: %s", spec, why);
			return -ENODEV;
		}
		return 1;
	}
	char err[1024];
	int i = spec ? ftgpu_resolve(gpus, n, spec, err, sizeof err) : 0;
	if (i < 0) {
		ftcli_error("--gpu: %s", err);
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
