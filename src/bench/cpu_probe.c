/* cpu_probe: the CPU kernel probe protocol (docs/CPU_KERNEL_PROBE.md). See cpu_probe.h. */
#include "bench/cpu_probe.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bw_decide.h"
#include "util/proc.h"
#include "util/stats.h"
#include "util/strutil.h"
#include "util/timeutil.h"

#ifndef FT_VERSION
#define FT_VERSION "0.0.0"
#endif

void ftprobe_result_release(struct ftprobe_result *r)
{
	if (!r)
		return;
	free(r->samples);
	r->samples = NULL;
	r->n = 0;
}

/* ---------------------------------------------------------------- argv */

void ftprobe_free_argv(char **argv)
{
	for (char **a = argv; a && *a; a++)
		free(*a);
	free(argv);
}

static int push_char(char **w, size_t *len, size_t *cap, char c)
{
	if (*len + 2 > *cap) {
		size_t nc = *cap ? *cap * 2 : 32;
		char *n = realloc(*w, nc);
		if (!n)
			return -ENOMEM;
		*w = n;
		*cap = nc;
	}
	(*w)[(*len)++] = c;
	(*w)[*len] = '\0';
	return 0;
}

int ftprobe_split(const char *cmd, char ***argv, char *err, size_t errlen)
{
	char **v = NULL;
	size_t nv = 0;
	int r = 0;
	const char *p = cmd ? cmd : "";
	*argv = NULL;
	for (;;) {
		while (*p == ' ' || *p == '\t' || *p == '\n')
			p++;
		if (!*p)
			break;
		char *w = NULL, q = 0;
		size_t len = 0, cap = 0;
		int quoted = 0;
		while (*p && (q || (*p != ' ' && *p != '\t' && *p != '\n'))) {
			if (!q && (*p == '\'' || *p == '"')) {
				q = *p++;
				quoted = 1;
			} else if (q && *p == q) {
				q = 0;
				p++;
			} else if (*p == '\\' && q != '\'' && p[1]) {
				r = push_char(&w, &len, &cap, p[1]);
				p += 2;
			} else {
				r = push_char(&w, &len, &cap, *p++);
			}
			if (r)
				break;
		}
		if (!r && q) {
			snprintf(err, errlen, "--cpu-kernel: unbalanced %c quote in '%s'", q, cmd);
			r = -EINVAL;
		}
		if (!r && !w && quoted && !(w = strdup("")))
			r = -ENOMEM;
		char **nvv = r ? NULL : realloc(v, (nv + 2) * sizeof *v);
		if (!r && !nvv)
			r = -ENOMEM;
		if (r) {
			free(w);
			break;
		}
		v = nvv;
		v[nv++] = w;
		v[nv] = NULL;
	}
	if (!r && nv == 0) {
		snprintf(err, errlen, "--cpu-kernel: empty command");
		r = -EINVAL;
	}
	if (r == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	if (r) {
		ftprobe_free_argv(v);
		return r;
	}
	*argv = v;
	return 0;
}

/* ---------------------------------------------------------------- request */

char *ftprobe_request_line(const struct ftprobe_request *q)
{
	json_t *j = json_pack("{s:s,s:i,s:s,s:s,s:I,s:I,s:i,s:i,s:i,s:I,s:s,s:o,s:i,s:i,s:i}", "protocol",
			      FTPROBE_PROTOCOL, "version", FTPROBE_VERSION, "measure", q->layer_step ? "layer_step" : "kernel",
			      "format", q->format, "hidden", (json_int_t)q->hidden, "inter", (json_int_t)q->inter, "experts",
			      q->experts, "top_k", q->top_k, "synth_experts", q->synth_experts, "expert_bytes",
			      (json_int_t)q->expert_bytes, "activation", q->activation ? q->activation : "silu",
			      "swiglu_limit", isfinite(q->swiglu_limit) ? json_real(q->swiglu_limit) : json_null(),
			      "threads", q->threads, "warmup", q->warmup, "steps", q->steps);
	if (!j)
		return NULL;
	if (q->layer_step) {
		json_t *rt = json_array(), *ft = json_array();
		for (int i = 0; rt && i < q->nroutes; i++)
			json_array_append_new(rt, json_integer(q->routes[i]));
		for (int i = 0; ft && i < q->nfetches; i++)
			json_array_append_new(ft, json_integer(q->fetches[i]));
		if (!rt || !ft || json_object_set_new(j, "layers", json_integer(q->layers)) ||
		    json_object_set_new(j, "batch", json_integer(q->batch)) || json_object_set_new(j, "routes", rt) ||
		    json_object_set_new(j, "fetches", ft)) {
			json_decref(j);
			return NULL;
		}
	}
	char *s = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(j);
	return s;
}

/* ---------------------------------------------------------------- result */

#define BAD(...) do { snprintf(err, errlen, __VA_ARGS__); r = -EPROTO; goto out; } while (0)

static int positive_number(const json_t *v)
{
	return json_is_number(v) && isfinite(json_number_value(v)) && json_number_value(v) > 0;
}

/* "measure": "layer_step", "layer_step": {"base_us": > 0, "steps": N, "routes": [{"routes": n,
 * "us": > 0}, ...]} with every requested route count once. */
static int parse_layer_steps(const json_t *j, const struct ftprobe_request *q, struct ftprobe_result *res, char *err,
			     size_t errlen)
{
	int r = 0;
	const char *m = json_string_value(json_object_get(j, "measure"));
	if (!m || strcmp(m, "layer_step"))
		BAD("its result's \"measure\" is not \"layer_step\" (asked for layer steps; an older probe?)");
	json_t *ls = json_object_get(j, "layer_step");
	if (!json_is_object(ls))
		BAD("its result lacks \"layer_step\" (an object)");
	if (!positive_number(json_object_get(ls, "base_us")))
		BAD("its result lacks \"layer_step\".\"base_us\" (a number > 0)");
	res->base_us = json_number_value(json_object_get(ls, "base_us"));
	json_t *st = json_object_get(ls, "steps");
	if (!json_is_integer(st) || json_integer_value(st) < 1 || json_integer_value(st) > FTPROBE_MAX_SAMPLES)
		BAD("its result lacks \"layer_step\".\"steps\" (the timed steps, an integer >= 1)");
	res->steps_timed = (int)json_integer_value(st);
	json_t *rt = json_object_get(ls, "routes");
	if (!json_is_array(rt) || json_array_size(rt) != (size_t)q->nroutes)
		BAD("its result's \"layer_step\".\"routes\" is not an array of %d entries (one per route count asked)",
		    q->nroutes);
	for (int i = 0; i < q->nroutes; i++) {
		json_t *x = json_array_get(rt, (size_t)i), *n = json_object_get(x, "routes");
		if (!json_is_integer(n) || json_integer_value(n) != q->routes[i])
			BAD("its result's \"layer_step\".\"routes\"[%d] is not for %d routes", i, q->routes[i]);
		if (!positive_number(json_object_get(x, "us")))
			BAD("its result's \"layer_step\".\"routes\"[%d].\"us\" is not a number > 0", i);
		res->routes[i] = q->routes[i];
		res->route_us[i] = json_number_value(json_object_get(x, "us"));
	}
	res->nroutes = q->nroutes;
	json_t *ft = json_object_get(ls, "fetch");
	if (q->nfetches && (!json_is_array(ft) || json_array_size(ft) != (size_t)q->nfetches))
		BAD("its result's \"layer_step\".\"fetch\" is not an array of %d entries (one per fetch count asked)",
		    q->nfetches);
	for (int i = 0; i < q->nfetches; i++) {
		json_t *x = json_array_get(ft, (size_t)i), *fm = json_object_get(x, "fetched");
		if (!json_is_integer(fm) || json_integer_value(fm) != q->fetches[i])
			BAD("its result's \"layer_step\".\"fetch\"[%d] is not for %d fetched", i, q->fetches[i]);
		if (!positive_number(json_object_get(x, "us")) || !positive_number(json_object_get(x, "offload_us")))
			BAD("its result's \"layer_step\".\"fetch\"[%d] lacks \"us\" or \"offload_us\" (numbers > 0)", i);
		res->fetched[i] = q->fetches[i];
		res->fetch_hyb_us[i] = json_number_value(json_object_get(x, "us"));
		res->fetch_off_us[i] = json_number_value(json_object_get(x, "offload_us"));
	}
	res->nfetch = q->nfetches;
out:
	return r;
}

int ftprobe_fetch_pad(const struct ftprobe_result *res, int maxm, double *fetch_us)
{
	int k = res->nfetch;
	if (k < 1 || maxm < 0)
		return -EINVAL;
	/* the curve through (0, 0) and the measured points */
	double x[FTPROBE_MAX_ROUTES + 1], y[FTPROBE_MAX_ROUTES + 1];
	x[0] = 0, y[0] = 0;
	for (int i = 0; i < k; i++) {
		x[i + 1] = res->fetched[i];
		double d = res->fetch_hyb_us[i] - res->fetch_off_us[i];
		y[i + 1] = d > 0 ? d : 0;
	}
	for (int m = 0; m <= maxm; m++) {
		int i = 1;
		while (i < k && x[i] < m)
			i++;
		double v = y[i - 1] + (y[i] - y[i - 1]) * ((double)m - x[i - 1]) / (x[i] - x[i - 1]);
		fetch_us[m] = m == 0 ? 0 : v > 0 ? v : 0;
	}
	return 0;
}

int ftprobe_layer_pad(const struct ftprobe_result *res, int maxn, double *pad_us)
{
	int k = res->nroutes;
	if (k < 2 || maxn < 0)
		return -EINVAL;
	for (int n = 0; n <= maxn; n++) {
		int i = 1;
		while (i < k - 1 && res->routes[i] < n)
			i++;
		double x0 = res->routes[i - 1], x1 = res->routes[i], y0 = res->route_us[i - 1], y1 = res->route_us[i];
		double us = n <= x0 ? y0 : y0 + (y1 - y0) * ((double)n - x0) / (x1 - x0);
		us -= res->base_us;
		pad_us[n] = us > 0 ? us : 0;
	}
	return 0;
}

int ftprobe_parse(const char *out, size_t len, const struct ftprobe_request *q, struct ftprobe_result *res,
		  char *err, size_t errlen)
{
	int r = 0;
	json_t *j = NULL;
	memset(res, 0, sizeof *res);
	/* the last line that begins with '{' */
	const char *line = NULL;
	size_t ll = 0;
	for (size_t i = 0; i < len;) {
		size_t e = i;
		while (e < len && out[e] != '\n')
			e++;
		if (e > i && out[i] == '{') {
			line = out + i;
			ll = e - i;
		}
		i = e + 1;
	}
	if (!line)
		BAD("printed no result line (a JSON object on a line of its own on stdout)");
	json_error_t je;
	j = json_loadb(line, ll, JSON_REJECT_DUPLICATES, &je);
	if (!j) {
		char ex[80];
		ftstr_excerpt(ex, sizeof ex, line, ll, 60);
		BAD("its result line is not JSON (%s): %s", je.text, ex);
	}
	if (!json_is_object(j))
		BAD("its result line is not a JSON object");
	const char *proto = json_string_value(json_object_get(j, "protocol"));
	if (!proto || strcmp(proto, FTPROBE_PROTOCOL))
		BAD("its result's \"protocol\" is not \"%s\"", FTPROBE_PROTOCOL);
	if (!json_is_integer(json_object_get(j, "version")) ||
	    json_integer_value(json_object_get(j, "version")) != FTPROBE_VERSION)
		BAD("its result's \"version\" is not %d", FTPROBE_VERSION);
	const char *fmt = json_string_value(json_object_get(j, "format"));
	if (!fmt)
		BAD("its result lacks \"format\" (a string)");
	if (strcmp(fmt, q->format))
		BAD("it answered for format \"%s\", asked \"%s\"", fmt, q->format);
	json_t *eng = json_object_get(j, "engine");
	const char *name = json_string_value(json_object_get(eng, "name"));
	const char *ver = json_string_value(json_object_get(eng, "version"));
	if (!json_is_object(eng) || !name || !*name)
		BAD("its result lacks \"engine\".\"name\" (a non-empty string)");
	if (!ver)
		BAD("its result lacks \"engine\".\"version\" (a string)");
	ftstr_copy(res->engine_name, sizeof res->engine_name, name);
	ftstr_copy(res->engine_version, sizeof res->engine_version, ver);
	json_t *sup = json_object_get(j, "supported");
	if (sup && !json_is_boolean(sup))
		BAD("its result's \"supported\" is not a boolean");
	if (json_is_false(sup)) {
		const char *why = json_string_value(json_object_get(j, "error"));
		snprintf(res->note, sizeof res->note, "%s", why ? why : "no CPU path for this format");
		goto out;
	}
	res->supported = 1;
	if (q->layer_step) {
		if ((r = parse_layer_steps(j, q, res, err, errlen)))
			goto out;
		goto common;
	}
	if (!positive_number(json_object_get(j, "gbs")))
		BAD("its result lacks \"gbs\" (a number > 0)");
	res->gbs = json_number_value(json_object_get(j, "gbs"));
	json_t *s = json_object_get(j, "samples");
	size_t n = json_array_size(s);
	if (!json_is_array(s) || n == 0 || n > FTPROBE_MAX_SAMPLES)
		BAD("its result lacks \"samples\" (an array of 1 to %d numbers)", FTPROBE_MAX_SAMPLES);
	if (!(res->samples = malloc(n * sizeof *res->samples))) {
		snprintf(err, errlen, "out of memory");
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		if (!positive_number(json_array_get(s, i)))
			BAD("its result's \"samples\"[%zu] is not a number > 0", i);
		res->samples[i] = json_number_value(json_array_get(s, i));
	}
	res->n = (int)n;
common:;
	json_t *th = json_object_get(j, "threads");
	if (!json_is_integer(th) || json_integer_value(th) < 1 || json_integer_value(th) > 1 << 20)
		BAD("its result lacks \"threads\" (an integer >= 1)");
	res->threads = (int)json_integer_value(th);
	const char *isa = json_string_value(json_object_get(j, "isa"));
	if (!isa || !*isa)
		BAD("its result lacks \"isa\" (a non-empty string)");
	ftstr_copy(res->isa, sizeof res->isa, isa);
	json_t *eb = json_object_get(j, "expert_bytes");
	if (eb && (!json_is_integer(eb) || json_integer_value(eb) != q->expert_bytes))
		BAD("it measured experts of %lld bytes, the workload's are %lld",
		    json_is_integer(eb) ? (long long)json_integer_value(eb) : -1LL, (long long)q->expert_bytes);
out:
	json_decref(j);
	if (r < 0)
		ftprobe_result_release(res);
	return r;
}
#undef BAD

/* ---------------------------------------------------------------- running it */

struct buf {
	char *p;
	size_t n, cap;
};

static int buf_add(struct buf *b, const char *s, size_t n)
{
	if (b->n + n + 1 > b->cap) {
		size_t nc = b->cap ? b->cap : 4096;
		while (nc < b->n + n + 1)
			nc *= 2;
		char *np = realloc(b->p, nc);
		if (!np)
			return -ENOMEM;
		b->p = np;
		b->cap = nc;
	}
	memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = '\0';
	return 0;
}

/* The last non-empty line of a stderr tail, as a printable excerpt. */
static void last_line(const struct buf *b, char *dst, size_t n)
{
	size_t e = b->n;
	while (e > 0 && (b->p[e - 1] == '\n' || b->p[e - 1] == '\r' || b->p[e - 1] == ' '))
		e--;
	size_t s = e;
	while (s > 0 && b->p[s - 1] != '\n')
		s--;
	if (e > s)
		ftstr_excerpt(dst, n, b->p + s, e - s, 200);
	else
		snprintf(dst, n, "(nothing on stderr)");
}

int ftprobe_run(char *const *argv, const struct ftprobe_request *q, double timeout_s, struct ftprobe_result *res,
		char *err, size_t errlen)
{
	struct ftproc p = {0};
	struct ftproc_fd fds[3] = {
		{.child = 0, .kind = FTPROC_FD_PIPE_IN, .nonblock = 1},
		{.child = 1, .kind = FTPROC_FD_PIPE_OUT, .nonblock = 1},
		{.child = 2, .kind = FTPROC_FD_PIPE_OUT, .nonblock = 1},
	};
	struct buf out = {0}, errb = {0};
	enum ftproc_stage stage;
	char *req = NULL;
	int r;
	memset(res, 0, sizeof *res);
	if (!argv || !argv[0]) {
		snprintf(err, errlen, "--cpu-kernel: empty command");
		return -EINVAL;
	}
	const char *prog = argv[0];
	if (!(req = ftprobe_request_line(q)) || buf_add(&errb, "", 0) < 0) {
		free(req);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	struct ftproc_opts o = {.path = prog, .argv = argv, .fds = fds, .nfds = 3, .pdeathsig = SIGKILL};
	r = ftproc_spawn(&p, &o, &stage);
	if (r < 0) {
		snprintf(err, errlen, "--cpu-kernel: cannot run %s: %s%s%s", prog, strerror(-r),
			 stage != FTPROC_ST_PARENT ? " in " : "", ftproc_stage_name(stage));
		free(req);
		free(errb.p);
		return r;
	}
	/* the request line, then EOF; a probe that does not read it gets EPIPE, ignored */
	size_t reqlen = strlen(req), sent = 0;
	req[reqlen] = '\n'; /* over the NUL: reqlen + 1 bytes go out */
	int in = fds[0].fd, fo = fds[1].fd, fe = fds[2].fd;
	double deadline = fttime_now_s() + timeout_s;
	int timed_out = 0, too_much = 0;
	void (*old_pipe)(int) = signal(SIGPIPE, SIG_IGN);
	while (fo >= 0 || fe >= 0 || in >= 0) {
		struct pollfd pf[3];
		int np = 0, io = -1, ie = -1, ii = -1;
		if (fo >= 0) {
			io = np;
			pf[np++] = (struct pollfd){.fd = fo, .events = POLLIN};
		}
		if (fe >= 0) {
			ie = np;
			pf[np++] = (struct pollfd){.fd = fe, .events = POLLIN};
		}
		if (in >= 0) {
			ii = np;
			pf[np++] = (struct pollfd){.fd = in, .events = POLLOUT};
		}
		double left = deadline - fttime_now_s();
		if (left <= 0) {
			timed_out = 1;
			break;
		}
		int pr = poll(pf, (nfds_t)np, left > 1.0 ? 1000 : (int)(left * 1000) + 1);
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr < 0) {
			r = -errno;
			snprintf(err, errlen, "--cpu-kernel: poll: %s", strerror(errno));
			break;
		}
		if (ii >= 0 && pf[ii].revents) {
			ssize_t w = write(in, req + sent, reqlen + 1 - sent);
			if (w > 0)
				sent += (size_t)w;
			if ((w > 0 && sent < reqlen + 1) || (w < 0 && (errno == EAGAIN || errno == EINTR))) {
				/* more to write, or again */
			} else {
				close(in);
				in = -1;
			}
		}
		char chunk[8192];
		if (io >= 0 && pf[io].revents) {
			ssize_t n = read(fo, chunk, sizeof chunk);
			if (n > 0) {
				if (out.n + (size_t)n > FTPROBE_MAX_STDOUT) {
					too_much = 1;
					break;
				}
				if (buf_add(&out, chunk, (size_t)n) < 0) {
					r = -ENOMEM;
					break;
				}
			} else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
				close(fo);
				fo = -1;
			}
		}
		if (ie >= 0 && pf[ie].revents) {
			ssize_t n = read(fe, chunk, sizeof chunk);
			if (n > 0) {
				if (buf_add(&errb, chunk, (size_t)n) < 0) {
					r = -ENOMEM;
					break;
				}
				if (errb.n > 16384) { /* keep the tail */
					memmove(errb.p, errb.p + errb.n - 8192, 8192);
					errb.n = 8192;
					errb.p[errb.n] = '\0';
				}
			} else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
				close(fe);
				fe = -1;
			}
		}
	}
	signal(SIGPIPE, old_pipe);
	if (in >= 0)
		close(in);
	if (fo >= 0)
		close(fo);
	if (fe >= 0)
		close(fe);
	if (!timed_out && !too_much && r == 0) {
		double left = deadline - fttime_now_s();
		if (ftproc_wait(&p, left > 0 ? left : 0) == -ETIMEDOUT)
			timed_out = 1;
	}
	if (timed_out || too_much || r < 0 || !p.reaped)
		ftproc_stop(&p, 2.0, 2.0, NULL);
	char tail[256];
	last_line(&errb, tail, sizeof tail);
	if (r < 0) {
		if (r == -ENOMEM)
			snprintf(err, errlen, "out of memory");
	} else if (timed_out) {
		snprintf(err, errlen, "--cpu-kernel: %s gave no result within %g s (stopped); its stderr ends: %s", prog,
			 timeout_s, tail);
		r = -ETIMEDOUT;
	} else if (too_much) {
		snprintf(err, errlen, "--cpu-kernel: %s wrote more than %u bytes on stdout (stopped)", prog,
			 FTPROBE_MAX_STDOUT);
		r = -EFBIG;
	} else if (!WIFEXITED(p.status) || WEXITSTATUS(p.status) != 0) {
		char how[96];
		ftproc_status_string(p.status, how, sizeof how);
		snprintf(err, errlen, "--cpu-kernel: %s %s; its stderr ends: %s", prog, how, tail);
		r = -EPROTO;
	} else {
		char why[400];
		r = ftprobe_parse(out.p ? out.p : "", out.n, q, res, why, sizeof why);
		if (r < 0)
			snprintf(err, errlen, "--cpu-kernel: %s: %s", prog, why);
	}
	free(req);
	free(out.p);
	free(errb.p);
	return r;
}

