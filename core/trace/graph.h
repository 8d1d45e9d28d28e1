/* graph.h - the graph IR shared by every stage.
 *
 * A graph is a straight list of nodes in execution order: inputs first
 * (each with the guard source it was read from), then ops, each a call of
 * one ops.def op on normalized arguments (ops_call's convention), then the
 * outputs. Every node carries its result's dtype and shape and the source
 * location and user stack of the line that made it, so every tool can point
 * back at the program.
 *
 * Room for what comes next: a size is a constant or a symbol (dynamic
 * shapes print as f32[s0, 3]); a graph has a stage tag, so the aot forward
 * and backward graphs and inductor's fused graphs are graphs too.
 *
 * Memory: the nodes' names, args arrays (and the items of list args),
 * input sources and user stacks live in one arena that the graph owns;
 * graph_free drops the references to constants and callees, then frees
 * the arena in one call. The nodes array, outputs[], name and compile_id
 * are malloc'd (the tracer and the frame evaluator set them), and so is
 * the table of names in use (it grows).
 *
 * Passes: graph_users says who reads each node; graph_insert,
 * graph_replace_uses and graph_erase edit the list in place (indexes move,
 * args and outputs follow); graph_verify checks the invariants above, and
 * graph_check runs it after each pass in debug and test builds
 * (doc/building.md).
 */
#ifndef TJ_GRAPH_H
#define TJ_GRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dtype.h"
#include "error.h"
#include "tensor.h"
#include "value.h"

enum graph_stage {
	STAGE_CAPTURED,     /* what the tracer recorded */
	STAGE_AOT_FORWARD,  /* aot_eager: decomposed forward */
	STAGE_AOT_BACKWARD, /* aot_eager: traced backward */
	STAGE_INDUCTOR,     /* after fusion */
};
const char *graph_stage_name(enum graph_stage s); /* "captured", "aot_forward", ... */

/* One dimension: a constant, or symbol sN (value is then the example size). */
struct sym_size {
	int64_t value;
	int sym;            /* -1: constant */
};

/* An argument: a node's result, a constant, a list/tuple of arguments
 * (cat's tensors), or a symbolic size (reshape(x, (s0, -1))): an int that
 * the interpreter takes from the input sizes that bind symbol sym. */
enum garg_kind { GARG_NODE, GARG_CONST, GARG_LIST, GARG_TUPLE, GARG_SYM };
struct garg {
	enum garg_kind kind;
	int node;           /* GARG_NODE: index into graph->nodes */
	value constant;     /* GARG_CONST: an owned reference */
	int sym;            /* GARG_SYM: the symbol sN */
	int n;              /* GARG_LIST / GARG_TUPLE */
	struct garg *items;
};

/* One frame of a user stack: where a node (or a break) came from, the
 * outermost call first. */
struct user_frame {
	const struct source *src;
	int line, col;
	const char *function;   /* static or owned by the code object */
};

enum gnode_kind {
	GN_INPUT,           /* a tensor read from the frame: source is its guard source */
	GN_OP,              /* op(args...) */
	GN_GETITEM,         /* item `index` of a tuple-valued node (max with a dim) */
	GN_CALL,            /* allow_in_graph: an opaque user function, args as GN_OP */
};

struct gnode {
	enum gnode_kind kind;
	char *name;             /* unique in the graph: "a", "abs_1", "add" */
	int op;                 /* GN_OP: enum ops_id */
	value callee;           /* GN_CALL: the user function (owned) */
	int nargs;
	struct garg *args;
	int index;              /* GN_GETITEM: the tuple item; args[0] is the tuple node */
	char *source;           /* GN_INPUT: "L['a']" */
	/* the result (for a tuple result: nouts > 0 and these describe nothing) */
	bool is_tensor;
	dtype dt;
	int ndim;
	struct sym_size shape[TENSOR_MAX_DIMS];
	bool requires_grad;
	int nouts;              /* > 0: the op returns a tuple of nouts tensors */
	/* where it came from */
	int nstack;
	struct user_frame *stack; /* [nstack - 1] is the line that made the node; nodes may share one */
};

struct graph {
	char *name;             /* the function's name */
	char *compile_id;       /* "0/1" */
	const struct source *src;
	int line;               /* the def line */
	enum graph_stage stage;
	int nnodes, cap;
	struct gnode *nodes;
	int noutputs;
	int *outputs;           /* node indexes, in return order */
	int nsyms;              /* symbols s0 .. s(nsyms-1) */
	struct graph_mem *mem;  /* graph.c: the arena and the names in use */
};

/* A new empty graph; NULL when out of memory. */
struct graph *graph_new(const char *name, const char *compile_id, const struct source *src,
			int line, enum graph_stage stage);
