/* check_tensor_reduce.c - reductions, softmax, log_softmax, sum_to_shape. */
#include "tensor_test_util.h"

START_TEST(test_sum_dtypes)
{
	tensor *i = T1(DT_INT64, 1, 2, 3), *b = T1(DT_BOOL, 1, 0, 1), *f = T1(DT_FLOAT32, 0.5, 1.5);
	EXPECT0(tensor_reduce(REDOP_sum, i, NULL, 0, false, 0), DT_INT64, 6);
	EXPECT0(tensor_reduce(REDOP_sum, b, NULL, 0, false, 0), DT_INT64, 2);
	EXPECT0(tensor_reduce(REDOP_sum, f, NULL, 0, false, 0), DT_FLOAT32, 2);
	EXPECT0(tensor_reduce(REDOP_prod, i, NULL, 0, false, 0), DT_INT64, 6);
	EXPECT0(tensor_reduce(REDOP_prod, b, NULL, 0, false, 0), DT_INT64, 0);
	EXPECT0(tensor_reduce(REDOP_max, b, NULL, 0, false, 0), DT_BOOL, 1);
	EXPECT0(tensor_reduce(REDOP_min, i, NULL, 0, false, 0), DT_INT64, 1);
	EXPECT0(tensor_reduce(REDOP_mean, f, NULL, 0, false, 0), DT_FLOAT32, 1);
	EXPECT_ERROR(tensor_reduce(REDOP_mean, i, NULL, 0, false, 0), "mean() needs a floating point tensor, got int64");
	EXPECT_ERROR(tensor_reduce(REDOP_var, b, NULL, 0, false, 1), "var() needs a floating point tensor, got bool");
	tensor_decref(i);
	tensor_decref(b);
	tensor_decref(f);
}
END_TEST

