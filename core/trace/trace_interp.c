/* trace_interp.c - the tracer's interpreter loop: the bytecode of the
 * traced frame (and of every call it inlines) run over variables, with
 * Python's operators on them, inlined calls bound as the VM binds them,
 * and the globals and cells the trace reads and writes.
 */
#include <stdlib.h>
#include <string.h>

#include "builtin.h"
#include "compiled_fn.h"
#include "ops.h"
#include "trace_impl.h"

/* ---- operators ---- */

static bool operand_ok(struct tstate *st, struct var *v)
{
	v = var_realize(st, v);
	return v->kind == VK_TENSOR ||
	       (v->kind == VK_CONST && (v->v.tag == VAL_INT || v->v.tag == VAL_FLOAT || v->v.tag == VAL_BOOL));
}

struct var *interp_binary(struct tstate *st, enum vm_binop op, struct var *a, struct var *b)
{
	struct var *ra = var_realize(st, a), *rb = var_realize(st, b);
	if (ra->kind == VK_TENSOR || rb->kind == VK_TENSOR) {
		if (!operand_ok(st, ra) || !operand_ok(st, rb) ||
		    (op == VB_MATMUL && (ra->kind != VK_TENSOR || rb->kind != VK_TENSOR)))
			trace_fail(st, "unsupported operand types");
		struct var *args[2] = {ra, rb};
		return op_emit(st, ops_of_binop(op), args);
	}
	if (ra->kind == VK_CONST && rb->kind == VK_CONST)
		return var_from_result(st, vm_binary(op, var_value(st, ra), var_value(st, rb)));
	/* sequences: concatenation and repetition */
	if (op == VB_ADD && var_is_seq(ra) && var_is_seq(rb) && ra->kind == rb->kind) {
		int n = var_seq_n(st, ra) + var_seq_n(st, rb);
		struct var **items = trace_alloc(st, sizeof(struct var *) * (size_t)(n ? n : 1));
		memcpy(items, var_seq_items(st, ra), sizeof(struct var *) * (size_t)var_seq_n(st, ra));
		memcpy(items + var_seq_n(st, ra), var_seq_items(st, rb),
		       sizeof(struct var *) * (size_t)var_seq_n(st, rb));
		return ra->kind == VK_LIST ? var_list(st, n, items) : var_tuple(st, n, items);
	}
	if (op == VB_MUL && ((var_is_seq(ra) && rb->kind == VK_CONST) || (var_is_seq(rb) && ra->kind == VK_CONST))) {
		struct var *s = var_is_seq(ra) ? ra : rb;
		value k = var_value(st, var_is_seq(ra) ? rb : ra);
		if (k.tag != VAL_INT && k.tag != VAL_BOOL)
			trace_fail(st, "can't multiply sequence by non-int");
		int64_t times = k.tag == VAL_BOOL ? k.b : k.i;
		if (times < 0)
			times = 0;
		int64_t n = (int64_t)var_seq_n(st, s) * times;
		if (n > 100000)
			trace_graph_break(st, BRK_UNSUPPORTED, "a sequence of %lld items", (long long)n);
		struct var **items = trace_alloc(st, sizeof(struct var *) * (size_t)(n ? n : 1));
		for (int64_t i = 0; i < n; i++)
			items[i] = var_seq_items(st, s)[i % var_seq_n(st, s)];
		return s->kind == VK_LIST ? var_list(st, (int)n, items) : var_tuple(st, (int)n, items);
	}
	if (var_all_const(st, ra, 0) && var_all_const(st, rb, 0))
		return var_from_result(st, vm_binary(op, var_deep_value(st, ra, 0), var_deep_value(st, rb, 0)));
	trace_graph_break(st, BRK_UNSUPPORTED,
			  "%s %s %s", var_kind_name(st, ra), code_binop_symbol(op), var_kind_name(st, rb));
}

