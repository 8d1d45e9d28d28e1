/* trace_builtins.c - Python's builtins, list methods, iteration and
 * attributes emulated on variables while tracing: what the trace can keep
 * symbolic (len, enumerate, zip, sum over tensors, list mutations) it
 * does itself; a pure builtin on constants runs for real; anything else
 * is a graph break.
 */
#include <stdlib.h>
#include <string.h>

#include "builtin.h"
#include "compiled_fn.h"
#include "ops.h"
#include "trace_impl.h"

/* ---- iteration ---- */

static struct var *iter_var(struct tstate *st, int kind, struct var *seq, int64_t i, int64_t n, int64_t step)
{
	struct var *v = var_new(st, VK_ITER);
	v->it = trace_alloc(st, sizeof *v->it);
	v->it->kind = kind;
	v->it->seq = seq;
	v->it->i = i;
	v->it->n = n;
	v->it->step = step;
	return v;
}

struct var *py_iter(struct tstate *st, struct var *v)
{
	v = var_realize(st, v);
	switch ((enum vkind)v->kind) {
	case VK_ITER:
		return v;
	case VK_LIST:
		return iter_var(st, ITER_LIST, v, 0, 0, 0);
	case VK_TUPLE:
		return iter_var(st, ITER_TUPLE, v, 0, v->n, 0);
	case VK_TENSOR: {
		tensor *t = need_meta(st, v);
		if (t->ndim == 0)
			trace_fail(st, "iteration over a 0-d tensor");
		return iter_var(st, ITER_TENSOR, v, 0, t->shape[0], 0);
	}
	case VK_CONST: {
		value x = var_value(st, v);
		if (x.tag == VAL_RANGE) {
			const struct range *r = val_range(x);
			return iter_var(st, ITER_RANGE, NULL, r->start, r->len, r->step);
		}
		if (x.tag == VAL_TUPLE) {
			/* a constant tuple (a static x.shape): its items */
			val_incref(x);
			return py_iter(st, var_from_result(st, x));
		}
		if (x.tag == VAL_STR) {
			value l = vm_sequence_to_list(x);
			struct var *lv = var_from_result(st, l);
			return iter_var(st, ITER_LIST, lv, 0, 0, 0);
		}
		trace_fail(st, "not iterable");
	}
	case VK_OPAQUE:
		if (v->v.tag == VAL_ITER)
			return v;
		break;
	default:
		break;
	}
	trace_fail(st, "'%s' object is not iterable", var_kind_name(st, v));
}

/* the next item of an iterator variable, or NULL when it is exhausted */
struct var *py_next(struct tstate *st, struct var *itv)
{
	struct iterrec *it = itv->it;
	switch (it->kind) {
	case ITER_RANGE: {
		if (it->n <= 0)
			return NULL;
		int64_t v = it->i;
		it->i = (int64_t)((uint64_t)it->i + (uint64_t)it->step);
		it->n--;
		return var_const(st, val_int(v));
	}
	case ITER_LIST: {
		struct var *l = var_realize(st, it->seq);
		if (it->i >= seqrec_read(st, l->rec)->n)
			return NULL;
		return l->rec->items[it->i++];
	}
	case ITER_TUPLE: {
		struct var *t = var_realize(st, it->seq);
		if (it->i >= t->n)
			return NULL;
		return t->items[it->i++];
	}
	case ITER_TENSOR: {
		if (it->i >= it->n)
			return NULL;
		struct var *args[2] = {var_realize(st, it->seq), var_const(st, val_int(it->i))};
		it->i++;
		return op_emit(st, OPS_getitem, args);
	}
	case ITER_ENUMERATE: {
		struct var *x = py_next(st, it->seq);
		if (!x)
			return NULL;
		struct var *pair[2] = {var_const(st, val_int(it->count++)), x};
		return var_tuple(st, 2, pair);
	}
	case ITER_ZIP: {
		if (it->nsub == 0)
			return NULL;
		struct var **items = trace_alloc(st, sizeof(struct var *) * (size_t)it->nsub);
		for (int k = 0; k < it->nsub; k++) {
			items[k] = py_next(st, it->subs[k]);
			if (!items[k])
				return NULL;
		}
		return var_tuple(st, it->nsub, items);
	}
	default:
		trace_fail(st, "unsupported iterator");
	}
}

