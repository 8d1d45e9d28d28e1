/* autograd.h - the eager autograd tape (LANGUAGE.md §4).
 *
 * When an op with OPF_DIFF (ops.def) runs on a tensor input that requires
 * grad, ops_call() records one node: the op id, its normalized arguments
 * with the tensors taken out (the attributes: dims, exponents, indices),
 * the tensor inputs' shapes and dtypes, what the row's save column asks
 * for (detached aliases of the inputs and/or outputs), and one edge per
 * tensor input: that input's own grad_fn node, or the leaf tensor itself
 * when it is a leaf that requires grad. The output gets requires_grad,
 * is_leaf = false and grad_fn = the node.
 *
 * Ownership: a tensor owns a reference to its grad_fn; a node owns
 * references to the nodes and leaves of its edges and to its saved
 * aliases. Saved tensors are detached aliases (no grad_fn), so there are
 * no cycles: the tape is freed when the last tensor that reaches it goes.
 *
 * ag_backward() runs the nodes reachable from a root in reverse
 * topological order, with the kernels of tensor.h directly (no tape is
 * recorded while it runs), reduces each input gradient to the input's
 * shape (tensor_sum_to_shape: the adjoint of broadcasting) and dtype,
 * and accumulates into the leaves' .grad, making a new tensor each time
 * (tensors are immutable). Unless retain_graph, it then frees every saved
 * tensor of the nodes it ran, like PyTorch: running a node that saved
 * tensors again is the error "Trying to backward through the graph a
 * second time".
 */
#ifndef TJ_AUTOGRAD_H
#define TJ_AUTOGRAD_H

#include <stdbool.h>
#include <stdint.h>

#include "tensor.h"
#include "value.h"

struct ag_node;

/* One tensor input of a recorded op, in the order they appear in its
 * arguments (the items of a list argument, for cat/stack, one each). */
struct ag_input {
	struct ag_node *node;  /* the input's grad_fn (a reference), or NULL */
	tensor *leaf;          /* the input itself when it is a leaf that requires grad (a reference), or NULL */
	tensor *saved;         /* a detached alias of the input (save IN/INOUT), NULL otherwise or once freed */
	dtype dt;
	int ndim;
	int64_t shape[TENSOR_MAX_DIMS];
	int output_nr;         /* which output of node the input is (its tensor's output_nr) */
};

/* A backward rule: given the gradient of the node's output (the output's
 * shape, a floating dtype), sets gin[i] (NULL on entry) to the gradient of
 * tensor input i, or leaves it NULL for no gradient. gin[i] may have any
 * shape that broadcasts to input i's shape and any dtype: the engine sums
 * and converts. Rules skip inputs that do not need a gradient
 * (ag_needs_grad). Returns 0, or -1 after tj_error_set(). */
typedef int (*ag_backward_fn)(struct ag_node *n, const tensor *gout, tensor **gin);

#define AG_MAX_OUTPUTS 2

struct ag_node {
	uint32_t rc;
	int op;                     /* enum ops_id */
	uint64_t seq;               /* creation order */
	ag_backward_fn backward;
	int nargs;                  /* the op's normalized arguments ... */
	value *args;                /* ... with every tensor (and tensor list) replaced by None */
	int *arg_input;             /* per argument: index of its first tensor input, or -1 */
	int ninputs;
	struct ag_input *inputs;
	int noutputs;               /* saved outputs (save OUT/INOUT): [0] the output, [1] max/min indices */
	tensor *outputs[AG_MAX_OUTPUTS];
	dtype out_dt;               /* the differentiable output */
	int out_ndim;
	int64_t out_shape[TENSOR_MAX_DIMS];
	bool saves;                 /* it saved tensors ... */
	bool released;              /* ... and a backward without retain_graph freed them */
	struct ag_custom *custom;   /* a compiled function's node (ag_record_custom), NULL otherwise */
	/* engine scratch, valid during one ag_backward() */
	tensor *grad_acc;
	int deps;
	uint32_t mark;
};

/* ---- the tape ---- */
void ag_node_incref(struct ag_node *n);
void ag_node_decref(struct ag_node *n);   /* tensor_free() calls this on grad_fn; frees without recursion */
/* PyTorch's name of a node, e.g. "MulBackward0" (for logs and tests) */
const char *ag_node_name(const struct ag_node *n, char *buf, size_t size);

/* Records the tape node of ops_call(op, args) -> out when grad mode is on,
 * op has OPF_DIFF, a tensor input requires grad and the output is floating
 * point; otherwise does nothing. out is a tensor, or a tuple whose first
 * item is the differentiable output (max/min with a dim). Returns 0 or -1. */
int ag_record(int op, const value *args, value out);

/* A compiled function's backward as ONE tape node ("CompiledFunctionBackward",
 * aot_eager: backend_aot.c). backward(ctx, gouts, reached, gin) gets the
 * gradient of each output (zeros of its type where none reached it:
 * reached[k] false, an undefined gradient, PyTorch's None) and sets gin[i]
 * (NULL on entry) to input i's gradient or leaves it NULL, like a rule.
 * ctx (with its saved tensors) is the node's: release(ctx) runs when a
 * backward without retain_graph ran it or the node goes. */
typedef int (*ag_custom_fn)(void *ctx, tensor *const *gouts, const bool *reached, tensor **gin);

/* Records that node when grad mode is on and one of inputs[0, ninputs)
 * requires grad: outputs[0, noutputs) (floating point, no grad_fn: fresh
 * tensors) then require grad with the node as grad_fn. Otherwise, and on
 * error, release(ctx) runs at once. ctx is the node's whenever it returns.
 * 0, or -1 after tj_error_set(). */
int ag_record_custom(tensor *const *inputs, int ninputs, tensor *const *outputs, int noutputs,
		     ag_custom_fn backward, void *ctx, void (*release)(void *ctx));

/* loss.backward(gradient, retain_graph): gradient NULL means ones for a
 * one-element root ("grad can be implicitly created only for scalar
 * outputs" otherwise). Returns 0, or -1 after tj_error_set(). */
int ag_backward(tensor *root, const tensor *gradient, bool retain_graph);

/* Grad mode (torch.no_grad): while off, ops record nothing. Returns the
 * previous mode. */
bool ag_set_grad_enabled(bool on);
bool ag_grad_enabled(void);

/* ---- for backward rules ---- */
/* whether tensor input i needs a gradient */
static inline bool ag_needs_grad(const struct ag_node *n, int i)
{
	return i >= 0 && i < n->ninputs && (n->inputs[i].node || n->inputs[i].leaf);
}
/* argument pos as a tensor (new reference): its saved alias when it was a
 * tensor, a wrapped 0-d tensor when it was a number. NULL with an error
 * when the saved tensors were freed. */
tensor *ag_arg(struct ag_node *n, int pos);
/* saved output k (new reference), NULL with an error when freed */
tensor *ag_output(struct ag_node *n, int k);

/* a detached alias of t: same data and shape, no autograd state (new reference) */
tensor *ag_alias(const tensor *t);

#endif
