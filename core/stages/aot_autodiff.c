/* aot_autodiff.c - aot_eager's graph autodiff: the joint graph (a reverse
 * sweep over the forward's nodes, one rule per primitive) and its
 * partition into forward and backward graphs.
 *
 * A rule appends its nodes at the end of the joint with emit() (aot_build.h's
 * builder, whose position is the end of the graph), which asks
 * the op's shape rule for the result's type and gives the node the stack
 * of the forward node being differentiated. After a failed emit() the
 * others do nothing, so that a rule is a plain sequence of calls checked
 * once by the sweep. Gradients reach an input through acc(), which sums
 * them down to its shape and converts them to its dtype (autograd.c's
 * fit_grad) and adds up those of a value read more than once.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aot_autodiff.h"
#include "aot_build.h"
#include "graph.h"
#include "ops.h"
#include "ops_meta.h"
#include "util.h"

struct ad {
	struct aot_build b;         /* appends: b.pos is the end of the graph */
	int nfwd;                   /* nodes below are the forward's */
	bool *reach;                /* [nfwd]: depends on a primal that wants a gradient */
	int *grad;                  /* [nfwd]: the node of its gradient so far, -1 */
	int cur;                    /* the forward node being differentiated */
	struct user_frame *def;     /* the def line: the stack of what an input needs */
};

/* ---- arguments ---- */

static struct garg gsizes(struct ad *a, int n, const struct sym_size *s) { return aot_gsizes(&a->b, n, s); }
static struct garg gdims(struct ad *a, int n, const int *dims) { return aot_gdims(&a->b, n, dims); }

/* a copy of a (constant or node) arg of the forward node for a new node */
static struct garg gcopy(const struct garg *x)
{
	if (x->kind == GARG_CONST)
		val_incref(x->constant);
	return *x;
}

static bool is_node(const struct garg *x) { return x->kind == GARG_NODE; }
static bool is_none(const struct garg *x) { return x->kind == GARG_CONST && x->constant.tag == VAL_NONE; }

/* the ints of a constant int, list or tuple arg (dims, a permutation):
 * how many, or -1 */
static int read_ints(const struct garg *x, int *out, int max)
{
	if (x->kind == GARG_CONST && x->constant.tag == VAL_INT) {
		out[0] = (int)x->constant.i;
		return 1;
	}
	if (x->kind == GARG_CONST && (x->constant.tag == VAL_TUPLE || x->constant.tag == VAL_LIST)) {
		size_t n = x->constant.tag == VAL_TUPLE ? val_tuple(x->constant)->len : val_list(x->constant)->len;
		value *it = x->constant.tag == VAL_TUPLE ? val_tuple(x->constant)->items : val_list(x->constant)->items;
		if ((int)n > max)
			return -1;
		for (size_t i = 0; i < n; i++) {
			if (it[i].tag != VAL_INT)
				return -1;
			out[i] = (int)it[i].i;
		}
		return (int)n;
	}
	if (x->kind == GARG_TUPLE || x->kind == GARG_LIST) {
		if (x->n > max)
			return -1;
		for (int i = 0; i < x->n; i++) {
			if (x->items[i].kind != GARG_CONST || x->items[i].constant.tag != VAL_INT)
				return -1;
			out[i] = (int)x->items[i].constant.i;
		}
		return x->n;
	}
	return -1;
}

/* ---- new nodes ---- */

/* new nodes take the stack of the forward node i (the def line for an
 * input, returned twice) */
static void at_node(struct ad *a, int i)
{
	const struct gnode *n = &a->b.g->nodes[i];
	a->cur = i;
	a->b.nstack = n->nstack ? n->nstack : 1;
	a->b.stack = n->nstack ? n->stack : a->def;
}

/* op(args...) through the pass's builder (aot_emit) */
#define emit(pass, op, ...) aot_emit(&(pass)->b, op, __VA_ARGS__)

static int item(struct ad *a, int t, int k) { return aot_item(&a->b, t, k); }

static int un(struct ad *a, int op, int x) { return emit(a, op, 1, aot_gnode(x)); }
static int bin(struct ad *a, int op, int x, int y) { return emit(a, op, 2, aot_gnode(x), aot_gnode(y)); }
/* op(x, arg) and op(arg, x) with a copy of a forward arg */
static int bin_a(struct ad *a, int op, int x, const struct garg *y) { return emit(a, op, 2, aot_gnode(x), gcopy(y)); }
static int a_bin(struct ad *a, int op, const struct garg *x, int y) { return emit(a, op, 2, gcopy(x), aot_gnode(y)); }
static int a_a(struct ad *a, int op, const struct garg *x, const struct garg *y)
{
	return emit(a, op, 2, gcopy(x), gcopy(y));
}

static bool same_size(struct sym_size x, struct sym_size y)
{
	return x.sym == y.sym && (x.sym >= 0 || x.value == y.value);
}

/* g summed down to sizes shape (the leading dims, and those where the
 * target has 1), as tensor_sum_to_shape: a sum with keepdim, a reshape */
static int sum_to(struct ad *a, int g, int ndim, const struct sym_size *shape)
{
	if (a->b.failed)
		return -1;
	struct gnode gn = a->b.g->nodes[g];
	int lead = gn.ndim - ndim, dims[TENSOR_MAX_DIMS], nd = 0;
	if (lead < 0)
		return aot_build_fail(&a->b, "autodiff: a gradient of %d dims for a tensor of %d", gn.ndim, ndim);
	for (int k = 0; k < gn.ndim; k++)
		if (k < lead || (!same_size(gn.shape[k], shape[k - lead]) && shape[k - lead].sym < 0 &&
				 shape[k - lead].value == 1))
			dims[nd++] = k;
	if (nd == 0 && lead == 0)
		return g;
	int s = nd ? emit(a, OPS_sum, 3, aot_gnode(g), gdims(a, nd, dims), aot_gbool(true)) : g;
	return emit(a, OPS_reshape, 2, aot_gnode(s), gsizes(a, ndim, shape));
}

/* adds gradient g to the one of forward arg x (when it wants one), summed
 * to its shape and converted to its dtype */
static void acc(struct ad *a, const struct garg *x, int g)
{
	if (a->b.failed || g < 0 || !is_node(x) || !a->reach[x->node])
		return;
	struct gnode t = a->b.g->nodes[x->node];
	g = sum_to(a, g, t.ndim, t.shape);
	if (g >= 0 && a->b.g->nodes[g].dt != t.dt)
		g = emit(a, OPS_to, 2, aot_gnode(g), aot_gdtype(t.dt));
	if (g < 0)
		return;
	int *to = &a->grad[x->node];
	*to = *to < 0 ? g : bin(a, OPS_add, *to, g);
}

static bool wants(struct ad *a, const struct garg *x) { return is_node(x) && a->reach[x->node]; }

/* ---- a peephole: nodes a rule need not make (each one is a kernel
 * backward runs) ---- */

static bool is_number(const struct garg *x)
{
	return x->kind == GARG_CONST && (x->constant.tag == VAL_INT || x->constant.tag == VAL_FLOAT);
}
static double number(const struct garg *x) { return x->constant.tag == VAL_INT ? (double)x->constant.i : x->constant.f; }

/* node i is neg(q): q, else -1 */
static int negated(struct ad *a, int i)
{
	const struct gnode *n = i >= 0 ? &a->b.g->nodes[i] : NULL;
	return n && n->kind == GN_OP && n->op == OPS_neg && is_node(&n->args[0]) ? n->args[0].node : -1;
}

/* -x: q for x = -q, and the sign moved into a product or quotient of a
 * negated node (-(-q * r) = q * r): a chain of rules that each negate
 * (the div, exp and neg of sigmoid) costs no neg kernel */
static int negate(struct ad *a, int x)
{
	if (a->b.failed || x < 0)
		return -1;
	int q = negated(a, x);
	if (q >= 0)
		return q;
	const struct gnode n = a->b.g->nodes[x];
	if (n.kind == GN_OP && (n.op == OPS_mul || n.op == OPS_div) && is_node(&n.args[0]) && is_node(&n.args[1])) {
		int l = n.args[0].node, r = n.args[1].node, ql = negated(a, l), qr = negated(a, r);
		/* the type is the product's: both sides keep theirs */
		if (ql >= 0 && a->b.g->nodes[ql].dt == a->b.g->nodes[l].dt)
			return bin(a, n.op, ql, r);
		if (qr >= 0 && a->b.g->nodes[qr].dt == a->b.g->nodes[r].dt)
			return bin(a, n.op, l, qr);
	}
	return un(a, OPS_neg, x);
}

/* g * c for a forward arg c: g itself when c is the number 1 (the
 * numerator of 1 / x) and g is floating point (the product's type) */
static int times(struct ad *a, int g, const struct garg *c)
{
	if (g >= 0 && is_number(c) && number(c) == 1 && dtype_is_float(a->b.g->nodes[g].dt))
		return g;
	return bin_a(a, OPS_mul, g, c);
}

/* ---- the rules: args are the forward node's, g its gradient ---- */

typedef void (*rule_fn)(struct ad *a, const struct garg *args, int g);

