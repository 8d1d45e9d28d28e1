#!/usr/bin/env bash
# bench/vm_loop.sh - the interpreter against CPython on the same loop: ten
# million additions in a function. tj reads like Python, so both run the very
# same file. Prints both times and the ratio (tjit / python3, lower is better).
# Environment: TJIT (default ./tjit), VM_LOOP_N (default 10000000), RUNS (3).
set -eu
here=$(dirname "$0")
# shellcheck source=bench/lib.sh
. "$here/lib.sh"
tjit=$(bench_tjit)
n=${VM_LOOP_N:-10000000}
runs=${RUNS:-3}

prog=$(mktemp "${TMPDIR:-/tmp}/vm_loop.XXXXXX")
trap 'rm -f "$prog"' EXIT
cat >"$prog" <<EOT
def loop(n):
    s = 0
    for i in range(n):
        s = s + i
    return s

print(loop($n))
EOT

t_tjit=$(bench_median "$runs" "$tjit" run "$prog")
if command -v python3 >/dev/null 2>&1; then
	t_py=$(bench_median "$runs" python3 "$prog")
	echo "vm_loop: for i in range($n): s = s + i   (median of $runs runs)"
	echo "  tjit    ${t_tjit} s"
	echo "  python3 ${t_py} s"
	echo "  ratio tjit/python3 = $(bench_ratio "$t_tjit" "$t_py")"
else
	echo "vm_loop: for i in range($n): s = s + i   (median of $runs runs)"
	echo "  tjit    ${t_tjit} s"
	echo "  python3 not found: no ratio (install python3 to compare)"
fi
