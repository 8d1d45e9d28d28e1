/* inductor_emit.c - the value of a graph node at an index, as loop IR
 * (inductor_impl.h): Inductor's inner_fn. The value of node n at index
 * idx (one index expression per dim of n) is built from its arguments'
 * values at the indexes that broadcasting or the view maps idx to, down
 * to loads of buffers. Results are memoized per (node, idx): hash-consing
 * then shares common subexpressions, and a DAG of nodes costs linear time.
 * Also what kind of node each op makes for the scheduler.
 */
#include "inductor_impl.h"

#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "ops.h"

/* each op's kernel family and its unop / binop / redop */
static const struct {
	const char *impl;
	int aux;
} op_impl[OPS_COUNT] = {
#define OPDEF(name, kind, flags, params, impl, aux, save, backward, stage, meta) [OPS_##name] = {#impl, (int)(aux)},
#include "ops.def"
#undef OPDEF
};

static bool impl_is(int op, const char *impl)
{
	return strcmp(op_impl[op].impl, impl) == 0;
}

int ind_op_aux(int op)
{
	return op_impl[op].aux;
}

/* ---- classification ---- */

/* A reduction over leading dims that keeps the contiguous last one (the
 * bias gradient's sum over rows): its loop IR form would run the reduced
 * loop innermost at the row stride. The eager kernel runs it row by row
 * with a vector of accumulators across the last dim, so it is an extern
 * call (its input is stored first). */
static bool keeps_last_dim(const struct graph *g, const struct gnode *n)
{
	const struct gnode *x = &g->nodes[n->args[0].node];
	int last = x->ndim - 1;
	if (last < 1 || (x->shape[last].sym < 0 && x->shape[last].value == 1))
		return false;
	if (n->args[1].kind != GARG_CONST && n->args[1].kind != GARG_LIST && n->args[1].kind != GARG_TUPLE)
		return false;
	if (n->args[1].kind == GARG_CONST && n->args[1].constant.tag == VAL_NONE)
		return false; /* all dims */
	/* the last dim is reduced when it is named (as last or -1) */
	const struct garg *a = &n->args[1];
	int cnt = a->kind == GARG_CONST ? (a->constant.tag == VAL_TUPLE ? (int)val_tuple(a->constant)->len
						: a->constant.tag == VAL_LIST ? (int)val_list(a->constant)->len : 1)
				   : a->n;
	for (int k = 0; k < cnt; k++) {
		value d;
		if (a->kind != GARG_CONST)
			d = a->items[k].kind == GARG_CONST ? a->items[k].constant : val_none();
		else
			d = a->constant.tag == VAL_TUPLE ? val_tuple(a->constant)->items[k]
			    : a->constant.tag == VAL_LIST ? val_list(a->constant)->items[k] : a->constant;
		if (d.tag != VAL_INT)
			return false;
		if (d.i == last || d.i == -1)
			return false;
	}
	return true;
}

int ind_reduced_dims(const struct graph *g, const struct gnode *n, bool *red)
{
	const struct gnode *x = &g->nodes[n->args[0].node];
	int64_t dims[TENSOR_MAX_DIMS];
	memset(red, 0, TENSOR_MAX_DIMS * sizeof *red);
	int nd = n->nargs > 1 ? ind_garg_ints(NULL, n, &n->args[1], dims) : 0;
	if (nd < 0)
		return -1;
	if (nd == 0) /* None: all of them */
		for (int d = 0; d < x->ndim; d++)
			dims[nd++] = d;
	for (int j = 0; j < nd; j++) {
		int64_t d = dims[j] < 0 ? dims[j] + x->ndim : dims[j];
		if (d < 0 || d >= x->ndim) {
			tj_error_set("inductor: cannot lower %s: dim %lld out of range", n->name, (long long)dims[j]);
			return -1;
		}
		red[d] = true;
	}
	return nd;
}