START_TEST(test_dims_keepdim)
{
	tensor *x = ar(DT_FLOAT32, 2, SHAPE(2, 3));
	EXPECT(tensor_reduce(REDOP_sum, x, (int[]){0}, 1, false, 0), DT_FLOAT32, SHAPE(3), 3, 5, 7);
	EXPECT(tensor_reduce(REDOP_sum, x, (int[]){1}, 1, false, 0), DT_FLOAT32, SHAPE(2), 3, 12);
	EXPECT(tensor_reduce(REDOP_sum, x, (int[]){-1}, 1, true, 0), DT_FLOAT32, SHAPE(2, 1), 3, 12);
	EXPECT(tensor_reduce(REDOP_sum, x, (int[]){-2}, 1, true, 0), DT_FLOAT32, SHAPE(1, 3), 3, 5, 7);
	EXPECT(tensor_reduce(REDOP_sum, x, (int[]){0, 1}, 2, true, 0), DT_FLOAT32, SHAPE(1, 1), 15);
	EXPECT(tensor_reduce(REDOP_sum, x, NULL, 0, true, 0), DT_FLOAT32, SHAPE(1, 1), 15);
	EXPECT(tensor_reduce(REDOP_mean, x, (int[]){0}, 1, false, 0), DT_FLOAT32, SHAPE(3), 1.5, 2.5, 3.5);
	EXPECT(tensor_reduce(REDOP_max, x, (int[]){1}, 1, false, 0), DT_FLOAT32, SHAPE(2), 2, 5);
	EXPECT(tensor_reduce(REDOP_min, x, (int[]){0}, 1, true, 0), DT_FLOAT32, SHAPE(1, 3), 0, 1, 2);
	EXPECT(tensor_reduce(REDOP_prod, x, (int[]){0}, 1, false, 0), DT_FLOAT32, SHAPE(3), 0, 4, 10);
	EXPECT(tensor_reduce(REDOP_var, x, (int[]){1}, 1, false, 1), DT_FLOAT32, SHAPE(2), 1, 1);
	EXPECT(tensor_reduce(REDOP_var, x, (int[]){0}, 1, false, 1), DT_FLOAT32, SHAPE(3), 4.5, 4.5, 4.5);
	EXPECT(tensor_reduce(REDOP_var, x, (int[]){1}, 1, false, 0), DT_FLOAT32, SHAPE(2), 2.0 / 3, 2.0 / 3);
	EXPECT0(tensor_reduce(REDOP_var, x, NULL, 0, false, 1), DT_FLOAT32, 3.5);
	EXPECT_ERROR(tensor_reduce(REDOP_sum, x, (int[]){2}, 1, false, 0),
		     "dimension out of range (expected to be in range of [-2, 1], but got 2)");
	EXPECT_ERROR(tensor_reduce(REDOP_sum, x, (int[]){-3}, 1, false, 0),
		     "dimension out of range (expected to be in range of [-2, 1], but got -3)");
	EXPECT_ERROR(tensor_reduce(REDOP_sum, x, (int[]){1, -1}, 2, false, 0),
		     "dim 1 appears multiple times in the list of dims");
	tensor_decref(x);
	/* 3-D: middle, outer, non-adjacent dims */
	tensor *y = ar(DT_INT64, 3, SHAPE(2, 3, 4));
	EXPECT(tensor_reduce(REDOP_sum, y, (int[]){1}, 1, false, 0), DT_INT64, SHAPE(2, 4), 12, 15, 18, 21, 48, 51, 54, 57);
	EXPECT(tensor_reduce(REDOP_sum, y, (int[]){0, 2}, 2, false, 0), DT_INT64, SHAPE(3), 60, 92, 124);
	EXPECT(tensor_reduce(REDOP_sum, y, (int[]){2, 0}, 2, true, 0), DT_INT64, SHAPE(1, 3, 1), 60, 92, 124);
	EXPECT(tensor_reduce(REDOP_max, y, (int[]){0, 2}, 2, false, 0), DT_INT64, SHAPE(3), 15, 19, 23);
	EXPECT(tensor_reduce(REDOP_sum, y, (int[]){1, 2}, 2, false, 0), DT_INT64, SHAPE(2), 66, 210);
	tensor_decref(y);
}
END_TEST

START_TEST(test_zero_d_and_empty)
{
	tensor *s = tensor_scalar(DT_FLOAT32, 4);
	EXPECT0(tensor_reduce(REDOP_sum, s, (int[]){0}, 1, false, 0), DT_FLOAT32, 4);
	EXPECT0(tensor_reduce(REDOP_max, s, (int[]){-1}, 1, true, 0), DT_FLOAT32, 4);
	EXPECT0(tensor_reduce(REDOP_argmax, s, NULL, 0, false, 0), DT_INT64, 0);
	EXPECT_ERROR(tensor_reduce(REDOP_sum, s, (int[]){1}, 1, false, 0),
		     "dimension out of range (expected to be in range of [-1, 0], but got 1)");
	tensor_decref(s);
	tensor *e = tensor_zeros(DT_FLOAT32, 2, SHAPE(0, 3));
	EXPECT0(tensor_reduce(REDOP_sum, e, NULL, 0, false, 0), DT_FLOAT32, 0);
	EXPECT0(tensor_reduce(REDOP_prod, e, NULL, 0, false, 0), DT_FLOAT32, 1);
	EXPECT0(tensor_reduce(REDOP_mean, e, NULL, 0, false, 0), DT_FLOAT32, NAN);
	EXPECT(tensor_reduce(REDOP_sum, e, (int[]){0}, 1, false, 0), DT_FLOAT32, SHAPE(3), 0, 0, 0);
	EXPECT(tensor_reduce(REDOP_max, e, (int[]){1}, 1, false, 0), DT_FLOAT32, SHAPE(0), 0);
	EXPECT_ERROR(tensor_reduce(REDOP_max, e, NULL, 0, false, 0), "max(): expected a non-empty tensor");
	EXPECT_ERROR(tensor_reduce(REDOP_argmax, e, (int[]){0}, 1, false, 0), "argmax(): expected a non-empty tensor");
	tensor_decref(e);
}
END_TEST

