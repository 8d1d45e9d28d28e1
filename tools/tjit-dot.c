/* tjit-dot.c - graphs and runs of the compile log as Graphviz DOT, or
 * rendered to SVG, PNG or PDF (doc/dot.md).
 *
 * A thin main: reading the database is db/query.c, the drawings and
 * their output viz/.
 *
 * Exit status: 0 success; 1 no database, no such graph, run or compile,
 * or an output that cannot be written or rendered; 2 bad usage (a
 * malformed id too, checked before the database is opened).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "db.h"
#include "query.h"
#include "strbuf.h"
#include "util.h"
#include "viz.h"

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "0.1.0"
#endif

#define NAME "tjit-dot"

static const char *const usage_lines[] = {
	"usage: tjit-dot graph [--db PATH] [-o FILE] [--force] [-T FORMAT]",
	"                      [--max-nodes N] ID",
	"       tjit-dot graph [--db PATH] [-o FILE] [--force] [-T FORMAT]",
	"                      [--max-nodes N] --compile F/N [--run RUN] [--stage STAGE]",
	"       tjit-dot run [--db PATH] [-o FILE] [--force] [-T FORMAT] [--max-nodes N]",
	"                    [RUN]",
	"       tjit-dot minify [--db PATH] [-o FILE] [--force] [-T FORMAT]",
	"                       [--max-nodes N] [--minimized] [SESSION]",
	"       tjit-dot help",
	"       tjit-dot --help | --version",
	NULL,
};

static const struct cli_tool tool; /* at the end: its commands come first */

static void print_usage(FILE *out) { cli_tool_usage(&tool, out); }

/* ---- options ---- */

struct options {
	const char *args[1];          /* the positional argument */
	int nargs;
	const char *db, *output, *format, *max_nodes, *compile, *run, *stage;
	bool force;                   /* -o may replace a file that is not a drawing */
	bool minimized;               /* minify: the minimized graph, not the original */
	int max;                      /* --max-nodes as a number */
};

#define OPT_DB {"--db", "PATH", offsetof(struct options, db), "the database (default: $TJIT_DB, else ./tjit.db)"}
#define OPT_OUTPUT {"-o", "FILE", offsetof(struct options, output), "write to FILE (default: stdout)"}
#define OPT_FORCE                                                                                    \
	{"--force", NULL, offsetof(struct options, force),                                           \
	 "let -o replace a file that is not a drawing"}
#define OPT_FORMAT                                                                                   \
	{"-T", "FORMAT", offsetof(struct options, format),                                           \
	 "dot (the default), or svg, png, pdf: rendered by Graphviz"}
#define OPT_MAX                                                                                      \
	{"--max-nodes", "N", offsetof(struct options, max_nodes),                                    \
	 "draw the first N ops (graph) or compiles (run), note the rest"}

static const struct cli_option graph_options[] = {
	OPT_DB,
	OPT_OUTPUT,
	OPT_FORCE,
	OPT_FORMAT,
	OPT_MAX,
	{"--compile", "F/N", offsetof(struct options, compile), "the graph of compile F/N of a run (instead of ID)"},
	{"--run", "RUN", offsetof(struct options, run), "the run of --compile (default: latest)"},
	{"--stage", "STAGE", offsetof(struct options, stage), "the graph of --compile at STAGE (default: captured)"},
	{NULL, NULL, 0, NULL},
};

static const struct cli_option minify_options[] = {
	OPT_DB,
	OPT_OUTPUT,
	OPT_FORCE,
	OPT_FORMAT,
	OPT_MAX,
	{"--minimized", NULL, offsetof(struct options, minimized),
	 "the minimized graph (the culprit alone), not the original"},
	{NULL, NULL, 0, NULL},
};

static const struct cli_option run_options[] = {
	OPT_DB,
	OPT_OUTPUT,
	OPT_FORCE,
	OPT_FORMAT,
	OPT_MAX,
	{NULL, NULL, 0, NULL},
};

/* "-Tsvg", "-ofile" as Graphviz's dot takes them: the value glued to the
 * letter. true when a was one (taken). */
