/* ops_meta.c - the shape and dtype rules (ops_meta.h), one per family of
 * ops, named in ops.def's meta column.
 *
 * A rule runs in two halves. The concrete half turns the arguments into
 * values, each tensor a header without data (a "shell" with the sizes'
 * values), and calls the checks the op's implementation calls (ops.h) and
 * the shape function its kernel calls (tensor.h): the same sizes, dtypes
 * and messages by construction. The symbolic half says which symbol each
 * result dimension has, unifying and specializing through the context as
 * the tracer's rules always have (doc/tracer.md "Dynamic shapes"); when it
 * has no form for the arguments, every symbol in them is specialized, so
 * that the result is never wrong for another value of a symbol.
 */
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "ops_meta.h"

#define META_MAX_INDEX 16
#define META_POOL 4      /* shells of one call without an allocation (most ops take at most 4 tensors) */

struct shell {
	tensor t;
	struct shell *next;
};

struct meta_call {
	int op, aux;
	const struct meta_arg *args;    /* ops_nparams(op) of them */
	int n;
	value v[16];                    /* the arguments as values (tensors are shells) */
	struct meta_ctx *ctx;
	struct meta_out *out;
	struct shell *shells;           /* allocated ones, beyond the pool */
	struct shell pool[META_POOL];
	int npool;
};

typedef int (*meta_fn)(struct meta_call *c);

#define OPDEF(name, kind, flags, params, impl, aux, save, backward, stage, meta) \
	static int meta_##meta(struct meta_call *c);
#include "ops.def"
#undef OPDEF

static const meta_fn meta_rules[OPS_COUNT] = {
#define OPDEF(name, kind, flags, params, impl, aux, save, backward, stage, meta) meta_##meta,
#include "ops.def"
#undef OPDEF
};

static const char *const meta_names[OPS_COUNT] = {
#define OPDEF(name, kind, flags, params, impl, aux, save, backward, stage, meta) #meta,
#include "ops.def"
#undef OPDEF
};

static const int meta_aux[OPS_COUNT] = {
#define OPDEF(name, kind, flags, params, impl, aux, save, backward, stage, meta) aux,
#include "ops.def"
#undef OPDEF
};

bool meta_has_rule(int op) { return op >= 0 && op < OPS_COUNT && meta_rules[op] != meta_none; }
const char *meta_rule_name(int op) { return meta_names[op]; }

static const char *opname(const struct meta_call *c) { return ops_table[c->op].name; }

/* ---- arguments as values ---- */

/* A tensor header with m's dtype and sizes and no data: the shape
 * functions read nothing else. Its count never drops to zero, so values
 * that hold it (a tuple of cat's tensors) never free it. */
static tensor *shell_new(struct meta_call *c, const struct meta_tensor *m)
{
	struct shell *s;
	if (c->npool < META_POOL) {
		s = &c->pool[c->npool++];
	} else {
		if (!(s = calloc(1, sizeof *s))) {
			tj_error_set("out of memory");
			return NULL;
		}
		s->next = c->shells;
		c->shells = s;
	}
	s->t.hdr.rc = 1u << 30;
	s->t.dt = m->dt;
	s->t.ndim = m->ndim;
	s->t.numel = 1;
	for (int d = 0; d < m->ndim; d++) {
		s->t.shape[d] = m->shape[d].value;
		s->t.numel *= m->shape[d].value;
	}
	s->t.is_leaf = true;
	return &s->t;
}

/* a shell like x with another dtype (what a conversion would give) */
static tensor *shell_like(struct meta_call *c, const tensor *x, dtype dt)
{
	struct meta_tensor m = {.dt = dt, .ndim = x->ndim};
	for (int d = 0; d < x->ndim; d++)
		m.shape[d] = (struct sym_size){x->shape[d], -1};
	return shell_new(c, &m);
}

/* the value of an argument: a new reference, or val_err() */
static value arg_value(struct meta_call *c, const struct meta_arg *a, int depth)
{
	switch (a->kind) {
	case META_CONST:
		val_incref(a->v);
		return a->v;
	case META_TENSOR: {
		tensor *t = shell_new(c, a->t);
		return t ? val_obj(VAL_TENSOR, t) : val_err();
	}
	case META_SYMINT:
		return val_int(a->s.value);
	case META_LIST:
	case META_TUPLE: {
		if (depth > 8) {
			tj_error_set("%s(): arguments nested too deeply", opname(c));
			return val_err();
		}
		value r = a->kind == META_LIST ? list_new((size_t)a->n) : tuple_new((size_t)a->n);
		for (int i = 0; i < a->n; i++) {
			value it = arg_value(c, &a->items[i], depth + 1);
			if (val_is_err(it)) {
				val_decref(r);
				return it;
			}
			if (a->kind == META_LIST)
				list_append(val_list(r), it);
			else
				val_tuple(r)->items[i] = it;
		}
		return r;
	}
	}
	return val_err();
}

/* ---- symbols ---- */

static int live(struct meta_call *c, int s)
{
	if (s < 0)
		return -1;
	return c->ctx ? c->ctx->find(c->ctx, s) : s;
}

static void spec(struct meta_call *c, int s)
{
	if (s >= 0 && c->ctx)
		c->ctx->specialize(c->ctx, s);
}

static int unify(struct meta_call *c, int a, int b)
{
	if (c->ctx)
		return c->ctx->unify(c->ctx, a, b);
	return a < b ? a : b;
}

/* the live symbol of dimension d of t, or -1 (a constant) */
static int tsym(struct meta_call *c, const struct meta_tensor *t, int d)
{
	if (!t || d < 0 || d >= t->ndim)
		return -1;
	return live(c, t->shape[d].sym);
}

/* every symbol of an argument is used as its value */
static void spec_arg(struct meta_call *c, const struct meta_arg *a, bool symints_only)
{
	if (a->kind == META_SYMINT) {
		spec(c, a->s.sym);
	} else if (a->kind == META_TENSOR && !symints_only) {
		for (int d = 0; d < a->t->ndim; d++)
			spec(c, a->t->shape[d].sym);
	} else if (a->kind == META_LIST || a->kind == META_TUPLE) {
		for (int i = 0; i < a->n; i++)
			spec_arg(c, &a->items[i], symints_only);
	}
}

/* The end of a rule: syms (the result's symbol per dimension, every
 * result the same) when ok, else no symbolic form: everything specialized. */
static int finish(struct meta_call *c, bool ok, const int *syms)
{
	if (!ok) {
		for (int i = 0; i < c->n; i++)
			spec_arg(c, &c->args[i], false);
		return 0;
	}
	for (int k = 0; k < c->out->n; k++)
		for (int d = 0; d < c->out->t[k].ndim; d++)
			c->out->t[k].shape[d].sym = syms[d];
	return 0;
}

