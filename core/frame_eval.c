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
#include "tensor.h"
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

struct eval_ctx {
	const struct compile_config *cfg;
	struct cache *cache;
};

static struct cache main_cache;
static struct cache *current = &main_cache;
static struct cache *retired;
static int running;                 /* compiled calls running now */
static int next_frame_index;
static bool disabled;
static int cache_size_limit = 8;
static const struct backend *backend_override;
static bool fullgraph_override;
/* disable(f, recursive=False): the next frame of this code runs in the VM */
static struct code *skip_next;

/* ---- switches ---- */

void frame_eval_set_disabled(bool d) { disabled = d; }
bool frame_eval_disabled(void) { return disabled; }
void frame_eval_set_cache_size_limit(int limit) { cache_size_limit = limit < 1 ? 1 : limit; }
int frame_eval_cache_size_limit(void) { return cache_size_limit; }
bool frame_eval_is_tracing(void) { return trace_active(); }

int frame_eval_set_backend_override(const char *name)
{
	if (!name) {
		backend_override = NULL;
		return 0;
	}
	const struct backend *b = backend_find(name);
	if (!b)
		return -1;
	backend_override = b;
	return 0;
}

void frame_eval_set_fullgraph_override(bool on) { fullgraph_override = on; }

void frame_eval_apply_overrides(struct compile_config *cfg)
{
	if (backend_override)
		cfg->backend = backend_override;
	if (fullgraph_override)
		cfg->fullgraph = true;
}

void frame_eval_skip_next(struct code *code) { skip_next = code; }

/* ---- the cache ---- */

static size_t key_hash(const struct code *code, int pc)
{
	uintptr_t h = (uintptr_t)code >> 4;
	h ^= (uintptr_t)pc * 0x9e3779b1u;
	h ^= h >> 15;
	return (size_t)h;
}

