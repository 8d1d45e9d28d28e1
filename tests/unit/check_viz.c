/* check_viz.c - viz/: which nodes an op's arguments name (the edges of a
 * graph), the graph view's nodes, labels, clusters and break node, the
 * --max-nodes cut of both views with its exact count, the run view's
 * chain, and the output formats. The views are fed rows made here, no
 * database. */
#define _GNU_SOURCE
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "viz_impl.h"

/* ---- args -> edges ---- */

static const char *const names[] = {"a", "b", "abs_1", "add", "float64_x", "x", "mul_10"};
#define NNAMES ((int)(sizeof names / sizeof names[0]))

/* the names args refers to before node `before`, joined by spaces */
static char *refs(const char *args, int before)
{
	struct viz_names *ix = viz_names_new(names, NNAMES);
	int out[NNAMES];
	int n = viz_arg_refs(ix, args, before, out, NNAMES);
	static char buf[256];
	buf[0] = '\0';
	for (int i = 0; i < n; i++) {
		if (i)
			strcat(buf, " ");
		strcat(buf, names[out[i]]);
	}
	viz_names_free(ix);
	return buf;
}

START_TEST(test_args_names)
{
	ck_assert_str_eq(refs("abs_1, 1", 7), "abs_1");
	ck_assert_str_eq(refs("a, add", 7), "a add");
	ck_assert_str_eq(refs("add, a", 7), "add a");
	/* each producer once */
	ck_assert_str_eq(refs("a, a", 7), "a");
	/* lists and tuples */
	ck_assert_str_eq(refs("[a, b], 1", 7), "a b");
	ck_assert_str_eq(refs("(x, (abs_1,))", 7), "x abs_1");
	/* nothing in constants */
	ck_assert_str_eq(refs("1, 2.5, -3", 7), "");
	ck_assert_str_eq(refs("", 7), "");
	ck_assert_str_eq(refs(NULL, 7), "");
}
END_TEST

START_TEST(test_args_not_names)
{
	/* keyword names, strings, numbers with letters, unknown identifiers */
	ck_assert_str_eq(refs("a, dim=1", 7), "a");
	ck_assert_str_eq(refs("a, x=b", 7), "a b");
	ck_assert_str_eq(refs("a, 'add', \"b\"", 7), "a");
	ck_assert_str_eq(refs("'it\\'s add', b", 7), "b");
	ck_assert_str_eq(refs("a, 1e-05, 1e10", 7), "a");
	ck_assert_str_eq(refs("x, dtype=float64", 7), "x");
	ck_assert_str_eq(refs("float64_x, True, None", 7), "float64_x");
	/* a name is the whole identifier: mul_1 is not mul_10, abs_10 not abs_1 */
	ck_assert_str_eq(refs("mul_1, abs_10, mul_10", 7), "mul_10");
	/* a comparison is not a keyword */
	ck_assert_str_eq(refs("a == b", 7), "a b");
}
END_TEST

START_TEST(test_args_only_earlier)
{
	/* node 3 (add) may use a, b, abs_1; not itself or later nodes */
	ck_assert_str_eq(refs("abs_1, add, x", 3), "abs_1");
	ck_assert_str_eq(refs("a", 0), "");
}
END_TEST

START_TEST(test_names_find)
{
	struct viz_names *ix = viz_names_new(names, NNAMES);
	ck_assert_int_eq(viz_names_find(ix, "abs_1", 5), 2);
	ck_assert_int_eq(viz_names_find(ix, "abs_12", 5), 2); /* a prefix of len */
	ck_assert_int_eq(viz_names_find(ix, "abs", 3), -1);
	ck_assert_int_eq(viz_names_find(ix, "zzz", 3), -1);
	ck_assert_int_eq(viz_names_find(ix, "mul_10", 6), 6);
	viz_names_free(ix);
}
END_TEST

/* ---- the graph view ---- */

