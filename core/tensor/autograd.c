/* autograd.c - the eager tape: recording nodes, running backward, and one
 * backward rule per differentiable op of ops.def (bw_<backward column>).
 *
 * Rules compute with tensor.h kernels directly, so nothing they make is
 * recorded. Each returns gradients that broadcast to its inputs; the
 * engine sums them down (tensor_sum_to_shape) and converts their dtype.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autograd.h"
#include "error.h"
#include "ops.h"

enum { SV_NONE = 0, SV_IN = 1, SV_OUT = 2, SV_INOUT = 3 };

/* a compiled function's node (ag_record_custom) */
struct ag_custom {
	ag_custom_fn fn;
	void *ctx;                  /* NULL once released */
	void (*release)(void *ctx);
	int noutputs;
	struct ag_input *outs;      /* [noutputs]: each output's type, for the zeros */
	tensor **grads;             /* [noutputs]: engine scratch, the gradient accumulated for each */
	bool *reached;              /* [noutputs]: engine scratch, a gradient reached it */
};

static bool grad_enabled = true;
static uint64_t next_seq;

bool ag_set_grad_enabled(bool on)
{
	bool was = grad_enabled;
	grad_enabled = on;
	return was;
}

bool ag_grad_enabled(void) { return grad_enabled; }

static const char freed_msg[] =
	"Trying to backward through the graph a second time (or directly access saved tensors after they "
	"have already been freed); saved values are freed by backward(): pass retain_graph=True to the "
	"first backward() to keep them";

tensor *ag_alias(const tensor *t)
{
	tensor *r = tensor_reshape(t, t->ndim, t->shape);
	if (r == t) {
		tensor_decref(r);
		r = tensor_copy(t);
	}
	return r;
}

/* ---- node lifecycle ---- */

/* nodes whose count reached zero, freed by the outermost ag_node_decref:
 * freeing a node drops tensors that may drop nodes, without recursion */
static struct ag_node *free_list;
static bool freeing;

void ag_node_incref(struct ag_node *n)
{
	n->rc++;
}

static void node_release_saved(struct ag_node *n)
{
	for (int i = 0; i < n->ninputs; i++) {
		tensor_decref(n->inputs[i].saved);
		n->inputs[i].saved = NULL;
	}
	for (int k = 0; k < n->noutputs; k++) {
		tensor_decref(n->outputs[k]);
		n->outputs[k] = NULL;
	}
	if (n->custom && n->custom->ctx) {
		n->custom->release(n->custom->ctx);
		n->custom->ctx = NULL;
	}
}

static void node_destroy(struct ag_node *n)
{
	node_release_saved(n);
	for (int i = 0; i < n->ninputs; i++) {
		if (n->inputs[i].node)
			ag_node_decref(n->inputs[i].node);
		tensor_decref(n->inputs[i].leaf);
	}
	for (int i = 0; i < n->nargs; i++)
		val_decref(n->args[i]);
	tensor_decref(n->grad_acc);
	if (n->custom) {
		for (int k = 0; k < n->custom->noutputs; k++)
			tensor_decref(n->custom->grads[k]);
		free(n->custom->grads);
		free(n->custom->reached);
		free(n->custom->outs);
		free(n->custom);
	}
	free(n->args);
	free(n->arg_input);
	free(n->inputs);
	free(n);
}

void ag_node_decref(struct ag_node *n)
{
	if (!n || --n->rc)
		return;
	/* the free list links through grad_acc's slot: a dead node has no use for it */
	tensor_decref(n->grad_acc);
	n->grad_acc = (tensor *)free_list;
	free_list = n;
	if (freeing)
		return;
	freeing = true;
	while (free_list) {
		struct ag_node *m = free_list;
		free_list = (struct ag_node *)m->grad_acc;
		m->grad_acc = NULL;
		node_destroy(m);
	}
	freeing = false;
}

const char *ag_node_name(const struct ag_node *n, char *buf, size_t size)
{
	struct strbuf sb = STRBUF_INIT;
	bool up = true;
	if (n->custom) {
		snprintf(buf, size, "CompiledFunctionBackward");
		return buf;
	}
	for (const char *p = ops_table[n->op].name; *p; p++) {
		if (*p == '_') {
			up = true;
			continue;
		}
		sb_putc(&sb, up && *p >= 'a' && *p <= 'z' ? (char)(*p - 'a' + 'A') : *p);
		up = false;
	}
	snprintf(buf, size, "%sBackward0", sb.buf ? sb.buf : "");
	sb_release(&sb);
	return buf;
}

/* ---- saved values, for the rules ---- */

tensor *ag_arg(struct ag_node *n, int pos)
{
	int k = n->arg_input[pos];
	if (k >= 0) {
		tensor *t = n->inputs[k].saved;
		if (!t) {
			tj_error_set("%s", n->released ? freed_msg : "autograd: an input was not saved");
			return NULL;
		}
		tensor_incref(t);
		return t;
	}
	tensor *t = ops_as_tensor(n->args[pos]);
	if (!t)
		tj_error_set("autograd: argument %d of %s is not a tensor", pos, ops_table[n->op].name);
	return t;
}

tensor *ag_output(struct ag_node *n, int k)
{
	tensor *t = k < n->noutputs ? n->outputs[k] : NULL;
	if (!t) {
		tj_error_set("%s", n->released ? freed_msg : "autograd: an output was not saved");
		return NULL;
	}
	tensor_incref(t);
	return t;
}

/* ---- recording ---- */

/* what parameter pos of op holds: tensor inputs are its tensor arguments
 * (except the index of x[index]) and the items of a "tensors" list */
enum { ROLE_OTHER, ROLE_TENSOR, ROLE_LIST };
#define ROLE_MAX 8

static int param_role(int op, int pos)
{
	static uint8_t roles[OPS_COUNT][ROLE_MAX];
	static bool ready;
	if (!ready) {
		for (int o = 0; o < OPS_COUNT; o++)
			for (int i = 0; i < ops_nparams(o) && i < ROLE_MAX; i++) {
				const char *name = ops_param_name(o, i);
				roles[o][i] = strcmp(name, "tensors") == 0 ? ROLE_LIST
					      : strcmp(name, "index") == 0 ? ROLE_OTHER
									  : ROLE_TENSOR;
			}
		ready = true;
	}
	return pos < ROLE_MAX ? roles[op][pos] : ROLE_OTHER;
}

static bool is_seq(value v) { return v.tag == VAL_LIST || v.tag == VAL_TUPLE; }
static size_t seq_len(value v) { return v.tag == VAL_LIST ? val_list(v)->len : val_tuple(v)->len; }
static value *seq_items(value v) { return v.tag == VAL_LIST ? val_list(v)->items : val_tuple(v)->items; }

/* whether argument v at pos is (or holds) tensor inputs */
static bool is_tensor_arg(int op, int pos, value v)
{
	int role = param_role(op, pos);
	return (role == ROLE_TENSOR && v.tag == VAL_TENSOR) || (role == ROLE_LIST && is_seq(v));
}

