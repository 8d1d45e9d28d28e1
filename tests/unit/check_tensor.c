/* check_tensor.c - tensors: creation, element access, conversion, type
 * promotion, pointwise ops and broadcasting, where, clamp, the buffer cache.
 * (Reductions, linear algebra, shapes, printing and the generator have
 * their own check_tensor_*.c.)
 */
#include "tensor_test_util.h"

/* ---- creation and access ---- */

START_TEST(test_zeros_full_scalar)
{
	EXPECT(tensor_zeros(DT_FLOAT32, 2, SHAPE(2, 2)), DT_FLOAT32, SHAPE(2, 2), 0, 0, 0, 0);
	EXPECT(tensor_full(DT_INT64, 1, SHAPE(3), 7.9), DT_INT64, SHAPE(3), 7, 7, 7);
	EXPECT(tensor_full(DT_BOOL, 1, SHAPE(2), 2), DT_BOOL, SHAPE(2), 1, 1);
	EXPECT(tensor_full(DT_FLOAT64, 1, SHAPE(2), -1.5), DT_FLOAT64, SHAPE(2), -1.5, -1.5);
	EXPECT0(tensor_scalar(DT_FLOAT32, 3), DT_FLOAT32, 3);
	tensor *t = tensor_scalar_int(INT64_C(4611686018427387905)); /* 2^62 + 1, exact */
	ck_assert_int_eq(t->ndim, 0);
	ck_assert_int_eq(t->numel, 1);
	ck_assert(tensor_get_int(t, 0) == INT64_C(4611686018427387905));
	tensor_decref(t);
	t = tensor_empty(DT_FLOAT32, 3, SHAPE(2, 0, 4));
	ck_assert_int_eq(t->numel, 0);
	ck_assert_ptr_nonnull(t->data);
	ck_assert(t->is_leaf && !t->requires_grad && !t->grad && !t->grad_fn && !t->wrapped_number);
	tensor_decref(t);
	EXPECT_ERROR(tensor_zeros(DT_FLOAT32, 2, SHAPE(-1, 3)), "trying to create tensor with negative dimension -1: [-1, 3]");
	EXPECT_ERROR(tensor_zeros(DT_FLOAT32, 9, SHAPE(1, 1, 1, 1, 1, 1, 1, 1, 1)), "tensors have at most 8 dimensions, got 9");
}
END_TEST

START_TEST(test_arange_eye)
{
	EXPECT(tensor_arange(0, 5, 1, DT_INT64), DT_INT64, SHAPE(5), 0, 1, 2, 3, 4);
	EXPECT(tensor_arange(1, 2, 0.25, DT_FLOAT32), DT_FLOAT32, SHAPE(4), 1, 1.25, 1.5, 1.75);
	EXPECT(tensor_arange(5, 0, -2, DT_INT64), DT_INT64, SHAPE(3), 5, 3, 1);
	EXPECT(tensor_arange(0, 1, 0.3, DT_FLOAT64), DT_FLOAT64, SHAPE(4), 0, 0.3, 0.6, 0.9);
	EXPECT(tensor_arange(3, 3, 1, DT_FLOAT32), DT_FLOAT32, SHAPE(0), 0);
	EXPECT_ERROR(tensor_arange(0, 3, 0, DT_INT64), "arange: step must be nonzero");
	EXPECT_ERROR(tensor_arange(0, 3, -1, DT_INT64), "arange: upper bound and larger bound inconsistent with step sign");
	EXPECT(tensor_eye(3, DT_FLOAT32), DT_FLOAT32, SHAPE(3, 3), 1, 0, 0, 0, 1, 0, 0, 0, 1);
	EXPECT(tensor_eye(0, DT_INT64), DT_INT64, SHAPE(0, 0), 0);
	EXPECT_ERROR(tensor_eye(-1, DT_INT64), "eye: n must be greater or equal to 0, got -1");
}
END_TEST

START_TEST(test_access_item_copy)
{
	tensor *t = T1(DT_FLOAT32, 1.5, -2.5);
	ck_assert(tensor_get_double(t, 1) == -2.5);
	ck_assert(tensor_get_int(t, 1) == -2);
	double d;
	int64_t i;
	ck_assert_int_eq(tensor_item(t, &d, &i), -1);
	char *e = tj_error_take();
	ck_assert_str_eq(e, "a Tensor with 2 elements cannot be converted to Scalar");
	free(e);
	tensor *c = tensor_copy(t);
	ck_assert_ptr_ne(c->data, t->data);
	EXPECT(c, DT_FLOAT32, SHAPE(2), 1.5, -2.5);
	tensor_decref(t);
	t = tensor_scalar_int(-9);
	ck_assert_int_eq(tensor_item(t, &d, &i), 0);
	ck_assert(d == -9 && i == -9);
	tensor_decref(t);
	t = mk(DT_FLOAT64, 3, SHAPE(1, 1, 1), VALS(NAN));
	ck_assert_int_eq(tensor_item(t, &d, &i), 0);
	ck_assert(isnan(d) && i == INT64_MIN); /* no undefined behaviour */
	tensor_decref(t);
}
END_TEST

