/* db.c - the compile log writer: SQLite on a thread of its own behind a
 * const vtable, and the null writer that serves --no-db and every writer
 * that failed.
 *
 * The program's thread never waits for SQLite. A writer is a struct
 * db_writer whose ops point at queue_ops or null_ops. The public functions
 * at the end dispatch through ops; a slot left NULL does nothing (and hands
 * out a fresh null id where an id is due), so null_ops is all NULL.
 * queue_ops copies each event, its arrays and strings included, into one
 * malloc'd job (a few microseconds) and appends it to the writer's queue.
 * The writer thread takes the jobs in order and writes each as its own
 * transaction (BEGIN IMMEDIATE, so that two processes never deadlock on a
 * lock upgrade): one per compile, never two events in one. db_flush,
 * db_end_run and db_close wait until the queue is written. The thread
 * starts with the first frame, compile or minifier event; until then the
 * few jobs of a run (its begin, end, sources, counters) are written on the
 * caller's thread, so that a run that never compiles pays no thread.
 *
 * Ids. An event call returns before its row exists, so it returns a
 * handle. Handles count on from the largest id of each table at open,
 * which makes each one its row's id as long as no other process logs into
 * the file meanwhile; the writer thread maps every handle to the id its row
 * really got, and translates the handles that later events name (a
 * compile's frame_id, break ids, session ids, the counters), so that
 * concurrent processes stay correct. A run begun before the thread starts
 * (a tool's first event) is written at once, and its real id returned.
 *
 * Failures. When SQLite fails, the thread's fail() reports once on stderr
 * ("tjit: database: ..."), closes the connection and discards the jobs that
 * follow; the caller's side sees the flag and turns null. A misuse (a frame
 * before any run) is reported by the caller's side at once. Nothing else
 * changes for the program.
 *
 * Crashes, exit, fork. While an SQLite writer is open, a handler of
 * SIGSEGV, SIGBUS, SIGFPE, SIGILL and SIGABRT lets the writer thread finish
 * the queue (waiting at most CRASH_WAIT_MS, with async-signal-safe calls
 * only), then restores the previous action and lets the fault happen
 * again (a signal that was sent, as by abort(), is raised again).
 * SIGKILL cannot be caught: it loses the jobs still queued, which in a
 * steady run are those of the last millisecond or so (each takes the
 * thread 0.2-0.5 ms; a few ms when every CPU is busy, see writer_main),
 * in a burst of compiles the burst's tail. An exit() without
 * db_close still waits for the queues (atexit). pthread_atfork() makes
 * fork() wait until the thread is between two jobs (so that the child
 * inherits no lock held inside SQLite), and turns every writer of the child
 * into a null writer that never touches the parent's thread or connection.
 *
 * Counters the core updates often (frame counts, break hits) wait in memory
 * on the caller's side, in a small hash table by handle, and go out with
 * the next compile, run begin or end, or on their own once a second has
 * passed.
 */
#define _GNU_SOURCE /* SCHED_BATCH, vasprintf */
#include "db.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "hash.h"

/* db/schema.sql as a C string, generated at build time by db/sql2c.sh */
extern const char db_schema_sql[];

#define BUSY_TIMEOUT_MS 5000
#define FLUSH_INTERVAL_S 1.0
#define PAGE_SIZE "2048"
/* a program that logs faster than the thread writes waits beyond this */
#define QUEUE_MAX_BYTES ((size_t)64 << 20)
/* how long a crash waits for the queue, polling every CRASH_POLL_MS */
#define CRASH_WAIT_MS 2000
#define CRASH_POLL_MS 1

/* values per counter row: a frame's calls, cache_hits, eager_calls,
 * guard_checks and guard-check nanoseconds; a break's hits (v[0]) */
#define DB_COUNTERS 5

/* Migrations: migrations[v] takes a file from user_version v to v + 1 (and
 * sets user_version itself). A new file (version 0) gets schema.sql
 * instead. */
static const char *const migrations[DB_SCHEMA_VERSION] = {
	[0] = NULL,
	/* 2: the frames' guard-check counters, the runs' compile counts */
	[1] = "ALTER TABLE frames ADD COLUMN guard_checks INTEGER NOT NULL DEFAULT 0;"
	      " ALTER TABLE frames ADD COLUMN guard_check_ms REAL NOT NULL DEFAULT 0;"
	      " ALTER TABLE runs ADD COLUMN compile_count INTEGER NOT NULL DEFAULT 0;"
	      " ALTER TABLE runs ADD COLUMN graph_count INTEGER NOT NULL DEFAULT 0;"
	      " ALTER TABLE runs ADD COLUMN break_count INTEGER NOT NULL DEFAULT 0;"
	      " ALTER TABLE runs ADD COLUMN recompile_count INTEGER NOT NULL DEFAULT 0;"
	      " UPDATE runs SET (compile_count, graph_count, break_count, recompile_count) ="
	      " (SELECT count(*), coalesce(sum(op_count > 0), 0), coalesce(sum(outcome = 'graph_break'), 0),"
	      " coalesce(sum(reason = 'recompile'), 0) FROM compiles WHERE compiles.run_id = runs.id);"
	      " DROP INDEX compiles_run; CREATE INDEX compiles_run ON compiles(run_id);"
	      " PRAGMA user_version = 2;",
	/* 3: the named phases of each compile */
	[2] = "CREATE TABLE IF NOT EXISTS compile_phases (id INTEGER PRIMARY KEY,"
	      " compile_id INTEGER NOT NULL REFERENCES compiles(id), position INTEGER NOT NULL,"
	      " name TEXT NOT NULL, parent INTEGER, ms REAL NOT NULL DEFAULT 0,"
	      " UNIQUE (compile_id, position));"
	      " PRAGMA user_version = 3;",
	/* 4: aot_eager's saved tensors */
	[3] = "ALTER TABLE compiles ADD COLUMN saved_bytes INTEGER;"
	      " CREATE TABLE IF NOT EXISTS aot_saved (id INTEGER PRIMARY KEY,"
	      " compile_id INTEGER NOT NULL REFERENCES compiles(id), idx INTEGER NOT NULL,"
	      " graph_id INTEGER NOT NULL REFERENCES graphs(id), node_idx INTEGER NOT NULL,"
	      " name TEXT NOT NULL, dtype TEXT, shape TEXT, bytes INTEGER NOT NULL,"
	      " UNIQUE (compile_id, idx));"
	      " PRAGMA user_version = 4;",
};

/* Every statement the writer runs after opening, prepared on first use:
 * X(name, sql). */
#define STATEMENTS(X)                                                                                   \
	X(begin, "BEGIN IMMEDIATE")                                                                     \
	X(commit, "COMMIT")                                                                             \
	X(insert_source, "INSERT INTO sources (hash, path, text) VALUES (?, ?, ?)"                      \
			 " ON CONFLICT (hash) DO NOTHING")                                              \
	X(insert_run, "INSERT INTO runs (tool, command, program, source_hash, backend, config, pid,"    \
		      " started_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)")                                   \
	X(end_run, "UPDATE runs SET ended_at = ?, exit_status = ? WHERE id = ?")                       \
	X(count_compile, "UPDATE runs SET compile_count = compile_count + 1, graph_count = graph_count + ?," \
			 " break_count = break_count + ?, recompile_count = recompile_count + ?"       \
			 " WHERE id = ?")                                                               \
	X(insert_frame, "INSERT INTO frames (run_id, frame_index, function, file, line, resume_pc,"     \
			" resume_line) VALUES (?, ?, ?, ?, ?, ?, ?)"                                    \
			" ON CONFLICT (run_id, frame_index) DO NOTHING")                                \
	X(find_frame, "SELECT id FROM frames WHERE run_id = ? AND frame_index = ?")                    \
	X(frame_counts, "UPDATE frames SET calls = ?, cache_hits = ?, eager_calls = ?,"                 \
			" guard_checks = ?, guard_check_ms = ? / 1e6, eager_reason = ? WHERE id = ?")   \
	X(insert_compile, "INSERT INTO compiles (run_id, frame_id, label, compile_index, reason,"       \
			  " backend, dynamic, started_at, trace_ms, guard_ms, backend_ms, total_ms,"    \
			  " outcome, op_count, error, saved_bytes)"                                     \
			  " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")                   \
	X(insert_guard, "INSERT INTO guards (compile_id, idx, kind, text, file, line, col)"             \
			" VALUES (?, ?, ?, ?, ?, ?, ?)")                                                \
	X(insert_failure, "INSERT INTO guard_failures (run_id, compile_id, failed_label, guard_text,"   \
			  " value_seen) VALUES (?, ?, ?, ?, ?)")                                        \
	X(insert_break, "INSERT INTO graph_breaks (run_id, compile_id, code, category, message, file,"  \
			" line, col, pc, user_stack) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")            \
	X(break_hits, "UPDATE graph_breaks SET hits = ? WHERE id = ?")                                 \
	X(insert_graph, "INSERT INTO graphs (compile_id, stage, name, op_count, listing)"               \
			" VALUES (?, ?, ?, ?, ?)")                                                      \
	X(insert_node, "INSERT INTO nodes (graph_id, idx, name, kind, op, args, dtype, shape, file,"    \
		       " line, col, user_stack) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")           \
	X(insert_phase, "INSERT INTO compile_phases (compile_id, position, name, parent, ms)"          \
			" VALUES (?, ?, ?, ?, ?)")                                                      \
	X(insert_saved, "INSERT INTO aot_saved (compile_id, idx, graph_id, node_idx, name, dtype, shape,"  \
			" bytes) VALUES (?, ?, ?, ?, ?, ?, ?, ?)")                                      \
	X(insert_kernel, "INSERT INTO kernels (graph_id, idx, name, kind, hash, fused_nodes, loop_ir,"  \
			 " llvm_ir, cache_hit, codegen_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")      \
	X(insert_minify, "INSERT INTO minify_sessions (run_id, program, source_hash, backend, failure," \
			 " started_at) VALUES (?, ?, ?, ?, ?, ?)")                                      \
	X(insert_minify_step, "INSERT INTO minify_steps (session_id, phase, candidate, nodes, outcome," \
			      " ms) VALUES (?, ?, ?, ?, ?, ?)")                                         \
	X(end_minify, "UPDATE minify_sessions SET ended_at = ?, stage = ?, result = ?, repro_path = ?," \
		      " repro_hash = ? WHERE id = ?")

