/* trace_plan.c - the resume plan: built at the end of a trace (recipes for
 * the value returned, or for every local and stack slot at the breaking
 * instruction, and the side effects to replay), and carried out at every
 * cache hit (trace_rebuild). doc/tracer.md, "The model" items 3 and 4.
 */
#include <stdlib.h>
#include <string.h>

#include "ops.h"
#include "trace_impl.h"
#include "util.h"

/* ---- the plan ---- */

struct planner {
	struct tstate *st;
	int *out_of_node;         /* graph node -> output index, -1 */
	int nout;
	int *outs;
	int nmemo;
	bool too_deep;            /* a value nested too deep to rebuild: the trace fails */
};

static void recipe_of(struct planner *p, struct var *v, struct recipe *r, int depth);

/* n zeroed recipes, for a count set after (a plan cut short by a failed
 * allocation is released as far as it got) */
static struct recipe *recipe_items(struct planner *p, int n)
{
	return trace_calloc(p->st, (size_t)(n ? n : 1), sizeof(struct recipe));
}

static void recipe_const(struct recipe *r, value v)
{
	r->kind = RC_CONST;
	r->v = v;
	val_incref(v);
}

static void cell_recipe(struct planner *p, struct cellrec *c, struct recipe *r, int depth)
{
	if (c->root_index >= 0) {
		r->kind = RC_CELL;
		r->index = c->root_index;
	} else if (c->real.tag == VAL_CELL) {
		recipe_const(r, c->real);
	} else if (c->memo >= 0) {
		r->kind = RC_MEMO;
		r->index = c->memo;
	} else {
		c->memo = p->nmemo++;
		r->kind = RC_NEWCELL;
		r->index = c->memo;
		r->items = recipe_items(p, 1);
		r->n = 1;
		recipe_of(p, c->content, &r->items[0], depth + 1);
	}
}

/* an iterator at its position: its sequence (or inner iterators) and where it is */
static void iter_recipe(struct planner *p, struct iterrec *it, struct recipe *r, int depth)
{
	r->kind = RC_ITER;
	r->index = it->kind;
	r->items = recipe_items(p, 1);
	r->n = 1;
	r->a = it->i;
	r->b = it->n;
	r->c = it->step;
	if (it->kind == ITER_RANGE) {
		recipe_const(&r->items[0], val_none());
	} else if (it->kind == ITER_ZIP) {
		struct recipe *t = &r->items[0];
		t->kind = RC_TUPLE;
		t->v = val_none();
		t->items = recipe_items(p, it->nsub);
		t->n = it->nsub;
		for (int i = 0; i < it->nsub; i++)
			recipe_of(p, it->subs[i], &t->items[i], depth + 1);
	} else {
		if (it->kind == ITER_ENUMERATE)
			r->a = it->count;
		recipe_of(p, it->seq, &r->items[0], depth + 1);
	}
}

/* a function made while tracing: its code, defaults and closure cells */
static void func_recipe(struct planner *p, struct var *v, struct recipe *r, int depth)
{
	/* one function object however many places refer to it (node: its memo slot) */
	if (v->node >= 0) {
		r->kind = RC_MEMO;
		r->index = v->node;
		return;
	}
	v->node = p->nmemo++;
	r->kind = RC_FUNC;
	r->index = v->node;
	r->v = v->v;
	val_incref(r->v);
	r->items = recipe_items(p, 2);
	r->n = 2;
	if (v->defaults)
		recipe_of(p, v->defaults, &r->items[0], depth + 1);
	else
		recipe_const(&r->items[0], val_none());
	if (v->ncells) {
		struct recipe *t = &r->items[1];
		t->kind = RC_TUPLE;
		t->v = val_none();
		t->items = recipe_items(p, v->ncells);
		t->n = v->ncells;
		for (int i = 0; i < v->ncells; i++)
			cell_recipe(p, v->cells[i], &t->items[i], depth + 1);
	} else {
		recipe_const(&r->items[1], val_none());
	}
}

