/* check_inductor_lower.c - inductor's lowering and fusion
 * (core/stages/inductor_lower.c): which nodes fuse into which kernel,
 * which stay in registers, the loop IR of views and reductions, and the
 * extern calls. The graphs come from real programs, decomposed as
 * aot_eager decomposes them. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#define TEST_CAPTURE_GRAPHS
#include "program_test_util.h"
#include "aot_decompose.h"
#include "inductor_lower.h"
#include "prelude.h"
#include "vm.h"

/* the program listing of the one graph that body's f(x) gives for x */
static char *lower_text(const char *body, const char *arg, struct ind_program *p)
{
	char text[2048];
	snprintf(text, sizeof text, "def f(x):\n%sg = compile(f, backend=\"eager\")\ng(%s)\n", body, arg);
	run_capturing(text);
	ck_assert_int_eq(ngraphs, 1);
	ck_assert_int_eq(aot_decompose(graphs[0], NULL), 0);
	memset(p, 0, sizeof *p);
	ck_assert_msg(ind_lower(graphs[0], p, NULL) == 0, "%s", tj_error_peek());
	char *s = ind_program_format(p);
	ck_assert_ptr_nonnull(s);
	return s;
}

static int count(const char *hay, const char *needle)
{
	int n = 0;
	for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

static void teardown(void)
{
	drop_graphs();
	tj_error_clear();
}

/* the 8-op chain of the benchmark is one kernel with one flat loop: one
 * load, one store, nothing in between stored */
START_TEST(test_pointwise_chain_one_kernel)
{
	struct ind_program p;
	char *s = lower_text("    return relu(tanh(x * 2 + 1) * sigmoid(x) - x / 3)\n", "randn(4, 5)", &p);
	ck_assert_int_eq(p.nsteps, 1);
	ck_assert_int_eq(p.steps[0].kind, ISTEP_KERNEL);
	ck_assert_int_eq(count(s, "for v"), 1);        /* flattened */
	ck_assert_int_eq(count(s, "= buf0[v0]"), 1);     /* x read once */
	ck_assert_int_eq(count(s, "buf1[v0] = "), 1);
	ck_assert_int_eq(p.steps[0].k->nbufs, 2);
	ck_assert_msg(strstr(s, "  for v0 in 0..20:\n"), "%s", s);
	free(s);
	ind_program_release(&p);
}
END_TEST

/* softmax along the last dim: max, sum of exp and the division in one
 * kernel of three sections over each row */
START_TEST(test_softmax_one_kernel)
{
	struct ind_program p;
	char *s = lower_text("    return softmax(x, -1)\n", "randn(8, 16)", &p);
	ck_assert_msg(p.nsteps == 1, "%s\n%s", s, sb_str(&p.log));
	ck_assert_int_eq(count(s, "reduce_max("), 1);
	ck_assert_int_eq(count(s, "reduce_sum("), 1);
	ck_assert_int_eq(count(s, "  for v0 in 0..8:\n"), 1);
	ck_assert_int_eq(count(s, "for v"), 4); /* the rows, then a loop per section */
	ck_assert_int_eq(p.steps[0].k->nbufs, 2);
	free(s);
	ind_program_release(&p);
}
END_TEST

/* a transpose read by a pointwise op is index arithmetic: no copy, and a
 * nested loop since the layout does not flatten */
START_TEST(test_permute_is_index_arithmetic)
{
	struct ind_program p;
	char *s = lower_text("    return x.permute(1, 0) * 2\n", "randn(3, 5)", &p);
	ck_assert_int_eq(p.nsteps, 1);
	ck_assert_msg(strstr(s, "buf0[v0 + v1*5]"), "%s", s);
	ck_assert_msg(strstr(s, "buf1[v1 + v0*3] = "), "%s", s);
	free(s);
	ind_program_release(&p);
	drop_graphs();
	/* a reshape of a contiguous value stays a flat index */
	s = lower_text("    return (x * 2).reshape(5, 3) + 1\n", "randn(3, 5)", &p);
	ck_assert_int_eq(p.nsteps, 1);
	ck_assert_int_eq(count(s, "//"), 0);
	ck_assert_int_eq(count(s, "%"), 0);
	free(s);
	ind_program_release(&p);
}
END_TEST

/* matmul is an extern call; the pointwise ops on each side are kernels,
 * and the value the extern reads is stored */
START_TEST(test_matmul_extern)
{
	struct ind_program p;
	char *s = lower_text("    y = (x * 2) @ x\n    return y + 1\n", "randn(4, 4)", &p);
	ck_assert_msg(p.nsteps == 3, "%s", s);
	ck_assert_int_eq(p.steps[0].kind, ISTEP_KERNEL);
	ck_assert_int_eq(p.steps[1].kind, ISTEP_EXTERN);
	ck_assert_int_eq(p.steps[2].kind, ISTEP_KERNEL);
	free(s);
	ind_program_release(&p);
}
END_TEST

/* a value read twice inside its group stays in registers; the one the
 * outputs need is stored */
START_TEST(test_registers_and_stores)
{
	struct ind_program p;
	char *s = lower_text("    y = exp(x)\n    return y * y + y, y.sum()\n", "randn(6)", &p);
	ck_assert_msg(p.nsteps == 1, "%s\n%s", s, sb_str(&p.log));
	/* y has no buffer of its own: the sum's section computes it, and keeps
	 * it in the buffer of y * y + y, which the next section reads back
	 * (y is shared there) before it stores the sum of products over it */
	ck_assert_msg(count(s, "exp(") == 1 && !strstr(s, "out float32 exp"), "%s", s);
	ck_assert_msg(count(s, "buf1[") == 3, "%s", s); /* y stored; read; y * y + y stored */
	ck_assert_msg(strstr(sb_str(&p.log), "group 0: exp is computed once, in sum_1's loop, and kept in add's buffer "
					     "for the last loop\n"), "%s", sb_str(&p.log));
	ck_assert_int_eq(p.steps[0].k->nbufs, 3);
	free(s);
	ind_program_release(&p);
	drop_graphs();
	/* an argument without a transcendental is computed again: cheaper
	 * than a store and a load */
	s = lower_text("    y = x * 2\n    return y / y.sum()\n", "randn(6)", &p);
	ck_assert_msg(count(s, "mul(") == 2 && count(s, "buf1[") == 1, "%s", s);
	ck_assert_msg(!strstr(sb_str(&p.log), "computed once"), "%s", sb_str(&p.log));
	free(s);
	ind_program_release(&p);
	drop_graphs();
	/* a dim of size 1 has index 0, no loop, as a broadcast read of it
	 * has: identity views of the kept value read its load, exp once */
	s = lower_text("    e = exp(x)\n    return e.sum(-1, keepdim=True), e * 2.0, e[:, :, :]\n",
		       "randn(2, 1, 3)", &p);
	ck_assert_msg(count(s, "exp(") == 1 && !strstr(s, "in 0..1:"), "%s", s);
	ck_assert_msg(strstr(sb_str(&p.log), "group 0: exp is computed once"), "%s", sb_str(&p.log));
	free(s);
	ind_program_release(&p);
	drop_graphs();
	/* and a reduced dim of size 1: no inner loop either, so the last
	 * loop's broadcast read of exp is the kept one */
	s = lower_text("    e = exp(x)\n    return e / e.sum((1, 2), keepdim=True)\n", "randn(2, 1, 3)", &p);
	ck_assert_msg(count(s, "exp(") == 1 && !strstr(s, "in 0..1:"), "%s", s);
	ck_assert_msg(strstr(sb_str(&p.log), "group 0: exp is computed once"), "%s", sb_str(&p.log));
	free(s);
	ind_program_release(&p);
}
END_TEST

/* symbolic sizes stay symbols in the loops */
START_TEST(test_dynamic_sizes)
{
	char text[] = "def f(x):\n    return (x * 2).sum(1)\n"
		      "g = compile(f, backend=\"eager\", dynamic=True)\ng(randn(3, 5))\n";
	run_capturing(text);
	ck_assert_int_eq(ngraphs, 1);
	struct ind_program p = {0};
	ck_assert_int_eq(ind_lower(graphs[0], &p, NULL), 0);
	char *s = ind_program_format(&p);
	ck_assert_msg(strstr(s, "for v0 in 0..s0:") && strstr(s, "for v1 in 0..s1:"), "%s", s);
	free(s);
	ind_program_release(&p);
}
END_TEST

/* a sum over rows keeps the contiguous last dim: an extern call on the
 * eager kernel (row by row, vector accumulators), its input stored by a
 * kernel; a chain of row normalizations splits at 2 reductions a kernel */
START_TEST(test_column_sum_and_reduction_cap)
{
	struct ind_program p;
	char *s = lower_text("    return (x * 2).sum(0)\n", "randn(6, 5)", &p);
	ck_assert_msg(p.nsteps == 2 && p.steps[0].kind == ISTEP_KERNEL && p.steps[1].kind == ISTEP_EXTERN, "%s", s);
	free(s);
	ind_program_release(&p);
	drop_graphs();
	s = lower_text("    for i in range(3):\n        x = (x - x.max(1, keepdim=True)[0]) / x.sum(1, keepdim=True)\n"
		       "    return x\n",
		       "randn(4, 8)", &p);
	ck_assert_msg(p.nsteps >= 3, "%s\n%s", s, sb_str(&p.log));
	for (int k = 0; k < p.nsteps; k++) {
		int nred = 0;
		for (int r = 0; r < p.steps[k].k->nnodes; r++)
			nred += p.steps[k].k->nodes[r].op == LOP_REDUCE;
		ck_assert_int_le(nred, 2);
	}
	ck_assert_msg(strstr(sb_str(&p.log), "closed before") && strstr(sb_str(&p.log), "the group holds its most reductions"),
		      "%s", sb_str(&p.log));
	free(s);
	ind_program_release(&p);
}
END_TEST

/* x[1:, :2] (a tuple of slices, recorded as a tuple of constants) and a
 * reduction over dims of size 1 are index arithmetic and a pointwise
 * value: one kernel, no extern call */
START_TEST(test_slices_and_unit_reductions)
{
	struct ind_program p;
	char *s = lower_text("    y = x[1:, :2] * 2\n    return y - y[:, :1].sum(1, keepdim=True), y[:1].max(0, keepdim=True)[0]\n",
			     "randn(4, 3)", &p);
	int kernels = 0, externs = 0;
	for (int k = 0; k < p.nsteps; k++) {
		kernels += p.steps[k].kind == ISTEP_KERNEL;
		externs += p.steps[k].kind == ISTEP_EXTERN;
	}
	ck_assert_msg(externs == 0 && kernels >= 1, "%s\n%s", s, sb_str(&p.log));
	free(s);
	ind_program_release(&p);
}
END_TEST

/* a float32 exp (evaluated in double) counts as two transcendentals: a
 * row normalization does not join a chain of 7 of them, which its two
 * sections would compute twice (28 > 24); in float64 (one each) it does */
START_TEST(test_float32_exp_counts_twice)
{
	struct ind_program p;
	char body[1024] = "", *s;
	for (int i = 0; i < 7; i++)
		strcat(body, "    x = exp(x) * 0.25\n");
	strcat(body, "    return x / x.sum(-1, keepdim=True)\n");
	s = lower_text(body, "randn(4, 8)", &p);
	ck_assert_msg(p.nsteps == 2 && strstr(sb_str(&p.log), "would compute 28 transcendentals"), "%s\n%s", s,
		      sb_str(&p.log));
	free(s);
	ind_program_release(&p);
	drop_graphs();
	s = lower_text(body, "randn(4, 8, dtype=float64)", &p);
	ck_assert_msg(p.nsteps == 1, "%s\n%s", s, sb_str(&p.log));
	free(s);
	ind_program_release(&p);
}
END_TEST

/* a long chain of transcendentals before row reductions: each section
 * would recompute it, so the group closes before its kernel computes
 * more than 24 of them */
START_TEST(test_transcendental_cap)
{
	struct ind_program p;
	char *s = lower_text("    for i in range(3):\n"
			     "        x = tanh(exp(sigmoid(tanh(exp(sigmoid(x))))))\n"
			     "        x = x / x.sum(-1, keepdim=True)\n"
			     "    return x\n",
			     "randn(4, 8)", &p);
	ck_assert_msg(strstr(sb_str(&p.log), "transcendentals (its sections each recompute what they inline)"), "%s",
		      sb_str(&p.log));
	for (int k = 0; k < p.nsteps; k++) {
		int n = 0;
		for (int r = 0; p.steps[k].k && r < p.steps[k].k->nnodes; r++)
			n += p.steps[k].k->nodes[r].op == LOP_UNARY;
		ck_assert_int_le(n, 24 + 6); /* the cap, and the member that starts a group */
	}
	free(s);
	ind_program_release(&p);
}
END_TEST

/* a reshape of an input is the input's storage under another shape (an
 * alias step, no copy kernel); matmul reads a transposed operand (or
 * permutes that cancel) as the stored matrix, with BLAS's transpose flag,
 * and the transpose of a matmul is one matmul of its operands swapped:
 * no transpose is copied */
START_TEST(test_views_alias_buffers)
{
	struct ind_program p;
	char *s = lower_text("    return x.permute(1, 0).permute(1, 0) @ x.reshape(3, 4), x.permute(1, 0) @ x,"
			     " (x @ x.permute(1, 0)).permute(1, 0)\n",
			     "randn(4, 3)", &p);
	ck_assert_msg(count(s, "  alias ") == 1 && strstr(s, "  alias reshape = x\n"), "%s", s);
	ck_assert_msg(strstr(s, "  extern matmul = matmul(x, reshape)\n"), "%s", s);
	ck_assert_msg(strstr(s, "  extern matmul_1 = matmul(x.T, x)\n"), "%s", s);
	/* (x x^T)^T: its operands swapped, each transposed once more */
	ck_assert_msg(strstr(s, "  extern permute_4 = matmul(x, x.T)\n"), "%s", s);
	int kernels = 0;
	for (int k = 0; k < p.nsteps; k++)
		kernels += p.steps[k].kind == ISTEP_KERNEL;
	ck_assert_msg(kernels == 0, "%s", s);
	ck_assert_msg(strstr(sb_str(&p.log), "extern matmul_1: matmul(x.T, x), one BLAS call that reads the transposes in place"),
		      "%s", sb_str(&p.log));
	free(s);
	ind_program_release(&p);
}
END_TEST

/* a kernel after a matmul whose loops are the product's rows and that
 * reads it in the row it is on is its epilogue (in a block's buffer when
 * nothing else reads the product); one that reads it transposed is not */
START_TEST(test_matmul_epilogue)
{
	struct ind_program p;
	char *s = lower_text("    return relu(x @ x.permute(1, 0)) + 1\n", "randn(4, 3)", &p);
	ck_assert_msg(strstr(s, "  extern matmul = matmul(x, x.T), by blocks of rows, step 1 on each (a block's buffer)\n"),
		      "%s", s);
	ck_assert(p.nsteps == 2 && p.steps[0].epilogue && p.steps[0].scratch && p.steps[1].flat);
	free(s);
	ind_program_release(&p);
	drop_graphs();
	s = lower_text("    m = x @ x.permute(1, 0)\n    return m, m.softmax(-1)\n", "randn(4, 3)", &p);
	ck_assert_msg(strstr(s, "  extern matmul = matmul(x, x.T), by blocks of rows, step 1 on each\n"), "%s", s);
	ck_assert(p.steps[0].epilogue && !p.steps[0].scratch && !p.steps[1].flat);
	free(s);
	ind_program_release(&p);
	drop_graphs();
	/* read by cat, in a list: kept whole (a generated program found it
	 * taken for a block's buffer) */
	s = lower_text("    m = x @ x.permute(1, 0)\n    return m.var(-1), cat([m, m], 0)\n", "randn(4, 3)", &p);
	ck_assert_msg(p.steps[0].epilogue && !p.steps[0].scratch, "%s", s);
	free(s);
	ind_program_release(&p);
	drop_graphs();
	s = lower_text("    m = x @ x.permute(1, 0)\n    return relu(m).permute(1, 0) + m\n", "randn(4, 3)", &p);
	ck_assert_msg(!strstr(s, "by blocks") && !p.steps[0].epilogue, "%s", s);
	free(s);
	ind_program_release(&p);
}
END_TEST

/* the planted bugs of TJIT_INJECT_BUG=inductor:*, only in a kernel that
 * computes a relu: a store 2^40 elements past its buffer, a wrong
 * constant, a compile error; and the phases the lowering times */
START_TEST(test_planted_bugs)
{
	run_capturing("def f(x):\n    return relu(x * 2), x.exp()\ng = compile(f, backend=\"eager\")\ng(randn(3, 4))\n");
	ck_assert_int_eq(ngraphs, 1);
	struct compile_config cfg = {0};
	struct inject_bug bug = {INJECT_INDUCTOR, INJECT_RUNTIME_ERROR};
	struct compile_ctx cc;
	compile_ctx_init(&cc, &cfg, &bug, NULL, "0/0");
	struct ind_program p = {0};
	ck_assert_int_eq(ind_lower(graphs[0], &p, &cc), 0);
	char *s = ind_program_format(&p);
	/* one kernel computes both (same shape): its first store is the bad one */
	ck_assert_msg(strstr(s, " + 1099511627776] = "), "%s", s);
	ck_assert_int_eq(count(s, "1099511627776"), 1);
	ck_assert(compile_ctx_phase_ms(&cc, "schedule") >= 0);
	ck_assert_int_ge(cc.nphases, 2);
	ck_assert_str_eq(cc.phases[0].name, "schedule");
	ck_assert_str_eq(cc.phases[1].name, "lower");
	free(s);
	ind_program_release(&p);
	compile_ctx_release(&cc);

	bug.kind = INJECT_ACCURACY;
	compile_ctx_init(&cc, &cfg, &bug, NULL, "0/0");
	memset(&p, 0, sizeof p);
	ck_assert_int_eq(ind_lower(graphs[0], &p, &cc), 0);
	s = ind_program_format(&p);
	ck_assert_msg(strstr(s, "where(") && !strstr(s, "relu("), "%s", s);
	free(s);
	ind_program_release(&p);
	compile_ctx_release(&cc);

	bug.kind = INJECT_COMPILE_ERROR;
	compile_ctx_init(&cc, &cfg, &bug, NULL, "0/0");
	memset(&p, 0, sizeof p);
	ck_assert_int_eq(ind_lower(graphs[0], &p, &cc), -1);
	ck_assert_str_eq(tj_error_peek(),
			 "inductor: InductorCompileError: a kernel computes relu (TJIT_INJECT_BUG=inductor:compile_error)");
	ind_program_release(&p);
	compile_ctx_release(&cc);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("inductor_lower");
	TCase *tc = tcase_create("core");
	tcase_add_checked_fixture(tc, NULL, teardown);
	tcase_add_test(tc, test_pointwise_chain_one_kernel);
	tcase_add_test(tc, test_softmax_one_kernel);
	tcase_add_test(tc, test_permute_is_index_arithmetic);
	tcase_add_test(tc, test_matmul_extern);
	tcase_add_test(tc, test_registers_and_stores);
	tcase_add_test(tc, test_dynamic_sizes);
	tcase_add_test(tc, test_planted_bugs);
	tcase_add_test(tc, test_slices_and_unit_reductions);
	tcase_add_test(tc, test_transcendental_cap);
	tcase_add_test(tc, test_float32_exp_counts_twice);
	tcase_add_test(tc, test_views_alias_buffers);
	tcase_add_test(tc, test_matmul_epilogue);
	tcase_add_test(tc, test_column_sum_and_reduction_cap);
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
