/* check_tui.c - tjit-tui's view logic (tui/view.h) without a terminal,
 * on databases written through the writer (db/db.h): key sequences and
 * where they lead (the view stack, the selection, what Enter opens), the
 * text of rows and screens, paging across page boundaries with a small
 * page, the filter with n/N and its scan budget, reload while a writer
 * goes on, resize, the help and the footer made from the key map, and d
 * through a stand-in exporter. */
#define _GNU_SOURCE
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "db.h"
#include "query.h"
#include "view.h"

#define DB_TEST_NAME "check_tui"
#include "db_test_util.h"

static const char prog_text[] = "def f(x, n):\n"
				"    y = x * n\n"
				"    print(y)\n"
				"    return y\n";

static struct db_writer *must_open(const char *path)
{
	char *err = NULL;
	struct db_writer *w = db_open_writer(path, &err);
	ck_assert_msg(w != NULL, "db_open_writer: %s", err ? err : "?");
	return w;
}

static void begin(struct db_writer *w, const char *tool)
{
	struct db_run run = {
		.tool = tool,
		.command = "tjit run prog.tj",
		.program = "prog.tj",
		.source_text = prog_text,
		.config = "fullgraph=0 cache_size_limit=8 eager=0",
	};
	db_begin_run(w, &run);
}

/* compile 0/n of frame fr: three guards, a failure per older entry (at
 * most 3), a print break at line 3 every tenth, a captured graph of three
 * nodes (the op at line 2) for the first */
static void log_compile(struct db_writer *w, int64_t fr, int n)
{
	char label[32], text[64], fl[3][32], ft[3][64], fv[3][16];
	snprintf(label, sizeof label, "0/%d", n);
	snprintf(text, sizeof text, "L['n'] == %d", n);
	struct db_guard guards[] = {
		{"backend", "backend == 'eager'", NULL, 0, 0},
		{"tensor_match", "L['x'].shape == (2,)", "prog.tj", 2, 9},
		{"equals", text, "prog.tj", 2, 13},
	};
	struct db_guard_failure failures[3];
	int nf = 0;
	for (int k = n - 1; k >= 0 && nf < 3; k--, nf++) {
		snprintf(fl[nf], sizeof fl[nf], "0/%d", k);
		snprintf(ft[nf], sizeof ft[nf], "L['n'] == %d", k);
		snprintf(fv[nf], sizeof fv[nf], "%d", n);
		failures[nf] = (struct db_guard_failure){fl[nf], ft[nf], fv[nf]};
	}
	bool brk = n % 10 == 0;
	struct db_break b = {"TJB001", "side_effect", "call to print (side effect)", "prog.tj", 3, 5, 6,
			     "prog.tj:3 in f"};
	struct db_node nodes[] = {
		{"x", "input", NULL, "L['x']", "float32", "[2]", NULL, 0, 0, NULL},
		{"mul", "op", "mul", "x, n", "float32", "[2]", "prog.tj", 2, 9, "prog.tj:2 in f"},
		{"output", "output", NULL, "(mul,)", NULL, NULL, NULL, 0, 0, NULL},
	};
	struct db_graph g = {"captured", "f", 1,
			     "graph 0/0 f (prog.tj:1) · 1 op\n"
			     "  x: f32[2] = input L['x']\n"
			     "  mul: f32[2] = mul(x, 4)                 # prog.tj:2  y = x * n\n"
			     "  return (mul,)\n",
			     3, nodes, 0, NULL};
	struct db_compile c = {
		.frame_id = fr,
		.compile_id = label,
		.compile_index = n,
		.reason = n ? "recompile" : "first",
		.backend = "eager",
		.dynamic = "None",
		.total_ms = 2.0,
		.outcome = brk ? "graph_break" : "ok",
		.op_count = 1,
		.nguards = 3,
		.guards = guards,
		.nfailures = nf,
		.failures = failures,
		.nbreaks = brk ? 1 : 0,
		.breaks = brk ? &b : NULL,
		.ngraphs = n == 0 ? 1 : 0,
		.graphs = &g,
	};
	db_log_compile(w, &c, NULL);
}

/* run 1: 500 compiles of f; run 2: nothing compiled; run 3: 3 compiles */
static void fixture(void)
{
	struct db_writer *w = must_open(dbpath);
	int counts[] = {500, 0, 3};
	for (int r = 0; r < 3; r++) {
		begin(w, r == 1 ? "tjit explain" : "tjit run");
		if (counts[r]) {
			struct db_frame f = {0, "f", "prog.tj", 1, 0, 0};
			int64_t fr = db_log_frame(w, &f);
			for (int n = 0; n < counts[r]; n++)
				log_compile(w, fr, n);
			db_frame_counts(w, fr, &(struct db_frame_counts){600, 100, 0, 0, 0, NULL});
		}
		db_end_run(w, 0);
	}
	db_close(w);
}

static struct dbq *q;
static struct tui *t;

static void open_tui(const struct tui_options *o, int rows, int cols)
{
	char *err = NULL;
	q = dbq_open(dbpath, &err);
	ck_assert_msg(q != NULL, "dbq_open: %s", err ? err : "?");
	t = tui_new(q, o, rows, cols, &err);
	ck_assert_msg(t != NULL, "tui_new: %s", err ? err : "?");
}

static void close_tui(void)
{
	tui_free(t);
	dbq_close(q);
	t = NULL;
	q = NULL;
}

static int keys(const char *s)
{
	int m = 0;
	for (; *s; s++)
		m |= tui_key(t, (unsigned char)*s);
	return m;
}

static int key(int k)
{
	return tui_key(t, k);
}

