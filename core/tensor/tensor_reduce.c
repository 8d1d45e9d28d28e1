/* tensor_reduce.c - reductions, softmax, log_softmax, sum_to_shape.
 *
 * Every reduction sees its input as a 3-D block (a, r, b): a kept rows
 * outside, r reduced elements, b kept columns inside (size-1 dims are
 * ignored, adjacent dims of the same kind merge). Then
 *   b == 1: each output is a tight loop over r contiguous elements
 *           (sums in 8 independent lanes so that it vectorizes);
 *   b >  1: the r rows of b elements are combined column-wise into an
 *           accumulator row, which is also contiguous and vectorizes; no
 *           transpose is needed to reduce an outer dimension.
 * Reduced dims that are not adjacent (dims (0, 2) of a 4-D tensor) are
 * first permuted to the end (one copy), then reduced as (a, r, 1).
 *
 * Accumulators: float32 and float64 sums, means, products and variances
 * accumulate in double (as PyTorch's CPU acc_type); int64 and bool in
 * wrapping uint64. max/min propagate NaN; argmax/argmin return the first
 * maximal (minimal) index, and a NaN counts as the maximum and minimum.
 */
#include <math.h>
#include <stdlib.h>

#include "tensor_impl.h"

const char *const redop_names[REDOP_COUNT] = {
#define X(n) #n,
	TENSOR_REDUCE_OPS(X)
#undef X
};

/* ---- kernels, one set per input dtype ---- */

/* sum or mean: out[i][j] = sum_k x[i][k][j] (/ r for mean: the sum
 * rounded to OUT, then divided in OUT, as PyTorch's mean and the
 * decomposition sum / n compute it, so that compiled code gives the same
 * bits) */
#define DEFINE_SUM(SFX, T, ACC, OUT)                                                              \
	static void red_sum_##SFX(const void *x_, void *o_, int64_t a, int64_t r, int64_t b,       \
				  bool mean, void *scratch)                                         \
	{                                                                                         \
		const T *x = x_;                                                                  \
		OUT *o = o_;                                                                      \
		if (b == 1) {                                                                     \
			for (int64_t i = 0; i < a; i++) {                                         \
				const T *restrict p = x + i * r;                                  \
				ACC acc[8] = {0};                                                 \
				int64_t k = 0;                                                    \
				for (; k + 8 <= r; k += 8)                                        \
					for (int j = 0; j < 8; j++)                               \
						acc[j] += (ACC)p[k + j];                          \
				ACC s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) +                 \
					((acc[4] + acc[5]) + (acc[6] + acc[7]));                  \
				for (; k < r; k++)                                                \
					s += (ACC)p[k];                                           \
				o[i] = mean ? (OUT)s / (OUT)r : (OUT)s;                           \
			}                                                                         \
			return;                                                                   \
		}                                                                                 \
		ACC *restrict acc = scratch;                                                      \
		for (int64_t i = 0; i < a; i++) {                                                 \
			VLOOP(b, j, acc[j] = 0);                                                  \
			for (int64_t k = 0; k < r; k++) {                                         \
				const T *restrict p = x + (i * r + k) * b;                        \
				VLOOP(b, j, acc[j] += (ACC)p[j]);                                 \
			}                                                                         \
			OUT *restrict q = o + i * b;                                              \
			if (mean)                                                                 \
				VLOOP(b, j, q[j] = (OUT)acc[j] / (OUT)r);                         \
			else                                                                      \
				VLOOP(b, j, q[j] = (OUT)acc[j]);                                  \
		}                                                                                 \
	}
DEFINE_SUM(b, uint8_t, uint64_t, int64_t)
DEFINE_SUM(i, int64_t, uint64_t, int64_t)
DEFINE_SUM(f, float, double, float)
DEFINE_SUM(d, double, double, double)