static bool glued_option(const char *a, void *opts)
{
	struct options *o = opts;
	if (a[0] != '-' || (a[1] != 'T' && a[1] != 'o') || !a[2] || a[2] == '=')
		return false;
	if (a[1] == 'T')
		o->format = a + 2;
	else
		o->output = a + 2;
	return true;
}

/* 0, or -1 after printing why (usage). argv[0] is the subcommand. */
static int parse_args(const char *cmd, int argc, char **argv, const struct cli_option *defs, int max_args,
		      struct options *o)
{
	memset(o, 0, sizeof *o);
	if (cli_parse_args(NAME, cmd, defs, argc, argv, o, o->args, max_args, &o->nargs, NULL, glued_option) < 0) {
		print_usage(stderr);
		return -1;
	}
	if (!o->format)
		o->format = "dot";
	if (!viz_format_known(o->format)) {
		fprintf_shown(stderr, NAME " %s: -T: expected " VIZ_FORMATS ", got '%s'\n", cmd, o->format);
		return -1;
	}
	if (o->max_nodes) {
		char *end = NULL;
		errno = 0;
		long n = strtol(o->max_nodes, &end, 10);
		if (errno || end == o->max_nodes || *end || n < 0 || n > INT_MAX) {
			fprintf_shown(stderr, NAME " %s: --max-nodes: expected a whole number >= 0, got '%s'\n", cmd,
				o->max_nodes);
			return -1;
		}
		o->max = (int)n;
	}
	if (viz_format_binary(o->format) && !o->output && isatty(STDOUT_FILENO)) {
		fprintf(stderr, NAME " %s: not writing %s to a terminal: use -o FILE\n", cmd, o->format);
		return -1;
	}
	return 0;
}

/* ---- the database ---- */

static struct dbq *open_db(const struct options *o)
{
	char *err = NULL;
	struct dbq *q = dbq_open(db_default_path(o->db), &err);
	if (!q) {
		fprintf_shown(stderr, NAME ": %s\n", err ? err : "cannot open the database");
		free(err);
	}
	return q;
}

/* 1 after printing err */
static int fail(char *err)
{
	fflush(stdout);
	fprintf_shown(stderr, NAME ": %s\n", err ? err : "failed");
	free(err);
	return 1;
}

#define RUN_EXPECTED "a run id (1, 2, ...), latest or latest~N"

/* ---- the subcommands ---- */

static int cmd_graph(int argc, char **argv)
{
	struct options o;
	if (parse_args("graph", argc, argv, graph_options, 1, &o) < 0)
		return 2;
	if (o.nargs && o.compile) {
		fprintf(stderr, NAME " graph: give a graph ID or --compile F/N, not both\n");
		print_usage(stderr);
		return 2;
	}
	if (!o.nargs && !o.compile) {
		fprintf(stderr, NAME " graph: missing ID (or --compile F/N)\n");
		print_usage(stderr);
		return 2;
	}
	if (!o.compile && (o.run || o.stage)) {
		fprintf(stderr, NAME " graph: %s needs --compile F/N\n", o.run ? "--run" : "--stage");
		print_usage(stderr);
		return 2;
	}
	int64_t id = 0;
	if (o.nargs && !dbq_parse_id(o.args[0], &id))
		return cli_bad_arg(&tool, "graph", "graph id", o.args[0], "a number >= 1 (as tjit-dot run shows)");
	if (o.compile && !dbq_compile_label_ok(o.compile))
		return cli_bad_arg(&tool, "graph", "compile id", o.compile, "F/N, as 0/1");
	if (o.run && !dbq_run_spec_ok(o.run))
		return cli_bad_arg(&tool, "graph", "run", o.run, RUN_EXPECTED);
	/* the stages graphs are logged at (graph_stage_name), the kernels' and
	 * the minifier's */
	static const char *const stages[] = {"captured", "aot_forward", "aot_backward", "inductor",
					     "inductor_backward", "minified"};
	enum { NSTAGES = sizeof stages / sizeof *stages };
	bool known = !o.stage;
	for (size_t i = 0; !known && i < NSTAGES; i++)
		known = strcmp(o.stage, stages[i]) == 0;
	if (!known) { /* "captured, ..., inductor_backward or minified" */
		struct strbuf names = {0};
		for (size_t i = 0; i < NSTAGES; i++)
			sb_printf(&names, "%s%s", i == 0 ? "" : i + 1 < NSTAGES ? ", " : " or ", stages[i]);
		int status = cli_bad_arg(&tool, "graph", "stage", o.stage, sb_str(&names));
		sb_release(&names);
		return status;
	}
	struct dbq *q = open_db(&o);
	if (!q)
		return 1;
	char *err = NULL;
	int status = 0;
	if (o.compile) {
		int64_t run_id = 0;
		if (dbq_resolve_run(q, o.run ? o.run : "latest", &run_id, &err) < 0 ||
		    viz_compile_graph(q, run_id, o.compile, o.stage, &id, &err) < 0)
			status = fail(err);
	}
	/* --stage inductor (inductor_backward): the forward (backward) graph
	 * its kernels compute, a cluster per kernel */
	bool kernels = o.stage && (strcmp(o.stage, "inductor") == 0 || strcmp(o.stage, "inductor_backward") == 0);
	if (status == 0 && (kernels ? viz_export_kernels(q, id, o.format, o.output, o.force, o.max, &err)
				    : viz_export_graph(q, id, o.format, o.output, o.force, o.max, &err)) < 0)
		status = fail(err);
	dbq_close(q);
	return util_finish_stdout(NAME, status);
}

