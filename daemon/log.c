#include "log.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

static int max_level = FTD_LOG_INFO;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

void ftd_log_set_level(int level)
{
	max_level = level;
}

void ftd_vlog(int prio, const char *fmt, va_list ap)
{
	if (prio > max_level)
		return;
	char msg[1024];
	vsnprintf(msg, sizeof msg, fmt, ap);
	size_t l = strlen(msg);
	while (l > 0 && msg[l - 1] == '\n')
		msg[--l] = '\0';
	pthread_mutex_lock(&log_lock);
	fprintf(stderr, "<%d>ftbenchd: %s\n", prio, msg);
	fflush(stderr);
	pthread_mutex_unlock(&log_lock);
}

void ftd_log(int prio, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	ftd_vlog(prio, fmt, ap);
	va_end(ap);
}
