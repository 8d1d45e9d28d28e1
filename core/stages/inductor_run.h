/* inductor_run.h - running a lowered graph: its steps in order, each a
 * JIT-compiled kernel over the buffers or an extern call on the eager
 * kernels. */
#ifndef TJ_INDUCTOR_RUN_H
#define TJ_INDUCTOR_RUN_H

#include "inductor_lower.h"

struct vm;

struct ind_compiled {
	struct ind_program prog;
	loop_kernel_fn *fns;        /* [prog.nsteps]: a kernel step's machine code, NULL for an extern */
};

/* Runs c on the graph's input tensors (borrowed, in the order of its
 * GN_INPUT nodes); outputs[] receives g->noutputs new references. 0, or
 * -1 after tj_error_set() (out of memory, an extern call's error). */
int ind_run(const struct ind_compiled *c, struct vm *vm, tensor *const *inputs, value *outputs);

#endif
