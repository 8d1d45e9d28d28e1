/* guards.c - guard sources, the flat check list, guard and failure texts
 * (guards.h). */
#include "guards.h"

#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "builtin.h"
#include "code.h"
#include "util.h"
#include "vm.h"

struct guard_set *guards_new(void)
{
	return util_calloc(1, sizeof(struct guard_set));
}

/* grow_array, counted (util.h): false when out of memory */
static bool grow_counted(void **items, int *cap, int need, size_t size)
{
	if (need <= *cap)
		return true;
	int ncap = *cap ? *cap * 2 : 8;
	void *p = util_realloc(*items, (size_t)ncap * size);
	if (!p)
		return false;
	*items = p;
	*cap = ncap;
	return true;
}

static void guard_release(struct guard *g)
{
	val_decref(g->expect);
	free(g->text);
}

void guards_free(struct guard_set *gs)
{
	if (!gs)
		return;
	for (int i = 0; i < gs->nsources; i++) {
		val_decref(gs->sources[i].name);
		free(gs->sources[i].text);
	}
	free(gs->sources);
	for (int i = 0; i < gs->nguards; i++)
		guard_release(&gs->guards[i]);
	free(gs->guards);
	free(gs->scratch);
	free(gs->checks);
	free(gs);
}

/* ---- sources ---- */

int guards_source(struct guard_set *gs, enum source_kind kind, int parent, int index, const char *name)
{
	for (int i = 0; i < gs->nsources; i++) {
		const struct guard_source *s = &gs->sources[i];
		if (s->kind != kind)
			continue;
		if (kind == SRC_GLOBAL) {
			if (name && str_eq_cstr(val_str(s->name), name))
				return i;
		} else if (s->parent == parent && s->index == index) {
			return i;
		}
	}
	if (!grow_counted((void **)&gs->sources, &gs->srccap, gs->nsources + 1, sizeof *gs->sources))
		return -1;
	struct guard_source *s = &gs->sources[gs->nsources];
	memset(s, 0, sizeof *s);
	s->kind = (uint8_t)kind;
	s->parent = parent;
	s->index = index;
	s->name = val_none();
	struct strbuf sb = STRBUF_INIT;
	switch (kind) {
	case SRC_LOCAL:
	case SRC_CELL:
		sb_printf(&sb, "L['%s']", name ? name : "?");
		break;
	case SRC_STACK:
		sb_printf(&sb, "L['___stack%d']", index);
		break;
	case SRC_GLOBAL:
		s->name = str_intern(name, strlen(name));
		sb_printf(&sb, "G['%s']", name);
		break;
	case SRC_ITEM:
		sb_printf(&sb, "%s[%d]", gs->sources[parent].text, index);
		break;
	case SRC_CLOSURE:
		sb_printf(&sb, "%s.__closure__[%d].cell_contents", gs->sources[parent].text, index);
		break;
	case SRC_GRAD:
		sb_printf(&sb, "%s.grad", gs->sources[parent].text);
		break;
	case SRC_SELF:
		sb_printf(&sb, "%s.__self__", gs->sources[parent].text);
		break;
	case SRC_FUNC:
		sb_printf(&sb, "%s.__func__", gs->sources[parent].text);
		break;
	}
	s->text = sb_detach(&sb);
	return gs->nsources++;
}

const char *guards_source_text(const struct guard_set *gs, int source)
{
	return source >= 0 && source < gs->nsources ? gs->sources[source].text : "?";
}

/* ---- building ---- */

const char *guards_kind_name(enum guard_kind k)
{
	switch (k) {
	case GK_BACKEND: return "backend";
	case GK_TYPE: return "type";
	case GK_EQUALS: return "equals";
	case GK_LENGTH: return "length";
	case GK_DTYPE:
	case GK_SHAPE:
	case GK_REQUIRES_GRAD: return "tensor";
	case GK_ID:
	case GK_CODE:
	case GK_ALIAS: return "id";
	case GK_DIM: return "tensor";
	}
	return "?";
}

static void format_shape_sym(struct strbuf *sb, int ndim, const int64_t *shape, const int *syms)
{
	sb_putc(sb, '(');
	for (int i = 0; i < ndim; i++) {
		if (i)
			sb_puts(sb, ", ");
		if (syms && shape[i] < 0)
			sb_printf(sb, "s%d", syms[i]);
		else
			sb_printf(sb, "%lld", (long long)shape[i]);
	}
	if (ndim == 1)
		sb_putc(sb, ',');
	sb_putc(sb, ')');
}

