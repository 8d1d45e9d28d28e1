/* view.c - the view logic of tjit-tui (view.h): the view stack, the
 * panes and their windows of rows, the key map, what each row says.
 *
 * A pane reads its rows through one fetch function: "up to limit rows
 * next to this row, in this direction" (the first or the last when there
 * is no row yet). Database lists page through db/query.h by key; a text
 * already in memory (a graph listing, a source file, the help, a short
 * menu) is read the same way by index. On top of that one window keeps
 * at most options.window rows around the cursor, reads more when the
 * cursor nears an edge, drops rows far from it, and filters: a filter
 * keeps the rows whose text contains it (ignoring ASCII case), reading at
 * most options.scan rows for one key, so that no key ever walks a whole
 * table; n goes on from there.
 */
#define _GNU_SOURCE
#include "view.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "profile.h"
#include "query.h"
#include "strbuf.h"
#include "util.h"

#define MAX_DEPTH 32

/* ---- strings ---- */

/* "12.50 ms", "1.20 s" */
static void fmt_ms(char *buf, size_t n, double ms)
{
	if (ms >= 1000)
		snprintf(buf, n, "%.2f s", ms / 1000);
	else
		snprintf(buf, n, "%.2f ms", ms);
}

static void fmt_time(char *buf, size_t n, double t, const char *fmt)
{
	time_t s = (time_t)t;
	struct tm tm;
	if (t <= 0 || !localtime_r(&s, &tm) || !strftime(buf, n, fmt, &tm))
		snprintf(buf, n, "-");
}

/* the tail of a long path: ".../dir/prog.tj" in w bytes */
static char *tail(const char *s, int w)
{
	int len = (int)strlen(s);
	if (len <= w || w < 4)
		return xstrdup(s);
	return xasprintf("...%s", s + len - (w - 3));
}

static const char *plural(int64_t n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}

/* a and b name the same file: equal, or one is the other's tail after a '/' */
static bool same_file(const char *a, const char *b)
{
	if (!a || !b)
		return false;
	if (strcmp(a, b) == 0)
		return true;
	size_t la = strlen(a), lb = strlen(b);
	if (la > lb)
		return a[la - lb - 1] == '/' && strcmp(a + la - lb, b) == 0;
	if (lb > la)
		return b[lb - la - 1] == '/' && strcmp(b + lb - la, a) == 0;
	return false;
}

/* ---- rows ---- */

/* what Enter on a row opens */
enum target {
	T_NONE,
	T_RUN,        /* ref: run id */
	T_COMPILES,   /* of the run, or of frame ref */
	T_FRAMES,
	T_BREAKS,
	T_RECOMPILES,
	T_FAILURES,   /* of the run, or of compile ref; s1: a filter to start with */
	T_COMPILE,    /* ref: compile id, s1: its label */
	T_GRAPH,      /* ref: graph id */
	T_GUARDS,     /* s1: the compile's label */
	T_SOURCE,     /* line, s2: the file */
	T_KERNEL,     /* ref: the graph id, kernel: its launch order there */
	T_SESSIONS,   /* tjit-minify's sessions: of run ref, or all (ref 0) */
	T_SESSION,    /* ref: a minifier session's id */
};

struct row {
	char *text;
	int64_t id;          /* the row's key in its list (an index in a text) */
	int64_t ref;         /* what it points at: see enum target */
	char *s1, *s2;       /* a break place's code and file; a label; a filter */
	int line;            /* a source line; 0: none */
	enum target target;
	int kernel;          /* T_KERNEL: the kernel's idx in graph ref */
	int mark_len;        /* a margin of markers at the start of text */
	int text_at;         /* a filter matches the text from here on */
};

static void row_release(struct row *r)
{
	free(r->text);
	free(r->s1);
	free(r->s2);
	memset(r, 0, sizeof *r);
}

static void row_copy(struct row *dst, const struct row *src)
{
	*dst = *src;
	dst->text = src->text ? xstrdup(src->text) : NULL;
	dst->s1 = src->s1 ? xstrdup(src->s1) : NULL;
	dst->s2 = src->s2 ? xstrdup(src->s2) : NULL;
}

struct rows {
	struct row *r;
	int n, cap;
};

static struct row *rows_add(struct rows *rs)
{
	if (!grow_array((void **)&rs->r, &rs->cap, rs->n + 1, sizeof *rs->r, 16))
		util_oom();
	struct row *r = &rs->r[rs->n++];
	memset(r, 0, sizeof *r);
	return r;
}

static void rows_release(struct rows *rs)
{
	for (int i = 0; i < rs->n; i++)
		row_release(&rs->r[i]);
	free(rs->r);
	memset(rs, 0, sizeof *rs);
}

/* ---- views ---- */

struct tui;
struct view;
struct pane;

/* Up to limit rows next to anchor (NULL: from the first, dir > 0, or the
 * last, dir < 0), in the direction away from it: ascending display order
 * for dir > 0, descending for dir < 0. Appends to out. */
typedef int (*fetch_fn)(struct tui *t, struct view *v, struct pane *p, const struct row *anchor, int dir,
			int limit, struct rows *out, char **err);

struct pane {
	fetch_fn fetch;
	struct rows all;          /* a text in memory: every row (ids are indexes) */
	struct rows win;          /* the window */
	bool more_before, more_after;
	struct row lo, hi;        /* where the next read before / after the window starts */
	bool has_lo, has_hi;      /* false: from the first / the last */
	int cursor, top, height;
	char *filter;             /* NULL: none */
	int scan_left;            /* rows a filter may still read for this key */
};

struct view_class {
	const char *name;           /* also the crumb of a view that open does not name */
	const char *header;         /* the column header of a list; NULL: open sets one, or none */
	fetch_fn fetch;             /* pane 0's rows from the database; NULL: open sets the panes */
	/* sets the panes up (fetch functions, texts, header, crumb); 0 or -1
	 * with *err; NULL: a list of header and fetch alone */
	int (*open)(struct tui *t, struct view *v, char **err);
	/* rebuilds the text of static pane i (for r); NULL: nothing to do */
	int (*rebuild)(struct tui *t, struct view *v, int i, char **err);
	/* the graph that d exports from the selected row; NULL or 0: none */
	int64_t (*graph_of)(struct tui *t, struct view *v, const struct row *r);
	/* the cursor of pane 0 moved */
	void (*moved)(struct tui *t, struct view *v);
};

struct view {
	const struct view_class *cls;
	char *crumb;              /* its part of the title */
	char *header;             /* the line under the title */
	char *sep;                /* between two panes */
	int64_t run_id, frame_id, compile_id, graph_id;
	char *label;              /* a compile's F/N */
	char *preset;             /* a filter to start with */
	int line;                 /* a source line to open at */
	char *file;               /* ... in this file */
	int current_line;         /* the source line shown as current (0: none) */
	int kernel;               /* an inductor kernel's idx in graph graph_id */
	int64_t session_id;       /* a minifier session */
	int npanes, focus;
	struct pane pane[2];
};

struct tui {
	struct dbq *q;
	struct tui_options o;
	int rows, cols;
	struct view *stack[MAX_DEPTH];
	int depth;
	char *status;
	bool status_error;
	bool prompting;
	/* the last tui_layout */
	struct tui_line *lines;
	char **texts;
	int nlines;
	/* caches: one run, one profile */
	struct dbq_run run;
	bool have_run;
	struct profile prof;
	int64_t prof_run;         /* 0: none loaded; -1: too big or failed */
	bool have_prof;
};

static struct view *top(const struct tui *t)
{
	return t->depth ? t->stack[t->depth - 1] : NULL;
}

static struct pane *focused(const struct tui *t)
{
	struct view *v = top(t);
	return v ? &v->pane[v->focus] : NULL;
}

