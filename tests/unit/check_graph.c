/* check_graph.c - the graph IR: node names as FX makes them, types and
 * arguments as text, the listing of LANGUAGE.md §7 to the byte, copies,
 * the users of each node, editing as passes do, the verifier, and the
 * interpreter that the eager backend runs. */
#include <check.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "backends.h"
#include "graph.h"
#include "ops.h"
#include "prelude.h"
#include "vm.h"

static struct source *toy;

static void setup(void)
{
	const char *text = "def toy_example(a, b):\n"
			   "    x = a / (abs(a) + 1)\n"
			   "    print(\"woo\")\n";
	toy = source_from_string("toy.tj", text, strlen(text));
}

static void teardown(void)
{
	source_free(toy);
	toy = NULL;
}

static struct user_frame *at(int line, int col)
{
	struct user_frame *f = calloc(1, sizeof *f);
	f->src = toy;
	f->line = line;
	f->col = col;
	f->function = "toy_example";
	return f;
}

static int add_input(struct graph *g, const char *name, const char *source, int64_t n)
{
	struct gnode nd;
	memset(&nd, 0, sizeof nd);
	nd.kind = GN_INPUT;
	nd.name = graph_fresh_name(g, name);
	nd.source = strdup(source);
	nd.is_tensor = true;
	nd.dt = DT_FLOAT32;
	nd.ndim = 1;
	nd.shape[0].value = n;
	nd.shape[0].sym = -1;
	return graph_add(g, &nd);
}

static struct garg node_arg(int i)
{
	struct garg a;
	memset(&a, 0, sizeof a);
	a.kind = GARG_NODE;
	a.node = i;
	return a;
}

static struct garg const_arg(value v)
{
	struct garg a;
	memset(&a, 0, sizeof a);
	a.kind = GARG_CONST;
	a.constant = v;
	return a;
}

static int add_op(struct graph *g, int op, int nargs, const struct garg *args, int line, int64_t n)
{
	struct gnode nd;
	memset(&nd, 0, sizeof nd);
	nd.kind = GN_OP;
	nd.op = op;
	nd.name = graph_fresh_name(g, ops_table[op].name);
	nd.nargs = nargs;
	nd.args = calloc((size_t)nargs, sizeof *nd.args);
	memcpy(nd.args, args, sizeof *nd.args * (size_t)nargs);
	nd.is_tensor = true;
	nd.dt = DT_FLOAT32;
	nd.ndim = n >= 0 ? 1 : 0;
	nd.shape[0].value = n;
	nd.shape[0].sym = -1;
	nd.nstack = 1;
	nd.stack = at(line, 9);
	return graph_add(g, &nd);
}

/* the graph of LANGUAGE.md §7 */
static struct graph *toy_graph(void)
{
	struct graph *g = graph_new("toy_example", "0/0", toy, 1, STAGE_CAPTURED);
	int a = add_input(g, "a", "L['a']", 10);
	struct garg x1[1] = {node_arg(a)};
	int abs1 = add_op(g, OPS_abs, 1, x1, 2, 10);
	struct garg x2[2] = {node_arg(abs1), const_arg(val_int(1))};
	int add = add_op(g, OPS_add, 2, x2, 2, 10);
	struct garg x3[2] = {node_arg(a), node_arg(add)};
	int div = add_op(g, OPS_div, 2, x3, 2, 10);
	g->noutputs = 1;
	g->outputs = malloc(sizeof(int));
	g->outputs[0] = div;
	return g;
}

START_TEST(test_print_language_section_7)
{
	struct graph *g = toy_graph();
	struct strbuf sb = STRBUF_INIT;
	graph_print(g, &sb);
	ck_assert_str_eq(sb.buf, "graph 0/0 toy_example (toy.tj:1) \xc2\xb7 3 ops\n"
				 "  a: f32[10] = input L['a']\n"
				 "  abs_1: f32[10] = abs(a)                  # toy.tj:2  x = a / (abs(a) + 1)\n"
				 "  add: f32[10] = add(abs_1, 1)             # toy.tj:2\n"
				 "  div: f32[10] = div(a, add)               # toy.tj:2\n"
				 "  return (div,)\n");
	ck_assert_int_eq(graph_op_count(g), 3);
	sb_release(&sb);
	graph_free(g);
}
END_TEST

START_TEST(test_fresh_names)
{
	struct graph *g = graph_new("f", "0/0", NULL, 1, STAGE_CAPTURED);
	const char *bases[] = {"abs", "abs", "add", "add", "add", "x_1", "x", "x", "sum", "2d", "a-b", "max"};
	const char *want[] = {"abs_1", "abs_2", "add", "add_1", "add_2", "x_1", "x", "x_2", "sum_1", "_2d", "a_b", "max_1"};
	for (size_t i = 0; i < sizeof bases / sizeof bases[0]; i++) {
		char *n = graph_fresh_name(g, bases[i]);
		ck_assert_msg(strcmp(n, want[i]) == 0, "%s: got %s, want %s", bases[i], n, want[i]);
	}
	graph_free(g);
}
END_TEST

