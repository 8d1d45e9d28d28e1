/* query.c - the tools' read queries (query.h).
 *
 * One read-only connection per struct dbq. Each statement is prepared
 * when it is first used and kept; all of them are in the table stmt_sql[]
 * below, so that a test checks the plan of every one (no SCAN: each finds
 * its rows through an index of db/schema.sql or a primary key). Only the
 * run count in the message of an unknown RUN reads the runs table whole.
 */
#include "query.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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
	Q_FAILURES,
	Q_GUARDS,
	Q_RUNS_PAGE,
	Q_COMPILES,
	Q_COMPILE_BY_LABEL,
	Q_GRAPH,
	Q_GRAPHS_OF,
	Q_NODES,
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
	Q_COUNT
};

#define COMPILE_COLS                                                                                     \
	"c.id, c.run_id, c.frame_id, c.label, f.frame_index, c.compile_index, f.function, f.file, f.line," \
	" f.resume_pc, f.resume_line, c.reason, c.backend, c.outcome, c.dynamic, c.error, c.started_at,"  \
	" c.trace_ms, c.guard_ms, c.backend_ms, c.total_ms, c.op_count"
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
		     " eager_calls, eager_reason, guard_checks, guard_check_ms, NULL"
		     " FROM frames WHERE run_id = ?1 ORDER BY frame_index",
	[Q_FRAME_COMPILES] =
		"SELECT frame_id, count(*), sum(reason = 'recompile'),"
		" sum(reason IN ('first', 'recompile') AND outcome IN ('ok', 'graph_break')),"
		" sum(reason = 'cache_limit'), sum(reason = 'frozen_miss'), sum(outcome = 'error'),"
		" sum(op_count > 0), sum(op_count), sum(trace_ms), sum(guard_ms), sum(backend_ms), sum(total_ms)"
		" FROM compiles WHERE run_id = ?1 GROUP BY frame_id",
	[Q_BREAKS] = BREAK_PLACE_COLS " WHERE b.run_id = ?1 GROUP BY b.code, b.file, b.line"
		     " ORDER BY h DESC, count(*) DESC, b.file, b.line, b.code",
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
	/* ---- tjit-tui: pages in both directions by a key range ---- */
	[Q_TUI_COMPILES_BEFORE] = COMPILES_SELECT " WHERE c.run_id = ?1 AND c.id < ?2 ORDER BY c.id DESC LIMIT ?3",
	[Q_TUI_FRAME_COMPILES_AFTER] = COMPILES_SELECT " WHERE c.frame_id = ?1 AND c.compile_index > ?2"
				       " ORDER BY c.compile_index LIMIT ?3",
	[Q_TUI_FRAME_COMPILES_BEFORE] = COMPILES_SELECT " WHERE c.frame_id = ?1 AND c.compile_index < ?2"
					" ORDER BY c.compile_index DESC LIMIT ?3",
	/* a frame's compiles are numbered 0, 1, ...: the largest N is one
	 * search of compiles_frame, where counting them would read them all */
#define TUI_FRAME_COLS                                                                                   \
	"SELECT f.id, f.frame_index, f.function, f.file, f.line, f.resume_pc, f.resume_line, f.calls,"   \
	" f.cache_hits, f.eager_calls, f.eager_reason, f.guard_checks, f.guard_check_ms,"                 \
	" (SELECT max(compile_index) FROM compiles WHERE frame_id = f.id) FROM frames f"
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
};

struct dbq {
	sqlite3 *db;
	char *path;
	sqlite3_stmt *stmt[Q_COUNT];
};

/* ---- helpers ---- */

static char *xvasprintf(const char *fmt, va_list ap)
{
	va_list ap2;
	va_copy(ap2, ap);
	int n = vsnprintf(NULL, 0, fmt, ap2);
	va_end(ap2);
	if (n < 0)
		return NULL;
	char *s = malloc((size_t)n + 1);
	if (s)
		vsnprintf(s, (size_t)n + 1, fmt, ap);
	return s;
}

__attribute__((format(printf, 2, 3))) static int set_err(char **err, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		*err = xvasprintf(fmt, ap);
		va_end(ap);
	}
	return -1;
}

static int sql_err(struct dbq *q, char **err)
{
	return set_err(err, "database %s: %s", q->path, sqlite3_errmsg(q->db));
}

static char *dup_col(sqlite3_stmt *st, int i)
{
	const unsigned char *s = sqlite3_column_text(st, i);
	if (!s)
		return NULL;
	return strdup((const char *)s);
}

