/* backend_aot.c - `aot_eager`, stage 2 of ARCHITECTURE.md: the captured
 * graph decomposed into primitives (aot_decompose) and, when an input
 * requires grad, differentiated at graph level (aot_joint) and split into
 * a forward and a backward graph (aot_partition), both handed back to the
 * log (TJIT_LOGS=aot_graphs, the database's graphs).
 *
 * At run time the forward graph runs on the eager kernels (graph_interpret)
 * with grad mode off, so the tape records none of its primitives; its
 * outputs then get ONE tape node (ag_record_custom) that keeps this call's
 * saved tensors and runs the backward graph when loss.backward() reaches
 * it, as PyTorch's compiled backward runs as if it were one op.
 *
 * Without an input that requires grad, or when the graph makes a tensor
 * that requires grad itself (zeros(3, requires_grad=True), requires_grad_
 * on one that did not: no input's gradient, so the joint cannot see it),
 * the decomposed graph runs with the tape on as before: the composites that
 * act on the tape (detach, requires_grad_) then stay in it.
 *
 * TJIT_INJECT_BUG=aot:<kind> makes this stage fail on graphs that use
 * relu, as the relu_*_TESTING_ONLY backends do, so that stage bisection
 * has real failures of stage 2 to find: a compile error, an error when
 * the artifact runs, or relu(x) computed as x + 1; and, for the
 * minifier's tests only, a crash, a hang or a failure of every other run
 * when the artifact runs (run_bug).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aot_autodiff.h"
#include "aot_decompose.h"
#include "aot_inline.h"
#include "autograd.h"
#include "backends.h"
#include "ops.h"
#include "util.h"

struct aot_artifact {
	const struct aot_runner *runner; /* NULL: the eager kernels (graph_interpret) */
	void *fwd_prep, *bwd_prep;       /* the runner's forward and backward */
	int rc;                 /* the compile's reference, and one per tape node that may run backward */
	struct graph *forward;  /* what runs: with backward, returns the outputs then the saved */
	struct graph *backward; /* the saved then the tangents in, the gradients out; NULL: on the tape */
	int noutputs, nsaved, nprimals, ntangents;
	int *tangent_of;        /* [ntangents]: the output each tangent is the gradient of */
	int *grad_output;       /* [nprimals]: input i's gradient is backward->outputs[k], -1: none */
	int nrecomputed;        /* for the log: forward nodes backward computes again */
	bool run_bug;           /* aot:runtime_error, crash, hang, flaky on a graph with relu */
	enum inject_kind bug;
};

/* one call's tape node: its saved tensors */
struct aot_call {
	struct aot_artifact *a;
	struct vm *vm;
	tensor **saved;         /* [a->nsaved], detached aliases */
};

static void artifact_decref(struct aot_artifact *a)
{
	if (!a || --a->rc > 0)
		return;
	if (a->runner && a->fwd_prep)
		a->runner->release(a->fwd_prep);
	if (a->runner && a->bwd_prep)
		a->runner->release(a->bwd_prep);
	if (a->forward)
		graph_free(a->forward);
	if (a->backward)
		graph_free(a->backward);
	free(a->tangent_of);
	free(a->grad_output);
	free(a);
}

/* the forward (or backward) graph of a on its runner */
static int run_graph(const struct aot_artifact *a, bool backward, struct vm *vm, tensor *const *inputs,
		     value *outputs)
{
	/* the eager kernels' errors, or the kernels' checks of the data
	 * (inductor_run.c): the VM raises them where eager code would */
	int rc = a->runner ? a->runner->run(backward ? a->bwd_prep : a->fwd_prep, vm, inputs, outputs)
			   : graph_interpret(vm, backward ? a->backward : a->forward, inputs, outputs);
	return rc < 0 ? BACKEND_RUN_DATA_ERROR : 0;
}

static void aot_release(void *compiled)
{
	artifact_decref(compiled);
}

static void call_release(void *ctx)
{
	struct aot_call *c = ctx;
	if (!c)
		return;
	for (int i = 0; c->saved && i < c->a->nsaved; i++)
		tensor_decref(c->saved[i]);
	free(c->saved);
	artifact_decref(c->a);
	free(c);
}

static bool arg_requires_grad(const struct graph *g, const struct gnode *n)
{
	return n->nargs > 0 && n->args[0].kind == GARG_NODE && g->nodes[n->args[0].node].requires_grad;
}

