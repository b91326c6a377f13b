/* fsutil: files written atomically, directories made, files read whole.
 * All functions return 0 or a negative errno; none logs. */
#ifndef FT_UTIL_FSUTIL_H
#define FT_UTIL_FSUTIL_H
#include <stddef.h>
#include <sys/types.h>

/* Write data to path atomically: a temp file in the same directory (path.tmp.XXXXXX, locked with
 * flock while it is written), fsync, rename over path, fsync of the directory. On error the temp
 * file is removed and path is untouched. */
int ftfs_write_atomic(const char *path, const void *data, size_t len, mode_t mode);

/* Remove the temp files an interrupted ftfs_write_atomic left in dir ("NAME.tmp.XXXXXX", regular,
 * not locked by a writer that is still at work; links are not followed). Returns the number
 * removed or -errno. */
int ftfs_sweep_temps(const char *dir);

/* mkdir -p; existing directories are fine. */
int ftfs_mkdir_p(const char *path, mode_t mode);

/* The first line of a small file (sysfs, procfs) into buf without its newline: 0, -errno, or
 * -EIO when the file is empty. */
int ftfs_read_line(const char *path, char *buf, size_t n);

/* Read a whole file into a new NUL-terminated buffer (caller frees *out).
 * -EFBIG when the file is larger than max bytes. */
int ftfs_read_file(const char *path, size_t max, char **out, size_t *len);

/* ftfs_read_file for files a daemon finds in a directory others may write: opened without
 * blocking (a FIFO would wait for a writer for ever) and refused unless a regular file
 * (-EINVAL), of at most max bytes (-EFBIG, from its size before anything is read). */
int ftfs_read_regular(const char *path, size_t max, char **out, size_t *len);

/* Remove path and, when it is a directory, everything below it (symbolic links are removed, never
 * followed; other file systems are not entered). 0 (also when path does not exist) or -errno of
 * the first failure. */
int ftfs_remove_tree(const char *path);

/* Write all of buf to fd, retrying on EINTR and short writes. */
int ftfs_write_all(int fd, const void *buf, size_t len);

/* Read exactly n bytes at offset off (retrying on EINTR and short reads): 0, -EIO when the file
 * ends first, or -errno. */
int ftfs_pread_full(int fd, void *buf, size_t n, off_t off);

/* Directory part of path copied into dir (size n); "." when path has no slash. */
void ftfs_dirname(const char *path, char *dir, size_t n);
#endif
