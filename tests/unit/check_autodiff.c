/* check_autodiff.c - aot_eager's graph autodiff (core/stages/aot_autodiff.c):
 * graphs traced from tj programs through the real tracer with inputs that
 * require grad, decomposed, then aot_joint and aot_partition: running the
 * forward graph, then the backward graph on ones (or zeros) tangents,
 * gives the outputs and the gradients of eager autograd on the captured
 * graph; both graphs pass graph_verify; the saved tensors are those the
 * partition rule says; a new node keeps the line of the node it
 * differentiates; an op without a rule is an error naming it and its line.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TEST_CAPTURE_GRAPHS
#include "program_test_util.h"
#include "aot_autodiff.h"
#include "aot_decompose.h"
#include "autograd.h"
#include "compile_log.h"
#include "compiler.h"
#include "error.h"
#include "frame_eval.h"
#include "graph.h"
#include "ops.h"
#include "ops_meta.h"
#include "prelude.h"
#include "runtime.h"
#include "strbuf.h"
#include "vm.h"

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

/* the inputs of g at its example sizes (+grow on each symbol):
 * deterministic values in [-3, 3), some of them integers (ties), or in
 * [0.5, 3.5) when positive */
static void make_inputs(const struct graph *g, int grow, bool positive, tensor **in, int *nin)
{
	*nin = 0;
	uint32_t seed = 4321;
	for (int i = 0; i < g->nnodes && g->nodes[i].kind == GN_INPUT; i++) {
		const struct gnode *n = &g->nodes[i];
		int64_t shape[TENSOR_MAX_DIMS];
		for (int d = 0; d < n->ndim; d++)
			shape[d] = n->shape[d].value + (n->shape[d].sym >= 0 ? grow : 0);
		tensor *t = tensor_zeros(n->dt, n->ndim, shape);
		ck_assert_ptr_nonnull(t);
		for (int64_t k = 0; k < t->numel; k++) {
			seed = seed * 1103515245u + 12345u;
			double v = (double)(seed >> 8) / (double)(1u << 24);
			v = positive ? 0.5 + 3 * v : 6 * v - 3;
			if (k % 5 == 2)
				v = round(v);
			if (n->dt == DT_FLOAT32)
				((float *)t->data)[k] = (float)v;
			else if (n->dt == DT_FLOAT64)
				((double *)t->data)[k] = v;
			else if (n->dt == DT_INT64)
				((int64_t *)t->data)[k] = (int64_t)round(v);
			else
				((uint8_t *)t->data)[k] = v > 0;
		}
		in[(*nin)++] = t;
	}
}

static double elem(const tensor *t, int64_t k) { return tensor_get_double(t, k); }

/* the first difference of a and b (NULL: zeros) beyond float32
 * tolerance, or NULL */
static const char *differ(const tensor *a, const tensor *b, char *buf, size_t size)
{
	const tensor *s = a ? a : b;
	if (!s)
		return NULL;
	if (a && b && (a->dt != b->dt || a->ndim != b->ndim || memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->ndim)))
		return "dtype or shape";
	for (int64_t k = 0; k < s->numel; k++) {
		double x = a ? elem(a, k) : 0, y = b ? elem(b, k) : 0;
		if (x == y || (isnan(x) && isnan(y)))
			continue;
		if (fabs(x - y) <= 2e-5 * fmax(fmax(fabs(x), fabs(y)), 1))
			continue;
		snprintf(buf, size, "element %lld: %.9g vs %.9g", (long long)k, x, y);
		return buf;
	}
	return NULL;
}

#define MAXV 16

/* the policy of the partitions checked */
static struct aot_policy policy = {AOT_RECOMPUTE_CHEAP, 0};

/* the last partition checked, for the tests that look further */
static struct aot_partition last;
static struct aot_joint last_joint;

/* each op node of the joint has the type its shape rule gives (the
 * builder types the plain pointwise ones without asking the rule) */
