/* bench_db.c - what the compile log costs a recompile-heavy program.
 *
 * Logs one run of 100 compiles, each with 10 guards, 1 guard failure,
 * 1 graph break and 1 graph of 20 nodes (and 100 db_frame_counts calls
 * between two compiles, as the frame evaluator makes them), first to a
 * fresh database file in a temporary directory, then to the null writer
 * (--no-db). The writer's thread does the SQLite work, so it prints apart:
 * what the program's thread spends in the calls (per compile, and per
 * db_log_compile call), the drain (db_end_run waiting for the thread to
 * write what is queued: here nearly everything, since this program does
 * nothing but log), the thread's time per compile, open and close. Best
 * of the runs, and the mean of runs appended to one file. The target "at
 * most 1.10x slower with the database" holds for a program whose compiles
 * each take as long as the thread needs for one (so that the queue never
 * grows) and 10 times what the program's thread, open and close cost.
 * Last, the same run with the compiles GAP_MS apart (the program busy in
 * between, as a real one is): the thread keeps up, and what is left is the
 * program's thread's cost per call (waking the idle thread included) and
 * a drain of about one event.
 *
 * Usage: bench_db [runs]   (default 5; TMPDIR chooses the directory).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "db.h"

#define NCOMPILES 100
#define NGUARDS 10
#define NNODES 20
#define NCOUNTS 100
#define GAP_MS 1.0

static struct db_guard guards[NGUARDS];
static struct db_node nodes[NNODES];
static char listing[NNODES * 48];
static const struct db_guard_failure failure = {"0/0", "L['x'].shape[0] == 2", "4"};
static const struct db_break graph_break = {"TJB001", "side_effect", "print() in a compiled function: print(y)",
				    "prog.tj", 12, 5, 41, "prog.tj:30 in main\nprog.tj:12 in step"};

static void make_rows(void)
{
	static char names[NNODES][16], args[NNODES][32];
	static const char *const kinds[] = {"type", "tensor_match", "equals", "length", "id"};
	static const char *const texts[] = {"type(L['x']) == Tensor", "L['x'].shape == (8, 16)",
					    "L['n'] == 3", "len(L['xs']) == 4", "id(L['f']) == 140213"};
	for (int i = 0; i < NGUARDS; i++)
		guards[i] = (struct db_guard){kinds[i % 5], texts[i % 5], "prog.tj", 10 + i, 5};
	size_t len = 0;
	for (int i = 0; i < NNODES; i++) {
		snprintf(names[i], sizeof names[i], "add_%d", i);
		snprintf(args[i], sizeof args[i], "%s, 1.0", i ? names[i - 1] : "x");
		nodes[i] = (struct db_node){names[i], i ? "op" : "input", i ? "add" : NULL, args[i], "float32", "[8, 16]",
					    "prog.tj", 12 + i, 9, "prog.tj:30 in main\nprog.tj:12 in step"};
		len += (size_t)snprintf(listing + len, sizeof listing - len, "  %s = add(%s)\n", names[i], args[i]);
	}
}

/* where a run's time goes, in seconds */
struct timing {
	double open;    /* db_open_writer */
	double calls;   /* every call before db_end_run, on the program's thread */
	double compile; /* of which in db_log_compile */
	double drain;   /* db_end_run: the end and what is still queued */
	double close;   /* db_close */
	double compile_max; /* the slowest db_log_compile */
};

/* One run of NCOMPILES compiles into w, gap seconds apart (busy). */
static void log_run(struct db_writer *w, struct timing *t, double gap)
{
	double t0 = now();
	static const struct db_run run = {"tjit run", "tjit run bench.tj", "bench.tj",
					  "def step(x):\n    return x + 1\n", NULL, "fullgraph=0 cache_size_limit=8", 0};
	struct db_graph graph = {"captured", "step", NNODES - 1, listing, NNODES, nodes, 0, NULL};
	db_begin_run(w, &run);
	int64_t frame = db_log_frame(w, &(struct db_frame){0, "step", "prog.tj", 11, 0, 0});
	for (int i = 0; i < NCOMPILES; i++) {
		char id[32];
		snprintf(id, sizeof id, "0/%d", i);
		struct db_compile c = {
			.frame_id = frame,
			.compile_id = id,
			.compile_index = i,
			.reason = i ? "recompile" : "first",
			.backend = "inductor",
			.dynamic = "None",
			.trace_ms = 1.5,
			.guard_ms = 0.25,
			.backend_ms = 4,
			.total_ms = 6,
			.outcome = "graph_break",
			.op_count = NNODES - 1,
			.nguards = NGUARDS,
			.guards = guards,
			.nfailures = 1,
			.failures = &failure,
			.nbreaks = 1,
			.breaks = &graph_break,
			.ngraphs = 1,
			.graphs = &graph,
		};
		int64_t break_id = 0;
		for (double g0 = now(); now() - g0 < gap;)
			;
		double c0 = now();
		db_log_compile(w, &c, &break_id);
		double d = now() - c0;
		t->compile += d;
		if (d > t->compile_max)
			t->compile_max = d;
		for (int k = 0; k < NCOUNTS; k++)
			db_frame_counts(w, frame, &(struct db_frame_counts){(int64_t)i * NCOUNTS + k, (int64_t)i * NCOUNTS, 0, 0, 0, NULL});
		db_break_hits(w, break_id, i + 1);
	}
	double t1 = now();
	db_end_run(w, 0);
	t->calls = t1 - t0;
	t->drain = now() - t1;
}

