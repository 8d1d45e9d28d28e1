/* tjit-profile.c - the compile profiler: run a program with every compile
 * observed and report why it recompiled, where its graphs broke, which
 * frames ran eagerly and where compile time went; report any past run of
 * the database, or compare two (doc/profile.md).
 *
 * A thin main: running is core/api/run.c, reading the database db/query.c,
 * the report and the diff tools/lib/profile.c, the command line
 * tools/lib/cli.c.
 *
 * Exit status: 0 success; 1 the program failed, no database or no such
 * run, or `diff --fail-on-new` found new breaks or recompiles; 2 bad usage
 * (a malformed RUN too, checked before the database is opened) or an
 * unreadable program.
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
#include "db.h"
#include "profile.h"
#include "query.h"
#include "run.h"
#include "strbuf.h"
#include "util.h"

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "0.1.0"
#endif

#define NAME "tjit-profile"

static const char *const usage_lines[] = {
	"usage: tjit-profile run [--db PATH] [--backend NAME] [--fullgraph] [--logs LIST]",
	"                        [--no-kernel-cache] [--color WHEN] FILE",
	"       tjit-profile report [--db PATH] [--json] [--color WHEN] [RUN]",
	"       tjit-profile diff [--db PATH] [--fail-on-new] [--json] [--color WHEN]",
	"                         RUN_A RUN_B",
	"       tjit-profile help",
	"       tjit-profile --help | --version",
	NULL,
};

static const struct cli_tool tool; /* at the end: its commands come first */

static void print_usage(FILE *out) { cli_tool_usage(&tool, out); }

/* ---- options ---- */

struct options {
	const char *args[3];          /* the positional arguments */
	int nargs;
	const char *db, *backend, *logs, *color;
	bool fullgraph, no_kernel_cache, json, fail_on_new;
};

#define OPT_DB {"--db", "PATH", offsetof(struct options, db), "the database (default: $TJIT_DB, else ./tjit.db)"}
#define OPT_COLOR                                                                                    \
	{"--color", "WHEN", offsetof(struct options, color),                                         \
	 "auto (on a terminal, without NO_COLOR), always or never"}
#define OPT_JSON {"--json", NULL, offsetof(struct options, json), "print the same data as JSON"}

static const struct cli_option run_options[] = {
	OPT_DB,
	{"--backend", "NAME", offsetof(struct options, backend),
	 "compile with backend NAME, whatever compile() asks for"},
	{"--fullgraph", NULL, offsetof(struct options, fullgraph), "every compile() as with fullgraph=True"},
	{"--logs", "LIST", offsetof(struct options, logs), "print compile events to stderr, as TJIT_LOGS"},
	{"--no-kernel-cache", NULL, offsetof(struct options, no_kernel_cache),
	 "compile inductor's kernels anew, without the kernel cache"},
	OPT_COLOR,
	{NULL, NULL, 0, NULL},
};

static const struct cli_option report_options[] = {
	OPT_DB,
	OPT_JSON,
	OPT_COLOR,
	{NULL, NULL, 0, NULL},
};

static const struct cli_option diff_options[] = {
	OPT_DB,
	{"--fail-on-new", NULL, offsetof(struct options, fail_on_new),
	 "exit 1 when RUN_B has breaks or recompiles that RUN_A had not"},
	OPT_JSON,
	OPT_COLOR,
	{NULL, NULL, 0, NULL},
};

/* 0, or -1 after printing why (usage). argv[0] is the subcommand. */
static int parse_args(const char *cmd, int argc, char **argv, const struct cli_option *defs, int min_args,
		      int max_args, const char *const *arg_names, struct options *o)
{
	memset(o, 0, sizeof *o);
	if (cli_parse_args(NAME, cmd, defs, argc, argv, o, o->args, max_args, &o->nargs, NULL, NULL) < 0) {
		print_usage(stderr);
		return -1;
	}
	if (o->nargs < min_args) {
		fprintf(stderr, NAME " %s: missing %s\n", cmd, arg_names[o->nargs]);
		print_usage(stderr);
		return -1;
	}
	if (o->color && strcmp(o->color, "auto") != 0 && strcmp(o->color, "always") != 0 &&
	    strcmp(o->color, "never") != 0) {
		fprintf_shown(stderr, NAME " %s: --color: expected auto, always or never, got '%s'\n", cmd, o->color);
		return -1;
	}
	return 0;
}

/* Color only on a terminal (or with --color always), never when NO_COLOR is set. */
static bool use_color(const struct options *o)
{
	if (getenv("NO_COLOR"))
		return false;
	if (o->color && strcmp(o->color, "never") == 0)
		return false;
	if (o->color && strcmp(o->color, "always") == 0)
		return true;
	return isatty(STDOUT_FILENO) != 0;
}

