/* check_loopir.c - the loop IR builder (core/loop/loopir.c): hash-consing,
 * the index simplifications that keep reshaped loads affine, the hash that
 * names kernels, and the listing. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "loopir.h"

static lref c64(struct lkernel *k, int64_t v) { return loop_const_int(k, DT_INT64, v); }

START_TEST(test_hash_consing)
{
	struct lkernel *k = loop_kernel_new();
	int v = loop_add_var(k, c64(k, 10), -1);
	int b = loop_add_buf(k, DT_FLOAT32, false, c64(k, 10), "x");
	lref i = loop_var_ref(k, v);
	lref x1 = loop_load(k, b, i), x2 = loop_load(k, b, i);
	ck_assert_int_eq(x1, x2);
	lref e1 = loop_unary(k, UNOP_exp, x1), e2 = loop_unary(k, UNOP_exp, x2);
	ck_assert_int_eq(e1, e2);
	ck_assert_int_ne(loop_unary(k, UNOP_log, x1), e1);
	/* constants are equal by dtype and value */
	ck_assert_int_eq(loop_const_float(k, DT_FLOAT32, 0.1), loop_const_float(k, DT_FLOAT32, 0.1));
	ck_assert_int_ne(loop_const_float(k, DT_FLOAT32, 0.1), loop_const_float(k, DT_FLOAT64, 0.1));
	/* a failed operand propagates */
	ck_assert_int_eq(loop_unary(k, UNOP_exp, -1), -1);
	ck_assert_int_eq(loop_binary(k, BINOP_add, x1, -1), -1);
	loop_kernel_free(k);
}
END_TEST

/* sigmoid and silu, spelled out in a program, are one op again */
START_TEST(test_sigmoid_silu_put_back)
{
	struct lkernel *k = loop_kernel_new();
	int v = loop_add_var(k, c64(k, 10), -1);
	int b = loop_add_buf(k, DT_FLOAT32, false, c64(k, 10), "x");
	lref x = loop_load(k, b, loop_var_ref(k, v)), one = loop_const_float(k, DT_FLOAT32, 1.0);
	lref e = loop_unary(k, UNOP_exp, loop_unary(k, UNOP_neg, x));
	lref d = loop_binary(k, BINOP_add, e, one);
	ck_assert_int_eq(loop_binary(k, BINOP_div, one, d), loop_unary(k, UNOP_sigmoid, x));
	ck_assert_int_eq(loop_binary(k, BINOP_div, x, d), loop_unary(k, UNOP_silu, x));
	/* 1 + exp(-x), the other order */
	ck_assert_int_eq(loop_binary(k, BINOP_div, one, loop_binary(k, BINOP_add, one, e)),
			 loop_unary(k, UNOP_sigmoid, x));
	/* not the pattern: 2 / (1 + exp(-x)), y / (1 + exp(-x)), 1 / (2 + exp(-x)), 1 / (1 + exp(x)) */
	lref two = loop_const_float(k, DT_FLOAT32, 2.0);
	lref y = loop_unary(k, UNOP_abs, x);
	ck_assert_int_eq(loop_node(k, loop_binary(k, BINOP_div, two, d))->op, LOP_BINARY);
	ck_assert_int_eq(loop_node(k, loop_binary(k, BINOP_div, y, d))->op, LOP_BINARY);
	ck_assert_int_eq(loop_node(k, loop_binary(k, BINOP_div, one, loop_binary(k, BINOP_add, e, two)))->op,
			 LOP_BINARY);
	lref d2 = loop_binary(k, BINOP_add, loop_unary(k, UNOP_exp, x), one);
	ck_assert_int_eq(loop_node(k, loop_binary(k, BINOP_div, one, d2))->op, LOP_BINARY);
	loop_kernel_free(k);
}
END_TEST

/* a division by a power of two is a multiplication by its reciprocal
 * (exact), unless the reciprocal is not a normal number; by any other
 * constant it stays a division (x * (1/3) is not x / 3) */