static void check_types(const struct graph *j, const char *text)
{
	for (int i = 0; i < j->nnodes; i++) {
		const struct gnode *n = &j->nodes[i];
		if (n->kind != GN_OP || n->nouts)
			continue;
		struct meta_out out;
		ck_assert_msg(meta_infer_node(j, n, NULL, &out) == 0, "%s: %s in\n%s", n->name, tj_error_peek(), text);
		ck_assert_int_eq(out.n, 1);
		bool same = out.t[0].dt == n->dt && out.t[0].ndim == n->ndim;
		for (int d = 0; same && d < n->ndim; d++)
			same = out.t[0].shape[d].sym == n->shape[d].sym && out.t[0].shape[d].value == n->shape[d].value;
		ck_assert_msg(same, "%s: not the type of its rule in\n%s", n->name, text);
	}
}

/* g decomposed, its joint and partition; forward then backward against
 * eager autograd on g, at the example sizes (and +3 with symbols);
 * tangent k is zero when bit k of zero_tangents is set */
static void check_grads(const struct graph *g, const char *text, bool positive, unsigned zero_tangents)
{
	struct graph *d = graph_copy(g);
	ck_assert_ptr_nonnull(d);
	ck_assert_msg(aot_decompose(d, NULL) == 0, "%s\nin\n%s", tj_error_peek(), text);
	bool rg[MAXV];
	int nin = 0;
	for (; nin < g->nnodes && g->nodes[nin].kind == GN_INPUT; nin++)
		rg[nin] = g->nodes[nin].requires_grad;
	aot_partition_release(&last);
	aot_joint_release(&last_joint);
	ck_assert_msg(aot_joint(d, rg, &last_joint) == 0, "%s\nin\n%s", tj_error_peek(), text);
	check_types(last_joint.g, text);
	ck_assert_msg(aot_partition(&last_joint, &policy, &last) == 0, "%s\nin\n%s", tj_error_peek(), text);
	graph_free(d);
	struct aot_partition *p = &last;
	struct strbuf why = STRBUF_INIT;
	ck_assert_msg(graph_verify(p->fwd, &why) == 0, "forward: %s\nin\n%s", why.buf, text);
	ck_assert_msg(graph_verify(p->bwd, &why) == 0, "backward: %s\nin\n%s", why.buf, text);
	sb_release(&why);
	ck_assert_int_eq(p->fwd->stage, STAGE_AOT_FORWARD);
	ck_assert_int_eq(p->bwd->stage, STAGE_AOT_BACKWARD);
	ck_assert_int_eq(p->noutputs, g->noutputs);
	ck_assert_int_eq(p->fwd->noutputs, p->noutputs + p->nsaved);

	for (int grow = 0; grow <= (g->nsyms ? 3 : 0); grow += 3) {
		tensor *in[MAXV], *din[MAXV];
		int n;
		make_inputs(g, grow, positive, in, &n);
		ck_assert_int_eq(n, nin);
		/* eager: the captured graph on leaves that require grad */
		for (int i = 0; i < n; i++) {
			din[i] = tensor_copy(in[i]);
			din[i]->requires_grad = rg[i];
		}
		value want[MAXV], got[MAXV], grads[MAXV];
		tensor *tan[MAXV];
		ck_assert_int_le(p->fwd->noutputs, MAXV);
		ck_assert_msg(graph_interpret(vm, g, din, want) == 0, "%s\nin\n%s", tj_error_peek(), text);
		ck_assert_msg(graph_interpret(vm, p->fwd, in, got) == 0, "forward: %s\nin\n%s", tj_error_peek(), text);
		int nt = 0;
		for (int k = 0; k < g->noutputs; k++) {
			tensor *w = val_as_tensor(want[k]);
			char buf[128];
			const char *e = differ(w, val_as_tensor(got[k]), buf, sizeof buf);
			ck_assert_msg(!e, "output %d: %s in\n%s", k, e, text);
			bool has = nt < last_joint.ntangents && last_joint.tangent_of[nt] == k;
			ck_assert_msg(has == w->requires_grad, "output %d: tangent %d, eager requires grad %d in\n%s", k, has,
				      w->requires_grad, text);
			if (!has)
				continue;
			tan[nt] = tensor_full(w->dt, w->ndim, w->shape, zero_tangents >> k & 1 ? 0.0 : 1.0);
			ck_assert_int_eq(ag_backward(w, tan[nt], true), 0);
			nt++;
		}
		/* backward: the saved, then the tangents */
		tensor *bin[2 * MAXV];
		int nb = 0;
		for (int k = 0; k < p->nsaved; k++)
			bin[nb++] = val_as_tensor(got[p->noutputs + k]);
		for (int k = 0; k < nt; k++)
			bin[nb++] = tan[k];
		ck_assert_int_le(p->bwd->noutputs, MAXV);
		ck_assert_msg(graph_interpret(vm, p->bwd, bin, grads) == 0, "backward: %s\nin\n%s", tj_error_peek(), text);
		for (int i = 0; i < n; i++) {
			const tensor *mine = p->grad_output[i] >= 0 ? val_as_tensor(grads[p->grad_output[i]]) : NULL;
			char buf[128];
			const char *e = differ(din[i]->grad, mine, buf, sizeof buf);
			ck_assert_msg(!e, "gradient of input %d (+%d): %s in\n%s", i, grow, e, text);
			ck_assert_msg(rg[i] || !mine, "a gradient for input %d in\n%s", i, text);
		}
		for (int k = 0; k < p->bwd->noutputs; k++)
			val_decref(grads[k]);
		for (int k = 0; k < p->fwd->noutputs; k++)
			val_decref(got[k]);
		for (int k = 0; k < g->noutputs; k++)
			val_decref(want[k]);
		for (int k = 0; k < nt; k++)
			tensor_decref(tan[k]);
		for (int i = 0; i < n; i++) {
			tensor_decref(in[i]);
			tensor_decref(din[i]);
		}
	}
}

