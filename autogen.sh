#!/bin/sh
# autogen.sh - generates configure and Makefile.in from configure.ac and
# Makefile.am. Needs autoconf, automake and pkg-config (scripts/install-deps).
set -e
cd "$(dirname "$0")"
if ! command -v autoreconf >/dev/null 2>&1; then
	echo "autogen.sh: autoreconf not found: install the Debian packages autoconf and automake (or run scripts/install-deps)" >&2
	exit 1
fi
autoreconf -fi
