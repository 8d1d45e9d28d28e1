/* inductor_lower.c - graph -> steps of loop IR kernels and extern calls
 * (inductor_lower.h says which nodes fuse).
 *
 * Two passes. The first walks the nodes in order and forms the groups: a
 * member joins the open group when its value can be emitted in the
 * group's loops (a trial emission into a scratch kernel: a reduction of
 * the group read at another row than the one being computed does not
 * fit). The second builds each group's kernel from scratch in its final
 * shape (reductions' sections first, then one section for the S-shaped
 * stores and one for the others), storing only the members read outside
 * the group.
 *
 * Emission is Inductor's inner_fn: the value of node n at index idx (one
 * index expression per dim of n) is built from its arguments' values at
 * the indexes that broadcasting or the view maps idx to, down to loads of
 * buffers. Results are memoized per (node, idx): hash-consing then shares
 * common subexpressions, and a DAG of nodes costs linear time.
 */
#include "inductor_lower.h"

#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "error.h"
#include "ops.h"
#include "util.h"

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

enum node_class {
	NC_INPUT,     /* a buffer from the start */
	NC_POINTWISE, /* one value per index: inlined, or a member */
	NC_VIEW,      /* index arithmetic over its input: inlined */
	NC_CONST,     /* a constant fill: inlined */
	NC_REDUCE,    /* a member: a REDUCE of its group */
	NC_EXTERN,    /* run by the eager op on stored inputs */
	NC_TUPLE,     /* max / min with a dim: its items are the reductions */
};


struct memo {
	struct memo *next;
	int nidx;
	lref idx[TENSOR_MAX_DIMS];
	lref value;
};

struct group {
	int ndim;                       /* the iteration shape S */
	struct sym_size shape[TENSOR_MAX_DIMS];
	bool red[TENSOR_MAX_DIMS];      /* R: the reduced dims */
	int nred;
	int nmembers;
	int *members;
};

/* the loops that an emission is in: the index of S and, for each dim,
 * the var that runs over it */
struct scope {
	lref idx[TENSOR_MAX_DIMS];      /* S's index in this section */
	lref outer[TENSOR_MAX_DIMS];    /* the outer vars, in S's kept dims order */
	int nouter;
};

struct lower {
	const struct graph *g;
	struct ind_program *p;
	struct graph_users users;
	unsigned char *cls;             /* enum node_class per node */
	bool *member;                   /* a node that a group computes, or an extern */
	int *group_of;                  /* [nnodes]: the member's group, -1 */
	int *owner;                     /* [nnodes]: the one group that reads an inlined node, -1 several, -2 none */
	int ngroups;
	struct group *groups;
	/* the kernel being emitted */
	struct lkernel *k;
	struct group *cur;
	int cur_index;
	int *kbuf;                      /* [p->nbufs]: its kernel buffer, -1 */
	int kbuf_cap;
	lref *reduce_ref;               /* [nnodes]: the REDUCE node of a reduction member */
	struct memo **memo;             /* [nnodes] */
	struct scope sc;
	bool incompatible;              /* set by an emission that does not fit the group */
	const struct inject_bug *bug;   /* TJIT_INJECT_BUG, for the kernels with a relu */
	struct arena arena;             /* memos */
};

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

static int classify(const struct graph *g, int i)
{
	const struct gnode *n = &g->nodes[i];
	if (n->kind == GN_INPUT)
		return NC_INPUT;
	if (n->kind == GN_GETITEM || (n->kind == GN_OP && n->nouts > 0)) {
		const struct gnode *t = n->kind == GN_GETITEM ? &g->nodes[n->args[0].node] : n;
		bool maxmin = t->kind == GN_OP && (t->op == OPS_max || t->op == OPS_min) &&
			      t->args[0].kind == GARG_NODE && g->nodes[t->args[0].node].ndim > 0;
		if (maxmin && keeps_last_dim(g, t))
			maxmin = false;
		return !maxmin ? NC_EXTERN : n->kind == GN_GETITEM ? NC_REDUCE : NC_TUPLE;
	}
	if (n->kind != GN_OP || n->nouts > 0 || !n->is_tensor)
		return NC_EXTERN;
	int op = n->op;
	if (impl_is(op, "unary") || impl_is(op, "binary") || impl_is(op, "where") || op == OPS_to ||
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
		const struct garg *ix = &n->args[1];
		if (ix->kind != GARG_CONST)
			return NC_EXTERN;
		value v = ix->constant;
		int cnt = v.tag == VAL_TUPLE ? (int)val_tuple(v)->len : 1;
		for (int k = 0; k < cnt; k++) {
			value it = v.tag == VAL_TUPLE ? val_tuple(v)->items[k] : v;
			if (it.tag != VAL_INT && it.tag != VAL_SLICE && it.tag != VAL_NONE)
				return NC_EXTERN;
		}
		return NC_VIEW;
	}
	if ((op == OPS_sum || op == OPS_prod || op == OPS_max || op == OPS_min || op == OPS_argmax ||
	     op == OPS_argmin) && n->args[0].kind == GARG_NODE && g->nodes[n->args[0].node].ndim > 0)
		return keeps_last_dim(g, n) ? NC_EXTERN : NC_REDUCE;
	return NC_EXTERN;
}

