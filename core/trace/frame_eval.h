/* frame_eval.h - the frame evaluator (doc/tracer.md): the cache of compiled
 * artifacts per (code object, resume pc), guard checks, recompiles, the
 * cache limit, frozen functions, running artifacts and resuming frames
 * after graph breaks.
 *
 * A compiled function's call (compiled_fn.c) installs the evaluator as the
 * VM's eval-frame hook for the dynamic extent of the call; every user
 * function call in that extent, at any depth, then comes here. Each call
 * looks its frame up in the cache of the VM's runtime (runtime.h): the
 * newest entry whose guards hold runs; a miss compiles the frame through
 * its passes (trace, guards, graph cleanups, the backend: compile_frame,
 * with a compile_ctx), logs a compile_record (compile_log.h) and runs the
 * new entry. An artifact that ends in a graph break rebuilds the VM
 * frame at the breaking instruction, runs that one instruction in the VM
 * (vm_step) and goes on with the cache lookup of the next pc.
 */
#ifndef TJ_FRAME_EVAL_H
#define TJ_FRAME_EVAL_H

#include <stdbool.h>

#include "compile_ctx.h"
#include "value.h"

struct vm;
struct backend;
struct code;
struct runtime;

/* Calls callee(args) with the evaluator installed under cfg (restored to
 * what it was when the call returns), with the caches of vm's runtime
 * (runtime.h). Returns the result (new reference) or val_err() with the
 * VM's error pending. */
value frame_eval_call(struct vm *vm, const struct compile_config *cfg, value callee, const value *args,
		      int nargs, value kwnames);

/* For explain(): calls callee(args) compiled with backend under a private,
 * empty cache that is thrown away afterwards, so the running program's
 * caches are neither used nor changed. Compile records go to the runtime's
 * log (and so to the listeners) as usual. */
value frame_eval_call_private(struct vm *vm, value callee, const value *args, int nargs, value kwnames,
			      const struct backend *backend);

/* ---- state (one struct frame_eval per runtime) ---- */
/* NULL when out of memory */
struct frame_eval *frame_eval_new(void);
/* Frees rt's caches (rt->fe), flushing the per-frame counters to rt's log
 * (runtime_free calls it). */
void frame_eval_free(struct runtime *rt);
/* reset(): forgets every compiled artifact (artifacts running now finish).
 * Compile ids keep counting, so that they stay unique within a run. */
void frame_eval_reset(struct runtime *rt);
/* is_compiling(): true while the tracer runs */
bool frame_eval_is_tracing(void);

/* disable(f, recursive=False): the next frame of code that enters the
 * evaluator runs in the VM (its callees are still compiled); NULL clears. */
void frame_eval_skip_next(struct runtime *rt, struct code *code);

#endif
