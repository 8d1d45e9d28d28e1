/* aot_autodiff.h - stage 2's graph autodiff: the joint forward/backward
 * graph of a decomposed graph (reverse mode, one rule per primitive, the
 * rules agreeing with autograd.c's), and its partition into a forward
 * graph that returns its outputs and the tensors backward needs, and a
 * backward graph (doc/aot.md).
 */
#ifndef TJ_AOT_AUTODIFF_H
#define TJ_AOT_AUTODIFF_H

#include <stdbool.h>
#include <stdint.h>

struct graph;

/* The joint graph: the forward's inputs (the primals), then one tangent
 * input per output that gets a gradient, then the forward's nodes, then
 * the backward's. Its outputs are the forward's. */
struct aot_joint {
	struct graph *g;
	int nprimals;       /* inputs [0, nprimals): the forward's, in order */
	int ntangents;      /* inputs [nprimals, nprimals + ntangents) */
	int *tangent_of;    /* [ntangents]: the index in g->outputs each is the gradient of */
	int nforward;       /* nodes from nforward on are the backward's */
	int *grad;          /* [nprimals]: the node of each primal's gradient, -1: none */
};

/* Builds the joint of fwd (primitive ops only: aot_decompose first), in
 * which the primals with requires_grad[i] want a gradient. An output gets
 * a tangent when it is a floating point tensor that depends on one of
 * them. Each new node has its dtype and sizes from its op's rule, a fresh
 * name and the user stack of the forward node it differentiates; sizes
 * stay symbolic. 0, or -1 after tj_error_set() ("no gradient rule for
 * an allow_in_graph call at f.tj:3"), with *j empty. detach must have
 * been decomposed by aot_decompose (a copy that stops the gradient), not
 * dropped. */
int aot_joint(const struct graph *fwd, const bool *requires_grad, struct aot_joint *j);
/* aot_joint built in fwd itself, not a copy: j->g is fwd, which j owns
 * from here on, failed or not (a compile that is done with the forward
 * graph spares a copy of it) */
int aot_joint_in(struct graph *fwd, const bool *requires_grad, struct aot_joint *j);
void aot_joint_release(struct aot_joint *j);

/* The forward and backward graphs of a joint. */
struct aot_partition {
	struct graph *fwd;      /* STAGE_AOT_FORWARD: the primals in; the outputs, then the saved */
	struct graph *bwd;      /* STAGE_AOT_BACKWARD: the saved, then the tangents in; the gradients */
	int noutputs;           /* fwd->outputs[0, noutputs) are the forward's own */
	int nsaved;             /* then nsaved saved tensors, in the order bwd takes them */
	int nprimals;
	int *grad_output;       /* [nprimals]: primal i's gradient is bwd->outputs[k], -1: none (zero) */
	int nrecomputed;        /* forward nodes that bwd computes again rather than takes */
	int64_t saved_bytes;    /* the saved tensors' bytes at the example sizes */
};

/* What the partition saves for backward and what backward computes again
 * (doc/aot.md, "Saved or recomputed"). */
enum aot_recompute {
	/* each component of cheap (pointwise, view) nodes is recomputed from
	 * what it reads when that is no more bytes than what backward needs
	 * of it: for a backend that fuses them, where recomputing is free */
	AOT_RECOMPUTE_CHEAP,
	/* what backward reads is saved, but what a rule made for backward
	 * alone runs there (on the forward's own values, when that holds no
	 * more bytes); cheap nodes are recomputed only where that costs no
	 * kernel, and then, cheapest time per byte first, until the saved
	 * bytes fit the budget: for kernels run one by one, where each
	 * recomputed node is one more kernel */
	AOT_RECOMPUTE_BUDGET,
};

struct aot_policy {
	enum aot_recompute recompute;
	int64_t budget;     /* AOT_RECOMPUTE_BUDGET: the bytes saved beyond the primals, at most */
};

/* Splits j: what depends on a tangent goes to backward, the rest to
 * forward; forward saves what backward reads, or backward computes it
 * again, as policy says. Both graphs pass graph_verify. 0, or -1 after
 * tj_error_set(), with *p empty. */
int aot_partition(const struct aot_joint *j, const struct aot_policy *policy, struct aot_partition *p);
void aot_partition_release(struct aot_partition *p);

/* The bytes eager autograd would keep for backward running g (a captured
 * graph) with requires_grad[i] on its inputs: the tensors each recorded
 * op's rule reads (ops.def's save column), each once, not counting g's
 * inputs (the caller holds them anyway), at the example sizes. The budget
 * for AOT_RECOMPUTE_BUDGET that keeps aot_eager within eager's memory;
 * -1 after tj_error_set() when out of memory. */
int64_t aot_eager_saved_bytes(const struct graph *g, const bool *requires_grad);

/* whether the joint has a rule for op (a differentiable primitive or an
 * op with no gradient) */
bool aot_grad_has_rule(int op);

#endif
