/* trace_ops.c - tensor ops into graph nodes: a call bound to the op's
 * signature (ops_signature, as ops_normalize binds it), its arguments as
 * graph arguments (frame inputs join the graph on first use), the node's
 * dtype, sizes and symbols from the op's shape rule (sym_infer), and the
 * result's example value, made when data is needed (var_example);
 * allow_in_graph calls as one GN_CALL node.
 */
#include <stdlib.h>
#include <string.h>

#include "autograd.h"
#include "ops.h"
#include "ops_meta.h"
#include "runtime.h"
#include "trace_impl.h"
#include "util.h"

/* ---- tensors and graph nodes ---- */

static void set_meta(struct gnode *n, const struct meta_tensor *t, bool rg)
{
	n->is_tensor = true;
	n->dt = t->dt;
	n->ndim = t->ndim;
	memcpy(n->shape, t->shape, sizeof(struct sym_size) * (size_t)t->ndim);
	n->requires_grad = rg;
}

/* the metadata of a tensor: its symbols from syms (NULL: all constants) */
static struct meta_tensor meta_of(const tensor *t, const int *syms)
{
	struct meta_tensor m = {.dt = t->dt, .ndim = t->ndim};
	for (int d = 0; d < t->ndim; d++)
		m.shape[d] = (struct sym_size){t->shape[d], syms ? syms[d] : -1};
	return m;
}

/* the symbols of a result (every result of an op has the same), NULL
 * when they are all constants */
static int *result_syms(struct tstate *st, const struct meta_tensor *t)
{
	for (int d = 0; d < t->ndim; d++)
		if (t->shape[d].sym >= 0) {
			int *syms = trace_alloc(st, sizeof(int) * TENSOR_MAX_DIMS);
			for (int k = 0; k < TENSOR_MAX_DIMS; k++)
				syms[k] = k < t->ndim ? t->shape[k].sym : -1;
			return syms;
		}
	return NULL;
}

/* "L['xs'][1]" -> "xs_1", "G['w']" -> "w", "L['___stack0']" -> "stack0" */
static char *input_base_name(const char *text)
{
	struct strbuf sb = STRBUF_INIT;
	for (const char *p = text; *p; p++) {
		if ((p[0] == 'L' || p[0] == 'G') && p[1] == '[' && p[2] == '\'' && p == text) {
			p += 2;
			continue;
		}
		if (*p == '\'' || *p == ']')
			continue;
		if (*p == '[' || *p == '.') {
			if (sb.len && sb.buf[sb.len - 1] != '_')
				sb_putc(&sb, '_');
			continue;
		}
		if (*p == '_' && (sb.len == 0 || sb.buf[sb.len - 1] == '_'))
			continue;
		sb_putc(&sb, *p);
	}
	if (!sb.len)
		sb_puts(&sb, "input");
	return sb_detach(&sb);
}

static void node_stack(struct tstate *st, struct gnode *n)
{
	n->nstack = trace_user_stack(st, &n->stack, NULL, NULL);
}

/* a fresh name in the graph (its arena keeps it) */
static char *fresh_name(struct tstate *st, const char *base)
{
	char *name = graph_fresh_name(st->g, base);
	if (!name)
		trace_oom(st);
	return name;
}

static void check_graph_size(struct tstate *st)
{
	if (st->g->nnodes >= TRACE_MAX_NODES)
		trace_graph_break(st, BRK_TRACE_TOO_LONG, "more than %d graph nodes", TRACE_MAX_NODES);
}

/* The graph node of a tensor variable: a frame input joins the graph (and
 * its guards the list) on first use. -1 for a tensor that has no source
 * (a constant of the code, such as a default argument): it goes into the
 * graph as a constant. */
static int tnode(struct tstate *st, struct var *t)
{
	if (t->node >= 0 && t->node < st->g->nnodes)
		return t->node;
	if (t->src < 0)
		return -1;
	check_graph_size(st);
	need_tensor(st, t->src, t->ex, t->syms);
	const char *text = guards_source_text(st->gs, t->src);
	char *base = input_base_name(text);
	char *name = graph_fresh_name(st->g, base);
	free(base);
	if (!name)
		trace_oom(st);
	struct gnode *n = &st->node;
	n->kind = GN_INPUT;
	n->name = name;
	n->source = trace_strdup(st, text);
	struct meta_tensor m = meta_of(t->ex, t->syms);
	set_meta(n, &m, t->rg);
	t->node = trace_node_add(st);
	if (st->ninsrc == st->insrc_cap) {
		int cap = st->insrc_cap ? st->insrc_cap * 2 : 8;
		st->insrc = trace_realloc(st, st->insrc, sizeof(int) * (size_t)cap);
		st->insrc_cap = cap;
	}
	st->insrc[st->ninsrc++] = t->src;
	return t->node;
}