START_TEST(test_to)
{
	tensor *f = T1(DT_FLOAT32, -1.7, 0, 2.9, NAN);
	EXPECT(tensor_to(f, DT_INT64), DT_INT64, SHAPE(4), -1, 0, 2, (double)INT64_MIN);
	EXPECT(tensor_to(f, DT_BOOL), DT_BOOL, SHAPE(4), 1, 0, 1, 1);
	EXPECT(tensor_to(f, DT_FLOAT64), DT_FLOAT64, SHAPE(4), -1.7f, 0, 2.9f, NAN);
	tensor *same = tensor_to(f, DT_FLOAT32);
	ck_assert_ptr_ne(same->data, f->data);
	EXPECT(same, DT_FLOAT32, SHAPE(4), -1.7, 0, 2.9, NAN);
	tensor_decref(f);
	tensor *b = T1(DT_BOOL, 1, 0);
	EXPECT(tensor_to(b, DT_FLOAT32), DT_FLOAT32, SHAPE(2), 1, 0);
	EXPECT(tensor_to(b, DT_INT64), DT_INT64, SHAPE(2), 1, 0);
	tensor_decref(b);
	tensor *i = T1(DT_INT64, 3, -4);
	EXPECT(tensor_to(i, DT_FLOAT64), DT_FLOAT64, SHAPE(2), 3, -4);
	tensor_decref(i);
}
END_TEST

START_TEST(test_shape_format)
{
	struct strbuf sb = STRBUF_INIT;
	shape_format(1, SHAPE(10), &sb);
	sb_puts(&sb, " ");
	shape_format(2, SHAPE(2, 3), &sb);
	sb_puts(&sb, " ");
	shape_format(0, NULL, &sb);
	ck_assert_str_eq(sb.buf, "(10,) (2, 3) ()");
	sb_release(&sb);
	ck_assert(shape_equal(2, SHAPE(2, 3), 2, SHAPE(2, 3)));
	ck_assert(!shape_equal(2, SHAPE(2, 3), 2, SHAPE(3, 2)));
	ck_assert(!shape_equal(1, SHAPE(2), 2, SHAPE(2, 1)));
	int n;
	int64_t out[8];
	ck_assert_int_eq(tensor_broadcast_shape(2, SHAPE(3, 1), 3, SHAPE(2, 1, 4), &n, out), 0);
	ck_assert(shape_equal(n, out, 3, SHAPE(2, 3, 4)));
	ck_assert_int_eq(tensor_broadcast_shape(1, SHAPE(10), 1, SHAPE(3), &n, out), -1);
	EXPECT_ERROR(NULL, "cannot broadcast shapes (10,) and (3,)");
}
END_TEST

/* ---- promotion ---- */

START_TEST(test_result_type_table)
{
	tensor *b = T1(DT_BOOL, 1), *i = T1(DT_INT64, 1), *f = T1(DT_FLOAT32, 1), *d = T1(DT_FLOAT64, 1);
	tensor *zb = tensor_scalar(DT_BOOL, 1), *zi = tensor_scalar_int(1), *zf = tensor_scalar(DT_FLOAT32, 1),
	       *zd = tensor_scalar(DT_FLOAT64, 1);
	tensor *wb = py_bool(true), *wi = py_int(1), *wf = py_float(1.5);
	struct {
		tensor *a, *b;
		dtype want;
	} cases[] = {
		/* dimensioned tensors: the usual lattice */
		{b, b, DT_BOOL}, {b, i, DT_INT64}, {b, f, DT_FLOAT32}, {b, d, DT_FLOAT64},
		{i, i, DT_INT64}, {i, f, DT_FLOAT32}, {i, d, DT_FLOAT64}, {f, d, DT_FLOAT64}, {d, f, DT_FLOAT64},
		/* Python scalars never widen within a category */
		{f, wf, DT_FLOAT32}, {d, wf, DT_FLOAT64}, {i, wf, DT_FLOAT32}, {b, wf, DT_FLOAT32},
		{i, wi, DT_INT64}, {b, wi, DT_INT64}, {f, wi, DT_FLOAT32}, {b, wb, DT_BOOL}, {i, wb, DT_INT64},
		{wf, i, DT_FLOAT32}, {wi, b, DT_INT64},
		/* 0-d tensors: only raise the category */
		{f, zd, DT_FLOAT32}, {i, zd, DT_FLOAT64}, {i, zf, DT_FLOAT32}, {b, zi, DT_INT64}, {i, zb, DT_INT64},
		{f, zi, DT_FLOAT32}, {zd, f, DT_FLOAT32},
		/* only 0-d and wrapped */
		{zf, zd, DT_FLOAT64}, {zi, wf, DT_FLOAT32}, {zd, wf, DT_FLOAT64}, {zb, wi, DT_INT64},
		{wi, wf, DT_FLOAT32}, {wi, wi, DT_INT64}, {wb, wb, DT_BOOL}, {zi, zb, DT_INT64},
	};
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		dtype got = tensor_result_type(cases[k].a, cases[k].b);
		ck_assert_msg(got == cases[k].want, "case %zu: got %s, expected %s", k, dtype_name(got),
			      dtype_name(cases[k].want));
		tensor *r = tensor_binary(BINOP_add, cases[k].a, cases[k].b);
		ck_assert_ptr_nonnull(r);
		ck_assert_msg(r->dt == cases[k].want, "add case %zu", k);
		tensor_decref(r);
	}
	tensor *all[] = {b, i, f, d, zb, zi, zf, zd, wb, wi, wf};
	for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
		tensor_decref(all[k]);
}
END_TEST

