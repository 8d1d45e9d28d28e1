/* trace_shapes.c - symbolic sizes (doc/tracer.md, "Dynamic shapes"): the
 * symbols of the inputs' dimensions, a union-find over the symbols that
 * ops forced equal, the rule per op that says which input dimension each
 * result dimension copies (infer_syms; the op table's shape rules will
 * take its place), and the symbols as the trace left them (sym_finish).
 */
#include <stdlib.h>
#include <string.h>

#include "compile_log.h"
#include "ops.h"
#include "trace_impl.h"
#include "util.h"

/* ---- symbolic sizes ---- */

int sym_find(struct tstate *st, int s)
{
	while (st->syms[s].parent != s)
		s = st->syms[s].parent;
	return s;
}

void sym_spec(struct tstate *st, int s)
{
	if (s >= 0)
		st->syms[sym_find(st, s)].spec = true;
}

static int sym_unify(struct tstate *st, int a, int b)
{
	a = sym_find(st, a);
	b = sym_find(st, b);
	if (a == b)
		return a;
	if (b < a) {
		int t = a;
		a = b;
		b = t;
	}
	st->syms[b].parent = a;
	if (st->syms[b].spec)
		st->syms[a].spec = true;
	return a;
}

/* the live symbol of dimension d of tensor variable v, or -1 (a constant) */
static int vsym(struct tstate *st, const struct var *v, int d)
{
	if (!v || v->kind != VK_TENSOR || !v->syms || d < 0 || d >= v->ex->ndim || v->syms[d] < 0)
		return -1;
	int r = sym_find(st, v->syms[d]);
	return st->syms[r].spec ? -1 : r;
}

/* the live symbol of a symbolic int, or -1 (specialized, or not one) */
int sym_of_int(struct tstate *st, const struct var *v)
{
	if (!v || v->kind != VK_SYMINT)
		return -1;
	int r = sym_find(st, v->isym);
	return st->syms[r].spec ? -1 : r;
}

/* the trace depends on every size of v: its symbols are specialized */
void sym_spec_var(struct tstate *st, struct var *v)
{
	if (!v || v->kind != VK_TENSOR || !v->syms)
		return;
	for (int d = 0; d < v->ex->ndim; d++)
		sym_spec(st, v->syms[d]);
}

/* ... of every tensor in an argument (lists and tuples, already realized) */
void sym_spec_deep(struct tstate *st, struct var *v, int depth)
{
	if (!v || depth > TRACE_MAX_NEST)
		return;
	if (v->kind == VK_LAZY)
		v = v->real;
	if (!v)
		return;
	if (v->kind == VK_SYMINT) {
		sym_spec(st, v->isym);
	} else if (v->kind == VK_TENSOR) {
		sym_spec_var(st, v);
	} else if (v->kind == VK_LIST || v->kind == VK_TUPLE) {
		int n = v->kind == VK_LIST ? v->rec->n : v->n;
		struct var **items = v->kind == VK_LIST ? v->rec->items : v->items;
		for (int i = 0; i < n; i++)
			sym_spec_deep(st, items[i], depth + 1);
	}
}

/* Symbols for the sizes of a tensor input, per the config, the frame's
 * memory of changed sizes and the tensor's marks. NULL: all static. */
