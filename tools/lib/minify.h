/* minify.h - tjit-minify's library (doc/minify.md): running a candidate in
 * a child process (minify_run.c), what a run shows, its class and its
 * signature (minify_sig.c), and a session that classifies a failure,
 * bisects its stage, finds its graph and writes a repro (minify.c).
 *
 * It runs programs, so it links the core: it is an archive of its own
 * (libtjminify.a), apart from the tools that only read the database. */
#ifndef TJ_MINIFY_H
#define TJ_MINIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---- one candidate run in a child process (minify_run.c) ---- */

struct minify_limits {
	double timeout_s;         /* wall time; <= 0: none */
	int64_t memory_bytes;     /* RLIMIT_AS; <= 0: none */
};

/* What to run: a program file under a backend (NULL: compile() switched
 * off, the eager reference), logging into db (NULL: no log), with only
 * the compiles listed in compile_only ("0/0,1/2") on the backend, the
 * others on eager (TJIT_COMPILE_ONLY, runtime.h; NULL: all). */
struct minify_cand {
	const char *file;
	const char *backend;
	const char *db;
	const char *compile_only;
	const char *record;       /* TJIT_RECORD=F/N:PATH (runtime.h), or NULL */
	const char *cwd;          /* the folder the child runs in (file is relative to it); NULL: this one */
};

struct minify_result {
	bool timed_out;           /* killed at the time limit */
	bool interrupted;         /* killed because the minifier was asked to stop (minify_stop_signal) */
	int status;               /* exit status, when not signaled */
	int signal;               /* the signal that ended it; 0: exited */
	double ms;                /* wall time */
	char *out, *err;          /* captured stdout and stderr (malloc'd, NUL-ended) */
	long pid;                 /* the child's, to find its run in the db */
};

/* Runs c in a forked child within the limits. 0, or -1 with *err
 * (malloc'd) when no child could be started or waited for (the result is
 * then empty). */
int minify_run(const struct minify_cand *c, const struct minify_limits *lim, struct minify_result *r, char **err);
void minify_result_release(struct minify_result *r);

/* SIGINT, SIGTERM and SIGHUP ask the minifier to stop: the handler only
 * notes the signal, the wait for a child kills the child's process group
 * (and says so: interrupted), and the session winds up. true installs
 * the handler (a signal ignored on entry stays ignored: nohup, a
 * script's background job), false puts the old actions back. */
void minify_catch_signals(bool on);
/* the signal that asked the minifier to stop, 0 none */
int minify_stop_signal(void);

/* ---- classes and signatures (minify_sig.c) ---- */

enum minify_class {
	MZ_PASS,                  /* exit 0, output as the reference's */
	MZ_COMPILE_ERROR,
	MZ_RUNTIME_ERROR,
	MZ_CRASH,
	MZ_HANG,
	MZ_ACCURACY,
	MZ_USAGE,                 /* exit 2: the program could not be started as asked */
};
const char *minify_class_name(enum minify_class c); /* "compile_error", ... "pass" */

struct minify_sig {
	enum minify_class cls;
	char *stage;              /* the stage the message names ("aot_eager"), or NULL */
	char *message;            /* normalized: location dropped, digits as N; NULL: none */
	char *location;           /* "prog.tj:7:9" of the error line, or NULL */
	char *detail;             /* accuracy: the first differing line, as text; or NULL */
};
void minify_sig_release(struct minify_sig *s);
/* "compile_error aot_eager: AotCompileError: ...", "crash SIGSEGV", "accuracy" (malloc'd) */
char *minify_sig_text(const struct minify_sig *s);
/* same class, stage and message */
bool minify_sig_equal(const struct minify_sig *a, const struct minify_sig *b);
/* --match: TEXT is in the message (the signal's name of a crash, the
 * class's name of a hang or accuracy failure); NULL text: always */
bool minify_sig_matches(const struct minify_sig *s, const char *text);

/* The last "FILE:LINE:COL: error: MESSAGE" line of err: *loc gets
 * "FILE:LINE:COL" and *msg MESSAGE (both malloc'd). false when none. */
bool minify_error_line(const char *err, char **loc, char **msg);
/* msg with every run of digits as N (malloc'd) */
char *minify_normalize(const char *msg);
/* Splits a "BACKEND: rest" message: the backend's name when the prefix
 * names one (*rest then points after ": "), else NULL and *rest = msg. */
char *minify_message_stage(const char *msg, const char **rest);

/* Compares a compiled run's stdout with the reference's: words equal,
 * numbers within q + rel * |reference| (q = 1e-4, the printed digit's
 * unit). true when they agree; else false, with *detail (malloc'd) the
 * first line that differs ("line 2: got ..., expected ..."). */
bool minify_outputs_agree(const char *ref, const char *got, double rel, char **detail);
/* the default rel: float32's unit roundoff times 64 */
#define MINIFY_DEFAULT_REL (64.0 / 16777216.0)

/* The class and signature of a finished run (r) against the reference's
 * stdout (ref_out; NULL: no comparison), rel < 0 meaning the default.
 * compile_error when the error
 * line's message is one of compile_errors[0, n) (the run's compiles with
 * outcome error); s is filled (release it). */
void minify_classify(const struct minify_result *r, const char *ref_out, double rel, const char *const *compile_errors,
		     int ncompile_errors, struct minify_sig *s);

