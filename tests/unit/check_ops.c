/* check_ops.c - tensor operations as tj values see them (core/tensor/ops.c,
 * core/lang/args.c): the op table, argument parsing, tensor() inference,
 * creation functions, attributes and methods, operators with Python
 * scalars and type promotion, indexing, conversions.
 */
#include <check.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "autograd.h"
#include "error.h"
#include "ops.h"
#include "ops_test_util.h"
#include "vm.h"

/* ---- values that live until the end of a test ---- */

#define ARENA_MAX 4096
static value arena[ARENA_MAX];
static size_t narena;

static value R(value v)
{
	ck_assert_msg(!val_is_err(v), "unexpected error: %s", tj_error_peek() ? tj_error_peek() : "?");
	ck_assert(narena < ARENA_MAX);
	arena[narena++] = v;
	return v;
}

static void setup(void)
{
	tj_error_clear();
	rng_manual_seed(7);
}

static void teardown(void)
{
	while (narena)
		val_decref(arena[--narena]);
	tj_error_clear();
}

static value I(int64_t i) { return val_int(i); }
static value F(double f) { return val_float(f); }
static value B(bool b) { return val_bool(b); }
static value NONE(void) { return val_none(); }
static value S(const char *s) { return R(str_from_cstr(s)); }
static tensor *TT(value v) { return val_as_tensor(v); }

static value tup_v(int n, const value *items) { return R(tuple_pack(n, items)); }
#define TUP(...) tup_v((int)(sizeof((value[]){__VA_ARGS__}) / sizeof(value)), (value[]){__VA_ARGS__})
static value list_v(int n, const value *items)
{
	value l = R(list_new(n));
	for (int i = 0; i < n; i++) {
		val_incref(items[i]);
		list_append(val_list(l), items[i]);
	}
	return l;
}
#define LIST(...) list_v((int)(sizeof((value[]){__VA_ARGS__}) / sizeof(value)), (value[]){__VA_ARGS__})
#define EMPTY_LIST() R(list_new(0))

#define ARGS(...) (int)(sizeof((value[]){__VA_ARGS__}) / sizeof(value)), (value[]){__VA_ARGS__}
/* C(name, kw, args...): must succeed; CE(...): must fail with msg */
#define C(name, kw, ...) R(vcall(name, kw, ARGS(__VA_ARGS__)))
#define C0(name) R(vcall(name, NULL, 0, NULL))

static void expect_error_(value r, const char *msg, int line)
{
	ck_assert_msg(val_is_err(r), "line %d: expected the error \"%s\"", line, msg);
	char *got = tj_error_take();
	ck_assert_ptr_nonnull(got);
	ck_assert_msg(strcmp(got, msg) == 0, "line %d: expected \"%s\", got \"%s\"", line, msg, got);
	free(got);
}
#define expect_error(r, msg) expect_error_((r), (msg), __LINE__)
/* an int status as a value for expect_error */
static value val_err_if(int rc) { return rc < 0 ? val_err() : val_none(); }
#define CE(msg, name, kw, ...) expect_error(vcall(name, kw, ARGS(__VA_ARGS__)), msg)

static void check_shape_(value v, int ndim, const int64_t *shape, int line)
{
	ck_assert_msg(v.tag == VAL_TENSOR, "line %d: not a tensor", line);
	ck_assert_msg(shape_equal(TT(v)->ndim, TT(v)->shape, ndim, shape), "line %d: wrong shape", line);
}
#define check_shape(v, ...) \
	check_shape_((v), (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__}, __LINE__)
#define check_shape0(v) check_shape_((v), 0, NULL, __LINE__)

static void check_vals_(value v, int n, const double *vals, int line)
{
	ck_assert_msg(TT(v)->numel == n, "line %d: %lld elements, expected %d", line, (long long)TT(v)->numel, n);
	for (int i = 0; i < n; i++)
		ck_assert_msg(fabs(tensor_get_double(TT(v), i) - vals[i]) <= 1e-6 * (1 + fabs(vals[i])),
			      "line %d: element %d is %g, expected %g", line, i, tensor_get_double(TT(v), i), vals[i]);
}
#define check_vals(v, ...) \
	check_vals_((v), (int)(sizeof((double[]){__VA_ARGS__}) / sizeof(double)), (double[]){__VA_ARGS__}, __LINE__)

static value getattr(value self, const char *name)
{
	value s = S(name);
	return ops_getattr(self, val_str(s));
}

/* self.name(args...) through the bound method ops_getattr returns */
static value meth(value self, const char *name, const char *kw, int n, const value *rest)
{
	value m = getattr(self, name);
	ck_assert_msg(!val_is_err(m), "no method %s: %s", name, tj_error_peek());
	ck_assert_int_eq(m.tag, VAL_BOUND);
	struct bound *b = (struct bound *)m.o;
	value args[8] = {b->self};
	for (int i = 0; i < n; i++)
		args[i + 1] = rest[i];
	value kwnames = val_none();
	if (kw) {
		value name_v = str_from_cstr(kw);
		kwnames = tuple_pack(1, &name_v);
		val_decref(name_v);
	}
	value r = ((struct builtin *)b->fn.o)->fn(NULL, args, n + 1, kwnames);
	val_decref(kwnames);
	val_decref(m);
	return r;
}
#define M(self, name, ...) R(meth(self, name, NULL, ARGS(__VA_ARGS__)))
#define M0(self, name) R(meth(self, name, NULL, 0, NULL))

