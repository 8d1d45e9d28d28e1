/* vm.h - the bytecode virtual machine: frames, calls, globals, errors.
 *
 * One VM runs one program. Every frame's locals, cells and operand stack
 * live in one contiguous value stack; frames sit in a fixed array. A call of
 * a user function from bytecode pushes a frame and continues in the same C
 * loop (no C recursion), so only the recursion limit bounds the depth.
 *
 * Every call of a user function, from bytecode or from C, goes through one
 * place: the arguments are bound into a new frame, then the frame is either
 * run by the interpreter or handed to the frame evaluator hook (the tracer
 * plugs in there, see vm_set_eval_frame).
 *
 * Errors: a failing operation returns val_err() after tj_error_set() (or
 * vm_raise()). The VM attaches the location of the failing instruction,
 * unwinds the frames, recording a traceback, and returns val_err() to its C
 * caller; vm_print_traceback() prints it as LANGUAGE.md §6 says.
 */
#ifndef TJ_VM_H
#define TJ_VM_H

#include <stdbool.h>
#include <stdio.h>

#include "builtin.h"
#include "code.h"
#include "error.h"
#include "value.h"

#define VM_RECURSION_LIMIT 1000

/* a user function (VAL_FUNC) */
struct func {
	struct obj hdr;
	struct code *code;   /* owned reference */
	value defaults;      /* tuple for the last parameters, or None */
	value closure;       /* tuple of cells for code->freevar_names, or None */
	uint32_t flags;      /* free for the frame evaluator (disable, ...) */
	uint32_t gc_index;   /* place among the functions with a closure (value.c) */
};
static inline struct func *val_func(value v) { return (struct func *)v.o; }
/* increfs code, defaults and closure */
value func_new(struct code *code, value defaults, value closure);
/* Frees the reference cycles that closures make (a recursive inner function
 * holds the cell that holds it), which reference counting alone never
 * frees. Runs when a VM is freed, and as functions with closures pile up. */
void func_collect_cycles(void);

/* A frame. Its slots are contiguous in the value stack:
 *   locals[0 .. nlocals)   parameters first; VAL_ERR = unbound
 *   cells[0 .. ncells)     VAL_CELL: cell variables, then free variables
 *   stack[0 .. max_stack)  the operand stack, sp = next free slot
 * pc is the index of the next instruction to run; while a frame waits for a
 * call, pc - 1 is the call. Everything from locals up to sp is owned by the
 * frame. */
struct frame {
	struct code *code;   /* borrowed: the function or module keeps it */
	struct func *func;   /* borrowed; NULL for the module frame or a bare code frame */
	value *locals;
	value *cells;
	value *stack;
	value *sp;
	uint32_t pc;
	bool is_entry;       /* a C caller waits for this frame (vm_run_frame) */
};

struct vm;

/* ---- life cycle ---- */
/* A VM with the language's builtins (builtins_install) and __name__ ==
 * "__main__"; prelude_vm_new (prelude.h) adds the names of every layer. */
struct vm *vm_new(void);
void vm_free(struct vm *vm);

/* Runs a module code object; its globals stay in the VM. Returns None or
 * val_err() (the error stays pending: vm_print_traceback). */
value vm_run_module(struct vm *vm, struct code *module);

/* Calls any callable value (user function, builtin, bound method, type,
 * callable object) with args as in builtin.h. Arguments borrowed, new
 * reference returned, or val_err(). Usable from builtins (re-entrant). */
value vm_call(struct vm *vm, value callee, const value *args, int nargs, value kwnames);

/* ---- frames (for the frame evaluator and the tracer) ---- */
/* Binds args to fn's parameters in a new frame on top of the frame stack
 * (cells made, defaults filled, pc 0). NULL after an error (binding errors
 * are Python's: "f() missing 1 required positional argument: 'b'"). */
struct frame *vm_push_call_frame(struct vm *vm, struct func *fn, const value *args, int nargs,
				 value kwnames);
/* A frame for code with every local unbound and empty cells (free
 * variables from fn's closure when fn is given); the caller fills locals,
 * pushes onto the stack (*f->sp++ = v, owned) and sets pc. NULL on overflow. */
struct frame *vm_push_frame(struct vm *vm, struct code *code, struct func *fn);
/* Runs the top frame f from f->pc with its stack as it is until it returns;
 * the frame is popped either way. Returns the result or val_err(). */
value vm_run_frame(struct vm *vm, struct frame *f);
/* Runs exactly one instruction of the top frame f, at f->pc (a call there
 * runs the callee whole, through the frame evaluator when one is set; no
 * lookahead fusion). Returns 0 when f goes on at its new f->pc, 1 when f
 * returned (*result set, the frame popped), -1 after an error (the frame
 * popped, the error pending as for vm_run_frame). */
int vm_step(struct vm *vm, struct frame *f, value *result);
/* Pops the top frame f without running it (drops its values). */
void vm_pop_frame(struct vm *vm, struct frame *f);
struct frame *vm_top_frame(struct vm *vm);   /* NULL when nothing runs */
int vm_frame_count(struct vm *vm);
struct frame *vm_frame_at(struct vm *vm, int i); /* 0 = outermost */

/* The frame evaluator: when set, every call of a user function binds its
 * frame (vm_push_call_frame) and calls fn(vm, frame, ctx), which must
 * consume the frame (vm_run_frame or vm_pop_frame) and return the result.
 * vm_eval_frame_default is what runs when the hook is NULL. */
