/* query.c - the tools' read queries (query.h).
 *
 * One read-only connection per struct dbq. Each statement is prepared
 * when it is first used and kept; all of them are in the table stmt_sql[]
 * below, so that a test checks the plan of every one (no SCAN: each finds
 * its rows through an index of db/schema.sql or a primary key). Only the
 * run count in the message of an unknown RUN reads the runs table whole.
 */
#define _GNU_SOURCE /* vasprintf */
#include "query.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "db.h"

#define BUSY_TIMEOUT_MS 5000

enum stmt {
	Q_RUN,
	Q_RUN_OF,
	Q_RUN_LATEST,
	Q_RUN_BEFORE,
	Q_RUN_COUNT,
	Q_FRAMES,
	Q_FRAME_COMPILES,
	Q_BREAKS,
	Q_BACKEND_PHASES,
	Q_FAILURES,
	Q_GUARDS,
	Q_RUNS_PAGE,
	Q_COMPILES,
	Q_COMPILE_BY_LABEL,
	Q_GRAPH,
	Q_GRAPHS_OF,
	Q_NODES,
	Q_SAVED,
	Q_COMPILE_BACKEND_PHASES,
	Q_KERNELS,
	Q_KERNEL_COUNTS,
	/* ---- tjit-tui ---- */
	Q_TUI_COMPILES_BEFORE,
	Q_TUI_FRAME_COMPILES_AFTER,
	Q_TUI_FRAME_COMPILES_BEFORE,
	Q_TUI_FRAMES_AFTER,
	Q_TUI_FRAMES_BEFORE,
	Q_TUI_PLACES_AFTER,
	Q_TUI_PLACES_BEFORE,
	Q_TUI_FAILURES_AFTER,
	Q_TUI_FAILURES_BEFORE,
	Q_TUI_COMPILE_FAILURES,
	Q_TUI_COMPILE_BREAKS,
	Q_TUI_RUNS_AFTER,
	Q_TUI_SESSIONS_AFTER,
	Q_TUI_SESSIONS_BEFORE,
	Q_TUI_RUN_SESSIONS,
	Q_TUI_STEPS_AFTER,
	Q_TUI_STEPS_BEFORE,
	Q_COUNT
};

#define COMPILE_COLS                                                                                     \
	"c.id, c.run_id, c.frame_id, c.label, f.frame_index, c.compile_index, f.function, f.file, f.line," \
	" f.resume_pc, f.resume_line, c.reason, c.backend, c.outcome, c.dynamic, c.error, c.started_at,"  \
	" c.trace_ms, c.guard_ms, c.backend_ms, c.total_ms, c.op_count, c.saved_bytes"
#define COMPILES_SELECT "SELECT " COMPILE_COLS " FROM compiles c JOIN frames f ON f.id = c.frame_id"
#define RUN_ROW_COLS                                                                                     \
	"SELECT id, tool, program, command, started_at, ended_at, exit_status, pid, compile_count,"       \
	" graph_count, break_count, recompile_count FROM runs"
/* a place of graph breaks: min(id) is the only min/max aggregate, so
 * SQLite takes the bare columns (col, category, message, user_stack) from
 * that row. The hits of a place are those of its breaks in the frame
 * itself (a one-line user stack) when there are some: a break inside an
 * inlined call also breaks the caller at the call, whose row counts the
 * same executions again. */
#define BREAK_PLACE_COLS                                                                                 \
	"SELECT b.code, b.file, b.line, b.col, b.category, b.message, b.user_stack, count(*),"            \
	" coalesce(sum(CASE WHEN instr(b.user_stack, char(10)) = 0 THEN b.hits END), sum(b.hits)) AS h," \
	" min(b.id), sum(c.outcome = 'error')"                                                            \
	" FROM graph_breaks b JOIN compiles c ON c.id = b.compile_id"
/* a graph with the first break of its compile */
#define GRAPH_SELECT                                                                                     \
	"SELECT g.id, g.compile_id, c.run_id, c.label, g.stage, g.name, g.listing, g.op_count, b.code,"   \
	" b.category, b.message, b.file, b.line, b.col"                                                     \
	" FROM graphs g JOIN compiles c ON c.id = g.compile_id"                                             \
	" LEFT JOIN graph_breaks b ON b.id = (SELECT min(id) FROM graph_breaks WHERE compile_id = g.compile_id)"


