/* value.c - tj values: heap objects, strings, containers, and printing
 * them as Python prints them. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builtin.h"
#include "code.h"
#include "dtype.h"
#include "error.h"
#include "hash.h"
#include "value.h"
#include "util.h"
#include "vm.h"

/* Free lists for the small objects that loops make and drop at a high
 * rate: iterators and bound methods (xs.append in a loop). */
#define FREE_LIST_MAX 64
struct free_list {
	void *items[FREE_LIST_MAX];
	int n;
};
static struct free_list bound_free, iter_free;

static void fl_release(struct free_list *fl, void *p)
{
	if (fl->n < FREE_LIST_MAX)
		fl->items[fl->n++] = p;
	else
		free(p);
}

static void *obj_alloc(size_t size);

static void *fl_alloc(struct free_list *fl, size_t size)
{
	if (fl->n) {
		struct obj *o = fl->items[--fl->n];
		o->rc = 1;
		o->flags = 0;
		return o;
	}
	return obj_alloc(size);
}

static void *obj_alloc(size_t size)
{
	struct obj *o = xmalloc(size);
	o->rc = 1;
	o->flags = 0;
	return o;
}

/* ---- freeing ---- */

static void obj_free_now(value v);
static void closure_untrack(struct func *f);

/* Freeing a container frees what it holds, which may be containers: past a
 * small depth, objects wait in a list that the outermost call drains, so
 * that a deeply nested structure cannot overflow the C stack. */
#define FREE_DEPTH_MAX 64
static int free_depth;
static struct {
	value *items;
	size_t n, cap;
} free_pending;

void obj_free(value v)
{
	if (free_depth >= FREE_DEPTH_MAX) {
		if (free_pending.n == free_pending.cap) {
			free_pending.cap = free_pending.cap ? free_pending.cap * 2 : 256;
			free_pending.items = xrealloc(free_pending.items, free_pending.cap * sizeof(value));
		}
		free_pending.items[free_pending.n++] = v;
		return;
	}
	free_depth++;
	obj_free_now(v);
	free_depth--;
	if (free_depth == 0) {
		while (free_pending.n) {
			value d = free_pending.items[--free_pending.n];
			free_depth++;
			obj_free_now(d);
			free_depth--;
		}
		if (free_pending.cap > 4096) {
			free(free_pending.items);
			free_pending.items = NULL;
			free_pending.cap = 0;
		}
	}
}

static void obj_free_now(value v)
{
	switch ((value_tag)v.tag) {
	case VAL_STR:
	case VAL_RANGE:
	case VAL_BUILTIN:
		free(v.o);
		break;
	case VAL_LIST: {
		struct list *l = val_list(v);
		for (size_t i = 0; i < l->len; i++)
			val_decref(l->items[i]);
		free(l->items);
		free(l);
		break;
	}
	case VAL_TUPLE: {
		struct tuple *t = val_tuple(v);
		for (size_t i = 0; i < t->len; i++)
			val_decref(t->items[i]);
		free(t);
		break;
	}
	case VAL_SLICE: {
		struct slice *s = val_slice(v);
		val_decref(s->start);
		val_decref(s->stop);
		val_decref(s->step);
		free(s);
		break;
	}
	case VAL_FUNC: {
		struct func *f = val_func(v);
		closure_untrack(f);
		val_decref(val_obj(VAL_CODE, f->code));
		val_decref(f->defaults);
		val_decref(f->closure);
		free(f);
		break;
	}
	case VAL_BOUND: {
		struct bound *b = (struct bound *)v.o;
		val_decref(b->self);
		val_decref(b->fn);
		fl_release(&bound_free, b);
		break;
	}
	case VAL_CELL: {
		struct cell *c = val_cell(v);
		val_decref(c->v);
		free(c);
		break;
	}
	case VAL_ITER: {
		struct iter *it = val_iter(v);
		val_decref(it->seq);
		fl_release(&iter_free, it);
		break;
	}
	case VAL_CODE:
		code_free(val_code(v));
		break;
	case VAL_TENSOR:
		vm_tensor_hooks->free((struct tensor *)v.o);
		break;
	case VAL_OBJECT: {
		struct object *o = (struct object *)v.o;
		if (o->type->free)
			o->type->free(v.o);
		else
			free(o);
		break;
	}
	default:
		break;
	}
}

/* ---- strings ---- */