/* Drops the constants' and callees' references and frees the arena. */
void graph_free(struct graph *g);
/* Memory in g's arena, for the parts of a node made for graph_insert
 * (zeroed; NULL when out of memory). It lives until graph_free. */
void *graph_alloc(struct graph *g, size_t size);
char *graph_strdup(struct graph *g, const char *s);
/* A fresh node name from an op name: "abs" then "abs_1", ... as PyTorch
 * names them; in g's arena. NULL when out of memory. */
char *graph_fresh_name(struct graph *g, const char *base);

/* The tracer's builder: appends n and returns its index. n->name comes
 * from graph_fresh_name; n->args (and the items of list args), n->source
 * and n->stack are malloc'd blocks that the graph takes: it moves them
 * into its arena and frees them. The constants' and the callee's
 * references pass to the graph. -1 when out of memory: n's blocks and
 * references are released all the same (graph_node_discard). */
int graph_add(struct graph *g, struct gnode *n);
/* Releases what a node not added holds, as graph_add would take it; n is
 * zeroed. */
void graph_node_discard(struct gnode *n);
/* Moves the inputs before every other node, keeping the order of each
 * part (an input is made where the trace first reads it; a listing, like an
 * FX graph's placeholders, shows them all first). Node indexes change:
 * only for a finished graph. -1 (g unchanged) when out of memory. */
int graph_hoist_inputs(struct graph *g);
/* Drops nodes from index n on (a failed inlined call rolls back). */
void graph_truncate(struct graph *g, int n);
int graph_op_count(const struct graph *g);  /* GN_OP and GN_CALL nodes */
/* The items of a constant index arg (getitem's: one constant, a constant
 * tuple, or a tuple of constants as the tracer records x[:1, :]) into
 * items (borrowed): their count, or -1 when an item is not a constant or
 * there are more than max. */
int graph_const_items(const struct garg *a, value *items, int max);
/* a and b have one type: tensor or not, tuple arity, dtype, sizes (the
 * same constants and symbols); a pass that replaces a node checks it */
bool graph_same_type(const struct gnode *a, const struct gnode *b);
/* A tensor node's bytes, elements times the dtype's size, at the example
 * sizes of its symbols (those it was traced with); 0 when not a tensor. */
int64_t graph_node_bytes(const struct gnode *n);
/* A deep copy into a graph of its own (its own arena, constants' and
 * callees' references, names; the user frames' function names and
 * sources stay borrowed). NULL when out of memory. */
struct graph *graph_copy(const struct graph *g);
/* A new graph of n of g's nodes, node order[k] at index k, in their own
 * arena as graph_copy's: a pass that cuts a graph in parts copies only
 * what each part keeps. A node with as_input[k] (as_input may be NULL)
 * becomes an input of its type and name with that source (a value the
 * part is given); the others read only nodes copied before them. Its
 * outputs are the copies of g's nodes outputs[0, noutputs). NULL when out
 * of memory. */
struct graph *graph_extract(const struct graph *g, int n, const int *order, const char *const *as_input, int noutputs,
			    const int *outputs);

/* ---- users: who reads each node ----
 * Computed on demand from the args (nothing to keep in step while a pass
 * edits the graph); rebuild after editing. */
struct graph_users {
	int nnodes;
	int *first;     /* [nnodes + 1]: node i's readers are user[first[i] .. first[i + 1]) */
	int *user;      /* the nodes that read it, in graph order, each once */
	int *noutputs;  /* [nnodes]: how many entries of g->outputs are node i */
};
/* 0, or -1 when out of memory (u is then empty) */
int graph_users_build(const struct graph *g, struct graph_users *u);
/* mark[k] = true for each node k that n's args read */
void graph_mark_reads(const struct gnode *n, bool *mark);
void graph_users_release(struct graph_users *u);
static inline int graph_users_count(const struct graph_users *u, int i)
{
	return u->first[i + 1] - u->first[i];
}
/* read by a node or returned */
static inline bool graph_is_used(const struct graph_users *u, int i)
{
	return u->first[i + 1] > u->first[i] || u->noutputs[i] > 0;
}

/* ---- editing, for passes ----
 * Each keeps the list in order and the indexes dense: the nodes after an
 * inserted or erased one move, and every arg and output follows them.
 * Pointers into g->nodes do not survive an insert. Since args read
 * earlier nodes (graph_verify), an edit at i looks only at the nodes from
 * i on: appending is cheap, an edit in the middle O(n). */

/* Puts n at index pos (0 <= pos <= nnodes); the nodes from pos on move up
 * by one. n's name, args and source are in g's arena (graph_fresh_name,
 * graph_alloc, graph_strdup), its stack too or shared with another node of
 * g (a decomposed node keeps the stack of the node it replaces); its args
 * read nodes before pos. Returns pos, the graph then holding n's
 * references; or -1 when out of memory, with nothing changed. */