static const char *const stmt_sql[Q_COUNT] = {
	[Q_RUN] = "SELECT r.id, r.tool, r.command, r.program, r.backend, r.config, r.pid, r.started_at,"
		  " r.ended_at, r.exit_status, s.text"
		  " FROM runs r LEFT JOIN sources s ON s.hash = r.source_hash WHERE r.id = ?1",
	[Q_RUN_OF] = "SELECT pid, tool FROM runs WHERE id = ?1",
	[Q_RUN_LATEST] = "SELECT max(id) FROM runs",
	[Q_RUN_BEFORE] = "SELECT max(id) FROM runs WHERE id < ?1",
	[Q_RUN_COUNT] = "SELECT count(*) FROM runs",
	/* the columns of TUI_FRAME_COLS (no compile count: Q_FRAME_COMPILES) */
	[Q_FRAMES] = "SELECT id, frame_index, function, file, line, resume_pc, resume_line, calls, cache_hits,"
		     " eager_calls, eager_reason, guard_checks, guard_check_ms, 0"
		     " FROM frames WHERE run_id = ?1 ORDER BY frame_index",
	[Q_FRAME_COMPILES] =
		"SELECT frame_id, count(*), sum(reason = 'recompile'),"
		" sum(reason IN ('first', 'recompile') AND outcome IN ('ok', 'graph_break')),"
		" sum(reason = 'cache_limit'), sum(reason = 'frozen_miss'), sum(outcome = 'error'),"
		" sum(op_count > 0), sum(op_count), sum(trace_ms), sum(guard_ms), sum(backend_ms), sum(total_ms)"
		" FROM compiles WHERE run_id = ?1 GROUP BY frame_id",
	[Q_BREAKS] = BREAK_PLACE_COLS " WHERE b.run_id = ?1 GROUP BY b.code, b.file, b.line"
		     " ORDER BY h DESC, count(*) DESC, b.file, b.line, b.code",
	/* the phases a stage timed directly inside a compile's "backend"
	 * phase, summed by name over the run, in the order first seen */
	[Q_BACKEND_PHASES] = "SELECT p.name, sum(p.ms), count(*) FROM compiles c"
			     " JOIN compile_phases b ON b.compile_id = c.id AND b.name = 'backend' AND b.parent IS NULL"
			     " JOIN compile_phases p ON p.compile_id = c.id AND p.parent = b.position"
			     " WHERE c.run_id = ?1 GROUP BY p.name ORDER BY min(p.id)",
	[Q_FAILURES] = "SELECT g.compile_id, c.frame_id, g.failed_label, g.guard_text, g.value_seen"
		       " FROM guard_failures g JOIN compiles c ON c.id = g.compile_id"
		       " WHERE g.run_id = ?1 ORDER BY g.compile_id, g.id",
	/* a label F/N is compile N of frame F: both keys are indexed */
	[Q_GUARDS] = "SELECT gd.idx, gd.kind, gd.text, gd.file, gd.line, gd.col"
		     " FROM frames f JOIN compiles c ON c.frame_id = f.id AND c.compile_index = ?3"
		     " JOIN guards gd ON gd.compile_id = c.id"
		     " WHERE f.run_id = ?1 AND f.frame_index = ?2 ORDER BY gd.idx",
	[Q_RUNS_PAGE] = RUN_ROW_COLS " WHERE id < ?1 ORDER BY id DESC LIMIT ?2",
	/* compiles_run is (run_id): its entries are in id order within a run */
	[Q_COMPILES] = COMPILES_SELECT " WHERE c.run_id = ?1 AND c.id > ?2 ORDER BY c.id LIMIT ?3",
	[Q_COMPILE_BY_LABEL] = "SELECT " COMPILE_COLS
			       " FROM frames f JOIN compiles c ON c.frame_id = f.id AND c.compile_index = ?3"
			       " WHERE f.run_id = ?1 AND f.frame_index = ?2 ORDER BY c.id LIMIT 1",
	[Q_GRAPH] = GRAPH_SELECT " WHERE g.id = ?1",
	[Q_GRAPHS_OF] = GRAPH_SELECT " WHERE g.compile_id = ?1 ORDER BY g.id",
	[Q_NODES] = "SELECT idx, name, kind, op, args, dtype, shape, file, line, col, user_stack"
		    " FROM nodes WHERE graph_id = ?1 ORDER BY idx",
	/* the phases directly inside one compile's "backend" phase */
	[Q_COMPILE_BACKEND_PHASES] = "SELECT p.name, p.ms, 1 FROM compile_phases b"
				     " JOIN compile_phases p ON p.compile_id = b.compile_id AND p.parent = b.position"
				     " WHERE b.compile_id = ?1 AND b.name = 'backend' AND b.parent IS NULL"
				     " ORDER BY p.position",
	[Q_SAVED] = "SELECT idx, graph_id, node_idx, name, dtype, shape, bytes"
		    " FROM aot_saved WHERE compile_id = ?1 ORDER BY idx",
	/* a compile's kernels: by graph (graphs_compile), then launch order */
	[Q_KERNELS] = "SELECT k.graph_id, g.stage, k.idx, k.name, k.kind, k.hash, k.fused_nodes, k.loop_ir,"
		      " k.llvm_ir, k.cache_hit, k.codegen_ms"
		      " FROM graphs g JOIN kernels k ON k.graph_id = g.id WHERE g.compile_id = ?1 ORDER BY g.id, k.idx",
	[Q_KERNEL_COUNTS] = "SELECT count(k.id), coalesce(sum(k.cache_hit), 0) FROM compiles c"
			    " JOIN graphs g ON g.compile_id = c.id JOIN kernels k ON k.graph_id = g.id"
			    " WHERE c.run_id = ?1",
	/* ---- tjit-tui: pages in both directions by a key range ---- */
	[Q_TUI_COMPILES_BEFORE] = COMPILES_SELECT " WHERE c.run_id = ?1 AND c.id < ?2 ORDER BY c.id DESC LIMIT ?3",
	[Q_TUI_FRAME_COMPILES_AFTER] = COMPILES_SELECT " WHERE c.frame_id = ?1 AND c.compile_index > ?2"
				       " ORDER BY c.compile_index LIMIT ?3",
	[Q_TUI_FRAME_COMPILES_BEFORE] = COMPILES_SELECT " WHERE c.frame_id = ?1 AND c.compile_index < ?2"
					" ORDER BY c.compile_index DESC LIMIT ?3",
	/* a frame's compiles are numbered 0, 1, ...: the largest N is one
	 * search of compiles_frame, where counting them would read them all
	 * (the + 1 outside the subquery, which stays a bare max(); NULL, no
	 * compile, reads as 0) */
#define TUI_FRAME_COLS                                                                                   \
	"SELECT f.id, f.frame_index, f.function, f.file, f.line, f.resume_pc, f.resume_line, f.calls,"   \
	" f.cache_hits, f.eager_calls, f.eager_reason, f.guard_checks, f.guard_check_ms,"                 \
	" (SELECT max(compile_index) FROM compiles WHERE frame_id = f.id) + 1 FROM frames f"
	[Q_TUI_FRAMES_AFTER] = TUI_FRAME_COLS " WHERE f.run_id = ?1 AND f.frame_index > ?2"
			       " ORDER BY f.frame_index LIMIT ?3",
	[Q_TUI_FRAMES_BEFORE] = TUI_FRAME_COLS " WHERE f.run_id = ?1 AND f.frame_index < ?2"
				" ORDER BY f.frame_index DESC LIMIT ?3",
	/* graph-break places in the order of graph_breaks_run, (code, file,
	 * line): a page reads the breaks of its places only */
	[Q_TUI_PLACES_AFTER] = BREAK_PLACE_COLS " WHERE b.run_id = ?1 AND (b.code, b.file, b.line) > (?2, ?3, ?4)"
			       " GROUP BY b.code, b.file, b.line ORDER BY b.code, b.file, b.line LIMIT ?5",
	[Q_TUI_PLACES_BEFORE] = BREAK_PLACE_COLS " WHERE b.run_id = ?1 AND (b.code, b.file, b.line) < (?2, ?3, ?4)"
				" GROUP BY b.code, b.file, b.line ORDER BY b.code DESC, b.file DESC, b.line DESC LIMIT ?5",
#define TUI_FAILURE_COLS                                                                                 \
	"SELECT g.id, g.compile_id, c.label, f.function, g.failed_label, g.guard_text, g.value_seen"      \
	" FROM guard_failures g JOIN compiles c ON c.id = g.compile_id JOIN frames f ON f.id = c.frame_id"
	[Q_TUI_FAILURES_AFTER] = TUI_FAILURE_COLS " WHERE g.run_id = ?1 AND g.id > ?2 ORDER BY g.id LIMIT ?3",
	[Q_TUI_FAILURES_BEFORE] = TUI_FAILURE_COLS " WHERE g.run_id = ?1 AND g.id < ?2 ORDER BY g.id DESC LIMIT ?3",
	[Q_TUI_COMPILE_FAILURES] = TUI_FAILURE_COLS " WHERE g.compile_id = ?1 ORDER BY g.id",
	[Q_TUI_COMPILE_BREAKS] = "SELECT b.code, b.file, b.line, b.col, b.category, b.message, b.user_stack, 1, b.hits,"
				 " b.id, c.outcome = 'error'"
				 " FROM graph_breaks b JOIN compiles c ON c.id = b.compile_id"
				 " WHERE b.compile_id = ?1 ORDER BY b.id",
	[Q_TUI_RUNS_AFTER] = RUN_ROW_COLS " WHERE id > ?1 ORDER BY id LIMIT ?2",
	/* minifier sessions by id, with their steps counted on
	 * minify_steps_session (a session has tens of steps, not millions) */
#define SESSION_COLS                                                                                     \
	"SELECT s.id, s.run_id, s.program, s.backend, s.failure, s.started_at, s.ended_at, s.stage,"      \
	" s.result, s.repro_path, (SELECT count(*) FROM minify_steps WHERE session_id = s.id)"             \
	" FROM minify_sessions s"
	[Q_TUI_SESSIONS_AFTER] = SESSION_COLS " WHERE s.id > ?1 ORDER BY s.id LIMIT ?2",
	[Q_TUI_SESSIONS_BEFORE] = SESSION_COLS " WHERE s.id < ?1 ORDER BY s.id DESC LIMIT ?2",
	[Q_TUI_RUN_SESSIONS] = SESSION_COLS " WHERE s.run_id = ?1 ORDER BY s.id",
#define STEP_COLS "SELECT id, phase, candidate, nodes, outcome, ms FROM minify_steps"
	[Q_TUI_STEPS_AFTER] = STEP_COLS " WHERE session_id = ?1 AND id > ?2 ORDER BY id LIMIT ?3",
	[Q_TUI_STEPS_BEFORE] = STEP_COLS " WHERE session_id = ?1 AND id < ?2 ORDER BY id DESC LIMIT ?3",
};

struct dbq {
	sqlite3 *db;
	char *path;
	sqlite3_stmt *stmt[Q_COUNT];
};

/* ---- helpers ---- */

