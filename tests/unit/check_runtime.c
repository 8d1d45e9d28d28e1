/* check_runtime.c - the runtime object (runtime.h): two programs run one
 * after the other in one process through run_program share nothing (the
 * second starts at compile id 0/0, compiles again instead of reusing an
 * artifact, counts its own calls, and sees none of the first's switches
 * or disallow_in_graph); TJIT_INJECT_BUG is checked once per run; the
 * compile log writes a compile's named phases and kernels to the
 * database. */
#define _GNU_SOURCE
#include <check.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compile_log.h"
#include "db.h"
#include "graph.h"
#include "backends.h"
#include "run.h"
#include "runtime.h"

#define DB_TEST_NAME "check_runtime"
#include "db_test_util.h"

/* ---- helpers ---- */

static char *write_program(const char *name, const char *text)
{
	char *path = NULL;
	ck_assert_int_ge(asprintf(&path, "%s/%s", tmpdir, name), 0);
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
	return path;
}

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	char *text = NULL;
	size_t n = 0;
	if (getdelim(&text, &n, '\0', f) < 0) { /* empty */
		free(text);
		text = strdup("");
	}
	fclose(f);
	return text;
}

/* What a run printed: its stdout and stderr go to files while it runs. */
struct output {
	int status;
	char *out, *err;
};

static struct output run(const struct run_options *o)
{
	char out_path[400], err_path[400];
	snprintf(out_path, sizeof out_path, "%s/stdout", tmpdir);
	snprintf(err_path, sizeof err_path, "%s/stderr", tmpdir);
	fflush(stdout);
	fflush(stderr);
	int saved_out = dup(1), saved_err = dup(2);
	int fo = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	int fe = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ck_assert(fo >= 0 && fe >= 0);
	dup2(fo, 1);
	dup2(fe, 2);
	struct output r;
	r.status = run_program(o, NULL);
	fflush(stdout);
	fflush(stderr);
	dup2(saved_out, 1);
	dup2(saved_err, 2);
	close(fo);
	close(fe);
	close(saved_out);
	close(saved_err);
	r.out = read_file(out_path);
	r.err = read_file(err_path);
	return r;
}

static void output_release(struct output *r)
{
	free(r->out);
	free(r->err);
}

static struct run_options options(const char *file)
{
	return (struct run_options){
		.name = "tjit", .cmd = "run", .tool = "tjit run", .file = file, .db = dbpath, .db_required = true,
	};
}