/* dimensions a[da] and b[db] must be equal: one symbol, or constants */
static void sym_eq(struct meta_call *c, const struct meta_tensor *a, int da, const struct meta_tensor *b, int db)
{
	int x = tsym(c, a, da), y = tsym(c, b, db);
	if (x >= 0 && y >= 0) {
		unify(c, x, y);
		return;
	}
	spec(c, x);
	spec(c, y);
}

/* a run of dimensions of a tensor: t's dims [off, off + n) */
struct dimrun {
	const struct meta_tensor *t;
	int off, n;
};

/* broadcasting: the nout result dimensions of the runs, aligned right; a
 * symbol met by a constant other than 1 is specialized */
static void bcast(struct meta_call *c, const struct dimrun *rs, int nr, int nout, int *out)
{
	for (int d = 0; d < nout; d++) {
		int s = -1;
		bool konst = false;
		for (int i = 0; i < nr; i++) {
			int k = d - (nout - rs[i].n);
			if (k < 0 || !rs[i].t)
				continue;
			int dim = rs[i].off + k;
			int y = tsym(c, rs[i].t, dim);
			if (y < 0) {
				if (rs[i].t->shape[dim].value != 1)
					konst = true;
				continue;
			}
			s = s < 0 ? y : unify(c, s, y);
		}
		if (s >= 0 && konst) {
			spec(c, s);
			s = -1;
		}
		out[d] = s;
	}
}

/* ---- reading arguments for the symbolic half ---- */

static const struct meta_tensor *mt(const struct meta_call *c, int i)
{
	return i < c->n && c->args[i].kind == META_TENSOR ? c->args[i].t : NULL;
}

static bool const_int(const struct meta_arg *a, int64_t *out)
{
	if (a->kind != META_CONST)
		return false;
	if (a->v.tag == VAL_INT)
		*out = a->v.i;
	else if (a->v.tag == VAL_BOOL)
		*out = a->v.b;
	else
		return false;
	return true;
}

static bool is_none(const struct meta_arg *a) { return a->kind == META_CONST && a->v.tag == VAL_NONE; }

/* a constant int or a list/tuple of them (at most TENSOR_MAX_DIMS) */
static bool const_ints(const struct meta_arg *a, int64_t *out, int *n)
{
	if (const_int(a, out)) {
		*n = 1;
		return true;
	}
	if (a->kind == META_CONST && (a->v.tag == VAL_TUPLE || a->v.tag == VAL_LIST)) {
		size_t len = a->v.tag == VAL_TUPLE ? val_tuple(a->v)->len : val_list(a->v)->len;
		const value *it = a->v.tag == VAL_TUPLE ? val_tuple(a->v)->items : val_list(a->v)->items;
		if (len > TENSOR_MAX_DIMS)
			return false;
		for (size_t i = 0; i < len; i++) {
			if (it[i].tag != VAL_INT)
				return false;
			out[i] = it[i].i;
		}
		*n = (int)len;
		return true;
	}
	if (a->kind == META_TUPLE || a->kind == META_LIST) {
		if (a->n > TENSOR_MAX_DIMS)
			return false;
		for (int i = 0; i < a->n; i++)
			if (!const_int(&a->items[i], &out[i]))
				return false;
		*n = a->n;
		return true;
	}
	return false;
}

/* A size argument: an int, a symbolic int, or a list/tuple of them: vals
 * their values, syms the live symbol of each (-1: a constant). */
static bool size_items(struct meta_call *c, const struct meta_arg *a, int64_t *vals, int *syms, int *n)
{
	if (a->kind == META_SYMINT) {
		vals[0] = a->s.value;
		syms[0] = live(c, a->s.sym);
		*n = 1;
		return true;
	}
	if (a->kind == META_TUPLE || a->kind == META_LIST) {
		if (a->n > TENSOR_MAX_DIMS)
			return false;
		for (int i = 0; i < a->n; i++) {
			const struct meta_arg *it = &a->items[i];
			if (it->kind == META_SYMINT) {
				vals[i] = it->s.value;
				syms[i] = live(c, it->s.sym);
			} else if (const_int(it, &vals[i])) {
				syms[i] = -1;
			} else {
				return false;
			}
		}
		*n = a->n;
		return true;
	}
	if (!const_ints(a, vals, n))
		return false;
	for (int i = 0; i < *n; i++)
		syms[i] = -1;
	return true;
}

static int norm_dim(int64_t d, int ndim)
{
	if (d < 0)
		d += ndim;
	return d < 0 || d >= ndim ? -1 : (int)d;
}

/* ---- results ---- */

static void put(struct meta_call *c, int k, dtype dt, int ndim, const int64_t *shape)
{
	struct meta_tensor *t = &c->out->t[k];
	t->dt = dt;
	t->ndim = ndim;
	for (int d = 0; d < ndim; d++)
		t->shape[d] = (struct sym_size){shape[d], -1};
	if (c->out->n < k + 1)
		c->out->n = k + 1;
}

/* the result has the symbols of argument i's dimensions */
static int same_syms(struct meta_call *c, int i)
{
	const struct meta_tensor *a = mt(c, i);
	int syms[TENSOR_MAX_DIMS];
	int ndim = c->out->t[0].ndim;
	if (!a || a->ndim != ndim)
		return finish(c, false, NULL);
	for (int d = 0; d < ndim; d++)
		syms[d] = tsym(c, a, d);
	return finish(c, true, syms);
}

/* pointwise ops: every tensor argument broadcast to the result */
static int pointwise_syms(struct meta_call *c)
{
	struct dimrun rs[16];
	int nr = 0, syms[TENSOR_MAX_DIMS];
	for (int i = 0; i < c->n; i++)
		if (mt(c, i))
			rs[nr++] = (struct dimrun){mt(c, i), 0, mt(c, i)->ndim};
	bcast(c, rs, nr, c->out->t[0].ndim, syms);
	return finish(c, true, syms);
}

/* ---- creation ---- */

static int none_rule(struct meta_call *c)
{
	tj_error_set("%s has no shape rule", opname(c));
	return -1;
}

static int meta_none(struct meta_call *c) { return none_rule(c); }

/* zeros ones full randn rand: the requested sizes, with their symbols */
static int creation_syms(struct meta_call *c)
{
	int64_t sz[TENSOR_MAX_DIMS];
	int ss[TENSOR_MAX_DIMS], ns = 0;
	bool ok = size_items(c, &c->args[0], sz, ss, &ns) && ns == c->out->t[0].ndim;
	return finish(c, ok, ss);
}

static int created(struct meta_call *c, int dt, int ndim, const int64_t *shape, int rg_arg)
{
	bool rg;
	if (tensor_check_shape((dtype)dt, ndim, shape) < 0 || ops_requires_grad_arg(c->op, c->v[rg_arg], dt, &rg) < 0)
		return -1;
	put(c, 0, (dtype)dt, ndim, shape);
	return 0;
}

