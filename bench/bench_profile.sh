#!/usr/bin/env bash
# bench/bench_profile.sh - tjit-profile on a big database.
#
# Builds a database of 1,000 runs and 100,000 compiles (10 frames and 100
# compiles a run, 6 guards a compile, 3 guard failures a recompile, a graph
# break in every other compile, a graph of 3 nodes a compile: about
# 1.5 million rows, 110 MB), with the schema of a real `tjit run` and the
# rows inserted by SQL (the sqlite3 shell; without it the benchmark is
# skipped), then times `tjit-profile report` of the latest, a middle and
# the oldest run, `report --json`, and `diff` of the first and last: the
# median of RUNS runs each (target: each under 1 s; every query goes
# through an index, so a report costs the same as on a fresh file).
# Environment: TJIT, TJIT_PROFILE (default ./tjit, ./tjit-profile), RUNS
# (default 11), BENCH_PROFILE_DB (keep the database there instead of a
# temporary folder; an existing file is reused).
set -eu
here=$(dirname "$0")
# shellcheck source=bench/lib.sh
. "$here/lib.sh"
tjit=$(bench_tjit)
prof=${TJIT_PROFILE:-./tjit-profile}
[ -x "$prof" ] || { echo "no tjit-profile binary at $prof: build it (make) or set TJIT_PROFILE" >&2; exit 2; }
runs=${RUNS:-11}
if ! command -v sqlite3 >/dev/null 2>&1; then
	echo "profile: skipped (no sqlite3 shell: scripts/install-deps installs it)"
	exit 0
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/bench_profile.XXXXXX")
trap 'rm -rf "$work"' EXIT
db=${BENCH_PROFILE_DB:-$work/big.db}

if [ ! -s "$db" ]; then
	printf 'def f(x, n):\n    y = x * n\n    print(n)\n    return y.sum()\n\ncf = compile(f)\ncf(ones(2), 1)\n' >"$work/seed.tj"
	"$tjit" run --db "$db" "$work/seed.tj" >/dev/null
	t0=$EPOCHREALTIME
	sqlite3 "$db" <<'SQL'
PRAGMA synchronous = OFF;
BEGIN;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000)
INSERT INTO runs (tool, command, program, source_hash, backend, config, pid, started_at, ended_at, exit_status)
SELECT 'tjit-profile run', 'tjit-profile run seed.tj', (SELECT program FROM runs WHERE id = 1),
       (SELECT source_hash FROM runs WHERE id = 1), NULL,
       'fullgraph=0 cache_size_limit=unlimited eager=0', 1000 + i, 1.7e9 + i, 1.7e9 + i + 0.5, 0 FROM n;
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 9)
INSERT INTO frames (run_id, frame_index, function, file, line, resume_pc, resume_line, calls, cache_hits,
                    eager_calls, eager_reason)
SELECT r.id, n.i, 'f' || n.i, r.program, 1, CASE WHEN n.i % 2 THEN 7 ELSE 0 END, CASE WHEN n.i % 2 THEN 3 END,
       1000, 900, CASE WHEN n.i = 9 THEN 10 ELSE 0 END, CASE WHEN n.i = 9 THEN 'cache_limit' END
FROM runs r, n WHERE r.id > 1;
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 9)
INSERT INTO compiles (run_id, frame_id, label, compile_index, reason, backend, dynamic, started_at, trace_ms,
                      guard_ms, backend_ms, total_ms, outcome, op_count)
SELECT f.run_id, f.id, f.frame_index || '/' || n.i, n.i, CASE WHEN n.i = 0 THEN 'first' ELSE 'recompile' END,
       'eager', 'None', 1.7e9, 0.2, 0.05, 0.01, 0.3, CASE WHEN n.i % 2 THEN 'graph_break' ELSE 'ok' END, 5
FROM frames f, n WHERE f.run_id > 1;
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 5)
INSERT INTO guards (compile_id, idx, kind, text, file, line, col)
SELECT c.id, n.i, 'equals', CASE WHEN n.i = 5 THEN 'L[''n''] == ' || c.compile_index
                                 ELSE 'L[''x''].dtype == float32 ' || n.i END, 'seed.tj', 2, 5
FROM compiles c, n WHERE c.run_id > 1;
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 2)
INSERT INTO guard_failures (run_id, compile_id, failed_label, guard_text, value_seen)
SELECT c.run_id, c.id, (c.label + 0) || '/' || (c.compile_index - 1), 'L[''n''] == ' || (c.compile_index - 1),
       c.compile_index
FROM compiles c, n WHERE c.run_id > 1 AND c.compile_index > 0;
INSERT INTO graph_breaks (run_id, compile_id, code, category, message, file, line, col, pc, user_stack, hits)
SELECT c.run_id, c.id, 'TJB001', 'side_effect', 'call to print (side effect)', 'seed.tj', 3 + c.id % 3, 5, 6,
       'seed.tj:' || (3 + c.id % 3) || ' in f', 7
FROM compiles c WHERE c.run_id > 1 AND c.outcome = 'graph_break';
INSERT INTO graphs (compile_id, stage, name, op_count, listing)
SELECT c.id, 'captured', 'f', 5, 'graph ' || c.label || ' f (seed.tj:1) · 5 ops' || char(10) || '  ...'
FROM compiles c WHERE c.run_id > 1;
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 2)
INSERT INTO nodes (graph_id, idx, name, kind, op, args, dtype, shape, file, line, col)
SELECT g.id, n.i, 'n' || n.i, 'op', 'add', 'a, 1', 'float32', '[10]', 'seed.tj', 2, 5
FROM graphs g JOIN compiles c ON c.id = g.compile_id, n WHERE c.run_id > 1;
COMMIT;
SQL
	t1=$EPOCHREALTIME
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "profile: built the database in %.1f s\n", b - a }'
fi
echo "profile: $(sqlite3 "$db" 'SELECT (SELECT count(*) FROM runs) || " runs, " || (SELECT count(*) FROM compiles) || " compiles, " || (SELECT count(*) FROM guards) || " guards, " || (SELECT count(*) FROM guard_failures) || " guard failures"')"

worst=0
measure() {
	local label=$1 t
	shift
	t=$(bench_median "$runs" "$prof" "$@")
	awk -v l="$label" -v t="$t" 'BEGIN { printf "profile: %-34s %8.1f ms (target < 1000 ms)\n", l, t * 1000 }'
	worst=$(awk -v a="$worst" -v b="$t" 'BEGIN { print (b > a) ? b : a }')
}
measure "report (latest)" report --db "$db"
measure "report 500" report --db "$db" 500
measure "report latest~999 (999 steps back)" report --db "$db" latest~999
measure "report --json" report --db "$db" --json
measure "diff 2 latest" diff --db "$db" 2 latest
awk -v w="$worst" 'BEGIN { printf "profile: slowest %.1f ms, %s\n", w * 1000, (w < 1) ? "under 1 s: ok" : "OVER 1 s" }'
