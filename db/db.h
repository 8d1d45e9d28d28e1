/* db.h - the compile log: the event writer the core calls, and the null
 * writer behind --no-db.
 *
 * The core hands the writer plain rows (strings and numbers), never its own
 * structs: db/ is the only place that includes sqlite3.h, and it knows
 * nothing of graphs or guards beyond the text the core gives it.
 *
 * The SQLite writer never makes the program wait for SQLite: each call
 * copies its event (a few microseconds) and returns; a thread of the
 * writer's own (started by the first frame or compile: until then the
 * calls write themselves) writes the events in order, each
 * db_log_compile() in a transaction of its own, so that a run that dies
 * keeps every compile logged before it. db_flush(), db_end_run() and db_close() wait until
 * everything queued is written. A crash (SIGSEGV, SIGBUS, SIGFPE, SIGILL,
 * SIGABRT) first lets the thread finish the queue (2 s at most); SIGKILL
 * loses what is still queued: in a steady run the events of the last
 * millisecond or so (a few when every CPU is busy), in a burst of
 * compiles the burst's tail; an exit() without db_close() waits for it.
 *
 * Ids: the calls that log a row return its handle at once, before the row
 * is written; pass it back to this writer (frame_id, break ids, session
 * ids), which maps it to the row. A handle is the row's id in the file as
 * long as no other process logs into the file meanwhile (handles count on
 * from the file's largest ids at open); with concurrent writers the rows
 * are still right, but their ids may differ from the handles. The one
 * exception: db_begin_run as a writer's first event (before any frame or
 * compile started the thread) writes the run at once and returns its id.
 *
 * Writers never fail the program: an SQLite error is reported once on
 * stderr ("tjit: database: ...", from the writer's thread, by the time
 * db_flush returns at the latest) and the writer turns into a null writer
 * for the rest of the run, its handles going on as null ids.
 *
 * The strings and arrays of a row are only read during the call (NULL is
 * stored as NULL where db/schema.sql allows it, else as ''). Every function
 * accepts a NULL writer and then does what the null writer does. A writer
 * is used by one thread at a time, and belongs to the process that opened
 * it: in a child after fork() it silently acts as a null writer, and never
 * touches the parent's thread or connection (fork() waits until the
 * writer's thread is between two events).
 */
#ifndef TJ_DB_H
#define TJ_DB_H

#include <stdint.h>

/* The user_version that db/schema.sql sets: files up to it are opened
 * (older ones migrated), newer ones refused. */
#define DB_SCHEMA_VERSION 4
/* The tables every schema version has had (an SQL list, for db/ itself):
 * a file with a user_version but without them is another application's. */
#define DB_FIRST_TABLES "'sources', 'runs', 'frames', 'compiles'"
#define DB_NFIRST_TABLES 4
/* guard_failures rows per compile at most (the newest entries first): the
 * default cache_size_limit, so that a default run keeps them all */
#define DB_FAILURES_PER_COMPILE 8

struct db_writer;   /* opaque: a vtable and its state */

/* Opens (creating, or migrating from an older user_version) the database at
 * path in WAL mode with a busy timeout. NULL with *err set (malloc'd, no
 * "tjit: database: " prefix; err may be NULL) when it cannot, e.g.
 * "X has schema version N, this tjit understands up to M: ...", "X is
 * damaged: ...", "X: the file is read-only": the
 * caller reports and exits 1 or runs without a log. */
struct db_writer *db_open_writer(const char *path, char **err);
/* The writer for --no-db: every call does nothing and returns ids counting from 1. */
struct db_writer *db_null_writer(void);
/* Writes what is queued and the counters, stops the writer's thread and
 * frees the writer (the file stays). A run not ended by db_end_run keeps
 * ended_at NULL. */
void db_close(struct db_writer *w);
/* Waits until every event queued so far is written (or, after a failure,
 * discarded). The counters that wait in memory (db_frame_counts,
 * db_break_hits) are not events: they go out as those say. Returns at once
 * for the null writer, and in a child after fork(). */