/* calls fn(t, ctx) for every tensor input of op, in order */
static void for_each_input(int op, const value *args, void (*fn)(tensor *t, void *ctx), void *ctx)
{
	int nargs = ops_nparams(op);
	for (int pos = 0; pos < nargs; pos++) {
		value v = args[pos];
		if (!is_tensor_arg(op, pos, v))
			continue;
		if (v.tag == VAL_TENSOR) {
			fn(val_as_tensor(v), ctx);
			continue;
		}
		for (size_t i = 0; i < seq_len(v); i++)
			if (seq_items(v)[i].tag == VAL_TENSOR)
				fn(val_as_tensor(seq_items(v)[i]), ctx);
	}
}

struct scan {
	int n;
	bool any;
};

static void scan_input(tensor *t, void *ctx)
{
	struct scan *s = ctx;
	s->n++;
	s->any |= t->requires_grad;
}

struct fill {
	struct ag_node *node;
	int k;
	bool save;
};

static void fill_input(tensor *t, void *ctx)
{
	struct fill *f = ctx;
	struct ag_input *in = &f->node->inputs[f->k++];
	if (t->grad_fn) {
		in->node = t->grad_fn;
		in->output_nr = t->output_nr;
		ag_node_incref(in->node);
	} else if (t->requires_grad) {
		in->leaf = t;
		tensor_incref(t);
	}
	if (f->save) {
		/* an input cannot reach this node: saving it makes no cycle */
		in->saved = t;
		tensor_incref(t);
	}
	in->dt = t->dt;
	in->ndim = t->ndim;
	memcpy(in->shape, t->shape, sizeof in->shape);
}

struct rule {
	ag_backward_fn fn;
	int save;
};
static const struct rule rules[OPS_COUNT];

int ag_record(int op, const value *args, value out)
{
	tensor *o = NULL;
	struct scan sc = {0, false};

	if (!grad_enabled || !(ops_table[op].flags & OPF_DIFF) || !rules[op].fn)
		return 0;
	if (out.tag == VAL_TENSOR)
		o = val_as_tensor(out);
	else if (out.tag == VAL_TUPLE && val_tuple(out)->len > 0 && val_tuple(out)->items[0].tag == VAL_TENSOR)
		o = val_as_tensor(val_tuple(out)->items[0]);
	if (!o || !dtype_is_float(o->dt))
		return 0;
	for_each_input(op, args, scan_input, &sc);
	if (!sc.any)
		return 0;

	tensor_grad_fn_release = ag_node_decref;
	int nargs = ops_nparams(op);
	struct ag_node *n = calloc(1, sizeof *n);
	if (!n)
		goto oom;
	n->rc = 1;
	n->op = op;
	n->seq = next_seq++;
	n->backward = rules[op].fn;
	n->nargs = nargs;
	n->args = calloc(nargs ? nargs : 1, sizeof *n->args);
	n->arg_input = calloc(nargs ? nargs : 1, sizeof *n->arg_input);
	n->ninputs = sc.n;
	n->inputs = calloc(sc.n ? sc.n : 1, sizeof *n->inputs);
	if (!n->args || !n->arg_input || !n->inputs) {
		free(n->args);
		free(n->arg_input);
		free(n->inputs);
		free(n);
		goto oom;
	}
	struct fill f = {n, 0, (rules[op].save & SV_IN) != 0};
	for (int pos = 0; pos < nargs; pos++) {
		value v = args[pos];
		bool tensor_arg = is_tensor_arg(op, pos, v);
		n->arg_input[pos] = tensor_arg ? f.k : -1;
		n->args[pos] = tensor_arg ? val_none() : v;
		if (!tensor_arg) {
			val_incref(v);
			continue;
		}
		if (v.tag == VAL_TENSOR) {
			fill_input(val_as_tensor(v), &f);
			continue;
		}
		for (size_t i = 0; i < seq_len(v); i++)
			if (seq_items(v)[i].tag == VAL_TENSOR)
				fill_input(val_as_tensor(seq_items(v)[i]), &f);
	}
	if (rules[op].save & SV_OUT) {
		n->outputs[n->noutputs++] = ag_alias(o);
		if (!n->outputs[0])
			goto fail;
		if (out.tag == VAL_TUPLE && val_tuple(out)->len > 1 && val_tuple(out)->items[1].tag == VAL_TENSOR) {
			/* max/min indices: no autograd state, no cycle */
			tensor *idx = val_as_tensor(val_tuple(out)->items[1]);
			tensor_incref(idx);
			n->outputs[n->noutputs++] = idx;
		}
	}
	n->saves = rules[op].save != SV_NONE;
	n->out_dt = o->dt;
	n->out_ndim = o->ndim;
	memcpy(n->out_shape, o->shape, sizeof n->out_shape);

	o->requires_grad = true;
	o->is_leaf = false;
	if (o->grad_fn)
		ag_node_decref(o->grad_fn);
	o->grad_fn = n;
	return 0;
fail:
	ag_node_decref(n);
	return -1;
oom:
	tj_error_set("out of memory");
	return -1;
}

static struct ag_node *custom_node(int ninputs, int noutputs)
{
	struct ag_node *n = calloc(1, sizeof *n);
	if (!n)
		return NULL;
	n->rc = 1;
	n->seq = next_seq++;
	n->ninputs = ninputs;
	n->inputs = calloc((size_t)ninputs + 1, sizeof *n->inputs);
	n->custom = calloc(1, sizeof *n->custom);
	if (n->custom) {
		n->custom->noutputs = noutputs;
		n->custom->outs = calloc((size_t)noutputs + 1, sizeof *n->custom->outs);
		n->custom->grads = calloc((size_t)noutputs + 1, sizeof *n->custom->grads);
		n->custom->reached = calloc((size_t)noutputs + 1, sizeof *n->custom->reached);
	}
	if (!n->inputs || !n->custom || !n->custom->outs || !n->custom->grads || !n->custom->reached) {
		ag_node_decref(n);
		return NULL;
	}
	return n;
}

int ag_record_custom(tensor *const *inputs, int ninputs, tensor *const *outputs, int noutputs,
		     ag_custom_fn backward, void *ctx, void (*release)(void *ctx))
{
	bool any = false;
	for (int i = 0; i < ninputs; i++)
		any |= inputs[i]->requires_grad;
	if (!grad_enabled || !any || noutputs == 0) {
		release(ctx);
		return 0;
	}
	tensor_grad_fn_release = ag_node_decref;
	struct ag_node *n = custom_node(ninputs, noutputs);
	if (!n) {
		release(ctx);
		tj_error_set("out of memory");
		return -1;
	}
	struct fill f = {n, 0, false};
	for (int i = 0; i < ninputs; i++)
		fill_input(inputs[i], &f);
	n->custom->fn = backward;
	n->custom->ctx = ctx;
	n->custom->release = release;
	n->saves = true;
	for (int k = 0; k < noutputs; k++) {
		tensor *o = outputs[k];
		struct ag_input *out = &n->custom->outs[k];
		out->dt = o->dt;
		out->ndim = o->ndim;
		memcpy(out->shape, o->shape, sizeof out->shape);
		o->requires_grad = true;
		o->is_leaf = false;
		o->output_nr = k;
		if (o->grad_fn)
			ag_node_decref(o->grad_fn);
		o->grad_fn = n;
		if (k > 0)
			ag_node_incref(n);
	}
	return 0;
}