#define DEFINE_PROD(SFX, T, ACC, OUT)                                                             \
	static void red_prod_##SFX(const void *x_, void *o_, int64_t a, int64_t r, int64_t b,      \
				   void *scratch)                                                   \
	{                                                                                         \
		const T *x = x_;                                                                  \
		OUT *o = o_;                                                                      \
		ACC *restrict acc = scratch;                                                      \
		if (b == 1) {                                                                     \
			for (int64_t i = 0; i < a; i++) {                                         \
				ACC s = 1;                                                        \
				for (int64_t k = 0; k < r; k++)                                   \
					s *= (ACC)x[i * r + k];                                   \
				o[i] = (OUT)s;                                                    \
			}                                                                         \
			return;                                                                   \
		}                                                                                 \
		for (int64_t i = 0; i < a; i++) {                                                 \
			VLOOP(b, j, acc[j] = 1);                                                  \
			for (int64_t k = 0; k < r; k++) {                                         \
				const T *restrict p = x + (i * r + k) * b;                        \
				VLOOP(b, j, acc[j] *= (ACC)p[j]);                                 \
			}                                                                         \
			OUT *restrict q = o + i * b;                                              \
			VLOOP(b, j, q[j] = (OUT)acc[j]);                                          \
		}                                                                                 \
	}
DEFINE_PROD(b, uint8_t, uint64_t, int64_t)
DEFINE_PROD(i, int64_t, uint64_t, int64_t)
DEFINE_PROD(f, float, double, float)
DEFINE_PROD(d, double, double, double)

/* max / min values: a NaN sticks (v != v picks it, and nothing beats it) */
#define PICK_MAX(v, m) ((v) > (m) || (v) != (v))
#define PICK_MIN(v, m) ((v) < (m) || (v) != (v))

/* Of zeros of both signs, max is 0 and min -0: IEEE 754's maximum and
 * minimum, as inductor's reductions (llvm.maximum). The picks keep the
 * zero that a lane met first, so a zero result looks through its r
 * elements (stride apart) for the other sign: only a zero result pays,
 * and the vectorized loops stay as they are. */
#define DEFINE_ZERO_FIX(SFX, T)                                                                   \
	static T zero_fix_##SFX(T m, const T *p, int64_t r, int64_t stride, bool is_max)           \
	{                                                                                         \
		if (m != 0 || (signbit(m) != 0) != is_max)                                        \
			return m;                                                                 \
		for (int64_t k = 0; k < r; k++)                                                   \
			if (p[k * stride] == 0 && (signbit(p[k * stride]) != 0) != is_max)        \
				return p[k * stride];                                             \
		return m;                                                                         \
	}
DEFINE_ZERO_FIX(f, float)
DEFINE_ZERO_FIX(d, double)
/* integers have one zero */
#define zero_fix_b(m, p, r, stride, is_max) (m)
#define zero_fix_i(m, p, r, stride, is_max) (m)

#define DEFINE_MINMAX(NAME, SFX, T, PICK, IS_MAX)                                                 \
	/* one contiguous row, r >= 1, in 8 independent lanes */                                  \
	static inline T NAME##_row_##SFX(const T *restrict p, int64_t r)                          \
	{                                                                                         \
		T m = p[0];                                                                       \
		int64_t k = 0;                                                                    \
		if (r >= 8) {                                                                     \
			T lane[8];                                                                \
			for (int j = 0; j < 8; j++)                                               \
				lane[j] = p[j];                                                   \
			for (k = 8; k + 8 <= r; k += 8)                                           \
				for (int j = 0; j < 8; j++)                                       \
					lane[j] = PICK(p[k + j], lane[j]) ? p[k + j] : lane[j];   \
			for (int j = 0; j < 8; j++)                                               \
				m = PICK(lane[j], m) ? lane[j] : m;                               \
		}                                                                                 \
		for (; k < r; k++)                                                                \
			m = PICK(p[k], m) ? p[k] : m;                                             \
		return m;                                                                         \
	}                                                                                         \
	static void red_##NAME##_##SFX(const void *x_, void *o_, int64_t a, int64_t r, int64_t b)  \
	{                                                                                         \
		const T *x = x_;                                                                  \
		T *o = o_;                                                                        \
		if (b == 1) {                                                                     \
			for (int64_t i = 0; i < a; i++)                                           \
				o[i] = zero_fix_##SFX(NAME##_row_##SFX(x + i * r, r), x + i * r, r, 1,   \
						      IS_MAX);                                     \
			return;                                                                   \
		}                                                                                 \
		for (int64_t i = 0; i < a; i++) {                                                 \
			T *restrict q = o + i * b;                                                \
			const T *restrict p0 = x + i * r * b;                                     \
			VLOOP(b, j, q[j] = p0[j]);                                                \
			for (int64_t k = 1; k < r; k++) {                                         \
				const T *restrict p = p0 + k * b;                                 \
				VLOOP(b, j, q[j] = PICK(p[j], q[j]) ? p[j] : q[j]);               \
			}                                                                         \
			for (int64_t j = 0; j < b; j++)                                           \
				q[j] = zero_fix_##SFX(q[j], p0 + j, r, b, IS_MAX);                \
		}                                                                                 \
	}
