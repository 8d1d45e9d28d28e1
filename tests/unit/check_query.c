/* check_query.c - the tools' read queries (db/query.h) on databases
 * written through the writer (db/db.h): opening (missing, foreign, newer
 * files, paths that a URI would misread), RUN specs and their messages,
 * every row type read back, the guard failures' order, the run a process
 * logged, and the plan of every statement (no SCAN of a table but the
 * runs count of an error message). */
#define _GNU_SOURCE
#include <check.h>
#include <dirent.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "db.h"
#include "query.h"

/* --- fixture: a fresh temporary directory per test --- */
#define DB_TEST_NAME "check_query"
#include "db_test_util.h"

/* --- writing runs through the writer --- */

static struct db_writer *must_open(const char *path)
{
	char *err = NULL;
	struct db_writer *w = db_open_writer(path, &err);
	ck_assert_msg(w != NULL, "db_open_writer: %s", err ? err : "?");
	return w;
}

static int64_t begin(struct db_writer *w, const char *tool, const char *text)
{
	struct db_run run = {
		.tool = tool,
		.command = "tjit run prog.tj",
		.program = "prog.tj",
		.source_text = text,
		.backend = NULL,
		.config = "fullgraph=0 cache_size_limit=8 eager=0",
	};
	return db_begin_run(w, &run);
}

static const char prog_text[] = "def f(x, n):\n"
				"    y = x * n\n"
				"    print(y)\n"
				"    return y\n";

/* compile F/N of frame (handle) fr: guards on n, a failure per older
 * entry, a print break at line 3 */
static int64_t log_compile(struct db_writer *w, int64_t fr, int frame_index, int n, bool brk, int64_t *break_id)
{
	char label[32], text[64], fl[16][32], ft[16][64], fv[16][16];
	snprintf(label, sizeof label, "%d/%d", frame_index, n);
	snprintf(text, sizeof text, "L['n'] == %d", n);
	struct db_guard guards[] = {
		{"backend", "backend == 'eager'", NULL, 0, 0},
		{"tensor_match", "L['x'].shape == (2,)", "prog.tj", 2, 9},
		{"equals", text, "prog.tj", 2, 13},
	};
	struct db_guard_failure failures[16];
	int nf = 0;
	for (int k = n - 1; k >= 0 && nf < 16; k--, nf++) {
		snprintf(fl[nf], sizeof fl[nf], "%d/%d", frame_index, k);
		snprintf(ft[nf], sizeof ft[nf], "L['n'] == %d", k);
		snprintf(fv[nf], sizeof fv[nf], "%d", n);
		failures[nf] = (struct db_guard_failure){fl[nf], ft[nf], fv[nf]};
	}
	struct db_break b = {"TJB001", "side_effect", "call to print (side effect)", "prog.tj", 3, 5, 6,
			     "prog.tj:3 in f"};
	struct db_compile c = {
		.frame_id = fr,
		.compile_id = label,
		.compile_index = n,
		.reason = n ? "recompile" : "first",
		.backend = "eager",
		.dynamic = "None",
		.trace_ms = 1.0,
		.guard_ms = 0.25,
		.backend_ms = 0.5,
		.total_ms = 2.0,
		.outcome = brk ? "graph_break" : "ok",
		.op_count = 2,
		.nguards = 3,
		.guards = guards,
		.nfailures = nf,
		.failures = failures,
		.nbreaks = brk ? 1 : 0,
		.breaks = brk ? &b : NULL,
	};
	return db_log_compile(w, &c, break_id);
}

/* three runs: 1 and 3 by tjit run with 3 compiles of f (2 recompiles) and
 * a break hit; 2 by tjit explain with nothing compiled */
static void three_runs(void)
{
	struct db_writer *w = must_open(dbpath);
	for (int r = 1; r <= 3; r++) {
		begin(w, r == 2 ? "tjit explain" : "tjit run", prog_text);
		if (r != 2) {
			struct db_frame f = {0, "f", "prog.tj", 1, 0, 0};
			int64_t fr = db_log_frame(w, &f);
			struct db_frame g = {1, "f", "prog.tj", 1, 7, 3};
			int64_t gr = db_log_frame(w, &g);
			int64_t b0 = 0, b1 = 0;
			log_compile(w, fr, 0, 0, true, &b0);
			log_compile(w, fr, 0, 1, true, &b1);
			log_compile(w, fr, 0, 2, false, NULL);
			log_compile(w, gr, 1, 0, false, NULL);
			db_break_hits(w, b0, 4);
			db_break_hits(w, b1, 3);
			db_frame_counts(w, fr, &(struct db_frame_counts){10, 7, 0, 0, 0, NULL});
			db_frame_counts(w, gr, &(struct db_frame_counts){7, 6, 2, 0, 0, "cache_limit"});
		}
		db_end_run(w, r == 3 ? 1 : 0);
	}
	db_close(w);
}

static struct dbq *must_query(const char *path)
{
	char *err = NULL;
	struct dbq *q = dbq_open(path, &err);
	ck_assert_msg(q != NULL, "dbq_open: %s", err ? err : "?");
	ck_assert_ptr_null(err);
	return q;
}

static void ck_open_fails(const char *path, const char *want)
{
	char *err = NULL;
	struct dbq *q = dbq_open(path, &err);
	ck_assert_ptr_null(q);
	ck_assert_ptr_nonnull(err);
	ck_assert_str_eq(err, want);
	free(err);
}

/* --- tests --- */

START_TEST(test_open_refusals)
{
	char want[700], path[400];
	snprintf(path, sizeof path, "%s/none.db", tmpdir);
	snprintf(want, sizeof want, "no database at '%s'", path);
	ck_open_fails(path, want);
	snprintf(path, sizeof path, "%s/no/such/dir.db", tmpdir);
	snprintf(want, sizeof want, "no database at '%s'", path);
	ck_open_fails(path, want);

	snprintf(path, sizeof path, "%s/text.db", tmpdir);
	FILE *f = fopen(path, "w");
	fputs("this is not a database, only some text that is long enough to have a header\n", f);
	fclose(f);
	snprintf(want, sizeof want, "'%s' is not a tjit database", path);
	ck_open_fails(path, want);

	/* an empty file is an empty database: what a run killed before it
	 * wrote its tables leaves */
	snprintf(path, sizeof path, "%s/empty.db", tmpdir);
	fclose(fopen(path, "w"));
	snprintf(want, sizeof want, "no run in '%s' (an empty database)", path);
	ck_open_fails(path, want);

	/* an SQLite file of something else */
	snprintf(path, sizeof path, "%s/other.db", tmpdir);
	sqlite3 *db = NULL;
	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(db, "CREATE TABLE t(x)", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	snprintf(want, sizeof want, "'%s' is not a tjit database", path);
	ck_open_fails(path, want);

	/* a newer tjit's file */
	snprintf(path, sizeof path, "%s/newer.db", tmpdir);
	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(db, "CREATE TABLE runs(id); PRAGMA user_version = 99", NULL, NULL, NULL),
			 SQLITE_OK);
	sqlite3_close(db);
	snprintf(want, sizeof want,
		 "database %s has schema version 99, this tjit understands up to %d:"
		 " it needs a tjit that understands version 99",
		 path, DB_SCHEMA_VERSION);
	ck_open_fails(path, want);

	snprintf(want, sizeof want, "cannot open '%s': Is a directory", tmpdir);
	ck_open_fails(tmpdir, want);
}
END_TEST

