/* check_tracer.c - the tracer and the frame evaluator on small programs
 * compiled from source and run by the VM: the graphs, guards and breaks
 * they make (collected from the compile log), the results (equal to eager
 * runs), recompiles, fullgraph, the control builtins (and what the tracer
 * sees in them: compiled_fn_classify, runtime_op_disallowed), and programs
 * that must fall back to the VM without crashing. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "compile_log.h"
#include "compiled_fn.h"
#include "compiler.h"
#include "frame_eval.h"
#include "ops.h"
#include "prelude.h"
#include "runtime.h"
#include "tracer.h"
#include "vm.h"

/* ---- what the compile log saw ---- */

struct seen {
	char id[24];
	char *reason;
	char *listing;      /* graph_print, or NULL */
	int nops;
	int brk_code;       /* -1: none */
	char *brk_message;
	int brk_depth;
	char *guards;       /* texts, one a line */
	char *failures;     /* "0/0: text (got value)" lines */
};

static struct seen seen[64];
static int nseen;

static void on_compile(struct compile_listener *l, const struct compile_record *r)
{
	(void)l;
	if (nseen == 64)
		return;
	struct seen *s = &seen[nseen++];
	memset(s, 0, sizeof *s);
	snprintf(s->id, sizeof s->id, "%s", r->compile_id);
	s->reason = strdup(r->reason);
	s->brk_code = -1;
	if (r->graph) {
		struct strbuf sb = STRBUF_INIT;
		graph_print(r->graph, &sb);
		s->listing = sb_detach(&sb);
		s->nops = graph_op_count(r->graph);
	}
	if (r->brk) {
		s->brk_code = r->brk->code;
		s->brk_message = strdup(r->brk->message);
		s->brk_depth = r->brk->nstack;
	}
	struct strbuf g = STRBUF_INIT, f = STRBUF_INIT;
	for (int i = 0; i < r->nguards; i++)
		sb_printf(&g, "%s\n", r->guards[i].text);
	for (int i = 0; i < r->nfailures; i++)
		sb_printf(&f, "%s: %s (got %s)\n", r->failures[i].failed_compile, r->failures[i].guard_text,
			  r->failures[i].value_seen);
	s->guards = g.buf ? sb_detach(&g) : strdup("");
	s->failures = f.buf ? sb_detach(&f) : strdup("");
}

static struct compile_listener listener = {on_compile, NULL};

static struct runtime *rt;
static struct vm *vm;
static struct source *src;
static struct code *code;

static void clear_seen(void)
{
	for (int i = 0; i < nseen; i++) {
		free(seen[i].reason);
		free(seen[i].listing);
		free(seen[i].brk_message);
		free(seen[i].guards);
		free(seen[i].failures);
	}
	nseen = 0;
}

static void setup(void)
{
	struct runtime_config rc = {COMPILE_SWITCHES_INIT, {0, stderr, NULL}, {INJECT_NONE, INJECT_COMPILE_ERROR}};
	rt = runtime_new(&rc);
	ck_assert_ptr_nonnull(rt);
	compile_log_listen(rt->log, &listener);
	vm = prelude_vm_new();
	vm_set_runtime(vm, rt);
}

static void release_program(void)
{
	if (code)
		val_decref(val_obj(VAL_CODE, code));
	code = NULL;
	source_free(src);
	src = NULL;
}

static void teardown(void)
{
	frame_eval_free(rt);
	vm_free(vm);
	vm = NULL;
	release_program();
	compile_log_unlisten(rt->log, &listener);
	runtime_free(rt);
	rt = NULL;
	clear_seen();
}

/* Runs text as prog.tj; 0, or -1 with the VM's error pending. */
static int run(const char *text)
{
	frame_eval_reset(rt); /* the caches of the last program go */
	release_program();
	clear_seen();
	src = source_from_string("prog.tj", text, strlen(text));
	struct src_loc loc;
	char *msg = NULL;
	code = compile_source(src, &loc, &msg);
	ck_assert_msg(code != NULL, "compile error at %d:%d: %s", loc.line, loc.col, msg);
	free(msg);
	value r = vm_run_module(vm, code);
	return val_is_err(r) ? -1 : 0;
}

