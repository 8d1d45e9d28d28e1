#!/bin/sh
# tests/e2e/profile/check.sh - tjit-profile end to end: `run`, `report`,
# `diff`, --json, colors, the command line and its errors.
#
# Each program of this folder has a known pattern of recompiles, graph
# breaks and eager frames (its comment says which); run.sh runs it with
# `tjit run` against NAME.out like any program. Here `tjit-profile run`
# runs it on a fresh database: stdout must be the program's output
# (NAME.out) followed by the report, whose every line must match
# NAME.report once normalized (normalize below masks the instants and the
# durations, which change from run to run, and sorts the compile time of
# each function, whose order they decide). `report` of the same run must
# print exactly the report that `run` printed. diff.expected is the diff
# of diff_a.tj and diff_b.tj. The JSON is parsed and queried with the
# sqlite3 shell's JSON functions (without the sqlite3 shell those checks
# are skipped, the others run).
#
# Usage: tests/e2e/profile/check.sh [--update]
#   --update rewrites NAME.report and diff.expected from what tjit-profile
#   prints now (for a human who has read the differences, never for CI).
# Environment: TJIT (the tjit binary; default ./tjit), TJIT_PROFILE
# (default: tjit-profile beside TJIT), TJ_SRCDIR (the top source folder;
# default: three levels above this script).
set -u

update=0
[ "${1-}" = --update ] && update=1

top=${TJ_SRCDIR:-$(cd "$(dirname "$0")/../../.." && pwd)}
top=$(cd "$top" && pwd) || exit 99
tjit=${TJIT:-./tjit}
case $tjit in /*) ;; *) tjit=$(pwd)/$tjit ;; esac
prof=${TJIT_PROFILE:-$(dirname "$tjit")/tjit-profile}
case $prof in /*) ;; *) prof=$(pwd)/$prof ;; esac
[ -x "$tjit" ] || { echo "check.sh: no tjit binary at $tjit (set TJIT)" >&2; exit 99; }
[ -x "$prof" ] || { echo "check.sh: no tjit-profile binary at $prof (set TJIT_PROFILE)" >&2; exit 99; }
have_sqlite=1
command -v sqlite3 >/dev/null 2>&1 || have_sqlite=0

work=$(mktemp -d "${TMPDIR:-/tmp}/tjit-profile.XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
ln -s "$top/tests" "$work/tests"
unset TJIT_LOGS TJIT_DB NO_COLOR
LC_ALL=C
export LC_ALL
cd "$work" || exit 99
here=tests/e2e/profile

# shellcheck source=tests/e2e/lib.sh
. "$top/tests/e2e/lib.sh"

# normalize < REPORT: the instants and durations masked; the compile time
# section's number columns collapsed and its functions sorted; its "by
# phase" and "guard checks" paragraphs joined into one line each (where
# they wrap depends on the widths of the numbers); which function spent
# the most time checking guards is masked (it depends on the timing)
normalize() {
	awk '
	function mask(s,   ind) {
		match(s, /^ */)
		ind = substr(s, 1, RLENGTH)
		s = substr(s, RLENGTH + 1)
		gsub(/[0-9]+\.[0-9]+ [mu]?s/, "T", s)
		gsub(/[-+]?[0-9]+%/, "P%", s)
		gsub(/ new$/, " P%", s)
		gsub(/most in [^(]*\([^)]*\)/, "most in FN", s)
		gsub(/  +/, " ", s)
		return ind s
	}
	function flush(   i, j, t) {
		if (phase != "") { print mask(phase); phase = "" }
		for (i = 2; i <= n; i++) {
			t = rows[i]
			for (j = i - 1; j >= 1 && rows[j] > t; j--) rows[j + 1] = rows[j]
			rows[j + 1] = t
		}
		for (i = 1; i <= n; i++) print rows[i]
		n = 0
	}
	/^  started / {
		sub(/started [0-9-]+ [0-9:]+/, "started WHEN")
		sub(/ran [0-9.]+ m?s/, "ran T")
		print
		next
	}
	/^Compile time/ { sec = 1; mode = ""; print mask($0); next }
	sec && /^$/ { flush(); sec = 0; print; next }
	sec && /^  by phase:/ { mode = "phase"; phase = $0; next }
	sec && mode == "phase" && /^    / { sub(/^ +/, " "); phase = phase $0; next }
	sec && /^  in backend:/ { flush(); mode = "phase"; phase = $0; next }
	sec && /^  by function:/ { flush(); mode = "rows"; print; next }
	sec && /^  guard checks at run time:/ { flush(); mode = "phase"; phase = $0; next }
	sec && mode == "rows" && /^    / { rows[++n] = mask($0); next }
	sec { flush(); mode = ""; print mask($0); next }
	{ print }
	END { if (sec) flush() }'
}

