/* query.h - the tools' read queries over the compile log (db/schema.sql).
 *
 * db/ is the only place that includes sqlite3.h: the tools get plain
 * structs and strings from here. A struct dbq is one read-only connection
 * (a "file:PATH?mode=ro" URI, with a busy timeout, so that a report never
 * blocks, or is blocked by, a program logging into the same file).
 *
 * Every query filters by an indexed key (a run id, a compile id, a hash):
 * a report costs the same on a database of one run or of thousands. The
 * statements are listed in dbq_statement() so that tests/unit/check_query.c
 * can check each one's EXPLAIN QUERY PLAN.
 *
 * Errors: each function that can fail returns -1 (or NULL) with *err set
 * to a malloc'd message (no "tool: " prefix, lowercase, no period), e.g.
 * "no database at 'x.db'" or "no run 'latest~5' in x.db (it has 3 runs)".
 * err may be NULL. Strings in the structs are malloc'd and owned by them;
 * the *_free functions free an array with its strings.
 */
#ifndef TJ_QUERY_H
#define TJ_QUERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct dbq;   /* opaque: a read-only connection */

/* Opens the database at path for reading. Refuses a missing file ("no
 * database at 'x.db'"), a file that is not a tjit database, and a newer
 * schema version than this build knows. */
struct dbq *dbq_open(const char *path, char **err);
void dbq_close(struct dbq *q);
const char *dbq_path(const struct dbq *q);

/* A RUN as the tools take it: a run id ("12"), "latest", or "latest~N"
 * (the Nth run before the latest, as in git; "latest~0" is "latest").
 * 0 with *id, or -1 with *err ("no run 'latest~5' in x.db (it has 3
 * runs)", "bad run 'x': expected a run id, latest or latest~N"). */
int dbq_resolve_run(struct dbq *q, const char *spec, int64_t *id, char **err);

/* The spellings the tools take, checked before a database is opened (a
 * malformed one is bad usage, exit 2; a well-formed one that names
 * nothing in the database is not there, exit 1): a RUN as above (a run
 * id is 1 or more); a row id, a graph's or a minifier session's (digits,
 * 1 or more, into *id); a compile id F/N (F, N >= 0). */
bool dbq_run_spec_ok(const char *spec);
bool dbq_parse_id(const char *s, int64_t *id);
bool dbq_compile_label_ok(const char *label);

/* The run a process logged: handle (what db_begin_run returned) when that
 * row has this pid and tool, else the newest run with them (another
 * process logged into the file meanwhile); 0 when there is none. */
int64_t dbq_find_run(struct dbq *q, int64_t handle, int64_t pid, const char *tool);

struct dbq_run {
	int64_t id;
	char *tool, *command, *program;
	char *backend;        /* NULL: no --backend override */
	char *config;         /* "fullgraph=0 cache_size_limit=8 eager=0 no_kernel_cache=0" */
	int64_t pid;
	double started_at;    /* seconds since the epoch */
	double ended_at;      /* valid when finished */
	bool finished;        /* ended_at is set: the run ended (else running or killed) */
	int exit_status;      /* valid when finished */
	char *source_text;    /* the program's text by hash; NULL when not stored */
};
/* A run with no end is still running while its process is (on this
 * machine), else it was killed: true while process pid exists. */
bool dbq_run_alive(int64_t pid);
/* "still running, process 12" or "killed: process 12 is gone" ("killed"
 * without a pid), for the words "did not finish (...)" */
void dbq_unfinished_text(int64_t pid, char *buf, size_t n);
/* 0, or -1 with *err ("no run 12 in x.db"). */
int dbq_run_get(struct dbq *q, int64_t id, struct dbq_run *out, char **err);
void dbq_run_release(struct dbq_run *r);

/* A frame of a run with its counters and the sums of its compiles. */
struct dbq_frame {
	int64_t id;
	int frame_index;
	char *function, *file;
	int line;             /* def line */
	int resume_pc;        /* 0: the function's entry */
	int resume_line;      /* 0: none */
	int64_t calls, cache_hits, eager_calls;
	char *eager_reason;   /* NULL when none ran eagerly, or when not known */
	int64_t guard_checks; /* guard lists checked at run time */
	double guard_check_ms;/* their time (estimated from sampled calls) */
	/* from its compiles */
	int64_t compiles;     /* rows, every reason */
	int64_t recompiles;   /* reason 'recompile' */
	int64_t entries;      /* first or recompile that made an entry (outcome ok or graph_break) */
	int64_t cache_limit;  /* reason 'cache_limit' rows (0 or 1) */
	int64_t frozen_miss;  /* reason 'frozen_miss' rows */
	int64_t errors;       /* outcome 'error' */
	int64_t graphs;       /* compiles whose captured graph has ops */
	int64_t ops;          /* their ops */
	double trace_ms, guard_ms, backend_ms, total_ms;
};
/* The frames of a run in frame_index order. */
int dbq_frames(struct dbq *q, int64_t run_id, struct dbq_frame **out, int *n, char **err);
void dbq_frames_free(struct dbq_frame *f, int n);

