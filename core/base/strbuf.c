/* strbuf.c - a growable byte buffer (strbuf.h). */
#include "strbuf.h"

#include <stdarg.h>
#include <stdbool.h>
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

/* the length of the well-formed UTF-8 sequence of 2 to 4 bytes at s (n
 * left), or 0 */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	size_t k = s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 && s[0] < 0xe0 ? 2 : 0;
	if (k == 0 || k > n)
		return 0;
	for (size_t i = 1; i < k; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	/* overlong forms, surrogates, past U+10FFFF */
	if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0) || (s[0] == 0xf0 && s[1] < 0x90) ||
	    (s[0] == 0xf4 && s[1] >= 0x90))
		return 0;
	return k;
}

void sb_add_shown(struct strbuf *sb, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0;
	sb_grow(sb, n);
	sb->buf[sb->len] = '\0';
	while (i < n) {
		size_t start = i;
		while (i < n && u[i] >= 0x20 && u[i] < 0x7f)
			i++;
		sb_add(sb, s + start, i - start);
		if (i == n)
			break;
		if (u[i] == '\t') {
			sb_putc(sb, ' ');
			i++;
		} else if (u[i] < 0x80) {
			sb_printf(sb, "\\x%02x", u[i]);
			i++;
		} else {
			size_t k = utf8_len(u + i, n - i);
			if (k == 0)
				sb_printf(sb, "\\x%02x", u[i++]);
			else if (k == 2 && u[i] == 0xc2 && u[i + 1] < 0xa0)
				sb_printf(sb, "\\u%04x", u[i + 1]);
			else
				sb_add(sb, s + i, k);
			i += k;
		}
	}
}

void sb_add_shown_lines(struct strbuf *sb, const char *s, size_t n)
{
	size_t i = 0;
	while (i < n) {
		const char *nl = memchr(s + i, '\n', n - i);
		size_t j = nl ? (size_t)(nl - s) : n;
		sb_add_shown(sb, s + i, j - i);
		if (nl)
			sb_putc(sb, '\n');
		i = j + 1;
	}
}

char *shown_dup(const char *s)
{
	struct strbuf sb = STRBUF_INIT;
	sb_add_shown(&sb, s, strlen(s));
	return sb_detach(&sb);
}

void fprintf_shown(FILE *f, const char *fmt, ...)
{
	struct strbuf text = STRBUF_INIT, shown = STRBUF_INIT;
	va_list ap;
	va_start(ap, fmt);
	sb_vprintf(&text, fmt, ap);
	va_end(ap);
	bool nl = text.len && text.buf[text.len - 1] == '\n';
	sb_add_shown(&shown, sb_str(&text), text.len - nl);
	if (nl)
		sb_putc(&shown, '\n');
	fputs(sb_str(&shown), f);
	sb_release(&text);
	sb_release(&shown);
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

void sb_vprintf(struct strbuf *sb, const char *fmt, va_list ap)
{
	va_list again;
	va_copy(again, ap);
	char tmp[128];
	int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	if (n >= 0 && (size_t)n < sizeof(tmp)) {
		sb_add(sb, tmp, (size_t)n);
	} else if (n >= 0) {
		sb_grow(sb, (size_t)n);
		vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, again);
		sb->len += (size_t)n;
	}
	va_end(again);
}

void sb_printf(struct strbuf *sb, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	sb_vprintf(sb, fmt, ap);
	va_end(ap);
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
