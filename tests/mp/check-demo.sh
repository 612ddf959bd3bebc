#!/bin/sh
# SPDX-License-Identifier: MIT
# The fleet demo end to end (a short run): workers with agents under chaos
# finish with 0 violations and see transitions on the ring; with --no-lock
# the same checker reports violations (so it can fail).
demo="${top_builddir:-.}/agent/orbit-demo"
fleet="tdemo$$"
t=test_demo_chaos_run_has_no_violations
echo "[ RUN      ] $t"
out=$("$demo" --seconds 3 --fleet "$fleet" 2>&1)
rc=$?
echo "$out" | tail -12
if [ $rc -eq 0 ] && echo "$out" | grep -q 'mutual-exclusion violations   0 ' &&
   echo "$out" | grep -Eq 'workers SIGKILLed +[1-9]' &&
   echo "$out" | grep -Eq 'transitions seen on the ring +[1-9]' &&
   ! ls /dev/shm | grep -q "orbit\.$fleet\."; then
	echo "[       OK ] $t"
else
	echo "[  FAILED  ] $t (exit $rc)"; fail=1
fi
t=test_demo_checker_catches_violations_without_lock
echo "[ RUN      ] $t"
out=$("$demo" --seconds 2 --fleet "$fleet" --no-lock 2>&1)
rc=$?
if [ $rc -eq 1 ] && echo "$out" | grep -Eq 'mutual-exclusion violations +[1-9]'; then
	echo "[       OK ] $t"
else
	echo "$out" | tail -5; echo "[  FAILED  ] $t (exit $rc)"; fail=1
fi
exit ${fail:-0}
