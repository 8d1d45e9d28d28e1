/* compile_log.h - where every compile event goes: TJIT_LOGS on stderr, the
 * database writer, and the explain sessions that are listening.
 *
 * The frame evaluator fills one compile_record per compile attempt (and per
 * cache-limit or frozen miss) and hands it to compile_log_compile(); this
 * module turns it into log lines (core never prints events anywhere else),
 * database rows (db/db.h, through plain strings) and explain statistics.
 * One struct compile_log serves one program run (runtime.h): it holds the
 * database row ids of the run's frames and the listeners, nothing else
 * survives it.
 */
#ifndef TJ_COMPILE_LOG_H
#define TJ_COMPILE_LOG_H

#include <stdbool.h>
#include <stdint.h>

struct db_frame_counts;
#include <stdio.h>

#include "breaks.h"
#include "compile_ctx.h"
#include "error.h"
#include "graph.h"

struct db_writer;

/* TJIT_LOGS=graph_breaks,recompiles,guards,graph_code[,dynamic,aot_graphs,output_code,fusion,perf_hints] */
enum log_artifact {
	LOG_GRAPH_BREAKS = 1 << 0,
	LOG_RECOMPILES = 1 << 1,
	LOG_GUARDS = 1 << 2,
	LOG_GRAPH_CODE = 1 << 3,
	LOG_DYNAMIC = 1 << 4,
	LOG_AOT_GRAPHS = 1 << 5,
	LOG_OUTPUT_CODE = 1 << 6,
	LOG_FUSION = 1 << 7,        /* inductor's scheduler: what fused, and why not */
	LOG_PERF_HINTS = 1 << 8,    /* inductor: what could not fuse, cache misses worth knowing */
};
/* Parses a TJIT_LOGS / --logs value; unknown names are an error naming the
 * valid ones. "all" or "+all" selects everything. */
int log_parse_artifacts(const char *spec, unsigned *out, char **err);

struct guard_record {
	const char *kind;           /* "type", "equals", "length", "tensor", "id", "backend" */
	char *text;                 /* L['a'].shape == (10,) */
	const struct source *src;   /* the user line that made the trace assume it, or NULL */
	int line, col;
	const char *function;       /* the function of that line (an inlined callee's), or NULL:
	                               then the record's function when src is the record's */
};

struct failure_record {
	char *failed_compile;       /* "0/0": the entry whose guard failed */
	char *guard_text;           /* L['x'].shape[0] == 2 */
	char *value_seen;           /* 4 */
};

struct break_record {
	int code;                   /* enum break_code (breaks.def) */
	char *message;              /* "call to print (side effect)" */
	int pc;
	int nstack;
	struct user_frame *stack;   /* outermost first; [nstack-1] is the breaking line */
};

struct compile_record {
	int frame_index;            /* F */
	int compile_index;          /* N */
	char compile_id[24];        /* "F/N" */
	const char *function;
	const struct source *src;
	int def_line;
	int resume_pc, resume_line; /* 0, 0 for a function's entry */
	const char *reason;         /* "first", "recompile", "frozen_miss", "cache_limit" */
	const char *backend;
	const char *dynamic;        /* "None", "True", "False" */
	double started_at;          /* seconds since the epoch */
	/* the named phases (compile_ctx.h), in the order they began; the
	 * fixed columns below are filled from them: trace_ms, guard_ms and
	 * backend_ms are the top-level phases "trace", "guards" and "backend" */
	int nphases;
	struct compile_phase *phases;
	double trace_ms, guard_ms, backend_ms, total_ms;
	const char *outcome;        /* "ok", "graph_break", "error", "skipped" */
	char *error;
	const char *fallback;       /* an "error" whose graph runs on this backend instead (eager):
	                               it made an entry all the same; NULL: none */
	int nguards;
	struct guard_record *guards;
	int nfailures;
	struct failure_record *failures;
	struct break_record *brk;   /* the break that ended the graph, or NULL */
	struct graph *graph;        /* the captured graph (NULL when it has no ops) */
	int ngraphs_extra;          /* later stages' graphs (aot forward/backward, inductor) */
	struct graph **graphs_extra;
	int nkernels;               /* the kernels the backend generated */
	struct kernel_record *kernels;
	struct saved_info saved;    /* aot_eager's partition: its fwd is one of graphs_extra */
	/* The compiled function (compile()'s result) under whose call this
	 * compile happened: the innermost one running, named by the function it
	 * wraps. `tjit explain` groups compiles by it; NULL name: none known (the
	 * record's own function is used). */
	const char *owner_name;
	const struct source *owner_src;
	int owner_line;             /* its def line */
};

