/* trace_vars.c - the trace's memory (an arena per attempt, the references
 * it holds) and its variables: constants, lists (shared records, so that
 * aliases see mutations), tuples, cells, and frame inputs realized on
 * first use (doc/tracer.md, "Symbolic values").
 */
#include <stdlib.h>
#include <string.h>

#include "builtin.h"
#include "trace_impl.h"
#include "util.h"

/* ---- the arena ---- */

/* n zeroed bytes in the attempt's arena (core/base/arena.h) */
void *trace_alloc(struct tstate *st, size_t n)
{
	void *p = arena_alloc(&st->arena, n);
	if (!p)
		trace_oom(st);
	return p;
}

void *trace_calloc(struct tstate *st, size_t n, size_t size)
{
	void *p = util_calloc(n, size);
	if (!p)
		trace_oom(st);
	return p;
}

void *trace_realloc(struct tstate *st, void *p, size_t n)
{
	void *q = util_realloc(p, n);
	if (!q)
		trace_oom(st);
	return q;
}

char *trace_strdup(struct tstate *st, const char *s)
{
	char *d = util_strdup(s);
	if (s && !d)
		trace_oom(st);
	return d;
}

int trace_source(struct tstate *st, enum source_kind kind, int parent, int index, const char *name)
{
	int src = guards_source(st->gs, kind, parent, index, name);
	if (src < 0)
		trace_oom(st);
	return src;
}

int trace_node_add(struct tstate *st)
{
	int idx = graph_add(st->g, &st->node);
	memset(&st->node, 0, sizeof st->node);
	if (idx < 0)
		trace_oom(st);
	return idx;
}

value trace_hold(struct tstate *st, value v)
{
	if (v.tag < VAL_FIRST_HEAP)
		return v;
	if (st->nheld == st->heldcap) {
		int cap = st->heldcap ? st->heldcap * 2 : 256;
		value *held = util_realloc(st->held, sizeof(value) * (size_t)cap);
		if (!held) {
			val_decref(v); /* the trace owned it */
			trace_oom(st);
		}
		st->held = held;
		st->heldcap = cap;
	}
	st->held[st->nheld++] = v;
	return v;
}

/* takes a new reference to v and keeps it for the trace */
value trace_keep(struct tstate *st, value v)
{
	val_incref(v);
	return trace_hold(st, v);
}

/* ---- variables ---- */

struct var *var_new(struct tstate *st, enum vkind k)
{
	struct var *v = trace_alloc(st, sizeof *v);
	v->kind = (uint8_t)k;
	v->src = -1;
	v->psrc = -1;
	v->skind = -1;
	v->node = -1;
	v->op = -1;
	v->v = val_none();
	return v;
}

struct var *var_const(struct tstate *st, value v)
{
	struct var *r = var_new(st, VK_CONST);
	r->v = trace_keep(st, v);
	return r;
}

/* a constant from a new reference */
struct var *var_const_owned(struct tstate *st, value v)
{
	struct var *r = var_new(st, VK_CONST);
	r->v = trace_hold(st, v);
	return r;
}

struct var *var_tuple(struct tstate *st, int n, struct var **items)
{
	struct var *t = var_new(st, VK_TUPLE);
	t->n = n;
	t->items = trace_alloc(st, sizeof(struct var *) * (size_t)(n ? n : 1));
	for (int i = 0; i < n; i++)
		t->items[i] = items[i];
	return t;
}

static struct seqrec *seqrec_new(struct tstate *st, int n)
{
	struct seqrec *r = trace_alloc(st, sizeof *r);
	r->cap = n > 4 ? n : 4;
	r->items = trace_alloc(st, sizeof(struct var *) * (size_t)r->cap);
	r->n = n;
	r->src = -1;
	r->obj = val_none();
	r->real = val_none();
	r->len_known = true;
	r->memo = -1;
	if (st->nrecs == st->reccap) {
		int cap = st->reccap ? st->reccap * 2 : 16;
		st->recs = trace_realloc(st, st->recs, sizeof *st->recs * (size_t)cap);
		st->reccap = cap;
	}
	st->recs[st->nrecs++] = r;
	return r;
}

