#!/bin/sh
# tests/e2e/minify/check.sh - tjit-minify end to end on real failures: the
# planted bugs TJIT_INJECT_BUG=<aot|inductor>:<compile_error|runtime_error|
# accuracy> (inductor's runtime error is a real SIGSEGV in JIT code) and the
# three relu_*_TESTING_ONLY backends, on chain.tj (relu in a compiled
# function with a graph break and a recompile; run.sh also runs it against
# chain.out like any program).
#
# For each: the exit status, the whole report on stdout, nothing on stderr
# (not a terminal: no progress), the session and its steps in the database
# (sqlite3; those checks are skipped without the sqlite3 shell), the run
# row of the minifier, and the repro, which must fail alone. Then a
# program that does not fail, a syntax error, a program that fails
# eagerly, --match, the limits, and bad usage (exit 2).
#
# Usage: tests/e2e/minify/check.sh
# Environment: TJIT (the tjit binary; default ./tjit), TJIT_MINIFY
# (default: tjit-minify beside TJIT), TJ_SRCDIR (the top source folder;
# default: three levels above this script).
set -u

top=${TJ_SRCDIR:-$(cd "$(dirname "$0")/../../.." && pwd)}
top=$(cd "$top" && pwd) || exit 99
# shellcheck source=tests/e2e/lib.sh
. "$top/tests/e2e/lib.sh"
find_minify check.sh
have_sqlite=1
command -v sqlite3 >/dev/null 2>&1 || have_sqlite=0
[ $have_sqlite -eq 1 ] || echo "note: no sqlite3 shell: the database checks are skipped"

work=$(mktemp -d "${TMPDIR:-/tmp}/tjit-minify.XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
ln -s "$top/tests" "$work/tests"
unset TJIT_LOGS TJIT_DB TJIT_INJECT_BUG NO_COLOR
LC_ALL=C
export LC_ALL
cd "$work" || exit 99
here=tests/e2e/minify
prog=$here/chain.tj

# sql NAME DB QUERY EXPECTED
sql() {
	[ $have_sqlite -eq 1 ] || return 0
	got=$(sqlite3 "$2" "$3" 2>&1)
	if [ "$got" = "$4" ]; then ok; else bad "$1: $3 gave '$got', expected '$4'"; fi
}

# minify NAME BUG BACKEND FAILURE STAGE LOCATE REPORT: tjit-minify on
# chain.tj with TJIT_INJECT_BUG=BUG (- for none) and --backend BACKEND;
# exit 0, stdout the report (REPORT: the lines between backend and runs),
# the session's row, its steps (LOCATE: the outcomes of the search for the
# failing graph), the run row, the repro
minify() {
	name=$1 bug=$2 backend=$3 failure=$4 stage=$5 locate=$6 report=$7
	[ "$bug" = - ] && bug=
	db=$work/$name.db
	# (a generous time limit: under a sanitizer on a busy machine a run
	# may take more than the default, and a step's outcome is compared)
	expect 0 "$name" env ${bug:+TJIT_INJECT_BUG=$bug} "$minify" --db "$db" --backend "$backend" --timeout 120 \
		-o "$name.d" "$prog"
	empty "$name: stderr" "$work/err"
	# the stages before the failing one pass, the failing one fails
	steps="classify:passes classify:fails classify:fails classify:fails"
	case $backend:$stage in
	inductor:aot_eager) steps="$steps bisect:passes bisect:fails" ;;
	inductor:inductor) steps="$steps bisect:passes bisect:passes" ;;
	*) steps="$steps bisect:passes" ;;
	esac
	for o in $locate; do steps="$steps locate:$o"; done
	# the recorded values: the failing graph's inputs, then its eager values
	steps="$steps record:passes record:passes"
	# ddmin over the graph's 5 ops: all, 3, 2, then each of sub and relu;
	# then its input: zeros, then every size 1
	steps="$steps shrink:fails shrink:fails shrink:fails shrink:passes shrink:fails"
	steps="$steps shrink:fails shrink:fails verify:fails"
	nruns=$(echo $steps | wc -w)
	# (an inductor kernel's name is a hash of its loop IR: masked)
	sed 's/k_[0-9a-f]\{16\}/k_H/g' "$work/out" >"$work/out.masked"
	same "$name: the report" "program: $prog