static void format_shape(struct strbuf *sb, int ndim, const int64_t *shape)
{
	format_shape_sym(sb, ndim, shape, NULL);
}

/* how an object shows in an id guard: <function f at prog.tj:3> */
static void format_object(struct strbuf *sb, value v)
{
	if (v.tag == VAL_FUNC) {
		const struct code *c = val_func(v)->code;
		sb_printf(sb, "<function %s", c->name);
		if (c->src)
			sb_printf(sb, " at %s:%d", c->src->path, c->firstline);
		sb_putc(sb, '>');
		return;
	}
	val_repr(v, sb);
}

static const char *type_name_of_tag(int64_t tag, const void *obj_type)
{
	if (tag == VAL_OBJECT && obj_type)
		return ((const struct obj_type *)obj_type)->name;
	if (tag == VAL_NONE)
		return "NoneType";
	if (tag == VAL_TENSOR)
		return "Tensor";
	value v = {.tag = (uint8_t)tag};
	v.i = 0;
	if (tag >= VAL_FIRST_HEAP)
		return type_tag_name((value_tag)tag);
	return val_type_name(v);
}

static char *guard_text(const struct guard_set *gs, const struct guard *g)
{
	struct strbuf sb = STRBUF_INIT;
	const char *s = g->source >= 0 ? guards_source_text(gs, g->source) : "";
	switch ((enum guard_kind)g->kind) {
	case GK_BACKEND:
		sb_printf(&sb, "backend == '%s'", g->backend ? g->backend->name : "?");
		break;
	case GK_TYPE:
		sb_printf(&sb, "type(%s) is %s", s, type_name_of_tag(g->n, g->obj_type));
		break;
	case GK_EQUALS:
		if (g->expect.tag == VAL_NONE) {
			sb_printf(&sb, "%s is None", s);
		} else {
			sb_printf(&sb, "%s == ", s);
			val_repr(g->expect, &sb);
		}
		break;
	case GK_LENGTH:
		sb_printf(&sb, "len(%s) == %lld", s, (long long)g->n);
		break;
	case GK_DTYPE:
		sb_printf(&sb, "%s.dtype == %s", s, dtype_name((dtype)g->n));
		break;
	case GK_SHAPE:
		sb_printf(&sb, "%s.shape == ", s);
		format_shape_sym(&sb, g->ndim, g->shape, g->dimsym);
		break;
	case GK_DIM:
		if (g->ndim < 0)
			sb_printf(&sb, "%s.shape[%lld] >= 2", s, (long long)g->n);
		else
			sb_printf(&sb, "%s.shape[%lld] == s%d", s, (long long)g->n, g->dimsym[0]);
		break;
	case GK_REQUIRES_GRAD:
		sb_printf(&sb, "%s.requires_grad == %s", s, g->n ? "True" : "False");
		break;
	case GK_ID:
		sb_printf(&sb, "%s is ", s);
		format_object(&sb, g->expect);
		break;
	case GK_CODE: {
		const struct code *c = val_code(g->expect);
		sb_printf(&sb, "%s.__code__ is <code %s", s, c->name);
		if (c->src)
			sb_printf(&sb, " at %s:%d", c->src->path, c->firstline);
		sb_putc(&sb, '>');
		break;
	}
	case GK_ALIAS:
		sb_printf(&sb, "%s is %s%s", s, g->expect.b ? "" : "not ", guards_source_text(gs, (int)g->n));
		break;
	}
	return sb_detach(&sb);
}

int guards_add(struct guard_set *gs, const struct guard *g)
{
	if (!grow_counted((void **)&gs->guards, &gs->cap, gs->nguards + 1, sizeof *gs->guards)) {
		val_decref(g->expect);
		return -1;
	}
	struct guard *d = &gs->guards[gs->nguards];
	*d = *g;
	d->text = guard_text(gs, d);
	return gs->nguards++;
}

void guards_retext(struct guard_set *gs, int i)
{
	struct guard *g = &gs->guards[i];
	free(g->text);
	g->text = guard_text(gs, g);
}

void guards_truncate(struct guard_set *gs, int n)
{
	while (gs->nguards > n)
		guard_release(&gs->guards[--gs->nguards]);
}