static void set_status(struct tui *t, bool error, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void set_status(struct tui *t, bool error, const char *fmt, ...)
{
	free(t->status);
	t->status = NULL;
	t->status_error = error;
	if (!fmt)
		return;
	va_list ap;
	va_start(ap, fmt);
	t->status = xvasprintf(fmt, ap);
	va_end(ap);
}

/* the run (cached) */
static const struct dbq_run *run_of(struct tui *t, int64_t id, char **err)
{
	if (t->have_run && t->run.id == id)
		return &t->run;
	if (t->have_run)
		dbq_run_release(&t->run);
	t->have_run = false;
	if (dbq_run_get(t->q, id, &t->run, err) < 0)
		return NULL;
	t->have_run = true;
	return &t->run;
}

/* the profile of a run (tools/lib/profile.c), when the run is small enough to
 * read whole; NULL otherwise */
static const struct profile *profile_of(struct tui *t, int64_t run_id, int64_t compiles)
{
	if (t->prof_run == run_id)
		return t->have_prof ? &t->prof : NULL;
	if (t->have_prof)
		profile_release(&t->prof);
	t->have_prof = false;
	t->prof_run = run_id;
	if (compiles > t->o.profile_max)
		return NULL;
	char *err = NULL;
	if (profile_load(t->q, run_id, &t->prof, &err) < 0) {
		free(err);
		return NULL;
	}
	t->have_prof = true;
	return &t->prof;
}

static void drop_caches(struct tui *t)
{
	if (t->have_run)
		dbq_run_release(&t->run);
	t->have_run = false;
	if (t->have_prof)
		profile_release(&t->prof);
	t->have_prof = false;
	t->prof_run = 0;
}

/* ---- panes: the window ---- */

static bool row_matches(const struct pane *p, const struct row *r)
{
	if (!p->filter || !*p->filter)
		return true;
	const char *s = r->text ? r->text : "";
	if (r->text_at > 0 && (size_t)r->text_at <= strlen(s))
		s += r->text_at;
	return strcasestr(s, p->filter) != NULL;
}

static void pane_clear(struct pane *p)
{
	rows_release(&p->win);
	if (p->has_lo)
		row_release(&p->lo);
	if (p->has_hi)
		row_release(&p->hi);
	p->has_lo = p->has_hi = false;
	p->more_before = p->more_after = false;
	p->cursor = p->top = 0;
}

static void pane_release(struct pane *p)
{
	pane_clear(p);
	rows_release(&p->all);
	free(p->filter);
	p->filter = NULL;
}

static int keep_rows(const struct tui *t, const struct pane *p)
{
	int k = t->o.window;
	if (k < 3 * p->height)
		k = 3 * p->height;
	if (k < 2 * t->o.page)
		k = 2 * t->o.page;
	return k;
}

/* Drops rows far from the cursor so that the window keeps at most
 * keep_rows: from the front after reading forward (dir > 0), from the
 * back after reading backward; never a row on the screen. */
static void pane_trim(struct tui *t, struct pane *p, int dir)
{
	int excess = p->win.n - keep_rows(t, p);
	if (excess <= 0)
		return;
	if (dir > 0) {
		int d = excess < p->top ? excess : p->top;
		if (d <= 0)
			return;
		for (int i = 0; i < d; i++)
			row_release(&p->win.r[i]);
		memmove(p->win.r, p->win.r + d, (size_t)(p->win.n - d) * sizeof *p->win.r);
		p->win.n -= d;
		p->cursor -= d;
		p->top -= d;
		if (p->has_lo)
			row_release(&p->lo);
		row_copy(&p->lo, &p->win.r[0]);
		p->has_lo = true;
		p->more_before = true;
	} else {
		int visible_end = p->top + p->height;
		int room = p->win.n - (visible_end > p->cursor + 1 ? visible_end : p->cursor + 1);
		int d = excess < room ? excess : room;
		if (d <= 0)
			return;
		for (int i = p->win.n - d; i < p->win.n; i++)
			row_release(&p->win.r[i]);
		p->win.n -= d;
		if (p->has_hi)
			row_release(&p->hi);
		row_copy(&p->hi, &p->win.r[p->win.n - 1]);
		p->has_hi = true;
		p->more_after = true;
	}
}

/* Reads rows beyond the window's edge in direction dir until want rows
 * that match the filter were added, the list ended, or the filter's
 * budget for this key is spent. Rows added, or -1 (status set). */
static int pane_extend(struct tui *t, struct view *v, struct pane *p, int dir, int want)
{
	int added = 0;
	bool filtering = p->filter && *p->filter;
	while (added < want && (dir > 0 ? p->more_after : p->more_before)) {
		if (filtering && p->scan_left <= 0) {
			set_status(t, false, "filter '%s': stopped after %d rows; n searches on", p->filter,
				   t->o.scan);
			break;
		}
		int limit = t->o.page;
		if (!filtering && want - added > limit)
			limit = want - added;
		if (filtering && limit > p->scan_left)
			limit = p->scan_left;
		struct rows got = {0};
		char *err = NULL;
		const struct row *anchor = dir > 0 ? (p->has_hi ? &p->hi : NULL) : (p->has_lo ? &p->lo : NULL);
		if (p->fetch(t, v, p, anchor, dir, limit, &got, &err) < 0) {
			set_status(t, true, "%s", err ? err : "cannot read the database");
			free(err);
			rows_release(&got);
			return -1;
		}
		p->scan_left -= got.n;
		if (got.n < limit) {
			if (dir > 0)
				p->more_after = false;
			else
				p->more_before = false;
		}
		if (got.n > 0) {
			struct row *edge = dir > 0 ? &p->hi : &p->lo;
			bool *has = dir > 0 ? &p->has_hi : &p->has_lo;
			if (*has)
				row_release(edge);
			row_copy(edge, &got.r[got.n - 1]);
			*has = true;
		}
		int kept = 0;
		for (int i = 0; i < got.n; i++) {
			if (row_matches(p, &got.r[i]))
				got.r[kept++] = got.r[i];
			else
				row_release(&got.r[i]);
		}
		if (kept) {
			if (!grow_array((void **)&p->win.r, &p->win.cap, p->win.n + kept, sizeof *p->win.r, 16))
				util_oom();
			if (dir > 0) {
				memcpy(p->win.r + p->win.n, got.r, (size_t)kept * sizeof *got.r);
			} else {
				memmove(p->win.r + kept, p->win.r, (size_t)p->win.n * sizeof *p->win.r);
				for (int i = 0; i < kept; i++)
					p->win.r[kept - 1 - i] = got.r[i];
				p->cursor += kept;
				p->top += kept;
			}
			p->win.n += kept;
			added += kept;
		}
		free(got.r);
		pane_trim(t, p, dir);
	}
	return added;
}

static void pane_scroll(struct pane *p)
{
	if (p->cursor >= p->win.n)
		p->cursor = p->win.n - 1;
	if (p->cursor < 0)
		p->cursor = 0;
	if (p->top > p->cursor)
		p->top = p->cursor;
	if (p->height > 0 && p->cursor >= p->top + p->height)
		p->top = p->cursor - p->height + 1;
	if (p->top < 0)
		p->top = 0;
}

/* fills the screen below the top row when rows are left */
static void pane_fill(struct tui *t, struct view *v, struct pane *p)
{
	if (p->top + p->height > p->win.n && p->more_after)
		pane_extend(t, v, p, 1, p->top + p->height - p->win.n);
}

/* to the first (dir > 0) or the last row */
static void pane_reset(struct tui *t, struct view *v, struct pane *p, int dir)
{
	pane_clear(p);
	p->scan_left = t->o.scan;
	/* a filter reads for one screen: matches can be far apart */
	int want = p->filter ? p->height : p->height > t->o.page ? p->height : t->o.page;
	if (dir > 0) {
		p->more_after = true;
		pane_extend(t, v, p, 1, want);
	} else {
		p->more_before = true;
		pane_extend(t, v, p, -1, want);
		p->cursor = p->win.n - 1;
		p->top = p->win.n - p->height;
	}
	pane_scroll(p);
}

/* Reads the window again around sel (a row of the list, by its key), with
 * sel off rows below the top of the screen: the rows before it, then it
 * and the rows after it. The cursor lands on sel, or the next row when
 * sel is gone. */
static void pane_load_at(struct tui *t, struct view *v, struct pane *p, const struct row *sel, int off)
{
	struct row anchor;
	row_copy(&anchor, sel);
	pane_clear(p);
	p->scan_left = t->o.scan;
	p->lo = anchor;
	p->has_lo = true;
	p->more_before = true;
	pane_extend(t, v, p, -1, off + 1);
	int before = p->win.n;
	if (before > 0) {
		row_copy(&p->hi, &p->win.r[before - 1]);
		p->has_hi = true;
	}
	p->more_after = true;
	p->scan_left = t->o.scan;
	pane_extend(t, v, p, 1, p->height + 1);
	p->cursor = before < p->win.n ? before : p->win.n - 1;
	p->top = p->cursor - off;
	pane_scroll(p);
	pane_fill(t, v, p);
}

static void moved(struct tui *t, struct view *v)
{
	if (v->focus == 0 && v->cls->moved)
		v->cls->moved(t, v);
}

static void pane_move(struct tui *t, struct view *v, struct pane *p, int delta, bool page)
{
	p->scan_left = t->o.scan;
	if (delta > 0) {
		int need = p->cursor + delta - (p->win.n - 1);
		if (need > 0 && p->more_after)
			pane_extend(t, v, p, 1, need);
		p->cursor += delta;
		if (page)
			p->top += delta;
	} else if (delta < 0) {
		int need = -(p->cursor + delta);
		if (need > 0 && p->more_before)
			pane_extend(t, v, p, -1, need);
		p->cursor += delta;
		if (page)
			p->top += delta;
	}
	if (page && p->top > p->win.n - p->height)
		p->top = p->win.n - p->height;
	pane_scroll(p);
	pane_fill(t, v, p);
	pane_scroll(p);
}

static const struct row *pane_row(const struct pane *p)
{
	return p->win.n > 0 && p->cursor >= 0 && p->cursor < p->win.n ? &p->win.r[p->cursor] : NULL;
}

/* puts the cursor on the text row of index idx (a static pane), centered */
static void pane_goto_index(struct tui *t, struct view *v, struct pane *p, int64_t idx)
{
	for (int i = 0; i < p->win.n; i++) {
		if (p->win.r[i].id == idx) {
			p->cursor = i;
			p->top = i - p->height / 2;
			if (p->top > p->win.n - p->height && !p->more_after)
				p->top = p->win.n - p->height;
			pane_scroll(p);
			pane_fill(t, v, p);
			return;
		}
	}
	struct row sel = {.id = idx};
	pane_load_at(t, v, p, &sel, p->height / 2);
}

/* a text in memory: rows by index */
static int fetch_static(struct tui *t, struct view *v, struct pane *p, const struct row *anchor, int dir, int limit,
			struct rows *out, char **err)
{
	(void)t;
	(void)v;
	(void)err;
	int64_t i = anchor ? anchor->id + dir : (dir > 0 ? 0 : p->all.n - 1);
	for (; i >= 0 && i < p->all.n && out->n < limit; i += dir)
		row_copy(rows_add(out), &p->all.r[i]);
	return 0;
}

/* ---- the views ---- */

static int push(struct tui *t, const struct view_class *cls, struct view *tmpl);

static struct row *add_text_row(struct pane *p, enum target target, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static struct row *add_text_row(struct pane *p, enum target target, const char *fmt, ...)
{
	struct row *r = rows_add(&p->all);
	va_list ap;
	va_start(ap, fmt);
	r->text = xvasprintf(fmt, ap);
	va_end(ap);
	r->id = p->all.n - 1;
	r->target = target;
	return r;
}

static void static_pane(struct pane *p)
{
	p->fetch = fetch_static;
}

/* -- runs, newest first -- */

static const char *run_state(const struct dbq_run_row *r, char *buf, size_t n)
{
	if (r->finished) {
		if (r->exit_status == 0)
			return "ok";
		snprintf(buf, n, "exit %d", r->exit_status);
		return buf;
	}
	/* no end: still running, or killed */
	return dbq_run_alive(r->pid) ? "running" : "killed";
}

static int fetch_runs(struct tui *t, struct view *v, struct pane *p, const struct row *anchor, int dir, int limit,
		      struct rows *out, char **err)
{
	(void)v;
	(void)p;
	struct dbq_run_row *rr = NULL;
	int n = 0;
	int rc = dir > 0 ? dbq_runs_page(t->q, anchor ? anchor->id : 0, limit, &rr, &n, err)
			 : dbq_runs_after(t->q, anchor ? anchor->id : 0, limit, &rr, &n, err);
	if (rc < 0)
		return -1;
	for (int i = 0; i < n; i++) {
		char st[32], when[32];
		const char *state = run_state(&rr[i], st, sizeof st);
		fmt_time(when, sizeof when, rr[i].started_at, "%m-%d %H:%M");
		/* "tjit run" -> "run", "tjit-profile run" -> "profile run": the
		 * program's tail then fits the 80 columns (57 go to the numbers) */
		const char *tool = rr[i].tool;
		if (strncmp(tool, "tjit-", 5) == 0 || strncmp(tool, "tjit ", 5) == 0)
			tool += 5;
		int w = 80 - 57 - (int)strlen(tool) - 1;
		char *prog = tail(rr[i].program, w < 12 ? 12 : w);
		struct row *r = rows_add(out);
		r->text = xasprintf("%5lld %-7s %-11s %8lld %6lld %6lld %6lld  %s %s", (long long)rr[i].id, state,
				    when, (long long)rr[i].compiles, (long long)rr[i].graphs, (long long)rr[i].breaks,
				    (long long)rr[i].recompiles, tool, prog);
		free(prog);
		r->id = r->ref = rr[i].id;
		r->target = T_RUN;
	}
	dbq_run_rows_free(rr, n);
	return 0;
}

static const struct view_class runs_class = {
	.name = "runs",
	.header = "   ID STATUS  STARTED     COMPILES GRAPHS BREAKS RECOMP  TOOL PROGRAM",
	.fetch = fetch_runs,
};

/* -- a run: what there is to see of it -- */

static int build_run(struct tui *t, struct view *v, int i, char **err)
{
	(void)i;
	struct pane *p = &v->pane[0];
	rows_release(&p->all);
	struct dbq_run_row *rr = NULL;
	int n = 0;
	if (dbq_runs_page(t->q, v->run_id + 1, 1, &rr, &n, err) < 0)
		return -1;
	if (n == 0 || rr[0].id != v->run_id) {
		dbq_run_rows_free(rr, n);
		*err = xasprintf("no run %lld in %s", (long long)v->run_id, dbq_path(t->q));
		return -1;
	}
	const struct dbq_run_row *r = &rr[0];
	const struct dbq_run *run = run_of(t, v->run_id, err);
	if (!run) {
		dbq_run_rows_free(rr, n);
		return -1;
	}
	char st[32], when[32];
	fmt_time(when, sizeof when, r->started_at, "%Y-%m-%d %H:%M:%S");
	free(v->header);
	v->header = xasprintf("%s · %s · %s · %s", r->command, run_state(r, st, sizeof st), when, run->config);
	add_text_row(p, T_COMPILES, "compiles        %8lld  F/N ids, why each compiled, time",
		     (long long)r->compiles);
	add_text_row(p, T_FRAMES, "frames                    functions and resume points, calls, hits");
	add_text_row(p, T_BREAKS, "graph breaks    %8lld  grouped by code and place", (long long)r->breaks);
	add_text_row(p, T_RECOMPILES, "recompiles      %8lld  their guard failures and the values seen",
		     (long long)r->recompiles);
	add_text_row(p, T_FAILURES, "guard failures            every one, in order");
	if (strcmp(run->tool, "tjit-minify") == 0)
		add_text_row(p, T_SESSIONS, "minifier sessions         failure, stage, result, the candidates tried")->ref =
			v->run_id;
	if (run->source_text) /* from its first line */
		add_text_row(p, T_SOURCE, "source                    %s, with break and recompile markers",
			     run->program)->line = 1;
	else
		add_text_row(p, T_NONE, "source                    %s: its text was not stored", run->program);
	dbq_run_rows_free(rr, n);
	return 0;
}

static int open_run(struct tui *t, struct view *v, char **err)
{
	v->crumb = xasprintf("run %lld", (long long)v->run_id);
	static_pane(&v->pane[0]);
	return build_run(t, v, 0, err);
}

static const struct view_class run_class = {.name = "run", .open = open_run, .rebuild = build_run};

/* -- compiles of a run or of a frame -- */

static void compile_row(struct rows *out, const struct dbq_compile *c, bool by_frame)
{
	char ms[32], when[32];
	fmt_ms(ms, sizeof ms, c->total_ms);
	fmt_time(when, sizeof when, c->started_at, "%H:%M:%S");
	struct row *r = rows_add(out);
	r->text = xasprintf("%-7s %-14.14s %-11s %-11s %5lld %s %10s  %s", c->label, c->function, c->reason,
			    c->outcome, (long long)c->op_count, c->op_count == 1 ? "op " : "ops", ms, when);
	r->id = by_frame ? c->compile_index : c->id;
	r->ref = c->id;
	r->s1 = xstrdup(c->label);
	r->target = T_COMPILE;
}

static int fetch_compiles(struct tui *t, struct view *v, struct pane *p, const struct row *anchor, int dir,
			  int limit, struct rows *out, char **err)
{
	(void)p;
	struct dbq_compile *c = NULL;
	int n = 0;
	int64_t key = anchor ? anchor->id : dir > 0 ? INT64_MIN : INT64_MAX;
	int rc = v->frame_id ? dbq_frame_compiles_page(t->q, v->frame_id, key, dir, limit, &c, &n, err)
			     : dbq_compiles_page(t->q, v->run_id, key < 0 ? 0 : key, dir, limit, &c, &n, err);
	if (rc < 0)
		return -1;
	for (int i = 0; i < n; i++)
		compile_row(out, &c[i], v->frame_id != 0);
	dbq_compiles_free(c, n);
	return 0;
}

/* the first graph of a compile (captured), 0 when it has none */
static int64_t first_graph(struct tui *t, int64_t compile_id)
{
	struct dbq_graph *g = NULL;
	int n = 0;
	if (dbq_graphs_of(t->q, compile_id, &g, &n, NULL) < 0)
		return 0;
	int64_t id = n ? g[0].id : 0;
	dbq_graphs_free(g, n);
	return id;
}

static int64_t compiles_graph_of(struct tui *t, struct view *v, const struct row *r)
{
	(void)v;
	return r ? first_graph(t, r->ref) : 0;
}

static int open_compiles(struct tui *t, struct view *v, char **err)
{
	(void)t;
	(void)err;
	if (v->frame_id)
		v->crumb = xasprintf("frame %s", v->label ? v->label : "");
	return 0;
}

static const struct view_class compiles_class = {
	.name = "compiles",
	.header = "F/N     FUNCTION       WHY         OUTCOME       OPS        TOTAL  STARTED",
	.fetch = fetch_compiles,
	.open = open_compiles,
	.graph_of = compiles_graph_of,
};

/* -- frames of a run -- */

static int fetch_frames(struct tui *t, struct view *v, struct pane *p, const struct row *anchor, int dir, int limit,
			struct rows *out, char **err)
{
	(void)p;
	struct dbq_frame *f = NULL;
	int n = 0;
	int64_t key = anchor ? anchor->id : dir > 0 ? INT64_MIN : INT64_MAX;
	if (dbq_frames_page(t->q, v->run_id, key, dir, limit, &f, &n, err) < 0)
		return -1;
	for (int i = 0; i < n; i++) {
		char *where = f[i].resume_pc ? xasprintf("%s:%d resume at %d", f[i].file, f[i].resume_line,
							 f[i].resume_pc)
					     : xasprintf("%s:%d", f[i].file, f[i].line);
		struct row *r = rows_add(out);
		r->text = xasprintf("%5d %-14.14s %-26s %8lld %8lld %6lld %8lld %s", f[i].frame_index, f[i].function,
				    where, (long long)f[i].calls, (long long)f[i].cache_hits,
				    (long long)f[i].eager_calls, (long long)f[i].compiles,
				    f[i].eager_reason ? f[i].eager_reason : "");
		free(where);
		r->id = f[i].frame_index;
		r->ref = f[i].id;
		r->s1 = xasprintf("%d", f[i].frame_index);
		r->target = T_COMPILES;
	}
	dbq_frames_free(f, n);
	return 0;
}

static const struct view_class frames_class = {
	.name = "frames",
	.header = "    F FUNCTION       WHERE                         CALLS     HITS  EAGER COMPILES",
	.fetch = fetch_frames,
};

/* -- graph-break places of a run -- */

static int fetch_places(struct tui *t, struct view *v, struct pane *p, const struct row *anchor, int dir, int limit,
			struct rows *out, char **err)
{
	(void)p;
	struct dbq_break key = {0}, *b = NULL;
	if (anchor) {
		key.code = anchor->s1;
		key.file = anchor->s2;
		key.line = anchor->line;
	}
	int n = 0;
	if (dbq_break_places_page(t->q, v->run_id, anchor ? &key : NULL, dir, limit, &b, &n, err) < 0)
		return -1;
	for (int i = 0; i < n; i++) {
		char *place = xasprintf("%s:%d", b[i].file, b[i].line);
		char *shown = tail(place, 22);
		struct row *r = rows_add(out);
		r->text = xasprintf("%-6s %-22s %8lld %8lld  %s", b[i].code, shown, (long long)b[i].compiles,
				    (long long)b[i].hits, b[i].message);
		free(place);
		free(shown);
		r->s1 = xstrdup(b[i].code);
		r->s2 = xstrdup(b[i].file);
		r->line = b[i].line;
		r->target = T_SOURCE;
	}
	dbq_breaks_free(b, n);
	return 0;
}

static const struct view_class breaks_class = {
	.name = "breaks",
	.header = "CODE   PLACE                  COMPILES     HITS  REASON",
	.fetch = fetch_places,
};

/* -- guard failures of a run or of a compile -- */

static int fetch_failures(struct tui *t, struct view *v, struct pane *p, const struct row *anchor, int dir,
			  int limit, struct rows *out, char **err)
{
	(void)p;
	struct dbq_failure_row *f = NULL;
	int n = 0;
	if (v->compile_id && anchor)
		return 0; /* a compile's failures come in one read */
	int64_t key = anchor ? anchor->id : dir > 0 ? 0 : INT64_MAX;
	if (dbq_failures_page(t->q, v->run_id, v->compile_id, key, dir, limit, &f, &n, err) < 0)
		return -1;
	for (int k = 0; k < n; k++) {
		int i = v->compile_id && dir < 0 ? n - 1 - k : k;
		struct row *r = rows_add(out);
		r->text = xasprintf("%-7s %-14.14s %s  (got %s)  entry %s", f[i].label, f[i].function, f[i].guard_text,
				    f[i].value_seen, f[i].failed_label);
		r->id = f[i].id;
		r->ref = f[i].compile_id;
		r->s1 = xstrdup(f[i].label);
		r->target = T_COMPILE;
	}
	dbq_failure_rows_free(f, n);
	return 0;
}

static int open_failures(struct tui *t, struct view *v, char **err)
{
	(void)t;
	(void)err;
	v->crumb = v->compile_id ? xasprintf("failures of %s", v->label) : xstrdup("guard failures");
	if (v->preset) {
		v->pane[0].filter = v->preset;
		v->preset = NULL;
	}
	return 0;
}

static const struct view_class failures_class = {
	.name = "failures",
	.header = "F/N     FUNCTION       GUARD THAT FAILED  (VALUE SEEN)  ENTRY IT FAILED",
	.fetch = fetch_failures,
	.open = open_failures,
};

/* -- recompiles of a run: guard failures grouped by subject (tools/lib/profile.c) -- */

static int build_recompiles(struct tui *t, struct view *v, int i, char **err)
{
	(void)i;
	struct pane *p = &v->pane[0];
	rows_release(&p->all);
	struct dbq_run_row *rr = NULL;
	int n = 0;
	if (dbq_runs_page(t->q, v->run_id + 1, 1, &rr, &n, err) < 0)
		return -1;
	int64_t compiles = n ? rr[0].compiles : 0, recompiles = n ? rr[0].recompiles : 0;
	dbq_run_rows_free(rr, n);
	const struct profile *pr = profile_of(t, v->run_id, compiles);
	if (!pr) {
		add_text_row(p, T_FAILURES, "%lld recompiles: too many compiles to group here; Enter lists every "
					    "guard failure",
			     (long long)recompiles);
		return 0;
	}
	for (int k = 0; k < pr->nranked; k++) {
		const struct profile_function *f = &pr->functions[pr->ranked[k]];
		struct row *r = add_text_row(p, T_FAILURES, "%s (%s:%d) · %lld %s, %lld %s", f->function, f->file,
					     f->line, (long long)f->recompiles,
					     plural(f->recompiles, "recompile", "recompiles"),
					     (long long)f->max_entries, plural(f->max_entries, "entry", "entries"));
		r->s1 = xstrdup(f->function);
		for (int g = 0; g < f->nguards; g++) {
			const struct profile_guard *gd = &f->guards[g];
			size_t len = 0;
			for (int x = 0; x < gd->nvalues; x++)
				len += strlen(gd->values[x]) + 2;
			char *vals = xcalloc(len + 1, 1);
			for (int x = 0; x < gd->nvalues; x++) {
				if (x)
					strcat(vals, ", ");
				strcat(vals, gd->values[x]);
			}
			r = add_text_row(p, T_FAILURES, "    %s · %lld %s · %d %s: %s", gd->subject,
					 (long long)gd->recompiles, plural(gd->recompiles, "recompile", "recompiles"),
					 gd->nvalues, plural(gd->nvalues, "value", "values"), vals);
			free(vals);
			r->s1 = xstrdup(gd->subject);
			if (gd->has_place) {
				r->line = gd->place.line;
				r->s2 = xstrdup(gd->place.file);
			}
		}
	}
	if (p->all.n == 0)
		add_text_row(p, T_NONE, "no recompiles");
	return 0;
}

static int open_recompiles(struct tui *t, struct view *v, char **err)
{
	static_pane(&v->pane[0]);
	return build_recompiles(t, v, 0, err);
}

static const struct view_class recompiles_class = {
	.name = "recompiles",
	.header = "FUNCTION · RECOMPILES; GUARD SUBJECT · RECOMPILES · VALUES SEEN",
	.open = open_recompiles,
	.rebuild = build_recompiles,
};

/* -- a compile -- */

/* aot_eager's partition: what the forward graph saves for backward
 * (Enter: that graph) */
static int add_saved_row(struct tui *t, struct pane *p, const struct dbq_compile *c, char **err)
{
	struct dbq_saved *s = NULL;
	int n = 0;
	if (dbq_saved(t->q, c->id, &s, &n, err) < 0)
		return -1;
	char bytes[32];
	snprintf(bytes, sizeof bytes, "%lld %s", (long long)c->saved_bytes, plural(c->saved_bytes, "byte", "bytes"));
	struct strbuf names = STRBUF_INIT;
	for (int k = 0; k < n; k++)
		sb_printf(&names, "%s%s", k ? ", " : ": ", s[k].name);
	struct row *r = add_text_row(p, n ? T_GRAPH : T_NONE, "saved          %d %s, %s%s", n,
				     plural(n, "tensor", "tensors"), bytes, sb_str(&names));
	r->ref = n ? s[0].graph_id : 0;
	sb_release(&names);
	dbq_saved_free(s, n);
	return 0;
}

/* inductor's kernels, in launch order (Enter: the kernel's IR beside the
 * source): name, kind, generated or from the kernel cache, codegen time,
 * the graph nodes it fused */
static int add_kernel_rows(struct tui *t, struct pane *p, int64_t compile_id, char **err)
{
	struct dbq_kernel *k = NULL;
	int n = 0;
	if (dbq_kernels(t->q, compile_id, &k, &n, err) < 0)
		return -1;
	for (int i = 0; i < n; i++) {
		char ms[32];
		fmt_ms(ms, sizeof ms, k[i].codegen_ms);
		struct row *r = add_text_row(p, T_KERNEL, "kernel %-18s %-9s %-8s %9s  %s", k[i].name, k[i].kind,
					     k[i].cache_hit ? "cached" : "compiled", ms, k[i].fused_nodes);
		r->ref = k[i].graph_id;
		r->kernel = k[i].idx;
	}
	dbq_kernels_free(k, n);
	return 0;
}

/* the phases the backend timed inside its time (aot_eager's decompose,
 * joint, partition; inductor's schedule, lower, and per kernel codegen,
 * llvm_optimize, jit), summed by name, when it did; the row wraps at 80
 * columns under its first phase */
static int add_phases_row(struct tui *t, struct pane *p, int64_t compile_id, char **err)
{
	struct dbq_phase *ph = NULL;
	int n = 0;
	if (dbq_compile_backend_phases(t->q, compile_id, &ph, &n, err) < 0)
		return -1;
	int m = 0;
	for (int k = 0; k < n; k++) {
		int j = 0;
		while (j < m && strcmp(ph[j].name, ph[k].name) != 0)
			j++;
		if (j < m) {
			ph[j].ms += ph[k].ms;
			continue;
		}
		if (j != k) {
			struct dbq_phase tmp = ph[j];
			ph[j] = ph[k];
			ph[k] = tmp;
		}
		m++;
	}
	struct strbuf text = STRBUF_INIT;
	sb_puts(&text, "in backend: ");
	int width = 12;
	for (int k = 0; k < m; k++) {
		char piece[96];
		char ms[32];
		fmt_ms(ms, sizeof ms, ph[k].ms);
		int w = snprintf(piece, sizeof piece, "%s %s", ph[k].name, ms);
		if (k && width + 3 + w > 78) {
			sb_puts(&text, " ·");
			add_text_row(p, T_NONE, "%s", sb_str(&text));
			sb_reset(&text);
			sb_puts(&text, "            ");
			width = 12;
		} else if (k) {
			sb_puts(&text, " · ");
			width += 3;
		}
		sb_puts(&text, piece);
		width += w;
	}
	if (m)
		add_text_row(p, T_NONE, "%s", sb_str(&text));
	sb_release(&text);
	dbq_phases_free(ph, n);
	return 0;
}

static int build_compile(struct tui *t, struct view *v, int i, char **err)
{
	(void)i;
	struct pane *p = &v->pane[0];
	rows_release(&p->all);
	struct dbq_compile c;
	if (dbq_compile_get(t->q, v->run_id, v->label, &c, err) < 0)
		return -1;
	v->compile_id = c.id;
	char tot[32], tr[32], gu[32], be[32];
	fmt_ms(tot, sizeof tot, c.total_ms);
	fmt_ms(tr, sizeof tr, c.trace_ms);
	fmt_ms(gu, sizeof gu, c.guard_ms);
	fmt_ms(be, sizeof be, c.backend_ms);
	free(v->header);
	v->header = xasprintf("%s of %s (%s:%d) · %s · %s · %s · %s", c.label, c.function, c.file, c.line, c.reason,
			      c.outcome, c.backend, tot);
	struct dbq_graph *g = NULL;
	int n = 0;
	if (dbq_graphs_of(t->q, c.id, &g, &n, err) < 0) {
		dbq_compile_release(&c);
		return -1;
	}
	for (int k = 0; k < n; k++) {
		struct row *r = add_text_row(p, T_GRAPH, "graph %-12s %s · %lld %s", g[k].stage, g[k].name,
					     (long long)g[k].op_count, plural(g[k].op_count, "op", "ops"));
		r->ref = g[k].id;
	}
	dbq_graphs_free(g, n);
	if (n == 0)
		add_text_row(p, T_NONE, "no graph");
	if ((c.partitioned && add_saved_row(t, p, &c, err) < 0) || add_kernel_rows(t, p, c.id, err) < 0) {
		dbq_compile_release(&c);
		return -1;
	}
	struct dbq_guard *gd = NULL;
	if (dbq_guards(t->q, v->run_id, c.label, &gd, &n, err) < 0) {
		dbq_compile_release(&c);
		return -1;
	}
	add_text_row(p, T_GUARDS, "guards         %d", n)->s1 = xstrdup(c.label);
	dbq_guards_free(gd, n);
	struct dbq_failure_row *f = NULL;
	if (dbq_failures_page(t->q, v->run_id, c.id, 0, 1, 0, &f, &n, err) < 0) {
		dbq_compile_release(&c);
		return -1;
	}
	if (n > 0) {
		struct row *r = add_text_row(p, T_FAILURES, "guard failures %d: %s (got %s)%s", n, f[0].guard_text,
					     f[0].value_seen, n > 1 ? ", ..." : "");
		r->ref = c.id;
		r->s1 = xstrdup(c.label);
	}
	dbq_failure_rows_free(f, n);
	struct dbq_break *b = NULL;
	if (dbq_compile_breaks(t->q, c.id, &b, &n, err) < 0) {
		dbq_compile_release(&c);
		return -1;
	}
	for (int k = 0; k < n; k++) {
		struct row *r = add_text_row(p, T_SOURCE, "break %s %s at %s:%d:%d", b[k].code, b[k].message,
					     b[k].file, b[k].line, b[k].col);
		r->line = b[k].line;
		r->s2 = xstrdup(b[k].file);
	}
	dbq_breaks_free(b, n);
	if (c.error)
		add_text_row(p, T_NONE, "error: %s", c.error);
	add_text_row(p, T_SOURCE, "function %s at %s:%d", c.function, c.file, c.resume_pc ? c.resume_line : c.line);
	p->all.r[p->all.n - 1].line = c.resume_pc ? c.resume_line : c.line;
	p->all.r[p->all.n - 1].s2 = xstrdup(c.file);
	add_text_row(p, T_NONE, "time: trace %s · guards %s · backend %s · total %s", tr, gu, be, tot);
	int rc = add_phases_row(t, p, c.id, err);
	dbq_compile_release(&c);
	return rc;
}

static int open_compile(struct tui *t, struct view *v, char **err)
{
	v->crumb = xstrdup(v->label);
	static_pane(&v->pane[0]);
	return build_compile(t, v, 0, err);
}

static int64_t compile_graph_of(struct tui *t, struct view *v, const struct row *r)
{
	if (r && r->target == T_GRAPH)
		return r->ref;
	return first_graph(t, v->compile_id);
}

static const struct view_class compile_class = {
	.name = "compile", .open = open_compile, .rebuild = build_compile, .graph_of = compile_graph_of};

/* -- guards of a compile -- */

static int build_guards(struct tui *t, struct view *v, int i, char **err)
{
	(void)i;
	struct pane *p = &v->pane[0];
	rows_release(&p->all);
	struct dbq_guard *g = NULL;
	int n = 0;
	if (dbq_guards(t->q, v->run_id, v->label, &g, &n, err) < 0)
		return -1;
	for (int k = 0; k < n; k++) {
		char *at = g[k].file ? xasprintf("%s:%d:%d", g[k].file, g[k].line, g[k].col) : xstrdup("");
		struct row *r = add_text_row(p, g[k].file ? T_SOURCE : T_NONE, "%3d %-13s %-40s %s", g[k].idx,
					     g[k].kind, g[k].text, at);
		free(at);
		if (g[k].file) {
			r->line = g[k].line;
			r->s2 = xstrdup(g[k].file);
		}
	}
	dbq_guards_free(g, n);
	if (n == 0)
		add_text_row(p, T_NONE, "no guards");
	return 0;
}

static int open_guards(struct tui *t, struct view *v, char **err)
{
	v->crumb = xasprintf("guards of %s", v->label);
	static_pane(&v->pane[0]);
	return build_guards(t, v, 0, err);
}

static const struct view_class guards_class = {
	.name = "guards",
	.header = "  # KIND          GUARD                                    MADE AT",
	.open = open_guards,
	.rebuild = build_guards,
};

/* -- source of a run's program, with markers -- */

/* marks[line] for lines 1..nlines: bit 1 a graph break, bit 2 a guard that failed */
static unsigned char *source_marks(struct tui *t, int64_t run_id, const char *program, int nlines)
{
	unsigned char *marks = xcalloc((size_t)nlines + 2, 1);
	struct dbq_break *b = NULL;
	int n = 0;
	if (dbq_break_places_page(t->q, run_id, NULL, 1, 1000, &b, &n, NULL) == 0) {
		for (int i = 0; i < n; i++)
			if (same_file(b[i].file, program) && b[i].line >= 1 && b[i].line <= nlines)
				marks[b[i].line] |= 1;
		dbq_breaks_free(b, n);
	}
	struct dbq_run_row *rr = NULL;
	if (dbq_runs_page(t->q, run_id + 1, 1, &rr, &n, NULL) == 0) {
		int64_t compiles = n ? rr[0].compiles : 0;
		dbq_run_rows_free(rr, n);
		const struct profile *pr = profile_of(t, run_id, compiles);
		if (pr) {
			for (int i = 0; i < pr->nfunctions; i++)
				for (int g = 0; g < pr->functions[i].nguards; g++) {
					const struct profile_guard *gd = &pr->functions[i].guards[g];
					if (gd->has_place && same_file(gd->place.file, program) &&
					    gd->place.line >= 1 && gd->place.line <= nlines)
						marks[gd->place.line] |= 2;
				}
		}
		/* the def line of a function that recompiled */
		struct dbq_frame *f = NULL;
		if (dbq_frames_page(t->q, run_id, INT64_MIN, 1, 1000, &f, &n, NULL) == 0) {
			for (int i = 0; i < n; i++)
				if (f[i].compiles > 1 && same_file(f[i].file, program) && f[i].line >= 1 &&
				    f[i].line <= nlines)
					marks[f[i].line] |= 2;
			dbq_frames_free(f, n);
		}
	}
	return marks;
}

/* the source text's lines as rows "BR>  12  text" (tabs expanded); the
 * third column shows the current line at drawing time */
static int build_source_rows(struct tui *t, int64_t run_id, struct pane *p, char **program_out, char **err)
{
	rows_release(&p->all);
	const struct dbq_run *run = run_of(t, run_id, err);
	if (!run)
		return -1;
	if (program_out) {
		free(*program_out);
		*program_out = xstrdup(run->program);
	}
	if (!run->source_text) {
		add_text_row(p, T_NONE, "(the text of %s was not stored)", run->program);
		return 0;
	}
	int nlines = 0;
	for (const char *s = run->source_text; *s; s++)
		nlines += *s == '\n';
	if (*run->source_text && run->source_text[strlen(run->source_text) - 1] != '\n')
		nlines++;
	char *program = xstrdup(run->program);
	char *text = xstrdup(run->source_text);
	unsigned char *marks = source_marks(t, run_id, program, nlines);
	char *s = text;
	for (int line = 1; line <= nlines; line++) {
		char *nl = strchr(s, '\n');
		if (nl)
			*nl = 0;
		size_t cap = strlen(s) * 8 + 1, k = 0;
		char *ex = xmalloc(cap);
		for (const char *c = s; *c; c++) {
			if (*c == '\t') {
				do
					ex[k++] = ' ';
				while (k % 8);
			} else {
				ex[k++] = *c;
			}
		}
		ex[k] = 0;
		struct row *r = add_text_row(p, T_NONE, "%c%c %4d  %s", marks[line] & 1 ? 'B' : ' ',
					     marks[line] & 2 ? 'R' : ' ', line, ex);
		free(ex);
		r->line = line;
		r->mark_len = 2;
		r->text_at = 9;
		s = nl ? nl + 1 : s + strlen(s);
	}
	free(marks);
	free(text);
	free(program);
	return 0;
}

static int build_source(struct tui *t, struct view *v, int i, char **err)
{
	(void)i;
	return build_source_rows(t, v->run_id, &v->pane[0], &v->file, err);
}

static int open_source(struct tui *t, struct view *v, char **err)
{
	char *want = v->file ? xstrdup(v->file) : NULL;
	static_pane(&v->pane[0]);
	if (build_source(t, v, 0, err) < 0) {
		free(want);
		return -1;
	}
	if (want && !same_file(want, v->file)) {
		*err = xasprintf("%s: only the text of the run's program (%s) is stored", want, v->file);
		free(want);
		return -1;
	}
	free(want);
	v->crumb = v->line ? xasprintf("%s:%d", v->file, v->line) : xstrdup(v->file);
	v->header = xstrdup("B: graph break here  R: a guard made here failed (recompile)  >: selected");
	v->current_line = v->line;
	return 0;
}

static const struct view_class source_class = {.name = "source", .open = open_source, .rebuild = build_source};

/* -- a graph, with a source pane -- */

static int build_graph(struct tui *t, struct view *v, int i, char **err)
{
	if (i == 1)
		return build_source_rows(t, v->run_id, &v->pane[1], &v->file, err);
	struct pane *p = &v->pane[0];
	rows_release(&p->all);
	struct dbq_graph g;
	if (dbq_graph_get(t->q, v->graph_id, &g, err) < 0)
		return -1;
	v->run_id = g.run_id;
	free(v->header);
	if (g.break_code)
		v->header = xasprintf("%s %s · break %s %s at %s:%d", g.label, g.stage, g.break_code, g.break_message,
				      g.break_file, g.break_line);
	else
		v->header = xasprintf("%s %s · no graph break", g.label, g.stage);
	struct dbq_node *nd = NULL;
	int n = 0;
	if (dbq_nodes(t->q, v->graph_id, &nd, &n, err) < 0) {
		dbq_graph_release(&g);
		return -1;
	}
	int k = 0;
	const char *s = g.listing;
	while (*s) {
		const char *nl = strchr(s, '\n');
		size_t len = nl ? (size_t)(nl - s) : strlen(s);
		struct row *r = add_text_row(p, T_SOURCE, "%.*s", (int)len, s);
		/* line 0 is the header; line k + 1 is node k */
		if (k >= 1 && k - 1 < n && nd[k - 1].file) {
			r->line = nd[k - 1].line;
			r->s2 = xstrdup(nd[k - 1].file);
		}
		k++;
		s = nl ? nl + 1 : s + len;
	}
	dbq_nodes_free(nd, n);
	dbq_graph_release(&g);
	return 0;
}

static void graph_moved(struct tui *t, struct view *v)
{
	const struct row *r = pane_row(&v->pane[0]);
	if (!r || !r->line || !same_file(r->s2, v->file))
		return;
	v->current_line = r->line;
	pane_goto_index(t, v, &v->pane[1], r->line - 1);
}

static int open_graph(struct tui *t, struct view *v, char **err)
{
	v->crumb = xasprintf("graph %lld", (long long)v->graph_id);
	v->npanes = 2;
	static_pane(&v->pane[0]);
	static_pane(&v->pane[1]);
	if (build_graph(t, v, 0, err) < 0 || build_graph(t, v, 1, err) < 0)
		return -1;
	v->sep = xasprintf("source: %s", v->file);
	return 0;
}

static int64_t graph_graph_of(struct tui *t, struct view *v, const struct row *r)
{
	(void)t;
	(void)r;
	return v->graph_id;
}

static const struct view_class graph_class = {
	.name = "graph", .open = open_graph, .rebuild = build_graph, .graph_of = graph_graph_of, .moved = graph_moved};

/* -- an inductor kernel: the graph nodes it fused, its loop IR and LLVM
 * IR, with the source pane of the graph view -- */

/* a row per line of text, indented */
static void add_text_lines(struct pane *p, const char *text)
{
	while (*text) {
		const char *nl = strchr(text, '\n');
		int len = nl ? (int)(nl - text) : (int)strlen(text);
		add_text_row(p, T_NONE, "  %.*s", len, text);
		text += len + (nl ? 1 : 0);
	}
}

/* the listing's rows of the nodes kernel k fused (line j + 1 of the
 * listing is node j), each pointing at its source line */
static void add_fused_rows(struct pane *p, const struct dbq_graph *g, const struct dbq_node *nd, int n,
			   const struct dbq_kernel *k)
{
	const char *s = g->listing;
	for (int line = 0; *s; line++) {
		const char *nl = strchr(s, '\n');
		int len = nl ? (int)(nl - s) : (int)strlen(s);
		int j = line - 1;
		if (j >= 0 && j < n && util_in_names(k->fused_nodes, nd[j].name)) {
			struct row *r = add_text_row(p, T_SOURCE, "%.*s", len, s);
			if (nd[j].file) {
				r->line = nd[j].line;
				r->s2 = xstrdup(nd[j].file);
			}
		}
		s += len + (nl ? 1 : 0);
	}
}

static int build_kernel(struct tui *t, struct view *v, int i, char **err)
{
	if (i == 1)
		return build_source_rows(t, v->run_id, &v->pane[1], &v->file, err);
	struct pane *p = &v->pane[0];
	rows_release(&p->all);
	struct dbq_graph g;
	if (dbq_graph_get(t->q, v->graph_id, &g, err) < 0)
		return -1;
	v->run_id = g.run_id;
	struct dbq_node *nd = NULL;
	struct dbq_kernel *k = NULL;
	int n = 0, nk = 0, rc = -1;
	if (dbq_nodes(t->q, v->graph_id, &nd, &n, err) < 0 || dbq_kernels(t->q, g.compile_id, &k, &nk, err) < 0)
		goto cleanup;
	const struct dbq_kernel *kr = NULL;
	for (int j = 0; j < nk && !kr; j++)
		if (k[j].graph_id == v->graph_id && k[j].idx == v->kernel)
			kr = &k[j];
	if (!kr) {
		*err = xasprintf("no kernel %d in graph %lld", v->kernel, (long long)v->graph_id);
		goto cleanup;
	}
	char ms[32];
	fmt_ms(ms, sizeof ms, kr->codegen_ms);
	free(v->header);
	v->header = xasprintf("%s %s · kernel %s · %s · %s %s", g.label, g.stage, kr->name, kr->kind,
			      kr->cache_hit ? "from the kernel cache" : "compiled", ms);
	free(v->crumb);
	v->crumb = xasprintf("kernel %s", kr->name);
	add_text_row(p, T_NONE, "fused: %s", kr->fused_nodes);
	add_fused_rows(p, &g, nd, n, kr);
	add_text_row(p, T_NONE, "loop IR:");
	add_text_lines(p, kr->loop_ir);
	if (kr->llvm_ir) {
		add_text_row(p, T_NONE, "LLVM IR:");
		add_text_lines(p, kr->llvm_ir);
	} else {
		add_text_row(p, T_NONE, "LLVM IR: none recorded (a kernel from the cache of an older tjit)");
	}
	rc = 0;
cleanup:
	dbq_kernels_free(k, nk);
	dbq_nodes_free(nd, n);
	dbq_graph_release(&g);
	return rc;
}

static int open_kernel(struct tui *t, struct view *v, char **err)
{
	v->npanes = 2;
	static_pane(&v->pane[0]);
	static_pane(&v->pane[1]);
	if (build_kernel(t, v, 0, err) < 0 || build_kernel(t, v, 1, err) < 0)
		return -1;
	v->sep = xasprintf("source: %s", v->file);
	return 0;
}

static const struct view_class kernel_class = {
	.name = "kernel", .open = open_kernel, .rebuild = build_kernel, .graph_of = graph_graph_of, .moved = graph_moved};

/* -- tjit-minify's sessions (doc/minify.md), newest first, and the
 * candidates a session tried -- */

static void session_row(struct rows *out, const struct dbq_session *s)
{
	char *prog = tail(s->program, 16);
	struct row *r = rows_add(out);
	r->text = xasprintf("%5lld %-16s %-9s %-13s %-9s %-14s %5lld  %s", (long long)s->id, prog,
			    s->backend ? s->backend : "-", s->failure, s->stage ? s->stage : "-",
			    s->result ? s->result : s->finished ? "-" : "running", (long long)s->steps,
			    s->repro_path ? s->repro_path : "-");
	free(prog);
	r->id = r->ref = s->id;
	r->target = T_SESSION;
}

/* all sessions newest first by id (dir > 0: downward), or those of run
 * v->run_id, read at once, oldest first */
static int fetch_sessions(struct tui *t, struct view *v, struct pane *p, const struct row *anchor, int dir,
			  int limit, struct rows *out, char **err)
{
	(void)p;
	struct dbq_session *s = NULL;
	int n = 0;
	if (v->run_id && anchor)
		return 0;
	int64_t key = anchor ? anchor->id : dir > 0 ? INT64_MAX : 0;
	if (dbq_sessions_page(t->q, v->run_id, key, -dir, limit, &s, &n, err) < 0)
		return -1;
	for (int k = 0; k < n; k++)
		session_row(out, &s[v->run_id && dir < 0 ? n - 1 - k : k]);
	dbq_sessions_free(s, n);
	return 0;
}

static int open_sessions(struct tui *t, struct view *v, char **err)
{
	(void)t;
	(void)err;
	v->crumb = v->run_id ? xasprintf("sessions of run %lld", (long long)v->run_id) : xstrdup("minifier sessions");
	return 0;
}

static const struct view_class sessions_class = {
	.name = "sessions",
	.header = "   ID PROGRAM          BACKEND   FAILURE       STAGE     RESULT         STEPS  REPRO",
	.fetch = fetch_sessions,
	.open = open_sessions,
};

/* a session: what it found, then each candidate in order (a session
 * tries tens of them: read at once, as a compile's guards) */
static int build_session(struct tui *t, struct view *v, int i, char **err)
{
	(void)i;
	struct pane *p = &v->pane[0];
	rows_release(&p->all);
	struct dbq_session *s = NULL;
	int n = 0;
	/* the session's row: one search of the primary key, from just above it */
	if (dbq_sessions_page(t->q, 0, v->session_id + 1, -1, 1, &s, &n, err) < 0)
		return -1;
	if (n == 0 || s[0].id != v->session_id) {
		dbq_sessions_free(s, n);
		*err = xasprintf("no minifier session %lld in %s", (long long)v->session_id, dbq_path(t->q));
		return -1;
	}
	char when[32], ms[32];
	fmt_time(when, sizeof when, s->started_at, "%Y-%m-%d %H:%M:%S");
	if (s->finished)
		fmt_ms(ms, sizeof ms, (s->ended_at - s->started_at) * 1e3);
	else
		snprintf(ms, sizeof ms, "no end");
	v->run_id = s->run_id;
	free(v->header);
	v->header = xasprintf("tjit-minify run %lld · %s · %s · %lld %s", (long long)s->run_id, when, ms,
			      (long long)s->steps, plural(s->steps, "candidate run", "candidate runs"));
	add_text_row(p, T_NONE, "program  %s, backend %s", s->program, s->backend ? s->backend : "-");
	add_text_row(p, T_NONE, "failure  %s, first failing stage %s", s->failure, s->stage ? s->stage : "unknown");
	add_text_row(p, T_NONE, "result   %s", s->result ? s->result : s->finished ? "-" : "none yet (running, or killed)");
	add_text_row(p, T_NONE, "repro    %s", s->repro_path ? s->repro_path : "none written");
	add_text_row(p, T_NONE, "PHASE    OUTCOME          NODES         MS  CANDIDATE");
	dbq_sessions_free(s, n);
	struct dbq_step *st = NULL;
	if (dbq_steps_page(t->q, v->session_id, 0, 1, 0, &st, &n, err) < 0)
		return -1;
	for (int k = 0; k < n; k++) {
		char nodes[16];
		if (st[k].nodes >= 0)
			snprintf(nodes, sizeof nodes, "%d %s", st[k].nodes, plural(st[k].nodes, "op", "ops"));
		else
			snprintf(nodes, sizeof nodes, "-");
		fmt_ms(ms, sizeof ms, st[k].ms);
		add_text_row(p, T_NONE, "%-8s %-14s %7s %10s  %s", st[k].phase, st[k].outcome, nodes, ms,
			     st[k].candidate);
	}
	if (n == 0)
		add_text_row(p, T_NONE, "no candidate ran");
	dbq_steps_free(st, n);
	return 0;
}

static int open_session(struct tui *t, struct view *v, char **err)
{
	v->crumb = xasprintf("session %lld", (long long)v->session_id);
	static_pane(&v->pane[0]);
	return build_session(t, v, 0, err);
}

static const struct view_class session_class = {.name = "session", .open = open_session, .rebuild = build_session};

/* -- help -- */

static int open_help(struct tui *t, struct view *v, char **err)
{
	(void)t;
	(void)err;
	v->header = xstrdup("tjit-tui: the keys (q or Esc closes this)");
	static_pane(&v->pane[0]);
	char *text = tui_help_text();
	for (char *s = text; *s;) {
		char *nl = strchr(s, '\n');
		if (nl)
			*nl = 0;
		add_text_row(&v->pane[0], T_NONE, "%s", s);
		s = nl ? nl + 1 : s + strlen(s);
	}
	free(text);
	return 0;
}

static const struct view_class help_class = {.name = "help", .open = open_help};

/* ---- the stack ---- */

static void view_free(struct view *v)
{
	if (!v)
		return;
	for (int i = 0; i < 2; i++)
		pane_release(&v->pane[i]);
	free(v->crumb);
	free(v->header);
	free(v->sep);
	free(v->label);
	free(v->preset);
	free(v->file);
	free(v);
}

static void set_heights(struct tui *t, struct view *v)
{
	int body = t->rows - 4;
	if (body < 1)
		body = 1;
	if (v->npanes == 2) {
		int h0 = body / 2;
		if (h0 < 1)
			h0 = 1;
		int h1 = body - 1 - h0;
		v->pane[0].height = h0;
		v->pane[1].height = h1 < 1 ? 1 : h1;
	} else {
		v->pane[0].height = body;
	}
}

/* opens a view made from tmpl (whose strings it takes) on top */
static int push(struct tui *t, const struct view_class *cls, struct view *tmpl)
{
	if (t->depth >= MAX_DEPTH) {
		set_status(t, true, "too deep: go back first");
		free(tmpl->label);
		free(tmpl->preset);
		free(tmpl->file);
		return TUI_HANDLED | TUI_REDRAW;
	}
	struct view *v = xcalloc(1, sizeof *v);
	*v = *tmpl;
	v->cls = cls;
	v->npanes = 1;
	char *err = NULL;
	if (cls->header)
		v->header = xstrdup(cls->header);
	v->pane[0].fetch = cls->fetch;
	if (cls->open && cls->open(t, v, &err) < 0) {
		set_status(t, true, "%s", err ? err : "cannot open the view");
		free(err);
		view_free(v);
		return TUI_HANDLED | TUI_REDRAW;
	}
	if (!v->crumb)
		v->crumb = xstrdup(cls->name);
	set_heights(t, v);
	for (int i = 0; i < v->npanes; i++)
		pane_reset(t, v, &v->pane[i], 1);
	if (v->line && cls == &source_class)
		pane_goto_index(t, v, &v->pane[0], v->line - 1);
	if (cls == &graph_class || cls == &kernel_class) {
		/* on the first node that has a source line */
		struct pane *p = &v->pane[0];
		for (int i = 0; i < p->win.n; i++)
			if (p->win.r[i].line) {
				p->cursor = i;
				pane_scroll(p);
				break;
			}
	}
	t->stack[t->depth++] = v;
	moved(t, v);
	return TUI_HANDLED | TUI_REDRAW;
}

static int enter(struct tui *t)
{
	struct view *v = top(t);
	if (v->focus != 0)
		return TUI_HANDLED;
	const struct row *r = pane_row(&v->pane[0]);
	if (!r)
		return TUI_HANDLED;
	struct view n = {.run_id = v->run_id};
	switch (r->target) {
	case T_NONE:
		return TUI_HANDLED;
	case T_RUN:
		n.run_id = r->ref;
		return push(t, &run_class, &n);
	case T_COMPILES:
		if (v->cls == &frames_class) {
			n.frame_id = r->ref;
			n.label = xstrdup(r->s1);
		}
		return push(t, &compiles_class, &n);
	case T_FRAMES:
		return push(t, &frames_class, &n);
	case T_BREAKS:
		return push(t, &breaks_class, &n);
	case T_RECOMPILES:
		return push(t, &recompiles_class, &n);
	case T_FAILURES:
		if (r->ref) {
			n.compile_id = r->ref;
			n.label = xstrdup(r->s1);
		} else if (v->cls == &recompiles_class && r->s1 && r->text[0] == ' ') {
			n.preset = xstrdup(r->s1);
		}
		return push(t, &failures_class, &n);
	case T_COMPILE:
		n.label = xstrdup(r->s1);
		return push(t, &compile_class, &n);
	case T_GRAPH:
		n.graph_id = r->ref;
		return push(t, &graph_class, &n);
	case T_GUARDS:
		n.label = xstrdup(r->s1);
		return push(t, &guards_class, &n);
	case T_KERNEL:
		n.graph_id = r->ref;
		n.kernel = r->kernel;
		return push(t, &kernel_class, &n);
	case T_SESSIONS:
		n.run_id = r->ref;
		return push(t, &sessions_class, &n);
	case T_SESSION:
		n.session_id = r->ref;
		return push(t, &session_class, &n);
	case T_SOURCE:
		if (!r->line) {
			set_status(t, false, "no source line");
			return TUI_HANDLED | TUI_REDRAW;
		}
		n.line = r->line;
		n.file = r->s2 ? xstrdup(r->s2) : NULL;
		return push(t, &source_class, &n);
	}
	return TUI_HANDLED;
}

static int back(struct tui *t, int key)
{
	if (t->depth <= 1) {
		if (key == 'q')
			return TUI_HANDLED | TUI_QUIT;
		set_status(t, false, "this is the first view: q or Q quits");
		return TUI_HANDLED | TUI_REDRAW;
	}
	view_free(t->stack[--t->depth]);
	return TUI_HANDLED | TUI_REDRAW;
}

/* ---- the key map ---- */

enum cmd {
	C_DOWN,
	C_UP,
	C_TOP,
	C_BOTTOM,
	C_PGDN,
	C_PGUP,
	C_ENTER,
	C_BACK,
	C_QUIT,
	C_FILTER,
	C_NEXT,
	C_PREV,
	C_PANE,
	C_EXPORT,
	C_RELOAD,
	C_HELP,
	C_SESSIONS,
};

/* One row per command: its keys, its word in the footer (NULL: not
 * there), its line in the help. The help and the footer are made from
 * this table, and tui_key looks keys up in it. */
static const struct binding {
	enum cmd cmd;
	int keys[4];              /* 0-ended */
	const char *footer;
	const char *help;
} keymap[] = {
	{C_DOWN, {'j', TUI_KEY_DOWN}, NULL, "move down"},
	{C_UP, {'k', TUI_KEY_UP}, NULL, "move up"},
	{C_TOP, {'g', TUI_KEY_HOME}, NULL, "go to the first row"},
	{C_BOTTOM, {'G', TUI_KEY_END}, NULL, "go to the last row"},
	{C_PGDN, {TUI_KEY_PGDN, ' ', TUI_CTRL('f')}, NULL, "page down"},
	{C_PGUP, {TUI_KEY_PGUP, TUI_CTRL('b')}, NULL, "page up"},
	{C_ENTER, {TUI_KEY_ENTER, TUI_KEY_RIGHT, 'l'}, "open", "open the selected row (drill in)"},
	{C_BACK, {TUI_KEY_ESC, 'q', TUI_KEY_LEFT, 'h'}, "back", "go back (q on the runs quits)"},
	{C_FILTER, {'/'}, "filter", "filter rows as you type (Enter keeps, Esc clears)"},
	{C_NEXT, {'n'}, NULL, "next row that matches the filter (reads on)"},
	{C_PREV, {'N'}, NULL, "previous row that matches the filter"},
	{C_PANE, {TUI_KEY_TAB}, "pane", "switch between the graph and its source"},
	{C_EXPORT, {'d'}, "dot", "export the graph: graph-ID.dot and .svg here"},
	{C_RELOAD, {'r'}, "reload", "read the screen again (a run still writing)"},
	{C_SESSIONS, {'m'}, NULL, "the minifier's sessions (tjit-minify), newest first"},
	{C_HELP, {'?'}, "help", "this help"},
	{C_QUIT, {'Q'}, "quit", "quit"},
};
#define NKEYMAP (sizeof keymap / sizeof keymap[0])

static void key_name(int key, char *buf, size_t n)
{
	static const struct {
		int key;
		const char *name;
	} names[] = {
		{TUI_KEY_UP, "Up"},     {TUI_KEY_DOWN, "Down"}, {TUI_KEY_LEFT, "Left"},     {TUI_KEY_RIGHT, "Right"},
		{TUI_KEY_HOME, "Home"}, {TUI_KEY_END, "End"},   {TUI_KEY_PGUP, "PgUp"},     {TUI_KEY_PGDN, "PgDn"},
		{TUI_KEY_ENTER, "Enter"}, {TUI_KEY_ESC, "Esc"}, {TUI_KEY_TAB, "Tab"},       {' ', "Space"},
	};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (names[i].key == key) {
			snprintf(buf, n, "%s", names[i].name);
			return;
		}
	if (key > 0 && key < 32)
		snprintf(buf, n, "C-%c", key + 'a' - 1);
	else
		snprintf(buf, n, "%c", key);
}

static bool available(const struct tui *t, enum cmd c)
{
	const struct view *v = top(t);
	if (c == C_PANE)
		return v && v->npanes == 2;
	if (c == C_EXPORT)
		return v && v->cls->graph_of;
	return true;
}

char *tui_help_text(void)
{
	size_t cap = 4096, len = 0;
	char *out = xmalloc(cap);
	out[0] = 0;
	for (size_t i = 0; i < NKEYMAP; i++) {
		char keys[64] = "";
		for (int k = 0; k < 4 && keymap[i].keys[k]; k++) {
			char name[16];
			key_name(keymap[i].keys[k], name, sizeof name);
			if (k)
				strcat(keys, ", ");
			strcat(keys, name);
		}
		char *line = xasprintf("  %-18s %s\n", keys, keymap[i].help);
		size_t l = strlen(line);
		if (len + l + 1 > cap) {
			cap = (len + l + 1) * 2;
			out = xrealloc(out, cap);
		}
		memcpy(out + len, line, l + 1);
		len += l;
		free(line);
	}
	return out;
}

char *tui_footer_text(const struct tui *t)
{
	char *out = xstrdup("");
	for (size_t i = 0; i < NKEYMAP; i++) {
		if (!keymap[i].footer || !available(t, keymap[i].cmd))
			continue;
		char a[16], b[16] = "";
		key_name(keymap[i].keys[0], a, sizeof a);
		int k1 = keymap[i].keys[1];
		if (k1 > ' ' && k1 < 127)
			key_name(k1, b, sizeof b);
		char *s = xasprintf("%s%s%s%s%s:", out, *out ? "  " : "", a, *b ? "/" : "", b);
		free(out);
		out = xasprintf("%s%s", s, keymap[i].footer);
		free(s);
	}
	return out;
}

static const struct binding *binding_of(int key)
{
	for (size_t i = 0; i < NKEYMAP; i++)
		for (int k = 0; k < 4 && keymap[i].keys[k]; k++)
			if (keymap[i].keys[k] == key)
				return &keymap[i];
	return NULL;
}

/* ---- the filter prompt ---- */

static void apply_filter(struct tui *t, const char *text)
{
	struct view *v = top(t);
	struct pane *p = &v->pane[v->focus];
	free(p->filter);
	p->filter = text && *text ? xstrdup(text) : NULL;
	set_status(t, false, NULL);
	pane_reset(t, v, p, 1);
	moved(t, v);
}

static int prompt_key(struct tui *t, int key)
{
	struct pane *p = focused(t);
	const char *cur = p->filter ? p->filter : "";
	if (key == TUI_KEY_ENTER || key == '\n') {
		t->prompting = false;
		return TUI_HANDLED | TUI_REDRAW;
	}
	if (key == TUI_KEY_ESC) {
		t->prompting = false;
		apply_filter(t, NULL);
		return TUI_HANDLED | TUI_REDRAW;
	}
	if (key == TUI_KEY_BACKSPACE || key == 127 || key == TUI_CTRL('h')) {
		size_t len = strlen(cur);
		while (len > 0 && ((unsigned char)cur[len - 1] & 0xc0) == 0x80)
			len--;
		if (len > 0)
			len--;
		char *s = xstrdup(cur);
		s[len] = 0;
		apply_filter(t, s);
		free(s);
		return TUI_HANDLED | TUI_REDRAW;
	}
	if (key == TUI_CTRL('u')) {
		apply_filter(t, NULL);
		return TUI_HANDLED | TUI_REDRAW;
	}
	if (key == TUI_KEY_RESIZE)
		return TUI_HANDLED | TUI_RESIZE | TUI_REDRAW;
	if (key < ' ' || key >= 0x110000)
		return TUI_HANDLED;
	char utf8[5] = {0};
	if (key < 0x80) {
		utf8[0] = (char)key;
	} else if (key < 0x800) {
		utf8[0] = (char)(0xc0 | (key >> 6));
		utf8[1] = (char)(0x80 | (key & 0x3f));
	} else if (key < 0x10000) {
		utf8[0] = (char)(0xe0 | (key >> 12));
		utf8[1] = (char)(0x80 | ((key >> 6) & 0x3f));
		utf8[2] = (char)(0x80 | (key & 0x3f));
	} else {
		utf8[0] = (char)(0xf0 | (key >> 18));
		utf8[1] = (char)(0x80 | ((key >> 12) & 0x3f));
		utf8[2] = (char)(0x80 | ((key >> 6) & 0x3f));
		utf8[3] = (char)(0x80 | (key & 0x3f));
	}
	if (strlen(cur) + strlen(utf8) > 200)
		return TUI_HANDLED;
	char *s = xasprintf("%s%s", cur, utf8);
	apply_filter(t, s);
	free(s);
	return TUI_HANDLED | TUI_REDRAW;
}

/* ---- keys ---- */

static int reload(struct tui *t)
{
	struct view *v = top(t);
	drop_caches(t);
	for (int i = 0; i < v->npanes; i++) {
		struct pane *p = &v->pane[i];
		char *err = NULL;
		if (v->cls->rebuild && v->cls->rebuild(t, v, i, &err) < 0) {
			set_status(t, true, "%s", err ? err : "cannot read the database");
			free(err);
			return TUI_HANDLED | TUI_REDRAW;
		}
		const struct row *sel = pane_row(p);
		if (sel) {
			struct row copy;
			row_copy(&copy, sel);
			pane_load_at(t, v, p, &copy, p->cursor - p->top);
			row_release(&copy);
		} else {
			pane_reset(t, v, p, 1);
		}
	}
	moved(t, v);
	set_status(t, false, "reloaded");
	return TUI_HANDLED | TUI_REDRAW;
}

static int export_graph(struct tui *t)
{
	struct view *v = top(t);
	int64_t id = v->cls->graph_of ? v->cls->graph_of(t, v, pane_row(&v->pane[0])) : 0;
	if (!id) {
		set_status(t, true, "no graph here: select a compile or a graph");
		return TUI_HANDLED | TUI_REDRAW;
	}
	tui_export_fn fn = v->cls == &kernel_class && t->o.export_kernels ? t->o.export_kernels : t->o.export_graph;
	if (!fn) {
		set_status(t, true, "d: exporting needs viz/ (tjit-dot), which this build does not have");
		return TUI_HANDLED | TUI_REDRAW;
	}
	const char *dir = t->o.export_dir ? t->o.export_dir : ".";
	static const char *const formats[] = {"dot", "svg"};
	for (int i = 0; i < 2; i++) {
		char *path = xasprintf("%s/graph-%lld.%s", dir, (long long)id, formats[i]);
		char *err = NULL;
		if (fn(t->q, id, formats[i], path, 0, &err) < 0) {
			set_status(t, true, "%s: %s", path, err ? err : "cannot export");
			free(err);
			free(path);
			return TUI_HANDLED | TUI_REDRAW;
		}
		free(path);
	}
	set_status(t, false, "wrote graph-%lld.dot and graph-%lld.svg in %s", (long long)id, (long long)id, dir);
	return TUI_HANDLED | TUI_REDRAW;
}

int tui_key(struct tui *t, int key)
{
	if (key == TUI_KEY_RESIZE)
		return TUI_HANDLED | TUI_RESIZE | TUI_REDRAW;
	if (t->prompting)
		return prompt_key(t, key);
	const struct binding *b = binding_of(key);
	if (!b || !available(t, b->cmd))
		return 0;
	struct view *v = top(t);
	struct pane *p = &v->pane[v->focus];
	if (b->cmd != C_NEXT && b->cmd != C_PREV)
		set_status(t, false, NULL);
	switch (b->cmd) {
	case C_DOWN:
		pane_move(t, v, p, 1, false);
		break;
	case C_UP:
		pane_move(t, v, p, -1, false);
		break;
	case C_PGDN:
		pane_move(t, v, p, p->height, true);
		break;
	case C_PGUP:
		pane_move(t, v, p, -p->height, true);
		break;
	case C_TOP:
		pane_reset(t, v, p, 1);
		break;
	case C_BOTTOM:
		pane_reset(t, v, p, -1);
		break;
	case C_ENTER:
		return enter(t);
	case C_BACK:
		return back(t, key);
	case C_QUIT:
		return TUI_HANDLED | TUI_QUIT;
	case C_FILTER:
		t->prompting = true;
		return TUI_HANDLED | TUI_REDRAW;
	case C_NEXT:
	case C_PREV: {
		if (!p->filter) {
			set_status(t, false, "no filter: / sets one");
			return TUI_HANDLED | TUI_REDRAW;
		}
		set_status(t, false, NULL);
		int before = p->cursor, at_edge = b->cmd == C_NEXT ? p->cursor >= p->win.n - 1 : p->cursor <= 0;
		bool more = b->cmd == C_NEXT ? p->more_after : p->more_before;
		pane_move(t, v, p, b->cmd == C_NEXT ? 1 : -1, false);
		if (at_edge && !more && p->cursor == before)
			set_status(t, false, "no %s match for '%s'", b->cmd == C_NEXT ? "next" : "previous", p->filter);
		break;
	}
	case C_PANE:
		if (v->npanes < 2)
			return TUI_HANDLED;
		v->focus = 1 - v->focus;
		return TUI_HANDLED | TUI_REDRAW;
	case C_EXPORT:
		return export_graph(t);
	case C_RELOAD:
		return reload(t);
	case C_HELP:
		if (v->cls == &help_class)
			return TUI_HANDLED;
		return push(t, &help_class, &(struct view){.run_id = v->run_id});
	case C_SESSIONS:
		if (v->cls == &sessions_class && !v->run_id)
			return TUI_HANDLED;
		return push(t, &sessions_class, &(struct view){0});
	}
	moved(t, v);
	return TUI_HANDLED | TUI_REDRAW;
}

/* ---- life ---- */

struct tui *tui_new(struct dbq *q, const struct tui_options *o, int rows, int cols, char **err)
{
	struct tui *t = xcalloc(1, sizeof *t);
	t->q = q;
	if (o)
		t->o = *o;
	if (t->o.page <= 0)
		t->o.page = 100;
	if (t->o.window <= 0)
		t->o.window = 1000;
	if (t->o.scan <= 0)
		t->o.scan = 5000;
	if (t->o.profile_max <= 0)
		t->o.profile_max = 20000;
	t->rows = rows;
	t->cols = cols;
	push(t, &runs_class, &(struct view){0});
	if (t->status_error || t->depth == 0) {
		if (err)
			*err = xstrdup(t->status ? t->status : "cannot open the runs");
		tui_free(t);
		return NULL;
	}
	return t;
}

static void free_layout(struct tui *t)
{
	for (int i = 0; i < t->nlines; i++)
		free(t->texts[i]);
	free(t->texts);
	free(t->lines);
	t->texts = NULL;
	t->lines = NULL;
	t->nlines = 0;
}

void tui_free(struct tui *t)
{
	if (!t)
		return;
	while (t->depth > 0)
		view_free(t->stack[--t->depth]);
	free(t->status);
	free_layout(t);
	drop_caches(t);
	free(t);
}

void tui_resize(struct tui *t, int rows, int cols)
{
	t->rows = rows;
	t->cols = cols;
	for (int d = 0; d < t->depth; d++) {
		struct view *v = t->stack[d];
		set_heights(t, v);
		for (int i = 0; i < v->npanes; i++) {
			pane_scroll(&v->pane[i]);
			if (d == t->depth - 1)
				pane_fill(t, v, &v->pane[i]);
		}
	}
}

/* ---- the screen ---- */

/* Every line of the screen goes through here: the program's source lines,
 * strings and names in it shown as a terminal may show them (a control
 * character as \x1b, never raw: sb_add_shown). */
static void put(struct tui *t, char *raw, enum tui_attr attr, int mark_len)
{
	if (t->nlines >= t->rows) {
		free(raw);
		return;
	}
	char *text = shown_dup(raw);
	free(raw);
	t->texts[t->nlines] = text;
	t->lines[t->nlines] = (struct tui_line){text, attr, mark_len};
	t->nlines++;
}

static void put_pane(struct tui *t, struct view *v, int i)
{
	struct pane *p = &v->pane[i];
	bool is_focused = v->focus == i;
	for (int k = 0; k < p->height; k++) {
		int idx = p->top + k;
		if (idx >= p->win.n) {
			if (k == 0 && p->win.n == 0)
				put(t,
				    p->filter ? xasprintf("  (no row matches '%s'%s)", p->filter,
							  p->more_after ? " yet: n reads on" : "")
					      : xstrdup("  (nothing here)"),
				    TUI_A_NORMAL, 0);
			else
				put(t, xstrdup(""), TUI_A_NORMAL, 0);
			continue;
		}
		const struct row *r = &p->win.r[idx];
		char *text = xstrdup(r->text ? r->text : "");
		enum tui_attr attr = TUI_A_NORMAL;
		bool current = r->mark_len && v->current_line && r->line == v->current_line;
		if (current && strlen(text) > 2)
			text[2] = '>';
		if (idx == p->cursor && is_focused)
			attr = TUI_A_SELECTED;
		else if (current)
			attr = TUI_A_CURRENT;
		else if (idx == p->cursor && v->npanes == 2 && i == 0)
			attr = TUI_A_CURSOR;
		put(t, text, attr, r->mark_len);
	}
}

int tui_layout(struct tui *t, const struct tui_line **lines)
{
	free_layout(t);
	int rows = t->rows > 0 ? t->rows : 1;
	t->texts = xcalloc((size_t)rows, sizeof *t->texts);
	t->lines = xcalloc((size_t)rows, sizeof *t->lines);
	struct view *v = top(t);
	if (t->rows < 6 || t->cols < 20) {
		put(t, xstrdup("tjit-tui: the terminal is too small"), TUI_A_ERROR, 0);
	} else {
		/* the title: where the user is */
		size_t len = 16;
		for (int d = 0; d < t->depth; d++)
			len += strlen(t->stack[d]->crumb) + 3;
		char *title = xmalloc(len);
		strcpy(title, "tjit-tui: ");
		for (int d = 0; d < t->depth; d++) {
			if (d)
				strcat(title, " > ");
			strcat(title, t->stack[d]->crumb);
		}
		put(t, title, TUI_A_TITLE, 0);
		put(t, xstrdup(v->header ? v->header : ""), TUI_A_HEADER, 0);
		put_pane(t, v, 0);
		if (v->npanes == 2) {
			put(t,
			    xasprintf("--- %s %s", v->sep ? v->sep : "",
				      v->focus == 1 ? "(focused: Tab goes back to the graph)" : "(Tab: focus)"),
			    TUI_A_SEPARATOR, 0);
			put_pane(t, v, 1);
		}
		while (t->nlines < t->rows - 2)
			put(t, xstrdup(""), TUI_A_NORMAL, 0);
		struct pane *p = &v->pane[v->focus];
		if (t->prompting)
			put(t, xasprintf("/%s", p->filter ? p->filter : ""), TUI_A_STATUS, 0);
		else if (t->status)
			put(t, xstrdup(t->status), t->status_error ? TUI_A_ERROR : TUI_A_STATUS, 0);
		else if (p->filter)
			put(t, xasprintf("filter: %s  (n/N: next/previous match, /: change, Esc in /: clear)", p->filter),
			    TUI_A_STATUS, 0);
		else
			put(t, xstrdup(""), TUI_A_STATUS, 0);
		put(t, tui_footer_text(t), TUI_A_FOOTER, 0);
	}
	while (t->nlines < t->rows)
		put(t, xstrdup(""), TUI_A_NORMAL, 0);
	*lines = t->lines;
	return t->nlines;
}

/* the bytes of the first cols columns of s (one column a code point) */
static size_t clip(const char *s, int cols)
{
	size_t i = 0;
	int c = 0;
	while (s[i] && c < cols) {
		i++;
		while (((unsigned char)s[i] & 0xc0) == 0x80)
			i++;
		c++;
	}
	return i;
}

char *tui_screen_text(struct tui *t)
{
	const struct tui_line *lines;
	int n = tui_layout(t, &lines);
	size_t cap = 1, len = 0;
	for (int i = 0; i < n; i++)
		cap += clip(lines[i].text, t->cols) + 1;
	char *out = xmalloc(cap);
	for (int i = 0; i < n; i++) {
		size_t l = clip(lines[i].text, t->cols);
		memcpy(out + len, lines[i].text, l);
		len += l;
		while (len > 0 && out[len - 1] == ' ')
			len--;
		out[len++] = '\n';
	}
	out[len] = 0;
	return out;
}

/* ---- for tests ---- */

const char *tui_view_name(const struct tui *t)
{
	return top(t) ? top(t)->cls->name : "";
}

int tui_depth(const struct tui *t)
{
	return t->depth;
}

const char *tui_selected(const struct tui *t)
{
	const struct pane *p = focused(t);
	const struct row *r = p ? pane_row(p) : NULL;
	return r ? r->text : NULL;
}

const char *tui_status(const struct tui *t)
{
	return t->status ? t->status : "";
}

const char *tui_filter(const struct tui *t)
{
	const struct pane *p = focused(t);
	return p && p->filter ? p->filter : "";
}

bool tui_prompting(const struct tui *t)
{
	return t->prompting;
}

int tui_focus(const struct tui *t)
{
	return top(t) ? top(t)->focus : 0;
}

const char *tui_current(const struct tui *t)
{
	const struct view *v = top(t);
	if (!v || !v->current_line)
		return NULL;
	const struct pane *p = &v->pane[v->npanes - 1];
	for (int i = 0; i < p->win.n; i++)
		if (p->win.r[i].mark_len && p->win.r[i].line == v->current_line)
			return p->win.r[i].text;
	return NULL;
}

int tui_window(const struct tui *t, bool *more_before, bool *more_after)
{
	const struct pane *p = focused(t);
	if (more_before)
		*more_before = p->more_before;
	if (more_after)
		*more_after = p->more_after;
	return p->win.n;
}
