/* profile.c - tjit-profile's report and diff (profile.h).
 *
 * profile_load() reads one run through db/query.h (every query by an
 * indexed key) and builds the sections; the printers only format them.
 * Guard failures are streamed (there is one per existing entry per
 * recompile, so a frame recompiled n times has n(n+1)/2 of them) and
 * folded into groups by (function, subject) with a hash table, so that
 * a report stays linear in the rows of its run.
 */
#include "profile.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "breaks.h"
#include "hash.h"
#include "json.h"
#include "util.h"

#define WIDTH 80                 /* the report fits an 80-column terminal */
#define MAX_VALUE_LINES 3        /* values printed per guard subject, in lines */
#define MAX_TIME_FUNCTIONS 10    /* functions listed under compile time */

/* memory: the report is a tool's; running out is fatal (util.h's x*) */

#define GROW(arr, n, cap)                                                          \
	do {                                                                       \
		if ((n) >= (cap)) {                                                \
			(cap) = (cap) ? (cap) * 2 : 8;                             \
			(arr) = xrealloc((arr), (size_t)(cap) * sizeof *(arr));    \
		}                                                                  \
	} while (0)

/* ---- a string -> int hash table (keys copied) ---- */

struct strmap {
	char **keys;
	int *vals;
	size_t cap, n;
};

static size_t strmap_slot(const struct strmap *m, const char *k)
{
	size_t i = (size_t)hash_fnv1a_str(k) & (m->cap - 1);
	while (m->keys[i] && strcmp(m->keys[i], k) != 0)
		i = (i + 1) & (m->cap - 1);
	return i;
}

static int strmap_get(const struct strmap *m, const char *k)
{
	if (!m->cap)
		return -1;
	size_t i = strmap_slot(m, k);
	return m->keys[i] ? m->vals[i] : -1;
}

/* Inserts k -> v unless k is there; returns the value now stored. */
static int strmap_put(struct strmap *m, const char *k, int v)
{
	if ((m->n + 1) * 2 > m->cap) {
		struct strmap bigger = {xcalloc(m->cap ? m->cap * 2 : 16, sizeof(char *)), NULL,
					m->cap ? m->cap * 2 : 16, m->n};
		bigger.vals = xcalloc(bigger.cap, sizeof(int));
		for (size_t i = 0; i < m->cap; i++) {
			if (m->keys[i]) {
				size_t j = strmap_slot(&bigger, m->keys[i]);
				bigger.keys[j] = m->keys[i];
				bigger.vals[j] = m->vals[i];
			}
		}
		free(m->keys);
		free(m->vals);
		*m = bigger;
	}
	size_t i = strmap_slot(m, k);
	if (m->keys[i])
		return m->vals[i];
	m->keys[i] = xstrdup(k);
	m->vals[i] = v;
	m->n++;
	return v;
}

static void strmap_release(struct strmap *m)
{
	for (size_t i = 0; i < m->cap; i++)
		free(m->keys[i]);
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof *m);
}

/* ---- the program's lines, from the stored source ---- */

struct lines {
	const char *text;
	size_t *start;               /* of each line, 0-based */
	int n;
};

static void lines_init(struct lines *l, const char *text)
{
	memset(l, 0, sizeof *l);
	if (!text)
		return;
	l->text = text;
	int cap = 0;
	size_t pos = 0;
	for (;;) {
		GROW(l->start, l->n, cap);
		l->start[l->n++] = pos;
		const char *nl = strchr(text + pos, '\n');
		if (!nl)
			break;
		pos = (size_t)(nl - text) + 1;
		if (!text[pos])
			break;
	}
}

/* line (1-based) without indentation and trailing blanks, or NULL */
static char *lines_get(const struct lines *l, int line)
{
	if (!l->text || line < 1 || line > l->n)
		return NULL;
	const char *s = l->text + l->start[line - 1];
	const char *e = strchr(s, '\n');
	size_t len = e ? (size_t)(e - s) : strlen(s);
	while (len && (*s == ' ' || *s == '\t')) {
		s++;
		len--;
	}
	while (len && (s[len - 1] == ' ' || s[len - 1] == '\t' || s[len - 1] == '\r'))
		len--;
	return xstrndup(s, len);
}

/* the source line of file:line when file is the run's program */
static char *source_of(const struct profile *p, const struct lines *l, const char *file, int line)
{
	if (!file || strcmp(file, p->run.program) != 0)
		return NULL;
	return lines_get(l, line);
}

/* ---- guard texts ---- */

static const char *const guard_ops[] = {" == ", " is not ", " is ", " >= ", " <= ", " != ", " > ", " < "};

void profile_guard_split(const char *text, char **subject, char **expected)
{
	const char *best = NULL, *op = NULL;
	for (size_t i = 0; i < sizeof guard_ops / sizeof guard_ops[0]; i++) {
		const char *at = strstr(text, guard_ops[i]);
		if (at && (!best || at < best)) {
			best = at;
			op = guard_ops[i];
		}
	}
	if (!best) {
		*subject = xstrdup(text);
		*expected = NULL;
		return;
	}
	*subject = xstrndup(text, (size_t)(best - text));
	*expected = strcmp(op, " == ") == 0 ? xstrdup(best + strlen(op)) : NULL;
}

/* The source a subject reads, for matching failures to guards:
 * "L['x'].shape[0]" and "L['x'].shape" -> "L['x'].shape";
 * "type(L['n'])" -> "L['n']". malloc'd. */
static char *subject_base(const char *subject)
{
	size_t n = strlen(subject);
	if (n > 6 && strncmp(subject, "type(", 5) == 0 && subject[n - 1] == ')')
		return xstrndup(subject + 5, n - 6);
	if (n > 4 && strncmp(subject, "len(", 4) == 0 && subject[n - 1] == ')')
		return xstrndup(subject + 4, n - 5);
	const char *sh = strstr(subject, ".shape[");
	if (sh && subject[n - 1] == ']')
		return xstrndup(subject, (size_t)(sh - subject) + 6);
	return xstrdup(subject);
}

/* the source under a subject: "L['x'].shape[0]" -> "L['x']" */
static char *subject_source(const char *subject)
{
	char *base = subject_base(subject);
	const char *suffixes[] = {".shape", ".dtype", ".requires_grad"};
	size_t n = strlen(base);
	for (size_t i = 0; i < 3; i++) {
		size_t k = strlen(suffixes[i]);
		if (n > k && strcmp(base + n - k, suffixes[i]) == 0) {
			base[n - k] = 0;
			break;
		}
	}
	return base;
}

char *profile_source_name(const char *source)
{
	struct strbuf sb = STRBUF_INIT;
	const char *s = source;
	while (*s) {
		if ((s[0] == 'L' || s[0] == 'G') && s[1] == '[' && s[2] == '\'') {
			const char *end = strstr(s + 3, "']");
			if (!end) {
				sb_release(&sb);
				return NULL;
			}
			sb_add(&sb, s + 3, (size_t)(end - s - 3));
			s = end + 2;
			continue;
		}
		sb_putc(&sb, *s++);
	}
	char *name = sb_detach(&sb);
	if (!name || !*name || strstr(name, "___stack") || strchr(name, '\'')) {
		free(name);
		return NULL;
	}
	return name;
}

/* ".shape[D]" at the end of subject: D, else -1 */
static int shape_dim(const char *subject)
{
	const char *sh = strstr(subject, ".shape[");
	if (!sh)
		return -1;
	char *end = NULL;
	long d = strtol(sh + 7, &end, 10);
	if (end == sh + 7 || strcmp(end, "]") != 0 || d < 0 || d > 64)
		return -1;
	return (int)d;
}

