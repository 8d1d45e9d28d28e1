/* check_stages_oom.c - allocation failure in the middle of an aot_eager
 * or inductor compile: small programs compiled by those backends run with
 * the nth counted allocation failing (util_fail_alloc_after, util.h), for
 * n = 1, 2, 3, ... until a run completes without reaching it. Every run
 * must end with the eager result: a failure in the trace runs the frame
 * in the VM (check_trace_oom.c), one in a stage's compile is reported as
 * the compile's error ("aot_eager: out of memory") and the frame runs on
 * the stage's fallback (inductor -> aot_eager -> eager). Under make
 * check-asan a block lost on a failure path is a leak.
 *
 * The kernel cache is kept in memory only (no disk: nothing from another
 * run), and dropped before each inductor run of the cold pass so that its
 * kernels go through the code generator again. The code generator itself
 * (a shared object, on the pool's threads) makes no counted allocation:
 * the countdown is the calling thread's, so the same n fails the same
 * allocation whatever the scheduling. */
#include <check.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "program_test_util.h"
#include "codegen_load.h"
#include "inductor_compile.h"
#include "util.h"

static struct runtime *rt;
/* since the last reset: the compiles whose error is an allocation failure
 * in a stage ("aot_eager: out of memory", "inductor: kernel k: ...: out
 * of memory"), those that fell back to another backend, and those that
 * met it before the stage (the trace, the cache entry: "out of memory",
 * the frame runs in the VM) */
static int stage_oom, stage_fallbacks, trace_oom;
/* the kernels the compiles generated (not from the cache) */
static int kernels_made;

static void count_oom(struct compile_listener *l, const struct compile_record *r)
{
	(void)l;
	for (int i = 0; i < r->nkernels; i++)
		kernels_made += !r->kernels[i].cache_hit;
	if (!r->error || !strstr(r->error, "out of memory"))
		return;
	if (strcmp(r->error, "out of memory") == 0) {
		trace_oom++;
		return;
	}
	stage_oom++;
	stage_fallbacks += r->fallback != NULL;
}

static struct compile_listener listener = {count_oom, NULL};
/* the warnings ("...; falling back to the eager backend") */
static FILE *warnings;

static void setup(void)
{
	warnings = tmpfile();
	ck_assert_ptr_nonnull(warnings);
	struct runtime_config rc = {COMPILE_SWITCHES_INIT, {0, warnings, NULL}, {INJECT_NONE, INJECT_COMPILE_ERROR}};
	rt = runtime_new(&rc);
	ck_assert_ptr_nonnull(rt);
	compile_log_listen(rt->log, &listener);
	ind_set_kernel_cache(false);
}

static void teardown(void)
{
	util_fail_alloc_after(0);
	test_runtime_free(rt, &listener);
	rt = NULL;
	fclose(warnings);
}

/* the warnings since the last call that say an allocation failed (and
 * the frame fell back); the file is emptied */
static int oom_warnings(void)
{
	char line[1024];
	int n = 0;
	rewind(warnings);
	while (fgets(line, sizeof line, warnings))
		n += strstr(line, "warning: ") && strstr(line, "out of memory; falling back to the ") != NULL;
	ck_assert_int_eq(ftruncate(fileno(warnings), 0), 0);
	rewind(warnings);
	return n;
}

/* Runs text in a new VM with the nth counted allocation failing (0: none);
 * returns repr(r), or "error: " and the error the program raised,
 * malloc'd. *hit: whether the failure happened. cold: the kernels compile
 * again (an empty kernel cache). */