/* A reduction over dims of size 1 only (sum(x, 1, keepdim=True) of an
 * n x 1 tensor): one element a result, so the input's value (converted:
 * a sum of bools is int64), and 0 for argmax / argmin. It is pointwise:
 * its output's index, the reduced dims at 0, is the input's. A float sum
 * is the value plus 0.0, as the eager kernel's accumulator starts at 0:
 * a sum of -0.0 is 0.0. */
static bool unit_reduction(const struct graph *g, const struct gnode *n)
{
	if (n->kind == GN_GETITEM) /* an item of max / min with a dim */
		n = &g->nodes[n->args[0].node];
	if (n->kind != GN_OP || n->args[0].kind != GARG_NODE)
		return false;
	if (n->op != OPS_sum && n->op != OPS_prod && n->op != OPS_max && n->op != OPS_min && n->op != OPS_argmax &&
	    n->op != OPS_argmin)
		return false;
	const struct gnode *x = &g->nodes[n->args[0].node];
	bool red[TENSOR_MAX_DIMS];
	if (x->ndim == 0)
		return false;
	if (ind_reduced_dims(g, n, red) < 0) {
		tj_error_clear(); /* not this kind: the classification goes on */
		return false;
	}
	for (int d = 0; d < x->ndim; d++)
		if (red[d] && (x->shape[d].sym >= 0 || x->shape[d].value != 1))
			return false;
	return true;
}

static lref emit_unit_reduction(struct lower *L, const struct gnode *n, const lref *idx)
{
	struct lkernel *k = L->k;
	dtype dt = n->dt;
	int ndim = n->ndim; /* the result's (a tuple node has none) */
	bool index = n->kind == GN_GETITEM && n->index == 1; /* max / min's indices */
	if (n->kind == GN_GETITEM)
		n = &L->g->nodes[n->args[0].node];
	if (index || n->op == OPS_argmax || n->op == OPS_argmin)
		return loop_const_int(k, DT_INT64, 0);
	const struct gnode *x = &L->g->nodes[n->args[0].node];
	bool red[TENSOR_MAX_DIMS];
	ind_reduced_dims(L->g, n, red); /* unit_reduction parsed it */
	bool keep = ndim == x->ndim;
	lref xi[TENSOR_MAX_DIMS];
	for (int d = 0, o = 0; d < x->ndim; d++)
		xi[d] = red[d] ? loop_const_int(k, DT_INT64, 0) : idx[keep ? d : o++];
	lref v = loop_cast(k, dt, ind_emit(L, n->args[0].node, xi));
	if (n->op == OPS_sum && dtype_is_float(dt))
		v = loop_binary(k, BINOP_add, v, loop_const_float(k, dt, 0.0));
	return v;
}

/* max(a, b) and min(a, b) of two tensors: the pointwise maximum and
 * minimum, as the eager op computes them */
static bool elementwise_maxmin(const struct gnode *n)
{
	return n->kind == GN_OP && (n->op == OPS_max || n->op == OPS_min) && n->nargs >= 2 &&
	       n->args[1].kind == GARG_NODE;
}

