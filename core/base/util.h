/* util.h - small helpers shared by the core, db/, viz/, tui/ and the tools
 * (the base layer: nothing here knows the VM).
 *
 * xmalloc, xcalloc, xrealloc, xstrdup, xstrndup, xdup_or_empty and
 * xasprintf never fail: out of memory, they print "tjit: out of memory"
 * and abort (fine in tools; library code returns a status instead). A size
 * of 0 is taken as 1. grow_array and util_dup_or_empty are the fallible
 * ones. */
#ifndef TJ_UTIL_H
#define TJ_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline void util_oom(void)
{
	fputs("tjit: out of memory\n", stderr);
	abort();
}

static inline void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		util_oom();
	return p;
}

static inline void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		util_oom();
	return p;
}

static inline void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		util_oom();
	return p;
}

/* NULL for NULL */
static inline char *xstrdup(const char *s)
{
	if (!s)
		return NULL;
	size_t n = strlen(s) + 1;
	return memcpy(xmalloc(n), s, n);
}

/* the first n bytes of s (which has at least n), NUL-terminated */
static inline char *xstrndup(const char *s, size_t n)
{
	char *d = memcpy(xmalloc(n + 1), s, n);
	d[n] = '\0';
	return d;
}

/* A copy of s, or of "" when s is NULL; NULL when out of memory. */
static inline char *util_dup_or_empty(const char *s)
{
	return strdup(s ? s : "");
}

/* util_dup_or_empty that aborts when out of memory */
static inline char *xdup_or_empty(const char *s)
{
	return xstrdup(s ? s : "");
}

/* Makes *items (of *cap elements of `size` bytes) hold at least `need`:
 * the capacity doubles, from first_cap when it is 0. False (and *items
 * unchanged) when out of memory. */
static inline bool grow_array(void **items, int *cap, int need, size_t size, int first_cap)
{
	if (need <= *cap)
		return true;
	int ncap = *cap ? *cap * 2 : first_cap;
	while (ncap < need)
		ncap *= 2;
	void *p = realloc(*items, (size_t)ncap * size);
	if (!p)
		return false;
	*items = p;
	*cap = ncap;
	return true;
}

/* A formatted string, malloc'd. */
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *xvasprintf(const char *fmt, va_list ap);

/* Milliseconds on the monotonic clock: for durations only. */
double util_now_ms(void);

/* Flushes stdout; a write error is reported ("NAME: error writing to
 * stdout: ...") and turns status 0 into 1. Returns the status. */
int util_finish_stdout(const char *name, int status);

#endif
