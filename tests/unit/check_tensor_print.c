/* check_tensor_print.c - tensor_format, exactly as LANGUAGE.md §3. */
#include "tensor_test_util.h"

START_TEST(test_language_md_examples)
{
	EXPECT_STR(tensor_scalar(DT_FLOAT32, 3), "tensor(3.0000)");
	EXPECT_STR(T1(DT_FLOAT32, -1, 2.5), "tensor([-1.0000, 2.5000])");
	EXPECT_STR(T1(DT_INT64, 1, 2, 3), "tensor([1, 2, 3])");
	EXPECT_STR(T1(DT_BOOL, 1, 0), "tensor([True, False])");
	EXPECT_STR(T1(DT_FLOAT64, 1, 2), "tensor([1.0000, 2.0000], dtype=float64)");
	tensor *g = T1(DT_FLOAT32, 0.5, 1);
	g->requires_grad = true;
	EXPECT_STR(g, "tensor([0.5000, 1.0000], requires_grad=True)");
	EXPECT_STR(TN(DT_FLOAT32, SHAPE(2, 2), 1, 2, 3, 4), "tensor([[1.0000, 2.0000],\n"
							    "        [3.0000, 4.0000]])");
}
END_TEST

START_TEST(test_elements)
{
	EXPECT_STR(T1(DT_FLOAT32, NAN, INFINITY, -INFINITY, -0.0, -1234.5, 0.00004, -0.00004),
		   "tensor([nan, inf, -inf, -0.0000, -1234.5000, 0.0000, -0.0000])");
	EXPECT_STR(T1(DT_FLOAT64, -NAN), "tensor([nan], dtype=float64)");
	EXPECT_STR(T1(DT_FLOAT32, 0.1, 1e10), "tensor([0.1000, 10000000000.0000])");
	EXPECT_STR(T1(DT_INT64, -5, 1234567890123), "tensor([-5, 1234567890123])");
	EXPECT_STR(tensor_scalar_int(-3), "tensor(-3)");
	EXPECT_STR(tensor_scalar(DT_BOOL, 1), "tensor(True)");
	tensor *s = tensor_scalar(DT_FLOAT64, 1.5);
	s->requires_grad = true;
	EXPECT_STR(s, "tensor(1.5000, dtype=float64, requires_grad=True)");
	EXPECT_STR(TN(DT_BOOL, SHAPE(2, 2), 1, 0, 0, 1), "tensor([[True, False],\n"
							   "        [False, True]])");
}
END_TEST

START_TEST(test_empty)
{
	EXPECT_STR(tensor_zeros(DT_FLOAT32, 1, SHAPE(0)), "tensor([])");
	EXPECT_STR(tensor_zeros(DT_FLOAT32, 2, SHAPE(0, 3)), "tensor([], size=(0, 3))");
	EXPECT_STR(tensor_zeros(DT_FLOAT64, 1, SHAPE(0)), "tensor([], dtype=float64)");
	EXPECT_STR(tensor_zeros(DT_INT64, 3, SHAPE(2, 0, 1)), "tensor([], size=(2, 0, 1))");
	tensor *e = tensor_zeros(DT_FLOAT32, 1, SHAPE(0));
	e->requires_grad = true;
	EXPECT_STR(e, "tensor([], requires_grad=True)");
}
END_TEST

START_TEST(test_rank3_and_4)
{
	EXPECT_STR(ar(DT_INT64, 3, SHAPE(2, 2, 3)), "tensor([[[0, 1, 2],\n"
						    "         [3, 4, 5]],\n"
						    "\n"
						    "        [[6, 7, 8],\n"
						    "         [9, 10, 11]]])");
	EXPECT_STR(ar(DT_FLOAT32, 3, SHAPE(2, 1, 2)), "tensor([[[0.0000, 1.0000]],\n"
						      "\n"
						      "        [[2.0000, 3.0000]]])");
	EXPECT_STR(ar(DT_INT64, 4, SHAPE(2, 1, 2, 2)), "tensor([[[[0, 1],\n"
						       "          [2, 3]]],\n"
						       "\n"
						       "\n"
						       "        [[[4, 5],\n"
						       "          [6, 7]]]])");
	EXPECT_STR(ar(DT_INT64, 3, SHAPE(1, 1, 1)), "tensor([[[0]]])");
}
END_TEST

