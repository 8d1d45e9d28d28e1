/* check_tensor_shape.c - reshape, transpose, permute, squeeze, unsqueeze,
 * expand, cat, stack, indexing and its adjoint. */
#include "tensor_test_util.h"

static struct index_spec I(int64_t i) { return (struct index_spec){.kind = INDEX_INT, .i = i}; }
static struct index_spec ALL(void) { return (struct index_spec){.kind = INDEX_SLICE, .step = 1}; }
static struct index_spec SL(int64_t a, int64_t b, int64_t step)
{
	return (struct index_spec){.kind = INDEX_SLICE, .has_start = true, .has_stop = true, .start = a, .stop = b, .step = step};
}
static struct index_spec FROM(int64_t a) { return (struct index_spec){.kind = INDEX_SLICE, .has_start = true, .start = a, .step = 1}; }
static struct index_spec TO(int64_t b) { return (struct index_spec){.kind = INDEX_SLICE, .has_stop = true, .stop = b, .step = 1}; }
static struct index_spec STEP(int64_t s) { return (struct index_spec){.kind = INDEX_SLICE, .step = s}; }
static struct index_spec NEW(void) { return (struct index_spec){.kind = INDEX_NEWAXIS}; }
static struct index_spec ELL(void) { return (struct index_spec){.kind = INDEX_ELLIPSIS}; }
#define IX(x, ...) tensor_index(x, (const struct index_spec[]){__VA_ARGS__}, \
				(int)(sizeof((struct index_spec[]){__VA_ARGS__}) / sizeof(struct index_spec)))

START_TEST(test_reshape)
{
	tensor *x = ar(DT_FLOAT32, 1, SHAPE(6));
	tensor *r = tensor_reshape(x, 2, SHAPE(2, -1));
	ck_assert_ptr_eq(r->data, x->data); /* a view */
	EXPECT(r, DT_FLOAT32, SHAPE(2, 3), 0, 1, 2, 3, 4, 5);
	EXPECT(tensor_reshape(x, 3, SHAPE(-1, 1, 2)), DT_FLOAT32, SHAPE(3, 1, 2), 0, 1, 2, 3, 4, 5);
	tensor *one = T1(DT_INT64, 7);
	EXPECT0(tensor_reshape(one, 0, NULL), DT_INT64, 7);
	EXPECT_ERROR(tensor_reshape(x, 2, SHAPE(2, 5)), "shape '[2, 5]' is invalid for input of size 6");
	EXPECT_ERROR(tensor_reshape(x, 2, SHAPE(4, -1)), "shape '[4, -1]' is invalid for input of size 6");
	EXPECT_ERROR(tensor_reshape(x, 2, SHAPE(-1, -1)), "only one dimension can be inferred");
	EXPECT_ERROR(tensor_reshape(x, 2, SHAPE(-2, 3)), "invalid shape dimension -2");
	EXPECT_ERROR(tensor_reshape(x, 3, SHAPE(INT64_C(1) << 40, INT64_C(1) << 40, 0)),
		     "shape '[1099511627776, 1099511627776, 0]' is invalid for input of size 6");
	tensor *e = tensor_zeros(DT_FLOAT32, 2, SHAPE(0, 3));
	EXPECT(tensor_reshape(e, 2, SHAPE(3, 0)), DT_FLOAT32, SHAPE(3, 0), 0);
	EXPECT_ERROR(tensor_reshape(e, 2, SHAPE(-1, 0)),
		     "cannot reshape tensor of 0 elements into shape [-1, 0] because the unspecified dimension "
		     "size -1 can be any value and is ambiguous");
	tensor_decref(e);
	tensor_decref(one);
	tensor_decref(x);
}
END_TEST

