/* compile_ctx.h - what one compile of a frame carries through its passes
 * and hands to its backend (backend.h), and what comes back for the log.
 *
 * The frame evaluator makes one context per compile (frame_eval.c's
 * compile_frame). In it a pass or a backend finds:
 *   - the compile config: what compile(f, backend=, fullgraph=, dynamic=)
 *     asked for, once the tools' overrides apply;
 *   - the bug to inject (TJIT_INJECT_BUG, parsed once per run), for the
 *     stages that have one (doc/logs.md);
 *   - the logger: which TJIT_LOGS artifacts are on and a stream to print a
 *     stage's dump on, every line tagged with the compile id;
 * and it hands back, for the compile_record and the database:
 *   - named phases with their times (trace, guards, backend and, inside
 *     it, the backend's own: "decompose", "codegen", ...);
 *   - the graphs it made on the way (aot forward/backward, inductor);
 *   - the kernels it generated (name, fused nodes, source text, time).
 * Everything handed back is owned by the context until the evaluator
 * moves it into the record (compile_ctx_release frees what is left).
 */
#ifndef TJ_COMPILE_CTX_H
#define TJ_COMPILE_CTX_H

#include <stdbool.h>

struct backend;
struct compile_log;
struct graph;
struct source;

/* What compile(f, backend=, fullgraph=, dynamic=) asked for. */
struct compile_config {
	const struct backend *backend;
	bool fullgraph;
	const char *dynamic;        /* "None", "True", "False" (static strings) */
	bool frozen;                /* freeze(cf): never compile, misses run eagerly */
	/* the compiled function, for the records' owner_* (explain groups by it) */
	const char *owner_name;
	const struct source *owner_src;
	int owner_line;
};

/* TJIT_INJECT_BUG=<stage>:<kind> (ARCHITECTURE.md): the stage named makes
 * that failure on graphs that use relu, so that the minifier has real
 * failures of each stage to find. Crash, hang and flaky are for the
 * minifier's tests (doc/backends.md): inductor's crash is its run-time
 * error (a faulting store in the kernel); hang and flaky are aot's only. */
enum inject_stage { INJECT_NONE, INJECT_AOT, INJECT_INDUCTOR };
enum inject_kind { INJECT_COMPILE_ERROR, INJECT_RUNTIME_ERROR, INJECT_ACCURACY, INJECT_CRASH, INJECT_HANG,
		   INJECT_FLAKY };
struct inject_bug {
	enum inject_stage stage;    /* INJECT_NONE: no bug */
	enum inject_kind kind;
};
/* Parses a TJIT_INJECT_BUG value: NULL or "" is no bug. 0, or -1 with *err
 * (malloc'd) saying why: "unknown stage 'x' in 'x:accuracy' (valid: aot,
 * inductor)", "unknown kind ... (valid: compile_error, runtime_error,
 * accuracy, crash, hang, flaky)", "kind 'hang' is stage aot's only, in
 * 'inductor:hang'", "expected <stage>:<kind>, got 'x'". */
int compile_ctx_parse_bug(const char *spec, struct inject_bug *out, char **err);

/* A named phase of a compile. A phase begun while another is open ran
 * inside it: its time is part of its parent's. */
struct compile_phase {
	const char *name;           /* a string literal: "trace", "guards", "backend", "codegen" */
	int parent;                 /* index of the enclosing phase, -1 at the top */
	double start_ms;            /* monotonic, while open */
	double ms;                  /* its time once ended */
};

/* A kernel a backend generated, for the log (db/schema.sql's kernels). */
struct kernel_record {
	char *name;                 /* "k_ebe89e360067f01b": k_ and its loop IR's 64-bit hash */
	char *kind;                 /* "pointwise", "reduction", "matmul" */
	char *hash;                 /* the kernel cache key, or NULL */
	char *fused_nodes;          /* the graph nodes it computes: "abs_1, add_2" */
	char *loop_ir;              /* the printed loop nest, or NULL */
	char *source;               /* its generated source (LLVM IR), or NULL */
	bool cache_hit;             /* taken from the kernel cache */
	double codegen_ms;
	const struct graph *graph;  /* the graph it belongs to: one handed back with
	                               compile_ctx_add_graph, or NULL for the captured one */
};
/* Frees the strings of k (not k). */
void kernel_record_release(struct kernel_record *k);

