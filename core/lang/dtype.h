/* dtype.h - the four tensor element types, in promotion order. */
#ifndef TJ_DTYPE_H
#define TJ_DTYPE_H

#include <stddef.h>

typedef enum dtype {
	DT_BOOL,    /* uint8_t, 0 or 1 */
	DT_INT64,   /* int64_t */
	DT_FLOAT32, /* float (the default dtype) */
	DT_FLOAT64, /* double */
	DT_COUNT
} dtype;

static inline size_t dtype_size(dtype dt)
{
	return dt == DT_BOOL ? 1 : dt == DT_FLOAT32 ? 4 : 8;
}
static inline const char *dtype_name(dtype dt)
{
	static const char *names[] = {"bool", "int64", "float32", "float64"};
	return names[dt];
}
static inline int dtype_is_float(dtype dt) { return dt >= DT_FLOAT32; }
/* bool < int < float: categories used by promotion with wrapped scalars */
static inline int dtype_category(dtype dt) { return dt == DT_BOOL ? 0 : dt == DT_INT64 ? 1 : 2; }

#endif
