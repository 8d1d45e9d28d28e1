/* backend_inductor.c - `inductor`, stage 3 of ARCHITECTURE.md: aot_eager's
 * forward and backward graphs (backend_aot.c: decomposed, differentiated,
 * one tape node per call) each compiled to fused kernels
 * (inductor_compile.c) and run by inductor_run.c.
 *
 * A graph it cannot compile (a node the lowering has no form for, a
 * kernel LLVM rejects, no code generator to load, out of memory in the
 * middle of the compile) is unsupported: the
 * frame evaluator warns and the frame runs on aot_eager, as PyTorch falls
 * back to aten. TJIT_INJECT_BUG=inductor:<kind> is the lowering's
 * (inductor_lower.c), in the kernels that compute a relu.
 */

#include "backends.h"
#include "inductor_compile.h"

/* ind_compile_graph sets cc->unsupported for what falls back (a graph it
 * cannot lower, a kernel LLVM rejects, no code generator, out of memory) */
static void *prepare(struct compile_ctx *cc, const struct graph *g, const struct graph *shown)
{
	return ind_compile_graph(cc, g, shown);
}

static int run(void *prepared, struct vm *vm, tensor *const *inputs, value *outputs)
{
	return ind_run(prepared, vm, inputs, outputs);
}

static void release(void *prepared)
{
	ind_compiled_free(prepared);
}

static const struct aot_runner runner = {prepare, run, release};

static void *inductor_compile(struct compile_ctx *cc, const struct graph *g)
{
	return aot_compile_with(cc, g, &runner);
}

static int inductor_run(void *compiled, struct vm *vm, tensor *const *inputs, value *outputs)
{
	return backend_aot_eager.run(compiled, vm, inputs, outputs);
}

static void inductor_release(void *compiled)
{
	backend_aot_eager.release(compiled);
}

const struct backend backend_inductor = {
	"inductor", inductor_compile, inductor_run, inductor_release, &backend_aot_eager,
};
