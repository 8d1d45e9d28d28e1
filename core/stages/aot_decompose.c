/* aot_decompose.c - aot_eager's decomposition: each composite node of a
 * graph becomes the primitive nodes of its row of decomp.def.
 *
 * A row's builder inserts its nodes before the composite node with emit(),
 * which takes an op and its leading arguments (the rest are the op's
 * defaults), asks the op's shape rule for the result's type, and gives
 * the node the composite's stack. After a failed emit() the others do
 * nothing, so that a builder is a plain sequence of calls and the pass
 * checks once, at the end of the row. The pass then points the composite's
 * users at the builder's result and erases the composite.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "aot_decompose.h"
#include "compile_ctx.h"
#include "graph.h"
#include "ops.h"
#include "ops_meta.h"

/* one composite node being decomposed */
struct dec {
	struct graph *g;
	int pos;                  /* where the next new node goes */
	int orig;                 /* the composite node: it moves down as nodes arrive */
	const struct garg *args;  /* its args (in the arena, they stay put) */
	struct gnode node;        /* a copy of it: its op, type and stack */
	bool failed;              /* an emit failed: the error is set */
};

typedef int (*dec_fn)(struct dec *d); /* the result's node index (-1: failed) */

/* ---- arguments ---- */

static struct garg gnode(int i) { return (struct garg){.kind = GARG_NODE, .node = i}; }
/* v's reference passes to the node */
static struct garg gconst(value v) { return (struct garg){.kind = GARG_CONST, .constant = v}; }
static struct garg gint(int64_t i) { return gconst(val_int(i)); }
static struct garg gbool(bool b) { return gconst(val_bool(b)); }
static struct garg gdtype(dtype dt) { return gconst(val_dtype(dt)); }
static struct garg gsize(struct sym_size s)
{
	return s.sym >= 0 ? (struct garg){.kind = GARG_SYM, .sym = s.sym} : gint(s.value);
}

static void garg_drop(struct garg *a)
{
	if (a->kind == GARG_CONST)
		val_decref(a->constant);
	else if (a->kind == GARG_LIST || a->kind == GARG_TUPLE)
		for (int i = 0; i < a->n; i++)
			garg_drop(&a->items[i]);
}

static int oom(struct dec *d)
{
	if (!d->failed)
		tj_error_set("out of memory");
	d->failed = true;
	return -1;
}

/* a list or tuple of n args (their references pass to it), in the arena */
static struct garg gseq(struct dec *d, enum garg_kind kind, int n, const struct garg *items)
{
	struct garg a = {.kind = kind, .n = n};
	if (n > 0 && !(a.items = graph_alloc(d->g, sizeof *a.items * (size_t)n))) {
		for (int i = 0; i < n; i++)
			garg_drop((struct garg *)&items[i]);
		oom(d);
		return gconst(val_none());
	}
	if (n > 0)
		memcpy(a.items, items, sizeof *a.items * (size_t)n);
	return a;
}

/* a copy of an arg for a new node: constants gain a reference, lists are
 * copied into the arena */
static struct garg gcopy(struct dec *d, const struct garg *a)
{
	if (a->kind == GARG_CONST) {
		val_incref(a->constant);
		return *a;
	}
	if (a->kind != GARG_LIST && a->kind != GARG_TUPLE)
		return *a;
	struct garg items[a->n > 0 ? a->n : 1];
	for (int i = 0; i < a->n; i++)
		items[i] = gcopy(d, &a->items[i]);
	return gseq(d, a->kind, a->n, items);
}

static struct garg arg(struct dec *d, int i) { return gcopy(d, &d->args[i]); }

static bool is_none(const struct garg *a) { return a->kind == GARG_CONST && a->constant.tag == VAL_NONE; }

/* the example value of symbol s: the size of an input dimension it binds */
static int64_t sym_example(const struct graph *g, int s)
{
	for (int i = 0; i < g->nnodes; i++)
		for (int k = 0; k < g->nodes[i].ndim; k++)
			if (g->nodes[i].shape[k].sym == s)
				return g->nodes[i].shape[k].value;
	return 0;
}