int *sym_input(struct tstate *st, const tensor *t, int src)
{
	unsigned mask = 0;
	if (st->cfg->dynamic == DYN_ALWAYS) {
		mask = ~0u;
	} else if (st->cfg->dynamic == DYN_AUTO && st->cfg->dyn) {
		struct dyn_state *ds = st->cfg->dyn;
		const char *text = guards_source_text(st->gs, src);
		struct dyn_record *r = NULL;
		for (int i = 0; i < ds->n; i++)
			if (strcmp(ds->recs[i].source, text) == 0)
				r = &ds->recs[i];
		if (!r) {
			if (ds->n == ds->cap) {
				ds->cap = ds->cap ? ds->cap * 2 : 4;
				ds->recs = xrealloc(ds->recs, sizeof *ds->recs * (size_t)ds->cap);
			}
			r = &ds->recs[ds->n++];
			memset(r, 0, sizeof *r);
			r->source = xstrdup(text);
			r->ndim = t->ndim;
			memcpy(r->shape, t->shape, sizeof(int64_t) * (size_t)t->ndim);
		} else if (r->ndim != t->ndim) {
			r->ndim = t->ndim;
			r->changed = 0;
			memcpy(r->shape, t->shape, sizeof(int64_t) * (size_t)t->ndim);
		} else {
			for (int d = 0; d < t->ndim; d++)
				if (r->shape[d] != t->shape[d]) {
					r->changed |= 1u << d;
					r->shape[d] = t->shape[d];
				}
		}
		mask = r->changed;
	}
	mask |= t->dyn_mark; /* mark_dynamic wins over dynamic=False, as in PyTorch */
	mask &= ~(unsigned)t->static_mark;
	int *syms = NULL;
	for (int d = 0; d < t->ndim; d++) {
		if (!(mask & (1u << d)) || t->shape[d] < 2)
			continue;
		if (!syms) {
			syms = trace_alloc(st, sizeof(int) * TENSOR_MAX_DIMS);
			for (int k = 0; k < TENSOR_MAX_DIMS; k++)
				syms[k] = -1;
		}
		if (st->nsyms == st->symcap) {
			st->symcap = st->symcap ? st->symcap * 2 : 16;
			st->syms = xrealloc(st->syms, sizeof *st->syms * (size_t)st->symcap);
		}
		int id = st->nsyms++;
		struct tsym *y = &st->syms[id];
		memset(y, 0, sizeof *y);
		y->value = t->shape[d];
		y->parent = id;
		y->src = src;
		y->dim = d;
		if (st->cur) {
			struct src_loc l = trace_loc(st->cur);
			y->where = st->cur->code->src;
			y->line = l.line;
			y->col = l.col;
			y->function = st->cur->code->name;
		}
		syms[d] = id;
		if (id >= st->nlogged) {
			st->nlogged = id + 1;
			if (st->cfg->log && (compile_log_artifacts(st->cfg->log) & LOG_DYNAMIC)) {
				struct strbuf sb = STRBUF_INIT;
				sb_printf(&sb, "create_symbol s%d = %lld for %s.shape[%d]", id, (long long)y->value,
					  guards_source_text(st->gs, src), d);
				if (y->where)
					sb_printf(&sb, " # %s:%d in %s", y->where->path, y->line, y->function);
				compile_log_text(st->cfg->log, st->compile_id, sb.buf);
				sb_release(&sb);
			}
		}
	}
	return syms;
}

/* Size d of tensor variable t read as an int: a symbolic int when the
 * dimension is symbolic (its shape guard names the symbol; any use as a
 * Python value specializes it, see var_realize()), else a constant. */
struct var *sym_int_var(struct tstate *st, struct var *t, int d)
{
	need_tensor(st, t->src, t->ex, t->syms);
	int s = vsym(st, t, d);
	if (s < 0)
		return var_const_owned(st, val_int(t->ex->shape[d]));
	struct var *r = var_new(st, VK_SYMINT);
	r->v = val_int(t->ex->shape[d]);
	r->isym = s;
	r->self = t;
	r->n = d;
	return r;
}

/* ---- symbolic sizes of op results ---- */

static struct var *tvar(struct tstate *st, struct var *v)
{
	if (!v)
		return NULL;
	if (v->kind == VK_LAZY)
		v = v->real;
	return v && v->kind == VK_TENSOR ? v : NULL;
}

/* dimensions a and b must be equal: one symbol, or constants */
static int sym_eq(struct tstate *st, struct var *a, int da, struct var *b, int db)
{
	int x = vsym(st, a, da), y = vsym(st, b, db);
	if (x >= 0 && y >= 0)
		return sym_unify(st, x, y);
	sym_spec(st, x);
	sym_spec(st, y);
	return -1;
}

/* a run of dimensions of a tensor variable: v's dims [off, off + n) */
struct dimrun {
	struct var *v;
	int off, n;
};

/* broadcasting: the nout result dimensions of the runs, aligned right */
static void sym_bcast(struct tstate *st, struct dimrun *rs, int nr, int nout, int *out)
{
	for (int d = 0; d < nout; d++) {
		int s = -1;
		bool konst = false;
		for (int i = 0; i < nr; i++) {
			int k = d - (nout - rs[i].n);
			if (k < 0 || !rs[i].v)
				continue;
			int dim = rs[i].off + k;
			int y = vsym(st, rs[i].v, dim);
			if (y < 0) {
				if (rs[i].v->ex->shape[dim] != 1)
					konst = true;
				continue;
			}
			s = s < 0 ? y : sym_unify(st, s, y);
		}
		if (s >= 0 && konst) {
			sym_spec(st, s);
			s = -1;
		}
		out[d] = s;
	}
}

static bool const_int(struct tstate *st, struct var *v, int64_t *out)
{
	if (v && v->kind == VK_LAZY)
		v = v->real;
	if (!v || v->kind != VK_CONST)
		return false;
	if (v->v.tag == VAL_INT) {
		*out = v->v.i;
		return true;
	}
	if (v->v.tag == VAL_BOOL) {
		*out = v->v.b;
		return true;
	}
	return false;
}

static bool is_none_var(struct var *v)
{
	if (v && v->kind == VK_LAZY)
		v = v->real;
	return v && v->kind == VK_CONST && v->v.tag == VAL_NONE;
}

