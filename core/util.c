/* util.c - the helpers of util.h that are not inline. */
#include "util.h"

#include <time.h>

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
