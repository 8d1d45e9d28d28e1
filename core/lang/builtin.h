/* builtin.h - C functions callable from tj, and their argument parsing.
 *
 * Calling convention (like CPython's vectorcall): args holds nargs values,
 * the positional ones first; kwnames is VAL_NONE or a tuple of k strings
 * naming the last k of them. Arguments are borrowed; the result is a new
 * reference, or val_err() after tj_error_set() (the VM adds the location).
 */
#ifndef TJ_BUILTIN_H
#define TJ_BUILTIN_H

#include "value.h"

struct vm;
typedef value (*builtin_fn)(struct vm *vm, const value *args, int nargs, value kwnames);

/* trace_kind: what the tracer does on a call of the builtin. The language
 * only stores it: 0 (builtin_new's) is an ordinary builtin, the other
 * values are the trace layer's (enum api_kind, compiled_fn.h), set by the
 * layer that installs the builtin. */
struct builtin {
	struct obj hdr;
	const char *name;   /* static string */
	builtin_fn fn;
	int trace_kind;
};

/* a builtin bound to self: calling it calls fn(self, args...) */
struct bound {
	struct obj hdr;
	value self;
	value fn;           /* VAL_BUILTIN */
};

struct builtin_def {
	const char *name;
	builtin_fn fn;
};

value builtin_new(const char *name, builtin_fn fn);
value bound_new(value self, value fn);          /* increfs both */

/* Matches args against a Python-style parameter list, e.g.
 *   static const char *const params[] = {"x", "dim", "keepdim", NULL};
 *   value a[3] = {val_none(), val_none(), val_bool(false)};   defaults
 *   if (args_parse("sum", args, nargs, kwnames, params, 1, a) < 0) return val_err();
 * Fills out[] with borrowed values; the first nrequired must be given.
 * Errors as Python: "sum() missing required argument 'x'", "sum() takes at
 * most 3 arguments (4 given)", "sum() got an unexpected keyword argument 'dims'",
 * "sum() got multiple values for argument 'x'". */
int args_parse(const char *fname, const value *args, int nargs, value kwnames,
	       const char *const *params, int nrequired, value *out);

/* Common conversions with Python-style errors naming fname and the parameter. */
int arg_int(const char *fname, const char *param, value v, int64_t *out);      /* int or bool */
int arg_float(const char *fname, const char *param, value v, double *out);     /* int, bool or float */
int arg_bool(const char *fname, const char *param, value v, bool *out);

#endif
