/* log: the daemon's one logger (stderr, one line per message, with an sd-daemon priority prefix
 * "<N>" so journald keeps the level). Everything the daemon says goes through here, including
 * libmicrohttpd's own messages. */
#ifndef FTD_LOG_H
#define FTD_LOG_H
#include <stdarg.h>

enum { FTD_LOG_ERR = 3, FTD_LOG_WARNING = 4, FTD_LOG_NOTICE = 5, FTD_LOG_INFO = 6, FTD_LOG_DEBUG = 7 };

void ftd_log_set_level(int level);
void ftd_log(int prio, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ftd_vlog(int prio, const char *fmt, va_list ap);
#endif