/* a constant int or a list/tuple of them; n: how many (at most 8) */
static bool const_ints(struct tstate *st, struct var *v, int64_t *out, int *n)
{
	if (const_int(st, v, out)) {
		*n = 1;
		return true;
	}
	if (v && v->kind == VK_LAZY)
		v = v->real;
	if (!v)
		return false;
	if (v->kind == VK_CONST && (v->v.tag == VAL_TUPLE || v->v.tag == VAL_LIST)) {
		size_t len = v->v.tag == VAL_TUPLE ? val_tuple(v->v)->len : val_list(v->v)->len;
		const value *it = v->v.tag == VAL_TUPLE ? val_tuple(v->v)->items : val_list(v->v)->items;
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
	if (v->kind == VK_TUPLE || v->kind == VK_LIST) {
		int len = v->kind == VK_LIST ? v->rec->n : v->n;
		struct var **items = v->kind == VK_LIST ? v->rec->items : v->items;
		if (len > TENSOR_MAX_DIMS)
			return false;
		for (int i = 0; i < len; i++)
			if (!const_int(st, items[i], &out[i]))
				return false;
		*n = len;
		return true;
	}
	return false;
}

static int norm_dim(int64_t d, int ndim)
{
	if (d < 0)
		d += ndim;
	return d < 0 || d >= ndim ? -1 : (int)d;
}

/* A size argument: an int, a symbolic int, or a list/tuple of them (at
 * most 8): vals their example values, syms the live symbol of each (-1:
 * a constant). */
static bool size_items(struct tstate *st, struct var *v, int64_t *vals, int *syms, int *n)
{
	if (v && v->kind == VK_LAZY)
		v = v->real;
	if (!v)
		return false;
	if (v->kind == VK_SYMINT) {
		vals[0] = v->v.i;
		syms[0] = sym_of_int(st, v);
		*n = 1;
		return true;
	}
	if (v->kind == VK_TUPLE || v->kind == VK_LIST) {
		int len = v->kind == VK_LIST ? v->rec->n : v->n;
		struct var **items = v->kind == VK_LIST ? v->rec->items : v->items;
		if (len > TENSOR_MAX_DIMS)
			return false;
		for (int i = 0; i < len; i++) {
			struct var *it = items[i] && items[i]->kind == VK_LAZY ? items[i]->real : items[i];
			if (it && it->kind == VK_SYMINT) {
				vals[i] = it->v.i;
				syms[i] = sym_of_int(st, it);
			} else if (const_int(st, it, &vals[i])) {
				syms[i] = -1;
			} else {
				return false;
			}
		}
		*n = len;
		return true;
	}
	if (!const_ints(st, v, vals, n))
		return false;
	for (int i = 0; i < *n; i++)
		syms[i] = -1;
	return true;
}

/* the ops whose size arguments may be symbolic ints (infer_syms reads them) */
static bool takes_sym_sizes(int op)
{
	switch (op) {
	case OPS_reshape:
	case OPS_view:
	case OPS_expand:
	case OPS_zeros:
	case OPS_ones:
	case OPS_full:
	case OPS_randn:
	case OPS_rand:
	case OPS_arange:
		return true;
	default:
		return false;
	}
}

/* the symbolic ints in an argument are used as values: specialized */
static void spec_symints(struct tstate *st, struct var *v, int depth)
{
	if (v && v->kind == VK_LAZY)
		v = v->real;
	if (!v || depth > TRACE_MAX_NEST)
		return;
	if (v->kind == VK_SYMINT) {
		sym_spec(st, v->isym);
	} else if (v->kind == VK_LIST || v->kind == VK_TUPLE) {
		int n = v->kind == VK_LIST ? v->rec->n : v->n;
		struct var **items = v->kind == VK_LIST ? v->rec->items : v->items;
		for (int i = 0; i < n; i++)
			spec_symints(st, items[i], depth + 1);
	}
}

/* reshape and view: each symbol of the result is one of the input's, and
 * each symbolic input dimension goes to exactly one result dimension of
 * the same symbol, so that the sizes agree for every value of the symbols
 * (both sides have the same numel as polynomials; a -1 takes the one
 * symbol left over when the constants left over are equal). A symbol that
 * does not match is specialized, and the sizes that depend on it are then
 * constants. */
static bool sym_reshape(struct tstate *st, struct var *a, struct var *shape, int ndim, int *out)
{
	int64_t rv[TENSOR_MAX_DIMS];
	int rs[TENSOR_MAX_DIMS], nr;
	if (!size_items(st, shape, rv, rs, &nr) || nr != ndim)
		return false;
	int in = a->ex->ndim;
	bool used[TENSOR_MAX_DIMS];
	int match[TENSOR_MAX_DIMS]; /* per requested size: the input dimension of its symbol, -1 */
	for (bool again = true; again;) {
		/* a requested symbol with no input dimension left to match
		 * (the example sizes only happened to agree) is specialized,
		 * which may unmatch others: start again (it ends, as each round
		 * specializes one more symbol) */
		again = false;
		for (int d = 0; d < in; d++)
			used[d] = false;
		for (int j = 0; j < nr && !again; j++) {
			match[j] = -1;
			int s = rs[j] >= 0 ? sym_find(st, rs[j]) : -1;
			if (s < 0 || st->syms[s].spec)
				continue;
			for (int d = 0; d < in && match[j] < 0; d++)
				if (!used[d] && vsym(st, a, d) == s) {
					used[d] = true;
					match[j] = d;
				}
			if (match[j] < 0) {
				sym_spec(st, s);
				again = true;
			}
		}
	}
	int minus = -1;
	int64_t creq = 1, rest = 1;
	for (int j = 0; j < nr; j++) {
		out[j] = match[j] >= 0 ? vsym(st, a, match[j]) : -1;
		if (match[j] >= 0)
			continue;
		if (rv[j] == -1 && minus < 0)
			minus = j;
		else
			creq *= rv[j];
	}
	for (int d = 0; d < in; d++)
		if (!used[d])
			rest *= a->ex->shape[d];
	/* A -1 is (the unmatched input sizes) / creq: it can be one unmatched
	 * symbol u when the other unmatched sizes, specialized, make creq
	 * ([s0, s1, s2] -> (-1, 20) is [s0, 20] with s1, s2 specialized) */
	int keep = -1;
	for (int d = 0; d < in && minus >= 0 && creq != 0 && keep < 0; d++)
		if (!used[d] && vsym(st, a, d) >= 0 && rest / a->ex->shape[d] == creq)
			keep = d;
	if (keep >= 0)
		out[minus] = vsym(st, a, keep);
	/* the rest is constant: a -1 is then (the specialized sizes) / creq */
	for (int d = 0; d < in; d++)
		if (!used[d] && d != keep)
			sym_spec(st, vsym(st, a, d));
	return minus < 0 || creq != 0;
}

static bool full_slice(value x)
{
	const struct slice *sl = val_slice(x);
	return (sl->start.tag == VAL_NONE || (sl->start.tag == VAL_INT && sl->start.i == 0)) &&
	       sl->stop.tag == VAL_NONE &&
	       (sl->step.tag == VAL_NONE || (sl->step.tag == VAL_INT && sl->step.i == 1));
}

/* x[index] with ints, slices and None: a full slice keeps the dimension's
 * symbol; an int on a symbolic dimension is in range for every size the
 * guard allows (>= 2) when it is 0, 1, -1 or -2, else the symbol is
 * specialized; any other slice of a symbolic dimension specializes it (its
 * size would be an expression of the symbol). */
static bool sym_index(struct tstate *st, struct var *a, struct var *index, int ndim, int *out)
{
	struct var *iv = index && index->kind == VK_LAZY ? index->real : index;
	if (!iv)
		return false;
	value items[TRACE_MAX_INDEX];
	int ni = 0;
	if (iv->kind == VK_TUPLE) {
		if (iv->n > TRACE_MAX_INDEX)
			return false;
		for (int i = 0; i < iv->n; i++) {
			struct var *it = iv->items[i] && iv->items[i]->kind == VK_LAZY ? iv->items[i]->real : iv->items[i];
			/* a symbolic int here was specialized (op_emit): its value */
			if (!it || (it->kind != VK_CONST && it->kind != VK_SYMINT))
				return false;
			items[ni++] = it->v;
		}
	} else if (iv->kind == VK_CONST && iv->v.tag == VAL_TUPLE) {
		const struct tuple *t = val_tuple(iv->v);
		if (t->len > TRACE_MAX_INDEX)
			return false;
		for (size_t i = 0; i < t->len; i++)
			items[ni++] = t->items[i];
	} else if (iv->kind == VK_CONST) {
		items[ni++] = iv->v;
	} else {
		return false;
	}
	int in = a->ex->ndim, k = 0, o = 0;
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
		int s = vsym(st, a, k++);
		if (x.tag == VAL_INT) {
			if (s >= 0 && (x.i < -2 || x.i > 1))
				sym_spec(st, s);
			continue;
		}
		if (o >= ndim)
			return false;
		if (full_slice(x)) {
			out[o++] = s;
		} else {
			sym_spec(st, s);
			out[o++] = -1;
		}
	}
	while (k < in) {
		if (o >= ndim)
			return false;
		out[o++] = vsym(st, a, k++);
	}
	return o == ndim;
}