START_TEST(test_resolve_run)
{
	three_runs();
	struct dbq *q = must_query(dbpath);
	struct {
		const char *spec;
		int64_t id;
	} good[] = {{"1", 1}, {"2", 2}, {"3", 3}, {"latest", 3}, {"latest~0", 3}, {"latest~1", 2}, {"latest~2", 1},
		    {"003", 3}};
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		int64_t id = -1;
		char *err = NULL;
		ck_assert_msg(dbq_resolve_run(q, good[i].spec, &id, &err) == 0, "%s: %s", good[i].spec,
			      err ? err : "?");
		ck_assert_int_eq(id, good[i].id);
		ck_assert(dbq_run_spec_ok(good[i].spec));
	}
	char want[700];
	const char *missing[] = {"latest~3", "latest~99999", "4", "12345678901"};
	for (size_t i = 0; i < sizeof missing / sizeof missing[0]; i++) {
		int64_t id = -1;
		char *err = NULL;
		ck_assert_int_eq(dbq_resolve_run(q, missing[i], &id, &err), -1);
		snprintf(want, sizeof want, "no run '%s' in %s (it has 3 runs)", missing[i], dbpath);
		ck_assert_str_eq(err, want);
		free(err);
		ck_assert(dbq_run_spec_ok(missing[i])); /* well-formed: not there, not bad usage */
	}
	const char *bad[] = {"0", "-1", "abc", "latest~", "latest~-1", "latest~x", "1x", "", "latest1", "~1",
			     "99999999999999999999", " 1"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		int64_t id = -1;
		char *err = NULL;
		ck_assert_int_eq(dbq_resolve_run(q, bad[i], &id, &err), -1);
		snprintf(want, sizeof want, "bad run '%s': expected a run id, latest or latest~N", bad[i]);
		ck_assert_str_eq(err, want);
		free(err);
		ck_assert_msg(!dbq_run_spec_ok(bad[i]), "%s", bad[i]);
	}
	dbq_close(q);
}
END_TEST

START_TEST(test_no_runs)
{
	db_close(must_open(dbpath));
	struct dbq *q = must_query(dbpath);
	int64_t id = -1;
	char *err = NULL, want[600];
	ck_assert_int_eq(dbq_resolve_run(q, "latest", &id, &err), -1);
	snprintf(want, sizeof want, "no run 'latest' in %s (it has no runs)", dbpath);
	ck_assert_str_eq(err, want);
	free(err);
	dbq_close(q);
	/* one run: singular */
	struct db_writer *w = must_open(dbpath);
	begin(w, "tjit run", NULL);
	db_end_run(w, 0);
	db_close(w);
	q = must_query(dbpath);
	ck_assert_int_eq(dbq_resolve_run(q, "2", &id, &err), -1);
	snprintf(want, sizeof want, "no run '2' in %s (it has 1 run)", dbpath);
	ck_assert_str_eq(err, want);
	free(err);
	dbq_close(q);
}
END_TEST

START_TEST(test_run_row)
{
	three_runs();
	struct dbq *q = must_query(dbpath);
	ck_assert_str_eq(dbq_path(q), dbpath);
	struct dbq_run r;
	char *err = NULL;
	ck_assert_int_eq(dbq_run_get(q, 3, &r, &err), 0);
	ck_assert_int_eq(r.id, 3);
	ck_assert_str_eq(r.tool, "tjit run");
	ck_assert_str_eq(r.command, "tjit run prog.tj");
	ck_assert_str_eq(r.program, "prog.tj");
	ck_assert_ptr_null(r.backend);
	ck_assert_str_eq(r.config, "fullgraph=0 cache_size_limit=8 eager=0");
	ck_assert_int_eq(r.pid, getpid());
	ck_assert(r.finished);
	ck_assert(r.ended_at >= r.started_at && r.started_at > 0);
	ck_assert_int_eq(r.exit_status, 1);
	ck_assert_str_eq(r.source_text, prog_text);
	dbq_run_release(&r);
	ck_assert_int_eq(dbq_run_get(q, 9, &r, &err), -1);
	char want[600];
	snprintf(want, sizeof want, "no run 9 in %s", dbpath);
	ck_assert_str_eq(err, want);
	free(err);
	dbq_close(q);
}
END_TEST

START_TEST(test_frames)
{
	three_runs();
	struct dbq *q = must_query(dbpath);
	struct dbq_frame *f = NULL;
	int n = 0;
	char *err = NULL;
	ck_assert_int_eq(dbq_frames(q, 3, &f, &n, &err), 0);
	ck_assert_int_eq(n, 2);
	ck_assert_int_eq(f[0].frame_index, 0);
	ck_assert_str_eq(f[0].function, "f");
	ck_assert_str_eq(f[0].file, "prog.tj");
	ck_assert_int_eq(f[0].line, 1);
	ck_assert_int_eq(f[0].resume_pc, 0);
	ck_assert_int_eq(f[0].calls, 10);
	ck_assert_int_eq(f[0].cache_hits, 7);
	ck_assert_int_eq(f[0].eager_calls, 0);
	ck_assert_ptr_null(f[0].eager_reason);
	ck_assert_int_eq(f[0].compiles, 3);
	ck_assert_int_eq(f[0].recompiles, 2);
	ck_assert_int_eq(f[0].entries, 3);
	ck_assert_int_eq(f[0].graphs, 3);
	ck_assert_int_eq(f[0].ops, 6);
	ck_assert(f[0].total_ms == 6.0 && f[0].trace_ms == 3.0 && f[0].guard_ms == 0.75 && f[0].backend_ms == 1.5);
	ck_assert_int_eq(f[1].frame_index, 1);
	ck_assert_int_eq(f[1].resume_pc, 7);
	ck_assert_int_eq(f[1].resume_line, 3);
	ck_assert_int_eq(f[1].eager_calls, 2);
	ck_assert_str_eq(f[1].eager_reason, "cache_limit");
	ck_assert_int_eq(f[1].compiles, 1);
	dbq_frames_free(f, n);
	/* a run without frames */
	ck_assert_int_eq(dbq_frames(q, 2, &f, &n, &err), 0);
	ck_assert_int_eq(n, 0);
	dbq_frames_free(f, n);
	dbq_close(q);
}
END_TEST