/* aot_eager's partition, for the log (TJIT_LOGS=aot_graphs' line after
 * the graphs, db/schema.sql's aot_saved and compiles.saved_bytes): the
 * last nsaved outputs of fwd, a graph handed back, are the tensors saved
 * for backward. */
struct saved_info {
	const struct graph *fwd;    /* NULL: no partition */
	int nsaved;
	int nrecomputed;            /* forward nodes backward computes again rather than takes */
};

struct compile_ctx {
	/* given */
	const struct compile_config *cfg;
	const struct inject_bug *bug;     /* never NULL */
	struct compile_log *log;          /* NULL: no logging */
	const char *compile_id;           /* "0/1" */
	struct vm *vm;                    /* the program's, set by the frame evaluator; NULL: a
	                                     graph compiled outside a run (aot_inline.h) */
	/* handed back */
	bool unsupported;                 /* set by a compile that returns NULL because it cannot
	                                     handle the graph: the frame runs on the backend's
	                                     fallback (backend.h) rather than raise */
	int nphases, phases_cap;
	struct compile_phase *phases;     /* in the order they began */
	int open;                         /* the innermost open phase, -1: none */
	int ngraphs, graphs_cap;
	struct graph **graphs;
	int nkernels, kernels_cap;
	struct kernel_record *kernels;
	struct saved_info saved;          /* compile_ctx_set_saved */
	double start_ms;
};

void compile_ctx_init(struct compile_ctx *cc, const struct compile_config *cfg, const struct inject_bug *bug,
		      struct compile_log *log, const char *compile_id);
/* Frees the phases, graphs and kernels still in cc. */
void compile_ctx_release(struct compile_ctx *cc);
/* Drops the graphs, kernels and partition that a compile handed back
 * (it failed: its fallback hands back its own), keeping the phases, whose
 * time was spent all the same. */
void compile_ctx_drop_results(struct compile_ctx *cc);

/* Phases: begin returns the phase's index for end (-1 when out of memory:
 * end(-1) does nothing, the phase is not recorded). Phases end in the
 * reverse order of beginning. add records a phase timed elsewhere (the
 * tracer's), inside the innermost open one. */
int compile_ctx_phase_begin(struct compile_ctx *cc, const char *name);
void compile_ctx_phase_end(struct compile_ctx *cc, int phase);
void compile_ctx_phase_add(struct compile_ctx *cc, const char *name, double ms);
/* The time of the top-level phases named name (0 when none). */
double compile_ctx_phase_ms(const struct compile_ctx *cc, const char *name);
/* Since compile_ctx_init. */
double compile_ctx_elapsed_ms(const struct compile_ctx *cc);

/* A stage graph for the log (stage aot_forward, ...): cc takes g over (it
 * stays alive as long as the compile record, after the artifact is made).
 * 0, or -1 when out of memory (g is freed then). */
int compile_ctx_add_graph(struct compile_ctx *cc, struct graph *g);
/* A kernel for the log: its strings are copied. 0, or -1 when out of memory. */
int compile_ctx_add_kernel(struct compile_ctx *cc, const struct kernel_record *k);
/* The partition of a forward and a backward graph, for the log: the last
 * nsaved outputs of fwd (a graph handed back with compile_ctx_add_graph)
 * are saved for backward, nrecomputed nodes are computed again there. */
void compile_ctx_set_saved(struct compile_ctx *cc, const struct graph *fwd, int nsaved, int nrecomputed);

/* The logger: is the TJIT_LOGS artifact (enum log_artifact) on? */
bool compile_ctx_logs(const struct compile_ctx *cc, unsigned artifact);
/* Prints text on the log stream, each line tagged "[F/N] " (a stage's dump). */
void compile_ctx_dump(const struct compile_ctx *cc, const char *text);

#endif
