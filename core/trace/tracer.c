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
 *
 * This file is the protected call and the ways out of it; the rest of the
 * tracer is in trace_*.c, one concern each (trace_impl.h, doc/tracer.md).
 */
#define _GNU_SOURCE
#include "trace_impl.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "breaks.h"
#include "util.h"

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
	const char *m = breaks_info(code)->message;
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

/* ---- the protected call ---- */

static void attempt_init(struct tstate *st)
{
	struct frame *f = st->f;
	struct code *co = f->code;
	st->g = graph_new(co->name, st->compile_id, co->src, co->firstline, STAGE_CAPTURED);
	st->nsyms = 0;
	st->jobs = st->jobs_tail = NULL;
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
	arena_free(&st->arena);
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
	double t0 = util_now_ms();
	struct tstate *st = xcalloc(1, sizeof *st);
	/* an attempt fills many small blocks: big chunks from the start */
	st->arena = (struct arena)ARENA_INIT_SIZED(65536);
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
			util_oom();
		st->forced[st->nforced].pc = st->root->pc;
		st->forced[st->nforced].brk = st->brk;
		st->nforced++;
		st->brk = NULL;
		attempt_release(st);
	}
	rng_set_state(st->rng_seed, st->rng_offset);
	tracing--;
	double t1 = util_now_ms();
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
	res->guard_ms = util_now_ms() - t1;
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
