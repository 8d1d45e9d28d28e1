/* tensor.h - tensors and their eager kernels.
 *
 * Tensors are immutable, contiguous, row-major, rank 0..8. Every function
 * here returns a new reference, or NULL after tj_error_set() with a message
 * in the style "cannot broadcast shapes (10,) and (3,)" (lowercase, no
 * period). Inputs are borrowed. Kernels know nothing about autograd: they
 * never read requires_grad/grad_fn and always return tensors without them;
 * recording the tape is the job of ops.c.
 *
 * A tensor's refcount is its obj header, so a tensor is also a tj value
 * (VAL_TENSOR).
 */
#ifndef TJ_TENSOR_H
#define TJ_TENSOR_H

#include <stdbool.h>
#include <stdint.h>

#include "dtype.h"
#include "value.h"

#define TENSOR_MAX_DIMS 8

struct tensor_storage;  /* refcounted buffer; large ones come from a reuse cache */
struct ag_node;         /* autograd.h */

typedef struct tensor {
	struct obj hdr;
	dtype dt;
	int ndim;
	int64_t shape[TENSOR_MAX_DIMS];
	int64_t numel;
	struct tensor_storage *storage;
	void *data;               /* contiguous elements of dtype dt */
	bool requires_grad;
	bool is_leaf;             /* true unless produced by a recorded op */
	bool wrapped_number;
	uint16_t dyn_mark;        /* mark_dynamic(t, d): bit d */
	uint16_t static_mark;     /* mark_static(t, d): bit d */      /* a Python scalar turned into a 0-d tensor: promotion only */
	struct tensor *grad;      /* accumulated gradient of a leaf, or NULL */
	struct ag_node *grad_fn;  /* the tape node that produced this tensor, or NULL */
	int output_nr;            /* which output of grad_fn it is (a compiled function's node has several) */
} tensor;

static inline void tensor_incref(tensor *t) { t->hdr.rc++; }
void tensor_decref(tensor *t);      /* frees at zero (storage goes back to the cache) */
void tensor_free(tensor *t);        /* what obj_free calls at zero: drops grad, grad_fn, storage */
/* ADDED (tensors): how tensor_free drops t->grad_fn. autograd.c sets this
 * hook (before it records its first node); while it is NULL a grad_fn is
 * not released. */
extern void (*tensor_grad_fn_release)(struct ag_node *node);
static inline value val_tensor(tensor *t) { return val_obj(VAL_TENSOR, t); } /* steals */
static inline tensor *val_as_tensor(value v) { return (tensor *)v.o; }

/* ---- creation ---- */
tensor *tensor_empty(dtype dt, int ndim, const int64_t *shape);   /* uninitialized */
tensor *tensor_zeros(dtype dt, int ndim, const int64_t *shape);
tensor *tensor_full(dtype dt, int ndim, const int64_t *shape, double value);
tensor *tensor_scalar(dtype dt, double value);                    /* 0-d */
tensor *tensor_scalar_int(int64_t value);                         /* 0-d int64, exact */
tensor *tensor_arange(double start, double stop, double step, dtype dt);
tensor *tensor_eye(int64_t n, dtype dt);
tensor *tensor_eye_nm(int64_t n, int64_t m, dtype dt); /* n rows, m columns */
tensor *tensor_randn(dtype dt, int ndim, const int64_t *shape);   /* N(0,1) */
tensor *tensor_rand(dtype dt, int ndim, const int64_t *shape);    /* U[0,1) */
tensor *tensor_copy(const tensor *t);                             /* same dtype, fresh storage */

/* The random generator is counter-based (Philox4x32-10): draw k of a call
 * uses counter (offset + k) under key seed, and each call advances offset by
 * the number of draws, so that any stage that knows (seed, offset) draws the
 * same numbers as eager code. */
/* (tensors) At start-up seed = 0 and offset = 0; manual_seed(s) sets seed s
 * and offset 0. A draw is one Philox block of four 32-bit words: element i
 * of rand/randn uses word i % 4 of draw i / 4 (random.c has the formulas). */
void rng_manual_seed(uint64_t seed);
void rng_get_state(uint64_t *seed, uint64_t *offset);
void rng_set_state(uint64_t seed, uint64_t offset);
/* ADDED (tensors): the Philox4x32-10 block for counter (offset + k) under
 * key seed, the four words that draw k of a call uses; random.c documents
 * how rand and randn turn them into numbers, for backends that must draw
 * the same values. */
void rng_philox(uint64_t seed, uint64_t counter, uint32_t out[4]);

/* ---- element access ---- */
double tensor_get_double(const tensor *t, int64_t flat_index);
int64_t tensor_get_int(const tensor *t, int64_t flat_index);
/* item of a one-element tensor; error "a Tensor with N elements cannot be converted to Scalar" */
int tensor_item(const tensor *t, double *out_double, int64_t *out_int);

