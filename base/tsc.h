/* SPDX-License-Identifier: MIT */
/*
 * base/tsc.h: internal. A cheap pre-check for "has a time budget possibly
 * run out", for loops that ask after every item (the serial queue's drain
 * slice, lib/serial_queue.c, §6.4). A CLOCK_MONOTONIC read costs about
 * 24 ns on the 2-vCPU KVM guest orbit is measured on, `rdtsc` about 10.
 * The answer "not yet" comes from the time stamp counter while it is
 * between the counter read at the start of the budget and a mark half
 * the budget ahead by a frequency this thread measured against
 * CLOCK_MONOTONIC; past the mark, below the start (a counter reset or a
 * backwards jump), or where the counter is not usable, the caller reads
 * the clock as before. So the pre-check only ever saves a clock read: it
 * never says "not yet" after the budget was spent, as long as the
 * frequency it measured is within a factor of two of the real one.
 *
 * A frequency measured wrong: CLOCK_MONOTONIC stops during a suspend
 * while the counter may go on, so a measurement spanning a suspend
 * would be too high. The measurement also reads CLOCK_BOOTTIME (which
 * counts the suspend) at both of its stamps and starts again when the
 * two clocks moved apart by more than a sixteenth of its span. And the
 * first clock read past a mark checks it (orbit__tsc_check()): when the
 * counter's ticks since the start, at the measured frequency, account
 * for less than half the time the clock saw pass, the budget was
 * overspent by the mark and the thread's measurement is dropped (made
 * again over the next slices).
 *
 * Usable only on x86-64 when the kernel's clocksource is "tsc" (read from
 * sysfs by each thread when it measures, at most once a second; a
 * measurement is used for a second, then made again, so a kernel that
 * switched its clocksource at run time, e.g. its watchdog on an
 * overloaded VM, stops the pre-check within about a second): the kernel
 * found the counter invariant and
 * synchronised across CPUs, so a thread that migrates reads one counter.
 * Elsewhere (kvm-clock, hpet, another architecture) every mark is 0 and
 * callers read the clock each time.
 *
 * The frequency is measured per thread (no shared state, no atomics):
 * from the first two stamps at least CAL_NS apart whose clock read sat
 * between two counter reads close together. A thread's marks are 0 until
 * then. No SHM, no thread, no allocation; per thread at most one open()
 * of a sysfs file a second, and a CLOCK_BOOTTIME read per stamp while it
 * measures.
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
 * Context: any thread; its measurement reads sysfs (at most once a second).
 */
uint64_t orbit__tsc_mark(uint64_t tsc_before, uint64_t now_ns, uint64_t tsc_after,
			 uint64_t budget_ns);

/*
 * Is the counter still at or past @start (the @tsc_before given to
 * orbit__tsc_mark()) and below @mark (its non-zero result)? One
 * subtraction: a counter below @start wraps to a large difference.
 */
static inline bool orbit__tsc_before(uint64_t start, uint64_t mark)
{
	return mark && orbit__tsc_now() - start < mark - start;
}

/*
 * orbit__tsc_check - at the first clock read past a mark: @start as given
 * to orbit__tsc_before(), @elapsed_ns the clock's time since the budget's
 * start, read just before. Drops this thread's measured frequency when
 * the counter's ticks since @start (read now, after the clock: never
 * fewer than at the clock read) at that frequency cover less than half
 * of @elapsed_ns, i.e. the frequency is over 2x too high and the mark
 * came after the budget was spent; marks are 0 until it is measured
 * again. Context: any thread, on its own measurement.
 */
void orbit__tsc_check(uint64_t start, uint64_t elapsed_ns);

/* This thread's measured counter ticks per ns (0: not measured, or not usable). */
double orbit__tsc_ticks_per_ns(void);

/*
 * orbit__tsc_mark_at - orbit__tsc_mark() with the CLOCK_BOOTTIME read
 * @boot_ns (taken after @now_ns) given, not read: for tests that replay a
 * measurement spanning a suspend (the two clocks apart).
 */
uint64_t orbit__tsc_mark_at(uint64_t tsc_before, uint64_t now_ns, uint64_t boot_ns,
			    uint64_t tsc_after, uint64_t budget_ns);

#endif /* ORBIT_BASE_TSC_H */