backend: $backend
$report
shrunk: 1 of 5 ops: relu
runs: $nruns
repro: $name.d/repro.tj" "$work/out.masked"
	sql "$name: session" "$db" "SELECT program, backend, failure, stage, result, repro_path,
		ended_at >= started_at, repro_hash IS NOT NULL, source_hash IS NOT NULL FROM minify_sessions" \
		"$prog|$backend|$failure|$stage|minified|$name.d/repro.tj|1|1|1"
	sql "$name: steps" "$db" "SELECT group_concat(phase || ':' || outcome, ' ') FROM
		(SELECT phase, outcome FROM minify_steps ORDER BY id)" "$steps"
	sql "$name: shrink steps" "$db" "SELECT group_concat(nodes || ' ' || candidate, ' / ') FROM
		(SELECT nodes, candidate FROM minify_steps WHERE phase = 'shrink' ORDER BY id)" \
		"$(for k in 'keep 5: sub, relu, sigmoid, add, sum_1' 'keep 3: sub, relu, sigmoid' 'keep 2: sub, relu' \
			'keep 1: sub' 'keep 1: relu' 'values zeros' 'sizes 1'; do
			case $k in keep*) n=${k#keep }; n=${n%%:*} ;; *) n=1 ;; esac
			[ "$k" = 'keep 1: sub' ] && r=pass || r=$(sed -n 's/^signature: //p' "$work/out")
			printf '%s %s: %s / ' "$n" "$k" "$r"
		done | sed 's| / $||')"
	# the repro: the culprit alone, its input a parameter
	sed -n '/^def repro/,/^    return/p' "$name.d/repro.tj" | grep '^    ' | sed 's/  *#.*//' >"$work/body"
	same "$name: the repro's graph" "    v_relu = relu(v_sub)
    return (v_relu,)" "$work/body"
	grep '^v_' "$name.d/repro.tj" >"$work/inputs"
	same "$name: the repro's input" "v_sub = zeros(1, 1)" "$work/inputs"
	# the failing graph and its minimized form, a compile of the minifier's run
	sql "$name: the graphs" "$db" "SELECT c.label, c.outcome, c.error = '$(sed -n 's/^signature: //p' "$work/out")',
		group_concat(g.stage || ' ' || g.op_count, ', ') FROM compiles c JOIN graphs g ON g.compile_id = c.id" \
		"1/0|error|1|captured 5, minified 1"
	sql "$name: step times" "$db" "SELECT count(*), min(ms > 0), count(DISTINCT session_id) FROM minify_steps" \
		"$nruns|1|1"
	sql "$name: the first steps" "$db" "SELECT candidate FROM minify_steps WHERE id <= 2 ORDER BY id" \
		"eager reference: pass