/* a gradient of zeros for forward arg x (when it wants one): not None,
 * so that x.grad prints zeros, as in eager and PyTorch */
static void acc_zeros(struct ad *a, const struct garg *x)
{
	if (!wants(a, x))
		return;
	struct gnode t = a->b.g->nodes[x->node];
	acc(a, x, emit(a, OPS_zeros, 2, gsizes(a, t.ndim, t.shape), aot_gdtype(t.dt)));
}
/* floor, ceil, round, sign, floordiv: zero almost everywhere, for each
 * tensor input (eager's bw_zero) */
static void r_zero(struct ad *a, const struct garg *x, int g)
{
	(void)g;
	int nargs = a->b.g->nodes[a->cur].nargs;
	for (int k = 0; k < nargs; k++)
		acc_zeros(a, &x[k]);
}
static void r_identity(struct ad *a, const struct garg *x, int g) { acc(a, &x[0], g); }
static void r_neg(struct ad *a, const struct garg *x, int g) { acc(a, &x[0], negate(a, g)); }
static void r_abs(struct ad *a, const struct garg *x, int g)
{
	acc(a, &x[0], bin(a, OPS_mul, g, emit(a, OPS_sign, 1, gcopy(&x[0]))));
}
static void r_exp(struct ad *a, const struct garg *x, int g) { acc(a, &x[0], bin(a, OPS_mul, g, a->cur)); }
static void r_log(struct ad *a, const struct garg *x, int g) { acc(a, &x[0], bin_a(a, OPS_div, g, &x[0])); }
static void r_sqrt(struct ad *a, const struct garg *x, int g)
{
	acc(a, &x[0], bin(a, OPS_div, g, emit(a, OPS_mul, 2, aot_gnode(a->cur), aot_gnum(2))));
}
static void r_sin(struct ad *a, const struct garg *x, int g)
{
	acc(a, &x[0], bin(a, OPS_mul, g, emit(a, OPS_cos, 1, gcopy(&x[0]))));
}
static void r_cos(struct ad *a, const struct garg *x, int g)
{
	acc(a, &x[0], negate(a, bin(a, OPS_mul, g, emit(a, OPS_sin, 1, gcopy(&x[0])))));
}
static void r_tanh(struct ad *a, const struct garg *x, int g)
{
	int o2 = bin(a, OPS_mul, a->cur, a->cur);
	acc(a, &x[0], bin(a, OPS_mul, g, emit(a, OPS_sub, 2, aot_gnum(1), aot_gnode(o2))));
}
/* sigmoid and silu are primitives for these rules (doc/ops.md): over
 * sigmoid's formula 1 / (1 + exp(-x)) the chain rule meets exp(-x) = inf
 * below x = -88.7 and gives inf / inf = NaN, where these give 0 */
static void r_sigmoid(struct ad *a, const struct garg *x, int g)
{
	int o = a->cur;
	acc(a, &x[0], bin(a, OPS_mul, g, bin(a, OPS_mul, o, emit(a, OPS_sub, 2, aot_gnum(1), aot_gnode(o)))));
}
/* silu(x) = x sigmoid(x): d/dx = s (1 + x (1 - s)), s = sigmoid(x) */
static void r_silu(struct ad *a, const struct garg *x, int g)
{
	int s = emit(a, OPS_sigmoid, 1, gcopy(&x[0]));
	int xs = bin_a(a, OPS_mul, emit(a, OPS_sub, 2, aot_gnum(1), aot_gnode(s)), &x[0]);
	int d = bin(a, OPS_mul, s, emit(a, OPS_add, 2, aot_gnum(1), aot_gnode(xs)));
	acc(a, &x[0], bin(a, OPS_mul, g, d));
}
/* 0 where out <= 0 (a select, as eager's and PyTorch's threshold_backward:
 * an infinite g there gives 0, not 0 * inf) */
static void r_relu(struct ad *a, const struct garg *x, int g)
{
	int off = emit(a, OPS_le, 2, aot_gnode(a->cur), aot_gnum(0));
	acc(a, &x[0], emit(a, OPS_where, 3, aot_gnode(off), aot_gnum(0), aot_gnode(g)));
}
/* gelu(x) = x Phi(x): d/dx = Phi(x) + x phi(x), Phi(x) = gelu(x) / x
 * (1/2 at 0) since erf is no op */
static void r_gelu(struct ad *a, const struct garg *x, int g)
{
	int cdf = emit(a, OPS_div, 2, aot_gnode(a->cur), gcopy(&x[0]));
	cdf = emit(a, OPS_where, 3, aot_gnode(emit(a, OPS_eq, 2, gcopy(&x[0]), aot_gnum(0))), aot_gnum(0.5), aot_gnode(cdf));
	int sq = a_a(a, OPS_mul, &x[0], &x[0]);
	int pdf = un(a, OPS_exp, emit(a, OPS_mul, 2, aot_gnode(sq), aot_gnum(-0.5)));
	pdf = emit(a, OPS_mul, 2, aot_gnode(pdf), aot_gnum(0.3989422804014327));
	int d = bin(a, OPS_add, cdf, a_bin(a, OPS_mul, &x[0], pdf));
	acc(a, &x[0], bin(a, OPS_mul, g, d));
}

static void r_add(struct ad *a, const struct garg *x, int g)
{
	acc(a, &x[0], g);
	acc(a, &x[1], g);
}
static void r_sub(struct ad *a, const struct garg *x, int g)
{
	acc(a, &x[0], g);
	if (wants(a, &x[1]))
		acc(a, &x[1], negate(a, g));
}
static void r_mul(struct ad *a, const struct garg *x, int g)
{
	if (wants(a, &x[0]))
		acc(a, &x[0], bin_a(a, OPS_mul, g, &x[1]));
	if (wants(a, &x[1]))
		acc(a, &x[1], bin_a(a, OPS_mul, g, &x[0]));
}
static void r_div(struct ad *a, const struct garg *x, int g)
{
	if (wants(a, &x[0]))
		acc(a, &x[0], bin_a(a, OPS_div, g, &x[1]));
	if (wants(a, &x[1])) { /* -g a / b^2 */
		int b2 = a_a(a, OPS_mul, &x[1], &x[1]);
		acc(a, &x[1], negate(a, bin(a, OPS_div, times(a, g, &x[0]), b2)));
	}
}
static void r_pow(struct ad *a, const struct garg *x, int g)
{
	if (is_number(&x[1]) && number(&x[1]) == 0) /* a ** 0 */
		acc_zeros(a, &x[0]);
	else if (wants(a, &x[0]) && is_number(&x[1])) { /* g b a^(b-1) */
		int p = emit(a, OPS_pow, 2, gcopy(&x[0]), aot_gnum(number(&x[1]) - 1));
		acc(a, &x[0], bin(a, OPS_mul, g, emit(a, OPS_mul, 2, aot_gnode(p), gcopy(&x[1]))));
	} else if (wants(a, &x[0]) && !is_number(&x[1])) { /* the same, 0 where b == 0 */
		int e = emit(a, OPS_sub, 2, gcopy(&x[1]), aot_gnum(1));
		int d = a_bin(a, OPS_mul, &x[1], a_bin(a, OPS_pow, &x[0], e));
		int z = emit(a, OPS_eq, 2, gcopy(&x[1]), aot_gnum(0));
		acc(a, &x[0], bin(a, OPS_mul, g, emit(a, OPS_where, 3, aot_gnode(z), aot_gnum(0), aot_gnode(d))));
	}
	if (!wants(a, &x[1]))
		return;
	/* g a^b log(a), 0 where a == 0 and b >= 0 */
	int log_a = is_number(&x[0]) ? -1 : emit(a, OPS_log, 1, gcopy(&x[0]));
	int d = log_a >= 0 ? bin(a, OPS_mul, a->cur, log_a)
		: number(&x[0]) > 0 ? emit(a, OPS_mul, 2, aot_gnode(a->cur), aot_gnum(log(number(&x[0]))))
		: emit(a, OPS_mul, 2, aot_gnode(a->cur), aot_gnum(number(&x[0]) == 0 ? -INFINITY : NAN));
	int bpos = emit(a, OPS_ge, 2, gcopy(&x[1]), aot_gnum(0));
	int inner = emit(a, OPS_where, 3, aot_gnode(bpos), aot_gnum(0), aot_gnode(d));
	if (is_number(&x[0])) {
		acc(a, &x[1], bin(a, OPS_mul, g, number(&x[0]) == 0 ? inner : d));
		return;
	}
	int az = emit(a, OPS_eq, 2, gcopy(&x[0]), aot_gnum(0));
	acc(a, &x[1], bin(a, OPS_mul, g, emit(a, OPS_where, 3, aot_gnode(az), aot_gnode(inner), aot_gnode(d))));
}
static void r_mod(struct ad *a, const struct garg *x, int g)
{
	acc(a, &x[0], g);
	if (wants(a, &x[1])) /* a - floor(a / b) b */
		acc(a, &x[1], negate(a, bin(a, OPS_mul, g, un(a, OPS_floor, a_a(a, OPS_div, &x[0], &x[1])))));
}
/* eager's rule (PyTorch's): each side gets g where it is not the loser,
 * half of it at a tie; selects, so that an infinite g meets no 0 * inf,
 * and a NaN on either side gives g to both */
