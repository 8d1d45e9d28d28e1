/* frame_eval.c - the frame evaluator (frame_eval.h, doc/tracer.md).
 *
 * The cache maps (code object, resume pc) to a *key*: the frame of the
 * logs (index F once it compiled), its entries (newest last, checked
 * newest first), its counters. An entry holds the trace's result (guards
 * and plan), its backend's compiled graph and its compile id.
 *
 * The hit path: hash the key, check the entries' guards (borrowed values,
 * no allocation), run the compiled graph, carry out the plan. A miss
 * traces, compiles, logs one compile_record and runs the new entry. An
 * entry that ends in a break rebuilds the frame, runs the breaking
 * instruction with vm_step and loops with the next pc.
 *
 * Entries live as long as their cache; reset() retires the program's
 * cache, which is freed once no compiled call is running any more (an
 * artifact that called reset() finishes with the entry it started).
 *
 * All of it belongs to the runtime of the program (runtime.h: struct
 * frame_eval is rt->fe), found through the VM, so that a second program
 * starts with empty caches and frame index 0.
 */
#define _GNU_SOURCE
#include "frame_eval.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend.h"
#include "compile_log.h"
#include "db.h"
#include "guards.h"
#include "runtime.h"
#include "tensor.h"
#include "tensor_io.h"
#include "tracer.h"
#include "util.h"
#include "vm.h"

#define COUNTS_FLUSH_EVERY 65536
/* the guard checks of one call in GUARD_SAMPLE_EVERY are timed (two clock
 * reads cost about as much as a short guard list) */
#define GUARD_SAMPLE_EVERY 64

struct entry {
	struct trace_result *tr;
	const struct backend *backend;
	void *compiled;             /* the backend's artifact; NULL when the graph has no ops */
	int compile_index;
	char compile_id[24];
	struct break_record hit_brk; /* for compile_log_break_hit: code and message only */
};

struct fkey {
	struct code *code;          /* a reference */
	int pc;
	int frame_index;            /* F, -1 until it is first logged */
	int64_t log_id;
	int nentries, cap;
	struct entry **entries;     /* oldest first */
	int ncompiles;              /* N of the next compile */
	int64_t calls, hits, eager_calls;
	int64_t guard_checks;       /* guard lists checked */
	int64_t sampled_checks, sampled_ns; /* those of the timed calls, and their time */
	int until_sample;           /* calls with entries until the next timed one */
	const char *eager_reason;
	bool skip;                  /* nothing to compile: always run in the VM */
	bool limit_warned;          /* the cache_limit row and warning are out */
	bool frozen_logged;         /* the first frozen miss is logged */
	struct dyn_state dyn;       /* automatic dynamic shapes */
	struct fkey *next;
};

struct cache {
	struct fkey **buckets;
	size_t nbuckets, n;
	struct cache *next_retired;
};

/* the state of a runtime's evaluator (rt->fe) */
struct frame_eval {
	struct cache main;          /* the program's cache */
	struct cache *current;      /* where compiled calls look: main, or explain()'s private one; NULL: main */
	struct cache *retired;      /* caches reset() dropped while artifacts ran */
	int running;                /* compiled calls running now */
	int next_frame_index;
	struct code *skip_next;     /* disable(f, recursive=False): the next frame of this code runs in the VM */
	bool recorded;              /* TJIT_RECORD's inputs are saved (or failed to be) */
};

struct eval_ctx {
	const struct compile_config *cfg;
	struct cache *cache;
	struct runtime *rt;
};

struct frame_eval *frame_eval_new(void)
{
	return calloc(1, sizeof(struct frame_eval));
}

bool frame_eval_is_tracing(void) { return trace_active(); }

void frame_eval_skip_next(struct runtime *rt, struct code *code) { rt->fe->skip_next = code; }

/* ---- the cache ---- */

static size_t key_hash(const struct code *code, int pc)
{
	uintptr_t h = (uintptr_t)code >> 4;
	h ^= (uintptr_t)pc * 0x9e3779b1u;
	h ^= h >> 15;
	return (size_t)h;
}