/* runs f(x, y) compiled on the given arguments; checks each graph */
static void check_program(const char *body, const char *args, bool positive, unsigned zero_tangents)
{
	char text[2048];
	snprintf(text, sizeof text, "def f(x, y):\n%sg = compile(f, backend=\"eager\")\n%s", body, args);
	run_capturing(text);
	ck_assert_msg(ngraphs > 0, "no graph in\n%s", text);
	for (int k = 0; k < ngraphs; k++)
		check_grads(graphs[k], text, positive, zero_tangents);
}

#define XY "x = randn(3, 4, requires_grad=True)\ny = randn(3, 4, requires_grad=True)\ng(x, y)\n"
#define XY_ONE "x = randn(3, 4, requires_grad=True)\ny = randn(3, 4)\ng(x, y)\n"

/* f's body, the arguments' lines, whether they are positive */
static const struct {
	const char *body, *args;
	bool positive;
} cases[] = {
	{"    return x.neg() + x.abs() + x.exp() + x.sin() + x.cos() + x.tanh() + x.relu() + gelu(x) + y\n", XY, false},
	{"    return x.log() + x.sqrt() * y\n", XY, true},
	{"    return x.floor() + x.ceil() + x.round() + x.sign() + y.round(1) + x * 2\n", XY, false},
	{"    return x + y, x - y, x * y, x / y, 1 - x, 2 / y\n", XY, true},
	{"    return x ** y + x ** 2 + 2 ** x + x ** 0 + y ** 0.5\n", XY, true},
	{"    return x % y + x // y + maximum(x, y) + minimum(x, y.round())\n", XY, true},
	{"    return where(x > y, x, y) + where(x > 0, x * 3, y)\n", XY, false},
	{"    return x.sum() + x.sum(0).sum() + y.sum((0, 1), keepdim=True).sum() + x.sum(-1, keepdim=True)\n", XY, false},
	{"    z = x * (x.abs() > 1)\n    return x.prod() + x.prod(1).sum() + z.prod(0, keepdim=True) + z.prod() + z.prod(1)[:, None]\n",
	 XY_ONE, false},
	{"    return x.max() + x.max(1)[0].sum() + y.min(0, keepdim=True)[0] + max(x, y) + x.round().max()\n", XY, false},
	{"    return sigmoid(x) + silu(y) + x.rsqrt() + y.reciprocal() + clamp(x, 1.1, 2.1) + x.clamp(min=y * 0.5 + 0.125)\n", XY, true},
	{"    return x.clamp(-1.5, 0.5) * y + x.clamp(max=0.25) + y.double().clamp(min=-0.75) + maximum(x, 1.0) * minimum(y, 0)\n", XY, false},
	{"    return x.mean() + x.mean(1, keepdim=True) + y.var(0) + softmax(x, 1) * y + log_softmax(y, 0)\n", XY, false},
	{"    return x @ y.T, x.T @ y, (x @ y[0]).sum(), linear(x, y, y[0, :3])\n", XY, false},
	{"    return x @ y\n", "x = randn(2, 3, 4, requires_grad=True)\ny = randn(4, 5, requires_grad=True)\ng(x, y)\n",
	 false},
	{"    return x @ y\n", "x = randn(4, requires_grad=True)\ny = randn(2, 4, 5, requires_grad=True)\ng(x, y)\n",
	 false},
	{"    return x.reshape(6, 2) * 2, x.permute(1, 0) * y.T, x.transpose(0, 1).flatten(), x.unsqueeze(0) + y\n",
	 XY, false},
	{"    return x.expand(3, 4) * y, stack([x[0], y[0]]).sum(0), x.view(4, 1).squeeze()\n",
	 "x = randn(1, 4, requires_grad=True)\ny = randn(3, 4, requires_grad=True)\ng(x, y)\n", false},
	{"    return x * y + y, (x * y).sum(0)\n", "x = randn(3, 4, requires_grad=True)\ny = randn(4, requires_grad=True)\ng(x, y)\n", false},
	{"    return x * y, x - y\n", "x = randn(3, 4, requires_grad=True)\ny = randn(3, 1, requires_grad=True)\ng(x, y)\n", false},
	{"    return x.sin() * y, y.exp()\n", XY_ONE, false},
	{"    return (x.double() * 2).sum() + y.long().sum(), x.to(float64).exp(), x > y\n", XY, false},
	{"    return x.contiguous().clone() * y.detach()\n", XY, false},
	{"    return x, y * 2, x\n", XY, false},
	{"    return x[1:3] * 2, x[:, 1] + y[:, 0], x[-1, 1:3], y[:, :2].sum()\n", XY, false},
	{"    return x.argmax() + (x > 0).sum() + x.long() * 2, x * ones(3, 4) + arange(4) + full((3, 1), 2.0)\n", XY_ONE, false},
};