/* The composites whose decomposition would change what requires grad, as
 * the tape sees it: detach and requires_grad_ (the identity on data) where
 * a gradient is involved, eye(..., requires_grad=True). They stay in the
 * forward graph when it runs on the tape (aot_decompose.h). */
static bool acts_on_tape(const struct graph *g, const struct gnode *n)
{
	if (ops_table[n->op].flags & OPF_AUTOGRAD)
		return n->requires_grad || arg_requires_grad(g, n);
	return n->op == OPS_eye && n->requires_grad;
}

static bool garg_requires_grad(const struct graph *g, const struct garg *a)
{
	if (a->kind == GARG_NODE)
		return g->nodes[a->node].requires_grad;
	for (int i = 0; (a->kind == GARG_LIST || a->kind == GARG_TUPLE) && i < a->n; i++)
		if (garg_requires_grad(g, &a->items[i]))
			return true;
	return false;
}

/* whether the graph makes a tensor that requires grad from none that does */
static bool makes_grad_leaf(const struct graph *g)
{
	for (int i = 0; i < g->nnodes; i++) {
		const struct gnode *n = &g->nodes[i];
		bool any = false;
		for (int k = 0; k < n->nargs && !any; k++)
			any = garg_requires_grad(g, &n->args[k]);
		if ((n->kind == GN_OP || n->kind == GN_CALL) && n->requires_grad && !any)
			return true;
	}
	return false;
}

/* the pending error, prefixed with the backend's name. Every error (but
 * the injected one, raised before) is a graph this stage cannot compile,
 * an op without a decomposition or a gradient rule, or out of memory in
 * the middle of the compile: unsupported, the frame runs on eager
 * (backend.h), which needs nothing more than the captured graph */
static void *compile_error(struct compile_ctx *cc)
{
	cc->unsupported = true;
	char *why = tj_error_take();
	tj_error_set("aot_eager: %s", why ? why : "out of memory");
	free(why);
	return NULL;
}

/* a copy of g for the log, which outlives the compile, not the artifact */
static const struct graph *show(struct compile_ctx *cc, const struct graph *g)
{
	struct graph *shown = graph_copy(g);
	if (!shown || compile_ctx_add_graph(cc, shown) < 0) {
		tj_error_set("out of memory");
		return NULL;
	}
	return shown;
}

/* the joint and the partition of the decomposed g, as phases of the
 * compile; the two graphs and what run needs of them go into a */
static int differentiate(struct compile_ctx *cc, struct aot_artifact *a, const bool *requires_grad,
			 const struct aot_policy *policy)
{
	struct aot_joint j;
	struct aot_partition p;
	int ph = compile_ctx_phase_begin(cc, "joint");
	/* the joint is built in the decomposed graph, which it owns */
	int rc = aot_joint_in(a->forward, requires_grad, &j);
	a->forward = NULL;
	compile_ctx_phase_end(cc, ph);
	if (rc < 0)
		return -1;
	ph = compile_ctx_phase_begin(cc, "partition");
	rc = aot_partition(&j, policy, &p);
	compile_ctx_phase_end(cc, ph);
	if (rc < 0) {
		aot_joint_release(&j);
		return -1;
	}
	a->forward = p.fwd;
	a->backward = p.bwd;
	a->tangent_of = j.tangent_of;
	a->grad_output = p.grad_output;
	a->noutputs = p.noutputs;
	a->nsaved = p.nsaved;
	a->nprimals = p.nprimals;
	a->ntangents = j.ntangents;
	j.tangent_of = NULL;
	p.fwd = p.bwd = NULL;
	p.grad_output = NULL;
	aot_joint_release(&j);
	a->nrecomputed = p.nrecomputed;
	aot_partition_release(&p);
	return 0;
}

/* the inputs' requires_grad flags (NULL: none requires grad) */
static bool *input_grads(const struct graph *g, bool *any)
{
	int n = 0;
	*any = false;
	while (n < g->nnodes && g->nodes[n].kind == GN_INPUT)
		n++;
	bool *rg = util_calloc((size_t)n + 1, sizeof *rg);
	for (int i = 0; rg && i < n; i++)
		*any |= rg[i] = g->nodes[i].requires_grad && g->nodes[i].is_tensor;
	return rg;
}

