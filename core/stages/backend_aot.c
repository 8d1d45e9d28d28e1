/* backend_aot.c - `aot_eager`, stage 2 of ARCHITECTURE.md, before graph
 * autodiff: the captured graph decomposed into primitives (aot_decompose),
 * handed back to the log as the aot_forward graph (TJIT_LOGS=aot_graphs,
 * the database's graphs), and run node by node on the eager kernels
 * (graph_interpret). Those record the eager autograd tape per primitive,
 * so loss.backward() after a compiled call differentiates the primitives;
 * the graph-level backward (aot_autodiff) replaces that tape next. Until
 * then the composites that act on the tape (detach, requires_grad_) stay
 * in the forward graph where a gradient is involved.
 *
 * TJIT_INJECT_BUG=aot:<kind> makes this stage fail on graphs that use
 * relu, as the relu_*_TESTING_ONLY backends do, so that stage bisection
 * has real failures of stage 2 to find: a compile error, an error when
 * the artifact runs, or relu(x) computed as x + 1.
 */
#include <stdlib.h>

#include "aot_decompose.h"
#include "backends.h"
#include "ops.h"

struct aot_artifact {
	struct graph *forward;  /* decomposed: what runs */
	bool runtime_error;     /* aot:runtime_error on a graph with relu */
};

static void aot_release(void *compiled)
{
	struct aot_artifact *a = compiled;
	if (!a)
		return;
	graph_free(a->forward);
	free(a);
}

static bool arg_requires_grad(const struct graph *g, const struct gnode *n)
{
	return n->nargs > 0 && n->args[0].kind == GARG_NODE && g->nodes[n->args[0].node].requires_grad;
}

/* The composites whose decomposition would change what requires grad, as
 * the tape sees it: detach and requires_grad_ (the identity on data) where
 * a gradient is involved, eye(..., requires_grad=True). They stay in the
 * forward graph, since it runs on the tape (aot_decompose.h). */
static bool acts_on_tape(const struct graph *g, const struct gnode *n)
{
	if (ops_table[n->op].flags & OPF_AUTOGRAD)
		return n->requires_grad || arg_requires_grad(g, n);
	return n->op == OPS_eye && n->requires_grad;
}

/* the pending error, prefixed with the backend's name */
static void *compile_error(void)
{
	char *why = tj_error_take();
	tj_error_set("aot_eager: %s", why ? why : "out of memory");
	free(why);
	return NULL;
}

static void *aot_compile(struct compile_ctx *cc, const struct graph *g)
{
	bool bug = cc->bug->stage == INJECT_AOT && backend_uses_relu(g);
	if (bug && cc->bug->kind == INJECT_COMPILE_ERROR) {
		tj_error_set("aot_eager: AotCompileError: the graph uses relu (TJIT_INJECT_BUG=aot:compile_error)");
		return NULL;
	}
	struct aot_artifact *a = calloc(1, sizeof *a);
	struct graph *shown = NULL;
	if (!a || !(a->forward = graph_copy(g))) {
		tj_error_set("out of memory");
		goto fail;
	}
	a->forward->stage = STAGE_AOT_FORWARD;
	a->runtime_error = bug && cc->bug->kind == INJECT_RUNTIME_ERROR;
	if (bug && cc->bug->kind == INJECT_ACCURACY && backend_relu_to_add(a->forward) < 0)
		goto fail;
	/* names the op and the user line when a composite cannot be decomposed */
	if (aot_decompose_keeping(a->forward, cc, acts_on_tape) < 0)
		goto fail;
	/* the log keeps its own copy: it outlives the compile, not the artifact */
	if (!(shown = graph_copy(a->forward)) || compile_ctx_add_graph(cc, shown) < 0) {
		tj_error_set("out of memory");
		goto fail;
	}
	return a;
fail:
	aot_release(a);
	return compile_error();
}

static int aot_run(void *compiled, struct vm *vm, tensor *const *inputs, value *outputs)
{
	const struct aot_artifact *a = compiled;
	if (a->runtime_error) {
		tj_error_set("aot_eager: AotRuntimeError: the graph uses relu (TJIT_INJECT_BUG=aot:runtime_error)");
		return -1;
	}
	return graph_interpret(vm, a->forward, inputs, outputs);
}

const struct backend backend_aot_eager = {
	"aot_eager", aot_compile, aot_run, aot_release, false,
};