static void put_out(struct strbuf *sb)
{
	if (sb->len)
		fwrite(sb->buf, 1, sb->len, stdout);
	sb_release(sb);
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

/* spec -> a loaded profile; 0, or 1 after printing why */
static int load(struct dbq *q, const char *spec, struct profile *p)
{
	char *err = NULL;
	int64_t id = 0;
	if (dbq_resolve_run(q, spec, &id, &err) < 0 || profile_load(q, id, p, &err) < 0) {
		fprintf_shown(stderr, NAME ": %s\n", err ? err : "cannot read the run");
		free(err);
		return 1;
	}
	return 0;
}

#define RUN_EXPECTED "a run id (1, 2, ...), latest or latest~N"

/* ---- the subcommands ---- */

static int cmd_run(int argc, char **argv)
{
	struct options o;
	if (parse_args("run", argc, argv, run_options, 1, 1, (const char *const[]){"FILE"}, &o) < 0)
		return 2;
	struct run_options r = {
		.name = NAME,
		.cmd = "run",
		.tool = "tjit-profile run",
		.argc = argc,
		.argv = argv,
		.file = o.args[0],
		.db = o.db,
		.db_required = true,
		.backend = o.backend,
		.logs = o.logs,
		.unlimited_cache = true,
		.fullgraph = o.fullgraph,
		.no_kernel_cache = o.no_kernel_cache,
	};
	struct run_result res;
	int status = run_program(&r, &res);
	if (!res.db_path || status == 2)
		return status;
	char *err = NULL;
	struct dbq *q = dbq_open(res.db_path, &err);
	if (!q) {
		fprintf_shown(stderr, NAME ": %s\n", err ? err : "cannot open the database");
		free(err);
		return 1;
	}
	int64_t id = dbq_find_run(q, res.run_id, (int64_t)getpid(), "tjit-profile run");
	struct profile p;
	if (!id || profile_load(q, id, &p, &err) < 0) {
		fprintf_shown(stderr, NAME ": %s\n",
			      err ? err : "the run was not logged (see the database error above)");
		free(err);
		dbq_close(q);
		return 1;
	}
	struct strbuf sb = STRBUF_INIT;
	profile_print(&p, &sb, use_color(&o));
	put_out(&sb);
	profile_release(&p);
	dbq_close(q);
	return util_finish_stdout(NAME, status);
}

static int cmd_report(int argc, char **argv)
{
	struct options o;
	if (parse_args("report", argc, argv, report_options, 0, 1, (const char *const[]){"RUN"}, &o) < 0)
		return 2;
	if (o.nargs && !dbq_run_spec_ok(o.args[0]))
		return cli_bad_arg(&tool, "report", "run", o.args[0], RUN_EXPECTED);
	struct dbq *q = open_db(&o);
	if (!q)
		return 1;
	struct profile p;
	int status = load(q, o.nargs ? o.args[0] : "latest", &p);
	if (status == 0) {
		struct strbuf sb = STRBUF_INIT;
		if (o.json)
			profile_json(&p, &sb);
		else
			profile_print(&p, &sb, use_color(&o));
		put_out(&sb);
		profile_release(&p);
	}
	dbq_close(q);
	return util_finish_stdout(NAME, status);
}

static int cmd_diff(int argc, char **argv)
{
	struct options o;
	if (parse_args("diff", argc, argv, diff_options, 2, 2, (const char *const[]){"RUN_A", "RUN_B"}, &o) < 0)
		return 2;
	for (int i = 0; i < 2; i++)
		if (!dbq_run_spec_ok(o.args[i]))
			return cli_bad_arg(&tool, "diff", "run", o.args[i], RUN_EXPECTED);
	struct dbq *q = open_db(&o);
	if (!q)
		return 1;
	struct profile a, b;
	int status = load(q, o.args[0], &a);
	if (status == 0) {
		status = load(q, o.args[1], &b);
		if (status == 0) {
			struct strbuf sb = STRBUF_INIT;
			bool new_things = o.json ? profile_diff_json(&a, &b, &sb)
						 : profile_diff_print(&a, &b, &sb, use_color(&o));
			put_out(&sb);
			if (new_things && o.fail_on_new) {
				fflush(stdout);
				fprintf(stderr,
					NAME ": run %lld has graph breaks or recompiles that run %lld had not "
					     "(--fail-on-new)\n",
					(long long)b.run.id, (long long)a.run.id);
				status = 1;
			}
			profile_release(&b);
		}
		profile_release(&a);
	}
	dbq_close(q);
	return util_finish_stdout(NAME, status);
}

static const struct cli_command commands[] = {
	{"run", cmd_run, run_options,
	 "run FILE with every recompile observed, log it, print its report"},
	{"report", cmd_report, report_options, "print the report of a logged run (default: latest)"},
	{"diff", cmd_diff, diff_options, "compare two runs: breaks, recompiles, guard failures, time"},
	{"help", NULL, NULL, "print this help"},
	{NULL, NULL, NULL, NULL},
};

static const struct cli_tool tool = {
	NAME,
	PACKAGE_VERSION,
	usage_lines,
	"The compile profiler: why did it recompile, where and why did the graph\n"
	"break, which frames ran eagerly, and where did compile time go.\n",
	"A RUN is a run id of the database (1, 2, ...), latest, or latest~N (the\n"
	"Nth run before the latest). TJIT_DB names the default database.\n"
	"\nExit status: 0 success; 1 the program failed, no database or run, or\n"
	"diff --fail-on-new found something new; 2 bad usage (a malformed RUN\n"
	"too).\n",
	commands,
};

int main(int argc, char **argv)
{
	if (!isatty(STDOUT_FILENO))
		setvbuf(stdout, NULL, _IOFBF, 1 << 16);
	return cli_tool_main(&tool, argc, argv);
}
