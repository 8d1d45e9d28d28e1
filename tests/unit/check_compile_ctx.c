/* check_compile_ctx.c - the compile context of the backends
 * (compile_ctx.h): TJIT_INJECT_BUG parsing, named phases with nesting,
 * the graphs and kernels handed back, the logger; and the backend table
 * (backends.c): names, order, lookup. */
#define _GNU_SOURCE
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends.h"
#include "compile_ctx.h"
#include "compile_log.h"
#include "graph.h"

static void parse_fails(const char *spec, const char *why)
{
	struct inject_bug b;
	char *err = NULL;
	ck_assert_int_eq(compile_ctx_parse_bug(spec, &b, &err), -1);
	ck_assert_str_eq(err, why);
	free(err);
}

START_TEST(test_parse_bug)
{
	struct inject_bug b;
	char *err = NULL;
	ck_assert_int_eq(compile_ctx_parse_bug(NULL, &b, &err), 0);
	ck_assert_int_eq(b.stage, INJECT_NONE);
	ck_assert_int_eq(compile_ctx_parse_bug("", &b, &err), 0);
	ck_assert_int_eq(b.stage, INJECT_NONE);
	ck_assert_int_eq(compile_ctx_parse_bug("aot:compile_error", &b, &err), 0);
	ck_assert_int_eq(b.stage, INJECT_AOT);
	ck_assert_int_eq(b.kind, INJECT_COMPILE_ERROR);
	ck_assert_int_eq(compile_ctx_parse_bug("inductor:runtime_error", &b, &err), 0);
	ck_assert_int_eq(b.stage, INJECT_INDUCTOR);
	ck_assert_int_eq(b.kind, INJECT_RUNTIME_ERROR);
	ck_assert_int_eq(compile_ctx_parse_bug("inductor:accuracy", &b, &err), 0);
	ck_assert_int_eq(b.kind, INJECT_ACCURACY);
	ck_assert_ptr_null(err);
	parse_fails("aot", "expected <stage>:<kind>, got 'aot'");
	parse_fails("eager:accuracy", "unknown stage 'eager' in 'eager:accuracy' (valid: aot, inductor)");
	parse_fails(":accuracy", "unknown stage '' in ':accuracy' (valid: aot, inductor)");
	ck_assert_int_eq(compile_ctx_parse_bug("aot:crash", &b, &err), 0);
	ck_assert_int_eq(b.kind, INJECT_CRASH);
	ck_assert_int_eq(compile_ctx_parse_bug("inductor:crash", &b, &err), 0);
	ck_assert_int_eq(b.kind, INJECT_CRASH);
	ck_assert_int_eq(compile_ctx_parse_bug("aot:hang", &b, &err), 0);
	ck_assert_int_eq(b.kind, INJECT_HANG);
	ck_assert_int_eq(compile_ctx_parse_bug("aot:flaky", &b, &err), 0);
	ck_assert_int_eq(b.kind, INJECT_FLAKY);
	ck_assert_ptr_null(err);
	parse_fails("aot:segv",
		    "unknown kind 'segv' in 'aot:segv' (valid: compile_error, runtime_error, accuracy, crash, hang, flaky)");
	parse_fails("aot:accuracy:x", "unknown kind 'accuracy:x' in 'aot:accuracy:x' (valid: compile_error, "
				      "runtime_error, accuracy, crash, hang, flaky)");
	parse_fails("inductor:hang", "kind 'hang' is stage aot's only, in 'inductor:hang'");
	parse_fails("inductor:flaky", "kind 'flaky' is stage aot's only, in 'inductor:flaky'");
}
END_TEST

static void sleep_ms(long ms)
{
	struct timespec ts = {0, ms * 1000000L};
	nanosleep(&ts, NULL);
}

