/* decode/server: template expansion, the §8 flag mapping, process-group start and stop. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "decode/server.h"
#include "util/timeutil.h"

static char *join(char **v)
{
	static char buf[4096];
	ftsrv_argv_string(v, buf, sizeof buf);
	return buf;
}

static void test_flags(void **st)
{
	struct ftsrv_serve_cfg c = {.max_tokens = 256, .mem_ratio = 0.9, .hybrid_fetch = -1, .cache_rate = -1};
	char **f;
	int n;
	assert_int_equal(ftsrv_serve_flags(&c, FTSRV_FREETOKEN, "offload", &f, &n), 0);
	assert_string_equal(join(f), "--moe-backend offload --max-running-requests 1 --max-seq-len-override 8448 "
				     "--memory-ratio 0.9 --cuda-graph-max-bs 1 --moe-hybrid-max-fetch -1 --moe-cache-auto");
	assert_int_equal(n, 13);
	ftsrv_free_argv(f);
	c.no_graph = 1;
	c.cache_size = 512;
	c.cache_rate = 0.3;
	assert_int_equal(ftsrv_serve_flags(&c, FTSRV_FREETOKEN, "hybrid", &f, &n), 0);
	assert_non_null(strstr(join(f), "--cuda-graph-max-bs 0 --moe-hybrid-max-fetch -1 --moe-cache-size 512"));
	ftsrv_free_argv(f);
	c.cache_size = 0;
	assert_int_equal(ftsrv_serve_flags(&c, FTSRV_FREETOKEN, "cpu", &f, &n), 0);
	assert_non_null(strstr(join(f), "--moe-cache-rate 0.3"));
	ftsrv_free_argv(f);
	/* the seed's order: [--gpu G] [--num-token-override N] before the cache flag */
	c.gpu = "GPU-1234";
	c.num_token_override = 4096;
	assert_int_equal(ftsrv_serve_flags(&c, FTSRV_FREETOKEN, "cpu", &f, &n), 0);
	assert_non_null(strstr(join(f), "--moe-hybrid-max-fetch -1 --gpu GPU-1234 --num-token-override 4096 "
					"--moe-cache-rate 0.3"));
	ftsrv_free_argv(f);
	/* other kinds: their own equivalents, never the seed's engine flags */
	assert_int_equal(ftsrv_serve_flags(&c, FTSRV_LLAMACPP, "cpu", &f, &n), 0);
	assert_string_equal(join(f), "--ctx-size 8448 --parallel 1");
	ftsrv_free_argv(f);
	assert_int_equal(ftsrv_serve_flags(&c, FTSRV_VLLM, "cpu", &f, &n), 0);
	assert_string_equal(join(f), "--max-model-len 8448 --max-num-seqs 1 --gpu-memory-utilization 0.9");
	ftsrv_free_argv(f);
	assert_int_equal(ftsrv_serve_flags(&c, FTSRV_SGLANG, "cpu", &f, &n), 0);
	assert_string_equal(join(f), "--context-length 8448 --max-running-requests 1 --mem-fraction-static 0.9");
	ftsrv_free_argv(f);
	assert_int_equal(ftsrv_serve_flags(&c, FTSRV_OPENAI, "cpu", &f, &n), 0);
	assert_int_equal(n, 0);
	assert_null(f[0]);
	ftsrv_free_argv(f);
}

static void test_kinds(void **st)
{
	assert_int_equal(ftsrv_kind_parse("freetoken"), FTSRV_FREETOKEN);
	assert_int_equal(ftsrv_kind_parse("llama.cpp"), FTSRV_LLAMACPP);
	assert_int_equal(ftsrv_kind_parse("LLAMA-SERVER"), FTSRV_LLAMACPP);
	assert_int_equal(ftsrv_kind_parse("vllm"), FTSRV_VLLM);
	assert_int_equal(ftsrv_kind_parse("sglang"), FTSRV_SGLANG);
	assert_int_equal(ftsrv_kind_parse("openai"), FTSRV_OPENAI);
	assert_int_equal(ftsrv_kind_parse("tgi"), -EINVAL);
	for (int k = 0; k < FTSRV_NKINDS; k++)
		assert_int_equal(ftsrv_kind_parse(ftsrv_kind_name((enum ftsrv_kind)k)), k);
	assert_string_equal(ftsrv_default_template(FTSRV_FREETOKEN), FTSRV_DEFAULT_TEMPLATE);
	assert_null(ftsrv_default_template(FTSRV_OPENAI));
	for (int k = 0; k < FTSRV_OPENAI; k++) {
		assert_true(ftsrv_template_has_flags(ftsrv_default_template((enum ftsrv_kind)k)));
		assert_non_null(strstr(ftsrv_default_template((enum ftsrv_kind)k), "{port}"));
	}
	assert_false(ftsrv_template_has_flags("srv --port {port} x{flags}"));
	assert_true(ftsrv_template_has_flags("{flags} srv --port {port}"));
}

