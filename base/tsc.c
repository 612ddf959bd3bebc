// SPDX-License-Identifier: MIT
/*
 * base/tsc.c: the time stamp counter's pre-check of a time budget
 * (base/tsc.h): whether the counter may be used (once per process), and
 * each thread's measurement of its frequency against CLOCK_MONOTONIC.
 */
#include "config.h"

#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "base/die.h"
#include "base/tsc.h"

/* Stamps this far apart (CLOCK_MONOTONIC) give the frequency. */
#define CAL_NS 2000000ull
/* A clock read between two counter reads further apart than this is a
 * pair a preemption or an interrupt split: not used for the frequency. */
#define PAIR_TICKS 20000ull

static pthread_once_t usable_once = PTHREAD_ONCE_INIT;
static bool usable; /* written once under usable_once, read after it */

static void usable_init(void)
{
#if defined(__x86_64__)
	char buf[32] = { 0 };
	int fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource",
		      O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	usable = n >= 3 && strncmp(buf, "tsc", 3) == 0 && (n == 3 || buf[3] == '\n');
#endif
}

/* This thread's calibration: a first good pair, then the frequency. */
static _Thread_local struct {
	uint64_t tsc0, ns0;
	double ticks_per_ns; /* 0 until measured */
	bool have0;
} cal;

uint64_t orbit__tsc_mark(uint64_t tsc_before, uint64_t now_ns, uint64_t tsc_after,
			 uint64_t budget_ns)
{
	double f, ticks;

	if (!budget_ns || !tsc_before)
		return 0;
	if (cal.ticks_per_ns == 0) {
		orbit__die_on(pthread_once(&usable_once, usable_init), "pthread_once");
		if (!usable || tsc_after < tsc_before || tsc_after - tsc_before > PAIR_TICKS)
			return 0;
		if (!cal.have0 || now_ns < cal.ns0 || tsc_before < cal.tsc0) {
			cal.tsc0 = tsc_before;
			cal.ns0 = now_ns;
			cal.have0 = true;
			return 0;
		}
		if (now_ns - cal.ns0 < CAL_NS)
			return 0;
		f = (double)(tsc_before - cal.tsc0) / (double)(now_ns - cal.ns0);
		if (!(f > 0.05 && f < 100.0)) { /* 50 MHz .. 100 GHz, else not a clock */
			cal.have0 = false;
			return 0;
		}
		cal.ticks_per_ns = f;
	}
	/* half the budget: slack for a frequency off by up to 2x */
	ticks = (double)budget_ns * 0.5 * cal.ticks_per_ns;
	if (ticks > 4e18 || tsc_before > (1ull << 62))
		return 0; /* a budget of years, or a counter near its range: read the clock */
	return tsc_before + (uint64_t)ticks;
}

double orbit__tsc_ticks_per_ns(void)
{
	return cal.ticks_per_ns;
}
