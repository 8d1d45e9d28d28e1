/* backend_eager.c - the `eager` backend (graphs run node by node on the
 * eager kernels: graph_interpret), the testing-only backends that inject a
 * failure wherever a graph uses relu (the minifier's test subjects, as in
 * PyTorch), and the table of every backend. */
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "ops.h"

/* ---- eager: the graph is its own artifact ---- */

static void *eager_compile(const struct graph *g, struct graph ***extra, int *nextra)
{
	(void)extra;
	(void)nextra;
	return (void *)g;
}

static int eager_run(void *compiled, struct vm *vm, tensor *const *inputs, value *outputs)
{
	return graph_interpret(vm, compiled, inputs, outputs);
}

static void eager_release(void *compiled)
{
	(void)compiled;
}

/* ---- testing only: failures wherever relu appears ---- */

static bool uses_relu(const struct graph *g)
{
	for (int i = 0; i < g->nnodes; i++)
		if (g->nodes[i].kind == GN_OP && g->nodes[i].op == OPS_relu)
			return true;
	return false;
}

static void *relu_compile_error_compile(const struct graph *g, struct graph ***extra, int *nextra)
{
	(void)extra;
	(void)nextra;
	if (uses_relu(g)) {
		tj_error_set("relu_compile_error_TESTING_ONLY: ReluCompileError: the graph uses relu");
		return NULL;
	}
	return (void *)g;
}

static int relu_runtime_error_run(void *compiled, struct vm *vm, tensor *const *inputs, value *outputs)
{
	const struct graph *g = compiled;
	if (uses_relu(g)) {
		tj_error_set("relu_runtime_error_TESTING_ONLY: ReluRuntimeError: the graph uses relu");
		return -1;
	}
	return graph_interpret(vm, g, inputs, outputs);
}

/* relu(x) becomes add(x, 1), as PyTorch's relu_accuracy_error_TESTING_ONLY does */
static void *relu_accuracy_error_compile(const struct graph *g, struct graph ***extra, int *nextra)
{
	(void)extra;
	(void)nextra;
	struct graph *c = graph_copy(g);
	if (!c) {
		tj_error_set("out of memory");
		return NULL;
	}
	for (int i = 0; i < c->nnodes; i++) {
		struct gnode *n = &c->nodes[i];
		if (n->kind != GN_OP || n->op != OPS_relu || n->nargs != 1)
			continue;
		struct garg *args = graph_alloc(c, sizeof *args * 2);
		if (!args) {
			graph_free(c);
			tj_error_set("out of memory");
			return NULL;
		}
		args[0] = n->args[0];
		args[1].kind = GARG_CONST;
		args[1].constant = val_int(1);
		n->args = args;
		n->nargs = 2;
		n->op = OPS_add;
	}
	graph_check(c, "relu_accuracy_error_TESTING_ONLY");
	return c;
}

static void relu_accuracy_error_release(void *compiled)
{
	graph_free(compiled);
}

/* ---- the table ----
 * aot_eager and inductor (ARCHITECTURE.md stages 2 and 3) add their rows
 * here when they arrive. */
static const struct backend backends[] = {
	{"eager", eager_compile, eager_run, eager_release},
	/* The later stages' names, so that programs written for them run
	 * today: until the aot_eager and inductor stages land, their captured
	 * graphs run on the eager kernels (same results; the log records the
	 * backend asked for). Their rows get their own functions then. */
	{"aot_eager", eager_compile, eager_run, eager_release},
	{"inductor", eager_compile, eager_run, eager_release},
	{"relu_compile_error_TESTING_ONLY", relu_compile_error_compile, eager_run, eager_release},
	{"relu_runtime_error_TESTING_ONLY", eager_compile, relu_runtime_error_run, eager_release},
	{"relu_accuracy_error_TESTING_ONLY", relu_accuracy_error_compile, eager_run, relu_accuracy_error_release},
};
#define NBACKENDS (sizeof backends / sizeof backends[0])

const struct backend *backend_default(void)
{
	return &backends[0];
}

void backend_names(struct strbuf *out)
{
	for (size_t i = 0; i < NBACKENDS; i++) {
		if (i)
			sb_puts(out, ", ");
		sb_puts(out, backends[i].name);
	}
}

const struct backend *backend_find(const char *name)
{
	for (size_t i = 0; i < NBACKENDS; i++)
		if (strcmp(backends[i].name, name) == 0)
			return &backends[i];
	struct strbuf sb = STRBUF_INIT;
	backend_names(&sb);
	tj_error_set("unknown backend '%s' (valid: %s)", name, sb.buf);
	sb_release(&sb);
	return NULL;
}