START_TEST(test_special_result_dtypes)
{
	tensor *i = T1(DT_INT64, 1, 2, 3), *j = T1(DT_INT64, 2, 2, 2), *b = T1(DT_BOOL, 1, 0, 1);
	EXPECT(tensor_binary(BINOP_div, i, j), DT_FLOAT32, SHAPE(3), 0.5, 1, 1.5); /* int / int */
	EXPECT(tensor_binary(BINOP_div, b, b), DT_FLOAT32, SHAPE(3), 1, NAN, 1);
	EXPECT(tensor_binary(BINOP_lt, i, j), DT_BOOL, SHAPE(3), 1, 0, 0);
	tensor *wf = py_float(2.5);
	EXPECT(tensor_binary(BINOP_add, i, wf), DT_FLOAT32, SHAPE(3), 3.5, 4.5, 5.5); /* int + float scalar */
	EXPECT(tensor_binary(BINOP_ge, i, wf), DT_BOOL, SHAPE(3), 0, 0, 1);
	EXPECT(tensor_binary(BINOP_add, b, b), DT_BOOL, SHAPE(3), 1, 0, 1);
	EXPECT(tensor_binary(BINOP_mul, b, b), DT_BOOL, SHAPE(3), 1, 0, 1);
	tensor *wi = py_int(2);
	EXPECT(tensor_binary(BINOP_mul, b, wi), DT_INT64, SHAPE(3), 2, 0, 2);
	EXPECT_ERROR(tensor_binary(BINOP_sub, b, b),
		     "subtraction, the `-` operator, with two bool tensors is not supported, use the `^` or "
		     "`logical_xor()` operator instead");
	EXPECT_ERROR(tensor_binary(BINOP_pow, b, b), "pow is not implemented for bool tensors");
	tensor_decref(wf);
	tensor_decref(wi);
	tensor_decref(i);
	tensor_decref(j);
	tensor_decref(b);
}
END_TEST

/* ---- binary ops ---- */

START_TEST(test_binary_arith)
{
	tensor *a = T1(DT_FLOAT32, 1, 2, 3), *b = T1(DT_FLOAT32, 4, 5, 6);
	EXPECT(tensor_binary(BINOP_add, a, b), DT_FLOAT32, SHAPE(3), 5, 7, 9);
	EXPECT(tensor_binary(BINOP_sub, a, b), DT_FLOAT32, SHAPE(3), -3, -3, -3);
	EXPECT(tensor_binary(BINOP_mul, a, b), DT_FLOAT32, SHAPE(3), 4, 10, 18);
	EXPECT(tensor_binary(BINOP_div, a, b), DT_FLOAT32, SHAPE(3), 0.25, 0.4, 0.5);
	EXPECT(tensor_binary(BINOP_pow, a, b), DT_FLOAT32, SHAPE(3), 1, 32, 729);
	EXPECT(tensor_binary(BINOP_maximum, a, b), DT_FLOAT32, SHAPE(3), 4, 5, 6);
	EXPECT(tensor_binary(BINOP_minimum, a, b), DT_FLOAT32, SHAPE(3), 1, 2, 3);
	tensor *two = py_int(2), *half = py_float(0.5);
	EXPECT(tensor_binary(BINOP_pow, a, two), DT_FLOAT32, SHAPE(3), 1, 4, 9);
	EXPECT(tensor_binary(BINOP_pow, two, a), DT_FLOAT32, SHAPE(3), 2, 4, 8);
	EXPECT(tensor_binary(BINOP_pow, b, half), DT_FLOAT32, SHAPE(3), 2, sqrt(5), sqrt(6));
	EXPECT(tensor_binary(BINOP_sub, two, a), DT_FLOAT32, SHAPE(3), 1, 0, -1);
	EXPECT(tensor_binary(BINOP_div, half, a), DT_FLOAT32, SHAPE(3), 0.5, 0.25, 1.0 / 6);
	tensor *z = T1(DT_FLOAT32, 0, -0.0, 0);
	tensor *n = T1(DT_FLOAT32, 1, 1, 0);
	EXPECT(tensor_binary(BINOP_div, n, z), DT_FLOAT32, SHAPE(3), INFINITY, -INFINITY, NAN);
	tensor *d = T1(DT_FLOAT64, 0.1, 0.2);
	EXPECT(tensor_binary(BINOP_add, d, half), DT_FLOAT64, SHAPE(2), 0.6, 0.7);
	tensor *i = T1(DT_INT64, 2, 3, -2), *j = T1(DT_INT64, 3, 2, 3);
	EXPECT(tensor_binary(BINOP_pow, i, j), DT_INT64, SHAPE(3), 8, 9, -8);
	EXPECT(tensor_binary(BINOP_mul, i, j), DT_INT64, SHAPE(3), 6, 6, -6);
	EXPECT(tensor_binary(BINOP_sub, i, j), DT_INT64, SHAPE(3), -1, 1, -5);
	EXPECT(tensor_binary(BINOP_maximum, i, j), DT_INT64, SHAPE(3), 3, 3, 3);
	tensor *neg = py_int(-1);
	EXPECT_ERROR(tensor_binary(BINOP_pow, i, neg), "integers to negative integer powers are not allowed");
	tensor *big = tensor_scalar_int(INT64_MAX);
	EXPECT0(tensor_binary(BINOP_add, big, big), DT_INT64, -2); /* wraps, no UB */
	tensor *all[] = {a, b, two, half, z, n, d, i, j, neg, big};
	for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
		tensor_decref(all[k]);
}
END_TEST