enum stmt {
#define X(name, sql) STMT_##name,
	STATEMENTS(X)
#undef X
	STMT_COUNT
};

static const char *const stmt_sql[STMT_COUNT] = {
#define X(name, sql) [STMT_##name] = sql,
	STATEMENTS(X)
#undef X
};


/* The tables whose rows the caller gets a handle for: X(kind, table). */
#define HANDLE_KINDS(X)                 \
	X(RUN, "runs")                  \
	X(FRAME, "frames")              \
	X(COMPILE, "compiles")          \
	X(BREAK, "graph_breaks")        \
	X(MINIFY, "minify_sessions")

enum handle_kind {
#define X(kind, table) H_##kind,
	HANDLE_KINDS(X)
#undef X
	H_COUNT
};

/* the largest id of each table, in one snapshot */
static const char max_ids_sql[] = "SELECT"
#define X(kind, table) " (SELECT coalesce(max(id), 0) FROM " table "),"
	HANDLE_KINDS(X)
#undef X
	" 0";

/* A counter row waiting to be queued: frames (calls, cache_hits,
 * eager_calls, eager_reason) or graph_breaks (hits), by handle. */
struct counter {
	int64_t id;
	int64_t v[DB_COUNTERS];
	char *reason;
	bool dirty;
};

/* Counters by handle: a dense array in order of first use, and an open
 * addressing index into it (slot = position + 1, 0 = empty). */
struct counters {
	struct counter *e;
	size_t n, cap;
	uint32_t *slot;
	size_t nslots;   /* a power of two, more than twice n */
	size_t ndirty;
};

/* int64 -> int64, open addressing: frame_index -> handle on the caller's
 * side, handle -> row id on the thread's. */
struct idmap_entry {
	int64_t key, value;
	bool used;
};
struct idmap {
	struct idmap_entry *e;
	size_t n, cap;   /* cap: 0 or a power of two, more than twice n */
};

/* A counter value going out with a job. */
struct job_count {
	enum handle_kind kind;   /* H_FRAME or H_BREAK */
	int64_t handle;
	int64_t v[DB_COUNTERS];
	const char *reason;
};

/* One queued event: a single malloc'd block that holds the job, the event's
 * copy, and every array and string the copy points at. */
struct job {
	struct job *next;
	void (*write)(struct db_writer *w, struct job *j); /* on the writer thread */
	size_t size;
	int64_t handle;          /* the row's handle; for minify steps and ends, their session's */
	int64_t first_break;     /* a compile's breaks get first_break, first_break + 1, ... */
	int exit_status;         /* db_end_run */
	int ncounts;
	struct job_count *counts; /* counters that go out in the job's transaction */
	union {
		struct db_run run;
		struct db_frame frame;
		struct db_compile compile;
		struct db_minify minify;
		struct db_minify_step step;
		struct db_minify_end end;
		struct {
			const char *path, *text;
		} source;
	} u;
};

struct db_ops {
	const char *name;
	/* id slots return the new row's handle, or 0 after a failure (reported) */
	int64_t (*begin_run)(struct db_writer *w, const struct db_run *run);
	void (*end_run)(struct db_writer *w, int exit_status);
	void (*log_source)(struct db_writer *w, const char *path, const char *text);
	int64_t (*log_frame)(struct db_writer *w, const struct db_frame *f);
	void (*frame_counts)(struct db_writer *w, int64_t frame_id, const int64_t v[DB_COUNTERS], const char *reason);
	int64_t (*log_compile)(struct db_writer *w, const struct db_compile *c, int64_t *break_ids);
	void (*break_hits)(struct db_writer *w, int64_t break_id, int64_t hits);
	int64_t (*begin_minify)(struct db_writer *w, const struct db_minify *m);
	void (*log_minify_step)(struct db_writer *w, int64_t session_id, const struct db_minify_step *s);
	void (*end_minify)(struct db_writer *w, int64_t session_id, const struct db_minify_end *e);
	void (*close)(struct db_writer *w);
};

struct db_writer {
	const struct db_ops *ops;
	int64_t last_id;        /* the largest id handed out: null ids continue after it */
	bool is_static;
	char *path;
	_Atomic(char *) error;  /* the failure reported, or NULL: set once, by either side */
	atomic_bool reported;   /* the one report was made */

	/* The caller's side: the program's thread (one at a time, as for any
	 * writer). */
	bool foreign;           /* a child after fork(): the thread and connection are the parent's */
	bool run_open;          /* db_begin_run without db_end_run yet */
	int64_t next[H_COUNT];  /* the last handle of each kind */
	struct idmap frame_handles; /* frame_index -> handle, this run */
	struct counters frames, breaks;
	double last_flush;      /* monotonic seconds: when counters last went out */

	/* The queue, under mu. */
	pthread_mutex_t mu;
	pthread_cond_t wake;    /* for the thread: a job came, or stop */
	pthread_cond_t written; /* for the callers: a job was written */
	struct job *head, *tail;
	uint64_t nqueued, nwritten; /* jobs ever queued, ever done (written or discarded) */
	size_t queued_bytes;
	bool stop;
	atomic_bool failed;     /* the thread failed, or a misuse: the caller stops queuing */
	bool opened;            /* an SQLite writer: in the registry, with its locks */
	bool has_thread;        /* the writer thread runs (it starts with the first compile) */
	bool no_thread;         /* it could not start: the caller's thread writes */
	pthread_t thread;
	struct db_writer *next_open; /* the registry of open writers */

	/* The writer thread's side. */
	pthread_mutex_t busy;   /* held while a job is written: fork() waits for it */
	bool dead;              /* the connection failed and is closed: jobs are discarded */
	sqlite3 *db;
	pid_t pid;              /* the process that opened db */
	int64_t run_id;         /* the current run's row, 0 before db_begin_run */
	sqlite3_stmt *stmt[STMT_COUNT];
	struct idmap rows[H_COUNT]; /* handle -> row id */
};

static const struct db_ops null_ops = {.name = "null"};
static const struct db_ops queue_ops;

/* what a NULL writer, or a failed allocation of a null writer, stands for */
static struct db_writer fallback_writer = {.ops = &null_ops, .is_static = true};

/* --- small helpers --- */

__attribute__((format(printf, 1, 2))) static char *format(const char *fmt, ...)
{
	char *s = NULL;
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	return s;
}

static double wall_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double mono_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static bool same_str(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

void db_hash_text(const char *text, char out[17])
{
	static const char hex[] = "0123456789abcdef";
	uint64_t h = hash_fnv1a_str(text);
	for (int i = 15; i >= 0; i--, h >>= 4)
		out[i] = hex[h & 15];
	out[16] = '\0';
}

const char *db_default_path(const char *flag_value)
{
	if (flag_value && *flag_value)
		return flag_value;
	const char *env = getenv("TJIT_DB");
	if (env && *env)
		return env;
	return "tjit.db";
}

/* Reports the first failure of w once, from either side, and tells the
 * caller's side to stop queuing. */
static void report(struct db_writer *w, const char *what, const char *why)
{
	char *msg = format("%s: %s: %s", w->path, what, why);
	if (!atomic_exchange(&w->reported, true)) {
		fprintf(stderr, "tjit: database: %s\n", msg ? msg : what);
		atomic_store(&w->error, msg);
	} else {
		free(msg);
	}
	atomic_store(&w->failed, true);
}

/* --- counters (the caller's side) --- */

static uint32_t *counters_find_slot(uint32_t *slot, size_t nslots, const struct counter *e, int64_t id)
{
	size_t mask = nslots - 1;
	size_t i = (size_t)(((uint64_t)id * 0x9e3779b97f4a7c15u) >> 32) & mask;
	while (slot[i] && e[slot[i] - 1].id != id)
		i = (i + 1) & mask;
	return &slot[i];
}

/* The counter of handle id, created (zero, not dirty) on first use; NULL
 * when out of memory. */
static struct counter *counters_get(struct counters *t, int64_t id)
{
	if (t->nslots) {
		uint32_t *s = counters_find_slot(t->slot, t->nslots, t->e, id);
		if (*s)
			return &t->e[*s - 1];
	}
	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 16;
		struct counter *e = realloc(t->e, cap * sizeof *e);
		if (!e)
			return NULL;
		t->e = e;
		t->cap = cap;
	}
	if (2 * (t->n + 1) > t->nslots) {
		size_t nslots = t->nslots ? 2 * t->nslots : 32;
		uint32_t *slot = calloc(nslots, sizeof *slot);
		if (!slot)
			return NULL;
		for (size_t i = 0; i < t->n; i++)
			*counters_find_slot(slot, nslots, t->e, t->e[i].id) = (uint32_t)i + 1;
		free(t->slot);
		t->slot = slot;
		t->nslots = nslots;
	}
	struct counter *c = &t->e[t->n++];
	*c = (struct counter){.id = id};
	*counters_find_slot(t->slot, t->nslots, t->e, id) = (uint32_t)t->n;
	return c;
}

static void counters_release(struct counters *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->e[i].reason);
	free(t->e);
	free(t->slot);
	*t = (struct counters){0};
}

