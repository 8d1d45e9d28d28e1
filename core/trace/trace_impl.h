/* trace_impl.h - the tracer's insides, shared by its files (tracer.h is
 * the interface; doc/tracer.md, "Where the tracer's code is").
 *
 * One trace attempt is a struct tstate. Everything the attempt makes
 * lives in its arena (trace_alloc) and every reference it takes is held
 * (trace_hold); both go in one call at the end of the attempt. A graph
 * break or a failure anywhere longjmp()s back to the protected call in
 * tracer.c (trace_fail, trace_graph_break): the functions below that take
 * a struct tstate may not return.
 */
#ifndef TJ_TRACE_IMPL_H
#define TJ_TRACE_IMPL_H

#include <setjmp.h>
#include <stddef.h>

#include "arena.h"
#include "tensor.h"
#include "tracer.h"
#include "vm.h"
#include "util.h"

#define TRACE_MAX_INDEX 16       /* items of an index tuple (as ops.c's getitem) */
#define TRACE_MAX_INSNS 200000   /* instructions symbolically run by one trace */
#define TRACE_MAX_NODES 10000    /* graph nodes of one trace */
#define TRACE_MAX_DEPTH 32       /* inlined calls */
#define TRACE_MAX_RESTARTS 64    /* restarts after breaks inside inlined calls */
#define TRACE_MAX_NEST 64        /* nested lists and tuples wrapped from inputs */

struct meta_out;

/* ---- variables ---- */

enum vkind {
	VK_LAZY,      /* a frame input not looked at yet: v, src (or psrc/pidx) */
	VK_TENSOR,    /* node (-1: not in the graph yet), ex, rg */
	VK_CONST,     /* v */
	VK_LIST,      /* rec */
	VK_TUPLE,     /* n, items */
	VK_ITER,      /* it */
	VK_METHOD,    /* op bound to self (a tensor) */
	VK_LISTMETH,  /* list method v (a name) bound to self (a list) */
	VK_NESTED,    /* a function made while tracing: v = code, defaults, cells */
	VK_CELLREF,   /* a cell object (LOAD_CLOSURE) */
	VK_OPAQUE,    /* a value the tracer can only pass along (a foreign iterator) */
	VK_SYMINT,    /* a size read as an int (x.shape[0]): v its example, isym its symbol,
	                 self the tensor and n the dimension it came from; see var_realize() */
};

struct seqrec;
struct iterrec;
struct cellrec;
struct exjob;

struct var {
	uint8_t kind;
	int src;                  /* guard source, -1: none (yet) */
	int psrc, pidx;           /* LAZY item of a source list/tuple: its source is made on demand */
	int skind, sidx;          /* LAZY local, stack slot or cell of the traced frame (skind -1: none) */
	const char *sname;
	struct var *real;         /* LAZY: what it turned out to be */
	value v;
	int node;
	tensor *ex;               /* TENSOR: its example; only metadata while job is set */
	struct exjob *job;        /* TENSOR: the op run that makes ex, not run yet (trace_ops.c) */
	bool rg;
	struct seqrec *rec;
	int n;
	struct var **items;
	struct iterrec *it;
	int op;
	int *syms;                /* TENSOR: per dimension its symbol, -1 (NULL: all constant) */
	int isym;                 /* SYMINT: its symbol */
	struct var *self;
	struct var *defaults;
	int ncells;
	struct cellrec **cells;
	struct cellrec *cell;
};

/* a list: shared by every variable that refers to it, as the object is */
struct seqrec {
	int n, cap;
	struct var **items;
	int src;                  /* it came from this frame input, or -1 */
	value obj;                /* ... or is this real object (src -1), or none: made by the trace */
	value real;               /* a list from outside: the real list (for its length guard) */
	int orig_n;               /* a list from outside: its length when the trace met it */
	bool len_known;           /* the trace depends on its length (guarded), or made it */
	bool prefix_dirty;        /* items before orig_n changed: replay the whole list */
	bool mutated;
	int memo;                 /* plan: memo slot, -1 */
};

struct iterrec {
	int kind;                 /* enum iter_kind */
	int64_t i, n, step;       /* RANGE: next value, left, step; others: next index, length */
	struct var *seq;          /* LIST/TUPLE/STR/TENSOR: the sequence; ENUMERATE: the inner iterator */
	int nsub;                 /* ZIP */
	struct var **subs;
	int64_t count;            /* ENUMERATE */
};

struct cellrec {
	struct var *content;      /* NULL: empty */
	int root_index;           /* one of the traced frame's cells, or -1 */
	value real;               /* a real cell object it stands for, or none */
	bool dirty;               /* stored to while tracing */
	int memo;
};

