/* explain.c - explain(f, *args), its ExplainOutput object, and the
 * per-function summaries of `tjit explain`.
 *
 * A summary (struct summary) copies what it needs out of each compile
 * record it hears of, since records die when the frame evaluator is done
 * with them: the graph listings and op names, the break reasons with their
 * user stacks and source lines, the guard texts and the times. Everything
 * printed is built from the summary alone.
 */
#include "explain.h"

#include <stdlib.h>
#include <string.h>

#include "backends.h"
#include "builtin.h"
#include "compile_log.h"
#include "frame_eval.h"
#include "graph.h"
#include "runtime.h"
#include "util.h"
#include "vm.h"

/* ---- summaries ---- */

struct frame_copy {
	char *file;
	int line;
	char *function;
	char *source;           /* the line's text, stripped */
};

struct break_copy {
	char *message;
	const struct break_info *info;  /* NULL: an unknown code */
	int nstack;
	struct frame_copy *stack;       /* outermost first */
};

struct graph_copy {
	char *compile_id;
	char *name;
	char *listing;
	int nops;
	char **ops;
};

struct time_row {
	char *function;
	int compiles;
	double trace_ms, guard_ms, backend_ms, total_ms;
};

struct summary {
	int ngraphs, cap_graphs;
	struct graph_copy *graphs;
	int nbreaks, cap_breaks;
	struct break_copy *breaks;
	int nguards, cap_guards;
	char **guards;
	int ntimes, cap_times;
	struct time_row *times;
};

/* The copies allocate through util.h's counted helpers, so that
 * check_stages_oom can make each of them fail in turn. */
static char *dup_or_empty(const char *s)
{
	return util_strdup(s ? s : "");
}

/* Grows *items (of *cap elements of size sz) to hold n + 1. */
static int reserve(void *items, int *cap, int n, size_t sz)
{
	if (n < *cap)
		return 0;
	int c = *cap ? *cap * 2 : 8;
	void *bigger = util_realloc(*(void **)items, (size_t)c * sz);
	if (!bigger)
		return -1;
	*(void **)items = bigger;
	*cap = c;
	return 0;
}

static void graph_copy_free(struct graph_copy *g)
{
	free(g->compile_id);
	free(g->name);
	free(g->listing);
	for (int k = 0; g->ops && k < g->nops; k++)
		free(g->ops[k]);
	free(g->ops);
}

static void break_copy_free(struct break_copy *b)
{
	free(b->message);
	for (int k = 0; b->stack && k < b->nstack; k++) {
		free(b->stack[k].file);
		free(b->stack[k].function);
		free(b->stack[k].source);
	}
	free(b->stack);
}

/* Each copy is kept whole or not at all: one whose strings could not be
 * copied (out of memory) is dropped from the summary. */
static void summary_add_graph(struct summary *s, const struct graph *g)
{
	if (reserve(&s->graphs, &s->cap_graphs, s->ngraphs, sizeof *s->graphs) < 0)
		return;
	struct graph_copy *c = &s->graphs[s->ngraphs++];
	memset(c, 0, sizeof *c);
	c->compile_id = dup_or_empty(g->compile_id);
	c->name = dup_or_empty(g->name);
	struct strbuf sb = STRBUF_INIT;
	graph_print(g, &sb);
	while (sb.len && sb.buf[sb.len - 1] == '\n')
		sb.buf[--sb.len] = '\0';
	c->listing = sb.len ? sb_detach(&sb) : util_strdup("");
	sb_release(&sb);
	bool whole = c->compile_id && c->name && c->listing;
	c->ops = util_calloc((size_t)(g->nnodes ? g->nnodes : 1), sizeof *c->ops);
	for (int i = 0; whole && c->ops && i < g->nnodes; i++) {
		const struct gnode *n = &g->nodes[i];
		if (n->kind != GN_OP && n->kind != GN_CALL)
			continue;
		struct strbuf op = STRBUF_INIT;
		compile_log_node_op(n, &op);
		whole = (c->ops[c->nops++] = op.len ? sb_detach(&op) : util_strdup("?")) != NULL;
		sb_release(&op);
	}
	if (!whole || !c->ops) { /* out of memory: the graph goes unsummarized */
		graph_copy_free(c);
		s->ngraphs--;
	}
}