START_TEST(test_breaks)
{
	three_runs();
	struct dbq *q = must_query(dbpath);
	struct dbq_break *b = NULL;
	int n = 0;
	ck_assert_int_eq(dbq_breaks(q, 1, &b, &n, NULL), 0);
	ck_assert_int_eq(n, 1); /* two breaks at one place */
	ck_assert_str_eq(b[0].code, "TJB001");
	ck_assert_str_eq(b[0].category, "side_effect");
	ck_assert_str_eq(b[0].message, "call to print (side effect)");
	ck_assert_str_eq(b[0].file, "prog.tj");
	ck_assert_int_eq(b[0].line, 3);
	ck_assert_int_eq(b[0].col, 5);
	ck_assert_str_eq(b[0].user_stack, "prog.tj:3 in f");
	ck_assert_int_eq(b[0].compiles, 2);
	ck_assert_int_eq(b[0].hits, 7);
	dbq_breaks_free(b, n);
	ck_assert_int_eq(dbq_breaks(q, 2, &b, &n, NULL), 0);
	ck_assert_int_eq(n, 0);
	dbq_breaks_free(b, n);
	dbq_close(q);
}
END_TEST

/* breaks ranked by hits; an inlined callee's break (a two-line stack)
 * does not count again the runs its own frame's break counts */
START_TEST(test_break_ranking)
{
	struct db_writer *w = must_open(dbpath);
	begin(w, "tjit run", prog_text);
	struct db_frame f = {0, "f", "prog.tj", 1, 0, 0};
	int64_t fr = db_log_frame(w, &f);
	struct db_break brk[] = {
		{"TJB004", "data_dependent", "branch", "prog.tj", 9, 5, 1, "prog.tj:9 in f"},
		{"TJB001", "side_effect", "print", "prog.tj", 3, 5, 2, "prog.tj:8 in f\nprog.tj:3 in show"},
		{"TJB001", "side_effect", "print", "prog.tj", 3, 5, 2, "prog.tj:3 in show"},
		{"TJB003", "opaque", "ext", "prog.tj", 4, 5, 3, "prog.tj:4 in f"},
	};
	int64_t hits[] = {5, 100, 6, 5};
	for (int i = 0; i < 4; i++) {
		char label[16];
		snprintf(label, sizeof label, "0/%d", i);
		struct db_compile c = {.frame_id = fr, .compile_id = label, .compile_index = i, .reason = "first",
				       .backend = "eager", .outcome = "graph_break", .nbreaks = 1, .breaks = &brk[i]};
		int64_t id = 0;
		db_log_compile(w, &c, &id);
		db_break_hits(w, id, hits[i]);
	}
	db_end_run(w, 0);
	db_close(w);
	struct dbq *q = must_query(dbpath);
	struct dbq_break *b = NULL;
	int n = 0;
	ck_assert_int_eq(dbq_breaks(q, 1, &b, &n, NULL), 0);
	ck_assert_int_eq(n, 3);
	ck_assert_str_eq(b[0].code, "TJB001");
	ck_assert_int_eq(b[0].hits, 6);
	ck_assert_int_eq(b[0].compiles, 2);
	ck_assert_str_eq(b[0].user_stack, "prog.tj:8 in f\nprog.tj:3 in show"); /* the first break's */
	/* equal hits: more compiles first, then by place */
	ck_assert_str_eq(b[1].code, "TJB003");
	ck_assert_int_eq(b[1].line, 4);
	ck_assert_str_eq(b[2].code, "TJB004");
	dbq_breaks_free(b, n);
	dbq_close(q);
}
END_TEST

struct seen {
	char text[4096];
	int n, stop_at;
};

static int on_failure(void *ctx, const struct dbq_failure *f)
{
	struct seen *s = ctx;
	size_t len = strlen(s->text);
	snprintf(s->text + len, sizeof s->text - len, "%s %s %s|", f->failed_label, f->guard_text, f->value_seen);
	s->n++;
	return s->n == s->stop_at ? 42 : 0;
}

START_TEST(test_failures)
{
	three_runs();
	struct dbq *q = must_query(dbpath);
	struct seen s = {{0}, 0, 0};
	char *err = NULL;
	ck_assert_int_eq(dbq_each_failure(q, 3, on_failure, &s, &err), 0);
	/* by compile, newest entry first within each */
	ck_assert_str_eq(s.text, "0/0 L['n'] == 0 1|0/1 L['n'] == 1 2|0/0 L['n'] == 0 2|");
	struct seen stop = {{0}, 0, 2};
	ck_assert_int_eq(dbq_each_failure(q, 3, on_failure, &stop, &err), 42);
	ck_assert_int_eq(stop.n, 2);
	struct seen none = {{0}, 0, 0};
	ck_assert_int_eq(dbq_each_failure(q, 2, on_failure, &none, &err), 0);
	ck_assert_int_eq(none.n, 0);
	dbq_close(q);
}
END_TEST

START_TEST(test_guards)
{
	three_runs();
	struct dbq *q = must_query(dbpath);
	struct dbq_guard *g = NULL;
	int n = 0;
	ck_assert_int_eq(dbq_guards(q, 3, "0/1", &g, &n, NULL), 0);
	ck_assert_int_eq(n, 3);
	ck_assert_int_eq(g[0].idx, 0);
	ck_assert_str_eq(g[0].kind, "backend");
	ck_assert_ptr_null(g[0].file);
	ck_assert_str_eq(g[2].text, "L['n'] == 1");
	ck_assert_str_eq(g[2].file, "prog.tj");
	ck_assert_int_eq(g[2].line, 2);
	ck_assert_int_eq(g[2].col, 13);
	dbq_guards_free(g, n);
	const char *none[] = {"0/9", "5/0", "x", "0/", "/1", "0/1x", "-1/0"};
	for (size_t i = 0; i < sizeof none / sizeof none[0]; i++) {
		ck_assert_int_eq(dbq_guards(q, 3, none[i], &g, &n, NULL), 0);
		ck_assert_int_eq(n, 0);
		dbq_guards_free(g, n);
	}
	dbq_close(q);
}
END_TEST

/* runs paged newest first with their counters; a run's compiles in order,
 * paged; a compile by label; its graph, the break, the nodes */
/* the phases a backend timed, summed over a run: the direct children of
 * each compile's "backend" phase only, in the order first logged */