/* ---- pointwise ---- */
#define TENSOR_UNARY_OPS(X) \
	X(neg) X(abs) X(exp) X(log) X(sqrt) X(rsqrt) X(sin) X(cos) X(tanh) \
	X(sigmoid) X(relu) X(gelu) X(silu) X(floor) X(ceil) X(round) X(sign) \
	X(reciprocal) X(logical_not)
typedef enum unop {
#define X(n) UNOP_##n,
	TENSOR_UNARY_OPS(X)
#undef X
	UNOP_COUNT
} unop;
extern const char *const unop_names[UNOP_COUNT];
/* Float-only functions (exp, log, sqrt, ...) promote int/bool input to
 * float32, as PyTorch does; neg/abs/sign/floor/ceil/round/relu keep ints
 * (floor/ceil/round of an int are the identity). gelu is the erf form. */
tensor *tensor_unary(unop op, const tensor *x);

#define TENSOR_BINARY_OPS(X) \
	X(add) X(sub) X(mul) X(div) X(pow) X(floordiv) X(mod) X(maximum) X(minimum) \
	X(eq) X(ne) X(lt) X(le) X(gt) X(ge) X(logical_and) X(logical_or)
typedef enum binop {
#define X(n) BINOP_##n,
	TENSOR_BINARY_OPS(X)
#undef X
	BINOP_COUNT
} binop;
extern const char *const binop_names[BINOP_COUNT];
/* Broadcasting as NumPy; the result dtype is tensor_result_type(a, b)
 * except: div of ints gives float32; comparisons give bool. floordiv and
 * mod follow Python (floor, sign of the divisor); integer division by zero
 * is the error "division by zero". */
tensor *tensor_binary(binop op, const tensor *a, const tensor *b);
/* PyTorch's result_type: dimensioned tensors decide within a category; 0-d
 * tensors and wrapped numbers only raise the category (wrapped float ->
 * float32, wrapped int -> int64). */
dtype tensor_result_type(const tensor *a, const tensor *b);
/* broadcast shape of a and b into out; error when incompatible */
int tensor_broadcast_shape(int na, const int64_t *a, int nb, const int64_t *b, int *nout, int64_t *out);

tensor *tensor_where(const tensor *cond, const tensor *a, const tensor *b);
/* clamp with optional bounds (NULL = none); bounds may be 0-d/wrapped tensors */
tensor *tensor_clamp(const tensor *x, const tensor *lo, const tensor *hi);
tensor *tensor_to(const tensor *x, dtype dt);  /* conversion; new storage even when dt equal */

/* ---- reductions ----
 * dims: ndims entries in [-ndim, ndim); ndims == 0 means all dimensions.
 * sum of bool/int gives int64; mean/var need float input (error
 * "mean(): could not infer output dtype. Input dtype must be either a
 * floating point or complex dtype. Got: Long" shortened to
 * "mean() needs a floating point tensor, got int64"). */
#define TENSOR_REDUCE_OPS(X) X(sum) X(mean) X(prod) X(max) X(min) X(var) X(argmax) X(argmin)
typedef enum redop {
#define X(n) REDOP_##n,
	TENSOR_REDUCE_OPS(X)
#undef X
	REDOP_COUNT
} redop;
extern const char *const redop_names[REDOP_COUNT];
/* var uses correction (1 = unbiased, PyTorch's default); argmax/argmin take
 * at most one dim (ndims 0 = over the flattened tensor). Reducing an empty
 * tensor: sum 0, prod 1, mean nan, max/min/argmax error
 * "max(): expected a non-empty tensor". */
tensor *tensor_reduce(redop op, const tensor *x, const int *dims, int ndims, bool keepdim, int correction);
/* max/min over one dim returning values and indices (int64) */
int tensor_reduce_with_indices(redop op, const tensor *x, int dim, bool keepdim, tensor **values, tensor **indices);
tensor *tensor_softmax(const tensor *x, int dim);
tensor *tensor_log_softmax(const tensor *x, int dim);
/* Sums t down to the given shape (the adjoint of broadcasting): used by backward. */
tensor *tensor_sum_to_shape(const tensor *t, int ndim, const int64_t *shape);

/* ---- linear algebra (float through CBLAS, int64 by loops) ---- */
tensor *tensor_matmul(const tensor *a, const tensor *b);  /* 1-D .. batched N-D, as torch.matmul */
tensor *tensor_linear(const tensor *x, const tensor *w, const tensor *b); /* x @ w.T + b; b may be NULL */
/* op(a) @ op(b) of two matrices, op a transpose where asked, read by BLAS
 * in place; its shape n x m (0, or -1 after tj_error_set: ranks, dtypes,
 * inner dims, CBLAS missing); rows [r0, r1) of it into c (row stride m),
 * for operands that tensor_mm_trans_shape accepted */
tensor *tensor_mm_trans(const tensor *a, bool trans_a, const tensor *b, bool trans_b);
int tensor_mm_trans_shape(const tensor *a, bool trans_a, const tensor *b, bool trans_b, int64_t *n, int64_t *m);
void tensor_mm_trans_rows(const tensor *a, bool trans_a, const tensor *b, bool trans_b, int64_t r0, int64_t r1,
			  void *c);