int guards_finish(struct guard_set *gs)
{
	free(gs->scratch);
	free(gs->checks);
	gs->scratch = util_calloc((size_t)(gs->nsources ? gs->nsources : 1), sizeof(value));
	gs->checks = util_calloc((size_t)(gs->nguards ? gs->nguards : 1), sizeof *gs->checks);
	if (!gs->scratch || !gs->checks)
		return -1;
	gs->nchecks = 0;
	for (int i = 0; i < gs->nguards; i++) {
		const struct guard *g = &gs->guards[i];
		bool tensor_fact = g->kind == GK_DTYPE || g->kind == GK_SHAPE || g->kind == GK_REQUIRES_GRAD;
		struct guard_check *c = NULL;
		if (tensor_fact && gs->nchecks) {
			/* the facts of one tensor that follow each other make one check */
			struct guard_check *prev = &gs->checks[gs->nchecks - 1];
			if (prev->kind == GK_DTYPE && prev->source == g->source)
				c = prev;
		}
		if (!c) {
			c = &gs->checks[gs->nchecks++];
			c->kind = tensor_fact ? GK_DTYPE : g->kind;
			c->source = g->source;
			c->dt = c->ndim = c->rg = -1;
			c->g = g;
		}
		if (g->kind == GK_DTYPE)
			c->dt = (int8_t)g->n;
		else if (g->kind == GK_SHAPE)
			c->ndim = (int8_t)g->ndim, c->shape = g->shape;
		else if (g->kind == GK_REQUIRES_GRAD)
			c->rg = (int8_t)(g->n != 0);
	}
	return 0;
}

/* ---- checking ---- */

static value resolve_one(const struct guard_set *gs, const struct guard_source *s, struct vm *vm,
			 const struct frame *f)
{
	switch ((enum source_kind)s->kind) {
	case SRC_LOCAL:
		return s->index < f->code->nlocals ? f->locals[s->index] : val_err();
	case SRC_STACK:
		return f->stack + s->index < f->sp ? f->stack[s->index] : val_err();
	case SRC_CELL: {
		if (s->index >= f->code->ncellvars + f->code->nfreevars)
			return val_err();
		value c = f->cells[s->index];
		return c.tag == VAL_CELL ? val_cell(c)->v : val_err();
	}
	case SRC_GLOBAL:
		return vm_lookup_name(vm, val_str(s->name));
	case SRC_ITEM: {
		value p = gs->scratch[s->parent];
		if (p.tag == VAL_LIST)
			return (size_t)s->index < val_list(p)->len ? val_list(p)->items[s->index] : val_err();
		if (p.tag == VAL_TUPLE)
			return (size_t)s->index < val_tuple(p)->len ? val_tuple(p)->items[s->index] : val_err();
		return val_err();
	}
	case SRC_CLOSURE: {
		value p = gs->scratch[s->parent];
		if (p.tag != VAL_FUNC)
			return val_err();
		value cl = val_func(p)->closure;
		if (cl.tag != VAL_TUPLE || (size_t)s->index >= val_tuple(cl)->len)
			return val_err();
		value c = val_tuple(cl)->items[s->index];
		return c.tag == VAL_CELL ? val_cell(c)->v : val_err();
	}
	case SRC_GRAD: {
		value p = gs->scratch[s->parent];
		if (p.tag != VAL_TENSOR)
			return val_err();
		tensor *g = val_as_tensor(p)->grad;
		return g ? val_tensor(g) : val_none();
	}
	case SRC_SELF: {
		value p = gs->scratch[s->parent];
		return p.tag == VAL_BOUND ? ((struct bound *)p.o)->self : val_err();
	}
	case SRC_FUNC: {
		value p = gs->scratch[s->parent];
		return p.tag == VAL_BOUND ? ((struct bound *)p.o)->fn : val_err();
	}
	}
	return val_err();
}

void guards_resolve(const struct guard_set *gs, struct vm *vm, const struct frame *f)
{
	for (int i = 0; i < gs->nsources; i++)
		gs->scratch[i] = resolve_one(gs, &gs->sources[i], vm, f);
}

static bool type_matches(const struct guard *g, value v)
{
	if (v.tag != g->n)
		return false;
	return v.tag != VAL_OBJECT || !g->obj_type || ((struct object *)v.o)->type == g->obj_type;
}