DEFINE_MINMAX(max, b, uint8_t, PICK_MAX, true)
DEFINE_MINMAX(max, i, int64_t, PICK_MAX, true)
DEFINE_MINMAX(max, f, float, PICK_MAX, true)
DEFINE_MINMAX(max, d, double, PICK_MAX, true)
DEFINE_MINMAX(min, b, uint8_t, PICK_MIN, false)
DEFINE_MINMAX(min, i, int64_t, PICK_MIN, false)
DEFINE_MINMAX(min, f, float, PICK_MIN, false)
DEFINE_MINMAX(min, d, double, PICK_MIN, false)

/* argmax / argmin, optionally with the values: the first best index wins;
 * a NaN counts as the best (the first NaN wins). The value is max's or
 * min's (0 above -0), the index the first of an element equal to it. A
 * contiguous row finds the best value with the vectorized max/min first,
 * then its first index; columns (b > 1) keep a row of best values and
 * indices. */
#define ARG_PICK(v, m, is_max) \
	((m) == (m) && ((v) != (v) || ((is_max) ? (v) > (m) : (v) < (m))))
/* ARG_PICK without branches, CMP the comparison (> or <): a select the
 * vectorizer can do */
#define ARG_PICK_BITS(v, m, CMP) (((m) == (m)) & (((v) != (v)) | ((v)CMP(m))))
/* one row k of DEFINE_ARG's branch-free column loop, in type T */
#define ARG_COLUMNS_STEP(T, CMP)                                                                  \
	VLOOP(nj, j, T v = p[j]; T w = mm[j]; bool pk = ARG_PICK_BITS(v, w, CMP); mm[j] = pk ? v : w; \
	      k32[j] = pk ? kk : k32[j])
#define DEFINE_ARG(SFX, T, VEC)                                                                   \
	static void red_arg_##SFX(const void *x_, void *vals_, int64_t *idx, int64_t a, int64_t r, \
				  int64_t b, bool is_max)                                           \
	{                                                                                         \
		const T *x = x_;                                                                  \
		T *vals = vals_;                                                                  \
		if (b == 1) {                                                                     \
			for (int64_t i = 0; i < a; i++) {                                         \
				const T *p = x + i * r;                                           \
				T m = is_max ? max_row_##SFX(p, r) : min_row_##SFX(p, r);         \
				int64_t k = 0;                                                    \
				if (m != m)                                                       \
					while (p[k] == p[k])                                      \
						k++;                                              \
				else                                                              \
					while (p[k] != m)                                         \
						k++;                                              \
				idx[i] = k;                                                       \
				if (vals)                                                         \
					vals[i] = zero_fix_##SFX(m, p, r, 1, is_max);             \
			}                                                                         \
			return;                                                                   \
		}                                                                                 \
		T *best = vals;                                                                   \
		for (int64_t i = 0; i < a; i++) {                                                 \
			const T *p0 = x + i * r * b;                                              \
			T *restrict m = best ? best + i * b : NULL;                               \
			T tmp[64];                                                                \
			int32_t k32[64];                                                          \
			int64_t *restrict ix = idx + i * b;                                       \
			for (int64_t j0 = 0; j0 < b; j0 += 64) { /* 64 columns at a time */       \
				int64_t nj = b - j0 < 64 ? b - j0 : 64;                           \
				T *restrict mm = m ? m + j0 : tmp;                                \
				for (int64_t j = 0; j < nj; j++)                                  \
					mm[j] = p0[j0 + j];                                       \
				if (VEC && r <= INT32_MAX) {                                      \
					/* float: branch-free, indices in 32 bits, as wide as    \
					 * the values: it vectorizes */                           \
					for (int64_t j = 0; j < nj; j++)                          \
						k32[j] = 0;                                       \
					for (int64_t k = 1; k < r; k++) {                         \
						const T *restrict p = p0 + k * b + j0;            \
						int32_t kk = (int32_t)k;                          \
						if (is_max)                                       \
							ARG_COLUMNS_STEP(T, >);                   \
						else                                              \
							ARG_COLUMNS_STEP(T, <);                   \
					}                                                         \
					for (int64_t j = 0; j < nj; j++)                          \
						ix[j0 + j] = k32[j];                              \
				} else {                                                          \
					for (int64_t j = 0; j < nj; j++)                          \
						ix[j0 + j] = 0;                                   \
					for (int64_t k = 1; k < r; k++) {                         \
						const T *restrict p = p0 + k * b + j0;            \
						for (int64_t j = 0; j < nj; j++)                  \
							if (ARG_PICK(p[j], mm[j], is_max)) {      \
								mm[j] = p[j];                     \
								ix[j0 + j] = k;                   \
							}                                         \
					}                                                         \
				}                                                                 \
				for (int64_t j = 0; m && j < nj; j++)                             \
					mm[j] = zero_fix_##SFX(mm[j], p0 + j0 + j, r, b, is_max); \
			}                                                                         \
		}                                                                                 \
	}