static int meta_fill(struct meta_call *c)
{
	int ndim, dt;
	int64_t shape[TENSOR_MAX_DIMS];
	if (ops_size_arg(c->op, c->v[0], &ndim, shape) < 0 || ops_dtype_arg(c->op, c->v[1], &dt) < 0 ||
	    created(c, dt < 0 ? DT_FLOAT32 : dt, ndim, shape, 2) < 0)
		return -1;
	return creation_syms(c);
}

static int meta_random(struct meta_call *c)
{
	int ndim, dt;
	int64_t shape[TENSOR_MAX_DIMS];
	if (ops_size_arg(c->op, c->v[0], &ndim, shape) < 0 || ops_dtype_arg(c->op, c->v[1], &dt) < 0)
		return -1;
	if (dt < 0)
		dt = DT_FLOAT32;
	if (ops_check_random_dtype(c->op, dt) < 0 || created(c, dt, ndim, shape, 2) < 0)
		return -1;
	return creation_syms(c);
}

static int meta_full(struct meta_call *c)
{
	int ndim, dt;
	int64_t shape[TENSOR_MAX_DIMS];
	if (ops_size_arg(c->op, c->v[0], &ndim, shape) < 0 || ops_full_dtype(c->op, c->v[1], c->v[2], &dt) < 0 ||
	    created(c, dt, ndim, shape, 3) < 0)
		return -1;
	return creation_syms(c);
}

static int meta_arange(struct meta_call *c)
{
	double num[3];
	int dt;
	int64_t n;
	if (ops_arange_args(c->op, c->v, num, &dt) < 0 || tensor_arange_len(num[0], num[1], num[2], &n) < 0 ||
	    created(c, dt, 1, &n, 4) < 0)
		return -1;
	/* arange(n) and arange(0, n) with a symbolic n: n elements */
	const struct meta_arg *s0 = &c->args[0], *s1 = &c->args[1];
	int64_t v0, step;
	int sym[1] = {-1};
	if (!const_int(&c->args[2], &step) || step != 1)
		return finish(c, false, NULL);
	if (s0->kind == META_SYMINT && live(c, s0->s.sym) >= 0 && is_none(s1))
		sym[0] = live(c, s0->s.sym);
	else if (const_int(s0, &v0) && v0 == 0 && s1->kind == META_SYMINT && live(c, s1->s.sym) >= 0)
		sym[0] = live(c, s1->s.sym);
	else
		return finish(c, false, NULL);
	return finish(c, true, sym);
}

static int meta_eye(struct meta_call *c)
{
	int64_t nm[2];
	int dt;
	if (ops_eye_args(c->op, c->v, &nm[0], &nm[1], &dt) < 0 || created(c, dt, 2, nm, 3) < 0)
		return -1;
	return finish(c, false, NULL);
}

/* The tensors in tensor()'s data are read as numbers, which only their
 * values give: each one-element tensor (a shell) becomes a real zero of
 * its dtype, so that the kernel gives the shape and dtype it gives for any
 * values (the others it refuses before reading). v is a list or tuple
 * that arg_value made: ours to change. */
static int data_value(const struct meta_arg *a, value v)
{
	if (a->kind != META_LIST && a->kind != META_TUPLE)
		return 0;
	value *items = a->kind == META_LIST ? val_list(v)->items : val_tuple(v)->items;
	for (int i = 0; i < a->n; i++) {
		const struct meta_arg *it = &a->items[i];
		if (it->kind == META_TENSOR && val_as_tensor(items[i])->numel == 1) {
			tensor *z = tensor_zeros(it->t->dt, it->t->ndim, val_as_tensor(items[i])->shape);
			if (!z)
				return -1;
			val_decref(items[i]);
			items[i] = val_obj(VAL_TENSOR, z);
		} else if (data_value(it, items[i]) < 0) {
			return -1;
		}
	}
	return 0;
}

/* tensor(data): the tensor that data (numbers, sizes used as their
 * values, one-element tensors) makes is built here to learn its shape
 * and dtype (its elements decide the dtype); a tensor argument is copied.
 * The result is a constant: its symbols, if any, are specialized. */
static int meta_tensor(struct meta_call *c)
{
	const struct meta_arg *d = &c->args[0];
	if (d->kind == META_TENSOR) {
		int dt;
		tensor *x = ops_tensor_arg(c->op, c->v, 0);
		if (ops_dtype_arg(c->op, c->v[1], &dt) < 0 || created(c, dt < 0 ? x->dt : dt, x->ndim, x->shape, 2) < 0)
			return -1;
		return finish(c, false, NULL);
	}
	if (data_value(d, c->v[0]) < 0)
		return -1;
	value r = ops_call(c->op, c->v);
	if (val_is_err(r))
		return -1;
	tensor *t = val_as_tensor(r);
	put(c, 0, t->dt, t->ndim, t->shape);
	val_decref(r);
	return finish(c, false, NULL);
}

static int meta_like(struct meta_call *c)
{
	tensor *x = ops_tensor_arg(c->op, c->v, 0);
	int dt;
	if (!x || ops_dtype_arg(c->op, c->v[1], &dt) < 0)
		return -1;
	if (dt < 0)
		dt = x->dt;
	if (c->aux >= 2 && ops_check_random_dtype(c->op, dt) < 0)
		return -1;
	if (created(c, dt, x->ndim, x->shape, 2) < 0)
		return -1;
	return same_syms(c, 0);
}

/* ---- pointwise ---- */

static int meta_unary(struct meta_call *c)
{
	tensor *x = ops_tensor_arg(c->op, c->v, 0);
	dtype dt;
	if (!x || ops_check_unary(c->op, x) < 0 || tensor_unary_type((unop)c->aux, x, &dt) < 0)
		return -1;
	put(c, 0, dt, x->ndim, x->shape);
	return pointwise_syms(c);
}

static int meta_round(struct meta_call *c)
{
	tensor *x = ops_tensor_arg(c->op, c->v, 0);
	int64_t decimals;
	dtype dt;
	if (!x || ops_round_decimals(c->op, x, c->v[1], &decimals) < 0 || tensor_unary_type(UNOP_round, x, &dt) < 0)
		return -1;
	put(c, 0, dt, x->ndim, x->shape);
	return pointwise_syms(c);
}

static int meta_binary(struct meta_call *c)
{
	tensor *x = ops_tensor_or_number(c->op, c->v, 0), *y = x ? ops_tensor_or_number(c->op, c->v, 1) : NULL;
	int ndim, rc = -1;
	int64_t shape[TENSOR_MAX_DIMS];
	dtype dt;
	if (y && tensor_binary_shape((binop)c->aux, x, y, &dt, &ndim, shape) == 0) {
		put(c, 0, dt, ndim, shape);
		rc = 0;
	}
	if (x)
		tensor_decref(x);
	if (y)
		tensor_decref(y);
	return rc < 0 ? -1 : pointwise_syms(c);
}

