/* tensor_shape.c - reshape/view, transpose, permute, unsqueeze, squeeze,
 * expand, cat, stack, indexing and its adjoint.
 *
 * Tensors are contiguous, so an op that keeps the element order (reshape,
 * view, squeeze, unsqueeze, an index that selects one contiguous block such
 * as x[i] or x[2:5]) returns a new header on the same storage; the others
 * (transpose, permute, expand, strided slices) copy through the strided
 * iterator (tensor.c: strided_copy), which tiles transposes.
 */
#include <stdlib.h>

#include "tensor_impl.h"

/* ---- reshape ---- */

int tensor_reshape_shape(int64_t numel, int ndim, const int64_t *shape, int64_t *s)
{
	if (ndim < 0 || ndim > TENSOR_MAX_DIMS) {
		tj_error_set("tensors have at most %d dimensions, got %d", TENSOR_MAX_DIMS, ndim);
		return -1;
	}
	int64_t known = 1;
	int infer = -1;
	for (int i = 0; i < ndim; i++) {
		s[i] = shape[i];
		if (shape[i] == -1) {
			if (infer >= 0) {
				tj_error_set("only one dimension can be inferred");
				return -1;
			}
			infer = i;
		} else if (shape[i] < 0) {
			tj_error_set("invalid shape dimension %lld", (long long)shape[i]);
			return -1;
		} else if (shape[i] > 0 && known > INT64_MAX / shape[i]) {
			known = -1; /* overflows: matches no input size */
		} else if (known >= 0) {
			known *= shape[i];
		}
	}
	if (known < 0) {
		struct strbuf sb = STRBUF_INIT;
		shape_format_list(ndim, shape, &sb);
		tj_error_set("shape '%s' is invalid for input of size %lld", sb.buf, (long long)numel);
		sb_release(&sb);
		return -1;
	}
	if (infer >= 0) {
		if (known == 0) {
			struct strbuf sb = STRBUF_INIT;
			shape_format_list(ndim, shape, &sb);
			tj_error_set("cannot reshape tensor of %lld elements into shape %s because the "
				     "unspecified dimension size -1 can be any value and is ambiguous",
				     (long long)numel, sb.buf);
			sb_release(&sb);
			return -1;
		}
		if (numel % known == 0)
			s[infer] = numel / known;
	}
	if ((infer >= 0 && numel % known != 0) || (infer < 0 && known != numel)) {
		struct strbuf sb = STRBUF_INIT;
		shape_format_list(ndim, shape, &sb);
		tj_error_set("shape '%s' is invalid for input of size %lld", sb.buf, (long long)numel);
		sb_release(&sb);
		return -1;
	}
	return 0;
}

tensor *tensor_reshape(const tensor *x, int ndim, const int64_t *shape)
{
	int64_t s[TENSOR_MAX_DIMS];
	if (tensor_reshape_shape(x->numel, ndim, shape, s) < 0)
		return NULL;
	return tensor_alias(x, ndim, s, 0);
}

/* ---- permute / transpose ---- */

/* out[i0..] = x[...] with out dim i = x dim perm[i] (perm already checked) */
static tensor *permute_copy(const tensor *x, const int *perm)
{
	int64_t oshape[TENSOR_MAX_DIMS], xs[TENSOR_MAX_DIMS], st[TENSOR_MAX_DIMS];
	shape_contig_strides(x->ndim, x->shape, xs);
	bool identity = true;
	for (int i = 0; i < x->ndim; i++) {
		oshape[i] = x->shape[perm[i]];
		st[i] = xs[perm[i]];
		if (perm[i] != i && x->shape[perm[i]] != 1)
			identity = false;
	}
	/* moving only size-1 dims keeps the element order */
	if (identity)
		return tensor_alias(x, x->ndim, oshape, 0);
	tensor *out = tensor_new_uninit(x->dt, x->ndim, oshape);
	if (out)
		strided_copy(out->data, x->data, dtype_size(x->dt), x->ndim, oshape, st);
	return out;
}

tensor *tensor_permute(const tensor *x, const int *dims, int ndims)
{
	if (ndims != x->ndim) {
		tj_error_set("permute: number of dims don't match (the tensor has %d, got %d)", x->ndim, ndims);
		return NULL;
	}
	int perm[TENSOR_MAX_DIMS];
	bool seen[TENSOR_MAX_DIMS] = {false};
	for (int i = 0; i < ndims; i++) {
		int d = dim_wrap(dims[i], x->ndim);
		if (d < 0)
			return NULL;
		if (x->ndim && seen[d]) {
			tj_error_set("permute: duplicate dims are not allowed");
			return NULL;
		}
		if (x->ndim)
			seen[d] = true;
		perm[i] = d;
	}
	return permute_copy(x, perm);
}