static void summary_add_break(struct summary *s, const struct break_record *b)
{
	if (reserve(&s->breaks, &s->cap_breaks, s->nbreaks, sizeof *s->breaks) < 0)
		return;
	struct break_copy *c = &s->breaks[s->nbreaks++];
	memset(c, 0, sizeof *c);
	c->info = breaks_info(b->code);
	c->message = dup_or_empty(b->message ? b->message : c->info ? c->info->message : "");
	c->stack = util_calloc((size_t)(b->nstack ? b->nstack : 1), sizeof *c->stack);
	bool whole = c->message && c->stack;
	for (int i = 0; whole && i < b->nstack; i++) {
		const struct user_frame *f = &b->stack[i];
		struct frame_copy *fc = &c->stack[c->nstack++];
		fc->file = dup_or_empty(f->src && f->src->path ? f->src->path : "<unknown>");
		fc->line = f->line;
		fc->function = dup_or_empty(f->function ? f->function : "<unknown>");
		struct strbuf sb = STRBUF_INIT;
		compile_log_source_line(f->src, f->line, &sb);
		fc->source = sb.len ? sb_detach(&sb) : util_strdup("");
		sb_release(&sb);
		whole = fc->file && fc->function && fc->source;
	}
	if (!whole) { /* out of memory: the break goes unsummarized */
		break_copy_free(c);
		s->nbreaks--;
	}
}

static void summary_add_times(struct summary *s, const struct compile_record *r)
{
	const char *fn = r->function ? r->function : "<unknown>";
	int i = 0;
	while (i < s->ntimes && strcmp(s->times[i].function, fn) != 0)
		i++;
	if (i == s->ntimes) {
		if (reserve(&s->times, &s->cap_times, s->ntimes, sizeof *s->times) < 0)
			return;
		memset(&s->times[i], 0, sizeof s->times[i]);
		if (!(s->times[i].function = util_strdup(fn)))
			return; /* out of memory: the row goes, as a row that cannot grow the array */
		s->ntimes++;
	}
	struct time_row *t = &s->times[i];
	t->compiles++;
	t->trace_ms += r->trace_ms;
	t->guard_ms += r->guard_ms;
	t->backend_ms += r->backend_ms;
	t->total_ms += r->total_ms;
}

static void summary_add(struct summary *s, const struct compile_record *r)
{
	if (r->graph)
		summary_add_graph(s, r->graph);
	if (r->brk)
		summary_add_break(s, r->brk);
	for (int i = 0; i < r->nguards; i++) {
		if (reserve(&s->guards, &s->cap_guards, s->nguards, sizeof *s->guards) < 0)
			break;
		if ((s->guards[s->nguards] = dup_or_empty(r->guards[i].text)))
			s->nguards++;
	}
	summary_add_times(s, r);
}

static void summary_release(struct summary *s)
{
	for (int i = 0; i < s->ngraphs; i++)
		graph_copy_free(&s->graphs[i]);
	free(s->graphs);
	for (int i = 0; i < s->nbreaks; i++)
		break_copy_free(&s->breaks[i]);
	free(s->breaks);
	for (int i = 0; i < s->nguards; i++)
		free(s->guards[i]);
	free(s->guards);
	for (int i = 0; i < s->ntimes; i++)
		free(s->times[i].function);
	free(s->times);
	memset(s, 0, sizeof *s);
}

static int summary_op_count(const struct summary *s)
{
	int n = 0;
	for (int i = 0; i < s->ngraphs; i++)
		n += s->graphs[i].nops;
	return n;
}

static const struct frame_copy *innermost(const struct break_copy *b)
{
	return b->nstack > 0 ? &b->stack[b->nstack - 1] : NULL;
}

static bool same_place(const struct break_copy *a, const struct break_copy *b)
{
	const struct frame_copy *fa = innermost(a), *fb = innermost(b);
	if (!fa || !fb)
		return !fa && !fb && strcmp(a->message, b->message) == 0;
	return fa->line == fb->line && strcmp(fa->file, fb->file) == 0;
}

/* Indexes of the breaks to print: the first of each location. Returns the count. */
static int dedup_breaks(const struct summary *s, int *keep)
{
	int n = 0;
	for (int i = 0; i < s->nbreaks; i++) {
		int k = 0;
		while (k < n && !same_place(&s->breaks[keep[k]], &s->breaks[i]))
			k++;
		if (k == n)
			keep[n++] = i;
	}
	return n;
}

static const char *plural(int n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}