/* Enough names to regrow the name table many times: each one must come
 * back as asked (under ASan, a name read from a slot of the table before
 * it grew is a use after free). */
START_TEST(test_fresh_names_many)
{
	struct graph *g = graph_new("f", "0/0", NULL, 1, STAGE_CAPTURED);
	for (int i = 0; i < 3000; i++) {
		char base[32], want[40];
		snprintf(base, sizeof base, "v%d", i);
		ck_assert_str_eq(graph_fresh_name(g, base), base);
		snprintf(want, sizeof want, "%s_1", base);
		ck_assert_str_eq(graph_fresh_name(g, base), want);
	}
	graph_free(g);
}
END_TEST

START_TEST(test_types_and_args)
{
	struct gnode n;
	memset(&n, 0, sizeof n);
	struct strbuf sb = STRBUF_INIT;
	n.is_tensor = true;
	n.dt = DT_INT64;
	graph_format_type(&n, &sb);
	ck_assert_str_eq(sb.buf, "i64[]");
	sb.len = 0;
	n.dt = DT_BOOL;
	n.ndim = 2;
	n.shape[0] = (struct sym_size){2, -1};
	n.shape[1] = (struct sym_size){3, -1};
	graph_format_type(&n, &sb);
	ck_assert_str_eq(sb.buf, "b8[2, 3]");
	sb.len = 0;
	n.dt = DT_FLOAT64;
	n.shape[0] = (struct sym_size){7, 0};
	graph_format_type(&n, &sb);
	ck_assert_str_eq(sb.buf, "f64[s0, 3]");

	/* defaults are left out; what follows a left-out argument goes by name */
	struct graph *g = graph_new("f", "0/0", toy, 1, STAGE_CAPTURED);
	int x = add_input(g, "x", "L['x']", 4);
	struct garg s1[4] = {node_arg(x), const_arg(val_none()), const_arg(val_bool(false)), const_arg(val_none())};
	int sum = add_op(g, OPS_sum, 4, s1, 2, -1);
	struct garg s2[4] = {node_arg(x), const_arg(val_int(0)), const_arg(val_bool(true)), const_arg(val_none())};
	int sum2 = add_op(g, OPS_sum, 4, s2, 2, -1);
	struct garg s3[4] = {node_arg(x), const_arg(val_none()), const_arg(val_bool(true)), const_arg(val_none())};
	int sum3 = add_op(g, OPS_sum, 4, s3, 2, -1);
	struct garg cat[2];
	memset(cat, 0, sizeof cat);
	cat[0].kind = GARG_LIST;
	cat[0].n = 2;
	cat[0].items = calloc(2, sizeof *cat[0].items);
	cat[0].items[0] = node_arg(x);
	cat[0].items[1] = node_arg(sum);
	cat[1] = const_arg(val_int(0));
	int c = add_op(g, OPS_cat, 2, cat, 2, 8);
	const char *want[] = {"x", "x, 0, True", "x, keepdim=True", "[x, sum_1]"};
	int nodes[] = {sum, sum2, sum3, c};
	for (int i = 0; i < 4; i++) {
		sb.len = 0;
		graph_format_args(g, &g->nodes[nodes[i]], &sb);
		ck_assert_str_eq(sb.buf, want[i]);
	}
	sb_release(&sb);
	graph_free(g);
}
END_TEST

START_TEST(test_copy_and_truncate)
{
	struct graph *g = toy_graph();
	struct graph *c = graph_copy(g);
	graph_truncate(g, 2);
	ck_assert_int_eq(g->nnodes, 2);
	struct strbuf a = STRBUF_INIT;
	graph_print(c, &a);
	ck_assert_ptr_nonnull(strstr(a.buf, "div: f32[10] = div(a, add)"));
	/* names stay taken in the copy */
	char *n = graph_fresh_name(c, "add");
	ck_assert_str_eq(n, "add_1");
	sb_release(&a);
	graph_free(g);
	graph_free(c);
}
END_TEST