START_TEST(test_floordiv_mod_python)
{
	tensor *a = T1(DT_INT64, -7, 7, -7, 7, 0), *b = T1(DT_INT64, 2, 2, -2, -2, 3);
	EXPECT(tensor_binary(BINOP_floordiv, a, b), DT_INT64, SHAPE(5), -4, 3, 3, -4, 0);
	EXPECT(tensor_binary(BINOP_mod, a, b), DT_INT64, SHAPE(5), 1, 1, -1, -1, 0);
	tensor *fa = T1(DT_FLOAT32, -7, 7, -7, 7, -7.5), *fb = T1(DT_FLOAT32, 2, 2, -2, -2, 2);
	EXPECT(tensor_binary(BINOP_floordiv, fa, fb), DT_FLOAT32, SHAPE(5), -4, 3, 3, -4, -4);
	EXPECT(tensor_binary(BINOP_mod, fa, fb), DT_FLOAT32, SHAPE(5), 1, 1, -1, -1, 0.5);
	tensor *zero = T1(DT_INT64, 1, 0, 1, 1, 1);
	EXPECT_ERROR(tensor_binary(BINOP_floordiv, a, zero), "division by zero");
	EXPECT_ERROR(tensor_binary(BINOP_mod, a, zero), "division by zero");
	tensor *wz = py_int(0);
	EXPECT_ERROR(tensor_binary(BINOP_mod, a, wz), "division by zero");
	tensor *fz = T1(DT_FLOAT32, 0);
	EXPECT(tensor_binary(BINOP_floordiv, fa, fz), DT_FLOAT32, SHAPE(5), -INFINITY, INFINITY, -INFINITY, INFINITY,
	       -INFINITY);
	tensor *m1 = py_int(-1), *mn = tensor_scalar_int(INT64_MIN);
	EXPECT0(tensor_binary(BINOP_floordiv, mn, m1), DT_INT64, (double)INT64_MIN);
	EXPECT0(tensor_binary(BINOP_mod, mn, m1), DT_INT64, 0);
	/* the divisor is not checked when nothing is computed */
	tensor *e = tensor_zeros(DT_INT64, 2, SHAPE(0, 5));
	EXPECT(tensor_binary(BINOP_mod, e, zero), DT_INT64, SHAPE(0, 5), 0);
	tensor *all[] = {a, b, fa, fb, zero, wz, fz, m1, mn, e};
	for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
		tensor_decref(all[k]);
}
END_TEST

START_TEST(test_compare_logical_nan)
{
	tensor *a = T1(DT_FLOAT32, 1, NAN, 3, 2), *b = T1(DT_FLOAT32, 2, 1, NAN, 2);
	EXPECT(tensor_binary(BINOP_eq, a, b), DT_BOOL, SHAPE(4), 0, 0, 0, 1);
	EXPECT(tensor_binary(BINOP_ne, a, b), DT_BOOL, SHAPE(4), 1, 1, 1, 0);
	EXPECT(tensor_binary(BINOP_lt, a, b), DT_BOOL, SHAPE(4), 1, 0, 0, 0);
	EXPECT(tensor_binary(BINOP_le, a, b), DT_BOOL, SHAPE(4), 1, 0, 0, 1);
	EXPECT(tensor_binary(BINOP_gt, a, b), DT_BOOL, SHAPE(4), 0, 0, 0, 0);
	EXPECT(tensor_binary(BINOP_ge, a, b), DT_BOOL, SHAPE(4), 0, 0, 0, 1);
	EXPECT(tensor_binary(BINOP_maximum, a, b), DT_FLOAT32, SHAPE(4), 2, NAN, NAN, 2);
	EXPECT(tensor_binary(BINOP_minimum, a, b), DT_FLOAT32, SHAPE(4), 1, NAN, NAN, 2);
	tensor *x = T1(DT_FLOAT32, 0, 1, 0, NAN), *y = T1(DT_INT64, 0, 0, 5, 0);
	EXPECT(tensor_binary(BINOP_logical_and, x, y), DT_BOOL, SHAPE(4), 0, 0, 0, 0);
	EXPECT(tensor_binary(BINOP_logical_or, x, y), DT_BOOL, SHAPE(4), 0, 1, 1, 1);
	tensor *i = T1(DT_INT64, 1, 2, 3), *w = py_float(2.5);
	EXPECT(tensor_binary(BINOP_eq, i, w), DT_BOOL, SHAPE(3), 0, 0, 0);
	tensor *all[] = {a, b, x, y, i, w};
	for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
		tensor_decref(all[k]);
}
END_TEST

