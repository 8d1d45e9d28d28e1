/* blas.h - CBLAS, loaded on the first matmul.
 *
 * OpenBLAS starts a worker thread from its library constructor, before
 * main(): linked into tjit it would cost every run a few milliseconds and a
 * thread spinning beside the program even when nothing multiplies a matrix.
 * So tjit links no BLAS and opens the library with dlopen() the first time a
 * float matmul needs it.
 */
#ifndef TJ_BLAS_H
#define TJ_BLAS_H

#include <cblas.h>

struct blas_api {
	__typeof__(cblas_sgemm) *sgemm;
	__typeof__(cblas_dgemm) *dgemm;
	__typeof__(cblas_sgemv) *sgemv;
	__typeof__(cblas_dgemv) *dgemv;
};

/* The loaded library, or NULL after tj_error_set() ("cannot load a CBLAS
 * library (libopenblas.so.0): ..."). Loads once; later calls are a load
 * of one pointer. */
const struct blas_api *blas_get(void);

#endif
