/* check_trace_oom.c - allocation failure in the trace layer: a small
 * compiled program runs with the nth counted allocation failing
 * (util_fail_alloc_after, util.h), for n = 1, 2, 3, ... until it completes
 * without reaching it. Every run must complete with the eager result:
 * the trace that met the failure is abandoned and its frame runs in the
 * VM. Under make check-asan, a reference or block lost on the way out of
 * a trace is a leak. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "program_test_util.h"
#include "arena.h"
#include "compiler.h"
#include "frame_eval.h"
#include "prelude.h"
#include "runtime.h"
#include "util.h"
#include "vm.h"

static struct runtime *rt;

static void setup(void)
{
	rt = test_runtime_new(NULL);
}

static void teardown(void)
{
	util_fail_alloc_after(0);
	test_runtime_free(rt, NULL);
	rt = NULL;
}

/* Runs text in a new VM with the nth counted allocation failing (0: none);
 * returns repr(r), malloc'd. *hit: whether the failure happened. */
static char *run_failing_at(const char *text, long n, bool *hit)
{
	frame_eval_reset(rt);
	struct vm *vm = prelude_vm_new();
	vm_set_runtime(vm, rt);
	struct source *src;
	struct code *code = test_compile(text, &src);
	/* the program runs with the failure set: its compile does not */
	util_fail_alloc_after(n);
	value res = vm_run_module(vm, code);
	*hit = n > 0 && !util_fail_alloc_pending();
	util_fail_alloc_after(0);
	ck_assert_msg(!val_is_err(res), "failing at %ld: %s", n, vm_error_message(vm));
	value r = vm_get_global(vm, "r");
	ck_assert_msg(!val_is_err(r), "failing at %ld: r is not set", n);
	struct strbuf sb = STRBUF_INIT;
	val_repr(r, &sb);
	frame_eval_reset(rt); /* the caches point into this VM's code */
	vm_free(vm);
	val_decref(val_obj(VAL_CODE, code));
	source_free(src);
	return sb_detach(&sb);
}

/* ops, an inlined call, a loop unrolled, a list mutated from outside, a
 * global, a data-dependent branch (a graph break), a recompile on a new
 * shape and a cache hit */
static const char prog[] = "def helper(x, k):\n"
			   "    return x * k + 1\n"
			   "log = []\n"
			   "scale = 3\n"
			   "@compile(backend=\"eager\")\n"
			   "def f(x, n):\n"
			   "    global scale\n"
			   "    y = helper(x, 2)\n"
			   "    log.append(n)\n"
			   "    for i in range(3):\n"
			   "        y = y + x.sum() * i\n"
			   "    if y.sum() > 100:\n"
			   "        y = y - scale\n"
			   "    scale = scale + 1\n"
			   "    ys = [y, x.exp()]\n"
			   "    return ys[0] * 2 + ys[1], len(log)\n"
			   "a = f(ones(4), 1)\n"
			   "b = f(ones(5) * 10, 2)\n"
			   "c = f(ones(4), 3)\n"
			   "r = [a, b, c, log, scale]\n";

/* a break inside an inlined call (the trace restarts, breaking at the
 * call), a list from outside changed, recompiles on new sizes until they
 * are symbolic */
static const char prog_restart[] = "def inner(x):\n"
				   "    y = x * 3\n"
				   "    if y.sum() > 0:\n"
				   "        y = y + 1\n"
				   "    return y * 2\n"
				   "acc = [0.0]\n"
				   "@compile(backend=\"eager\")\n"
				   "def g(x, acc):\n"
				   "    acc.append(x.sum())\n"
				   "    acc[0] = acc[0] + 1\n"
				   "    return inner(x - 1) + x.exp().sum(), len(acc)\n"
				   "for n in range(2, 6):\n"
				   "    out = g(ones(n), acc)\n"
				   "r = [out, acc]\n";

static const char *const progs[] = {prog, prog_restart};

START_TEST(test_every_allocation_fails_in_turn)
{
	const char *text = progs[_i];
	bool hit;
	rt->sw.disabled = true;
	char *eager = run_failing_at(text, 0, &hit);
	rt->sw.disabled = false;
	char *compiled = run_failing_at(text, 0, &hit);
	ck_assert_str_eq(compiled, eager);
	free(compiled);
	long n = 1;
	for (;; n++) {
		char *got = run_failing_at(text, n, &hit);
		ck_assert_msg(strcmp(got, eager) == 0, "failing at %ld: %s, eager %s", n, got, eager);
		free(got);
		if (!hit)
			break;
	}
	/* the program's compiles make many counted allocations: a test that
	 * stops at the first has reached nothing */
	ck_assert_int_gt(n, 20);
	free(eager);
}
END_TEST

START_TEST(test_fail_alloc_after)
{
	util_fail_alloc_after(2);
	void *a = util_malloc(8);
	ck_assert_ptr_nonnull(a);
	ck_assert(util_fail_alloc_pending());
	ck_assert_ptr_null(util_calloc(1, 8));
	ck_assert(!util_fail_alloc_pending());
	/* once: the next ones succeed */
	char *s = util_strdup("x");
	ck_assert_str_eq(s, "x");
	free(s);
	free(a);
	/* an arena's chunks are counted: a trace's blocks come from them */
	struct arena ar = ARENA_INIT;
	util_fail_alloc_after(1);
	ck_assert_ptr_null(arena_alloc(&ar, 16));
	ck_assert_ptr_nonnull(arena_alloc(&ar, 16));
	arena_free(&ar);
	util_fail_alloc_after(0);
	ck_assert(!util_fail_alloc_pending());
}
END_TEST

static Suite *trace_oom_suite(void)
{
	Suite *s = suite_create("trace_oom");
	TCase *tc = tcase_create("oom");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_fail_alloc_after);
	tcase_add_loop_test(tc, test_every_allocation_fails_in_turn, 0, (int)(sizeof progs / sizeof progs[0]));
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(trace_oom_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
