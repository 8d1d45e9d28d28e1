#!/usr/bin/env bash
# bench/bench_db_run.sh - what the database costs a run.
#
# 1. A recompile-heavy training-like program: a compiled step (linear,
#    relu, a reduction) over 100 batch sizes, 20 steps each, with
#    dynamic=False and --cache-size-limit 1000 so that every new size
#    recompiles: 100 compiles among 2,000 calls. The database writes on its own thread (db/db.c), so a run
#    pays for the log only what the program's thread does (a copy of each
#    event) and the wait at exit for the last events. Target: at most 1.10.
# 2. The same 100 compiles with nothing else to do (25 compiled functions with a
#    graph break in each, so two frames each, called with two shapes: a
#    first compile and a recompile of both frames, each with a graph of a
#    few ops and its guards), run with a
#    database (a fresh file, then appended to by every run, as in real
#    use) and with --no-db: the median of RUNS runs each, measured side by
#    side, and their ratio (target: at most 1.10).
#    (a worst case: the wait at exit for the whole log dominates).
# 3. An empty program with and without a database (target: both under
#    5 ms): what the run row costs a program that never compiles.
# Environment: TJIT (default ./tjit), RUNS (default 21).
set -eu
here=$(dirname "$0")
# shellcheck source=bench/lib.sh
. "$here/lib.sh"
tjit=$(bench_tjit)
runs=${RUNS:-21}

work=$(mktemp -d "${TMPDIR:-/tmp}/bench_db.XXXXXX")
trap 'rm -rf "$work"' EXIT
prog=$work/recompiles.tj
{
	for i in $(seq 0 24); do
		printf 'def f%d(x):\n    y = (x * %d + 1).relu()\n    print(%d)\n    return (y * y).sum() - x.mean()\n' "$i" "$i" "$i"
		printf 'cf%d = compile(f%d, dynamic=False)\n' "$i" "$i"
	done
	printf 'for n in range(2, 4):\n    x = ones(n)\n'
	for i in $(seq 0 24); do
		printf '    cf%d(x)\n' "$i"
	done
} >"$prog"
train=$work/train.tj
cat >"$train" <<'TJ'
def step(x, w, b):
    h = relu(x @ w + b)
    return (h * h).mean()

cstep = compile(step, dynamic=False)
manual_seed(0)
w = randn(128, 128)
b = randn(128)
total = 0.0
for n in range(100):
    x = randn(n + 1, 128)
    for k in range(20):
        total = total + cstep(x, w, b).item()
print(total > 0)
TJ
empty=$work/empty.tj
: >"$empty"

# the median of the arguments
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# compare LABEL PROGRAM: runs it with --no-db and with a database, side by
# side and interleaved (a change of machine load hits both alike), and
# prints both medians and their ratio
compare() {
	local a=() b=() i ma mb
	for i in $(seq "$runs"); do
		a+=("$(bench_time "$tjit" run --cache-size-limit 1000 --no-db "$2")")
		b+=("$(bench_time "$tjit" run --cache-size-limit 1000 --db "$work/bench.db" "$2")")
	done
	ma=$(median "${a[@]}")
	mb=$(median "${b[@]}")
	echo "db: $1   (median of $runs runs)"
	echo "  --no-db  ${ma} s"
	echo "  --db     ${mb} s"
	echo "  ratio db/no-db = $(bench_ratio "$mb" "$ma")"
}
# compiles PROGRAM: how many compiles one run logs
compiles() {
	"$tjit" run --cache-size-limit 1000 --db "$work/count.db" "$1" >/dev/null
	if command -v sqlite3 >/dev/null 2>&1; then
		sqlite3 "$work/count.db" "SELECT count(*) FROM compiles WHERE run_id = (SELECT max(id) FROM runs)"
	else
		echo "?"
	fi
}

echo "db: training-like program: $(compiles "$train") compiles a run"
compare "training-like program, 100 compiles in 2,000 calls (target <= 1.10)" "$train"
echo

echo "db: recompile-heavy program: $(compiles "$prog") compiles a run"
compare "100 compiles and nothing else (worst case: the wait for the log at exit dominates)" "$prog"
echo
compare "an empty program (target: both < 0.005 s)" "$empty"
