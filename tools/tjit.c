/* tjit.c - the tjit command: run a tj program, or print its bytecode.
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

#include "code.h"
#include "compiler.h"
#include "error.h"
#include "vm.h"

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "0.1.0"
#endif

static const char *const usage_lines[] = {
	"usage: tjit run [--no-db] FILE",
	"       tjit dis FILE",
	"       tjit --help | --version",
	NULL,
};

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};

static void print_usage(FILE *out)
{
	for (int i = 0; usage_lines[i]; i++)
		fprintf(out, "%s\n", usage_lines[i]);
}

static int usage_error(const char *fmt, const char *arg)
{
	fputs("tjit: ", stderr);
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	print_usage(stderr);
	return 2;
}

/* options shared by the subcommands */
struct options {
	const char *file;
	bool no_db;
};

struct option_def {
	const char *name;
	size_t offset; /* of a bool in struct options */
	const char *help;
};

static const struct option_def run_options[] = {
	{"--no-db", offsetof(struct options, no_db), "log nothing to the database"},
	{NULL, 0, NULL},
};

static int parse_args(const char *cmd, int argc, char **argv, const struct option_def *defs, struct options *o)
{
	memset(o, 0, sizeof(*o));
	bool only_files = false;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!only_files && strcmp(a, "--") == 0) {
			only_files = true;
			continue;
		}
		if (!only_files && a[0] == '-' && a[1]) {
			const struct option_def *d = defs;
			while (d && d->name && strcmp(d->name, a) != 0)
				d++;
			if (!d || !d->name) {
				fprintf(stderr, "tjit %s: unknown option '%s'\n", cmd, a);
				print_usage(stderr);
				return -1;
			}
			*(bool *)((char *)o + d->offset) = true;
			continue;
		}
		if (o->file) {
			fprintf(stderr, "tjit %s: unexpected argument '%s'\n", cmd, a);
			print_usage(stderr);
			return -1;
		}
		o->file = a;
	}
	if (!o->file) {
		fprintf(stderr, "tjit %s: missing FILE\n", cmd);
		print_usage(stderr);
		return -1;
	}
	return 0;
}

/* Loads and compiles; on failure prints the reason and sets *status. */
static struct code *load_program(const char *path, struct source **srcp, int *status)
{
	struct source *src = source_load(path);
	if (!src) {
		char *msg = tj_error_take();
		fprintf(stderr, "tjit: %s\n", msg ? msg : "cannot read file");
		free(msg);
		*status = 2;
		return NULL;
	}
	struct src_loc loc = {0, 0};
	char *msg = NULL;
	struct code *code = compile_source(src, &loc, &msg);
	if (!code) {
		diag_print(stderr, src, loc, "error", "%s", msg ? msg : "syntax error");
		free(msg);
		source_free(src);
		*status = 1;
		return NULL;
	}
	free(msg);
	*srcp = src;
	return code;
}

static int finish_stdout(int status)
{
	if (fflush(stdout) != 0 || ferror(stdout)) {
		perror("tjit: error writing to stdout");
		return status ? status : 1;
	}
	return status;
}

static int cmd_run(int argc, char **argv)
{
	struct options o;
	if (parse_args("run", argc, argv, run_options, &o) < 0)
		return 2;
	struct source *src = NULL;
	int status = 0;
	struct code *code = load_program(o.file, &src, &status);
	if (!code)
		return status;
	struct vm *vm = vm_new();
	value r = vm_run_module(vm, code);
	if (val_is_err(r)) {
		vm_print_traceback(vm, stderr);
		status = 1;
	}
	status = finish_stdout(status);
	vm_free(vm);
	val_decref(val_obj(VAL_CODE, code));
	source_free(src);
	return status;
}

static int cmd_dis(int argc, char **argv)
{
	struct options o;
	if (parse_args("dis", argc, argv, NULL, &o) < 0)
		return 2;
	struct source *src = NULL;
	int status = 0;
	struct code *code = load_program(o.file, &src, &status);
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
	{"dis", cmd_dis, "print the bytecode of a program"},
	{NULL, NULL, NULL},
};

static void print_help(void)
{
	print_usage(stdout);
	fputs("\ncommands:\n", stdout);
	for (const struct command *c = commands; c->name; c++)
		printf("  %-6s %s\n", c->name, c->summary);
	fputs("\noptions of run:\n", stdout);
	for (const struct option_def *d = run_options; d->name; d++)
		printf("  %-10s %s\n", d->name, d->help);
	fputs("\nExit status: 0 success, 1 the program failed, 2 bad usage.\n", stdout);
}

int main(int argc, char **argv)
{
	if (!isatty(STDOUT_FILENO))
		setvbuf(stdout, NULL, _IOFBF, 1 << 16);
	if (argc < 2)
		return usage_error("%s", "missing command");
	const char *cmd = argv[1];
	if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
		print_help();
		return finish_stdout(0);
	}
	if (strcmp(cmd, "--version") == 0) {
		printf("tjit %s\n", PACKAGE_VERSION);
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
	return usage_error("unknown command '%s'", cmd);
}
