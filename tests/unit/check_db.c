/* check_db.c - the compile log writer: every column written, read back with
 * plain SQLite; user_version, WAL, refusals; the null writer; the queue (a
 * call returns before SQLite runs; db_flush waits); a killed, a crashed and
 * an exited run; concurrent writers; fork; failures that degrade to a null
 * writer; the query plans of the tools never scan a table. */
#define _GNU_SOURCE
#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "db.h"

/* --- fixture: a fresh temporary directory per test --- */
#define DB_TEST_NAME "check_db"
#include "db_test_util.h"

/* --- reading back with plain SQLite --- */

static sqlite3 *open_plain(void)
{
	sqlite3 *db = NULL;
	ck_assert_int_eq(sqlite3_open_v2(dbpath, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
	sqlite3_busy_timeout(db, 5000);
	return db;
}

/* The rows of a query as text: columns joined by '|', rows by '\n', NULL
 * as "NULL". */
__attribute__((format(printf, 2, 3))) static char *rows(sqlite3 *db, const char *fmt, ...)
{
	char sql[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(sql, sizeof sql, fmt, ap);
	va_end(ap);
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	ck_assert_msg(rc == SQLITE_OK, "%s: %s", sql, sqlite3_errmsg(db));
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	int nrow = 0;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (nrow++)
			fputc('\n', f);
		for (int i = 0; i < sqlite3_column_count(st); i++) {
			if (i)
				fputc('|', f);
			const unsigned char *t = sqlite3_column_text(st, i);
			fputs(t ? (const char *)t : "NULL", f);
		}
	}
	ck_assert_msg(rc == SQLITE_DONE, "%s: %s", sql, sqlite3_errmsg(db));
	sqlite3_finalize(st);
	fclose(f);
	return out;
}

#define ck_rows(db, expected, ...)                             \
	do {                                                   \
		char *got_ = rows(db, __VA_ARGS__);            \
		ck_assert_str_eq(got_, expected);              \
		free(got_);                                    \
	} while (0)

static long long count_of(sqlite3 *db, const char *table)
{
	char *s = rows(db, "SELECT count(*) FROM %s", table);
	long long n = atoll(s);
	free(s);
	return n;
}

/* asprintf that cannot fail */
__attribute__((format(printf, 1, 2))) static char *xfmt(const char *fmt, ...)
{
	char *s = NULL;
	va_list ap;
	va_start(ap, fmt);
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	ck_assert_int_ge(n, 0);
	return s;
}

static struct db_writer *must_open(void)
{
	char *err = NULL;
	struct db_writer *w = db_open_writer(dbpath, &err);
	ck_assert_msg(w != NULL, "open: %s", err ? err : "?");
	ck_assert_ptr_null(err);
	return w;
}

/* --- a typical compile: the rows the tests log --- */

static const struct db_guard guards2[] = {
	{"type", "type(L['x']) == Tensor", NULL, 0, 0},
	{"tensor_match", "L['x'].shape == (2,)", "prog.tj", 3, 9},
};
static const struct db_node nodes3[] = {
	{"x", "input", NULL, "L['x']", "float32", "[2]", NULL, 0, 0, NULL},
	{"abs_1", "op", "abs", "x", "float32", "[2]", "prog.tj", 4, 12, "prog.tj:9 in main\nprog.tj:4 in f"},
	{"output", "output", NULL, "abs_1", NULL, NULL, NULL, 0, 0, NULL},
};
static const struct db_kernel kernels1[] = {
	{"kernel_0", "pointwise", "9f00aa11", "abs_1", "for i in 0..2: out[i] = abs(x[i])", "define void @k() {}",
	 0, 2.5},
	{"kernel_1", "matmul", "77", "mm_2", "sgemm", NULL, 1, 0},
};
static const struct db_graph graphs1[] = {
	{"captured", "f", 1, "graph f(x):\n  abs_1 = abs(x)", 3, nodes3, 0, NULL},
	{"inductor", "f", 1, "kernels", 0, NULL, 2, kernels1},
};
static const struct db_guard_failure failures1[] = {
	{"0/0", "L['x'].shape == (2,)", "(3,)"},
};
static const struct db_break breaks1[] = {
	{"TJB001", "side_effect", "print() in a compiled function", "prog.tj", 5, 3, 17, "prog.tj:9 in main\nprog.tj:5 in f"},
};

/* what graphs1[0] saves for backward, as aot_eager's forward graph would */
static const struct db_saved saved2[] = {
	{0, "x", "float32", "[2]", 8},
	{1, "abs_1", "float32", "[2]", 8},
};

static const struct db_phase phases3[] = {
	{"trace", -1, 1.25}, {"guards", -1, 0.5}, {"backend", -1, 8.75}, {"codegen", 2, 6.5},
};

static struct db_compile compile_first(int64_t frame_id)
{
	return (struct db_compile){
		.frame_id = frame_id,
		.compile_id = "0/0",
		.compile_index = 0,
		.reason = "first",
		.backend = "inductor",
		.dynamic = "None",
		.started_at = 1700000001.5,
		.trace_ms = 1.25,
		.guard_ms = 0.5,
		.backend_ms = 8.75,
		.total_ms = 10.5,
		.outcome = "ok",
		.op_count = 1,
		.error = NULL,
		.nguards = 2,
		.guards = guards2,
		.ngraphs = 2,
		.graphs = graphs1,
		.nphases = 4,
		.phases = phases3,
		.partitioned = 1,
		.saved_graph = 0,
		.saved_bytes = 16,
		.nsaved = 2,
		.saved = saved2,
	};
}

static struct db_compile compile_recompile(int64_t frame_id)
{
	return (struct db_compile){
		.frame_id = frame_id,
		.compile_id = "0/1",
		.compile_index = 1,
		.reason = "recompile",
		.backend = "eager",
		.dynamic = NULL,
		.started_at = 1700000002.25,
		.trace_ms = 2,
		.total_ms = 3,
		.outcome = "graph_break",
		.op_count = 0,
		.error = "boom",
		.nfailures = 1,
		.failures = failures1,
		.nbreaks = 1,
		.breaks = breaks1,
	};
}

static const struct db_run run1 = {
	.tool = "tjit run",
	.command = "tjit run prog.tj",
	.program = "prog.tj",
	.source_text = "def f(x):\n    return x.abs()\n",
	.backend = NULL,
	.config = "fullgraph=0 cache_size_limit=8",
	.started_at = 1700000000.5,
};

static const struct db_frame frame0 = {0, "f", "prog.tj", 1, 0, 0};
static const struct db_frame frame1 = {1, "f", "prog.tj", 1, 18, 6};

/* --- tests --- */

START_TEST(test_every_column)
{
	struct db_writer *w = must_open();
	int64_t run = db_begin_run(w, &run1);
	ck_assert_int_gt(run, 0);
	db_log_source(w, "lib.tj", "def g(): pass\n");
	db_log_source(w, "lib.tj", "def g(): pass\n"); /* idempotent */
	int64_t f0 = db_log_frame(w, &frame0);
	int64_t f1 = db_log_frame(w, &frame1);
	ck_assert_int_gt(f0, 0);
	ck_assert_int_ne(f0, f1);
	ck_assert_int_eq(db_log_frame(w, &frame0), f0); /* the same frame twice: its first row */
	db_frame_counts(w, f0, &(struct db_frame_counts){3, 1, 0, 0, 0, NULL});
	struct db_compile c0 = compile_first(f0);
	int64_t cid0 = db_log_compile(w, &c0, NULL);
	struct db_compile c1 = compile_recompile(f0);
	int64_t bids[1] = {0};
	int64_t cid1 = db_log_compile(w, &c1, bids);
	ck_assert_int_gt(cid0, 0);
	ck_assert_int_gt(cid1, cid0);
	ck_assert_int_gt(bids[0], 0);
	db_frame_counts(w, f0, &(struct db_frame_counts){7, 5, 2, 6, 2500000, "cache_limit"});
	db_frame_counts(w, f1, &(struct db_frame_counts){1, 0, 0, 1, 1000, NULL});
	db_break_hits(w, bids[0], 4);
	db_break_hits(w, bids[0], 6);
	int64_t ms = db_begin_minify(w, &(struct db_minify){"prog.tj", run1.source_text, "inductor", "accuracy",
							 1700000003});
	db_log_minify_step(w, ms, &(struct db_minify_step){"bisect", "stage aot_eager", -1, "passes", 12.5});
	db_log_minify_step(w, ms, &(struct db_minify_step){"shrink", "drop nodes 4..7", 3, "fails", 7});
	db_end_minify(w, ms, &(struct db_minify_end){"inductor", "minified", "repro.tj", "x = 1\n"});
	db_end_run(w, 1);
	ck_assert_ptr_null(db_error(w));
	db_close(w);

	sqlite3 *db = open_plain();
	char h_prog[17], h_lib[17], h_repro[17];
	db_hash_text(run1.source_text, h_prog);
	db_hash_text("def g(): pass\n", h_lib);
	db_hash_text("x = 1\n", h_repro);
	char *expect = NULL;
	expect = xfmt("%s|lib.tj|def g(): pass\n\n%s|prog.tj|%s\n%s|repro.tj|x = 1\n", h_lib,
				  h_prog, run1.source_text, h_repro);
	ck_rows(db, expect, "SELECT hash, path, text FROM sources ORDER BY path");
	free(expect);

	expect = xfmt("%lld|tjit run|tjit run prog.tj|prog.tj|%s|NULL|fullgraph=0 cache_size_limit=8|"
				  "%d|1700000000.5|1|1|1",
				  (long long)run, h_prog, (int)getpid());
	ck_rows(db, expect,
		"SELECT id, tool, command, program, source_hash, backend, config, pid, started_at,"
		" ended_at > started_at, ended_at < 1e10, exit_status FROM runs");
	free(expect);

	ck_rows(db,
		"0|f|prog.tj|1|0|NULL|7|5|2|cache_limit|6|2.5\n"
		"1|f|prog.tj|1|18|6|1|0|0|NULL|1|0.001",
		"SELECT frame_index, function, file, line, resume_pc, resume_line, calls, cache_hits, eager_calls,"
		" eager_reason, guard_checks, guard_check_ms FROM frames WHERE run_id = %lld ORDER BY frame_index",
		(long long)run);
	ck_assert_int_eq(count_of(db, "frames"), 2);
	ck_rows(db, "2|1|1|1", "SELECT compile_count, graph_count, break_count, recompile_count FROM runs WHERE id = %lld",
		(long long)run);

	ck_rows(db,
		"1|1|0/0|0|first|inductor|None|1700000001.5|1.25|0.5|8.75|10.5|ok|1|NULL|16\n"
		"1|1|0/1|1|recompile|eager|NULL|1700000002.25|2.0|0.0|0.0|3.0|graph_break|0|boom|NULL",
		"SELECT run_id = %lld, frame_id = %lld, label, compile_index, reason, backend, dynamic, started_at,"
		" trace_ms, guard_ms, backend_ms, total_ms, outcome, op_count, error, saved_bytes FROM compiles"
		" ORDER BY id",
		(long long)run, (long long)f0);
	ck_rows(db, "0|0|x|x|float32|[2]|8\n1|1|abs_1|abs_1|float32|[2]|8",
		"SELECT s.idx, s.node_idx, s.name, n.name, s.dtype, s.shape, s.bytes FROM aot_saved s"
		" JOIN nodes n ON n.graph_id = s.graph_id AND n.idx = s.node_idx"
		" WHERE s.compile_id = %lld AND s.graph_id = (SELECT min(id) FROM graphs) ORDER BY s.idx",
		(long long)cid0);
	ck_assert_int_eq(count_of(db, "aot_saved"), 2);
	ck_rows(db, "0|trace|NULL|1.25\n1|guards|NULL|0.5\n2|backend|NULL|8.75\n3|codegen|2|6.5",
		"SELECT position, name, parent, ms FROM compile_phases WHERE compile_id = %lld ORDER BY position",
		(long long)cid0);
	ck_assert_int_eq(count_of(db, "compile_phases"), 4);
	ck_rows(db,
		"0|type|type(L['x']) == Tensor|NULL|NULL|NULL\n"
		"1|tensor_match|L['x'].shape == (2,)|prog.tj|3|9",
		"SELECT idx, kind, text, file, line, col FROM guards WHERE compile_id = %lld ORDER BY idx",
		(long long)cid0);
	ck_assert_int_eq(count_of(db, "guards"), 2);
	ck_rows(db, "1|1|0/0|L['x'].shape == (2,)|(3,)",
		"SELECT run_id = %lld, compile_id = %lld, failed_label, guard_text, value_seen FROM guard_failures",
		(long long)run, (long long)cid1);
	ck_rows(db,
		"1|1|1|TJB001|side_effect|print() in a compiled function|prog.tj|5|3|17|"
		"prog.tj:9 in main\nprog.tj:5 in f|6",
		"SELECT id = %lld, run_id = %lld, compile_id = %lld, code, category, message, file, line, col, pc,"
		" user_stack, hits FROM graph_breaks",
		(long long)bids[0], (long long)run, (long long)cid1);
	ck_rows(db,
		"1|captured|f|1|graph f(x):\n  abs_1 = abs(x)\n"
		"1|inductor|f|1|kernels",
		"SELECT compile_id = %lld, stage, name, op_count, listing FROM graphs ORDER BY id", (long long)cid0);
	ck_rows(db,
		"0|x|input|NULL|L['x']|float32|[2]|NULL|NULL|NULL|NULL\n"
		"1|abs_1|op|abs|x|float32|[2]|prog.tj|4|12|prog.tj:9 in main\nprog.tj:4 in f\n"
		"2|output|output|NULL|abs_1|NULL|NULL|NULL|NULL|NULL|NULL",
		"SELECT idx, name, kind, op, args, dtype, shape, file, line, col, user_stack FROM nodes"
		" WHERE graph_id = (SELECT min(id) FROM graphs) ORDER BY idx");
	ck_rows(db,
		"0|kernel_0|pointwise|9f00aa11|abs_1|for i in 0..2: out[i] = abs(x[i])|define void @k() {}|0|2.5\n"
		"1|kernel_1|matmul|77|mm_2|sgemm|NULL|1|0.0",
		"SELECT idx, name, kind, hash, fused_nodes, loop_ir, llvm_ir, cache_hit, codegen_ms FROM kernels"
		" WHERE graph_id = (SELECT max(id) FROM graphs) ORDER BY idx");
	expect = xfmt("1|prog.tj|%s|inductor|accuracy|1700000003.0|1|inductor|minified|repro.tj|%s",
				  h_prog, h_repro);
	ck_rows(db, expect,
		"SELECT run_id = %lld, program, source_hash, backend, failure, started_at, ended_at > started_at,"
		" stage, result, repro_path, repro_hash FROM minify_sessions",
		(long long)run);
	free(expect);
	ck_rows(db,
		"1|bisect|stage aot_eager|NULL|passes|12.5\n"
		"1|shrink|drop nodes 4..7|3|fails|7.0",
		"SELECT session_id = %lld, phase, candidate, nodes, outcome, ms FROM minify_steps ORDER BY id",
		(long long)ms);
	ck_rows(db, "", "PRAGMA foreign_key_check");
	ck_rows(db, "ok", "PRAGMA integrity_check");
	sqlite3_close(db);
}
END_TEST

START_TEST(test_version_wal_reopen)
{
	struct db_writer *w = must_open();
	db_close(w);
	w = must_open(); /* an existing file of this version opens as is */
	db_begin_run(w, &run1);
	db_end_run(w, 0);
	db_close(w);
	sqlite3 *db = open_plain();
	char *expect = NULL;
	expect = xfmt("%d", DB_SCHEMA_VERSION);
	ck_rows(db, expect, "PRAGMA user_version");
	free(expect);
	ck_rows(db, "wal", "PRAGMA journal_mode");
	ck_rows(db, "2048", "PRAGMA page_size");
	ck_rows(db,
		"aot_saved\ncompile_phases\ncompiles\nframes\ngraph_breaks\ngraphs\nguard_failures\nguards\nkernels\n"
		"minify_sessions\nminify_steps\nnodes\nruns\nsources",
		"SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name");
	ck_assert_int_eq(count_of(db, "runs"), 1);
	sqlite3_close(db);
}
END_TEST

/* A file made by hand with plain SQLite. */
static void make_file(const char *sql)
{
	sqlite3 *db = NULL;
	ck_assert_int_eq(sqlite3_open(dbpath, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
}

static void ck_refused(const char *expected_fmt)
{
	char *err = NULL, *expected = NULL;
	struct db_writer *w = db_open_writer(dbpath, &err);
	ck_assert_ptr_null(w);
	ck_assert_ptr_nonnull(err);
	expected = xfmt(expected_fmt, dbpath, DB_SCHEMA_VERSION);
	ck_assert_str_eq(err, expected);
	free(expected);
	free(err);
}

START_TEST(test_newer_refused)
{
	make_file("PRAGMA user_version = 99; CREATE TABLE future (x);");
	ck_refused("%s has schema version 99, this tjit understands up to %d:"
		   " it needs a tjit that understands version 99");
	/* and left alone: not switched to WAL, no tables added */
	sqlite3 *db = open_plain();
	ck_rows(db, "delete", "PRAGMA journal_mode");
	ck_rows(db, "future", "SELECT name FROM sqlite_master");
	sqlite3_close(db);
}
END_TEST

START_TEST(test_foreign_refused)
{
	make_file("CREATE TABLE mine (x);");
	ck_refused("%s is not a tjit database (it has tables but no schema version)");
	FILE *f = fopen(dbpath, "w");
	fputs("this is not an SQLite file, but it is long enough to look like one's header........\n", f);
	fclose(f);
	ck_refused("%s is not a tjit database (nor any SQLite database)");
	char *err = NULL;
	ck_assert_ptr_null(db_open_writer("/nonexistent-dir/x.db", &err));
	ck_assert_str_eq(err, "/nonexistent-dir/x.db: unable to open database file");
	free(err);
	ck_assert_ptr_null(db_open_writer("", &err));
	ck_assert_str_eq(err, "no database path");
	free(err);
	ck_assert_ptr_null(db_open_writer("", NULL));
}
END_TEST

START_TEST(test_empty_file_created)
{
	close(open(dbpath, O_CREAT | O_WRONLY, 0644)); /* version 0, no tables */
	struct db_writer *w = must_open();
	db_close(w);
	sqlite3 *db = open_plain();
	ck_rows(db, "4", "PRAGMA user_version");
	ck_rows(db, "0", "SELECT count(*) FROM runs");
	sqlite3_close(db);
}
END_TEST

/* a version-1 file (no guard-check counters) is migrated, its rows kept */
START_TEST(test_migrate_from_1)
{
	struct db_writer *w = must_open();
	db_begin_run(w, &run1);
	int64_t f0 = db_log_frame(w, &frame0);
	db_frame_counts(w, f0, &(struct db_frame_counts){3, 1, 0, 0, 0, NULL});
	struct db_compile c0 = compile_first(f0), c1 = compile_recompile(f0);
	db_log_compile(w, &c0, NULL);
	db_log_compile(w, &c1, NULL);
	db_end_run(w, 0);
	db_begin_run(w, &run1); /* a run without compiles */
	db_end_run(w, 0);
	db_close(w);
	sqlite3 *db = open_plain();
	char *msg = NULL;
	int rc = sqlite3_exec(db,
				      "ALTER TABLE frames DROP COLUMN guard_checks;"
				      " ALTER TABLE frames DROP COLUMN guard_check_ms;"
				      " ALTER TABLE runs DROP COLUMN compile_count;"
				      " ALTER TABLE runs DROP COLUMN graph_count;"
				      " ALTER TABLE runs DROP COLUMN break_count;"
				      " ALTER TABLE runs DROP COLUMN recompile_count; DROP TABLE compile_phases;"
				      " ALTER TABLE compiles DROP COLUMN saved_bytes; DROP TABLE aot_saved;"
				      " PRAGMA user_version = 1",
				      NULL, NULL, &msg);
	ck_assert_msg(rc == SQLITE_OK, "%s", msg);
	sqlite3_close(db);
	w = must_open();
	db_close(w);
	db = open_plain();
	ck_rows(db, "4", "PRAGMA user_version");
	ck_rows(db, "3|1|0|0.0", "SELECT calls, cache_hits, guard_checks, guard_check_ms FROM frames");
	ck_rows(db, "1|2|1|1|1\n2|0|0|0|0",
		"SELECT id, compile_count, graph_count, break_count, recompile_count FROM runs ORDER BY id");
	sqlite3_close(db);
}
END_TEST

/* a version-2 file (no compile_phases) is migrated: the table is made,
 * the compiles are kept, and new compiles log their phases */
START_TEST(test_migrate_from_2)
{
	struct db_writer *w = must_open();
	db_begin_run(w, &run1);
	int64_t f0 = db_log_frame(w, &frame0);
	struct db_compile c1 = compile_recompile(f0);
	db_log_compile(w, &c1, NULL);
	db_end_run(w, 0);
	db_close(w);
	sqlite3 *db = open_plain();
	char *msg = NULL;
	int rc = sqlite3_exec(db,
			      "DROP TABLE compile_phases; ALTER TABLE compiles DROP COLUMN saved_bytes;"
			      " DROP TABLE aot_saved; PRAGMA user_version = 2",
			      NULL, NULL, &msg);
	ck_assert_msg(rc == SQLITE_OK, "%s", msg);
	sqlite3_close(db);
	w = must_open();
	db_begin_run(w, &run1);
	f0 = db_log_frame(w, &frame0);
	struct db_compile c0 = compile_first(f0);
	int64_t cid0 = db_log_compile(w, &c0, NULL);
	db_end_run(w, 0);
	ck_assert_ptr_null(db_error(w));
	db_close(w);
	db = open_plain();
	ck_rows(db, "4", "PRAGMA user_version");
	ck_rows(db, "0/1\n0/0", "SELECT label FROM compiles ORDER BY id");
	ck_rows(db, "4|1", "SELECT count(*), min(compile_id) = %lld FROM compile_phases", (long long)cid0);
	sqlite3_close(db);
}
END_TEST

/* a version-3 file (no saved tensors) is migrated: compiles.saved_bytes
 * is NULL for the old compiles, and new ones log their saved tensors */
START_TEST(test_migrate_from_3)
{
	struct db_writer *w = must_open();
	db_begin_run(w, &run1);
	int64_t f0 = db_log_frame(w, &frame0);
	struct db_compile c1 = compile_recompile(f0);
	db_log_compile(w, &c1, NULL);
	db_end_run(w, 0);
	db_close(w);
	sqlite3 *db = open_plain();
	char *msg = NULL;
	int rc = sqlite3_exec(db, "ALTER TABLE compiles DROP COLUMN saved_bytes; DROP TABLE aot_saved;"
				  " PRAGMA user_version = 3",
			      NULL, NULL, &msg);
	ck_assert_msg(rc == SQLITE_OK, "%s", msg);
	sqlite3_close(db);
	w = must_open();
	db_begin_run(w, &run1);
	f0 = db_log_frame(w, &frame0);
	struct db_compile c0 = compile_first(f0);
	int64_t cid0 = db_log_compile(w, &c0, NULL);
	db_end_run(w, 0);
	ck_assert_ptr_null(db_error(w));
	db_close(w);
	db = open_plain();
	ck_rows(db, "4", "PRAGMA user_version");
	ck_rows(db, "0/1|NULL\n0/0|16", "SELECT label, saved_bytes FROM compiles ORDER BY id");
	ck_rows(db, "2|1", "SELECT count(*), min(compile_id) = %lld FROM aot_saved", (long long)cid0);
	sqlite3_close(db);
}
END_TEST

/* A migration is one transaction: a version-2 file whose step to 4 fails
 * (aot_saved's column is there already) keeps version 2 and none of the
 * step to 3 (compile_phases), and the writer says why. */
START_TEST(test_migration_all_or_nothing)
{
	struct db_writer *w = must_open();
	db_close(w);
	sqlite3 *db = open_plain();
	char *msg = NULL;
	int rc = sqlite3_exec(db, "DROP TABLE compile_phases; DROP TABLE aot_saved; PRAGMA user_version = 2", NULL,
			      NULL, &msg);
	ck_assert_msg(rc == SQLITE_OK, "%s", msg);
	sqlite3_close(db);
	ck_refused("%s: cannot create the schema: duplicate column name: saved_bytes");
	db = open_plain();
	ck_rows(db, "2", "PRAGMA user_version");
	ck_rows(db, "0", "SELECT count(*) FROM sqlite_master WHERE name IN ('compile_phases', 'aot_saved')");
	sqlite3_close(db);
}
END_TEST

/* Another application's file with a user_version of its own is not
 * migrated: not switched to WAL, no table added. */
START_TEST(test_foreign_with_version_refused)
{
	make_file("CREATE TABLE runs (x); PRAGMA user_version = 3;");
	ck_refused("%s is not a tjit database (schema version 3, but not tjit's tables)");
	sqlite3 *db = open_plain();
	ck_rows(db, "delete", "PRAGMA journal_mode");
	ck_rows(db, "runs", "SELECT name FROM sqlite_master");
	sqlite3_close(db);
}
END_TEST

START_TEST(test_schema_documented)
{
	/* every column of schema.sql carries a comment, or is the id */
	struct db_writer *w = must_open();
	db_close(w);
	sqlite3 *db = open_plain();
	char *tables = rows(db, "SELECT name FROM sqlite_master WHERE type = 'table'");
	for (char *t = strtok(tables, "\n"); t; t = strtok(NULL, "\n")) {
		char *sql = rows(db, "SELECT sql FROM sqlite_master WHERE name = '%s'", t);
		for (char *line = sql; line && *line;) {
			char *nl = strchr(line, '\n');
			size_t n = nl ? (size_t)(nl - line) : strlen(line);
			char buf[512];
			snprintf(buf, sizeof buf, "%.*s", (int)n, line);
			const char *p = buf + strspn(buf, " \t");
			bool column = *p && *p != '-' && *p != ')' && strncmp(p, "CREATE", 6) && strncmp(p, "UNIQUE", 6) &&
				      strncmp(p, "id ", 3);
			ck_assert_msg(!column || strstr(p, "--"), "%s: undocumented column: %s", t, p);
			line = nl ? nl + 1 : NULL;
		}
		free(sql);
	}
	free(tables);
	sqlite3_close(db);
}
END_TEST

START_TEST(test_null_writer)
{
	struct db_writer *w = db_null_writer();
	ck_assert_ptr_nonnull(w);
	ck_assert_int_eq(db_begin_run(w, &run1), 1);
	ck_assert_int_eq(db_log_frame(w, &frame0), 2);
	db_frame_counts(w, 2, &(struct db_frame_counts){1, 1, 1, 0, 0, "disabled"});
	struct db_compile c = compile_recompile(2);
	int64_t bids[1] = {0};
	ck_assert_int_eq(db_log_compile(w, &c, bids), 4);
	ck_assert_int_eq(bids[0], 3);
	db_break_hits(w, bids[0], 1);
	db_log_source(w, "x.tj", "x");
	int64_t s = db_begin_minify(w, &(struct db_minify){"p.tj", NULL, NULL, "crash", 0});
	ck_assert_int_eq(s, 5);
	db_log_minify_step(w, s, &(struct db_minify_step){"classify", "run", -1, "fails", 1});
	db_end_minify(w, s, &(struct db_minify_end){NULL, "error", NULL, NULL});
	db_end_run(w, 0);
	ck_assert_ptr_null(db_error(w));
	db_close(w);
	/* a NULL writer is a null writer */
	ck_assert_int_gt(db_begin_run(NULL, &run1), 0);
	ck_assert_int_gt(db_log_compile(NULL, &c, bids), 0);
	db_frame_counts(NULL, 1, &(struct db_frame_counts){1, 1, 1, 0, 0, NULL});
	db_end_run(NULL, 0);
	ck_assert_ptr_null(db_error(NULL));
	db_close(NULL);
	/* nothing was created */
	ck_assert_int_ne(access(dbpath, F_OK), 0);
}
END_TEST

START_TEST(test_default_path)
{
	unsetenv("TJIT_DB");
	ck_assert_str_eq(db_default_path(NULL), "tjit.db");
	ck_assert_str_eq(db_default_path(""), "tjit.db");
	setenv("TJIT_DB", "env.db", 1);
	ck_assert_str_eq(db_default_path(NULL), "env.db");
	ck_assert_str_eq(db_default_path("flag.db"), "flag.db");
	setenv("TJIT_DB", "", 1);
	ck_assert_str_eq(db_default_path(NULL), "tjit.db");
	unsetenv("TJIT_DB");
}
END_TEST

START_TEST(test_hash)
{
	char h[17];
	db_hash_text("", h);
	ck_assert_str_eq(h, "cbf29ce484222325");
	db_hash_text("a", h);
	ck_assert_str_eq(h, "af63dc4c8601ec8c");
	db_hash_text("foobar", h);
	ck_assert_str_eq(h, "85944171f73967e8");
}
END_TEST

START_TEST(test_counters_batched)
{
	struct db_writer *w = must_open();
	db_begin_run(w, &run1);
	int64_t f = db_log_frame(w, &frame0);
	sqlite3 *db = open_plain();
	db_frame_counts(w, f, &(struct db_frame_counts){10, 9, 0, 0, 0, NULL});
	db_flush(w); /* the queue is written; the counters are not queued */
	ck_rows(db, "0|0", "SELECT calls, cache_hits FROM frames"); /* in memory */
	struct db_compile c = compile_recompile(f);
	int64_t bid = 0;
	db_log_compile(w, &c, &bid);
	db_flush(w);
	ck_rows(db, "10|9", "SELECT calls, cache_hits FROM frames"); /* went out with the compile */
	db_break_hits(w, bid, 3);
	db_frame_counts(w, f, &(struct db_frame_counts){11, 10, 0, 0, 0, NULL});
	db_flush(w);
	ck_rows(db, "10|0", "SELECT (SELECT calls FROM frames), (SELECT hits FROM graph_breaks)");
	struct timespec pause = {1, 50 * 1000 * 1000};
	nanosleep(&pause, NULL);
	db_frame_counts(w, f, &(struct db_frame_counts){12, 11, 1, 0, 0, "frozen_miss"}); /* a second later: queued */
	db_flush(w);
	ck_rows(db, "12|11|1|frozen_miss|3",
		"SELECT calls, cache_hits, eager_calls, eager_reason, (SELECT hits FROM graph_breaks) FROM frames");
	db_frame_counts(w, f, &(struct db_frame_counts){13, 11, 1, 0, 0, "frozen_miss"});
	db_break_hits(w, bid, 5);
	db_end_run(w, 0); /* exact at the end */
	ck_rows(db, "13|5", "SELECT (SELECT calls FROM frames), (SELECT hits FROM graph_breaks)");
	db_frame_counts(w, f, &(struct db_frame_counts){14, 11, 1, 0, 0, NULL});
	db_close(w); /* and at close */
	ck_rows(db, "14|NULL", "SELECT calls, eager_reason FROM frames");
	sqlite3_close(db);
}
END_TEST

/* A compile of 10 guards, 1 failure, 1 break, 1 graph of 20 nodes, as
 * bench/bench_db.c logs them; id receives its label "0/i". */
static struct db_compile compile_big(int64_t frame_id, int i, char id[32])
{
	static struct db_guard g[10];
	static struct db_node nd[20];
	static struct db_graph gr = {"captured", "f", 20, "graph", 20, nd, 0, NULL};
	for (int k = 0; k < 10; k++)
		g[k] = (struct db_guard){"tensor_match", "L['x'].shape == (2,)", "prog.tj", k + 1, 5};
	for (int k = 0; k < 20; k++)
		nd[k] = (struct db_node){"add_1", "op", "add", "x, 1", "float32", "[2, 3]", "prog.tj", k + 1, 3, NULL};
	snprintf(id, 32, "0/%d", i);
	struct db_compile c = compile_recompile(frame_id);
	c.compile_id = id;
	c.compile_index = i;
	c.nguards = 10;
	c.guards = g;
	c.ngraphs = 1;
	c.graphs = &gr;
	return c;
}

/* Logs a run of n compiles (compile_big), each followed by the frame's
 * counters and its break's hits (compile i: calls i + 1, hits i); returns
 * the run's id. */
static int64_t log_run(struct db_writer *w, int n)
{
	int64_t run = db_begin_run(w, &run1);
	int64_t f = db_log_frame(w, &frame0);
	for (int i = 0; i < n; i++) {
		char id[32];
		struct db_compile c = compile_big(f, i, id);
		int64_t bid;
		db_log_compile(w, &c, &bid);
		db_frame_counts(w, f, &(struct db_frame_counts){i + 1, i, 0, 0, 0, NULL});
		db_break_hits(w, bid, i);
	}
	return run;
}

/* The rows of a run of 3 compiles that did not end. */
static void ck_unfinished_run(void)
{
	sqlite3 *db = open_plain();
	ck_rows(db, "NULL|NULL", "SELECT ended_at, exit_status FROM runs");
	ck_rows(db, "0/0\n0/1\n0/2", "SELECT label FROM compiles ORDER BY id");
	ck_assert_int_eq(count_of(db, "nodes"), 60);
	ck_rows(db, "2", "SELECT calls FROM frames"); /* written with the last compile */
	ck_rows(db, "ok", "PRAGMA integrity_check");
	sqlite3_close(db);
}

enum ending { KILLED_AFTER_FLUSH, CRASHED, EXITED, ABORTED };

static volatile uintptr_t bad_address = 16;

/* A child logs 3 compiles and ends so; returns its wait status. */
static int run_child(enum ending how)
{
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		char *err = NULL;
		struct db_writer *w = db_open_writer(dbpath, &err);
		if (!w)
			_exit(2);
		log_run(w, 3);
		switch (how) {
		case KILLED_AFTER_FLUSH:
			db_flush(w); /* written: SIGKILL loses only what is still queued */
			raise(SIGKILL);
			break;
		case CRASHED: /* a real fault: the handler lets the thread finish the queue */
			*(volatile int *)bad_address = 1;
			break;
		case ABORTED:
			abort();
		case EXITED: /* no db_end_run, no db_close: atexit waits */
			exit(0);
		}
		_exit(3);
	}
	int status = 0;
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	return status;
}

START_TEST(test_killed_run)
{
	int status = run_child(KILLED_AFTER_FLUSH);
	ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	ck_unfinished_run();
}
END_TEST

/* a crash right after db_log_compile, nothing flushed: the rows are there */
START_TEST(test_crashed_run)
{
	int status = run_child(CRASHED);
	/* under AddressSanitizer, its own SIGSEGV handler (which ours hands
	 * the fault back to) reports and exits 1 */
	ck_assert_msg((WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV) || (WIFEXITED(status) && WEXITSTATUS(status) == 1),
		      "status %#x", status);
	ck_unfinished_run();
	teardown();
	setup();
	status = run_child(ABORTED);
	ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT, "status %#x", status);
	ck_unfinished_run();
}
END_TEST

START_TEST(test_exited_run)
{
	int status = run_child(EXITED);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ck_unfinished_run();
}
END_TEST

/* The program's thread only copies the event: 1000 compiles are queued in
 * a small part of the time the thread takes to write them. */
START_TEST(test_queue_returns_at_once)
{
	struct db_writer *w = must_open();
	db_begin_run(w, &run1);
	int64_t f = db_log_frame(w, &frame0);
	db_flush(w);
	struct timespec t0, t1, t2;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int64_t last = 0;
	for (int i = 0; i < 1000; i++) {
		char id[32];
		struct db_compile c = compile_big(f, i, id);
		int64_t bid;
		int64_t cid = db_log_compile(w, &c, &bid);
		ck_assert_int_gt(cid, last);
		last = cid;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	db_flush(w);
	clock_gettime(CLOCK_MONOTONIC, &t2);
	double queue_s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
	double all_s = (double)(t2.tv_sec - t0.tv_sec) + (double)(t2.tv_nsec - t0.tv_nsec) * 1e-9;
	ck_assert_msg(queue_s < all_s / 5, "queuing 1000 compiles took %.1f ms of the %.1f ms to write them",
		      queue_s * 1e3, all_s * 1e3);
	db_end_run(w, 0);
	ck_assert_ptr_null(db_error(w));
	db_close(w);
	sqlite3 *db = open_plain();
	ck_rows(db, "1000|1000|20000", "SELECT (SELECT count(*) FROM compiles), (SELECT max(id) FROM compiles),"
					   " (SELECT count(*) FROM nodes)");
	sqlite3_close(db);
	/* the null writer, and no writer at all, have nothing to wait for */
	db_flush(NULL);
	w = db_null_writer();
	db_flush(w);
	db_close(w);
}
END_TEST

#define NWRITERS 4
#define NCOMPILES 100

START_TEST(test_concurrent_writers)
{
	int gate[2];
	ck_assert_int_eq(pipe(gate), 0);
	pid_t pids[NWRITERS];
	for (int i = 0; i < NWRITERS; i++) {
		pids[i] = fork();
		ck_assert_int_ge(pids[i], 0);
		if (pids[i] == 0) {
			char c;
			close(gate[1]);
			if (read(gate[0], &c, 1) != 0) /* all start when the gate closes */
				_exit(4);
			char *err = NULL;
			struct db_writer *w = db_open_writer(dbpath, &err); /* all create the file at once */
			if (!w) {
				fprintf(stderr, "writer %d: %s\n", i, err);
				_exit(2);
			}
			int64_t run = log_run(w, NCOMPILES);
			db_end_run(w, 0);
			int failed = db_error(w) != NULL;
			db_close(w);
			/* db_begin_run, the first event, gave the run's own id */
			sqlite3 *db = open_plain();
			char *pid = rows(db, "SELECT pid FROM runs WHERE id = %lld", (long long)run);
			failed |= atoi(pid) != (int)getpid();
			free(pid);
			sqlite3_close(db);
			_exit(failed);
		}
	}
	close(gate[0]);
	close(gate[1]);
	for (int i = 0; i < NWRITERS; i++) {
		int status = 0;
		ck_assert_int_eq(waitpid(pids[i], &status, 0), pids[i]);
		ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "writer %d: status %d", i, status);
	}
	sqlite3 *db = open_plain();
	char *expect = NULL;
	expect = xfmt("%d|%d", NWRITERS, NWRITERS);
	ck_rows(db, expect, "SELECT count(*), count(ended_at) FROM runs");
	free(expect);
	ck_assert_int_eq(count_of(db, "compiles"), NWRITERS * NCOMPILES);
	ck_assert_int_eq(count_of(db, "guards"), NWRITERS * NCOMPILES * 10);
	ck_assert_int_eq(count_of(db, "nodes"), NWRITERS * NCOMPILES * 20);
	/* each run's rows point at its own frame: the writers' handles
	 * collided (all counted from the same file), their rows did not */
	ck_rows(db, "0", "SELECT count(*) FROM compiles c JOIN frames f ON f.id = c.frame_id WHERE f.run_id != c.run_id");
	/* and the counters reached the right rows: compile i's break has i
	 * hits, each frame the last totals */
	ck_rows(db, "0", "SELECT count(*) FROM graph_breaks b JOIN compiles c ON c.id = b.compile_id"
			 " WHERE b.hits != c.compile_index OR b.run_id != c.run_id");
	expect = xfmt("%d|%d|%d", NWRITERS, NCOMPILES, NCOMPILES - 1);
	ck_rows(db, expect, "SELECT count(*), min(calls), max(cache_hits) FROM frames");
	free(expect);
	ck_rows(db, "", "PRAGMA foreign_key_check");
	sqlite3_close(db);
}
END_TEST

/* Runs fn with stderr going to a file, and returns what it printed. */
static char *capture_stderr(void (*fn)(void *), void *arg)
{
	char path[400];
	snprintf(path, sizeof path, "%s/stderr", tmpdir);
	fflush(stderr);
	int saved = dup(2);
	int fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0644);
	ck_assert_int_ge(fd, 0);
	dup2(fd, 2);
	fn(arg);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	char *out = calloc(1, 4096);
	ck_assert_int_ge(pread(fd, out, 4095, 0), 0);
	close(fd);
	return out;
}

struct failing {
	struct db_writer *w;
	int64_t run, frame, compile, again;
};

static void log_after_drop(void *arg)
{
	struct failing *s = arg;
	struct db_compile c = compile_first(s->frame);
	s->compile = db_log_compile(s->w, &c, NULL); /* its graph's nodes have no table: fails */
	c.compile_id = "0/1";
	s->again = db_log_compile(s->w, &c, NULL);
	db_frame_counts(s->w, s->frame, &(struct db_frame_counts){1, 1, 1, 0, 0, NULL});
	db_log_frame(s->w, &frame1);
	db_end_run(s->w, 0);
}

START_TEST(test_failure_degrades)
{
	struct failing s = {.w = must_open()};
	s.run = db_begin_run(s.w, &run1);
	s.frame = db_log_frame(s.w, &frame0);
	struct db_compile ok = compile_recompile(s.frame);
	int64_t first = db_log_compile(s.w, &ok, NULL);
	db_flush(s.w);
	sqlite3 *db = open_plain();
	ck_assert_int_eq(sqlite3_exec(db, "DROP TABLE nodes", NULL, NULL, NULL), SQLITE_OK);
	char *err = capture_stderr(log_after_drop, &s);
	char *expect = NULL;
	expect = xfmt("tjit: database: %s: cannot log compile 0/0: no such table: nodes\n",
				  dbpath);
	ck_assert_str_eq(err, expect); /* once */
	expect[strlen(expect) - 1] = '\0';
	ck_assert_str_eq(db_error(s.w), expect + strlen("tjit: database: "));
	free(expect);
	free(err);
	/* ids go on, fresh */
	ck_assert_int_gt(s.compile, first);
	ck_assert_int_gt(s.again, s.compile);
	db_close(s.w);
	/* the failed compile left no row behind; the run looks unfinished */
	ck_rows(db, "0/1", "SELECT label FROM compiles");
	ck_assert_int_eq(count_of(db, "guards"), 0);
	ck_assert_int_eq(count_of(db, "graphs"), 0);
	ck_rows(db, "NULL|0", "SELECT ended_at, (SELECT calls FROM frames) FROM runs");
	sqlite3_close(db);
}
END_TEST

static void log_frame_first(void *arg)
{
	struct db_writer *w = arg;
	db_log_frame(w, &frame0);
	db_log_frame(w, &frame1);
}

START_TEST(test_misuse_degrades)
{
	struct db_writer *w = must_open();
	char *err = capture_stderr(log_frame_first, w);
	char *expect = NULL;
	expect = xfmt("tjit: database: %s: cannot log a frame: no run begun (db_begin_run)\n",
				  dbpath);
	ck_assert_str_eq(err, expect);
	free(expect);
	free(err);
	db_close(w);
}
END_TEST

START_TEST(test_forked_child_is_null)
{
	struct db_writer *w = must_open();
	db_begin_run(w, &run1);
	int64_t f = db_log_frame(w, &frame0);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct db_compile c = compile_first(f);
		int64_t id = db_log_compile(w, &c, NULL); /* never reaches the parent's connection */
		db_end_run(w, 7);
		int bad = id <= 0 || db_error(w) != NULL;
		db_close(w);
		_exit(bad);
	}
	int status = 0;
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	struct db_compile c = compile_recompile(f);
	db_log_compile(w, &c, NULL);
	db_end_run(w, 0);
	ck_assert_ptr_null(db_error(w));
	db_close(w);
	sqlite3 *db = open_plain();
	ck_rows(db, "0/1", "SELECT label FROM compiles");
	ck_rows(db, "0", "SELECT exit_status FROM runs");
	sqlite3_close(db);
}
END_TEST