void db_flush(struct db_writer *w);
/* The path --db / TJIT_DB / ./tjit.db selects (the first one set and not empty). */
const char *db_default_path(const char *flag_value);
/* NULL while the writer logs; once it failed (and turned null), the message
 * it reported (a failure of the writer's thread shows here by the time
 * db_flush returns). Always NULL for the null writer. */
const char *db_error(const struct db_writer *w);
/* The key of sources.hash: FNV-1a 64 of text as 16 lowercase hex digits. */
void db_hash_text(const char *text, char out[17]);

struct db_run {
	const char *tool;        /* "tjit run", "tjit explain", "tjit-profile run" */
	const char *command;     /* the command line, joined */
	const char *program;     /* path as given */
	const char *source_text; /* the program's text (stored once by hash), or NULL */
	const char *backend;     /* --backend override or NULL */
	const char *config;      /* "fullgraph=0 cache_size_limit=8 eager=0 no_kernel_cache=0" */
	double started_at;       /* seconds since the epoch; 0: now */
};
/* Stores the source and the run (ended_at NULL) in one transaction; the
 * frames, compiles and minifier sessions that follow belong to it. */
int64_t db_begin_run(struct db_writer *w, const struct db_run *run);
/* Writes the pending counters and marks the run finished now with its exit
 * status, then waits until everything queued is written (db_flush); a
 * killed run never gets here, and its ended_at stays NULL. */
void db_end_run(struct db_writer *w, int exit_status);
/* Stores another source file that graphs refer to (idempotent by hash). */
void db_log_source(struct db_writer *w, const char *path, const char *text);

struct db_frame {
	int frame_index;         /* F of F/N */
	const char *function;
	const char *file;
	int line;                /* def line */
	int resume_pc;           /* 0 = function entry */
	int resume_line;         /* 0 = none */
};
/* Logging the same frame_index twice in a run returns the first row's id. */
int64_t db_log_frame(struct db_writer *w, const struct db_frame *f);
/* Per-frame counters: the totals so far, not increments. Cheap: kept in
 * memory and queued with the next compile, at db_end_run, at db_close, or
 * once a second has passed since they last went out. */
struct db_frame_counts {
	int64_t calls, cache_hits, eager_calls;
	int64_t guard_checks;    /* guard lists checked at run time */
	int64_t guard_check_ns;  /* their time, nanoseconds (estimated from sampled calls) */
	const char *eager_reason;
};
void db_frame_counts(struct db_writer *w, int64_t frame_id, const struct db_frame_counts *c);

struct db_guard {
	const char *kind;        /* "type", "tensor_match", "equals", "length", "id", "backend", "symbolic" */
	const char *text;        /* L['x'].shape == (2,) */
	const char *file;        /* the user line that made the trace assume it (NULL: none) */
	int line, col;
};
struct db_guard_failure {
	const char *failed_compile; /* "0/0": the entry whose guard failed */
	const char *guard_text;
	const char *value_seen;
};
struct db_break {
	const char *code;        /* "TJB001" */
	const char *category;
	const char *message;
	const char *file;
	int line, col, pc;
	const char *user_stack;  /* one "file:line in function" a line, outermost first */
};
struct db_node {
	const char *name, *kind, *op, *args, *dtype, *shape;
	const char *file;        /* NULL: no location (line and col are then ignored) */
	int line, col;
	const char *user_stack;
};
struct db_kernel {
	const char *name;        /* "k_ebe89e360067f01b": k_ and its loop IR's 64-bit hash */
	const char *kind;        /* "pointwise", "reduction", "matmul" */
	const char *hash;        /* hash of its loop IR: the kernel cache key */
	const char *fused_nodes; /* "abs_1, add_2" */
	const char *loop_ir;     /* the printed loop nest */
	const char *llvm_ir;     /* the optimized LLVM IR, or NULL */
	int cache_hit;           /* 1: from the kernel cache */
	double codegen_ms;
};
struct db_graph {
	const char *stage;       /* "captured", "aot_forward", "aot_backward", "inductor" */
	const char *name;
	int op_count;
	const char *listing;     /* the printed graph, LANGUAGE.md §7 */
	int nnodes;
	const struct db_node *nodes;
	int nkernels;            /* stage "inductor" */
	const struct db_kernel *kernels;
};
/* A named phase of a compile (compile_phases): the tracer's "trace" and
 * "guards", the "backend" and, inside it, a stage's own. */
