/* tensor_io.c - tensors to and from a file (tensor_io.h). */
#define _GNU_SOURCE
#include "tensor_io.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "error.h"
#include "util.h"
#include "vm.h"

/* ---- little-endian numbers ---- */

static bool host_is_le(void)
{
	const uint16_t one = 1;
	return *(const uint8_t *)&one == 1;
}

static uint64_t get_le(const uint8_t *p, int nbytes)
{
	uint64_t v = 0;
	for (int i = 0; i < nbytes; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* v as nbytes little-endian bytes to f; false when the write failed */
static bool put_le(FILE *f, uint64_t v, int nbytes)
{
	uint8_t b[8];
	for (int i = 0; i < nbytes; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	return fwrite(b, 1, (size_t)nbytes, f) == (size_t)nbytes;
}

/* t's elements to f in little-endian order */
static bool put_data(FILE *f, const tensor *t)
{
	size_t es = dtype_size(t->dt), n = (size_t)t->numel * es;
	if (host_is_le() || es == 1)
		return fwrite(t->data, 1, n, f) == n;
	const uint8_t *p = t->data;
	for (size_t i = 0; i < n; i += es) {
		uint8_t b[8];
		for (size_t k = 0; k < es; k++)
			b[k] = p[i + es - 1 - k];
		if (fwrite(b, 1, es, f) != es)
			return false;
	}
	return true;
}

static void get_data(tensor *t, const uint8_t *p)
{
	size_t es = dtype_size(t->dt), n = (size_t)t->numel * es;
	if (host_is_le() || es == 1) {
		memcpy(t->data, p, n);
		return;
	}
	uint8_t *d = t->data;
	for (size_t i = 0; i < n; i += es)
		for (size_t b = 0; b < es; b++)
			d[i + b] = p[i + es - 1 - b];
}

/* ---- saving ---- */

static bool write_all(FILE *f, tensor *const *ts, int n)
{
	bool ok = fwrite(TENSOR_IO_MAGIC, 1, 4, f) == 4 && put_le(f, (uint32_t)n, 4);
	for (int i = 0; ok && i < n; i++) {
		const tensor *t = ts[i];
		ok = put_le(f, (uint32_t)t->dt, 4) && put_le(f, (uint32_t)t->ndim, 4);
		for (int d = 0; ok && d < t->ndim; d++)
			ok = put_le(f, (uint64_t)t->shape[d], 8);
		ok = ok && put_data(f, t);
	}
	return ok;
}

int tensor_io_save(const char *path, tensor *const *ts, int n)
{
	char *tmp = util_malloc(strlen(path) + 5);
	if (!tmp) {
		tj_error_set("out of memory");
		return -1;
	}
	sprintf(tmp, "%s.tmp", path);
	int rc = -1;
	FILE *f = fopen(tmp, "wb");
	if (!f || !write_all(f, ts, n)) {
		tj_error_set("cannot write '%s': %s", path, strerror(errno));
		goto cleanup;
	}
	int closed = fclose(f);
	f = NULL;
	if (closed != 0 || rename(tmp, path) < 0) {
		tj_error_set("cannot write '%s': %s", path, strerror(errno));
		goto cleanup;
	}
	rc = 0;
cleanup:
	if (f)
		fclose(f);
	if (rc < 0)
		remove(tmp);
	free(tmp);
	return rc;
}

/* ---- loading ---- */

/* the whole file (malloc'd) in *buf, *len; -1 with the error set */
static int read_all(const char *path, uint8_t **buf, size_t *len)
{
	*buf = NULL;
	*len = 0;
	FILE *f = fopen(path, "rb");
	if (!f) {
		tj_error_set("cannot read '%s': %s", path, strerror(errno));
		return -1;
	}
	struct stat st;
	int fs = fstat(fileno(f), &st);
	if (fs < 0 || !S_ISREG(st.st_mode)) {
		tj_error_set("cannot read '%s': %s", path,
			     fs < 0 ? strerror(errno) : S_ISDIR(st.st_mode) ? strerror(EISDIR) : "not a regular file");
		fclose(f);
		return -1;
	}
	long size = (long)st.st_size;
	uint8_t *b = util_malloc((size_t)size + 1);
	if (!b) {
		tj_error_set("'%s': out of memory for its %ld bytes", path, size);
		fclose(f);
		return -1;
	}
	size_t got = fread(b, 1, (size_t)size, f);
	bool failed = ferror(f) || got != (size_t)size;
	fclose(f);
	if (failed) {
		tj_error_set("cannot read '%s'", path);
		free(b);
		return -1;
	}
	*buf = b;
	*len = got;
	return 0;
}

/* a cursor over the file's bytes */
struct reader {
	const char *path;
	const uint8_t *p;
	size_t left;
	int index;                /* the tensor being read */
};

static int take(struct reader *r, size_t n, const uint8_t **out)
{
	if (r->left < n) {
		if (r->index < 0)
			tj_error_set("'%s' is truncated: %zu bytes where its header needs %zu", r->path, r->left, n);
		else
			tj_error_set("'%s' is truncated in tensor %d", r->path, r->index);
		return -1;
	}
	*out = r->p;
	r->p += n;
	r->left -= n;
	return 0;
}

/* the next tensor; NULL with the error set */
static tensor *read_tensor(struct reader *r)
{
	const uint8_t *p;
	if (take(r, 8, &p) < 0)
		return NULL;
	uint32_t dt = (uint32_t)get_le(p, 4), rank = (uint32_t)get_le(p + 4, 4);
	if (dt >= DT_COUNT) {
		tj_error_set("'%s': tensor %d has a bad dtype %u (0 to %d)", r->path, r->index, dt, DT_COUNT - 1);
		return NULL;
	}
	if (rank > TENSOR_MAX_DIMS) {
		tj_error_set("'%s': tensor %d has rank %u (at most %d)", r->path, r->index, rank, TENSOR_MAX_DIMS);
		return NULL;
	}
	if (take(r, 8 * (size_t)rank, &p) < 0)
		return NULL;
	int64_t shape[TENSOR_MAX_DIMS];
	uint64_t numel = 1;
	bool overflow = false;
	for (uint32_t d = 0; d < rank; d++) {
		uint64_t s = get_le(p + 8 * d, 8);
		shape[d] = (int64_t)s;
		if (s > (uint64_t)INT64_MAX / 8 || (s && numel > (uint64_t)INT64_MAX / 8 / s))
			overflow = true;
		else
			numel *= s;
	}
	if (overflow) {
		tj_error_set("'%s': the sizes of tensor %d overflow", r->path, r->index);
		return NULL;
	}
	size_t bytes = (size_t)numel * dtype_size((dtype)dt);
	if (bytes > r->left) {
		tj_error_set("'%s' is truncated in tensor %d: %zu bytes of data where its sizes need %zu", r->path,
			     r->index, r->left, bytes);
		return NULL;
	}
	tensor *t = tensor_empty((dtype)dt, (int)rank, shape);
	if (!t)
		return NULL;
	take(r, bytes, &p);
	if (dt == DT_BOOL) {
		for (size_t i = 0; i < bytes; i++) {
			if (p[i] > 1) {
				tj_error_set("'%s': tensor %d has a bool element %u (0 or 1)", r->path, r->index, p[i]);
				tensor_decref(t);
				return NULL;
			}
		}
	}
	get_data(t, p);
	return t;
}

int tensor_io_load(const char *path, tensor ***out, int *n)
{
	*out = NULL;
	*n = 0;
	uint8_t *buf;
	size_t len;
	if (read_all(path, &buf, &len) < 0)
		return -1;
	struct reader r = {path, buf, len, -1};
	tensor **ts = NULL;
	int got = 0, rc = -1;
	const uint8_t *p;
	if (take(&r, 8, &p) < 0)
		goto cleanup;
	if (memcmp(p, TENSOR_IO_MAGIC, 4) != 0) {
		tj_error_set("'%s' is not a tensor file (no '" TENSOR_IO_MAGIC "' header)", path);
		goto cleanup;
	}
	uint32_t count = (uint32_t)get_le(p + 4, 4);
	/* each tensor takes 8 bytes at least: a count beyond that is a lie */
	if (count > r.left / 8) {
		tj_error_set("'%s' is truncated: it says %u tensors in %zu bytes", path, count, r.left);
		goto cleanup;
	}
	ts = util_calloc((size_t)count + 1, sizeof *ts);
	if (!ts)
		goto cleanup;
	for (r.index = 0; r.index < (int)count; r.index++) {
		if (!(ts[got] = read_tensor(&r)))
			goto cleanup;
		got++;
	}
	if (r.left) {
		tj_error_set("'%s' has %zu bytes after its %u tensors", path, r.left, count);
		goto cleanup;
	}
	*out = ts;
	*n = got;
	ts = NULL;
	rc = 0;
cleanup:
	for (int i = 0; ts && i < got; i++)
		tensor_decref(ts[i]);
	free(ts);
	free(buf);
	return rc;
}

/* ---- the builtins ---- */

static bool no_keywords(const char *fname, value kwnames)
{
	if (kwnames.tag == VAL_TUPLE && val_tuple(kwnames)->len) {
		tj_error_set("%s() takes no keyword arguments", fname);
		return false;
	}
	return true;
}

/* save(path, tensors): tensors a list or tuple of tensors */
static value b_save(struct vm *vm, const value *args, int nargs, value kwnames)
{
	(void)vm;
	if (!no_keywords("save", kwnames))
		return val_err();
	if (nargs != 2)
		return vm_raise("save() takes exactly 2 arguments (path, tensors) (%d given)", nargs);
	if (args[0].tag != VAL_STR)
		return vm_raise("save() path must be a str, not %s", val_type_name(args[0]));
	value seq = args[1];
	const value *items;
	size_t n;
	if (seq.tag == VAL_LIST) {
		items = val_list(seq)->items;
		n = val_list(seq)->len;
	} else if (seq.tag == VAL_TUPLE) {
		items = val_tuple(seq)->items;
		n = val_tuple(seq)->len;
	} else {
		return vm_raise("save() tensors must be a list or tuple of tensors, not %s", val_type_name(seq));
	}
	if (n > INT32_MAX)
		return vm_raise("save(): too many tensors");
	tensor **ts = util_calloc(n + 1, sizeof *ts);
	if (!ts)
		return vm_raise("out of memory");
	for (size_t i = 0; i < n; i++) {
		if (items[i].tag != VAL_TENSOR) {
			free(ts);
			return vm_raise("save() item %zu is %s, not a tensor", i, val_type_name(items[i]));
		}
		ts[i] = val_as_tensor(items[i]);
	}
	int rc = tensor_io_save(val_str(args[0])->data, ts, (int)n);
	free(ts);
	return rc < 0 ? val_err() : val_none();
}

/* load(path): the list of tensors save() wrote */
static value b_load(struct vm *vm, const value *args, int nargs, value kwnames)
{
	(void)vm;
	if (!no_keywords("load", kwnames))
		return val_err();
	if (nargs != 1)
		return vm_raise("load() takes exactly one argument (%d given)", nargs);
	if (args[0].tag != VAL_STR)
		return vm_raise("load() path must be a str, not %s", val_type_name(args[0]));
	tensor **ts;
	int n;
	if (tensor_io_load(val_str(args[0])->data, &ts, &n) < 0)
		return val_err();
	value l = list_new((size_t)n);
	for (int i = 0; i < n; i++) {
		if (val_is_err(l))
			tensor_decref(ts[i]);
		else
			list_append(val_list(l), val_tensor(ts[i]));
	}
	free(ts);
	return l;
}

void tensor_io_install(struct vm *vm)
{
	static const struct builtin_def defs[] = {{"save", b_save}, {"load", b_load}};
	for (size_t i = 0; i < sizeof defs / sizeof *defs; i++) {
		value b = builtin_new(defs[i].name, defs[i].fn);
		vm_set_builtin(vm, defs[i].name, b);
		val_decref(b);
	}
}