/* LANGUAGE.md §7, to the letter for print(explain(...)); `tjit explain`
 * (with_codes) adds each reason's break code, category and hint after it.
 * No final newline. */
static void summary_print(const struct summary *s, struct strbuf *out, bool with_codes)
{
	int nops = summary_op_count(s);
	sb_printf(out, "tjit produced %d %s with %d %s and %d %s", s->ngraphs,
		  plural(s->ngraphs, "graph", "graphs"), s->nbreaks,
		  plural(s->nbreaks, "graph break", "graph breaks"), nops, plural(nops, "op", "ops"));
	if (s->nbreaks == 0)
		return;
	int *keep = util_malloc((size_t)s->nbreaks * sizeof *keep);
	if (!keep)
		return;
	int n = dedup_breaks(s, keep);
	sb_puts(out, "\nBreak reasons:");
	for (int i = 0; i < n; i++) {
		const struct break_copy *b = &s->breaks[keep[i]];
		sb_printf(out, "\n  %d. %s", i + 1, b->message);
		for (int k = 0; k < b->nstack; k++) {
			const struct frame_copy *f = &b->stack[k];
			sb_printf(out, "\n     %s:%d in %s", f->file, f->line, f->function);
			if (f->source[0])
				sb_printf(out, "\n         %s", f->source);
		}
	}
	for (int i = 0; with_codes && i < n; i++) {
		if (i == 0)
			sb_puts(out, "\nBreak codes:");
		const struct break_copy *b = &s->breaks[keep[i]];
		if (b->info)
			sb_printf(out, "\n  %d. %s (%s): %s", i + 1, b->info->code, b->info->category,
				  b->info->hint);
		else
			sb_printf(out, "\n  %d. unknown code", i + 1);
	}
	free(keep);
}

static void summary_print_times(const struct summary *s, struct strbuf *out)
{
	sb_puts(out, "tjit compilation metrics:\n");
	sb_printf(out, "%-20s %8s %11s %11s %12s %11s\n", "Function", "Compiles", "Trace (ms)",
		  "Guards (ms)", "Backend (ms)", "Total (ms)");
	struct time_row sum = {0};
	for (int i = 0; i < s->ntimes; i++) {
		const struct time_row *t = &s->times[i];
		sb_printf(out, "%-20s %8d %11.3f %11.3f %12.3f %11.3f\n", t->function, t->compiles,
			  t->trace_ms, t->guard_ms, t->backend_ms, t->total_ms);
		sum.compiles += t->compiles;
		sum.trace_ms += t->trace_ms;
		sum.guard_ms += t->guard_ms;
		sum.backend_ms += t->backend_ms;
		sum.total_ms += t->total_ms;
	}
	sb_printf(out, "%-20s %8d %11.3f %11.3f %12.3f %11.3f", "(all)", sum.compiles, sum.trace_ms,
		  sum.guard_ms, sum.backend_ms, sum.total_ms);
}

/* ---- tj objects: ExplainOutput, GraphBreak, Graph ---- */

/* An object whose attributes are fixed values, and whose repr is a text. */
struct attr_object {
	struct object base;
	char *repr;
	int nattrs;
	const char **names;     /* static strings */
	value *values;          /* owned */
};

static void attr_free(struct obj *o)
{
	struct attr_object *a = (struct attr_object *)o;
	for (int i = 0; i < a->nattrs; i++)
		val_decref(a->values[i]);
	free(a->values);
	free(a->repr);
	free(a);
}

static void attr_repr(struct obj *o, struct strbuf *out)
{
	sb_puts(out, ((struct attr_object *)o)->repr);
}

static value attr_getattr(struct obj *o, struct str *name)
{
	struct attr_object *a = (struct attr_object *)o;
	for (int i = 0; i < a->nattrs; i++) {
		if (str_eq_cstr(name, a->names[i])) {
			val_incref(a->values[i]);
			return a->values[i];
		}
	}
	return val_err(); /* no such attribute: the VM says so */
}

static const struct obj_type explain_output_type = {
	.name = "ExplainOutput", .free = attr_free, .repr = attr_repr, .getattr = attr_getattr,
};
static const struct obj_type graph_break_type = {
	.name = "GraphBreak", .free = attr_free, .repr = attr_repr, .getattr = attr_getattr,
};
static const struct obj_type graph_listing_type = {
	.name = "Graph", .free = attr_free, .repr = attr_repr, .getattr = attr_getattr,
};

