/* compile_ctx.c - the context of one compile (compile_ctx.h): named
 * phases, the graphs and kernels handed back, the logger. */
#define _GNU_SOURCE
#include "compile_ctx.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "compile_log.h"
#include "graph.h"
#include "util.h"

/* ---- TJIT_INJECT_BUG ---- */

static const struct {
	const char *name;
	enum inject_stage stage;
} bug_stages[] = {{"aot", INJECT_AOT}, {"inductor", INJECT_INDUCTOR}};

static const struct {
	const char *name;
	enum inject_kind kind;
} bug_kinds[] = {
	{"compile_error", INJECT_COMPILE_ERROR},
	{"runtime_error", INJECT_RUNTIME_ERROR},
	{"accuracy", INJECT_ACCURACY},
	{"crash", INJECT_CRASH},
	{"hang", INJECT_HANG},
	{"flaky", INJECT_FLAKY},
};

#define NSTAGES (sizeof bug_stages / sizeof bug_stages[0])
#define NKINDS (sizeof bug_kinds / sizeof bug_kinds[0])

int compile_ctx_parse_bug(const char *spec, struct inject_bug *out, char **err)
{
	struct strbuf sb = STRBUF_INIT;
	*err = NULL;
	out->stage = INJECT_NONE;
	out->kind = INJECT_COMPILE_ERROR;
	if (!spec || !*spec)
		return 0;
	const char *colon = strchr(spec, ':');
	if (!colon) {
		sb_printf(&sb, "expected <stage>:<kind>, got '%s'", spec);
		goto fail;
	}
	size_t slen = (size_t)(colon - spec);
	size_t i = 0, k = 0;
	while (i < NSTAGES && !(strlen(bug_stages[i].name) == slen && strncmp(bug_stages[i].name, spec, slen) == 0))
		i++;
	if (i == NSTAGES) {
		sb_puts(&sb, "unknown stage '");
		sb_add(&sb, spec, slen);
		sb_printf(&sb, "' in '%s' (valid: aot, inductor)", spec);
		goto fail;
	}
	while (k < NKINDS && strcmp(bug_kinds[k].name, colon + 1) != 0)
		k++;
	if (k == NKINDS) {
		sb_printf(&sb, "unknown kind '%s' in '%s' (valid: compile_error, runtime_error, accuracy, crash, hang, "
			  "flaky)", colon + 1, spec);
		goto fail;
	}
	/* (the minifier's tests plant those in aot_eager's run only) */
	if (bug_stages[i].stage != INJECT_AOT && (bug_kinds[k].kind == INJECT_HANG || bug_kinds[k].kind == INJECT_FLAKY)) {
		sb_printf(&sb, "kind '%s' is stage aot's only, in '%s'", colon + 1, spec);
		goto fail;
	}
	out->stage = bug_stages[i].stage;
	out->kind = bug_kinds[k].kind;
	return 0;
fail:
	*err = sb.buf ? sb_detach(&sb) : strdup("bad TJIT_INJECT_BUG value");
	return -1;
}

/* ---- the context ---- */

void compile_ctx_init(struct compile_ctx *cc, const struct compile_config *cfg, const struct inject_bug *bug,
		      struct compile_log *log, const char *compile_id)
{
	static const struct inject_bug no_bug = {INJECT_NONE, INJECT_COMPILE_ERROR};
	memset(cc, 0, sizeof *cc);
	cc->cfg = cfg;
	cc->bug = bug ? bug : &no_bug;
	cc->log = log;
	cc->compile_id = compile_id;
	cc->open = -1;
	cc->start_ms = util_now_ms();
}

void kernel_record_release(struct kernel_record *k)
{
	free(k->name);
	free(k->kind);
	free(k->hash);
	free(k->fused_nodes);
	free(k->loop_ir);
	free(k->source);
	memset(k, 0, sizeof *k);
}

void compile_ctx_release(struct compile_ctx *cc)
{
	free(cc->phases);
	for (int i = 0; i < cc->ngraphs; i++)
		graph_free(cc->graphs[i]);
	free(cc->graphs);
	for (int i = 0; i < cc->nkernels; i++)
		kernel_record_release(&cc->kernels[i]);
	free(cc->kernels);
	cc->phases = NULL;
	cc->graphs = NULL;
	cc->kernels = NULL;
	cc->nphases = cc->ngraphs = cc->nkernels = 0;
	cc->phases_cap = cc->graphs_cap = cc->kernels_cap = 0;
	cc->saved = (struct saved_info){0};
	cc->open = -1;
}