/* never NULL (malloc failure aside): NULL columns read as "" */
static char *dup_text(sqlite3_stmt *st, int i)
{
	char *s = dup_col(st, i);
	return s ? s : strdup("");
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

/* "file:" URI of path, percent-encoding what a URI would read otherwise */
static char *uri_of(const char *path)
{
	size_t n = strlen(path);
	char *u = malloc(n * 3 + 32);
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
	strcpy(p, "?mode=ro");
	return u;
}

/* ---- opening ---- */

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
	char *uri = uri_of(path);
	if (!q || !uri || !(q->path = strdup(path))) {
		free(uri);
		free(q);
		set_err(err, "out of memory");
		return NULL;
	}
	int rc = sqlite3_open_v2(uri, &q->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, NULL);
	free(uri);
	if (rc != SQLITE_OK) {
		set_err(err, "cannot open '%s': %s", path, q->db ? sqlite3_errmsg(q->db) : sqlite3_errstr(rc));
		dbq_close(q);
		return NULL;
	}
	sqlite3_busy_timeout(q->db, BUSY_TIMEOUT_MS);
	sqlite3_stmt *st = NULL;
	int64_t version = -1, tables = 0;
	rc = sqlite3_prepare_v2(q->db, "PRAGMA user_version", -1, &st, NULL);
	if (rc == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
		version = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	st = NULL;
	if (version >= 0 &&
	    sqlite3_prepare_v2(q->db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'runs'", -1,
			       &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		tables = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	if (version < 0) {
		rc = sqlite3_errcode(q->db);
		if (rc == SQLITE_NOTADB)
			set_err(err, "'%s' is not a tjit database", path);
		else
			set_err(err, "cannot read '%s': %s", path, sqlite3_errmsg(q->db));
		dbq_close(q);
		return NULL;
	}
	if (version > DB_SCHEMA_VERSION) {
		set_err(err, "database %s has schema version %lld, this build understands up to %d", path,
			(long long)version, DB_SCHEMA_VERSION);
		dbq_close(q);
		return NULL;
	}
	if (version == 0 || tables == 0) {
		set_err(err, "'%s' is not a tjit database", path);
		dbq_close(q);
		return NULL;
	}
	if (version < DB_SCHEMA_VERSION) {
		set_err(err, "database %s has the old schema version %lld: run tjit on it once to migrate it", path,
			(long long)version);
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
	if (!parse_count(spec, &v) || v == 0)
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
	out->id = sqlite3_column_int64(st, 0);
	out->tool = dup_text(st, 1);
	out->command = dup_text(st, 2);
	out->program = dup_text(st, 3);
	out->backend = dup_col(st, 4);
	out->config = dup_text(st, 5);
	out->pid = sqlite3_column_int64(st, 6);
	out->started_at = sqlite3_column_double(st, 7);
	out->finished = sqlite3_column_type(st, 8) != SQLITE_NULL;
	out->ended_at = sqlite3_column_double(st, 8);
	out->exit_status = sqlite3_column_type(st, 9) != SQLITE_NULL ? sqlite3_column_int(st, 9) : -1;
	out->source_text = dup_col(st, 10);
	sqlite3_reset(st);
	if (!out->tool || !out->command || !out->program || !out->config) {
		dbq_run_release(out);
		return set_err(err, "out of memory");
	}
	return 0;
}

void dbq_run_release(struct dbq_run *r)
{
	if (!r)
		return;
	free(r->tool);
	free(r->command);
	free(r->program);
	free(r->backend);
	free(r->config);
	free(r->source_text);
	memset(r, 0, sizeof *r);
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

/* Steps st (bound) to the end, growing *arr by one element of size for
 * each row and filling it with fill (which returns false when out of
 * memory). 0 with *arr and *n, or -1 with *err; free(elem) frees one
 * element's strings. */
static int collect(struct dbq *q, sqlite3_stmt *st, void **arr, int *nout, size_t size,
		   bool (*fill)(sqlite3_stmt *st, void *elem), void (*free_elems)(void *arr, int n), char **err)
{
	char *a = NULL;
	int n = 0, cap = 0, rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		char *bigger = grow(a, n, &cap, size);
		if (!bigger) {
			sqlite3_reset(st);
			free_elems(a, n);
			return set_err(err, "out of memory");
		}
		a = bigger;
		void *e = a + (size_t)n * size;
		memset(e, 0, size);
		n++;
		if (!fill(st, e)) {
			sqlite3_reset(st);
			free_elems(a, n);
			return set_err(err, "out of memory");
		}
	}
	sqlite3_reset(st);
	if (rc != SQLITE_DONE) {
		free_elems(a, n);
		return sql_err(q, err);
	}
	*arr = a;
	*nout = n;
	return 0;
}

/* The row of st (a statement of one row at most) into out: 0, 1 when
 * there is none, -1 with *err. */
static int collect_one(struct dbq *q, sqlite3_stmt *st, void *out, size_t size,
		       bool (*fill)(sqlite3_stmt *st, void *elem), void (*free_elems)(void *arr, int n), char **err)
{
	void *a = NULL;
	int n = 0;
	memset(out, 0, size);
	if (collect(q, st, &a, &n, size, fill, free_elems, err) < 0)
		return -1;
	if (n > 0)
		memcpy(out, a, size);
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

/* the key and the LIMIT of a page, parameters i and i + 1 (limit 0: all) */
static void bind_page(sqlite3_stmt *st, int i, int64_t key, int limit)
{
	sqlite3_bind_int64(st, i, key);
	sqlite3_bind_int(st, i + 1, limit > 0 ? limit : -1);
}

/* a compile id "F/N" */
static bool parse_label(const char *label, int *frame, int *index)
{
	int used = 0;
	return label[0] >= '0' && label[0] <= '9' && sscanf(label, "%d/%d%n", frame, index, &used) == 2 &&
	       !label[used] && *frame >= 0 && *index >= 0;
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

static bool fill_frame_row(sqlite3_stmt *st, void *elem)
{
	struct dbq_frame *r = elem;
	r->id = sqlite3_column_int64(st, 0);
	r->frame_index = sqlite3_column_int(st, 1);
	r->function = dup_text(st, 2);
	r->file = dup_text(st, 3);
	r->line = sqlite3_column_int(st, 4);
	r->resume_pc = sqlite3_column_int(st, 5);
	r->resume_line = sqlite3_column_int(st, 6);
	r->calls = sqlite3_column_int64(st, 7);
	r->cache_hits = sqlite3_column_int64(st, 8);
	r->eager_calls = sqlite3_column_int64(st, 9);
	r->eager_reason = dup_col(st, 10);
	r->guard_checks = sqlite3_column_int64(st, 11);
	r->guard_check_ms = sqlite3_column_double(st, 12);
	r->compiles = sqlite3_column_type(st, 13) == SQLITE_NULL ? 0 : sqlite3_column_int64(st, 13) + 1;
	return r->function && r->file;
}

static void free_frames(void *arr, int n) { dbq_frames_free(arr, n); }

int dbq_frames(struct dbq *q, int64_t run_id, struct dbq_frame **out, int *nout, char **err)
{
	struct dbq_frame *f = NULL;
	int n = 0, rc;
	sqlite3_stmt *st = list_begin(q, Q_FRAMES, out, nout, err);
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, run_id);
	if (collect(q, st, (void **)&f, &n, sizeof *f, fill_frame_row, free_frames, err) < 0)
		return -1;
	st = stmt(q, Q_FRAME_COMPILES, err);
	if (!st) {
		dbq_frames_free(f, n);
		return -1;
	}
	sqlite3_bind_int64(st, 1, run_id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct dbq_frame *r = frame_by_id(f, n, sqlite3_column_int64(st, 0));
		if (!r)
			continue;
		r->compiles = sqlite3_column_int64(st, 1);
		r->recompiles = sqlite3_column_int64(st, 2);
		r->entries = sqlite3_column_int64(st, 3);
		r->cache_limit = sqlite3_column_int64(st, 4);
		r->frozen_miss = sqlite3_column_int64(st, 5);
		r->errors = sqlite3_column_int64(st, 6);
		r->graphs = sqlite3_column_int64(st, 7);
		r->ops = sqlite3_column_int64(st, 8);
		r->trace_ms = sqlite3_column_double(st, 9);
		r->guard_ms = sqlite3_column_double(st, 10);
		r->backend_ms = sqlite3_column_double(st, 11);
		r->total_ms = sqlite3_column_double(st, 12);
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
	for (int i = 0; i < n; i++) {
		free(f[i].function);
		free(f[i].file);
		free(f[i].eager_reason);
	}
	free(f);
}

/* ---- graph breaks ---- */

static bool fill_break(sqlite3_stmt *st, void *elem)
{
	struct dbq_break *r = elem;
	r->code = dup_text(st, 0);
	r->file = dup_text(st, 1);
	r->line = sqlite3_column_int(st, 2);
	r->col = sqlite3_column_int(st, 3);
	r->category = dup_text(st, 4);
	r->message = dup_text(st, 5);
	r->user_stack = dup_text(st, 6);
	r->compiles = sqlite3_column_int64(st, 7);
	r->hits = sqlite3_column_int64(st, 8);
	r->fullgraph_errors = sqlite3_column_int64(st, 10);
	return r->code && r->file && r->category && r->message && r->user_stack;
}

static void free_breaks(void *arr, int n) { dbq_breaks_free(arr, n); }

int dbq_breaks(struct dbq *q, int64_t run_id, struct dbq_break **out, int *n, char **err)
{
	sqlite3_stmt *st = list_begin(q, Q_BREAKS, out, n, err);
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, run_id);
	return collect(q, st, (void **)out, n, sizeof **out, fill_break, free_breaks, err);
}

void dbq_breaks_free(struct dbq_break *b, int n)
{
	for (int i = 0; i < n; i++) {
		free(b[i].code);
		free(b[i].category);
		free(b[i].message);
		free(b[i].file);
		free(b[i].user_stack);
	}
	free(b);
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

static bool fill_guard(sqlite3_stmt *st, void *elem)
{
	struct dbq_guard *r = elem;
	r->idx = sqlite3_column_int(st, 0);
	r->kind = dup_text(st, 1);
	r->text = dup_text(st, 2);
	r->file = dup_col(st, 3);
	r->line = sqlite3_column_int(st, 4);
	r->col = sqlite3_column_int(st, 5);
	return r->kind && r->text;
}

static void free_guards(void *arr, int n) { dbq_guards_free(arr, n); }

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
	return collect(q, st, (void **)out, n, sizeof **out, fill_guard, free_guards, err);
}

void dbq_guards_free(struct dbq_guard *g, int n)
{
	for (int i = 0; i < n; i++) {
		free(g[i].kind);
		free(g[i].text);
		free(g[i].file);
	}
	free(g);
}

/* ---- browsing ---- */

static bool fill_run_row(sqlite3_stmt *st, void *elem)
{
	struct dbq_run_row *r = elem;
	r->id = sqlite3_column_int64(st, 0);
	r->tool = dup_text(st, 1);
	r->program = dup_text(st, 2);
	r->command = dup_text(st, 3);
	r->started_at = sqlite3_column_double(st, 4);
	r->finished = sqlite3_column_type(st, 5) != SQLITE_NULL;
	r->ended_at = sqlite3_column_double(st, 5);
	r->exit_status = sqlite3_column_type(st, 6) != SQLITE_NULL ? sqlite3_column_int(st, 6) : -1;
	r->pid = sqlite3_column_int64(st, 7);
	r->compiles = sqlite3_column_int64(st, 8);
	r->graphs = sqlite3_column_int64(st, 9);
	r->breaks = sqlite3_column_int64(st, 10);
	r->recompiles = sqlite3_column_int64(st, 11);
	return r->tool && r->program && r->command;
}

static void free_run_rows(void *arr, int n) { dbq_run_rows_free(arr, n); }

int dbq_runs_page(struct dbq *q, int64_t before, int limit, struct dbq_run_row **out, int *n, char **err)
{
	sqlite3_stmt *st = list_begin(q, Q_RUNS_PAGE, out, n, err);
	if (!st)
		return -1;
	bind_page(st, 1, before > 0 ? before : INT64_MAX, limit);
	return collect(q, st, (void **)out, n, sizeof **out, fill_run_row, free_run_rows, err);
}

void dbq_run_rows_free(struct dbq_run_row *r, int n)
{
	for (int i = 0; i < n; i++) {
		free(r[i].tool);
		free(r[i].program);
		free(r[i].command);
	}
	free(r);
}

static bool fill_compile(sqlite3_stmt *st, void *elem)
{
	struct dbq_compile *c = elem;
	c->id = sqlite3_column_int64(st, 0);
	c->run_id = sqlite3_column_int64(st, 1);
	c->frame_id = sqlite3_column_int64(st, 2);
	c->label = dup_text(st, 3);
	c->frame_index = sqlite3_column_int(st, 4);
	c->compile_index = sqlite3_column_int(st, 5);
	c->function = dup_text(st, 6);
	c->file = dup_text(st, 7);
	c->line = sqlite3_column_int(st, 8);
	c->resume_pc = sqlite3_column_int(st, 9);
	c->resume_line = sqlite3_column_int(st, 10);
	c->reason = dup_text(st, 11);
	c->backend = dup_text(st, 12);
	c->outcome = dup_text(st, 13);
	c->dynamic = dup_col(st, 14);
	c->error = dup_col(st, 15);
	c->started_at = sqlite3_column_double(st, 16);
	c->trace_ms = sqlite3_column_double(st, 17);
	c->guard_ms = sqlite3_column_double(st, 18);
	c->backend_ms = sqlite3_column_double(st, 19);
	c->total_ms = sqlite3_column_double(st, 20);
	c->op_count = sqlite3_column_int64(st, 21);
	return c->label && c->function && c->file && c->reason && c->backend && c->outcome;
}

static void free_compiles(void *arr, int n) { dbq_compiles_free(arr, n); }

int dbq_compiles(struct dbq *q, int64_t run_id, int64_t after, int limit, struct dbq_compile **out, int *n,
		 char **err)
{
	sqlite3_stmt *st = list_begin(q, Q_COMPILES, out, n, err);
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, run_id);
	bind_page(st, 2, after, limit);
	return collect(q, st, (void **)out, n, sizeof **out, fill_compile, free_compiles, err);
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
	int rc = collect_one(q, st, out, sizeof *out, fill_compile, free_compiles, err);
	return rc > 0 ? set_err(err, "no compile %s in run %lld", label, (long long)run_id) : rc;
}

void dbq_compile_release(struct dbq_compile *c)
{
	if (!c)
		return;
	free(c->label);
	free(c->function);
	free(c->file);
	free(c->reason);
	free(c->backend);
	free(c->outcome);
	free(c->dynamic);
	free(c->error);
	memset(c, 0, sizeof *c);
}

void dbq_compiles_free(struct dbq_compile *c, int n)
{
	for (int i = 0; i < n; i++)
		dbq_compile_release(&c[i]);
	free(c);
}

static bool fill_graph(sqlite3_stmt *st, void *elem)
{
	struct dbq_graph *g = elem;
	g->id = sqlite3_column_int64(st, 0);
	g->compile_id = sqlite3_column_int64(st, 1);
	g->run_id = sqlite3_column_int64(st, 2);
	g->label = dup_text(st, 3);
	g->stage = dup_text(st, 4);
	g->name = dup_text(st, 5);
	g->listing = dup_text(st, 6);
	g->op_count = sqlite3_column_int64(st, 7);
	bool brk = sqlite3_column_type(st, 8) != SQLITE_NULL;
	if (brk) {
		g->break_code = dup_text(st, 8);
		g->break_category = dup_text(st, 9);
		g->break_message = dup_text(st, 10);
		g->break_file = dup_text(st, 11);
		g->break_line = sqlite3_column_int(st, 12);
		g->break_col = sqlite3_column_int(st, 13);
	}
	return g->label && g->stage && g->name && g->listing &&
	       (!brk || (g->break_code && g->break_category && g->break_message && g->break_file));
}

static void free_graphs(void *arr, int n) { dbq_graphs_free(arr, n); }

int dbq_graph_get(struct dbq *q, int64_t graph_id, struct dbq_graph *out, char **err)
{
	if (err)
		*err = NULL;
	memset(out, 0, sizeof *out);
	sqlite3_stmt *st = stmt(q, Q_GRAPH, err);
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, graph_id);
	int rc = collect_one(q, st, out, sizeof *out, fill_graph, free_graphs, err);
	return rc > 0 ? set_err(err, "no graph %lld in %s", (long long)graph_id, q->path) : rc;
}

int dbq_graphs_of(struct dbq *q, int64_t compile_id, struct dbq_graph **out, int *n, char **err)
{
	sqlite3_stmt *st = list_begin(q, Q_GRAPHS_OF, out, n, err);
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, compile_id);
	return collect(q, st, (void **)out, n, sizeof **out, fill_graph, free_graphs, err);
}

void dbq_graph_release(struct dbq_graph *g)
{
	if (!g)
		return;
	free(g->label);
	free(g->stage);
	free(g->name);
	free(g->listing);
	free(g->break_code);
	free(g->break_category);
	free(g->break_message);
	free(g->break_file);
	memset(g, 0, sizeof *g);
}

void dbq_graphs_free(struct dbq_graph *g, int n)
{
	for (int i = 0; i < n; i++)
		dbq_graph_release(&g[i]);
	free(g);
}

static bool fill_node(sqlite3_stmt *st, void *elem)
{
	struct dbq_node *nd = elem;
	nd->idx = sqlite3_column_int(st, 0);
	nd->name = dup_text(st, 1);
	nd->kind = dup_text(st, 2);
	nd->op = dup_col(st, 3);
	nd->args = dup_text(st, 4);
	nd->dtype = dup_col(st, 5);
	nd->shape = dup_col(st, 6);
	nd->file = dup_col(st, 7);
	nd->line = sqlite3_column_int(st, 8);
	nd->col = sqlite3_column_int(st, 9);
	nd->user_stack = dup_col(st, 10);
	return nd->name && nd->kind && nd->args;
}

static void free_nodes(void *arr, int n) { dbq_nodes_free(arr, n); }

int dbq_nodes(struct dbq *q, int64_t graph_id, struct dbq_node **out, int *n, char **err)
{
	sqlite3_stmt *st = list_begin(q, Q_NODES, out, n, err);
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, graph_id);
	return collect(q, st, (void **)out, n, sizeof **out, fill_node, free_nodes, err);
}

void dbq_nodes_free(struct dbq_node *nd, int n)
{
	for (int i = 0; i < n; i++) {
		free(nd[i].name);
		free(nd[i].kind);
		free(nd[i].op);
		free(nd[i].args);
		free(nd[i].dtype);
		free(nd[i].shape);
		free(nd[i].file);
		free(nd[i].user_stack);
	}
	free(nd);
}

/* ---- tjit-tui ---- */

int dbq_runs_after(struct dbq *q, int64_t after, int limit, struct dbq_run_row **out, int *n, char **err)
{
	sqlite3_stmt *st = list_begin(q, Q_TUI_RUNS_AFTER, out, n, err);
	if (!st)
		return -1;
	bind_page(st, 1, after, limit);
	return collect(q, st, (void **)out, n, sizeof **out, fill_run_row, free_run_rows, err);
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
	return collect(q, st, (void **)out, n, sizeof **out, fill_compile, free_compiles, err);
}

int dbq_frame_compiles_page(struct dbq *q, int64_t frame_id, int64_t key, int dir, int limit,
			    struct dbq_compile **out, int *n, char **err)
{
	sqlite3_stmt *st = list_begin(q, dir > 0 ? Q_TUI_FRAME_COMPILES_AFTER : Q_TUI_FRAME_COMPILES_BEFORE, out, n, err);
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, frame_id);
	bind_page(st, 2, key, limit);
	return collect(q, st, (void **)out, n, sizeof **out, fill_compile, free_compiles, err);
}