/* the key of (code, pc), made on a miss; NULL when out of memory */
static struct fkey *cache_find(struct cache *c, struct code *code, int pc)
{
	if (c->nbuckets) {
		for (struct fkey *k = c->buckets[key_hash(code, pc) & (c->nbuckets - 1)]; k; k = k->next)
			if (k->code == code && k->pc == pc)
				return k;
	}
	if (c->n + 1 > c->nbuckets) {
		size_t nb = c->nbuckets ? c->nbuckets * 2 : 64;
		struct fkey **b = util_calloc(nb, sizeof *b);
		if (!b)
			return NULL;
		for (size_t i = 0; i < c->nbuckets; i++) {
			for (struct fkey *k = c->buckets[i], *next; k; k = next) {
				next = k->next;
				size_t j = key_hash(k->code, k->pc) & (nb - 1);
				k->next = b[j];
				b[j] = k;
			}
		}
		free(c->buckets);
		c->buckets = b;
		c->nbuckets = nb;
	}
	struct fkey *k = util_calloc(1, sizeof *k);
	if (!k)
		return NULL;
	code->hdr.rc++;
	k->code = code;
	k->pc = pc;
	k->frame_index = -1;
	size_t j = key_hash(code, pc) & (c->nbuckets - 1);
	k->next = c->buckets[j];
	c->buckets[j] = k;
	c->n++;
	return k;
}

static void entry_free(struct entry *e)
{
	if (!e)
		return;
	if (e->compiled && e->backend->release)
		e->backend->release(e->compiled);
	trace_result_free(e->tr);
	free(e);
}

static void flush_counts(struct compile_log *log, struct fkey *k)
{
	if (k->frame_index < 0)
		return;
	/* the timed calls stand for all: scale by checks, not calls */
	double ns = k->sampled_checks ? (double)k->sampled_ns * (double)k->guard_checks / (double)k->sampled_checks : 0;
	struct db_frame_counts c = {k->calls, k->hits, k->eager_calls, k->guard_checks, (int64_t)ns, k->eager_reason};
	compile_log_frame_counts(log, k->log_id, &c);
}

static int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* the newest entry of k whose guards hold for f, or NULL */
static struct entry *find_entry(struct fkey *k, struct vm *vm, struct frame *f, const struct backend *backend)
{
	/* the first call with entries is timed, then one in GUARD_SAMPLE_EVERY */
	bool timed = k->nentries && k->until_sample-- == 0;
	if (timed)
		k->until_sample = GUARD_SAMPLE_EVERY - 1;
	int64_t t0 = timed ? mono_ns() : 0;
	struct entry *e = NULL;
	int checked = 0;
	for (int i = k->nentries - 1; i >= 0; i--) {
		checked++;
		if (guards_check(k->entries[i]->tr->guards, vm, f, backend) < 0) {
			e = k->entries[i];
			break;
		}
	}
	k->guard_checks += checked;
	if (timed) {
		k->sampled_ns += mono_ns() - t0;
		k->sampled_checks += checked;
	}
	return e;
}

static void cache_free(struct compile_log *log, struct cache *c)
{
	for (size_t i = 0; i < c->nbuckets; i++) {
		for (struct fkey *k = c->buckets[i], *next; k; k = next) {
			next = k->next;
			flush_counts(log, k);
			for (int e = 0; e < k->nentries; e++)
				entry_free(k->entries[e]);
			free(k->entries);
			dyn_state_free(&k->dyn);
			val_decref(val_obj(VAL_CODE, k->code));
			free(k);
		}
	}
	free(c->buckets);
	c->buckets = NULL;
	c->nbuckets = c->n = 0;
}

static void free_retired(struct runtime *rt)
{
	struct frame_eval *fe = rt->fe;
	while (fe->retired) {
		struct cache *c = fe->retired;
		fe->retired = c->next_retired;
		cache_free(rt->log, c);
		free(c);
	}
}

void frame_eval_reset(struct runtime *rt)
{
	struct frame_eval *fe = rt->fe;
	struct cache *c = util_calloc(1, sizeof *c);
	if (!c) {
		/* no room to retire it: freed now, unless frames use it (then
		 * it stays, its entries still guarded) */
		if (fe->running == 0) {
			cache_free(rt->log, &fe->main);
			memset(&fe->main, 0, sizeof fe->main);
			free_retired(rt);
		}
		return;
	}
	*c = fe->main;
	memset(&fe->main, 0, sizeof fe->main);
	c->next_retired = fe->retired;
	fe->retired = c;
	if (fe->running == 0)
		free_retired(rt);
}

void frame_eval_free(struct runtime *rt)
{
	if (!rt->fe)
		return;
	cache_free(rt->log, &rt->fe->main);
	free_retired(rt);
	free(rt->fe);
	rt->fe = NULL;
}

/* ---- compile records ---- */

