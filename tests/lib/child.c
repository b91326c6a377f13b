/* child: see child.h. */
#include "child.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* In the child: path onto fd, or exit 127. */
static void redirect(const char *path, int fd)
{
	int f = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (f < 0 || dup2(f, fd) < 0)
		_exit(127);
	if (f != fd)
		close(f);
}

extern char **environ;

/* environ with the changes of env ("K=V" set, "K" unset): a new array of borrowed strings, or NULL. */
static char **env_with(const char *const *env)
{
	size_t n = 0, m = 0;
	while (environ[n])
		n++;
	while (env && env[m])
		m++;
	char **out = calloc(n + m + 1, sizeof *out);
	if (!out)
		return NULL;
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		int drop = 0;
		for (size_t j = 0; j < m && !drop; j++) {
			size_t kl = strcspn(env[j], "=");
			drop = !strncmp(environ[i], env[j], kl) && environ[i][kl] == '=';
		}
		if (!drop)
			out[k++] = environ[i];
	}
	for (size_t j = 0; j < m; j++)
		if (strchr(env[j], '='))
			out[k++] = (char *)env[j];
	return out;
}

pid_t child_start(const char *const *argv, const struct child_io *io)
{
	char **envp = env_with(io ? io->env : NULL); /* built before fork: nothing allocates after it */
	if (!envp)
		return -1;
	pid_t pid = fork();
	if (pid != 0) {
		free(envp);
		return pid;
	}
	if (io && io->out)
		redirect(io->out, 1);
	if (io && io->err == CHILD_SAME_AS_OUT && io->out && dup2(1, 2) < 0)
		_exit(127);
	if (io && io->err && io->err != CHILD_SAME_AS_OUT)
		redirect(io->err, 2);
	if (io && io->fd3)
		redirect(io->fd3, 3);
	execve(argv[0], (char *const *)argv, envp);
	_exit(127);
}

int child_wait(pid_t pid)
{
	int st;
	pid_t r;
	while ((r = waitpid(pid, &st, 0)) < 0 && errno == EINTR)
		;
	if (r != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int child_run(const char *const *argv, const struct child_io *io)
{
	pid_t pid = child_start(argv, io);
	return pid < 0 ? -1 : child_wait(pid);
}

int child_stop(pid_t pid)
{
	if (pid <= 0)
		return -1;
	kill(pid, SIGTERM);
	return child_wait(pid);
}
