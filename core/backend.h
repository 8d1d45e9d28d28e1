/* backend.h - graph compilers behind one const struct of function pointers.
 *
 * The frame evaluator hands every captured graph with ops to its backend's
 * compile() once and runs the result with run() at every cache hit. The
 * table (backend_eager.c) holds `eager` (graph_interpret), the testing-only
 * backends that inject failures for the minifier, and the slots of the
 * later stages (aot_eager, inductor) as they arrive.
 */
#ifndef TJ_BACKEND_H
#define TJ_BACKEND_H

#include <stdbool.h>

#include "graph.h"
#include "tensor.h"
#include "value.h"

struct vm;

struct backend {
	const char *name;
	/* Compiles g (which stays alive, unchanged, as long as the result) and
	 * returns the compiled artifact, or NULL after tj_error_set() (a
	 * compile error: "relu_compile_error_TESTING_ONLY: ..."). The stage
	 * graphs it makes on the way (aot forward/backward, inductor) are
	 * appended to *extra (*nextra graphs, the array malloc'd), for the log;
	 * the caller owns them. */
	void *(*compile)(const struct graph *g, struct graph ***extra, int *nextra);
	/* Runs a compiled artifact: inputs are the graph's input tensors in the
	 * order of its GN_INPUT nodes (borrowed); outputs[] receives
	 * g->noutputs new references. 0, or -1 after tj_error_set(). */
	int (*run)(void *compiled, struct vm *vm, tensor *const *inputs, value *outputs);
	void (*release)(void *compiled);
};

/* The backend named name, or NULL after tj_error_set("unknown backend 'x'
 * (valid: eager, aot_eager, ...)"). */
const struct backend *backend_find(const char *name);
const struct backend *backend_default(void);   /* eager */
/* the valid names, comma-separated */
void backend_names(struct strbuf *out);

#endif