/* The graph breaks of a run, one per (code, file, line), ranked by hits,
 * then by the compiles that broke there, then by place. */
struct dbq_break {
	char *code, *category;
	char *message;        /* of the first break at the place */
	char *file;
	int line, col;
	char *user_stack;     /* of the first break: "file:line in function" lines */
	int64_t compiles;     /* compiles whose trace broke here */
	int64_t hits;         /* times the breaking instruction ran: graph_breaks.hits summed over
	                         the breaks in the frame itself (a one-line user_stack), or over
	                         all when none is (an inlined callee's break also breaks its
	                         caller at the call, which would count the same runs twice) */
	int64_t fullgraph_errors; /* of those compiles, the ones that raised Unsupported (fullgraph=True) */
};
int dbq_breaks(struct dbq *q, int64_t run_id, struct dbq_break **out, int *n, char **err);
void dbq_breaks_free(struct dbq_break *b, int n);

/* The phases a backend timed inside its compiles ("decompose", "joint",
 * "partition" of aot_eager; the direct children of each compile's
 * "backend" phase in compile_phases), summed by name over a run, in the
 * order they were first logged. */
struct dbq_phase {
	char *name;
	double ms;
	int64_t compiles;     /* compiles that timed it */
};
int dbq_backend_phases(struct dbq *q, int64_t run_id, struct dbq_phase **out, int *n, char **err);
/* The same for one compile, in the order they began (compiles is 1). */
int dbq_compile_backend_phases(struct dbq *q, int64_t compile_id, struct dbq_phase **out, int *n, char **err);
void dbq_phases_free(struct dbq_phase *p, int n);

/* The guard failures of a run by compile, each compile's in their order
 * (newest entry first), streamed: there is one per existing
 * entry per recompile. The strings live until fn returns; fn returns 0 to
 * go on, else the walk stops and returns that value. -1 on an error. */
struct dbq_failure {
	int64_t compile_id;   /* the recompile it triggered */
	int64_t frame_id;
	const char *failed_label;  /* "0/3": the entry whose guard failed */
	const char *guard_text;
	const char *value_seen;
};
int dbq_each_failure(struct dbq *q, int64_t run_id, int (*fn)(void *ctx, const struct dbq_failure *f),
		     void *ctx, char **err);

/* The guards of the compile labelled label ("0/3") in a run, in check order. */
struct dbq_guard {
	int idx;
	char *kind, *text;
	char *file;           /* NULL: no user line */
	int line, col;
};
int dbq_guards(struct dbq *q, int64_t run_id, const char *label, struct dbq_guard **out, int *n, char **err);
void dbq_guards_free(struct dbq_guard *g, int n);

/* ---- browsing: runs, compiles, graphs, nodes (tjit-dot, tjit-tui) ---- */

/* A run in a list, with the counters the writer keeps on its row. */
struct dbq_run_row {
	int64_t id;
	char *tool, *program, *command;
	double started_at;
	double ended_at;      /* valid when finished */
	bool finished;
	int exit_status;      /* valid when finished */
	int64_t pid;
	int64_t compiles, graphs, breaks, recompiles;
};
/* Runs newest first: at most limit of them with an id below before (0:
 * from the newest). One search of the primary key per page. */
int dbq_runs_page(struct dbq *q, int64_t before, int limit, struct dbq_run_row **out, int *n, char **err);
void dbq_run_rows_free(struct dbq_run_row *r, int n);

