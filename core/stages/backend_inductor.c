/* backend_inductor.c - `inductor`, stage 3 of ARCHITECTURE.md: aot_eager's
 * forward and backward graphs (backend_aot.c: decomposed, differentiated,
 * one tape node per call) each compiled to fused kernels
 * (inductor_compile.c) and run by inductor_run.c.
 *
 * A graph it cannot compile (a node the lowering has no form for, a
 * kernel LLVM rejects, no code generator to load) is unsupported: the
 * frame evaluator warns and the frame runs on aot_eager, as PyTorch falls
 * back to aten. TJIT_INJECT_BUG=inductor:<kind> is the lowering's
 * (inductor_lower.c), in the kernels that compute a relu.
 */
#include <stdlib.h>
#include <string.h>

#include "backends.h"
#include "error.h"
#include "inductor_compile.h"

static void *prepare(struct compile_ctx *cc, const struct graph *g, const struct graph *shown)
{
	struct ind_compiled *c = ind_compile_graph(cc, g, shown);
	if (!c) {
		const char *e = tj_error_peek();
		if (e && strncmp(e, "inductor: ", 10) != 0 && strcmp(e, "out of memory") != 0) {
			char *why = tj_error_take();
			tj_error_set("inductor: %s", why);
			free(why);
			e = tj_error_peek();
		}
		cc->unsupported = !e || strcmp(e, "out of memory") != 0;
		if (cc->bug->stage == INJECT_INDUCTOR && cc->bug->kind == INJECT_COMPILE_ERROR && e &&
		    strstr(e, "InductorCompileError"))
			cc->unsupported = false;
	}
	return c;
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
	"inductor", inductor_compile, inductor_run, inductor_release, false, &backend_aot_eager,
};