START_TEST(test_backend_phases)
{
	struct db_writer *w = must_open(dbpath);
	begin(w, "tjit run", prog_text);
	struct db_frame f = {0, "f", "prog.tj", 1, 0, 0};
	int64_t fr = db_log_frame(w, &f);
	struct db_phase p0[] = {
		{"trace", -1, 1}, {"guards", -1, 0.5}, {"backend", -1, 4}, {"decompose", 2, 1.25},
		{"joint", 2, 2}, {"inner", 4, 0.5}, {"decompose", -1, 9},
	};
	struct db_phase p1[] = {{"trace", -1, 1}, {"backend", -1, 1}, {"decompose", 1, 0.5}};
	struct db_compile c = {.frame_id = fr, .compile_id = "0/0", .reason = "first", .backend = "aot_eager",
			       .dynamic = "None", .outcome = "ok", .nphases = 7, .phases = p0};
	db_log_compile(w, &c, NULL);
	c.compile_id = "0/1";
	c.compile_index = 1;
	c.nphases = 3;
	c.phases = p1;
	db_log_compile(w, &c, NULL);
	db_end_run(w, 0);
	begin(w, "tjit run", prog_text); /* another run: none */
	db_end_run(w, 0);
	db_close(w);

	struct dbq *q = must_query(dbpath);
	char *err = NULL;
	struct dbq_phase *ph = NULL;
	int n = 0;
	ck_assert_int_eq(dbq_backend_phases(q, 1, &ph, &n, &err), 0);
	ck_assert_int_eq(n, 2);
	ck_assert_str_eq(ph[0].name, "decompose");
	ck_assert_double_eq(ph[0].ms, 1.75);
	ck_assert_int_eq(ph[0].compiles, 2);
	ck_assert_str_eq(ph[1].name, "joint");
	ck_assert_double_eq(ph[1].ms, 2);
	ck_assert_int_eq(ph[1].compiles, 1);
	dbq_phases_free(ph, n);
	ck_assert_int_eq(dbq_backend_phases(q, 2, &ph, &n, &err), 0);
	ck_assert_int_eq(n, 0);
	dbq_phases_free(ph, n);
	/* one compile's, in the order they began */
	struct dbq_compile c0;
	ck_assert_int_eq(dbq_compile_get(q, 1, "0/0", &c0, &err), 0);
	ck_assert_int_eq(dbq_compile_backend_phases(q, c0.id, &ph, &n, &err), 0);
	ck_assert_int_eq(n, 2);
	ck_assert_str_eq(ph[0].name, "decompose");
	ck_assert_double_eq(ph[0].ms, 1.25);
	ck_assert_str_eq(ph[1].name, "joint");
	dbq_phases_free(ph, n);
	dbq_compile_release(&c0);
	dbq_close(q);
}
END_TEST

/* a compile's saved tensors, and whether it has a partition at all */
START_TEST(test_saved)
{
	struct db_writer *w = must_open(dbpath);
	begin(w, "tjit run", prog_text);
	struct db_frame f = {0, "f", "prog.tj", 1, 0, 0};
	int64_t fr = db_log_frame(w, &f);
	struct db_node nodes[] = {
		{"x", "input", NULL, "L['x']", "float32", "[2]", NULL, 0, 0, NULL},
		{"sin", "op", "sin", "x", "float32", "[2]", "prog.tj", 2, 9, NULL},
		{"output", "output", NULL, "sin, x", NULL, NULL, NULL, 0, 0, NULL},
	};
	struct db_graph g[] = {
		{"captured", "f", 1, "graph", 3, nodes, 0, NULL},
		{"aot_forward", "f", 1, "graph", 3, nodes, 0, NULL},
	};
	struct db_saved saved[] = {{0, "x", "float32", "[2]", 8}};
	struct db_compile c = {.frame_id = fr, .compile_id = "0/0", .reason = "first", .backend = "aot_eager",
			       .dynamic = "None", .outcome = "ok", .op_count = 1, .ngraphs = 2, .graphs = g,
			       .partitioned = 1, .saved_graph = 1, .saved_bytes = 8, .nsaved = 1, .saved = saved};
	int64_t c0 = db_log_compile(w, &c, NULL);
	c.compile_id = "0/1";
	c.compile_index = 1;
	c.partitioned = 0;
	c.nsaved = 0;
	int64_t c1 = db_log_compile(w, &c, NULL);
	db_end_run(w, 0);
	db_close(w);

	struct dbq *q = must_query(dbpath);
	char *err = NULL;
	struct dbq_compile dc;
	ck_assert_int_eq(dbq_compile_get(q, 1, "0/0", &dc, &err), 0);
	ck_assert(dc.partitioned);
	ck_assert_int_eq(dc.saved_bytes, 8);
	dbq_compile_release(&dc);
	ck_assert_int_eq(dbq_compile_get(q, 1, "0/1", &dc, &err), 0);
	ck_assert(!dc.partitioned);
	dbq_compile_release(&dc);
	struct dbq_saved *s = NULL;
	int n = 0;
	ck_assert_int_eq(dbq_saved(q, c0, &s, &n, &err), 0);
	ck_assert_int_eq(n, 1);
	ck_assert_str_eq(s[0].name, "x");
	ck_assert_str_eq(s[0].shape, "[2]");
	ck_assert_int_eq(s[0].node, 0);
	ck_assert_int_eq(s[0].bytes, 8);
	struct dbq_graph fwd;
	ck_assert_int_eq(dbq_graph_get(q, s[0].graph_id, &fwd, &err), 0);
	ck_assert_str_eq(fwd.stage, "aot_forward");
	dbq_graph_release(&fwd);
	dbq_saved_free(s, n);
	ck_assert_int_eq(dbq_saved(q, c1, &s, &n, &err), 0);
	ck_assert_int_eq(n, 0);
	dbq_saved_free(s, n);
	dbq_close(q);
}
END_TEST

/* a compile's kernels by graph and launch order; a run's counts of kernels and cache hits */
START_TEST(test_kernels)
{
	struct db_writer *w = must_open(dbpath);
	begin(w, "tjit run", prog_text);
	struct db_frame f = {0, "f", "prog.tj", 1, 0, 0};
	int64_t fr = db_log_frame(w, &f);
	struct db_node nodes[] = {
		{"x", "input", NULL, "L['x']", "float32", "[2]", NULL, 0, 0, NULL},
		{"sin", "op", "sin", "x", "float32", "[2]", "prog.tj", 2, 9, NULL},
		{"sum_1", "op", "sum", "sin", "float32", "[]", "prog.tj", 2, 15, NULL},
		{"output", "output", NULL, "sum_1", NULL, NULL, NULL, 0, 0, NULL},
	};
	struct db_kernel ks[] = {
		{"k_1", "pointwise", "h1", "sin", "for i0 in 0..2", "define void @k_1()", 0, 2.5},
		{"k_2", "reduction", "h2", "sum_1", "for r0 in 0..2", NULL, 1, 0.25},
	};
	struct db_graph g[] = {
		{"captured", "f", 2, "graph", 4, nodes, 0, NULL},
		{"aot_forward", "f", 2, "graph", 4, nodes, 2, ks},
	};
	struct db_compile c = {.frame_id = fr, .compile_id = "0/0", .reason = "first", .backend = "inductor",
			       .dynamic = "None", .outcome = "ok", .op_count = 2, .ngraphs = 2, .graphs = g};
	int64_t c0 = db_log_compile(w, &c, NULL);
	c.compile_id = "0/1";
	c.compile_index = 1;
	g[1].nkernels = 0;
	int64_t c1 = db_log_compile(w, &c, NULL);
	db_end_run(w, 0);
	db_close(w);

	struct dbq *q = must_query(dbpath);
	char *err = NULL;
	struct dbq_kernel *k = NULL;
	int n = 0;
	ck_assert_int_eq(dbq_kernels(q, c0, &k, &n, &err), 0);
	ck_assert_int_eq(n, 2);
	ck_assert_str_eq(k[0].stage, "aot_forward");
	ck_assert_str_eq(k[0].name, "k_1");
	ck_assert_str_eq(k[0].kind, "pointwise");
	ck_assert_str_eq(k[0].fused_nodes, "sin");
	ck_assert_str_eq(k[0].loop_ir, "for i0 in 0..2");
	ck_assert_str_eq(k[0].llvm_ir, "define void @k_1()");
	ck_assert_int_eq(k[0].cache_hit, 0);
	ck_assert_int_eq(k[1].idx, 1);
	ck_assert_str_eq(k[1].hash, "h2");
	ck_assert_ptr_null(k[1].llvm_ir);
	ck_assert_int_eq(k[1].cache_hit, 1);
	ck_assert(k[1].codegen_ms == 0.25);
	dbq_kernels_free(k, n);
	ck_assert_int_eq(dbq_kernels(q, c1, &k, &n, &err), 0);
	ck_assert_int_eq(n, 0);
	dbq_kernels_free(k, n);
	int64_t all = -1, cached = -1;
	ck_assert_int_eq(dbq_kernel_counts(q, 1, &all, &cached, &err), 0);
	ck_assert_int_eq(all, 2);
	ck_assert_int_eq(cached, 1);
	ck_assert_int_eq(dbq_kernel_counts(q, 9, &all, &cached, &err), 0);
	ck_assert_int_eq(all, 0);
	ck_assert_int_eq(cached, 0);
	dbq_close(q);
}
END_TEST

