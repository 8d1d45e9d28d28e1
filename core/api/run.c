/* run.c - running a tj program as the tools do (run.h). */
#include "run.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "code.h"
#include "compile_log.h"
#include "compiler.h"
#include "db.h"
#include "error.h"
#include "backends.h"
#include "explain.h"
#include "frame_eval.h"
#include "inductor_compile.h"
#include "prelude.h"
#include "runtime.h"
#include "strbuf.h"
#include "util.h"
#include "vm.h"

/* The switches, checked before anything runs, into the config of the
 * run's runtime (the backend resolved by name here, TJIT_INJECT_BUG parsed
 * once). 0, or 2 after printing why. */
static int apply_switches(const struct run_options *o, struct runtime_config *rc)
{
	const char *logs = o->logs ? o->logs : getenv("TJIT_LOGS");
	char *err = NULL;
	if (log_parse_artifacts(logs, &rc->log.artifacts, &err) < 0) {
		fprintf_shown(stderr, "%s %s: %s: %s\n", o->name, o->cmd, o->logs ? "--logs" : "TJIT_LOGS", err);
		free(err);
		return 2;
	}
	if (o->cache_size_limit) {
		char *end = NULL;
		errno = 0;
		long n = strtol(o->cache_size_limit, &end, 10);
		if (errno || end == o->cache_size_limit || *end || n < 1 || n > INT_MAX) {
			fprintf_shown(stderr, "%s %s: --cache-size-limit: expected a whole number >= 1, got '%s'\n",
				      o->name, o->cmd, o->cache_size_limit);
			return 2;
		}
		rc->switches.cache_size_limit = (int)n;
	}
	if (o->unlimited_cache)
		rc->switches.cache_size_limit = INT_MAX;
	if (o->backend && !(rc->switches.backend = backend_find(o->backend))) {
		char *msg = tj_error_take();
		fprintf_shown(stderr, "%s %s: --backend: %s\n", o->name, o->cmd, msg ? msg : "unknown backend");
		free(msg);
		return 2;
	}
	if (compile_ctx_parse_bug(getenv("TJIT_INJECT_BUG"), &rc->bug, &err) < 0) {
		fprintf_shown(stderr, "%s %s: TJIT_INJECT_BUG: %s\n", o->name, o->cmd, err);
		free(err);
		return 2;
	}
	/* tjit-minify's: the graphs not listed compile on eager (runtime.h) */
	const char *only = getenv("TJIT_COMPILE_ONLY");
	if (only && *only) {
		rc->switches.compile_only = only;
		rc->switches.others = &backend_eager;
	}
	/* tjit-minify's: the inputs of one graph saved (runtime.h) */
	const char *record = getenv("TJIT_RECORD");
	if (record && *record) {
		const char *colon = strchr(record, ':');
		int f, n, len = 0;
		if (!colon || !colon[1] || sscanf(record, "%d/%d%n", &f, &n, &len) != 2 || record + len != colon ||
		    f < 0 || n < 0) {
			fprintf_shown(stderr,
				      "%s %s: TJIT_RECORD: expected F/N:PATH (a compile id, a file), got '%s'\n",
				      o->name, o->cmd, record);
			return 2;
		}
		rc->switches.record = record;
	}
	rc->switches.fullgraph = o->fullgraph;
	rc->switches.disabled = o->eager;
	ind_set_kernel_cache(!o->no_kernel_cache);
	return 0;
}

/* Reads path; on failure prints the reason and sets *status (2). */
static struct source *read_program(const char *name, const char *path, int *status)
{
	struct source *src = source_load(path);
	if (!src) {
		char *msg = tj_error_take();
		char *shown = shown_dup(msg ? msg : "cannot read file"); /* it names the path */
		fprintf(stderr, "%s: %s\n", name, shown);
		free(shown);
		free(msg);
		*status = 2;
	}
	return src;
}

/* Compiles src to bytecode; on failure prints the diagnostic and sets *status (1). */
static struct code *compile_program(struct source *src, int *status)
{
	struct src_loc loc = {0, 0};
	char *msg = NULL;
	struct code *code = compile_source(src, &loc, &msg);
	if (!code) {
		diag_print(stderr, src, loc, "error", "%s", msg ? msg : "syntax error");
		*status = 1;
	}
	free(msg);
	return code;
}