START_TEST(test_max_nan_argmax)
{
	tensor *x = TN(DT_FLOAT32, SHAPE(2, 3), 1, NAN, 3, 5, 5, 4);
	EXPECT(tensor_reduce(REDOP_max, x, (int[]){1}, 1, false, 0), DT_FLOAT32, SHAPE(2), NAN, 5);
	EXPECT(tensor_reduce(REDOP_min, x, (int[]){0}, 1, false, 0), DT_FLOAT32, SHAPE(3), 1, NAN, 3);
	EXPECT(tensor_reduce(REDOP_argmax, x, (int[]){1}, 1, false, 0), DT_INT64, SHAPE(2), 1, 0);
	EXPECT(tensor_reduce(REDOP_argmin, x, (int[]){1}, 1, true, 0), DT_INT64, SHAPE(2, 1), 1, 2);
	EXPECT0(tensor_reduce(REDOP_argmax, x, NULL, 0, false, 0), DT_INT64, 1);
	tensor *y = TN(DT_INT64, SHAPE(2, 3), 3, 9, 9, 9, 1, 9);
	EXPECT0(tensor_reduce(REDOP_argmax, y, NULL, 0, false, 0), DT_INT64, 1); /* first of the ties */
	EXPECT(tensor_reduce(REDOP_argmax, y, NULL, 0, true, 0), DT_INT64, SHAPE(1, 1), 1);
	EXPECT(tensor_reduce(REDOP_argmax, y, (int[]){0}, 1, false, 0), DT_INT64, SHAPE(3), 1, 0, 0);
	EXPECT(tensor_reduce(REDOP_argmin, y, (int[]){-1}, 1, false, 0), DT_INT64, SHAPE(2), 0, 1);
	EXPECT_ERROR(tensor_reduce(REDOP_argmax, y, (int[]){0, 1}, 2, false, 0), "argmax() takes a single dim, got 2");
	tensor *v, *ix;
	ck_assert_int_eq(tensor_reduce_with_indices(REDOP_max, y, 1, false, &v, &ix), 0);
	EXPECT(v, DT_INT64, SHAPE(2), 9, 9);
	EXPECT(ix, DT_INT64, SHAPE(2), 1, 0);
	ck_assert_int_eq(tensor_reduce_with_indices(REDOP_min, y, 0, true, &v, &ix), 0);
	EXPECT(v, DT_INT64, SHAPE(1, 3), 3, 1, 9);
	EXPECT(ix, DT_INT64, SHAPE(1, 3), 0, 1, 0);
	ck_assert_int_eq(tensor_reduce_with_indices(REDOP_max, x, -1, false, &v, &ix), 0);
	EXPECT(v, DT_FLOAT32, SHAPE(2), NAN, 5);
	EXPECT(ix, DT_INT64, SHAPE(2), 1, 0);
	ck_assert_int_eq(tensor_reduce_with_indices(REDOP_max, x, 2, false, &v, &ix), -1);
	ck_assert_ptr_null(v);
	EXPECT_ERROR(NULL, "dimension out of range (expected to be in range of [-2, 1], but got 2)");
	tensor_decref(x);
	tensor_decref(y);
}
END_TEST