/* out[i] = a[..] + 10 * b[..] over all broadcast positions, by index arithmetic */
static void check_broadcast_against_naive(int na, const int64_t *sa, int nb, const int64_t *sb)
{
	tensor *a = ar(DT_FLOAT64, na, sa), *b = ar(DT_FLOAT64, nb, sb);
	tensor *ten = py_float(1000);
	tensor *b10 = tensor_binary(BINOP_mul, b, ten);
	tensor *r = tensor_binary(BINOP_add, a, b10);
	ck_assert_ptr_nonnull(r);
	int n = r->ndim;
	int64_t idx[8] = {0};
	for (int64_t flat = 0; flat < r->numel; flat++) {
		int64_t ia = 0, ib = 0;
		for (int dd = 0; dd < n; dd++) {
			int ka = na - n + dd, kb = nb - n + dd;
			if (ka >= 0)
				ia = ia * sa[ka] + (sa[ka] == 1 ? 0 : idx[dd]);
			if (kb >= 0)
				ib = ib * sb[kb] + (sb[kb] == 1 ? 0 : idx[dd]);
		}
		double want = (double)ia + 1000.0 * (double)ib;
		ck_assert_msg(tensor_get_double(r, flat) == want, "at %lld: %g vs %g", (long long)flat,
			      tensor_get_double(r, flat), want);
		for (int dd = n - 1; dd >= 0; dd--) {
			if (++idx[dd] < r->shape[dd])
				break;
			idx[dd] = 0;
		}
	}
	tensor_decref(a);
	tensor_decref(b);
	tensor_decref(ten);
	tensor_decref(b10);
	tensor_decref(r);
}

START_TEST(test_broadcasting)
{
	tensor *a = TN(DT_FLOAT32, SHAPE(3, 1), 1, 2, 3), *b = TN(DT_FLOAT32, SHAPE(1, 4), 10, 20, 30, 40);
	EXPECT(tensor_binary(BINOP_add, a, b), DT_FLOAT32, SHAPE(3, 4), 11, 21, 31, 41, 12, 22, 32, 42, 13, 23, 33, 43);
	tensor *m = ar(DT_FLOAT32, 2, SHAPE(2, 3)), *v = T1(DT_FLOAT32, 1, 2, 3);
	EXPECT(tensor_binary(BINOP_mul, m, v), DT_FLOAT32, SHAPE(2, 3), 0, 2, 6, 3, 8, 15);
	EXPECT(tensor_binary(BINOP_sub, v, m), DT_FLOAT32, SHAPE(2, 3), 1, 1, 1, -2, -2, -2);
	tensor *s = tensor_scalar(DT_FLOAT32, 2);
	EXPECT(tensor_binary(BINOP_sub, s, m), DT_FLOAT32, SHAPE(2, 3), 2, 1, 0, -1, -2, -3);
	EXPECT0(tensor_binary(BINOP_mul, s, s), DT_FLOAT32, 4);
	tensor *one = TN(DT_FLOAT32, SHAPE(1, 1), 5);
	EXPECT(tensor_binary(BINOP_add, one, v), DT_FLOAT32, SHAPE(1, 3), 6, 7, 8);
	/* empty tensors */
	tensor *e = tensor_zeros(DT_FLOAT32, 2, SHAPE(0, 3)), *e1 = tensor_zeros(DT_FLOAT32, 1, SHAPE(0));
	EXPECT(tensor_binary(BINOP_add, e, v), DT_FLOAT32, SHAPE(0, 3), 0);
	EXPECT(tensor_binary(BINOP_add, e, one), DT_FLOAT32, SHAPE(0, 3), 0);
	EXPECT(tensor_binary(BINOP_add, e1, s), DT_FLOAT32, SHAPE(0), 0);
	tensor *c = tensor_zeros(DT_FLOAT32, 2, SHAPE(2, 1)), *e20 = tensor_zeros(DT_FLOAT32, 2, SHAPE(2, 0));
	EXPECT(tensor_binary(BINOP_add, c, e20), DT_FLOAT32, SHAPE(2, 0), 0);
	EXPECT_ERROR(tensor_binary(BINOP_add, e1, v), "cannot broadcast shapes (0,) and (3,)");
	tensor *x10 = tensor_zeros(DT_FLOAT32, 1, SHAPE(10)), *x3 = tensor_zeros(DT_FLOAT32, 1, SHAPE(3));
	EXPECT_ERROR(tensor_binary(BINOP_add, x10, x3), "cannot broadcast shapes (10,) and (3,)");
	EXPECT_ERROR(tensor_binary(BINOP_add, m, x10), "cannot broadcast shapes (2, 3) and (10,)");
	tensor *all[] = {a, b, m, v, s, one, e, e1, c, e20, x10, x3};
	for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
		tensor_decref(all[k]);
	/* the general path against index arithmetic */
	check_broadcast_against_naive(3, SHAPE(2, 1, 3), 2, SHAPE(4, 1));
	check_broadcast_against_naive(3, SHAPE(5, 1, 7), 3, SHAPE(1, 6, 7));
	check_broadcast_against_naive(4, SHAPE(2, 3, 1, 5), 2, SHAPE(4, 1));
	check_broadcast_against_naive(1, SHAPE(17), 3, SHAPE(3, 2, 17));
	check_broadcast_against_naive(3, SHAPE(33, 1, 1), 1, SHAPE(19));
	check_broadcast_against_naive(2, SHAPE(1, 1), 4, SHAPE(2, 1, 3, 1));
}
END_TEST