/* Steals the values and repr; NULL names end the list. */
static value attr_object_new(const struct obj_type *type, char *repr, int n, const char **names,
			     value *values)
{
	struct attr_object *a = util_calloc(1, sizeof *a);
	value *vals = util_malloc((size_t)n * sizeof *vals);
	if (!a || !vals || !repr) {
		free(a);
		free(vals);
		free(repr);
		for (int i = 0; i < n; i++)
			val_decref(values[i]);
		return vm_raise("out of memory");
	}
	a->base.hdr.rc = 1;
	a->base.type = type;
	a->repr = repr;
	a->nattrs = n;
	a->names = names;
	memcpy(vals, values, (size_t)n * sizeof *vals);
	a->values = vals;
	return val_obj(VAL_OBJECT, a);
}

static value str_of(const char *s)
{
	return str_from_cstr(s ? s : "");
}

static value list_of_strings(char *const *items, int n)
{
	value l = list_new((size_t)n);
	for (int i = 0; i < n; i++)
		list_append(val_list(l), str_of(items[i]));
	return l;
}

static value graph_break_object(const struct break_copy *b)
{
	static const char *names[] = {"reason", "code", "category", "hint", "file", "line",
				      "function", "source", "user_stack"};
	const struct frame_copy *f = innermost(b);
	value stack = list_new((size_t)b->nstack);
	for (int i = 0; i < b->nstack; i++) {
		struct strbuf sb = STRBUF_INIT;
		sb_printf(&sb, "%s:%d in %s", b->stack[i].file, b->stack[i].line, b->stack[i].function);
		list_append(val_list(stack), str_new(sb.buf, sb.len));
		sb_release(&sb);
	}
	value values[] = {
		str_of(b->message),
		b->info ? str_of(b->info->code) : val_none(),
		b->info ? str_of(b->info->category) : val_none(),
		b->info ? str_of(b->info->hint) : val_none(),
		f ? str_of(f->file) : val_none(),
		f ? val_int(f->line) : val_none(),
		f ? str_of(f->function) : val_none(),
		f ? str_of(f->source) : val_none(),
		stack,
	};
	struct strbuf sb = STRBUF_INIT;
	sb_printf(&sb, "<GraphBreak %s: %s", b->info ? b->info->code : "?", b->message);
	if (f)
		sb_printf(&sb, " at %s:%d in %s", f->file, f->line, f->function);
	sb_putc(&sb, '>');
	return attr_object_new(&graph_break_type, sb_detach(&sb), 9, names, values);
}

static value graph_object(const struct graph_copy *g)
{
	static const char *names[] = {"compile_id", "name", "op_count", "ops", "listing"};
	value values[] = {
		str_of(g->compile_id), str_of(g->name), val_int(g->nops), list_of_strings(g->ops, g->nops),
		str_of(g->listing),
	};
	return attr_object_new(&graph_listing_type, dup_or_empty(g->listing), 5, names, values);
}

static value explain_output_new(const struct summary *s)
{
	static const char *names[] = {"graph_count", "graph_break_count", "op_count", "break_reasons",
				      "ops_per_graph", "graphs", "guards", "compile_times"};
	value reasons = list_new((size_t)s->nbreaks);
	for (int i = 0; i < s->nbreaks; i++) {
		value b = graph_break_object(&s->breaks[i]);
		if (val_is_err(b)) {
			val_decref(reasons);
			return b;
		}
		list_append(val_list(reasons), b);
	}
	value ops = list_new((size_t)s->ngraphs);
	value graphs = list_new((size_t)s->ngraphs);
	for (int i = 0; i < s->ngraphs; i++) {
		list_append(val_list(ops), list_of_strings(s->graphs[i].ops, s->graphs[i].nops));
		value g = graph_object(&s->graphs[i]);
		if (val_is_err(g)) {
			val_decref(reasons);
			val_decref(ops);
			val_decref(graphs);
			return g;
		}
		list_append(val_list(graphs), g);
	}
	struct strbuf times = STRBUF_INIT;
	summary_print_times(s, &times);
	value values[] = {
		val_int(s->ngraphs),
		val_int(s->nbreaks),
		val_int(summary_op_count(s)),
		reasons,
		ops,
		graphs,
		list_of_strings(s->guards, s->nguards),
		str_new(times.buf, times.len),
	};
	sb_release(&times);
	struct strbuf repr = STRBUF_INIT;
	summary_print(s, &repr, false);
	return attr_object_new(&explain_output_type, sb_detach(&repr), 8, names, values);
}

