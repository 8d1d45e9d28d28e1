/* ops.c - tensor operations as tj values see them.
 *
 * Everything is expanded from ops.def: the op table, the builtin function
 * behind each function and method, ops_functions[], the dispatch table of
 * implementations. A call from a program goes
 *
 *   fn_<name> -> ops_invoke -> ops_normalize (Python-style signature)
 *             -> ops_call -> impl_<impl>(op, args) -> tensor.h kernels
 *                         -> ag_record (the tape node, autograd.c)
 *
 * and the operators (ops_binary, ops_subscript, ...) enter at ops_call
 * with their arguments already normalized. Implementations return fresh
 * tensors (ops_call makes sure no input comes back as the output, since
 * recording a node sets fields of the output).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "autograd.h"
#include "error.h"
#include "ops.h"

#define OPS_MAX_INDEX 16

/* ---- the table ---- */

/* the kind column of ops.def */
#define OPS_KIND_FN OPK_FN
#define OPS_KIND_METH OPK_METH
#define OPS_KIND_OPER OPK_OPER
#define OPS_KIND_ATTR OPK_ATTR
#define OPS_KIND_FN_METH (OPK_FN | OPK_METH)
#define OPS_KIND_PYFN_METH (OPK_FN | OPK_METH)
#define OPS_KIND_METH_OPER (OPK_METH | OPK_OPER)
#define OPS_KIND_FN_METH_OPER (OPK_FN | OPK_METH | OPK_OPER)

