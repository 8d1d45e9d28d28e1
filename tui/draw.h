/* draw.h - the one file of tjit-tui that knows curses (ncursesw): it
 * paints the lines of tui_layout() (view.h), reads keys and turns them
 * into view.h's codes, and follows the terminal's size.
 */
#ifndef TJ_TUI_DRAW_H
#define TJ_TUI_DRAW_H

#include <stdbool.h>
#include <stdio.h>

#include "view.h"

struct draw;

/* Starts curses on the terminal of in and out (newterm: tests and the
 * benchmark pass /dev/null files and a TERM). color false: attributes
 * only (reverse, bold, underline), never a color pair. NULL with *err. */
struct draw *draw_open(const char *term, FILE *in, FILE *out, bool color, char **err);
/* Ends curses and gives the terminal back as it was. */
void draw_close(struct draw *d);
void draw_size(const struct draw *d, int *rows, int *cols);
/* Paints a screen: n lines from the top. */
void draw_screen(struct draw *d, const struct tui_line *lines, int n);
/* The next key as a view.h code; -1 at the end of input. */
int draw_key(struct draw *d);
/* Paints, reads a key, hands it to t, until a key quits. 0, or -1 when
 * the input ended. */
int draw_loop(struct draw *d, struct tui *t);

#endif
