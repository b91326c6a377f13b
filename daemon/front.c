/* front: the acceptor and the request-head checks; see front.h. */
#include "front.h"

#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "daemon.h"
#include "log.h"
#include "util/timeutil.h"

#define HEAD_MAX 8192    /* a request head longer than this is answered 431 */
#define PENDING_MAX 1024 /* sockets waiting for their head; beyond it the oldest is answered 503 */

struct pending {
	struct pending *prev, *next; /* oldest first: deadlines come in the same order */
	int fd;
	uint64_t deadline_ns;
	struct sockaddr_storage addr;
	socklen_t alen;
};

struct ftd_front {
	struct ftd_front_pool *main, *reserve;
	int lfd, ep, stop_fd;
	int spare; /* an open descriptor given up when accept finds none left */
	pthread_t thread;
	int thread_started;
	struct pending *head, *tail;
	int npending;
};

/* ---------------------------------------------------------------- the pools' places */

void ftd_front_closed(struct ftd_front_pool *p)
{
	__atomic_sub_fetch(&p->held, 1, __ATOMIC_ACQ_REL);
	__atomic_store_n(&p->full_since_ns, 0, __ATOMIC_RELEASE);
}

double ftd_front_full_s(const struct ftd_front_pool *p)
{
	uint64_t since = __atomic_load_n(&p->full_since_ns, __ATOMIC_ACQUIRE);
	if (!since || __atomic_load_n(&p->held, __ATOMIC_ACQUIRE) < p->cap)
		return 0;
	uint64_t now = fttime_now_ns();
	return now > since ? (double)(now - since) / 1e9 : 0;
}

/* Hand fd to p while it has room. libmicrohttpd closes a socket it refuses, so it gets a
 * duplicate: 0 when p took it (fd is then closed here), -1 when fd is still ours. Only the front
 * thread takes places, so held cannot pass cap between the test and the increment. */
static int hand_to(struct ftd_front_pool *p, int fd, const struct sockaddr_storage *addr, socklen_t alen)
{
	unsigned held = __atomic_load_n(&p->held, __ATOMIC_ACQUIRE);
	if (held >= p->cap)
		return -1;
	int dupfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (dupfd < 0)
		return -1;
	if (__atomic_add_fetch(&p->held, 1, __ATOMIC_ACQ_REL) >= p->cap)
		__atomic_store_n(&p->full_since_ns, fttime_now_ns(), __ATOMIC_RELEASE);
	if (MHD_add_connection(p->d, dupfd, (const struct sockaddr *)addr, alen) != MHD_YES) {
		ftd_front_closed(p); /* refused before it counted: no closed callback will come */
		return -1;
	}
	close(fd);
	return 0;
}

/* ---------------------------------------------------------------- answers of the front */

static const char *reason(unsigned status)
{
	switch (status) {
	case 400: return "Bad Request";
	case 408: return "Request Timeout";
	case 413: return "Content Too Large";
	case 431: return "Request Header Fields Too Large";
	case 501: return "Not Implemented";
	case 505: return "HTTP Version Not Supported";
	default: return "Service Unavailable";
	}
}

/* What the front answers: a status, an error code, the field (NULL none) and a message (static
 * text, nothing the client sent). */
struct verdict {
	unsigned status;
	const char *code, *field, *msg;
};