static double wall_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int frame_index_of(struct runtime *rt, struct fkey *k)
{
	if (k->frame_index < 0) {
		k->frame_index = rt->fe->next_frame_index++;
		int line = k->pc > 0 && k->code->locs && k->pc < k->code->ninsns ? k->code->locs[k->pc].line : 0;
		k->log_id = compile_log_frame(rt->log, k->frame_index, k->code->name, k->code->src, k->code->firstline,
					      k->pc, line);
	}
	return k->frame_index;
}

static void record_begin(struct compile_record *rec, struct runtime *rt, struct fkey *k,
			 const struct compile_config *cfg, const char *reason, int compile_index)
{
	memset(rec, 0, sizeof *rec);
	rec->frame_index = frame_index_of(rt, k);
	rec->compile_index = compile_index;
	snprintf(rec->compile_id, sizeof rec->compile_id, "%d/%d", rec->frame_index, compile_index);
	rec->function = k->code->name;
	rec->src = k->code->src;
	rec->def_line = k->code->firstline;
	rec->resume_pc = k->pc;
	rec->resume_line = k->pc > 0 && k->code->locs && k->pc < k->code->ninsns ? k->code->locs[k->pc].line : 0;
	rec->reason = reason;
	rec->backend = cfg->backend->name;
	rec->dynamic = cfg->dynamic ? cfg->dynamic : "None";
	rec->started_at = wall_seconds();
	rec->outcome = "ok";
	rec->owner_name = cfg->owner_name;
	rec->owner_src = cfg->owner_src;
	rec->owner_line = cfg->owner_line;
}

/* the first failing guard of every entry, newest first (after a failed lookup) */
static void record_failures(struct compile_record *rec, struct fkey *k, struct vm *vm, struct frame *f,
			    const struct backend *backend)
{
	if (!k->nentries)
		return;
	/* out of memory, the record (a log) goes without them */
	rec->failures = util_calloc((size_t)k->nentries, sizeof *rec->failures);
	for (int i = k->nentries - 1; rec->failures && i >= 0; i--) {
		struct entry *e = k->entries[i];
		int g = guards_check(e->tr->guards, vm, f, backend);
		if (g < 0)
			continue;
		char *id = util_strdup(e->compile_id);
		if (!id)
			continue;
		struct failure_record *fr = &rec->failures[rec->nfailures++];
		fr->failed_compile = id;
		guards_failure(e->tr->guards, g, backend, &fr->guard_text, &fr->value_seen);
	}
}

static void record_guards(struct compile_record *rec, const struct guard_set *gs)
{
	/* out of memory, the record (a log) goes without them */
	rec->guards = util_calloc((size_t)gs->nguards, sizeof *rec->guards);
	if (!rec->guards)
		return;
	rec->nguards = gs->nguards;
	for (int i = 0; i < gs->nguards; i++) {
		const struct guard *g = &gs->guards[i];
		struct guard_record *r = &rec->guards[i];
		r->kind = guards_kind_name((enum guard_kind)g->kind);
		r->text = util_dup_or_empty(g->text); /* NULL is "" to the log */
		r->src = g->src;
		r->line = g->line;
		r->col = g->col;
		r->function = g->function;
	}
}

/* NULL when out of memory (the record, a log, goes without it) */
static struct break_record *break_record_of(const struct trace_break *b, int pc)
{
	struct break_record *r = util_calloc(1, sizeof *r);
	struct user_frame *stack = util_calloc((size_t)b->nstack, sizeof *r->stack);
	char *message = util_dup_or_empty(b->message);
	if (!r || !stack || !message) {
		free(r);
		free(stack);
		free(message);
		return NULL;
	}
	r->code = b->code;
	r->message = message;
	r->pc = pc;
	r->nstack = b->nstack;
	r->stack = stack;
	memcpy(r->stack, b->stack, sizeof *r->stack * (size_t)b->nstack);
	return r;
}

/* Logs rec (the graph stays with its entry) and frees what it owns. What
 * cc (NULL: none) handed back goes into the record first: the phases and
 * the fixed times made of them, the stage graphs, the kernels. */
static void record_finish(struct runtime *rt, struct compile_record *rec, struct compile_ctx *cc)
{
	if (cc) {
		rec->trace_ms = compile_ctx_phase_ms(cc, "trace");
		rec->guard_ms = compile_ctx_phase_ms(cc, "guards");
		rec->backend_ms = compile_ctx_phase_ms(cc, "backend");
		rec->total_ms = compile_ctx_elapsed_ms(cc);
		rec->nphases = cc->nphases;
		rec->phases = cc->phases;
		rec->ngraphs_extra = cc->ngraphs;
		rec->graphs_extra = cc->graphs;
		rec->nkernels = cc->nkernels;
		rec->kernels = cc->kernels;
		rec->saved = cc->saved;
		cc->phases = NULL;
		cc->graphs = NULL;
		cc->kernels = NULL;
		cc->nphases = cc->ngraphs = cc->nkernels = 0;
		cc->phases_cap = cc->graphs_cap = cc->kernels_cap = 0;
		compile_ctx_release(cc);
	}
	compile_log_compile(rt->log, rec);
	rec->graph = NULL;
	compile_record_release(rec);
}