/* the value of a constant arg (a new reference); a node reads as None */
static value arg_value(const struct graph *g, const struct garg *a)
{
	switch (a->kind) {
	case GARG_CONST:
		val_incref(a->constant);
		return a->constant;
	case GARG_SYM:
		return val_int(sym_example(g, a->sym));
	case GARG_LIST:
	case GARG_TUPLE: {
		value c = a->kind == GARG_LIST ? list_new((size_t)a->n) : tuple_new((size_t)a->n);
		value *items = a->kind == GARG_LIST ? val_list(c)->items : val_tuple(c)->items;
		if (a->kind == GARG_LIST)
			val_list(c)->len = (size_t)a->n;
		for (int i = 0; i < a->n; i++)
			items[i] = arg_value(g, &a->items[i]);
		return c;
	}
	case GARG_NODE:
		break;
	}
	return val_none();
}

/* the type of a tensor arg: a node's recorded one, or a constant's */
static int arg_type(struct dec *d, const struct garg *a, struct meta_tensor *t)
{
	memset(t, 0, sizeof *t);
	if (d->failed)
		return -1;
	if (a->kind == GARG_NODE) {
		const struct gnode *n = &d->g->nodes[a->node];
		t->dt = n->dt;
		t->ndim = n->ndim;
		memcpy(t->shape, n->shape, sizeof t->shape);
		return 0;
	}
	if (a->kind == GARG_CONST && a->constant.tag == VAL_TENSOR) {
		const tensor *x = val_as_tensor(a->constant);
		t->dt = x->dt;
		t->ndim = x->ndim;
		for (int k = 0; k < x->ndim; k++)
			t->shape[k] = (struct sym_size){x->shape[k], -1};
		return 0;
	}
	tj_error_set("%s: argument is not a tensor", ops_table[d->node.op].name);
	d->failed = true;
	return -1;
}

/* ---- new nodes ---- */

static bool garg_requires_grad(const struct graph *g, const struct garg *a)
{
	if (a->kind == GARG_NODE)
		return g->nodes[a->node].requires_grad;
	if (a->kind == GARG_CONST && a->constant.tag == VAL_TENSOR)
		return val_as_tensor(a->constant)->requires_grad;
	if (a->kind == GARG_LIST || a->kind == GARG_TUPLE)
		for (int i = 0; i < a->n; i++)
			if (garg_requires_grad(g, &a->items[i]))
				return true;
	return false;
}

/* as the tracer says: a creation that asks for it, or a differentiable op
 * with an input that requires grad and a floating point result */
static bool result_requires_grad(const struct graph *g, const struct gnode *n, dtype dt)
{
	const struct ops_info *in = &ops_table[n->op];
	if (in->flags & OPF_CREATE) {
		const struct ops_sig *s = ops_signature(n->op);
		for (int i = 0; i < s->n; i++)
			if (!strcmp(s->names[i], "requires_grad"))
				return n->args[i].kind == GARG_CONST && n->args[i].constant.tag == VAL_BOOL && n->args[i].constant.b;
		return false;
	}
	if (!(in->flags & OPF_DIFF) || !dtype_is_float(dt))
		return false;
	for (int i = 0; i < n->nargs; i++)
		if (garg_requires_grad(g, &n->args[i]))
			return true;
	return false;
}

static void set_type(struct gnode *n, const struct meta_tensor *t)
{
	n->is_tensor = true;
	n->dt = t->dt;
	n->ndim = t->ndim;
	memcpy(n->shape, t->shape, sizeof n->shape);
}

/* puts n at d->pos, before the composite: its index */
static int insert(struct dec *d, struct gnode *n)
{
	n->nstack = d->node.nstack;
	n->stack = d->node.stack;
	if (graph_insert(d->g, d->pos, n) < 0) {
		for (int i = 0; i < n->nargs; i++)
			garg_drop(&n->args[i]);
		return oom(d);
	}
	d->orig++;
	return d->pos++;
}

/* op(args...): nargs leading arguments (their references pass to the
 * node), the op's defaults for the rest; the new node's index */
