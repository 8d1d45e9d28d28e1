/* inductor_run.c - runs a lowered graph (inductor_run.h).
 *
 * Every stored node's value is a contiguous tensor made for this run
 * (tensor_empty: a kernel writes all of it); the inputs are the caller's.
 * A kernel step gets its buffers' data pointers and the symbols' values;
 * an extern step runs its node through graph_run_node on the tensors it
 * reads, exactly as the eager backend would.
 */
#include "inductor_run.h"

#include <stdint.h>
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
	int64_t offset;
};

static void launch_range(void *ctx, int64_t begin, int64_t end)
{
	const struct launch *l = ctx;
	l->fn(l->bufs, l->syms, l->offset + begin, l->offset + end);
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

/* var 0's trip count; 1 for a kernel without outer vars (it runs once) */
static int64_t outer_trips(const struct lkernel *k, const int64_t *syms)
{
	return k->nouter > 0 ? loop_eval_size(k, k->vars[0].size, syms) : 1;
}

/* the elements a step of var 0 computes (at least 1), from the largest
 * buffer: how finely a launch may be split */
static int64_t work_per_step(const struct lkernel *k, const int64_t *syms, int64_t n0)
{
	int64_t work = kernel_work(k, syms);
	return n0 > 0 && work / n0 > 0 ? work / n0 : 1;
}

/* the kernel over [begin, end) of var 0, split across the cores in
 * shares of at least PARALLEL_GRAIN_ELEMS elements (per: work_per_step) */
static void launch_kernel(loop_kernel_fn fn, void *const *bufs, const int64_t *syms, int64_t begin, int64_t end,
			  int64_t per)
{
	if (end - begin > 1) {
		struct launch l = {fn, bufs, syms, begin};
		parallel_for(end - begin, launch_range, &l, (PARALLEL_GRAIN_ELEMS + per - 1) / per);
	} else if (end - begin == 1) {
		fn(bufs, syms, begin, end);
	}
}

/* the kernel's buffers' data pointers, then the int32 where it reports a
 * failed check of its data (loopir.h): into small, or malloc'd */
static void **kernel_bufs(const struct ind_program *p, const struct ind_step *st, const value *vals, void **small,
			  int32_t *check_failed)
{
	const struct lkernel *k = st->k;
	void **bufs = k->nbufs < RUN_SMALL ? small : malloc((k->nbufs + 1) * sizeof *bufs);
	if (!bufs) {
		tj_error_set("out of memory");
		return NULL;
	}
	for (int b = 0; b < k->nbufs; b++) {
		value v = vals[p->bufs[st->kbufs[b]].node];
		bufs[b] = v.tag == VAL_NONE ? NULL : val_as_tensor(v)->data;
	}
	bufs[k->nbufs] = check_failed;
	return bufs;
}

/* after the launches: a kernel's check of the data failed (the frame then
 * reruns eagerly, which raises the error: backend.h) */
static int checked(const int32_t *check_failed)
{
	if (!*check_failed)
		return 0;
	tj_error_set("a kernel's check of its data failed (an integer division by zero or a negative power)");
	return -1;
}

static int run_kernel(const struct ind_program *p, const struct ind_step *st, loop_kernel_fn fn, const value *vals,
		      const int64_t *syms)
{
	void *small[RUN_SMALL];
	int32_t check_failed = 0;
	void **bufs = kernel_bufs(p, st, vals, small, &check_failed);
	if (!bufs)
		return -1;
	int64_t n0 = outer_trips(st->k, syms);
	launch_kernel(fn, bufs, syms, 0, n0, work_per_step(st->k, syms, n0));
	if (bufs != small)
		free(bufs);
	return checked(&check_failed);
}

/* a block of a matmul's rows, made by BLAS and then read by its epilogue:
 * about this many bytes, so that both threads' shares stay in L2 */
#define EPILOGUE_BLOCK_BYTES (1 << 20)

/* matmul step s and its epilogue, the kernel of step s + 1, a block of
 * rows at a time (inductor_lower.h): the product whole in vals, or, when
 * nothing else reads it, one block's buffer that the kernel sees at the
 * rows it is on */
static int run_mm_epilogue(const struct ind_compiled *c, int s, value *vals, const int64_t *syms)
{
	const struct ind_program *p = &c->prog;
	const struct ind_step *st = &p->steps[s], *ks = &p->steps[s + 1];
	const struct ind_mm *mm = &st->mm_plan;
	const tensor *a = val_as_tensor(vals[mm->arg[0]]), *b = val_as_tensor(vals[mm->arg[1]]);
	int64_t n, m;
	if (tensor_mm_trans_shape(a, mm->t[0], b, mm->t[1], &n, &m) < 0)
		return -1;
	size_t es = dtype_size(a->dt);
	int64_t rows = (int64_t)(EPILOGUE_BLOCK_BYTES / ((size_t)m * es + 1));
	rows = rows < 1 ? 1 : rows > n ? n : rows;
	tensor *prod = tensor_empty(a->dt, 2, (int64_t[]){st->scratch ? rows : n, m});
	if (!prod)
		return -1;
	if (!st->scratch)
		vals[st->node] = val_tensor(prod);
	void *small[RUN_SMALL];
	int32_t check_failed = 0;
	void **bufs = kernel_bufs(p, ks, vals, small, &check_failed);
	if (!bufs) {
		if (st->scratch)
			tensor_decref(prod);
		return -1;
	}
	int mb = -1; /* the product's buffer in the kernel */
	for (int kb = 0; kb < ks->k->nbufs; kb++)
		if (p->bufs[ks->kbufs[kb]].node == st->node)
			mb = kb;
	int64_t unit = ks->flat ? m : 1; /* var 0's steps in a row */
	int64_t per = work_per_step(ks->k, syms, outer_trips(ks->k, syms));
	for (int64_t r0 = 0; r0 < n; r0 += rows) {
		int64_t r1 = r0 + rows < n ? r0 + rows : n;
		uintptr_t at = (uintptr_t)prod->data + (st->scratch ? 0 : (size_t)(r0 * m) * es);
		tensor_mm_trans_rows(a, mm->t[0], b, mm->t[1], r0, r1, (void *)at);
		/* the kernel indexes the whole product: the block's buffer as if
		 * it began r0 rows earlier (only rows r0..r1 are read) */
		if (st->scratch && mb >= 0)
			bufs[mb] = (void *)((uintptr_t)prod->data - (size_t)(r0 * m) * es);
		launch_kernel(c->fns[s + 1], bufs, syms, r0 * unit, r1 * unit, per);
	}
	if (bufs != small)
		free(bufs);
	if (st->scratch)
		tensor_decref(prod);
	return checked(&check_failed);
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
		if (st->kind == ISTEP_EXTERN && st->epilogue) {
			if (run_mm_epilogue(c, s++, vals, syms) < 0)
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