struct code *run_load(const char *name, const char *path, struct source **srcp, int *status)
{
	*srcp = NULL;
	struct source *src = read_program(name, path, status);
	if (!src)
		return NULL;
	struct code *code = compile_program(src, status);
	if (!code) {
		source_free(src);
		return NULL;
	}
	*srcp = src;
	return code;
}

static char *join_args(const struct run_options *o)
{
	struct strbuf sb = STRBUF_INIT;
	sb_puts(&sb, o->name);
	for (int i = 0; i < o->argc; i++) {
		sb_putc(&sb, ' ');
		sb_puts(&sb, o->argv[i]);
	}
	return sb_detach(&sb);
}

/* The database of a run: NULL for --no-db or when it cannot be opened
 * (reported: the program runs without a log, or, when the log is
 * required, does not run: *status 1). */
static struct db_writer *open_db(const struct run_options *o, const char **path, int *status)
{
	*path = NULL;
	if (o->no_db)
		return NULL;
	const char *p = db_default_path(o->db);
	char *err = NULL;
	struct db_writer *w = db_open_writer(p, &err);
	if (!w) {
		if (o->db_required) {
			fprintf_shown(stderr, "%s: database: %s\n", o->name, err ? err : "cannot open");
			if (!*status)
				*status = 1;
		} else {
			fprintf_shown(stderr, "%s: database: %s (running without a log)\n", o->name,
				err ? err : "cannot open");
		}
		free(err);
		return NULL;
	}
	*path = p;
	return w;
}

static const char *limit_text(const struct run_options *o, int limit, char *buf, size_t n)
{
	if (o->unlimited_cache)
		return "unlimited";
	snprintf(buf, n, "%d", limit);
	return buf;
}

int run_program(const struct run_options *o, struct run_result *res)
{
	struct run_result ignored;
	if (!res)
		res = &ignored;
	res->status = 0;
	res->run_id = 0;
	res->db_path = NULL;
	struct runtime_config rc = {.switches = COMPILE_SWITCHES_INIT, .log = {0, stderr, NULL}};
	if (apply_switches(o, &rc) != 0)
		return res->status = 2;

	int status = 0;
	struct source *src = read_program(o->name, o->file, &status);
	const char *db_path = NULL;
	struct db_writer *db = open_db(o, &db_path, &status);
	if (!db && o->db_required && status) {
		source_free(src);
		return res->status = status;
	}
	if (db) {
		char *command = join_args(o);
		char config[128], limit[24];
		snprintf(config, sizeof config, "fullgraph=%d cache_size_limit=%s eager=%d no_kernel_cache=%d",
			 o->fullgraph ? 1 : 0, limit_text(o, rc.switches.cache_size_limit, limit, sizeof limit),
			 o->eager ? 1 : 0, o->no_kernel_cache ? 1 : 0);
		struct db_run run = {
			.tool = o->tool,
			.command = command,
			.program = o->file,
			.source_text = src ? src->text : NULL,
			.backend = o->backend,
			.config = config,
		};
		res->run_id = db_begin_run(db, &run);
		free(command);
	}
	rc.log.db = db;
	struct runtime *rt = runtime_new(&rc);
	if (!rt) {
		fprintf(stderr, "%s: out of memory\n", o->name);
		status = 1;
	}

	struct code *code = src && rt ? compile_program(src, &status) : NULL;
	if (code) {
		struct explain_program *ex = o->explain ? explain_program_begin(rt->log) : NULL;
		struct vm *vm = prelude_vm_new();
		vm_set_runtime(vm, rt);
		value r = vm_run_module(vm, code);
		if (val_is_err(r)) {
			fflush(stdout);
			if (vm_exit_status(vm) >= 0) { /* exit(n) */
				status = vm_exit_status(vm);
				vm_error_clear(vm);
			} else {
				vm_print_traceback(vm, stderr);
				status = 1;
			}
		}
		if (ex) {
			struct strbuf sb = STRBUF_INIT;
			explain_program_end(ex, &sb);
			if (sb.len)
				fwrite(sb.buf, 1, sb.len, stdout);
			sb_release(&sb);
		}
		/* the caches go before the VM: their entries hold its values */
		frame_eval_free(rt);
		vm_free(vm);
		val_decref(val_obj(VAL_CODE, code));
	}
	status = util_finish_stdout(o->name, status);
	runtime_free(rt);
	if (db) {
		db_end_run(db, status);
		db_close(db);
		res->db_path = db_path;
	}
	source_free(src);
	return res->status = status;
}
