#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/common/run-test, the harness every test runs under, turns a
# program's results and exit status into TAP. Small programs with known
# output and status go through it here, and its TAP is compared with
# what automake's tap-driver must see: a skip stays a skip (also one that
# says "[  SKIPPED ]" and exits 77, the automake skip status, as
# check-exports.sh does in a static-only build), a non-zero status after
# passing results is a failure, a failure is counted once, and what a
# program leaves running when it ends is killed with it.
# One named result per case.
src="${top_srcdir:-.}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
. "$src/tests/common/check-result.sh" # result NAME STATUS MSGFILE

# case NAME 'SHELL BODY' 'EXPECTED TAP': the body is a test program.
case_is() {
	printf '%s\n' "$2" > "$tmp/$1.sh"
	printf '%s\n' "$3" > "$tmp/want"
	ORBIT_TEST_TIMEOUT=20 "$src/tests/common/run-test" "$tmp/$1.sh" > "$tmp/got" 2>&1
	: > "$tmp/msg"
	if ! diff -u "$tmp/want" "$tmp/got" > "$tmp/diff"; then
		echo "run-test on: $2" >> "$tmp/msg"
		echo "gives (- wanted, + got):" >> "$tmp/msg"
		cat "$tmp/diff" >> "$tmp/msg"
	fi
	[ -s "$tmp/msg" ] && st=1 || st=0
	result "test_run_test_$1" "$st" "$tmp/msg"
}

case_is skipped_and_77 'echo "[  SKIPPED ] t_x"; exit 77' 'ok 1 # SKIP t_x
1..1'
case_is ok_and_0 'echo "[       OK ] t_a"; exit 0' 'ok 1 - t_a
1..1'
case_is silent_77 'exit 77' 'ok 1 # SKIP silent_77.sh (exit status 77)
1..1'
case_is silent_3 'exit 3' 'not ok 1 - silent_3.sh (exit status 3)
1..1'
case_is ok_then_status_3 'echo "[       OK ] t_a"; exit 3' 'ok 1 - t_a
not ok 2 - ok_then_status_3.sh exited with status 3 after its tests
1..2'
case_is ok_then_77_without_a_skip 'echo "[       OK ] t_a"; exit 77' 'ok 1 - t_a
not ok 2 - ok_then_77_without_a_skip.sh exited with status 77 after its tests
1..2'
case_is ok_and_skipped_then_77 'echo "[       OK ] t_a"; echo "[  SKIPPED ] t_b"; exit 77' 'ok 1 - t_a
ok 2 # SKIP t_b
1..2'
case_is failed_and_1 'echo "[  FAILED  ] t_a"; exit 1' 'not ok 1 - t_a
1..1'
# A program that ends leaving a stopped child that holds its output: the
# run ends with the program (bounded here by 60 s) and the child is gone.
printf '%s\n' "sh -c 'kill -STOP \$\$; sleep 100' & echo \$! > '$tmp/child'" \
	'echo "[       OK ] t_a"; exit 0' > "$tmp/leftover.sh"
printf 'ok 1 - t_a\n1..1\n' > "$tmp/want"
timeout 60 env ORBIT_TEST_TIMEOUT=20 "$src/tests/common/run-test" "$tmp/leftover.sh" > "$tmp/got" 2>&1
: > "$tmp/msg"
if ! diff -u "$tmp/want" "$tmp/got" > "$tmp/diff"; then
	echo "run-test on a program leaving a stopped child gives (- wanted, + got):" >> "$tmp/msg"
	cat "$tmp/diff" >> "$tmp/msg"
fi
child=$(cat "$tmp/child" 2>/dev/null)
for _ in 1 2 3 4 5 6 7 8 9 10; do # killed; reaped by init a moment later
	[ -n "$child" ] && [ -d "/proc/$child" ] && [ "$(cut -d' ' -f3 "/proc/$child/stat" 2>/dev/null)" != Z ] || break
	sleep 0.2
done
if [ -n "$child" ] && [ -d "/proc/$child" ] && [ "$(cut -d' ' -f3 "/proc/$child/stat" 2>/dev/null)" != Z ]; then
	echo "the stopped child $child is still there after run-test ended" >> "$tmp/msg"
	kill -9 "$child" 2>/dev/null
fi
[ -s "$tmp/msg" ] && st=1 || st=0
result test_run_test_kills_what_the_program_left "$st" "$tmp/msg"
exit $fail