static struct fkey *cache_find(struct cache *c, struct code *code, int pc)
{
	if (c->nbuckets) {
		for (struct fkey *k = c->buckets[key_hash(code, pc) & (c->nbuckets - 1)]; k; k = k->next)
			if (k->code == code && k->pc == pc)
				return k;
	}
	if (c->n + 1 > c->nbuckets) {
		size_t nb = c->nbuckets ? c->nbuckets * 2 : 64;
		struct fkey **b = xcalloc(nb, sizeof *b);
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
	struct fkey *k = xcalloc(1, sizeof *k);
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

static void flush_counts(struct fkey *k)
{
	if (k->frame_index < 0)
		return;
	/* the timed calls stand for all: scale by checks, not calls */
	double ns = k->sampled_checks ? (double)k->sampled_ns * (double)k->guard_checks / (double)k->sampled_checks : 0;
	struct db_frame_counts c = {k->calls, k->hits, k->eager_calls, k->guard_checks, (int64_t)ns, k->eager_reason};
	compile_log_frame_counts(k->log_id, &c);
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

static void cache_free(struct cache *c)
{
	for (size_t i = 0; i < c->nbuckets; i++) {
		for (struct fkey *k = c->buckets[i], *next; k; k = next) {
			next = k->next;
			flush_counts(k);
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

static void free_retired(void)
{
	while (retired) {
		struct cache *c = retired;
		retired = c->next_retired;
		cache_free(c);
		free(c);
	}
}

void frame_eval_reset(void)
{
	struct cache *c = xcalloc(1, sizeof *c);
	*c = main_cache;
	memset(&main_cache, 0, sizeof main_cache);
	c->next_retired = retired;
	retired = c;
	if (running == 0)
		free_retired();
}

void frame_eval_shutdown(void)
{
	cache_free(&main_cache);
	free_retired();
}

/* ---- compile records ---- */

static double wall_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int frame_index_of(struct fkey *k)
{
	if (k->frame_index < 0) {
		k->frame_index = next_frame_index++;
		int line = k->pc > 0 && k->code->locs && k->pc < k->code->ninsns ? k->code->locs[k->pc].line : 0;
		k->log_id = compile_log_frame(k->frame_index, k->code->name, k->code->src, k->code->firstline, k->pc,
					      line);
	}
	return k->frame_index;
}

static void record_begin(struct compile_record *rec, struct fkey *k, const struct compile_config *cfg,
			 const char *reason, int compile_index)
{
	memset(rec, 0, sizeof *rec);
	rec->frame_index = frame_index_of(k);
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
	rec->failures = xcalloc((size_t)k->nentries, sizeof *rec->failures);
	for (int i = k->nentries - 1; i >= 0; i--) {
		struct entry *e = k->entries[i];
		int g = guards_check(e->tr->guards, vm, f, backend);
		if (g < 0)
			continue;
		struct failure_record *fr = &rec->failures[rec->nfailures++];
		fr->failed_compile = xdup_or_empty(e->compile_id);
		guards_failure(e->tr->guards, g, backend, &fr->guard_text, &fr->value_seen);
	}
}

static void record_guards(struct compile_record *rec, const struct guard_set *gs)
{
	rec->nguards = gs->nguards;
	rec->guards = xcalloc((size_t)gs->nguards, sizeof *rec->guards);
	for (int i = 0; i < gs->nguards; i++) {
		const struct guard *g = &gs->guards[i];
		struct guard_record *r = &rec->guards[i];
		r->kind = guards_kind_name((enum guard_kind)g->kind);
		r->text = xdup_or_empty(g->text);
		r->src = g->src;
		r->line = g->line;
		r->col = g->col;
		r->function = g->function;
	}
}

static struct break_record *break_record_of(const struct trace_break *b, int pc)
{
	struct break_record *r = xcalloc(1, sizeof *r);
	r->code = b->code;
	r->message = xdup_or_empty(b->message);
	r->pc = pc;
	r->nstack = b->nstack;
	r->stack = xcalloc((size_t)b->nstack, sizeof *r->stack);
	memcpy(r->stack, b->stack, sizeof *r->stack * (size_t)b->nstack);
	return r;
}

/* logs rec (the graph stays with its entry) and frees what it owns */
static void record_finish(struct compile_record *rec)
{
	compile_log_compile(rec);
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

/* "Unsupported: <reason>", exactly LANGUAGE.md section 5's words (malloc'd);
 * the break's code and hint are in the logs and the database */
static char *unsupported_message(const struct trace_break *b)
{
	struct strbuf sb = STRBUF_INIT;
	sb_printf(&sb, "Unsupported: %s", b->message);
	return sb.buf ? sb.buf : xdup_or_empty("");
}

static value raise_unsupported(struct vm *vm, struct frame *f, const struct trace_break *b)
{
	char *msg = unsupported_message(b);
	tj_error_set("%s", msg);
	free(msg);
	for (int i = b->nstack - 1; i >= 1; i--)
		vm_error_at(vm, b->codes[i], b->pcs[i]);
	return raise_in_frame(vm, f, b->nstack > 0 ? b->pcs[0] : f->pc);
}

/* ---- compiling ---- */

enum outcome { RUN_ENTRY, RUN_EAGER, RAISED };

static enum outcome compile_frame(struct vm *vm, struct frame *f, struct eval_ctx *ctx, struct fkey *k,
				  struct entry **out)
{
	const struct compile_config *cfg = ctx->cfg;
	double t0 = util_now_ms();
	char id[24];
	int provisional = k->frame_index >= 0 ? k->frame_index : next_frame_index;
	snprintf(id, sizeof id, "%d/%d", provisional, k->ncompiles);
	int dyn = !cfg->dynamic || strcmp(cfg->dynamic, "None") == 0 ? DYN_AUTO
		  : strcmp(cfg->dynamic, "True") == 0			? DYN_ALWAYS
									: DYN_NEVER;
	struct trace_config tc = {cfg->backend, cfg->fullgraph, dyn, &k->dyn};
	struct trace_result *tr = trace_frame(vm, f, &tc, id);
	if (tr->end == TRACE_FULLGRAPH) {
		/* logged as a compile that failed at its break, so that the
		 * profiler and the database show where fullgraph gave up */
		struct compile_record rec;
		record_begin(&rec, k, cfg, k->nentries ? "recompile" : "first", k->ncompiles);
		record_failures(&rec, k, vm, f, cfg->backend);
		k->ncompiles++;
		rec.trace_ms = tr->trace_ms;
		rec.brk = break_record_of(tr->brk, tr->pc);
		rec.outcome = "error";
		rec.error = unsupported_message(tr->brk);
		rec.total_ms = util_now_ms() - t0;
		record_finish(&rec);
		raise_unsupported(vm, f, tr->brk);
		trace_result_free(tr);
		return RAISED;
	}
	if (tr->end == TRACE_FAILED ||
	    (tr->end == TRACE_RETURN && graph_op_count(tr->graph) == 0 && tr->neffects == 0)) {
		/* nothing to compile here (or an error the VM is about to raise):
		 * this frame runs in the VM from now on */
		k->skip = true;
		trace_result_free(tr);
		return RUN_EAGER;
	}
	struct compile_record rec;
	record_begin(&rec, k, cfg, k->nentries ? "recompile" : "first", k->ncompiles);
	record_failures(&rec, k, vm, f, cfg->backend);
	k->ncompiles++;
	free(tr->graph->compile_id);
	tr->graph->compile_id = xdup_or_empty(rec.compile_id);
	rec.trace_ms = tr->trace_ms;
	rec.guard_ms = tr->guard_ms;
	record_guards(&rec, tr->guards);
	if (tr->brk) {
		rec.brk = break_record_of(tr->brk, tr->pc);
		rec.outcome = "graph_break";
	}
	struct entry *e = xcalloc(1, sizeof *e);
	e->tr = tr;
	e->backend = cfg->backend;
	e->compile_index = rec.compile_index;
	memcpy(e->compile_id, rec.compile_id, sizeof e->compile_id);
	if (tr->brk) {
		e->hit_brk.code = tr->brk->code;
		e->hit_brk.pc = tr->pc;
	}
	bool has_ops = graph_op_count(tr->graph) > 0;
	if (has_ops) {
		rec.graph = tr->graph;
		double tb = util_now_ms();
		struct graph **extra = NULL;
		int nextra = 0;
		e->compiled = cfg->backend->compile(tr->graph, &extra, &nextra);
		rec.backend_ms = util_now_ms() - tb;
		rec.ngraphs_extra = nextra;
		rec.graphs_extra = extra;
		if (!e->compiled) {
			char *msg = tj_error_take();
			rec.outcome = "error";
			rec.error = xdup_or_empty(msg ? msg : "backend compile failed");
			rec.total_ms = util_now_ms() - t0;
			record_finish(&rec);
			tj_error_set("%s", msg ? msg : "backend compile failed");
			free(msg);
			entry_free(e);
			raise_in_frame(vm, f, f->pc);
			return RAISED;
		}
	}
	rec.total_ms = util_now_ms() - t0;
	record_finish(&rec);
	if (k->nentries == k->cap) {
		k->cap = k->cap ? k->cap * 2 : 4;
		k->entries = realloc(k->entries, sizeof *k->entries * (size_t)k->cap);
		if (!k->entries) {
			fputs("tjit: out of memory\n", stderr);
			abort();
		}
	}
	k->entries[k->nentries++] = e;
	flush_counts(k);
	*out = e;
	return RUN_ENTRY;
}

/* a miss that does not compile: at the cache limit or in a frozen function */
static void log_miss(struct vm *vm, struct frame *f, struct eval_ctx *ctx, struct fkey *k, const char *reason)
{
	struct compile_record rec;
	record_begin(&rec, k, ctx->cfg, reason, k->ncompiles);
	record_failures(&rec, k, vm, f, ctx->cfg->backend);
	rec.outcome = "skipped";
	if (strcmp(reason, "cache_limit") == 0) {
		k->limit_warned = true;
		const char *last = rec.nfailures ? rec.failures[0].guard_text : "?";
		const char *seen = rec.nfailures ? rec.failures[0].value_seen : "?";
		compile_log_warning("cache_size_limit (%d) reached for function '%s' (%s:%d), last reason: %s (got %s); "
				    "it runs eagerly from now on",
				    cache_size_limit, k->code->name, k->code->src ? k->code->src->path : "?",
				    k->code->firstline, last, seen);
	}
	record_finish(&rec);
	flush_counts(k);
}

/* ---- running ---- */

#define MAX_INPUTS_ON_STACK 16
#define MAX_OUTPUTS_ON_STACK 16

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
	tensor **in = tr->ninputs <= MAX_INPUTS_ON_STACK ? small_in : xcalloc((size_t)tr->ninputs, sizeof *in);
	value *out = g->noutputs <= MAX_OUTPUTS_ON_STACK ? small_out : xcalloc((size_t)g->noutputs, sizeof *out);
	int rc = 0;
	uint64_t seed, offset;
	rng_get_state(&seed, &offset);
	if (e->compiled) {
		for (int i = 0; i < tr->ninputs; i++) {
			in[i] = val_as_tensor(gs->scratch[tr->input_sources[i]]);
			tensor_incref(in[i]);
		}
		rc = e->backend->run(e->compiled, vm, in, out);
		for (int i = 0; i < tr->ninputs; i++)
			tensor_decref(in[i]);
		if (rc < 0) {
			if (e->backend == backend_default()) {
				/* a kernel error: the VM raises it where eager code would */
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
	if (skip_next && f->code == skip_next) {
		/* disable(f, recursive=False) */
		skip_next = NULL;
		struct fkey *k = cache_find(ctx->cache, f->code, (int)f->pc);
		k->calls++;
		k->eager_calls++;
		k->eager_reason = "disabled";
		return vm_run_frame(vm, f);
	}
	for (;;) {
		struct fkey *k = cache_find(ctx->cache, f->code, (int)f->pc);
		k->calls++;
		if (k->skip)
			return vm_run_frame(vm, f);
		if ((k->calls & (COUNTS_FLUSH_EVERY - 1)) == 0)
			flush_counts(k);
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
		} else if (k->nentries >= cache_size_limit) {
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
			compile_log_break_hit(&hit);
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
	void *old_ctx;
	vm_eval_frame_fn old = vm_get_eval_frame(vm, &old_ctx);
	vm_set_eval_frame(vm, eval_frame, ctx);
	running++;
	value r = vm_call(vm, callee, args, nargs, kwnames);
	running--;
	vm_set_eval_frame(vm, old, old_ctx);
	if (running == 0 && retired)
		free_retired();
	return r;
}

value frame_eval_call(struct vm *vm, const struct compile_config *cfg, value callee, const value *args, int nargs,
		      value kwnames)
{
	struct eval_ctx ctx = {cfg, current};
	return call_with(vm, &ctx, callee, args, nargs, kwnames);
}

value frame_eval_call_private(struct vm *vm, value callee, const value *args, int nargs, value kwnames,
			      const char *backend)
{
	const struct backend *b = backend_find(backend ? backend : "eager");
	if (!b)
		return val_err();
	struct compile_config cfg = {b, false, "None", false, NULL, NULL, 0};
	if (callee.tag == VAL_FUNC) {
		cfg.owner_name = val_func(callee)->code->name;
		cfg.owner_src = val_func(callee)->code->src;
		cfg.owner_line = val_func(callee)->code->firstline;
	}
	struct cache *priv = xcalloc(1, sizeof *priv);
	struct cache *saved = current;
	current = priv;
	struct eval_ctx ctx = {&cfg, priv};
	value r = call_with(vm, &ctx, callee, args, nargs, kwnames);
	current = saved;
	cache_free(priv);
	free(priv);
	return r;
}
