/* tensor_impl.h - internals shared by the tensor_*.c files (not a public
 * interface: ops, autograd and the backends use tensor.h only).
 */
#ifndef TJ_TENSOR_IMPL_H
#define TJ_TENSOR_IMPL_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "error.h"
#include "tensor.h"

/* A refcounted buffer. Small ones hold their bytes inline after the header;
 * big ones (>= TENSOR_CACHE_MIN_BYTES) come from the reuse cache and go back
 * to it when the last tensor that shares them dies. */
struct tensor_storage {
	uint32_t rc;
	bool cached;   /* ptr belongs to the reuse cache */
	size_t nbytes; /* capacity of ptr */
	void *ptr;
};

#define TENSOR_CACHE_MIN_BYTES ((size_t)64 * 1024)

/* A new tensor with fresh uninitialized storage (tensor_empty without the
 * shape checks when shape comes from another tensor). */
tensor *tensor_new_uninit(dtype dt, int ndim, const int64_t *shape);
/* A new tensor header that shares base's storage: data starts at element
 * elem_offset of base->data. numel(shape) elements from there must lie
 * inside base. */
tensor *tensor_alias(const tensor *base, int ndim, const int64_t *shape, int64_t elem_offset);
/* x itself when it already has dtype dt (a new reference), else tensor_to */
tensor *tensor_as_dtype(const tensor *x, dtype dt);

int64_t shape_numel(int ndim, const int64_t *shape);
void shape_contig_strides(int ndim, const int64_t *shape, int64_t *strides);
/* "[2, 3]" as PyTorch writes sizes in messages */
void shape_format_list(int ndim, const int64_t *shape, struct strbuf *out);
/* Wraps a possibly negative dim into [0, ndim); a 0-d tensor accepts -1 and
 * 0 like PyTorch. Error "dimension out of range (expected to be in range of
 * [-2, 1], but got 3)"; returns -1 then. */
int dim_wrap(int dim, int ndim);
/* Sets tj_error to "cannot broadcast shapes (10,) and (3,)". */
void error_broadcast(int na, const int64_t *a, int nb, const int64_t *b);

/* Strides (in elements) that read t as if it had out_shape: right-aligned,
 * 0 along broadcast dims. t's shape must broadcast to out_shape. */
void broadcast_strides(const tensor *t, int ndim, const int64_t *out_shape, int64_t *strides);

/* ---- a strided iterator over up to ITER_MAX_OPS operands ----
 * Collapses size-1 dims and dims that are contiguous for every operand, so
 * that the loop is "outer rows x one inner run": the caller runs a tight
 * kernel over it.inner elements with the per-operand inner strides, then
 * calls titer_next() to move every operand to the next row. */
#define ITER_MAX_OPS 4
struct titer {
	int ndim;                 /* after collapsing, >= 1 */
	int nops;
	int64_t shape[TENSOR_MAX_DIMS];
	int64_t stride[ITER_MAX_OPS][TENSOR_MAX_DIMS]; /* elements */
	int64_t idx[TENSOR_MAX_DIMS];
	int64_t off[ITER_MAX_OPS];  /* current element offset of each operand */
	int64_t inner;            /* length of the innermost run */
	int64_t istride[ITER_MAX_OPS]; /* innermost stride of each operand */
	int64_t outer;            /* number of runs */
};
void titer_init(struct titer *it, int ndim, const int64_t *shape, int nops,
		int64_t strides[][TENSOR_MAX_DIMS]);
static inline void titer_next(struct titer *it)
{
	for (int d = it->ndim - 2; d >= 0; d--) {
		if (++it->idx[d] < it->shape[d]) {
			for (int k = 0; k < it->nops; k++)
				it->off[k] += it->stride[k][d];
			return;
		}
		it->idx[d] = 0;
		for (int k = 0; k < it->nops; k++)
			it->off[k] -= it->stride[k][d] * (it->shape[d] - 1);
	}
}

/* Copies a strided view of src (element strides, may be 0 or permuted)
 * into contiguous dst of the given shape. */
void strided_copy(void *dst, const void *src, size_t elsize, int ndim, const int64_t *shape,
		  const int64_t *src_strides);
/* The reverse: writes contiguous src into a strided view of dst. */
void strided_scatter(void *dst, const int64_t *dst_strides, const void *src, size_t elsize, int ndim,
		     const int64_t *shape);

/* Loops that GCC vectorizes at -O2: its "very cheap" cost model only
 * vectorizes loops whose trip count is a known multiple of the vector
 * width and that need no runtime alias check, so the body runs in blocks
 * of VBLOCK with a scalar tail, and ivdep promises that the iterations are
 * independent (every VLOOP writes a different array than it reads, or the
 * same element that it reads). */
#define VBLOCK 16
#if defined(__GNUC__) && !defined(__clang__)
#define VLOOP_IVDEP _Pragma("GCC ivdep")
#else
#define VLOOP_IVDEP
#endif
#define VLOOP(n, i, ...)                                                        \
	do {                                                                    \
		int64_t vl_n_ = (n), vl_b_ = 0;                                 \
		for (; vl_b_ + VBLOCK <= vl_n_; vl_b_ += VBLOCK)                \
			VLOOP_IVDEP                                             \
			for (int vl_k_ = 0; vl_k_ < VBLOCK; vl_k_++) {          \
				int64_t i = vl_b_ + vl_k_;                      \
				__VA_ARGS__;                                    \
			}                                                       \
		for (int64_t i = vl_b_; i < vl_n_; i++) {                       \
			__VA_ARGS__;                                            \
		}                                                               \
	} while (0)

/* one Philox4x32-10 block for a full 128-bit counter and 64-bit key
 * (random.c; rng_philox is the case the generator uses) */
void rng_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);

/* double -> int64 without undefined behaviour: NaN and out-of-range values
 * become INT64_MIN, as x86 does */
static inline int64_t f2i(double v)
{
	return (v >= -9223372036854775808.0 && v < 9223372036854775808.0) ? (int64_t)v : INT64_MIN;
}

#endif