$backend run 1: $(sed -n 's/^signature: //p' "$work/out")"
	sql "$name: the run" "$db" "SELECT tool, program, backend, exit_status FROM runs" \
		"tjit-minify|$prog|$backend|0"
	sql "$name: the repro's text" "$db" "SELECT text = CAST(readfile('$name.d/repro.tj') AS TEXT) FROM sources
		WHERE hash = (SELECT repro_hash FROM minify_sessions)" "1"
	# the repro alone, as its header says
	head -n 4 "$name.d/repro.tj" | tail -n 1 >"$work/hdr"
	same "$name: the repro's command" "# run: ${bug:+TJIT_INJECT_BUG=$bug }tjit run --backend $backend repro.tj" \
		"$work/hdr"
	# (in a shell of its own, whose stderr keeps its "Segmentation fault"
	# line out of the log)
	sh -c 'cd "$1" && shift && "$@" >"$0/rout" 2>"$0/rerr" </dev/null' "$work" "$name.d" \
		env ${bug:+TJIT_INJECT_BUG=$bug} "$tjit" run --no-db --backend "$backend" repro.tj 2>/dev/null
	rst=$?
	case $failure in
	accuracy)
		# it checks itself against the float64 eager run, and passes without the bug
		if [ $rst -eq 1 ] && grep -q '^wrong output 0 differs from the float64 eager run$' "$work/rout"; then ok
		else bad "$name: the repro exits $rst without a wrong output"; fi
		(cd "$name.d" && "$tjit" run --no-db --backend eager repro.tj) >"$work/rref" 2>&1 </dev/null
		[ $? -eq 0 ] && ok || bad "$name: the repro fails on the eager backend too" ;;
	crash)
		# (a build with AddressSanitizer catches the signal, reports, exits 1)
		if [ $rst -eq 139 ] || { [ $rst -eq 1 ] && grep -q 'ERROR: AddressSanitizer: SEGV' "$work/rerr"; }; then
			ok
		else
			bad "$name: the repro exits $rst, not by SIGSEGV"
		fi ;;
	*)
		if [ $rst -eq 1 ] && grep -q ': error: ' "$work/rerr"; then ok; else
			bad "$name: the repro exits $rst without its error"; fi ;;
	esac
}

# ---- the planted bugs ----

relu_line='location: tests/e2e/minify/chain.tj:11:5'
graph='graph: 1/0 block (tests/e2e/minify/chain.tj:9)'

minify aot_compile aot:compile_error inductor compile_error aot_eager "" "failure: compile_error
signature: compile_error aot_eager: AotCompileError: the graph uses relu (TJIT_INJECT_BUG=aot:compile_error)
$relu_line
stage: aot_eager
$graph"

minify aot_runtime aot:runtime_error inductor runtime_error aot_eager "passes fails" "failure: runtime_error
signature: runtime_error aot_eager: AotRuntimeError: the graph uses relu (TJIT_INJECT_BUG=aot:runtime_error)
$relu_line
stage: aot_eager
$graph"

minify aot_accuracy aot:accuracy inductor accuracy aot_eager "fails passes fails" "failure: accuracy
signature: accuracy
detail: output line 2: got tensor([4.9399, 3.3590]), expected tensor([3.0274, 2.1332])
stage: aot_eager
$graph"

# the same seed, the same repro, byte for byte; another seed, other values
TJIT_INJECT_BUG=aot:accuracy "$minify" --db again.db -o again.d "$prog" >/dev/null 2>&1
if cmp -s again.d/repro.tj aot_accuracy.d/repro.tj; then ok; else bad "the same seed gave another repro"; fi
TJIT_INJECT_BUG=aot:accuracy "$minify" --db again.db -o seed.d --seed 7 "$prog" >/dev/null 2>&1
grep -q '^manual_seed(7)$' seed.d/repro.tj && ok || bad "--seed 7: no manual_seed(7) in the repro"

# the search for the graph: the failing run's four compiles halved, the
# others on eager (TJIT_COMPILE_ONLY), then the last one alone
sql "aot_accuracy: locate" aot_accuracy.db "SELECT group_concat(candidate, ' / ') FROM
	(SELECT candidate FROM minify_steps WHERE phase = 'locate' ORDER BY id)" \
	"compiles 0/0,1/0: accuracy / compiles 0/0: pass / compiles 1/0: accuracy"

# aot_eager's own bug with --backend aot_eager: one stage before it
minify aot_accuracy_aot aot:accuracy aot_eager accuracy aot_eager "fails passes fails" "failure: accuracy
signature: accuracy
detail: output line 2: got tensor([4.9399, 3.3590]), expected tensor([3.0274, 2.1332])
stage: aot_eager
$graph"

