/* loopir.h - inductor's loop IR: one kernel is a nest of loops over a DAG
 * of scalar expressions.
 *
 * A kernel reads and writes flat buffers (contiguous tensors, the graph's
 * inputs, its outputs and the temporaries between kernels). It runs its
 * outer loops (vars 0 .. nouter-1, var 0 outermost; the caller may split
 * var 0's range across threads), and inside them its sections in order.
 * A section may add inner loops of its own (a reduction's, or the row loop
 * of a softmax's last pass); each of its roots is evaluated once per
 * iteration of the section's innermost loop:
 *
 *   for v0 in [begin, end)            // outer vars: a[0 .. nouter)
 *     for v1 in [0, size(v1))
 *       section 0: for v2 in [0, size(v2))   // its inner vars
 *                    roots: REDUCE max(load(x, v1*n + v2))
 *       section 1: for v3 ...  roots: REDUCE sum(exp(load(...) - max))
 *       section 2: for v4 ...  roots: STORE(out, index, value)
 *
 * Values are nodes of one hash-consed DAG per kernel (the same expression
 * is one node: common subexpressions are shared, and two kernels that
 * compute the same thing print and hash the same). Index arithmetic is
 * int64 nodes of the same DAG (add, mul, floordiv, mod of vars, size
 * symbols and constants), so views (transpose, expand, slicing, reshape)
 * are index expressions, never copies.
 *
 * The value of a REDUCE node is its reduction over the inner loops of the
 * section it is a root of; a later section (or a root of a section with no
 * inner loops) may read it. Every other node is a pure function of the
 * vars it reads (LICM is the emitter's business).
 *
 * The loop IR is plain data: the code generator (core/codegen, a shared
 * object that links LLVM) reads it through this header only.
 */
#ifndef TJ_LOOPIR_H
#define TJ_LOOPIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dtype.h"
#include "tensor.h" /* enum unop, binop, redop: the eager kernels' op sets */

#define LOOP_MAX_VARS 24

/* The unary ops that the code generator expands into inline polynomials
 * or rationals of 10 to 30 instructions (cg_math.c, doc/codegen-math.md):
 * what the scheduler counts to bound a kernel's code (inductor_lower.c). */
static inline bool loop_unop_is_transcendental(enum unop op)
{
	switch (op) {
	case UNOP_exp: case UNOP_log: case UNOP_tanh: case UNOP_sigmoid: case UNOP_silu:
	case UNOP_gelu: case UNOP_sin: case UNOP_cos:
		return true;
	default:
		return false;
	}
}

enum lop {
	LOP_CONST,  /* c.i (bool, int64) or c.f (float32, float64) */
	LOP_VAR,    /* loop variable number `var` (int64) */
	LOP_SYM,    /* size symbol s`var`, a kernel argument (int64) */
	LOP_LOAD,   /* bufs[buf][a[0]]: a[0] an int64 element index; dt = the buffer's */
	LOP_UNARY,  /* sub: enum unop, as tensor_unary computes it in dt (a[0] is dt) */
	LOP_BINARY, /* sub: enum binop on a[0], a[1] of one dtype; dt is that dtype,
		     * or bool for comparisons and logical ops. On int64 index
		     * nodes floordiv and mod are Python's (floor, sign of divisor) */
	LOP_WHERE,  /* a[0] (bool) ? a[1] : a[2] */
	LOP_CAST,   /* a[0] converted to dt (float->int truncates, ->bool is != 0) */
	LOP_REDUCE, /* sub: enum redop (sum, prod, max, min, argmax, argmin) of a[0]
		     * over its section's inner loops, accumulated in dt (argmax,
		     * argmin: int64, the first index in the section's iteration
		     * order, linearized over its inner vars); max/min propagate NaN */
	LOP_STORE,  /* bufs[buf][a[0]] = a[1] (a[1]'s dt is the buffer's); no value */
	LOP_COUNT
};

typedef int32_t lref;       /* a node's index in its kernel's DAG; -1: none */

struct lnode {
	uint8_t op;             /* enum lop */
	uint8_t sub;            /* enum unop / binop / redop */
	uint8_t dt;             /* dtype of the value (DT_INT64 for index math) */
	int32_t var;            /* LOP_VAR: the var; LOP_SYM: the symbol; LOP_LOAD/STORE: the buffer */
	lref a[3];              /* operands, -1 when unused */
	union {
		int64_t i;
		double f;
	} c;                    /* LOP_CONST */
};

/* A buffer the kernel reads or writes: element type and flat length. */
struct lbuf {
	dtype dt;
	bool written;           /* an output of the kernel (else read only) */
	lref numel;             /* its element count, an int64 expression (for checks) */
	char *name;             /* the graph value it holds, for listings: "add_3" */
};

struct lvar {
	lref size;              /* trip count: an int64 expression of constants and symbols */
	int section;            /* -1: an outer var; else the section whose inner loop it is */
};

struct lsection {
	int ninner;
	int inner[LOOP_MAX_VARS];  /* its vars, outermost first */
	int nroots;
	lref *roots;            /* STORE and REDUCE nodes, in evaluation order */
};