/* --- idmap --- */

static size_t idmap_home(int64_t key, size_t cap)
{
	return (size_t)(((uint64_t)key * 0x9e3779b97f4a7c15u) >> 32) & (cap - 1);
}

static struct idmap_entry *idmap_find(const struct idmap *m, int64_t key)
{
	if (!m->cap)
		return NULL;
	for (size_t i = idmap_home(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
		if (!m->e[i].used)
			return NULL;
		if (m->e[i].key == key)
			return &m->e[i];
	}
}

/* The value of key, or 0. */
static int64_t idmap_get(const struct idmap *m, int64_t key)
{
	const struct idmap_entry *e = idmap_find(m, key);
	return e ? e->value : 0;
}

static void idmap_insert(struct idmap_entry *e, size_t cap, struct idmap_entry v)
{
	size_t i = idmap_home(v.key, cap);
	while (e[i].used)
		i = (i + 1) & (cap - 1);
	e[i] = v;
}

/* false when out of memory */
static bool idmap_put(struct idmap *m, int64_t key, int64_t value)
{
	struct idmap_entry *found = idmap_find(m, key);
	if (found) {
		found->value = value;
		return true;
	}
	if (2 * (m->n + 1) > m->cap) {
		size_t cap = m->cap ? 2 * m->cap : 64;
		struct idmap_entry *e = calloc(cap, sizeof *e);
		if (!e)
			return false;
		for (size_t i = 0; i < m->cap; i++)
			if (m->e[i].used)
				idmap_insert(e, cap, m->e[i]);
		free(m->e);
		m->e = e;
		m->cap = cap;
	}
	idmap_insert(m->e, m->cap, (struct idmap_entry){key, value, true});
	m->n++;
	return true;
}

static void idmap_clear(struct idmap *m)
{
	if (m->cap)
		memset(m->e, 0, m->cap * sizeof *m->e);
	m->n = 0;
}

static void idmap_release(struct idmap *m)
{
	free(m->e);
	*m = (struct idmap){0};
}

/* --- the writer thread: failing, statements, rows --- */

/* Forgets the connection; closes it unless it belongs to another process. */
static void drop_connection(struct db_writer *w, bool close_it)
{
	if (close_it) {
		for (int i = 0; i < STMT_COUNT; i++)
			sqlite3_finalize(w->stmt[i]);
		sqlite3_close_v2(w->db);
	}
	memset(w->stmt, 0, sizeof w->stmt);
	w->db = NULL;
}

/* Reports the failure (once), rolls back, closes the connection; the jobs
 * that follow are discarded and the caller's side turns null. why NULL:
 * SQLite's own message. */
static void fail(struct db_writer *w, const char *what, const char *why)
{
	if (w->dead)
		return;
	report(w, what, why ? why : w->db ? sqlite3_errmsg(w->db) : "no connection");
	if (w->db && !sqlite3_get_autocommit(w->db))
		sqlite3_exec(w->db, "ROLLBACK", NULL, NULL, NULL);
	drop_connection(w, true);
	w->dead = true;
}

/* A row being bound and written: bind errors stick until row_run. */
struct row {
	struct db_writer *w;
	sqlite3_stmt *st;
	int col;
	int rc;
};

static struct row row_start(struct db_writer *w, enum stmt s)
{
	struct row r = {.w = w, .rc = SQLITE_OK};
	if (!w->stmt[s])
		r.rc = sqlite3_prepare_v3(w->db, stmt_sql[s], -1, SQLITE_PREPARE_PERSISTENT, &w->stmt[s], NULL);
	r.st = w->stmt[s];
	return r;
}

/* a nullable text column */
static void put_text(struct row *r, const char *s)
{
	if (r->rc == SQLITE_OK)
		r->rc = s ? sqlite3_bind_text(r->st, ++r->col, s, -1, SQLITE_STATIC) : sqlite3_bind_null(r->st, ++r->col);
}

/* a NOT NULL text column: NULL is stored as '' rather than losing the row */
static void put_str(struct row *r, const char *s)
{
	put_text(r, s ? s : "");
}

static void put_int(struct row *r, int64_t v)
{
	if (r->rc == SQLITE_OK)
		r->rc = sqlite3_bind_int64(r->st, ++r->col, v);
}

static void put_int_if(struct row *r, bool present, int64_t v)
{
	if (r->rc == SQLITE_OK)
		r->rc = present ? sqlite3_bind_int64(r->st, ++r->col, v) : sqlite3_bind_null(r->st, ++r->col);
}

static void put_real(struct row *r, double v)
{
	if (r->rc == SQLITE_OK)
		r->rc = sqlite3_bind_double(r->st, ++r->col, v);
}

/* Runs the statement; true when it went through, with the new row's id in
 * *id when id is not NULL. */
static bool row_run(struct row *r, int64_t *id)
{
	if (r->rc != SQLITE_OK)
		return false;
	int rc = sqlite3_step(r->st);
	if (rc == SQLITE_DONE && id)
		*id = sqlite3_last_insert_rowid(r->w->db);
	if (rc == SQLITE_DONE) {
		sqlite3_reset(r->st);
		return true;
	}
	r->rc = rc;
	sqlite3_reset(r->st);
	return false;
}

static bool run_stmt(struct db_writer *w, enum stmt s)
{
	struct row r = row_start(w, s);
	return row_run(&r, NULL);
}

static bool begin(struct db_writer *w)
{
	return run_stmt(w, STMT_begin);
}

static bool commit(struct db_writer *w)
{
	return run_stmt(w, STMT_commit);
}

/* Stores text under its hash (kept in hash). */
static bool insert_source(struct db_writer *w, const char *path, const char *text, char hash[17])
{
	db_hash_text(text, hash);
	struct row r = row_start(w, STMT_insert_source);
	put_text(&r, hash);
	put_str(&r, path);
	put_text(&r, text);
	return row_run(&r, NULL);
}

/* The row of a handle; a value that is no handle of this writer is taken
 * as a row id, as the caller gave it. */
static int64_t row_of(struct db_writer *w, enum handle_kind k, int64_t handle)
{
	int64_t id = idmap_get(&w->rows[k], handle);
	return id ? id : handle;
}

/* Writes the job's counters, inside the caller's transaction. A counter
 * of a row that was never written (no handle of this writer) is dropped. */
static bool write_counts(struct db_writer *w, const struct job *j)
{
	for (int i = 0; i < j->ncounts; i++) {
		const struct job_count *c = &j->counts[i];
		int64_t id = idmap_get(&w->rows[c->kind], c->handle);
		if (!id)
			continue;
		struct row r = row_start(w, c->kind == H_FRAME ? STMT_frame_counts : STMT_break_hits);
		put_int(&r, c->v[0]);
		if (c->kind == H_FRAME) {
			put_int(&r, c->v[1]);
			put_int(&r, c->v[2]);
			put_int(&r, c->v[3]);
			put_int(&r, c->v[4]);
			put_text(&r, c->reason);
		}
		put_int(&r, id);
		if (!row_run(&r, NULL))
			return false;
	}
	return true;
}

static bool need_run(struct db_writer *w, const char *what)
{
	if (w->run_id)
		return true;
	fail(w, what, "no run begun (db_begin_run)");
	return false;
}

/* --- the writer thread: events, one job each --- */

static void write_begin_run(struct db_writer *w, struct job *j)
{
	const struct db_run *run = &j->u.run;
	char hash[17];
	int64_t id = 0;
	struct row r;
	if (!begin(w) || !write_counts(w, j))
		goto fail;
	if (run->source_text && !insert_source(w, run->program, run->source_text, hash))
		goto fail;
	r = row_start(w, STMT_insert_run);
	put_str(&r, run->tool);
	put_str(&r, run->command);
	put_str(&r, run->program);
	put_text(&r, run->source_text ? hash : NULL);
	put_text(&r, run->backend);
	put_str(&r, run->config);
	put_int(&r, (int64_t)w->pid);
	put_real(&r, run->started_at > 0 ? run->started_at : wall_now());
	if (!row_run(&r, &id) || !commit(w))
		goto fail;
	w->run_id = id;
	return;
fail:
	fail(w, "cannot log the run", NULL);
}

static void write_end_run(struct db_writer *w, struct job *j)
{
	if (!w->run_id)
		return;
	struct row r;
	if (!begin(w) || !write_counts(w, j))
		goto fail;
	r = row_start(w, STMT_end_run);
	put_real(&r, wall_now());
	put_int(&r, j->exit_status);
	put_int(&r, w->run_id);
	if (!row_run(&r, NULL) || !commit(w))
		goto fail;
	w->run_id = 0;
	return;
fail:
	fail(w, "cannot end the run", NULL);
}

static void write_source(struct db_writer *w, struct job *j)
{
	char hash[17];
	if (!insert_source(w, j->u.source.path, j->u.source.text, hash))
		fail(w, "cannot log a source", NULL);
}

static void write_frame(struct db_writer *w, struct job *j)
{
	const struct db_frame *f = &j->u.frame;
	if (!need_run(w, "cannot log a frame"))
		return;
	int64_t id = 0;
	struct row r = row_start(w, STMT_insert_frame);
	put_int(&r, w->run_id);
	put_int(&r, f->frame_index);
	put_str(&r, f->function);
	put_str(&r, f->file);
	put_int(&r, f->line);
	put_int(&r, f->resume_pc);
	put_int_if(&r, f->resume_line > 0, f->resume_line);
	if (!row_run(&r, NULL))
		goto fail;
	if (sqlite3_changes(w->db) == 1) {
		id = sqlite3_last_insert_rowid(w->db);
	} else {
		/* logged before in this run: its first row */
		r = row_start(w, STMT_find_frame);
		put_int(&r, w->run_id);
		put_int(&r, f->frame_index);
		if (r.rc == SQLITE_OK && (r.rc = sqlite3_step(r.st)) == SQLITE_ROW) {
			id = sqlite3_column_int64(r.st, 0);
			r.rc = SQLITE_OK;
		}
		if (r.st)
			sqlite3_reset(r.st);
		if (r.rc != SQLITE_OK || !id)
			goto fail;
	}
	if (!idmap_put(&w->rows[H_FRAME], j->handle, id))
		fail(w, "cannot log a frame", "out of memory");
	return;
fail:
	fail(w, "cannot log a frame", NULL);
}

/* the counters on their own, once a second or at close */
static void write_counters(struct db_writer *w, struct job *j)
{
	if (!begin(w) || !write_counts(w, j) || !commit(w))
		fail(w, "cannot write the counters", NULL);
}

static bool insert_graph(struct db_writer *w, int64_t compile_id, const struct db_graph *g, int64_t *id)
{
	int64_t graph_id = 0;
	struct row r = row_start(w, STMT_insert_graph);
	put_int(&r, compile_id);
	put_str(&r, g->stage);
	put_str(&r, g->name);
	put_int(&r, g->op_count);
	put_str(&r, g->listing);
	if (!row_run(&r, &graph_id))
		return false;
	*id = graph_id;
	for (int i = 0; i < g->nnodes; i++) {
		const struct db_node *n = &g->nodes[i];
		r = row_start(w, STMT_insert_node);
		put_int(&r, graph_id);
		put_int(&r, i);
		put_str(&r, n->name);
		put_str(&r, n->kind);
		put_text(&r, n->op);
		put_str(&r, n->args);
		put_text(&r, n->dtype);
		put_text(&r, n->shape);
		put_text(&r, n->file);
		put_int_if(&r, n->file, n->line);
		put_int_if(&r, n->file, n->col);
		put_text(&r, n->user_stack);
		if (!row_run(&r, NULL))
			return false;
	}
	for (int i = 0; i < g->nkernels; i++) {
		const struct db_kernel *k = &g->kernels[i];
		r = row_start(w, STMT_insert_kernel);
		put_int(&r, graph_id);
		put_int(&r, i);
		put_str(&r, k->name);
		put_str(&r, k->kind);
		put_str(&r, k->hash);
		put_str(&r, k->fused_nodes);
		put_str(&r, k->loop_ir);
		put_text(&r, k->llvm_ir);
		put_int(&r, k->cache_hit != 0);
		put_real(&r, k->codegen_ms);
		if (!row_run(&r, NULL))
			return false;
	}
	return true;
}

/* the tensors c's forward graph (graph_id) saves for backward */
static bool insert_saved(struct db_writer *w, int64_t compile_id, int64_t graph_id, const struct db_compile *c)
{
	for (int i = 0; i < c->nsaved; i++) {
		const struct db_saved *s = &c->saved[i];
		struct row r = row_start(w, STMT_insert_saved);
		put_int(&r, compile_id);
		put_int(&r, i);
		put_int(&r, graph_id);
		put_int(&r, s->node);
		put_str(&r, s->name);
		put_text(&r, s->dtype);
		put_text(&r, s->shape);
		put_int(&r, s->bytes);
		if (!row_run(&r, NULL))
			return false;
	}
	return true;
}

static void write_compile(struct db_writer *w, struct job *j)
{
	const struct db_compile *c = &j->u.compile;
	const char *why = NULL;
	if (!need_run(w, "cannot log a compile"))
		return;
	int64_t id = 0;
	struct row r;
	if (!begin(w))
		goto fail;
	r = row_start(w, STMT_insert_compile);
	put_int(&r, w->run_id);
	put_int(&r, row_of(w, H_FRAME, c->frame_id));
	put_str(&r, c->compile_id);
	put_int(&r, c->compile_index);
	put_str(&r, c->reason);
	put_str(&r, c->backend);
	put_text(&r, c->dynamic);
	put_real(&r, c->started_at);
	put_real(&r, c->trace_ms);
	put_real(&r, c->guard_ms);
	put_real(&r, c->backend_ms);
	put_real(&r, c->total_ms);
	put_str(&r, c->outcome);
	put_int(&r, c->op_count);
	put_text(&r, c->error);
	put_int_if(&r, c->partitioned, c->saved_bytes);
	if (!row_run(&r, &id))
		goto fail;
	for (int i = 0; i < c->nguards; i++) {
		const struct db_guard *g = &c->guards[i];
		r = row_start(w, STMT_insert_guard);
		put_int(&r, id);
		put_int(&r, i);
		put_str(&r, g->kind);
		put_str(&r, g->text);
		put_text(&r, g->file);
		put_int_if(&r, g->file, g->line);
		put_int_if(&r, g->file, g->col);
		if (!row_run(&r, NULL))
			goto fail;
	}
	for (int i = 0; i < c->nfailures; i++) {
		const struct db_guard_failure *f = &c->failures[i];
		r = row_start(w, STMT_insert_failure);
		put_int(&r, w->run_id);
		put_int(&r, id);
		put_str(&r, f->failed_compile);
		put_str(&r, f->guard_text);
		put_str(&r, f->value_seen);
		if (!row_run(&r, NULL))
			goto fail;
	}
	for (int i = 0; i < c->nbreaks; i++) {
		const struct db_break *b = &c->breaks[i];
		int64_t break_id = 0;
		r = row_start(w, STMT_insert_break);
		put_int(&r, w->run_id);
		put_int(&r, id);
		put_str(&r, b->code);
		put_str(&r, b->category);
		put_str(&r, b->message);
		put_str(&r, b->file);
		put_int(&r, b->line);
		put_int(&r, b->col);
		put_int(&r, b->pc);
		put_str(&r, b->user_stack);
		if (!row_run(&r, &break_id))
			goto fail;
		if (!idmap_put(&w->rows[H_BREAK], j->first_break + i, break_id)) {
			why = "out of memory";
			goto fail;
		}
	}
	for (int i = 0; i < c->ngraphs; i++) {
		int64_t graph_id = 0;
		if (!insert_graph(w, id, &c->graphs[i], &graph_id))
			goto fail;
		if (c->partitioned && i == c->saved_graph && !insert_saved(w, id, graph_id, c))
			goto fail;
	}
	for (int i = 0; i < c->nphases; i++) {
		const struct db_phase *ph = &c->phases[i];
		r = row_start(w, STMT_insert_phase);
		put_int(&r, id);
		put_int(&r, i);
		put_str(&r, ph->name);
		put_int_if(&r, ph->parent >= 0, ph->parent);
		put_real(&r, ph->ms);
		if (!row_run(&r, NULL))
			goto fail;
	}
	r = row_start(w, STMT_count_compile);
	put_int(&r, c->op_count > 0);
	put_int(&r, c->outcome && strcmp(c->outcome, "graph_break") == 0);
	put_int(&r, c->reason && strcmp(c->reason, "recompile") == 0);
	put_int(&r, w->run_id);
	if (!row_run(&r, NULL))
		goto fail;
	if (!write_counts(w, j) || !commit(w))
		goto fail;
	return;
fail:;
	char *what = format("cannot log compile %s", c->compile_id ? c->compile_id : "?");
	fail(w, what ? what : "cannot log a compile", why);
	free(what);
}

static void write_begin_minify(struct db_writer *w, struct job *j)
{
	const struct db_minify *m = &j->u.minify;
	const char *why = NULL;
	if (!need_run(w, "cannot log a minifier session"))
		return;
	char hash[17];
	int64_t id = 0;
	struct row r;
	if (!begin(w))
		goto fail;
	if (m->source_text && !insert_source(w, m->program, m->source_text, hash))
		goto fail;
	r = row_start(w, STMT_insert_minify);
	put_int(&r, w->run_id);
	put_str(&r, m->program);
	put_text(&r, m->source_text ? hash : NULL);
	put_text(&r, m->backend);
	put_str(&r, m->failure);
	put_real(&r, m->started_at);
	if (!row_run(&r, &id) || !commit(w))
		goto fail;
	if (!idmap_put(&w->rows[H_MINIFY], j->handle, id)) {
		why = "out of memory";
		goto fail;
	}
	return;
fail:
	fail(w, "cannot log a minifier session", why);
}

static void write_minify_step(struct db_writer *w, struct job *j)
{
	const struct db_minify_step *s = &j->u.step;
	struct row r = row_start(w, STMT_insert_minify_step);
	put_int(&r, row_of(w, H_MINIFY, j->handle));
	put_str(&r, s->phase);
	put_str(&r, s->candidate);
	put_int_if(&r, s->nodes >= 0, s->nodes);
	put_str(&r, s->outcome);
	put_real(&r, s->ms);
	if (!row_run(&r, NULL))
		fail(w, "cannot log a minifier step", NULL);
}

static void write_end_minify(struct db_writer *w, struct job *j)
{
	const struct db_minify_end *e = &j->u.end;
	char hash[17];
	struct row r;
	if (!begin(w))
		goto fail;
	if (e->repro_text && !insert_source(w, e->repro_path ? e->repro_path : "", e->repro_text, hash))
		goto fail;
	r = row_start(w, STMT_end_minify);
	put_real(&r, wall_now());
	put_text(&r, e->stage);
	put_text(&r, e->result);
	put_text(&r, e->repro_path);
	put_text(&r, e->repro_text ? hash : NULL);
	put_int(&r, row_of(w, H_MINIFY, j->handle));
	if (!row_run(&r, NULL) || !commit(w))
		goto fail;
	return;
fail:
	fail(w, "cannot end a minifier session", NULL);
}

/* --- the writer thread, the registry of open writers, crashes, fork --- */

/* jobs queued and not yet done, over every writer of the process: what a
 * crash waits for */
static atomic_long pending_jobs;
static _Thread_local bool on_writer_thread;

static void *writer_main(void *arg)
{
	struct db_writer *w = arg;
	on_writer_thread = true;
#ifdef SCHED_BATCH
	/* Waking the thread must not take the CPU from the program's thread.
	 * Under the default policy, 100 compiles 1 ms apart spent 15 ms in
	 * db_log_compile (some calls waited ~0.9 ms: the thread preempted
	 * them for its whole transaction); as a batch thread, which a wakeup
	 * never lets preempt, 1.1 ms. The thread then lags a little more when
	 * the CPUs are busy (its queue drains at a tick or a free CPU). */
	pthread_setschedparam(pthread_self(), SCHED_BATCH, &(struct sched_param){0});
#endif
	pthread_mutex_lock(&w->mu);
	for (;;) {
		while (!w->head && !w->stop)
			pthread_cond_wait(&w->wake, &w->mu);
		/* the job stays first in the queue until it is written, so
		 * that a child of fork() finds (and frees) it there */
		struct job *j = w->head;
		if (!j)
			break;
		pthread_mutex_unlock(&w->mu);

		pthread_mutex_lock(&w->busy);
		if (!w->dead)
			j->write(w, j);
		pthread_mutex_unlock(&w->busy);

		pthread_mutex_lock(&w->mu);
		w->head = j->next;
		if (!w->head)
			w->tail = NULL;
		w->nwritten++;
		w->queued_bytes -= j->size;
		atomic_fetch_sub(&pending_jobs, 1);
		pthread_cond_broadcast(&w->written);
		free(j);
	}
	pthread_mutex_unlock(&w->mu);
	pthread_mutex_lock(&w->busy);
	if (w->db)
		drop_connection(w, true);
	pthread_mutex_unlock(&w->busy);
	return NULL;
}

static pthread_mutex_t registry_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t registry_once = PTHREAD_ONCE_INIT;
static struct db_writer *registry; /* the SQLite writers open in this process */

static const int crash_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
#define NCRASH_SIGNALS (sizeof crash_signals / sizeof crash_signals[0])
static struct sigaction crash_saved[NCRASH_SIGNALS]; /* the actions before ours */
static volatile sig_atomic_t crash_pid;             /* the process the handler waits in */

/* A crash: let the writer threads finish their queues (unless this is one
 * of them, or a child that has none), then die of the signal as before.
 * Async-signal-safe calls only. */
static void on_crash(int sig, siginfo_t *info, void *context)
{
	int saved_errno = errno;
	if (!on_writer_thread && crash_pid == getpid()) {
		struct timespec pause = {0, CRASH_POLL_MS * 1000 * 1000};
		for (int waited = 0; atomic_load(&pending_jobs) > 0 && waited < CRASH_WAIT_MS; waited += CRASH_POLL_MS)
			nanosleep(&pause, NULL);
	}
	for (size_t i = 0; i < NCRASH_SIGNALS; i++)
		if (crash_signals[i] == sig)
			sigaction(sig, &crash_saved[i], NULL);
	/* A fault comes again when we return, with its address, to the action
	 * before ours; a signal that was sent (raise, abort, kill) must be
	 * sent again: it stays blocked until we return. */
	if (!info || info->si_code <= 0)
		raise(sig);
	errno = saved_errno;
}

static void crash_handlers_install(void)
{
	struct sigaction sa = {.sa_sigaction = on_crash, .sa_flags = SA_SIGINFO | SA_ONSTACK};
	sigfillset(&sa.sa_mask);
	crash_pid = getpid();
	for (size_t i = 0; i < NCRASH_SIGNALS; i++)
		sigaction(crash_signals[i], &sa, &crash_saved[i]);
}

/* puts back the actions we replaced, unless someone replaced ours since */
static void crash_handlers_restore(void)
{
	for (size_t i = 0; i < NCRASH_SIGNALS; i++) {
		struct sigaction now;
		if (sigaction(crash_signals[i], NULL, &now) == 0 && (now.sa_flags & SA_SIGINFO) &&
		    now.sa_sigaction == on_crash)
			sigaction(crash_signals[i], &crash_saved[i], NULL);
	}
}

/* fork(): wait until every thread is between two jobs, with its queue
 * still. */
static void fork_prepare(void)
{
	pthread_mutex_lock(&registry_mu);
	for (struct db_writer *w = registry; w; w = w->next_open) {
		pthread_mutex_lock(&w->busy);
		pthread_mutex_lock(&w->mu);
	}
}

static void fork_parent(void)
{
	for (struct db_writer *w = registry; w; w = w->next_open) {
		pthread_mutex_unlock(&w->mu);
		pthread_mutex_unlock(&w->busy);
	}
	pthread_mutex_unlock(&registry_mu);
}

/* The child has no writer thread: its writers turn null, their queues are
 * the parent's business, and a crash has nothing to wait for. */
static void fork_child(void)
{
	for (struct db_writer *w = registry; w; w = w->next_open) {
		pthread_mutex_unlock(&w->mu);
		pthread_mutex_unlock(&w->busy);
		w->foreign = true;
	}
	if (registry)
		crash_handlers_restore();
	registry = NULL;
	atomic_store(&pending_jobs, 0);
	pthread_mutex_unlock(&registry_mu);
}

/* exit() without db_close: the queues still reach the file */
static void drain_at_exit(void)
{
	pthread_mutex_lock(&registry_mu);
	for (struct db_writer *w = registry; w; w = w->next_open)
		db_flush(w);
	pthread_mutex_unlock(&registry_mu);
}

static void registry_init(void)
{
	pthread_atfork(fork_prepare, fork_parent, fork_child);
	atexit(drain_at_exit);
}

/* w's locks, and its place in the registry (the first writer installs the
 * crash handlers) */
static void registry_add(struct db_writer *w)
{
	pthread_mutex_init(&w->mu, NULL);
	pthread_mutex_init(&w->busy, NULL);
	pthread_cond_init(&w->wake, NULL);
	pthread_cond_init(&w->written, NULL);
	pthread_once(&registry_once, registry_init);
	pthread_mutex_lock(&registry_mu);
	if (!registry)
		crash_handlers_install();
	w->next_open = registry;
	registry = w;
	pthread_mutex_unlock(&registry_mu);
}

static void registry_remove(struct db_writer *w)
{
	pthread_mutex_lock(&registry_mu);
	for (struct db_writer **p = &registry; *p; p = &(*p)->next_open) {
		if (*p == w) {
			*p = w->next_open;
			break;
		}
	}
	if (!registry)
		crash_handlers_restore();
	pthread_mutex_unlock(&registry_mu);
	pthread_cond_destroy(&w->wake);
	pthread_cond_destroy(&w->written);
	pthread_mutex_destroy(&w->mu);
	pthread_mutex_destroy(&w->busy);
}

/* Starts the writer thread of w, which takes over the connection. */
static bool thread_start(struct db_writer *w)
{
	/* the program's signals (SIGINT, SIGPIPE, timers) stay with the
	 * program's threads */
	sigset_t all, old;
	sigfillset(&all);
	for (size_t i = 0; i < NCRASH_SIGNALS; i++)
		sigdelset(&all, crash_signals[i]);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = pthread_create(&w->thread, NULL, writer_main, w);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0)
		return false;
	w->has_thread = true;
	return true;
}

