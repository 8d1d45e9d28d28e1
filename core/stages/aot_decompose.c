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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aot_build.h"
#include "aot_decompose.h"
#include "compile_ctx.h"
#include "graph.h"
#include "ops.h"
#include "ops_meta.h"
#include "util.h"

/* one composite node being decomposed: its new nodes go before it, with
 * its stack (b.pos is then where it is) */
struct dec {
	struct aot_build b;
	const struct garg *args;  /* its args (in the arena, they stay put) */
	struct gnode node;        /* a copy of it: its op, type and stack */
};

typedef int (*dec_fn)(struct dec *d); /* the result's node index (-1: failed) */

/* ---- arguments ---- */

static struct garg gseq(struct dec *d, enum garg_kind kind, int n, const struct garg *items)
{
	return aot_gseq(&d->b, kind, n, items);
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
	if (d->b.failed)
		return -1;
	if (a->kind == GARG_NODE) {
		const struct gnode *n = &d->b.g->nodes[a->node];
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
	return aot_build_fail(&d->b, "%s: argument is not a tensor", ops_table[d->node.op].name);
}

/* ---- new nodes ---- */

/* op(args...) through the pass's builder (aot_emit) */
#define emit(pass, op, ...) aot_emit(&(pass)->b, op, __VA_ARGS__)

static int item(struct dec *d, int t, int k) { return aot_item(&d->b, t, k); }

/* argument i as a floating point tensor, as the float-only kernels take it */
static struct garg as_float(struct dec *d, int i)
{
	struct meta_tensor t;
	struct garg x = arg(d, i);
	if (arg_type(d, &x, &t) < 0 || dtype_is_float(t.dt))
		return x;
	return aot_gnode(emit(d, OPS_to, 2, x, aot_gdtype(DT_FLOAT32)));
}

/* the count of elements that argument 1 (dim) of a reduction of argument 0
 * reduces, less correction, at least 0: a number when every reduced size
 * is constant, else a 0-d tensor of like's dtype made of the symbols */
static struct garg count(struct dec *d, int like, int correction)
{
	struct meta_tensor x;
	int dims[TENSOR_MAX_DIMS], nd;
	if (arg_type(d, &d->args[0], &x) < 0)
		return aot_gint(1);
	value dim = arg_value(d->b.g, &d->args[1]);
	int rc = ops_dims(ops_table[d->node.op].name, dim, x.ndim, dims, &nd);
	val_decref(dim);
	if (rc < 0) {
		d->b.failed = true;
		return aot_gint(1);
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
			t = emit(d, OPS_full, 3, gseq(d, GARG_TUPLE, 0, NULL), aot_gsize(s), aot_gdtype(d->b.g->nodes[like].dt));
		else
			t = emit(d, OPS_mul, 2, aot_gnode(t), aot_gsize(s));
	}
	if (t < 0 && !d->b.failed)
		return aot_gint(c - correction > 0 ? c - correction : 0);
	if (c != 1)
		t = emit(d, OPS_mul, 2, aot_gnode(t), aot_gint(c));
	if (correction) {
		t = emit(d, OPS_sub, 2, aot_gnode(t), aot_gint(correction));
		t = emit(d, OPS_maximum, 2, aot_gnode(t), aot_gint(0));
	}
	return aot_gnode(t);
}

static struct garg gsizes(struct dec *d, int n, const struct sym_size *s) { return aot_gsizes(&d->b, n, s); }
static struct garg gdims(struct dec *d, int n, const int *dims) { return aot_gdims(&d->b, n, dims); }

/* ---- the builders, one per kind of row of decomp.def ---- */

static int dec_eye(struct dec *d)
{
	int64_t n = d->node.shape[0].value, m = d->node.shape[1].value;
	int rows = emit(d, OPS_arange, 1, aot_gint(n));
	struct sym_size col[2] = {{n, -1}, {1, -1}};
	rows = emit(d, OPS_reshape, 2, aot_gnode(rows), gsizes(d, 2, col));
	int cols = emit(d, OPS_arange, 1, aot_gint(m));
	int eq = emit(d, OPS_eq, 2, aot_gnode(rows), aot_gnode(cols));
	return emit(d, OPS_to, 2, aot_gnode(eq), aot_gdtype(d->node.dt));
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
	return emit(d, like_creator[d->node.op], 3, gsizes(d, x.ndim, x.shape), aot_gdtype(d->node.dt), arg(d, 2));
}

static int dec_rsqrt(struct dec *d)
{
	int s = emit(d, OPS_sqrt, 1, as_float(d, 0));
	return emit(d, OPS_div, 2, aot_gint(1), aot_gnode(s));
}

static int dec_reciprocal(struct dec *d) { return emit(d, OPS_div, 2, aot_gint(1), as_float(d, 0)); }

static int dec_mean(struct dec *d)
{
	int s = emit(d, OPS_sum, 4, arg(d, 0), arg(d, 1), arg(d, 2), arg(d, 3));
	struct garg n = count(d, s, 0);
	return emit(d, OPS_div, 2, aot_gnode(s), n);
}

/* the two-pass form of the kernel: the mean first, then the deviations */
static int dec_var(struct dec *d)
{
	value v[5];
	int correction = 0;
	for (int i = 0; i < 5; i++)
		v[i] = arg_value(d->b.g, &d->args[i]);
	if (ops_var_correction(OPS_var, v, &correction) < 0)
		d->b.failed = true;
	for (int i = 0; i < 5; i++)
		val_decref(v[i]);
	int m = emit(d, OPS_mean, 3, arg(d, 0), arg(d, 1), aot_gbool(true));
	int dev = emit(d, OPS_sub, 2, arg(d, 0), aot_gnode(m));
	int sq = emit(d, OPS_mul, 2, aot_gnode(dev), aot_gnode(dev));
	int s = emit(d, OPS_sum, 3, aot_gnode(sq), arg(d, 1), arg(d, 3));
	struct garg n = count(d, s, correction);
	return emit(d, OPS_div, 2, aot_gnode(s), n);
}

/* softmax and log_softmax, shifted by the maximum as the kernel is */
static int dec_softmax(struct dec *d)
{
	struct garg x = as_float(d, 0);
	int mx = emit(d, OPS_max, 3, gcopy(d, &x), arg(d, 1), aot_gbool(true));
	int m = item(d, mx, 0);
	/* the shift changes no value of the result: no gradient flows through
	 * it (graph autodiff stops there, as at detach's copy), so that the
	 * joint computes eager's out * (g - sum(g * out)) and no
	 * mathematically zero term through max: a -0.0 where out is 0 (a
	 * softmax over -inf) stays -0.0 */
	if (m >= 0)
		d->b.g->nodes[m].requires_grad = false;
	int s = emit(d, OPS_sub, 2, x, aot_gnode(m));
	int e = emit(d, OPS_exp, 1, aot_gnode(s));
	int t = emit(d, OPS_sum, 3, aot_gnode(e), arg(d, 1), aot_gbool(true));
	if (d->node.op == OPS_softmax)
		return emit(d, OPS_div, 2, aot_gnode(e), aot_gnode(t));
	int l = emit(d, OPS_log, 1, aot_gnode(t));
	return emit(d, OPS_sub, 2, aot_gnode(s), aot_gnode(l));
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
		wt = aot_gnode(emit(d, OPS_permute, 2, wt, gdims(d, w.ndim, perm)));
	}
	int y = emit(d, OPS_matmul, 2, arg(d, 0), wt);
	if (is_none(&d->args[2]))
		return y;
	return emit(d, OPS_add, 2, aot_gnode(y), arg(d, 2));
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
	value v0 = arg_value(d->b.g, &d->args[1]), v1 = arg_value(d->b.g, &d->args[2]);
	int rc = ops_dim("transpose", v0, x.ndim, &d0) < 0 || ops_dim("transpose", v1, x.ndim, &d1) < 0 ? -1 : 0;
	val_decref(v0);
	val_decref(v1);
	if (rc < 0) {
		d->b.failed = true;
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
		return aot_build_fail(&d->b, "stack: tensors is not a list");
	}
	struct garg items[ts->n > 0 ? ts->n : 1];
	for (int i = 0; i < ts->n; i++)
		items[i] = aot_gnode(emit(d, OPS_unsqueeze, 2, gcopy(d, &ts->items[i]), arg(d, 1)));
	return emit(d, OPS_cat, 2, gseq(d, ts->kind, d->b.failed ? 0 : ts->n, items), arg(d, 1));
}