/* ---- raising ---- */

/* the pending library error becomes the VM's error at instruction pc of
 * frame f, which is popped */
static value raise_in_frame(struct vm *vm, struct frame *f, uint32_t pc)
{
	vm_error_at(vm, f->code, pc);
	vm_pop_frame(vm, f);
	return val_err();
}

/* "Unsupported: <reason>", exactly LANGUAGE.md section 5's words (malloc'd;
 * NULL when out of memory); the break's code and hint are in the logs and
 * the database */
static char *unsupported_message(const struct trace_break *b)
{
	struct strbuf sb = STRBUF_INIT;
	sb_printf(&sb, "Unsupported: %s", b->message);
	return sb.buf ? sb.buf : util_dup_or_empty("");
}

static value raise_unsupported(struct vm *vm, struct frame *f, const struct trace_break *b)
{
	char *msg = unsupported_message(b);
	tj_error_set("%s", msg ? msg : "Unsupported");
	free(msg);
	for (int i = b->nstack - 1; i >= 1; i--)
		vm_error_at(vm, b->codes[i], b->pcs[i]);
	return raise_in_frame(vm, f, b->nstack > 0 ? b->pcs[0] : f->pc);
}

/* ---- compiling: the passes ---- */

enum outcome { RUN_ENTRY, RUN_EAGER, RAISED };

/* One compile of a frame: what its passes share. */
struct job {
	struct vm *vm;
	struct frame *f;
	struct runtime *rt;
	const struct compile_config *cfg;
	struct fkey *k;
	char id[24];                /* the compile id, F/N */
	struct compile_ctx cc;
	struct compile_record rec;
	struct trace_result *tr;
	struct entry *e;
};

static void job_begin(struct job *j, struct vm *vm, struct frame *f, struct eval_ctx *ctx, struct fkey *k)
{
	memset(j, 0, sizeof *j);
	j->vm = vm;
	j->f = f;
	j->rt = ctx->rt;
	j->cfg = ctx->cfg;
	j->k = k;
	/* the frame's index is given when its first compile is logged */
	int frame = k->frame_index >= 0 ? k->frame_index : j->rt->fe->next_frame_index;
	snprintf(j->id, sizeof j->id, "%d/%d", frame, k->ncompiles);
	compile_ctx_init(&j->cc, j->cfg, &j->rt->bug, j->rt->log, j->id);
	j->cc.vm = vm;
}

/* the bytecode to a graph, guards and a plan (tracer.h); the tracer times
 * its two parts itself. -1 when out of memory. */
static int pass_trace(struct job *j)
{
	const char *d = j->cfg->dynamic;
	int dyn = !d || strcmp(d, "None") == 0 ? DYN_AUTO : strcmp(d, "True") == 0 ? DYN_ALWAYS : DYN_NEVER;
	struct trace_config tc = {j->cfg->backend, j->cfg->fullgraph, dyn, &j->k->dyn, j->rt->log};
	j->tr = trace_frame(j->vm, j->f, &tc, j->id);
	if (!j->tr)
		return -1;
	compile_ctx_phase_add(&j->cc, "trace", j->tr->trace_ms);
	if (j->tr->end != TRACE_FULLGRAPH)
		compile_ctx_phase_add(&j->cc, "guards", j->tr->guard_ms);
	return 0;
}

/* The compile's record: its id, the guard failures that caused it. */
static void pass_record(struct job *j)
{
	struct fkey *k = j->k;
	record_begin(&j->rec, j->rt, k, j->cfg, k->nentries ? "recompile" : "first", k->ncompiles);
	record_failures(&j->rec, k, j->vm, j->f, j->cfg->backend);
	k->ncompiles++;
	memcpy(j->id, j->rec.compile_id, sizeof j->id);
	if (j->tr->brk)
		j->rec.brk = break_record_of(j->tr->brk, j->tr->pc);
}

static void pass_guards(struct job *j)
{
	record_guards(&j->rec, j->tr->guards);
}

/* graph_verify(g) (core/trace/graph.c) after every pass that makes or changes
 * a graph: in debug and test builds (doc/building.md) a broken graph stops
 * the program there, naming the pass (graph_check); otherwise nothing. */
