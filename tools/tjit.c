/* tjit.c - the tjit command: run a tj program, explain what it compiled,
 * or print its bytecode.
 *
 * Exit status: 0 on success, 1 when the program fails (syntax or runtime
 * error), 2 on bad usage or an unreadable file.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "code.h"
#include "compile_log.h"
#include "error.h"
#include "run.h"
#include "strbuf.h"
#include "util.h"
#include "value.h"

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "0.1.0"
#endif

static const char *const usage_lines[] = {
	"usage: tjit run [--db PATH | --no-db] [--backend NAME] [--fullgraph]",
	"                [--cache-size-limit N] [--logs LIST] [--eager] FILE",
	"       tjit explain [the options of run] FILE",
	"       tjit dis FILE",
	"       tjit --list-break-codes",
	"       tjit --help | --version",
	NULL,
};

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};

static void print_usage(FILE *out) { cli_print_lines(out, usage_lines); }

/* "tjit: WHAT" or "tjit: WHAT 'ARG'", then the usage: 2 */
static int usage_error(const char *what, const char *arg)
{
	if (arg)
		fprintf_shown(stderr, "tjit: %s '%s'\n", what, arg);
	else
		fprintf(stderr, "tjit: %s\n", what);
	print_usage(stderr);
	return 2;
}

/* options shared by the subcommands */
struct options {
	const char *file;
	bool no_db, fullgraph, eager, no_kernel_cache;
	const char *db, *backend, *logs, *cache_size_limit;
};

static const struct cli_option run_options[] = {
	{"--db", "PATH", offsetof(struct options, db),
	 "log into the database PATH (default: $TJIT_DB, else ./tjit.db)"},
	{"--no-db", NULL, offsetof(struct options, no_db), "log nothing to a database"},
	{"--backend", "NAME", offsetof(struct options, backend),
	 "compile with backend NAME, whatever compile() asks for"},
	{"--fullgraph", NULL, offsetof(struct options, fullgraph),
	 "every compile() as with fullgraph=True"},
	{"--cache-size-limit", "N", offsetof(struct options, cache_size_limit),
	 "compiled entries per frame before it runs eagerly (default 8)"},
	{"--logs", "LIST", offsetof(struct options, logs),
	 "print compile events to stderr, as TJIT_LOGS (overrides it)"},
	{"--eager", NULL, offsetof(struct options, eager), "compile() returns its function: nothing compiles"},
	{"--no-kernel-cache", NULL, offsetof(struct options, no_kernel_cache),
	 "inductor's kernels are not read from nor written to the cache folder ($TJIT_CACHE_DIR)"},
	{NULL, NULL, 0, NULL},
};

static int parse_args(const char *cmd, int argc, char **argv, const struct cli_option *defs, struct options *o)
{
	memset(o, 0, sizeof(*o));
	int nfiles = 0;
	if (cli_parse_args("tjit", cmd, defs, argc, argv, o, &o->file, 1, &nfiles, NULL, NULL) < 0) {
		print_usage(stderr);
		return -1;
	}
	if (!o->file) {
		fprintf(stderr, "tjit %s: missing FILE\n", cmd);
		print_usage(stderr);
		return -1;
	}
	if (o->no_db && o->db) {
		fprintf(stderr, "tjit %s: --db and --no-db exclude each other\n", cmd);
		print_usage(stderr);
		return -1;
	}
	return 0;
}

static int finish_stdout(int status)
{
	return util_finish_stdout("tjit", status);
}

/* ---- run and explain: core/api/run.c ---- */

static int run_command(const char *cmd, int argc, char **argv, bool explain)
{
	struct options o;
	if (parse_args(cmd, argc, argv, run_options, &o) < 0)
		return 2;
	struct run_options r = {
		.name = "tjit",
		.cmd = cmd,
		.tool = explain ? "tjit explain" : "tjit run",
		.argc = argc,
		.argv = argv,
		.file = o.file,
		.db = o.db,
		.no_db = o.no_db,
		.backend = o.backend,
		.logs = o.logs,
		.cache_size_limit = o.cache_size_limit,
		.fullgraph = o.fullgraph,
		.eager = o.eager,
		.no_kernel_cache = o.no_kernel_cache,
		.explain = explain,
	};
	return run_program(&r, NULL);
}

static int cmd_run(int argc, char **argv)
{
	return run_command("run", argc, argv, false);
}

static int cmd_explain(int argc, char **argv)
{
	return run_command("explain", argc, argv, true);
}

static int cmd_dis(int argc, char **argv)
{
	struct options o;
	if (parse_args("dis", argc, argv, NULL, &o) < 0)
		return 2;
	struct source *src = NULL;
	int status = 0;
	struct code *code = run_load("tjit", o.file, &src, &status);
	if (!code)
		return status;
	struct strbuf sb = STRBUF_INIT;
	code_disassemble(code, &sb); /* inner functions follow their module */
	if (sb.len)
		fwrite(sb.buf, 1, sb.len, stdout);
	sb_release(&sb);
	val_decref(val_obj(VAL_CODE, code));
	source_free(src);
	return finish_stdout(0);
}

static const struct command commands[] = {
	{"run", cmd_run, "run a program"},
	{"explain", cmd_explain, "run a program, then explain what each compiled function compiled"},
	{"dis", cmd_dis, "print the bytecode of a program"},
	{NULL, NULL, NULL},
};

static void print_help(void)
{
	print_usage(stdout);
	fputs("\ncommands:\n", stdout);
	for (const struct command *c = commands; c->name; c++)
		printf("  %-8s %s\n", c->name, c->summary);
	fputs("\noptions of run and explain:\n", stdout);
	for (const struct cli_option *d = run_options; d->name; d++) {
		char left[64];
		snprintf(left, sizeof left, "%s%s%s", d->name, d->arg ? " " : "", d->arg ? d->arg : "");
		printf("  %-24s %s\n", left, d->help);
	}
	fputs("\nTJIT_LOGS=graph_breaks,recompiles,guards,graph_code (or all) prints those\n"
	      "compile events to stderr; TJIT_DB names the database.\n"
	      "\nExit status: 0 success, 1 the program failed, 2 bad usage.\n",
	      stdout);
}

int main(int argc, char **argv)
{
	if (!isatty(STDOUT_FILENO))
		setvbuf(stdout, NULL, _IOFBF, 1 << 16);
	if (argc < 2)
		return usage_error("missing command", NULL);
	const char *cmd = argv[1];
	if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
		print_help();
		return finish_stdout(0);
	}
	if (strcmp(cmd, "--version") == 0) {
		printf("tjit %s\n", PACKAGE_VERSION);
		return finish_stdout(0);
	}
	if (strcmp(cmd, "--list-break-codes") == 0) {
		struct strbuf sb = STRBUF_INIT;
		breaks_doc(&sb);
		fwrite(sb.buf, 1, sb.len, stdout);
		sb_release(&sb);
		return finish_stdout(0);
	}
	for (const struct command *c = commands; c->name; c++) {
		if (strcmp(c->name, cmd) == 0) {
			for (int i = 2; i < argc; i++) {
				if (strcmp(argv[i], "--help") == 0) {
					print_help();
					return finish_stdout(0);
				}
				if (strcmp(argv[i], "--") == 0)
					break;
			}
			return c->fn(argc - 1, argv + 1);
		}
	}
	return usage_error("unknown command", cmd);
}