/* ---- the engine ---- */

/* accumulates g (consumed) into a leaf's .grad: a new tensor each time */
static int accumulate_leaf(tensor *leaf, tensor *g)
{
	if (!leaf->grad) {
		leaf->grad = g;
		return 0;
	}
	tensor *sum = tensor_binary(BINOP_add, leaf->grad, g);
	tensor_decref(g);
	if (!sum)
		return -1;
	tensor_decref(leaf->grad);
	leaf->grad = sum;
	return 0;
}

/* g (consumed) summed down to the input's shape and converted to its dtype */
static tensor *fit_grad(tensor *g, const struct ag_input *in)
{
	if (!shape_equal(g->ndim, g->shape, in->ndim, in->shape)) {
		tensor *s = tensor_sum_to_shape(g, in->ndim, in->shape);
		tensor_decref(g);
		if (!(g = s))
			return NULL;
	}
	if (g->dt != in->dt) {
		tensor *c = tensor_to(g, in->dt);
		tensor_decref(g);
		g = c;
	}
	return g;
}

/* where the gradient of input in's value accumulates: its node's grad_acc,
 * or the slot of its output on a compiled function's node */
static tensor **grad_slot(const struct ag_input *in)
{
	return in->node->custom ? &in->node->custom->grads[in->output_nr] : &in->node->grad_acc;
}

/* runs a compiled function's node: zeros for the outputs no gradient reached */
static int run_custom(struct ag_node *n, tensor **gin)
{
	struct ag_custom *c = n->custom;
	bool any = false;
	int err = 0;
	for (int k = 0; k < c->noutputs; k++) {
		c->reached[k] = c->grads[k] != NULL;
		any |= c->reached[k];
	}
	for (int k = 0; k < c->noutputs && any && !err; k++)
		if (!c->grads[k] && !(c->grads[k] = tensor_full(c->outs[k].dt, c->outs[k].ndim, c->outs[k].shape, 0.0)))
			err = -1;
	if (any && !err)
		err = c->fn(c->ctx, c->grads, c->reached, gin);
	for (int k = 0; k < c->noutputs; k++) {
		tensor_decref(c->grads[k]);
		c->grads[k] = NULL;
	}
	return err;
}

struct node_vec {
	struct ag_node **items;
	size_t len, cap;
};

static int vec_push(struct node_vec *v, struct ag_node *n)
{
	if (v->len == v->cap) {
		size_t cap = v->cap ? 2 * v->cap : 64;
		struct ag_node **items = realloc(v->items, cap * sizeof *items);
		if (!items) {
			tj_error_set("out of memory");
			return -1;
		}
		v->items = items;
		v->cap = cap;
	}
	v->items[v->len++] = n;
	return 0;
}

int ag_backward(tensor *root, const tensor *gradient, bool retain_graph)
{
	static uint32_t epoch;
	struct node_vec nodes = {0}, work = {0};
	tensor *g;
	int rc = -1;

	if (!root->requires_grad) {
		tj_error_set("element 0 of tensors does not require grad and does not have a grad_fn");
		return -1;
	}
	if (!gradient) {
		if (root->numel != 1) {
			tj_error_set("grad can be implicitly created only for scalar outputs");
			return -1;
		}
		g = tensor_full(root->dt, root->ndim, root->shape, 1.0);
	} else {
		if (!shape_equal(gradient->ndim, gradient->shape, root->ndim, root->shape)) {
			struct strbuf a = STRBUF_INIT, b = STRBUF_INIT;
			shape_format(gradient->ndim, gradient->shape, &a);
			shape_format(root->ndim, root->shape, &b);
			tj_error_set("mismatch in shape: gradient has a shape of %s and output has a shape of %s", a.buf,
				     b.buf);
			sb_release(&a);
			sb_release(&b);
			return -1;
		}
		g = tensor_to(gradient, root->dt);
	}
	if (!g)
		return -1;
	if (!root->grad_fn)
		return accumulate_leaf(root, g);

	/* every node reachable from the root, and how many edges reach each */
	epoch++;
	struct ag_node *top = root->grad_fn;
	top->mark = epoch;
	top->deps = 0;
	if (vec_push(&work, top) < 0)
		goto out;
	while (work.len) {
		struct ag_node *n = work.items[--work.len];
		if (vec_push(&nodes, n) < 0)
			goto out;
		for (int i = 0; i < n->ninputs; i++) {
			struct ag_node *m = n->inputs[i].node;
			if (!m)
				continue;
			if (m->mark != epoch) {
				m->mark = epoch;
				m->deps = 0;
				if (vec_push(&work, m) < 0)
					goto out;
			}
			m->deps++;
		}
	}
	for (size_t i = 0; i < nodes.len; i++) {
		if (nodes.items[i]->released && nodes.items[i]->saves) {
			tj_error_set("%s", freed_msg);
			goto out;
		}
	}

	/* run them in reverse topological order; each node enters work once */
	work.len = 0;
	while (work.cap < nodes.len)
		if (vec_push(&work, NULL) < 0)
			goto out;
	work.len = 0;
	if (top->custom)
		top->custom->grads[root->output_nr] = g;
	else
		top->grad_acc = g;
	g = NULL;
	vec_push(&work, top);
	while (work.len) {
		struct ag_node *n = work.items[--work.len];
		tensor *gout = n->grad_acc;
		tensor **gin = calloc(n->ninputs ? n->ninputs : 1, sizeof *gin);
		n->grad_acc = NULL;
		if (!gin) {
			tensor_decref(gout);
			tj_error_set("out of memory");
			goto out;
		}
		int err = n->custom ? run_custom(n, gin) : gout ? n->backward(n, gout, gin) : 0;
		tensor_decref(gout);
		for (int i = 0; i < n->ninputs; i++) {
			struct ag_input *in = &n->inputs[i];
			tensor *gi = gin[i];
			if (gi && !err && (in->node || in->leaf)) {
				if (!(gi = fit_grad(gi, in))) {
					err = -1;
				} else if (in->node) {
					tensor **acc = grad_slot(in);
					if (*acc) {
						tensor *s = tensor_binary(BINOP_add, *acc, gi);
						tensor_decref(gi);
						if (!s)
							err = -1;
						tensor_decref(*acc);
						*acc = s;
					} else {
						*acc = gi;
					}
				} else if (accumulate_leaf(in->leaf, gi) < 0) {
					err = -1;
				}
			} else {
				tensor_decref(gi);
			}
			if (in->node && --in->node->deps == 0)
				work.items[work.len++] = in->node;
		}
		free(gin);
		if (err)
			goto out;
	}
	if (!retain_graph) {
		for (size_t i = 0; i < nodes.len; i++) {
			node_release_saved(nodes.items[i]);
			nodes.items[i]->released = true;
		}
	}
	rc = 0;
out:
	for (size_t i = 0; i < nodes.len; i++) {
		struct ag_node *n = nodes.items[i];
		tensor_decref(n->grad_acc);
		n->grad_acc = NULL;
		for (int k = 0; n->custom && k < n->custom->noutputs; k++) {
			tensor_decref(n->custom->grads[k]);
			n->custom->grads[k] = NULL;
		}
	}
	tensor_decref(g);
	free(nodes.items);
	free(work.items);
	return rc;
}

/* ---- helpers for the rules ----
 * A scope owns the temporaries of one rule; every helper passes NULL
 * through (a kernel failed: the error is set) so that a rule reads as a
 * chain of formulas and checks once at the end. */

#define SCOPE_MAX 64
struct scope {
	tensor *t[SCOPE_MAX];
	int n;
	bool err;
};

static tensor *own(struct scope *s, tensor *t)
{
	if (!t) {
		s->err = true;
		return NULL;
	}
	if (s->n == SCOPE_MAX) {
		tensor_decref(t);
		tj_error_set("autograd: too many temporaries in a backward rule");
		s->err = true;
		return NULL;
	}
	s->t[s->n++] = t;
	return t;
}

/* t as a result that outlives the scope (a new reference) */
static tensor *keep(tensor *t)
{
	if (t)
		tensor_incref(t);
	return t;
}

/* releases the scope; on an error, also the gradients set so far */
static int done(struct scope *s, struct ag_node *n, tensor **gin)
{
	for (int i = 0; i < s->n; i++)
		tensor_decref(s->t[i]);
	if (!s->err)
		return 0;
	for (int i = 0; i < n->ninputs; i++) {
		tensor_decref(gin[i]);
		gin[i] = NULL;
	}
	return -1;
}

static tensor *bin(struct scope *s, binop op, const tensor *a, const tensor *b)
{
	return a && b ? own(s, tensor_binary(op, a, b)) : (s->err = true, NULL);
}

static tensor *un(struct scope *s, unop op, const tensor *a)
{
	return a ? own(s, tensor_unary(op, a)) : (s->err = true, NULL);
}

/* a Python float as a wrapped 0-d tensor: it does not widen float32 */
static tensor *num(struct scope *s, double v)
{
	tensor *t = tensor_scalar(DT_FLOAT64, v);
	if (t)
		t->wrapped_number = true;
	return own(s, t);
}

static tensor *arg(struct scope *s, struct ag_node *n, int pos) { return own(s, ag_arg(n, pos)); }
static tensor *output(struct scope *s, struct ag_node *n, int k) { return own(s, ag_output(n, k)); }

static tensor *where(struct scope *s, const tensor *c, const tensor *a, const tensor *b)
{
	return c && a && b ? own(s, tensor_where(c, a, b)) : (s->err = true, NULL);
}

static tensor *reshape(struct scope *s, const tensor *t, int ndim, const int64_t *shape)
{
	return t ? own(s, tensor_reshape(t, ndim, shape)) : (s->err = true, NULL);
}

static tensor *expand(struct scope *s, const tensor *t, int ndim, const int64_t *shape)
{
	return t ? own(s, tensor_expand(t, ndim, shape)) : (s->err = true, NULL);
}

static tensor *transpose_last(struct scope *s, const tensor *t)
{
	if (!t)
		return s->err = true, NULL;
	if (t->ndim < 2)
		return own(s, keep((tensor *)t));
	return own(s, tensor_transpose(t, t->ndim - 2, t->ndim - 1));
}

static tensor *sum_keepdim(struct scope *s, const tensor *t, const int *dims, int n)
{
	return t ? own(s, tensor_reduce(REDOP_sum, t, dims, n, true, 0)) : (s->err = true, NULL);
}

/* y = f(x) elementwise in double, into a tensor of x's (floating) dtype */
static tensor *map_double(struct scope *s, const tensor *x, double (*f)(double))
{
	if (!x)
		return s->err = true, NULL;
	tensor *r = own(s, tensor_empty(dtype_is_float(x->dt) ? x->dt : DT_FLOAT32, x->ndim, x->shape));
	if (!r)
		return NULL;
	for (int64_t i = 0; i < r->numel; i++) {
		double y = f(tensor_get_double(x, i));
		if (r->dt == DT_FLOAT32)
			((float *)r->data)[i] = (float)y;
		else
			((double *)r->data)[i] = y;
	}
	return r;
}

/* the gradient of input slot i of a one-input op */
#define IN0 (n->arg_input[0])
#define SET(i, expr)                                \
	do {                                        \
		if (ag_needs_grad(n, (i)))          \
			gin[(i)] = keep(expr);      \
	} while (0)

/* the shape of input i with the reduced dims set to 1 (all of them when nd == 0) */
static void keepdim_shape(const struct ag_input *in, const int *dims, int nd, int64_t *shape)
{
	memcpy(shape, in->shape, sizeof in->shape);
	if (nd == 0)
		for (int d = 0; d < in->ndim; d++)
			shape[d] = 1;
	for (int k = 0; k < nd; k++)
		shape[dims[k]] = 1;
}

/* ---- rules: pointwise unary ---- */

static int bw_neg(struct ag_node *n, const tensor *g, tensor **gin)
{
	struct scope s = {0};
	SET(IN0, un(&s, UNOP_neg, g));
	return done(&s, n, gin);
}

static int bw_abs(struct ag_node *n, const tensor *g, tensor **gin)
{
	struct scope s = {0};
	SET(IN0, bin(&s, BINOP_mul, g, un(&s, UNOP_sign, arg(&s, n, 0))));
	return done(&s, n, gin);
}

static int bw_exp(struct ag_node *n, const tensor *g, tensor **gin)
{
	struct scope s = {0};
	SET(IN0, bin(&s, BINOP_mul, g, output(&s, n, 0)));
	return done(&s, n, gin);
}

static int bw_log(struct ag_node *n, const tensor *g, tensor **gin)
{
	struct scope s = {0};
	SET(IN0, bin(&s, BINOP_div, g, arg(&s, n, 0)));
	return done(&s, n, gin);
}

static int bw_sqrt(struct ag_node *n, const tensor *g, tensor **gin)
{
	struct scope s = {0};
	/* g / (2 sqrt(x)) */
	SET(IN0, bin(&s, BINOP_div, g, bin(&s, BINOP_mul, output(&s, n, 0), num(&s, 2))));
	return done(&s, n, gin);
}