struct tframe {
	struct code *code;
	struct var **locals;
	struct cellrec **cells;
	struct var **stack;
	int sp;
	int pc;                   /* the instruction running */
	struct tframe *parent;
	int depth;
};

struct overlay {
	struct str *name;         /* borrowed from a code object's names */
	struct var *var;
	bool dirty;
};

struct forced {
	int pc;
	struct trace_break *brk;
};

enum abort_kind { ABORT_NONE, ABORT_BREAK, ABORT_FAIL, ABORT_SPLIT };

/* a symbolic size: a union-find over the symbols that ops forced equal */
struct tsym {
	int64_t value;            /* the example size */
	int parent;
	bool spec;                /* specialized: the trace assumed its value */
	int src, dim;             /* where it was made */
	const struct source *where;
	int line, col;
	const char *function;
};

struct tstate {
	struct vm *vm;
	struct frame *f;
	const struct trace_config *cfg;
	const char *compile_id;
	jmp_buf jb;
	/* one attempt */
	struct arena arena;
	struct graph *g;
	struct guard_set *gs;
	uint8_t *guarded;         /* per source: which guards it has (trace_guards.c) */
	int nguarded;
	int *insrc;               /* per GN_INPUT node: its source */
	int ninsrc, insrc_cap;
	value *held;
	int nheld, heldcap;
	struct tframe *root, *cur;
	struct overlay *globals;
	int nglobals, globcap;
	struct seqrec **recs;
	int nrecs, reccap;
	struct cellrec **rootcells;
	int ninsns;
	bool has_call;
	struct exjob *jobs, *jobs_tail; /* examples not made yet, in the order of their ops */
	struct gnode node;        /* the node being built (trace_node_add), whose blocks
				   and references go with the attempt should it end first */
	/* symbolic sizes (doc/tracer.md, "Dynamic shapes") */
	struct tsym *syms;
	int nsyms, symcap;
	int nlogged;              /* symbols already logged (a restarted trace makes them again) */
	/* the traced frame before the running instruction, so that a break in
	 * the middle of it leaves the state as it was at its start */
	struct {
		int sp;
		struct var **stack;
		int nnodes, ninsrc, nguards;
	} snap;
	/* how it ended */
	enum abort_kind abort;
	struct trace_break *brk;
	char *error;
	struct var *ret;
	int end_pc;
	/* across attempts */
	struct forced *forced;
	int nforced;
	uint64_t rng_seed, rng_offset;
};

static inline int kwnames_count(value kwnames)
{
	return kwnames.tag == VAL_TUPLE ? (int)val_tuple(kwnames)->len : 0;
}

static inline bool var_is_seq(const struct var *v) { return v->kind == VK_LIST || v->kind == VK_TUPLE; }

/* ---- tracer.c: the protected call, and ending a trace early ---- */