static int dec_contiguous(struct dec *d) { return emit(d, OPS_clone, 1, arg(d, 0)); }

static int dec_to(struct dec *d) { return emit(d, OPS_to, 2, arg(d, 0), aot_gdtype(d->node.dt)); }

/* a copy that does not require grad: graph autodiff stops there */
static int dec_detach(struct dec *d)
{
	int r = emit(d, OPS_clone, 1, arg(d, 0));
	if (r >= 0)
		d->b.g->nodes[r].requires_grad = false;
	return r;
}

static int dec_identity(struct dec *d)
{
	if (d->args[0].kind == GARG_NODE)
		return d->args[0].node;
	return aot_build_fail(&d->b, "%s of a constant", ops_table[d->node.op].name);
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

static int decompose_node(struct graph *g, int i)
{
	struct dec d = {.b = {.g = g, .pos = i, .nstack = g->nodes[i].nstack, .stack = g->nodes[i].stack},
			.args = g->nodes[i].args, .node = g->nodes[i]};
	const struct decomp *row = &decomps[d.node.op];
	int r = -1;
	if (!row->build) {
		tj_error_set("no decomposition");
		goto fail;
	}
	if ((r = row->build(&d)) < 0 || d.b.failed)
		goto fail;
	if (!graph_same_type(&g->nodes[r], &d.node)) {
		tj_error_set("the decomposition gives another type");
		goto fail;
	}
	graph_replace_uses(g, d.b.pos, r);
	if (graph_erase(g, d.b.pos) < 0)
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
	return aot_decompose_keeping(g, cc, NULL);
}

/* decomposes the composites from node p to the end (the new nodes too,
 * in order: the next turns look at them) */
static int decompose_from(struct graph *g, int p, bool (*keep)(const struct graph *g, const struct gnode *n),
			  long *budget)
{
	for (int i = p; i < g->nnodes;) {
		const struct gnode *n = &g->nodes[i];
		if (n->kind != GN_OP || ops_table[n->op].stage != OPST_COMP || (keep && keep(g, n))) {
			i++;
			continue;
		}
		if (--*budget < 0) {
			tj_error_set("decomposition of %s does not end", n->name);
			return -1;
		}
		/* the new nodes are at i: the next turns look at them too */
		if (decompose_node(g, i) < 0)
			return -1;
	}
	return 0;
}

/* The list is rebuilt front to back: each node is appended (its args
 * renumbered), then decomposed at the end of the list, where inserting
 * and erasing cost only the few nodes after it, not the rest of the graph
 * (doc/graph.md). The nodes made and their names are those of decomposing
 * in place, in the same order. While a node is decomposed, the graph's one
 * output is that node, so that the edits carry it to what replaces it. */
int aot_decompose_keeping(struct graph *g, struct compile_ctx *cc,
			  bool (*keep)(const struct graph *g, const struct gnode *n))
{
	int phase = cc ? compile_ctx_phase_begin(cc, "decompose") : -1, rc = -1;
	/* a row makes at most a few dozen nodes, composites among them, and
	 * those make primitives only: this bound is never reached */
	long budget = 64 + 64L * g->nnodes;
	int n = g->nnodes, noutputs = g->noutputs, *outputs = g->outputs, track = -1, i = 0;
	bool failed = false;
	struct gnode *rest = util_malloc(sizeof *rest * ((size_t)n + 1));
	int *to = util_malloc(sizeof *to * ((size_t)n + 1));
	if (!rest || !to) {
		tj_error_set("out of memory");
		goto cleanup;
	}
	memcpy(rest, g->nodes, sizeof *rest * (size_t)n);
	g->nnodes = 0;
	g->outputs = &track;
	g->noutputs = 1;
	for (; i < n; i++) {
		for (int a = 0; a < rest[i].nargs; a++)
			graph_remap_arg(&rest[i].args[a], to);
		if ((track = graph_insert(g, g->nnodes, &rest[i])) < 0) {
			tj_error_set("out of memory");
			failed = true;
			break;
		}
		if (decompose_from(g, track, keep, &budget) < 0) {
			failed = true;
			i++;
			break;
		}
		to[i] = track;
	}
	/* after a failure, the nodes not reached go back for graph_free */
	for (int k = i; k < n; k++)
		if (graph_insert(g, g->nnodes, &rest[k]) < 0)
			break;
	g->outputs = outputs;
	g->noutputs = noutputs;
	if (failed)
		goto cleanup;
	for (int k = 0; k < noutputs; k++)
		outputs[k] = to[outputs[k]];
	graph_check(g, "decompose");
	rc = 0;
cleanup:
	free(rest);
	free(to);
	if (cc)
		compile_ctx_phase_end(cc, phase);
	return rc;
}