START_TEST(test_browsing)
{
	three_runs();
	/* run 4: one compile with a captured graph of three nodes */
	struct db_writer *w = must_open(dbpath);
	begin(w, "tjit run", prog_text);
	struct db_frame f = {0, "f", "prog.tj", 1, 0, 0};
	int64_t fr = db_log_frame(w, &f);
	struct db_node nodes[] = {
		{"l_x_", "input", NULL, "L['x']", "float32", "[2]", NULL, 0, 0, NULL},
		{"mul", "op", "mul", "l_x_, 2", "float32", "[2]", "prog.tj", 2, 9, "prog.tj:2 in f"},
		{"output", "output", NULL, "(mul,)", NULL, NULL, NULL, 0, 0, NULL},
	};
	struct db_graph g = {"captured", "f", 1, "graph():\n    ...\n", 3, nodes, 0, NULL};
	struct db_break b = {"TJB001", "side_effect", "call to print (side effect)", "prog.tj", 3, 5, 6,
			     "prog.tj:3 in f"};
	struct db_compile c = {.frame_id = fr, .compile_id = "0/0", .reason = "first", .backend = "eager",
			       .dynamic = "None", .outcome = "graph_break", .op_count = 1, .nbreaks = 1,
			       .breaks = &b, .ngraphs = 1, .graphs = &g};
	db_log_compile(w, &c, NULL);
	db_end_run(w, 0);
	db_close(w);

	struct dbq *q = must_query(dbpath);
	char *err = NULL;
	struct dbq_run_row *rr = NULL;
	int n = 0;
	ck_assert_int_eq(dbq_runs_page(q, 0, 3, &rr, &n, &err), 0);
	ck_assert_int_eq(n, 3);
	ck_assert_int_eq(rr[0].id, 4);
	ck_assert_int_eq(rr[0].compiles, 1);
	ck_assert_int_eq(rr[0].graphs, 1);
	ck_assert_int_eq(rr[0].breaks, 1);
	ck_assert_int_eq(rr[1].id, 3);
	ck_assert_int_eq(rr[1].compiles, 4);
	ck_assert_int_eq(rr[1].graphs, 4);
	ck_assert_int_eq(rr[1].breaks, 2);
	ck_assert_int_eq(rr[1].recompiles, 2);
	ck_assert(rr[1].finished);
	ck_assert_int_eq(rr[1].exit_status, 1);
	ck_assert_str_eq(rr[2].tool, "tjit explain");
	int64_t next = rr[2].id;
	dbq_run_rows_free(rr, n);
	ck_assert_int_eq(dbq_runs_page(q, next, 3, &rr, &n, &err), 0);
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(rr[0].id, 1);
	dbq_run_rows_free(rr, n);

	struct dbq_compile *cs = NULL;
	ck_assert_int_eq(dbq_compiles(q, 3, 0, 2, &cs, &n, &err), 0);
	ck_assert_int_eq(n, 2);
	ck_assert_str_eq(cs[0].label, "0/0");
	ck_assert_str_eq(cs[1].label, "0/1");
	ck_assert_str_eq(cs[1].reason, "recompile");
	ck_assert_str_eq(cs[1].outcome, "graph_break");
	int64_t after = cs[1].id;
	dbq_compiles_free(cs, n);
	ck_assert_int_eq(dbq_compiles(q, 3, after, 0, &cs, &n, &err), 0);
	ck_assert_int_eq(n, 2);
	ck_assert_str_eq(cs[1].label, "1/0");
	ck_assert_int_eq(cs[1].resume_pc, 7);
	ck_assert_int_eq(cs[1].resume_line, 3);
	dbq_compiles_free(cs, n);

	struct dbq_compile one;
	ck_assert_int_eq(dbq_compile_get(q, 4, "0/0", &one, &err), 0);
	ck_assert_str_eq(one.function, "f");
	ck_assert_int_eq(one.op_count, 1);
	int64_t cid = one.id;
	dbq_compile_release(&one);
	ck_assert_int_eq(dbq_compile_get(q, 4, "0/9", &one, &err), -1);
	ck_assert_str_eq(err, "no compile 0/9 in run 4");
	free(err);
	ck_assert_int_eq(dbq_compile_get(q, 4, "x", &one, &err), -1);
	ck_assert_str_eq(err, "bad compile id 'x': expected F/N, as 0/1");
	free(err);
	ck_assert_int_eq(dbq_compile_get(q, 4, "0/ 0", &one, &err), -1);
	ck_assert_str_eq(err, "bad compile id '0/ 0': expected F/N, as 0/1");
	free(err);
	/* the spellings, before any database */
	const char *labels_ok[] = {"0/0", "12/345", "0/9", "2147483647/0"};
	for (size_t i = 0; i < sizeof labels_ok / sizeof labels_ok[0]; i++)
		ck_assert_msg(dbq_compile_label_ok(labels_ok[i]), "%s", labels_ok[i]);
	const char *labels_bad[] = {"x", "", "0", "0/", "/0", "0-0", "-1/0", "0/-0", "+1/0", "0/ 1", " 0/1",
				    "0/1x", "0/1/2", "2147483648/0", "99999999999/0"};
	for (size_t i = 0; i < sizeof labels_bad / sizeof labels_bad[0]; i++)
		ck_assert_msg(!dbq_compile_label_ok(labels_bad[i]), "%s", labels_bad[i]);
	int64_t row = -1;
	ck_assert(dbq_parse_id("1", &row) && row == 1);
	ck_assert(dbq_parse_id("0042", &row) && row == 42);
	const char *ids_bad[] = {"0", "-1", "+1", " 1", "1x", "", "abc", "99999999999999999999"};
	for (size_t i = 0; i < sizeof ids_bad / sizeof ids_bad[0]; i++)
		ck_assert_msg(!dbq_parse_id(ids_bad[i], &row), "%s", ids_bad[i]);

	struct dbq_graph *gs = NULL;
	ck_assert_int_eq(dbq_graphs_of(q, cid, &gs, &n, &err), 0);
	ck_assert_int_eq(n, 1);
	ck_assert_str_eq(gs[0].stage, "captured");
	ck_assert_str_eq(gs[0].label, "0/0");
	ck_assert_int_eq(gs[0].run_id, 4);
	ck_assert_str_eq(gs[0].break_code, "TJB001");
	ck_assert_str_eq(gs[0].break_file, "prog.tj");
	ck_assert_int_eq(gs[0].break_line, 3);
	int64_t gid = gs[0].id;
	dbq_graphs_free(gs, n);
	struct dbq_graph gr;
	ck_assert_int_eq(dbq_graph_get(q, gid, &gr, &err), 0);
	ck_assert_str_eq(gr.listing, "graph():\n    ...\n");
	ck_assert_int_eq(gr.op_count, 1);
	dbq_graph_release(&gr);
	ck_assert_int_eq(dbq_graph_get(q, gid + 100, &gr, &err), -1);
	ck_assert_ptr_nonnull(strstr(err, "no graph "));
	free(err);

	struct dbq_node *nd = NULL;
	ck_assert_int_eq(dbq_nodes(q, gid, &nd, &n, &err), 0);
	ck_assert_int_eq(n, 3);
	ck_assert_str_eq(nd[0].args, "L['x']");
	ck_assert_ptr_null(nd[0].op);
	ck_assert_ptr_null(nd[0].file);
	ck_assert_str_eq(nd[1].op, "mul");
	ck_assert_str_eq(nd[1].file, "prog.tj");
	ck_assert_int_eq(nd[1].col, 9);
	ck_assert_ptr_null(nd[2].shape);
	dbq_nodes_free(nd, n);
	dbq_close(q);
}
END_TEST