/* every item of an iterable (a bounded iterator), as a new list of variables */
struct var **py_drain(struct tstate *st, struct var *v, int *n)
{
	struct var *it = py_iter(st, v);
	if (it->kind != VK_ITER)
		trace_graph_break(st, BRK_UNSUPPORTED, "iterating a %s", var_kind_name(st, it));
	int cap = 8, k = 0;
	struct var **items = trace_alloc(st, sizeof(struct var *) * (size_t)cap);
	struct var *x;
	while ((x = py_next(st, it)) != NULL) {
		if (k == cap) {
			struct var **ni = trace_alloc(st, sizeof(struct var *) * (size_t)cap * 2);
			memcpy(ni, items, sizeof(struct var *) * (size_t)k);
			items = ni;
			cap *= 2;
		}
		if (k >= 100000)
			trace_graph_break(st, BRK_UNSUPPORTED, "iterating more than 100000 items");
		items[k++] = x;
	}
	*n = k;
	return items;
}

/* ---- attributes ---- */

static const char *const list_method_names[] = {
	"append", "pop", "extend", "insert", "index", "count", "reverse", "remove", "copy", "clear", "sort", NULL,
};

struct var *py_getattr(struct tstate *st, struct var *obj, struct str *name)
{
	struct var *o = var_realize(st, obj);
	switch ((enum vkind)o->kind) {
	case VK_TENSOR: {
		int op = ops_find(name->data, OPK_METH | OPK_ATTR);
		if (op < 0)
			trace_fail(st, "no attribute");
		if (ops_table[op].kind & OPK_ATTR) {
			struct var *args[1] = {o};
			return op_emit(st, op, args);
		}
		struct var *m = var_new(st, VK_METHOD);
		m->op = op;
		m->self = o;
		return m;
	}
	case VK_LIST:
		for (int i = 0; list_method_names[i]; i++) {
			if (str_eq_cstr(name, list_method_names[i])) {
				struct var *m = var_new(st, VK_LISTMETH);
				m->v = trace_keep(st, val_obj(VAL_STR, name));
				m->self = o;
				return m;
			}
		}
		trace_fail(st, "no attribute");
	case VK_CONST: {
		value x = o->v;
		/* the attributes of a function or a type do not depend on more than its identity */
		need_value(st, o->src, x);
		return var_from_result(st, vm_getattr(st->vm, x, name));
	}
	default:
		break;
	}
	trace_graph_break(st, BRK_UNSUPPORTED, "attribute %s of a %s", name->data, var_kind_name(st, o));
}

/* ---- builtins and list methods ---- */

/* a placeholder of the same type as v, for type() and isinstance() */
static value type_example(struct tstate *st, struct var *v)
{
	v = var_realize(st, v);
	switch ((enum vkind)v->kind) {
	case VK_TENSOR:
		return val_tensor(var_example(st, v));
	case VK_CONST:
		need_type(st, v->src, v->v);
		return v->v;
	case VK_LIST: /* a list from outside has its type guarded already */
		return trace_hold(st, list_new(0));
	case VK_TUPLE:
		return trace_hold(st, tuple_new(0));
	case VK_OPAQUE:
		return v->v;
	default:
		trace_graph_break(st, BRK_UNSUPPORTED, "type of a %s", var_kind_name(st, v));
	}
}

static struct var *call_real_pure(struct tstate *st, value fn, struct var **args, int nargs, value kwnames)
{
	value *vals = trace_alloc(st, sizeof(value) * (size_t)(nargs ? nargs : 1));
	for (int i = 0; i < nargs; i++)
		vals[i] = var_deep_value(st, args[i], 0);
	return var_from_result(st, vm_call(st->vm, fn, vals, nargs, kwnames));
}

static bool args_all_const(struct tstate *st, struct var **args, int nargs)
{
	for (int i = 0; i < nargs; i++)
		if (!var_all_const(st, args[i], 0))
			return false;
	return true;
}