/* a is b: what the trace knows about identity */
static struct var *identity(struct tstate *st, enum vm_cmpop op, struct var *a, struct var *b)
{
	struct var *ra = var_realize(st, a), *rb = var_realize(st, b);
	bool same;
	if (ra == rb) {
		same = true;
	} else if (ra->kind == VK_CONST && rb->kind == VK_CONST) {
		value r = vm_compare(VC_IS, var_value(st, ra), var_value(st, rb));
		if (val_is_err(r))
			trace_fail_pending(st);
		same = r.b;
	} else if (ra->kind == VK_CONST || rb->kind == VK_CONST) {
		/* a constant and something that is not (None, numbers, ... vs a tensor or list) */
		struct var *c = ra->kind == VK_CONST ? ra : rb;
		need_value(st, c->src, c->v);
		struct var *o = ra->kind == VK_CONST ? rb : ra;
		if (o->kind == VK_OPAQUE)
			trace_graph_break(st, BRK_UNSUPPORTED, "'is' on a %s", var_kind_name(st, o));
		same = false;
	} else if (ra->kind == VK_TENSOR && rb->kind == VK_TENSOR) {
		/* two tensors from outside are one object or two: guarded
		 * (L['y'] is L['x'], or is not); a tensor the graph makes is
		 * a new object, never one from outside nor another */
		same = false;
		if (ra->src >= 0 && rb->src >= 0) {
			same = ra->ex == rb->ex;
			struct guard g = {.kind = GK_ALIAS,
					  .source = ra->src > rb->src ? ra->src : rb->src,
					  .expect = val_bool(same),
					  .n = ra->src > rb->src ? rb->src : ra->src};
			need_guard(st, &g);
		}
	} else if (ra->kind == VK_LIST && rb->kind == VK_LIST) {
		same = ra->rec == rb->rec;
		if (!same && ra->rec->src >= 0 && rb->rec->src >= 0)
			trace_graph_break(st, BRK_UNSUPPORTED, "'is' between two lists from outside");
	} else if (ra->kind != rb->kind) {
		same = false;
	} else {
		trace_graph_break(st, BRK_UNSUPPORTED, "'is' between two %ss", var_kind_name(st, ra));
	}
	return var_const(st, val_bool(op == VC_IS ? same : !same));
}

static struct var *compare(struct tstate *st, enum vm_cmpop op, struct var *a, struct var *b)
{
	if (op == VC_IS || op == VC_IS_NOT)
		return identity(st, op, a, b);
	struct var *ra = var_realize(st, a), *rb = var_realize(st, b);
	if (ra->kind == VK_TENSOR || rb->kind == VK_TENSOR) {
		if (op == VC_IN || op == VC_NOT_IN) {
			if (rb->kind == VK_TENSOR && operand_ok(st, ra))
				trace_graph_break(st, BRK_TENSOR_DATA, "'in' on a tensor");
			if (var_is_seq(rb) || rb->kind == VK_CONST)
				trace_graph_break(st, BRK_UNSUPPORTED,
						  "'in' with a tensor and a %s", var_kind_name(st, rb));
			trace_fail(st, "unsupported 'in'");
		}
		if (!operand_ok(st, ra) || !operand_ok(st, rb)) {
			if (op == VC_EQ || op == VC_NE) {
				struct var *o = ra->kind == VK_TENSOR ? rb : ra;
				if (o->kind == VK_CONST)
					need_type(st, o->src, o->v);
				return var_const(st, val_bool(op == VC_NE));
			}
			trace_fail(st, "unsupported comparison");
		}
		struct var *args[2] = {ra, rb};
		return op_emit(st, ops_of_cmpop(op), args);
	}
	if (ra->kind == VK_CONST && rb->kind == VK_CONST)
		return var_from_result(st, vm_compare(op, var_value(st, ra), var_value(st, rb)));
	if (var_all_const(st, ra, 0) && var_all_const(st, rb, 0))
		return var_from_result(st, vm_compare(op, var_deep_value(st, ra, 0), var_deep_value(st, rb, 0)));
	/* x in a list of constants and tensors: equality with each item */
	if ((op == VC_IN || op == VC_NOT_IN) && var_is_seq(rb) && ra->kind == VK_CONST) {
		bool found = false;
		for (int i = 0; i < var_seq_n(st, rb) && !found; i++) {
			struct var *it = var_realize(st, var_seq_items(st, rb)[i]);
			if (it->kind == VK_CONST) {
				value r = vm_compare(VC_EQ, var_value(st, ra), var_value(st, it));
				if (val_is_err(r))
					trace_fail_pending(st);
				found = r.tag == VAL_BOOL && r.b;
				val_decref(r);
			} else if (it->kind != VK_TENSOR) {
				trace_graph_break(st, BRK_UNSUPPORTED, "'in' on a list of %ss", var_kind_name(st, it));
			} else {
				trace_graph_break(st, BRK_TENSOR_DATA, "'in' on a list of tensors");
			}
		}
		return var_const(st, val_bool(op == VC_IN ? found : !found));
	}
	trace_graph_break(st, BRK_UNSUPPORTED,
			  "%s %s %s", var_kind_name(st, ra), code_cmpop_symbol(op), var_kind_name(st, rb));
}

