/* tensor_test_util.h - helpers shared by the check_tensor_*.c suites:
 * building tensors from literals, comparing values, catching errors.
 * Every helper that receives a tensor it is said to "take" decrefs it.
 */
#ifndef TJ_TENSOR_TEST_UTIL_H
#define TJ_TENSOR_TEST_UTIL_H

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "tensor.h"

#define SHAPE(...) ((const int64_t[]){__VA_ARGS__})
#define VALS(...) ((const double[]){__VA_ARGS__})
#define NDIM(...) ((int)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))
#define NVALS(...) ((int)(sizeof((const double[]){__VA_ARGS__}) / sizeof(double)))

/* a tensor of dtype dt with the given shape and row-major values */
static inline tensor *mk(dtype dt, int ndim, const int64_t *shape, const double *vals)
{
	tensor *t = tensor_empty(dt, ndim, shape);
	ck_assert_ptr_nonnull(t);
	for (int64_t i = 0; i < t->numel; i++) {
		double v = vals[i];
		switch (dt) {
		case DT_BOOL: ((uint8_t *)t->data)[i] = v != 0; break;
		case DT_INT64: ((int64_t *)t->data)[i] = (int64_t)v; break;
		case DT_FLOAT32: ((float *)t->data)[i] = (float)v; break;
		default: ((double *)t->data)[i] = v; break;
		}
	}
	return t;
}
#define T1(dt, ...) mk(dt, 1, SHAPE(NVALS(__VA_ARGS__)), VALS(__VA_ARGS__))
#define TN(dt, shape, ...) mk(dt, (int)(sizeof(shape) / sizeof(int64_t)), shape, VALS(__VA_ARGS__))

/* a wrapped Python number */
static inline tensor *py_float(double v)
{
	tensor *t = tensor_scalar(DT_FLOAT64, v);
	t->wrapped_number = true;
	return t;
}
static inline tensor *py_int(int64_t v)
{
	tensor *t = tensor_scalar_int(v);
	t->wrapped_number = true;
	return t;
}
static inline tensor *py_bool(bool v)
{
	tensor *t = tensor_scalar(DT_BOOL, v);
	t->wrapped_number = true;
	return t;
}

/* arange(n) as dtype dt reshaped */
static inline tensor *ar(dtype dt, int ndim, const int64_t *shape)
{
	int64_t n = 1;
	for (int i = 0; i < ndim; i++)
		n *= shape[i];
	tensor *a = tensor_arange(0, (double)n, 1, dt);
	ck_assert_ptr_nonnull(a);
	tensor *r = tensor_reshape(a, ndim, shape);
	tensor_decref(a);
	ck_assert_ptr_nonnull(r);
	return r;
}

static inline bool close_enough(double a, double b, double tol)
{
	if (isnan(a) || isnan(b))
		return isnan(a) && isnan(b);
	if (isinf(a) || isinf(b))
		return a == b;
	return fabs(a - b) <= tol * (1 + fabs(b));
}

/* takes t: checks dtype, shape and values (tolerance relative + absolute) */
static inline void expect_tol(tensor *t, dtype dt, int ndim, const int64_t *shape, const double *vals,
			      double tol, const char *file, int line)
{
	if (!t)
		ck_abort_msg("%s:%d: unexpected error: %s", file, line, tj_error_peek());
	ck_assert_msg(t->dt == dt, "%s:%d: dtype %s, expected %s", file, line, dtype_name(t->dt),
		      dtype_name(dt));
	ck_assert_msg(shape_equal(t->ndim, t->shape, ndim, shape), "%s:%d: shape mismatch (ndim %d vs %d)",
		      file, line, t->ndim, ndim);
	for (int64_t i = 0; i < t->numel; i++) {
		double v = tensor_get_double(t, i);
		ck_assert_msg(close_enough(v, vals[i], tol), "%s:%d: element %lld is %.9g, expected %.9g", file,
			      line, (long long)i, v, vals[i]);
	}
	tensor_decref(t);
}
#define EXPECT(t, dt, shape, ...) \
	expect_tol(t, dt, (int)(sizeof(shape) / sizeof(int64_t)), shape, VALS(__VA_ARGS__), 1e-5, __FILE__, __LINE__)
#define EXPECT0(t, dt, v) expect_tol(t, dt, 0, NULL, VALS(v), 1e-5, __FILE__, __LINE__)
#define EXPECT_TOL(t, dt, shape, tol, ...) \
	expect_tol(t, dt, (int)(sizeof(shape) / sizeof(int64_t)), shape, VALS(__VA_ARGS__), tol, __FILE__, __LINE__)

/* takes t (may be NULL): the call must have failed with exactly msg */
static inline void expect_error(tensor *t, const char *msg, const char *file, int line)
{
	if (t) {
		tensor_decref(t);
		ck_abort_msg("%s:%d: expected error '%s', got a tensor", file, line, msg);
	}
	char *e = tj_error_take();
	ck_assert_msg(e && strcmp(e, msg) == 0, "%s:%d: error '%s', expected '%s'", file, line, e ? e : "(none)",
		      msg);
	free(e);
}
#define EXPECT_ERROR(t, msg) expect_error(t, msg, __FILE__, __LINE__)

/* takes t: its printed form */
static inline char *fmt(tensor *t)
{
	ck_assert_ptr_nonnull(t);
	struct strbuf sb = STRBUF_INIT;
	tensor_format(t, &sb);
	tensor_decref(t);
	return sb_detach(&sb);
}
#define EXPECT_STR(t, s)                                                                                \
	do {                                                                                            \
		char *got_ = fmt(t);                                                                    \
		ck_assert_msg(strcmp(got_, s) == 0, "printed\n%s\nexpected\n%s", got_, s);              \
		free(got_);                                                                             \
	} while (0)

/* a suite runner: nonzero exit status on any failure */
static inline int run_suite(Suite *s)
{
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	tensor_cache_clear();
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif
