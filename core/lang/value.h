/* value.h - tj values: immediates and reference-counted heap objects.
 *
 * A value is a 16-byte tagged union. Tags below VAL_FIRST_HEAP are
 * immediates (no reference count); the rest point at a struct obj header
 * that every heap object begins with. Ownership rule: a function that
 * returns a value returns a new reference; arguments are borrowed.
 */
#ifndef TJ_VALUE_H
#define TJ_VALUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strbuf.h"

typedef enum value_tag {
	/* immediates */
	VAL_NONE,
	VAL_BOOL,
	VAL_INT,     /* int64_t */
	VAL_FLOAT,   /* double */
	VAL_DTYPE,   /* enum dtype in .i, prints as float32 */
	VAL_TYPE,    /* a type object: .i holds the value_tag it names (int, float, ...) */
	VAL_ERR,     /* not a tj value: "an error was raised", see vm_raise() */
	/* heap objects */
	VAL_STR,
	VAL_LIST,
	VAL_TUPLE,
	VAL_SLICE,
	VAL_RANGE,
	VAL_FUNC,    /* user function (struct func) */
	VAL_BUILTIN, /* C function (struct builtin) */
	VAL_BOUND,   /* builtin bound to a self value (methods: xs.append, t.sum) */
	VAL_CELL,    /* closure cell */
	VAL_ITER,    /* iterator over range/list/tuple/str/tensor */
	VAL_CODE,    /* struct code */
	VAL_TENSOR,  /* struct tensor (tensor.h) */
	VAL_OBJECT,  /* any other object: behaviour through struct obj_type */
	VAL_TAG_COUNT
} value_tag;

#define VAL_FIRST_HEAP VAL_STR

struct obj {
	uint32_t rc;
	uint32_t flags;
};

typedef struct value {
	uint8_t tag;
	union {
		bool b;
		int64_t i;
		double f;
		struct obj *o;
	};
} value;

void obj_free(value v); /* frees v's heap object; value.c dispatches on tag */

static inline void val_incref(value v)
{
	if (v.tag >= VAL_FIRST_HEAP)
		v.o->rc++;
}

static inline void val_decref(value v)
{
	if (v.tag >= VAL_FIRST_HEAP && --v.o->rc == 0)
		obj_free(v);
}

static inline value val_none(void) { value v = {.tag = VAL_NONE}; v.i = 0; return v; }
static inline value val_bool(bool b) { value v = {.tag = VAL_BOOL}; v.i = 0; v.b = b; return v; }
static inline value val_int(int64_t i) { value v = {.tag = VAL_INT}; v.i = i; return v; }
static inline value val_float(double f) { value v = {.tag = VAL_FLOAT}; v.f = f; return v; }
static inline value val_dtype(int dt) { value v = {.tag = VAL_DTYPE}; v.i = dt; return v; }
static inline value val_type(value_tag t) { value v = {.tag = VAL_TYPE}; v.i = t; return v; }
static inline value val_err(void) { value v = {.tag = VAL_ERR}; v.i = 0; return v; }
/* wraps a heap object without touching its count (steals the reference) */
static inline value val_obj(value_tag tag, void *o) { value v = {.tag = tag}; v.o = o; return v; }
static inline bool val_is_err(value v) { return v.tag == VAL_ERR; }

/* ---- strings (immutable, UTF-8, NUL-terminated for convenience) ---- */
struct str {
	struct obj hdr;
	size_t len;
	uint64_t hash;
	char data[];
};
value str_new(const char *s, size_t len);
value str_from_cstr(const char *s);
/* A string of len bytes for the caller to fill (data[len] is set), then
 * str_finish: NULL when the memory cannot be had, where str_new aborts
 * (for sizes a program chooses: 'a' * n). */
struct str *str_alloc(size_t len);
value str_finish(struct str *s);
static inline struct str *val_str(value v) { return (struct str *)v.o; }

/* ---- lists and tuples ---- */
struct list {
	struct obj hdr;
	size_t len, cap;
	value *items;
};
struct tuple {
	struct obj hdr;
	size_t len;
	value items[];
};
value list_new(size_t cap);
void list_append(struct list *l, value v);      /* steals v */
value tuple_new(size_t len);                     /* items set to None */
value tuple_pack(size_t n, const value *items);  /* increfs items */
static inline struct list *val_list(value v) { return (struct list *)v.o; }
static inline struct tuple *val_tuple(value v) { return (struct tuple *)v.o; }