START_TEST(test_rules)
{
	check_program(cases[_i].body, cases[_i].args, cases[_i].positive, 0);
	drop_graphs();
}
END_TEST

/* an output the loss does not use: a zero tangent */
START_TEST(test_unused_output)
{
	check_program("    return x.sin(), x.cos() * y\n", XY, false, 2);
	drop_graphs();
}
END_TEST

/* symbolic sizes stay symbolic: the graphs run at another size too */
START_TEST(test_dynamic)
{
	const char *text = "def f(x):\n"
			   "    return (x * x).sum(1).sin().sum() + x.mean() + softmax(x, 0).max(0)[0] * x.sum(0).exp()\n"
			   "g = compile(f, backend=\"eager\", dynamic=True)\n"
			   "g(randn(3, 4, requires_grad=True))\n";
	run_capturing(text);
	ck_assert_int_eq(ngraphs, 1);
	ck_assert_int_gt(graphs[0]->nsyms, 0);
	check_grads(graphs[0], text, false, 0);
	drop_graphs();
}
END_TEST

static const char *saved_name(int k) { return last.fwd->nodes[last.fwd->outputs[last.noutputs + k]].name; }

/* sin, cos, mul need x, sin(x) and cos(sin(x)): one input of 48 bytes
 * recomputes all three of 48 bytes each */
START_TEST(test_recompute_wins)
{
	check_program("    a = x.sin()\n    b = a.cos()\n    return b * b * y\n", XY_ONE, false, 0);
	ck_assert_int_eq(last.nsaved, 2);
	ck_assert_str_eq(saved_name(0), "x");
	ck_assert_str_eq(saved_name(1), "y");
	ck_assert_int_eq(last.saved_bytes, 2 * 48);
	ck_assert_int_gt(last.nrecomputed, 0);
	/* backward recomputes sin and cos from x */
	int sins = 0;
	for (int i = 0; i < last.bwd->nnodes; i++)
		sins += last.bwd->nodes[i].kind == GN_OP && last.bwd->nodes[i].op == OPS_sin;
	ck_assert_int_ge(sins, 2);
	drop_graphs();
}
END_TEST

