/* compile_api.c - the builtins that control compiling (LANGUAGE.md §5):
 * compile, disable, disallow_in_graph, allow_in_graph, graph_break,
 * reset, freeze, is_compiling and explain, and the objects they make: the
 * compiled function, the disabled and allowed wrappers, and the
 * decorators that compile(...) and disable(...) return when called
 * without a function. */
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "explain.h"
#include "frame_eval.h"
#include "ops.h"
#include "runtime.h"
#include "tracer.h"
#include "vm.h"

/* ---- the objects ---- */

enum wrap_kind {
	WRAP_COMPILED,      /* compile(f): runs f under the frame evaluator */
	WRAP_DISABLED,      /* disable(f): f and its callees run eagerly */
	WRAP_DISABLED_FRAME,/* disable(f, recursive=False): only f's frame runs eagerly */
	WRAP_ALLOWED,       /* allow_in_graph(f): one opaque node in graphs */
	WRAP_COMPILE_DECO,  /* compile(backend=...): applied to a function, compiles it */
	WRAP_DISABLE_DECO,  /* disable(recursive=...): applied to a function, disables it */
};

struct wrapped {
	struct object hdr;
	enum wrap_kind kind;
	value fn;                   /* owned; None for the decorators */
	struct compile_config cfg;  /* COMPILED, COMPILE_DECO */
	bool recursive;             /* DISABLE_DECO */
};

static const struct obj_type compiled_type, disabled_type, allowed_type, decorator_type;

static const char *fn_name(value fn)
{
	if (fn.tag == VAL_FUNC)
		return val_func(fn)->code->name;
	if (fn.tag == VAL_BUILTIN)
		return ((struct builtin *)fn.o)->name;
	if (fn.tag == VAL_OBJECT && ((struct object *)fn.o)->type == &compiled_type)
		return fn_name(((struct wrapped *)fn.o)->fn);
	return val_type_name(fn);
}

static void wrapped_free(struct obj *o)
{
	struct wrapped *w = (struct wrapped *)o;
	val_decref(w->fn);
	free(w);
}

static void wrapped_repr(struct obj *o, struct strbuf *out)
{
	struct wrapped *w = (struct wrapped *)o;
	switch (w->kind) {
	case WRAP_COMPILED: /* as the function itself, as PyTorch's wrapper prints */
	case WRAP_DISABLED:
	case WRAP_DISABLED_FRAME:
	case WRAP_ALLOWED:
		val_repr(w->fn, out);
		break;
	case WRAP_COMPILE_DECO:
		sb_puts(out, "<compile decorator>");
		break;
	case WRAP_DISABLE_DECO:
		sb_puts(out, "<disable decorator>");
		break;
	}
}

static value wrapped_getattr(struct obj *o, struct str *name)
{
	struct wrapped *w = (struct wrapped *)o;
	if (str_eq_cstr(name, "__name__") && w->fn.tag != VAL_NONE)
		return str_from_cstr(fn_name(w->fn));
	return val_err();
}

static value wrapped_new(const struct obj_type *type, enum wrap_kind kind, value fn)
{
	struct wrapped *w = calloc(1, sizeof *w);
	if (!w)
		return vm_raise("out of memory");
	w->hdr.hdr.rc = 1;
	w->hdr.type = type;
	w->kind = kind;
	val_incref(fn);
	w->fn = fn;
	return val_obj(VAL_OBJECT, w);
}

static value compiled_new(value fn, const struct compile_config *cfg)
{
	value r = wrapped_new(&compiled_type, WRAP_COMPILED, fn);
	if (val_is_err(r))
		return r;
	struct wrapped *w = (struct wrapped *)r.o;
	w->cfg = *cfg;
	if (fn.tag == VAL_FUNC) {
		w->cfg.owner_name = val_func(fn)->code->name;
		w->cfg.owner_src = val_func(fn)->code->src;
		w->cfg.owner_line = val_func(fn)->code->firstline;
	} else if (fn.tag == VAL_OBJECT && ((struct object *)fn.o)->type == &compiled_type) {
		struct wrapped *inner = (struct wrapped *)fn.o;
		w->cfg.owner_name = inner->cfg.owner_name;
		w->cfg.owner_src = inner->cfg.owner_src;
		w->cfg.owner_line = inner->cfg.owner_line;
	}
	return r;
}

static value disable_apply(value fn, bool recursive);

/* --eager: compile() and freeze() return their function unchanged */
static bool compile_disabled(struct vm *vm)
{
	struct runtime *rt = vm_runtime(vm);
	return rt && rt->sw.disabled;
}

