/* bench_aot.c - what stage 2 (backend="aot_eager") costs against eager
 * (issue 11), measured side by side in one run, medians of repeated runs:
 *
 *   1. compile: a straight-line function of 200 pointwise ops (primitives
 *      such as mul, add, tanh and composites that decompose such as
 *      sigmoid, silu, clamp, mean) with an input that requires grad,
 *      compiled with backend="eager" and with backend="aot_eager"; the time
 *      of trace + compile + the first call after frame_eval_reset, as
 *      bench_compile measures it; target aot_eager / eager <= 3.
 *   2. training step: loss = f(x, w).sum(); loss.backward() with f a
 *      50-op pointwise function of 1M float32 elements, f compiled under
 *      aot_eager against f run eagerly (not compiled); target <= 1.2x. And
 *      the bytes held between forward and backward (the tensors kept for
 *      backward): the heap in use (mallinfo2, less the tensor buffer
 *      cache, which holds freed buffers for reuse) right after the forward
 *      less the same right before it; target: no larger than eager.
 *
 * A compile that does not end "ok" (the frame then runs eagerly) is
 * reported under the figures, since the ratio would then measure eager.
 * Usage: bench_aot [runs]   (default 9). Always exits 0 once it has run:
 * benchmarks report their targets, tests assert.
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BENCH_VM "bench_aot"
#include "bench_util.h"
#include "compile_log.h"
#include "compiler.h"
#include "frame_eval.h"
#include "prelude.h"
#include "runtime.h"
#include "tensor.h"
#include "vm.h"

#define COMPILE_OPS 200
#define STEP_OPS 50
#define STEP_NUMEL 1000000

static value call(struct vm *vm, value fn, value *args, int nargs, const char *what)
{
	value r = vm_call(vm, fn, args, nargs, val_none());
	if (val_is_err(r))
		die(vm, what);
	return r;
}

/* compiles that did not end "ok", and the last one's error */
static int nnot_ok;
static char last_error[256];

static void watch_compile(struct compile_listener *l, const struct compile_record *r)
{
	(void)l;
	if (r->outcome && strcmp(r->outcome, "ok") != 0) {
		nnot_ok++;
		snprintf(last_error, sizeof last_error, "%s: %s", r->outcome, r->error ? r->error : "no message");
	}
}

/* the heap in use, less the buffers the tensor cache holds for reuse */
static double live_bytes(void)
{
	struct mallinfo2 mi = mallinfo2();
	return (double)(mi.uordblks + mi.hblkhd) - (double)tensor_cache_bytes();
}

/* One op a line, cycling through primitives and composites that stay
 * bounded whatever the count: x * w, + 1, sigmoid, * 0.5, tanh, - 0.25,
 * silu, clamp. */
static void emit_body(struct strbuf *sb, int nops)
{
	static const char *const lines[] = {
		"x = x * w", "x = x + 1", "x = sigmoid(x)", "x = x * 0.5",
		"x = tanh(x)", "x = x - 0.25", "x = silu(x)", "x = x.clamp(-2.0, 2.0)",
	};
	for (int i = 0; i < nops; i++)
		sb_printf(sb, "    %s\n", lines[i % (int)(sizeof lines / sizeof *lines)]);
}

static const char *target(int met)
{
	return met ? "" : ", target missed";
}

/* 1. trace + compile + first call of the 200-op function, per backend */
static void bench_compile(struct vm *vm, struct runtime *rt, int runs)
{
	value ce = global(vm, "long_eager"), ca = global(vm, "long_aot");
	value args[2] = {global(vm, "xs"), global(vm, "ws")};
	double *te = calloc((size_t)runs, sizeof(double)), *ta = calloc((size_t)runs, sizeof(double));
	if (!te || !ta)
		die(NULL, "out of memory");
	for (int r = -1; r < runs; r++) { /* r = -1: warm-up, not counted */
		for (int which = 0; which < 2; which++) {
			frame_eval_reset(rt);
			double t0 = now();
			value res = call(vm, which ? ca : ce, args, 2, which ? "long_aot" : "long_eager");
			double dt = now() - t0;
			val_decref(res);
			if (r >= 0)
				(which ? ta : te)[r] = dt;
		}
	}
	double me = median(te, runs), ma = median(ta, runs);
	double ratio = ma / me;
	printf("aot_eager compile of a %d-op graph with grad: eager %.3f ms, aot_eager %.3f ms, ratio %.2f "
	       "(target <= 3.00%s)\n",
	       COMPILE_OPS, me * 1e3, ma * 1e3, ratio, target(ratio <= 3.0));
	free(te);
	free(ta);
}

/* one training step: a fresh leaf, the forward, the backward; the time of
 * the forward + backward, and the bytes the forward left live */
