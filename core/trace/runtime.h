/* runtime.h - the compiling state of one program run, in one object.
 *
 * Everything compile(), the frame evaluator and the compile log keep
 * between calls lives here, not in statics: the switches of the tools'
 * command line, the bug to inject, the compile log (its stream, its
 * database, its frame rows, its listeners), the frame caches with the next
 * frame index (frame_eval.c), and the ops taken out of graphs by
 * disallow_in_graph (runtime_op_disallowed). run_program makes one per program
 * and frees it after; a VM finds its runtime through vm_runtime(), so
 * that two programs run one after the other in one process share nothing
 * (compile ids restart at 0/0, no artifact of the first is reused). A VM
 * without a runtime runs everything eagerly: compile() raises.
 */
#ifndef TJ_RUNTIME_H
#define TJ_RUNTIME_H

#include <stdbool.h>

#include "compile_ctx.h"
#include "compile_log.h"

struct backend;
struct frame_eval;
struct vm;

/* The tools' switches (tjit run flags), resolved where the options are parsed. */
struct compile_switches {
	bool disabled;              /* --eager: compile() returns its function unchanged */
	int cache_size_limit;       /* --cache-size-limit N (at least 1) */
	const struct backend *backend; /* --backend NAME: every compile() uses it; NULL: none */
	bool fullgraph;             /* --fullgraph: every compile() behaves as fullgraph=True */
	/* TJIT_COMPILE_ONLY=F/N,... (tjit-minify's search for the failing
	 * graph, doc/minify.md): the compile ids whose graphs the backend
	 * compiles (borrowed); every other graph compiles on `others` (eager),
	 * with the same guards and ids. NULL (or others NULL): every graph */
	const char *compile_only;
	const struct backend *others;
	/* TJIT_RECORD=F/N:PATH (tjit-minify's recorded values, doc/minify.md):
	 * the inputs of the first call of compile F/N are saved to PATH
	 * (tensor_io.h) before its artifact runs (borrowed; NULL: none) */
	const char *record;
};
#define COMPILE_SWITCHES_INIT {false, 8, NULL, false, NULL, NULL, NULL}

struct runtime_config {
	struct compile_switches switches;
	struct compile_log_config log;  /* artifacts, stream, database */
	struct inject_bug bug;          /* TJIT_INJECT_BUG, parsed (compile_ctx_parse_bug) */
};

struct runtime {
	struct compile_switches sw;
	struct inject_bug bug;
	struct compile_log *log;
	struct frame_eval *fe;      /* the frame caches (frame_eval.c) */
	bool *disallowed;           /* by op: disallow_in_graph(op) was called (runtime_set_op_disallowed) */
};

/* cfg NULL: the defaults, no log. NULL when out of memory. */
struct runtime *runtime_new(const struct runtime_config *cfg);
/* Frees the frame caches (their counters go to the log first), then the
 * log; the database writer given in the config stays open. The VMs that
 * used rt must not run compiled code any more. */
void runtime_free(struct runtime *rt);
/* the config a compile(f, ...) call gets once the switches apply */
void runtime_apply_switches(const struct runtime *rt, struct compile_config *cfg);
/* compile_id ("1/0") is one of TJIT_COMPILE_ONLY's (true when unset) */
bool runtime_compile_selected(const struct runtime *rt, const char *compile_id);
/* disallow_in_graph(op) (on) / allow_in_graph(op) (off): op is taken out
 * of graphs, or goes back in. op an ops.def index. */
void runtime_set_op_disallowed(struct runtime *rt, int op, bool on);
/* op is out of graphs (the tracer breaks the graph before it); false for
 * an op out of range or rt NULL (no runtime: nothing is compiled) */
bool runtime_op_disallowed(const struct runtime *rt, int op);

#endif