/* The symbols of the result's dimensions (a result of ndim dimensions);
 * false: unknown, the caller specializes every input. */
static bool infer_syms(struct tstate *st, int op, struct var **args, int n, int ndim, int *out)
{
	const struct ops_info *info = &ops_table[op];
	for (int d = 0; d < TENSOR_MAX_DIMS; d++)
		out[d] = -1;
	struct var *a = n > 0 ? tvar(st, args[0]) : NULL;
	bool any_sym = false;
	for (int i = 0; i < n; i++) {
		struct var *v = args[i] && args[i]->kind == VK_LAZY ? args[i]->real : args[i];
		if (!v)
			continue;
		if (v->kind == VK_TENSOR && v->syms)
			any_sym = true;
		if (v->kind == VK_LIST || v->kind == VK_TUPLE || v->kind == VK_SYMINT)
			any_sym = true;
	}
	if (!any_sym)
		return true;
	if (info->flags & OPF_POINTWISE) {
		struct dimrun rs[16];
		int nr = 0;
		for (int i = 0; i < n && nr < 16; i++) {
			struct var *t = tvar(st, args[i]);
			if (t)
				rs[nr++] = (struct dimrun){t, 0, t->ex->ndim};
		}
		sym_bcast(st, rs, nr, ndim, out);
		return true;
	}
	switch (op) {
	case OPS_zeros_like:
	case OPS_ones_like:
	case OPS_randn_like:
	case OPS_rand_like:
	case OPS_clone:
	case OPS_contiguous:
	case OPS_detach:
	case OPS_requires_grad_:
	case OPS_softmax:
	case OPS_log_softmax:
		if (!a || a->ex->ndim != ndim)
			return false;
		for (int d = 0; d < ndim; d++)
			out[d] = vsym(st, a, d);
		return true;
	case OPS_sum:
	case OPS_mean:
	case OPS_prod:
	case OPS_max:
	case OPS_min:
	case OPS_argmax:
	case OPS_argmin:
	case OPS_var: {
		if (!a || n < 2)
			return false;
		int in = a->ex->ndim;
		unsigned red = 0;
		int64_t ds[TENSOR_MAX_DIMS];
		int nd = 0;
		if (is_none_var(args[1])) {
			red = (1u << in) - 1;
		} else if (const_ints(st, args[1], ds, &nd)) {
			for (int i = 0; i < nd; i++) {
				int d = norm_dim(ds[i], in);
				if (d < 0)
					return false;
				red |= 1u << d;
			}
		} else {
			return false;
		}
		int ki = op == OPS_var ? 3 : 2;
		int64_t keep = 0;
		if (ki < n && !const_int(st, args[ki], &keep))
			return false;
		int o = 0;
		for (int d = 0; d < in; d++) {
			if (red & (1u << d)) {
				if (keep)
					out[o++] = -1;
			} else {
				if (o >= TENSOR_MAX_DIMS)
					return false;
				out[o++] = vsym(st, a, d);
			}
		}
		return o == ndim;
	}
	case OPS_matmul: {
		struct var *b = n > 1 ? tvar(st, args[1]) : NULL;
		if (!a || !b)
			return false;
		int na = a->ex->ndim, nb = b->ex->ndim;
		if (na == 0 || nb == 0)
			return false;
		if (na == 1 && nb == 1) {
			sym_eq(st, a, 0, b, 0);
			return ndim == 0;
		}
		if (na == 1) {
			sym_eq(st, a, 0, b, nb - 2);
			struct dimrun r = {b, 0, nb - 2};
			if (ndim != nb - 1)
				return false;
			sym_bcast(st, &r, 1, nb - 2, out);
			out[ndim - 1] = vsym(st, b, nb - 1);
			return true;
		}
		if (nb == 1) {
			sym_eq(st, a, na - 1, b, 0);
			if (ndim != na - 1)
				return false;
			for (int d = 0; d < ndim; d++)
				out[d] = vsym(st, a, d);
			return true;
		}
		sym_eq(st, a, na - 1, b, nb - 2);
		if (ndim < 2)
			return false;
		struct dimrun rs[2] = {{a, 0, na - 2}, {b, 0, nb - 2}};
		sym_bcast(st, rs, 2, ndim - 2, out);
		out[ndim - 2] = vsym(st, a, na - 2);
		out[ndim - 1] = vsym(st, b, nb - 1);
		return true;
	}
	case OPS_linear: {
		struct var *w = n > 1 ? tvar(st, args[1]) : NULL;
		struct var *bias = n > 2 ? tvar(st, args[2]) : NULL;
		if (!a || !w || w->ex->ndim != 2 || a->ex->ndim < 1 || ndim != a->ex->ndim)
			return false;
		if (n > 2 && !bias && !is_none_var(args[2]))
			return false;
		int na = a->ex->ndim;
		sym_eq(st, a, na - 1, w, 1);
		for (int d = 0; d < na - 1; d++)
			out[d] = vsym(st, a, d);
		struct dimrun rs[2] = {{w, 0, 1}, {bias, bias && bias->ex->ndim ? bias->ex->ndim - 1 : 0,
						   bias && bias->ex->ndim ? 1 : 0}};
		sym_bcast(st, rs, bias ? 2 : 1, 1, &out[ndim - 1]);
		if (bias && bias->ex->ndim > 1)
			return false;
		return true;
	}
	case OPS_transpose: {
		int64_t d0, d1;
		if (!a || n < 3 || !const_int(st, args[1], &d0) || !const_int(st, args[2], &d1))
			return false;
		int in = a->ex->ndim;
		if (in == 0 || ndim != in)
			return false;
		int x = norm_dim(d0, in), y = norm_dim(d1, in);
		if (x < 0 || y < 0)
			return false;
		for (int d = 0; d < in; d++)
			out[d] = vsym(st, a, d == x ? y : d == y ? x : d);
		return true;
	}
	case OPS_T: {
		if (!a || ndim != a->ex->ndim)
			return false;
		for (int d = 0; d < ndim; d++)
			out[d] = vsym(st, a, ndim - 1 - d);
		return true;
	}
	case OPS_permute: {
		int64_t ds[TENSOR_MAX_DIMS];
		int nd = 0;
		if (!a || n < 2 || !const_ints(st, args[1], ds, &nd) || nd != a->ex->ndim || ndim != nd)
			return false;
		for (int d = 0; d < nd; d++) {
			int k = norm_dim(ds[d], nd);
			if (k < 0)
				return false;
			out[d] = vsym(st, a, k);
		}
		return true;
	}
	case OPS_unsqueeze: {
		int64_t d0;
		if (!a || n < 2 || !const_int(st, args[1], &d0) || ndim != a->ex->ndim + 1)
			return false;
		int x = norm_dim(d0, ndim);
		if (x < 0)
			return false;
		for (int d = 0, k = 0; d < ndim; d++)
			out[d] = d == x ? -1 : vsym(st, a, k++);
		return true;
	}
	case OPS_squeeze: {
		if (!a || n < 2)
			return false;
		int in = a->ex->ndim;
		unsigned drop = 0;
		int64_t d0;
		if (is_none_var(args[1])) {
			for (int d = 0; d < in; d++)
				if (vsym(st, a, d) < 0 && a->ex->shape[d] == 1)
					drop |= 1u << d;
		} else if (const_int(st, args[1], &d0)) {
			int x = in ? norm_dim(d0, in) : 0;
			if (x < 0)
				return false;
			if (in && vsym(st, a, x) < 0 && a->ex->shape[x] == 1)
				drop |= 1u << x;
		} else {
			return false;
		}
		int o = 0;
		for (int d = 0; d < in; d++)
			if (!(drop & (1u << d)))
				out[o++] = vsym(st, a, d);
		return o == ndim;
	}
	case OPS_flatten: {
		int64_t s0, e0;
		if (!a || n < 3 || !const_int(st, args[1], &s0) || !const_int(st, args[2], &e0))
			return false;
		int in = a->ex->ndim;
		if (in == 0)
			return false;
		int x = norm_dim(s0, in), y = norm_dim(e0, in);
		if (x < 0 || y < x || ndim != in - (y - x))
			return false;
		int o = 0;
		for (int d = 0; d < x; d++)
			out[o++] = vsym(st, a, d);
		if (x == y) {
			out[o++] = vsym(st, a, x);
		} else {
			for (int d = x; d <= y; d++)
				sym_spec(st, vsym(st, a, d));
			out[o++] = -1;
		}
		for (int d = y + 1; d < in; d++)
			out[o++] = vsym(st, a, d);
		return true;
	}
	case OPS_expand: {
		int64_t sz[TENSOR_MAX_DIMS];
		int ss[TENSOR_MAX_DIMS], ns = 0;
		if (!a || n < 2 || !size_items(st, args[1], sz, ss, &ns) || ns != ndim)
			return false;
		int in = a->ex->ndim;
		for (int d = 0; d < ndim; d++) {
			int k = d - (ndim - in);
			int y = k >= 0 ? vsym(st, a, k) : -1;
			if (ss[d] >= 0) {
				/* a symbolic size: a new or a broadcast (1) dimension
				 * takes it; a symbolic one must equal it */
				if (k < 0 || (y < 0 && a->ex->shape[k] == 1))
					out[d] = ss[d];
				else if (y >= 0)
					out[d] = sym_unify(st, y, ss[d]);
				else
					sym_spec(st, ss[d]);
			} else if (k >= 0 && sz[d] == -1) {
				out[d] = y;
			} else if (k >= 0) {
				sym_spec(st, y);
			}
		}
		return true;
	}
	case OPS_reshape:
	case OPS_view:
		return a && n >= 2 && sym_reshape(st, a, args[1], ndim, out);
	case OPS_getitem:
		return a && n >= 2 && sym_index(st, a, args[1], ndim, out);
	case OPS_zeros:
	case OPS_ones:
	case OPS_full:
	case OPS_randn:
	case OPS_rand: {
		/* the result's sizes are the requested ones */
		int64_t sz[TENSOR_MAX_DIMS];
		int ss[TENSOR_MAX_DIMS], ns = 0;
		if (n < 1 || !size_items(st, args[0], sz, ss, &ns) || ns != ndim)
			return false;
		for (int d = 0; d < ndim; d++)
			out[d] = ss[d];
		return true;
	}
	case OPS_arange: {
		/* arange(n) and arange(0, n): n elements; others by value */
		int64_t v0, step;
		struct var *s0 = args[0] && args[0]->kind == VK_LAZY ? args[0]->real : args[0];
		struct var *s1 = n > 1 && args[1] && args[1]->kind == VK_LAZY ? args[1]->real : n > 1 ? args[1] : NULL;
		if (ndim != 1 || n < 3 || !const_int(st, args[2], &step) || step != 1)
			return false;
		if (sym_of_int(st, s0) >= 0 && is_none_var(s1))
			out[0] = sym_of_int(st, s0);
		else if (const_int(st, s0, &v0) && v0 == 0 && sym_of_int(st, s1) >= 0)
			out[0] = sym_of_int(st, s1);
		else
			return false;
		return true;
	}
	case OPS_cat:
	case OPS_stack: {
		struct var *l = args[0] && args[0]->kind == VK_LAZY ? args[0]->real : args[0];
		int64_t d0;
		if (!l || (l->kind != VK_LIST && l->kind != VK_TUPLE) || n < 2 || !const_int(st, args[1], &d0))
			return false;
		int nt = l->kind == VK_LIST ? l->rec->n : l->n;
		struct var **items = l->kind == VK_LIST ? l->rec->items : l->items;
		if (nt == 0)
			return false;
		int in = op == OPS_stack ? ndim - 1 : ndim;
		for (int i = 0; i < nt; i++) {
			struct var *t = tvar(st, items[i]);
			if (!t || t->ex->ndim != in)
				return false;
		}
		int x = norm_dim(d0, ndim);
		if (x < 0)
			return false;
		struct var *t0 = tvar(st, items[0]);
		for (int d = 0, k = 0; d < ndim; d++) {
			if (op == OPS_stack && d == x) {
				out[d] = -1;
				continue;
			}
			if (op == OPS_cat && d == x) {
				for (int i = 0; i < nt; i++)
					sym_spec(st, vsym(st, tvar(st, items[i]), k));
				out[d] = -1;
				k++;
				continue;
			}
			for (int i = 1; i < nt; i++)
				sym_eq(st, t0, k, tvar(st, items[i]), k);
			out[d] = vsym(st, t0, k);
			k++;
		}
		return true;
	}
	default:
		return false;
	}
}