# json NAME FILE 'PATH' EXPECTED: json_extract(FILE, PATH) is EXPECTED
json() {
	[ $have_sqlite -eq 1 ] || return 0
	got=$(sqlite3 :memory: "SELECT json_extract(readfile('$2'), '$3')" 2>&1)
	if [ "$got" = "$4" ]; then ok; else bad "$1: $3 is '$got', expected '$4'"; fi
}

# jsql NAME FILE EXPR EXPECTED: an SQL expression over the document j
jsql() {
	[ $have_sqlite -eq 1 ] || return 0
	got=$(sqlite3 :memory: "WITH d(j) AS (SELECT readfile('$2')) SELECT $3 FROM d" 2>&1)
	if [ "$got" = "$4" ]; then ok; else bad "$1: $3 is '$got', expected '$4'"; fi
}

# first_line NAME TEXT: the first line of stderr is TEXT
first_line() {
	sed -n 1p "$work/err" >"$work/line1"
	same "$1" "$2" "$work/line1"
}

json_valid() {
	[ $have_sqlite -eq 1 ] || return 0
	got=$(sqlite3 :memory: "SELECT json_valid(readfile('$2'))" 2>&1)
	if [ "$got" = 1 ]; then ok; else bad "$1: not valid JSON ($got)"; fi
}

# every line fits 80 columns (UTF-8 continuation bytes do not count)
fits80() {
	long=$(LC_ALL=C sed 's/[\x80-\xBF]//g' "$2" | awk 'length($0) > 80')
	if [ -z "$long" ]; then ok; else bad "$1: lines wider than 80 columns:"; echo "$long" | sed 's/^/    /'; fi
}

# profile NAME [OPTIONS]: `tjit-profile run` of NAME.tj on a fresh
# database $work/NAME.db; checks the status, the program's output, the
# report against NAME.report, and that `report` prints the same report
profile() {
	name=$1
	shift
	db=$name.db
	want=0
	[ -f "$top/$here/$name.status" ] && want=$(cat "$top/$here/$name.status")
	expect "$want" "run $name" "$prof" run --db "$db" "$@" "$here/$name.tj"
	cp "$work/out" "$work/$name.run"
	n=$(wc -l <"$top/$here/$name.out")
	head -n "$n" "$work/$name.run" >"$work/$name.prog"
	compare "run $name: the program's output" "$top/$here/$name.out" "$work/$name.prog"
	tail -n +"$((n + 1))" "$work/$name.run" >"$work/$name.rep"
	normalize <"$work/$name.rep" >"$work/$name.norm"
	compare "run $name: the report" "$top/$here/$name.report" "$work/$name.norm"
	fits80 "run $name" "$work/$name.rep"
	expect 0 "report $name" "$prof" report --db "$db"
	compare "report $name is run's report" "$work/$name.rep" "$work/out"
	expect 0 "report 1 of $name" "$prof" report --db "$db" 1
	compare "report 1 is latest" "$work/$name.rep" "$work/out"
	"$prof" report --db "$db" --json >"$work/$name.json"
	json_valid "report --json $name" "$work/$name.json"
}

# ---- the reports ----

