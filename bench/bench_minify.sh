#!/usr/bin/env bash
# bench/bench_minify.sh - tjit-minify's candidate counts and time (issue 13).
#
# Three generated programs, each with one relu (the culprit of a planted
# bug) among other ops, minified to that relu:
#   chain: 1024 ops in a chain (y = y + c, y = y * c), relu at op 700,
#          TJIT_INJECT_BUG=aot:compile_error; target: at most 24 shrink
#          candidates (PyTorch's minifier needs about 46 for this case);
#   dag:   a random DAG of 256 nodes with fan-in 2 (each node an op of two
#          earlier ones, then a scale), relu at node 150,
#          TJIT_INJECT_BUG=aot:compile_error; target: at most 40;
#   acc:   a 200-op chain, TJIT_INJECT_BUG=inductor:accuracy under
#          inductor; target: the whole minification under 60 s.
# Prints, for each: the op nodes left, the shrink candidates, every
# candidate of the session (classify, bisect, locate, shrink, verify) and
# the wall time. The candidate counts are read from the session's steps
# with the sqlite3 shell (without it, only the report's totals).
# Environment: TJIT_MINIFY (default ./tjit-minify).
set -eu
minify=${TJIT_MINIFY:-./tjit-minify}
[ -x "$minify" ] || { echo "no tjit-minify binary at $minify: build it (make) or set TJIT_MINIFY" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/bench_minify.XXXXXX")
trap 'rm -rf "$work"' EXIT
have_sqlite=1
command -v sqlite3 >/dev/null 2>&1 || have_sqlite=0

# chain N K: N ops, relu at K
chain() {
	awk -v n="$1" -v k="$2" 'BEGIN {
		print "def chain(x):\n    y = x"
		for (i = 0; i < n; i++) {
			if (i == k) print "    y = relu(y)"
			else if (i % 2) print "    y = y * 0.999"
			else print "    y = y + 0.001"
		}
		print "    return y\n\nprint(compile(chain)(randn(64) - 3))"
	}'
}

# dag N K: N nodes of fan-in 2, relu at K (fixed seed)
dag() {
	awk -v n="$1" -v k="$2" 'BEGIN {
		srand(5)
		split("+ * - +", op, " ")
		print "def dag(x):\n    v0 = x\n    v1 = x * 0.5"
		for (i = 2; i < n; i++) {
			a = int(rand() * i); b = int(rand() * i)
			if (i == k) printf "    v%d = relu(v%d)\n", i, a
			else printf "    v%d = (v%d %s v%d) * 0.5\n", i, a, op[i % 4 + 1], b
		}
		printf "    return v%d", n - 1
		for (i = n - 8; i < n - 1; i++) printf " + v%d", i
		print "\n\nprint(compile(dag)(randn(8)))"
	}'
}

# one NAME BUG TARGET_KIND TARGET: minify NAME.tj, print its counts
one() {
	local name=$1 bug=$2 kind=$3 target=$4 t0 t1 secs left shrink total verdict
	t0=$EPOCHREALTIME
	TJIT_INJECT_BUG=$bug "$minify" --db "$work/$name.db" -o "$work/$name.d" "$work/$name.tj" >"$work/$name.out" \
		2>"$work/$name.err" || { echo "minify $name: failed"; sed 's/^/    /' "$work/$name.err"; return 0; }
	t1=$EPOCHREALTIME
	secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
	left=$(sed -n 's/^shrunk: //p' "$work/$name.out")
	total=$(sed -n 's/^runs: //p' "$work/$name.out")
	shrink=?
	[ $have_sqlite -eq 1 ] && shrink=$(sqlite3 "$work/$name.db" "SELECT count(*) FROM minify_steps WHERE phase = 'shrink'")
	case $kind in
	runs) if [ "$shrink" != ? ] && [ "$shrink" -le "$target" ]; then verdict=ok; else verdict=MISSED; fi
	      target="<= $target shrink candidates" ;;
	secs) if awk -v s="$secs" -v t="$target" 'BEGIN { exit !(s < t) }'; then verdict=ok; else verdict=MISSED; fi
	      target="< $target s" ;;
	esac
	printf '  %-6s %-32s shrink %3s  all %3s  %6s s  target %s: %s\n' "$name" "${left:-not shrunk}" "$shrink" \
		"$total" "$secs" "$target" "$verdict"
}

chain 1024 700 >"$work/chain.tj"
dag 256 150 >"$work/dag.tj"
chain 200 120 >"$work/acc.tj"
echo "tjit-minify: candidates to shrink one culprit (the session's in all) and time"
one chain aot:compile_error runs 24
one dag aot:compile_error runs 40
one acc inductor:accuracy secs 60
