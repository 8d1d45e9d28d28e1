/* view.h - the view logic of tjit-tui, apart from its drawing.
 *
 * A struct tui is a stack of views over one read-only connection
 * (db/query.h). Each view has one or two panes; a pane shows a window of
 * rows around its cursor, fetched page by page by key from the database
 * (or from a text already in memory: a graph listing, a source file, the
 * help), never a whole table. Keys go in as codes (ASCII, or the
 * TUI_KEY_* below, which tui/draw.c translates from curses), and each
 * returns a mask of what the loop must do. What the screen shows comes out
 * of tui_layout() as lines of text with attributes, one per screen row:
 * tui/draw.c paints them with curses, the tests read them as text.
 *
 * doc/tui.md describes the views, the keys and the paging.
 */
#ifndef TJ_TUI_VIEW_H
#define TJ_TUI_VIEW_H

#include <stdbool.h>
#include <stdint.h>

struct dbq;
struct tui;

/* keys: printable ASCII and control characters as themselves, others here */
enum {
	TUI_KEY_UP = 0x110000,  /* above every Unicode code point */
	TUI_KEY_DOWN,
	TUI_KEY_LEFT,
	TUI_KEY_RIGHT,
	TUI_KEY_HOME,
	TUI_KEY_END,
	TUI_KEY_PGUP,
	TUI_KEY_PGDN,
	TUI_KEY_BACKSPACE,
	TUI_KEY_RESIZE,
	TUI_KEY_ENTER = '\r',
	TUI_KEY_ESC = 27,
	TUI_KEY_TAB = '\t',
};
#define TUI_CTRL(c) ((c) & 0x1f)

/* what a key did, for the one loop that acts on it (as htop's Panel) */
enum {
	TUI_HANDLED = 1,  /* the key meant something */
	TUI_REDRAW = 2,   /* the screen changed */
	TUI_RESIZE = 4,   /* the terminal changed size: ask curses for it */
	TUI_QUIT = 8,
};

/* what a screen line is, which the drawing maps to colors or attributes */
enum tui_attr {
	TUI_A_NORMAL,
	TUI_A_TITLE,     /* the top line: where the user is */
	TUI_A_HEADER,    /* column names or a view's summary */
	TUI_A_SELECTED,  /* the cursor's row in the focused pane */
	TUI_A_CURSOR,    /* the cursor's row in the other pane */
	TUI_A_CURRENT,   /* a source line that the selection points at */
	TUI_A_SEPARATOR, /* between two panes */
	TUI_A_STATUS,    /* messages, the filter prompt */
	TUI_A_ERROR,     /* an error message on the status line */
	TUI_A_FOOTER,    /* the keys */
	TUI_A_COUNT
};

struct tui_line {
	const char *text;   /* UTF-8, maybe wider than the screen: the drawing clips it */
	enum tui_attr attr;
	int mark_len;       /* the first mark_len bytes are a margin of markers (B, R) */
};

/* Exports graph graph_id as format ("dot", "svg") to path: viz/viz.h's
 * viz_export_graph. 0, or -1 with *err. */
typedef int (*tui_export_fn)(struct dbq *q, int64_t graph_id, const char *format, const char *path, int max_nodes,
			     char **err);

struct tui_options {
	int page;            /* rows per query (default 100) */
	int window;          /* rows a pane keeps around its cursor at most (default 1000) */
	int scan;            /* rows a filter reads per key at most before it asks for n (default 5000) */
	int profile_max;     /* runs of up to this many compiles get recompiles grouped by guard
	                        (tools/lib/profile.c); bigger runs list their guard failures (default 20000) */
	tui_export_fn export_graph;  /* NULL: d reports that it is not available */
	tui_export_fn export_kernels; /* d in a kernel view: the graph with a cluster per inductor kernel
	                                 (viz_export_kernels); NULL: export_graph */
	const char *export_dir;      /* where d writes graph-ID.dot and .svg (default ".") */
};

/* Opens the runs view on q (which stays the caller's) at rows x cols.
 * NULL with *err when the first page cannot be read. */
struct tui *tui_new(struct dbq *q, const struct tui_options *o, int rows, int cols, char **err);
void tui_free(struct tui *t);

/* A key: a mask of TUI_HANDLED, TUI_REDRAW, TUI_RESIZE, TUI_QUIT. */
int tui_key(struct tui *t, int key);
/* The terminal's new size (after TUI_KEY_RESIZE). */
void tui_resize(struct tui *t, int rows, int cols);

/* The screen: exactly rows lines (*lines stays valid until the next call
 * or tui_free). */
int tui_layout(struct tui *t, const struct tui_line **lines);
/* The same screen as plain text, one line each, clipped to the columns
 * (malloc'd): what a test compares. */
char *tui_screen_text(struct tui *t);

/* ---- what the tests look at ---- */
const char *tui_view_name(const struct tui *t);   /* "runs", "run", "compiles", ... */
int tui_depth(const struct tui *t);               /* views on the stack: 1 at the runs */
const char *tui_selected(const struct tui *t);    /* the focused pane's row text, or NULL */
const char *tui_status(const struct tui *t);      /* the status line's message, "" if none */
const char *tui_filter(const struct tui *t);      /* the focused pane's filter, "" if none */
bool tui_prompting(const struct tui *t);          /* the / prompt is open */
int tui_focus(const struct tui *t);               /* the focused pane: 0, or 1 (the source of a graph) */
/* The row of the other pane that the selection points at (a graph
 * node's source line), or NULL. */
const char *tui_current(const struct tui *t);
/* Rows the focused pane holds in memory (its window), and whether rows
 * exist before and after them. */
int tui_window(const struct tui *t, bool *more_before, bool *more_after);

/* The help and the footer, generated from the key map. */
char *tui_help_text(void);
char *tui_footer_text(const struct tui *t);

#endif
