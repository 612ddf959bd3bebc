#!/bin/sh
# SPDX-License-Identifier: MIT
# Spec 07 §10 "Submission path": registering a Spot handler, an Actor
# handler, a timer callback or a session callback gives the application
# no means of naming which queue that work runs on. Checked on the public
# surface: no declaration in orbit/spot_executor.h (prototype, option or
# stats field, typedef) mentions a serial queue object, so no entry point
# takes or returns one. Plus the §2 internal check conditions: only the
# Spot coordinator has queue maps, and no other lib/ file names its
# Actor/timer entries. Prints cmocka-style lines so scripts/test counts it.
src="${top_srcdir:-.}"
h="$src/include/orbit/spot_executor.h"
fail=0

t=test_s10_registration_cannot_name_a_queue
echo "[ RUN      ] $t"
# Comments stripped, so prose may talk about queues; code may not.
code=$(sed -e 's://.*$::' "$h" | awk '
	{ line = $0 }
	incomment { if (sub(/.*\*\//, "", line)) incomment = 0; else next }
	{ while (match(line, /\/\*/)) {
		pre = substr(line, 1, RSTART - 1); rest = substr(line, RSTART + 2)
		if (match(rest, /\*\//)) line = pre substr(rest, RSTART + 2)
		else { line = pre; incomment = 1 }
	  }
	  print line }')
n_api=$(printf '%s\n' "$code" | grep -c 'ORBIT_API')
if [ ! -f "$h" ] || [ "$n_api" -lt 20 ]; then
	echo "no coordinator prototypes found in $h ($n_api)"; fail=1
	echo "[  FAILED  ] $t"
elif printf '%s\n' "$code" | grep -n 'orbit_serial_queue_t\|struct orbit_serial_queue\b'; then
	echo "the lines above let a caller hold or pass a queue (07 §3)"; fail=1
	echo "[  FAILED  ] $t"
else
	echo "$n_api public declarations, none names a queue"
	echo "[       OK ] $t"
fi

t=test_s2_only_the_spot_coordinator_has_queue_maps
echo "[ RUN      ] $t"
bad=$(grep -ln 'struct map\b\|actor_entry\|timer_entry' \
	"$src"/lib/actor_executor.c "$src"/lib/session_executor.c \
	"$src"/lib/serial_executor.c "$src"/lib/serial_executor.h 2>&1)
if [ ! -f "$src/lib/spot_executor.c" ] || ! grep -q 'struct map actors, timers' "$src/lib/spot_executor.c"; then
	echo "the Spot coordinator's maps are not where this check looks"; fail=1
	echo "[  FAILED  ] $t"
elif [ -n "$bad" ]; then
	echo "a map or an Actor/timer entry outside the Spot coordinator:"; echo "$bad"; fail=1
	echo "[  FAILED  ] $t"
else
	echo "[       OK ] $t"
fi
exit $fail