static char *repr_of_global(const char *name)
{
	value v = vm_get_global(vm, name);
	ck_assert_msg(!val_is_err(v), "%s is not set", name);
	struct strbuf sb = STRBUF_INIT;
	val_repr(v, &sb);
	return sb_detach(&sb);
}

/* runs text compiled and eagerly: the global r must print the same */
static void same_as_eager(const char *text)
{
	rt->sw.disabled = true;
	ck_assert_msg(run(text) == 0, "eager: %s", vm_error_message(vm));
	char *eager = repr_of_global("r");
	rt->sw.disabled = false;
	vm_free(vm);
	vm = prelude_vm_new();
	vm_set_runtime(vm, rt);
	ck_assert_msg(run(text) == 0, "compiled: %s", vm_error_message(vm));
	char *compiled = repr_of_global("r");
	ck_assert_str_eq(compiled, eager);
	free(eager);
	free(compiled);
}

static int count_graphs(void)
{
	int n = 0;
	for (int i = 0; i < nseen; i++)
		n += seen[i].listing != NULL;
	return n;
}

static int count_breaks(void)
{
	int n = 0;
	for (int i = 0; i < nseen; i++)
		n += seen[i].brk_code >= 0;
	return n;
}

static int count_ops(void)
{
	int n = 0;
	for (int i = 0; i < nseen; i++)
		n += seen[i].nops;
	return n;
}

/* ---- tests ---- */

static const char *toy_text = "def toy_example(a, b):\n"
			      "    x = a / (abs(a) + 1)\n"
			      "    print(\"woo\")\n"
			      "    if b.sum() < 0:\n"
			      "        b = b * -1\n"
			      "    return x * b\n"
			      "f = compile(toy_example)\n"
			      "r = f(arange(10, dtype=float32) - 4, ones(10))\n";

START_TEST(test_toy_example)
{
	ck_assert_int_eq(run(toy_text), 0);
	ck_assert_int_eq(count_graphs(), 3);
	ck_assert_int_eq(count_breaks(), 2);
	ck_assert_int_eq(count_ops(), 6);
	ck_assert_str_eq(seen[0].listing, "graph 0/0 toy_example (prog.tj:1) \xc2\xb7 3 ops\n"
					  "  a: f32[10] = input L['a']\n"
					  "  abs_1: f32[10] = abs(a)                  # prog.tj:2  x = a / (abs(a) + 1)\n"
					  "  add: f32[10] = add(abs_1, 1)             # prog.tj:2\n"
					  "  div: f32[10] = div(a, add)               # prog.tj:2\n"
					  "  return (div,)\n");
	ck_assert_int_eq(seen[0].brk_code, BRK_PRINT);
	ck_assert_str_eq(seen[0].brk_message, "call to print (side effect)");
	ck_assert_int_eq(seen[1].brk_code, BRK_TENSOR_BRANCH);
	ck_assert_str_eq(seen[1].brk_message, "data-dependent branch on a tensor value");
	ck_assert_str_eq(seen[2].id, "2/0");
	ck_assert_ptr_nonnull(strstr(seen[0].guards, "L['a'].shape == (10,)\n"));
	same_as_eager(toy_text);
}
END_TEST

START_TEST(test_inline_and_unroll)
{
	const char *text = "def affine(x, w=2.0, b=0.5):\n"
			   "    return x * w + b\n"
			   "@compile\n"
			   "def f(x, n, ws):\n"
			   "    for i in range(n):\n"
			   "        x = affine(x, b=i)\n"
			   "    for w in ws:\n"
			   "        x = x * w\n"
			   "    return x, len(ws)\n"
			   "r = f(ones(2), 3, [1.0, 2.0])\n";
	ck_assert_int_eq(run(text), 0);
	ck_assert_int_eq(nseen, 1);
	ck_assert_int_eq(count_ops(), 8);
	ck_assert_int_eq(count_breaks(), 0);
	/* what the trace specialized on is guarded, where it was assumed */
	ck_assert_ptr_nonnull(strstr(seen[0].guards, "L['n'] == 3\n"));
	ck_assert_ptr_nonnull(strstr(seen[0].guards, "len(L['ws']) == 2\n"));
	ck_assert_ptr_nonnull(strstr(seen[0].guards, "L['ws'][1] == 2.0\n"));
	ck_assert_ptr_nonnull(strstr(seen[0].guards, "G['affine'] is <function affine at prog.tj:1>\n"));
	same_as_eager(text);
}
END_TEST