START_TEST(test_interpret)
{
	struct vm *vm = prelude_vm_new();
	struct graph *g = toy_graph();
	tensor *a = tensor_arange(-2, 8, 1, DT_FLOAT32);
	value out;
	ck_assert_int_eq(graph_interpret(vm, g, &a, &out), 0);
	ck_assert_int_eq(out.tag, VAL_TENSOR);
	tensor *r = val_as_tensor(out);
	ck_assert_int_eq(r->numel, 10);
	for (int i = 0; i < 10; i++) {
		double x = i - 2;
		ck_assert_double_eq_tol(tensor_get_double(r, i), x / (abs((int)x) + 1), 1e-6);
	}
	val_decref(out);

	/* a shape error in a node is reported, nothing leaks */
	tensor *b = tensor_arange(0, 3, 1, DT_FLOAT32);
	struct graph *h = graph_new("h", "1/0", toy, 1, STAGE_CAPTURED);
	int x = add_input(h, "x", "L['x']", 3);
	struct garg bad[2] = {node_arg(x), const_arg(val_tensor(tensor_zeros(DT_FLOAT32, 1, (int64_t[]){4})))};
	int add = add_op(h, OPS_add, 2, bad, 2, 3);
	h->noutputs = 1;
	h->outputs = malloc(sizeof(int));
	h->outputs[0] = add;
	ck_assert_int_eq(graph_interpret(vm, h, &b, &out), -1);
	char *msg = tj_error_take();
	ck_assert_ptr_nonnull(strstr(msg, "broadcast"));
	free(msg);

	/* max with a dim: a tuple, its items by GN_GETITEM */
	struct graph *m = graph_new("m", "2/0", toy, 1, STAGE_CAPTURED);
	x = add_input(m, "x", "L['x']", 3);
	struct garg mx[3] = {node_arg(x), const_arg(val_int(0)), const_arg(val_bool(false))};
	int t = add_op(m, OPS_max, 3, mx, 2, 3);
	m->nodes[t].is_tensor = false;
	m->nodes[t].nouts = 2;
	struct gnode gi;
	memset(&gi, 0, sizeof gi);
	gi.kind = GN_GETITEM;
	gi.name = graph_fresh_name(m, "getitem");
	gi.index = 1;
	gi.nargs = 1;
	gi.args = calloc(1, sizeof *gi.args);
	gi.args[0] = node_arg(t);
	int idx = graph_add(m, &gi);
	m->noutputs = 1;
	m->outputs = malloc(sizeof(int));
	m->outputs[0] = idx;
	ck_assert_int_eq(graph_interpret(vm, m, &b, &out), 0);
	ck_assert_int_eq(val_as_tensor(out)->dt, DT_INT64);
	ck_assert_int_eq(tensor_get_int(val_as_tensor(out), 0), 2);
	val_decref(out);
	struct strbuf sb = STRBUF_INIT;
	graph_print(m, &sb);
	ck_assert_ptr_nonnull(strstr(sb.buf, "  max_1: tuple = max(x, 0)"));
	ck_assert_ptr_nonnull(strstr(sb.buf, "  getitem = max_1[1]\n"));
	sb_release(&sb);

	/* the eager backend is the interpreter */
	const struct backend *eager = backend_find("eager");
	ck_assert_ptr_nonnull(eager);
	struct compile_ctx cc;
	compile_ctx_init(&cc, NULL, NULL, NULL, "0/0");
	void *compiled = eager->compile(&cc, g);
	ck_assert_int_eq(eager->run(compiled, vm, &a, &out), 0);
	val_decref(out);
	eager->release(compiled);
	ck_assert_ptr_null(backend_find("nope"));
	msg = tj_error_take();
	ck_assert_str_eq(msg, "unknown backend 'nope' (valid: eager, aot_eager, inductor, relu_compile_error_TESTING_ONLY, "
			      "relu_runtime_error_TESTING_ONLY, relu_accuracy_error_TESTING_ONLY)");
	free(msg);

	tensor_decref(a);
	tensor_decref(b);
	graph_free(g);
	graph_free(h);
	graph_free(m);
	vm_free(vm);
}
END_TEST

/* a symbolic size argument takes its value from the input that binds it */
START_TEST(test_interpret_symbolic_size)
{
	struct vm *vm = prelude_vm_new();
	struct graph *g = graph_new("f", "0/1", toy, 1, STAGE_CAPTURED);
	struct gnode in;
	memset(&in, 0, sizeof in);
	in.kind = GN_INPUT;
	in.name = graph_fresh_name(g, "x");
	in.source = strdup("L['x']");
	in.is_tensor = true;
	in.dt = DT_FLOAT32;
	in.ndim = 2;
	in.shape[0] = (struct sym_size){3, 0};
	in.shape[1] = (struct sym_size){4, -1};
	int x = graph_add(g, &in);
	struct garg shape[2];
	memset(shape, 0, sizeof shape);
	shape[0].kind = GARG_SYM;
	shape[0].sym = 0;
	shape[1] = const_arg(val_int(-1));
	struct garg args[2] = {node_arg(x), {.kind = GARG_TUPLE, .n = 2, .items = malloc(sizeof shape)}};
	memcpy(args[1].items, shape, sizeof shape);
	int r = add_op(g, OPS_reshape, 2, args, 2, 3);
	g->nodes[r].ndim = 2;
	g->nodes[r].shape[0] = (struct sym_size){3, 0};
	g->nodes[r].shape[1] = (struct sym_size){4, -1};
	g->nsyms = 1;
	g->noutputs = 1;
	g->outputs = malloc(sizeof(int));
	g->outputs[0] = r;
	struct strbuf sb = STRBUF_INIT;
	graph_print(g, &sb);
	ck_assert_ptr_nonnull(strstr(sb.buf, "  reshape: f32[s0, 4] = reshape(x, (s0, -1))"));
	sb_release(&sb);
	/* the copy keeps it */
	struct graph *c = graph_copy(g);
	tensor *a = tensor_arange(0, 20, 1, DT_FLOAT32);
	tensor *a5 = tensor_reshape(a, 2, (int64_t[]){5, 4});
	ck_assert_ptr_nonnull(a5);
	value out;
	ck_assert_int_eq(graph_interpret(vm, c, &a5, &out), 0);
	ck_assert_int_eq(val_as_tensor(out)->ndim, 2);
	ck_assert_int_eq(val_as_tensor(out)->shape[0], 5);
	ck_assert_int_eq(val_as_tensor(out)->shape[1], 4);
	val_decref(out);
	/* no input binds s1: an error, nothing leaks */
	c->nodes[r].args[1].items[0].sym = 1;
	c->nsyms = 2;
	ck_assert_int_eq(graph_interpret(vm, c, &a5, &out), -1);
	char *msg = tj_error_take();
	ck_assert_str_eq(msg, "graph symbol s1 is bound by no input");
	free(msg);
	tensor_decref(a);
	tensor_decref(a5);
	graph_free(g);
	graph_free(c);
	vm_free(vm);
}
END_TEST

