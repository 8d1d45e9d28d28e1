/* compiled_fn.c - the compiled function, the disabled and allowed
 * wrappers and the decorators (compiled_fn.h), and how the tracer tells
 * them and the compile API's builtins apart. */
#include "compiled_fn.h"

#include <stdlib.h>

#include "frame_eval.h"
#include "runtime.h"
#include "vm.h"

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

value compiled_fn_new(value fn, const struct compile_config *cfg)
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

bool compiled_fn_eager(struct vm *vm)
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
		r = compiled_fn_eager(vm) ? (val_incref(args[0]), args[0]) : compiled_fn_new(args[0], &w->cfg);
		break;
	case WRAP_DISABLE_DECO:
		if (nargs != 1 || kwnames.tag == VAL_TUPLE) {
			r = vm_raise("disable() decorator takes exactly one function");
			break;
		}
		r = compiled_fn_disable(args[0], w->recursive);
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

bool compiled_fn_is_callable(value v)
{
	return v.tag == VAL_FUNC || v.tag == VAL_BUILTIN || v.tag == VAL_BOUND || v.tag == VAL_TYPE ||
	       (v.tag == VAL_OBJECT && ((struct object *)v.o)->type->call);
}

value compiled_fn_freeze(value cf)
{
	struct wrapped *w = (struct wrapped *)cf.o;
	value r = compiled_fn_new(w->fn, &w->cfg);
	if (!val_is_err(r))
		((struct wrapped *)r.o)->cfg.frozen = true;
	return r;
}

value compiled_fn_disable(value fn, bool recursive)
{
	if (!compiled_fn_is_callable(fn))
		return vm_raise("disable() expects a function, not %s", val_type_name(fn));
	/* disable(compile(f)) disables f itself, as in PyTorch */
	while (fn.tag == VAL_OBJECT && ((struct object *)fn.o)->type == &compiled_type)
		fn = ((struct wrapped *)fn.o)->fn;
	return wrapped_new(&disabled_type, recursive ? WRAP_DISABLED : WRAP_DISABLED_FRAME, fn);
}

value compiled_fn_allow(value fn)
{
	return wrapped_new(&allowed_type, WRAP_ALLOWED, fn);
}

value compiled_fn_compile_decorator(const struct compile_config *cfg)
{
	value d = wrapped_new(&decorator_type, WRAP_COMPILE_DECO, val_none());
	if (!val_is_err(d))
		((struct wrapped *)d.o)->cfg = *cfg;
	return d;
}

value compiled_fn_disable_decorator(bool recursive)
{
	value d = wrapped_new(&decorator_type, WRAP_DISABLE_DECO, val_none());
	if (!val_is_err(d))
		((struct wrapped *)d.o)->recursive = recursive;
	return d;
}

enum api_kind compiled_fn_classify(value v, value *inner)
{
	*inner = val_none();
	if (v.tag == VAL_BUILTIN)
		return (enum api_kind)((struct builtin *)v.o)->trace_kind;
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