const struct ops_info ops_table[OPS_COUNT] = {
#define OPDEF(name, kind, flags, params, impl, aux, save, backward, stage, meta) \
	{#name, OPS_KIND_##kind, flags, params, OPST_##stage},
#include "ops.def"
#undef OPDEF
};

static const int op_aux[OPS_COUNT] = {
#define OPDEF(name, kind, flags, params, impl, aux, save, backward, stage, meta) aux,
#include "ops.def"
#undef OPDEF
};

typedef value (*impl_fn)(int op, const value *a);
#define OPDEF(name, kind, flags, params, impl, aux, save, backward, stage, meta) static value impl_##impl(int op, const value *a);
#include "ops.def"
#undef OPDEF

static const impl_fn op_impls[OPS_COUNT] = {
#define OPDEF(name, kind, flags, params, impl, aux, save, backward, stage, meta) impl_##impl,
#include "ops.def"
#undef OPDEF
};

/* the builtin behind each function and method: a Python-style call */
#define OPDEF(name, kind, flags, params, impl, aux, save, backward, stage, meta)         \
	static value fn_##name(struct vm *vm, const value *args, int nargs, value kwnames) \
	{                                                                                   \
		(void)vm;                                                                   \
		return ops_invoke(OPS_##name, args, nargs, kwnames);                        \
	}
#include "ops.def"
#undef OPDEF

static const builtin_fn op_fns[OPS_COUNT] = {
#define OPDEF(name, kind, flags, params, impl, aux, save, backward, stage, meta) fn_##name,
#include "ops.def"
#undef OPDEF
};

/* ops_functions[]: the rows whose kind includes FN, except Python builtins */
#define OPS_FNROW_FN(name) {#name, fn_##name},
#define OPS_FNROW_FN_METH(name) {#name, fn_##name},
#define OPS_FNROW_FN_METH_OPER(name) {#name, fn_##name},
#define OPS_FNROW_METH(name)
#define OPS_FNROW_OPER(name)
#define OPS_FNROW_ATTR(name)
#define OPS_FNROW_PYFN_METH(name)
#define OPS_FNROW_METH_OPER(name)
const struct builtin_def ops_functions[] = {
#define OPDEF(name, kind, flags, params, impl, aux, save, backward, stage, meta) OPS_FNROW_##kind(name)
#include "ops.def"
#undef OPDEF
	{NULL, NULL},
};

static inline const char *opname(int op) { return ops_table[op].name; }

int ops_find(const char *name, unsigned kinds)
{
	for (int op = 0; op < OPS_COUNT; op++)
		if ((ops_table[op].kind & kinds) && strcmp(ops_table[op].name, name) == 0)
			return op;
	return -1;
}

int ops_of_builtin(builtin_fn fn)
{
	if (fn == ops_builtin_max)
		return OPS_max;
	if (fn == ops_builtin_min)
		return OPS_min;
	for (int op = 0; op < OPS_COUNT; op++)
		if (op_fns[op] == fn)
			return op;
	return -1;
}

static const int binop_ops[VB_COUNT] = {
	[VB_ADD] = OPS_add, [VB_SUB] = OPS_sub, [VB_MUL] = OPS_mul, [VB_TRUEDIV] = OPS_div,
	[VB_FLOORDIV] = OPS_floordiv, [VB_MOD] = OPS_mod, [VB_POW] = OPS_pow, [VB_MATMUL] = OPS_matmul,
};
static const char *const binop_symbols[VB_COUNT] = {
	[VB_ADD] = "+", [VB_SUB] = "-", [VB_MUL] = "*", [VB_TRUEDIV] = "/",
	[VB_FLOORDIV] = "//", [VB_MOD] = "%", [VB_POW] = "**", [VB_MATMUL] = "@",
};
static const int cmpop_ops[VC_COUNT] = {
	[VC_LT] = OPS_lt, [VC_LE] = OPS_le, [VC_GT] = OPS_gt, [VC_GE] = OPS_ge,
	[VC_EQ] = OPS_eq, [VC_NE] = OPS_ne, [VC_IS] = -1, [VC_IS_NOT] = -1, [VC_IN] = -1, [VC_NOT_IN] = -1,
};
static const char *const cmpop_symbols[VC_COUNT] = {
	[VC_LT] = "<", [VC_LE] = "<=", [VC_GT] = ">", [VC_GE] = ">=", [VC_EQ] = "==", [VC_NE] = "!=",
	[VC_IS] = "is", [VC_IS_NOT] = "is not", [VC_IN] = "in", [VC_NOT_IN] = "not in",
};

int ops_of_binop(enum vm_binop op) { return (unsigned)op < VB_COUNT ? binop_ops[op] : -1; }
int ops_of_cmpop(enum vm_cmpop op) { return (unsigned)op < VC_COUNT ? cmpop_ops[op] : -1; }

/* ---- signatures: parsed once from the params column ---- */

static struct ops_sig sigs[OPS_COUNT];
static bool sigs_ready;

value ops_parse_default(const char *s)
{
	if (strcmp(s, "None") == 0)
		return val_none();
	if (strcmp(s, "True") == 0)
		return val_bool(true);
	if (strcmp(s, "False") == 0)
		return val_bool(false);
	if (strpbrk(s, ".eE"))
		return val_float(strtod(s, NULL));
	return val_int(strtoll(s, NULL, 10));
}

static void sig_parse(struct ops_sig *s, const char *params)
{
	size_t len = strlen(params);
	char *p = s->buf;

	if (len >= sizeof s->buf)
		abort(); /* a row of ops.def is malformed: a bug, caught by the tests */
	memcpy(s->buf, params, len + 1);
	s->n = 0;
	s->vararg = -1;
	s->nrequired = 0;
	bool seen_default = false;
	while (*p) {
		while (*p == ' ' || *p == ',')
			p++;
		if (!*p)
			break;
		char *start = p;
		while (*p && *p != ',')
			p++;
		if (*p)
			*p++ = '\0';
		char *eq = strchr(start, '=');
		int i = s->n++;
		if (i >= OPS_MAX_PARAMS)
			abort();
		s->defaults[i] = val_none();
		if (*start == '*') {
			s->vararg = i;
			start++;
			seen_default = true;
		} else if (eq) {
			*eq = '\0';
			s->defaults[i] = ops_parse_default(eq + 1);
			seen_default = true;
		} else if (!seen_default) {
			s->nrequired++;
		}
		s->names[i] = start;
	}
	int k = 0;
	for (int i = 0; i < s->n; i++)
		if (i != s->vararg)
			s->plain[k++] = s->names[i];
	s->plain[k] = NULL;
}

static const struct ops_sig *sig_of(int op)
{
	if (!sigs_ready) {
		for (int i = 0; i < OPS_COUNT; i++)
			sig_parse(&sigs[i], ops_table[i].params);
		sigs_ready = true;
	}
	return &sigs[op];
}

const struct ops_sig *ops_signature(int op) { return sig_of(op); }
int ops_nparams(int op) { return sig_of(op)->n; }
const char *ops_param_name(int op, int i) { return sig_of(op)->names[i]; }

static bool is_seq(value v) { return v.tag == VAL_LIST || v.tag == VAL_TUPLE; }
static size_t seq_len(value v) { return v.tag == VAL_LIST ? val_list(v)->len : val_tuple(v)->len; }
static value *seq_items(value v) { return v.tag == VAL_LIST ? val_list(v)->items : val_tuple(v)->items; }

int ops_normalize(int op, const value *args, int nargs, value kwnames, value *out)
{
	const struct ops_sig *s = sig_of(op);
	int nkw = kwnames.tag == VAL_TUPLE ? (int)val_tuple(kwnames)->len : 0;
	int npos = nargs - nkw;
	value plain[OPS_MAX_PARAMS];
	int k = 0;

	for (int i = 0; i < s->n; i++)
		if (i != s->vararg)
			plain[k++] = s->defaults[i];
	if (s->vararg < 0) {
		if (args_parse(opname(op), args, nargs, kwnames, s->plain, s->nrequired, plain) < 0)
			return -1;
		for (int i = 0; i < s->n; i++) {
			out[i] = plain[i];
			val_incref(out[i]);
		}
		return 0;
	}

	/* the positional arguments up to the vararg, then the keywords */
	int v = s->vararg, head = npos < v ? npos : v;
	value sub[OPS_MAX_PARAMS + 16];
	if (head + nkw > (int)(sizeof sub / sizeof sub[0])) {
		tj_error_set("%s() got too many keyword arguments", opname(op));
		return -1;
	}
	for (int i = 0; i < head; i++)
		sub[i] = args[i];
	for (int i = 0; i < nkw; i++)
		sub[head + i] = args[npos + i];
	if (args_parse(opname(op), sub, head + nkw, kwnames, s->plain, s->nrequired, plain) < 0)
		return -1;

	/* *size: the rest of the positionals, or one list/tuple given alone */
	int nv = npos - head;
	value tup;
	if (nv == 1 && is_seq(args[v]))
		tup = tuple_pack(seq_len(args[v]), seq_items(args[v]));
	else
		tup = tuple_pack(nv, args + v);
	k = 0;
	for (int i = 0; i < s->n; i++) {
		if (i == v) {
			out[i] = tup;
		} else {
			out[i] = plain[k++];
			val_incref(out[i]);
		}
	}
	return 0;
}

void ops_args_release(int op, value *args)
{
	int n = ops_nparams(op);
	for (int i = 0; i < n; i++)
		val_decref(args[i]);
}

/* an output that is one of the inputs becomes an alias: recording a node
 * (or requires_grad_) sets fields of the output */
static bool is_input(int op, const value *args, const tensor *t)
{
	int n = ops_nparams(op);
	for (int i = 0; i < n; i++)
		if (args[i].tag == VAL_TENSOR && val_as_tensor(args[i]) == t)
			return true;
	return false;
}

value ops_call(int op, const value *args)
{
	value out = op_impls[op](op, args);
	if (val_is_err(out))
		return out;
	if (out.tag == VAL_TENSOR && is_input(op, args, val_as_tensor(out))) {
		tensor *al = ag_alias(val_as_tensor(out));
		val_decref(out);
		if (!al)
			return val_err();
		out = val_tensor(al);
	}
	if ((ops_table[op].flags & OPF_DIFF) && ag_record(op, args, out) < 0) {
		val_decref(out);
		return val_err();
	}
	return out;
}

value ops_invoke(int op, const value *args, int nargs, value kwnames)
{
	value a[OPS_MAX_PARAMS];
	if (ops_normalize(op, args, nargs, kwnames, a) < 0)
		return val_err();
	value r = ops_call(op, a);
	ops_args_release(op, a);
	return r;
}

value ops_builtin_max(struct vm *vm, const value *args, int nargs, value kwnames)
{
	(void)vm;
	return ops_invoke(OPS_max, args, nargs, kwnames);
}

value ops_builtin_min(struct vm *vm, const value *args, int nargs, value kwnames)
{
	(void)vm;
	return ops_invoke(OPS_min, args, nargs, kwnames);
}

/* ---- argument helpers ---- */

static value tensor_value(tensor *t) { return t ? val_tensor(t) : val_err(); }

/* argument pos, which must be a tensor (borrowed) */
static tensor *targ(int op, const value *a, int pos)
{
	if (a[pos].tag == VAL_TENSOR)
		return val_as_tensor(a[pos]);
	tj_error_set("%s(): argument '%s' (position %d) must be Tensor, not %s", opname(op),
		     ops_param_name(op, pos), pos + 1, val_type_name(a[pos]));
	return NULL;
}

static bool is_number(value v) { return v.tag == VAL_INT || v.tag == VAL_FLOAT || v.tag == VAL_BOOL; }

tensor *ops_as_tensor(value v)
{
	tensor *t;
	switch (v.tag) {
	case VAL_TENSOR:
		t = val_as_tensor(v);
		tensor_incref(t);
		return t;
	case VAL_BOOL:
		t = tensor_scalar(DT_BOOL, v.b);
		break;
	case VAL_INT:
		t = tensor_scalar_int(v.i);
		break;
	case VAL_FLOAT:
		t = tensor_scalar(DT_FLOAT64, v.f);
		break;
	default:
		return NULL;
	}
	if (t)
		t->wrapped_number = true;
	return t;
}

/* argument pos as a tensor (new reference): a tensor or a number */
static tensor *tnarg(int op, const value *a, int pos)
{
	if (a[pos].tag != VAL_TENSOR && !is_number(a[pos])) {
		tj_error_set("%s(): argument '%s' (position %d) must be Tensor or a number, not %s", opname(op),
			     ops_param_name(op, pos), pos + 1, val_type_name(a[pos]));
		return NULL;
	}
	return ops_as_tensor(a[pos]);
}

tensor *ops_tensor_arg(int op, const value *a, int pos) { return targ(op, a, pos); }
tensor *ops_tensor_or_number(int op, const value *a, int pos) { return tnarg(op, a, pos); }

static int bool_arg(int op, const value *a, int pos, bool *out)
{
	return arg_bool(opname(op), ops_param_name(op, pos), a[pos], out);
}

/* dtype=: a dtype, or the types bool/int/float as PyTorch takes them; -1 for None */
static int dtype_arg(int op, value v, int *dt)
{
	switch (v.tag) {
	case VAL_NONE:
		*dt = -1;
		return 0;
	case VAL_DTYPE:
		*dt = (int)v.i;
		return 0;
	case VAL_TYPE:
		if (v.i == VAL_BOOL) {
			*dt = DT_BOOL;
			return 0;
		}
		if (v.i == VAL_INT) {
			*dt = DT_INT64;
			return 0;
		}
		if (v.i == VAL_FLOAT) {
			*dt = DT_FLOAT64;
			return 0;
		}
		break;
	default:
		break;
	}
	tj_error_set("%s(): argument 'dtype' must be dtype, not %s", opname(op), val_type_name(v));
	return -1;
}

int ops_dtype_arg(int op, value v, int *dt) { return dtype_arg(op, v, dt); }

int ops_shape(const char *fname, const char *param, value v, int *ndim, int64_t *shape)
{
	if (v.tag == VAL_INT || v.tag == VAL_BOOL) {
		*ndim = 1;
		shape[0] = v.tag == VAL_INT ? v.i : v.b;
		return 0;
	}
	if (!is_seq(v)) {
		tj_error_set("%s(): argument '%s' must be tuple of ints, not %s", fname, param, val_type_name(v));
		return -1;
	}
	size_t n = seq_len(v);
	if (n > TENSOR_MAX_DIMS) {
		tj_error_set("%s(): too many dimensions (%zu > %d)", fname, n, TENSOR_MAX_DIMS);
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		value it = seq_items(v)[i];
		if (it.tag != VAL_INT && it.tag != VAL_BOOL) {
			tj_error_set("%s(): argument '%s' must be tuple of ints, but found element of type %s at pos %zu",
				     fname, param, val_type_name(it), i);
			return -1;
		}
		shape[i] = it.tag == VAL_INT ? it.i : it.b;
	}
	*ndim = (int)n;
	return 0;
}

static int wrap_dim(const char *fname, int64_t d, int ndim, int *out)
{
	int64_t span = ndim > 0 ? ndim : 1;
	if (d < -span || d >= span) {
		tj_error_set("dimension out of range (expected to be in range of [%lld, %lld], but got %lld)",
			     (long long)-span, (long long)span - 1, (long long)d);
		return -1;
	}
	(void)fname;
	*out = (int)(d < 0 ? d + span : d);
	return 0;
}

int ops_dim(const char *fname, value dim, int ndim, int *out)
{
	int64_t d;
	if (arg_int(fname, "dim", dim, &d) < 0)
		return -1;
	return wrap_dim(fname, d, ndim, out);
}

int ops_dims(const char *fname, value dim, int ndim, int *dims, int *n)
{
	*n = 0;
	if (dim.tag == VAL_NONE)
		return 0;
	if (!is_seq(dim)) {
		if (dim.tag != VAL_INT && dim.tag != VAL_BOOL) {
			tj_error_set("%s(): argument 'dim' must be int or tuple of ints, not %s", fname,
				     val_type_name(dim));
			return -1;
		}
		if (ops_dim(fname, dim, ndim, &dims[0]) < 0)
			return -1;
		*n = ndim > 0 ? 1 : 0;
		return 0;
	}
	size_t len = seq_len(dim);
	bool seen[TENSOR_MAX_DIMS] = {false};
	for (size_t i = 0; i < len; i++) {
		value it = seq_items(dim)[i];
		int d;
		if (it.tag != VAL_INT && it.tag != VAL_BOOL) {
			tj_error_set("%s(): argument 'dim' must be tuple of ints, but found element of type %s at pos %zu",
				     fname, val_type_name(it), i);
			return -1;
		}
		if (ops_dim(fname, it, ndim, &d) < 0)
			return -1;
		if (ndim == 0)
			continue;
		if (seen[d]) {
			tj_error_set("dim %d appears multiple times in the list of dims", d);
			return -1;
		}
		seen[d] = true;
		dims[(*n)++] = d;
	}
	return 0;
}

static int index_item(value v, struct index_spec *s)
{
	memset(s, 0, sizeof *s);
	switch (v.tag) {
	case VAL_INT:
		s->kind = INDEX_INT;
		s->i = v.i;
		return 0;
	case VAL_NONE:
		s->kind = INDEX_NEWAXIS;
		return 0;
	case VAL_SLICE: {
		struct slice *sl = val_slice(v);
		value parts[3] = {sl->start, sl->stop, sl->step};
		int64_t num[3] = {0, 0, 1};
		for (int k = 0; k < 3; k++) {
			if (parts[k].tag == VAL_NONE)
				continue;
			if (parts[k].tag == VAL_INT || parts[k].tag == VAL_BOOL) {
				num[k] = parts[k].tag == VAL_INT ? parts[k].i : parts[k].b;
			} else if (parts[k].tag == VAL_TENSOR && val_as_tensor(parts[k])->numel == 1 &&
				   val_as_tensor(parts[k])->dt == DT_INT64) {
				num[k] = tensor_get_int(val_as_tensor(parts[k]), 0);
			} else {
				tj_error_set("slice indices must be integers or None or have an __index__ method");
				return -1;
			}
		}
		if (num[2] == 0) {
			tj_error_set("slice step cannot be zero");
			return -1;
		}
		if (num[2] < 0) {
			tj_error_set("step must be greater than zero");
			return -1;
		}
		s->kind = INDEX_SLICE;
		s->has_start = parts[0].tag != VAL_NONE;
		s->has_stop = parts[1].tag != VAL_NONE;
		s->start = num[0];
		s->stop = num[1];
		s->step = num[2];
		return 0;
	}
	case VAL_TENSOR: {
		tensor *t = val_as_tensor(v);
		if (t->ndim == 0 && t->dt == DT_INT64) {
			s->kind = INDEX_INT;
			s->i = tensor_get_int(t, 0);
			return 0;
		}
		struct strbuf sb = STRBUF_INIT;
		shape_format(t->ndim, t->shape, &sb);
		tj_error_set("indexing with a %s tensor of shape %s is not supported (only 0-d integer tensors)",
			     dtype_name(t->dt), sb.buf ? sb.buf : "()");
		sb_release(&sb);
		return -1;
	}
	default:
		tj_error_set("only integers, slices (`:`), None and 0-d integer tensors are valid indices (got %s)",
			     val_type_name(v));
		return -1;
	}
}

int ops_index_specs(value index, struct index_spec *specs, int *n, int max)
{
	if (index.tag != VAL_TUPLE) {
		*n = 1;
		return index_item(index, &specs[0]);
	}
	struct tuple *t = val_tuple(index);
	if ((int)t->len > max) {
		tj_error_set("too many indices (%zu)", t->len);
		return -1;
	}
	for (size_t i = 0; i < t->len; i++)
		if (index_item(t->items[i], &specs[i]) < 0)
			return -1;
	*n = (int)t->len;
	return 0;
}

/* ---- creation ---- */

/* requires_grad= of a new tensor (consumes t) */
int ops_requires_grad_arg(int op, value requires_grad, dtype dt, bool *rg)
{
	if (arg_bool(opname(op), "requires_grad", requires_grad, rg) < 0)
		return -1;
	if (*rg && !dtype_is_float(dt)) {
		tj_error_set("only Tensors of floating point dtype can require gradients");
		return -1;
	}
	return 0;
}

static value finish_create(int op, tensor *t, value requires_grad)
{
	bool rg;
	if (!t)
		return val_err();
	if (ops_requires_grad_arg(op, requires_grad, t->dt, &rg) < 0)
		goto fail;
	t->requires_grad = rg;
	return val_tensor(t);
fail:
	tensor_decref(t);
	return val_err();
}

int ops_size_arg(int op, value v, int *ndim, int64_t *shape)
{
	if (ops_shape(opname(op), ops_param_name(op, 0), v, ndim, shape) < 0)
		return -1;
	return tensor_check_sizes(*ndim, shape);
}

static int64_t double_to_int(double d)
{
	if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0))
		return INT64_MIN;
	return (int64_t)d;
}