static int cmd_run(int argc, char **argv)
{
	struct options o;
	if (parse_args("run", argc, argv, run_options, 1, &o) < 0)
		return 2;
	if (o.nargs && !dbq_run_spec_ok(o.args[0]))
		return cli_bad_arg(&tool, "run", "run", o.args[0], RUN_EXPECTED);
	struct dbq *q = open_db(&o);
	if (!q)
		return 1;
	char *err = NULL;
	int64_t run_id = 0;
	int status = 0;
	if (dbq_resolve_run(q, o.nargs ? o.args[0] : "latest", &run_id, &err) < 0 ||
	    viz_export_run(q, run_id, o.format, o.output, o.force, o.max, &err) < 0)
		status = fail(err);
	dbq_close(q);
	return util_finish_stdout(NAME, status);
}

static int cmd_minify(int argc, char **argv)
{
	struct options o;
	if (parse_args("minify", argc, argv, minify_options, 1, &o) < 0)
		return 2;
	int64_t id = 0;
	if (o.nargs && !dbq_parse_id(o.args[0], &id))
		return cli_bad_arg(&tool, "minify", "session", o.args[0], "a number >= 1 (as tjit-tui's sessions show)");
	struct dbq *q = open_db(&o);
	if (!q)
		return 1;
	char *err = NULL;
	int status = 0;
	if (viz_export_minify(q, id, o.minimized, o.format, o.output, o.force, o.max, &err) < 0)
		status = fail(err);
	dbq_close(q);
	return util_finish_stdout(NAME, status);
}

static const struct cli_command commands[] = {
	{"graph", cmd_graph, graph_options, "a graph: its ops, their types, sources and edges"},
	{"run", cmd_run, run_options, "a run: frames, compiles, graphs, breaks and recompiles"},
	{"minify", cmd_minify, minify_options, "a tjit-minify session: the failing graph, its culprit marked"},
	{"help", NULL, NULL, "print this help"},
	{NULL, NULL, NULL, NULL},
};

static const struct cli_tool tool = {
	NAME,
	PACKAGE_VERSION,
	usage_lines,
	"Graphviz drawings of the compile log: a graph, or the chain of a run.\n",
	"An ID is a graph's id in the database (tjit-dot run shows them). A RUN\n"
	"is a run id (1, 2, ...), latest, or latest~N (the Nth run before the\n"
	"latest). A SESSION is a tjit-minify session's id (default: the latest).\n"
	"Ids start at 1; F/N is two numbers from 0.\n"
	"TJIT_DB names the default database.\n"
	"-o replaces a drawing (DOT, Graphviz's SVG, PNG, PDF) or an empty file;\n"
	"any other file only with --force.\n"
	"\nExit status: 0 success; 1 no database, graph, run or compile, or an\n"
	"output that cannot be written or is not a drawing; 2 bad usage (a\n"
	"malformed ID, F/N, RUN or SESSION too).\n",
	commands,
};

int main(int argc, char **argv)
{
	return cli_tool_main(&tool, argc, argv);
}
