#!/bin/sh
# tests/e2e/db/kill.sh - a compile-heavy run killed with SIGKILL at random
# moments, many times, and 4 runs logging into one file at once.
#
# The program compiles a function that breaks twice for 5 shapes in a row
# under eager and aot_eager, forgets it all (reset()) and starts again,
# printing "step N" (flushed) after each round; a second version compiles
# under inductor, with a kernel cache of its own for each kill. A complete
# run of each gives the reference rows. Then each kill starts the program
# on a fresh database, waits a seeded random delay (the delays of each
# program spread evenly over its run time) and sends SIGKILL. After each
# kill that hit a running process (a delay that outlived the run is tried
# again, halved; a kill before the run's row, or after its end was written,
# in the process's exit, finds nothing or everything logged):
#   - PRAGMA integrity_check says ok, PRAGMA foreign_key_check is empty;
#   - the run's row has no end and no exit status;
#   - its compiles, each with the number of its graphs, nodes, guards,
#     breaks, phases and kernels, are the first rows of the reference run
#     in the same order: every event is whole and none is missing before
#     the last one kept (the log is written by a thread of its own, so the
#     rows may trail what the program printed, never run ahead of it:
#     at most the compiles of the rounds printed and of the one under way);
#   - tjit-profile report and tjit-dot run say the run did not finish,
#     and exit 0; every 8th kill, tjit-tui's runs screen (in tmux) shows it
#     as killed and tjit-tui exits 0 on q.
# Then 4 complete runs at once into one file: every row of the 4 is there
# (4 times the reference's counts), all end with status 0, and no process
# prints "database is locked".
#
# The last line gives the figures: kills survived out of kills tried (a
# delay that outlived the run is not a kill), the largest number of
# compiles the log trailed the program by, rows lost with 4 writers.
#
# Environment: TJIT, TJIT_PROFILE, TJIT_DOT, TJIT_TUI (default: beside
# TJIT), TJ_SRCDIR, TJ_KILLS (default 48; a quarter of them under
# inductor), TJ_KILL_SEED (default 14). Exit 77 (skipped) without the
# sqlite3 shell; without tmux the tjit-tui checks are skipped (said so).
set -u

top=${TJ_SRCDIR:-$(cd "$(dirname "$0")/../../.." && pwd)}
top=$(cd "$top" && pwd) || exit 99
# shellcheck source=tests/e2e/lib.sh
. "$top/tests/e2e/lib.sh"
find_tools kill.sh
if ! command -v sqlite3 >/dev/null 2>&1; then
	echo "SKIP: no sqlite3 command-line shell (scripts/install-deps installs it)"
	exit 77
fi
kills=${TJ_KILLS:-48}
seed=${TJ_KILL_SEED:-14}