static void maximum_grads(struct ad *a, const struct garg *x, int g, bool is_max)
{
	int lose = is_max ? OPS_lt : OPS_gt;
	bool wa = wants(a, &x[0]), wb = !is_number(&x[1]) && wants(a, &x[1]);
	if (!wa && !wb)
		return;
	int tie = a_a(a, OPS_eq, &x[0], &x[1]);
	int half = emit(a, OPS_mul, 2, aot_gnode(g), aot_gnum(0.5));
	int split = emit(a, OPS_where, 3, aot_gnode(tie), aot_gnode(half), aot_gnode(g));
	if (wa)
		acc(a, &x[0], emit(a, OPS_where, 3, aot_gnode(a_a(a, lose, &x[0], &x[1])), aot_gnum(0), aot_gnode(split)));
	if (wb)
		acc(a, &x[1], emit(a, OPS_where, 3, aot_gnode(a_a(a, lose, &x[1], &x[0])), aot_gnum(0), aot_gnode(split)));
}
static void r_maximum(struct ad *a, const struct garg *x, int g) { maximum_grads(a, x, g, true); }
/* where(c, g, 0) */
static int masked(struct ad *a, int c, int g) { return emit(a, OPS_where, 3, aot_gnode(c), aot_gnode(g), aot_gnum(0)); }
/* clamp(x, lo, hi) = minimum(maximum(x, lo), hi) is a primitive for
 * eager's rule (autograd.c's bw_clamp, PyTorch's): x gets g where
 * lo <= x <= hi, ties included, where maximum and minimum would split a
 * tie in half; lo gets it where lo > x (and lo <= hi), hi where hi < x
 * or hi < lo */
static void r_clamp(struct ad *a, const struct garg *x, int g)
{
	bool lo = !is_none(&x[1]), hi = !is_none(&x[2]);
	if (wants(a, &x[0])) {
		int m = g;
		if (hi)
			m = masked(a, a_a(a, OPS_le, &x[0], &x[2]), m);
		if (lo)
			m = masked(a, a_a(a, OPS_ge, &x[0], &x[1]), m);
		acc(a, &x[0], m);
	}
	if (lo && wants(a, &x[1])) {
		int m = hi ? masked(a, a_a(a, OPS_le, &x[1], &x[2]), g) : g;
		acc(a, &x[1], masked(a, a_a(a, OPS_gt, &x[1], &x[0]), m));
	}
	if (hi && wants(a, &x[2])) {
		int m = a_a(a, OPS_lt, &x[2], &x[0]);
		int past = lo ? masked(a, a_a(a, OPS_lt, &x[2], &x[1]), g) : -1;
		acc(a, &x[2], past >= 0 ? emit(a, OPS_where, 3, aot_gnode(m), aot_gnode(g), aot_gnode(past)) : masked(a, m, g));
	}
}
static void r_minimum(struct ad *a, const struct garg *x, int g) { maximum_grads(a, x, g, false); }
static void r_where(struct ad *a, const struct garg *x, int g)
{
	if (wants(a, &x[1]))
		acc(a, &x[1], emit(a, OPS_where, 3, gcopy(&x[0]), aot_gnode(g), aot_gnum(0)));
	if (wants(a, &x[2]))
		acc(a, &x[2], emit(a, OPS_where, 3, gcopy(&x[0]), aot_gnum(0), aot_gnode(g)));
}

/* the reduced dims of x's node (all when dim is None): how many */
static int reduced_dims(struct ad *a, const struct garg *x, const struct garg *dim, int *dims)
{
	int nd = a->b.g->nodes[x->node].ndim, n = is_none(dim) ? 0 : read_ints(dim, dims, TENSOR_MAX_DIMS);
	if (n < 0)
		return aot_build_fail(&a->b, "autodiff: %s: the dims are not constant",
				      ops_table[a->b.g->nodes[a->cur].op].name);
	if (n == 0)
		for (; n < nd; n++)
			dims[n] = n;
	for (int k = 0; k < n; k++)
		dims[k] = dims[k] < 0 ? dims[k] + nd : dims[k];
	return n;
}

/* x's sizes with the reduced dims set to 1 */
static void keepdim_shape(const struct gnode *x, const int *dims, int nd, struct sym_size *shape)
{
	memcpy(shape, x->shape, sizeof x->shape);
	for (int k = 0; k < nd; k++)
		shape[dims[k]] = (struct sym_size){1, -1};
}

static void r_sum(struct ad *a, const struct garg *x, int g)
{
	int dims[TENSOR_MAX_DIMS], nd = reduced_dims(a, &x[0], &x[1], dims);
	if (nd < 0)
		return;
	struct gnode in = a->b.g->nodes[x[0].node];
	struct sym_size k[TENSOR_MAX_DIMS];
	keepdim_shape(&in, dims, nd, k);
	int r = emit(a, OPS_reshape, 2, aot_gnode(g), gsizes(a, in.ndim, k));
	acc(a, &x[0], emit(a, OPS_expand, 2, aot_gnode(r), gsizes(a, in.ndim, in.shape)));
}

/* prod: the product of the other elements of each group: out / x where
 * the group has no zero; at a zero, the product of the rest when it is
 * the only one, else 0 (autograd.c's prefix and suffix products, exact
 * with zeros, within float32 rounding elsewhere) */
static void r_prod(struct ad *a, const struct garg *x, int g)
{
	int dims[TENSOR_MAX_DIMS], nd = reduced_dims(a, &x[0], &x[1], dims);
	if (nd < 0)
		return;
	struct gnode in = a->b.g->nodes[x[0].node];
	struct sym_size k[TENSOR_MAX_DIMS];
	keepdim_shape(&in, dims, nd, k);
	int zero = emit(a, OPS_eq, 2, gcopy(&x[0]), aot_gnum(0));
	int nz = emit(a, OPS_sum, 3, aot_gnode(zero), gdims(a, nd, dims), aot_gbool(true));
	int rest = emit(a, OPS_where, 3, aot_gnode(zero), aot_gnum(1), gcopy(&x[0]));
	rest = emit(a, OPS_prod, 3, aot_gnode(rest), gdims(a, nd, dims), aot_gbool(true));
	/* two zeros or more: 0 with the sign of the others' product, as eager's
	 * prefix and suffix products give it (-0.0 prints as such) */
	int at_zero = emit(a, OPS_where, 3, aot_gnode(emit(a, OPS_eq, 2, aot_gnode(nz), aot_gint(1))), aot_gnode(rest),
			   aot_gnode(emit(a, OPS_mul, 2, aot_gnode(rest), aot_gnum(0))));
	int out = emit(a, OPS_reshape, 2, aot_gnode(a->cur), gsizes(a, in.ndim, k));
	int q = emit(a, OPS_div, 2, aot_gnode(out), gcopy(&x[0]));
	int d = emit(a, OPS_where, 3, aot_gnode(zero), aot_gnode(at_zero), aot_gnode(q));
	acc(a, &x[0], bin(a, OPS_mul, d, emit(a, OPS_reshape, 2, aot_gnode(g), gsizes(a, in.ndim, k))));
}

static void r_maxmin(struct ad *a, const struct garg *x, int g)
{
	if (is_node(&x[1])) { /* max(a, b) with a tensor b */
		maximum_grads(a, x, g, a->b.g->nodes[a->cur].op == OPS_max);
		return;
	}
	struct gnode in = a->b.g->nodes[x[0].node];
	if (in.ndim == 0) {
		acc(a, &x[0], g);
		return;
	}
	if (is_none(&x[1])) { /* g split evenly among the elements equal to the result, */
		/* or among the NaNs when it is NaN, 0 elsewhere (eager's rule) */
		int eq = a_bin(a, OPS_eq, &x[0], a->cur);
		int nan = bin(a, OPS_ne, a->cur, a->cur);
		int mask = emit(a, OPS_where, 3, aot_gnode(nan), aot_gnode(a_a(a, OPS_ne, &x[0], &x[0])), aot_gnode(eq));
		int count = un(a, OPS_sum, mask);
		acc(a, &x[0], emit(a, OPS_where, 3, aot_gnode(mask), aot_gnode(bin(a, OPS_div, g, count)), aot_gnum(0)));
		return;
	}
	/* with a dim: g goes where the indices point */
	int dim;
	if (read_ints(&x[1], &dim, 1) != 1) {
		aot_build_fail(&a->b, "autodiff: max: the dim is not constant");
		return;
	}
	dim = dim < 0 ? dim + in.ndim : dim;
	struct sym_size k[TENSOR_MAX_DIMS], at[TENSOR_MAX_DIMS];
	keepdim_shape(&in, &dim, 1, k);
	for (int d = 0; d < in.ndim; d++)
		at[d] = d == dim ? in.shape[d] : (struct sym_size){1, -1};
	int idx = item(a, a->cur, 1);
	int ar = emit(a, OPS_arange, 1, aot_gsize(in.shape[dim]));
	ar = emit(a, OPS_reshape, 2, aot_gnode(ar), gsizes(a, in.ndim, at));
	int hit = bin(a, OPS_eq, ar, emit(a, OPS_reshape, 2, aot_gnode(idx), gsizes(a, in.ndim, k)));
	acc(a, &x[0], emit(a, OPS_where, 3, aot_gnode(hit), aot_gnode(emit(a, OPS_reshape, 2, aot_gnode(g), gsizes(a, in.ndim, k))),
			   aot_gnum(0)));
}