int graph_insert(struct graph *g, int pos, const struct gnode *n);
/* Puts at pos a copy of node n of another graph (an op or a getitem): a
 * fresh name from n's, its arg trees copied into g's arena with every
 * node arg k renumbered to to[k] (a node of g before pos), and its user
 * stack the frames outer[0, nouter) (the call it is inlined at) then n's.
 * Returns pos, or -1 when out of memory, with nothing changed. */
int graph_insert_copy(struct graph *g, int pos, const struct gnode *n, const int *to, int nouter,
		      const struct user_frame *outer);
/* Every arg and output that reads node from reads node to instead;
 * returns how many were changed. to must come before from's readers. */
int graph_replace_uses(struct graph *g, int from, int to);
/* Every node arg i of a's tree becomes to[i] (a pass that rebuilds the
 * list renumbers the args of the nodes it keeps). */
void graph_remap_arg(struct garg *a, const int *to);
/* Removes node i, which nothing reads and which is not an output; the
 * nodes after it move down by one. Returns 0, or -1 after tj_error_set(). */
int graph_erase(struct graph *g, int i);
/* Removes every node i with drop[i] (drop has g->nnodes entries) in one
 * pass, as graph_erase on each from the last would: the others keep their
 * order, args and outputs follow. Nothing kept may read a dropped node,
 * nor an output be one: else -1 after tj_error_set(), g unchanged. */
int graph_erase_nodes(struct graph *g, const bool *drop);

/* ---- checking ----
 * The invariants every pass keeps: inputs first, then the rest; every
 * node arg names an earlier node; a GN_GETITEM reads a tuple-valued node
 * at an index below its nouts, and nothing else reads a tuple directly;
 * outputs name nodes of the graph; names unique and non-empty; symbols
 * below nsyms; ndim at most TENSOR_MAX_DIMS; valid op ids; a user stack on
 * every node but the inputs. Returns 0, or -1 with the first broken one
 * in why ("node add_1: arg 0 reads div, which comes later"). */
int graph_verify(const struct graph *g, struct strbuf *why);
/* In debug and test builds (TJIT_DEBUG, or TJIT_VERIFY_GRAPHS=1 in the
 * environment: doc/building.md), runs graph_verify and aborts with the
 * reason when g is broken; `after` names the pass that made g ("trace").
 * Otherwise does nothing. */
void graph_check(const struct graph *g, const char *after);

/* LANGUAGE.md §7:
 *   graph 0/0 toy_example (toy.tj:1) · 3 ops
 *     a: f32[10] = input L['a']
 *     abs_1: f32[10] = abs(a)                  # toy.tj:2  x = a / (abs(a) + 1)
 *     add: f32[10] = add(abs_1, 1)             # toy.tj:2
 *     return (div,)
 * The source text follows a node's location only on the first node of each line. */
void graph_print(const struct graph *g, struct strbuf *out);
/* "f32[10]", "i64[]", "b8[2, 3]", "f64[s0, 3]" */
void graph_format_type(const struct gnode *n, struct strbuf *out);
/* "abs_1, 1", "[a, b], 0" */
void graph_format_args(const struct graph *g, const struct gnode *n, struct strbuf *out);

/* Runs g on its input tensors, node by node, through ops_call (the eager
 * kernels, recording autograd as eager code would). The sizes of the
 * inputs bind the graph's symbols (an input dimension of size sN gives sN
 * its value), and a GARG_SYM argument is that value. outputs[] receives
 * g->noutputs new references. Returns 0 or -1 after tj_error_set(). */
struct vm;
int graph_interpret(struct vm *vm, const struct graph *g, tensor *const *inputs, value *outputs);
/* graph_interpret, but a tensor node i with skip[i] does not run: its
 * value is zeros of its type where a node that runs or an output reads it
 * (aot_eager's backward when no gradient reached some outputs: nothing
 * flows from them) */
int graph_interpret_skipping(struct vm *vm, const struct graph *g, tensor *const *inputs, const bool *skip,
			     value *outputs);
/* What graph_interpret does for a stage that runs some nodes itself
 * (inductor's extern calls): symval[] gets each symbol's size from the
 * inputs, and one GN_OP or GN_CALL node runs on the values vals[] of the
 * nodes it reads (a new reference, or an error value after tj_error_set). */
void graph_bind_syms(const struct graph *g, tensor *const *inputs, int64_t *symval);
value graph_run_node(struct vm *vm, const struct gnode *n, const value *vals, const int64_t *symval);

#endif