void ftd_front_write_error(int fd, unsigned status, const char *code, const char *field, const char *msg)
{
	char buf[4096], resp[1024], body[512], fld[64] = "null";
	for (int i = 0; i < 16 && recv(fd, buf, sizeof buf, MSG_DONTWAIT) > 0; i++)
		;
	if (field)
		snprintf(fld, sizeof fld, "\"%s\"", field);
	int bl = snprintf(body, sizeof body, "{\"error\":{\"code\":\"%s\",\"message\":\"%s\",\"field\":%s}}\n", code,
			  msg, fld);
	int n = snprintf(resp, sizeof resp,
			 "HTTP/1.1 %u %s\r\nContent-Type: application/json\r\nCache-Control: no-store\r\n%s"
			 "Connection: close\r\nContent-Length: %d\r\n\r\n%s",
			 status, reason(status), status == 503 ? "Retry-After: 5\r\n" : "", bl, body);
	if (send(fd, resp, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
		/* the client is gone or its window is full: nothing more to do */
	}
	shutdown(fd, SHUT_WR);
}

/* Answer a socket the daemons will not take, and close it. */
static void answer_close(int fd, const struct verdict *v)
{
	ftd_front_write_error(fd, v->status, v->code, v->field, v->msg);
	close(fd);
}

static const struct verdict busy = {503, "busy", NULL, "the server is at its connection limit"},
			    no_fds = {503, "busy", NULL, "the server is out of file descriptors"},
			    waiting = {503, "busy", NULL, "too many connections are waiting for their request"},
			    unwatched = {503, "busy", NULL, "the server cannot watch more connections"},
			    late = {408, "request_timeout", NULL, "the request head did not arrive in time (header-timeout)"};

/* ---------------------------------------------------------------- the request head */

static int tchar(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || (c && strchr("!#$%&'*+-.^_`|~", c));
}

static int bad(struct verdict *v, unsigned status, const char *code, const char *field, const char *msg)
{
	*v = (struct verdict){status, code, field, msg};
	return (int)status;
}

/* The request line must be METHOD SP /TARGET SP HTTP/1.x CRLF (RFC 9112 3). Returns the offset
 * of the first header line, or 0 after filling v. */
static size_t request_line(const char *h, size_t n, int complete, struct verdict *v)
{
	static const char malformed[] = "malformed request line (METHOD /path HTTP/1.1)";
	size_t i = 0;
	while (i < n && i < 32 && tchar((unsigned char)h[i]))
		i++;
	if (i == 0 || i >= n || h[i] != ' ')
		return bad(v, 400, "invalid_request", NULL, malformed), 0;
	if (++i >= n || (h[i] != '/' && !(h[i] == '*' && i + 1 < n && h[i + 1] == ' ')))
		return bad(v, 400, "invalid_request", NULL, "the request target must be a path starting with /"), 0;
	while (i < n && (unsigned char)h[i] > 0x20 && h[i] != 0x7f)
		i++;
	if (i >= n)
		return bad(v, complete ? 400 : 431, complete ? "invalid_request" : "header_too_large", NULL,
			   "the request line is too long"), 0;
	if (h[i] != ' ' || n - i < 10 || memcmp(h + i + 1, "HTTP/", 5) || h[i + 6] < '0' || h[i + 6] > '9' ||
	    h[i + 7] != '.' || h[i + 8] < '0' || h[i + 8] > '9' ||
	    !(h[i + 9] == '\n' || (h[i + 9] == '\r' && n - i > 10 && h[i + 10] == '\n')))
		return bad(v, 400, "invalid_request", NULL, malformed), 0;
	if (h[i + 6] != '1' || (h[i + 8] != '0' && h[i + 8] != '1'))
		return bad(v, 505, "http_version_not_supported", NULL, "only HTTP/1.0 and HTTP/1.1 are served"), 0;
	if (!complete)
		return bad(v, 431, "header_too_large", NULL, "the request head is over 8 KiB"), 0;
	return i + (h[i + 9] == '\n' ? 10 : 11);
}

struct head_facts {
	int host, cl, te, cl_conflict, te_other;
	unsigned long long cl_value;
	int cl_bad;
};

/* One header line [p, e) (no line end): counted into f. 0, or the status after filling v. */
static int header_line(const char *p, const char *e, struct head_facts *f, struct verdict *v)
{
	if (*p == ' ' || *p == '\t')
		return bad(v, 400, "invalid_request", NULL, "a header line that starts with white space (obs-fold)");
	const char *c = p;
	while (c < e && tchar((unsigned char)*c))
		c++;
	if (c == p || c == e || *c != ':')
		return bad(v, 400, "invalid_request", NULL, "malformed header line (NAME: value)");
	size_t nl = (size_t)(c - p);
	const char *val = c + 1, *ve = e;
	while (val < ve && (*val == ' ' || *val == '\t'))
		val++;
	while (ve > val && (ve[-1] == ' ' || ve[-1] == '\t'))
		ve--;
	for (const char *q = val; q < ve; q++)
		if (((unsigned char)*q < 0x20 && *q != '\t') || *q == 0x7f)
			return bad(v, 400, "invalid_request", NULL, "a control character in a header value");
	if (nl == 4 && !strncasecmp(p, "Host", 4)) {
		f->host++;
	} else if (nl == 17 && !strncasecmp(p, "Transfer-Encoding", 17)) {
		f->te++;
		if (ve - val != 7 || strncasecmp(val, "chunked", 7))
			f->te_other = 1;
	} else if (nl == 14 && !strncasecmp(p, "Content-Length", 14)) {
		unsigned long long x = 0;
		int ok = val < ve;
		for (const char *q = val; ok && q < ve; q++) {
			ok = *q >= '0' && *q <= '9';
			x = x < 1000000000000000ull ? x * 10 + (unsigned)(*q - '0') : x; /* past any max-body */
		}
		if (!ok)
			f->cl_bad = 1;
		else if (f->cl && x != f->cl_value)
			f->cl_conflict = 1;
		f->cl_value = x;
		f->cl++;
	}
	return 0;
}

/* Check a request head (RFC 9112 3, 5, 6): 0, or the status to answer with v filled. A head that
 * fills HEAD_MAX without ending is 431. */
static unsigned check_head(const char *h, size_t n, int complete, struct verdict *v)
{
	size_t off = request_line(h, n, complete, v);
	if (!off)
		return v->status;
	struct head_facts f = {0};
	const char *p = h + off, *end = h + n;
	for (;;) {
		const char *e = memchr(p, '\n', (size_t)(end - p));
		if (!e)
			return bad(v, 400, "invalid_request", NULL, "malformed request head");
		const char *le = e > p && e[-1] == '\r' ? e - 1 : e;
		if (le == p)
			break; /* the empty line: the end of the head */
		if (header_line(p, le, &f, v))
			return v->status;
		p = e + 1;
	}
	/* the version's minor digit: after "HTTP/1." on the request line */
	const char *nl = memchr(h, '\n', n);
	int v11 = nl && nl - h >= 2 && (nl[-1] == '1' || (nl[-1] == '\r' && nl[-2] == '1'));
	if (f.host > 1)
		return bad(v, 400, "invalid_request", "Host", "more than one Host header");
	if (!f.host && v11)
		return bad(v, 400, "invalid_request", "Host", "an HTTP/1.1 request needs a Host header");
	if (f.te && f.cl)
		return bad(v, 400, "invalid_request", "Content-Length", "Content-Length beside Transfer-Encoding");
	if (f.te > 1 || f.te_other)
		return bad(v, 501, "not_implemented", "Transfer-Encoding",
			   "only one Transfer-Encoding: chunked is supported (no other coding)");
	if (f.cl_bad)
		return bad(v, 400, "invalid_request", "Content-Length", "Content-Length is not a number");
	if (f.cl_conflict)
		return bad(v, 400, "invalid_request", "Content-Length", "Content-Length headers that differ");
	if (f.cl && f.cl_value > (unsigned long long)ftd.cfg.max_body)
		return bad(v, 413, "body_too_large", NULL, "the body is over max-body bytes");
	return 0;
}

/* Part of a head: 1 when it cannot begin a request line (TLS, binary junk), so it is answered now
 * rather than at header-timeout. */
static int prefix_bad(const char *h, size_t n)
{
	size_t i = 0;
	while (i < n && i < 32 && tchar((unsigned char)h[i]))
		i++;
	if (i == n)
		return 0;
	return i == 0 || h[i] != ' ' || (i + 1 < n && h[i + 1] != '/' && h[i + 1] != '*');
}

static int is_probe(const char *head, size_t n)
{
	static const char *const paths[] = {"/health", "/metrics"};
	const char *sp = memchr(head, ' ', n);
	if (!sp)
		return 0;
	const char *path = sp + 1;
	size_t rest = n - (size_t)(path - head);
	for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
		size_t l = strlen(paths[i]);
		if (rest > l && !memcmp(path, paths[i], l) &&
		    (path[l] == ' ' || path[l] == '?' || path[l] == '\r' || path[l] == '\n'))
			return 1;
	}
	return 0;
}