static int meta_where(struct meta_call *c)
{
	tensor *cond = ops_tensor_arg(c->op, c->v, 0), *x = NULL, *y = NULL;
	int ndim, rc = -1;
	int64_t shape[TENSOR_MAX_DIMS];
	dtype dt;
	if (cond && (x = ops_tensor_or_number(c->op, c->v, 1)) && (y = ops_tensor_or_number(c->op, c->v, 2)) &&
	    ops_check_where(cond) == 0 && tensor_where_shape(cond, x, y, &dt, &ndim, shape) == 0) {
		put(c, 0, dt, ndim, shape);
		rc = 0;
	}
	if (x)
		tensor_decref(x);
	if (y)
		tensor_decref(y);
	return rc < 0 ? -1 : pointwise_syms(c);
}

/* clamp runs maximum(x, lo) then minimum(.., hi) in the promoted dtype */
static int meta_clamp(struct meta_call *c)
{
	tensor *x = ops_tensor_arg(c->op, c->v, 0), *lo = NULL, *hi = NULL, *r;
	int ndim, rc = -1;
	int64_t shape[TENSOR_MAX_DIMS];
	dtype dt, bdt;
	if (!x || ops_check_clamp(c->v) < 0)
		return -1;
	if (c->v[1].tag != VAL_NONE && !(lo = ops_tensor_or_number(c->op, c->v, 1)))
		goto out;
	if (c->v[2].tag != VAL_NONE && !(hi = ops_tensor_or_number(c->op, c->v, 2)))
		goto out;
	dt = tensor_clamp_type(x, lo, hi);
	if (!(r = shell_like(c, x, dt)))
		goto out;
	if (lo) {
		if (tensor_binary_shape(BINOP_maximum, r, lo, &bdt, &ndim, shape) < 0)
			goto out;
		/* (the kernel converts the result back to dt) */
		r->ndim = ndim;
		memcpy(r->shape, shape, sizeof shape);
	}
	if (!hi) {
		ndim = r->ndim;
		memcpy(shape, r->shape, sizeof shape);
	} else if (tensor_binary_shape(BINOP_minimum, r, hi, &bdt, &ndim, shape) < 0) {
		goto out;
	}
	put(c, 0, dt, ndim, shape);
	rc = 0;
out:
	if (lo)
		tensor_decref(lo);
	if (hi)
		tensor_decref(hi);
	return rc < 0 ? -1 : pointwise_syms(c);
}

static int meta_to(struct meta_call *c)
{
	tensor *x = ops_tensor_arg(c->op, c->v, 0);
	int dt;
	if (!x || ops_to_dtype(c->op, c->v, &dt) < 0)
		return -1;
	put(c, 0, (dtype)dt, x->ndim, x->shape);
	return pointwise_syms(c);
}

/* ---- reductions ---- */

/* the reduced dims of args[1] dropped (kept as constant 1 with keepdim) */
static int reduce_syms(struct meta_call *c, int keep_arg)
{
	const struct meta_tensor *a = mt(c, 0);
	int syms[TENSOR_MAX_DIMS], ndim = c->out->t[0].ndim;
	if (!a || c->n < 2)
		return finish(c, false, NULL);
	int in = a->ndim;
	unsigned red = 0;
	int64_t ds[TENSOR_MAX_DIMS], keep = 0;
	int nd = 0;
	if (is_none(&c->args[1])) {
		red = (1u << in) - 1;
	} else if (const_ints(&c->args[1], ds, &nd)) {
		for (int i = 0; i < nd; i++) {
			int d = norm_dim(ds[i], in);
			if (d < 0)
				return finish(c, false, NULL);
			red |= 1u << d;
		}
	} else {
		return finish(c, false, NULL);
	}
	if (keep_arg < c->n && !const_int(&c->args[keep_arg], &keep))
		return finish(c, false, NULL);
	int o = 0;
	for (int d = 0; d < in; d++) {
		if (red & (1u << d)) {
			if (keep)
				syms[o++] = -1;
		} else {
			syms[o++] = tsym(c, a, d);
		}
	}
	return finish(c, o == ndim, syms);
}

static int bool_param(struct meta_call *c, int pos, bool *out)
{
	return arg_bool(opname(c), ops_param_name(c->op, pos), c->v[pos], out);
}

static int meta_reduce(struct meta_call *c)
{
	tensor *x = ops_tensor_arg(c->op, c->v, 0);
	int dims[TENSOR_MAX_DIMS], n, dt, ndim;
	int64_t shape[TENSOR_MAX_DIMS];
	bool keepdim;
	dtype odt;
	if (!x || ops_dims(opname(c), c->v[1], x->ndim, dims, &n) < 0 || bool_param(c, 2, &keepdim) < 0 ||
	    ops_dtype_arg(c->op, c->v[3], &dt) < 0)
		return -1;
	if (dt >= 0 && (dtype)dt != x->dt && !(x = shell_like(c, x, (dtype)dt)))
		return -1;
	if (tensor_reduce_shape((redop)c->aux, x, dims, n, keepdim, &odt, &ndim, shape) < 0)
		return -1;
	put(c, 0, odt, ndim, shape);
	return reduce_syms(c, 2);
}

/* max(x), max(x, dim) -> (values, indices), max(x, other) -> maximum */
static int meta_maxmin(struct meta_call *c)
{
	tensor *x = ops_tensor_arg(c->op, c->v, 0);
	int ndim, dim;
	int64_t shape[TENSOR_MAX_DIMS];
	bool keepdim;
	dtype dt;
	if (!x)
		return -1;
	if (c->v[1].tag == VAL_TENSOR) {
		if (tensor_binary_shape(c->op == OPS_max ? BINOP_maximum : BINOP_minimum, x, val_as_tensor(c->v[1]), &dt,
					&ndim, shape) < 0)
			return -1;
		put(c, 0, dt, ndim, shape);
		return reduce_syms(c, 2);
	}
	if (bool_param(c, 2, &keepdim) < 0)
		return -1;
	if (c->v[1].tag == VAL_NONE) {
		if (tensor_reduce_shape((redop)c->aux, x, NULL, 0, keepdim, &dt, &ndim, shape) < 0)
			return -1;
		put(c, 0, dt, ndim, shape);
		return reduce_syms(c, 2);
	}
	if (ops_dim(opname(c), c->v[1], x->ndim, &dim) < 0 ||
	    tensor_reduce_indices_shape((redop)c->aux, x, dim, keepdim, &ndim, shape) < 0)
		return -1;
	put(c, 0, x->dt, ndim, shape);
	put(c, 1, DT_INT64, ndim, shape);
	return reduce_syms(c, 2);
}

