-- schema.sql - the tjit compile log, one SQLite file.
--
-- Versioned with PRAGMA user_version (db/db.c refuses a newer file and
-- migrates an older one). Opened in WAL mode with a busy timeout, so that
-- several processes can log into one file and a reader (tjit-tui) never
-- blocks a writer. Every compile event is written in one transaction: a run
-- that is killed keeps every row written before, and its runs.ended_at stays
-- NULL, which is how the tools tell that it did not finish.
--
-- Times are seconds since the Unix epoch (REAL) for instants and
-- milliseconds (REAL) for durations. Locations are 1-based line/column.

PRAGMA user_version = 1;

-- Program text by content hash, so that tools show the lines that were
-- compiled even after the file changes.
CREATE TABLE IF NOT EXISTS sources (
	hash        TEXT PRIMARY KEY,   -- hex FNV-1a 64 of the text
	path        TEXT NOT NULL,      -- path as first seen
	text        TEXT NOT NULL       -- the whole file
);

-- One row per process run of a tool over a program.
CREATE TABLE IF NOT EXISTS runs (
	id          INTEGER PRIMARY KEY,  -- 1, 2, ... : the RUN of tjit-profile report RUN
	tool        TEXT NOT NULL,        -- 'tjit run', 'tjit explain', 'tjit-profile run', ...
	command     TEXT NOT NULL,        -- the command line, arguments joined by spaces
	program     TEXT NOT NULL,        -- the program path as given
	source_hash TEXT REFERENCES sources(hash),
	backend     TEXT,                 -- the --backend override, or NULL (each compile records its own)
	config      TEXT NOT NULL,        -- flags that change compiling: 'fullgraph=0 cache_size_limit=8 ...'
	started_at  REAL NOT NULL,
	ended_at    REAL,                 -- NULL while running, or when the process was killed
	exit_status INTEGER               -- 0 ok, 1 program error, 2 bad usage; NULL if it did not finish
);

-- A frame is a (code object, resume pc) pair: a function's entry (pc 0) or
-- a resume point after a graph break. Its index is the F of compile id F/N.
CREATE TABLE IF NOT EXISTS frames (
	id          INTEGER PRIMARY KEY,
	run_id      INTEGER NOT NULL REFERENCES runs(id),
	frame_index INTEGER NOT NULL,     -- F, numbered in order of first compile in the run
	function    TEXT NOT NULL,        -- the function's name
	file        TEXT NOT NULL,
	line        INTEGER NOT NULL,     -- the def line
	resume_pc   INTEGER NOT NULL,     -- 0 for the function's entry
	resume_line INTEGER,              -- source line of the resume point (NULL for pc 0)
	calls       INTEGER NOT NULL DEFAULT 0, -- times the frame evaluator was entered for it
	cache_hits  INTEGER NOT NULL DEFAULT 0, -- calls that found an entry whose guards held
	eager_calls INTEGER NOT NULL DEFAULT 0, -- calls that ran in the VM without compiling
	eager_reason TEXT,                -- why those ran eagerly: 'disabled', 'cache_limit', 'frozen_miss'
	UNIQUE (run_id, frame_index)
);

-- One row per attempt to compile a frame (F/N).
CREATE TABLE IF NOT EXISTS compiles (
	id          INTEGER PRIMARY KEY,
	run_id      INTEGER NOT NULL REFERENCES runs(id),
	frame_id    INTEGER NOT NULL REFERENCES frames(id),
	compile_id  TEXT NOT NULL,        -- 'F/N'
	compile_index INTEGER NOT NULL,   -- N
	reason      TEXT NOT NULL,        -- 'first', 'recompile', 'frozen_miss', 'cache_limit'
	backend     TEXT NOT NULL,        -- 'eager', 'aot_eager', 'inductor', ...
	dynamic     TEXT,                 -- 'None', 'True', 'False' as passed to compile()
	started_at  REAL NOT NULL,
	trace_ms    REAL NOT NULL DEFAULT 0,   -- symbolic execution of the bytecode
	guard_ms    REAL NOT NULL DEFAULT 0,   -- building and compiling the guard list
	backend_ms  REAL NOT NULL DEFAULT 0,   -- the backend's compile of the graph
	total_ms    REAL NOT NULL DEFAULT 0,
	outcome     TEXT NOT NULL,        -- 'ok', 'graph_break', 'error', 'skipped'
	op_count    INTEGER NOT NULL DEFAULT 0,
	error       TEXT                  -- message when outcome = 'error'
);