/* ---------------------------------------------------------------- the engine's CPU path */

int ftprobe_engine_path(char *const *argv, const struct ftprobe_request *q, double timeout_s, json_t **path,
			double *pad_us, double *fetch_us, char *err, size_t errlen)
{
	*path = NULL;
	if (q->batch != 1 || q->top_k < 1 || q->top_k >= FTPROBE_MAX_ROUTES) {
		snprintf(err, errlen, "layer steps are measured at batch 1 with top-k 1..%d (asked: batch %d, top-%d)",
			 FTPROBE_MAX_ROUTES - 1, q->batch, q->top_k);
		return -EINVAL;
	}
	struct ftprobe_request lq = *q;
	int routes[FTPROBE_MAX_ROUTES], nr = 0;
	if (!lq.routes) {
		for (int n = 0; n < q->top_k; n = q->top_k <= 8 || n < 2 ? n + 1 : n * 2)
			routes[nr++] = n;
		routes[nr++] = q->top_k;
		lq.routes = routes;
		lq.nroutes = nr;
	}
	int fetches[FTPROBE_MAX_ROUTES], nf = 0;
	if (!lq.fetches) {
		for (int m = 1; m < q->top_k; m *= 2)
			fetches[nf++] = m;
		fetches[nf++] = q->top_k;
		lq.fetches = fetches;
		lq.nfetches = nf;
	}
	lq.layer_step = 1;
	struct ftprobe_result res;
	int r = ftprobe_run(argv, &lq, timeout_s, &res, err, errlen);
	if (r)
		return r;
	json_t *cmd = json_array();
	for (int i = 0; cmd && argv[i]; i++)
		json_array_append_new(cmd, json_string(argv[i]));
	if (!res.supported) {
		char note[400];
		snprintf(note, sizeof note, "%s %s has no CPU path for %s (%s): ftbench's executor ran at its own speed",
			 res.engine_name, res.engine_version, q->format, res.note);
		*path = json_pack("{s:s,s:s,s:o*}", "source", "ftbench", "note", note, "command", cmd);
		ftprobe_result_release(&res);
		return *path ? 1 : -ENOMEM;
	}
	int maxn = q->batch * q->top_k;
	json_t *steps = json_array(), *added = json_array(), *fsteps = json_array(), *fadded = json_array();
	r = ftprobe_layer_pad(&res, maxn, pad_us);
	for (int m = 0; m <= maxn; m++)
		fetch_us[m] = 0;
	if (!r && res.nfetch)
		r = ftprobe_fetch_pad(&res, maxn, fetch_us);
	for (int i = 0; !r && steps && i < res.nroutes; i++)
		json_array_append_new(steps, json_pack("{s:i,s:f}", "routes", res.routes[i], "us", res.route_us[i]));
	for (int i = 0; !r && fsteps && i < res.nfetch; i++)
		json_array_append_new(fsteps, json_pack("{s:i,s:f,s:f}", "fetched", res.fetched[i], "us", res.fetch_hyb_us[i],
							"offload_us", res.fetch_off_us[i]));
	for (int n = 0; !r && added && fadded && n <= maxn; n++) {
		json_array_append_new(added, json_real(pad_us[n]));
		json_array_append_new(fadded, json_real(fetch_us[n]));
	}
	if (!r)
		*path = json_pack("{s:s,s:s,s:s,s:s,s:i,s:o*,s:f,s:o*,s:o*,s:o*,s:o*,s:i}", "source", "engine", "name",
				  res.engine_name, "version", res.engine_version, "isa", res.isa, "threads", res.threads,
				  "command", cmd, "base_us", res.base_us, "layer_step_us", steps, "added_us", added,
				  "fetch_steps", fsteps, "fetch_added_us", fadded, "steps", res.steps_timed);
	else
		json_decref(cmd), json_decref(steps), json_decref(added), json_decref(fsteps), json_decref(fadded);
	ftprobe_result_release(&res);
	if (!r && !*path)
		r = -ENOMEM;
	if (r)
		snprintf(err, errlen, "%s", r == -ENOMEM ? "out of memory" : "the probe's layer steps are unusable");
	return r;
}

