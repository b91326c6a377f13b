/* directio: see directio.h. */
#include "moe/directio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int ftdirectio_pread(int fd, uint8_t *buf, uint64_t len, uint64_t off, uint64_t *got)
{
	uint64_t n = 0;
	*got = 0;
	while (n < len) {
		ssize_t r = pread(fd, buf + n, len - n, (off_t)(off + n));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			break;
		n += (uint64_t)r;
		if (n % FTDIRECTIO_ALIGN) /* a short O_DIRECT read: only at EOF */
			break;
	}
	*got = n;
	return 0;
}

int ftdirectio_init(struct ftdirectio_files *f, size_t n)
{
	*f = (struct ftdirectio_files){.n = n};
#ifdef FT_TEST_HOOKS
	const char *fake = getenv("FTLOAD_TEST_EINVAL"); /* test builds only: see directio.h */
	f->fake_einval = fake && !strcmp(fake, "1");
#endif
	f->fd_direct = malloc(sizeof(int) * (n ? n : 1));
	f->fd_buf = malloc(sizeof(int) * (n ? n : 1));
	f->direct_ok = malloc(sizeof(atomic_int) * (n ? n : 1));
	if (!f->fd_direct || !f->fd_buf || !f->direct_ok) {
		f->n = 0; /* nothing to close */
		ftdirectio_release(f);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		f->fd_direct[i] = f->fd_buf[i] = -1;
		atomic_init(&f->direct_ok[i], 0);
	}
	return 0;
}

int ftdirectio_open(struct ftdirectio_files *f, size_t i, const char *path)
{
	if (f->fd_buf[i] >= 0)
		return 0;
	f->fd_buf[i] = open(path, O_RDONLY | O_CLOEXEC);
	if (f->fd_buf[i] < 0)
		return -errno;
	f->fd_direct[i] = open(path, O_RDONLY | O_CLOEXEC | O_DIRECT);
	atomic_store(&f->direct_ok[i], f->fd_direct[i] >= 0);
	return 0;
}

int ftdirectio_fd(struct ftdirectio_files *f, size_t i)
{
	if (!atomic_load(&f->direct_ok[i]))
		return f->fd_buf[i];
	if (f->fake_einval) {
		atomic_store(&f->direct_ok[i], 0);
		return f->fd_buf[i];
	}
	return f->fd_direct[i];
}

int ftdirectio_retry(struct ftdirectio_files *f, size_t i, int fd, int rc)
{
	if (rc != -EINVAL || fd != f->fd_direct[i] || fd < 0)
		return 0;
	atomic_store(&f->direct_ok[i], 0);
	return 1;
}

int ftdirectio_all_direct(const struct ftdirectio_files *f)
{
	for (size_t i = 0; i < f->n; i++)
		if (f->fd_buf[i] >= 0 && !atomic_load(&f->direct_ok[i]))
			return 0;
	return 1;
}

void ftdirectio_release(struct ftdirectio_files *f)
{
	if (!f)
		return;
	for (size_t i = 0; f->fd_buf && f->fd_direct && i < f->n; i++) {
		if (f->fd_buf[i] >= 0)
			close(f->fd_buf[i]);
		if (f->fd_direct[i] >= 0)
			close(f->fd_direct[i]);
	}
	free(f->fd_direct);
	free(f->fd_buf);
	free((void *)f->direct_ok);
	*f = (struct ftdirectio_files){0};
}