/* Waits for the queue, stops the thread (which closes the connection). */
static void thread_stop(struct db_writer *w)
{
	pthread_mutex_lock(&w->mu);
	w->stop = true;
	pthread_cond_signal(&w->wake);
	pthread_mutex_unlock(&w->mu);
	pthread_join(w->thread, NULL);
	w->has_thread = false;
}

/* --- the caller's side: events copied into jobs --- */

/* Copying an event into its job takes two passes over the same code: the
 * first, with base NULL, only adds up len; the second copies into base. */
struct pack {
	char *base;
	size_t len;
};

static void *pack_bytes(struct pack *p, const void *src, size_t n, size_t align)
{
	p->len = (p->len + align - 1) & ~(align - 1);
	void *dst = p->base ? p->base + p->len : NULL;
	if (dst && src)
		memcpy(dst, src, n);
	p->len += n;
	return dst;
}

static const char *pack_str(struct pack *p, const char *s)
{
	return s ? pack_bytes(p, s, strlen(s) + 1, 1) : NULL;
}

/* an array of n structs, copied as they are (their strings are packed
 * next, over the copy); NULL when there are none or while measuring */
static void *pack_array(struct pack *p, const void *src, int n, size_t size)
{
	return n > 0 ? pack_bytes(p, src, (size_t)n * size, _Alignof(max_align_t)) : NULL;
}