/* truth of a value for a jump: a tensor breaks with code */
static bool truth(struct tstate *st, struct var *v, int code, const char *what)
{
	v = var_realize(st, v);
	switch ((enum vkind)v->kind) {
	case VK_TENSOR:
		need_meta(st, v);
		if (v->ex->numel != 1)
			trace_fail(st, "ambiguous truth value");
		trace_graph_break(st, code, "%s", what);
	case VK_CONST: {
		bool t;
		if (vm_truth(var_value(st, v), &t) < 0)
			trace_fail_pending(st);
		return t;
	}
	case VK_LIST:
		return seqrec_read(st, v->rec)->n != 0;
	case VK_TUPLE:
		return v->n != 0;
	case VK_OPAQUE:
		trace_graph_break(st, BRK_UNSUPPORTED, "the truth of a %s", var_kind_name(st, v));
	default:
		return true;
	}
}

static struct var *unary_neg(struct tstate *st, struct var *a)
{
	a = var_realize(st, a);
	if (a->kind == VK_TENSOR) {
		struct var *args[1] = {a};
		return op_emit(st, OPS_neg, args);
	}
	if (a->kind == VK_CONST)
		return var_from_result(st, vm_unary_neg(var_value(st, a)));
	trace_fail(st, "bad operand type for unary -");
}

static struct var *subscr(struct tstate *st, struct var *obj, struct var *idx)
{
	struct var *o = var_realize(st, obj), *i = var_realize(st, idx);
	if (o->kind == VK_TENSOR) {
		struct var *args[2] = {o, i};
		return op_emit(st, OPS_getitem, args);
	}
	if (var_is_seq(o)) {
		if (i->kind != VK_CONST)
			trace_graph_break(st, BRK_UNSUPPORTED,
					  "indexing a %s with a %s", var_kind_name(st, o), var_kind_name(st, i));
		value x = var_value(st, i);
		int n = var_seq_n(st, o);
		if (x.tag == VAL_INT || x.tag == VAL_BOOL) {
			int64_t k = x.tag == VAL_BOOL ? x.b : x.i;
			if (k < 0)
				k += n;
			if (k < 0 || k >= n)
				trace_fail(st, "index out of range");
			return var_seq_items(st, o)[k];
		}
		if (x.tag == VAL_SLICE) {
			int64_t start, stop, step, count;
			if (slice_indices(val_slice(x), n, &start, &stop, &step, &count) < 0)
				trace_fail_pending(st);
			struct var **items = trace_alloc(st, sizeof(struct var *) * (size_t)(count ? count : 1));
			for (int64_t k = 0; k < count; k++)
				items[k] = var_seq_items(st, o)[start + k * step];
			return o->kind == VK_LIST ? var_list(st, (int)count, items) : var_tuple(st, (int)count, items);
		}
		trace_fail(st, "bad index");
	}
	if (o->kind == VK_CONST && i->kind == VK_CONST)
		return var_from_result(st, vm_subscript(var_value(st, o), var_value(st, i)));
	trace_graph_break(st, BRK_UNSUPPORTED, "indexing a %s", var_kind_name(st, o));
}

static void store_subscr(struct tstate *st, struct var *obj, struct var *idx, struct var *v)
{
	struct var *o = var_realize(st, obj);
	if (o->kind != VK_LIST) {
		if (o->kind == VK_TENSOR || o->kind == VK_CONST || o->kind == VK_TUPLE)
			trace_fail(st, "item assignment");
		trace_graph_break(st, BRK_UNSUPPORTED, "item assignment to a %s", var_kind_name(st, o));
	}
	struct var *i = var_realize(st, idx);
	if (i->kind != VK_CONST)
		trace_graph_break(st, BRK_UNSUPPORTED, "list item assignment with a %s index", var_kind_name(st, i));
	value x = var_value(st, i);
	if (x.tag != VAL_INT && x.tag != VAL_BOOL)
		trace_graph_break(st, BRK_UNSUPPORTED, "list assignment to a %s index", val_type_name(x));
	int64_t k = x.tag == VAL_BOOL ? x.b : x.i;
	struct seqrec *r = seqrec_read(st, o->rec);
	if (k < 0)
		k += r->n;
	if (k < 0 || k >= r->n)
		trace_fail(st, "list assignment index out of range");
	r->items[k] = v;
	r->mutated = true;
	r->prefix_dirty = true;
}

/* ---- calls ---- */

/* the record of a real cell object of a function's closure: the traced
 * frame's own cells are shared with it */
static struct cellrec *real_cellrec(struct tstate *st, value cell, int fsrc, int i)
{
	struct frame *f = st->f;
	int ncells = f->code->ncellvars + f->code->nfreevars;
	for (int k = 0; k < ncells; k++)
		if (f->cells[k].tag == VAL_CELL && f->cells[k].o == cell.o)
			return st->rootcells[k];
	value content = val_cell(cell)->v;
	struct var *cv = NULL;
	if (!val_is_err(content))
		cv = var_lazy(st, content, fsrc >= 0 ? trace_source(st, SRC_CLOSURE, fsrc, i, NULL) : -1);
	struct cellrec *c = cellrec_new(st, cv);
	c->real = trace_keep(st, cell);
	return c;
}

