/* tensor_linalg.c - matmul and linear.
 *
 * torch.matmul's rules, by the ranks of a and b:
 *   1 x 1   dot product, a 0-d result
 *   2 x 2   matrix product
 *   1 x 2   (k) @ (k, m) -> (m)       the vector is a row, then dropped
 *   2 x 1   (n, k) @ (k) -> (n)       matrix-vector
 *   N-D     batched: a 1-D operand gets a dim of 1 (in front for a, at the
 *           end for b) that is dropped from the result; the batch dims
 *           (all but the last two) broadcast
 * Either operand 0-d is an error, as in PyTorch, and so are different
 * dtypes ("expected m1 and m2 to have the same dtype" in PyTorch) and bool.
 *
 * float32/float64 go straight to CBLAS (loaded on first use, blas.h) on the contiguous buffers: one
 * sgemm/dgemm per batch, or a single call when b is not batched (a's batch
 * dims then fold into its rows). int64 uses plain loops in i-k-j order.
 */
#include <stdlib.h>

#include "blas.h"
#include "tensor_impl.h"

static void error_matmul_shapes(const tensor *a, const tensor *b)
{
	struct strbuf sa = STRBUF_INIT, sb = STRBUF_INIT;
	shape_format(a->ndim, a->shape, &sa);
	shape_format(b->ndim, b->shape, &sb);
	tj_error_set("matmul: shapes %s and %s cannot be multiplied", sa.buf, sb.buf);
	sb_release(&sa);
	sb_release(&sb);
}

static int check_dtypes(const char *fn, const tensor *a, const tensor *b)
{
	if (a->dt != b->dt) {
		tj_error_set("%s: expected both operands to have the same dtype, but got %s and %s", fn,
			     dtype_name(a->dt), dtype_name(b->dt));
		return -1;
	}
	if (a->dt == DT_BOOL) {
		tj_error_set("%s is not implemented for bool tensors", fn);
		return -1;
	}
	return 0;
}

/* C (n x m, row stride m) = op(A) @ op(B): A is n x k or, with trans_a,
 * k x n, its rows lda elements apart; B is k x m (ldb m) or, with
 * trans_b, m x k (ldb k); beta 0 overwrites C, 1 accumulates. Float
 * dtypes need blas_get() to have succeeded (check_dtypes makes sure). */
static void gemm(dtype dt, int64_t n, int64_t m, int64_t k, const void *A, bool trans_a, int64_t lda,
		 const void *B, bool trans_b, void *C, int beta)
{
	if (n == 0 || m == 0)
		return;
	size_t es = dtype_size(dt);
	const int64_t max_rows = INT32_MAX; /* BLAS takes int sizes: split the rows (a transposed A's
					       dims fit an int: its callers check) */
	while (n > max_rows && !trans_a) {
		gemm(dt, max_rows, m, k, A, false, lda, B, trans_b, C, beta);
		A = (const char *)A + (size_t)(max_rows * lda) * es;
		C = (char *)C + (size_t)(max_rows * m) * es;
		n -= max_rows;
	}
	if (k == 0) {
		if (!beta)
			memset(C, 0, (size_t)(n * m) * es);
		return;
	}
	int ldb = (int)(trans_b ? k : m);
	enum CBLAS_TRANSPOSE ta = trans_a ? CblasTrans : CblasNoTrans, tb = trans_b ? CblasTrans : CblasNoTrans;
	/* a row vector times a matrix (A's k elements lda apart when
	 * transposed), a matrix times a column vector */
	bool row_vec = n == 1 && !trans_b, col_vec = m == 1 && !trans_b;
	int incx = trans_a ? (int)lda : 1;
	if (dt == DT_FLOAT32) {
		if (row_vec)
			blas_get()->sgemv(CblasRowMajor, CblasTrans, (int)k, (int)m, 1.0f, B, (int)m, A, incx, (float)beta, C,
				    1);
		else if (col_vec)
			blas_get()->sgemv(CblasRowMajor, ta, trans_a ? (int)k : (int)n, trans_a ? (int)n : (int)k, 1.0f,
				    A, (int)lda, B, 1, (float)beta, C, 1);
		else
			blas_get()->sgemm(CblasRowMajor, ta, tb, (int)n, (int)m, (int)k, 1.0f, A, (int)lda, B, ldb,
				    (float)beta, C, (int)m);
	} else if (dt == DT_FLOAT64) {
		if (row_vec)
			blas_get()->dgemv(CblasRowMajor, CblasTrans, (int)k, (int)m, 1.0, B, (int)m, A, incx, (double)beta, C,
				    1);
		else if (col_vec)
			blas_get()->dgemv(CblasRowMajor, ta, trans_a ? (int)k : (int)n, trans_a ? (int)n : (int)k, 1.0, A,
				    (int)lda, B, 1, (double)beta, C, 1);
		else
			blas_get()->dgemm(CblasRowMajor, ta, tb, (int)n, (int)m, (int)k, 1.0, A, (int)lda, B, ldb,
				    (double)beta, C, (int)m);
	} else {
		const int64_t *a = A, *bb = B;
		uint64_t *c = C;
		if (!beta)
			memset(c, 0, (size_t)(n * m) * sizeof *c);
		for (int64_t i = 0; i < n; i++) {
			uint64_t *restrict ci = c + i * m;
			for (int64_t p = 0; p < k; p++) {
				uint64_t av = (uint64_t)(trans_a ? a[p * lda + i] : a[i * lda + p]);
				if (trans_b) {
					for (int64_t j = 0; j < m; j++)
						ci[j] += av * (uint64_t)bb[j * k + p];
				} else {
					const int64_t *restrict bp = bb + p * m;
					VLOOP(m, j, ci[j] += av * (uint64_t)bp[j]);
				}
			}
		}
	}
}