START_TEST(test_div_by_constant)
{
	struct lkernel *k = loop_kernel_new();
	int v = loop_add_var(k, c64(k, 10), -1);
	int b = loop_add_buf(k, DT_FLOAT32, false, c64(k, 10), "x");
	lref x = loop_load(k, b, loop_var_ref(k, v));
	lref q = loop_binary(k, BINOP_div, x, loop_const_float(k, DT_FLOAT32, 4.0));
	ck_assert_int_eq(q, loop_binary(k, BINOP_mul, x, loop_const_float(k, DT_FLOAT32, 0.25)));
	q = loop_binary(k, BINOP_div, x, loop_const_float(k, DT_FLOAT32, -0x1p126));
	ck_assert_int_eq(q, loop_binary(k, BINOP_mul, x, loop_const_float(k, DT_FLOAT32, -0x1p-126)));
	static const double keep[] = {0.0, -0.0, 3.0, 0.1, 10.0, 1e-40, 0x1p127, 0x1p-128};
	for (size_t i = 0; i < sizeof keep / sizeof *keep; i++) {
		q = loop_binary(k, BINOP_div, x, loop_const_float(k, DT_FLOAT32, keep[i]));
		ck_assert_msg(loop_node(k, q)->sub == BINOP_div, "x / %g", keep[i]);
	}
	/* 2^127's reciprocal is a float64's normal number */
	int b64 = loop_add_buf(k, DT_FLOAT64, false, c64(k, 10), "y");
	lref y = loop_load(k, b64, loop_var_ref(k, v));
	ck_assert_int_eq(loop_node(k, loop_binary(k, BINOP_div, y, loop_const_float(k, DT_FLOAT64, 0x1p127)))->sub, BINOP_mul);
	ck_assert_int_eq(loop_node(k, loop_binary(k, BINOP_div, y, loop_const_float(k, DT_FLOAT64, 3.0)))->sub, BINOP_div);
	loop_kernel_free(k);
}
END_TEST

START_TEST(test_index_folding)
{
	struct lkernel *k = loop_kernel_new();
	int v = loop_add_var(k, c64(k, 12), -1);
	lref i = loop_var_ref(k, v);
	int64_t c;
	ck_assert(loop_is_const(k, loop_iadd(k, c64(k, 2), c64(k, 3)), &c) && c == 5);
	ck_assert(loop_is_const(k, loop_imul(k, c64(k, 4), c64(k, -3)), &c) && c == -12);
	ck_assert(loop_is_const(k, loop_idiv(k, c64(k, -7), c64(k, 2)), &c) && c == -4); /* floor */
	ck_assert(loop_is_const(k, loop_imod(k, c64(k, -7), c64(k, 2)), &c) && c == 1);  /* sign of divisor */
	ck_assert_int_eq(loop_iadd(k, i, c64(k, 0)), i);
	ck_assert_int_eq(loop_imul(k, c64(k, 1), i), i);
	ck_assert(loop_is_const(k, loop_imul(k, i, c64(k, 0)), &c) && c == 0);
	ck_assert_int_eq(loop_idiv(k, i, c64(k, 1)), i);
	/* (i * 3) * 4 = i * 12; (i + 1) + 2 = i + 3 */
	ck_assert_int_eq(loop_imul(k, loop_imul(k, i, c64(k, 3)), c64(k, 4)), loop_imul(k, i, c64(k, 12)));
	ck_assert_int_eq(loop_iadd(k, loop_iadd(k, i, c64(k, 1)), c64(k, 2)), loop_iadd(k, i, c64(k, 3)));
	/* a var below the divisor: v // 12 = 0, v % 12 = v; not so for 5 */
	ck_assert(loop_is_const(k, loop_idiv(k, i, c64(k, 12)), &c) && c == 0);
	ck_assert_int_eq(loop_imod(k, i, c64(k, 12)), i);
	ck_assert_int_ne(loop_imod(k, i, c64(k, 5)), i);
	/* a product of symbols is one node whatever the order */
	lref s0 = loop_sym(k, 0), s1 = loop_sym(k, 1);
	ck_assert_int_eq(loop_imul(k, s0, s1), loop_imul(k, s1, s0));
	ck_assert_int_eq(k->nsyms, 2);
	loop_kernel_free(k);
}
END_TEST

