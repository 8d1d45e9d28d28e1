/* guards.h - what a compiled entry assumed about its frame, as a flat list
 * of checks (doc/tracer.md, "Guards").
 *
 * A *source* names where a frame input comes from: L['x'] (a local),
 * L['___stack0'] (operand-stack slot 0 of a resume point), a cell variable
 * L['c'], G['w'] (a global, else a builtin), L['xs'][1] (an item of a list
 * or tuple), G['f'].__closure__[0].cell_contents (a cell of a function's
 * closure), L['w'].grad (the gradient of a tensor), L['m'].__self__ and L['m'].__func__ (the
 * object and the builtin of a bound method). Sources are numbered in order of creation, a parent before its
 * items, so that one pass resolves them all.
 *
 * A *guard* is one fact about one source. Checking resolves the sources
 * by borrowing (locals by slot, globals by interned name, items by index)
 * into a scratch array made when the set was built, and runs the checks in
 * order: nothing is allocated, nothing is reference counted. Each guard
 * keeps its text (`L['a'].shape == (10,)`) and the user line that made the
 * trace depend on it; a failure is told with the most precise text and the
 * value seen (`L['a'].shape[0] == 10` got `20`).
 */
#ifndef TJ_GUARDS_H
#define TJ_GUARDS_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "tensor.h"
#include "value.h"

struct vm;
struct frame;
struct backend;

enum source_kind {
	SRC_LOCAL,      /* index: the local slot */
	SRC_STACK,      /* index: the operand-stack slot */
	SRC_CELL,       /* index: the frame's cell (cell variables, then free variables) */
	SRC_GLOBAL,     /* name: a global, else a builtin */
	SRC_ITEM,       /* parent[index] of a list or tuple */
	SRC_CLOSURE,    /* the contents of cell index of the closure of function parent */
	SRC_GRAD,       /* parent.grad of a tensor: a tensor or None */
	SRC_SELF,       /* parent.__self__ of a bound method: the object it is bound to */
	SRC_FUNC,       /* parent.__func__ of a bound method: the builtin it calls */
};

struct guard_source {
	uint8_t kind;
	int parent;     /* SRC_ITEM, SRC_CLOSURE, SRC_GRAD, SRC_SELF, SRC_FUNC: another source */
	int index;
	value name;     /* SRC_GLOBAL: the interned name (owned) */
	char *text;     /* "L['xs'][1]" */
};

enum guard_kind {
	GK_BACKEND,     /* backend == 'eager' (no source) */
	GK_TYPE,        /* type(L['n']) is int: the tag (and object type) */
	GK_EQUALS,      /* L['n'] == 4, L['x'] is None: type and value */
	GK_LENGTH,      /* len(L['xs']) == 3: a list or tuple of that length */
	GK_DTYPE,       /* L['a'].dtype == float32: a tensor of that dtype */
	GK_SHAPE,       /* L['a'].shape == (10,) */
	GK_REQUIRES_GRAD, /* L['a'].requires_grad == False */
	GK_ID,          /* G['f'] is <function f at prog.tj:3>: that very object */
	GK_CODE,        /* L['g'].__code__ is <code g at prog.tj:5>: a function of that code
	                   (a nested function, made anew at each call of its maker) */
	GK_ALIAS,       /* L['b'] is L['a'] (n: the other source; expect True) or is not (False) */
	GK_DIM,         /* a symbolic size: L['x'].shape[n] >= 2 (ndim -1), or
	                   L['y'].shape[n] == s<sym> (ndim: the source of s's first
	                   occurrence, shape[0]: its dimension) */
};

struct guard {
	uint8_t kind;
	int source;                 /* -1 for GK_BACKEND */
	value expect;               /* EQUALS: the value; ID: the object; CODE: the code (owned
	                               references); ALIAS: a bool */
	int64_t n;                  /* TYPE: the tag; LENGTH; DTYPE; REQUIRES_GRAD; ALIAS: the other source */
	const void *obj_type;       /* TYPE of a VAL_OBJECT: its struct obj_type */
	const struct backend *backend;
	int ndim;                   /* SHAPE */
	int64_t shape[TENSOR_MAX_DIMS]; /* SHAPE: -1 for a symbolic size (sym: dimsym[i]) */
	int dimsym[TENSOR_MAX_DIMS];  /* SHAPE: the symbol of a -1 size; DIM: dimsym[0] */
	char *text;
	/* the user line that made the trace assume it (src NULL: none) */
	const struct source *src;
	int line, col;
	const char *function;
};

/* The compiled form that the hit path runs: one check per guard, except
 * that the dtype, shape and requires_grad guards of a tensor (always made
 * together) are one tensor check. */
struct guard_check {
	uint8_t kind;               /* enum guard_kind; GK_DTYPE stands for the whole tensor check */
	int8_t dt;                  /* tensor check: the dtype, -1: not checked */
	int8_t ndim;                /* tensor check: the rank of shape, -1: not checked */
	int8_t rg;                  /* tensor check: requires_grad, -1: not checked */
	int source;
	const int64_t *shape;       /* tensor check: the shape guard's dimensions */
	const struct guard *g;      /* the other kinds: the guard */
};

struct guard_set {
	int nsources, srccap;
	struct guard_source *sources;
	int nguards, cap;
	struct guard *guards;
	value *scratch;             /* nsources resolved values, made by guards_finish */
	int nchecks;
	struct guard_check *checks; /* made by guards_finish */
};

/* NULL when out of memory */
struct guard_set *guards_new(void);
void guards_free(struct guard_set *gs);

/* The source of that kind (an existing one when it was made before).
 * text_base is the local's or global's name (the index is used for
 * items and closures). -1 when out of memory. */
int guards_source(struct guard_set *gs, enum source_kind kind, int parent, int index, const char *name);
const char *guards_source_text(const struct guard_set *gs, int source);

/* Appends a guard; the set takes ownership of g->expect (a reference) and
 * makes g->text from the facts. Returns its index; -1 when out of memory
 * (g->expect released). */
int guards_add(struct guard_set *gs, const struct guard *g);
/* Makes guard i's text again from its facts (after they changed). */
void guards_retext(struct guard_set *gs, int i);
/* Drops the guards from index n on (a trace restarted). */
void guards_truncate(struct guard_set *gs, int n);
/* The record kind: "type", "equals", "length", "tensor", "id", "backend". */
const char *guards_kind_name(enum guard_kind k);

/* Ready to check: the scratch array and the compiled checks. -1 when out
 * of memory. */
int guards_finish(struct guard_set *gs);

/* Resolves every source of frame f into gs->scratch (borrowed values;
 * VAL_ERR for one that does not resolve). */
void guards_resolve(const struct guard_set *gs, struct vm *vm, const struct frame *f);
/* Checks the guards in order against gs->scratch (guards_resolve first);
 * returns -1 when all hold, else the index of the first that fails. No
 * allocation. */
int guards_check_resolved(const struct guard_set *gs, const struct backend *backend);
/* guards_resolve + guards_check_resolved */
int guards_check(const struct guard_set *gs, struct vm *vm, const struct frame *f,
		 const struct backend *backend);

/* The failure of guard i against gs->scratch (as left by a check): the
 * most precise text ("L['x'].shape[0] == 2", "type(L['n']) is int") and
 * the value seen ("4", "float"), both malloc'd. */
void guards_failure(const struct guard_set *gs, int i, const struct backend *backend, char **text,
		    char **value_seen);

#endif
