/* program_test_util.h - running tj programs under a compile runtime from
 * Check tests (check_tracer's kin: check_ops_meta, check_decompose,
 * check_trace_oom): a quiet runtime with an optional listener, and a
 * program's text compiled to bytecode or the test fails. */
#ifndef TJ_PROGRAM_TEST_UTIL_H
#define TJ_PROGRAM_TEST_UTIL_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compile_log.h"
#include "compiler.h"
#include "error.h"
#include "frame_eval.h"
#include "graph.h"
#include "prelude.h"
#include "runtime.h"
#include "vm.h"

/* A runtime that logs nowhere; l (may be NULL) hears every compile. */
static inline struct runtime *test_runtime_new(struct compile_listener *l)
{
	struct runtime_config rc = {COMPILE_SWITCHES_INIT, {0, stderr, NULL}, {INJECT_NONE, INJECT_COMPILE_ERROR}};
	struct runtime *rt = runtime_new(&rc);
	ck_assert_ptr_nonnull(rt);
	if (l)
		compile_log_listen(rt->log, l);
	return rt;
}

static inline void test_runtime_free(struct runtime *rt, struct compile_listener *l)
{
	frame_eval_free(rt);
	if (l)
		compile_log_unlisten(rt->log, l);
	runtime_free(rt);
}

/* text as prog.tj, compiled; *srcp receives its source (free it after the
 * code, and after any graph whose user stacks point into it) */
static inline struct code *test_compile(const char *text, struct source **srcp)
{
	struct source *src = source_from_string("prog.tj", text, strlen(text));
	struct src_loc loc;
	char *msg = NULL;
	struct code *code = compile_source(src, &loc, &msg);
	ck_assert_msg(code != NULL, "compile error at %d:%d: %s", loc.line, loc.col, msg);
	free(msg);
	*srcp = src;
	return code;
}

#ifdef TEST_CAPTURE_GRAPHS
/* ---- the graphs a program compiles, copied as they come (check_decompose,
 * check_autodiff): run_capturing(text) adds to graphs[], drop_graphs()
 * frees them with the sources their user stacks point into ---- */
#define TEST_MAX_GRAPHS 16
#define TEST_MAX_SOURCES 8
static struct graph *graphs[TEST_MAX_GRAPHS];
static int ngraphs;
static struct source *graph_sources[TEST_MAX_SOURCES];
static int ngraph_sources;

static inline void keep_graph(struct compile_listener *l, const struct compile_record *r)
{
	(void)l;
	if (r->graph && ngraphs < TEST_MAX_GRAPHS)
		ck_assert_ptr_nonnull(graphs[ngraphs++] = graph_copy(r->graph));
}

static inline void run_capturing(const char *text)
{
	struct compile_listener listener = {keep_graph, NULL};
	struct runtime *rt = test_runtime_new(&listener);
	struct vm *vm = prelude_vm_new();
	vm_set_runtime(vm, rt);
	struct source *src;
	struct code *code = test_compile(text, &src);
	value r = vm_run_module(vm, code);
	ck_assert_msg(!val_is_err(r), "%s", tj_error_peek());
	vm_free(vm);
	val_decref(val_obj(VAL_CODE, code));
	test_runtime_free(rt, &listener);
	/* the graphs' user stacks point into src: it goes with them */
	ck_assert_int_lt(ngraph_sources, TEST_MAX_SOURCES);
	graph_sources[ngraph_sources++] = src;
}

static inline void drop_graphs(void)
{
	while (ngraphs)
		graph_free(graphs[--ngraphs]);
	while (ngraph_sources)
		source_free(graph_sources[--ngraph_sources]);
}
#endif

#endif