START_TEST(test_break_in_inlined_call)
{
	const char *text = "def inner(x):\n"
			   "    y = x * 3\n"
			   "    print(y)\n"
			   "    return y + 1\n"
			   "def middle(x):\n"
			   "    return inner(x - 1) * 2\n"
			   "@compile\n"
			   "def outer(x):\n"
			   "    return middle(x + 10).sum()\n"
			   "r = outer(ones(2))\n";
	ck_assert_int_eq(run(text), 0);
	/* the caller breaks at its call, with the stack of the print */
	ck_assert_int_eq(seen[0].brk_code, BRK_PRINT);
	ck_assert_int_eq(seen[0].brk_depth, 3);
	ck_assert_int_eq(seen[0].nops, 1);
	/* then middle and inner run as frames of their own */
	ck_assert_int_eq(seen[1].brk_depth, 2);
	ck_assert_int_eq(seen[2].brk_depth, 1);
	ck_assert_int_eq(count_breaks(), 3);
	same_as_eager(text);
}
END_TEST

START_TEST(test_every_break_cause)
{
	static const struct {
		const char *line;
		int code;
		const char *message;
	} cases[] = {
		{"print(x)", BRK_PRINT, "call to print (side effect)"},
		{"t = time()", BRK_TIME, "call to time (reads the clock)"},
		{"x = ext_sort(x)", BRK_EXTENSION, "call to ext_sort (extension function: C code the tracer cannot see into)"},
		{"x = ext_cumsum(x)", BRK_EXTENSION, NULL},
		{"x = ext_clip(x, 0.0, 1.0)", BRK_EXTENSION, NULL},
		{"if x.sum() > 0:\n        x = x + 1", BRK_TENSOR_BRANCH, "data-dependent branch on a tensor value"},
		{"while x.sum() > 100:\n        x = x - 1", BRK_TENSOR_BRANCH, NULL},
		{"t = x[0] > 0 and x[1] > 0", BRK_TENSOR_BOOLOP, "data-dependent 'and' on a tensor value"},
		{"t = x[0] > 0 or x[1] > 0", BRK_TENSOR_BOOLOP, "data-dependent 'or' on a tensor value"},
		{"t = not x[0] > 0", BRK_TENSOR_BOOLOP, "data-dependent 'not' on a tensor value"},
		{"t = x.sum().item()", BRK_TENSOR_DATA, "data-dependent value: Tensor.item() reads tensor data"},
		{"t = x.tolist()", BRK_TENSOR_DATA, NULL},
		{"t = int(x[0])", BRK_TENSOR_DATA, "data-dependent value: int(t) reads tensor data"},
		{"t = float(x[0])", BRK_TENSOR_DATA, NULL},
		{"t = bool(x[0])", BRK_TENSOR_DATA, NULL},
		{"x = off(x)", BRK_DISABLED, "call to disabled function off_body"},
		{"x = relu(x)", BRK_DISALLOWED_OP, "call to relu, which is disallowed in the graph (disallow_in_graph)"},
		{"graph_break()", BRK_USER_BREAK, "graph_break() called"},
		{"manual_seed(3)", BRK_EFFECT_OP, "call to manual_seed (side effect)"},
		{"reset()", BRK_CONTROL_API, "call to reset() inside a compiled function"},
		{"t = x.is_leaf", BRK_UNSUPPORTED, "unsupported: Tensor.is_leaf"},
		{"t = [x][x]", BRK_UNSUPPORTED, "unsupported: indexing a list with a Tensor"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct strbuf prog = STRBUF_INIT;
		sb_printf(&prog,
			  "def off_body(x):\n"
			  "    return x\n"
			  "off = disable(off_body)\n"
			  "disallow_in_graph(relu)\n"
			  "@compile\n"
			  "def f(x):\n"
			  "    x = x * 2\n"
			  "    %s\n"
			  "    return x + 1\n"
			  "r = 0\n"
			  "try_it = f(arange(3, dtype=float32))\n",
			  cases[i].line);
		int rc = run(prog.buf);
		if (cases[i].code == BRK_UNSUPPORTED && strstr(cases[i].line, "[x][x]")) {
			/* the VM raises the error after the break */
			ck_assert_int_eq(rc, -1);
			vm_error_clear(vm);
		} else {
			ck_assert_msg(rc == 0, "%s: %s", cases[i].line, vm_error_message(vm));
		}
		ck_assert_msg(nseen >= 1 && seen[0].brk_code == cases[i].code, "%s: break code %d, want %d",
			      cases[i].line, nseen ? seen[0].brk_code : -2, cases[i].code);
		if (cases[i].message)
			ck_assert_str_eq(seen[0].brk_message, cases[i].message);
		sb_release(&prog);
	}
	ck_assert_int_eq(run("allow_in_graph(relu)\n"), 0);
}
END_TEST

START_TEST(test_resume_in_loops)
{
	const char *text = "@compile\n"
			   "def f(x):\n"
			   "    acc = zeros(3)\n"
			   "    for row in x:\n"
			   "        acc = acc + row\n"
			   "        print(row)\n"
			   "        acc = acc * 2\n"
			   "    return acc\n"
			   "m = arange(12, dtype=float32).reshape(4, 3)\n"
			   "r = [f(m), f(m + 1)]\n";
	ck_assert_int_eq(run(text), 0);
	/* the entry, the part after print, the loop body: no recompile for the rows */
	for (int i = 0; i < nseen; i++)
		ck_assert_str_eq(seen[i].reason, "first");
	ck_assert_int_le(nseen, 4);
	same_as_eager(text);
}
END_TEST

START_TEST(test_recompile_reasons)
{
	const char *text = "scale = 2.0\n"
			   "@compile\n"
			   "def f(x, n):\n"
			   "    return x * n * scale\n"
			   "a = f(ones(2), 1)\n"
			   "b = f(ones(2), 1)\n"
			   "c = f(ones(4), 1)\n"
			   "d = f(ones(4), 3)\n"
			   "scale = 3.0\n"
			   "e = f(ones(4), 3)\n"
			   "r = [a, b, c, d, e]\n";
	ck_assert_int_eq(run(text), 0);
	ck_assert_int_eq(nseen, 4);
	ck_assert_str_eq(seen[0].reason, "first");
	ck_assert_str_eq(seen[1].reason, "recompile");
	ck_assert_str_eq(seen[1].id, "0/1");
	ck_assert_str_eq(seen[1].failures, "0/0: L['x'].shape[0] == 2 (got 4)\n");
	ck_assert_str_eq(seen[2].failures, "0/1: L['n'] == 1 (got 3)\n0/0: L['x'].shape[0] == 2 (got 4)\n");
	ck_assert_ptr_nonnull(strstr(seen[3].failures, "0/2: G['scale'] == 2.0 (got 3.0)\n"));
	same_as_eager(text);
}
END_TEST

/* Dynamic shapes: sizes read as ints, reshape/view and indexing. Each
 * case runs f compiled with dynamic=True (or None) on x of shape
 * (n, 4, 5) for n = 3, 4, 6: the trace compiled that many times, the
 * listing of its first graph (with None: its second, the first with a
 * symbol) has the line and its guards the guard, and r is what eager
 * code makes. */
struct dyn_case {
	bool automatic;       /* dynamic=None, else True */
	const char *body;     /* f(x)'s body */
	int compiles;
	const char *line;
	const char *guard;    /* or NULL */
};

static const struct dyn_case dyn_cases[] = {
	/* kept symbolic */
	{false, "    return x.reshape(x.shape[0], -1) * 2\n", 1, "  reshape: f32[s0, 20] = reshape(x, (s0, -1))",
	 "L['x'].shape == (s0, 4, 5)\n"},
	{false, "    return x.view(x.shape[0], x.size(1), -1)\n", 1,
	 "  view: f32[s0, s1, s2] = view(x, (s0, s1, -1))", "L['x'].shape == (s0, s1, s2)\n"},
	{false, "    return x.view(-1, 20)\n", 1, "  view: f32[s0, 20] = view(x, (-1, 20))", "L['x'].shape == (s0, 4, 5)\n"},
	{false, "    return x.reshape(4, -1, 5).sum(0)\n", 1, "  reshape: f32[4, s0, 5] = reshape(x, (4, -1, 5))",
	 "L['x'].shape == (s0, 4, 5)\n"},
	{false, "    n, m, k = x.shape\n    return x.reshape(k, n, m).sum(0)\n", 1,
	 "  reshape: f32[s2, s0, s1] = reshape(x, (s2, s0, s1))", "L['x'].shape == (s0, s1, s2)\n"},
	{false, "    return x[0] + x[-1] + x[1] + x[-2]\n", 1, "  getitem: f32[s1, s2] = getitem(x, 0)",
	 "L['x'].shape == (s0, s1, s2)\n"},
	{false, "    return x[:, 1]\n", 1, "  getitem: f32[s0, s2] = getitem(x, (slice(None, None, None), 1))", NULL},
	{false, "    return x[None, :, 0:]\n", 1,
	 "  getitem: f32[1, s0, s1, s2] = getitem(x, (None, slice(None, None, None), slice(0, None, None)))", NULL},
	{false, "    return zeros(len(x), x.size(1)) + x.sum(2)\n", 1, "  zeros: f32[s0, s1] = zeros((s0, s1))", NULL},
	{false, "    return x.sum(2).unsqueeze(0).expand(x.size(2), -1, -1)\n", 1,
	 "  expand: f32[s2, s0, s1] = expand(unsqueeze, (s2, -1, -1))", NULL},
	{false, "    s = x.shape\n    return arange(s[0]) * 1.5\n", 1, "  arange: i64[s0] = arange(s0)",
	 "L['x'].shape == (s0, s1, s2)\n"},
	{true, "    return x.reshape(x.shape[0], -1) * 2\n", 2, "  reshape: f32[s0, 20] = reshape(x, (s0, -1))", NULL},
	{true, "    return x.view(-1, 20)\n", 2, "  view: f32[s0, 20] = view(x, (-1, 20))", NULL},
	{true, "    n = x.shape[0]\n    return x.reshape(n, 2, -1)\n", 2,
	 "  reshape: f32[s0, 2, 10] = reshape(x, (s0, 2, -1))", "L['x'].shape == (s0, 4, 5)\n"},
	/* specialized, with a guard on the value */
	{false, "    return x.view(-1)\n", 3, "  view: f32[60] = view(x, (-1,))", "L['x'].shape == (3, 4, 5)\n"},
	{false, "    return x.view(-1, x.shape[2])\n", 3, "  view: f32[12, s2] = view(x, (-1, s2))",
	 "L['x'].shape == (3, 4, s2)\n"},
	{false, "    return x.reshape(x.shape[1], -1)\n", 3, "  reshape: f32[s1, 15] = reshape(x, (s1, -1))",
	 "L['x'].shape == (3, s1, 5)\n"},
	{false, "    return x[1:]\n", 3, "  getitem: f32[2, s1, s2] = getitem(x, slice(1, None, None))",
	 "L['x'].shape == (3, s1, s2)\n"},
	{false, "    return x[2]\n", 3, "  getitem: f32[s1, s2] = getitem(x, 2)", "L['x'].shape == (3, s1, s2)\n"},
	{false, "    if x.shape[0] > 3:\n        return x * 2\n    return x + 1\n", 3, "  add: f32[3, s1, s2] = add(x, 1)",
	 NULL},
	{false, "    return x.reshape(len(x) * 2, -1)\n", 3, "reshape(x, (6, -1))", NULL},
	{false, "    s = x[0]\n    for i in range(1, len(x)):\n        s = s + x[i]\n    return s\n", 3,
	 "getitem(x, 0)", "L['x'].shape == (3, s1, s2)\n"},
	{true, "    return x.view(-1)\n", 3, "  view: f32[80] = view(x, (-1,))", "L['x'].shape == (4, 4, 5)\n"},
};

START_TEST(test_dynamic_sizes)
{
	const struct dyn_case *c = &dyn_cases[_i];
	char text[1024];
	snprintf(text, sizeof text,
		 "def f(x):\n%s"
		 "g = compile(f, dynamic=%s)\n"
		 "r = []\n"
		 "for n in [3, 4, 6]:\n"
		 "    r.append(g(arange(n * 20).reshape(n, 4, 5).float()))\n",
		 c->body, c->automatic ? "None" : "True");
	ck_assert_int_eq(run(text), 0);
	ck_assert_int_eq(count_graphs(), c->compiles);
	const struct seen *s = &seen[c->automatic ? 1 : 0];
	ck_assert_msg(strstr(s->listing, c->line), "%s\nnot in:\n%s", c->line, s->listing);
	if (c->guard)
		ck_assert_msg(strstr(s->guards, c->guard), "%s\nnot in:\n%s", c->guard, s->guards);
	same_as_eager(text);
}
END_TEST

START_TEST(test_cache_limit)
{
	rt->sw.cache_size_limit = 2;
	const char *text = "@compile\n"
			   "def f(x, n):\n"
			   "    return x + n\n"
			   "r = []\n"
			   "for i in range(5):\n"
			   "    r.append(f(ones(1), i))\n";
	ck_assert_int_eq(run(text), 0);
	ck_assert_int_eq(nseen, 3);
	ck_assert_str_eq(seen[2].reason, "cache_limit");
	ck_assert_ptr_null(seen[2].listing);
	char *r = repr_of_global("r");
	ck_assert_str_eq(r, "[tensor([1.0000]), tensor([2.0000]), tensor([3.0000]), tensor([4.0000]), tensor([5.0000])]");
	free(r);
}
END_TEST

START_TEST(test_fullgraph)
{
	const char *text = "def helper(x):\n"
			   "    print(x)\n"
			   "    return x\n"
			   "@compile(fullgraph=True)\n"
			   "def f(x):\n"
			   "    print(\"never\")\n"
			   "    return helper(x)\n"
			   "r = f(ones(1))\n";
	ck_assert_int_eq(run(text), -1);
	ck_assert_str_eq(vm_error_message(vm),
			 "Unsupported: call to print (side effect)");
	const struct source *s;
	struct src_loc loc;
	ck_assert(vm_error_location(vm, &s, &loc));
	ck_assert_int_eq(loc.line, 6);
	vm_error_clear(vm);
}
END_TEST

START_TEST(test_errors_fall_back)
{
	/* an op error while tracing: the VM raises it at the user's line */
	const char *text = "def bad(x):\n"
			   "    return x + ones(3)\n"
			   "@compile\n"
			   "def f(x):\n"
			   "    return bad(x * 2)\n"
			   "r = f(ones(2))\n";
	ck_assert_int_eq(run(text), -1);
	const struct source *s;
	struct src_loc loc;
	ck_assert(vm_error_location(vm, &s, &loc));
	ck_assert_int_eq(loc.line, 2);
	ck_assert_str_eq(vm_error_message(vm), "cannot broadcast shapes (2,) and (3,)");
	vm_error_clear(vm);
	/* programs the tracer has no model for still run */
	const char *odd[] = {
		"@compile\ndef f(x):\n    xs = [x]\n    xs.append(xs)\n    y = xs[0] + 1\n    xs.pop()\n    return y\nr = f(ones(1))\n",
		"@compile\ndef f(n):\n    if n > 0:\n        return f(n - 1) + 1\n    return 0\nr = f(40)\n",
		"@compile\ndef f(x):\n    it = enumerate([x, x])\n    for i, t in it:\n        x = x + t * i\n    return x\nr = f(ones(2))\n",
		"@compile\ndef f(x):\n    s = 'ab'\n    for c in s:\n        x = x + len(c)\n    return x, s.upper()\nr = f(ones(1))\n",
		"@compile\ndef f(x):\n    i = 0\n    while True:\n        i = i + 1\n        if i > 5000:\n            return x + i\nr = f(ones(1))\n",
	};
	for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++)
		same_as_eager(odd[i]);
}
END_TEST

