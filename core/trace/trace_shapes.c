/* trace_shapes.c - symbolic sizes (doc/tracer.md, "Dynamic shapes"): the
 * symbols of the inputs' dimensions, a union-find over the symbols that
 * ops forced equal, the op table's shape rules (ops_meta.h) run with that
 * union-find as their context, and the symbols as the trace left them
 * (sym_finish).
 */
#include <stdlib.h>
#include <string.h>

#include "compile_log.h"
#include "ops.h"
#include "ops_meta.h"
#include "trace_impl.h"
#include "util.h"

/* ---- symbolic sizes ---- */

int sym_find(struct tstate *st, int s)
{
	while (st->syms[s].parent != s)
		s = st->syms[s].parent;
	return s;
}

void sym_spec(struct tstate *st, int s)
{
	if (s >= 0)
		st->syms[sym_find(st, s)].spec = true;
}

/* s's root, or -1 when it is specialized */
int sym_live(struct tstate *st, int s)
{
	int r = sym_find(st, s);
	return st->syms[r].spec ? -1 : r;
}

static int sym_unify(struct tstate *st, int a, int b)
{
	a = sym_find(st, a);
	b = sym_find(st, b);
	if (a == b)
		return a;
	if (b < a) {
		int t = a;
		a = b;
		b = t;
	}
	st->syms[b].parent = a;
	if (st->syms[b].spec)
		st->syms[a].spec = true;
	return a;
}

/* the live symbol of dimension d of tensor variable v, or -1 (a constant) */
static int vsym(struct tstate *st, const struct var *v, int d)
{
	if (!v || v->kind != VK_TENSOR || !v->syms || d < 0 || d >= v->ex->ndim || v->syms[d] < 0)
		return -1;
	return sym_live(st, v->syms[d]);
}

/* the live symbol of a symbolic int, or -1 (specialized, or not one) */
int sym_of_int(struct tstate *st, const struct var *v)
{
	if (!v || v->kind != VK_SYMINT)
		return -1;
	return sym_live(st, v->isym);
}

/* the trace depends on every size of v: its symbols are specialized */
void sym_spec_var(struct tstate *st, struct var *v)
{
	if (!v || v->kind != VK_TENSOR || !v->syms)
		return;
	for (int d = 0; d < v->ex->ndim; d++)
		sym_spec(st, v->syms[d]);
}

/* ... of every tensor in an argument (lists and tuples, already realized) */
void sym_spec_deep(struct tstate *st, struct var *v, int depth)
{
	if (!v || depth > TRACE_MAX_NEST)
		return;
	if (v->kind == VK_LAZY)
		v = v->real;
	if (!v)
		return;
	if (v->kind == VK_SYMINT) {
		sym_spec(st, v->isym);
	} else if (v->kind == VK_TENSOR) {
		sym_spec_var(st, v);
	} else if (v->kind == VK_LIST || v->kind == VK_TUPLE) {
		int n = v->kind == VK_LIST ? v->rec->n : v->n;
		struct var **items = v->kind == VK_LIST ? v->rec->items : v->items;
		for (int i = 0; i < n; i++)
			sym_spec_deep(st, items[i], depth + 1);
	}
}

/* Symbols for the sizes of a tensor input, per the config, the frame's
 * memory of changed sizes and the tensor's marks. NULL: all static. */