/* reshape (12,) -> (3, 4) of a contiguous buffer, read back flat: the index
 * (i // 4) * 4 + i % 4 is i again, also with a stride and an offset, and
 * with a symbolic inner size */
START_TEST(test_reshape_index_joins)
{
	struct lkernel *k = loop_kernel_new();
	int v = loop_add_var(k, c64(k, 12), -1);
	lref i = loop_var_ref(k, v);
	lref four = c64(k, 4);
	lref row = loop_idiv(k, i, four), col = loop_imod(k, i, four);
	ck_assert_int_eq(loop_iadd(k, loop_imul(k, row, four), col), i);
	ck_assert_int_eq(loop_iadd(k, col, loop_imul(k, row, four)), i);
	/* strides 8 and 2: 2 i */
	lref idx = loop_iadd(k, loop_imul(k, row, c64(k, 8)), loop_imul(k, col, c64(k, 2)));
	ck_assert_int_eq(idx, loop_imul(k, i, c64(k, 2)));
	/* an offset first: 5 + (i // 4) * 4 + i % 4 = i + 5 */
	lref off = loop_iadd(k, loop_iadd(k, c64(k, 5), loop_imul(k, row, four)), col);
	ck_assert_int_eq(off, loop_iadd(k, i, c64(k, 5)));
	/* symbolic: (i // s0) * s0 + i % s0 = i */
	lref s0 = loop_sym(k, 0);
	lref r2 = loop_idiv(k, i, s0), c2 = loop_imod(k, i, s0);
	ck_assert_int_eq(loop_iadd(k, loop_imul(k, r2, s0), c2), i);
	/* no join when the strides do not match: (i // 4) * 5 + i % 4 */
	lref no = loop_iadd(k, loop_imul(k, row, c64(k, 5)), col);
	ck_assert_int_eq(loop_node(k, no)->op, LOP_BINARY);
	ck_assert_int_eq(loop_node(k, no)->sub, BINOP_add);
	loop_kernel_free(k);
}
END_TEST

static struct lkernel *relu_kernel(const char *name)
{
	struct lkernel *k = loop_kernel_new();
	lref n = loop_sym(k, 0);
	int v = loop_add_var(k, n, -1);
	int x = loop_add_buf(k, DT_FLOAT32, false, n, name);
	int o = loop_add_buf(k, DT_FLOAT32, true, n, "relu");
	int s = loop_add_section(k);
	lref i = loop_var_ref(k, v);
	lref y = loop_unary(k, UNOP_relu, loop_binary(k, BINOP_mul, loop_load(k, x, i),
						     loop_const_float(k, DT_FLOAT32, 2.0)));
	ck_assert_int_eq(loop_add_root(k, s, loop_store(k, o, i, y)), 0);
	loop_kernel_finish(k);
	return k;
}