static char prog[] = "def f(x):\n"
			   "    y = helper(x) + 1\n"
			   "    print(y)\n"
			   "    return y\n"
			   "def helper(t):\n"
			   "    return t * 2\n";

/* a graph of nops ops chained from input x (op i adds to op i-1), the
 * first inlined from helper, then an output of the last op, and a break */
static struct dbq_node *chain(int nops, int *n)
{
	*n = nops + 2;
	struct dbq_node *v = calloc((size_t)*n, sizeof *v);
	v[0] = (struct dbq_node){.idx = 0, .name = "x", .kind = "input", .args = "L['x']", .dtype = "float32",
				 .shape = "[2, 3]"};
	static char namebuf[64][16], argbuf[64][32];
	for (int i = 1; i <= nops; i++) {
		if (i == 1)
			snprintf(namebuf[i], sizeof namebuf[i], "mul");
		else
			snprintf(namebuf[i], sizeof namebuf[i], "add_%d", i);
		snprintf(argbuf[i], sizeof argbuf[i], "%s, %d", i == 1 ? "x" : namebuf[i - 1], i);
		v[i] = (struct dbq_node){.idx = i, .name = namebuf[i], .kind = "op", .op = i == 1 ? "mul" : "add",
					 .args = argbuf[i], .dtype = i == nops ? "float64" : "float32",
					 .shape = "[2, 3]", .file = "prog.tj", .line = i == 1 ? 6 : 2, .col = 9,
					 .user_stack = i == 1 ? "prog.tj:2 in f\nprog.tj:6 in helper" : NULL};
	}
	v[nops + 1] = (struct dbq_node){.idx = nops + 1, .name = "output", .kind = "output", .args = namebuf[nops]};
	return v;
}

static Agraph_t *graph_of(int nops, int max_nodes, bool brk)
{
	int n;
	struct dbq_node *nodes = chain(nops, &n);
	struct dbq_graph gr = {.id = 7, .label = "0/0", .stage = "captured", .name = "f", .op_count = nops};
	if (brk) {
		gr.break_code = "TJB001";
		gr.break_message = "call to print (side effect)";
		gr.break_file = "prog.tj";
		gr.break_line = 3;
	}
	struct viz_graph_rows r = {&gr, nodes, n, "prog.tj", 1, "prog.tj", prog, NULL, 0, NULL};
	Agraph_t *g = viz_graph_view(&r, max_nodes);
	free(nodes);
	return g;
}

static const char *label_of(Agraph_t *g, const char *node)
{
	Agnode_t *v = agnode(g, (char *)node, 0);
	ck_assert_msg(v != NULL, "no node %s", node);
	return agget(v, "label");
}

static int edges_of(Agraph_t *g)
{
	int k = 0;
	for (Agnode_t *n = agfstnode(g); n; n = agnxtnode(g, n))
		for (Agedge_t *e = agfstout(g, n); e; e = agnxtout(g, e))
			k++;
	return k;
}