/* The request head has arrived: 2; it fills HEAD_MAX without ending: 1; not yet: 0; the client
 * left: -1. */
static int peek_head(int fd, char *buf, size_t cap, size_t *n)
{
	ssize_t r = recv(fd, buf, cap, MSG_PEEK | MSG_DONTWAIT);
	if (r == 0)
		return -1;
	if (r < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -1;
	*n = (size_t)r;
	for (size_t i = 0; i + 1 < (size_t)r; i++)
		if (buf[i] == '\n' && (buf[i + 1] == '\n' || (buf[i + 1] == '\r' && i + 2 < (size_t)r && buf[i + 2] == '\n')))
			return 2;
	return (size_t)r == cap ? 1 : 0;
}

/* ---------------------------------------------------------------- the acceptor */

static void pending_unlink(struct ftd_front *f, struct pending *p)
{
	if (p->prev)
		p->prev->next = p->next;
	else
		f->head = p->next;
	if (p->next)
		p->next->prev = p->prev;
	else
		f->tail = p->prev;
	f->npending--;
	epoll_ctl(f->ep, EPOLL_CTL_DEL, p->fd, NULL);
}

static void pending_drop(struct ftd_front *f, struct pending *p, const struct verdict *v)
{
	pending_unlink(f, p);
	if (v)
		answer_close(p->fd, v);
	else
		close(p->fd);
	free(p);
}

static void dispatch(struct ftd_front *f, struct pending *p, const char *head, size_t n, int complete)
{
	pending_unlink(f, p);
	int fd = p->fd;
	struct verdict v;
	if (check_head(head, n, complete, &v))
		answer_close(fd, &v);
	else if ((is_probe(head, n) || hand_to(f->main, fd, &p->addr, p->alen) < 0) &&
		 hand_to(f->reserve, fd, &p->addr, p->alen) < 0)
		answer_close(fd, &busy);
	free(p);
}

/* A socket with something to read (or new): dispatched when its head is there (or cannot be a
 * head), dropped when the client left, else it waits. */
static void look(struct ftd_front *f, struct pending *p)
{
	char head[HEAD_MAX];
	size_t n = 0;
	int st = peek_head(p->fd, head, sizeof head, &n);
	if (st > 0 || (st == 0 && n > 0 && prefix_bad(head, n)))
		dispatch(f, p, head, n, st == 2);
	else if (st < 0)
		pending_drop(f, p, NULL);
}

static void front_accept(struct ftd_front *f)
{
	for (int burst = 0; burst < 256; burst++) {
		struct pending *p = calloc(1, sizeof *p);
		if (!p)
			return;
		p->alen = sizeof p->addr;
		p->fd = accept4(f->lfd, (struct sockaddr *)&p->addr, &p->alen, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (p->fd < 0) {
			int e = errno;
			free(p);
			if ((e == EMFILE || e == ENFILE) && f->head) {
				/* out of descriptors: the oldest socket still waiting for its head gives its
				 * place to the new one */
				pending_drop(f, f->head, &no_fds);
				continue;
			}
			if ((e == EMFILE || e == ENFILE) && f->spare >= 0) {
				/* out of descriptors: the spare one takes the connection for its 503, so the
				 * client is answered and the listening socket does not stay readable */
				close(f->spare);
				int fd = accept4(f->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
				if (fd >= 0)
					answer_close(fd, &no_fds);
				f->spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
				ftd_log(FTD_LOG_WARNING, "http: accept: %s", strerror(e));
			}
			return;
		}
		if (f->npending >= PENDING_MAX)
			pending_drop(f, f->head, &waiting);
		p->deadline_ns = fttime_now_ns() + (uint64_t)ftd.cfg.header_timeout * 1000000000ull;
		p->prev = f->tail;
		if (f->tail)
			f->tail->next = p;
		else
			f->head = p;
		f->tail = p;
		f->npending++;
		struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP | EPOLLET, .data.ptr = p};
		if (epoll_ctl(f->ep, EPOLL_CTL_ADD, p->fd, &ev) < 0) {
			pending_drop(f, p, &unwatched);
			continue;
		}
		look(f, p);
	}
}

static void *front_main(void *arg)
{
	struct ftd_front *f = arg;
	struct epoll_event evs[64];
	for (;;) {
		int tmo = -1;
		if (f->head) {
			uint64_t now = fttime_now_ns();
			tmo = f->head->deadline_ns > now ? (int)((f->head->deadline_ns - now) / 1000000) + 1 : 0;
		}
		int n = epoll_wait(f->ep, evs, 64, tmo);
		if (n < 0 && errno != EINTR) {
			ftd_log(FTD_LOG_ERR, "http: epoll_wait: %s", strerror(errno));
			break;
		}
		for (int i = 0; i < n; i++) {
			if (evs[i].data.ptr == &f->stop_fd)
				return NULL;
			if (evs[i].data.ptr == &f->lfd)
				front_accept(f);
			else
				look(f, evs[i].data.ptr);
		}
		uint64_t now = fttime_now_ns();
		while (f->head && f->head->deadline_ns <= now)
			pending_drop(f, f->head, &late);
	}
	return NULL;
}

void ftd_front_stop(struct ftd_front *f)
{
	if (!f)
		return;
	if (f->thread_started) {
		uint64_t one = 1;
		if (write(f->stop_fd, &one, sizeof one) < 0)
			ftd_log(FTD_LOG_WARNING, "http: cannot wake the acceptor: %s", strerror(errno));
		pthread_join(f->thread, NULL);
	}
	while (f->head)
		pending_drop(f, f->head, NULL);
	if (f->ep >= 0)
		close(f->ep);
	if (f->stop_fd >= 0)
		close(f->stop_fd);
	if (f->spare >= 0)
		close(f->spare);
	free(f);
}

struct ftd_front *ftd_front_start(int listen_fd, struct ftd_front_pool *main, struct ftd_front_pool *reserve)
{
	struct ftd_front *f = calloc(1, sizeof *f);
	if (!f)
		return NULL;
	f->lfd = listen_fd;
	f->main = main;
	f->reserve = reserve;
	f->spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
	f->ep = epoll_create1(EPOLL_CLOEXEC);
	f->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	int fl = fcntl(listen_fd, F_GETFL);
	if (f->ep < 0 || f->stop_fd < 0 || fl < 0 || fcntl(listen_fd, F_SETFL, fl | O_NONBLOCK) < 0) {
		ftd_log(FTD_LOG_ERR, "http: epoll/eventfd: %s", strerror(errno));
		goto fail;
	}
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &f->lfd};
	struct epoll_event sv = {.events = EPOLLIN, .data.ptr = &f->stop_fd};
	if (epoll_ctl(f->ep, EPOLL_CTL_ADD, listen_fd, &ev) < 0 || epoll_ctl(f->ep, EPOLL_CTL_ADD, f->stop_fd, &sv) < 0) {
		ftd_log(FTD_LOG_ERR, "http: epoll_ctl: %s", strerror(errno));
		goto fail;
	}
	int e = pthread_create(&f->thread, NULL, front_main, f);
	if (e) {
		ftd_log(FTD_LOG_ERR, "http: cannot start the acceptor: %s", strerror(e));
		goto fail;
	}
	f->thread_started = 1;
	return f;
fail:
	ftd_front_stop(f);
	return NULL;
}
