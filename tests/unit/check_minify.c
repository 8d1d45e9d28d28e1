/* check_minify.c - tjit-minify's library (tools/lib/minify*.c): the error
 * line of a run's stderr, messages normalized and split by stage, outputs
 * compared within the tolerance, runs classified, and the child runner on
 * real programs (exit, error, output, TJIT_COMPILE_ONLY, time limit,
 * memory cap, the candidates' log, SIGTERM while it runs), the graphs
 * logged for tjit-dot. */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "db.h"
#include "minify.h"
#include "query.h"
#include "tensor_io.h"

#define DB_TEST_NAME "check_minify"
#include "db_test_util.h"

/* ---- error lines and messages ---- */

START_TEST(test_error_line)
{
	char *loc, *msg;
	const char *err = "Traceback (most recent call last):\n"
			  "  File \"p.tj\", line 7, in <module>\n"
			  "p.tj:2:9: error: aot_eager: AotCompileError: the graph uses relu\n"
			  "    y = x * 2\n"
			  "        ^\n";
	ck_assert(minify_error_line(err, &loc, &msg));
	ck_assert_str_eq(loc, "p.tj:2:9");
	ck_assert_str_eq(msg, "aot_eager: AotCompileError: the graph uses relu");
	free(loc);
	free(msg);
	/* the last of two; a path with a colon-less prefix; no newline at the end */
	ck_assert(minify_error_line("a.tj:1:1: error: first\nsub/b.tj:10:22: error: second", &loc, &msg));
	ck_assert_str_eq(loc, "sub/b.tj:10:22");
	ck_assert_str_eq(msg, "second");
	free(loc);
	free(msg);
	/* not error lines: a warning, no column, no location */
	ck_assert(!minify_error_line("p.tj:3:1: warning: x\np.tj:3: error: y\n: error: z\n", &loc, &msg));
	ck_assert_ptr_null(loc);
	ck_assert_ptr_null(msg);
	ck_assert(!minify_error_line("", &loc, &msg));
}
END_TEST

START_TEST(test_normalize_and_stage)
{
	char *n = minify_normalize("cannot broadcast shapes (10,) and (3, 128)");
	ck_assert_str_eq(n, "cannot broadcast shapes (N,) and (N, N)");
	free(n);
	const char *rest;
	char *st = minify_message_stage("aot_eager: AotCompileError: x", &rest);
	ck_assert_str_eq(st, "aot_eager");
	ck_assert_str_eq(rest, "AotCompileError: x");
	free(st);
	st = minify_message_stage("relu_compile_error_TESTING_ONLY: ReluCompileError: y", &rest);
	ck_assert_str_eq(st, "relu_compile_error_TESTING_ONLY");
	ck_assert_str_eq(rest, "ReluCompileError: y");
	free(st);
	/* a prefix that names no backend stays in the message */
	ck_assert_ptr_null(minify_message_stage("name 'x' is not defined: z", &rest));
	ck_assert_str_eq(rest, "name 'x' is not defined: z");
	ck_assert_ptr_null(minify_message_stage("no colon here", &rest));
}
END_TEST

/* ---- outputs ---- */

static bool agree(const char *ref, const char *got, double rel)
{
	char *detail = NULL;
	bool ok = minify_outputs_agree(ref, got, rel, &detail);
	ck_assert(ok == (detail == NULL));
	free(detail);
	return ok;
}

START_TEST(test_outputs_agree)
{
	double rel = MINIFY_DEFAULT_REL;
	ck_assert(agree("", "", rel));
	ck_assert(agree("tensor([1.0000, 2.0000])\n", "tensor([1.0000, 2.0000])\n", rel));
	/* one unit of the last printed digit: two roundings */
	ck_assert(agree("tensor([1.0000, 2.0000])\n", "tensor([1.0001, 1.9999])\n", rel));
	ck_assert(!agree("tensor([1.0000, 2.0000])\n", "tensor([1.0003, 2.0000])\n", rel));
	/* large values: float32 rounding relative to the reference */
	ck_assert(agree("tensor(100000.0000)\n", "tensor(100000.3000)\n", rel));
	ck_assert(!agree("tensor(100000.0000)\n", "tensor(100002.0000)\n", rel));
	ck_assert(agree("tensor(100000.0000)\n", "tensor(100002.0000)\n", 1e-4));
	/* signs, nan, inf */
	ck_assert(!agree("tensor([-1.0000])\n", "tensor([1.0000])\n", rel));
	ck_assert(agree("tensor([nan, inf, -inf])\n", "tensor([nan, inf, -inf])\n", rel));
	ck_assert(!agree("tensor([nan])\n", "tensor([1.0000])\n", rel));
	ck_assert(!agree("tensor([inf])\n", "tensor([-inf])\n", rel));
	/* words, shapes, lines */
	ck_assert(!agree("(2, 3)\n", "(2, 4)\n", rel));
	ck_assert(!agree("True\n", "False\n", rel));
	ck_assert(!agree("a\nb\n", "a\n", rel));
	ck_assert(!agree("a\n", "a\nb\n", rel));
	ck_assert(agree("x1 2.0 item_3\n", "x1 2.0 item_3\n", rel));
	char *detail = NULL;
	ck_assert(!minify_outputs_agree("a\ntensor([1.0000])\n", "a\ntensor([2.0000])\n", rel, &detail));
	ck_assert_str_eq(detail, "output line 2: got tensor([2.0000]), expected tensor([1.0000])");
	free(detail);
	ck_assert(!minify_outputs_agree("a\nb\n", "a\n", rel, &detail));
	ck_assert_str_eq(detail, "output line 2: got (nothing), expected b");
	free(detail);
}
END_TEST