static char *run_failing(const char *text, long n, bool all, bool cold, bool *hit)
{
	frame_eval_reset(rt);
	if (cold)
		ind_set_kernel_cache(false);
	struct vm *vm = prelude_vm_new();
	vm_set_runtime(vm, rt);
	struct source *src;
	struct code *code = test_compile(text, &src);
	if (all)
		util_fail_alloc_from(n);
	else
		util_fail_alloc_after(n);
	value res = vm_run_module(vm, code);
	*hit = n > 0 && !util_fail_alloc_pending();
	util_fail_alloc_after(0);
	char *out;
	if (val_is_err(res)) {
		out = xasprintf("error: %s", vm_error_message(vm));
	} else {
		value r = vm_get_global(vm, "r");
		ck_assert_msg(!val_is_err(r), "failing at %ld: r is not set", n);
		struct strbuf sb = STRBUF_INIT;
		val_repr(r, &sb);
		out = sb_detach(&sb);
	}
	frame_eval_reset(rt); /* the caches point into this VM's code */
	vm_free(vm);
	val_decref(val_obj(VAL_CODE, code));
	source_free(src);
	return out;
}

static char *run_failing_at(const char *text, long n, bool cold, bool *hit)
{
	return run_failing(text, n, false, cold, hit);
}

/* aot_eager with a gradient: decomposition (mean, softmax), the joint
 * and the partition, backward through the compiled function; then a
 * second shape (a recompile) and a call without grad */
static const char prog_aot[] = "@compile(backend=\"aot_eager\")\n"
			       "def f(x, w):\n"
			       "    h = (x * w).tanh() + x.mean()\n"
			       "    return h.softmax(0).sum() + (h * h).sum()\n"
			       "w = (arange(4).float() / 4).requires_grad_()\n"
			       "l = f(ones(4) * 0.5, w)\n"
			       "l.backward()\n"
			       "v = (arange(3).float() + 1).requires_grad_()\n"
			       "m = f(v, v * 2)\n"
			       "m.backward()\n"
			       "r = [l, w.grad, m, v.grad, f(ones(2), ones(2))]\n";

/* inductor: a fused pointwise chain and reductions (sum, a mean that
 * broadcasts back), a graph break, a second call from the cache */
static const char prog_inductor[] = "@compile(backend=\"inductor\")\n"
				    "def g(x, y):\n"
				    "    z = ((x * 2 + y).exp() - 1).relu()\n"
				    "    s = z.sum()\n"
				    "    c = (z - z.mean(1, keepdim=True)) * y\n"
				    "    return s, c.abs().max()\n"
				    "x = (arange(12).float().reshape(3, 4) - 6) / 8\n"
				    "a = g(x, x * x)\n"
				    "b = g(x + 1, x)\n"
				    "r = [a, b]\n";

/* inductor with a gradient: aot_eager's forward and backward graphs each
 * compiled to kernels */
static const char prog_inductor_grad[] = "@compile(backend=\"inductor\")\n"
					 "def h(x, w):\n"
					 "    return ((x * w).sigmoid() * x).sum() + (w * w).mean()\n"
					 "w = (arange(5).float() / 5).requires_grad_()\n"
					 "l = h(arange(5).float() - 2, w)\n"
					 "l.backward()\n"
					 "r = [l, w.grad]\n";

struct oom_case {
	const char *name, *text;
	bool kernels; /* compiles kernels: a cold pass too */
};

static const struct oom_case cases[] = {
	{"aot_eager with backward", prog_aot, false},
	{"inductor pointwise and reductions", prog_inductor, true},
	{"inductor with backward", prog_inductor_grad, true},
};

/* what the runs of one pass met */
struct pass {
	long last;          /* the first n no run reached */
	int survived;       /* runs that met their failure */
	int in_stage;       /* ... in a stage's compile: they fell back */
	int in_trace;       /* ... before it: the frame ran in the VM */
	int raised;         /* ... running compiled code: "out of memory" raised */
};

/* every n from 1 until a run no longer reaches it (in the cold pass each
 * run compiles its kernels again: LLVM's time, about a second a pass).
 * A run whose compile met the failure must print the eager result; one
 * that met it running compiled code (an aot graph interpreted forward or
 * backward: no compile to fall back from) may raise "out of memory"
 * instead, as eager code would, and must not crash or leak. */
