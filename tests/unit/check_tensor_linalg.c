/* check_tensor_linalg.c - matmul (every rank combination against a naive
 * loop written from torch.matmul's rules) and linear. */
#include "tensor_test_util.h"

/* torch.matmul by definition, with plain loops over doubles */
static tensor *naive_matmul(const tensor *a, const tensor *b)
{
	int64_t as[8], bs[8];
	int an = a->ndim, bn = b->ndim;
	memcpy(as, a->shape, sizeof as);
	memcpy(bs, b->shape, sizeof bs);
	if (an == 1) { /* (k) -> (1, k) */
		as[1] = as[0];
		as[0] = 1;
		an = 2;
	}
	if (bn == 1) { /* (k) -> (k, 1) */
		bs[1] = 1;
		bn = 2;
	}
	int nb;
	int64_t batch[8];
	ck_assert_int_eq(tensor_broadcast_shape(an - 2, as, bn - 2, bs, &nb, batch), 0);
	int64_t n = as[an - 2], k = as[an - 1], m = bs[bn - 1];
	int64_t full[8];
	memcpy(full, batch, sizeof(int64_t) * (size_t)nb);
	full[nb] = n;
	full[nb + 1] = m;
	tensor *out = tensor_zeros(DT_FLOAT64, nb + 2, full);
	int64_t nbatch = 1;
	for (int i = 0; i < nb; i++)
		nbatch *= batch[i];
	for (int64_t bi = 0; bi < nbatch; bi++) {
		int64_t idx[8], rem = bi;
		for (int d = nb - 1; d >= 0; d--) {
			idx[d] = rem % batch[d];
			rem /= batch[d];
		}
		int64_t oa = 0, ob = 0;
		for (int d = 0; d < nb; d++) {
			int da = an - 2 - nb + d, db = bn - 2 - nb + d;
			if (da >= 0)
				oa = oa * as[da] + (as[da] == 1 ? 0 : idx[d]);
			if (db >= 0)
				ob = ob * bs[db] + (bs[db] == 1 ? 0 : idx[d]);
		}
		for (int64_t i = 0; i < n; i++)
			for (int64_t j = 0; j < m; j++) {
				double s = 0;
				for (int64_t p = 0; p < k; p++)
					s += tensor_get_double(a, oa * n * k + i * k + p) *
					     tensor_get_double(b, ob * k * m + p * m + j);
				((double *)out->data)[(bi * n + i) * m + j] = s;
			}
	}
	/* drop the added dims */
	int64_t os[8];
	int on = 0;
	for (int i = 0; i < nb; i++)
		os[on++] = batch[i];
	if (a->ndim >= 2)
		os[on++] = n;
	if (b->ndim >= 2)
		os[on++] = m;
	tensor *r = tensor_reshape(out, on, os);
	tensor_decref(out);
	return r;
}

static void check_matmul(dtype dt, int an, const int64_t *as, int bn, const int64_t *bs)
{
	tensor *a = tensor_randn(DT_FLOAT64, an, as), *b = tensor_randn(DT_FLOAT64, bn, bs);
	if (dt == DT_INT64) { /* small integers: exact */
		tensor *ten = tensor_scalar(DT_FLOAT64, 4);
		tensor *a4 = tensor_binary(BINOP_mul, a, ten), *b4 = tensor_binary(BINOP_mul, b, ten);
		tensor_decref(a);
		tensor_decref(b);
		a = tensor_unary(UNOP_round, a4);
		b = tensor_unary(UNOP_round, b4);
		tensor_decref(a4);
		tensor_decref(b4);
		tensor_decref(ten);
	}
	tensor *ca = tensor_to(a, dt), *cb = tensor_to(b, dt);
	tensor *want = naive_matmul(ca, cb);
	tensor *got = tensor_matmul(ca, cb);
	ck_assert_msg(got != NULL, "matmul failed: %s", tj_error_peek());
	ck_assert_int_eq(got->dt, dt);
	ck_assert_msg(shape_equal(got->ndim, got->shape, want->ndim, want->shape), "shape for ranks %d x %d", an, bn);
	for (int64_t i = 0; i < got->numel; i++)
		ck_assert_msg(close_enough(tensor_get_double(got, i), tensor_get_double(want, i), dt == DT_FLOAT32 ? 1e-4 : 1e-12),
			      "ranks %d x %d element %lld", an, bn, (long long)i);
	tensor_decref(a);
	tensor_decref(b);
	tensor_decref(ca);
	tensor_decref(cb);
	tensor_decref(want);
	tensor_decref(got);
}