/* sum(iterable, start=0) over variables: the same additions as Python's */
static struct var *builtin_sum(struct tstate *st, struct var **args, int nargs, value kwnames)
{
	int nkw = kwnames_count(kwnames), npos = nargs - nkw;
	struct var *start = NULL;
	for (int k = 0; k < nkw; k++) {
		value kn = val_tuple(kwnames)->items[k];
		if (kn.tag == VAL_STR && str_eq_cstr(val_str(kn), "start"))
			start = args[npos + k];
		else
			trace_fail(st, "bad keyword");
	}
	if (npos < 1 || npos > 2)
		trace_fail(st, "sum() arguments");
	if (npos == 2)
		start = args[1];
	if (!start)
		start = var_const(st, val_int(0));
	int n;
	struct var **items = py_drain(st, args[0], &n);
	struct var *acc = start;
	for (int i = 0; i < n; i++)
		acc = interp_binary(st, VB_ADD, acc, items[i]);
	return acc;
}

struct var *py_call_builtin(struct tstate *st, struct var *fv, value fn, struct var **args, int nargs,
				value kwnames)
{
	struct builtin *b = (struct builtin *)fn.o;
	need_id(st, fv ? fv->src : -1, fn);
	int nkw = kwnames_count(kwnames), npos = nargs - nkw;
	/* a symbolic int stays one until a builtin uses its value */
	struct var *first = npos <= 0 ? NULL : args[0]->kind == VK_SYMINT ? args[0] : var_realize(st, args[0]);
	bool tfirst = first && first->kind == VK_TENSOR;
	const char *name = b->name;

	value inner;
	switch (compiled_fn_classify(fn, &inner)) {
	case API_IS_COMPILING:
		return var_const(st, val_bool(true));
	case API_GRAPH_BREAK:
		trace_graph_break(st, BRK_USER_BREAK, NULL);
	case API_CONTROL:
		trace_graph_break(st, BRK_CONTROL_API, "%s()", name);
	default:
		break;
	}
	int op = ops_of_builtin(b->fn);
	if (op >= 0)
		return op_call(st, op, args, nargs, kwnames);
	if (strcmp(name, "print") == 0)
		trace_graph_break(st, BRK_PRINT, NULL);
	if (strcmp(name, "time") == 0)
		trace_graph_break(st, BRK_TIME, NULL);
	if (strcmp(name, "exit") == 0) /* ends the program: the interpreter's to do */
		trace_graph_break(st, BRK_EFFECT_OP, "exit");
	if (strcmp(name, "len") == 0 && nargs == 1 && nkw == 0) {
		if (first->kind == VK_TENSOR) {
			if (first->ex->ndim == 0) {
				need_meta(st, first);
				trace_fail(st, "len() of a 0-d tensor");
			}
			return sym_int_var(st, first, 0);
		}
		if (var_is_seq(first))
			return var_const(st, val_int(var_seq_n(st, first)));
	}
	if ((strcmp(name, "abs") == 0 || strcmp(name, "round") == 0) && tfirst) {
		if (name[0] == 'r')
			return op_call(st, OPS_round, args, nargs, kwnames);
		if (nargs != 1)
			trace_fail(st, "%s() of a tensor", name);
		struct var *a[1] = {first};
		return op_emit(st, OPS_abs, a);
	}
	if ((strcmp(name, "max") == 0 || strcmp(name, "min") == 0) && tfirst)
		return op_call(st, name[1] == 'a' ? OPS_max : OPS_min, args, nargs, kwnames);
	if (strcmp(name, "sum") == 0) {
		if (tfirst)
			return op_call(st, OPS_sum, args, nargs, kwnames);
		if (!args_all_const(st, args, nargs))
			return builtin_sum(st, args, nargs, kwnames);
	}
	if (strcmp(name, "enumerate") == 0 && npos >= 1 && npos <= 2 && nkw <= 1) {
		struct var *inner_it = py_iter(st, args[0]);
		if (inner_it->kind != VK_ITER)
			trace_graph_break(st, BRK_UNSUPPORTED, "enumerate() of a %s", var_kind_name(st, inner_it));
		int64_t start = 0;
		if (nargs == 2)
			start = var_int(st, args[1]);
		if (nkw == 1 && !str_eq_cstr(val_str(val_tuple(kwnames)->items[0]), "start"))
			trace_fail(st, "bad keyword");
		struct var *e = iter_var(st, ITER_ENUMERATE, inner_it, 0, 0, 0);
		e->it->count = start;
		return e;
	}
	if (strcmp(name, "zip") == 0 && nkw == 0) {
		struct var *z = iter_var(st, ITER_ZIP, NULL, 0, 0, 0);
		z->it->nsub = nargs;
		z->it->subs = trace_alloc(st, sizeof(struct var *) * (size_t)(nargs ? nargs : 1));
		for (int i = 0; i < nargs; i++) {
			z->it->subs[i] = py_iter(st, args[i]);
			if (z->it->subs[i]->kind != VK_ITER)
				trace_graph_break(st, BRK_UNSUPPORTED,
						  "zip() of a %s", var_kind_name(st, z->it->subs[i]));
		}
		return z;
	}
	if ((strcmp(name, "isinstance") == 0 || strcmp(name, "type") == 0) && nkw == 0 && nargs >= 1) {
		value *vals = trace_alloc(st, sizeof(value) * (size_t)nargs);
		vals[0] = type_example(st, args[0]);
		for (int i = 1; i < nargs; i++)
			vals[i] = var_deep_value(st, args[i], 0);
		return var_from_result(st, vm_call(st->vm, fn, vals, nargs, kwnames));
	}
	static const char *const pure[] = {"len", "repr", "abs", "min", "max", "sum", "round", "sorted",
					   "isinstance", "type", NULL};
	for (int i = 0; pure[i]; i++) {
		if (strcmp(name, pure[i]) != 0)
			continue;
		if (args_all_const(st, args, nargs))
			return call_real_pure(st, fn, args, nargs, kwnames);
		for (int k = 0; k < nargs; k++)
			if (var_realize(st, args[k])->kind == VK_TENSOR && strcmp(name, "repr") == 0)
				trace_graph_break(st, BRK_TENSOR_DATA, "repr() of a tensor");
		trace_graph_break(st, BRK_UNSUPPORTED,
				  "%s() of a %s", name, first ? var_kind_name(st, first) : "nothing");
	}
	/* a method of a constant string */
	if (strncmp(name, "str.", 4) == 0 && args_all_const(st, args, nargs))
		return call_real_pure(st, fn, args, nargs, kwnames);
	trace_graph_break(st, BRK_UNSUPPORTED, "call to builtin %s", name);
}