minify inductor_compile inductor:compile_error inductor compile_error inductor "" "failure: compile_error
signature: compile_error inductor: InductorCompileError: a kernel computes relu (TJIT_INJECT_BUG=inductor:compile_error)
$relu_line
stage: inductor
$graph"

# inductor's own failures that are not compile errors: the kernel of the
# graph that computes relu, in the report and the repro's header
kernel='kernel: k_H reduction (sub, relu, sigmoid, add, sum_1)'
minify inductor_crash inductor:runtime_error inductor crash inductor "passes fails" "failure: crash
signature: crash SIGSEGV
stage: inductor
$graph
$kernel"

minify inductor_accuracy inductor:accuracy inductor accuracy inductor "fails passes fails" "failure: accuracy
signature: accuracy
detail: output line 2: got tensor([5.0274, 5.1332]), expected tensor([3.0274, 2.1332])
stage: inductor
$graph
$kernel"

minify relu_compile - relu_compile_error_TESTING_ONLY compile_error relu_compile_error_TESTING_ONLY "" "failure: compile_error
signature: compile_error relu_compile_error_TESTING_ONLY: ReluCompileError: the graph uses relu
$relu_line
stage: relu_compile_error_TESTING_ONLY
$graph"

minify relu_runtime - relu_runtime_error_TESTING_ONLY runtime_error relu_runtime_error_TESTING_ONLY "passes fails" "failure: runtime_error
signature: runtime_error relu_runtime_error_TESTING_ONLY: ReluRuntimeError: the graph uses relu
$relu_line
stage: relu_runtime_error_TESTING_ONLY
$graph"

minify relu_accuracy - relu_accuracy_error_TESTING_ONLY accuracy relu_accuracy_error_TESTING_ONLY "fails passes fails" "failure: accuracy
signature: accuracy
detail: output line 2: got tensor([4.9399, 3.3590]), expected tensor([3.0274, 2.1332])
stage: relu_accuracy_error_TESTING_ONLY
$graph"

for k in inductor_crash inductor_accuracy; do
	grep '^# failing kernel: ' $k.d/repro.tj | sed 's/k_[0-9a-f]\{16\}/k_H/' >"$work/kh"
	same "$k: the repro names the kernel" "# failing kernel: ${kernel#kernel: }" "$work/kh"
done
grep -q '^# failing kernel' inductor_compile.d/repro.tj && bad "inductor_compile: a kernel named (no kernel was logged)" || ok

# ---- a large graph: 1000 ops in a chain, one relu ----

awk 'BEGIN {
	print "def chain(x):\n    y = x"
	for (i = 0; i < 1000; i++) {
		if (i == 613) print "    y = relu(y)"
		else if (i % 2) print "    y = y * 0.999"
		else print "    y = y + 0.001"
	}
	print "    return y\n\nprint(compile(chain)(randn(16) - 3))"
}' >big.tj
for bug in aot:compile_error inductor:runtime_error inductor:accuracy; do
	expect 0 "big $bug" env TJIT_INJECT_BUG=$bug "$minify" --db big.db --timeout 120 -o big.d big.tj
	grep -q '^shrunk: 1 of 1000 ops: relu$' "$work/out" && ok || bad "big $bug: $(grep '^shrunk' "$work/out")"
	sed -n '/^def repro/,/^    return/p' big.d/repro.tj | grep '^    ' | sed 's/  *#.*//' >"$work/body"
	same "big $bug: the repro's graph" "    v_relu = relu(v_add_306)
    return (v_relu,)" "$work/body"
	# one culprit among 1000 ops: at most 24 candidates
	sql "big $bug: shrink candidates" big.db "SELECT count(*) <= 24 FROM minify_steps
		WHERE phase = 'shrink' AND session_id = (SELECT max(id) FROM minify_sessions)" "1"
done

# ---- a kernel that the backward graph recomputes ----