/* every subset of dims of a 4-D tensor: sum, max and var against loops */
START_TEST(test_all_dim_subsets_naive)
{
	const int64_t shape[4] = {3, 4, 2, 5};
	tensor *x = tensor_randn(DT_FLOAT64, 4, shape);
	for (int mask = 1; mask < 16; mask++) {
		int dims[4], nd = 0;
		for (int d = 0; d < 4; d++)
			if (mask & (1 << d))
				dims[nd++] = d - (d % 2 ? 4 : 0); /* mix negative dims in */
		tensor *s = tensor_reduce(REDOP_sum, x, dims, nd, true, 0);
		tensor *m = tensor_reduce(REDOP_max, x, dims, nd, true, 0);
		tensor *v = tensor_reduce(REDOP_var, x, dims, nd, true, 1);
		ck_assert_ptr_nonnull(s);
		ck_assert_ptr_nonnull(m);
		ck_assert_ptr_nonnull(v);
		for (int64_t o = 0; o < s->numel; o++) {
			/* the output index o in keepdim coordinates */
			int64_t oi[4], rem = o;
			for (int d = 3; d >= 0; d--) {
				oi[d] = rem % s->shape[d];
				rem /= s->shape[d];
			}
			double sum = 0, mx = -INFINITY, sq = 0;
			int64_t cnt = 0;
			for (int64_t f = 0; f < x->numel; f++) {
				int64_t xi[4], r2 = f;
				for (int d = 3; d >= 0; d--) {
					xi[d] = r2 % shape[d];
					r2 /= shape[d];
				}
				bool in = true;
				for (int d = 0; d < 4; d++)
					if (!(mask & (1 << d)) && xi[d] != oi[d])
						in = false;
				if (!in)
					continue;
				double val = tensor_get_double(x, f);
				sum += val;
				sq += val * val;
				mx = val > mx ? val : mx;
				cnt++;
			}
			double var = (sq - sum * sum / (double)cnt) / (double)(cnt - 1);
			ck_assert(close_enough(tensor_get_double(s, o), sum, 1e-9));
			ck_assert(tensor_get_double(m, o) == mx);
			ck_assert_msg(close_enough(tensor_get_double(v, o), var, 1e-9), "var mask %d", mask);
		}
		tensor_decref(s);
		tensor_decref(m);
		tensor_decref(v);
	}
	tensor_decref(x);
}
END_TEST

START_TEST(test_large_sum_accuracy)
{
	/* 1M float32 ones plus a small value: double accumulation keeps it */
	int64_t n = 1 << 20;
	tensor *x = tensor_full(DT_FLOAT32, 1, &n, 0.1);
	expect_tol(tensor_reduce(REDOP_sum, x, NULL, 0, false, 0), DT_FLOAT32, 0, NULL, VALS(104857.6), 1e-6, __FILE__, __LINE__);
	tensor *m = tensor_reshape(x, 2, SHAPE(1024, 1024));
	tensor *r = tensor_reduce(REDOP_mean, m, (int[]){0}, 1, false, 0);
	for (int64_t i = 0; i < 1024; i++)
		ck_assert(close_enough(tensor_get_double(r, i), 0.1, 1e-6));
	tensor_decref(r);
	tensor_decref(m);
	tensor_decref(x);
}
END_TEST