__attribute__((format(printf, 2, 3))) static int set_err(char **err, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		if (vasprintf(err, fmt, ap) < 0)
			*err = NULL;
		va_end(ap);
	}
	return -1;
}

static int sql_err(struct dbq *q, char **err)
{
	return set_err(err, "database %s: %s", q->path, sqlite3_errmsg(q->db));
}

/* ---- rows into structs ----
 *
 * Each struct the queries fill is described by a table of its columns:
 * which column of the statement goes into which field, read how. One
 * reader fills a struct from a row by its table, and one release frees
 * the strings the table names. */

enum col_kind {
	COL_INT,       /* int */
	COL_I64,       /* int64_t */
	COL_DOUBLE,    /* double */
	COL_TEXT,      /* char *, malloc'd: never NULL (a NULL column reads as "") */
	/* the kinds from here on tell a NULL column from a value */
	COL_TEXT_NULL, /* char *, malloc'd, NULL for a NULL column */
	COL_SET,       /* bool: the column is not NULL */
	COL_STATUS,    /* int, -1 for a NULL column */
};

struct col {
	int col;       /* of the statement's result */
	enum col_kind kind;
	size_t offset; /* of the field */
};

struct row_type {
	size_t size;
	const struct col *cols;
	int ncols;
};
#define ROW_TYPE(type, cols) {sizeof(type), cols, (int)(sizeof cols / sizeof cols[0])}

/* Fills elem (zeroed) from the row of st; false when out of memory. */
static bool read_row(sqlite3_stmt *st, const struct row_type *t, void *elem)
{
	for (int i = 0; i < t->ncols; i++) {
		const struct col *c = &t->cols[i];
		void *f = (char *)elem + c->offset;
		bool null = c->kind >= COL_TEXT_NULL && sqlite3_column_type(st, c->col) == SQLITE_NULL;
		switch (c->kind) {
		case COL_INT:
			*(int *)f = sqlite3_column_int(st, c->col);
			break;
		case COL_I64:
			*(int64_t *)f = sqlite3_column_int64(st, c->col);
			break;
		case COL_DOUBLE:
			*(double *)f = sqlite3_column_double(st, c->col);
			break;
		case COL_TEXT:
		case COL_TEXT_NULL: {
			if (null && c->kind == COL_TEXT_NULL)
				break;
			const unsigned char *s = sqlite3_column_text(st, c->col);
			if (!(*(char **)f = strdup(s ? (const char *)s : "")))
				return false;
			break;
		}
		case COL_SET:
			*(bool *)f = !null;
			break;
		case COL_STATUS:
			*(int *)f = null ? -1 : sqlite3_column_int(st, c->col);
			break;
		}
	}
	return true;
}

/* Frees the strings of elem and zeroes it. */
static void release_row(const struct row_type *t, void *elem)
{
	for (int i = 0; i < t->ncols; i++)
		if (t->cols[i].kind == COL_TEXT || t->cols[i].kind == COL_TEXT_NULL)
			free(*(char **)((char *)elem + t->cols[i].offset));
	memset(elem, 0, t->size);
}

/* Frees an array of n rows with their strings. */
static void free_rows(const struct row_type *t, void *arr, int n)
{
	for (int i = 0; i < n; i++)
		release_row(t, (char *)arr + (size_t)i * t->size);
	free(arr);
}

static sqlite3_stmt *stmt(struct dbq *q, enum stmt s, char **err)
{
	if (!q->stmt[s]) {
		if (sqlite3_prepare_v2(q->db, stmt_sql[s], -1, &q->stmt[s], NULL) != SQLITE_OK) {
			sql_err(q, err);
			sqlite3_finalize(q->stmt[s]);
			q->stmt[s] = NULL;
			return NULL;
		}
	}
	sqlite3_reset(q->stmt[s]);
	sqlite3_clear_bindings(q->stmt[s]);
	return q->stmt[s];
}

/* One integer (or NULL: *present false) from a one-row statement. */
static int one_int(struct dbq *q, sqlite3_stmt *st, int64_t *v, bool *present, char **err)
{
	int rc = sqlite3_step(st);
	*present = false;
	*v = 0;
	if (rc == SQLITE_ROW) {
		*present = sqlite3_column_type(st, 0) != SQLITE_NULL;
		*v = sqlite3_column_int64(st, 0);
		rc = sqlite3_step(st);
	}
	if (rc != SQLITE_DONE) {
		sql_err(q, err);
		sqlite3_reset(st);
		return -1;
	}
	sqlite3_reset(st);
	return 0;
}

/* "file:" URI of path with the query params, percent-encoding what a URI
 * would read otherwise */
static char *uri_of(const char *path, const char *params)
{
	size_t n = strlen(path);
	char *u = malloc(n * 3 + strlen(params) + 8);
	if (!u)
		return NULL;
	char *p = u;
	p += sprintf(p, "file:");
	for (const unsigned char *s = (const unsigned char *)path; *s; s++) {
		if (*s == '%' || *s == '?' || *s == '#' || *s <= ' ' || *s >= 0x7f)
			p += sprintf(p, "%%%02X", *s);
		else
			*p++ = (char)*s;
	}
	strcpy(p, params);
	return u;
}

/* ---- opening ---- */

/* Opens q->path read-only (immutable: as a file nobody writes) and reads
 * its user_version and how many of the first tables (DB_FIRST_TABLES) it
 * has (-1: the file is an empty database, as a tjit run killed before it
 * wrote its tables leaves one): an SQLite result code, the connection's
 * message in q->db. */
static int open_and_peek(struct dbq *q, bool immutable, int64_t *version, int64_t *tables)
{
	char *uri = uri_of(q->path, immutable ? "?mode=ro&immutable=1" : "?mode=ro");
	if (!uri)
		return SQLITE_NOMEM;
	int rc = sqlite3_open_v2(uri, &q->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, NULL);
	free(uri);
	if (rc != SQLITE_OK)
		return rc;
	sqlite3_busy_timeout(q->db, BUSY_TIMEOUT_MS);
	sqlite3_stmt *st = NULL;
	/* one statement, so one snapshot */
	rc = sqlite3_prepare_v2(q->db,
				"SELECT (SELECT user_version FROM pragma_user_version),"
				" CASE WHEN (SELECT count(*) FROM sqlite_master) = 0 THEN -1 ELSE"
				" (SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN (" DB_FIRST_TABLES ")) END",
				-1, &st, NULL);
	if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		*version = sqlite3_column_int64(st, 0);
		*tables = sqlite3_column_int64(st, 1);
		rc = SQLITE_OK;
	}
	sqlite3_finalize(st);
	return rc;
}

/* 0, or -1 with *err: why the file at path cannot be read as a tjit
 * database of this version */
static int check_opened(struct dbq *q, int rc, int64_t version, int64_t tables, char **err)
{
	const char *path = q->path;
	if ((rc & 0xff) == SQLITE_NOTADB)
		return set_err(err, "'%s' is not a tjit database", path);
	if ((rc & 0xff) == SQLITE_CORRUPT)
		return set_err(err, "'%s' is damaged: %s", path, sqlite3_errstr(rc));
	if (rc != SQLITE_OK)
		return set_err(err, "cannot read '%s': %s", path, q->db ? sqlite3_errmsg(q->db) : sqlite3_errstr(rc));
	if (version > DB_SCHEMA_VERSION)
		return set_err(err,
			       "database %s has schema version %lld, this tjit understands up to %d:"
			       " it needs a tjit that understands version %lld",
			       path, (long long)version, DB_SCHEMA_VERSION, (long long)version);
	if (version == 0 && tables == -1)
		return set_err(err, "no run in '%s' (an empty database)", path);
	if (version <= 0 || tables < DB_NFIRST_TABLES)
		return set_err(err, "'%s' is not a tjit database", path);
	if (version < DB_SCHEMA_VERSION)
		return set_err(err, "database %s has the old schema version %lld: run tjit on it once to migrate it",
			       path, (long long)version);
	return 0;
}