int *sym_input(struct tstate *st, const tensor *t, int src)
{
	unsigned mask = 0;
	if (st->cfg->dynamic == DYN_ALWAYS) {
		mask = ~0u;
	} else if (st->cfg->dynamic == DYN_AUTO && st->cfg->dyn) {
		struct dyn_state *ds = st->cfg->dyn;
		const char *text = guards_source_text(st->gs, src);
		struct dyn_record *r = NULL;
		for (int i = 0; i < ds->n; i++)
			if (strcmp(ds->recs[i].source, text) == 0)
				r = &ds->recs[i];
		if (!r) {
			if (ds->n == ds->cap) {
				int cap = ds->cap ? ds->cap * 2 : 4;
				ds->recs = trace_realloc(st, ds->recs, sizeof *ds->recs * (size_t)cap);
				ds->cap = cap;
			}
			char *source = trace_strdup(st, text);
			r = &ds->recs[ds->n++];
			memset(r, 0, sizeof *r);
			r->source = source;
			r->ndim = t->ndim;
			memcpy(r->shape, t->shape, sizeof(int64_t) * (size_t)t->ndim);
		} else if (r->ndim != t->ndim) {
			r->ndim = t->ndim;
			r->changed = 0;
			memcpy(r->shape, t->shape, sizeof(int64_t) * (size_t)t->ndim);
		} else {
			for (int d = 0; d < t->ndim; d++)
				if (r->shape[d] != t->shape[d]) {
					r->changed |= 1u << d;
					r->shape[d] = t->shape[d];
				}
		}
		mask = r->changed;
	}
	mask |= t->dyn_mark; /* mark_dynamic wins over dynamic=False, as in PyTorch */
	mask &= ~(unsigned)t->static_mark;
	int *syms = NULL;
	for (int d = 0; d < t->ndim; d++) {
		if (!(mask & (1u << d)) || t->shape[d] < 2)
			continue;
		if (!syms) {
			syms = trace_alloc(st, sizeof(int) * TENSOR_MAX_DIMS);
			for (int k = 0; k < TENSOR_MAX_DIMS; k++)
				syms[k] = -1;
		}
		if (st->nsyms == st->symcap) {
			int cap = st->symcap ? st->symcap * 2 : 16;
			st->syms = trace_realloc(st, st->syms, sizeof *st->syms * (size_t)cap);
			st->symcap = cap;
		}
		int id = st->nsyms++;
		struct tsym *y = &st->syms[id];
		memset(y, 0, sizeof *y);
		y->value = t->shape[d];
		y->parent = id;
		y->src = src;
		y->dim = d;
		if (st->cur) {
			struct src_loc l = trace_loc(st->cur);
			y->where = st->cur->code->src;
			y->line = l.line;
			y->col = l.col;
			y->function = st->cur->code->name;
		}
		syms[d] = id;
		if (id >= st->nlogged) {
			st->nlogged = id + 1;
			if (st->cfg->log && (compile_log_artifacts(st->cfg->log) & LOG_DYNAMIC)) {
				struct strbuf sb = STRBUF_INIT;
				sb_printf(&sb, "create_symbol s%d = %lld for %s.shape[%d]", id, (long long)y->value,
					  guards_source_text(st->gs, src), d);
				if (y->where)
					sb_printf(&sb, " # %s:%d in %s", y->where->path, y->line, y->function);
				compile_log_text(st->cfg->log, st->compile_id, sb.buf);
				sb_release(&sb);
			}
		}
	}
	return syms;
}

/* Size d of tensor variable t read as an int: a symbolic int when the
 * dimension is symbolic (its shape guard names the symbol; any use as a
 * Python value specializes it, see var_realize()), else a constant. */
struct var *sym_int_var(struct tstate *st, struct var *t, int d)
{
	need_tensor(st, t->src, t->ex, t->syms);
	int s = vsym(st, t, d);
	if (s < 0)
		return var_const_owned(st, val_int(t->ex->shape[d]));
	struct var *r = var_new(st, VK_SYMINT);
	r->v = val_int(t->ex->shape[d]);
	r->isym = s;
	r->self = t;
	r->n = d;
	return r;
}

/* ---- the symbols of op results: the op's shape rule (ops_meta.h) ---- */

static int norm_dim(int64_t d, int ndim)
{
	if (d < 0)
		d += ndim;
	return d < 0 || d >= ndim ? -1 : (int)d;
}

/* the symbolic ints in an argument are used as values: specialized */
static void spec_symints(struct tstate *st, struct var *v, int depth)
{
	if (v && v->kind == VK_LAZY)
		v = v->real;
	if (!v || depth > TRACE_MAX_NEST)
		return;
	if (v->kind == VK_SYMINT) {
		sym_spec(st, v->isym);
	} else if (v->kind == VK_LIST || v->kind == VK_TUPLE) {
		int n = v->kind == VK_LIST ? v->rec->n : v->n;
		struct var **items = v->kind == VK_LIST ? v->rec->items : v->items;
		for (int i = 0; i < n; i++)
			spec_symints(st, items[i], depth + 1);
	}
}

/* The symbolic ints among an op's arguments, before the op becomes a
 * node: only the size arguments of the rules that take symbolic sizes
 * stay symbolic; any other is used as its value (specialized), so that
 * the node's argument is the constant. */