/* ---- sizes and indexes ---- */

static lref size_ref(struct lkernel *k, struct sym_size s)
{
	return s.sym >= 0 ? loop_sym(k, s.sym) : loop_const_int(k, DT_INT64, s.value);
}

static bool size_is_one(struct sym_size s)
{
	return s.sym < 0 && s.value == 1;
}

static bool same_size(struct sym_size a, struct sym_size b)
{
	return a.sym == b.sym && (a.sym >= 0 || a.value == b.value);
}

static bool same_shape(int na, const struct sym_size *a, int nb, const struct sym_size *b)
{
	if (na != nb)
		return false;
	for (int d = 0; d < na; d++)
		if (!same_size(a[d], b[d]))
			return false;
	return true;
}

/* the ints of an argument: an int, a tuple or list of ints (a constant,
 * or an arg list of constants); none for None. The count, or -1 when
 * it is something else (then tj_error_set) */
static int garg_ints(const struct lower *L, const struct gnode *n, const struct garg *a, int64_t *out)
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
static lref linear_index(struct lkernel *k, int ndim, const struct sym_size *shape, const lref *idx)
{
	lref flat = loop_const_int(k, DT_INT64, 0), stride = loop_const_int(k, DT_INT64, 1);
	for (int d = ndim - 1; d >= 0; d--) {
		if (!size_is_one(shape[d]))
			flat = loop_iadd(k, flat, loop_imul(k, idx[d], stride));
		stride = loop_imul(k, stride, size_ref(k, shape[d]));
	}
	return flat;
}

/* idx of a flat index in a contiguous tensor of this shape */
static void split_index(struct lkernel *k, lref flat, int ndim, const struct sym_size *shape, lref *idx)
{
	lref stride = loop_const_int(k, DT_INT64, 1);
	for (int d = ndim - 1; d >= 0; d--) {
		lref size = size_ref(k, shape[d]);
		if (size_is_one(shape[d]))
			idx[d] = loop_const_int(k, DT_INT64, 0);
		else if (d == 0)
			idx[d] = loop_idiv(k, flat, stride);
		else
			idx[d] = loop_imod(k, loop_idiv(k, flat, stride), size);
		stride = loop_imul(k, stride, size);
	}
}

/* ---- emission ---- */

static lref emit(struct lower *L, int i, const lref *idx);