profile recompiles
j=$work/recompiles.json
json "recompiles.json" "$j" '$.run.tool' "tjit-profile run"
json "recompiles.json" "$j" '$.run.cache_size_limit' "unlimited"
json "recompiles.json" "$j" '$.run.exit_status' "0"
json "recompiles.json" "$j" '$.totals.recompiles' "15"
json "recompiles.json" "$j" '$.totals.cache_limit_needed' "12"
json "recompiles.json" "$j" '$.graph_breaks[0].code' "TJB001"
json "recompiles.json" "$j" '$.graph_breaks[0].hits' "12"
json "recompiles.json" "$j" '$.graph_breaks[0].source' 'print("f", n)'
json "recompiles.json" "$j" '$.graph_breaks[0].hint' \
	"move the print out of the compiled function, or print a value that the function returns"
json "recompiles.json" "$j" '$.recompiles[0].function' "f"
json "recompiles.json" "$j" '$.recompiles[0].recompiles' "11"
json "recompiles.json" "$j" '$.recompiles[0].guard_failures[0].guard' "L['n']"
json "recompiles.json" "$j" '$.recompiles[0].guard_failures[0].value_count' "12"
json "recompiles.json" "$j" '$.recompiles[0].guard_failures[0].values[11]' "11"
json "recompiles.json" "$j" '$.recompiles[0].guard_failures[0].made_at.line' "6"
json "recompiles.json" "$j" '$.recompiles[1].guard_failures[0].guard' "L['x'].shape[0]"
json "recompiles.json" "$j" '$.suggestions[1].kind' "mark_dynamic"
json "recompiles.json" "$j" '$.suggestions[1].text' \
	"g: \`L['x'].shape[0]\` took 5 values: mark_dynamic(x, 0) or dynamic=True"
json "recompiles.json" "$j" '$.suggestions[2].kind' "cache_limit"
json "recompiles.json" "$j" '$.suggestions[2].count' "12"
json "recompiles.json" "$j" '$.compile_time.guard_checks' "91"
jsql "recompiles.json" "$j" "json_array_length(j, '\$.compile_time.by_function')" "2"
# (in order of compile time, which varies: compared sorted)
jsql "recompiles.json" "$j" "(SELECT group_concat(fn, ',') FROM (SELECT json_extract(value, '\$.function') AS fn
	FROM json_each(j, '\$.compile_time.by_function') ORDER BY fn))" "f,g"

profile fullgraph
j=$work/fullgraph.json
json "fullgraph.json" "$j" '$.graph_breaks[0].fullgraph_errors' "1"
json "fullgraph.json" "$j" '$.graph_breaks[0].hits' "0"
jsql "fullgraph.json" "$j" "json_extract(j, '\$.totals.compiles')" "2"

profile breaks
j=$work/breaks.json
json "breaks.json" "$j" '$.graph_breaks[0].code' "TJB007"
json "breaks.json" "$j" '$.graph_breaks[0].hits' "9"
json "breaks.json" "$j" '$.graph_breaks[1].code' "TJB001"
json "breaks.json" "$j" '$.graph_breaks[1].hits' "6"
json "breaks.json" "$j" '$.graph_breaks[1].user_stack[0].function' "f"
json "breaks.json" "$j" '$.graph_breaks[1].user_stack[1].source' 'print("show", x.shape)'
json "breaks.json" "$j" '$.eager_frames[0].function' "slow"
json "breaks.json" "$j" '$.eager_frames[0].reason' "disabled"
json "breaks.json" "$j" '$.eager_frames[0].eager_calls' "9"
json "breaks.json" "$j" '$.totals.graph_breaks' "8"

profile strings
profile ties
j=$work/strings.json
json "strings.json" "$j" '$.graph_breaks[0].source' "$(printf 'print("tab\\there \\"quoted\\" \\\\ é ✓", s)' | sed 's/\\t/	/')"
json "strings.json" "$j" '$.recompiles[0].guard_failures[0].values[0]' "'a\"b'"
json "strings.json" "$j" '$.recompiles[0].guard_failures[0].values[1]' "'c\\\\d'"
json "strings.json" "$j" '$.recompiles[0].guard_failures[0].values[2]' "'e\\nf'"
json "strings.json" "$j" '$.recompiles[0].guard_failures[0].values[3]' "'ü\\tv'"