START_TEST(test_graph_view)
{
	Agraph_t *g = graph_of(3, 0, true);
	/* x, mul, add_2, add_3, return, graph-break */
	ck_assert_int_eq(agnnodes(g), 6);
	ck_assert_str_eq(agget(g, "label"), "graph 0/0 f (prog.tj:1) \xc2\xb7 3 ops");
	ck_assert_str_eq(label_of(g, "x"), "x: f32[2, 3]\\ninput L['x']");
	ck_assert_str_eq(label_of(g, "mul"), "mul: f32[2, 3] = mul(x, 1)\\nprog.tj:6  return t * 2");
	ck_assert_str_eq(label_of(g, "add_3"), "add_3: f64[2, 3] = add(add_2, 3)\\nprog.tj:2  y = helper(x) + 1");
	ck_assert_str_eq(label_of(g, "return"), "output\\nreturn (add_3,)");
	ck_assert_str_eq(label_of(g, "graph-break"),
			 "TJB001 graph break: call to print (side effect)\\nprog.tj:3  print(y)");
	ck_assert_str_eq(agget(agnode(g, "graph-break", 0), "shape"), "octagon");
	ck_assert_str_eq(agget(agnode(g, "add_3", 0), "peripheries"), "2");
	ck_assert_str_eq(agget(agnode(g, "add_2", 0), "peripheries"), "");
	/* x->mul, mul->add_2, add_2->add_3, add_3->return, return->graph-break */
	ck_assert_int_eq(edges_of(g), 5);
	Agedge_t *e = agedge(g, agnode(g, "add_2", 0), agnode(g, "add_3", 0), NULL, 0);
	ck_assert_ptr_nonnull(e);
	ck_assert_str_eq(agget(e, "label"), "f32[2, 3]");
	e = agedge(g, agnode(g, "add_3", 0), agnode(g, "return", 0), NULL, 0);
	ck_assert_str_eq(agget(e, "label"), "f64[2, 3]");
	/* the inlined op in its function's cluster */
	Agraph_t *c = agsubg(g, "cluster_helper", 0);
	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq(agnnodes(c), 1);
	ck_assert_ptr_nonnull(agnode(c, "mul", 0));
	ck_assert_str_eq(agget(c, "label"), "helper (inlined)");
	agclose(g);
}
END_TEST

/* a cluster per kernel with the nodes it fused, the kernel's cluster
 * before an inlined function's; a node no kernel names stays outside */
START_TEST(test_graph_kernels)
{
	int n;
	struct dbq_node *nodes = chain(4, &n);
	struct dbq_graph gr = {.id = 7, .label = "0/0", .stage = "aot_forward", .name = "f", .op_count = 4};
	struct dbq_kernel ks[] = {
		{.name = "k_1", .kind = "pointwise", .fused_nodes = "mul, add_2", .cache_hit = 0},
		{.name = "k_2", .kind = "reduction", .fused_nodes = "add_4, nothere", .cache_hit = 1},
	};
	struct viz_graph_rows r = {&gr, nodes, n, "prog.tj", 1, "prog.tj", prog, ks, 2, NULL};
	Agraph_t *g = viz_graph_view(&r, 0);
	free(nodes);
	ck_assert_str_eq(agget(g, "label"), "graph 0/0 f (prog.tj:1) [aot_forward] \xc2\xb7 4 ops \xc2\xb7 2 kernels");
	Agraph_t *c = agsubg(g, "cluster_kernel-0", 0);
	ck_assert_ptr_nonnull(c);
	ck_assert_str_eq(agget(c, "label"), "k_1 (pointwise)");
	ck_assert_int_eq(agnnodes(c), 2);
	ck_assert_ptr_nonnull(agnode(c, "mul", 0));
	ck_assert_ptr_nonnull(agnode(c, "add_2", 0));
	c = agsubg(g, "cluster_kernel-1", 0);
	ck_assert_ptr_nonnull(c);
	ck_assert_str_eq(agget(c, "label"), "k_2 (reduction, cached)");
	ck_assert_int_eq(agnnodes(c), 1);
	ck_assert_ptr_nonnull(agnode(c, "add_4", 0));
	/* mul is inlined, but computed by k_1: no helper cluster */
	ck_assert_ptr_null(agsubg(g, "cluster_helper", 0));
	ck_assert_int_eq(agnnodes(g), 6);
	/* x -> mul -> add_2 -> add_3 -> add_4 -> return */
	ck_assert_int_eq(edges_of(g), 5);
	agclose(g);
}
END_TEST

/* the ops the minifier kept: filled red, named in the title; an input
 * marked stays an input */
