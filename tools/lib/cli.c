/* cli.c - the tools' command lines (cli.h). */
#include "cli.h"

#include <stdbool.h>
#include <string.h>

#include "strbuf.h"
#include "util.h"

int cli_parse_option(const char *name, const char *cmd, const struct cli_option *defs, int argc, char **argv,
		     int *i, void *opts)
{
	const char *a = argv[*i];
	/* "tjit run: ..." for a command, "tjit-tui: ..." for a tool without */
	const char *sep = cmd ? " " : "";
	cmd = cmd ? cmd : "";
	const char *eq = strchr(a, '=');
	size_t len = eq ? (size_t)(eq - a) : strlen(a);
	const struct cli_option *d = defs;
	while (d && d->name && !(strlen(d->name) == len && strncmp(d->name, a, len) == 0))
		d++;
	if (!d || !d->name) {
		fprintf_shown(stderr, "%s%s%s: unknown option '%s'\n", name, sep, cmd, a);
		return -1;
	}
	if (!d->arg) {
		if (eq) {
			fprintf(stderr, "%s%s%s: option '%s' takes no value\n", name, sep, cmd, d->name);
			return -1;
		}
		*(bool *)((char *)opts + d->offset) = true;
		return 0;
	}
	const char *v = eq ? eq + 1 : NULL;
	if (!v) {
		if (*i + 1 >= argc) {
			fprintf(stderr, "%s%s%s: option '%s' needs a value (%s)\n", name, sep, cmd, d->name, d->arg);
			return -1;
		}
		v = argv[++*i];
	}
	*(const char **)((char *)opts + d->offset) = v;
	return 0;
}

void cli_print_options(const struct cli_option *defs)
{
	for (const struct cli_option *d = defs; d->name; d++) {
		if (!d->help)
			continue; /* another spelling of the option above */
		char left[64];
		snprintf(left, sizeof left, "%s%s%s", d->name, d->arg ? " " : "", d->arg ? d->arg : "");
		printf("  %-16s %s\n", left, d->help);
	}
}

int cli_parse_args(const char *name, const char *cmd, const struct cli_option *defs, int argc, char **argv,
		   void *opts, const char **args, int max, int *nargs, const char *hint,
		   bool (*glued)(const char *arg, void *opts))
{
	bool only_args = false;
	*nargs = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!only_args && strcmp(a, "--") == 0) {
			only_args = true;
			continue;
		}
		if (!only_args && a[0] == '-' && a[1]) {
			if (glued && glued(a, opts))
				continue;
			if (cli_parse_option(name, cmd, defs, argc, argv, &i, opts) < 0)
				return -1;
			continue;
		}
		if (*nargs >= max) {
			fprintf_shown(stderr, "%s%s%s: unexpected argument '%s'%s%s%s\n", name, cmd ? " " : "",
				      cmd ? cmd : "", a, hint ? " (" : "", hint ? hint : "", hint ? ")" : "");
			return -1;
		}
		args[(*nargs)++] = a;
	}
	return 0;
}

void cli_print_lines(FILE *out, const char *const *lines)
{
	for (int i = 0; lines[i]; i++)
		fprintf(out, "%s\n", lines[i]);
}

void cli_tool_usage(const struct cli_tool *t, FILE *out)
{
	cli_print_lines(out, t->usage);
}

int cli_bad_arg(const struct cli_tool *t, const char *cmd, const char *what, const char *arg, const char *expected)
{
	fprintf_shown(stderr, "%s %s: bad %s '%s': expected %s\n", t->name, cmd, what, arg, expected);
	cli_tool_usage(t, stderr);
	return 2;
}

static int tool_help(const struct cli_tool *t)
{
	cli_tool_usage(t, stdout);
	printf("\n%s\ncommands:\n", t->about);
	for (const struct cli_command *c = t->commands; c->name; c++)
		printf("  %-8s %s\n", c->name, c->summary);
	for (const struct cli_command *c = t->commands; c->name; c++) {
		if (!c->options)
			continue;
		printf("\noptions of %s:\n", c->name);
		cli_print_options(c->options);
	}
	printf("\n%s", t->notes);
	return util_finish_stdout(t->name, 0);
}

int cli_tool_main(const struct cli_tool *t, int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "%s: missing command\n", t->name);
		cli_tool_usage(t, stderr);
		return 2;
	}
	const char *cmd = argv[1];
	if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0)
		return tool_help(t);
	if (strcmp(cmd, "--version") == 0) {
		printf("%s %s\n", t->name, t->version);
		return util_finish_stdout(t->name, 0);
	}
	for (const struct cli_command *c = t->commands; c->name; c++) {
		if (strcmp(c->name, cmd) != 0)
			continue;
		for (int i = 2; i < argc; i++) {
			if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
				return tool_help(t);
			if (strcmp(argv[i], "--") == 0)
				break;
		}
		return c->fn ? c->fn(argc - 1, argv + 1) : tool_help(t);
	}
	fprintf_shown(stderr, "%s: unknown command '%s'\n", t->name, cmd);
	cli_tool_usage(t, stderr);
	return 2;
}