int ind_classify(const struct graph *g, int i)
{
	const struct gnode *n = &g->nodes[i];
	if (n->kind == GN_INPUT)
		return NC_INPUT;
	if (n->kind == GN_GETITEM || (n->kind == GN_OP && n->nouts > 0)) {
		const struct gnode *t = n->kind == GN_GETITEM ? &g->nodes[n->args[0].node] : n;
		bool maxmin = t->kind == GN_OP && (t->op == OPS_max || t->op == OPS_min) &&
			      t->args[0].kind == GARG_NODE && g->nodes[t->args[0].node].ndim > 0;
		if (maxmin && unit_reduction(g, t))
			return n->kind == GN_GETITEM ? NC_POINTWISE : NC_TUPLE;
		if (maxmin && keeps_last_dim(g, t))
			maxmin = false;
		return !maxmin ? NC_EXTERN : n->kind == GN_GETITEM ? NC_REDUCE : NC_TUPLE;
	}
	if (n->kind != GN_OP || n->nouts > 0 || !n->is_tensor)
		return NC_EXTERN;
	int op = n->op;
	if (elementwise_maxmin(n))
		return NC_POINTWISE;
	if (impl_is(op, "unary") || impl_is(op, "binary") || impl_is(op, "where") || op == OPS_clamp || op == OPS_to ||
	    op == OPS_clone)
		return NC_POINTWISE;
	if (op == OPS_round)
		return n->args[1].kind == GARG_CONST && n->args[1].constant.tag == VAL_INT &&
				       n->args[1].constant.i == 0
			       ? NC_POINTWISE
			       : NC_EXTERN;
	if (op == OPS_zeros || op == OPS_ones)
		return NC_CONST;
	if (op == OPS_full) {
		value f = n->args[1].kind == GARG_CONST ? n->args[1].constant : val_none();
		return f.tag == VAL_INT || f.tag == VAL_FLOAT || f.tag == VAL_BOOL ? NC_CONST : NC_EXTERN;
	}
	if (op == OPS_reshape || op == OPS_permute || op == OPS_expand)
		return NC_VIEW;
	if (op == OPS_getitem) {
		/* constant ints, slices and Nones only; a tensor index is a gather */
		value items[TENSOR_MAX_DIMS * 2];
		int cnt = graph_const_items(&n->args[1], items, TENSOR_MAX_DIMS * 2);
		for (int k = 0; k < cnt; k++)
			if (items[k].tag != VAL_INT && items[k].tag != VAL_SLICE && items[k].tag != VAL_NONE)
				return NC_EXTERN;
		return cnt < 0 ? NC_EXTERN : NC_VIEW;
	}
	if (unit_reduction(g, n))
		return NC_POINTWISE;
	if ((op == OPS_sum || op == OPS_prod || op == OPS_max || op == OPS_min || op == OPS_argmax ||
	     op == OPS_argmin) && n->args[0].kind == GARG_NODE && g->nodes[n->args[0].node].ndim > 0)
		return keeps_last_dim(g, n) ? NC_EXTERN : NC_REDUCE;
	return NC_EXTERN;
}

/* ---- sizes and indexes ---- */

lref ind_size_ref(struct lkernel *k, struct sym_size s)
{
	return s.sym >= 0 ? loop_sym(k, s.sym) : loop_const_int(k, DT_INT64, s.value);
}

bool ind_size_is_one(struct sym_size s)
{
	return s.sym < 0 && s.value == 1;
}

bool ind_same_size(struct sym_size a, struct sym_size b)
{
	return a.sym == b.sym && (a.sym >= 0 || a.value == b.value);
}

bool ind_same_shape(int na, const struct sym_size *a, int nb, const struct sym_size *b)
{
	if (na != nb)
		return false;
	for (int d = 0; d < na; d++)
		if (!ind_same_size(a[d], b[d]))
			return false;
	return true;
}

/* the ints of an argument: an int, a tuple or list of ints (a constant,
 * or an arg list of constants); none for None. The count, or -1 when
 * it is something else (then tj_error_set) */
int ind_garg_ints(const struct lower *L, const struct gnode *n, const struct garg *a, int64_t *out)
{
	int cnt = 0;
	if (a->kind == GARG_CONST) {
		value v = a->constant;
		if (v.tag == VAL_NONE)
			return 0;
		if (v.tag == VAL_INT) {
			out[0] = v.i;
			return 1;
		}
		size_t len = v.tag == VAL_TUPLE ? val_tuple(v)->len : v.tag == VAL_LIST ? val_list(v)->len : (size_t)-1;
		const value *items = v.tag == VAL_TUPLE ? val_tuple(v)->items : v.tag == VAL_LIST ? val_list(v)->items : NULL;
		for (size_t k = 0; items && k < len && k < TENSOR_MAX_DIMS && items[k].tag == VAL_INT; k++)
			out[cnt++] = items[k].i;
		if (items && (size_t)cnt == len)
			return cnt;
	} else if (a->kind == GARG_LIST || a->kind == GARG_TUPLE) {
		for (int k = 0; k < a->n && k < TENSOR_MAX_DIMS; k++) {
			const struct garg *it = &a->items[k];
			if (it->kind != GARG_CONST || it->constant.tag != VAL_INT)
				break;
			out[cnt++] = it->constant.i;
		}
		if (cnt == a->n)
			return cnt;
	}
	tj_error_set("inductor: cannot lower %s: an argument that is not a list of ints", n->name);
	(void)L;
	return -1;
}