/* tensor(data): the elements of nested lists, gathered before the dtype is known */
struct gather {
	int ndim;
	int64_t shape[TENSOR_MAX_DIMS];
	int64_t n, cap;
	double *d;
	int64_t *iv;
	int category;   /* 0 bool, 1 int, 2 float */
	bool f64;       /* a float64 tensor element */
};

static int gather_push(struct gather *g, double d, int64_t iv, int category, bool f64)
{
	if (g->n == g->cap) {
		int64_t cap = g->cap ? 2 * g->cap : 16;
		double *d2 = realloc(g->d, cap * sizeof *d2);
		if (d2)
			g->d = d2;
		int64_t *i2 = d2 ? realloc(g->iv, cap * sizeof *i2) : NULL;
		if (!d2 || !i2) {
			tj_error_set("out of memory");
			return -1;
		}
		g->iv = i2;
		g->cap = cap;
	}
	g->d[g->n] = d;
	g->iv[g->n] = iv;
	g->n++;
	if (category > g->category)
		g->category = category;
	g->f64 |= f64;
	return 0;
}

static int gather_elem(struct gather *g, value v, int depth)
{
	switch (v.tag) {
	case VAL_BOOL:
		return gather_push(g, v.b, v.b, 0, false);
	case VAL_INT:
		return gather_push(g, (double)v.i, v.i, 1, false);
	case VAL_FLOAT:
		return gather_push(g, v.f, double_to_int(v.f), 2, false);
	case VAL_TENSOR: {
		tensor *t = val_as_tensor(v);
		double d;
		int64_t i;
		if (t->numel != 1) {
			tj_error_set("only one element tensors can be converted to Python scalars");
			return -1;
		}
		if (tensor_item(t, &d, &i) < 0)
			return -1;
		if (dtype_is_float(t->dt))
			i = double_to_int(d);
		else
			d = (double)i;
		return gather_push(g, d, i, dtype_category(t->dt), t->dt == DT_FLOAT64);
	}
	default:
		if (is_seq(v))
			tj_error_set("tensor(): expected a number at dim %d (got %s)", depth, val_type_name(v));
		else
			tj_error_set("tensor(): invalid data type '%s'", val_type_name(v));
		return -1;
	}
}