static void recipe_of(struct planner *p, struct var *v, struct recipe *r, int depth)
{
	struct tstate *st = p->st;
	memset(r, 0, sizeof *r);
	r->v = val_none();
	if (!v) {
		r->kind = RC_UNBOUND;
		return;
	}
	if (depth > 4 * TRACE_MAX_NEST) {
		p->too_deep = true;
		recipe_const(r, val_none());
		return;
	}
	if (v->kind == VK_LAZY) {
		if (var_source(st, v) >= 0) {
			r->kind = RC_SOURCE;
			r->index = v->src;
			return;
		}
		if (!v->real) {
			recipe_const(r, v->v);
			return;
		}
		v = v->real;
	}
	switch ((enum vkind)v->kind) {
	case VK_TENSOR:
		if (v->src >= 0) {
			r->kind = RC_SOURCE;
			r->index = v->src;
		} else if (v->node >= 0 && v->node < st->g->nnodes && st->g->nodes[v->node].kind != GN_INPUT) {
			if (p->out_of_node[v->node] < 0) {
				p->out_of_node[v->node] = p->nout;
				p->outs[p->nout++] = v->node;
			}
			r->kind = RC_OUTPUT;
			r->index = p->out_of_node[v->node];
		} else {
			recipe_const(r, val_tensor(var_example(st, v)));
		}
		return;
	case VK_CONST:
	case VK_OPAQUE:
		if (v->src >= 0) {
			r->kind = RC_SOURCE;
			r->index = v->src;
		} else {
			recipe_const(r, v->v);
		}
		return;
	case VK_LIST: {
		struct seqrec *rec = v->rec;
		if (rec->src >= 0) {
			r->kind = RC_SOURCE;
			r->index = rec->src;
		} else if (rec->obj.tag == VAL_LIST) {
			recipe_const(r, rec->obj);
		} else if (rec->memo >= 0) {
			r->kind = RC_MEMO;
			r->index = rec->memo;
		} else {
			rec->memo = p->nmemo++;
			r->kind = RC_LIST;
			r->index = rec->memo;
			r->items = recipe_items(p, rec->n);
			r->n = rec->n;
			for (int i = 0; i < rec->n; i++)
				recipe_of(p, rec->items[i], &r->items[i], depth + 1);
		}
		return;
	}
	case VK_TUPLE:
		if (v->src >= 0) {
			r->kind = RC_SOURCE;
			r->index = v->src;
			return;
		}
		r->kind = RC_TUPLE;
		r->items = recipe_items(p, v->n);
		r->n = v->n;
		for (int i = 0; i < v->n; i++)
			recipe_of(p, v->items[i], &r->items[i], depth + 1);
		return;
	case VK_ITER:
		iter_recipe(p, v->it, r, depth);
		return;
	case VK_METHOD:
	case VK_LISTMETH:
		r->kind = RC_GETATTR;
		if (v->kind == VK_METHOD)
			r->v = str_intern(ops_table[v->op].name, strlen(ops_table[v->op].name));
		else
			recipe_const(r, v->v), r->kind = RC_GETATTR;
		r->items = recipe_items(p, 1);
		r->n = 1;
		recipe_of(p, v->self, &r->items[0], depth + 1);
		return;
	case VK_NESTED:
		func_recipe(p, v, r, depth);
		return;
	case VK_CELLREF:
		cell_recipe(p, v->cell, r, depth);
		return;
	case VK_SYMINT:
		/* rebuilt as its value: the frame depends on it */
		sym_spec(p->st, v->isym);
		recipe_const(r, v->v);
		return;
	case VK_LAZY:
		break;
	}
	recipe_const(r, val_none());
}

static void recipe_release(struct recipe *r)
{
	val_decref(r->v);
	for (int i = 0; i < r->n; i++)
		recipe_release(&r->items[i]);
	free(r->items);
}

/* the recipes of a result's plan */
void plan_release(struct trace_result *r)
{
	for (int i = 0; i < r->nlocals; i++)
		recipe_release(&r->locals[i]);
	free(r->locals);
	for (int i = 0; i < r->nstack; i++)
		recipe_release(&r->stack[i]);
	free(r->stack);
	recipe_release(&r->ret);
	for (int i = 0; i < r->neffects; i++) {
		struct effect *e = &r->effects[i];
		val_decref(e->name);
		recipe_release(&e->value);
		for (int k = 0; k < e->n; k++)
			recipe_release(&e->items[k]);
		free(e->items);
	}
	free(r->effects);
}

