/* tensor.c - tensor lifecycle, storage and its reuse cache, creation,
 * element access, dtype conversion, shapes in messages, strided helpers.
 *
 * Storage. A tensor owns a reference to a struct tensor_storage; views
 * (reshape, squeeze, contiguous index results) share it, which nobody can
 * observe because tensors are immutable. Buffers of at least
 * TENSOR_CACHE_MIN_BYTES come from a reuse cache: freed buffers wait in
 * size-bucketed free lists (4 size classes per power of two, so a class
 * wastes at most 25%) under a byte cap of min(1 GiB, RAM / 4). A loop such
 * as `y = x + x` on a big tensor then gets back the pages that the previous
 * iteration touched instead of faulting fresh memory every time. When the
 * cap is reached the biggest cached buffers are freed first.
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ops.h"
#include "tensor_impl.h"
#include "vm.h"

void (*tensor_grad_fn_release)(struct ag_node *node);

/* ---- the buffer reuse cache ---- */

#define CACHE_SUBCLASSES 4
#define CACHE_MIN_LOG2 16 /* 64 KiB */
#define CACHE_MAX_LOG2 47
#define CACHE_NBUCKETS ((CACHE_MAX_LOG2 - CACHE_MIN_LOG2 + 1) * CACHE_SUBCLASSES + 1)

static struct {
	pthread_mutex_t lock;
	void *head[CACHE_NBUCKETS]; /* free buffers, linked through their first word */
	size_t held;                /* bytes in the lists */
	size_t cap;
} cache = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* The size class of n >= 64 KiB: rounds up to a multiple of a quarter of
 * the power of two below it. Returns the bucket, or -1 for sizes that are
 * never cached. */
static int cache_class(size_t n, size_t *class_bytes)
{
	int p = 63 - __builtin_clzll((unsigned long long)n);
	if (p > CACHE_MAX_LOG2)
		return -1;
	size_t step = ((size_t)1 << p) / CACHE_SUBCLASSES;
	size_t r = (n + step - 1) & ~(step - 1);
	*class_bytes = r;
	/* r / step is in [4, 8]; 8 is the first class of the next power */
	return (p - CACHE_MIN_LOG2) * CACHE_SUBCLASSES + (int)(r / step) - CACHE_SUBCLASSES;
}

static size_t cache_cap(void)
{
	if (!cache.cap) {
		size_t cap = (size_t)1 << 30;
		long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
		if (pages > 0 && psize > 0 && (size_t)pages * (size_t)psize / 4 < cap)
			cap = (size_t)pages * (size_t)psize / 4;
		cache.cap = cap;
	}
	return cache.cap;
}

static void *cache_take(int bucket, size_t class_bytes)
{
	void *p = NULL;
	pthread_mutex_lock(&cache.lock);
	if (cache.head[bucket]) {
		p = cache.head[bucket];
		cache.head[bucket] = *(void **)p;
		cache.held -= class_bytes;
	}
	pthread_mutex_unlock(&cache.lock);
	return p;
}

/* frees cached buffers, biggest first, until held + need <= cap; locked */
static void cache_evict_locked(size_t need)
{
	size_t cap = cache_cap();
	for (int b = CACHE_NBUCKETS - 1; b >= 0 && cache.held + need > cap; b--) {
		while (cache.head[b] && cache.held + need > cap) {
			void *p = cache.head[b];
			size_t cb;
			cache.head[b] = *(void **)p;
			/* the class size of bucket b */
			int p2 = b / CACHE_SUBCLASSES + CACHE_MIN_LOG2;
			cb = ((size_t)1 << p2) / CACHE_SUBCLASSES * (size_t)(b % CACHE_SUBCLASSES + CACHE_SUBCLASSES);
			cache.held -= cb;
			free(p);
		}
	}
}

static void cache_give(void *p, size_t class_bytes)
{
	size_t cb;
	int b = cache_class(class_bytes, &cb);
	if (b < 0 || class_bytes > cache_cap()) {
		free(p);
		return;
	}
	pthread_mutex_lock(&cache.lock);
	cache_evict_locked(class_bytes);
	*(void **)p = cache.head[b];
	cache.head[b] = p;
	cache.held += class_bytes;
	pthread_mutex_unlock(&cache.lock);
}