static int verify(struct job *j, const struct graph *g, const char *after)
{
	(void)j;
	graph_check(g, after);
	return 0;
}

/* the backend's compile of the graph (backend.h), timed as the phase
 * "backend" (the backend's own phases nest in it). -1: a compile error,
 * pending (tj_error_set). */
static int pass_backend(struct job *j)
{
	j->rec.graph = j->tr->graph;
	const struct backend *b = j->cfg->backend;
	/* TJIT_COMPILE_ONLY: a graph not selected compiles on the other backend */
	if (j->rt->sw.others && !runtime_compile_selected(j->rt, j->rec.compile_id)) {
		b = j->rt->sw.others;
		j->e->backend = b;
		j->rec.backend = b->name;
	}
	int ph = compile_ctx_phase_begin(&j->cc, "backend");
	j->e->compiled = b->compile(&j->cc, j->tr->graph);
	compile_ctx_phase_end(&j->cc, ph);
	return j->e->compiled ? 0 : -1;
}

/* fullgraph=True and the trace broke: logged as a compile that failed at
 * its break, so that the profiler and the database show where fullgraph
 * gave up, and raised as Unsupported */
static enum outcome fail_fullgraph(struct job *j)
{
	pass_record(j);
	j->rec.outcome = "error";
	j->rec.error = unsupported_message(j->tr->brk);
	record_finish(j->rt, &j->rec, &j->cc);
	raise_unsupported(j->vm, j->f, j->tr->brk);
	trace_result_free(j->tr);
	return RAISED;
}

/* nothing to compile here (or an error the VM is about to raise): this
 * frame runs in the VM from now on */
static enum outcome skip_frame(struct job *j)
{
	j->k->skip = true;
	trace_result_free(j->tr);
	compile_ctx_release(&j->cc);
	return RUN_EAGER;
}

static enum outcome fail_backend(struct job *j)
{
	char *msg = tj_error_take();
	j->rec.outcome = "error";
	j->rec.error = util_strdup(msg ? msg : "backend compile failed");
	record_finish(j->rt, &j->rec, &j->cc);
	tj_error_set("%s", msg ? msg : "backend compile failed");
	free(msg);
	entry_free(j->e);
	raise_in_frame(j->vm, j->f, j->f->pc);
	return RAISED;
}

/* out of memory after the trace: logged as a compile that failed, and the
 * frame runs in the VM (a later call may compile it again) */
static enum outcome fail_oom(struct job *j)
{
	j->rec.outcome = "error";
	free(j->rec.error); /* a fallback's reason, when installing it failed */
	j->rec.error = util_strdup("out of memory");
	j->rec.fallback = NULL;
	record_finish(j->rt, &j->rec, &j->cc);
	if (j->e)
		entry_free(j->e); /* and its trace */
	else
		trace_result_free(j->tr);
	return RUN_EAGER;
}

/* the cache entry of the trace (the backend's artifact comes next); -1
 * when out of memory */
static int make_entry(struct job *j)
{
	char *id = util_strdup(j->rec.compile_id);
	struct entry *e = util_calloc(1, sizeof *e);
	if (!id || !e) {
		free(id);
		free(e);
		return -1;
	}
	e->tr = j->tr;
	e->backend = j->cfg->backend;
	e->compile_index = j->rec.compile_index;
	memcpy(e->compile_id, j->rec.compile_id, sizeof e->compile_id);
	if (j->tr->brk) {
		j->rec.outcome = "graph_break";
		e->hit_brk.code = j->tr->brk->code;
		e->hit_brk.pc = j->tr->pc;
	}
	free(j->tr->graph->compile_id);
	j->tr->graph->compile_id = id;
	j->e = e;
	return 0;
}

/* logs the compile and adds its entry to the frame's */
static enum outcome install(struct job *j, struct entry **out)
{
	struct fkey *k = j->k;
	if (k->nentries == k->cap) {
		int cap = k->cap ? k->cap * 2 : 4;
		struct entry **entries = util_realloc(k->entries, sizeof *k->entries * (size_t)cap);
		if (!entries)
			return fail_oom(j);
		k->entries = entries;
		k->cap = cap;
	}
	record_finish(j->rt, &j->rec, &j->cc);
	k->entries[k->nentries++] = j->e;
	flush_counts(j->rt->log, k);
	*out = j->e;
	return RUN_ENTRY;
}

/* The backend cannot compile this graph (cc.unsupported: an op it has no
 * rule for): a warning at the frame's line, the compile logged with
 * outcome "error" and the message, and the graph installed on the
 * backend's fallback (eager), so that the frame runs and is not compiled
 * again at the next call. Without a fallback, or when that fails too, the
 * error is raised as any backend's. */