/* ---------------------------------------------------------------- the profile entry */

static double num(const json_t *o, const char *k)
{
	const json_t *v = json_object_get(o, k);
	return json_is_number(v) ? json_number_value(v) : NAN;
}

/* dst[key] = a copy of src[key] (null when absent) */
static int keep(json_t *e, const char *key, const char *as)
{
	json_t *v = json_object_get(e, key);
	return json_object_set_new(e, as, v ? json_deep_copy(v) : json_null());
}

json_t *ftprobe_ours_json(const char *isa)
{
	if (!isa || !*isa)
		return json_null();
	return json_pack("{s:s,s:s,s:s,s:s}", "source", "ftbench", "name", "ftbench", "version", FT_VERSION, "isa",
			 isa);
}

int ftprobe_apply(json_t *e, const struct ftprobe_result *res, double threshold)
{
	if (!json_is_object(e))
		return -EINVAL;
	if (!res->supported) {
		char note[512];
		snprintf(note, sizeof note, "%s %s has no CPU path for this format (%s): ftbench's figures kept",
			 res->engine_name, res->engine_version, res->note);
		return json_object_set_new(e, "cpu_moe_kernel_note", json_string(note)) ? -ENOMEM : 0;
	}
	double cpu = num(e, "cpu_moe_gbs"), cov = num(e, "cpu_moe_overlap_gbs");
	double pcie = num(e, "pcie_gather_gbs"), pov = num(e, "pcie_gather_overlap_gbs");
	double ff = ftbw_fetch_fraction(cpu, pcie, cov, pov);
	int r = 0;
	r |= keep(e, "cpu_moe_gbs", "cpu_moe_gbs_ftbench");
	r |= keep(e, "cpu_moe_gbs_spread", "cpu_moe_gbs_ftbench_spread");
	r |= keep(e, "cpu_moe_isa", "cpu_moe_isa_ftbench");
	r |= keep(e, "cpu_moe_overlap_gbs", "cpu_moe_overlap_gbs_ftbench");
	r |= keep(e, "cpu_moe_overlap_gbs_spread", "cpu_moe_overlap_gbs_ftbench_spread");
	r |= keep(e, "ratio", "ratio_ftbench");
	r |= keep(e, "recommended", "recommended_ftbench");
	r |= keep(e, "cpu_moe_kernel", "cpu_moe_kernel_ftbench");
	r |= json_object_set_new(e, "fetch_fraction_ftbench", isfinite(ff) ? json_real(ff) : json_null());
	if (r)
		return -ENOMEM;

	struct ftstat s = ftstat_of(res->samples, res->n);
	double ecpu = s.median;
	r |= json_object_set_new(e, "cpu_moe_gbs", json_real(ecpu));
	r |= json_object_set_new(e, "cpu_moe_gbs_spread", ftstat_json(&s));
	r |= json_object_set_new(e, "cpu_moe_isa", json_string(res->isa));
	/* our contention model: the engine's kernel loses what ours lost beside the gather */
	const char *ovhow = "not measured (no overlapped pair of ftbench's)";
	if (isfinite(cpu) && cpu > 0 && isfinite(cov) && cov > 0) {
		double k = cov / cpu;
		double *sc = malloc((size_t)res->n * sizeof *sc);
		if (!sc)
			return -ENOMEM;
		for (int i = 0; i < res->n; i++)
			sc[i] = res->samples[i] * k;
		struct ftstat so = ftstat_of(sc, res->n);
		free(sc);
		r |= json_object_set_new(e, "cpu_moe_overlap_gbs", json_real(so.median));
		r |= json_object_set_new(e, "cpu_moe_overlap_gbs_spread", ftstat_json(&so));
		ovhow = "the engine's kernel alone x ftbench's contention (ftbench's CPU MoE overlapped / alone)";
	} else {
		r |= json_object_set_new(e, "cpu_moe_overlap_gbs", json_null());
		r |= json_object_set_new(e, "cpu_moe_overlap_gbs_spread", json_null());
	}
	struct ftbw_decision d;
	bool have_gather = isfinite(pcie) && pcie > 0;
	ftbw_decide(true, have_gather, ecpu, NULL, pcie, NULL, threshold, &d);
	r |= json_object_set_new(e, "ratio", isfinite(d.ratio) ? json_real(d.ratio) : json_null());
	const char *verdict = !d.measured ? NULL : d.hybrid ? "hybrid" : "offload";
	r |= json_object_set_new(e, "recommended", verdict ? json_string(verdict) : json_null());
	r |= json_object_set_new(e, "recommended_isolated", verdict ? json_string(verdict) : json_null());
	r |= json_object_set_new(e, "cpu_moe_kernel",
				 json_pack("{s:s,s:s,s:s,s:s,s:i,s:i,s:s}", "source", "engine", "name", res->engine_name,
					   "version", res->engine_version, "isa", res->isa, "threads", res->threads,
					   "samples", res->n, "overlap", ovhow));
	return r ? -ENOMEM : 0;
}
