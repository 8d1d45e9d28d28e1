/* prelude.h - every name a tj program finds at start-up, from every layer.
 *
 * Each layer installs its own names into a VM: the language its builtins
 * (print, len, int, the dtype names: vm_new), the tensor layer its
 * functions and the VAL_TENSOR hooks (ops_install), the runtime compile,
 * disable, explain and the rest (compile_api_install). The prelude is the
 * one place that knows them all, so that no layer reaches up for them.
 */
#ifndef TJ_PRELUDE_H
#define TJ_PRELUDE_H

struct vm;

/* the names of the layers above the language, into a VM from vm_new */
void prelude_install(struct vm *vm);
/* vm_new + prelude_install: the VM a program runs in */
struct vm *prelude_vm_new(void);

#endif