static void effects_of(struct planner *p, struct trace_result *res)
{
	struct tstate *st = p->st;
	int cap = st->nglobals + (st->f->code->ncellvars + st->f->code->nfreevars) + st->nrecs;
	res->effects = trace_calloc(st, (size_t)(cap ? cap : 1), sizeof *res->effects);
	for (int i = 0; i < st->nglobals; i++) {
		if (!st->globals[i].dirty)
			continue;
		struct effect *e = &res->effects[res->neffects++];
		e->kind = EF_GLOBAL;
		e->name = str_intern(st->globals[i].name->data, st->globals[i].name->len);
		recipe_of(p, st->globals[i].var, &e->value, 0);
	}
	int ncells = st->f->code->ncellvars + st->f->code->nfreevars;
	for (int i = 0; i < ncells; i++) {
		struct cellrec *c = st->rootcells[i];
		if (!c->dirty)
			continue;
		struct effect *e = &res->effects[res->neffects++];
		e->kind = EF_CELL;
		e->name = val_none();
		e->index = i;
		recipe_of(p, c->content, &e->value, 0);
	}
	for (int i = 0; i < st->nrecs; i++) {
		struct seqrec *rec = st->recs[i];
		if (!rec->mutated || (rec->src < 0 && rec->obj.tag != VAL_LIST))
			continue;
		struct effect *e = &res->effects[res->neffects++];
		e->kind = EF_LIST;
		e->name = val_none();
		if (!rec->prefix_dirty && rec->n >= rec->orig_n) {
			/* appends only: the list gets the new items, whatever its length */
			e->kind = EF_LIST_APPEND;
			if (rec->src >= 0) {
				memset(&e->value, 0, sizeof e->value);
				e->value.kind = RC_SOURCE;
				e->value.v = val_none();
				e->value.index = rec->src;
			} else {
				recipe_const(&e->value, rec->obj);
			}
			e->items = recipe_items(p, rec->n - rec->orig_n);
			e->n = rec->n - rec->orig_n;
			for (int k = 0; k < e->n; k++)
				recipe_of(p, rec->items[rec->orig_n + k], &e->items[k], 1);
			continue;
		}
		seqrec_read(st, rec);
		if (rec->src >= 0) {
			memset(&e->value, 0, sizeof e->value);
			e->value.kind = RC_SOURCE;
			e->value.v = val_none();
			e->value.index = rec->src;
		} else {
			recipe_const(&e->value, rec->obj);
		}
		e->items = recipe_items(p, rec->n);
		e->n = rec->n;
		for (int k = 0; k < rec->n; k++)
			recipe_of(p, rec->items[k], &e->items[k], 1);
	}
}

/* Lists from outside that the trace took for different objects stay
 * different, when one of them changed or was read after a change. */
static void distinct_lists(struct tstate *st)
{
	for (int i = 0; i < st->nrecs; i++) {
		struct seqrec *a = st->recs[i];
		if (!a->mutated || a->src < 0)
			continue;
		for (int k = 0; k < st->nrecs; k++) {
			struct seqrec *b = st->recs[k];
			if (k == i || b->src < 0 || b->real.tag != VAL_LIST || (b->mutated && k < i))
				continue;
			struct guard g = {.kind = GK_ALIAS, .source = a->src, .expect = val_bool(false), .n = b->src};
			need_guard(st, &g);
		}
	}
}

/* Builds the plan of how the trace ended (the root frame's state or its
 * return value) and sets the graph's outputs. */
void plan_make(struct tstate *st, struct trace_result *res)
{
	distinct_lists(st);
	struct planner p = {st, NULL, 0, NULL, 0, false};
	p.out_of_node = trace_alloc(st, sizeof(int) * (size_t)(st->g->nnodes ? st->g->nnodes : 1));
	for (int i = 0; i < st->g->nnodes; i++)
		p.out_of_node[i] = -1;
	/* the graph's from the start, so that it goes with the graph */
	free(st->g->outputs);
	st->g->noutputs = 0;
	p.outs = st->g->outputs = trace_calloc(st, (size_t)(st->g->nnodes ? st->g->nnodes : 1), sizeof(int));
	res->ret.v = val_none();
	if (res->end == TRACE_RETURN) {
		recipe_of(&p, st->ret, &res->ret, 0);
	} else {
		struct tframe *fr = st->root;
		res->locals = recipe_items(&p, fr->code->nlocals);
		res->nlocals = fr->code->nlocals;
		for (int i = 0; i < res->nlocals; i++)
			recipe_of(&p, fr->locals[i], &res->locals[i], 0);
		res->stack = recipe_items(&p, fr->sp);
		res->nstack = fr->sp;
		for (int i = 0; i < fr->sp; i++)
			recipe_of(&p, fr->stack[i], &res->stack[i], 0);
	}
	effects_of(&p, res);
	res->nmemo = p.nmemo;
	st->g->noutputs = p.nout;
	st->g->outputs = p.outs;
	if (graph_hoist_inputs(st->g) < 0)
		trace_oom(st);
	if (p.too_deep) {
		res->end = TRACE_FAILED;
		st->error = util_strdup("a value nested too deep to rebuild");
	}
}

