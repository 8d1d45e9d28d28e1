/* aot_inline.c - allow_in_graph calls traced through (aot_inline.h).
 *
 * The function is called through the VM with a frame evaluator of our
 * own that traces its frame (trace_frame, as the frame evaluator does for
 * a compiled function) and pops it without running it. The graph it gives
 * reads the function's parameters only (its inputs are the node's
 * arguments), and what it assumed of anything else must be an identity (a
 * function called, a builtin) or a type: a global number or tensor read in
 * the body would be baked in without a guard of the caller's, so such a
 * call stays opaque, as does one whose body breaks the graph, writes a
 * global or a list, or returns anything but a tensor. The inlined ops keep
 * the body's lines, under the line of the call.
 */
#include "aot_inline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "code.h"
#include "guards.h"
#include "tracer.h"
#include "util.h"
#include "vm.h"

/* calls inlined in one graph at most: an allowed function that calls
 * itself would go on */
#define INLINE_BUDGET 64

struct sub_trace {
	const struct compile_ctx *cc;
	struct trace_result *tr;
};

/* the frame evaluator while the function is called: traces its frame, then
 * pops it unrun */
static value trace_body(struct vm *vm, struct frame *f, void *p)
{
	struct sub_trace *s = p;
	struct trace_config tc = {s->cc->cfg->backend, true, DYN_NEVER, NULL, NULL};
	s->tr = trace_frame(vm, f, &tc, s->cc->compile_id);
	vm_pop_frame(vm, f);
	return val_none();
}

/* the local slot at the root of source i, or -1 when it is not a local */
static int root_local(const struct guard_set *gs, int i)
{
	while (i >= 0 && (gs->sources[i].kind == SRC_ITEM || gs->sources[i].kind == SRC_CLOSURE ||
			  gs->sources[i].kind == SRC_GRAD))
		i = gs->sources[i].parent;
	return i >= 0 && gs->sources[i].kind == SRC_LOCAL ? gs->sources[i].index : -1;
}

/* what the body assumed holds for every call of the node: facts of its
 * parameters (the node's arguments have fixed types and constants), and
 * identities and types of the rest */
static const char *guards_hold(const struct guard_set *gs, int nargs)
{
	for (int i = 0; i < gs->nguards; i++) {
		const struct guard *g = &gs->guards[i];
		if (g->kind == GK_BACKEND || g->kind == GK_ID || g->kind == GK_CODE || g->kind == GK_TYPE)
			continue;
		int slot = root_local(gs, g->source);
		if (slot < 0 || slot >= nargs)
			return g->text;
	}
	return NULL;
}

static char *why_of(const char *fname, const char *fmt, const char *what)
{
	struct strbuf sb = STRBUF_INIT;
	sb_printf(&sb, "%s: ", fname);
	sb_printf(&sb, fmt, what);
	return sb_detach(&sb);
}

/* the example arguments of call node n: a tensor of ones of each tensor
 * argument's type (requiring grad as it does), the constants as they are;
 * NULL (*why set) for an argument of another kind */
static value *example_args(const struct graph *g, const struct gnode *n, const char *fname, char **why)
{
	value *ex = util_calloc((size_t)n->nargs + 1, sizeof *ex);
	if (!ex)
		return NULL;
	for (int i = 0; i < n->nargs; i++) {
		const struct garg *a = &n->args[i];
		ex[i] = val_none();
		if (a->kind == GARG_CONST) {
			ex[i] = a->constant;
			val_incref(ex[i]);
			continue;
		}
		const struct gnode *m = a->kind == GARG_NODE ? &g->nodes[a->node] : NULL;
		bool ok = m && m->is_tensor && !m->nouts;
		int64_t shape[TENSOR_MAX_DIMS];
		for (int d = 0; ok && d < m->ndim; d++) {
			ok = m->shape[d].sym < 0;
			shape[d] = m->shape[d].value;
		}
		tensor *t = ok ? tensor_full(m->dt, m->ndim, shape, 1.0) : NULL;
		if (!t) {
			for (int k = 0; k < i; k++)
				val_decref(ex[k]);
			free(ex);
			if (!ok)
				*why = why_of(fname, "argument %s is not a tensor of static sizes nor a constant",
					      i == 0 ? "1" : i == 1 ? "2" : "3 or later");
			return NULL;
		}
		t->requires_grad = m->requires_grad;
		ex[i] = val_tensor(t);
	}
	return ex;
}

/* the traced graph and where its result is: *out its output node, or
 * *out_arg the parameter it returns unchanged; else why the call stays
 * opaque (*assumed: the guard it fails on) */
static const char *check_trace(const struct trace_result *tr, int nargs, int *out, int *out_arg,
			       const char **assumed)
{
	if (tr->end == TRACE_FULLGRAPH || tr->end == TRACE_BREAK || tr->end == TRACE_SPLIT)
		return tr->brk && tr->brk->message ? tr->brk->message : "its body breaks the graph";
	if (tr->end != TRACE_RETURN)
		return tr->error ? tr->error : "its body does not trace";
	if (tr->neffects)
		return "its body writes a global, a cell or a list";
	if (tr->graph->nsyms)
		return "its body has symbolic sizes";
	if ((*assumed = guards_hold(tr->guards, nargs)))
		return "its body assumes %s, which the caller's guards do not check";
	*out = *out_arg = -1;
	if (tr->ret.kind == RC_OUTPUT)
		*out = tr->graph->outputs[tr->ret.index];
	else if (tr->ret.kind == RC_SOURCE && tr->guards->sources[tr->ret.index].kind == SRC_LOCAL &&
		 tr->guards->sources[tr->ret.index].index < nargs)
		*out_arg = tr->guards->sources[tr->ret.index].index;
	else
		return "it does not return a tensor";
	return NULL;
}

