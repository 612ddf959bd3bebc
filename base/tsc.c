// SPDX-License-Identifier: MIT
/*
 * base/tsc.c: the time stamp counter's pre-check of a time budget
 * (base/tsc.h): whether the counter may be used (the kernel's
 * clocksource, read at each measurement), and each thread's measurement
 * of its frequency against CLOCK_MONOTONIC, checked against
 * CLOCK_BOOTTIME while it is made and against the clock past each mark,
 * and made again every RECAL_NS.
 */
#include "config.h"

#include <fcntl.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/tsc.h"

/* Stamps this far apart (CLOCK_MONOTONIC) give the frequency. */
#define CAL_NS 2000000ull
/* A clock read between two counter reads further apart than this is a
 * pair a preemption or an interrupt split: not used for the frequency. */
#define PAIR_TICKS 20000ull
/* A measurement is used this long (CLOCK_MONOTONIC), then made again,
 * the clocksource read again with it. */
#define RECAL_NS 1000000000ull

static bool clocksource_is_tsc(void)
{
#if defined(__x86_64__)
	char buf[32] = { 0 };
	int fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource",
		      O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	return n >= 3 && strncmp(buf, "tsc", 3) == 0 && (n == 3 || buf[3] == '\n');
#else
	return false;
#endif
}

/* This thread's measurement: a first good pair, then the frequency. */
static _Thread_local struct {
	uint64_t tsc0, ns0, off0;     /* off0: CLOCK_BOOTTIME - CLOCK_MONOTONIC at the first pair */
	uint64_t until_ns;	      /* CLOCK_MONOTONIC: measure again from here */
	uint64_t src_until_ns;	      /* CLOCK_MONOTONIC: read the clocksource again from here */
	double ticks_per_ns;	      /* 0 until measured */
	bool have0, src_read, usable; /* usable: the clocksource last read was "tsc" */
} cal;

static uint64_t boottime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Not measured (again) yet: may this thread measure now? */
static bool may_measure(uint64_t now_ns)
{
	if (cal.ticks_per_ns != 0 && now_ns >= cal.until_ns) {
		cal.ticks_per_ns = 0; /* used for RECAL_NS: measure again */
		cal.have0 = false;
	}
	if (cal.ticks_per_ns != 0)
		return true;
	if (!cal.src_read || now_ns >= cal.src_until_ns) {
		cal.usable = clocksource_is_tsc();
		cal.src_read = true;
		cal.src_until_ns = now_ns + RECAL_NS;
	}
	return cal.usable;
}

/* orbit__tsc_mark_at() once may_measure() said yes. */
static uint64_t mark_measurable(uint64_t tsc_before, uint64_t now_ns, uint64_t boot_ns,
				uint64_t tsc_after, uint64_t budget_ns)
{
	double f, ticks;

	if (cal.ticks_per_ns == 0) {
		uint64_t off = boot_ns - now_ns, moved;

		if (tsc_after < tsc_before || tsc_after - tsc_before > PAIR_TICKS)
			return 0;
		if (!cal.have0 || now_ns < cal.ns0 || tsc_before < cal.tsc0) {
			cal.tsc0 = tsc_before;
			cal.ns0 = now_ns;
			cal.off0 = off;
			cal.have0 = true;
			return 0;
		}
		if (now_ns - cal.ns0 < CAL_NS)
			return 0;
		/* CLOCK_BOOTTIME moved from CLOCK_MONOTONIC (a suspend between
		 * the stamps, while the counter may have gone on) by more than a
		 * sixteenth of the span, or a preemption between our caller's
		 * clock read and the CLOCK_BOOTTIME one: measure again from
		 * this pair */
		moved = off > cal.off0 ? off - cal.off0 : cal.off0 - off;
		f = (double)(tsc_before - cal.tsc0) / (double)(now_ns - cal.ns0);
		if (moved > (now_ns - cal.ns0) / 16 || !(f > 0.05 && f < 100.0)) {
			/* (f: 50 MHz .. 100 GHz, else not a clock) */
			cal.tsc0 = tsc_before;
			cal.ns0 = now_ns;
			cal.off0 = off;
			return 0;
		}
		cal.ticks_per_ns = f;
		cal.have0 = false;
		cal.until_ns = now_ns + RECAL_NS;
	}
	/* half the budget: slack for a frequency off by up to 2x */
	ticks = (double)budget_ns * 0.5 * cal.ticks_per_ns;
	if (ticks > 4e18 || tsc_before > (1ull << 62))
		return 0; /* a budget of years, or a counter near its range: read the clock */
	return tsc_before + (uint64_t)ticks;
}

uint64_t orbit__tsc_mark_at(uint64_t tsc_before, uint64_t now_ns, uint64_t boot_ns,
			    uint64_t tsc_after, uint64_t budget_ns)
{
	if (!budget_ns || !tsc_before || !may_measure(now_ns))
		return 0;
	return mark_measurable(tsc_before, now_ns, boot_ns, tsc_after, budget_ns);
}

uint64_t orbit__tsc_mark(uint64_t tsc_before, uint64_t now_ns, uint64_t tsc_after,
			 uint64_t budget_ns)
{
	if (!budget_ns || !tsc_before || !may_measure(now_ns))
		return 0;
	/* CLOCK_BOOTTIME only while measuring (a read of 20-odd ns) */
	return mark_measurable(tsc_before, now_ns, cal.ticks_per_ns == 0 ? boottime_ns() : 0,
			       tsc_after, budget_ns);
}

void orbit__tsc_check(uint64_t start, uint64_t elapsed_ns)
{
	uint64_t ticks = orbit__tsc_now() - start;

	/* (a counter now below start wraps to a huge count: kept, the
	 * start check of orbit__tsc_before() covers it) */
	if (cal.ticks_per_ns != 0 && (double)ticks * 2.0 < (double)elapsed_ns * cal.ticks_per_ns)
		cal.ticks_per_ns = 0;
}

double orbit__tsc_ticks_per_ns(void)
{
	return cal.ticks_per_ns;
}