static void ck_selected(const char *prefix)
{
	const char *s = tui_selected(t);
	ck_assert_msg(s && strncmp(s, prefix, strlen(prefix)) == 0, "selected '%s', expected '%s...'", s ? s : "(none)",
		      prefix);
}

/* line i (0-based) of the screen */
static char *screen_line(int i)
{
	char *s = tui_screen_text(t);
	char *p = s;
	for (int k = 0; k < i && p; k++) {
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	ck_assert_ptr_nonnull(p);
	char *nl = strchr(p, '\n');
	char *line = strndup(p, nl ? (size_t)(nl - p) : strlen(p));
	free(s);
	return line;
}

static void ck_screen_has(const char *want)
{
	char *s = tui_screen_text(t);
	ck_assert_msg(strstr(s, want) != NULL, "screen lacks '%s':\n%s", want, s);
	free(s);
}

/* a small page and window: lists cross page boundaries at once */
static const struct tui_options small = {.page = 20, .window = 60, .scan = 1000};

/* --- tests --- */

START_TEST(test_first_screen)
{
	fixture();
	open_tui(NULL, 24, 80);
	ck_assert_str_eq(tui_view_name(t), "runs");
	ck_assert_int_eq(tui_depth(t), 1);
	char *s = tui_screen_text(t);
	int lines = 0;
	for (char *p = s; *p; p++)
		lines += *p == '\n';
	ck_assert_int_eq(lines, 24);
	free(s);
	char *l0 = screen_line(0), *l1 = screen_line(1), *l2 = screen_line(2), *l23 = screen_line(23);
	ck_assert_str_eq(l0, "tjit-tui: runs");
	ck_assert_str_eq(l1, "   ID STATUS  STARTED     COMPILES GRAPHS BREAKS RECOMP  TOOL PROGRAM");
	/* newest first: run 3, with its counters */
	ck_assert_msg(strncmp(l2, "    3 ok      ", 14) == 0, "%s", l2);
	ck_assert_ptr_nonnull(strstr(l2 + 25, "       3      3      1      2  run prog.tj"));
	ck_assert_str_eq(l23, "Enter:open  Esc/q:back  /:filter  r:reload  ?:help  Q:quit");
	free(l0);
	free(l1);
	free(l2);
	free(l23);
	ck_selected("    3 ok");
	keys("j");
	ck_selected("    2 ok");
	keys("G");
	ck_selected("    1 ok");
	keys("g");
	ck_selected("    3 ok");
	key(TUI_KEY_DOWN);
	key(TUI_KEY_DOWN);
	key(TUI_KEY_DOWN); /* stops at the last */
	ck_selected("    1 ok");
	key(TUI_KEY_UP);
	ck_selected("    2 ok");
	close_tui();
}
END_TEST

START_TEST(test_drill_to_graph)
{
	fixture();
	open_tui(NULL, 24, 80);
	keys("G");
	ck_assert_int_eq(key(TUI_KEY_ENTER), TUI_HANDLED | TUI_REDRAW);
	ck_assert_str_eq(tui_view_name(t), "run");
	ck_selected("compiles             500");
	key(TUI_KEY_ENTER);
	ck_assert_str_eq(tui_view_name(t), "compiles");
	ck_assert_int_eq(tui_depth(t), 3);
	ck_selected("0/0     f              first       graph_break     1 op     2.00 ms  ");
	keys("j");
	ck_selected("0/1     f              recompile   ok              1 op     2.00 ms  ");
	keys("k");
	key(TUI_KEY_ENTER);
	ck_assert_str_eq(tui_view_name(t), "compile");
	char *h = screen_line(1);
	ck_assert_str_eq(h, "0/0 of f (prog.tj:1) · first · graph_break · eager · 2.00 ms");
	free(h);
	ck_selected("graph captured     f · 1 op");
	ck_screen_has("guards         3");
	ck_screen_has("break TJB001 call to print (side effect) at prog.tj:3:5");
	ck_screen_has("time: trace 0.00 ms · guards 0.00 ms · backend 0.00 ms · total 2.00 ms");
	key(TUI_KEY_ENTER);
	ck_assert_str_eq(tui_view_name(t), "graph");
	ck_assert_int_eq(tui_depth(t), 5);
	/* on the first node with a source line, its line current in the source pane */
	ck_selected("  mul: f32[2] = mul(x, 4)");
	ck_assert_str_eq(tui_current(t), " R    2      y = x * n");
	char *title = screen_line(0);
	ck_assert_str_eq(title, "tjit-tui: runs > run 1 > compiles > 0/0 > graph 1");
	free(title);
	ck_screen_has("0/0 captured · break TJB001 call to print (side effect) at prog.tj:3");
	ck_screen_has("--- source: prog.tj (Tab: focus)");
	ck_screen_has("B     3      print(y)");
	ck_screen_has(" R>   2      y = x * n"); /* the current line, a guard made there */
	ck_screen_has("Tab:pane  d:dot");
	/* Tab: the source pane has the keys */
	key(TUI_KEY_TAB);
	ck_assert_int_eq(tui_focus(t), 1);
	ck_screen_has("(focused: Tab goes back to the graph)");
	keys("j");
	ck_selected("B     3      print(y)");
	ck_assert_str_eq(tui_current(t), " R    2      y = x * n"); /* still the node's line */
	key(TUI_KEY_TAB);
	ck_assert_int_eq(tui_focus(t), 0);
	/* Enter on a node: its line in the source view */
	key(TUI_KEY_ENTER);
	ck_assert_str_eq(tui_view_name(t), "source");
	ck_selected(" R    2      y = x * n");
	ck_screen_has(" R>   2      y = x * n");
	/* back with Esc, q, Left */
	key(TUI_KEY_ESC);
	ck_assert_str_eq(tui_view_name(t), "graph");
	keys("q");
	ck_assert_str_eq(tui_view_name(t), "compile");
	key(TUI_KEY_LEFT);
	ck_assert_str_eq(tui_view_name(t), "compiles");
	ck_selected("0/0 ");
	keys("qq");
	ck_assert_int_eq(tui_depth(t), 1);
	ck_selected("    1 ok");
	/* Esc on the runs stays, q quits; Q quits from anywhere */
	ck_assert_int_eq(key(TUI_KEY_ESC), TUI_HANDLED | TUI_REDRAW);
	ck_assert_str_eq(tui_status(t), "this is the first view: q or Q quits");
	ck_assert(keys("q") & TUI_QUIT);
	key(TUI_KEY_ENTER);
	key(TUI_KEY_ENTER);
	ck_assert(keys("Q") & TUI_QUIT);
	close_tui();
}
END_TEST

/* the screen has no control character but the line ends */
static void ck_screen_clean(void)
{
	char *s = tui_screen_text(t);
	for (const char *p = s; *p; p++)
		ck_assert_msg((unsigned char)*p >= 0x20 || *p == '\n', "a raw control character 0x%02x on:\n%s",
			      (unsigned char)*p, s);
	free(s);
}

/* What a program names and writes reaches the screen escaped: a program
 * file named with an escape sequence, a source line with one, a break
 * message and a graph listing with them. */
START_TEST(test_control_characters_escaped)
{
	static const char text[] = "def f(x):\n"
				   "    print('\x1b[2J')  # \x1b]0;title\x07\n"
				   "    return x\n";
	struct db_writer *w = must_open(dbpath);
	struct db_run run = {
		.tool = "tjit run",
		.command = "tjit run e\x1b[31mx.tj",
		.program = "e\x1b[31mx.tj",
		.source_text = text,
		.config = "fullgraph=0 cache_size_limit=8 eager=0",
	};
	db_begin_run(w, &run);
	struct db_frame f = {0, "f", "e\x1b[31mx.tj", 1, 0, 0};
	int64_t fr = db_log_frame(w, &f);
	struct db_break b = {"TJB001", "side_effect", "call to print('\x1b[2J')", "e\x1b[31mx.tj", 2, 5, 6,
			     "e\x1b[31mx.tj:2 in f"};
	struct db_node nodes[] = {
		{"x", "input", NULL, "L['x']", "float32", "[2]", NULL, 0, 0, NULL},
		{"output", "output", NULL, "(x,)", NULL, NULL, NULL, 0, 0, NULL},
	};
	struct db_graph g = {"captured", "f", 0, "graph 0/0 f (e\x1b[31mx.tj:1) \x9b" "0 ops\n", 2, nodes, 0, NULL};
	struct db_compile c = {.frame_id = fr, .compile_id = "0/0", .reason = "first", .backend = "eager",
			       .dynamic = "None", .outcome = "graph_break", .nbreaks = 1, .breaks = &b,
			       .ngraphs = 1, .graphs = &g};
	db_log_compile(w, &c, NULL);
	db_end_run(w, 0);
	db_close(w);
	open_tui(NULL, 24, 100);
	ck_screen_has("e\\x1b[31mx.tj");
	ck_screen_clean();
	key(TUI_KEY_ENTER); /* the run */
	ck_screen_has("tjit run e\\x1b[31mx.tj");
	ck_screen_clean();
	keys("jj");
	key(TUI_KEY_ENTER); /* the graph breaks */
	ck_assert_str_eq(tui_view_name(t), "breaks");
	ck_screen_has("e\\x1b[31mx.tj:2");
	ck_screen_clean();
	keys("qg");
	key(TUI_KEY_ENTER); /* the compiles, then the compile */
	key(TUI_KEY_ENTER);
	ck_assert_str_eq(tui_view_name(t), "compile");
	ck_screen_has("call to print('\\x1b[2J') at e\\x1b[31mx.tj:2:5");
	ck_screen_clean();
	key(TUI_KEY_ENTER); /* the graph, beside its source */
	ck_assert_str_eq(tui_view_name(t), "graph");
	ck_screen_has("print('\\x1b[2J')  # \\x1b]0;title\\x07");
	ck_screen_clean();
	close_tui();
}
END_TEST

/* 500 compiles with pages of 20 and a window of at most 60 rows */
static int kernels_exported;

static int fake_export_kernels(struct dbq *dq, int64_t graph_id, const char *format, const char *path,
			       int max_nodes, char **err)
{
	(void)dq;
	(void)graph_id;
	(void)format;
	(void)path;
	(void)max_nodes;
	(void)err;
	kernels_exported++;
	return 0;
}

/* an inductor compile: its kernels listed (compiled or cached), the
 * backend's phases summed by name and wrapped; Enter on a kernel: the
 * nodes it fused over their source lines, its loop IR, its LLVM IR */
START_TEST(test_kernels)
{
	struct db_writer *w = must_open(dbpath);
	begin(w, "tjit run");
	struct db_frame f = {0, "f", "prog.tj", 1, 0, 0};
	int64_t fr = db_log_frame(w, &f);
	struct db_node nodes[] = {
		{"x", "input", NULL, "L['x']", "float32", "[2]", NULL, 0, 0, NULL},
		{"mul", "op", "mul", "x, 4", "float32", "[2]", "prog.tj", 2, 9, NULL},
		{"abs_1", "op", "abs", "mul", "float32", "[2]", "prog.tj", 4, 12, NULL},
		{"output", "output", NULL, "(abs_1,)", NULL, NULL, NULL, 0, 0, NULL},
	};
	struct db_kernel ks[] = {
		{"k_1", "pointwise", "h1", "mul", "kernel k_1(buf0: in float32 x)\n  for v0 in 0..2:\n",
		 "define void @k_1(ptr %0) {\n  ret void\n}\n", 0, 12.5},
		{"k_2", "pointwise", "h2", "abs_1", "kernel k_2()\n", NULL, 1, 0.25},
	};
	const char *listing = "graph 0/0 f (prog.tj:1) [aot_forward] · 2 ops\n"
			      "  x: f32[2] = input L['x']\n"
			      "  mul: f32[2] = mul(x, 4)                 # prog.tj:2  y = x * n\n"
			      "  abs_1: f32[2] = abs(mul)                # prog.tj:4  return y\n"
			      "  return (abs_1,)\n";
	struct db_graph g[] = {
		{"captured", "f", 2, listing, 4, nodes, 0, NULL},
		{"aot_forward", "f", 2, listing, 4, nodes, 2, ks},
	};
	struct db_phase ph[] = {
		{"trace", -1, 0.1},  {"guards", -1, 0.1},    {"backend", -1, 20},      {"decompose", 2, 0.5},
		{"schedule", 2, 1},  {"lower", 2, 1},        {"codegen", 2, 1},        {"llvm_optimize", 2, 5},
		{"jit", 2, 6},       {"codegen", 2, 1},      {"llvm_optimize", 2, 1},  {"jit", 2, 2},
	};
	struct db_compile c = {.frame_id = fr, .compile_id = "0/0", .reason = "first", .backend = "inductor",
			       .dynamic = "None", .outcome = "ok", .op_count = 2, .ngraphs = 2, .graphs = g,
			       .nphases = 12, .phases = ph};
	db_log_compile(w, &c, NULL);
	db_end_run(w, 0);
	db_close(w);

	struct tui_options o = {.export_kernels = fake_export_kernels, .export_dir = tmpdir};
	open_tui(&o, 24, 80);
	keys("\r\r\r");
	ck_assert_str_eq(tui_view_name(t), "compile");
	ck_screen_has("kernel k_1                pointwise compiled  12.50 ms  mul");
	ck_screen_has("kernel k_2                pointwise cached     0.25 ms  abs_1");
	ck_screen_has("in backend: decompose 0.50 ms · schedule 1.00 ms · lower 1.00 ms ·\n"
		      "            codegen 2.00 ms · llvm_optimize 6.00 ms · jit 8.00 ms\n");
	keys("jj");
	ck_selected("kernel k_1 ");
	key(TUI_KEY_ENTER);
	ck_assert_str_eq(tui_view_name(t), "kernel");
	char *title = screen_line(0);
	ck_assert_str_eq(title, "tjit-tui: runs > run 1 > compiles > 0/0 > kernel k_1");
	free(title);
	ck_screen_has("0/0 aot_forward · kernel k_1 · pointwise · compiled 12.50 ms");
	ck_screen_has("fused: mul\n");
	/* on the fused node, its line current in the source pane */
	ck_selected("  mul: f32[2] = mul(x, 4)");
	ck_assert_str_eq(tui_current(t), "      2      y = x * n");
	ck_screen_has("loop IR:\n  kernel k_1(buf0: in float32 x)\n    for v0 in 0..2:\n");
	ck_screen_has("LLVM IR:\n  define void @k_1(ptr %0) {\n    ret void\n  }\n");
	ck_screen_has("Tab:pane  d:dot");
	/* d: the graph with its kernels' clusters, graph 2 (aot_forward) */
	keys("d");
	ck_assert_int_eq(kernels_exported, 2);
	char want[600];
	snprintf(want, sizeof want, "wrote graph-2.dot and graph-2.svg in %s", tmpdir);
	ck_assert_str_eq(tui_status(t), want);
	/* Enter on the node: its source line */
	key(TUI_KEY_ENTER);
	ck_assert_str_eq(tui_view_name(t), "source");
	ck_selected("      2      y = x * n");
	keys("qqj");
	ck_selected("kernel k_2 ");
	key(TUI_KEY_ENTER);
	ck_screen_has("0/0 aot_forward · kernel k_2 · pointwise · from the kernel cache 0.25 ms");
	ck_selected("  abs_1: f32[2] = abs(mul)");
	ck_assert_str_eq(tui_current(t), "      4      return y");
	ck_screen_has("LLVM IR: none recorded (a kernel from the cache of an older tjit)");
	/* r reads it again: the same rows, the selection kept */
	keys("r");
	ck_assert_str_eq(tui_status(t), "reloaded");
	ck_selected("  abs_1: f32[2] = abs(mul)");
	ck_screen_has("fused: abs_1\n  abs_1: f32[2] = abs(mul)");
	ck_assert_str_eq(tui_current(t), "      4      return y");
	close_tui();
}
END_TEST

START_TEST(test_paging)
{
	fixture();
	open_tui(&small, 24, 80);
	keys("G");
	key(TUI_KEY_ENTER);
	key(TUI_KEY_ENTER);
	ck_assert_str_eq(tui_view_name(t), "compiles");
	bool before, after;
	ck_assert_int_eq(tui_window(t, &before, &after), 20);
	ck_assert(!before && after);
	for (int i = 0; i < 250; i++)
		keys("j");
	ck_selected("0/250 ");
	ck_assert_int_le(tui_window(t, &before, &after), 60);
	ck_assert(before && after);
	for (int i = 0; i < 240; i++)
		keys("k");
	ck_selected("0/10 ");
	for (int i = 0; i < 10; i++)
		keys("k");
	ck_selected("0/0 ");
	keys("k");
	ck_selected("0/0 ");
	keys("G");
	ck_selected("0/499 ");
	tui_window(t, &before, &after);
	ck_assert(before && !after);
	/* the screen shows the last 20 rows, 0/499 at the bottom */
	char *l21 = screen_line(21), *l2 = screen_line(2);
	ck_assert_msg(strncmp(l21, "0/499 ", 6) == 0, "%s", l21);
	ck_assert_msg(strncmp(l2, "0/480 ", 6) == 0, "%s", l2);
	free(l21);
	free(l2);
	key(TUI_KEY_PGUP);
	ck_selected("0/479 ");
	key(TUI_KEY_PGUP);
	key(TUI_KEY_PGUP);
	ck_selected("0/439 ");
	keys("g");
	ck_selected("0/0 ");
	key(TUI_KEY_PGDN);
	ck_selected("0/20 ");
	for (int i = 0; i < 30; i++)
		key(TUI_KEY_PGDN);
	ck_selected("0/499 ");
	ck_assert_int_le(tui_window(t, NULL, NULL), 60);
	key(TUI_KEY_HOME);
	ck_selected("0/0 ");
	key(TUI_KEY_END);
	ck_selected("0/499 ");
	/* guard failures of the run page the same way: 3 a recompile */
	keys("q");
	keys("jjjj");
	ck_selected("guard failures");
	key(TUI_KEY_ENTER);
	ck_selected("0/1     f              L['n'] == 0  (got 1)  entry 0/0");
	keys("G");
	ck_selected("0/499   f              L['n'] == 496  (got 499)  entry 0/496");
	keys("k");
	ck_selected("0/499   f              L['n'] == 497");
	close_tui();
}
END_TEST

START_TEST(test_filter)
{
	fixture();
	open_tui(&small, 24, 80);
	keys("G");
	key(TUI_KEY_ENTER);
	key(TUI_KEY_ENTER);
	ck_assert_int_eq(keys("/"), TUI_HANDLED | TUI_REDRAW);
	ck_assert(tui_prompting(t));
	keys("0/4");
	ck_assert_str_eq(tui_filter(t), "0/4");
	ck_selected("0/4 ");
	keys("9");
	/* as you type: 0/49, then 0/490 ... 0/499 */
	ck_assert_str_eq(tui_filter(t), "0/49");
	ck_selected("0/49 ");
	char *status = screen_line(22);
	ck_assert_str_eq(status, "/0/49");
	free(status);
	key(TUI_KEY_ENTER);
	ck_assert(!tui_prompting(t));
	status = screen_line(22);
	ck_assert_str_eq(status, "filter: 0/49  (n/N: next/previous match, /: change, Esc in /: clear)");
	free(status);
	keys("n");
	ck_selected("0/490 ");
	keys("nnnnnnnnn");
	ck_selected("0/499 ");
	keys("n");
	ck_selected("0/499 ");
	ck_assert_str_eq(tui_status(t), "no next match for '0/49'");
	keys("N");
	ck_selected("0/498 ");
	keys("g");
	ck_selected("0/49 ");
	/* backspace widens, Esc in the prompt clears */
	keys("/");
	key(TUI_KEY_BACKSPACE);
	ck_assert_str_eq(tui_filter(t), "0/4");
	ck_selected("0/4 ");
	key(TUI_KEY_ESC);
	ck_assert(!tui_prompting(t));
	ck_assert_str_eq(tui_filter(t), "");
	ck_selected("0/0 ");
	/* case does not matter; j and q are text in the prompt */
	keys("/GRAPH_BREAK");
	ck_selected("0/0 ");
	keys("j");
	ck_assert_str_eq(tui_filter(t), "GRAPH_BREAKj");
	ck_assert_int_eq(tui_window(t, NULL, NULL), 0);
	ck_screen_has("(no row matches 'GRAPH_BREAKj')");
	key(TUI_KEY_BACKSPACE);
	key(TUI_KEY_ENTER);
	keys("j");
	ck_selected("0/10 ");
	keys("n");
	ck_selected("0/20 ");
	close_tui();
}
END_TEST

/* a filter reads at most scan rows a key; n reads on */
START_TEST(test_filter_budget)
{
	fixture();
	struct tui_options o = small;
	o.scan = 50;
	open_tui(&o, 24, 80);
	keys("G");
	key(TUI_KEY_ENTER);
	key(TUI_KEY_ENTER);
	keys("/0/499");
	key(TUI_KEY_ENTER);
	ck_assert_int_eq(tui_window(t, NULL, NULL), 0);
	ck_assert_str_eq(tui_status(t), "filter '0/499': stopped after 50 rows; n searches on");
	ck_screen_has("(no row matches '0/499' yet: n reads on)");
	int presses = 0;
	while (!tui_selected(t) && presses < 20) {
		keys("n");
		presses++;
	}
	ck_selected("0/499 ");
	ck_assert_int_ge(presses, 8);
	close_tui();
}
END_TEST

START_TEST(test_breaks_recompiles_guards)
{
	fixture();
	open_tui(NULL, 24, 80);
	keys("G");
	key(TUI_KEY_ENTER);
	keys("jj");
	ck_selected("graph breaks          50");
	key(TUI_KEY_ENTER);
	ck_assert_str_eq(tui_view_name(t), "breaks");
	ck_selected("TJB001 prog.tj:3                    50        0  call to print (side effect)");
	key(TUI_KEY_ENTER);
	ck_assert_str_eq(tui_view_name(t), "source");
	ck_selected("B     3      print(y)");
	ck_screen_has("B >   3      print(y)");
	ck_screen_has("tjit-tui: runs > run 1 > breaks > prog.tj:3");
	ck_screen_has(" R    1  def f(x, n):");
	keys("qq");
	keys("j");
	ck_selected("recompiles           499");
	key(TUI_KEY_ENTER);
	ck_assert_str_eq(tui_view_name(t), "recompiles");
	ck_selected("f (prog.tj:1) · 499 recompiles, 500 entries");
	keys("j");
	ck_selected("    L['n'] · 499 recompiles · 500 values: 0, 1, 2, 3");
	key(TUI_KEY_ENTER);
	ck_assert_str_eq(tui_view_name(t), "failures");
	ck_assert_str_eq(tui_filter(t), "L['n']");
	ck_selected("0/1     f              L['n'] == 0  (got 1)  entry 0/0");
	key(TUI_KEY_ENTER);
	ck_assert_str_eq(tui_view_name(t), "compile");
	ck_screen_has("0/1 of f (prog.tj:1) · recompile · ok");
	ck_screen_has("guard failures 1: L['n'] == 0 (got 1)");
	keys("j");
	ck_selected("guards         3");
	key(TUI_KEY_ENTER);
	ck_assert_str_eq(tui_view_name(t), "guards");
	ck_selected("  0 backend       backend == 'eager'");
	keys("G");
	ck_selected("  2 equals        L['n'] == 1                              prog.tj:2:13");
	key(TUI_KEY_ENTER);
	ck_assert_str_eq(tui_view_name(t), "source");
	ck_selected(" R    2");
	ck_screen_has(" R>   2");
	keys("qqj");
	key(TUI_KEY_ENTER);
	ck_assert_str_eq(tui_view_name(t), "failures");
	ck_screen_has("tjit-tui: runs > run 1 > recompiles > guard failures > 0/1 > failures of 0/1");
	/* frames, and a frame's compiles */
	keys("qqqq");
	ck_assert_str_eq(tui_view_name(t), "run");
	keys("gj");
	key(TUI_KEY_ENTER);
	ck_assert_str_eq(tui_view_name(t), "frames");
	ck_selected("    0 f              prog.tj:1                       600      100      0      500");
	key(TUI_KEY_ENTER);
	ck_assert_str_eq(tui_view_name(t), "compiles");
	keys("G");
	ck_selected("0/499 ");
	close_tui();
}
END_TEST

START_TEST(test_help_and_footer)
{
	fixture();
	open_tui(NULL, 24, 80);
	char *help = tui_help_text();
	const char *want[] = {"  j, Down            move down\n",
			      "  g, Home            go to the first row\n",
			      "  PgDn, Space, C-f   page down\n",
			      "  Enter, Right, l    open the selected row (drill in)\n",
			      "  Esc, q, Left, h    go back (q on the runs quits)\n",
			      "  /                  filter rows as you type (Enter keeps, Esc clears)\n",
			      "  n                  next row that matches the filter (reads on)\n",
			      "  Tab                switch between the graph and its source\n",
			      "  m                  the minifier's sessions (tjit-minify), newest first\n",
			      "  ?                  this help\n",
			      "  Q                  quit\n"};
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
		ck_assert_msg(strstr(help, want[i]), "help lacks '%s':\n%s", want[i], help);
	/* one line a command, and each fits 80 columns */
	int lines = 0;
	for (char *p = help, *nl; (nl = strchr(p, '\n')); p = nl + 1, lines++)
		ck_assert_int_le(nl - p, 80);
	ck_assert_int_eq(lines, 17);
	free(help);
	char *f = tui_footer_text(t);
	ck_assert_str_eq(f, "Enter:open  Esc/q:back  /:filter  r:reload  ?:help  Q:quit");
	free(f);
	keys("?");
	ck_assert_str_eq(tui_view_name(t), "help");
	ck_screen_has("tjit-tui: runs > help");
	ck_screen_has("  G, End             go to the last row");
	keys("?");
	ck_assert_int_eq(tui_depth(t), 2);
	keys("q");
	ck_assert_str_eq(tui_view_name(t), "runs");
	/* keys without a meaning are not handled */
	ck_assert_int_eq(keys("z"), 0);
	close_tui();
}
END_TEST

static int exported;

static int fake_export(struct dbq *dq, int64_t graph_id, const char *format, const char *path, int max_nodes,
		       char **err)
{
	(void)dq;
	(void)max_nodes;
	if (strcmp(format, "svg") == 0 && graph_id == 999) {
		*err = strdup("no svg today");
		return -1;
	}
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	fprintf(f, "%s %lld\n", format, (long long)graph_id);
	fclose(f);
	exported++;
	return 0;
}

START_TEST(test_export)
{
	fixture();
	struct tui_options o = {.export_graph = fake_export, .export_dir = tmpdir};
	open_tui(&o, 24, 80);
	keys("G");
	key(TUI_KEY_ENTER);
	key(TUI_KEY_ENTER);
	/* from a compile's row: its captured graph */
	keys("d");
	char want[600];
	snprintf(want, sizeof want, "wrote graph-1.dot and graph-1.svg in %s", tmpdir);
	ck_assert_str_eq(tui_status(t), want);
	ck_assert_int_eq(exported, 2);
	char path[600];
	snprintf(path, sizeof path, "%s/graph-1.svg", tmpdir);
	ck_assert_int_eq(access(path, F_OK), 0);
	/* a compile without a graph */
	keys("j");
	keys("d");
	ck_assert_str_eq(tui_status(t), "no graph here: select a compile or a graph");
	/* the runs have no d */
	keys("qq");
	ck_assert_int_eq(keys("d"), 0);
	close_tui();
	/* without an exporter */
	open_tui(NULL, 24, 80);
	keys("G");
	key(TUI_KEY_ENTER);
	key(TUI_KEY_ENTER);
	key(TUI_KEY_ENTER);
	key(TUI_KEY_ENTER);
	ck_assert_str_eq(tui_view_name(t), "graph");
	keys("d");
	ck_assert_str_eq(tui_status(t), "d: exporting needs viz/ (tjit-dot), which this build does not have");
	close_tui();
}
END_TEST

/* r reads the screen again while a writer goes on logging */
START_TEST(test_reload)
{
	fixture();
	open_tui(&small, 24, 80);
	keys("j");
	ck_selected("    2 ok");
	struct db_writer *w = must_open(dbpath);
	begin(w, "tjit-profile run");
	struct db_frame f = {0, "f", "prog.tj", 1, 0, 0};
	int64_t fr = db_log_frame(w, &f);
	log_compile(w, fr, 0);
	db_flush(w);
	/* not yet on the screen */
	keys("k");
	ck_selected("    3 ok");
	ck_assert_int_eq(keys("r"), TUI_HANDLED | TUI_REDRAW);
	ck_assert_str_eq(tui_status(t), "reloaded");
	ck_selected("    3 ok");
	keys("k");
	ck_selected("    4 running");
	ck_screen_has("       1      1      1      0  profile run prog.tj");
	/* the compiles of the running run grow */
	key(TUI_KEY_ENTER);
	key(TUI_KEY_ENTER);
	keys("G");
	ck_selected("0/0 ");
	log_compile(w, fr, 1);
	log_compile(w, fr, 2);
	db_end_run(w, 0);
	db_close(w);
	keys("r");
	ck_selected("0/0 ");
	keys("G");
	ck_selected("0/2 ");
	keys("qq");
	keys("r");
	ck_selected("    4 ok");
	close_tui();
}
END_TEST

START_TEST(test_resize)
{
	fixture();
	open_tui(NULL, 24, 80);
	keys("G");
	key(TUI_KEY_ENTER);
	char *l1 = screen_line(1);
	ck_assert_ptr_null(strstr(l1, "eager=0")); /* the run's config is clipped */
	free(l1);
	tui_resize(t, 30, 100);
	char *s = tui_screen_text(t);
	int lines = 0;
	for (char *p = s; *p; p++)
		lines += *p == '\n';
	ck_assert_int_eq(lines, 30);
	free(s);
	ck_screen_has("fullgraph=0 cache_size_limit=8 eager=0");
	char *foot = screen_line(29);
	ck_assert_str_eq(foot, "Enter:open  Esc/q:back  /:filter  r:reload  ?:help  Q:quit");
	free(foot);
	ck_assert_int_eq(key(TUI_KEY_RESIZE), TUI_HANDLED | TUI_RESIZE | TUI_REDRAW);
	/* the graph's panes share the rows */
	key(TUI_KEY_ENTER);
	key(TUI_KEY_ENTER);
	key(TUI_KEY_ENTER);
	ck_screen_has("--- source: prog.tj");
	tui_resize(t, 3, 10);
	const struct tui_line *tl;
	ck_assert_int_eq(tui_layout(t, &tl), 3);
	ck_assert_str_eq(tl[0].text, "tjit-tui: the terminal is too small");
	ck_assert_int_eq(tl[0].attr, TUI_A_ERROR);
	tui_resize(t, 24, 80);
	ck_selected("  mul: ");
	close_tui();
}
END_TEST

START_TEST(test_empty_and_bad)
{
	/* no runs */
	db_close(must_open(dbpath));
	open_tui(NULL, 24, 80);
	ck_screen_has("  (nothing here)");
	ck_assert_ptr_null(tui_selected(t));
	ck_assert_int_eq(key(TUI_KEY_ENTER), TUI_HANDLED);
	keys("jkGg");
	ck_assert_int_eq(keys("n"), TUI_HANDLED | TUI_REDRAW);
	ck_assert_str_eq(tui_status(t), "no filter: / sets one");
	close_tui();
	/* a run without source and without compiles */
	struct db_writer *w = must_open(dbpath);
	struct db_run run = {.tool = "tjit run", .command = "tjit run gone.tj", .program = "gone.tj", .config = ""};
	db_begin_run(w, &run);
	db_close(w);
	open_tui(NULL, 24, 80);
	ck_selected("    1 ");
	key(TUI_KEY_ENTER);
	keys("G");
	ck_selected("source                    gone.tj: its text was not stored");
	key(TUI_KEY_ENTER);
	ck_assert_str_eq(tui_view_name(t), "run");
	keys("g");
	key(TUI_KEY_ENTER);
	ck_assert_str_eq(tui_view_name(t), "compiles");
	ck_screen_has("(nothing here)");
	keys("q");
	keys("jjj");
	key(TUI_KEY_ENTER);
	ck_assert_str_eq(tui_view_name(t), "recompiles");
	ck_selected("no recompiles");
	close_tui();
}
END_TEST

/* tjit-minify's sessions: m lists them newest first from anywhere; the
 * run view of a tjit-minify run leads to its own; a session shows what it
 * found and each candidate it tried. Text from the program (its path, a
 * candidate's message) reaches the screen escaped. */
START_TEST(test_minify_sessions)
{
	struct db_writer *w = must_open(dbpath);
	begin(w, "tjit run");
	db_end_run(w, 0);
	struct db_run run = {.tool = "tjit-minify", .command = "tjit-minify e\x1b[31mx.tj",
			     .program = "e\x1b[31mx.tj", .source_text = prog_text, .backend = "inductor", .config = ""};
	db_begin_run(w, &run);
	int64_t s1 = db_begin_minify(w, &(struct db_minify){"e\x1b[31mx.tj", prog_text, "inductor", "compile_error", 0});
	struct db_minify_step steps[] = {
		{"classify", "eager reference: pass", -1, "passes", 16},
		{"classify", "inductor run 1: compile_error aot_eager: bad \x1b[2J relu", -1, "fails", 32.5},
		{"shrink", "keep 2: sub, relu: pass", 2, "passes", 3},
		{"shrink", "keep 1: relu: compile_error aot_eager: bad \x1b[2J relu", 1, "fails", 1250},
	};
	for (int i = 0; i < 4; i++)
		db_log_minify_step(w, s1, &steps[i]);
	db_end_minify(w, s1, &(struct db_minify_end){"aot_eager", "minified", "x.minify/repro.tj", "print(1)\n"});
	db_end_run(w, 0);
	run.program = "quiet.tj";
	db_begin_run(w, &run);
	int64_t s2 = db_begin_minify(w, &(struct db_minify){"quiet.tj", NULL, "aot_eager", "none", 0});
	db_end_minify(w, s2, &(struct db_minify_end){NULL, "not_reproduced", NULL, NULL});
	db_end_run(w, 1);
	db_close(w);

	open_tui(NULL, 24, 120);
	keys("m");
	ck_assert_str_eq(tui_view_name(t), "sessions");
	char *l0 = screen_line(0), *l1 = screen_line(1);
	ck_assert_str_eq(l0, "tjit-tui: runs > minifier sessions");
	ck_assert_str_eq(l1, "   ID PROGRAM          BACKEND   FAILURE       STAGE     RESULT         STEPS  REPRO");
	free(l0);
	free(l1);
	ck_selected("    2 quiet.tj         aot_eager none          -         not_reproduced     0  -");
	keys("j");
	ck_selected("    1 e\x1b[31mx.tj       inductor  compile_error aot_eager minified           4  x.minify/repro.tj");
	ck_screen_has("    1 e\\x1b[31mx.tj       inductor  compile_error aot_eager minified           4  x.minify/repro.tj");
	ck_screen_clean();
	ck_assert_int_eq(keys("m"), TUI_HANDLED); /* already there */
	ck_assert_int_eq(tui_depth(t), 2);
	key(TUI_KEY_ENTER);
	ck_assert_str_eq(tui_view_name(t), "session");
	ck_screen_has("tjit-tui: runs > minifier sessions > session 1\n");
	ck_screen_has("tjit-minify run 2 · ");
	ck_screen_has(" · 4 candidate runs\n");
	ck_screen_has("program  e\\x1b[31mx.tj, backend inductor\n"
		      "failure  compile_error, first failing stage aot_eager\n"
		      "result   minified\n"
		      "repro    x.minify/repro.tj\n"
		      "PHASE    OUTCOME          NODES         MS  CANDIDATE\n"
		      "classify passes               -   16.00 ms  eager reference: pass\n"
		      "classify fails                -   32.50 ms  inductor run 1: compile_error aot_eager: bad "
		      "\\x1b[2J relu\n"
		      "shrink   passes           2 ops    3.00 ms  keep 2: sub, relu: pass\n"
		      "shrink   fails             1 op     1.25 s  keep 1: relu: compile_error aot_eager: bad \\x1b[2J "
		      "relu\n");
	ck_screen_clean();
	keys("G");
	ck_selected("shrink   fails             1 op");
	keys("r");
	ck_assert_str_eq(tui_status(t), "reloaded");
	ck_selected("shrink   fails             1 op");
	/* a session that did not fail: no stage, no repro, no step */
	keys("qk");
	key(TUI_KEY_ENTER);
	ck_screen_has("failure  none, first failing stage unknown\n"
		      "result   not_reproduced\n"
		      "repro    none written\n"
		      "PHASE    OUTCOME          NODES         MS  CANDIDATE\n"
		      "no candidate ran\n");
	/* from the runs: a tjit-minify run leads to its sessions, another run not */
	keys("qq");
	ck_assert_str_eq(tui_view_name(t), "runs");
	keys("j");
	key(TUI_KEY_ENTER);
	ck_assert_str_eq(tui_view_name(t), "run");
	keys("jjjjj");
	ck_selected("minifier sessions         failure, stage, result, the candidates tried");
	key(TUI_KEY_ENTER);
	ck_assert_str_eq(tui_view_name(t), "sessions");
	ck_screen_has("tjit-tui: runs > run 2 > sessions of run 2\n");
	ck_selected("    1 ");
	keys("G");
	ck_selected("    1 ");
	key(TUI_KEY_ENTER);
	ck_assert_str_eq(tui_view_name(t), "session");
	/* the run's source opens at its first line */
	keys("qqG");
	key(TUI_KEY_ENTER);
	ck_assert_str_eq(tui_view_name(t), "source");
	ck_selected("      1  def f(x, n):");
	keys("qqqG");
	key(TUI_KEY_ENTER);
	ck_assert_str_eq(tui_view_name(t), "run");
	char *scr = tui_screen_text(t);
	ck_assert_msg(!strstr(scr, "minifier sessions"), "a run of tjit run with sessions:\n%s", scr);
	free(scr);
	close_tui();
}
END_TEST

static Suite *tui_suite(void)
{
	Suite *s = suite_create("tui");
	TCase *tc = tcase_create("views");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_first_screen);
	tcase_add_test(tc, test_drill_to_graph);
	tcase_add_test(tc, test_control_characters_escaped);
	tcase_add_test(tc, test_kernels);
	tcase_add_test(tc, test_paging);
	tcase_add_test(tc, test_filter);
	tcase_add_test(tc, test_filter_budget);
	tcase_add_test(tc, test_breaks_recompiles_guards);
	tcase_add_test(tc, test_help_and_footer);
	tcase_add_test(tc, test_export);
	tcase_add_test(tc, test_reload);
	tcase_add_test(tc, test_resize);
	tcase_add_test(tc, test_empty_and_bad);
	tcase_add_test(tc, test_minify_sessions);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(tui_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