profile fails
json "fails.json" "$work/fails.json" '$.run.exit_status' "1"

# eager frames: tjit run at a cache limit of 2, then report
db=eager.db
expect 0 "tjit run eager.tj" "$tjit" run --db "$db" --cache-size-limit 2 "$here/eager.tj"
compare "tjit run eager.tj: output" "$top/$here/eager.out" "$work/out"
expect 0 "report eager" "$prof" report --db "$db"
normalize <"$work/out" >"$work/eager.norm"
compare "report eager" "$top/$here/eager.report" "$work/eager.norm"
fits80 "report eager" "$work/out"
"$prof" report --db "$db" --json >"$work/eager.json"
json_valid "report --json eager" "$work/eager.json"
json "eager.json" "$work/eager.json" '$.eager_frames[0].reason' "cache_limit"
json "eager.json" "$work/eager.json" '$.eager_frames[0].eager_calls' "3"
json "eager.json" "$work/eager.json" '$.eager_frames[1].reason' "frozen_miss"
json "eager.json" "$work/eager.json" '$.eager_frames[2].reason' "disabled"
json "eager.json" "$work/eager.json" '$.suggestions[#-1].kind' "cache_limit_hit"
json "eager.json" "$work/eager.json" '$.totals.cache_limit_reached' "1"

profile aot
j=$work/aot.json
jsql "aot.json" "$j" "(SELECT group_concat(json_extract(value, '\$.name') || ' ' || json_extract(value, '\$.compiles'), ',')
	FROM json_each(j, '\$.compile_time.backend_phases'))" "decompose 1,joint 1,partition 1"
jsql "aot.json" "$j" "(SELECT sum(json_extract(value, '\$.ms')) <= json_extract(j, '\$.compile_time.backend_ms') + 0.003
	FROM json_each(j, '\$.compile_time.backend_phases'))" "1"
# diff: a row per phase inside the backend, of either run (the eager run
# has none)
expect 0 "run aot again" "$prof" run --db aot.db "$here/aot.tj"
expect 0 "run eager.tj into aot.db" "$prof" run --db aot.db "$here/eager.tj"
expect 0 "diff aot 1 2" "$prof" diff --db aot.db 1 2
normalize <"$work/out" | grep -E '^  (backend|  [a-z]+) ' >"$work/aotdiff"
printf '%s\n' "  backend T T P%" "    decompose T T P%" "    joint T T P%" "    partition T T P%" >"$work/aotdiff.want"
compare "diff aot 1 2: the backend's phases" "$work/aotdiff.want" "$work/aotdiff"
expect 0 "diff aot 2 3" "$prof" diff --db aot.db 2 3
normalize <"$work/out" | grep -E '^  (backend|  [a-z]+) ' >"$work/aotdiff"
compare "diff aot 2 3: a phase gone is a row too" "$work/aotdiff.want" "$work/aotdiff"
expect 0 "diff --json aot 1 2" "$prof" diff --db aot.db --json 1 2
json "diff --json aot" "$work/out" '$.compile_time.b.backend_phases[2].name' "partition"

# inductor on a fresh kernel cache: its phases inside the backend, the
# kernels it generated; run again, every kernel from the cache
saved_cache_dir=${TJIT_CACHE_DIR-}
TJIT_CACHE_DIR=$work/kcache
export TJIT_CACHE_DIR
profile inductor
j=$work/inductor.json
jsql "inductor.json" "$j" "(SELECT group_concat(json_extract(value, '\$.name'), ',')
	FROM json_each(j, '\$.compile_time.backend_phases'))" "decompose,load_codegen,schedule,lower,codegen,llvm_optimize,jit"
