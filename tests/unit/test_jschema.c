/* util/jschema: the JSON Schema subset, error paths, unsupported keywords. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/jschema.h"

static json_t *J(const char *text)
{
	json_error_t e;
	json_t *j = json_loads(text, JSON_DECODE_ANY, &e);
	if (!j)
		fail_msg("bad JSON in test: %s: %s", text, e.text);
	return j;
}

static char err[1024];

/* Validate doc text against schema text; returns the result, err holds the message. */
static int V(const char *schema, const char *doc)
{
	json_t *s = J(schema), *d = J(doc);
	int r = ftjschema_validate(s, d, err, sizeof err);
	json_decref(s);
	json_decref(d);
	return r;
}

static void test_types(void **st)
{
	assert_int_equal(V("{\"type\":\"integer\"}", "3"), 0);
	assert_int_equal(V("{\"type\":\"integer\"}", "3.0"), 0);
	assert_int_equal(V("{\"type\":\"integer\"}", "3.5"), -EINVAL);
	assert_string_equal(err, "$: expected integer, got number");
	assert_int_equal(V("{\"type\":\"number\"}", "3"), 0);
	assert_int_equal(V("{\"type\":\"string\"}", "3"), -EINVAL);
	assert_int_equal(V("{\"type\":\"boolean\"}", "false"), 0);
	assert_int_equal(V("{\"type\":\"null\"}", "null"), 0);
	assert_int_equal(V("{\"type\":\"null\"}", "0"), -EINVAL);
	assert_int_equal(V("{\"type\":\"array\"}", "[]"), 0);
	assert_int_equal(V("{\"type\":\"object\"}", "[]"), -EINVAL);
	assert_int_equal(V("{\"type\":[\"number\",\"null\"]}", "null"), 0);
	assert_int_equal(V("{\"type\":[\"number\",\"null\"]}", "1.5"), 0);
	assert_int_equal(V("{\"type\":[\"number\",\"null\"]}", "\"x\""), -EINVAL);
	assert_non_null(strstr(err, "expected number or null, got string"));
	assert_int_equal(V("{\"type\":\"float\"}", "1"), -ENOTSUP);
	assert_int_equal(V("true", "{\"a\":1}"), 0);
	assert_int_equal(V("false", "1"), -EINVAL);
	assert_int_equal(V("{}", "[1,{}]"), 0);
	assert_int_equal(V("{\"type\":\"integer\",\"nullable\":true}", "null"), 0);
}

static void test_objects_and_paths(void **st)
{
	const char *s = "{\"type\":\"object\",\"required\":[\"a\"],\"additionalProperties\":false,"
			"\"properties\":{\"a\":{\"type\":\"object\",\"properties\":{\"b\":{\"type\":\"array\","
			"\"items\":{\"type\":\"object\",\"properties\":{\"c\":{\"type\":\"integer\"}}}}}},"
			"\"z\":{}}}";
	assert_int_equal(V(s, "{\"a\":{\"b\":[{\"c\":1},{\"c\":2}]}}"), 0);
	assert_int_equal(V(s, "{\"a\":{\"b\":[{\"c\":1},{\"c\":\"2\"}]}}"), -EINVAL);
	assert_string_equal(err, "$.a.b[1].c: expected integer, got string");
	assert_int_equal(V(s, "{\"z\":1}"), -EINVAL);
	assert_string_equal(err, "$: missing required property \"a\"");
	assert_int_equal(V(s, "{\"a\":{},\"y\":1}"), -EINVAL);
	assert_non_null(strstr(err, "unexpected property \"y\""));
	/* additionalProperties as a schema */
	const char *m = "{\"type\":\"object\",\"additionalProperties\":{\"enum\":[\"hybrid\",\"offload\"]}}";
	assert_int_equal(V(m, "{\"bf16\":\"hybrid\",\"nvfp4\":\"offload\"}"), 0);
	assert_int_equal(V(m, "{\"bf16\":\"cpu\"}"), -EINVAL);
	assert_non_null(strstr(err, "$.bf16: \"cpu\" is not one of"));
	assert_int_equal(V("{\"minProperties\":1,\"maxProperties\":2}", "{}"), -EINVAL);
	assert_int_equal(V("{\"minProperties\":1,\"maxProperties\":2}", "{\"a\":1,\"b\":2,\"c\":3}"), -EINVAL);
	assert_int_equal(V("{\"minProperties\":1,\"maxProperties\":2}", "{\"a\":1}"), 0);
	/* required listing a non-string is a schema error */
	assert_int_equal(V("{\"required\":[1]}", "{}"), -ENOTSUP);
}