static int emit(struct dec *d, int op, int nargs, ...)
{
	const struct ops_sig *sig = ops_signature(op);
	struct gnode n;
	memset(&n, 0, sizeof n);
	n.kind = GN_OP;
	n.op = op;
	n.nargs = sig->n;
	n.args = d->failed ? NULL : graph_alloc(d->g, sizeof *n.args * (size_t)(sig->n > 0 ? sig->n : 1));
	va_list ap;
	va_start(ap, nargs);
	for (int i = 0; i < nargs; i++) {
		struct garg a = va_arg(ap, struct garg);
		if (n.args && i < sig->n)
			n.args[i] = a;
		else
			garg_drop(&a);
	}
	va_end(ap);
	if (d->failed)
		return -1;
	if (!n.args)
		return oom(d);
	for (int i = nargs; i < sig->n; i++) {
		val_incref(sig->defaults[i]);
		n.args[i] = gconst(sig->defaults[i]);
	}
	struct meta_out out;
	bool fresh = false;
	if (nargs > sig->n)
		tj_error_set("%s takes %d arguments", ops_table[op].name, sig->n);
	else if (meta_infer_node(d->g, &n, NULL, &out) == 0 && !(fresh = (n.name = graph_fresh_name(d->g, ops_table[op].name)) != NULL))
		tj_error_set("out of memory");
	if (!fresh) {
		for (int i = 0; i < sig->n; i++)
			garg_drop(&n.args[i]);
		d->failed = true;
		return -1;
	}
	if (out.n == 1) {
		set_type(&n, &out.t[0]);
		n.requires_grad = result_requires_grad(d->g, &n, n.dt);
	} else {
		n.nouts = out.n;
	}
	return insert(d, &n);
}

/* item k of the tuple that node t returns (max with a dim) */
static int item(struct dec *d, int t, int k)
{
	if (d->failed)
		return -1;
	struct meta_out out;
	if (meta_infer_node(d->g, &d->g->nodes[t], NULL, &out) < 0 || k >= out.n) {
		d->failed = true;
		return -1;
	}
	struct gnode n;
	memset(&n, 0, sizeof n);
	n.kind = GN_GETITEM;
	n.index = k;
	n.nargs = 1;
	if (!(n.args = graph_alloc(d->g, sizeof *n.args)) || !(n.name = graph_fresh_name(d->g, "getitem")))
		return oom(d);
	n.args[0] = gnode(t);
	set_type(&n, &out.t[k]);
	n.requires_grad = k == 0 && result_requires_grad(d->g, &d->g->nodes[t], out.t[k].dt);
	return insert(d, &n);
}

/* x as dtype dt: x itself when it is one already */
static struct garg convert(struct dec *d, struct garg x, dtype dt)
{
	struct meta_tensor t;
	if (arg_type(d, &x, &t) < 0 || t.dt == dt)
		return x;
	return gnode(emit(d, OPS_to, 2, x, gdtype(dt)));
}

/* argument i as a floating point tensor, as the float-only kernels take it */
static struct garg as_float(struct dec *d, int i)
{
	struct meta_tensor t;
	struct garg x = arg(d, i);
	if (arg_type(d, &x, &t) < 0 || dtype_is_float(t.dt))
		return x;
	return gnode(emit(d, OPS_to, 2, x, gdtype(DT_FLOAT32)));
}

/* the count of elements that argument 1 (dim) of a reduction of argument 0
 * reduces, less correction, at least 0: a number when every reduced size
 * is constant, else a 0-d tensor of like's dtype made of the symbols */
static struct garg count(struct dec *d, int like, int correction)
{
	struct meta_tensor x;
	int dims[TENSOR_MAX_DIMS], nd;
	if (arg_type(d, &d->args[0], &x) < 0)
		return gint(1);
	value dim = arg_value(d->g, &d->args[1]);
	int rc = ops_dims(ops_table[d->node.op].name, dim, x.ndim, dims, &nd);
	val_decref(dim);
	if (rc < 0) {
		d->failed = true;
		return gint(1);
	}
	if (nd == 0)
		for (; nd < x.ndim; nd++)
			dims[nd] = nd;
	int64_t c = 1;
	int t = -1;
	for (int k = 0; k < nd; k++) {
		struct sym_size s = x.shape[dims[k]];
		if (s.sym < 0)
			c *= s.value;
		else if (t < 0)
			t = emit(d, OPS_full, 3, gseq(d, GARG_TUPLE, 0, NULL), gsize(s), gdtype(d->g->nodes[like].dt));
		else
			t = emit(d, OPS_mul, 2, gnode(t), gsize(s));
	}
	if (t < 0 && !d->failed)
		return gint(c - correction > 0 ? c - correction : 0);
	if (c != 1)
		t = emit(d, OPS_mul, 2, gnode(t), gint(c));
	if (correction) {
		t = emit(d, OPS_sub, 2, gnode(t), gint(correction));
		t = emit(d, OPS_maximum, 2, gnode(t), gint(0));
	}
	return gnode(t);
}