START_TEST(test_large_same_shape)
{
	/* long enough for the vector blocks and the scalar tail */
	int64_t n = 1037;
	tensor *a = ar(DT_FLOAT32, 1, &n), *b = ar(DT_INT64, 1, &n);
	tensor *r = tensor_binary(BINOP_add, a, b);
	ck_assert_int_eq(r->dt, DT_FLOAT32);
	for (int64_t i = 0; i < n; i++)
		ck_assert(tensor_get_double(r, i) == 2.0 * (double)i);
	tensor_decref(r);
	tensor *h = py_float(0.5);
	r = tensor_binary(BINOP_mul, h, b);
	for (int64_t i = 0; i < n; i++)
		ck_assert(tensor_get_double(r, i) == 0.5 * (double)i);
	tensor_decref(r);
	r = tensor_binary(BINOP_lt, b, h);
	ck_assert_int_eq(r->dt, DT_BOOL);
	ck_assert(tensor_get_int(r, 0) == 1 && tensor_get_int(r, 1) == 0 && tensor_get_int(r, n - 1) == 0);
	tensor_decref(r);
	tensor_decref(a);
	tensor_decref(b);
	tensor_decref(h);
}
END_TEST

/* ---- unary ---- */

START_TEST(test_unary_float)
{
	const double xs[] = {-2.5, -0.5, 0, 0.5, 1.5, 3};
	tensor *x = T1(DT_FLOAT64, -2.5, -0.5, 0, 0.5, 1.5, 3);
	for (int op = 0; op < UNOP_COUNT; op++) {
		if (op == UNOP_logical_not)
			continue;
		tensor *r = tensor_unary((unop)op, x);
		ck_assert_ptr_nonnull(r);
		ck_assert_int_eq(r->dt, DT_FLOAT64);
		for (int i = 0; i < 6; i++) {
			double v = xs[i], want = 0;
			switch ((unop)op) {
			case UNOP_neg: want = -v; break;
			case UNOP_abs: want = fabs(v); break;
			case UNOP_exp: want = exp(v); break;
			case UNOP_log: want = log(v); break;
			case UNOP_sqrt: want = sqrt(v); break;
			case UNOP_rsqrt: want = 1 / sqrt(v); break;
			case UNOP_sin: want = sin(v); break;
			case UNOP_cos: want = cos(v); break;
			case UNOP_tanh: want = tanh(v); break;
			case UNOP_sigmoid: want = 1 / (1 + exp(-v)); break;
			case UNOP_relu: want = v > 0 ? v : 0; break;
			case UNOP_gelu: want = 0.5 * v * (1 + erf(v / sqrt(2))); break;
			case UNOP_silu: want = v / (1 + exp(-v)); break;
			case UNOP_floor: want = floor(v); break;
			case UNOP_ceil: want = ceil(v); break;
			case UNOP_round: want = nearbyint(v); break;
			case UNOP_sign: want = (v > 0) - (v < 0); break;
			case UNOP_reciprocal: want = 1 / v; break;
			default: break;
			}
			ck_assert_msg(close_enough(tensor_get_double(r, i), want, 1e-12), "%s(%g) = %g, expected %g",
				      unop_names[op], v, tensor_get_double(r, i), want);
		}
		tensor_decref(r);
	}
	tensor_decref(x);
	/* float32 keeps float32; round is half to even */
	tensor *f = T1(DT_FLOAT32, 0.5, 1.5, 2.5, -0.5, NAN);
	EXPECT(tensor_unary(UNOP_round, f), DT_FLOAT32, SHAPE(5), 0, 2, 2, -0.0, NAN);
	EXPECT(tensor_unary(UNOP_relu, f), DT_FLOAT32, SHAPE(5), 0.5, 1.5, 2.5, 0, NAN);
	EXPECT(tensor_unary(UNOP_sigmoid, f), DT_FLOAT32, SHAPE(5), 0.62245933, 0.81757448, 0.92414182, 0.37754067, NAN);
	tensor_decref(f);
	tensor *big = T1(DT_FLOAT32, -100, 100);
	EXPECT(tensor_unary(UNOP_sigmoid, big), DT_FLOAT32, SHAPE(2), 0, 1);
	EXPECT(tensor_unary(UNOP_exp, big), DT_FLOAT32, SHAPE(2), 3.7200760e-44, INFINITY);
	tensor_decref(big);
}
END_TEST