/* fork() while the parent's thread writes: the child has a null writer of
 * its own, and can open a new writer on the same file (no lock of SQLite's
 * held by the parent's thread came along). */
START_TEST(test_fork_while_writing)
{
	struct db_writer *w = must_open();
	log_run(w, 50); /* queued: the thread is busy with them */
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		char id[32];
		struct db_compile c = compile_big(1, 99, id);
		bool bad = db_log_compile(w, &c, NULL) <= 0;
		db_flush(w); /* returns at once */
		db_close(w);
		char *err = NULL;
		struct db_writer *mine = db_open_writer(dbpath, &err);
		if (!mine)
			_exit(2);
		log_run(mine, 2);
		db_end_run(mine, 5);
		bad |= db_error(mine) != NULL;
		db_close(mine);
		_exit(bad);
	}
	int status = 0;
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child: status %#x", status);
	db_end_run(w, 0);
	ck_assert_ptr_null(db_error(w));
	db_close(w);
	sqlite3 *db = open_plain();
	ck_rows(db, "0|50\n5|2", "SELECT r.exit_status, count(c.id) FROM runs r JOIN compiles c ON c.run_id = r.id"
				  " GROUP BY r.id ORDER BY r.exit_status");
	ck_rows(db, "0", "SELECT count(*) FROM compiles WHERE label = '0/99'");
	sqlite3_close(db);
}
END_TEST

