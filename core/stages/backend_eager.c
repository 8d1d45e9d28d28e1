/* backend_eager.c - the `eager` backend: the captured graph is its own
 * artifact and runs node by node on the eager kernels (graph_interpret). */
#include "backends.h"

void *backend_eager_compile(struct compile_ctx *cc, const struct graph *g)
{
	(void)cc;
	return (void *)g;
}

int backend_eager_run(void *compiled, struct vm *vm, tensor *const *inputs, value *outputs)
{
	/* an eager kernel's error: the VM raises it where eager code would */
	return graph_interpret(vm, compiled, inputs, outputs) < 0 ? BACKEND_RUN_DATA_ERROR : 0;
}

void backend_eager_release(void *compiled)
{
	(void)compiled;
}