/* the flat index of idx in a contiguous tensor of this shape */
lref ind_linear_index(struct lkernel *k, int ndim, const struct sym_size *shape, const lref *idx)
{
	lref flat = loop_const_int(k, DT_INT64, 0), stride = loop_const_int(k, DT_INT64, 1);
	for (int d = ndim - 1; d >= 0; d--) {
		if (!ind_size_is_one(shape[d]))
			flat = loop_iadd(k, flat, loop_imul(k, idx[d], stride));
		stride = loop_imul(k, stride, ind_size_ref(k, shape[d]));
	}
	return flat;
}

/* idx of a flat index in a contiguous tensor of this shape */
void ind_split_index(struct lkernel *k, lref flat, int ndim, const struct sym_size *shape, lref *idx)
{
	lref stride = loop_const_int(k, DT_INT64, 1);
	for (int d = ndim - 1; d >= 0; d--) {
		lref size = ind_size_ref(k, shape[d]);
		if (ind_size_is_one(shape[d]))
			idx[d] = loop_const_int(k, DT_INT64, 0);
		else if (d == 0)
			idx[d] = loop_idiv(k, flat, stride);
		else
			idx[d] = loop_imod(k, loop_idiv(k, flat, stride), size);
		stride = loop_imul(k, stride, size);
	}
}

/* ---- emission ---- */


int ind_kernel_buf(struct lower *L, int b)
{
	if (L->kbuf[b] < 0) {
		const struct ind_buf *pb = &L->p->bufs[b];
		lref numel = loop_const_int(L->k, DT_INT64, 1);
		for (int d = 0; d < pb->ndim; d++)
			numel = loop_imul(L->k, numel, ind_size_ref(L->k, pb->shape[d]));
		L->kbuf[b] = loop_add_buf(L->k, pb->dt, false, numel, L->g->nodes[pb->node].name);
	}
	return L->kbuf[b];
}

static lref load_node(struct lower *L, int i, const lref *idx)
{
	const struct gnode *n = &L->g->nodes[i];
	int b = L->p->node_buf[i];
	if (b < 0) {
		tj_error_set("inductor: %s is read before it is computed", n->name);
		return -1;
	}
	int kb = ind_kernel_buf(L, b);
	if (kb < 0)
		return -1;
	return loop_load(L->k, kb, ind_linear_index(L->k, n->ndim, n->shape, idx));
}

/* arg a of a pointwise node of shape (ndim, shape) at idx, as dtype dt:
 * a broadcast node, or a number */
static lref emit_arg(struct lower *L, const struct garg *a, int ndim, const struct sym_size *shape, const lref *idx,
		     dtype dt)
{
	struct lkernel *k = L->k;
	if (a->kind == GARG_CONST) {
		value v = a->constant;
		if (v.tag == VAL_BOOL)
			return dtype_is_float(dt) ? loop_const_float(k, dt, v.b) : loop_const_int(k, dt, v.b);
		if (v.tag == VAL_INT)
			return dtype_is_float(dt) ? loop_const_float(k, dt, (double)v.i) : loop_const_int(k, dt, v.i);
		if (v.tag == VAL_FLOAT)
			return dtype_is_float(dt) ? loop_const_float(k, dt, v.f)
						  : loop_cast(k, dt, loop_const_float(k, DT_FLOAT64, v.f));
		tj_error_set("inductor: an argument that is not a number nor a tensor");
		return -1;
	}
	if (a->kind == GARG_SYM) /* a size as a number: mean's divisor */
		return loop_cast(k, dt, loop_sym(k, a->sym));
	if (a->kind != GARG_NODE) {
		tj_error_set("inductor: a list argument of a pointwise op");
		return -1;
	}
	const struct gnode *x = &L->g->nodes[a->node];
	lref xi[TENSOR_MAX_DIMS];
	for (int j = 0; j < x->ndim; j++) {
		int d = ndim - x->ndim + j;
		xi[j] = ind_size_is_one(x->shape[j]) ? loop_const_int(k, DT_INT64, 0) : idx[d];
	}
	(void)shape;
	lref v = ind_emit(L, a->node, xi);
	return v < 0 ? v : loop_cast(k, dt, v);
}