START_TEST(test_transpose_permute)
{
	tensor *x = ar(DT_INT64, 2, SHAPE(2, 3));
	EXPECT(tensor_transpose(x, 0, 1), DT_INT64, SHAPE(3, 2), 0, 3, 1, 4, 2, 5);
	EXPECT(tensor_transpose(x, -1, -2), DT_INT64, SHAPE(3, 2), 0, 3, 1, 4, 2, 5);
	EXPECT(tensor_transpose(x, 1, 1), DT_INT64, SHAPE(2, 3), 0, 1, 2, 3, 4, 5);
	EXPECT_ERROR(tensor_transpose(x, 0, 2), "dimension out of range (expected to be in range of [-2, 1], but got 2)");
	tensor *y = ar(DT_FLOAT32, 3, SHAPE(2, 3, 2));
	EXPECT(tensor_permute(y, (int[]){2, 0, 1}, 3), DT_FLOAT32, SHAPE(2, 2, 3), 0, 2, 4, 6, 8, 10, 1, 3, 5, 7, 9, 11);
	EXPECT(tensor_permute(y, (int[]){1, -3, 2}, 3), DT_FLOAT32, SHAPE(3, 2, 2), 0, 1, 6, 7, 2, 3, 8, 9, 4, 5, 10, 11);
	EXPECT_ERROR(tensor_permute(y, (int[]){0, 1}, 2), "permute: number of dims don't match (the tensor has 3, got 2)");
	EXPECT_ERROR(tensor_permute(y, (int[]){0, 1, 1}, 3), "permute: duplicate dims are not allowed");
	tensor *s = tensor_scalar(DT_BOOL, 1);
	EXPECT0(tensor_transpose(s, 0, -1), DT_BOOL, 1);
	/* big enough for the tiled path, odd sizes, each element size */
	dtype dts[] = {DT_BOOL, DT_FLOAT32, DT_FLOAT64};
	for (int k = 0; k < 3; k++) {
		tensor *src = ar(DT_INT64, 3, SHAPE(3, 37, 45)), *big = tensor_to(src, dts[k]);
		tensor *t = tensor_transpose(big, 1, 2);
		ck_assert(shape_equal(t->ndim, t->shape, 3, SHAPE(3, 45, 37)));
		for (int64_t b = 0; b < 3; b++)
			for (int64_t i = 0; i < 45; i++)
				for (int64_t j = 0; j < 37; j++)
					ck_assert(tensor_get_double(t, (b * 45 + i) * 37 + j) ==
						  tensor_get_double(big, (b * 37 + j) * 45 + i));
		tensor *p = tensor_permute(big, (int[]){2, 0, 1}, 3);
		for (int64_t i = 0; i < 45; i++)
			for (int64_t b = 0; b < 3; b++)
				for (int64_t j = 0; j < 37; j++)
					ck_assert(tensor_get_double(p, (i * 3 + b) * 37 + j) ==
						  tensor_get_double(big, (b * 37 + j) * 45 + i));
		tensor_decref(p);
		tensor_decref(t);
		tensor_decref(big);
		tensor_decref(src);
	}
	tensor_decref(s);
	tensor_decref(x);
	tensor_decref(y);
}
END_TEST