/* ---- the table ---- */

START_TEST(test_table)
{
	bool seen[OPS_COUNT] = {false};
	for (const struct builtin_def *d = ops_functions; d->name; d++) {
		int op = ops_find(d->name, OPK_FN);
		ck_assert_msg(op >= 0, "%s", d->name);
		ck_assert_msg(!seen[op], "%s twice", d->name);
		seen[op] = true;
		ck_assert_int_eq(ops_of_builtin(d->fn), op);
		ck_assert(!(ops_table[op].flags & OPF_PYBUILTIN));
	}
	for (int op = 0; op < OPS_COUNT; op++) {
		ck_assert(ops_table[op].kind != 0);
		ck_assert_int_gt(ops_nparams(op), 0);
		if ((ops_table[op].kind & OPK_FN) && !(ops_table[op].flags & OPF_PYBUILTIN))
			ck_assert_msg(seen[op], "%s is missing from ops_functions", ops_table[op].name);
	}
	/* the Python builtins are not there: the VM delegates */
	static const char *const py[] = {"abs", "max", "min", "round"};
	for (int i = 0; i < 4; i++)
		for (const struct builtin_def *d = ops_functions; d->name; d++)
			ck_assert_str_ne(d->name, py[i]);
	ck_assert_int_eq(ops_of_builtin(ops_builtin_max), OPS_max);
	ck_assert_int_eq(ops_of_binop(VB_ADD), OPS_add);
	ck_assert_int_eq(ops_of_binop(VB_MATMUL), OPS_matmul);
	ck_assert_int_eq(ops_of_cmpop(VC_GE), OPS_ge);
	ck_assert_int_eq(ops_of_cmpop(VC_IS), -1);
	ck_assert_str_eq(ops_param_name(OPS_sum, 1), "dim");
	ck_assert_int_eq(ops_nparams(OPS_zeros), 3);
	ck_assert(ops_table[OPS_ext_sort].flags & OPF_OPAQUE);
	ck_assert(!(ops_table[OPS_ext_sort].flags & OPF_DIFF));
	ck_assert(ops_table[OPS_randn].flags & OPF_RANDOM);
	ck_assert(ops_table[OPS_exp].flags & OPF_POINTWISE);
	ck_assert_int_eq(ops_find("T", OPK_ATTR), OPS_T);
	ck_assert_int_eq(ops_find("T", OPK_FN), -1);
}
END_TEST

START_TEST(test_signature)
{
	/* what the tracer binds a call against: names, defaults, the *vararg */
	const struct ops_sig *s = ops_signature(OPS_sum);
	ck_assert_int_eq(s->n, 4);
	ck_assert_int_eq(s->vararg, -1);
	ck_assert_int_eq(s->nrequired, 1);
	ck_assert_str_eq(s->names[0], "input");
	ck_assert_str_eq(s->names[2], "keepdim");
	ck_assert_int_eq(s->defaults[1].tag, VAL_NONE);
	ck_assert_int_eq(s->defaults[2].tag, VAL_BOOL);
	ck_assert(!s->defaults[2].b);
	s = ops_signature(OPS_zeros);
	ck_assert_int_eq(s->n, 3);
	ck_assert_int_eq(s->vararg, 0);
	ck_assert_int_eq(s->nrequired, 0);
	ck_assert_str_eq(s->names[0], "size");
	ck_assert_str_eq(s->names[1], "dtype");
	ck_assert_str_eq(s->plain[0], "dtype");
	ck_assert_ptr_null(s->plain[2]);
	s = ops_signature(OPS_reshape);
	ck_assert_int_eq(s->vararg, 1);
	ck_assert_int_eq(s->nrequired, 1);
	ck_assert_str_eq(s->names[1], "shape");
}
END_TEST

START_TEST(test_normalize)
{
	value out[8];
	/* *size: ints, or one tuple or list alone; keyword-only after it */
	value a1[] = {I(2), I(3), val_dtype(DT_FLOAT64)};
	value kw = TUP(S("dtype"));
	ck_assert_int_eq(ops_normalize(OPS_zeros, a1, 3, kw, out), 0);
	ck_assert_int_eq(out[0].tag, VAL_TUPLE);
	ck_assert_int_eq(val_tuple(out[0])->len, 2);
	ck_assert_int_eq(out[1].tag, VAL_DTYPE);
	ck_assert_int_eq(out[2].tag, VAL_BOOL);
	ops_args_release(OPS_zeros, out);
	value a2[] = {LIST(I(4), I(5))};
	ck_assert_int_eq(ops_normalize(OPS_zeros, a2, 1, NONE(), out), 0);
	ck_assert_int_eq(val_tuple(out[0])->len, 2);
	ck_assert_int_eq(val_tuple(out[0])->items[1].i, 5);
	ops_args_release(OPS_zeros, out);
	/* defaults filled */
	value x = R(val_tensor(tensor_zeros(DT_FLOAT32, 1, (int64_t[]){3})));
	ck_assert_int_eq(ops_normalize(OPS_sum, &x, 1, NONE(), out), 0);
	ck_assert_int_eq(out[1].tag, VAL_NONE);
	ck_assert(out[2].tag == VAL_BOOL && !out[2].b);
	value r = ops_call(OPS_sum, out);
	ops_args_release(OPS_sum, out);
	check_shape0(R(r));
}
END_TEST