/* the dtype an arg has as an operand of promotion: a fake tensor */
static void fake_arg(const struct lower *L, const struct garg *a, tensor *t)
{
	memset(t, 0, sizeof *t);
	if (a->kind == GARG_NODE) {
		t->dt = L->g->nodes[a->node].dt;
		t->ndim = L->g->nodes[a->node].ndim;
	} else if (a->kind == GARG_SYM) {
		t->dt = DT_INT64;
		t->wrapped_number = true;
	} else {
		value v = a->constant;
		t->dt = v.tag == VAL_BOOL ? DT_BOOL : v.tag == VAL_INT ? DT_INT64 : DT_FLOAT64;
		t->wrapped_number = true;
	}
}

static lref emit_binary(struct lower *L, const struct gnode *n, const lref *idx, binop op)
{
	tensor ta, tb;
	fake_arg(L, &n->args[0], &ta);
	fake_arg(L, &n->args[1], &tb);
	dtype cdt = n->dt;
	if (op >= BINOP_eq && op <= BINOP_ge)
		cdt = tensor_result_type(&ta, &tb);
	else if (op == BINOP_logical_and || op == BINOP_logical_or)
		cdt = DT_BOOL;
	lref a = emit_arg(L, &n->args[0], n->ndim, n->shape, idx, cdt);
	lref b = emit_arg(L, &n->args[1], n->ndim, n->shape, idx, cdt);
	return loop_binary(L->k, op, a, b);
}

static lref emit_pointwise(struct lower *L, const struct gnode *n, const lref *idx)
{
	struct lkernel *k = L->k;
	if (elementwise_maxmin(n))
		return emit_binary(L, n, idx, n->op == OPS_max ? BINOP_maximum : BINOP_minimum);
	if (unit_reduction(L->g, n))
		return emit_unit_reduction(L, n, idx);
	if (impl_is(n->op, "binary"))
		return emit_binary(L, n, idx, (binop)op_impl[n->op].aux);
	if (impl_is(n->op, "where")) {
		lref c = emit_arg(L, &n->args[0], n->ndim, n->shape, idx, DT_BOOL);
		lref a = emit_arg(L, &n->args[1], n->ndim, n->shape, idx, n->dt);
		lref b = emit_arg(L, &n->args[2], n->ndim, n->shape, idx, n->dt);
		return loop_where(k, c, a, b);
	}
	if (n->op == OPS_to || n->op == OPS_clone)
		return emit_arg(L, &n->args[0], n->ndim, n->shape, idx, n->dt);
	if (n->op == OPS_clamp) { /* as tensor_clamp: maximum, then minimum, in the promoted dtype */
		lref x = emit_arg(L, &n->args[0], n->ndim, n->shape, idx, n->dt);
		for (int b = 1; b <= 2; b++)
			if (!(n->args[b].kind == GARG_CONST && n->args[b].constant.tag == VAL_NONE))
				x = loop_binary(k, b == 1 ? BINOP_maximum : BINOP_minimum, x,
						emit_arg(L, &n->args[b], n->ndim, n->shape, idx, n->dt));
		return x;
	}
	/* unary (and round with 0 decimals): the input converted to the
	 * result's dtype first (float-only ops of ints compute in float32);
	 * logical_not reads its input as it is */
	unop op = n->op == OPS_round ? UNOP_round : (unop)op_impl[n->op].aux;
	dtype in = op == UNOP_logical_not ? L->g->nodes[n->args[0].node].dt : n->dt;
	lref x = emit_arg(L, &n->args[0], n->ndim, n->shape, idx, in);
	if (x < 0)
		return x;
	if (in == DT_BOOL && op != UNOP_logical_not)
		return x; /* abs, relu, floor ... of bool: the identity */
	if (op == UNOP_relu && L->bug->stage == INJECT_INDUCTOR && L->bug->kind == INJECT_ACCURACY) {
		/* the planted bug: a wrong constant, relu(x) = x > 0 ? x : 1 */
		lref zero = loop_cast(k, in, loop_const_int(k, DT_INT64, 0));
		lref one = loop_cast(k, in, loop_const_int(k, DT_INT64, 1));
		return loop_where(k, loop_binary(k, BINOP_gt, x, zero), x, one);
	}
	return loop_unary(k, op, x);
}