/* An argument of a graph node, with guards for what it reads; made in the
 * arena (constants held by the trace) and copied when the node is added. */
static void mkgarg(struct tstate *st, struct var *v, struct garg *out, const char *opname, int depth)
{
	memset(out, 0, sizeof *out);
	if (v && v->kind == VK_SYMINT) {
		int s = sym_of_int(st, v);
		if (s < 0) {
			out->kind = GARG_CONST;
			out->constant = v->v;
			return;
		}
		/* the tensor it came from is an input, so that its size binds the
		 * symbol when the graph runs */
		if (v->self && v->self->src >= 0)
			tnode(st, v->self);
		out->kind = GARG_SYM;
		out->sym = s;
		return;
	}
	v = var_realize(st, v);
	if (depth > TRACE_MAX_NEST)
		trace_graph_break(st, BRK_UNSUPPORTED, "arguments of %s nested too deep", opname);
	switch ((enum vkind)v->kind) {
	case VK_TENSOR: {
		int node = tnode(st, v);
		if (node >= 0) {
			out->kind = GARG_NODE;
			out->node = node;
		} else {
			out->kind = GARG_CONST;
			out->constant = val_tensor(var_example(st, v));
		}
		return;
	}
	case VK_CONST:
		need_value(st, v->src, v->v);
		out->kind = GARG_CONST;
		out->constant = v->v;
		return;
	case VK_LIST:
	case VK_TUPLE: {
		int n = var_seq_n(st, v);
		struct var **items = var_seq_items(st, v);
		out->kind = v->kind == VK_LIST ? GARG_LIST : GARG_TUPLE;
		out->n = n;
		out->items = trace_alloc(st, sizeof *out->items * (size_t)(n ? n : 1));
		for (int i = 0; i < n; i++)
			mkgarg(st, items[i], &out->items[i], opname, depth + 1);
		return;
	}
	default:
		break;
	}
	trace_graph_break(st, BRK_UNSUPPORTED, "a %s as an argument of %s", var_kind_name(st, v), opname);
}

/* the graph's own copy of an argument, in a node being built (st->node:
 * what it has so far goes with the attempt) */
static void garg_dup(struct tstate *st, const struct garg *a, struct garg *out)
{
	*out = *a;
	if (a->kind == GARG_CONST) {
		val_incref(a->constant);
	} else if (a->kind == GARG_LIST || a->kind == GARG_TUPLE) {
		out->n = 0;
		out->items = NULL;
		out->items = trace_calloc(st, (size_t)a->n, sizeof *out->items);
		out->n = a->n;
		for (int i = 0; i < a->n; i++)
			garg_dup(st, &a->items[i], &out->items[i]);
	}
}

/* st->node's args: copies of made[0..n) */
static void node_args(struct tstate *st, const struct garg *made, int n)
{
	struct gnode *node = &st->node;
	node->args = trace_calloc(st, (size_t)(n ? n : 1), sizeof *node->args);
	node->nargs = n;
	for (int i = 0; i < n; i++)
		garg_dup(st, &made[i], &node->args[i]);
}

static bool any_rg(struct tstate *st, struct var *v, int depth)
{
	if (v && v->kind == VK_SYMINT)
		return false;
	v = var_realize(st, v);
	if (v->kind == VK_TENSOR)
		return v->rg;
	if ((v->kind == VK_LIST || v->kind == VK_TUPLE) && depth < TRACE_MAX_NEST) {
		int n = var_seq_n(st, v);
		struct var **items = var_seq_items(st, v);
		for (int i = 0; i < n; i++)
			if (any_rg(st, items[i], depth + 1))
				return true;
	}
	return false;
}

static struct var *tensor_result(struct tstate *st, int node, tensor *ex, bool rg)
{
	struct var *t = var_new(st, VK_TENSOR);
	t->node = node;
	t->ex = ex;
	t->rg = rg;
	return t;
}