/* permute(t, the last two dims swapped) */
static int transpose_last(struct ad *a, int t)
{
	if (a->b.failed)
		return -1;
	int nd = a->b.g->nodes[t].ndim, perm[TENSOR_MAX_DIMS];
	if (nd < 2)
		return t;
	for (int k = 0; k < nd; k++)
		perm[k] = k;
	perm[nd - 2] = nd - 1;
	perm[nd - 1] = nd - 2;
	return emit(a, OPS_permute, 2, aot_gnode(t), gdims(a, nd, perm));
}

/* t as a matrix: 1-D operands promoted as torch.matmul does */
static int as_matrix(struct ad *a, const struct garg *x, bool row)
{
	struct gnode n = a->b.g->nodes[x->node];
	if (n.ndim != 1)
		return x->node;
	struct sym_size s[2] = {{1, -1}, n.shape[0]};
	if (!row) {
		s[0] = n.shape[0];
		s[1] = (struct sym_size){1, -1};
	}
	return emit(a, OPS_reshape, 2, gcopy(x), gsizes(a, 2, s));
}

static void r_matmul(struct ad *a, const struct garg *x, int g)
{
	if (!is_node(&x[0]) || !is_node(&x[1])) {
		aot_build_fail(&a->b, "autodiff: matmul of a constant");
		return;
	}
	int a2 = as_matrix(a, &x[0], true), b2 = as_matrix(a, &x[1], false);
	if (a->b.failed)
		return;
	struct gnode an = a->b.g->nodes[a2], bn = a->b.g->nodes[b2];
	/* g with the 1-D operands' dims put back: batch dims, then n and m */
	struct sym_size gs[TENSOR_MAX_DIMS];
	int nb = (an.ndim > bn.ndim ? an.ndim : bn.ndim) - 2;
	for (int k = 0; k < nb; k++) {
		int ka = k - (nb - (an.ndim - 2)), kb = k - (nb - (bn.ndim - 2));
		struct sym_size sa = ka >= 0 ? an.shape[ka] : (struct sym_size){1, -1};
		struct sym_size sb = kb >= 0 ? bn.shape[kb] : (struct sym_size){1, -1};
		gs[k] = sa.sym < 0 && sa.value == 1 ? sb : sa;
	}
	gs[nb] = an.shape[an.ndim - 2];
	gs[nb + 1] = bn.shape[bn.ndim - 1];
	int g2 = emit(a, OPS_reshape, 2, aot_gnode(g), gsizes(a, nb + 2, gs));
	if (wants(a, &x[0])) {
		int t = sum_to(a, bin(a, OPS_matmul, g2, transpose_last(a, b2)), an.ndim, an.shape);
		struct gnode xn = a->b.g->nodes[x[0].node];
		acc(a, &x[0], xn.ndim == 1 ? emit(a, OPS_reshape, 2, aot_gnode(t), gsizes(a, 1, xn.shape)) : t);
	}
	if (wants(a, &x[1])) {
		int t = sum_to(a, bin(a, OPS_matmul, transpose_last(a, a2), g2), bn.ndim, bn.shape);
		struct gnode xn = a->b.g->nodes[x[1].node];
		acc(a, &x[1], xn.ndim == 1 ? emit(a, OPS_reshape, 2, aot_gnode(t), gsizes(a, 1, xn.shape)) : t);
	}
}

static void r_reshape(struct ad *a, const struct garg *x, int g)
{
	struct gnode in = a->b.g->nodes[x[0].node];
	acc(a, &x[0], emit(a, OPS_reshape, 2, aot_gnode(g), gsizes(a, in.ndim, in.shape)));
}

static void r_permute(struct ad *a, const struct garg *x, int g)
{
	int nd = a->b.g->nodes[x[0].node].ndim, perm[TENSOR_MAX_DIMS], inv[TENSOR_MAX_DIMS];
	if (read_ints(&x[1], perm, TENSOR_MAX_DIMS) != nd) {
		aot_build_fail(&a->b, "autodiff: permute: the dims are not constant");
		return;
	}
	for (int i = 0; i < nd; i++)
		inv[perm[i] < 0 ? perm[i] + nd : perm[i]] = i;
	acc(a, &x[0], emit(a, OPS_permute, 2, aot_gnode(g), gdims(a, nd, inv)));
}

/* g with count zeros before and after along dim d: cat([zeros, g, zeros]) */
static int pad(struct ad *a, int g, int d, int64_t before, int64_t after)
{
	if (a->b.failed || (before == 0 && after == 0))
		return g;
	struct gnode gn = a->b.g->nodes[g];
	struct garg parts[3];
	int np = 0;
	for (int side = 0; side < 2; side++) {
		int64_t count = side == 0 ? before : after;
		if (side == 1)
			parts[np++] = aot_gnode(g);
		if (count == 0)
			continue;
		struct sym_size sh[TENSOR_MAX_DIMS];
		memcpy(sh, gn.shape, sizeof sh);
		sh[d] = (struct sym_size){count, -1};
		parts[np++] = aot_gnode(emit(a, OPS_zeros, 2, gsizes(a, gn.ndim, sh), aot_gdtype(gn.dt)));
	}
	struct garg list = aot_gseq(&a->b, GARG_LIST, np, parts);
	return emit(a, OPS_cat, 2, list, aot_gint(d));
}

/* g's count elements along dim d put step apart, in a length of len:
 * each followed by step - 1 zeros (g as (count, 1) padded to (count,
 * step), then one dim), then cut or padded to len */
static int spread(struct ad *a, int g, int d, int64_t step, int64_t len)
{
	struct gnode gn = a->b.g->nodes[g];
	int64_t count = gn.shape[d].value;
	struct sym_size sh[TENSOR_MAX_DIMS + 1];
	for (int i = 0, j = 0; i <= gn.ndim; i++)
		sh[i] = i == d + 1 ? (struct sym_size){1, -1} : gn.shape[j++];
	int r = emit(a, OPS_reshape, 2, aot_gnode(g), gsizes(a, gn.ndim + 1, sh));
	r = pad(a, r, d + 1, 0, step - 1);
	memcpy(sh, gn.shape, sizeof(struct sym_size) * (size_t)gn.ndim);
	sh[d] = (struct sym_size){count * step, -1};
	r = emit(a, OPS_reshape, 2, aot_gnode(r), gsizes(a, gn.ndim, sh));
	if (count * step <= len)
		return pad(a, r, d, 0, len - count * step);
	value ix = tuple_new((size_t)d + 1);
	for (int i = 0; i <= d; i++)
		val_tuple(ix)->items[i] = i < d ? slice_new(val_none(), val_none(), val_none())
						: slice_new(val_int(0), val_int(len), val_none());
	return emit(a, OPS_getitem, 2, aot_gnode(r), aot_gconst(ix));
}

/* x[index] for ints, Nones and slices of a positive step on constant
 * sizes: g put back in place (a None's dim of 1 goes in the reshape; a
 * step's gaps filled with zeros), zeros around it (tensor_index_backward) */
static void r_getitem(struct ad *a, const struct garg *x, int g)
{
	struct gnode in = a->b.g->nodes[x[0].node];
	value items[TENSOR_MAX_DIMS];
	int n = graph_const_items(&x[1], items, TENSOR_MAX_DIMS), d = 0;
	int64_t lo[TENSOR_MAX_DIMS] = {0}, hi[TENSOR_MAX_DIMS] = {0}, steps[TENSOR_MAX_DIMS] = {0};
	struct sym_size k[TENSOR_MAX_DIMS];
	memcpy(k, in.shape, sizeof k);
	bool ok = n >= 0;
	for (int i = 0; ok && i < n; i++) {
		if (items[i].tag == VAL_NONE)
			continue;
		int64_t size = in.shape[d].value, start = 0, stop = 0, step = 1, count = 0;
		const struct slice *sl = items[i].tag == VAL_SLICE ? val_slice(items[i]) : NULL;
		bool full = sl && sl->start.tag == VAL_NONE && sl->stop.tag == VAL_NONE && sl->step.tag == VAL_NONE;
		if (d >= in.ndim || (in.shape[d].sym >= 0 && !full)) {
			ok = false;
		} else if (items[i].tag == VAL_INT) {
			start = items[i].i < 0 ? items[i].i + size : items[i].i;
			count = 1;
		} else {
			ok = sl && slice_indices(sl, size, &start, &stop, &step, &count) == 0 && step >= 1;
		}
		if (ok && !full) {
			k[d] = (struct sym_size){count, -1};
			lo[d] = start;
			hi[d] = size - start - count;
			steps[d] = count > 0 ? step : 1;
		}
		d++;
	}
	if (!ok) {
		aot_build_fail(&a->b, "autodiff: getitem: an index other than ints, Nones and slices of a positive step on constant sizes");
		return;
	}
	int r = emit(a, OPS_reshape, 2, aot_gnode(g), gsizes(a, in.ndim, k));
	for (int e = 0; e < d; e++) {
		if (steps[e] > 1) { /* the elements step apart, then what is before them */
			r = spread(a, r, e, steps[e], in.shape[e].value - lo[e]);
			r = pad(a, r, e, lo[e], 0);
			continue;
		}
		r = pad(a, r, e, lo[e], hi[e]);
	}
	acc(a, &x[0], r);
}