START_TEST(test_side_effects_replayed)
{
	const char *text = "calls = 0\n"
			   "log = []\n"
			   "def make(k):\n"
			   "    def add(x):\n"
			   "        return x + k\n"
			   "    return add\n"
			   "@compile\n"
			   "def f(x, acc):\n"
			   "    global calls\n"
			   "    calls = calls + 1\n"
			   "    acc.append(x.sum())\n"
			   "    log.append(calls)\n"
			   "    g = make(2)\n"
			   "    out = [g(x), x]\n"
			   "    out[1] = out[1] * 3\n"
			   "    return out, g\n"
			   "acc = []\n"
			   "a, g = f(ones(2), acc)\n"
			   "b, g2 = f(ones(2), acc)\n"
			   "r = [a, b, acc, calls, log, g(ones(1))]\n";
	same_as_eager(text);
}
END_TEST

START_TEST(test_control_api)
{
	const char *text = "def leaf(x):\n"
			   "    return x - 1\n"
			   "@disable\n"
			   "def off(x):\n"
			   "    return leaf(x), is_compiling()\n"
			   "@allow_in_graph\n"
			   "def opaque(x):\n"
			   "    return x * 10\n"
			   "def probe():\n"
			   "    return is_compiling()\n"
			   "@compile\n"
			   "def f(x):\n"
			   "    y, c = off(x + 1)\n"
			   "    return opaque(y) + 1, c, probe()\n"
			   "a = f(ones(2))\n"
			   "fr = freeze(compile(leaf))\n"
			   "b = fr(ones(3))\n"
			   "reset()\n"
			   "r = [a, b, is_compiling()]\n";
	ck_assert_int_eq(run(text), 0);
	char *r = repr_of_global("r");
	ck_assert_str_eq(r, "[(tensor([11.0000, 11.0000]), False, True), tensor([0.0000, 0.0000, 0.0000]), False]");
	free(r);
	/* the allowed function is one node */
	bool found = false;
	for (int i = 0; i < nseen; i++)
		found = found || (seen[i].listing && strstr(seen[i].listing, "= opaque(stack0)"));
	ck_assert(found);
	/* the frozen function compiled nothing */
	for (int i = 0; i < nseen; i++)
		ck_assert_msg(!seen[i].listing || !strstr(seen[i].listing, " leaf (prog.tj:1)"), "leaf compiled");
}
END_TEST