json "inductor.json" "$j" '$.compile_time.kernels_compiled' "2"
json "inductor.json" "$j" '$.compile_time.kernels_cached' "0"
expect 0 "run inductor again" "$prof" run --db inductor.db "$here/inductor.tj"
normalize <"$work/out" | grep -E '^  (in backend|kernels):' >"$work/indcache"
printf '%s\n' "  in backend: decompose T (P%), load_codegen T (P%), schedule T (P%), lower T (P%), jit T (P%), other T (P%)" \
	"  kernels: 0 compiled, 2 from the cache" >"$work/indcache.want"
compare "run inductor again: no codegen, every kernel from the cache" "$work/indcache.want" "$work/indcache"
"$prof" report --db inductor.db --json 2 >"$work/inductor2.json"
json "inductor2.json" "$work/inductor2.json" '$.compile_time.kernels_compiled' "0"
json "inductor2.json" "$work/inductor2.json" '$.compile_time.kernels_cached' "2"
json "aot.json: no kernels" "$work/aot.json" '$.compile_time.kernels_compiled' "0"
expect 0 "diff inductor 1 2" "$prof" diff --db inductor.db 1 2
normalize <"$work/out" | grep -E '^  kernels ' >"$work/inddiff"
printf '%s\n' "  kernels compiled 2 0 -2" "  kernels cached 0 2 +2" >"$work/inddiff.want"
compare "diff inductor 1 2: the kernels compiled and cached" "$work/inddiff.want" "$work/inddiff"
# --no-kernel-cache, as tjit run's: every kernel compiled again, and the
# run's config says so
expect 0 "run inductor --no-kernel-cache" "$prof" run --db inductor.db --no-kernel-cache "$here/inductor.tj"
normalize <"$work/out" | grep -E '^  (config|kernels):' >"$work/indnocache"
printf '%s\n' "  config: fullgraph=0 cache_size_limit=unlimited eager=0 no_kernel_cache=1" \
	"  kernels: 2 compiled, 0 from the cache" >"$work/indnocache.want"
compare "run inductor --no-kernel-cache: every kernel compiled" "$work/indnocache.want" "$work/indnocache"
"$prof" report --db inductor.db --json 3 >"$work/inductor3.json"
json "inductor3.json" "$work/inductor3.json" '$.run.config' \
	"fullgraph=0 cache_size_limit=unlimited eager=0 no_kernel_cache=1"
json "inductor3.json" "$work/inductor3.json" '$.run.cache_size_limit' "unlimited"
TJIT_CACHE_DIR=$saved_cache_dir
[ -n "$TJIT_CACHE_DIR" ] || unset TJIT_CACHE_DIR

# ---- diff ----

db=diff.db
expect 0 "run diff_a" "$prof" run --db "$db" "$here/diff_a.tj"
expect 0 "run diff_b" "$prof" run --db "$db" "$here/diff_b.tj"
expect 0 "diff 1 2" "$prof" diff --db "$db" 1 2
normalize <"$work/out" >"$work/diff.norm"
compare "diff 1 2" "$top/$here/diff.expected" "$work/diff.norm"
fits80 "diff 1 2" "$work/out"
expect 1 "diff --fail-on-new 1 2" "$prof" diff --db "$db" --fail-on-new latest~1 latest
same "diff --fail-on-new: stderr" \
	"tjit-profile: run 2 has graph breaks or recompiles that run 1 had not (--fail-on-new)" "$work/err"
expect 0 "diff --fail-on-new 2 1" "$prof" diff --db "$db" --fail-on-new 2 1
expect 0 "diff --fail-on-new 1 1" "$prof" diff --db "$db" --fail-on-new 1 1
expect 0 "diff --json" "$prof" diff --db "$db" --json 1 2
cp "$work/out" "$work/diff.json"
json_valid "diff --json" "$work/diff.json"
json "diff.json" "$work/diff.json" '$.breaks_added[0].code' "TJB003"
jsql "diff.json" "$work/diff.json" "json_array_length(j, '\$.breaks_added')" "1"
json "diff.json" "$work/diff.json" '$.breaks_in_both' "1"
json "diff.json" "$work/diff.json" '$.breaks_gone' "[]"
json "diff.json" "$work/diff.json" '$.recompiles[0].function' "g"
json "diff.json" "$work/diff.json" '$.recompiles[0].a' "0"
json "diff.json" "$work/diff.json" '$.recompiles[0].b' "2"
json "diff.json" "$work/diff.json" '$.new_guard_failures[0].guard' "L['x'].shape[0]"
json "diff.json" "$work/diff.json" '$.new_breaks_or_recompiles' "1"
expect 1 "diff --json --fail-on-new" "$prof" diff --db "$db" --json --fail-on-new 1 2

