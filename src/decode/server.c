#include "decode/server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/proc.h"
#include "util/timeutil.h"

/* ---------------------------------------------------------------- argv building */
struct vec {
	char **v;
	int n, cap;
};

static int vec_push(struct vec *a, char *s)
{
	if (!s)
		return -ENOMEM;
	if (a->n + 2 > a->cap) {
		int cap = a->cap ? a->cap * 2 : 16;
		char **q = realloc(a->v, (size_t)cap * sizeof *q);
		if (!q) {
			free(s);
			return -ENOMEM;
		}
		a->v = q;
		a->cap = cap;
	}
	a->v[a->n++] = s;
	a->v[a->n] = NULL;
	return 0;
}

static int vec_pushf(struct vec *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int vec_pushf(struct vec *a, const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;
	va_start(ap, fmt);
	int r = vasprintf(&s, fmt, ap);
	va_end(ap);
	return vec_push(a, r < 0 ? NULL : s);
}

void ftsrv_free_argv(char **argv)
{
	if (!argv)
		return;
	for (char **p = argv; *p; p++)
		free(*p);
	free(argv);
}

static const char *const kind_names[FTSRV_NKINDS] = {"freetoken", "llama.cpp", "vllm", "sglang", "openai"};

const char *ftsrv_kind_name(enum ftsrv_kind k)
{
	return (unsigned)k < FTSRV_NKINDS ? kind_names[k] : "?";
}

int ftsrv_kind_parse(const char *s)
{
	for (int k = 0; k < FTSRV_NKINDS; k++)
		if (!strcasecmp(s, kind_names[k]))
			return k;
	if (!strcasecmp(s, "ft"))
		return FTSRV_FREETOKEN;
	if (!strcasecmp(s, "llamacpp") || !strcasecmp(s, "llama-server") || !strcasecmp(s, "llama_cpp"))
		return FTSRV_LLAMACPP;
	return -EINVAL;
}

const char *ftsrv_default_template(enum ftsrv_kind k)
{
	switch (k) {
	case FTSRV_FREETOKEN: return FTSRV_DEFAULT_TEMPLATE;
	case FTSRV_LLAMACPP: return "llama-server -m {model} --host {host} --port {port} {flags}";
	case FTSRV_VLLM: return "vllm serve {model} --host {host} --port {port} {flags}";
	case FTSRV_SGLANG: return "python3 -m sglang.launch_server --model-path {model} --host {host} --port {port} {flags}";
	default: return NULL;
	}
}

int ftsrv_serve_flags(const struct ftsrv_serve_cfg *c, enum ftsrv_kind kind, const char *backend, char ***flags,
		      int *n)
{
	struct vec a = {0};
	int r = 0;
	long ctx = 8192 + c->max_tokens;
	switch (kind) {
	case FTSRV_FREETOKEN:
		r |= vec_pushf(&a, "--moe-backend");
		r |= vec_pushf(&a, "%s", backend);
		r |= vec_pushf(&a, "--max-running-requests");
		r |= vec_pushf(&a, "1");
		r |= vec_pushf(&a, "--max-seq-len-override");
		r |= vec_pushf(&a, "%ld", ctx);
		r |= vec_pushf(&a, "--memory-ratio");
		r |= vec_pushf(&a, "%g", c->mem_ratio);
		r |= vec_pushf(&a, "--cuda-graph-max-bs");
		r |= vec_pushf(&a, "%d", c->no_graph ? 0 : 1);
		r |= vec_pushf(&a, "--moe-hybrid-max-fetch");
		r |= vec_pushf(&a, "%ld", c->hybrid_fetch);
		if (c->gpu && *c->gpu) {
			r |= vec_pushf(&a, "--gpu");
			r |= vec_pushf(&a, "%s", c->gpu);
		}
		if (c->num_token_override > 0) {
			r |= vec_pushf(&a, "--num-token-override");
			r |= vec_pushf(&a, "%ld", c->num_token_override);
		}
		if (c->cache_size > 0) {
			r |= vec_pushf(&a, "--moe-cache-size");
			r |= vec_pushf(&a, "%ld", c->cache_size);
		} else if (c->cache_rate >= 0) {
			r |= vec_pushf(&a, "--moe-cache-rate");
			r |= vec_pushf(&a, "%g", c->cache_rate);
		} else {
			r |= vec_pushf(&a, "--moe-cache-auto");
		}
		break;
	case FTSRV_LLAMACPP:
		r |= vec_pushf(&a, "--ctx-size");
		r |= vec_pushf(&a, "%ld", ctx);
		r |= vec_pushf(&a, "--parallel");
		r |= vec_pushf(&a, "1");
		break;
	case FTSRV_VLLM:
		r |= vec_pushf(&a, "--max-model-len");
		r |= vec_pushf(&a, "%ld", ctx);
		r |= vec_pushf(&a, "--max-num-seqs");
		r |= vec_pushf(&a, "1");
		r |= vec_pushf(&a, "--gpu-memory-utilization");
		r |= vec_pushf(&a, "%g", c->mem_ratio);
		break;
	case FTSRV_SGLANG:
		r |= vec_pushf(&a, "--context-length");
		r |= vec_pushf(&a, "%ld", ctx);
		r |= vec_pushf(&a, "--max-running-requests");
		r |= vec_pushf(&a, "1");
		r |= vec_pushf(&a, "--mem-fraction-static");
		r |= vec_pushf(&a, "%g", c->mem_ratio);
		break;
	default:
		break;
	}
	if (!r && !a.v) {
		a.v = calloc(1, sizeof *a.v);
		r = a.v ? 0 : -ENOMEM;
	}
	if (r) {
		ftsrv_free_argv(a.v);
		return -ENOMEM;
	}
	*flags = a.v;
	*n = a.n;
	return 0;
}

/* Append the expansion of placeholder name (len l) to word w. */
static int expand_one(const char *name, size_t l, const char *model, int port, const char *backend,
		      char **w, size_t *wl, int *saw_port)
{
	char num[16];
	const char *val;
	if (l == 5 && !memcmp(name, "model", 5))
		val = model;
	else if (l == 7 && !memcmp(name, "backend", 7))
		val = backend;
	else if (l == 4 && !memcmp(name, "host", 4))
		val = FTSRV_HOST;
	else if (l == 4 && !memcmp(name, "port", 4)) {
		snprintf(num, sizeof num, "%d", port);
		val = num;
		*saw_port = 1;
	} else
		return -EINVAL;
	if (!val)
		val = "";
	size_t vl = strlen(val);
	char *q = realloc(*w, *wl + vl + 1);
	if (!q)
		return -ENOMEM;
	memcpy(q + *wl, val, vl + 1);
	*w = q;
	*wl += vl;
	return 0;
}

static int add_char(char **w, size_t *wl, char ch)
{
	char *q = realloc(*w, *wl + 2);
	if (!q)
		return -ENOMEM;
	q[(*wl)++] = ch;
	q[*wl] = '\0';
	*w = q;
	return 0;
}

static int flags_word_at(const char *p)
{
	return !strncmp(p, "{flags}", 7) && (!p[7] || p[7] == ' ' || p[7] == '\t' || p[7] == '\n');
}

int ftsrv_template_has_flags(const char *tmpl)
{
	for (const char *p = tmpl ? tmpl : ""; *p; p++)
		if ((p == tmpl || p[-1] == ' ' || p[-1] == '\t' || p[-1] == '\n') && flags_word_at(p))
			return 1;
	return 0;
}

int ftsrv_expand(const char *tmpl, const char *model, int port, const char *backend, char *const *flags,
		 int append_flags, char ***argv, char *err, size_t errlen)
{
	struct vec a = {0};
	int saw_port = 0, saw_flags = 0, r = 0;
	const char *p = tmpl ? tmpl : "";
	while (!r) {
		while (*p == ' ' || *p == '\t' || *p == '\n')
			p++;
		if (!*p)
			break;
		char *w = NULL;
		size_t wl = 0;
		int quoted = 0, verbatim = 0; /* verbatim: the word is exactly {flags} */
		if (flags_word_at(p)) {
			verbatim = 1;
			p += 7;
		}
		char q = 0;
		while (!verbatim && *p && (q || (*p != ' ' && *p != '\t' && *p != '\n'))) {
			if (!q && (*p == '\'' || *p == '"')) {
				q = *p++;
				quoted = 1;
				continue;
			}
			if (q && *p == q) {
				q = 0;
				p++;
				continue;
			}
			if (*p == '\\' && q != '\'' && p[1]) {
				r = add_char(&w, &wl, p[1]);
				p += 2;
			} else if (*p == '{' && q != '\'') {
				const char *e = strchr(p, '}');
				if (!e) {
					snprintf(err, errlen, "--server-cmd: unclosed '{'");
					r = -EINVAL;
				} else {
					r = expand_one(p + 1, (size_t)(e - p - 1), model, port, backend, &w, &wl, &saw_port);
					if (r == -EINVAL)
						snprintf(err, errlen, "--server-cmd: unknown placeholder %.*s (known: {model} "
							 "{port} {backend} {host} {flags})", (int)(e - p + 1), p);
					p = e + 1;
				}
			} else {
				r = add_char(&w, &wl, *p++);
			}
			if (r)
				break;
		}
		if (!r && q) {
			snprintf(err, errlen, "--server-cmd: unbalanced quote");
			r = -EINVAL;
		}
		if (r) {
			free(w);
			break;
		}
		if (verbatim) {
			saw_flags = 1;
			for (char *const *f = flags; f && *f && !r; f++)
				r = vec_pushf(&a, "%s", *f);
		} else if (w || quoted) {
			r = vec_push(&a, w ? w : strdup(""));
		}
	}
	if (!r && !saw_flags && append_flags)
		for (char *const *f = flags; f && *f && !r; f++)
			r = vec_pushf(&a, "%s", *f);
	if (!r && a.n == 0) {
		snprintf(err, errlen, "--server-cmd: empty command");
		r = -EINVAL;
	}
	if (!r && !saw_port) {
		snprintf(err, errlen, "--server-cmd: the template must contain {port}");
		r = -EINVAL;
	}
	if (r == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	if (r) {
		ftsrv_free_argv(a.v);
		return r;
	}
	*argv = a.v;
	return 0;
}

void ftsrv_argv_string(char *const *argv, char *buf, size_t n)
{
	size_t l = 0;
	if (n)
		buf[0] = '\0';
	for (char *const *p = argv; p && *p && l + 1 < n; p++) {
		int plain = **p && !strpbrk(*p, " \t\n'\"\\$`*?;&|<>(){}");
		int w = snprintf(buf + l, n - l, plain ? "%s%s" : "%s'%s'", p == argv ? "" : " ", *p);
		if (w < 0)
			break;
		l += (size_t)w;
	}
}

int ftsrv_free_port(int *port)
{
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	struct sockaddr_in sa = {.sin_family = AF_INET};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t l = sizeof sa;
	int r = 0;
	if (bind(s, (struct sockaddr *)&sa, sizeof sa) < 0 || getsockname(s, (struct sockaddr *)&sa, &l) < 0)
		r = -errno;
	else
		*port = ntohs(sa.sin_port);
	close(s);
	return r;
}

/* ---------------------------------------------------------------- process */
int ftsrv_start(struct ftsrv *s, char *const *argv, const char *log_path, char *err, size_t errlen)
{
	return ftsrv_start_env(s, argv, NULL, log_path, err, errlen);
}

int ftsrv_start_env(struct ftsrv *s, char *const *argv, char *const *envp, const char *log_path, char *err,
		    size_t errlen)
{
	memset(s, 0, sizeof *s);
	snprintf(s->log_path, sizeof s->log_path, "%s", log_path ? log_path : "/dev/null");
	int logfd = open(s->log_path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0640);
	if (logfd < 0) {
		int r = -errno;
		snprintf(err, errlen, "cannot open server log %s: %s", s->log_path, strerror(-r));
		return r;
	}
	struct ftproc_fd fds[] = {{.child = 0, .kind = FTPROC_FD_NULL},
				  {.child = 1, .kind = FTPROC_FD_DUP, .fd = logfd},
				  {.child = 2, .kind = FTPROC_FD_DUP, .fd = logfd}};
	struct ftproc_opts o = {.path = argv[0], .argv = argv, .envp = envp, .fds = fds, .nfds = 3,
				.pdeathsig = SIGTERM};
	enum ftproc_stage stage;
	int r = ftproc_spawn(&s->proc, &o, &stage);
	close(logfd);
	if (r < 0) {
		if (stage == FTPROC_ST_PARENT || stage == FTPROC_ST_EXEC)
			snprintf(err, errlen, "cannot run %s: %s", argv[0], strerror(-r));
		else
			snprintf(err, errlen, "cannot start %s: %s failed: %s", argv[0], ftproc_stage_name(stage),
				 strerror(-r));
	}
	return r;
}

int ftsrv_alive(struct ftsrv *s)
{
	return ftproc_poll(&s->proc) == 1;
}

static void nap(double s)
{
	struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

int ftsrv_stop(struct ftsrv *s, const struct ftsrv_grace *g, char *how, size_t n)
{
	struct ftsrv_grace d = FTSRV_GRACE_DEFAULT;
	if (!g)
		g = &d;
	if (!s || !s->proc.pid) {
		snprintf(how, n, "not running");
		return 0;
	}
	double t0 = fttime_now_s();
	enum ftproc_stop_how h;
	int r = ftproc_stop(&s->proc, g->term_s, g->kill_s, &h);
	switch (h) {
	case FTPROC_STOP_GONE: snprintf(how, n, "had already exited"); break;
	case FTPROC_STOP_TERM: snprintf(how, n, "stopped by SIGTERM in %.1f s", fttime_now_s() - t0); break;
	case FTPROC_STOP_KILL: snprintf(how, n, "killed with SIGKILL after %.0f s of SIGTERM grace", g->term_s); break;
	default:
		snprintf(how, n, "processes of group %d survived SIGKILL for %.0f s", (int)s->proc.pid, g->kill_s);
		break;
	}
	s->proc.pid = 0;
	if (g->driver_s > 0)
		nap(g->driver_s);
	return r;
}

void ftsrv_log_tail(const char *path, int max_lines, char *buf, size_t n)
{
	if (!n)
		return;
	buf[0] = '\0';
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	struct stat st;
	size_t want = n - 1;
	off_t off = 0;
	if (fstat(fd, &st) == 0 && st.st_size > (off_t)want)
		off = st.st_size - (off_t)want;
	ssize_t got = pread(fd, buf, want, off);
	close(fd);
	if (got <= 0) {
		buf[0] = '\0';
		return;
	}
	size_t len = (size_t)got;
	while (len && buf[len - 1] == '\n')
		len--;
	buf[len] = '\0';
	int lines = 0;
	size_t start = 0;
	for (size_t i = len; i > 0; i--)
		if (buf[i - 1] == '\n' && ++lines >= max_lines) {
			start = i;
			break;
		}
	if (start)
		memmove(buf, buf + start, len - start + 1);
}
