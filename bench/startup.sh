#!/usr/bin/env bash
# bench/startup.sh - what it costs to start tjit: `tjit run` of an empty
# program against `true`, the median of RUNS runs each, measured side by
# side. Prints both and the ratio.
# Environment: TJIT (default ./tjit), RUNS (default 21).
set -eu
here=$(dirname "$0")
# shellcheck source=bench/lib.sh
. "$here/lib.sh"
tjit=$(bench_tjit)
runs=${RUNS:-21}

prog=$(mktemp "${TMPDIR:-/tmp}/startup.XXXXXX")
trap 'rm -f "$prog"' EXIT
: >"$prog"

t_true=$(bench_median "$runs" "$(type -P true)")   # the program, not the builtin
t_tjit=$(bench_median "$runs" "$tjit" run "$prog")
echo "startup: tjit run of an empty program   (median of $runs runs)"
echo "  true    ${t_true} s"
echo "  tjit    ${t_tjit} s"
echo "  ratio tjit/true = $(bench_ratio "$t_tjit" "$t_true")"
