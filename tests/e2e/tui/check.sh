#!/bin/sh
# tests/e2e/tui/check.sh - tjit-tui end to end: the real binary in a
# terminal (a detached tmux session of 80x24), driven with send-keys and
# read with capture-pane.
#
# prog.tj (run.sh also runs it against prog.out) is logged twice into a
# fresh database; then each step sends keys, waits until the screen stops
# changing (capture-pane polled every 50 ms, no fixed sleeps) and compares the screen, its instants and durations
# masked, with NAME.screen beside this script: the runs, a run, its
# compiles, a graph with its source line highlighted (the > column and,
# with colors, the highlight's escape sequence), d's export, the breaks,
# the guards, the help, a filter, a resize to 100x30, NO_COLOR and -C (no
# color sequences), q and Q, and a tjit-minify session. The errors before
# the terminal is touched (no database, not a terminal, bad usage) are
# checked without tmux.
#
# Usage: tests/e2e/tui/check.sh [--update]
#   --update rewrites the NAME.screen files from what tjit-tui shows now
#   (for a human who has read the differences, never for CI).
# Environment: TJIT (default ./tjit), TJIT_TUI (default: tjit-tui beside
# TJIT), TJIT_MINIFY (default: tjit-minify beside TJIT), TJ_SRCDIR (the
# top source folder). Exit 77 (skipped) without tmux.
set -u

update=0
[ "${1-}" = --update ] && update=1