static int meta_argminmax(struct meta_call *c)
{
	tensor *x = ops_tensor_arg(c->op, c->v, 0);
	int ndim, dim = 0;
	int64_t shape[TENSOR_MAX_DIMS];
	bool keepdim;
	dtype dt;
	if (!x || bool_param(c, 2, &keepdim) < 0)
		return -1;
	if (c->v[1].tag != VAL_NONE && ops_dim(opname(c), c->v[1], x->ndim, &dim) < 0)
		return -1;
	bool all = c->v[1].tag == VAL_NONE || x->ndim == 0;
	if (tensor_reduce_shape((redop)c->aux, x, &dim, all ? 0 : 1, keepdim, &dt, &ndim, shape) < 0)
		return -1;
	put(c, 0, dt, ndim, shape);
	return reduce_syms(c, 2);
}

static int meta_var(struct meta_call *c)
{
	tensor *x = ops_tensor_arg(c->op, c->v, 0);
	int dims[TENSOR_MAX_DIMS], n, correction, ndim;
	int64_t shape[TENSOR_MAX_DIMS];
	bool keepdim;
	dtype dt;
	if (!x || ops_dims(opname(c), c->v[1], x->ndim, dims, &n) < 0 ||
	    ops_var_correction(c->op, c->v, &correction) < 0 || bool_param(c, 3, &keepdim) < 0 ||
	    tensor_reduce_shape(REDOP_var, x, dims, n, keepdim, &dt, &ndim, shape) < 0)
		return -1;
	put(c, 0, dt, ndim, shape);
	return reduce_syms(c, 3);
}

static int meta_softmax(struct meta_call *c)
{
	tensor *x = ops_tensor_arg(c->op, c->v, 0);
	int dim;
	dtype dt;
	if (!x || ops_dim(opname(c), c->v[1], x->ndim, &dim) < 0 || tensor_softmax_type(x, dim, &dt) < 0)
		return -1;
	put(c, 0, dt, x->ndim, x->shape);
	return same_syms(c, 0);
}

/* ---- linear algebra ---- */

static int matmul_syms(struct meta_call *c)
{
	const struct meta_tensor *a = mt(c, 0), *b = mt(c, 1);
	int syms[TENSOR_MAX_DIMS], ndim = c->out->t[0].ndim;
	int na = a->ndim, nb = b->ndim;
	if (na == 1 && nb == 1) {
		sym_eq(c, a, 0, b, 0);
		return finish(c, true, NULL); /* a 0-d result */
	}
	if (na == 1) {
		sym_eq(c, a, 0, b, nb - 2);
		struct dimrun r = {b, 0, nb - 2};
		bcast(c, &r, 1, nb - 2, syms);
		syms[ndim - 1] = tsym(c, b, nb - 1);
		return finish(c, true, syms);
	}
	if (nb == 1) {
		sym_eq(c, a, na - 1, b, 0);
		for (int d = 0; d < ndim; d++)
			syms[d] = tsym(c, a, d);
		return finish(c, true, syms);
	}
	sym_eq(c, a, na - 1, b, nb - 2);
	struct dimrun rs[2] = {{a, 0, na - 2}, {b, 0, nb - 2}};
	bcast(c, rs, 2, ndim - 2, syms);
	syms[ndim - 2] = tsym(c, a, na - 2);
	syms[ndim - 1] = tsym(c, b, nb - 1);
	return finish(c, true, syms);
}

static int meta_matmul(struct meta_call *c)
{
	tensor *x = ops_tensor_arg(c->op, c->v, 0), *y = x ? ops_tensor_arg(c->op, c->v, 1) : NULL;
	int ndim;
	int64_t shape[TENSOR_MAX_DIMS];
	if (!y || tensor_matmul_shape(x, y, &ndim, shape) < 0)
		return -1;
	put(c, 0, x->dt, ndim, shape);
	return matmul_syms(c);
}

static int meta_linear(struct meta_call *c)
{
	tensor *x = ops_tensor_arg(c->op, c->v, 0), *w = x ? ops_tensor_arg(c->op, c->v, 1) : NULL, *b = NULL;
	int ndim;
	int64_t shape[TENSOR_MAX_DIMS];
	dtype dt;
	if (!w || (c->v[2].tag != VAL_NONE && !(b = ops_tensor_arg(c->op, c->v, 2))) ||
	    tensor_linear_shape(x, w, b, &dt, &ndim, shape) < 0)
		return -1;
	put(c, 0, dt, ndim, shape);
	const struct meta_tensor *a = mt(c, 0), *wm = mt(c, 1), *bias = mt(c, 2);
	int syms[TENSOR_MAX_DIMS];
	if (wm->ndim != 2 || ndim != a->ndim)
		return finish(c, false, NULL);
	sym_eq(c, a, a->ndim - 1, wm, 1);
	for (int d = 0; d < a->ndim - 1; d++)
		syms[d] = tsym(c, a, d);
	struct dimrun rs[2] = {{wm, 0, 1}, {bias, bias && bias->ndim ? bias->ndim - 1 : 0, bias && bias->ndim ? 1 : 0}};
	bcast(c, rs, bias ? 2 : 1, 1, &syms[ndim - 1]);
	return finish(c, !bias || bias->ndim <= 1, syms);
}

/* ---- shape ---- */

/* reshape and view: each symbol of the result is one of the input's, and
 * each symbolic input dimension goes to exactly one result dimension of
 * the same symbol; a -1 takes the one symbol left over when the constants
 * left over are equal; a symbol that does not match is specialized */
static bool reshape_syms(struct meta_call *c, const struct meta_tensor *a, int *out)
{
	int64_t rv[TENSOR_MAX_DIMS];
	int rs[TENSOR_MAX_DIMS], nr, in = a->ndim;
	if (!size_items(c, &c->args[1], rv, rs, &nr) || nr != c->out->t[0].ndim)
		return false;
	bool used[TENSOR_MAX_DIMS];
	int match[TENSOR_MAX_DIMS]; /* per requested size: the input dimension of its symbol, -1 */
	for (bool again = true; again;) {
		/* a requested symbol with no input dimension left is specialized,
		 * which may unmatch others: start again */
		again = false;
		for (int d = 0; d < in; d++)
			used[d] = false;
		for (int j = 0; j < nr && !again; j++) {
			match[j] = -1;
			int s = live(c, rs[j]);
			if (s < 0)
				continue;
			for (int d = 0; d < in && match[j] < 0; d++)
				if (!used[d] && tsym(c, a, d) == s) {
					used[d] = true;
					match[j] = d;
				}
			if (match[j] < 0) {
				spec(c, s);
				again = true;
			}
		}
	}
	int minus = -1;
	int64_t creq = 1, rest = 1;
	for (int j = 0; j < nr; j++) {
		out[j] = match[j] >= 0 ? tsym(c, a, match[j]) : -1;
		if (match[j] >= 0)
			continue;
		if (rv[j] == -1 && minus < 0)
			minus = j;
		else
			creq *= rv[j];
	}
	for (int d = 0; d < in; d++)
		if (!used[d])
			rest *= a->shape[d].value;
	/* the -1 can be one unmatched symbol u when the other unmatched
	 * sizes, specialized, make creq */
	int keep = -1;
	for (int d = 0; d < in && minus >= 0 && creq != 0 && keep < 0; d++)
		if (!used[d] && tsym(c, a, d) >= 0 && rest / a->shape[d].value == creq)
			keep = d;
	if (keep >= 0)
		out[minus] = tsym(c, a, keep);
	for (int d = 0; d < in; d++)
		if (!used[d] && d != keep)
			spec(c, tsym(c, a, d));
	return minus < 0 || creq != 0;
}

