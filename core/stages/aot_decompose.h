/* aot_decompose.h - stage 2's decomposition: every composite op of a
 * graph (ops.def's stage COMP) rewritten into primitives, as decomp.def
 * says, so that the later passes (graph autodiff, inductor's lowering)
 * see primitives only (doc/ops.md, "Primitives and composites").
 */
#ifndef TJ_AOT_DECOMPOSE_H
#define TJ_AOT_DECOMPOSE_H

#include <stdbool.h>

struct compile_ctx;
struct gnode;
struct graph;

/* Replaces each composite node of g by its primitive nodes, inserted where
 * it was: each new node has its dtype and sizes from its op's rule
 * (meta_infer_node), a fresh name, and the source location and user stack
 * of the node it came from; the users and outputs of the old node read the
 * last new one, which must have the old node's type exactly. Repeats on
 * the new nodes until only primitives are left, then runs graph_check.
 * With cc, the pass is the compile's "decompose" phase.
 * 0, or -1 after tj_error_set() naming the op and the user line ("cannot
 * decompose softmax at f.tj:3: ..."): g is then part-decomposed, so a
 * caller decomposes a copy it can drop. */
int aot_decompose(struct graph *g, struct compile_ctx *cc);
/* The same, leaving as they are the composites that keep(g, node) names
 * (aot_eager keeps the ones that act on the eager autograd tape it runs
 * on, until graph autodiff reads them: backend_aot.c). */
int aot_decompose_keeping(struct graph *g, struct compile_ctx *cc,
			  bool (*keep)(const struct graph *g, const struct gnode *n));

/* decomp.def's row of op: whether it has one, and its formula (NULL) */
bool aot_decomp_has(int op);
const char *aot_decomp_formula(int op);

#endif
