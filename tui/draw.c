/* draw.c - curses for tjit-tui (draw.h). Colors come from init_pair, one
 * pair per kind of line (view.h's enum tui_attr); without color (NO_COLOR,
 * -C, or a terminal without colors) the same kinds are told apart by
 * reverse, bold and underline. */
#define _XOPEN_SOURCE_EXTENDED 1
#include "draw.h"

#include <curses.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "util.h"

struct draw {
	SCREEN *screen;
	attr_t attr[TUI_A_COUNT];
	attr_t mark;
};

static void set_attrs(struct draw *d, bool color)
{
	static const struct {
		enum tui_attr a;
		attr_t mono;
		short fg, bg;
		attr_t extra;
	} kinds[] = {
		{TUI_A_NORMAL, A_NORMAL, -1, -1, A_NORMAL},
		{TUI_A_TITLE, A_REVERSE | A_BOLD, COLOR_WHITE, COLOR_BLUE, A_BOLD},
		{TUI_A_HEADER, A_BOLD, COLOR_CYAN, -1, A_BOLD},
		{TUI_A_SELECTED, A_REVERSE, COLOR_BLACK, COLOR_CYAN, A_NORMAL},
		{TUI_A_CURSOR, A_UNDERLINE, COLOR_CYAN, -1, A_UNDERLINE},
		{TUI_A_CURRENT, A_BOLD | A_UNDERLINE, COLOR_BLACK, COLOR_YELLOW, A_NORMAL},
		{TUI_A_SEPARATOR, A_REVERSE, COLOR_WHITE, COLOR_BLUE, A_NORMAL},
		{TUI_A_STATUS, A_NORMAL, COLOR_YELLOW, -1, A_NORMAL},
		{TUI_A_ERROR, A_BOLD, COLOR_RED, -1, A_BOLD},
		{TUI_A_FOOTER, A_REVERSE, COLOR_BLACK, COLOR_WHITE, A_NORMAL},
	};
	bool colors = color && has_colors() && start_color() == OK;
	if (colors)
		use_default_colors();
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
		d->attr[kinds[i].a] = kinds[i].mono;
		if (colors && kinds[i].a != TUI_A_NORMAL) {
			short pair = (short)(i + 1);
			init_pair(pair, kinds[i].fg, kinds[i].bg);
			d->attr[kinds[i].a] = COLOR_PAIR(pair) | kinds[i].extra;
		}
	}
	d->mark = A_BOLD;
	if (colors) {
		init_pair(20, COLOR_RED, -1);
		d->mark = COLOR_PAIR(20) | A_BOLD;
	}
}

struct draw *draw_open(const char *term, FILE *in, FILE *out, bool color, char **err)
{
	struct draw *d = xcalloc(1, sizeof *d);
	d->screen = newterm(term, out, in);
	if (!d->screen) {
		*err = xstrdup("cannot start curses on this terminal (is TERM set?)");
		free(d);
		return NULL;
	}
	set_term(d->screen);
	cbreak();
	noecho();
	nonl();
	keypad(stdscr, TRUE);
	curs_set(0);
	set_escdelay(25);
	set_attrs(d, color);
	return d;
}

void draw_close(struct draw *d)
{
	if (!d)
		return;
	set_term(d->screen);
	endwin();
	delscreen(d->screen);
	free(d);
}

void draw_size(const struct draw *d, int *rows, int *cols)
{
	(void)d;
	getmaxyx(stdscr, *rows, *cols);
}

/* text from column 0 of row y, clipped to the screen, the rest of the row
 * in the line's attribute; the first mark_len bytes in the mark color */
static void draw_line(struct draw *d, int y, const struct tui_line *l, int cols)
{
	attr_t base = d->attr[l->attr];
	wmove(stdscr, y, 0);
	mbstate_t st;
	memset(&st, 0, sizeof st);
	const char *s = l->text;
	size_t left = strlen(s);
	int x = 0;
	while (left > 0 && x < cols) {
		wchar_t wc;
		size_t k = mbrtowc(&wc, s, left, &st);
		if (k == (size_t)-1 || k == (size_t)-2) {
			wc = L'?';
			k = 1;
			memset(&st, 0, sizeof st);
		} else if (k == 0) {
			break;
		}
		int w = wcwidth(wc);
		if (w < 0) {
			wc = L'?';
			w = 1;
		}
		if (x + w > cols)
			break;
		bool mark = (s - l->text) < l->mark_len && wc != L' ';
		wattrset(stdscr, mark && l->attr == TUI_A_NORMAL ? d->mark : base);
		cchar_t cc;
		wchar_t str[2] = {wc, 0};
		setcchar(&cc, str, A_NORMAL, 0, NULL);
		if (w > 0)
			wadd_wch(stdscr, &cc);
		x += w;
		s += k;
		left -= k;
	}
	wattrset(stdscr, base);
	for (; x < cols; x++)
		waddch(stdscr, ' ');
	wattrset(stdscr, A_NORMAL);
}

void draw_screen(struct draw *d, const struct tui_line *lines, int n)
{
	int rows, cols;
	getmaxyx(stdscr, rows, cols);
	for (int y = 0; y < rows; y++) {
		if (y < n)
			draw_line(d, y, &lines[y], cols);
		else {
			wmove(stdscr, y, 0);
			wclrtoeol(stdscr);
		}
	}
	wnoutrefresh(stdscr);
	doupdate();
}

int draw_key(struct draw *d)
{
	(void)d;
	static const struct {
		int curses, key;
	} keys[] = {
		{KEY_UP, TUI_KEY_UP},       {KEY_DOWN, TUI_KEY_DOWN},   {KEY_LEFT, TUI_KEY_LEFT},
		{KEY_RIGHT, TUI_KEY_RIGHT}, {KEY_HOME, TUI_KEY_HOME},   {KEY_END, TUI_KEY_END},
		{KEY_PPAGE, TUI_KEY_PGUP},  {KEY_NPAGE, TUI_KEY_PGDN},  {KEY_BACKSPACE, TUI_KEY_BACKSPACE},
		{KEY_ENTER, TUI_KEY_ENTER}, {KEY_RESIZE, TUI_KEY_RESIZE}, {KEY_DC, TUI_KEY_BACKSPACE},
	};
	for (;;) {
		wint_t wc;
		int rc = wget_wch(stdscr, &wc);
		if (rc == ERR)
			return -1;
		if (rc == KEY_CODE_YES) {
			for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
				if (keys[i].curses == (int)wc)
					return keys[i].key;
			continue; /* a key without a meaning here */
		}
		return (int)wc;
	}
}

int draw_loop(struct draw *d, struct tui *t)
{
	int rows, cols;
	draw_size(d, &rows, &cols);
	tui_resize(t, rows, cols);
	for (;;) {
		const struct tui_line *lines;
		int n = tui_layout(t, &lines);
		draw_screen(d, lines, n);
		int key = draw_key(d);
		if (key < 0)
			return -1;
		int m = tui_key(t, key);
		if (m & TUI_RESIZE) {
			draw_size(d, &rows, &cols);
			tui_resize(t, rows, cols);
		}
		if (m & TUI_QUIT)
			return 0;
	}
}