/* cat: each input gets its slice of g along dim */
static void r_cat(struct ad *a, const struct garg *x, int g)
{
	const struct garg *ts = &x[0];
	int dim, nd = a->b.g->nodes[g].ndim;
	if ((ts->kind != GARG_LIST && ts->kind != GARG_TUPLE) || read_ints(&x[1], &dim, 1) != 1) {
		aot_build_fail(&a->b, "autodiff: cat: not a list of tensors and a constant dim");
		return;
	}
	dim = dim < 0 ? dim + nd : dim;
	int64_t off = 0;
	for (int i = 0; i < ts->n && !a->b.failed; i++) {
		if (!is_node(&ts->items[i]))
			continue;
		struct gnode t = a->b.g->nodes[ts->items[i].node];
		int64_t len = t.ndim > dim ? t.shape[dim].value : 0;
		if (wants(a, &ts->items[i])) {
			value ix = tuple_new((size_t)dim + 1);
			for (int d = 0; d <= dim; d++)
				val_tuple(ix)->items[d] = d < dim ? slice_new(val_none(), val_none(), val_none())
								  : slice_new(val_int(off), val_int(off + len), val_none());
			acc(a, &ts->items[i], emit(a, OPS_getitem, 2, aot_gnode(g), aot_gconst(ix)));
		}
		off += len;
	}
}

/* ops with a rule: each differentiable primitive, and those whose
 * gradient is zero almost everywhere (PyTorch's choice) */
static const rule_fn rules[OPS_COUNT] = {
	[OPS_neg] = r_neg, [OPS_abs] = r_abs, [OPS_exp] = r_exp, [OPS_log] = r_log,
	[OPS_sqrt] = r_sqrt, [OPS_sin] = r_sin, [OPS_cos] = r_cos, [OPS_tanh] = r_tanh,
	[OPS_sigmoid] = r_sigmoid, [OPS_clamp] = r_clamp, [OPS_silu] = r_silu, [OPS_relu] = r_relu, [OPS_gelu] = r_gelu,
	[OPS_floor] = r_zero, [OPS_ceil] = r_zero, [OPS_round] = r_zero, [OPS_sign] = r_zero,
	[OPS_floordiv] = r_zero,
	[OPS_add] = r_add, [OPS_sub] = r_sub, [OPS_mul] = r_mul, [OPS_div] = r_div,
	[OPS_pow] = r_pow, [OPS_mod] = r_mod, [OPS_maximum] = r_maximum, [OPS_minimum] = r_minimum,
	[OPS_where] = r_where,
	[OPS_sum] = r_sum, [OPS_prod] = r_prod, [OPS_max] = r_maxmin, [OPS_min] = r_maxmin,
	[OPS_matmul] = r_matmul,
	[OPS_reshape] = r_reshape, [OPS_permute] = r_permute, [OPS_expand] = r_identity,
	[OPS_clone] = r_identity, [OPS_to] = r_identity, [OPS_cat] = r_cat, [OPS_getitem] = r_getitem,
};

bool aot_grad_has_rule(int op)
{
	return op >= 0 && op < OPS_COUNT && (rules[op] || !(ops_table[op].flags & OPF_DIFF));
}

/* ---- the joint ---- */

static bool garg_reaches(const bool *reach, const struct garg *x)
{
	if (x->kind == GARG_NODE)
		return reach[x->node];
	if (x->kind == GARG_LIST || x->kind == GARG_TUPLE)
		for (int i = 0; i < x->n; i++)
			if (garg_reaches(reach, &x->items[i]))
				return true;
	return false;
}

/* which nodes of g depend on a primal that wants a gradient, through
 * differentiable ops with floating point results (as ag_record says) */
static void find_reach(const struct graph *g, const bool *requires_grad, bool *reach)
{
	int k = 0;
	for (int i = 0; i < g->nnodes; i++) {
		const struct gnode *n = &g->nodes[i];
		bool any = false;
		for (int a = 0; a < n->nargs && !any; a++)
			any = garg_reaches(reach, &n->args[a]);
		switch (n->kind) {
		case GN_INPUT:
			reach[i] = requires_grad[k++] && n->is_tensor && dtype_is_float(n->dt);
			break;
		case GN_GETITEM: /* the shift of softmax's decomposition does not require grad */
			reach[i] = any && n->index == 0 && dtype_is_float(n->dt) && n->requires_grad;
			break;
		case GN_CALL:
			reach[i] = any && (n->nouts > 0 || dtype_is_float(n->dt));
			break;
		case GN_OP: /* a node recorded as not requiring grad (detach's copy) stops it */
			reach[i] = any && (ops_table[n->op].flags & OPF_DIFF) && (n->nouts > 0 || dtype_is_float(n->dt)) &&
				   (n->nouts > 0 || n->requires_grad);
			break;
		}
	}
}

static int no_rule(const struct gnode *n)
{
	const struct user_frame *at = n->nstack > 0 ? &n->stack[n->nstack - 1] : NULL;
	tj_error_set("no gradient rule for %s at %s:%d", n->kind == GN_CALL ? "an allow_in_graph call" : ops_table[n->op].name,
		     at && at->src ? at->src->path : "?", at ? at->line : 0);
	return -1;
}

/* the reverse sweep over the forward's nodes */
static int sweep(struct ad *a, int first)
{
	for (int i = a->nfwd - 1; i >= first; i--) {
		if (!a->reach[i] || a->grad[i] < 0)
			continue;
		const struct gnode *n = &a->b.g->nodes[i];
		at_node(a, i);
		n = &a->b.g->nodes[i];
		if (n->kind == GN_GETITEM) { /* the value of max with a dim: the tuple's gradient */
			int t = n->args[0].node;
			a->grad[t] = a->grad[t] < 0 ? a->grad[i] : bin(a, OPS_add, a->grad[t], a->grad[i]);
		} else if (n->kind == GN_CALL || !rules[n->op]) {
			return no_rule(n);
		} else {
			rules[n->op](a, n->args, a->grad[i]);
		}
		if (a->b.failed) {
			char why[256];
			snprintf(why, sizeof why, "%s", tj_error_peek() ? tj_error_peek() : "failed");
			n = &a->b.g->nodes[i];
			const struct user_frame *at = n->nstack > 0 ? &n->stack[n->nstack - 1] : NULL;
			tj_error_set("cannot differentiate %s at %s:%d: %s", n->name, at && at->src ? at->src->path : "?",
				     at ? at->line : 0, why);
			return -1;
		}
	}
	return 0;
}

/* a new input of g at pos, of like's type, named name (in g's arena) */
static int add_input(struct graph *g, int pos, const struct gnode *like, char *name, const char *source)
{
	struct gnode in;
	memset(&in, 0, sizeof in);
	in.kind = GN_INPUT;
	in.is_tensor = true;
	in.dt = like->dt;
	in.ndim = like->ndim;
	memcpy(in.shape, like->shape, sizeof in.shape);
	if (!(in.name = name) || !(in.source = graph_strdup(g, source)) ||
	    graph_insert(g, pos, &in) < 0) {
		tj_error_set("out of memory");
		return -1;
	}
	return pos;
}

/* one tangent input per output that gets a gradient: how many, or -1 */
static int add_tangents(struct aot_joint *j, const bool *reach)
{
	int nout = j->g->noutputs;
	for (int k = 0; k < nout; k++) {
		/* reach is indexed as before the tangents */
		int at = j->g->outputs[k], was = at >= j->nprimals ? at - j->ntangents : at;
		struct gnode o = j->g->nodes[at];
		if (!reach[was] || !o.is_tensor || !dtype_is_float(o.dt))
			continue;
		char name[32], source[32];
		snprintf(name, sizeof name, "tangents_%d", j->ntangents + 1);
		snprintf(source, sizeof source, "tangents[%d]", j->ntangents);
		if (add_input(j->g, j->nprimals + j->ntangents, &o, graph_fresh_name(j->g, name), source) < 0)
			return -1;
		j->tangent_of[j->ntangents++] = k;
	}
	return j->ntangents;
}

int aot_joint(const struct graph *fwd, const bool *requires_grad, struct aot_joint *j)
{
	struct graph *c = graph_copy(fwd);
	if (!c) {
		memset(j, 0, sizeof *j);
		tj_error_set("out of memory");
		return -1;
	}
	return aot_joint_in(c, requires_grad, j);
}