static int kernel_buf(struct lower *L, int b)
{
	if (L->kbuf[b] < 0) {
		const struct ind_buf *pb = &L->p->bufs[b];
		lref numel = loop_const_int(L->k, DT_INT64, 1);
		for (int d = 0; d < pb->ndim; d++)
			numel = loop_imul(L->k, numel, size_ref(L->k, pb->shape[d]));
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
	int kb = kernel_buf(L, b);
	if (kb < 0)
		return -1;
	return loop_load(L->k, kb, linear_index(L->k, n->ndim, n->shape, idx));
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
		xi[j] = size_is_one(x->shape[j]) ? loop_const_int(k, DT_INT64, 0) : idx[d];
	}
	(void)shape;
	lref v = emit(L, a->node, xi);
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

static lref emit_binary(struct lower *L, const struct gnode *n, const lref *idx)
{
	binop op = (binop)op_impl[n->op].aux;
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
	if (impl_is(n->op, "binary"))
		return emit_binary(L, n, idx);
	if (impl_is(n->op, "where")) {
		lref c = emit_arg(L, &n->args[0], n->ndim, n->shape, idx, DT_BOOL);
		lref a = emit_arg(L, &n->args[1], n->ndim, n->shape, idx, n->dt);
		lref b = emit_arg(L, &n->args[2], n->ndim, n->shape, idx, n->dt);
		return loop_where(k, c, a, b);
	}
	if (n->op == OPS_to || n->op == OPS_clone)
		return emit_arg(L, &n->args[0], n->ndim, n->shape, idx, n->dt);
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
	value v = n->args[1].constant;
	int cnt = v.tag == VAL_TUPLE ? (int)val_tuple(v)->len : 1;
	lref xi[TENSOR_MAX_DIMS];
	int din = 0, dout = 0;
	for (int j = 0; j < cnt; j++) {
		value it = v.tag == VAL_TUPLE ? val_tuple(v)->items[j] : v;
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
				xi[din] = loop_iadd(k, size_ref(k, sz), loop_const_int(k, DT_INT64, i));
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
	return emit(L, n->args[0].node, xi);
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
		split_index(k, linear_index(k, n->ndim, n->shape, idx), x->ndim, x->shape, xi);
		return emit(L, xn, xi);
	case OPS_permute: {
		/* out dim j is input dim perm[j] */
		int64_t perm[TENSOR_MAX_DIMS];
		int np = garg_ints(L, n, &n->args[1], perm);
		if (np != n->ndim || np != x->ndim)
			return -1;
		for (int j = 0; j < np; j++) {
			int64_t p = perm[j] < 0 ? perm[j] + x->ndim : perm[j];
			if (p < 0 || p >= x->ndim)
				goto unsupported;
			xi[p] = idx[j];
		}
		return emit(L, xn, xi);
	}
	case OPS_expand:
		for (int j = 0; j < x->ndim; j++) {
			int d = n->ndim - x->ndim + j;
			xi[j] = size_is_one(x->shape[j]) ? loop_const_int(k, DT_INT64, 0) : idx[d];
		}
		return emit(L, xn, xi);
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

static lref emit(struct lower *L, int i, const lref *idx)
{
	int nd = L->g->nodes[i].ndim;
	for (int d = 0; d < nd; d++)
		if (idx[d] < 0)
			return -1;
	for (struct memo *m = L->memo[i]; m; m = m->next)
		if (m->nidx == nd && memcmp(m->idx, idx, nd * sizeof *idx) == 0)
			return m->value;
	lref v = emit_node(L, i, idx);
	struct memo *m = arena_alloc(&L->arena, sizeof *m);
	if (!m) {
		tj_error_set("out of memory");
		return -1;
	}
	m->nidx = nd;
	memcpy(m->idx, idx, nd * sizeof *idx);
	m->value = v;
	m->next = L->memo[i];
	L->memo[i] = m;
	return v;
}

/* ---- building a group's kernel ---- */

/* the op node whose args a reduction member reads (an item of max / min
 * with a dim: the tuple node) and its redop */
static const struct gnode *reduce_src(const struct lower *L, int i, redop *op)
{
	const struct gnode *n = &L->g->nodes[i];
	if (n->kind != GN_GETITEM) {
		*op = (redop)op_impl[n->op].aux;
		return n;
	}
	const struct gnode *t = &L->g->nodes[n->args[0].node];
	bool is_max = t->op == OPS_max;
	*op = n->index == 0 ? (is_max ? REDOP_max : REDOP_min) : (is_max ? REDOP_argmax : REDOP_argmin);
	return t;
}

/* the dims that reduction node i reduces (of its input) */
static int reduce_dims(struct lower *L, int i, bool *red)
{
	redop rop;
	const struct gnode *n = reduce_src(L, i, &rop);
	const struct gnode *x = &L->g->nodes[n->args[0].node];
	int64_t dims[TENSOR_MAX_DIMS];
	memset(red, 0, TENSOR_MAX_DIMS * sizeof *red);
	int nd = garg_ints(L, n, &n->args[1], dims);
	if (nd < 0)
		return -1;
	if (nd == 0)
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

static int kernel_begin(struct lower *L, int gi)
{
	loop_kernel_free(L->k);
	L->k = loop_kernel_new();
	arena_free(&L->arena);
	memset(L->memo, 0, L->g->nnodes * sizeof *L->memo);
	for (int b = 0; b < L->p->nbufs; b++)
		L->kbuf[b] = -1;
	for (int i = 0; i < L->g->nnodes; i++)
		L->reduce_ref[i] = -1;
	L->cur = &L->groups[gi];
	L->cur_index = gi;
	L->incompatible = false;
	if (!L->k) {
		tj_error_set("out of memory");
		return -1;
	}
	return 0;
}

/* the outer loops: every dim of S (or one flat var over S) for a
 * pointwise group, the kept dims for a reduction group */
static int outer_loops(struct lower *L, bool flat)
{
	struct lkernel *k = L->k;
	const struct group *G = L->cur;
	L->sc.nouter = 0;
	if (flat) {
		lref numel = loop_const_int(k, DT_INT64, 1);
		for (int d = 0; d < G->ndim; d++)
			numel = loop_imul(k, numel, size_ref(k, G->shape[d]));
		int v = loop_add_var(k, numel, -1);
		L->sc.outer[L->sc.nouter++] = loop_var_ref(k, v);
		split_index(k, L->sc.outer[0], G->ndim, G->shape, L->sc.idx);
		return v < 0 ? -1 : 0;
	}
	for (int d = 0; d < G->ndim; d++) {
		if (G->red[d])
			continue;
		int v = loop_add_var(k, size_ref(k, G->shape[d]), -1);
		if (v < 0)
			return -1;
		L->sc.outer[L->sc.nouter++] = L->sc.idx[d] = loop_var_ref(k, v);
	}
	return 0;
}

/* a section with inner loops over R: S's index there */
static int inner_section(struct lower *L)
{
	struct lkernel *k = L->k;
	const struct group *G = L->cur;
	int s = loop_add_section(k);
	if (s < 0)
		return -1;
	for (int d = 0, o = 0; d < G->ndim; d++) {
		if (!G->red[d]) {
			L->sc.idx[d] = L->sc.outer[o++];
			continue;
		}
		int v = loop_add_var(k, size_ref(k, G->shape[d]), s);
		if (v < 0)
			return -1;
		L->sc.idx[d] = loop_var_ref(k, v);
	}
	return s;
}

/* member i's index in the current section: S's for an S-shaped member,
 * the natural index of the reduced shape otherwise */
static void member_index(struct lower *L, int i, lref *idx)
{
	const struct gnode *n = &L->g->nodes[i];
	const struct group *G = L->cur;
	if (same_shape(n->ndim, n->shape, G->ndim, G->shape)) {
		memcpy(idx, L->sc.idx, G->ndim * sizeof *idx);
		return;
	}
	bool keep = n->ndim == G->ndim;
	for (int d = 0, j = 0, o = 0; d < G->ndim; d++) {
		if (G->red[d]) {
			if (keep)
				idx[j++] = loop_const_int(L->k, DT_INT64, 0);
		} else {
			idx[j++] = L->sc.outer[o++];
		}
	}
}

static bool reduced_shape_of(const struct group *G, const struct gnode *n)
{
	int j = 0;
	bool keep = n->ndim == G->ndim;
	for (int d = 0; d < G->ndim; d++) {
		if (G->red[d]) {
			if (keep && !size_is_one(n->shape[j++]))
				return false;
		} else if (j >= n->ndim || !same_size(n->shape[j++], G->shape[d])) {
			return false;
		}
	}
	return j == n->ndim;
}

static lref emit_reduce(struct lower *L, int i, int section)
{
	const struct gnode *n = &L->g->nodes[i];
	redop op;
	const struct gnode *src = reduce_src(L, i, &op);
	const struct gnode *x = &L->g->nodes[src->args[0].node];
	dtype acc = n->dt;
	if (op == REDOP_sum || op == REDOP_prod)
		acc = dtype_is_float(n->dt) ? DT_FLOAT64 : DT_INT64; /* as the eager kernels accumulate */
	dtype in = (op == REDOP_argmax || op == REDOP_argmin) ? x->dt : acc;
	lref v = emit(L, src->args[0].node, L->sc.idx);
	lref r = loop_reduce(L->k, op, op == REDOP_argmax || op == REDOP_argmin ? DT_INT64 : acc, loop_cast(L->k, in, v));
	if (r < 0 || loop_add_root(L->k, section, r) < 0)
		return -1;
	return L->reduce_ref[i] = loop_cast(L->k, n->dt, r);
}

/* stores member i at its index in section s when store, else only
 * checks that it can be emitted there */
static int emit_member(struct lower *L, int i, int s, bool store)
{
	const struct gnode *n = &L->g->nodes[i];
	lref idx[TENSOR_MAX_DIMS];
	member_index(L, i, idx);
	lref v = emit(L, i, idx);
	if (v < 0)
		return -1;
	if (!store)
		return 0;
	int b = kernel_buf(L, L->p->node_buf[i]);
	if (b < 0)
		return -1;
	L->k->bufs[b].written = true;
	return loop_add_root(L->k, s, loop_store(L->k, b, linear_index(L->k, n->ndim, n->shape, idx), v));
}

/* builds group gi's kernel into L->k: a trial (every member emitted, no
 * store) or the final kernel (stores of the members in store[]) */
static int build_group(struct lower *L, int gi, const bool *store, bool flat)
{
	if (kernel_begin(L, gi) < 0 || outer_loops(L, flat) < 0)
		return -1;
	const struct group *G = L->cur;
	if (G->nred == 0) {
		int s = loop_add_section(L->k);
		for (int m = 0; m < G->nmembers; m++)
			if (s < 0 || emit_member(L, G->members[m], s, store && store[G->members[m]]) < 0)
				return -1;
		return 0;
	}
	for (int m = 0; m < G->nmembers; m++) {
		int i = G->members[m];
		if (L->cls[i] == NC_REDUCE) {
			int s = inner_section(L);
			if (s < 0 || emit_reduce(L, i, s) < 0)
				return -1;
		}
	}
	int s = inner_section(L);
	for (int m = 0; m < G->nmembers; m++) {
		int i = G->members[m];
		const struct gnode *n = &L->g->nodes[i];
		if (L->cls[i] != NC_REDUCE && same_shape(n->ndim, n->shape, G->ndim, G->shape) &&
		    (s < 0 || emit_member(L, i, s, store && store[i]) < 0))
			return -1;
	}
	s = loop_add_section(L->k);
	for (int m = 0; m < G->nmembers; m++) {
		int i = G->members[m];
		const struct gnode *n = &L->g->nodes[i];
		if ((L->cls[i] == NC_REDUCE || !same_shape(n->ndim, n->shape, G->ndim, G->shape)) &&
		    (s < 0 || emit_member(L, i, s, store && store[i]) < 0))
			return -1;
	}
	return 0;
}

/* ---- pass 1: the groups ---- */

static int new_group(struct lower *L)
{
	struct group *gs = realloc(L->groups, (L->ngroups + 1) * sizeof *gs);
	if (!gs) {
		tj_error_set("out of memory");
		return -1;
	}
	L->groups = gs;
	memset(&gs[L->ngroups], 0, sizeof *gs);
	return L->ngroups++;
}

/* Reductions a group may hold: each section recomputes the inlined
 * pointwise work it needs from the group's inputs, so a chain of row
 * normalizations in one kernel would grow quadratically in code and work;
 * softmax, log_softmax and var need two. */
#define GROUP_MAX_REDUCTIONS 2

static int group_reductions(const struct lower *L, const struct group *G)
{
	int n = 0;
	for (int m = 0; m < G->nmembers; m++)
		n += L->cls[G->members[m]] == NC_REDUCE;
	return n;
}

/* whether member i fits group gi by shape: sets S and R for a new group */
static bool shape_fits(struct lower *L, int gi, int i)
{
	struct group *G = &L->groups[gi];
	const struct gnode *n = &L->g->nodes[i];
	bool red[TENSOR_MAX_DIMS];
	if (L->cls[i] == NC_REDUCE) {
		redop rop;
		const struct gnode *x = &L->g->nodes[reduce_src(L, i, &rop)->args[0].node];
		int nred = reduce_dims(L, i, red);
		if (nred < 0)
			return false;
		if (G->nmembers == 0 || (G->nred == 0 && same_shape(x->ndim, x->shape, G->ndim, G->shape))) {
			G->ndim = x->ndim;
			memcpy(G->shape, x->shape, sizeof G->shape);
			memcpy(G->red, red, sizeof G->red);
			G->nred = nred;
			return true;
		}
		return same_shape(x->ndim, x->shape, G->ndim, G->shape) && G->nred == nred &&
		       memcmp(G->red, red, sizeof red) == 0 && group_reductions(L, G) < GROUP_MAX_REDUCTIONS;
	}
	if (G->nmembers == 0) {
		G->ndim = n->ndim;
		memcpy(G->shape, n->shape, sizeof G->shape);
		memset(G->red, 0, sizeof G->red);
		G->nred = 0;
		return true;
	}
	return same_shape(n->ndim, n->shape, G->ndim, G->shape) || (G->nred > 0 && reduced_shape_of(G, n));
}

static int add_member(struct lower *L, int gi, int i)
{
	struct group *G = &L->groups[gi];
	int *m = realloc(G->members, (G->nmembers + 1) * sizeof *m);
	if (!m) {
		tj_error_set("out of memory");
		return -1;
	}
	G->members = m;
	G->members[G->nmembers++] = i;
	L->group_of[i] = gi;
	return 0;
}

static void drop_member(struct lower *L, int gi)
{
	struct group *G = &L->groups[gi];
	L->group_of[G->members[--G->nmembers]] = -1;
}

static int add_buf(struct lower *L, int i, enum ind_buf_kind kind)
{
	struct ind_program *p = L->p;
	const struct gnode *n = &L->g->nodes[i];
	struct ind_buf *b = realloc(p->bufs, (p->nbufs + 1) * sizeof *b);
	int *kb = realloc(L->kbuf, (p->nbufs + 1) * sizeof *kb);
	if (kb)
		L->kbuf = kb;
	if (b)
		p->bufs = b;
	if (!b || !kb) {
		tj_error_set("out of memory");
		return -1;
	}
	b = &p->bufs[p->nbufs];
	b->node = i;
	b->kind = kind;
	b->by_kernel = false;
	b->dt = n->dt;
	b->ndim = n->ndim;
	memcpy(b->shape, n->shape, sizeof b->shape);
	p->node_buf[i] = p->nbufs;
	return p->nbufs++;
}

static int close_group(struct lower *L, int gi)
{
	const struct group *G = &L->groups[gi];
	for (int m = 0; m < G->nmembers; m++) {
		int b = add_buf(L, G->members[m], IBUF_TEMP);
		if (b < 0)
			return -1;
		L->p->bufs[b].by_kernel = true;
	}
	return 0;
}

/* puts member i into the open group *gi if it fits there, else into a new one */
static int place_member(struct lower *L, int *gi, int i)
{
	const struct gnode *n = &L->g->nodes[i];
	if (*gi >= 0) {
		struct group saved = L->groups[*gi];
		if (shape_fits(L, *gi, i)) {
			if (add_member(L, *gi, i) < 0)
				return -1;
			if (build_group(L, *gi, NULL, false) == 0) {
				sb_printf(&L->p->log, "fused %s into group %d\n", n->name, *gi);
				return 0;
			}
			drop_member(L, *gi);
			if (!L->incompatible)
				return -1;
			sb_printf(&L->p->log, "group %d closed before %s: %s\n", *gi, n->name,
				  "it reads a reduction of the group at another index");
		} else {
			bool full = L->cls[i] == NC_REDUCE && group_reductions(L, &L->groups[*gi]) >= GROUP_MAX_REDUCTIONS;
			sb_printf(&L->p->log, "group %d closed before %s: %s\n", *gi, n->name,
				  full ? "the group holds its most reductions" : "its shape or reduced dims differ");
		}
		int *members = L->groups[*gi].members;
		int nmembers = L->groups[*gi].nmembers;
		L->groups[*gi] = saved;
		L->groups[*gi].members = members;
		L->groups[*gi].nmembers = nmembers;
		if (close_group(L, *gi) < 0)
			return -1;
	}
	if ((*gi = new_group(L)) < 0 || !shape_fits(L, *gi, i) || add_member(L, *gi, i) < 0)
		return -1;
	if (build_group(L, *gi, NULL, false) < 0) {
		if (L->incompatible)
			tj_error_set("inductor: cannot lower %s", n->name);
		return -1;
	}
	sb_printf(&L->p->log, "group %d starts with %s\n", *gi, n->name);
	return 0;
}

/* ---- pass 2: what each group stores, the kernels ---- */

#define OWNER_NONE (-2)
#define OWNER_MANY (-1)

static int combine_owner(int a, int b)
{
	return a == OWNER_NONE ? b : a == b ? a : OWNER_MANY;
}

/* the one group that an inlined node is emitted in (OWNER_MANY when an
 * extern call, the outputs or two groups read it) */
static void compute_owners(struct lower *L)
{
	const struct graph *g = L->g;
	for (int i = g->nnodes - 1; i >= 0; i--) {
		int o = L->users.noutputs[i] > 0 ? OWNER_MANY : OWNER_NONE;
		for (int j = L->users.first[i]; j < L->users.first[i + 1]; j++) {
			int u = L->users.user[j];
			int ou = L->group_of[u] >= 0 ? L->group_of[u] : L->member[u] ? OWNER_MANY : L->owner[u];
			o = combine_owner(o, ou);
		}
		L->owner[i] = o;
	}
}

static bool needs_store(struct lower *L, int i)
{
	if (L->users.noutputs[i] > 0)
		return true;
	int gi = L->group_of[i];
	for (int j = L->users.first[i]; j < L->users.first[i + 1]; j++) {
		int u = L->users.user[j];
		int ou = L->group_of[u] >= 0 ? L->group_of[u] : L->member[u] ? OWNER_MANY : L->owner[u];
		if (ou != gi)
			return true;
	}
	return false;
}

/* whether the kernel's listing has a floor division or modulo left (a
 * flat loop over a layout that does not flatten) */
static bool has_divmod(const struct lkernel *k)
{
	for (int r = 0; r < k->nnodes; r++) {
		const struct lnode *n = &k->nodes[r];
		if (n->op == LOP_BINARY && n->dt == DT_INT64 && (n->sub == BINOP_floordiv || n->sub == BINOP_mod))
			return true;
	}
	return false;
}

static int add_step(struct ind_program *p, struct ind_step *st)
{
	struct ind_step *s = realloc(p->steps, (p->nsteps + 1) * sizeof *s);
	if (!s) {
		tj_error_set("out of memory");
		return -1;
	}
	p->steps = s;
	p->steps[p->nsteps++] = *st;
	return 0;
}

static int step_nodes(struct lower *L, struct ind_step *st, int gi, int extern_node)
{
	st->nodes = malloc(L->g->nnodes * sizeof *st->nodes);
	if (!st->nodes) {
		tj_error_set("out of memory");
		return -1;
	}
	for (int i = 0; i < L->g->nnodes; i++)
		if (gi >= 0 ? (L->group_of[i] == gi || (!L->member[i] && L->owner[i] == gi && L->cls[i] != NC_INPUT))
			    : i == extern_node)
			st->nodes[st->nnodes++] = i;
	return 0;
}

static bool computes_relu(const struct lkernel *k)
{
	for (int r = 0; r < k->nnodes; r++)
		if (k->nodes[r].op == LOP_UNARY && k->nodes[r].sub == UNOP_relu)
			return true;
	return false;
}

/* TJIT_INJECT_BUG=inductor:compile_error and runtime_error, in a kernel
 * that computes a relu: a compile error, or a store 2^40 elements past its
 * buffer (the generated code faults, as a real miscompile would) */
static int plant_bug(struct lower *L)
{
	const struct inject_bug *bug = L->bug;
	if (bug->stage != INJECT_INDUCTOR || bug->kind == INJECT_ACCURACY || !computes_relu(L->k))
		return 0;
	if (bug->kind == INJECT_COMPILE_ERROR) {
		tj_error_set("inductor: InductorCompileError: a kernel computes relu (TJIT_INJECT_BUG=inductor:compile_error)");
		return -1;
	}
	struct lkernel *k = L->k;
	for (int s = 0; s < k->nsections; s++)
		for (int i = 0; i < k->sections[s].nroots; i++) {
			lref r = k->sections[s].roots[i];
			if (k->nodes[r].op != LOP_STORE)
				continue;
			int buf = k->nodes[r].var;
			lref value = k->nodes[r].a[1];
			lref far = loop_iadd(k, k->nodes[r].a[0], loop_const_int(k, DT_INT64, (int64_t)1 << 40));
			lref bad = loop_store(k, buf, far, value);
			if (bad < 0)
				return -1;
			k->sections[s].roots[i] = bad;
			return 0;
		}
	return 0;
}

static int final_kernel(struct lower *L, int gi, const bool *store)
{
	const struct group *G = &L->groups[gi];
	bool flat = G->nred == 0 && G->ndim >= 2;
	if (flat && build_group(L, gi, store, true) == 0 && (loop_kernel_finish(L->k), !has_divmod(L->k))) {
		sb_printf(&L->p->log, "group %d: one flat loop\n", gi);
	} else if (build_group(L, gi, store, false) < 0) {
		if (L->incompatible)
			tj_error_set("inductor: group %d does not build", gi);
		return -1;
	}
	if (plant_bug(L) < 0)
		return -1;
	loop_kernel_finish(L->k);
	struct ind_step st = {.kind = ISTEP_KERNEL, .node = -1};
	st.kbufs = malloc((L->k->nbufs + 1) * sizeof *st.kbufs);
	if (!st.kbufs) {
		tj_error_set("out of memory");
		return -1;
	}
	for (int b = 0; b < L->p->nbufs; b++)
		if (L->kbuf[b] >= 0)
			st.kbufs[L->kbuf[b]] = b;
	if (step_nodes(L, &st, gi, -1) < 0) {
		free(st.kbufs);
		return -1;
	}
	st.k = L->k;
	L->k = NULL;
	if (add_step(L->p, &st) < 0) {
		loop_kernel_free(st.k);
		free(st.kbufs);
		free(st.nodes);
		return -1;
	}
	return 0;
}

/* ---- the whole lowering ---- */

/* which nodes are members (computed by a group, or extern calls) */
static void choose_members(struct lower *L)
{
	const struct graph *g = L->g;
	for (int i = 0; i < g->nnodes; i++)
		L->cls[i] = (unsigned char)classify(g, i);
	for (int i = 0; i < g->nnodes; i++) {
		int c = L->cls[i];
		bool m = c == NC_REDUCE || c == NC_EXTERN || L->users.noutputs[i] > 0;
		if (c == NC_POINTWISE && graph_users_count(&L->users, i) >= 2)
			m = true;
		for (int j = L->users.first[i]; j < L->users.first[i + 1] && !m; j++)
			if (L->cls[L->users.user[j]] == NC_EXTERN)
				m = c != NC_INPUT;
		L->member[i] = m && c != NC_INPUT && c != NC_TUPLE;
	}
}

/* pass 1 in graph order; order[] gets the groups and extern nodes in
 * the order their steps run (a group as -1 - its number) */
static int form_groups(struct lower *L, int *order, int *norder)
{
	const struct graph *g = L->g;
	int gi = -1;
	for (int i = 0; i < g->nnodes; i++) {
		if (L->cls[i] == NC_INPUT) {
			if (add_buf(L, i, IBUF_INPUT) < 0)
				return -1;
			continue;
		}
		if (!L->member[i] || L->p->node_buf[i] >= 0 || L->cls[i] == NC_TUPLE)
			continue;
		if (L->cls[i] == NC_EXTERN) {
			if (gi >= 0 && close_group(L, gi) < 0)
				return -1;
			gi = -1;
			sb_printf(&L->p->log, "extern %s: %s runs on the eager kernels\n", g->nodes[i].name,
				  g->nodes[i].kind == GN_OP ? ops_table[g->nodes[i].op].name : "a call");
			if (add_buf(L, i, IBUF_TEMP) < 0)
				return -1;
			/* the items of a tuple result are written by the same call */
			for (int j = L->users.first[i]; j < L->users.first[i + 1]; j++) {
				int u = L->users.user[j];
				if (g->nodes[u].kind == GN_GETITEM && L->p->node_buf[u] < 0 && add_buf(L, u, IBUF_TEMP) < 0)
					return -1;
			}
			order[(*norder)++] = i;
			continue;
		}
		int before = gi;
		if (place_member(L, &gi, i) < 0)
			return -1;
		if (gi != before)
			order[(*norder)++] = -1 - gi;
	}
	return gi >= 0 ? close_group(L, gi) : 0;
}

static int lower_steps(struct lower *L, const int *order, int norder)
{
	const struct graph *g = L->g;
	compute_owners(L);
	bool *store = calloc((size_t)g->nnodes + 1, sizeof *store);
	if (!store) {
		tj_error_set("out of memory");
		return -1;
	}
	for (int i = 0; i < g->nnodes; i++) {
		if (L->group_of[i] < 0)
			continue;
		store[i] = needs_store(L, i);
		if (!store[i]) {
			L->p->bufs[L->p->node_buf[i]].kind = IBUF_UNUSED;
			sb_printf(&L->p->log, "%s stays in registers in group %d\n", g->nodes[i].name, L->group_of[i]);
		}
	}
	int rc = 0;
	for (int s = 0; s < norder && rc == 0; s++) {
		if (order[s] < 0) {
			rc = final_kernel(L, -1 - order[s], store);
			continue;
		}
		struct ind_step st = {.kind = ISTEP_EXTERN, .node = order[s]};
		rc = step_nodes(L, &st, -1, order[s]);
		if (rc == 0 && (rc = add_step(L->p, &st)) < 0)
			free(st.nodes);
	}
	free(store);
	return rc;
}

int ind_lower(const struct graph *g, struct ind_program *p, struct compile_ctx *cc)
{
	static const struct inject_bug no_bug = {INJECT_NONE, INJECT_COMPILE_ERROR};
	struct lower L = {.g = g, .p = p, .bug = cc && cc->bug ? cc->bug : &no_bug};
	int n = g->nnodes, rc = -1, norder = 0;
	int *order = NULL;
	p->g = g;
	p->node_buf = malloc((n + 1) * sizeof *p->node_buf);
	L.cls = calloc(n + 1, 1);
	L.member = calloc(n + 1, sizeof *L.member);
	L.group_of = malloc((n + 1) * sizeof *L.group_of);
	L.owner = malloc((n + 1) * sizeof *L.owner);
	L.reduce_ref = malloc((n + 1) * sizeof *L.reduce_ref);
	L.memo = calloc(n + 1, sizeof *L.memo);
	order = malloc((n + 1) * sizeof *order);
	if (!p->node_buf || !L.cls || !L.member || !L.group_of || !L.owner || !L.reduce_ref || !L.memo || !order ||
	    graph_users_build(g, &L.users) < 0) {
		tj_error_set("out of memory");
		goto cleanup;
	}
	for (int i = 0; i < n; i++)
		p->node_buf[i] = L.group_of[i] = -1;
	int ph = cc ? compile_ctx_phase_begin(cc, "schedule") : -1;
	choose_members(&L);
	int ok = form_groups(&L, order, &norder);
	if (cc)
		compile_ctx_phase_end(cc, ph);
	if (ok < 0)
		goto cleanup;
	ph = cc ? compile_ctx_phase_begin(cc, "lower") : -1;
	ok = lower_steps(&L, order, norder);
	if (cc)
		compile_ctx_phase_end(cc, ph);
	if (ok < 0)
		goto cleanup;
	rc = 0;
cleanup:
	graph_users_release(&L.users);
	loop_kernel_free(L.k);
	arena_free(&L.arena);
	for (int gi = 0; gi < L.ngroups; gi++)
		free(L.groups[gi].members);
	free(L.groups);
	free(L.kbuf);
	free(L.cls);
	free(L.member);
	free(L.group_of);
	free(L.owner);
	free(L.reduce_ref);
	free(L.memo);
	free(order);
	return rc;
}

void ind_program_release(struct ind_program *p)
{
	for (int s = 0; s < p->nsteps; s++) {
		loop_kernel_free(p->steps[s].k);
		free(p->steps[s].kbufs);
		free(p->steps[s].nodes);
	}
	free(p->steps);
	free(p->bufs);
	free(p->node_buf);
	sb_release(&p->log);
	memset(p, 0, sizeof *p);
}

char *ind_program_format(const struct ind_program *p)
{
	struct strbuf sb = {0};
	for (int s = 0; s < p->nsteps; s++) {
		const struct ind_step *st = &p->steps[s];
		sb_printf(&sb, "step %d:", s);
		for (int j = 0; j < st->nnodes; j++)
			sb_printf(&sb, " %s", p->g->nodes[st->nodes[j]].name);
		sb_putc(&sb, '\n');
		if (st->kind == ISTEP_EXTERN) {
			sb_printf(&sb, "  extern %s\n", p->g->nodes[st->node].name);
			continue;
		}
		char *text = loop_kernel_format(st->k);
		if (!text) {
			sb_release(&sb);
			return NULL;
		}
		sb_puts(&sb, text);
		free(text);
	}
	return sb_detach(&sb);
}