/* Inlines a call of code: binds the arguments as the VM does (an error
 * ends the trace, the VM raises it), then runs the callee's bytecode. */
static struct var *inline_call(struct tstate *st, struct code *co, value defaults, struct var *dvar,
			       struct cellrec **closure, int nclosure, struct var **args, int nargs, value kwnames)
{
	if (st->cur->depth + 1 >= TRACE_MAX_DEPTH)
		trace_graph_break(st, BRK_INLINE_DEPTH, "%s called at depth %d", co->name, TRACE_MAX_DEPTH);
	if (co->is_module || co->nfreevars != nclosure)
		trace_fail(st, "bad call");
	struct tframe *nf = trace_alloc(st, sizeof *nf);
	nf->code = co;
	nf->parent = st->cur;
	nf->depth = st->cur->depth + 1;
	nf->locals = trace_alloc(st, sizeof(struct var *) * (size_t)(co->nlocals ? co->nlocals : 1));
	int ncells = co->ncellvars + co->nfreevars;
	nf->cells = trace_alloc(st, sizeof(struct cellrec *) * (size_t)(ncells ? ncells : 1));
	nf->stack = trace_alloc(st, sizeof(struct var *) * (size_t)(co->max_stack > 0 ? co->max_stack : 1));
	int nkw = kwnames_count(kwnames), npos = nargs - nkw;
	int nparams = co->nparams;
	if (npos < 0 || npos > nparams || nparams > co->nlocals)
		trace_fail(st, "%s(): bad arguments", co->name);
	for (int i = 0; i < npos; i++)
		nf->locals[i] = args[i];
	for (int k = 0; k < nkw; k++) {
		value kn = val_tuple(kwnames)->items[k];
		int j;
		for (j = 0; j < nparams; j++)
			if (kn.tag == VAL_STR && str_eq_cstr(val_str(kn), co->local_names[j]))
				break;
		if (j == nparams || nf->locals[j])
			trace_fail(st, "%s(): bad keyword argument", co->name);
		nf->locals[j] = args[npos + k];
	}
	int ndef = 0;
	if (dvar)
		ndef = var_seq_n(st, dvar);
	else if (defaults.tag == VAL_TUPLE)
		ndef = (int)val_tuple(defaults)->len;
	if (ndef > nparams)
		ndef = nparams;
	for (int j = nparams - ndef; j < nparams; j++) {
		if (nf->locals[j])
			continue;
		int d = j - (nparams - ndef);
		nf->locals[j] = dvar ? var_seq_items(st, dvar)[d] : var_const(st, val_tuple(defaults)->items[d]);
	}
	for (int j = 0; j < nparams; j++)
		if (!nf->locals[j])
			trace_fail(st, "%s() missing an argument", co->name);
	for (int i = 0; i < co->ncellvars; i++) {
		int p = co->cellvar_param ? co->cellvar_param[i] : -1;
		struct var *content = NULL;
		if (p >= 0 && p < co->nlocals) {
			content = nf->locals[p];
			nf->locals[p] = NULL;
		}
		nf->cells[i] = cellrec_new(st, content);
	}
	for (int i = 0; i < nclosure; i++)
		nf->cells[co->ncellvars + i] = closure[i];
	struct tframe *saved = st->cur;
	st->cur = nf;
	struct var *r = interp_run_frame(st, nf);
	st->cur = saved;
	return r;
}

static struct var *call_user_function(struct tstate *st, struct var *fv, value fn, struct var **args, int nargs,
				      value kwnames)
{
	struct func *f = val_func(fn);
	need_func(st, fv ? fv->src : -1, fn);
	int nfree = f->code->nfreevars;
	struct cellrec **closure = trace_alloc(st, sizeof(struct cellrec *) * (size_t)(nfree ? nfree : 1));
	for (int i = 0; i < nfree; i++) {
		if (f->closure.tag != VAL_TUPLE || (size_t)i >= val_tuple(f->closure)->len ||
		    val_tuple(f->closure)->items[i].tag != VAL_CELL)
			trace_fail(st, "bad closure");
		closure[i] = real_cellrec(st, val_tuple(f->closure)->items[i], fv ? fv->src : -1, i);
	}
	return inline_call(st, f->code, f->defaults, NULL, closure, nfree, args, nargs, kwnames);
}

