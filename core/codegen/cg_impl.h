/* cg_impl.h - inside libtjcodegen.so: what a file of the object that
 * builds modules needs (the IR emitter), with the LLVM types that
 * codegen.h keeps out of tjit. */
#ifndef TJ_CG_IMPL_H
#define TJ_CG_IMPL_H

#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>

#include "codegen.h"

/* a module and the context it lives in, owned together */
struct cg_module {
	LLVMContextRef ctx;
	LLVMModuleRef mod;
	LLVMTargetMachineRef tm; /* the host's, this module's alone while it
				    lives (codegen.c keeps it for the next) */
};

/* a module of that name in a new context, with the host's triple and data
 * layout; NULL with *err */
struct cg_module *cg_module_new(const char *name, char **err);
/* takes the context and module (already in that context); sets the host's
 * triple and data layout; NULL with *err, and then disposes of both */
struct cg_module *cg_module_wrap(LLVMContextRef ctx, LLVMModuleRef mod, char **err);

/* sets *err (when err is not NULL) to a malloc'd message; returns -1 */
int cg_fail(char **err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* the same with LLVM's message appended after ": " and disposed of */
int cg_fail_llvm(char **err, char *llvm_msg, const char *what);
/* the same for an LLVMErrorRef, consumed */
int cg_fail_error(char **err, LLVMErrorRef e, const char *what);

/* a target machine for the host at that code generation level (PIC, small
 * code model); NULL with *err */
LLVMTargetMachineRef cg_host_machine(LLVMCodeGenOptLevel level, char **err);
const char *cg_host_triple(void);

/* optimize's pipeline at level 2, the kernels' one: the passes of
 * default<O2> that change a kernel, in O2's order, without its
 * interprocedural ones (a kernel is its entry and the body inlined into
 * it), which took a third of its time; over the kernels of the tests and
 * benchmarks, 96% compile to the same object as under default<O2>, the
 * others within a few instructions, or small (doc/codegen.md). In turn:
 * the body cleaned before it is inlined; scalar cleanup, where jump
 * threading and simplifycfg make an inner loop of 2 to 4 iterations
 * straight code, as in O2; LICM and induction variables; loop and SLP
 * vectorization and their cleanup. O2's instcombine after LICM and after
 * the vector combiner are left out: without them, every kernel of the
 * tests and benchmarks compiled to the same code, and optimizing took
 * 10% less. */
#define CG_KERNEL_PIPELINE                                                                          \
	"function(simplifycfg,sroa<modify-cfg>,early-cse,instcombine<no-verify-fixpoint>),"          \
	"always-inline,"                                                                              \
	"function(sroa<modify-cfg>,early-cse<memssa>,jump-threading,correlated-propagation,"         \
	"simplifycfg,instcombine<no-verify-fixpoint>,simplifycfg,loop-mssa(licm<allowspeculation>),"  \
	"loop(indvars,loop-deletion),"                                                                \
	"loop-vectorize,infer-alignment,instcombine<no-verify-fixpoint>,simplifycfg,"                 \
	"slp-vectorizer,vector-combine,"                                                              \
	"loop-mssa(licm<allowspeculation>),simplifycfg),"                                             \
	"globaldce"

/* the JIT (cg_jit.c): codegen_api's load_object and lookup */
int cg_jit_load_object(const void *obj, size_t len, char **err);
void *cg_jit_lookup(const char *symbol, char **err);

#endif