static int bw_rsqrt(struct ag_node *n, const tensor *g, tensor **gin)
{
	struct scope s = {0};
	/* d x^-1/2 = -1/2 x^-3/2 = -1/2 out^3 */
	tensor *o = output(&s, n, 0);
	tensor *o3 = bin(&s, BINOP_mul, bin(&s, BINOP_mul, o, o), o);
	SET(IN0, bin(&s, BINOP_mul, g, bin(&s, BINOP_mul, o3, num(&s, -0.5))));
	return done(&s, n, gin);
}

static int bw_sin(struct ag_node *n, const tensor *g, tensor **gin)
{
	struct scope s = {0};
	SET(IN0, bin(&s, BINOP_mul, g, un(&s, UNOP_cos, arg(&s, n, 0))));
	return done(&s, n, gin);
}

static int bw_cos(struct ag_node *n, const tensor *g, tensor **gin)
{
	struct scope s = {0};
	SET(IN0, un(&s, UNOP_neg, bin(&s, BINOP_mul, g, un(&s, UNOP_sin, arg(&s, n, 0)))));
	return done(&s, n, gin);
}

static int bw_tanh(struct ag_node *n, const tensor *g, tensor **gin)
{
	struct scope s = {0};
	tensor *o = output(&s, n, 0);
	SET(IN0, bin(&s, BINOP_mul, g, bin(&s, BINOP_sub, num(&s, 1), bin(&s, BINOP_mul, o, o))));
	return done(&s, n, gin);
}

static int bw_sigmoid(struct ag_node *n, const tensor *g, tensor **gin)
{
	struct scope s = {0};
	tensor *o = output(&s, n, 0);
	SET(IN0, bin(&s, BINOP_mul, g, bin(&s, BINOP_mul, o, bin(&s, BINOP_sub, num(&s, 1), o))));
	return done(&s, n, gin);
}

/* PyTorch's threshold_backward: 0 where out <= 0, g elsewhere (a NaN's
 * too); a select, not a product, so that an infinite g where out is 0
 * (sqrt(relu(x))) gives 0, not 0 * inf = NaN */
static int bw_relu(struct ag_node *n, const tensor *g, tensor **gin)
{
	struct scope s = {0};
	tensor *zero = num(&s, 0);
	SET(IN0, where(&s, bin(&s, BINOP_le, output(&s, n, 0), zero), zero, g));
	return done(&s, n, gin);
}

/* gelu(x) = x Phi(x): d/dx = Phi(x) + x phi(x) */
static double gelu_grad(double x)
{
	double cdf = 0.5 * (1 + erf(x * M_SQRT1_2));
	double pdf = exp(-0.5 * x * x) * (M_2_SQRTPI * M_SQRT1_2 * 0.5);
	return cdf + x * pdf;
}

static int bw_gelu(struct ag_node *n, const tensor *g, tensor **gin)
{
	struct scope s = {0};
	SET(IN0, bin(&s, BINOP_mul, g, map_double(&s, arg(&s, n, 0), gelu_grad)));
	return done(&s, n, gin);
}

/* silu(x) = x sigmoid(x): d/dx = s (1 + x (1 - s)) */
static double silu_grad(double x)
{
	double sg = 1 / (1 + exp(-x));
	return sg * (1 + x * (1 - sg));
}

static int bw_silu(struct ag_node *n, const tensor *g, tensor **gin)
{
	struct scope s = {0};
	SET(IN0, bin(&s, BINOP_mul, g, map_double(&s, arg(&s, n, 0), silu_grad)));
	return done(&s, n, gin);
}

static int bw_reciprocal(struct ag_node *n, const tensor *g, tensor **gin)
{
	struct scope s = {0};
	tensor *o = output(&s, n, 0);
	SET(IN0, un(&s, UNOP_neg, bin(&s, BINOP_mul, g, bin(&s, BINOP_mul, o, o))));
	return done(&s, n, gin);
}

/* floor ceil round sign floordiv: zero almost everywhere, as PyTorch */
static int bw_zero(struct ag_node *n, const tensor *g, tensor **gin)
{
	(void)g;
	struct scope s = {0};
	for (int i = 0; i < n->ninputs; i++)
		SET(i, own(&s, tensor_zeros(n->inputs[i].dt, n->inputs[i].ndim, n->inputs[i].shape)));
	return done(&s, n, gin);
}

/* ---- rules: pointwise binary (either side may be a number: no slot) ---- */

#define IA (n->arg_input[0])
#define IB (n->arg_input[1])

static int bw_add(struct ag_node *n, const tensor *g, tensor **gin)
{
	struct scope s = {0};
	SET(IA, (tensor *)g);
	SET(IB, (tensor *)g);
	return done(&s, n, gin);
}

static int bw_sub(struct ag_node *n, const tensor *g, tensor **gin)
{
	struct scope s = {0};
	SET(IA, (tensor *)g);
	SET(IB, un(&s, UNOP_neg, g));
	return done(&s, n, gin);
}

static int bw_mul(struct ag_node *n, const tensor *g, tensor **gin)
{
	struct scope s = {0};
	tensor *a = arg(&s, n, 0), *b = arg(&s, n, 1);
	SET(IA, bin(&s, BINOP_mul, g, b));
	SET(IB, bin(&s, BINOP_mul, g, a));
	return done(&s, n, gin);
}

static int bw_div(struct ag_node *n, const tensor *g, tensor **gin)
{
	struct scope s = {0};
	tensor *a = arg(&s, n, 0), *b = arg(&s, n, 1);
	SET(IA, bin(&s, BINOP_div, g, b));
	/* -g a / b^2 */
	SET(IB, un(&s, UNOP_neg, bin(&s, BINOP_div, bin(&s, BINOP_mul, g, a), bin(&s, BINOP_mul, b, b))));
	return done(&s, n, gin);
}

static int bw_pow(struct ag_node *n, const tensor *g, tensor **gin)
{
	struct scope s = {0};
	tensor *a = arg(&s, n, 0), *b = arg(&s, n, 1), *zero = num(&s, 0);
	if (ag_needs_grad(n, IA)) {
		/* g b a^(b-1), 0 where b == 0 */
		tensor *d = bin(&s, BINOP_mul, b, bin(&s, BINOP_pow, a, bin(&s, BINOP_sub, b, num(&s, 1))));
		SET(IA, bin(&s, BINOP_mul, g, where(&s, bin(&s, BINOP_eq, b, zero), zero, d)));
	}
	if (ag_needs_grad(n, IB)) {
		/* g a^b log(a), 0 where a == 0 and b >= 0 */
		tensor *d = bin(&s, BINOP_mul, output(&s, n, 0), un(&s, UNOP_log, a));
		tensor *mask = bin(&s, BINOP_logical_and, bin(&s, BINOP_eq, a, zero), bin(&s, BINOP_ge, b, zero));
		SET(IB, bin(&s, BINOP_mul, g, where(&s, mask, zero, d)));
	}
	return done(&s, n, gin);
}