top=${TJ_SRCDIR:-$(cd "$(dirname "$0")/../../.." && pwd)}
top=$(cd "$top" && pwd) || exit 99
here=$top/tests/e2e/tui
tjit=${TJIT:-./tjit}
case $tjit in /*) ;; *) tjit=$(pwd)/$tjit ;; esac
tui=${TJIT_TUI:-$(dirname "$tjit")/tjit-tui}
case $tui in /*) ;; *) tui=$(pwd)/$tui ;; esac
[ -x "$tjit" ] || { echo "check.sh: no tjit binary at $tjit (set TJIT)" >&2; exit 99; }
[ -x "$tui" ] || { echo "check.sh: no tjit-tui binary at $tui (set TJIT_TUI)" >&2; exit 99; }

# shellcheck source=tests/e2e/lib.sh
. "$top/tests/e2e/lib.sh"

work=$(mktemp -d "${TMPDIR:-/tmp}/tjit-tui.XXXXXX") || exit 99
sock=tjtest-$$
cleanup() {
	command -v tmux >/dev/null 2>&1 && tmux -L "$sock" kill-server >/dev/null 2>&1
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
unset TJIT_DB NO_COLOR TJIT_LOGS
cd "$work" || exit 99
cp "$here/prog.tj" "$here/aot.tj" "$here/ind.tj" . || exit 99
"$tjit" run --db t.db prog.tj >/dev/null 2>&1 || { echo "check.sh: tjit run failed" >&2; exit 99; }
"$tjit" run --db t.db prog.tj >/dev/null 2>&1 || exit 99

# ---- before the terminal: errors, --help, --version (no tmux needed) ----

expect_stderr() { # NAME STATUS STDERR-TEXT COMMAND...
	name=$1 want_status=$2 want_err=$3
	shift 3
	"$@" >out 2>err </dev/null
	status=$?
	if [ "$status" = "$want_status" ] && [ "$(cat err)" = "$want_err" ]; then
		ok
	else
		bad "$name: status $status, stderr: $(cat err) (wanted $want_status: $want_err)"
	fi
}
expect_stderr "missing database" 1 "tjit-tui: no database at 'none.db'" "$tui" none.db
expect_stderr "not a database" 1 "tjit-tui: 'prog.tj' is not a tjit database" "$tui" prog.tj
expect_stderr "TJIT_DB" 1 "tjit-tui: no database at 'env.db'" env TJIT_DB=env.db "$tui"
expect_stderr "default ./tjit.db" 1 "tjit-tui: no database at 'tjit.db'" "$tui"
expect_stderr "not a terminal" 1 \
	"tjit-tui: not a terminal: tjit-tui needs one on its input and output (tjit-profile report prints a run as text)" \
	"$tui" t.db
expect_stderr "two databases" 2 "tjit-tui: unexpected argument 'b.db' (one database at a time)
usage: tjit-tui [--db PATH] [-C | --no-color] [DB]
       tjit-tui --help | --version" "$tui" t.db b.db
expect_stderr "unknown option" 2 "tjit-tui: unknown option '-x'
usage: tjit-tui [--db PATH] [-C | --no-color] [DB]
       tjit-tui --help | --version" "$tui" -x
expect_stderr "--help" 0 "" "$tui" --help
grep -q '^  j, Down  *move down$' out && grep -q '^  -C *' out || grep -q -- '--no-color' out && ok ||
	bad "--help lacks the keys or the options"
expect_stderr "--version" 0 "" "$tui" --version
grep -q '^tjit-tui [0-9]' out && ok || bad "--version: $(cat out)"

if ! command -v tmux >/dev/null 2>&1; then
	echo "SKIP: no tmux (scripts/install-deps installs it); $pass passed before the terminal checks"
	[ "$fail" -eq 0 ] || exit 1
	exit 77
fi

# ---- in a terminal ----

# start [ENV] [OPTION] [DB]: tjit-tui DB (t.db) in a fresh 80x24 session;
# its exit status goes to ./rc
nstart=0
start() {
	tmux -L "$sock" kill-server >/dev/null 2>&1
	# a server of its own: new-session on a server still shutting down
	# fails ("server exited unexpectedly")
	nstart=$((nstart + 1))
	sock=tjtest-$$-$nstart
	rm -f rc
	tmux -L "$sock" -u new-session -d -x 80 -y 24 -c "$work" \
		"env LC_ALL=C.UTF-8 TZ=UTC TERM=xterm-256color ${1-} '$tui' ${2-} ${3:-t.db}; echo \$? >'$work/rc'" || exit 99
	last=
	settle
}

capture() { tmux -L "$sock" capture-pane -p "$@" 2>/dev/null; }

# settle: polls until the screen differs from the last one settled on
# (for up to 2 s), then until two captures 50 ms apart agree
settle() {
	i=0
	while [ $i -lt 40 ]; do
		now=$(capture)
		[ -n "$now" ] && [ "$now" != "$last" ] && break
		tmux -L "$sock" has-session 2>/dev/null || return 0
		sleep 0.05
		i=$((i + 1))
	done
	prev=
	i=0
	while [ $i -lt 40 ]; do
		now=$(capture)
		[ "$now" = "$prev" ] && break
		prev=$now
		sleep 0.05
		i=$((i + 1))
	done
	last=$now
}

keys() { # KEY...: send-keys, one after the other, then settle
	for k in "$@"; do
		tmux -L "$sock" send-keys "$k"
	done
	settle
}

# mask: instants and durations change from run to run
mask() {
	sed -e 's/[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9] [0-9][0-9]:[0-9][0-9]:[0-9][0-9]/DATE TIME/g' \
		-e 's/[0-9][0-9]-[0-9][0-9] [0-9][0-9]:[0-9][0-9]/MM-DD HH:MM/g' \
		-e 's/[0-9][0-9]:[0-9][0-9]:[0-9][0-9]/HH:MM:SS/g' \
		-e 's/ *[0-9][0-9]*\.[0-9][0-9] m\{0,1\}s/ T/g' \
		-e 's/k_[0-9a-f]\{16\}/k_0123456789abcdef/g'
}

# screen NAME: the screen, masked, against NAME.screen
screen() {
	capture | mask >"$1.got"
	if [ "$update" = 1 ]; then
		cp "$1.got" "$here/$1.screen"
		ok
	elif diff -u "$here/$1.screen" "$1.got" >"$1.diff" 2>&1; then
		ok
	else
		bad "screen $1 differs:"
		cat "$1.diff"
	fi
}

# has WHAT TEXT: the screen shows TEXT
has() {
	if capture | grep -qF -- "$2"; then ok; else
		bad "$1: the screen lacks '$2':"
		capture
	fi
}

# wait_exit STATUS: tjit-tui ended with STATUS
wait_exit() {
	i=0
	while [ ! -s rc ] && [ $i -lt 60 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	if [ "$(cat rc 2>/dev/null)" = "$1" ]; then ok; else bad "exit status $(cat rc 2>/dev/null) (wanted $1)"; fi
}

start
screen runs
keys Enter
screen run
keys Enter
screen compiles
keys Enter
screen compile
keys Enter
screen graph
# colors: the selected node and its current source line in color pairs
if capture -e | grep -q "$(printf '\033')\[30m$(printf '\033')\[43m R>   3"; then ok; else
	bad "graph: the current source line is not highlighted in color"
	capture -e | cat -v
fi
keys d
has "d" "wrote graph-5.dot and graph-5.svg in ."
[ -s graph-5.dot ] && grep -q '^digraph' graph-5.dot && grep -q '<svg' graph-5.svg && ok ||
	bad "d wrote no graph-5.dot/.svg"
keys Tab
has "Tab" "(focused: Tab goes back to the graph)"
keys j
screen graph-source-pane
keys Tab q
keys j Enter
screen guards
keys q q q j j Enter
screen breaks
keys Enter
screen break-source
keys q q j Enter
screen recompiles
keys j Enter
screen failures
keys '?'
screen help
keys q q q g Enter
keys / 0 / 1
screen filter
keys Enter
has "filter" "filter: 0/1  (n/N: next/previous match, /: change, Esc in /: clear)"
keys n
has "n" "no next match for '0/1'"
keys q
tmux -L "$sock" resize-window -x 100 -y 30 2>/dev/null || tmux -L "$sock" resize-pane -x 100 -y 30
settle
screen resize
keys Q
wait_exit 0

# NO_COLOR and -C: attributes, never a color
for how in NO_COLOR=1 -C; do
	case $how in
	-C) start "" -C ;;
	*) start "$how" ;;
	esac
	keys Enter Enter Enter Enter
	has "$how graph" " R>   3      y = x * n"
	if capture -e | grep -q "$(printf '\033')\[[34][0-7]m"; then
		bad "$how: color sequences on the screen:"
		capture -e | cat -v
	elif capture -e | grep -q "$(printf '\033')\[7m"; then ok; else
		bad "$how: no reverse video for the selection"
	fi
	# q goes back view by view, and quits from the runs
	keys q q q q
	keys q
	wait_exit 0
done

# aot_eager: the compile shows its forward and backward graphs beside the
# captured one, and what the forward saves; each graph opens as any
"$tjit" run --db a.db aot.tj >/dev/null 2>&1 || { bad "tjit run aot.tj failed"; }
start "" "" a.db
keys Enter Enter Enter
screen aot-compile
keys j j Enter
screen aot-backward
keys q j Enter
has "saved: Enter" "0/0 aot_forward · no graph break"
keys Q
wait_exit 0

# inductor on a fresh kernel cache: the compile lists its kernels
# (compiled); Enter on one shows the nodes it fused over their source
# line, its loop IR and LLVM IR; a second run takes them from the cache,
# their LLVM IR too (kernel names, hashes of their loop IR, masked)
TJIT_CACHE_DIR=$work/kcache "$tjit" run --db i.db ind.tj >/dev/null 2>&1 || { bad "tjit run ind.tj failed"; }
TJIT_CACHE_DIR=$work/kcache "$tjit" run --db i.db ind.tj >/dev/null 2>&1 || { bad "tjit run ind.tj again failed"; }
start "" "" i.db
keys j Enter Enter Enter
screen ind-compile
keys j j Enter
screen ind-kernel
keys / define Enter
has "kernel: the LLVM IR" "define "
keys q q q q g Enter Enter Enter
has "second run: from the cache" "pointwise cached"
has "second run: from the cache" "reduction cached"
keys j j j Enter
keys / define Enter
has "second run: the LLVM IR kept with the kernel in the cache" "define "
keys Q
wait_exit 0

# tjit-minify's sessions: m lists them, Enter shows one with each
# candidate it tried (their times masked); the minifier's run leads to
# its session too
minify=${TJIT_MINIFY:-$(dirname "$tjit")/tjit-minify}
cp "$top/tests/e2e/minify/chain.tj" . || exit 99
TJIT_INJECT_BUG=aot:compile_error "$minify" --db m.db --backend aot_eager chain.tj >/dev/null 2>&1 ||
	bad "tjit-minify chain.tj failed"
start "" "" m.db
keys m
screen minify-sessions
keys Enter
screen minify-session
keys q q Enter
has "the minifier's run" "minifier sessions         failure, stage, result, the candidates tried"
keys G Enter
has "the run's source" "runs > run 1 > chain.tj:1"
keys q k Enter
has "the run's sessions" "runs > run 1 > sessions of run 1"
keys Q
wait_exit 0

printf '%d passed, %d failed\n' "$pass" "$fail"
[ "$fail" -eq 0 ]