struct dbq *dbq_open(const char *path, char **err)
{
	if (err)
		*err = NULL;
	struct stat sb;
	if (stat(path, &sb) != 0) {
		if (errno == ENOENT || errno == ENOTDIR)
			set_err(err, "no database at '%s'", path);
		else
			set_err(err, "cannot open '%s': %s", path, strerror(errno));
		return NULL;
	}
	if (S_ISDIR(sb.st_mode)) {
		set_err(err, "cannot open '%s': %s", path, strerror(EISDIR));
		return NULL;
	}
	struct dbq *q = calloc(1, sizeof *q);
	if (!q || !(q->path = strdup(path))) {
		free(q);
		set_err(err, "out of memory");
		return NULL;
	}
	int64_t version = -1, tables = 0;
	int rc = open_and_peek(q, false, &version, &tables);
	/* A WAL file in a folder we may not write, without its -wal and -shm
	 * files: SQLite cannot make the shared memory it reads through, but
	 * with no -wal there is no writer, and the file reads as it is. */
	if ((rc & 0xff) == SQLITE_READONLY || (rc & 0xff) == SQLITE_CANTOPEN) {
		char *wal = NULL;
		if (asprintf(&wal, "%s-wal", path) >= 0 && access(wal, F_OK) != 0) {
			sqlite3_close(q->db);
			q->db = NULL;
			rc = open_and_peek(q, true, &version, &tables);
		} else if (wal) {
			/* its last rows are in the -wal, which SQLite reads through a
			 * -shm file that it cannot make here: say so, not "unable to
			 * open database file" */
			set_err(err,
				"cannot read '%s': its last rows are in '%s', which SQLite reads through a '%s-shm' file"
				" that it cannot make in that folder: copy the database and its -wal file to a folder"
				" you can write, or open it once with tjit where you can",
				path, wal, path);
			free(wal);
			dbq_close(q);
			return NULL;
		}
		free(wal);
	}
	if (check_opened(q, rc, version, tables, err) != 0) {
		dbq_close(q);
		return NULL;
	}
	return q;
}

void dbq_close(struct dbq *q)
{
	if (!q)
		return;
	for (int i = 0; i < Q_COUNT; i++)
		sqlite3_finalize(q->stmt[i]);
	sqlite3_close(q->db);
	free(q->path);
	free(q);
}

const char *dbq_path(const struct dbq *q)
{
	return q ? q->path : NULL;
}

/* ---- runs ---- */

static bool parse_count(const char *s, int64_t *out)
{
	if (!*s)
		return false;
	int64_t v = 0;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || v > (INT64_MAX - 9) / 10)
			return false;
		v = v * 10 + (*s - '0');
	}
	*out = v;
	return true;
}

static int run_count(struct dbq *q, int64_t *n, char **err)
{
	sqlite3_stmt *st = stmt(q, Q_RUN_COUNT, err);
	bool present;
	return st ? one_int(q, st, n, &present, err) : -1;
}

static int no_run(struct dbq *q, const char *spec, char **err)
{
	int64_t n = 0;
	if (run_count(q, &n, err) < 0)
		return -1;
	if (n == 0)
		return set_err(err, "no run '%s' in %s (it has no runs)", spec, q->path);
	return set_err(err, "no run '%s' in %s (it has %lld run%s)", spec, q->path, (long long)n, n == 1 ? "" : "s");
}

bool dbq_parse_id(const char *s, int64_t *id)
{
	int64_t v = 0;
	if (!parse_count(s, &v) || v == 0)
		return false;
	*id = v;
	return true;
}

bool dbq_run_spec_ok(const char *spec)
{
	int64_t v = 0;
	if (strncmp(spec, "latest", 6) == 0 && (spec[6] == 0 || spec[6] == '~'))
		return spec[6] == 0 || parse_count(spec + 7, &v);
	return dbq_parse_id(spec, &v);
}

int dbq_resolve_run(struct dbq *q, const char *spec, int64_t *id, char **err)
{
	if (err)
		*err = NULL;
	int64_t back = 0, v = 0;
	bool present = false;
	if (strncmp(spec, "latest", 6) == 0 && (spec[6] == 0 || spec[6] == '~')) {
		if (spec[6] == '~' && !parse_count(spec + 7, &back))
			return set_err(err, "bad run '%s': expected a run id, latest or latest~N", spec);
		sqlite3_stmt *st = stmt(q, Q_RUN_LATEST, err);
		if (!st || one_int(q, st, &v, &present, err) < 0)
			return -1;
		/* each step back is one search of the primary key */
		while (present && back > 0) {
			st = stmt(q, Q_RUN_BEFORE, err);
			if (!st)
				return -1;
			sqlite3_bind_int64(st, 1, v);
			if (one_int(q, st, &v, &present, err) < 0)
				return -1;
			back--;
		}
		if (!present)
			return no_run(q, spec, err);
		*id = v;
		return 0;
	}
	if (!dbq_parse_id(spec, &v))
		return set_err(err, "bad run '%s': expected a run id, latest or latest~N", spec);
	sqlite3_stmt *st = stmt(q, Q_RUN_OF, err);
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, v);
	int rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc == SQLITE_DONE)
		return no_run(q, spec, err);
	if (rc != SQLITE_ROW)
		return sql_err(q, err);
	*id = v;
	return 0;
}

/* 1: run id has pid and tool, 0: not (or no such run), -1: error */
static int run_is(struct dbq *q, int64_t id, int64_t pid, const char *tool)
{
	sqlite3_stmt *st = stmt(q, Q_RUN_OF, NULL);
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, id);
	int rc = sqlite3_step(st), is = 0;
	if (rc == SQLITE_ROW) {
		const unsigned char *t = sqlite3_column_text(st, 1);
		is = sqlite3_column_int64(st, 0) == pid && t && strcmp((const char *)t, tool) == 0;
	} else if (rc != SQLITE_DONE) {
		is = -1;
	}
	sqlite3_reset(st);
	return is;
}

int64_t dbq_find_run(struct dbq *q, int64_t handle, int64_t pid, const char *tool)
{
	if (handle > 0 && run_is(q, handle, pid, tool) == 1)
		return handle;
	/* another process logged meanwhile: walk back from the latest run */
	int64_t v = 0;
	bool present = false;
	sqlite3_stmt *st = stmt(q, Q_RUN_LATEST, NULL);
	if (!st || one_int(q, st, &v, &present, NULL) < 0)
		return 0;
	while (present) {
		int is = run_is(q, v, pid, tool);
		if (is < 0)
			return 0;
		if (is)
			return v;
		st = stmt(q, Q_RUN_BEFORE, NULL);
		if (!st)
			return 0;
		sqlite3_bind_int64(st, 1, v);
		if (one_int(q, st, &v, &present, NULL) < 0)
			return 0;
	}
	return 0;
}

#define F(field, kind, col) {col, kind, offsetof(struct dbq_run, field)}
static const struct col run_cols[] = {
	F(id, COL_I64, 0), F(tool, COL_TEXT, 1), F(command, COL_TEXT, 2), F(program, COL_TEXT, 3),
	F(backend, COL_TEXT_NULL, 4), F(config, COL_TEXT, 5), F(pid, COL_I64, 6), F(started_at, COL_DOUBLE, 7),
	F(finished, COL_SET, 8), F(ended_at, COL_DOUBLE, 8), F(exit_status, COL_STATUS, 9),
	F(source_text, COL_TEXT_NULL, 10),
};
#undef F
static const struct row_type run_type = ROW_TYPE(struct dbq_run, run_cols);