/* One run into the file at path: open, log, close. */
static int time_file(const char *path, struct timing *t, double gap)
{
	double t0 = now();
	char *err = NULL;
	struct db_writer *w = db_open_writer(path, &err);
	if (!w) {
		fprintf(stderr, "bench_db: %s\n", err);
		free(err);
		return -1;
	}
	*t = (struct timing){.open = now() - t0};
	log_run(w, t, gap);
	int failed = db_error(w) != NULL;
	double t2 = now();
	db_close(w);
	t->close = now() - t2;
	return failed ? -1 : 0;
}

static void remove_db(const char *path)
{
	char side[700];
	unlink(path);
	snprintf(side, sizeof side, "%s-wal", path);
	unlink(side);
	snprintf(side, sizeof side, "%s-shm", path);
	unlink(side);
}

static double total(struct timing t)
{
	return t.open + t.calls + t.drain + t.close;
}

static void add(struct timing *sum, struct timing t, double k)
{
	sum->open += t.open * k;
	sum->calls += t.calls * k;
	sum->compile += t.compile * k;
	sum->drain += t.drain * k;
	sum->close += t.close * k;
}

static void print_timing(const char *name, struct timing t)
{
	printf("  %-10s program's thread %6.4f ms per compile (db_log_compile %5.1f us a call);"
	       " drain %6.2f ms; writer's thread %.3f ms per compile; open %.2f ms, close %.2f ms;"
	       " all %.2f ms\n",
	       name, t.calls * 1e3 / NCOMPILES, t.compile * 1e6 / NCOMPILES, t.drain * 1e3,
	       (t.calls + t.drain) * 1e3 / NCOMPILES, t.open * 1e3, t.close * 1e3, total(t) * 1e3);
}

int main(int argc, char **argv)
{
	int runs = argc > 1 ? atoi(argv[1]) : 5;
	if (runs < 1) {
		fprintf(stderr, "usage: bench_db [runs]\n");
		return 2;
	}
	const char *base = getenv("TMPDIR");
	char dir[512], path[600];
	snprintf(dir, sizeof dir, "%s/bench_db.XXXXXX", base && *base ? base : "/tmp");
	if (!mkdtemp(dir)) {
		perror("bench_db: mkdtemp");
		return 1;
	}
	snprintf(path, sizeof path, "%s/bench.db", dir);
	make_rows();

	/* a fresh file each time, best of the runs */
	struct timing fresh = {0}, t;
	for (int r = 0; r < runs; r++) {
		if (time_file(path, &t, 0) < 0)
			return 1;
		if (r == 0 || total(t) < total(fresh))
			fresh = t;
		remove_db(path);
	}
	/* runs appended to one file, as ./tjit.db grows: the mean, which
	 * includes the checkpoints every ~1000 WAL pages */
	struct timing appended = {0};
	for (int r = 0; r < runs; r++) {
		if (time_file(path, &t, 0) < 0)
			return 1;
		add(&appended, t, 1.0 / runs);
	}
	/* compiles GAP_MS apart, appended: best of the runs */
	struct timing spaced = {0};
	for (int r = 0; r < runs; r++) {
		if (time_file(path, &t, GAP_MS * 1e-3) < 0)
			return 1;
		if (r == 0 || t.compile < spaced.compile)
			spaced = t;
	}
	remove_db(path);
	rmdir(dir);
	/* the null writer, best of the runs */
	struct timing null = {0};
	for (int r = 0; r < runs; r++) {
		t = (struct timing){0};
		double t0 = now();
		struct db_writer *w = db_null_writer();
		t.open = now() - t0;
		log_run(w, &t, 0);
		double t2 = now();
		db_close(w);
		t.close = now() - t2;
		if (r == 0 || total(t) < total(null))
			null = t;
	}

	/* the worse of fresh and appended */
	struct timing worst = total(appended) > total(fresh) ? appended : fresh;
	double thread = (worst.calls + worst.drain) / NCOMPILES;     /* the thread's time per compile */
	double program = (worst.calls - null.calls) / NCOMPILES;     /* the program's thread's, per compile */
	double fixed = worst.open + worst.close + thread;            /* open, close, the last event's drain */
	double all = (total(worst) - total(null)) / NCOMPILES;
	double need = 10 * (program + fixed / NCOMPILES);
	if (need < thread)
		need = thread;
	printf("bench_db: %d compiles of %d guards, 1 guard failure, 1 break, 1 graph of %d nodes"
	       " (+%d frame counts each), %d runs\n",
	       NCOMPILES, NGUARDS, NNODES, NCOUNTS, runs);
	print_timing("fresh:", fresh);
	print_timing("appended:", appended);
	print_timing("null:", null);
	printf("  (fresh: a new file each run, best; appended: runs appended to one file, mean, with the\n"
	       "  checkpoints every ~1000 WAL pages; the writer's thread time is calls + drain: it starts with\n"
	       "  the first call and the program's thread does nothing else here)\n");
	printf("  a program that does nothing but these compiles: %.3f ms per compile with the database, all\n"
	       "  of it waited for (file/null %.0fx); one whose compiles take time of their own pays\n"
	       "  %.4f ms per compile on its thread, and the 1.10x target holds once its compiles take\n"
	       "  >= %.2f ms each (the thread keeps up; open, close and the last drain included)\n",
	       all * 1e3, total(null) > 0 ? total(worst) / total(null) : 0.0, program * 1e3, need * 1e3);
	printf("  compiles %.1f ms apart (appended, best): db_log_compile %.1f us a call (the slowest %.1f us),"
	       " drain %.2f ms\n",
	       GAP_MS, spaced.compile * 1e6 / NCOMPILES, spaced.compile_max * 1e6, spaced.drain * 1e3);
	return 0;
}