static int meta_reshape(struct meta_call *c)
{
	tensor *x = ops_tensor_arg(c->op, c->v, 0);
	int ndim;
	int64_t req[TENSOR_MAX_DIMS], shape[TENSOR_MAX_DIMS];
	if (!x || ops_shape(opname(c), ops_param_name(c->op, 1), c->v[1], &ndim, req) < 0 ||
	    tensor_reshape_shape(x->numel, ndim, req, shape) < 0)
		return -1;
	put(c, 0, x->dt, ndim, shape);
	int syms[TENSOR_MAX_DIMS];
	bool ok = reshape_syms(c, mt(c, 0), syms);
	return finish(c, ok, syms);
}

static int meta_transpose(struct meta_call *c)
{
	tensor *x = ops_tensor_arg(c->op, c->v, 0);
	int d0, d1;
	if (!x || ops_dim(opname(c), c->v[1], x->ndim, &d0) < 0 || ops_dim(opname(c), c->v[2], x->ndim, &d1) < 0)
		return -1;
	int64_t shape[TENSOR_MAX_DIMS];
	memcpy(shape, x->shape, sizeof shape);
	if (x->ndim) {
		shape[d0] = x->shape[d1];
		shape[d1] = x->shape[d0];
	}
	put(c, 0, x->dt, x->ndim, shape);
	int64_t a0, a1;
	int syms[TENSOR_MAX_DIMS], in = x->ndim;
	if (in == 0 || !const_int(&c->args[1], &a0) || !const_int(&c->args[2], &a1))
		return finish(c, false, NULL);
	for (int d = 0; d < in; d++)
		syms[d] = tsym(c, mt(c, 0), d == d0 ? d1 : d == d1 ? d0 : d);
	return finish(c, true, syms);
}

static int meta_permute(struct meta_call *c)
{
	tensor *x = ops_tensor_arg(c->op, c->v, 0);
	int perm[TENSOR_MAX_DIMS], syms[TENSOR_MAX_DIMS], nd;
	int64_t shape[TENSOR_MAX_DIMS], ds[TENSOR_MAX_DIMS];
	if (!x || ops_perm_arg(c->op, x, c->v[1], perm) < 0)
		return -1;
	for (int d = 0; d < x->ndim; d++)
		shape[d] = x->shape[perm[d]];
	put(c, 0, x->dt, x->ndim, shape);
	if (!const_ints(&c->args[1], ds, &nd) || nd != x->ndim)
		return finish(c, false, NULL);
	for (int d = 0; d < nd; d++)
		syms[d] = tsym(c, mt(c, 0), perm[d]);
	return finish(c, true, syms);
}

static int meta_T(struct meta_call *c)
{
	tensor *x = ops_tensor_arg(c->op, c->v, 0);
	int64_t shape[TENSOR_MAX_DIMS];
	int syms[TENSOR_MAX_DIMS], n;
	if (!x)
		return -1;
	n = x->ndim;
	for (int d = 0; d < n; d++) {
		shape[d] = x->shape[n - 1 - d];
		syms[d] = tsym(c, mt(c, 0), n - 1 - d);
	}
	put(c, 0, x->dt, n, shape);
	return finish(c, true, syms);
}

static int meta_unsqueeze(struct meta_call *c)
{
	tensor *x = ops_tensor_arg(c->op, c->v, 0);
	int dim, syms[TENSOR_MAX_DIMS];
	int64_t shape[TENSOR_MAX_DIMS];
	if (!x || ops_dim(opname(c), c->v[1], x->ndim + 1, &dim) < 0 || tensor_unsqueeze_shape(x, dim, shape) < 0)
		return -1;
	put(c, 0, x->dt, x->ndim + 1, shape);
	for (int d = 0, k = 0; d <= x->ndim; d++)
		syms[d] = d == dim ? -1 : tsym(c, mt(c, 0), k++);
	int64_t d0;
	return finish(c, const_int(&c->args[1], &d0), syms);
}

static int meta_squeeze(struct meta_call *c)
{
	tensor *x = ops_tensor_arg(c->op, c->v, 0);
	const struct meta_tensor *a = mt(c, 0);
	int dim = TENSOR_ALL_DIMS, n = 0, syms[TENSOR_MAX_DIMS];
	int64_t shape[TENSOR_MAX_DIMS], d0;
	if (!x || (c->v[1].tag != VAL_NONE && ops_dim(opname(c), c->v[1], x->ndim, &dim) < 0))
		return -1;
	/* a symbolic dimension is never 1 (its guard says >= 2) */
	for (int d = 0; d < x->ndim; d++)
		if (x->shape[d] != 1 || (dim != TENSOR_ALL_DIMS && d != dim)) {
			syms[n] = tsym(c, a, d);
			shape[n++] = x->shape[d];
		}
	put(c, 0, x->dt, n, shape);
	return finish(c, is_none(&c->args[1]) || const_int(&c->args[1], &d0), syms);
}

static int meta_flatten(struct meta_call *c)
{
	tensor *x = ops_tensor_arg(c->op, c->v, 0);
	const struct meta_tensor *a = mt(c, 0);
	int s, e, n = 0, syms[TENSOR_MAX_DIMS];
	int64_t shape[TENSOR_MAX_DIMS], s0, e0;
	if (!x || ops_flatten_dims(c->op, x, c->v, &s, &e) < 0)
		return -1;
	if (x->ndim == 0) {
		int64_t one = 1;
		put(c, 0, x->dt, 1, &one);
		return finish(c, false, NULL);
	}
	for (int d = 0; d < s; d++) {
		syms[n] = tsym(c, a, d);
		shape[n++] = x->shape[d];
	}
	/* a merged run of symbols would be their product: specialized */
	shape[n] = 1;
	for (int d = s; d <= e; d++)
		shape[n] *= x->shape[d];
	syms[n] = s == e ? tsym(c, a, s) : -1;
	if (s != e)
		for (int d = s; d <= e; d++)
			spec(c, tsym(c, a, d));
	n++;
	for (int d = e + 1; d < x->ndim; d++) {
		syms[n] = tsym(c, a, d);
		shape[n++] = x->shape[d];
	}
	put(c, 0, x->dt, n, shape);
	return finish(c, const_int(&c->args[1], &s0) && const_int(&c->args[2], &e0), syms);
}