/* ---- tjit-tui: pages in both directions ---- */

/* 500 compiles of one frame in run 1, and run 2 of three_runs' shape */
static void many_compiles(int count)
{
	struct db_writer *w = must_open(dbpath);
	begin(w, "tjit run", prog_text);
	struct db_frame f = {0, "f", "prog.tj", 1, 0, 0};
	int64_t fr = db_log_frame(w, &f);
	struct db_frame g = {1, "g", "prog.tj", 5, 0, 0};
	db_log_frame(w, &g);
	for (int i = 0; i < count; i++) {
		char label[32];
		snprintf(label, sizeof label, "0/%d", i);
		struct db_compile c = {.frame_id = fr, .compile_id = label, .compile_index = i,
				       .reason = i ? "recompile" : "first", .backend = "eager", .outcome = "ok"};
		db_log_compile(w, &c, NULL);
	}
	db_end_run(w, 0);
	db_close(w);
}

START_TEST(test_tui_compile_pages)
{
	many_compiles(500);
	three_runs(); /* runs 2..4 */
	struct dbq *q = must_query(dbpath);
	struct dbq_compile *c = NULL;
	int n = 0;
	char *err = NULL;
	struct dbq_run_row *rr = NULL;
	ck_assert_int_eq(dbq_runs_after(q, 1, 2, &rr, &n, &err), 0);
	ck_assert_int_eq(n, 2);
	ck_assert_int_eq(rr[0].id, 2);
	ck_assert_int_eq(rr[1].id, 3);
	dbq_run_rows_free(rr, n);
	/* forward from the first, then on from the last of the page */
	ck_assert_int_eq(dbq_compiles_page(q, 1, INT64_MIN, 1, 200, &c, &n, &err), 0);
	ck_assert_int_eq(n, 200);
	ck_assert_str_eq(c[0].label, "0/0");
	ck_assert_str_eq(c[199].label, "0/199");
	int64_t last = c[199].id;
	dbq_compiles_free(c, n);
	ck_assert_int_eq(dbq_compiles_page(q, 1, last, 1, 200, &c, &n, &err), 0);
	ck_assert_str_eq(c[0].label, "0/200");
	dbq_compiles_free(c, n);
	/* backward from the last: descending, and only this run's */
	ck_assert_int_eq(dbq_compiles_page(q, 1, INT64_MAX, -1, 3, &c, &n, &err), 0);
	ck_assert_int_eq(n, 3);
	ck_assert_str_eq(c[0].label, "0/499");
	ck_assert_str_eq(c[2].label, "0/497");
	int64_t first = c[2].id;
	dbq_compiles_free(c, n);
	ck_assert_int_eq(dbq_compiles_page(q, 1, first, -1, 1000, &c, &n, &err), 0);
	ck_assert_int_eq(n, 497);
	ck_assert_str_eq(c[496].label, "0/0");
	dbq_compiles_free(c, n);
	/* by frame and compile index */
	struct dbq_frame *f = NULL;
	ck_assert_int_eq(dbq_frames_page(q, 1, INT64_MIN, 1, 10, &f, &n, &err), 0);
	ck_assert_int_eq(n, 2);
	ck_assert_int_eq(f[0].compiles, 500);
	ck_assert_int_eq(f[1].compiles, 0);
	ck_assert_str_eq(f[1].function, "g");
	int64_t fid = f[0].id;
	dbq_frames_free(f, n);
	ck_assert_int_eq(dbq_frames_page(q, 1, 1, -1, 10, &f, &n, &err), 0);
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(f[0].frame_index, 0);
	dbq_frames_free(f, n);
	ck_assert_int_eq(dbq_frame_compiles_page(q, fid, 10, 1, 2, &c, &n, &err), 0);
	ck_assert_int_eq(n, 2);
	ck_assert_str_eq(c[0].label, "0/11");
	dbq_compiles_free(c, n);
	ck_assert_int_eq(dbq_frame_compiles_page(q, fid, INT64_MAX, -1, 2, &c, &n, &err), 0);
	ck_assert_str_eq(c[0].label, "0/499");
	ck_assert_str_eq(c[1].label, "0/498");
	dbq_compiles_free(c, n);
	dbq_close(q);
}
END_TEST

