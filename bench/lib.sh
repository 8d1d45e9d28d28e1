# bench/lib.sh - shared by the benchmark scripts (sourced, not run).
# shellcheck shell=bash

# the tjit binary: $TJIT, else ./tjit
bench_tjit() {
	t=${TJIT:-./tjit}
	if [ ! -x "$t" ]; then
		echo "no tjit binary at $t: build it (make) or set TJIT" >&2
		exit 2
	fi
	echo "$t"
}

# wall seconds of one run of a command, its output discarded (bash's
# EPOCHREALTIME: no process is started to read the clock)
bench_time() {
	local t0 t1
	t0=$EPOCHREALTIME
	"$@" >/dev/null 2>&1 || { echo "bench: '$*' failed" >&2; exit 1; }
	t1=$EPOCHREALTIME
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.6f\n", b - a }'
}

# the median of N runs of a command
bench_median() {
	local n=$1 i=0
	shift
	while [ "$i" -lt "$n" ]; do
		bench_time "$@"
		i=$((i + 1))
	done | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

bench_ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f\n", (b > 0) ? a / b : 0 }'; }