value str_new(const char *s, size_t len)
{
	struct str *r = obj_alloc(sizeof(struct str) + len + 1);
	r->len = len;
	if (len)
		memcpy(r->data, s, len);
	r->data[len] = '\0';
	return str_finish(r);
}

struct str *str_alloc(size_t len)
{
	if (len > SIZE_MAX - sizeof(struct str) - 1)
		return NULL;
	struct str *r = util_malloc(sizeof(struct str) + len + 1);
	if (!r)
		return NULL;
	r->hdr.rc = 1;
	r->hdr.flags = 0;
	r->len = len;
	r->data[len] = '\0';
	return r;
}

value str_finish(struct str *r)
{
	size_t len = r->len;
	r->hash = hash_fnv1a(r->data, len);
	bool ascii = true;
	for (size_t i = 0; i < len; i++) {
		if ((unsigned char)r->data[i] >= 0x80) {
			ascii = false;
			break;
		}
	}
	r->hdr.flags = ascii ? STR_ASCII : 0;
	return val_obj(VAL_STR, r);
}

value str_from_cstr(const char *s)
{
	return str_new(s, strlen(s));
}

bool str_eq_cstr(const struct str *a, const char *s)
{
	size_t n = strlen(s);
	return a->len == n && memcmp(a->data, s, n) == 0;
}

size_t str_char_count(const struct str *s)
{
	if (s->hdr.flags & STR_ASCII)
		return s->len;
	size_t n = 0;
	for (size_t i = 0; i < s->len; i++)
		n += ((unsigned char)s->data[i] & 0xC0) != 0x80;
	return n;
}

static struct {
	struct str **slots;
	size_t cap, n;
} interned;

value str_intern(const char *s, size_t len)
{
	uint64_t h = hash_fnv1a(s, len);
	if (interned.n * 2 >= interned.cap) {
		size_t ncap = interned.cap ? interned.cap * 2 : 256;
		struct str **ns = calloc(ncap, sizeof(*ns));
		if (!ns)
			util_oom(); /* as every value constructor (xmalloc): see doc/internals.md */
		for (size_t i = 0; i < interned.cap; i++) {
			struct str *e = interned.slots[i];
			if (!e)
				continue;
			size_t j = e->hash & (ncap - 1);
			while (ns[j])
				j = (j + 1) & (ncap - 1);
			ns[j] = e;
		}
		free(interned.slots);
		interned.slots = ns;
		interned.cap = ncap;
	}
	size_t j = h & (interned.cap - 1);
	for (;;) {
		struct str *e = interned.slots[j];
		if (!e)
			break;
		if (e->hash == h && e->len == len && memcmp(e->data, s, len) == 0) {
			e->hdr.rc++;
			return val_obj(VAL_STR, e);
		}
		j = (j + 1) & (interned.cap - 1);
	}
	value v = str_new(s, len);
	val_str(v)->hdr.rc++; /* the table's reference */
	interned.slots[j] = val_str(v);
	interned.n++;
	return v;
}

/* ---- lists and tuples ---- */

value list_new(size_t cap)
{
	struct list *l = obj_alloc(sizeof(*l));
	l->len = 0;
	l->cap = cap;
	l->items = cap ? xmalloc(cap * sizeof(value)) : NULL;
	return val_obj(VAL_LIST, l);
}

void list_append(struct list *l, value v)
{
	if (l->len == l->cap) {
		l->cap = l->cap < 4 ? 4 : l->cap * 2;
		l->items = xrealloc(l->items, l->cap * sizeof(value));
	}
	l->items[l->len++] = v;
}

value tuple_new(size_t len)
{
	struct tuple *t = obj_alloc(sizeof(*t) + len * sizeof(value));
	t->len = len;
	for (size_t i = 0; i < len; i++)
		t->items[i] = val_none();
	return val_obj(VAL_TUPLE, t);
}

value tuple_pack(size_t n, const value *items)
{
	value v = tuple_new(n);
	struct tuple *t = val_tuple(v);
	for (size_t i = 0; i < n; i++) {
		val_incref(items[i]);
		t->items[i] = items[i];
	}
	return v;
}

/* ---- slices, ranges, cells, iterators ---- */

value slice_new(value start, value stop, value step)
{
	struct slice *s = obj_alloc(sizeof(*s));
	val_incref(start);
	val_incref(stop);
	val_incref(step);
	s->start = start;
	s->stop = stop;
	s->step = step;
	return val_obj(VAL_SLICE, s);
}

