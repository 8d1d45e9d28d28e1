/* db.c - the compile log writer: SQLite behind a const vtable, and the null
 * writer that serves --no-db and every writer that failed.
 *
 * A writer is a struct db_writer whose ops point at sqlite_ops or null_ops.
 * The public functions at the end dispatch through ops; a slot left NULL
 * does nothing (and hands out a fresh null id where an id is due), so
 * null_ops is all NULL. When SQLite fails, fail() reports once on stderr,
 * closes the connection and points ops at null_ops: the rest of the run
 * logs nothing, and nothing else changes for the program.
 *
 * The SQL the writer runs is listed once, in STATEMENTS; each statement is
 * prepared on first use and reused until db_close. Every event is one
 * transaction (BEGIN IMMEDIATE, so that two processes never deadlock on a
 * lock upgrade). The counters the core updates often (frame counts, break
 * hits) wait in memory, in a small hash table by row id, and go out with the
 * next transaction, or on their own once a second has passed.
 */
#include "db.h"

#include <sqlite3.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

/* db/schema.sql as a C string, generated at build time by db/sql2c.sh */
extern const char db_schema_sql[];

#define BUSY_TIMEOUT_MS 5000
#define FLUSH_INTERVAL_S 1.0
#define PAGE_SIZE "2048"

/* Migrations: migrations[v] takes a file from user_version v to v + 1 (and
 * sets user_version itself). A new file (version 0) gets schema.sql
 * instead. Empty while DB_SCHEMA_VERSION is 1. */
