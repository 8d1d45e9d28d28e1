#!/bin/sh
# tests/e2e/dot/check.sh - tjit-dot end to end: `graph ID`, `graph
# --compile F/N`, `run`, --max-nodes, -o, -T svg|png|pdf, the command line
# and its errors.
#
# Each program of this folder logs a known shape into a fresh database
# with `tjit run --db` (run.sh also runs it against NAME.out like any
# program): ops.tj a graph of 3 ops, brk.tj a print that breaks the graph,
# inline.tj an inlined helper, recompile.tj two recompiles, big.tj a graph
# of 20 ops, inductor.tj two kernels with a matmul between them. tjit-dot's
# DOT is read back with cgraph by tests/dot/dotcheck, which prints its
# graph, subgraphs, nodes with their labels and edges sorted; that summary
# must be NAME.expected (with the compile times, which change from run to
# run, masked to "T ms"). The SVG must be well-formed XML (xmllint, from the
# Debian package libxml2-utils; those checks are skipped without it) with a
# <g id="node..."> per node of the DOT; PNG and PDF files must start with
# their magic bytes.
#
# Usage: tests/e2e/dot/check.sh [--update]
#   --update rewrites the NAME.expected files from what tjit-dot prints
#   now (for a human who has read the differences, never for CI).
# Environment: TJIT (the tjit binary; default ./tjit), TJIT_DOT (default:
# tjit-dot beside TJIT), DOTCHECK (default: tests/dot/dotcheck beside
# TJIT), TJ_SRCDIR (the top source folder; default: three levels above
# this script).
set -u

update=0
[ "${1-}" = --update ] && update=1