tensor *tensor_transpose(const tensor *x, int d0, int d1)
{
	int a = dim_wrap(d0, x->ndim), b;
	if (a < 0 || (b = dim_wrap(d1, x->ndim)) < 0)
		return NULL;
	if (x->ndim == 0)
		return tensor_alias(x, 0, x->shape, 0);
	int perm[TENSOR_MAX_DIMS];
	for (int i = 0; i < x->ndim; i++)
		perm[i] = i;
	perm[a] = b;
	perm[b] = a;
	return permute_copy(x, perm);
}

/* ---- unsqueeze / squeeze ---- */

int tensor_unsqueeze_shape(const tensor *x, int dim, int64_t *s)
{
	if (x->ndim >= TENSOR_MAX_DIMS) {
		tj_error_set("tensors have at most %d dimensions, got %d", TENSOR_MAX_DIMS, x->ndim + 1);
		return -1;
	}
	int d = dim_wrap(dim, x->ndim + 1);
	if (d < 0)
		return -1;
	for (int i = 0, j = 0; i <= x->ndim; i++)
		s[i] = i == d ? 1 : x->shape[j++];
	return 0;
}

tensor *tensor_unsqueeze(const tensor *x, int dim)
{
	int64_t s[TENSOR_MAX_DIMS];
	if (tensor_unsqueeze_shape(x, dim, s) < 0)
		return NULL;
	return tensor_alias(x, x->ndim + 1, s, 0);
}

tensor *tensor_squeeze(const tensor *x, int dim)
{
	int64_t s[TENSOR_MAX_DIMS];
	int n = 0;
	if (dim == TENSOR_ALL_DIMS) {
		for (int i = 0; i < x->ndim; i++)
			if (x->shape[i] != 1)
				s[n++] = x->shape[i];
		return tensor_alias(x, n, s, 0);
	}
	int d = dim_wrap(dim, x->ndim);
	if (d < 0)
		return NULL;
	for (int i = 0; i < x->ndim; i++)
		if (i != d || x->shape[i] != 1)
			s[n++] = x->shape[i];
	return tensor_alias(x, n, s, 0);
}

/* ---- expand ---- */

int tensor_expand_shape(const tensor *x, int ndim, const int64_t *shape, int64_t *s)
{
	if (ndim > TENSOR_MAX_DIMS) {
		tj_error_set("tensors have at most %d dimensions, got %d", TENSOR_MAX_DIMS, ndim);
		return -1;
	}
	if (ndim < x->ndim) {
		tj_error_set("expand: the number of sizes provided (%d) must be greater or equal to the "
			     "number of dimensions in the tensor (%d)", ndim, x->ndim);
		return -1;
	}
	for (int i = 0; i < ndim; i++) {
		int j = x->ndim - ndim + i;
		if (j < 0) {
			if (shape[i] < 0) {
				tj_error_set("expand: the expanded size of the tensor (%lld) isn't allowed in a "
					     "leading, non-existing dimension %d", (long long)shape[i], i);
				return -1;
			}
			s[i] = shape[i];
			continue;
		}
		if (shape[i] == -1)
			s[i] = x->shape[j];
		else if (shape[i] == x->shape[j] || (x->shape[j] == 1 && shape[i] >= 0))
			s[i] = shape[i];
		else {
			struct strbuf ts = STRBUF_INIT, xs = STRBUF_INIT;
			shape_format_list(ndim, shape, &ts);
			shape_format_list(x->ndim, x->shape, &xs);
			tj_error_set("expand: the expanded size of the tensor (%lld) must match the existing "
				     "size (%lld) at non-singleton dimension %d, target sizes: %s, tensor "
				     "sizes: %s", (long long)shape[i], (long long)x->shape[j], i, ts.buf, xs.buf);
			sb_release(&ts);
			sb_release(&xs);
			return -1;
		}
	}
	return 0;
}

tensor *tensor_expand(const tensor *x, int ndim, const int64_t *shape)
{
	int64_t s[TENSOR_MAX_DIMS];
	if (tensor_expand_shape(x, ndim, shape, s) < 0)
		return NULL;
	if (shape_numel(ndim, s) == x->numel)
		return tensor_alias(x, ndim, s, 0);
	int64_t st[TENSOR_MAX_DIMS];
	broadcast_strides(x, ndim, s, st);
	tensor *out = tensor_new_uninit(x->dt, ndim, s);
	if (out)
		strided_copy(out->data, x->data, dtype_size(x->dt), ndim, s, st);
	return out;
}