# grad.tj's kernel of add and relu runs in the forward graph and again in
# the backward one (the same loop IR, the same name): the report names it
# once
expect 0 "grad" env TJIT_INJECT_BUG=inductor:runtime_error "$minify" --db grad.db --timeout 120 -o grad.d \
	$here/grad.tj
sed -n 's/k_[0-9a-f]\{16\}/k_H/g; /^kernel: /p' "$work/out" >"$work/kernel"
same "grad: the kernel" "kernel: k_H pointwise (add, relu)" "$work/kernel"

# ---- what is not a compiler bug, or no failure at all ----

# no failure: the eager reference and three runs, exit 1
expect 1 "no failure" "$minify" --db nofail.db -o nofail.d "$prog"
same "no failure: the report" "program: $prog
backend: inductor
failure: none
runs: 4" "$work/out"
same "no failure: stderr" "tjit-minify: $prog does not fail with backend inductor: 3 runs printed what the eager run printed" \
	"$work/err"
sql "no failure: session" nofail.db "SELECT failure, stage IS NULL, result FROM minify_sessions" "none|1|not_reproduced"
sql "no failure: steps" nofail.db "SELECT group_concat(outcome, ' ') FROM minify_steps" "passes passes passes passes"
sql "no failure: run" nofail.db "SELECT tool, exit_status FROM runs" "tjit-minify|1"

# a failure that does not match --match is not the failure
expect 1 "--match" env TJIT_INJECT_BUG=aot:compile_error "$minify" --db match.db -o match.d --match sigmoid "$prog"
same "--match: stderr" "tjit-minify: $prog fails with backend inductor, but not with a message that contains 'sigmoid'" \
	"$work/err"
expect 0 "--match relu" env TJIT_INJECT_BUG=aot:compile_error "$minify" --db match.db -o match.d --match "uses relu" "$prog"

# a syntax error
printf 'def f(x):\n    return (x\n' >syntax.tj
expect 1 "syntax error" "$minify" --db syntax.db -o syntax.d syntax.tj
same "syntax error: the report" "program: syntax.tj
backend: inductor
failure: not_compiler_bug
runs: 0" "$work/out"
tail -n 1 "$work/err" >"$work/last"
same "syntax error: stderr" "tjit-minify: syntax.tj has a syntax error: not a compiler bug" "$work/last"
head -n 1 "$work/err" | grep -q '^syntax.tj:2:12: error: ' && ok || bad "syntax error: no diagnostic: $(head -n 1 "$work/err")"
sql "syntax error: session" syntax.db "SELECT failure, result FROM minify_sessions" "syntax_error|not_compiler_bug"

# a program that fails without compile() too
printf 'def f(x):\n    return x + ones(3)\n\nprint(compile(f)(ones(2)))\n' >eager.tj
expect 1 "eager failure" "$minify" --db eager.db -o eager.d eager.tj
same "eager failure: stderr" "Traceback (most recent call last):
  File \"eager.tj\", line 4, in <module>
    print(compile(f)(ones(2)))
  File \"eager.tj\", line 2, in f
    return x + ones(3)
eager.tj:2:12: error: cannot broadcast shapes (2,) and (3,)
    return x + ones(3)
           ^
tjit-minify: eager.tj fails without compile() too (runtime_error cannot broadcast shapes (N,) and (N,)): not a compiler bug" \
	"$work/err"
sql "eager failure: session" eager.db "SELECT failure, result FROM minify_sessions" "runtime_error|not_compiler_bug"
sql "eager failure: steps" eager.db "SELECT count(*) FROM minify_steps" "1"

# an output folder that is a file: said before anything runs (the
# candidates could not log their compiles there, and a compile error
# would read as a run-time error)
: >afile.d
expect 1 "-o a file" env TJIT_INJECT_BUG=aot:compile_error "$minify" --db ofile.db -o afile.d "$prog"
same "-o a file: stderr" "tjit-minify: cannot write in the folder 'afile.d': Not a directory" "$work/err"
same "-o a file: the report" "program: $prog
backend: inductor
runs: 0" "$work/out"
sql "-o a file: session" ofile.db "SELECT failure, result FROM minify_sessions" "unknown|error"

