/* backend_testing.c - the testing-only backends that inject a failure
 * wherever a graph uses relu (the minifier's test subjects, as in
 * PyTorch): a compile error, a run-time error, a wrong result. */
#include <stdlib.h>
#include <string.h>

#include "backends.h"
#include "ops.h"

bool backend_uses_relu(const struct graph *g)
{
	for (int i = 0; i < g->nnodes; i++)
		if (g->nodes[i].kind == GN_OP && g->nodes[i].op == OPS_relu)
			return true;
	return false;
}

static void *relu_compile_error_compile(struct compile_ctx *cc, const struct graph *g)
{
	(void)cc;
	if (backend_uses_relu(g)) {
		tj_error_set("relu_compile_error_TESTING_ONLY: ReluCompileError: the graph uses relu");
		return NULL;
	}
	return (void *)g;
}

static int relu_runtime_error_run(void *compiled, struct vm *vm, tensor *const *inputs, value *outputs)
{
	const struct graph *g = compiled;
	if (backend_uses_relu(g)) {
		tj_error_set("relu_runtime_error_TESTING_ONLY: ReluRuntimeError: the graph uses relu");
		return BACKEND_RUN_ERROR;
	}
	return backend_eager_run(compiled, vm, inputs, outputs);
}

/* relu(x) becomes add(x, 1), as PyTorch's relu_accuracy_error_TESTING_ONLY does */
int backend_relu_to_add(struct graph *g)
{
	for (int i = 0; i < g->nnodes; i++) {
		struct gnode *n = &g->nodes[i];
		if (n->kind != GN_OP || n->op != OPS_relu || n->nargs != 1)
			continue;
		struct garg *args = graph_alloc(g, sizeof *args * 2);
		if (!args) {
			tj_error_set("out of memory");
			return -1;
		}
		args[0] = n->args[0];
		args[1].kind = GARG_CONST;
		args[1].constant = val_int(1);
		n->args = args;
		n->nargs = 2;
		n->op = OPS_add;
	}
	return 0;
}

static void *relu_accuracy_error_compile(struct compile_ctx *cc, const struct graph *g)
{
	(void)cc;
	struct graph *c = graph_copy(g);
	if (!c) {
		tj_error_set("out of memory");
		return NULL;
	}
	if (backend_relu_to_add(c) < 0) {
		graph_free(c);
		return NULL;
	}
	graph_check(c, "relu_accuracy_error_TESTING_ONLY");
	return c;
}

static void relu_accuracy_error_release(void *compiled)
{
	graph_free(compiled);
}

const struct backend backend_testing_relu_compile_error = {
	"relu_compile_error_TESTING_ONLY", relu_compile_error_compile, backend_eager_run, backend_eager_release,
	NULL,
};
const struct backend backend_testing_relu_runtime_error = {
	"relu_runtime_error_TESTING_ONLY", backend_eager_compile, relu_runtime_error_run, backend_eager_release,
	NULL,
};
const struct backend backend_testing_relu_accuracy_error = {
	"relu_accuracy_error_TESTING_ONLY", relu_accuracy_error_compile, backend_eager_run,
	relu_accuracy_error_release, NULL,
};
