/* backends.h - the stages: the table of every backend by name
 * (backends.c), the `eager` backend (backend_eager.c) and the testing-only
 * backends that inject failures for the minifier (backend_testing.c).
 * The interface they implement is the trace layer's backend.h; whoever
 * picks a backend by name (the api layer: compile(), --backend) asks here.
 */
#ifndef TJ_BACKENDS_H
#define TJ_BACKENDS_H

#include "backend.h"

/* ---- the table (backends.c) ---- */
/* The backend named name, or NULL after tj_error_set("unknown backend 'x'
 * (valid: eager, aot_eager, ...)"). */
const struct backend *backend_find(const char *name);
const struct backend *backend_default(void);   /* inductor, as torch.compile */
/* the valid names, comma-separated */
void backend_names(struct strbuf *out);

/* ---- eager (backend_eager.c): the graph is its own artifact ---- */
extern const struct backend backend_eager;   /* also the fallback of the stages that have one */
void *backend_eager_compile(struct compile_ctx *cc, const struct graph *g);
int backend_eager_run(void *compiled, struct vm *vm, tensor *const *inputs, value *outputs);
void backend_eager_release(void *compiled);

/* ---- testing only (backend_testing.c): failures wherever relu appears ---- */
extern const struct backend backend_testing_relu_compile_error;
extern const struct backend backend_testing_relu_runtime_error;
extern const struct backend backend_testing_relu_accuracy_error;
/* the failures' triggers, shared with the stages' TJIT_INJECT_BUG: does g
 * use relu; every relu(x) of g made add(x, 1) (0, or -1 after
 * tj_error_set(): out of memory) */
bool backend_uses_relu(const struct graph *g);
int backend_relu_to_add(struct graph *g);

/* ---- aot_eager (backend_aot.c): decomposed, differentiated at graph level ---- */
extern const struct backend backend_aot_eager;
/* How a stage built on aot_eager runs its forward and backward graphs
 * (inductor: compiled to kernels); aot_eager itself interprets them. */
struct aot_runner {
	/* g compiled for running, its kernels logged as shown's (a graph
	 * handed back); NULL after tj_error_set(), with cc->unsupported set
	 * when the stage cannot handle g (the frame then falls back) */
	void *(*prepare)(struct compile_ctx *cc, const struct graph *g, const struct graph *shown);
	int (*run)(void *prepared, struct vm *vm, tensor *const *inputs, value *outputs);
	void (*release)(void *prepared);
};
/* aot_eager's compile with the graphs run by runner (NULL: interpreted) */
void *aot_compile_with(struct compile_ctx *cc, const struct graph *g, const struct aot_runner *runner);

/* ---- inductor (backend_inductor.c): aot_eager's graphs as fused kernels ---- */
extern const struct backend backend_inductor;

#endif