static int gather_rec(struct gather *g, value v, int depth)
{
	if (depth == g->ndim)
		return gather_elem(g, v, depth);
	if (!is_seq(v)) {
		tj_error_set("expected sequence of length %lld at dim %d (got %s)", (long long)g->shape[depth], depth,
			     val_type_name(v));
		return -1;
	}
	if ((int64_t)seq_len(v) != g->shape[depth]) {
		tj_error_set("expected sequence of length %lld at dim %d (got %zu)", (long long)g->shape[depth], depth,
			     seq_len(v));
		return -1;
	}
	for (size_t i = 0; i < seq_len(v); i++)
		if (gather_rec(g, seq_items(v)[i], depth + 1) < 0)
			return -1;
	return 0;
}

static value impl_tensor(int op, const value *a)
{
	int dt;
	if (dtype_arg(op, a[1], &dt) < 0)
		return val_err();
	if (a[0].tag == VAL_TENSOR) {
		tensor *src = val_as_tensor(a[0]);
		return finish_create(op, tensor_to(src, dt < 0 ? src->dt : (dtype)dt), a[2]);
	}

	struct gather g = {0};
	value v = a[0];
	while (is_seq(v)) {
		if (g.ndim == TENSOR_MAX_DIMS) {
			tj_error_set("tensor(): too many dimensions (more than %d)", TENSOR_MAX_DIMS);
			return val_err();
		}
		g.shape[g.ndim++] = (int64_t)seq_len(v);
		if (seq_len(v) == 0)
			break;
		v = seq_items(v)[0];
	}
	value result = val_err();
	if (gather_rec(&g, a[0], 0) < 0)
		goto out;
	if (dt < 0)
		dt = g.n == 0 ? DT_FLOAT32 : g.category == 2 ? (g.f64 ? DT_FLOAT64 : DT_FLOAT32) : g.category == 1 ? DT_INT64 : DT_BOOL;
	tensor *t = tensor_empty((dtype)dt, g.ndim, g.shape);
	if (!t)
		goto out;
	/* d holds every element as a double, iv as an int64 (floats truncated) */
	for (int64_t i = 0; i < g.n; i++) {
		switch (t->dt) {
		case DT_BOOL:
			((uint8_t *)t->data)[i] = g.d[i] != 0;
			break;
		case DT_INT64:
			((int64_t *)t->data)[i] = g.iv[i];
			break;
		case DT_FLOAT32:
			((float *)t->data)[i] = (float)g.d[i];
			break;
		default:
			((double *)t->data)[i] = g.d[i];
			break;
		}
	}
	result = finish_create(op, t, a[2]);
out:
	free(g.d);
	free(g.iv);
	return result;
}

static value impl_fill(int op, const value *a)
{
	int ndim, dt;
	int64_t shape[TENSOR_MAX_DIMS];
	if (ops_size_arg(op, a[0], &ndim, shape) < 0 || dtype_arg(op, a[1], &dt) < 0)
		return val_err();
	if (dt < 0)
		dt = DT_FLOAT32;
	tensor *t = op_aux[op] ? tensor_full((dtype)dt, ndim, shape, op_aux[op]) : tensor_zeros((dtype)dt, ndim, shape);
	return finish_create(op, t, a[2]);
}

int ops_full_dtype(int op, value fv, value dtype_v, int *dt)
{
	int kind = fv.tag; /* a one-element tensor counts as its item */
	if (fv.tag == VAL_TENSOR && val_as_tensor(fv)->numel == 1) {
		dtype t = val_as_tensor(fv)->dt;
		kind = t == DT_BOOL ? VAL_BOOL : t == DT_INT64 ? VAL_INT : VAL_FLOAT;
	}
	if (dtype_arg(op, dtype_v, dt) < 0)
		return -1;
	if (kind != VAL_BOOL && kind != VAL_INT && kind != VAL_FLOAT) {
		tj_error_set("full(): argument 'fill_value' must be a number, not %s", val_type_name(fv));
		return -1;
	}
	if (*dt < 0)
		*dt = kind == VAL_BOOL ? DT_BOOL : kind == VAL_INT ? DT_INT64 : DT_FLOAT32;
	return 0;
}

static value impl_full(int op, const value *a)
{
	int ndim, dt;
	int64_t shape[TENSOR_MAX_DIMS];
	value fv = a[1];
	if (ops_size_arg(op, a[0], &ndim, shape) < 0 || ops_full_dtype(op, fv, a[2], &dt) < 0)
		return val_err();
	if (fv.tag == VAL_TENSOR && val_as_tensor(fv)->numel == 1) {
		tensor *ft = val_as_tensor(fv);
		double d;
		int64_t i;
		if (tensor_item(ft, &d, &i) < 0)
			return val_err();
		fv = ft->dt == DT_BOOL ? val_bool(i != 0) : ft->dt == DT_INT64 ? val_int(i) : val_float(d);
	}
	tensor *t;
	if (fv.tag == VAL_INT && dt == DT_INT64) {
		/* exact for any int64 */
		t = tensor_empty(DT_INT64, ndim, shape);
		if (t)
			for (int64_t i = 0; i < t->numel; i++)
				((int64_t *)t->data)[i] = fv.i;
	} else {
		double d = fv.tag == VAL_FLOAT ? fv.f : fv.tag == VAL_INT ? (double)fv.i : fv.b;
		t = tensor_full((dtype)dt, ndim, shape, d);
	}
	return finish_create(op, t, a[3]);
}