# ---- colors: only on request or a terminal, never with NO_COLOR ----

db=recompiles.db
esc=$(printf '\033')
expect 0 "report (a pipe)" "$prof" report --db "$db"
if grep -q "$esc" "$work/out"; then bad "colors in a pipe"; else ok; fi
expect 0 "report --color always" "$prof" report --db "$db" --color always
if grep -q "$esc\[1mGraph breaks" "$work/out"; then ok; else bad "--color always: no colors"; fi
expect 0 "NO_COLOR report --color always" env NO_COLOR=1 "$prof" report --db "$db" --color=always
if grep -q "$esc" "$work/out"; then bad "colors with NO_COLOR"; else ok; fi
expect 0 "report --color never" "$prof" report --db "$db" --color never
if grep -q "$esc" "$work/out"; then bad "colors with --color never"; else ok; fi
if command -v script >/dev/null 2>&1; then
	script -qec "$prof report --db $db" /dev/null </dev/null >"$work/tty" 2>&1
	if grep -q "$esc" "$work/tty"; then ok; else bad "no colors on a terminal"; fi
	NO_COLOR=1 script -qec "$prof report --db $db" /dev/null </dev/null >"$work/tty" 2>&1
	if grep -q "$esc" "$work/tty"; then bad "colors on a terminal with NO_COLOR"; else ok; fi
fi

# ---- a run that did not finish ----

if [ $have_sqlite -eq 1 ]; then
	cp "$work/recompiles.db" "$work/killed.db"
	[ -f "$work/recompiles.db-wal" ] && cp "$work/recompiles.db-wal" "$work/killed.db-wal"
	sqlite3 "$work/killed.db" "UPDATE runs SET ended_at = NULL, exit_status = NULL"
	expect 0 "report of a killed run" "$prof" report --db "$work/killed.db"
	grep '^  started ' "$work/out" | sed 's/started [0-9-]* [0-9:]*/started WHEN/; s/process [0-9]*/process PID/' \
		>"$work/killed.line"
	same "a killed run: its header" "  started WHEN · did not finish (killed: process PID is gone)" "$work/killed.line"
	# a run with no end whose process is alive is still running (this shell's pid)
	sqlite3 "$work/killed.db" "UPDATE runs SET pid = $$"
	expect 0 "report of a running run" "$prof" report --db "$work/killed.db"
	grep '^  started ' "$work/out" | sed 's/started [0-9-]* [0-9:]*/started WHEN/' >"$work/killed.line"
	same "a running run: its header" "  started WHEN · did not finish (still running, process $$)" "$work/killed.line"
fi

# ---- the databases: --db, TJIT_DB, tjit.db ----

mkdir "$work/default" && ln -s "$top/tests" "$work/default/tests"
(cd "$work/default" && "$prof" run "$here/diff_a.tj" >/dev/null 2>&1)
if [ -f "$work/default/tjit.db" ]; then ok; else bad "run: no tjit.db"; fi
(cd "$work/default" && "$prof" report >"$work/out" 2>"$work/err")
if grep -q "^Run 1 of tjit.db · tests/e2e/profile/diff_a.tj$" "$work/out"; then ok; else
	bad "report: not tjit.db's run"
	head -3 "$work/out" "$work/err" | sed 's/^/    /'
fi
expect 0 "TJIT_DB report 2" env TJIT_DB="$work/diff.db" "$prof" report 2
if grep -q "^Run 2 of $work/diff.db · tests/e2e/profile/diff_b.tj$" "$work/out"; then ok; else bad "TJIT_DB: not its run"; fi

# ---- errors and usage ----