static struct var *call(struct tstate *st, struct var *callee, struct var **args, int nargs, value kwnames)
{
	struct var *c = var_realize(st, callee);
	switch ((enum vkind)c->kind) {
	case VK_CONST: {
		value fn = c->v;
		switch ((value_tag)fn.tag) {
		case VAL_FUNC:
			return call_user_function(st, c, fn, args, nargs, kwnames);
		case VAL_BUILTIN:
			return py_call_builtin(st, c, fn, args, nargs, kwnames);
		case VAL_TYPE:
			need_value(st, c->src, fn);
			return py_call_type(st, fn, args, nargs, kwnames);
		case VAL_OBJECT: {
			value inner;
			enum api_kind k = compiled_fn_classify(fn, &inner);
			need_id(st, c->src, fn);
			switch (k) {
			case API_COMPILED:
				if (inner.tag == VAL_FUNC)
					return call_user_function(st, NULL, inner, args, nargs, kwnames);
				return call(st, var_const(st, inner), args, nargs, kwnames);
			case API_DISABLED:
				trace_graph_break(st, BRK_DISABLED, "%s",
				    inner.tag == VAL_FUNC ? val_func(inner)->code->name : val_type_name(inner));
			case API_ALLOWED:
				return op_call_allowed(st, inner, args, nargs, kwnames);
			default:
				break;
			}
			trace_graph_break(st, BRK_UNSUPPORTED, "call of a %s object", val_type_name(fn));
		}
		case VAL_BOUND: {
			/* a method of a constant ("a,b".split): the builtin with
			 * its self first, as the VM calls it; the receiver's value
			 * is guarded where the attribute was read */
			struct bound *b = (struct bound *)fn.o;
			if (b->fn.tag != VAL_BUILTIN)
				trace_graph_break(st, BRK_UNSUPPORTED, "call of a %s object", val_type_name(fn));
			struct var **a = trace_alloc(st, sizeof(struct var *) * (size_t)(nargs + 1));
			a[0] = var_const(st, b->self);
			memcpy(a + 1, args, sizeof(struct var *) * (size_t)nargs);
			return py_call_builtin(st, NULL, b->fn, a, nargs + 1, kwnames);
		}
		default:
			trace_fail(st, "'%s' object is not callable", val_type_name(fn));
		}
	}
	case VK_METHOD: {
		struct var **a = trace_alloc(st, sizeof(struct var *) * (size_t)(nargs + 1));
		a[0] = c->self;
		memcpy(a + 1, args, sizeof(struct var *) * (size_t)nargs);
		return op_call(st, c->op, a, nargs + 1, kwnames);
	}
	case VK_LISTMETH:
		return py_call_list_method(st, c, args, nargs, kwnames);
	case VK_NESTED:
		return inline_call(st, val_code(c->v), val_none(), c->defaults, c->cells, c->ncells, args, nargs,
				   kwnames);
	case VK_OPAQUE:
		if (c->v.tag == VAL_BOUND)
			trace_graph_break(st, BRK_UNSUPPORTED, "call of a method bound before the graph break");
		break;
	default:
		break;
	}
	trace_fail(st, "'%s' object is not callable", var_kind_name(st, c));
}

static struct var *make_function(struct tstate *st, int flags, struct var *codev, struct var *defaults,
				 struct var *closure)
{
	struct var *cv = var_realize(st, codev);
	if (cv->kind != VK_CONST || cv->v.tag != VAL_CODE)
		trace_fail(st, "MAKE_FUNCTION without a code object");
	struct code *co = val_code(cv->v);
	struct var *n = var_new(st, VK_NESTED);
	n->v = cv->v;
	if (flags & 1) {
		struct var *d = var_realize(st, defaults);
		if (d->kind == VK_CONST && d->v.tag == VAL_NONE)
			d = NULL;
		else if (d->kind != VK_TUPLE)
			trace_fail(st, "defaults are not a tuple");
		n->defaults = d;
	}
	int nfree = 0;
	if (flags & 2) {
		struct var *cl = var_realize(st, closure);
		if (cl->kind != VK_TUPLE)
			trace_fail(st, "closure is not a tuple");
		nfree = cl->n;
		n->cells = trace_alloc(st, sizeof(struct cellrec *) * (size_t)(nfree ? nfree : 1));
		for (int i = 0; i < nfree; i++) {
			struct var *c = var_realize(st, cl->items[i]);
			if (c->kind != VK_CELLREF)
				trace_fail(st, "closure holds a non-cell");
			n->cells[i] = c->cell;
		}
	}
	if (nfree != co->nfreevars)
		trace_fail(st, "closure does not match");
	n->ncells = nfree;
	return n;
}

/* ---- the interpreter loop ---- */