START_TEST(test_squeeze_unsqueeze_expand)
{
	tensor *x = ar(DT_FLOAT32, 3, SHAPE(1, 3, 1));
	EXPECT(tensor_squeeze(x, TENSOR_ALL_DIMS), DT_FLOAT32, SHAPE(3), 0, 1, 2);
	EXPECT(tensor_squeeze(x, 0), DT_FLOAT32, SHAPE(3, 1), 0, 1, 2);
	EXPECT(tensor_squeeze(x, -1), DT_FLOAT32, SHAPE(1, 3), 0, 1, 2);
	EXPECT(tensor_squeeze(x, 1), DT_FLOAT32, SHAPE(1, 3, 1), 0, 1, 2); /* not size 1: unchanged */
	EXPECT_ERROR(tensor_squeeze(x, 3), "dimension out of range (expected to be in range of [-3, 2], but got 3)");
	EXPECT(tensor_unsqueeze(x, 0), DT_FLOAT32, SHAPE(1, 1, 3, 1), 0, 1, 2);
	EXPECT(tensor_unsqueeze(x, -1), DT_FLOAT32, SHAPE(1, 3, 1, 1), 0, 1, 2);
	EXPECT(tensor_unsqueeze(x, 2), DT_FLOAT32, SHAPE(1, 3, 1, 1), 0, 1, 2);
	EXPECT_ERROR(tensor_unsqueeze(x, 4), "dimension out of range (expected to be in range of [-4, 3], but got 4)");
	tensor *s = tensor_scalar(DT_FLOAT32, 5);
	EXPECT(tensor_unsqueeze(s, 0), DT_FLOAT32, SHAPE(1), 5);
	EXPECT0(tensor_squeeze(s, 0), DT_FLOAT32, 5);
	tensor *v = T1(DT_INT64, 1, 2, 3);
	EXPECT(tensor_expand(v, 2, SHAPE(2, 3)), DT_INT64, SHAPE(2, 3), 1, 2, 3, 1, 2, 3);
	EXPECT(tensor_expand(v, 2, SHAPE(2, -1)), DT_INT64, SHAPE(2, 3), 1, 2, 3, 1, 2, 3);
	tensor *c = TN(DT_FLOAT32, SHAPE(2, 1), 1, 2);
	EXPECT(tensor_expand(c, 3, SHAPE(2, 2, 3)), DT_FLOAT32, SHAPE(2, 2, 3), 1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2);
	EXPECT(tensor_expand(s, 1, SHAPE(3)), DT_FLOAT32, SHAPE(3), 5, 5, 5);
	EXPECT(tensor_expand(c, 2, SHAPE(2, 0)), DT_FLOAT32, SHAPE(2, 0), 0);
	EXPECT_ERROR(tensor_expand(v, 2, SHAPE(2, 4)),
		     "expand: the expanded size of the tensor (4) must match the existing size (3) at non-singleton "
		     "dimension 1, target sizes: [2, 4], tensor sizes: [3]");
	EXPECT_ERROR(tensor_expand(c, 1, SHAPE(2)),
		     "expand: the number of sizes provided (1) must be greater or equal to the number of dimensions in the tensor (2)");
	EXPECT_ERROR(tensor_expand(v, 2, SHAPE(-1, 3)),
		     "expand: the expanded size of the tensor (-1) isn't allowed in a leading, non-existing dimension 0");
	tensor_decref(c);
	tensor_decref(v);
	tensor_decref(s);
	tensor_decref(x);
}
END_TEST

START_TEST(test_cat_stack)
{
	tensor *a = ar(DT_FLOAT32, 2, SHAPE(2, 2)), *b = TN(DT_INT64, SHAPE(1, 2), 7, 8), *c = TN(DT_FLOAT32, SHAPE(2, 1), 5, 6);
	EXPECT(tensor_cat((tensor *[]){a, b}, 2, 0), DT_FLOAT32, SHAPE(3, 2), 0, 1, 2, 3, 7, 8);
	EXPECT(tensor_cat((tensor *[]){a, c, a}, 3, 1), DT_FLOAT32, SHAPE(2, 5), 0, 1, 5, 0, 1, 2, 3, 6, 2, 3);
	EXPECT(tensor_cat((tensor *[]){a, c}, 2, -1), DT_FLOAT32, SHAPE(2, 3), 0, 1, 5, 2, 3, 6);
	tensor *e = tensor_zeros(DT_FLOAT32, 1, SHAPE(0)), *e2 = tensor_zeros(DT_FLOAT32, 2, SHAPE(0, 2));
	EXPECT(tensor_cat((tensor *[]){e, a, e2}, 3, 0), DT_FLOAT32, SHAPE(2, 2), 0, 1, 2, 3);
	EXPECT_ERROR(tensor_cat((tensor *[]){a, c}, 2, 0),
		     "cat: sizes of tensors must match except in dimension 0, expected size 2 but got size 1 for "
		     "tensor number 1 in the list");
	tensor *v = T1(DT_FLOAT32, 1, 2), *s = tensor_scalar(DT_FLOAT32, 1);
	EXPECT_ERROR(tensor_cat((tensor *[]){a, v}, 2, 0), "cat: tensors must have same number of dimensions: got 2 and 1");
	EXPECT_ERROR(tensor_cat((tensor *[]){v, s}, 2, 0), "zero-dimensional tensor (at position 1) cannot be concatenated");
	EXPECT_ERROR(tensor_cat(NULL, 0, 0), "cat: expected a non-empty list of tensors");
	EXPECT_ERROR(tensor_cat((tensor *[]){a}, 1, 2), "dimension out of range (expected to be in range of [-2, 1], but got 2)");
	tensor *w = T1(DT_FLOAT32, 3, 4);
	EXPECT(tensor_stack((tensor *[]){v, w}, 2, 0), DT_FLOAT32, SHAPE(2, 2), 1, 2, 3, 4);
	EXPECT(tensor_stack((tensor *[]){v, w}, 2, 1), DT_FLOAT32, SHAPE(2, 2), 1, 3, 2, 4);
	EXPECT(tensor_stack((tensor *[]){v, w, v}, 3, -1), DT_FLOAT32, SHAPE(2, 3), 1, 3, 1, 2, 4, 2);
	EXPECT(tensor_stack((tensor *[]){s, s}, 2, 0), DT_FLOAT32, SHAPE(2), 1, 1);
	EXPECT_ERROR(tensor_stack((tensor *[]){v, a}, 2, 0),
		     "stack expects each tensor to be equal size, but got [2] at entry 0 and [2, 2] at entry 1");
	EXPECT_ERROR(tensor_stack((tensor *[]){v, w}, 2, 3), "dimension out of range (expected to be in range of [-2, 1], but got 3)");
	tensor *all[] = {a, b, c, e, e2, v, s, w};
	for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
		tensor_decref(all[k]);
}
END_TEST