/* A compile with its frame. */
struct dbq_compile {
	int64_t id, run_id, frame_id;
	char *label;          /* "F/N" */
	int frame_index, compile_index;
	char *function, *file; /* the frame's function and where it is defined */
	int line;             /* its def line */
	int resume_pc;        /* 0: the function's entry */
	int resume_line;      /* 0: none */
	char *reason, *backend, *outcome;
	char *dynamic;        /* NULL: not recorded */
	char *error;          /* NULL unless outcome is 'error' */
	double started_at, trace_ms, guard_ms, backend_ms, total_ms;
	int64_t op_count;
	bool partitioned;     /* aot_eager split the graph into forward and backward (dbq_saved) */
	int64_t saved_bytes;  /* then, the bytes saved between them */
};
/* The compiles of a run in the order they happened (id order): at most
 * limit (0: all) with an id above after (0: from the first). */
int dbq_compiles(struct dbq *q, int64_t run_id, int64_t after, int limit, struct dbq_compile **out, int *n,
		 char **err);
/* The compile labelled label ("0/3") in a run: 0, or -1 with *err ("bad
 * compile id 'x': expected F/N", "no compile 0/9 in run 3"). */
int dbq_compile_get(struct dbq *q, int64_t run_id, const char *label, struct dbq_compile *out, char **err);
void dbq_compile_release(struct dbq_compile *c);
void dbq_compiles_free(struct dbq_compile *c, int n);

/* A graph at one stage of a compile, with where its compile's trace broke. */
struct dbq_graph {
	int64_t id, compile_id, run_id;
	char *label;          /* the compile's "F/N" */
	char *stage;          /* 'captured', 'aot_forward', 'aot_backward', 'inductor' */
	char *name;           /* the function's name */
	char *listing;        /* LANGUAGE.md section 7 */
	int64_t op_count;
	/* the first graph break of its compile (NULL code: the trace returned) */
	char *break_code, *break_category, *break_message, *break_file;
	int break_line, break_col;
};
/* Graph id: 0, or -1 with *err ("no graph 12 in x.db"). */
int dbq_graph_get(struct dbq *q, int64_t graph_id, struct dbq_graph *out, char **err);
/* The graphs of a compile, every stage, in id order. */
int dbq_graphs_of(struct dbq *q, int64_t compile_id, struct dbq_graph **out, int *n, char **err);
void dbq_graph_release(struct dbq_graph *g);
void dbq_graphs_free(struct dbq_graph *g, int n);

/* A node of a graph (db/schema.sql, nodes). */
struct dbq_node {
	int idx;
	char *name, *kind;    /* kind: 'input', 'op', 'output' */
	char *op;             /* NULL for inputs and outputs */
	char *args;           /* an op's arguments, an input's source "L['x']" */
	char *dtype, *shape;  /* NULL when not a tensor */
	char *file;           /* NULL: no user line */
	int line, col;
	char *user_stack;     /* NULL: none */
};
/* The nodes of a graph in graph order. */
int dbq_nodes(struct dbq *q, int64_t graph_id, struct dbq_node **out, int *n, char **err);
void dbq_nodes_free(struct dbq_node *nd, int n);

/* A tensor aot_eager's forward graph saves for backward (aot_saved). */
struct dbq_saved {
	int idx;              /* the order backward takes them in */
	int64_t graph_id;     /* the compile's aot_forward graph */
	int node;             /* the saved node's index there */
	char *name;
	char *dtype, *shape;  /* NULL when not recorded */
	int64_t bytes;        /* at the example sizes */
};
/* The saved tensors of a compile, in order (none without a partition). */
int dbq_saved(struct dbq *q, int64_t compile_id, struct dbq_saved **out, int *n, char **err);
void dbq_saved_free(struct dbq_saved *s, int n);

/* An inductor kernel (kernels), with the stage of the graph it belongs to
 * (aot_forward, aot_backward, or captured). */
struct dbq_kernel {
	int64_t graph_id;
	char *stage;
	int idx;              /* launch order within its graph */
	char *name, *kind, *hash;
	char *fused_nodes;    /* "mul, add, tanh": names of the graph's nodes */
	char *loop_ir;
	char *llvm_ir;        /* NULL: taken from the cache, none generated */
	int cache_hit;
	double codegen_ms;
};
/* The kernels of a compile, by graph then launch order (none but inductor's). */
int dbq_kernels(struct dbq *q, int64_t compile_id, struct dbq_kernel **out, int *n, char **err);
void dbq_kernels_free(struct dbq_kernel *k, int n);
/* The kernels of a run's compiles: *kernels in all, *cached of them from the kernel cache. */
int dbq_kernel_counts(struct dbq *q, int64_t run_id, int64_t *kernels, int64_t *cached, char **err);