static bool dims_fit_int(const tensor *t)
{
	for (int i = 0; i < t->ndim; i++)
		if (t->shape[i] > INT32_MAX)
			return false;
	return true;
}

/* the batch dims of matmul's result: a's and b's (all but their last two) broadcast */
static int matmul_batch(const tensor *a, const tensor *b, int *bn, int64_t *batch)
{
	int bna = a->ndim > 2 ? a->ndim - 2 : 0, bnb = b->ndim > 2 ? b->ndim - 2 : 0;
	if (tensor_broadcast_shape(bna, a->shape, bnb, b->shape, bn, batch) < 0) {
		tj_error_clear();
		error_matmul_shapes(a, b);
		return -1;
	}
	return 0;
}

int tensor_matmul_shape(const tensor *a, const tensor *b, int *ndim, int64_t *shape)
{
	if (a->ndim == 0 || b->ndim == 0) {
		tj_error_set("both arguments to matmul need to be at least 1D, but they are %dD and %dD", a->ndim,
			     b->ndim);
		return -1;
	}
	if (check_dtypes("matmul", a, b) < 0)
		return -1;
	if (!dims_fit_int(a) || !dims_fit_int(b)) {
		tj_error_set("matmul: dimensions too large");
		return -1;
	}
	/* the operands as (batch..., n, k) and (batch..., k, m) */
	int na = a->ndim, nb = b->ndim;
	int64_t k = a->shape[na - 1], kb = nb >= 2 ? b->shape[nb - 2] : b->shape[0];
	if (k != kb) {
		error_matmul_shapes(a, b);
		return -1;
	}
	if (matmul_batch(a, b, ndim, shape) < 0)
		return -1;
	if (na >= 2)
		shape[(*ndim)++] = a->shape[na - 2];
	if (nb >= 2)
		shape[(*ndim)++] = b->shape[nb - 1];
	return 0;
}

