/* tracer.c - symbolic execution of bytecode into a graph (tracer.h).
 *
 * One trace is a protected call (trace_frame) around an interpreter loop
 * over *variables* instead of values. A graph break or a failure anywhere
 * below longjmp()s back to it, never across a VM or SQLite frame: the loop
 * calls the VM (examples of ops, pure builtins) only in leaf positions
 * that return before anything jumps. A break inside an inlined call
 * restarts the whole trace with a break forced at the traced frame's CALL,
 * which is simpler and more robust than undoing what the callee did.
 *
 * Memory: everything a trace attempt makes lives in its arena, and every
 * reference it takes is listed in `held`; both go in one call at the end.
 */
#define _GNU_SOURCE
#include "trace_impl.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "autograd.h"
#include "backend.h"
#include "builtin.h"
#include "compile_log.h"
#include "ops.h"
#include "tensor.h"
#include "util.h"
#include "vm.h"

static int tracing;              /* traces running now (is_compiling) */

bool trace_active(void) { return tracing > 0; }

void dyn_state_free(struct dyn_state *ds)
{
	for (int i = 0; i < ds->n; i++)
		free(ds->recs[i].source);
	free(ds->recs);
	ds->recs = NULL;
	ds->n = ds->cap = 0;
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void trace_oom(void)
{
	fputs("tjit: out of memory\n", stderr);
	abort();
}

/* ---- the arena ---- */

struct trace_arena_block {
	struct trace_arena_block *next;
	size_t used, size;
	max_align_t data[];
};

void trace_arena_free(struct trace_arena *a)
{
	while (a->head) {
		struct trace_arena_block *n = a->head->next;
		free(a->head);
		a->head = n;
	}
}

/* n zeroed bytes in the attempt's arena */
void *trace_alloc(struct tstate *st, size_t n)
{
	struct trace_arena *a = &st->arena;
	n = (n + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
	if (!a->head || a->head->used + n > a->head->size) {
		size_t size = n > 65536 ? n : 65536;
		struct trace_arena_block *b = xmalloc(sizeof *b + size);
		b->next = a->head;
		b->used = 0;
		b->size = size;
		a->head = b;
	}
	void *p = (char *)a->head->data + a->head->used;
	a->head->used += n;
	memset(p, 0, n);
	return p;
}

value trace_hold(struct tstate *st, value v)
{
	if (v.tag < VAL_FIRST_HEAP)
		return v;
	if (st->nheld == st->heldcap) {
		st->heldcap = st->heldcap ? st->heldcap * 2 : 256;
		st->held = realloc(st->held, sizeof(value) * (size_t)st->heldcap);
		if (!st->held)
			trace_oom();
	}
	st->held[st->nheld++] = v;
	return v;
}

/* takes a new reference to v and keeps it for the trace */
value trace_keep(struct tstate *st, value v)
{
	val_incref(v);
	return trace_hold(st, v);
}

struct var *var_new(struct tstate *st, enum vkind k)
{
	struct var *v = trace_alloc(st, sizeof *v);
	v->kind = (uint8_t)k;
	v->src = -1;
	v->psrc = -1;
	v->skind = -1;
	v->node = -1;
	v->op = -1;
	v->v = val_none();
	return v;
}

struct var *var_const(struct tstate *st, value v)
{
	struct var *r = var_new(st, VK_CONST);
	r->v = trace_keep(st, v);
	return r;
}

/* a constant from a new reference */
struct var *var_const_owned(struct tstate *st, value v)
{
	struct var *r = var_new(st, VK_CONST);
	r->v = trace_hold(st, v);
	return r;
}

struct var *var_tuple(struct tstate *st, int n, struct var **items)
{
	struct var *t = var_new(st, VK_TUPLE);
	t->n = n;
	t->items = trace_alloc(st, sizeof(struct var *) * (size_t)(n ? n : 1));
	for (int i = 0; i < n; i++)
		t->items[i] = items[i];
	return t;
}

static struct seqrec *seqrec_new(struct tstate *st, int n)
{
	struct seqrec *r = trace_alloc(st, sizeof *r);
	r->cap = n > 4 ? n : 4;
	r->items = trace_alloc(st, sizeof(struct var *) * (size_t)r->cap);
	r->n = n;
	r->src = -1;
	r->obj = val_none();
	r->real = val_none();
	r->len_known = true;
	r->memo = -1;
	if (st->nrecs == st->reccap) {
		st->reccap = st->reccap ? st->reccap * 2 : 16;
		st->recs = realloc(st->recs, sizeof *st->recs * (size_t)st->reccap);
		if (!st->recs)
			trace_oom();
	}
	st->recs[st->nrecs++] = r;
	return r;
}

void seqrec_insert(struct tstate *st, struct seqrec *r, int at, struct var *v)
{
	if (r->n == r->cap) {
		int ncap = r->cap * 2;
		struct var **ni = trace_alloc(st, sizeof(struct var *) * (size_t)ncap);
		memcpy(ni, r->items, sizeof(struct var *) * (size_t)r->n);
		r->items = ni;
		r->cap = ncap;
	}
	memmove(r->items + at + 1, r->items + at, sizeof(struct var *) * (size_t)(r->n - at));
	r->items[at] = v;
	r->n++;
}

struct var *var_list(struct tstate *st, int n, struct var **items)
{
	struct var *l = var_new(st, VK_LIST);
	l->rec = seqrec_new(st, n);
	for (int i = 0; i < n; i++)
		l->rec->items[i] = items[i];
	return l;
}

/* The trace reads a list's length or items: for a list from outside, its
 * length is guarded from then on. */
/* ---- where we are ---- */

struct src_loc trace_loc(const struct tframe *fr)
{
	struct src_loc l = {0, 0};
	if (fr && fr->code->locs && fr->pc >= 0 && fr->pc < fr->code->ninsns)
		l = fr->code->locs[fr->pc];
	return l;
}

/* the user stack of the instruction running now, outermost first */
int trace_user_stack(struct tstate *st, struct user_frame **out, struct code ***codes, uint32_t **pcs)
{
	int n = 0;
	for (struct tframe *fr = st->cur; fr; fr = fr->parent)
		n++;
	struct user_frame *uf = xcalloc((size_t)n, sizeof *uf);
	struct code **cs = codes ? xcalloc((size_t)n, sizeof *cs) : NULL;
	uint32_t *ps = pcs ? xcalloc((size_t)n, sizeof *ps) : NULL;
	int i = n - 1;
	for (struct tframe *fr = st->cur; fr; fr = fr->parent, i--) {
		struct src_loc l = trace_loc(fr);
		uf[i].src = fr->code->src;
		uf[i].line = l.line;
		uf[i].col = l.col;
		uf[i].function = fr->code->name;
		if (cs) {
			cs[i] = fr->code;
			ps[i] = (uint32_t)(fr->pc < 0 ? 0 : fr->pc);
		}
	}
	*out = uf;
	if (codes)
		*codes = cs;
	if (pcs)
		*pcs = ps;
	return n;
}

/* ---- ending a trace early ---- */

void trace_fail(struct tstate *st, const char *fmt, ...)
{
	if (!st->error) {
		va_list ap;
		va_start(ap, fmt);
		char *msg = NULL;
		if (vasprintf(&msg, fmt, ap) < 0)
			msg = NULL;
		va_end(ap);
		st->error = msg ? msg : xstrdup("trace failed");
	}
	st->abort = ABORT_FAIL;
	longjmp(st->jb, 1);
}

/* the pending library error (an op raised while tracing) ends the trace */
void trace_fail_pending(struct tstate *st)
{
	char *msg = tj_error_take();
	if (vm_error_pending(st->vm)) {
		if (!msg && vm_error_message(st->vm))
			msg = xstrdup(vm_error_message(st->vm));
		vm_error_clear(st->vm);
	}
	if (!st->error)
		st->error = msg ? msg : xstrdup("error while tracing");
	else
		free(msg);
	st->abort = ABORT_FAIL;
	longjmp(st->jb, 1);
}

/* The message of a break: the code's message with its <placeholder>
 * replaced by what (or kept when what is NULL). */
static char *break_message(int code, const char *what)
{
	static const char *const messages[] = {
#define BREAK(name, num, category, message, explanation, hint) message,
#include "breaks.def"
#undef BREAK
	};
	const char *m = messages[code];
	const char *lt = strchr(m, '<'), *gt = lt ? strchr(lt, '>') : NULL;
	struct strbuf sb = STRBUF_INIT;
	if (lt && gt && what) {
		sb_add(&sb, m, (size_t)(lt - m));
		sb_puts(&sb, what);
		sb_puts(&sb, gt + 1);
	} else {
		sb_puts(&sb, m);
	}
	return sb_detach(&sb);
}

void trace_break_free(struct trace_break *b)
{
	if (!b)
		return;
	free(b->message);
	free(b->stack);
	free(b->codes);
	free(b->pcs);
	free(b);
}

void trace_graph_break(struct tstate *st, int code, const char *fmt, ...)
{
	char *what = NULL;
	if (fmt) {
		va_list ap;
		va_start(ap, fmt);
		if (vasprintf(&what, fmt, ap) < 0)
			what = NULL;
		va_end(ap);
	}
	struct trace_break *b = xcalloc(1, sizeof *b);
	b->code = code;
	b->message = break_message(code, what);
	free(what);
	b->nstack = trace_user_stack(st, &b->stack, &b->codes, &b->pcs);
	st->brk = b;
	st->abort = ABORT_BREAK;
	longjmp(st->jb, 1);
}

static struct trace_break *break_copy(const struct trace_break *b)
{
	struct trace_break *c = xcalloc(1, sizeof *c);
	c->code = b->code;
	c->message = xstrdup(b->message);
	c->nstack = b->nstack;
	c->stack = xcalloc((size_t)b->nstack, sizeof *c->stack);
	c->codes = xcalloc((size_t)b->nstack, sizeof *c->codes);
	c->pcs = xcalloc((size_t)b->nstack, sizeof *c->pcs);
	memcpy(c->stack, b->stack, sizeof *c->stack * (size_t)b->nstack);
	memcpy(c->codes, b->codes, sizeof *c->codes * (size_t)b->nstack);
	memcpy(c->pcs, b->pcs, sizeof *c->pcs * (size_t)b->nstack);
	return c;
}

/* a break carried over from an earlier attempt (a break inside a call
 * that the traced frame makes at pc): the trace breaks at that call */
void trace_break_if_forced(struct tstate *st, int pc)
{
	for (int i = 0; i < st->nforced; i++) {
		if (st->forced[i].pc == pc) {
			st->brk = break_copy(st->forced[i].brk);
			st->abort = ABORT_BREAK;
			longjmp(st->jb, 1);
		}
	}
}

/* a FOR_ITER of the traced frame on an iterator it did not make */
void trace_split(struct tstate *st)
{
	st->abort = ABORT_SPLIT;
	longjmp(st->jb, 1);
}

/* ---- guards ---- */

int var_source(struct tstate *st, struct var *v)
{
	if (v->src < 0 && v->psrc >= 0)
		v->src = guards_source(st->gs, SRC_ITEM, v->psrc, v->pidx, NULL);
	if (v->src < 0 && v->skind >= 0)
		v->src = guards_source(st->gs, (enum source_kind)v->skind, -1, v->sidx, v->sname);
	return v->src;
}

struct seqrec *seqrec_read(struct tstate *st, struct seqrec *r)
{
	if (!r->len_known) {
		r->len_known = true;
		need_len(st, r->src, r->real);
	}
	return r;
}

/* the items of a list or tuple variable (the trace now depends on them) */
int var_seq_n(struct tstate *st, struct var *v)
{
	return v->kind == VK_LIST ? seqrec_read(st, v->rec)->n : v->n;
}
struct var **var_seq_items(struct tstate *st, struct var *v)
{
	return v->kind == VK_LIST ? seqrec_read(st, v->rec)->items : v->items;
}

/* ---- realizing inputs ---- */

struct var *var_lazy(struct tstate *st, value v, int src)
{
	struct var *r = var_new(st, VK_LAZY);
	r->v = trace_keep(st, v);
	r->src = src;
	return r;
}

static struct var *var_lazy_item(struct tstate *st, value v, int psrc, int idx)
{
	struct var *r = var_new(st, VK_LAZY);
	r->v = trace_keep(st, v);
	r->psrc = psrc;
	r->pidx = idx;
	return r;
}

/* A variable for a real value: lists and tuples item by item (lazily),
 * tensors as graph inputs to be, other values as constants. */
struct var *var_wrap(struct tstate *st, value v, int src, int depth)
{
	if (depth > TRACE_MAX_NEST)
		trace_graph_break(st, BRK_UNSUPPORTED, "lists or tuples nested more than %d deep", TRACE_MAX_NEST);
	switch ((value_tag)v.tag) {
	case VAL_TENSOR: {
		struct var *t = var_new(st, VK_TENSOR);
		t->ex = val_as_tensor(trace_keep(st, v));
		t->rg = t->ex->requires_grad;
		t->src = src;
		if (src >= 0)
			t->syms = sym_input(st, t->ex, src);
		return t;
	}
	case VAL_LIST:
		/* one list reached two ways is one record: a mutation through one
		 * is seen through the other (and the trace assumes they stay one) */
		for (int i = 0; i < st->nrecs; i++) {
			struct seqrec *r = st->recs[i];
			if (r->real.tag != VAL_LIST || r->real.o != v.o)
				continue;
			if (src >= 0 && r->src >= 0 && src != r->src) {
				struct guard g = {.kind = GK_ALIAS, .source = src, .expect = val_bool(true), .n = r->src};
				need_guard(st, &g);
			} else if (src >= 0) {
				need_id(st, src, v);
			}
			struct var *l = var_new(st, VK_LIST);
			l->rec = r;
			l->src = src;
			return l;
		}
		/* fall through */
	case VAL_TUPLE: {
		/* a tuple's length is guarded at once; a list's when the trace reads
		 * it (appending to a list from outside does not depend on it) */
		if (v.tag == VAL_TUPLE)
			need_len(st, src, v);
		else
			need_type(st, src, v);
		size_t n = v.tag == VAL_LIST ? val_list(v)->len : val_tuple(v)->len;
		const value *items = v.tag == VAL_LIST ? val_list(v)->items : val_tuple(v)->items;
		if (n > 100000)
			trace_graph_break(st, BRK_UNSUPPORTED, "a %s of %zu items", val_type_name(v), n);
		struct var **iv = trace_alloc(st, sizeof(struct var *) * (n ? n : 1));
		for (size_t i = 0; i < n; i++)
			iv[i] = src >= 0 ? var_lazy_item(st, items[i], src, (int)i) : var_lazy(st, items[i], -1);
		struct var *r;
		if (v.tag == VAL_LIST) {
			r = var_list(st, (int)n, iv);
			r->rec->src = src;
			r->rec->real = trace_keep(st, v);
			r->rec->orig_n = (int)n;
			r->rec->len_known = src < 0;
			if (src < 0)
				r->rec->obj = v;
		} else {
			r = var_tuple(st, (int)n, iv);
		}
		r->src = src;
		return r;
	}
	case VAL_ITER:
	case VAL_CELL:
	case VAL_BOUND:
	case VAL_CODE: {
		struct var *o = var_new(st, VK_OPAQUE);
		o->v = trace_keep(st, v);
		o->src = src;
		return o;
	}
	default: {
		struct var *c = var_const(st, v);
		c->src = src;
		return c;
	}
	}
}

/* What a variable is, for the instruction that uses it. A symbolic int
 * used here is used as a Python value (arithmetic, a comparison, range(),
 * printing...): its symbol is specialized and it is that constant. Only
 * the size arguments of the ops that take symbolic sizes (op_emit) read
 * a VK_SYMINT without R. */
struct var *var_realize(struct tstate *st, struct var *v)
{
	if (!v)
		trace_fail(st, "unbound variable");
	if (v->kind == VK_SYMINT) {
		sym_spec(st, v->isym);
		if (!v->real)
			v->real = var_const(st, v->v);
		return v->real;
	}
	if (v->kind != VK_LAZY)
		return v;
	if (!v->real) {
		int src = var_source(st, v);
		v->real = var_wrap(st, v->v, src, 0);
	}
	return v->real;
}

/* a constant's value, its guard installed */
value var_value(struct tstate *st, struct var *v)
{
	v = var_realize(st, v);
	if (v->kind != VK_CONST)
		trace_fail(st, "not a constant");
	need_value(st, v->src, v->v);
	return v->v;
}

bool var_is_const(struct tstate *st, struct var *v)
{
	return var_realize(st, v)->kind == VK_CONST;
}

const char *var_kind_name(struct tstate *st, struct var *v)
{
	v = var_realize(st, v);
	switch ((enum vkind)v->kind) {
	case VK_TENSOR: return "Tensor";
	case VK_CONST: return val_type_name(v->v);
	case VK_LIST: return "list";
	case VK_TUPLE: return "tuple";
	case VK_ITER: return "iterator";
	case VK_METHOD:
	case VK_LISTMETH: return "method";
	case VK_NESTED: return "function";
	case VK_CELLREF: return "cell";
	case VK_OPAQUE: return val_type_name(v->v);
	case VK_LAZY:
	case VK_SYMINT: break;
	}
	return "object";
}

/* ---- Python values ---- */

/* whether v is made of constants only (lists and tuples of them) */
bool var_all_const(struct tstate *st, struct var *v, int depth)
{
	v = var_realize(st, v);
	if (v->kind == VK_CONST)
		return true;
	if ((v->kind == VK_LIST || v->kind == VK_TUPLE) && depth < TRACE_MAX_NEST) {
		int n = var_seq_n(st, v);
		struct var **items = var_seq_items(st, v);
		for (int i = 0; i < n; i++)
			if (!var_all_const(st, items[i], depth + 1))
				return false;
		return true;
	}
	return false;
}

/* the real value of an var_all_const variable (guards for every constant) */
value var_deep_value(struct tstate *st, struct var *v, int depth)
{
	v = var_realize(st, v);
	if (v->kind == VK_CONST)
		return var_value(st, v);
	int n = var_seq_n(st, v);
	struct var **items = var_seq_items(st, v);
	value c = v->kind == VK_LIST ? list_new((size_t)n) : tuple_new((size_t)n);
	trace_hold(st, c);
	value *dst = v->kind == VK_LIST ? val_list(c)->items : val_tuple(c)->items;
	for (int i = 0; i < n; i++) {
		dst[i] = var_deep_value(st, items[i], depth + 1);
		val_incref(dst[i]);
	}
	if (v->kind == VK_LIST)
		val_list(c)->len = (size_t)n;
	return c;
}

/* a variable for the result of a pure computation: lists become records */
static struct var *var_from_result_at(struct tstate *st, value r, int depth);

struct var *var_from_result(struct tstate *st, value r)
{
	return var_from_result_at(st, r, 0);
}

static struct var *var_from_result_at(struct tstate *st, value r, int depth)
{
	if (val_is_err(r))
		trace_fail_pending(st);
	trace_hold(st, r);
	if (depth > TRACE_MAX_NEST)
		trace_graph_break(st, BRK_UNSUPPORTED, "a value nested more than %d deep", TRACE_MAX_NEST);
	if (r.tag == VAL_LIST || r.tag == VAL_TUPLE) {
		size_t n = r.tag == VAL_LIST ? val_list(r)->len : val_tuple(r)->len;
		const value *items = r.tag == VAL_LIST ? val_list(r)->items : val_tuple(r)->items;
		struct var **iv = trace_alloc(st, sizeof(struct var *) * (n ? n : 1));
		for (size_t i = 0; i < n; i++)
			iv[i] = var_from_result_at(st, (val_incref(items[i]), items[i]), depth + 1);
		return r.tag == VAL_LIST ? var_list(st, (int)n, iv) : var_tuple(st, (int)n, iv);
	}
	if (r.tag == VAL_TENSOR)
		trace_graph_break(st, BRK_UNSUPPORTED, "a tensor made outside the graph");
	struct var *c = var_new(st, VK_CONST);
	c->v = r;
	return c;
}

/* an index that is an int, with its guard */
int64_t var_int(struct tstate *st, struct var *v)
{
	value x = var_value(st, v);
	if (x.tag == VAL_INT)
		return x.i;
	if (x.tag == VAL_BOOL)
		return x.b;
	trace_fail(st, "not an integer");
}

struct cellrec *cellrec_new(struct tstate *st, struct var *content)
{
	struct cellrec *c = trace_alloc(st, sizeof *c);
	c->content = content;
	c->root_index = -1;
	c->real = val_none();
	c->memo = -1;
	return c;
}

struct var *var_none(struct tstate *st) { return var_const(st, val_none()); }

/* ---- the protected call ---- */

static void attempt_init(struct tstate *st)
{
	struct frame *f = st->f;
	struct code *co = f->code;
	st->g = graph_new(co->name, st->compile_id, co->src, co->firstline, STAGE_CAPTURED);
	st->nsyms = 0;
	st->gs = guards_new();
	struct guard bg = {.kind = GK_BACKEND, .source = -1, .expect = val_none(), .backend = st->cfg->backend};
	guards_add(st->gs, &bg);
	struct tframe *root = trace_alloc(st, sizeof *root);
	root->code = co;
	root->locals = trace_alloc(st, sizeof(struct var *) * (size_t)(co->nlocals ? co->nlocals : 1));
	for (int i = 0; i < co->nlocals; i++) {
		if (val_is_err(f->locals[i]))
			continue;
		struct var *v = var_new(st, VK_LAZY);
		v->v = trace_keep(st, f->locals[i]);
		v->skind = SRC_LOCAL;
		v->sidx = i;
		v->sname = co->local_names[i];
		root->locals[i] = v;
	}
	int ncells = co->ncellvars + co->nfreevars;
	root->cells = trace_alloc(st, sizeof(struct cellrec *) * (size_t)(ncells ? ncells : 1));
	st->rootcells = root->cells;
	for (int i = 0; i < ncells; i++) {
		value cell = f->cells[i];
		struct var *content = NULL;
		if (cell.tag == VAL_CELL && !val_is_err(val_cell(cell)->v)) {
			content = var_new(st, VK_LAZY);
			content->v = trace_keep(st, val_cell(cell)->v);
			content->skind = SRC_CELL;
			content->sidx = i;
			content->sname = i < co->ncellvars ? co->cellvar_names[i] : co->freevar_names[i - co->ncellvars];
		}
		root->cells[i] = cellrec_new(st, content);
		root->cells[i]->root_index = i;
		if (cell.tag == VAL_CELL)
			root->cells[i]->real = trace_keep(st, cell);
	}
	int nstack = (int)(f->sp - f->stack);
	int maxs = co->max_stack > nstack ? co->max_stack : nstack;
	root->stack = trace_alloc(st, sizeof(struct var *) * (size_t)(maxs ? maxs : 1));
	for (int i = 0; i < nstack; i++) {
		struct var *v = var_new(st, VK_LAZY);
		v->v = trace_keep(st, f->stack[i]);
		v->skind = SRC_STACK;
		v->sidx = i;
		root->stack[i] = v;
	}
	root->sp = nstack;
	root->pc = (int)f->pc;
	st->root = st->cur = root;
	st->snap.stack = trace_alloc(st, sizeof(struct var *) * (size_t)(maxs ? maxs : 1));
	st->ninsns = 0;
	st->has_call = false;
}

static void attempt_release(struct tstate *st)
{
	for (int i = 0; i < st->nheld; i++)
		val_decref(st->held[i]);
	st->nheld = 0;
	trace_arena_free(&st->arena);
	graph_free(st->g);
	st->g = NULL;
	guards_free(st->gs);
	st->gs = NULL;
	free(st->guarded);
	st->guarded = NULL;
	st->nguarded = 0;
	st->ninsrc = 0;
	st->nglobals = 0;
	st->nrecs = 0;
	st->root = st->cur = NULL;
	st->ret = NULL;
	trace_break_free(st->brk);
	st->brk = NULL;
}

/* the traced frame as it was at the start of the breaking instruction */
static void restore_root(struct tstate *st)
{
	struct tframe *root = st->root;
	root->sp = st->snap.sp;
	memcpy(root->stack, st->snap.stack, sizeof(struct var *) * (size_t)st->snap.sp);
	graph_truncate(st->g, st->snap.nnodes);
	st->ninsrc = st->snap.ninsrc;
	guards_truncate(st->gs, st->snap.nguards);
	st->cur = root;
}

struct trace_result *trace_frame(struct vm *vm, struct frame *f, const struct trace_config *cfg,
				 const char *compile_id)
{
	struct trace_result *res = xcalloc(1, sizeof *res);
	res->ret.v = val_none();
	double t0 = now_ms();
	struct tstate *st = xcalloc(1, sizeof *st);
	st->vm = vm;
	st->f = f;
	st->cfg = cfg;
	st->compile_id = compile_id;
	rng_get_state(&st->rng_seed, &st->rng_offset);
	tracing++;
	for (int attempt = 0;; attempt++) {
		rng_set_state(st->rng_seed, st->rng_offset);
		attempt_init(st);
		st->abort = ABORT_NONE;
		if (setjmp(st->jb) == 0) {
			st->ret = interp_run_frame(st, st->root);
			res->end = TRACE_RETURN;
			break;
		}
		if (st->abort == ABORT_FAIL) {
			res->end = TRACE_FAILED;
			break;
		}
		if (st->abort == ABORT_SPLIT) {
			restore_root(st);
			res->end = TRACE_SPLIT;
			res->pc = st->root->pc;
			break;
		}
		/* a break */
		if (cfg->fullgraph) {
			res->end = TRACE_FULLGRAPH;
			break;
		}
		if (st->cur == st->root) {
			restore_root(st);
			res->end = TRACE_BREAK;
			res->pc = st->root->pc;
			break;
		}
		if (attempt + 1 >= TRACE_MAX_RESTARTS) {
			st->error = xstrdup("too many graph breaks inside inlined calls");
			res->end = TRACE_FAILED;
			break;
		}
		/* a break inside an inlined call: again, breaking at the call */
		st->forced = realloc(st->forced, sizeof *st->forced * (size_t)(st->nforced + 1));
		if (!st->forced)
			trace_oom();
		st->forced[st->nforced].pc = st->root->pc;
		st->forced[st->nforced].brk = st->brk;
		st->nforced++;
		st->brk = NULL;
		attempt_release(st);
	}
	rng_set_state(st->rng_seed, st->rng_offset);
	tracing--;
	double t1 = now_ms();
	res->trace_ms = t1 - t0;
	if (res->end == TRACE_FAILED) {
		res->error = st->error ? st->error : xstrdup("trace failed");
		st->error = NULL;
	} else {
		if (res->end != TRACE_RETURN && res->end != TRACE_SPLIT) {
			res->brk = st->brk;
			st->brk = NULL;
		}
		if (res->end != TRACE_FULLGRAPH)
			plan_make(st, res);
		if (res->end == TRACE_FAILED) {
			res->error = st->error;
			st->error = NULL;
		}
	}
	if (res->end != TRACE_FAILED && res->end != TRACE_FULLGRAPH) {
		sym_finish(st);
		res->graph = st->g;
		st->g = NULL;
		res->guards = st->gs;
		st->gs = NULL;
		guards_finish(res->guards);
		res->ninputs = st->ninsrc;
		res->input_sources = st->insrc;
		st->insrc = NULL;
		res->graph_calls_user = st->has_call;
	}
	res->guard_ms = now_ms() - t1;
	attempt_release(st);
	for (int i = 0; i < st->nforced; i++)
		trace_break_free(st->forced[i].brk);
	free(st->forced);
	free(st->syms);
	free(st->insrc);
	free(st->held);
	free(st->globals);
	free(st->recs);
	free(st->error);
	free(st);
	return res;
}

void trace_result_free(struct trace_result *r)
{
	if (!r)
		return;
	graph_free(r->graph);
	free(r->input_sources);
	guards_free(r->guards);
	trace_break_free(r->brk);
	free(r->error);
	plan_release(r);
	free(r);
}
