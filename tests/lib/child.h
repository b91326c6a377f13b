/* child: the child processes of a C test: a program run to its end with its output in files, or
 * started in the background and stopped (linked into every test binary, Makefile TEST_OBJS).
 * Its environment is built before fork; between fork and exec the child only opens, dup2s and
 * execs (async-signal-safe calls); a child that cannot do so exits 127. */
#ifndef FT_TESTS_CHILD_H
#define FT_TESTS_CHILD_H
#include <sys/types.h>

/* What the child gets besides argv. A path is opened O_WRONLY|O_CREAT|O_TRUNC (NULL: inherited);
 * "/dev/null" silences. err == CHILD_SAME_AS_OUT puts stderr into out's file. */
#define CHILD_SAME_AS_OUT ((const char *)1)
struct child_io {
	const char *out;       /* fd 1 */
	const char *err;       /* fd 2 */
	const char *fd3;       /* fd 3 (a worker's result fd), or NULL: not open */
	const char *const *env; /* "K=V" set, "K" unset, in order; NULL-ended (may be NULL) */
};

/* fork + execve(argv[0], argv) (argv NULL-ended): the pid, or -1 when fork (or the environment
 * copy) failed. io may be NULL. */
pid_t child_start(const char *const *argv, const struct child_io *io);
/* Wait for pid: its exit status, 128 + the signal that ended it, or -1 (waitpid failed). */
int child_wait(pid_t pid);
/* child_start and child_wait: the status, or -1. */
int child_run(const char *const *argv, const struct child_io *io);
/* SIGTERM and wait (a background server, a fixture): child_wait's value. */
int child_stop(pid_t pid);
#endif
