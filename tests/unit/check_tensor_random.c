/* check_tensor_random.c - the Philox generator and the extension
 * functions ext_sort, ext_cumsum. */
#include "tensor_impl.h"
#include "tensor_test_util.h"

START_TEST(test_philox_known_answers)
{
	/* Random123's kat_vectors for philox4x32_10 */
	static const struct {
		uint32_t ctr[4], key[2], out[4];
	} kat[] = {
		{{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
		{{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff},
		 {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
		{{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0},
		 {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
	};
	for (int k = 0; k < 3; k++) {
		uint32_t out[4];
		rng_philox4x32_10(kat[k].ctr, kat[k].key, out);
		for (int i = 0; i < 4; i++)
			ck_assert_msg(out[i] == kat[k].out[i], "kat %d word %d: %08x", k, i, out[i]);
	}
	uint32_t a[4], b[4];
	rng_philox(UINT64_C(0x299f31d0a4093822), UINT64_C(0x85a308d3243f6a88), a);
	rng_philox4x32_10((const uint32_t[]){0x243f6a88, 0x85a308d3, 0, 0}, (const uint32_t[]){0xa4093822, 0x299f31d0}, b);
	ck_assert(memcmp(a, b, sizeof a) == 0);
}
END_TEST

START_TEST(test_determinism_and_offsets)
{
	rng_manual_seed(42);
	uint64_t seed, off;
	rng_get_state(&seed, &off);
	ck_assert(seed == 42 && off == 0);
	tensor *a = tensor_randn(DT_FLOAT32, 2, SHAPE(2, 5));
	rng_get_state(&seed, &off);
	ck_assert(off == 3); /* ceil(10 / 4) draws */
	tensor *u = tensor_rand(DT_FLOAT32, 1, SHAPE(4));
	rng_get_state(&seed, &off);
	ck_assert(off == 4);
	rng_manual_seed(42);
	tensor *b = tensor_randn(DT_FLOAT32, 1, SHAPE(10));
	for (int i = 0; i < 10; i++)
		ck_assert(tensor_get_double(a, i) == tensor_get_double(b, i));
	/* element i comes from draw i / 4: two calls of 4 equal one call of 8 */
	rng_manual_seed(7);
	tensor *c = tensor_randn(DT_FLOAT32, 1, SHAPE(8));
	rng_manual_seed(7);
	tensor *c1 = tensor_randn(DT_FLOAT32, 1, SHAPE(3)); /* uses all of draw 0 */
	tensor *c2 = tensor_randn(DT_FLOAT32, 1, SHAPE(4));
	for (int i = 0; i < 3; i++)
		ck_assert(tensor_get_double(c1, i) == tensor_get_double(c, i));
	for (int i = 0; i < 4; i++)
		ck_assert(tensor_get_double(c2, i) == tensor_get_double(c, 4 + i));
	/* restoring a state replays */
	rng_set_state(42, 3);
	tensor *u2 = tensor_rand(DT_FLOAT32, 1, SHAPE(4));
	for (int i = 0; i < 4; i++)
		ck_assert(tensor_get_double(u, i) == tensor_get_double(u2, i));
	/* the documented formulas */
	uint32_t w[4];
	rng_philox(42, 3, w);
	for (int i = 0; i < 4; i++)
		ck_assert(tensor_get_double(u, i) == (double)(w[i] >> 8) / 16777216.0);
	rng_philox(7, 0, w);
	double u1 = ((double)w[0] + 0.5) / 4294967296.0, uu2 = (double)w[1] / 4294967296.0;
	ck_assert(tensor_get_double(c, 0) == (float)(sqrt(-2 * log(u1)) * cos(2 * M_PI * uu2)));
	ck_assert(tensor_get_double(c, 1) == (float)(sqrt(-2 * log(u1)) * sin(2 * M_PI * uu2)));
	/* float64 draws the same stream at full precision */
	rng_manual_seed(7);
	tensor *d = tensor_randn(DT_FLOAT64, 1, SHAPE(8));
	ck_assert_int_eq(d->dt, DT_FLOAT64);
	for (int i = 0; i < 8; i++)
		ck_assert(fabs(tensor_get_double(d, i) - tensor_get_double(c, i)) < 1e-6);
	ck_assert(tensor_get_double(d, 0) == sqrt(-2 * log(u1)) * cos(2 * M_PI * uu2));
	tensor *all[] = {a, u, b, c, c1, c2, u2, d};
	for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
		tensor_decref(all[k]);
	EXPECT_ERROR(tensor_randn(DT_INT64, 1, SHAPE(2)), "randn() supports only floating point dtypes, got int64");
	EXPECT_ERROR(tensor_rand(DT_BOOL, 1, SHAPE(2)), "rand() supports only floating point dtypes, got bool");
	EXPECT_ERROR(tensor_randn(DT_FLOAT32, 1, SHAPE(-2)), "trying to create tensor with negative dimension -2: [-2]");
}
END_TEST

START_TEST(test_distribution)
{
	rng_manual_seed(0);
	int64_t n = 200000;
	tensor *u = tensor_rand(DT_FLOAT32, 1, &n), *z = tensor_randn(DT_FLOAT64, 1, &n);
	double su = 0, sz = 0, szz = 0, lo = 1, hi = 0;
	for (int64_t i = 0; i < n; i++) {
		double v = tensor_get_double(u, i), w = tensor_get_double(z, i);
		su += v;
		lo = v < lo ? v : lo;
		hi = v > hi ? v : hi;
		sz += w;
		szz += w * w;
	}
	ck_assert(lo >= 0 && hi < 1);
	ck_assert(fabs(su / (double)n - 0.5) < 0.01);
	ck_assert(fabs(sz / (double)n) < 0.01);
	ck_assert(fabs(szz / (double)n - 1) < 0.02);
	tensor_decref(u);
	tensor_decref(z);
}
END_TEST

START_TEST(test_ext_sort)
{
	tensor *x = T1(DT_FLOAT32, 3, NAN, 1, -INFINITY, 2, 1);
	EXPECT(tensor_ext_sort(x), DT_FLOAT32, SHAPE(6), -INFINITY, 1, 1, 2, 3, NAN);
	tensor *m = TN(DT_INT64, SHAPE(2, 3), 3, 1, 2, -1, -5, 0);
	EXPECT(tensor_ext_sort(m), DT_INT64, SHAPE(2, 3), 1, 2, 3, -5, -1, 0);
	tensor *b = T1(DT_BOOL, 1, 0, 1);
	EXPECT(tensor_ext_sort(b), DT_BOOL, SHAPE(3), 0, 1, 1);
	tensor *s = tensor_scalar(DT_FLOAT64, 2);
	EXPECT0(tensor_ext_sort(s), DT_FLOAT64, 2);
	tensor *e = tensor_zeros(DT_FLOAT32, 2, SHAPE(3, 0));
	EXPECT(tensor_ext_sort(e), DT_FLOAT32, SHAPE(3, 0), 0);
	tensor *all[] = {x, m, b, s, e};
	for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
		tensor_decref(all[k]);
}
END_TEST

START_TEST(test_ext_cumsum)
{
	tensor *x = T1(DT_FLOAT32, 1, 2, 3.5);
	EXPECT(tensor_ext_cumsum(x), DT_FLOAT32, SHAPE(3), 1, 3, 6.5);
	tensor *m = TN(DT_INT64, SHAPE(2, 3), 1, 2, 3, 4, 5, 6);
	EXPECT(tensor_ext_cumsum(m), DT_INT64, SHAPE(2, 3), 1, 3, 6, 4, 9, 15);
	tensor *b = T1(DT_BOOL, 1, 0, 1);
	EXPECT(tensor_ext_cumsum(b), DT_INT64, SHAPE(3), 1, 1, 2);
	tensor *s = tensor_scalar(DT_FLOAT64, 2);
	EXPECT0(tensor_ext_cumsum(s), DT_FLOAT64, 2);
	tensor *e = tensor_zeros(DT_BOOL, 1, SHAPE(0));
	EXPECT(tensor_ext_cumsum(e), DT_INT64, SHAPE(0), 0);
	tensor *all[] = {x, m, b, s, e};
	for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
		tensor_decref(all[k]);
}
END_TEST

static Suite *random_suite(void)
{
	Suite *s = suite_create("tensor_random");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60); /* sanitizer builds on a busy machine */
	tcase_add_test(tc, test_philox_known_answers);
	tcase_add_test(tc, test_determinism_and_offsets);
	tcase_add_test(tc, test_distribution);
	tcase_add_test(tc, test_ext_sort);
	tcase_add_test(tc, test_ext_cumsum);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(random_suite());
}