/* ---- carrying out a plan ---- */

struct builder {
	struct vm *vm;
	struct frame *f;
	const value *sources;
	const value *outputs;
	value *memo;
};

/* a new reference, or val_err() after tj_error_set(); an RC_UNBOUND gives
 * val_err() with no error set (*unbound) */
static value build(struct builder *b, const struct recipe *r, bool *unbound)
{
	if (unbound)
		*unbound = false;
	switch ((enum recipe_kind)r->kind) {
	case RC_UNBOUND:
		if (unbound)
			*unbound = true;
		return val_err();
	case RC_CONST:
		val_incref(r->v);
		return r->v;
	case RC_SOURCE: {
		value v = b->sources[r->index];
		if (val_is_err(v)) {
			tj_error_set("a frame input went missing");
			return v;
		}
		val_incref(v);
		return v;
	}
	case RC_OUTPUT:
		val_incref(b->outputs[r->index]);
		return b->outputs[r->index];
	case RC_MEMO: {
		value v = b->memo[r->index];
		if (val_is_err(v)) {
			tj_error_set("a list refers to itself");
			return v;
		}
		val_incref(v);
		return v;
	}
	case RC_LIST: {
		value l = list_new((size_t)r->n);
		val_incref(l);
		b->memo[r->index] = l;
		for (int i = 0; i < r->n; i++) {
			value x = build(b, &r->items[i], NULL);
			if (val_is_err(x)) {
				val_decref(l);
				return x;
			}
			list_append(val_list(l), x);
		}
		return l;
	}
	case RC_TUPLE: {
		value t = tuple_new((size_t)r->n);
		for (int i = 0; i < r->n; i++) {
			value x = build(b, &r->items[i], NULL);
			if (val_is_err(x)) {
				val_decref(t);
				return x;
			}
			val_tuple(t)->items[i] = x;
		}
		return t;
	}
	case RC_ITER: {
		value seq = build(b, &r->items[0], NULL);
		if (val_is_err(seq))
			return seq;
		value it = iter_new((enum iter_kind)r->index, seq);
		val_decref(seq);
		struct iter *ip = val_iter(it);
		ip->i = r->a;
		ip->n = r->b;
		ip->step = r->c;
		return it;
	}
	case RC_GETATTR: {
		value base = build(b, &r->items[0], NULL);
		if (val_is_err(base))
			return base;
		value m = vm_getattr(b->vm, base, val_str(r->v));
		val_decref(base);
		return m;
	}
	case RC_FUNC: {
		value d = build(b, &r->items[0], NULL);
		if (val_is_err(d))
			return d;
		value c = build(b, &r->items[1], NULL);
		if (val_is_err(c)) {
			val_decref(d);
			return c;
		}
		value fn = func_new(val_code(r->v), d, c);
		val_decref(d);
		val_decref(c);
		val_incref(fn);
		b->memo[r->index] = fn;
		return fn;
	}
	case RC_CELL:
		val_incref(b->f->cells[r->index]);
		return b->f->cells[r->index];
	case RC_NEWCELL: {
		bool ub;
		value content = build(b, &r->items[0], &ub);
		if (val_is_err(content) && !ub)
			return content;
		value c = cell_new(content);
		val_decref(content);
		val_incref(c);
		b->memo[r->index] = c;
		return c;
	}
	}
	tj_error_set("bad recipe");
	return val_err();
}

/* The side effects of a plan, in order, from their values built
 * beforehand (vals: each effect's target, then its items), whose
 * references it takes. */
static void replay_effects(const struct trace_result *r, struct vm *vm, struct frame *f, value *vals)
{
	int k = 0;
	for (int i = 0; i < r->neffects; i++) {
		const struct effect *e = &r->effects[i];
		value target = vals[k++];
		switch ((enum effect_kind)e->kind) {
		case EF_GLOBAL:
			vm_set_global(vm, val_str(e->name)->data, target);
			val_decref(target);
			break;
		case EF_CELL: {
			struct cell *c = val_cell(f->cells[e->index]);
			value old = c->v;
			c->v = target;
			val_decref(old);
			break;
		}
		case EF_LIST_APPEND: {
			struct list *l = val_list(target);
			for (int j = 0; j < e->n; j++)
				list_append(l, vals[k + j]);
			val_decref(target);
			break;
		}
		case EF_LIST: {
			/* the old items set aside as they are: no copy to make */
			struct list *l = val_list(target);
			size_t oldn = l->len;
			value *olditems = l->items;
			l->items = NULL;
			l->len = l->cap = 0;
			for (int j = 0; j < e->n; j++)
				list_append(l, vals[k + j]);
			for (size_t j = 0; j < oldn; j++)
				val_decref(olditems[j]);
			free(olditems);
			val_decref(target);
			break;
		}
		}
		k += e->n;
	}
}

