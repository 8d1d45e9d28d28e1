/* tracer.h - symbolic execution of a frame's bytecode into a graph, the
 * guards it assumed, and how it ends (doc/tracer.md).
 *
 * trace_frame() runs the bytecode of a VM frame from its pc, with the
 * frame's real locals (and operand stack, at a resume point) as example
 * values, without changing anything the program can see: tensors become
 * graph values (each op also runs for real on the examples, grad mode off
 * and the random state restored, for exact shapes, dtypes and errors),
 * Python values become constants behind guards, calls of user functions
 * are inlined, loops with a known trip count unroll. It ends at the
 * frame's return, at a graph break (an instruction it cannot put in a
 * graph), at a split (a FOR_ITER on an iterator it did not make), or it
 * fails (an op raised: the frame runs in the VM, which raises the same
 * error at the user's line).
 *
 * The result carries a *plan*: recipes that rebuild, from the graph's
 * outputs, constants and the frame's inputs (by guard source), the value
 * returned, or every local and stack slot at the breaking instruction,
 * and the side effects to replay (global and cell stores, mutations of
 * lists that came from outside). trace_rebuild() carries the plan out.
 */
#ifndef TJ_TRACER_H
#define TJ_TRACER_H

#include <stdbool.h>
#include <stdint.h>

#include "code.h"
#include "graph.h"
#include "guards.h"
#include "value.h"

struct vm;
struct frame;
struct backend;
struct compile_log;

/* ---- graph-break codes ---- */
enum break_code {
#define BREAK(name, num, category, message, explanation, hint) BRK_##name,
#include "breaks.def"
#undef BREAK
	BRK_COUNT
};

enum trace_end {
	TRACE_RETURN,       /* the frame returns the plan's ret */
	TRACE_BREAK,        /* a graph break: rebuild, run instruction pc in the VM, resume */
	TRACE_SPLIT,        /* as a break, without a reason (FOR_ITER on a foreign iterator) */
	TRACE_FULLGRAPH,    /* fullgraph=True met a break: raise Unsupported (brk says where) */
	TRACE_FAILED,       /* an error while tracing: run the frame in the VM (error says what) */
};

struct trace_break {
	int code;                   /* enum break_code */
	char *message;              /* "call to print (side effect)" */
	int nstack;                 /* outermost (the traced frame) first */
	struct user_frame *stack;
	struct code **codes;        /* per frame: its code (borrowed) ... */
	uint32_t *pcs;              /* ... and instruction, for a traceback */
};

/* How to make one value at the end of an artifact. */
enum recipe_kind {
	RC_UNBOUND,     /* an unbound local */
	RC_CONST,       /* v */
	RC_SOURCE,      /* the frame input named by guard source index */
	RC_OUTPUT,      /* graph output index */
	RC_LIST,        /* a new list of items, made once (memo slot index) */
	RC_MEMO,        /* the list, cell or function made by memo slot index */
	RC_TUPLE,       /* a tuple of items */
	RC_ITER,        /* an iterator: index = enum iter_kind, items[0] = the sequence (RANGE:
	                   none; ENUMERATE: the inner iterator; ZIP: a tuple of iterators), a/b/c
	                   = next index or value, count left, step */
	RC_GETATTR,     /* getattr(items[0], v): a bound method */
	RC_FUNC,        /* a function, made once (memo slot index): v = the code, items[0] =
	                   defaults (or RC_CONST None), items[1] = the closure (a tuple of
	                   cells, or RC_CONST None) */
	RC_CELL,        /* the frame's own cell object index */
	RC_NEWCELL,     /* a new cell holding items[0], made once (memo slot index) */
};

struct recipe {
	uint8_t kind;
	int index;
	value v;                    /* owned */
	int64_t a, b, c;
	int n;
	struct recipe *items;
};

enum effect_kind {
	EF_GLOBAL,      /* globals[name] = value */
	EF_CELL,        /* the frame's cell index holds value */
	EF_LIST,        /* the list value (a frame input or a constant) now holds items */
	EF_LIST_APPEND, /* items are appended to the list value (its prefix was not touched) */
};

struct effect {
	uint8_t kind;
	value name;                 /* EF_GLOBAL: interned name (owned) */
	int index;                  /* EF_CELL: the cell */
	struct recipe value;        /* EF_GLOBAL, EF_CELL: the value; EF_LIST: the list */
	int n;                      /* EF_LIST, EF_LIST_APPEND */
	struct recipe *items;
};

/* Automatic dynamic shapes: per frame, the sizes its tensor inputs had
 * and the dimensions that changed from one compile to the next (sticky). */
struct dyn_record {
	char *source;               /* "L['x']" */
	int ndim;
	int64_t shape[TENSOR_MAX_DIMS];
	unsigned changed;           /* bit d: dimension d took another size */
};
struct dyn_state {
	int n, cap;
	struct dyn_record *recs;
};
void dyn_state_free(struct dyn_state *ds);

enum trace_dynamic { DYN_AUTO, DYN_ALWAYS, DYN_NEVER }; /* dynamic=None, True, False */

struct trace_config {
	const struct backend *backend;
	bool fullgraph;
	int dynamic;                /* enum trace_dynamic */
	struct dyn_state *dyn;      /* the frame's automatic-dynamic memory, or NULL */
	struct compile_log *log;    /* TJIT_LOGS=dynamic's lines go there; NULL: none */
};

struct trace_result {
	enum trace_end end;
	int pc;                     /* BREAK / SPLIT: the instruction the VM runs */
	struct graph *graph;        /* always made; graph_op_count may be 0 */
	int ninputs;
	int *input_sources;         /* per GN_INPUT node, in order: its guard source */
	bool graph_calls_user;      /* a GN_CALL node: sources may change while the graph runs */
	struct guard_set *guards;   /* finished (guards_finish) */
	struct trace_break *brk;    /* BREAK, FULLGRAPH */
	char *error;                /* FAILED */
	/* the plan */
	int nlocals;
	struct recipe *locals;      /* BREAK / SPLIT: every local slot */
	int nstack;
	struct recipe *stack;       /* BREAK / SPLIT: the operand stack at pc */
	struct recipe ret;          /* RETURN */
	int neffects;
	struct effect *effects;
	int nmemo;
	double trace_ms, guard_ms;  /* time spent tracing and building guards */
};

/* Traces frame f (the top VM frame, at f->pc, untouched) under cfg.
 * compile_id names the graph ("0/1"). NULL when out of memory; a failed
 * allocation while tracing ends it as TRACE_FAILED ("out of memory"). */
struct trace_result *trace_frame(struct vm *vm, struct frame *f, const struct trace_config *cfg,
				 const char *compile_id);
void trace_result_free(struct trace_result *r);
void trace_break_free(struct trace_break *b);

/* Carries out r's plan on frame f after the graph ran: sources are
 * gs->scratch as resolved for f (borrowed), outputs the graph's outputs
 * (borrowed). Replays the side effects, then either sets *ret (RETURN: a
 * new reference; f untouched) or rebuilds f's locals and operand stack
 * and sets f->pc = r->pc (BREAK / SPLIT). 0, or -1 after tj_error_set()
 * (nothing changed then). */
int trace_rebuild(const struct trace_result *r, struct vm *vm, struct frame *f, const value *sources,
		  const value *outputs, value *ret);

/* true while a trace runs (is_compiling()) */
bool trace_active(void);

#endif
