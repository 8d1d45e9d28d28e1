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
#endif

#endif