size_t tensor_cache_bytes(void)
{
	pthread_mutex_lock(&cache.lock);
	size_t n = cache.held;
	pthread_mutex_unlock(&cache.lock);
	return n;
}

void tensor_cache_clear(void)
{
	pthread_mutex_lock(&cache.lock);
	for (int b = 0; b < CACHE_NBUCKETS; b++) {
		while (cache.head[b]) {
			void *p = cache.head[b];
			cache.head[b] = *(void **)p;
			free(p);
		}
	}
	cache.held = 0;
	pthread_mutex_unlock(&cache.lock);
}

/* ---- storage ---- */

#define INLINE_DATA_OFFSET ((sizeof(struct tensor_storage) + 31) & ~(size_t)31)

static struct tensor_storage *storage_new(size_t nbytes)
{
	struct tensor_storage *s;
	if (nbytes < TENSOR_CACHE_MIN_BYTES) {
		s = malloc(INLINE_DATA_OFFSET + nbytes);
		if (!s)
			goto oom;
		s->rc = 1;
		s->cached = false;
		s->nbytes = nbytes;
		s->ptr = (char *)s + INLINE_DATA_OFFSET;
		return s;
	}
	s = malloc(sizeof *s);
	if (!s)
		goto oom;
	size_t cb;
	int b = cache_class(nbytes, &cb);
	void *p = NULL;
	if (b >= 0) {
		p = cache_take(b, cb);
		if (!p) {
			p = aligned_alloc(64, cb);
			if (!p) { /* give the cache back to the system and retry */
				tensor_cache_clear();
				p = aligned_alloc(64, cb);
			}
		}
	} else {
		cb = nbytes;
		p = NULL; /* beyond the biggest class: far more than any machine has */
	}
	if (!p) {
		free(s);
		goto oom;
	}
	s->rc = 1;
	s->cached = b >= 0;
	s->nbytes = cb;
	s->ptr = p;
	return s;
oom:
	tj_error_set("out of memory allocating %zu bytes", nbytes);
	return NULL;
}

static void storage_decref(struct tensor_storage *s)
{
	if (!s || --s->rc)
		return;
	if (s->cached)
		cache_give(s->ptr, s->nbytes);
	free(s);
}

/* ---- lifecycle ---- */

void tensor_free(tensor *t)
{
	if (!t)
		return;
	if (t->grad)
		tensor_decref(t->grad);
	if (t->grad_fn && tensor_grad_fn_release)
		tensor_grad_fn_release(t->grad_fn);
	storage_decref(t->storage);
	free(t);
}

void tensor_decref(tensor *t)
{
	if (t && --t->hdr.rc == 0)
		tensor_free(t);
}

int64_t shape_numel(int ndim, const int64_t *shape)
{
	int64_t n = 1;
	for (int i = 0; i < ndim; i++)
		n *= shape[i];
	return n;
}

void shape_contig_strides(int ndim, const int64_t *shape, int64_t *strides)
{
	int64_t s = 1;
	for (int i = ndim - 1; i >= 0; i--) {
		strides[i] = s;
		s *= shape[i];
	}
}


static tensor *header_new(dtype dt, int ndim, const int64_t *shape)
{
	/* a tensor is a tj value from birth: the VM reaches it through the
	 * tensor layer's hooks, installed here with the first tensor */
	if (__builtin_expect(!vm_tensor_hooks, 0))
		ops_install_hooks();
	tensor *t = calloc(1, sizeof *t);
	if (!t) {
		tj_error_set("out of memory");
		return NULL;
	}
	t->hdr.rc = 1;
	t->dt = dt;
	t->ndim = ndim;
	for (int i = 0; i < ndim; i++)
		t->shape[i] = shape[i];
	t->numel = shape_numel(ndim, shape);
	t->is_leaf = true;
	return t;
}

tensor *tensor_new_uninit(dtype dt, int ndim, const int64_t *shape)
{
	/* shapes made by broadcasting or expand can be absurd: check them all */
	if (tensor_check_shape(dt, ndim, shape) < 0)
		return NULL;
	tensor *t = header_new(dt, ndim, shape);
	if (!t)
		return NULL;
	t->storage = storage_new((size_t)t->numel * dtype_size(dt));
	if (!t->storage) {
		free(t);
		return NULL;
	}
	t->data = t->storage->ptr;
	return t;
}

