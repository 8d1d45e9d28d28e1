/* util.h - small helpers shared by the core, db/, viz/, tui/ and the tools
 * (the base layer: nothing here knows the VM).
 *
 * xmalloc, xcalloc, xrealloc, xstrdup, xstrndup, xdup_or_empty and
 * xasprintf never fail: out of memory, they print "tjit: out of memory"
 * and abort (fine in tools; library code returns a status instead). A size
 * of 0 is taken as 1. grow_array and util_dup_or_empty are fallible, and
 * so are util_malloc, util_calloc, util_realloc and util_strdup: NULL when
 * out of memory, for library code that returns a status or aborts a trace.
 *
 * Fault injection (Lua's ltests.h): the fallible helpers above that say
 * "counted", and arena_alloc through them, count their calls; after
 * util_fail_alloc_after(n) the nth counted call from then on (on the
 * calling thread) fails, once (util_fail_alloc_from(n): and every one
 * after it, as when memory runs out for good). A test sets it; a
 * -DTJIT_DEBUG build also reads TJIT_FAIL_ALLOC=n (for the main thread). */
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

/* 0: no failure pending; else counted allocations left until the one
 * that fails (util.c). The calling thread's own: a test arms it on its
 * thread, and the pool's threads never count, so which allocation fails
 * does not depend on how the work was scheduled */
extern _Thread_local long util_alloc_countdown;
bool util_alloc_fail_now(void);

/* true when this counted allocation is the one that must fail */
static inline bool util_alloc_injected(void)
{
	return __builtin_expect(util_alloc_countdown != 0, 0) && util_alloc_fail_now();
}

/* the nth counted allocation from now fails (n <= 0: none) */
void util_fail_alloc_after(long n);
/* the nth counted allocation from now and every one after it fail, until
 * the next util_fail_alloc_after or util_fail_alloc_from (n <= 0: none) */
void util_fail_alloc_from(long n);
/* true while the failure set by util_fail_alloc_after (or _from) has not
 * happened yet */
bool util_fail_alloc_pending(void);

/* malloc, counted; NULL when out of memory. A size of 0 is taken as 1. */
static inline void *util_malloc(size_t n)
{
	return util_alloc_injected() ? NULL : malloc(n ? n : 1);
}

/* calloc, counted; NULL when out of memory */
static inline void *util_calloc(size_t n, size_t size)
{
	return util_alloc_injected() ? NULL : calloc(n ? n : 1, size ? size : 1);
}

/* realloc, counted; NULL (and p untouched) when out of memory */
static inline void *util_realloc(void *p, size_t n)
{
	return util_alloc_injected() ? NULL : realloc(p, n ? n : 1);
}

/* strdup, counted; NULL when out of memory or when s is NULL */
static inline char *util_strdup(const char *s)
{
	if (!s)
		return NULL;
	size_t n = strlen(s) + 1;
	char *d = util_malloc(n);
	return d ? memcpy(d, s, n) : NULL;
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

/* whether name is one of list's names, separated by commas and spaces
 * ("mul, add, tanh": a kernel's fused nodes) */
bool util_in_names(const char *list, const char *name);

/* Flushes stdout; a write error is reported ("NAME: error writing to
 * stdout: ...") and turns status 0 into 1. Returns the status. */
int util_finish_stdout(const char *name, int status);

#endif