struct lkernel {
	char name[24];          /* "k_" + 16 hex digits of loop_kernel_hash (set by loop_kernel_finish) */
	int nbufs;
	struct lbuf *bufs;
	int nsyms;              /* symbols s0 .. s(nsyms-1) are passed in */
	int nvars;
	struct lvar vars[LOOP_MAX_VARS];
	int nouter;             /* vars 0 .. nouter-1 are the outer loops, in nest order */
	int nsections;
	struct lsection *sections;
	int nnodes, cap;
	struct lnode *nodes;
	/* builder state (loopir.c): the hash-consing table, the arena */
	struct loop_mem *mem;
};

/* The machine code's signature: bufs[] the buffers' data in kernel order,
 * syms[] the symbols' values, and the range [begin, end) of var 0 (the
 * whole trip count, or a thread's share of it). A kernel with no outer var
 * runs once for begin = 0, end = 1. bufs[nbufs] points to an int32 that
 * the kernel sets to 1 when a check of its data fails (an int64 // or %
 * by zero, ** to a negative power, of operands read from buffers:
 * doc/codegen.md); a kernel without such operations does not read it. */
typedef void (*loop_kernel_fn)(void *const *bufs, const int64_t *syms, int64_t begin, int64_t end);

/* ---- building a kernel (loopir.c; the code generator does not call these) ----
 * Every constructor takes and returns lrefs; an operand of -1 (a failed
 * constructor upstream) gives -1, and so does running out of memory
 * (tj_error_set), so a lowering checks once at the end. Constructors fold
 * constants and simplify index arithmetic (x + 0, x * 1, and the
 * (x // b) * (b * c) + (x % b) * c = x * c that a reshape of a contiguous
 * value leaves), put back sigmoid and silu where the decompositions
 * spelled them out (1 / (1 + exp(-x)), x / (1 + exp(-x))), turn a float
 * division by a constant into a multiplication by its reciprocal, and
 * return the existing node for an expression built before. */
struct lkernel *loop_kernel_new(void);
void loop_kernel_free(struct lkernel *k);
/* a new buffer; its number, or -1 */
int loop_add_buf(struct lkernel *k, dtype dt, bool written, lref numel, const char *name);
/* a new var with trip count size: an outer one (section -1, only before
 * the first section is made) or an inner loop of section; its number, or -1 */
int loop_add_var(struct lkernel *k, lref size, int section);
/* a new empty section; its number, or -1 */
int loop_add_section(struct lkernel *k);
/* evaluates node (a STORE or a REDUCE) in section, after its earlier roots; 0 or -1 */
int loop_add_root(struct lkernel *k, int section, lref node);

lref loop_const_int(struct lkernel *k, dtype dt, int64_t v);   /* bool or int64 */
lref loop_const_float(struct lkernel *k, dtype dt, double v);  /* float32 or float64 */
lref loop_var_ref(struct lkernel *k, int var);
lref loop_sym(struct lkernel *k, int sym);
lref loop_load(struct lkernel *k, int buf, lref index);
lref loop_store(struct lkernel *k, int buf, lref index, lref value);
lref loop_unary(struct lkernel *k, unop op, lref a);
lref loop_binary(struct lkernel *k, binop op, lref a, lref b);  /* a, b of one dtype */
lref loop_where(struct lkernel *k, lref cond, lref a, lref b);
lref loop_cast(struct lkernel *k, dtype dt, lref a);            /* a itself when already dt */
lref loop_reduce(struct lkernel *k, redop op, dtype acc, lref a);
/* index arithmetic on int64 nodes, simplified */
lref loop_iadd(struct lkernel *k, lref a, lref b);
lref loop_imul(struct lkernel *k, lref a, lref b);
lref loop_idiv(struct lkernel *k, lref a, lref b);   /* floor division */
lref loop_imod(struct lkernel *k, lref a, lref b);

static inline const struct lnode *loop_node(const struct lkernel *k, lref r) { return &k->nodes[r]; }
/* the constant value of an int64 node, when it is one */
bool loop_is_const(const struct lkernel *k, lref r, int64_t *v);
/* does r (transitively) read var v */
bool loop_uses_var(const struct lkernel *k, lref r, int var);
/* the value of an int64 expression of constants and symbols (a trip
 * count, a buffer length) for the symbols' values syms[] */
int64_t loop_eval_size(const struct lkernel *k, lref r, const int64_t *syms);

/* Drops the nodes nothing reads (renumbering the others, in order) and
 * names the kernel "k_<hash>" from loop_kernel_hash; call when built. */
void loop_kernel_finish(struct lkernel *k);
/* 64 bits over everything that decides the machine code: the nodes, vars,
 * sections and buffer dtypes (not the buffers' names), so that the same
 * kernel built by another graph or run hashes the same (the cache key). */
uint64_t loop_kernel_hash(const struct lkernel *k);
/* The listing of TJIT_LOGS=output_code and the database (malloc'd; NULL
 * when out of memory). */
char *loop_kernel_format(const struct lkernel *k);

#endif