/* ---- classification ---- */

static void classify(struct minify_result *r, const char *ref, const char *const *cerrs, int n, struct minify_sig *s)
{
	minify_classify(r, ref, -1, cerrs, n, s);
}

START_TEST(test_classify)
{
	struct minify_sig s;
	struct minify_result r = {.status = 0, .out = (char *)"tensor(1.0000)\n", .err = (char *)""};
	classify(&r, "tensor(1.0000)\n", NULL, 0, &s);
	ck_assert_int_eq(s.cls, MZ_PASS);
	minify_sig_release(&s);
	classify(&r, "tensor(2.0000)\n", NULL, 0, &s);
	ck_assert_int_eq(s.cls, MZ_ACCURACY);
	ck_assert_str_eq(s.detail, "output line 1: got tensor(1.0000), expected tensor(2.0000)");
	char *t = minify_sig_text(&s);
	ck_assert_str_eq(t, "accuracy");
	free(t);
	minify_sig_release(&s);

	const char *err = "p.tj:4:5: error: inductor: InductorCompileError: a kernel computes relu (12 ops)\n";
	const char *cerrs[] = {"other", "inductor: InductorCompileError: a kernel computes relu (12 ops)"};
	r = (struct minify_result){.status = 1, .out = (char *)"", .err = (char *)err};
	classify(&r, "", cerrs, 2, &s);
	ck_assert_int_eq(s.cls, MZ_COMPILE_ERROR);
	ck_assert_str_eq(s.stage, "inductor");
	ck_assert_str_eq(s.message, "InductorCompileError: a kernel computes relu (N ops)");
	ck_assert_str_eq(s.location, "p.tj:4:5");
	t = minify_sig_text(&s);
	ck_assert_str_eq(t, "compile_error inductor: InductorCompileError: a kernel computes relu (N ops)");
	free(t);
	struct minify_sig s2;
	classify(&r, "", cerrs, 1, &s2);
	ck_assert_int_eq(s2.cls, MZ_RUNTIME_ERROR);
	ck_assert(!minify_sig_equal(&s, &s2));
	ck_assert(minify_sig_matches(&s, "relu"));
	ck_assert(minify_sig_matches(&s, NULL));
	ck_assert(!minify_sig_matches(&s, "sigmoid"));
	minify_sig_release(&s2);
	/* the same failure at another line, with other sizes */
	r.err = (char *)"q.tj:9:1: error: inductor: InductorCompileError: a kernel computes relu (3 ops)\n";
	classify(&r, "", cerrs + 1, 1, &s2);
	ck_assert_int_eq(s2.cls, MZ_RUNTIME_ERROR);
	s2.cls = MZ_COMPILE_ERROR;
	ck_assert(minify_sig_equal(&s, &s2));
	minify_sig_release(&s2);
	minify_sig_release(&s);

	r = (struct minify_result){.signal = SIGSEGV, .out = (char *)"", .err = (char *)""};
	classify(&r, "", NULL, 0, &s);
	ck_assert_int_eq(s.cls, MZ_CRASH);
	ck_assert_str_eq(s.message, "SIGSEGV");
	ck_assert(minify_sig_matches(&s, "SEGV"));
	minify_sig_release(&s);
	/* a sanitizer's report is the crash it caught */
	r = (struct minify_result){.status = 1, .out = (char *)"", .err = (char *)"AddressSanitizer:DEADLYSIGNAL\n"
		"==21068==ERROR: AddressSanitizer: SEGV on unknown address 0x64400001f6b0 (pc 0x7f47)\n"
		"==21068==ABORTING\n"};
	classify(&r, "", NULL, 0, &s);
	ck_assert_int_eq(s.cls, MZ_CRASH);
	ck_assert_str_eq(s.message, "SIGSEGV");
	minify_sig_release(&s);
	r.err = (char *)"==7==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x6\n";
	classify(&r, "", NULL, 0, &s);
	ck_assert_int_eq(s.cls, MZ_CRASH);
	ck_assert_str_eq(s.message, "AddressSanitizer: heap-buffer-overflow");
	minify_sig_release(&s);
	/* a graph program that found a wrong output and exited 1 */
	r = (struct minify_result){.status = 1, .out = (char *)"(tensor(1.0000),)\nwrong output 0 differs\n",
				   .err = (char *)""};
	classify(&r, NULL, NULL, 0, &s);
	ck_assert_int_eq(s.cls, MZ_ACCURACY);
	ck_assert_str_eq(s.detail, "wrong output 0 differs");
	minify_sig_release(&s);
	r.err = (char *)"p.tj:1:1: error: boom\n";
	classify(&r, NULL, NULL, 0, &s);
	ck_assert_int_eq(s.cls, MZ_RUNTIME_ERROR);
	minify_sig_release(&s);
	r = (struct minify_result){.timed_out = true, .signal = SIGKILL, .out = (char *)"", .err = (char *)""};
	classify(&r, "", NULL, 0, &s);
	ck_assert_int_eq(s.cls, MZ_HANG);
	ck_assert(minify_sig_matches(&s, "hang"));
	minify_sig_release(&s);
	r = (struct minify_result){.status = 2, .out = (char *)"", .err = (char *)"tjit-minify run: bad\n"};
	classify(&r, "", NULL, 0, &s);
	ck_assert_int_eq(s.cls, MZ_USAGE);
	ck_assert_str_eq(s.message, "tjit-minify run: bad");
	minify_sig_release(&s);
}
END_TEST

