/* compile_api.h - the builtins that control compiling (LANGUAGE.md §5). */
#ifndef TJ_COMPILE_API_H
#define TJ_COMPILE_API_H

struct vm;

/* Installs compile, disable, disallow_in_graph, allow_in_graph,
 * graph_break, reset, freeze, is_compiling, mark_dynamic, mark_static and
 * explain as builtins of vm, each with its trace_kind (compiled_fn.h)
 * (prelude_install calls it). */
void compile_api_install(struct vm *vm);

#endif