/* a tuple of sizes or dims */
static struct garg gsizes(struct dec *d, int n, const struct sym_size *s)
{
	struct garg items[TENSOR_MAX_DIMS];
	for (int i = 0; i < n; i++)
		items[i] = gsize(s[i]);
	return gseq(d, GARG_TUPLE, n, items);
}

static struct garg gdims(struct dec *d, int n, const int *dims)
{
	struct sym_size s[TENSOR_MAX_DIMS];
	for (int i = 0; i < n; i++)
		s[i] = (struct sym_size){dims[i], -1};
	return gsizes(d, n, s);
}

/* ---- the builders, one per kind of row of decomp.def ---- */

static int dec_eye(struct dec *d)
{
	int64_t n = d->node.shape[0].value, m = d->node.shape[1].value;
	int rows = emit(d, OPS_arange, 1, gint(n));
	struct sym_size col[2] = {{n, -1}, {1, -1}};
	rows = emit(d, OPS_reshape, 2, gnode(rows), gsizes(d, 2, col));
	int cols = emit(d, OPS_arange, 1, gint(m));
	int eq = emit(d, OPS_eq, 2, gnode(rows), gnode(cols));
	return emit(d, OPS_to, 2, gnode(eq), gdtype(d->node.dt));
}

static const int like_creator[OPS_COUNT] = {
	[OPS_zeros_like] = OPS_zeros,
	[OPS_ones_like] = OPS_ones,
	[OPS_randn_like] = OPS_randn,
	[OPS_rand_like] = OPS_rand,
};

static int dec_like(struct dec *d)
{
	struct meta_tensor x;
	if (arg_type(d, &d->args[0], &x) < 0)
		return -1;
	return emit(d, like_creator[d->node.op], 3, gsizes(d, x.ndim, x.shape), gdtype(d->node.dt), arg(d, 2));
}

static int dec_rsqrt(struct dec *d)
{
	int s = emit(d, OPS_sqrt, 1, as_float(d, 0));
	return emit(d, OPS_div, 2, gint(1), gnode(s));
}

/* 1 + exp(-x), the denominator of sigmoid and silu */
static int one_plus_exp_neg(struct dec *d, struct garg x)
{
	int e = emit(d, OPS_exp, 1, gnode(emit(d, OPS_neg, 1, x)));
	return emit(d, OPS_add, 2, gnode(e), gint(1));
}

static int dec_sigmoid(struct dec *d)
{
	int den = one_plus_exp_neg(d, as_float(d, 0));
	return emit(d, OPS_div, 2, gint(1), gnode(den));
}

static int dec_silu(struct dec *d)
{
	struct garg x = as_float(d, 0);
	int den = one_plus_exp_neg(d, gcopy(d, &x));
	return emit(d, OPS_div, 2, x, gnode(den));
}

static int dec_reciprocal(struct dec *d) { return emit(d, OPS_div, 2, gint(1), as_float(d, 0)); }

/* as tensor_clamp: in the promoted dtype, back to it after each bound */
static int dec_clamp(struct dec *d)
{
	struct garg x = convert(d, arg(d, 0), d->node.dt);
	for (int k = 1; k <= 2; k++)
		if (!is_none(&d->args[k])) {
			int r = emit(d, k == 1 ? OPS_maximum : OPS_minimum, 2, x, arg(d, k));
			x = convert(d, gnode(r), d->node.dt);
		}
	return d->failed ? -1 : x.node;
}

static int dec_mean(struct dec *d)
{
	int s = emit(d, OPS_sum, 4, arg(d, 0), arg(d, 1), arg(d, 2), arg(d, 3));
	struct garg n = count(d, s, 0);
	return emit(d, OPS_div, 2, gnode(s), n);
}