static value wrapped_call(struct obj *o, struct vm *vm, const value *args, int nargs, value kwnames)
{
	struct wrapped *w = (struct wrapped *)o;
	value self = val_obj(VAL_OBJECT, o);
	val_incref(self); /* the call may drop the last other reference */
	value r;
	switch (w->kind) {
	case WRAP_COMPILED:
		r = frame_eval_call(vm, &w->cfg, w->fn, args, nargs, kwnames);
		break;
	case WRAP_DISABLED:
	case WRAP_ALLOWED: {
		void *ctx;
		vm_eval_frame_fn hook = vm_get_eval_frame(vm, &ctx);
		vm_set_eval_frame(vm, NULL, NULL);
		r = vm_call(vm, w->fn, args, nargs, kwnames);
		vm_set_eval_frame(vm, hook, ctx);
		break;
	}
	case WRAP_DISABLED_FRAME: {
		struct runtime *rt = vm_runtime(vm);
		if (rt && w->fn.tag == VAL_FUNC)
			frame_eval_skip_next(rt, val_func(w->fn)->code);
		r = vm_call(vm, w->fn, args, nargs, kwnames);
		if (rt)
			frame_eval_skip_next(rt, NULL);
		break;
	}
	case WRAP_COMPILE_DECO:
		if (nargs != 1 || kwnames.tag == VAL_TUPLE) {
			r = vm_raise("compile() decorator takes exactly one function");
			break;
		}
		r = compile_disabled(vm) ? (val_incref(args[0]), args[0]) : compiled_new(args[0], &w->cfg);
		break;
	case WRAP_DISABLE_DECO:
		if (nargs != 1 || kwnames.tag == VAL_TUPLE) {
			r = vm_raise("disable() decorator takes exactly one function");
			break;
		}
		r = disable_apply(args[0], w->recursive);
		break;
	default:
		r = vm_raise("bad wrapper");
	}
	val_decref(self);
	return r;
}

/* "function": type(compile(f)) is type(f) (builtins.c's type() maps objects so named) */
static const struct obj_type compiled_type = {"function", wrapped_free, wrapped_repr, wrapped_getattr,
					      wrapped_call};
static const struct obj_type disabled_type = {"function", wrapped_free, wrapped_repr, wrapped_getattr,
					      wrapped_call};
static const struct obj_type allowed_type = {"function", wrapped_free, wrapped_repr, wrapped_getattr,
					     wrapped_call};
static const struct obj_type decorator_type = {"function", wrapped_free, wrapped_repr, wrapped_getattr,
					       wrapped_call};

static bool is_callable(value v)
{
	return v.tag == VAL_FUNC || v.tag == VAL_BUILTIN || v.tag == VAL_BOUND || v.tag == VAL_TYPE ||
	       (v.tag == VAL_OBJECT && ((struct object *)v.o)->type->call);
}

/* ---- the builtins ---- */

static int nkw_of(value kwnames) { return kwnames.tag == VAL_TUPLE ? (int)val_tuple(kwnames)->len : 0; }

/* compile(model=None, backend="eager", fullgraph=False, dynamic=None) */
static value b_compile(struct vm *vm, const value *args, int nargs, value kwnames)
{
	static const char *const params[] = {"model", "backend", "fullgraph", "dynamic", NULL};
	value a[4] = {val_none(), val_none(), val_bool(false), val_none()};
	if (args_parse("compile", args, nargs, kwnames, params, 0, a) < 0)
		return val_err();
	struct compile_config cfg = {backend_default(), false, "None", false, NULL, NULL, 0};
	if (a[1].tag != VAL_NONE) {
		if (a[1].tag != VAL_STR)
			return vm_raise("compile(): backend must be a string, not %s", val_type_name(a[1]));
		cfg.backend = backend_find(val_str(a[1])->data);
		if (!cfg.backend)
			return val_err();
	}
	if (arg_bool("compile", "fullgraph", a[2], &cfg.fullgraph) < 0)
		return val_err();
	if (a[3].tag == VAL_BOOL)
		cfg.dynamic = a[3].b ? "True" : "False";
	else if (a[3].tag != VAL_NONE)
		return vm_raise("compile(): dynamic must be None, True or False, not %s", val_type_name(a[3]));
	struct runtime *rt = vm_runtime(vm);
	if (!rt)
		return vm_raise("compile(): no compile runtime in this VM");
	runtime_apply_switches(rt, &cfg);
	if (a[0].tag == VAL_NONE) {
		value d = wrapped_new(&decorator_type, WRAP_COMPILE_DECO, val_none());
		if (!val_is_err(d))
			((struct wrapped *)d.o)->cfg = cfg;
		return d;
	}
	if (!is_callable(a[0]))
		return vm_raise("compile() expects a function, not %s", val_type_name(a[0]));
	if (rt->sw.disabled) {
		val_incref(a[0]);
		return a[0];
	}
	return compiled_new(a[0], &cfg);
}