START_TEST(test_phases)
{
	struct compile_config cfg = {backend_default(), true, "True", false, NULL, NULL, 0};
	struct compile_ctx cc;
	compile_ctx_init(&cc, &cfg, NULL, NULL, "2/1");
	ck_assert(cc.cfg->fullgraph);
	ck_assert_int_eq(cc.bug->stage, INJECT_NONE); /* no bug given: none */
	compile_ctx_phase_add(&cc, "trace", 1.5);
	int backend = compile_ctx_phase_begin(&cc, "backend");
	int lower = compile_ctx_phase_begin(&cc, "lower");
	sleep_ms(2);
	compile_ctx_phase_end(&cc, lower);
	compile_ctx_phase_add(&cc, "jit", 0.25); /* inside backend, after lower */
	compile_ctx_phase_end(&cc, backend);
	compile_ctx_phase_end(&cc, -1);          /* a phase that could not begin */
	int again = compile_ctx_phase_begin(&cc, "trace");
	compile_ctx_phase_end(&cc, again);

	ck_assert_int_eq(cc.nphases, 5);
	ck_assert_str_eq(cc.phases[0].name, "trace");
	ck_assert_int_eq(cc.phases[0].parent, -1);
	ck_assert_str_eq(cc.phases[1].name, "backend");
	ck_assert_int_eq(cc.phases[1].parent, -1);
	ck_assert_str_eq(cc.phases[2].name, "lower");
	ck_assert_int_eq(cc.phases[2].parent, 1);
	ck_assert_str_eq(cc.phases[3].name, "jit");
	ck_assert_int_eq(cc.phases[3].parent, 1);
	ck_assert_int_eq(cc.phases[4].parent, -1);
	ck_assert_int_eq(cc.open, -1);
	ck_assert(cc.phases[2].ms >= 2);
	ck_assert(cc.phases[1].ms >= cc.phases[2].ms);
	/* top-level phases only, summed by name */
	ck_assert(compile_ctx_phase_ms(&cc, "trace") >= 1.5);
	ck_assert(compile_ctx_phase_ms(&cc, "backend") == cc.phases[1].ms);
	ck_assert(compile_ctx_phase_ms(&cc, "lower") == 0);
	ck_assert(compile_ctx_phase_ms(&cc, "nothing") == 0);
	ck_assert(compile_ctx_elapsed_ms(&cc) >= cc.phases[1].ms);
	compile_ctx_release(&cc);
	ck_assert_int_eq(cc.nphases, 0);
}
END_TEST

START_TEST(test_graphs_and_kernels)
{
	struct inject_bug bug = {INJECT_INDUCTOR, INJECT_ACCURACY};
	struct compile_ctx cc;
	compile_ctx_init(&cc, NULL, &bug, NULL, "0/0");
	ck_assert_int_eq(cc.bug->kind, INJECT_ACCURACY);
	struct graph *g = graph_new("f", "0/0", NULL, 1, STAGE_INDUCTOR);
	ck_assert_int_eq(compile_ctx_add_graph(&cc, g), 0);
	char name[] = "kernel_0", ir[] = "define void @kernel_0() {}";
	struct kernel_record k = {name, "pointwise", NULL, "relu_1, add_2", NULL, ir, false, 1.25, g};
	ck_assert_int_eq(compile_ctx_add_kernel(&cc, &k), 0);
	name[0] = 'X'; /* copied */
	ck_assert_int_eq(cc.ngraphs, 1);
	ck_assert_ptr_eq(cc.graphs[0], g);
	ck_assert_int_eq(cc.nkernels, 1);
	ck_assert_str_eq(cc.kernels[0].name, "kernel_0");
	ck_assert_str_eq(cc.kernels[0].fused_nodes, "relu_1, add_2");
	ck_assert_str_eq(cc.kernels[0].source, ir);
	ck_assert_ptr_null(cc.kernels[0].hash);
	ck_assert_ptr_eq(cc.kernels[0].graph, g);
	ck_assert(cc.kernels[0].codegen_ms == 1.25);
	/* a partition: which outputs of a handed-back graph are saved */
	ck_assert_ptr_null(cc.saved.fwd);
	compile_ctx_set_saved(&cc, g, 2, 1);
	ck_assert_ptr_eq(cc.saved.fwd, g);
	ck_assert_int_eq(cc.saved.nsaved, 2);
	ck_assert_int_eq(cc.saved.nrecomputed, 1);
	ck_assert(!cc.unsupported);
	compile_ctx_release(&cc); /* frees the graph and the kernel's strings */
	ck_assert_int_eq(cc.ngraphs, 0);
	ck_assert_int_eq(cc.nkernels, 0);
	ck_assert_ptr_null(cc.saved.fwd);
}
END_TEST