/* the string field f of *s into *d (d NULL while measuring) */
#define PACK_STR(p, d, s, f)                             \
	do {                                             \
		const char *packed_ = pack_str(p, (s)->f); \
		if (d)                                   \
			(d)->f = packed_;                \
	} while (0)

/* how many elements of an array the copy keeps: none when it is NULL */
static int count_of(const void *array, int n)
{
	return array && n > 0 ? n : 0;
}

static void copy_run(struct pack *p, struct job *j, const void *src)
{
	const struct db_run *s = src;
	struct db_run *d = j ? &j->u.run : NULL;
	if (d)
		*d = *s;
	PACK_STR(p, d, s, tool);
	PACK_STR(p, d, s, command);
	PACK_STR(p, d, s, program);
	PACK_STR(p, d, s, source_text);
	PACK_STR(p, d, s, backend);
	PACK_STR(p, d, s, config);
	if (d && d->started_at <= 0)
		d->started_at = wall_now();
}

static void copy_frame(struct pack *p, struct job *j, const void *src)
{
	const struct db_frame *s = src;
	struct db_frame *d = j ? &j->u.frame : NULL;
	if (d)
		*d = *s;
	PACK_STR(p, d, s, function);
	PACK_STR(p, d, s, file);
}

static void copy_source(struct pack *p, struct job *j, const void *src)
{
	const char *const *s = src; /* {path, text} */
	const char *path = pack_str(p, s[0]);
	const char *text = pack_str(p, s[1]);
	if (j) {
		j->u.source.path = path;
		j->u.source.text = text;
	}
}