top=${TJ_SRCDIR:-$(cd "$(dirname "$0")/../../.." && pwd)}
top=$(cd "$top" && pwd) || exit 99
tjit=${TJIT:-./tjit}
case $tjit in /*) ;; *) tjit=$(pwd)/$tjit ;; esac
dot=${TJIT_DOT:-$(dirname "$tjit")/tjit-dot}
case $dot in /*) ;; *) dot=$(pwd)/$dot ;; esac
dotcheck=${DOTCHECK:-$(dirname "$tjit")/tests/dot/dotcheck}
case $dotcheck in /*) ;; *) dotcheck=$(pwd)/$dotcheck ;; esac
for b in "$tjit" "$dot" "$dotcheck"; do
	[ -x "$b" ] || { echo "check.sh: no binary at $b (set TJIT, TJIT_DOT, DOTCHECK)" >&2; exit 99; }
done
have_xmllint=1
command -v xmllint >/dev/null 2>&1 || have_xmllint=0

work=$(mktemp -d "${TMPDIR:-/tmp}/tjit-dot.XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
ln -s "$top/tests" "$work/tests"
unset TJIT_LOGS TJIT_DB
LC_ALL=C
export LC_ALL
cd "$work" || exit 99
here=tests/e2e/dot

# shellcheck source=tests/e2e/lib.sh
. "$top/tests/e2e/lib.sh"

# summary NAME TJIT-DOT-ARGS...: tjit-dot's DOT (stdout, exit 0, nothing
# on stderr), read back by dotcheck, compared with NAME.expected
summary() {
	s_name=$1
	shift
	expect 0 "$s_name" "$dot" "$@"
	empty "$s_name: stderr" "$work/err"
	cp "$work/out" "$work/$s_name.dot"
	if "$dotcheck" "$work/$s_name.dot" >"$work/$s_name.sum" 2>"$work/$s_name.err"; then
		ok
	else
		bad "$s_name: dotcheck cannot read the DOT"
		sed 's/^/    /' "$work/$s_name.err"
	fi
	# (kernel names are hashes of their loop IR: masked too)
	sed -e 's/[0-9][0-9]*\.[0-9][0-9] ms/T ms/g' -e 's/k_[0-9a-f]\{16\}/k_H/g' "$work/$s_name.sum" >"$work/$s_name.norm"
	compare "$s_name" "$top/$here/$s_name.expected" "$work/$s_name.norm"
}

# ---- the databases: each program logged on its own ----
# (inductor's kernels from a fresh kernel cache: generated, not cached)
TJIT_CACHE_DIR=$work/kcache
export TJIT_CACHE_DIR
for p in ops brk inline recompile big aot inductor inductor_grad; do
	expect 0 "tjit run $p.tj" "$tjit" run --db "$p.db" "$here/$p.tj"
	compare "tjit run $p.tj: output" "$top/$here/$p.out" "$work/out"
done

# ---- graph ----

summary ops.graph graph --db ops.db 1
summary ops.compile graph --db ops.db --compile 0/0
compare "graph --compile 0/0 is graph 1" "$work/ops.graph.dot" "$work/ops.compile.dot"
expect 0 "graph --run latest --compile 0/0" "$dot" graph --db ops.db --run latest --compile=0/0
compare "graph --run latest --compile 0/0 is graph 1" "$work/ops.graph.dot" "$work/out"
expect 0 "graph --stage captured" "$dot" graph --db ops.db --compile 0/0 --stage captured
compare "graph --stage captured is graph 1" "$work/ops.graph.dot" "$work/out"
summary aot.forward graph --db aot.db --compile 0/0 --stage aot_forward
summary aot.backward graph --db aot.db --compile 0/0 --stage aot_backward
expect 0 "graph 3 is the backward graph" "$dot" graph --db aot.db 3
compare "graph 3 is --stage aot_backward" "$work/aot.backward.dot" "$work/out"
expect 1 "aot: no inductor stage" "$dot" graph --db aot.db --compile 0/0 --stage inductor
same "aot: no inductor stage: message" \
	"tjit-dot: compile 0/0 of run 1 has no inductor graph (it has: captured, aot_forward, aot_backward)" "$work/err"
summary inductor.kernels graph --db inductor.db --compile 0/0 --stage inductor
summary inductor_grad.backward graph --db inductor_grad.db --compile 0/0 --stage inductor_backward
expect 1 "inductor without grad: no inductor_backward stage" "$dot" graph --db inductor.db --compile 0/0 \
	--stage inductor_backward
same "inductor without grad: no inductor_backward stage: message" \
	"tjit-dot: compile 0/0 of run 1 has no inductor_backward graph (it has: captured, aot_forward)" "$work/err"
expect 0 "inductor: graph --stage aot_forward" "$dot" graph --db inductor.db --compile 0/0 --stage aot_forward
if grep -q cluster "$work/out"; then bad "inductor: --stage aot_forward has clusters"; else ok; fi
expect 0 "tjit run inductor.tj again" "$tjit" run --db inductor.db "$here/inductor.tj"
expect 0 "inductor again: graph --stage inductor" "$dot" graph --db inductor.db --run latest --compile 0/0 --stage inductor
"$dotcheck" "$work/out" | grep '^subgraph' | sed 's/k_[0-9a-f]\{16\}/k_H/g' >"$work/cached"
same "inductor again: the kernels came from the cache" 'subgraph cluster_kernel-0 "k_H (pointwise, cached)": add mul tanh
subgraph cluster_kernel-1 "k_H (reduction, cached)": relu sum_1' "$work/cached"
summary brk.graph graph --db brk.db --compile 0/0
summary brk.resume graph --db brk.db --compile 1/0
summary inline.graph graph --db inline.db --compile 0/0
summary recompile.graph graph --db recompile.db --compile 0/2
summary big.cut graph --db big.db --max-nodes 5 1
expect 0 "big: --max-nodes 0" "$dot" graph --db big.db --max-nodes 0 1
"$dotcheck" --count "$work/out" >"$work/count"
same "big: --max-nodes 0 keeps all" "22 nodes, 21 edges" "$work/count"
expect 0 "big: --max-nodes 20" "$dot" graph --db big.db --max-nodes 20 1
if grep -q not-shown "$work/out"; then bad "big: --max-nodes 20 cut something"; else ok; fi

# the same DOT every time, byte for byte
expect 0 "graph again" "$dot" graph --db ops.db 1
compare "graph: the same DOT twice" "$work/ops.graph.dot" "$work/out"

# ---- run ----

summary recompile.run run --db recompile.db
summary brk.run run --db brk.db latest
summary recompile.cut run --db recompile.db --max-nodes 2 1
expect 0 "TJIT_DB run" env TJIT_DB="$work/brk.db" "$dot" run
compare "TJIT_DB run is brk's run" "$work/brk.run.dot" "$work/out"

# ---- -o and -T ----

expect 0 "-o ops.dot" "$dot" graph --db ops.db -o "$work/ops.dot" 1
empty "-o ops.dot: stdout" "$work/out"
compare "-o ops.dot is stdout's DOT" "$work/ops.graph.dot" "$work/ops.dot"
expect 0 "-T dot" "$dot" graph --db ops.db -T dot 1
compare "-T dot is the default" "$work/ops.graph.dot" "$work/out"

# svg: valid XML with a node group per node of the DOT
svg_check() {
	v_name=$1
	v_svg=$2
	v_dot=$3
	if [ $have_xmllint -eq 1 ]; then
		if xmllint --noout "$v_svg" 2>"$work/xml.err"; then ok; else
			bad "$v_name: not well-formed XML"
			sed 's/^/    /' "$work/xml.err"
		fi
	fi
	n_svg=$(grep -c '<g id="node' "$v_svg")
	n_dot=$("$dotcheck" --count "$v_dot" | sed 's/ nodes.*//')
	if [ "$n_svg" -eq "$n_dot" ] && [ "$n_dot" -gt 0 ]; then ok; else
		bad "$v_name: $n_svg nodes in the SVG, $n_dot in the DOT"
	fi
	if head -c 5 "$v_svg" | grep -q '^<?xml'; then ok; else bad "$v_name: no XML declaration"; fi
}
expect 0 "-T svg -o" "$dot" graph --db inline.db -T svg -o "$work/inline.svg" 1
empty "-T svg -o: stdout" "$work/out"
empty "-T svg -o: stderr" "$work/err"
svg_check "inline.svg" "$work/inline.svg" "$work/inline.graph.dot"
expect 0 "run -Tsvg" "$dot" run --db recompile.db -Tsvg
cp "$work/out" "$work/recompile.svg"
svg_check "recompile run svg" "$work/recompile.svg" "$work/recompile.run.dot"
expect 0 "cut -T svg" "$dot" graph --db big.db --max-nodes 5 -T svg 1
cp "$work/out" "$work/big.svg"
svg_check "big.svg" "$work/big.svg" "$work/big.cut.dot"

