/* check_autograd.c - the autograd tape (core/tensor/autograd.c).
 *
 * Every backward rule is checked against central finite differences in
 * float64: for an op f and random inputs, loss = sum(f(inputs) * W) with
 * fixed random weights W; loss.backward() must give, for every element of
 * every input, (loss(x + eps) - loss(x - eps)) / 2 eps. Then the engine:
 * accumulation, detach, requires_grad_, the errors, freeing the tape.
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

/* ---- values that live until the end of a test (or an arena mark) ---- */

#define ARENA_MAX 200000
static value arena[ARENA_MAX];
static size_t narena;

static value R(value v)
{
	ck_assert_msg(!val_is_err(v), "unexpected error: %s", tj_error_peek() ? tj_error_peek() : "?");
	ck_assert(narena < ARENA_MAX);
	arena[narena++] = v;
	return v;
}

static void arena_release(size_t mark)
{
	while (narena > mark)
		val_decref(arena[--narena]);
}

static void setup(void)
{
	tj_error_clear();
	rng_manual_seed(1234);
	ag_set_grad_enabled(true);
}

static void teardown(void)
{
	arena_release(0);
	tj_error_clear();
}

/* a call that must succeed; the result lives in the arena */
static value C(const char *name, const char *kw, int n, ...)
{
	value args[8];
	va_list ap;
	va_start(ap, n);
	for (int i = 0; i < n; i++)
		args[i] = va_arg(ap, value);
	va_end(ap);
	return R(vcall(name, kw, n, args));
}

static value tup(int n, ...)
{
	value items[8];
	va_list ap;
	va_start(ap, n);
	for (int i = 0; i < n; i++)
		items[i] = val_int(va_arg(ap, int));
	va_end(ap);
	return R(tuple_pack(n, items));
}

static value slc(value a, value b, value c) { return R(slice_new(a, b, c)); }
static value I(int64_t i) { return val_int(i); }
static value F(double f) { return val_float(f); }
static value NONE(void) { return val_none(); }
static tensor *TT(value v) { return val_as_tensor(v); }

/* a float64 tensor from N(0,1) (no grad): randt(2, 3) has shape (2, 3) */
static value randt_(int ndim, const int *dims)
{
	int64_t shape[TENSOR_MAX_DIMS];
	for (int i = 0; i < ndim; i++)
		shape[i] = dims[i];
	return R(val_tensor(tensor_randn(DT_FLOAT64, ndim, shape)));
}
#define randt(...) randt_((int)(sizeof((int[]){__VA_ARGS__}) / sizeof(int)), (int[]){__VA_ARGS__})
static value scalar_t(void) { return randt_(0, NULL); }

/* t with every element moved away from zero: sign(x) (|x| + 0.5) */
static value away0(value t)
{
	tensor *r = tensor_copy(TT(t));
	double *d = r->data;
	for (int64_t i = 0; i < r->numel; i++)
		d[i] = d[i] < 0 ? d[i] - 0.5 : d[i] + 0.5;
	return R(val_tensor(r));
}

/* |x| + 0.5 */
static value positive(value t)
{
	tensor *r = tensor_copy(TT(t));
	double *d = r->data;
	for (int64_t i = 0; i < r->numel; i++)
		d[i] = fabs(d[i]) + 0.5;
	return R(val_tensor(r));
}

/* ---- the finite-difference check ---- */

/* a forward: its result (and every temporary) lives in the arena */
typedef value (*fwd_fn)(const value *x);

#define GC_EPS 1e-6
#define GC_RTOL 1e-5
#define GC_ATOL 1e-7

static value gc_weights;

/* sum(f(x) * W) without the tape, in double */
static double gc_loss(fwd_fn f, const value *x)
{
	size_t mark = narena;
	value out = f(x);
	if (out.tag == VAL_TUPLE)
		out = val_tuple(out)->items[0];
	tensor *o = TT(out), *w = TT(gc_weights);
	ck_assert_int_eq(o->numel, w->numel);
	double s = 0;
	for (int64_t i = 0; i < o->numel; i++)
		s += tensor_get_double(o, i) * tensor_get_double(w, i);
	arena_release(mark);
	return s;
}