static int bw_mod(struct ag_node *n, const tensor *g, tensor **gin)
{
	struct scope s = {0};
	/* a - floor(a / b) b */
	SET(IA, (tensor *)g);
	if (ag_needs_grad(n, IB)) {
		tensor *q = un(&s, UNOP_floor, bin(&s, BINOP_div, arg(&s, n, 0), arg(&s, n, 1)));
		SET(IB, un(&s, UNOP_neg, bin(&s, BINOP_mul, g, q)));
	}
	return done(&s, n, gin);
}

/* maximum/minimum, PyTorch's rule: each side gets g where it is not the
 * loser, half of it at a tie (where(a == b, g / 2, g), 0 where a < b for
 * maximum's a): selects, so that an infinite g meets no 0 * inf, and a
 * NaN on either side gives g to both, as PyTorch does */
static int maximum_grads(struct ag_node *n, const tensor *g, tensor **gin, bool is_max)
{
	struct scope s = {0};
	tensor *a = arg(&s, n, 0), *b = arg(&s, n, 1), *zero = num(&s, 0);
	binop lose = is_max ? BINOP_lt : BINOP_gt;
	tensor *split = where(&s, bin(&s, BINOP_eq, a, b), bin(&s, BINOP_mul, g, num(&s, 0.5)), g);
	SET(IA, where(&s, bin(&s, lose, a, b), zero, split));
	SET(IB, where(&s, bin(&s, lose, b, a), zero, split));
	return done(&s, n, gin);
}

static int bw_maximum(struct ag_node *n, const tensor *g, tensor **gin) { return maximum_grads(n, g, gin, true); }
static int bw_minimum(struct ag_node *n, const tensor *g, tensor **gin) { return maximum_grads(n, g, gin, false); }

static int bw_where(struct ag_node *n, const tensor *g, tensor **gin)
{
	struct scope s = {0};
	tensor *c = arg(&s, n, 0), *zero = num(&s, 0);
	SET(n->arg_input[1], where(&s, c, g, zero));
	SET(n->arg_input[2], where(&s, c, zero, g));
	return done(&s, n, gin);
}

/* clamp(x, lo, hi) = min(max(x, lo), hi) */
static int bw_clamp(struct ag_node *n, const tensor *g, tensor **gin)
{
	struct scope s = {0};
	tensor *x = arg(&s, n, 0), *zero = num(&s, 0);
	tensor *lo = n->args[1].tag == VAL_NONE && n->arg_input[1] < 0 ? NULL : arg(&s, n, 1);
	tensor *hi = n->args[2].tag == VAL_NONE && n->arg_input[2] < 0 ? NULL : arg(&s, n, 2);
	tensor *in_lo = lo ? bin(&s, BINOP_ge, x, lo) : NULL;
	tensor *in_hi = hi ? bin(&s, BINOP_le, x, hi) : NULL;
	tensor *mx = in_lo && in_hi ? bin(&s, BINOP_logical_and, in_lo, in_hi) : in_lo ? in_lo : in_hi;
	SET(IN0, where(&s, mx, g, zero));
	if (lo && ag_needs_grad(n, n->arg_input[1])) {
		tensor *m = bin(&s, BINOP_gt, lo, x);
		if (hi)
			m = bin(&s, BINOP_logical_and, m, bin(&s, BINOP_le, lo, hi));
		SET(n->arg_input[1], where(&s, m, g, zero));
	}
	if (hi && ag_needs_grad(n, n->arg_input[2])) {
		tensor *m = bin(&s, BINOP_lt, hi, x);
		if (lo)
			m = bin(&s, BINOP_logical_or, m, bin(&s, BINOP_lt, hi, lo));
		SET(n->arg_input[2], where(&s, m, g, zero));
	}
	return done(&s, n, gin);
}

/* ---- rules: reductions ---- */

/* g of a reduction over dims, broadcast back to input 0's shape */
static tensor *unreduce(struct scope *s, struct ag_node *n, const tensor *g, const int *dims, int nd)
{
	const struct ag_input *in = &n->inputs[0];
	int64_t kshape[TENSOR_MAX_DIMS];
	keepdim_shape(in, dims, nd, kshape);
	return expand(s, reshape(s, g, in->ndim, kshape), in->ndim, in->shape);
}

static int reduced_dims(struct ag_node *n, int *dims, int *nd)
{
	return ops_dims(ops_table[n->op].name, n->args[1], n->inputs[0].ndim, dims, nd);
}

static int64_t reduced_count(const struct ag_input *in, const int *dims, int nd)
{
	int64_t c = 1;
	if (nd == 0)
		for (int d = 0; d < in->ndim; d++)
			c *= in->shape[d];
	for (int k = 0; k < nd; k++)
		c *= in->shape[dims[k]];
	return c;
}

static int bw_sum(struct ag_node *n, const tensor *g, tensor **gin)
{
	struct scope s = {0};
	int dims[TENSOR_MAX_DIMS], nd;
	if (reduced_dims(n, dims, &nd) < 0)
		return -1;
	SET(IN0, unreduce(&s, n, g, dims, nd));
	return done(&s, n, gin);
}

static int bw_mean(struct ag_node *n, const tensor *g, tensor **gin)
{
	struct scope s = {0};
	int dims[TENSOR_MAX_DIMS], nd;
	if (reduced_dims(n, dims, &nd) < 0)
		return -1;
	double count = (double)reduced_count(&n->inputs[0], dims, nd);
	SET(IN0, bin(&s, BINOP_div, unreduce(&s, n, g, dims, nd), num(&s, count)));
	return done(&s, n, gin);
}

/* prod: the product of the other elements of each reduced group, exact
 * with zeros: the reduced dims are permuted last, each group gets prefix
 * and suffix products */
static int bw_prod(struct ag_node *n, const tensor *g, tensor **gin)
{
	struct scope s = {0};
	const struct ag_input *in = &n->inputs[0];
	int dims[TENSOR_MAX_DIMS], nd, perm[TENSOR_MAX_DIMS], inv[TENSOR_MAX_DIMS], np = 0;
	bool red[TENSOR_MAX_DIMS] = {false};
	if (!ag_needs_grad(n, IN0))
		return 0;
	if (reduced_dims(n, dims, &nd) < 0)
		return -1;
	for (int d = 0; d < in->ndim; d++)
		red[d] = nd == 0;
	for (int k = 0; k < nd; k++)
		red[dims[k]] = true;
	for (int d = 0; d < in->ndim; d++)
		if (!red[d])
			perm[np++] = d;
	int64_t group = 1;
	for (int d = 0; d < in->ndim; d++)
		if (red[d]) {
			perm[np++] = d;
			group *= in->shape[d];
		}
	for (int d = 0; d < in->ndim; d++)
		inv[perm[d]] = d;

	tensor *x = arg(&s, n, 0);
	tensor *xp = in->ndim > 0 && x ? own(&s, tensor_permute(x, perm, in->ndim)) : x;
	tensor *others = xp ? own(&s, tensor_empty(DT_FLOAT64, xp->ndim, xp->shape)) : NULL;
	if (others && group > 0) {
		double *o = others->data;
		for (int64_t base = 0; base < others->numel; base += group) {
			double acc = 1;
			for (int64_t k = 0; k < group; k++) {
				o[base + k] = acc;
				acc *= tensor_get_double(xp, base + k);
			}
			acc = 1;
			for (int64_t k = group - 1; k >= 0; k--) {
				o[base + k] *= acc;
				acc *= tensor_get_double(xp, base + k);
			}
		}
	}
	tensor *back = in->ndim > 0 && others ? own(&s, tensor_permute(others, inv, in->ndim)) : others;
	int64_t kshape[TENSOR_MAX_DIMS];
	keepdim_shape(in, dims, nd, kshape);
	SET(IN0, bin(&s, BINOP_mul, back, reshape(&s, g, in->ndim, kshape)));
	return done(&s, n, gin);
}