DEFINE_ARG(b, uint8_t, 0)
DEFINE_ARG(i, int64_t, 0)
DEFINE_ARG(f, float, 1)
DEFINE_ARG(d, double, 0)

/* variance: two passes (mean, then squared deviations), in double */
#define DEFINE_VAR(SFX, T)                                                                        \
	static void red_var_##SFX(const void *x_, void *o_, int64_t a, int64_t r, int64_t b,       \
				  int correction, void *scratch)                                    \
	{                                                                                         \
		const T *x = x_;                                                                  \
		T *o = o_;                                                                        \
		double denom = (double)r - correction > 0 ? (double)r - correction : 0;           \
		if (b == 1) {                                                                     \
			for (int64_t i = 0; i < a; i++) {                                         \
				const T *restrict p = x + i * r;                                  \
				double ls[8] = {0}, lq[8] = {0}, s = 0, m2 = 0;                   \
				int64_t k = 0;                                                    \
				for (; k + 8 <= r; k += 8)                                        \
					for (int j = 0; j < 8; j++)                               \
						ls[j] += p[k + j];                                \
				for (int j = 0; j < 8; j++)                                       \
					s += ls[j];                                               \
				for (; k < r; k++)                                                \
					s += p[k];                                                \
				double mean = s / (double)r;                                      \
				for (k = 0; k + 8 <= r; k += 8)                                   \
					for (int j = 0; j < 8; j++) {                             \
						double d = (double)p[k + j] - mean;               \
						lq[j] += d * d;                                   \
					}                                                         \
				for (int j = 0; j < 8; j++)                                       \
					m2 += lq[j];                                              \
				for (; k < r; k++)                                                \
					m2 += ((double)p[k] - mean) * ((double)p[k] - mean);      \
				o[i] = (T)(m2 / denom);                                           \
			}                                                                         \
			return;                                                                   \
		}                                                                                 \
		double *restrict mean = scratch, *restrict m2 = (double *)scratch + b;            \
		for (int64_t i = 0; i < a; i++) {                                                 \
			const T *p0 = x + i * r * b;                                              \
			VLOOP(b, j, mean[j] = 0; m2[j] = 0);                                      \
			for (int64_t k = 0; k < r; k++) {                                         \
				const T *restrict p = p0 + k * b;                                 \
				VLOOP(b, j, mean[j] += p[j]);                                     \
			}                                                                         \
			VLOOP(b, j, mean[j] /= (double)r);                                        \
			for (int64_t k = 0; k < r; k++) {                                         \
				const T *restrict p = p0 + k * b;                                 \
				VLOOP(b, j, double d = (double)p[j] - mean[j]; m2[j] += d * d);   \
			}                                                                         \
			T *restrict q = o + i * b;                                                \
			VLOOP(b, j, q[j] = (T)(m2[j] / denom));                                   \
		}                                                                                 \
	}
