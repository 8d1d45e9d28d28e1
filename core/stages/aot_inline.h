/* aot_inline.h - ahead-of-time autograd traces through allow_in_graph
 * calls (../shared/LANGUAGE.md §5, as PyTorch's AOTAutograd does).
 *
 * The tracer puts a call of an allow_in_graph function in the graph as one
 * opaque GN_CALL node (the eager backend calls the function there).
 * aot_inline_calls traces each such function again, on example tensors of
 * the node's argument types, as a frame of its own (fullgraph, static
 * sizes), and puts the ops of that graph in place of the node: they are
 * then decomposed, differentiated and fused like the others. A call whose
 * body does not trace into one graph of its arguments alone stays opaque,
 * and aot_inline_calls says why in *why for the first one (the node then
 * runs the function as before, without a gradient rule). Doc: doc/aot.md.
 */
#ifndef TJ_AOT_INLINE_H
#define TJ_AOT_INLINE_H

#include "compile_ctx.h"
#include "graph.h"

/* Inlines the GN_CALL nodes of g (the calls that their bodies make
 * too). Without a VM in cc (a graph compiled outside a program run),
 * nothing. 0, or -1 when out of memory; *why (NULL, or malloc'd: the
 * first call left opaque and the reason) for the caller to free. */
int aot_inline_calls(struct graph *g, struct compile_ctx *cc, char **why);

#endif