static lref emit_const(struct lower *L, const struct gnode *n)
{
	double v = n->op == OPS_ones ? 1 : 0;
	if (n->op == OPS_full) {
		value f = n->args[1].kind == GARG_CONST ? n->args[1].constant : val_none();
		if (f.tag == VAL_INT)
			v = (double)f.i;
		else if (f.tag == VAL_FLOAT)
			v = f.f;
		else if (f.tag == VAL_BOOL)
			v = f.b;
		else {
			tj_error_set("inductor: full() with a fill value that is not a number");
			return -1;
		}
	}
	return dtype_is_float(n->dt) ? loop_const_float(L->k, n->dt, v) : loop_const_int(L->k, n->dt, (int64_t)v);
}

/* getitem with ints, slices and Nones: each output dim is an input dim
 * at start + i * step, or a new dim of size 1 */
static lref emit_getitem(struct lower *L, const struct gnode *n, const lref *idx)
{
	struct lkernel *k = L->k;
	const struct gnode *x = &L->g->nodes[n->args[0].node];
	value items[TENSOR_MAX_DIMS * 2];
	int cnt = graph_const_items(&n->args[1], items, TENSOR_MAX_DIMS * 2);
	lref xi[TENSOR_MAX_DIMS];
	int din = 0, dout = 0;
	for (int j = 0; j < cnt; j++) {
		value it = items[j];
		if (it.tag == VAL_NONE) {
			dout++;
			continue;
		}
		if (din >= x->ndim)
			goto unsupported;
		struct sym_size sz = x->shape[din];
		if (it.tag == VAL_INT) {
			int64_t i = it.i;
			if (i < 0 && sz.sym >= 0) /* x[-1] of a symbolic size: s0 - 1 */
				xi[din] = loop_iadd(k, ind_size_ref(k, sz), loop_const_int(k, DT_INT64, i));
			else
				xi[din] = loop_const_int(k, DT_INT64, i < 0 ? i + sz.value : i);
			din++;
			continue;
		}
		int64_t start, stop, step, count;
		if (slice_indices(val_slice(it), sz.value, &start, &stop, &step, &count) < 0)
			return -1;
		/* with a symbolic size only a start that does not depend on it */
		const struct slice *sl = val_slice(it);
		if (sz.sym >= 0 && !(step > 0 && (sl->start.tag == VAL_NONE || (sl->start.tag == VAL_INT && sl->start.i >= 0))))
			goto unsupported;
		xi[din++] = loop_iadd(k, loop_imul(k, idx[dout++], loop_const_int(k, DT_INT64, step)),
				      loop_const_int(k, DT_INT64, start));
	}
	for (; din < x->ndim; din++)
		xi[din] = idx[dout++];
	return ind_emit(L, n->args[0].node, xi);
unsupported:
	tj_error_set("inductor: cannot lower this getitem of %s", n->name);
	return -1;
}