START_TEST(test_tui_break_places)
{
	struct db_writer *w = must_open(dbpath);
	begin(w, "tjit run", prog_text);
	struct db_frame f = {0, "f", "prog.tj", 1, 0, 0};
	int64_t fr = db_log_frame(w, &f);
	struct db_break brk[] = {
		{"TJB004", "data_dependent", "branch", "prog.tj", 9, 5, 1, "prog.tj:9 in f"},
		{"TJB001", "side_effect", "print", "prog.tj", 3, 5, 2, "prog.tj:3 in f"},
		{"TJB001", "side_effect", "print", "prog.tj", 3, 5, 2, "prog.tj:3 in f"},
		{"TJB001", "side_effect", "print", "prog.tj", 7, 5, 3, "prog.tj:7 in f"},
	};
	int64_t cid[4];
	for (int i = 0; i < 4; i++) {
		char label[16];
		snprintf(label, sizeof label, "0/%d", i);
		struct db_compile c = {.frame_id = fr, .compile_id = label, .compile_index = i, .reason = "first",
				       .backend = "eager", .outcome = "graph_break", .nbreaks = 1, .breaks = &brk[i]};
		int64_t id = 0;
		cid[i] = db_log_compile(w, &c, &id);
		db_break_hits(w, id, 10 + i);
	}
	db_end_run(w, 0);
	db_close(w);
	struct dbq *q = must_query(dbpath);
	struct dbq_break *b = NULL;
	int n = 0;
	char *err = NULL;
	ck_assert_int_eq(dbq_break_places_page(q, 1, NULL, 1, 2, &b, &n, &err), 0);
	ck_assert_int_eq(n, 2);
	ck_assert_str_eq(b[0].code, "TJB001");
	ck_assert_int_eq(b[0].line, 3);
	ck_assert_int_eq(b[0].compiles, 2);
	ck_assert_int_eq(b[0].hits, 23);
	ck_assert_int_eq(b[1].line, 7);
	struct dbq_break *b2 = NULL;
	int n2 = 0;
	ck_assert_int_eq(dbq_break_places_page(q, 1, &b[1], 1, 2, &b2, &n2, &err), 0);
	ck_assert_int_eq(n2, 1);
	ck_assert_str_eq(b2[0].code, "TJB004");
	dbq_breaks_free(b2, n2);
	ck_assert_int_eq(dbq_break_places_page(q, 1, &b[1], -1, 5, &b2, &n2, &err), 0);
	ck_assert_int_eq(n2, 1);
	ck_assert_int_eq(b2[0].line, 3);
	dbq_breaks_free(b2, n2);
	dbq_breaks_free(b, n);
	ck_assert_int_eq(dbq_break_places_page(q, 1, NULL, -1, 5, &b, &n, &err), 0);
	ck_assert_int_eq(n, 3);
	ck_assert_str_eq(b[0].code, "TJB004");
	dbq_breaks_free(b, n);
	ck_assert_int_eq(dbq_compile_breaks(q, cid[1], &b, &n, &err), 0);
	ck_assert_int_eq(n, 1);
	ck_assert_str_eq(b[0].message, "print");
	ck_assert_int_eq(b[0].hits, 11);
	dbq_breaks_free(b, n);
	dbq_close(q);
}
END_TEST

START_TEST(test_tui_failure_pages)
{
	three_runs();
	struct dbq *q = must_query(dbpath);
	struct dbq_failure_row *f = NULL;
	int n = 0;
	char *err = NULL;
	ck_assert_int_eq(dbq_failures_page(q, 3, 0, INT64_MIN, 1, 2, &f, &n, &err), 0);
	ck_assert_int_eq(n, 2);
	ck_assert_str_eq(f[0].label, "0/1");
	ck_assert_str_eq(f[0].function, "f");
	ck_assert_str_eq(f[0].failed_label, "0/0");
	ck_assert_str_eq(f[0].guard_text, "L['n'] == 0");
	ck_assert_str_eq(f[0].value_seen, "1");
	ck_assert_str_eq(f[1].label, "0/2");
	int64_t cid = f[1].compile_id, key = f[1].id;
	dbq_failure_rows_free(f, n);
	ck_assert_int_eq(dbq_failures_page(q, 3, 0, key, 1, 10, &f, &n, &err), 0);
	ck_assert_int_eq(n, 1);
	ck_assert_str_eq(f[0].failed_label, "0/0");
	dbq_failure_rows_free(f, n);
	ck_assert_int_eq(dbq_failures_page(q, 3, 0, INT64_MAX, -1, 10, &f, &n, &err), 0);
	ck_assert_int_eq(n, 3);
	ck_assert_str_eq(f[2].label, "0/1");
	dbq_failure_rows_free(f, n);
	ck_assert_int_eq(dbq_failures_page(q, 3, cid, 0, 0, 0, &f, &n, &err), 0);
	ck_assert_int_eq(n, 2);
	ck_assert_str_eq(f[0].failed_label, "0/1");
	ck_assert_str_eq(f[1].failed_label, "0/0");
	dbq_failure_rows_free(f, n);
	dbq_close(q);
}
END_TEST

/* tjit-minify's sessions by id both ways, a run's, and a session's steps */
START_TEST(test_minify_pages)
{
	struct db_writer *w = must_open(dbpath);
	int64_t sid[3];
	for (int i = 0; i < 3; i++) {
		begin(w, "tjit-minify", NULL);
		sid[i] = db_begin_minify(w, &(struct db_minify){"prog.tj", NULL, i == 1 ? NULL : "inductor",
								 i ? "accuracy" : "none", 0});
		for (int k = 0; k < i * 2; k++)
			db_log_minify_step(w, sid[i], &(struct db_minify_step){"shrink", "keep 1: relu", k ? 1 : -1,
										 k ? "fails" : "passes", 2.5 * k});
		if (i < 2)
			db_end_minify(w, sid[i], &(struct db_minify_end){i ? "inductor" : NULL, i ? "minified" : "not_reproduced",
									  i ? "p.minify/repro.tj" : NULL, NULL});
		db_end_run(w, 0);
	}
	db_close(w);
	struct dbq *q = must_query(dbpath);
	struct dbq_session *s = NULL;
	int n = 0;
	char *err = NULL;
	ck_assert_int_eq(dbq_sessions_page(q, 0, INT64_MAX, -1, 2, &s, &n, &err), 0);
	ck_assert_int_eq(n, 2);
	ck_assert_int_eq(s[0].id, 3);
	ck_assert(!s[0].finished);
	ck_assert_ptr_null(s[0].result);
	ck_assert_int_eq(s[0].steps, 4);
	ck_assert_int_eq(s[1].id, 2);
	ck_assert(s[1].finished);
	ck_assert_ptr_null(s[1].backend);
	ck_assert_str_eq(s[1].failure, "accuracy");
	ck_assert_str_eq(s[1].stage, "inductor");
	ck_assert_str_eq(s[1].result, "minified");
	ck_assert_str_eq(s[1].repro_path, "p.minify/repro.tj");
	ck_assert_int_eq(s[1].steps, 2);
	ck_assert_int_eq(s[1].run_id, 2);
	dbq_sessions_free(s, n);
	ck_assert_int_eq(dbq_sessions_page(q, 0, 1, 1, 10, &s, &n, &err), 0);
	ck_assert_int_eq(n, 2);
	ck_assert_int_eq(s[0].id, 2);
	ck_assert_int_eq(s[1].id, 3);
	dbq_sessions_free(s, n);
	ck_assert_int_eq(dbq_sessions_page(q, 1, 0, 0, 0, &s, &n, &err), 0);
	ck_assert_int_eq(n, 1);
	ck_assert_str_eq(s[0].failure, "none");
	ck_assert_ptr_null(s[0].stage);
	ck_assert_int_eq(s[0].steps, 0);
	dbq_sessions_free(s, n);
	struct dbq_step *st = NULL;
	ck_assert_int_eq(dbq_steps_page(q, 3, 0, 1, 3, &st, &n, &err), 0);
	ck_assert_int_eq(n, 3);
	ck_assert_str_eq(st[0].phase, "shrink");
	ck_assert_str_eq(st[0].candidate, "keep 1: relu");
	ck_assert_int_eq(st[0].nodes, -1);
	ck_assert_str_eq(st[0].outcome, "passes");
	ck_assert_int_eq(st[1].nodes, 1);
	ck_assert(st[2].ms == 5.0);
	int64_t key = st[2].id;
	dbq_steps_free(st, n);
	ck_assert_int_eq(dbq_steps_page(q, 3, key, -1, 10, &st, &n, &err), 0);
	ck_assert_int_eq(n, 2);
	ck_assert(st[0].ms == 2.5);
	dbq_steps_free(st, n);
	dbq_close(q);
}
END_TEST