START_TEST(test_eager_switch)
{
	rt->sw.disabled = true;
	ck_assert_int_eq(run("def g(x):\n    return x\nf = compile(g)\nr = f is g\n"), 0);
	char *r = repr_of_global("r");
	ck_assert_str_eq(r, "True");
	free(r);
	ck_assert_int_eq(nseen, 0);
}
END_TEST

/* what the tracer sees in the compile API's callables (compiled_fn.h) */
static void ck_kind(const char *name, enum api_kind want, const char *inner_name)
{
	value inner = val_int(7);
	enum api_kind got = compiled_fn_classify(vm_get_global(vm, name), &inner);
	ck_assert_msg(got == want, "%s: kind %d, not %d", name, (int)got, (int)want);
	if (!inner_name) {
		ck_assert_msg(inner.tag == VAL_NONE, "%s: an inner function", name);
		return;
	}
	value in = vm_get_global(vm, inner_name);
	ck_assert_msg(inner.tag == in.tag && inner.o == in.o, "%s: its inner function is not %s", name, inner_name);
}

START_TEST(test_classify_callables)
{
	const char *text = "def f(x):\n"
			   "    return x\n"
			   "cf = compile(f)\n"
			   "ccf = compile(cf)\n"
			   "fr = freeze(cf)\n"
			   "d = disable(f)\n"
			   "dframe = disable(f, recursive=False)\n"
			   "dcf = disable(ccf)\n"
			   "a = allow_in_graph(f)\n"
			   "cdeco = compile(backend='eager')\n"
			   "ddeco = disable(recursive=False)\n"
			   "ic = is_compiling\n"
			   "gb = graph_break\n"
			   "c = compile\n"
			   "md = mark_dynamic\n"
			   "ex = explain\n"
			   "p = print\n"
			   "z = zeros\n"
			   "n = 3\n";
	ck_assert_msg(run(text) == 0, "%s", vm_error_message(vm));
	ck_kind("cf", API_COMPILED, "f");
	ck_kind("ccf", API_COMPILED, "cf");
	ck_kind("fr", API_COMPILED, "f");
	ck_kind("d", API_DISABLED, "f");
	ck_kind("dframe", API_DISABLED, "f");
	ck_kind("dcf", API_DISABLED, "f"); /* disable(compile(f)) disables f */
	ck_kind("a", API_ALLOWED, "f");
	ck_kind("cdeco", API_CONTROL, NULL);
	ck_kind("ddeco", API_CONTROL, NULL);
	ck_kind("ic", API_IS_COMPILING, NULL);
	ck_kind("gb", API_GRAPH_BREAK, NULL);
	ck_kind("c", API_CONTROL, NULL);
	ck_kind("md", API_CONTROL, NULL);
	ck_kind("ex", API_CONTROL, NULL);
	ck_kind("f", API_NONE, NULL);
	ck_kind("p", API_NONE, NULL);
	ck_kind("z", API_NONE, NULL);
	ck_kind("n", API_NONE, NULL);
}
END_TEST