/* ---- the graph as a program ---- */

static struct minify_node node(enum minify_node_kind kind, const char *name, const char *op, const char *args,
			       const char *dtype, const char *shape)
{
	return (struct minify_node){kind, (char *)name, (char *)op, (char *)args, (char *)dtype, (char *)shape, NULL,
				    false, NULL, 0};
}

START_TEST(test_graph_program)
{
	struct minify_node nodes[] = {
		node(MZN_INPUT, "x", NULL, "L['x']", "float32", "[2, 3]"),
		node(MZN_INPUT, "w", NULL, "L['w']", "float32", "[3, s0]"),
		node(MZN_OP, "matmul", "matmul", "x, w", "float32", "[2, s0]"),
		node(MZN_OP, "add", "add", "matmul, 1", "float32", "[2, s0]"),
		node(MZN_OP, "sum_1", "sum", "add, 1, True", "float32", "[2, 1]"),
		node(MZN_OP, "T", "T", "sum_1", "float32", "[1, 2]"),
		node(MZN_OP, "to", "to", "x, float64", "float64", "[2, 3]"),
		node(MZN_OP, "abs_1", "abs", "x", "float32", "[2, 3]"),
		node(MZN_OP, "getitem", "getitem", "x, (0, slice(1, None, None))", "float32", "[2]"),
		node(MZN_OP, "randn", "randn", "2, 3", "float32", "[2, 3]"),
		node(MZN_OP, "gt", "gt", "abs_1, 0", "bool", "[2, 3]"),
		node(MZN_OP, "expand", "expand", "T, (3, 1, 2)", "float32", "[3, 1, 2]"),
		node(MZN_OP, "reshape", "reshape", "matmul, (s0, -1)", "float32", "[s0, 2]"),
	};
	int n = sizeof nodes / sizeof *nodes;
	struct minify_graph g = {n, nodes, NULL, 0, (char *)"0/0", NULL, 0};
	/* what the loader does: the reads and what can be written */
	int reads[][2] = {{0}, {0}, {0, 1}, {2}, {3}, {4}, {0}, {0}, {0}, {-1}, {7}, {5}, {2}};
	int nreads[] = {0, 0, 2, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1};
	bool emit[] = {false, false, true, true, true, true, true, true, false, false, true, true, true};
	for (int i = 0; i < n; i++) {
		nodes[i].reads = reads[i];
		nodes[i].nreads = nreads[i];
		nodes[i].emit = emit[i];
	}
	bool keep[13];
	for (int i = 0; i < n; i++)
		keep[i] = true;
	ck_assert_int_eq(minify_graph_kept(&g, keep), 9);
	char *p = minify_graph_program(&g, keep, "inductor", 3, -1, NULL, "# head\n");
	ck_assert_str_eq(p, "# head\n"
			    "def repro(v_x, v_w):\n"
			    "    v_matmul = matmul(v_x, v_w)\n"
			    "    v_add = v_matmul + 1\n"
			    "    v_sum_1 = sum(v_add, 1, True)\n"
			    "    v_T = v_sum_1.T\n"
			    "    v_to = v_x.to(float64)\n"
			    "    v_abs_1 = v_x.abs()\n"
			    "    v_gt = v_abs_1 > 0\n"
			    "    v_expand = v_T.expand((3, 1, 2))\n"
			    "    v_reshape = reshape(v_matmul, (3, -1))\n"
			    "    return (v_to, v_gt, v_expand, v_reshape)\n"
			    "\n"
			    "manual_seed(3)\n"
			    "v_x = randn(2, 3)\n"
			    "v_w = randn(3, 3)\n"
			    "print(compile(repro, backend=\"inductor\")(v_x, v_w))\n");
	free(p);
	/* the dropped nodes a kept one reads become parameters of their type */
	for (int i = 0; i < n; i++)
		keep[i] = i == 10;
	p = minify_graph_program(&g, keep, "aot_eager", 0, -1, NULL, "");
	ck_assert_str_eq(p, "def repro(v_abs_1):\n"
			    "    v_gt = v_abs_1 > 0\n"
			    "    return (v_gt,)\n"
			    "\n"
			    "manual_seed(0)\n"
			    "v_abs_1 = randn(2, 3)\n"
			    "print(compile(repro, backend=\"aot_eager\")(v_abs_1))\n");
	free(p);
	/* an accuracy repro checks itself against float64, float32 inputs converted */
	keep[10] = false;
	keep[6] = true;
	p = minify_graph_program(&g, keep, "inductor", 0, 0.001, NULL, "");
	ck_assert_str_eq(p, "def repro(v_x):\n"
			    "    v_to = v_x.to(float64)\n"
			    "    return (v_to,)\n"
			    "\n"
			    "manual_seed(0)\n"
			    "v_x = randn(2, 3)\n"
			    "got = compile(repro, backend=\"inductor\")(v_x)\n"
			    "want = repro(v_x.to(float64))\n"
			    "print(got)\n"
			    "for i in range(len(got)):\n"
			    "    g = got[i].to(float64)\n"
			    "    w = want[i].to(float64)\n"
			    "    if ((g - w).abs() > 0.0001 + 0.001 * w.abs()).sum().item() > 0:\n"
			    "        print(\"wrong output\", i, \"differs from the float64 eager run\")\n"
			    "        exit(1)\n");
	free(p);
	/* the inputs shrunk: sizes halved (at least 1), ones */
	for (int i = 0; i < n; i++)
		keep[i] = i == 2;
	ck_assert_int_eq(minify_graph_max_size(&g, keep), 3);
	struct minify_inputs in = {1, MZ_FILL_ONES, NULL, NULL};
	p = minify_graph_program(&g, keep, "inductor", 0, -1, &in, "");
	ck_assert_ptr_nonnull(strstr(p, "\nv_x = ones(1, 1)\nv_w = ones(1, 1)\n"));
	free(p);
	nodes[0].shape = (char *)"[8, 6]";
	keep[0] = true;
	ck_assert_int_eq(minify_graph_max_size(&g, keep), 8);
	in = (struct minify_inputs){2, MZ_FILL_ZEROS, NULL, NULL};
	p = minify_graph_program(&g, keep, "inductor", 0, -1, &in, "");
	ck_assert_ptr_nonnull(strstr(p, "\nv_x = zeros(2, 1)\nv_w = zeros(1, 1)\n"));
	free(p);
	in = (struct minify_inputs){-1, MZ_FILL_RANDN, NULL, NULL};
	p = minify_graph_program(&g, keep, "inductor", 0, -1, &in, "");
	ck_assert_ptr_nonnull(strstr(p, "\nv_x = randn(1, 1)\nv_w = randn(1, 1)\n"));
	free(p);
	nodes[0].shape = (char *)"[2, 3]";
	/* nothing that can be written: no program */
	for (int i = 0; i < n; i++)
		keep[i] = i == 8 || i == 9;
	ck_assert_int_eq(minify_graph_kept(&g, keep), 0);
	ck_assert_ptr_null(minify_graph_program(&g, keep, "inductor", 0, -1, NULL, ""));
}
END_TEST

