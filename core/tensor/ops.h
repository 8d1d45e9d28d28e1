/* ops.h - tensor operations as tj sees them: functions, methods, operators
 * and attributes on values, with the autograd tape recorded here.
 *
 * This layer turns values into tensor.h calls (Python scalars become
 * wrapped 0-d tensors, lists become tensors where PyTorch accepts them),
 * records a tape node when an input requires grad, and is the single place
 * the tracer (next issue) will intercept: every tensor operation a program
 * can perform goes through one of the entry points below, and every op has
 * one row in ops.def.
 */
#ifndef TJ_OPS_H
#define TJ_OPS_H

#include "builtin.h"
#include "code.h"
#include "tensor.h"

/* Module-level names that tj programs see: tensor zeros ones full arange eye
 * randn rand manual_seed, every pointwise/reduction/linear/shape function,
 * where clamp softmax log_softmax matmul linear cat stack maximum minimum,
 * ext_sort ext_cumsum ext_clip, and the dtypes float32 float64 int64 bool
 * are NOT here (the VM defines dtype names). NULL-terminated. */
extern const struct builtin_def ops_functions[];

/* ---- ops_install.c: the tensor layer plugged into the language ----
 * ops_install_hooks installs the table behind VAL_TENSOR (vm_tensor_hooks,
 * vm.h) for the whole process; tensor.c calls it when it makes its first
 * tensor, so that no tensor value ever meets an empty table. ops_install
 * defines ops_functions[] as builtins of vm (except the names the language
 * already defines). */
void ops_install_hooks(void);
void ops_install(struct vm *vm);

/* a + b etc. when at least one side is a tensor (the other may be an int,
 * float, bool or tensor; anything else: "unsupported operand type(s) for +:
 * 'Tensor' and 'str'"). */
value ops_binary(enum vm_binop op, value a, value b);
/* comparisons lt le gt ge eq ne with a tensor side: a bool tensor */
value ops_compare(enum vm_cmpop op, value a, value b);
value ops_unary_neg(value a);
value ops_getattr(value self, struct str *name); /* attributes (shape dtype ndim T grad requires_grad) and bound methods */
value ops_subscript(value self, value index);    /* x[i], x[1:3], x[:, 0], x[..., None] */
int ops_truth(value self, bool *out);            /* bool(t): one element, else "Boolean value of Tensor with more than one value is ambiguous" */
value ops_item(value self);                      /* int or float (bool for bool tensors) */
/* abs(t), round(t), max(t), min(t), int(t), float(t), len(t) */
value ops_builtin_abs(value t);
value ops_builtin_round(value t, value decimals); /* decimals: an int */

/* ---- the op table ----
 * Every tensor op a program can reach has one row in ops.def; the ids, this
 * table, ops_functions[], the method and attribute lookup of ops_getattr,
 * the implementations and the autograd rules are all expanded from it. An
 * op runs through one uniform entry point, ops_call(op, args), on
 * normalized arguments: exactly ops_nparams(op) values, one per parameter
 * of its Python-style signature (defaults filled in, a *vararg collected
 * into one tuple, Python numbers left as numbers). A graph node is
 * (op id, normalized args) and replays through ops_call. */
enum ops_kind {            /* how a program reaches the op (a bit set) */
	OPK_FN = 1,        /* a module function: zeros(...), sum(x) */
	OPK_METH = 2,      /* a Tensor method: x.sum() (self is parameter 0) */
	OPK_OPER = 4,      /* an operator: x + y, -x, x[i], x @ y */
	OPK_ATTR = 8,      /* an attribute: x.shape, x.T */
};
enum ops_flag {
	OPF_POINTWISE = 1 << 0,
	OPF_REDUCE = 1 << 1,    /* reductions, softmax, log_softmax */
	OPF_CREATE = 1 << 2,    /* makes a tensor from Python values */
	OPF_SHAPE = 1 << 3,     /* moves data around: reshape, cat, indexing */
	OPF_RANDOM = 1 << 4,    /* draws from (or seeds) the generator */
	OPF_OPAQUE = 1 << 5,    /* an extension function: C code the tracer cannot see into */
	OPF_DIFF = 1 << 6,      /* records a tape node when an input requires grad */
	OPF_LINALG = 1 << 7,
	OPF_COMPARE = 1 << 8,   /* gives a bool tensor */
	OPF_QUERY = 1 << 9,     /* reads metadata only (shape, dtype, numel, grad) */
	OPF_DATA = 1 << 10,     /* turns tensor data into Python values: item, tolist */
	OPF_EFFECT = 1 << 11,   /* has a side effect: backward, manual_seed */
	OPF_PYBUILTIN = 1 << 12,/* the name is a Python builtin (abs max min round): not in
				 * ops_functions; the VM's builtin delegates to ops_builtin_* */
	OPF_AUTOGRAD = 1 << 13, /* works on the autograd state: detach, requires_grad_, backward */
};

typedef enum ops_id {
#define OPDEF(name, kind, flags, params, impl, aux, save, backward, stage, meta) OPS_##name,
#include "ops.def"
#undef OPDEF
	OPS_COUNT
} ops_id;

/* ops.def's stage column: what the stages after capture do with the op */
enum ops_stage {
	OPST_PRIM,          /* a primitive: inductor lowers it */
	OPST_COMP,          /* a composite: aot_eager decomposes it into primitives */
	OPST_NOGRAPH,       /* never a graph node: read at trace time, or a graph break */
};

