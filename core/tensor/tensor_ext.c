/* tensor_ext.c - the extension functions ext_sort, ext_cumsum, ext_clip:
 * C code that the tracer cannot see into (every call is a graph break).
 * All work along the last dimension; a 0-d tensor is one row of one.
 */
#include <math.h>
#include <stdlib.h>

#include "tensor_impl.h"

/* ascending; NaN after everything, as torch.sort */
#define DEFINE_CMP(NAME, T)                                                  \
	static int NAME(const void *pa, const void *pb)                     \
	{                                                                   \
		T a = *(const T *)pa, b = *(const T *)pb;                   \
		bool na = a != a, nb = b != b;                              \
		if (na || nb)                                               \
			return (int)na - (int)nb;                           \
		return (a > b) - (a < b);                                   \
	}
DEFINE_CMP(cmp_b, uint8_t)
DEFINE_CMP(cmp_i, int64_t)
DEFINE_CMP(cmp_f, float)
DEFINE_CMP(cmp_d, double)
#undef DEFINE_CMP

static int (*const sort_cmp[DT_COUNT])(const void *, const void *) = {cmp_b, cmp_i, cmp_f, cmp_d};

tensor *tensor_ext_sort(const tensor *x)
{
	tensor *out = tensor_copy(x);
	if (!out || out->numel == 0)
		return out;
	int64_t row = x->ndim ? x->shape[x->ndim - 1] : 1;
	size_t es = dtype_size(x->dt);
	for (int64_t r = 0; r < x->numel / row; r++)
		qsort((char *)out->data + (size_t)(r * row) * es, (size_t)row, es, sort_cmp[x->dt]);
	return out;
}

/* running sums in double (float32, as PyTorch's CPU accumulate type) or
 * wrapping uint64 (bool and int64 give int64) */
#define DEFINE_CUMSUM(NAME, T, ACC, OUT)                                               \
	static void NAME(const void *x_, void *o_, int64_t rows, int64_t row)         \
	{                                                                             \
		const T *x = x_;                                                      \
		OUT *o = o_;                                                          \
		for (int64_t r = 0; r < rows; r++) {                                  \
			ACC s = 0;                                                    \
			for (int64_t i = r * row; i < (r + 1) * row; i++) {           \
				s += (ACC)x[i];                                       \
				o[i] = (OUT)s;                                        \
			}                                                             \
		}                                                                     \
	}
DEFINE_CUMSUM(cumsum_b, uint8_t, uint64_t, int64_t)
DEFINE_CUMSUM(cumsum_i, int64_t, uint64_t, int64_t)
DEFINE_CUMSUM(cumsum_f, float, double, float)
DEFINE_CUMSUM(cumsum_d, double, double, double)
#undef DEFINE_CUMSUM

static void (*const cumsum_kernels[DT_COUNT])(const void *, void *, int64_t, int64_t) = {
	cumsum_b, cumsum_i, cumsum_f, cumsum_d};

tensor *tensor_ext_cumsum(const tensor *x)
{
	tensor *out = tensor_new_uninit(dtype_is_float(x->dt) ? x->dt : DT_INT64, x->ndim, x->shape);
	if (!out || out->numel == 0)
		return out;
	int64_t row = x->ndim ? x->shape[x->ndim - 1] : 1;
	cumsum_kernels[x->dt](x->data, out->data, x->numel / row, row);
	return out;
}

/* a bound as the Python number it came from: an integral value is an int
 * (so that clipping an int64 tensor to integer bounds keeps int64) */
static tensor *wrap_bound(double v)
{
	tensor *t;
	if (v == floor(v) && fabs(v) < 9.0e15)
		t = tensor_scalar_int((int64_t)v);
	else
		t = tensor_scalar(DT_FLOAT64, v);
	if (t)
		t->wrapped_number = true;
	return t;
}

/* clamp(x, lo, hi) with Python-number bounds: the same values and dtype */
tensor *tensor_ext_clip(const tensor *x, double lo, double hi)
{
	tensor *l = wrap_bound(lo), *h = l ? wrap_bound(hi) : NULL, *out = NULL;
	if (h)
		out = tensor_clamp(x, l, h);
	if (l)
		tensor_decref(l);
	if (h)
		tensor_decref(h);
	return out;
}