START_TEST(test_logger)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	struct compile_log_config lc = {LOG_OUTPUT_CODE, out, NULL};
	struct compile_log *log = compile_log_new(&lc);
	struct compile_ctx cc;
	compile_ctx_init(&cc, NULL, NULL, log, "3/1");
	ck_assert(compile_ctx_logs(&cc, LOG_OUTPUT_CODE));
	ck_assert(!compile_ctx_logs(&cc, LOG_AOT_GRAPHS));
	compile_ctx_dump(&cc, "kernel_0:\n  ret void");
	fflush(out);
	ck_assert_str_eq(text, "[3/1] kernel_0:\n[3/1]   ret void\n");
	/* a warning goes to the log's stream too, located when it can be */
	compile_log_warning_at(log, NULL, (struct src_loc){0}, "falling back");
	fflush(out);
	ck_assert_str_eq(text, "[3/1] kernel_0:\n[3/1]   ret void\nwarning: falling back\n");
	compile_ctx_release(&cc);
	/* no log: nothing is on, a dump goes nowhere */
	compile_ctx_init(&cc, NULL, NULL, NULL, "3/1");
	ck_assert(!compile_ctx_logs(&cc, LOG_OUTPUT_CODE));
	compile_ctx_dump(&cc, "lost");
	compile_ctx_release(&cc);
	compile_log_free(log);
	fclose(out);
	free(text);
}
END_TEST

START_TEST(test_backend_table)
{
	struct strbuf sb = STRBUF_INIT;
	backend_names(&sb);
	ck_assert_str_eq(sb.buf, "eager, aot_eager, inductor, relu_compile_error_TESTING_ONLY, "
				 "relu_runtime_error_TESTING_ONLY, relu_accuracy_error_TESTING_ONLY");
	sb_release(&sb);
	/* compile() with no backend uses inductor, as torch.compile does */
	ck_assert_ptr_eq(backend_find("inductor"), backend_default());
	/* inductor falls back to aot_eager, aot_eager to eager, on a graph it
	 * cannot compile; the testing backends fail, as compilers that crash */
	ck_assert_ptr_eq(backend_find("inductor")->fallback, backend_find("aot_eager"));
	ck_assert_ptr_eq(backend_find("aot_eager")->fallback, backend_find("eager"));
	ck_assert_ptr_null(backend_find("eager")->fallback);
	ck_assert_ptr_null(backend_find("relu_compile_error_TESTING_ONLY")->fallback);
	ck_assert_ptr_eq(backend_find("relu_accuracy_error_TESTING_ONLY"), &backend_testing_relu_accuracy_error);
	ck_assert_ptr_null(backend_find("Eager"));
	char *msg = tj_error_take();
	ck_assert_ptr_nonnull(strstr(msg, "unknown backend 'Eager' (valid: eager, "));
	free(msg);
}
END_TEST

static Suite *compile_ctx_suite(void)
{
	Suite *s = suite_create("compile_ctx");
	TCase *tc = tcase_create("ctx");
	tcase_add_test(tc, test_parse_bug);
	tcase_add_test(tc, test_phases);
	tcase_add_test(tc, test_graphs_and_kernels);
	tcase_add_test(tc, test_logger);
	tcase_add_test(tc, test_backend_table);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(compile_ctx_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