START_TEST(test_graph_culprit)
{
	int n;
	struct dbq_node *nodes = chain(3, &n);
	struct dbq_graph gr = {.id = 7, .label = "0/0", .stage = "minified", .name = "f", .op_count = 3};
	bool culprit[5] = {true, false, true, true, false};
	struct viz_graph_rows r = {&gr, nodes, n, "prog.tj", 1, "prog.tj", prog, NULL, 0, NULL};
	r.culprit = culprit;
	Agraph_t *g = viz_graph_view(&r, 0);
	free(nodes);
	ck_assert_str_eq(agget(g, "label"),
			 "graph 0/0 f (prog.tj:1) [minified] \xc2\xb7 3 ops \xc2\xb7 culprit: add_2, add_3");
	ck_assert_str_eq(agget(agnode(g, "add_2", 0), "color"), "red");
	ck_assert_str_eq(agget(agnode(g, "add_2", 0), "style"), "filled,bold");
	ck_assert_str_eq(agget(agnode(g, "add_3", 0), "color"), "red");
	ck_assert_str_eq(agget(agnode(g, "mul", 0), "color"), "");
	ck_assert_str_eq(agget(agnode(g, "x", 0), "color"), "");
	ck_assert_str_eq(agget(agnode(g, "x", 0), "shape"), "invhouse");
	agclose(g);
}
END_TEST

/* --max-nodes never cuts the culprit: its ops stay wherever they are,
 * the first others fill the rest of the N, the note counts the others */
START_TEST(test_graph_cut_keeps_culprit)
{
	int n;
	struct dbq_node *nodes = chain(6, &n);
	struct dbq_graph gr = {.id = 7, .label = "0/0", .stage = "captured", .name = "f", .op_count = 6};
	bool culprit[8] = {false, false, false, false, false, true, false, false}; /* add_5 */
	struct viz_graph_rows r = {&gr, nodes, n, "prog.tj", 1, "prog.tj", prog, NULL, 0, NULL};
	r.culprit = culprit;
	Agraph_t *g = viz_graph_view(&r, 1);
	ck_assert_str_eq(agget(g, "label"), "graph 0/0 f (prog.tj:1) \xc2\xb7 6 ops \xc2\xb7 culprit: add_5");
	ck_assert_ptr_nonnull(agnode(g, "add_5", 0));
	ck_assert_str_eq(agget(agnode(g, "add_5", 0), "color"), "red");
	ck_assert_ptr_null(agnode(g, "mul", 0));
	/* x, add_5, return, the note */
	ck_assert_int_eq(agnnodes(g), 4);
	ck_assert_str_eq(label_of(g, "not-shown"), "\xe2\x80\xa6 5 more ops not shown (--max-nodes 1)");
	agclose(g);

	g = viz_graph_view(&r, 3); /* add_5 and the first two others */
	ck_assert_ptr_nonnull(agnode(g, "mul", 0));
	ck_assert_ptr_nonnull(agnode(g, "add_2", 0));
	ck_assert_ptr_null(agnode(g, "add_3", 0));
	ck_assert_ptr_nonnull(agnode(g, "add_5", 0));
	ck_assert_str_eq(label_of(g, "not-shown"), "\xe2\x80\xa6 3 more ops not shown (--max-nodes 3)");
	agclose(g);

	culprit[2] = true; /* add_2 and add_5: more culprit ops than N, all drawn */
	g = viz_graph_view(&r, 1);
	ck_assert_ptr_nonnull(agnode(g, "add_2", 0));
	ck_assert_ptr_nonnull(agnode(g, "add_5", 0));
	ck_assert_ptr_null(agnode(g, "mul", 0));
	ck_assert_str_eq(label_of(g, "not-shown"), "\xe2\x80\xa6 4 more ops not shown (--max-nodes 1)");
	agclose(g);
	free(nodes);
}
END_TEST

