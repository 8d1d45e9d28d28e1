/* check_decompose.c - aot_eager's decomposition (core/stages/aot_decompose.c,
 * decomp.def): every op is a primitive, never a graph node, or has a row;
 * graphs traced from tj programs through the real tracer, decomposed, hold
 * primitives only, pass graph_verify, keep each composite's source line on
 * the nodes it became, and compute what the captured graph computes (on
 * the example sizes and on other sizes of their symbols). And the
 * aot_eager backend built on the pass (core/stages/backend_aot.c): the
 * forward graph it hands back and runs, its TJIT_INJECT_BUG failures.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TEST_CAPTURE_GRAPHS
#include "program_test_util.h"
#include "aot_decompose.h"
#include "autograd.h"
#include "backends.h"
#include "compile_ctx.h"
#include "compile_log.h"
#include "compiler.h"
#include "error.h"
#include "frame_eval.h"
#include "graph.h"
#include "ops.h"
#include "prelude.h"
#include "runtime.h"
#include "strbuf.h"
#include "vm.h"

/* ---- the table ---- */

START_TEST(test_every_op_covered)
{
	int rows = 0;
	for (int op = 0; op < OPS_COUNT; op++) {
		enum ops_stage st = ops_table[op].stage;
		ck_assert_msg(aot_decomp_has(op) == (st == OPST_COMP), "%s: %s a decomposition", ops_table[op].name,
			      aot_decomp_has(op) ? "has" : "has no");
		if (aot_decomp_has(op)) {
			ck_assert_msg(strlen(aot_decomp_formula(op)) > 0, "%s: no formula", ops_table[op].name);
			rows++;
		} else {
			ck_assert_ptr_null(aot_decomp_formula(op));
		}
	}
	ck_assert_int_gt(rows, 20);
	ck_assert_str_eq(aot_decomp_formula(OPS_rsqrt), "div(1, sqrt(xf))");
}
END_TEST

/* ---- graphs from programs ---- */

static struct vm *vm;

static void setup(void)
{
	ngraphs = 0;
	vm = prelude_vm_new();
}

static void teardown(void)
{
	drop_graphs();
	vm_free(vm);
	tj_error_clear();
}

/* the inputs of g: the example sizes, or each symbol's size plus grow;
 * deterministic values in [-3, 3) with some exact zeros and integers */
static void make_inputs(const struct graph *g, int grow, tensor **in, int *nin)
{
	*nin = 0;
	uint32_t seed = 12345;
	for (int i = 0; i < g->nnodes; i++) {
		const struct gnode *n = &g->nodes[i];
		if (n->kind != GN_INPUT)
			continue;
		int64_t shape[TENSOR_MAX_DIMS];
		for (int d = 0; d < n->ndim; d++)
			shape[d] = n->shape[d].value + (n->shape[d].sym >= 0 ? grow : 0);
		tensor *t = tensor_zeros(n->dt, n->ndim, shape);
		ck_assert_ptr_nonnull(t);
		for (int64_t k = 0; k < t->numel; k++) {
			seed = seed * 1103515245u + 12345u;
			double v = (double)(seed >> 8) / (double)(1u << 24) * 6 - 3;
			if (k % 7 == 3)
				v = round(v);
			switch (n->dt) {
			case DT_BOOL: ((uint8_t *)t->data)[k] = v > 0; break;
			case DT_INT64: ((int64_t *)t->data)[k] = (int64_t)round(v); break;
			case DT_FLOAT32: ((float *)t->data)[k] = (float)v; break;
			default: ((double *)t->data)[k] = v; break;
			}
		}
		t->requires_grad = n->requires_grad && dtype_is_float(n->dt);
		in[(*nin)++] = t;
	}
}

static double elem(const tensor *t, int64_t k)
{
	switch (t->dt) {
	case DT_BOOL: return ((const uint8_t *)t->data)[k];
	case DT_INT64: return (double)((const int64_t *)t->data)[k];
	case DT_FLOAT32: return ((const float *)t->data)[k];
	default: return ((const double *)t->data)[k];
	}
}