/* the bytes the last partition saves beyond the primals */
static int64_t saved_beyond_primals(void)
{
	int64_t bytes = last.saved_bytes;
	for (int k = 0; k < last.nsaved; k++) {
		const struct gnode *n = &last.fwd->nodes[last.fwd->outputs[last.noutputs + k]];
		if (n->kind == GN_INPUT)
			bytes -= 4 * 12; /* the f32[3, 4] primals */
	}
	return bytes;
}

static int count_op(const struct graph *g, int op)
{
	int k = 0;
	for (int i = 0; i < g->nnodes; i++)
		k += g->nodes[i].kind == GN_OP && g->nodes[i].op == op;
	return k;
}

/* every case's gradients under AOT_RECOMPUTE_BUDGET, with no budget (each
 * node recomputed that can be) and with room for everything (nothing
 * recomputed but what costs no kernel) */
START_TEST(test_rules_budget)
{
	policy = (struct aot_policy){AOT_RECOMPUTE_BUDGET, 0};
	check_program(cases[_i].body, cases[_i].args, cases[_i].positive, 0);
	drop_graphs();
	policy.budget = INT64_MAX;
	check_program(cases[_i].body, cases[_i].args, cases[_i].positive, 0);
	drop_graphs();
	policy = (struct aot_policy){AOT_RECOMPUTE_CHEAP, 0};
}
END_TEST

/* sin, cos, mul, mul: eager keeps sin(x), cos(sin(x)) and its square (x
 * and y are the caller's), 3 * 48 bytes. With that budget the forward
 * computes its own nodes only and backward runs no forward kernel again;
 * with none it recomputes sin and cos from x, as AOT_RECOMPUTE_CHEAP
 * does; in between, the kernels that free the most bytes for their time
 * are recomputed first: a mul rather than a sin. */
START_TEST(test_budget)
{
	const char *body = "    a = x.sin()\n    b = a.cos()\n    return b * b * y\n";
	check_program(body, XY_ONE, false, 0);
	bool rg[2] = {true, false};
	ck_assert_int_eq(aot_eager_saved_bytes(graphs[0], rg), 3 * 48);
	rg[0] = false;
	ck_assert_int_eq(aot_eager_saved_bytes(graphs[0], rg), 0);
	drop_graphs();

	policy = (struct aot_policy){AOT_RECOMPUTE_BUDGET, 3 * 48};
	check_program(body, XY_ONE, false, 0);
	/* the rules' sin(a) (of cos) and cos(x) (of sin) run in backward,
	 * on a and x: no more kernels, and none in the forward */
	ck_assert_int_eq(count_op(last.fwd, OPS_sin) + count_op(last.fwd, OPS_cos), 2);
	ck_assert_int_eq(count_op(last.bwd, OPS_sin) + count_op(last.bwd, OPS_cos), 2);
	ck_assert_int_eq(last.nrecomputed, 2);
	ck_assert_int_eq(saved_beyond_primals(), 2 * 48);
	drop_graphs();

	policy.budget = 0;
	check_program(body, XY_ONE, false, 0);
	ck_assert_int_eq(saved_beyond_primals(), 0);
	ck_assert_int_eq(last.saved_bytes, 2 * 48);
	ck_assert_int_ge(count_op(last.bwd, OPS_sin), 2);
	drop_graphs();

	/* a * b needs sin(x) and x * 3; room for one: x * 3 is made again
	 * (a mul), sin(x) saved */
	policy.budget = 48;
	check_program("    a = x.sin()\n    b = x * 3\n    return a * b * y\n", XY_ONE, false, 0);
	ck_assert_int_le(saved_beyond_primals(), 48);
	ck_assert_int_eq(count_op(last.bwd, OPS_sin), 0);
	int again = 0;
	for (int i = 0; i < last.bwd->nnodes; i++) {
		const struct gnode *n = &last.bwd->nodes[i];
		again += n->kind == GN_OP && n->op == OPS_mul && n->args[0].kind == GARG_NODE &&
			 !strcmp(last.bwd->nodes[n->args[0].node].name, "x");
	}
	ck_assert_int_eq(again, 1);
	ck_assert_str_eq(saved_name(last.nsaved - 1), "sin");
	drop_graphs();
	policy = (struct aot_policy){AOT_RECOMPUTE_CHEAP, 0};
}
END_TEST