# magic NAME FILE HEX: the file starts with the bytes HEX
magic() {
	got=$(od -An -tx1 -N"$(($(printf '%s' "$3" | wc -c) / 2))" "$2" | tr -d ' \n')
	if [ "$got" = "$3" ]; then ok; else bad "$1: starts with $got, expected $3"; fi
}
expect 0 "-T png -o" "$dot" graph --db brk.db -T png -o "$work/brk.png" 1
magic "brk.png" "$work/brk.png" 89504e470d0a1a0a
expect 0 "-T pdf -o" "$dot" run --db brk.db -T pdf -o "$work/brk.pdf"
magic "brk.pdf" "$work/brk.pdf" 255044462d
expect 0 "-T png to a pipe" "$dot" graph --db brk.db -T png 1
magic "png on stdout" "$work/out" 89504e470d0a1a0a

# ---- -o replaces a drawing, anything else only with --force ----

printf 'def f(x):\n    return x\n' >"$work/prog.tj"
cp "$work/prog.tj" "$work/prog.tj.orig"
expect 1 "-o over a source file" "$dot" graph --db ops.db -o "$work/prog.tj" 1
same "-o over a source file: message" \
	"tjit-dot: not overwriting '$work/prog.tj': it is not a drawing (--force overwrites it)" "$work/err"
if cmp -s "$work/prog.tj" "$work/prog.tj.orig"; then ok; else bad "-o over a source file: it changed"; fi
cp ops.db "$work/ops.db.orig"
expect 1 "-o over the database" "$dot" run --db ops.db -T svg -o ops.db
same "-o over the database: message" \
	"tjit-dot: not overwriting 'ops.db': it is not a drawing (--force overwrites it)" "$work/err"
if cmp -s ops.db "$work/ops.db.orig"; then ok; else bad "-o over the database: it changed"; fi
expect 0 "-o over a DOT drawing" "$dot" run --db ops.db -o "$work/ops.dot"
expect 0 "-o svg over an SVG drawing" "$dot" graph --db inline.db -T svg -o "$work/inline.svg" 1
expect 0 "-o svg over a PNG drawing" "$dot" graph --db brk.db -T svg -o "$work/brk.png" 1
expect 0 "-o png over a PDF drawing" "$dot" graph --db brk.db -T png -o "$work/brk.pdf" 1
: >"$work/empty.dot"
expect 0 "-o over an empty file" "$dot" graph --db ops.db -o "$work/empty.dot" 1
compare "-o over an empty file: the DOT" "$work/ops.graph.dot" "$work/empty.dot"
expect 0 "--force over a source file" "$dot" graph --db ops.db --force -o "$work/prog.tj" 1
compare "--force over a source file: the DOT" "$work/ops.graph.dot" "$work/prog.tj"