START_TEST(test_summarize)
{
	/* 1000 elements: printed in full */
	char *full = fmt(ar(DT_INT64, 1, SHAPE(1000)));
	ck_assert(strstr(full, "...") == NULL);
	ck_assert(strncmp(full, "tensor([0, 1, 2, 3, ", 20) == 0);
	ck_assert(strcmp(full + strlen(full) - 11, " 998, 999])") == 0);
	free(full);
	EXPECT_STR(ar(DT_FLOAT32, 1, SHAPE(1001)),
		   "tensor([0.0000, 1.0000, 2.0000,  ..., 998.0000, 999.0000, 1000.0000])");
	EXPECT_STR(ar(DT_INT64, 2, SHAPE(1001, 1)), "tensor([[0],\n"
						    "        [1],\n"
						    "        [2],\n"
						    "        ...,\n"
						    "        [998],\n"
						    "        [999],\n"
						    "        [1000]])");
	EXPECT_STR(ar(DT_INT64, 2, SHAPE(7, 150)), "tensor([[0, 1, 2,  ..., 147, 148, 149],\n"
						   "        [150, 151, 152,  ..., 297, 298, 299],\n"
						   "        [300, 301, 302,  ..., 447, 448, 449],\n"
						   "        ...,\n"
						   "        [600, 601, 602,  ..., 747, 748, 749],\n"
						   "        [750, 751, 752,  ..., 897, 898, 899],\n"
						   "        [900, 901, 902,  ..., 1047, 1048, 1049]])");
	/* a dim of at most 6 is never cut */
	EXPECT_STR(ar(DT_INT64, 2, SHAPE(2, 600)), "tensor([[0, 1, 2,  ..., 597, 598, 599],\n"
						   "        [600, 601, 602,  ..., 1197, 1198, 1199]])");
	EXPECT_STR(ar(DT_INT64, 3, SHAPE(7, 1, 150)), "tensor([[[0, 1, 2,  ..., 147, 148, 149]],\n"
						      "\n"
						      "        [[150, 151, 152,  ..., 297, 298, 299]],\n"
						      "\n"
						      "        [[300, 301, 302,  ..., 447, 448, 449]],\n"
						      "\n"
						      "        ...,\n"
						      "\n"
						      "        [[600, 601, 602,  ..., 747, 748, 749]],\n"
						      "\n"
						      "        [[750, 751, 752,  ..., 897, 898, 899]],\n"
						      "\n"
						      "        [[900, 901, 902,  ..., 1047, 1048, 1049]]])");
	tensor *t = ar(DT_FLOAT64, 3, SHAPE(2, 7, 100));
	t->requires_grad = true;
	EXPECT_STR(t, "tensor([[[0.0000, 1.0000, 2.0000,  ..., 97.0000, 98.0000, 99.0000],\n"
		      "         [100.0000, 101.0000, 102.0000,  ..., 197.0000, 198.0000, 199.0000],\n"
		      "         [200.0000, 201.0000, 202.0000,  ..., 297.0000, 298.0000, 299.0000],\n"
		      "         ...,\n"
		      "         [400.0000, 401.0000, 402.0000,  ..., 497.0000, 498.0000, 499.0000],\n"
		      "         [500.0000, 501.0000, 502.0000,  ..., 597.0000, 598.0000, 599.0000],\n"
		      "         [600.0000, 601.0000, 602.0000,  ..., 697.0000, 698.0000, 699.0000]],\n"
		      "\n"
		      "        [[700.0000, 701.0000, 702.0000,  ..., 797.0000, 798.0000, 799.0000],\n"
		      "         [800.0000, 801.0000, 802.0000,  ..., 897.0000, 898.0000, 899.0000],\n"
		      "         [900.0000, 901.0000, 902.0000,  ..., 997.0000, 998.0000, 999.0000],\n"
		      "         ...,\n"
		      "         [1100.0000, 1101.0000, 1102.0000,  ..., 1197.0000, 1198.0000, 1199.0000],\n"
		      "         [1200.0000, 1201.0000, 1202.0000,  ..., 1297.0000, 1298.0000, 1299.0000],\n"
		      "         [1300.0000, 1301.0000, 1302.0000,  ..., 1397.0000, 1398.0000, 1399.0000]]], dtype=float64, requires_grad=True)");
}
END_TEST

static Suite *print_suite(void)
{
	Suite *s = suite_create("tensor_print");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60); /* sanitizer builds on a busy machine */
	tcase_add_test(tc, test_language_md_examples);
	tcase_add_test(tc, test_elements);
	tcase_add_test(tc, test_empty);
	tcase_add_test(tc, test_rank3_and_4);
	tcase_add_test(tc, test_summarize);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(print_suite());
}