/* the runner's forward and backward; their kernels are logged as those of
 * the graphs' copies in the log (shown_fwd, shown_bwd) */
static int prepare(struct compile_ctx *cc, struct aot_artifact *a, const struct aot_runner *runner,
		   const struct graph *shown_fwd, const struct graph *shown_bwd)
{
	a->runner = runner;
	if (!(a->fwd_prep = runner->prepare(cc, a->forward, shown_fwd)))
		return -1;
	if (a->backward && !(a->bwd_prep = runner->prepare(cc, a->backward, shown_bwd)))
		return -1;
	return 0;
}

void *aot_compile_with(struct compile_ctx *cc, const struct graph *g, const struct aot_runner *runner)
{
	bool bug = cc->bug->stage == INJECT_AOT && backend_uses_relu(g);
	if (bug && cc->bug->kind == INJECT_COMPILE_ERROR) {
		tj_error_set("aot_eager: AotCompileError: the graph uses relu (TJIT_INJECT_BUG=aot:compile_error)");
		return NULL;
	}
	bool grad = false;
	bool *rg = input_grads(g, &grad);
	struct aot_artifact *a = util_calloc(1, sizeof *a);
	if (!rg || !a || !(a->forward = graph_copy(g))) {
		tj_error_set("out of memory");
		goto fail;
	}
	a->rc = 1;
	a->forward->stage = STAGE_AOT_FORWARD;
	a->run_bug = bug && cc->bug->kind != INJECT_ACCURACY;
	a->bug = cc->bug->kind;
	if (bug && cc->bug->kind == INJECT_ACCURACY && backend_relu_to_add(a->forward) < 0)
		goto fail;
	bool leaf = makes_grad_leaf(g);
	/* a graph that runs with the tape on records its ops one by one: only
	 * the eager kernels do that, so a runner does not take it */
	if (runner && leaf)
		runner = NULL;
	grad = grad && !leaf;
	/* eager kernels run one by one: recompute only within eager's memory;
	 * a runner fuses (inductor), so cheap ops recomputed in backward's
	 * kernels cost no pass over memory: save the fewest tensors */
	struct aot_policy policy = {runner ? AOT_RECOMPUTE_CHEAP : AOT_RECOMPUTE_BUDGET,
				    grad && !runner ? aot_eager_saved_bytes(g, rg) : 0};
	if (policy.budget < 0)
		goto fail;
	/* allow_in_graph calls traced through: their ops join the others */
	char *opaque = NULL;
	if (aot_inline_calls(a->forward, cc, &opaque) < 0)
		goto fail;
	graph_check(a->forward, "aot_inline_calls");
	/* names the op and the user line when a composite cannot be decomposed */
	if (aot_decompose_keeping(a->forward, cc, grad ? NULL : acts_on_tape) < 0) {
		free(opaque);
		goto fail;
	}
	/* names the op and the user line when it has no gradient rule (an
	 * allow_in_graph call left opaque: why it was) */
	if (grad && differentiate(cc, a, rg, &policy) < 0) {
		if (opaque && strstr(tj_error_peek() ? tj_error_peek() : "", "allow_in_graph")) {
			char *msg = tj_error_take();
			tj_error_set("%s (%s)", msg ? msg : "no gradient rule", opaque);
			free(msg);
		}
		free(opaque);
		goto fail;
	}
	free(opaque);
	const struct graph *shown_fwd = show(cc, a->forward), *shown_bwd = NULL;
	if (!shown_fwd || (a->backward && !(shown_bwd = show(cc, a->backward))))
		goto fail;
	/* the partition, for the log */
	if (a->backward)
		compile_ctx_set_saved(cc, shown_fwd, a->nsaved, a->nrecomputed);
	if (runner && prepare(cc, a, runner, shown_fwd, shown_bwd) < 0)
		goto fail_runner;
	free(rg);
	return a;
fail_runner:
	free(rg);
	artifact_decref(a);
	return NULL;
fail:
	free(rg);
	artifact_decref(a);
	return compile_error(cc);
}

static void *aot_compile(struct compile_ctx *cc, const struct graph *g)
{
	return aot_compile_with(cc, g, NULL);
}