tensor *tensor_matmul(const tensor *a, const tensor *b)
{
	int64_t oshape[TENSOR_MAX_DIMS];
	int ond;
	if (tensor_matmul_shape(a, b, &ond, oshape) < 0 || (dtype_is_float(a->dt) && !blas_get()))
		return NULL;
	int na = a->ndim, nb = b->ndim;
	int64_t n = na >= 2 ? a->shape[na - 2] : 1, k = a->shape[na - 1];
	int64_t m = nb >= 2 ? b->shape[nb - 1] : 1;
	int bnb = nb > 2 ? nb - 2 : 0, bn;
	int64_t batch[TENSOR_MAX_DIMS];
	matmul_batch(a, b, &bn, batch);
	int bna = na > 2 ? na - 2 : 0;
	tensor *out = tensor_new_uninit(a->dt, ond, oshape);
	if (!out || out->numel == 0)
		return out;
	size_t es = dtype_size(a->dt);
	int64_t nbatch = shape_numel(bn, batch);
	int64_t bnum_b = shape_numel(bnb, b->shape);
	if (bnum_b == 1) {
		/* b is one matrix: a's batch dims fold into its rows */
		gemm(a->dt, nbatch * n, m, k, a->data, false, k, b->data, false, out->data, 0);
		return out;
	}
	/* walk the broadcast batch with per-operand matrix strides */
	int64_t st[3][TENSOR_MAX_DIMS];
	int64_t sa_shape[TENSOR_MAX_DIMS], sb_shape[TENSOR_MAX_DIMS];
	for (int i = 0; i < bn; i++) {
		int ia = bna - bn + i, ib = bnb - bn + i;
		sa_shape[i] = ia >= 0 ? a->shape[ia] : 1;
		sb_shape[i] = ib >= 0 ? b->shape[ib] : 1;
	}
	int64_t ca[TENSOR_MAX_DIMS], cb[TENSOR_MAX_DIMS];
	shape_contig_strides(bn, sa_shape, ca);
	shape_contig_strides(bn, sb_shape, cb);
	shape_contig_strides(bn, batch, st[0]);
	for (int i = 0; i < bn; i++) {
		st[1][i] = sa_shape[i] == 1 ? 0 : ca[i];
		st[2][i] = sb_shape[i] == 1 ? 0 : cb[i];
	}
	struct titer it;
	titer_init(&it, bn, batch, 3, st);
	for (int64_t o = 0; o < it.outer; o++) {
		for (int64_t i = 0; i < it.inner; i++) {
			int64_t oa = it.off[1] + i * it.istride[1], ob = it.off[2] + i * it.istride[2];
			int64_t oo = it.off[0] + i * it.istride[0];
			gemm(a->dt, n, m, k, (const char *)a->data + (size_t)(oa * n * k) * es, false, k,
			     (const char *)b->data + (size_t)(ob * k * m) * es, false,
			     (char *)out->data + (size_t)(oo * n * m) * es, 0);
		}
		titer_next(&it);
	}
	return out;
}

/* op(a) @ op(b) for two matrices, op a transpose where asked: BLAS reads
 * the stored matrix transposed, so a permuted operand is not copied
 * (inductor's matmul of a permute, doc/inductor.md) */
int tensor_mm_trans_shape(const tensor *a, bool trans_a, const tensor *b, bool trans_b, int64_t *n, int64_t *m)
{
	if (a->ndim != 2 || b->ndim != 2) {
		tj_error_set("mm: expected two matrices, got %dD and %dD", a->ndim, b->ndim);
		return -1;
	}
	if (check_dtypes("mm", a, b) < 0)
		return -1;
	if (!dims_fit_int(a) || !dims_fit_int(b)) {
		tj_error_set("matmul: dimensions too large");
		return -1;
	}
	int64_t k = a->shape[!trans_a], kb = b->shape[trans_b];
	*n = a->shape[trans_a];
	*m = b->shape[!trans_b];
	if (k != kb) {
		tensor ta = *a, tb = *b;
		ta.shape[0] = *n, ta.shape[1] = k, tb.shape[0] = kb, tb.shape[1] = *m;
		error_matmul_shapes(&ta, &tb);
		return -1;
	}
	return dtype_is_float(a->dt) && !blas_get() ? -1 : 0;
}

void tensor_mm_trans_rows(const tensor *a, bool trans_a, const tensor *b, bool trans_b, int64_t r0, int64_t r1,
			  void *c)
{
	int64_t k = a->shape[!trans_a], lda = a->shape[1];
	size_t es = dtype_size(a->dt);
	/* op(a)'s row r0: a row of a, or a column of a transposed */
	const char *A = (const char *)a->data + (size_t)(trans_a ? r0 : r0 * lda) * es;
	gemm(a->dt, r1 - r0, b->shape[!trans_b], k, A, trans_a, lda, b->data, trans_b, c, 0);
}