/* checks d sum(f(x) W) / dx[i] for every input i whose diff bit is set */
static void gradcheck_(const char *what, fwd_fn f, int nin, const value *x, unsigned diff)
{
	value leaves[8];
	for (int i = 0; i < nin; i++) {
		if (diff & (1u << i)) {
			ck_assert_int_eq(TT(x[i])->dt, DT_FLOAT64);
			leaves[i] = C("requires_grad_", NULL, 1, x[i]);
		} else {
			leaves[i] = x[i];
		}
	}
	value out = f(leaves);
	if (out.tag == VAL_TUPLE)
		out = val_tuple(out)->items[0];
	tensor *o = TT(out);
	ck_assert_msg(o->requires_grad && !o->is_leaf && o->grad_fn, "%s: the output does not track", what);
	gc_weights = R(val_tensor(tensor_randn(DT_FLOAT64, o->ndim, o->shape)));
	value loss = C("sum", NULL, 1, R(ops_binary(VB_MUL, out, gc_weights)));
	C("backward", NULL, 1, loss);

	for (int i = 0; i < nin; i++) {
		if (!(diff & (1u << i)))
			continue;
		tensor *leaf = TT(leaves[i]), *g = leaf->grad;
		ck_assert_msg(g != NULL, "%s: input %d got no grad", what, i);
		ck_assert_msg(shape_equal(g->ndim, g->shape, leaf->ndim, leaf->shape), "%s: grad %d has the wrong shape",
			      what, i);
		ck_assert_int_eq(g->dt, DT_FLOAT64);
		ck_assert(!g->requires_grad && !g->grad_fn);
		for (int64_t j = 0; j < leaf->numel; j++) {
			value xs[8];
			memcpy(xs, x, nin * sizeof *xs);
			tensor *p = tensor_copy(TT(x[i]));
			xs[i] = val_tensor(p);
			double x0 = ((double *)p->data)[j];
			((double *)p->data)[j] = x0 + GC_EPS;
			double lp = gc_loss(f, xs);
			((double *)p->data)[j] = x0 - GC_EPS;
			double lm = gc_loss(f, xs);
			val_decref(xs[i]);
			double num = (lp - lm) / (2 * GC_EPS), ana = tensor_get_double(g, j);
			ck_assert_msg(fabs(num - ana) <= GC_ATOL + GC_RTOL * fabs(num) + 1e-9 * fabs(lp),
				      "%s: d/dx%d[%lld]: analytic %.10g, numeric %.10g", what, i, (long long)j, ana, num);
		}
	}
}
#define gradcheck(f, diff, ...)                                                                    \
	do {                                                                                       \
		value xs_[] = {__VA_ARGS__};                                                       \
		gradcheck_(#f "(" #__VA_ARGS__ ")", f, (int)(sizeof xs_ / sizeof xs_[0]), xs_, diff); \
	} while (0)

/* ---- the forwards under test ---- */

static const char *unary_name;
static value f_unary(const value *x) { return R(vcall(unary_name, NULL, 1, x)); }

START_TEST(test_unary)
{
	static const char *const all[] = {"neg", "abs", "exp", "sin", "cos", "tanh", "sigmoid", "relu", "gelu",
					  "silu", "floor", "ceil", "round", "sign", "reciprocal"};
	static const char *const positive_only[] = {"log", "sqrt", "rsqrt"};
	for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) {
		unary_name = all[k];
		gradcheck(f_unary, 1, away0(randt(3, 4)));
		gradcheck(f_unary, 1, away0(scalar_t()));
	}
	for (size_t k = 0; k < sizeof positive_only / sizeof positive_only[0]; k++) {
		unary_name = positive_only[k];
		gradcheck(f_unary, 1, positive(randt(3, 4)));
	}
}
END_TEST

static enum vm_binop binop_cur;
static value f_binop(const value *x) { return R(ops_binary(binop_cur, x[0], x[1])); }
static value f_binop_num_right(const value *x) { return R(ops_binary(binop_cur, x[0], F(1.75))); }
static value f_binop_num_left(const value *x) { return R(ops_binary(binop_cur, F(1.75), x[0])); }
static value f_binop_int_right(const value *x) { return R(ops_binary(binop_cur, x[0], I(3))); }

START_TEST(test_binary)
{
	static const enum vm_binop ops[] = {VB_ADD, VB_SUB, VB_MUL, VB_TRUEDIV, VB_POW, VB_MOD, VB_FLOORDIV};
	for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
		binop_cur = ops[k];
		/* same shapes, broadcasting both ways, 0-d, numbers on either side */
		gradcheck(f_binop, 3, positive(randt(2, 3)), positive(randt(2, 3)));
		gradcheck(f_binop, 3, positive(randt(2, 3)), positive(randt(1, 3)));
		gradcheck(f_binop, 3, positive(randt(2, 1, 3)), positive(randt(2, 4, 1)));
		gradcheck(f_binop, 3, positive(randt(3)), positive(scalar_t()));
		gradcheck(f_binop, 1, positive(randt(2, 3)), positive(randt(3)));
		gradcheck(f_binop, 2, positive(randt(2, 3)), positive(randt(2, 3)));
		gradcheck(f_binop_num_right, 1, positive(randt(2, 3)));
		gradcheck(f_binop_num_left, 1, positive(randt(2, 3)));
		gradcheck(f_binop_int_right, 1, positive(randt(4)));
	}
	/* pow with negative bases and an integer exponent; mod and floordiv with negative operands */
	binop_cur = VB_POW;
	gradcheck(f_binop_int_right, 1, away0(randt(5)));
	binop_cur = VB_MOD;
	gradcheck(f_binop, 3, away0(randt(6)), away0(randt(6)));
}
END_TEST

