/* bench_tui.c - tjit-tui on a database of a million rows.
 *
 * Builds (once, or reuses BENCH_TUI_DB) a database of 1,000 runs whose
 * newest has 1,000,000 compiles over 10 frames (a graph break every 100th
 * compile, a guard failure every 10th: 1.1 million rows), with the schema
 * made by the writer (db/db.h) and the rows inserted with plain SQLite in
 * one transaction. Then it measures what a user waits for, as tjit-tui
 * does it (tui/view.c's keys, tui/draw.c painting an off-screen curses
 * screen on /dev/null):
 *
 *   first screen: open the database, read the first page of runs, paint
 *                 (target: under 100 ms)
 *   each key:     j, G, Enter into the big run, Enter into its million
 *                 compiles, PgDn, G, g, a filter typed a letter at a time,
 *                 n (target: under 50 ms each)
 *
 * The median of RUNS (default 11) repetitions of each; prints ms and the
 * targets, MISSED beside a target missed (and exits 1 then only with
 * BENCH_TUI_STRICT=1).
 */
#define _GNU_SOURCE
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "db.h"
#include "draw.h"
#include "query.h"
#include "util.h"
#include "view.h"

#define NRUNS 1000
#define NCOMPILES 1000000
#define NFRAMES 10

static void die(const char *what, const char *msg)
{
	fprintf(stderr, "bench_tui: %s: %s\n", what, msg ? msg : "?");
	exit(2);
}

static void exec(sqlite3 *db, const char *sql)
{
	char *err = NULL;
	if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK)
		die(sql, err);
}

static sqlite3_stmt *prep(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		die(sql, sqlite3_errmsg(db));
	return st;
}

static void step(sqlite3 *db, sqlite3_stmt *st)
{
	if (sqlite3_step(st) != SQLITE_DONE)
		die("insert", sqlite3_errmsg(db));
	sqlite3_reset(st);
}

static const char source[] = "def f(x, n):\n    y = x * n\n    print(y)\n    return y.sum()\n";