static void copy_graph(struct pack *p, struct db_graph *d, const struct db_graph *s)
{
	PACK_STR(p, d, s, stage);
	PACK_STR(p, d, s, name);
	PACK_STR(p, d, s, listing);
	int nn = count_of(s->nodes, s->nnodes);
	struct db_node *nodes = pack_array(p, s->nodes, nn, sizeof *nodes);
	for (int i = 0; i < nn; i++) {
		struct db_node *dn = nodes ? &nodes[i] : NULL;
		const struct db_node *sn = &s->nodes[i];
		PACK_STR(p, dn, sn, name);
		PACK_STR(p, dn, sn, kind);
		PACK_STR(p, dn, sn, op);
		PACK_STR(p, dn, sn, args);
		PACK_STR(p, dn, sn, dtype);
		PACK_STR(p, dn, sn, shape);
		PACK_STR(p, dn, sn, file);
		PACK_STR(p, dn, sn, user_stack);
	}
	int nk = count_of(s->kernels, s->nkernels);
	struct db_kernel *kernels = pack_array(p, s->kernels, nk, sizeof *kernels);
	for (int i = 0; i < nk; i++) {
		struct db_kernel *dk = kernels ? &kernels[i] : NULL;
		const struct db_kernel *sk = &s->kernels[i];
		PACK_STR(p, dk, sk, name);
		PACK_STR(p, dk, sk, kind);
		PACK_STR(p, dk, sk, hash);
		PACK_STR(p, dk, sk, fused_nodes);
		PACK_STR(p, dk, sk, loop_ir);
		PACK_STR(p, dk, sk, llvm_ir);
	}
	if (d) {
		d->nnodes = nn;
		d->nodes = nodes;
		d->nkernels = nk;
		d->kernels = kernels;
	}
}

static void copy_compile(struct pack *p, struct job *j, const void *src)
{
	const struct db_compile *s = src;
	struct db_compile *d = j ? &j->u.compile : NULL;
	if (d) {
		*d = *s;
		if (d->started_at <= 0)
			d->started_at = wall_now();
	}
	PACK_STR(p, d, s, compile_id);
	PACK_STR(p, d, s, reason);
	PACK_STR(p, d, s, backend);
	PACK_STR(p, d, s, dynamic);
	PACK_STR(p, d, s, outcome);
	PACK_STR(p, d, s, error);

	int ng = count_of(s->guards, s->nguards);
	struct db_guard *guards = pack_array(p, s->guards, ng, sizeof *guards);
	for (int i = 0; i < ng; i++) {
		struct db_guard *dg = guards ? &guards[i] : NULL;
		PACK_STR(p, dg, &s->guards[i], kind);
		PACK_STR(p, dg, &s->guards[i], text);
		PACK_STR(p, dg, &s->guards[i], file);
	}
	int nf = count_of(s->failures, s->nfailures);
	struct db_guard_failure *failures = pack_array(p, s->failures, nf, sizeof *failures);
	for (int i = 0; i < nf; i++) {
		struct db_guard_failure *df = failures ? &failures[i] : NULL;
		PACK_STR(p, df, &s->failures[i], failed_compile);
		PACK_STR(p, df, &s->failures[i], guard_text);
		PACK_STR(p, df, &s->failures[i], value_seen);
	}
	int nb = count_of(s->breaks, s->nbreaks);
	struct db_break *breaks = pack_array(p, s->breaks, nb, sizeof *breaks);
	for (int i = 0; i < nb; i++) {
		struct db_break *db = breaks ? &breaks[i] : NULL;
		PACK_STR(p, db, &s->breaks[i], code);
		PACK_STR(p, db, &s->breaks[i], category);
		PACK_STR(p, db, &s->breaks[i], message);
		PACK_STR(p, db, &s->breaks[i], file);
		PACK_STR(p, db, &s->breaks[i], user_stack);
	}
	int ngr = count_of(s->graphs, s->ngraphs);
	struct db_graph *graphs = pack_array(p, s->graphs, ngr, sizeof *graphs);
	for (int i = 0; i < ngr; i++)
		copy_graph(p, graphs ? &graphs[i] : NULL, &s->graphs[i]);
	int nph = count_of(s->phases, s->nphases);
	struct db_phase *phases = pack_array(p, s->phases, nph, sizeof *phases);
	for (int i = 0; i < nph; i++)
		PACK_STR(p, phases ? &phases[i] : NULL, &s->phases[i], name);
	int ns = count_of(s->saved, s->nsaved);
	struct db_saved *saved = pack_array(p, s->saved, ns, sizeof *saved);
	for (int i = 0; i < ns; i++) {
		struct db_saved *ds = saved ? &saved[i] : NULL;
		PACK_STR(p, ds, &s->saved[i], name);
		PACK_STR(p, ds, &s->saved[i], dtype);
		PACK_STR(p, ds, &s->saved[i], shape);
	}
	if (d) {
		d->nsaved = ns;
		d->saved = saved;
		d->nphases = nph;
		d->phases = phases;
		d->nguards = ng;
		d->guards = guards;
		d->nfailures = nf;
		d->failures = failures;
		d->nbreaks = nb;
		d->breaks = breaks;
		d->ngraphs = ngr;
		d->graphs = graphs;
	}
}

static void copy_minify(struct pack *p, struct job *j, const void *src)
{
	const struct db_minify *s = src;
	struct db_minify *d = j ? &j->u.minify : NULL;
	if (d) {
		*d = *s;
		if (d->started_at <= 0)
			d->started_at = wall_now();
	}
	PACK_STR(p, d, s, program);
	PACK_STR(p, d, s, source_text);
	PACK_STR(p, d, s, backend);
	PACK_STR(p, d, s, failure);
}

static void copy_minify_step(struct pack *p, struct job *j, const void *src)
{
	const struct db_minify_step *s = src;
	struct db_minify_step *d = j ? &j->u.step : NULL;
	if (d)
		*d = *s;
	PACK_STR(p, d, s, phase);
	PACK_STR(p, d, s, candidate);
	PACK_STR(p, d, s, outcome);
}

static void copy_minify_end(struct pack *p, struct job *j, const void *src)
{
	const struct db_minify_end *s = src;
	struct db_minify_end *d = j ? &j->u.end : NULL;
	if (d)
		*d = *s;
	PACK_STR(p, d, s, stage);
	PACK_STR(p, d, s, result);
	PACK_STR(p, d, s, repro_path);
	PACK_STR(p, d, s, repro_text);
}

/* The dirty counters of one table into the job (and clean once copied). */
static void pack_counters(struct pack *p, struct job *j, struct counters *t, enum handle_kind kind)
{
	size_t left = t->ndirty;
	for (size_t i = 0; left && i < t->n; i++) {
		struct counter *c = &t->e[i];
		if (!c->dirty)
			continue;
		left--;
		const char *reason = pack_str(p, c->reason);
		if (j) {
			struct job_count *jc = &j->counts[j->ncounts++];
			*jc = (struct job_count){kind, c->id, {0}, reason};
			memcpy(jc->v, c->v, sizeof jc->v);
			c->dirty = false;
		}
	}
	if (j)
		t->ndirty = 0;
}

/* A job for the event src, with the dirty counters when with_counts; NULL
 * when out of memory (reported). */
static struct job *job_new(struct db_writer *w, void (*write)(struct db_writer *, struct job *),
			   void (*copy)(struct pack *, struct job *, const void *), const void *src, bool with_counts,
			   const char *what)
{
	size_t ncounts = with_counts ? w->frames.ndirty + w->breaks.ndirty : 0;
	struct pack p = {NULL, sizeof(struct job)};
	pack_array(&p, NULL, (int)ncounts, sizeof(struct job_count));
	if (with_counts) {
		pack_counters(&p, NULL, &w->frames, H_FRAME);
		pack_counters(&p, NULL, &w->breaks, H_BREAK);
	}
	if (copy)
		copy(&p, NULL, src);
	struct job *j = malloc(p.len);
	if (!j) {
		report(w, what, "out of memory");
		return NULL;
	}
	size_t size = p.len;
	p = (struct pack){(char *)j, sizeof(struct job)};
	*j = (struct job){.write = write, .size = size};
	j->counts = pack_array(&p, NULL, (int)ncounts, sizeof(struct job_count));
	if (with_counts) {
		pack_counters(&p, j, &w->frames, H_FRAME);
		pack_counters(&p, j, &w->breaks, H_BREAK);
		w->last_flush = mono_now();
	}
	if (copy)
		copy(&p, j, src);
	return j;
}

static void enqueue(struct db_writer *w, struct job *j)
{
	pthread_mutex_lock(&w->mu);
	while (w->queued_bytes > QUEUE_MAX_BYTES && w->head)
		pthread_cond_wait(&w->written, &w->mu);
	j->next = NULL;
	if (w->tail)
		w->tail->next = j;
	else
		w->head = j;
	w->tail = j;
	w->nqueued++;
	w->queued_bytes += j->size;
	atomic_fetch_add(&pending_jobs, 1);
	pthread_cond_signal(&w->wake);
	pthread_mutex_unlock(&w->mu);
}