/* the first difference between a and b, or NULL: exactly equal, or
 * within 1e-6 of the larger magnitude (of 1 below 1) */
static const char *differ(const tensor *a, const tensor *b, bool exact, char *buf, size_t size)
{
	if (a->dt != b->dt || a->ndim != b->ndim || memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->ndim))
		return "dtype or shape";
	for (int64_t k = 0; k < a->numel; k++) {
		double x = elem(a, k), y = elem(b, k);
		if (x == y || (isnan(x) && isnan(y)))
			continue;
		double m = fmax(fmax(fabs(x), fabs(y)), 1);
		if (!exact && !isinf(x) && !isinf(y) && fabs(x - y) <= 1e-6 * m)
			continue;
		snprintf(buf, size, "element %lld: %.9g vs %.9g", (long long)k, x, y);
		return buf;
	}
	return NULL;
}

/* runs g on inputs of the example sizes (+grow on each symbol); the
 * outputs (new references) or -1 with the error */
static int run(const struct graph *g, int grow, value *outs)
{
	tensor *in[32];
	int nin;
	make_inputs(g, grow, in, &nin);
	value seed = val_int(7);
	ops_call(OPS_manual_seed, &seed);
	int rc = graph_interpret(vm, g, in, outs);
	for (int i = 0; i < nin; i++)
		tensor_decref(in[i]);
	return rc;
}

static bool has_stack(void *const *stacks, int n, const void *s)
{
	for (int i = 0; i < n; i++)
		if (stacks[i] == s)
			return true;
	return false;
}

static bool named_in(const struct graph *g, const char *name)
{
	for (int i = 0; i < g->nnodes; i++)
		if (!strcmp(g->nodes[i].name, name))
			return true;
	return false;
}

static int decomposed[OPS_COUNT];
static int sizes_run; /* the sizes check_graph compared outputs at */

/* decomposes a copy of g and checks it against g; the composites it had */
static int check_graph(const struct graph *g, bool exact, const char *text)
{
	struct graph *c = graph_copy(g);
	ck_assert_ptr_nonnull(c);
	void *stacks[256];
	int ncomp = 0;
	for (int i = 0; i < c->nnodes; i++)
		if (c->nodes[i].kind == GN_OP && ops_table[c->nodes[i].op].stage == OPST_COMP) {
			ck_assert_int_lt(ncomp, 256);
			stacks[ncomp++] = c->nodes[i].stack;
			decomposed[c->nodes[i].op]++;
		}
	ck_assert_msg(aot_decompose(c, NULL) == 0, "%s\nin\n%s", tj_error_peek(), text);
	struct strbuf why = STRBUF_INIT;
	ck_assert_msg(graph_verify(c, &why) == 0, "%s\nin\n%s", why.buf, text);
	sb_release(&why);
	for (int i = 0; i < c->nnodes; i++) {
		const struct gnode *n = &c->nodes[i];
		ck_assert_msg(n->kind != GN_OP || ops_table[n->op].stage == OPST_PRIM, "%s left in\n%s", n->name,
			      text);
		/* a new node: the stack of the composite it came from */
		if (n->kind != GN_INPUT && !named_in(g, n->name))
			ck_assert_msg(has_stack(stacks, ncomp, n->stack), "%s: another stack in\n%s", n->name, text);
	}
	for (int grow = 0; grow <= (g->nsyms ? 3 : 0); grow += 3) {
		value want[8], got[8];
		ck_assert_int_le(g->noutputs, 8);
		if (run(g, grow, want) < 0) {
			/* another size the guards would refuse: the example must run */
			ck_assert_msg(grow > 0, "%s\nin\n%s", tj_error_peek(), text);
			tj_error_clear();
			continue;
		}
		ck_assert_msg(run(c, grow, got) == 0, "%s\nin\n%s", tj_error_peek(), text);
		sizes_run++;
		for (int k = 0; k < g->noutputs; k++) {
			char buf[128];
			const char *d = differ(val_as_tensor(want[k]), val_as_tensor(got[k]), exact, buf, sizeof buf);
			ck_assert_msg(!d, "output %d (+%d): %s in\n%s", k, grow, d, text);
			val_decref(want[k]);
			val_decref(got[k]);
		}
	}
	graph_free(c);
	return ncomp;
}