static int slice_part(value v, bool *given, int64_t *out)
{
	*given = false;
	if (v.tag == VAL_NONE)
		return 0;
	if (v.tag == VAL_INT) {
		*out = v.i;
	} else if (v.tag == VAL_BOOL) {
		*out = v.b;
	} else {
		tj_error_set("slice indices must be integers or None or have an __index__ method");
		return -1;
	}
	*given = true;
	return 0;
}

int slice_indices(const struct slice *s, int64_t len, int64_t *pstart, int64_t *pstop,
		  int64_t *pstep, int64_t *pcount)
{
	bool has_start, has_stop, has_step;
	int64_t start = 0, stop = 0, step = 1;
	if (slice_part(s->start, &has_start, &start) < 0 || slice_part(s->stop, &has_stop, &stop) < 0 ||
	    slice_part(s->step, &has_step, &step) < 0)
		return -1;
	if (!has_step)
		step = 1;
	if (step == 0) {
		tj_error_set("slice step cannot be zero");
		return -1;
	}
	if (step < -INT64_MAX)
		step = -INT64_MAX;
	int64_t lower = step < 0 ? -1 : 0, upper = step < 0 ? len - 1 : len;
	if (!has_start) {
		start = step < 0 ? upper : lower;
	} else if (start < 0) {
		start = start < -len ? lower : start + len;
		if (start < lower)
			start = lower;
	} else if (start > upper) {
		start = upper;
	}
	if (!has_stop) {
		stop = step < 0 ? lower : upper;
	} else if (stop < 0) {
		stop = stop < -len ? lower : stop + len;
		if (stop < lower)
			stop = lower;
	} else if (stop > upper) {
		stop = upper;
	}
	int64_t count = 0;
	if (step > 0 && stop > start)
		count = (int64_t)(((uint64_t)stop - (uint64_t)start - 1) / (uint64_t)step + 1);
	else if (step < 0 && start > stop)
		count = (int64_t)(((uint64_t)start - (uint64_t)stop - 1) / (uint64_t)(-step) + 1);
	*pstart = start;
	*pstop = stop;
	*pstep = step;
	*pcount = count;
	return 0;
}

value range_new(int64_t start, int64_t stop, int64_t step)
{
	struct range *r = obj_alloc(sizeof(*r));
	r->start = start;
	r->stop = stop;
	r->step = step ? step : 1;
	__int128 n = 0;
	if (r->step > 0 && stop > start)
		n = ((__int128)stop - start - 1) / r->step + 1;
	else if (r->step < 0 && start > stop)
		n = ((__int128)start - stop - 1) / -(__int128)r->step + 1;
	r->len = n > INT64_MAX ? INT64_MAX : (int64_t)n;
	return val_obj(VAL_RANGE, r);
}

value cell_new(value v)
{
	struct cell *c = obj_alloc(sizeof(*c));
	val_incref(v);
	c->v = v;
	return val_obj(VAL_CELL, c);
}

value iter_new(enum iter_kind kind, value seq)
{
	struct iter *it = fl_alloc(&iter_free, sizeof(*it));
	it->kind = kind;
	it->i = it->n = it->step = 0;
	val_incref(seq);
	it->seq = seq;
	return val_obj(VAL_ITER, it);
}

/* ---- user functions (vm.h); builtin_new and bound_new live in args.c ---- */

value bound_new_fast(value self, value fn)
{
	struct bound *b = fl_alloc(&bound_free, sizeof(*b));
	val_incref(self);
	val_incref(fn);
	b->self = self;
	b->fn = fn;
	return val_obj(VAL_BOUND, b);
}

/* ---- closure cycles ----
 * Every function with a non-empty closure is tracked. func_collect_cycles
 * runs CPython's trial deletion on the graph of those functions, their
 * closure tuples and the cells in them: a node whose count exceeds the
 * references from inside the graph is held from outside; what such nodes
 * do not reach is garbage, and emptying its cells frees it. */
#define GC_UNTRACKED UINT32_MAX
static struct {
	struct func **items;
	size_t n, cap;
} closures;

static size_t closures_collect_at = 4096;

static void closure_track(struct func *f)
{
	if (closures.n >= closures_collect_at) {
		/* a program that keeps making recursive closures: collect as it
		 * goes, at amortized constant cost */
		func_collect_cycles();
		closures_collect_at = closures.n * 2 > 4096 ? closures.n * 2 : 4096;
	}
	if (closures.n == closures.cap) {
		closures.cap = closures.cap ? closures.cap * 2 : 64;
		closures.items = xrealloc(closures.items, closures.cap * sizeof(*closures.items));
	}
	f->gc_index = (uint32_t)closures.n;
	closures.items[closures.n++] = f;
}

