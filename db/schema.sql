-- schema.sql - the tjit compile log, one SQLite file.
--
-- This file is the whole schema of the current version. It is compiled into
-- the library as a C string (db/sql2c.sh) and run by db/db.c, inside one
-- BEGIN IMMEDIATE transaction, on a new file (user_version 0 and no
-- tables). An older file is migrated by the steps in db.c's migrations[];
-- a newer one is refused ("database X has schema version N, this tjit
-- understands up to M"). When you change this file, bump user_version
-- below and DB_SCHEMA_VERSION in db/db.h together, and add the migration.
--
-- Connection settings are not here (they cannot run in a transaction):
-- db.c creates the file with page_size=2048 and opens every connection
-- with journal_mode=WAL (persistent in the file), synchronous=NORMAL,
-- foreign_keys=ON and a 5 s busy timeout, so that several processes can
-- log into one file and a reader (tjit-tui) never blocks a writer. The
-- writer does not checkpoint when it closes (that would cost two fsyncs a
-- run), so between runs FILE-wal holds the latest rows: copy a database
-- with sqlite3's .backup (or copy FILE-wal with it), not FILE alone.
--
-- Every compile event is one transaction: a run that is killed keeps every
-- row committed before, and its runs.ended_at stays NULL, which is how the
-- tools tell that it did not finish. Rows are never updated after their
-- event, except the counters (frames.calls ..., runs.compile_count ...,
-- graph_breaks.hits) and the
-- ends of runs (runs.ended_at, exit_status) and minifier sessions.
--
-- Conventions:
--   * id is the row id; a column named X_id references X's id ('compile_id'
--     always means compiles.id; the 'F/N' text is compiles.label);
--   * instants are seconds since the Unix epoch (REAL), durations are
--     milliseconds (REAL);
--   * locations are a file path as the program named it, a 1-based line
--     and a 1-based column; NULL when the core has none;
--   * enumerations are TEXT, their values listed beside each column (no
--     CHECK constraints: a value the core adds later must not lose a log);
--   * idx is the 0-based order of a row within its parent.
--
-- Every query of the tools filters by an indexed key (see the indexes at
-- the end); tests/unit/check_db.c checks their plans so that a report over
-- 1,000 runs and 100,000 compiles never scans a whole table.

PRAGMA user_version = 4;

-- Program text by content hash, so that the tools show the lines that were
-- compiled even after the file changed or disappeared.
CREATE TABLE IF NOT EXISTS sources (
	hash        TEXT PRIMARY KEY,     -- FNV-1a 64 of the text, 16 lowercase hex digits
	path        TEXT NOT NULL,        -- the path it was first logged under
	text        TEXT NOT NULL         -- the whole file
);

-- One row per process that logged: a run of a tool over a program.
CREATE TABLE IF NOT EXISTS runs (
	id          INTEGER PRIMARY KEY,  -- 1, 2, ...: the RUN of 'tjit-profile report RUN'
	tool        TEXT NOT NULL,        -- 'tjit run', 'tjit explain', 'tjit-profile run', 'tjit-minify'
	command     TEXT NOT NULL,        -- the command line, arguments joined by spaces
	program     TEXT NOT NULL,        -- the program's path as given
	source_hash TEXT REFERENCES sources(hash), -- the program's text; NULL if unreadable
	backend     TEXT,                 -- the --backend override, or NULL (each compile records its own)
	config      TEXT NOT NULL,        -- flags that change compiling: 'fullgraph=0 cache_size_limit=8 eager=0 no_kernel_cache=0'
	pid         INTEGER NOT NULL,     -- the process id (a NULL ended_at with a dead pid: killed)
	started_at  REAL NOT NULL,        -- instant
	ended_at    REAL,                 -- instant; NULL while running, or when the process was killed
	-- counters, kept by each compile event's transaction (so that a list
	-- of runs never counts the compiles of each)
	compile_count INTEGER NOT NULL DEFAULT 0,   -- compiles rows of the run
	graph_count INTEGER NOT NULL DEFAULT 0,     -- those whose graph has ops
	break_count INTEGER NOT NULL DEFAULT 0,     -- those whose trace ended in a graph break
	recompile_count INTEGER NOT NULL DEFAULT 0, -- those whose reason is recompile
	exit_status INTEGER               -- 0 ok, 1 program error, 2 bad usage; NULL if it did not finish
);

