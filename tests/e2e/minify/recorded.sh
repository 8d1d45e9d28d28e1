#!/bin/sh
# tests/e2e/minify/recorded.sh - tjit-minify's recorded values (doc/
# minify.md, "Recording"): TJIT_RECORD saves a graph's inputs, the
# candidates read each dropped node's recorded eager value, and the repro
# carries them in a sidecar (repro.tjt) only when zeros, ones or random
# values do not show the failure.
#
# No planted bug needs the recorded values in the final repro: the only
# one that depends on data, inductor:accuracy (relu(x) is 1 where x <= 0),
# also shows on zeros, and relu alone is always what the search ends
# with. So the sidecar is checked where it stays: a session stopped by
# --max-queries before the inputs were shrunk leaves its best repro with
# its values, and that repro fails alone. data.tj is a failure that random
# inputs do not show (relu of a square): without the recorded values the
# graph would not fail alone and nothing would be shrunk. hit.tj is a
# failure that only the graph's second call shows, whose inputs are not
# the recorded ones: plainer values are tried before giving up.
#
# Usage: tests/e2e/minify/recorded.sh
# Environment: TJIT (default ./tjit), TJIT_MINIFY (default: tjit-minify
# beside TJIT), TJ_SRCDIR (the top source folder).
set -u

top=${TJ_SRCDIR:-$(cd "$(dirname "$0")/../../.." && pwd)}
top=$(cd "$top" && pwd) || exit 99
# shellcheck source=tests/e2e/lib.sh
. "$top/tests/e2e/lib.sh"
find_minify recorded.sh
have_sqlite=1
command -v sqlite3 >/dev/null 2>&1 || have_sqlite=0