# ---- the limits ----

# two queries: the failure is not confirmed
expect 1 "--max-queries 2" env TJIT_INJECT_BUG=aot:compile_error "$minify" --db limits.db -o limits.d \
	--max-queries 2 "$prog"
same "--max-queries 2: stderr" "tjit-minify: stopped: --max-queries 2 reached
tjit-minify: the failure was not confirmed: 1 of 3 runs made" "$work/err"
sql "--max-queries 2: steps" limits.db "SELECT count(*) FROM minify_steps" "2"

# eleven queries: stopped while shrinking, the best repro so far on disk
expect 1 "--max-queries 11" env TJIT_INJECT_BUG=aot:compile_error "$minify" --db limits9.db -o limits9.d \
	--max-queries 11 "$prog"
grep -q '^shrunk: 2 of 5 ops: sub, relu$' "$work/out" && ok || bad "--max-queries 11: $(grep '^shrunk' "$work/out")"
same "--max-queries 11: stderr" "tjit-minify: stopped: --max-queries 11 reached
tjit-minify: limits9.d/repro.tj: not checked: the limits ran out" "$work/err"
grep -q '^    v_relu = relu(v_sub) ' limits9.d/repro.tj && ok || bad "--max-queries 11: the best repro is not on disk"
sql "--max-queries 11: session" limits9.db "SELECT result, (SELECT count(*) FROM minify_steps) FROM minify_sessions" \
	"stopped|11"

# on a terminal (script(1) gives one), a progress line a run: the runs so
# far, the nodes left in the smallest failing graph, the time spent
if command -v script >/dev/null 2>&1; then
	TJIT_INJECT_BUG=aot:compile_error script -qec "'$minify' --db tty.db -o tty.d --max-queries 11 '$prog'" \
		/dev/null 2>&1 | tr -d '\r' >"$work/tty"
	grep -q '^tjit-minify: \[run 1, [0-9.]* s\] classify: eager reference: pass: passes ([0-9.]* s)$' "$work/tty" &&
		ok || bad "progress: no line of run 1 in: $(head -3 "$work/tty")"
	grep -q '^tjit-minify: \[run 11, 2 nodes left, [0-9.]* s\] shrink: keep 2: sub, relu: compile_error aot_eager: AotCompileError.*: fails' \
		"$work/tty" && ok || bad "progress: no line of run 11 in: $(grep 'run 11' "$work/tty")"
	[ "$(grep -c '^tjit-minify: \[run ' "$work/tty")" = 11 ] && ok || bad "progress: not a line a run"
else
	echo "note: no script command: the progress on a terminal is not checked"
fi

# ---- tjit-dot minify: the graph drawn with its culprit marked ----

