#!/bin/sh
# SPDX-License-Identifier: MIT
# make check: tests/bench/bench_spot_queue with tiny counts (--smoke), so the
# benchmark cannot rot: every method must still move every record of every
# run, in order, through real processes. No figure is judged here.
b="${top_builddir:-.}/tests/bench/bench_spot_queue"
echo "[ RUN      ] test_bench_spot_queue_smoke"
if "$b" --smoke; then
	echo "[       OK ] test_bench_spot_queue_smoke"
else
	echo "[  FAILED  ] test_bench_spot_queue_smoke"
	exit 1
fi