/* ---- shape ----
 * reshape accepts one -1; view is reshape (storage shared: tensors are
 * immutable); squeeze with dim == TENSOR_ALL_DIMS squeezes every size-1 dim. */
#define TENSOR_ALL_DIMS (-1000)
tensor *tensor_reshape(const tensor *x, int ndim, const int64_t *shape);
tensor *tensor_transpose(const tensor *x, int d0, int d1);
tensor *tensor_permute(const tensor *x, const int *dims, int ndims);
tensor *tensor_unsqueeze(const tensor *x, int dim);
tensor *tensor_squeeze(const tensor *x, int dim);
tensor *tensor_expand(const tensor *x, int ndim, const int64_t *shape); /* -1 keeps a size */
tensor *tensor_cat(tensor *const *xs, int n, int dim);
tensor *tensor_stack(tensor *const *xs, int n, int dim);

/* ---- indexing: x[i], x[1:3], x[:, 0], x[..., None] ---- */
enum index_kind { INDEX_INT, INDEX_SLICE, INDEX_NEWAXIS, INDEX_ELLIPSIS };
struct index_spec {
	enum index_kind kind;
	int64_t i;                     /* INDEX_INT, may be negative */
	bool has_start, has_stop;      /* INDEX_SLICE: Python slice semantics, step > 0 */
	int64_t start, stop, step;     /* step defaults to 1 (0 is an error, negative unsupported like PyTorch) */
};
tensor *tensor_index(const tensor *x, const struct index_spec *specs, int n);
/* The adjoint of tensor_index: a tensor of x_shape, zero except grad
 * scattered where tensor_index read. */
tensor *tensor_index_backward(const tensor *grad, int x_ndim, const int64_t *x_shape,
			      const struct index_spec *specs, int n);

/* ---- results without data ----
 * What a kernel above would return, computed from its inputs' dtype, rank,
 * sizes and wrapped_number only (data may be NULL): the first half of
 * each kernel, which calls them, so that ops_meta.c's rules raise the
 * kernels' very messages. 0, or -1 after tj_error_set(). */
int tensor_check_sizes(int ndim, const int64_t *shape);           /* too many dims, negative sizes */
int tensor_check_shape(dtype dt, int ndim, const int64_t *shape); /* ... and too large */
int tensor_arange_len(double start, double stop, double step, int64_t *n);
int tensor_unary_type(unop op, const tensor *x, dtype *dt);
int tensor_binary_shape(binop op, const tensor *a, const tensor *b, dtype *dt, int *ndim, int64_t *shape);
int tensor_where_shape(const tensor *cond, const tensor *a, const tensor *b, dtype *dt, int *ndim, int64_t *shape);
dtype tensor_clamp_type(const tensor *x, const tensor *lo, const tensor *hi); /* lo, hi may be NULL */
int tensor_reduce_shape(redop op, const tensor *x, const int *dims, int ndims, bool keepdim, dtype *dt, int *ndim,
			int64_t *shape);
int tensor_reduce_indices_shape(redop op, const tensor *x, int dim, bool keepdim, int *ndim, int64_t *shape);
int tensor_softmax_type(const tensor *x, int dim, dtype *dt);
int tensor_matmul_shape(const tensor *a, const tensor *b, int *ndim, int64_t *shape); /* dtype: a's */
int tensor_linear_shape(const tensor *x, const tensor *w, const tensor *b, dtype *dt, int *ndim, int64_t *shape);
int tensor_reshape_shape(int64_t numel, int ndim, const int64_t *shape, int64_t *out); /* ndim stays */
int tensor_unsqueeze_shape(const tensor *x, int dim, int64_t *out); /* ndim + 1 sizes */
int tensor_expand_shape(const tensor *x, int ndim, const int64_t *shape, int64_t *out);
int tensor_cat_shape(tensor *const *xs, int n, int dim, dtype *dt, int *ndim, int64_t *shape);
int tensor_stack_shape(tensor *const *xs, int n, int dim, dtype *dt, int *ndim, int64_t *shape);
int tensor_index_shape(int x_ndim, const int64_t *x_shape, const struct index_spec *specs, int n, int *ndim,
		       int64_t *shape);

/* ---- extension functions (opaque to the tracer) ---- */
tensor *tensor_ext_sort(const tensor *x);    /* ascending along the last dim */
tensor *tensor_ext_cumsum(const tensor *x);  /* along the last dim */
tensor *tensor_ext_clip(const tensor *x, double lo, double hi);

/* ---- printing, exactly as LANGUAGE.md §3 ---- */
void tensor_format(const tensor *t, struct strbuf *out);

/* ---- shapes in messages: "(10,)", "(2, 3)", "()" ---- */
void shape_format(int ndim, const int64_t *shape, struct strbuf *out);
bool shape_equal(int na, const int64_t *a, int nb, const int64_t *b);

/* the buffer cache: bytes held for reuse, for tests and benchmarks */
size_t tensor_cache_bytes(void);
void tensor_cache_clear(void);

#endif