int aot_joint_in(struct graph *fwd, const bool *requires_grad, struct aot_joint *j)
{
	struct ad a = {0};
	bool *reach0 = NULL;
	memset(j, 0, sizeof *j);
	j->g = fwd;
	while (j->nprimals < fwd->nnodes && fwd->nodes[j->nprimals].kind == GN_INPUT)
		j->nprimals++;
	if (!(reach0 = util_calloc((size_t)fwd->nnodes + 1, sizeof *reach0)) ||
	    !(j->tangent_of = util_calloc((size_t)fwd->noutputs + 1, sizeof *j->tangent_of)) ||
	    !(j->grad = util_malloc(sizeof *j->grad * ((size_t)j->nprimals + 1)))) {
		tj_error_set("out of memory");
		goto fail;
	}
	/* the tangents go in before fwd's nodes: which reach, first */
	find_reach(fwd, requires_grad, reach0);
	if (add_tangents(j, reach0) < 0)
		goto fail;
	j->nforward = j->g->nnodes;
	a.b.g = j->g;
	a.b.pos = j->g->nnodes;
	a.nfwd = j->nforward;
	if (!(a.def = graph_alloc(j->g, sizeof *a.def))) {
		tj_error_set("out of memory");
		goto fail;
	}
	*a.def = (struct user_frame){j->g->src, j->g->line, 0, j->g->name};
	if (!(a.reach = util_calloc((size_t)a.nfwd + 1, sizeof *a.reach)) || !(a.grad = util_malloc(sizeof *a.grad * ((size_t)a.nfwd + 1)))) {
		tj_error_set("out of memory");
		goto fail;
	}
	for (int i = 0; i < a.nfwd; i++) {
		bool tangent = i >= j->nprimals && i < j->nprimals + j->ntangents;
		a.reach[i] = !tangent && reach0[i < j->nprimals ? i : i - j->ntangents];
		a.grad[i] = -1;
	}
	/* the seeds: each tangent is its output's gradient */
	for (int t = 0; t < j->ntangents; t++) {
		int o = j->g->outputs[j->tangent_of[t]], tan = j->nprimals + t;
		at_node(&a, o);
		a.grad[o] = a.grad[o] < 0 ? tan : bin(&a, OPS_add, a.grad[o], tan);
	}
	if (a.b.failed || sweep(&a, j->nprimals + j->ntangents) < 0)
		goto fail;
	for (int i = 0; i < j->nprimals; i++)
		j->grad[i] = requires_grad[i] ? a.grad[i] : -1;
	graph_check(j->g, "joint");
	free(reach0);
	free(a.reach);
	free(a.grad);
	return 0;
fail:
	free(reach0);
	free(a.reach);
	free(a.grad);
	aot_joint_release(j);
	return -1;
}

void aot_joint_release(struct aot_joint *j)
{
	if (j->g)
		graph_free(j->g);
	free(j->tangent_of);
	free(j->grad);
	memset(j, 0, sizeof *j);
}

/* ---- the partition ---- */

static int64_t node_bytes(const struct gnode *n)
{
	return graph_node_bytes(n);
}

/* cheap to compute again in backward: pointwise ops and views */
static bool cheap(const struct gnode *n)
{
	if (n->kind != GN_OP || !n->is_tensor)
		return false;
	unsigned f = ops_table[n->op].flags;
	if (f & (OPF_RANDOM | OPF_CREATE))
		return false;
	return (f & OPF_POINTWISE) || n->op == OPS_reshape || n->op == OPS_permute || n->op == OPS_expand;
}

static int uf_find(int *up, int i)
{
	while (up[i] != i)
		i = up[i] = up[up[i]];
	return i;
}

/* what the cut passes: node i of the joint is saved[i]; rec[i] when
 * backward computes it again. bw[i]: i depends on a tangent. */
struct cut {
	int n;
	bool *bw, *needed, *in_r, *saved, *rec;
	int *up;
	/* after the cut: the gradients backward returns, and bw_live[i] when
	 * backward reads node i (a saved node reads nothing) */
	int ngrads, *grads;
	bool *bw_live;
};

/* choose's scratch: [n] each */
struct choose_work {
	int *head, *next, *stamp, *front;
};

/* the nodes outside R that one component reads */
struct frontier {
	const struct graph *g;
	const bool *in_r;
	int *stamp;     /* [k] == comp: k already counted for this component */
	int *nodes;     /* the nodes counted */
	int n, comp;
	int64_t bytes;
};

static void frontier_add(struct frontier *f, const struct garg *x)
{
	if (x->kind == GARG_LIST || x->kind == GARG_TUPLE)
		for (int i = 0; i < x->n; i++)
			frontier_add(f, &x->items[i]);
	if (x->kind != GARG_NODE || f->stamp[x->node] == f->comp)
		return;
	f->stamp[x->node] = f->comp;
	if (!f->in_r[x->node]) {
		f->nodes[f->n++] = x->node;
		f->bytes += node_bytes(&f->g->nodes[x->node]);
	}
}

/* the region R of cheap forward nodes that the needed ones come from, its
 * components, and for each the cheaper side of the cut */
static void choose(const struct aot_joint *j, struct cut *c, struct choose_work *w)
{
	const struct graph *g = j->g;
	for (int i = g->nnodes - 1; i >= 0; i--)
		if (!c->bw[i] && cheap(&g->nodes[i]) && (c->needed[i] || c->in_r[i])) {
			c->in_r[i] = true;
			for (int a = 0; a < g->nodes[i].nargs; a++) {
				const struct garg *x = &g->nodes[i].args[a];
				if (x->kind == GARG_NODE && !c->bw[x->node] && cheap(&g->nodes[x->node]))
					c->in_r[x->node] = true;
			}
		}
	for (int i = 0; i < g->nnodes; i++)
		c->up[i] = i;
	for (int i = 0; i < g->nnodes; i++)
		for (int a = 0; c->in_r[i] && a < g->nodes[i].nargs; a++) {
			const struct garg *x = &g->nodes[i].args[a];
			if (x->kind == GARG_NODE && c->in_r[x->node])
				c->up[uf_find(c->up, x->node)] = uf_find(c->up, i);
		}
	/* each component's members chained from its root (next[]), then its
	 * frontier (the nodes outside R its members read, each once: stamp[]):
	 * O(n) in all, not a scan of the graph per component */
	for (int i = 0; i < g->nnodes; i++)
		w->head[i] = w->stamp[i] = -1;
	for (int i = g->nnodes - 1; i >= 0; i--)
		if (c->in_r[i]) {
			int r = uf_find(c->up, i);
			w->next[i] = w->head[r];
			w->head[r] = i;
		}
	for (int r = 0; r < g->nnodes; r++) {
		if (!c->in_r[r] || uf_find(c->up, r) != r)
			continue;
		int64_t keep = 0;
		struct frontier f = {g, c->in_r, w->stamp, w->front, 0, r, 0};
		for (int i = w->head[r]; i >= 0; i = w->next[i]) {
			keep += c->needed[i] ? node_bytes(&g->nodes[i]) : 0;
			for (int a = 0; a < g->nodes[i].nargs; a++)
				frontier_add(&f, &g->nodes[i].args[a]);
		}
		bool recompute = f.bytes <= keep;
		for (int i = w->head[r]; i >= 0; i = w->next[i])
			c->rec[i] = recompute;
		for (int k = 0; recompute && k < f.n; k++)
			c->saved[w->front[k]] = true;
	}
	for (int i = 0; i < g->nnodes; i++)
		if (c->needed[i] && !c->rec[i])
			c->saved[i] = true;
}

/* ---- AOT_RECOMPUTE_BUDGET ---- */

/* the time of one element of a kernel, relative to an add: libm's
 * functions cost several; a view copies nothing */
static int64_t op_weight(const struct gnode *n)
{
	switch (n->op) {
	case OPS_reshape: case OPS_permute: case OPS_expand:
		return 0;
	case OPS_exp: case OPS_log: case OPS_tanh: case OPS_sigmoid: case OPS_silu: case OPS_sin: case OPS_cos:
	case OPS_pow: case OPS_gelu:
		return 4;
	default:
		return 1;
	}
}

/* a move recomputes a node beyond this many others: no move */
#define CONE_MAX 64

/* the state of the greedy: what backward has (c->saved, c->rec), the
 * bytes saved beyond the primals, and one move's nodes */
struct budget {
	const struct graph *g;
	struct cut *c;
	const bool *live;   /* a forward node the outputs need: computing it again is one more kernel */
	int nprimals;
	int64_t bytes;
	int *stamp, *todo, *cone, *extra;       /* [n] each; cone and extra: the move's nodes */
	int move, ntodo, ncone, nextra;
	int64_t freed, cost;
	bool through_live;  /* a move recomputes the forward's own nodes too, or saves them */
};

static void cone_arg(struct budget *b, const struct garg *x)
{
	if (x->kind == GARG_LIST || x->kind == GARG_TUPLE)
		for (int i = 0; i < x->n; i++)
			cone_arg(b, &x->items[i]);
	if (x->kind != GARG_NODE)
		return;
	int k = x->node;
	if (b->stamp[k] == b->move || b->c->saved[k] || b->c->rec[k])
		return;
	b->stamp[k] = b->move;
	const struct gnode *n = &b->g->nodes[k];
	if (k >= b->nprimals && cheap(n) && (b->through_live || !b->live[k])) {
		b->todo[b->ntodo++] = k;
		return;
	}
	/* what it cannot recompute it saves: a primal costs nothing */
	b->extra[b->nextra++] = k;
	b->freed -= k < b->nprimals ? 0 : node_bytes(n);
}

