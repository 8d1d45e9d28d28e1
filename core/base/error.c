/* error.c - sources kept in memory, diagnostics with a caret, and the
 * pending error message of the library layers. */
#define _GNU_SOURCE
#include "error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "strbuf.h"

/* ---- sources ---- */

/* Records where each line starts. A final newline ends the last line; it
 * does not begin an empty one (as Python's splitlines). */
static int build_line_table(struct source *src)
{
	size_t n = 0;
	for (size_t i = 0; i < src->len; i++)
		if (src->text[i] == '\n')
			n++;
	if (src->len > 0 && src->text[src->len - 1] != '\n')
		n++;
	src->line_start = malloc((n ? n : 1) * sizeof *src->line_start);
	if (!src->line_start)
		return -1;
	int line = 0;
	if (src->len > 0)
		src->line_start[line++] = 0;
	for (size_t i = 0; i + 1 < src->len; i++)
		if (src->text[i] == '\n')
			src->line_start[line++] = i + 1;
	src->nlines = (int)n;
	return 0;
}

/* Takes ownership of text (len bytes, NUL-terminated). */
static struct source *source_make(const char *path, char *text, size_t len)
{
	struct source *src = calloc(1, sizeof *src);
	if (!src)
		goto fail;
	src->path = strdup(path);
	src->text = text;
	src->len = len;
	if (!src->path || build_line_table(src) < 0)
		goto fail;
	return src;
fail:
	if (src)
		free(src->path);
	free(src);
	free(text);
	tj_error_set("out of memory");
	return NULL;
}

struct source *source_load(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		tj_error_set("cannot read '%s': %s", path, strerror(errno));
		return NULL;
	}
	/* read in chunks: the file may be a pipe, whose size is unknown */
	size_t len = 0, cap = 4096;
	char *text = malloc(cap);
	for (;;) {
		if (!text) {
			fclose(f);
			tj_error_set("cannot read '%s': %s", path, strerror(ENOMEM));
			return NULL;
		}
		len += fread(text + len, 1, cap - len - 1, f);
		if (len < cap - 1)
			break;
		cap *= 2;
		char *bigger = realloc(text, cap);
		if (!bigger)
			free(text);
		text = bigger;
	}
	if (ferror(f)) {
		int err = errno ? errno : EIO;
		fclose(f);
		free(text);
		tj_error_set("cannot read '%s': %s", path, strerror(err));
		return NULL;
	}
	fclose(f);
	text[len] = '\0';
	/* a UTF-8 byte order mark begins the file, not its text (Python
	 * skips it too): columns and shown lines start after it */
	if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0) {
		len -= 3;
		memmove(text, text + 3, len + 1);
	}
	return source_make(path, text, len);
}

struct source *source_from_string(const char *path, const char *text, size_t len)
{
	char *copy = malloc(len + 1);
	if (!copy) {
		tj_error_set("out of memory");
		return NULL;
	}
	memcpy(copy, text, len);
	copy[len] = '\0';
	return source_make(path, copy, len);
}

void source_free(struct source *src)
{
	if (!src)
		return;
	free(src->path);
	free(src->text);
	free(src->line_start);
	free(src);
}

const char *source_line(const struct source *src, int line, size_t *len)
{
	if (!src || line < 1 || line > src->nlines) {
		*len = 0;
		return NULL;
	}
	const char *start = src->text + src->line_start[line - 1];
	const char *end = src->text + src->len;
	const char *nl = memchr(start, '\n', (size_t)(end - start));
	if (nl)
		end = nl;
	if (end > start && end[-1] == '\r')
		end--;
	*len = (size_t)(end - start);
	return start;
}

/* ---- diagnostics ---- */

/* The caret line: one blank per character before col, so that the caret
 * stays under its column with tabs (copied as tabs) and multi-byte UTF-8
 * characters (one blank each) in the line. */
static void print_caret(FILE *out, const char *line, size_t len, int col)
{
	for (int i = 0; i + 1 < col; i++) {
		if ((size_t)i < len && line[i] == '\t')
			fputc('\t', out);
		else if ((size_t)i >= len || ((unsigned char)line[i] & 0xc0) != 0x80)
			fputc(' ', out);
	}
	fputs("^\n", out);
}

/* line[0..len) as sb_add_shown shows it, but its tabs kept: the caret
 * line copies them */
static void add_shown_line(struct strbuf *sb, const char *line, size_t len)
{
	size_t i = 0;
	while (i < len) {
		size_t j = i;
		while (j < len && line[j] != '\t')
			j++;
		sb_add_shown(sb, line + i, j - i);
		if (j < len) {
			sb_putc(sb, '\t');
			j++;
		}
		i = j;
	}
}

void diag_print(FILE *out, const struct source *src, struct src_loc loc, const char *kind,
		const char *fmt, ...)
{
	/* the path, the message (it may quote the program) and the line as a
	 * terminal may show them, and the caret under the line */
	struct strbuf shown = STRBUF_INIT;
	if (src && src->path) {
		sb_add_shown(&shown, src->path, strlen(src->path));
		if (loc.line > 0)
			sb_printf(&shown, ":%d", loc.line);
		if (loc.line > 0 && loc.col > 0)
			sb_printf(&shown, ":%d", loc.col);
		sb_puts(&shown, ": ");
	}
	sb_printf(&shown, "%s: ", kind);
	struct strbuf msg = STRBUF_INIT;
	va_list ap;
	va_start(ap, fmt);
	sb_vprintf(&msg, fmt, ap);
	va_end(ap);
	sb_add_shown_lines(&shown, sb_str(&msg), msg.len);
	sb_release(&msg);
	fprintf(out, "%s\n", sb_str(&shown));

	size_t len;
	const char *line = source_line(src, loc.line, &len);
	if (!line) {
		sb_release(&shown);
		return;
	}
	sb_reset(&shown);
	add_shown_line(&shown, line, len);
	fwrite(sb_str(&shown), 1, shown.len, out);
	fputc('\n', out);
	if (loc.col > 0) {
		size_t before = (size_t)loc.col - 1 < len ? (size_t)loc.col - 1 : len;
		sb_reset(&shown);
		add_shown_line(&shown, line, before);
		print_caret(out, sb_str(&shown), shown.len, (int)(shown.len + ((size_t)loc.col - before)));
	}
	sb_release(&shown);
}

/* ---- the pending error ---- */

static _Thread_local char *pending;
static _Thread_local bool pending_oom; /* the message itself could not be allocated */

void tj_error_set(const char *fmt, ...)
{
	char *msg;
	va_list ap;
	va_start(ap, fmt);
	int n = vasprintf(&msg, fmt, ap);
	va_end(ap);
	free(pending);
	pending = n < 0 ? NULL : msg;
	pending_oom = n < 0;
}

const char *tj_error_peek(void)
{
	return pending_oom ? "out of memory" : pending;
}

char *tj_error_take(void)
{
	char *msg = pending_oom ? strdup("out of memory") : pending;
	pending = NULL;
	pending_oom = false;
	return msg;
}

void tj_error_clear(void)
{
	free(pending);
	pending = NULL;
	pending_oom = false;
}