static int bw_maxmin(struct ag_node *n, const tensor *g, tensor **gin)
{
	const struct ag_input *in = &n->inputs[0];
	if (n->arg_input[1] >= 0) /* max(a, b) with a tensor b */
		return maximum_grads(n, g, gin, n->op == OPS_max);
	struct scope s = {0};
	if (in->ndim == 0) {
		SET(IN0, (tensor *)g);
		return done(&s, n, gin);
	}
	if (n->args[1].tag == VAL_NONE) {
		/* the full reduction: g split evenly among the elements equal to
		 * it, or among the NaNs when it is NaN (PyTorch's
		 * evenly_distribute_backward), 0 elsewhere (a select: an
		 * infinite g makes no NaN) */
		tensor *x = arg(&s, n, 0), *o = output(&s, n, 0);
		bool nan = o && isnan(tensor_get_double(o, 0));
		tensor *mask = nan ? bin(&s, BINOP_ne, x, x) : bin(&s, BINOP_eq, x, o);
		tensor *count = mask ? own(&s, tensor_reduce(REDOP_sum, mask, NULL, 0, false, 0)) : NULL;
		SET(IN0, where(&s, mask, bin(&s, BINOP_div, g, count), num(&s, 0)));
		return done(&s, n, gin);
	}
	/* with a dim: g goes where the indices point */
	int dim;
	if (ops_dim(ops_table[n->op].name, n->args[1], in->ndim, &dim) < 0)
		return -1;
	int64_t kshape[TENSOR_MAX_DIMS], ashape[TENSOR_MAX_DIMS];
	memcpy(kshape, in->shape, sizeof kshape);
	kshape[dim] = 1;
	for (int d = 0; d < in->ndim; d++)
		ashape[d] = d == dim ? in->shape[dim] : 1;
	tensor *idx = output(&s, n, 1);
	tensor *ar = own(&s, tensor_arange(0, (double)in->shape[dim], 1, DT_INT64));
	tensor *hit = bin(&s, BINOP_eq, reshape(&s, ar, in->ndim, ashape), reshape(&s, idx, in->ndim, kshape));
	/* 0 elsewhere, as PyTorch's scatter into zeros: not hit * g (0 * inf) */
	SET(IN0, where(&s, hit, reshape(&s, g, in->ndim, kshape), num(&s, 0)));
	return done(&s, n, gin);
}

static int bw_var(struct ag_node *n, const tensor *g, tensor **gin)
{
	struct scope s = {0};
	const struct ag_input *in = &n->inputs[0];
	int dims[TENSOR_MAX_DIMS], nd;
	int64_t correction = 1;
	if (reduced_dims(n, dims, &nd) < 0)
		return -1;
	if (n->args[4].tag == VAL_INT || n->args[4].tag == VAL_BOOL)
		correction = n->args[4].tag == VAL_INT ? n->args[4].i : n->args[4].b;
	else if (n->args[2].tag == VAL_BOOL)
		correction = n->args[2].b ? 1 : 0;
	/* g 2 (x - mean) / (N - correction) */
	tensor *x = arg(&s, n, 0);
	tensor *mean = x ? own(&s, tensor_reduce(REDOP_mean, x, dims, nd, true, 0)) : NULL;
	double scale = 2.0 / (double)(reduced_count(in, dims, nd) - correction);
	tensor *d = bin(&s, BINOP_mul, bin(&s, BINOP_sub, x, mean), num(&s, scale));
	SET(IN0, bin(&s, BINOP_mul, d, unreduce(&s, n, g, dims, nd)));
	return done(&s, n, gin);
}

static int bw_softmax(struct ag_node *n, const tensor *g, tensor **gin)
{
	struct scope s = {0};
	int dim;
	if (ops_dim("softmax", n->args[1], n->inputs[0].ndim, &dim) < 0)
		return -1;
	/* out (g - sum(g out, dim)) */
	tensor *o = output(&s, n, 0);
	int nd = n->inputs[0].ndim > 0 ? 1 : 0;
	tensor *dot = sum_keepdim(&s, bin(&s, BINOP_mul, g, o), &dim, nd);
	SET(IN0, bin(&s, BINOP_mul, o, bin(&s, BINOP_sub, g, dot)));
	return done(&s, n, gin);
}

static int bw_log_softmax(struct ag_node *n, const tensor *g, tensor **gin)
{
	struct scope s = {0};
	int dim;
	if (ops_dim("log_softmax", n->args[1], n->inputs[0].ndim, &dim) < 0)
		return -1;
	/* g - exp(out) sum(g, dim) */
	int nd = n->inputs[0].ndim > 0 ? 1 : 0;
	tensor *sm = un(&s, UNOP_exp, output(&s, n, 0));
	SET(IN0, bin(&s, BINOP_sub, g, bin(&s, BINOP_mul, sm, sum_keepdim(&s, g, &dim, nd))));
	return done(&s, n, gin);
}

/* ---- rules: linear algebra ---- */

/* the gradients of out = matmul(a, b) for every rank combination: 1-D
 * operands are promoted to matrices as torch.matmul does, the batch dims
 * broadcast, and each gradient is summed back to its operand's shape */