START_TEST(test_testing_backends)
{
	struct vm *vm = prelude_vm_new();
	struct graph *g = graph_new("r", "0/0", toy, 1, STAGE_CAPTURED);
	int x = add_input(g, "x", "L['x']", 3);
	struct garg r1[1] = {node_arg(x)};
	int relu = add_op(g, OPS_relu, 1, r1, 2, 3);
	g->noutputs = 1;
	g->outputs = malloc(sizeof(int));
	g->outputs[0] = relu;
	tensor *in = tensor_arange(-1, 2, 1, DT_FLOAT32);
	value out;

	struct compile_ctx cc;
	compile_ctx_init(&cc, NULL, NULL, NULL, "0/0");
	const struct backend *b = backend_find("relu_compile_error_TESTING_ONLY");
	ck_assert_ptr_null(b->compile(&cc, g));
	/* a compiler that fails: raised, never a fallback */
	ck_assert(!cc.unsupported);
	ck_assert_ptr_null(b->fallback);
	free(tj_error_take());

	b = backend_find("relu_runtime_error_TESTING_ONLY");
	void *c = b->compile(&cc, g);
	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq(b->run(c, vm, &in, &out), -1);
	free(tj_error_take());
	b->release(c);

	b = backend_find("relu_accuracy_error_TESTING_ONLY");
	c = b->compile(&cc, g);
	ck_assert_int_eq(b->run(c, vm, &in, &out), 0);
	/* relu(-1) is 0, the broken relu says x + 1 = 0; relu(1) = 1 but 2 */
	ck_assert_double_eq_tol(tensor_get_double(val_as_tensor(out), 2), 2.0, 1e-9);
	val_decref(out);
	b->release(c);

	tensor_decref(in);
	graph_free(g);
	vm_free(vm);
}
END_TEST

/* ---- what passes use ---- */

static const char *listing(const struct graph *g)
{
	static struct strbuf sb = STRBUF_INIT;
	sb.len = 0;
	graph_print(g, &sb);
	return sb.buf;
}

/* f(a) on 10 floats from -2, the first element of the result */
static double run_first(struct graph *g, int i)
{
	struct vm *vm = vm_new();
	tensor *a = tensor_arange(-2, 8, 1, DT_FLOAT32);
	value out;
	ck_assert_int_eq(graph_interpret(vm, g, &a, &out), 0);
	double r = tensor_get_double(val_as_tensor(out), i);
	val_decref(out);
	tensor_decref(a);
	vm_free(vm);
	return r;
}

/* a node made for graph_insert, its parts in g's arena; type and user
 * stack from node like (as a decomposition keeps them) */
static struct gnode arena_op(struct graph *g, int op, int nargs, const struct garg *args, int like)
{
	struct gnode nd = g->nodes[like];
	nd.kind = GN_OP;
	nd.op = op;
	nd.name = graph_fresh_name(g, ops_table[op].name);
	nd.nargs = nargs;
	nd.args = graph_alloc(g, sizeof *nd.args * (size_t)nargs);
	memcpy(nd.args, args, sizeof *nd.args * (size_t)nargs);
	return nd;
}

/* an input read late in the trace moves before the ops, the args follow */
START_TEST(test_hoist_inputs)
{
	struct graph *g = graph_new("f", "0/0", toy, 1, STAGE_CAPTURED);
	int a = add_input(g, "a", "L['a']", 10);
	struct garg x1[1] = {node_arg(a)};
	int abs1 = add_op(g, OPS_abs, 1, x1, 2, 10);
	int b = add_input(g, "b", "L['b']", 10);
	struct garg x2[2] = {node_arg(abs1), node_arg(b)};
	int add = add_op(g, OPS_add, 2, x2, 2, 10);
	g->noutputs = 2;
	g->outputs = malloc(sizeof(int) * 2);
	g->outputs[0] = add;
	g->outputs[1] = b;
	graph_hoist_inputs(g);
	ck_assert_str_eq(listing(g), "graph 0/0 f (toy.tj:1) \xc2\xb7 2 ops\n"
				     "  a: f32[10] = input L['a']\n"
				     "  b: f32[10] = input L['b']\n"
				     "  abs_1: f32[10] = abs(a)                  # toy.tj:2  x = a / (abs(a) + 1)\n"
				     "  add: f32[10] = add(abs_1, b)             # toy.tj:2\n"
				     "  return (add, b)\n");
	struct strbuf why = STRBUF_INIT;
	ck_assert_int_eq(graph_verify(g, &why), 0);
	sb_release(&why);
	graph_free(g);
	/* nothing to move in an empty graph */
	g = graph_new("e", "0/0", toy, 1, STAGE_CAPTURED);
	graph_hoist_inputs(g);
	ck_assert_int_eq(g->nnodes, 0);
	graph_free(g);
}
END_TEST

