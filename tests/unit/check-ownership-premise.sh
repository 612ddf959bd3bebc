#!/bin/sh
# SPDX-License-Identifier: MIT
# Spec 07 §8 internal check condition: "every location that assumes
# upper-level serial ownership has an isOnLane or throwIfReentrant
# call". In lib/, every function a coordinator runs as a state lane turn
# (the function passed to orbit_state_lane_run) assumes it owns the
# lane's state; each must open its body with ORBIT__ASSERT_ON_LANE (debug
# builds) or ORBIT__CHECK_ON_LANE (every build), lib/ownership.h. And
# destroy, where reentrancy is possible, calls throw_if_reentrant.
# Prints cmocka-style lines so scripts/test counts it.
src="${top_srcdir:-.}"
files="$src/lib/serial_executor.c $src/lib/spot_executor.c $src/lib/actor_executor.c $src/lib/session_executor.c"
fail=0

t=test_s8_every_lane_turn_function_checks_it_is_on_the_lane
echo "[ RUN      ] $t"
n=0
bad=""
for f in $files; do
	for fn in $(sed -n 's/.*orbit_state_lane_run([^,]*, *\([A-Za-z_][A-Za-z0-9_]*\).*/\1/p' "$f" | sort -u); do
		n=$((n + 1))
		body=$(awk -v fn="$fn" '
			$0 ~ "^static int " fn "\\(" { on = 1 }
			on { print }
			on && /^}/ { exit }' "$f")
		if [ -z "$body" ]; then
			bad="$bad
$f: $fn runs as a lane turn but its definition was not found"
		elif ! printf '%s\n' "$body" | grep -q 'ORBIT__ASSERT_ON_LANE\|ORBIT__CHECK_ON_LANE'; then
			bad="$bad
$f: $fn runs as a lane turn and never checks it is on the lane"
		fi
	done
done
if [ "$n" -lt 10 ]; then
	echo "only $n lane turn functions found in $files: the check looks in the wrong place"; fail=1
	echo "[  FAILED  ] $t"
elif [ -n "$bad" ]; then
	printf '%s\n' "$bad" | sed '/^$/d'; fail=1
	echo "[  FAILED  ] $t"
else
	echo "$n lane turn functions, each checks its ownership premise"
	echo "[       OK ] $t"
fi

t=test_s8_destroy_refuses_reentry
echo "[ RUN      ] $t"
body=$(awk '/^int orbit__coord_destroy_begin\(/ { on = 1 } on { print } on && /^}/ { exit }' \
	"$src/lib/serial_executor.c")
if printf '%s\n' "$body" | grep -q 'orbit_state_lane_throw_if_reentrant'; then
	echo "[       OK ] $t"
else
	echo "orbit__coord_destroy_begin() does not call orbit_state_lane_throw_if_reentrant()"; fail=1
	echo "[  FAILED  ] $t"
fi
exit $fail
