/* tensor_io.h - a list of tensors to and from a file (the sidecar of
 * tjit-minify's repros, doc/minify.md; save() and load() of the language).
 *
 * The format: the 4 bytes "tjt1", the number of tensors (uint32), then
 * per tensor its dtype (uint32: 0 bool, 1 int64, 2 float32, 3 float64,
 * dtype.h's order), its rank (uint32, at most 8), its sizes (int64 each)
 * and its elements in row-major order; every number little-endian. A
 * file is read whole and checked before any tensor is made: a short
 * file, another header, a bad dtype or rank, sizes that overflow or do
 * not match the file's length, a bool element other than 0 or 1 are
 * errors, never a crash.
 */
#ifndef TJ_TENSOR_IO_H
#define TJ_TENSOR_IO_H

#include "tensor.h"

struct vm;

#define TENSOR_IO_MAGIC "tjt1"

/* Writes ts[0, n) to path (through path.tmp, renamed: a reader never
 * sees half a file). 0, or -1 with tj_error_set ("cannot write 'p': ..."). */
int tensor_io_save(const char *path, tensor *const *ts, int n);
/* Reads path: *out a malloc'd array of *n new tensors (each a
 * reference). 0, or -1 with tj_error_set naming path. */
int tensor_io_load(const char *path, tensor ***out, int *n);

/* save(path, tensors) and load(path), builtins of vm */
void tensor_io_install(struct vm *vm);

#endif
