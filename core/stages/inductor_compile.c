/* inductor_compile.c - one graph (aot_eager's forward or backward) to
 * machine code: lowered and scheduled (inductor_lower.c), each kernel
 * looked up in the kernel cache by its content hash, else emitted as LLVM
 * IR, optimized and compiled to an object by the code generator's shared
 * object (opened on the first inductor compile: codegen_load.c), put in
 * the cache, and loaded into the JIT.
 *
 * Phases of the compile (compile_phases, tjit-profile): schedule, lower,
 * codegen (the LLVM IR), llvm_optimize, jit (object code and loading).
 * The kernels that the cache does not have compile at once on the thread
 * pool's threads: their codegen, llvm_optimize and jit times, summed over
 * the threads, are scaled to the wall time the pool took (each phase
 * keeps its share), so that the phases add up to the compile's time.
 * Each kernel is a row of the kernels table with its loop IR, its LLVM IR
 * (when it was compiled in this run), its time and whether it came from
 * the cache; TJIT_LOGS=output_code prints both IRs, fusion the
 * scheduler's decisions, perf_hints what did not fuse.
 */
#include "inductor_compile.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen_load.h"
#include "compile_log.h"
#include "error.h"
#include "kernel_cache.h"
#include "parallel.h"
#include "util.h"

static struct kernel_cache *cache;      /* the process's, made on the first compile */
static bool cache_disk = true;

void ind_set_kernel_cache(bool disk)
{
	cache_disk = disk;
	if (cache) {
		kernel_cache_free(cache);
		cache = NULL;
	}
}

static struct kernel_cache *the_cache(void)
{
	if (!cache)
		cache = kernel_cache_new(NULL, cache_disk);
	return cache;
}