int trace_rebuild(const struct trace_result *r, struct vm *vm, struct frame *f, const value *sources,
		  const value *outputs, value *ret)
{
	/* the hit path of most functions: return a value, nothing else */
	if (r->end == TRACE_RETURN && r->neffects == 0) {
		const struct recipe *rr = &r->ret;
		value v;
		switch (rr->kind) {
		case RC_OUTPUT:
			v = outputs[rr->index];
			break;
		case RC_CONST:
			v = rr->v;
			break;
		case RC_SOURCE:
			v = sources[rr->index];
			if (val_is_err(v))
				goto general;
			break;
		default:
			goto general;
		}
		val_incref(v);
		*ret = v;
		return 0;
	}
general:;
	value small_memo[8];
	value *memo = r->nmemo <= 8 ? small_memo : util_malloc(sizeof(value) * (size_t)r->nmemo);
	int nvals = r->nlocals + r->nstack + 1;
	for (int i = 0; i < r->neffects; i++)
		nvals += 1 + r->effects[i].n;
	value small[32];
	value *vals = nvals <= 32 ? small : util_malloc(sizeof(value) * (size_t)nvals);
	if (!memo || !vals) {
		/* nothing changed yet: the frame runs in the VM */
		if (memo != small_memo)
			free(memo);
		if (vals != small)
			free(vals);
		tj_error_set("out of memory");
		return -1;
	}
	for (int i = 0; i < r->nmemo; i++)
		memo[i] = val_err();
	struct builder b = {vm, f, sources, outputs, memo};
	for (int i = 0; i < nvals; i++)
		vals[i] = val_none();
	int k = 0, rc = 0;
	bool ub;
	/* 1. every value, before anything changes */
	for (int i = 0; i < r->neffects && rc == 0; i++) {
		const struct effect *e = &r->effects[i];
		vals[k] = build(&b, &e->value, NULL);
		if (val_is_err(vals[k]))
			rc = -1;
		k++;
		for (int j = 0; j < e->n && rc == 0; j++, k++) {
			vals[k] = build(&b, &e->items[j], NULL);
			if (val_is_err(vals[k]))
				rc = -1;
		}
		if (rc == 0 && (e->kind == EF_LIST || e->kind == EF_LIST_APPEND) && vals[k - 1 - e->n].tag != VAL_LIST) {
			tj_error_set("a list went missing");
			rc = -1;
		}
	}
	int first_frame = k;
	if (rc == 0 && r->end == TRACE_RETURN) {
		vals[k] = build(&b, &r->ret, NULL);
		if (val_is_err(vals[k]))
			rc = -1;
		k++;
	} else if (rc == 0) {
		for (int i = 0; i < r->nlocals && rc == 0; i++, k++) {
			vals[k] = build(&b, &r->locals[i], &ub);
			if (val_is_err(vals[k]) && !ub)
				rc = -1;
		}
		for (int i = 0; i < r->nstack && rc == 0; i++, k++) {
			vals[k] = build(&b, &r->stack[i], &ub);
			if (val_is_err(vals[k]))
				rc = -1;
		}
	}
	if (rc < 0) {
		for (int i = 0; i < nvals; i++)
			val_decref(vals[i]);
		goto out;
	}
	/* 2. the side effects */
	replay_effects(r, vm, f, vals);
	/* 3. the frame */
	if (r->end == TRACE_RETURN) {
		*ret = vals[first_frame];
	} else {
		for (int i = 0; i < r->nlocals; i++) {
			value old = f->locals[i];
			f->locals[i] = vals[first_frame + i];
			val_decref(old);
		}
		for (value *p = f->stack; p < f->sp; p++)
			val_decref(*p);
		for (int i = 0; i < r->nstack; i++)
			f->stack[i] = vals[first_frame + r->nlocals + i];
		f->sp = f->stack + r->nstack;
		f->pc = (uint32_t)r->pc;
	}
out:
	for (int i = 0; i < r->nmemo; i++)
		val_decref(memo[i]);
	if (memo != small_memo)
		free(memo);
	if (vals != small)
		free(vals);
	return rc;
}