/* f(x)'s bodies, x of shape (n, 4, 5) for n = 3, 4, 6, with dynamic=True
 * and None. exact: the decomposition does the kernel's operations in its
 * order; else float32 tolerance (a reduction, BLAS, a rounding between
 * steps that the kernel keeps in double) */
static const struct {
	const char *body;
	bool exact;
} bodies[] = {
	{"    return sigmoid(x) + x.long().sigmoid() + (x > 0).sigmoid()\n", true},
	{"    return silu(x) + silu(x.long())\n", true},
	{"    return x.rsqrt() + x.abs().rsqrt() + x.long().rsqrt()\n", true},
	{"    return x.reciprocal() + x.long().reciprocal()\n", true},
	{"    return clamp(x, -1, 1) + x.clamp(min=0.5) + x.long().clamp(0.5) + x.long().clamp(-1, 1)\n", true},
	{"    return x.mean() + x.mean(1).sum() + x.mean((0, 2), keepdim=True).sum() + x.mean(-1, dtype=float64).sum()\n",
	 false},
	{"    return x.var() + x.var(0).sum() + x.var((1, 2), correction=0).sum() + x.var(1, False, True).sum()\n",
	 false},
	{"    return x.var(-1, correction=4) + x.var(-1, correction=9)\n", false},
	{"    return softmax(x, 1) + log_softmax(x, -1) + softmax(x.long(), 0)\n", false},
	{"    y = linear(x, ones(3, 5), zeros(3)) + linear(x, x[0, :3] * 2) + linear(x, x[0, 0]).sum()\n"
	 "    return y + linear(x, ones(3, 5), x[1, 0, 0])\n", false},
	{"    return x.view(-1, 5) * 2 + x.view(x.shape[0] * 4, 5)\n", true},
	{"    return x.transpose(0, 2) + x.transpose(-1, 0) + x.T\n", true},
	{"    return x.unsqueeze(1).squeeze(1) + x[:, :1].squeeze().unsqueeze(1) + x.squeeze(0)\n", true},
	{"    return x.flatten(1).sum(1) + x.flatten(0, 1).sum(0).sum() + x.flatten().sum()\n", true},
	{"    return stack([x, x + 1]).sum(0) + stack((x, x), -1).sum(-1) + stack([x[0], x[1]], 1).sum()\n", true},
	{"    return x.contiguous() * 2 + x.detach()\n", true},
	{"    return x.float() + x.double() + x.long() + x.bool() + (x > 0).float()\n", true},
	{"    return zeros_like(x) + ones_like(x, dtype=float64) + ones_like(x.long()) + zeros_like(x, dtype=bool)\n",
	 true},
	{"    return randn_like(x) + rand_like(x, dtype=float64) + x\n", true},
	{"    return eye(3).sum() + eye(2, 4, dtype=int64).sum() + x\n", true},
	{"    return softmax(linear(x, eye(5)), 2).mean(1).sum() + sigmoid(x).var(0).sum()\n", false},
};

