#!/bin/sh
# SPDX-License-Identifier: MIT
# The fleet demo end to end: short runs in make check, and a 120 s chaos
# run in make check-long. Bank scenario: workers host Spots, clients
# submit transfers through the cross-process Spot queues under chaos, and
# the report's invariants all hold, the observers' verdict included; with
# --inject-bug the same report fails (so it can fail), and with
# --inject-bug=steal the observer sees two holders of one account; while
# it runs orbitctl stats shows every component's counters moving. Locks
# scenario: 0 violations under chaos, and --no-lock shows the checker
# catches violations. An option out of range names its limit.
demo="${top_builddir:-.}/agent/orbit-demo"
fleet="tdemo$$"
t=test_demo_bank_chaos_run_keeps_every_invariant
echo "[ RUN      ] $t"
# make check: 8 s, small; make check-long (ORBIT_TEST_TIER=long): 120 s of
# the default fleet (4 workers, 2 clients, 8 shards, 1,000 accounts) with
# two observers and a higher chaos rate.
if [ "${ORBIT_TEST_TIER:-check}" = long ]; then
	args="--seconds 120 --chaos 4 --observers 2"
else
	args="--seconds 8 --workers 3 --clients 2 --shards 4 --accounts 200 --chaos 1.5"
fi
# shellcheck disable=SC2086 # $args is a list of options
out=$("$demo" $args --fleet "$fleet" 2>&1)
rc=$?
echo "$out" | tail -14
# The observer followed the ring (acquisitions seen), its verdict is in the
# report, every status line fits 80 columns, and the commands to watch it
# name the real orbitctl.
ctlpath=$(echo "$out" | sed -n "s|^  \(/[^ ]*/orbitctl\) --fleet $fleet stats\$|\1|p")
if [ $rc -eq 0 ] && echo "$out" | grep -q 'all invariants hold' &&
   [ -n "$ctlpath" ] && [ -x "$ctlpath" ] &&
   echo "$out" | grep -q "^  $ctlpath --fleet $fleet spots\$" &&
   echo "$out" | grep -Eq 'transfers accepted [1-9]' &&
   echo "$out" | grep -Eq 'kills [1-9]' &&
   echo "$out" | grep -Eq 'observer 0 \(started [1-9][0-9]* times\): acquisitions [1-9]' &&
   echo "$out" | grep -q 'ok   observer 0: overlapping holders 0, early expiries 0, token regressions 0' &&
   echo "$out" | grep -q "ok   observer 0's view agrees with the lock table" &&
   echo "$out" | grep -E '^ *[0-9]+s ' | tail -1 | awk '$8 != "0" && $9 == "0/0" { ok = 1 } END { exit !ok }' &&
   ! echo "$out" | grep -E '^ *([0-9]+s|time) ' | awk 'length > 80 { bad = 1 } END { exit !bad }' &&
   ! ls /dev/shm | grep -q "orbit\.$fleet\."; then
	echo "[       OK ] $t"
else
	echo "$out" | sed -n '/orbit-demo report/,$p' # the whole report: which check failed
	echo "[  FAILED  ] $t (exit $rc)"; fail=1
fi
t=test_demo_bank_report_fails_on_a_broken_ledger
echo "[ RUN      ] $t"
out=$("$demo" --seconds 2 --workers 2 --clients 1 --shards 2 --accounts 50 --chaos 0 \
	--fleet "$fleet" --inject-bug 2>&1)
rc=$?
if [ $rc -eq 1 ] && echo "$out" | grep -q 'FAIL total balance'; then
	echo "[       OK ] $t"
else
	echo "$out" | tail -8; echo "[  FAILED  ] $t (exit $rc)"; fail=1
fi
t=test_demo_bank_observer_catches_overlapping_holders
echo "[ RUN      ] $t"
# --inject-bug=steal: a handler that waited breaks the account lock. The
# observer sees the second holder begin while the first one's lease runs.
out=$("$demo" --seconds 2 --workers 2 --clients 1 --shards 2 --accounts 50 --chaos 0 \
	--fleet "$fleet" --inject-bug=steal 2>&1)
rc=$?
if [ $rc -eq 1 ] && echo "$out" | grep -Eq 'FAIL observer 0: overlapping holders [1-9]' &&
   echo "$out" | grep -Eq 'force releases [1-9]'; then
	echo "[       OK ] $t"
else
	echo "$out" | tail -8; echo "[  FAILED  ] $t (exit $rc)"; fail=1
fi
t=test_demo_bank_publishes_every_component_counter
echo "[ RUN      ] $t"
# While the demo runs, the workers' agents publish their pool, Spot
# coordinators, ledger lane and receipts queue (orbit_agent_watch):
# orbitctl stats --json summed over the live members has every kind
# moving. After the run --keep leaves the segments: the rows are still there
# (the members are gone: stats --all shows their rows).
ctl="${top_builddir:-.}/agent/orbitctl"
if ! command -v jq >/dev/null 2>&1; then
	echo "[  SKIPPED ] $t (no jq)"