START_TEST(test_find_run)
{
	three_runs();
	struct dbq *q = must_query(dbpath);
	ck_assert_int_eq(dbq_find_run(q, 2, getpid(), "tjit explain"), 2);
	/* a stale handle: the newest run with the pid and the tool */
	ck_assert_int_eq(dbq_find_run(q, 2, getpid(), "tjit run"), 3);
	ck_assert_int_eq(dbq_find_run(q, 0, getpid(), "tjit run"), 3);
	ck_assert_int_eq(dbq_find_run(q, 3, getpid() + 1, "tjit run"), 0);
	ck_assert_int_eq(dbq_find_run(q, 1, getpid(), "tjit-profile run"), 0);
	dbq_close(q);
}
END_TEST

/* a path that a URI would misread, and a file the reader must not change */
START_TEST(test_odd_path_read_only)
{
	char path[400];
	snprintf(path, sizeof path, "%s/a?b#c%%20d e.db", tmpdir);
	struct db_writer *w = must_open(path);
	begin(w, "tjit run", NULL);
	db_end_run(w, 0);
	db_close(w);
	struct stat before, after;
	ck_assert_int_eq(stat(path, &before), 0);
	struct dbq *q = must_query(path);
	int64_t id = 0;
	ck_assert_int_eq(dbq_resolve_run(q, "latest", &id, NULL), 0);
	ck_assert_int_eq(id, 1);
	dbq_close(q);
	ck_assert_int_eq(stat(path, &after), 0);
	ck_assert_int_eq(before.st_size, after.st_size);
	ck_assert(before.st_mtim.tv_sec == after.st_mtim.tv_sec && before.st_mtim.tv_nsec == after.st_mtim.tv_nsec);
	/* and the file named without the odd characters was not created */
	char plain[400];
	snprintf(plain, sizeof plain, "%s/a", tmpdir);
	ck_assert_int_ne(access(plain, F_OK), 0);
}
END_TEST

/* reading while a writer holds the file open and logs */
START_TEST(test_read_while_writing)
{
	three_runs();
	struct db_writer *w = must_open(dbpath);
	begin(w, "tjit run", prog_text);
	struct db_frame f = {0, "f", "prog.tj", 1, 0, 0};
	int64_t fr = db_log_frame(w, &f);
	log_compile(w, fr, 0, 0, true, NULL);
	db_flush(w);
	struct dbq *q = must_query(dbpath);
	int64_t id = 0;
	ck_assert_int_eq(dbq_resolve_run(q, "latest", &id, NULL), 0);
	ck_assert_int_eq(id, 4);
	struct dbq_run r;
	ck_assert_int_eq(dbq_run_get(q, 4, &r, NULL), 0);
	ck_assert(!r.finished);
	dbq_run_release(&r);
	log_compile(w, fr, 0, 1, true, NULL);
	db_end_run(w, 0);
	struct dbq_frame *fs = NULL;
	int n = 0;
	ck_assert_int_eq(dbq_frames(q, 4, &fs, &n, NULL), 0);
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(fs[0].compiles, 2);
	dbq_frames_free(fs, n);
	dbq_close(q);
	db_close(w);
}
END_TEST

/* every statement finds its rows through an index */
START_TEST(test_query_plans)
{
	three_runs();
	struct dbq *q = must_query(dbpath);
	int i = 0;
	bool may_scan_runs = false;
	for (const char *sql; (sql = dbq_statement(i, &may_scan_runs)); i++) {
		char *err = NULL;
		char *plan = dbq_explain(q, i, &err);
		ck_assert_msg(plan != NULL, "%s: %s", sql, err ? err : "?");
		for (char *line = plan; *line;) {
			char *nl = strchr(line, '\n');
			*nl = 0;
			if (strstr(line, "SCAN"))
				ck_assert_msg(may_scan_runs && strncmp(line, "SCAN runs", 9) == 0, "%s\nscans: %s", sql,
					      line);
			line = nl + 1;
		}
		free(plan);
	}
	ck_assert_int_ge(i, 28);
	ck_assert_ptr_null(dbq_statement(-1, NULL));
	dbq_close(q);
}
END_TEST

/* a run with no end: running while its process is, else killed */
START_TEST(test_unfinished_run_state)
{
	char buf[64], want[64];
	ck_assert(dbq_run_alive(getpid()));
	dbq_unfinished_text(getpid(), buf, sizeof buf);
	snprintf(want, sizeof want, "still running, process %lld", (long long)getpid());
	ck_assert_str_eq(buf, want);
	pid_t child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0)
		_exit(0);
	ck_assert_int_eq(waitpid(child, NULL, 0), child); /* reaped: gone */
	ck_assert(!dbq_run_alive(child));
	dbq_unfinished_text(child, buf, sizeof buf);
	snprintf(want, sizeof want, "killed: process %lld is gone", (long long)child);
	ck_assert_str_eq(buf, want);
	ck_assert(!dbq_run_alive(0));
	dbq_unfinished_text(0, buf, sizeof buf);
	ck_assert_str_eq(buf, "killed");
}
END_TEST

static Suite *query_suite(void)
{
	Suite *s = suite_create("query");
	TCase *tc = tcase_create("reader");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_open_refusals);
	tcase_add_test(tc, test_resolve_run);
	tcase_add_test(tc, test_no_runs);
	tcase_add_test(tc, test_run_row);
	tcase_add_test(tc, test_frames);
	tcase_add_test(tc, test_breaks);
	tcase_add_test(tc, test_break_ranking);
	tcase_add_test(tc, test_failures);
	tcase_add_test(tc, test_guards);
	tcase_add_test(tc, test_backend_phases);
	tcase_add_test(tc, test_saved);
	tcase_add_test(tc, test_kernels);
	tcase_add_test(tc, test_browsing);
	tcase_add_test(tc, test_tui_compile_pages);
	tcase_add_test(tc, test_tui_break_places);
	tcase_add_test(tc, test_tui_failure_pages);
	tcase_add_test(tc, test_minify_pages);
	tcase_add_test(tc, test_find_run);
	tcase_add_test(tc, test_odd_path_read_only);
	tcase_add_test(tc, test_read_while_writing);
	tcase_add_test(tc, test_query_plans);
	tcase_add_test(tc, test_unfinished_run_state);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(query_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