/* 0: no tangent behind the node, 1: a reached one, 2: unreached ones only */
static int tangent_dep(const struct garg *a, int na, const signed char *dep)
{
	int d = 0;
	for (int i = 0; i < na; i++) {
		int k = a[i].kind == GARG_NODE ? dep[a[i].node]
			: a[i].kind == GARG_LIST || a[i].kind == GARG_TUPLE ? tangent_dep(a[i].items, a[i].n, dep)
									     : 0;
		if (k == 1 || (k == 2 && d == 0))
			d = k;
	}
	return d;
}

/* The backward graph when no gradient reached some outputs: as on the
 * eager tape (and in PyTorch), such a gradient is undefined, not zero, and
 * nothing flows from it: a zero tangent through the backward of var over
 * one element would make 0 * NaN. A tensor node that depends on the
 * tangents only through unreached ones does not run (zeros stand in where
 * a node that runs reads it); a gradient out of unreached tangents only is
 * None (no gradient). On the eager kernels whatever the runner: the rare
 * case. */
static int run_backward_reached(const struct aot_artifact *a, struct vm *vm, tensor *const *in, const bool *reached,
				value *out)
{
	const struct graph *g = a->backward;
	int n = g->nnodes, nin = 0, rc = -1;
	signed char *dep = calloc((size_t)n + 1, sizeof *dep);
	bool *skip = calloc((size_t)n + 1, sizeof *skip);
	if (!dep || !skip) {
		tj_error_set("out of memory");
		goto cleanup;
	}
	for (int i = 0; i < n; i++) {
		const struct gnode *x = &g->nodes[i];
		if (x->kind == GN_INPUT) {
			int t = nin++ - a->nsaved;
			dep[i] = t < 0 ? 0 : reached[t] ? 1 : 2;
		} else if (x->kind == GN_GETITEM) {
			dep[i] = dep[x->args[0].node] ? 1 : 0;
		} else {
			dep[i] = (signed char)tangent_dep(x->args, x->nargs, dep);
			if (dep[i] == 2 && x->is_tensor && !x->nouts)
				skip[i] = true;
			else if (dep[i] == 2)
				dep[i] = 1; /* a tuple: made of zeros, as before */
		}
	}
	rc = graph_interpret_skipping(vm, g, in, skip, out);
	for (int i = 0; rc == 0 && i < g->noutputs; i++)
		if (dep[g->outputs[i]] == 2) {
			val_decref(out[i]);
			out[i] = val_none();
		}
cleanup:
	free(dep);
	free(skip);
	return rc;
}

/* the tape node's backward: the backward graph on this call's saved
 * tensors and the outputs' gradients */
static int aot_backward(void *ctx, tensor *const *gouts, const bool *reached, tensor **gin)
{
	struct aot_call *c = ctx;
	const struct aot_artifact *a = c->a;
	int nin = a->nsaved + a->ntangents, nout = a->backward->noutputs;
	tensor **in = calloc((size_t)nin + 1, sizeof *in);
	value *out = calloc((size_t)nout + 1, sizeof *out);
	int rc = -1;
	if (!in || !out) {
		tj_error_set("out of memory");
		goto cleanup;
	}
	memcpy(in, c->saved, sizeof *in * (size_t)a->nsaved);
	memcpy(in + a->nsaved, gouts, sizeof *in * (size_t)a->ntangents);
	bool all = true;
	for (int t = 0; t < a->ntangents; t++)
		all = all && reached[t];
	bool was = ag_set_grad_enabled(false);
	rc = all ? run_graph(a, true, c->vm, in, out) : run_backward_reached(a, c->vm, in, reached, out);
	ag_set_grad_enabled(was);
	if (rc < 0)
		goto cleanup;
	for (int i = 0; i < a->nprimals; i++) {
		int k = a->grad_output[i];
		if (k >= 0 && out[k].tag == VAL_TENSOR) {
			gin[i] = val_as_tensor(out[k]);
			tensor_incref(gin[i]);
		}
	}
	for (int k = 0; k < nout; k++)
		val_decref(out[k]);
cleanup:
	free(in);
	free(out);
	return rc;
}

/* as tensors: the outputs that get a gradient (fresh ones: an output that
 * is an input, or another output, becomes an alias), and the saved */
