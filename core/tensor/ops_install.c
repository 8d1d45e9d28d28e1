/* ops_install.c - the tensor layer plugged into the language: the table
 * behind VAL_TENSOR that the VM and the language's builtins call
 * (vm_tensor_hooks, vm.h), and the tensor functions of ops_functions[]
 * defined as builtins of a VM. */
#include "ops.h"
#include "tensor_io.h"
#include "vm.h"

/* iter(t): one step per index of the first dimension (vm_iter_next then
 * reads t[i] through the subscript slot) */
static value tensor_iter(value self)
{
	tensor *t = val_as_tensor(self);
	if (t->ndim == 0)
		return vm_raise("iteration over a 0-d tensor");
	value it = iter_new(ITER_TENSOR, self);
	val_iter(it)->n = t->shape[0];
	return it;
}

static int64_t tensor_len(value self)
{
	tensor *t = val_as_tensor(self);
	if (t->ndim == 0) {
		tj_error_set("len() of a 0-d tensor");
		return -1;
	}
	return t->shape[0];
}

/* int(t) and float(t): PyTorch's message differs from t.item()'s. */
static value tensor_scalar_of(value self)
{
	if (val_as_tensor(self)->numel != 1)
		return vm_raise("only one element tensors can be converted to Python scalars");
	return ops_item(self);
}

static value tensor_sum(struct vm *vm, const value *args, int nargs, value kwnames)
{
	return ops_invoke(OPS_sum, args, nargs, kwnames);
}

static const struct vm_tensor_hooks hooks = {
	.free = tensor_free,
	.repr = tensor_format,
	.binary = ops_binary,
	.compare = ops_compare,
	.neg = ops_unary_neg,
	.truth = ops_truth,
	.getattr = ops_getattr,
	.subscript = ops_subscript,
	.iter = tensor_iter,
	.len = tensor_len,
	.scalar = tensor_scalar_of,
	.abs = ops_builtin_abs,
	.round = ops_builtin_round,
	.sum = tensor_sum,
	.max = ops_builtin_max,
	.min = ops_builtin_min,
};

void ops_install_hooks(void)
{
	vm_set_tensor_hooks(&hooks);
}

void ops_install(struct vm *vm)
{
	for (const struct builtin_def *d = ops_functions; d->name; d++) {
		value name = str_from_cstr(d->name);
		bool taken = !val_is_err(vm_lookup_name(vm, val_str(name)));
		val_decref(name);
		if (taken)
			continue;
		value b = builtin_new(d->name, d->fn);
		vm_set_builtin(vm, d->name, b);
		val_decref(b);
	}
	tensor_io_install(vm);
}