/* Hands j to the writer thread. The thread starts with the first job
 * that asks for it (a frame, a compile, a minifier event): until then, and
 * if it cannot start, jobs are written here, on the caller's thread, so
 * that a run that never compiles costs what it did without a thread. */
static void submit(struct db_writer *w, struct job *j, bool start_thread)
{
	if (!w->has_thread && start_thread && !w->no_thread && !thread_start(w))
		w->no_thread = true;
	if (w->has_thread) {
		enqueue(w, j);
		return;
	}
	pthread_mutex_lock(&w->busy);
	if (!w->dead)
		j->write(w, j);
	pthread_mutex_unlock(&w->busy);
	free(j);
}

/* Copies the event and submits it; false when out of memory (reported). */
static bool queue(struct db_writer *w, void (*write)(struct db_writer *, struct job *),
		  void (*copy)(struct pack *, struct job *, const void *), const void *src, bool with_counts,
		  bool start_thread, int64_t handle, const char *what)
{
	struct job *j = job_new(w, write, copy, src, with_counts, what);
	if (!j)
		return false;
	j->handle = handle;
	submit(w, j, start_thread);
	return true;
}

/* the next handle of kind k */
static int64_t next_handle(struct db_writer *w, enum handle_kind k)
{
	return ++w->next[k];
}

/* A misuse is seen here, at once, not on the thread. */
static bool caller_needs_run(struct db_writer *w, const char *what)
{
	if (w->run_open)
		return true;
	report(w, what, "no run begun (db_begin_run)");
	return false;
}

static int64_t queue_begin_run(struct db_writer *w, const struct db_run *run)
{
	int64_t h = next_handle(w, H_RUN);
	if (!queue(w, write_begin_run, copy_run, run, true, false, h, "cannot log the run"))
		return 0;
	w->run_open = true;
	idmap_clear(&w->frame_handles);
	/* written here, the thread not started (a tool's first event): the
	 * run's own id, whoever else logs */
	if (!w->has_thread && !w->dead && w->run_id > 0) {
		h = w->run_id;
		if (h > w->next[H_RUN])
			w->next[H_RUN] = h;
	}
	return h;
}

static void queue_end_run(struct db_writer *w, int exit_status)
{
	if (!w->run_open)
		return;
	struct job *j = job_new(w, write_end_run, NULL, NULL, true, "cannot end the run");
	if (!j)
		return;
	j->exit_status = exit_status;
	submit(w, j, false);
	w->run_open = false;
}

static void queue_log_source(struct db_writer *w, const char *path, const char *text)
{
	const char *const pt[2] = {path, text};
	if (text)
		queue(w, write_source, copy_source, pt, false, false, 0, "cannot log a source");
}

static int64_t queue_log_frame(struct db_writer *w, const struct db_frame *f)
{
	if (!caller_needs_run(w, "cannot log a frame"))
		return 0;
	int64_t known = idmap_get(&w->frame_handles, f->frame_index);
	if (known)
		return known;
	int64_t h = next_handle(w, H_FRAME);
	if (!queue(w, write_frame, copy_frame, f, false, true, h, "cannot log a frame"))
		return 0;
	if (!idmap_put(&w->frame_handles, f->frame_index, h))
		report(w, "cannot log a frame", "out of memory");
	return h;
}

/* Keeps a counter in memory; queues them all once a second has passed. */
static void count(struct db_writer *w, struct counters *t, int64_t id, const int64_t v[DB_COUNTERS],
		  const char *reason)
{
	struct counter *c = counters_get(t, id);
	if (!c) {
		report(w, "cannot keep the counters", "out of memory");
		return;
	}
	if (memcmp(c->v, v, sizeof c->v) != 0 || !same_str(c->reason, reason)) {
		if (!same_str(c->reason, reason)) {
			char *copy = reason ? strdup(reason) : NULL;
			if (reason && !copy) {
				report(w, "cannot keep the counters", "out of memory");
				return;
			}
			free(c->reason);
			c->reason = copy;
		}
		memcpy(c->v, v, sizeof c->v);
		if (!c->dirty) {
			c->dirty = true;
			t->ndirty++;
		}
	}
	if (mono_now() - w->last_flush >= FLUSH_INTERVAL_S) {
		if (w->frames.ndirty || w->breaks.ndirty)
			queue(w, write_counters, NULL, NULL, true, false, 0, "cannot write the counters");
		w->last_flush = mono_now();
	}
}

static void queue_frame_counts(struct db_writer *w, int64_t frame_id, const int64_t v[DB_COUNTERS],
			       const char *reason)
{
	count(w, &w->frames, frame_id, v, reason);
}

static void queue_break_hits(struct db_writer *w, int64_t break_id, int64_t hits)
{
	const int64_t v[DB_COUNTERS] = {hits};
	count(w, &w->breaks, break_id, v, NULL);
}

static int64_t queue_log_compile(struct db_writer *w, const struct db_compile *c, int64_t *break_ids)
{
	if (!caller_needs_run(w, "cannot log a compile"))
		return 0;
	struct job *j = job_new(w, write_compile, copy_compile, c, true, "cannot log a compile");
	if (!j)
		return 0;
	j->handle = next_handle(w, H_COMPILE);
	j->first_break = w->next[H_BREAK] + 1;
	w->next[H_BREAK] += j->u.compile.nbreaks;
	for (int i = 0; break_ids && i < c->nbreaks; i++)
		break_ids[i] = i < j->u.compile.nbreaks ? j->first_break + i : 0;
	int64_t h = j->handle;
	submit(w, j, true);
	return h;
}

static int64_t queue_begin_minify(struct db_writer *w, const struct db_minify *m)
{
	if (!caller_needs_run(w, "cannot log a minifier session"))
		return 0;
	int64_t h = next_handle(w, H_MINIFY);
	return queue(w, write_begin_minify, copy_minify, m, false, true, h, "cannot log a minifier session") ? h : 0;
}

static void queue_log_minify_step(struct db_writer *w, int64_t session_id, const struct db_minify_step *s)
{
	queue(w, write_minify_step, copy_minify_step, s, false, true, session_id, "cannot log a minifier step");
}

static void queue_end_minify(struct db_writer *w, int64_t session_id, const struct db_minify_end *e)
{
	queue(w, write_end_minify, copy_minify_end, e, false, true, session_id, "cannot end a minifier session");
}

/* the counters left, before the thread stops */
static void queue_close(struct db_writer *w)
{
	if (w->frames.ndirty || w->breaks.ndirty)
		queue(w, write_counters, NULL, NULL, true, false, 0, "cannot write the counters");
}

static const struct db_ops queue_ops = {
	.name = "sqlite",
	.begin_run = queue_begin_run,
	.end_run = queue_end_run,
	.log_source = queue_log_source,
	.log_frame = queue_log_frame,
	.frame_counts = queue_frame_counts,
	.log_compile = queue_log_compile,
	.break_hits = queue_break_hits,
	.begin_minify = queue_begin_minify,
	.log_minify_step = queue_log_minify_step,
	.end_minify = queue_end_minify,
	.close = queue_close,
};

/* --- opening: settings, version, schema --- */

/* The integers of the one-row query sql (b and c may be NULL); false on
 * an SQLite error. */
static bool query_ints(sqlite3 *db, const char *sql, int64_t *a, int64_t *b, int64_t *c)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	if (rc == SQLITE_OK) {
		rc = sqlite3_step(st);
		if (rc == SQLITE_ROW) {
			*a = sqlite3_column_int64(st, 0);
			if (b)
				*b = sqlite3_column_int64(st, 1);
			if (c)
				*c = sqlite3_column_int64(st, 2);
			rc = SQLITE_OK;
		}
	}
	sqlite3_finalize(st);
	return rc == SQLITE_OK;
}

/* Why the last call on db failed (malloc'd): a file that is no SQLite
 * database, or a damaged one, said as such. */
static char *open_error(sqlite3 *db, const char *path)
{
	switch (sqlite3_errcode(db) & 0xff) {
	case SQLITE_NOTADB:
		return format("%s is not a tjit database (nor any SQLite database)", path);
	case SQLITE_CORRUPT:
		return format("%s is damaged: %s", path, sqlite3_errmsg(db));
	default:
		return format("%s: %s", path, sqlite3_errmsg(db));
	}
}

/* user_version, and refusal of a file that is newer or not ours: NULL, or
 * the reason (malloc'd). One statement, so one snapshot: a file that
 * another process creates meanwhile is seen before or after, never half. */
static char *check_version(sqlite3 *db, const char *path, int64_t *version)
{
	int64_t ntables = 0, ours = 0;
	if (!query_ints(db, "SELECT (SELECT user_version FROM pragma_user_version),"
			    " (SELECT count(*) FROM sqlite_master),"
			    " (SELECT count(*) FROM sqlite_master WHERE type = 'table'"
			    "  AND name IN (" DB_FIRST_TABLES "))",
			    version, &ntables, &ours))
		return open_error(db, path);
	if (*version > DB_SCHEMA_VERSION)
		return format("%s has schema version %lld, this tjit understands up to %d:"
			      " it needs a tjit that understands version %lld",
			      path, (long long)*version, DB_SCHEMA_VERSION, (long long)*version);
	if (*version == 0 && ntables > 0)
		return format("%s is not a tjit database (it has tables but no schema version)", path);
	if (*version > 0 && ours < DB_NFIRST_TABLES)
		return format("%s is not a tjit database (schema version %lld, but not tjit's tables)", path,
			      (long long)*version);
	return NULL;
}

/* WAL mode is a property of the file; switching a new file to it needs a
 * moment alone with it, so retry while another process holds it. */
