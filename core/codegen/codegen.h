/* codegen.h - the interface of the code generator's shared object,
 * libtjcodegen.so, the one part of tjit that links libLLVM (LLVM 19,
 * through its C API). tjit opens it with dlopen on the first inductor
 * compile (codegen_load.c), so that a program that never compiles a
 * kernel does not pay libLLVM's start-up; this header holds no LLVM type.
 *
 * Every call that can fail returns its error as a malloc'd string in *err
 * (the caller frees it) and -1 or NULL: the object links no core symbol,
 * so it knows no tj_error. Nothing here aborts the process, not even on
 * IR that does not verify. doc/codegen.md describes the whole. */
#ifndef TJ_CODEGEN_H
#define TJ_CODEGEN_H

#include <stddef.h>

/* the layout of struct codegen_api and the kernels' calling convention
 * (loopir.h's loop_kernel_fn): raise it with any change to them */
#define CODEGEN_ABI 3

/* the name of the one symbol the object exports */
#define CODEGEN_API_SYMBOL "tjit_codegen_api"

/* an LLVM module being built or compiled, in a context of its own (so two
 * threads may each work on a module of their own) */
struct cg_module;
struct lkernel; /* loopir.h */

struct codegen_api {
	int abi;                  /* CODEGEN_ABI of the object */
	const char *llvm_version; /* "19.1.7" */
	/* "triple;cpu;features;build-id": the host, and the GNU build id of
	 * the code generator's own file (another build may emit other code
	 * for the same kernel); part of every kernel cache key */
	const char *target_id;
	int ncores;               /* online processors, for the caller's pool */

	/* a module holding the function of one loop IR kernel (loopir.h),
	 * named k->name, built with the IR builder (cg_emit.c); NULL with
	 * *err naming the kernel and the node it cannot emit */
	struct cg_module *(*emit_kernel)(const struct lkernel *k, char **err);

	/* a module from textual LLVM IR; the triple and data layout are set
	 * to the host's whatever the text says */
	struct cg_module *(*parse_ir)(const char *llvm_ir_text, const char *name, char **err);
	/* its textual IR, malloc'd (NULL when out of memory) */
	char *(*module_ir)(struct cg_module *m);
	/* 0, or -1 with the verifier's report in *err */
	int (*verify)(struct cg_module *m, char **err);
	/* the new pass manager for the host, loop and SLP vectorization on:
	 * at level 2 the kernels' pipeline (O2's passes that change a
	 * kernel: CG_KERNEL_PIPELINE), at 0, 1 and 3 default<O{level}> */
	int (*optimize)(struct cg_module *m, int level, char **err);
	/* the module as a relocatable object for the host (code generation
	 * at O2), in a malloc'd buffer of *len bytes */
	int (*emit_object)(struct cg_module *m, void **obj, size_t *len, char **err);
	void (*module_free)(struct cg_module *m);

	/* adds an object to the process's one JIT (made on the first call,
	 * for the host): 0 when added, 1 when a symbol it defines is already
	 * loaded (nothing added: kernels are named by a hash of their
	 * content, so the loaded one is the same code), -1 with *err on a
	 * malformed object or a JIT that cannot start */
	int (*load_object)(const void *obj, size_t len, char **err);
	/* the address of a loaded symbol, linking its object on the first
	 * lookup (libc and libm resolve from the process); NULL with *err
	 * when it is not loaded or does not link */
	void *(*lookup)(const char *symbol, char **err);
};

/* the table, filled on the first call (which initializes LLVM's native
 * target); never NULL */
const struct codegen_api *tjit_codegen_api(void);

#endif
