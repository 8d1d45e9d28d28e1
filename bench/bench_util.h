/* bench_util.h - what the C benchmarks share: a monotonic clock, medians,
 * and (with BENCH_VM defined before including, for the benchmarks that
 * run programs) reading globals of a VM or stopping with its error. */
#ifndef TJ_BENCH_UTIL_H
#define TJ_BENCH_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static inline double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* sorts v */
static inline double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#ifdef BENCH_VM
#include <string.h>

#include "compiler.h"
#include "frame_eval.h"
#include "prelude.h"
#include "runtime.h"
#include "vm.h"

/* "NAME: what: the VM's error", exit 2 */
static inline void die(struct vm *vm, const char *what)
{
	fprintf(stderr, "%s: %s: %s\n", BENCH_VM, what,
		vm && vm_error_message(vm) ? vm_error_message(vm) : "error");
	exit(2);
}

static inline value global(struct vm *vm, const char *name)
{
	value v = vm_get_global(vm, name);
	if (val_is_err(v))
		die(vm, name);
	return v;
}

/* a program loaded for a benchmark: its VM under a quiet runtime */
struct bench_prog {
	struct vm *vm;
	struct runtime *rt;
	struct code *code;
	struct source *src;
};

/* text as the program NAME.tj run in a new VM; exits 2 on a syntax error
 * or an error of the module */
static inline struct bench_prog bench_load(const char *text)
{
	struct source *src = source_from_string(BENCH_VM ".tj", text, strlen(text));
	struct src_loc loc;
	char *msg = NULL;
	struct code *code = compile_source(src, &loc, &msg);
	if (!code) {
		fprintf(stderr, "%s: %s\n", BENCH_VM, msg ? msg : "syntax error");
		exit(2);
	}
	struct runtime_config rc = {COMPILE_SWITCHES_INIT, {0, stderr, NULL}, {INJECT_NONE, INJECT_COMPILE_ERROR}};
	struct runtime *rt = runtime_new(&rc);
	if (!rt)
		die(NULL, "out of memory");
	struct vm *vm = prelude_vm_new();
	vm_set_runtime(vm, rt);
	if (val_is_err(vm_run_module(vm, code)))
		die(vm, "module");
	return (struct bench_prog){vm, rt, code, src};
}

static inline void bench_unload(struct bench_prog *p)
{
	frame_eval_free(p->rt);
	vm_free(p->vm);
	runtime_free(p->rt);
	val_decref(val_obj(VAL_CODE, p->code));
	source_free(p->src);
}
#endif

#endif