bool dbq_run_alive(int64_t pid)
{
	/* signal 0 only asks; EPERM: it exists, another user's */
	return pid > 0 && (kill((pid_t)pid, 0) == 0 || errno == EPERM);
}

void dbq_unfinished_text(int64_t pid, char *buf, size_t n)
{
	if (dbq_run_alive(pid))
		snprintf(buf, n, "still running, process %lld", (long long)pid);
	else if (pid > 0)
		snprintf(buf, n, "killed: process %lld is gone", (long long)pid);
	else
		snprintf(buf, n, "killed");
}

int dbq_run_get(struct dbq *q, int64_t id, struct dbq_run *out, char **err)
{
	if (err)
		*err = NULL;
	memset(out, 0, sizeof *out);
	sqlite3_stmt *st = stmt(q, Q_RUN, err);
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, id);
	int rc = sqlite3_step(st);
	if (rc == SQLITE_DONE) {
		sqlite3_reset(st);
		return set_err(err, "no run %lld in %s", (long long)id, q->path);
	}
	if (rc != SQLITE_ROW) {
		sqlite3_reset(st);
		return sql_err(q, err);
	}
	bool ok = read_row(st, &run_type, out);
	sqlite3_reset(st);
	if (!ok) {
		dbq_run_release(out);
		return set_err(err, "out of memory");
	}
	return 0;
}

void dbq_run_release(struct dbq_run *r)
{
	if (r)
		release_row(&run_type, r);
}

/* ---- growable arrays ---- */

static void *grow(void *arr, int n, int *cap, size_t size)
{
	if (n < *cap)
		return arr;
	int c = *cap ? *cap * 2 : 16;
	void *bigger = realloc(arr, (size_t)c * size);
	if (bigger)
		*cap = c;
	return bigger;
}

/* Steps st (bound) to the end, growing *arr by one row of type t for each
 * row of the statement. 0 with *arr and *n, or -1 with *err. */
static int collect(struct dbq *q, sqlite3_stmt *st, void **arr, int *nout, const struct row_type *t, char **err)
{
	char *a = NULL;
	int n = 0, cap = 0, rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		char *bigger = grow(a, n, &cap, t->size);
		if (!bigger) {
			sqlite3_reset(st);
			free_rows(t, a, n);
			return set_err(err, "out of memory");
		}
		a = bigger;
		void *e = a + (size_t)n * t->size;
		memset(e, 0, t->size);
		n++;
		if (!read_row(st, t, e)) {
			sqlite3_reset(st);
			free_rows(t, a, n);
			return set_err(err, "out of memory");
		}
	}
	sqlite3_reset(st);
	if (rc != SQLITE_DONE) {
		free_rows(t, a, n);
		return sql_err(q, err);
	}
	*arr = a;
	*nout = n;
	return 0;
}

/* The row of st (a statement of one row at most) into out: 0, 1 when
 * there is none, -1 with *err. */
static int collect_one(struct dbq *q, sqlite3_stmt *st, void *out, const struct row_type *t, char **err)
{
	void *a = NULL;
	int n = 0;
	memset(out, 0, t->size);
	if (collect(q, st, &a, &n, t, err) < 0)
		return -1;
	if (n > 0)
		memcpy(out, a, t->size);
	free(a);
	return n > 0 ? 0 : 1;
}

/* The start of a query of a list: no error, no rows yet, and statement s
 * ready to bind (NULL with *err). */
static sqlite3_stmt *list_begin(struct dbq *q, enum stmt s, void *out, int *n, char **err)
{
	if (err)
		*err = NULL;
	*(void **)out = NULL;
	*n = 0;
	return stmt(q, s, err);
}

/* the rows of statement s whose one parameter is id */
static int list_by_id(struct dbq *q, enum stmt s, int64_t id, void *out, int *n, const struct row_type *type,
		      char **err)
{
	sqlite3_stmt *st = list_begin(q, s, out, n, err);
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, id);
	return collect(q, st, (void **)out, n, type, err);
}

/* the key and the LIMIT of a page, parameters i and i + 1 (limit 0: all) */
static void bind_page(sqlite3_stmt *st, int i, int64_t key, int limit)
{
	sqlite3_bind_int64(st, i, key);
	sqlite3_bind_int(st, i + 1, limit > 0 ? limit : -1);
}

/* a compile id "F/N" */
/* "F/N": two runs of digits, each at most INT_MAX */
static bool parse_label(const char *label, int *frame, int *index)
{
	const char *slash = strchr(label, '/');
	if (!slash || slash == label || (size_t)(slash - label) > 10)
		return false;
	char f[11];
	memcpy(f, label, (size_t)(slash - label));
	f[slash - label] = 0;
	int64_t a = 0, b = 0;
	if (!parse_count(f, &a) || !parse_count(slash + 1, &b) || a > INT_MAX || b > INT_MAX)
		return false;
	*frame = (int)a;
	*index = (int)b;
	return true;
}

bool dbq_compile_label_ok(const char *label)
{
	int frame, index;
	return parse_label(label, &frame, &index);
}

/* ---- frames ---- */

static struct dbq_frame *frame_by_id(struct dbq_frame *f, int n, int64_t id)
{
	/* frames come in frame_index order, which is also id order within a
	 * run as long as one process logs it; search, then fall back */
	int lo = 0, hi = n - 1;
	while (lo <= hi) {
		int mid = lo + (hi - lo) / 2;
		if (f[mid].id == id)
			return &f[mid];
		if (f[mid].id < id)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	for (int i = 0; i < n; i++)
		if (f[i].id == id)
			return &f[i];
	return NULL;
}

#define F(field, kind, col) {col, kind, offsetof(struct dbq_frame, field)}
static const struct col frame_cols[] = {
	F(id, COL_I64, 0), F(frame_index, COL_INT, 1), F(function, COL_TEXT, 2), F(file, COL_TEXT, 3),
	F(line, COL_INT, 4), F(resume_pc, COL_INT, 5), F(resume_line, COL_INT, 6), F(calls, COL_I64, 7),
	F(cache_hits, COL_I64, 8), F(eager_calls, COL_I64, 9), F(eager_reason, COL_TEXT_NULL, 10),
	F(guard_checks, COL_I64, 11), F(guard_check_ms, COL_DOUBLE, 12), F(compiles, COL_I64, 13),
};
/* the sums over a frame's compiles (Q_FRAME_COMPILES; column 0 is the frame) */
static const struct col frame_sum_cols[] = {
	F(compiles, COL_I64, 1), F(recompiles, COL_I64, 2), F(entries, COL_I64, 3), F(cache_limit, COL_I64, 4),
	F(frozen_miss, COL_I64, 5), F(errors, COL_I64, 6), F(graphs, COL_I64, 7), F(ops, COL_I64, 8),
	F(trace_ms, COL_DOUBLE, 9), F(guard_ms, COL_DOUBLE, 10), F(backend_ms, COL_DOUBLE, 11),
	F(total_ms, COL_DOUBLE, 12),
};
#undef F
static const struct row_type frame_type = ROW_TYPE(struct dbq_frame, frame_cols);
static const struct row_type frame_sum_type = ROW_TYPE(struct dbq_frame, frame_sum_cols);

int dbq_frames(struct dbq *q, int64_t run_id, struct dbq_frame **out, int *nout, char **err)
{
	struct dbq_frame *f = NULL;
	int n = 0, rc;
	sqlite3_stmt *st = list_begin(q, Q_FRAMES, out, nout, err);
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, run_id);
	if (collect(q, st, (void **)&f, &n, &frame_type, err) < 0)
		return -1;
	st = stmt(q, Q_FRAME_COMPILES, err);
	if (!st) {
		dbq_frames_free(f, n);
		return -1;
	}
	sqlite3_bind_int64(st, 1, run_id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct dbq_frame *r = frame_by_id(f, n, sqlite3_column_int64(st, 0));
		if (r)
			read_row(st, &frame_sum_type, r); /* numbers only: cannot fail */
	}
	sqlite3_reset(st);
	if (rc != SQLITE_DONE) {
		dbq_frames_free(f, n);
		return sql_err(q, err);
	}
	*out = f;
	*nout = n;
	return 0;
}