-- A frame is a (code object, resume pc) pair: a function's entry (pc 0) or
-- a resume point after a graph break. Its index is the F of compile id F/N.
CREATE TABLE IF NOT EXISTS frames (
	id          INTEGER PRIMARY KEY,
	run_id      INTEGER NOT NULL REFERENCES runs(id), -- the run that compiled it
	frame_index INTEGER NOT NULL,     -- F, numbered in order of first compile in the run
	function    TEXT NOT NULL,        -- the function's name
	file        TEXT NOT NULL,        -- where it is defined
	line        INTEGER NOT NULL,     -- its def line
	resume_pc   INTEGER NOT NULL,     -- 0 for the function's entry, else the resume instruction
	resume_line INTEGER,              -- source line of the resume point; NULL for pc 0
	-- counters, totals so far (the writer batches them: at most a second
	-- late while the run goes on, exact once it ended)
	calls       INTEGER NOT NULL DEFAULT 0, -- times the frame evaluator was entered for it
	cache_hits  INTEGER NOT NULL DEFAULT 0, -- calls that found an entry whose guards held
	eager_calls INTEGER NOT NULL DEFAULT 0, -- calls that ran in the VM without compiling
	eager_reason TEXT,                -- why those ran eagerly: 'disabled', 'cache_limit', 'frozen_miss'
	guard_checks INTEGER NOT NULL DEFAULT 0, -- guard lists checked at run time (one per entry tried)
	guard_check_ms REAL NOT NULL DEFAULT 0,  -- time spent checking them, estimated from 1 call in 64
	UNIQUE (run_id, frame_index)      -- also the index of frames by run
);

-- One row per attempt to compile a frame: compile id F/N.
CREATE TABLE IF NOT EXISTS compiles (
	id          INTEGER PRIMARY KEY,
	run_id      INTEGER NOT NULL REFERENCES runs(id), -- the run (also frames.run_id, kept here for the index)
	frame_id    INTEGER NOT NULL REFERENCES frames(id), -- the frame compiled
	label       TEXT NOT NULL,        -- 'F/N', the compile id of the logs ('0/1')
	compile_index INTEGER NOT NULL,   -- N: 0 for the frame's first compile
	reason      TEXT NOT NULL,        -- 'first', 'recompile', 'frozen_miss', 'cache_limit'
	backend     TEXT NOT NULL,        -- 'eager', 'aot_eager', 'inductor', a _TESTING_ONLY one, ...
	dynamic     TEXT,                 -- 'None', 'True', 'False' as passed to compile()
	started_at  REAL NOT NULL,        -- instant
	trace_ms    REAL NOT NULL DEFAULT 0,   -- symbolic execution of the bytecode
	guard_ms    REAL NOT NULL DEFAULT 0,   -- building and compiling the guard list
	backend_ms  REAL NOT NULL DEFAULT 0,   -- the backend's compile of the graph
	total_ms    REAL NOT NULL DEFAULT 0,   -- the whole compile, from cache miss to artifact
	outcome     TEXT NOT NULL,        -- 'ok', 'graph_break', 'error', 'skipped' (cache_limit: no compile)
	op_count    INTEGER NOT NULL DEFAULT 0, -- op nodes in the captured graph
	error       TEXT,                 -- the message when outcome = 'error'; else NULL (no comma:
	                                  -- DROP COLUMN of the next column looks back for one)
	saved_bytes INTEGER               -- aot_eager: the bytes saved between forward and backward
	                                  -- graphs: the sum of the aot_saved rows; NULL: no partition
);

-- The guards of a compiled entry, in check order.
CREATE TABLE IF NOT EXISTS guards (
	id          INTEGER PRIMARY KEY,
	compile_id  INTEGER NOT NULL REFERENCES compiles(id), -- the compile whose entry checks them
	idx         INTEGER NOT NULL,     -- check order
	kind        TEXT NOT NULL,        -- 'type', 'tensor_match', 'equals', 'length', 'id', 'backend', 'symbolic'
	text        TEXT NOT NULL,        -- "L['x'].shape == (2,)"
	file        TEXT,                 -- the user line that made the trace assume it; NULL: none
	line        INTEGER,              -- 1-based
	col         INTEGER,              -- 1-based
	UNIQUE (compile_id, idx)          -- also the index of guards by compile
);

-- Why a recompile happened: the first failing guard of each existing entry
-- of the frame, newest entry first (id order), for the newest 8 entries
-- (DB_FAILURES_PER_COMPILE, the default cache_size_limit: a frame with n
-- entries would log n(n-1)/2 rows over its recompiles; TJIT_LOGS prints
-- them all).
CREATE TABLE IF NOT EXISTS guard_failures (
	id          INTEGER PRIMARY KEY,
	run_id      INTEGER NOT NULL REFERENCES runs(id), -- the run
	compile_id  INTEGER NOT NULL REFERENCES compiles(id), -- the compile the failure triggered
	failed_label TEXT NOT NULL,       -- 'F/N' of the entry whose guard failed (a compiles.label of the run)
	guard_text  TEXT NOT NULL,        -- "L['x'].shape[0] == 2"
	value_seen  TEXT NOT NULL         -- the value that failed it: '4'
);