static bool set_wal(sqlite3 *db)
{
	double give_up = mono_now() + BUSY_TIMEOUT_MS / 1000.0;
	for (;;) {
		int rc = sqlite3_exec(db, "PRAGMA journal_mode = WAL", NULL, NULL, NULL);
		if (rc == SQLITE_OK)
			return true;
		if ((rc & 0xff) != SQLITE_BUSY && (rc & 0xff) != SQLITE_LOCKED)
			return false;
		if (mono_now() > give_up)
			return false;
		struct timespec pause = {0, 5 * 1000 * 1000};
		nanosleep(&pause, NULL);
	}
}

/* Creates the schema of a new file, or migrates an older one, in one
 * transaction: NULL, or the reason (malloc'd). */
static char *create_or_migrate(sqlite3 *db, const char *path)
{
	int64_t version = 0;
	char *why = NULL;
	if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		return format("%s: %s", path, sqlite3_errmsg(db));
	/* another process may have created it meanwhile */
	if ((why = check_version(db, path, &version)))
		goto rollback;
	if (version == 0) {
		if (sqlite3_exec(db, db_schema_sql, NULL, NULL, NULL) != SQLITE_OK)
			goto sqlite_error;
	}
	for (; version > 0 && version < DB_SCHEMA_VERSION; version++) {
		if (!migrations[version]) {
			why = format("database %s has schema version %lld and no migration from it", path,
				     (long long)version);
			goto rollback;
		}
		if (sqlite3_exec(db, migrations[version], NULL, NULL, NULL) != SQLITE_OK)
			goto sqlite_error;
	}
	if (!query_ints(db, "PRAGMA user_version", &version, NULL, NULL))
		goto sqlite_error;
	if (version != DB_SCHEMA_VERSION) {
		why = format("%s: schema.sql sets version %lld but this tjit expects %d", path,
			     (long long)version, DB_SCHEMA_VERSION);
		goto rollback;
	}
	if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
		goto sqlite_error;
	return NULL;
sqlite_error:
	why = format("%s: cannot create the schema: %s", path, sqlite3_errmsg(db));
rollback:
	sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	return why;
}

struct db_writer *db_open_writer(const char *path, char **err)
{
	struct db_writer *w = NULL;
	char *why = NULL;
	int64_t version = 0;
	if (!path || !*path) {
		why = strdup("no database path");
		goto fail;
	}
	w = calloc(1, sizeof *w);
	if (!w || !(w->path = strdup(path))) {
		why = format("%s: out of memory", path);
		goto fail;
	}
	w->ops = &queue_ops;
	w->pid = getpid();
	w->last_flush = mono_now();
	struct stat sb;
	if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
		why = format("%s: %s", path, strerror(EISDIR));
		goto fail;
	}
	int rc = sqlite3_open_v2(path, &w->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
				 NULL);
	if (rc != SQLITE_OK) {
		why = format("%s: %s", path, w->db ? sqlite3_errmsg(w->db) : sqlite3_errstr(rc));
		goto fail;
	}
	/* SQLite opens a file it may not write read-only; writing would fail
	 * at the first event, so say so now (the reading tools still read it) */
	if (sqlite3_db_readonly(w->db, "main") == 1) {
		why = format("%s: the file is read-only", path);
		goto fail;
	}
	sqlite3_busy_timeout(w->db, BUSY_TIMEOUT_MS);
	/* Closing leaves the WAL as it is: the checkpoint that closing would
	 * make costs two fsyncs, more than a run's 100 compiles; the WAL is
	 * checkpointed when it passes wal_autocheckpoint pages instead, and
	 * the next process reads it meanwhile. */
	sqlite3_db_config(w->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
	if ((why = check_version(w->db, path, &version)))
		goto fail;
	/* settings: page_size only counts in a new file (before WAL writes
	 * its header): small pages make the few pages each event dirties
	 * cheaper to write to the WAL and to checkpoint */
	if (sqlite3_exec(w->db, "PRAGMA page_size = " PAGE_SIZE, NULL, NULL, NULL) != SQLITE_OK || !set_wal(w->db) ||
	    sqlite3_exec(w->db, "PRAGMA synchronous = NORMAL", NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_exec(w->db, "PRAGMA foreign_keys = ON", NULL, NULL, NULL) != SQLITE_OK) {
		why = open_error(w->db, path);
		goto fail;
	}
	if (version < DB_SCHEMA_VERSION && (why = create_or_migrate(w->db, path)))
		goto fail;
	/* handles count on from the ids already in the file */
	sqlite3_stmt *st = NULL;
	rc = sqlite3_prepare_v2(w->db, max_ids_sql, -1, &st, NULL);
	if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		for (int k = 0; k < H_COUNT; k++)
			w->next[k] = sqlite3_column_int64(st, k);
		rc = SQLITE_OK;
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_OK) {
		why = open_error(w->db, path);
		goto fail;
	}
	registry_add(w);
	w->opened = true;
	return w;
fail:
	if (!why)
		why = strdup("out of memory");
	if (err)
		*err = why;
	else
		free(why);
	if (w) {
		sqlite3_close_v2(w->db);
		free(w->path);
		free(w);
	}
	return NULL;
}

/* --- the public functions: dispatch through ops --- */

struct db_writer *db_null_writer(void)
{
	struct db_writer *w = calloc(1, sizeof *w);
	if (!w)
		return &fallback_writer;
	w->ops = &null_ops;
	return w;
}

/* A writer whose thread failed, or that a fork() left in a child, turns
 * null; its ids go on after every handle it gave. */
static struct db_writer *use(struct db_writer *w)
{
	if (!w)
		return &fallback_writer;
	if (w->ops == &queue_ops && (w->foreign || atomic_load_explicit(&w->failed, memory_order_relaxed))) {
		w->ops = &null_ops;
		for (int k = 0; k < H_COUNT; k++)
			if (w->next[k] > w->last_id)
				w->last_id = w->next[k];
	}
	return w;
}

void db_flush(struct db_writer *w)
{
	if (!w || !w->has_thread || w->foreign)
		return;
	pthread_mutex_lock(&w->mu);
	uint64_t target = w->nqueued;
	while (w->nwritten < target)
		pthread_cond_wait(&w->written, &w->mu);
	pthread_mutex_unlock(&w->mu);
}

void db_close(struct db_writer *w)
{
	if (!w || w->is_static)
		return;
	w = use(w);
	if (w->ops->close)
		w->ops->close(w);
	if (w->opened && !w->foreign) {
		if (w->has_thread)
			thread_stop(w); /* the thread closes the connection */
		else if (w->db)
			drop_connection(w, true);
		registry_remove(w);
	} else if (w->opened) {
		/* a child of fork(): the queue is a copy of the parent's, which
		 * the parent writes; the connection is the parent's too */
		while (w->head) {
			struct job *j = w->head;
			w->head = j->next;
			free(j);
		}
		drop_connection(w, false);
	}
	counters_release(&w->frames);
	counters_release(&w->breaks);
	idmap_release(&w->frame_handles);
	for (int k = 0; k < H_COUNT; k++)
		idmap_release(&w->rows[k]);
	free(w->path);
	free(atomic_load(&w->error));
	free(w);
}

const char *db_error(const struct db_writer *w)
{
	return w ? atomic_load(&((struct db_writer *)w)->error) : NULL;
}

/* An id handed out: a handle, or after a failure a fresh null one. */
static int64_t give(struct db_writer *w, int64_t id)
{
	if (id <= 0)
		return ++w->last_id;
	if (id > w->last_id)
		w->last_id = id;
	return id;
}

int64_t db_begin_run(struct db_writer *w, const struct db_run *run)
{
	w = use(w);
	return give(w, w->ops->begin_run && run ? w->ops->begin_run(w, run) : 0);
}

void db_end_run(struct db_writer *w, int exit_status)
{
	w = use(w);
	if (w->ops->end_run)
		w->ops->end_run(w, exit_status);
	db_flush(w);
}

void db_log_source(struct db_writer *w, const char *path, const char *text)
{
	w = use(w);
	if (w->ops->log_source)
		w->ops->log_source(w, path, text);
}

int64_t db_log_frame(struct db_writer *w, const struct db_frame *f)
{
	w = use(w);
	return give(w, w->ops->log_frame && f ? w->ops->log_frame(w, f) : 0);
}

void db_frame_counts(struct db_writer *w, int64_t frame_id, const struct db_frame_counts *c)
{
	w = use(w);
	const int64_t v[DB_COUNTERS] = {c->calls, c->cache_hits, c->eager_calls, c->guard_checks, c->guard_check_ns};
	if (w->ops->frame_counts)
		w->ops->frame_counts(w, frame_id, v, c->eager_reason);
}

int64_t db_log_compile(struct db_writer *w, const struct db_compile *c, int64_t *break_ids)
{
	w = use(w);
	int64_t id = w->ops->log_compile && c ? w->ops->log_compile(w, c, break_ids) : 0;
	if (id <= 0 && c && break_ids)
		for (int i = 0; i < c->nbreaks; i++)
			break_ids[i] = give(w, 0);
	return give(w, id);
}

void db_break_hits(struct db_writer *w, int64_t break_id, int64_t hits)
{
	w = use(w);
	if (w->ops->break_hits)
		w->ops->break_hits(w, break_id, hits);
}

int64_t db_begin_minify(struct db_writer *w, const struct db_minify *m)
{
	w = use(w);
	return give(w, w->ops->begin_minify && m ? w->ops->begin_minify(w, m) : 0);
}

void db_log_minify_step(struct db_writer *w, int64_t session_id, const struct db_minify_step *s)
{
	w = use(w);
	if (w->ops->log_minify_step && s)
		w->ops->log_minify_step(w, session_id, s);
}

void db_end_minify(struct db_writer *w, int64_t session_id, const struct db_minify_end *e)
{
	w = use(w);
	if (w->ops->end_minify && e)
		w->ops->end_minify(w, session_id, e);
}