void dbq_frames_free(struct dbq_frame *f, int n)
{
	free_rows(&frame_type, f, n);
}

/* ---- graph breaks ---- */

/* (column 9, the place's first break id, only orders the pages) */
#define F(field, kind, col) {col, kind, offsetof(struct dbq_break, field)}
static const struct col break_cols[] = {
	F(code, COL_TEXT, 0), F(file, COL_TEXT, 1), F(line, COL_INT, 2), F(col, COL_INT, 3),
	F(category, COL_TEXT, 4), F(message, COL_TEXT, 5), F(user_stack, COL_TEXT, 6), F(compiles, COL_I64, 7),
	F(hits, COL_I64, 8), F(fullgraph_errors, COL_I64, 10),
};
#undef F
static const struct row_type break_type = ROW_TYPE(struct dbq_break, break_cols);

int dbq_breaks(struct dbq *q, int64_t run_id, struct dbq_break **out, int *n, char **err)
{
	return list_by_id(q, Q_BREAKS, run_id, out, n, &break_type, err);
}

void dbq_breaks_free(struct dbq_break *b, int n)
{
	free_rows(&break_type, b, n);
}

/* ---- the backend's phases ---- */

#define F(field, kind, col) {col, kind, offsetof(struct dbq_phase, field)}
static const struct col phase_cols[] = {
	F(name, COL_TEXT, 0), F(ms, COL_DOUBLE, 1), F(compiles, COL_I64, 2),
};
#undef F
static const struct row_type phase_type = ROW_TYPE(struct dbq_phase, phase_cols);

int dbq_backend_phases(struct dbq *q, int64_t run_id, struct dbq_phase **out, int *n, char **err)
{
	return list_by_id(q, Q_BACKEND_PHASES, run_id, out, n, &phase_type, err);
}

int dbq_compile_backend_phases(struct dbq *q, int64_t compile_id, struct dbq_phase **out, int *n, char **err)
{
	return list_by_id(q, Q_COMPILE_BACKEND_PHASES, compile_id, out, n, &phase_type, err);
}

void dbq_phases_free(struct dbq_phase *p, int n)
{
	free_rows(&phase_type, p, n);
}

/* ---- guard failures ---- */

static const char *col_str(sqlite3_stmt *st, int i)
{
	const unsigned char *s = sqlite3_column_text(st, i);
	return s ? (const char *)s : "";
}

int dbq_each_failure(struct dbq *q, int64_t run_id, int (*fn)(void *ctx, const struct dbq_failure *f), void *ctx,
		     char **err)
{
	if (err)
		*err = NULL;
	sqlite3_stmt *st = stmt(q, Q_FAILURES, err);
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, run_id);
	int rc, stop = 0;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct dbq_failure f = {
			.compile_id = sqlite3_column_int64(st, 0),
			.frame_id = sqlite3_column_int64(st, 1),
			.failed_label = col_str(st, 2),
			.guard_text = col_str(st, 3),
			.value_seen = col_str(st, 4),
		};
		stop = fn(ctx, &f);
		if (stop)
			break;
	}
	sqlite3_reset(st);
	if (!stop && rc != SQLITE_DONE)
		return sql_err(q, err);
	return stop;
}

/* ---- guards ---- */

#define F(field, kind, col) {col, kind, offsetof(struct dbq_guard, field)}
static const struct col guard_cols[] = {
	F(idx, COL_INT, 0), F(kind, COL_TEXT, 1), F(text, COL_TEXT, 2), F(file, COL_TEXT_NULL, 3),
	F(line, COL_INT, 4), F(col, COL_INT, 5),
};
#undef F
static const struct row_type guard_type = ROW_TYPE(struct dbq_guard, guard_cols);

int dbq_guards(struct dbq *q, int64_t run_id, const char *label, struct dbq_guard **out, int *n, char **err)
{
	int frame = -1, index = -1;
	sqlite3_stmt *st = list_begin(q, Q_GUARDS, out, n, err);
	if (!st)
		return -1;
	if (!parse_label(label, &frame, &index))
		return 0; /* not a compile id: no guards */
	sqlite3_bind_int64(st, 1, run_id);
	sqlite3_bind_int(st, 2, frame);
	sqlite3_bind_int(st, 3, index);
	return collect(q, st, (void **)out, n, &guard_type, err);
}

void dbq_guards_free(struct dbq_guard *g, int n)
{
	free_rows(&guard_type, g, n);
}

/* ---- browsing ---- */

#define F(field, kind, col) {col, kind, offsetof(struct dbq_run_row, field)}
static const struct col run_row_cols[] = {
	F(id, COL_I64, 0), F(tool, COL_TEXT, 1), F(program, COL_TEXT, 2), F(command, COL_TEXT, 3),
	F(started_at, COL_DOUBLE, 4), F(finished, COL_SET, 5), F(ended_at, COL_DOUBLE, 5),
	F(exit_status, COL_STATUS, 6), F(pid, COL_I64, 7), F(compiles, COL_I64, 8), F(graphs, COL_I64, 9),
	F(breaks, COL_I64, 10), F(recompiles, COL_I64, 11),
};
#undef F
static const struct row_type run_row_type = ROW_TYPE(struct dbq_run_row, run_row_cols);

int dbq_runs_page(struct dbq *q, int64_t before, int limit, struct dbq_run_row **out, int *n, char **err)
{
	sqlite3_stmt *st = list_begin(q, Q_RUNS_PAGE, out, n, err);
	if (!st)
		return -1;
	bind_page(st, 1, before > 0 ? before : INT64_MAX, limit);
	return collect(q, st, (void **)out, n, &run_row_type, err);
}

void dbq_run_rows_free(struct dbq_run_row *r, int n)
{
	free_rows(&run_row_type, r, n);
}

#define F(field, kind, col) {col, kind, offsetof(struct dbq_compile, field)}
static const struct col compile_cols[] = {
	F(id, COL_I64, 0), F(run_id, COL_I64, 1), F(frame_id, COL_I64, 2), F(label, COL_TEXT, 3),
	F(frame_index, COL_INT, 4), F(compile_index, COL_INT, 5), F(function, COL_TEXT, 6), F(file, COL_TEXT, 7),
	F(line, COL_INT, 8), F(resume_pc, COL_INT, 9), F(resume_line, COL_INT, 10), F(reason, COL_TEXT, 11),
	F(backend, COL_TEXT, 12), F(outcome, COL_TEXT, 13), F(dynamic, COL_TEXT_NULL, 14),
	F(error, COL_TEXT_NULL, 15), F(started_at, COL_DOUBLE, 16), F(trace_ms, COL_DOUBLE, 17),
	F(guard_ms, COL_DOUBLE, 18), F(backend_ms, COL_DOUBLE, 19), F(total_ms, COL_DOUBLE, 20),
	F(op_count, COL_I64, 21), F(partitioned, COL_SET, 22), F(saved_bytes, COL_I64, 22),
};
#undef F
static const struct row_type compile_type = ROW_TYPE(struct dbq_compile, compile_cols);

int dbq_compiles(struct dbq *q, int64_t run_id, int64_t after, int limit, struct dbq_compile **out, int *n,
		 char **err)
{
	sqlite3_stmt *st = list_begin(q, Q_COMPILES, out, n, err);
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, run_id);
	bind_page(st, 2, after, limit);
	return collect(q, st, (void **)out, n, &compile_type, err);
}