/* ---- the failing graph as a program (minify_graph.c) ---- */

enum minify_node_kind { MZN_INPUT, MZN_OP, MZN_ITEM /* an item of a tuple-valued op */ };

struct minify_node {
	enum minify_node_kind kind;
	char *name, *op, *args;   /* as the log has them: "add", "relu_1, 1" */
	char *dtype, *shape;      /* NULL: not a tensor (a tuple) */
	char *where;              /* the user line "prog.tj:7", or NULL */
	bool emit;                /* an op the program can write */
	int *reads, nreads;       /* the nodes its args name */
};

struct minify_graph {
	int n;
	struct minify_node *nodes;    /* graph order, the output node left out */
	int *outputs, noutputs;
	char *label;                  /* "1/0" */
	long *syms;                   /* the size of symbol sN, recorded (-1: none, then 3) */
	int nsyms;
};

/* The captured graph of compile label in the run of child pid in the
 * candidates' log db. 0, or -1 with *err (malloc'd). */
int minify_graph_load(const char *db, long pid, const char *label, struct minify_graph *g, char **err);
void minify_graph_release(struct minify_graph *g);
/* op nodes that keep[] keeps and the program can write */
int minify_graph_kept(const struct minify_graph *g, const bool *keep);
/* The program of the nodes kept (keep[i] per node): a function repro()
 * of them, each dropped node they read a parameter given a random value
 * of its type (seeded), compiled with backend and its result printed;
 * header (comment lines) first. With check_rel >= 0 (an accuracy
 * failure) it also runs repro() eagerly on float64 copies of the float32
 * inputs and, when a compiled output differs by more than 1e-4 +
 * check_rel * |float64 value|, prints "wrong output N ..." and exits 1.
 * in (NULL: random values of the recorded sizes) says how the
 * parameters' values are made. NULL when no op is kept. */
enum minify_fill { MZ_FILL_RANDN, MZ_FILL_ZEROS, MZ_FILL_ONES, MZ_FILL_RECORDED };
/* how the parameters' values are made: their sizes divided by 2^shrink
 * (at least 1; shrink -1: every size 1), filled with fill; RECORDED:
 * node i's value is item slot[i] of the list load(sidecar) gives (random
 * where slot[i] < 0) */
struct minify_inputs {
	int shrink;
	enum minify_fill fill;
	const char *sidecar;
	const int *slot;
};
char *minify_graph_program(const struct minify_graph *g, const bool *keep, const char *backend, uint64_t seed,
			   double check_rel, const struct minify_inputs *in, const char *header);
/* param[i] (g->n entries): node i is a parameter of the program of the
 * nodes keep[] keeps (a dropped node a kept one reads) */
void minify_graph_params(const struct minify_graph *g, const bool *keep, bool *param);
/* The program that computes every value of the graph eagerly: its inputs
 * load()ed from the file inputs (the graph's inputs in order, as
 * TJIT_RECORD saves them), the nodes it cannot write random (seeded),
 * every tensor it makes or is given save()d to the file values; slot[i]
 * (g->n entries) the index of node i's value in that file, -1 none.
 * NULL when the graph has no op it can write. */
char *minify_graph_values_program(const struct minify_graph *g, const char *inputs, const char *values,
				  uint64_t seed, int *slot);
/* The symbolic sizes sN of the graph's input shapes as the recorded
 * inputs[0, n) have them (the graph's inputs in order) */
struct tensor;
void minify_graph_bind_sizes(struct minify_graph *g, struct tensor *const *inputs, int n);
/* the largest size in the shapes of the nodes keep[] marks (at least 3:
 * a symbolic size is given 3), to bound the halvings of the sizes */
int minify_graph_max_size(const struct minify_graph *g, const bool *keep);

/* Logs into w (the user's log, under the minifier's run) the failing
 * graph of compile g->label of child pid in the candidates' log db and
 * its minimized form, as a compile with that label, outcome error, the
 * signature as its error, and two graphs: stage captured (as the log has
 * it) and stage minified (the op nodes keep[] keeps, with their names,
 * each dropped node they read an input). 0, or -1 with *err (malloc'd). */
struct db_writer;
int minify_graph_log(struct db_writer *w, const char *db, long pid, const struct minify_graph *g, const bool *keep,
		     const char *backend, const char *signature, char **err);

/* ---- a session (minify.c) ---- */

struct minify_options {
	const char *program;
	const char *backend;      /* default "inductor" */
	double rel;               /* accuracy tolerance; < 0: MINIFY_DEFAULT_REL */
	const char *match;        /* --match or NULL */
	long max_queries;         /* <= 0: none */
	double max_seconds;       /* <= 0: none */
	double timeout_s;         /* <= 0: derived from the reference */
	int64_t memory_bytes;     /* <= 0: none */
	const char *out_dir;      /* NULL: NAME.minify */
	const char *db;           /* --db, or NULL */
	uint64_t seed;
	const char *command;      /* the command line, for the run row */
	bool progress;            /* steps on stderr */
};

/* Runs the session; the report on out, reasons on stderr. Returns the
 * exit status: 0 a repro written and checked, 1 not reproduced (or not a
 * compiler bug), 2 an unreadable program. */
int minify_main(const struct minify_options *o, FILE *out);

#endif
