/* aot_build.h - making new nodes in a graph pass (the decomposition, the
 * joint): arguments whose lists live in the graph's arena, and nodes whose
 * dtype and sizes come from their op's shape rule.
 *
 * A builder puts each node at pos (pos then moves up by one) with the
 * stack it is given. After a failed call the others do nothing and
 * return -1, so that a pass reads as a plain sequence of calls checked
 * once (b->failed, the error set).
 */
#ifndef TJ_AOT_BUILD_H
#define TJ_AOT_BUILD_H

#include <stdbool.h>

#include "graph.h"

struct aot_build {
	struct graph *g;
	int pos;                    /* where the next node goes */
	int nstack;
	struct user_frame *stack;   /* the stack each new node takes (shared) */
	bool failed;
};

static inline struct garg aot_gnode(int i) { return (struct garg){.kind = GARG_NODE, .node = i}; }
/* v's reference passes to the node */
static inline struct garg aot_gconst(value v) { return (struct garg){.kind = GARG_CONST, .constant = v}; }
static inline struct garg aot_gint(int64_t i) { return aot_gconst(val_int(i)); }
static inline struct garg aot_gnum(double f) { return aot_gconst(val_float(f)); }
static inline struct garg aot_gbool(bool b) { return aot_gconst(val_bool(b)); }
static inline struct garg aot_gdtype(dtype dt) { return aot_gconst(val_dtype(dt)); }
static inline struct garg aot_gsize(struct sym_size s)
{
	return s.sym >= 0 ? (struct garg){.kind = GARG_SYM, .sym = s.sym} : aot_gint(s.value);
}
/* a list or tuple of n args (their references pass to it), in the arena */
struct garg aot_gseq(struct aot_build *b, enum garg_kind kind, int n, const struct garg *items);
/* a tuple of sizes (symbols as GARG_SYM), of dims */
struct garg aot_gsizes(struct aot_build *b, int n, const struct sym_size *s);
struct garg aot_gdims(struct aot_build *b, int n, const int *dims);

/* op(args...): nargs leading arguments (struct garg, their references
 * pass to the node), the op's defaults for the rest; requires_grad as
 * the tracer says. The new node's index, or -1. */
int aot_emit(struct aot_build *b, int op, int nargs, ...);
/* item k of the tuple that node t returns (max with a dim) */
int aot_item(struct aot_build *b, int t, int k);
/* fails the builder with the error fmt: -1 */
int aot_build_fail(struct aot_build *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
