/* inductor_impl.h - between inductor's two halves: the emission of
 * values as loop IR (inductor_emit.c: classification, sizes and indexes,
 * the value of a node at an index) and the scheduler that forms groups and
 * builds their kernels (inductor_lower.c). Not for other files. */
#ifndef TJ_INDUCTOR_IMPL_H
#define TJ_INDUCTOR_IMPL_H

#include "arena.h"
#include "inductor_lower.h"

enum node_class {
	NC_INPUT,     /* a buffer from the start */
	NC_POINTWISE, /* one value per index: inlined, or a member */
	NC_VIEW,      /* index arithmetic over its input: inlined */
	NC_CONST,     /* a constant fill: inlined */
	NC_REDUCE,    /* a member: a REDUCE of its group */
	NC_EXTERN,    /* run by the eager op on stored inputs */
	NC_TUPLE,     /* max / min with a dim: its items are the reductions */
	NC_ABSORBED,  /* a matmul whose transpose's extern call computes it (never emitted) */
};


struct memo {
	struct memo *next;
	int nidx;
	lref idx[TENSOR_MAX_DIMS];
	lref value;
};

struct group {
	int ndim;                       /* the iteration shape S */
	struct sym_size shape[TENSOR_MAX_DIMS];
	bool red[TENSOR_MAX_DIMS];      /* R: the reduced dims */
	int nred;
	int nmembers;
	int *members;
};

/* the loops that an emission is in: the index of S and, for each dim,
 * the var that runs over it */
struct scope {
	lref idx[TENSOR_MAX_DIMS];      /* S's index in this section */
	lref outer[TENSOR_MAX_DIMS];    /* the outer vars, in S's kept dims order */
	int nouter;
};

struct lower {
	const struct graph *g;
	struct ind_program *p;
	struct graph_users users;
	unsigned char *cls;             /* enum node_class per node */
	bool *member;                   /* a node that a group computes, or an extern */
	int *group_of;                  /* [nnodes]: the member's group, -1 */
	int *owner;                     /* [nnodes]: the one group that reads an inlined node, -1 several, -2 none */
	bool *is_mm;                    /* [nnodes]: an extern step that is one BLAS call (choose_members) */
	bool *mm_read;                  /* [nnodes]: read by a BLAS call's plan, through transposes too */
	struct ind_mm *mm;              /* [nnodes]: its operands, where is_mm */
	int ngroups;
	struct group *groups;
	/* the kernel being emitted */
	struct lkernel *k;
	struct group *cur;
	int cur_index;
	int *kbuf;                      /* [p->nbufs]: its kernel buffer, -1 */
	int kbuf_cap;
	lref *reduce_ref;               /* [nnodes]: the REDUCE node of a reduction member */
	struct memo **memo;             /* [nnodes] */
	struct scope sc;
	bool incompatible;              /* set by an emission that does not fit the group */
	bool no_keep;                   /* build_group keeps no reduction argument (inductor_lower.c) */
	const struct inject_bug *bug;   /* TJIT_INJECT_BUG, for the kernels with a relu */
	bool planted;                   /* the failure is the planted compile error (raised, not a fallback) */
	struct arena arena;             /* memos */
};

/* ---- inductor_emit.c ---- */
/* the op's unop / binop / redop (ops.def's aux column) */
int ind_op_aux(int op);
/* what the scheduler does with node i (enum node_class) */
int ind_classify(const struct graph *g, int i);
lref ind_size_ref(struct lkernel *k, struct sym_size s);
bool ind_size_is_one(struct sym_size s);
bool ind_same_size(struct sym_size a, struct sym_size b);
bool ind_same_shape(int na, const struct sym_size *a, int nb, const struct sym_size *b);
/* the ints of an arg (an int, a tuple or list of them); -1 after tj_error_set */
int ind_garg_ints(const struct lower *L, const struct gnode *n, const struct garg *a, int64_t *out);
/* red[d]: whether reduction op node n (sum, max with a dim, ...) reduces
 * dim d of its input (a None or absent dim: all); how many, or -1 after
 * tj_error_set (a dim not constant, or out of range) */
int ind_reduced_dims(const struct graph *g, const struct gnode *n, bool *red);
/* a contiguous tensor's flat index of idx, and back */
lref ind_linear_index(struct lkernel *k, int ndim, const struct sym_size *shape, const lref *idx);
void ind_split_index(struct lkernel *k, lref flat, int ndim, const struct sym_size *shape, lref *idx);
/* the kernel buffer of program buffer b (added on first use) */
int ind_kernel_buf(struct lower *L, int b);
/* node i's value at idx in the kernel being built (-1: an error, or with
 * L->incompatible set, a value that does not fit the open group) */
lref ind_emit(struct lower *L, int i, const lref *idx);
/* sets node i's value at idx to value (a load of where it was kept): the
 * next ind_emit of i there returns it; -1 when out of memory */
int ind_emit_known(struct lower *L, int i, const lref *idx, lref value);

#endif