void seqrec_insert(struct tstate *st, struct seqrec *r, int at, struct var *v)
{
	if (r->n == r->cap) {
		int ncap = r->cap * 2;
		struct var **ni = trace_alloc(st, sizeof(struct var *) * (size_t)ncap);
		memcpy(ni, r->items, sizeof(struct var *) * (size_t)r->n);
		r->items = ni;
		r->cap = ncap;
	}
	memmove(r->items + at + 1, r->items + at, sizeof(struct var *) * (size_t)(r->n - at));
	r->items[at] = v;
	r->n++;
}

struct var *var_list(struct tstate *st, int n, struct var **items)
{
	struct var *l = var_new(st, VK_LIST);
	l->rec = seqrec_new(st, n);
	for (int i = 0; i < n; i++)
		l->rec->items[i] = items[i];
	return l;
}

/* ---- sources, and the items of lists and tuples ---- */

int var_source(struct tstate *st, struct var *v)
{
	if (v->src < 0 && v->psrc >= 0)
		v->src = trace_source(st, SRC_ITEM, v->psrc, v->pidx, NULL);
	if (v->src < 0 && v->skind >= 0)
		v->src = trace_source(st, (enum source_kind)v->skind, -1, v->sidx, v->sname);
	return v->src;
}

/* The trace reads a list's length or items: for a list from outside, its
 * length is guarded from then on. */
struct seqrec *seqrec_read(struct tstate *st, struct seqrec *r)
{
	if (!r->len_known) {
		r->len_known = true;
		need_len(st, r->src, r->real);
	}
	return r;
}

/* the items of a list or tuple variable (the trace now depends on them) */
int var_seq_n(struct tstate *st, struct var *v)
{
	return v->kind == VK_LIST ? seqrec_read(st, v->rec)->n : v->n;
}
struct var **var_seq_items(struct tstate *st, struct var *v)
{
	return v->kind == VK_LIST ? seqrec_read(st, v->rec)->items : v->items;
}

/* ---- realizing inputs ---- */

struct var *var_lazy(struct tstate *st, value v, int src)
{
	struct var *r = var_new(st, VK_LAZY);
	r->v = trace_keep(st, v);
	r->src = src;
	return r;
}

static struct var *var_lazy_item(struct tstate *st, value v, int psrc, int idx)
{
	struct var *r = var_new(st, VK_LAZY);
	r->v = trace_keep(st, v);
	r->psrc = psrc;
	r->pidx = idx;
	return r;
}

/* A variable for a real value: lists and tuples item by item (lazily),
 * tensors as graph inputs to be, other values as constants. */