START_TEST(test_unary_int_bool)
{
	tensor *i = T1(DT_INT64, -3, 0, 4);
	EXPECT(tensor_unary(UNOP_neg, i), DT_INT64, SHAPE(3), 3, 0, -4);
	EXPECT(tensor_unary(UNOP_abs, i), DT_INT64, SHAPE(3), 3, 0, 4);
	EXPECT(tensor_unary(UNOP_relu, i), DT_INT64, SHAPE(3), 0, 0, 4);
	EXPECT(tensor_unary(UNOP_sign, i), DT_INT64, SHAPE(3), -1, 0, 1);
	EXPECT(tensor_unary(UNOP_floor, i), DT_INT64, SHAPE(3), -3, 0, 4);
	EXPECT(tensor_unary(UNOP_round, i), DT_INT64, SHAPE(3), -3, 0, 4);
	EXPECT(tensor_unary(UNOP_exp, i), DT_FLOAT32, SHAPE(3), exp(-3), 1, exp(4));
	EXPECT(tensor_unary(UNOP_sqrt, i), DT_FLOAT32, SHAPE(3), NAN, 0, 2);
	EXPECT(tensor_unary(UNOP_reciprocal, i), DT_FLOAT32, SHAPE(3), -1.0 / 3, INFINITY, 0.25);
	EXPECT(tensor_unary(UNOP_logical_not, i), DT_BOOL, SHAPE(3), 0, 1, 0);
	tensor *b = T1(DT_BOOL, 1, 0);
	EXPECT(tensor_unary(UNOP_logical_not, b), DT_BOOL, SHAPE(2), 0, 1);
	EXPECT(tensor_unary(UNOP_abs, b), DT_BOOL, SHAPE(2), 1, 0);
	EXPECT(tensor_unary(UNOP_sigmoid, b), DT_FLOAT32, SHAPE(2), 0.7310586, 0.5);
	EXPECT_ERROR(tensor_unary(UNOP_neg, b), "negation, the `-` operator, on a bool tensor is not supported, use "
						"the `~` or `logical_not()` operator instead");
	tensor *f = T1(DT_FLOAT32, 0, NAN, -2);
	EXPECT(tensor_unary(UNOP_logical_not, f), DT_BOOL, SHAPE(3), 1, 0, 0);
	tensor *mn = tensor_scalar_int(INT64_MIN);
	EXPECT0(tensor_unary(UNOP_neg, mn), DT_INT64, (double)INT64_MIN);
	tensor_decref(mn);
	tensor_decref(f);
	tensor_decref(i);
	tensor_decref(b);
}
END_TEST

/* ---- where, clamp ---- */

START_TEST(test_where)
{
	tensor *c = T1(DT_BOOL, 1, 0, 1), *a = T1(DT_FLOAT32, 1, 2, 3), *b = T1(DT_FLOAT32, -1, -2, -3);
	EXPECT(tensor_where(c, a, b), DT_FLOAT32, SHAPE(3), 1, -2, 3);
	tensor *z = py_int(0);
	EXPECT(tensor_where(c, a, z), DT_FLOAT32, SHAPE(3), 1, 0, 3);
	tensor *col = TN(DT_BOOL, SHAPE(2, 1), 1, 0), *i = T1(DT_INT64, 7, 8, 9), *d = tensor_scalar(DT_FLOAT64, 0.5);
	EXPECT(tensor_where(col, i, d), DT_FLOAT64, SHAPE(2, 3), 7, 8, 9, 0.5, 0.5, 0.5);
	EXPECT(tensor_where(col, i, z), DT_INT64, SHAPE(2, 3), 7, 8, 9, 0, 0, 0);
	EXPECT_ERROR(tensor_where(a, a, b), "where expected condition to be a boolean tensor, but got a tensor with dtype float32");
	tensor *x4 = tensor_zeros(DT_FLOAT32, 1, SHAPE(4));
	EXPECT_ERROR(tensor_where(c, x4, b), "cannot broadcast shapes (3,) and (4,)");
	tensor *all[] = {c, a, b, z, col, i, d, x4};
	for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
		tensor_decref(all[k]);
}
END_TEST

START_TEST(test_clamp)
{
	tensor *x = T1(DT_FLOAT32, -2, 0.5, 3, NAN), *lo = py_float(0), *hi = py_float(1);
	EXPECT(tensor_clamp(x, lo, hi), DT_FLOAT32, SHAPE(4), 0, 0.5, 1, NAN);
	EXPECT(tensor_clamp(x, lo, NULL), DT_FLOAT32, SHAPE(4), 0, 0.5, 3, NAN);
	EXPECT(tensor_clamp(x, NULL, hi), DT_FLOAT32, SHAPE(4), -2, 0.5, 1, NAN);
	EXPECT(tensor_clamp(x, hi, lo), DT_FLOAT32, SHAPE(4), 0, 0, 0, NAN); /* lo > hi: hi */
	tensor *i = T1(DT_INT64, -5, 2, 9), *ilo = py_int(0), *ihi = py_int(4), *half = py_float(0.5);
	EXPECT(tensor_clamp(i, ilo, ihi), DT_INT64, SHAPE(3), 0, 2, 4);
	EXPECT(tensor_clamp(i, half, NULL), DT_FLOAT32, SHAPE(3), 0.5, 2, 9);
	tensor *tlo = T1(DT_FLOAT32, 0, 3, 0, 0);
	EXPECT(tensor_clamp(x, tlo, NULL), DT_FLOAT32, SHAPE(4), 0, 3, 3, NAN);
	EXPECT_ERROR(tensor_clamp(x, NULL, NULL), "clamp: at least one of 'min' or 'max' must not be None");
	EXPECT(tensor_ext_clip(x, 0, 1), DT_FLOAT32, SHAPE(4), 0, 0.5, 1, NAN);
	EXPECT(tensor_ext_clip(i, 0, 4), DT_INT64, SHAPE(3), 0, 2, 4);
	tensor *all[] = {x, lo, hi, i, ilo, ihi, half, tlo};
	for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
		tensor_decref(all[k]);
}
END_TEST