/* whether the joint has a node op(_, number) */
static bool has_op_by(const struct graph *g, int op, double k)
{
	for (int i = 0; i < g->nnodes; i++) {
		const struct gnode *n = &g->nodes[i];
		if (n->kind == GN_OP && n->op == op && n->nargs == 2 && n->args[1].kind == GARG_CONST &&
		    ((n->args[1].constant.tag == VAL_INT && n->args[1].constant.i == k) ||
		     (n->args[1].constant.tag == VAL_FLOAT && n->args[1].constant.f == k)))
			return true;
	}
	return false;
}

/* the peephole: sigmoid spelled out, div(1, 1 + exp(-x)), differentiates to
 * g / b^2 * exp(-x) with no neg (the div's, exp's and neg's signs
 * cancel) and no g * 1; a double negation is none; cos keeps its one */
START_TEST(test_peephole)
{
	/* nothing recomputed: the backward's nodes are the rules' */
	policy = (struct aot_policy){AOT_RECOMPUTE_BUDGET, INT64_MAX};
	check_program("    return 1 / (1 + exp(-x)) * y, -(-x) * y, x.cos()\n", XY, false, 0);
	policy = (struct aot_policy){AOT_RECOMPUTE_CHEAP, 0};
	ck_assert_int_eq(count_op(last.bwd, OPS_neg), 1);
	ck_assert_int_eq(count_op(last.bwd, OPS_exp), 0);
	ck_assert(!has_op_by(last_joint.g, OPS_mul, 1));
	drop_graphs();
}
END_TEST

/* relu after a matmul: the bool mask (1 byte an element) beats the
 * matmul's result (4), which is no pointwise op to recompute from x, y */
START_TEST(test_save_wins)
{
	check_program("    return (x @ y).relu()\n", "x = randn(3, 4, requires_grad=True)\ny = randn(4, 5, requires_grad=True)\ng(x, y)\n",
		      false, 0);
	ck_assert_int_eq(last.nsaved, 3);
	ck_assert_str_eq(saved_name(0), "x");
	ck_assert_str_eq(saved_name(1), "y");
	const struct gnode *m = &last.fwd->nodes[last.fwd->outputs[last.noutputs + 2]];
	ck_assert_int_eq(m->op, OPS_le);
	ck_assert_int_eq(m->dt, DT_BOOL);
	ck_assert_int_eq(last.saved_bytes, 48 + 80 + 15);
	drop_graphs();
}
END_TEST

/* each backward node has the line of the forward node it differentiates */
START_TEST(test_source_lines)
{
	check_program("    a = x * 3\n    return a.sin()\n", XY_ONE, false, 0);
	int cos = 0, line2 = 0;
	for (int i = 0; i < last.bwd->nnodes; i++) {
		const struct gnode *n = &last.bwd->nodes[i];
		if (n->kind == GN_INPUT)
			continue;
		ck_assert_int_gt(n->nstack, 0);
		int line = n->stack[n->nstack - 1].line;
		ck_assert_str_eq(n->stack[n->nstack - 1].src->path, "prog.tj");
		if (n->kind == GN_OP && n->op == OPS_cos) {
			ck_assert_int_eq(line, 3);
			cos++;
		}
		line2 += line == 2;
	}
	ck_assert_int_eq(cos, 1);
	ck_assert_int_gt(line2, 0);
	drop_graphs();
}
END_TEST

