/* bench_compile.c - the frame evaluator's overheads (issue 3).
 *
 *   1. hit path: `def f(x): return x + 1` on a 1-element tensor, called
 *      through vm_call eagerly and as compile(f); each the median over
 *      runs of the time per call; the ratio compiled / eager must be
 *      <= 1.30 (guard check + graph dispatch + frame rebuild).
 *   2. trace + compile: a straight-line function of 200 ops, called once
 *      after reset() (trace, guards, the eager backend, and the one run);
 *      the median must be under 2 ms.
 *   3. dynamic shapes (issue 4): a function compiled with dynamic=None,
 *      called with 50 different sizes, compiles at most twice (automatic
 *      dynamic: the second compile makes the changed size symbolic).
 *
 * Usage: bench_compile [runs]   (default 15). Exits 1 when a target is
 * missed, so that it can run as a check.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BENCH_VM "bench_compile"
#include "bench_util.h"
#include "compile_log.h"
#include "compiler.h"
#include "frame_eval.h"
#include "prelude.h"
#include "runtime.h"
#include "vm.h"

static double per_call(struct vm *vm, value fn, value x, long n)
{
	double t0 = now();
	for (long i = 0; i < n; i++) {
		value r = vm_call(vm, fn, &x, 1, val_none());
		if (val_is_err(r))
			die(vm, "call");
		val_decref(r);
	}
	return (now() - t0) / (double)n;
}

static int ncompiles;

static void count_compile(struct compile_listener *l, const struct compile_record *r)
{
	(void)l;
	if (r->reason && (strcmp(r->reason, "first") == 0 || strcmp(r->reason, "recompile") == 0))
		ncompiles++;
}

int main(int argc, char **argv)
{
	int runs = argc > 1 ? atoi(argv[1]) : 15;
	if (runs < 1)
		runs = 1;

	struct strbuf prog = STRBUF_INIT;
	sb_puts(&prog, "def f(x):\n    return x + 1\ncf = compile(f, backend=\"eager\")\nx = ones(1)\n");
	sb_puts(&prog, "def long(x):\n");
	for (int i = 0; i < 200; i++)
		sb_printf(&prog, "    x = x %s %d\n", i % 2 ? "*" : "+", i % 7 + 1);
	sb_puts(&prog, "    return x\nclong = compile(long, backend=\"eager\")\n");
	sb_puts(&prog, "def dyn(x, v):\n    return (x.relu() * 2 + v).sum(1).softmax(0)\ncdyn = compile(dyn, backend=\"eager\")\n"
		       "def mk(n):\n    return ones(n, 4)\nv4 = ones(4)\n");
	struct bench_prog bp = bench_load(prog.buf);
	struct vm *vm = bp.vm;
	struct runtime *rt = bp.rt;
	value f = global(vm, "f"), cf = global(vm, "cf"), x = global(vm, "x"), clong = global(vm, "clong");

	/* 1. the hit path */
	long n = 200000;
	per_call(vm, f, x, n / 10);
	per_call(vm, cf, x, n / 10);
	double *te = calloc((size_t)runs, sizeof(double)), *tc = calloc((size_t)runs, sizeof(double));
	for (int r = 0; r < runs; r++) {
		te[r] = per_call(vm, f, x, n);
		tc[r] = per_call(vm, cf, x, n);
	}
	double me = median(te, runs), mc = median(tc, runs);
	double ratio = mc / me;
	printf("compiled one-op call: eager %.1f ns, compiled %.1f ns, ratio %.2f (target <= 1.30)\n", me * 1e9,
	       mc * 1e9, ratio);

	/* 2. trace + compile of 200 ops */
	double *tt = calloc((size_t)runs * 4, sizeof(double));
	for (int r = 0; r < runs * 4; r++) {
		frame_eval_reset(rt);
		double t0 = now();
		value res = vm_call(vm, clong, &x, 1, val_none());
		tt[r] = now() - t0;
		if (val_is_err(res))
			die(vm, "long");
		val_decref(res);
	}
	double mt = median(tt, runs * 4);
	printf("trace + compile of 200 ops: median %.3f ms (target < 2 ms)\n", mt * 1e3);

	/* 3. 50 sizes, dynamic=None */
	frame_eval_reset(rt);
	struct compile_listener cl = {count_compile, NULL};
	compile_log_listen(rt->log, &cl);
	value cdyn = global(vm, "cdyn"), mk = global(vm, "mk"), v4 = global(vm, "v4");
	for (int sz = 2; sz < 52; sz++) {
		value nv = val_int(sz);
		value t = vm_call(vm, mk, &nv, 1, val_none());
		if (val_is_err(t))
			die(vm, "mk");
		value args[2] = {t, v4};
		value res = vm_call(vm, cdyn, args, 2, val_none());
		val_decref(t);
		if (val_is_err(res))
			die(vm, "dyn");
		val_decref(res);
	}
	compile_log_unlisten(rt->log, &cl);
	printf("dynamic shapes: 50 sizes, dynamic=None: %d compiles (target <= 2)\n", ncompiles);

	int status = ratio <= 1.30 && mt < 2e-3 && ncompiles <= 2 ? 0 : 1;
	free(te);
	free(tc);
	free(tt);
	bench_unload(&bp);
	sb_release(&prog);
	return status;
}