/* ---- memory ---- */

START_TEST(test_buffer_cache)
{
	tensor_cache_clear();
	ck_assert_uint_eq(tensor_cache_bytes(), 0);
	int64_t n = 1 << 20; /* 4 MiB of float32 */
	tensor *t = tensor_zeros(DT_FLOAT32, 1, &n);
	void *p = t->data;
	tensor_decref(t);
	ck_assert_uint_ge(tensor_cache_bytes(), (size_t)4 << 20);
	t = tensor_empty(DT_FLOAT32, 1, &n); /* the same buffer comes back */
	ck_assert_ptr_eq(t->data, p);
	ck_assert_uint_eq(tensor_cache_bytes(), 0);
	/* views share storage and keep it alive */
	tensor *v = tensor_reshape(t, 2, SHAPE(1024, 1024));
	tensor_decref(t);
	ck_assert_uint_eq(tensor_cache_bytes(), 0);
	ck_assert_ptr_eq(v->data, p);
	tensor_decref(v);
	ck_assert_uint_ge(tensor_cache_bytes(), (size_t)4 << 20);
	/* small buffers are not cached */
	t = tensor_zeros(DT_FLOAT32, 1, SHAPE(100));
	tensor_decref(t);
	ck_assert_uint_ge(tensor_cache_bytes(), (size_t)4 << 20);
	tensor_cache_clear();
	ck_assert_uint_eq(tensor_cache_bytes(), 0);
	/* a slightly smaller request reuses a buffer of the same size class */
	n = 1000000;
	t = tensor_zeros(DT_FLOAT32, 1, &n);
	p = t->data;
	tensor_decref(t);
	n = 999000;
	t = tensor_zeros(DT_FLOAT32, 1, &n);
	ck_assert_ptr_eq(t->data, p);
	tensor_decref(t);
	tensor_cache_clear();
}
END_TEST

START_TEST(test_absurd_sizes)
{
	/* errors, never crashes or undefined behaviour */
	int64_t big = INT64_C(1) << 31;
	tensor *col = tensor_zeros(DT_FLOAT32, 2, SHAPE(0, 1)), *a = tensor_empty(DT_BOOL, 2, (int64_t[]){1, 1});
	tensor *r = tensor_expand(a, 2, (int64_t[]){big, big});
	EXPECT_ERROR(r, "tensor of shape (2147483648, 2147483648) is too large");
	EXPECT(tensor_expand(col, 2, (int64_t[]){0, big}), DT_FLOAT32, SHAPE(0, 2147483648), 0);
	EXPECT_ERROR(tensor_eye(INT64_C(1) << 40, DT_FLOAT32), "tensor of shape (1099511627776, 1099511627776) is too large");
	EXPECT_ERROR(tensor_arange(0, 1e300, 1, DT_FLOAT32), "arange: too many elements (1e+300)");
	EXPECT(tensor_arange(9e18, 9.1e18, 5e16, DT_INT64), DT_INT64, SHAPE(2), 9e18, 9.05e18);
	tensor_decref(col);
	tensor_decref(a);
}
END_TEST

START_TEST(test_grad_released)
{
	tensor *t = T1(DT_FLOAT32, 1, 2);
	t->grad = T1(DT_FLOAT32, 0, 0); /* tensor_free drops the gradient too (no leak under ASan) */
	tensor_decref(t);
}
END_TEST

static Suite *tensor_suite(void)
{
	Suite *s = suite_create("tensor");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60); /* sanitizer builds on a busy machine */
	tcase_add_test(tc, test_zeros_full_scalar);
	tcase_add_test(tc, test_arange_eye);
	tcase_add_test(tc, test_access_item_copy);
	tcase_add_test(tc, test_to);
	tcase_add_test(tc, test_shape_format);
	tcase_add_test(tc, test_result_type_table);
	tcase_add_test(tc, test_special_result_dtypes);
	tcase_add_test(tc, test_binary_arith);
	tcase_add_test(tc, test_floordiv_mod_python);
	tcase_add_test(tc, test_compare_logical_nan);
	tcase_add_test(tc, test_broadcasting);
	tcase_add_test(tc, test_large_same_shape);
	tcase_add_test(tc, test_unary_float);
	tcase_add_test(tc, test_unary_int_bool);
	tcase_add_test(tc, test_where);
	tcase_add_test(tc, test_clamp);
	tcase_add_test(tc, test_buffer_cache);
	tcase_add_test(tc, test_absurd_sizes);
	tcase_add_test(tc, test_grad_released);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(tensor_suite());
}
