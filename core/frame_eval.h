/* frame_eval.h - the frame evaluator (doc/tracer.md): the cache of compiled
 * artifacts per (code object, resume pc), guard checks, recompiles, the
 * cache limit, frozen functions, running artifacts and resuming frames
 * after graph breaks.
 *
 * A compiled function's call (compile_api.c) installs the evaluator as the
 * VM's eval-frame hook for the dynamic extent of the call; every user
 * function call in that extent, at any depth, then comes here. Each call
 * looks its frame up in the process-wide cache: the newest entry whose
 * guards hold runs; a miss traces the frame (tracer.h), compiles the graph
 * with the backend (backend.h), logs a compile_record (compile_log.h) and
 * runs the new entry. An artifact that ends in a graph break rebuilds the VM
 * frame at the breaking instruction, runs that one instruction in the VM
 * (vm_step) and goes on with the cache lookup of the next pc.
 */
#ifndef TJ_FRAME_EVAL_H
#define TJ_FRAME_EVAL_H

#include <stdbool.h>

#include "value.h"

struct vm;
struct backend;
struct code;
struct source;

/* What compile(f, backend=, fullgraph=, dynamic=) asked for. */
struct compile_config {
	const struct backend *backend;
	bool fullgraph;
	const char *dynamic;        /* "None", "True", "False" (static strings) */
	bool frozen;                /* freeze(cf): never compile, misses run eagerly */
	/* the compiled function, for the records' owner_* (explain groups by it) */
	const char *owner_name;
	const struct source *owner_src;
	int owner_line;
};

/* Calls callee(args) with the evaluator installed under cfg (restored to
 * what it was when the call returns). Returns the result (new reference)
 * or val_err() with the VM's error pending. */
value frame_eval_call(struct vm *vm, const struct compile_config *cfg, value callee, const value *args,
		      int nargs, value kwnames);

/* For explain(): calls callee(args) compiled with the named backend under
 * a private, empty cache that is thrown away afterwards, so the running
 * program's caches are neither used nor changed. Compile records go to
 * compile_log_compile() (and so to the listeners) as usual. */
value frame_eval_call_private(struct vm *vm, value callee, const value *args, int nargs, value kwnames,
			      const char *backend);

/* ---- switches (tjit run flags) ---- */
/* --eager: compile() returns its function unchanged, so that a program runs
 * exactly as if nothing were compiled. */
void frame_eval_set_disabled(bool disabled);
bool frame_eval_disabled(void);
/* --cache-size-limit N (default 8; at least 1) */
void frame_eval_set_cache_size_limit(int limit);
int frame_eval_cache_size_limit(void);
/* --backend NAME: every compile() uses it instead of its own backend=.
 * Returns -1 (tj_error_set: "unknown backend 'x' (valid: eager, ...)") for
 * an unknown name; NULL clears it. */
int frame_eval_set_backend_override(const char *name);
/* --fullgraph: every compile() behaves as fullgraph=True */
void frame_eval_set_fullgraph_override(bool on);
/* the config a compile(f, ...) call gets once the overrides apply */
void frame_eval_apply_overrides(struct compile_config *cfg);

/* ---- state ---- */
/* reset(): forgets every compiled artifact (artifacts running now finish).
 * Compile ids keep counting, so that they stay unique within a run. */
void frame_eval_reset(void);
/* Frees every cache and flushes the per-frame counters to the log (at the
 * end of a run, before compile_log_shutdown). */
void frame_eval_shutdown(void);
/* is_compiling(): true while the tracer runs */
bool frame_eval_is_tracing(void);

/* disable(f, recursive=False): the next frame of code that enters the
 * evaluator runs in the VM (its callees are still compiled); NULL clears. */
void frame_eval_skip_next(struct code *code);

/* compile_api.c: installs compile, disable, disallow_in_graph,
 * allow_in_graph, graph_break, reset, freeze, is_compiling and explain as
 * builtins of vm (builtins_install calls it). */
void compile_api_install(struct vm *vm);

#endif