/* ---- cat / stack ---- */

/* cat's checks and result: the reference tensor (the first that is not
 * 1-D empty), the wrapped dim, the dtype and the shape */
static const tensor *cat_shape(tensor *const *xs, int n, int dim, int *dp, dtype *dtp, int64_t *oshape)
{
	if (n <= 0) {
		tj_error_set("cat: expected a non-empty list of tensors");
		return NULL;
	}
	/* like PyTorch, 1-D empty tensors are skipped (legacy behaviour) */
	const tensor *ref = NULL;
	for (int i = 0; i < n; i++) {
		if (xs[i]->ndim == 0) {
			tj_error_set("zero-dimensional tensor (at position %d) cannot be concatenated", i);
			return NULL;
		}
		if (!ref && !(xs[i]->ndim == 1 && xs[i]->shape[0] == 0))
			ref = xs[i];
	}
	if (!ref)
		ref = xs[0];
	int d = dim_wrap(dim, ref->ndim);
	if (d < 0)
		return NULL;
	dtype dt = xs[0]->dt;
	for (int i = 1; i < n; i++)
		if (xs[i]->dt > dt)
			dt = xs[i]->dt;
	memcpy(oshape, ref->shape, sizeof ref->shape);
	oshape[d] = 0;
	for (int i = 0; i < n; i++) {
		const tensor *t = xs[i];
		if (t != ref && t->ndim == 1 && t->shape[0] == 0)
			continue;
		if (t->ndim != ref->ndim) {
			tj_error_set("cat: tensors must have same number of dimensions: got %d and %d", ref->ndim,
				     t->ndim);
			return NULL;
		}
		for (int k = 0; k < t->ndim; k++)
			if (k != d && t->shape[k] != ref->shape[k]) {
				tj_error_set("cat: sizes of tensors must match except in dimension %d, expected "
					     "size %lld but got size %lld for tensor number %d in the list",
					     d, (long long)ref->shape[k], (long long)t->shape[k], i);
				return NULL;
			}
		oshape[d] += t->shape[d];
	}
	*dp = d;
	*dtp = dt;
	return ref;
}

int tensor_cat_shape(tensor *const *xs, int n, int dim, dtype *dt, int *ndim, int64_t *shape)
{
	int d;
	const tensor *ref = cat_shape(xs, n, dim, &d, dt, shape);
	if (!ref)
		return -1;
	*ndim = ref->ndim;
	return 0;
}

tensor *tensor_cat(tensor *const *xs, int n, int dim)
{
	int d;
	dtype dt;
	int64_t oshape[TENSOR_MAX_DIMS];
	const tensor *ref = cat_shape(xs, n, dim, &d, &dt, oshape);
	if (!ref)
		return NULL;
	tensor *out = tensor_new_uninit(dt, ref->ndim, oshape);
	if (!out)
		return NULL;
	int64_t outer = 1, inner = 1;
	for (int k = 0; k < d; k++)
		outer *= oshape[k];
	for (int k = d + 1; k < ref->ndim; k++)
		inner *= oshape[k];
	size_t es = dtype_size(dt);
	size_t orow = (size_t)(oshape[d] * inner) * es, pos = 0;
	for (int i = 0; i < n; i++) {
		const tensor *t = xs[i];
		if (t->numel == 0)
			continue;
		tensor *ct = tensor_as_dtype(t, dt);
		if (!ct) {
			tensor_decref(out);
			return NULL;
		}
		size_t chunk = (size_t)(t->shape[d] * inner) * es;
		for (int64_t o = 0; o < outer; o++)
			memcpy((char *)out->data + (size_t)o * orow + pos, (const char *)ct->data + (size_t)o * chunk,
			       chunk);
		pos += chunk;
		tensor_decref(ct);
	}
	return out;
}