static value disable_apply(value fn, bool recursive)
{
	if (!is_callable(fn))
		return vm_raise("disable() expects a function, not %s", val_type_name(fn));
	/* disable(compile(f)) disables f itself, as in PyTorch */
	while (fn.tag == VAL_OBJECT && ((struct object *)fn.o)->type == &compiled_type)
		fn = ((struct wrapped *)fn.o)->fn;
	return wrapped_new(&disabled_type, recursive ? WRAP_DISABLED : WRAP_DISABLED_FRAME, fn);
}

/* disable(fn=None, recursive=True) */
static value b_disable(struct vm *vm, const value *args, int nargs, value kwnames)
{
	(void)vm;
	static const char *const params[] = {"fn", "recursive", NULL};
	value a[2] = {val_none(), val_bool(true)};
	if (args_parse("disable", args, nargs, kwnames, params, 0, a) < 0)
		return val_err();
	bool recursive;
	if (arg_bool("disable", "recursive", a[1], &recursive) < 0)
		return val_err();
	if (a[0].tag == VAL_NONE) {
		value d = wrapped_new(&decorator_type, WRAP_DISABLE_DECO, val_none());
		if (!val_is_err(d))
			((struct wrapped *)d.o)->recursive = recursive;
		return d;
	}
	return disable_apply(a[0], recursive);
}

bool compile_api_op_disallowed(struct vm *vm, int op)
{
	struct runtime *rt = vm_runtime(vm);
	return rt && op >= 0 && op < OPS_COUNT && rt->disallowed[op];
}

/* disallow_in_graph / allow_in_graph: op out of graphs, or back in */
static value set_disallowed(struct vm *vm, int op, bool on, const char *fn)
{
	struct runtime *rt = vm_runtime(vm);
	if (!rt)
		return vm_raise("%s(): no compile runtime in this VM", fn);
	rt->disallowed[op] = on;
	return val_none();
}

/* the tensor op behind a builtin: ops functions and abs/round/max/min */
static int op_of(value v)
{
	if (v.tag != VAL_BUILTIN)
		return -1;
	struct builtin *b = (struct builtin *)v.o;
	int op = ops_of_builtin(b->fn);
	if (op >= 0)
		return op;
	static const char *const py[] = {"abs", "round", "max", "min", NULL};
	for (int i = 0; py[i]; i++)
		if (strcmp(b->name, py[i]) == 0)
			return ops_find(py[i], OPK_FN | OPK_METH);
	return -1;
}

static value b_disallow_in_graph(struct vm *vm, const value *args, int nargs, value kwnames)
{
	if (nargs != 1 || nkw_of(kwnames))
		return vm_raise("disallow_in_graph() takes exactly one argument (%d given)", nargs);
	int op = op_of(args[0]);
	if (op < 0)
		return vm_raise("disallow_in_graph() expects a tensor op, not %s", val_type_name(args[0]));
	if (val_is_err(set_disallowed(vm, op, true, "disallow_in_graph")))
		return val_err();
	val_incref(args[0]);
	return args[0];
}

static value b_allow_in_graph(struct vm *vm, const value *args, int nargs, value kwnames)
{
	if (nargs != 1 || nkw_of(kwnames))
		return vm_raise("allow_in_graph() takes exactly one argument (%d given)", nargs);
	int op = op_of(args[0]);
	if (op >= 0) {
		/* an op taken out of graphs by disallow_in_graph goes back in */
		if (val_is_err(set_disallowed(vm, op, false, "allow_in_graph")))
			return val_err();
		val_incref(args[0]);
		return args[0];
	}
	if (args[0].tag != VAL_FUNC)
		return vm_raise("allow_in_graph() expects a function, not %s", val_type_name(args[0]));
	return wrapped_new(&allowed_type, WRAP_ALLOWED, args[0]);
}

static value b_graph_break(struct vm *vm, const value *args, int nargs, value kwnames)
{
	(void)vm;
	(void)args;
	if (nargs)
		return vm_raise("graph_break() takes no arguments (%d given)", nargs);
	(void)kwnames;
	return val_none();
}