/* where fr is: the location of its running instruction */
struct src_loc trace_loc(const struct tframe *fr);
/* the user stack of the instruction running now, outermost first (malloc'ed) */
int trace_user_stack(struct tstate *st, struct user_frame **out, struct code ***codes, uint32_t **pcs);
/* the trace fails: the frame runs in the VM, which raises the error */
__attribute__((noreturn)) void trace_fail(struct tstate *st, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* ... with the pending library error (an op raised while tracing) */
__attribute__((noreturn)) void trace_fail_pending(struct tstate *st);
/* a graph break with code (enum break_code); fmt fills the message's <placeholder> */
__attribute__((noreturn)) void trace_graph_break(struct tstate *st, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void trace_break_if_forced(struct tstate *st, int pc);
__attribute__((noreturn)) void trace_split(struct tstate *st);
/* a failed allocation: the trace fails with "out of memory" */
__attribute__((noreturn)) void trace_oom(struct tstate *st);

/* ---- trace_vars.c: the arena, variables, realizing inputs ---- */

void *trace_alloc(struct tstate *st, size_t n);  /* zeroed, in the attempt's arena */
/* util_calloc / util_realloc / util_strdup, or trace_oom: for blocks that
 * outlive the attempt or that it frees itself (nothing may jump between) */
void *trace_calloc(struct tstate *st, size_t n, size_t size);
void *trace_realloc(struct tstate *st, void *p, size_t n);
char *trace_strdup(struct tstate *st, const char *s);
/* the source of guards_source (core/trace/guards.h), or trace_oom */
int trace_source(struct tstate *st, enum source_kind kind, int parent, int index, const char *name);
/* the graph node being built (st->node), added to the graph: its index */
int trace_node_add(struct tstate *st);
value trace_hold(struct tstate *st, value v);    /* the trace owns this reference */
value trace_keep(struct tstate *st, value v);    /* ... a new reference to v */
struct var *var_new(struct tstate *st, enum vkind k);
struct var *var_const(struct tstate *st, value v);
struct var *var_const_owned(struct tstate *st, value v);  /* from a new reference */
struct var *var_none(struct tstate *st);
struct var *var_tuple(struct tstate *st, int n, struct var **items);
struct var *var_list(struct tstate *st, int n, struct var **items);
struct var *var_lazy(struct tstate *st, value v, int src);
struct var *var_wrap(struct tstate *st, value v, int src, int depth);
void seqrec_insert(struct tstate *st, struct seqrec *r, int at, struct var *v);
/* the trace reads a list's length or items: a list from outside gets its length guarded */
struct seqrec *seqrec_read(struct tstate *st, struct seqrec *r);
int var_seq_n(struct tstate *st, struct var *v);
struct var **var_seq_items(struct tstate *st, struct var *v);
/* what a variable is, for the instruction that uses it (a lazy input
 * realized, a symbolic int specialized) */
struct var *var_realize(struct tstate *st, struct var *v);
value var_value(struct tstate *st, struct var *v);    /* a constant's value, guarded */
int64_t var_int(struct tstate *st, struct var *v);    /* ... an int's */
bool var_is_const(struct tstate *st, struct var *v);
const char *var_kind_name(struct tstate *st, struct var *v);
bool var_all_const(struct tstate *st, struct var *v, int depth);
value var_deep_value(struct tstate *st, struct var *v, int depth);
struct var *var_from_result(struct tstate *st, value r);
int var_source(struct tstate *st, struct var *v);     /* its guard source, made on demand */
struct cellrec *cellrec_new(struct tstate *st, struct var *content);

/* ---- trace_guards.c: what the trace assumed about its inputs ---- */

void need_guard(struct tstate *st, struct guard *g);
void need_type(struct tstate *st, int src, value v);
void need_id(struct tstate *st, int src, value v);
void need_func(struct tstate *st, int src, value fn);
void need_value(struct tstate *st, int src, value v);
void need_len(struct tstate *st, int src, value v);
void need_tensor(struct tstate *st, int src, const tensor *t, const int *syms);
tensor *need_meta(struct tstate *st, struct var *t);  /* every fact of t, its symbols specialized */

/* ---- trace_shapes.c: symbolic sizes ---- */

int sym_find(struct tstate *st, int s);
int sym_live(struct tstate *st, int s);   /* its root, or -1 when specialized */
void sym_spec(struct tstate *st, int s);
int sym_of_int(struct tstate *st, const struct var *v);
void sym_spec_var(struct tstate *st, struct var *v);
void sym_spec_deep(struct tstate *st, struct var *v, int depth);
int *sym_input(struct tstate *st, const tensor *t, int src);
struct var *sym_int_var(struct tstate *st, struct var *t, int d);
void sym_before_op(struct tstate *st, int op, struct var **args, int n);
void sym_infer(struct tstate *st, int op, struct var **args, int n, struct meta_out *out);
struct var *sym_sizes(struct tstate *st, int op, struct var **args);
void sym_finish(struct tstate *st);

/* ---- trace_ops.c: tensor ops into graph nodes ---- */

struct var *op_emit(struct tstate *st, int op, struct var **args);
tensor *var_example(struct tstate *st, struct var *t);  /* a tensor variable's example, made now */
struct var *op_call(struct tstate *st, int op, struct var **args, int nargs, value kwnames);
struct var *op_call_allowed(struct tstate *st, value fn, struct var **args, int nargs, value kwnames);

/* ---- trace_builtins.c: Python's builtins, iteration and attributes ---- */

struct var *py_iter(struct tstate *st, struct var *v);
struct var *py_next(struct tstate *st, struct var *itv);
struct var **py_drain(struct tstate *st, struct var *v, int *n);
struct var *py_getattr(struct tstate *st, struct var *obj, struct str *name);
struct var *py_call_builtin(struct tstate *st, struct var *fv, value fn, struct var **args, int nargs,
			    value kwnames);
struct var *py_call_type(struct tstate *st, value t, struct var **args, int nargs, value kwnames);
struct var *py_call_list_method(struct tstate *st, struct var *m, struct var **args, int nargs, value kwnames);

/* ---- trace_interp.c: the interpreter loop and calls ---- */

struct var *interp_binary(struct tstate *st, enum vm_binop op, struct var *a, struct var *b);
struct var *interp_run_frame(struct tstate *st, struct tframe *fr);

/* ---- trace_plan.c: the resume plan ---- */

void plan_make(struct tstate *st, struct trace_result *res);
void plan_release(struct trace_result *r);

#endif