dot=${TJIT_DOT:-$(dirname "$tjit")/tjit-dot}
dotcheck=${DOTCHECK:-$(dirname "$tjit")/tests/dot/dotcheck}
# drawing NAME TJIT-DOT-ARGS...: the DOT read back by dotcheck, against NAME.expected
drawing() {
	d_name=$1
	shift
	expect 0 "tjit-dot minify $d_name" "$dot" minify "$@"
	empty "tjit-dot minify $d_name: stderr" "$work/err"
	if "$dotcheck" "$work/out" >"$work/$d_name.sum" 2>&1; then ok; else bad "$d_name: dotcheck cannot read the DOT"; fi
	compare "tjit-dot minify $d_name" "$top/$here/$d_name.expected" "$work/$d_name.sum"
}
if [ -x "$dot" ] && [ -x "$dotcheck" ]; then
	# the original: relu red, named in the title; then relu alone, its input the dropped sub
	drawing chain.original --db aot_compile.db
	drawing chain.minimized --db aot_compile.db --minimized 1
	# --max-nodes 1 keeps the culprit, not the first op (sub)
	drawing chain.cut --db aot_compile.db --max-nodes 1
	expect 0 "tjit-dot minify -T svg" "$dot" minify --db inductor_accuracy.db -T svg -o inductor_accuracy.svg
	grep -q '<svg' inductor_accuracy.svg && grep -q 'culprit: relu' inductor_accuracy.svg && ok ||
		bad "tjit-dot minify -T svg: no drawing of the culprit"
	expect 1 "tjit-dot minify: no session 9" "$dot" minify --db aot_compile.db 9
	same "tjit-dot minify: no session 9: stderr" "tjit-dot: no minifier session 9 in aot_compile.db" "$work/err"
	expect 1 "tjit-dot minify: no graph" "$dot" minify --db nofail.db
	same "tjit-dot minify: no graph: stderr" \
		"tjit-dot: minifier session 1 has no minimized graph (its failure: none, result: not_reproduced)" "$work/err"
	expect 2 "tjit-dot minify: bad session" "$dot" minify --db nofail.db x
	sed -n 1p "$work/err" >"$work/line1"
	same "tjit-dot minify: bad session: stderr" \
		"tjit-dot minify: bad session 'x': expected a number >= 1 (as tjit-tui's sessions show)" "$work/line1"
else
	echo "note: no tjit-dot or dotcheck beside $tjit: tjit-dot minify not checked"
fi

# ---- bad usage: exit 2 ----

usage() {
	name=$1 msg=$2
	shift 2
	expect 2 "$name" "$minify" "$@"
	first_err=$(sed -n 1p "$work/err")
	if [ "$first_err" = "$msg" ]; then ok; else bad "$name: stderr '$first_err', expected '$msg'"; fi
	grep -q '^usage: tjit-minify' "$work/err" && ok || bad "$name: no usage"
}
usage "no file" "tjit-minify: missing FILE"
usage "two files" "tjit-minify: unexpected argument 'b.tj' (one program at a time)" a.tj b.tj
usage "unknown option" "tjit-minify: unknown option '--frob'" --frob "$prog"
usage "bad backend" "tjit-minify: --backend: unknown backend 'fast' (valid: eager, aot_eager, inductor, relu_compile_error_TESTING_ONLY, relu_runtime_error_TESTING_ONLY, relu_accuracy_error_TESTING_ONLY)" \
	--backend fast "$prog"
usage "bad --tol" "tjit-minify: --tol: expected a number >= 0, got 'x'" --tol x "$prog"
usage "bad --max-queries" "tjit-minify: --max-queries: expected a whole number from 1 to 2^53, got '1.5'" --max-queries 1.5 "$prog"
usage "--max-queries too large" \
	"tjit-minify: --max-queries: expected a whole number from 1 to 2^53, got '99999999999999999999'" \
	--max-queries 99999999999999999999 "$prog"
usage "missing value" "tjit-minify: option '-o' needs a value (DIR)" "$prog" -o
expect 2 "bad TJIT_INJECT_BUG" env TJIT_INJECT_BUG=aot:segv "$minify" "$prog"
sed -n 1p "$work/err" >"$work/err.1"
same "bad TJIT_INJECT_BUG: stderr" \
	"tjit-minify: TJIT_INJECT_BUG: unknown kind 'segv' in 'aot:segv' (valid: compile_error, runtime_error, accuracy, crash, hang, flaky)" \
	"$work/err.1"
expect 2 "unreadable program" "$minify" --db none.db missing.tj
same "unreadable program: stderr" "tjit-minify: cannot read 'missing.tj': No such file or directory" "$work/err"
[ ! -e none.db ] && ok || bad "unreadable program: a database was made"
expect 0 "--help" "$minify" --help
grep -q '^  --max-queries N ' "$work/out" && ok || bad "--help: no --max-queries line"
expect 0 "--version" "$minify" --version
grep -q '^tjit-minify ' "$work/out" && ok || bad "--version: $(cat "$work/out")"

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