static void test_numbers_strings_arrays(void **st)
{
	assert_int_equal(V("{\"minimum\":1,\"maximum\":3}", "1"), 0);
	assert_int_equal(V("{\"minimum\":1,\"maximum\":3}", "3"), 0);
	assert_int_equal(V("{\"minimum\":1,\"maximum\":3}", "0.5"), -EINVAL);
	assert_non_null(strstr(err, "below the minimum"));
	assert_int_equal(V("{\"minimum\":1,\"maximum\":3}", "4"), -EINVAL);
	assert_int_equal(V("{\"exclusiveMinimum\":0}", "0"), -EINVAL);
	assert_int_equal(V("{\"exclusiveMinimum\":0}", "0.001"), 0);
	assert_int_equal(V("{\"exclusiveMaximum\":1}", "1"), -EINVAL);
	assert_int_equal(V("{\"minimum\":0,\"exclusiveMinimum\":true}", "0"), -EINVAL); /* draft-04 */
	assert_int_equal(V("{\"multipleOf\":0.5}", "2.5"), 0);
	assert_int_equal(V("{\"multipleOf\":0.5}", "2.6"), -EINVAL);
	assert_int_equal(V("{\"minimum\":5}", "\"x\""), 0); /* only applies to numbers */
	assert_int_equal(V("{\"minLength\":2,\"maxLength\":3}", "\"\\u00e9\\u00e9\""), 0); /* code points */
	assert_int_equal(V("{\"minLength\":2}", "\"\\u00e9\""), -EINVAL);
	assert_int_equal(V("{\"maxLength\":3}", "\"abcd\""), -EINVAL);
	assert_int_equal(V("{\"pattern\":\"^GPU-[0-9a-f-]+$\"}", "\"GPU-8eb97239-58cd\""), 0);
	assert_int_equal(V("{\"pattern\":\"^GPU-[0-9a-f-]+$\"}", "\"8eb97239\""), -EINVAL);
	assert_non_null(strstr(err, "does not match pattern"));
	assert_int_equal(V("{\"pattern\":\"b\"}", "\"abc\""), 0); /* unanchored search */
	assert_int_equal(V("{\"pattern\":\"(\"}", "\"x\""), -ENOTSUP);
	assert_int_equal(V("{\"items\":{\"type\":\"string\"},\"minItems\":1}", "[\"a\",\"b\"]"), 0);
	assert_int_equal(V("{\"items\":{\"type\":\"string\"},\"minItems\":1}", "[]"), -EINVAL);
	assert_int_equal(V("{\"items\":{\"type\":\"string\"}}", "[\"a\",2]"), -EINVAL);
	assert_string_equal(err, "$[1]: expected string, got integer");
	assert_int_equal(V("{\"maxItems\":1}", "[1,2]"), -EINVAL);
	assert_int_equal(V("{\"items\":[{\"type\":\"integer\"},{\"type\":\"string\"}]}", "[1,\"a\",null]"), 0);
	assert_int_equal(V("{\"items\":[{\"type\":\"integer\"},{\"type\":\"string\"}]}", "[1,2]"), -EINVAL);
	assert_int_equal(V("{\"uniqueItems\":true}", "[1,2,1.0]"), -EINVAL);
	assert_int_equal(V("{\"uniqueItems\":true}", "[1,2,{\"a\":1}]"), 0);
}