int ops_arange_args(int op, const value *a, double *num, int *dt)
{
	bool all_int = true;
	for (int k = 0; k < 3; k++) {
		value v = a[k];
		if (k == 1 && v.tag == VAL_NONE) {
			num[1] = num[0];
			num[0] = 0;
			continue;
		}
		if (arg_float(opname(op), ops_param_name(op, k), v, &num[k]) < 0)
			return -1;
		all_int &= v.tag != VAL_FLOAT;
	}
	if (dtype_arg(op, a[3], dt) < 0)
		return -1;
	if (*dt < 0)
		*dt = all_int ? DT_INT64 : DT_FLOAT32;
	double start = num[0], end = num[1], step = num[2];
	if (step == 0) {
		tj_error_set("arange(): step must be nonzero");
		return -1;
	}
	if (!isfinite(start) || !isfinite(end)) {
		tj_error_set("arange(): unsupported range: %g -> %g", start, end);
		return -1;
	}
	if ((step > 0 && end < start) || (step < 0 && end > start)) {
		tj_error_set("arange(): upper bound and larger bound inconsistent with step sign");
		return -1;
	}
	return 0;
}

static value impl_arange(int op, const value *a)
{
	double num[3];
	int dt;
	if (ops_arange_args(op, a, num, &dt) < 0)
		return val_err();
	return finish_create(op, tensor_arange(num[0], num[1], num[2], (dtype)dt), a[4]);
}

int ops_eye_args(int op, const value *a, int64_t *n, int64_t *m, int *dt)
{
	if (arg_int(opname(op), "n", a[0], n) < 0 || dtype_arg(op, a[2], dt) < 0)
		return -1;
	if (a[1].tag == VAL_NONE)
		*m = *n;
	else if (arg_int(opname(op), "m", a[1], m) < 0)
		return -1;
	if (*n < 0 || *m < 0) {
		tj_error_set("eye(): %s must be greater or equal to 0, got %lld", *n < 0 ? "n" : "m",
			     (long long)(*n < 0 ? *n : *m));
		return -1;
	}
	if (*dt < 0)
		*dt = DT_FLOAT32;
	return 0;
}

static value impl_eye(int op, const value *a)
{
	int64_t n, m;
	int dt;
	if (ops_eye_args(op, a, &n, &m, &dt) < 0)
		return val_err();
	return finish_create(op, tensor_eye_nm(n, m, (dtype)dt), a[3]);
}

int ops_check_random_dtype(int op, int dt)
{
	if (!dtype_is_float((dtype)dt)) {
		tj_error_set("%s(): expected a floating point dtype, got %s", opname(op), dtype_name((dtype)dt));
		return -1;
	}
	return 0;
}

static tensor *random_tensor(int op, int kind, int dt, int ndim, const int64_t *shape)
{
	if (ops_check_random_dtype(op, dt) < 0)
		return NULL;
	return kind == 0 ? tensor_randn((dtype)dt, ndim, shape) : tensor_rand((dtype)dt, ndim, shape);
}

static value impl_random(int op, const value *a)
{
	int ndim, dt;
	int64_t shape[TENSOR_MAX_DIMS];
	if (ops_size_arg(op, a[0], &ndim, shape) < 0 || dtype_arg(op, a[1], &dt) < 0)
		return val_err();
	return finish_create(op, random_tensor(op, op_aux[op], dt < 0 ? DT_FLOAT32 : dt, ndim, shape), a[2]);
}

static value impl_like(int op, const value *a)
{
	tensor *x = targ(op, a, 0), *t;
	int dt;
	if (!x || dtype_arg(op, a[1], &dt) < 0)
		return val_err();
	if (dt < 0)
		dt = x->dt;
	switch (op_aux[op]) {
	case 0:
		t = tensor_zeros((dtype)dt, x->ndim, x->shape);
		break;
	case 1:
		t = tensor_full((dtype)dt, x->ndim, x->shape, 1);
		break;
	default:
		t = random_tensor(op, op_aux[op] - 2, dt, x->ndim, x->shape);
		break;
	}
	return finish_create(op, t, a[2]);
}

static value impl_manual_seed(int op, const value *a)
{
	int64_t seed;
	if (arg_int(opname(op), "seed", a[0], &seed) < 0)
		return val_err();
	rng_manual_seed((uint64_t)seed);
	return val_none();
}

/* ---- pointwise ---- */

int ops_check_unary(int op, const tensor *x)
{
	if (op_aux[op] == UNOP_neg && x->dt == DT_BOOL) {
		tj_error_set("negation, the `-` operator, on a bool tensor is not supported; "
			     "use logical_not() to invert a mask");
		return -1;
	}
	return 0;
}

static value impl_unary(int op, const value *a)
{
	tensor *x = targ(op, a, 0);
	if (!x || ops_check_unary(op, x) < 0)
		return val_err();
	return tensor_value(tensor_unary((unop)op_aux[op], x));
}

/* round(x, decimals=d), as PyTorch: round(x * 10^d) / 10^d for floats,
 * half to even; an integer tensor is rounded as with decimals=0 (the
 * identity) */
int ops_round_decimals(int op, const tensor *x, value decimals, int64_t *d)
{
	if (arg_int(opname(op), "decimals", decimals, d) < 0)
		return -1;
	if (*d != 0 && dtype_is_float(x->dt) && (*d > 300 || *d < -300)) {
		tj_error_set("round(): decimals %lld is out of range", (long long)*d);
		return -1;
	}
	return 0;
}

static value impl_round(int op, const value *a)
{
	tensor *x = targ(op, a, 0);
	int64_t d;
	if (!x || ops_round_decimals(op, x, a[1], &d) < 0)
		return val_err();
	if (d == 0 || !dtype_is_float(x->dt))
		return tensor_value(tensor_unary(UNOP_round, x));
	/* as ATen's round_decimals kernel: x * 10^d for d > 0, x / 10^-d for d < 0 */
	tensor *p = tensor_scalar(x->dt, pow(10.0, (double)(d > 0 ? d : -d)));
	tensor *scaled = p ? tensor_binary(d > 0 ? BINOP_mul : BINOP_div, x, p) : NULL;
	tensor *r = scaled ? tensor_unary(UNOP_round, scaled) : NULL;
	tensor *out = r ? tensor_binary(d > 0 ? BINOP_div : BINOP_mul, r, p) : NULL;
	tensor_decref(p);
	tensor_decref(scaled);
	tensor_decref(r);
	return tensor_value(out);
}

static value impl_binary(int op, const value *a)
{
	tensor *x = tnarg(op, a, 0), *y = x ? tnarg(op, a, 1) : NULL;
	tensor *r = NULL;
	if (x && y)
		r = tensor_binary((binop)op_aux[op], x, y);
	tensor_decref(x);
	tensor_decref(y);
	return tensor_value(r);
}

int ops_check_where(const tensor *c)
{
	if (c->dt != DT_BOOL) {
		tj_error_set("where(): expected condition to be a bool tensor, got %s", dtype_name(c->dt));
		return -1;
	}
	return 0;
}

static value impl_where(int op, const value *a)
{
	tensor *c = targ(op, a, 0), *x = NULL, *y = NULL, *r = NULL;
	if (c && (x = tnarg(op, a, 1)) && (y = tnarg(op, a, 2)) && ops_check_where(c) == 0)
		r = tensor_where(c, x, y);
	tensor_decref(x);
	tensor_decref(y);
	return tensor_value(r);
}