struct db_phase {
	const char *name;
	int parent;              /* index of the enclosing phase in the compile's list; -1: top level */
	double ms;
};
/* A tensor aot_eager's forward graph saves for backward (aot_saved). */
struct db_saved {
	int node;                /* the node's index in the forward graph (nodes.idx) */
	const char *name, *dtype, *shape;
	int64_t bytes;           /* at the example sizes */
};
/* A frame that hits cache_size_limit is logged as a compile too, with
 * reason "cache_limit", outcome "skipped", its guard failures and no graph. */
struct db_compile {
	int64_t frame_id;
	const char *compile_id;  /* "F/N" (stored as compiles.label) */
	int compile_index;
	const char *reason;      /* "first", "recompile", "frozen_miss", "cache_limit" */
	const char *backend;
	const char *dynamic;     /* "None", "True", "False" */
	double started_at;       /* seconds since the epoch; 0: now */
	double trace_ms, guard_ms, backend_ms, total_ms;
	const char *outcome;     /* "ok", "graph_break", "error", "skipped" */
	int op_count;
	const char *error;
	int nguards;
	const struct db_guard *guards;
	int nfailures;
	const struct db_guard_failure *failures;
	int nbreaks;
	const struct db_break *breaks;
	int ngraphs;
	const struct db_graph *graphs;
	int nphases;
	const struct db_phase *phases;
	/* aot_eager's forward/backward partition (partitioned 1; else
	 * saved_bytes is stored as NULL): graphs[saved_graph] is the forward
	 * graph, saved[] what it saves, saved_bytes their sum */
	int partitioned;
	int saved_graph;
	int64_t saved_bytes;
	int nsaved;
	const struct db_saved *saved;
};
/* One transaction (with the pending counters), written by the writer's
 * thread. Returns the compile's handle; break_ids (when not NULL) receives
 * the handle of each break, for db_break_hits. */
int64_t db_log_compile(struct db_writer *w, const struct db_compile *c, int64_t *break_ids);
/* How often a break's instruction ran so far (a total, batched like
 * db_frame_counts); the profiler ranks breaks by it. */
void db_break_hits(struct db_writer *w, int64_t break_id, int64_t hits);

/* tjit-minify: a session in the current run, its steps, its end. Each call
 * is one transaction, so that a killed minifier keeps its steps. */
struct db_minify {
	const char *program;     /* path as given */
	const char *source_text; /* stored once by hash, or NULL */
	const char *backend;
	const char *failure;     /* "compile_error", "runtime_error", "crash", "accuracy" */
	double started_at;       /* seconds since the epoch; 0: now */
};
int64_t db_begin_minify(struct db_writer *w, const struct db_minify *m);
struct db_minify_step {
	const char *phase;       /* "classify", "bisect", "shrink", "verify" */
	const char *candidate;   /* "stage aot_eager", "drop nodes 4..7" */
	int nodes;               /* op nodes in the candidate; < 0: not a graph */
	const char *outcome;     /* "fails", "passes", "other_failure", "timeout", "cut_short" */
	double ms;
};
void db_log_minify_step(struct db_writer *w, int64_t session_id, const struct db_minify_step *s);
struct db_minify_end {
	const char *stage;       /* first failing stage, or NULL */
	const char *result;      /* "minified", "stopped", "not_reproduced", "interrupted", "error", ... (schema.sql) */
	const char *repro_path;  /* or NULL */
	const char *repro_text;  /* stored in sources by hash, or NULL */
};
void db_end_minify(struct db_writer *w, int64_t session_id, const struct db_minify_end *e);

#endif