/* ---- the child runner on real programs ---- */

static char *write_prog(const char *name, const char *text)
{
	char *p = NULL;
	ck_assert_int_ge(asprintf(&p, "%s/%s", tmpdir, name), 0);
	FILE *f = fopen(p, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
	return p;
}

START_TEST(test_run_child)
{
	char *ok = write_prog("ok.tj", "def f(x):\n    return x * 2\n\nprint(compile(f)(ones(2)))\n");
	struct minify_limits lim = {30, 0};
	struct minify_result r;
	char *err = NULL;
	/* the eager reference, then a stage, logged into the candidates' db */
	ck_assert_int_eq(minify_run(&(struct minify_cand){ok, NULL, dbpath, NULL, NULL, NULL}, &lim, &r, &err), 0);
	ck_assert_int_eq(r.status, 0);
	ck_assert_int_eq(r.signal, 0);
	ck_assert(!r.timed_out);
	ck_assert_str_eq(r.out, "tensor([2.0000, 2.0000])\n");
	ck_assert_str_eq(r.err, "");
	ck_assert_int_gt(r.pid, 0);
	minify_result_release(&r);
	ck_assert_int_eq(minify_run(&(struct minify_cand){ok, "aot_eager", dbpath, NULL, NULL, NULL}, &lim, &r, &err), 0);
	ck_assert_str_eq(r.out, "tensor([2.0000, 2.0000])\n");
	/* its captured graph, read back from the log */
	struct minify_graph g;
	ck_assert_msg(minify_graph_load(dbpath, r.pid, "0/0", &g, &err) == 0, "%s", err);
	ck_assert_int_eq(g.n, 2);
	ck_assert_int_eq(g.nodes[0].kind, MZN_INPUT);
	ck_assert_str_eq(g.nodes[0].name, "x");
	ck_assert_int_eq(g.nodes[1].kind, MZN_OP);
	ck_assert_str_eq(g.nodes[1].op, "mul");
	ck_assert_str_eq(g.nodes[1].args, "x, 2");
	ck_assert(g.nodes[1].emit);
	ck_assert_int_eq(g.nodes[1].nreads, 1);
	ck_assert_int_eq(g.nodes[1].reads[0], 0);
	ck_assert_ptr_nonnull(strstr(g.nodes[1].where, "ok.tj:2"));
	ck_assert_int_eq(g.noutputs, 1);
	ck_assert_int_eq(g.outputs[0], 1);
	minify_graph_release(&g);
	ck_assert_int_eq(minify_graph_load(dbpath, r.pid, "0/9", &g, &err), -1);
	ck_assert_ptr_nonnull(err);
	free(err);
	err = NULL;
	minify_result_release(&r);
	ck_assert_int_eq(access(dbpath, F_OK), 0);

	char *bad = write_prog("bad.tj", "print(1)\nx = ones(2) + ones(3)\n");
	ck_assert_int_eq(minify_run(&(struct minify_cand){bad, NULL, NULL, NULL, NULL, NULL}, &lim, &r, &err), 0);
	ck_assert_int_eq(r.status, 1);
	ck_assert_str_eq(r.out, "1\n");
	char *loc, *msg;
	ck_assert(minify_error_line(r.err, &loc, &msg));
	ck_assert_str_eq(msg, "cannot broadcast shapes (2,) and (3,)");
	free(loc);
	free(msg);
	minify_result_release(&r);

	/* TJIT_COMPILE_ONLY in the child: the graph with relu (0/0) on eager
	 * passes, on the failing backend fails; the caller's environment is
	 * not touched */
	char *relu = write_prog("relu.tj", "def f(x):\n    return relu(x) + 1\n\nprint(compile(f)(ones(2)))\n");
	ck_assert_int_eq(minify_run(&(struct minify_cand){relu, "relu_runtime_error_TESTING_ONLY", NULL, "1/0", NULL, NULL}, &lim,
				    &r, &err), 0);
	ck_assert_int_eq(r.status, 0);
	ck_assert_str_eq(r.out, "tensor([2.0000, 2.0000])\n");
	minify_result_release(&r);
	ck_assert_int_eq(minify_run(&(struct minify_cand){relu, "relu_runtime_error_TESTING_ONLY", NULL, "0/0", NULL, NULL}, &lim,
				    &r, &err), 0);
	ck_assert_int_eq(r.status, 1);
	ck_assert_ptr_nonnull(strstr(r.err, "ReluRuntimeError"));
	minify_result_release(&r);
	ck_assert_ptr_null(getenv("TJIT_COMPILE_ONLY"));
	free(relu);

	/* a hang costs its time limit, not the caller */
	char *hang = write_prog("hang.tj", "while True:\n    pass\n");
	lim.timeout_s = 0.3;
	ck_assert_int_eq(minify_run(&(struct minify_cand){hang, NULL, NULL, NULL, NULL, NULL}, &lim, &r, &err), 0);
	ck_assert(r.timed_out);
	ck_assert_int_eq(r.signal, SIGKILL);
	ck_assert(r.ms >= 300 && r.ms < 10000);
	minify_result_release(&r);
	free(ok);
	free(bad);
	free(hang);
}
END_TEST

/* the failing graph and its minimized form into the user's log: relu(x)
 * + 1 with add kept, relu dropped (an input of the minimized graph) */
START_TEST(test_graph_log)
{
	char *prog = write_prog("relu.tj", "def f(x):\n    return relu(x) + 1\n\nprint(compile(f)(ones(2)))\n");
	struct minify_limits lim = {30, 0};
	struct minify_result r;
	char *err = NULL;
	ck_assert_int_eq(minify_run(&(struct minify_cand){prog, "aot_eager", dbpath, NULL, NULL, NULL}, &lim, &r, &err), 0);
	struct minify_graph g;
	ck_assert_msg(minify_graph_load(dbpath, r.pid, "0/0", &g, &err) == 0, "%s", err);
	ck_assert_int_eq(g.n, 3);
	bool keep[3] = {false, false, true};
	char user[400];
	snprintf(user, sizeof user, "%s/user.db", tmpdir);
	struct db_writer *w = db_open_writer(user, &err);
	ck_assert_ptr_nonnull(w);
	db_begin_run(w, &(struct db_run){"tjit-minify", "tjit-minify relu.tj", prog, NULL, "aot_eager", "", 0});
	ck_assert_msg(minify_graph_log(w, dbpath, r.pid, &g, keep, "aot_eager", "accuracy", &err) == 0, "%s", err);
	db_end_run(w, 0);
	db_close(w);
	struct dbq *q = dbq_open(user, &err);
	ck_assert_ptr_nonnull(q);
	struct dbq_compile c;
	ck_assert_int_eq(dbq_compile_get(q, 1, "0/0", &c, &err), 0);
	ck_assert_str_eq(c.outcome, "error");
	ck_assert_str_eq(c.error, "accuracy");
	ck_assert_str_eq(c.backend, "aot_eager");
	ck_assert_str_eq(c.function, "f");
	struct dbq_graph *gs = NULL;
	int ng = 0;
	ck_assert_int_eq(dbq_graphs_of(q, c.id, &gs, &ng, &err), 0);
	ck_assert_int_eq(ng, 2);
	ck_assert_str_eq(gs[0].stage, "captured");
	ck_assert_int_eq(gs[0].op_count, 2);
	ck_assert_str_eq(gs[1].stage, "minified");
	ck_assert_int_eq(gs[1].op_count, 1);
	/* the original's lines: the dropped relu an input, add as it was */
	ck_assert_msg(strncmp(gs[1].listing, "graph 0/0 f (", 13) == 0, "%s", gs[1].listing);
	ck_assert_ptr_nonnull(strstr(gs[1].listing, "relu.tj:1) [minified] \xc2\xb7 1 op\n"
						     "  relu: f32[2] = input was relu(x)\n"
						     "  add: f32[2] = add(relu, 1) "));
	ck_assert_ptr_nonnull(strstr(gs[1].listing, "\n  return (add,)\n"));
	struct dbq_node *nd = NULL;
	int nn = 0;
	ck_assert_int_eq(dbq_nodes(q, gs[1].id, &nd, &nn, &err), 0);
	ck_assert_int_eq(nn, 3);
	ck_assert_str_eq(nd[0].name, "relu");
	ck_assert_str_eq(nd[0].kind, "input");
	ck_assert_str_eq(nd[0].args, "was relu(x)");
	ck_assert_str_eq(nd[1].name, "add");
	ck_assert_str_eq(nd[1].op, "add");
	ck_assert_str_eq(nd[2].kind, "output");
	ck_assert_str_eq(nd[2].args, "add");
	dbq_nodes_free(nd, nn);
	dbq_graphs_free(gs, ng);
	dbq_compile_release(&c);
	dbq_close(q);
	/* a graph the candidates' log does not have */
	free(g.label);
	g.label = strdup("0/9");
	w = db_null_writer();
	ck_assert_int_eq(minify_graph_log(w, dbpath, r.pid, &g, keep, "aot_eager", "accuracy", &err), -1);
	ck_assert_ptr_nonnull(err);
	free(err);
	db_close(w);
	minify_graph_release(&g);
	minify_result_release(&r);
	free(prog);
}
END_TEST

/* SIGTERM to the minifier while a candidate hangs: the candidate is
 * killed at once (its process group is gone), the wait says why, and the
 * caller lives on to wind up */
START_TEST(test_run_interrupted)
{
	char *hang = write_prog("hang.tj", "while True:\n    pass\n");
	struct sigaction before, after;
	ck_assert_int_eq(sigaction(SIGTERM, NULL, &before), 0);
	minify_catch_signals(true);
	ck_assert_int_eq(minify_stop_signal(), 0);
	pid_t me = getpid(), killer = fork();
	ck_assert_int_ge(killer, 0);
	if (killer == 0) {
		nanosleep(&(struct timespec){0, 300000000L}, NULL);
		kill(me, SIGTERM);
		_exit(0);
	}
	struct minify_limits lim = {30, 0};
	struct minify_result r;
	char *err = NULL;
	ck_assert_int_eq(minify_run(&(struct minify_cand){hang, NULL, NULL, NULL, NULL, NULL}, &lim, &r, &err), 0);
	ck_assert(r.interrupted);
	ck_assert(!r.timed_out);
	ck_assert_int_eq(r.signal, SIGKILL);
	ck_assert(r.ms >= 300 && r.ms < 10000);
	ck_assert_int_eq(minify_stop_signal(), SIGTERM);
	ck_assert_int_eq(kill(-(pid_t)r.pid, 0), -1);
	ck_assert_int_eq(errno, ESRCH);
	minify_result_release(&r);
	/* the old action is back */
	minify_catch_signals(false);
	ck_assert_int_eq(sigaction(SIGTERM, NULL, &after), 0);
	ck_assert(after.sa_handler == before.sa_handler);
	waitpid(killer, NULL, 0);
	free(hang);
}
END_TEST

#if !defined(__SANITIZE_ADDRESS__)
/* a program that allocates past the memory cap fails, the caller does not */
START_TEST(test_run_memory_cap)
{
	char *big = write_prog("big.tj", "print(1)\nx = zeros(1000, 1000, 100)\nprint(x.sum())\n");
	struct minify_limits lim = {30, 64L << 20};
	struct minify_result r;
	char *err = NULL;
	ck_assert_int_eq(minify_run(&(struct minify_cand){big, NULL, NULL, NULL, NULL, NULL}, &lim, &r, &err), 0);
	ck_assert_int_eq(r.status, 1);
	ck_assert_str_eq(r.out, "1\n");
	char *loc, *msg;
	ck_assert(minify_error_line(r.err, &loc, &msg));
	ck_assert_str_eq(msg, "out of memory allocating 400000000 bytes");
	free(loc);
	free(msg);
	minify_result_release(&r);
	free(big);
}
END_TEST
#endif

/* the recorded values: the program of every eager value (its inputs
 * loaded, the sizes bound from them), run for real; a candidate whose
 * dropped node reads its recorded value; the parameters of a set */
START_TEST(test_graph_recorded)
{
	struct minify_node nodes[] = {
		node(MZN_INPUT, "x", NULL, "L['x']", "float32", "[2, s0]"),
		node(MZN_OP, "randn", "randn", "2, s0", "float32", "[2, s0]"),
		node(MZN_OP, "add", "add", "x, randn", "float32", "[2, s0]"),
		node(MZN_OP, "relu", "relu", "add", "float32", "[2, s0]"),
		node(MZN_OP, "reshape", "reshape", "relu, (s0, -1)", "float32", "[s0, 2]"),
	};
	int n = sizeof nodes / sizeof *nodes;
	struct minify_graph g = {n, nodes, NULL, 0, (char *)"0/0", NULL, 0};
	int reads[][2] = {{0}, {0}, {0, 1}, {2}, {3}};
	int nreads[] = {0, 0, 2, 1, 1};
	bool emit[] = {false, false, true, true, true};
	for (int i = 0; i < n; i++) {
		nodes[i].reads = reads[i];
		nodes[i].nreads = nreads[i];
		nodes[i].emit = emit[i];
	}
	/* s0 is 5 in the recorded input */
	tensor *x = tensor_full(DT_FLOAT32, 2, (const int64_t[]){2, 5}, -1);
	minify_graph_bind_sizes(&g, &x, 1);
	ck_assert_int_eq(g.nsyms, 1);
	ck_assert_int_eq(g.syms[0], 5);
	char *inputs = NULL;
	ck_assert_int_ge(asprintf(&inputs, "%s/inputs.tjt", tmpdir), 0);
	ck_assert_int_eq(tensor_io_save(inputs, &x, 1), 0);
	tensor_decref(x);
	int slot[5];
	char *p = minify_graph_values_program(&g, "inputs.tjt", "values.tjt", 4, slot);
	ck_assert_str_eq(p, "# tjit-minify: every value of the failing graph, run eagerly\n"
			    "def repro(v_x, v_randn):\n"
			    "    v_add = v_x + v_randn\n"
			    "    v_relu = relu(v_add)\n"
			    "    v_reshape = reshape(v_relu, (5, -1))\n"
			    "    return (v_add, v_relu, v_reshape)\n"
			    "\n"
			    "manual_seed(4)\n"
			    "vals = load(\"inputs.tjt\")\n"
			    "v_x = vals[0]\n"
			    "v_randn = randn(2, 5)\n"
			    "outs = repro(v_x, v_randn)\n"
			    "save(\"values.tjt\", [v_x, v_randn, outs[0], outs[1], outs[2]])\n");
	int want_slot[] = {0, 1, 2, 3, 4};
	ck_assert_mem_eq(slot, want_slot, sizeof slot);
	/* run in the folder of its files, eagerly: every value saved */
	char *prog = write_prog("values.tj", p);
	free(p);
	struct minify_limits lim = {30, 0};
	struct minify_result r;
	char *err = NULL;
	ck_assert_int_eq(minify_run(&(struct minify_cand){"values.tj", NULL, NULL, NULL, NULL, tmpdir}, &lim, &r, &err),
			 0);
	ck_assert_msg(r.status == 0, "%s", r.err);
	minify_result_release(&r);
	char *values = NULL;
	ck_assert_int_ge(asprintf(&values, "%s/values.tjt", tmpdir), 0);
	tensor **vals;
	int nvals;
	ck_assert_int_eq(tensor_io_load(values, &vals, &nvals), 0);
	ck_assert_int_eq(nvals, 5);
	for (int k = 0; k < 10; k++) {
		/* add = x + randn, relu = max(add, 0), reshape of relu (5, 2) */
		double a = tensor_get_double(vals[0], k) + tensor_get_double(vals[1], k);
		ck_assert_double_eq_tol(tensor_get_double(vals[2], k), a, 1e-6);
		ck_assert_double_eq_tol(tensor_get_double(vals[3], k), a > 0 ? a : 0, 1e-6);
		ck_assert_double_eq_tol(tensor_get_double(vals[4], k), a > 0 ? a : 0, 1e-6);
	}
	ck_assert_int_eq(vals[4]->shape[0], 5);
	for (int k = 0; k < nvals; k++)
		tensor_decref(vals[k]);
	free(vals);
	/* relu alone: its input add is item 2 of the values; a parameter */
	bool keep[5] = {false, false, false, true, false}, param[5];
	minify_graph_params(&g, keep, param);
	ck_assert(!param[0] && !param[1] && param[2] && !param[3] && !param[4]);
	struct minify_inputs in = {0, MZ_FILL_RECORDED, "values.tjt", slot};
	p = minify_graph_program(&g, keep, "inductor", 0, -1, &in, "");
	ck_assert_str_eq(p, "def repro(v_add):\n"
			    "    v_relu = relu(v_add)\n"
			    "    return (v_relu,)\n"
			    "\n"
			    "manual_seed(0)\n"
			    "vals = load(\"values.tjt\")\n"
			    "v_add = vals[2]\n"
			    "print(compile(repro, backend=\"inductor\")(v_add))\n");
	free(p);
	/* zeros instead: the recorded sizes */
	in.fill = MZ_FILL_ZEROS;
	p = minify_graph_program(&g, keep, "inductor", 0, -1, &in, "");
	ck_assert_ptr_nonnull(strstr(p, "\nv_add = zeros(2, 5)\n"));
	free(p);
	free(g.syms);
	free(prog);
	free(values);
	free(inputs);
}
END_TEST

static Suite *minify_suite(void)
{
	Suite *s = suite_create("minify");
	TCase *parts = tcase_create("signatures");
	tcase_add_test(parts, test_error_line);
	tcase_add_test(parts, test_normalize_and_stage);
	tcase_add_test(parts, test_outputs_agree);
	tcase_add_test(parts, test_classify);
	tcase_add_test(parts, test_graph_program);
	suite_add_tcase(s, parts);
	TCase *tc = tcase_create("child");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_run_child);
	tcase_add_test(tc, test_graph_log);
	tcase_add_test(tc, test_graph_recorded);
	tcase_add_test(tc, test_run_interrupted);
#if !defined(__SANITIZE_ADDRESS__)
	tcase_add_test(tc, test_run_memory_cap);
#endif
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(minify_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