static enum outcome fall_back(struct job *j, struct entry **out)
{
	const struct backend *fb = j->cfg->backend->fallback;
	if (!fb)
		return fail_backend(j);
	char *msg = tj_error_take();
	void *compiled = NULL;
	/* down the chain (inductor -> aot_eager -> eager) while a stage says
	 * it cannot handle the graph; the first one's reason is the warning */
	for (;;) {
		compile_ctx_drop_results(&j->cc);
		compiled = fb->compile(&j->cc, j->tr->graph);
		if (compiled || !j->cc.unsupported || !fb->fallback)
			break;
		tj_error_clear();
		fb = fb->fallback;
	}
	if (!compiled) {
		free(msg);
		return fail_backend(j);
	}
	j->e->backend = fb;
	j->e->compiled = compiled;
	struct strbuf sb = STRBUF_INIT;
	sb_printf(&sb, "%s; falling back to the %s backend", msg ? msg : "cannot compile the graph", fb->name);
	j->rec.outcome = "error";
	j->rec.error = msg ? msg : util_strdup("cannot compile the graph");
	j->rec.fallback = fb->name;
	struct code *c = j->f->code;
	struct src_loc loc = {0};
	if (c->locs && (int)j->f->pc < c->ninsns)
		loc = c->locs[j->f->pc];
	enum outcome o = install(j, out);
	if (sb.buf && o == RUN_ENTRY)
		compile_log_warning_at(j->rt->log, c->src, loc, sb.buf);
	sb_release(&sb);
	return o;
}

/* Compiles frame f on a miss: the passes, in order. Beside each, the
 * TJIT_LOGS artifacts that show its result: they are fields of the
 * compile's record, and go out together when it is logged (one write, in
 * this order: recompiles, graph_breaks, graph_code, aot_graphs and
 * output_code, guards), so that a compile's lines never interleave. */
static enum outcome compile_frame(struct vm *vm, struct frame *f, struct eval_ctx *ctx, struct fkey *k,
				  struct entry **out)
{
	struct job j;
	job_begin(&j, vm, f, ctx, k);
	if (pass_trace(&j) < 0) {               /* dynamic, as it goes */
		compile_ctx_release(&j.cc);
		return RUN_EAGER;               /* out of memory: this call in the VM */
	}
	if (j.tr->end == TRACE_FULLGRAPH)
		return fail_fullgraph(&j);      /* recompiles */
	if (j.tr->end == TRACE_FAILED ||
	    (j.tr->end == TRACE_RETURN && graph_op_count(j.tr->graph) == 0 && j.tr->neffects == 0))
		return skip_frame(&j);
	pass_record(&j);                        /* recompiles, graph_breaks */
	verify(&j, j.tr->graph, "trace");
	pass_guards(&j);                        /* guards */
	if (make_entry(&j) < 0)
		return fail_oom(&j);
	/* graph cleanups go here, each followed by verify() */
	if (graph_op_count(j.tr->graph) == 0)
		return install(&j, out);
	if (pass_backend(&j) < 0)               /* graph_code, aot_graphs, output_code */
		return j.cc.unsupported ? fall_back(&j, out) : fail_backend(&j);
	for (int i = 0; i < j.cc.ngraphs; i++)
		verify(&j, j.cc.graphs[i], j.cfg->backend->name);
	return install(&j, out);
}

/* a miss that does not compile: at the cache limit or in a frozen function */
static void log_miss(struct vm *vm, struct frame *f, struct eval_ctx *ctx, struct fkey *k, const char *reason)
{
	struct runtime *rt = ctx->rt;
	struct compile_record rec;
	record_begin(&rec, rt, k, ctx->cfg, reason, k->ncompiles);
	record_failures(&rec, k, vm, f, ctx->cfg->backend);
	k->ncompiles++; /* its compile id is its own: a later compile takes the next */
	rec.outcome = "skipped";
	if (strcmp(reason, "cache_limit") == 0) {
		k->limit_warned = true;
		const char *last = rec.nfailures ? rec.failures[0].guard_text : "?";
		const char *seen = rec.nfailures ? rec.failures[0].value_seen : "?";
		char resume[48] = "";
		if (rec.resume_pc > 0) /* a resume point: named as the logs name it */
			snprintf(resume, sizeof resume, " (resume at line %d)", rec.resume_line);
		compile_log_warning(rt->log,
				    "cache_size_limit (%d) reached for function '%s' (%s:%d)%s, last reason: %s (got %s); "
				    "it runs eagerly from now on",
				    rt->sw.cache_size_limit, k->code->name, k->code->src ? k->code->src->path : "?",
				    k->code->firstline, resume, last, seen);
	}
	record_finish(rt, &rec, NULL);
	flush_counts(rt->log, k);
}