# ---- errors and usage ----

expect 1 "no database" "$dot" graph --db "$work/none.db" 1
same "no database: message" "tjit-dot: no database at '$work/none.db'" "$work/err"
empty "no database: stdout" "$work/out"
expect 1 "run: no database" "$dot" run --db "$work/none.db"
same "run: no database: message" "tjit-dot: no database at '$work/none.db'" "$work/err"
expect 1 "unknown graph id" "$dot" graph --db ops.db 99
same "unknown graph id: message" "tjit-dot: no graph 99 in ops.db" "$work/err"
empty "unknown graph id: stdout" "$work/out"
# a malformed id is bad usage (2, with the usage), before any database is
# opened; a well-formed one that is not in the database is 1 (above)
first_line() {
	sed -n 1p "$work/err" >"$work/line1"
	same "$1" "$2" "$work/line1"
	if grep -q '^usage: tjit-dot' "$work/err"; then ok; else bad "$1: no usage"; fi
}
expect 2 "bad graph id" "$dot" graph --db ops.db 1x
first_line "bad graph id: message" "tjit-dot graph: bad graph id '1x': expected a number >= 1 (as tjit-dot run shows)"
expect 2 "graph id abc" "$dot" graph --db "$work/none.db" abc
first_line "graph id abc: message" "tjit-dot graph: bad graph id 'abc': expected a number >= 1 (as tjit-dot run shows)"
expect 2 "graph id 0" "$dot" graph --db ops.db 0
first_line "graph id 0: message (ids start at 1)" \
	"tjit-dot graph: bad graph id '0': expected a number >= 1 (as tjit-dot run shows)"
expect 2 "graph id -1" "$dot" graph --db ops.db -1
first_line "graph id -1: message" "tjit-dot graph: unknown option '-1'"
expect 2 "bad F/N" "$dot" graph --db ops.db --compile 0-0
first_line "bad F/N: message" "tjit-dot graph: bad compile id '0-0': expected F/N, as 0/1"
expect 2 "--compile abc" "$dot" graph --db "$work/none.db" --compile abc
first_line "--compile abc: message" "tjit-dot graph: bad compile id 'abc': expected F/N, as 0/1"
expect 2 "--compile: a bad --run" "$dot" graph --db ops.db --run last --compile 0/0
first_line "--compile: a bad --run: message" \
	"tjit-dot graph: bad run 'last': expected a run id (1, 2, ...), latest or latest~N"
expect 2 "--compile: an unknown --stage" "$dot" graph --db ops.db --compile 0/0 --stage bogus
first_line "--compile: an unknown --stage: message" \
	"tjit-dot graph: bad stage 'bogus': expected captured, aot_forward, aot_backward, inductor, inductor_backward or minified"
expect 2 "minify: bad session" "$dot" minify --db "$work/none.db" abc
first_line "minify: bad session: message" \
	"tjit-dot minify: bad session 'abc': expected a number >= 1 (as tjit-tui's sessions show)"
expect 1 "no compile 0/9" "$dot" graph --db ops.db --compile 0/9
same "no compile 0/9: message" "tjit-dot: no compile 0/9 in run 1" "$work/err"
expect 1 "no stage" "$dot" graph --db ops.db --compile 0/0 --stage aot_forward
same "no stage: message" "tjit-dot: compile 0/0 of run 1 has no aot_forward graph (it has: captured)" "$work/err"
expect 2 "bad RUN" "$dot" run --db ops.db last
first_line "bad RUN: message" "tjit-dot run: bad run 'last': expected a run id (1, 2, ...), latest or latest~N"
expect 2 "RUN foo" "$dot" run --db "$work/none.db" foo
first_line "RUN foo: message" "tjit-dot run: bad run 'foo': expected a run id (1, 2, ...), latest or latest~N"
expect 2 "RUN 0" "$dot" run --db ops.db 0
first_line "RUN 0: message (ids start at 1)" \
	"tjit-dot run: bad run '0': expected a run id (1, 2, ...), latest or latest~N"