static lref emit_view(struct lower *L, const struct gnode *n, const lref *idx)
{
	struct lkernel *k = L->k;
	int xn = n->args[0].node;
	const struct gnode *x = &L->g->nodes[xn];
	lref xi[TENSOR_MAX_DIMS];
	switch (n->op) {
	case OPS_reshape:
		ind_split_index(k, ind_linear_index(k, n->ndim, n->shape, idx), x->ndim, x->shape, xi);
		return ind_emit(L, xn, xi);
	case OPS_permute: {
		/* out dim j is input dim perm[j] */
		int64_t perm[TENSOR_MAX_DIMS];
		int np = ind_garg_ints(L, n, &n->args[1], perm);
		if (np != n->ndim || np != x->ndim)
			return -1;
		for (int j = 0; j < np; j++) {
			int64_t p = perm[j] < 0 ? perm[j] + x->ndim : perm[j];
			if (p < 0 || p >= x->ndim)
				goto unsupported;
			xi[p] = idx[j];
		}
		return ind_emit(L, xn, xi);
	}
	case OPS_expand:
		for (int j = 0; j < x->ndim; j++) {
			int d = n->ndim - x->ndim + j;
			xi[j] = ind_size_is_one(x->shape[j]) ? loop_const_int(k, DT_INT64, 0) : idx[d];
		}
		return ind_emit(L, xn, xi);
	case OPS_getitem:
		return emit_getitem(L, n, idx);
	default:
		break;
	}
unsupported:
	tj_error_set("inductor: cannot lower %s", n->name);
	return -1;
}

/* the index of a reduction member's result while its group computes it:
 * the outer vars at its kept dims (0 at the reduced dims with keepdim) */
static bool natural_index(struct lower *L, int i, const lref *idx)
{
	const struct gnode *n = &L->g->nodes[i];
	const struct group *G = L->cur;
	int o = 0;
	bool keep = n->ndim == G->ndim;
	for (int d = 0, j = 0; d < G->ndim; d++) {
		if (G->red[d]) {
			if (keep) {
				int64_t z;
				if (!loop_is_const(L->k, idx[j], &z) || z != 0)
					return false;
				j++;
			}
			continue;
		}
		if (j >= n->ndim || idx[j] != L->sc.outer[o])
			return false;
		o++;
		j++;
	}
	return true;
}

static lref emit_node(struct lower *L, int i, const lref *idx)
{
	const struct gnode *n = &L->g->nodes[i];
	if (L->p->node_buf[i] >= 0 && (!L->cur || L->group_of[i] != L->cur_index))
		return load_node(L, i, idx);
	switch (L->cls[i]) {
	case NC_POINTWISE:
		return emit_pointwise(L, n, idx);
	case NC_VIEW:
		return emit_view(L, n, idx);
	case NC_CONST:
		return emit_const(L, n);
	case NC_REDUCE:
		if (L->group_of[i] == L->cur_index && L->reduce_ref[i] >= 0 && natural_index(L, i, idx))
			return L->reduce_ref[i];
		/* another row's result, a later section's, or one of no group
		 * yet: the member does not fit this group */
		L->incompatible = true;
		return -1;
	default:
		return load_node(L, i, idx);
	}
}

int ind_emit_known(struct lower *L, int i, const lref *idx, lref value)
{
	int nd = L->g->nodes[i].ndim;
	struct memo *m = arena_alloc(&L->arena, sizeof *m);
	if (!m) {
		tj_error_set("out of memory");
		return -1;
	}
	m->nidx = nd;
	memcpy(m->idx, idx, nd * sizeof *idx);
	m->value = value;
	m->next = L->memo[i];
	L->memo[i] = m;
	return 0;
}

lref ind_emit(struct lower *L, int i, const lref *idx)
{
	int nd = L->g->nodes[i].ndim;
	for (int d = 0; d < nd; d++)
		if (idx[d] < 0)
			return -1;
	for (struct memo *m = L->memo[i]; m; m = m->next)
		if (m->nidx == nd && memcmp(m->idx, idx, nd * sizeof *idx) == 0)
			return m->value;
	lref v = emit_node(L, i, idx);
	return ind_emit_known(L, i, idx, v) < 0 ? -1 : v;
}

