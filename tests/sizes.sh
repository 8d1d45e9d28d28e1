#!/usr/bin/env bash
# tests/sizes.sh - keeps core/ easy to read (issue 10): no source file in
# core/ over 2,000 lines except the VM (its dispatch loop is one function),
# and no function over 150 lines outside the VM's dispatch loop.
# A function is counted from a line that opens it at column 0 ("{") to the
# line that closes it ("}" at column 0), as the code's style writes them.
set -u
top=${TJ_SRCDIR:-$(dirname "$0")/..}
max_file=2000
max_fn=150
status=0
files=$(cd "$top" && find core tools db tui viz -name '*.c' | sort)
for f in $files; do
	n=$(wc -l <"$top/$f")
	case $f in
	core/lang/vm.c) ;;
	core/*)
		if [ "$n" -gt "$max_file" ]; then
			echo "$f: $n lines (at most $max_file in core/)"
			status=1
		fi
		;;
	esac
	# name of the function (the line before "{"), its length
	out=$(awk -v max="$max_fn" -v file="$f" '
		/^\{/ { start = NR; name = prev; next }
		/^\}/ && start { len = NR - start + 1
			if (len > max && !(file ~ /vm\.c$/ && name ~ /^static value run\(/))
				printf "%s:%d: %s: %d lines (at most %d)\n", file, start, name, len, max
			start = 0 }
		{ prev = $0 }' "$top/$f")
	if [ -n "$out" ]; then
		echo "$out"
		status=1
	fi
done
[ $status -eq 0 ] && echo "sizes: every core/ file and every function within bounds"
exit $status