START_TEST(test_matmul_all_ranks)
{
	/* a = batch_a + (n, k) or (k); b = batch_b + (k, m) or (k) */
	static const int64_t batches_a[][3] = {{0}, {1, 2}, {1, 1}, {2, 4, 1}, {2, 4, 2}};
	static const int64_t batches_b[][4] = {{0}, {1, 2}, {1, 1}, {3, 3, 1, 2}, {2, 1, 1}};
	const int64_t n = 3, k = 5, m = 4;
	dtype dts[] = {DT_FLOAT32, DT_FLOAT64, DT_INT64};
	for (int di = 0; di < 3; di++)
		for (int ia = -1; ia < 5; ia++)
			for (int ib = -1; ib < 5; ib++) {
				int64_t as[8], bs[8];
				int an = 0, bn = 0;
				if (ia < 0) { /* 1-D */
					as[an++] = k;
				} else {
					for (int i = 0; i < batches_a[ia][0]; i++)
						as[an++] = batches_a[ia][1 + i];
					as[an++] = n;
					as[an++] = k;
				}
				if (ib < 0) {
					bs[bn++] = k;
				} else {
					for (int i = 0; i < batches_b[ib][0]; i++)
						bs[bn++] = batches_b[ib][1 + i];
					bs[bn++] = k;
					bs[bn++] = m;
				}
				check_matmul(dts[di], an, as, bn, bs);
			}
	/* bigger than a tile, non-square */
	check_matmul(DT_FLOAT32, 2, SHAPE(67, 129), 2, SHAPE(129, 33));
	check_matmul(DT_FLOAT64, 3, SHAPE(3, 17, 9), 3, SHAPE(3, 9, 21));
}
END_TEST

START_TEST(test_matmul_values_and_errors)
{
	tensor *a = ar(DT_FLOAT32, 2, SHAPE(2, 3)), *v = T1(DT_FLOAT32, 1, 1, 1);
	EXPECT0(tensor_matmul(v, v), DT_FLOAT32, 3);
	EXPECT(tensor_matmul(a, v), DT_FLOAT32, SHAPE(2), 3, 12);
	tensor *at = tensor_transpose(a, 0, 1);
	EXPECT(tensor_matmul(a, at), DT_FLOAT32, SHAPE(2, 2), 5, 14, 14, 50);
	tensor *w = tensor_zeros(DT_FLOAT32, 2, SHAPE(4, 5));
	EXPECT_ERROR(tensor_matmul(a, w), "matmul: shapes (2, 3) and (4, 5) cannot be multiplied");
	tensor *v4 = tensor_zeros(DT_FLOAT32, 1, SHAPE(4));
	EXPECT_ERROR(tensor_matmul(v, v4), "matmul: shapes (3,) and (4,) cannot be multiplied");
	tensor *s = tensor_scalar(DT_FLOAT32, 2);
	EXPECT_ERROR(tensor_matmul(s, v), "both arguments to matmul need to be at least 1D, but they are 0D and 1D");
	tensor *d = tensor_zeros(DT_FLOAT64, 2, SHAPE(3, 2));
	EXPECT_ERROR(tensor_matmul(a, d), "matmul: expected both operands to have the same dtype, but got float32 and float64");
	tensor *bb = tensor_zeros(DT_BOOL, 2, SHAPE(2, 2));
	EXPECT_ERROR(tensor_matmul(bb, bb), "matmul is not implemented for bool tensors");
	tensor *x1 = tensor_zeros(DT_FLOAT32, 3, SHAPE(2, 2, 3)), *x2 = tensor_zeros(DT_FLOAT32, 3, SHAPE(3, 3, 4));
	EXPECT_ERROR(tensor_matmul(x1, x2), "matmul: shapes (2, 2, 3) and (3, 3, 4) cannot be multiplied");
	/* k = 0 gives zeros; n = 0 gives an empty result */
	tensor *k0a = tensor_zeros(DT_FLOAT32, 2, SHAPE(2, 0)), *k0b = tensor_zeros(DT_FLOAT32, 2, SHAPE(0, 3));
	tensor *r = tensor_matmul(k0a, k0b);
	EXPECT(r, DT_FLOAT32, SHAPE(2, 3), 0, 0, 0, 0, 0, 0);
	tensor *n0 = tensor_zeros(DT_FLOAT32, 2, SHAPE(0, 3)), *b34 = tensor_zeros(DT_FLOAT32, 2, SHAPE(3, 4));
	EXPECT(tensor_matmul(n0, b34), DT_FLOAT32, SHAPE(0, 4), 0);
	tensor_decref(n0);
	tensor_decref(b34);
	tensor *all[] = {a, v, at, w, v4, s, d, bb, x1, x2, k0a, k0b};
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		tensor_decref(all[i]);
}
END_TEST

