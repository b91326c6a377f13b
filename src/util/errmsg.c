/* errmsg: see errmsg.h. */
#include <stdarg.h>
#include <stdio.h>

#include "util/errmsg.h"

int fterr_set(char *err, size_t n, int rc, const char *fmt, ...)
{
	if (err && n) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, n, fmt, ap);
		va_end(ap);
	}
	return rc;
}
