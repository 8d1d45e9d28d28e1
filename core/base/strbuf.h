/* strbuf.h - a growable byte buffer (no fixed-size sprintf anywhere).
 *
 * The buffer is always NUL-terminated once anything was added; it grows
 * through xrealloc (util.h), so running out of memory aborts. */
#ifndef TJ_STRBUF_H
#define TJ_STRBUF_H

#include <stddef.h>

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
char *sb_detach(struct strbuf *sb);                /* caller frees */
void sb_reset(struct strbuf *sb);                  /* empty again, keeping its memory */
void sb_release(struct strbuf *sb);
/* the text, "" while nothing was added */
static inline const char *sb_str(const struct strbuf *sb)
{
	return sb->buf ? sb->buf : "";
}

#endif