work=$(mktemp -d "${TMPDIR:-/tmp}/tjit-kill.XXXXXX") || exit 99
sock=tjkill-$$
cleanup() {
	[ -n "${pid-}" ] && kill -9 "$pid" 2>/dev/null
	command -v tmux >/dev/null 2>&1 && tmux -L "$sock" kill-server >/dev/null 2>&1
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
unset TJIT_LOGS TJIT_DB NO_COLOR
LC_ALL=C
export LC_ALL
cd "$work" || exit 99

# ROUNDS and BACKENDS are filled in below
cat >prog.in <<'TJ'
def f(x, n):
    y = (x * n).tanh() + x.sin()
    graph_break()
    z = (y @ y.transpose(0, 1)).relu().sum(dim=1)
    if z.sum() > 0:
        return z * 2
    return z - 1

step = 0
for r in range(ROUNDS):
    for b in BACKENDS:
        cf = compile(f, backend=b, dynamic=False)
        for k in range(5):
            cf(ones(k + 2, 3).requires_grad_(), k)
        reset()
        step = step + 1
        print("step", step, flush=True)
TJ
sed 's/ROUNDS/20/; s/BACKENDS/["eager", "aot_eager"]/' prog.in >aot.tj
sed 's/ROUNDS/2/; s/BACKENDS/["inductor"]/' prog.in >ind.tj
printf 'def f(x):\n    return x + 1\n\nprint(compile(f, backend="eager")(ones(2)))\n' >p.tj
per_step=15 # compiles per step: 3 frames (2 breaks) by 5 shapes

# the compiles of a database, each with the counts of its rows, in order
dump() {
	sqlite3 "$1" "SELECT c.label, c.reason, c.backend, c.outcome, c.op_count,
		(SELECT count(*) FROM graphs g WHERE g.compile_id = c.id),
		(SELECT count(*) FROM graphs g JOIN nodes n ON n.graph_id = g.id WHERE g.compile_id = c.id),
		(SELECT count(*) FROM guards WHERE compile_id = c.id),
		(SELECT count(*) FROM graph_breaks WHERE compile_id = c.id),
		(SELECT count(*) FROM compile_phases WHERE compile_id = c.id),
		(SELECT count(*) FROM graphs g JOIN kernels k ON k.graph_id = g.id WHERE g.compile_id = c.id)
		FROM compiles c ORDER BY c.id"
}

now_ms() { date +%s%3N; }

# reference runs: their rows, and how long they take
for p in aot ind; do
	t0=$(now_ms)
	TJIT_CACHE_DIR=$work/cache-ref "$tjit" run --db "ref-$p.db" "$p.tj" >"ref-$p.out" 2>"ref-$p.err" ||
		{ echo "kill.sh: tjit run $p.tj failed" >&2; cat "ref-$p.err" >&2; exit 99; }
	t1=$(now_ms)
	eval "ms_$p=$((t1 - t0))"
	dump "ref-$p.db" >"ref-$p.rows" || exit 99
	nsteps=$(wc -l <"ref-$p.out")
	[ "$(wc -l <"ref-$p.rows")" -eq $((nsteps * per_step)) ] ||
		{ echo "kill.sh: $p.tj logged $(wc -l <"ref-$p.rows") compiles, not $((nsteps * per_step))" >&2; exit 99; }
done

have_tmux=0
command -v tmux >/dev/null 2>&1 && have_tmux=1
# tui_killed DB: tjit-tui's runs screen shows run 1 killed; q exits 0
tui_killed() {
	tmux -L "$sock" kill-server >/dev/null 2>&1
	sock=tjkill-$$-$1
	rm -f rc
	tmux -L "$sock" -u new-session -d -x 80 -y 24 -c "$work" \
		"env TERM=xterm-256color '$tui' '$2'; echo \$? >'$work/rc'" || { bad "kill $1: tmux"; return; }
	i=0
	while [ $i -lt 100 ] && ! tmux -L "$sock" capture-pane -p 2>/dev/null | grep -q '^ *1 killed '; do
		sleep 0.05
		i=$((i + 1))
	done
	if [ $i -lt 100 ]; then ok; else
		bad "kill $1: tjit-tui does not show run 1 killed"
		tmux -L "$sock" capture-pane -p 2>/dev/null | sed 's/^/    /'
	fi
	tmux -L "$sock" send-keys q
	i=0
	while [ $i -lt 100 ] && [ ! -s rc ]; do
		sleep 0.05
		i=$((i + 1))
	done
	[ "$(cat rc 2>/dev/null)" = 0 ] && ok || bad "kill $1: tjit-tui exit status $(cat rc 2>/dev/null) on q"
	tmux -L "$sock" kill-server >/dev/null 2>&1
}

# the delays: kill i is of ind.tj when i % 4 == 3, else of aot.tj; the
# j-th of n kills of a program waits (j + u) / n of its run time, u random
n_ind=$((kills / 4))
n_aot=$((kills - n_ind))
awk -v seed="$seed" -v kills="$kills" -v na="$n_aot" -v ni="$n_ind" -v ta="$ms_aot" -v ti="$ms_ind" 'BEGIN {
	srand(seed); ja = 0; ji = 0
	for (i = 0; i < kills; i++) {
		if (i % 4 == 3) { printf "ind %.3f\n", (ji + rand()) / ni * ti / 1000; ji++ }
		else { printf "aot %.3f\n", (ja + rand()) / na * ta / 1000; ja++ }
	}
}' >delays
# shuffled, so that a slow machine at one moment does not meet only the
# early or only the late kills
awk -v seed="$seed" 'BEGIN { srand(seed + 1) } { print rand() "\t" $0 }' delays | sort -n | cut -f2- >order