int ops_check_clamp(const value *a)
{
	if (a[1].tag == VAL_NONE && a[2].tag == VAL_NONE) {
		tj_error_set("clamp(): at least one of 'min' or 'max' must not be None");
		return -1;
	}
	return 0;
}

static value impl_clamp(int op, const value *a)
{
	tensor *x = targ(op, a, 0), *lo = NULL, *hi = NULL, *r = NULL;
	if (!x || ops_check_clamp(a) < 0)
		return val_err();
	if (a[1].tag != VAL_NONE && !(lo = tnarg(op, a, 1)))
		goto out;
	if (a[2].tag != VAL_NONE && !(hi = tnarg(op, a, 2)))
		goto out;
	r = tensor_clamp(x, lo, hi);
out:
	tensor_decref(lo);
	tensor_decref(hi);
	return tensor_value(r);
}

/* ---- reductions ---- */

static value impl_reduce(int op, const value *a)
{
	tensor *x = targ(op, a, 0), *xc = NULL, *r = NULL;
	int dims[TENSOR_MAX_DIMS], n, dt;
	bool keepdim;
	if (!x || ops_dims(opname(op), a[1], x->ndim, dims, &n) < 0 || bool_arg(op, a, 2, &keepdim) < 0 ||
	    dtype_arg(op, a[3], &dt) < 0)
		return val_err();
	if (dt >= 0 && (dtype)dt != x->dt) {
		if (!(xc = tensor_to(x, (dtype)dt)))
			return val_err();
		x = xc;
	}
	r = tensor_reduce((redop)op_aux[op], x, dims, n, keepdim, 0);
	tensor_decref(xc);
	return tensor_value(r);
}

static value impl_maxmin(int op, const value *a)
{
	tensor *x = targ(op, a, 0), *values, *indices;
	bool keepdim;
	int dim;
	if (!x)
		return val_err();
	if (a[1].tag == VAL_TENSOR) {
		/* max(a, b): elementwise, like torch.max */
		tensor *r = tensor_binary(op == OPS_max ? BINOP_maximum : BINOP_minimum, x, val_as_tensor(a[1]));
		return tensor_value(r);
	}
	if (bool_arg(op, a, 2, &keepdim) < 0)
		return val_err();
	if (a[1].tag == VAL_NONE)
		return tensor_value(tensor_reduce((redop)op_aux[op], x, NULL, 0, keepdim, 0));
	if (ops_dim(opname(op), a[1], x->ndim, &dim) < 0)
		return val_err();
	if (tensor_reduce_with_indices((redop)op_aux[op], x, dim, keepdim, &values, &indices) < 0)
		return val_err();
	value items[2] = {val_tensor(values), val_tensor(indices)};
	value t = tuple_pack(2, items);
	val_decref(items[0]);
	val_decref(items[1]);
	return t;
}

static value impl_argminmax(int op, const value *a)
{
	tensor *x = targ(op, a, 0);
	bool keepdim;
	int dim = 0;
	if (!x || bool_arg(op, a, 2, &keepdim) < 0)
		return val_err();
	if (a[1].tag != VAL_NONE && ops_dim(opname(op), a[1], x->ndim, &dim) < 0)
		return val_err();
	bool all = a[1].tag == VAL_NONE || x->ndim == 0;
	return tensor_value(tensor_reduce((redop)op_aux[op], x, &dim, all ? 0 : 1, keepdim, 0));
}

/* the correction of var(): correction=, else 1 when unbiased */
int ops_var_correction(int op, const value *a, int *correction)
{
	bool unbiased;
	int64_t c;
	if (a[4].tag != VAL_NONE) {
		if (arg_int(opname(op), "correction", a[4], &c) < 0)
			return -1;
		*correction = (int)c;
		return 0;
	}
	if (bool_arg(op, a, 2, &unbiased) < 0)
		return -1;
	*correction = unbiased ? 1 : 0;
	return 0;
}

static value impl_var(int op, const value *a)
{
	tensor *x = targ(op, a, 0);
	int dims[TENSOR_MAX_DIMS], n, correction;
	bool keepdim;
	if (!x || ops_dims(opname(op), a[1], x->ndim, dims, &n) < 0 || ops_var_correction(op, a, &correction) < 0 ||
	    bool_arg(op, a, 3, &keepdim) < 0)
		return val_err();
	return tensor_value(tensor_reduce(REDOP_var, x, dims, n, keepdim, correction));
}

static value impl_softmax(int op, const value *a)
{
	tensor *x = targ(op, a, 0);
	int dim;
	if (!x || ops_dim(opname(op), a[1], x->ndim, &dim) < 0)
		return val_err();
	return tensor_value(op_aux[op] ? tensor_log_softmax(x, dim) : tensor_softmax(x, dim));
}

/* ---- linear algebra ---- */

static value impl_matmul(int op, const value *a)
{
	tensor *x = targ(op, a, 0), *y = x ? targ(op, a, 1) : NULL;
	if (!y)
		return val_err();
	return tensor_value(tensor_matmul(x, y));
}

static value impl_linear(int op, const value *a)
{
	tensor *x = targ(op, a, 0), *w = x ? targ(op, a, 1) : NULL, *b = NULL;
	if (!w)
		return val_err();
	if (a[2].tag != VAL_NONE && !(b = targ(op, a, 2)))
		return val_err();
	return tensor_value(tensor_linear(x, w, b));
}

/* ---- shape ---- */

static value impl_reshape(int op, const value *a)
{
	tensor *x = targ(op, a, 0);
	int ndim;
	int64_t shape[TENSOR_MAX_DIMS];
	if (!x || ops_shape(opname(op), ops_param_name(op, 1), a[1], &ndim, shape) < 0)
		return val_err();
	return tensor_value(tensor_reshape(x, ndim, shape));
}

static value impl_transpose(int op, const value *a)
{
	tensor *x = targ(op, a, 0);
	int d0, d1;
	if (!x || ops_dim(opname(op), a[1], x->ndim, &d0) < 0 || ops_dim(opname(op), a[2], x->ndim, &d1) < 0)
		return val_err();
	if (x->ndim == 0)
		return tensor_value(ag_alias(x));
	return tensor_value(tensor_transpose(x, d0, d1));
}

/* permutation dims (a tuple of ints) for x, normalized */
int ops_perm_arg(int op, const tensor *x, value v, int *perm)
{
	int n;
	int64_t raw[TENSOR_MAX_DIMS];
	bool seen[TENSOR_MAX_DIMS] = {false};
	if (ops_shape(opname(op), "dims", v, &n, raw) < 0)
		return -1;
	if (n != x->ndim) {
		tj_error_set("permute(): number of dims don't match (the tensor has %d, got %d)", x->ndim, n);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		if (wrap_dim(opname(op), raw[i], x->ndim, &perm[i]) < 0)
			return -1;
		if (seen[perm[i]]) {
			tj_error_set("permute(): duplicate dims are not allowed");
			return -1;
		}
		seen[perm[i]] = true;
	}
	return 0;
}

static value impl_permute(int op, const value *a)
{
	tensor *x = targ(op, a, 0);
	int perm[TENSOR_MAX_DIMS];
	if (!x || ops_perm_arg(op, x, a[1], perm) < 0)
		return val_err();
	return tensor_value(tensor_permute(x, perm, x->ndim));
}