struct var *var_wrap(struct tstate *st, value v, int src, int depth)
{
	if (depth > TRACE_MAX_NEST)
		trace_graph_break(st, BRK_UNSUPPORTED, "lists or tuples nested more than %d deep", TRACE_MAX_NEST);
	switch ((value_tag)v.tag) {
	case VAL_TENSOR: {
		struct var *t = var_new(st, VK_TENSOR);
		t->ex = val_as_tensor(trace_keep(st, v));
		t->rg = t->ex->requires_grad;
		t->src = src;
		if (src >= 0)
			t->syms = sym_input(st, t->ex, src);
		return t;
	}
	case VAL_LIST:
		/* one list reached two ways is one record: a mutation through one
		 * is seen through the other (and the trace assumes they stay one) */
		for (int i = 0; i < st->nrecs; i++) {
			struct seqrec *r = st->recs[i];
			if (r->real.tag != VAL_LIST || r->real.o != v.o)
				continue;
			if (src >= 0 && r->src >= 0 && src != r->src) {
				struct guard g = {.kind = GK_ALIAS, .source = src, .expect = val_bool(true), .n = r->src};
				need_guard(st, &g);
			} else if (src >= 0) {
				need_id(st, src, v);
			}
			struct var *l = var_new(st, VK_LIST);
			l->rec = r;
			l->src = src;
			return l;
		}
		/* fall through */
	case VAL_TUPLE: {
		/* a tuple's length is guarded at once; a list's when the trace reads
		 * it (appending to a list from outside does not depend on it) */
		if (v.tag == VAL_TUPLE)
			need_len(st, src, v);
		else
			need_type(st, src, v);
		size_t n = v.tag == VAL_LIST ? val_list(v)->len : val_tuple(v)->len;
		const value *items = v.tag == VAL_LIST ? val_list(v)->items : val_tuple(v)->items;
		if (n > 100000)
			trace_graph_break(st, BRK_UNSUPPORTED, "a %s of %zu items", val_type_name(v), n);
		struct var **iv = trace_alloc(st, sizeof(struct var *) * (n ? n : 1));
		for (size_t i = 0; i < n; i++)
			iv[i] = src >= 0 ? var_lazy_item(st, items[i], src, (int)i) : var_lazy(st, items[i], -1);
		struct var *r;
		if (v.tag == VAL_LIST) {
			r = var_list(st, (int)n, iv);
			r->rec->src = src;
			r->rec->real = trace_keep(st, v);
			r->rec->orig_n = (int)n;
			r->rec->len_known = src < 0;
			if (src < 0)
				r->rec->obj = v;
		} else {
			r = var_tuple(st, (int)n, iv);
		}
		r->src = src;
		return r;
	}
	case VAL_BOUND: {
		/* a method bound before a graph break, on the operand stack of
		 * the resume point (out.append(x.item())): a list's method on
		 * the list itself (reached as L['___stack0'].__self__, so that
		 * it is one record with the list reached otherwise), a string's
		 * as a constant whose value is guarded. Its receiver's type is
		 * guarded, and the method by identity (L['___stack0'].__func__):
		 * a slot or a local may hold another method of the same object
		 * at the next call (m = xs.append, then xs.remove). */
		struct bound *b = (struct bound *)v.o;
		if (src >= 0 && b->fn.tag == VAL_BUILTIN) {
			const char *name = ((struct builtin *)b->fn.o)->name;
			bool list_method = b->self.tag == VAL_LIST && strncmp(name, "list.", 5) == 0;
			bool str_method = b->self.tag == VAL_STR && strncmp(name, "str.", 4) == 0;
			if (list_method || str_method)
				need_id(st, trace_source(st, SRC_FUNC, src, 0, NULL), b->fn);
			if (list_method) {
				int ssrc = trace_source(st, SRC_SELF, src, 0, NULL);
				struct var *m = var_new(st, VK_LISTMETH);
				m->self = var_realize(st, var_wrap(st, b->self, ssrc, depth + 1));
				m->v = trace_hold(st, str_intern(name + 5, strlen(name + 5)));
				return m;
			}
			if (str_method) {
				int ssrc = trace_source(st, SRC_SELF, src, 0, NULL);
				need_type(st, ssrc, b->self);
				need_value(st, ssrc, b->self);
				return var_const(st, v);
			}
		}
	}
	/* fall through */
	case VAL_ITER:
	case VAL_CELL:
	case VAL_CODE: {
		struct var *o = var_new(st, VK_OPAQUE);
		o->v = trace_keep(st, v);
		o->src = src;
		return o;
	}
	default: {
		struct var *c = var_const(st, v);
		c->src = src;
		return c;
	}
	}
}

/* What a variable is, for the instruction that uses it. A symbolic int
 * used here is used as a Python value (arithmetic, a comparison, range(),
 * printing...): its symbol is specialized and it is that constant. Only
 * the size arguments of the ops that take symbolic sizes (op_emit) read
 * a VK_SYMINT without R. */
struct var *var_realize(struct tstate *st, struct var *v)
{
	if (!v)
		trace_fail(st, "unbound variable");
	if (v->kind == VK_SYMINT) {
		sym_spec(st, v->isym);
		if (!v->real)
			v->real = var_const(st, v->v);
		return v->real;
	}
	if (v->kind != VK_LAZY)
		return v;
	if (!v->real) {
		int src = var_source(st, v);
		v->real = var_wrap(st, v->v, src, 0);
	}
	return v->real;
}

/* a constant's value, its guard installed */
value var_value(struct tstate *st, struct var *v)
{
	v = var_realize(st, v);
	if (v->kind != VK_CONST)
		trace_fail(st, "not a constant");
	need_value(st, v->src, v->v);
	return v->v;
}

bool var_is_const(struct tstate *st, struct var *v)
{
	return var_realize(st, v)->kind == VK_CONST;
}

