/* util.c - the helpers of util.h that are not inline. */
#define _GNU_SOURCE /* vasprintf */
#include "util.h"

#include <time.h>

char *xvasprintf(const char *fmt, va_list ap)
{
	char *s = NULL;
	if (vasprintf(&s, fmt, ap) < 0)
		util_oom();
	return s;
}

char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = xvasprintf(fmt, ap);
	va_end(ap);
	return s;
}

double util_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int util_finish_stdout(const char *name, int status)
{
	if (fflush(stdout) != 0 || ferror(stdout)) {
		char what[128];
		snprintf(what, sizeof what, "%s: error writing to stdout", name);
		perror(what);
		return status ? status : 1;
	}
	return status;
}