/* The symbolic ints among an op's arguments, before it runs: only the
 * size arguments of the ops that take symbolic sizes stay symbolic; any
 * other is used as its value (specialized). */
void sym_before_op(struct tstate *st, int op, struct var **args, int n)
{
	if (st->nsyms && !takes_sym_sizes(op))
		for (int i = 0; i < n; i++)
			spec_symints(st, args[i], 0);
}

/* The symbols of the dimensions of an op's result (out, run on the
 * examples), per infer_syms: the same array for every tensor of a tuple
 * result; NULL when they are all constants. An op without a rule
 * specializes every symbol of its arguments. */
int *sym_after_op(struct tstate *st, int op, struct var **args, int n, value out)
{
	int *osyms = NULL;
	if (!st->nsyms)
		return NULL;
	const tensor *t0 = out.tag == VAL_TENSOR ? val_as_tensor(out)
			   : val_tuple(out)->len ? val_as_tensor(val_tuple(out)->items[0])
						 : NULL;
	int ndim = t0 ? t0->ndim : 0;
	int tmp[TENSOR_MAX_DIMS];
	bool same = true;
	if (out.tag == VAL_TUPLE)
		for (size_t k = 1; k < val_tuple(out)->len; k++)
			same = same && val_as_tensor(val_tuple(out)->items[k])->ndim == ndim;
	bool ok = t0 && same && infer_syms(st, op, args, n, ndim, tmp);
	if (!ok) {
		for (int i = 0; i < n; i++)
			sym_spec_deep(st, args[i], 0);
	} else {
		for (int d = 0; d < ndim; d++)
			if (tmp[d] >= 0) {
				osyms = trace_alloc(st, sizeof(int) * TENSOR_MAX_DIMS);
				memcpy(osyms, tmp, sizeof tmp);
				break;
			}
	}
	return osyms;
}