static void closure_untrack(struct func *f)
{
	if (f->gc_index == GC_UNTRACKED)
		return;
	struct func *last = closures.items[--closures.n];
	closures.items[f->gc_index] = last;
	last->gc_index = f->gc_index;
	f->gc_index = GC_UNTRACKED;
	if (closures.n == 0) {
		free(closures.items);
		closures.items = NULL;
		closures.cap = 0;
	}
}

struct gc_node {
	struct obj *o;
	value_tag tag;
	int64_t gc;      /* rc minus references from inside the graph */
	bool reachable;
};

struct gc_graph {
	struct gc_node *nodes;
	size_t n, cap;
	size_t *slots;   /* open addressing: node index + 1, 0 = empty */
	size_t nslots;
};

static size_t gc_find(const struct gc_graph *g, const struct obj *o)
{
	size_t mask = g->nslots - 1;
	for (size_t j = ((uintptr_t)o >> 4) * 0x9e3779b97f4a7c15ull & mask;; j = (j + 1) & mask) {
		if (!g->slots[j] || g->nodes[g->slots[j] - 1].o == o)
			return j;
	}
}

static void gc_add(struct gc_graph *g, value v)
{
	if (v.tag != VAL_FUNC && v.tag != VAL_TUPLE && v.tag != VAL_CELL)
		return;
	if ((g->n + 1) * 2 > g->nslots) {
		/* keep the index at most half full: rebuild it bigger */
		free(g->slots);
		g->nslots = g->nslots ? g->nslots * 4 : 64;
		g->slots = calloc(g->nslots, sizeof(size_t));
		if (!g->slots)
			util_oom();
		for (size_t i = 0; i < g->n; i++)
			g->slots[gc_find(g, g->nodes[i].o)] = i + 1;
	}
	size_t j = gc_find(g, v.o);
	if (g->slots[j])
		return;
	if (g->n == g->cap) {
		g->cap = g->cap ? g->cap * 2 : 64;
		g->nodes = xrealloc(g->nodes, g->cap * sizeof(*g->nodes));
	}
	g->nodes[g->n] = (struct gc_node){v.o, (value_tag)v.tag, v.o->rc, false};
	g->slots[j] = ++g->n;
}

static struct gc_node *gc_node_of(struct gc_graph *g, value v)
{
	if (v.tag != VAL_FUNC && v.tag != VAL_TUPLE && v.tag != VAL_CELL)
		return NULL;
	size_t j = gc_find(g, v.o);
	return g->slots[j] ? &g->nodes[g->slots[j] - 1] : NULL;
}

/* the references a node holds to other nodes: calls fn on each */
static void gc_edges(struct gc_graph *g, struct gc_node *nd, void (*fn)(struct gc_graph *, value))
{
	switch (nd->tag) {
	case VAL_FUNC:
		fn(g, ((struct func *)nd->o)->closure);
		break;
	case VAL_TUPLE: {
		struct tuple *t = (struct tuple *)nd->o;
		for (size_t i = 0; i < t->len; i++)
			fn(g, t->items[i]);
		break;
	}
	case VAL_CELL:
		fn(g, ((struct cell *)nd->o)->v);
		break;
	default:
		break;
	}
}

static void gc_subtract(struct gc_graph *g, value v)
{
	struct gc_node *nd = gc_node_of(g, v);
	if (nd)
		nd->gc--;
}

static struct {
	size_t *items;
	size_t n, cap;
} gc_work;

static void gc_mark(struct gc_graph *g, value v)
{
	struct gc_node *nd = gc_node_of(g, v);
	if (!nd || nd->reachable)
		return;
	nd->reachable = true;
	if (gc_work.n == gc_work.cap) {
		gc_work.cap = gc_work.cap ? gc_work.cap * 2 : 64;
		gc_work.items = xrealloc(gc_work.items, gc_work.cap * sizeof(size_t));
	}
	gc_work.items[gc_work.n++] = (size_t)(nd - g->nodes);
}