START_TEST(test_args_parse)
{
	static const char *const params[] = {"x", "dim", "keepdim", NULL};
	value out[3];
	value args[] = {I(1), I(2), B(true)};
	ck_assert_int_eq(args_parse("f", args, 1, NONE(), params, 1, out), 0);
	out[1] = val_none();
	out[2] = B(false);
	ck_assert_int_eq(args_parse("f", args, 2, TUP(S("keepdim")), params, 1, out), 0);
	ck_assert(out[2].tag == VAL_INT && out[1].tag == VAL_NONE);
	expect_error(val_err_if(args_parse("f", args, 3, TUP(S("dims")), params, 1, out)),
		     "f() got an unexpected keyword argument 'dims'");
	expect_error(val_err_if(args_parse("f", args, 2, TUP(S("x")), params, 1, out)),
		     "f() got multiple values for argument 'x'");
	expect_error(val_err_if(args_parse("f", args, 1, TUP(S("dim")), params, 1, out)),
		     "f() missing required argument 'x'");
	value many[] = {I(1), I(2), I(3), I(4)};
	expect_error(val_err_if(args_parse("f", many, 4, NONE(), params, 1, out)),
		     "f() takes at most 3 arguments (4 given)");
	int64_t i;
	double d;
	bool b;
	ck_assert(arg_int("f", "n", B(true), &i) == 0 && i == 1);
	ck_assert(arg_float("f", "v", I(3), &d) == 0 && d == 3.0);
	ck_assert(arg_bool("f", "b", B(true), &b) == 0 && b);
	expect_error(val_err_if(arg_int("f", "n", F(1.5), &i)), "f(): argument 'n' must be int, not float");
	expect_error(val_err_if(arg_float("f", "v", S("x"), &d)), "f(): argument 'v' must be float, not str");
	expect_error(val_err_if(arg_bool("f", "b", I(1), &b)), "f(): argument 'b' must be bool, not int");
}
END_TEST

START_TEST(test_op_arg_errors)
{
	value x = R(val_tensor(tensor_zeros(DT_FLOAT32, 2, (int64_t[]){2, 3})));
	CE("sum() got an unexpected keyword argument 'dims'", "sum", "dims", x, I(1));
	CE("sum() missing required argument 'input'", "sum", "dim", I(1));
	CE("sum() takes at most 4 arguments (5 given)", "sum", NULL, x, I(1), B(true), NONE(), I(3));
	CE("transpose() missing required argument 'dim1'", "transpose", NULL, x, I(0));
	CE("sum() got multiple values for argument 'input'", "sum", "input", x, x);
	CE("exp(): argument 'input' (position 1) must be Tensor, not float", "exp", NULL, F(1.0));
	CE("sum(): argument 'dim' must be int or tuple of ints, not str", "sum", NULL, x, S("a"));
	CE("dimension out of range (expected to be in range of [-2, 1], but got 2)", "sum", NULL, x, I(2));
	CE("dim 1 appears multiple times in the list of dims", "sum", NULL, x, TUP(I(1), I(-1)));
	CE("sum(): argument 'keepdim' must be bool, not int", "sum", NULL, x, I(0), I(1));
	CE("zeros(): argument 'dtype' must be dtype, not str", "zeros", "dtype", I(2), S("float"));
	CE("zeros(): argument 'size' must be tuple of ints, but found element of type float at pos 1", "zeros",
	   NULL, I(2), F(2.0));
	CE("trying to create tensor with negative dimension -1: [2, -1]", "zeros", NULL, I(2), I(-1));
	CE("max(): argument 'dim' must be int, not tuple", "max", NULL, x, TUP(I(0)));
	CE("cat(): expected a non-empty list of Tensors", "cat", NULL, EMPTY_LIST());
	CE("cat(): expected Tensor as element 1 in argument 0, but got int", "cat", NULL, LIST(x, I(1)));
	CE("permute(): number of dims don't match (the tensor has 2, got 1)", "permute", NULL, x, I(0));
	CE("clamp(): at least one of 'min' or 'max' must not be None", "clamp", NULL, x);
	CE("arange(): step must be nonzero", "arange", NULL, I(0), I(3), I(0));
	CE("arange(): upper bound and larger bound inconsistent with step sign", "arange", NULL, I(0), I(3), I(-1));
	CE("randn(): expected a floating point dtype, got int64", "randn", "dtype", I(2), val_dtype(DT_INT64));
	CE("eye(): n must be greater or equal to 0, got -1", "eye", NULL, I(-1));
	value it = R(val_tensor(tensor_zeros(DT_INT64, 1, (int64_t[]){2})));
	CE("negation, the `-` operator, on a bool tensor is not supported; use logical_not() to invert a mask",
	   "neg", NULL, R(ops_compare(VC_LT, it, I(1))));
}
END_TEST

/* ---- tensor() ---- */