static bool is_int_text(const char *s)
{
	if (*s == '-')
		s++;
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

static bool is_float_text(const char *s)
{
	if (!*s)
		return false;
	if (strcmp(s, "inf") == 0 || strcmp(s, "-inf") == 0 || strcmp(s, "nan") == 0)
		return true;
	char *end = NULL;
	strtod(s, &end);
	return end && *end == 0 && strpbrk(s, "0123456789");
}

/* ---- loading ---- */

struct group {                   /* a guard subject being folded */
	int fn, g;
	int64_t last_compile;
	struct strmap values;
	char *first_label;
};

struct loader {
	struct profile *p;
	struct strmap fn_by_key;     /* "function\1file\1line" -> functions[] index */
	struct strmap group_by_key;  /* "fn\1subject" -> groups[] index */
	struct group *groups;
	int ngroups, cap_groups;
	int64_t *frame_ids;          /* sorted, with frame_fn beside */
	int *frame_fn;
	int nframes;
	int *fn_cap;                 /* capacity of each function's guards */
	struct lines lines;
};

static int function_of_frame(const struct loader *L, int64_t frame_id)
{
	int lo = 0, hi = L->nframes - 1;
	while (lo <= hi) {
		int mid = lo + (hi - lo) / 2;
		if (L->frame_ids[mid] == frame_id)
			return L->frame_fn[mid];
		if (L->frame_ids[mid] < frame_id)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return -1;
}

static void add_value(struct profile_guard *g, struct group *gr, const char *v)
{
	if (!v)
		return;
	if (strmap_get(&gr->values, v) >= 0)
		return;
	strmap_put(&gr->values, v, g->nvalues);
	g->values = xrealloc(g->values, (size_t)(g->nvalues + 1) * sizeof *g->values);
	g->values[g->nvalues++] = xstrdup(v);
}

static int on_failure(void *ctx, const struct dbq_failure *f)
{
	struct loader *L = ctx;
	struct profile *p = L->p;
	int fn = function_of_frame(L, f->frame_id);
	if (fn < 0)
		return 0;
	char *subject, *expected;
	profile_guard_split(f->guard_text, &subject, &expected);
	char *key = xasprintf("%d\1%s", fn, subject);
	int gi = strmap_get(&L->group_by_key, key);
	if (gi < 0) {
		struct profile_function *pf = &p->functions[fn];
		GROW(pf->guards, pf->nguards, L->fn_cap[fn]);
		struct profile_guard *g = &pf->guards[pf->nguards];
		memset(g, 0, sizeof *g);
		g->subject = xstrdup(subject);
		g->text = xstrdup(f->guard_text);
		GROW(L->groups, L->ngroups, L->cap_groups);
		gi = L->ngroups++;
		struct group *gr = &L->groups[gi];
		memset(gr, 0, sizeof *gr);
		gr->fn = fn;
		gr->g = pf->nguards++;
		gr->first_label = xstrdup(f->failed_label);
		strmap_put(&L->group_by_key, key, gi);
	}
	struct group *gr = &L->groups[gi];
	struct profile_guard *g = &p->functions[gr->fn].guards[gr->g];
	g->failures++;
	if (gr->last_compile != f->compile_id) {
		gr->last_compile = f->compile_id;
		g->recompiles++;
	}
	add_value(g, gr, expected);
	add_value(g, gr, f->value_seen);
	free(key);
	free(subject);
	free(expected);
	return 0;
}

/* the guard of compile label whose check the failure text is */
static void find_guard_place(struct dbq *q, struct loader *L, struct profile_guard *g, const char *label)
{
	struct dbq_guard *gs = NULL;
	int n = 0;
	if (dbq_guards(q, L->p->run.id, label, &gs, &n, NULL) < 0)
		return;
	char *want = subject_base(g->subject);
	int found = -1;
	for (int i = 0; i < n && found < 0; i++)
		if (strcmp(gs[i].text, g->text) == 0)
			found = i;
	for (int i = 0; i < n && found < 0; i++) {
		char *subject, *expected;
		profile_guard_split(gs[i].text, &subject, &expected);
		char *base = subject_base(subject);
		if (strcmp(base, want) == 0)
			found = i;
		free(base);
		free(subject);
		free(expected);
	}
	if (found >= 0 && gs[found].file && gs[found].line > 0) {
		g->has_place = true;
		g->place.file = xstrdup(gs[found].file);
		g->place.line = gs[found].line;
		g->place.source = source_of(L->p, &L->lines, gs[found].file, gs[found].line);
	}
	free(want);
	dbq_guards_free(gs, n);
}

/* "file:line in function" */
static void parse_place(const char *s, size_t len, struct profile_place *out)
{
	memset(out, 0, sizeof *out);
	char *line = xstrndup(s, len);
	char *in = strstr(line, " in ");
	char *last_in = in;
	while (in) { /* the last " in ": a path may hold one */
		last_in = in;
		in = strstr(in + 1, " in ");
	}
	if (last_in) {
		out->function = xstrdup(last_in + 4);
		*last_in = 0;
	}
	char *colon = strrchr(line, ':');
	if (colon && colon[1]) {
		char *end = NULL;
		long n = strtol(colon + 1, &end, 10);
		if (end && *end == 0 && n > 0) {
			out->line = (int)n;
			*colon = 0;
		}
	}
	out->file = xstrdup(line);
	free(line);
}

static void place_release(struct profile_place *pl)
{
	free(pl->file);
	free(pl->function);
	free(pl->source);
	memset(pl, 0, sizeof *pl);
}

static void load_breaks(struct profile *p, struct loader *L, struct dbq_break *b, int n)
{
	p->brk = xcalloc((size_t)n, sizeof *p->brk);
	p->nbreaks = n;
	for (int i = 0; i < n; i++) {
		struct profile_break *r = &p->brk[i];
		r->code = xstrdup(b[i].code);
		r->category = xstrdup(b[i].category);
		r->message = xstrdup(b[i].message);
		r->col = b[i].col;
		r->compiles = b[i].compiles;
		r->hits = b[i].hits;
		r->fullgraph_errors = b[i].fullgraph_errors;
		p->breaks += b[i].compiles;
		for (int k = 0; k < breaks_count(); k++) {
			const struct break_info *info = breaks_info(k);
			if (info && strcmp(info->code, r->code) == 0) {
				r->hint = info->hint;
				break;
			}
		}
		/* the user stack, outermost first */
		int cap = 0;
		const char *s = b[i].user_stack;
		while (*s) {
			const char *e = strchr(s, '\n');
			size_t len = e ? (size_t)(e - s) : strlen(s);
			if (len) {
				GROW(r->stack, r->nstack, cap);
				struct profile_place *pl = &r->stack[r->nstack++];
				parse_place(s, len, pl);
				pl->source = source_of(p, &L->lines, pl->file, pl->line);
			}
			s += len;
			if (*s == '\n')
				s++;
		}
		r->at.file = xstrdup(b[i].file);
		r->at.line = b[i].line;
		r->at.function = r->nstack ? xstrdup(r->stack[r->nstack - 1].function) : NULL;
		r->at.source = source_of(p, &L->lines, b[i].file, b[i].line);
	}
}

/* The frame evaluator never sees a disabled function (the VM runs it), so
 * its calls are known from the break at each call: code TJB007, whose
 * message ends with the function's name, hit once per call. */
static void add_disabled(struct profile *p)
{
	const struct break_info *info = NULL;
	for (int k = 0; k < breaks_count(); k++)
		if (strcmp(breaks_info(k)->name, "DISABLED") == 0)
			info = breaks_info(k);
	if (!info)
		return;
	for (int i = 0; i < p->nbreaks; i++) {
		const struct profile_break *b = &p->brk[i];
		if (strcmp(b->code, info->code) != 0 || b->hits <= 0)
			continue;
		const char *name = strrchr(b->message, ' ');
		name = name ? name + 1 : b->message;
		p->eager = xrealloc(p->eager, (size_t)(p->neager + 1) * sizeof *p->eager);
		struct profile_eager *e = &p->eager[p->neager++];
		memset(e, 0, sizeof *e);
		e->function = xstrdup(name);
		e->called_at = xasprintf("%s:%d", b->at.file, b->at.line);
		e->reason = "disabled";
		e->eager_calls = b->hits;
		p->eager_calls += b->hits;
	}
}

static int parse_cache_limit(const char *config)
{
	const char *at = strstr(config, "cache_size_limit=");
	if (!at)
		return 0;
	at += strlen("cache_size_limit=");
	if (strncmp(at, "unlimited", 9) == 0)
		return -1;
	long n = strtol(at, NULL, 10);
	return n > 0 && n < 1 << 30 ? (int)n : 0;
}

struct frame_fn {
	int64_t id;
	int fn;
};

static int by_frame_id(const void *a, const void *b)
{
	int64_t x = ((const struct frame_fn *)a)->id, y = ((const struct frame_fn *)b)->id;
	return x < y ? -1 : x > y;
}

static const struct profile *sort_p;

static int by_recompiles(const void *a, const void *b)
{
	const struct profile_function *x = &sort_p->functions[*(const int *)a];
	const struct profile_function *y = &sort_p->functions[*(const int *)b];
	int64_t rx = x->recompiles + x->misses, ry = y->recompiles + y->misses;
	if (rx != ry)
		return rx > ry ? -1 : 1;
	return x->first_frame - y->first_frame;
}

static int by_time(const void *a, const void *b)
{
	const struct profile_function *x = &sort_p->functions[*(const int *)a];
	const struct profile_function *y = &sort_p->functions[*(const int *)b];
	if (x->total_ms != y->total_ms)
		return x->total_ms > y->total_ms ? -1 : 1;
	return x->first_frame - y->first_frame;
}

static int guards_by_recompiles(const void *a, const void *b)
{
	const struct profile_guard *x = a, *y = b;
	if (x->recompiles != y->recompiles)
		return x->recompiles > y->recompiles ? -1 : 1;
	if (x->nvalues != y->nvalues)
		return x->nvalues > y->nvalues ? -1 : 1;
	return strcmp(x->subject, y->subject);
}

static void suggest(struct profile *p, const char *kind, const char *function, const char *subject, int64_t count,
		    char *text)
{
	p->suggestions = xrealloc(p->suggestions, (size_t)(p->nsuggestions + 1) * sizeof *p->suggestions);
	struct profile_suggestion *s = &p->suggestions[p->nsuggestions++];
	s->kind = kind;
	s->function = xstrdup(function);
	s->subject = xstrdup(subject);
	s->count = count;
	s->text = text;
}

static void make_suggestions(struct profile *p)
{
	for (int r = 0; r < p->nranked; r++) {
		const struct profile_function *f = &p->functions[p->ranked[r]];
		for (int i = 0; i < f->nguards; i++) {
			const struct profile_guard *g = &f->guards[i];
			if (g->nvalues < PROFILE_SUGGEST_VALUES)
				continue;
			int dim = shape_dim(g->subject);
			if (dim >= 0) {
				char *src = subject_source(g->subject);
				char *name = profile_source_name(src);
				char *text = name ? xasprintf("%s: `%s` took %d values: mark_dynamic(%s, %d) or dynamic=True",
							      f->function, g->subject, g->nvalues, name, dim)
						  : xasprintf("%s: `%s` took %d values: compile it with dynamic=True",
							      f->function, g->subject, g->nvalues);
				suggest(p, "mark_dynamic", f->function, g->subject, g->nvalues, text);
				free(name);
				free(src);
				continue;
			}
			bool plain = !strchr(g->subject, '(') && !strstr(g->subject, ".shape") &&
				     !strstr(g->subject, ".dtype") && !strstr(g->subject, ".requires_grad");
			bool ints = plain, floats = plain;
			for (int k = 0; k < g->nvalues; k++) {
				ints = ints && is_int_text(g->values[k]);
				floats = floats && is_float_text(g->values[k]);
			}
			char *name = profile_source_name(g->subject);
			const char *what = name ? name : "it";
			if (ints) {
				suggest(p, "int_values", f->function, g->subject, g->nvalues,
					xasprintf("%s: `%s` took %d values: an int is a constant of the graph, so each "
						  "value compiles anew; pass %s as a tensor, or keep it out of the "
						  "compiled function",
						  f->function, g->subject, g->nvalues, what));
			} else if (floats) {
				suggest(p, "float_values", f->function, g->subject, g->nvalues,
					xasprintf("%s: `%s` took %d values: a float is a constant of the graph, so "
						  "each value compiles anew; pass %s as a tensor",
						  f->function, g->subject, g->nvalues, what));
			} else {
				suggest(p, "values", f->function, g->subject, g->nvalues,
					xasprintf("%s: `%s` took %d values, each compiled anew: keep it the same "
						  "from call to call, or out of the compiled function",
						  f->function, g->subject, g->nvalues));
			}
			free(name);
		}
	}
	/* the cache limit */
	int limit = p->cache_limit > 0 ? p->cache_limit : PROFILE_DEFAULT_CACHE_LIMIT;
	const struct profile_function *worst = NULL;
	for (int i = 0; i < p->nfunctions; i++) {
		const struct profile_function *f = &p->functions[i];
		if (!worst || f->max_entries > worst->max_entries || (f->hit_limit && !worst->hit_limit))
			worst = f;
	}
	if (!worst)
		return;
	if (p->limit_hit) {
		for (int i = 0; i < p->nfunctions; i++) {
			const struct profile_function *f = &p->functions[i];
			if (!f->hit_limit)
				continue;
			suggest(p, "cache_limit_hit", f->function, NULL, f->max_entries + 1,
				xasprintf("%s (%s:%d) reached cache_size_limit %lld and ran %lld calls eagerly: it needs "
					  "more than %lld entries; `tjit-profile run` lifts the limit and shows how many",
					  f->function, f->file, f->line, (long long)f->max_entries,
					  (long long)f->eager_calls, (long long)f->max_entries));
		}
	} else if (p->limit_needed > limit || (p->cache_limit < 0 && p->limit_needed > PROFILE_DEFAULT_CACHE_LIMIT)) {
		suggest(p, "cache_limit", worst->function, NULL, p->limit_needed,
			xasprintf("this run needs cache_size_limit %lld (%s in %s:%d has %lld entries; the %s is %d): "
				  "--cache-size-limit %lld, or remove the recompiles above",
				  (long long)p->limit_needed, worst->function, worst->file, worst->line,
				  (long long)worst->max_entries, p->cache_limit > 0 ? "limit" : "default",
				  p->cache_limit > 0 ? p->cache_limit : PROFILE_DEFAULT_CACHE_LIMIT,
				  (long long)p->limit_needed));
	}
}

static void loader_release(struct loader *L)
{
	strmap_release(&L->fn_by_key);
	strmap_release(&L->group_by_key);
	for (int i = 0; i < L->ngroups; i++) {
		strmap_release(&L->groups[i].values);
		free(L->groups[i].first_label);
	}
	free(L->groups);
	free(L->frame_ids);
	free(L->frame_fn);
	free(L->fn_cap);
	free(L->lines.start);
}

/* a frame that ran eagerly: the report's "ran eagerly" list */
static void add_eager(struct profile *p, const struct dbq_frame *f)
{
	p->eager = xrealloc(p->eager, (size_t)(p->neager + 1) * sizeof *p->eager);
	struct profile_eager *e = &p->eager[p->neager++];
	e->function = xstrdup(f->function);
	e->file = xstrdup(f->file);
	e->line = f->line;
	e->resume_line = f->resume_pc > 0 ? (f->resume_line > 0 ? f->resume_line : -1) : 0;
	e->reason = !f->eager_reason                        ? "fallback"
		    : strcmp(f->eager_reason, "disabled") == 0    ? "disabled"
		    : strcmp(f->eager_reason, "cache_limit") == 0 ? "cache_limit"
		    : strcmp(f->eager_reason, "frozen_miss") == 0 ? "frozen_miss"
								  : "fallback";
	e->eager_calls = f->eager_calls;
	e->calls = f->calls;
	e->called_at = NULL;
}

/* the functions ranked by recompiles and by compile time */
static void rank_functions(struct profile *p)
{
	p->ranked = xcalloc((size_t)(p->nfunctions ? p->nfunctions : 1), sizeof *p->ranked);
	p->by_time = xcalloc((size_t)(p->nfunctions ? p->nfunctions : 1), sizeof *p->by_time);
	for (int i = 0; i < p->nfunctions; i++) {
		const struct profile_function *f = &p->functions[i];
		if (f->recompiles + f->misses > 0 || f->nguards > 0)
			p->ranked[p->nranked++] = i;
		if (f->compiles > 0)
			p->by_time[p->nby_time++] = i;
	}
	sort_p = p;
	qsort(p->ranked, (size_t)p->nranked, sizeof *p->ranked, by_recompiles);
	qsort(p->by_time, (size_t)p->nby_time, sizeof *p->by_time, by_time);
	sort_p = NULL;
}

int profile_load(struct dbq *q, int64_t run_id, struct profile *p, char **err)
{
	memset(p, 0, sizeof *p);
	if (err)
		*err = NULL;
	if (dbq_run_get(q, run_id, &p->run, err) < 0)
		return -1;
	p->db_path = xstrdup(dbq_path(q));
	p->cache_limit = parse_cache_limit(p->run.config);

	struct loader L;
	memset(&L, 0, sizeof L);
	L.p = p;
	lines_init(&L.lines, p->run.source_text);

	struct dbq_frame *fr = NULL;
	int nfr = 0;
	if (dbq_frames(q, run_id, &fr, &nfr, err) < 0)
		goto fail;
	p->frames = nfr;
	L.nframes = nfr;
	L.frame_ids = xcalloc((size_t)nfr, sizeof *L.frame_ids);
	L.frame_fn = xcalloc((size_t)nfr, sizeof *L.frame_fn);
	int cap_fn = 0;
	struct frame_fn *pairs = xcalloc((size_t)nfr, sizeof *pairs);
	for (int i = 0; i < nfr; i++) {
		const struct dbq_frame *f = &fr[i];
		char *key = xasprintf("%s\1%s\1%d", f->function, f->file, f->line);
		int fn = strmap_get(&L.fn_by_key, key);
		if (fn < 0) {
			GROW(p->functions, p->nfunctions, cap_fn);
			fn = p->nfunctions++;
			struct profile_function *pf = &p->functions[fn];
			memset(pf, 0, sizeof *pf);
			pf->function = xstrdup(f->function);
			pf->file = xstrdup(f->file);
			pf->line = f->line;
			pf->first_frame = f->frame_index;
			strmap_put(&L.fn_by_key, key, fn);
		}
		free(key);
		struct profile_function *pf = &p->functions[fn];
		pf->nframes++;
		if (f->frame_index < pf->first_frame)
			pf->first_frame = f->frame_index;
		int64_t compiled = f->compiles - f->cache_limit - f->frozen_miss;
		pf->compiles += compiled;
		pf->recompiles += f->recompiles;
		pf->misses += f->cache_limit + f->frozen_miss;
		if (f->entries > pf->max_entries)
			pf->max_entries = f->entries;
		if (f->cache_limit)
			pf->hit_limit = true;
		pf->calls += f->calls;
		pf->cache_hits += f->cache_hits;
		pf->eager_calls += f->eager_calls;
		pf->graphs += f->graphs;
		pf->ops += f->ops;
		pf->errors += f->errors;
		pf->trace_ms += f->trace_ms;
		pf->guard_ms += f->guard_ms;
		pf->backend_ms += f->backend_ms;
		pf->total_ms += f->total_ms;
		pf->guard_checks += f->guard_checks;
		pf->guard_check_ms += f->guard_check_ms;

		p->compiles += compiled;
		p->recompiles += f->recompiles;
		p->misses += f->cache_limit + f->frozen_miss;
		p->graphs += f->graphs;
		p->ops += f->ops;
		p->errors += f->errors;
		p->calls += f->calls;
		p->cache_hits += f->cache_hits;
		p->eager_calls += f->eager_calls;
		p->trace_ms += f->trace_ms;
		p->guard_ms += f->guard_ms;
		p->backend_ms += f->backend_ms;
		p->total_ms += f->total_ms;
		p->guard_checks += f->guard_checks;
		p->guard_check_ms += f->guard_check_ms;
		if (f->entries > p->limit_needed)
			p->limit_needed = f->entries;
		if (f->cache_limit)
			p->limit_hit = true;

		if (f->eager_calls > 0)
			add_eager(p, f);
		pairs[i].id = f->id;
		pairs[i].fn = fn;
	}
	qsort(pairs, (size_t)nfr, sizeof *pairs, by_frame_id);
	for (int i = 0; i < nfr; i++) {
		L.frame_ids[i] = pairs[i].id;
		L.frame_fn[i] = pairs[i].fn;
	}
	free(pairs);
	dbq_frames_free(fr, nfr);
	L.fn_cap = xcalloc((size_t)(p->nfunctions ? p->nfunctions : 1), sizeof *L.fn_cap);

	struct dbq_break *b = NULL;
	int nb = 0;
	if (dbq_breaks(q, run_id, &b, &nb, err) < 0)
		goto fail;
	load_breaks(p, &L, b, nb);
	dbq_breaks_free(b, nb);
	add_disabled(p);
	if (dbq_backend_phases(q, run_id, &p->phases, &p->nphases, err) < 0)
		goto fail;
	if (dbq_kernel_counts(q, run_id, &p->kernels, &p->kernels_cached, err) < 0)
		goto fail;

	if (dbq_each_failure(q, run_id, on_failure, &L, err) < 0)
		goto fail;
	for (int i = 0; i < L.ngroups; i++) {
		struct group *gr = &L.groups[i];
		find_guard_place(q, &L, &p->functions[gr->fn].guards[gr->g], gr->first_label);
	}
	for (int i = 0; i < p->nfunctions; i++) {
		struct profile_function *f = &p->functions[i];
		if (f->nguards > 1)
			qsort(f->guards, (size_t)f->nguards, sizeof *f->guards, guards_by_recompiles);
	}

	rank_functions(p);
	make_suggestions(p);
	loader_release(&L);
	return 0;
fail:
	loader_release(&L);
	profile_release(p);
	return -1;
}

void profile_release(struct profile *p)
{
	if (!p)
		return;
	dbq_run_release(&p->run);
	free(p->db_path);
	for (int i = 0; i < p->nbreaks; i++) {
		struct profile_break *b = &p->brk[i];
		free(b->code);
		free(b->category);
		free(b->message);
		place_release(&b->at);
		for (int k = 0; k < b->nstack; k++)
			place_release(&b->stack[k]);
		free(b->stack);
	}
	free(p->brk);
	for (int i = 0; i < p->nfunctions; i++) {
		struct profile_function *f = &p->functions[i];
		free(f->function);
		free(f->file);
		for (int k = 0; k < f->nguards; k++) {
			struct profile_guard *g = &f->guards[k];
			free(g->subject);
			free(g->text);
			for (int v = 0; v < g->nvalues; v++)
				free(g->values[v]);
			free(g->values);
			place_release(&g->place);
		}
		free(f->guards);
	}
	free(p->functions);
	free(p->ranked);
	free(p->by_time);
	for (int i = 0; i < p->neager; i++) {
		free(p->eager[i].function);
		free(p->eager[i].file);
		free(p->eager[i].called_at);
	}
	free(p->eager);
	for (int i = 0; i < p->nsuggestions; i++) {
		free(p->suggestions[i].function);
		free(p->suggestions[i].subject);
		free(p->suggestions[i].text);
	}
	free(p->suggestions);
	dbq_phases_free(p->phases, p->nphases);
	memset(p, 0, sizeof *p);
}

/* ---- text: widths, wrapping, colors ---- */

struct style {
	const char *title, *code, *place, *good, *bad, *dim, *off;
};

static struct style style_of(bool color)
{
	if (!color)
		return (struct style){"", "", "", "", "", "", ""};
	return (struct style){"\033[1m", "\033[33m", "\033[36m", "\033[32m", "\033[31m", "\033[2m", "\033[0m"};
}

/* display width: code points (the report has no wide characters of its own) */
static int width_of(const char *s, size_t n)
{
	int w = 0;
	for (size_t i = 0; i < n; i++)
		if (((unsigned char)s[i] & 0xc0) != 0x80)
			w++;
	return w;
}

/* the byte length of the first w columns of s */
static size_t bytes_of(const char *s, int w)
{
	size_t i = 0;
	int cols = 0;
	while (s[i]) {
		if (((unsigned char)s[i] & 0xc0) != 0x80) {
			if (cols == w)
				break;
			cols++;
		}
		i++;
	}
	return i;
}

/* s as a terminal may show it (sb_add_shown), cut to w columns, with "…"
 * when it was longer */
static void put_clipped(struct strbuf *out, const char *raw, int w)
{
	char *s = shown_dup(raw);
	int sw = width_of(s, strlen(s));
	if (sw <= w)
		sb_puts(out, s);
	else if (w >= 1) {
		sb_add(out, s, bytes_of(s, w - 1));
		sb_puts(out, "…");
	}
	free(s);
}

/* text wrapped at WIDTH at spaces: the first line after first (already
 * printed, first_w columns wide), the others after rest */
static void put_wrapped(struct strbuf *out, int first_w, const char *rest, const char *raw)
{
	int col = first_w;
	int rest_w = width_of(rest, strlen(rest));
	bool line_start = true;
	char *text = shown_dup(raw);
	const char *s = text;
	while (*s) {
		while (*s == ' ')
			s++;
		if (!*s)
			break;
		const char *e = s;
		while (*e && *e != ' ')
			e++;
		int w = width_of(s, (size_t)(e - s));
		if ((!line_start && col + 1 + w > WIDTH) || (line_start && col > rest_w && col + w > WIDTH)) {
			while (out->len && out->buf[out->len - 1] == ' ')
				out->len--;
			sb_putc(out, '\n');
			sb_puts(out, rest);
			col = rest_w;
			line_start = true;
		}
		if (!line_start) {
			sb_putc(out, ' ');
			col++;
		}
		/* a word wider than a line: cut it */
		while (col + w > WIDTH && WIDTH - col > 8) {
			size_t n = bytes_of(s, WIDTH - col);
			sb_add(out, s, n);
			sb_putc(out, '\n');
			sb_puts(out, rest);
			col = rest_w;
			s += n;
			w = width_of(s, (size_t)(e - s));
		}
		sb_add(out, s, (size_t)(e - s));
		col += w;
		line_start = false;
		s = e;
	}
	sb_putc(out, '\n');
	free(text);
}

/* a whole paragraph: prefix, then text wrapped under rest */
static void put_para(struct strbuf *out, const char *prefix, const char *rest, const char *text)
{
	sb_puts(out, prefix);
	put_wrapped(out, width_of(prefix, strlen(prefix)), rest, text);
}

static void fmt_ms(char *buf, size_t n, double ms)
{
	if (ms < 10)
		snprintf(buf, n, "%.2f ms", ms);
	else if (ms < 1000)
		snprintf(buf, n, "%.1f ms", ms);
	else
		snprintf(buf, n, "%.2f s", ms / 1000);
}

static double pct(double part, double whole)
{
	return whole > 0 ? 100.0 * part / whole : 0;
}

static const char *plural(int64_t n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}

static void section(struct strbuf *out, const struct style *st, const char *title)
{
	sb_printf(out, "\n%s%s%s\n", st->title, title, st->off);
}

/* "f (prog.tj:3)" */
static char *fn_label(const char *function, const char *file, int line)
{
	return xasprintf("%s (%s:%d)", function, file, line);
}

static void put_place_lines(struct strbuf *out, const struct style *st, const struct profile_place *pl,
			    const char *indent)
{
	char *at = pl->function ? xasprintf("%s:%d in %s", pl->file, pl->line, pl->function)
				: xasprintf("%s:%d", pl->file, pl->line);
	sb_printf(out, "%s%s", indent, st->place);
	put_clipped(out, at, WIDTH - (int)strlen(indent));
	sb_printf(out, "%s\n", st->off);
	free(at);
	if (pl->source && *pl->source) {
		sb_printf(out, "%s    ", indent);
		put_clipped(out, pl->source, WIDTH - (int)strlen(indent) - 4);
		sb_putc(out, '\n');
	}
}

static const char *reason_words(const char *reason)
{
	if (strcmp(reason, "disabled") == 0)
		return "disabled";
	if (strcmp(reason, "cache_limit") == 0)
		return "cache_size_limit reached";
	if (strcmp(reason, "frozen_miss") == 0)
		return "frozen, and no entry matched";
	return "a compile or a compiled run failed and fell back";
}

static void print_header(const struct profile *p, struct strbuf *out, const struct style *st)
{
	struct strbuf title = STRBUF_INIT;
	sb_printf(&title, "Run %lld of %s · ", (long long)p->run.id, p->db_path);
	sb_puts(out, st->title);
	put_clipped(out, title.buf, WIDTH);
	put_clipped(out, p->run.program, WIDTH - width_of(title.buf, title.len));
	sb_printf(out, "%s\n", st->off);
	sb_release(&title);
	put_para(out, "  command: ", "    ", p->run.command);
	char when[64] = "?";
	time_t t = (time_t)p->run.started_at;
	struct tm tm;
	if (localtime_r(&t, &tm))
		strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
	sb_printf(out, "  started %s", when);
	if (p->run.finished) {
		char d[32];
		fmt_ms(d, sizeof d, (p->run.ended_at - p->run.started_at) * 1000);
		sb_printf(out, " · ran %s · exit status %d\n", d, p->run.exit_status);
	} else {
		char state[64];
		dbq_unfinished_text(p->run.pid, state, sizeof state);
		sb_printf(out, " · did not finish (%s)\n", state);
	}
	char *config = p->run.backend ? xasprintf("%s backend=%s", p->run.config, p->run.backend)
				      : xstrdup(p->run.config);
	put_para(out, "  config: ", "    ", config);
	free(config);
}

static void print_breaks(const struct profile *p, struct strbuf *out, const struct style *st)
{
	char title[160];
	int64_t hits = 0;
	for (int i = 0; i < p->nbreaks; i++)
		hits += p->brk[i].hits;
	if (!p->nbreaks) {
		section(out, st, "Graph breaks: none");
		return;
	}
	snprintf(title, sizeof title, "Graph breaks: %d %s, in %lld %s, hit %lld %s", p->nbreaks,
		 plural(p->nbreaks, "place", "places"), (long long)p->breaks, plural(p->breaks, "compile", "compiles"),
		 (long long)hits, plural(hits, "time", "times"));
	section(out, st, title);
	for (int i = 0; i < p->nbreaks; i++) {
		const struct profile_break *b = &p->brk[i];
		char num[16];
		snprintf(num, sizeof num, "%3d. ", i + 1);
		sb_printf(out, "%s%s%s%s (%s) · hit %lld %s · broke %lld %s\n", num, st->code, b->code, st->off,
			  b->category, (long long)b->hits, plural(b->hits, "time", "times"), (long long)b->compiles,
			  plural(b->compiles, "compile", "compiles"));
		put_para(out, "     ", "     ", b->message);
		if (b->fullgraph_errors > 0) {
			char *why = xasprintf("fullgraph=True: raised Unsupported in %lld %s", (long long)b->fullgraph_errors,
					      plural(b->fullgraph_errors, "compile", "compiles"));
			put_para(out, "     ", "     ", why);
			free(why);
		}
		if (b->nstack > 0) {
			for (int k = 0; k < b->nstack; k++) {
				struct profile_place pl = b->stack[k];
				if (k == b->nstack - 1 && !pl.source)
					pl.source = b->at.source;
				put_place_lines(out, st, &pl, "     ");
			}
		} else {
			put_place_lines(out, st, &b->at, "     ");
		}
		if (b->hint)
			put_para(out, "     hint: ", "       ", b->hint);
	}
}

static void print_recompiles(const struct profile *p, struct strbuf *out, const struct style *st)
{
	char title[160];
	if (!p->nranked) {
		section(out, st, "Recompiles: none");
		return;
	}
	if (p->misses)
		snprintf(title, sizeof title, "Recompiles: %lld, and %lld %s not compiled, in %d %s",
			 (long long)p->recompiles, (long long)p->misses, plural(p->misses, "miss", "misses"),
			 p->nranked, plural(p->nranked, "function", "functions"));
	else
		snprintf(title, sizeof title, "Recompiles: %lld in %d %s", (long long)p->recompiles, p->nranked,
			 plural(p->nranked, "function", "functions"));
	section(out, st, title);
	for (int r = 0; r < p->nranked; r++) {
		const struct profile_function *f = &p->functions[p->ranked[r]];
		char *label = fn_label(f->function, f->file, f->line);
		struct strbuf head = STRBUF_INIT, plain = STRBUF_INIT, clipped = STRBUF_INIT;
		put_clipped(&clipped, label, WIDTH - 6);
		sb_printf(&head, "%3d. %s%s%s", r + 1, st->place, clipped.buf, st->off);
		sb_printf(&plain, "%3d. %s", r + 1, clipped.buf);
		sb_release(&clipped);
		struct strbuf tail = STRBUF_INIT;
		sb_printf(&tail, "· %lld %s", (long long)f->recompiles, plural(f->recompiles, "recompile", "recompiles"));
		if (f->max_entries > 0)
			sb_printf(&tail, " · %lld cache %s", (long long)f->max_entries,
				  plural(f->max_entries, "entry", "entries"));
		if (f->hit_limit)
			sb_puts(&tail, " · limit reached");
		else if (f->misses)
			sb_printf(&tail, " · %lld frozen %s", (long long)f->misses, plural(f->misses, "miss", "misses"));
		sb_puts(out, head.buf);
		sb_putc(out, ' ');
		put_wrapped(out, width_of(plain.buf, plain.len) + 1, "     ", tail.buf);
		sb_release(&head);
		sb_release(&plain);
		sb_release(&tail);
		free(label);
		for (int i = 0; i < f->nguards; i++) {
			const struct profile_guard *g = &f->guards[i];
			/* the subject, then as many values as MAX_VALUE_LINES lines hold */
			struct strbuf list = STRBUF_INIT;
			sb_printf(&list, "%s failed %lld %s, took %d %s:", g->subject, (long long)g->recompiles,
				  plural(g->recompiles, "time", "times"), g->nvalues, plural(g->nvalues, "value", "values"));
			int budget = (WIDTH - 7) * MAX_VALUE_LINES - 16;
			int shown = 0;
			for (int k = 0; k < g->nvalues; k++) {
				int w = width_of(g->values[k], strlen(g->values[k]));
				if (shown && (int)list.len + w + 2 > budget)
					break;
				sb_puts(&list, shown ? ", " : " ");
				sb_puts(&list, g->values[k]);
				shown++;
			}
			if (shown < g->nvalues)
				sb_printf(&list, ", … (%d more)", g->nvalues - shown);
			put_para(out, "     ", "       ", list.buf);
			sb_release(&list);
			if (g->has_place) {
				char *at = xasprintf("%s:%d", g->place.file, g->place.line);
				sb_printf(out, "       guard from %s", st->place);
				put_clipped(out, at, WIDTH - 18);
				sb_puts(out, st->off);
				int used = 18 + width_of(at, strlen(at)) + 2;
				if (g->place.source && *g->place.source && used < WIDTH - 8) {
					sb_puts(out, ": ");
					put_clipped(out, g->place.source, WIDTH - used);
				}
				sb_putc(out, '\n');
				free(at);
			}
		}
	}
}

static void print_suggestions(const struct profile *p, struct strbuf *out, const struct style *st)
{
	if (!p->nsuggestions) {
		section(out, st, "Suggestions: none");
		return;
	}
	section(out, st, "Suggestions");
	for (int i = 0; i < p->nsuggestions; i++) {
		sb_printf(out, "  %s-%s ", st->good, st->off);
		put_wrapped(out, 4, "    ", p->suggestions[i].text);
	}
}

static void print_eager(const struct profile *p, struct strbuf *out, const struct style *st)
{
	if (!p->neager) {
		section(out, st, "Frames that ran eagerly: none");
		return;
	}
	char title[96];
	snprintf(title, sizeof title, "Frames that ran eagerly: %lld %s", (long long)p->eager_calls,
		 plural(p->eager_calls, "call", "calls"));
	section(out, st, title);
	for (int i = 0; i < p->neager; i++) {
		const struct profile_eager *e = &p->eager[i];
		char *label = e->file ? fn_label(e->function, e->file, e->line)
				      : xasprintf("%s (called at %s)", e->function, e->called_at);
		sb_printf(out, "  %s", st->place);
		put_clipped(out, label, WIDTH - 30);
		sb_puts(out, st->off);
		if (e->resume_line > 0)
			sb_printf(out, ", resume at line %d", e->resume_line);
		else if (e->resume_line < 0)
			sb_puts(out, ", a resume point");
		char tail[160];
		if (e->calls > 0)
			snprintf(tail, sizeof tail, "%lld of %lld %s ran eagerly: %s", (long long)e->eager_calls,
				 (long long)e->calls, plural(e->calls, "call", "calls"), reason_words(e->reason));
		else
			snprintf(tail, sizeof tail, "%lld %s ran eagerly: %s", (long long)e->eager_calls,
				 plural(e->eager_calls, "call", "calls"), reason_words(e->reason));
		sb_puts(out, ": ");
		size_t ls = out->len;
		while (ls > 0 && out->buf[ls - 1] != '\n')
			ls--;
		put_wrapped(out, width_of(out->buf + ls, out->len - ls), "    ", tail);
		free(label);
	}
}

/* Run-time guard checks: the total, per check, and the function that
 * spends the most (compile time above includes only building guards). */
static void print_guard_checks(const struct profile *p, struct strbuf *out)
{
	char t[32];
	if (p->guard_checks == 0) {
		put_para(out, "  guard checks at run time: ", "    ", "none (no call found a compiled entry to check)");
		return;
	}
	fmt_ms(t, sizeof t, p->guard_check_ms);
	double each_us = p->guard_check_ms * 1e3 / (double)p->guard_checks;
	const struct profile_function *most = NULL;
	for (int i = 0; i < p->nfunctions; i++)
		if (!most || p->functions[i].guard_check_ms > most->guard_check_ms)
			most = &p->functions[i];
	char *text;
	if (most && p->nfunctions > 1 && most->guard_check_ms > 0) {
		char m[32];
		fmt_ms(m, sizeof m, most->guard_check_ms);
		char *label = fn_label(most->function, most->file, most->line);
		text = xasprintf("%s in %lld %s (%.2f us each); most in %s: %s", t, (long long)p->guard_checks,
				 plural(p->guard_checks, "check", "checks"), each_us, label, m);
		free(label);
	} else {
		text = xasprintf("%s in %lld %s (%.2f us each)", t, (long long)p->guard_checks,
				 plural(p->guard_checks, "check", "checks"), each_us);
	}
	put_para(out, "  guard checks at run time: ", "    ", text);
	free(text);
}

/* where the backend's time went: the phases it timed (aot_eager's
 * decompose, joint, partition), and the rest of it */
static void print_backend_phases(const struct profile *p, struct strbuf *out)
{
	if (p->nphases == 0)
		return;
	struct strbuf text = STRBUF_INIT;
	char t[32];
	double rest = p->backend_ms;
	for (int i = 0; i < p->nphases; i++) {
		fmt_ms(t, sizeof t, p->phases[i].ms);
		sb_printf(&text, "%s %s (%.0f%%), ", p->phases[i].name, t, pct(p->phases[i].ms, p->total_ms));
		rest -= p->phases[i].ms;
	}
	if (rest < 0)
		rest = 0;
	fmt_ms(t, sizeof t, rest);
	sb_printf(&text, "other %s (%.0f%%)", t, pct(rest, p->total_ms));
	put_para(out, "  in backend: ", "    ", text.buf);
	sb_release(&text);
}

/* inductor's kernels: how many the run generated, how many the kernel cache gave */
static void print_kernels(const struct profile *p, struct strbuf *out)
{
	if (p->kernels == 0)
		return;
	sb_printf(out, "  kernels: %lld compiled, %lld from the cache\n", (long long)(p->kernels - p->kernels_cached),
		  (long long)p->kernels_cached);
}

static void print_time(const struct profile *p, struct strbuf *out, const struct style *st)
{
	char title[128], t[32], a[32], b[32], c[32], d[32];
	if (p->compiles == 0 && p->total_ms <= 0) {
		section(out, st, "Compile time: nothing compiled");
		return;
	}
	fmt_ms(t, sizeof t, p->total_ms);
	snprintf(title, sizeof title, "Compile time: %s in %lld %s", t, (long long)p->compiles,
		 plural(p->compiles, "compile", "compiles"));
	section(out, st, title);
	double other = p->total_ms - p->trace_ms - p->guard_ms - p->backend_ms;
	if (other < 0)
		other = 0;
	fmt_ms(a, sizeof a, p->trace_ms);
	fmt_ms(b, sizeof b, p->guard_ms);
	fmt_ms(c, sizeof c, p->backend_ms);
	fmt_ms(d, sizeof d, other);
	char *phases = xasprintf("trace %s (%.0f%%), guard build %s (%.0f%%), backend %s (%.0f%%), other %s (%.0f%%)",
				 a, pct(p->trace_ms, p->total_ms), b, pct(p->guard_ms, p->total_ms), c,
				 pct(p->backend_ms, p->total_ms), d, pct(other, p->total_ms));
	put_para(out, "  by phase: ", "    ", phases);
	free(phases);
	print_backend_phases(p, out);
	print_kernels(p, out);
	if (p->nby_time) {
		sb_puts(out, "  by function:\n");
		int n = p->nby_time < MAX_TIME_FUNCTIONS ? p->nby_time : MAX_TIME_FUNCTIONS;
		for (int i = 0; i < n; i++) {
			const struct profile_function *f = &p->functions[p->by_time[i]];
			char *label = fn_label(f->function, f->file, f->line);
			struct strbuf name = STRBUF_INIT;
			put_clipped(&name, label, 40);
			int pad = 40 - width_of(name.buf, name.len);
			fmt_ms(t, sizeof t, f->total_ms);
			char n_comp[32];
			snprintf(n_comp, sizeof n_comp, "%lld %s", (long long)f->compiles,
				 plural(f->compiles, "compile", "compiles"));
			sb_printf(out, "    %s%*s %12s %10s %4.0f%%\n", name.buf, pad, "", n_comp, t,
				  pct(f->total_ms, p->total_ms));
			sb_release(&name);
			free(label);
		}
		if (p->nby_time > n) {
			double rest = 0;
			int64_t rc = 0;
			for (int i = n; i < p->nby_time; i++) {
				rest += p->functions[p->by_time[i]].total_ms;
				rc += p->functions[p->by_time[i]].compiles;
			}
			fmt_ms(t, sizeof t, rest);
			char more[64], n_comp[32];
			snprintf(more, sizeof more, "%d more functions", p->nby_time - n);
			snprintf(n_comp, sizeof n_comp, "%lld %s", (long long)rc, plural(rc, "compile", "compiles"));
			sb_printf(out, "    %-40s %12s %10s %4.0f%%\n", more, n_comp, t, pct(rest, p->total_ms));
		}
	}
	print_guard_checks(p, out);
}

static void print_totals(const struct profile *p, struct strbuf *out, const struct style *st)
{
	section(out, st, "Totals");
	char *line = xasprintf("graphs %lld · ops %lld · graph breaks %lld · recompiles %lld · compiles %lld",
			       (long long)p->graphs, (long long)p->ops, (long long)p->breaks,
			       (long long)p->recompiles, (long long)p->compiles);
	put_para(out, "  ", "  ", line);
	free(line);
	char limit[64];
	if (p->limit_hit)
		snprintf(limit, sizeof limit, "> %lld", (long long)p->limit_needed);
	else
		snprintf(limit, sizeof limit, "%lld", (long long)p->limit_needed);
	line = xasprintf("calls %lld · cache hits %lld (%.1f%%) · eager calls %lld · cache limit needed %s",
			 (long long)p->calls, (long long)p->cache_hits, pct((double)p->cache_hits, (double)p->calls),
			 (long long)p->eager_calls, limit);
	put_para(out, "  ", "  ", line);
	free(line);
	if (p->errors)
		sb_printf(out, "  %scompile errors %lld%s\n", st->bad, (long long)p->errors, st->off);
}

void profile_print(const struct profile *p, struct strbuf *out, bool color)
{
	struct style st = style_of(color);
	print_header(p, out, &st);
	print_breaks(p, out, &st);
	print_recompiles(p, out, &st);
	print_suggestions(p, out, &st);
	print_eager(p, out, &st);
	print_time(p, out, &st);
	print_totals(p, out, &st);
}

/* ---- JSON ---- */

static void json_place(struct json *j, const struct profile_place *pl)
{
	json_object_begin(j);
	json_kstring(j, "file", pl->file);
	json_kint(j, "line", pl->line);
	json_kstring(j, "function", pl->function);
	json_kstring(j, "source", pl->source);
	json_object_end(j);
}

static void json_run(struct json *j, const struct profile *p)
{
	json_object_begin(j);
	json_kint(j, "id", p->run.id);
	json_kstring(j, "database", p->db_path);
	json_kstring(j, "tool", p->run.tool);
	json_kstring(j, "command", p->run.command);
	json_kstring(j, "program", p->run.program);
	json_kstring(j, "backend", p->run.backend);
	json_kstring(j, "config", p->run.config);
	json_key(j, "cache_size_limit");
	if (p->cache_limit > 0)
		json_int(j, p->cache_limit);
	else
		json_string(j, p->cache_limit < 0 ? "unlimited" : NULL);
	json_kint(j, "pid", p->run.pid);
	json_kfixed(j, "started_at", p->run.started_at, 6);
	json_key(j, "ended_at");
	if (p->run.finished)
		json_fixed(j, p->run.ended_at, 6);
	else
		json_null(j);
	json_key(j, "exit_status");
	if (p->run.finished && p->run.exit_status >= 0)
		json_int(j, p->run.exit_status);
	else
		json_null(j);
	json_kbool(j, "finished", p->run.finished);
	json_object_end(j);
}

static void json_totals(struct json *j, const struct profile *p)
{
	json_object_begin(j);
	json_kint(j, "graphs", p->graphs);
	json_kint(j, "ops", p->ops);
	json_kint(j, "graph_breaks", p->breaks);
	json_kint(j, "break_places", p->nbreaks);
	json_kint(j, "recompiles", p->recompiles);
	json_kint(j, "compiles", p->compiles);
	json_kint(j, "misses", p->misses);
	json_kint(j, "compile_errors", p->errors);
	json_kint(j, "frames", p->frames);
	json_kint(j, "calls", p->calls);
	json_kint(j, "cache_hits", p->cache_hits);
	json_key(j, "cache_hit_rate");
	if (p->calls > 0)
		json_fixed(j, (double)p->cache_hits / (double)p->calls, 4);
	else
		json_null(j);
	json_kint(j, "eager_calls", p->eager_calls);
	json_kint(j, "cache_limit_needed", p->limit_needed);
	json_kbool(j, "cache_limit_reached", p->limit_hit);
	json_object_end(j);
}

static void json_breaks(struct json *j, const struct profile *p)
{
	json_array_begin(j);
	for (int i = 0; i < p->nbreaks; i++) {
		const struct profile_break *b = &p->brk[i];
		json_object_begin(j);
		json_kstring(j, "code", b->code);
		json_kstring(j, "category", b->category);
		json_kstring(j, "message", b->message);
		json_kstring(j, "hint", b->hint);
		json_kstring(j, "file", b->at.file);
		json_kint(j, "line", b->at.line);
		json_kint(j, "col", b->col);
		json_kstring(j, "function", b->at.function);
		json_kstring(j, "source", b->at.source);
		json_kint(j, "hits", b->hits);
		json_kint(j, "compiles", b->compiles);
		json_kint(j, "fullgraph_errors", b->fullgraph_errors);
		json_key(j, "user_stack");
		json_array_begin(j);
		for (int k = 0; k < b->nstack; k++)
			json_place(j, &b->stack[k]);
		json_array_end(j);
		json_object_end(j);
	}
	json_array_end(j);
}

static void json_recompiles(struct json *j, const struct profile *p)
{
	json_array_begin(j);
	for (int r = 0; r < p->nranked; r++) {
		const struct profile_function *f = &p->functions[p->ranked[r]];
		json_object_begin(j);
		json_kstring(j, "function", f->function);
		json_kstring(j, "file", f->file);
		json_kint(j, "line", f->line);
		json_kint(j, "recompiles", f->recompiles);
		json_kint(j, "compiles", f->compiles);
		json_kint(j, "misses", f->misses);
		json_kint(j, "cache_entries", f->max_entries);
		json_kbool(j, "cache_limit_reached", f->hit_limit);
		json_key(j, "guard_failures");
		json_array_begin(j);
		for (int i = 0; i < f->nguards; i++) {
			const struct profile_guard *g = &f->guards[i];
			json_object_begin(j);
			json_kstring(j, "guard", g->subject);
			json_kstring(j, "text", g->text);
			json_kint(j, "misses", g->recompiles);
			json_kint(j, "failures", g->failures);
			json_kint(j, "value_count", g->nvalues);
			json_key(j, "values");
			json_array_begin(j);
			for (int k = 0; k < g->nvalues; k++)
				json_string(j, g->values[k]);
			json_array_end(j);
			json_key(j, "made_at");
			if (g->has_place)
				json_place(j, &g->place);
			else
				json_null(j);
			json_object_end(j);
		}
		json_array_end(j);
		json_object_end(j);
	}
	json_array_end(j);
}

/* "backend_phases": [{name, ms, compiles}], the phases inside backend_ms */
static void json_phases(struct json *j, const struct profile *p)
{
	json_key(j, "backend_phases");
	json_array_begin(j);
	for (int i = 0; i < p->nphases; i++) {
		json_object_begin(j);
		json_kstring(j, "name", p->phases[i].name);
		json_kfixed(j, "ms", p->phases[i].ms, 3);
		json_kint(j, "compiles", p->phases[i].compiles);
		json_object_end(j);
	}
	json_array_end(j);
}

static void json_time(struct json *j, const struct profile *p)
{
	json_object_begin(j);
	double other = p->total_ms - p->trace_ms - p->guard_ms - p->backend_ms;
	json_kfixed(j, "total_ms", p->total_ms, 3);
	json_kfixed(j, "trace_ms", p->trace_ms, 3);
	json_kfixed(j, "guard_build_ms", p->guard_ms, 3);
	json_kfixed(j, "backend_ms", p->backend_ms, 3);
	json_kfixed(j, "other_ms", other > 0 ? other : 0, 3);
	json_kfixed(j, "guard_check_ms", p->guard_check_ms, 3);
	json_kint(j, "guard_checks", p->guard_checks);
	json_phases(j, p);
	json_kint(j, "kernels_compiled", p->kernels - p->kernels_cached);
	json_kint(j, "kernels_cached", p->kernels_cached);
	json_key(j, "by_function");
	json_array_begin(j);
	for (int i = 0; i < p->nby_time; i++) {
		const struct profile_function *f = &p->functions[p->by_time[i]];
		json_object_begin(j);
		json_kstring(j, "function", f->function);
		json_kstring(j, "file", f->file);
		json_kint(j, "line", f->line);
		json_kint(j, "compiles", f->compiles);
		json_kfixed(j, "total_ms", f->total_ms, 3);
		json_kfixed(j, "trace_ms", f->trace_ms, 3);
		json_kfixed(j, "guard_build_ms", f->guard_ms, 3);
		json_kfixed(j, "backend_ms", f->backend_ms, 3);
		json_kfixed(j, "guard_check_ms", f->guard_check_ms, 3);
		json_kint(j, "guard_checks", f->guard_checks);
		json_object_end(j);
	}
	json_array_end(j);
	json_object_end(j);
}

void profile_json(const struct profile *p, struct strbuf *out)
{
	struct json j;
	json_init(&j, out);
	json_object_begin(&j);
	json_key(&j, "run");
	json_run(&j, p);
	json_key(&j, "graph_breaks");
	json_breaks(&j, p);
	json_key(&j, "recompiles");
	json_recompiles(&j, p);
	json_key(&j, "suggestions");
	json_array_begin(&j);
	for (int i = 0; i < p->nsuggestions; i++) {
		const struct profile_suggestion *s = &p->suggestions[i];
		json_object_begin(&j);
		json_kstring(&j, "kind", s->kind);
		json_kstring(&j, "function", s->function);
		json_kstring(&j, "guard", s->subject);
		json_kint(&j, "count", s->count);
		json_kstring(&j, "text", s->text);
		json_object_end(&j);
	}
	json_array_end(&j);
	json_key(&j, "eager_frames");
	json_array_begin(&j);
	for (int i = 0; i < p->neager; i++) {
		const struct profile_eager *e = &p->eager[i];
		json_object_begin(&j);
		json_kstring(&j, "function", e->function);
		json_kstring(&j, "file", e->file);
		json_key(&j, "line");
		if (e->file)
			json_int(&j, e->line);
		else
			json_null(&j);
		json_kstring(&j, "called_at", e->called_at);
		json_key(&j, "resume_line");
		if (e->resume_line > 0)
			json_int(&j, e->resume_line);
		else
			json_null(&j);
		json_kbool(&j, "resume_point", e->resume_line != 0);
		json_kstring(&j, "reason", e->reason);
		json_kint(&j, "eager_calls", e->eager_calls);
		json_kint(&j, "calls", e->calls);
		json_object_end(&j);
	}
	json_array_end(&j);
	json_key(&j, "compile_time");
	json_time(&j, p);
	json_key(&j, "totals");
	json_totals(&j, p);
	json_object_end(&j);
	json_finish(&j);
}

/* ---- diff ---- */

/* A break is the same in two runs when its code, its function and the
 * text of its line match (so that code moved by an edit above it, or a
 * renamed copy of the program, is not a new break); without a stored
 * source, when its code, file and line match. */
static char *break_key(const struct profile_break *b)
{
	if (b->at.source)
		return xasprintf("%s\1%s\1%s", b->code, b->at.function ? b->at.function : "", b->at.source);
	return xasprintf("%s\1%s:%d", b->code, b->at.file, b->at.line);
}

static int find_break(const struct profile *p, const char *key)
{
	for (int i = 0; i < p->nbreaks; i++) {
		char *k = break_key(&p->brk[i]);
		bool same = strcmp(k, key) == 0;
		free(k);
		if (same)
			return i;
	}
	return -1;
}

struct fn_delta {
	const char *function;
	int64_t a, b;
};

static int64_t recompiles_of(const struct profile *p, const char *function)
{
	int64_t n = 0;
	for (int i = 0; i < p->nfunctions; i++)
		if (strcmp(p->functions[i].function, function) == 0)
			n += p->functions[i].recompiles + p->functions[i].misses;
	return n;
}

static bool has_guard(const struct profile *p, const char *function, const char *subject)
{
	for (int i = 0; i < p->nfunctions; i++) {
		const struct profile_function *f = &p->functions[i];
		if (strcmp(f->function, function) != 0)
			continue;
		for (int k = 0; k < f->nguards; k++)
			if (strcmp(f->guards[k].subject, subject) == 0)
				return true;
	}
	return false;
}

struct diff {
	int *added, nadded;           /* indexes into b->brk */
	int *gone, ngone;             /* indexes into a->brk */
	int kept;
	struct fn_delta *fns;
	int nfns;
	struct { const struct profile_function *f; const struct profile_guard *g; } *new_guards;
	int nnew_guards;
	bool new_things;
};

static void add_fn(struct diff *d, const char *function)
{
	for (int i = 0; i < d->nfns; i++)
		if (strcmp(d->fns[i].function, function) == 0)
			return;
	d->fns = xrealloc(d->fns, (size_t)(d->nfns + 1) * sizeof *d->fns);
	d->fns[d->nfns++] = (struct fn_delta){function, 0, 0};
}

static void diff_build(const struct profile *a, const struct profile *b, struct diff *d)
{
	memset(d, 0, sizeof *d);
	d->added = xcalloc((size_t)b->nbreaks + 1, sizeof *d->added);
	d->gone = xcalloc((size_t)a->nbreaks + 1, sizeof *d->gone);
	for (int i = 0; i < b->nbreaks; i++) {
		char *k = break_key(&b->brk[i]);
		if (find_break(a, k) < 0)
			d->added[d->nadded++] = i;
		else
			d->kept++;
		free(k);
	}
	for (int i = 0; i < a->nbreaks; i++) {
		char *k = break_key(&a->brk[i]);
		if (find_break(b, k) < 0)
			d->gone[d->ngone++] = i;
		free(k);
	}
	for (int i = 0; i < a->nranked; i++)
		add_fn(d, a->functions[a->ranked[i]].function);
	for (int i = 0; i < b->nranked; i++)
		add_fn(d, b->functions[b->ranked[i]].function);
	for (int i = 0; i < d->nfns; i++) {
		d->fns[i].a = recompiles_of(a, d->fns[i].function);
		d->fns[i].b = recompiles_of(b, d->fns[i].function);
		if (d->fns[i].b > d->fns[i].a)
			d->new_things = true;
	}
	for (int r = 0; r < b->nranked; r++) {
		const struct profile_function *f = &b->functions[b->ranked[r]];
		for (int k = 0; k < f->nguards; k++) {
			if (has_guard(a, f->function, f->guards[k].subject))
				continue;
			d->new_guards = xrealloc(d->new_guards, (size_t)(d->nnew_guards + 1) * sizeof *d->new_guards);
			d->new_guards[d->nnew_guards].f = f;
			d->new_guards[d->nnew_guards].g = &f->guards[k];
			d->nnew_guards++;
		}
	}
	if (d->nadded)
		d->new_things = true;
}

static void diff_release(struct diff *d)
{
	free(d->added);
	free(d->gone);
	free(d->fns);
	free(d->new_guards);
}

static void diff_break_lines(struct strbuf *out, const struct style *st, const struct profile_break *b, bool added)
{
	char prefix[64];
	snprintf(prefix, sizeof prefix, "  %s%c%s %s%s%s (%s) ", added ? st->bad : st->good, added ? '+' : '-', st->off,
		 st->code, b->code, st->off, b->category);
	char plain[64];
	snprintf(plain, sizeof plain, "  %c %s (%s) ", added ? '+' : '-', b->code, b->category);
	sb_puts(out, prefix);
	put_wrapped(out, width_of(plain, strlen(plain)), "      ", b->message);
	put_place_lines(out, st, &b->at, "      ");
}

static void delta_row(struct strbuf *out, const char *name, const char *va, const char *vb, const char *change)
{
	struct strbuf n = STRBUF_INIT;
	put_clipped(&n, name, 34);
	int pad = 34 - width_of(n.buf ? n.buf : "", n.len);
	sb_printf(out, "  %s%*s %12s %12s %14s\n", n.buf ? n.buf : "", pad, "", va, vb, change);
	sb_release(&n);
}

static void time_row(struct strbuf *out, const char *name, double a, double b)
{
	char va[32], vb[32], ch[32];
	fmt_ms(va, sizeof va, a);
	fmt_ms(vb, sizeof vb, b);
	if (a > 0)
		snprintf(ch, sizeof ch, "%+.0f%%", 100.0 * (b - a) / a);
	else if (b > 0)
		snprintf(ch, sizeof ch, "new");
	else
		snprintf(ch, sizeof ch, "+0%%");
	delta_row(out, name, va, vb, ch);
}

static void count_row(struct strbuf *out, const char *name, int64_t a, int64_t b)
{
	char va[32], vb[32], ch[32];
	snprintf(va, sizeof va, "%lld", (long long)a);
	snprintf(vb, sizeof vb, "%lld", (long long)b);
	snprintf(ch, sizeof ch, "%+lld", (long long)(b - a));
	if (a == b)
		snprintf(ch, sizeof ch, "0");
	delta_row(out, name, va, vb, ch);
}

static const struct dbq_phase *find_phase(const struct profile *p, const char *name)
{
	for (int i = 0; i < p->nphases; i++)
		if (strcmp(p->phases[i].name, name) == 0)
			return &p->phases[i];
	return NULL;
}

/* a row per phase inside the backend, of either run (b's first) */
static void diff_backend_phases(struct strbuf *out, const struct profile *a, const struct profile *b)
{
	char name[64];
	for (int i = 0; i < b->nphases; i++) {
		const struct dbq_phase *in_a = find_phase(a, b->phases[i].name);
		snprintf(name, sizeof name, "  %s", b->phases[i].name);
		time_row(out, name, in_a ? in_a->ms : 0, b->phases[i].ms);
	}
	for (int i = 0; i < a->nphases; i++) {
		if (find_phase(b, a->phases[i].name))
			continue;
		snprintf(name, sizeof name, "  %s", a->phases[i].name);
		time_row(out, name, a->phases[i].ms, 0);
	}
}

bool profile_diff_print(const struct profile *a, const struct profile *b, struct strbuf *out, bool color)
{
	struct style st = style_of(color);
	struct diff d;
	diff_build(a, b, &d);
	sb_printf(out, "%sRun %lld against run %lld of ", st.title, (long long)b->run.id, (long long)a->run.id);
	sb_add_shown(out, b->db_path, strlen(b->db_path));
	sb_printf(out, "%s\n", st.off);
	char *line = xasprintf("run %lld, %s", (long long)a->run.id, a->run.command);
	put_para(out, "  A: ", "     ", line);
	free(line);
	line = xasprintf("run %lld, %s", (long long)b->run.id, b->run.command);
	put_para(out, "  B: ", "     ", line);
	free(line);

	char title[160];
	snprintf(title, sizeof title, "Graph breaks: %d added, %d gone, %d in both", d.nadded, d.ngone, d.kept);
	section(out, &st, title);
	for (int i = 0; i < d.nadded; i++)
		diff_break_lines(out, &st, &b->brk[d.added[i]], true);
	for (int i = 0; i < d.ngone; i++)
		diff_break_lines(out, &st, &a->brk[d.gone[i]], false);

	section(out, &st, "Recompiles per function");
	if (!d.nfns) {
		sb_puts(out, "  none in either run\n");
	} else {
		char ha[32], hb[32];
		snprintf(ha, sizeof ha, "run %lld", (long long)a->run.id);
		snprintf(hb, sizeof hb, "run %lld", (long long)b->run.id);
		delta_row(out, "", ha, hb, "change");
		for (int i = 0; i < d.nfns; i++)
			count_row(out, d.fns[i].function, d.fns[i].a, d.fns[i].b);
		count_row(out, "total", a->recompiles + a->misses, b->recompiles + b->misses);
	}

	if (!d.nnew_guards) {
		section(out, &st, "New guard failures: none");
	} else {
		snprintf(title, sizeof title, "New guard failures: %d", d.nnew_guards);
		section(out, &st, title);
		for (int i = 0; i < d.nnew_guards; i++) {
			const struct profile_guard *g = d.new_guards[i].g;
			struct strbuf sb = STRBUF_INIT;
			sb_printf(&sb, "%s: %s failed %lld %s, took %d %s:", d.new_guards[i].f->function, g->subject,
				  (long long)g->recompiles, plural(g->recompiles, "time", "times"), g->nvalues,
				  plural(g->nvalues, "value", "values"));
			for (int k = 0; k < g->nvalues && k < 12; k++)
				sb_printf(&sb, "%s%s", k ? ", " : " ", g->values[k]);
			if (g->nvalues > 12)
				sb_printf(&sb, ", … (%d more)", g->nvalues - 12);
			char *line = sb_detach(&sb);
			sb_printf(out, "  %s+%s ", st.bad, st.off);
			put_wrapped(out, 4, "    ", line);
			free(line);
		}
	}

	section(out, &st, "Compile time");
	{
		char ha[32], hb[32];
		snprintf(ha, sizeof ha, "run %lld", (long long)a->run.id);
		snprintf(hb, sizeof hb, "run %lld", (long long)b->run.id);
		delta_row(out, "", ha, hb, "change");
	}
	time_row(out, "total", a->total_ms, b->total_ms);
	time_row(out, "trace", a->trace_ms, b->trace_ms);
	time_row(out, "guard build", a->guard_ms, b->guard_ms);
	time_row(out, "backend", a->backend_ms, b->backend_ms);
	diff_backend_phases(out, a, b);
	count_row(out, "compiles", a->compiles, b->compiles);
	count_row(out, "graphs", a->graphs, b->graphs);
	count_row(out, "ops", a->ops, b->ops);
	if (a->kernels || b->kernels) {
		count_row(out, "kernels compiled", a->kernels - a->kernels_cached, b->kernels - b->kernels_cached);
		count_row(out, "kernels cached", a->kernels_cached, b->kernels_cached);
	}

	sb_putc(out, '\n');
	if (d.new_things)
		sb_printf(out, "%sRun %lld has graph breaks or recompiles that run %lld had not%s\n", st.bad,
			  (long long)b->run.id, (long long)a->run.id, st.off);
	else
		sb_printf(out, "%sNo new graph breaks or recompiles in run %lld%s\n", st.good, (long long)b->run.id,
			  st.off);
	bool r = d.new_things;
	diff_release(&d);
	return r;
}

static void json_break_brief(struct json *j, const struct profile_break *b)
{
	json_object_begin(j);
	json_kstring(j, "code", b->code);
	json_kstring(j, "category", b->category);
	json_kstring(j, "message", b->message);
	json_kstring(j, "file", b->at.file);
	json_kint(j, "line", b->at.line);
	json_kstring(j, "function", b->at.function);
	json_kstring(j, "source", b->at.source);
	json_kint(j, "hits", b->hits);
	json_kint(j, "compiles", b->compiles);
	json_object_end(j);
}

static void json_time_brief(struct json *j, const struct profile *p)
{
	json_object_begin(j);
	json_kfixed(j, "total_ms", p->total_ms, 3);
	json_kfixed(j, "trace_ms", p->trace_ms, 3);
	json_kfixed(j, "guard_build_ms", p->guard_ms, 3);
	json_kfixed(j, "backend_ms", p->backend_ms, 3);
	json_phases(j, p);
	json_kint(j, "compiles", p->compiles);
	json_kint(j, "graphs", p->graphs);
	json_kint(j, "ops", p->ops);
	json_object_end(j);
}

bool profile_diff_json(const struct profile *a, const struct profile *b, struct strbuf *out)
{
	struct diff d;
	diff_build(a, b, &d);
	struct json j;
	json_init(&j, out);
	json_object_begin(&j);
	json_key(&j, "a");
	json_run(&j, a);
	json_key(&j, "b");
	json_run(&j, b);
	json_key(&j, "breaks_added");
	json_array_begin(&j);
	for (int i = 0; i < d.nadded; i++)
		json_break_brief(&j, &b->brk[d.added[i]]);
	json_array_end(&j);
	json_key(&j, "breaks_gone");
	json_array_begin(&j);
	for (int i = 0; i < d.ngone; i++)
		json_break_brief(&j, &a->brk[d.gone[i]]);
	json_array_end(&j);
	json_kint(&j, "breaks_in_both", d.kept);
	json_key(&j, "recompiles");
	json_array_begin(&j);
	for (int i = 0; i < d.nfns; i++) {
		json_object_begin(&j);
		json_kstring(&j, "function", d.fns[i].function);
		json_kint(&j, "a", d.fns[i].a);
		json_kint(&j, "b", d.fns[i].b);
		json_object_end(&j);
	}
	json_array_end(&j);
	json_key(&j, "new_guard_failures");
	json_array_begin(&j);
	for (int i = 0; i < d.nnew_guards; i++) {
		const struct profile_guard *g = d.new_guards[i].g;
		json_object_begin(&j);
		json_kstring(&j, "function", d.new_guards[i].f->function);
		json_kstring(&j, "guard", g->subject);
		json_kstring(&j, "text", g->text);
		json_kint(&j, "misses", g->recompiles);
		json_kint(&j, "value_count", g->nvalues);
		json_object_end(&j);
	}
	json_array_end(&j);
	json_key(&j, "compile_time");
	json_object_begin(&j);
	json_key(&j, "a");
	json_time_brief(&j, a);
	json_key(&j, "b");
	json_time_brief(&j, b);
	json_object_end(&j);
	json_kbool(&j, "new_breaks_or_recompiles", d.new_things);
	json_object_end(&j);
	json_finish(&j);
	bool r = d.new_things;
	diff_release(&d);
	return r;
}