START_TEST(test_graph_cut)
{
	Agraph_t *g = graph_of(50, 10, false);
	/* x, 10 ops, return, the note */
	ck_assert_int_eq(agnnodes(g), 13);
	ck_assert_ptr_nonnull(agnode(g, "add_10", 0));
	ck_assert_ptr_null(agnode(g, "add_11", 0));
	ck_assert_str_eq(label_of(g, "not-shown"), "\xe2\x80\xa6 40 more ops not shown (--max-nodes 10)");
	/* 10 chain edges (x->mul ... add_9->add_10), note -> return */
	ck_assert_int_eq(edges_of(g), 11);
	agclose(g);

	g = graph_of(50, 49, false);
	ck_assert_str_eq(label_of(g, "not-shown"), "\xe2\x80\xa6 1 more op not shown (--max-nodes 49)");
	agclose(g);
	/* exactly as many as the limit: nothing cut, no note */
	g = graph_of(50, 50, false);
	ck_assert_ptr_null(agnode(g, "not-shown", 0));
	ck_assert_int_eq(agnnodes(g), 52);
	agclose(g);
	g = graph_of(50, 0, false);
	ck_assert_int_eq(agnnodes(g), 52);
	agclose(g);
}
END_TEST

START_TEST(test_label_escapes)
{
	struct dbq_node nodes[] = {
		{.idx = 0, .name = "s", .kind = "input", .args = "L['a\\\\b']", .dtype = "bool", .shape = "[]"},
		{.idx = 1, .name = "output", .kind = "output", .args = "s"},
	};
	struct dbq_graph gr = {.id = 1, .label = "0/0", .stage = "aot_forward", .name = "f", .op_count = 0};
	struct viz_graph_rows r = {&gr, nodes, 2, NULL, 0, NULL, NULL, NULL, 0, NULL};
	Agraph_t *g = viz_graph_view(&r, 0);
	/* a backslash is doubled: Graphviz reads \\ as one */
	ck_assert_str_eq(label_of(g, "s"), "s: b8[]\\ninput L['a\\\\\\\\b']");
	ck_assert_str_eq(agget(g, "label"), "graph 0/0 f [aot_forward] \xc2\xb7 0 ops");
	agclose(g);
}
END_TEST

/* ---- the run view ---- */

static struct dbq_frame frames[] = {
	{.frame_index = 0, .function = "f", .file = "prog.tj", .line = 1, .calls = 4, .cache_hits = 1, .compiles = 3},
	{.frame_index = 1, .function = "f", .file = "prog.tj", .line = 1, .resume_pc = 9, .resume_line = 3,
	 .calls = 4, .cache_hits = 3, .compiles = 1},
	{.frame_index = 2, .function = "slow", .file = "prog.tj", .line = 7, .eager_calls = 2,
	 .eager_reason = "disabled"},
};

static struct dbq_compile compile_row(int id, int f, int n, char *outcome)
{
	static char labels[16][8];
	snprintf(labels[id], sizeof labels[id], "%d/%d", f, n);
	return (struct dbq_compile){.id = id, .frame_index = f, .compile_index = n, .label = labels[id],
				    .reason = n ? "recompile" : "first", .backend = "eager", .outcome = outcome,
				    .op_count = 2, .total_ms = 0.5};
}

/* finished false: a run still running or killed */
static Agraph_t *run_of_ended(int max_nodes, bool finished)
{
	static struct dbq_run run = {.id = 3, .program = "prog.tj", .source_text = prog};
	run.finished = finished;
	/* 0/0 breaks, 1/0 resumes, 0/1 and 0/2 recompile and break at the same place */
	struct dbq_compile c[] = {compile_row(1, 0, 0, "graph_break"), compile_row(2, 1, 0, "ok"),
				  compile_row(3, 0, 1, "graph_break"), compile_row(4, 0, 2, "graph_break")};
	static struct dbq_graph g[4];
	for (int i = 0; i < 4; i++) {
		g[i] = (struct dbq_graph){.id = 10 + i, .label = c[i].label, .stage = "captured", .op_count = 2};
		if (strcmp(c[i].outcome, "graph_break") == 0) {
			g[i].break_code = "TJB001";
			g[i].break_message = "call to print (side effect)";
			g[i].break_file = "prog.tj";
			g[i].break_line = 3;
			g[i].break_col = 5;
		}
	}
	struct viz_compile_more more[] = {{&g[0], NULL},
					  {&g[1], NULL},
					  {&g[2], "L['n'] == 0 (got 1)"},
					  {&g[3], "L['n'] == 1 (got 2)"}};
	struct viz_run_rows r = {&run, frames, 3, c, 4, more};
	return viz_run_view(&r, max_nodes);
}