START_TEST(test_tensor_inference)
{
	value f = C("tensor", NULL, LIST(F(1.5), I(2)));
	ck_assert_int_eq(TT(f)->dt, DT_FLOAT32);
	check_vals(f, 1.5, 2);
	value i = C("tensor", NULL, LIST(LIST(I(1), I(2)), LIST(I(3), B(true))));
	ck_assert_int_eq(TT(i)->dt, DT_INT64);
	check_shape(i, 2, 2);
	check_vals(i, 1, 2, 3, 1);
	value b = C("tensor", NULL, TUP(B(true), B(false)));
	ck_assert_int_eq(TT(b)->dt, DT_BOOL);
	value s = C("tensor", NULL, F(3.5));
	check_shape0(s);
	ck_assert_int_eq(TT(s)->dt, DT_FLOAT32);
	ck_assert_int_eq(TT(C("tensor", NULL, I(7)))->dt, DT_INT64);
	value e = C("tensor", NULL, EMPTY_LIST());
	check_shape(e, 0);
	ck_assert_int_eq(TT(e)->dt, DT_FLOAT32);
	check_shape(C("tensor", NULL, LIST(EMPTY_LIST())), 1, 0);
	/* exact int64 */
	value big = C("tensor", NULL, LIST(I(INT64_MAX)));
	ck_assert(tensor_get_int(TT(big), 0) == INT64_MAX);
	/* one-element tensors as elements: their dtype counts */
	value d = R(val_tensor(tensor_scalar(DT_FLOAT64, 2.5)));
	value t = C("tensor", NULL, LIST(d, I(1)));
	ck_assert_int_eq(TT(t)->dt, DT_FLOAT64);
	value t2 = C("tensor", NULL, LIST(C("tensor", NULL, I(4)), I(1)));
	ck_assert_int_eq(TT(t2)->dt, DT_INT64);
	/* dtype= and requires_grad= */
	value c = C("tensor", "dtype", LIST(F(1.7), F(-1.7)), val_dtype(DT_INT64));
	check_vals(c, 1, -1);
	ck_assert_int_eq(TT(C("tensor", "dtype", LIST(I(1)), val_type(VAL_FLOAT)))->dt, DT_FLOAT64);
	ck_assert_int_eq(TT(C("tensor", "dtype", LIST(I(1)), val_type(VAL_INT)))->dt, DT_INT64);
	ck_assert_int_eq(TT(C("tensor", "dtype", LIST(I(2), I(0)), val_type(VAL_BOOL)))->dt, DT_BOOL);
	value g = C("tensor", "requires_grad", LIST(F(1)), B(true));
	ck_assert(TT(g)->requires_grad && TT(g)->is_leaf);
	/* a tensor: a copy */
	value copy = C("tensor", NULL, f);
	ck_assert_ptr_ne(TT(copy)->data, TT(f)->data);
	check_vals(copy, 1.5, 2);
	/* errors */
	CE("expected sequence of length 2 at dim 1 (got 3)", "tensor", NULL,
	   LIST(LIST(I(1), I(2)), LIST(I(3), I(4), I(5))));
	CE("expected sequence of length 2 at dim 1 (got int)", "tensor", NULL, LIST(LIST(I(1), I(2)), I(3)));
	CE("tensor(): expected a number at dim 1 (got list)", "tensor", NULL, LIST(I(1), LIST(I(2))));
	CE("tensor(): invalid data type 'str'", "tensor", NULL, LIST(S("a")));
	CE("only one element tensors can be converted to Python scalars", "tensor", NULL, LIST(f));
	CE("only Tensors of floating point dtype can require gradients", "tensor", "requires_grad", LIST(I(1)), B(true));
}
END_TEST

/* ---- creation ---- */