tensor *tensor_alias(const tensor *base, int ndim, const int64_t *shape, int64_t elem_offset)
{
	tensor *t = header_new(base->dt, ndim, shape);
	if (!t)
		return NULL;
	t->storage = base->storage;
	t->storage->rc++;
	t->data = (char *)base->data + elem_offset * (int64_t)dtype_size(base->dt);
	return t;
}

/* ---- creation ---- */

int tensor_check_sizes(int ndim, const int64_t *shape)
{
	if (ndim < 0 || ndim > TENSOR_MAX_DIMS) {
		tj_error_set("tensors have at most %d dimensions, got %d", TENSOR_MAX_DIMS, ndim);
		return -1;
	}
	for (int i = 0; i < ndim; i++) {
		if (shape[i] < 0) {
			struct strbuf sb = STRBUF_INIT;
			shape_format_list(ndim, shape, &sb);
			tj_error_set("trying to create tensor with negative dimension %lld: %s",
				     (long long)shape[i], sb.buf);
			sb_release(&sb);
			return -1;
		}
	}
	return 0;
}

int tensor_check_shape(dtype dt, int ndim, const int64_t *shape)
{
	if (tensor_check_sizes(ndim, shape) < 0)
		return -1;
	/* total bytes must fit comfortably in a size_t and an int64 */
	uint64_t n = dtype_size(dt);
	for (int i = 0; i < ndim; i++) {
		if (shape[i] && n > (UINT64_C(1) << 56) / (uint64_t)shape[i]) {
			struct strbuf sb = STRBUF_INIT;
			shape_format(ndim, shape, &sb);
			tj_error_set("tensor of shape %s is too large", sb.buf);
			sb_release(&sb);
			return -1;
		}
		n *= (uint64_t)shape[i];
	}
	return 0;
}

tensor *tensor_empty(dtype dt, int ndim, const int64_t *shape)
{
	return tensor_new_uninit(dt, ndim, shape);
}

tensor *tensor_zeros(dtype dt, int ndim, const int64_t *shape)
{
	tensor *t = tensor_empty(dt, ndim, shape);
	if (t)
		memset(t->data, 0, (size_t)t->numel * dtype_size(dt));
	return t;
}

/* fills n elements of dtype dt with v */
static void fill(void *data, dtype dt, int64_t n, double v)
{
	switch (dt) {
	case DT_BOOL: memset(data, v != 0, (size_t)n); break;
	case DT_INT64: { int64_t x = f2i(v), *p = data; VLOOP(n, i, p[i] = x); break; }
	case DT_FLOAT32: { float x = (float)v, *p = data; VLOOP(n, i, p[i] = x); break; }
	case DT_FLOAT64: { double *p = data; VLOOP(n, i, p[i] = v); break; }
	default: break;
	}
}

tensor *tensor_full(dtype dt, int ndim, const int64_t *shape, double v)
{
	tensor *t = tensor_empty(dt, ndim, shape);
	if (t)
		fill(t->data, dt, t->numel, v);
	return t;
}

tensor *tensor_scalar(dtype dt, double v)
{
	return tensor_full(dt, 0, NULL, v);
}

tensor *tensor_scalar_int(int64_t v)
{
	tensor *t = tensor_new_uninit(DT_INT64, 0, NULL);
	if (t)
		*(int64_t *)t->data = v;
	return t;
}

/* PyTorch: size = ceil((stop - start) / step); element i = start + i * step */
int tensor_arange_len(double start, double stop, double step, int64_t *n)
{
	if (step == 0 || isnan(step)) {
		tj_error_set("arange: step must be nonzero");
		return -1;
	}
	if (!isfinite(start) || !isfinite(stop)) {
		tj_error_set("arange: unsupported range: %g -> %g", start, stop);
		return -1;
	}
	if ((step > 0 && stop < start) || (step < 0 && stop > start)) {
		tj_error_set("arange: upper bound and larger bound inconsistent with step sign");
		return -1;
	}
	double len = ceil((stop - start) / step);
	if (len > 9.0e15) {
		tj_error_set("arange: too many elements (%g)", len);
		return -1;
	}
	*n = (int64_t)len;
	return 0;
}