tensor *tensor_mm_trans(const tensor *a, bool trans_a, const tensor *b, bool trans_b)
{
	int64_t n, m;
	if (tensor_mm_trans_shape(a, trans_a, b, trans_b, &n, &m) < 0)
		return NULL;
	tensor *out = tensor_new_uninit(a->dt, 2, (int64_t[]){n, m});
	if (out && out->numel)
		tensor_mm_trans_rows(a, trans_a, b, trans_b, 0, n, out->data);
	return out;
}

/* linear's fast path: one gemm with w transposed by BLAS, the bias preloaded */
static bool linear_fast(const tensor *x, const tensor *w, const tensor *b)
{
	return x->ndim >= 1 && w->ndim == 2 && x->dt == w->dt && dtype_is_float(x->dt) &&
	       x->shape[x->ndim - 1] == w->shape[1] && dims_fit_int(x) && dims_fit_int(w) &&
	       (!b || (b->dt == x->dt && ((b->ndim == 1 && b->shape[0] == w->shape[0]) || b->ndim == 0)));
}

int tensor_linear_shape(const tensor *x, const tensor *w, const tensor *b, dtype *dt, int *ndim, int64_t *shape)
{
	if (linear_fast(x, w, b)) {
		for (int i = 0; i < x->ndim - 1; i++)
			shape[i] = x->shape[i];
		shape[x->ndim - 1] = w->shape[0];
		*ndim = x->ndim;
		*dt = x->dt;
		return 0;
	}
	/* matmul(x, w.T) + b, as the slow path runs it */
	tensor wt = *w;
	if (w->ndim >= 2) {
		wt.shape[w->ndim - 2] = w->shape[w->ndim - 1];
		wt.shape[w->ndim - 1] = w->shape[w->ndim - 2];
	}
	if (tensor_matmul_shape(x, &wt, ndim, shape) < 0)
		return -1;
	*dt = x->dt;
	if (!b)
		return 0;
	tensor y = *x;
	y.ndim = *ndim;
	y.wrapped_number = false;
	memcpy(y.shape, shape, sizeof y.shape);
	return tensor_binary_shape(BINOP_add, &y, b, dt, ndim, shape);
}

tensor *tensor_linear(const tensor *x, const tensor *w, const tensor *b)
{
	if (linear_fast(x, w, b)) {
		if (!blas_get())
			return NULL;
		int64_t in = w->shape[1], outf = w->shape[0];
		int64_t oshape[TENSOR_MAX_DIMS];
		int ond;
		dtype odt;
		tensor_linear_shape(x, w, b, &odt, &ond, oshape);
		tensor *out = tensor_new_uninit(x->dt, x->ndim, oshape);
		if (!out || out->numel == 0)
			return out;
		int64_t rows = x->numel / (in ? in : 1);
		if (in == 0)
			rows = out->numel / outf;
		size_t es = dtype_size(x->dt);
		if (b) {
			for (int64_t r = 0; r < rows; r++) {
				char *dst = (char *)out->data + (size_t)(r * outf) * es;
				if (b->ndim == 1)
					memcpy(dst, b->data, (size_t)outf * es);
				else
					for (int64_t j = 0; j < outf; j++)
						memcpy(dst + (size_t)j * es, b->data, es);
			}
		}
		gemm(x->dt, rows, outf, in, x->data, false, in, w->data, true, out->data, b ? 1 : 0);
		return out;
	}
	/* everything else: matmul(x, w.T) + b with their checks and messages */
	tensor *wt = w->ndim >= 2 ? tensor_transpose(w, -2, -1) : tensor_alias(w, w->ndim, w->shape, 0);
	if (!wt)
		return NULL;
	tensor *y = tensor_matmul(x, wt);
	tensor_decref(wt);
	if (!y || !b)
		return y;
	tensor *z = tensor_binary(BINOP_add, y, b);
	tensor_decref(y);
	return z;
}