/* The tools' queries: each must find its rows through an index. */
static const char *const tool_queries[] = {
	"SELECT * FROM runs WHERE id = 1",
	"SELECT * FROM frames WHERE run_id = 1 ORDER BY frame_index",
	"SELECT * FROM compiles WHERE run_id = 1 ORDER BY frame_id",
	"SELECT * FROM compiles WHERE frame_id = 1 ORDER BY compile_index",
	"SELECT reason, count(*), sum(trace_ms), sum(guard_ms), sum(backend_ms), sum(total_ms)"
	" FROM compiles WHERE run_id = 1 GROUP BY reason",
	"SELECT * FROM compiles WHERE run_id = 1 AND label = '0/1'",
	"SELECT * FROM guards WHERE compile_id = 1 ORDER BY idx",
	"SELECT * FROM guard_failures WHERE run_id = 1",
	"SELECT * FROM guard_failures WHERE compile_id = 1",
	"SELECT code, file, line, count(*), sum(hits) FROM graph_breaks WHERE run_id = 1 GROUP BY code, file, line",
	"SELECT * FROM graph_breaks WHERE run_id = 1 AND code = 'TJB001'",
	"SELECT * FROM graph_breaks WHERE compile_id = 1",
	"SELECT * FROM graphs WHERE compile_id = 1",
	"SELECT * FROM nodes WHERE graph_id = 1 ORDER BY idx",
	"SELECT * FROM kernels WHERE graph_id = 1 ORDER BY idx",
	"SELECT * FROM minify_sessions WHERE run_id = 1",
	"SELECT * FROM minify_steps WHERE session_id = 1 ORDER BY id",
	"SELECT s.text FROM runs r JOIN sources s ON s.hash = r.source_hash WHERE r.id = 1",
	"SELECT c.label, f.function, g.guard_text, g.value_seen FROM guard_failures g"
	" JOIN compiles c ON c.id = g.compile_id JOIN frames f ON f.id = c.frame_id WHERE g.run_id = 1",
	"SELECT f.frame_index, c.compile_index, gr.stage, count(n.id) FROM compiles c"
	" JOIN frames f ON f.id = c.frame_id JOIN graphs gr ON gr.compile_id = c.id"
	" JOIN nodes n ON n.graph_id = gr.id WHERE c.run_id = 1 GROUP BY gr.id",
};