-- Graph breaks, with their stable code (doc/graph-breaks.md).
CREATE TABLE IF NOT EXISTS graph_breaks (
	id          INTEGER PRIMARY KEY,
	run_id      INTEGER NOT NULL REFERENCES runs(id), -- the run
	compile_id  INTEGER NOT NULL REFERENCES compiles(id), -- the compile whose trace broke
	code        TEXT NOT NULL,        -- 'TJB001'
	category    TEXT NOT NULL,        -- 'side_effect', 'data_dependent', 'disabled', 'unsupported', ...
	message     TEXT NOT NULL,        -- the reason in words, with the culprit
	file        TEXT NOT NULL,        -- the breaking instruction's location
	line        INTEGER NOT NULL,     -- 1-based
	col         INTEGER NOT NULL,     -- 1-based
	pc          INTEGER NOT NULL,     -- the instruction that broke; the resume point is pc + 1
	user_stack  TEXT NOT NULL,        -- 'file:line in function' lines, outermost first
	hits        INTEGER NOT NULL DEFAULT 0 -- counter: times the breaking instruction ran (as frames.calls)
);

-- Graphs at each stage of a compile.
CREATE TABLE IF NOT EXISTS graphs (
	id          INTEGER PRIMARY KEY,
	compile_id  INTEGER NOT NULL REFERENCES compiles(id), -- the compile that made it
	stage       TEXT NOT NULL,        -- 'captured', 'aot_forward', 'aot_backward', 'inductor'
	name        TEXT NOT NULL,        -- the function's name
	op_count    INTEGER NOT NULL,     -- op nodes (inputs and outputs not counted)
	listing     TEXT NOT NULL         -- the printed graph (LANGUAGE.md section 7)
);

-- The nodes of a graph, in graph order.
CREATE TABLE IF NOT EXISTS nodes (
	id          INTEGER PRIMARY KEY,
	graph_id    INTEGER NOT NULL REFERENCES graphs(id), -- the graph
	idx         INTEGER NOT NULL,     -- graph order
	name        TEXT NOT NULL,        -- 'abs_1'
	kind        TEXT NOT NULL,        -- 'input', 'op', 'output'
	op          TEXT,                 -- 'abs'; NULL for inputs and outputs
	args        TEXT NOT NULL,        -- 'abs_1, 1', or an input's source "L['a']"
	dtype       TEXT,                 -- 'float32'; NULL when not a tensor
	shape       TEXT,                 -- '[10]', '[s0, 3]'; NULL when not a tensor
	file        TEXT,                 -- the user line that made it; NULL: none
	line        INTEGER,              -- 1-based
	col         INTEGER,              -- 1-based
	user_stack  TEXT,                 -- inlined calls, as graph_breaks.user_stack; NULL: none
	UNIQUE (graph_id, idx)            -- also the index of nodes by graph
);