static value f_maximum(const value *x) { return C("maximum", NULL, 2, x[0], x[1]); }
static value f_minimum(const value *x) { return C("minimum", NULL, 2, x[0], x[1]); }
static value f_max2(const value *x) { return R(vcall("max", NULL, 2, x)); }
static value f_where(const value *x)
{
	value c = R(ops_compare(VC_GT, x[2], F(0)));
	return C("where", NULL, 3, c, x[0], x[1]);
}
static value f_where_num(const value *x)
{
	value c = R(ops_compare(VC_GT, x[1], F(0)));
	return C("where", NULL, 3, c, F(0.5), x[0]);
}
static value f_clamp_nums(const value *x) { return C("clamp", NULL, 3, x[0], F(-0.5), F(0.7)); }
static value f_clamp_lo(const value *x) { return C("clamp", "min", 2, x[0], F(-0.2)); }
static value f_clamp_hi(const value *x) { return C("clamp", "max", 2, x[0], F(0.3)); }
static value f_clamp_tensors(const value *x) { return C("clamp", NULL, 3, x[0], x[1], x[2]); }

START_TEST(test_pointwise_more)
{
	gradcheck(f_maximum, 3, randt(2, 3), randt(2, 3));
	gradcheck(f_maximum, 3, randt(2, 3), randt(3));
	gradcheck(f_minimum, 3, randt(4, 1), randt(1, 3));
	gradcheck(f_max2, 3, randt(2, 3), randt(2, 3));
	gradcheck(f_where, 3, randt(2, 3), randt(3), randt(2, 3));
	gradcheck(f_where, 3, randt(3), randt(2, 1), randt(2, 3));
	gradcheck(f_where_num, 1, randt(2, 3), randt(2, 3));
	gradcheck(f_clamp_nums, 1, randt(3, 4));
	gradcheck(f_clamp_lo, 1, randt(3, 4));
	gradcheck(f_clamp_hi, 1, randt(3, 4));
	/* tensor bounds, including lo > hi somewhere */
	gradcheck(f_clamp_tensors, 7, randt(3, 4), randt(3, 4), randt(4));
}
END_TEST

/* reductions: (x, dim, keepdim) for several dims */
static value red_dim;
static bool red_keepdim;
static const char *red_name;
static value f_reduce(const value *x) { return C(red_name, "keepdim", 3, x[0], red_dim, val_bool(red_keepdim)); }
static value f_reduce_all(const value *x) { return C(red_name, NULL, 1, x[0]); }

START_TEST(test_reductions)
{
	static const char *const names[] = {"sum", "mean", "prod", "var", "max", "min"};
	for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
		red_name = names[k];
		bool single = strcmp(red_name, "max") == 0 || strcmp(red_name, "min") == 0;
		gradcheck(f_reduce_all, 1, randt(3, 4));
		gradcheck(f_reduce_all, 1, randt(2, 3, 4));
		for (int keep = 0; keep < 2; keep++) {
			red_keepdim = keep;
			red_dim = I(1);
			gradcheck(f_reduce, 1, randt(3, 4));
			red_dim = I(-1);
			gradcheck(f_reduce, 1, randt(2, 3, 4));
			red_dim = I(0);
			gradcheck(f_reduce, 1, randt(2, 3, 4));
			if (!single) {
				red_dim = tup(2, 0, 2);
				gradcheck(f_reduce, 1, randt(2, 3, 4));
				red_dim = tup(2, -1, 1);
				gradcheck(f_reduce, 1, randt(2, 3, 4));
			}
		}
	}
}
END_TEST

START_TEST(test_prod_with_zeros)
{
	/* the gradient of prod is the product of the others, also with zeros */
	double vals[] = {2, 0, 3, 0, 5, 4};
	tensor *t = tensor_empty(DT_FLOAT64, 2, (int64_t[]){2, 3});
	memcpy(t->data, vals, sizeof vals);
	value leaf = C("requires_grad_", NULL, 1, R(val_tensor(t)));
	value p = C("prod", NULL, 2, leaf, I(1));
	C("backward", NULL, 1, C("sum", NULL, 1, p));
	double want[] = {0, 6, 0, 20, 0, 0};
	for (int i = 0; i < 6; i++)
		ck_assert_double_eq_tol(tensor_get_double(TT(leaf)->grad, i), want[i], 1e-12);
}
END_TEST

