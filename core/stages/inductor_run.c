/* inductor_run.c - runs a lowered graph (inductor_run.h).
 *
 * Every stored node's value is a contiguous tensor made for this run
 * (tensor_empty: a kernel writes all of it); the inputs are the caller's.
 * A kernel step gets its buffers' data pointers and the symbols' values;
 * an extern step runs its node through graph_run_node on the tensors it
 * reads, exactly as the eager backend would.
 */
#include "inductor_run.h"

#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "parallel.h"
#include "util.h"

#define RUN_SMALL 64
/* a thread's share of a kernel is at least this many elements: below it,
 * waking a thread costs more than the loop (about 10 us against a few
 * ns an element) */
#define PARALLEL_GRAIN_ELEMS (1 << 16)

struct launch {
	loop_kernel_fn fn;
	void *const *bufs;
	const int64_t *syms;
};

static void launch_range(void *ctx, int64_t begin, int64_t end)
{
	const struct launch *l = ctx;
	l->fn(l->bufs, l->syms, begin, end);
}

/* the elements the kernel touches: its largest buffer */
static int64_t kernel_work(const struct lkernel *k, const int64_t *syms)
{
	int64_t most = 1;
	for (int b = 0; b < k->nbufs; b++) {
		int64_t n = k->bufs[b].numel >= 0 ? loop_eval_size(k, k->bufs[b].numel, syms) : 0;
		if (n > most)
			most = n;
	}
	return most;
}

static int run_kernel(const struct ind_program *p, const struct ind_step *st, loop_kernel_fn fn, const value *vals,
		      const int64_t *syms)
{
	const struct lkernel *k = st->k;
	void *small[RUN_SMALL];
	void **bufs = k->nbufs <= RUN_SMALL ? small : malloc(k->nbufs * sizeof *bufs);
	if (!bufs) {
		tj_error_set("out of memory");
		return -1;
	}
	for (int b = 0; b < k->nbufs; b++)
		bufs[b] = val_as_tensor(vals[p->bufs[st->kbufs[b]].node])->data;
	int64_t n0 = k->nouter > 0 ? loop_eval_size(k, k->vars[0].size, syms) : 1;
	if (n0 > 1) {
		/* var 0's range split across the cores, each share of at least
		 * PARALLEL_GRAIN_ELEMS elements */
		int64_t work = kernel_work(k, syms), per = work / n0 > 0 ? work / n0 : 1;
		struct launch l = {fn, bufs, syms};
		parallel_for(n0, launch_range, &l, (PARALLEL_GRAIN_ELEMS + per - 1) / per);
	} else if (n0 == 1) {
		fn(bufs, syms, 0, n0);
	}
	if (bufs != small)
		free(bufs);
	return 0;
}

/* buffer b's sizes, its symbols' values from syms */
static void buf_shape(const struct ind_buf *b, const int64_t *syms, int64_t *shape)
{
	for (int d = 0; d < b->ndim; d++)
		shape[d] = b->shape[d].sym >= 0 ? syms[b->shape[d].sym] : b->shape[d].value;
}

/* a temporary for buffer b */
static value new_buffer(const struct ind_buf *b, const int64_t *syms)
{
	int64_t shape[TENSOR_MAX_DIMS];
	buf_shape(b, syms, shape);
	tensor *t = tensor_empty(b->dt, b->ndim, shape);
	return t ? val_tensor(t) : val_err();
}

static int run_extern(struct vm *vm, const struct ind_program *p, const struct ind_step *st, value *vals,
		      const int64_t *syms)
{
	const struct graph *g = p->g;
	const struct gnode *n = &g->nodes[st->node];
	value r;
	if (st->mm) {
		const struct ind_mm *mm = &st->mm_plan;
		tensor *t = tensor_mm_trans(val_as_tensor(vals[mm->arg[0]]), mm->t[0], val_as_tensor(vals[mm->arg[1]]),
					    mm->t[1]);
		r = t ? val_tensor(t) : val_err();
	} else {
		r = graph_run_node(vm, n, vals, syms);
	}
	if (val_is_err(r))
		return -1;
	vals[st->node] = r;
	if (r.tag != VAL_TUPLE)
		return 0;
	/* a tuple's items are the values of the GN_GETITEM nodes that read it */
	for (int i = st->node + 1; i < g->nnodes; i++) {
		const struct gnode *u = &g->nodes[i];
		if (u->kind != GN_GETITEM || u->args[0].node != st->node)
			continue;
		if (u->index < 0 || (size_t)u->index >= val_tuple(r)->len) {
			tj_error_set("graph node %s: no item %d", u->name, u->index);
			return -1;
		}
		vals[i] = val_tuple(r)->items[u->index];
		val_incref(vals[i]);
	}
	return 0;
}

/* a stored value under another shape: the same storage */
static int run_alias(const struct ind_program *p, const struct ind_step *st, value *vals, const int64_t *syms)
{
	const struct ind_buf *b = &p->bufs[p->node_buf[st->node]];
	int64_t shape[TENSOR_MAX_DIMS];
	buf_shape(b, syms, shape);
	tensor *t = tensor_reshape(val_as_tensor(vals[p->bufs[b->alias_of].node]), b->ndim, shape);
	if (!t)
		return -1;
	vals[st->node] = val_tensor(t);
	return 0;
}

int ind_run(const struct ind_compiled *c, struct vm *vm, tensor *const *inputs, value *outputs)
{
	const struct ind_program *p = &c->prog;
	const struct graph *g = p->g;
	int rc = -1;
	value *vals = calloc((size_t)g->nnodes + 1, sizeof *vals);
	int64_t *syms = malloc(((size_t)g->nsyms + 1) * sizeof *syms);
	if (!vals || !syms) {
		tj_error_set("out of memory");
		goto cleanup;
	}
	for (int i = 0; i < g->nnodes; i++)
		vals[i] = val_none();
	graph_bind_syms(g, inputs, syms);
	int nin = 0;
	for (int i = 0; i < g->nnodes; i++)
		if (g->nodes[i].kind == GN_INPUT) {
			vals[i] = val_tensor(inputs[nin++]);
			val_incref(vals[i]);
		}
	/* the kernels' outputs; an extern call makes its own */
	for (int b = 0; b < p->nbufs; b++) {
		const struct ind_buf *buf = &p->bufs[b];
		if (buf->kind != IBUF_TEMP || !buf->by_kernel)
			continue;
		vals[buf->node] = new_buffer(buf, syms);
		if (val_is_err(vals[buf->node])) {
			vals[buf->node] = val_none();
			goto cleanup;
		}
	}
	for (int s = 0; s < p->nsteps; s++) {
		const struct ind_step *st = &p->steps[s];
		if (st->kind == ISTEP_ALIAS) {
			if (run_alias(p, st, vals, syms) < 0)
				goto cleanup;
			continue;
		}
		if (st->kind == ISTEP_EXTERN ? run_extern(vm, p, st, vals, syms) < 0
					     : run_kernel(p, st, c->fns[s], vals, syms) < 0)
			goto cleanup;
	}
	for (int i = 0; i < g->noutputs; i++) {
		outputs[i] = vals[g->outputs[i]];
		val_incref(outputs[i]);
	}
	rc = 0;
cleanup:
	if (vals)
		for (int i = 0; i < g->nnodes; i++)
			val_decref(vals[i]);
	free(vals);
	free(syms);
	return rc;
}