DEFINE_VAR(f, float)
DEFINE_VAR(d, double)

typedef void (*sum_fn)(const void *, void *, int64_t, int64_t, int64_t, bool, void *);
typedef void (*prod_fn)(const void *, void *, int64_t, int64_t, int64_t, void *);
typedef void (*minmax_fn)(const void *, void *, int64_t, int64_t, int64_t);
typedef void (*arg_fn)(const void *, void *, int64_t *, int64_t, int64_t, int64_t, bool);
typedef void (*var_fn)(const void *, void *, int64_t, int64_t, int64_t, int, void *);

static const sum_fn sum_kernels[DT_COUNT] = {red_sum_b, red_sum_i, red_sum_f, red_sum_d};
static const prod_fn prod_kernels[DT_COUNT] = {red_prod_b, red_prod_i, red_prod_f, red_prod_d};
static const minmax_fn max_kernels[DT_COUNT] = {red_max_b, red_max_i, red_max_f, red_max_d};
static const minmax_fn min_kernels[DT_COUNT] = {red_min_b, red_min_i, red_min_f, red_min_d};
static const arg_fn arg_kernels[DT_COUNT] = {red_arg_b, red_arg_i, red_arg_f, red_arg_d};
static const var_fn var_kernels[DT_COUNT] = {NULL, NULL, red_var_f, red_var_d};

/* ---- layout ---- */

/* Parses dims into mask (ndims 0 = every dim). Errors: out of range,
 * repeated. A 0-d tensor accepts dim 0 / -1 and has nothing to mask. */
static int dims_to_mask(const tensor *x, const int *dims, int ndims, bool *mask)
{
	for (int d = 0; d < TENSOR_MAX_DIMS; d++)
		mask[d] = ndims == 0;
	for (int i = 0; i < ndims; i++) {
		int d = dim_wrap(dims[i], x->ndim);
		if (d < 0)
			return -1;
		if (x->ndim == 0)
			continue;
		if (mask[d]) {
			tj_error_set("dim %d appears multiple times in the list of dims", d);
			return -1;
		}
		mask[d] = true;
	}
	return 0;
}

/* The (a, r, b) view of x for mask. When the reduced dims are not one
 * block, *perm receives a permuted copy (kept dims, then reduced ones) and
 * the view is of that. */
static int reduce_layout(const tensor *x, const bool *mask, tensor **perm, int64_t *a, int64_t *r, int64_t *b)
{
	bool kind[TENSOR_MAX_DIMS];
	int64_t size[TENSOR_MAX_DIMS];
	int ng = 0;
	*perm = NULL;
	for (int d = 0; d < x->ndim; d++) {
		if (x->shape[d] == 1)
			continue;
		if (ng && kind[ng - 1] == mask[d]) {
			size[ng - 1] *= x->shape[d];
			continue;
		}
		kind[ng] = mask[d];
		size[ng++] = x->shape[d];
	}
	*a = *r = *b = 1;
	int g = 0;
	if (g < ng && !kind[g])
		*a = size[g++];
	if (g < ng && kind[g])
		*r = size[g++];
	if (g < ng && !kind[g])
		*b = size[g++];
	if (g == ng)
		return 0;
	int order[TENSOR_MAX_DIMS], n = 0;
	*a = *r = 1;
	*b = 1;
	for (int d = 0; d < x->ndim; d++)
		if (!mask[d]) {
			order[n++] = d;
			*a *= x->shape[d];
		}
	for (int d = 0; d < x->ndim; d++)
		if (mask[d]) {
			order[n++] = d;
			*r *= x->shape[d];
		}
	*perm = tensor_permute(x, order, n);
	return *perm ? 0 : -1;
}

/* output shape: kept dims, reduced ones as 1 with keepdim */
static int reduced_shape(const tensor *x, const bool *mask, bool keepdim, int64_t *shape)
{
	int n = 0;
	for (int d = 0; d < x->ndim; d++) {
		if (!mask[d])
			shape[n++] = x->shape[d];
		else if (keepdim)
			shape[n++] = 1;
	}
	return n;
}

