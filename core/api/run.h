/* run.h - running a tj program as the tools do: check the compile
 * switches, read the program, open the compile log and begin the run row,
 * compile it to bytecode, run it in the VM, end the run.
 *
 * `tjit run`, `tjit explain` and `tjit-profile run` are this one function
 * with different options; the tools only parse their command lines.
 *
 * Statuses (ARCHITECTURE.md): 0 success, 1 the program failed (syntax or
 * runtime error; also a database that db_required could not open), 2 bad
 * usage (a bad switch) or an unreadable file.
 */
#ifndef TJ_RUN_H
#define TJ_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct run_options {
	const char *name;           /* the tool, for messages: "tjit" */
	const char *cmd;            /* its subcommand, for messages: "run" ("tjit run: --logs: ...") */
	const char *tool;           /* runs.tool: "tjit run", "tjit explain", "tjit-profile run" */
	int argc;                   /* the command line from the subcommand on, for runs.command */
	char **argv;                /* (joined after name: "tjit run --db x.db prog.tj") */
	const char *file;           /* the program */
	const char *db;             /* --db PATH, else $TJIT_DB, else ./tjit.db */
	bool no_db;                 /* --no-db: log nothing */
	bool db_required;           /* a database that cannot be opened fails the run (status 1)
	                               instead of running without a log */
	const char *backend;        /* --backend NAME or NULL */
	const char *logs;           /* --logs LIST (else $TJIT_LOGS) or NULL */
	const char *cache_size_limit; /* --cache-size-limit N as given, or NULL */
	bool unlimited_cache;       /* lift the cache size limit (tjit-profile run): every recompile is seen */
	bool fullgraph;             /* --fullgraph */
	bool eager;                 /* --eager: compile() does nothing */
	bool no_kernel_cache;       /* --no-kernel-cache: inductor's kernels are kept in memory only */
	bool explain;               /* print `tjit explain`'s report after the run */
};

struct run_result {
	int status;                 /* as above */
	int64_t run_id;             /* the run's handle in the database (db_begin_run); 0: none */
	const char *db_path;        /* the database logged into; NULL with --no-db or when it failed */
};

/* Runs the program; its stdout and stderr are the process's. Returns the
 * status (also in res->status; res may be NULL). The program's compiling
 * state (switches, caches, compile log: runtime.h) is made for it and
 * freed after it, so that programs run one after the other in a process
 * do not see each other's. */
int run_program(const struct run_options *o, struct run_result *res);

/* Reads and compiles path to bytecode (for `tjit dis`): the code, or NULL
 * after printing why ("NAME: cannot read ...": *status 2; a syntax error
 * with its caret: *status 1). *srcp receives the source, which the code
 * points into: free it after the code. */
struct code;
struct source;
struct code *run_load(const char *name, const char *path, struct source **srcp, int *status);

#endif