START_TEST(test_creation)
{
	value z = C("zeros", NULL, I(2), I(3));
	check_shape(z, 2, 3);
	ck_assert_int_eq(TT(z)->dt, DT_FLOAT32);
	check_shape(C("zeros", NULL, TUP(I(2), I(3))), 2, 3);
	check_shape(C("ones", NULL, LIST(I(4))), 4);
	check_shape0(C0("zeros"));
	value o = C("ones", "dtype", I(2), val_dtype(DT_INT64));
	ck_assert_int_eq(TT(o)->dt, DT_INT64);
	check_vals(o, 1, 1);
	ck_assert_int_eq(TT(C("ones", "dtype", I(1), val_type(VAL_FLOAT)))->dt, DT_FLOAT64);
	ck_assert_int_eq(TT(C("zeros", "dtype", I(1), val_type(VAL_BOOL)))->dt, DT_BOOL);
	value rg = R(vcall("ones", "requires_grad", 2, (value[]){I(2), B(true)}));
	ck_assert(TT(rg)->requires_grad);
	CE("only Tensors of floating point dtype can require gradients", "zeros", "dtype,requires_grad", I(2),
	   val_dtype(DT_INT64), B(true));

	/* full: dtype from the value */
	value fi = C("full", NULL, TUP(I(2), I(2)), I(7));
	ck_assert_int_eq(TT(fi)->dt, DT_INT64);
	check_vals(fi, 7, 7, 7, 7);
	ck_assert_int_eq(TT(C("full", NULL, I(3), F(2.5)))->dt, DT_FLOAT32);
	ck_assert_int_eq(TT(C("full", NULL, LIST(I(3)), B(true)))->dt, DT_BOOL);
	ck_assert_int_eq(TT(C("full", "dtype", I(3), I(1), val_dtype(DT_FLOAT64)))->dt, DT_FLOAT64);

	/* arange */
	value a = C("arange", NULL, I(5));
	ck_assert_int_eq(TT(a)->dt, DT_INT64);
	check_vals(a, 0, 1, 2, 3, 4);
	check_vals(C("arange", NULL, I(2), I(8), I(2)), 2, 4, 6);
	value af = C("arange", NULL, F(0), F(1), F(0.25));
	ck_assert_int_eq(TT(af)->dt, DT_FLOAT32);
	check_vals(af, 0, 0.25, 0.5, 0.75);
	check_vals(C("arange", NULL, I(5), I(0), I(-2)), 5, 3, 1);
	ck_assert_int_eq(TT(C("arange", NULL, I(1), F(3)))->dt, DT_FLOAT32);
	ck_assert_int_eq(TT(C("arange", "dtype", I(3), val_dtype(DT_FLOAT64)))->dt, DT_FLOAT64);

	value e = C("eye", NULL, I(2));
	check_vals(e, 1, 0, 0, 1);
	ck_assert_int_eq(TT(C("eye", "dtype", I(2), val_dtype(DT_INT64)))->dt, DT_INT64);

	/* random: the seed reproduces the draws */
	C("manual_seed", NULL, I(3));
	value r1 = C("randn", NULL, I(2), I(3));
	C("manual_seed", NULL, I(3));
	value r2 = C("randn", NULL, TUP(I(2), I(3)));
	for (int k = 0; k < 6; k++)
		ck_assert(tensor_get_double(TT(r1), k) == tensor_get_double(TT(r2), k));
	value u = C("rand", NULL, I(1000));
	for (int k = 0; k < 1000; k++)
		ck_assert(tensor_get_double(TT(u), k) >= 0 && tensor_get_double(TT(u), k) < 1);
	ck_assert_int_eq(TT(C("randn", "dtype", I(2), val_dtype(DT_FLOAT64)))->dt, DT_FLOAT64);
	ck_assert(TT(R(vcall("rand", "requires_grad", 2, (value[]){I(2), B(true)})))->requires_grad);

	/* *_like */
	value zl = C("zeros_like", NULL, fi);
	check_shape(zl, 2, 2);
	ck_assert_int_eq(TT(zl)->dt, DT_INT64);
	ck_assert_int_eq(TT(C("ones_like", "dtype", fi, val_dtype(DT_FLOAT32)))->dt, DT_FLOAT32);
}
END_TEST

/* ---- attributes and methods ---- */

START_TEST(test_attributes)
{
	value x = C("tensor", NULL, LIST(LIST(F(1), F(2), F(3)), LIST(F(4), F(5), F(6))));
	value shape = R(getattr(x, "shape"));
	ck_assert_int_eq(shape.tag, VAL_TUPLE);
	ck_assert(val_tuple(shape)->len == 2 && val_tuple(shape)->items[0].i == 2 && val_tuple(shape)->items[1].i == 3);
	value dt = R(getattr(x, "dtype"));
	ck_assert(dt.tag == VAL_DTYPE && dt.i == DT_FLOAT32);
	ck_assert_int_eq(R(getattr(x, "ndim")).i, 2);
	ck_assert_int_eq(R(getattr(x, "grad")).tag, VAL_NONE);
	ck_assert(!R(getattr(x, "requires_grad")).b);
	ck_assert(R(getattr(x, "is_leaf")).b);
	value t = R(getattr(x, "T"));
	check_shape(t, 3, 2);
	check_vals(t, 1, 4, 2, 5, 3, 6);
	expect_error(getattr(x, "foo"), "'Tensor' object has no attribute 'foo'");
	/* methods come back bound */
	ck_assert_int_eq(M0(x, "numel").i, 6);
	ck_assert_int_eq(M0(x, "dim").i, 2);
	ck_assert_int_eq(M(x, "size", I(-1)).i, 3);
	value s = M(x, "sum", I(1));
	check_vals(s, 6, 15);
	check_shape(M(x, "reshape", I(3), I(2)), 3, 2);
	check_shape(M(x, "reshape", TUP(I(6))), 6);
	check_shape(M(x, "view", I(-1)), 6);
	check_shape(M(x, "permute", I(1), I(0)), 3, 2);
	check_shape(M(x, "expand", I(4), I(2), I(3)), 4, 2, 3);
	check_shape(M(x, "unsqueeze", I(1)), 2, 1, 3);
	check_shape(M0(M(x, "unsqueeze", I(0)), "squeeze"), 2, 3);
	ck_assert_int_eq(TT(M0(x, "double"))->dt, DT_FLOAT64);
	ck_assert_int_eq(TT(M0(x, "long"))->dt, DT_INT64);
	ck_assert_int_eq(TT(M0(x, "bool"))->dt, DT_BOOL);
	ck_assert_int_eq(TT(M(x, "to", val_dtype(DT_INT64)))->dt, DT_INT64);
	ck_assert_int_eq(TT(M(x, "to", val_type(VAL_FLOAT)))->dt, DT_FLOAT64);
	value same = M(x, "to", val_dtype(DT_FLOAT32));
	ck_assert_ptr_ne(TT(same), TT(x)); /* tensors are immutable: a new one all the same */
	/* tolist and item */
	value l = M0(x, "tolist");
	ck_assert_int_eq(l.tag, VAL_LIST);
	value row = val_list(l)->items[1];
	ck_assert(row.tag == VAL_LIST && val_list(row)->items[2].tag == VAL_FLOAT && val_list(row)->items[2].f == 6);
	value il = M0(C("arange", NULL, I(2)), "tolist");
	ck_assert_int_eq(val_list(il)->items[1].tag, VAL_INT);
	value bl = M0(C("tensor", NULL, B(true)), "tolist");
	ck_assert(bl.tag == VAL_BOOL && bl.b);
	value it = M0(C("tensor", NULL, LIST(I(7))), "item");
	ck_assert(it.tag == VAL_INT && it.i == 7);
	ck_assert_int_eq(R(ops_item(C("tensor", NULL, F(2.5)))).tag, VAL_FLOAT);
	ck_assert_int_eq(R(ops_item(C("tensor", NULL, B(false)))).tag, VAL_BOOL);
	expect_error(ops_item(x), "a Tensor with 6 elements cannot be converted to Scalar");
	bool truth;
	ck_assert_int_eq(ops_truth(C("tensor", NULL, LIST(F(0.5))), &truth), 0);
	ck_assert(truth);
	expect_error(val_err_if(ops_truth(x, &truth)), "Boolean value of Tensor with more than one value is ambiguous");
	expect_error(val_err_if(ops_truth(C("tensor", NULL, EMPTY_LIST()), &truth)),
		     "Boolean value of Tensor with no values is ambiguous");
}
END_TEST

