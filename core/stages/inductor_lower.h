/* inductor_lower.h - inductor's lowering and scheduling: a graph of
 * primitive ops (aot_eager's forward or backward graph) becomes a program
 * of steps, each a loop IR kernel (loopir.h) that computes a group of
 * fused nodes, or an extern call of one node on the eager kernels
 * (matmul through BLAS, cat, random, an allow_in_graph call: what has no
 * loop form here, as Inductor's extern and fallback kernels).
 *
 * Which nodes fuse (doc/inductor.md):
 * - a pointwise or view node read once is inlined into its reader, and so
 *   is every view and constant; every other node is a member of a group:
 *   a graph output, a node read twice or by an extern call, a reduction;
 * - a group is an iteration shape S and the set R of its reduced dims;
 *   members join the open group in graph order while they fit: pointwise
 *   members of shape S (or of the reduced shape once R is set), and
 *   reductions of an S-shaped value over R (the first turns a pointwise
 *   group into a reduction group: its pointwise producers run in the same
 *   kernel); a member that does not fit closes the group;
 * - a member is stored to a buffer only when something outside its group
 *   reads it (another group, an extern call, the graph's outputs); inside
 *   the group it stays in registers;
 * - a reduction's argument that costs a transcendental and that the last
 *   section reads again (softmax's exp) is computed once: kept in the
 *   buffer of a member that reads it, between the two sections;
 * - a matmul of two matrices reads an operand that is a transposed matrix
 *   (permute(x, (1, 0)), or several) as x itself, with BLAS's transpose
 *   flag, and the transpose of a matmul that nothing else reads is one
 *   matmul of its operands swapped: x is stored, the transposes never are;
 * - a kernel right after a matmul whose loops are the product's rows, and
 *   that reads the product only in the row it is on, is its epilogue: it
 *   runs on each block of rows as BLAS makes it.
 * Every decision is written to the program's log (TJIT_LOGS=fusion).
 */
#ifndef TJ_INDUCTOR_LOWER_H
#define TJ_INDUCTOR_LOWER_H

#include "compile_ctx.h"
#include "graph.h"
#include "loopir.h"
#include "strbuf.h"

enum ind_buf_kind {
	IBUF_INPUT,     /* a graph input */
	IBUF_TEMP,      /* a value that a step writes */
	IBUF_UNUSED,    /* a member that stays in registers: nothing outside its group reads it */
	IBUF_ALIAS,     /* a view of buffer alias_of read in order: its storage under this shape */
};

/* A tensor held between steps: a graph input, or a node's stored value
 * (the program's outputs are temporaries the caller returns). */
struct ind_buf {
	int node;                       /* the graph node whose value it is */
	enum ind_buf_kind kind;
	bool by_kernel;                 /* IBUF_TEMP: a kernel writes it (else an extern call makes it) */
	int alias_of;                   /* IBUF_ALIAS: the buffer whose storage it shares, else -1 */
	dtype dt;
	int ndim;
	struct sym_size shape[TENSOR_MAX_DIMS];
};

/* op(arg[0]) @ op(arg[1]) of two stored matrices, op a transpose where t */
struct ind_mm {
	int arg[2];
	bool t[2];
};

enum ind_step_kind {
	ISTEP_KERNEL,   /* a loop IR kernel */
	ISTEP_EXTERN,   /* node runs on the eager kernels */
	ISTEP_ALIAS,    /* node is a stored buffer under another shape (tensor_reshape, no copy) */
};

struct ind_step {
	enum ind_step_kind kind;
	struct lkernel *k;              /* ISTEP_KERNEL, finished (named) */
	int *kbufs;                     /* kernel buffer i is program buffer kbufs[i] */
	int node;                       /* ISTEP_EXTERN: the node the eager op runs */
	/* ISTEP_EXTERN as one BLAS call op(arg[0]) @ op(arg[1]) that reads its
	 * operands in place (a matmul of a transpose, the transpose of a
	 * matmul): no transpose is copied */
	bool mm;
	struct ind_mm mm_plan;
	/* the mm step whose next step, a kernel, is its epilogue: BLAS makes
	 * the product a block of rows at a time and the kernel runs on each
	 * block while it is in cache; scratch: nothing else reads the product,
	 * so one block's buffer holds it all */
	bool epilogue, scratch;
	int group;                      /* ISTEP_KERNEL: the group it computes */
	bool flat;                      /* ISTEP_KERNEL: var 0 runs over every element (else over dim 0) */
	int nnodes;
	int *nodes;                     /* the graph nodes this step computes (inlined ones too) */
};

struct ind_program {
	const struct graph *g;
	int nbufs;
	struct ind_buf *bufs;
	int *node_buf;                  /* [g->nnodes]: the buffer of a stored node, else -1 */
	int nsteps;
	struct ind_step *steps;
	struct strbuf log;              /* the scheduler's decisions, a line each */
};

/* Lowers g into p (zeroed by the caller), timing the phases "schedule"
 * (the groups) and "lower" (their kernels) in cc (may be NULL): 0, or -1
 * after tj_error_set() (out of memory, the planted compile error, or a
 * node the lowering cannot handle at all: all but the planted bug set
 * cc->unsupported). */
int ind_lower(const struct graph *g, struct ind_program *p, struct compile_ctx *cc);
void ind_program_release(struct ind_program *p);
/* The program's listing: each step, a kernel as loop IR (malloc'd). */
char *ind_program_format(const struct ind_program *p);

#endif