START_TEST(test_softmax)
{
	tensor *x = TN(DT_FLOAT32, SHAPE(2, 3), 1, 2, 3, 1000, 1001, 1002);
	double p0 = 0.09003057, p1 = 0.24472847, p2 = 0.66524096;
	EXPECT(tensor_softmax(x, 1), DT_FLOAT32, SHAPE(2, 3), p0, p1, p2, p0, p1, p2);
	EXPECT(tensor_softmax(x, -1), DT_FLOAT32, SHAPE(2, 3), p0, p1, p2, p0, p1, p2);
	EXPECT(tensor_log_softmax(x, 1), DT_FLOAT32, SHAPE(2, 3), log(p0), log(p1), log(p2), log(p0), log(p1), log(p2));
	EXPECT(tensor_softmax(x, 0), DT_FLOAT32, SHAPE(2, 3), 0, 0, 0, 1, 1, 1);
	EXPECT_TOL(tensor_log_softmax(x, 0), DT_FLOAT32, SHAPE(2, 3), 1e-4, -999, -999, -999, 0, 0, 0);
	EXPECT_ERROR(tensor_softmax(x, 2), "dimension out of range (expected to be in range of [-2, 1], but got 2)");
	tensor_decref(x);
	tensor *y = T1(DT_FLOAT64, -INFINITY, 0, -INFINITY);
	EXPECT(tensor_softmax(y, 0), DT_FLOAT64, SHAPE(3), 0, 1, 0);
	EXPECT(tensor_log_softmax(y, 0), DT_FLOAT64, SHAPE(3), -INFINITY, 0, -INFINITY);
	tensor_decref(y);
	tensor *i = T1(DT_INT64, 0, 0);
	EXPECT(tensor_softmax(i, 0), DT_FLOAT32, SHAPE(2), 0.5, 0.5);
	tensor_decref(i);
	/* middle dim of a 3-D tensor: every slice sums to 1 */
	tensor *z = tensor_randn(DT_FLOAT32, 3, SHAPE(3, 5, 4));
	tensor *p = tensor_softmax(z, 1), *lp = tensor_log_softmax(z, 1);
	tensor *s = tensor_reduce(REDOP_sum, p, (int[]){1}, 1, false, 0);
	for (int64_t k = 0; k < s->numel; k++)
		ck_assert(close_enough(tensor_get_double(s, k), 1, 1e-6));
	for (int64_t k = 0; k < p->numel; k++)
		ck_assert(close_enough(log(tensor_get_double(p, k)), tensor_get_double(lp, k), 1e-5));
	tensor_decref(z);
	tensor_decref(p);
	tensor_decref(lp);
	tensor_decref(s);
	tensor *e = tensor_zeros(DT_FLOAT32, 2, SHAPE(0, 3));
	EXPECT(tensor_softmax(e, 1), DT_FLOAT32, SHAPE(0, 3), 0);
	tensor_decref(e);
}
END_TEST

START_TEST(test_sum_to_shape)
{
	tensor *g = ar(DT_FLOAT32, 3, SHAPE(2, 3, 4));
	EXPECT(tensor_sum_to_shape(g, 2, SHAPE(3, 1)), DT_FLOAT32, SHAPE(3, 1), 60, 92, 124);
	EXPECT(tensor_sum_to_shape(g, 1, SHAPE(4)), DT_FLOAT32, SHAPE(4), 60, 66, 72, 78);
	EXPECT(tensor_sum_to_shape(g, 2, SHAPE(1, 4)), DT_FLOAT32, SHAPE(1, 4), 60, 66, 72, 78);
	EXPECT0(tensor_sum_to_shape(g, 0, NULL), DT_FLOAT32, 276);
	EXPECT(tensor_sum_to_shape(g, 3, SHAPE(2, 1, 1)), DT_FLOAT32, SHAPE(2, 1, 1), 66, 210);
	tensor *same = tensor_sum_to_shape(g, 3, SHAPE(2, 3, 4));
	ck_assert(shape_equal(same->ndim, same->shape, 3, SHAPE(2, 3, 4)));
	ck_assert(tensor_get_double(same, 23) == 23);
	tensor_decref(same);
	EXPECT_ERROR(tensor_sum_to_shape(g, 1, SHAPE(3)), "sum_to_shape: shape (2, 3, 4) cannot be summed to (3,)");
	tensor_decref(g);
}
END_TEST

static Suite *reduce_suite(void)
{
	Suite *s = suite_create("tensor_reduce");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60); /* sanitizer builds on a busy machine */
	tcase_add_test(tc, test_sum_dtypes);
	tcase_add_test(tc, test_dims_keepdim);
	tcase_add_test(tc, test_zero_d_and_empty);
	tcase_add_test(tc, test_max_nan_argmax);
	tcase_add_test(tc, test_all_dim_subsets_naive);
	tcase_add_test(tc, test_large_sum_accuracy);
	tcase_add_test(tc, test_softmax);
	tcase_add_test(tc, test_sum_to_shape);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(reduce_suite());
}