START_TEST(test_reductions)
{
	value x = C("tensor", NULL, LIST(LIST(F(1), F(-2), F(3)), LIST(F(4), F(5), F(-6))));
	check_vals(C("sum", NULL, x), 5);
	check_shape(C("sum", "keepdim", x, I(0), B(true)), 1, 3);
	check_vals(C("sum", NULL, x, TUP(I(0), I(1))), 5);
	check_vals(C("mean", NULL, x, I(1)), 2.0 / 3, 1);
	check_vals(C("prod", NULL, x, I(1)), -6, -120);
	check_vals(C("var", NULL, x, I(1)), 19.0 / 3, 37);
	check_vals(C("var", "unbiased", x, I(1), B(false)), 38.0 / 9, 74.0 / 3);
	check_vals(C("var", "correction", x, I(1), I(0)), 38.0 / 9, 74.0 / 3);
	check_vals(C("argmax", NULL, x), 4);
	check_vals(C("argmin", NULL, x, I(1)), 1, 2);
	ck_assert_int_eq(TT(C("sum", NULL, C("arange", NULL, I(4))))->dt, DT_INT64);
	ck_assert_int_eq(TT(C("sum", "dtype", x, val_dtype(DT_FLOAT64)))->dt, DT_FLOAT64);
	/* max/min: full, with a dim (values, indices), with a tensor (maximum) */
	check_vals(C("max", NULL, x), 5);
	value mx = C("max", NULL, x, I(1));
	ck_assert(mx.tag == VAL_TUPLE && val_tuple(mx)->len == 2);
	check_vals(val_tuple(mx)->items[0], 3, 5);
	check_vals(val_tuple(mx)->items[1], 2, 1);
	ck_assert_int_eq(TT(val_tuple(mx)->items[1])->dt, DT_INT64);
	value mn = C("min", "keepdim", x, I(0), B(true));
	check_shape(val_tuple(mn)->items[0], 1, 3);
	value zero = R(val_tensor(tensor_scalar(DT_FLOAT32, 0)));
	check_vals(C("max", NULL, x, zero), 1, 0, 3, 4, 5, 0);
	value bm = R(ops_builtin_max(NULL, (value[]){x, I(0)}, 2, val_none()));
	check_vals(val_tuple(bm)->items[0], 4, 5, 3);
	check_vals(R(ops_builtin_min(NULL, &x, 1, val_none())), -6);
	/* softmax rows sum to 1 */
	value sm = C("softmax", NULL, x, I(1));
	check_vals(C("sum", NULL, sm, I(1)), 1, 1);
	value lsm = C("log_softmax", "dim", x, I(0));
	check_vals(C("sum", NULL, C("exp", NULL, lsm), I(0)), 1, 1, 1);
}
END_TEST

/* ---- operators with Python scalars, and promotion ---- */

