/* workermsg: each message type parsed, and every malformed line refused with its reason. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include "util/workermsg.h"

static int parse(const char *s, struct ftwmsg *m, char *why)
{
	return ftwmsg_parse(s, strlen(s), m, why, 128);
}

static void test_types(void **st)
{
	struct ftwmsg m;
	char why[128];
	assert_int_equal(parse("{\"type\":\"progress\",\"done\":2,\"total\":5,\"label\":\"parallel\"}", &m, why), 0);
	assert_int_equal(m.type, FTWMSG_PROGRESS);
	assert_true(m.done == 2 && m.total == 5);
	assert_string_equal(m.label, "parallel");
	ftwmsg_release(&m);
	assert_int_equal(parse("{\"type\":\"progress\",\"done\":0,\"total\":1}", &m, why), 0);
	assert_string_equal(m.label, "");
	ftwmsg_release(&m);
	assert_int_equal(parse("{\"type\":\"result\",\"result\":{\"load_s\":1.5}}", &m, why), 0);
	assert_int_equal(m.type, FTWMSG_RESULT);
	assert_true(json_real_value(json_object_get(m.result, "load_s")) == 1.5);
	ftwmsg_release(&m);
	assert_int_equal(parse("{\"type\":\"error\",\"message\":\"no such file\"}", &m, why), 0);
	assert_int_equal(m.type, FTWMSG_ERROR);
	assert_string_equal(m.message, "no such file");
	ftwmsg_release(&m);
	ftwmsg_release(&m); /* twice: harmless */
	/* a line given with its length, not NUL-terminated */
	const char buf[] = "{\"type\":\"error\",\"message\":\"x\"}GARBAGE";
	assert_int_equal(ftwmsg_parse(buf, strlen(buf) - 7, &m, why, sizeof why), 0);
	ftwmsg_release(&m);
}

static void test_malformed(void **st)
{
	static const struct {
		const char *line, *why;
	} cases[] = {
		{"@@RESULT@@ {}", "a line that is not JSON"},
		{"[1,2]", "a message without a type"},
		{"{\"result\":{}}", "a message without a type"},
		{"{\"type\":7}", "a message without a type"},
		{"{\"type\":\"progress\",\"done\":\"1\",\"total\":2}", "a malformed progress message"},
		{"{\"type\":\"progress\",\"done\":1}", "a malformed progress message"},
		{"{\"type\":\"progress\",\"done\":1,\"total\":2,\"label\":3}", "a malformed progress message"},
		{"{\"type\":\"result\",\"result\":[1]}", "a result that is not an object"},
		{"{\"type\":\"result\"}", "a result that is not an object"},
		{"{\"type\":\"error\",\"message\":null}", "an error without a message"},
		{"{\"type\":\"done\"}", "unknown message type 'done'"},
		{"{\"type\":\"error\",\"message\":\"a\",\"message\":\"b\"}", "a line that is not JSON"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		struct ftwmsg m;
		char why[128] = "";
		assert_int_equal(parse(cases[i].line, &m, why), -EPROTO);
		assert_string_equal(why, cases[i].why);
		assert_null(m.json);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_types),
		cmocka_unit_test(test_malformed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