/* ---- the log of a run ---- */
struct compile_log_config {
	unsigned artifacts;         /* enum log_artifact bits */
	FILE *out;                  /* stderr */
	struct db_writer *db;       /* NULL: no database */
};
struct compile_log;
/* cfg may be NULL: nothing logged, warnings on stderr. NULL: out of memory. */
struct compile_log *compile_log_new(const struct compile_log_config *cfg);
void compile_log_free(struct compile_log *log);   /* the database stays open */
unsigned compile_log_artifacts(const struct compile_log *log);
struct db_writer *compile_log_db(const struct compile_log *log);

/* A frame (code, resume pc) seen for the first time: its row. Returns the id
 * to pass to compile_log_frame_counts. */
int64_t compile_log_frame(struct compile_log *log, int frame_index, const char *function,
			  const struct source *src, int def_line, int resume_pc, int resume_line);
void compile_log_frame_counts(struct compile_log *log, int64_t frame_id, const struct db_frame_counts *c);
/* A finished compile attempt: log lines, database rows, explain sessions. */
void compile_log_compile(struct compile_log *log, const struct compile_record *r);
/* A break's instruction ran again (the profiler ranks breaks by hits). */
void compile_log_break_hit(struct compile_log *log, const struct compile_record *r);
/* One line "[0/1] text" on the log stream (TJIT_LOGS=dynamic's create_symbol). */
void compile_log_text(struct compile_log *log, const char *compile_id, const char *text);
/* "cache_size_limit reached" and similar warnings: always printed. */
void compile_log_warning(struct compile_log *log, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A warning at a user line, in the form of the VM's errors ("f.tj:10:9:
 * warning: text", the line, a caret): always printed. */
void compile_log_warning_at(struct compile_log *log, const struct source *src, struct src_loc loc, const char *text);
/* compile_log_warning_at, the first time for this place (src, line,
 * column) in the log's life; later calls at the same place print nothing. */
void compile_log_warning_once_at(struct compile_log *log, const struct source *src, struct src_loc loc,
				 const char *text);

/* Frees what the record owns: error, the guards' texts and the array, the
 * failures' strings and the array, brk with its stack array (the frames'
 * function names are borrowed), the phases, the kernels, and graph and
 * graphs_extra (with the array):
 * a caller that keeps a graph for its artifact sets the pointer to NULL
 * first. Borrowed (const) fields are left alone; the record itself too. */
void compile_record_release(struct compile_record *r);

/* ---- listeners: explain sessions ----
 * Every compile_record passed to compile_log_compile goes, after the log
 * lines and the database rows, to each open listener, newest first, while
 * the record is alive: a listener copies what it keeps. Listeners nest
 * (explain() inside explain(), `tjit explain` around a program that calls
 * explain()); a listener is closed in the reverse order of opening. */
struct compile_listener {
	void (*on_compile)(struct compile_listener *l, const struct compile_record *r);
	struct compile_listener *next;  /* the one opened before it: managed here */
};
void compile_log_listen(struct compile_log *log, struct compile_listener *l);
void compile_log_unlisten(struct compile_log *log, struct compile_listener *l);

/* ---- formatting shared with explain and the tools ---- */
/* "prog.tj:4" style location of one user frame; "<unknown>" without a source */
void compile_log_format_frame(const struct user_frame *f, struct strbuf *out);
/* the text of src's line, indentation and trailing blanks removed; "" if none */
void compile_log_source_line(const struct source *src, int line, struct strbuf *out);
/* the op name of a graph node: "abs" for an op, the function of an
 * allow_in_graph call, "getitem"; nothing for an input */
void compile_log_node_op(const struct gnode *n, struct strbuf *out);

#endif