static int meta_expand(struct meta_call *c)
{
	tensor *x = ops_tensor_arg(c->op, c->v, 0);
	int ndim;
	int64_t req[TENSOR_MAX_DIMS], shape[TENSOR_MAX_DIMS];
	if (!x || ops_shape(opname(c), "size", c->v[1], &ndim, req) < 0 || tensor_expand_shape(x, ndim, req, shape) < 0)
		return -1;
	put(c, 0, x->dt, ndim, shape);
	const struct meta_tensor *a = mt(c, 0);
	int64_t sz[TENSOR_MAX_DIMS];
	int ss[TENSOR_MAX_DIMS], ns = 0, syms[TENSOR_MAX_DIMS];
	if (!size_items(c, &c->args[1], sz, ss, &ns) || ns != ndim)
		return finish(c, false, NULL);
	for (int d = 0; d < ndim; d++) {
		int k = d - (ndim - a->ndim);
		int y = k >= 0 ? tsym(c, a, k) : -1;
		syms[d] = -1;
		if (ss[d] >= 0) {
			/* a new or a broadcast (1) dimension takes the symbolic
			 * size; a symbolic one must equal it */
			if (k < 0 || (y < 0 && a->shape[k].value == 1))
				syms[d] = ss[d];
			else if (y >= 0)
				syms[d] = unify(c, y, ss[d]);
			else
				spec(c, ss[d]);
		} else if (k >= 0 && sz[d] == -1) {
			syms[d] = y;
		} else if (k >= 0) {
			spec(c, y);
		}
	}
	return finish(c, true, syms);
}

/* cat: the cat dimension is a sum, specialized; the others are equal */
static int catstack_syms(struct meta_call *c, bool stack)
{
	const struct meta_arg *l = &c->args[0];
	int64_t d0;
	int syms[TENSOR_MAX_DIMS], ndim = c->out->t[0].ndim;
	if ((l->kind != META_LIST && l->kind != META_TUPLE) || l->n == 0 || !const_int(&c->args[1], &d0))
		return finish(c, false, NULL);
	int in = stack ? ndim - 1 : ndim;
	for (int i = 0; i < l->n; i++)
		if (l->items[i].kind != META_TENSOR || l->items[i].t->ndim != in)
			return finish(c, false, NULL);
	int x = norm_dim(d0, ndim);
	if (x < 0)
		return finish(c, false, NULL);
	const struct meta_tensor *t0 = l->items[0].t;
	for (int d = 0, k = 0; d < ndim; d++) {
		if (stack && d == x) {
			syms[d] = -1;
			continue;
		}
		if (!stack && d == x) {
			for (int i = 0; i < l->n; i++)
				spec(c, tsym(c, l->items[i].t, k));
			syms[d] = -1;
			k++;
			continue;
		}
		for (int i = 1; i < l->n; i++)
			sym_eq(c, t0, k, l->items[i].t, k);
		syms[d] = tsym(c, t0, k);
		k++;
	}
	return finish(c, true, syms);
}

static int catstack(struct meta_call *c, bool stack)
{
	int n, dim, ndim, rc = -1;
	int64_t shape[TENSOR_MAX_DIMS];
	dtype dt;
	tensor **xs = ops_tensor_list(c->op, c->v[0], &n);
	if (!xs)
		return -1;
	if (ops_dim(opname(c), c->v[1], xs[0]->ndim + stack, &dim) == 0 &&
	    (stack ? tensor_stack_shape : tensor_cat_shape)(xs, n, dim, &dt, &ndim, shape) == 0) {
		put(c, 0, dt, ndim, shape);
		rc = 0;
	}
	free(xs);
	return rc < 0 ? -1 : catstack_syms(c, stack);
}

static int meta_cat(struct meta_call *c) { return catstack(c, false); }
static int meta_stack(struct meta_call *c) { return catstack(c, true); }

/* x[index] with ints, slices and None: a full slice keeps the dimension's
 * symbol; an int on a symbolic dimension is in range for every size >= 2
 * when it is 0, 1, -1 or -2, else the symbol is specialized; any other
 * slice of a symbolic dimension specializes it */
static bool full_slice(value x)
{
	const struct slice *sl = val_slice(x);
	return (sl->start.tag == VAL_NONE || (sl->start.tag == VAL_INT && sl->start.i == 0)) &&
	       sl->stop.tag == VAL_NONE && (sl->step.tag == VAL_NONE || (sl->step.tag == VAL_INT && sl->step.i == 1));
}

static bool index_syms(struct meta_call *c, int *out)
{
	const struct meta_arg *ix = &c->args[1];
	const struct meta_tensor *a = mt(c, 0);
	int ndim = c->out->t[0].ndim;
	value items[META_MAX_INDEX];
	int ni = 0;
	if (ix->kind == META_TUPLE) {
		if (ix->n > META_MAX_INDEX)
			return false;
		for (int i = 0; i < ix->n; i++) {
			const struct meta_arg *it = &ix->items[i];
			if (it->kind == META_SYMINT)
				items[ni++] = val_int(it->s.value);
			else if (it->kind == META_CONST)
				items[ni++] = it->v;
			else
				return false;
		}
	} else if (ix->kind == META_CONST && ix->v.tag == VAL_TUPLE) {
		const struct tuple *t = val_tuple(ix->v);
		if (t->len > META_MAX_INDEX)
			return false;
		for (size_t i = 0; i < t->len; i++)
			items[ni++] = t->items[i];
	} else if (ix->kind == META_CONST) {
		items[ni++] = ix->v;
	} else {
		return false;
	}
	int in = a->ndim, k = 0, o = 0;
	for (int i = 0; i < ni; i++) {
		value x = items[i];
		if (x.tag == VAL_NONE) {
			if (o >= ndim)
				return false;
			out[o++] = -1;
			continue;
		}
		if (k >= in || (x.tag != VAL_INT && x.tag != VAL_SLICE))
			return false;
		int s = tsym(c, a, k++);
		if (x.tag == VAL_INT) {
			if (s >= 0 && (x.i < -2 || x.i > 1))
				spec(c, s);
			continue;
		}
		if (o >= ndim)
			return false;
		if (full_slice(x)) {
			out[o++] = s;
		} else {
			spec(c, s);
			out[o++] = -1;
		}
	}
	while (k < in) {
		if (o >= ndim)
			return false;
		out[o++] = tsym(c, a, k++);
	}
	return o == ndim;
}

/* A 0-d integer tensor in an index is read as an int: its value is data,
 * so the rule takes 0 (a bad value is the kernel's to report). v is a
 * (tensor) shell or a tuple that arg_value made: ours to change; the
 * shells stay alive until the call ends. */
