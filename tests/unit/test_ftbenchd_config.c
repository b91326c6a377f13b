/* ftbenchd config: the option table parses files and flags, flags win, bad values and unknown
 * keys are refused with the place named, non-loopback needs a token. The module is compiled in
 * here (it lives in daemon/, outside libftbench). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../daemon/config.c"
#include "../lib/tmpdir.h"

static char tmpdir[] = "/tmp/ftd-config-XXXXXX";

static const char *write_conf(const char *name, const char *text)
{
	static char path[256];
	snprintf(path, sizeof path, "%s/%s", tmpdir, name);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	return path;
}

static int load(struct ftd_config *c, int argc, const char **argv)
{
	return ftd_config_load(c, argc, (char **)argv);
}

static void test_defaults(void **s)
{
	struct ftd_config c;
	const char *argv[] = {"ftbenchd", "-c", ""};
	assert_int_equal(load(&c, 3, argv), 0);
	assert_string_equal(c.listen, "127.0.0.1:8377");
	assert_int_equal(c.max_queue, 64);
	assert_int_equal(c.max_body, 65536);
	assert_int_equal(c.kill_grace, 10);
	assert_int_equal(c.n_model_roots, 0);
	assert_int_equal(c.n_decode_urls, 0); /* no decode URL by default */
	assert_int_equal(c.max_running, 0);
	assert_int_equal(ftd_config_check(&c), 0);
	assert_int_equal(c.max_running, sysconf(_SC_NPROCESSORS_ONLN)); /* default: the cores */
	assert_null(c.token);
	ftd_config_release(&c);
}

static void test_file_and_flags(void **s)
{
	const char *p = write_conf("a.conf", "# comment\n\nlisten = 127.0.0.1:9000\nmax-queue = 7\n"
					     "model-roots = /tmp, /\ndecode-server = ft=ft serve {model} --port {port}\n"
					     "decode-server = other=x {model}\n");
	struct ftd_config c;
	const char *argv[] = {"ftbenchd", "--config", p, "--max-queue", "9", "--job-timeout=60", "-n"};
	assert_int_equal(load(&c, 7, argv), 0);
	assert_string_equal(c.listen, "127.0.0.1:9000");
	assert_int_equal(c.max_queue, 9); /* the flag wins */
	assert_int_equal(c.job_timeout, 60);
	assert_true(c.check_only);
	assert_int_equal(c.n_model_roots, 2);
	assert_int_equal(c.n_decode_servers, 2);
	assert_string_equal(ftd_config_decode_server(&c, "ft"), "ft serve {model} --port {port}");
	assert_string_equal(ftd_config_decode_server(&c, "other"), "x {model}");
	assert_null(ftd_config_decode_server(&c, "f"));
	assert_null(ftd_config_decode_server(&c, "ft=ft serve")); /* no prefix match */
	assert_null(ftd_config_decode_server(&c, "ft=ft"));
	assert_null(ftd_config_decode_server(&c, ""));
	assert_null(ftd_config_decode_server(&c, "rogue"));
	assert_int_equal(ftd_config_check(&c), 0);
	ftd_config_release(&c);
}

static void test_bad(void **s)
{
	struct ftd_config c;
	const char *p = write_conf("b.conf", "max-queue = 0\n");
	const char *a1[] = {"ftbenchd", "-c", p};
	assert_int_equal(load(&c, 3, a1), -EINVAL);
	ftd_config_release(&c);
	p = write_conf("c.conf", "colour = red\n");
	const char *a2[] = {"ftbenchd", "-c", p};
	assert_int_equal(load(&c, 3, a2), -EINVAL);
	ftd_config_release(&c);
	p = write_conf("d.conf", "just words\n");
	const char *a3[] = {"ftbenchd", "-c", p};
	assert_int_equal(load(&c, 3, a3), -EINVAL);
	ftd_config_release(&c);
	const char *a4[] = {"ftbenchd", "-c", "", "--max-body", "12abc"};
	assert_int_equal(load(&c, 5, a4), -EINVAL);
	ftd_config_release(&c);
	const char *a5[] = {"ftbenchd", "-c", "", "--no-such", "1"};
	assert_int_equal(load(&c, 5, a5), -EINVAL);
	ftd_config_release(&c);
	const char *a6[] = {"ftbenchd", "-c", "", "--listen"};
	assert_int_equal(load(&c, 4, a6), -EINVAL);
	ftd_config_release(&c);
	const char *a7[] = {"ftbenchd", "-c", "", "--decode-server", "noequals"};
	assert_int_equal(load(&c, 5, a7), -EINVAL);
	ftd_config_release(&c);
	/* server names are [A-Za-z0-9_.-]{1,64}; decode-urls well-formed; decode-hosts gone */
	const char *a8[] = {"ftbenchd", "-c", "", "--decode-server", "my server=x {port}"};
	assert_int_equal(load(&c, 5, a8), -EINVAL);
	ftd_config_release(&c);
	const char *a9[] = {"ftbenchd", "-c", "", "--decode-urls", "http://127.0.0.1:1/a,ftp://x/"};
	assert_int_equal(load(&c, 5, a9), -EINVAL);
	ftd_config_release(&c);
	const char *a10[] = {"ftbenchd", "-c", "", "--decode-hosts", "gpu-7"};
	assert_int_equal(load(&c, 5, a10), -EINVAL);
	ftd_config_release(&c);
	const char *a11[] = {"ftbenchd", "-c", "", "--max-running", "-1"};
	assert_int_equal(load(&c, 5, a11), -EINVAL);
	ftd_config_release(&c);
}