/* x.shape, x.size(), x.size(d) of a tensor with symbols: a symbolic int
 * for a symbolic dimension, a constant for the others (the shape guard
 * covers both). NULL: not that case, the general path. */
struct var *sym_sizes(struct tstate *st, int op, struct var **args)
{
	struct var *t = var_realize(st, args[0]);
	if (t->kind != VK_TENSOR || !t->syms)
		return NULL;
	int nd = t->ex->ndim, d = -1;
	if (op == OPS_size) {
		struct var *dv = var_realize(st, args[1]);
		if (dv->kind != VK_CONST)
			return NULL;
		value x = var_value(st, dv);
		if (x.tag == VAL_INT) {
			d = norm_dim(x.i, nd);
			if (d < 0)
				return NULL;
		} else if (x.tag != VAL_NONE) {
			return NULL;
		}
	}
	if (d >= 0)
		return sym_int_var(st, t, d);
	struct var **items = trace_alloc(st, sizeof(struct var *) * (size_t)(nd ? nd : 1));
	for (int k = 0; k < nd; k++)
		items[k] = sym_int_var(st, t, k);
	return var_tuple(st, nd, items);
}

/* The symbols as the trace left them: the graph's sizes name the root of
 * each symbol (or its value, when specialized); each shape guard's
 * symbolic sizes become `>= 2` at a symbol's first input dimension and
 * `== sN` at the others, and a specialized size is checked by value. */