static void matmul_grads(struct scope *s, const tensor *a, const tensor *b, const tensor *g, bool need_a,
			 bool need_b, tensor **ga, tensor **gb)
{
	*ga = *gb = NULL;
	if (!a || !b || !g) {
		s->err = true;
		return;
	}
	int64_t sh[TENSOR_MAX_DIMS];
	const tensor *a2 = a, *b2 = b;
	if (a->ndim == 1) {
		sh[0] = 1;
		sh[1] = a->shape[0];
		a2 = reshape(s, a, 2, sh);
	}
	if (b->ndim == 1) {
		sh[0] = b->shape[0];
		sh[1] = 1;
		b2 = reshape(s, b, 2, sh);
	}
	if (!a2 || !b2)
		return;
	int nb;
	int64_t gshape[TENSOR_MAX_DIMS];
	if (tensor_broadcast_shape(a2->ndim - 2, a2->shape, b2->ndim - 2, b2->shape, &nb, gshape) < 0) {
		s->err = true;
		return;
	}
	gshape[nb] = a2->shape[a2->ndim - 2];
	gshape[nb + 1] = b2->shape[b2->ndim - 1];
	tensor *g2 = reshape(s, g, nb + 2, gshape);
	if (need_a) {
		tensor *t = g2 ? own(s, tensor_matmul(g2, transpose_last(s, b2))) : NULL;
		t = t ? own(s, tensor_sum_to_shape(t, a2->ndim, a2->shape)) : NULL;
		*ga = reshape(s, t, a->ndim, a->shape);
	}
	if (need_b) {
		tensor *at = transpose_last(s, a2);
		tensor *t = g2 && at ? own(s, tensor_matmul(at, g2)) : NULL;
		t = t ? own(s, tensor_sum_to_shape(t, b2->ndim, b2->shape)) : NULL;
		*gb = reshape(s, t, b->ndim, b->shape);
	}
}

static int bw_matmul(struct ag_node *n, const tensor *g, tensor **gin)
{
	struct scope s = {0};
	tensor *ga, *gb;
	matmul_grads(&s, arg(&s, n, 0), arg(&s, n, 1), g, ag_needs_grad(n, IA), ag_needs_grad(n, IB), &ga, &gb);
	SET(IA, ga);
	SET(IB, gb);
	return done(&s, n, gin);
}

/* linear(x, w, b) = matmul(x, w.T) + b */
static int bw_linear(struct ag_node *n, const tensor *g, tensor **gin)
{
	struct scope s = {0};
	tensor *x = arg(&s, n, 0), *w = arg(&s, n, 1), *gx, *gwt;
	tensor *wt = w && w->ndim == 2 ? own(&s, tensor_transpose(w, 0, 1)) : w;
	matmul_grads(&s, x, wt, g, ag_needs_grad(n, IA), ag_needs_grad(n, IB), &gx, &gwt);
	SET(IA, gx);
	if (ag_needs_grad(n, IB))
		SET(IB, w && w->ndim == 2 && gwt ? own(&s, tensor_transpose(gwt, 0, 1)) : gwt);
	SET(n->arg_input[2], (tensor *)g);
	return done(&s, n, gin);
}

/* ---- rules: shape ---- */

/* reshape view unsqueeze squeeze flatten: the same elements in the input's shape */
static int bw_reshape(struct ag_node *n, const tensor *g, tensor **gin)
{
	struct scope s = {0};
	SET(IN0, reshape(&s, g, n->inputs[0].ndim, n->inputs[0].shape));
	return done(&s, n, gin);
}

static int bw_identity(struct ag_node *n, const tensor *g, tensor **gin)
{
	struct scope s = {0};
	SET(IN0, (tensor *)g);
	return done(&s, n, gin);
}

static int bw_transpose(struct ag_node *n, const tensor *g, tensor **gin)
{
	struct scope s = {0};
	int nd = n->inputs[0].ndim, d0, d1;
	if (ops_dim("transpose", n->args[1], nd, &d0) < 0 || ops_dim("transpose", n->args[2], nd, &d1) < 0)
		return -1;
	SET(IN0, nd == 0 ? (tensor *)g : own(&s, tensor_transpose(g, d0, d1)));
	return done(&s, n, gin);
}

static int bw_permute(struct ag_node *n, const tensor *g, tensor **gin)
{
	struct scope s = {0};
	int nd = n->inputs[0].ndim, inv[TENSOR_MAX_DIMS];
	value dims = n->args[1];
	for (int i = 0; i < nd; i++) {
		int d;
		if (ops_dim("permute", seq_items(dims)[i], nd, &d) < 0)
			return -1;
		inv[d] = i;
	}
	SET(IN0, own(&s, tensor_permute(g, inv, nd)));
	return done(&s, n, gin);
}

static int bw_T(struct ag_node *n, const tensor *g, tensor **gin)
{
	struct scope s = {0};
	int nd = n->inputs[0].ndim, perm[TENSOR_MAX_DIMS];
	for (int i = 0; i < nd; i++)
		perm[i] = nd - 1 - i;
	SET(IN0, nd < 2 ? (tensor *)g : own(&s, tensor_permute(g, perm, nd)));
	return done(&s, n, gin);
}

/* expand: the engine sums g back to the input's shape */
static int bw_expand(struct ag_node *n, const tensor *g, tensor **gin)
{
	return bw_identity(n, g, gin);
}

static int bw_cat(struct ag_node *n, const tensor *g, tensor **gin)
{
	struct scope s = {0};
	struct index_spec specs[TENSOR_MAX_DIMS + 1];
	int dim;
	if (ops_dim("cat", n->args[1], n->inputs[0].ndim, &dim) < 0)
		return -1;
	memset(specs, 0, sizeof specs);
	for (int d = 0; d <= dim; d++) {
		specs[d].kind = INDEX_SLICE;
		specs[d].step = 1;
	}
	int64_t off = 0;
	for (int i = 0; i < n->ninputs; i++) {
		int64_t len = n->inputs[i].ndim > dim ? n->inputs[i].shape[dim] : 0;
		specs[dim].has_start = specs[dim].has_stop = true;
		specs[dim].start = off;
		specs[dim].stop = off + len;
		off += len;
		SET(i, own(&s, tensor_index(g, specs, dim + 1)));
	}
	return done(&s, n, gin);
}

static int bw_stack(struct ag_node *n, const tensor *g, tensor **gin)
{
	struct scope s = {0};
	struct index_spec specs[TENSOR_MAX_DIMS + 1];
	int dim;
	if (ops_dim("stack", n->args[1], n->inputs[0].ndim + 1, &dim) < 0)
		return -1;
	memset(specs, 0, sizeof specs);
	for (int d = 0; d < dim; d++) {
		specs[d].kind = INDEX_SLICE;
		specs[d].step = 1;
	}
	specs[dim].kind = INDEX_INT;
	for (int i = 0; i < n->ninputs; i++) {
		specs[dim].i = i;
		SET(i, own(&s, tensor_index(g, specs, dim + 1)));
	}
	return done(&s, n, gin);
}

static int bw_getitem(struct ag_node *n, const tensor *g, tensor **gin)
{
	struct scope s = {0};
	struct index_spec specs[16];
	int ns;
	if (ops_index_specs(n->args[1], specs, &ns, 16) < 0)
		return -1;
	const struct ag_input *in = &n->inputs[0];
	SET(IN0, own(&s, tensor_index_backward(g, in->ndim, in->shape, specs, ns)));
	return done(&s, n, gin);
}

/* ---- the rule table, from ops.def ---- */

#define bw_none NULL
static const struct rule rules[OPS_COUNT] = {
#define OPDEF(name, kind, flags, params, impl, aux, save, backward, stage, meta) {bw_##backward, SV_##save},
#include "ops.def"
#undef OPDEF
};