int tensor_stack_shape(tensor *const *xs, int n, int dim, dtype *dt, int *ndim, int64_t *shape)
{
	if (n <= 0) {
		tj_error_set("stack expects a non-empty list of tensors");
		return -1;
	}
	for (int i = 1; i < n; i++) {
		if (!shape_equal(xs[0]->ndim, xs[0]->shape, xs[i]->ndim, xs[i]->shape)) {
			struct strbuf a = STRBUF_INIT, b = STRBUF_INIT;
			shape_format_list(xs[0]->ndim, xs[0]->shape, &a);
			shape_format_list(xs[i]->ndim, xs[i]->shape, &b);
			tj_error_set("stack expects each tensor to be equal size, but got %s at entry 0 and %s "
				     "at entry %d", a.buf, b.buf, i);
			sb_release(&a);
			sb_release(&b);
			return -1;
		}
	}
	int d = dim_wrap(dim, xs[0]->ndim + 1);
	if (d < 0)
		return -1;
	if (xs[0]->ndim >= TENSOR_MAX_DIMS) {
		tj_error_set("tensors have at most %d dimensions, got %d", TENSOR_MAX_DIMS, xs[0]->ndim + 1);
		return -1;
	}
	/* what cat of the unsqueezed tensors gives */
	*dt = xs[0]->dt;
	for (int i = 1; i < n; i++)
		if (xs[i]->dt > *dt)
			*dt = xs[i]->dt;
	*ndim = 0;
	for (int i = 0; i <= xs[0]->ndim; i++)
		shape[(*ndim)++] = i == d ? n : xs[0]->shape[i - (i > d)];
	return 0;
}

tensor *tensor_stack(tensor *const *xs, int n, int dim)
{
	dtype dt;
	int nd;
	int64_t shape[TENSOR_MAX_DIMS];
	if (tensor_stack_shape(xs, n, dim, &dt, &nd, shape) < 0)
		return NULL;
	int d = dim_wrap(dim, xs[0]->ndim + 1);
	tensor **us = calloc((size_t)n, sizeof *us);
	if (!us) {
		tj_error_set("out of memory");
		return NULL;
	}
	tensor *out = NULL;
	int made = 0;
	for (; made < n; made++)
		if (!(us[made] = tensor_unsqueeze(xs[made], d)))
			goto cleanup;
	out = tensor_cat(us, n, d);
cleanup:
	for (int i = 0; i < made; i++)
		tensor_decref(us[i]);
	free(us);
	return out;
}

/* ---- indexing ----
 * The specs become a strided view of x: each INT fixes an offset and drops
 * its dim, each SLICE keeps a dim with (start, length, step), NEWAXIS adds a
 * dim of size 1, ELLIPSIS stands for as many full slices as the specs
 * leave over, and dims after the last spec are kept whole. The view is
 * then either shared (it is one contiguous block of x) or copied. */

struct index_view {
	int ndim;
	int64_t shape[TENSOR_MAX_DIMS];
	int64_t stride[TENSOR_MAX_DIMS]; /* in x's elements; 0 for NEWAXIS */
	int64_t offset;
};

static int slice_bounds(const struct index_spec *s, int64_t size, int64_t *start, int64_t *len)
{
	int64_t step = s->step;
	if (step == 0) {
		tj_error_set("slice step cannot be zero");
		return -1;
	}
	if (step < 0) {
		tj_error_set("step must be greater than zero");
		return -1;
	}
	int64_t b = s->has_start ? s->start : 0, e = s->has_stop ? s->stop : size;
	if (b < 0)
		b = b + size < 0 ? 0 : b + size;
	if (b > size)
		b = size;
	if (e < 0)
		e = e + size < 0 ? 0 : e + size;
	if (e > size)
		e = size;
	*start = b;
	*len = e > b ? (e - b - 1) / step + 1 : 0;
	return 0;
}