static void fail_each(const char *text, const char *eager, bool cold, struct pass *p)
{
	bool hit;
	memset(p, 0, sizeof *p);
	for (long n = 1;; n++) {
		stage_oom = stage_fallbacks = trace_oom = kernels_made = 0;
		char *got = run_failing_at(text, n, cold, &hit);
		bool same = strcmp(got, eager) == 0;
		ck_assert_msg(same || (stage_oom + trace_oom == 0 && strcmp(got, "error: out of memory") == 0),
			      "failing at %ld%s: %s, eager %s", n, cold ? " (cold)" : "", got, eager);
		free(got);
		/* every failure in a stage's compile runs on the fallback, and
		 * is reported as a warning at the frame's line */
		ck_assert_int_le(stage_oom, 1);
		ck_assert_int_eq(stage_fallbacks, stage_oom);
		int w = oom_warnings();
		ck_assert_msg(w == stage_fallbacks, "failing at %ld: %d warnings, %d fallbacks", n, w, stage_fallbacks);
		if (!hit) {
			p->last = n;
			/* cold: the kernels went through the code generator */
			ck_assert(!cold || kernels_made > 0);
			return;
		}
		p->survived++;
		p->in_stage += stage_oom;
		p->in_trace += trace_oom;
		p->raised += !same;
	}
}

static void print_pass(const char *name, const char *how, const struct pass *p)
{
	printf("%s%s: %d injected failures survived: %d in a stage's compile (fell back), %d after the trace "
	       "(ran in the VM), %d running compiled code (raised), %d absorbed (a trace abandoned, a kernel "
	       "left uncompacted, a log field or cache entry done without)\n",
	       name, how, p->survived, p->in_stage, p->in_trace, p->raised,
	       p->survived - p->in_stage - p->in_trace - p->raised);
}

START_TEST(test_every_allocation_fails_in_turn)
{
	const struct oom_case *c = &cases[_i];
	bool hit;
	ck_assert_msg(codegen_load() != NULL, "no code generator: %s", tj_error_peek());
	rt->sw.disabled = true;
	char *eager = run_failing_at(c->text, 0, false, &hit);
	rt->sw.disabled = false;
	kernels_made = 0;
	char *compiled = run_failing_at(c->text, 0, false, &hit);
	ck_assert_str_eq(compiled, eager);
	/* inductor compiled it to kernels (nothing fell back) */
	ck_assert(c->kernels ? kernels_made > 0 : kernels_made == 0);
	free(compiled);
	oom_warnings();
	struct pass p;
	fail_each(c->text, eager, false, &p);
	print_pass(c->name, "", &p);
	/* the compiles make many counted allocations, and many of them in a
	 * stage: a test that stops at the first has reached nothing */
	ck_assert_int_gt(p.last, 100);
	ck_assert_int_gt(p.in_stage, 20);
	if (c->kernels) {
		struct pass cold;
		fail_each(c->text, eager, true, &cold);
		print_pass(c->name, ", kernels compiled each run", &cold);
		/* the code generator's path: more allocations reached */
		ck_assert_int_gt(cold.last, p.last);
	}
	free(eager);
}
END_TEST

/* memory runs out for good at the nth allocation: every later counted
 * one fails too (the eager kernels and the VM's values do not count, so
 * programs mostly go on). The run ends with the eager result or an
 * error that says "out of memory", and, under ASan, leaks nothing: a
 * stage's compile, its fallback's, the cache entry and the trace of the
 * next call fail one after the other. */
START_TEST(test_memory_runs_out)
{
	const struct oom_case *c = &cases[_i];
	bool hit;
	rt->sw.disabled = true;
	char *eager = run_failing_at(c->text, 0, false, &hit);
	rt->sw.disabled = false;
	long n = 1;
	int raised = 0;
	for (;; n++) {
		char *got = run_failing(c->text, n, true, false, &hit);
		bool same = strcmp(got, eager) == 0;
		ck_assert_msg(same || (strncmp(got, "error: ", 7) == 0 && strstr(got, "out of memory")),
			      "out of memory from %ld: %s, eager %s", n, got, eager);
		free(got);
		raised += !same;
		if (!hit)
			break;
	}
	oom_warnings();
	printf("%s, memory out for good: %ld runs, %d raised \"out of memory\"\n", c->name, n, raised);
	ck_assert_int_gt(n, 100);
	free(eager);
}
END_TEST