/* ---- running ---- */

#define MAX_INPUTS_ON_STACK 16
#define MAX_OUTPUTS_ON_STACK 16

/* TJIT_RECORD=F/N:PATH (runtime.h): the inputs of the first call of
 * compile F/N to PATH, once; a file that cannot be written is a warning */
static void record_inputs(struct vm *vm, const struct entry *e, tensor *const *in, int n)
{
	struct runtime *rt = vm_runtime(vm);
	const char *spec = rt ? rt->sw.record : NULL;
	if (!spec || rt->fe->recorded)
		return;
	const char *colon = strchr(spec, ':');
	size_t len = strlen(e->compile_id);
	if (!colon || (size_t)(colon - spec) != len || strncmp(spec, e->compile_id, len) != 0)
		return;
	rt->fe->recorded = true;
	if (tensor_io_save(colon + 1, in, n) < 0) {
		char *msg = tj_error_take();
		compile_log_warning(rt->log, "TJIT_RECORD: %s", msg ? msg : "cannot save the inputs");
		free(msg);
	}
}

/* Runs entry e on frame f. Returns 1 with *result when the frame returned
 * (popped), 0 when it goes on at f->pc, -1 after an error (popped), 2 when
 * the frame must run in the VM from where it is (untouched). */
static int run_entry(struct vm *vm, struct frame *f, struct entry *e, value *result)
{
	const struct trace_result *tr = e->tr;
	const struct graph *g = tr->graph;
	struct guard_set *gs = tr->guards;
	tensor *small_in[MAX_INPUTS_ON_STACK];
	value small_out[MAX_OUTPUTS_ON_STACK];
	tensor **in = tr->ninputs <= MAX_INPUTS_ON_STACK ? small_in : util_calloc((size_t)tr->ninputs, sizeof *in);
	value *out = g->noutputs <= MAX_OUTPUTS_ON_STACK ? small_out : util_calloc((size_t)g->noutputs, sizeof *out);
	int rc = 0;
	if (!in || !out) {
		rc = 2; /* nothing ran: the frame runs in the VM */
		goto out;
	}
	uint64_t seed, offset;
	rng_get_state(&seed, &offset);
	if (e->compiled) {
		for (int i = 0; i < tr->ninputs; i++) {
			in[i] = val_as_tensor(gs->scratch[tr->input_sources[i]]);
			tensor_incref(in[i]);
		}
		record_inputs(vm, e, in, tr->ninputs);
		rc = e->backend->run(e->compiled, vm, in, out);
		for (int i = 0; i < tr->ninputs; i++)
			tensor_decref(in[i]);
		if (rc < 0) {
			if (rc == BACKEND_RUN_DATA_ERROR) {
				/* the VM raises it where eager code would */
				tj_error_clear();
				rng_set_state(seed, offset);
				rc = 2;
			} else {
				raise_in_frame(vm, f, f->pc);
				rc = -1;
			}
			goto out;
		}
		if (tr->graph_calls_user)
			guards_resolve(gs, vm, f);
	}
	value ret = val_none();
	if (trace_rebuild(tr, vm, f, gs->scratch, out, &ret) < 0) {
		tj_error_clear();
		rng_set_state(seed, offset);
		rc = 2;
	} else if (tr->end == TRACE_RETURN) {
		vm_pop_frame(vm, f);
		*result = ret;
		rc = 1;
	}
	if (e->compiled)
		for (int i = 0; i < g->noutputs; i++)
			val_decref(out[i]);
out:
	if (in != small_in)
		free(in);
	if (out != small_out)
		free(out);
	return rc;
}