void compile_ctx_drop_results(struct compile_ctx *cc)
{
	for (int i = 0; i < cc->ngraphs; i++)
		graph_free(cc->graphs[i]);
	for (int i = 0; i < cc->nkernels; i++)
		kernel_record_release(&cc->kernels[i]);
	cc->ngraphs = cc->nkernels = 0;
	cc->saved = (struct saved_info){0};
	cc->unsupported = false;
}

/* ---- phases ---- */

static int phase_new(struct compile_ctx *cc, const char *name)
{
	if (!grow_array((void **)&cc->phases, &cc->phases_cap, cc->nphases + 1, sizeof *cc->phases, 8))
		return -1;
	struct compile_phase *p = &cc->phases[cc->nphases];
	p->name = name;
	p->parent = cc->open;
	p->start_ms = 0;
	p->ms = 0;
	return cc->nphases++;
}

int compile_ctx_phase_begin(struct compile_ctx *cc, const char *name)
{
	int i = phase_new(cc, name);
	if (i < 0)
		return -1;
	cc->phases[i].start_ms = util_now_ms();
	cc->open = i;
	return i;
}

void compile_ctx_phase_end(struct compile_ctx *cc, int phase)
{
	if (phase < 0 || phase >= cc->nphases)
		return;
	struct compile_phase *p = &cc->phases[phase];
	p->ms = util_now_ms() - p->start_ms;
	cc->open = p->parent;
}

void compile_ctx_phase_add(struct compile_ctx *cc, const char *name, double ms)
{
	int i = phase_new(cc, name);
	if (i >= 0)
		cc->phases[i].ms = ms;
}

double compile_ctx_phase_ms(const struct compile_ctx *cc, const char *name)
{
	double ms = 0;
	for (int i = 0; i < cc->nphases; i++)
		if (cc->phases[i].parent < 0 && strcmp(cc->phases[i].name, name) == 0)
			ms += cc->phases[i].ms;
	return ms;
}

double compile_ctx_elapsed_ms(const struct compile_ctx *cc)
{
	return util_now_ms() - cc->start_ms;
}

/* ---- graphs and kernels ---- */

int compile_ctx_add_graph(struct compile_ctx *cc, struct graph *g)
{
	if (!grow_array((void **)&cc->graphs, &cc->graphs_cap, cc->ngraphs + 1, sizeof *cc->graphs, 4)) {
		graph_free(g);
		return -1;
	}
	cc->graphs[cc->ngraphs++] = g;
	return 0;
}

/* a copy of s, or NULL for NULL; *oom set when the copy fails */
static char *dup_opt(const char *s, bool *oom)
{
	if (!s)
		return NULL;
	char *d = util_strdup(s);
	if (!d)
		*oom = true;
	return d;
}

int compile_ctx_add_kernel(struct compile_ctx *cc, const struct kernel_record *k)
{
	if (!grow_array((void **)&cc->kernels, &cc->kernels_cap, cc->nkernels + 1, sizeof *cc->kernels, 4))
		return -1;
	struct kernel_record *d = &cc->kernels[cc->nkernels];
	bool oom = false;
	*d = *k;
	d->name = dup_opt(k->name ? k->name : "", &oom);
	d->kind = dup_opt(k->kind ? k->kind : "", &oom);
	d->hash = dup_opt(k->hash, &oom);
	d->fused_nodes = dup_opt(k->fused_nodes ? k->fused_nodes : "", &oom);
	d->loop_ir = dup_opt(k->loop_ir, &oom);
	d->source = dup_opt(k->source, &oom);
	if (oom) {
		kernel_record_release(d);
		return -1;
	}
	cc->nkernels++;
	return 0;
}

void compile_ctx_set_saved(struct compile_ctx *cc, const struct graph *fwd, int nsaved, int nrecomputed)
{
	cc->saved = (struct saved_info){fwd, nsaved, nrecomputed};
}

/* ---- the logger ---- */

bool compile_ctx_logs(const struct compile_ctx *cc, unsigned artifact)
{
	return cc->log && (compile_log_artifacts(cc->log) & artifact);
}

void compile_ctx_dump(const struct compile_ctx *cc, const char *text)
{
	if (cc->log)
		compile_log_text(cc->log, cc->compile_id, text);
}
