/* util.c - the helpers of util.h that are not inline. */
#define _GNU_SOURCE /* vasprintf */
#include "util.h"

#include <time.h>

_Thread_local long util_alloc_countdown;
static _Thread_local bool fail_all; /* util_fail_alloc_from: the ones after fail too */
static _Thread_local bool failed;

bool util_alloc_fail_now(void)
{
	if (--util_alloc_countdown > 0)
		return false;
	failed = true;
	util_alloc_countdown = fail_all; /* 1: the next one fails too */
	return true;
}

void util_fail_alloc_after(long n)
{
	util_alloc_countdown = n > 0 ? n : 0;
	fail_all = failed = false;
}

void util_fail_alloc_from(long n)
{
	util_fail_alloc_after(n);
	fail_all = n > 0;
}

bool util_fail_alloc_pending(void)
{
	return util_alloc_countdown > 0 && !failed;
}

#ifdef TJIT_DEBUG
/* TJIT_FAIL_ALLOC=n in the environment of a debug build */
__attribute__((constructor)) static void util_fail_alloc_from_env(void)
{
	const char *s = getenv("TJIT_FAIL_ALLOC");
	if (s && *s)
		util_fail_alloc_after(strtol(s, NULL, 10));
}
#endif

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

bool util_in_names(const char *list, const char *name)
{
	size_t len = strlen(name);
	for (const char *p = list; *p;) {
		size_t w = strcspn(p, ", ");
		if (w == len && strncmp(p, name, len) == 0)
			return true;
		p += w;
		p += strspn(p, ", ");
	}
	return false;
}
