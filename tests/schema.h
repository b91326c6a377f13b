/* JSON Schema checks for the C tests through python3-jsonschema (tests/schema_check.py --serve,
 * one process per test program, started on first use): the tests validate what we produce with
 * the same library the Python tests use, and the product carries no validator.
 *
 * ftt_schema_validate(schema_path, doc, err, n): 0 when doc conforms; -EINVAL when it does not,
 * err (may be NULL) one line naming the JSON path that failed and why ("$.gpu.uuid: ...";
 * anyOf/oneOf: the deepest failure among the branches); -EIO when the checker cannot run or
 * cannot read the schema (err says why). ftt_schema_validate_file: the same for a file.
 * Paths are relative to FT_SRCDIR (default: the working directory, the repository root). */
#ifndef FT_TESTS_SCHEMA_H
#define FT_TESTS_SCHEMA_H
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static FILE *ftt_schema_in, *ftt_schema_out;

static inline const char *ftt_schema_srcdir(void)
{
	const char *s = getenv("FT_SRCDIR");
	return s && *s ? s : ".";
}

static inline int ftt_schema_start(char *err, size_t n)
{
	int to[2], from[2];
	char script[PATH_MAX];
	if (ftt_schema_in)
		return 0;
	snprintf(script, sizeof script, "%s/tests/schema_check.py", ftt_schema_srcdir());
	if (pipe(to) < 0)
		goto fail;
	if (pipe(from) < 0) {
		close(to[0]);
		close(to[1]);
		goto fail;
	}
	pid_t pid = fork();
	if (pid < 0) {
		close(to[0]);
		close(to[1]);
		close(from[0]);
		close(from[1]);
		goto fail;
	}
	if (pid == 0) {
		dup2(to[0], 0);
		dup2(from[1], 1);
		close(to[0]);
		close(to[1]);
		close(from[0]);
		close(from[1]);
		for (int fd = 3; fd < 1024; fd++) /* hold none of the test's pipes open */
			close(fd);
		execlp("python3", "python3", script, "--serve", (char *)NULL);
		_exit(127);
	}
	close(to[0]);
	close(from[1]);
	fcntl(to[1], F_SETFD, FD_CLOEXEC); /* the test's own children do not hold the checker's pipes */
	fcntl(from[0], F_SETFD, FD_CLOEXEC);
	signal(SIGPIPE, SIG_IGN); /* a checker that died reads as -EIO, not a killed test */
	ftt_schema_in = fdopen(to[1], "w");
	ftt_schema_out = fdopen(from[0], "r");
	if (!ftt_schema_in || !ftt_schema_out) {
		if (err && n)
			snprintf(err, n, "schema checker: fdopen failed");
		return -EIO;
	}
	return 0; /* the checker ends when the test exits and its stdin closes */
fail:
	if (err && n)
		snprintf(err, n, "schema checker: %s", strerror(errno));
	return -EIO;
}

static inline int ftt_schema_validate(const char *schema_path, const json_t *doc, char *err, size_t n)
{
	char path[PATH_MAX], line[8192];
	int r = ftt_schema_start(err, n);
	if (r)
		return r;
	if (!doc) {
		if (err && n)
			snprintf(err, n, "schema: no document");
		return -EINVAL;
	}
	char *text = json_dumps(doc, JSON_COMPACT | JSON_ENCODE_ANY);
	if (!text)
		return -ENOMEM;
	snprintf(path, sizeof path, "%s%s%s", schema_path[0] == '/' ? "" : ftt_schema_srcdir(),
		 schema_path[0] == '/' ? "" : "/", schema_path);
	int w = fprintf(ftt_schema_in, "%s\t%s\n", path, text);
	free(text);
	if (w < 0 || fflush(ftt_schema_in) || !fgets(line, sizeof line, ftt_schema_out)) {
		if (err && n)
			snprintf(err, n, "schema checker (python3 tests/schema_check.py, python3-jsonschema) "
					 "did not answer");
		return -EIO;
	}
	line[strcspn(line, "\n")] = '\0';
	if (!strcmp(line, "ok")) {
		if (err && n)
			err[0] = '\0';
		return 0;
	}
	char *tab = strchr(line, '\t'), *why = tab ? tab + 1 : line;
	if (err && n) {
		size_t l = strlen(why) < n ? strlen(why) : n - 1;
		memcpy(err, why, l);
		err[l] = '\0';
	}
	return strncmp(line, "invalid\t", 8) ? -EIO : -EINVAL;
}

static inline int ftt_schema_validate_file(const char *schema_path, const char *doc_path, char *err, size_t n)
{
	json_error_t je;
	json_t *doc = json_load_file(doc_path, 0, &je);
	if (!doc) {
		if (err && n)
			snprintf(err, n, "%s: %s", doc_path, je.text);
		return -EINVAL;
	}
	int r = ftt_schema_validate(schema_path, doc, err, n);
	json_decref(doc);
	return r;
}
#endif