START_TEST(test_programs)
{
	char text[2048];
	for (int dyn = 0; dyn < 2; dyn++) {
		snprintf(text, sizeof text,
			 "def f(x):\n%s"
			 "g = compile(f, backend=\"eager\", dynamic=%s)\n"
			 "for n in [3, 4, 6]:\n"
			 "    g(arange(n * 20).reshape(n, 4, 5).float() / 7 - 5)\n",
			 bodies[_i].body, dyn ? "True" : "None");
		run_capturing(text);
		ck_assert_msg(ngraphs > 0, "no graph in\n%s", text);
		int ncomp = 0;
		for (int k = 0; k < ngraphs; k++)
			ncomp += check_graph(graphs[k], bodies[_i].exact, text);
		ck_assert_msg(ncomp > 0, "no composite in\n%s", text);
		drop_graphs();
	}
}
END_TEST

/* every composite decomposed by some program above (run in one process) */
START_TEST(test_every_row_run)
{
	for (int op = 0; op < OPS_COUNT; op++)
		if (aot_decomp_has(op) && op != OPS_requires_grad_)
			ck_assert_msg(decomposed[op] > 0, "no program decomposes %s", ops_table[op].name);
}
END_TEST

/* one graph compiled from body with f(x), x = `arg` */
static struct graph *one_graph(const char *body, const char *arg, const char *dynamic)
{
	static char text[1024];
	snprintf(text, sizeof text, "def f(x):\n%sg = compile(f, backend=\"eager\", dynamic=%s)\ng(%s)\n", body, dynamic, arg);
	run_capturing(text);
	ck_assert_int_eq(ngraphs, 1);
	return graphs[0];
}

/* mean and var over a symbolic dimension: the count is made of the
 * symbol, and the graph runs for two sizes of it */
START_TEST(test_symbolic_count)
{
	const char *text = "    return x.mean(0) + x.var(0, correction=2) + x.mean()\n";
	struct graph *g = one_graph(text, "arange(12).reshape(3, 4).float()", "True");
	ck_assert_int_eq(g->nodes[0].kind, GN_INPUT);
	ck_assert_int_ge(g->nodes[0].shape[0].sym, 0);
	sizes_run = 0;
	check_graph(g, false, text);
	ck_assert_int_eq(sizes_run, 2);
	struct graph *c = graph_copy(g);
	ck_assert_int_eq(aot_decompose(c, NULL), 0);
	int counts = 0;
	for (int i = 0; i < c->nnodes; i++)
		if (c->nodes[i].kind == GN_OP && c->nodes[i].op == OPS_full && c->nodes[i].args[1].kind == GARG_SYM)
			counts++;
	ck_assert_int_eq(counts, 4); /* mean(0), var(0) and its mean, mean() */
	graph_free(c);
}
END_TEST

START_TEST(test_requires_grad_)
{
	/* x.detach() made into x.requires_grad_(True): the identity too */
	struct graph *g = one_graph("    return x.detach() * 2\n", "ones(2)", "False");
	struct gnode *n = &g->nodes[1];
	ck_assert_int_eq(n->op, OPS_detach);
	struct garg *args = graph_alloc(g, sizeof *args * 2);
	ck_assert_ptr_nonnull(args);
	args[0] = n->args[0];
	args[1] = (struct garg){.kind = GARG_CONST, .constant = val_bool(true)};
	n->op = OPS_requires_grad_;
	n->args = args;
	n->nargs = 2;
	sizes_run = 0;
	ck_assert_int_eq(check_graph(g, true, "requires_grad_"), 1);
	ck_assert_int_eq(sizes_run, 1);
}
END_TEST