const char *var_kind_name(struct tstate *st, struct var *v)
{
	v = var_realize(st, v);
	switch ((enum vkind)v->kind) {
	case VK_TENSOR: return "Tensor";
	case VK_CONST: return val_type_name(v->v);
	case VK_LIST: return "list";
	case VK_TUPLE: return "tuple";
	case VK_ITER: return "iterator";
	case VK_METHOD:
	case VK_LISTMETH: return "method";
	case VK_NESTED: return "function";
	case VK_CELLREF: return "cell";
	case VK_OPAQUE: return val_type_name(v->v);
	case VK_LAZY:
	case VK_SYMINT: break;
	}
	return "object";
}

/* ---- Python values ---- */

/* whether v is made of constants only (lists and tuples of them) */
bool var_all_const(struct tstate *st, struct var *v, int depth)
{
	v = var_realize(st, v);
	if (v->kind == VK_CONST)
		return true;
	if ((v->kind == VK_LIST || v->kind == VK_TUPLE) && depth < TRACE_MAX_NEST) {
		int n = var_seq_n(st, v);
		struct var **items = var_seq_items(st, v);
		for (int i = 0; i < n; i++)
			if (!var_all_const(st, items[i], depth + 1))
				return false;
		return true;
	}
	return false;
}

/* the real value of an var_all_const variable (guards for every constant) */
value var_deep_value(struct tstate *st, struct var *v, int depth)
{
	v = var_realize(st, v);
	if (v->kind == VK_CONST)
		return var_value(st, v);
	int n = var_seq_n(st, v);
	struct var **items = var_seq_items(st, v);
	value c = v->kind == VK_LIST ? list_new((size_t)n) : tuple_new((size_t)n);
	trace_hold(st, c);
	value *dst = v->kind == VK_LIST ? val_list(c)->items : val_tuple(c)->items;
	for (int i = 0; i < n; i++) {
		dst[i] = var_deep_value(st, items[i], depth + 1);
		val_incref(dst[i]);
	}
	if (v->kind == VK_LIST)
		val_list(c)->len = (size_t)n;
	return c;
}

/* a variable for the result of a pure computation: lists become records */
static struct var *var_from_result_at(struct tstate *st, value r, int depth);

struct var *var_from_result(struct tstate *st, value r)
{
	return var_from_result_at(st, r, 0);
}

static struct var *var_from_result_at(struct tstate *st, value r, int depth)
{
	if (val_is_err(r))
		trace_fail_pending(st);
	trace_hold(st, r);
	if (depth > TRACE_MAX_NEST)
		trace_graph_break(st, BRK_UNSUPPORTED, "a value nested more than %d deep", TRACE_MAX_NEST);
	if (r.tag == VAL_LIST || r.tag == VAL_TUPLE) {
		size_t n = r.tag == VAL_LIST ? val_list(r)->len : val_tuple(r)->len;
		const value *items = r.tag == VAL_LIST ? val_list(r)->items : val_tuple(r)->items;
		struct var **iv = trace_alloc(st, sizeof(struct var *) * (n ? n : 1));
		for (size_t i = 0; i < n; i++)
			iv[i] = var_from_result_at(st, (val_incref(items[i]), items[i]), depth + 1);
		return r.tag == VAL_LIST ? var_list(st, (int)n, iv) : var_tuple(st, (int)n, iv);
	}
	if (r.tag == VAL_TENSOR)
		trace_graph_break(st, BRK_UNSUPPORTED, "a tensor made outside the graph");
	struct var *c = var_new(st, VK_CONST);
	c->v = r;
	return c;
}

/* an index that is an int, with its guard */
int64_t var_int(struct tstate *st, struct var *v)
{
	value x = var_value(st, v);
	if (x.tag == VAL_INT)
		return x.i;
	if (x.tag == VAL_BOOL)
		return x.b;
	trace_fail(st, "not an integer");
}

struct cellrec *cellrec_new(struct tstate *st, struct var *content)
{
	struct cellrec *c = trace_alloc(st, sizeof *c);
	c->content = content;
	c->root_index = -1;
	c->real = val_none();
	c->memo = -1;
	return c;
}

struct var *var_none(struct tstate *st) { return var_const(st, val_none()); }