START_TEST(test_users)
{
	struct graph *g = toy_graph(); /* a, abs_1 = abs(a), add = add(abs_1, 1), div = div(a, add) */
	struct graph_users u;
	ck_assert_int_eq(graph_users_build(g, &u), 0);
	ck_assert_int_eq(u.nnodes, 4);
	ck_assert_int_eq(graph_users_count(&u, 0), 2);
	ck_assert_int_eq(u.user[u.first[0]], 1);
	ck_assert_int_eq(u.user[u.first[0] + 1], 3);
	ck_assert_int_eq(graph_users_count(&u, 1), 1);
	ck_assert_int_eq(u.user[u.first[1]], 2);
	ck_assert_int_eq(graph_users_count(&u, 2), 1);
	ck_assert_int_eq(u.user[u.first[2]], 3);
	/* div is read by nothing but returned */
	ck_assert_int_eq(graph_users_count(&u, 3), 0);
	ck_assert_int_eq(u.noutputs[3], 1);
	ck_assert(graph_is_used(&u, 3));
	ck_assert_int_eq(u.noutputs[2], 0);
	graph_users_release(&u);

	/* a node read twice by one reader (mul(x, x), cat([x, x])) counts it once */
	struct garg twice[2] = {node_arg(1), node_arg(1)};
	add_op(g, OPS_mul, 2, twice, 2, 10);
	ck_assert_int_eq(graph_users_build(g, &u), 0);
	ck_assert_int_eq(graph_users_count(&u, 1), 2);
	ck_assert_int_eq(u.user[u.first[1] + 1], 4);
	ck_assert(!graph_is_used(&u, 4));
	graph_users_release(&u);
	graph_free(g);
}
END_TEST

/* the minifier's cut: a node's reads become a new graph input, and what
 * nothing reads any more goes */
START_TEST(test_replace_uses_then_erase)
{
	struct graph *g = toy_graph();
	struct gnode in = g->nodes[0];
	in.name = graph_fresh_name(g, "b");
	in.source = graph_strdup(g, "L['b']");
	ck_assert_int_eq(graph_insert(g, 1, &in), 1);
	/* everything after it moved up, args and outputs with it */
	ck_assert_int_eq(g->outputs[0], 4);
	ck_assert_int_eq(g->nodes[4].args[1].node, 3);

	/* nothing is erased while something reads it or returns it */
	ck_assert_int_eq(graph_erase(g, 3), -1);
	char *msg = tj_error_take();
	ck_assert_str_eq(msg, "graph 0/0: cannot erase add, div reads it");
	free(msg);
	ck_assert_int_eq(graph_erase(g, 4), -1);
	msg = tj_error_take();
	ck_assert_str_eq(msg, "graph 0/0: cannot erase div, an output");
	free(msg);

	ck_assert_int_eq(graph_replace_uses(g, 3, 1), 1);
	ck_assert_int_eq(graph_erase(g, 3), 0);
	ck_assert_int_eq(graph_erase(g, 2), 0);
	ck_assert_int_eq(g->outputs[0], 2);
	ck_assert_str_eq(listing(g), "graph 0/0 toy_example (toy.tj:1) \xc2\xb7 1 op\n"
				     "  a: f32[10] = input L['a']\n"
				     "  b: f32[10] = input L['b']\n"
				     "  div: f32[10] = div(a, b)                 # toy.tj:2  x = a / (abs(a) + 1)\n"
				     "  return (div,)\n");
	struct strbuf why = STRBUF_INIT;
	ck_assert_int_eq(graph_verify(g, &why), 0);
	sb_release(&why);

	/* an output follows a replacement too */
	ck_assert_int_eq(graph_replace_uses(g, 2, 0), 1);
	ck_assert_int_eq(g->outputs[0], 0);
	ck_assert_int_eq(graph_erase(g, 2), 0);
	ck_assert_int_eq(graph_erase(g, 1), 0);
	ck_assert_str_eq(listing(g), "graph 0/0 toy_example (toy.tj:1) \xc2\xb7 0 ops\n"
				     "  a: f32[10] = input L['a']\n"
				     "  return (a,)\n");
	ck_assert_int_eq(graph_erase(g, 1), -1);
	msg = tj_error_take();
	ck_assert_str_eq(msg, "graph 0/0: no node 1 to erase");
	free(msg);
	graph_free(g);
}
END_TEST

/* the partition's dead code: the nodes marked go in one pass, the others
 * keep their order and what reads them follows */
