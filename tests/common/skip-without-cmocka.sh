#!/bin/sh
# SPDX-License-Identifier: MIT
# make check without cmocka (configure did not find it, or --without-cmocka):
# one TAP skip per cmocka test program, with the reason, so the summary
# counts them as skipped rather than leaving them out.
# ORBIT_CMOCKA_PROGS: the programs (Makefile.am's CMOCKA_PROGS);
# ORBIT_CMOCKA_REASON: why (configure's CMOCKA_SKIP_REASON).
reason=${ORBIT_CMOCKA_REASON:-cmocka is not available}
set -- ${ORBIT_CMOCKA_PROGS:?ORBIT_CMOCKA_PROGS is not set}
echo "1..$#"
n=0
for p in "$@"; do
	n=$((n + 1))
	echo "ok $n # SKIP $(basename "$p"): $reason"
done
