/* compile_api.c - the builtins that control compiling (LANGUAGE.md §5):
 * compile, disable, disallow_in_graph, allow_in_graph, graph_break,
 * reset, freeze, is_compiling and explain. The objects they make (the
 * compiled function, the disabled and allowed wrappers, the decorators)
 * live in the trace layer (compiled_fn.c), where the tracer sees them;
 * each builtin here carries its kind for the tracer (trace_kind). */
#include "compile_api.h"

#include <string.h>

#include "backends.h"
#include "compiled_fn.h"
#include "explain.h"
#include "frame_eval.h"
#include "ops.h"
#include "runtime.h"
#include "vm.h"

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
	if (a[0].tag == VAL_NONE)
		return compiled_fn_compile_decorator(&cfg);
	if (!compiled_fn_is_callable(a[0]))
		return vm_raise("compile() expects a function, not %s", val_type_name(a[0]));
	if (rt->sw.disabled) {
		val_incref(a[0]);
		return a[0];
	}
	return compiled_fn_new(a[0], &cfg);
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
	if (a[0].tag == VAL_NONE)
		return compiled_fn_disable_decorator(recursive);
	return compiled_fn_disable(a[0], recursive);
}

/* disallow_in_graph / allow_in_graph: op out of graphs, or back in */
static value set_disallowed(struct vm *vm, int op, bool on, const char *fn)
{
	struct runtime *rt = vm_runtime(vm);
	if (!rt)
		return vm_raise("%s(): no compile runtime in this VM", fn);
	runtime_set_op_disallowed(rt, op, on);
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
	return compiled_fn_allow(args[0]);
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
	if (compiled_fn_eager(vm) && cf.tag != VAL_OBJECT) {
		val_incref(cf);
		return cf;
	}
	value inner;
	if (compiled_fn_classify(cf, &inner) != API_COMPILED)
		return vm_raise("freeze() expects a compiled function, not %s", val_type_name(cf));
	return compiled_fn_freeze(cf);
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

/* each with what the tracer does on a call (compiled_fn.h): is_compiling()
 * is true, graph_break() breaks the graph, the others break it as a
 * control builtin */
static const struct {
	const char *name;
	builtin_fn fn;
	enum api_kind trace_kind;
} api_builtins[] = {
	{"compile", b_compile, API_CONTROL},
	{"disable", b_disable, API_CONTROL},
	{"disallow_in_graph", b_disallow_in_graph, API_CONTROL},
	{"allow_in_graph", b_allow_in_graph, API_CONTROL},
	{"graph_break", b_graph_break, API_GRAPH_BREAK},
	{"reset", b_reset, API_CONTROL},
	{"freeze", b_freeze, API_CONTROL},
	{"is_compiling", b_is_compiling, API_IS_COMPILING},
	{"mark_dynamic", b_mark_dynamic, API_CONTROL},
	{"mark_static", b_mark_static, API_CONTROL},
	{"explain", explain_builtin, API_CONTROL},
};

void compile_api_install(struct vm *vm)
{
	for (size_t i = 0; i < sizeof api_builtins / sizeof *api_builtins; i++) {
		value b = builtin_new(api_builtins[i].name, api_builtins[i].fn);
		if (!val_is_err(b))
			((struct builtin *)b.o)->trace_kind = (int)api_builtins[i].trace_kind;
		vm_set_builtin(vm, api_builtins[i].name, b);
		val_decref(b);
	}
}
