/* aot_build.c - new nodes for the graph passes of stage 2 (aot_build.h). */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aot_build.h"
#include "ops.h"
#include "ops_meta.h"

/* drops the constants' references of an arg that no node took */
static void aot_garg_drop(struct garg *a)
{
	if (a->kind == GARG_CONST)
		val_decref(a->constant);
	else if (a->kind == GARG_LIST || a->kind == GARG_TUPLE)
		for (int i = 0; i < a->n; i++)
			aot_garg_drop(&a->items[i]);
}

/* sets "out of memory" (once) and fails the builder: -1 */
static int aot_build_oom(struct aot_build *b)
{
	if (!b->failed)
		tj_error_set("out of memory");
	b->failed = true;
	return -1;
}

int aot_build_fail(struct aot_build *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *msg = NULL;
	int n = vasprintf(&msg, fmt, ap);
	va_end(ap);
	tj_error_set("%s", n < 0 ? "out of memory" : msg);
	free(msg);
	b->failed = true;
	return -1;
}

struct garg aot_gseq(struct aot_build *b, enum garg_kind kind, int n, const struct garg *items)
{
	struct garg a = {.kind = kind, .n = n};
	if (n > 0 && !(a.items = graph_alloc(b->g, sizeof *a.items * (size_t)n))) {
		for (int i = 0; i < n; i++)
			aot_garg_drop((struct garg *)&items[i]);
		aot_build_oom(b);
		return aot_gconst(val_none());
	}
	if (n > 0)
		memcpy(a.items, items, sizeof *a.items * (size_t)n);
	return a;
}

struct garg aot_gsizes(struct aot_build *b, int n, const struct sym_size *s)
{
	struct garg items[TENSOR_MAX_DIMS];
	for (int i = 0; i < n; i++)
		items[i] = aot_gsize(s[i]);
	return aot_gseq(b, GARG_TUPLE, n, items);
}

struct garg aot_gdims(struct aot_build *b, int n, const int *dims)
{
	struct garg items[TENSOR_MAX_DIMS];
	for (int i = 0; i < n; i++)
		items[i] = aot_gint(dims[i]);
	return aot_gseq(b, GARG_TUPLE, n, items);
}

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

/* puts n at b->pos with the builder's stack: its index */
static int insert(struct aot_build *b, struct gnode *n)
{
	n->nstack = b->nstack;
	n->stack = b->stack;
	if (graph_insert(b->g, b->pos, n) < 0) {
		for (int i = 0; i < n->nargs; i++)
			aot_garg_drop(&n->args[i]);
		return aot_build_oom(b);
	}
	return b->pos++;
}

static bool same_size(struct sym_size x, struct sym_size y)
{
	return x.sym == y.sym && (x.sym >= 0 || x.value == y.value);
}

/* The result of a pointwise op (differentiable, a comparison or where)
 * whose tensors all have one shape and whose other args are numbers: the
 * shape, and the dtype of the promotion (the largest tensor dtype, or the
 * default of a number of a higher category: float32 for a float, int64
 * for an int), bool for a comparison, where's condition (a bool) aside.
 * When that is a floating point type or a bool of a comparison it is what
 * the op's shape rule says, without the rule's allocations: most nodes a
 * pass makes are such. false: ask the rule. */
