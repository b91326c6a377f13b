/* http_client: URL building, API errors, tokens, and requests against a canned
 * one-shot HTTP server on loopback (a thread in this test). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/http_client.h"
#include "util/sse.h"

static void test_normalize_and_build(void **st)
{
	char b[64], u[64];
	assert_int_equal(fthttpc_normalize_base("http://127.0.0.1:8377/", b, sizeof b), 0);
	assert_string_equal(b, "http://127.0.0.1:8377");
	assert_int_equal(fthttpc_normalize_base("HTTPS://h.example/prefix//", b, sizeof b), 0);
	assert_string_equal(b, "HTTPS://h.example/prefix");
	assert_int_equal(fthttpc_normalize_base("127.0.0.1:8377", b, sizeof b), -EINVAL);
	assert_int_equal(fthttpc_normalize_base("ftp://h", b, sizeof b), -EINVAL);
	assert_int_equal(fthttpc_normalize_base("http://", b, sizeof b), -EINVAL);
	assert_int_equal(fthttpc_normalize_base("http:///x", b, sizeof b), -EINVAL);
	assert_int_equal(fthttpc_normalize_base("http://h/?q=1", b, sizeof b), -EINVAL);
	assert_int_equal(fthttpc_normalize_base("http://h/#f", b, sizeof b), -EINVAL);
	assert_int_equal(fthttpc_normalize_base("http://h x", b, sizeof b), -EINVAL);
	assert_int_equal(fthttpc_normalize_base("", b, sizeof b), -EINVAL);
	assert_int_equal(fthttpc_normalize_base(NULL, b, sizeof b), -EINVAL);
	assert_int_equal(fthttpc_normalize_base("http://a-long-host-name", b, 10), -ENAMETOOLONG);

	assert_int_equal(fthttpc_build_url(u, sizeof u, "http://h:1", "/benchmark/jobs"), 0);
	assert_string_equal(u, "http://h:1/benchmark/jobs");
	assert_int_equal(fthttpc_build_url(u, sizeof u, "http://h:1", "benchmark"), -EINVAL);
	assert_int_equal(fthttpc_build_url(u, 12, "http://h:1", "/benchmark"), -ENAMETOOLONG);
}

static void test_escape(void **st)
{
	char o[64];
	assert_int_equal(fthttpc_escape_segment("0123abcdef456789", o, sizeof o), 0);
	assert_string_equal(o, "0123abcdef456789");
	assert_int_equal(fthttpc_escape_segment("GPU-a.b_c~d", o, sizeof o), 0);
	assert_string_equal(o, "GPU-a.b_c~d");
	assert_int_equal(fthttpc_escape_segment("a/b c?&%", o, sizeof o), 0);
	assert_string_equal(o, "a%2Fb%20c%3F%26%25");
	assert_int_equal(fthttpc_escape_segment("\xc3\xa9", o, sizeof o), 0);
	assert_string_equal(o, "%C3%A9");
	assert_int_equal(fthttpc_escape_segment("", o, sizeof o), -EINVAL);
	assert_int_equal(fthttpc_escape_segment("/", o, 3), -ENAMETOOLONG);
	assert_int_equal(fthttpc_escape_segment("/", o, 4), 0);
}

/* ------------------------------------------------------------------ SSE (parser: test_sse.c) */

struct evlog {
	char buf[4096];
	int n;
	int stop_at;
};

static int log_ev(void *ctx, const struct ftsse_event *ev)
{
	struct evlog *l = ctx;
	size_t u = strlen(l->buf);
	snprintf(l->buf + u, sizeof l->buf - u, "[%s|%s|%s]", ev->type, ev->data, ev->id);
	l->n++;
	return l->stop_at && l->n == l->stop_at ? 7 : 0;
}

static const char stream[] =
	": keep-alive\n"
	"event: state\ndata: {\"state\":\"running\"}\nid: 1\n\n"
	"event: progress\r\ndata: {\"done\":1,\r\ndata: \"total\":2}\r\n\r\n"
	"data:no-space\rid: 7\r\r"
	"event: lonely\n\n"
	"retry: 100\nfoo: bar\ndata\n\n"
	"event: partial\ndata: never";

static const char want[] =
	"[state|{\"state\":\"running\"}|1]"
	"[progress|{\"done\":1,\n\"total\":2}|1]"
	"[message|no-space|7]"
	"[message||7]";

/* ------------------------------------------------------------------ errors, tokens */