/* int(x), float(x), bool(x), str(x), list(x), tuple(x), range(...), type(x) */
struct var *py_call_type(struct tstate *st, value t, struct var **args, int nargs, value kwnames)
{
	value_tag tag = (value_tag)t.i;
	int nkw = kwnames_count(kwnames);
	if (nargs >= 1 && nkw == 0) {
		struct var *a = var_realize(st, args[0]);
		if (a->kind == VK_TENSOR) {
			switch (tag) {
			case VAL_INT: trace_graph_break(st, BRK_TENSOR_DATA, "int(t)");
			case VAL_FLOAT: trace_graph_break(st, BRK_TENSOR_DATA, "float(t)");
			case VAL_BOOL: trace_graph_break(st, BRK_TENSOR_DATA, "bool(t)");
			case VAL_STR: trace_graph_break(st, BRK_TENSOR_DATA, "str(t)");
			default: break;
			}
		}
		if (nargs == 1 && (tag == VAL_LIST || tag == VAL_TUPLE) && !var_all_const(st, a, 0)) {
			int n;
			struct var **items = py_drain(st, a, &n);
			return tag == VAL_LIST ? var_list(st, n, items) : var_tuple(st, n, items);
		}
		if (nargs == 1 && tag == VAL_TYPE)
			return var_from_result(st, vm_call(st->vm, t, (value[]){type_example(st, a)}, 1, kwnames));
	}
	if (args_all_const(st, args, nargs))
		return call_real_pure(st, t, args, nargs, kwnames);
	trace_graph_break(st, BRK_UNSUPPORTED,
			  "%s() of a %s", type_tag_name(tag), nargs ? var_kind_name(st, args[0]) : "nothing");
}