/* explain's summary of a frame with a graph break (two graphs, the
 * break, guards, compile times), each counted allocation failing in
 * turn: a run ends with the whole summary, a summary without the graph,
 * break, guard or time row whose copy failed, or "out of memory" raised;
 * never a crash, and under ASan no leak */
static const char prog_explain[] = "def toy(a, b):\n"
				   "    x = a / (abs(a) + 1)\n"
				   "    if b.sum() < 0:\n"
				   "        b = b * -1\n"
				   "    return x * b\n"
				   "r = explain(toy, arange(10).float() - 4.5, -ones(10))\n";

START_TEST(test_explain_fails_in_turn)
{
	bool hit;
	char *whole = run_failing_at(prog_explain, 0, false, &hit);
	const char head[] = "tjit produced 2 graphs with 1 graph break and 7 ops";
	ck_assert_msg(strncmp(whole, head, sizeof head - 1) == 0, "%s", whole);
	int partial = 0, raised = 0;
	long n = 1;
	for (;; n++) {
		char *got = run_failing_at(prog_explain, n, false, &hit);
		if (strcmp(got, whole) != 0) {
			bool summary = strncmp(got, "tjit produced ", 14) == 0;
			ck_assert_msg(summary || strcmp(got, "error: out of memory") == 0, "failing at %ld: %s", n, got);
			partial += summary;
			raised += !summary;
		}
		free(got);
		if (!hit)
			break;
	}
	oom_warnings();
	printf("explain: %ld runs, %d summaries without a part, %d raised \"out of memory\"\n", n, partial, raised);
	/* explain's own copies were reached: some summary lost a part */
	ck_assert_int_gt(partial, 0);
	free(whole);
}
END_TEST

START_TEST(test_fail_alloc_from)
{
	util_fail_alloc_from(2);
	void *a = util_malloc(8);
	ck_assert_ptr_nonnull(a);
	ck_assert(util_fail_alloc_pending());
	ck_assert_ptr_null(util_malloc(8));
	ck_assert(!util_fail_alloc_pending());
	/* for good: the next ones fail too */
	ck_assert_ptr_null(util_strdup("x"));
	ck_assert_ptr_null(util_realloc(a, 16));
	ck_assert(!util_fail_alloc_pending());
	/* until the next setting */
	util_fail_alloc_after(0);
	char *s = util_strdup("x");
	ck_assert_str_eq(s, "x");
	free(s);
	free(a);
}
END_TEST

/* the countdown is the thread's that set it: another thread's counted
 * allocations neither fail nor count */
static void *alloc_on_thread(void *arg)
{
	void *p = util_malloc(8);
	*(bool *)arg = p != NULL;
	free(p);
	return NULL;
}

START_TEST(test_fail_alloc_thread)
{
	util_fail_alloc_after(1);
	pthread_t t;
	bool got = false;
	ck_assert_int_eq(pthread_create(&t, NULL, alloc_on_thread, &got), 0);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert(got);
	ck_assert(util_fail_alloc_pending());
	ck_assert_ptr_null(util_malloc(8));
	util_fail_alloc_after(0);
}
END_TEST

static Suite *stages_oom_suite(void)
{
	Suite *s = suite_create("stages_oom");
	TCase *tc = tcase_create("oom");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_fail_alloc_from);
	tcase_add_test(tc, test_fail_alloc_thread);
	tcase_add_test(tc, test_explain_fails_in_turn);
	tcase_add_loop_test(tc, test_every_allocation_fails_in_turn, 0, (int)(sizeof cases / sizeof cases[0]));
	tcase_add_loop_test(tc, test_memory_runs_out, 0, (int)(sizeof cases / sizeof cases[0]));
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(stages_oom_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