static bool same_value(value a, value b)
{
	if (a.tag != b.tag)
		return false;
	switch ((value_tag)a.tag) {
	case VAL_NONE:
		return true;
	case VAL_BOOL:
		return a.b == b.b;
	case VAL_INT:
	case VAL_DTYPE:
	case VAL_TYPE:
		return a.i == b.i;
	case VAL_FLOAT:
		return memcmp(&a.f, &b.f, sizeof a.f) == 0 || (a.f != a.f && b.f != b.f);
	case VAL_STR:
		return str_eq(val_str(a), val_str(b));
	case VAL_RANGE: {
		const struct range *x = val_range(a), *y = val_range(b);
		return x->start == y->start && x->stop == y->stop && x->step == y->step;
	}
	default:
		return a.o == b.o;
	}
}

static bool check_one(const struct guard *g, value v, const struct backend *backend)
{
	switch ((enum guard_kind)g->kind) {
	case GK_BACKEND:
		return g->backend == backend;
	case GK_TYPE:
		return type_matches(g, v);
	case GK_EQUALS:
		return same_value(v, g->expect);
	case GK_LENGTH:
		if (v.tag == VAL_LIST)
			return (int64_t)val_list(v)->len == g->n;
		if (v.tag == VAL_TUPLE)
			return (int64_t)val_tuple(v)->len == g->n;
		return false;
	case GK_DTYPE:
		return v.tag == VAL_TENSOR && val_as_tensor(v)->dt == g->n;
	case GK_SHAPE: {
		if (v.tag != VAL_TENSOR)
			return false;
		const tensor *t = val_as_tensor(v);
		if (t->ndim != g->ndim)
			return false;
		for (int i = 0; i < g->ndim; i++)
			if (g->shape[i] >= 0 && t->shape[i] != g->shape[i])
				return false;
		return true;
	}
	case GK_DIM:
		return false; /* checked with both values: check_dim */
	case GK_REQUIRES_GRAD:
		return v.tag == VAL_TENSOR && val_as_tensor(v)->requires_grad == (g->n != 0);
	case GK_ID:
		return v.tag == g->expect.tag && v.o == g->expect.o;
	case GK_CODE:
		return v.tag == VAL_FUNC && val_func(v)->code == val_code(g->expect);
	case GK_ALIAS:
		return false; /* checked with both values: check_alias */
	}
	return false;
}

static bool same_object(value a, value b)
{
	return a.tag == b.tag && (a.tag >= VAL_FIRST_HEAP ? a.o == b.o : a.i == b.i);
}

static bool check_alias(const struct guard_set *gs, const struct guard *g)
{
	value a = gs->scratch[g->source], b = gs->scratch[g->n];
	if (val_is_err(a) || val_is_err(b))
		return false;
	return same_object(a, b) == g->expect.b;
}

static bool check_dim(const struct guard_set *gs, const struct guard *g)
{
	value a = gs->scratch[g->source];
	if (a.tag != VAL_TENSOR || val_as_tensor(a)->ndim <= g->n)
		return false;
	int64_t x = val_as_tensor(a)->shape[g->n];
	if (g->ndim < 0)
		return x >= 2;
	value b = gs->scratch[g->ndim];
	if (b.tag != VAL_TENSOR || val_as_tensor(b)->ndim <= g->shape[0])
		return false;
	return x == val_as_tensor(b)->shape[g->shape[0]];
}

static bool tensor_check(const struct guard_check *c, value v)
{
	if (v.tag != VAL_TENSOR)
		return false;
	const tensor *t = val_as_tensor(v);
	if (c->dt >= 0 && t->dt != c->dt)
		return false;
	if (c->rg >= 0 && t->requires_grad != (c->rg != 0))
		return false;
	if (c->ndim >= 0) {
		if (t->ndim != c->ndim)
			return false;
		for (int i = 0; i < c->ndim; i++)
			if (c->shape[i] >= 0 && t->shape[i] != c->shape[i])
				return false;
	}
	return true;
}

int guards_check_resolved(const struct guard_set *gs, const struct backend *backend)
{
	const struct guard_check *c = gs->checks;
	int i;
	for (i = 0; i < gs->nchecks; i++, c++) {
		value v = c->source >= 0 ? gs->scratch[c->source] : val_none();
		bool ok = c->kind == GK_DTYPE ? tensor_check(c, v)
			  : c->kind == GK_ALIAS ? check_alias(gs, c->g)
			  : c->kind == GK_DIM	? check_dim(gs, c->g)
						: check_one(c->g, v, backend);
		if (!ok)
			break;
	}
	if (i == gs->nchecks)
		return -1;
	/* a miss: which guard, exactly */
	const struct guard *g = gs->guards;
	for (i = 0; i < gs->nguards; i++, g++) {
		value v = g->source >= 0 ? gs->scratch[g->source] : val_none();
		bool ok = g->kind == GK_ALIAS ? check_alias(gs, g)
			  : g->kind == GK_DIM	? check_dim(gs, g)
						: check_one(g, v, backend);
		if (!ok)
			return i;
	}
	return -1;
}