typedef value (*vm_eval_frame_fn)(struct vm *vm, struct frame *f, void *ctx);
void vm_set_eval_frame(struct vm *vm, vm_eval_frame_fn fn, void *ctx);
vm_eval_frame_fn vm_get_eval_frame(struct vm *vm, void **ctx);
value vm_eval_frame_default(struct vm *vm, struct frame *f, void *ctx);
void vm_set_recursion_limit(struct vm *vm, int limit);
/* The compiling state of the program this VM runs (runtime.h), which the
 * compile builtins and the frame evaluator use; NULL (the default): none,
 * compile() raises. The VM does not own it. */
struct runtime;
void vm_set_runtime(struct vm *vm, struct runtime *rt);
struct runtime *vm_runtime(const struct vm *vm);

/* ---- globals and builtins ---- */
value vm_get_global(struct vm *vm, const char *name);  /* borrowed; VAL_ERR if unbound */
void vm_set_global(struct vm *vm, const char *name, value v);  /* increfs v */
void vm_set_builtin(struct vm *vm, const char *name, value v); /* increfs v */
value vm_lookup_name(struct vm *vm, struct str *name); /* globals then builtins; borrowed; VAL_ERR if neither */

/* ---- errors ---- */
value vm_raise(const char *fmt, ...) __attribute__((format(printf, 1, 2))); /* tj_error_set + val_err() */
bool vm_error_pending(struct vm *vm);
const char *vm_error_message(struct vm *vm);   /* NULL when none */
/* where the pending error happened; false when unknown */
bool vm_error_location(struct vm *vm, const struct source **src, struct src_loc *loc);
/* "Traceback (most recent call last):", the frames, then the diagnostic */
void vm_print_traceback(struct vm *vm, FILE *out);
void vm_error_clear(struct vm *vm);
/* exit(n) (builtins.c): the error it raises unwinds the program like any
 * other, and whoever ran the module ends with status n, printing no
 * traceback (run.c). vm_exit_status is -1 until exit() is called. */
void vm_request_exit(struct vm *vm, int status);
int vm_exit_status(const struct vm *vm);
/* For the frame evaluator, which finds errors in code that the VM did not
 * run (a fullgraph break inside an inlined call, a backend failure): makes
 * the pending library error (tj_error_set) the VM's error, raised at
 * instruction pc of code, unless an error is already pending; either way
 * adds (code, pc) to the traceback. Call it innermost frame first. */
void vm_error_at(struct vm *vm, struct code *code, uint32_t pc);
/* the source location the top frame is executing (pc - 1); false if none */
bool vm_current_location(struct vm *vm, const struct source **src, struct src_loc *loc);
/* the running user stack, outermost first, as traceback lines (for logs) */
void vm_format_stack(struct vm *vm, struct strbuf *out);

/* ---- Python semantics, shared with builtins and the tracer ----
 * All return new references or val_err() after tj_error_set(). */
value vm_binary(enum vm_binop op, value a, value b);
value vm_compare(enum vm_cmpop op, value a, value b);
value vm_unary_neg(value a);
int vm_truth(value v, bool *out);                 /* 0 or -1 */
value vm_getattr(struct vm *vm, value obj, struct str *name);
value vm_subscript(value obj, value index);
int vm_store_subscript(value obj, value index, value v); /* 0 or -1 */
value vm_get_iter(value v);                       /* iter(v) */
int vm_iter_next(value it, value *out);           /* 1: *out set (new ref), 0: exhausted, -1: error */
value vm_sequence_to_list(value v);               /* list(v) */
int64_t vm_len(value v);                          /* len(v), -1 after an error */

/* ---- the tensor extension ----
 * The language knows VAL_TENSOR as a tag and struct tensor as a name: what
 * a tensor does is in this table, which the tensor layer fills and installs
 * (ops_install_hooks, ops.h) when it makes its first tensor, so that the VM
 * calls up into no layer above its own and no tensor meets an empty table. Each slot keeps the convention
 * of the function that calls it: free (obj_free), repr (val_repr), binary
 * (vm_binary, a tensor on either side), compare, neg, truth, getattr,
 * subscript (x[i], and each step of iterating a tensor), iter (iter(t)),
 * len (len(t)), scalar (int(t) and float(t): the number in a one-element
 * tensor), abs and round (the builtins on a tensor, round's ndigits as an
 * int), sum, max and min (the builtins when the first argument is a tensor). */
struct tensor;
struct vm_tensor_hooks {
	void (*free)(struct tensor *t);
	void (*repr)(const struct tensor *t, struct strbuf *out);
	value (*binary)(enum vm_binop op, value a, value b);
	value (*compare)(enum vm_cmpop op, value a, value b);
	value (*neg)(value a);
	int (*truth)(value v, bool *out);
	value (*getattr)(value self, struct str *name);
	value (*subscript)(value self, value index);
	value (*iter)(value self);
	int64_t (*len)(value self);
	value (*scalar)(value self);
	value (*abs)(value self);
	value (*round)(value self, value ndigits);
	builtin_fn sum, max, min;
};
/* NULL until the tensor layer installs its table (no tensor exists then) */
extern const struct vm_tensor_hooks *vm_tensor_hooks;
void vm_set_tensor_hooks(const struct vm_tensor_hooks *hooks);

/* ---- builtins.c: the language's own builtins ---- */
/* print len range int ... sorted, the type names and the dtype names; the
 * layers above add theirs (ops_install, prelude_install) */
void builtins_install(struct vm *vm);            /* called by vm_new */
/* list and str methods, bound to self; val_err() with no error pending when none */
value builtins_method(struct vm *vm, value self, struct str *name);
/* int(x), float(x), str(x), ... : calling the type object t */
value builtins_call_type(struct vm *vm, value_tag t, const value *args, int nargs, value kwnames);

#endif
