/* strbuf.c - a growable byte buffer (strbuf.h). */
#include "strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

void sb_grow(struct strbuf *sb, size_t extra)
{
	if (sb->len + extra + 1 <= sb->cap)
		return;
	size_t ncap = sb->cap ? sb->cap * 2 : 64;
	while (ncap < sb->len + extra + 1)
		ncap *= 2;
	sb->buf = xrealloc(sb->buf, ncap);
	sb->cap = ncap;
}

void sb_add(struct strbuf *sb, const char *s, size_t n)
{
	sb_grow(sb, n);
	if (n)
		memcpy(sb->buf + sb->len, s, n);
	sb->len += n;
	sb->buf[sb->len] = '\0';
}

void sb_puts(struct strbuf *sb, const char *s)
{
	sb_add(sb, s, strlen(s));
}

void sb_putc(struct strbuf *sb, char c)
{
	sb_grow(sb, 1);
	sb->buf[sb->len++] = c;
	sb->buf[sb->len] = '\0';
}

void sb_printf(struct strbuf *sb, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char tmp[128];
	int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n < sizeof(tmp)) {
		sb_add(sb, tmp, (size_t)n);
		return;
	}
	sb_grow(sb, (size_t)n);
	va_start(ap, fmt);
	vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	sb->len += (size_t)n;
}

char *sb_detach(struct strbuf *sb)
{
	char *s = sb->buf ? sb->buf : strdup("");
	sb->buf = NULL;
	sb->len = sb->cap = 0;
	return s;
}

void sb_reset(struct strbuf *sb)
{
	sb->len = 0;
	if (sb->buf)
		sb->buf[0] = '\0';
}

void sb_release(struct strbuf *sb)
{
	free(sb->buf);
	sb->buf = NULL;
	sb->len = sb->cap = 0;
}