static value eval_frame(struct vm *vm, struct frame *f, void *p)
{
	struct eval_ctx *ctx = p;
	struct frame_eval *fe = ctx->rt->fe;
	if (fe->skip_next && f->code == fe->skip_next) {
		/* disable(f, recursive=False) */
		fe->skip_next = NULL;
		struct fkey *k = cache_find(ctx->cache, f->code, (int)f->pc);
		if (!k)
			return vm_run_frame(vm, f); /* out of memory: eagerly */
		k->calls++;
		k->eager_calls++;
		k->eager_reason = "disabled";
		return vm_run_frame(vm, f);
	}
	for (;;) {
		struct fkey *k = cache_find(ctx->cache, f->code, (int)f->pc);
		if (!k)
			return vm_run_frame(vm, f); /* out of memory: eagerly */
		k->calls++;
		if (k->skip)
			return vm_run_frame(vm, f);
		if ((k->calls & (COUNTS_FLUSH_EVERY - 1)) == 0)
			flush_counts(ctx->rt->log, k);
		struct entry *e = find_entry(k, vm, f, ctx->cfg->backend);
		if (e) {
			k->hits++;
		} else if (ctx->cfg->frozen) {
			if (!k->frozen_logged) {
				k->frozen_logged = true;
				log_miss(vm, f, ctx, k, "frozen_miss");
			}
			k->eager_calls++;
			k->eager_reason = "frozen_miss";
			return vm_run_frame(vm, f);
		} else if (k->nentries >= ctx->rt->sw.cache_size_limit) {
			if (!k->limit_warned)
				log_miss(vm, f, ctx, k, "cache_limit");
			k->eager_calls++;
			k->eager_reason = "cache_limit";
			return vm_run_frame(vm, f);
		} else {
			switch (compile_frame(vm, f, ctx, k, &e)) {
			case RAISED:
				return val_err();
			case RUN_EAGER:
				return vm_run_frame(vm, f);
			case RUN_ENTRY:
				/* the guards were resolved for f by the trace's check: resolve for this entry */
				guards_resolve(e->tr->guards, vm, f);
				break;
			}
		}
		value result;
		int rc = run_entry(vm, f, e, &result);
		if (rc == 1)
			return result;
		if (rc < 0)
			return val_err();
		if (rc == 2) {
			k->eager_calls++;
			return vm_run_frame(vm, f);
		}
		if (e->tr->brk) {
			struct compile_record hit;
			memset(&hit, 0, sizeof hit);
			hit.frame_index = k->frame_index;
			hit.compile_index = e->compile_index;
			hit.brk = &e->hit_brk;
			compile_log_break_hit(ctx->rt->log, &hit);
		}
		/* the breaking instruction, in the VM; a call there comes back here */
		int st = vm_step(vm, f, &result);
		if (st == 1)
			return result;
		if (st < 0)
			return val_err();
	}
}

/* ---- entering ---- */

static value call_with(struct vm *vm, struct eval_ctx *ctx, value callee, const value *args, int nargs,
		       value kwnames)
{
	struct frame_eval *fe = ctx->rt->fe;
	void *old_ctx;
	vm_eval_frame_fn old = vm_get_eval_frame(vm, &old_ctx);
	vm_set_eval_frame(vm, eval_frame, ctx);
	fe->running++;
	value r = vm_call(vm, callee, args, nargs, kwnames);
	fe->running--;
	vm_set_eval_frame(vm, old, old_ctx);
	if (fe->running == 0 && fe->retired)
		free_retired(ctx->rt);
	return r;
}

/* the VM's runtime, or NULL after vm_raise */
static struct runtime *runtime_of(struct vm *vm)
{
	struct runtime *rt = vm_runtime(vm);
	if (!rt)
		vm_raise("compiled call without a runtime: this VM runs everything eagerly");
	return rt;
}

value frame_eval_call(struct vm *vm, const struct compile_config *cfg, value callee, const value *args, int nargs,
		      value kwnames)
{
	struct runtime *rt = runtime_of(vm);
	if (!rt)
		return val_err();
	struct eval_ctx ctx = {cfg, rt->fe->current ? rt->fe->current : &rt->fe->main, rt};
	return call_with(vm, &ctx, callee, args, nargs, kwnames);
}

value frame_eval_call_private(struct vm *vm, value callee, const value *args, int nargs, value kwnames,
			      const struct backend *backend)
{
	struct runtime *rt = runtime_of(vm);
	if (!rt)
		return val_err();
	struct compile_config cfg = {backend, false, "None", false, NULL, NULL, 0};
	if (callee.tag == VAL_FUNC) {
		cfg.owner_name = val_func(callee)->code->name;
		cfg.owner_src = val_func(callee)->code->src;
		cfg.owner_line = val_func(callee)->code->firstline;
	}
	struct cache *priv = util_calloc(1, sizeof *priv);
	if (!priv)
		return vm_raise("out of memory");
	struct cache *saved = rt->fe->current;
	rt->fe->current = priv;
	struct eval_ctx ctx = {&cfg, priv, rt};
	value r = call_with(vm, &ctx, callee, args, nargs, kwnames);
	rt->fe->current = saved;
	cache_free(rt->log, priv);
	free(priv);
	return r;
}