static int64_t reduced_count(const tensor *x, const bool *mask)
{
	int64_t r = 1;
	for (int d = 0; d < x->ndim; d++)
		if (mask[d])
			r *= x->shape[d];
	return r;
}

int tensor_reduce_shape(redop op, const tensor *x, const int *dims, int ndims, bool keepdim, dtype *dt, int *ndim,
			int64_t *shape)
{
	if ((unsigned)op >= REDOP_COUNT) {
		tj_error_set("unknown reduction %d", (int)op);
		return -1;
	}
	const char *name = redop_names[op];
	bool is_arg = op == REDOP_argmax || op == REDOP_argmin;
	if (is_arg && ndims > 1) {
		tj_error_set("%s() takes a single dim, got %d", name, ndims);
		return -1;
	}
	if ((op == REDOP_mean || op == REDOP_var) && !dtype_is_float(x->dt)) {
		tj_error_set("%s() needs a floating point tensor, got %s", name, dtype_name(x->dt));
		return -1;
	}
	bool mask[TENSOR_MAX_DIMS];
	if (dims_to_mask(x, dims, ndims, mask) < 0)
		return -1;
	if ((op == REDOP_max || op == REDOP_min || is_arg) && reduced_count(x, mask) == 0) {
		tj_error_set("%s(): expected a non-empty tensor", name);
		return -1;
	}
	*ndim = reduced_shape(x, mask, keepdim, shape);
	switch (op) {
	case REDOP_sum:
	case REDOP_prod: *dt = dtype_is_float(x->dt) ? x->dt : DT_INT64; break;
	case REDOP_argmax:
	case REDOP_argmin: *dt = DT_INT64; break;
	default: *dt = x->dt; break;
	}
	return 0;
}

tensor *tensor_reduce(redop op, const tensor *x, const int *dims, int ndims, bool keepdim, int correction)
{
	int64_t oshape[TENSOR_MAX_DIMS];
	int ond;
	dtype odt;
	bool mask[TENSOR_MAX_DIMS];
	if (tensor_reduce_shape(op, x, dims, ndims, keepdim, &odt, &ond, oshape) < 0 ||
	    dims_to_mask(x, dims, ndims, mask) < 0)
		return NULL;
	tensor *perm, *out = NULL;
	int64_t a, r, b;
	if (reduce_layout(x, mask, &perm, &a, &r, &b) < 0)
		return NULL;
	const void *src = perm ? perm->data : x->data;
	void *scratch = NULL;
	if (b > 1 && (op == REDOP_sum || op == REDOP_mean || op == REDOP_prod || op == REDOP_var)) {
		scratch = malloc((size_t)b * 2 * sizeof(double));
		if (!scratch) {
			tj_error_set("out of memory");
			goto cleanup;
		}
	}
	out = tensor_new_uninit(odt, ond, oshape);
	if (!out)
		goto cleanup;
	switch (op) {
	case REDOP_sum:
	case REDOP_mean: sum_kernels[x->dt](src, out->data, a, r, b, op == REDOP_mean, scratch); break;
	case REDOP_prod: prod_kernels[x->dt](src, out->data, a, r, b, scratch); break;
	case REDOP_max: max_kernels[x->dt](src, out->data, a, r, b); break;
	case REDOP_min: min_kernels[x->dt](src, out->data, a, r, b); break;
	case REDOP_var: var_kernels[x->dt](src, out->data, a, r, b, correction, scratch); break;
	case REDOP_argmax:
	case REDOP_argmin: arg_kernels[x->dt](src, NULL, out->data, a, r, b, op == REDOP_argmax); break;
	default: break;
	}
cleanup:
	free(scratch);
	if (perm)
		tensor_decref(perm);
	return out;
}

int tensor_reduce_indices_shape(redop op, const tensor *x, int dim, bool keepdim, int *ndim, int64_t *shape)
{
	if (op != REDOP_max && op != REDOP_min) {
		tj_error_set("%s() does not return indices", (unsigned)op < REDOP_COUNT ? redop_names[op] : "?");
		return -1;
	}
	bool mask[TENSOR_MAX_DIMS];
	if (dims_to_mask(x, &dim, 1, mask) < 0)
		return -1;
	if (reduced_count(x, mask) == 0) {
		tj_error_set("%s(): expected a non-empty tensor", redop_names[op]);
		return -1;
	}
	*ndim = reduced_shape(x, mask, keepdim, shape);
	return 0;
}

