/* compiled_fn.h - the callables the compile API hands a program, and what
 * the tracer needs to know about them.
 *
 * compile(f) returns a compiled function, whose call runs f under the
 * frame evaluator (frame_eval_call); disable(f) and allow_in_graph(f)
 * wrap f so that it runs eagerly; compile(backend=...) and
 * disable(recursive=...) without a function return decorators. The
 * builtins that make them (compile_api.c, layer api) sit above the
 * tracer; the objects sit here, so that the tracer can see through them
 * without calling up. The builtins themselves carry their kind in their
 * struct builtin's trace_kind (builtin.h), set by compile_api_install from
 * this enum; compiled_fn_classify reads both.
 */
#ifndef TJ_COMPILED_FN_H
#define TJ_COMPILED_FN_H

#include <stdbool.h>

#include "compile_ctx.h"
#include "value.h"

struct vm;

/* What a callee is to the tracer. API_NONE is 0: an ordinary builtin's
 * trace_kind. */
enum api_kind {
	API_NONE,
	API_COMPILED,       /* a compiled function: *inner is the function it wraps */
	API_DISABLED,       /* disable(f) / disable(f, recursive=False): *inner = f */
	API_ALLOWED,        /* allow_in_graph(f): *inner = f */
	API_IS_COMPILING,   /* the builtin is_compiling */
	API_GRAPH_BREAK,    /* the builtin graph_break */
	API_CONTROL,        /* compile, disable, reset, freeze, explain, a decorator, ... */
};

/* The kind of v; *inner (borrowed) is the wrapped function for
 * API_COMPILED, API_DISABLED and API_ALLOWED, None otherwise. */
enum api_kind compiled_fn_classify(value v, value *inner);

/* Each returns a new reference, or val_err() after tj_error_set(). fn is
 * borrowed. */
/* compile(fn): fn a callable; a compiled function compiles what it wraps
 * again under cfg, its owner staying the function first compiled */
value compiled_fn_new(value fn, const struct compile_config *cfg);
/* freeze(cf): a copy of the compiled function cf (API_COMPILED) that never
 * compiles */
value compiled_fn_freeze(value cf);
/* disable(fn, recursive): fn a callable; disable(compile(f)) disables f */
value compiled_fn_disable(value fn, bool recursive);
/* allow_in_graph(fn): fn a user function */
value compiled_fn_allow(value fn);
/* compile(backend=...) / disable(recursive=...) without a function: the
 * decorator that applies them to the function it is called with */
value compiled_fn_compile_decorator(const struct compile_config *cfg);
value compiled_fn_disable_decorator(bool recursive);

/* what compile() and disable() accept */
bool compiled_fn_is_callable(value v);
/* --eager (the runtime's switch): compile() and freeze() return their
 * function unchanged */
bool compiled_fn_eager(struct vm *vm);

#endif