tensor *tensor_arange(double start, double stop, double step, dtype dt)
{
	int64_t n;
	if (tensor_arange_len(start, stop, step, &n) < 0)
		return NULL;
	tensor *t = tensor_empty(dt, 1, &n);
	if (!t)
		return NULL;
	switch (dt) {
	case DT_BOOL: { uint8_t *p = t->data; for (int64_t i = 0; i < n; i++) p[i] = start + (double)i * step != 0; break; }
	case DT_INT64: {
		int64_t *p = t->data;
		if (start == floor(start) && step == floor(step) && fabs(start) < 9.0e18 && fabs(step) < 9.0e18) {
			uint64_t s = (uint64_t)(int64_t)start, d = (uint64_t)(int64_t)step;
			for (int64_t i = 0; i < n; i++) /* exact, and wrapping rather than undefined */
				p[i] = (int64_t)(s + (uint64_t)i * d);
		} else {
			for (int64_t i = 0; i < n; i++)
				p[i] = f2i(start + (double)i * step);
		}
		break;
	}
	case DT_FLOAT32: { float *p = t->data; for (int64_t i = 0; i < n; i++) p[i] = (float)(start + (double)i * step); break; }
	case DT_FLOAT64: { double *p = t->data; for (int64_t i = 0; i < n; i++) p[i] = start + (double)i * step; break; }
	default: break;
	}
	return t;
}

tensor *tensor_eye(int64_t n, dtype dt)
{
	return tensor_eye_nm(n, n, dt);
}

tensor *tensor_eye_nm(int64_t n, int64_t m, dtype dt)
{
	if (n < 0 || m < 0) {
		tj_error_set("eye: %s must be greater or equal to 0, got %lld", n < 0 ? "n" : "m",
			     (long long)(n < 0 ? n : m));
		return NULL;
	}
	int64_t shape[2] = {n, m};
	tensor *t = tensor_zeros(dt, 2, shape);
	if (!t)
		return NULL;
	size_t es = dtype_size(dt);
	for (int64_t i = 0; i < n && i < m; i++) {
		char *p = (char *)t->data + (size_t)(i * m + i) * es;
		switch (dt) {
		case DT_BOOL: *(uint8_t *)p = 1; break;
		case DT_INT64: *(int64_t *)p = 1; break;
		case DT_FLOAT32: *(float *)p = 1; break;
		case DT_FLOAT64: *(double *)p = 1; break;
		default: break;
		}
	}
	return t;
}

tensor *tensor_copy(const tensor *x)
{
	tensor *t = tensor_new_uninit(x->dt, x->ndim, x->shape);
	if (t)
		memcpy(t->data, x->data, (size_t)x->numel * dtype_size(x->dt));
	return t;
}

/* ---- element access ---- */

double tensor_get_double(const tensor *t, int64_t i)
{
	switch (t->dt) {
	case DT_BOOL: return ((const uint8_t *)t->data)[i];
	case DT_INT64: return (double)((const int64_t *)t->data)[i];
	case DT_FLOAT32: return ((const float *)t->data)[i];
	case DT_FLOAT64: return ((const double *)t->data)[i];
	default: return 0;
	}
}

int64_t tensor_get_int(const tensor *t, int64_t i)
{
	switch (t->dt) {
	case DT_BOOL: return ((const uint8_t *)t->data)[i];
	case DT_INT64: return ((const int64_t *)t->data)[i];
	case DT_FLOAT32: return f2i(((const float *)t->data)[i]);
	case DT_FLOAT64: return f2i(((const double *)t->data)[i]);
	default: return 0;
	}
}

int tensor_item(const tensor *t, double *out_double, int64_t *out_int)
{
	if (t->numel != 1) {
		tj_error_set("a Tensor with %lld elements cannot be converted to Scalar",
			     (long long)t->numel);
		return -1;
	}
	if (out_double)
		*out_double = tensor_get_double(t, 0);
	if (out_int)
		*out_int = tensor_get_int(t, 0);
	return 0;
}

