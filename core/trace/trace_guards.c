/* trace_guards.c - guard building: what the trace assumed about its
 * inputs, installed lazily (only what the trace used), at most once per
 * fact and source, with the user line that made the trace depend on it
 * (doc/tracer.md, "Guards"). The guard set itself is guards.c's.
 */
#include <stdlib.h>
#include <string.h>

#include "trace_impl.h"

/* which guards a source has (bits) */
#define GD_TYPE 1
#define GD_VALUE 2
#define GD_LEN 4
#define GD_TENSOR 8
#define GD_ID 16

static uint8_t *guard_bits(struct tstate *st, int src)
{
	if (src >= st->nguarded) {
		int n = src + 16;
		st->guarded = trace_realloc(st, st->guarded, (size_t)n);
		memset(st->guarded + st->nguarded, 0, (size_t)(n - st->nguarded));
		st->nguarded = n;
	}
	return &st->guarded[src];
}

void need_guard(struct tstate *st, struct guard *g)
{
	struct tframe *fr = st->cur;
	if (fr) {
		struct src_loc l = trace_loc(fr);
		g->src = fr->code->src;
		g->line = l.line;
		g->col = l.col;
		g->function = fr->code->name;
	}
	if (guards_add(st->gs, g) < 0)
		trace_oom(st);
}

void need_type(struct tstate *st, int src, value v)
{
	if (src < 0)
		return;
	uint8_t *bits = guard_bits(st, src);
	if (*bits & (GD_TYPE | GD_ID))
		return;
	*bits |= GD_TYPE;
	struct guard g = {.kind = GK_TYPE, .source = src, .expect = val_none(), .n = v.tag};
	if (v.tag == VAL_OBJECT)
		g.obj_type = ((struct object *)v.o)->type;
	need_guard(st, &g);
}

void need_id(struct tstate *st, int src, value v)
{
	if (src < 0)
		return;
	uint8_t *bits = guard_bits(st, src);
	if (*bits & GD_ID)
		return;
	*bits |= GD_ID;
	val_incref(v);
	struct guard g = {.kind = GK_ID, .source = src, .expect = v};
	need_guard(st, &g);
}

/* a function the trace calls: a global by identity; another (a nested
 * function, made anew at each call of its maker) by its code, its closure
 * cells being sources of their own; with defaults, by identity */
void need_func(struct tstate *st, int src, value fn)
{
	if (src < 0)
		return;
	if (fn.tag != VAL_FUNC || st->gs->sources[src].kind == SRC_GLOBAL || val_func(fn)->defaults.tag == VAL_TUPLE) {
		need_id(st, src, fn);
		return;
	}
	uint8_t *bits = guard_bits(st, src);
	if (*bits & GD_ID)
		return;
	*bits |= GD_ID;
	value c = val_obj(VAL_CODE, val_func(fn)->code);
	val_incref(c);
	struct guard g = {.kind = GK_CODE, .source = src, .expect = c};
	need_guard(st, &g);
}

/* the trace depends on the value: its type and value, or its identity */
void need_value(struct tstate *st, int src, value v)
{
	if (src < 0)
		return;
	switch ((value_tag)v.tag) {
	case VAL_NONE:
	case VAL_BOOL:
	case VAL_INT:
	case VAL_FLOAT:
	case VAL_DTYPE:
	case VAL_TYPE:
	case VAL_STR:
	case VAL_RANGE: {
		uint8_t *bits = guard_bits(st, src);
		if (*bits & GD_VALUE)
			return;
		if (v.tag != VAL_NONE)
			need_type(st, src, v);
		bits = guard_bits(st, src);
		*bits |= GD_VALUE;
		val_incref(v);
		struct guard g = {.kind = GK_EQUALS, .source = src, .expect = v};
		need_guard(st, &g);
		return;
	}
	default:
		need_id(st, src, v);
	}
}

void need_len(struct tstate *st, int src, value v)
{
	if (src < 0)
		return;
	need_type(st, src, v);
	uint8_t *bits = guard_bits(st, src);
	if (*bits & GD_LEN)
		return;
	*bits |= GD_LEN;
	struct guard g = {.kind = GK_LENGTH, .source = src, .expect = val_none(), .n = vm_len(v)};
	need_guard(st, &g);
}

void need_tensor(struct tstate *st, int src, const tensor *t, const int *syms)
{
	if (src < 0)
		return;
	uint8_t *bits = guard_bits(st, src);
	if (*bits & GD_TENSOR)
		return;
	*bits |= GD_TENSOR;
	struct guard g = {.kind = GK_DTYPE, .source = src, .expect = val_none(), .n = t->dt};
	need_guard(st, &g);
	struct guard s = {.kind = GK_SHAPE, .source = src, .expect = val_none(), .ndim = t->ndim};
	memcpy(s.shape, t->shape, sizeof(int64_t) * (size_t)t->ndim);
	for (int d = 0; syms && d < t->ndim; d++)
		if (syms[d] >= 0) {
			s.shape[d] = -1;
			s.dimsym[d] = syms[d];
		}
	need_guard(st, &s);
	struct guard r = {.kind = GK_REQUIRES_GRAD, .source = src, .expect = val_none(), .n = t->requires_grad};
	need_guard(st, &r);
}

/* the facts of a tensor variable are known to the trace: guarded */
tensor *need_meta(struct tstate *st, struct var *t)
{
	need_tensor(st, t->src, t->ex, t->syms);
	sym_spec_var(st, t);
	return t->ex;
}