/* ---- tjit-tui: pages in both directions ----
 *
 * The explorer shows a window of rows around its cursor and fetches more
 * by key as the cursor moves, so that a list of a million rows costs what
 * a list of ten does. Each function below returns at most limit rows (0:
 * all) next to a key: dir > 0, the rows whose key is above key, in
 * ascending order; dir < 0, those whose key is below key, in descending
 * order (INT64_MIN and INT64_MAX stand for "from the first" and "from the
 * last"). One search of an index per page, no sort. */

/* Runs oldest first from the one after id after: dbq_runs_page's other
 * direction. */
int dbq_runs_after(struct dbq *q, int64_t after, int limit, struct dbq_run_row **out, int *n, char **err);
/* A run's compiles by id (as dbq_compiles, in both directions). */
int dbq_compiles_page(struct dbq *q, int64_t run_id, int64_t key, int dir, int limit, struct dbq_compile **out,
		      int *n, char **err);
/* A frame's compiles by compile index N. */
int dbq_frame_compiles_page(struct dbq *q, int64_t frame_id, int64_t key, int dir, int limit,
			    struct dbq_compile **out, int *n, char **err);
/* A run's frames by frame index, with the counters of their rows; of the
 * sums over their compiles only .compiles is set (the largest N + 1: one
 * index search, where a count would read every compile), the others 0.
 * Free with dbq_frames_free. */
int dbq_frames_page(struct dbq *q, int64_t run_id, int64_t key, int dir, int limit, struct dbq_frame **out, int *n,
		    char **err);
/* A run's graph-break places, one per (code, file, line) as dbq_breaks
 * (the same counts), in that key order: after or before the place of
 * anchor (its code, file and line; NULL: from the first or the last).
 * Free with dbq_breaks_free. */
int dbq_break_places_page(struct dbq *q, int64_t run_id, const struct dbq_break *anchor, int dir, int limit,
			  struct dbq_break **out, int *n, char **err);
/* The graph breaks of one compile in id order (.compiles is 1, .hits its own). */
int dbq_compile_breaks(struct dbq *q, int64_t compile_id, struct dbq_break **out, int *n, char **err);

/* A guard failure with the recompile it triggered. */
struct dbq_failure_row {
	int64_t id, compile_id;
	char *label;          /* the recompile's "F/N" */
	char *function;       /* its frame's function */
	char *failed_label;   /* the entry whose guard failed */
	char *guard_text, *value_seen;
};
/* A run's guard failures by id (compile_id 0), or all the failures of one
 * compile (compile_id > 0: key, dir and limit are ignored). */
int dbq_failures_page(struct dbq *q, int64_t run_id, int64_t compile_id, int64_t key, int dir, int limit,
		      struct dbq_failure_row **out, int *n, char **err);
void dbq_failure_rows_free(struct dbq_failure_row *r, int n);

/* A tjit-minify session (minify_sessions) with its steps counted. */
struct dbq_session {
	int64_t id, run_id;
	char *program;
	char *backend;        /* NULL: not recorded */
	char *failure;        /* 'compile_error', ..., 'none', 'flaky', 'syntax_error' */
	double started_at;
	double ended_at;      /* valid when finished */
	bool finished;        /* ended_at is set */
	char *stage, *result, *repro_path; /* NULL: not known (yet) */
	int64_t steps;        /* its minify_steps rows */
};
/* Sessions by id (run_id 0), or all the sessions of one run (run_id > 0:
 * key, dir and limit are ignored). */
int dbq_sessions_page(struct dbq *q, int64_t run_id, int64_t key, int dir, int limit, struct dbq_session **out,
		      int *n, char **err);
void dbq_sessions_free(struct dbq_session *s, int n);

/* A candidate the minifier tried (minify_steps). */
struct dbq_step {
	int64_t id;
	char *phase, *candidate, *outcome;
	int nodes;            /* op nodes of the candidate graph; -1: not a graph */
	double ms;
};
/* A session's steps by id. */
int dbq_steps_page(struct dbq *q, int64_t session_id, int64_t key, int dir, int limit, struct dbq_step **out,
		   int *n, char **err);
void dbq_steps_free(struct dbq_step *s, int n);

/* ---- for tests/unit/check_query.c ---- */
/* The SQL of statement i (NULL past the last), and whether it may scan the
 * runs table (only the run count of an error message does). */
const char *dbq_statement(int i, bool *may_scan_runs);
/* EXPLAIN QUERY PLAN of statement i, one "detail" a line (malloc'd). */
char *dbq_explain(struct dbq *q, int i, char **err);

#endif