int guards_check(const struct guard_set *gs, struct vm *vm, const struct frame *f, const struct backend *backend)
{
	guards_resolve(gs, vm, f);
	return guards_check_resolved(gs, backend);
}

/* ---- failures ---- */

static void type_of(struct strbuf *sb, value v)
{
	if (val_is_err(v))
		sb_puts(sb, "<missing>");
	else
		sb_puts(sb, v.tag == VAL_NONE ? "NoneType" : val_type_name(v));
}

void guards_failure(const struct guard_set *gs, int i, const struct backend *backend, char **text,
		    char **value_seen)
{
	const struct guard *g = &gs->guards[i];
	value v = g->source >= 0 ? gs->scratch[g->source] : val_none();
	const char *s = g->source >= 0 ? guards_source_text(gs, g->source) : "";
	struct strbuf t = STRBUF_INIT, seen = STRBUF_INIT;
	bool done = false;
	if (val_is_err(v) && g->kind != GK_BACKEND) {
		sb_puts(&t, g->text);
		sb_puts(&seen, "<missing>");
		done = true;
	}
	if (!done) {
		switch ((enum guard_kind)g->kind) {
		case GK_BACKEND:
			sb_puts(&t, g->text);
			sb_printf(&seen, "'%s'", backend ? backend->name : "?");
			break;
		case GK_TYPE:
			sb_puts(&t, g->text);
			type_of(&seen, v);
			break;
		case GK_EQUALS:
			if (v.tag != g->expect.tag && !(g->expect.tag == VAL_NONE)) {
				sb_printf(&t, "type(%s) is %s", s, type_name_of_tag(g->expect.tag, NULL));
				type_of(&seen, v);
			} else {
				sb_puts(&t, g->text);
				val_repr(v, &seen);
			}
			break;
		case GK_LENGTH:
			sb_puts(&t, g->text);
			if (v.tag != VAL_LIST && v.tag != VAL_TUPLE) {
				type_of(&seen, v);
			} else {
				sb_printf(&seen, "%lld", (long long)vm_len(v));
			}
			break;
		case GK_DTYPE:
		case GK_SHAPE:
		case GK_REQUIRES_GRAD:
			if (v.tag != VAL_TENSOR) {
				sb_printf(&t, "type(%s) is Tensor", s);
				type_of(&seen, v);
				break;
			}
			if (g->kind == GK_DTYPE) {
				sb_puts(&t, g->text);
				sb_puts(&seen, dtype_name(val_as_tensor(v)->dt));
			} else if (g->kind == GK_REQUIRES_GRAD) {
				sb_puts(&t, g->text);
				sb_puts(&seen, val_as_tensor(v)->requires_grad ? "True" : "False");
			} else {
				const tensor *x = val_as_tensor(v);
				int d = -1;
				if (x->ndim == g->ndim)
					for (int k = 0; k < g->ndim && d < 0; k++)
						if (g->shape[k] >= 0 && x->shape[k] != g->shape[k])
							d = k;
				if (d >= 0) {
					sb_printf(&t, "%s.shape[%d] == %lld", s, d, (long long)g->shape[d]);
					sb_printf(&seen, "%lld", (long long)x->shape[d]);
				} else {
					sb_puts(&t, g->text);
					format_shape(&seen, x->ndim, x->shape);
				}
			}
			break;
		case GK_DIM:
			sb_puts(&t, g->text);
			if (v.tag == VAL_TENSOR && val_as_tensor(v)->ndim > g->n)
				sb_printf(&seen, "%lld", (long long)val_as_tensor(v)->shape[g->n]);
			else
				type_of(&seen, v);
			break;
		case GK_ID:
			sb_puts(&t, g->text);
			format_object(&seen, v);
			break;
		case GK_CODE:
			sb_puts(&t, g->text);
			if (v.tag == VAL_FUNC)
				sb_printf(&seen, "<code %s>", val_func(v)->code->name);
			else
				type_of(&seen, v);
			break;
		case GK_ALIAS:
			sb_puts(&t, g->text);
			sb_puts(&seen, g->expect.b ? "another object" : "the same object");
			break;
		}
	}
	*text = sb_detach(&t);
	*value_seen = sb_detach(&seen);
}
