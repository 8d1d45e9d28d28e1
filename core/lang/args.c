/* args.c - builtin function objects and Python-style argument parsing.
 *
 * builtin_new/bound_new make the objects behind every C function a program
 * can call; value.c frees them (obj_free). value.c defines them too: these
 * are weak definitions, so that whichever module ends up owning them the
 * library links (a strong definition wins over these). args_parse matches a vectorcall
 * (positional values, then keyword values named by kwnames) against a
 * parameter list, with CPython's messages.
 */
#include <stdlib.h>
#include <string.h>

#include "builtin.h"
#include "error.h"

#define ARGS_MAX_PARAMS 64

static void *obj_alloc(size_t size)
{
	struct obj *o = calloc(1, size);
	if (!o) {
		tj_error_set("out of memory");
		return NULL;
	}
	o->rc = 1;
	return o;
}

__attribute__((weak)) value builtin_new(const char *name, builtin_fn fn)
{
	struct builtin *b = obj_alloc(sizeof *b);
	if (!b)
		return val_err();
	b->name = name;
	b->fn = fn;
	return val_obj(VAL_BUILTIN, b);
}

__attribute__((weak)) value bound_new(value self, value fn)
{
	struct bound *b = obj_alloc(sizeof *b);
	if (!b)
		return val_err();
	val_incref(self);
	val_incref(fn);
	b->self = self;
	b->fn = fn;
	return val_obj(VAL_BOUND, b);
}

int args_parse(const char *fname, const value *args, int nargs, value kwnames,
	       const char *const *params, int nrequired, value *out)
{
	bool given[ARGS_MAX_PARAMS] = {false};
	int nparams = 0, nkw = 0;

	while (params[nparams])
		nparams++;
	if (nparams > ARGS_MAX_PARAMS) {
		tj_error_set("%s() has too many parameters", fname);
		return -1;
	}
	if (kwnames.tag == VAL_TUPLE)
		nkw = (int)val_tuple(kwnames)->len;
	int npos = nargs - nkw;

	if (npos > nparams) {
		tj_error_set("%s() takes at most %d argument%s (%d given)", fname, nparams,
			     nparams == 1 ? "" : "s", nargs);
		return -1;
	}
	for (int i = 0; i < npos; i++) {
		out[i] = args[i];
		given[i] = true;
	}
	for (int k = 0; k < nkw; k++) {
		struct str *kw = val_str(val_tuple(kwnames)->items[k]);
		int i = 0;
		while (i < nparams && strcmp(params[i], kw->data) != 0)
			i++;
		if (i == nparams) {
			tj_error_set("%s() got an unexpected keyword argument '%s'", fname, kw->data);
			return -1;
		}
		if (given[i]) {
			tj_error_set("%s() got multiple values for argument '%s'", fname, params[i]);
			return -1;
		}
		out[i] = args[npos + k];
		given[i] = true;
	}
	for (int i = 0; i < nrequired && i < nparams; i++) {
		if (!given[i]) {
			tj_error_set("%s() missing required argument '%s'", fname, params[i]);
			return -1;
		}
	}
	return 0;
}

int arg_int(const char *fname, const char *param, value v, int64_t *out)
{
	if (v.tag == VAL_INT) {
		*out = v.i;
		return 0;
	}
	if (v.tag == VAL_BOOL) {
		*out = v.b;
		return 0;
	}
	tj_error_set("%s(): argument '%s' must be int, not %s", fname, param, val_type_name(v));
	return -1;
}

int arg_float(const char *fname, const char *param, value v, double *out)
{
	switch (v.tag) {
	case VAL_FLOAT:
		*out = v.f;
		return 0;
	case VAL_INT:
		*out = (double)v.i;
		return 0;
	case VAL_BOOL:
		*out = v.b;
		return 0;
	default:
		tj_error_set("%s(): argument '%s' must be float, not %s", fname, param, val_type_name(v));
		return -1;
	}
}

int arg_bool(const char *fname, const char *param, value v, bool *out)
{
	if (v.tag == VAL_BOOL) {
		*out = v.b;
		return 0;
	}
	tj_error_set("%s(): argument '%s' must be bool, not %s", fname, param, val_type_name(v));
	return -1;
}
