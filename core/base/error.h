/* error.h - sources, locations, diagnostics.
 *
 * Library layers (tensor kernels, ops) report an error by calling
 * tj_error_set() and returning NULL / VAL_ERR; the layer that knows the
 * source location (the VM) picks the message up with tj_error_take() and
 * attaches file:line:col and the traceback.
 */
#ifndef TJ_ERROR_H
#define TJ_ERROR_H

#include <stdio.h>
#include <stddef.h>

/* A source file kept in memory for the whole run, so that any layer can
 * print a line of it. */
struct source {
	char *path;     /* as given on the command line */
	char *text;     /* NUL-terminated contents */
	size_t len;
	int nlines;
	size_t *line_start; /* byte offset of each line, 0-based index */
};

struct src_loc {
	int line; /* 1-based; 0 = unknown */
	int col;  /* 1-based, in bytes */
};

/* Reads path; on failure returns NULL and sets tj_error (message names the
 * path and the reason, e.g. "cannot read 'x.tj': No such file or directory"). */
struct source *source_load(const char *path);
struct source *source_from_string(const char *path, const char *text, size_t len);
void source_free(struct source *src);
/* The text of a 1-based line, without its newline; *len receives its length. */
const char *source_line(const struct source *src, int line, size_t *len);

/* Prints
 *   file:line:col: error: message
 *   <the source line verbatim>
 *   <spaces>^
 * (the last two lines only when the line is known). */
void diag_print(FILE *out, const struct source *src, struct src_loc loc, const char *kind,
		const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* The pending error message of the library layers (one per thread). */
void tj_error_set(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
const char *tj_error_peek(void);  /* NULL when none */
char *tj_error_take(void);        /* caller frees; clears it; NULL when none */
void tj_error_clear(void);

#endif