static void push(struct tstate *st, struct tframe *fr, struct var *v)
{
	if (fr->sp >= fr->code->max_stack)
		trace_fail(st, "operand stack overflow");
	fr->stack[fr->sp++] = v;
}

static struct var *pop(struct tstate *st, struct tframe *fr)
{
	if (fr->sp <= 0)
		trace_fail(st, "operand stack underflow");
	return fr->stack[--fr->sp];
}

static struct var *top(struct tstate *st, struct tframe *fr, int k)
{
	if (fr->sp <= k)
		trace_fail(st, "operand stack underflow");
	return fr->stack[fr->sp - 1 - k];
}

static struct cellrec *frame_cell(struct tstate *st, struct tframe *fr, int i)
{
	if (i < 0 || i >= fr->code->ncellvars + fr->code->nfreevars)
		trace_fail(st, "bad cell index");
	return fr->cells[i];
}

/* room for one more global in the overlay */
static void globals_room(struct tstate *st)
{
	if (st->nglobals == st->globcap) {
		int cap = st->globcap ? st->globcap * 2 : 16;
		st->globals = trace_realloc(st, st->globals, sizeof *st->globals * (size_t)cap);
		st->globcap = cap;
	}
}

static struct var *load_global(struct tstate *st, struct str *name)
{
	for (int i = 0; i < st->nglobals; i++)
		if (str_eq(st->globals[i].name, name))
			return st->globals[i].var;
	value v = vm_lookup_name(st->vm, name);
	if (val_is_err(v))
		trace_fail(st, "name '%s' is not defined", name->data);
	struct var *r = var_lazy(st, v, trace_source(st, SRC_GLOBAL, -1, -1, name->data));
	globals_room(st);
	st->globals[st->nglobals++] = (struct overlay){name, r, false};
	return r;
}

static void store_global(struct tstate *st, struct str *name, struct var *v)
{
	for (int i = 0; i < st->nglobals; i++) {
		if (str_eq(st->globals[i].name, name)) {
			st->globals[i].var = v;
			st->globals[i].dirty = true;
			return;
		}
	}
	globals_room(st);
	st->globals[st->nglobals++] = (struct overlay){name, v, true};
}

static struct str *name_arg(struct tstate *st, struct code *co, int a)
{
	if (a < 0 || a >= co->nnames || co->names[a].tag != VAL_STR)
		trace_fail(st, "bad name index");
	return val_str(co->names[a]);
}

static int jump_target(struct tstate *st, struct code *co, int a)
{
	if (a < 0 || a >= co->ninsns)
		trace_fail(st, "bad jump target");
	return a;
}

/* loads, stores and the operand stack */
static bool step_stack(struct tstate *st, struct tframe *fr, int op, int a)
{
	struct code *co = fr->code;
	struct var *x, *y, *z;
	switch (op) {
	case OP_NOP:
		break;
	case OP_LOAD_CONST:
		if (a >= co->nconsts)
			trace_fail(st, "bad constant index");
		push(st, fr, var_const(st, co->consts[a]));
		break;
	case OP_LOAD_FAST:
		if (a >= co->nlocals || !fr->locals[a])
			trace_fail(st, "unbound local");
		push(st, fr, fr->locals[a]);
		break;
	case OP_STORE_FAST:
		if (a >= co->nlocals)
			trace_fail(st, "bad local index");
		fr->locals[a] = pop(st, fr);
		break;
	case OP_LOAD_GLOBAL:
		push(st, fr, load_global(st, name_arg(st, co, a)));
		break;
	case OP_STORE_GLOBAL:
		store_global(st, name_arg(st, co, a), pop(st, fr));
		break;
	case OP_LOAD_DEREF: {
		struct cellrec *c = frame_cell(st, fr, a);
		if (!c->content)
			trace_fail(st, "empty cell");
		push(st, fr, c->content);
		break;
	}
	case OP_STORE_DEREF: {
		struct cellrec *c = frame_cell(st, fr, a);
		c->content = pop(st, fr);
		c->dirty = true;
		break;
	}
	case OP_LOAD_CLOSURE: {
		struct var *c = var_new(st, VK_CELLREF);
		c->cell = frame_cell(st, fr, a);
		push(st, fr, c);
		break;
	}
	case OP_POP_TOP:
		pop(st, fr);
		break;
	case OP_DUP_TOP:
		push(st, fr, top(st, fr, 0));
		break;
	case OP_DUP_TOP_TWO:
		x = top(st, fr, 1);
		y = top(st, fr, 0);
		push(st, fr, x);
		push(st, fr, y);
		break;
	case OP_ROT_TWO:
		x = pop(st, fr);
		y = pop(st, fr);
		push(st, fr, x);
		push(st, fr, y);
		break;
	case OP_ROT_THREE:
		x = pop(st, fr);
		y = pop(st, fr);
		z = pop(st, fr);
		push(st, fr, x);
		push(st, fr, z);
		push(st, fr, y);
		break;
	default:
		return false;
	}
	return true;
}