tried=0
survived=0
trail=0
early=0
late=0
n=0
while read -r p delay; do
	n=$((n + 1))
	db=k$n.db
	before=$fail
	# a run faster than the reference may end before its delay: up to 3
	# more tries, each with half the delay
	try=0
	while :; do
		rm -rf "$db" "$db-wal" "$db-shm" "cache-$n"
		TJIT_CACHE_DIR=$work/cache-$n "$tjit" run --db "$db" "$p.tj" >"k$n.out" 2>"k$n.err" &
		pid=$!
		sleep "$delay"
		kill -9 "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		st=$?
		pid=
		[ $st -eq 137 ] && break
		# the run ended before the kill: not a kill
		[ $st -eq 0 ] || bad "kill $n ($p.tj, ${delay}s): exit status $st without a kill"
		try=$((try + 1))
		[ $try -le 3 ] || break
		delay=$(awk -v d="$delay" 'BEGIN { printf "%.3f", d / 2 }')
	done
	[ $st -eq 137 ] || continue
	tried=$((tried + 1))
	steps=$(grep -c '^step ' "k$n.out")
	nruns=$(sqlite3 "$db" 'SELECT count(*) FROM runs' 2>/dev/null)
	if [ ! -e "$db" ] || [ "${nruns:-0}" = 0 ]; then
		# killed before the run's first row (maybe before the tables):
		# nothing logged, nothing run, and the file still takes a run
		early=$((early + 1))
		[ "$steps" -eq 0 ] && ok || bad "kill $n ($p.tj, ${delay}s): $steps steps printed and no run logged"
		if [ -e "$db" ]; then
			[ "$(sqlite3 "$db" 'PRAGMA integrity_check')" = ok ] && ok ||
				bad "kill $n: integrity_check of a database without a run"
			if [ -z "$nruns" ]; then
				expect 1 "kill $n: tjit-profile report on an empty database" "$prof" report --db "$db"
				same "kill $n: tjit-profile report's line" "tjit-profile: no run in '$db' (an empty database)" err
			fi
			expect 0 "kill $n: a run after the kill" "$tjit" run --db "$db" "$work/p.tj"
			got=$(sqlite3 "$db" 'SELECT count(*), count(ended_at) FROM runs; PRAGMA integrity_check' 2>&1)
			[ "$got" = "1|1
ok" ] && ok || bad "kill $n: the run after the kill: $got"
		fi
		[ $fail -eq $before ] && survived=$((survived + 1))
		rm -rf "$db" "$db-wal" "$db-shm" "cache-$n"
		continue
	fi
	got=$(sqlite3 "$db" 'PRAGMA integrity_check; PRAGMA foreign_key_check' 2>&1)
	[ "$got" = ok ] && ok || bad "kill $n ($p.tj, ${delay}s): integrity_check / foreign_key_check: $got"
	if [ "$(sqlite3 "$db" 'SELECT count(ended_at), sum(exit_status) FROM runs' 2>&1)" = "1|0" ]; then
		# killed in its exit, after the end of the run was written (as
		# under ASan, whose leak check at exit takes a while): all there
		late=$((late + 1))
		dump "$db" | cmp -s - "ref-$p.rows" && ok ||
			bad "kill $n ($p.tj, ${delay}s): a run that ended lacks rows"
		[ $fail -eq $before ] && survived=$((survived + 1))
		rm -rf "$db" "$db-wal" "$db-shm" "cache-$n"
		continue
	fi
	got=$(sqlite3 "$db" 'SELECT count(*), count(ended_at), count(exit_status) FROM runs' 2>&1)
	[ "$got" = "1|0|0" ] && ok || bad "kill $n ($p.tj, ${delay}s): runs (count, ended, status): $got; stderr: $(head -3 "k$n.err")"
	dump "$db" >"k$n.rows"
	rows=$(wc -l <"k$n.rows")
	head -n "$rows" "ref-$p.rows" | cmp -s - "k$n.rows" && ok ||
		bad "kill $n ($p.tj, ${delay}s): its $rows compiles are not the reference's first ones
$(head -n "$rows" "ref-$p.rows" | diff - "k$n.rows" | head -5)"
	[ "$rows" -le $(((steps + 1) * per_step)) ] && ok ||
		bad "kill $n ($p.tj, ${delay}s): $rows compiles logged after $steps steps printed"
	behind=$((steps * per_step - rows))
	[ $behind -gt $trail ] && trail=$behind
	"$prof" report --db "$db" >"k$n.report" 2>&1
	st=$?
	[ $st -eq 0 ] && grep -q 'did not finish (killed: process [0-9]* is gone)' "k$n.report" && ok ||
		bad "kill $n: tjit-profile report (status $st) does not show an unfinished run: $(head -3 "k$n.report")"
	"$dot" run --db "$db" >"k$n.dot" 2>&1
	st=$?
	[ $st -eq 0 ] && grep -q 'did not finish (killed: process [0-9]* is gone)' "k$n.dot" && ok ||
		bad "kill $n: tjit-dot run (status $st) does not show an unfinished run: $(head -3 "k$n.dot")"
	[ $have_tmux -eq 1 ] && [ $((tried % 8)) -eq 1 ] && tui_killed "$n" "$db"
	[ $fail -eq $before ] && survived=$((survived + 1))
	rm -rf "$db" "$db-wal" "$db-shm" "cache-$n"
done <order
[ $tried -ge $((kills * 3 / 4)) ] && ok ||
	bad "only $tried of $kills delays killed a running program (the reference runs took ${ms_aot} and ${ms_ind} ms)"
[ $have_tmux -eq 1 ] || echo "kill.sh: no tmux: tjit-tui not checked"

# 4 writers at once, into one file
for i in 1 2 3 4; do
	"$tjit" run --db four.db aot.tj >"four$i.out" 2>"four$i.err" &
	eval "w$i=\$!"
done
for i in 1 2 3 4; do
	eval "wait \$w$i"
	st=$?
	[ $st -eq 0 ] && ok || bad "writer $i: exit status $st"
	empty "writer $i: stderr (no 'database is locked')" "four$i.err"
done
want=$(sqlite3 ref-aot.db "SELECT 4 * (SELECT count(*) FROM compiles), 4 * (SELECT count(*) FROM graphs),
	4 * (SELECT count(*) FROM nodes), 4 * (SELECT count(*) FROM guards), 4 * (SELECT count(*) FROM graph_breaks)")
got=$(sqlite3 four.db "SELECT count(*), count(ended_at), sum(exit_status) FROM runs;
	SELECT (SELECT count(*) FROM compiles), (SELECT count(*) FROM graphs),
	(SELECT count(*) FROM nodes), (SELECT count(*) FROM guards), (SELECT count(*) FROM graph_breaks)")
[ "$got" = "4|4|0
$want" ] && ok || bad "4 writers: runs, compiles, graphs, nodes, guards, breaks: $(echo $got), wanted 4|4|0 $want"
lost=$(sqlite3 four.db "SELECT $(echo "$want" | sed 's/|/ + /g') - (SELECT count(*) FROM compiles) - (SELECT count(*) FROM graphs)
	- (SELECT count(*) FROM nodes) - (SELECT count(*) FROM guards) - (SELECT count(*) FROM graph_breaks)")
# each writer's compiles are the reference's, in order
for r in 1 2 3 4; do
	sqlite3 four.db "SELECT label, reason, backend, outcome, op_count FROM compiles WHERE run_id = $r ORDER BY id" >"four$r.rows"
	sqlite3 ref-aot.db "SELECT label, reason, backend, outcome, op_count FROM compiles ORDER BY id" >ref-aot.short
	compare "4 writers: run $r's compiles" ref-aot.short "four$r.rows"
done

echo "kills survived: $survived of $tried tried ($early before the run's first row, $late after its end; the log trailed the program by up to $trail compiles); rows lost with 4 writers: $lost"
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