START_TEST(test_golden_softmax)
{
	struct graph *g = one_graph("    return softmax(x, 1)\n", "ones(2, 3)", "False");
	/* in a compile, the pass is its phase "decompose" */
	struct compile_ctx cc;
	compile_ctx_init(&cc, NULL, NULL, NULL, "0/0");
	ck_assert_int_eq(aot_decompose(g, &cc), 0);
	ck_assert_int_eq(cc.nphases, 1);
	ck_assert_str_eq(cc.phases[0].name, "decompose");
	ck_assert_int_eq(cc.open, -1);
	compile_ctx_release(&cc);
	struct strbuf out = STRBUF_INIT;
	graph_print(g, &out);
	ck_assert_str_eq(out.buf, "graph 0/0 f (prog.tj:1) · 5 ops\n"
				  "  x: f32[2, 3] = input L['x']\n"
				  "  max_1: tuple = max(x, 1, True)           # prog.tj:2  return softmax(x, 1)\n"
				  "  getitem: f32[2, 1] = max_1[0]            # prog.tj:2\n"
				  "  sub: f32[2, 3] = sub(x, getitem)         # prog.tj:2\n"
				  "  exp: f32[2, 3] = exp(sub)                # prog.tj:2\n"
				  "  sum_1: f32[2, 1] = sum(exp, 1, True)     # prog.tj:2\n"
				  "  div: f32[2, 3] = div(exp, sum_1)         # prog.tj:2\n"
				  "  return (div,)\n");
	sb_release(&out);
}
END_TEST

/* a decomposition that fails names the op and the user line */
START_TEST(test_error_names_the_line)
{
	struct graph *g = one_graph("    y = x * 2\n    return softmax(y, 0)\n", "zeros(0, 3)", "False");
	ck_assert_int_eq(aot_decompose(g, NULL), -1);
	ck_assert_str_eq(tj_error_peek(), "cannot decompose softmax at prog.tj:3: max(): expected a non-empty tensor");
}
END_TEST

/* ---- the aot_eager backend ---- */

/* the first op node of g that is op, or NULL */
static const struct gnode *find_op(const struct graph *g, int op)
{
	for (int i = 0; i < g->nnodes; i++)
		if (g->nodes[i].kind == GN_OP && g->nodes[i].op == op)
			return &g->nodes[i];
	return NULL;
}

/* compiles g with aot_eager under bug (stage aot when not INJECT_NONE) and
 * runs it on the example inputs: the run's status, its first output in
 * *out (a new reference), the compile's context in *cc (to release) */
static int aot_eager_run(const struct graph *g, enum inject_stage stage, enum inject_kind kind,
			 struct compile_ctx *cc, value *out)
{
	static struct inject_bug bug;
	bug = (struct inject_bug){stage, kind};
	compile_ctx_init(cc, NULL, &bug, NULL, "0/0");
	void *a = backend_aot_eager.compile(cc, g);
	if (!a)
		return -2;
	tensor *in[32];
	int nin;
	make_inputs(g, 0, in, &nin);
	value outs[8];
	ck_assert_int_le(g->noutputs, 8);
	int rc = backend_aot_eager.run(a, vm, in, outs);
	for (int i = 0; i < nin; i++)
		tensor_decref(in[i]);
	if (rc == 0) {
		*out = outs[0];
		for (int i = 1; i < g->noutputs; i++)
			val_decref(outs[i]);
	}
	backend_aot_eager.release(a);
	return rc;
}

/* the forward graph handed back: decomposed, stage aot_forward, timed as
 * "decompose"; what runs computes what the captured graph does */
START_TEST(test_aot_eager_forward)
{
	struct graph *g = one_graph("    return x.sigmoid().detach() + x.mean()\n", "ones(3)", "False");
	struct compile_ctx cc;
	value got, want;
	ck_assert_int_eq(aot_eager_run(g, INJECT_NONE, INJECT_COMPILE_ERROR, &cc, &got), 0);
	ck_assert_int_eq(cc.ngraphs, 1);
	const struct graph *f = cc.graphs[0];
	ck_assert_int_eq(f->stage, STAGE_AOT_FORWARD);
	ck_assert_str_eq(f->compile_id, g->compile_id);
	for (int i = 0; i < f->nnodes; i++)
		ck_assert_msg(f->nodes[i].kind != GN_OP || ops_table[f->nodes[i].op].stage != OPST_COMP, "%s left",
			      f->nodes[i].name);
	ck_assert_int_eq(cc.nphases, 1);
	ck_assert_str_eq(cc.phases[0].name, "decompose");
	compile_ctx_release(&cc);
	ck_assert_int_eq(run(g, 0, &want), 0);
	char buf[128];
	const char *d = differ(val_as_tensor(got), val_as_tensor(want), false, buf, sizeof buf);
	ck_assert_msg(d == NULL, "%s", d);
	val_decref(got);
	val_decref(want);
}
END_TEST