START_TEST(test_query_plans)
{
	struct db_writer *w = must_open();
	log_run(w, 20);
	db_close(w);
	sqlite3 *db = open_plain();
	for (size_t i = 0; i < sizeof tool_queries / sizeof tool_queries[0]; i++) {
		char *plan = rows(db, "EXPLAIN QUERY PLAN %s", tool_queries[i]);
		ck_assert_msg(!strstr(plan, "SCAN"), "%s\nscans:\n%s", tool_queries[i], plan);
		free(plan);
	}
	sqlite3_close(db);
}
END_TEST

static Suite *db_suite(void)
{
	Suite *s = suite_create("db");
	TCase *tc = tcase_create("writer");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_every_column);
	tcase_add_test(tc, test_version_wal_reopen);
	tcase_add_test(tc, test_newer_refused);
	tcase_add_test(tc, test_foreign_refused);
	tcase_add_test(tc, test_empty_file_created);
	tcase_add_test(tc, test_migrate_from_1);
	tcase_add_test(tc, test_migrate_from_2);
	tcase_add_test(tc, test_migrate_from_3);
	tcase_add_test(tc, test_migration_all_or_nothing);
	tcase_add_test(tc, test_foreign_with_version_refused);
	tcase_add_test(tc, test_schema_documented);
	tcase_add_test(tc, test_null_writer);
	tcase_add_test(tc, test_default_path);
	tcase_add_test(tc, test_hash);
	tcase_add_test(tc, test_counters_batched);
	tcase_add_test(tc, test_killed_run);
	tcase_add_test(tc, test_crashed_run);
	tcase_add_test(tc, test_exited_run);
	tcase_add_test(tc, test_queue_returns_at_once);
	tcase_add_test(tc, test_concurrent_writers);
	tcase_add_test(tc, test_failure_degrades);
	tcase_add_test(tc, test_misuse_degrades);
	tcase_add_test(tc, test_forked_child_is_null);
	tcase_add_test(tc, test_fork_while_writing);
	tcase_add_test(tc, test_query_plans);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(db_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
