/* prelude.c - a VM with the names of every layer (prelude.h). */
#include "prelude.h"

#include "compile_api.h"
#include "ops.h"
#include "vm.h"

void prelude_install(struct vm *vm)
{
	ops_install(vm);
	compile_api_install(vm);
}

struct vm *prelude_vm_new(void)
{
	struct vm *vm = vm_new();
	prelude_install(vm);
	return vm;
}
