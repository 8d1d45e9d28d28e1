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
#include "frame_eval.h"
#include "runtime.h"

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

#endif