static void step(struct vm *vm, value fn, double *secs, double *held, bool measure_memory)
{
	value fwd = global(vm, "fwd"), bwd = global(vm, "bwd"), base = global(vm, "xbase");
	value x = call(vm, global(vm, "leaf"), &base, 1, "leaf");
	value args[3] = {fn, x, global(vm, "wbig")};
	double before = measure_memory ? live_bytes() : 0;
	double t0 = now();
	value loss = call(vm, fwd, args, 3, "forward");
	double t1 = now();
	if (measure_memory)
		*held = live_bytes() - before;
	double t2 = now();
	value none = call(vm, bwd, &loss, 1, "backward");
	*secs = (t1 - t0) + (now() - t2);
	val_decref(none);
	val_decref(loss);
	val_decref(x);
}

/* 2. forward + backward of the 50-op function, eager against aot_eager */
static void bench_step(struct vm *vm, int runs)
{
	value fe = global(vm, "step_fn"), fa = global(vm, "step_aot");
	double *te = calloc((size_t)runs, sizeof(double)), *ta = calloc((size_t)runs, sizeof(double));
	double *me_b = calloc((size_t)runs, sizeof(double)), *ma_b = calloc((size_t)runs, sizeof(double));
	if (!te || !ta || !me_b || !ma_b)
		die(NULL, "out of memory");
	double unused;
	step(vm, fe, &unused, &unused, false); /* warm-up; compiles step_aot */
	step(vm, fa, &unused, &unused, false);
	for (int r = 0; r < runs; r++) { /* which goes first alternates: the second finds the buffers warm */
		step(vm, r % 2 ? fa : fe, r % 2 ? &ta[r] : &te[r], &unused, false);
		step(vm, r % 2 ? fe : fa, r % 2 ? &te[r] : &ta[r], &unused, false);
	}
	/* memory apart from the timed runs: mallinfo2 walks the heap */
	for (int r = 0; r < runs; r++) {
		step(vm, fe, &unused, &me_b[r], true);
		step(vm, fa, &unused, &ma_b[r], true);
	}
	double me = median(te, runs), ma = median(ta, runs);
	double ratio = ma / me;
	printf("forward+backward of a compiled %d-op pointwise function, %d float32: eager autograd %.2f ms, "
	       "aot_eager %.2f ms, ratio %.2f (target <= 1.20%s)\n",
	       STEP_OPS, STEP_NUMEL, me * 1e3, ma * 1e3, ratio, target(ratio <= 1.2));
	double be = median(me_b, runs), ba = median(ma_b, runs);
	double bratio = be > 0 ? ba / be : 0;
	printf("memory held between forward and backward: eager %.1f MB, aot_eager %.1f MB, ratio %.2f "
	       "(target <= 1.00%s)\n",
	       be / 1e6, ba / 1e6, bratio, target(ba <= be));
	free(te);
	free(ta);
	free(me_b);
	free(ma_b);
}

int main(int argc, char **argv)
{
	int runs = argc > 1 ? atoi(argv[1]) : 9;
	if (runs < 1)
		runs = 1;

	struct strbuf prog = STRBUF_INIT;
	sb_puts(&prog, "def long(x, w):\n");
	emit_body(&prog, COMPILE_OPS - 1);
	sb_puts(&prog, "    return x.mean()\n"
		       "long_eager = compile(long, backend=\"eager\")\n"
		       "long_aot = compile(long, backend=\"aot_eager\")\n"
		       "xs = randn(64, requires_grad=True)\nws = rand(64) + 0.5\n");
	sb_puts(&prog, "def step_fn(x, w):\n");
	emit_body(&prog, STEP_OPS);
	sb_puts(&prog, "    return x\nstep_aot = compile(step_fn, backend=\"aot_eager\")\n");
	sb_printf(&prog, "xbase = randn(%d)\nwbig = rand(%d) + 0.5\n", STEP_NUMEL, STEP_NUMEL);
	sb_puts(&prog, "def leaf(b):\n    return b.requires_grad_()\n"
		       "def fwd(fn, x, w):\n    return fn(x, w).sum()\n"
		       "def bwd(loss):\n    loss.backward()\n");
	struct bench_prog bp = bench_load(prog.buf);
	struct vm *vm = bp.vm;
	struct runtime *rt = bp.rt;
	struct compile_listener cl = {watch_compile, NULL};
	compile_log_listen(rt->log, &cl);

	bench_compile(vm, rt, runs);
	frame_eval_reset(rt);
	bench_step(vm, runs > 5 ? runs / 2 + 1 : runs);
	if (nnot_ok)
		printf("note: %d compile(s) did not end ok, so those frames ran eagerly (last %s)\n", nnot_ok,
		       last_error);

	compile_log_unlisten(rt->log, &cl);
	bench_unload(&bp);
	sb_release(&prog);
	return 0;
}
