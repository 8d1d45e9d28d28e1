/* inductor_compile.h - a graph compiled by inductor: lowered, fused, each
 * kernel through the code generator and the kernel cache (doc/inductor.md). */
#ifndef TJ_INDUCTOR_COMPILE_H
#define TJ_INDUCTOR_COMPILE_H

#include <stdbool.h>

#include "compile_ctx.h"
#include "inductor_run.h"

/* g compiled; its kernels are handed back to cc (kernels table) as
 * kernels of shown (a graph handed back with compile_ctx_add_graph, or
 * NULL for the captured one). NULL after tj_error_set(): the code
 * generator could not be loaded, a kernel did not compile, g has a node
 * the lowering cannot handle, or out of memory ("inductor: out of
 * memory"): those set cc->unsupported (the frame falls back); the
 * planted compile error does not. */
struct ind_compiled *ind_compile_graph(struct compile_ctx *cc, const struct graph *g, const struct graph *shown);
void ind_compiled_free(struct ind_compiled *c);
/* false: kernels are cached in memory only (--no-kernel-cache) */
void ind_set_kernel_cache(bool disk);

#endif