int tensor_reduce_with_indices(redop op, const tensor *x, int dim, bool keepdim, tensor **values, tensor **indices)
{
	*values = *indices = NULL;
	int64_t oshape[TENSOR_MAX_DIMS];
	int ond;
	bool mask[TENSOR_MAX_DIMS];
	if (tensor_reduce_indices_shape(op, x, dim, keepdim, &ond, oshape) < 0 || dims_to_mask(x, &dim, 1, mask) < 0)
		return -1;
	tensor *perm;
	int64_t a, r, b;
	if (reduce_layout(x, mask, &perm, &a, &r, &b) < 0) /* one dim: never permutes */
		return -1;
	tensor *v = tensor_new_uninit(x->dt, ond, oshape);
	tensor *ix = v ? tensor_new_uninit(DT_INT64, ond, oshape) : NULL;
	if (!ix) {
		if (v)
			tensor_decref(v);
		return -1;
	}
	if (v->numel > 0)
		arg_kernels[x->dt](x->data, v->data, ix->data, a, r, b, op == REDOP_max);
	*values = v;
	*indices = ix;
	return 0;
}

/* ---- softmax and log_softmax ----
 * Numerically stable: subtract the maximum of each slice first. A slice
 * that is all -inf gives NaN, and a NaN anywhere in it gives NaN, as
 * PyTorch. int/bool input is converted to float32. The exponentials are
 * summed in double, and the sum rounded to the dtype before it divides
 * or its log is taken (logf for float32), as the decomposition that
 * aot_eager and inductor run (and PyTorch's float kernel): a slice whose
 * maximum dominates gives exactly 0 there, where the double sum's log
 * gave -2e-12, whose sign differed. */
#define DEFINE_SOFTMAX(SFX, T, EXP, LOG)                                                           \
	static void softmax_##SFX(const T *x, T *o, int64_t a, int64_t r, int64_t b, bool lg,      \
				  double *scratch)                                                  \
	{                                                                                          \
		if (b == 1) {                                                                      \
			for (int64_t i = 0; i < a; i++) {                                          \
				const T *restrict p = x + i * r;                                   \
				T *restrict q = o + i * r;                                         \
				T m = p[0];                                                        \
				for (int64_t k = 1; k < r; k++)                                    \
					m = PICK_MAX(p[k], m) ? p[k] : m;                          \
				double s = 0;                                                      \
				if (lg) {                                                          \
					for (int64_t k = 0; k < r; k++)                            \
						s += EXP(p[k] - m);                                \
					T ls = LOG((T)s); /* as the decomposition: log(sum) */   \
					VLOOP(r, k, q[k] = p[k] - m - ls);                         \
				} else {                                                           \
					for (int64_t k = 0; k < r; k++) {                          \
						q[k] = EXP(p[k] - m);                              \
						s += q[k];                                         \
					}                                                          \
					T sum = (T)s; /* e / sum, as the decomposition */         \
					VLOOP(r, k, q[k] /= sum);                                  \
				}                                                                  \
			}                                                                          \
			return;                                                                    \
		}                                                                                  \
		double *restrict s = scratch;                                                      \
		for (int64_t i = 0; i < a; i++) {                                                  \
			const T *p0 = x + i * r * b;                                               \
			T *o0 = o + i * r * b;                                                     \
			T *restrict m = (T *)(scratch + b);                                        \
			{                                                                          \
				const T *restrict p = p0;                                          \
				VLOOP(b, j, m[j] = p[j]; s[j] = 0);                                \
			}                                                                          \
			for (int64_t k = 1; k < r; k++) {                                          \
				const T *restrict p = p0 + k * b;                                  \
				VLOOP(b, j, m[j] = PICK_MAX(p[j], m[j]) ? p[j] : m[j]);            \
			}                                                                          \
			for (int64_t k = 0; k < r; k++) {                                          \
				const T *restrict p = p0 + k * b;                                  \
				T *restrict q = o0 + k * b;                                        \
				for (int64_t j = 0; j < b; j++) {                                  \
					T e = EXP(p[j] - m[j]);                                    \
					s[j] += e;                                                 \
					if (!lg)                                                   \
						q[j] = e;                                          \
				}                                                                  \
			}                                                                          \
			for (int64_t k = 0; k < r; k++) {                                          \
				const T *restrict p = p0 + k * b;                                  \
				T *restrict q = o0 + k * b;                                        \
				if (lg)                                                            \
					for (int64_t j = 0; j < b; j++)                            \
						q[j] = p[j] - m[j] - LOG((T)s[j]);                 \
				else                                                               \
					VLOOP(b, j, q[j] = q[j] / (T)s[j]);                        \
			}                                                                          \
		}                                                                                  \
	}