/* runs op on the examples: grad mode off, so nothing is recorded */
static value run_example(struct tstate *st, int op, const value *ex)
{
	bool prev = ag_set_grad_enabled(false);
	value out = ops_call(op, ex);
	ag_set_grad_enabled(prev);
	if (val_is_err(out))
		trace_fail_pending(st);
	return trace_hold(st, out);
}

/* ---- examples, made when their data is needed ----
 * An op's result has its metadata from the op's rule at once; its example
 * value is made when something needs data: a query or an allow_in_graph
 * call on it, or an op that may raise on the values it reads (run_now).
 * Examples are made in the order of their ops, every earlier one first,
 * so that each op sees the random state it would have seen running at
 * once. The others are never made: the random state is restored after
 * the trace, and an op that reads no integer data cannot fail on values
 * once its rule has passed (the rule runs the kernel's own checks). */

/* an argument as it was when its op was recorded (a list may change later) */
struct exarg {
	struct var *t;            /* a tensor variable, or NULL: */
	value v;                  /* a constant (borrowed: the trace holds it), or */
	int n;                    /* >= 0: a list or a tuple of n items */
	bool is_list;
	struct exarg *items;
};

struct exjob {
	int op, nargs;
	struct exarg *args;
	int nres;
	struct var *res[META_MAX_OUTS];   /* the result variables, once made */
	tensor *ex[META_MAX_OUTS];        /* the examples, once made */
	bool done;
	struct exjob *next;
};

static void freeze(struct tstate *st, struct var *v, struct exarg *out, int depth)
{
	memset(out, 0, sizeof *out);
	out->n = -1;
	if (v && v->kind == VK_SYMINT) {
		out->v = v->v;
		return;
	}
	v = var_realize(st, v);
	switch ((enum vkind)v->kind) {
	case VK_TENSOR:
		out->t = v;
		return;
	case VK_CONST:
		out->v = v->v;
		return;
	case VK_LIST:
	case VK_TUPLE: {
		int n = var_seq_n(st, v);
		struct var **items = var_seq_items(st, v);
		if (depth > TRACE_MAX_NEST)
			trace_fail(st, "nested too deep");
		out->n = n;
		out->is_list = v->kind == VK_LIST;
		out->items = trace_alloc(st, sizeof *out->items * (size_t)(n ? n : 1));
		for (int i = 0; i < n; i++)
			freeze(st, items[i], &out->items[i], depth + 1);
		return;
	}
	default:
		trace_fail(st, "no example value");
	}
}

/* the value of a frozen argument, its tensors' examples made (borrowed or held) */
static value thaw(struct tstate *st, const struct exarg *a)
{
	if (a->t)
		return val_tensor(var_example(st, a->t));
	if (a->n < 0)
		return a->v;
	value c = a->is_list ? list_new((size_t)a->n) : tuple_new((size_t)a->n);
	trace_hold(st, c);
	value *dst = a->is_list ? val_list(c)->items : val_tuple(c)->items;
	for (int i = 0; i < a->n; i++) {
		dst[i] = thaw(st, &a->items[i]);
		val_incref(dst[i]);
	}
	if (a->is_list)
		val_list(c)->len = (size_t)a->n;
	return c;
}

static void job_run(struct tstate *st, struct exjob *j)
{
	value ex[16];
	for (int i = 0; i < j->nargs; i++)
		ex[i] = thaw(st, &j->args[i]);
	value out = run_example(st, j->op, ex);
	bool one = out.tag == VAL_TENSOR;
	if (one ? j->nres != 1 : out.tag != VAL_TUPLE || val_tuple(out)->len != (size_t)j->nres)
		trace_fail(st, "%s: its shape rule and its kernel disagree", ops_table[j->op].name);
	for (int k = 0; k < j->nres; k++) {
		j->ex[k] = val_as_tensor(one ? out : val_tuple(out)->items[k]);
		if (j->res[k]) {
			j->res[k]->ex = j->ex[k];
			j->res[k]->job = NULL;
		}
	}
	j->done = true;
}

/* the example value of a variable (borrowed or held) */
static value exval(struct tstate *st, struct var *v)
{
	struct exarg a;
	freeze(st, v, &a, 0);
	return thaw(st, &a);
}

/* makes the examples of every op up to target (NULL: all), in order */
static void examples_upto(struct tstate *st, struct exjob *target)
{
	while (st->jobs) {
		struct exjob *j = st->jobs;
		st->jobs = j->next;
		if (!st->jobs)
			st->jobs_tail = NULL;
		job_run(st, j);
		if (j == target)
			return;
	}
}