else
	log=$(mktemp)
	"$demo" --seconds 6 --workers 2 --clients 1 --shards 2 --accounts 100 --chaos 0 \
		--fleet "$fleet" --keep > "$log" 2>&1 &
	pid=$!
	sleep 4
	sums='[.members[] | select(.alive) | .counters] |
		[(map(.queue_accepted) | add), (map(.queue_completed) | add),
		 (map(.pool_tasks_run) | add), (map(.lane_turns) | add),
		 (map(.exec_accepted) | add), (map(.exec_completed) | add),
		 (map(.watched_objects) | add)] | map(tostring) | join(" ")'
	during=$("$ctl" --fleet "$fleet" stats --json | jq -r "$sums")
	wait $pid
	rc=$?
	after=$("$ctl" --fleet "$fleet" stats --all --json |
		jq -r '[.members[].counters.exec_completed] | add')
	dir=$(sed -n "s/.*rm -r \(.*\)$/\1/p" "$log")
	"$ctl" --fleet "$fleet" unlink > /dev/null
	[ -n "$dir" ] && rm -rf "$dir"
	echo "queue accepted/completed, pool run, lane turns, exec accepted/completed," \
		"watched: $during; exec completed after: $after"
	if [ $rc -eq 0 ] && echo "$during" | grep -Eq '^([1-9][0-9]* ){6}[1-9][0-9]*$' &&
	   echo "$after" | grep -Eq '^[1-9]' && grep -q 'all invariants hold' "$log"; then
		echo "[       OK ] $t"
	else
		tail -8 "$log"; echo "[  FAILED  ] $t (exit $rc)"; fail=1
	fi
	rm -f "$log"
fi
t=test_demo_chaos_run_has_no_violations
echo "[ RUN      ] $t"
out=$("$demo" --scenario locks --seconds 3 --fleet "$fleet" 2>&1)
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
out=$("$demo" --scenario locks --seconds 2 --fleet "$fleet" --no-lock 2>&1)
rc=$?
if [ $rc -eq 1 ] && echo "$out" | grep -Eq 'mutual-exclusion violations +[1-9]'; then
	echo "[       OK ] $t"
else
	echo "$out" | tail -5; echo "[  FAILED  ] $t (exit $rc)"; fail=1
fi
t=test_demo_bad_option_names_the_limit
echo "[ RUN      ] $t"
bank=$("$demo" --workers 100 2>&1); brc=$?
locks=$("$demo" --scenario locks --workers 100 2>&1); lrc=$?
fl=$("$demo" --scenario locks --fleet 'bad/name' 2>&1); frc=$?
sh=$("$demo" --shards 10 --accounts 5 --fleet "$fleet" 2>&1); src=$?
if [ $brc -eq 2 ] && echo "$bank" | grep -q -- '--workers 100: allowed 1\.\.32' &&
   [ $lrc -eq 2 ] && echo "$locks" | grep -q -- '--workers 100: allowed 2\.\.64' &&
   [ $frc -eq 2 ] && echo "$fl" | grep -q -- '--fleet bad/name: a fleet name is 1 to 40 of' &&
   [ $src -eq 2 ] && echo "$sh" | grep -q -- '--shards 10: allowed 1\.\.5 (at most --accounts)'; then
	echo "[       OK ] $t"
else
	echo "$bank" | head -2; echo "$locks" | head -2; echo "$fl" | head -2; echo "$sh" | head -2
	echo "[  FAILED  ] $t (exit $brc, $lrc, $frc, $src)"; fail=1
fi
# SIGTERM (kill, timeout, systemd) and SIGINT end a run early as its
# --seconds would: the report, exit status 0 with every invariant held,
# and nothing left behind (segments, the run's directory, its children).
for sig in TERM INT; do
	t=test_demo_sig$(echo $sig | tr 'A-Z' 'a-z')_winds_down_and_leaves_nothing
	echo "[ RUN      ] $t"
	log=$(mktemp)
	if [ $sig = TERM ]; then
		"$demo" --seconds 60 --workers 2 --clients 1 --shards 2 --accounts 100 \
			--fleet "$fleet" > "$log" 2>&1 &
	else
		"$demo" --scenario locks --seconds 60 --fleet "$fleet" > "$log" 2>&1 &
	fi
	pid=$!
	sleep 3
	kill -$sig $pid
	for i in $(seq 300); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
	wait $pid
	rc=$?
	kids=$(pgrep -f -- "--fleet $fleet" 2>/dev/null | wc -l)
	if [ $rc -eq 0 ] && grep -q "SIG$sig: winding down" "$log" &&
	   grep -Eq 'all invariants hold|violations +0 ' "$log" && [ "$kids" -eq 0 ] &&
	   ! ls /dev/shm | grep -q "orbit\.$fleet\." && ! ls -d /tmp/orbit-demo.$pid >/dev/null 2>&1; then
		echo "[       OK ] $t"
	else
		tail -8 "$log"; echo "[  FAILED  ] $t (exit $rc, $kids children left)"; fail=1
		kill -9 $pid 2>/dev/null
	fi
	rm -f "$log"
done
exit ${fail:-0}
