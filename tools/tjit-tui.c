/* tjit-tui.c - an ncurses explorer of the compile log (doc/tui.md).
 *
 * A thin main: the views are tui/view.c, the drawing tui/draw.c, the
 * queries db/query.c, d's export viz/ (viz_export_graph). The database is opened (read-only) and its first
 * page read before the terminal is touched, so that every error is a
 * plain line on stderr.
 *
 * Exit status: 0 success; 1 no database, not a tjit database, or no
 * terminal; 2 bad usage.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <locale.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "db.h"
#include "draw.h"
#include "query.h"
#include "strbuf.h"
#include "util.h"
#include "view.h"
#include "viz.h"

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "0.1.0"
#endif

#define NAME "tjit-tui"

static const char *const usage_lines[] = {
	"usage: tjit-tui [--db PATH] [-C | --no-color] [DB]",
	"       tjit-tui --help | --version",
	NULL,
};

struct options {
	const char *db;
	bool no_color, help, version;
};

static const struct cli_option options[] = {
	{"--db", "PATH", offsetof(struct options, db), "the database (as DB; default: $TJIT_DB, else ./tjit.db)"},
	{"--no-color", NULL, offsetof(struct options, no_color), "no colors (also -C, or NO_COLOR set)"},
	{"-C", NULL, offsetof(struct options, no_color), NULL},
	{"--help", NULL, offsetof(struct options, help), "print this help"},
	{"-h", NULL, offsetof(struct options, help), NULL},
	{"--version", NULL, offsetof(struct options, version), "print the version"},
	{NULL, NULL, 0, NULL},
};

static void print_usage(FILE *out) { cli_print_lines(out, usage_lines); }

static void print_help(void)
{
	print_usage(stdout);
	fputs("\nBrowse the compile log in a terminal: runs, their compiles and frames,\n"
	      "graph breaks, recompiles with their guard failures, graphs beside their\n"
	      "source, guards. The database is opened read-only: a run may go on\n"
	      "writing it (r reads the screen again).\n\noptions:\n",
	      stdout);
	cli_print_options(options);
	fputs("\nkeys:\n", stdout);
	char *keys = tui_help_text();
	fputs(keys, stdout);
	free(keys);
	fputs("\nExit status: 0 success; 1 no database or no terminal; 2 bad usage.\n", stdout);
}

/* d's export (view.h's tui_export_fn): a file in the way that is not a
 * drawing stays, and the status line says so */
static int export_graph(struct dbq *q, int64_t graph_id, const char *format, const char *path, int max_nodes,
			char **err)
{
	return viz_export_graph(q, graph_id, format, path, false, max_nodes, err);
}

static int export_kernels(struct dbq *q, int64_t graph_id, const char *format, const char *path, int max_nodes,
			  char **err)
{
	return viz_export_kernels(q, graph_id, format, path, false, max_nodes, err);
}

/* 0, or 2 after printing why */
static int parse_args(int argc, char **argv, struct options *o)
{
	memset(o, 0, sizeof *o);
	const char *positional = NULL;
	int n;
	if (cli_parse_args(NAME, NULL, options, argc, argv, o, &positional, 1, &n, "one database at a time", NULL) < 0) {
		print_usage(stderr);
		return 2;
	}
	if (positional) {
		if (o->db) {
			fprintf_shown(stderr, NAME ": unexpected argument '%s' (one database at a time)\n", positional);
			print_usage(stderr);
			return 2;
		}
		o->db = positional;
	}
	return 0;
}

int main(int argc, char **argv)
{
	setlocale(LC_ALL, "");
	struct options o;
	int rc = parse_args(argc, argv, &o);
	if (rc)
		return rc;
	if (o.help) {
		print_help();
		return util_finish_stdout(NAME, 0);
	}
	if (o.version) {
		printf(NAME " %s\n", PACKAGE_VERSION);
		return util_finish_stdout(NAME, 0);
	}
	const char *path = db_default_path(o.db);
	char *err = NULL;
	struct dbq *q = dbq_open(path, &err);
	if (!q) {
		fprintf_shown(stderr, NAME ": %s\n", err ? err : "cannot open the database");
		free(err);
		return 1;
	}
	if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
		fprintf(stderr, NAME ": not a terminal: tjit-tui needs one on its input and output "
				"(tjit-profile report prints a run as text)\n");
		dbq_close(q);
		return 1;
	}
	struct tui_options to = {
		.export_graph = export_graph,
		.export_kernels = export_kernels,
		.export_dir = ".",
	};
	struct tui *t = tui_new(q, &to, 24, 80, &err);
	if (!t) {
		fprintf_shown(stderr, NAME ": %s\n", err ? err : "cannot read the database");
		free(err);
		dbq_close(q);
		return 1;
	}
	bool color = !o.no_color && !getenv("NO_COLOR"); /* as tjit-profile: set at all */
	struct draw *d = draw_open(NULL, stdin, stdout, color, &err);
	if (!d) {
		fprintf_shown(stderr, NAME ": %s\n", err ? err : "cannot start curses");
		free(err);
		tui_free(t);
		dbq_close(q);
		return 1;
	}
	rc = draw_loop(d, t);
	draw_close(d);
	tui_free(t);
	dbq_close(q);
	if (rc < 0) {
		fprintf(stderr, NAME ": the terminal's input ended\n");
		return 1;
	}
	return 0;
}