static const char *const migrations[DB_SCHEMA_VERSION] = {
	[0] = NULL,
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
	X(insert_frame, "INSERT INTO frames (run_id, frame_index, function, file, line, resume_pc,"     \
			" resume_line) VALUES (?, ?, ?, ?, ?, ?, ?)"                                    \
			" ON CONFLICT (run_id, frame_index) DO NOTHING")                                \
	X(find_frame, "SELECT id FROM frames WHERE run_id = ? AND frame_index = ?")                    \
	X(frame_counts, "UPDATE frames SET calls = ?, cache_hits = ?, eager_calls = ?,"                 \
			" eager_reason = ? WHERE id = ?")                                               \
	X(insert_compile, "INSERT INTO compiles (run_id, frame_id, label, compile_index, reason,"       \
			  " backend, dynamic, started_at, trace_ms, guard_ms, backend_ms, total_ms,"    \
			  " outcome, op_count, error)"                                                  \
			  " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")                      \
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

/* A counter row waiting to be written: frames (calls, cache_hits,
 * eager_calls, eager_reason) or graph_breaks (hits). */
struct counter {
	int64_t id;
	int64_t v[3];
	char *reason;
	bool dirty;
};

/* Counters by row id: a dense array in order of first use, and an open
 * addressing index into it (slot = position + 1, 0 = empty). */
struct counters {
	struct counter *e;
	size_t n, cap;
	uint32_t *slot;
	size_t nslots;   /* a power of two, more than twice n */
	size_t ndirty;
};

struct db_ops {
	const char *name;
	/* id slots return the new row's id, or 0 after a failure (reported) */
	int64_t (*begin_run)(struct db_writer *w, const struct db_run *run);
	void (*end_run)(struct db_writer *w, int exit_status);
	void (*log_source)(struct db_writer *w, const char *path, const char *text);
	int64_t (*log_frame)(struct db_writer *w, const struct db_frame *f);
	void (*frame_counts)(struct db_writer *w, int64_t frame_id, const int64_t v[3], const char *reason);
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
	char *error;            /* the failure reported, or NULL */
	bool is_static;
	/* the SQLite writer */
	sqlite3 *db;
	char *path;
	pid_t pid;              /* the process that opened db */
	int64_t run_id;         /* the current run, 0 before db_begin_run */
	sqlite3_stmt *stmt[STMT_COUNT];
	struct counters frames, breaks;
	double last_flush;      /* monotonic seconds */
};

static const struct db_ops null_ops = {.name = "null"};

/* what a NULL writer, or a failed allocation of a null writer, stands for */
static struct db_writer fallback_writer = {.ops = &null_ops, .is_static = true};

/* --- small helpers --- */

__attribute__((format(printf, 1, 2))) static char *format(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return NULL;
	char *s = malloc((size_t)n + 1);
	if (!s)
		return NULL;
	va_start(ap, fmt);
	vsnprintf(s, (size_t)n + 1, fmt, ap);
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
	uint64_t h = 0xcbf29ce484222325u;
	for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
		h ^= *p;
		h *= 0x100000001b3u;
	}
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

/* --- counters --- */

static uint32_t *counters_find_slot(uint32_t *slot, size_t nslots, const struct counter *e, int64_t id)
{
	size_t mask = nslots - 1;
	size_t i = (size_t)(((uint64_t)id * 0x9e3779b97f4a7c15u) >> 32) & mask;
	while (slot[i] && e[slot[i] - 1].id != id)
		i = (i + 1) & mask;
	return &slot[i];
}

/* The counter of row id, created (zero, not dirty) on first use; NULL when
 * out of memory. */
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

/* --- the SQLite writer: failing, statements, rows --- */

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

/* Reports the first failure once, rolls back, closes the connection and
 * turns w into a null writer. why NULL: SQLite's own message. */
static void fail(struct db_writer *w, const char *what, const char *why)
{
	if (!why)
		why = w->db ? sqlite3_errmsg(w->db) : "no connection";
	char *msg = format("%s: %s: %s", w->path, what, why);
	fprintf(stderr, "tjit: database: %s\n", msg ? msg : what);
	if (!w->error)
		w->error = msg;
	else
		free(msg);
	if (w->db && !sqlite3_get_autocommit(w->db))
		sqlite3_exec(w->db, "ROLLBACK", NULL, NULL, NULL);
	drop_connection(w, true);
	w->ops = &null_ops;
}

/* True in the process that opened the writer. A child after fork() must
 * never touch the parent's connection (nor close it): there the writer
 * quietly turns null. */
static bool mine(struct db_writer *w)
{
	if (w->pid == getpid())
		return true;
	drop_connection(w, false);
	w->ops = &null_ops;
	return false;
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

/* Writes t's dirty counters with s: its nvalues values (and the reason when
 * s has a parameter for it), then the row id. */
static bool write_dirty(struct db_writer *w, struct counters *t, enum stmt s, int nvalues)
{
	for (size_t i = 0; t->ndirty && i < t->n; i++) {
		struct counter *c = &t->e[i];
		if (!c->dirty)
			continue;
		struct row r = row_start(w, s);
		for (int k = 0; k < nvalues; k++)
			put_int(&r, c->v[k]);
		if (r.st && sqlite3_bind_parameter_count(r.st) > nvalues + 1)
			put_text(&r, c->reason);
		put_int(&r, c->id);
		if (!row_run(&r, NULL))
			return false;
		c->dirty = false;
		t->ndirty--;
	}
	return true;
}

/* Writes the dirty counters, inside the caller's transaction. */
static bool write_counters(struct db_writer *w)
{
	if (!write_dirty(w, &w->frames, STMT_frame_counts, 3) || !write_dirty(w, &w->breaks, STMT_break_hits, 1))
		return false;
	w->last_flush = mono_now();
	return true;
}

/* Writes the dirty counters in a transaction of their own. */
static void flush(struct db_writer *w)
{
	if (!w->frames.ndirty && !w->breaks.ndirty)
		return;
	if (!mine(w))
		return;
	if (!begin(w) || !write_counters(w) || !commit(w))
		fail(w, "cannot write the counters", NULL);
}

static bool need_run(struct db_writer *w, const char *what)
{
	if (w->run_id)
		return true;
	fail(w, what, "no run begun (db_begin_run)");
	return false;
}

/* --- the SQLite writer: events --- */

static int64_t sqlite_begin_run(struct db_writer *w, const struct db_run *run)
{
	if (!mine(w))
		return 0;
	char hash[17];
	int64_t id = 0;
	struct row r;
	if (!begin(w) || !write_counters(w))
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
	return id;
fail:
	fail(w, "cannot log the run", NULL);
	return 0;
}

static void sqlite_end_run(struct db_writer *w, int exit_status)
{
	if (!w->run_id || !mine(w))
		return;
	struct row r;
	if (!begin(w) || !write_counters(w))
		goto fail;
	r = row_start(w, STMT_end_run);
	put_real(&r, wall_now());
	put_int(&r, exit_status);
	put_int(&r, w->run_id);
	if (!row_run(&r, NULL) || !commit(w))
		goto fail;
	w->run_id = 0;
	return;
fail:
	fail(w, "cannot end the run", NULL);
}

static void sqlite_log_source(struct db_writer *w, const char *path, const char *text)
{
	char hash[17];
	if (!text || !mine(w))
		return;
	if (!insert_source(w, path, text, hash))
		fail(w, "cannot log a source", NULL);
}

static int64_t sqlite_log_frame(struct db_writer *w, const struct db_frame *f)
{
	if (!mine(w) || !need_run(w, "cannot log a frame"))
		return 0;
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
	if (sqlite3_changes(w->db) == 1)
		return sqlite3_last_insert_rowid(w->db);
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
	if (r.rc == SQLITE_OK && id)
		return id;
fail:
	fail(w, "cannot log a frame", NULL);
	return 0;
}

/* Keeps a counter in memory; writes them all once a second has passed. */
static void count(struct db_writer *w, struct counters *t, int64_t id, const int64_t v[3], const char *reason)
{
	struct counter *c = counters_get(t, id);
	if (!c) {
		fail(w, "cannot keep the counters", "out of memory");
		return;
	}
	if (memcmp(c->v, v, sizeof c->v) != 0 || !same_str(c->reason, reason)) {
		if (!same_str(c->reason, reason)) {
			char *copy = reason ? strdup(reason) : NULL;
			if (reason && !copy) {
				fail(w, "cannot keep the counters", "out of memory");
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
	if (mono_now() - w->last_flush >= FLUSH_INTERVAL_S)
		flush(w);
}

static void sqlite_frame_counts(struct db_writer *w, int64_t frame_id, const int64_t v[3], const char *reason)
{
	count(w, &w->frames, frame_id, v, reason);
}

static void sqlite_break_hits(struct db_writer *w, int64_t break_id, int64_t hits)
{
	const int64_t v[3] = {hits, 0, 0};
	count(w, &w->breaks, break_id, v, NULL);
}

static bool insert_graph(struct db_writer *w, int64_t compile_id, const struct db_graph *g)
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

static int64_t sqlite_log_compile(struct db_writer *w, const struct db_compile *c, int64_t *break_ids)
{
	if (!mine(w) || !need_run(w, "cannot log a compile"))
		return 0;
	int64_t id = 0;
	struct row r;
	if (!begin(w))
		goto fail;
	r = row_start(w, STMT_insert_compile);
	put_int(&r, w->run_id);
	put_int(&r, c->frame_id);
	put_str(&r, c->compile_id);
	put_int(&r, c->compile_index);
	put_str(&r, c->reason);
	put_str(&r, c->backend);
	put_text(&r, c->dynamic);
	put_real(&r, c->started_at > 0 ? c->started_at : wall_now());
	put_real(&r, c->trace_ms);
	put_real(&r, c->guard_ms);
	put_real(&r, c->backend_ms);
	put_real(&r, c->total_ms);
	put_str(&r, c->outcome);
	put_int(&r, c->op_count);
	put_text(&r, c->error);
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
		if (break_ids)
			break_ids[i] = break_id;
	}
	for (int i = 0; i < c->ngraphs; i++)
		if (!insert_graph(w, id, &c->graphs[i]))
			goto fail;
	if (!write_counters(w) || !commit(w))
		goto fail;
	return id;
fail:;
	char *what = format("cannot log compile %s", c->compile_id ? c->compile_id : "?");
	fail(w, what ? what : "cannot log a compile", NULL);
	free(what);
	return 0;
}

static int64_t sqlite_begin_minify(struct db_writer *w, const struct db_minify *m)
{
	if (!mine(w) || !need_run(w, "cannot log a minifier session"))
		return 0;
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
	put_real(&r, m->started_at > 0 ? m->started_at : wall_now());
	if (!row_run(&r, &id) || !commit(w))
		goto fail;
	return id;
fail:
	fail(w, "cannot log a minifier session", NULL);
	return 0;
}

static void sqlite_log_minify_step(struct db_writer *w, int64_t session_id, const struct db_minify_step *s)
{
	if (!mine(w))
		return;
	struct row r = row_start(w, STMT_insert_minify_step);
	put_int(&r, session_id);
	put_str(&r, s->phase);
	put_str(&r, s->candidate);
	put_int_if(&r, s->nodes >= 0, s->nodes);
	put_str(&r, s->outcome);
	put_real(&r, s->ms);
	if (!row_run(&r, NULL))
		fail(w, "cannot log a minifier step", NULL);
}

static void sqlite_end_minify(struct db_writer *w, int64_t session_id, const struct db_minify_end *e)
{
	if (!mine(w))
		return;
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
	put_int(&r, session_id);
	if (!row_run(&r, NULL) || !commit(w))
		goto fail;
	return;
fail:
	fail(w, "cannot end a minifier session", NULL);
}

static void sqlite_close(struct db_writer *w)
{
	flush(w);
	if (w->db)
		drop_connection(w, mine(w));
}

static const struct db_ops sqlite_ops = {
	.name = "sqlite",
	.begin_run = sqlite_begin_run,
	.end_run = sqlite_end_run,
	.log_source = sqlite_log_source,
	.log_frame = sqlite_log_frame,
	.frame_counts = sqlite_frame_counts,
	.log_compile = sqlite_log_compile,
	.break_hits = sqlite_break_hits,
	.begin_minify = sqlite_begin_minify,
	.log_minify_step = sqlite_log_minify_step,
	.end_minify = sqlite_end_minify,
	.close = sqlite_close,
};

/* --- opening: settings, version, schema --- */

/* The integers of the one-row query sql; false on an SQLite error. */
static bool query_ints(sqlite3 *db, const char *sql, int64_t *a, int64_t *b)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	if (rc == SQLITE_OK) {
		rc = sqlite3_step(st);
		if (rc == SQLITE_ROW) {
			*a = sqlite3_column_int64(st, 0);
			if (b)
				*b = sqlite3_column_int64(st, 1);
			rc = SQLITE_OK;
		}
	}
	sqlite3_finalize(st);
	return rc == SQLITE_OK;
}

/* user_version, and refusal of a file that is newer or not ours: NULL, or
 * the reason (malloc'd). One statement, so one snapshot: a file that
 * another process creates meanwhile is seen before or after, never half. */
static char *check_version(sqlite3 *db, const char *path, int64_t *version)
{
	int64_t ntables = 0;
	if (!query_ints(db, "SELECT (SELECT user_version FROM pragma_user_version),"
			    " (SELECT count(*) FROM sqlite_master)", version, &ntables))
		return format("%s: %s", path, sqlite3_errmsg(db));
	if (*version > DB_SCHEMA_VERSION)
		return format("database %s has schema version %lld, this tjit understands up to %d", path,
			      (long long)*version, DB_SCHEMA_VERSION);
	if (*version == 0 && ntables > 0)
		return format("%s is not a tjit database (it has tables but no schema version)", path);
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
	if (!query_ints(db, "PRAGMA user_version", &version, NULL))
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
	w->ops = &sqlite_ops;
	w->pid = getpid();
	w->last_flush = mono_now();
	int rc = sqlite3_open_v2(path, &w->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
				 NULL);
	if (rc != SQLITE_OK) {
		why = format("%s: %s", path, w->db ? sqlite3_errmsg(w->db) : sqlite3_errstr(rc));
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
		why = format("%s: %s", path, sqlite3_errmsg(w->db));
		goto fail;
	}
	if (version < DB_SCHEMA_VERSION && (why = create_or_migrate(w->db, path)))
		goto fail;
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

void db_close(struct db_writer *w)
{
	if (!w || w->is_static)
		return;
	if (w->ops->close)
		w->ops->close(w);
	counters_release(&w->frames);
	counters_release(&w->breaks);
	free(w->path);
	free(w->error);
	free(w);
}

const char *db_error(const struct db_writer *w)
{
	return w ? w->error : NULL;
}

static struct db_writer *use(struct db_writer *w)
{
	return w ? w : &fallback_writer;
}

/* An id handed out: a row id, or after a failure a fresh null one. */
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

void db_frame_counts(struct db_writer *w, int64_t frame_id, int64_t calls, int64_t cache_hits,
		     int64_t eager_calls, const char *eager_reason)
{
	w = use(w);
	const int64_t v[3] = {calls, cache_hits, eager_calls};
	if (w->ops->frame_counts)
		w->ops->frame_counts(w, frame_id, v, eager_reason);
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