START_TEST(test_erase_nodes)
{
	struct graph *g = toy_graph();
	struct gnode in = g->nodes[0];
	in.name = graph_fresh_name(g, "b");
	in.source = graph_strdup(g, "L['b']");
	ck_assert_int_eq(graph_insert(g, 1, &in), 1);
	bool drop[5] = {false, false, true, true, false};
	/* nothing goes while a kept node reads a dropped one, or returns it */
	ck_assert_int_eq(graph_erase_nodes(g, drop), -1);
	char *msg = tj_error_take();
	ck_assert_str_eq(msg, "graph 0/0: cannot erase add, div reads it");
	free(msg);
	bool out[5] = {false, false, false, false, true};
	ck_assert_int_eq(graph_erase_nodes(g, out), -1);
	msg = tj_error_take();
	ck_assert_str_eq(msg, "graph 0/0: cannot erase div, an output");
	free(msg);
	ck_assert_int_eq(g->nnodes, 5);

	ck_assert_int_eq(graph_replace_uses(g, 3, 1), 1);
	ck_assert_int_eq(graph_erase_nodes(g, drop), 0);
	ck_assert_int_eq(g->nnodes, 3);
	ck_assert_int_eq(g->outputs[0], 2);
	ck_assert_int_eq(g->nodes[2].args[1].node, 1);
	ck_assert_str_eq(listing(g), "graph 0/0 toy_example (toy.tj:1) \xc2\xb7 1 op\n"
				     "  a: f32[10] = input L['a']\n"
				     "  b: f32[10] = input L['b']\n"
				     "  div: f32[10] = div(a, b)                 # toy.tj:2  x = a / (abs(a) + 1)\n"
				     "  return (div,)\n");
	struct strbuf why = STRBUF_INIT;
	ck_assert_int_eq(graph_verify(g, &why), 0);
	sb_release(&why);

	/* a rebuilt list renumbers args, inside lists too */
	struct garg items[2] = {node_arg(2), node_arg(0)};
	struct garg list = {.kind = GARG_LIST, .n = 2, .items = items};
	int to[3] = {1, 0, 0};
	graph_remap_arg(&list, to);
	ck_assert_int_eq(items[0].node, 0);
	ck_assert_int_eq(items[1].node, 1);
	graph_free(g);
}
END_TEST

/* a part of a graph: abs(a) + 1 given as an input named add, the div
 * reading it, abs dropped; the copy outlives the original */
START_TEST(test_extract)
{
	struct graph *g = toy_graph();
	int order[3] = {0, 2, 3};
	const char *as_input[3] = {NULL, "saved[0]", NULL};
	int outs[1] = {3};
	struct graph *c = graph_extract(g, 3, order, as_input, 1, outs);
	graph_free(g);
	ck_assert_ptr_nonnull(c);
	ck_assert_str_eq(listing(c), "graph 0/0 toy_example (toy.tj:1) \xc2\xb7 1 op\n"
				     "  a: f32[10] = input L['a']\n"
				     "  add: f32[10] = input saved[0]\n"
				     "  div: f32[10] = div(a, add)               # toy.tj:2  x = a / (abs(a) + 1)\n"
				     "  return (div,)\n");
	struct strbuf why = STRBUF_INIT;
	ck_assert_int_eq(graph_verify(c, &why), 0);
	sb_release(&why);
	/* its names are its own: add taken, div too */
	ck_assert_str_eq(graph_fresh_name(c, "add"), "add_1");
	ck_assert_str_eq(graph_fresh_name(c, "div"), "div_1");
	ck_assert_int_eq(c->nnodes, 3);
	graph_free(c);
}
END_TEST

/* a copy knows its nodes' names when it first makes one, even after a
 * pass took its list apart (the decomposition rebuilds it front to back) */
START_TEST(test_copy_names)
{
	struct graph *g = toy_graph();
	struct graph *c = graph_copy(g);
	graph_free(g);
	int n = c->nnodes;
	c->nnodes = 0;
	ck_assert_str_eq(graph_fresh_name(c, "add"), "add_1");
	ck_assert_str_eq(graph_fresh_name(c, "a"), "a_1");
	ck_assert_str_eq(graph_fresh_name(c, "mul"), "mul");
	c->nnodes = n;
	ck_assert_str_eq(graph_fresh_name(c, "add"), "add_2");
	graph_free(c);
}
END_TEST

/* a decomposition: div(a, add) becomes mul(a, reciprocal(add)), the new
 * nodes before their users, keeping the stack of the node they replace */
