/* directio: a set of files each opened twice, with O_DIRECT (where the file system allows it)
 * and through the page cache, for the parallel readers of moe/loader.c and moe/ftw.c.
 * Reads go direct while the file's direct_ok holds; the first -EINVAL from a direct read
 * (alignment, or a file system without O_DIRECT) turns that file over to the page cache for
 * good. ftdirectio_fd / ftdirectio_retry are safe from several threads; the rest are not.
 * Test builds only (compiled with FT_TEST_HOOKS; absent from the product): FTLOAD_TEST_EINVAL=1
 * in the environment makes every direct read "fail" with EINVAL. */
#ifndef FT_MOE_DIRECTIO_H
#define FT_MOE_DIRECTIO_H
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* What O_DIRECT reads are aligned to (offsets, lengths, buffers). */
#define FTDIRECTIO_ALIGN 4096u

struct ftdirectio_files {
	size_t n;
	int *fd_direct, *fd_buf; /* -1 when not open */
	atomic_int *direct_ok;
	int fake_einval; /* FT_TEST_HOOKS builds: FTLOAD_TEST_EINVAL=1 */
};

/* n files, none open. 0 or -ENOMEM (f then still needs ftdirectio_release). */
int ftdirectio_init(struct ftdirectio_files *f, size_t n);
/* Open file i (a no-op when it is open already): 0, or -errno of the page-cache open. */
int ftdirectio_open(struct ftdirectio_files *f, size_t i, const char *path);
/* The descriptor to read file i with now: the O_DIRECT one while it works, else the other. */
int ftdirectio_fd(struct ftdirectio_files *f, size_t i);
/* After a read of file i through fd returned rc: 1 when it was a direct read failing with
 * -EINVAL (the file now goes through the page cache: read again with ftdirectio_fd), else 0. */
int ftdirectio_retry(struct ftdirectio_files *f, size_t i, int fd, int rc);
/* 1 when every file opened was read with O_DIRECT only. */
int ftdirectio_all_direct(const struct ftdirectio_files *f);
/* Read up to len bytes at off into buf through fd (either of a file's two), retrying EINTR;
 * *got gets how many. Short only at EOF: a read that ends off FTDIRECTIO_ALIGN (O_DIRECT stops
 * there only at the end of the file) or returns 0 ends it. 0, or -errno of the failed read. */
int ftdirectio_pread(int fd, uint8_t *buf, uint64_t len, uint64_t off, uint64_t *got);
/* Close what is open and free; a zeroed or half-built set is fine. */
void ftdirectio_release(struct ftdirectio_files *f);
#endif
