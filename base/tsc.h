/* SPDX-License-Identifier: MIT */
/*
 * base/tsc.h: internal. A cheap pre-check for "has a time budget possibly
 * run out", for loops that ask after every item (the serial queue's drain
 * slice, lib/serial_queue.c, §6.4). A CLOCK_MONOTONIC read costs about
 * 24 ns on the 2-vCPU KVM guest orbit is measured on, `rdtsc` about 10.
 * The answer "not yet" comes from the time stamp counter while it is
 * below a mark set at the start of the budget, half the budget ahead by a
 * frequency this thread measured against CLOCK_MONOTONIC; past the mark,
 * or where the counter is not usable, the caller reads the clock as
 * before. So the pre-check only ever saves a clock read: it never says
 * "not yet" after the budget was spent, as long as the frequency it
 * measured is within a factor of two of the real one.
 *
 * Usable only on x86-64 when the kernel's clocksource is "tsc" (read once
 * per process from sysfs): the kernel then found the counter invariant
 * and synchronised across CPUs, so a thread that migrates reads one
 * counter. Elsewhere (kvm-clock, hpet, another architecture) every mark
 * is 0 and callers read the clock each time.
 *
 * The frequency is measured per thread (no shared state, no atomics):
 * from the first two stamps at least CAL_NS apart whose clock read sat
 * between two counter reads close together. A thread's marks are 0 until
 * then. No SHM, no thread, no allocation; one open() of a sysfs file per
 * process.
 */
#ifndef ORBIT_BASE_TSC_H
#define ORBIT_BASE_TSC_H

#include <stdbool.h>
#include <stdint.h>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

/* The time stamp counter now (0 where there is none). Not serializing. */
static inline uint64_t orbit__tsc_now(void)
{
#if defined(__x86_64__)
	return __rdtsc();
#else
	return 0;
#endif
}

/*
 * orbit__tsc_mark - the start of a budget of @budget_ns: @tsc_before is
 * orbit__tsc_now() read just before the caller's clock read @now_ns, and
 * @tsc_after just after it. Returns the counter value below which less
 * than @budget_ns has passed since @now_ns (at most half the budget by
 * this thread's measured frequency), or 0 when the counter cannot tell:
 * not usable here, not calibrated yet on this thread, or a budget of 0.
 * Context: any thread; its first call per process reads sysfs.
 */
uint64_t orbit__tsc_mark(uint64_t tsc_before, uint64_t now_ns, uint64_t tsc_after,
			 uint64_t budget_ns);

/* Is the counter still below @mark (a non-zero orbit__tsc_mark())? */
static inline bool orbit__tsc_before(uint64_t mark)
{
	return mark && orbit__tsc_now() < mark;
}

/* This thread's measured counter ticks per ns (0: not measured, or not usable). */
double orbit__tsc_ticks_per_ns(void);

#endif /* ORBIT_BASE_TSC_H */