START_TEST(test_insert_before)
{
	struct graph *g = toy_graph();
	ck_assert_double_eq_tol(run_first(g, 0), -2.0 / 3.0, 1e-6);
	int div = 3;
	struct garg r[1] = {g->nodes[div].args[1]};
	struct gnode rn = arena_op(g, OPS_reciprocal, 1, r, div);
	int rec = graph_insert(g, div, &rn);
	div++;
	struct garg m[2] = {g->nodes[div].args[0], node_arg(rec)};
	struct gnode mn = arena_op(g, OPS_mul, 2, m, div);
	int mul = graph_insert(g, div, &mn);
	div++;
	ck_assert_int_eq(rec, 3);
	ck_assert_int_eq(mul, 4);
	ck_assert_ptr_eq(g->nodes[mul].stack, g->nodes[div].stack);
	ck_assert_int_eq(graph_replace_uses(g, div, mul), 1);
	ck_assert_int_eq(graph_erase(g, div), 0);
	ck_assert_str_eq(listing(g), "graph 0/0 toy_example (toy.tj:1) \xc2\xb7 4 ops\n"
				     "  a: f32[10] = input L['a']\n"
				     "  abs_1: f32[10] = abs(a)                  # toy.tj:2  x = a / (abs(a) + 1)\n"
				     "  add: f32[10] = add(abs_1, 1)             # toy.tj:2\n"
				     "  reciprocal: f32[10] = reciprocal(add)    # toy.tj:2\n"
				     "  mul: f32[10] = mul(a, reciprocal)        # toy.tj:2\n"
				     "  return (mul,)\n");
	struct strbuf why = STRBUF_INIT;
	ck_assert_int_eq(graph_verify(g, &why), 0);
	sb_release(&why);
	ck_assert_double_eq_tol(run_first(g, 0), -2.0 / 3.0, 1e-6);
	ck_assert_double_eq_tol(run_first(g, 9), 7.0 / 8.0, 1e-6);
	/* a position outside the list is refused */
	ck_assert_int_eq(graph_insert(g, 6, &mn), -1);
	ck_assert_int_eq(g->nnodes, 5);
	graph_free(g);
}
END_TEST

/* max(x, 0) as a tuple and its item 1 returned */
static struct graph *tuple_graph(int index)
{
	struct graph *m = graph_new("m", "2/0", toy, 1, STAGE_CAPTURED);
	int x = add_input(m, "x", "L['x']", 3);
	struct garg mx[3] = {node_arg(x), const_arg(val_int(0)), const_arg(val_bool(false))};
	int t = add_op(m, OPS_max, 3, mx, 2, 3);
	m->nodes[t].is_tensor = false;
	m->nodes[t].nouts = 2;
	struct gnode gi;
	memset(&gi, 0, sizeof gi);
	gi.kind = GN_GETITEM;
	gi.name = graph_fresh_name(m, "getitem");
	gi.index = index;
	gi.nargs = 1;
	gi.args = calloc(1, sizeof *gi.args);
	gi.args[0] = node_arg(t);
	gi.nstack = 1;
	gi.stack = at(2, 5);
	int idx = graph_add(m, &gi);
	m->noutputs = 1;
	m->outputs = malloc(sizeof(int));
	m->outputs[0] = idx;
	return m;
}

static void verify_says(struct graph *g, const char *want)
{
	struct strbuf why = STRBUF_INIT;
	ck_assert_int_eq(graph_verify(g, &why), -1);
	ck_assert_str_eq(why.buf, want);
	sb_release(&why);
	graph_free(g);
}

START_TEST(test_verify)
{
	struct strbuf why = STRBUF_INIT;
	struct graph *g = toy_graph();
	ck_assert_int_eq(graph_verify(g, &why), 0);
	ck_assert_uint_eq(why.len, 0);
	graph_free(g);
	g = tuple_graph(1);
	ck_assert_int_eq(graph_verify(g, &why), 0);
	graph_free(g);
	sb_release(&why);

	g = toy_graph();
	g->nodes[1].args[0].node = 3;
	verify_says(g, "node abs_1: arg 0 reads div, which comes later");
	g = toy_graph();
	g->nodes[3].args[1].node = 3;
	verify_says(g, "node div: arg 1 reads div, which is itself");
	g = toy_graph();
	g->nodes[2].name = g->nodes[1].name;
	verify_says(g, "two nodes are named abs_1");
	g = toy_graph();
	g->nodes[1].name = "";
	verify_says(g, "node 1 has no name");
	verify_says(tuple_graph(2), "node getitem: item 2 of max_1, a tuple of 2");
	g = tuple_graph(0);
	g->nodes[1].nouts = 0;
	g->nodes[1].is_tensor = true;
	verify_says(g, "node getitem: a getitem of max_1, which is no tuple");
	g = tuple_graph(0);
	g->outputs[0] = 1;
	verify_says(g, "output 0 reads the tuple max_1 without a getitem");
	/* an output left pointing past the end, as after a careless erase */
	g = toy_graph();
	g->outputs[0] = 4;
	verify_says(g, "output 0 reads node 4 of 4");
	g = toy_graph();
	struct gnode late = g->nodes[0];
	late.name = graph_fresh_name(g, "late");
	ck_assert_int_eq(graph_insert(g, 2, &late), 2);
	verify_says(g, "node late: an input after abs_1");
	g = toy_graph();
	g->nodes[1].shape[0].sym = 0;
	verify_says(g, "node abs_1: dimension 0 is symbol s0 of 0");
	g = toy_graph();
	g->nodes[2].args[1].kind = GARG_SYM;
	g->nodes[2].args[1].sym = 1;
	g->nsyms = 1;
	verify_says(g, "node add: arg 1 is symbol s1 of 1");
	g = toy_graph();
	g->nodes[1].ndim = TENSOR_MAX_DIMS + 1;
	verify_says(g, "node abs_1: ndim 9 (at most 8)");
	g = toy_graph();
	g->nodes[1].op = OPS_COUNT;
	char want[64];
	snprintf(want, sizeof want, "node abs_1: op id %d", OPS_COUNT);
	verify_says(g, want);
	g = toy_graph();
	g->nodes[2].nstack = 0;
	verify_says(g, "node add: no user stack");
	g = toy_graph();
	g->nodes[0].source = NULL;
	verify_says(g, "node a: an input without a source");
}
END_TEST