static bool plain_pointwise(const struct graph *g, const struct gnode *n, struct meta_out *out)
{
	unsigned f = ops_table[n->op].flags;
	bool where = n->op == OPS_where;
	if (!(f & OPF_POINTWISE) || !(f & (OPF_DIFF | OPF_COMPARE)) || (f & (OPF_RANDOM | OPF_CREATE | OPF_AUTOGRAD)))
		return false;
	const struct gnode *like = NULL;
	int tdt = -1, ncat = -1;
	for (int i = 0; i < n->nargs; i++) {
		const struct garg *a = &n->args[i];
		if (a->kind == GARG_CONST && (a->constant.tag == VAL_INT || a->constant.tag == VAL_FLOAT)) {
			int cat = a->constant.tag == VAL_INT ? 1 : 2;
			ncat = cat > ncat ? cat : ncat;
			if (where && i == 0)
				return false;
			continue;
		}
		if (a->kind != GARG_NODE)
			return false;
		const struct gnode *x = &g->nodes[a->node];
		if (x->kind == GN_CALL || !x->is_tensor || x->nouts)
			return false;
		if (!like)
			like = x;
		if (x->ndim != like->ndim)
			return false;
		for (int d = 0; d < x->ndim; d++)
			if (!same_size(x->shape[d], like->shape[d]))
				return false;
		if (where && i == 0) {
			if (x->dt != DT_BOOL)
				return false;
			continue;
		}
		tdt = (int)x->dt > tdt ? (int)x->dt : tdt;
	}
	if (!like || tdt < 0)
		return false;
	dtype dt = (dtype)tdt;
	if (ncat > dtype_category(dt))
		dt = ncat == 2 ? DT_FLOAT32 : DT_INT64;
	if (f & OPF_COMPARE)
		dt = DT_BOOL;
	else if (!dtype_is_float(dt))
		return false;
	out->n = 1;
	out->t[0].dt = dt;
	out->t[0].ndim = like->ndim;
	memcpy(out->t[0].shape, like->shape, sizeof out->t[0].shape);
	return true;
}

static int aot_emitv(struct aot_build *b, int op, int nargs, va_list ap)
{
	const struct ops_sig *sig = ops_signature(op);
	struct gnode n;
	memset(&n, 0, sizeof n);
	n.kind = GN_OP;
	n.op = op;
	n.nargs = sig->n;
	n.args = b->failed ? NULL : graph_alloc(b->g, sizeof *n.args * (size_t)(sig->n > 0 ? sig->n : 1));
	for (int i = 0; i < nargs; i++) {
		struct garg a = va_arg(ap, struct garg);
		if (n.args && i < sig->n)
			n.args[i] = a;
		else
			aot_garg_drop(&a);
	}
	if (b->failed)
		return -1;
	if (!n.args)
		return aot_build_oom(b);
	for (int i = nargs; i < sig->n; i++) {
		val_incref(sig->defaults[i]);
		n.args[i] = aot_gconst(sig->defaults[i]);
	}
	struct meta_out out;
	bool named = false;
	if (nargs > sig->n)
		tj_error_set("%s takes %d arguments", ops_table[op].name, sig->n);
	else if ((plain_pointwise(b->g, &n, &out) || meta_infer_node(b->g, &n, NULL, &out) == 0) &&
		 !(named = (n.name = graph_fresh_name(b->g, ops_table[op].name)) != NULL))
		tj_error_set("out of memory");
	if (!named) {
		for (int i = 0; i < sig->n; i++)
			aot_garg_drop(&n.args[i]);
		b->failed = true;
		return -1;
	}
	if (out.n == 1) {
		set_type(&n, &out.t[0]);
		n.requires_grad = result_requires_grad(b->g, &n, n.dt);
	} else {
		n.nouts = out.n;
	}
	return insert(b, &n);
}

int aot_emit(struct aot_build *b, int op, int nargs, ...)
{
	va_list ap;
	va_start(ap, nargs);
	int r = aot_emitv(b, op, nargs, ap);
	va_end(ap);
	return r;
}

int aot_item(struct aot_build *b, int t, int k)
{
	if (b->failed)
		return -1;
	struct meta_out out;
	if (meta_infer_node(b->g, &b->g->nodes[t], NULL, &out) < 0 || k >= out.n) {
		b->failed = true;
		return -1;
	}
	struct gnode n;
	memset(&n, 0, sizeof n);
	n.kind = GN_GETITEM;
	n.index = k;
	n.nargs = 1;
	if (!(n.args = graph_alloc(b->g, sizeof *n.args)) || !(n.name = graph_fresh_name(b->g, "getitem")))
		return aot_build_oom(b);
	n.args[0] = aot_gnode(t);
	set_type(&n, &out.t[k]);
	n.requires_grad = k == 0 && result_requires_grad(b->g, &b->g->nodes[t], out.t[k].dt);
	return insert(b, &n);
}