static void test_expand(void **st)
{
	char *flags[] = {"--a", "1", NULL};
	char **v, err[256];
	/* the seed's launcher: the model only as --model, never positionally */
	assert_int_equal(ftsrv_expand(FTSRV_DEFAULT_TEMPLATE, "/m/q w", 30001, "cpu", flags, 0, &v, err, sizeof err), 0);
	assert_string_equal(v[0], "python");
	assert_string_equal(v[5], "/m/q w"); /* one word, spaces and all: no shell */
	assert_string_equal(join(v), "python -m freetoken.cli serve --model '/m/q w' --host 127.0.0.1 --port 30001 --a 1");
	ftsrv_free_argv(v);
	/* quotes, escapes, placeholders inside words, flags appended when {flags} is absent and asked */
	assert_int_equal(ftsrv_expand("srv \"--name=x {backend}\" '{literal}' a\\ b --url=http://h:{port}/ ''", "m", 7,
				      "hybrid", flags, 1, &v, err, sizeof err), 0);
	assert_string_equal(v[1], "--name=x hybrid");
	assert_string_equal(v[2], "{literal}");
	assert_string_equal(v[3], "a b");
	assert_string_equal(v[4], "--url=http://h:7/");
	assert_string_equal(v[5], "");
	assert_string_equal(v[6], "--a");
	assert_null(v[8]);
	ftsrv_free_argv(v);
	/* ... and left out when not asked */
	assert_int_equal(ftsrv_expand("srv --port {port}", "m", 7, "b", flags, 0, &v, err, sizeof err), 0);
	assert_string_equal(join(v), "srv --port 7");
	ftsrv_free_argv(v);
	assert_int_equal(ftsrv_expand("srv --p {port} {flags} --last", "m", 7, "b", flags, 0, &v, err, sizeof err), 0);
	assert_string_equal(join(v), "srv --p 7 --a 1 --last");
	ftsrv_free_argv(v);
	/* errors */
	assert_int_equal(ftsrv_expand("srv --port {prot}", "m", 7, "b", NULL, 0, &v, err, sizeof err), -EINVAL);
	assert_non_null(strstr(err, "{prot}"));
	assert_int_equal(ftsrv_expand("srv --model {model}", "m", 7, "b", NULL, 0, &v, err, sizeof err), -EINVAL);
	assert_non_null(strstr(err, "{port}"));
	assert_int_equal(ftsrv_expand("srv 'x {port}", "m", 7, "b", NULL, 0, &v, err, sizeof err), -EINVAL);
	assert_int_equal(ftsrv_expand("   ", "m", 7, "b", NULL, 0, &v, err, sizeof err), -EINVAL);
	assert_int_equal(ftsrv_expand("srv {port", "m", 7, "b", NULL, 0, &v, err, sizeof err), -EINVAL);
	ftsrv_free_argv(NULL);
}

static void test_free_port(void **st)
{
	int p = 0;
	assert_int_equal(ftsrv_free_port(&p), 0);
	assert_true(p > 0 && p < 65536);
}

/* a link planted at the log path is never followed */
static void test_log_link_refused(void **st)
{
	char dir[] = "/tmp/ftsrv-link-XXXXXX", victim[64], link[64], err[256];
	assert_non_null(mkdtemp(dir));
	snprintf(victim, sizeof victim, "%s/victim", dir);
	snprintf(link, sizeof link, "%s/server.log", dir);
	FILE *f = fopen(victim, "w");
	assert_non_null(f);
	fputs("precious\n", f);
	fclose(f);
	assert_int_equal(symlink(victim, link), 0);
	struct ftsrv s;
	char *argv[] = {"/bin/echo", "written", NULL};
	assert_int_equal(ftsrv_start(&s, argv, link, err, sizeof err), -ELOOP);
	char tail[64];
	ftsrv_log_tail(victim, 5, tail, sizeof tail);
	assert_string_equal(tail, "precious");
	unlink(link);
	unlink(victim);
	rmdir(dir);
}