DEFINE_SOFTMAX(f, float, expf, logf)
DEFINE_SOFTMAX(d, double, exp, log)

int tensor_softmax_type(const tensor *x, int dim, dtype *dt)
{
	if (dim_wrap(dim, x->ndim) < 0)
		return -1;
	*dt = dtype_is_float(x->dt) ? x->dt : DT_FLOAT32;
	return 0;
}

static tensor *softmax_common(const tensor *x, int dim, bool lg)
{
	dtype dt;
	if (tensor_softmax_type(x, dim, &dt) < 0)
		return NULL;
	int d = dim_wrap(dim, x->ndim);
	tensor *cx = tensor_as_dtype(x, dtype_is_float(x->dt) ? x->dt : DT_FLOAT32);
	if (!cx)
		return NULL;
	tensor *out = tensor_new_uninit(cx->dt, x->ndim, x->shape);
	double *scratch = NULL;
	if (!out)
		goto cleanup;
	int64_t a = 1, r = x->ndim ? x->shape[d] : 1, b = 1;
	for (int i = 0; i < d; i++)
		a *= x->shape[i];
	for (int i = d + 1; i < x->ndim; i++)
		b *= x->shape[i];
	if (out->numel == 0)
		goto cleanup;
	if (b > 1) {
		scratch = malloc((size_t)b * 2 * sizeof(double));
		if (!scratch) {
			tj_error_set("out of memory");
			tensor_decref(out);
			out = NULL;
			goto cleanup;
		}
	}
	if (cx->dt == DT_FLOAT32)
		softmax_f(cx->data, out->data, a, r, b, lg, scratch);
	else
		softmax_d(cx->data, out->data, a, r, b, lg, scratch);
cleanup:
	free(scratch);
	tensor_decref(cx);
	return out;
}

tensor *tensor_softmax(const tensor *x, int dim) { return softmax_common(x, dim, false); }
tensor *tensor_log_softmax(const tensor *x, int dim) { return softmax_common(x, dim, true); }

/* ---- the adjoint of broadcasting ---- */

tensor *tensor_sum_to_shape(const tensor *t, int ndim, const int64_t *shape)
{
	if (shape_equal(t->ndim, t->shape, ndim, shape))
		return tensor_alias(t, t->ndim, t->shape, 0);
	int lead = t->ndim - ndim;
	int dims[TENSOR_MAX_DIMS], nd = 0;
	bool ok = lead >= 0;
	for (int i = 0; ok && i < t->ndim; i++) {
		if (i < lead) {
			dims[nd++] = i;
			continue;
		}
		int64_t want = shape[i - lead];
		if (want == 1 && t->shape[i] != 1)
			dims[nd++] = i;
		else if (want != t->shape[i])
			ok = false;
	}
	if (!ok) {
		struct strbuf sa = STRBUF_INIT, sb = STRBUF_INIT;
		shape_format(t->ndim, t->shape, &sa);
		shape_format(ndim, shape, &sb);
		tj_error_set("sum_to_shape: shape %s cannot be summed to %s", sa.buf, sb.buf);
		sb_release(&sa);
		sb_release(&sb);
		return NULL;
	}
	tensor *s;
	if (nd == 0)
		s = tensor_alias(t, t->ndim, t->shape, 0);
	else
		s = tensor_reduce(REDOP_sum, t, dims, nd, true, 0);
	if (!s)
		return NULL;
	if (shape_equal(s->ndim, s->shape, ndim, shape))
		return s;
	tensor *res = tensor_reshape(s, ndim, shape);
	tensor_decref(s);
	return res;
}
