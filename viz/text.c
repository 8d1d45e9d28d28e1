/* text.c - the strings of labels: a growable buffer, escaping, source
 * lines (viz_impl.h). */
#include "viz_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

void vb_add(struct vbuf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 64;
		while (cap < b->len + n + 1)
			cap *= 2;
		b->text = xrealloc(b->text, cap);
		b->cap = cap;
	}
	memcpy(b->text + b->len, s, n);
	b->len += n;
	b->text[b->len] = '\0';
}

void vb_puts(struct vbuf *b, const char *s)
{
	vb_add(b, s, strlen(s));
}

void vb_printf(struct vbuf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n <= 0)
		return;
	char *tmp = xmalloc((size_t)n + 1);
	va_start(ap, fmt);
	vsnprintf(tmp, (size_t)n + 1, fmt, ap);
	va_end(ap);
	vb_add(b, tmp, (size_t)n);
	free(tmp);
}

void vb_label_text(struct vbuf *b, const char *s, size_t max)
{
	size_t chars = 0;
	for (const char *p = s; *p; p++) {
		bool lead = ((unsigned char)*p & 0xC0) != 0x80;
		if (lead && ++chars > max) {
			vb_puts(b, "\xe2\x80\xa6"); /* … */
			return;
		}
		if (*p == '\\')
			vb_add(b, "\\\\", 2);
		else if (*p == '\n' || *p == '\r')
			vb_add(b, " ", 1);
		else
			vb_add(b, p, 1);
	}
}

const char *vb_str(const struct vbuf *b)
{
	return b->text ? b->text : "";
}

void vb_reset(struct vbuf *b)
{
	b->len = 0;
	if (b->text)
		b->text[0] = '\0';
}

void vb_release(struct vbuf *b)
{
	free(b->text);
	b->text = NULL;
	b->len = b->cap = 0;
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

void viz_place(struct vbuf *b, const char *file, int line, const char *program, const char *source_text)
{
	if (!file)
		return;
	vb_label_text(b, file, 200);
	vb_printf(b, ":%d", line);
	size_t len = 0;
	const char *text = program && strcmp(file, program) == 0 ? viz_source_line(source_text, line, &len) : NULL;
	if (text && len) {
		char *copy = xmalloc(len + 1);
		memcpy(copy, text, len);
		copy[len] = '\0';
		vb_puts(b, "  ");
		vb_label_text(b, copy, SOURCE_MAX);
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