static void test_api_error(void **st)
{
	struct fthttpc_resp r = {.status = 400};
	const char *code, *msg, *field;
	char d[256];
	r.json = json_loads("{\"error\":{\"code\":\"invalid_argument\",\"message\":\"cpu_iters must be "
			    "1..1000\",\"field\":\"args.cpu_iters\"}}", 0, NULL);
	assert_int_equal(fthttpc_api_error(&r, &code, &msg, &field), 0);
	assert_string_equal(code, "invalid_argument");
	assert_string_equal(field, "args.cpu_iters");
	fthttpc_describe_error(&r, d, sizeof d);
	assert_string_equal(d, "cpu_iters must be 1..1000 (field: args.cpu_iters)");
	json_decref(r.json);

	r.json = json_loads("{\"error\":{\"code\":\"not_found\",\"message\":\"no such job\",\"field\":null}}", 0, NULL);
	fthttpc_describe_error(&r, d, sizeof d);
	assert_string_equal(d, "no such job");
	json_decref(r.json);

	r.json = json_loads("{\"jobs\":[]}", 0, NULL);
	assert_int_equal(fthttpc_api_error(&r, &code, &msg, &field), -ENOENT);
	assert_null(code);
	json_decref(r.json);
	r.json = NULL;
	r.status = 502;
	r.body = "<html>\nBad gateway\n</html>\n";
	fthttpc_describe_error(&r, d, sizeof d);
	assert_string_equal(d, "HTTP 502: <html> Bad gateway </html>");
	/* an untrusted body is cut to a short printable excerpt */
	char big[1000];
	memset(big, 's', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	memcpy(big, "secret\x1b[2J\xff\r\nX", 14);
	r.body = big;
	r.status = 403;
	fthttpc_describe_error(&r, d, sizeof d);
	assert_int_equal(strncmp(d, "HTTP 403: secret [2J? X", 23), 0);
	assert_true(strlen(d) <= 10 + FTHTTPC_EXCERPT + 3);
	assert_string_equal(d + strlen(d) - 3, "...");
	r.status = 502;
	r.body = NULL;
	fthttpc_describe_error(&r, d, sizeof d);
	assert_string_equal(d, "HTTP 502");
}

static void test_token_file(void **st)
{
	struct fthttpc c;
	assert_int_equal(fthttpc_init(&c, "http://127.0.0.1:1"), 0);
	char path[] = "/tmp/fthttpc-token-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "  s3cret-T0ken \n# comment\n", 26), 26);
	close(fd);
	assert_int_equal(fthttpc_set_token_file(&c, path), 0);
	assert_string_equal(c.token, "s3cret-T0ken");
	fd = open(path, O_WRONLY | O_TRUNC);
	assert_int_equal(write(fd, " \n\n", 3), 3);
	close(fd);
	assert_int_equal(fthttpc_set_token_file(&c, path), -EINVAL);
	assert_int_equal(fthttpc_set_token(&c, "a b"), -EINVAL);
	assert_int_equal(fthttpc_set_token(&c, "abc"), 0);
	assert_int_equal(fthttpc_set_token(&c, NULL), 0);
	assert_null(c.token);
	unlink(path);
	assert_int_equal(fthttpc_set_token_file(&c, path), -ENOENT);
	fthttpc_release(&c);
	fthttpc_release(&c); /* twice is fine */

	assert_int_equal(fthttpc_init(&c, "localhost:8377"), -EINVAL);
	assert_non_null(strstr(c.err, "localhost:8377"));
	fthttpc_release(&c);
}

/* ------------------------------------------------------------------ against a canned server */

struct canned {
	int lfd;
	int port;
	const char *reply;  /* written after the request headers (and body) arrived */
	char request[8192]; /* what the client sent */
};

static void *serve_once(void *arg)
{
	struct canned *s = arg;
	int fd = accept(s->lfd, NULL, NULL);
	if (fd < 0)
		return NULL;
	size_t n = 0;
	for (;;) {
		ssize_t r = read(fd, s->request + n, sizeof s->request - 1 - n);
		if (r <= 0)
			break;
		n += (size_t)r;
		s->request[n] = '\0';
		char *end = strstr(s->request, "\r\n\r\n");
		if (!end)
			continue;
		const char *cl = strcasestr(s->request, "Content-Length:");
		size_t need = cl ? strtoul(cl + 15, NULL, 10) : 0;
		if (n - (size_t)(end + 4 - s->request) >= need)
			break;
	}
	if (s->reply) {
		size_t off = 0, len = strlen(s->reply);
		while (off < len) {
			ssize_t w = write(fd, s->reply + off, len - off);
			if (w <= 0)
				break;
			off += (size_t)w;
		}
	}
	close(fd);
	return NULL;
}

static void canned_start(struct canned *s, pthread_t *t, const char *reply)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof a;
	memset(s, 0, sizeof *s);
	s->reply = reply;
	s->lfd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(s->lfd >= 0);
	assert_int_equal(bind(s->lfd, (struct sockaddr *)&a, sizeof a), 0);
	assert_int_equal(listen(s->lfd, 4), 0);
	assert_int_equal(getsockname(s->lfd, (struct sockaddr *)&a, &al), 0);
	s->port = ntohs(a.sin_port);
	assert_int_equal(pthread_create(t, NULL, serve_once, s), 0);
}

