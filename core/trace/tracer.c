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
 * A failed allocation ends the trace like any failure (trace_oom): the
 * frame runs in the VM.
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
	struct user_frame *uf = util_calloc((size_t)n, sizeof *uf);
	struct code **cs = codes ? util_calloc((size_t)n, sizeof *cs) : NULL;
	uint32_t *ps = pcs ? util_calloc((size_t)n, sizeof *ps) : NULL;
	if (!uf || (codes && !cs) || (pcs && !ps)) {
		free(uf);
		free(cs);
		free(ps);
		trace_oom(st);
	}
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
		st->error = msg ? msg : util_strdup("trace failed");
	}
	st->abort = ABORT_FAIL;
	longjmp(st->jb, 1);
}

void trace_oom(struct tstate *st)
{
	/* NULL when even this fails: the trace still ends */
	if (!st->error)
		st->error = util_strdup("out of memory");
	st->abort = ABORT_FAIL;
	longjmp(st->jb, 1);
}

/* the pending library error (an op raised while tracing) ends the trace */
void trace_fail_pending(struct tstate *st)
{
	char *msg = tj_error_take();
	if (vm_error_pending(st->vm)) {
		if (!msg && vm_error_message(st->vm))
			msg = util_strdup(vm_error_message(st->vm));
		vm_error_clear(st->vm);
	}
	if (!st->error)
		st->error = msg ? msg : util_strdup("error while tracing");
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
	struct trace_break *b = util_calloc(1, sizeof *b);
	if (!b) {
		free(what);
		trace_oom(st);
	}
	b->code = code;
	b->message = break_message(code, what);
	free(what);
	st->brk = b; /* freed with the attempt, should the stack fail */
	b->nstack = trace_user_stack(st, &b->stack, &b->codes, &b->pcs);
	st->abort = ABORT_BREAK;
	longjmp(st->jb, 1);
}

/* a copy of b; NULL when out of memory */
static struct trace_break *break_copy(const struct trace_break *b)
{
	struct trace_break *c = util_calloc(1, sizeof *c);
	if (!c)
		return NULL;
	c->code = b->code;
	c->message = util_strdup(b->message);
	c->nstack = b->nstack;
	c->stack = util_calloc((size_t)b->nstack, sizeof *c->stack);
	c->codes = util_calloc((size_t)b->nstack, sizeof *c->codes);
	c->pcs = util_calloc((size_t)b->nstack, sizeof *c->pcs);
	if (!c->message || !c->stack || !c->codes || !c->pcs) {
		trace_break_free(c);
		return NULL;
	}
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
			if (!st->brk)
				trace_oom(st);
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
	st->nsyms = 0;
	st->jobs = st->jobs_tail = NULL;
	st->g = graph_new(co->name, st->compile_id, co->src, co->firstline, STAGE_CAPTURED);
	st->gs = guards_new();
	struct guard bg = {.kind = GK_BACKEND, .source = -1, .expect = val_none(), .backend = st->cfg->backend};
	if (!st->g || !st->gs || guards_add(st->gs, &bg) < 0)
		trace_oom(st);
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
	graph_node_discard(&st->node);
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

/* The attempts of a trace: again after a break inside an inlined call,
 * breaking at that call. */
static void trace_attempts(struct tstate *st, struct trace_result *res)
{
	for (;;) {
		rng_set_state(st->rng_seed, st->rng_offset);
		st->abort = ABORT_NONE;
		if (setjmp(st->jb) == 0) {
			attempt_init(st);
			st->ret = interp_run_frame(st, st->root);
			res->end = TRACE_RETURN;
			return;
		}
		if (st->abort == ABORT_FAIL) {
			res->end = TRACE_FAILED;
			return;
		}
		if (st->abort == ABORT_SPLIT) {
			restore_root(st);
			res->end = TRACE_SPLIT;
			res->pc = st->root->pc;
			return;
		}
		/* a break */
		if (st->cfg->fullgraph) {
			res->end = TRACE_FULLGRAPH;
			return;
		}
		if (st->cur == st->root) {
			restore_root(st);
			res->end = TRACE_BREAK;
			res->pc = st->root->pc;
			return;
		}
		if (st->nforced + 1 >= TRACE_MAX_RESTARTS) { /* one forced break per restart */
			st->error = util_strdup("too many graph breaks inside inlined calls");
			res->end = TRACE_FAILED;
			return;
		}
		/* a break inside an inlined call: again, breaking at the call */
		struct forced *forced = util_realloc(st->forced, sizeof *st->forced * (size_t)(st->nforced + 1));
		if (!forced) {
			st->error = util_strdup("out of memory");
			res->end = TRACE_FAILED;
			return;
		}
		st->forced = forced;
		st->forced[st->nforced].pc = st->root->pc;
		st->forced[st->nforced].brk = st->brk;
		st->nforced++;
		st->brk = NULL;
		attempt_release(st);
	}
}

/* The plan and the symbols of a trace that did not fail, protected in
 * turn: a failed allocation here fails the trace. */
static void attempt_finish(struct tstate *st, struct trace_result *res)
{
	if (setjmp(st->jb) != 0) {
		res->end = TRACE_FAILED;
		return;
	}
	if (res->end != TRACE_RETURN && res->end != TRACE_SPLIT) {
		res->brk = st->brk;
		st->brk = NULL;
	}
	if (res->end != TRACE_FULLGRAPH)
		plan_make(st, res);
	if (res->end != TRACE_FAILED && res->end != TRACE_FULLGRAPH) {
		sym_finish(st);
		if (guards_finish(st->gs) < 0)
			trace_oom(st);
	}
}

/* NULL when out of memory */
struct trace_result *trace_frame(struct vm *vm, struct frame *f, const struct trace_config *cfg,
				 const char *compile_id)
{
	struct trace_result *res = util_calloc(1, sizeof *res);
	struct tstate *st = util_calloc(1, sizeof *st);
	if (!res || !st) {
		free(res);
		free(st);
		return NULL;
	}
	res->ret.v = val_none();
	double t0 = util_now_ms();
	/* an attempt fills many small blocks: big chunks from the start */
	st->arena = (struct arena)ARENA_INIT_SIZED(65536);
	st->vm = vm;
	st->f = f;
	st->cfg = cfg;
	st->compile_id = compile_id;
	rng_get_state(&st->rng_seed, &st->rng_offset);
	tracing++;
	trace_attempts(st, res);
	rng_set_state(st->rng_seed, st->rng_offset);
	tracing--;
	double t1 = util_now_ms();
	res->trace_ms = t1 - t0;
	if (res->end != TRACE_FAILED)
		attempt_finish(st, res);
	if (res->end == TRACE_FAILED) {
		res->error = st->error ? st->error : util_strdup("trace failed");
		st->error = NULL;
	} else if (res->end != TRACE_FULLGRAPH) {
		res->graph = st->g;
		st->g = NULL;
		res->guards = st->gs;
		st->gs = NULL;
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