static value impl_T(int op, const value *a)
{
	tensor *x = targ(op, a, 0);
	int perm[TENSOR_MAX_DIMS];
	if (!x)
		return val_err();
	if (x->ndim < 2)
		return tensor_value(ag_alias(x));
	for (int i = 0; i < x->ndim; i++)
		perm[i] = x->ndim - 1 - i;
	return tensor_value(tensor_permute(x, perm, x->ndim));
}

static value impl_unsqueeze(int op, const value *a)
{
	tensor *x = targ(op, a, 0);
	int dim;
	if (!x || ops_dim(opname(op), a[1], x->ndim + 1, &dim) < 0)
		return val_err();
	return tensor_value(tensor_unsqueeze(x, dim));
}

static value impl_squeeze(int op, const value *a)
{
	tensor *x = targ(op, a, 0);
	int dim = TENSOR_ALL_DIMS;
	if (!x || (a[1].tag != VAL_NONE && ops_dim(opname(op), a[1], x->ndim, &dim) < 0))
		return val_err();
	if (x->ndim == 0)
		return tensor_value(ag_alias(x));
	return tensor_value(tensor_squeeze(x, dim));
}

int ops_flatten_dims(int op, const tensor *x, const value *a, int *s, int *e)
{
	if (ops_dim(opname(op), a[1], x->ndim, s) < 0 || ops_dim(opname(op), a[2], x->ndim, e) < 0)
		return -1;
	if (x->ndim > 0 && *s > *e) {
		tj_error_set("flatten() has invalid args: start_dim cannot come after end_dim");
		return -1;
	}
	return 0;
}

static value impl_flatten(int op, const value *a)
{
	tensor *x = targ(op, a, 0);
	int s, e;
	if (!x || ops_flatten_dims(op, x, a, &s, &e) < 0)
		return val_err();
	if (x->ndim == 0) {
		int64_t one = 1;
		return tensor_value(tensor_reshape(x, 1, &one));
	}
	int64_t shape[TENSOR_MAX_DIMS];
	int n = 0;
	for (int i = 0; i < s; i++)
		shape[n++] = x->shape[i];
	int64_t m = 1;
	for (int i = s; i <= e; i++)
		m *= x->shape[i];
	shape[n++] = m;
	for (int i = e + 1; i < x->ndim; i++)
		shape[n++] = x->shape[i];
	return tensor_value(tensor_reshape(x, n, shape));
}

static value impl_expand(int op, const value *a)
{
	tensor *x = targ(op, a, 0);
	int ndim;
	int64_t shape[TENSOR_MAX_DIMS];
	if (!x || ops_shape(opname(op), "size", a[1], &ndim, shape) < 0)
		return val_err();
	return tensor_value(tensor_expand(x, ndim, shape));
}

/* the tensors of cat/stack (borrowed) into xs; n receives their count */
tensor **ops_tensor_list(int op, value v, int *n)
{
	if (!is_seq(v)) {
		tj_error_set("%s(): argument 'tensors' must be tuple of Tensors, not %s", opname(op), val_type_name(v));
		return NULL;
	}
	size_t len = seq_len(v);
	if (len == 0) {
		tj_error_set("%s(): expected a non-empty list of Tensors", opname(op));
		return NULL;
	}
	tensor **xs = malloc(len * sizeof *xs);
	if (!xs) {
		tj_error_set("out of memory");
		return NULL;
	}
	for (size_t i = 0; i < len; i++) {
		value it = seq_items(v)[i];
		if (it.tag != VAL_TENSOR) {
			tj_error_set("%s(): expected Tensor as element %zu in argument 0, but got %s", opname(op), i,
				     val_type_name(it));
			free(xs);
			return NULL;
		}
		xs[i] = val_as_tensor(it);
	}
	*n = (int)len;
	return xs;
}

static value impl_cat(int op, const value *a)
{
	int n, dim;
	tensor **xs = ops_tensor_list(op, a[0], &n), *r = NULL;
	if (!xs)
		return val_err();
	if (ops_dim(opname(op), a[1], xs[0]->ndim, &dim) == 0)
		r = tensor_cat(xs, n, dim);
	free(xs);
	return tensor_value(r);
}

static value impl_stack(int op, const value *a)
{
	int n, dim;
	tensor **xs = ops_tensor_list(op, a[0], &n), *r = NULL;
	if (!xs)
		return val_err();
	if (ops_dim(opname(op), a[1], xs[0]->ndim + 1, &dim) == 0)
		r = tensor_stack(xs, n, dim);
	free(xs);
	return tensor_value(r);
}

static value impl_getitem(int op, const value *a)
{
	tensor *x = targ(op, a, 0);
	struct index_spec specs[OPS_MAX_INDEX];
	int n;
	if (!x || ops_index_specs(a[1], specs, &n, OPS_MAX_INDEX) < 0)
		return val_err();
	return tensor_value(tensor_index(x, specs, n));
}

static value impl_clone(int op, const value *a)
{
	tensor *x = targ(op, a, 0);
	return x ? tensor_value(tensor_copy(x)) : val_err();
}

/* ---- dtype conversion ---- */

int ops_to_dtype(int op, const value *a, int *dt)
{
	*dt = op_aux[op];
	if (*dt >= 0)
		return 0;
	if (a[1].tag == VAL_TENSOR)
		*dt = val_as_tensor(a[1])->dt;
	else if (dtype_arg(op, a[1], dt) < 0)
		return -1;
	if (*dt < 0) {
		tj_error_set("to(): expected a dtype");
		return -1;
	}
	return 0;
}

static value impl_to(int op, const value *a)
{
	tensor *x = targ(op, a, 0);
	int dt;
	if (!x || ops_to_dtype(op, a, &dt) < 0)
		return val_err();
	if ((dtype)dt == x->dt)
		return tensor_value(ag_alias(x));
	return tensor_value(tensor_to(x, (dtype)dt));
}

/* ---- autograd ---- */

static value impl_detach(int op, const value *a)
{
	tensor *x = targ(op, a, 0);
	return x ? tensor_value(ag_alias(x)) : val_err();
}

static value impl_requires_grad_(int op, const value *a)
{
	tensor *x = targ(op, a, 0), *r;
	bool flag;
	if (!x || ops_requires_grad_arg(op, a[1], x->dt, &flag) < 0)
		return val_err();
	if (!(r = ag_alias(x)))
		return val_err();
	r->requires_grad = flag;
	return val_tensor(r);
}

static value impl_backward(int op, const value *a)
{
	tensor *x = targ(op, a, 0), *g = NULL;
	bool retain = false;
	if (!x)
		return val_err();
	if (a[1].tag != VAL_NONE && !(g = targ(op, a, 1)))
		return val_err();
	if (a[2].tag != VAL_NONE && bool_arg(op, a, 2, &retain) < 0)
		return val_err();
	if (ag_backward(x, g, retain) < 0)
		return val_err();
	return val_none();
}

/* ---- metadata and data ---- */

static value impl_numel(int op, const value *a)
{
	tensor *x = targ(op, a, 0);
	return x ? val_int(x->numel) : val_err();
}

static value impl_ndim(int op, const value *a)
{
	tensor *x = targ(op, a, 0);
	return x ? val_int(x->ndim) : val_err();
}

static value shape_tuple(const tensor *x)
{
	value t = tuple_new(x->ndim);
	for (int i = 0; i < x->ndim; i++)
		val_tuple(t)->items[i] = val_int(x->shape[i]);
	return t;
}