expect 1 "no RUN" "$dot" run --db ops.db latest~2
same "no RUN: message" "tjit-dot: no run 'latest~2' in ops.db (it has 1 run)" "$work/err"
expect 1 "--compile: bad --run" "$dot" graph --db ops.db --run 7 --compile 0/0
same "--compile: bad --run: message" "tjit-dot: no run '7' in ops.db (it has 1 run)" "$work/err"
expect 2 "bad -T" "$dot" graph --db ops.db -T gif 1
same "bad -T: message" "tjit-dot graph: -T: expected dot, svg, png or pdf, got 'gif'" "$work/err"
expect 2 "bad -Tjpg" "$dot" run --db ops.db -Tjpg
same "bad -Tjpg: message" "tjit-dot run: -T: expected dot, svg, png or pdf, got 'jpg'" "$work/err"
expect 1 "unwritable -o" "$dot" graph --db ops.db -o "$work/nodir/g.dot" 1
same "unwritable -o: message" "tjit-dot: cannot write '$work/nodir/g.dot': No such file or directory" "$work/err"
expect 1 "unwritable -o svg" "$dot" run --db ops.db -T svg -o "$work/nodir/g.svg"
same "unwritable -o svg: message" \
	"tjit-dot: cannot write '$work/nodir/g.svg': No such file or directory" "$work/err"
printf 'keep\n' >"$work/kept.dot"
expect 1 "unknown graph with -o" "$dot" graph --db ops.db -o "$work/kept.dot" 99
same "unknown graph with -o: the file is untouched" "keep" "$work/kept.dot"
expect 2 "bad --max-nodes" "$dot" graph --db ops.db --max-nodes -1 1
same "bad --max-nodes: message" "tjit-dot graph: --max-nodes: expected a whole number >= 0, got '-1'" "$work/err"
expect 2 "bad --max-nodes x" "$dot" run --db ops.db --max-nodes=x
expect 2 "ID and --compile" "$dot" graph --db ops.db --compile 0/0 1
sed -n 1p "$work/err" >"$work/line1"
same "ID and --compile: message" "tjit-dot graph: give a graph ID or --compile F/N, not both" "$work/line1"
expect 2 "no ID" "$dot" graph --db ops.db
sed -n 1p "$work/err" >"$work/line1"
same "no ID: message" "tjit-dot graph: missing ID (or --compile F/N)" "$work/line1"
expect 2 "--run without --compile" "$dot" graph --db ops.db --run 1 1
sed -n 1p "$work/err" >"$work/line1"
same "--run without --compile: message" "tjit-dot graph: --run needs --compile F/N" "$work/line1"
expect 2 "two RUNs" "$dot" run --db ops.db 1 1
sed -n 1p "$work/err" >"$work/line1"
same "two RUNs: message" "tjit-dot run: unexpected argument '1'" "$work/line1"
expect 2 "unknown option" "$dot" run --frob
sed -n 1p "$work/err" >"$work/line1"
same "unknown option: message" "tjit-dot run: unknown option '--frob'" "$work/line1"
expect 2 "no command" "$dot"
expect 2 "unknown command" "$dot" frobnicate
sed -n 1p "$work/err" >"$work/line1"
same "unknown command: message" "tjit-dot: unknown command 'frobnicate'" "$work/line1"
if command -v script >/dev/null 2>&1; then
	script -qec "$dot graph --db ops.db -T png 1; echo status \$?" /dev/null </dev/null >"$work/tty" 2>&1
	tr -d '\r' <"$work/tty" >"$work/tty.txt"
	printf 'tjit-dot graph: not writing png to a terminal: use -o FILE\nstatus 2\n' >"$work/want"
	compare "png to a terminal" "$work/want" "$work/tty.txt"
fi
expect 0 "--help" "$dot" --help
if grep -q "^usage: tjit-dot graph" "$work/out"; then ok; else bad "--help: no usage"; fi
long=$(LC_ALL=C sed 's/[\x80-\xBF]//g' "$work/out" | awk 'length($0) > 80')
if [ -z "$long" ]; then ok; else bad "--help: lines wider than 80 columns: $long"; fi
expect 0 "graph --help" "$dot" graph --help
expect 0 "help" "$dot" help
expect 0 "--version" "$dot" --version
if grep -q "^tjit-dot [0-9]" "$work/out"; then ok; else bad "--version: $(cat "$work/out")"; fi

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