int dbq_compile_get(struct dbq *q, int64_t run_id, const char *label, struct dbq_compile *out, char **err)
{
	if (err)
		*err = NULL;
	memset(out, 0, sizeof *out);
	int frame = -1, index = -1;
	if (!parse_label(label, &frame, &index))
		return set_err(err, "bad compile id '%s': expected F/N, as 0/1", label);
	sqlite3_stmt *st = stmt(q, Q_COMPILE_BY_LABEL, err);
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, run_id);
	sqlite3_bind_int(st, 2, frame);
	sqlite3_bind_int(st, 3, index);
	int rc = collect_one(q, st, out, &compile_type, err);
	return rc > 0 ? set_err(err, "no compile %s in run %lld", label, (long long)run_id) : rc;
}

void dbq_compile_release(struct dbq_compile *c)
{
	if (c)
		release_row(&compile_type, c);
}

void dbq_compiles_free(struct dbq_compile *c, int n)
{
	free_rows(&compile_type, c, n);
}

/* the break's columns are NULL when the compile did not break (LEFT JOIN);
 * when it did, they are all set (NOT NULL in the schema) */
#define F(field, kind, col) {col, kind, offsetof(struct dbq_graph, field)}
static const struct col graph_cols[] = {
	F(id, COL_I64, 0), F(compile_id, COL_I64, 1), F(run_id, COL_I64, 2), F(label, COL_TEXT, 3),
	F(stage, COL_TEXT, 4), F(name, COL_TEXT, 5), F(listing, COL_TEXT, 6), F(op_count, COL_I64, 7),
	F(break_code, COL_TEXT_NULL, 8), F(break_category, COL_TEXT_NULL, 9),
	F(break_message, COL_TEXT_NULL, 10), F(break_file, COL_TEXT_NULL, 11), F(break_line, COL_INT, 12),
	F(break_col, COL_INT, 13),
};
#undef F
static const struct row_type graph_type = ROW_TYPE(struct dbq_graph, graph_cols);

int dbq_graph_get(struct dbq *q, int64_t graph_id, struct dbq_graph *out, char **err)
{
	if (err)
		*err = NULL;
	memset(out, 0, sizeof *out);
	sqlite3_stmt *st = stmt(q, Q_GRAPH, err);
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, graph_id);
	int rc = collect_one(q, st, out, &graph_type, err);
	return rc > 0 ? set_err(err, "no graph %lld in %s", (long long)graph_id, q->path) : rc;
}

int dbq_graphs_of(struct dbq *q, int64_t compile_id, struct dbq_graph **out, int *n, char **err)
{
	return list_by_id(q, Q_GRAPHS_OF, compile_id, out, n, &graph_type, err);
}

void dbq_graph_release(struct dbq_graph *g)
{
	if (g)
		release_row(&graph_type, g);
}

void dbq_graphs_free(struct dbq_graph *g, int n)
{
	free_rows(&graph_type, g, n);
}

#define F(field, kind, col) {col, kind, offsetof(struct dbq_node, field)}
static const struct col node_cols[] = {
	F(idx, COL_INT, 0), F(name, COL_TEXT, 1), F(kind, COL_TEXT, 2), F(op, COL_TEXT_NULL, 3),
	F(args, COL_TEXT, 4), F(dtype, COL_TEXT_NULL, 5), F(shape, COL_TEXT_NULL, 6), F(file, COL_TEXT_NULL, 7),
	F(line, COL_INT, 8), F(col, COL_INT, 9), F(user_stack, COL_TEXT_NULL, 10),
};
#undef F
static const struct row_type node_type = ROW_TYPE(struct dbq_node, node_cols);

int dbq_nodes(struct dbq *q, int64_t graph_id, struct dbq_node **out, int *n, char **err)
{
	return list_by_id(q, Q_NODES, graph_id, out, n, &node_type, err);
}

void dbq_nodes_free(struct dbq_node *nd, int n)
{
	free_rows(&node_type, nd, n);
}

#define F(field, kind, col) {col, kind, offsetof(struct dbq_saved, field)}
static const struct col saved_cols[] = {
	F(idx, COL_INT, 0), F(graph_id, COL_I64, 1), F(node, COL_INT, 2), F(name, COL_TEXT, 3),
	F(dtype, COL_TEXT_NULL, 4), F(shape, COL_TEXT_NULL, 5), F(bytes, COL_I64, 6),
};
#undef F
static const struct row_type saved_type = ROW_TYPE(struct dbq_saved, saved_cols);

int dbq_saved(struct dbq *q, int64_t compile_id, struct dbq_saved **out, int *n, char **err)
{
	return list_by_id(q, Q_SAVED, compile_id, out, n, &saved_type, err);
}

void dbq_saved_free(struct dbq_saved *s, int n)
{
	free_rows(&saved_type, s, n);
}

#define F(field, kind, col) {col, kind, offsetof(struct dbq_kernel, field)}
static const struct col kernel_cols[] = {
	F(graph_id, COL_I64, 0), F(stage, COL_TEXT, 1), F(idx, COL_INT, 2), F(name, COL_TEXT, 3),
	F(kind, COL_TEXT, 4), F(hash, COL_TEXT, 5), F(fused_nodes, COL_TEXT, 6), F(loop_ir, COL_TEXT, 7),
	F(llvm_ir, COL_TEXT_NULL, 8), F(cache_hit, COL_INT, 9), F(codegen_ms, COL_DOUBLE, 10),
};
#undef F
static const struct row_type kernel_type = ROW_TYPE(struct dbq_kernel, kernel_cols);

int dbq_kernels(struct dbq *q, int64_t compile_id, struct dbq_kernel **out, int *n, char **err)
{
	return list_by_id(q, Q_KERNELS, compile_id, out, n, &kernel_type, err);
}

void dbq_kernels_free(struct dbq_kernel *k, int n)
{
	free_rows(&kernel_type, k, n);
}

int dbq_kernel_counts(struct dbq *q, int64_t run_id, int64_t *kernels, int64_t *cached, char **err)
{
	*kernels = *cached = 0;
	sqlite3_stmt *st = stmt(q, Q_KERNEL_COUNTS, err);
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, run_id);
	int rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*kernels = sqlite3_column_int64(st, 0);
		*cached = sqlite3_column_int64(st, 1);
		rc = sqlite3_step(st);
	}
	if (rc != SQLITE_DONE) {
		sql_err(q, err);
		sqlite3_reset(st);
		return -1;
	}
	sqlite3_reset(st);
	return 0;
}

/* ---- tjit-tui ---- */

int dbq_runs_after(struct dbq *q, int64_t after, int limit, struct dbq_run_row **out, int *n, char **err)
{
	sqlite3_stmt *st = list_begin(q, Q_TUI_RUNS_AFTER, out, n, err);
	if (!st)
		return -1;
	bind_page(st, 1, after, limit);
	return collect(q, st, (void **)out, n, &run_row_type, err);
}

int dbq_compiles_page(struct dbq *q, int64_t run_id, int64_t key, int dir, int limit, struct dbq_compile **out,
		      int *n, char **err)
{
	if (dir > 0)
		return dbq_compiles(q, run_id, key, limit, out, n, err);
	sqlite3_stmt *st = list_begin(q, Q_TUI_COMPILES_BEFORE, out, n, err);
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, run_id);
	bind_page(st, 2, key, limit);
	return collect(q, st, (void **)out, n, &compile_type, err);
}

