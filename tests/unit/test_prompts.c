/* decode/prompts: jsonl problems by index, the embedded set, the \boxed{} instruction rule. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "decode/prompts.h"

static void test_instruction_rule(void **st)
{
	/* the seed's rule exactly: one "\n", nothing trimmed */
	char *s = ftprompt_with_instruction("What is 1+1?\n");
	assert_string_equal(s, "What is 1+1?\n\n" FTPROMPT_INSTRUCTION);
	free(s);
	s = ftprompt_with_instruction("What is 1+1? ");
	assert_string_equal(s, "What is 1+1? \n" FTPROMPT_INSTRUCTION);
	free(s);
	s = ftprompt_with_instruction("Answer in \\boxed{} please.");
	assert_string_equal(s, "Answer in \\boxed{} please.");
	free(s);
	/* the seed tests "boxed", not "\boxed{" */
	s = ftprompt_with_instruction("Give the boxed answer.");
	assert_string_equal(s, "Give the boxed answer.");
	free(s);
}

static void test_builtin(void **st)
{
	assert_true(ftprompt_builtin_count() >= 5);
	char *p, src[64], err[256];
	for (int i = 0; i < ftprompt_builtin_count(); i++) {
		const char *ans = NULL;
		assert_non_null(ftprompt_builtin(i, &ans));
		assert_non_null(ans);
		assert_int_equal(ftprompt_load(NULL, i, &p, src, sizeof src, err, sizeof err), 0);
		assert_non_null(strstr(p, "\\boxed{}"));
		free(p);
	}
	assert_string_equal(src, "builtin:7");
	assert_int_equal(ftprompt_load(NULL, ftprompt_builtin_count(), &p, src, sizeof src, err, sizeof err), -ERANGE);
	assert_non_null(strstr(err, "embedded set"));
	assert_int_equal(ftprompt_load(NULL, -1, &p, src, sizeof src, err, sizeof err), -ERANGE);
	assert_null(ftprompt_builtin(-1, NULL));
}

static void test_jsonl(void **st)
{
	char path[] = "/tmp/ftprompt-XXXXXX";
	int fd = mkstemp(path);
	const char *body = "{\"problem\": \"Find x.\", \"answer\": \"3\"}\n"
			   "\n"
			   "{\"id\": 2, \"prompt\": \"Preformatted; put it in \\\\boxed{}.\"}\r\n"
			   "{\"id\": 3}\n"
			   "not json\n";
	assert_int_equal(write(fd, body, strlen(body)), (int)strlen(body));
	close(fd);
	char *p, src[64], err[256];
	assert_int_equal(ftprompt_load(path, 0, &p, src, sizeof src, err, sizeof err), 0);
	assert_string_equal(p, "Find x.\n" FTPROMPT_INSTRUCTION);
	free(p);
	assert_int_equal(ftprompt_load(path, 1, &p, src, sizeof src, err, sizeof err), 0); /* blank line skipped */
	assert_string_equal(p, "Preformatted; put it in \\boxed{}.");
	assert_non_null(strstr(src, ":1"));
	free(p);
	assert_int_equal(ftprompt_load(path, 2, &p, src, sizeof src, err, sizeof err), -EBADMSG);
	assert_int_equal(ftprompt_load(path, 3, &p, src, sizeof src, err, sizeof err), -EBADMSG);
	assert_int_equal(ftprompt_load(path, 4, &p, src, sizeof src, err, sizeof err), -ERANGE);
	assert_non_null(strstr(err, "has 4 problems"));
	unlink(path);
	assert_int_equal(ftprompt_load(path, 0, &p, src, sizeof src, err, sizeof err), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_instruction_rule),
		cmocka_unit_test(test_builtin),
		cmocka_unit_test(test_jsonl),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