static void test_start_missing(void **st)
{
	struct ftsrv s;
	char err[256];
	char *argv[] = {"/nonexistent/server", NULL};
	assert_true(ftsrv_start(&s, argv, "/dev/null", err, sizeof err) < 0);
	assert_non_null(strstr(err, "/nonexistent/server"));
	char *argv2[] = {"no-such-program-ftbench-xyz", NULL};
	assert_int_equal(ftsrv_start(&s, argv2, "/dev/null", err, sizeof err), -ENOENT);
	char how[128];
	assert_int_equal(ftsrv_stop(NULL, NULL, how, sizeof how), 0);
}

static void test_stop_term_and_kill(void **st)
{
	char log[] = "/tmp/ftsrv-test-XXXXXX";
	int fd = mkstemp(log);
	close(fd);
	struct ftsrv s;
	char err[256], how[256];
	struct ftsrv_grace g = {0.3, 5, 0};
	/* polite: exits on SIGTERM */
	char *polite[] = {"sh", "-c", "echo started; exec sleep 30", NULL};
	assert_int_equal(ftsrv_start(&s, polite, log, err, sizeof err), 0);
	pid_t pid = s.proc.pid;
	assert_int_equal(getpgid(pid), pid);
	assert_int_equal(ftsrv_alive(&s), 1);
	char tail[256] = "";
	for (int i = 0; i < 200 && !strstr(tail, "started"); i++) {
		usleep(10000);
		ftsrv_log_tail(log, 5, tail, sizeof tail);
	}
	assert_non_null(strstr(tail, "started")); /* stdout goes to the log */
	double t0 = fttime_now_s();
	assert_int_equal(ftsrv_stop(&s, &g, how, sizeof how), 0);
	assert_non_null(strstr(how, "SIGTERM"));
	assert_true(fttime_now_s() - t0 < 0.3);
	/* stubborn: the leader and a grandchild ignore SIGTERM */
	char *stubborn[] = {"sh", "-c", "trap '' TERM; sleep 30 & echo armed; wait; sleep 30", NULL};
	assert_int_equal(ftsrv_start(&s, stubborn, log, err, sizeof err), 0);
	pid = s.proc.pid;
	for (int i = 0; i < 500 && !strstr(tail, "armed"); i++) {
		usleep(10000);
		ftsrv_log_tail(log, 5, tail, sizeof tail);
	}
	assert_non_null(strstr(tail, "armed"));
	t0 = fttime_now_s();
	assert_int_equal(ftsrv_stop(&s, &g, how, sizeof how), 0);
	assert_non_null(strstr(how, "SIGKILL"));
	double took = fttime_now_s() - t0;
	assert_true(took >= 0.3 && took < 3);
	assert_true(kill(-pid, 0) < 0 && errno == ESRCH); /* the whole group is gone */
	ftsrv_log_tail(log, 1, tail, sizeof tail);
	assert_true(strlen(tail) > 0 && !strchr(tail, '\n'));
	/* a server that already exited */
	char *quick[] = {"sh", "-c", "exit 4", NULL};
	assert_int_equal(ftsrv_start(&s, quick, log, err, sizeof err), 0);
	while (ftsrv_alive(&s))
		usleep(10000);
	ftproc_status_string(s.proc.status, how, sizeof how);
	assert_string_equal(how, "exited with status 4");
	assert_int_equal(ftsrv_stop(&s, &g, how, sizeof how), 0);
	assert_string_equal(how, "had already exited");
	unlink(log);
}

int main(void)
{
	signal(SIGCHLD, SIG_DFL);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_flags),
		cmocka_unit_test(test_kinds),
		cmocka_unit_test(test_expand),
		cmocka_unit_test(test_free_port),
		cmocka_unit_test(test_start_missing),
		cmocka_unit_test(test_log_link_refused),
		cmocka_unit_test(test_stop_term_and_kill),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