/* a line of TJIT_LOGS=perf_hints */
static void __attribute__((format(printf, 2, 3))) hint(struct compile_ctx *cc, const char *fmt, ...)
{
	if (!compile_ctx_logs(cc, LOG_PERF_HINTS))
		return;
	char line[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	compile_ctx_dump(cc, line);
}

/* a codegen error (malloc'd) as the compile's error, naming the kernel:
 * a kernel LLVM rejects (or that it had no memory for) is a graph this
 * stage cannot compile */
static int cg_error(struct compile_ctx *cc, const struct lkernel *k, const char *what, char *err)
{
	tj_error_set("inductor: kernel %s: %s: %s", k->name, what, err ? err : "out of memory");
	free(err);
	cc->unsupported = true;
	return -1;
}

/* a failure of the compile that falls back (a graph it cannot lower, a
 * kernel LLVM rejects, out of memory in the middle of it: aot_eager's
 * artifact needs no kernel), with the stage named in the error */
static void *fall_back(struct compile_ctx *cc)
{
	const char *why = tj_error_peek();
	if (!why || strncmp(why, "inductor: ", 10) != 0) {
		char *msg = tj_error_take();
		tj_error_set("inductor: %s", msg ? msg : "out of memory");
		free(msg);
	}
	cc->unsupported = true;
	return NULL;
}

/* a kernel of the graph: its record, and its object from the cache or
 * from the code generator */
struct kjob {
	const struct lkernel *k;
	const struct codegen_api *api;
	struct kc_key key;
	struct kernel_record rec;
	const void *obj;            /* the object: the cache's, or made */
	size_t len;
	void *made;                 /* compiled in this run (malloc'd) */
	const struct kjob *twin;    /* an earlier miss of the same kernel: its object is this one's */
	char *err;                  /* a failure of the code generator */
	const char *what;           /* its stage */
	double ms[3];               /* codegen, llvm_optimize, object code */
};

/* LLVM IR, optimized, to an object: what a cache miss costs. Each module
 * has a context of its own, so kernels compile on the pool's threads */
static void compile_job(struct kjob *j)
{
	const struct codegen_api *api = j->api;
	double t0 = util_now_ms();
	struct cg_module *m = api->emit_kernel(j->k, &j->err);
	int rc = m ? api->verify(m, &j->err) : -1;
	double t1 = util_now_ms();
	j->ms[0] = t1 - t0;
	if (rc < 0) {
		j->what = m ? "LLVM verifier" : "code generation";
		if (m)
			api->module_free(m);
		return;
	}
	rc = api->optimize(m, 2, &j->err);
	if (rc == 0)
		j->rec.source = api->module_ir(m);
	double t2 = util_now_ms();
	j->ms[1] = t2 - t1;
	if (rc == 0)
		rc = api->emit_object(m, &j->made, &j->len, &j->err);
	api->module_free(m);
	j->ms[2] = util_now_ms() - t2;
	if (rc < 0)
		j->what = "LLVM";
	j->obj = j->made;
}

static void compile_jobs(void *ctx, int64_t begin, int64_t end)
{
	struct kjob *const *jobs = ctx;
	for (int64_t i = begin; i < end; i++)
		compile_job(jobs[i]);
}

static int by_size_desc(const void *a, const void *b)
{
	const struct kjob *x = *(struct kjob *const *)a, *y = *(struct kjob *const *)b;
	return (y->k->nnodes > x->k->nnodes) - (y->k->nnodes < x->k->nnodes);
}

/* A cache entry's payload: the object code, then the optimized LLVM IR
 * (text, no NUL: the database's kernels.llvm_ir for a kernel taken from
 * the cache too), then the object's length, a u64 little-endian. */
static void *payload_make(const void *obj, size_t len, const char *ir, size_t *plen)
{
	size_t nir = ir ? strlen(ir) : 0;
	unsigned char *p = util_malloc(len + nir + 8);
	if (!p)
		return NULL;
	memcpy(p, obj, len);
	if (nir)
		memcpy(p + len, ir, nir);
	for (int b = 0; b < 8; b++)
		p[len + nir + b] = (unsigned char)((uint64_t)len >> (8 * b));
	*plen = len + nir + 8;
	return p;
}

/* the object and the IR (malloc'd, NULL when none) of a payload; -1 when
 * it is not one (a foreign entry: the kernel is compiled again) */
static int payload_read(const void *payload, size_t plen, size_t *len, char **ir)
{
	const unsigned char *p = payload;
	uint64_t n = 0;
	if (plen < 8)
		return -1;
	for (int b = 0; b < 8; b++)
		n |= (uint64_t)p[plen - 8 + b] << (8 * b);
	if (n == 0 || n > plen - 8)
		return -1;
	*len = (size_t)n;
	*ir = NULL;
	size_t nir = plen - 8 - (size_t)n;
	if (nir && (*ir = util_malloc(nir + 1))) {
		memcpy(*ir, p + n, nir);
		(*ir)[nir] = '\0';
	}
	return 0;
}

/* the cache's objects; the others compiled, several kernels at once on
 * the pool's threads (largest first), their phases' times summed over
 * the kernels and scaled to the wall time they took together */
static int lookup_or_compile(struct compile_ctx *cc, struct kjob *jobs, int n)
{
	struct kernel_cache *kc = the_cache();
	if (!kc)
		return -1;
	struct kjob **miss = util_malloc(((size_t)n + 1) * sizeof *miss);
	if (!miss) {
		tj_error_set("out of memory");
		return -1;
	}
	int nmiss = 0;
	for (int i = 0; i < n; i++) {
		struct kjob *j = &jobs[i];
		char hex[33], *why = NULL;
		j->key = kernel_cache_key(j->k->name, j->api->target_id, j->api->llvm_version, CODEGEN_ABI);
		kernel_cache_key_hex(j->key, hex);
		j->rec.hash = util_strdup(hex);
		enum kc_result got = kernel_cache_get(kc, j->key, &j->obj, &j->len, &why);
		if ((got == KC_MEMORY || got == KC_DISK) && payload_read(j->obj, j->len, &j->len, &j->rec.source) < 0) {
			got = KC_BAD;
			why = util_strdup("not a kernel's entry");
		}
		if (got == KC_BAD)
			hint(cc, "inductor: kernel %s recompiled: %s\n", j->k->name, why ? why : "bad cache entry");
		free(why);
		j->rec.cache_hit = got == KC_MEMORY || got == KC_DISK;
		for (int m = 0; m < nmiss && !j->rec.cache_hit; m++)
			if (miss[m]->key.hi == j->key.hi && miss[m]->key.lo == j->key.lo) {
				/* the same kernel twice in a graph (two layers alike):
				 * compiled once; the second finds it, as from the cache */
				j->twin = miss[m];
				j->rec.cache_hit = true;
			}
		if (!j->rec.cache_hit)
			miss[nmiss++] = j;
	}
	qsort(miss, (size_t)nmiss, sizeof *miss, by_size_desc);
	double t0 = util_now_ms();
	parallel_for(nmiss, compile_jobs, miss, 1);
	double wall = util_now_ms() - t0, ms[3] = {0, 0, 0};
	for (int p = 0; p < 3; p++)
		for (int i = 0; i < nmiss; i++)
			ms[p] += miss[i]->ms[p];
	double busy = ms[0] + ms[1] + ms[2];
	static const char *const phases[3] = {"codegen", "llvm_optimize", "jit"};
	for (int p = 0; p < 3 && nmiss; p++)
		compile_ctx_phase_add(cc, phases[p], busy > wall ? ms[p] * wall / busy : ms[p]);
	free(miss);
	return 0;
}

/* kernel j's machine code, its object put in the cache when it was made */
static int load_kernel(struct compile_ctx *cc, struct kjob *j, loop_kernel_fn *fn)
{
	if (j->what) {
		char *err = j->err; /* cg_error frees it */
		j->err = NULL;
		return cg_error(cc, j->k, j->what, err);
	}
	size_t plen = 0;
	void *payload = j->made ? payload_make(j->made, j->len, j->rec.source, &plen) : NULL;
	if (j->made && (!payload || kernel_cache_put(the_cache(), j->key, payload, plen) < 0)) {
		/* not fatal: this run has the kernel; the next compiles it again */
		char *msg = tj_error_take();
		hint(cc, "inductor: kernel %s not cached: %s\n", j->k->name, msg ? msg : "out of memory");
		free(msg);
	}
	free(payload);
	if (j->twin) {
		j->obj = j->twin->obj;
		j->len = j->twin->len;
		if (j->twin->rec.source && !j->rec.source)
			j->rec.source = util_strdup(j->twin->rec.source);
	}
	double t0 = util_now_ms();
	char *err = NULL;
	int ph = compile_ctx_phase_begin(cc, "jit");
	int rc = j->api->load_object(j->obj, j->len, &err);
	void *addr = rc >= 0 ? j->api->lookup(j->k->name, &err) : NULL;
	compile_ctx_phase_end(cc, ph);
	if (!addr)
		return cg_error(cc, j->k, "JIT", err);
	*fn = (loop_kernel_fn)addr;
	j->rec.codegen_ms = j->ms[0] + j->ms[1] + j->ms[2] + util_now_ms() - t0;
	return 0;
}

static const char *kernel_kind(const struct lkernel *k)
{
	for (int s = 0; s < k->nsections; s++)
		for (int i = 0; i < k->sections[s].nroots; i++)
			if (k->nodes[k->sections[s].roots[i]].op == LOP_REDUCE)
				return "reduction";
	return "pointwise";
}

static char *fused_names(const struct graph *g, const struct ind_step *st)
{
	struct strbuf sb = {0};
	for (int j = 0; j < st->nnodes; j++)
		sb_printf(&sb, "%s%s", j ? ", " : "", g->nodes[st->nodes[j]].name);
	return sb_detach(&sb);
}

/* TJIT_LOGS=output_code: a kernel's loop IR and LLVM IR */
static void dump_kernel(struct compile_ctx *cc, const struct kernel_record *rec)
{
	if (!compile_ctx_logs(cc, LOG_OUTPUT_CODE))
		return;
	struct strbuf sb = {0};
	sb_printf(&sb, "inductor: kernel %s (%s%s) fuses %s\n%s", rec->name, rec->kind,
		  rec->cache_hit ? ", from the cache" : "", rec->fused_nodes, rec->loop_ir);
	if (rec->source)
		sb_printf(&sb, "%s", rec->source);
	compile_ctx_dump(cc, sb_str(&sb));
	sb_release(&sb);
}

static bool line_has(const char *line, size_t n, const char *needle)
{
	size_t k = strlen(needle);
	for (size_t i = 0; i + k <= n; i++)
		if (memcmp(line + i, needle, k) == 0)
			return true;
	return false;
}

/* TJIT_LOGS=perf_hints: the scheduler's lines about what did not fuse
 * (a group closed, an extern call) */
static void perf_hints(struct compile_ctx *cc, const char *log)
{
	struct strbuf sb = {0};
	for (const char *line = log; *line;) {
		const char *end = strchr(line, '\n');
		size_t n = end ? (size_t)(end - line + 1) : strlen(line);
		if (line_has(line, n, " closed before ") || strncmp(line, "extern ", 7) == 0) {
			sb_puts(&sb, "inductor: ");
			sb_add(&sb, line, n);
		}
		line += n;
	}
	if (sb.len)
		compile_ctx_dump(cc, sb_str(&sb));
	sb_release(&sb);
}

struct ind_compiled *ind_compile_graph(struct compile_ctx *cc, const struct graph *g, const struct graph *shown)
{
	/* the first inductor compile of the process opens libLLVM (about
	 * 16 ms): a phase of its own, so that it is not taken for the JIT's */
	bool first = codegen_load_path() == NULL;
	int ph = first ? compile_ctx_phase_begin(cc, "load_codegen") : -1;
	const struct codegen_api *api = codegen_load();
	if (first)
		compile_ctx_phase_end(cc, ph);
	if (!api) {
		/* no code generator to run: the frame falls back to aot_eager */
		char *why = tj_error_take();
		tj_error_set("inductor: %s", why ? why : "cannot load the code generator");
		free(why);
		cc->unsupported = true;
		return NULL;
	}
	struct ind_compiled *c = util_calloc(1, sizeof *c);
	if (!c)
		return fall_back(cc);
	if (ind_lower(g, &c->prog, cc) < 0)
		goto fail; /* cc->unsupported as ind_lower says */
	if (compile_ctx_logs(cc, LOG_FUSION) && c->prog.log.len)
		compile_ctx_dump(cc, sb_str(&c->prog.log));
	if (compile_ctx_logs(cc, LOG_PERF_HINTS))
		perf_hints(cc, sb_str(&c->prog.log));
	c->fns = util_calloc((size_t)c->prog.nsteps + 1, sizeof *c->fns);
	if (!c->fns) {
		tj_error_set("out of memory");
		goto fail_rest;
	}
	struct kjob *jobs = util_calloc((size_t)c->prog.nsteps + 1, sizeof *jobs);
	int *step_of = util_malloc(((size_t)c->prog.nsteps + 1) * sizeof *step_of);
	int njobs = 0, rc = jobs && step_of ? 0 : -1;
	if (rc < 0)
		tj_error_set("out of memory");
	for (int s = 0; s < c->prog.nsteps && rc == 0; s++) {
		const struct ind_step *st = &c->prog.steps[s];
		if (st->kind != ISTEP_KERNEL)
			continue;
		struct kjob *j = &jobs[njobs];
		step_of[njobs++] = s;
		j->k = st->k;
		j->api = api;
		j->rec.name = util_strdup(st->k->name);
		j->rec.kind = util_strdup(kernel_kind(st->k));
		j->rec.fused_nodes = fused_names(g, st);
		j->rec.loop_ir = loop_kernel_format(st->k);
		j->rec.graph = shown;
		if (!j->rec.name || !j->rec.kind || !j->rec.loop_ir) {
			tj_error_set("out of memory");
			rc = -1;
		}
	}
	if (rc == 0)
		rc = lookup_or_compile(cc, jobs, njobs);
	for (int i = 0; i < njobs && rc == 0; i++) {
		rc = load_kernel(cc, &jobs[i], &c->fns[step_of[i]]);
		if (rc == 0) {
			dump_kernel(cc, &jobs[i].rec);
			rc = compile_ctx_add_kernel(cc, &jobs[i].rec);
		}
	}
	for (int i = 0; i < njobs; i++) {
		kernel_record_release(&jobs[i].rec);
		free(jobs[i].made);
		free(jobs[i].err);
	}
	free(jobs);
	free(step_of);
	if (rc < 0)
		goto fail_rest;
	return c;
fail_rest:
	cc->unsupported = true; /* out of memory, or a kernel LLVM rejects */
fail:
	ind_compiled_free(c);
	return cc->unsupported ? fall_back(cc) : NULL;
}

void ind_compiled_free(struct ind_compiled *c)
{
	if (!c)
		return;
	ind_program_release(&c->prog);
	free(c->fns);
	free(c);
}
