#include "decode/prompts.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/fsutil.h"

/* Competition-style problems written for ftbenchd (not taken from any contest), each with a
 * unique integer answer; long enough chains of reasoning to make the expert routing realistic. */
static const struct {
	const char *text, *answer;
} builtin[] = {
	{"Let S be the set of positive integers n with n <= 1000 such that n^2 + n + 1 is divisible by 7. "
	 "Find the number of elements of S.", "286"},
	{"Find the number of triples (a, b, c) of positive integers with a < b < c and a + b + c = 30.", "61"},
	{"A sequence is defined by a_1 = 3, a_2 = 5, and a_n = a_{n-1} + 2a_{n-2} for n >= 3. "
	 "Find the remainder when a_20 is divided by 1000.", "101"},
	{"How many subsets of {1, 2, 3, ..., 12}, including the empty set, contain no two consecutive "
	 "integers and have an even sum of elements?", "195"},
	{"Find the number of positive divisors of 2025^2 that leave a remainder of 1 when divided by 4.", "25"},
	{"Triangle ABC has side lengths AB = 13, BC = 14 and CA = 15. Let I be the center of its inscribed "
	 "circle. Find AI^2.", "65"},
	{"Find the least positive integer n such that 2^n - n is divisible by 101.", "209"},
	{"A lattice path from (0, 0) to (6, 6) uses unit steps (1, 0) and (0, 1). How many such paths never "
	 "visit a point (x, y) with y > x + 1?", "429"},
};

int ftprompt_builtin_count(void)
{
	return (int)(sizeof builtin / sizeof builtin[0]);
}

const char *ftprompt_builtin(int i, const char **answer)
{
	if (i < 0 || i >= ftprompt_builtin_count())
		return NULL;
	if (answer)
		*answer = builtin[i].answer;
	return builtin[i].text;
}

char *ftprompt_with_instruction(const char *text)
{
	char *s = NULL;
	if (strstr(text, "boxed"))
		return strdup(text);
	if (asprintf(&s, "%s\n%s", text, FTPROMPT_INSTRUCTION) < 0)
		return NULL;
	return s;
}

int ftprompt_load(const char *path, int index, char **out, char *source, size_t n, char *err, size_t errlen)
{
	if (index < 0) {
		snprintf(err, errlen, "problem index %d is negative", index);
		return -ERANGE;
	}
	if (!path) {
		const char *t = ftprompt_builtin(index, NULL);
		if (!t) {
			snprintf(err, errlen, "problem %d: the embedded set has %d problems (0..%d)", index,
				 ftprompt_builtin_count(), ftprompt_builtin_count() - 1);
			return -ERANGE;
		}
		snprintf(source, n, "builtin:%d", index);
		*out = ftprompt_with_instruction(t);
		return *out ? 0 : -ENOMEM;
	}
	char *data = NULL;
	size_t len = 0;
	int r = ftfs_read_file(path, FTPROMPT_MAX_FILE, &data, &len);
	if (r < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(-r));
		return r;
	}
	int seen = 0, lineno = 0;
	r = -ERANGE;
	for (char *line = data, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		lineno++;
		char *p = line;
		while (*p == ' ' || *p == '\t' || *p == '\r')
			p++;
		if (!*p)
			continue;
		if (seen++ != index)
			continue;
		json_error_t je;
		json_t *j = json_loads(p, 0, &je);
		const char *t = json_string_value(json_object_get(j, "problem"));
		if (!t)
			t = json_string_value(json_object_get(j, "prompt"));
		if (!t) {
			snprintf(err, errlen, "%s:%d: %s", path, lineno,
				 j ? "no \"problem\" or \"prompt\" string" : je.text);
			r = -EBADMSG;
		} else {
			const char *b = strrchr(path, '/');
			snprintf(source, n, "%s:%d", b ? b + 1 : path, index);
			*out = ftprompt_with_instruction(t);
			r = *out ? 0 : -ENOMEM;
		}
		json_decref(j);
		break;
	}
	if (r == -ERANGE)
		snprintf(err, errlen, "problem %d: %s has %d problems", index, path, seen);
	free(data);
	return r;
}
