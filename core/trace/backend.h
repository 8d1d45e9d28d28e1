/* backend.h - graph compilers behind one const struct of function pointers.
 *
 * The frame evaluator hands every captured graph with ops to its backend's
 * compile() once, with the compile's context (compile_ctx.h: the config,
 * the bug to inject, the logger, and the phases, graphs and kernels handed
 * back), and runs the result with run() at every cache hit. The table
 * (backends.c) holds `eager` (backend_eager.c: graph_interpret), the
 * testing-only backends that inject failures for the minifier
 * (backend_testing.c), aot_eager (backend_aot.c: decomposed and
 * differentiated, run on the eager kernels), and inductor's row, which runs on the eager functions
 * until its stage lands.
 *
 * A stage adds its file and its row in backends.c; inside compile() it
 * times its own phases (compile_ctx_phase_begin/end: they nest in the
 * evaluator's "backend" phase), hands back its graphs and kernels, prints
 * its TJIT_LOGS dumps through the context, and reads cc->bug for the
 * failure it must inject. What run() needs of the context (an injected
 * runtime bug) the artifact keeps.
 */
#ifndef TJ_BACKEND_H
#define TJ_BACKEND_H

#include <stdbool.h>

#include "compile_ctx.h"
#include "graph.h"
#include "tensor.h"
#include "value.h"

struct vm;

enum { BACKEND_RUN_ERROR = -1, BACKEND_RUN_DATA_ERROR = -2 };

struct backend {
	const char *name;
	/* Compiles g (which stays alive, unchanged, as long as the result) and
	 * returns the compiled artifact, or NULL after tj_error_set(): a
	 * compile error ("relu_compile_error_TESTING_ONLY: ..."), raised in
	 * the program, or, with cc->unsupported set, a graph this backend
	 * cannot compile (an op without a decomposition or a gradient rule,
	 * out of memory in the middle of the compile), which runs on the
	 * fallback below. */
	void *(*compile)(struct compile_ctx *cc, const struct graph *g);
	/* Runs a compiled artifact: inputs are the graph's input tensors in the
	 * order of its GN_INPUT nodes (borrowed); outputs[] receives
	 * g->noutputs new references. 0; BACKEND_RUN_ERROR after
	 * tj_error_set(), the backend's own error (an injected bug), raised
	 * at the frame as is; or BACKEND_RUN_DATA_ERROR: an op failed on the
	 * data (an integer division by zero, an index out of range, a
	 * negative integer power), which the VM raises where eager code
	 * would: nothing of the run is kept, and the frame reruns in the VM. */
	int (*run)(void *compiled, struct vm *vm, tensor *const *inputs, value *outputs);
	void (*release)(void *compiled);
	/* Where a graph goes that compile() reports unsupported: the frame
	 * evaluator warns at the frame's line, logs the compile with outcome
	 * "error" and its message, and installs this backend's artifact of
	 * the graph as the cache entry (eager: it runs op by op, and is not
	 * compiled again at the next call). NULL: the error is raised. */
	const struct backend *fallback;
};

/* The table of backends and the backends themselves are the stages
 * layer's (core/stages/backends.h). */

#endif