/* a broken graph stops the program in a test or debug build */
START_TEST(test_check_aborts)
{
	setenv("TJIT_VERIFY_GRAPHS", "1", 1);
	struct graph *g = toy_graph();
	graph_check(g, "a test"); /* a good one passes */
	g->nodes[1].args[0].node = 3;
	graph_check(g, "a test");
	ck_abort_msg("graph_check let a broken graph through");
}
END_TEST

/* a copy shares nothing with its original: free one, use the other */
START_TEST(test_copy_independent)
{
	struct graph *g = toy_graph();
	g->nodes[2].args[1] = const_arg(val_tensor(tensor_zeros(DT_FLOAT32, 1, (int64_t[]){1})));
	struct graph *c = graph_copy(g);
	ck_assert_ptr_nonnull(c);
	char *want = strdup(listing(g));
	ck_assert_ptr_ne(c->nodes[1].name, g->nodes[1].name);
	ck_assert_ptr_ne(c->nodes[1].stack, g->nodes[1].stack);
	graph_free(g);
	ck_assert_str_eq(listing(c), want);
	/* |a| + 0: a / |a| */
	ck_assert_double_eq_tol(run_first(c, 0), -1.0, 1e-6);
	free(want);
	graph_free(c);

	/* and the other way round: edits of the copy leave the original alone */
	g = toy_graph();
	c = graph_copy(g);
	ck_assert_int_eq(graph_replace_uses(c, 2, 1), 1);
	ck_assert_int_eq(graph_erase(c, 2), 0);
	ck_assert_ptr_nonnull(strstr(listing(g), "div: f32[10] = div(a, add)"));
	graph_free(c);
	ck_assert_double_eq_tol(run_first(g, 0), -2.0 / 3.0, 1e-6);
	graph_free(g);
}
END_TEST

/* a getitem's constant index: one constant, a constant tuple, or a tuple
 * of constant args; -1 for a node among them or too many */
START_TEST(test_const_items)
{
	value items[4];
	struct garg one = {.kind = GARG_CONST, .constant = val_int(3)};
	ck_assert_int_eq(graph_const_items(&one, items, 4), 1);
	ck_assert(items[0].tag == VAL_INT && items[0].i == 3);
	value t = tuple_new(2);
	val_tuple(t)->items[0] = val_int(1);
	val_tuple(t)->items[1] = val_none();
	struct garg tup = {.kind = GARG_CONST, .constant = t};
	ck_assert_int_eq(graph_const_items(&tup, items, 4), 2);
	ck_assert(items[0].i == 1 && items[1].tag == VAL_NONE);
	ck_assert_int_eq(graph_const_items(&tup, items, 1), -1);
	struct garg parts[2] = {{.kind = GARG_CONST, .constant = val_int(5)}, {.kind = GARG_CONST, .constant = val_none()}};
	struct garg args = {.kind = GARG_TUPLE, .n = 2, .items = parts};
	ck_assert_int_eq(graph_const_items(&args, items, 4), 2);
	ck_assert(items[0].i == 5 && items[1].tag == VAL_NONE);
	parts[1] = (struct garg){.kind = GARG_NODE, .node = 0};
	ck_assert_int_eq(graph_const_items(&args, items, 4), -1);
	struct garg node = {.kind = GARG_NODE, .node = 0};
	ck_assert_int_eq(graph_const_items(&node, items, 4), -1);
	val_decref(t);
}
END_TEST

static Suite *graph_suite(void)
{
	Suite *s = suite_create("graph");
	TCase *tc = tcase_create("ir");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_print_language_section_7);
	tcase_add_test(tc, test_fresh_names);
	tcase_add_test(tc, test_const_items);
	tcase_add_test(tc, test_fresh_names_many);
	tcase_add_test(tc, test_types_and_args);
	tcase_add_test(tc, test_copy_and_truncate);
	tcase_add_test(tc, test_interpret);
	tcase_add_test(tc, test_interpret_symbolic_size);
	tcase_add_test(tc, test_testing_backends);
	suite_add_tcase(s, tc);
	TCase *passes = tcase_create("passes");
	tcase_add_checked_fixture(passes, setup, teardown);
	tcase_add_test(passes, test_hoist_inputs);
	tcase_add_test(passes, test_users);
	tcase_add_test(passes, test_replace_uses_then_erase);
	tcase_add_test(passes, test_insert_before);
	tcase_add_test(passes, test_erase_nodes);
	tcase_add_test(passes, test_extract);
	tcase_add_test(passes, test_copy_names);
	tcase_add_test(passes, test_verify);
	tcase_add_test_raise_signal(passes, test_check_aborts, SIGABRT);
	tcase_add_test(passes, test_copy_independent);
	suite_add_tcase(s, passes);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(graph_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