START_TEST(test_hash_names_and_format)
{
	struct lkernel *a = relu_kernel("x"), *b = relu_kernel("other_name");
	/* buffer names do not take part: the same code is the same kernel */
	ck_assert_str_eq(a->name, b->name);
	ck_assert_int_eq(strlen(a->name), 18);
	ck_assert(strncmp(a->name, "k_", 2) == 0);
	char *text = loop_kernel_format(a);
	char want[512];
	snprintf(want, sizeof want,
		 "kernel %s(buf0: in float32 x, buf1: out float32 relu)\n"
		 "  for v0 in 0..s0:\n"
		 "    t3: float32 = buf0[v0]\n"
		 "    t4: float32 = mul(t3, 2)\n"
		 "    t5: float32 = relu(t4)\n"
		 "    buf1[v0] = t5\n",
		 a->name);
	ck_assert_str_eq(text, want);
	free(text);
	/* another constant is another kernel */
	struct lkernel *c = loop_kernel_new();
	lref n = loop_sym(c, 0);
	int v = loop_add_var(c, n, -1);
	int x = loop_add_buf(c, DT_FLOAT32, false, n, "x");
	int o = loop_add_buf(c, DT_FLOAT32, true, n, "relu");
	int s = loop_add_section(c);
	lref i = loop_var_ref(c, v);
	lref y = loop_unary(c, UNOP_relu, loop_binary(c, BINOP_mul, loop_load(c, x, i),
						     loop_const_float(c, DT_FLOAT32, 3.0)));
	loop_add_root(c, s, loop_store(c, o, i, y));
	loop_kernel_finish(c);
	ck_assert_str_ne(a->name, c->name);
	loop_kernel_free(a);
	loop_kernel_free(b);
	loop_kernel_free(c);
}
END_TEST

/* finishing a kernel of more nodes than the first hash table holds
 * rebuilds the table large enough (it once probed a full table forever) */
START_TEST(test_large_kernel_finish)
{
	struct lkernel *k = loop_kernel_new();
	int v = loop_add_var(k, c64(k, 8), -1);
	int x = loop_add_buf(k, DT_FLOAT32, false, c64(k, 8), "x");
	int o = loop_add_buf(k, DT_FLOAT32, true, c64(k, 8), "y");
	int s = loop_add_section(k);
	lref i = loop_var_ref(k, v);
	lref y = loop_load(k, x, i);
	for (int j = 0; j < 300; j++)
		y = loop_binary(k, BINOP_add, y, loop_const_float(k, DT_FLOAT32, j));
	ck_assert_int_eq(loop_add_root(k, s, loop_store(k, o, i, y)), 0);
	loop_kernel_finish(k);
	ck_assert_int_gt(k->nnodes, 600);
	/* the rebuilt table still finds every node */
	int before = k->nnodes;
	ck_assert_int_ge(loop_const_float(k, DT_FLOAT32, 299), 0);
	ck_assert_int_eq(k->nnodes, before);
	loop_kernel_free(k);
}
END_TEST

START_TEST(test_structure_errors)
{
	struct lkernel *k = loop_kernel_new();
	int x = loop_add_buf(k, DT_FLOAT32, true, c64(k, 4), "x");
	/* a store must match the buffer's dtype */
	tj_error_clear();
	ck_assert_int_eq(loop_store(k, x, c64(k, 0), loop_const_float(k, DT_FLOAT64, 1)), -1);
	ck_assert_str_eq(tj_error_peek(), "loop IR: store of float64 into a float32 buffer");
	/* binary operands of one dtype */
	tj_error_clear();
	ck_assert_int_eq(loop_binary(k, BINOP_add, loop_const_float(k, DT_FLOAT32, 1), c64(k, 1)), -1);
	ck_assert_str_eq(tj_error_peek(), "loop IR: add of float32 and int64");
	/* an outer var after a section is refused; an inner one is its section's */
	int s = loop_add_section(k);
	ck_assert_int_eq(loop_add_var(k, c64(k, 3), -1), -1);
	int r = loop_add_var(k, c64(k, 3), s);
	ck_assert_int_eq(r, 0);
	ck_assert_int_eq(k->sections[s].ninner, 1);
	ck_assert_int_eq(k->nouter, 0);
	loop_kernel_free(k);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("loopir");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_hash_consing);
	tcase_add_test(tc, test_sigmoid_silu_put_back);
	tcase_add_test(tc, test_div_by_constant);
	tcase_add_test(tc, test_index_folding);
	tcase_add_test(tc, test_reshape_index_joins);
	tcase_add_test(tc, test_hash_names_and_format);
	tcase_add_test(tc, test_large_kernel_finish);
	tcase_add_test(tc, test_structure_errors);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
