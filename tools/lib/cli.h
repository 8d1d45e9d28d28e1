/* cli.h - the command lines of the tools: an option table parsed into a
 * struct of options, the help's option lines, and the main() of a tool
 * with subcommands (tjit-profile, tjit-dot), in git's style: a usage
 * array, an option table and a command table per tool.
 *
 * Part of the tools' library (tools/lib): it knows no VM, so that a tool
 * that only reads the database links none. */
#ifndef TJ_CLI_H
#define TJ_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* An option of a tool's command line, parsed into a struct of options. */
struct cli_option {
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
int cli_parse_option(const char *name, const char *cmd, const struct cli_option *defs, int argc, char **argv,
		     int *i, void *opts);

/* Parses argv[1..argc): the options, anywhere before "--", by defs into
 * opts (glued, when not NULL, first tries a tool's own spellings, as
 * tjit-dot's -Tsvg: true when it took the argument); the other arguments
 * into args[0..max), *nargs of them. 0, or -1 after printing why: the
 * option's error, or "NAME CMD: unexpected argument 'x'" ("NAME: ..."
 * when cmd is NULL) with " (hint)" when hint is not NULL; the caller
 * prints its usage. */
int cli_parse_args(const char *name, const char *cmd, const struct cli_option *defs, int argc, char **argv,
		   void *opts, const char **args, int max, int *nargs, const char *hint,
		   bool (*glued)(const char *arg, void *opts));

/* lines (ended by NULL) to out, a line each: a tool's usage */
void cli_print_lines(FILE *out, const char *const *lines);

/* The help's lines of defs, to stdout ("  --db PATH        the database");
 * an option without help text is not listed (another spelling). */
void cli_print_options(const struct cli_option *defs);

/* A tool with subcommands (tjit-profile, tjit-dot): its commands, its
 * usage and its help, and the main() they share. */
struct cli_command {
	const char *name;
	int (*fn)(int argc, char **argv);   /* argv[0] is the command; NULL: "help" */
	const struct cli_option *options;   /* listed in the help; NULL: none */
	const char *summary;
};
struct cli_tool {
	const char *name;                   /* "tjit-dot" */
	const char *version;
	const char *const *usage;           /* usage lines, ended by NULL */
	const char *about;                  /* the help's first paragraph */
	const char *notes;                  /* its last paragraphs */
	const struct cli_command *commands; /* ended by a NULL name */
};
void cli_tool_usage(const struct cli_tool *t, FILE *out);
/* An argument not spelled as the command takes it (a malformed id) is bad
 * usage: "NAME CMD: bad WHAT 'ARG': expected EXPECTED" (the argument
 * escaped, fprintf_shown) and the usage, on stderr. Returns 2. */
int cli_bad_arg(const struct cli_tool *t, const char *cmd, const char *what, const char *arg, const char *expected);
/* The tool's main: --help, -h, --version, then the command named by
 * argv[1] (a --help among its arguments prints the help instead). A
 * missing or unknown command is bad usage: 2. Standard output is
 * finished with util_finish_stdout (util.h), as every tool ends. */
int cli_tool_main(const struct cli_tool *t, int argc, char **argv);

#endif