/* with an input that requires grad: detach decomposed (a copy that stops
 * the gradient), the joint split into the forward and backward graphs
 * handed back, the three phases timed; the output's tape is ONE node,
 * straight to the input */
START_TEST(test_aot_eager_grad)
{
	struct graph *g = one_graph("    return x.detach().rsqrt() * x\n", "ones(3, requires_grad=True)", "False");
	struct compile_ctx cc;
	value got;
	ck_assert_int_eq(aot_eager_run(g, INJECT_NONE, INJECT_COMPILE_ERROR, &cc, &got), 0);
	ck_assert_int_eq(cc.ngraphs, 2);
	ck_assert_int_eq(cc.graphs[0]->stage, STAGE_AOT_FORWARD);
	ck_assert_int_eq(cc.graphs[1]->stage, STAGE_AOT_BACKWARD);
	ck_assert_ptr_null(find_op(cc.graphs[0], OPS_detach));
	ck_assert_ptr_null(find_op(cc.graphs[0], OPS_rsqrt));
	ck_assert_int_eq(cc.nphases, 3);
	ck_assert_str_eq(cc.phases[0].name, "decompose");
	ck_assert_str_eq(cc.phases[1].name, "joint");
	ck_assert_str_eq(cc.phases[2].name, "partition");
	/* the saved tensors, for the log: the forward graph's last outputs */
	ck_assert_ptr_eq(cc.saved.fwd, cc.graphs[0]);
	ck_assert_int_gt(cc.saved.nsaved, 0);
	ck_assert_int_eq(cc.graphs[0]->noutputs, 1 + cc.saved.nsaved);
	compile_ctx_release(&cc);
	tensor *t = val_as_tensor(got);
	char buf[64];
	ck_assert(t->requires_grad && t->grad_fn);
	ck_assert_str_eq(ag_node_name(t->grad_fn, buf, sizeof buf), "CompiledFunctionBackward");
	ck_assert_int_eq(t->grad_fn->ninputs, 1);
	ck_assert_ptr_null(t->grad_fn->inputs[0].node);
	ck_assert_ptr_nonnull(t->grad_fn->inputs[0].leaf);
	val_decref(got);
}
END_TEST

/* a graph that makes a tensor requiring grad from one that did not runs
 * on the autograd tape, which needs detach and requires_grad_: they stay */
START_TEST(test_aot_eager_keeps_detach)
{
	struct graph *g = one_graph("    return x.detach().requires_grad_().rsqrt() * x\n", "ones(3, requires_grad=True)", "False");
	struct compile_ctx cc;
	value got;
	ck_assert_int_eq(aot_eager_run(g, INJECT_NONE, INJECT_COMPILE_ERROR, &cc, &got), 0);
	ck_assert_int_eq(cc.ngraphs, 1);
	ck_assert_ptr_nonnull(find_op(cc.graphs[0], OPS_detach));
	ck_assert_ptr_null(find_op(cc.graphs[0], OPS_rsqrt));
	compile_ctx_release(&cc);
	val_decref(got);
	/* the pass itself keeps what it is asked to only */
	struct graph *c = graph_copy(g);
	ck_assert_int_eq(aot_decompose(c, NULL), 0);
	ck_assert_ptr_null(find_op(c, OPS_detach));
	graph_free(c);
}
END_TEST

