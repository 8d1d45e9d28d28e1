/* tjit-minify.c - a failing compile becomes a small repro (doc/minify.md):
 * classify the failure, bisect the stage, find the failing graph, write
 * and check the repro, every step logged in the database.
 *
 * A thin main: the session is tools/lib/minify.c, a candidate's child
 * process tools/lib/minify_run.c, signatures tools/lib/minify_sig.c, the
 * command line tools/lib/cli.c.
 *
 * Exit status: 0 a repro was written and fails alone; 1 the failure did
 * not reproduce (no failure, flaky, not a compiler bug, limits reached);
 * 2 bad usage or an unreadable program; 128 + N stopped by signal N.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends.h"
#include "cli.h"
#include "compile_ctx.h"
#include "error.h"
#include "minify.h"
#include "strbuf.h"
#include "util.h"

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "0.1.0"
#endif

#define NAME "tjit-minify"
#define DEFAULT_MEMORY_MB 4096

/* an address-space cap forbids AddressSanitizer's shadow memory */
#if defined(__SANITIZE_ADDRESS__)
#define NO_MEMORY_CAP 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NO_MEMORY_CAP 1
#endif
#endif

static const char *const usage_lines[] = {
	"usage: tjit-minify [--backend NAME] [--tol REL] [--match TEXT] [--max-queries N]",
	"                   [--max-seconds S] [--timeout S] [--max-memory MB] [-o DIR]",
	"                   [--db PATH] [--seed N] FILE",
	"       tjit-minify --help | --version",
	NULL,
};

struct options {
	const char *backend, *tol, *match, *max_queries, *max_seconds, *timeout, *max_memory, *out_dir, *db, *seed;
	bool help, version;
};

static const struct cli_option options[] = {
	{"--backend", "NAME", offsetof(struct options, backend), "the backend that fails (default: inductor)"},
	{"--tol", "REL", offsetof(struct options, tol), "relative tolerance of the accuracy check"},
	{"--match", "TEXT", offsetof(struct options, match), "only a failure whose message contains TEXT"},
	{"--max-queries", "N", offsetof(struct options, max_queries), "at most N candidate runs"},
	{"--max-seconds", "S", offsetof(struct options, max_seconds), "stop after S seconds"},
	{"--timeout", "S", offsetof(struct options, timeout), "a run's time limit (default: from the eager run)"},
	{"--max-memory", "MB", offsetof(struct options, max_memory), "a run's memory cap (default: 4096)"},
	{"-o", "DIR", offsetof(struct options, out_dir), "the output folder (default: NAME.minify)"},
	{"--db", "PATH", offsetof(struct options, db), "the database (default: $TJIT_DB, else ./tjit.db)"},
	{"--seed", "N", offsetof(struct options, seed), "the seed of the minifier's choices (default: 0)"},
	{"--help", NULL, offsetof(struct options, help), "print this help"},
	{"-h", NULL, offsetof(struct options, help), NULL},
	{"--version", NULL, offsetof(struct options, version), "print the version"},
	{NULL, NULL, 0, NULL},
};

static void print_usage(FILE *out) { cli_print_lines(out, usage_lines); }

static void print_help(void)
{
	print_usage(stdout);
	fputs("\nMinify a failing compile: classify the failure (compile error, run-time\n"
	      "error, crash, hang, wrong output against the eager run), find the first\n"
	      "stage that fails (eager, aot_eager, inductor) and the graph that fails,\n"
	      "and write a repro that fails alone. Every program run happens in a child\n"
	      "process with a time limit and a memory cap.\n\noptions:\n",
	      stdout);
	cli_print_options(options);
	fputs("\nThe session and each of its steps go into the database (minify_sessions,\n"
	      "minify_steps); the candidates' own runs into DIR/runs.db.\n"
	      "\nExit status: 0 a repro was written and fails alone; 1 the failure did not\n"
	      "reproduce, or the limits ran out; 2 bad usage; 128 + N stopped by signal N\n"
	      "(SIGINT, SIGTERM, SIGHUP).\n",
	      stdout);
}