static Agraph_t *run_of(int max_nodes)
{
	return run_of_ended(max_nodes, true);
}

START_TEST(test_run_view)
{
	Agraph_t *g = run_of(0);
	ck_assert_str_eq(agget(g, "label"), "run 3 \xc2\xb7 prog.tj \xc2\xb7 4 compiles");
	agclose(g);
	g = run_of_ended(0, false);
	ck_assert_str_eq(agget(g, "label"),
			 "run 3 \xc2\xb7 prog.tj \xc2\xb7 4 compiles \xc2\xb7 did not finish (killed)");
	agclose(g);
	g = run_of(0);
	ck_assert_str_eq(label_of(g, "0/1"), "0/1 recompile (eager)\\ngraph_break \xc2\xb7 2 ops \xc2\xb7 0.50 ms");
	ck_assert_str_eq(label_of(g, "graph 10"), "graph 10 \xc2\xb7 2 ops");
	ck_assert_str_eq(label_of(g, "break 0/0"), "TJB001 call to print (side effect)\\nprog.tj:3  print(y)");
	ck_assert_str_eq(label_of(g, "frame 2 eager"), "ran eagerly (disabled)\\n2 calls");
	Agraph_t *c0 = agsubg(g, "cluster_frame0", 0);
	ck_assert_ptr_nonnull(c0);
	ck_assert_str_eq(agget(c0, "label"), "frame 0 \xc2\xb7 f (prog.tj:1)\\n4 calls \xc2\xb7 1 cache hit");
	ck_assert_str_eq(agget(agsubg(g, "cluster_frame1", 0), "label"),
			 "frame 1 \xc2\xb7 f resumed at prog.tj:3\\n4 calls \xc2\xb7 3 cache hits");
	Agraph_t *rank = agsubg(c0, "compiles_frame0", 0);
	ck_assert_ptr_nonnull(rank);
	ck_assert_str_eq(agget(rank, "rank"), "same");
	ck_assert_int_eq(agnnodes(rank), 3);
	/* the recompiles' side branches, labelled with the failing guard */
	Agedge_t *e = agedge(g, agnode(g, "0/0", 0), agnode(g, "0/1", 0), NULL, 0);
	ck_assert_ptr_nonnull(e);
	ck_assert_str_eq(agget(e, "label"), "L['n'] == 0 (got 1)");
	e = agedge(g, agnode(g, "0/1", 0), agnode(g, "0/2", 0), NULL, 0);
	ck_assert_str_eq(agget(e, "label"), "L['n'] == 1 (got 2)");
	/* each break at the place resumes in frame 1 */
	for (int i = 0; i < 3; i++) {
		char name[32];
		snprintf(name, sizeof name, "break 0/%d", i);
		e = agedge(g, agnode(g, name, 0), agnode(g, "1/0", 0), NULL, 0);
		ck_assert_msg(e != NULL, "no edge %s -> 1/0", name);
		ck_assert_str_eq(agget(e, "label"), "resume");
		ck_assert_str_eq(agget(e, "lhead"), "cluster_frame1");
	}
	ck_assert_ptr_null(agnode(g, "not-shown", 0));
	agclose(g);
}
END_TEST