static void canned_stop(struct canned *s, pthread_t t)
{
	pthread_join(t, NULL);
	close(s->lfd);
}

static void test_post_json(void **st)
{
	struct canned s;
	pthread_t t;
	canned_start(&s, &t,
		     "HTTP/1.1 202 Accepted\r\nContent-Type: application/json\r\n"
		     "Location: /benchmark/jobs/0123456789abcdef\r\nContent-Length: 42\r\n"
		     "Connection: close\r\n\r\n{\"id\":\"0123456789abcdef\",\"state\":\"queued\"}");
	char url[64];
	snprintf(url, sizeof url, "http://127.0.0.1:%d/", s.port);
	struct fthttpc c;
	struct fthttpc_resp r;
	assert_int_equal(fthttpc_init(&c, url), 0);
	assert_int_equal(fthttpc_set_token(&c, "tok123"), 0);
	json_t *body = json_pack("{s:s,s:{s:i}}", "kind", "bw", "args", "cpu_iters", 8);
	const char *h[] = {"Idempotency-Key: k1", NULL};
	assert_int_equal(fthttpc_request(&c, "POST", "/benchmark/start", body, h, &r), 0);
	canned_stop(&s, t);
	assert_int_equal(r.status, 202);
	assert_string_equal(r.location, "/benchmark/jobs/0123456789abcdef");
	assert_string_equal(json_string_value(json_object_get(r.json, "state")), "queued");
	assert_non_null(strstr(s.request, "POST /benchmark/start HTTP/1.1\r\n"));
	assert_non_null(strstr(s.request, "Authorization: Bearer tok123\r\n"));
	assert_non_null(strstr(s.request, "Content-Type: application/json\r\n"));
	assert_non_null(strstr(s.request, "Idempotency-Key: k1\r\n"));
	assert_non_null(strstr(s.request, "\r\n\r\n{\"kind\":\"bw\",\"args\":{\"cpu_iters\":8}}"));
	assert_null(strstr(c.err, "tok123"));
	fthttpc_resp_release(&r);
	json_decref(body);
	fthttpc_release(&c);
}

static void test_error_response_and_refused(void **st)
{
	struct canned s;
	pthread_t t;
	canned_start(&s, &t,
		     "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json; charset=utf-8\r\n"
		     "Connection: close\r\n\r\n"
		     "{\"error\":{\"code\":\"unknown_field\",\"message\":\"unknown field\",\"field\":\"args.x\"}}");
	char url[64];
	snprintf(url, sizeof url, "http://127.0.0.1:%d", s.port);
	struct fthttpc c;
	struct fthttpc_resp r;
	assert_int_equal(fthttpc_init(&c, url), 0);
	assert_int_equal(fthttpc_request(&c, "POST", "/benchmark/jobs/0123456789abcdef/cancel", NULL, NULL, &r), 0);
	int port = s.port;
	canned_stop(&s, t);
	assert_int_equal(r.status, 400);
	const char *field;
	assert_int_equal(fthttpc_api_error(&r, NULL, NULL, &field), 0);
	assert_string_equal(field, "args.x");
	assert_non_null(strstr(s.request, "Content-Length: 0\r\n"));
	assert_null(strstr(s.request, "Authorization"));
	fthttpc_resp_release(&r);
	fthttpc_release(&c);

	/* the port is closed now: a refused connection is -ECONNREFUSED with a message */
	snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
	assert_int_equal(fthttpc_init(&c, url), 0);
	assert_int_equal(fthttpc_request(&c, "GET", "/health", NULL, NULL, &r), -ECONNREFUSED);
	assert_non_null(strstr(c.err, "/health"));
	fthttpc_resp_release(&r);
	fthttpc_release(&c);
}