void sym_before_op(struct tstate *st, int op, struct var **args, int n)
{
	if (st->nsyms && !meta_takes_sym_sizes(op))
		for (int i = 0; i < n; i++)
			spec_symints(st, args[i], 0);
}

/* the tracer's union-find as a rule's context */
struct sym_ctx {
	struct meta_ctx base;
	struct tstate *st;
};

static int ctx_find(struct meta_ctx *c, int s) { return sym_live(((struct sym_ctx *)c)->st, s); }
static int ctx_unify(struct meta_ctx *c, int a, int b) { return sym_unify(((struct sym_ctx *)c)->st, a, b); }
static void ctx_spec(struct meta_ctx *c, int s) { sym_spec(((struct sym_ctx *)c)->st, s); }

/* a variable as a rule sees it (made in the arena; the variable is
 * realized already, as its graph argument was made first) */
static void meta_arg_of(struct tstate *st, struct var *v, struct meta_arg *out, int depth)
{
	memset(out, 0, sizeof *out);
	if (v && v->kind == VK_SYMINT) {
		out->kind = META_SYMINT;
		out->s = (struct sym_size){v->v.i, v->isym};
		return;
	}
	v = var_realize(st, v);
	switch ((enum vkind)v->kind) {
	case VK_TENSOR: {
		struct meta_tensor *t = trace_alloc(st, sizeof *t);
		t->dt = v->ex->dt;
		t->ndim = v->ex->ndim;
		for (int d = 0; d < t->ndim; d++)
			t->shape[d] = (struct sym_size){v->ex->shape[d], v->syms ? v->syms[d] : -1};
		out->kind = META_TENSOR;
		out->t = t;
		return;
	}
	case VK_CONST:
		out->kind = META_CONST;
		out->v = v->v;
		return;
	case VK_LIST:
	case VK_TUPLE: {
		int n = var_seq_n(st, v);
		struct var **items = var_seq_items(st, v);
		if (depth > TRACE_MAX_NEST)
			trace_fail(st, "nested too deep");
		struct meta_arg *a = trace_alloc(st, sizeof *a * (size_t)(n ? n : 1));
		for (int i = 0; i < n; i++)
			meta_arg_of(st, items[i], &a[i], depth + 1);
		out->kind = v->kind == VK_LIST ? META_LIST : META_TUPLE;
		out->n = n;
		out->items = a;
		return;
	}
	default:
		trace_fail(st, "a %s as an op argument", var_kind_name(st, v));
	}
}

/* Runs op's rule on its normalized arguments: *out the dtype, sizes and
 * symbols of each result, the symbols unified and specialized as the rule
 * says. A bad argument ends the trace with the kernel's message (the
 * frame then runs in the VM, which raises it). */
void sym_infer(struct tstate *st, int op, struct var **args, int n, struct meta_out *out)
{
	struct meta_arg *a = trace_alloc(st, sizeof *a * (size_t)(n ? n : 1));
	for (int i = 0; i < n; i++)
		meta_arg_of(st, args[i], &a[i], 0);
	struct sym_ctx ctx = {{ctx_find, ctx_unify, ctx_spec}, st};
	if (meta_infer(op, a, &ctx.base, out) < 0)
		trace_fail_pending(st);
}

/* x.shape, x.size(), x.size(d) of a tensor with symbols: a symbolic int
 * for a symbolic dimension, a constant for the others (the shape guard
 * covers both). NULL: not that case, the general path. */
struct var *sym_sizes(struct tstate *st, int op, struct var **args)
{
	struct var *t = var_realize(st, args[0]);
	if (t->kind != VK_TENSOR || !t->syms)
		return NULL;
	int nd = t->ex->ndim, d = -1;
	if (op == OPS_size) {
		struct var *dv = var_realize(st, args[1]);
		if (dv->kind != VK_CONST)
			return NULL;
		value x = var_value(st, dv);
		if (x.tag == VAL_INT) {
			d = norm_dim(x.i, nd);
			if (d < 0)
				return NULL;
		} else if (x.tag != VAL_NONE) {
			return NULL;
		}
	}
	if (d >= 0)
		return sym_int_var(st, t, d);
	struct var **items = trace_alloc(st, sizeof(struct var *) * (size_t)(nd ? nd : 1));
	for (int k = 0; k < nd; k++)
		items[k] = sym_int_var(st, t, k);
	return var_tuple(st, nd, items);
}