/* an op with no rule: an error naming it and the line, no joint */
START_TEST(test_no_rule)
{
	run_capturing("@allow_in_graph\ndef h(a):\n    return a * 2\n"
		    "def f(x, y):\n    a = x * 2\n    return h(a) * y\ng = compile(f, backend=\"eager\")\n" XY);
	ck_assert_int_eq(ngraphs, 1);
	struct graph *d = graph_copy(graphs[0]);
	ck_assert_int_eq(aot_decompose(d, NULL), 0);
	bool rg[2] = {true, false};
	struct aot_joint j;
	ck_assert_int_eq(aot_joint(d, rg, &j), -1);
	ck_assert_str_eq(tj_error_peek(), "no gradient rule for an allow_in_graph call at prog.tj:6");
	ck_assert_ptr_null(j.g);
	/* y alone does not reach the call: no error */
	rg[0] = false;
	rg[1] = true;
	ck_assert_int_eq(aot_joint(d, rg, &j), 0);
	ck_assert_int_eq(j.grad[0], -1);
	ck_assert_int_ge(j.grad[1], 0);
	aot_joint_release(&j);
	/* nothing wants a gradient: no tangent, nothing saved, no gradient */
	rg[1] = false;
	ck_assert_int_eq(aot_joint(d, rg, &j), 0);
	ck_assert_int_eq(j.ntangents, 0);
	struct aot_partition p;
	ck_assert_int_eq(aot_partition(&j, &policy, &p), 0);
	ck_assert_int_eq(p.nsaved, 0);
	ck_assert_int_eq(p.saved_bytes, 0);
	ck_assert_int_eq(p.bwd->noutputs, 0);
	ck_assert_int_eq(p.grad_output[0], -1);
	ck_assert_int_eq(p.grad_output[1], -1);
	aot_partition_release(&p);
	aot_joint_release(&j);
	graph_free(d);
	drop_graphs();
}
END_TEST

/* an index the getitem rule does not handle (a 0-d tensor): an error
 * naming the node */
START_TEST(test_index_error)
{
	run_capturing("def f(x, y):\n    return x[(y.sum() > 0).long()] * y\ng = compile(f, backend=\"eager\")\n" XY);
	ck_assert_int_eq(ngraphs, 1);
	struct graph *d = graph_copy(graphs[0]);
	ck_assert_int_eq(aot_decompose(d, NULL), 0);
	bool rg[2] = {true, true};
	struct aot_joint j;
	ck_assert_int_eq(aot_joint(d, rg, &j), -1);
	ck_assert_msg(strstr(tj_error_peek(), "cannot differentiate getitem") &&
			      strstr(tj_error_peek(), "at prog.tj:2: autodiff: getitem: an index other than ints"),
		      "%s", tj_error_peek());
	graph_free(d);
	drop_graphs();
}
END_TEST

START_TEST(test_rule_table)
{
	int with = 0;
	for (int op = 0; op < OPS_COUNT; op++) {
		if (ops_table[op].stage != OPST_PRIM)
			continue;
		with += aot_grad_has_rule(op);
		/* no gradient at all: a rule by definition; every differentiable
		 * primitive has one */
		ck_assert_msg(aot_grad_has_rule(op), "%s", ops_table[op].name);
	}
	ck_assert(!aot_grad_has_rule(OPS_rsqrt)); /* a composite */
	ck_assert(aot_grad_has_rule(OPS_sigmoid) && aot_grad_has_rule(OPS_silu));
	ck_assert_int_gt(with, 40);
}
END_TEST

static void unchecked_teardown(void)
{
	aot_partition_release(&last);
	aot_joint_release(&last_joint);
	teardown();
}

static Suite *autodiff_suite(void)
{
	Suite *s = suite_create("autodiff");
	TCase *tc = tcase_create("autodiff");
	tcase_set_timeout(tc, 120);
	tcase_add_checked_fixture(tc, setup, unchecked_teardown);
	tcase_add_test(tc, test_rule_table);
	tcase_add_loop_test(tc, test_rules, 0, (int)(sizeof cases / sizeof *cases));
	tcase_add_test(tc, test_unused_output);
	tcase_add_test(tc, test_dynamic);
	tcase_add_loop_test(tc, test_rules_budget, 0, (int)(sizeof cases / sizeof *cases));
	tcase_add_test(tc, test_recompute_wins);
	tcase_add_test(tc, test_budget);
	tcase_add_test(tc, test_peephole);
	tcase_add_test(tc, test_save_wins);
	tcase_add_test(tc, test_source_lines);
	tcase_add_test(tc, test_no_rule);
	tcase_add_test(tc, test_index_error);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(autodiff_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