/* a number >= lo from an option; 0, or -1 after printing why */
static int number(const char *opt, const char *text, double lo, bool whole, double *out)
{
	char *end = NULL;
	errno = 0;
	double v = strtod(text, &end);
	/* a whole number above 2^53 is no longer exact, nor would it fit a long */
	if (errno || end == text || *end || !isfinite(v) || v < lo || (whole && (v != floor(v) || v > 0x1p53))) {
		if (whole)
			fprintf_shown(stderr, NAME ": %s: expected a whole number from %g to 2^53, got '%s'\n", opt, lo,
				      text);
		else
			fprintf_shown(stderr, NAME ": %s: expected a number >= %g, got '%s'\n", opt, lo, text);
		return -1;
	}
	*out = v;
	return 0;
}

/* the options checked into mo; 0, or -1 after printing why */
static int check_options(const struct options *o, struct minify_options *mo)
{
	double v;
	mo->backend = o->backend ? o->backend : "inductor";
	if (!backend_find(mo->backend)) {
		char *msg = tj_error_take();
		fprintf(stderr, NAME ": --backend: %s\n", msg ? msg : "unknown backend");
		free(msg);
		return -1;
	}
	if (o->tol) {
		if (number("--tol", o->tol, 0, false, &v) < 0)
			return -1;
		mo->rel = v;
	}
	if (o->max_queries) {
		if (number("--max-queries", o->max_queries, 1, true, &v) < 0)
			return -1;
		mo->max_queries = (long)v;
	}
	if (o->max_seconds && number("--max-seconds", o->max_seconds, 0.001, false, &mo->max_seconds) < 0)
		return -1;
	if (o->timeout && number("--timeout", o->timeout, 0.001, false, &mo->timeout_s) < 0)
		return -1;
	v = DEFAULT_MEMORY_MB;
	if (o->max_memory && number("--max-memory", o->max_memory, 16, true, &v) < 0)
		return -1;
	mo->memory_bytes = (int64_t)v << 20;
#ifdef NO_MEMORY_CAP
	mo->memory_bytes = 0;
#endif
	if (o->seed) {
		if (number("--seed", o->seed, 0, true, &v) < 0)
			return -1;
		mo->seed = (uint64_t)v;
	}
	struct inject_bug bug;
	char *err = NULL;
	if (compile_ctx_parse_bug(getenv("TJIT_INJECT_BUG"), &bug, &err) < 0) {
		fprintf(stderr, NAME ": TJIT_INJECT_BUG: %s\n", err);
		free(err);
		return -1;
	}
	mo->match = o->match;
	mo->out_dir = o->out_dir;
	mo->db = o->db;
	return 0;
}

/* 0, or 2 after printing why */
static int parse_args(int argc, char **argv, struct options *o, const char **file)
{
	memset(o, 0, sizeof *o);
	*file = NULL;
	int n;
	if (cli_parse_args(NAME, NULL, options, argc, argv, o, file, 1, &n, "one program at a time", NULL) < 0) {
		print_usage(stderr);
		return 2;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct options o;
	const char *file;
	int rc = parse_args(argc, argv, &o, &file);
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
	if (!file) {
		fprintf(stderr, NAME ": missing FILE\n");
		print_usage(stderr);
		return 2;
	}
	struct minify_options mo = {.program = file, .rel = -1, .progress = isatty(STDERR_FILENO) != 0};
	if (check_options(&o, &mo) < 0) {
		print_usage(stderr);
		return 2;
	}
	struct strbuf cmd = STRBUF_INIT;
	sb_puts(&cmd, NAME);
	for (int i = 1; i < argc; i++)
		sb_printf(&cmd, " %s", argv[i]);
	mo.command = sb_str(&cmd);
	rc = minify_main(&mo, stdout);
	sb_release(&cmd);
	return util_finish_stdout(NAME, rc);
}