static void garg_syms(struct tstate *st, struct garg *a, const bool *bound, int pass, int *maxsym)
{
	if (a->kind == GARG_LIST || a->kind == GARG_TUPLE) {
		for (int i = 0; i < a->n; i++)
			garg_syms(st, &a->items[i], bound, pass, maxsym);
		return;
	}
	if (a->kind != GARG_SYM)
		return;
	int r = sym_find(st, a->sym);
	if (pass == 0) {
		if (!bound[r])
			sym_spec(st, r);
		return;
	}
	if (st->syms[r].spec) {
		a->kind = GARG_CONST;
		a->constant = val_int(st->syms[r].value);
		return;
	}
	a->sym = r;
	if (r > *maxsym)
		*maxsym = r;
}

void sym_finish(struct tstate *st)
{
	if (!st->nsyms)
		return;
	struct graph *g = st->g;
	int maxsym = -1;
	/* a symbolic size argument takes its value from an input's size when
	 * the graph runs (tnode made the tensor it came from an input); one
	 * that no input binds is specialized, to be safe */
	bool *bound = xcalloc((size_t)st->nsyms, sizeof *bound);
	for (int i = 0; i < g->nnodes; i++)
		for (int d = 0; g->nodes[i].kind == GN_INPUT && d < g->nodes[i].ndim; d++)
			if (g->nodes[i].shape[d].sym >= 0)
				bound[sym_find(st, g->nodes[i].shape[d].sym)] = true;
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < g->nnodes; i++)
			for (int k = 0; k < g->nodes[i].nargs; k++)
				garg_syms(st, &g->nodes[i].args[k], bound, pass, &maxsym);
	free(bound);
	for (int i = 0; i < g->nnodes; i++) {
		struct gnode *n = &g->nodes[i];
		for (int d = 0; d < n->ndim; d++) {
			if (n->shape[d].sym < 0)
				continue;
			int r = sym_find(st, n->shape[d].sym);
			n->shape[d].sym = st->syms[r].spec ? -1 : r;
			if (n->shape[d].sym > maxsym)
				maxsym = n->shape[d].sym;
		}
	}
	g->nsyms = maxsym + 1;
	int *first_src = xmalloc(sizeof(int) * (size_t)st->nsyms);
	int *first_dim = xmalloc(sizeof(int) * (size_t)st->nsyms);
	for (int i = 0; i < st->nsyms; i++)
		first_src[i] = -1, first_dim[i] = 0;
	int ng = st->gs->nguards;
	for (int i = 0; i < ng; i++) {
		struct guard *sg = &st->gs->guards[i];
		if (sg->kind != GK_SHAPE)
			continue;
		bool changed = false;
		for (int d = 0; d < sg->ndim; d++) {
			if (sg->shape[d] >= 0)
				continue;
			changed = true;
			int r = sym_find(st, sg->dimsym[d]);
			if (st->syms[r].spec) {
				sg->shape[d] = st->syms[r].value;
				continue;
			}
			sg->dimsym[d] = r;
			struct guard dg = {.kind = GK_DIM, .source = sg->source, .expect = val_none(), .n = d};
			dg.dimsym[0] = r;
			if (first_src[r] < 0) {
				first_src[r] = sg->source;
				first_dim[r] = d;
				dg.ndim = -1;
				dg.src = st->syms[r].where;
				dg.line = st->syms[r].line;
				dg.col = st->syms[r].col;
				dg.function = st->syms[r].function;
			} else {
				dg.ndim = first_src[r];
				dg.shape[0] = first_dim[r];
				dg.src = sg->src;
				dg.line = sg->line;
				dg.col = sg->col;
				dg.function = sg->function;
			}
			guards_add(st->gs, &dg);
			sg = &st->gs->guards[i]; /* guards_add may move the array */
		}
		if (changed)
			guards_retext(st->gs, i);
	}
	free(first_src);
	free(first_dim);
}