-- The named phases of a compile, in the order they began: the tracer's
-- 'trace' and 'guards', 'backend' (the backend's whole compile) and, inside
-- it, the phases a stage times itself ('decompose', 'joint', 'partition',
-- 'lower', 'schedule', 'codegen', ...). compiles.trace_ms, guard_ms and
-- backend_ms are the top-level 'trace', 'guards' and 'backend' rows.
CREATE TABLE IF NOT EXISTS compile_phases (
	id          INTEGER PRIMARY KEY,
	compile_id  INTEGER NOT NULL REFERENCES compiles(id), -- the compile
	position    INTEGER NOT NULL,     -- 0-based order of beginning within the compile
	name        TEXT NOT NULL,        -- 'trace', 'guards', 'backend', or a stage's phase
	parent      INTEGER,              -- position of the phase it ran inside (its time is part of
	                                  -- the parent's); NULL at the top level
	ms          REAL NOT NULL DEFAULT 0, -- duration
	UNIQUE (compile_id, position)     -- also the index of phases by compile
);

-- The tensors aot_eager's forward graph saves for its backward graph (a
-- compile with an input that requires grad), in the order backward takes
-- them. The rest of what backward reads it computes again.
CREATE TABLE IF NOT EXISTS aot_saved (
	id          INTEGER PRIMARY KEY,
	compile_id  INTEGER NOT NULL REFERENCES compiles(id), -- the compile
	idx         INTEGER NOT NULL,     -- the order backward takes them in
	graph_id    INTEGER NOT NULL REFERENCES graphs(id), -- the compile's aot_forward graph
	node_idx    INTEGER NOT NULL,     -- the saved node there (its nodes.idx; the forward returns it)
	name        TEXT NOT NULL,        -- its name: 'tanh', or an input's 'x'
	dtype       TEXT,                 -- 'float32'
	shape       TEXT,                 -- '[3]', '[s0, 3]'
	bytes       INTEGER NOT NULL,     -- elements times the dtype's size, at the example sizes
	UNIQUE (compile_id, idx)          -- also the index of saved tensors by compile
);

-- Inductor kernels of a graph that inductor lowered (an aot_forward or
-- aot_backward graph), in launch order.
CREATE TABLE IF NOT EXISTS kernels (
	id          INTEGER PRIMARY KEY,
	graph_id    INTEGER NOT NULL REFERENCES graphs(id), -- the aot_forward / aot_backward graph it computes part of
	idx         INTEGER NOT NULL,     -- launch order
	name        TEXT NOT NULL,        -- 'k_' and the 64-bit hash of its loop IR: 'k_ebe89e360067f01b'
	kind        TEXT NOT NULL,        -- 'pointwise', 'reduction', 'matmul' (a BLAS call), ...
	hash        TEXT NOT NULL,        -- hash of its loop IR: the kernel cache key
	fused_nodes TEXT NOT NULL,        -- names of the graph's nodes it computes: 'abs_1, add_2'
	loop_ir     TEXT NOT NULL,        -- the printed loop nest
	llvm_ir     TEXT,                 -- the optimized LLVM IR (from the kernel cache for a cache hit); NULL when none
	cache_hit   INTEGER NOT NULL,     -- 1: taken from the kernel cache, 0: generated
	codegen_ms  REAL NOT NULL DEFAULT 0, -- lowering, LLVM optimization and JIT
	UNIQUE (graph_id, idx)            -- also the index of kernels by graph
);

-- A tjit-minify session over one failing program (its run is the
-- tjit-minify process).
CREATE TABLE IF NOT EXISTS minify_sessions (
	id          INTEGER PRIMARY KEY,
	run_id      INTEGER NOT NULL REFERENCES runs(id), -- the tjit-minify run
	program     TEXT NOT NULL,        -- the failing program's path as given
	source_hash TEXT REFERENCES sources(hash), -- its text
	backend     TEXT,                 -- the backend it failed under
	failure     TEXT NOT NULL,        -- 'compile_error', 'runtime_error', 'crash', 'accuracy', 'hang';
	                                  -- 'none' (it does not fail), 'flaky', 'syntax_error',
	                                  -- 'unknown' (stopped before it was confirmed)
	started_at  REAL NOT NULL,        -- instant
	ended_at    REAL,                 -- instant; NULL while running or when killed
	stage       TEXT,                 -- first failing stage: 'eager', 'aot_eager', 'inductor'; NULL: unknown
	result      TEXT,                 -- 'minified', 'classified' (the graph was not shrunk), 'stopped' (classified,
	                                  -- then the limits ran out: the repro is unchecked), 'not_reproduced',
	                                  -- 'not_compiler_bug', 'interrupted' (a signal), 'error'; NULL until the end
	repro_path  TEXT,                 -- the repro .tj written
	repro_hash  TEXT REFERENCES sources(hash) -- the repro's text
);

-- Each candidate the minifier tried, in order.
CREATE TABLE IF NOT EXISTS minify_steps (
	id          INTEGER PRIMARY KEY,
	session_id  INTEGER NOT NULL REFERENCES minify_sessions(id), -- the session
	phase       TEXT NOT NULL,        -- 'classify', 'bisect', 'locate' (which graph), 'record', 'shrink', 'verify'
	candidate   TEXT NOT NULL,        -- what was tried: 'stage aot_eager', 'drop nodes 4..7'
	nodes       INTEGER,              -- op nodes in the candidate graph; NULL: not a graph
	outcome     TEXT NOT NULL,        -- 'fails' (same failure), 'passes', 'other_failure', 'timeout',
	                                  -- 'cut_short' (stopped by the minifier's limits or a signal: shows nothing)
	ms          REAL NOT NULL DEFAULT 0 -- the child process's wall time
);

-- The tools' access paths. frames by run, nodes by graph, guards,
-- compile phases, saved tensors and kernels by their parent come from the
-- UNIQUE constraints above.
CREATE INDEX IF NOT EXISTS compiles_run ON compiles(run_id);  -- and id: a run's compiles in order
CREATE INDEX IF NOT EXISTS compiles_frame ON compiles(frame_id, compile_index);
CREATE INDEX IF NOT EXISTS guard_failures_run ON guard_failures(run_id);
CREATE INDEX IF NOT EXISTS guard_failures_compile ON guard_failures(compile_id);
CREATE INDEX IF NOT EXISTS graph_breaks_run ON graph_breaks(run_id, code, file, line);
CREATE INDEX IF NOT EXISTS graph_breaks_compile ON graph_breaks(compile_id);
CREATE INDEX IF NOT EXISTS graphs_compile ON graphs(compile_id);
CREATE INDEX IF NOT EXISTS minify_sessions_run ON minify_sessions(run_id);
CREATE INDEX IF NOT EXISTS minify_steps_session ON minify_steps(session_id);
