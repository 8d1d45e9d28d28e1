/* strbuf.h - a growable byte buffer (no fixed-size sprintf anywhere).
 *
 * The buffer is always NUL-terminated once anything was added; it grows
 * through xrealloc (util.h), so running out of memory aborts. */
#ifndef TJ_STRBUF_H
#define TJ_STRBUF_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

struct strbuf {
	char *buf;
	size_t len, cap;
};
#define STRBUF_INIT {NULL, 0, 0}
void sb_grow(struct strbuf *sb, size_t extra);
void sb_add(struct strbuf *sb, const char *s, size_t n);
void sb_puts(struct strbuf *sb, const char *s);
void sb_putc(struct strbuf *sb, char c);
void sb_printf(struct strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sb_vprintf(struct strbuf *sb, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
/* s[0..n) as a terminal may show it: text from a program (a source line,
 * a string, a file or function name) must never move the cursor or start
 * an escape sequence. A tab becomes one space (it would break columns);
 * another control character (C0, DEL) or a byte that is not UTF-8 becomes
 * \xNN (ESC: \x1b), a C1 control (U+0080..U+009F) \u00NN; the rest is
 * kept as is. */
void sb_add_shown(struct strbuf *sb, const char *s, size_t n);
/* sb_add_shown of each line of s[0..n), its line ends kept */
void sb_add_shown_lines(struct strbuf *sb, const char *s, size_t n);
/* sb_add_shown of the string s into a new one (caller frees) */
char *shown_dup(const char *s);
/* fprintf(f, fmt, ...) of a message line that names a path, a name or an
 * argument: the whole text as sb_add_shown shows it, but a "\n" at its
 * end (a newline inside, as any control character, is shown as \x0a) */
void fprintf_shown(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
char *sb_detach(struct strbuf *sb);                /* caller frees */
void sb_reset(struct strbuf *sb);                  /* empty again, keeping its memory */
void sb_release(struct strbuf *sb);
/* the text, "" while nothing was added */
static inline const char *sb_str(const struct strbuf *sb)
{
	return sb->buf ? sb->buf : "";
}

#endif
