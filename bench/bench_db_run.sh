#!/usr/bin/env bash
# bench/bench_db_run.sh - what the database costs a run.
#
# 1. A recompile-heavy program, 100 compiles (25 compiled functions with a
#    graph break in each, so two frames each, called with two shapes: a
#    first compile and a recompile of both frames, each with a graph of a
#    few ops and its guards), run with a
#    database (a fresh file, then appended to by every run, as in real
#    use) and with --no-db: the median of RUNS runs each, measured side by
#    side, and their ratio (target: at most 1.10).
# 2. An empty program with and without a database (target: both under
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
empty=$work/empty.tj
: >"$empty"

# the program must really compile 100 times
"$tjit" run --db "$work/count.db" "$prog" >/dev/null
if command -v sqlite3 >/dev/null 2>&1; then
	n=$(sqlite3 "$work/count.db" "SELECT count(*) FROM compiles")
	echo "db: recompile-heavy program: $n compiles a run"
fi

# interleaved, so that a change of machine load hits both alike
t_nodb=()
t_db=()
for i in $(seq "$runs"); do
	t_nodb+=("$(bench_time "$tjit" run --no-db "$prog")")
	t_db+=("$(bench_time "$tjit" run --db "$work/bench.db" "$prog")")
done
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
m_nodb=$(median "${t_nodb[@]}")
m_db=$(median "${t_db[@]}")
echo "db: 100 compiles with the database vs --no-db   (median of $runs runs)"
echo "  --no-db  ${m_nodb} s"
echo "  --db     ${m_db} s"
echo "  ratio db/no-db = $(bench_ratio "$m_db" "$m_nodb")   (target <= 1.10)"

e_nodb=()
e_db=()
for i in $(seq "$runs"); do
	e_nodb+=("$(bench_time "$tjit" run --no-db "$empty")")
	e_db+=("$(bench_time "$tjit" run --db "$work/bench.db" "$empty")")
done
m_nodb=$(median "${e_nodb[@]}")
m_db=$(median "${e_db[@]}")
echo "db: an empty program   (median of $runs runs; target: both < 0.005 s)"
echo "  --no-db  ${m_nodb} s"
echo "  --db     ${m_db} s"
echo "  ratio db/no-db = $(bench_ratio "$m_db" "$m_nodb")"