void func_collect_cycles(void)
{
	if (!closures.n)
		return;
	/* nodes: the tracked functions, their closures, the cells in them
	 * (and functions found in those cells) */
	struct gc_graph g = {NULL, 0, 0, NULL, 0};
	for (size_t i = 0; i < closures.n; i++)
		gc_add(&g, val_obj(VAL_FUNC, closures.items[i]));
	for (size_t k = 0; k < g.n; k++)
		gc_edges(&g, &g.nodes[k], gc_add);
	for (size_t k = 0; k < g.n; k++)
		gc_edges(&g, &g.nodes[k], gc_subtract);
	gc_work.n = 0;
	for (size_t k = 0; k < g.n; k++)
		if (g.nodes[k].gc > 0)
			gc_mark(&g, val_obj(g.nodes[k].tag, g.nodes[k].o));
	while (gc_work.n) {
		size_t k = gc_work.items[--gc_work.n];
		gc_edges(&g, &g.nodes[k], gc_mark);
	}
	/* empty the unreachable cells, then drop what they held */
	value *drop = NULL;
	size_t ndrop = 0;
	for (size_t k = 0; k < g.n; k++) {
		struct gc_node *nd = &g.nodes[k];
		if (nd->reachable || nd->tag != VAL_CELL)
			continue;
		struct cell *c = (struct cell *)nd->o;
		if (c->v.tag < VAL_FIRST_HEAP)
			continue;
		drop = xrealloc(drop, (ndrop + 1) * sizeof(value));
		drop[ndrop++] = c->v;
		c->v = val_err();
	}
	free(g.slots);
	free(g.nodes);
	free(gc_work.items);
	gc_work.items = NULL;
	gc_work.cap = 0;
	for (size_t i = 0; i < ndrop; i++)
		val_decref(drop[i]);
	free(drop);
}

value func_new(struct code *code, value defaults, value closure)
{
	struct func *f = obj_alloc(sizeof(*f));
	code->hdr.rc++;
	val_incref(defaults);
	val_incref(closure);
	f->code = code;
	f->defaults = defaults;
	f->closure = closure;
	f->flags = 0;
	f->gc_index = GC_UNTRACKED;
	if (closure.tag == VAL_TUPLE && val_tuple(closure)->len)
		closure_track(f);
	return val_obj(VAL_FUNC, f);
}

/* ---- float repr: the shortest string that reads back as d, laid out by
 * Python's rules (float_repr_style 'short'): exponent form when the decimal
 * point is more than 16 digits right or 4 left of the first digit. */

void float_repr(double d, struct strbuf *out)
{
	if (isnan(d)) {
		sb_puts(out, "nan");
		return;
	}
	if (isinf(d)) {
		sb_puts(out, d < 0 ? "-inf" : "inf");
		return;
	}
	char buf[40];
	/* the shortest precision that round-trips; monotone, so bisect 1..17 */
	int lo = 1, hi = 17;
	while (lo < hi) {
		int mid = (lo + hi) / 2;
		snprintf(buf, sizeof(buf), "%.*e", mid - 1, d);
		if (strtod(buf, NULL) == d)
			hi = mid;
		else
			lo = mid + 1;
	}
	snprintf(buf, sizeof(buf), "%.*e", lo - 1, d);
	/* buf: [-]D[.DDD]e(+|-)XX */
	const char *p = buf;
	bool neg = false;
	if (*p == '-') {
		neg = true;
		p++;
	}
	char digits[24];
	int nd = 0;
	for (; *p && *p != 'e'; p++)
		if (*p != '.')
			digits[nd++] = *p;
	int exp10 = atoi(p + 1);
	while (nd > 1 && digits[nd - 1] == '0')
		nd--;
	if (nd == 1 && digits[0] == '0')
		exp10 = 0;
	int decpt = exp10 + 1; /* value = 0.DIGITS * 10^decpt */
	if (neg)
		sb_putc(out, '-');
	if (decpt <= -4 || decpt > 16) {
		sb_putc(out, digits[0]);
		if (nd > 1) {
			sb_putc(out, '.');
			sb_add(out, digits + 1, nd - 1);
		}
		int e = decpt - 1;
		sb_printf(out, "e%c%02d", e < 0 ? '-' : '+', e < 0 ? -e : e);
	} else if (decpt <= 0) {
		sb_puts(out, "0.");
		for (int i = 0; i < -decpt; i++)
			sb_putc(out, '0');
		sb_add(out, digits, nd);
	} else if (decpt >= nd) {
		sb_add(out, digits, nd);
		for (int i = nd; i < decpt; i++)
			sb_putc(out, '0');
		sb_puts(out, ".0");
	} else {
		sb_add(out, digits, decpt);
		sb_putc(out, '.');
		sb_add(out, digits + decpt, nd - decpt);
	}
}