static value index_value(const struct meta_arg *a, value v)
{
	const tensor *t = a->kind == META_TENSOR ? val_as_tensor(v) : NULL;
	if (t && t->ndim == 0 && t->dt == DT_INT64)
		return val_int(0);
	if (a->kind == META_TUPLE)
		for (int i = 0; i < a->n; i++)
			val_tuple(v)->items[i] = index_value(&a->items[i], val_tuple(v)->items[i]);
	return v;
}

static int meta_getitem(struct meta_call *c)
{
	tensor *x = ops_tensor_arg(c->op, c->v, 0);
	struct index_spec specs[META_MAX_INDEX];
	int n, ndim, syms[TENSOR_MAX_DIMS];
	int64_t shape[TENSOR_MAX_DIMS];
	if (!x)
		return -1;
	c->v[1] = index_value(&c->args[1], c->v[1]);
	if (ops_index_specs(c->v[1], specs, &n, META_MAX_INDEX) < 0 ||
	    tensor_index_shape(x->ndim, x->shape, specs, n, &ndim, shape) < 0)
		return -1;
	put(c, 0, x->dt, ndim, shape);
	bool ok = index_syms(c, syms);
	return finish(c, ok, syms);
}

static int meta_same(struct meta_call *c)
{
	tensor *x = ops_tensor_arg(c->op, c->v, 0);
	if (!x)
		return -1;
	put(c, 0, x->dt, x->ndim, x->shape);
	return same_syms(c, 0);
}

static int meta_requires_grad_(struct meta_call *c)
{
	tensor *x = ops_tensor_arg(c->op, c->v, 0);
	bool flag;
	if (!x || ops_requires_grad_arg(c->op, c->v[1], x->dt, &flag) < 0)
		return -1;
	put(c, 0, x->dt, x->ndim, x->shape);
	return same_syms(c, 0);
}

/* ---- entry ---- */

/* the rules whose size arguments may be symbolic ints; every other rule
 * uses a symbolic int as its value */
static bool takes_sym_sizes(meta_fn f)
{
	return f == meta_reshape || f == meta_expand || f == meta_fill || f == meta_full || f == meta_random ||
	       f == meta_arange;
}

bool meta_takes_sym_sizes(int op) { return op >= 0 && op < OPS_COUNT && takes_sym_sizes(meta_rules[op]); }

int meta_infer(int op, const struct meta_arg *args, struct meta_ctx *ctx, struct meta_out *out)
{
	struct meta_call c = {.op = op, .args = args, .ctx = ctx, .out = out};
	int rc = -1, made = 0;
	memset(out, 0, sizeof *out);
	if (op < 0 || op >= OPS_COUNT) {
		tj_error_set("no op %d", op);
		return -1;
	}
	c.aux = meta_aux[op];
	c.n = ops_nparams(op);
	if (c.n > (int)(sizeof c.v / sizeof c.v[0])) {
		tj_error_set("%s: too many parameters", opname(&c));
		return -1;
	}
	if (!takes_sym_sizes(meta_rules[op]))
		for (int i = 0; i < c.n; i++)
			spec_arg(&c, &args[i], true);
	for (; made < c.n; made++) {
		c.v[made] = arg_value(&c, &args[made], 0);
		if (val_is_err(c.v[made]))
			goto cleanup;
	}
	rc = meta_rules[op](&c);
cleanup:
	for (int i = 0; i < made; i++)
		val_decref(c.v[i]);
	while (c.shells) {
		struct shell *s = c.shells;
		c.shells = s->next;
		free(s);
	}
	if (rc < 0)
		out->n = 0;
	return rc;
}

/* ---- graph nodes ---- */

/* the example value of symbol sym: the size of an input dimension it binds */
static int sym_value(const struct graph *g, int sym, int64_t *v)
{
	for (int i = 0; i < g->nnodes; i++) {
		const struct gnode *n = &g->nodes[i];
		for (int d = 0; n->kind == GN_INPUT && d < n->ndim; d++)
			if (n->shape[d].sym == sym) {
				*v = n->shape[d].value;
				return 0;
			}
	}
	tj_error_set("symbol s%d is bound by no graph input", sym);
	return -1;
}

static void node_args_free(struct meta_arg *a, int n)
{
	for (int i = 0; i < n; i++) {
		if (a[i].kind == META_TENSOR)
			free((void *)a[i].t);
		else if (a[i].kind == META_LIST || a[i].kind == META_TUPLE)
			node_args_free((struct meta_arg *)a[i].items, a[i].n);
	}
	free(a);
}

/* the arguments of a node as a rule takes them (n of them, calloc'ed) */
static struct meta_arg *node_args(const struct graph *g, const struct garg *ga, int n, int depth)
{
	struct meta_arg *a = calloc((size_t)(n ? n : 1), sizeof *a);
	if (!a) {
		tj_error_set("out of memory");
		return NULL;
	}
	for (int i = 0; i < n; i++) {
		const struct garg *x = &ga[i];
		switch (x->kind) {
		case GARG_NODE: {
			const struct gnode *src = &g->nodes[x->node];
			struct meta_tensor *t = calloc(1, sizeof *t);
			if (!t) {
				tj_error_set("out of memory");
				goto fail;
			}
			t->dt = src->dt;
			t->ndim = src->ndim;
			memcpy(t->shape, src->shape, sizeof t->shape);
			a[i].kind = META_TENSOR;
			a[i].t = t;
			break;
		}
		case GARG_CONST:
			a[i].kind = META_CONST;
			a[i].v = x->constant;
			break;
		case GARG_SYM:
			a[i].kind = META_SYMINT;
			a[i].s.sym = x->sym;
			if (sym_value(g, x->sym, &a[i].s.value) < 0)
				goto fail;
			break;
		case GARG_LIST:
		case GARG_TUPLE:
			if (depth > 8) {
				tj_error_set("graph arguments nested too deeply");
				goto fail;
			}
			a[i].kind = x->kind == GARG_LIST ? META_LIST : META_TUPLE;
			a[i].n = x->n;
			if (!(a[i].items = node_args(g, x->items, x->n, depth + 1)))
				goto fail;
			break;
		}
	}
	return a;
fail:
	node_args_free(a, n);
	return NULL;
}

int meta_infer_node(const struct graph *g, const struct gnode *n, struct meta_ctx *ctx, struct meta_out *out)
{
	memset(out, 0, sizeof *out);
	if (n->kind != GN_OP) {
		tj_error_set("%s is not an op node", n->name);
		return -1;
	}
	if (n->nargs != ops_nparams(n->op)) {
		tj_error_set("%s: %d arguments, %s takes %d", n->name, n->nargs, ops_table[n->op].name,
			     ops_nparams(n->op));
		return -1;
	}
	struct meta_arg *a = node_args(g, n->args, n->nargs, 0);
	if (!a)
		return -1;
	int rc = meta_infer(n->op, a, ctx, out);
	node_args_free(a, n->nargs);
	return rc;
}
