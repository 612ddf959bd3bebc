#!/bin/sh
# SPDX-License-Identifier: MIT
# Every ```c block of README.md and doc/*.md, and every .EX block of a
# man page's EXAMPLES section, that has a main() is a complete program a
# user may paste: it must compile (strict C11 plus the project's
# warnings, -Werror) and link against the built liborbit. Blocks without
# main() are fragments that show one call in context and are not
# compiled. One named result per program block.
src="${top_srcdir:-.}"
build="${top_builddir:-.}"
cc=${CC:-cc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
n=0
# compile_blocks FILE WHAT: build every $tmp/$base_<k>.c that has a main().
compile_blocks() {
	for c in "$tmp/${base}"_*.c; do
		[ -f "$c" ] || continue
		grep -q 'int main(' "$c" || continue
		n=$((n + 1))
		t="test_doc_code_$(basename "$c" .c)"
		echo "[ RUN      ] $t"
		if $cc -std=gnu11 -Wall -Wextra -Werror -I"$src/include" "$c" -o "$c.bin" \
			"$build/.libs/liborbit.so" -Wl,-rpath,"$build/.libs" -pthread 2>"$c.err"; then
			echo "[       OK ] $t"
		else
			echo "$1: $2 does not compile or link:"
			cat "$c.err"
			echo "[  FAILED  ] $t"
			fail=1
		fi
	done
}
for md in "$src"/README.md "$src"/doc/*.md; do
	[ -f "$md" ] || continue
	base=$(basename "$md" .md | tr -c 'A-Za-z0-9\n' '_')
	# Split the file's ```c blocks into tmp/<base>_<k>.c (k from 1).
	awk -v out="$tmp/$base" '
		/^```c[ \t]*$/ { k++; f = out "_" k ".c"; printf "" > f; inside = 1; next }
		/^```/ { if (inside) close(f); inside = 0; next }
		inside { print >> f }' "$md"
	compile_blocks "$md" "a program block"
done
# Man pages: the .EX blocks after .SH EXAMPLES, with roff's escapes undone.
for man in "$src"/doc/man3/*.3; do
	[ -f "$man" ] || continue
	base=man_$(basename "$man" .3)
	awk -v out="$tmp/$base" '
		/^\.SH / { ex = ($0 ~ /^\.SH EXAMPLES/); next }
		ex && /^\.EX/ { k++; f = out "_" k ".c"; printf "" > f; inside = 1; next }
		/^\.EE/ { if (inside) close(f); inside = 0; next }
		inside {
			sub(/^\\&/, "")
			gsub(/\\-/, "-")
			gsub(/\\e/, "\\")
			print >> f
		}' "$man"
	compile_blocks "$man" "an EXAMPLES program"
done
[ "$n" -gt 0 ] || { echo "no program block found in README.md or doc/*.md"; echo "[  FAILED  ] test_doc_code_found"; exit 1; }
exit $fail