/* The symbols as the trace left them: the graph's sizes name the root of
 * each symbol (or its value, when specialized); each shape guard's
 * symbolic sizes become `>= 2` at a symbol's first input dimension and
 * `== sN` at the others, and a specialized size is checked by value. */
static void garg_syms(struct tstate *st, struct garg *a, const bool *bound, int pass, int *maxsym)
{
	if (a->kind == GARG_LIST || a->kind == GARG_TUPLE) {
		for (int i = 0; i < a->n; i++)
			garg_syms(st, &a->items[i], bound, pass, maxsym);
		return;
	}
	if (a->kind != GARG_SYM)
		return;
	int r = sym_find(st, a->sym);
	if (pass == 0) {
		if (!bound[r])
			sym_spec(st, r);
		return;
	}
	if (st->syms[r].spec) {
		a->kind = GARG_CONST;
		a->constant = val_int(st->syms[r].value);
		return;
	}
	a->sym = r;
	if (r > *maxsym)
		*maxsym = r;
}

void sym_finish(struct tstate *st)
{
	if (!st->nsyms)
		return;
	struct graph *g = st->g;
	int maxsym = -1;
	/* a symbolic size argument takes its value from an input's size when
	 * the graph runs (tnode made the tensor it came from an input); one
	 * that no input binds is specialized, to be safe */
	bool *bound = trace_alloc(st, sizeof *bound * (size_t)st->nsyms);
	for (int i = 0; i < g->nnodes; i++)
		for (int d = 0; g->nodes[i].kind == GN_INPUT && d < g->nodes[i].ndim; d++)
			if (g->nodes[i].shape[d].sym >= 0)
				bound[sym_find(st, g->nodes[i].shape[d].sym)] = true;
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < g->nnodes; i++)
			for (int k = 0; k < g->nodes[i].nargs; k++)
				garg_syms(st, &g->nodes[i].args[k], bound, pass, &maxsym);
	for (int i = 0; i < g->nnodes; i++) {
		struct gnode *n = &g->nodes[i];
		for (int d = 0; d < n->ndim; d++) {
			if (n->shape[d].sym < 0)
				continue;
			int r = sym_find(st, n->shape[d].sym);
			n->shape[d].sym = st->syms[r].spec ? -1 : r;
			if (n->shape[d].sym > maxsym)
				maxsym = n->shape[d].sym;
		}
	}
	g->nsyms = maxsym + 1;
	int *first_src = trace_alloc(st, sizeof(int) * (size_t)st->nsyms);
	int *first_dim = trace_alloc(st, sizeof(int) * (size_t)st->nsyms);
	for (int i = 0; i < st->nsyms; i++)
		first_src[i] = -1, first_dim[i] = 0;
	int ng = st->gs->nguards;
	for (int i = 0; i < ng; i++) {
		struct guard *sg = &st->gs->guards[i];
		if (sg->kind != GK_SHAPE)
			continue;
		bool changed = false;
		for (int d = 0; d < sg->ndim; d++) {
			if (sg->shape[d] >= 0)
				continue;
			changed = true;
			int r = sym_find(st, sg->dimsym[d]);
			if (st->syms[r].spec) {
				sg->shape[d] = st->syms[r].value;
				continue;
			}
			sg->dimsym[d] = r;
			struct guard dg = {.kind = GK_DIM, .source = sg->source, .expect = val_none(), .n = d};
			dg.dimsym[0] = r;
			if (first_src[r] < 0) {
				first_src[r] = sg->source;
				first_dim[r] = d;
				dg.ndim = -1;
				dg.src = st->syms[r].where;
				dg.line = st->syms[r].line;
				dg.col = st->syms[r].col;
				dg.function = st->syms[r].function;
			} else {
				dg.ndim = first_src[r];
				dg.shape[0] = first_dim[r];
				dg.src = sg->src;
				dg.line = sg->line;
				dg.col = sg->col;
				dg.function = sg->function;
			}
			if (guards_add(st->gs, &dg) < 0)
				trace_oom(st);
			sg = &st->gs->guards[i]; /* guards_add may move the array */
		}
		if (changed)
			guards_retext(st->gs, i);
	}
}