static int index_view_build(int x_ndim, const int64_t *x_shape, const struct index_spec *specs, int n,
			    struct index_view *v)
{
	int consumed = 0, ellipses = 0, newaxes = 0;
	for (int i = 0; i < n; i++) {
		if (specs[i].kind == INDEX_INT || specs[i].kind == INDEX_SLICE)
			consumed++;
		else if (specs[i].kind == INDEX_ELLIPSIS)
			ellipses++;
		else
			newaxes++;
	}
	if (ellipses > 1) {
		tj_error_set("an index can only have a single ellipsis ('...')");
		return -1;
	}
	if (consumed > x_ndim) {
		tj_error_set("too many indices for tensor of dimension %d", x_ndim);
		return -1;
	}
	int64_t xs[TENSOR_MAX_DIMS];
	shape_contig_strides(x_ndim, x_shape, xs);
	v->ndim = 0;
	v->offset = 0;
	int d = 0; /* the next dim of x */
	for (int i = 0; i <= n; i++) {
		int full = 0; /* whole dims to keep here */
		if (i == n)
			full = x_ndim - d;
		else if (specs[i].kind == INDEX_ELLIPSIS)
			full = x_ndim - consumed;
		for (int k = 0; k < full; k++, d++) {
			if (v->ndim >= TENSOR_MAX_DIMS)
				goto too_many;
			v->shape[v->ndim] = x_shape[d];
			v->stride[v->ndim++] = xs[d];
		}
		if (i == n)
			break;
		const struct index_spec *s = &specs[i];
		switch (s->kind) {
		case INDEX_INT: {
			int64_t ix = s->i < 0 ? s->i + x_shape[d] : s->i;
			if (ix < 0 || ix >= x_shape[d]) {
				tj_error_set("index %lld is out of bounds for dimension %d with size %lld",
					     (long long)s->i, d, (long long)x_shape[d]);
				return -1;
			}
			v->offset += ix * xs[d];
			d++;
			break;
		}
		case INDEX_SLICE: {
			int64_t start, len;
			if (slice_bounds(s, x_shape[d], &start, &len) < 0)
				return -1;
			if (v->ndim >= TENSOR_MAX_DIMS)
				goto too_many;
			if (len > 0)
				v->offset += start * xs[d];
			v->shape[v->ndim] = len;
			/* (a huge step only ever selects one element) */
			v->stride[v->ndim++] = len > 1 ? xs[d] * s->step : xs[d];
			d++;
			break;
		}
		case INDEX_NEWAXIS:
			if (v->ndim >= TENSOR_MAX_DIMS)
				goto too_many;
			v->shape[v->ndim] = 1;
			v->stride[v->ndim++] = 0;
			break;
		case INDEX_ELLIPSIS:
			break;
		}
	}
	(void)newaxes;
	return 0;
too_many:
	tj_error_set("tensors have at most %d dimensions", TENSOR_MAX_DIMS);
	return -1;
}

/* the view reads one contiguous block in order */
static bool index_view_contiguous(const struct index_view *v)
{
	int64_t expect = 1;
	for (int i = v->ndim - 1; i >= 0; i--) {
		if (v->shape[i] == 0)
			return true;
		if (v->shape[i] != 1 && v->stride[i] != expect)
			return false;
		expect *= v->shape[i];
	}
	return true;
}

int tensor_index_shape(int x_ndim, const int64_t *x_shape, const struct index_spec *specs, int n, int *ndim,
		       int64_t *shape)
{
	struct index_view v;
	if (index_view_build(x_ndim, x_shape, specs, n, &v) < 0)
		return -1;
	*ndim = v.ndim;
	memcpy(shape, v.shape, sizeof v.shape);
	return 0;
}

tensor *tensor_index(const tensor *x, const struct index_spec *specs, int n)
{
	struct index_view v;
	if (index_view_build(x->ndim, x->shape, specs, n, &v) < 0)
		return NULL;
	if (index_view_contiguous(&v))
		return tensor_alias(x, v.ndim, v.shape, shape_numel(v.ndim, v.shape) ? v.offset : 0);
	tensor *out = tensor_new_uninit(x->dt, v.ndim, v.shape);
	if (out)
		strided_copy(out->data, (const char *)x->data + (size_t)v.offset * dtype_size(x->dt),
			     dtype_size(x->dt), v.ndim, v.shape, v.stride);
	return out;
}

tensor *tensor_index_backward(const tensor *grad, int x_ndim, const int64_t *x_shape,
			      const struct index_spec *specs, int n)
{
	struct index_view v;
	if (index_view_build(x_ndim, x_shape, specs, n, &v) < 0)
		return NULL;
	if (!shape_equal(grad->ndim, grad->shape, v.ndim, v.shape)) {
		struct strbuf a = STRBUF_INIT, b = STRBUF_INIT;
		shape_format(grad->ndim, grad->shape, &a);
		shape_format(v.ndim, v.shape, &b);
		tj_error_set("index backward: gradient of shape %s for an index result of shape %s", a.buf, b.buf);
		sb_release(&a);
		sb_release(&b);
		return NULL;
	}
	tensor *out = tensor_zeros(grad->dt, x_ndim, x_shape);
	if (!out || grad->numel == 0)
		return out;
	/* slices with step > 0 and single ints never select an element twice,
	 * and NEWAXIS dims have size 1, so a plain scatter is the adjoint */
	size_t es = dtype_size(grad->dt);
	strided_scatter((char *)out->data + (size_t)v.offset * es, v.stride, grad->data, es, v.ndim, v.shape);
	return out;
}