struct ops_info {
	const char *name;   /* the tj name, also the graph node's op name */
	unsigned kind;      /* enum ops_kind bits */
	unsigned flags;     /* enum ops_flag bits */
	const char *params; /* Python-style parameter list, e.g. "input, dim=None, keepdim=False" */
	enum ops_stage stage;
};
extern const struct ops_info ops_table[OPS_COUNT];

/* The op named name reachable in one of the kinds (e.g. OPK_FN | OPK_METH), or -1. */
int ops_find(const char *name, unsigned kinds);
/* The op behind a builtin function or a bound method's function, or -1:
 * how the tracer recognizes a call to a tensor op. */
int ops_of_builtin(builtin_fn fn);
int ops_of_binop(enum vm_binop op);   /* OPS_add ... OPS_matmul */
int ops_of_cmpop(enum vm_cmpop op);   /* OPS_lt ... OPS_ne; -1 for is/in */

/* An op's Python-style signature, parsed once from its params column:
 * what ops_normalize binds a call against (the tracer binds variables
 * with the same rules). */
#define OPS_MAX_PARAMS 8
struct ops_sig {
	int n;                                  /* parameters */
	int vararg;                             /* index of the *param, or -1 */
	int nrequired;                          /* leading parameters without a default */
	const char *names[OPS_MAX_PARAMS];
	const char *plain[OPS_MAX_PARAMS + 1];  /* names without the vararg, NULL-terminated (args_parse) */
	value defaults[OPS_MAX_PARAMS];         /* None for the required ones and the vararg */
	char buf[128];                          /* the names' storage */
};
const struct ops_sig *ops_signature(int op);
int ops_nparams(int op);
const char *ops_param_name(int op, int i);
/* The value of a default in ops.def's params column: None, True, False,
 * a float (with '.', 'e' or 'E') or an int. */
value ops_parse_default(const char *s);
/* Matches a Python-style call against the op's signature and fills
 * out[ops_nparams(op)] with new references (release with ops_args_release);
 * errors as args_parse. */
int ops_normalize(int op, const value *args, int nargs, value kwnames, value *out);
void ops_args_release(int op, value *args);
/* Runs op on normalized arguments (borrowed) and records the tape node when
 * an input requires grad: the one entry point every path goes through. */
value ops_call(int op, const value *args);
/* ops_normalize + ops_call: what a call from a tj program does. */
value ops_invoke(int op, const value *args, int nargs, value kwnames);

/* max(...) / min(...) when an argument is a tensor: torch.max semantics
 * (max(x), max(x, dim, keepdim) -> (values, indices), max(a, b) tensor b ->
 * maximum). The VM's Python builtins max/min delegate here. */
value ops_builtin_max(struct vm *vm, const value *args, int nargs, value kwnames);
value ops_builtin_min(struct vm *vm, const value *args, int nargs, value kwnames);

/* Helpers shared with the autograd rules and the tracer. */
/* dim (an int, a tuple/list of ints, None or () = every dimension) checked
 * against ndim and normalized to 0..ndim-1; *n = 0 means all dimensions. */
int ops_dims(const char *fname, value dim, int ndim, int *dims, int *n);
/* one dim in [-ndim, ndim) (ndim 0 accepts -1 and 0) normalized */
int ops_dim(const char *fname, value dim, int ndim, int *out);
/* a shape from an int or a tuple/list of ints */
int ops_shape(const char *fname, const char *param, value v, int *ndim, int64_t *shape);
/* x[index] in tensor.h's terms: int, slice, None, 0-d integer tensor, tuple of those */
int ops_index_specs(value index, struct index_spec *specs, int *n, int max);
/* a number (bool, int, float) as a wrapped 0-d tensor, a tensor increfed, else NULL (no error) */
tensor *ops_as_tensor(value v);

/* ---- the argument checks of the implementations ----
 * Each is the part of an op's implementation that reads only arguments and
 * tensor metadata (never data), exported so that ops_meta.c's shape rules
 * raise the very same errors. Each returns 0 (a tensor), or -1 (NULL)
 * after tj_error_set(). */
tensor *ops_tensor_arg(int op, const value *a, int pos);       /* a[pos] must be a tensor: borrowed */
tensor *ops_tensor_or_number(int op, const value *a, int pos); /* a tensor or a number: a new reference */
int ops_dtype_arg(int op, value v, int *dt);                   /* dtype=: -1 for None */
int ops_size_arg(int op, value v, int *ndim, int64_t *shape);  /* the sizes of a creation op */
int ops_requires_grad_arg(int op, value requires_grad, dtype dt, bool *rg);
int ops_full_dtype(int op, value fill_value, value dtype_v, int *dt);
int ops_arange_args(int op, const value *a, double *num, int *dt); /* num: start, end, step */
int ops_eye_args(int op, const value *a, int64_t *n, int64_t *m, int *dt);
int ops_check_random_dtype(int op, int dt);
int ops_check_unary(int op, const tensor *x);
int ops_round_decimals(int op, const tensor *x, value decimals, int64_t *d);
int ops_check_where(const tensor *cond);
int ops_check_clamp(const value *a);
int ops_perm_arg(int op, const tensor *x, value dims, int *perm);
int ops_flatten_dims(int op, const tensor *x, const value *a, int *start, int *end);
tensor **ops_tensor_list(int op, value v, int *n);             /* cat/stack's tensors (borrowed), free() the array */
int ops_to_dtype(int op, const value *a, int *dt);
int ops_var_correction(int op, const value *a, int *correction);

#endif