/* operators, attributes, building and unpacking values */
static bool step_value(struct tstate *st, struct tframe *fr, int op, int a)
{
	struct code *co = fr->code;
	struct var *x, *y, *z;
	switch (op) {
	case OP_LOAD_ATTR:
		x = py_getattr(st, top(st, fr, 0), name_arg(st, co, a));
		fr->stack[fr->sp - 1] = x;
		break;
	case OP_UNARY_NEG:
		x = unary_neg(st, top(st, fr, 0));
		fr->stack[fr->sp - 1] = x;
		break;
	case OP_UNARY_POS: {
		x = var_realize(st, top(st, fr, 0));
		if (x->kind == VK_CONST && x->v.tag == VAL_BOOL)
			x = var_const(st, val_int(var_value(st, x).b));
		else if (!(x->kind == VK_TENSOR ||
			   (x->kind == VK_CONST && (x->v.tag == VAL_INT || x->v.tag == VAL_FLOAT))))
			trace_fail(st, "bad operand type for unary +");
		else if (x->kind == VK_CONST)
			need_type(st, x->src, x->v);
		fr->stack[fr->sp - 1] = x;
		break;
	}
	case OP_UNARY_NOT:
		x = var_const(st, val_bool(!truth(st, top(st, fr, 0), BRK_TENSOR_BOOLOP, "'not'")));
		fr->stack[fr->sp - 1] = x;
		break;
	case OP_BINARY_OP:
		if (a >= VB_COUNT)
			trace_fail(st, "bad binary operator");
		y = pop(st, fr);
		x = pop(st, fr);
		push(st, fr, interp_binary(st, (enum vm_binop)a, x, y));
		break;
	case OP_COMPARE_OP:
		if (a >= VC_COUNT)
			trace_fail(st, "bad comparison");
		y = pop(st, fr);
		x = pop(st, fr);
		push(st, fr, compare(st, (enum vm_cmpop)a, x, y));
		break;
	case OP_BINARY_SUBSCR:
		y = pop(st, fr);
		x = pop(st, fr);
		push(st, fr, subscr(st, x, y));
		break;
	case OP_STORE_SUBSCR:
		y = pop(st, fr);
		x = pop(st, fr);
		z = pop(st, fr);
		store_subscr(st, x, y, z);
		break;
	case OP_BUILD_SLICE: {
		if (a != 2 && a != 3)
			trace_fail(st, "bad slice");
		struct var *step = a == 3 ? pop(st, fr) : NULL;
		y = pop(st, fr);
		x = pop(st, fr);
		struct var *parts[3] = {x, y, step};
		value pv[3] = {val_none(), val_none(), val_none()};
		for (int i = 0; i < 3; i++) {
			if (!parts[i])
				continue;
			if (!var_is_const(st, parts[i]))
				trace_graph_break(st, BRK_UNSUPPORTED,
						  "a slice bound that is a %s", var_kind_name(st, parts[i]));
			pv[i] = var_value(st, parts[i]);
		}
		push(st, fr, var_const_owned(st, slice_new(pv[0], pv[1], pv[2])));
		break;
	}
	case OP_BUILD_LIST:
	case OP_BUILD_TUPLE: {
		if (a > fr->sp)
			trace_fail(st, "operand stack underflow");
		fr->sp -= a;
		struct var **items = fr->stack + fr->sp;
		x = op == OP_BUILD_LIST ? var_list(st, a, items) : var_tuple(st, a, items);
		push(st, fr, x);
		break;
	}
	case OP_UNPACK_SEQUENCE: {
		x = var_realize(st, pop(st, fr));
		struct var **items;
		int n;
		if (var_is_seq(x)) {
			n = var_seq_n(st, x);
			items = var_seq_items(st, x);
		} else if (x->kind == VK_TENSOR) {
			tensor *t = need_meta(st, x);
			if (t->ndim == 0 || t->shape[0] != a)
				trace_fail(st, "cannot unpack");
			n = a;
			items = trace_alloc(st, sizeof(struct var *) * (size_t)(a ? a : 1));
			for (int i = 0; i < a; i++) {
				struct var *args[2] = {x, var_const(st, val_int(i))};
				items[i] = op_emit(st, OPS_getitem, args);
			}
		} else {
			items = py_drain(st, x, &n);
		}
		if (n != a)
			trace_fail(st, "cannot unpack %d values into %d", n, a);
		for (int i = a - 1; i >= 0; i--)
			push(st, fr, items[i]);
		break;
	}
	case OP_MAKE_FUNCTION: {
		x = pop(st, fr);
		y = (a & 1) ? pop(st, fr) : NULL;
		z = (a & 2) ? pop(st, fr) : NULL;
		push(st, fr, make_function(st, a, x, y, z));
		break;
	}
	default:
		return false;
	}
	return true;
}