START_TEST(test_index)
{
	tensor *x = ar(DT_INT64, 2, SHAPE(3, 4));
	EXPECT(IX(x, I(1)), DT_INT64, SHAPE(4), 4, 5, 6, 7);
	EXPECT(IX(x, I(-1)), DT_INT64, SHAPE(4), 8, 9, 10, 11);
	EXPECT0(IX(x, I(1), I(-2)), DT_INT64, 6);
	EXPECT(IX(x, ALL(), I(0)), DT_INT64, SHAPE(3), 0, 4, 8);
	EXPECT(IX(x, SL(1, 3, 1)), DT_INT64, SHAPE(2, 4), 4, 5, 6, 7, 8, 9, 10, 11);
	EXPECT(IX(x, ALL(), STEP(2)), DT_INT64, SHAPE(3, 2), 0, 2, 4, 6, 8, 10);
	EXPECT(IX(x, FROM(-1), SL(1, 100, 2)), DT_INT64, SHAPE(1, 2), 9, 11);
	EXPECT(IX(x, SL(-100, 100, 1), TO(-3)), DT_INT64, SHAPE(3, 1), 0, 4, 8);
	EXPECT(IX(x, SL(2, 1, 1)), DT_INT64, SHAPE(0, 4), 0);
	EXPECT(IX(x, FROM(5)), DT_INT64, SHAPE(0, 4), 0);
	EXPECT(IX(x, NEW()), DT_INT64, SHAPE(1, 3, 4), 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11);
	EXPECT(IX(x, ELL(), NEW()), DT_INT64, SHAPE(3, 4, 1), 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11);
	EXPECT(IX(x, ELL(), I(1)), DT_INT64, SHAPE(3), 1, 5, 9);
	EXPECT(IX(x, I(2), ELL()), DT_INT64, SHAPE(4), 8, 9, 10, 11);
	EXPECT(IX(x, ALL(), NEW(), SL(0, 4, 3)), DT_INT64, SHAPE(3, 1, 2), 0, 3, 4, 7, 8, 11);
	EXPECT(IX(x, ELL(), I(0), ALL()), DT_INT64, SHAPE(4), 0, 1, 2, 3);
	/* contiguous results share storage */
	tensor *row = IX(x, I(2));
	ck_assert_ptr_eq(row->data, (int64_t *)x->data + 8);
	tensor_decref(row);
	EXPECT_ERROR(IX(x, I(3)), "index 3 is out of bounds for dimension 0 with size 3");
	EXPECT_ERROR(IX(x, ALL(), I(-5)), "index -5 is out of bounds for dimension 1 with size 4");
	EXPECT_ERROR(IX(x, I(0), I(0), I(0)), "too many indices for tensor of dimension 2");
	EXPECT_ERROR(IX(x, ELL(), ELL()), "an index can only have a single ellipsis ('...')");
	EXPECT_ERROR(IX(x, STEP(0)), "slice step cannot be zero");
	EXPECT_ERROR(IX(x, STEP(-1)), "step must be greater than zero");
	EXPECT(IX(x, SL(INT64_MIN, INT64_MAX, INT64_MAX)), DT_INT64, SHAPE(1, 4), 0, 1, 2, 3);
	EXPECT_ERROR(IX(x, I(INT64_MIN + 1), ELL()), "index -9223372036854775807 is out of bounds for dimension 0 with size 3");
	tensor *s = tensor_scalar(DT_FLOAT32, 2);
	EXPECT(IX(s, NEW()), DT_FLOAT32, SHAPE(1), 2);
	EXPECT0(IX(s, ELL()), DT_FLOAT32, 2);
	EXPECT_ERROR(IX(s, I(0)), "too many indices for tensor of dimension 0");
	tensor_decref(s);
	/* 3-D strided gather against index arithmetic */
	tensor *y = ar(DT_FLOAT32, 3, SHAPE(4, 5, 6));
	tensor *g = IX(y, SL(1, 4, 2), I(-2), SL(0, 6, 4));
	EXPECT(g, DT_FLOAT32, SHAPE(2, 2), 1 * 30 + 3 * 6 + 0, 1 * 30 + 3 * 6 + 4, 3 * 30 + 3 * 6 + 0, 3 * 30 + 3 * 6 + 4);
	tensor_decref(y);
	tensor_decref(x);
}
END_TEST