int dbq_frame_compiles_page(struct dbq *q, int64_t frame_id, int64_t key, int dir, int limit,
			    struct dbq_compile **out, int *n, char **err)
{
	sqlite3_stmt *st = list_begin(q, dir > 0 ? Q_TUI_FRAME_COMPILES_AFTER : Q_TUI_FRAME_COMPILES_BEFORE, out, n, err);
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, frame_id);
	bind_page(st, 2, key, limit);
	return collect(q, st, (void **)out, n, &compile_type, err);
}

int dbq_frames_page(struct dbq *q, int64_t run_id, int64_t key, int dir, int limit, struct dbq_frame **out, int *n,
		    char **err)
{
	sqlite3_stmt *st = list_begin(q, dir > 0 ? Q_TUI_FRAMES_AFTER : Q_TUI_FRAMES_BEFORE, out, n, err);
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, run_id);
	bind_page(st, 2, key, limit);
	return collect(q, st, (void **)out, n, &frame_type, err);
}

/* above any code a break has (UTF-8 text never has the byte 0xf8) */
#define TOP_TEXT "\xf8"

int dbq_break_places_page(struct dbq *q, int64_t run_id, const struct dbq_break *anchor, int dir, int limit,
			  struct dbq_break **out, int *n, char **err)
{
	sqlite3_stmt *st = list_begin(q, dir > 0 ? Q_TUI_PLACES_AFTER : Q_TUI_PLACES_BEFORE, out, n, err);
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, run_id);
	if (anchor) {
		sqlite3_bind_text(st, 2, anchor->code, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 3, anchor->file, -1, SQLITE_STATIC);
		sqlite3_bind_int(st, 4, anchor->line);
	} else {
		sqlite3_bind_text(st, 2, dir > 0 ? "" : TOP_TEXT, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 3, dir > 0 ? "" : TOP_TEXT, -1, SQLITE_STATIC);
		sqlite3_bind_int(st, 4, dir > 0 ? -1 : INT32_MAX);
	}
	sqlite3_bind_int(st, 5, limit > 0 ? limit : -1);
	return collect(q, st, (void **)out, n, &break_type, err);
}

int dbq_compile_breaks(struct dbq *q, int64_t compile_id, struct dbq_break **out, int *n, char **err)
{
	return list_by_id(q, Q_TUI_COMPILE_BREAKS, compile_id, out, n, &break_type, err);
}

#define F(field, kind, col) {col, kind, offsetof(struct dbq_failure_row, field)}
static const struct col failure_row_cols[] = {
	F(id, COL_I64, 0), F(compile_id, COL_I64, 1), F(label, COL_TEXT, 2), F(function, COL_TEXT, 3),
	F(failed_label, COL_TEXT, 4), F(guard_text, COL_TEXT, 5), F(value_seen, COL_TEXT, 6),
};
#undef F
static const struct row_type failure_row_type = ROW_TYPE(struct dbq_failure_row, failure_row_cols);

int dbq_failures_page(struct dbq *q, int64_t run_id, int64_t compile_id, int64_t key, int dir, int limit,
		      struct dbq_failure_row **out, int *n, char **err)
{
	enum stmt which = compile_id > 0 ? Q_TUI_COMPILE_FAILURES
			  : dir > 0	  ? Q_TUI_FAILURES_AFTER
					  : Q_TUI_FAILURES_BEFORE;
	sqlite3_stmt *st = list_begin(q, which, out, n, err);
	if (!st)
		return -1;
	if (compile_id > 0) {
		sqlite3_bind_int64(st, 1, compile_id);
	} else {
		sqlite3_bind_int64(st, 1, run_id);
		bind_page(st, 2, key, limit);
	}
	return collect(q, st, (void **)out, n, &failure_row_type, err);
}

void dbq_failure_rows_free(struct dbq_failure_row *r, int n)
{
	free_rows(&failure_row_type, r, n);
}

#define F(field, kind, col) {col, kind, offsetof(struct dbq_session, field)}
static const struct col session_cols[] = {
	F(id, COL_I64, 0), F(run_id, COL_I64, 1), F(program, COL_TEXT, 2), F(backend, COL_TEXT_NULL, 3),
	F(failure, COL_TEXT, 4), F(started_at, COL_DOUBLE, 5), F(finished, COL_SET, 6), F(ended_at, COL_DOUBLE, 6),
	F(stage, COL_TEXT_NULL, 7), F(result, COL_TEXT_NULL, 8), F(repro_path, COL_TEXT_NULL, 9),
	F(steps, COL_I64, 10),
};
#undef F
static const struct row_type session_type = ROW_TYPE(struct dbq_session, session_cols);

int dbq_sessions_page(struct dbq *q, int64_t run_id, int64_t key, int dir, int limit, struct dbq_session **out,
		      int *n, char **err)
{
	enum stmt which = run_id > 0 ? Q_TUI_RUN_SESSIONS : dir > 0 ? Q_TUI_SESSIONS_AFTER : Q_TUI_SESSIONS_BEFORE;
	sqlite3_stmt *st = list_begin(q, which, out, n, err);
	if (!st)
		return -1;
	if (run_id > 0)
		sqlite3_bind_int64(st, 1, run_id);
	else
		bind_page(st, 1, key, limit);
	return collect(q, st, (void **)out, n, &session_type, err);
}

void dbq_sessions_free(struct dbq_session *s, int n)
{
	free_rows(&session_type, s, n);
}

#define F(field, kind, col) {col, kind, offsetof(struct dbq_step, field)}
static const struct col step_cols[] = {
	F(id, COL_I64, 0), F(phase, COL_TEXT, 1), F(candidate, COL_TEXT, 2), F(nodes, COL_STATUS, 3),
	F(outcome, COL_TEXT, 4), F(ms, COL_DOUBLE, 5),
};
#undef F
static const struct row_type step_type = ROW_TYPE(struct dbq_step, step_cols);

int dbq_steps_page(struct dbq *q, int64_t session_id, int64_t key, int dir, int limit, struct dbq_step **out,
		   int *n, char **err)
{
	sqlite3_stmt *st = list_begin(q, dir > 0 ? Q_TUI_STEPS_AFTER : Q_TUI_STEPS_BEFORE, out, n, err);
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, session_id);
	bind_page(st, 2, key, limit);
	return collect(q, st, (void **)out, n, &step_type, err);
}

void dbq_steps_free(struct dbq_step *s, int n)
{
	free_rows(&step_type, s, n);
}

/* ---- tests ---- */

const char *dbq_statement(int i, bool *may_scan_runs)
{
	if (i < 0 || i >= Q_COUNT)
		return NULL;
	if (may_scan_runs)
		*may_scan_runs = i == Q_RUN_COUNT;
	return stmt_sql[i];
}

char *dbq_explain(struct dbq *q, int i, char **err)
{
	if (err)
		*err = NULL;
	if (i < 0 || i >= Q_COUNT) {
		set_err(err, "no statement %d", i);
		return NULL;
	}
	size_t len = strlen(stmt_sql[i]) + 32;
	char *sql = malloc(len);
	if (!sql) {
		set_err(err, "out of memory");
		return NULL;
	}
	snprintf(sql, len, "EXPLAIN QUERY PLAN %s", stmt_sql[i]);
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(q->db, sql, -1, &st, NULL);
	free(sql);
	if (rc != SQLITE_OK) {
		sql_err(q, err);
		return NULL;
	}
	char *out = NULL;
	size_t n = 0;
	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *d = col_str(st, 3);
		size_t dl = strlen(d);
		char *bigger = realloc(out, n + dl + 2);
		if (!bigger) {
			free(out);
			sqlite3_finalize(st);
			set_err(err, "out of memory");
			return NULL;
		}
		out = bigger;
		memcpy(out + n, d, dl);
		n += dl;
		out[n++] = '\n';
		out[n] = 0;
	}
	sqlite3_finalize(st);
	return out ? out : strdup("");
}
