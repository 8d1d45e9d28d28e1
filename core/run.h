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

/* An option of a tool's command line, parsed into a struct of options. */
struct run_option {
	const char *name;           /* "--db" */
	const char *arg;            /* NULL: a flag (a bool); else the value's name (a string) */
	size_t offset;              /* of the bool or the const char * in the struct */
	const char *help;
};

/* Parses the option argv[*i] ("--name", "--name=VALUE" or "--name VALUE",
 * which takes argv[*i + 1] and advances *i) by defs (ended by a NULL name;
 * defs may be NULL: no options) into the struct at opts. 0, or -1 after
 * printing why ("NAME CMD: unknown option '-x'", or "NAME: ..." when cmd
 * is NULL); the caller prints its usage. */
int run_parse_option(const char *name, const char *cmd, const struct run_option *defs, int argc, char **argv,
		     int *i, void *opts);

/* The help's lines of defs, to stdout ("  --db PATH        the database");
 * an option without help text is not listed (another spelling). */
void run_print_options(const struct run_option *defs);

/* A tool with subcommands (tjit-profile, tjit-dot): its commands, its
 * usage and its help, and the main() they share. */
struct run_command {
	const char *name;
	int (*fn)(int argc, char **argv);   /* argv[0] is the command; NULL: "help" */
	const struct run_option *options;   /* listed in the help; NULL: none */
	const char *summary;
};
struct run_tool {
	const char *name;                   /* "tjit-dot" */
	const char *version;
	const char *const *usage;           /* usage lines, ended by NULL */
	const char *about;                  /* the help's first paragraph */
	const char *notes;                  /* its last paragraphs */
	const struct run_command *commands; /* ended by a NULL name */
};
void run_tool_usage(const struct run_tool *t, FILE *out);
/* The tool's main: --help, -h, --version, then the command named by
 * argv[1] (a --help among its arguments prints the help instead). A
 * missing or unknown command is bad usage: 2. */
int run_tool_main(const struct run_tool *t, int argc, char **argv);

/* Flushes stdout; a write error is reported ("NAME: error writing to
 * stdout: ...") and turns status 0 into 1. Returns the status. */
int run_finish_stdout(const char *name, int status);

#endif