START_TEST(test_max_ties)
{
	/* full reductions split the gradient evenly among ties; maximum splits in half */
	tensor *t = tensor_empty(DT_FLOAT64, 1, (int64_t[]){4});
	double vals[] = {1, 3, 3, 2};
	memcpy(t->data, vals, sizeof vals);
	value x = C("requires_grad_", NULL, 1, R(val_tensor(t)));
	C("backward", NULL, 1, C("max", NULL, 1, x));
	double want[] = {0, 0.5, 0.5, 0};
	for (int i = 0; i < 4; i++)
		ck_assert_double_eq_tol(tensor_get_double(TT(x)->grad, i), want[i], 1e-12);

	value y = C("requires_grad_", NULL, 1, R(val_tensor(tensor_copy(TT(x)))));
	value m = C("maximum", NULL, 2, y, R(val_tensor(tensor_full(DT_FLOAT64, 1, (int64_t[]){4}, 3))));
	C("backward", NULL, 1, C("sum", NULL, 1, m));
	double want2[] = {0, 0.5, 0.5, 0};
	for (int i = 0; i < 4; i++)
		ck_assert_double_eq_tol(tensor_get_double(TT(y)->grad, i), want2[i], 1e-12);

	/* with a dim, through the indices: the first maximum gets it all */
	value z = C("requires_grad_", NULL, 1, R(val_tensor(tensor_copy(TT(x)))));
	value mx = C("max", NULL, 2, z, I(0));
	ck_assert_int_eq(mx.tag, VAL_TUPLE);
	C("backward", NULL, 1, val_tuple(mx)->items[0]);
	ck_assert_double_eq(tensor_get_double(TT(z)->grad, 1), 1);
	ck_assert_double_eq(tensor_get_double(TT(z)->grad, 2), 0);
	/* the indices do not track */
	ck_assert(!TT(val_tuple(mx)->items[1])->requires_grad);
}
END_TEST

static value soft_dim;
static value f_softmax(const value *x) { return C("softmax", NULL, 2, x[0], soft_dim); }
static value f_log_softmax(const value *x) { return C("log_softmax", NULL, 2, x[0], soft_dim); }

START_TEST(test_softmax)
{
	int dims[] = {0, 1, -1};
	for (int k = 0; k < 3; k++) {
		soft_dim = I(dims[k]);
		gradcheck(f_softmax, 1, randt(3, 4));
		gradcheck(f_log_softmax, 1, randt(3, 4));
		gradcheck(f_softmax, 1, randt(2, 3, 4));
		gradcheck(f_log_softmax, 1, randt(2, 3, 4));
	}
	soft_dim = I(0);
	gradcheck(f_softmax, 1, randt(5));
}
END_TEST

static value f_matmul(const value *x) { return R(ops_binary(VB_MATMUL, x[0], x[1])); }
static value f_linear(const value *x) { return C("linear", NULL, 3, x[0], x[1], x[2]); }
static value f_linear_nobias(const value *x) { return C("linear", NULL, 2, x[0], x[1]); }

START_TEST(test_matmul)
{
	gradcheck(f_matmul, 3, randt(3), randt(3));             /* dot */
	gradcheck(f_matmul, 3, randt(2, 3), randt(3));          /* matrix @ vector */
	gradcheck(f_matmul, 3, randt(3), randt(3, 4));          /* vector @ matrix */
	gradcheck(f_matmul, 3, randt(2, 3), randt(3, 4));
	gradcheck(f_matmul, 3, randt(5, 2, 3), randt(3, 4));    /* batched @ matrix */
	gradcheck(f_matmul, 3, randt(2, 3), randt(5, 3, 4));    /* matrix @ batched */
	gradcheck(f_matmul, 3, randt(2, 1, 2, 3), randt(3, 3, 4)); /* broadcast batch dims */
	gradcheck(f_matmul, 3, randt(3), randt(5, 3, 4));       /* vector @ batched */
	gradcheck(f_matmul, 3, randt(5, 2, 3), randt(3));       /* batched @ vector */
	gradcheck(f_matmul, 1, randt(2, 3), randt(3, 4));
	gradcheck(f_matmul, 2, randt(2, 3), randt(3, 4));
	gradcheck(f_linear, 7, randt(5, 3), randt(4, 3), randt(4));
	gradcheck(f_linear, 7, randt(2, 5, 3), randt(4, 3), randt(4));
	gradcheck(f_linear, 7, randt(3), randt(4, 3), randt(4));
	gradcheck(f_linear_nobias, 3, randt(5, 3), randt(4, 3));
}
END_TEST

static value f_reshape(const value *x) { return C("reshape", NULL, 3, x[0], I(4), I(-1)); }
static value f_view(const value *x) { return C("view", NULL, 2, x[0], tup(2, 6, 2)); }
static value f_transpose(const value *x) { return C("transpose", NULL, 3, x[0], I(0), I(-1)); }
static value f_permute(const value *x) { return C("permute", NULL, 4, x[0], I(2), I(0), I(1)); }
static value f_T(const value *x) { return C("T", NULL, 1, x[0]); }
static value f_unsqueeze(const value *x) { return C("unsqueeze", NULL, 2, x[0], I(-2)); }
static value f_squeeze(const value *x) { return C("squeeze", NULL, 1, x[0]); }
static value f_squeeze1(const value *x) { return C("squeeze", NULL, 2, x[0], I(1)); }
static value f_flatten(const value *x) { return C("flatten", NULL, 2, x[0], I(1)); }
static value f_expand(const value *x) { return C("expand", NULL, 4, x[0], I(2), I(-1), I(4)); }
static value f_cat(const value *x)
{
	value l = R(list_new(3));
	for (int i = 0; i < 3; i++) {
		val_incref(x[i]);
		list_append(val_list(l), x[i]);
	}
	return C("cat", NULL, 2, l, I(1));
}
static value f_stack(const value *x)
{
	value items[3] = {x[0], x[1], x[2]};
	return C("stack", "dim", 2, R(tuple_pack(3, items)), I(-1));
}
static value f_clone(const value *x) { return C("clone", NULL, 1, x[0]); }
static value gi_index;
static value f_getitem(const value *x) { return R(ops_subscript(x[0], gi_index)); }