/* ---- names of types ---- */

/* Types that have no tag of their own (iterators of each kind, the objects
 * of struct obj_type: ExplainOutput, GraphBreak, ...) get a pseudo-tag past
 * VAL_TAG_COUNT, one per name for the whole run, so that type(x) prints
 * their name and type(a) == type(b) compares them. */
#define MAX_EXTRA_TYPES 64
static const char *extra_type_names[MAX_EXTRA_TYPES];
static int n_extra_types;

static int64_t extra_type_tag(const char *name)
{
	for (int i = 0; i < n_extra_types; i++)
		if (strcmp(extra_type_names[i], name) == 0)
			return VAL_TAG_COUNT + i;
	if (n_extra_types == MAX_EXTRA_TYPES)
		return VAL_OBJECT;
	extra_type_names[n_extra_types] = name; /* static strings only */
	return VAL_TAG_COUNT + n_extra_types++;
}

value val_type_of(value v)
{
	value_tag t = (value_tag)v.tag;
	if (t == VAL_BOUND)
		t = VAL_BUILTIN;
	if (t == VAL_OBJECT || t == VAL_ITER) {
		const char *name = val_type_name(v);
		if (strcmp(name, "function") == 0)
			return val_type(VAL_FUNC); /* compiled and disabled functions (compiled_fn.c) */
		value r = val_type(VAL_OBJECT);
		r.i = extra_type_tag(name);
		return r;
	}
	return val_type(t);
}

const char *type_tag_name(value_tag t)
{
	if ((int64_t)t >= VAL_TAG_COUNT && (int64_t)t < VAL_TAG_COUNT + n_extra_types)
		return extra_type_names[(int64_t)t - VAL_TAG_COUNT];
	switch (t) {
	case VAL_NONE: return "NoneType";
	case VAL_BOOL: return "bool";
	case VAL_INT: return "int";
	case VAL_FLOAT: return "float";
	case VAL_DTYPE: return "dtype";
	case VAL_TYPE: return "type";
	case VAL_ERR: return "<error>";
	case VAL_STR: return "str";
	case VAL_LIST: return "list";
	case VAL_TUPLE: return "tuple";
	case VAL_SLICE: return "slice";
	case VAL_RANGE: return "range";
	case VAL_FUNC: return "function";
	case VAL_BUILTIN: return "builtin_function_or_method";
	case VAL_BOUND: return "builtin_function_or_method";
	case VAL_CELL: return "cell";
	case VAL_ITER: return "iterator";
	case VAL_CODE: return "code";
	case VAL_TENSOR: return "Tensor";
	case VAL_OBJECT: return "object";
	default: return "object";
	}
}

const char *val_type_name(value v)
{
	if (v.tag == VAL_OBJECT)
		return ((struct object *)v.o)->type->name;
	if (v.tag == VAL_ITER) {
		switch (val_iter(v)->kind) {
		case ITER_RANGE: return "range_iterator";
		case ITER_LIST: return "list_iterator";
		case ITER_TUPLE: return "tuple_iterator";
		case ITER_STR: return "str_iterator";
		case ITER_TENSOR: return "iterator";
		case ITER_ENUMERATE: return "enumerate";
		case ITER_ZIP: return "zip";
		}
	}
	return type_tag_name((value_tag)v.tag);
}

/* ---- repr and str ---- */

static void str_repr(const struct str *s, struct strbuf *out)
{
	bool has_sq = memchr(s->data, '\'', s->len) != NULL;
	bool has_dq = memchr(s->data, '"', s->len) != NULL;
	char q = has_sq && !has_dq ? '"' : '\'';
	sb_grow(out, s->len + 2);
	sb_putc(out, q);
	for (size_t i = 0; i < s->len; i++) {
		unsigned char c = (unsigned char)s->data[i];
		if (c == (unsigned char)q || c == '\\') {
			sb_putc(out, '\\');
			sb_putc(out, (char)c);
		} else if (c == '\n') {
			sb_puts(out, "\\n");
		} else if (c == '\t') {
			sb_puts(out, "\\t");
		} else if (c == '\r') {
			sb_puts(out, "\\r");
		} else if (c < 0x20 || c == 0x7f) {
			sb_printf(out, "\\x%02x", c);
		} else {
			sb_putc(out, (char)c);
		}
	}
	sb_putc(out, q);
}

