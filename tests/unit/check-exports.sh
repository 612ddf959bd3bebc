#!/bin/sh
# SPDX-License-Identifier: MIT
# The shared library exports only orbit_* symbols (hidden visibility plus
# ORBIT_API). Prints cmocka-style lines so scripts/test counts it.
so="${top_builddir:-.}/.libs/liborbit.so"
echo "[ RUN      ] test_exports_only_orbit_symbols"
if [ ! -f "$so" ]; then
	echo "no $so (static-only build?)"; echo "[  SKIPPED ] test_exports_only_orbit_symbols"; exit 77
fi
bad=$(nm -D --defined-only "$so" | awk '{print $3}' | grep -v '^orbit_[a-z]' | grep -v '^_' )
if [ -n "$bad" ]; then
	echo "exported symbols outside orbit_*:"; echo "$bad"
	echo "[  FAILED  ] test_exports_only_orbit_symbols"; exit 1
fi
n=$(nm -D --defined-only "$so" | grep -c ' orbit_')
echo "$n exported orbit_* symbols"
echo "[       OK ] test_exports_only_orbit_symbols"