/* the rows of a query: columns joined by '|', rows by '\n' */
static char *rows(const char *sql)
{
	sqlite3 *db = NULL;
	ck_assert_int_eq(sqlite3_open_v2(dbpath, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	sqlite3_stmt *st = NULL;
	ck_assert_msg(sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK, "%s: %s", sql, sqlite3_errmsg(db));
	struct strbuf sb = STRBUF_INIT;
	int nrow = 0;
	while (sqlite3_step(st) == SQLITE_ROW) {
		if (nrow++)
			sb_putc(&sb, '\n');
		for (int i = 0; i < sqlite3_column_count(st); i++) {
			const unsigned char *t = sqlite3_column_text(st, i);
			sb_printf(&sb, "%s%s", i ? "|" : "", t ? (const char *)t : "NULL");
		}
	}
	sqlite3_finalize(st);
	sqlite3_close(db);
	return sb.buf ? sb_detach(&sb) : strdup("");
}

#define ck_rows(expected, sql)                     \
	do {                                       \
		char *got_ = rows(sql);            \
		ck_assert_str_eq(got_, expected);  \
		free(got_);                        \
	} while (0)

/* ---- two programs in one process ---- */

static const char recompiling[] = "def f(x, n):\n"
				  "    y = x * n\n"
				  "    print('n', n)\n"
				  "    return y + 1\n"
				  "cf = compile(f, backend=\"eager\")\n"
				  "for i in range(3):\n"
				  "    print(cf(ones(2), i))\n";

START_TEST(test_second_run_starts_clean)
{
	char *path = write_program("prog.tj", recompiling);
	struct run_options o = options(path);
	o.logs = "recompiles,graph_breaks";
	struct output a = run(&o);
	struct output b = run(&o);
	ck_assert_int_eq(a.status, 0);
	ck_assert_int_eq(b.status, 0);
	/* the same lines, ids from 0/0: nothing of the first run carried over */
	ck_assert_str_eq(b.out, a.out);
	ck_assert_str_eq(b.err, a.err);
	ck_assert_ptr_nonnull(strstr(a.err, "[0/0] Graph break"));
	ck_assert_ptr_nonnull(strstr(a.err, "[0/1] Recompiling function f"));
	/* the second run compiled again (no artifact reused) with the same
	 * ids, and counted its own calls */
	ck_rows("1|0/0,1/0,0/1,0/2\n2|0/0,1/0,0/1,0/2",
		"SELECT run_id, group_concat(label) FROM (SELECT run_id, label FROM compiles ORDER BY run_id, id)"
		" GROUP BY run_id");
	ck_rows("1|0|3|0\n1|1|3|2\n2|0|3|0\n2|1|3|2",
		"SELECT run_id, frame_index, calls, cache_hits FROM frames ORDER BY run_id, frame_index");
	ck_rows("1|4\n2|4", "SELECT id, compile_count FROM runs ORDER BY id");
	/* each compile logged its phases */
	ck_rows("trace,guards,backend",
		"SELECT group_concat(name) FROM (SELECT name FROM compile_phases WHERE compile_id ="
		" (SELECT min(id) FROM compiles WHERE run_id = 2) ORDER BY position)");
	output_release(&a);
	output_release(&b);
	free(path);
}
END_TEST

START_TEST(test_switches_do_not_leak)
{
	char *first = write_program("first.tj", "disallow_in_graph(relu)\n"
						"def g(x):\n"
						"    return relu(x) + 1\n"
						"print(compile(g)(ones(2)))\n");
	char *second = write_program("second.tj", "def g(x):\n"
						  "    return relu(x) + 1\n"
						  "print(compile(g)(ones(2)))\n");
	struct run_options o = options(first);
	o.backend = "relu_runtime_error_TESTING_ONLY";
	o.cache_size_limit = "1";
	o.fullgraph = false;
	struct output a = run(&o);
	o = options(second);
	struct output b = run(&o);
	ck_assert_int_eq(a.status, 0);
	ck_assert_int_eq(b.status, 0);
	ck_assert_str_eq(b.out, "tensor([2.0000, 2.0000])\n");
	/* the second run: its own backend and cache limit, relu in the graph */
	ck_rows("fullgraph=0 cache_size_limit=1 eager=0 no_kernel_cache=0\n"
		"fullgraph=0 cache_size_limit=8 eager=0 no_kernel_cache=0",
		"SELECT config FROM runs ORDER BY id");
	ck_rows("inductor|ok|2", "SELECT backend, outcome, op_count FROM compiles WHERE run_id = 2");
	ck_rows("0", "SELECT count(*) FROM graph_breaks WHERE compile_id IN (SELECT id FROM compiles WHERE run_id = 2)");
	output_release(&a);
	output_release(&b);
	free(first);
	free(second);
}
END_TEST

/* ---- TJIT_INJECT_BUG ---- */

START_TEST(test_inject_bug_checked)
{
	char *path = write_program("p.tj", "print(1)\n");
	struct run_options o = options(path);
	setenv("TJIT_INJECT_BUG", "aot:accuracy", 1);
	struct output a = run(&o);
	ck_assert_int_eq(a.status, 0);
	ck_assert_str_eq(a.out, "1\n");
	setenv("TJIT_INJECT_BUG", "codegen:accuracy", 1);
	struct output b = run(&o);
	ck_assert_int_eq(b.status, 2);
	ck_assert_str_eq(b.out, "");
	ck_assert_str_eq(b.err, "tjit run: TJIT_INJECT_BUG: unknown stage 'codegen' in 'codegen:accuracy'"
				" (valid: aot, inductor)\n");
	unsetenv("TJIT_INJECT_BUG");
	output_release(&a);
	output_release(&b);
	free(path);
}
END_TEST

/* ---- TJIT_COMPILE_ONLY ---- */

START_TEST(test_compile_only)
{
	struct runtime_config rc = {.switches = COMPILE_SWITCHES_INIT};
	rc.switches.compile_only = "0/1,12/3";
	rc.switches.others = &backend_eager;
	struct runtime *rt = runtime_new(&rc);
	ck_assert_ptr_nonnull(rt);
	ck_assert(runtime_compile_selected(rt, "0/1"));
	ck_assert(runtime_compile_selected(rt, "12/3"));
	ck_assert(!runtime_compile_selected(rt, "0/0"));
	ck_assert(!runtime_compile_selected(rt, "2/3"));
	ck_assert(!runtime_compile_selected(rt, "0/"));
	runtime_free(rt);
	ck_assert(runtime_compile_selected(NULL, "0/0"));

	/* two graphs with relu: only the selected one is on the failing backend */
	char *path = write_program("p.tj", "def f(x):\n"
					   "    return relu(x) + 1\n"
					   "def g(x):\n"
					   "    return relu(x) * 2\n"
					   "print(compile(f)(ones(2)))\n"
					   "print(compile(g)(ones(2)))\n");
	struct run_options o = options(path);
	o.backend = "relu_runtime_error_TESTING_ONLY";
	setenv("TJIT_COMPILE_ONLY", "1/0", 1);
	struct output a = run(&o);
	unsetenv("TJIT_COMPILE_ONLY");
	ck_assert_int_eq(a.status, 1);
	ck_assert_str_eq(a.out, "tensor([2.0000, 2.0000])\n");
	ck_assert_ptr_nonnull(strstr(a.err, "ReluRuntimeError"));
	ck_rows("0/0|eager\n1/0|relu_runtime_error_TESTING_ONLY", "SELECT label, backend FROM compiles ORDER BY id");
	output_release(&a);
	free(path);
}
END_TEST

/* ---- phases and kernels in the database ---- */

START_TEST(test_phases_and_kernels_logged)
{
	char *err = NULL;
	struct db_writer *w = db_open_writer(dbpath, &err);
	ck_assert_msg(w != NULL, "%s", err);
	db_begin_run(w, &(struct db_run){.tool = "test", .command = "test", .program = "p.tj"});
	struct compile_log_config cfg = {0, stderr, w};
	struct compile_log *log = compile_log_new(&cfg);
	ck_assert_ptr_nonnull(log);

	struct compile_record r;
	memset(&r, 0, sizeof r);
	snprintf(r.compile_id, sizeof r.compile_id, "0/0");
	r.function = "f";
	r.reason = "first";
	r.backend = "inductor";
	r.outcome = "ok";
	struct graph *ind = graph_new("f", "0/0", NULL, 1, STAGE_INDUCTOR);
	r.ngraphs_extra = 1;
	r.graphs_extra = calloc(1, sizeof *r.graphs_extra);
	r.graphs_extra[0] = ind;
	r.nphases = 3;
	r.phases = calloc(3, sizeof *r.phases);
	r.phases[0] = (struct compile_phase){"trace", -1, 0, 1.5};
	r.phases[1] = (struct compile_phase){"backend", -1, 0, 4};
	r.phases[2] = (struct compile_phase){"codegen", 1, 0, 3.25};
	r.nkernels = 1;
	r.kernels = calloc(1, sizeof *r.kernels);
	r.kernels[0] = (struct kernel_record){strdup("kernel_0"), strdup("pointwise"), NULL, strdup("relu, add"),
					       NULL, strdup("define void @kernel_0() {}"), false, 2.5, ind};
	compile_log_compile(log, &r);
	compile_record_release(&r);
	compile_log_free(log);
	db_end_run(w, 0);
	db_close(w);

	ck_rows("0|trace|NULL|1.5\n1|backend|NULL|4.0\n2|codegen|1|3.25",
		"SELECT position, name, parent, ms FROM compile_phases ORDER BY position");
	ck_rows("inductor|0|kernel_0|pointwise||relu, add||define void @kernel_0() {}|0|2.5",
		"SELECT g.stage, k.idx, k.name, k.kind, k.hash, k.fused_nodes, k.loop_ir, k.llvm_ir, k.cache_hit,"
		" k.codegen_ms FROM kernels k JOIN graphs g ON g.id = k.graph_id");
}
END_TEST

static Suite *runtime_suite(void)
{
	Suite *s = suite_create("runtime");
	TCase *tc = tcase_create("runs");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_second_run_starts_clean);
	tcase_add_test(tc, test_switches_do_not_leak);
	tcase_add_test(tc, test_inject_bug_checked);
	tcase_add_test(tc, test_compile_only);
	tcase_add_test(tc, test_phases_and_kernels_logged);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(runtime_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