START_TEST(test_scalars_promotion)
{
	value x = C("tensor", NULL, LIST(F(1), F(2)));
	value xi = C("tensor", NULL, LIST(I(1), I(2)));
	value xb = C("tensor", NULL, LIST(B(true), B(false)));
	value x64 = C("tensor", "dtype", LIST(F(1), F(2)), val_dtype(DT_FLOAT64));

	value r = R(ops_binary(VB_MUL, x, I(2)));
	ck_assert_int_eq(TT(r)->dt, DT_FLOAT32);
	check_vals(r, 2, 4);
	r = R(ops_binary(VB_POW, I(2), x));
	ck_assert_int_eq(TT(r)->dt, DT_FLOAT32);
	check_vals(r, 2, 4);
	r = R(ops_binary(VB_SUB, I(2), x));
	check_vals(r, 1, 0);
	r = R(ops_binary(VB_ADD, xi, F(1.5)));
	ck_assert_int_eq(TT(r)->dt, DT_FLOAT32);
	check_vals(r, 2.5, 3.5);
	r = R(ops_binary(VB_MUL, xi, I(3)));
	ck_assert_int_eq(TT(r)->dt, DT_INT64);
	check_vals(r, 3, 6);
	r = R(ops_binary(VB_ADD, xi, B(true)));
	ck_assert_int_eq(TT(r)->dt, DT_INT64);
	r = R(ops_binary(VB_TRUEDIV, xi, I(2)));
	ck_assert_int_eq(TT(r)->dt, DT_FLOAT32);
	check_vals(r, 0.5, 1);
	r = R(ops_binary(VB_ADD, x64, F(1.5)));
	ck_assert_int_eq(TT(r)->dt, DT_FLOAT64);
	r = R(ops_binary(VB_MUL, xb, I(2)));
	ck_assert_int_eq(TT(r)->dt, DT_INT64);
	r = R(ops_binary(VB_ADD, xb, F(0.5)));
	ck_assert_int_eq(TT(r)->dt, DT_FLOAT32);
	/* a 0-d tensor does not widen a dimensioned one within a category */
	r = R(ops_binary(VB_ADD, x, R(val_tensor(tensor_scalar(DT_FLOAT64, 1)))));
	ck_assert_int_eq(TT(r)->dt, DT_FLOAT32);
	r = R(ops_binary(VB_ADD, x, x64));
	ck_assert_int_eq(TT(r)->dt, DT_FLOAT64);
	r = R(ops_binary(VB_FLOORDIV, I(7), xi));
	check_vals(r, 7, 3);
	r = R(ops_binary(VB_MOD, R(ops_unary_neg(xi)), I(3)));
	check_vals(r, 2, 1);
	/* comparisons */
	r = R(ops_compare(VC_LT, x, F(1.5)));
	ck_assert_int_eq(TT(r)->dt, DT_BOOL);
	check_vals(r, 1, 0);
	r = R(ops_compare(VC_GE, I(2), x));
	check_vals(r, 1, 1);
	value eqn = R(ops_compare(VC_EQ, x, NONE()));
	ck_assert(eqn.tag == VAL_BOOL && !eqn.b);
	value is = R(ops_compare(VC_IS, x, x));
	ck_assert(is.tag == VAL_BOOL && is.b);
	value in = R(ops_compare(VC_IN, F(2), x));
	ck_assert(in.tag == VAL_BOOL && in.b);
	/* errors */
	expect_error(ops_binary(VB_ADD, x, S("a")), "unsupported operand type(s) for +: 'Tensor' and 'str'");
	expect_error(ops_binary(VB_MATMUL, x, I(2)), "unsupported operand type(s) for @: 'Tensor' and 'int'");
	expect_error(ops_binary(VB_POW, NONE(), x), "unsupported operand type(s) for **: 'NoneType' and 'Tensor'");
	expect_error(ops_compare(VC_LT, x, S("a")), "'<' not supported between instances of 'Tensor' and 'str'");
	expect_error(ops_binary(VB_ADD, x, C("zeros", NULL, I(3))), "cannot broadcast shapes (2,) and (3,)");
	/* abs and round as the Python builtins see them */
	check_vals(R(ops_builtin_abs(R(ops_unary_neg(x)))), 1, 2);
	check_vals(R(ops_builtin_round(C("tensor", NULL, LIST(F(1.5), F(2.5), F(-0.4))), val_int(0))), 2, 2, -0);
}
END_TEST

START_TEST(test_pointwise_functions)
{
	value x = C("tensor", NULL, LIST(F(-1.5), F(0.5), F(2)));
	check_vals(C("where", NULL, R(ops_compare(VC_GT, x, I(0))), x, F(0)), 0, 0.5, 2);
	check_vals(C("clamp", NULL, x, F(-1), F(1)), -1, 0.5, 1);
	check_vals(C("clamp", "min", x, I(0)), 0, 0.5, 2);
	check_vals(M(x, "clamp", NONE(), F(1)), -1.5, 0.5, 1);
	check_vals(C("maximum", NULL, x, R(val_tensor(tensor_scalar(DT_FLOAT32, 0)))), 0, 0.5, 2);
	check_vals(C("minimum", NULL, x, I(0)), -1.5, 0, 0);
	check_vals(C("relu", NULL, x), 0, 0.5, 2);
	check_vals(C("sign", NULL, x), -1, 1, 1);
	check_vals(C("reciprocal", NULL, x), -1 / 1.5, 2, 0.5);
	check_vals(C("ext_clip", NULL, x, I(0), F(1)), 0, 0.5, 1);
	check_vals(C("ext_sort", NULL, C("tensor", NULL, LIST(I(3), I(1), I(2)))), 1, 2, 3);
	check_vals(C("ext_cumsum", NULL, x), -1.5, -1, 1);
	ck_assert_int_eq(TT(C("exp", NULL, C("arange", NULL, I(2))))->dt, DT_FLOAT32);
}
END_TEST