static void test_enum_const(void **st)
{
	assert_int_equal(V("{\"const\":4}", "4"), 0);
	assert_int_equal(V("{\"const\":4}", "4.0"), 0);
	assert_int_equal(V("{\"const\":4}", "3"), -EINVAL);
	assert_string_equal(err, "$: expected the constant 4");
	assert_int_equal(V("{\"const\":{\"a\":[1]}}", "{\"a\":[1.0]}"), 0);
	assert_int_equal(V("{\"enum\":[\"a\",null,2]}", "null"), 0);
	assert_int_equal(V("{\"enum\":[\"a\",null,2]}", "2"), 0);
	assert_int_equal(V("{\"enum\":[\"a\",null,2]}", "\"b\""), -EINVAL);
	assert_int_equal(V("{\"enum\":\"a\"}", "\"a\""), -ENOTSUP);
}

static void test_refs(void **st)
{
	const char *s = "{\"definitions\":{\"pos\":{\"type\":\"number\",\"minimum\":0}},"
			"\"$defs\":{\"a/b\":{\"type\":\"string\"},\"t~x\":{\"type\":\"boolean\"}},"
			"\"type\":\"object\",\"properties\":{"
			"\"p\":{\"$ref\":\"#/definitions/pos\"},"
			"\"q\":{\"$ref\":\"#/$defs/a~1b\"},"
			"\"r\":{\"$ref\":\"#/$defs/t~0x\"},"
			"\"self\":{\"$ref\":\"#\"}}}";
	assert_int_equal(V(s, "{\"p\":1,\"q\":\"x\",\"r\":true,\"self\":{\"p\":2}}"), 0);
	assert_int_equal(V(s, "{\"p\":-1}"), -EINVAL);
	assert_string_equal(err, "$.p: -1 is below the minimum 0");
	assert_int_equal(V(s, "{\"self\":{\"self\":{\"q\":3}}}"), -EINVAL);
	assert_string_equal(err, "$.self.self.q: expected string, got integer");
	assert_int_equal(V("{\"$ref\":\"#/definitions/nope\"}", "1"), -ENOTSUP);
	assert_non_null(strstr(err, "does not resolve"));
	assert_int_equal(V("{\"$ref\":\"other.json#/x\"}", "1"), -ENOTSUP);
	/* a $ref loop is caught, not a stack overflow */
	assert_int_equal(V("{\"definitions\":{\"a\":{\"$ref\":\"#/definitions/a\"}},\"$ref\":\"#/definitions/a\"}", "1"),
			 -ENOTSUP);
	/* siblings of $ref apply too */
	assert_int_equal(V("{\"definitions\":{\"n\":{\"type\":\"number\"}},\"$ref\":\"#/definitions/n\",\"maximum\":2}", "3"),
			 -EINVAL);
}