START_TEST(test_linear)
{
	tensor *x = ar(DT_FLOAT32, 2, SHAPE(2, 3)), *w = TN(DT_FLOAT32, SHAPE(2, 3), 1, 0, 0, 1, 1, 1);
	tensor *b = T1(DT_FLOAT32, 10, 20);
	EXPECT(tensor_linear(x, w, b), DT_FLOAT32, SHAPE(2, 2), 10, 23, 13, 32);
	EXPECT(tensor_linear(x, w, NULL), DT_FLOAT32, SHAPE(2, 2), 0, 3, 3, 12);
	tensor *x1 = T1(DT_FLOAT32, 1, 2, 3);
	EXPECT(tensor_linear(x1, w, b), DT_FLOAT32, SHAPE(2), 11, 26);
	tensor *x3 = ar(DT_FLOAT32, 3, SHAPE(2, 1, 3));
	EXPECT(tensor_linear(x3, w, b), DT_FLOAT32, SHAPE(2, 1, 2), 10, 23, 13, 32);
	tensor *bs = tensor_scalar(DT_FLOAT32, 1);
	EXPECT(tensor_linear(x, w, bs), DT_FLOAT32, SHAPE(2, 2), 1, 4, 4, 13);
	/* the general path: int64, and the matmul message */
	tensor *xi = ar(DT_INT64, 2, SHAPE(2, 3)), *wi = TN(DT_INT64, SHAPE(1, 3), 1, 1, 1), *bi = T1(DT_INT64, 5);
	EXPECT(tensor_linear(xi, wi, bi), DT_INT64, SHAPE(2, 1), 8, 17);
	tensor *wbad = tensor_zeros(DT_FLOAT32, 2, SHAPE(2, 4));
	EXPECT_ERROR(tensor_linear(x, wbad, b), "matmul: shapes (2, 3) and (4, 2) cannot be multiplied");
	tensor *b3 = T1(DT_FLOAT32, 1, 2, 3);
	EXPECT_ERROR(tensor_linear(x, w, b3), "cannot broadcast shapes (2, 2) and (3,)");
	/* against matmul + add on random data */
	tensor *rx = tensor_randn(DT_FLOAT64, 3, SHAPE(4, 5, 7)), *rw = tensor_randn(DT_FLOAT64, 2, SHAPE(6, 7));
	tensor *rb = tensor_randn(DT_FLOAT64, 1, SHAPE(6));
	tensor *got = tensor_linear(rx, rw, rb);
	tensor *rwt = tensor_transpose(rw, 0, 1), *mm = tensor_matmul(rx, rwt), *want = tensor_binary(BINOP_add, mm, rb);
	ck_assert(shape_equal(got->ndim, got->shape, 3, SHAPE(4, 5, 6)));
	for (int64_t i = 0; i < got->numel; i++)
		ck_assert(close_enough(tensor_get_double(got, i), tensor_get_double(want, i), 1e-12));
	tensor *all[] = {x, w, b, x1, x3, bs, xi, wi, bi, wbad, b3, rx, rw, rb, got, rwt, mm, want};
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		tensor_decref(all[i]);
}
END_TEST