/* ---- dtype conversion: one loop per (from, to) pair ---- */

typedef void (*convert_fn)(int64_t n, const void *src, void *dst);

#define CONV(NAME, S, D, EXPR)                                                   \
	static void NAME(int64_t n, const void *src_, void *dst_)                \
	{                                                                        \
		const S *restrict src = src_;                                    \
		D *restrict dst = dst_;                                          \
		VLOOP(n, i, S v = src[i]; dst[i] = (EXPR));                      \
	}
CONV(conv_b_b, uint8_t, uint8_t, v)
CONV(conv_b_i, uint8_t, int64_t, (int64_t)v)
CONV(conv_b_f, uint8_t, float, (float)v)
CONV(conv_b_d, uint8_t, double, (double)v)
CONV(conv_i_b, int64_t, uint8_t, v != 0)
CONV(conv_i_i, int64_t, int64_t, v)
CONV(conv_i_f, int64_t, float, (float)v)
CONV(conv_i_d, int64_t, double, (double)v)
CONV(conv_f_b, float, uint8_t, v != 0)
CONV(conv_f_i, float, int64_t, f2i(v))
CONV(conv_f_f, float, float, v)
CONV(conv_f_d, float, double, (double)v)
CONV(conv_d_b, double, uint8_t, v != 0)
CONV(conv_d_i, double, int64_t, f2i(v))
CONV(conv_d_f, double, float, (float)v)
CONV(conv_d_d, double, double, v)
#undef CONV

static const convert_fn convert_table[DT_COUNT][DT_COUNT] = {
	{conv_b_b, conv_b_i, conv_b_f, conv_b_d},
	{conv_i_b, conv_i_i, conv_i_f, conv_i_d},
	{conv_f_b, conv_f_i, conv_f_f, conv_f_d},
	{conv_d_b, conv_d_i, conv_d_f, conv_d_d},
};

tensor *tensor_to(const tensor *x, dtype dt)
{
	tensor *t = tensor_new_uninit(dt, x->ndim, x->shape);
	if (!t)
		return NULL;
	if (x->dt == dt)
		memcpy(t->data, x->data, (size_t)x->numel * dtype_size(dt));
	else
		convert_table[x->dt][dt](x->numel, x->data, t->data);
	return t;
}

tensor *tensor_as_dtype(const tensor *x, dtype dt)
{
	if (x->dt == dt) {
		tensor *t = (tensor *)x;
		tensor_incref(t);
		return t;
	}
	return tensor_to(x, dt);
}

/* ---- shapes in messages ---- */

void shape_format(int ndim, const int64_t *shape, struct strbuf *out)
{
	sb_putc(out, '(');
	for (int i = 0; i < ndim; i++)
		sb_printf(out, i ? ", %lld" : "%lld", (long long)shape[i]);
	if (ndim == 1)
		sb_putc(out, ',');
	sb_putc(out, ')');
}

void shape_format_list(int ndim, const int64_t *shape, struct strbuf *out)
{
	sb_putc(out, '[');
	for (int i = 0; i < ndim; i++)
		sb_printf(out, i ? ", %lld" : "%lld", (long long)shape[i]);
	sb_putc(out, ']');
}

bool shape_equal(int na, const int64_t *a, int nb, const int64_t *b)
{
	if (na != nb)
		return false;
	for (int i = 0; i < na; i++)
		if (a[i] != b[i])
			return false;
	return true;
}

int dim_wrap(int dim, int ndim)
{
	int n = ndim > 0 ? ndim : 1;
	if (dim < -n || dim >= n) {
		tj_error_set("dimension out of range (expected to be in range of [%d, %d], but got %d)",
			     -n, n - 1, dim);
		return -1;
	}
	return dim < 0 ? dim + n : dim;
}

void error_broadcast(int na, const int64_t *a, int nb, const int64_t *b)
{
	struct strbuf sa = STRBUF_INIT, sb = STRBUF_INIT;
	shape_format(na, a, &sa);
	shape_format(nb, b, &sb);
	tj_error_set("cannot broadcast shapes %s and %s", sa.buf, sb.buf);
	sb_release(&sa);
	sb_release(&sb);
}

