#!/bin/sh
# SPDX-License-Identifier: MIT
# The test lists of the automake fragments are true to the sources.
#
# 1. Every cmocka test source (tests/unit/test_*.c, tests/mp/test_*.c) is
#    a source of a program in CMOCKA_PROGS or TESTS: a name dropped from
#    a list (an edit that left `CMOCKA_PROGS +=` empty once) would let the
#    whole program go untested without a single failure.
#
# 2. `make check-long` runs only the programs that read the tier
# (ORBIT_TEST_TIER, through orbit_test_long() of tests/common/orbit_test.h
# or the variable itself): the others would run exactly what `make check`
# ran. Their one list is LONG_TESTS, which each automake fragment adds to
# beside the program. This check keeps that list true, from the sources:
#   - every test program one of whose sources (or the script itself) reads
#     the tier is in LONG_TESTS (else its soak sizes would never run);
#   - every program in LONG_TESTS reads it (else the long tier re-runs a
#     program for nothing).
# A source that reads the tier but belongs to no test program fails too:
# the long tier could not reach it.
# Prints cmocka-style lines so scripts/test counts it.
src="${top_srcdir:-.}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

. "$src/tests/common/check-result.sh" # result NAME STATUS MSGFILE

cd "$src" || exit 1
# Makefile.am and the fragments it includes (not every *.am on disk: a
# stale copy in a build tree could hide a dropped entry), continuation
# lines joined with a space as make joins them, one logical line each.
{ echo Makefile.am; sed -n 's/^include[[:blank:]]*//p' Makefile.am; } |
	xargs cat | sed -e ':a' -e '/\\$/N; s/\\\n/ /; ta' > "$tmp/am"

# The tier's readers among the test sources (tests/common defines it).
grep -rlE 'orbit_test_long\(|ORBIT_TEST_TIER' tests --include='*.c' --include='*.sh' |
	grep -v '^tests/common/' | grep -vx 'tests/unit/check-test-lists.sh' | sort > "$tmp/readers"

# The test programs: what TESTS and CMOCKA_PROGS name.
grep -E '^[[:blank:]]*(TESTS|CMOCKA_PROGS)[[:blank:]]*\+?=' "$tmp/am" | sed 's/^[^=]*=//' |
	tr ' \t' '\n\n' | grep -E '^tests/' | sort -u > "$tmp/progs"

# automake's canonical name of a program: every character but [A-Za-z0-9_] is '_'.
canon() { printf '%s\n' "$1" | sed 's/[^A-Za-z0-9_]/_/g'; }

# The test programs that have source file $1 (one per line).
programs_of() {
	for v in $(grep -E "_SOURCES[[:blank:]]*\+?=.*(^|[[:blank:]=])$1([[:blank:]]|\$)" "$tmp/am" |
		sed 's/_SOURCES.*//; s/^[[:blank:]]*//'); do
		while read -r p; do
			[ "$(canon "$p")" = "$v" ] && echo "$p"
		done < "$tmp/progs"
	done
}

: > "$tmp/msg"
for f in $(ls tests/unit/test_*.c tests/mp/test_*.c 2>/dev/null); do
	[ -n "$(programs_of "$f")" ] ||
		echo "$f is a source of no program in CMOCKA_PROGS or TESTS: it is never run" >> "$tmp/msg"
done
[ -n "$(ls tests/unit/test_*.c 2>/dev/null)" ] || echo "no tests/unit/test_*.c found from $src" >> "$tmp/msg"
[ -s "$tmp/msg" ] && st=1 || st=0
result test_every_test_source_is_in_a_test_program "$st" "$tmp/msg"

: > "$tmp/msg"
: > "$tmp/want"
while read -r f; do
	case "$f" in
	*.sh)
		if grep -qx "$f" "$tmp/progs"; then
			echo "$f" >> "$tmp/want"
		else
			echo "$f reads ORBIT_TEST_TIER but is not in TESTS" >> "$tmp/msg"
		fi
		;;
	*.c)
		programs_of "$f" > "$tmp/of"
		cat "$tmp/of" >> "$tmp/want"
		[ -s "$tmp/of" ] ||
			echo "$f reads the tier but is a source of no test program" >> "$tmp/msg"
		;;
	esac
done < "$tmp/readers"
sort -u -o "$tmp/want" "$tmp/want"

grep -E '^[[:blank:]]*LONG_TESTS[[:blank:]]*\+?=' "$tmp/am" | sed 's/^[^=]*=//' |
	tr ' \t' '\n\n' | grep -v '^$' | sort -u > "$tmp/listed"

comm -23 "$tmp/want" "$tmp/listed" |
	sed 's/$/ reads the tier (ORBIT_TEST_TIER) but is not in LONG_TESTS: make check-long would skip its soak sizes/' >> "$tmp/msg"
[ -s "$tmp/msg" ] && st=1 || st=0
result test_long_tests_lists_every_program_that_reads_the_tier "$st" "$tmp/msg"

: > "$tmp/msg"
[ -s "$tmp/want" ] || echo "no test program reads the tier: the search above is broken" >> "$tmp/msg"
comm -13 "$tmp/want" "$tmp/listed" |
	sed 's/$/ is in LONG_TESTS but none of its sources reads the tier: make check-long would run it for nothing/' >> "$tmp/msg"
[ -s "$tmp/msg" ] && st=1 || st=0
result test_long_tests_lists_no_program_that_ignores_the_tier "$st" "$tmp/msg"
exit $fail
