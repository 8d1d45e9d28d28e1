/* text.c - the strings of labels: escaping, source lines (viz_impl.h). */
#include "viz_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

void viz_label_text(struct strbuf *b, const char *s, size_t max)
{
	size_t chars = 0;
	for (const char *p = s; *p; p++) {
		bool lead = ((unsigned char)*p & 0xC0) != 0x80;
		if (lead && ++chars > max) {
			sb_puts(b, "\xe2\x80\xa6"); /* … */
			return;
		}
		if (*p == '\\')
			sb_add(b, "\\\\", 2);
		else if (*p == '\n' || *p == '\r')
			sb_add(b, " ", 1);
		else
			sb_add(b, p, 1);
	}
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