START_TEST(test_shape)
{
	gradcheck(f_reshape, 1, randt(2, 3, 4));
	gradcheck(f_view, 1, randt(3, 4));
	gradcheck(f_transpose, 1, randt(2, 3, 4));
	gradcheck(f_permute, 1, randt(2, 3, 4));
	gradcheck(f_T, 1, randt(2, 3, 4));
	gradcheck(f_T, 1, randt(1, 3));
	gradcheck(f_unsqueeze, 1, randt(2, 3));
	gradcheck(f_squeeze, 1, randt(3, 1, 4, 1));
	gradcheck(f_squeeze1, 1, randt(3, 1, 4));
	gradcheck(f_flatten, 1, randt(2, 3, 4));
	gradcheck(f_expand, 1, randt(2, 3, 1));
	gradcheck(f_expand, 1, randt(1, 3, 1));
	gradcheck(f_cat, 7, randt(2, 1, 2), randt(2, 3, 2), randt(2, 2, 2));
	gradcheck(f_cat, 5, randt(2, 1, 2), randt(2, 3, 2), randt(2, 2, 2));
	gradcheck(f_stack, 7, randt(2, 3), randt(2, 3), randt(2, 3));
	gradcheck(f_clone, 1, randt(2, 3));
}
END_TEST

START_TEST(test_getitem)
{
	gi_index = I(1);
	gradcheck(f_getitem, 1, randt(3, 4));
	gi_index = I(-1);
	gradcheck(f_getitem, 1, randt(3, 4));
	gi_index = slc(I(1), NONE(), NONE());
	gradcheck(f_getitem, 1, randt(4, 2));
	gi_index = slc(NONE(), NONE(), I(2));
	gradcheck(f_getitem, 1, randt(5, 2));
	value items[] = {slc(NONE(), NONE(), NONE()), I(0)};
	gi_index = R(tuple_pack(2, items));
	gradcheck(f_getitem, 1, randt(3, 4));
	value items2[] = {NONE(), slc(I(-3), I(-1), NONE()), I(2)};
	gi_index = R(tuple_pack(3, items2));
	gradcheck(f_getitem, 1, randt(4, 3));
	value items3[] = {I(1), slc(I(0), I(4), I(3)), NONE()};
	gi_index = R(tuple_pack(3, items3));
	gradcheck(f_getitem, 1, randt(2, 5, 2));
}
END_TEST

/* a chain through many ops, with a tensor used twice */
static value f_chain(const value *x)
{
	value h = C("tanh", NULL, 1, R(ops_binary(VB_MATMUL, x[0], x[1])));
	value y = R(ops_binary(VB_MUL, h, h));
	value z = C("softmax", NULL, 2, R(ops_binary(VB_ADD, y, x[2])), I(-1));
	return R(ops_binary(VB_SUB, z, R(ops_subscript(h, I(0)))));
}

START_TEST(test_chain)
{
	gradcheck(f_chain, 7, randt(2, 3, 4), randt(2, 4, 5), randt(1, 5));
}
END_TEST

/* ---- the engine ---- */

static value leaf64(int n, double v)
{
	value t = R(val_tensor(tensor_full(DT_FLOAT64, 1, (int64_t[]){n}, v)));
	return C("requires_grad_", NULL, 1, t);
}

START_TEST(test_accumulate)
{
	value x = leaf64(3, 2.0);
	ck_assert(TT(x)->is_leaf && TT(x)->requires_grad && !TT(x)->grad);
	value loss = C("sum", NULL, 1, R(ops_binary(VB_MUL, x, x)));
	C("backward", NULL, 1, loss);
	tensor *g1 = TT(x)->grad;
	ck_assert_double_eq(tensor_get_double(g1, 0), 4.0);
	tensor_incref(g1);
	value loss2 = C("sum", NULL, 1, R(ops_binary(VB_MUL, x, F(3))));
	C("backward", NULL, 1, loss2);
	/* accumulated into a new tensor; the old one is unchanged */
	ck_assert_ptr_ne(TT(x)->grad, g1);
	ck_assert_double_eq(tensor_get_double(TT(x)->grad, 0), 7.0);
	ck_assert_double_eq(tensor_get_double(g1, 0), 4.0);
	tensor_decref(g1);
	/* a leaf that is itself the root */
	value s = C("requires_grad_", NULL, 1, R(val_tensor(tensor_scalar(DT_FLOAT32, 5))));
	C("backward", NULL, 1, s);
	ck_assert_double_eq(tensor_get_double(TT(s)->grad, 0), 1.0);
	/* the same leaf through two paths */
	value y = leaf64(2, 1.5);
	value e = C("exp", NULL, 1, y);
	value u = R(ops_binary(VB_ADD, R(ops_binary(VB_MUL, e, y)), y));
	C("backward", NULL, 1, C("sum", NULL, 1, u));
	ck_assert_double_eq_tol(tensor_get_double(TT(y)->grad, 0), exp(1.5) * 2.5 + 1, 1e-12);
}
END_TEST