static value impl_size(int op, const value *a)
{
	tensor *x = targ(op, a, 0);
	int dim;
	if (!x)
		return val_err();
	if (ops_nparams(op) < 2 || a[1].tag == VAL_NONE)
		return shape_tuple(x);
	if (ops_dim(opname(op), a[1], x->ndim, &dim) < 0)
		return val_err();
	if (x->ndim == 0) {
		tj_error_set("size(): a 0-d tensor has no dimensions");
		return val_err();
	}
	return val_int(x->shape[dim]);
}

static value impl_item(int op, const value *a)
{
	tensor *x = targ(op, a, 0);
	return x ? ops_item(a[0]) : val_err();
}

static value element_value(const tensor *t, int64_t i)
{
	switch (t->dt) {
	case DT_BOOL:
		return val_bool(tensor_get_int(t, i) != 0);
	case DT_INT64:
		return val_int(tensor_get_int(t, i));
	default:
		return val_float(tensor_get_double(t, i));
	}
}

static value tolist_rec(const tensor *t, int dim, int64_t *offset)
{
	if (dim == t->ndim)
		return element_value(t, (*offset)++);
	value l = list_new((size_t)t->shape[dim]);
	for (int64_t i = 0; i < t->shape[dim]; i++)
		list_append(val_list(l), tolist_rec(t, dim + 1, offset));
	return l;
}

static value impl_tolist(int op, const value *a)
{
	tensor *x = targ(op, a, 0);
	int64_t offset = 0;
	return x ? tolist_rec(x, 0, &offset) : val_err();
}

static value impl_dtype(int op, const value *a)
{
	tensor *x = targ(op, a, 0);
	return x ? val_dtype(x->dt) : val_err();
}

static value impl_grad(int op, const value *a)
{
	tensor *x = targ(op, a, 0);
	if (!x)
		return val_err();
	if (!x->grad)
		return val_none();
	tensor_incref(x->grad);
	return val_tensor(x->grad);
}

static value impl_flag(int op, const value *a)
{
	tensor *x = targ(op, a, 0);
	if (!x)
		return val_err();
	return val_bool(op_aux[op] ? x->is_leaf : x->requires_grad);
}

/* ---- extension functions ---- */

static value impl_ext(int op, const value *a)
{
	tensor *x = targ(op, a, 0);
	if (!x)
		return val_err();
	return tensor_value(op_aux[op] ? tensor_ext_cumsum(x) : tensor_ext_sort(x));
}

static value impl_ext_clip(int op, const value *a)
{
	tensor *x = targ(op, a, 0);
	double lo, hi;
	if (!x || arg_float(opname(op), "lo", a[1], &lo) < 0 || arg_float(opname(op), "hi", a[2], &hi) < 0)
		return val_err();
	return tensor_value(tensor_ext_clip(x, lo, hi));
}

/* ---- operators and attributes (the VM's entry points) ---- */

static bool operand_ok(value v) { return v.tag == VAL_TENSOR || is_number(v); }

value ops_binary(enum vm_binop op, value a, value b)
{
	if ((unsigned)op >= VB_COUNT || !operand_ok(a) || !operand_ok(b) ||
	    (op == VB_MATMUL && (a.tag != VAL_TENSOR || b.tag != VAL_TENSOR))) {
		tj_error_set("unsupported operand type(s) for %s: '%s' and '%s'",
			     (unsigned)op < VB_COUNT ? binop_symbols[op] : "?", val_type_name(a), val_type_name(b));
		return val_err();
	}
	value args[2] = {a, b};
	return ops_call(binop_ops[op], args);
}

/* x in t: any element equal */
static value contains(value container, value item)
{
	value args[2] = {container, item};
	value eq = ops_call(OPS_eq, args);
	if (val_is_err(eq))
		return eq;
	tensor *e = val_as_tensor(eq);
	bool any = false;
	for (int64_t i = 0; i < e->numel && !any; i++)
		any = tensor_get_int(e, i) != 0;
	val_decref(eq);
	return val_bool(any);
}

value ops_compare(enum vm_cmpop op, value a, value b)
{
	switch (op) {
	case VC_IS:
	case VC_IS_NOT: {
		bool same = a.tag == b.tag && (a.tag >= VAL_FIRST_HEAP ? a.o == b.o : a.i == b.i);
		return val_bool(op == VC_IS ? same : !same);
	}
	case VC_IN:
	case VC_NOT_IN: {
		if (b.tag != VAL_TENSOR || !operand_ok(a)) {
			tj_error_set("'%s' in '%s' is not supported", val_type_name(a), val_type_name(b));
			return val_err();
		}
		value r = contains(b, a);
		if (!val_is_err(r) && op == VC_NOT_IN)
			r.b = !r.b;
		return r;
	}
	default:
		break;
	}
	if ((unsigned)op >= VC_COUNT)
		return val_err();
	if (!operand_ok(a) || !operand_ok(b)) {
		if (op == VC_EQ || op == VC_NE)
			return val_bool(op == VC_NE);
		tj_error_set("'%s' not supported between instances of '%s' and '%s'", cmpop_symbols[op],
			     val_type_name(a), val_type_name(b));
		return val_err();
	}
	value args[2] = {a, b};
	return ops_call(cmpop_ops[op], args);
}

value ops_unary_neg(value a)
{
	return ops_call(OPS_neg, &a);
}

value ops_subscript(value self, value index)
{
	value args[2] = {self, index};
	return ops_call(OPS_getitem, args);
}

/* the builtin objects behind methods, made on first use (they live for the run) */
static value method_cache[OPS_COUNT];

value ops_getattr(value self, struct str *name)
{
	/* a small cache from the (interned) name to the row */
	static struct {
		const struct str *name;
		int op;
	} cache[64];
	size_t slot = ((uintptr_t)name >> 4) % 64;
	int op = -1;

	if (cache[slot].name == name && strcmp(ops_table[cache[slot].op].name, name->data) == 0) {
		op = cache[slot].op;
	} else {
		op = ops_find(name->data, OPK_METH | OPK_ATTR);
		if (op >= 0) {
			cache[slot].name = name;
			cache[slot].op = op;
		}
	}
	if (op < 0) {
		tj_error_set("'Tensor' object has no attribute '%s'", name->data);
		return val_err();
	}
	if (ops_table[op].kind & OPK_ATTR)
		return ops_call(op, &self);
	if (method_cache[op].tag != VAL_BUILTIN) {
		value fn = builtin_new(opname(op), op_fns[op]);
		if (val_is_err(fn))
			return fn;
		method_cache[op] = fn;
	}
	return bound_new(self, method_cache[op]);
}

int ops_truth(value self, bool *out)
{
	tensor *t = val_as_tensor(self);
	if (t->numel != 1) {
		tj_error_set(t->numel == 0 ? "Boolean value of Tensor with no values is ambiguous"
					   : "Boolean value of Tensor with more than one value is ambiguous");
		return -1;
	}
	*out = t->dt == DT_BOOL || t->dt == DT_INT64 ? tensor_get_int(t, 0) != 0 : tensor_get_double(t, 0) != 0;
	return 0;
}

value ops_item(value self)
{
	tensor *t = val_as_tensor(self);
	double d;
	int64_t i;
	if (tensor_item(t, &d, &i) < 0)
		return val_err();
	switch (t->dt) {
	case DT_BOOL:
		return val_bool(i != 0);
	case DT_INT64:
		return val_int(i);
	default:
		return val_float(d);
	}
}

value ops_builtin_abs(value t)
{
	return ops_call(OPS_abs, &t);
}

value ops_builtin_round(value t, value decimals)
{
	value a[2] = {t, decimals};
	return ops_call(OPS_round, a);
}
