/* text.c - the strings of labels: escaping, source lines (viz_impl.h). */
#include "viz_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

void viz_label_text(struct strbuf *b, const char *raw, size_t max)
{
	/* DOT goes to a terminal too (stdout): control characters as \x1b */
	struct strbuf shown = STRBUF_INIT;
	for (const char *p = raw; *p; p++) {
		size_t n = strcspn(p, "\n\r");
		sb_add_shown(&shown, p, n);
		p += n;
		if (!*p)
			break;
		sb_putc(&shown, ' ');
	}
	size_t chars = 0;
	for (const char *p = sb_str(&shown); *p; p++) {
		bool lead = ((unsigned char)*p & 0xC0) != 0x80;
		if (lead && ++chars > max) {
			sb_puts(b, "\xe2\x80\xa6"); /* … */
			break;
		}
		if (*p == '\\')
			sb_add(b, "\\\\", 2);
		else
			sb_add(b, p, 1);
	}
	sb_release(&shown);
}

const char *viz_source_line(const char *text, int line, size_t *len)
{
	if (!text || line < 1)
		return NULL;
	const char *p = text;
	for (int i = 1; i < line; i++) {
		p = strchr(p, '\n');
		if (!p)
			return NULL;
		p++;
	}
	const char *end = strchr(p, '\n');
	if (!end)
		end = p + strlen(p);
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	while (end > p && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
		end--;
	*len = (size_t)(end - p);
	return p;
}

/* how much of a source line a label shows */
#define SOURCE_MAX 60

void viz_place(struct strbuf *b, const char *file, int line, const char *program, const char *source_text)
{
	if (!file)
		return;
	viz_label_text(b, file, 200);
	sb_printf(b, ":%d", line);
	size_t len = 0;
	const char *text = program && strcmp(file, program) == 0 ? viz_source_line(source_text, line, &len) : NULL;
	if (text && len) {
		char *copy = xstrndup(text, len);
		sb_puts(b, "  ");
		viz_label_text(b, copy, SOURCE_MAX);
		free(copy);
	}
}

void viz_set(void *obj, const char *attr, const char *value)
{
	agsafeset(obj, (char *)attr, (char *)value, "");
}

char *viz_err(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = xvasprintf(fmt, ap);
	va_end(ap);
	return s;
}