START_TEST(test_shape_ops)
{
	value x = C("reshape", NULL, C("arange", NULL, I(6)), I(2), I(3));
	check_vals(C("transpose", NULL, x, I(0), I(1)), 0, 3, 1, 4, 2, 5);
	check_vals(C("permute", NULL, x, TUP(I(-1), I(0))), 0, 3, 1, 4, 2, 5);
	check_shape(C("reshape", NULL, x, I(-1), I(1)), 6, 1);
	check_shape(C("flatten", NULL, C("zeros", NULL, I(2), I(3), I(4)), I(1)), 2, 12);
	check_shape(C("squeeze", NULL, C("zeros", NULL, I(1), I(3), I(1)), I(0)), 3, 1);
	check_shape(C("unsqueeze", NULL, x, I(-1)), 2, 3, 1);
	check_shape(C("cat", NULL, LIST(x, x)), 4, 3);
	check_vals(C("cat", "dim", TUP(x, x), I(1)), 0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5);
	check_shape(C("stack", NULL, LIST(x, x, x), I(1)), 2, 3, 3);
	check_vals(C("matmul", NULL, x, C("ones", "dtype", I(3), val_dtype(DT_INT64))), 3, 12);
	value w = C("ones", NULL, I(4), I(3));
	value xf = M0(x, "float");
	check_shape(C("linear", NULL, xf, w), 2, 4);
	check_vals(C("linear", NULL, xf, w, C("ones", NULL, I(4))), 4, 4, 4, 4, 13, 13, 13, 13);
	CE("shape '[4, 4]' is invalid for input of size 6", "reshape", NULL, x, I(4), I(4));
}
END_TEST

START_TEST(test_indexing)
{
	value x = C("reshape", NULL, C("arange", NULL, I(12)), I(3), I(4));
	check_vals(R(ops_subscript(x, I(1))), 4, 5, 6, 7);
	check_vals(R(ops_subscript(x, I(-1))), 8, 9, 10, 11);
	value all = R(slice_new(NONE(), NONE(), NONE()));
	check_vals(R(ops_subscript(x, TUP(all, I(0)))), 0, 4, 8);
	value s = R(slice_new(I(1), NONE(), I(2)));
	check_vals(R(ops_subscript(x, TUP(I(0), s))), 1, 3);
	check_shape(R(ops_subscript(x, NONE())), 1, 3, 4);
	check_shape(R(ops_subscript(x, TUP(all, NONE(), I(1)))), 3, 1);
	check_vals(R(ops_subscript(x, TUP(I(1), R(val_tensor(tensor_scalar_int(2)))))), 6);
	check_shape0(R(ops_subscript(x, TUP(I(2), I(3)))));
	expect_error(ops_subscript(x, S("a")),
		     "only integers, slices (`:`), None and 0-d integer tensors are valid indices (got str)");
	expect_error(ops_subscript(x, TUP(I(0), R(slice_new(NONE(), NONE(), I(0))))), "slice step cannot be zero");
	expect_error(ops_subscript(x, R(slice_new(NONE(), NONE(), I(-1)))), "step must be greater than zero");
	expect_error(ops_subscript(x, I(3)), "index 3 is out of bounds for dimension 0 with size 3");
}
END_TEST

START_TEST(test_outputs_are_new)
{
	/* no op hands back one of its inputs: tensors are immutable and a tape
	 * node is recorded on the output */
	value x = C("requires_grad_", NULL, C("ones", NULL, I(3)));
	static const char *const same[] = {"detach", "float", "contiguous"};
	for (int i = 0; i < 3; i++) {
		value y = R(vcall(same[i], NULL, 1, &x));
		ck_assert_ptr_ne(TT(y), TT(x));
		ck_assert(TT(x)->is_leaf && !TT(x)->grad_fn);
	}
	value t = R(getattr(x, "T"));
	ck_assert_ptr_ne(TT(t), TT(x));
	ck_assert(TT(t)->grad_fn && !TT(x)->grad_fn);
	value r = C("reshape", NULL, x, I(3));
	ck_assert(TT(r)->grad_fn && TT(x)->is_leaf);
}
END_TEST

/* the first tensor installs the VAL_TENSOR hooks: a tensor value prints,
 * adds and frees without a VM or any set-up (each test is a fresh process) */
START_TEST(test_tensor_value_without_vm)
{
	value v = val_tensor(tensor_zeros(DT_FLOAT32, 1, (int64_t[]){2}));
	ck_assert_ptr_nonnull(vm_tensor_hooks);
	value w = vm_binary(VB_ADD, v, val_int(1));
	struct strbuf sb = STRBUF_INIT;
	val_repr(w, &sb);
	ck_assert_str_eq(sb.buf, "tensor([1.0000, 1.0000])");
	sb_release(&sb);
	val_decref(w);
	val_decref(v);
}
END_TEST

static Suite *ops_suite(void)
{
	Suite *s = suite_create("ops");
	TCase *tc = tcase_create("table");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_table);
	tcase_add_test(tc, test_signature);
	tcase_add_test(tc, test_tensor_value_without_vm);
	tcase_add_test(tc, test_normalize);
	tcase_add_test(tc, test_args_parse);
	tcase_add_test(tc, test_op_arg_errors);
	suite_add_tcase(s, tc);

	tc = tcase_create("values");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_tensor_inference);
	tcase_add_test(tc, test_creation);
	tcase_add_test(tc, test_attributes);
	tcase_add_test(tc, test_reductions);
	tcase_add_test(tc, test_scalars_promotion);
	tcase_add_test(tc, test_pointwise_functions);
	tcase_add_test(tc, test_shape_ops);
	tcase_add_test(tc, test_indexing);
	tcase_add_test(tc, test_outputs_are_new);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(ops_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	tensor_cache_clear();
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