/* disallow_in_graph / allow_in_graph write the runtime's table that the
 * tracer reads (runtime_op_disallowed) */
START_TEST(test_ops_disallowed)
{
	ck_assert(!runtime_op_disallowed(rt, OPS_relu));
	ck_assert_int_eq(run("disallow_in_graph(relu)\n"), 0);
	ck_assert(runtime_op_disallowed(rt, OPS_relu));
	ck_assert(!runtime_op_disallowed(rt, OPS_abs));
	ck_assert_int_eq(run("allow_in_graph(relu)\n"), 0);
	ck_assert(!runtime_op_disallowed(rt, OPS_relu));
	runtime_set_op_disallowed(rt, OPS_abs, true);
	ck_assert(runtime_op_disallowed(rt, OPS_abs));
	/* out of range, or no runtime: nothing is out of graphs */
	runtime_set_op_disallowed(rt, OPS_COUNT, true);
	ck_assert(!runtime_op_disallowed(rt, OPS_COUNT));
	ck_assert(!runtime_op_disallowed(rt, -1));
	ck_assert(!runtime_op_disallowed(NULL, OPS_abs));
}
END_TEST

static Suite *tracer_suite(void)
{
	Suite *s = suite_create("tracer");
	TCase *tc = tcase_create("programs");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_toy_example);
	tcase_add_test(tc, test_inline_and_unroll);
	tcase_add_test(tc, test_break_in_inlined_call);
	tcase_add_test(tc, test_every_break_cause);
	tcase_add_test(tc, test_resume_in_loops);
	tcase_add_test(tc, test_recompile_reasons);
	tcase_add_loop_test(tc, test_dynamic_sizes, 0, (int)(sizeof dyn_cases / sizeof dyn_cases[0]));
	tcase_add_test(tc, test_cache_limit);
	tcase_add_test(tc, test_fullgraph);
	tcase_add_test(tc, test_errors_fall_back);
	tcase_add_test(tc, test_side_effects_replayed);
	tcase_add_test(tc, test_control_api);
	tcase_add_test(tc, test_eager_switch);
	tcase_add_test(tc, test_classify_callables);
	tcase_add_test(tc, test_ops_disallowed);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(tracer_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