tensor *var_example(struct tstate *st, struct var *t)
{
	if (t->job)
		examples_upto(st, t->job);
	return t->ex;
}

static struct exjob *job_new(struct tstate *st, int op, struct var **args, int n, int nres)
{
	struct exjob *j = trace_alloc(st, sizeof *j);
	j->op = op;
	j->nargs = n;
	j->nres = nres;
	j->args = trace_alloc(st, sizeof *j->args * (size_t)(n ? n : 1));
	for (int i = 0; i < n; i++)
		freeze(st, args[i], &j->args[i], 0);
	if (st->jobs_tail)
		st->jobs_tail->next = j;
	else
		st->jobs = j;
	st->jobs_tail = j;
	return j;
}

static bool reads_int_data(const struct exarg *a)
{
	if (a->t)
		return !dtype_is_float(a->t->ex->dt);
	for (int i = 0; i < a->n; i++)
		if (reads_int_data(&a->items[i]))
			return true;
	return false;
}

/* Whether op's example is made at once: when it reads integer data (the
 * kernels raise on values only there: division by zero, negative powers,
 * indices out of bounds), so that the trace fails where eager code fails;
 * and when it takes requires_grad= (its result may require grad by itself). */
static bool run_now(const struct exjob *j)
{
	const struct ops_sig *s = ops_signature(j->op);
	for (int i = 0; i < s->n; i++)
		if (strcmp(s->names[i], "requires_grad") == 0)
			return true;
	for (int i = 0; i < j->nargs; i++)
		if (reads_int_data(&j->args[i]))
			return true;
	return false;
}

/* a tensor with m's metadata and no data: a result's example until made */
static tensor *meta_header(struct tstate *st, const struct meta_tensor *m)
{
	tensor *t = trace_alloc(st, sizeof *t);
	t->dt = m->dt;
	t->ndim = m->ndim;
	t->numel = 1;
	for (int d = 0; d < m->ndim; d++) {
		t->shape[d] = m->shape[d].value;
		t->numel *= m->shape[d].value;
	}
	t->is_leaf = true;
	return t;
}

/* Records op on normalized arguments (ops_call's convention) and returns
 * its result: a tensor, a tuple of tensors, or a constant for the ops
 * that read metadata. */