int tensor_broadcast_shape(int na, const int64_t *a, int nb, const int64_t *b, int *nout, int64_t *out)
{
	int n = na > nb ? na : nb;
	int64_t res[TENSOR_MAX_DIMS];
	for (int i = 0; i < n; i++) {
		int ia = na - n + i, ib = nb - n + i;
		int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
		if (da == db || db == 1)
			res[i] = da;
		else if (da == 1)
			res[i] = db;
		else {
			error_broadcast(na, a, nb, b);
			return -1;
		}
	}
	*nout = n;
	memcpy(out, res, sizeof(int64_t) * (size_t)n);
	return 0;
}

void broadcast_strides(const tensor *t, int ndim, const int64_t *out_shape, int64_t *strides)
{
	int64_t cs[TENSOR_MAX_DIMS];
	shape_contig_strides(t->ndim, t->shape, cs);
	for (int i = 0; i < ndim; i++) {
		int j = t->ndim - ndim + i;
		strides[i] = (j < 0 || (t->shape[j] == 1 && out_shape[i] != 1)) ? 0 : cs[j];
	}
}

/* ---- the strided iterator ---- */

void titer_init(struct titer *it, int ndim, const int64_t *shape, int nops,
		int64_t strides[][TENSOR_MAX_DIMS])
{
	it->nops = nops;
	/* drop size-1 dims, then merge a dim into the next when every operand
	 * steps through both as through one */
	int n = 0;
	for (int d = 0; d < ndim; d++) {
		if (shape[d] == 1)
			continue;
		if (n > 0) {
			bool merge = true;
			for (int k = 0; k < nops; k++)
				if (it->stride[k][n - 1] != strides[k][d] * shape[d])
					merge = false;
			if (merge) {
				it->shape[n - 1] *= shape[d];
				for (int k = 0; k < nops; k++)
					it->stride[k][n - 1] = strides[k][d];
				continue;
			}
		}
		it->shape[n] = shape[d];
		for (int k = 0; k < nops; k++)
			it->stride[k][n] = strides[k][d];
		n++;
	}
	if (n == 0) {
		it->shape[0] = 1;
		for (int k = 0; k < nops; k++)
			it->stride[k][0] = 0;
		n = 1;
	}
	it->ndim = n;
	it->inner = it->shape[n - 1];
	it->outer = 1;
	for (int d = 0; d < n - 1; d++)
		it->outer *= it->shape[d];
	for (int d = 0; d < n; d++)
		it->idx[d] = 0;
	for (int k = 0; k < nops; k++) {
		it->off[k] = 0;
		it->istride[k] = it->stride[k][n - 1];
	}
	for (int d = 0; d < n; d++)
		if (it->shape[d] == 0)
			it->outer = 0;
}

#define COPY_KERNEL(NAME, T)                                                             \
	static void NAME(int64_t n, T *restrict d, const T *restrict s, int64_t ss)       \
	{                                                                                 \
		if (ss == 1)                                                              \
			memcpy(d, s, (size_t)n * sizeof(T));                              \
		else if (ss == 0) {                                                       \
			T v = s[0];                                                       \
			VLOOP(n, i, d[i] = v);                                            \
		} else                                                                    \
			for (int64_t i = 0; i < n; i++)                                   \
				d[i] = s[i * ss];                                         \
	}
COPY_KERNEL(copy1, uint8_t)
COPY_KERNEL(copy4, uint32_t)
COPY_KERNEL(copy8, uint64_t)
#undef COPY_KERNEL

/* A 2-D transpose-like copy in tiles, so that neither side strides through
 * memory a whole row at a time. rows x cols of dst, src[r*rs + c*cs]. */
#define TILE_KERNEL(NAME, T)                                                                 \
	static void NAME(T *restrict d, const T *restrict s, int64_t rows, int64_t cols,         \
			 int64_t rs, int64_t cs)                                                 \
	{                                                                                     \
		const int64_t B = 32;                                                         \
		for (int64_t r0 = 0; r0 < rows; r0 += B)                                      \
			for (int64_t c0 = 0; c0 < cols; c0 += B) {                            \
				int64_t r1 = r0 + B < rows ? r0 + B : rows;                   \
				int64_t c1 = c0 + B < cols ? c0 + B : cols;                   \
				for (int64_t r = r0; r < r1; r++)                             \
					for (int64_t c = c0; c < c1; c++)                     \
						d[r * cols + c] = s[r * rs + c * cs];         \
			}                                                                     \
	}