/* the two-pass form of the kernel: the mean first, then the deviations */
static int dec_var(struct dec *d)
{
	value v[5];
	int correction = 0;
	for (int i = 0; i < 5; i++)
		v[i] = arg_value(d->g, &d->args[i]);
	if (ops_var_correction(OPS_var, v, &correction) < 0)
		d->failed = true;
	for (int i = 0; i < 5; i++)
		val_decref(v[i]);
	int m = emit(d, OPS_mean, 3, arg(d, 0), arg(d, 1), gbool(true));
	int dev = emit(d, OPS_sub, 2, arg(d, 0), gnode(m));
	int sq = emit(d, OPS_mul, 2, gnode(dev), gnode(dev));
	int s = emit(d, OPS_sum, 3, gnode(sq), arg(d, 1), arg(d, 3));
	struct garg n = count(d, s, correction);
	return emit(d, OPS_div, 2, gnode(s), n);
}

/* softmax and log_softmax, shifted by the maximum as the kernel is */
static int dec_softmax(struct dec *d)
{
	struct garg x = as_float(d, 0);
	int mx = emit(d, OPS_max, 3, gcopy(d, &x), arg(d, 1), gbool(true));
	int m = item(d, mx, 0);
	int s = emit(d, OPS_sub, 2, x, gnode(m));
	int e = emit(d, OPS_exp, 1, gnode(s));
	int t = emit(d, OPS_sum, 3, gnode(e), arg(d, 1), gbool(true));
	if (d->node.op == OPS_softmax)
		return emit(d, OPS_div, 2, gnode(e), gnode(t));
	int l = emit(d, OPS_log, 1, gnode(t));
	return emit(d, OPS_sub, 2, gnode(s), gnode(l));
}

static int dec_linear(struct dec *d)
{
	struct meta_tensor w;
	if (arg_type(d, &d->args[1], &w) < 0)
		return -1;
	struct garg wt = arg(d, 1);
	if (w.ndim >= 2) {
		int perm[TENSOR_MAX_DIMS];
		for (int k = 0; k < w.ndim; k++)
			perm[k] = k;
		perm[w.ndim - 2] = w.ndim - 1;
		perm[w.ndim - 1] = w.ndim - 2;
		wt = gnode(emit(d, OPS_permute, 2, wt, gdims(d, w.ndim, perm)));
	}
	int y = emit(d, OPS_matmul, 2, arg(d, 0), wt);
	if (is_none(&d->args[2]))
		return y;
	return emit(d, OPS_add, 2, gnode(y), arg(d, 2));
}

static int dec_view(struct dec *d) { return emit(d, OPS_reshape, 2, arg(d, 0), arg(d, 1)); }

static int permute_by(struct dec *d, const int *perm, int n)
{
	return emit(d, OPS_permute, 2, arg(d, 0), gdims(d, n, perm));
}

static int dec_transpose(struct dec *d)
{
	struct meta_tensor x;
	int perm[TENSOR_MAX_DIMS], d0, d1;
	if (arg_type(d, &d->args[0], &x) < 0)
		return -1;
	value v0 = arg_value(d->g, &d->args[1]), v1 = arg_value(d->g, &d->args[2]);
	int rc = ops_dim("transpose", v0, x.ndim, &d0) < 0 || ops_dim("transpose", v1, x.ndim, &d1) < 0 ? -1 : 0;
	val_decref(v0);
	val_decref(v1);
	if (rc < 0) {
		d->failed = true;
		return -1;
	}
	for (int k = 0; k < x.ndim; k++)
		perm[k] = k;
	perm[d0] = d1;
	perm[d1] = d0;
	return permute_by(d, perm, x.ndim);
}

static int dec_T(struct dec *d)
{
	struct meta_tensor x;
	int perm[TENSOR_MAX_DIMS];
	if (arg_type(d, &d->args[0], &x) < 0)
		return -1;
	for (int k = 0; k < x.ndim; k++)
		perm[k] = x.ndim - 1 - k;
	return permute_by(d, perm, x.ndim);
}

/* unsqueeze, squeeze, flatten: only the sizes change */
static int dec_result_shape(struct dec *d)
{
	return emit(d, OPS_reshape, 2, arg(d, 0), gsizes(d, d->node.ndim, d->node.shape));
}