struct var *op_emit(struct tstate *st, int op, struct var **args)
{
	const struct ops_info *info = &ops_table[op];
	int n = ops_nparams(op);
	if (runtime_op_disallowed(vm_runtime(st->vm), op))
		trace_graph_break(st, BRK_DISALLOWED_OP, "%s", info->name);
	if (info->flags & OPF_OPAQUE)
		trace_graph_break(st, BRK_EXTENSION, "%s", info->name);
	if (info->flags & OPF_DATA)
		trace_graph_break(st, BRK_TENSOR_DATA, "Tensor.%s()", info->name);
	if (info->flags & OPF_EFFECT)
		trace_graph_break(st, BRK_EFFECT_OP, "%s", info->name);
	if (op == OPS_grad) {
		/* the gradient of an input is an input too; a graph's tensors have none */
		struct var *t = var_realize(st, args[0]);
		if (t->kind != VK_TENSOR)
			trace_fail(st, "grad of a non-tensor");
		if (t->src < 0)
			return var_const(st, val_none());
		tensor *g = t->ex->grad;
		int src = trace_source(st, SRC_GRAD, t->src, 0, NULL);
		value gv = g ? val_tensor(g) : val_none();
		struct var *r = var_wrap(st, gv, src, 0);
		if (!g)
			need_value(st, src, gv);
		return r;
	}
	if (op == OPS_is_leaf)
		trace_graph_break(st, BRK_UNSUPPORTED, "Tensor.%s", info->name);
	if (op == OPS_requires_grad) {
		struct var *t = var_realize(st, args[0]);
		if (t->kind != VK_TENSOR)
			trace_fail(st, "requires_grad of a non-tensor");
		need_meta(st, t);
		return var_const(st, val_bool(t->rg));
	}
	value ex[16];
	if (n > 16)
		trace_fail(st, "too many parameters");
	if ((op == OPS_shape || op == OPS_size) && st->nsyms) {
		struct var *r = sym_sizes(st, op, args);
		if (r)
			return r;
	}
	if (info->flags & OPF_QUERY) {
		/* metadata: a constant, with the tensor's facts guarded */
		for (int i = 0; i < n; i++) {
			struct var *a = var_realize(st, args[i]);
			if (a->kind == VK_TENSOR && (op == OPS_dtype || op == OPS_ndim || op == OPS_dim))
				need_tensor(st, a->src, a->ex, a->syms);
			else if (a->kind == VK_TENSOR)
				need_meta(st, a);
			else
				(void)(a->kind == VK_CONST ? var_value(st, a) : val_none());
			ex[i] = exval(st, a);
		}
		value out = run_example(st, op, ex);
		return var_const(st, out);
	}
	check_graph_size(st);
	sym_before_op(st, op, args, n);
	struct garg *made = trace_alloc(st, sizeof *made * (size_t)(n ? n : 1));
	bool rg_in = false;
	for (int i = 0; i < n; i++) {
		mkgarg(st, args[i], &made[i], info->name, 0);
		rg_in = rg_in || any_rg(st, args[i], 0);
	}
	struct meta_out mo;
	sym_infer(st, op, args, n, &mo);
	struct exjob *job = job_new(st, op, args, n, mo.n);
	tensor *exs[META_MAX_OUTS];
	bool now = run_now(job);
	if (now)
		examples_upto(st, job);
	for (int k = 0; k < mo.n; k++)
		exs[k] = now ? job->ex[k] : meta_header(st, &mo.t[k]);
	bool diff = (info->flags & OPF_DIFF) && rg_in;
	int *osyms = result_syms(st, &mo.t[0]);
	char *name = fresh_name(st, info->name);
	struct gnode *node = &st->node;
	node->kind = GN_OP;
	node->op = op;
	node->name = name;
	node_args(st, made, n);
	node_stack(st, node);
	if (mo.n == 1) {
		bool rg = exs[0]->requires_grad || (diff && dtype_is_float(mo.t[0].dt));
		set_meta(node, &mo.t[0], rg);
		int idx = trace_node_add(st);
		struct var *r = tensor_result(st, idx, exs[0], rg);
		r->syms = osyms;
		if (!now) {
			r->job = job;
			job->res[0] = r;
		}
		return r;
	}
	node->nouts = mo.n;
	int idx = trace_node_add(st);
	struct var **items = trace_alloc(st, sizeof(struct var *) * (size_t)mo.n);
	for (int k = 0; k < mo.n; k++) {
		bool rg = k == 0 && diff && dtype_is_float(mo.t[k].dt);
		char *giname = fresh_name(st, "getitem");
		struct gnode *gi = &st->node;
		gi->kind = GN_GETITEM;
		gi->index = k;
		gi->name = giname;
		struct garg tuple = {.kind = GARG_NODE, .node = idx};
		node_args(st, &tuple, 1);
		node_stack(st, gi);
		set_meta(gi, &mo.t[k], rg);
		int gidx = trace_node_add(st);
		items[k] = tensor_result(st, gidx, exs[k], rg);
		items[k]->syms = osyms;
		if (!now) {
			items[k]->job = job;
			job->res[k] = items[k];
		}
	}
	return var_tuple(st, mo.n, items);
}

/* ---- binding arguments to an op's signature (ops_normalize's rules) ---- */

/* Fills out[ops_nparams(op)] from a Python-style call; a binding error
 * ends the trace (the VM raises it). */
static void bind_op(struct tstate *st, int op, struct var **args, int nargs, value kwnames, struct var **out)
{
	const struct ops_sig *s = ops_signature(op);
	int nkw = kwnames_count(kwnames), npos = nargs - nkw;
	if (npos < 0)
		trace_fail(st, "bad call");
	for (int i = 0; i < s->n; i++)
		out[i] = NULL;
	int v = s->vararg;
	int head = v < 0 ? npos : (npos < v ? npos : v);
	if (v < 0 && npos > s->n)
		trace_fail(st, "%s() takes too many arguments", ops_table[op].name);
	for (int i = 0; i < head; i++)
		out[i] = args[i];
	if (v >= 0) {
		int nv = npos - head;
		struct var *tv;
		if (nv == 1 && args[v]->kind != VK_SYMINT &&
		    (var_realize(st, args[v])->kind == VK_TUPLE || var_realize(st, args[v])->kind == VK_LIST)) {
			struct var *a = var_realize(st, args[v]);
			tv = a->kind == VK_TUPLE ? a : var_tuple(st, seqrec_read(st, a->rec)->n, a->rec->items);
		} else {
			tv = var_tuple(st, nv, args + head);
		}
		out[v] = tv;
	}
	for (int k = 0; k < nkw; k++) {
		value kn = val_tuple(kwnames)->items[k];
		int j = -1;
		for (int i = 0; i < s->n && kn.tag == VAL_STR; i++)
			if (i != v && str_eq_cstr(val_str(kn), s->names[i]))
				j = i;
		if (j < 0 || out[j])
			trace_fail(st, "%s(): bad keyword argument", ops_table[op].name);
		out[j] = args[npos + k];
	}
	for (int i = 0; i < s->n; i++) {
		if (out[i])
			continue;
		if (i < s->nrequired)
			trace_fail(st, "%s() missing required argument '%s'", ops_table[op].name, s->names[i]);
		out[i] = var_const(st, s->defaults[i]);
	}
}