/* The move that stops saving node s: backward computes it again, and the
 * cheap nodes it reads that backward does not have, recursively, from
 * what backward has (saved, a primal, recomputed) or now saves (what is
 * not cheap). Its bytes freed and its cost, the kernels' elements times
 * their weight over the nodes the forward computes anyway (a node made
 * only for backward moves there at no cost). false: too big a move. */
static bool cone(struct budget *b, int s)
{
	b->move++;
	b->ntodo = b->ncone = b->nextra = 0;
	b->freed = node_bytes(&b->g->nodes[s]);
	b->cost = 0;
	b->stamp[s] = b->move;
	b->todo[b->ntodo++] = s;
	while (b->ntodo > 0) {
		int i = b->todo[--b->ntodo];
		const struct gnode *n = &b->g->nodes[i];
		if (b->ncone == CONE_MAX)
			return false;
		b->cone[b->ncone++] = i;
		b->cost += b->live[i] ? op_weight(n) * node_bytes(n) : 0;
		for (int a = 0; a < n->nargs; a++)
			cone_arg(b, &n->args[a]);
	}
	return true;
}

static void apply(struct budget *b, int s)
{
	b->c->saved[s] = false;
	for (int k = 0; k < b->ncone; k++)
		b->c->rec[b->cone[k]] = true;
	for (int k = 0; k < b->nextra; k++)
		b->c->saved[b->extra[k]] = true;
	b->bytes -= b->freed;
}

struct candidate {
	int node;
	double rank;    /* cost per byte freed */
};

static int by_rank(const void *x, const void *y)
{
	const struct candidate *a = x, *b = y;
	if (a->rank != b->rank)
		return a->rank < b->rank ? -1 : 1;
	return a->node - b->node;
}

/* Saves what backward reads; then, over the cheap saved nodes in order of
 * cost per byte freed (as first measured, each measured again when its
 * turn comes), recomputes those that free bytes at no cost, and those
 * that cost while the saved bytes exceed the budget. Each tensor saved is
 * a tensor eager autograd would also hold (at most budget bytes in all);
 * each recomputed one a kernel that eager runs once. */
static int choose_budget(const struct aot_joint *j, struct cut *c, int64_t budget)
{
	const struct graph *g = j->g;
	int n = g->nnodes, ncand = 0, rc = -1;
	bool *live = util_calloc((size_t)n + 1, sizeof *live);
	int *ints = util_malloc(sizeof *ints * (4 * (size_t)n + 1));
	struct candidate *cand = util_malloc(sizeof *cand * ((size_t)n + 1));
	if (!live || !ints || !cand) {
		tj_error_set("out of memory");
		goto cleanup;
	}
	for (int k = 0; k < g->noutputs; k++)
		live[g->outputs[k]] = true;
	for (int i = n - 1; i >= 0; i--)
		if (live[i] && !c->bw[i])
			graph_mark_reads(&g->nodes[i], live);
	struct budget b = {g, c, live, j->nprimals, 0, ints, ints + n, ints + 2 * n, ints + 3 * n, 0, 0, 0, 0, 0, 0, false};
	for (int i = 0; i < n; i++) {
		ints[i] = 0;
		c->saved[i] = c->needed[i];
		b.bytes += c->saved[i] && i >= j->nprimals ? node_bytes(&g->nodes[i]) : 0;
	}
	/* what a rule made for backward alone goes there, reading what the
	 * forward computes anyway, when that holds no more bytes: no kernel
	 * more in all, and none in a forward that no backward follows */
	for (int i = n - 1; i >= j->nprimals; i--)
		if (c->saved[i] && !live[i] && cheap(&g->nodes[i]) && cone(&b, i) && b.freed >= 0)
			apply(&b, i);
	b.through_live = true;
	for (int i = j->nprimals; i < n; i++)
		if (c->saved[i] && cheap(&g->nodes[i]) && cone(&b, i) && b.freed > 0)
			cand[ncand++] = (struct candidate){i, (double)b.cost / (double)b.freed};
	qsort(cand, (size_t)ncand, sizeof *cand, by_rank);
	for (int k = 0; k < ncand; k++) {
		int s = cand[k].node;
		/* the free moves come first: once within the budget, no other */
		if (cand[k].rank > 0 && b.bytes <= budget)
			break;
		if (c->saved[s] && cone(&b, s) && b.freed > 0 && (b.cost == 0 || b.bytes > budget))
			apply(&b, s);
	}
	rc = 0;
cleanup:
	free(live);
	free(ints);
	free(cand);
	return rc;
}

/* ---- what eager autograd keeps ---- */

enum { KEEP_NONE = 0, KEEP_IN = 1, KEEP_OUT = 2, KEEP_INOUT = 3 };
/* each op's rule in autograd.c reads its inputs, its output, both or none */
static const unsigned char eager_keeps[OPS_COUNT] = {
#define OPDEF(name, kind, flags, params, impl, aux, save, backward, stage, meta) KEEP_##save,
#include "ops.def"
#undef OPDEF
};

static void keep_arg_nodes(const struct graph *g, const struct garg *x, bool *kept, int64_t *bytes)
{
	if (x->kind == GARG_LIST || x->kind == GARG_TUPLE)
		for (int i = 0; i < x->n; i++)
			keep_arg_nodes(g, &x->items[i], kept, bytes);
	if (x->kind == GARG_NODE && !kept[x->node]) {
		kept[x->node] = true;
		*bytes += g->nodes[x->node].kind == GN_INPUT ? 0 : node_bytes(&g->nodes[x->node]);
	}
}

int64_t aot_eager_saved_bytes(const struct graph *g, const bool *requires_grad)
{
	bool *reach = util_calloc((size_t)g->nnodes + 1, sizeof *reach);
	bool *kept = util_calloc((size_t)g->nnodes + 1, sizeof *kept);
	int64_t bytes = -1;
	if (!reach || !kept)
		tj_error_set("out of memory");
	else {
		bytes = 0;
		find_reach(g, requires_grad, reach);
		for (int i = 0; i < g->nnodes; i++) {
			const struct gnode *n = &g->nodes[i];
			if (!reach[i] || n->kind != GN_OP)
				continue;
			for (int a = 0; (eager_keeps[n->op] & KEEP_IN) && a < n->nargs; a++)
				keep_arg_nodes(g, &n->args[a], kept, &bytes);
			if ((eager_keeps[n->op] & KEEP_OUT) && !kept[i]) {
				kept[i] = true;
				bytes += node_bytes(n);
			}
		}
	}
	free(reach);
	free(kept);
	return bytes;
}

/* whether x reads a node k with flag[k] */
static bool arg_reads(const struct garg *x, const bool *flag)
{
	if (x->kind == GARG_NODE)
		return flag[x->node];
	for (int i = 0; (x->kind == GARG_LIST || x->kind == GARG_TUPLE) && i < x->n; i++)
		if (arg_reads(&x->items[i], flag))
			return true;
	return false;
}

/* needed[k] for each node k that x reads and that is not in backward */
static void mark_forward(const struct garg *x, const bool *bw, bool *needed)
{
	if (x->kind == GARG_NODE)
		needed[x->node] |= !bw[x->node];
	else if (x->kind == GARG_LIST || x->kind == GARG_TUPLE)
		for (int i = 0; i < x->n; i++)
			mark_forward(&x->items[i], bw, needed);
}

static int find_cut(const struct aot_joint *j, const struct aot_policy *policy, struct cut *c)
{
	const struct graph *g = j->g;
	c->n = g->nnodes;
	bool **arrays[] = {&c->bw, &c->needed, &c->in_r, &c->saved, &c->rec};
	for (size_t k = 0; k < sizeof arrays / sizeof *arrays; k++)
		if (!(*arrays[k] = util_calloc((size_t)c->n + 1, sizeof(bool))))
			goto oom;
	if (!(c->up = util_calloc((size_t)c->n + 1, sizeof *c->up)))
		goto oom;
	for (int i = 0; i < g->nnodes; i++) {
		const struct gnode *n = &g->nodes[i];
		if (n->kind == GN_INPUT) {
			c->bw[i] = i >= j->nprimals;
			continue;
		}
		/* its args, not every earlier node: O(args) a node */
		for (int a = 0; a < n->nargs && !c->bw[i]; a++)
			c->bw[i] = arg_reads(&n->args[a], c->bw);
	}
	/* needed: forward values that backward reads or returns */
	for (int i = 0; i < g->nnodes; i++)
		if (c->bw[i] && g->nodes[i].kind != GN_INPUT)
			for (int a = 0; a < g->nodes[i].nargs; a++)
				mark_forward(&g->nodes[i].args[a], c->bw, c->needed);
	for (int i = 0; i < j->nprimals; i++)
		if (j->grad[i] >= 0 && !c->bw[j->grad[i]])
			c->needed[j->grad[i]] = true;
	if (policy->recompute == AOT_RECOMPUTE_BUDGET)
		return choose_budget(j, c, policy->budget);
	int *ints = util_malloc(sizeof *ints * (4 * (size_t)c->n + 1));
	if (!ints)
		goto oom;
	struct choose_work w = {ints, ints + c->n, ints + 2 * c->n, ints + 3 * c->n};
	choose(j, c, &w);
	free(ints);
	return 0;
oom:
	tj_error_set("out of memory");
	return -1;
}

