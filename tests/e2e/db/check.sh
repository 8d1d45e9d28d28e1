#!/bin/sh
# tests/e2e/db/check.sh - what `tjit run` writes into its database, queried
# with the sqlite3 command-line shell (the Debian package sqlite3, which
# scripts/install-deps installs; without it the test is skipped).
#
# Each case runs tjit on a program of this folder with --db on a fresh file
# (or TJIT_DB, or the default ./tjit.db) and compares query results with
# what the program must have logged: the run row (command, program, source
# text by hash, config, start, end, exit status), frames and their
# counters, compiles with their ids and reasons, guards, guard failures,
# graph breaks with their codes and hit counts, graphs and nodes (also
# aot_eager's forward and backward graphs beside the captured one, its
# phases, the tensors it saves between them, its fallback to eager;
# inductor's kernels, and its kernel cache over runs). A
# program killed by SIGKILL keeps its rows, with ended_at NULL.
#
# Environment: TJIT (the binary; default ./tjit), TJ_SRCDIR (the top
# source folder; default: three levels above this script).
set -u

top=${TJ_SRCDIR:-$(cd "$(dirname "$0")/../../.." && pwd)}
top=$(cd "$top" && pwd) || exit 99
tjit=${TJIT:-./tjit}
case $tjit in /*) ;; *) tjit=$(pwd)/$tjit ;; esac
[ -x "$tjit" ] || { echo "check.sh: no tjit binary at $tjit (set TJIT)" >&2; exit 99; }
if ! command -v sqlite3 >/dev/null 2>&1; then
	echo "SKIP: no sqlite3 command-line shell (scripts/install-deps installs it)"
	exit 77
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/tjit-db.XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
ln -s "$top/tests" "$work/tests"
unset TJIT_LOGS TJIT_DB
LC_ALL=C
export LC_ALL
cd "$work" || exit 99

fail=0
pass=0
# check NAME DB SQL EXPECTED: the query's output (sqlite3's default list
# mode, '|' between columns, a line a row) must be EXPECTED
check() {
	got=$(sqlite3 "$2" "$3" 2>&1)
	if [ "$got" = "$4" ]; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		echo "FAIL: $1"
		echo "  query:    $3"
		echo "  expected: $(printf '%s' "$4" | sed '2,$s/^/            /')"
		echo "  got:      $(printf '%s' "$got" | sed '2,$s/^/            /')"
	fi
}
# run EXPECTED_STATUS ARGS...: runs tjit, output discarded
run() {
	want=$1
	shift
	"$tjit" "$@" >"$work/out" 2>"$work/err"
	st=$?
	if [ "$st" -ne "$want" ]; then
		fail=$((fail + 1))
		echo "FAIL: tjit $*: exit status $st, expected $want"
		sed 's/^/  stderr: /' "$work/err"
	fi
}

prog=tests/e2e/db/breaks.tj
db=$work/breaks.db
run 0 run --db "$db" "$prog"
check "one run row, finished with status 0" "$db" \
	"SELECT id, tool, command, program, exit_status, ended_at >= started_at, pid > 0 FROM runs" \
	"1|tjit run|tjit run --db $db $prog|$prog|0|1|1"
check "the program's text by hash" "$db" \
	"SELECT s.path, s.text = CAST(readfile('$prog') AS TEXT) FROM runs r JOIN sources s ON s.hash = r.source_hash" \
	"$prog|1"
check "the config" "$db" "SELECT backend IS NULL, config FROM runs" \
	"1|fullgraph=0 cache_size_limit=8 eager=0 no_kernel_cache=0"
check "frames: the function and its resume point after print" "$db" \
	"SELECT frame_index, function, file, line, resume_pc > 0, resume_line FROM frames ORDER BY frame_index" \
	"0|f|$prog|3|0|
1|f|$prog|3|1|5"
check "frame counters: the entry missed twice, the resume point once" "$db" \
	"SELECT frame_index, calls, cache_hits, eager_calls FROM frames ORDER BY frame_index" \
	"0|4|2|0
1|4|3|0"
check "compiles: ids, reasons, outcomes" "$db" \
	"SELECT c.label, c.compile_index, c.reason, c.backend, c.outcome, c.op_count FROM compiles c ORDER BY c.id" \
	"0/0|0|first|eager|graph_break|1
1/0|0|first|eager|ok|1
0/1|1|recompile|eager|graph_break|1"
check "compile times are recorded" "$db" \
	"SELECT count(*) FROM compiles WHERE total_ms > 0 AND total_ms >= trace_ms AND started_at > 0" "3"
check "guard failures of the recompiles" "$db" \
	"SELECT c.label, g.failed_label, g.guard_text, g.value_seen FROM guard_failures g JOIN compiles c ON c.id = g.compile_id ORDER BY g.id" \
	"0/1|0/0|L['n'] == 2|3"
check "graph breaks: code, place, hits" "$db" \
	"SELECT c.label, b.code, b.category, b.message, b.file, b.line, b.user_stack, b.hits FROM graph_breaks b JOIN compiles c ON c.id = b.compile_id ORDER BY b.id" \
	"0/0|TJB001|side_effect|call to print (side effect)|$prog|5|$prog:5 in f|3
0/1|TJB001|side_effect|call to print (side effect)|$prog|5|$prog:5 in f|1"
check "guards with their lines" "$db" \
	"SELECT DISTINCT g.text, g.line FROM guards g JOIN compiles c ON c.id = g.compile_id WHERE c.label = '0/0' AND g.text LIKE 'L[''n'']%'" \
	"L['n'] == 2|4"
check "graphs and their nodes" "$db" \
	"SELECT c.label, gr.stage, gr.name, gr.op_count, n.idx, n.kind, n.op, n.args, n.dtype, n.shape, n.line FROM graphs gr JOIN compiles c ON c.id = gr.compile_id JOIN nodes n ON n.graph_id = gr.id WHERE c.label = '0/0' ORDER BY n.idx" \
	"0/0|captured|f|1|0|input||L['x']|float32|[2]|
0/0|captured|f|1|1|op|mul|x, 2|float32|[2]|4
0/0|captured|f|1|2|output||mul|||"
check "a graph's listing is LANGUAGE.md section 7's" "$db" \
	"SELECT substr(listing, 1, instr(listing, char(10)) - 1) FROM graphs gr JOIN compiles c ON c.id = gr.compile_id WHERE c.label = '0/0'" \
	"graph 0/0 f ($prog:3) · 1 op"

# a second run appends to the same file
run 0 run --db "$db" --backend eager --fullgraph --cache-size-limit 3 --no-kernel-cache tests/e2e/db/limit.tj
check "a second run, with its flags" "$db" \
	"SELECT id, program, backend, config, exit_status FROM runs ORDER BY id" \
	"1|$prog||fullgraph=0 cache_size_limit=8 eager=0 no_kernel_cache=0|0
2|tests/e2e/db/limit.tj|eager|fullgraph=1 cache_size_limit=3 eager=0 no_kernel_cache=1|0"
check "the cache limit is a compile row" "$db" \
	"SELECT c.label, c.reason, c.outcome FROM compiles c WHERE c.run_id = 2 ORDER BY c.id" \
	"0/0|first|ok
0/1|recompile|ok
0/2|recompile|ok
0/3|cache_limit|skipped"
check "the frame ran eagerly from the limit on" "$db" \
	"SELECT calls, cache_hits, eager_calls, eager_reason FROM frames WHERE run_id = 2" \
	"5|0|2|cache_limit"
check "the run's counts: the cache limit's row is a compile, not a graph or a recompile" "$db" \
	"SELECT compile_count, graph_count, break_count, recompile_count FROM runs WHERE id = 2" \
	"4|3|0|2"

# a frame run through disable(recursive=False) is eager for that call,
# with the reason "disabled" (its other call compiled: the graph break
# gave inner a frame of its own)
cat >"$work/dis.tj" <<'TJ'
def inner(x):
    graph_break()
    return x * 2

di = disable(inner, recursive=False)

@compile(backend="eager")
def f(x):
    return inner(x) + 1

@compile(backend="eager")
def g(x):
    return di(x) + 1

f(ones(2))
g(ones(2))
TJ
db=$work/dis.db
run 0 run --db "$db" dis.tj
check "a disabled frame's call is eager, reason disabled" "$db" \
	"SELECT function, calls, eager_calls, eager_reason FROM frames WHERE eager_calls > 0" \
	"inner|2|1|disabled"

# the columns of a break and of nodes: where each starts on its line,
# counted from 1 as in error messages (a break after a statement on the
# same line; a parenthesized operand)
cat >"$work/cols.tj" <<'TJ'
@compile(backend="eager")
def f(x):
    y = (x + 1) * 3
    z = y.sum() + 1; print("z")
    return y * z

f(ones(2))
TJ
db=$work/cols.db
run 0 run --db "$db" cols.tj
check "a graph break's line and column" "$db" \
	"SELECT c.label, b.line, b.col FROM graph_breaks b JOIN compiles c ON c.id = b.compile_id" \
	"0/0|4|22"
check "the nodes' lines and columns" "$db" \
	"SELECT c.label, n.op, n.line, n.col FROM nodes n JOIN graphs gr ON gr.id = n.graph_id JOIN compiles c ON c.id = gr.compile_id WHERE n.kind = 'op' ORDER BY c.id, n.idx" \
	"0/0|add|3|10
0/0|mul|3|9
0/0|sum|4|9
0/0|add|4|9
1/0|mul|5|12"

# aot_eager: its decomposed forward graph beside the captured one, with its
# nodes, and its "decompose" phase inside "backend"
cat >"$work/aot.tj" <<'TJ'
def f(x):
    return x.rsqrt() * 2

print(compile(f, backend="aot_eager")(ones(2)))
TJ
db=$work/aot.db
run 0 run --db "$db" aot.tj
check "aot_eager: the graphs of both stages" "$db" \
	"SELECT stage, op_count, substr(listing, 1, instr(listing, char(10)) - 1) FROM graphs ORDER BY id" \
	"captured|2|graph 0/0 f (aot.tj:1) · 2 ops
aot_forward|3|graph 0/0 f (aot.tj:1) [aot_forward] · 3 ops"
check "aot_eager: the forward graph's nodes, at the user's line" "$db" \
	"SELECT n.idx, n.kind, n.op, n.args, n.dtype, n.shape, n.line FROM graphs gr JOIN nodes n ON n.graph_id = gr.id WHERE gr.stage = 'aot_forward' ORDER BY n.idx" \
	"0|input||L['x']|float32|[2]|
1|op|sqrt|x|float32|[2]|2
2|op|div|1, sqrt|float32|[2]|2
3|op|mul|div, 2|float32|[2]|2
4|output||mul|||"
check "aot_eager: decompose is a phase of the backend's compile" "$db" \
	"SELECT position, name, parent FROM compile_phases ORDER BY position" \
	"0|trace|
1|guards|
2|backend|
3|decompose|2"

# aot_eager with an input that requires grad: the forward graph (its
# outputs, then what backward needs) and the backward graph (the saved
# tensors, then the tangents), the joint and partition phases, the saved
# tensors (aot_saved, compiles.saved_bytes); a graph
# without a gradient rule is a compile whose outcome is the error, and
# its frame falls back to the eager backend's entry
cat >"$work/aotg.tj" <<'TJ'
def f(x, w):
    return (x * w).rsqrt().sum()

x = ones(2).requires_grad_()
compile(f, backend="aot_eager")(x, full((2,), 2.0)).backward()
print(x.grad)
TJ
db=$work/aotg.db
run 0 run --db "$db" aotg.tj
check "aot_eager with grad: the graphs of the three stages" "$db" \
	"SELECT stage, op_count, substr(listing, 1, instr(listing, char(10)) - 1) FROM graphs ORDER BY id" \
	"captured|3|graph 0/0 f (aotg.tj:1) · 3 ops
aot_forward|4|graph 0/0 f (aotg.tj:1) [aot_forward] · 4 ops
aot_backward|8|graph 0/0 f (aotg.tj:1) [aot_backward] · 8 ops"
check "aot_eager with grad: the forward returns the loss and the saved" "$db" \
	"SELECT n.args FROM graphs gr JOIN nodes n ON n.graph_id = gr.id WHERE gr.stage = 'aot_forward' AND n.kind = 'output'" \
	"sum_1, w, sqrt"
check "aot_eager with grad: the backward's inputs" "$db" \
	"SELECT n.idx, n.name, n.args, n.shape FROM graphs gr JOIN nodes n ON n.graph_id = gr.id WHERE gr.stage = 'aot_backward' AND n.kind = 'input' ORDER BY n.idx" \
	"0|w|L['w']|[2]
1|sqrt|saved[1]|[2]
2|tangents_1|tangents[0]|[]"
check "aot_eager with grad: decompose, joint and partition are phases of the backend's" "$db" \
	"SELECT position, name, parent FROM compile_phases ORDER BY position" \
	"0|trace|
1|guards|
2|backend|
3|decompose|2
4|joint|2
5|partition|2"
check "aot_eager with grad: a row per tensor the forward returns after the loss, their bytes summed on the compile" "$db" \
	"SELECT (SELECT 'sum_1, ' || group_concat(name, ', ') FROM (SELECT name FROM aot_saved ORDER BY idx)) = (SELECT n.args FROM graphs gr JOIN nodes n ON n.graph_id = gr.id WHERE gr.stage = 'aot_forward' AND n.kind = 'output'), (SELECT sum(bytes) FROM aot_saved) = (SELECT saved_bytes FROM compiles), (SELECT count(*) FROM aot_saved), (SELECT DISTINCT bytes || ' ' || dtype || ' ' || shape FROM aot_saved)" \
	"1|1|2|8 float32 [2]"
# relu(x @ w): backward takes w and the mask of relu (a bool tensor the
# forward graph makes), not the matmul
cat >"$work/aotm.tj" <<'TJ'
def f(x, w):
    return (x @ w).relu().sum()

x = ones(2, 3).requires_grad_()
compile(f, backend="aot_eager")(x, full((3, 4), 0.5)).backward()
TJ
db=$work/aotm.db
run 0 run --db "$db" aotm.tj
check "aot_eager: each saved tensor is a node of the forward graph" "$db" \
	"SELECT s.idx, s.name, n.kind, n.op, n.args, s.dtype, s.shape, s.bytes, n.line FROM aot_saved s JOIN graphs gr ON gr.id = s.graph_id JOIN nodes n ON n.graph_id = gr.id AND n.idx = s.node_idx WHERE gr.stage = 'aot_forward' ORDER BY s.idx" \
	"0|w|input||L['w']|float32|[3, 4]|48|
1|le|op|le|relu, 0.0|bool|[2, 4]|8|2"
check "aot_eager: the bytes saved between forward and backward" "$db" \
	"SELECT label, saved_bytes FROM compiles" "0/0|56"
check "aot_eager: the forward graph returns them after its output" "$db" \
	"SELECT n.args FROM graphs gr JOIN nodes n ON n.graph_id = gr.id WHERE gr.stage = 'aot_forward' AND n.kind = 'output'" \
	"sum_1, w, le"
check "a compile without a partition saves nothing" "$work/aot.db" \
	"SELECT saved_bytes IS NULL, (SELECT count(*) FROM aot_saved) FROM compiles" "1|0"
cat >"$work/aotn.tj" <<'TJ'
k = 3
@allow_in_graph
def opaque(x):
    return x * k

def f(x):
    return opaque(x + 1).sum()

cf = compile(f, backend="aot_eager")
print(cf(ones(2).requires_grad_()))
print(cf(ones(2).requires_grad_()))
TJ
db=$work/aotn.db
run 0 run --db "$db" aotn.tj
check "aot_eager: no gradient rule is the compile's outcome" "$db" \
	"SELECT label, backend, outcome, error FROM compiles" \
	"0/0|aot_eager|error|aot_eager: no gradient rule for an allow_in_graph call at aotn.tj:7 (opaque: its body assumes G['k'] == 3, which the caller's guards do not check)"
check "aot_eager: ... and the frame ran on eager, compiled once" "$db" \
	"SELECT calls, cache_hits, eager_calls FROM frames" \
	"2|1|0"

# TJIT_DB names the file; --db wins over it; --no-db writes nothing
TJIT_DB=$work/env.db run 0 run tests/e2e/db/limit.tj
check "TJIT_DB selects the file" "$work/env.db" "SELECT count(*), max(exit_status) FROM runs" "1|0"
TJIT_DB=$work/env.db run 0 run --db "$work/flag.db" tests/e2e/db/limit.tj
check "--db overrides TJIT_DB" "$work/env.db" "SELECT count(*) FROM runs" "1"
check "... and writes its own file" "$work/flag.db" "SELECT count(*) FROM runs" "1"
mkdir "$work/quiet"
(cd "$work/quiet" && ln -s "$top/tests" tests && TJIT_DB= "$tjit" run --no-db tests/e2e/db/limit.tj >/dev/null 2>&1)
if [ -n "$(ls "$work/quiet" | grep -v '^tests$')" ]; then
	fail=$((fail + 1))
	echo "FAIL: --no-db wrote files: $(ls "$work/quiet")"
else
	pass=$((pass + 1))
fi
mkdir "$work/default"
(cd "$work/default" && ln -s "$top/tests" tests && "$tjit" run tests/e2e/db/limit.tj >/dev/null 2>&1)
check "the default database is ./tjit.db" "$work/default/tjit.db" "SELECT count(*) FROM runs" "1"

# failures end the run too
db=$work/fails.db
run 1 run --db "$db" tests/e2e/db/fails.tj
run 2 run --db "$db" tests/e2e/db/no_such_file.tj
run 1 explain --db "$db" tests/e2e/db/fails.tj
check "runs that fail have their status" "$db" \
	"SELECT tool, program, source_hash IS NULL, exit_status, ended_at IS NOT NULL FROM runs ORDER BY id" \
	"tjit run|tests/e2e/db/fails.tj|0|1|1
tjit run|tests/e2e/db/no_such_file.tj|1|2|1
tjit explain|tests/e2e/db/fails.tj|0|1|1"

# guard failures: at most 8 a compile (the newest entries), however many
# entries the frame has; the runs row counts the compiles
db=$work/many.db
cat >"$work/many.tj" <<'TJ'
def f(x, n):
    return x * n

cf = compile(f)
for i in range(12):
    cf(ones(2), i)
TJ
run 0 run --db "$db" --cache-size-limit 20 "$work/many.tj"
check "guard failures: one per entry up to 8, newest first" "$db" \
	"SELECT c.label, count(g.id), min(g.failed_label), max(g.failed_label) FROM compiles c
	 LEFT JOIN guard_failures g ON g.compile_id = c.id WHERE c.label IN ('0/1', '0/8', '0/9', '0/11')
	 GROUP BY c.id ORDER BY c.id" \
	"0/1|1|0/0|0/0
0/8|8|0/0|0/7
0/9|8|0/1|0/8
0/11|8|0/10|0/9"
check "the run's counters" "$db" \
	"SELECT compile_count, graph_count, break_count, recompile_count FROM runs" "12|12|0|11"

# inductor: a row per kernel on the forward graph (the matmul is an extern
# call, no kernel), with its fused nodes, loop IR and LLVM IR; a second run
# with the same kernel cache compiles no kernel; a corrupted cache file is
# rebuilt
cat >"$work/ind.tj" <<'TJ'
def f(x, w):
    y = (x * 2.0 + 1.0).tanh()
    return (y @ w).relu().sum()

print(compile(f)(ones(2, 3), full((3, 4), 0.5)))
TJ
saved_cache_dir=${TJIT_CACHE_DIR-}
TJIT_CACHE_DIR=$work/kcache
export TJIT_CACHE_DIR
db=$work/ind.db
run 0 run --backend inductor --db "$db" ind.tj
check "inductor: the result" "$db" "SELECT '$(cat "$work/out")'" "tensor(11.9407)"
check "inductor: the kernels of the forward graph, generated" "$db" \
	"SELECT g.stage, k.idx, k.name LIKE 'k\_%' ESCAPE '\', k.kind, k.fused_nodes, length(k.hash), k.loop_ir LIKE 'kernel ' || k.name || '(%', k.llvm_ir LIKE '%define %' || k.name || '%', k.cache_hit, k.codegen_ms > 0 FROM kernels k JOIN graphs g ON g.id = k.graph_id ORDER BY k.id" \
	"aot_forward|0|1|pointwise|mul, add, tanh|32|1|1|0|1
aot_forward|1|1|reduction|relu, sum_1|32|1|1|0|1"
check "inductor: its phases inside the backend's" "$db" \
	"SELECT group_concat(name, ' ') FROM (SELECT DISTINCT p.name FROM compile_phases p JOIN compile_phases b ON b.compile_id = p.compile_id AND b.name = 'backend' AND p.parent = b.position ORDER BY p.position)" \
	"decompose load_codegen schedule lower codegen llvm_optimize jit"
check "inductor: the backend's phases add up to no more than its time (kernels compiled at once on the threads)" "$db" \
	"SELECT count(*) FROM compile_phases b WHERE b.name = 'backend' AND (SELECT sum(p.ms) FROM compile_phases p WHERE p.compile_id = b.compile_id AND p.parent = b.position) > b.ms + 0.001" \
	"0"
run 0 run --backend inductor --db "$db" ind.tj
check "inductor, second run: the same result" "$db" "SELECT '$(cat "$work/out")'" "tensor(11.9407)"
check "inductor, second run: every kernel from the cache, with the same names and LLVM IR as compiled" "$db" \
	"SELECT count(*), sum(k.cache_hit), group_concat(k.name || k.llvm_ir) = (SELECT group_concat(name || llvm_ir) FROM (SELECT k1.name, k1.llvm_ir FROM kernels k1 JOIN graphs g1 ON g1.id = k1.graph_id JOIN compiles c1 ON c1.id = g1.compile_id WHERE c1.run_id = 1 ORDER BY k1.id)) FROM kernels k JOIN graphs g ON g.id = k.graph_id JOIN compiles c ON c.id = g.compile_id WHERE c.run_id = 2" \
	"2|2|1"
check "inductor, second run: no codegen, llvm_optimize" "$db" \
	"SELECT count(*) FROM compile_phases p JOIN compiles c ON c.id = p.compile_id WHERE c.run_id = 2 AND p.name IN ('codegen', 'llvm_optimize')" \
	"0"
for f in "$work"/kcache/*.tjk; do
	printf 'garbage garbage garbage garbage' | dd of="$f" bs=1 seek=64 conv=notrunc 2>/dev/null
done
run 0 run --backend inductor --db "$db" ind.tj
check "inductor, corrupted cache: the same result" "$db" "SELECT '$(cat "$work/out")'" "tensor(11.9407)"
check "inductor, corrupted cache: the kernels generated again" "$db" \
	"SELECT k.name, k.cache_hit, k.llvm_ir IS NOT NULL FROM kernels k JOIN graphs g ON g.id = k.graph_id JOIN compiles c ON c.id = g.compile_id WHERE c.run_id = 3 ORDER BY k.id" \
	"$(sqlite3 "$db" "SELECT k.name || '|0|1' FROM kernels k JOIN graphs g ON g.id = k.graph_id JOIN compiles c ON c.id = g.compile_id WHERE c.run_id = 1 ORDER BY k.id")"
run 0 run --backend inductor --db "$db" ind.tj
check "inductor, after the rebuild: from the cache again" "$db" \
	"SELECT count(*), sum(k.cache_hit) FROM kernels k JOIN graphs g ON g.id = k.graph_id JOIN compiles c ON c.id = g.compile_id WHERE c.run_id = 4" \
	"2|2"
# a sound cache file whose payload is not a kernel's (8 zero bytes: no
# object code, the trailer's length 0): read as foreign, generated again
for f in "$work"/kcache/*.tjk; do
	{ head -c 32 "$f" && printf '\010\0\0\0\0\0\0\0\305\071\032\050\062\370\307\250\0\0\0\0\0\0\0\0'; } >"$f.new" &&
		mv "$f.new" "$f"
done
run 0 run --backend inductor --db "$db" ind.tj
check "inductor, a cache entry of no object code: the same result" "$db" "SELECT '$(cat "$work/out")'" "tensor(11.9407)"
check "inductor, a cache entry of no object code: the kernels generated again" "$db" \
	"SELECT count(*), sum(k.cache_hit) FROM kernels k JOIN graphs g ON g.id = k.graph_id JOIN compiles c ON c.id = g.compile_id WHERE c.run_id = 5" \
	"2|0"
# the same kernel twice in one graph (two layers alike, the kernels
# compiled at once): generated once, the second as from the cache
cat >"$work/twice.tj" <<'TJ'
def f(x, w):
    return (((x * 2.0).tanh() @ w) * 2.0).tanh()

print(compile(f)(ones(2, 2), ones(2, 2)))
TJ
db=$work/twice.db
run 0 run --backend inductor --db "$db" twice.tj
check "inductor: one kernel twice in a graph, generated once" "$db" \
	"SELECT count(*), count(DISTINCT name), sum(cache_hit), count(DISTINCT llvm_ir), count(llvm_ir) FROM kernels" \
	"2|1|1|1|2"
TJIT_CACHE_DIR=$saved_cache_dir
[ -n "$TJIT_CACHE_DIR" ] || unset TJIT_CACHE_DIR

# a killed run keeps its rows and no end
db=$work/killed.db
cat >"$work/forever.tj" <<'TJ'
def f(x):
    return x + 1

cf = compile(f)
print(cf(ones(2)))
while True:
    pass
TJ
"$tjit" run --db "$db" "$work/forever.tj" >"$work/out" 2>"$work/err" &
pid=$!
i=0   # wait for the compile to be logged (stdout is buffered: no use)
while [ "$(sqlite3 "$db" 'SELECT count(*) FROM compiles' 2>/dev/null)" != 1 ] && [ $i -lt 400 ]; do
	sleep 0.05
	i=$((i + 1))
done
kill -9 $pid
wait $pid 2>/dev/null
check "a killed run: no end, its compile kept" "$db" \
	"SELECT r.ended_at IS NULL, r.exit_status IS NULL, count(c.id) FROM runs r LEFT JOIN compiles c ON c.run_id = r.id" \
	"1|1|1"

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