expect 1 "no database" "$prof" report --db "$work/none.db"
same "no database: message" "tjit-profile: no database at '$work/none.db'" "$work/err"
expect 1 "diff: no database" "$prof" diff --db "$work/none.db" 1 2
same "diff: no database: message" "tjit-profile: no database at '$work/none.db'" "$work/err"
expect 1 "no run latest~5" "$prof" report --db "$work/diff.db" latest~5
same "no run latest~5: message" "tjit-profile: no run 'latest~5' in $work/diff.db (it has 2 runs)" "$work/err"
expect 1 "no run 3" "$prof" diff --db "$work/diff.db" 1 3
same "no run 3: message" "tjit-profile: no run '3' in $work/diff.db (it has 2 runs)" "$work/err"
# a malformed RUN is bad usage (2, with the usage) before any database is
# opened; a well-formed one that is not there is 1 (above)
expect 2 "bad run" "$prof" report --db "$work/diff.db" last
first_line "bad run: message" "tjit-profile report: bad run 'last': expected a run id (1, 2, ...), latest or latest~N"
if grep -q '^usage: tjit-profile' "$work/err"; then ok; else bad "bad run: no usage"; fi
expect 2 "report x" "$prof" report --db "$work/none.db" x
first_line "report x: message" "tjit-profile report: bad run 'x': expected a run id (1, 2, ...), latest or latest~N"
expect 2 "report 0" "$prof" report --db "$work/diff.db" 0
first_line "report 0: message" "tjit-profile report: bad run '0': expected a run id (1, 2, ...), latest or latest~N"
expect 2 "report latest~x" "$prof" report --db "$work/diff.db" latest~x
first_line "report latest~x: message" \
	"tjit-profile report: bad run 'latest~x': expected a run id (1, 2, ...), latest or latest~N"
expect 2 "diff 1 x" "$prof" diff --db "$work/diff.db" 1 x
first_line "diff 1 x: message" "tjit-profile diff: bad run 'x': expected a run id (1, 2, ...), latest or latest~N"
expect 2 "diff x 1" "$prof" diff --db "$work/none.db" x 1
first_line "diff x 1: message" "tjit-profile diff: bad run 'x': expected a run id (1, 2, ...), latest or latest~N"
printf 'not a database\n' >"$work/text.db"
expect 1 "not a database" "$prof" report --db "$work/text.db"
same "not a database: message" "tjit-profile: '$work/text.db' is not a tjit database" "$work/err"
expect 2 "run: unreadable program" "$prof" run --db "$work/x.db" "$here/no_such.tj"
same "run: unreadable program: message" \
	"tjit-profile: cannot read '$here/no_such.tj': No such file or directory" "$work/err"
if [ -s "$work/out" ]; then bad "run: unreadable program: printed a report"; else ok; fi
expect 2 "no command" "$prof"
expect 2 "unknown command" "$prof" frobnicate
first_line "unknown command: message" "tjit-profile: unknown command 'frobnicate'"
expect 2 "run: no FILE" "$prof" run --db "$work/x.db"
expect 2 "run: two files" "$prof" run "$here/diff_a.tj" "$here/diff_b.tj"
expect 2 "diff: one run" "$prof" diff --db "$work/diff.db" 1
first_line "diff: one run: message" "tjit-profile diff: missing RUN_B"
expect 2 "report: unknown option" "$prof" report --frob
expect 2 "report: bad --color" "$prof" report --color=sometimes
expect 2 "run: bad --backend" "$prof" run --db "$work/x.db" --backend nope "$here/diff_a.tj"
expect 2 "report --json=x" "$prof" report --json=x
expect 0 "--help" "$prof" --help
if grep -q "^usage: tjit-profile run" "$work/out"; then ok; else bad "--help: no usage"; fi
fits80 "--help" "$work/out"
expect 0 "report --help" "$prof" report --help
expect 0 "help" "$prof" help
expect 0 "--version" "$prof" --version
if grep -q "^tjit-profile [0-9]" "$work/out"; then ok; else bad "--version: $(cat "$work/out")"; fi

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