static void cut_release(struct cut *c)
{
	free(c->bw);
	free(c->needed);
	free(c->in_r);
	free(c->saved);
	free(c->rec);
	free(c->up);
	free(c->grads);
	free(c->bw_live);
}

/* live[i]: node i is an output or read by a live node; a node with
 * leaf[i] reads nothing (leaf may be NULL) */
static void mark_live(const struct graph *g, int noutputs, const int *outputs, const bool *leaf, bool *live)
{
	for (int k = 0; k < noutputs; k++)
		live[outputs[k]] = true;
	for (int i = g->nnodes - 1; i >= 0; i--)
		if (live[i] && !(leaf && leaf[i]))
			graph_mark_reads(&g->nodes[i], live);
}

/* the gradients backward returns and the nodes it reads. Computed once
 * for bind_backward_syms and make_backward: a primal saved in between
 * cannot change it, since a primal reads nothing. */
static int mark_backward_live(const struct aot_joint *j, struct cut *c)
{
	const struct graph *g = j->g;
	c->grads = util_malloc(sizeof *c->grads * ((size_t)j->nprimals + 1));
	c->bw_live = util_calloc((size_t)g->nnodes + 1, sizeof *c->bw_live);
	if (!c->grads || !c->bw_live) {
		tj_error_set("out of memory");
		return -1;
	}
	for (int i = 0; i < j->nprimals; i++)
		if (j->grad[i] >= 0)
			c->grads[c->ngrads++] = j->grad[i];
	mark_live(g, c->ngrads, c->grads, c->saved, c->bw_live);
	return 0;
}

static void mark_arg_syms(const struct garg *x, bool *mark)
{
	if (x->kind == GARG_SYM && x->sym >= 0)
		mark[x->sym] = true;
	for (int i = 0; (x->kind == GARG_LIST || x->kind == GARG_TUPLE) && i < x->n; i++)
		mark_arg_syms(&x->items[i], mark);
}

static void mark_shape_syms(const struct gnode *n, bool *mark)
{
	for (int d = 0; d < n->ndim; d++)
		if (n->shape[d].sym >= 0)
			mark[n->shape[d].sym] = true;
}

/* Backward binds its symbols from its inputs' sizes (graph_interpret's
 * bind_syms). One that no saved tensor and no tangent carries (x.sum()
 * of a dynamic x: a 0-d tangent, nothing saved, a gradient expanded to
 * (s0, s1)) gets a primal saved that carries it: a reference, no copy. */
static int bind_backward_syms(const struct aot_joint *j, struct cut *c)
{
	const struct graph *g = j->g;
	if (g->nsyms == 0)
		return 0;
	int first = j->nprimals + j->ntangents;
	bool *used = util_calloc((size_t)g->nsyms, sizeof *used), *bound = util_calloc((size_t)g->nsyms, sizeof *bound);
	if (!used || !bound) {
		free(used);
		free(bound);
		tj_error_set("out of memory");
		return -1;
	}
	for (int i = 0; i < g->nnodes; i++) {
		const struct gnode *n = &g->nodes[i];
		if (c->saved[i] || (i >= j->nprimals && i < first)) {
			mark_shape_syms(n, bound);
		} else if (c->bw_live[i] && i >= first) {
			mark_shape_syms(n, used);
			for (int a = 0; a < n->nargs; a++)
				mark_arg_syms(&n->args[a], used);
		}
	}
	for (int s = 0; s < g->nsyms; s++)
		for (int i = 0; used[s] && !bound[s] && i < j->nprimals; i++) {
			for (int d = 0; d < g->nodes[i].ndim; d++)
				if (g->nodes[i].shape[d].sym == s) {
					c->saved[i] = true;
					mark_shape_syms(&g->nodes[i], bound);
					break;
				}
		}
	free(used);
	free(bound);
	return 0;
}

/* forward: the primals in, the outputs and the saved out; only what they
 * need is copied */
static int make_forward(const struct aot_joint *j, const struct cut *c, struct aot_partition *p)
{
	const struct graph *g = j->g;
	int *outs = util_malloc(sizeof *outs * ((size_t)g->noutputs + (size_t)g->nnodes + 1));
	int *order = util_malloc(sizeof *order * ((size_t)g->nnodes + 1)), n = 0;
	bool *live = util_calloc((size_t)g->nnodes + 1, sizeof *live);
	int rc = -1;
	if (!outs || !order || !live)
		goto oom;
	memcpy(outs, g->outputs, sizeof *outs * (size_t)g->noutputs);
	p->noutputs = g->noutputs;
	for (int i = 0; i < g->nnodes; i++)
		if (c->saved[i]) {
			outs[p->noutputs + p->nsaved++] = i;
			p->saved_bytes += node_bytes(&g->nodes[i]);
		}
	mark_live(g, p->noutputs + p->nsaved, outs, NULL, live);
	for (int i = 0; i < g->nnodes; i++)
		if (i < j->nprimals || (i >= j->nprimals + j->ntangents && live[i]))
			order[n++] = i;
	if (!(p->fwd = graph_extract(g, n, order, NULL, p->noutputs + p->nsaved, outs)))
		goto oom;
	p->fwd->stage = STAGE_AOT_FORWARD;
	rc = 0;
	goto cleanup;
oom:
	tj_error_set("out of memory");
cleanup:
	free(outs);
	free(order);
	free(live);
	return rc;
}

/* backward: the saved (inputs "saved[k]" with their nodes' names, k
 * their place among all the saved, aot_saved.idx, after the saved graph
 * inputs, which keep their sources) and the tangents in, the gradients
 * out; the forward nodes it reads and that are not saved computed again;
 * only what it needs is copied */
static int make_backward(const struct aot_joint *j, const struct cut *c, struct aot_partition *p)
{
	const struct graph *g = j->g;
	int n = 0, k = 0, first = j->nprimals + j->ntangents;
	int *order = util_malloc(sizeof *order * ((size_t)g->nnodes + 1));
	const char **as_input = util_calloc((size_t)g->nnodes + 1, sizeof *as_input);
	char (*sources)[24] = util_malloc(sizeof *sources * ((size_t)g->nnodes + 1));
	const bool *live = c->bw_live;
	int rc = -1;
	if (!order || !as_input || !sources) {
		tj_error_set("out of memory");
		goto cleanup;
	}
	for (int i = 0, out = 0; i < j->nprimals; i++)
		p->grad_output[i] = j->grad[i] >= 0 ? out++ : -1;
	for (int i = 0; i < j->nprimals; i++) {
		if (live[i] && !c->saved[i]) {
			tj_error_set("aot partition: backward reads %s, which is not saved", g->nodes[i].name);
			goto cleanup;
		}
		if (c->saved[i])
			order[n++] = i;
	}
	k = n;
	for (int i = first; i < g->nnodes; i++)
		if (c->saved[i]) {
			snprintf(sources[n], sizeof *sources, "saved[%d]", k++);
			as_input[n] = sources[n];
			order[n++] = i;
		}
	for (int i = j->nprimals; i < first; i++)
		order[n++] = i;
	for (int i = first; i < g->nnodes; i++)
		if (live[i] && !c->saved[i])
			order[n++] = i;
	if (!(p->bwd = graph_extract(g, n, order, as_input, c->ngrads, c->grads))) {
		tj_error_set("out of memory");
		goto cleanup;
	}
	p->bwd->stage = STAGE_AOT_BACKWARD;
	for (int i = 0; i < p->bwd->nnodes; i++)
		p->bwd->nodes[i].requires_grad = false;
	rc = 0;
cleanup:
	free(order);
	free(as_input);
	free(sources);
	return rc;
}

int aot_partition(const struct aot_joint *j, const struct aot_policy *policy, struct aot_partition *p)
{
	struct cut c = {0};
	memset(p, 0, sizeof *p);
	p->nprimals = j->nprimals;
	if (!(p->grad_output = util_calloc((size_t)j->nprimals + 1, sizeof *p->grad_output))) {
		tj_error_set("out of memory");
		goto fail;
	}
	if (find_cut(j, policy, &c) < 0 || mark_backward_live(j, &c) < 0 || bind_backward_syms(j, &c) < 0 ||
	    make_forward(j, &c, p) < 0 || make_backward(j, &c, p) < 0)
		goto fail;
	for (int i = 0; i < j->g->nnodes; i++)
		p->nrecomputed += c.rec[i] && !c.saved[i];
	cut_release(&c);
	graph_check(p->fwd, "partition");
	graph_check(p->bwd, "partition");
	return 0;
fail:
	cut_release(&c);
	aot_partition_release(p);
	return -1;
}

void aot_partition_release(struct aot_partition *p)
{
	if (p->fwd)
		graph_free(p->fwd);
	if (p->bwd)
		graph_free(p->bwd);
	free(p->grad_output);
	memset(p, 0, sizeof *p);
}