TILE_KERNEL(tile1, uint8_t)
TILE_KERNEL(tile4, uint32_t)
TILE_KERNEL(tile8, uint64_t)
#undef TILE_KERNEL

void strided_copy(void *dst, const void *src, size_t elsize, int ndim, const int64_t *shape,
		  const int64_t *src_strides)
{
	int64_t st[2][TENSOR_MAX_DIMS];
	shape_contig_strides(ndim, shape, st[0]);
	for (int i = 0; i < ndim; i++)
		st[1][i] = src_strides[i];
	struct titer it;
	titer_init(&it, ndim, shape, 2, st);
	if (it.outer == 0)
		return;
	/* a transposing copy: the inner run of the source is long-strided while
	 * the next dim out is contiguous in the source; do it in tiles */
	if (it.ndim >= 2 && it.istride[1] != 1 && it.stride[1][it.ndim - 2] == 1 && it.inner >= 8 &&
	    it.shape[it.ndim - 2] >= 8) {
		int64_t rows = it.shape[it.ndim - 2], cols = it.inner;
		int64_t blocks = it.outer / rows;
		int64_t rs = it.stride[1][it.ndim - 2], cs = it.istride[1];
		/* walk the dims above the tile with the iterator: step rows at a time */
		for (int64_t b = 0; b < blocks; b++) {
			char *d = (char *)dst + (size_t)it.off[0] * elsize;
			const char *s = (const char *)src + (size_t)it.off[1] * elsize;
			switch (elsize) {
			case 1: tile1((uint8_t *)d, (const uint8_t *)s, rows, cols, rs, cs); break;
			case 4: tile4((uint32_t *)d, (const uint32_t *)s, rows, cols, rs, cs); break;
			default: tile8((uint64_t *)d, (const uint64_t *)s, rows, cols, rs, cs); break;
			}
			for (int64_t r = 0; r < rows; r++)
				titer_next(&it);
		}
		return;
	}
	for (int64_t o = 0; o < it.outer; o++) {
		char *d = (char *)dst + (size_t)it.off[0] * elsize;
		const char *s = (const char *)src + (size_t)it.off[1] * elsize;
		switch (elsize) {
		case 1: copy1(it.inner, (uint8_t *)d, (const uint8_t *)s, it.istride[1]); break;
		case 4: copy4(it.inner, (uint32_t *)d, (const uint32_t *)s, it.istride[1]); break;
		default: copy8(it.inner, (uint64_t *)d, (const uint64_t *)s, it.istride[1]); break;
		}
		titer_next(&it);
	}
}

void strided_scatter(void *dst, const int64_t *dst_strides, const void *src, size_t elsize, int ndim,
		     const int64_t *shape)
{
	int64_t st[2][TENSOR_MAX_DIMS];
	shape_contig_strides(ndim, shape, st[1]);
	for (int i = 0; i < ndim; i++)
		st[0][i] = dst_strides[i];
	struct titer it;
	titer_init(&it, ndim, shape, 2, st);
	for (int64_t o = 0; o < it.outer; o++) {
		char *d = (char *)dst + (size_t)it.off[0] * elsize;
		const char *s = (const char *)src + (size_t)it.off[1] * elsize;
		int64_t ds = it.istride[0];
		switch (elsize) {
		case 1: for (int64_t i = 0; i < it.inner; i++) ((uint8_t *)d)[i * ds] = ((const uint8_t *)s)[i]; break;
		case 4: for (int64_t i = 0; i < it.inner; i++) ((uint32_t *)d)[i * ds] = ((const uint32_t *)s)[i]; break;
		default: for (int64_t i = 0; i < it.inner; i++) ((uint64_t *)d)[i * ds] = ((const uint64_t *)s)[i]; break;
		}
		titer_next(&it);
	}
}