START_TEST(test_float32_grad_dtype)
{
	/* to() between float dtypes: the grad comes back in the leaf's dtype */
	value x = C("requires_grad_", NULL, 1, R(val_tensor(tensor_full(DT_FLOAT32, 1, (int64_t[]){3}, 2))));
	value d = C("double", NULL, 1, x);
	ck_assert_int_eq(TT(d)->dt, DT_FLOAT64);
	ck_assert(TT(d)->requires_grad);
	value y = C("to", NULL, 2, R(ops_binary(VB_MUL, d, F(0.25))), val_dtype(DT_FLOAT32));
	C("backward", NULL, 1, C("sum", NULL, 1, y));
	ck_assert_int_eq(TT(x)->grad->dt, DT_FLOAT32);
	ck_assert_double_eq(tensor_get_double(TT(x)->grad, 2), 0.25);
	/* a float tensor to int64 does not track */
	value l = C("long", NULL, 1, x);
	ck_assert(!TT(l)->requires_grad && TT(l)->is_leaf);
	/* float32 + float64 0-d: float32, the float64 grad is float64 */
	value a = leaf64(1, 1.0);
	value b = C("requires_grad_", NULL, 1, R(val_tensor(tensor_full(DT_FLOAT32, 1, (int64_t[]){3}, 2))));
	value s = R(ops_binary(VB_MUL, b, C("reshape", NULL, 1, a)));
	C("backward", NULL, 1, C("sum", NULL, 1, s));
	ck_assert_int_eq(TT(a)->grad->dt, DT_FLOAT64);
	ck_assert_int_eq(TT(b)->grad->dt, DT_FLOAT32);
	ck_assert_double_eq(tensor_get_double(TT(a)->grad, 0), 6);
}
END_TEST

START_TEST(test_detach_requires_grad)
{
	value x = leaf64(3, 1.0);
	value y = R(ops_binary(VB_MUL, x, F(2)));
	ck_assert(TT(y)->requires_grad && !TT(y)->is_leaf);
	value d = C("detach", NULL, 1, y);
	ck_assert(!TT(d)->requires_grad && TT(d)->is_leaf && !TT(d)->grad_fn);
	ck_assert_ptr_eq(TT(d)->data, TT(y)->data); /* same storage */
	/* a detached branch does not reach x */
	value z = R(ops_binary(VB_ADD, R(ops_binary(VB_MUL, d, x)), x));
	C("backward", NULL, 1, C("sum", NULL, 1, z));
	ck_assert_double_eq(tensor_get_double(TT(x)->grad, 0), 3.0);
	/* requires_grad_() makes a new leaf and leaves the original alone */
	value w = C("requires_grad_", NULL, 1, y);
	ck_assert_ptr_ne(TT(w), TT(y));
	ck_assert(TT(w)->is_leaf && TT(w)->requires_grad && !TT(w)->grad_fn);
	ck_assert(!TT(y)->is_leaf);
	value off = C("requires_grad_", NULL, 2, x, val_bool(false));
	ck_assert(!TT(off)->requires_grad && TT(x)->requires_grad);
	/* ops on tensors that do not require grad do not track */
	value p = R(ops_binary(VB_MUL, d, d));
	ck_assert(!TT(p)->requires_grad && !TT(p)->grad_fn && TT(p)->is_leaf);
	/* grad mode off records nothing */
	bool was = ag_set_grad_enabled(false);
	value q = R(ops_binary(VB_MUL, x, x));
	ag_set_grad_enabled(was);
	ck_assert(!TT(q)->requires_grad && !TT(q)->grad_fn);
	/* comparisons, argmax and extension functions never track */
	ck_assert(!TT(R(ops_compare(VC_LT, x, F(0))))->requires_grad);
	ck_assert(!TT(C("argmax", NULL, 1, x))->requires_grad);
	ck_assert(!TT(C("ext_sort", NULL, 1, x))->requires_grad);
	ck_assert(!TT(C("ext_cumsum", NULL, 1, x))->requires_grad);
	ck_assert(!TT(C("ext_clip", NULL, 3, x, F(0), F(1)))->requires_grad);
}
END_TEST