/* op(a) @ op(b) with BLAS's transpose flags against matmul of the
 * transposes, every flag pair, vector-shaped and non-square operands */
START_TEST(test_mm_trans)
{
	static const int64_t dims[][3] = {{4, 3, 5}, {1, 6, 7}, {5, 2, 1}, {1, 3, 1}, {3, 0, 2}};
	static const dtype dts[] = {DT_FLOAT32, DT_FLOAT64, DT_INT64};
	for (size_t d = 0; d < sizeof dims / sizeof *dims; d++)
		for (size_t t = 0; t < 3; t++)
			for (int f = 0; f < 4; f++) {
				bool ta = f & 1, tb = f & 2;
				int64_t n = dims[d][0], k = dims[d][1], m = dims[d][2];
				tensor *a0 = tensor_randn(DT_FLOAT64, 2, ta ? SHAPE(k, n) : SHAPE(n, k));
				tensor *b0 = tensor_randn(DT_FLOAT64, 2, tb ? SHAPE(m, k) : SHAPE(k, m));
				tensor *a1 = tensor_unary(UNOP_round, a0), *b1 = tensor_unary(UNOP_round, b0);
				tensor *a = tensor_to(a1, dts[t]), *b = tensor_to(b1, dts[t]);
				tensor *at = ta ? tensor_transpose(a, 0, 1) : (tensor_incref(a), a);
				tensor *bt = tb ? tensor_transpose(b, 0, 1) : (tensor_incref(b), b);
				tensor *want = tensor_matmul(at, bt), *got = tensor_mm_trans(a, ta, b, tb);
				ck_assert_msg(got && want, "%s", tj_error_peek());
				ck_assert(shape_equal(got->ndim, got->shape, want->ndim, want->shape));
				for (int64_t i = 0; i < got->numel; i++)
					ck_assert_msg(close_enough(tensor_get_double(got, i), tensor_get_double(want, i), 1e-5),
						      "%lldx%lldx%lld %s ta %d tb %d element %lld", (long long)n, (long long)k,
						      (long long)m, dtype_name(dts[t]), ta, tb, (long long)i);
				/* the same product a block of rows at a time */
				tensor *rows = tensor_zeros(dts[t], 2, SHAPE(n, m));
				int64_t half = n / 2;
				size_t es = dtype_size(dts[t]);
				tensor_mm_trans_rows(a, ta, b, tb, 0, half, rows->data);
				tensor_mm_trans_rows(a, ta, b, tb, half, n, (char *)rows->data + (size_t)(half * m) * es);
				ck_assert(memcmp(rows->data, got->data, (size_t)got->numel * es) == 0);
				tensor_decref(rows);
				tensor *all[] = {a0, b0, a1, b1, a, b, at, bt, want, got};
				for (size_t j = 0; j < sizeof all / sizeof *all; j++)
					tensor_decref(all[j]);
			}
	/* the inner dims must agree, as matmul's message says */
	tensor *a = tensor_zeros(DT_FLOAT32, 2, SHAPE(2, 3)), *b = tensor_zeros(DT_FLOAT32, 2, SHAPE(2, 3));
	ck_assert_ptr_null(tensor_mm_trans(a, false, b, false));
	ck_assert_str_eq(tj_error_peek(), "matmul: shapes (2, 3) and (2, 3) cannot be multiplied");
	tj_error_clear();
	tensor *c = tensor_mm_trans(a, false, b, true);
	ck_assert(c && c->shape[0] == 2 && c->shape[1] == 2);
	tensor_decref(a);
	tensor_decref(b);
	tensor_decref(c);
}
END_TEST

static Suite *linalg_suite(void)
{
	Suite *s = suite_create("tensor_linalg");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_matmul_all_ranks);
	tcase_add_test(tc, test_matmul_values_and_errors);
	tcase_add_test(tc, test_linear);
	tcase_add_test(tc, test_mm_trans);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(linalg_suite());
}