struct var *op_call(struct tstate *st, int op, struct var **args, int nargs, value kwnames)
{
	struct var *norm[OPS_MAX_PARAMS];
	if (ops_nparams(op) > OPS_MAX_PARAMS)
		trace_fail(st, "too many parameters");
	bind_op(st, op, args, nargs, kwnames, norm);
	return op_emit(st, op, norm);
}

/* The body of an allow_in_graph function runs here, to give the node its
 * result's dtype and shape, and again each time the graph runs (under
 * eager; aot_eager traces it through where it can, aot_inline.h): its side
 * effects happen once more on every call that compiles. Said once per
 * call site, at the call (doc/language.md). */
static void warn_body_runs(struct tstate *st, const char *fname)
{
	struct runtime *rt = vm_runtime(st->vm);
	if (!rt || !rt->log || !st->cur)
		return;
	struct strbuf sb = STRBUF_INIT;
	sb_printf(&sb,
		  "allow_in_graph: %s runs while tracing (a side effect in it happens once more on each compile)",
		  fname);
	if (sb.buf)
		compile_log_warning_once_at(rt->log, st->cur->code->src, trace_loc(st->cur), sb.buf);
	sb_release(&sb);
}

/* allow_in_graph(f): one opaque node that calls f */
struct var *op_call_allowed(struct tstate *st, value fn, struct var **args, int nargs, value kwnames)
{
	if (kwnames_count(kwnames))
		trace_graph_break(st, BRK_UNSUPPORTED, "keyword arguments to an allow_in_graph function");
	const char *fname = fn.tag == VAL_FUNC ? val_func(fn)->code->name : "allowed";
	check_graph_size(st);
	struct garg *made = trace_alloc(st, sizeof *made * (size_t)(nargs ? nargs : 1));
	value *ex = trace_alloc(st, sizeof(value) * (size_t)(nargs ? nargs : 1));
	for (int i = 0; i < nargs; i++)
		mkgarg(st, args[i], &made[i], fname, 0);
	examples_upto(st, NULL); /* f may draw random numbers: after every earlier op */
	for (int i = 0; i < nargs; i++)
		ex[i] = exval(st, args[i]);
	for (int i = 0; i < nargs; i++)
		sym_spec_deep(st, args[i], 0);
	warn_body_runs(st, fname);
	void *ctx;
	vm_eval_frame_fn hook = vm_get_eval_frame(st->vm, &ctx);
	vm_set_eval_frame(st->vm, NULL, NULL);
	bool prev = ag_set_grad_enabled(false);
	value out = vm_call(st->vm, fn, ex, nargs, val_none());
	ag_set_grad_enabled(prev);
	vm_set_eval_frame(st->vm, hook, ctx);
	if (val_is_err(out))
		trace_fail_pending(st);
	trace_hold(st, out);
	if (out.tag != VAL_TENSOR)
		trace_graph_break(st, BRK_ALLOWED_NONTENSOR, "%s", fname);
	char *name = fresh_name(st, fname);
	struct gnode *node = &st->node;
	node->kind = GN_CALL;
	node->callee = fn;
	val_incref(fn);
	node->name = name;
	node_args(st, made, nargs);
	node_stack(st, node);
	tensor *t = val_as_tensor(out);
	bool rg = t->requires_grad;
	for (int i = 0; i < nargs; i++)
		rg = rg || any_rg(st, args[i], 0);
	rg = rg && dtype_is_float(t->dt);
	struct meta_tensor m = meta_of(t, NULL);
	set_meta(node, &m, rg);
	int idx = trace_node_add(st);
	st->has_call = true;
	return tensor_result(st, idx, t, rg);
}