static void test_stream(void **st)
{
	struct canned s;
	pthread_t t;
	char reply[2048];
	snprintf(reply, sizeof reply,
		 "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
		 "Connection: close\r\n\r\n%s", stream);
	canned_start(&s, &t, reply);
	char url[64];
	snprintf(url, sizeof url, "http://127.0.0.1:%d", s.port);
	struct fthttpc c;
	struct fthttpc_resp r;
	struct evlog l = {0};
	assert_int_equal(fthttpc_init(&c, url), 0);
	struct ftsse_parser *p = ftsse_new(0, 0, log_ev, &l);
	assert_non_null(p);
	assert_int_equal(fthttpc_stream(&c, "/benchmark/jobs/x/events", "5", 10, p, &r), 0);
	canned_stop(&s, t);
	assert_int_equal(r.status, 200);
	assert_string_equal(l.buf, want);
	assert_non_null(strstr(s.request, "Accept: text/event-stream\r\n"));
	assert_non_null(strstr(s.request, "Last-Event-ID: 5\r\n"));
	ftsse_free(p);
	fthttpc_resp_release(&r);

	/* a callback that stops the stream: its positive value comes back, the transfer ends */
	canned_start(&s, &t, reply);
	snprintf(url, sizeof url, "http://127.0.0.1:%d", s.port);
	fthttpc_release(&c);
	assert_int_equal(fthttpc_init(&c, url), 0);
	memset(&l, 0, sizeof l);
	l.stop_at = 2;
	p = ftsse_new(0, 0, log_ev, &l);
	assert_int_equal(fthttpc_stream(&c, "/benchmark/jobs/x/events", NULL, 10, p, &r), 7);
	canned_stop(&s, t);
	assert_int_equal(l.n, 2);
	assert_int_equal(r.status, 200);
	ftsse_free(p);
	fthttpc_resp_release(&r);

	/* a non-stream answer (404) is collected as a body, not fed to the parser */
	canned_start(&s, &t,
		     "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"
		     "{\"error\":{\"code\":\"not_found\",\"message\":\"no such job\",\"field\":null}}");
	snprintf(url, sizeof url, "http://127.0.0.1:%d", s.port);
	fthttpc_release(&c);
	assert_int_equal(fthttpc_init(&c, url), 0);
	memset(&l, 0, sizeof l);
	p = ftsse_new(0, 0, log_ev, &l);
	assert_int_equal(fthttpc_stream(&c, "/benchmark/jobs/x/events", "", 10, p, &r), 0);
	canned_stop(&s, t);
	assert_int_equal(r.status, 404);
	assert_int_equal(l.n, 0);
	assert_non_null(r.json);
	assert_null(strstr(s.request, "Last-Event-ID"));
	ftsse_free(p);
	fthttpc_resp_release(&r);
	fthttpc_release(&c);
}

static void test_errno_and_body_limit(void **st)
{
	assert_int_equal(fthttpc_errno(CURLE_OK), 0);
	assert_int_equal(fthttpc_errno(CURLE_COULDNT_CONNECT), -ECONNREFUSED);
	assert_int_equal(fthttpc_errno(CURLE_OPERATION_TIMEDOUT), -ETIMEDOUT);
	assert_int_equal(fthttpc_errno(CURLE_COULDNT_RESOLVE_HOST), -EHOSTUNREACH);
	assert_int_equal(fthttpc_errno(CURLE_URL_MALFORMAT), -EINVAL);
	assert_int_equal(fthttpc_errno(CURLE_ABORTED_BY_CALLBACK), -ECANCELED);
	assert_int_equal(fthttpc_errno(CURLE_RECV_ERROR), -EPIPE);
	assert_int_equal(fthttpc_errno(CURLE_PARTIAL_FILE), -EPIPE);
	assert_int_equal(fthttpc_errno(CURLE_SSL_CONNECT_ERROR), -EIO);

	/* a body over the handle's max_body is refused with -EFBIG and no half-read body */
	struct canned s;
	pthread_t t;
	canned_start(&s, &t,
		     "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"
		     "{\"data\":[{\"id\":\"a-model-name-longer-than-the-limit\"}]}");
	char url[64];
	snprintf(url, sizeof url, "http://127.0.0.1:%d", s.port);
	struct fthttpc c;
	struct fthttpc_resp r;
	assert_int_equal(fthttpc_init(&c, url), 0);
	c.max_body = 16;
	c.noproxy = "localhost,127.0.0.1,::1";
	assert_int_equal(fthttpc_request(&c, "GET", "/v1/models", NULL, NULL, &r), -EFBIG);
	canned_stop(&s, t);
	assert_non_null(strstr(c.err, "response too large"));
	assert_int_equal(r.status, 200);
	assert_null(r.body);
	fthttpc_resp_release(&r);
	fthttpc_release(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_normalize_and_build),
		cmocka_unit_test(test_escape),
		cmocka_unit_test(test_api_error),
		cmocka_unit_test(test_token_file),
		cmocka_unit_test(test_post_json),
		cmocka_unit_test(test_error_response_and_refused),
		cmocka_unit_test(test_stream),
		cmocka_unit_test(test_errno_and_body_limit),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