static void expect_error(value r, const char *msg)
{
	ck_assert_msg(val_is_err(r), "expected the error \"%s\"", msg);
	char *got = tj_error_take();
	ck_assert_ptr_nonnull(got);
	ck_assert_msg(strstr(got, msg) != NULL, "expected \"%s\", got \"%s\"", msg, got);
	free(got);
}

START_TEST(test_errors)
{
	value x = leaf64(3, 1.0);
	value y = R(ops_binary(VB_MUL, x, x));
	value args[1] = {y};
	expect_error(vcall("backward", NULL, 1, args), "grad can be implicitly created only for scalar outputs");
	value plain = R(val_tensor(tensor_full(DT_FLOAT64, 0, NULL, 1)));
	args[0] = plain;
	expect_error(vcall("backward", NULL, 1, args), "element 0 of tensors does not require grad and does not have a grad_fn");
	/* a second backward through freed saved tensors */
	value loss = C("sum", NULL, 1, y);
	C("backward", NULL, 1, loss);
	args[0] = loss;
	expect_error(vcall("backward", NULL, 1, args), "Trying to backward through the graph a second time");
	/* the error left .grad as it was */
	ck_assert_double_eq(tensor_get_double(TT(x)->grad, 0), 2.0);
	/* retain_graph keeps them */
	value loss2 = C("sum", NULL, 1, R(ops_binary(VB_MUL, x, x)));
	C("backward", "retain_graph", 2, loss2, val_bool(true));
	C("backward", NULL, 1, loss2);
	ck_assert_double_eq(tensor_get_double(TT(x)->grad, 0), 6.0);
	/* ops that save nothing can run again, as in PyTorch */
	value loss3 = C("sum", NULL, 1, R(ops_binary(VB_ADD, x, F(1))));
	C("backward", NULL, 1, loss3);
	C("backward", NULL, 1, loss3);
	ck_assert_double_eq(tensor_get_double(TT(x)->grad, 0), 8.0);
	/* an explicit gradient */
	value v = R(ops_binary(VB_MUL, x, F(3)));
	value g = R(val_tensor(tensor_full(DT_FLOAT64, 1, (int64_t[]){3}, 0.5)));
	C("backward", NULL, 2, v, g);
	ck_assert_double_eq(tensor_get_double(TT(x)->grad, 0), 9.5);
	value g2 = R(val_tensor(tensor_full(DT_FLOAT64, 1, (int64_t[]){2}, 0.5)));
	value a2[2] = {v, g2};
	expect_error(vcall("backward", NULL, 2, a2), "mismatch in shape");
	/* only floating point tensors can require grad */
	value it = R(val_tensor(tensor_scalar_int(3)));
	expect_error(vcall("requires_grad_", NULL, 1, &it), "only Tensors of floating point dtype can require gradients");
}
END_TEST

START_TEST(test_node)
{
	value x = leaf64(3, 1.0);
	value y = R(ops_binary(VB_MUL, x, F(2)));
	char buf[64];
	ck_assert_str_eq(ag_node_name(TT(y)->grad_fn, buf, sizeof buf), "MulBackward0");
	value z = C("log_softmax", NULL, 2, y, I(0));
	ck_assert_str_eq(ag_node_name(TT(z)->grad_fn, buf, sizeof buf), "LogSoftmaxBackward0");
	struct ag_node *n = TT(z)->grad_fn;
	ck_assert_int_eq(n->op, OPS_log_softmax);
	ck_assert_int_eq(n->ninputs, 1);
	ck_assert_ptr_eq(n->inputs[0].node, TT(y)->grad_fn);
	ck_assert_ptr_eq(TT(y)->grad_fn->inputs[0].leaf, TT(x));
	ck_assert_int_eq(n->args[1].tag, VAL_INT);
	ck_assert(n->noutputs == 1 && !n->outputs[0]->grad_fn);
}
END_TEST

START_TEST(test_long_chain_frees)
{
	/* a long tape goes without recursion when its last tensor goes */
	value x = leaf64(1, 1.0);
	value y = x;
	val_incref(y);
	for (int i = 0; i < 200000; i++) {
		value z = ops_binary(VB_MUL, y, F(1.0));
		ck_assert(!val_is_err(z));
		val_decref(y);
		y = z;
	}
	value s = vcall("sum", NULL, 1, &y);
	value r = vcall("backward", NULL, 1, &s);
	ck_assert(!val_is_err(r));
	ck_assert_double_eq(tensor_get_double(TT(x)->grad, 0), 1.0);
	val_decref(s);
	val_decref(y);
}
END_TEST

/* ---- a compiled function's node (ag_record_custom) ---- */

struct custom_ctx {
	int calls, releases;
	double g1_sum;    /* what the second output's gradient summed to */
	bool reached[2];  /* what the node said of each output */
};