/* Containers being printed: a cycle prints as [...] like Python, and so
 * does nesting deeper than REPR_DEPTH_MAX (where Python raises
 * RecursionError), so that printing cannot overflow the C stack. */
#define REPR_DEPTH_MAX 1000
static const void *repr_active[REPR_DEPTH_MAX];
static int repr_depth;

static void seq_repr(const value *items, size_t n, const char *open, const char *close,
		     bool one_comma, const void *self, struct strbuf *out)
{
	bool cycle = repr_depth >= REPR_DEPTH_MAX;
	for (int i = 0; i < repr_depth && !cycle; i++)
		cycle = repr_active[i] == self;
	if (cycle) {
		sb_puts(out, open);
		sb_puts(out, "...");
		sb_puts(out, close);
		return;
	}
	repr_active[repr_depth++] = self;
	sb_puts(out, open);
	for (size_t i = 0; i < n; i++) {
		if (i)
			sb_puts(out, ", ");
		val_repr(items[i], out);
	}
	if (one_comma && n == 1)
		sb_putc(out, ',');
	sb_puts(out, close);
	repr_depth--;
}

void val_repr(value v, struct strbuf *out)
{
	switch ((value_tag)v.tag) {
	case VAL_NONE:
		sb_puts(out, "None");
		break;
	case VAL_BOOL:
		sb_puts(out, v.b ? "True" : "False");
		break;
	case VAL_INT:
		sb_printf(out, "%lld", (long long)v.i);
		break;
	case VAL_FLOAT:
		float_repr(v.f, out);
		break;
	case VAL_DTYPE:
		sb_puts(out, v.i >= 0 && v.i < DT_COUNT ? dtype_name((dtype)v.i) : "dtype");
		break;
	case VAL_TYPE:
		sb_printf(out, "<class '%s'>", type_tag_name((value_tag)v.i));
		break;
	case VAL_ERR:
		sb_puts(out, "<error>");
		break;
	case VAL_STR:
		str_repr(val_str(v), out);
		break;
	case VAL_LIST: {
		struct list *l = val_list(v);
		seq_repr(l->items, l->len, "[", "]", false, l, out);
		break;
	}
	case VAL_TUPLE: {
		struct tuple *t = val_tuple(v);
		seq_repr(t->items, t->len, "(", ")", true, t, out);
		break;
	}
	case VAL_SLICE: {
		struct slice *s = val_slice(v);
		sb_puts(out, "slice(");
		val_repr(s->start, out);
		sb_puts(out, ", ");
		val_repr(s->stop, out);
		sb_puts(out, ", ");
		val_repr(s->step, out);
		sb_putc(out, ')');
		break;
	}
	case VAL_RANGE: {
		struct range *r = val_range(v);
		if (r->step == 1)
			sb_printf(out, "range(%lld, %lld)", (long long)r->start, (long long)r->stop);
		else
			sb_printf(out, "range(%lld, %lld, %lld)", (long long)r->start, (long long)r->stop,
				  (long long)r->step);
		break;
	}
	case VAL_FUNC:
		sb_printf(out, "<function %s>", val_func(v)->code->name);
		break;
	case VAL_BUILTIN:
		sb_printf(out, "<built-in function %s>", ((struct builtin *)v.o)->name);
		break;
	case VAL_BOUND: {
		struct bound *b = (struct bound *)v.o;
		const char *name = b->fn.tag == VAL_BUILTIN ? ((struct builtin *)b->fn.o)->name : "?";
		const char *dot = strrchr(name, '.');
		sb_printf(out, "<built-in method %s of %s object>", dot ? dot + 1 : name,
			  val_type_name(b->self));
		break;
	}
	case VAL_CELL:
		sb_puts(out, "<cell>");
		break;
	case VAL_ITER:
		sb_printf(out, "<%s object>", val_type_name(v));
		break;
	case VAL_CODE:
		sb_printf(out, "<code object %s>", val_code(v)->name);
		break;
	case VAL_TENSOR:
		vm_tensor_hooks->repr((const struct tensor *)v.o, out);
		break;
	case VAL_OBJECT: {
		struct object *o = (struct object *)v.o;
		if (o->type->repr)
			o->type->repr(v.o, out);
		else
			sb_printf(out, "<%s object>", o->type->name);
		break;
	}
	default:
		sb_puts(out, "<?>");
		break;
	}
}

