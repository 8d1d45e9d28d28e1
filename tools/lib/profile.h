/* profile.h - the report of tjit-profile: what one run compiled, read
 * from the database (db/query.h), analysed, and printed as text or JSON;
 * and the differences between two runs.
 *
 * A report has the sections of issue 4, in this order: graph breaks
 * (deduplicated by code and place, ranked by how often the breaking
 * instruction ran), recompiles per function with their guard failures
 * grouped by guard, suggestions, frames that ran eagerly, compile time,
 * totals. doc/profile.md shows one and says where each number comes from.
 *
 * Guard failures are grouped by their *subject*, the value the guard
 * reads: `L['x'].shape[0]` for "L['x'].shape[0] == 2", `L['n']` for
 * "L['n'] == 3". The values a subject took are the ones that entries were
 * compiled for (the right side of ==) and the ones that failed them
 * (value_seen), distinct, in the order first seen.
 */
#ifndef TJ_PROFILE_H
#define TJ_PROFILE_H

#include <stdbool.h>
#include <stdint.h>

#include "query.h"
#include "strbuf.h"

/* the default of frame_eval's cache_size_limit (LANGUAGE.md section 5) */
#define PROFILE_DEFAULT_CACHE_LIMIT 8
/* a subject that took this many values or more earns a suggestion */
#define PROFILE_SUGGEST_VALUES 3

struct profile_place {         /* one frame of a user stack */
	char *file;
	int line;
	char *function;             /* NULL: not known */
	char *source;               /* the line's text from the stored source; NULL: not stored */
};

struct profile_break {
	char *code, *category, *message;
	const char *hint;           /* from core/base/breaks.def; NULL for an unknown code */
	struct profile_place at;    /* the breaking instruction (innermost frame) */
	int col;
	int nstack;                 /* the user stack, outermost first ([nstack-1] is at) */
	struct profile_place *stack;
	int64_t compiles;           /* compiles whose trace broke here */
	int64_t hits;               /* times the instruction ran */
	int64_t fullgraph_errors;   /* compiles that raised Unsupported here (fullgraph=True) */
};

struct profile_guard {         /* the failures of one guard subject in one function */
	char *subject;              /* L['x'].shape[0] */
	char *text;                 /* the first failure's text: L['x'].shape[0] == 2 */
	int64_t recompiles;         /* misses (recompiles, cache-limit and frozen misses) it failed in */
	int64_t failures;           /* rows: one per existing entry per miss */
	int nvalues;                /* distinct values it took */
	char **values;              /* in the order first seen */
	bool has_place;             /* the guard's user line is known */
	struct profile_place place;
};

struct profile_function {      /* the frames of one function (its entry and its resume points) */
	char *function, *file;
	int line;                   /* def line */
	int first_frame;            /* the smallest frame index: the order of first compile */
	int nframes;
	int64_t compiles;           /* compiles proper (first and recompile) */
	int64_t recompiles;
	int64_t misses;             /* cache-limit and frozen misses (no compile) */
	int64_t max_entries;        /* the most entries one of its frames has */
	bool hit_limit;             /* a frame reached cache_size_limit */
	int64_t calls, cache_hits, eager_calls;
	int64_t graphs, ops, errors;
	double trace_ms, guard_ms, backend_ms, total_ms;
	int64_t guard_checks;       /* guard lists checked at run time ... */
	double guard_check_ms;      /* ... and their time */
	int nguards;                /* its guard subjects, most recompiles first */
	struct profile_guard *guards;
};

struct profile_eager {         /* a frame that ran eagerly */
	char *function, *file;      /* file NULL: a disabled function, known by its calls only */
	int line, resume_line;      /* resume_line 0: the function's entry, -1: a resume point */
	char *called_at;            /* a disabled function: "file:line" of its call (a TJB007 break) */
	const char *reason;         /* "disabled", "cache_limit", "frozen_miss", or "fallback" */
	int64_t eager_calls, calls;
};

struct profile_suggestion {
	const char *kind;           /* "mark_dynamic", "int_values", "float_values", "values",
	                               "cache_limit", "cache_limit_hit" */
	char *function;             /* the function it is about */
	char *subject;              /* the guard subject, or NULL */
	int64_t count;              /* values taken, or entries needed */
	char *text;                 /* the sentence printed */
};

struct profile {
	struct dbq_run run;
	char *db_path;
	int cache_limit;            /* from the run's config: N, -1 unlimited, 0 not recorded */
	/* totals */
	int64_t frames, compiles, recompiles, misses, graphs, ops, errors;
	int64_t breaks;             /* compiles that ended in a graph break */
	int64_t calls, cache_hits, eager_calls;
	int64_t limit_needed;       /* the most entries a frame has: the cache_size_limit the run needs */
	bool limit_hit;             /* a frame reached the limit: it needs more than limit_needed */
	double trace_ms, guard_ms, backend_ms, total_ms;
	int64_t guard_checks;       /* at run time, as in profile_function */
	double guard_check_ms;
	int nphases;                /* the phases a backend timed inside backend_ms (aot_eager's
	                               decompose, joint, partition), in the order first logged */
	struct dbq_phase *phases;
	int64_t kernels, kernels_cached; /* inductor's kernels of the run's compiles, those from the kernel cache */
	/* sections */
	int nbreaks;                /* places, ranked */
	struct profile_break *brk;
	int nfunctions;             /* in order of first compile */
	struct profile_function *functions;
	int nranked;                /* indexes into functions: those with recompiles or misses, ranked */
	int *ranked;
	int nby_time;               /* indexes into functions, most compile time first */
	int *by_time;
	int neager;
	struct profile_eager *eager;
	int nsuggestions;
	struct profile_suggestion *suggestions;
};

/* Reads and analyses run run_id of q. 0, or -1 with *err. */
int profile_load(struct dbq *q, int64_t run_id, struct profile *p, char **err);
void profile_release(struct profile *p);

/* Colors: escape sequences only when color is true. */
void profile_print(const struct profile *p, struct strbuf *out, bool color);
void profile_json(const struct profile *p, struct strbuf *out);

/* Run b against run a (a baseline): returns true when b has graph breaks
 * or recompiles that a had not (what --fail-on-new fails on). */
bool profile_diff_print(const struct profile *a, const struct profile *b, struct strbuf *out, bool color);
bool profile_diff_json(const struct profile *a, const struct profile *b, struct strbuf *out);

/* ---- parts, for tests ---- */
/* Splits a guard's text into its subject and the value it expects:
 * "L['x'].shape[0] == 2" -> "L['x'].shape[0]", "2"; "type(L['n']) is int"
 * -> "type(L['n'])", NULL (only == has a value). Both malloc'd. */
void profile_guard_split(const char *text, char **subject, char **expected);
/* The program name of a guard source ("L['x']" -> "x", "G['w'].grad" ->
 * "w.grad"), or NULL when it has none (an operand-stack slot). */
char *profile_source_name(const char *source);

#endif