struct var *py_call_list_method(struct tstate *st, struct var *m, struct var **args, int nargs, value kwnames)
{
	struct var *l = var_realize(st, m->self);
	struct seqrec *r = l->rec;
	struct str *name = val_str(m->v);
	int nkw = kwnames_count(kwnames);
	if (nkw && !str_eq_cstr(name, "sort"))
		trace_fail(st, "list method keywords");
	if (str_eq_cstr(name, "append")) {
		if (nargs != 1)
			trace_fail(st, "append() arguments");
		seqrec_insert(st, r, r->n, args[0]);
		r->mutated = true;
		return var_none(st);
	}
	if (str_eq_cstr(name, "extend")) {
		if (nargs != 1)
			trace_fail(st, "extend() arguments");
		int n;
		struct var **items = py_drain(st, args[0], &n);
		for (int i = 0; i < n; i++)
			seqrec_insert(st, r, r->n, items[i]);
		r->mutated = true;
		return var_none(st);
	}
	/* the other methods read the list (and all but copy change its prefix) */
	seqrec_read(st, r);
	if (!str_eq_cstr(name, "copy") && !str_eq_cstr(name, "index") && !str_eq_cstr(name, "count"))
		r->prefix_dirty = true;
	if (str_eq_cstr(name, "insert")) {
		if (nargs != 2)
			trace_fail(st, "insert() arguments");
		int64_t i = var_int(st, args[0]);
		if (i < 0)
			i += r->n;
		if (i < 0)
			i = 0;
		if (i > r->n)
			i = r->n;
		seqrec_insert(st, r, (int)i, args[1]);
		r->mutated = true;
		return var_none(st);
	}
	if (str_eq_cstr(name, "pop")) {
		if (nargs > 1)
			trace_fail(st, "pop() arguments");
		int64_t i = nargs ? var_int(st, args[0]) : -1;
		if (i < 0)
			i += r->n;
		if (i < 0 || i >= r->n)
			trace_fail(st, "pop index out of range");
		struct var *x = r->items[i];
		memmove(r->items + i, r->items + i + 1, sizeof(struct var *) * (size_t)(r->n - i - 1));
		r->n--;
		r->mutated = true;
		return x;
	}
	if (str_eq_cstr(name, "clear")) {
		if (nargs)
			trace_fail(st, "clear() arguments");
		r->n = 0;
		r->mutated = true;
		return var_none(st);
	}
	if (str_eq_cstr(name, "reverse")) {
		if (nargs)
			trace_fail(st, "reverse() arguments");
		for (int i = 0, j = r->n - 1; i < j; i++, j--) {
			struct var *t = r->items[i];
			r->items[i] = r->items[j];
			r->items[j] = t;
		}
		r->mutated = true;
		return var_none(st);
	}
	if (str_eq_cstr(name, "copy")) {
		if (nargs)
			trace_fail(st, "copy() arguments");
		return var_list(st, r->n, r->items);
	}
	/* index, count, remove, sort: on constants only */
	if (!var_all_const(st, l, 0) || !args_all_const(st, args, nargs))
		trace_graph_break(st, BRK_UNSUPPORTED, "list.%s() on a list of non-constants", name->data);
	value real = var_deep_value(st, l, 0);
	value meth = vm_getattr(st->vm, real, name);
	if (val_is_err(meth))
		trace_fail_pending(st);
	trace_hold(st, meth);
	struct var *res = call_real_pure(st, meth, args, nargs, kwnames);
	if (str_eq_cstr(name, "remove") || str_eq_cstr(name, "sort")) {
		struct var *nl = var_from_result(st, (val_incref(real), real));
		r->n = 0;
		for (int i = 0; i < nl->rec->n; i++)
			seqrec_insert(st, r, r->n, nl->rec->items[i]);
		r->mutated = true;
	}
	return res;
}