static int split_outputs(const struct aot_artifact *a, value *all, tensor **diff, struct aot_call *c)
{
	for (int t = 0; t < a->ntangents; t++) {
		value *v = &all[a->tangent_of[t]];
		if (v->tag != VAL_TENSOR)
			goto not_tensor;
		tensor *o = val_as_tensor(*v);
		if (o->requires_grad || o->grad_fn) {
			if (!(o = ag_alias(o)))
				return -1;
			val_decref(*v);
			*v = val_tensor(o);
		}
		/* the next output that is this tensor gets an alias */
		o->requires_grad = true;
		diff[t] = o;
	}
	for (int s = 0; s < a->nsaved; s++) {
		value v = all[a->noutputs + s];
		if (v.tag != VAL_TENSOR)
			goto not_tensor;
		/* an alias: a saved output would otherwise reach its own node */
		if (!(c->saved[s] = ag_alias(val_as_tensor(v))))
			return -1;
	}
	return 0;
not_tensor:
	tj_error_set("aot_eager: a forward output to differentiate or save is not a tensor");
	return -1;
}

/* the forward graph with the tape off, then one tape node for its outputs */
static int run_with_backward(struct aot_artifact *a, struct vm *vm, tensor *const *inputs, value *outputs)
{
	int nall = a->forward->noutputs, got = 0, rc = -1;
	value *all = calloc((size_t)nall + 1, sizeof *all);
	tensor **diff = calloc((size_t)a->ntangents + 1, sizeof *diff);
	struct aot_call *c = calloc(1, sizeof *c);
	if (!all || !diff || !c || !(c->saved = calloc((size_t)a->nsaved + 1, sizeof *c->saved))) {
		tj_error_set("out of memory");
		goto cleanup;
	}
	c->a = a;
	a->rc++;
	c->vm = vm;
	bool was = ag_set_grad_enabled(false);
	rc = run_graph(a, false, vm, inputs, all);
	ag_set_grad_enabled(was);
	if (rc < 0)
		goto cleanup;
	got = nall;
	rc = -1;
	if (split_outputs(a, all, diff, c) < 0)
		goto cleanup;
	for (int t = 0; t < a->ntangents; t++)
		diff[t]->requires_grad = false;
	rc = ag_record_custom((tensor **)inputs, a->nprimals, diff, a->ntangents, aot_backward, c, call_release);
	c = NULL;
	if (rc < 0)
		goto cleanup;
	for (int i = 0; i < a->noutputs; i++) {
		outputs[i] = all[i];
		all[i] = val_none();
	}
cleanup:
	for (int i = 0; i < got; i++)
		val_decref(all[i]);
	call_release(c);
	free(all);
	free(diff);
	return rc;
}

/* The failure planted when a graph with relu runs: -1 after an error, 0
 * when the run goes on (a flaky run that passes). The crash, the hang and
 * the flaky failure are test-only (the minifier's, doc/backends.md): a
 * store to an unmapped address as a miscompile would make, a wait that
 * only a signal ends, and a failure of every other run of the program,
 * counted across processes by the file tjit-flaky.state in the current
 * folder (a run that finds it removes it and passes). */
static int run_bug(enum inject_kind kind)
{
	static int flaky_fails = -1;    /* this process's draw, made once */
	switch (kind) {
	case INJECT_CRASH: {
		volatile uintptr_t unmapped = 64;
		*(volatile char *)unmapped = 1;
		break;
	}
	case INJECT_HANG:
		for (;;)
			pause();
	case INJECT_FLAKY:
		if (flaky_fails < 0)
			flaky_fails = unlink("tjit-flaky.state") < 0;
		if (flaky_fails) {
			FILE *f = fopen("tjit-flaky.state", "w");
			if (f)
				fclose(f);
			tj_error_set("aot_eager: AotRuntimeError: the graph uses relu, in every other run "
				     "(TJIT_INJECT_BUG=aot:flaky)");
			return -1;
		}
		return 0;
	default:
		break;
	}
	tj_error_set("aot_eager: AotRuntimeError: the graph uses relu (TJIT_INJECT_BUG=aot:runtime_error)");
	return -1;
}

static int aot_run(void *compiled, struct vm *vm, tensor *const *inputs, value *outputs)
{
	struct aot_artifact *a = compiled;
	if (a->run_bug && run_bug(a->bug) < 0)
		return BACKEND_RUN_ERROR;
	if (!a->backward)
		return run_graph(a, false, vm, inputs, outputs);
	return run_with_backward(a, vm, inputs, outputs);
}

const struct backend backend_aot_eager = {
	"aot_eager", aot_compile, aot_run, aot_release, &backend_eager,
};