/* mark_dynamic(x, d) / mark_static(x, d): d an int or a list/tuple of ints */
static value mark_dims(const char *name, bool dyn, const value *args, int nargs, value kwnames)
{
	if (kwnames.tag == VAL_TUPLE && val_tuple(kwnames)->len)
		return vm_raise("%s() takes no keyword arguments", name);
	if (nargs != 2)
		return vm_raise("%s() takes 2 arguments (%d given)", name, nargs);
	if (args[0].tag != VAL_TENSOR)
		return vm_raise("%s(): expected a Tensor, not %s", name, val_type_name(args[0]));
	tensor *t = val_as_tensor(args[0]);
	const value *ds = &args[1];
	size_t n = 1;
	if (args[1].tag == VAL_LIST) {
		ds = val_list(args[1])->items;
		n = val_list(args[1])->len;
	} else if (args[1].tag == VAL_TUPLE) {
		ds = val_tuple(args[1])->items;
		n = val_tuple(args[1])->len;
	}
	for (size_t i = 0; i < n; i++) {
		if (ds[i].tag != VAL_INT)
			return vm_raise("%s(): a dimension must be an int, not %s", name, val_type_name(ds[i]));
		int64_t d = ds[i].i;
		if (d < 0)
			d += t->ndim;
		if (d < 0 || d >= t->ndim)
			return vm_raise("%s(): dimension %lld out of range for a %d-d tensor", name,
					(long long)ds[i].i, t->ndim);
		uint16_t bit = (uint16_t)(1u << d);
		if (dyn) {
			t->dyn_mark |= bit;
			t->static_mark &= (uint16_t)~bit;
		} else {
			t->static_mark |= bit;
			t->dyn_mark &= (uint16_t)~bit;
		}
	}
	return val_none();
}

static value b_mark_dynamic(struct vm *vm, const value *args, int nargs, value kwnames)
{
	(void)vm;
	return mark_dims("mark_dynamic", true, args, nargs, kwnames);
}

static value b_mark_static(struct vm *vm, const value *args, int nargs, value kwnames)
{
	(void)vm;
	return mark_dims("mark_static", false, args, nargs, kwnames);
}

static value b_reset(struct vm *vm, const value *args, int nargs, value kwnames)
{
	(void)args;
	(void)kwnames;
	if (nargs)
		return vm_raise("reset() takes no arguments (%d given)", nargs);
	struct runtime *rt = vm_runtime(vm);
	if (rt)
		frame_eval_reset(rt);
	return val_none();
}

static value b_freeze(struct vm *vm, const value *args, int nargs, value kwnames)
{
	if (nargs != 1 || nkw_of(kwnames))
		return vm_raise("freeze() takes exactly one argument (%d given)", nargs);
	value cf = args[0];
	if (compile_disabled(vm) && cf.tag != VAL_OBJECT) {
		val_incref(cf);
		return cf;
	}
	if (cf.tag != VAL_OBJECT || ((struct object *)cf.o)->type != &compiled_type)
		return vm_raise("freeze() expects a compiled function, not %s", val_type_name(cf));
	struct wrapped *w = (struct wrapped *)cf.o;
	value r = compiled_new(w->fn, &w->cfg);
	if (!val_is_err(r))
		((struct wrapped *)r.o)->cfg.frozen = true;
	return r;
}

static value b_is_compiling(struct vm *vm, const value *args, int nargs, value kwnames)
{
	(void)vm;
	(void)args;
	(void)kwnames;
	if (nargs)
		return vm_raise("is_compiling() takes no arguments (%d given)", nargs);
	return val_bool(frame_eval_is_tracing());
}

static const struct builtin_def api_builtins[] = {
	{"compile", b_compile},
	{"disable", b_disable},
	{"disallow_in_graph", b_disallow_in_graph},
	{"allow_in_graph", b_allow_in_graph},
	{"graph_break", b_graph_break},
	{"reset", b_reset},
	{"freeze", b_freeze},
	{"is_compiling", b_is_compiling},
	{"mark_dynamic", b_mark_dynamic},
	{"mark_static", b_mark_static},
	{"explain", explain_builtin},
	{NULL, NULL},
};

void compile_api_install(struct vm *vm)
{
	for (const struct builtin_def *d = api_builtins; d->name; d++) {
		value b = builtin_new(d->name, d->fn);
		vm_set_builtin(vm, d->name, b);
		val_decref(b);
	}
}

enum api_kind compile_api_classify(value v, value *inner)
{
	*inner = val_none();
	if (v.tag == VAL_BUILTIN) {
		builtin_fn fn = ((struct builtin *)v.o)->fn;
		if (fn == b_is_compiling)
			return API_IS_COMPILING;
		if (fn == b_graph_break)
			return API_GRAPH_BREAK;
		for (const struct builtin_def *d = api_builtins; d->name; d++)
			if (d->fn == fn)
				return API_CONTROL;
		return API_NONE;
	}
	if (v.tag != VAL_OBJECT)
		return API_NONE;
	const struct obj_type *t = ((struct object *)v.o)->type;
	struct wrapped *w = (struct wrapped *)v.o;
	if (t == &compiled_type) {
		*inner = w->fn;
		return API_COMPILED;
	}
	if (t == &disabled_type) {
		*inner = w->fn;
		return API_DISABLED;
	}
	if (t == &allowed_type) {
		*inner = w->fn;
		return API_ALLOWED;
	}
	if (t == &decorator_type)
		return API_CONTROL;
	return API_NONE;
}