static void test_combinators(void **st)
{
	const char *one = "{\"oneOf\":[{\"type\":\"null\"},{\"type\":\"object\",\"required\":[\"median\"],"
			  "\"properties\":{\"median\":{\"type\":\"number\"}}}]}";
	assert_int_equal(V(one, "null"), 0);
	assert_int_equal(V(one, "{\"median\":1}"), 0);
	assert_int_equal(V(one, "{\"median\":\"x\"}"), -EINVAL);
	/* the deepest failure among the branches is reported */
	assert_string_equal(err, "$.median: expected number, got string");
	assert_int_equal(V(one, "{}"), -EINVAL);
	assert_non_null(strstr(err, "missing required property \"median\""));
	assert_int_equal(V("{\"oneOf\":[{\"type\":\"number\"},{\"type\":\"integer\"}]}", "1"), -EINVAL);
	assert_non_null(strstr(err, "more than one"));
	assert_int_equal(V("{\"oneOf\":[{\"type\":\"number\"},{\"type\":\"integer\"}]}", "1.5"), 0);
	assert_int_equal(V("{\"anyOf\":[{\"type\":\"number\"},{\"type\":\"integer\"}]}", "1"), 0);
	assert_int_equal(V("{\"anyOf\":[{\"type\":\"number\"},{\"type\":\"null\"}]}", "\"s\""), -EINVAL);
	assert_non_null(strstr(err, "matches none of anyOf"));
	assert_int_equal(V("{\"allOf\":[{\"minimum\":1},{\"maximum\":2}]}", "1.5"), 0);
	assert_int_equal(V("{\"allOf\":[{\"minimum\":1},{\"maximum\":2}]}", "2.5"), -EINVAL);
	assert_int_equal(V("{\"not\":{\"type\":\"string\"}}", "1"), 0);
	assert_int_equal(V("{\"not\":{\"type\":\"string\"}}", "\"a\""), -EINVAL);
	assert_int_equal(V("{\"oneOf\":[]}", "1"), -ENOTSUP);
}

static void test_unsupported_and_annotations(void **st)
{
	assert_int_equal(V("{\"patternProperties\":{\"^a\":{}}}", "{}"), -ENOTSUP);
	assert_non_null(strstr(err, "patternProperties"));
	assert_int_equal(V("{\"if\":{},\"then\":{}}", "1"), -ENOTSUP);
	assert_int_equal(V("{\"properties\":{\"a\":{\"dependencies\":{}}}}", "{\"a\":1}"), -ENOTSUP);
	assert_int_equal(V("{\"$schema\":\"http://json-schema.org/draft-07/schema#\",\"title\":\"t\","
			   "\"description\":\"d\",\"format\":\"date-time\",\"default\":1,\"examples\":[1],"
			   "\"$comment\":\"c\",\"x-custom\":1}",
			   "\"not a date\""),
			 0);
	/* NULL error buffer and NULL arguments */
	json_t *s = J("{\"type\":\"string\"}"), *d = J("1");
	assert_int_equal(ftjschema_validate(s, d, NULL, 0), -EINVAL);
	assert_int_equal(ftjschema_validate(NULL, d, NULL, 0), -EINVAL);
	assert_int_equal(ftjschema_validate(s, NULL, err, sizeof err), -EINVAL);
	json_decref(s);
	json_decref(d);
	/* a long path is truncated, not overflowed */
	char deep_s[4096] = "", deep_d[4096] = "";
	for (int i = 0; i < 60; i++) {
		strcat(deep_s, "{\"properties\":{\"a_rather_long_property_name\":");
		strcat(deep_d, "{\"a_rather_long_property_name\":");
	}
	strcat(deep_s, "{\"type\":\"string\"}");
	strcat(deep_d, "1");
	for (int i = 0; i < 60; i++) {
		strcat(deep_s, "}}");
		strcat(deep_d, "}");
	}
	assert_int_equal(V(deep_s, deep_d), -EINVAL);
	assert_true(strlen(err) < sizeof err);
}

static void test_files(void **st)
{
	char sp[] = "/tmp/ftjs-XXXXXX";
	int fd = mkstemp(sp);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "{\"type\":\"object\"}", 17), 17);
	close(fd);
	assert_int_equal(ftjschema_validate_files(sp, sp, err, sizeof err), 0);
	assert_int_equal(ftjschema_validate_files(sp, "/nonexistent/x.json", err, sizeof err), -ENOENT);
	assert_non_null(strstr(err, "/nonexistent/x.json"));
	unlink(sp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_types),
		cmocka_unit_test(test_objects_and_paths),
		cmocka_unit_test(test_numbers_strings_arrays),
		cmocka_unit_test(test_enum_const),
		cmocka_unit_test(test_refs),
		cmocka_unit_test(test_combinators),
		cmocka_unit_test(test_unsupported_and_annotations),
		cmocka_unit_test(test_files),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
