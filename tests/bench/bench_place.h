/* SPDX-License-Identifier: MIT */
/*
 * tests/bench/bench_place.h: the "split" placement the cross-process
 * benchmarks share (bench_agent, bench_spot_queue): the sending side
 * pinned to the first CPU this program may use, the receiving process to
 * the second, so every figure is a cross-CPU hand-off whatever the
 * scheduler would have done. With one CPU there is no split (cpu_b < 0).
 */
#ifndef ORBIT_BENCH_PLACE_H
#define ORBIT_BENCH_PLACE_H

#include <sched.h>

static cpu_set_t cpus_all;	   /* the affinity this program started with */
static int cpu_a = -1, cpu_b = -1; /* split placement: sender's CPU, receiver's CPU */

/* Pin the calling process to @cpu, or give it every CPU back (-1). */
static inline void place(int cpu)
{
	cpu_set_t one;

	CPU_ZERO(&one);
	if (cpu >= 0)
		CPU_SET(cpu, &one);
	/* Best effort: a refused pin leaves the figure a free one, noted by main */
	(void)sched_setaffinity(0, sizeof(cpu_set_t), cpu >= 0 ? &one : &cpus_all);
}

/* The two CPUs of the split placement: the first two this program may use. */
static inline void pick_cpus(void)
{
	if (sched_getaffinity(0, sizeof(cpus_all), &cpus_all) < 0)
		return;
	for (int c = 0; c < CPU_SETSIZE && cpu_b < 0; c++)
		if (CPU_ISSET(c, &cpus_all)) {
			if (cpu_a < 0)
				cpu_a = c;
			else
				cpu_b = c;
		}
	if (cpu_b < 0)
		cpu_a = -1;
}

#endif /* ORBIT_BENCH_PLACE_H */