/* ---- explain(f, *args) ---- */

/* explain() sessions running now: `tjit explain` leaves their compiles to them */
static int explain_depth;

struct explain_session {
	struct compile_listener listener;
	struct summary summary;
};

static void session_on_compile(struct compile_listener *l, const struct compile_record *r)
{
	struct explain_session *s = (struct explain_session *)l;
	summary_add(&s->summary, r);
}

value explain_builtin(struct vm *vm, const value *args, int nargs, value kwnames)
{
	int nkw = kwnames.tag == VAL_TUPLE ? (int)val_tuple(kwnames)->len : 0;
	if (nargs - nkw < 1)
		return vm_raise("explain() missing required argument 'f'");
	struct runtime *rt = vm_runtime(vm);
	if (!rt)
		return vm_raise("explain(): no compile runtime in this VM");
	struct explain_session s;
	memset(&s, 0, sizeof s);
	s.listener.on_compile = session_on_compile;
	compile_log_listen(rt->log, &s.listener);
	explain_depth++;
	value r = frame_eval_call_private(vm, args[0], args + 1, nargs - 1, kwnames, &backend_eager);
	explain_depth--;
	compile_log_unlisten(rt->log, &s.listener);
	if (val_is_err(r)) {
		summary_release(&s.summary);
		return r;
	}
	val_decref(r);
	value out = explain_output_new(&s.summary);
	summary_release(&s.summary);
	return out;
}

/* ---- tjit explain ---- */

struct group {
	char *name, *file;
	int line;
	struct summary summary;
};

struct explain_program {
	struct compile_listener listener;
	struct compile_log *log;
	int ngroups, cap;
	struct group *groups;
};

static void program_on_compile(struct compile_listener *l, const struct compile_record *r)
{
	struct explain_program *p = (struct explain_program *)l;
	if (explain_depth > 0)
		return;
	const char *name = r->owner_name ? r->owner_name : r->function;
	const struct source *src = r->owner_name ? r->owner_src : r->src;
	int line = r->owner_name ? r->owner_line : r->def_line;
	const char *file = src && src->path ? src->path : "<unknown>";
	if (!name)
		name = "<unknown>";
	int i = 0;
	while (i < p->ngroups && !(p->groups[i].line == line && strcmp(p->groups[i].name, name) == 0 &&
				   strcmp(p->groups[i].file, file) == 0))
		i++;
	if (i == p->ngroups) {
		if (reserve(&p->groups, &p->cap, p->ngroups, sizeof *p->groups) < 0)
			return;
		struct group *g = &p->groups[p->ngroups];
		memset(g, 0, sizeof *g);
		g->name = util_strdup(name);
		g->file = util_strdup(file);
		if (!g->name || !g->file) { /* out of memory: this compile goes unsummarized */
			free(g->name);
			free(g->file);
			return;
		}
		g->line = line;
		p->ngroups++;
	}
	summary_add(&p->groups[i].summary, r);
}

struct explain_program *explain_program_begin(struct compile_log *log)
{
	struct explain_program *p = util_calloc(1, sizeof *p);
	if (!p)
		return NULL;
	p->listener.on_compile = program_on_compile;
	p->log = log;
	compile_log_listen(log, &p->listener);
	return p;
}

void explain_program_end(struct explain_program *p, struct strbuf *out)
{
	if (!p)
		return;
	compile_log_unlisten(p->log, &p->listener);
	if (p->ngroups == 0)
		sb_puts(out, "no compiled function ran\n");
	/* a report for a terminal: its file names and source lines shown
	 * escaped (the values explain() returns to a program stay as they are) */
	struct strbuf text = STRBUF_INIT;
	for (int i = 0; i < p->ngroups; i++) {
		struct group *g = &p->groups[i];
		if (i)
			sb_putc(&text, '\n');
		sb_printf(&text, "== %s (%s:%d) ==\n", g->name, g->file, g->line);
		summary_print(&g->summary, &text, true);
		sb_putc(&text, '\n');
		free(g->name);
		free(g->file);
		summary_release(&g->summary);
	}
	sb_add_shown_lines(out, sb_str(&text), text.len);
	sb_release(&text);
	free(p->groups);
	free(p);
}