-- The guards of a compiled entry, in check order.
CREATE TABLE IF NOT EXISTS guards (
	id          INTEGER PRIMARY KEY,
	compile_id  INTEGER NOT NULL REFERENCES compiles(id),
	idx         INTEGER NOT NULL,
	kind        TEXT NOT NULL,        -- 'type', 'tensor_match', 'equals', 'length', 'id', 'backend', 'symbolic'
	text        TEXT NOT NULL,        -- "L['x'].shape == (2,)"
	file        TEXT,                 -- the user line that made the trace assume it
	line        INTEGER,
	col         INTEGER
);

-- Why a recompile happened: the first failing guard of each existing entry.
CREATE TABLE IF NOT EXISTS guard_failures (
	id          INTEGER PRIMARY KEY,
	run_id      INTEGER NOT NULL REFERENCES runs(id),
	compile_id  INTEGER NOT NULL REFERENCES compiles(id),  -- the compile it triggered
	failed_compile TEXT NOT NULL,     -- 'F/N' of the entry whose guard failed
	guard_text  TEXT NOT NULL,
	value_seen  TEXT NOT NULL         -- '4' for L['x'].shape[0] == 2 (got 4)
);

-- Graph breaks, with their stable code (doc/graph-breaks.md).
CREATE TABLE IF NOT EXISTS graph_breaks (
	id          INTEGER PRIMARY KEY,
	run_id      INTEGER NOT NULL REFERENCES runs(id),
	compile_id  INTEGER NOT NULL REFERENCES compiles(id),
	code        TEXT NOT NULL,        -- 'TJB001'
	category    TEXT NOT NULL,        -- 'side_effect', 'data_dependent', 'disabled', 'unsupported', ...
	message     TEXT NOT NULL,
	file        TEXT NOT NULL,
	line        INTEGER NOT NULL,
	col         INTEGER NOT NULL,
	pc          INTEGER NOT NULL,     -- instruction that broke; the resume point is pc + 1
	user_stack  TEXT NOT NULL         -- 'file:line in function' lines, outermost first
);
-- Breaks also count at run time (each execution of the breaking instruction).
CREATE TABLE IF NOT EXISTS break_hits (
	break_id    INTEGER PRIMARY KEY REFERENCES graph_breaks(id),
	hits        INTEGER NOT NULL
);

-- Graphs at each stage.
CREATE TABLE IF NOT EXISTS graphs (
	id          INTEGER PRIMARY KEY,
	compile_id  INTEGER NOT NULL REFERENCES compiles(id),
	stage       TEXT NOT NULL,        -- 'captured', 'aot_forward', 'aot_backward', 'inductor'
	name        TEXT NOT NULL,        -- function name
	op_count    INTEGER NOT NULL,
	listing     TEXT NOT NULL         -- the printed graph (LANGUAGE.md §7)
);

CREATE TABLE IF NOT EXISTS nodes (
	id          INTEGER PRIMARY KEY,
	graph_id    INTEGER NOT NULL REFERENCES graphs(id),
	idx         INTEGER NOT NULL,
	name        TEXT NOT NULL,        -- 'abs_1'
	kind        TEXT NOT NULL,        -- 'input', 'op', 'output'
	op          TEXT,                 -- 'abs', or NULL for inputs/outputs
	args        TEXT NOT NULL,        -- 'abs_1, 1' or the input's source "L['a']"
	dtype       TEXT,
	shape       TEXT,                 -- '[10]', '[s0, 3]'
	file        TEXT,
	line        INTEGER,
	col         INTEGER,
	user_stack  TEXT
);

CREATE INDEX IF NOT EXISTS frames_run ON frames(run_id);
CREATE INDEX IF NOT EXISTS compiles_run ON compiles(run_id, frame_id);
CREATE INDEX IF NOT EXISTS compiles_frame ON compiles(frame_id);
CREATE INDEX IF NOT EXISTS guards_compile ON guards(compile_id);
CREATE INDEX IF NOT EXISTS guard_failures_run ON guard_failures(run_id);
CREATE INDEX IF NOT EXISTS guard_failures_compile ON guard_failures(compile_id);
CREATE INDEX IF NOT EXISTS graph_breaks_run ON graph_breaks(run_id, code, file, line);
CREATE INDEX IF NOT EXISTS graphs_compile ON graphs(compile_id);
CREATE INDEX IF NOT EXISTS nodes_graph ON nodes(graph_id, idx);