static void build(const char *path)
{
	double t0 = util_now_ms();
	char *err = NULL;
	struct db_writer *w = db_open_writer(path, &err); /* the schema */
	if (!w)
		die(path, err);
	db_close(w);
	sqlite3 *db = NULL;
	if (sqlite3_open(path, &db) != SQLITE_OK)
		die(path, sqlite3_errmsg(db));
	exec(db, "PRAGMA synchronous = OFF; BEGIN");
	char hash[17];
	db_hash_text(source, hash);
	sqlite3_stmt *st = prep(db, "INSERT INTO sources(hash, path, text) VALUES (?1, 'prog.tj', ?2)");
	sqlite3_bind_text(st, 1, hash, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, source, -1, SQLITE_STATIC);
	step(db, st);
	sqlite3_finalize(st);
	st = prep(db, "INSERT INTO runs(id, tool, command, program, source_hash, config, pid, started_at, ended_at,"
		      " compile_count, graph_count, break_count, recompile_count, exit_status)"
		      " VALUES (?1, 'tjit run', 'tjit run prog.tj', 'prog.tj', ?2, 'fullgraph=0', 1, ?3, ?3 + 1,"
		      " ?4, ?4, ?5, ?6, 0)");
	for (int r = 1; r <= NRUNS; r++) {
		bool big = r == NRUNS;
		sqlite3_bind_int(st, 1, r);
		sqlite3_bind_text(st, 2, hash, -1, SQLITE_STATIC);
		sqlite3_bind_double(st, 3, 1.7e9 + r * 60);
		sqlite3_bind_int(st, 4, big ? NCOMPILES : 0);
		sqlite3_bind_int(st, 5, big ? NCOMPILES / 100 : 0);
		sqlite3_bind_int(st, 6, big ? NCOMPILES - NFRAMES : 0);
		step(db, st);
	}
	sqlite3_finalize(st);
	st = prep(db, "INSERT INTO frames(id, run_id, frame_index, function, file, line, resume_pc, calls, cache_hits)"
		      " VALUES (?1, ?2, ?3, 'f', 'prog.tj', 1, 0, 2000000, 1000000)");
	for (int f = 0; f < NFRAMES; f++) {
		sqlite3_bind_int(st, 1, f + 1);
		sqlite3_bind_int(st, 2, NRUNS);
		sqlite3_bind_int(st, 3, f);
		step(db, st);
	}
	sqlite3_finalize(st);
	sqlite3_stmt *c = prep(db, "INSERT INTO compiles(id, run_id, frame_id, label, compile_index, reason, backend,"
				   " started_at, trace_ms, total_ms, outcome, op_count)"
				   " VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'eager', 1.7e9, 0.5, 1.25, ?7, 3)");
	sqlite3_stmt *b = prep(db, "INSERT INTO graph_breaks(run_id, compile_id, code, category, message, file, line,"
				   " col, pc, user_stack, hits) VALUES (?1, ?2, 'TJB001', 'side_effect',"
				   " 'call to print (side effect)', 'prog.tj', 3, 5, 6, 'prog.tj:3 in f', 1)");
	sqlite3_stmt *g = prep(db, "INSERT INTO guard_failures(run_id, compile_id, failed_label, guard_text, value_seen)"
				   " VALUES (?1, ?2, ?3, ?4, ?5)");
	for (int i = 0; i < NCOMPILES; i++) {
		int f = i % NFRAMES, n = i / NFRAMES;
		char label[32], prev[32], text[48], seen[16];
		snprintf(label, sizeof label, "%d/%d", f, n);
		bool brk = i % 100 == 0;
		sqlite3_bind_int(c, 1, i + 1);
		sqlite3_bind_int(c, 2, NRUNS);
		sqlite3_bind_int(c, 3, f + 1);
		sqlite3_bind_text(c, 4, label, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int(c, 5, n);
		sqlite3_bind_text(c, 6, n ? "recompile" : "first", -1, SQLITE_STATIC);
		sqlite3_bind_text(c, 7, brk ? "graph_break" : "ok", -1, SQLITE_STATIC);
		step(db, c);
		if (brk) {
			sqlite3_bind_int(b, 1, NRUNS);
			sqlite3_bind_int(b, 2, i + 1);
			step(db, b);
		}
		if (n && i % 10 == 0) {
			snprintf(prev, sizeof prev, "%d/%d", f, n - 1);
			snprintf(text, sizeof text, "L['n'] == %d", n - 1);
			snprintf(seen, sizeof seen, "%d", n);
			sqlite3_bind_int(g, 1, NRUNS);
			sqlite3_bind_int(g, 2, i + 1);
			sqlite3_bind_text(g, 3, prev, -1, SQLITE_TRANSIENT);
			sqlite3_bind_text(g, 4, text, -1, SQLITE_TRANSIENT);
			sqlite3_bind_text(g, 5, seen, -1, SQLITE_TRANSIENT);
			step(db, g);
		}
	}
	sqlite3_finalize(c);
	sqlite3_finalize(b);
	sqlite3_finalize(g);
	exec(db, "COMMIT; PRAGMA wal_checkpoint(TRUNCATE)");
	sqlite3_close(db);
	printf("tui: built %s: %d runs, %d compiles, %d graph breaks, %d guard failures in %.1f s\n", path, NRUNS,
	       NCOMPILES, NCOMPILES / 100, NCOMPILES / 10 - NFRAMES / 10, (util_now_ms() - t0) / 1000);
}

/* ---- timing ---- */

static struct draw *screen;

static void paint(struct tui *t)
{
	const struct tui_line *lines;
	int n = tui_layout(t, &lines);
	draw_screen(screen, lines, n);
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp);
	return v[n / 2];
}

static int missed;

static void report(const char *what, double ms, double target)
{
	bool ok = ms < target;
	printf("tui: %-34s %8.2f ms  (target < %.0f ms)%s\n", what, ms, target, ok ? "" : "  MISSED");
	if (!ok)
		missed++;
}

/* Opens the database and the runs view: the first screen */
static struct tui *first_screen(const char *path, struct dbq **qp)
{
	char *err = NULL;
	*qp = dbq_open(path, &err);
	if (!*qp)
		die(path, err);
	struct tui *t = tui_new(*qp, NULL, 24, 80, &err);
	if (!t)
		die("tui_new", err);
	paint(t);
	return t;
}