int dbq_frames_page(struct dbq *q, int64_t run_id, int64_t key, int dir, int limit, struct dbq_frame **out, int *n,
		    char **err)
{
	sqlite3_stmt *st = list_begin(q, dir > 0 ? Q_TUI_FRAMES_AFTER : Q_TUI_FRAMES_BEFORE, out, n, err);
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, run_id);
	bind_page(st, 2, key, limit);
	return collect(q, st, (void **)out, n, sizeof **out, fill_frame_row, free_frames, err);
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
	return collect(q, st, (void **)out, n, sizeof **out, fill_break, free_breaks, err);
}

int dbq_compile_breaks(struct dbq *q, int64_t compile_id, struct dbq_break **out, int *n, char **err)
{
	sqlite3_stmt *st = list_begin(q, Q_TUI_COMPILE_BREAKS, out, n, err);
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, compile_id);
	return collect(q, st, (void **)out, n, sizeof **out, fill_break, free_breaks, err);
}

static bool fill_failure_row(sqlite3_stmt *st, void *elem)
{
	struct dbq_failure_row *r = elem;
	r->id = sqlite3_column_int64(st, 0);
	r->compile_id = sqlite3_column_int64(st, 1);
	r->label = dup_text(st, 2);
	r->function = dup_text(st, 3);
	r->failed_label = dup_text(st, 4);
	r->guard_text = dup_text(st, 5);
	r->value_seen = dup_text(st, 6);
	return r->label && r->function && r->failed_label && r->guard_text && r->value_seen;
}

static void free_failure_rows(void *arr, int n) { dbq_failure_rows_free(arr, n); }

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
	return collect(q, st, (void **)out, n, sizeof **out, fill_failure_row, free_failure_rows, err);
}

void dbq_failure_rows_free(struct dbq_failure_row *r, int n)
{
	for (int i = 0; i < n; i++) {
		free(r[i].label);
		free(r[i].function);
		free(r[i].failed_label);
		free(r[i].guard_text);
		free(r[i].value_seen);
	}
	free(r);
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