/* traces the function of call node i; the result (NULL: stays opaque,
 * *why set unless out of memory) */
static struct trace_result *trace_call(struct graph *g, int i, struct compile_ctx *cc, char **why)
{
	const struct gnode *n = &g->nodes[i];
	const char *fname = n->callee.tag == VAL_FUNC ? val_func(n->callee)->code->name : n->name;
	value *ex = example_args(g, n, fname, why);
	if (!ex)
		return NULL;
	struct vm *vm = cc->vm;
	struct sub_trace s = {cc, NULL};
	uint64_t seed, offset;
	rng_get_state(&seed, &offset);
	void *ctx;
	vm_eval_frame_fn hook = vm_get_eval_frame(vm, &ctx);
	vm_set_eval_frame(vm, trace_body, &s);
	value r = vm_call(vm, n->callee, ex, n->nargs, val_none());
	vm_set_eval_frame(vm, hook, ctx);
	rng_set_state(seed, offset);
	for (int k = 0; k < n->nargs; k++)
		val_decref(ex[k]);
	free(ex);
	if (val_is_err(r)) { /* a bad call: the node's own run says so */
		char *msg = tj_error_take();
		if (vm_error_pending(vm)) {
			if (!msg && vm_error_message(vm))
				msg = util_strdup(vm_error_message(vm));
			vm_error_clear(vm);
		}
		*why = why_of(fname, "%s", msg ? msg : "the call fails");
		free(msg);
	} else {
		val_decref(r);
		if (!s.tr)
			*why = why_of(fname, "%s", "its body is not traced (a builtin?)");
	}
	if (val_is_err(r) && s.tr) {
		trace_result_free(s.tr);
		s.tr = NULL;
	}
	return s.tr;
}

/* call node i replaced by the ops of its traced body; 1 done, 0 left
 * opaque (*why set), -1 out of memory */
static int inline_call(struct graph *g, int i, struct compile_ctx *cc, char **why)
{
	struct trace_result *tr = trace_call(g, i, cc, why);
	if (!tr)
		return *why ? 0 : -1;
	const char *fname = g->nodes[i].callee.tag == VAL_FUNC ? val_func(g->nodes[i].callee)->code->name : "?";
	int out = -1, out_arg = -1, rc = -1;
	const char *assumed = NULL;
	const char *no = check_trace(tr, g->nodes[i].nargs, &out, &out_arg, &assumed);
	if (!no && out_arg >= 0 && g->nodes[i].args[out_arg].kind != GARG_NODE)
		no = "it returns a constant argument";
	if (!no && !graph_same_type(out >= 0 ? &tr->graph->nodes[out] : &g->nodes[g->nodes[i].args[out_arg].node],
			      &g->nodes[i]))
		no = "its result has another type than the call's";
	const struct graph *b = no ? NULL : tr->graph;
	int *to = b ? util_calloc((size_t)b->nnodes + 1, sizeof *to) : NULL;
	if (b && !to)
		goto cleanup;
	/* the body's inputs are the call's arguments */
	for (int k = 0, in = 0; b && !no && k < b->nnodes; k++) {
		if (b->nodes[k].kind != GN_INPUT)
			continue;
		const struct guard_source *src = &tr->guards->sources[tr->input_sources[in++]];
		bool arg = src->kind == SRC_LOCAL && src->index >= 0 && src->index < g->nodes[i].nargs;
		const struct garg *a = arg ? &g->nodes[i].args[src->index] : NULL;
		if (!a)
			no = "its body reads a tensor that is not an argument";
		else if (a->kind != GARG_NODE)
			no = "a constant argument is read as a tensor";
		else
			to[k] = a->node;
	}
	if (no) {
		*why = assumed ? why_of(fname, no, assumed) : why_of(fname, "%s", no);
		rc = 0;
		goto cleanup;
	}
	int nouter = g->nodes[i].nstack;
	const struct user_frame *outer = g->nodes[i].stack; /* in g's arena: stays */
	int pos = i;
	for (int k = 0; k < b->nnodes; k++) {
		if (b->nodes[k].kind == GN_INPUT)
			continue;
		if (graph_insert_copy(g, pos, &b->nodes[k], to, nouter, outer) < 0)
			goto cleanup;
		to[k] = pos++;
	}
	/* the call is at pos now */
	int r = out >= 0 ? to[out] : g->nodes[pos].args[out_arg].node;
	graph_replace_uses(g, pos, r);
	if (graph_erase(g, pos) < 0)
		goto cleanup;
	rc = 1;
cleanup:
	if (rc < 0 && !tj_error_peek())
		tj_error_set("out of memory");
	free(to);
	trace_result_free(tr);
	return rc;
}

int aot_inline_calls(struct graph *g, struct compile_ctx *cc, char **why)
{
	*why = NULL;
	if (!cc->vm)
		return 0;
	int budget = INLINE_BUDGET;
	for (int i = 0; i < g->nnodes; i++) {
		if (g->nodes[i].kind != GN_CALL || g->nodes[i].callee.tag != VAL_FUNC)
			continue;
		if (--budget < 0) {
			char most[16];
			snprintf(most, sizeof most, "%d", INLINE_BUDGET);
			if (!*why)
				*why = why_of(val_func(g->nodes[i].callee)->code->name,
					      "more than %s calls of allow_in_graph functions to inline in one graph", most);
			break;
		}
		char *no = NULL;
		int rc = inline_call(g, i, cc, &no);
		if (rc < 0)
			return -1;
		if (rc == 0) {
			if (!*why)
				*why = no;
			else
				free(no);
			continue;
		}
		i--; /* the inlined ops are at i: a call among them is next */
	}
	return 0;
}
