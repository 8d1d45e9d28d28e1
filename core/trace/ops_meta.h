/* ops_meta.h - the shape and dtype rule of every op: ops.def's meta column.
 *
 * A rule tells what an op returns (the dtype and the sizes of each result)
 * from its arguments' metadata, without running it: the tracer, and every
 * graph pass after it, use it where running the op on example tensors
 * would cost time or cannot be done. The arguments are an op's normalized
 * arguments (ops_call's convention: exactly ops_nparams(op) of them) where
 * each tensor is metadata only and each size is a constant or a symbol;
 * everything else is a constant.
 *
 * Concrete sizes and every error come from the very functions the kernels
 * call (tensor_*_shape in tensor.h, the argument checks in ops.h), so a
 * rule raises the message eager code raises for the same bad arguments.
 * Each size carries its value (a symbol's example value), so a rule always
 * knows the concrete result too; the symbols follow the rules that
 * doc/tracer.md "Dynamic shapes" describes (broadcasting, reductions,
 * reshape with -1, indexing, ...). Where two sizes must be equal or a size
 * must be known as a number, a rule asks its context, which the tracer
 * implements with its union-find of symbols.
 */
#ifndef TJ_OPS_META_H
#define TJ_OPS_META_H

#include <stdbool.h>

#include "graph.h"
#include "ops.h"

/* A tensor as a rule sees it: no data. */
struct meta_tensor {
	dtype dt;
	int ndim;
	struct sym_size shape[TENSOR_MAX_DIMS]; /* value: the size, or the symbol's example value */
};

enum meta_kind {
	META_CONST,     /* a constant: v (None, numbers, dtypes, slices, tuples of those) */
	META_TENSOR,    /* t */
	META_SYMINT,    /* an int that is a size of an input: s (value and symbol) */
	META_LIST,      /* items: a list of arguments (cat's tensors, sizes with symbols) */
	META_TUPLE,     /* items: a tuple of arguments */
};

struct meta_arg {
	enum meta_kind kind;
	value v;                        /* META_CONST: borrowed */
	const struct meta_tensor *t;    /* META_TENSOR */
	struct sym_size s;              /* META_SYMINT */
	int n;                          /* META_LIST, META_TUPLE */
	const struct meta_arg *items;
};

/* What a rule asks about symbols. The tracer keeps them in a union-find;
 * a NULL context takes the symbols as they are (a finished graph, whose
 * trace has unified and specialized all it needed). */
struct meta_ctx {
	int (*find)(struct meta_ctx *c, int sym);        /* its root, or -1 when specialized */
	int (*unify)(struct meta_ctx *c, int a, int b);  /* a and b are one symbol from now on: its root */
	void (*specialize)(struct meta_ctx *c, int sym); /* sym is its example value from now on */
};

#define META_MAX_OUTS 2
struct meta_out {
	int n;                          /* 1: a tensor; 2: a tuple (max/min with a dim) */
	struct meta_tensor t[META_MAX_OUTS];
};

/* Whether op has a rule (every op that can be a graph node has one). */
bool meta_has_rule(int op);
/* Whether op's size arguments may be symbolic ints (reshape, expand, the
 * creators with sizes); every other rule uses a symbolic int as its value. */
bool meta_takes_sym_sizes(int op);
/* The rule's name, ops.def's meta column ("binary", "reduce", "none"). */
const char *meta_rule_name(int op);
/* Runs op's rule: 0 and *out, or -1 after tj_error_set() with the message
 * the op's kernel gives for the same arguments (an op without a rule:
 * "<op> has no shape rule"). Symbols met by a constant are specialized and
 * equal ones unified through ctx, as the tracer does; a rule with no
 * symbolic form for its arguments specializes every symbol of them. */
int meta_infer(int op, const struct meta_arg *args, struct meta_ctx *ctx, struct meta_out *out);
/* The rule of graph node n (a GN_OP) on its arguments: a node's result is a
 * tensor of the dtype and sizes recorded on it, a symbolic argument the
 * symbol with the size of the input dimension that binds it. What a graph
 * pass runs to learn or check a node's result. */
int meta_infer_node(const struct graph *g, const struct gnode *n, struct meta_ctx *ctx, struct meta_out *out);

#endif