/* jumps, loops and calls; *next: the instruction to run next */
static bool step_flow(struct tstate *st, struct tframe *fr, int op, int a, int *next)
{
	struct code *co = fr->code;
	int pc = fr->pc;
	bool is_root = fr == st->root;
	struct var *x, *y;
	switch (op) {
	case OP_JUMP:
		*next = jump_target(st, co, a);
		break;
	case OP_POP_JUMP_IF_FALSE:
	case OP_POP_JUMP_IF_TRUE: {
		bool t = truth(st, top(st, fr, 0), BRK_TENSOR_BRANCH, NULL);
		pop(st, fr);
		if (t == (op == OP_POP_JUMP_IF_TRUE))
			*next = jump_target(st, co, a);
		break;
	}
	case OP_JUMP_IF_FALSE_OR_POP:
	case OP_JUMP_IF_TRUE_OR_POP: {
		bool on_true = op == OP_JUMP_IF_TRUE_OR_POP;
		bool t = truth(st, top(st, fr, 0), BRK_TENSOR_BOOLOP, on_true ? "'or'" : "'and'");
		if (t == on_true)
			*next = jump_target(st, co, a);
		else
			pop(st, fr);
		break;
	}
	case OP_GET_ITER:
		x = py_iter(st, top(st, fr, 0));
		fr->stack[fr->sp - 1] = x;
		break;
	case OP_FOR_ITER: {
		x = var_realize(st, top(st, fr, 0));
		if (x->kind == VK_OPAQUE) {
			if (is_root)
				trace_split(st);
			trace_graph_break(st, BRK_UNSUPPORTED, "iterating an iterator made before a graph break");
		}
		if (x->kind != VK_ITER)
			trace_fail(st, "FOR_ITER without an iterator");
		y = py_next(st, x);
		if (y) {
			push(st, fr, y);
		} else {
			pop(st, fr);
			*next = jump_target(st, co, a);
		}
		break;
	}
	case OP_CALL:
	case OP_CALL_KW: {
		value kwnames = val_none();
		int extra = 0;
		if (op == OP_CALL_KW) {
			struct var *k = var_realize(st, top(st, fr, 0));
			if (k->kind != VK_CONST || k->v.tag != VAL_TUPLE || (int)val_tuple(k->v)->len > a)
				trace_fail(st, "CALL_KW without keyword names");
			kwnames = k->v;
			extra = 1;
		}
		if (fr->sp < a + 1 + extra)
			trace_fail(st, "operand stack underflow");
		if (is_root)
			trace_break_if_forced(st, pc);
		int base = fr->sp - extra - a - 1;
		x = call(st, fr->stack[base], fr->stack + base + 1, a, kwnames);
		fr->sp = base;
		push(st, fr, x);
		break;
	}
	default:
		return false;
	}
	return true;
}

/* Runs fr from fr->pc until it returns; the value it returns. Each
 * instruction is handled by one of the step_* groups above. */
struct var *interp_run_frame(struct tstate *st, struct tframe *fr)
{
	struct code *co = fr->code;
	int pc = fr->pc;
	bool is_root = fr == st->root;
	for (;;) {
		if (pc < 0 || pc >= co->ninsns)
			trace_fail(st, "pc out of range");
		fr->pc = pc;
		if (is_root) {
			st->snap.sp = fr->sp;
			memcpy(st->snap.stack, fr->stack, sizeof(struct var *) * (size_t)fr->sp);
			st->snap.nnodes = st->g->nnodes;
			st->snap.ninsrc = st->ninsrc;
			st->snap.nguards = st->gs->nguards;
		}
		if (++st->ninsns > TRACE_MAX_INSNS)
			trace_graph_break(st, BRK_TRACE_TOO_LONG, "more than %d instructions", TRACE_MAX_INSNS);
		uint32_t w = co->insns[pc];
		int op = (int)INSN_OP(w), a = (int)INSN_A(w);
		int next = pc + 1;
		if (op == OP_RETURN_VALUE)
			return pop(st, fr);
		if (!step_stack(st, fr, op, a) && !step_value(st, fr, op, a) && !step_flow(st, fr, op, a, &next))
			trace_fail(st, "unknown opcode %d", op);
		pc = next;
	}
}
