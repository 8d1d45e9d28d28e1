#!/bin/sh
# sql2c.sh - embed an SQL file in the library as a C string.
#
#   sh db/sql2c.sh NAME FILE.sql > OUT.c
#
# writes "const char NAME[] = ...;", one string literal per line of the
# file, with \ " and ? escaped (no trigraphs). POSIX sed only: no xxd.
set -eu
if [ $# -ne 2 ]; then
	echo "usage: sql2c.sh NAME FILE.sql" >&2
	exit 2
fi
name=$1
file=$2
[ -r "$file" ] || { echo "sql2c.sh: cannot read $file" >&2; exit 1; }
echo "/* Generated from $(basename "$file") by db/sql2c.sh: do not edit. */"
echo "const char $name[] ="
sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/?/\\?/g' -e 's/	/\\t/g' \
    -e 's/^/"/' -e 's/$/\\n"/' "$file"
echo ";"
