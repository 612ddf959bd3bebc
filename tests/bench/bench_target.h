/* SPDX-License-Identifier: MIT */
/*
 * tests/bench/bench_target.h: the one shape of every benchmark's verdicts.
 * Each target prints one line
 *     target <name>: <figure> <op> <goal> met|MISSED
 * where figure and goal are in the same unit (a ratio "x", ns, ms, M/s),
 * and scripts/bench sums the lines of every program into
 * "N targets met, N missed". A figure that could not be measured (a peer
 * missing) is not a target: print why instead and call nothing here.
 */
#ifndef ORBIT_BENCH_TARGET_H
#define ORBIT_BENCH_TARGET_H

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/*
 * bench_target - print the verdict line of one target and return whether
 * it was met. @op is "<=" or ">="; @unit follows both numbers ("x" for a
 * ratio). The line ends with the verdict: what explains a figure is
 * printed on lines of its own before it.
 */
static inline bool bench_target(const char *name, double figure, const char *op, double goal,
				const char *unit)
{
	bool ok = !strcmp(op, "<=") ? figure <= goal : figure >= goal;

	printf("target %s: %.2f%s %s %.2f%s %s\n", name, figure, unit, op, goal, unit,
	       ok ? "met" : "MISSED");
	return ok;
}

#endif /* ORBIT_BENCH_TARGET_H */