static int dec_stack(struct dec *d)
{
	const struct garg *ts = &d->args[0];
	if (ts->kind != GARG_LIST && ts->kind != GARG_TUPLE) {
		tj_error_set("stack: tensors is not a list");
		d->failed = true;
		return -1;
	}
	struct garg items[ts->n > 0 ? ts->n : 1];
	for (int i = 0; i < ts->n; i++)
		items[i] = gnode(emit(d, OPS_unsqueeze, 2, gcopy(d, &ts->items[i]), arg(d, 1)));
	return emit(d, OPS_cat, 2, gseq(d, ts->kind, d->failed ? 0 : ts->n, items), arg(d, 1));
}

static int dec_contiguous(struct dec *d) { return emit(d, OPS_clone, 1, arg(d, 0)); }

static int dec_to(struct dec *d) { return emit(d, OPS_to, 2, arg(d, 0), gdtype(d->node.dt)); }

/* a copy that does not require grad: graph autodiff stops there */
static int dec_detach(struct dec *d)
{
	int r = emit(d, OPS_clone, 1, arg(d, 0));
	if (r >= 0)
		d->g->nodes[r].requires_grad = false;
	return r;
}

static int dec_identity(struct dec *d)
{
	if (d->args[0].kind == GARG_NODE)
		return d->args[0].node;
	tj_error_set("%s of a constant", ops_table[d->node.op].name);
	d->failed = true;
	return -1;
}

/* ---- the table ---- */

struct decomp {
	dec_fn build;
	const char *formula;
};

static const struct decomp decomps[OPS_COUNT] = {
#define DECOMP(op, build, formula) [OPS_##op] = {dec_##build, formula},
#include "decomp.def"
#undef DECOMP
};

bool aot_decomp_has(int op) { return op >= 0 && op < OPS_COUNT && decomps[op].build; }

const char *aot_decomp_formula(int op) { return aot_decomp_has(op) ? decomps[op].formula : NULL; }

/* ---- the pass ---- */

static bool same_type(const struct gnode *a, const struct gnode *b)
{
	if (a->is_tensor != b->is_tensor || a->nouts != b->nouts || a->dt != b->dt || a->ndim != b->ndim)
		return false;
	for (int k = 0; k < a->ndim; k++)
		if (a->shape[k].value != b->shape[k].value || a->shape[k].sym != b->shape[k].sym)
			return false;
	return true;
}

static int decompose_node(struct graph *g, int i)
{
	struct dec d = {.g = g, .pos = i, .orig = i, .args = g->nodes[i].args, .node = g->nodes[i]};
	const struct decomp *row = &decomps[d.node.op];
	int r = -1;
	if (!row->build) {
		tj_error_set("no decomposition");
		goto fail;
	}
	if ((r = row->build(&d)) < 0 || d.failed)
		goto fail;
	if (!same_type(&g->nodes[r], &d.node)) {
		tj_error_set("the decomposition gives another type");
		goto fail;
	}
	graph_replace_uses(g, d.orig, r);
	if (graph_erase(g, d.orig) < 0)
		goto fail;
	return 0;
fail:;
	char why[256];
	snprintf(why, sizeof why, "%s", tj_error_peek() ? tj_error_peek() : "failed");
	const struct user_frame *at = d.node.nstack > 0 ? &d.node.stack[d.node.nstack - 1] : NULL;
	tj_error_set("cannot decompose %s at %s:%d: %s", ops_table[d.node.op].name,
		     at && at->src ? at->src->path : "?", at ? at->line : 0, why);
	return -1;
}

int aot_decompose(struct graph *g, struct compile_ctx *cc)
{
	int phase = cc ? compile_ctx_phase_begin(cc, "decompose") : -1, rc = -1;
	/* a row makes at most a few dozen nodes, composites among them, and
	 * those make primitives only: this bound is never reached */
	long budget = 64 + 64L * g->nnodes;
	for (int i = 0; i < g->nnodes;) {
		const struct gnode *n = &g->nodes[i];
		if (n->kind != GN_OP || ops_table[n->op].stage != OPST_COMP) {
			i++;
			continue;
		}
		if (--budget < 0) {
			tj_error_set("decomposition of %s does not end", n->name);
			goto cleanup;
		}
		/* the new nodes are at i: the next turns look at them too */
		if (decompose_node(g, i) < 0)
			goto cleanup;
	}
	graph_check(g, "decompose");
	rc = 0;
cleanup:
	if (cc)
		compile_ctx_phase_end(cc, phase);
	return rc;
}