/* the keys in order from the first screen; each is timed with its paint */
static const struct {
	const char *what;
	int keys[8];
} steps[] = {
	{"runs: j", {'j'}},
	{"runs: G (the oldest of 1,000)", {'G'}},
	{"runs: g", {'g'}},
	{"Enter: the run of 1M compiles", {TUI_KEY_ENTER}},
	{"Enter: its compiles", {TUI_KEY_ENTER}},
	{"compiles: j", {'j'}},
	{"compiles: PgDn", {TUI_KEY_PGDN}},
	{"compiles: G (the millionth)", {'G'}},
	{"compiles: k", {'k'}},
	{"compiles: PgUp", {TUI_KEY_PGUP}},
	{"compiles: g", {'g'}},
	{"/ then 9/99 (a key each)", {'/', '9', '/', '9', '9'}},
	{"filter: Enter, n", {TUI_KEY_ENTER, 'n'}},
	{"filter: G", {'G'}},
	{"Esc (back to the run)", {TUI_KEY_ESC}},
	{"Enter: guard failures (100k)", {'j', 'j', 'j', 'j', TUI_KEY_ENTER}},
	{"failures: G", {'G'}},
	{"Esc, Enter: breaks", {TUI_KEY_ESC, 'g', 'j', 'j', TUI_KEY_ENTER}},
	{"Enter: the break's source line", {TUI_KEY_ENTER}},
	{"r (reload)", {'r'}},
};
#define NSTEPS (int)(sizeof steps / sizeof steps[0])

int main(void)
{
	const char *keep = getenv("BENCH_TUI_DB");
	char dir[512], path[600];
	const char *db = keep;
	if (!db) {
		const char *tmp = getenv("TMPDIR");
		snprintf(dir, sizeof dir, "%s/bench_tui.XXXXXX", tmp && *tmp ? tmp : "/tmp");
		if (!mkdtemp(dir))
			die("mkdtemp", "cannot make a temporary folder");
		snprintf(path, sizeof path, "%s/big.db", dir);
		db = path;
	}
	if (access(db, F_OK) != 0)
		build(db);
	int runs = getenv("RUNS") ? atoi(getenv("RUNS")) : 11;
	if (runs < 1)
		runs = 1;
	char *err = NULL;
	FILE *in = fopen("/dev/null", "r"), *out = fopen("/dev/null", "w");
	screen = draw_open("xterm", in, out, true, &err);
	if (!screen)
		die("curses", err);
	double *first = calloc((size_t)runs, sizeof *first);
	double (*keys)[NSTEPS] = calloc((size_t)runs, sizeof *keys);
	double worst = 0;
	int worst_step = 0;
	for (int r = 0; r < runs; r++) {
		struct dbq *q;
		double t0 = util_now_ms();
		struct tui *t = first_screen(db, &q);
		first[r] = util_now_ms() - t0;
		for (int s = 0; s < NSTEPS; s++) {
			double k0 = util_now_ms();
			int nk = 0;
			for (int k = 0; k < 8 && steps[s].keys[k]; k++, nk++) {
				double one = util_now_ms();
				tui_key(t, steps[s].keys[k]);
				paint(t);
				one = util_now_ms() - one;
				if (one > worst) {
					worst = one;
					worst_step = s;
				}
			}
			keys[r][s] = (util_now_ms() - k0) / nk;
		}
		if (r == 0) {
			/* what the last step shows, as a check that the keys went where meant */
			const char *sel = tui_selected(t);
			printf("tui: after the keys: %s view, at '%.30s'\n", tui_view_name(t), sel ? sel : "");
		}
		tui_free(t);
		dbq_close(q);
	}
	printf("tui: median of %d runs on 1,000 runs and 1,000,000 compiles (a 24x80 screen)\n", runs);
	report("first screen (open, runs, paint)", median(first, runs), 100);
	for (int s = 0; s < NSTEPS; s++) {
		double v[runs];
		for (int r = 0; r < runs; r++)
			v[r] = keys[r][s];
		char what[64];
		snprintf(what, sizeof what, "%s", steps[s].what);
		report(what, median(v, runs), 50);
	}
	printf("tui: slowest single key of all runs: %.2f ms (in '%s')\n", worst, steps[worst_step].what);
	draw_close(screen);
	fclose(in);
	fclose(out);
	free(first);
	free(keys);
	if (!keep) {
		char f[640];
		const char *ext[] = {"", "-wal", "-shm"};
		for (int i = 0; i < 3; i++) {
			snprintf(f, sizeof f, "%s%s", path, ext[i]);
			unlink(f);
		}
		rmdir(dir);
	}
	const char *strict = getenv("BENCH_TUI_STRICT");
	return missed && strict && strcmp(strict, "1") == 0 ? 1 : 0;
}
