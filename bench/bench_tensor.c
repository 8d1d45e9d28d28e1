/* bench_tensor.c - the eager kernels against their hardware limits.
 *
 *   1. bandwidth: a plain C copy loop over 16M floats (8 bytes moved per
 *      element: one read, one write; GCC makes the loop a memcpy call)
 *      against tensor_binary(BINOP_add) on
 *      two different 16M float32 tensors (12 bytes: two reads, one
 *      write); each as bytes moved per second, best of the runs; the
 *      ratio add / copy must be >= 0.60.
 *   2. matmul: tensor_matmul on 1024x1024 float32 against cblas_sgemm
 *      called directly on the same buffers, best of the runs; the ratio
 *      tensor / direct must be <= 1.20.
 *
 * Usage: bench_tensor [runs]   (default 10). Exits 1 when a target is
 * missed, so that it can run as a check.
 */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "error.h"
#include "tensor.h"

#define N (16 * 1024 * 1024)
#define MM 1024

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* kept out of line so that the loop is what it looks like */
__attribute__((noinline)) static void copy_loop(float *restrict dst, const float *restrict src, long n)
{
	for (long i = 0; i < n; i++)
		dst[i] = src[i];
}

static tensor *must(tensor *t)
{
	if (!t) {
		char *e = tj_error_take();
		fprintf(stderr, "bench_tensor: %s\n", e ? e : "error");
		free(e);
		exit(2);
	}
	return t;
}

int main(int argc, char **argv)
{
	int runs = argc > 1 ? atoi(argv[1]) : 10;
	if (runs < 1)
		runs = 1;
	int64_t n = N;

	/* ---- bandwidth ---- */
	float *src = malloc(sizeof(float) * N), *dst = malloc(sizeof(float) * N);
	if (!src || !dst)
		return 2;
	for (long i = 0; i < N; i++)
		src[i] = (float)i, dst[i] = 0;
	tensor *a = must(tensor_randn(DT_FLOAT32, 1, &n)), *b = must(tensor_randn(DT_FLOAT32, 1, &n));
	/* interleaved, so that both see the same machine; run 0 warms up */
	double best_copy = 1e30, best_add = 1e30;
	for (int r = 0; r < runs + 1; r++) {
		double t0 = now();
		copy_loop(dst, src, N);
		double t = now() - t0;
		if (r > 0 && t < best_copy)
			best_copy = t;
		t0 = now();
		tensor *y = must(tensor_binary(BINOP_add, a, b));
		t = now() - t0;
		tensor_decref(y);
		if (r > 0 && t < best_add)
			best_add = t;
	}
	double copy_bw = 8.0 * N / best_copy / 1e9, add_bw = 12.0 * N / best_add / 1e9;
	double bw_ratio = add_bw / copy_bw;
	printf("copy loop  16M float32: %7.2f ms  %6.2f GB/s\n", best_copy * 1e3, copy_bw);
	printf("tensor add 16M float32: %7.2f ms  %6.2f GB/s\n", best_add * 1e3, add_bw);
	printf("bandwidth ratio add/copy: %.2f (target >= 0.60)\n", bw_ratio);
	tensor_decref(a);
	tensor_decref(b);
	free(src);
	free(dst);

	/* ---- matmul ---- */
	int64_t shape[2] = {MM, MM};
	tensor *x = must(tensor_randn(DT_FLOAT32, 2, shape)), *w = must(tensor_randn(DT_FLOAT32, 2, shape));
	float *c = malloc(sizeof(float) * MM * MM);
	if (!c)
		return 2;
	double best_blas = 1e30, best_mm = 1e30;
	for (int r = 0; r < runs + 1; r++) {
		double t0 = now();
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, MM, MM, MM, 1.0f, x->data, MM, w->data, MM,
			    0.0f, c, MM);
		double t = now() - t0;
		if (r > 0 && t < best_blas)
			best_blas = t;
		t0 = now();
		tensor *y = must(tensor_matmul(x, w));
		t = now() - t0;
		tensor_decref(y);
		if (r > 0 && t < best_mm)
			best_mm = t;
	}
	double mm_ratio = best_mm / best_blas;
	double gflop = 2.0 * MM * MM * MM / 1e9;
	printf("cblas_sgemm   1024^2: %7.2f ms  %6.1f GFLOP/s\n", best_blas * 1e3, gflop / best_blas);
	printf("tensor_matmul 1024^2: %7.2f ms  %6.1f GFLOP/s\n", best_mm * 1e3, gflop / best_mm);
	printf("matmul ratio tensor/direct: %.2f (target <= 1.20)\n", mm_ratio);
	free(c);
	tensor_decref(x);
	tensor_decref(w);
	tensor_cache_clear();
	return bw_ratio >= 0.60 && mm_ratio <= 1.20 ? 0 : 1;
}