work=$(mktemp -d "${TMPDIR:-/tmp}/tjit-recorded.XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
ln -s "$top/tests" "$work/tests"
unset TJIT_LOGS TJIT_DB TJIT_INJECT_BUG TJIT_RECORD TJIT_COMPILE_ONLY NO_COLOR
LC_ALL=C
export LC_ALL
cd "$work" || exit 99
here=tests/e2e/minify

sql() {
	[ $have_sqlite -eq 1 ] || return 0
	got=$(sqlite3 "$2" "$3" 2>&1)
	if [ "$got" = "$4" ]; then ok; else bad "$1: $3 gave '$got', expected '$4'"; fi
}

# ---- TJIT_RECORD: the inputs of the first call of compile F/N ----

# chain.tj's graph 1/0 is block(x, w) at its first call: h (2, 3) alone
# (x @ w and scale ran in graph 0/0)
expect 0 "TJIT_RECORD" env TJIT_RECORD=1/0:in.tjt "$tjit" run --no-db $here/chain.tj
cmp -s "$work/out" "$top/$here/chain.out" && ok || bad "TJIT_RECORD: the program printed otherwise"
printf 'xs = load("in.tjt")\nprint(len(xs), xs[0].shape, xs[0].dtype)\n' >show.tj
expect 0 "TJIT_RECORD: the file" "$tjit" run --no-db show.tj
same "TJIT_RECORD: the file" "1 (2, 3) float32" "$work/out"
# the values are the ones the graph got: its output again from them
printf 'h = load("in.tjt")[0]\nprint((relu(h - 1.5) + h.sigmoid()).sum(1))\n' >again.tj
expect 0 "TJIT_RECORD: the values" "$tjit" run --no-db again.tj
sed -n 2p "$top/$here/chain.out" >"$work/line2"
cmp -s "$work/out" "$work/line2" && ok || bad "TJIT_RECORD: the recorded input gives $(cat "$work/out")"
# a compile that never runs: no file; a file that cannot be written: a warning
expect 0 "TJIT_RECORD: no such compile" env TJIT_RECORD=7/0:none.tjt "$tjit" run --no-db $here/chain.tj
[ ! -e none.tjt ] && ok || bad "TJIT_RECORD 7/0: a file was written"
expect 0 "TJIT_RECORD: unwritable" env TJIT_RECORD=1/0:no/such/dir/in.tjt "$tjit" run --no-db $here/chain.tj
same "TJIT_RECORD: unwritable: stderr" \
	"tjit: warning: TJIT_RECORD: cannot write 'no/such/dir/in.tjt': No such file or directory" "$work/err"
for bad_spec in 1/0 1:x.tjt 1/0: a/b:x.tjt; do
	expect 2 "TJIT_RECORD=$bad_spec" env TJIT_RECORD=$bad_spec "$tjit" run --no-db $here/chain.tj
	same "TJIT_RECORD=$bad_spec: stderr" \
		"tjit run: TJIT_RECORD: expected F/N:PATH (a compile id, a file), got '$bad_spec'" "$work/err"
done

# ---- a failure random inputs do not show ----

expect 0 "data" env TJIT_INJECT_BUG=inductor:accuracy "$minify" --db data.db --timeout 120 -o data.d $here/data.tj
empty "data: stderr" "$work/err"
sed 's/k_[0-9a-f]\{16\}/k_H/g' "$work/out" >"$work/out.masked"
same "data: the report" "program: $here/data.tj
backend: inductor
failure: accuracy
signature: accuracy
detail: output line 1: got tensor([2.0000, 2.0000, 5.0000]), expected tensor([1.0000, 2.0000, 5.0000])
stage: inductor
graph: 0/0 f ($here/data.tj:4)
kernel: k_H pointwise (mul, relu, add)
shrunk: 1 of 3 ops: relu
runs: 16
repro: data.d/repro.tj" "$work/out.masked"
# the whole graph fails on its recorded inputs (random ones square to
# more than 0); relu alone on mul's recorded value, then on zeros
sql "data: steps" data.db "SELECT group_concat(phase || ' ' || candidate || ' ' || outcome, ' / ') FROM
	(SELECT phase, candidate, outcome FROM minify_steps WHERE phase IN ('record', 'shrink') ORDER BY id)" \
	"record inputs of graph 0/0: pass passes / record eager values: pass passes / shrink keep 3: mul, relu, add: accuracy fails / shrink keep 2: mul, relu: accuracy fails / shrink keep 1: mul: pass passes / shrink keep 1: relu: accuracy fails / shrink values zeros: accuracy fails / shrink sizes 1: accuracy fails"
# zeros show it: no sidecar, nothing left of the recording
grep '^v_' data.d/repro.tj >"$work/inputs"
same "data: the repro's input" "v_mul = zeros(1)" "$work/inputs"
ls data.d | grep -v '^runs\.db' >"$work/files"
same "data: the folder" "repro.tj" "$work/files"

# ---- a failure that only a later call's data shows ----

# hit.tj's graph runs twice, a cache hit the second time: the recorded
# inputs (the first call's) are all positive and do not show the failure,
# zeros do; the graph is shrunk on them, not left whole
expect 0 "hit" env TJIT_INJECT_BUG=inductor:accuracy "$minify" --db hit.db --timeout 120 -o hit.d $here/hit.tj
empty "hit: stderr" "$work/err"
grep -q '^shrunk: 1 of 3 ops: relu$' "$work/out" && ok || bad "hit: $(grep '^shrunk' "$work/out")"
sql "hit: steps" hit.db "SELECT group_concat(phase || ' ' || candidate || ' ' || outcome, ' / ') FROM
	(SELECT phase, candidate, outcome FROM minify_steps WHERE phase IN ('record', 'shrink') ORDER BY id)" \
	"record inputs of graph 0/0: pass passes / record eager values: pass passes / shrink keep 3: mul, relu, add: pass passes / shrink values zeros: accuracy fails / shrink keep 2: mul, relu: accuracy fails / shrink keep 1: mul: pass passes / shrink keep 1: relu: accuracy fails / shrink sizes 1: accuracy fails"
grep '^v_' hit.d/repro.tj >"$work/inputs"
same "hit: the repro's input" "v_mul = zeros(1)" "$work/inputs"
# the repro exits 1 alone, 0 without the bug
(cd hit.d && TJIT_INJECT_BUG=inductor:accuracy "$tjit" run --no-db repro.tj) >"$work/out" 2>&1
st=$?
[ $st -eq 1 ] && ok || bad "hit: the repro exits $st: $(cat "$work/out")"
(cd hit.d && "$tjit" run --no-db repro.tj) >"$work/out" 2>&1 && ok ||
	bad "hit: the repro fails without the bug: $(cat "$work/out")"

# ---- the sidecar: a session stopped before its inputs were shrunk ----

expect 1 "stopped" env TJIT_INJECT_BUG=inductor:accuracy "$minify" --db stop.db --timeout 120 -o stop.d \
	--max-queries 13 $here/data.tj
grep -q '^shrunk: 1 of 3 ops: relu$' "$work/out" && ok || bad "stopped: $(grep '^shrunk' "$work/out")"
grep '^# values: ' stop.d/repro.tj >"$work/hdr"
same "stopped: the header names the sidecar" \
	"# values: repro.tjt (recorded from the eager run; load() reads it from the folder the repro runs in)" "$work/hdr"
sed -n '/^manual_seed/,/^got = /p' stop.d/repro.tj >"$work/inputs"
same "stopped: the repro's input" 'manual_seed(0)
vals = load("repro.tjt")
v_mul = vals[0]
got = compile(repro, backend="inductor")(v_mul)' "$work/inputs"
# the sidecar holds mul's recorded value, x * x
printf 'print(load("repro.tjt"))\n' >stop.d/show.tj
(cd stop.d && "$tjit" run --no-db show.tj) >"$work/out" 2>&1
same "stopped: the sidecar" "[tensor([0.0000, 1.0000, 4.0000])]" "$work/out"
rm stop.d/show.tj
# the repro fails alone with its sidecar, passes without the bug
(cd stop.d && TJIT_INJECT_BUG=inductor:accuracy "$tjit" run --no-db --backend inductor repro.tj) >"$work/out" 2>&1
st=$?
if [ $st -eq 1 ] && grep -q '^wrong output 0 differs from the float64 eager run$' "$work/out"; then ok
else bad "stopped: the repro exits $st: $(cat "$work/out")"; fi
(cd stop.d && "$tjit" run --no-db --backend inductor repro.tj) >"$work/out" 2>&1 && ok ||
	bad "stopped: the repro fails without the bug: $(cat "$work/out")"
# a repro without its sidecar is an error at the load
mv stop.d/repro.tjt stop.d/gone.tjt
(cd stop.d && "$tjit" run --no-db repro.tj) >"$work/out" 2>&1
grep -q "^repro.tj:[0-9]*:8: error: cannot read 'repro.tjt': No such file or directory$" "$work/out" && ok ||
	bad "no sidecar: $(cat "$work/out")"

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
