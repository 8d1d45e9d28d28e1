/* inductor_compile.c - one graph (aot_eager's forward or backward) to
 * machine code: lowered and scheduled (inductor_lower.c), each kernel
 * looked up in the kernel cache by its content hash, else emitted as LLVM
 * IR, optimized and compiled to an object by the code generator's shared
 * object (opened on the first inductor compile: codegen_load.c), put in
 * the cache, and loaded into the JIT.
 *
 * Phases of the compile (compile_phases, tjit-profile): schedule, lower,
 * codegen (the LLVM IR), llvm_optimize, jit (object code and loading).
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
 * a kernel LLVM rejects is a graph this stage cannot compile */
static int cg_error(struct compile_ctx *cc, const struct lkernel *k, const char *what, char *err)
{
	tj_error_set("inductor: kernel %s: %s: %s", k->name, what, err ? err : "out of memory");
	free(err);
	cc->unsupported = err != NULL;
	return -1;
}

/* the machine code of kernel k: from the cache, or compiled and put there */
static int compile_kernel(struct compile_ctx *cc, const struct codegen_api *api, const struct lkernel *k,
			  loop_kernel_fn *fn, struct kernel_record *rec)
{
	struct kernel_cache *kc = the_cache();
	if (!kc)
		return -1;
	double t0 = util_now_ms();
	struct kc_key key = kernel_cache_key(k->name, api->target_id, api->llvm_version, CODEGEN_ABI);
	char hex[33], *err = NULL, *why = NULL;
	kernel_cache_key_hex(key, hex);
	rec->hash = util_strdup(hex);
	const void *obj = NULL;
	size_t len = 0;
	void *made = NULL;
	enum kc_result got = kernel_cache_get(kc, key, &obj, &len, &why);
	if (got == KC_BAD)
		hint(cc, "inductor: kernel %s recompiled: %s\n", k->name, why ? why : "bad cache entry");
	free(why);
	rec->cache_hit = got == KC_MEMORY || got == KC_DISK;
	if (!rec->cache_hit) {
		int ph = compile_ctx_phase_begin(cc, "codegen");
		struct cg_module *m = api->emit_kernel(k, &err);
		int rc = m ? api->verify(m, &err) : -1;
		compile_ctx_phase_end(cc, ph);
		if (rc < 0) {
			if (m)
				api->module_free(m);
			return cg_error(cc, k, m ? "LLVM verifier" : "code generation", err);
		}
		ph = compile_ctx_phase_begin(cc, "llvm_optimize");
		rc = api->optimize(m, 2, &err);
		compile_ctx_phase_end(cc, ph);
		if (rc == 0)
			rec->source = api->module_ir(m);
		ph = compile_ctx_phase_begin(cc, "jit");
		if (rc == 0)
			rc = api->emit_object(m, &made, &len, &err);
		api->module_free(m);
		compile_ctx_phase_end(cc, ph);
		if (rc < 0)
			return cg_error(cc, k, "LLVM", err);
		obj = made;
		if (kernel_cache_put(kc, key, made, len) < 0) {
			/* not fatal: this run has the kernel; the next compiles it again */
			char *msg = tj_error_take();
			hint(cc, "inductor: kernel %s not cached: %s\n", k->name, msg ? msg : "");
			free(msg);
		}
	}
	int ph = compile_ctx_phase_begin(cc, "jit");
	int rc = api->load_object(obj, len, &err);
	void *addr = rc >= 0 ? api->lookup(k->name, &err) : NULL;
	compile_ctx_phase_end(cc, ph);
	free(made);
	if (!addr)
		return cg_error(cc, k, "JIT", err);
	*fn = (loop_kernel_fn)addr;
	rec->codegen_ms = util_now_ms() - t0;
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
	struct ind_compiled *c = calloc(1, sizeof *c);
	if (!c) {
		tj_error_set("out of memory");
		return NULL;
	}
	if (ind_lower(g, &c->prog, cc) < 0)
		goto fail;
	if (compile_ctx_logs(cc, LOG_FUSION) && c->prog.log.len)
		compile_ctx_dump(cc, sb_str(&c->prog.log));
	if (compile_ctx_logs(cc, LOG_PERF_HINTS))
		perf_hints(cc, sb_str(&c->prog.log));
	c->fns = calloc((size_t)c->prog.nsteps + 1, sizeof *c->fns);
	if (!c->fns) {
		tj_error_set("out of memory");
		goto fail;
	}
	for (int s = 0; s < c->prog.nsteps; s++) {
		const struct ind_step *st = &c->prog.steps[s];
		if (st->kind != ISTEP_KERNEL)
			continue;
		struct kernel_record rec = {0};
		rec.name = util_strdup(st->k->name);
		rec.kind = util_strdup(kernel_kind(st->k));
		rec.fused_nodes = fused_names(g, st);
		rec.loop_ir = loop_kernel_format(st->k);
		rec.graph = shown;
		int rc = compile_kernel(cc, api, st->k, &c->fns[s], &rec);
		if (rc == 0) {
			dump_kernel(cc, &rec);
			rc = compile_ctx_add_kernel(cc, &rec);
		}
		kernel_record_release(&rec);
		if (rc < 0)
			goto fail;
	}
	return c;
fail:
	ind_compiled_free(c);
	return NULL;
}

void ind_compiled_free(struct ind_compiled *c)
{
	if (!c)
		return;
	ind_program_release(&c->prog);
	free(c->fns);
	free(c);
}