/* outputs x * 2 and x * 3: gin = 2 g0 + 3 g1 */
static int custom_backward(void *ctx, tensor *const *gouts, const bool *reached, tensor **gin)
{
	struct custom_ctx *c = ctx;
	c->calls++;
	c->reached[0] = reached[0];
	c->reached[1] = reached[1];
	tensor *s = tensor_reduce(REDOP_sum, gouts[1], NULL, 0, false, 0);
	c->g1_sum = tensor_get_double(s, 0);
	tensor_decref(s);
	tensor *two = tensor_full(DT_FLOAT64, 0, NULL, 2.0), *three = tensor_full(DT_FLOAT64, 0, NULL, 3.0);
	tensor *a = tensor_binary(BINOP_mul, gouts[0], two), *b = tensor_binary(BINOP_mul, gouts[1], three);
	gin[0] = tensor_binary(BINOP_add, a, b);
	tensor_decref(two);
	tensor_decref(three);
	tensor_decref(a);
	tensor_decref(b);
	return 0;
}

static void custom_release(void *ctx) { ((struct custom_ctx *)ctx)->releases++; }

START_TEST(test_custom)
{
	struct custom_ctx ctx = {0, 0, -1, {false, false}};
	value x = leaf64(3, 1.0);
	value o0 = R(val_tensor(tensor_full(DT_FLOAT64, 1, (int64_t[]){3}, 2.0)));
	value o1 = R(val_tensor(tensor_full(DT_FLOAT64, 1, (int64_t[]){3}, 3.0)));
	tensor *in[] = {TT(x)}, *out[] = {TT(o0), TT(o1)};
	ck_assert_int_eq(ag_record_custom(in, 1, out, 2, custom_backward, &ctx, custom_release), 0);
	/* ONE node for both outputs, each knowing which output it is */
	char buf[64];
	ck_assert_ptr_eq(TT(o0)->grad_fn, TT(o1)->grad_fn);
	ck_assert_str_eq(ag_node_name(TT(o0)->grad_fn, buf, sizeof buf), "CompiledFunctionBackward");
	ck_assert(TT(o1)->requires_grad && !TT(o1)->is_leaf && TT(o1)->output_nr == 1);
	ck_assert_ptr_eq(TT(o0)->grad_fn->inputs[0].leaf, TT(x));
	/* the second output gets no gradient: zeros */
	value loss = C("sum", NULL, 1, R(ops_binary(VB_MUL, o0, F(5))));
	ck_assert_ptr_eq(TT(loss)->grad_fn->inputs[0].node->inputs[0].node, TT(o0)->grad_fn);
	C("backward", NULL, 1, loss);
	ck_assert_int_eq(ctx.calls, 1);
	ck_assert_double_eq(ctx.g1_sum, 0.0);
	ck_assert(ctx.reached[0] && !ctx.reached[1]); /* zeros, but undefined */
	ck_assert_double_eq(tensor_get_double(TT(x)->grad, 0), 10.0);
	/* backward freed the saved context: a second one is the error */
	ck_assert_int_eq(ctx.releases, 1);
	value again = vcall("backward", NULL, 1, &loss);
	ck_assert(val_is_err(again));
	ck_assert(strstr(tj_error_peek(), "second time"));
	tj_error_clear();

	/* no input requires grad: no node, the context goes at once */
	struct custom_ctx none = {0, 0, -1, {false, false}};
	value y = R(val_tensor(tensor_full(DT_FLOAT64, 1, (int64_t[]){3}, 1.0)));
	value p = R(val_tensor(tensor_full(DT_FLOAT64, 1, (int64_t[]){3}, 2.0)));
	tensor *in2[] = {TT(y)}, *out2[] = {TT(p)};
	ck_assert_int_eq(ag_record_custom(in2, 1, out2, 1, custom_backward, &none, custom_release), 0);
	ck_assert(!TT(p)->requires_grad && !TT(p)->grad_fn);
	ck_assert_int_eq(none.releases, 1);
}
END_TEST

static Suite *autograd_suite(void)
{
	Suite *s = suite_create("autograd");
	TCase *tc = tcase_create("rules");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_unary);
	tcase_add_test(tc, test_binary);
	tcase_add_test(tc, test_pointwise_more);
	tcase_add_test(tc, test_reductions);
	tcase_add_test(tc, test_prod_with_zeros);
	tcase_add_test(tc, test_max_ties);
	tcase_add_test(tc, test_softmax);
	tcase_add_test(tc, test_matmul);
	tcase_add_test(tc, test_shape);
	tcase_add_test(tc, test_getitem);
	tcase_add_test(tc, test_chain);
	suite_add_tcase(s, tc);

	tc = tcase_create("engine");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_accumulate);
	tcase_add_test(tc, test_float32_grad_dtype);
	tcase_add_test(tc, test_detach_requires_grad);
	tcase_add_test(tc, test_errors);
	tcase_add_test(tc, test_node);
	tcase_add_test(tc, test_long_chain_frees);
	tcase_add_test(tc, test_custom);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(autograd_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	tensor_cache_clear();
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