static void test_check(void **s)
{
	struct ftd_config c;
	const char *a1[] = {"ftbenchd", "-c", "", "--listen", "0.0.0.0:8377"};
	assert_int_equal(load(&c, 5, a1), 0);
	assert_int_equal(ftd_config_check(&c), -EPERM); /* no token */
	ftd_config_release(&c);
	const char *tok = write_conf("token", "  0123456789abcdef-token \n");
	const char *a2[] = {"ftbenchd", "-c", "", "--listen", "0.0.0.0:8377", "--token-file", tok};
	assert_int_equal(load(&c, 7, a2), 0);
	assert_int_equal(ftd_config_check(&c), 0);
	assert_string_equal(c.token, "0123456789abcdef-token"); /* trimmed */
	ftd_config_release(&c);
	const char *shorttok = write_conf("short", "abc\n");
	const char *a3[] = {"ftbenchd", "-c", "", "--token-file", shorttok};
	assert_int_equal(load(&c, 5, a3), 0);
	assert_int_equal(ftd_config_check(&c), -EINVAL);
	ftd_config_release(&c);
	const char *a4[] = {"ftbenchd", "-c", "", "--model-roots", "/nonexistent/dir"};
	assert_int_equal(load(&c, 5, a4), 0);
	assert_true(ftd_config_check(&c) < 0);
	ftd_config_release(&c);
	const char *a5[] = {"ftbenchd", "-c", "", "--job-timeout", "100", "--max-job-timeout", "50"};
	assert_int_equal(load(&c, 7, a5), 0);
	assert_int_equal(ftd_config_check(&c), -EINVAL);
	ftd_config_release(&c);
}

static void test_dump_documents_everything(void **s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	ftd_config_dump(f);
	fclose(f);
	for (size_t i = 0; i < N_OPTS; i++) {
		char want[128];
		snprintf(want, sizeof want, "\n#%s = %s\n", opts[i].name, opts[i].def);
		assert_non_null(strstr(buf, want));
	}
	/* and the dump parses back (all lines are comments) */
	const char *p = write_conf("dump.conf", buf);
	struct ftd_config c;
	const char *a[] = {"ftbenchd", "-c", p};
	assert_int_equal(load(&c, 3, a), 0);
	ftd_config_release(&c);
	free(buf);
}

/* the allowlist compares normal forms (RFC 3986 6.2.2): dot segments and percent-encoded
 * unreserved characters cannot step outside an entry; encoded separators are refused. */
static void test_url_normalize(void **s)
{
	(void)s;
	char out[FTD_CONFIG_URL_MAX + 1], why[160];
	static const char *const cases[][2] = {
		{"http://127.0.0.1:9/v1/../internal/admin", "http://127.0.0.1:9/internal/admin"},
		{"http://127.0.0.1:9/v1/%2e%2E/internal", "http://127.0.0.1:9/internal"},
		{"http://127.0.0.1:9/v1/./a/../chat?x=/../y", "http://127.0.0.1:9/v1/chat?x=/../y"},
		{"http://LocalHost:9/v1/%7Euser/%41", "http://localhost:9/v1/~user/A"},
		{"http://h/a/b/..", "http://h/a/"},
		{"http://h/../../x", "http://h/x"},
		{"http://h", "http://h"},
		{"http://h/v1/%c3%a9", "http://h/v1/%C3%A9"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		assert_int_equal(ftd_config_url_normalize(cases[i][0], out, sizeof out, why, sizeof why), 0);
		assert_string_equal(out, cases[i][1]);
	}
	assert_int_equal(ftd_config_url_normalize("http://h/v1/..%2Fadmin", out, sizeof out, why, sizeof why), -EINVAL);
	assert_int_equal(ftd_config_url_normalize("http://h/v1/%5C..", out, sizeof out, why, sizeof why), -EINVAL);
	assert_int_equal(ftd_config_url_normalize("http://h/v1/%zz", out, sizeof out, why, sizeof why), -EINVAL);
	struct ftd_config c;
	const char *a[] = {"ftbenchd", "-c", "", "--decode-urls", "http://127.0.0.1:9/v1"};
	assert_int_equal(load(&c, 5, a), 0);
	assert_true(ftd_config_url_allowed(&c, "http://127.0.0.1:9/v1/chat"));
	assert_true(ftd_config_url_allowed(&c, "http://127.0.0.1:9/v1/x/../chat"));
	assert_true(ftd_config_url_allowed(&c, "http://127.0.0.1:9/v1"));
	assert_false(ftd_config_url_allowed(&c, "http://127.0.0.1:9/v1/../internal/admin"));
	assert_false(ftd_config_url_allowed(&c, "http://127.0.0.1:9/v1/%2e%2e/internal"));
	assert_false(ftd_config_url_allowed(&c, "http://127.0.0.1:9/v1/a/../../x"));
	assert_false(ftd_config_url_allowed(&c, "http://127.0.0.1:9/v1/..%2Fx"));
	assert_false(ftd_config_url_allowed(&c, "http://127.0.0.1:9/v10"));
	ftd_config_release(&c);
}

int main(void)
{
	if (!mkdtemp(tmpdir))
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults), cmocka_unit_test(test_file_and_flags), cmocka_unit_test(test_bad),
		cmocka_unit_test(test_check), cmocka_unit_test(test_dump_documents_everything),
		cmocka_unit_test(test_url_normalize),
	};
	int r = cmocka_run_group_tests(tests, NULL, NULL);
	if (tmpdir_remove(tmpdir) != 0)
		r = r ? r : 1;
	return r;
}