START_TEST(test_run_cut)
{
	Agraph_t *g = run_of(1);
	ck_assert_ptr_nonnull(agnode(g, "0/0", 0));
	ck_assert_ptr_null(agnode(g, "1/0", 0));
	ck_assert_ptr_null(agnode(g, "0/1", 0));
	ck_assert_ptr_null(agsubg(g, "cluster_frame1", 0)); /* none of its compiles is shown */
	ck_assert_ptr_nonnull(agsubg(g, "cluster_frame2", 0)); /* it never compiled */
	ck_assert_str_eq(label_of(g, "not-shown"), "\xe2\x80\xa6 3 more compiles not shown (--max-nodes 1)");
	agclose(g);
	g = run_of(3);
	ck_assert_str_eq(label_of(g, "not-shown"), "\xe2\x80\xa6 1 more compile not shown (--max-nodes 3)");
	ck_assert_ptr_nonnull(agedge(g, agnode(g, "break 0/1", 0), agnode(g, "1/0", 0), NULL, 0));
	agclose(g);
	g = run_of(4);
	ck_assert_ptr_null(agnode(g, "not-shown", 0));
	agclose(g);
}
END_TEST

/* ---- output ---- */

/* several renders in one process, as the TUI makes them (one Graphviz
 * context per process: see viz/render.c) */
START_TEST(test_render)
{
	Agraph_t *g = graph_of(3, 0, true);
	char *out = NULL, *err = NULL;
	size_t len = 0;
	ck_assert_int_eq(viz_render(g, "dot", &out, &len, &err), 0);
	ck_assert(len > 0 && strncmp(out, "digraph \"graph 7\" {", 19) == 0);
	free(out);
	ck_assert_int_eq(viz_render(g, "svg", &out, &len, &err), 0);
	ck_assert_msg(strstr(out, "<svg") != NULL, "not SVG");
	free(out);
	ck_assert_int_eq(viz_render(g, "png", &out, &len, &err), 0);
	ck_assert(len > 8 && memcmp(out, "\x89PNG\r\n\x1a\n", 8) == 0);
	free(out);
	ck_assert_int_eq(viz_render(g, "pdf", &out, &len, &err), 0);
	ck_assert(len > 5 && memcmp(out, "%PDF-", 5) == 0);
	free(out);
	ck_assert_int_eq(viz_render(g, "gif", &out, &len, &err), -1);
	ck_assert_str_eq(err, "unknown format 'gif': expected dot, svg, png or pdf");
	free(err);
	err = NULL;
	ck_assert_int_eq(viz_output(g, "dot", "/nonexistent/dir/g.dot", false, &err), -1);
	ck_assert_str_eq(err, "cannot write '/nonexistent/dir/g.dot': No such file or directory");
	free(err);
	agclose(g);
	ck_assert(viz_format_known("svg") && !viz_format_known("SVG") && !viz_format_known(NULL));
	ck_assert(viz_format_binary("png") && !viz_format_binary("svg"));
}
END_TEST

static Suite *viz_suite(void)
{
	Suite *s = suite_create("viz");
	TCase *tc = tcase_create("args");
	tcase_add_test(tc, test_args_names);
	tcase_add_test(tc, test_args_not_names);
	tcase_add_test(tc, test_args_only_earlier);
	tcase_add_test(tc, test_names_find);
	suite_add_tcase(s, tc);
	tc = tcase_create("graph");
	tcase_add_test(tc, test_graph_view);
	tcase_add_test(tc, test_graph_cut);
	tcase_add_test(tc, test_graph_kernels);
	tcase_add_test(tc, test_graph_culprit);
	tcase_add_test(tc, test_graph_cut_keeps_culprit);
	tcase_add_test(tc, test_label_escapes);
	suite_add_tcase(s, tc);
	tc = tcase_create("run");
	tcase_add_test(tc, test_run_view);
	tcase_add_test(tc, test_run_cut);
	suite_add_tcase(s, tc);
	tc = tcase_create("render");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_render);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(viz_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