void val_str_into(value v, struct strbuf *out)
{
	if (v.tag == VAL_STR)
		sb_add(out, val_str(v)->data, val_str(v)->len);
	else
		val_repr(v, out);
}

/* ---- equality ---- */

/* exact comparison of an int with a float: -1, 0, 1; 2 when d is nan */
int num_cmp_int_float(int64_t i, double d)
{
	if (isnan(d))
		return 2;
	if (d >= 9223372036854775808.0)
		return -1;
	if (d < -9223372036854775808.0)
		return 1;
	double fl = floor(d);
	int64_t k = (int64_t)fl;
	if (i < k)
		return -1;
	if (i > k)
		return 1;
	return d > fl ? -1 : 0;
}

static bool is_num(value v)
{
	return v.tag == VAL_INT || v.tag == VAL_BOOL || v.tag == VAL_FLOAT;
}

#define EQUAL_DEPTH_MAX 1000
static bool equal_rec(value a, value b, int depth, bool *too_deep);

bool val_equal(value a, value b)
{
	bool too_deep = false;
	return equal_rec(a, b, 0, &too_deep);
}

int val_equal_checked(value a, value b, bool *out)
{
	bool too_deep = false;
	*out = equal_rec(a, b, 0, &too_deep);
	if (too_deep) {
		tj_error_set("maximum recursion depth exceeded in comparison");
		return -1;
	}
	return 0;
}

static bool equal_rec(value a, value b, int depth, bool *too_deep)
{
	if (is_num(a) && is_num(b)) {
		if (a.tag == VAL_FLOAT && b.tag == VAL_FLOAT)
			return a.f == b.f;
		if (a.tag == VAL_FLOAT)
			return num_cmp_int_float(b.tag == VAL_BOOL ? b.b : b.i, a.f) == 0;
		if (b.tag == VAL_FLOAT)
			return num_cmp_int_float(a.tag == VAL_BOOL ? a.b : a.i, b.f) == 0;
		return (a.tag == VAL_BOOL ? a.b : a.i) == (b.tag == VAL_BOOL ? b.b : b.i);
	}
	if (a.tag != b.tag) {
		return false;
	}
	switch ((value_tag)a.tag) {
	case VAL_NONE:
		return true;
	case VAL_DTYPE:
	case VAL_TYPE:
		return a.i == b.i;
	case VAL_STR:
		return str_eq(val_str(a), val_str(b));
	case VAL_LIST:
	case VAL_TUPLE: {
		if (a.o == b.o)
			return true;
		size_t na, nb;
		const value *ia, *ib;
		if (a.tag == VAL_LIST) {
			na = val_list(a)->len, nb = val_list(b)->len;
			ia = val_list(a)->items, ib = val_list(b)->items;
		} else {
			na = val_tuple(a)->len, nb = val_tuple(b)->len;
			ia = val_tuple(a)->items, ib = val_tuple(b)->items;
		}
		if (na != nb)
			return false;
		if (depth >= EQUAL_DEPTH_MAX) {
			*too_deep = true;
			return false;
		}
		for (size_t i = 0; i < na; i++) {
			if (ia[i].tag >= VAL_FIRST_HEAP && ia[i].tag == ib[i].tag && ia[i].o == ib[i].o)
				continue;
			if (!equal_rec(ia[i], ib[i], depth + 1, too_deep))
				return false;
		}
		return true;
	}
	case VAL_SLICE: {
		struct slice *x = val_slice(a), *y = val_slice(b);
		return equal_rec(x->start, y->start, depth + 1, too_deep) &&
		       equal_rec(x->stop, y->stop, depth + 1, too_deep) &&
		       equal_rec(x->step, y->step, depth + 1, too_deep);
	}
	case VAL_RANGE: {
		struct range *x = val_range(a), *y = val_range(b);
		if (x->len != y->len)
			return false;
		if (x->len == 0)
			return true;
		if (x->start != y->start)
			return false;
		return x->len == 1 || x->step == y->step;
	}
	case VAL_BOUND: {
		struct bound *x = (struct bound *)a.o, *y = (struct bound *)b.o;
		return x->fn.o == y->fn.o && x->self.tag == y->self.tag &&
		       (x->self.tag >= VAL_FIRST_HEAP ? x->self.o == y->self.o : x->self.i == y->self.i);
	}
	default:
		return a.o == b.o;
	}
}