/* <index(x), g> == <x, index_backward(g)> for random x, g */
static void check_adjoint(int ndim, const int64_t *shape, const struct index_spec *specs, int n)
{
	tensor *x = tensor_randn(DT_FLOAT64, ndim, shape);
	tensor *y = tensor_index(x, specs, n);
	ck_assert_ptr_nonnull(y);
	tensor *g = tensor_randn(DT_FLOAT64, y->ndim, y->shape);
	tensor *gx = tensor_index_backward(g, ndim, shape, specs, n);
	ck_assert_ptr_nonnull(gx);
	ck_assert(shape_equal(gx->ndim, gx->shape, ndim, shape));
	double lhs = 0, rhs = 0;
	for (int64_t i = 0; i < y->numel; i++)
		lhs += tensor_get_double(y, i) * tensor_get_double(g, i);
	for (int64_t i = 0; i < x->numel; i++)
		rhs += tensor_get_double(x, i) * tensor_get_double(gx, i);
	ck_assert_msg(close_enough(lhs, rhs, 1e-12), "%g vs %g", lhs, rhs);
	tensor_decref(x);
	tensor_decref(y);
	tensor_decref(g);
	tensor_decref(gx);
}
#define ADJ(shape, ...) check_adjoint((int)(sizeof(shape) / sizeof(int64_t)), shape, (const struct index_spec[]){__VA_ARGS__}, \
				      (int)(sizeof((struct index_spec[]){__VA_ARGS__}) / sizeof(struct index_spec)))

START_TEST(test_index_backward)
{
	const struct index_spec sp[] = {ALL(), SL(0, 4, 2)};
	tensor *g = TN(DT_FLOAT32, SHAPE(1, 2), 1, 2);
	EXPECT(tensor_index_backward(g, 2, SHAPE(1, 4), sp, 2), DT_FLOAT32, SHAPE(1, 4), 1, 0, 2, 0);
	tensor_decref(g);
	g = T1(DT_FLOAT32, 5);
	EXPECT_ERROR(tensor_index_backward(g, 2, SHAPE(1, 4), sp, 2),
		     "index backward: gradient of shape (1,) for an index result of shape (1, 2)");
	tensor_decref(g);
	ADJ(SHAPE(3, 4), I(1));
	ADJ(SHAPE(3, 4), ALL(), I(-1));
	ADJ(SHAPE(3, 4, 5), SL(0, 3, 2), NEW(), ELL(), STEP(3));
	ADJ(SHAPE(6, 5), STEP(4), SL(-3, 100, 1));
	ADJ(SHAPE(2, 3, 4, 5), ELL(), I(2), NEW());
	ADJ(SHAPE(4), SL(3, 1, 1));
}
END_TEST

static Suite *shape_suite(void)
{
	Suite *s = suite_create("tensor_shape");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60); /* sanitizer builds on a busy machine */
	tcase_add_test(tc, test_reshape);
	tcase_add_test(tc, test_transpose_permute);
	tcase_add_test(tc, test_squeeze_unsqueeze_expand);
	tcase_add_test(tc, test_cat_stack);
	tcase_add_test(tc, test_index);
	tcase_add_test(tc, test_index_backward);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(shape_suite());
}