/* TJIT_INJECT_BUG=aot:<kind> on a graph with relu; inductor's is not aot's */
START_TEST(test_aot_eager_inject)
{
	struct graph *g = one_graph("    return relu(x)\n", "ones(2)", "False");
	struct compile_ctx cc;
	value got;
	ck_assert_int_eq(aot_eager_run(g, INJECT_AOT, INJECT_COMPILE_ERROR, &cc, &got), -2);
	ck_assert_str_eq(tj_error_peek(),
			 "aot_eager: AotCompileError: the graph uses relu (TJIT_INJECT_BUG=aot:compile_error)");
	/* a compiler that fails (for the minifier), not an unsupported graph */
	ck_assert(!cc.unsupported);
	tj_error_clear();
	compile_ctx_release(&cc);
	ck_assert_int_eq(aot_eager_run(g, INJECT_AOT, INJECT_RUNTIME_ERROR, &cc, &got), -1);
	ck_assert_str_eq(tj_error_peek(),
			 "aot_eager: AotRuntimeError: the graph uses relu (TJIT_INJECT_BUG=aot:runtime_error)");
	tj_error_clear();
	compile_ctx_release(&cc);
	/* relu(x) computed as x + 1: the handed-back graph shows it */
	ck_assert_int_eq(aot_eager_run(g, INJECT_AOT, INJECT_ACCURACY, &cc, &got), 0);
	ck_assert_ptr_null(find_op(cc.graphs[0], OPS_relu));
	ck_assert_ptr_nonnull(find_op(cc.graphs[0], OPS_add));
	tensor *in[32];
	int nin;
	make_inputs(g, 0, in, &nin);
	const tensor *a = val_as_tensor(got);
	for (int64_t k = 0; k < a->numel; k++)
		ck_assert_double_eq(elem(a, k), (float)(elem(in[0], k) + 1));
	tensor_decref(in[0]);
	val_decref(got);
	compile_ctx_release(&cc);
	ck_assert_int_eq(aot_eager_run(g, INJECT_INDUCTOR, INJECT_COMPILE_ERROR, &cc, &got), 0);
	val_decref(got);
	compile_ctx_release(&cc);
}
END_TEST

/* a graph aot_eager cannot decompose is unsupported: the frame evaluator
 * runs it on the fallback, eager, rather than raise */
START_TEST(test_aot_eager_unsupported)
{
	struct graph *g = one_graph("    y = x * 2\n    return softmax(y, 0)\n", "zeros(0, 3)", "False");
	struct compile_ctx cc;
	value got;
	ck_assert_int_eq(aot_eager_run(g, INJECT_NONE, INJECT_COMPILE_ERROR, &cc, &got), -2);
	ck_assert_str_eq(tj_error_peek(),
			 "aot_eager: cannot decompose softmax at prog.tj:3: max(): expected a non-empty tensor");
	ck_assert(cc.unsupported);
	ck_assert_ptr_eq(backend_aot_eager.fallback, &backend_eager);
	ck_assert_ptr_null(backend_eager.fallback);
	tj_error_clear();
	compile_ctx_release(&cc);
}
END_TEST

static Suite *decompose_suite(void)
{
	Suite *s = suite_create("decompose");
	TCase *tc = tcase_create("table");
	tcase_add_test(tc, test_every_op_covered);
	suite_add_tcase(s, tc);

	tc = tcase_create("graphs");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_programs, 0, (int)(sizeof bodies / sizeof *bodies));
	tcase_add_test(tc, test_every_row_run);
	tcase_add_test(tc, test_symbolic_count);
	tcase_add_test(tc, test_requires_grad_);
	tcase_add_test(tc, test_golden_softmax);
	tcase_add_test(tc, test_error_names_the_line);
	tcase_add_test(tc, test_aot_eager_forward);
	tcase_add_test(tc, test_aot_eager_grad);
	tcase_add_test(tc, test_aot_eager_keeps_detach);
	tcase_add_test(tc, test_aot_eager_inject);
	tcase_add_test(tc, test_aot_eager_unsupported);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(decompose_suite());
	/* in one process: test_every_row_run reads what the programs decomposed */
	srunner_set_fork_status(sr, CK_NOFORK);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	tensor_cache_clear();
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