/* ---- generic objects (compiled functions, explanations, ...) ---- */
struct strbuf;
struct vm;
struct obj_type {
	const char *name;                                  /* type(x) prints <class 'name'> */
	void (*free)(struct obj *o);
	void (*repr)(struct obj *o, struct strbuf *out);
	value (*getattr)(struct obj *o, struct str *name); /* NULL slot or VAL_NONE tag... see vm */
	/* Added by the VM: the object is callable (a compiled function). Same
	 * convention as builtin_fn (builtin.h); NULL: "'name' object is not
	 * callable". getattr: a new reference; val_err() after tj_error_set();
	 * or val_err() with no error pending for "no such attribute". */
	value (*call)(struct obj *o, struct vm *vm, const value *args, int nargs, value kwnames);
};
struct object {
	struct obj hdr;
	const struct obj_type *type;
};

/* Interned strings: one object per distinct text for the whole run (names,
 * attribute names). Returns a new reference. */
value str_intern(const char *s, size_t len);
#define STR_ASCII 1u     /* hdr.flags: every byte < 0x80 (index = byte offset) */
/* (bits 8..31 of a string's hdr.flags cache the VM's method lookups) */
static inline bool str_eq(const struct str *a, const struct str *b)
{
	return a == b || (a->hash == b->hash && a->len == b->len && __builtin_memcmp(a->data, b->data, a->len) == 0);
}
bool str_eq_cstr(const struct str *a, const char *s);
size_t str_char_count(const struct str *s);        /* code points, what len() says */

/* ---- slices, ranges, cells, iterators ---- */
struct slice {
	struct obj hdr;
	value start, stop, step;  /* each None or an int (or any value: checked on use) */
};
value slice_new(value start, value stop, value step);  /* increfs */
static inline struct slice *val_slice(value v) { return (struct slice *)v.o; }
/* Python's slice.indices() + length: resolves against a sequence of length
 * len. Returns -1 after tj_error_set() ("slice step cannot be zero", "slice
 * indices must be integers or None or have an __index__ method"). */
int slice_indices(const struct slice *s, int64_t len, int64_t *start, int64_t *stop,
		  int64_t *step, int64_t *count);

struct range {
	struct obj hdr;
	int64_t start, stop, step; /* step != 0 */
	int64_t len;
};
value range_new(int64_t start, int64_t stop, int64_t step); /* len computed; step != 0 */
static inline struct range *val_range(value v) { return (struct range *)v.o; }

struct cell {
	struct obj hdr;
	value v;                  /* VAL_ERR: empty */
};
value cell_new(value v);      /* increfs v */
static inline struct cell *val_cell(value v) { return (struct cell *)v.o; }

enum iter_kind { ITER_RANGE, ITER_LIST, ITER_TUPLE, ITER_STR, ITER_TENSOR, ITER_ENUMERATE, ITER_ZIP };
struct iter {
	struct obj hdr;
	enum iter_kind kind;
	int64_t i;                /* RANGE: next value; others: next index / enumerate count */
	int64_t n;                /* RANGE: values left; STR/TENSOR: length */
	int64_t step;             /* RANGE */
	value seq;                /* LIST/TUPLE/STR/TENSOR: the sequence; ENUMERATE: an iterator;
	                             ZIP: a tuple of iterators */
};
value iter_new(enum iter_kind kind, value seq);  /* increfs seq; fields zero */
/* bound_new (builtin.h) from a free list, for the VM's method lookups */
value bound_new_fast(value self, value fn);
static inline struct iter *val_iter(value v) { return (struct iter *)v.o; }

/* ---- printing as Python prints ---- */
void val_repr(value v, struct strbuf *out);  /* repr(): strings quoted */
void val_str_into(value v, struct strbuf *out); /* str(): strings bare */
void float_repr(double d, struct strbuf *out); /* Python repr of a float: 0.1, 2.0, 1e-05, inf, nan */
const char *val_type_name(value v);             /* "int", "list", "Tensor", ... */
bool val_equal(value a, value b);               /* ==, for non-tensor values */
/* val_equal that fails (-1, error set) on containers nested deeper than 1000 */
int val_equal_checked(value a, value b, bool *out);
const char *type_tag_name(value_tag t);         /* the name of the type VAL_TYPE .i names */
value val_type_of(value v);                     /* type(v): a VAL_TYPE */
int num_cmp_int_float(int64_t i, double d);     /* exact i <=> d: -1, 0, 1; 2 when d is nan */

#endif
